//! Leader-side Fetch / OffsetsForLeaderEpoch tests, transcribed from Kafka's `PartitionTest`
//! (`testLastFetchedOffsetValidation`, `testReadRecordEpochValidationFor*`,
//! `testOffsetForLeaderEpochValidationFor*`, `testFetchFromUnrecognizedFollower`).

use super::fetch_leader::*;
use crate::log::{EpochEntry, LeaderEpochCache};
use crate::protocol::ErrorCode;
use crate::types::{BrokerId, LeaderEpoch, Offset, OffsetAndEpoch};

fn cache(entries: &[(i32, i64)]) -> LeaderEpochCache {
    let entries: Vec<EpochEntry> = entries
        .iter()
        .map(|&(e, s)| EpochEntry::new(e, s))
        .collect();
    LeaderEpochCache::from_entries(&entries).expect("valid entries")
}

fn view(c: &LeaderEpochCache, epoch: i32, is_leader: bool, start: i64, leo: i64) -> LeaderView<'_> {
    LeaderView {
        leader_epoch: LeaderEpoch(epoch),
        is_leader,
        epoch_cache: c,
        log_start_offset: Offset(start),
        log_end_offset: Offset(leo),
        high_watermark: Offset(leo),
        last_stable_offset: Offset(leo),
    }
}

fn follower_fetch(
    fetch_offset: i64,
    current: Option<i32>,
    last_fetched: Option<i32>,
) -> FetchPartitionRequest {
    FetchPartitionRequest {
        fetch_offset: Offset(fetch_offset),
        current_leader_epoch: current.map(LeaderEpoch),
        last_fetched_epoch: last_fetched.map(LeaderEpoch),
        replica_id: Some(BrokerId(2)),
        isolation: FetchIsolation::LogEnd,
    }
}

fn consumer_fetch(fetch_offset: i64, isolation: FetchIsolation) -> FetchPartitionRequest {
    FetchPartitionRequest {
        fetch_offset: Offset(fetch_offset),
        current_leader_epoch: None,
        last_fetched_epoch: None,
        replica_id: None,
        isolation,
    }
}

fn diverging(epoch: i32, end: i64) -> OffsetAndEpoch {
    OffsetAndEpoch::new(Offset(end), LeaderEpoch(epoch))
}

fn assert_divergence(
    v: &LeaderView<'_>,
    expected: OffsetAndEpoch,
    last_fetched: i32,
    fetch_offset: i64,
) {
    match handle_fetch(
        v,
        &follower_fetch(fetch_offset, Some(10), Some(last_fetched)),
        true,
    ) {
        FetchDecision::Diverging {
            diverging_epoch, ..
        } => assert_eq!(
            diverging_epoch, expected,
            "lfe={last_fetched} fetch_offset={fetch_offset}"
        ),
        other => {
            panic!("expected divergence for lfe={last_fetched} fo={fetch_offset}, got {other:?}")
        }
    }
}

fn assert_no_divergence(v: &LeaderView<'_>, last_fetched: i32, fetch_offset: i64) {
    let d = handle_fetch(
        v,
        &follower_fetch(fetch_offset, Some(10), Some(last_fetched)),
        true,
    );
    assert!(
        matches!(d, FetchDecision::Read { fetch_offset: f, .. } if f == Offset(fetch_offset)),
        "lfe={last_fetched} fo={fetch_offset}: {d:?}"
    );
}

fn assert_error(d: FetchDecision, e: ErrorCode) {
    assert_eq!(d, FetchDecision::Error(e));
}

/// The log of Kafka's `testLastFetchedOffsetValidation` after `makeLeader(epoch 10)`:
/// appends (epoch 0 x2) (3 x3) (3 x3) (4 x5) (7 x1) (9 x3), LEO 17, then `(10, 17)`.
fn last_fetched_offset_validation_cache() -> LeaderEpochCache {
    cache(&[(0, 0), (3, 2), (4, 8), (7, 13), (9, 14), (10, 17)])
}

