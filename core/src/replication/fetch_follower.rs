//! The follower / mirror-fetcher side of replication (Kafka: `AbstractFetcherThread`,
//! `ReplicaFetcherThread`, `ReplicaManager.initialFetchOffset`).
//!
//! These functions compute what the fetcher should do; the caller applies it to the log
//! (`truncateTo`, `truncateFullyAndStartAt`, appends) and to its own fetch state. The
//! KIP-1279 mirror fetcher on the destination uses exactly these rules against the source
//! leader.

use crate::log::LeaderEpochCache;
use crate::protocol::ErrorCode;
use crate::types::{LeaderEpoch, Offset, OffsetAndEpoch};

use super::fetch_leader::end_offset_for_epoch;

/// Where to truncate and whether that is final (Kafka: `OffsetTruncationState`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct OffsetTruncationState {
    /// Truncate the local log to this offset (keep offsets `< offset`) and fetch from it.
    pub offset: Offset,
    /// False when the follower lacks the leader's epoch and must ask again with its new
    /// latest epoch (KIP-279 multi-round truncation).
    pub truncation_completed: bool,
}

impl OffsetTruncationState {
    fn new(offset: Offset, truncation_completed: bool) -> Self {
        Self {
            offset,
            truncation_completed,
        }
    }
}

/// Computes the truncation offset from the leader's `(epoch, end offset)` answer (Kafka:
/// `AbstractFetcherThread.getOffsetTruncationState`). `diverging` is either a Fetch
/// response's `divergingEpoch` or an OffsetsForLeaderEpoch answer.
///
/// - end UNDEFINED: the leader knows no epoch `<=` ours (or an old message format): fall back
///   to `fetch_offset`, the partition's current fetch offset (the HW in the Truncating path).
/// - epoch UNDEFINED (pre-IBP-2.0 leader): `min(end, LEO)`.
/// - we know an epoch `<= e` but not `e` itself: truncate to the end of our largest epoch
///   below `e` (capped by the LEO) and ask again: `truncation_completed = false`.
/// - we know `e`: `min(our end of e, leader end, LEO)`, completed.
/// - we know no epoch `<= e`: `min(leader end, LEO)`, completed.
#[must_use]
pub fn truncation_offset(
    diverging: OffsetAndEpoch,
    local_cache: &LeaderEpochCache,
    local_log_end_offset: Offset,
    fetch_offset: Offset,
) -> OffsetTruncationState {
    let leader_end = diverging.offset;
    let leader_epoch = diverging.leader_epoch;
    if leader_end == Offset::UNDEFINED {
        return OffsetTruncationState::new(fetch_offset, true);
    }
    if leader_epoch == LeaderEpoch::UNDEFINED {
        return OffsetTruncationState::new(leader_end.min(local_log_end_offset), true);
    }
    match end_offset_for_epoch(local_cache, leader_epoch, local_log_end_offset) {
        Some(local) if local.leader_epoch != leader_epoch => {
            OffsetTruncationState::new(local.offset.min(local_log_end_offset), false)
        }
        Some(local) => {
            OffsetTruncationState::new(local.offset.min(leader_end).min(local_log_end_offset), true)
        }
        None => OffsetTruncationState::new(leader_end.min(local_log_end_offset), true),
    }
}

/// What to do after an OFFSET_OUT_OF_RANGE fetch error (Kafka:
/// `AbstractFetcherThread.fetchOffsetAndTruncate`). In every case the fetcher then moves to
/// `Fetching` with `last_fetched_epoch = log.latestEpoch` after the action.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum OutOfRangeAction {
    /// The leader's LEO is below ours (unclean election, follower ahead): `truncateTo(o)` and
    /// fetch from `o`.
    TruncateTo(Offset),
    /// The leader's log start is above our LEO (follower entirely stale):
    /// `truncateFullyAndStartAt(o)` and fetch from `o`.
    TruncateFullyAndStartAt(Offset),
    /// Keep the log and fetch from `o` (our LEO, which lies in `[leader start, leader LEO]`).
    FetchFrom(Offset),
}

impl OutOfRangeAction {
    /// The offset the next fetch starts from.
    #[must_use]
    pub fn fetch_offset(self) -> Offset {
        match self {
            Self::TruncateTo(o) | Self::TruncateFullyAndStartAt(o) | Self::FetchFrom(o) => o,
        }
    }
}

