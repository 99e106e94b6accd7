//! One partition replica on a broker (Kafka: `Partition`): the log plus the leader's view of
//! its followers (ISR, follower LEOs, HW) or the follower's view of its leader. Pure rules
//! come from `crate::replication`; this file applies them.

use std::collections::BTreeSet;

use super::output::Event;
use super::storage::PartitionFiles;
use crate::log::partition_log::PartitionLog;
use crate::protocol::metadata::PartitionRegistration;
use crate::replication::fetch_follower::FollowerFetchState;
use crate::replication::fetch_leader::LeaderView;
use crate::replication::high_watermark::{HwConfig, maybe_increment_leader_hw};
use crate::replication::isr::{IsrState, out_of_sync_replicas, should_expand_isr};
use crate::replication::replica::ReplicaState;
use crate::small_map::SmallMap;
use crate::types::{BrokerId, LeaderEpoch, Offset, TopicId, TopicPartition};

/// The leader's bookkeeping.
#[derive(Clone, Debug)]
pub struct LeaderState {
    /// Committed ISR and any in-flight AlterPartition.
    pub isr: IsrState,
    /// Followers' fetch state.
    pub followers: SmallMap<BrokerId, ReplicaState>,
    /// The LEO when this broker became leader in the current epoch (KIP-320 rule 4, and the
    /// "lagging HW" rule of ListOffsets).
    pub leader_epoch_start_offset: Offset,
    /// Correlation id of an in-flight AlterPartition.
    pub alter_in_flight: Option<u64>,
}

/// Leader or follower.
#[derive(Clone, Debug)]
pub enum Role {
    /// This broker leads.
    Leader(LeaderState),
    /// This broker follows `leader` (`None` = offline partition).
    Follower {
        /// The leader, if any.
        leader: Option<BrokerId>,
    },
}

/// One partition replica.
#[derive(Clone, Debug)]
pub struct Partition {
    /// Partition.
    pub tp: TopicPartition,
    /// Topic id.
    pub topic_id: TopicId,
    /// The log.
    pub log: PartitionLog,
    /// Files backing the log.
    pub files: PartitionFiles,
    /// Latest leader epoch this replica has applied from metadata.
    pub leader_epoch: LeaderEpoch,
    /// Latest partition epoch applied.
    pub partition_epoch: i32,
    /// Assigned replicas.
    pub replicas: Vec<BrokerId>,
    /// Role.
    pub role: Role,
}

