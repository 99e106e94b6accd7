//! Unit tests for `PartitionLog` (Kafka: `UnifiedLogTest`, `LocalLogTest`), one per rule of
//! kafka-semantics §1.4-§1.8, through the public API.

use bytes::Bytes;
use mirror_core::log::partition_log::{AppendError, LogConfig, OffsetError, PartitionLog};
use mirror_core::log::producer_state::AppendOrigin;
use mirror_core::record::{BatchBuilder, BatchError, ControlRecord, RecordBatch, SimpleRecord};
use mirror_core::replication::fetch_leader::FetchIsolation;
use mirror_core::types::{LeaderEpoch, Offset, ProducerEpoch, ProducerId, Sequence};

fn recs(n: usize) -> Vec<SimpleRecord> {
    (0..n)
        .map(|i| SimpleRecord::value(1_000 + i as i64, format!("v{i}")))
        .collect()
}

fn plain(n: usize) -> RecordBatch {
    BatchBuilder::new().build(&recs(n))
}

fn idem(pid: i64, epoch: i16, seq: i32, n: usize) -> RecordBatch {
    BatchBuilder::idempotent(ProducerId(pid), ProducerEpoch(epoch), Sequence(seq)).build(&recs(n))
}

fn txn(pid: i64, epoch: i16, seq: i32, n: usize) -> RecordBatch {
    BatchBuilder::transactional(ProducerId(pid), ProducerEpoch(epoch), Sequence(seq))
        .build(&recs(n))
}

fn marker(pid: i64, epoch: i16, commit: bool) -> RecordBatch {
    let rec = if commit {
        ControlRecord::commit(0)
    } else {
        ControlRecord::abort(0)
    };
    BatchBuilder::transactional(ProducerId(pid), ProducerEpoch(epoch), Sequence::NONE)
        .build_control(rec, 5_000)
}

fn log() -> PartitionLog {
    PartitionLog::new(LogConfig::default())
}

fn lead(log: &mut PartitionLog, b: &RecordBatch, epoch: i32) -> Offset {
    log.append_as_leader(b, LeaderEpoch(epoch), AppendOrigin::Client)
        .expect("append")
        .first_offset
}

fn coord(log: &mut PartitionLog, b: &RecordBatch, epoch: i32) {
    log.append_as_leader(b, LeaderEpoch(epoch), AppendOrigin::Coordinator)
        .expect("marker append");
}

fn entries(log: &PartitionLog) -> Vec<(i32, i64)> {
    log.epoch_cache()
        .epoch_entries()
        .iter()
        .map(|e| (e.epoch.0, e.start_offset.0))
        .collect()
}

#[test]
fn leader_append_assigns_offsets_and_epoch() {
    // Kafka: UnifiedLogTest.testAppendAsLeaderWithRaftLeader-like: offsets from the LEO,
    // the leader's epoch stamped on the batch and recorded in the cache.
    let mut l = log();
    assert_eq!(lead(&mut l, &plain(3), 5), Offset(0));
    assert_eq!(lead(&mut l, &plain(2), 5), Offset(3));
    assert_eq!(l.log_end_offset(), Offset(5));
    let b = l.batch_containing(Offset(4)).unwrap();
    assert_eq!(b.base_offset(), Offset(3));
    assert_eq!(b.partition_leader_epoch(), LeaderEpoch(5));
    assert!(
        b.is_valid(),
        "rewriting offset and epoch keeps the CRC valid"
    );
    assert_eq!(entries(&l), vec![(5, 0)]);
    lead(&mut l, &plain(1), 7);
    assert_eq!(entries(&l), vec![(5, 0), (7, 5)]);
}

#[test]
fn append_with_negative_leader_epoch_is_an_error() {
    let mut l = log();
    let e = l
        .append_as_leader(&plain(1), LeaderEpoch(-1), AppendOrigin::Client)
        .unwrap_err();
    assert_eq!(e, AppendError::InvalidEpoch(LeaderEpoch(-1)));
    assert_eq!(l.log_end_offset(), Offset(0));
}

