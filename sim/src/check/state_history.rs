//! The `__mirror_state` records of each mirror partition as the checker has seen them, for
//! `valid_transitions` (kafka-semantics §2.3 item 17; kip1279.md B §4.2).
//!
//! The checker sees a record when its writer reports it (`MirrorStateChanged`) or when a
//! leader adopts it by reading it. Reports are observations of records, not the records
//! themselves, and they do not arrive in state-epoch order: a writer whose response was late
//! (a paused process, mirror chaos seed 8017) or that re-reads its own record after losing its
//! leadership (seeds 1843, 5618) reports a record the checker already saw, or one older than a
//! record a newer leader wrote since. The coordinator stores `stored + 1` with every write and
//! fences writers on the stored state epoch, so what a lost update (two writers committing
//! from the same state epoch) leaves behind is two **different** records with the **same**
//! state epoch. That is what this module flags; a report of a record already seen, or of one
//! older than the newest seen, is a late observation.
//!
//! Only committed records count ([`committed_record`]): a coordinator that an unclean
//! election already replaced, and that does not know it yet, still acknowledges writes with
//! its ISR of one (Kafka's acks=all waits for the ISR the leader knows; kafka-semantics §2.1,
//! §2.2: the true HW is what non-stale leaders exposed). What it acknowledges is on the branch
//! the election cut (seeds 2398, 6568: a zombie leader of the data partition wrote STOPPING and
//! STOPPED through a zombie coordinator; the real leader then wrote STOPPING with the same
//! state epoch).
//!
//! Committed `__mirror_state` records disappear only with a declared data loss of the store
//! partition (an unclean election, or the last ISR member losing unflushed data: seeds 575,
//! 981, 1393): state epochs then restart from what the coordinator still has, so the records
//! seen of every key of that store partition are forgotten ([`StateHistory::forget`]).

use std::collections::BTreeMap;

use mirror_core::mirror::{
    MirrorPartitionKey, MirrorPartitionState as S, MirrorPartitionStatus, MirrorStateKey,
};
use mirror_core::types::LeaderEpoch;

use super::ghost::GhostPartition;

/// One persisted transition: the state written and the writer's partition leader epoch (one
/// leader per epoch, so it names the writer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeenRecord {
    /// The state the record holds.
    pub state: S,
    /// The leader epoch of the leader that wrote it.
    pub writer: LeaderEpoch,
}

/// What a newly observed record is, given the records seen before.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Observation {
    /// Newer than every record seen: the partition's state now.
    Newest,
    /// The same record seen again (its writer reporting what a reader already adopted).
    Repeat,
    /// A record older than the newest seen, reported late: history, not the state now.
    Late,
}

/// The records seen of one mirror partition since the last loss of its store partition.
#[derive(Clone, Debug, Default)]
pub struct StateHistory {
    records: BTreeMap<i32, SeenRecord>,
    /// The `__mirror_state` partition holding its records, once known.
    pub store_partition: Option<i32>,
}

impl StateHistory {
    /// Classifies the record `(state_epoch, record)` and remembers it; `Err` names the lost
    /// update when another record with the same state epoch was seen.
    pub fn observe(&mut self, state_epoch: i32, record: SeenRecord) -> Result<Observation, String> {
        if let Some(seen) = self.records.get(&state_epoch) {
            if *seen == record {
                return Ok(Observation::Repeat);
            }
            return Err(format!(
                "two transitions persisted with state epoch {state_epoch}: to {} (leader epoch {}) and to {} (leader epoch {})",
                seen.state, seen.writer.0, record.state, record.writer.0
            ));
        }
        let newest = self.records.keys().next_back().copied();
        self.records.insert(state_epoch, record);
        Ok(match newest {
            Some(n) if n > state_epoch => Observation::Late,
            _ => Observation::Newest,
        })
    }

    /// The store partition lost committed records: forget what was seen of them.
    pub fn forget(&mut self) {
        self.records.clear();
    }
}

