//! The leader side of Fetch and OffsetsForLeaderEpoch (Kafka: `Partition.fetchRecords`,
//! `Partition.readRecords`, `Partition.lastOffsetForLeaderEpoch`, `UnifiedLog.read`).
//!
//! Everything is decided over a read-only [`LeaderView`] taken *before* the read, as Kafka
//! does (`readRecords` snapshots HW, log start, LEO and LSO first so that appends racing with
//! the fetch cannot keep a follower out of sync). Only fetch-from-leader is modelled:
//! `fetchOnlyFromLeader` is always true (KIP-392 follower reads are out of scope).

use crate::log::LeaderEpochCache;
use crate::protocol::ErrorCode;
use crate::types::{BrokerId, LeaderEpoch, Offset, OffsetAndEpoch};

/// How far a fetch may read (Kafka: `FetchIsolation`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "fuzz", derive(arbitrary::Arbitrary))]
pub enum FetchIsolation {
    /// Up to the log end offset: follower and mirror fetches (`FetchIsolation.LOG_END`).
    LogEnd,
    /// Up to the high watermark: `read_uncommitted` consumers (`HIGH_WATERMARK`).
    HighWatermark,
    /// Up to the last stable offset: `read_committed` consumers (`TXN_COMMITTED`).
    TxnCommitted,
}

/// A read-only snapshot of the leader's partition state, taken before the fetch is served.
#[derive(Copy, Clone, Debug)]
pub struct LeaderView<'a> {
    /// This broker's current leader epoch for the partition (Kafka: `Partition.leaderEpoch`).
    pub leader_epoch: LeaderEpoch,
    /// Whether this broker is currently the leader (Kafka: `Partition.isLeader`).
    pub is_leader: bool,
    /// The log's leader epoch cache, used for the divergence check.
    pub epoch_cache: &'a LeaderEpochCache,
    /// The log start offset.
    pub log_start_offset: Offset,
    /// The log end offset (exclusive).
    pub log_end_offset: Offset,
    /// The high watermark (exclusive).
    pub high_watermark: Offset,
    /// The last stable offset (exclusive).
    pub last_stable_offset: Offset,
}

impl LeaderView<'_> {
    /// The exclusive upper bound a read with `isolation` may return (Kafka: the
    /// `maxOffsetMetadata` chosen in `UnifiedLog.read`).
    #[must_use]
    pub fn max_offset(&self, isolation: FetchIsolation) -> Offset {
        match isolation {
            FetchIsolation::LogEnd => self.log_end_offset,
            FetchIsolation::HighWatermark => self.high_watermark,
            FetchIsolation::TxnCommitted => self.last_stable_offset,
        }
    }
}

/// One partition of a Fetch request (Kafka: `FetchRequest.PartitionData` plus the
/// request-level replica id and isolation).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FetchPartitionRequest {
    /// The first offset to read.
    pub fetch_offset: Offset,
    /// The fetcher's view of the leader epoch; `None` skips epoch fencing (old clients).
    pub current_leader_epoch: Option<LeaderEpoch>,
    /// The epoch of the last batch the fetcher holds (KIP-595 / KIP-320); `None` skips the
    /// divergence check.
    pub last_fetched_epoch: Option<LeaderEpoch>,
    /// The fetching follower; `None` for a consumer.
    pub replica_id: Option<BrokerId>,
    /// How far the read may go.
    pub isolation: FetchIsolation,
}

/// What the leader answers for one fetched partition.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FetchDecision {
    /// A partition-level error; nothing is read and no follower state is updated.
    Error(ErrorCode),
    /// The fetcher's log diverges from the leader's: it must truncate (KIP-595 truncate on
    /// fetch). No records are returned, and the caller must NOT update the follower's fetch
    /// state (LEO, ISR, HW) for this response (Kafka: `fetchRecords` skips
    /// `updateFollowerFetchState` when `divergingEpoch` is present).
    Diverging {
        /// The leader's `(epoch, end offset)` for the fetcher's last fetched epoch.
        diverging_epoch: OffsetAndEpoch,
        /// The HW from the snapshot taken before the read.
        high_watermark: Offset,
        /// The LSO from the snapshot taken before the read.
        last_stable_offset: Offset,
        /// The log start offset from the snapshot taken before the read.
        log_start_offset: Offset,
    },
    /// Read `[fetch_offset, max_offset)`. An empty read when `fetch_offset >= max_offset` is
    /// not an error (a consumer ahead of the HW/LSO but not past the LEO).
    Read {
        /// The first offset to return.
        fetch_offset: Offset,
        /// Exclusive upper bound chosen by isolation: LEO, HW or LSO.
        max_offset: Offset,
        /// The HW from the snapshot taken before the read.
        high_watermark: Offset,
        /// The LSO from the snapshot taken before the read.
        last_stable_offset: Offset,
        /// The log start offset from the snapshot taken before the read.
        log_start_offset: Offset,
    },
}