#[test]
fn test_last_fetched_offset_validation() {
    let c = last_fetched_offset_validation_cache();
    let v = view(&c, 10, true, 0, 17);
    assert_divergence(&v, diverging(0, 2), 2, 5);
    assert_divergence(&v, diverging(0, 2), 0, 4);
    assert_divergence(&v, diverging(4, 13), 6, 6);
    assert_divergence(&v, diverging(4, 13), 5, 9);
    // Divergence is checked before the read's "fetch offset > LEO" check.
    assert_divergence(&v, diverging(10, 17), 10, 18);
    assert_no_divergence(&v, 0, 2);
    assert_no_divergence(&v, 7, 14);
    assert_no_divergence(&v, 9, 17);
    assert_no_divergence(&v, 10, 17);
    // An epoch larger than any the leader knows: the end offset is undefined.
    assert_error(
        handle_fetch(&v, &follower_fetch(5, Some(10), Some(11)), true),
        ErrorCode::OffsetOutOfRange,
    );
}

#[test]
fn test_last_fetched_offset_validation_after_log_start_moves() {
    let mut c = last_fetched_offset_validation_cache();
    // Move the log start offset into the middle of epoch 3.
    c.truncate_from_start(Offset(5));
    let v = view(&c, 10, true, 5, 17);
    // Epoch 2 is below the first entry (3, 5): the leader echoes the requested epoch.
    assert_divergence(&v, diverging(2, 5), 2, 8);
    assert_no_divergence(&v, 0, 5);
    assert_no_divergence(&v, 3, 5);
    assert_error(
        handle_fetch(&v, &follower_fetch(0, Some(10), Some(0)), true),
        ErrorCode::OffsetOutOfRange,
    );

    c.truncate_from_start(Offset(10));
    let v = view(&c, 10, true, 10, 17);
    // fetch offset < log start wins over divergence, diverging or not.
    assert_error(
        handle_fetch(&v, &follower_fetch(6, Some(10), Some(5)), true),
        ErrorCode::OffsetOutOfRange,
    );
    assert_error(
        handle_fetch(&v, &follower_fetch(6, Some(10), Some(3)), true),
        ErrorCode::OffsetOutOfRange,
    );
}

#[test]
fn test_read_record_epoch_validation_for_leader() {
    let c = cache(&[(4, 0), (5, 10)]);
    let v = view(&c, 5, true, 0, 10);
    assert!(matches!(
        handle_fetch(&v, &follower_fetch(0, Some(5), None), true),
        FetchDecision::Read { .. }
    ));
    assert_error(
        handle_fetch(&v, &follower_fetch(0, Some(4), None), true),
        ErrorCode::FencedLeaderEpoch,
    );
    assert_error(
        handle_fetch(&v, &follower_fetch(0, Some(6), None), true),
        ErrorCode::UnknownLeaderEpoch,
    );
    assert!(matches!(
        handle_fetch(&v, &follower_fetch(0, None, None), true),
        FetchDecision::Read { .. }
    ));
}

#[test]
fn test_read_record_epoch_validation_for_follower() {
    let c = cache(&[(4, 0)]);
    let v = view(&c, 5, false, 0, 10);
    // Epoch checks come before the leadership check.
    assert_error(
        handle_fetch(&v, &follower_fetch(0, Some(5), None), true),
        ErrorCode::NotLeaderOrFollower,
    );
    assert_error(
        handle_fetch(&v, &follower_fetch(0, Some(4), None), true),
        ErrorCode::FencedLeaderEpoch,
    );
    assert_error(
        handle_fetch(&v, &follower_fetch(0, Some(6), None), true),
        ErrorCode::UnknownLeaderEpoch,
    );
    assert_error(
        handle_fetch(&v, &follower_fetch(0, None, None), true),
        ErrorCode::NotLeaderOrFollower,
    );
    assert_error(
        handle_fetch(&v, &consumer_fetch(0, FetchIsolation::HighWatermark), true),
        ErrorCode::NotLeaderOrFollower,
    );
}

#[test]
fn test_offset_for_leader_epoch_validation_for_leader() {
    let c = cache(&[(4, 0), (5, 10)]);
    let v = view(&c, 5, true, 0, 12);
    assert_eq!(
        handle_offsets_for_leader_epoch(&v, Some(LeaderEpoch(5)), LeaderEpoch(4)),
        Ok(diverging(4, 10))
    );
    assert_eq!(
        handle_offsets_for_leader_epoch(&v, None, LeaderEpoch(5)),
        Ok(diverging(5, 12))
    );
    assert_eq!(
        handle_offsets_for_leader_epoch(&v, Some(LeaderEpoch(4)), LeaderEpoch(4)),
        Err(ErrorCode::FencedLeaderEpoch)
    );
    assert_eq!(
        handle_offsets_for_leader_epoch(&v, Some(LeaderEpoch(6)), LeaderEpoch(4)),
        Err(ErrorCode::UnknownLeaderEpoch)
    );
}

