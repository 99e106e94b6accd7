//! ISR state, expand and shrink on the leader (Kafka: `Partition.partitionState`
//! (`CommittedPartitionState` / `PendingExpandIsr` / `PendingShrinkIsr`), `maybeExpandIsr`,
//! `getOutOfSyncReplicas`, `isReplicaIsrEligible`, `appendRecordsToLeader`,
//! `checkEnoughReplicasReachOffset`).

use std::collections::BTreeSet;

use crate::protocol::ErrorCode;
use crate::types::{BrokerId, Offset};

use super::replica::ReplicaState;

/// An AlterPartition request in flight (KIP-497).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PendingIsrChange {
    /// Adding one replica (Kafka: `PendingExpandIsr`). The maximal ISR already includes it.
    Expand {
        /// The replica being added.
        new_in_sync_replica: BrokerId,
    },
    /// Removing replicas (Kafka: `PendingShrinkIsr`). The maximal ISR still includes them.
    Shrink {
        /// The replicas being removed.
        out_of_sync_replicas: BTreeSet<BrokerId>,
    },
}

/// The leader's ISR: the last committed set plus at most one in-flight change.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IsrState {
    /// The ISR last committed by the controller (Kafka: `partitionState.isr`).
    pub isr: BTreeSet<BrokerId>,
    /// The AlterPartition in flight, if any.
    pub pending: Option<PendingIsrChange>,
}

impl IsrState {
    /// A committed ISR with nothing in flight (Kafka: `CommittedPartitionState`).
    #[must_use]
    pub fn committed(isr: impl IntoIterator<Item = BrokerId>) -> Self {
        Self {
            isr: isr.into_iter().collect(),
            pending: None,
        }
    }

    /// Whether an AlterPartition is in flight (Kafka: `isInflight`). No new expand or shrink
    /// starts while one is.
    #[must_use]
    pub fn is_inflight(&self) -> bool {
        self.pending.is_some()
    }

    /// The set used for HW advance and acks=all (Kafka: `maximalIsr`): committed ∪ {adding}
    /// during an expand; the committed (old, larger) set during a shrink. Assuming the larger
    /// set is always safe: it only makes the HW rule stricter.
    #[must_use]
    pub fn maximal_isr(&self) -> BTreeSet<BrokerId> {
        let mut s = self.isr.clone();
        s.extend(self.pending_expand());
        s
    }

    /// Whether `broker` is in [`Self::maximal_isr`], without building the set (asked per
    /// follower on every HW check).
    #[must_use]
    pub fn in_maximal_isr(&self, broker: BrokerId) -> bool {
        self.isr.contains(&broker) || self.pending_expand() == Some(broker)
    }

    /// The size of [`Self::maximal_isr`], without building the set (asked on every acks=all
    /// completion check).
    #[must_use]
    pub fn maximal_isr_len(&self) -> usize {
        self.isr.len()
            + usize::from(
                self.pending_expand()
                    .is_some_and(|b| !self.isr.contains(&b)),
            )
    }

    fn pending_expand(&self) -> Option<BrokerId> {
        match &self.pending {
            Some(PendingIsrChange::Expand {
                new_in_sync_replica,
            }) => Some(*new_in_sync_replica),
            _ => None,
        }
    }

    /// Starts an expand (Kafka: `prepareIsrExpand`). Returns the ISR to send in
    /// AlterPartition, or `None` (no change) if a change is already in flight.
    pub fn prepare_isr_expand(&mut self, replica: BrokerId) -> Option<BTreeSet<BrokerId>> {
        if self.is_inflight() {
            return None;
        }
        self.pending = Some(PendingIsrChange::Expand {
            new_in_sync_replica: replica,
        });
        Some(self.maximal_isr())
    }

    /// Starts a shrink (Kafka: `prepareIsrShrink`). Returns the ISR to send, or `None` if a
    /// change is already in flight or there is nothing to remove.
    pub fn prepare_isr_shrink(
        &mut self,
        out_of_sync: &BTreeSet<BrokerId>,
    ) -> Option<BTreeSet<BrokerId>> {
        if self.is_inflight() || out_of_sync.is_empty() {
            return None;
        }
        let to_send = self.isr.difference(out_of_sync).copied().collect();
        self.pending = Some(PendingIsrChange::Shrink {
            out_of_sync_replicas: out_of_sync.clone(),
        });
        Some(to_send)
    }

    /// AlterPartition succeeded, or new metadata arrived (Kafka: `handleAlterPartitionUpdate`,
    /// `updateAssignmentAndIsr`): the controller's ISR becomes the committed state.
    pub fn commit(&mut self, isr: BTreeSet<BrokerId>) {
        self.isr = isr;
        self.pending = None;
    }