/// Fences a request against this broker's leader epoch (Kafka:
/// `Partition.checkCurrentLeaderEpoch`). An older epoch means the requester missed a
/// leader change (`FENCED_LEADER_EPOCH`); a newer one means this broker did
/// (`UNKNOWN_LEADER_EPOCH`, retriable). `None` (old request versions) is never fenced.
pub fn check_leader_epoch(
    current: Option<LeaderEpoch>,
    mine: LeaderEpoch,
) -> Result<(), ErrorCode> {
    match current {
        Some(c) if c < mine => Err(ErrorCode::FencedLeaderEpoch),
        Some(c) if c > mine => Err(ErrorCode::UnknownLeaderEpoch),
        _ => Ok(()),
    }
}

/// Kafka's `Partition.getLocalLog`: the epoch check comes first, then the leadership check.
fn check_local_log(
    view: &LeaderView<'_>,
    current: Option<LeaderEpoch>,
    require_leader: bool,
) -> Result<(), ErrorCode> {
    check_leader_epoch(current, view.leader_epoch)?;
    if require_leader && !view.is_leader {
        return Err(ErrorCode::NotLeaderOrFollower);
    }
    Ok(())
}

/// The log-level end offset of `epoch` (Kafka: `UnifiedLog.endOffsetForEpoch`):
/// `cache.end_offset_for(epoch, leo)`, mapped to `None` when the offset is UNDEFINED
/// (undefined epoch, empty cache, or `epoch` above every cached epoch). Note that the
/// returned epoch may be UNDEFINED-free but *smaller* than `epoch` (largest epoch `<=`).
#[must_use]
pub fn end_offset_for_epoch(
    cache: &LeaderEpochCache,
    epoch: LeaderEpoch,
    log_end_offset: Offset,
) -> Option<OffsetAndEpoch> {
    let (found_epoch, found_offset) = cache.end_offset_for(epoch, log_end_offset);
    (found_offset != Offset::UNDEFINED).then(|| OffsetAndEpoch::new(found_offset, found_epoch))
}

/// Serves one fetched partition (Kafka: `Partition.fetchRecords` with
/// `fetchOnlyFromLeader = true`, then `readRecords`, then `UnifiedLog.read`).
///
/// Order of checks, as in Kafka:
/// 1. leader epoch fencing (FENCED / UNKNOWN_LEADER_EPOCH), then NOT_LEADER_OR_FOLLOWER;
/// 2. a follower not in the assignment: UNKNOWN_LEADER_EPOCH if it sent an epoch, else
///    NOT_LEADER_OR_FOLLOWER (`followerReplicaOrThrow`); consumers skip this check and
///    `replica_in_assignment` is ignored for them;
/// 3. if `last_fetched_epoch` is set: OFFSET_OUT_OF_RANGE when its end offset is unknown,
///    then OFFSET_OUT_OF_RANGE when `fetch_offset < log start` (before divergence), then
///    [`FetchDecision::Diverging`] when the leader's epoch is lower or its end is below
///    `fetch_offset`;
/// 4. the read: OFFSET_OUT_OF_RANGE outside `[log start, LEO]`, else a (possibly empty) read
///    bounded by the isolation level.
#[must_use]
pub fn handle_fetch(
    view: &LeaderView<'_>,
    req: &FetchPartitionRequest,
    replica_in_assignment: bool,
) -> FetchDecision {
    if let Err(e) = check_local_log(view, req.current_leader_epoch, true) {
        return FetchDecision::Error(e);
    }
    if req.replica_id.is_some() && !replica_in_assignment {
        // Kafka: Partition.followerReplicaOrThrow
        return FetchDecision::Error(if req.current_leader_epoch.is_some() {
            ErrorCode::UnknownLeaderEpoch
        } else {
            ErrorCode::NotLeaderOrFollower
        });
    }
    read_records(view, req)
}