#[test]
fn test_offset_for_leader_epoch_validation_for_follower() {
    let c = cache(&[(4, 0)]);
    let v = view(&c, 5, false, 0, 10);
    assert_eq!(
        handle_offsets_for_leader_epoch(&v, Some(LeaderEpoch(5)), LeaderEpoch(4)),
        Err(ErrorCode::NotLeaderOrFollower)
    );
    assert_eq!(
        handle_offsets_for_leader_epoch(&v, Some(LeaderEpoch(4)), LeaderEpoch(4)),
        Err(ErrorCode::FencedLeaderEpoch)
    );
    assert_eq!(
        handle_offsets_for_leader_epoch(&v, Some(LeaderEpoch(6)), LeaderEpoch(4)),
        Err(ErrorCode::UnknownLeaderEpoch)
    );
}

#[test]
fn test_offsets_for_leader_epoch_unknown_and_below_first_entry() {
    let c = cache(&[(3, 5), (6, 9)]);
    let v = view(&c, 6, true, 5, 12);
    let undefined = OffsetAndEpoch::new(Offset::UNDEFINED, LeaderEpoch::UNDEFINED);
    // Above every cached epoch, UNDEFINED_EPOCH, and an empty cache: (-1, -1) with no error.
    assert_eq!(
        handle_offsets_for_leader_epoch(&v, None, LeaderEpoch(7)),
        Ok(undefined)
    );
    assert_eq!(
        handle_offsets_for_leader_epoch(&v, None, LeaderEpoch::UNDEFINED),
        Ok(undefined)
    );
    let empty = LeaderEpochCache::new();
    let ve = view(&empty, 6, true, 0, 0);
    assert_eq!(
        handle_offsets_for_leader_epoch(&ve, None, LeaderEpoch(1)),
        Ok(undefined)
    );
    // Below the first entry: the requested epoch is echoed with the first start (KAFKA-7415).
    assert_eq!(
        handle_offsets_for_leader_epoch(&v, None, LeaderEpoch(1)),
        Ok(diverging(1, 5))
    );
    // Between entries: the largest epoch <= requested, ending where the next starts.
    assert_eq!(
        handle_offsets_for_leader_epoch(&v, None, LeaderEpoch(4)),
        Ok(diverging(3, 9))
    );
    assert_eq!(
        handle_offsets_for_leader_epoch(&v, None, LeaderEpoch(6)),
        Ok(diverging(6, 12))
    );
}

#[test]
fn test_fetch_from_unrecognized_follower() {
    let c = cache(&[(5, 0)]);
    let v = view(&c, 5, true, 0, 10);
    assert_error(
        handle_fetch(&v, &follower_fetch(0, Some(5), None), false),
        ErrorCode::UnknownLeaderEpoch,
    );
    assert_error(
        handle_fetch(&v, &follower_fetch(0, None, None), false),
        ErrorCode::NotLeaderOrFollower,
    );
    // Consumers are not checked against the assignment.
    assert!(matches!(
        handle_fetch(&v, &consumer_fetch(0, FetchIsolation::HighWatermark), false),
        FetchDecision::Read { .. }
    ));
    // The epoch check comes first.
    assert_error(
        handle_fetch(&v, &follower_fetch(0, Some(4), None), false),
        ErrorCode::FencedLeaderEpoch,
    );
}

#[test]
fn test_diverging_response_carries_snapshot_and_no_records() {
    let c = cache(&[(1, 0), (3, 4)]);
    let v = LeaderView {
        leader_epoch: LeaderEpoch(3),
        is_leader: true,
        epoch_cache: &c,
        log_start_offset: Offset(1),
        log_end_offset: Offset(8),
        high_watermark: Offset(6),
        last_stable_offset: Offset(5),
    };
    let d = handle_fetch(&v, &follower_fetch(6, Some(3), Some(2)), true);
    assert_eq!(
        d,
        FetchDecision::Diverging {
            diverging_epoch: diverging(1, 4),
            high_watermark: Offset(6),
            last_stable_offset: Offset(5),
            log_start_offset: Offset(1),
        }
    );
}

