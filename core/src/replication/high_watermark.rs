//! Leader high watermark advance (Kafka: `Partition.maybeIncrementLeaderHW`,
//! `UnifiedLog.maybeIncrementHighWatermark`, `isUnderMinIsr`, `effectiveMinIsr`).

use crate::types::{BrokerId, Offset};

use super::isr::IsrState;
use super::replica::ReplicaState;

/// HW rule switches.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct HwConfig {
    /// The topic's `min.insync.replicas`.
    pub min_insync_replicas: usize,
    /// KIP-966 (Kafka 3.7+/4.0): the HW does not advance while the committed ISR is smaller
    /// than the effective min ISR. `false` models older brokers, which advanced the HW with
    /// ISR = {leader} even under min ISR.
    pub kip966_min_isr_gate: bool,
}

/// `min(min.insync.replicas, replication factor)` (Kafka: `Partition.effectiveMinIsr`): a
/// min ISR above the replication factor is not enforced literally.
#[must_use]
pub fn effective_min_isr(min_insync_replicas: usize, replica_count: usize) -> usize {
    min_insync_replicas.min(replica_count)
}

/// Kafka: `Partition.isUnderMinIsr` (on the leader): the committed ISR is below the effective
/// min ISR.
#[must_use]
pub fn is_under_min_isr(isr: &IsrState, min_insync_replicas: usize, replica_count: usize) -> bool {
    isr.isr.len() < effective_min_isr(min_insync_replicas, replica_count)
}

/// The leader's new HW, if it increases (Kafka: `Partition.maybeIncrementLeaderHW`).
///
/// Called after a follower's LEO changes, a leader append, an ISR change or `makeLeader`.
/// `replicas` are the followers (Kafka's `remoteReplicasMap`), so the replication factor is
/// `replicas.len() + 1`. With the KIP-966 gate on, nothing happens under min ISR. Otherwise
/// the candidate is the leader's LEO, lowered to the LEO of every follower that is in the
/// maximal ISR, or that is caught up and ISR-eligible (a LEO capped at a later cut of the
/// leader's own log: `ReplicaState::end_for_high_watermark`, KIP-1279 only) (so a follower about to join is waited
/// for instead of being outrun). Returns `Some(new)` only when `new > current_hw`
/// (`maybeIncrementHighWatermark`): the leader HW never decreases here.
#[allow(clippy::too_many_arguments)]
#[must_use]
pub fn maybe_increment_leader_hw<'a, R>(
    leader_leo: Offset,
    current_hw: Offset,
    replicas: R,
    isr: &IsrState,
    is_eligible: impl Fn(BrokerId) -> bool,
    now_ms: i64,
    replica_lag_time_max_ms: i64,
    cfg: &HwConfig,
) -> Option<Offset>
where
    R: IntoIterator<Item = &'a ReplicaState>,
    R::IntoIter: ExactSizeIterator,
{
    let replicas = replicas.into_iter();
    let replica_count = replicas.len().saturating_add(1);
    if cfg.kip966_min_isr_gate && is_under_min_isr(isr, cfg.min_insync_replicas, replica_count) {
        return None;
    }
    let mut new_hw = leader_leo;
    for r in replicas {
        let counts = isr.in_maximal_isr(r.broker_id)
            || (r.is_caught_up(leader_leo, now_ms, replica_lag_time_max_ms)
                && is_eligible(r.broker_id));
        let end = r.end_for_high_watermark();
        if counts && end < new_hw {
            new_hw = end;
        }
    }
    (new_hw > current_hw).then_some(new_hw)
}