#[test]
fn bad_crc_bytes_are_refused_and_change_nothing() {
    let mut l = log();
    let mut raw = plain(2).bytes().to_vec();
    let last = raw.len() - 1;
    raw[last] ^= 0xff;
    let e = l
        .append_bytes_as_leader(
            Bytes::from(raw.clone()),
            LeaderEpoch(0),
            AppendOrigin::Client,
        )
        .unwrap_err();
    assert!(
        matches!(e, AppendError::InvalidBatch(BatchError::InvalidCrc { .. })),
        "{e:?}"
    );
    let e = l
        .append_bytes_as_follower(Bytes::from(raw), None)
        .unwrap_err();
    assert!(matches!(
        e,
        AppendError::InvalidBatch(BatchError::InvalidCrc { .. })
    ));
    assert_eq!(l.log_end_offset(), Offset(0));
    assert_eq!(l.batch_count(), 0);
}

#[test]
fn client_control_batches_are_refused() {
    // Kafka: LogValidator rejects control records from clients.
    let mut l = log();
    let e = l
        .append_as_leader(&marker(1, 0, true), LeaderEpoch(0), AppendOrigin::Client)
        .unwrap_err();
    assert_eq!(e, AppendError::ControlBatchFromClient);
}

#[test]
fn follower_append_keeps_bytes_offsets_and_epochs() {
    let mut leader = log();
    lead(&mut leader, &idem(7, 0, 0, 3), 4);
    lead(&mut leader, &idem(7, 0, 3, 2), 9);
    let mut follower = log();
    for b in leader.batches() {
        follower
            .append_as_follower(b, Some(LeaderEpoch(9)))
            .unwrap();
    }
    assert!(
        leader.batches().eq(follower.batches()),
        "byte-identical batches"
    );
    assert_eq!(entries(&follower), vec![(4, 0), (9, 3)]);
    assert_eq!(follower.log_end_offset(), Offset(5));
    assert_eq!(
        follower
            .producer_state()
            .last_entry(ProducerId(7))
            .unwrap()
            .last_seq(),
        Sequence(4)
    );
}

#[test]
fn follower_append_below_leo_is_refused() {
    // Kafka: UnexpectedAppendOffsetException.
    let mut l = log();
    lead(&mut l, &plain(3), 0);
    let b = plain(1).with_offset_and_epoch(Offset(1), LeaderEpoch(0));
    let e = l.append_as_follower(&b, None).unwrap_err();
    assert_eq!(
        e,
        AppendError::OffsetMismatch {
            expected: Offset(3),
            got: Offset(1)
        }
    );
}

#[test]
fn follower_append_with_epoch_above_fetch_epoch_is_refused() {
    // KAFKA-18723: a follower rejects batches above the leader epoch it fetches under.
    let mut l = log();
    let b = plain(1).with_offset_and_epoch(Offset(0), LeaderEpoch(8));
    let e = l.append_as_follower(&b, Some(LeaderEpoch(7))).unwrap_err();
    assert!(matches!(e, AppendError::EpochAboveLeader { .. }));
    assert!(l.append_as_follower(&b, Some(LeaderEpoch(8))).is_ok());
}

#[test]
fn follower_append_accepts_a_gap_like_compaction() {
    let mut l = log();
    let b = plain(2).with_offset_and_epoch(Offset(10), LeaderEpoch(1));
    l.append_as_follower(&b, None).unwrap();
    assert_eq!(l.log_end_offset(), Offset(12));
    assert_eq!(entries(&l), vec![(1, 10)]);
}

#[test]
fn become_leader_entry_exists_before_any_record() {
    // kafka-semantics 2.4 (a): makeLeader assigns (newEpoch, LEO) before any write.
    let mut l = log();
    lead(&mut l, &plain(2), 1);
    l.maybe_assign_epoch_start_offset(LeaderEpoch(2), l.log_end_offset())
        .unwrap();
    assert_eq!(entries(&l), vec![(1, 0), (2, 2)]);
    assert_eq!(
        l.end_offset_for_epoch(LeaderEpoch(1)).map(|o| o.offset),
        Some(Offset(2))
    );
}

