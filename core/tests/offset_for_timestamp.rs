//! `PartitionLog::fetch_offset_by_timestamp` (Kafka: `UnifiedLog.fetchOffsetByTimestamp`),
//! transcribed from Kafka's `UnifiedLogTest` (tests named after theirs; `mockTime.milliseconds`
//! is 1,000 here), plus the search rules of `FileRecords.searchForTimestamp`.

use mirror_core::log::offset_for_timestamp::{
    EARLIEST_LOCAL_TIMESTAMP, EARLIEST_PENDING_UPLOAD_TIMESTAMP, EARLIEST_TIMESTAMP,
    LATEST_TIERED_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP, NO_TIMESTAMP, TimestampAndOffset,
};
use mirror_core::log::partition_log::{LogConfig, PartitionLog};
use mirror_core::log::producer_state::AppendOrigin;
use mirror_core::record::{BatchBuilder, RecordBatch, SimpleRecord, TimestampType};
use mirror_core::types::{LeaderEpoch, Offset};

const NOW: i64 = 1_000;

fn log() -> PartitionLog {
    PartitionLog::new(LogConfig::default())
}

/// Kafka's `TestUtils.singletonRecords(value, timestamp)`.
fn singleton(timestamp: i64) -> RecordBatch {
    BatchBuilder::new().build(&[SimpleRecord::value(timestamp, "v")])
}

fn batch(timestamps: &[i64]) -> RecordBatch {
    let recs: Vec<SimpleRecord> = timestamps
        .iter()
        .map(|&t| SimpleRecord::value(t, "v"))
        .collect();
    BatchBuilder::new().build(&recs)
}

fn lead(log: &mut PartitionLog, b: &RecordBatch, epoch: i32) {
    log.append_as_leader(b, LeaderEpoch(epoch), AppendOrigin::Client)
        .expect("append");
}

fn at(timestamp: i64, offset: i64, epoch: Option<i32>) -> Option<TimestampAndOffset> {
    Some(TimestampAndOffset {
        timestamp,
        offset: Offset(offset),
        leader_epoch: epoch.map(LeaderEpoch),
    })
}

#[test]
fn test_fetch_offset_by_timestamp_includes_leader_epoch() {
    let mut log = log();
    assert_eq!(log.fetch_offset_by_timestamp(0), None);
    let first_timestamp = NOW;
    lead(&mut log, &singleton(first_timestamp), 0);
    let second_timestamp = first_timestamp + 1;
    lead(&mut log, &singleton(second_timestamp), 1);

    assert_eq!(
        log.fetch_offset_by_timestamp(first_timestamp),
        at(first_timestamp, 0, Some(0))
    );
    assert_eq!(
        log.fetch_offset_by_timestamp(second_timestamp),
        at(second_timestamp, 1, Some(1))
    );
    assert_eq!(
        log.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP),
        at(NO_TIMESTAMP, 0, Some(0))
    );
    assert_eq!(
        log.fetch_offset_by_timestamp(EARLIEST_LOCAL_TIMESTAMP),
        at(NO_TIMESTAMP, 0, Some(0))
    );
    assert_eq!(
        log.fetch_offset_by_timestamp(LATEST_TIMESTAMP),
        at(NO_TIMESTAMP, 2, Some(1))
    );
    // The cache can be updated directly after a leader change; the latest offset reflects
    // the new epoch.
    log.maybe_assign_epoch_start_offset(LeaderEpoch(2), Offset(2))
        .expect("assign");
    assert_eq!(
        log.fetch_offset_by_timestamp(LATEST_TIMESTAMP),
        at(NO_TIMESTAMP, 2, Some(2))
    );
}

#[test]
fn test_fetch_offset_by_timestamp_with_max_timestamp_includes_timestamp() {
    let mut log = log();
    assert_eq!(log.fetch_offset_by_timestamp(0), None);
    let first_timestamp = NOW;
    lead(&mut log, &singleton(first_timestamp), 0);
    let second_timestamp = first_timestamp + 1;
    lead(&mut log, &singleton(second_timestamp), 0);
    lead(&mut log, &singleton(first_timestamp), 0);
    assert_eq!(
        log.fetch_offset_by_timestamp(MAX_TIMESTAMP),
        at(second_timestamp, 1, Some(0))
    );
}

