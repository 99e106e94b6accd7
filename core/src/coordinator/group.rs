//! The group coordinator's offsets and a simplified membership, for ONE `__consumer_offsets`
//! partition (Kafka: `GroupMetadataManager` / `OffsetMetadataManager`).
//!
//! Membership stands in for JoinGroup/SyncGroup/Heartbeat (or KIP-848's heartbeat): a
//! heartbeat from an unknown member joins it, a member leaves or expires after
//! `session_timeout_ms` without a heartbeat. A group with at least one member is *active*.
//!
//! # How state changes
//!
//! - Offsets change only through [`GroupCoordinator::replay`]: `handle_offset_commit`
//!   validates and returns records; the runtime appends them, and once the HW passed them it
//!   replays them into this machine and answers the client. A fetch therefore sees committed
//!   offsets only (Kafka's new coordinator reads at the last committed offset).
//! - Membership changes at once in memory (Kafka's timeline applies them at append) and is
//!   persisted as a group-metadata record holding the full member list, so a new coordinator
//!   still knows the group is active after a failover (Kafka persists members too and restarts
//!   their session timers on load). While loading, `replay` restores members from those
//!   records; after [`GroupCoordinator::complete_load`] the in-memory membership is
//!   authoritative and replayed group-metadata records are ignored.
//!
//! # Commits into active groups
//!
//! Kafka (`ClassicGroup.validateOffsetCommit`, `ConsumerGroup.validateOffsetCommit`): a commit
//! without member id / generation (the admin client's `alterConsumerGroupOffsets`, or a
//! consumer with manual assignment) is accepted only while the group has no members; into a
//! non-empty group it fails with `UNKNOWN_MEMBER_ID`. A commit naming a member that is not in
//! the group fails with `UNKNOWN_MEMBER_ID`; naming a member of a group that does not exist
//! fails with `GROUP_ID_NOT_FOUND` (OffsetCommit v9+). A memberless commit into an unknown
//! group creates a "simple" group. KIP-1279's offset sync commits without a member, so it
//! skips (fails on) groups that are active on the destination.

use std::collections::BTreeMap;

use super::records::{
    CoordinatorKey, CoordinatorRecord, GroupMetadataKey, GroupMetadataValue, OffsetCommitKey,
    OffsetCommitValue, RecordError,
};
use crate::protocol::ErrorCode;
use crate::types::{LeaderEpoch, Offset, TopicPartition};