/// Decides how to recover from OFFSET_OUT_OF_RANGE (Kafka: `fetchOffsetAndTruncate` /
/// `fetchOffsetAndApplyTruncateAndBuild`). `leader_log_end_offset` is the leader's answer to
/// ListOffsets(LATEST) from a replica (its LEO); `leader_log_start_offset` its answer to
/// ListOffsets(EARLIEST). Kafka only asks for the start when the LEO check did not fire; the
/// pure form takes both.
#[must_use]
pub fn reset_offset_after_out_of_range(
    leader_log_end_offset: Offset,
    leader_log_start_offset: Offset,
    local_log_end_offset: Offset,
) -> OutOfRangeAction {
    if leader_log_end_offset < local_log_end_offset {
        OutOfRangeAction::TruncateTo(leader_log_end_offset)
    } else if leader_log_start_offset > local_log_end_offset {
        OutOfRangeAction::TruncateFullyAndStartAt(leader_log_start_offset)
    } else {
        OutOfRangeAction::FetchFrom(local_log_end_offset)
    }
}

/// The OFFSET_OUT_OF_RANGE recovery of a follower of a KIP-1279 **mirror** partition
/// (desired state not STOPPED). Kafka's [`reset_offset_after_out_of_range`] keeps the log
/// when the follower's LEO lies in `[leader start, leader LEO]` ([`OutOfRangeAction::FetchFrom`])
/// and the fetcher carries on with `lastFetchedEpoch = log.latestEpoch`. That cannot loop in
/// plain Kafka, because a leader always holds its own epoch (`makeLeader` assigns
/// `(leaderEpoch, LEO)`), which is above every epoch a follower can hold, so `endOffsetFor`
/// always answers a follower's `LastFetchedEpoch`. A mirror leader assigns no epoch of its
/// own (B §8.2) and PREPARING with LME -1 empties its log *and* its cache (A.1): a follower
/// whose only entry is a record-less trailing `(epoch, LEO)`, left from when it led the
/// writable topic with an empty log (kafka-semantics §1.1 "become leader"), then sends that
/// epoch forever, gets OFFSET_OUT_OF_RANGE forever (the leader cannot resolve it, §1.2), never
/// rejoins the ISR, and PREPARING waits on the ISR forever (mirror chaos seed 135).
///
/// Model decision (not upstream-verified): the mirror follower applies Kafka's `truncateTo`
/// at the offset it keeps (its LEO) instead of just fetching from it. `truncateTo(t >= LEO)`
/// removes no record and only trims the cache from the end (§1.4), which drops exactly such
/// a record-less trailing epoch; the next fetch carries the epoch of the last record, or none.
#[must_use]
pub fn mirror_follower_out_of_range_action(action: OutOfRangeAction) -> OutOfRangeAction {
    match action {
        OutOfRangeAction::FetchFrom(o) => OutOfRangeAction::TruncateTo(o),
        a => a,
    }
}

/// The fetcher's per-partition state (Kafka: `PartitionFetchState` with `Truncating` /
/// `Fetching`; delay, lag and topic id are left to the caller).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FollowerFetchState {
    /// Must reconcile with the leader through OffsetsForLeaderEpoch (or truncate to the HW
    /// when it has no epoch) before fetching.
    Truncating {
        /// The offset used as the truncation fallback (initially the HW).
        fetch_offset: Offset,
    },
    /// Fetching; each fetch carries `last_fetched_epoch` so the leader can detect divergence.
    Fetching {
        /// The next offset to fetch.
        fetch_offset: Offset,
        /// The epoch of the last batch in the local log (`log.latestEpoch`).
        last_fetched_epoch: Option<LeaderEpoch>,
    },
}

impl FollowerFetchState {
    /// The current fetch offset, whatever the phase.
    #[must_use]
    pub fn fetch_offset(&self) -> Offset {
        match *self {
            Self::Truncating { fetch_offset } | Self::Fetching { fetch_offset, .. } => fetch_offset,
        }
    }
}

/// The fetch state of a partition that has just become a follower in a new epoch (Kafka:
/// `ReplicaManager.initialFetchOffset` + `AbstractFetcherThread.partitionFetchState`).
///
/// With truncate-on-fetch (IBP >= 2.7) and a known latest epoch the follower fetches from
/// its LEO with `last_fetched_epoch = latest_epoch` and lets the leader detect divergence.
/// Otherwise it starts Truncating from its HW (old message format, or the
/// OffsetsForLeaderEpoch path).
#[must_use]
pub fn initial_fetch_state(
    truncation_on_fetch_supported: bool,
    latest_epoch: Option<LeaderEpoch>,
    log_end_offset: Offset,
    high_watermark: Offset,
) -> FollowerFetchState {
    match latest_epoch {
        Some(epoch) if truncation_on_fetch_supported => FollowerFetchState::Fetching {
            fetch_offset: log_end_offset,
            last_fetched_epoch: Some(epoch),
        },
        _ => FollowerFetchState::Truncating {
            fetch_offset: high_watermark,
        },
    }
}

