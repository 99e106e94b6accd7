//! ListOffsets on one log (Kafka: `UnifiedLog.fetchOffsetByTimestamp`): the special
//! timestamps of `ListOffsetsRequest` and the search for the first record at or after a
//! timestamp.
//!
//! Timestamps are the v2 batches' own: each batch header holds its base and max timestamp
//! (the producer's CREATE_TIME, or the LOG_APPEND_TIME every record of the batch then has),
//! and each record a delta from the base ([`RecordBatch::record_timestamps`]). The model
//! keeps no time index: a search scans the retained batches, which gives the answer Kafka's
//! time index leads to (the index only skips batches whose max timestamp is below the target).

use super::partition_log::PartitionLog;
use crate::record::RecordBatch;
use crate::types::{LeaderEpoch, Offset};

/// Kafka's `RecordBatch.NO_TIMESTAMP` / `ListOffsetsResponse.UNKNOWN_TIMESTAMP`: the timestamp
/// of an answer to a special timestamp.
pub const NO_TIMESTAMP: i64 = -1;

/// `ListOffsetsRequest.LATEST_TIMESTAMP`: the log end offset.
pub const LATEST_TIMESTAMP: i64 = -1;
/// `ListOffsetsRequest.EARLIEST_TIMESTAMP`: the log start offset.
pub const EARLIEST_TIMESTAMP: i64 = -2;
/// `ListOffsetsRequest.MAX_TIMESTAMP` (KIP-734): the record with the largest timestamp.
pub const MAX_TIMESTAMP: i64 = -3;
/// `ListOffsetsRequest.EARLIEST_LOCAL_TIMESTAMP` (KIP-405): the local log start offset, which
/// without tiered storage is the log start offset.
pub const EARLIEST_LOCAL_TIMESTAMP: i64 = -4;
/// `ListOffsetsRequest.LATEST_TIERED_TIMESTAMP` (KIP-1005): the highest offset in remote
/// storage. The model has no tiered storage, and answers as Kafka does for a topic without
/// it: offset -1, leader epoch -1.
pub const LATEST_TIERED_TIMESTAMP: i64 = -5;
/// `ListOffsetsRequest.EARLIEST_PENDING_UPLOAD_TIMESTAMP` (KIP-1023): the first offset not yet
/// uploaded to remote storage. Without tiered storage Kafka answers offset -1, epoch -1.
pub const EARLIEST_PENDING_UPLOAD_TIMESTAMP: i64 = -6;

/// One ListOffsets answer (Kafka: `FileRecords.TimestampAndOffset`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TimestampAndOffset {
    /// The found record's timestamp; [`NO_TIMESTAMP`] for the special timestamps other than
    /// [`MAX_TIMESTAMP`].
    pub timestamp: i64,
    /// The offset (`-1` for the tiered-storage timestamps, as Kafka answers them without it).
    pub offset: Offset,
    /// The leader epoch of the found offset, when known.
    pub leader_epoch: Option<LeaderEpoch>,
}

impl TimestampAndOffset {
    fn special(offset: Offset, leader_epoch: Option<LeaderEpoch>) -> Self {
        Self {
            timestamp: NO_TIMESTAMP,
            offset,
            leader_epoch,
        }
    }
}

/// Kafka's `maybeLeaderEpoch`: a batch's epoch, absent when it is `NO_PARTITION_LEADER_EPOCH`.
fn batch_epoch(batch: &RecordBatch) -> Option<LeaderEpoch> {
    Some(batch.partition_leader_epoch()).filter(|e| e.0 >= 0)
}

impl PartitionLog {
    /// The offset for `target_timestamp` (Kafka: `UnifiedLog.fetchOffsetByTimestamp`):
    ///
    /// - [`EARLIEST_TIMESTAMP`] and [`EARLIEST_LOCAL_TIMESTAMP`]: the log start, with the
    ///   earliest cached epoch when it starts at or below the log start;
    /// - [`LATEST_TIMESTAMP`]: the log end, with the latest cached epoch;
    /// - [`LATEST_TIERED_TIMESTAMP`], [`EARLIEST_PENDING_UPLOAD_TIMESTAMP`]: offset -1, epoch
    ///   -1 (no tiered storage);
    /// - [`MAX_TIMESTAMP`]: the first record whose timestamp is the largest of the log, with
    ///   that timestamp and its batch's epoch (`None` for an empty log, or when the batch
    ///   holding the largest max timestamp has no record with it);
    /// - any other value: the first record, at or after the log start, whose timestamp is at
    ///   or above the target, with its timestamp and its batch's epoch; `None` if there is none.
    ///
    /// Kafka searches only the first segment whose largest timestamp reaches the target; the
    /// model's log is one segment for this search (its batches stand for segments only for
    /// retention). The two differ only when that segment's matching records all lie below
    /// the log start, where Kafka answers `None` and the model the next match.
    #[must_use]
    pub fn fetch_offset_by_timestamp(&self, target_timestamp: i64) -> Option<TimestampAndOffset> {
        let cache = self.epoch_cache();
        match target_timestamp {
            EARLIEST_TIMESTAMP | EARLIEST_LOCAL_TIMESTAMP => {
                let ls = self.log_start_offset();
                let epoch = cache
                    .earliest_entry()
                    .filter(|e| e.start_offset <= ls)
                    .map(|e| e.epoch);
                Some(TimestampAndOffset::special(ls, epoch))
            }
            LATEST_TIMESTAMP => Some(TimestampAndOffset::special(
                self.log_end_offset(),
                cache.latest_epoch(),
            )),
            LATEST_TIERED_TIMESTAMP | EARLIEST_PENDING_UPLOAD_TIMESTAMP => Some(
                TimestampAndOffset::special(Offset(-1), Some(LeaderEpoch::UNDEFINED)),
            ),
            MAX_TIMESTAMP => self.max_timestamp_and_offset(),
            target => self.search_offset_in_local_log(target, self.log_start_offset()),
        }
    }

    /// Kafka's MAX_TIMESTAMP branch: the batch with the largest max timestamp (the first one
    /// on ties, as `maxTimestampSoFar` only moves on a strictly larger value), then its
    /// `offsetOfMaxTimestamp`.
    fn max_timestamp_and_offset(&self) -> Option<TimestampAndOffset> {
        let mut best: Option<&RecordBatch> = None;
        for b in self.batches() {
            if best.is_none_or(|x| b.max_timestamp() > x.max_timestamp()) {
                best = Some(b);
            }
        }
        let batch = best?;
        batch
            .offset_of_max_timestamp()
            .map(|offset| TimestampAndOffset {
                timestamp: batch.max_timestamp(),
                offset,
                leader_epoch: batch_epoch(batch),
            })
    }

    /// Kafka's `searchOffsetInLocalLog` + `LogSegment.findOffsetByTimestamp` +
    /// `FileRecords.searchForTimestamp`: the first batch whose max timestamp reaches the
    /// target, and in it the first record at or above both the target and `start_offset`.
    fn search_offset_in_local_log(
        &self,
        target: i64,
        start_offset: Offset,
    ) -> Option<TimestampAndOffset> {
        self.batches_from(start_offset)
            .filter(|b| b.max_timestamp() >= target)
            .find_map(|b| {
                b.record_offsets_and_timestamps()
                    .into_iter()
                    .find(|&(o, ts)| ts >= target && o >= start_offset)
                    .map(|(offset, timestamp)| TimestampAndOffset {
                        timestamp,
                        offset,
                        leader_epoch: batch_epoch(b),
                    })
            })
    }
}