#[test]
fn test_fetch_latest_tiered_timestamp_no_remote_storage() {
    let mut log = log();
    assert_eq!(
        log.fetch_offset_by_timestamp(LATEST_TIERED_TIMESTAMP),
        at(NO_TIMESTAMP, -1, Some(-1))
    );
    lead(&mut log, &singleton(NOW), 0);
    lead(&mut log, &singleton(NOW + 1), 0);
    assert_eq!(
        log.fetch_offset_by_timestamp(LATEST_TIERED_TIMESTAMP),
        at(NO_TIMESTAMP, -1, Some(-1))
    );
}

#[test]
fn test_fetch_earliest_pending_upload_timestamp_no_remote_storage() {
    let mut log = log();
    assert_eq!(
        log.fetch_offset_by_timestamp(EARLIEST_PENDING_UPLOAD_TIMESTAMP),
        at(NO_TIMESTAMP, -1, Some(-1))
    );
    lead(&mut log, &singleton(NOW), 0);
    lead(&mut log, &singleton(NOW + 1), 0);
    assert_eq!(
        log.fetch_offset_by_timestamp(EARLIEST_PENDING_UPLOAD_TIMESTAMP),
        at(NO_TIMESTAMP, -1, Some(-1))
    );
}

/// `FileRecords.searchForTimestamp`: the first batch whose max timestamp reaches the target,
/// and in it the first record at or above it (records need not be in timestamp order); a
/// target above every timestamp finds nothing.
#[test]
fn search_finds_the_first_record_at_or_above_the_target_inside_a_batch() {
    let mut log = log();
    lead(&mut log, &batch(&[10, 30, 20]), 0);
    lead(&mut log, &batch(&[25, 40]), 1);
    assert_eq!(log.fetch_offset_by_timestamp(5), at(10, 0, Some(0)));
    assert_eq!(log.fetch_offset_by_timestamp(15), at(30, 1, Some(0)));
    assert_eq!(log.fetch_offset_by_timestamp(30), at(30, 1, Some(0)));
    assert_eq!(log.fetch_offset_by_timestamp(31), at(40, 4, Some(1)));
    assert_eq!(log.fetch_offset_by_timestamp(41), None);
}

/// The search starts at the log start (`searchOffsetInLocalLog(target, logStartOffset)`):
/// records below it are skipped even inside a retained batch; EARLIEST follows the log start.
#[test]
fn search_skips_records_below_the_log_start() {
    let mut log = log();
    lead(&mut log, &batch(&[10, 20, 30]), 0);
    log.maybe_increment_high_watermark(Offset(3)).expect("hw");
    log.maybe_increment_log_start_offset(Offset(2))
        .expect("delete records");
    assert_eq!(log.fetch_offset_by_timestamp(10), at(30, 2, Some(0)));
    assert_eq!(
        log.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP),
        at(NO_TIMESTAMP, 2, Some(0))
    );
}

/// `RecordBatch.offsetOfMaxTimestamp`: the first record carrying the batch's max timestamp;
/// ties between batches go to the first batch.
#[test]
fn max_timestamp_takes_the_first_record_with_the_largest_timestamp() {
    let mut log = log();
    lead(&mut log, &batch(&[5, 50, 50]), 0);
    lead(&mut log, &batch(&[50, 7]), 1);
    assert_eq!(
        log.fetch_offset_by_timestamp(MAX_TIMESTAMP),
        at(50, 1, Some(0))
    );
    assert_eq!(
        PartitionLog::new(LogConfig::default()).fetch_offset_by_timestamp(MAX_TIMESTAMP),
        None,
        "an empty log has no max timestamp"
    );
}

/// A LOG_APPEND_TIME batch gives every record the batch's max timestamp.
#[test]
fn log_append_time_records_all_carry_the_batch_max_timestamp() {
    let mut builder = BatchBuilder::new();
    builder.timestamp_type = TimestampType::LogAppendTime;
    let b = builder.build(&[SimpleRecord::value(3, "a"), SimpleRecord::value(9, "b")]);
    assert_eq!(b.record_timestamps(), vec![9, 9]);
    let mut log = log();
    lead(&mut log, &b, 0);
    assert_eq!(log.fetch_offset_by_timestamp(4), at(9, 0, Some(0)));
    assert_eq!(
        log.fetch_offset_by_timestamp(MAX_TIMESTAMP),
        at(9, 0, Some(0))
    );
}