#[test]
fn truncate_to_at_leo_still_trims_trailing_epoch_entry() {
    // kafka-semantics 2.4 (b) / UnifiedLog.truncateTo: target >= LEO still calls
    // truncateFromEnd(LEO), dropping an epoch entry that has no records.
    let mut l = log();
    lead(&mut l, &plain(2), 1);
    l.maybe_assign_epoch_start_offset(LeaderEpoch(2), Offset(2))
        .unwrap();
    assert_eq!(entries(&l), vec![(1, 0), (2, 2)]);
    assert_eq!(l.truncate_to(Offset(2)), Ok(false));
    assert_eq!(entries(&l), vec![(1, 0)]);
    assert_eq!(l.truncate_to(Offset(10)), Ok(false));
    assert_eq!(l.log_end_offset(), Offset(2));
}

#[test]
fn truncate_to_removes_suffix_cache_hw_and_rebuilds_producer_state() {
    // Kafka: UnifiedLogTest.testTruncateTo / testProducerIdMapTruncateTo.
    let mut l = log();
    lead(&mut l, &idem(1, 0, 0, 2), 0); // 0-1
    lead(&mut l, &idem(1, 0, 2, 2), 1); // 2-3
    lead(&mut l, &idem(1, 0, 4, 2), 2); // 4-5
    l.maybe_increment_high_watermark(Offset(6)).unwrap();
    assert_eq!(l.truncate_to(Offset(2)), Ok(true));
    assert_eq!(l.log_end_offset(), Offset(2));
    assert_eq!(l.high_watermark(), Offset(2), "HW lowered to the new LEO");
    assert_eq!(entries(&l), vec![(0, 0)]);
    let e = l.producer_state().last_entry(ProducerId(1)).unwrap();
    assert_eq!(
        e.last_seq(),
        Sequence(1),
        "producer state replayed up to the target"
    );
    // the producer continues from the truncated point
    assert_eq!(lead(&mut l, &idem(1, 0, 2, 1), 3), Offset(2));
}

#[test]
fn truncate_to_inside_a_batch_keeps_no_cache_entry_without_records() {
    // Kafka: LogSegment.truncateTo removes the whole batch holding the target and the cache
    // is trimmed at the target, which keeps an entry that starts inside that batch; LogLoader
    // trims the cache at the recovered LEO on the next start (`truncateFromEnd`), because
    // entries point at records (kafka-semantics §2.3 item 1). The model applies it at once,
    // so the live log equals what a restart recovers (issue M6 bug 1: [[3,0],[6,1]] kept the
    // follower fetching with LastFetchedEpoch 6 forever).
    let mut l = log();
    let b0 = plain(1).with_offset_and_epoch(Offset(0), LeaderEpoch(3));
    let b1 = plain(4).with_offset_and_epoch(Offset(1), LeaderEpoch(6));
    l.append_as_follower(&b0, None).unwrap();
    l.append_as_follower(&b1, None).unwrap();
    assert_eq!(entries(&l), vec![(3, 0), (6, 1)]);
    assert_eq!(l.truncate_to(Offset(3)), Ok(true));
    assert_eq!(l.batch_count(), 1, "the batch holding offset 3 went whole");
    assert_eq!(entries(&l), vec![(3, 0)], "no entry without a record");
    assert_eq!(l.latest_epoch(), Some(LeaderEpoch(3)));
    // A restart recovers the same cache from the same batches.
    let batches: Vec<RecordBatch> = l.batches().cloned().collect();
    let recovered = PartitionLog::recover(
        LogConfig::default(),
        Offset(0),
        mirror_core::log::producer_state::ProducerStateManager::new(
            LogConfig::default().producer_id_expiration_ms,
        ),
        batches,
        Offset(0),
    )
    .unwrap();
    assert_eq!(entries(&recovered), entries(&l));
    // A target at a batch boundary keeps the entries before it, as before.
    let mut m = log();
    m.append_as_follower(&b0, None).unwrap();
    m.append_as_follower(&b1, None).unwrap();
    assert_eq!(m.truncate_to(Offset(1)), Ok(true));
    assert_eq!(entries(&m), vec![(3, 0)]);
    let mut n = log();
    n.append_as_follower(&b0, None).unwrap();
    n.append_as_follower(&b1, None).unwrap();
    n.append_as_follower(
        &plain(2).with_offset_and_epoch(Offset(5), LeaderEpoch(6)),
        None,
    )
    .unwrap();
    assert_eq!(n.truncate_to(Offset(5)), Ok(true));
    assert_eq!(entries(&n), vec![(3, 0), (6, 1)], "epoch 6 still has 1-4");
}