/// Whether the committed history of a `__mirror_state` partition (the ghost's, not any
/// replica's) holds the state record of `key` with `state_epoch` and `record`.
#[must_use]
pub fn committed_record(
    store: &GhostPartition,
    key: &MirrorPartitionKey,
    state_epoch: i32,
    record: SeenRecord,
) -> bool {
    store
        .committed
        .values()
        .filter(|b| !b.is_control_batch())
        .flat_map(|b| b.records())
        .any(|r| {
            let ours = r
                .key
                .as_deref()
                .and_then(|k| MirrorStateKey::decode(k).ok())
                == Some(MirrorStateKey::PartitionState(key.clone()));
            ours && r
                .value
                .as_deref()
                .and_then(|v| MirrorPartitionStatus::decode(v).ok())
                .is_some_and(|s| {
                    s.state == record.state
                        && s.state_epoch == state_epoch
                        && s.leader_epoch == record.writer
                })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(state: S, writer: i32) -> SeenRecord {
        SeenRecord {
            state,
            writer: LeaderEpoch(writer),
        }
    }

    #[test]
    fn a_record_reported_again_or_late_is_history_but_two_records_with_one_state_epoch_are_a_lost_update()
     {
        let mut h = StateHistory::default();
        assert_eq!(h.observe(1, rec(S::Preparing, 0)), Ok(Observation::Newest));
        assert_eq!(h.observe(2, rec(S::Mirroring, 0)), Ok(Observation::Newest));
        // Seed 5618: a reader adopted STOPPING (3, written at epoch 0), a newer leader wrote
        // STOPPED (4); the zombie writer then reports its STOPPING.
        assert_eq!(h.observe(3, rec(S::Stopping, 0)), Ok(Observation::Newest));
        assert_eq!(h.observe(4, rec(S::Stopped, 1)), Ok(Observation::Newest));
        assert_eq!(h.observe(3, rec(S::Stopping, 0)), Ok(Observation::Repeat));
        // Seed 8017: a record never seen, older than the newest, reported late.
        let mut late = StateHistory::default();
        assert_eq!(late.observe(3, rec(S::Stopped, 1)), Ok(Observation::Newest));
        assert_eq!(late.observe(1, rec(S::Preparing, 0)), Ok(Observation::Late));
        // A lost update: a second writer committed from state epoch 2 as well.
        let e = h.observe(3, rec(S::Pausing, 1)).unwrap_err();
        assert!(e.contains("state epoch 3"), "{e}");
        // The same state written by another leader is another record, too.
        assert!(h.observe(4, rec(S::Stopped, 2)).is_err());
    }

    #[test]
    fn only_records_in_the_committed_history_of_the_store_partition_count() {
        use mirror_core::coordinator::build_batch;
        use mirror_core::mirror::state_records::partition_state_record;
        use mirror_core::types::{Offset, TopicId};

        let key = MirrorPartitionKey {
            mirror_name: "m".into(),
            topic_id: TopicId(7),
            partition: 0,
        };
        let status = MirrorPartitionStatus {
            state: S::Stopping,
            previous_state: S::Unknown,
            state_epoch: 3,
            leader_epoch: LeaderEpoch(2),
            error_message: None,
            retry_attempt: 0,
        };
        let mut store = GhostPartition::default();
        let batch = build_batch(&[partition_state_record(&key, Some(&status))], 0);
        store.committed.insert(Offset(0), batch.clone());
        assert!(committed_record(&store, &key, 3, rec(S::Stopping, 2)));
        // Seed 2398: the same transition acknowledged by a zombie coordinator at epoch 0.
        assert!(!committed_record(&store, &key, 3, rec(S::Stopping, 0)));
        assert!(!committed_record(&store, &key, 4, rec(S::Stopping, 2)));
        let other = MirrorPartitionKey {
            partition: 1,
            ..key.clone()
        };
        assert!(!committed_record(&store, &other, 3, rec(S::Stopping, 2)));
        // Exposed only by a stale leader (archived, not committed): not in the history.
        let mut stale = GhostPartition::default();
        stale.archive(batch);
        assert!(!committed_record(&stale, &key, 3, rec(S::Stopping, 2)));
    }

    #[test]
    fn after_the_store_partition_lost_records_state_epochs_restart() {
        // Seed 575: STOPPING (3, epoch 0) committed, then lost by an unclean election of its
        // `__mirror_state` partition; the next leader writes STOPPING (3, epoch 3) again.
        let mut h = StateHistory::default();
        h.observe(2, rec(S::Mirroring, 0)).unwrap();
        h.observe(3, rec(S::Stopping, 0)).unwrap();
        assert!(h.observe(3, rec(S::Stopping, 3)).is_err());
        h.forget();
        assert_eq!(h.observe(3, rec(S::Stopping, 3)), Ok(Observation::Newest));
    }
}