/// A committed offset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommittedOffset {
    /// Next offset to consume.
    pub offset: Offset,
    /// Leader epoch of the record before `offset`.
    pub leader_epoch: Option<LeaderEpoch>,
    /// Commit time.
    pub commit_timestamp_ms: i64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Member {
    session_timeout_ms: i64,
    /// Expiry time; `None` for members restored while loading (set by `complete_load`).
    deadline_ms: Option<i64>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Group {
    members: BTreeMap<String, Member>,
    offsets: BTreeMap<TopicPartition, CommittedOffset>,
}

impl Group {
    fn metadata_record(&self, group: &str) -> CoordinatorRecord {
        let value = GroupMetadataValue {
            members: self
                .members
                .iter()
                .map(|(id, m)| (id.clone(), m.session_timeout_ms))
                .collect(),
        };
        CoordinatorRecord {
            key: GroupMetadataKey {
                group: group.to_owned(),
            }
            .encode(),
            value: Some(value.encode()),
        }
    }
}

/// Offsets and membership of the groups of one `__consumer_offsets` partition.
#[derive(Clone, Debug, Default)]
pub struct GroupCoordinator {
    groups: BTreeMap<String, Group>,
    loading: bool,
}

impl GroupCoordinator {
    /// An empty coordinator, loading: `replay` the partition, then call `complete_load`.
    #[must_use]
    pub fn new() -> Self {
        Self {
            groups: BTreeMap::new(),
            loading: true,
        }
    }

    /// Applies one committed record of the partition: while loading any record; afterwards the
    /// runtime replays its own committed writes (offset records take effect, group-metadata
    /// records are ignored because membership is already current in memory).
    pub fn replay(&mut self, key: &[u8], value: Option<&[u8]>) -> Result<(), RecordError> {
        match CoordinatorKey::decode(key)? {
            CoordinatorKey::OffsetCommit(k) => match value {
                None => {
                    if let Some(g) = self.groups.get_mut(&k.group) {
                        g.offsets.remove(&k.tp);
                    }
                }
                Some(v) => {
                    let v = OffsetCommitValue::decode(v)?;
                    self.groups.entry(k.group).or_default().offsets.insert(
                        k.tp,
                        CommittedOffset {
                            offset: v.offset,
                            leader_epoch: v.leader_epoch,
                            commit_timestamp_ms: v.commit_timestamp_ms,
                        },
                    );
                }
            },
            CoordinatorKey::GroupMetadata(k) => {
                let members = match value {
                    None => BTreeMap::new(),
                    Some(v) => GroupMetadataValue::decode(v)?.members,
                };
                if self.loading {
                    self.groups.entry(k.group).or_default().members = members
                        .into_iter()
                        .map(|(id, session_timeout_ms)| {
                            (
                                id,
                                Member {
                                    session_timeout_ms,
                                    deadline_ms: None,
                                },
                            )
                        })
                        .collect();
                }
            }
            other @ CoordinatorKey::Txn(_) => {
                return Err(RecordError::UnexpectedKeyType {
                    got: other.key_type(),
                });
            }
        }
        Ok(())
    }

    /// Ends loading: restored members get a full session from `now_ms` (Kafka reschedules
    /// every member's heartbeat expiration on load).
    pub fn complete_load(&mut self, now_ms: i64) {
        self.loading = false;
        for g in self.groups.values_mut() {
            for m in g.members.values_mut() {
                if m.deadline_ms.is_none() {
                    m.deadline_ms = Some(now_ms.saturating_add(m.session_timeout_ms));
                }
            }
        }
    }

    /// OffsetCommit. Returns the per-partition errors (in request order) and the records to
    /// append; with no records, answer at once; otherwise append, replay the records once
    /// committed and answer with the errors (or the mapped append error for every partition).
    pub fn handle_offset_commit(
        &mut self,
        now_ms: i64,
        group: &str,
        member: Option<&str>,
        offsets: &[(TopicPartition, Offset, Option<LeaderEpoch>)],
    ) -> (Vec<(TopicPartition, ErrorCode)>, Vec<CoordinatorRecord>) {
        let error = self.validate_offset_commit(group, member);
        let results = offsets
            .iter()
            .map(|(tp, _, _)| (tp.clone(), error))
            .collect();
        if error != ErrorCode::None {
            return (results, Vec::new());
        }
        let records = offsets
            .iter()
            .map(|(tp, offset, leader_epoch)| CoordinatorRecord {
                key: OffsetCommitKey {
                    group: group.to_owned(),
                    tp: tp.clone(),
                }
                .encode(),
                value: Some(
                    OffsetCommitValue {
                        offset: *offset,
                        leader_epoch: *leader_epoch,
                        commit_timestamp_ms: now_ms,
                    }
                    .encode(),
                ),
            })
            .collect();
        (results, records)
    }

    fn validate_offset_commit(&self, group: &str, member: Option<&str>) -> ErrorCode {
        if group.is_empty() {
            return ErrorCode::InvalidRequest;
        }
        let g = self.groups.get(group);
        match member.filter(|m| !m.is_empty()) {
            // Simple / admin commit: only into a group without members.
            None => match g {
                Some(g) if !g.members.is_empty() => ErrorCode::UnknownMemberId,
                _ => ErrorCode::None,
            },
            Some(m) => match g {
                None => ErrorCode::GroupIdNotFound,
                Some(g) if !g.members.contains_key(m) => ErrorCode::UnknownMemberId,
                Some(_) => ErrorCode::None,
            },
        }
    }

    /// OffsetFetch: committed offsets of `partitions` (`None` = all of the group's). Partitions
    /// without a committed offset are absent (the wire answer is `-1`).
    #[must_use]
    pub fn handle_offset_fetch(
        &self,
        group: &str,
        partitions: Option<&[TopicPartition]>,
    ) -> BTreeMap<TopicPartition, (Offset, Option<LeaderEpoch>)> {
        let Some(g) = self.groups.get(group) else {
            return BTreeMap::new();
        };
        let pick =
            |(tp, c): (&TopicPartition, &CommittedOffset)| (tp.clone(), (c.offset, c.leader_epoch));
        match partitions {
            None => g.offsets.iter().map(pick).collect(),
            Some(ps) => ps
                .iter()
                .filter_map(|tp| g.offsets.get_key_value(tp).map(pick))
                .collect(),
        }
    }

    /// A member's heartbeat: joins an unknown member, refreshes a known one. Returns the error
    /// and the group-metadata record to append when membership changed (answer after it
    /// commits, as Kafka answers a join after its write).
    pub fn handle_heartbeat(
        &mut self,
        now_ms: i64,
        group: &str,
        member: &str,
        session_timeout_ms: i64,
    ) -> (ErrorCode, Vec<CoordinatorRecord>) {
        if group.is_empty() || member.is_empty() || session_timeout_ms <= 0 {
            return (ErrorCode::InvalidRequest, Vec::new());
        }
        let g = self.groups.entry(group.to_owned()).or_default();
        let deadline_ms = Some(now_ms.saturating_add(session_timeout_ms));
        let changed = match g.members.get_mut(member) {
            Some(m) => {
                m.deadline_ms = deadline_ms;
                let changed = m.session_timeout_ms != session_timeout_ms;
                m.session_timeout_ms = session_timeout_ms;
                changed
            }
            None => {
                g.members.insert(
                    member.to_owned(),
                    Member {
                        session_timeout_ms,
                        deadline_ms,
                    },
                );
                true
            }
        };
        let records = if changed {
            vec![g.metadata_record(group)]
        } else {
            Vec::new()
        };
        (ErrorCode::None, records)
    }

    /// LeaveGroup: removes the member (`UNKNOWN_MEMBER_ID` if it is not in the group).
    pub fn handle_leave(
        &mut self,
        group: &str,
        member: &str,
    ) -> (ErrorCode, Vec<CoordinatorRecord>) {
        let Some(g) = self.groups.get_mut(group) else {
            return (ErrorCode::UnknownMemberId, Vec::new());
        };
        if g.members.remove(member).is_none() {
            return (ErrorCode::UnknownMemberId, Vec::new());
        }
        (ErrorCode::None, vec![g.metadata_record(group)])
    }

    /// Removes members whose session expired (`deadline <= now`); returns the group-metadata
    /// records to append (one per changed group).
    pub fn expire_members(&mut self, now_ms: i64) -> Vec<CoordinatorRecord> {
        let mut records = Vec::new();
        for (name, g) in &mut self.groups {
            let before = g.members.len();
            g.members
                .retain(|_, m| m.deadline_ms.is_none_or(|d| d > now_ms));
            if g.members.len() != before {
                records.push(g.metadata_record(name));
            }
        }
        records
    }

    /// The earliest member expiry, for the runtime's timer.
    #[must_use]
    pub fn next_member_expiry_ms(&self) -> Option<i64> {
        self.groups
            .values()
            .flat_map(|g| g.members.values().filter_map(|m| m.deadline_ms))
            .min()
    }

    /// True when the group has live members.
    #[must_use]
    pub fn is_group_active(&self, group: &str) -> bool {
        self.groups
            .get(group)
            .is_some_and(|g| !g.members.is_empty())
    }

    /// The group's member ids.
    #[must_use]
    pub fn members(&self, group: &str) -> Vec<&str> {
        self.groups
            .get(group)
            .map(|g| g.members.keys().map(String::as_str).collect())
            .unwrap_or_default()
    }

    /// The committed offset of `tp` for `group`.
    #[must_use]
    pub fn committed(&self, group: &str, tp: &TopicPartition) -> Option<&CommittedOffset> {
        self.groups.get(group).and_then(|g| g.offsets.get(tp))
    }

    /// Known group ids (with members or offsets).
    pub fn groups(&self) -> impl Iterator<Item = &str> {
        self.groups.keys().map(String::as_str)
    }
}

#[cfg(test)]
#[path = "group_test.rs"]
mod tests;