#[test]
fn truncate_to_below_hw_keeps_hw_only_if_below_leo() {
    let mut l = log();
    lead(&mut l, &plain(4), 0);
    l.maybe_increment_high_watermark(Offset(2)).unwrap();
    l.truncate_to(Offset(3)).unwrap();
    assert_eq!(l.high_watermark(), Offset(2));
}

#[test]
fn truncate_to_below_first_batch_truncates_fully() {
    // Kafka: truncateTo with firstSegment.base > target -> truncateFullyAndStartAt(target).
    let mut l = log();
    let b = plain(2).with_offset_and_epoch(Offset(10), LeaderEpoch(1));
    l.truncate_fully_and_start_at(Offset(10), None);
    l.append_as_follower(&b, None).unwrap();
    l.truncate_to(Offset(5)).unwrap();
    assert_eq!(
        (l.log_start_offset(), l.log_end_offset(), l.high_watermark()),
        (Offset(5), Offset(5), Offset(5))
    );
    assert!(l.epoch_cache().is_empty());
}

#[test]
fn a_truncation_restarts_the_log_only_below_its_first_batch() {
    // Kafka `UnifiedLog.truncateTo`: `truncateFullyAndStartAt` when the first segment starts
    // above the target. A broker asks first, to write the files of a restart (every
    // producer snapshot deleted), not those of a cut (mirror chaos seed 6872).
    let mut l = log();
    lead(&mut l, &txn(7, 0, 0, 4), 0); // 0-3, open
    lead(&mut l, &plain(4), 0); // 4-7
    lead(&mut l, &plain(4), 0); // 8-11
    l.maybe_increment_high_watermark(Offset(12)).unwrap();
    l.maybe_increment_log_start_offset(Offset(9)).unwrap(); // the batch 8-11 stays first
    for (target, restarts) in [(0, true), (7, true), (8, false), (9, false), (11, false)] {
        assert_eq!(
            l.truncation_restarts_log(Offset(target)),
            restarts,
            "target {target}"
        );
    }
    assert_eq!(
        l.producer_state_base().first_unstable_offset(),
        Some(Offset(0)),
        "the log start's state holds the open transaction"
    );
    assert!(l.truncate_to(Offset(5)).unwrap());
    assert_eq!(
        (l.log_start_offset(), l.log_end_offset(), l.batch_count()),
        (Offset(5), Offset(5), 0)
    );
    assert_eq!(l.producer_state_base().first_unstable_offset(), None);
    // An empty log restarts below its log start only.
    assert!(l.truncation_restarts_log(Offset(4)));
    assert!(!l.truncation_restarts_log(Offset(5)));
}

#[test]
fn negative_truncation_is_an_error() {
    let mut l = log();
    assert_eq!(
        l.truncate_to(Offset(-1)),
        Err(OffsetError::Negative(Offset(-1)))
    );
}

#[test]
fn truncate_fully_and_start_at_clears_everything() {
    let mut l = log();
    lead(&mut l, &txn(3, 0, 0, 2), 2);
    l.truncate_fully_and_start_at(Offset(100), None);
    assert_eq!(l.log_start_offset(), Offset(100));
    assert_eq!(l.log_end_offset(), Offset(100));
    assert_eq!(l.high_watermark(), Offset(100));
    assert_eq!(l.last_stable_offset(), Offset(100));
    assert!(l.epoch_cache().is_empty());
    assert!(l.producer_state().is_empty());
    assert_eq!(l.batch_count(), 0);
}

#[test]
fn log_start_cannot_pass_hw() {
    // Kafka: maybeIncrementLogStartOffset throws OffsetOutOfRangeException above the HW.
    let mut l = log();
    lead(&mut l, &plain(5), 0);
    l.maybe_increment_high_watermark(Offset(3)).unwrap();
    assert_eq!(
        l.maybe_increment_log_start_offset(Offset(4)),
        Err(OffsetError::AboveHighWatermark {
            requested: Offset(4),
            high_watermark: Offset(3)
        })
    );
    assert_eq!(l.maybe_increment_log_start_offset(Offset(3)), Ok(true));
    assert_eq!(
        l.maybe_increment_log_start_offset(Offset(2)),
        Ok(false),
        "never moves back"
    );
}

