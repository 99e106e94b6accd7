//! Replication rules as pure functions: the leader side of Fetch and OffsetsForLeaderEpoch
//! ([`fetch_leader`]), the follower / mirror-fetcher side ([`fetch_follower`]), the leader's
//! bookkeeping of each follower ([`replica`]), HW advance ([`high_watermark`]) and ISR
//! expand/shrink ([`isr`]).
//!
//! Every function here reads a snapshot and returns a typed decision; none does I/O, reads a
//! clock (time is an argument) or iterates a hash map. The caller (the partition / the
//! simulator) applies the decision. The rules transcribe Kafka's `Partition`, `Replica`,
//! `UnifiedLog` and `AbstractFetcherThread` (see `kafka-semantics.md` §1.2, §1.3, §1.5).

pub mod fetch_follower;
pub mod fetch_leader;
pub mod high_watermark;
pub mod isr;
pub mod replica;

pub use fetch_follower::{
    FetchErrorAction, FollowerFetchState, OffsetTruncationState, OutOfRangeAction,
    classify_fetch_error, follower_high_watermark, follower_log_start_offset, initial_fetch_state,
    keeps_existing_fetch_state, mirror_follower_out_of_range_action,
    reset_offset_after_out_of_range, should_process_fetch_response, state_after_truncation,
    truncation_offset,
};
pub use fetch_leader::{
    FetchDecision, FetchIsolation, FetchPartitionRequest, LeaderView, check_leader_epoch,
    end_offset_for_epoch, handle_fetch, handle_offsets_for_leader_epoch,
};
pub use high_watermark::{
    HwConfig, effective_min_isr, is_under_min_isr, maybe_increment_leader_hw,
};
pub use isr::{
    IsrState, PendingIsrChange, check_enough_replicas_reach_offset, is_broker_epoch_isr_eligible,
    is_replica_isr_eligible, out_of_sync_replicas, produce_acks_all_precheck, should_expand_isr,
};
pub use replica::ReplicaState;

#[cfg(test)]
mod fetch_follower_test;
#[cfg(test)]
mod fetch_leader_test;
#[cfg(test)]
mod high_watermark_test;
#[cfg(test)]
mod isr_test;
#[cfg(test)]
mod replica_test;