#[test]
fn test_read_out_of_range_and_isolation_bounds() {
    let c = cache(&[(0, 0)]);
    let v = LeaderView {
        leader_epoch: LeaderEpoch(0),
        is_leader: true,
        epoch_cache: &c,
        log_start_offset: Offset(2),
        log_end_offset: Offset(10),
        high_watermark: Offset(8),
        last_stable_offset: Offset(6),
    };
    let read = |fo: i64, iso| handle_fetch(&v, &consumer_fetch(fo, iso), true);
    let max_of = |d: FetchDecision| match d {
        FetchDecision::Read { max_offset, .. } => max_offset,
        other => panic!("expected read, got {other:?}"),
    };
    assert_eq!(max_of(read(2, FetchIsolation::LogEnd)), Offset(10));
    assert_eq!(max_of(read(2, FetchIsolation::HighWatermark)), Offset(8));
    assert_eq!(max_of(read(2, FetchIsolation::TxnCommitted)), Offset(6));
    // Past the HW/LSO but not the LEO: an empty read, not an error.
    assert_eq!(max_of(read(9, FetchIsolation::HighWatermark)), Offset(8));
    assert_eq!(max_of(read(10, FetchIsolation::TxnCommitted)), Offset(6));
    // Outside [log start, LEO]: OFFSET_OUT_OF_RANGE whatever the isolation.
    assert_error(
        read(11, FetchIsolation::HighWatermark),
        ErrorCode::OffsetOutOfRange,
    );
    assert_error(
        read(11, FetchIsolation::LogEnd),
        ErrorCode::OffsetOutOfRange,
    );
    assert_error(read(1, FetchIsolation::LogEnd), ErrorCode::OffsetOutOfRange);
    // A follower fetch at exactly the LEO is an empty read.
    assert_eq!(
        max_of(handle_fetch(
            &v,
            &follower_fetch(10, Some(0), Some(0)),
            true
        )),
        Offset(10)
    );
}

#[test]
fn test_undefined_end_offset_is_out_of_range_before_log_start_check() {
    // Empty cache: every last fetched epoch has an undefined end.
    let c = LeaderEpochCache::new();
    let v = view(&c, 3, true, 0, 0);
    assert_error(
        handle_fetch(&v, &follower_fetch(0, Some(3), Some(0)), true),
        ErrorCode::OffsetOutOfRange,
    );
    // A consumer with lastFetchedEpoch goes through the same check (KIP-320 consumers).
    let c = cache(&[(0, 0), (2, 3)]);
    let v = view(&c, 2, true, 0, 5);
    let mut req = consumer_fetch(4, FetchIsolation::HighWatermark);
    req.last_fetched_epoch = Some(LeaderEpoch(1));
    assert!(matches!(
        handle_fetch(&v, &req, true),
        FetchDecision::Diverging { .. }
    ));
}

#[test]
fn test_check_leader_epoch() {
    let mine = LeaderEpoch(5);
    assert_eq!(check_leader_epoch(None, mine), Ok(()));
    assert_eq!(check_leader_epoch(Some(LeaderEpoch(5)), mine), Ok(()));
    assert_eq!(
        check_leader_epoch(Some(LeaderEpoch(4)), mine),
        Err(ErrorCode::FencedLeaderEpoch)
    );
    assert_eq!(
        check_leader_epoch(Some(LeaderEpoch(6)), mine),
        Err(ErrorCode::UnknownLeaderEpoch)
    );
}

#[test]
fn test_end_offset_for_epoch_maps_undefined_to_none() {
    let c = cache(&[(1, 0), (4, 6)]);
    assert_eq!(end_offset_for_epoch(&c, LeaderEpoch(5), Offset(9)), None);
    assert_eq!(
        end_offset_for_epoch(&c, LeaderEpoch::UNDEFINED, Offset(9)),
        None
    );
    assert_eq!(
        end_offset_for_epoch(&c, LeaderEpoch(4), Offset(9)),
        Some(diverging(4, 9))
    );
    assert_eq!(
        end_offset_for_epoch(&c, LeaderEpoch(2), Offset(9)),
        Some(diverging(1, 6))
    );
    assert_eq!(
        end_offset_for_epoch(&c, LeaderEpoch(0), Offset(9)),
        Some(diverging(0, 0))
    );
}