impl Partition {
    /// What the leader-side fetch and OffsetsForLeaderEpoch rules read of this replica.
    #[must_use]
    pub fn leader_view(&self) -> LeaderView<'_> {
        LeaderView {
            leader_epoch: self.leader_epoch,
            is_leader: self.is_leader(),
            epoch_cache: self.log.epoch_cache(),
            log_start_offset: self.log.log_start_offset(),
            log_end_offset: self.log.log_end_offset(),
            high_watermark: self.log.high_watermark(),
            last_stable_offset: self.log.last_stable_offset(),
        }
    }

    /// A replica fetcher's state for fetching from this replica's log end (Kafka:
    /// `PartitionFetchState` at the LEO with the latest epoch as `lastFetchedEpoch`).
    #[must_use]
    pub fn fetching_from_log_end(&self) -> FollowerFetchState {
        FollowerFetchState::Fetching {
            fetch_offset: self.log.log_end_offset(),
            last_fetched_epoch: self.log.latest_epoch(),
        }
    }

    /// A replica that has not yet applied any leadership.
    #[must_use]
    pub fn new(
        tp: TopicPartition,
        topic_id: TopicId,
        log: PartitionLog,
        files: PartitionFiles,
    ) -> Self {
        Self {
            tp,
            topic_id,
            log,
            files,
            leader_epoch: LeaderEpoch::UNDEFINED,
            partition_epoch: -1,
            replicas: Vec::new(),
            role: Role::Follower { leader: None },
        }
    }

    /// True if this replica leads.
    #[must_use]
    pub fn is_leader(&self) -> bool {
        matches!(self.role, Role::Leader(_))
    }

    /// The leader state.
    #[must_use]
    pub fn leader_state(&self) -> Option<&LeaderState> {
        match &self.role {
            Role::Leader(l) => Some(l),
            Role::Follower { .. } => None,
        }
    }

    /// The leader, from this replica's point of view.
    #[must_use]
    pub fn leader(&self, me: BrokerId) -> Option<BrokerId> {
        match &self.role {
            Role::Leader(_) => Some(me),
            Role::Follower { leader } => *leader,
        }
    }

    /// The committed ISR (leader only).
    #[must_use]
    pub fn isr(&self) -> Vec<BrokerId> {
        self.leader_state()
            .map(|l| l.isr.isr.iter().copied().collect())
            .unwrap_or_default()
    }

    /// Kafka `Partition.makeLeader`: with a higher epoch, the epoch starts at the LEO
    /// (`assign_epoch_start` decides whether the cache gets the entry: KIP-1279 mirror
    /// partitions skip it while mirroring). Followers' state is reset; the ISR comes from
    /// metadata.
    pub fn make_leader(
        &mut self,
        me: BrokerId,
        reg: &PartitionRegistration,
        now_ms: i64,
        assign_epoch_start: bool,
        events: &mut Vec<Event>,
    ) -> bool {
        let is_new_epoch = reg.leader_epoch > self.leader_epoch || !self.is_leader();
        let leo = self.log.log_end_offset();
        // Kafka `makeLeader`: "Partition state changes are expected to have a partition epoch
        // larger or equal to the current partition epoch" (an AlterPartition response may
        // have taken this leader past the record the metadata log now delivers).
        if !is_new_epoch && reg.partition_epoch < self.partition_epoch {
            return false;
        }
        self.replicas = reg.replicas.clone();
        self.partition_epoch = reg.partition_epoch;
        if !is_new_epoch {
            // ISR-only update while leading (Kafka `makeLeader` with the same epoch): the
            // metadata's ISR is the committed state, whatever this leader has in flight; a
            // pending AlterPartition is now stale and its response is ignored
            // (`handleAlterPartitionUpdate`). Keeping the old ISR while a proposal was in
            // flight left the leader expanding a stale ISR that still held a broker the
            // controller had fenced and removed: every proposal was INELIGIBLE_REPLICA, a
            // dead replica at the LEO never counts as lagging, and the returning follower
            // never rejoined (mirror chaos seed 7540).
            if let Role::Leader(l) = &mut self.role {
                let isr: BTreeSet<BrokerId> = reg.isr.iter().copied().collect();
                if isr != l.isr.isr {
                    events.push(Event::IsrChanged {
                        tp: self.tp.clone(),
                        isr: reg.isr.clone(),
                    });
                }
                l.isr = IsrState::committed(isr);
                l.alter_in_flight = None;
            }
            return false;
        }
        if assign_epoch_start && reg.leader_epoch.0 >= 0 {
            self.log
                .maybe_assign_epoch_start_offset(reg.leader_epoch, leo)
                .expect("leader_epoch_non_negative");
        }
        self.leader_epoch = reg.leader_epoch;
        let isr: BTreeSet<BrokerId> = reg.isr.iter().copied().collect();
        let mut followers = SmallMap::new();
        for r in reg.replicas.iter().filter(|r| **r != me) {
            let mut st = ReplicaState::new(*r);
            st.reset_replica_state(now_ms, leo, true, isr.contains(r));
            followers.insert(*r, st);
        }
        self.role = Role::Leader(LeaderState {
            isr: IsrState::committed(isr.iter().copied()),
            followers,
            leader_epoch_start_offset: leo,
            alter_in_flight: None,
        });
        events.push(Event::BecameLeader {
            tp: self.tp.clone(),
            leader_epoch: reg.leader_epoch,
            isr: reg.isr.clone(),
        });
        true
    }

    /// Kafka `Partition.makeFollower`: records the new leader and epoch; the log is not
    /// touched (the fetcher reconciles it). Returns true if the leader or epoch changed.
    pub fn make_follower(&mut self, reg: &PartitionRegistration, events: &mut Vec<Event>) -> bool {
        let changed = reg.leader_epoch > self.leader_epoch
            || self.is_leader()
            || self.leader_epoch == LeaderEpoch::UNDEFINED;
        self.replicas = reg.replicas.clone();
        self.partition_epoch = reg.partition_epoch;
        if !changed {
            return false;
        }
        self.leader_epoch = reg.leader_epoch;
        self.role = Role::Follower { leader: reg.leader };
        events.push(Event::BecameFollower {
            tp: self.tp.clone(),
            leader: reg.leader,
            leader_epoch: reg.leader_epoch,
        });
        true
    }

    /// Leader bookkeeping after this replica's own log was truncated (only KIP-1279 truncates
    /// a leader): the epoch start offset cannot stay above the new end, or no follower could
    /// rejoin the ISR (KIP-320 rule 4; mirror chaos seed 81), and the HW counts no follower
    /// beyond it until the follower fetches again (`ReplicaState::on_leader_truncated`).
    pub fn on_leader_log_truncated(&mut self) {
        let end = self.log.log_end_offset();
        if let Role::Leader(l) = &mut self.role {
            l.leader_epoch_start_offset = l.leader_epoch_start_offset.min(end);
            for st in l.followers.values_mut() {
                st.on_leader_truncated(end);
            }
        }
    }

    /// Leader: records a follower fetch at `fetch_offset` (Kafka:
    /// `updateFollowerFetchState`). Returns an ISR to propose when the follower qualifies for
    /// expansion.
    #[allow(clippy::too_many_arguments)] // Kafka's updateFollowerFetchState takes the same set
    pub fn update_follower_fetch_state(
        &mut self,
        follower: BrokerId,
        fetch_offset: Offset,
        follower_log_start: Offset,
        broker_epoch: i64,
        cached_broker_epoch: Option<i64>,
        eligible: bool,
        now_ms: i64,
    ) -> Option<BTreeSet<BrokerId>> {
        let leo = self.log.log_end_offset();
        let hw = self.log.high_watermark();
        let Role::Leader(l) = &mut self.role else {
            return None;
        };
        let st = l.followers.get_mut(&follower)?;
        if st
            .update_fetch_state(
                fetch_offset,
                follower_log_start,
                now_ms,
                leo,
                broker_epoch,
                cached_broker_epoch,
            )
            .is_err()
        {
            return None;
        }
        if l.alter_in_flight.is_none()
            && should_expand_isr(st, &l.isr, eligible, hw, Some(l.leader_epoch_start_offset))
        {
            return l.isr.prepare_isr_expand(follower);
        }
        None
    }

    /// Leader: advances the HW if the ISR allows (Kafka: `maybeIncrementLeaderHW`).
    pub fn maybe_increment_hw(
        &mut self,
        eligible: impl Fn(BrokerId) -> bool,
        now_ms: i64,
        replica_lag_time_max_ms: i64,
        cfg: &HwConfig,
    ) -> Option<Offset> {
        let new =
            self.high_watermark_if_recomputed(eligible, now_ms, replica_lag_time_max_ms, cfg)?;
        self.log
            .maybe_increment_high_watermark(new)
            .expect("hw_le_leo: computed from LEOs")
    }

    /// Leader: the HW [`Self::maybe_increment_hw`] would move to if it ran now, without
    /// moving it (a read-only view for observers).
    #[must_use]
    pub fn high_watermark_if_recomputed(
        &self,
        eligible: impl Fn(BrokerId) -> bool,
        now_ms: i64,
        replica_lag_time_max_ms: i64,
        cfg: &HwConfig,
    ) -> Option<Offset> {
        let Role::Leader(l) = &self.role else {
            return None;
        };
        // The HW never passes the LEO: at the LEO there is nothing to recompute (most calls,
        // a follower fetch on a partition with no new records).
        if self.log.high_watermark() >= self.log.log_end_offset() {
            return None;
        }
        maybe_increment_leader_hw(
            self.log.log_end_offset(),
            self.log.high_watermark(),
            l.followers.values(),
            &l.isr,
            eligible,
            now_ms,
            replica_lag_time_max_ms,
            cfg,
        )
    }

    /// Leader: followers to drop from the ISR, as a proposed ISR (Kafka: `maybeShrinkIsr`).
    pub fn maybe_shrink_isr(
        &mut self,
        me: BrokerId,
        now_ms: i64,
        lag_ms: i64,
    ) -> Option<BTreeSet<BrokerId>> {
        let leo = self.log.log_end_offset();
        let Role::Leader(l) = &mut self.role else {
            return None;
        };
        if l.alter_in_flight.is_some() {
            return None;
        }
        let followers: Vec<ReplicaState> = l.followers.values().cloned().collect();
        let out = out_of_sync_replicas(me, &followers, &l.isr, leo, now_ms, lag_ms);
        l.isr.prepare_isr_shrink(&out)
    }
}

#[cfg(test)]
#[path = "partition_test.rs"]
mod partition_test;