#[test]
fn log_start_move_truncates_cache_from_start() {
    let mut l = log();
    lead(&mut l, &plain(2), 1); // 0-1
    lead(&mut l, &plain(2), 3); // 2-3
    lead(&mut l, &plain(2), 5); // 4-5
    l.maybe_increment_high_watermark(Offset(6)).unwrap();
    l.maybe_increment_log_start_offset(Offset(3)).unwrap();
    assert_eq!(entries(&l), vec![(3, 3), (5, 4)]);
    assert_eq!(
        l.batch_count(),
        2,
        "the batch 0-1 is deleted, 2-3 still holds offset 3"
    );
    assert!(l.epoch_cache_matches_batches().is_ok());
}

#[test]
fn read_out_of_range_and_empty_reads() {
    // Kafka: reads outside [logStart, LEO] are OFFSET_OUT_OF_RANGE; a start in (HW, LEO] is empty.
    let mut l = log();
    lead(&mut l, &plain(2), 0);
    lead(&mut l, &plain(2), 0);
    l.maybe_increment_high_watermark(Offset(2)).unwrap();
    assert!(matches!(
        l.read(Offset(5), 1 << 20, FetchIsolation::LogEnd),
        Err(OffsetError::OutOfRange { .. })
    ));
    let r = l
        .read(Offset(2), 1 << 20, FetchIsolation::HighWatermark)
        .unwrap();
    assert!(r.batches.is_empty());
    let r = l
        .read(Offset(0), 1 << 20, FetchIsolation::HighWatermark)
        .unwrap();
    assert_eq!(r.batches.len(), 1);
    let r = l.read(Offset(1), 1, FetchIsolation::LogEnd).unwrap();
    assert_eq!(
        r.batches.len(),
        1,
        "at least one batch even above max_bytes"
    );
    assert_eq!(
        r.batches[0].base_offset(),
        Offset(0),
        "the whole batch containing the offset"
    );
    let r = l.read(Offset(0), 1 << 20, FetchIsolation::LogEnd).unwrap();
    assert_eq!(r.batches.len(), 2);
    assert_eq!(r.aborted_transactions, None);
}

#[test]
fn lso_follows_open_transactions_and_markers() {
    // kafka-semantics 1.6: LSO = min(firstUnstable, HW); a marker above the HW keeps the
    // txn unreplicated (and the LSO at its first offset) until the HW passes the marker.
    let mut l = log();
    lead(&mut l, &plain(2), 0); // 0-1
    lead(&mut l, &txn(9, 0, 0, 2), 0); // 2-3 open txn
    lead(&mut l, &plain(1), 0); // 4
    l.maybe_increment_high_watermark(Offset(5)).unwrap();
    assert_eq!(l.first_unstable_offset(), Some(Offset(2)));
    assert_eq!(l.last_stable_offset(), Offset(2));
    coord(&mut l, &marker(9, 0, true), 0); // 5
    assert_eq!(
        l.last_stable_offset(),
        Offset(2),
        "marker at 5 is not yet below the HW"
    );
    l.maybe_increment_high_watermark(Offset(6)).unwrap();
    assert_eq!(l.first_unstable_offset(), None);
    assert_eq!(l.last_stable_offset(), Offset(6));
}

#[test]
fn read_committed_stops_at_lso_and_reports_aborted_txns() {
    let mut l = log();
    lead(&mut l, &txn(9, 0, 0, 2), 0); // 0-1
    coord(&mut l, &marker(9, 0, false), 0); // 2 ABORT
    lead(&mut l, &txn(9, 0, 2, 1), 0); // 3 open again
    l.maybe_increment_high_watermark(Offset(4)).unwrap();
    assert_eq!(l.last_stable_offset(), Offset(3));
    let r = l
        .read(Offset(0), 1 << 20, FetchIsolation::TxnCommitted)
        .unwrap();
    assert_eq!(r.batches.len(), 2, "batches below the LSO only");
    let aborted = r.aborted_transactions.unwrap();
    assert_eq!(aborted.len(), 1);
    assert_eq!(aborted[0].producer_id, ProducerId(9));
    assert_eq!(
        (aborted[0].first_offset, aborted[0].last_offset),
        (Offset(0), Offset(2))
    );
    assert_eq!(aborted[0].last_stable_offset, Offset(3));
}