    /// The controller answered OPERATION_NOT_ATTEMPTED or INELIGIBLE_REPLICA (Kafka:
    /// `handleAlterPartitionError`): back to the last committed state. Other errors leave the
    /// change pending until new metadata arrives (or retry it).
    pub fn revert_to_committed(&mut self) {
        self.pending = None;
    }
}

/// Kafka's `isBrokerEpochIsrEligible`: both epochs known, and the stored one is -1 (no check)
/// or equal to the metadata's.
#[must_use]
pub fn is_broker_epoch_isr_eligible(stored: Option<i64>, cached: Option<i64>) -> bool {
    match (stored, cached) {
        (Some(s), Some(c)) => s == -1 || s == c,
        _ => false,
    }
}

/// Kafka's `isReplicaIsrEligible` in KRaft mode: not fenced, not in controlled shutdown, and
/// the broker epoch from its fetch matches the metadata (a rebooted broker with an empty disk
/// must not rejoin with a stale epoch).
#[must_use]
pub fn is_replica_isr_eligible(
    fenced: bool,
    in_controlled_shutdown: bool,
    stored_broker_epoch: Option<i64>,
    cached_broker_epoch: Option<i64>,
) -> bool {
    !fenced
        && !in_controlled_shutdown
        && is_broker_epoch_isr_eligible(stored_broker_epoch, cached_broker_epoch)
}

/// Whether the leader should propose adding `replica` to the ISR (Kafka: `maybeExpandIsr` →
/// `canAddReplicaToIsr` && `isFollowerInSync`): nothing in flight, not already in the ISR,
/// eligible, `LEO >= HW`, and `LEO >= leaderEpochStartOffset` (KIP-320 rule 4: a follower must
/// have replicated the start of the leader's epoch, or committed data between the HW and LEO
/// could be lost if it were elected). `leader_epoch_start_offset` is `None` when not leader.
#[must_use]
pub fn should_expand_isr(
    replica: &ReplicaState,
    isr: &IsrState,
    eligible: bool,
    leader_hw: Offset,
    leader_epoch_start_offset: Option<Offset>,
) -> bool {
    let can_add = !isr.is_inflight() && !isr.isr.contains(&replica.broker_id) && eligible;
    let in_sync = replica.log_end_offset >= leader_hw
        && leader_epoch_start_offset.is_some_and(|s| replica.log_end_offset >= s);
    can_add && in_sync
}

/// The ISR members to remove (Kafka: `getOutOfSyncReplicas`): every committed ISR member
/// other than the leader that is not caught up (`!isCaughtUp`), or unknown to the leader.
/// Empty while an AlterPartition is in flight.
#[must_use]
pub fn out_of_sync_replicas(
    leader: BrokerId,
    replicas: &[ReplicaState],
    isr: &IsrState,
    leader_leo: Offset,
    now_ms: i64,
    replica_lag_time_max_ms: i64,
) -> BTreeSet<BrokerId> {
    if isr.is_inflight() {
        return BTreeSet::new();
    }
    isr.isr
        .iter()
        .copied()
        .filter(|id| *id != leader)
        .filter(|id| {
            replicas
                .iter()
                .find(|r| r.broker_id == *id)
                .is_none_or(|r| !r.is_caught_up(leader_leo, now_ms, replica_lag_time_max_ms))
        })
        .collect()
}

/// The acks=all check before appending (Kafka: `appendRecordsToLeader`): NOT_ENOUGH_REPLICAS
/// if the committed ISR is smaller than `min(min.insync.replicas, replication factor)`.
pub fn produce_acks_all_precheck(
    isr_len: usize,
    min_insync_replicas: usize,
    replica_count: usize,
) -> Result<(), ErrorCode> {
    if isr_len < super::high_watermark::effective_min_isr(min_insync_replicas, replica_count) {
        Err(ErrorCode::NotEnoughReplicas)
    } else {
        Ok(())
    }
}

/// Whether an acks=all produce waiting for `required_offset` can complete (Kafka:
/// `checkEnoughReplicasReachOffset`): `(false, NONE)` until the HW reaches it; then `(true,
/// NONE)`, or `(true, NOT_ENOUGH_REPLICAS_AFTER_APPEND)` if the maximal ISR shrank below the
/// effective min ISR meanwhile.
#[must_use]
pub fn check_enough_replicas_reach_offset(
    leader_hw: Offset,
    required_offset: Offset,
    maximal_isr_len: usize,
    effective_min_isr: usize,
) -> (bool, ErrorCode) {
    if leader_hw < required_offset {
        (false, ErrorCode::None)
    } else if effective_min_isr <= maximal_isr_len {
        (true, ErrorCode::None)
    } else {
        (true, ErrorCode::NotEnoughReplicasAfterAppend)
    }
}