/// Kafka: `Partition.readRecords`.
fn read_records(view: &LeaderView<'_>, req: &FetchPartitionRequest) -> FetchDecision {
    if let Some(fetch_epoch) = req.last_fetched_epoch {
        // Kafka re-runs lastOffsetForLeaderEpoch(currentLeaderEpoch, fetchEpoch,
        // fetchOnlyFromLeader = false); the epoch check already passed above.
        let end = match last_offset_for_leader_epoch(
            view,
            req.current_leader_epoch,
            fetch_epoch,
            false,
        ) {
            Ok(end) => end,
            Err(e) => return FetchDecision::Error(e),
        };
        if end.offset == Offset::UNDEFINED || end.leader_epoch == LeaderEpoch::UNDEFINED {
            return FetchDecision::Error(ErrorCode::OffsetOutOfRange);
        }
        // "If fetch offset is less than log start, fail with OffsetOutOfRangeException,
        // regardless of whether epochs are diverging".
        if req.fetch_offset < view.log_start_offset {
            return FetchDecision::Error(ErrorCode::OffsetOutOfRange);
        }
        if end.leader_epoch < fetch_epoch || end.offset < req.fetch_offset {
            return FetchDecision::Diverging {
                diverging_epoch: end,
                high_watermark: view.high_watermark,
                last_stable_offset: view.last_stable_offset,
                log_start_offset: view.log_start_offset,
            };
        }
    }
    read(view, req.fetch_offset, req.isolation)
}

/// Kafka: `UnifiedLog.read` (`checkLogStartOffset`) then `LocalLog.read`.
fn read(view: &LeaderView<'_>, fetch_offset: Offset, isolation: FetchIsolation) -> FetchDecision {
    if fetch_offset < view.log_start_offset || fetch_offset > view.log_end_offset {
        return FetchDecision::Error(ErrorCode::OffsetOutOfRange);
    }
    FetchDecision::Read {
        fetch_offset,
        max_offset: view.max_offset(isolation),
        high_watermark: view.high_watermark,
        last_stable_offset: view.last_stable_offset,
        log_start_offset: view.log_start_offset,
    }
}

/// Kafka: `Partition.lastOffsetForLeaderEpoch`. Unknown epochs answer `(-1, -1)` with no error.
fn last_offset_for_leader_epoch(
    view: &LeaderView<'_>,
    current_leader_epoch: Option<LeaderEpoch>,
    leader_epoch: LeaderEpoch,
    fetch_only_from_leader: bool,
) -> Result<OffsetAndEpoch, ErrorCode> {
    check_local_log(view, current_leader_epoch, fetch_only_from_leader)?;
    Ok(
        end_offset_for_epoch(view.epoch_cache, leader_epoch, view.log_end_offset).unwrap_or(
            OffsetAndEpoch::new(Offset::UNDEFINED, LeaderEpoch::UNDEFINED),
        ),
    )
}

/// Serves OffsetsForLeaderEpoch for one partition (Kafka: `ReplicaManager.lastOffsetForLeaderEpoch`
/// → `Partition.lastOffsetForLeaderEpoch(fetchOnlyFromLeader = true)`): epoch fencing, then
/// NOT_LEADER_OR_FOLLOWER, then the end offset of the largest epoch `<= leader_epoch`, or
/// `(-1, -1)` (UNDEFINED, no error) when it is unknown. Used by the pre-truncate-on-fetch
/// fetcher path (state Truncating) and by KIP-1279 failback.
pub fn handle_offsets_for_leader_epoch(
    view: &LeaderView<'_>,
    current_leader_epoch: Option<LeaderEpoch>,
    leader_epoch: LeaderEpoch,
) -> Result<OffsetAndEpoch, ErrorCode> {
    last_offset_for_leader_epoch(view, current_leader_epoch, leader_epoch, true)
}