#[test]
fn truncation_below_a_marker_reopens_the_transaction() {
    // Producer state is rebuilt by replay: cutting a COMMIT marker reopens the txn and
    // removes it from the txn index when it was an ABORT.
    let mut l = log();
    lead(&mut l, &txn(9, 0, 0, 2), 0); // 0-1
    coord(&mut l, &marker(9, 0, false), 0); // 2
    assert_eq!(l.txn_index().all_aborted_txns().len(), 1);
    l.truncate_to(Offset(2)).unwrap();
    assert!(l.txn_index().all_aborted_txns().is_empty());
    assert_eq!(l.first_unstable_offset(), Some(Offset(0)));
}

#[test]
fn idempotent_duplicate_returns_original_offsets() {
    // Kafka: UnifiedLogTest.testDuplicateAppends: a retried batch is not appended again.
    let mut l = log();
    lead(&mut l, &idem(4, 0, 0, 3), 0);
    lead(&mut l, &plain(1), 0);
    let info = l
        .append_as_leader(&idem(4, 0, 0, 3), LeaderEpoch(0), AppendOrigin::Client)
        .unwrap();
    assert!(info.duplicate);
    assert_eq!(
        (info.first_offset, info.last_offset),
        (Offset(0), Offset(2))
    );
    assert_eq!(l.log_end_offset(), Offset(4));
}

#[test]
fn out_of_order_sequence_is_refused_and_changes_nothing() {
    let mut l = log();
    lead(&mut l, &idem(4, 0, 0, 3), 0);
    let e = l
        .append_as_leader(&idem(4, 0, 5, 1), LeaderEpoch(0), AppendOrigin::Client)
        .unwrap_err();
    assert!(matches!(e, AppendError::ProducerState(_)), "{e:?}");
    assert_eq!(l.log_end_offset(), Offset(3));
}

#[test]
fn mirror_pid_reset_expires_every_producer() {
    // KIP-1279: MIRROR_PID_RESET expires every producer-state entry at its offset, on the
    // leader, on followers, and on reload after a truncation.
    let mut l = log();
    lead(&mut l, &idem(4, 2, 0, 3), 0);
    lead(&mut l, &idem(5, 0, 0, 1), 0);
    let reset = BatchBuilder::new().build_control(ControlRecord::MirrorPidReset, 9);
    coord(&mut l, &reset, 1);
    assert!(l.producer_state().is_empty());
    // A new producer that happens to reuse pid 4 starts fresh at sequence 0 with epoch 0.
    assert_eq!(lead(&mut l, &idem(4, 0, 0, 2), 1), Offset(5));
    // A follower replaying the same log reaches the same state.
    let mut f = log();
    for b in l.batches() {
        f.append_as_follower(b, None).unwrap();
    }
    assert_eq!(
        f.producer_state().active_producers(),
        l.producer_state().active_producers()
    );
    // Truncating below the reset brings back the mirrored producers.
    l.truncate_to(Offset(4)).unwrap();
    assert_eq!(
        l.producer_state()
            .last_entry(ProducerId(4))
            .unwrap()
            .producer_epoch,
        ProducerEpoch(2)
    );
}

#[test]
fn retention_moves_log_start_but_not_past_hw() {
    let mut l = log();
    let old = BatchBuilder::new().build(&[SimpleRecord::value(0, "a")]);
    let new = BatchBuilder::new().build(&[SimpleRecord::value(10_000, "b")]);
    lead(&mut l, &old, 0);
    lead(&mut l, &old, 0);
    lead(&mut l, &new, 0);
    assert_eq!(
        l.apply_retention_ms(10_000, 5_000),
        None,
        "HW is 0: nothing deletable"
    );
    l.maybe_increment_high_watermark(Offset(3)).unwrap();
    assert_eq!(l.apply_retention_ms(10_000, 5_000), Some(Offset(2)));
    assert_eq!(l.log_start_offset(), Offset(2));
    assert_eq!(l.batch_count(), 1);
}