/// Whether re-adding a partition keeps its existing fetch state (Kafka:
/// `partitionFetchState`: same `currentLeaderEpoch` ⇒ keep it, so no new truncation round;
/// see `testTruncationSkippedIfNoEpochChange`).
#[must_use]
pub fn keeps_existing_fetch_state(
    existing_current_leader_epoch: Option<LeaderEpoch>,
    new_current_leader_epoch: LeaderEpoch,
) -> bool {
    existing_current_leader_epoch == Some(new_current_leader_epoch)
}

/// The fetch state after truncating to `ts.offset` (Kafka:
/// `updateFetchOffsetAndMaybeMarkTruncationComplete`). With truncate-on-fetch the state is
/// always Fetching, even when `!ts.truncation_completed` (the next fetch repeats the
/// divergence check); otherwise it stays Truncating until truncation completes.
/// `latest_epoch_after` is `log.latestEpoch` after the truncation.
#[must_use]
pub fn state_after_truncation(
    truncation_on_fetch_supported: bool,
    ts: OffsetTruncationState,
    latest_epoch_after: Option<LeaderEpoch>,
) -> FollowerFetchState {
    if truncation_on_fetch_supported || ts.truncation_completed {
        FollowerFetchState::Fetching {
            fetch_offset: ts.offset,
            last_fetched_epoch: latest_epoch_after,
        }
    } else {
        FollowerFetchState::Truncating {
            fetch_offset: ts.offset,
        }
    }
}

/// Whether a fetch response still applies (Kafka: `processFetchRequest` processes a partition
/// only if its state is ready for fetch and its fetch offset equals the request's). A
/// response for a partition that was removed, re-added or truncated meanwhile is ignored.
#[must_use]
pub fn should_process_fetch_response(
    request_fetch_offset: Offset,
    current: Option<&FollowerFetchState>,
) -> bool {
    matches!(current, Some(FollowerFetchState::Fetching { fetch_offset, .. }) if *fetch_offset == request_fetch_offset)
}

/// What the fetcher does with a partition-level Fetch (or OffsetsForLeaderEpoch) error
/// (Kafka: the error match in `processFetchRequest` / `maybeTruncateToEpochEndOffsets`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FetchErrorAction {
    /// NONE: process the data (or the diverging epoch).
    Process,
    /// OFFSET_OUT_OF_RANGE: run [`reset_offset_after_out_of_range`].
    ResetOffset,
    /// FENCED_LEADER_EPOCH for the epoch we still hold: our epoch is stale. Remove the
    /// partition and mark it failed until new metadata arrives (`onPartitionFenced`).
    RemoveAndMarkFailed,
    /// Back off (`delayPartitions`) and retry with no state change: FENCED_LEADER_EPOCH for an
    /// epoch we already moved past, UNKNOWN_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER,
    /// UNKNOWN_TOPIC_OR_PARTITION and any other error.
    BackoffAndRetry,
}

/// Classifies a partition error (Kafka: `processFetchRequest`, `onPartitionFenced`).
/// `request_epoch` is the `currentLeaderEpoch` the request carried; `current_epoch` the
/// fetcher's epoch for the partition now.
#[must_use]
pub fn classify_fetch_error(
    error: ErrorCode,
    request_epoch: LeaderEpoch,
    current_epoch: LeaderEpoch,
) -> FetchErrorAction {
    match error {
        ErrorCode::None => FetchErrorAction::Process,
        ErrorCode::OffsetOutOfRange => FetchErrorAction::ResetOffset,
        ErrorCode::FencedLeaderEpoch if request_epoch == current_epoch => {
            FetchErrorAction::RemoveAndMarkFailed
        }
        _ => FetchErrorAction::BackoffAndRetry,
    }
}

/// The follower's HW after a (non-diverging) fetch response (Kafka:
/// `UnifiedLog.maybeUpdateHighWatermark` / `updateHighWatermark`): the leader's HW clamped to
/// `[log_start, log_end]`. Unlike the leader's HW it may go DOWN. Call it with the log start
/// from before [`follower_log_start_offset`] is applied, as `ReplicaFetcherThread` does.
#[must_use]
pub fn follower_high_watermark(leader_hw: Offset, log_start: Offset, log_end: Offset) -> Offset {
    if leader_hw < log_start {
        log_start
    } else if leader_hw >= log_end {
        log_end
    } else {
        leader_hw
    }
}

/// The follower's log start after a fetch response (Kafka: `ReplicaFetcherThread` calls
/// `maybeIncrementLogStartOffset(leaderLogStartOffset)`): it only moves forward.
#[must_use]
pub fn follower_log_start_offset(local_log_start: Offset, leader_log_start: Offset) -> Offset {
    local_log_start.max(leader_log_start)
}