#[test]
fn hw_rules_leader_only_up_follower_clamped() {
    let mut l = log();
    lead(&mut l, &plain(5), 0);
    assert_eq!(
        l.maybe_increment_high_watermark(Offset(3)),
        Ok(Some(Offset(3)))
    );
    assert_eq!(l.maybe_increment_high_watermark(Offset(2)), Ok(None));
    assert!(l.maybe_increment_high_watermark(Offset(6)).is_err());
    assert_eq!(
        l.maybe_update_high_watermark(Offset(1)),
        Some(Offset(1)),
        "follower HW may go down"
    );
    assert_eq!(
        l.update_high_watermark(Offset(99)),
        Offset(5),
        "clamped to the LEO"
    );
}

#[test]
fn producer_state_survives_log_start_moves_via_base_snapshot() {
    // Deleted batches' producer state lives on (Kafka keeps it in snapshots), so a reload
    // after truncation still knows the producer.
    let mut l = log();
    lead(&mut l, &idem(1, 0, 0, 2), 0); // 0-1
    lead(&mut l, &plain(2), 0); // 2-3
    lead(&mut l, &plain(1), 0); // 4
    l.maybe_increment_high_watermark(Offset(5)).unwrap();
    l.maybe_increment_log_start_offset(Offset(2)).unwrap();
    l.truncate_to(Offset(4)).unwrap();
    assert_eq!(
        l.producer_state()
            .last_entry(ProducerId(1))
            .unwrap()
            .last_seq(),
        Sequence(1)
    );
    assert_eq!(*l.producer_state(), l.replayed_producer_state());
}

#[test]
fn batches_from_starts_at_the_batch_containing_the_offset() {
    let mut l = log();
    for n in [3, 2, 4] {
        lead(&mut l, &plain(n), 0); // offsets 0-2, 3-4, 5-8
    }
    let bases = |from: i64| -> Vec<i64> {
        l.batches_from(Offset(from))
            .map(|b| b.base_offset().0)
            .collect()
    };
    assert_eq!(bases(0), vec![0, 3, 5]);
    assert_eq!(bases(2), vec![0, 3, 5]);
    assert_eq!(bases(3), vec![3, 5]);
    assert_eq!(bases(8), vec![5]);
    assert_eq!(bases(9), Vec::<i64>::new());
}

#[test]
fn a_truncation_at_the_log_start_forgets_producers_of_deleted_batches() {
    // Kafka `ProducerStateManager.truncateAndReload`: snapshots at or below the log start are
    // deleted, so a cut at the log start reloads an empty state there (mirror chaos seed
    // 6834: a mirrored transaction whose data DeleteRecords removed stayed open after the
    // stop's LSO cut took its COMMIT).
    let mut l = log();
    lead(&mut l, &txn(7, 0, 0, 10), 0); // 0-9, open
    l.append_as_leader(
        &marker(7, 0, true),
        LeaderEpoch(0),
        AppendOrigin::Coordinator,
    )
    .unwrap(); // 10: COMMIT
    l.maybe_increment_high_watermark(Offset(10)).unwrap();
    l.maybe_increment_log_start_offset(Offset(10)).unwrap();
    assert_eq!(
        l.producer_state().first_unstable_offset(),
        Some(Offset(0)),
        "the COMMIT at 10 is not replicated yet: the transaction is unstable"
    );
    assert!(l.truncate_to(Offset(10)).unwrap());
    assert_eq!(l.producer_state().first_unstable_offset(), None);
    assert_eq!(l.last_stable_offset(), l.high_watermark());
    // A cut above the log start keeps what a segment snapshot would hold.
    let mut k = log();
    lead(&mut k, &txn(7, 0, 0, 4), 0); // 0-3, open
    lead(&mut k, &plain(4), 0); // 4-7
    k.maybe_increment_high_watermark(Offset(8)).unwrap();
    k.maybe_increment_log_start_offset(Offset(4)).unwrap();
    assert!(k.truncate_to(Offset(6)).unwrap());
    assert_eq!(k.producer_state().first_unstable_offset(), Some(Offset(0)));
}
