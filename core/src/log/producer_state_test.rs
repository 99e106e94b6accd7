//! Transcribed from Kafka's `ProducerStateManagerTest` (names in snake case), plus the KIP-1279
//! `MIRROR_PID_RESET` rules. Kafka's tests drive `ProducerAppendInfo` directly; here every
//! append goes through the log's path: `check_append`, then `apply_batch` and `complete_txn`.
//! Snapshot-file, verification-guard (KIP-890) and late-transaction tests have no counterpart.

use super::*;
use crate::record::{BatchBuilder, ControlRecord, RecordBatch, SimpleRecord};

pub(super) const PID: i64 = 1;
pub(super) const EPOCH: i16 = 0;
const EXPIRATION: i64 = DEFAULT_PRODUCER_ID_EXPIRATION_MS;
pub(super) const NOW: i64 = 1_000;

pub(super) fn psm() -> ProducerStateManager {
    ProducerStateManager::new(EXPIRATION)
}

/// A data batch of `count` records with sequences `seq..` at offsets `offset..`, timestamp `ts`.
pub(super) fn data_batch(
    pid: i64,
    epoch: i16,
    seq: i32,
    offset: i64,
    count: usize,
    ts: i64,
    txn: bool,
) -> RecordBatch {
    let (pid, epoch, seq) = (ProducerId(pid), ProducerEpoch(epoch), Sequence(seq));
    let builder = if txn {
        BatchBuilder::transactional(pid, epoch, seq)
    } else {
        BatchBuilder::idempotent(pid, epoch, seq)
    };
    let records: Vec<SimpleRecord> = (0..count).map(|_| SimpleRecord::value(ts, "v")).collect();
    builder.base_offset(Offset(offset)).build(&records)
}

pub(super) fn marker_batch(
    pid: i64,
    epoch: i16,
    commit: bool,
    coord: i32,
    offset: i64,
    ts: i64,
) -> RecordBatch {
    let record = if commit {
        ControlRecord::commit(coord)
    } else {
        ControlRecord::abort(coord)
    };
    BatchBuilder::transactional(ProducerId(pid), ProducerEpoch(epoch), Sequence::NONE)
        .base_offset(Offset(offset))
        .build_control(record, ts)
}

fn pid_reset_batch(offset: i64, ts: i64) -> RecordBatch {
    BatchBuilder::new()
        .base_offset(Offset(offset))
        .build_control(ControlRecord::MirrorPidReset, ts)
}

/// The log's append path (Kafka: `UnifiedLog.append`): validate, apply, complete the txn.
pub(super) fn append(
    psm: &mut ProducerStateManager,
    batch: &RecordBatch,
    origin: AppendOrigin,
) -> Result<AppendCheck, ProducerStateError> {
    let check = psm.check_append(batch, origin)?;
    if check == AppendCheck::Accept
        && let Some(completed) = psm.apply_batch(batch, origin)
    {
        psm.complete_txn(&completed).unwrap();
    }
    Ok(check)
}

/// Kafka's `appendClientEntry`: one record at `offset` with sequence `seq`.
pub(super) fn client(
    psm: &mut ProducerStateManager,
    pid: i64,
    epoch: i16,
    seq: i32,
    offset: i64,
    txn: bool,
) -> Result<AppendCheck, ProducerStateError> {
    append(
        psm,
        &data_batch(pid, epoch, seq, offset, 1, NOW, txn),
        AppendOrigin::Client,
    )
}

/// Kafka's `appendReplicationEntry` (non-transactional, producer `PID`).
pub(super) fn replication(
    psm: &mut ProducerStateManager,
    epoch: i16,
    seq: i32,
    offset: i64,
    ts: i64,
) -> Result<AppendCheck, ProducerStateError> {
    append(
        psm,
        &data_batch(PID, epoch, seq, offset, 1, ts, false),
        AppendOrigin::Replication,
    )
}

/// Kafka's `appendEndTxnMarker` (origin COORDINATOR).
pub(super) fn end_txn(
    psm: &mut ProducerStateManager,
    pid: i64,
    epoch: i16,
    commit: bool,
    offset: i64,
    coord: i32,
) -> Result<AppendCheck, ProducerStateError> {
    append(
        psm,
        &marker_batch(pid, epoch, commit, coord, offset, NOW),
        AppendOrigin::Coordinator,
    )
}

pub(super) fn entry(psm: &ProducerStateManager, pid: i64) -> &ProducerStateEntry {
    psm.last_entry(ProducerId(pid))
        .expect("producer has an entry")
}

pub(super) fn is_out_of_order(r: Result<AppendCheck, ProducerStateError>) -> bool {
    matches!(r, Err(ProducerStateError::OutOfOrderSequence { .. }))
}

fn is_invalid_epoch(r: Result<AppendCheck, ProducerStateError>) -> bool {
    matches!(r, Err(ProducerStateError::InvalidProducerEpoch { .. }))
}

const OK: Result<AppendCheck, ProducerStateError> = Ok(AppendCheck::Accept);

/// `testBasicIdMapping`: in-order sequences are accepted, a gap is out of order, a new epoch
/// at sequence 0 is accepted and the old epoch is then fenced. Kafka's test bypasses the
/// duplicate check, so its retry of sequence 1 is out of order; through the log's path it is a
/// retained duplicate answered with the original offset.
#[test]
fn test_basic_id_mapping() {
    let mut s = psm();
    assert_eq!(client(&mut s, PID, EPOCH, 0, 0, false), OK);
    assert_eq!(client(&mut s, PID, EPOCH, 1, 1, false), OK);
    let dup = BatchMetadata {
        last_seq: Sequence(1),
        last_offset: Offset(1),
        offset_delta: 0,
        timestamp: NOW,
    };
    assert_eq!(
        client(&mut s, PID, EPOCH, 1, 2, false),
        Ok(AppendCheck::Duplicate(dup))
    );
    assert_eq!(
        client(&mut s, PID, EPOCH, 5, 2, false),
        Err(ProducerStateError::OutOfOrderSequence {
            producer_id: ProducerId(PID),
            offset: Offset(2),
            batch_epoch: ProducerEpoch(EPOCH),
            first_seq: Sequence(5),
            current_epoch: ProducerEpoch(EPOCH),
            last_seq: Sequence(1),
        })
    );
    assert_eq!(client(&mut s, PID, EPOCH + 1, 0, 3, false), OK);
    assert_eq!(
        client(&mut s, PID, EPOCH, 0, 4, false),
        Err(ProducerStateError::InvalidProducerEpoch {
            producer_id: ProducerId(PID),
            offset: Offset(4),
            batch_epoch: ProducerEpoch(EPOCH),
            current_epoch: ProducerEpoch(EPOCH + 1),
        })
    );
}

/// `UnifiedLogTest.testDuplicateAppends` (shape): a retry of any of the last 5 batches is a
/// duplicate answered with its original offsets and appends nothing; a retry of an older batch,
/// or one whose range is not exactly a retained batch's, is out of order.
#[test]
fn duplicate_within_window_vs_older_duplicate() {
    let mut s = psm();
    for k in 0..6 {
        let b = data_batch(PID, EPOCH, 2 * k, i64::from(2 * k), 2, NOW, false);
        assert_eq!(append(&mut s, &b, AppendOrigin::Client), OK);
    }
    assert_eq!(entry(&s, PID).batch_metadata().len(), 5);
    let before = s.clone();
    for k in 1..6 {
        let retry = data_batch(PID, EPOCH, 2 * k, 100, 2, NOW, false);
        let Ok(AppendCheck::Duplicate(m)) = append(&mut s, &retry, AppendOrigin::Client) else {
            panic!("batch {k} is retained and must be a duplicate");
        };
        assert_eq!(
            (m.first_offset(), m.last_offset),
            (Offset(i64::from(2 * k)), Offset(i64::from(2 * k + 1)))
        );
        assert_eq!(
            (m.first_seq(), m.last_seq),
            (Sequence(2 * k), Sequence(2 * k + 1))
        );
    }
    assert_eq!(s, before, "a duplicate appends nothing");
    let oldest = data_batch(PID, EPOCH, 0, 100, 2, NOW, false);
    assert!(is_out_of_order(append(
        &mut s,
        &oldest,
        AppendOrigin::Client
    )));
    let partial = data_batch(PID, EPOCH, 2, 100, 1, NOW, false);
    assert!(is_out_of_order(append(
        &mut s,
        &partial,
        AppendOrigin::Client
    )));
    // A same-range batch with another epoch is not a duplicate: the epoch check decides.
    let old_epoch = data_batch(PID, EPOCH - 1, 10, 100, 2, NOW, false);
    assert!(is_invalid_epoch(append(
        &mut s,
        &old_epoch,
        AppendOrigin::Client
    )));
    // Only client appends are checked for duplicates (UnifiedLog: `origin == CLIENT`).
    let retry = data_batch(PID, EPOCH, 10, 100, 2, NOW, false);
    assert_eq!(s.check_append(&retry, AppendOrigin::Coordinator), OK);
    assert_eq!(s.check_append(&retry, AppendOrigin::Replication), OK);
    // Followers never answer duplicates: replication overwrites.
    let replicated = data_batch(PID, EPOCH, 10, 12, 2, NOW, false);
    assert_eq!(append(&mut s, &replicated, AppendOrigin::Replication), OK);
}

/// `testAppendTxnMarkerWithNoProducerState`: a marker alone creates an entry that still fences
/// older epochs and demands sequence 0.
#[test]
fn test_append_txn_marker_with_no_producer_state() {
    let mut s = psm();
    let epoch = 2;
    assert_eq!(end_txn(&mut s, PID, epoch, true, 27, 0), OK);
    let e = entry(&s, PID);
    assert_eq!(e.producer_epoch, ProducerEpoch(epoch));
    assert_eq!(e.producer_id, ProducerId(PID));
    assert_eq!(e.last_seq(), Sequence::NONE);
    assert!(is_invalid_epoch(client(&mut s, PID, 0, 0, 28, false)));
    assert!(is_out_of_order(client(&mut s, PID, epoch, 17, 28, false)));
    assert_eq!(client(&mut s, PID, epoch, 0, 28, false), OK);
    assert_eq!(entry(&s, PID).producer_epoch, ProducerEpoch(epoch));
    assert_eq!(entry(&s, PID).last_seq(), Sequence(0));
}

/// `testProducerSequenceWrapAround`: after `i32::MAX` the next sequence is 0.
#[test]
fn test_producer_sequence_wrap_around() {
    let mut s = psm();
    assert_eq!(replication(&mut s, 15, i32::MAX, 735, NOW), OK);
    assert_eq!(client(&mut s, PID, 15, 0, 1235, false), OK);
    let e = entry(&s, PID);
    assert_eq!(e.producer_epoch, ProducerEpoch(15));
    assert_eq!(e.first_seq(), Sequence(i32::MAX));
    assert_eq!(e.last_seq(), Sequence(0));
}

/// `testProducerSequenceWithWrapAroundBatchRecord`: one batch whose sequences wrap.
#[test]
fn test_producer_sequence_with_wrap_around_batch_record() {
    let mut s = psm();
    let b = data_batch(PID, 15, i32::MAX - 10, 2000, 21, NOW, false);
    assert_eq!(append(&mut s, &b, AppendOrigin::Replication), OK);
    let e = entry(&s, PID);
    assert_eq!(e.first_seq(), Sequence(i32::MAX - 10));
    assert_eq!(e.last_seq(), Sequence(9));
    assert_eq!(e.first_data_offset(), Some(Offset(2000)));
    assert_eq!(e.last_data_offset(), Some(Offset(2020)));
}

/// `testProducerSequenceInvalidWrapAround`: after `i32::MAX`, 1 is a gap.
#[test]
fn test_producer_sequence_invalid_wrap_around() {
    let mut s = psm();
    assert_eq!(replication(&mut s, 15, i32::MAX, 735, NOW), OK);
    assert!(is_out_of_order(client(&mut s, PID, 15, 1, 1235, false)));
}

/// `testNoValidationOnFirstEntryWhenLoadingLog`: replication accepts any first sequence.
#[test]
fn test_no_validation_on_first_entry_when_loading_log() {
    let mut s = psm();
    assert_eq!(replication(&mut s, 5, 16, 735, NOW), OK);
    let e = entry(&s, PID);
    assert_eq!(e.producer_epoch, ProducerEpoch(5));
    assert_eq!((e.first_seq(), e.last_seq()), (Sequence(16), Sequence(16)));
    assert_eq!(e.first_data_offset(), Some(Offset(735)));
    assert_eq!(e.last_data_offset(), Some(Offset(735)));
}

/// `testControlRecordBumpsProducerEpoch`: a marker with a higher epoch clears the batches.
#[test]
fn test_control_record_bumps_producer_epoch() {
    let mut s = psm();
    assert_eq!(client(&mut s, PID, EPOCH, 0, 0, false), OK);
    assert_eq!(end_txn(&mut s, PID, 1, false, 1, 0), OK);
    let e = entry(&s, PID);
    assert_eq!(e.producer_epoch, ProducerEpoch(1));
    assert_eq!(e.current_txn_first_offset, None);
    assert_eq!(
        (e.first_seq(), e.last_seq()),
        (Sequence::NONE, Sequence::NONE)
    );
    assert_eq!(client(&mut s, PID, 1, 0, 2, false), OK);
    assert_eq!(entry(&s, PID).first_seq(), Sequence(0));
}

/// `testPrepareUpdateDoesNotMutate`: `check_append` changes nothing; `apply_batch` does.
#[test]
fn test_prepare_update_does_not_mutate() {
    let mut s = psm();
    let first = data_batch(PID, EPOCH, 0, 15, 6, NOW, false);
    assert_eq!(s.check_append(&first, AppendOrigin::Client), OK);
    assert_eq!(s.last_entry(ProducerId(PID)), None);
    assert_eq!(s.apply_batch(&first, AppendOrigin::Client), None);
    let next = data_batch(PID, EPOCH, 6, 26, 5, NOW, false);
    let before = s.clone();
    assert_eq!(s.check_append(&next, AppendOrigin::Client), OK);
    assert_eq!(s, before);
    assert_eq!(entry(&s, PID).last_seq(), Sequence(5));
    assert_eq!(entry(&s, PID).last_data_offset(), Some(Offset(20)));
    s.apply_batch(&next, AppendOrigin::Client);
    let e = entry(&s, PID);
    assert_eq!((e.first_seq(), e.last_seq()), (Sequence(0), Sequence(10)));
    assert_eq!(e.last_data_offset(), Some(Offset(30)));
    assert_eq!(s.map_end_offset(), Offset(31));
}

/// `updateProducerTransactionState`: a transaction opens at its first batch; the COMMIT
/// returns the completed transaction and leaves the retained batches alone.
#[test]
fn update_producer_transaction_state() {
    let mut s = psm();
    assert_eq!(client(&mut s, PID, EPOCH, 0, 9, false), OK);
    let b1 = data_batch(PID, EPOCH, 1, 16, 5, NOW, true);
    assert_eq!(s.check_append(&b1, AppendOrigin::Client), OK);
    assert_eq!(s.apply_batch(&b1, AppendOrigin::Client), None);
    assert_eq!(entry(&s, PID).current_txn_first_offset, Some(Offset(16)));
    let b2 = data_batch(PID, EPOCH, 6, 26, 5, NOW, true);
    assert_eq!(s.check_append(&b2, AppendOrigin::Client), OK);
    s.apply_batch(&b2, AppendOrigin::Client);
    assert_eq!(entry(&s, PID).current_txn_first_offset, Some(Offset(16)));
    let expected_txn = TxnMetadata {
        producer_id: ProducerId(PID),
        first_offset: Offset(16),
        last_offset: None,
    };
    assert_eq!(
        s.ongoing_txns().values().collect::<Vec<_>>(),
        vec![&expected_txn]
    );
    let commit = marker_batch(PID, EPOCH, true, 15, 40, NOW);
    assert_eq!(s.check_append(&commit, AppendOrigin::Coordinator), OK);
    let completed = s.apply_batch(&commit, AppendOrigin::Coordinator);
    assert_eq!(
        completed,
        Some(CompletedTxn {
            producer_id: ProducerId(PID),
            first_offset: Offset(16),
            last_offset: Offset(40),
            is_aborted: false,
        })
    );
    let e = entry(&s, PID);
    assert_eq!(e.batch_metadata().len(), 3);
    assert_eq!((e.first_seq(), e.last_seq()), (Sequence(0), Sequence(10)));
    assert_eq!(e.last_data_offset(), Some(Offset(30)));
    assert_eq!(e.current_txn_first_offset, None);
    assert_eq!(e.coordinator_epoch, 15);
    // Still ongoing until the log completes it.
    assert_eq!(s.first_undecided_offset(), Some(Offset(16)));
    s.complete_txn(&completed.unwrap()).unwrap();
    assert_eq!(s.first_undecided_offset(), None);
    assert_eq!(
        s.unreplicated_txns()[&Offset(16)].last_offset,
        Some(Offset(40))
    );
}

/// `testOutOfSequenceAfterControlRecordEpochBump`: after a bumping marker only sequence 0 is
/// accepted, in the bumped epoch or a later one.
#[test]
fn test_out_of_sequence_after_control_record_epoch_bump() {
    let mut s = psm();
    assert_eq!(client(&mut s, PID, EPOCH, 0, 0, true), OK);
    assert_eq!(client(&mut s, PID, EPOCH, 1, 1, true), OK);
    assert_eq!(end_txn(&mut s, PID, 1, false, 2, 0), OK);
    assert!(is_out_of_order(client(&mut s, PID, 1, 2, 3, true)));
    assert!(is_out_of_order(client(&mut s, PID, 2, 2, 3, true)));
    assert_eq!(client(&mut s, PID, 1, 0, 3, true), OK);
    assert_eq!(entry(&s, PID).producer_epoch, ProducerEpoch(1));
    assert_eq!(entry(&s, PID).last_seq(), Sequence(0));
}

/// `testNonTransactionalAppendWithOngoingTransaction`.
#[test]
fn test_non_transactional_append_with_ongoing_transaction() {
    let mut s = psm();
    assert_eq!(client(&mut s, PID, EPOCH, 0, 0, true), OK);
    assert_eq!(
        client(&mut s, PID, EPOCH, 1, 1, false),
        Err(ProducerStateError::InvalidTxnState {
            producer_id: ProducerId(PID),
            offset: Offset(1),
            txn_first_offset: Offset(0),
        })
    );
    // Kafka's appendDataBatch throws this for every origin, replication included.
    let b = data_batch(PID, EPOCH, 1, 1, 1, NOW, false);
    assert!(matches!(
        s.check_append(&b, AppendOrigin::Replication),
        Err(ProducerStateError::InvalidTxnState { .. })
    ));
    assert!(matches!(
        s.check_append(&b, AppendOrigin::Coordinator),
        Err(ProducerStateError::InvalidTxnState { .. })
    ));
}

/// `testProducerStateAfterFencingAbortMarker`: the fencing ABORT closes the transaction,
/// clears the batches, and the entry is kept until it expires.
#[test]
fn test_producer_state_after_fencing_abort_marker() {
    let mut s = psm();
    assert_eq!(client(&mut s, PID, EPOCH, 0, 0, true), OK);
    assert_eq!(end_txn(&mut s, PID, EPOCH + 1, false, 1, 0), OK);
    let e = entry(&s, PID);
    assert_eq!(e.current_txn_first_offset, None);
    assert_eq!(e.last_data_offset(), None);
    assert_eq!(e.first_data_offset(), None);
    s.remove_expired_producers(NOW);
    assert!(s.last_entry(ProducerId(PID)).is_some());
    assert!(is_invalid_epoch(client(&mut s, PID, EPOCH, 1, 2, true)));
}

/// `testAcceptAppendWithSequenceGapsOnReplica`: a client gap fails, a replicated gap is taken.
#[test]
fn test_accept_append_with_sequence_gaps_on_replica() {
    let mut s = psm();
    assert_eq!(client(&mut s, PID, EPOCH, 0, 0, false), OK);
    assert!(is_out_of_order(client(&mut s, PID, EPOCH, 3, 1, false)));
    assert_eq!(entry(&s, PID).last_seq(), Sequence(0));
    assert_eq!(replication(&mut s, EPOCH, 3, 1, NOW), OK);
    assert_eq!(entry(&s, PID).last_seq(), Sequence(3));
}

/// `testAcceptAppendWithoutProducerStateOnReplica` (expiry instead of a snapshot reload): a
/// replica with no entry takes any sequence and creates the entry.
#[test]
fn test_accept_append_without_producer_state_on_replica() {
    let mut s = ProducerStateManager::new(60_000);
    assert_eq!(
        append(
            &mut s,
            &data_batch(PID, EPOCH, 0, 0, 1, 0, false),
            AppendOrigin::Client
        ),
        OK
    );
    assert_eq!(
        append(
            &mut s,
            &data_batch(PID, EPOCH, 1, 1, 1, 1, false),
            AppendOrigin::Client
        ),
        OK
    );
    s.remove_expired_producers(70_000);
    assert!(!s.active_producers().contains_key(&ProducerId(PID)));
    assert_eq!(replication(&mut s, EPOCH, 2, 2, 70_001), OK);
    let e = entry(&s, PID);
    assert_eq!(e.producer_epoch, ProducerEpoch(EPOCH));
    assert_eq!((e.first_seq(), e.last_seq()), (Sequence(2), Sequence(2)));
}

/// `testTruncateFullyAndStartAt`: everything is forgotten, so sequence 0 is accepted again.
#[test]
fn test_truncate_fully_and_start_at() {
    let mut s = psm();
    for seq in 0..3 {
        assert_eq!(client(&mut s, PID, EPOCH, seq, i64::from(seq), false), OK);
    }
    assert_eq!(client(&mut s, 2, EPOCH, 0, 3, true), OK);
    assert_eq!(end_txn(&mut s, 2, EPOCH, true, 4, 0), OK);
    assert_eq!(client(&mut s, 3, EPOCH, 0, 5, true), OK);
    let restart = data_batch(PID, EPOCH, 0, 6, 2, NOW, false);
    assert!(is_out_of_order(append(
        &mut s,
        &restart,
        AppendOrigin::Client
    )));
    s.truncate_fully_and_start_at(Offset(0));
    assert!(s.is_empty());
    assert!(s.ongoing_txns().is_empty());
    assert_eq!(s.first_unstable_offset(), None);
    assert_eq!(s.map_end_offset(), Offset(0));
    let restart_at_0 = data_batch(PID, EPOCH, 0, 0, 2, NOW, false);
    assert_eq!(append(&mut s, &restart_at_0, AppendOrigin::Client), OK);
    assert_eq!(s.map_end_offset(), Offset(2));
}

/// `testPidExpirationTimeout`: an idle producer expires and may then continue.
#[test]
fn test_pid_expiration_timeout() {
    let mut s = psm();
    assert_eq!(client(&mut s, PID, 5, 0, 1, false), OK);
    s.remove_expired_producers(NOW + EXPIRATION - 1);
    assert_eq!(s.active_producers().len(), 1);
    s.remove_expired_producers(NOW + EXPIRATION + 1);
    assert!(s.active_producers().is_empty());
    assert_eq!(client(&mut s, PID, 5, 1, 2, false), OK);
    assert_eq!(s.active_producers().len(), 1);
    assert_eq!(
        s.active_producers()[&ProducerId(PID)].last_seq(),
        Sequence(1)
    );
    assert_eq!(s.map_end_offset(), Offset(3));
}

/// No Kafka test of its own (`checkSequence`): a producer with no entry (never seen, or
/// expired) may start at any sequence and any epoch; a known one may not.
#[test]
fn unknown_producer_may_start_at_any_sequence() {
    let mut s = psm();
    assert_eq!(client(&mut s, PID, 3, 42, 0, false), OK);
    assert!(is_out_of_order(client(&mut s, PID, 3, 50, 1, false)));
    assert!(is_out_of_order(client(&mut s, PID, 4, 7, 1, false)));
    s.remove_expired_producers(NOW + EXPIRATION);
    assert_eq!(client(&mut s, PID, 1, 50, 1, false), OK);
}

/// `ProducerStateManager.isProducerExpired`: `now - last_timestamp >= expiration`, and never
/// with an open transaction.
#[test]
fn is_producer_expired_boundary() {
    let mut s = psm();
    assert_eq!(client(&mut s, PID, EPOCH, 0, 0, false), OK);
    let e = entry(&s, PID).clone();
    assert!(!s.is_producer_expired(&e, NOW + EXPIRATION - 1));
    assert!(s.is_producer_expired(&e, NOW + EXPIRATION));
    assert_eq!(client(&mut s, 2, EPOCH, 0, 1, true), OK);
    let open = entry(&s, 2).clone();
    assert!(!s.is_producer_expired(&open, i64::MAX));
}

/// `testFirstUnstableOffset`: ongoing transactions and unreplicated (marker at or above the
/// HW) ones both hold the first unstable offset; the first undecided one only counts ongoing.
#[test]
fn test_first_unstable_offset() {
    let mut s = psm();
    let epoch = 5;
    assert_eq!(s.first_undecided_offset(), None);
    assert_eq!(client(&mut s, PID, epoch, 0, 99, true), OK);
    assert_eq!(s.first_undecided_offset(), Some(Offset(99)));
    assert_eq!(s.first_unstable_offset(), Some(Offset(99)));
    let another = 2;
    assert_eq!(client(&mut s, another, epoch, 0, 105, true), OK);
    assert_eq!(s.first_undecided_offset(), Some(Offset(99)));
    assert_eq!(s.first_unstable_offset(), Some(Offset(99)));
    assert_eq!(end_txn(&mut s, PID, epoch, true, 109, 0), OK);
    assert_eq!(s.first_undecided_offset(), Some(Offset(105)));
    assert_eq!(s.first_unstable_offset(), Some(Offset(99)));
    s.on_high_watermark_updated(Offset(100));
    assert_eq!(s.first_unstable_offset(), Some(Offset(99)));
    s.on_high_watermark_updated(Offset(110));
    assert_eq!(s.first_unstable_offset(), Some(Offset(105)));
    assert_eq!(end_txn(&mut s, another, epoch, false, 112, 0), OK);
    assert_eq!(s.first_undecided_offset(), None);
    assert_eq!(s.first_unstable_offset(), Some(Offset(105)));
    s.on_high_watermark_updated(Offset(112));
    assert_eq!(
        s.first_unstable_offset(),
        Some(Offset(105)),
        "marker at the HW is unreplicated"
    );
    s.on_high_watermark_updated(Offset(113));
    assert_eq!(s.first_unstable_offset(), None);
}

/// `testProducersWithOngoingTransactionsDontExpire`.
#[test]
fn test_producers_with_ongoing_transactions_dont_expire() {
    let mut s = psm();
    assert_eq!(client(&mut s, PID, 5, 0, 99, true), OK);
    s.remove_expired_producers(NOW + EXPIRATION + 1);
    assert!(s.last_entry(ProducerId(PID)).is_some());
    assert_eq!(s.first_undecided_offset(), Some(Offset(99)));
    // Once the transaction is over, the same idle time expires it.
    assert_eq!(end_txn(&mut s, PID, 5, true, 100, 0), OK);
    s.remove_expired_producers(NOW + EXPIRATION + 1);
    assert!(s.last_entry(ProducerId(PID)).is_none());
}

/// `testSequenceNotValidatedForGroupMetadataTopic`: coordinator-origin data batches without
/// sequences pass; the same batches from a client would not.
#[test]
fn test_sequence_not_validated_for_group_metadata_topic() {
    let mut s = psm();
    let b1 = data_batch(PID, EPOCH, -1, 99, 1, NOW, true);
    let b2 = data_batch(PID, EPOCH, -1, 100, 1, NOW, true);
    assert_eq!(append(&mut s, &b1, AppendOrigin::Coordinator), OK);
    assert!(is_out_of_order(s.check_append(&b2, AppendOrigin::Client)));
    assert_eq!(append(&mut s, &b2, AppendOrigin::Coordinator), OK);
}

/// `testOldEpochForControlRecord`: a marker with an older epoch is fenced (a replicated one is
/// accepted and overwrites the epoch).
#[test]
fn test_old_epoch_for_control_record() {
    let mut s = psm();
    assert_eq!(client(&mut s, PID, 5, 0, 99, true), OK);
    assert!(is_invalid_epoch(end_txn(&mut s, PID, 3, true, 100, 0)));
    assert_eq!(entry(&s, PID).current_txn_first_offset, Some(Offset(99)));
    let m = marker_batch(PID, 3, true, 0, 100, NOW);
    assert_eq!(append(&mut s, &m, AppendOrigin::Replication), OK);
    assert_eq!(entry(&s, PID).producer_epoch, ProducerEpoch(3));
    assert_eq!(s.first_undecided_offset(), None);
}

/// `testCoordinatorFencing`: markers from an older coordinator epoch are fenced.
#[test]
fn test_coordinator_fencing() {
    let mut s = psm();
    let epoch = 5;
    assert_eq!(client(&mut s, PID, epoch, 0, 99, true), OK);
    assert_eq!(end_txn(&mut s, PID, epoch, true, 100, 1), OK);
    assert_eq!(entry(&s, PID).coordinator_epoch, 1);
    assert_eq!(end_txn(&mut s, PID, epoch, true, 101, 1), OK);
    assert_eq!(end_txn(&mut s, PID, epoch, true, 102, 2), OK);
    assert_eq!(
        end_txn(&mut s, PID, epoch, true, 103, 1),
        Err(ProducerStateError::TransactionCoordinatorFenced {
            producer_id: ProducerId(PID),
            offset: Offset(103),
            marker_coordinator_epoch: 1,
            current_coordinator_epoch: 2,
        })
    );
    // Replication only logs it, and overwrites.
    let m = marker_batch(PID, epoch, true, 1, 103, NOW);
    assert_eq!(append(&mut s, &m, AppendOrigin::Replication), OK);
    assert_eq!(entry(&s, PID).coordinator_epoch, 1);
}

/// `testRejectNonZeroSequenceForDirectEpochBump`.
#[test]
fn test_reject_non_zero_sequence_for_direct_epoch_bump() {
    let mut s = psm();
    for seq in 0..3 {
        assert_eq!(client(&mut s, PID, EPOCH, seq, i64::from(seq), false), OK);
    }
    assert_eq!(
        client(&mut s, PID, 1, 5, 3, false),
        Err(ProducerStateError::OutOfOrderSequence {
            producer_id: ProducerId(PID),
            offset: Offset(3),
            batch_epoch: ProducerEpoch(1),
            first_seq: Sequence(5),
            current_epoch: ProducerEpoch(0),
            last_seq: Sequence(2),
        })
    );
    assert_eq!(client(&mut s, PID, 1, 0, 3, false), OK);
    assert_eq!(
        entry(&s, PID).batch_metadata().len(),
        1,
        "the bump cleared the old epoch"
    );
}

/// `testLastStableOffsetCompletedTxn`: the LSO stored for the index is the first ongoing
/// transaction of another producer, else the marker offset + 1.
#[test]
fn test_last_stable_offset_completed_txn() {
    let mut s = psm();
    let (p1, p2, p3) = (PID, PID + 1, PID + 2);
    let start1 = 992_342;
    let start2 = start1 + 25;
    let start3 = start1 + 57;
    for (p, o) in [(p1, start1), (p2, start2), (p3, start3)] {
        assert_eq!(client(&mut s, p, EPOCH, 0, o, true), OK);
    }
    let done = |p: i64, first: i64, last: i64| CompletedTxn {
        producer_id: ProducerId(p),
        first_offset: Offset(first),
        last_offset: Offset(last),
        is_aborted: false,
    };
    let last1 = start3 + 15;
    let c1 = done(p1, start1, last1);
    assert_eq!(s.last_stable_offset(&c1), Offset(start2));
    s.complete_txn(&c1).unwrap();
    s.on_high_watermark_updated(Offset(last1 + 1));
    assert_eq!(s.first_unstable_offset(), Some(Offset(start2)));
    let last3 = last1 + 20;
    let c3 = done(p3, start3, last3);
    assert_eq!(s.last_stable_offset(&c3), Offset(start2));
    s.complete_txn(&c3).unwrap();
    s.on_high_watermark_updated(Offset(last3 + 1));
    assert_eq!(s.first_unstable_offset(), Some(Offset(start2)));
    let last2 = last3 + 78;
    let c2 = done(p2, start2, last2);
    assert_eq!(s.last_stable_offset(&c2), Offset(last2 + 1));
    s.complete_txn(&c2).unwrap();
    s.on_high_watermark_updated(Offset(last2 + 1));
    assert_eq!(s.first_unstable_offset(), None);
}

/// Kafka `completeTxn` throws `IllegalArgumentException` for a transaction that was not
/// started; here it is a typed error, and a completion naming another producer's
/// transaction is refused as well. Nothing changes in either case.
#[test]
fn complete_txn_misuse_is_an_error_and_changes_nothing() {
    let mut s = psm();
    let (p1, p2) = (PID, PID + 1);
    assert_eq!(client(&mut s, p1, EPOCH, 0, 100, true), OK);
    let completion = |p: i64, first: i64| CompletedTxn {
        producer_id: ProducerId(p),
        first_offset: Offset(first),
        last_offset: Offset(first + 10),
        is_aborted: true,
    };
    assert_eq!(
        s.complete_txn(&completion(p1, 99)),
        Err(CompleteTxnError::NotStarted {
            producer_id: ProducerId(p1),
            first_offset: Offset(99),
        })
    );
    assert_eq!(
        s.complete_txn(&completion(p2, 100)),
        Err(CompleteTxnError::OtherProducer {
            producer_id: ProducerId(p2),
            first_offset: Offset(100),
            owner: ProducerId(p1),
        })
    );
    assert_eq!(s.first_undecided_offset(), Some(Offset(100)));
    assert!(s.unreplicated_txns().is_empty());
    // The right completion still works, once.
    assert_eq!(s.complete_txn(&completion(p1, 100)), Ok(()));
    assert_eq!(s.first_undecided_offset(), None);
    assert!(matches!(
        s.complete_txn(&completion(p1, 100)),
        Err(CompleteTxnError::NotStarted { .. })
    ));
}

/// `testSkipEmptyTransactions`: markers with no open transaction complete nothing.
#[test]
fn test_skip_empty_transactions() {
    let mut s = psm();
    let mut seq = 0;
    let mut data = |s: &mut ProducerStateManager, start: i64, end: i64| {
        let n = usize::try_from(end - start + 1).unwrap();
        let b = data_batch(PID, EPOCH, seq, start, n, NOW, true);
        seq += i32::try_from(n).unwrap();
        assert_eq!(append(s, &b, AppendOrigin::Client), OK);
    };
    let marker = |s: &mut ProducerStateManager, commit: bool, offset: i64| {
        let m = marker_batch(PID, EPOCH, commit, 27, offset, NOW);
        assert_eq!(s.check_append(&m, AppendOrigin::Coordinator), OK);
        let c = s.apply_batch(&m, AppendOrigin::Coordinator);
        if let Some(c) = &c {
            s.complete_txn(c).unwrap();
        }
        c
    };
    data(&mut s, 16, 20);
    s.on_high_watermark_updated(Offset(21));
    assert_eq!(s.first_unstable_offset(), Some(Offset(16)));
    let first = marker(&mut s, true, 21);
    assert_eq!(
        first,
        Some(CompletedTxn {
            producer_id: ProducerId(PID),
            first_offset: Offset(16),
            last_offset: Offset(21),
            is_aborted: false,
        })
    );
    assert_eq!(marker(&mut s, true, 22), None);
    assert_eq!(marker(&mut s, false, 23), None);
    data(&mut s, 24, 27);
    let second = marker(&mut s, false, 28).expect("non-empty transaction");
    assert_eq!((second.first_offset, second.is_aborted), (Offset(24), true));
    assert_eq!(marker(&mut s, false, 29), None);
    data(&mut s, 30, 31);
    assert_eq!(
        s.ongoing_txns().keys().copied().collect::<Vec<_>>(),
        vec![Offset(30)]
    );
    s.on_high_watermark_updated(Offset(32));
    assert_eq!(s.first_unstable_offset(), Some(Offset(30)));
}

/// No Kafka test of its own (`ProducerAppendInfo.appendEndTxnMarker` + `ProducerStateEntry.update`):
/// an empty marker with a higher epoch still bumps the epoch, clears the batches and sets the
/// coordinator epoch and timestamp, but touches no transaction.
#[test]
fn empty_marker_bumps_epoch_and_clears_batches() {
    let mut s = psm();
    assert_eq!(
        append(
            &mut s,
            &data_batch(PID, EPOCH, 0, 0, 3, NOW, false),
            AppendOrigin::Client
        ),
        OK
    );
    let m = marker_batch(PID, EPOCH + 1, true, 4, 3, NOW + 50);
    assert_eq!(s.check_append(&m, AppendOrigin::Coordinator), OK);
    assert_eq!(s.apply_batch(&m, AppendOrigin::Coordinator), None);
    let e = entry(&s, PID);
    assert_eq!(e.producer_epoch, ProducerEpoch(EPOCH + 1));
    assert_eq!(e.coordinator_epoch, 4);
    assert_eq!(e.last_timestamp, NOW + 50);
    assert!(e.is_empty());
    assert!(s.ongoing_txns().is_empty() && s.unreplicated_txns().is_empty());
    assert_eq!(s.map_end_offset(), Offset(4));
}

/// `ProducerStateEntry.addBatch`: the newest 5 batches are retained, oldest first.
#[test]
fn batch_metadata_keeps_last_five() {
    let mut s = psm();
    for k in 0..7 {
        assert_eq!(client(&mut s, PID, EPOCH, k, i64::from(k), false), OK);
    }
    let seqs: Vec<i32> = entry(&s, PID)
        .batch_metadata()
        .iter()
        .map(|b| b.last_seq.0)
        .collect();
    assert_eq!(seqs, vec![2, 3, 4, 5, 6]);
    assert_eq!(entry(&s, PID).first_seq(), Sequence(2));
}

/// Kafka sets `lastTimestamp` from `batch.maxTimestamp()`.
#[test]
fn entry_timestamp_is_the_batch_max_timestamp() {
    let mut s = psm();
    let records = [5, 9, 7].map(|ts| SimpleRecord::value(ts, "v"));
    let b = BatchBuilder::idempotent(ProducerId(PID), ProducerEpoch(EPOCH), Sequence(0))
        .build(&records);
    assert_eq!(append(&mut s, &b, AppendOrigin::Client), OK);
    assert_eq!(entry(&s, PID).last_timestamp, 9);
    assert_eq!(entry(&s, PID).batch_metadata()[0].timestamp, 9);
}

/// A replicated lower epoch is only warned about in Kafka, and then overwrites the entry's
/// epoch (clearing its batches).
#[test]
fn replication_accepts_lower_epoch_and_overwrites() {
    let mut s = psm();
    assert_eq!(client(&mut s, PID, 5, 0, 0, false), OK);
    assert_eq!(client(&mut s, PID, 5, 1, 1, false), OK);
    assert!(is_invalid_epoch(client(&mut s, PID, 3, 7, 2, false)));
    assert_eq!(replication(&mut s, 3, 7, 2, NOW), OK);
    let e = entry(&s, PID);
    assert_eq!(e.producer_epoch, ProducerEpoch(3));
    assert_eq!(e.batch_metadata().len(), 1);
    assert_eq!(e.last_seq(), Sequence(7));
}

/// `UnifiedLog.analyzeAndValidateProducerState` skips batches without a producer id; the map
/// end offset still advances.
#[test]
fn batches_without_producer_id_only_advance_map_end_offset() {
    let mut s = psm();
    let plain =
        BatchBuilder::new().build(&[SimpleRecord::value(NOW, "a"), SimpleRecord::value(NOW, "b")]);
    assert_eq!(append(&mut s, &plain, AppendOrigin::Client), OK);
    let leader_change = BatchBuilder::new()
        .base_offset(Offset(2))
        .build_control(ControlRecord::Other(2), NOW);
    assert_eq!(
        append(&mut s, &leader_change, AppendOrigin::Coordinator),
        OK
    );
    assert!(s.active_producers().is_empty());
    assert_eq!(s.map_end_offset(), Offset(3));
}

/// On-log-start rule (`onLogStartOffsetIncremented`): completed transactions whose marker is
/// below the new start are dropped, ongoing ones are kept, `map_end_offset` moves up.
#[test]
fn on_log_start_offset_incremented_drops_old_unreplicated_txns() {
    let mut s = psm();
    assert_eq!(client(&mut s, 1, EPOCH, 0, 0, true), OK);
    assert_eq!(end_txn(&mut s, 1, EPOCH, true, 5, 0), OK);
    assert_eq!(client(&mut s, 2, EPOCH, 0, 6, true), OK);
    assert_eq!(end_txn(&mut s, 2, EPOCH, false, 8, 0), OK);
    assert_eq!(client(&mut s, 3, EPOCH, 0, 9, true), OK);
    assert_eq!(s.map_end_offset(), Offset(10));
    s.on_log_start_offset_incremented(Offset(6));
    assert_eq!(
        s.unreplicated_txns().keys().copied().collect::<Vec<_>>(),
        vec![Offset(6)]
    );
    assert_eq!(s.map_end_offset(), Offset(10));
    s.on_log_start_offset_incremented(Offset(20));
    assert!(s.unreplicated_txns().is_empty());
    assert_eq!(
        s.first_undecided_offset(),
        Some(Offset(9)),
        "ongoing txns are not touched"
    );
    assert_eq!(s.map_end_offset(), Offset(20));
}

/// `testRecoverFromSnapshotUnfinishedTransaction` (in memory): a snapshot keeps only the last
/// batch and the open transaction; the producer continues, but the duplicate window is now
/// one batch.
#[test]
fn test_recover_from_snapshot_unfinished_transaction() {
    let mut s = psm();
    assert_eq!(client(&mut s, PID, EPOCH, 0, 0, true), OK);
    assert_eq!(client(&mut s, PID, EPOCH, 1, 1, true), OK);
    let mut recovered = psm();
    recovered.load_producer_entry(entry(&s, PID).snapshot_entry());
    recovered.update_map_end_offset(Offset(2));
    let e = entry(&recovered, PID);
    assert_eq!(e.first_data_offset(), Some(Offset(1)));
    assert_eq!((e.first_seq(), e.last_seq()), (Sequence(1), Sequence(1)));
    assert_eq!(e.current_txn_first_offset, Some(Offset(0)));
    assert_eq!(recovered.first_undecided_offset(), Some(Offset(0)));
    assert!(is_out_of_order(client(
        &mut recovered,
        PID,
        EPOCH,
        0,
        2,
        true
    )));
    assert_eq!(client(&mut recovered, PID, EPOCH, 2, 2, true), OK);
}

/// `testRecoverFromSnapshotFinishedTransaction` / `testRecoverFromSnapshotEmptyTransaction`.
#[test]
fn test_recover_from_snapshot_finished_and_empty_transaction() {
    let mut s = psm();
    assert_eq!(client(&mut s, PID, EPOCH, 0, 0, true), OK);
    assert_eq!(client(&mut s, PID, EPOCH, 1, 1, true), OK);
    assert_eq!(end_txn(&mut s, PID, EPOCH, false, 2, 0), OK);
    let snap = entry(&s, PID).snapshot_entry();
    assert_eq!(snap.last_data_offset(), Some(Offset(1)));
    assert_eq!(snap.current_txn_first_offset, None);
    let mut empty = psm();
    let m = marker_batch(PID, EPOCH, false, 0, 0, 777);
    assert_eq!(append(&mut empty, &m, AppendOrigin::Coordinator), OK);
    let snap = entry(&empty, PID).snapshot_entry();
    assert_eq!(snap.last_timestamp, 777);
    assert_eq!(snap.current_txn_first_offset, None);
    assert!(snap.is_empty());
}

/// Each error maps to Kafka's wire code.
#[test]
fn errors_map_to_kafka_error_codes() {
    let pid = ProducerId(PID);
    let (o, e) = (Offset(0), ProducerEpoch(0));
    let cases = [
        (
            ProducerStateError::InvalidProducerEpoch {
                producer_id: pid,
                offset: o,
                batch_epoch: e,
                current_epoch: e,
            },
            ErrorCode::InvalidProducerEpoch,
        ),
        (
            ProducerStateError::OutOfOrderSequence {
                producer_id: pid,
                offset: o,
                batch_epoch: e,
                first_seq: Sequence(0),
                current_epoch: e,
                last_seq: Sequence(0),
            },
            ErrorCode::OutOfOrderSequenceNumber,
        ),
        (
            ProducerStateError::InvalidTxnState {
                producer_id: pid,
                offset: o,
                txn_first_offset: o,
            },
            ErrorCode::InvalidTxnState,
        ),
        (
            ProducerStateError::TransactionCoordinatorFenced {
                producer_id: pid,
                offset: o,
                marker_coordinator_epoch: 0,
                current_coordinator_epoch: 1,
            },
            ErrorCode::TransactionCoordinatorFenced,
        ),
    ];
    for (err, code) in cases {
        assert_eq!(ErrorCode::from(err), code);
    }
}

// ---- KIP-1279 MIRROR_PID_RESET ----

/// The reset expires every entry: a producer that was fenced at epoch 0 (or would need the
/// next sequence) is now a new producer, accepted at sequence 0 or any sequence.
#[test]
fn mirror_pid_reset_expires_every_producer() {
    let mut s = psm();
    assert_eq!(
        append(
            &mut s,
            &data_batch(1, 3, 0, 0, 5, NOW, false),
            AppendOrigin::Replication
        ),
        OK
    );
    assert_eq!(
        append(
            &mut s,
            &data_batch(2, 7, 10, 5, 1, NOW, false),
            AppendOrigin::Replication
        ),
        OK
    );
    assert_eq!(
        append(
            &mut s,
            &marker_batch(3, 1, false, 9, 6, NOW),
            AppendOrigin::Replication
        ),
        OK
    );
    assert_eq!(s.active_producers().len(), 3);
    assert!(is_invalid_epoch(client(&mut s, 1, 0, 0, 7, false)));
    let reset = pid_reset_batch(7, NOW);
    assert_eq!(reset.producer_id(), ProducerId::NONE);
    assert_eq!(s.check_append(&reset, AppendOrigin::Coordinator), OK);
    assert_eq!(s.apply_batch(&reset, AppendOrigin::Coordinator), None);
    assert!(s.active_producers().is_empty());
    assert!(s.is_empty());
    assert_eq!(s.map_end_offset(), Offset(8));
    assert_eq!(client(&mut s, 1, 0, 0, 8, false), OK);
    assert_eq!(entry(&s, 1).producer_epoch, ProducerEpoch(0));
    assert_eq!(entry(&s, 1).last_seq(), Sequence(0));
    assert_eq!(
        client(&mut s, 2, 0, 42, 9, false),
        OK,
        "unknown producer: any sequence"
    );
    // The old coordinator epoch is forgotten too.
    assert_eq!(end_txn(&mut s, 3, 0, true, 10, 0), OK);
}

/// Leader (`Coordinator`), follower and recovery (`Replication`) apply the reset identically.
#[test]
fn mirror_pid_reset_applied_identically_on_replication() {
    let batches = [
        data_batch(1, 0, 0, 0, 2, NOW, false),
        data_batch(2, 0, 0, 2, 1, NOW, true),
        marker_batch(2, 0, true, 0, 3, NOW),
        pid_reset_batch(4, NOW),
        data_batch(1, 0, 0, 5, 1, NOW, false),
    ];
    let mut leader = psm();
    let mut follower = psm();
    for (i, b) in batches.iter().enumerate() {
        let origin = if i == 3 || i == 2 {
            AppendOrigin::Coordinator
        } else {
            AppendOrigin::Client
        };
        assert_eq!(append(&mut leader, b, origin), OK, "leader batch {i}");
        assert_eq!(
            append(&mut follower, b, AppendOrigin::Replication),
            OK,
            "follower batch {i}"
        );
    }
    assert_eq!(leader, follower);
    assert_eq!(leader.active_producers().len(), 1);
}

/// The hanging-transaction hazard: a transaction open across the reset stays ongoing forever.
/// Its producer entry is gone, so its ABORT is an "empty" marker; the first unstable offset
/// (and so the LSO) never moves past it, and expiry cannot help.
#[test]
fn txn_left_open_across_pid_reset_hangs() {
    let mut s = psm();
    assert_eq!(client(&mut s, PID, EPOCH, 0, 0, true), OK);
    assert_eq!(
        append(&mut s, &pid_reset_batch(1, NOW), AppendOrigin::Coordinator),
        OK
    );
    assert!(s.active_producers().is_empty());
    assert_eq!(s.first_undecided_offset(), Some(Offset(0)));
    let abort = marker_batch(PID, EPOCH, false, 0, 2, NOW);
    assert_eq!(s.check_append(&abort, AppendOrigin::Coordinator), OK);
    assert_eq!(
        s.apply_batch(&abort, AppendOrigin::Coordinator),
        None,
        "an empty marker"
    );
    s.on_high_watermark_updated(Offset(100));
    s.remove_expired_producers(NOW + 10 * EXPIRATION);
    assert_eq!(s.first_unstable_offset(), Some(Offset(0)));
    assert_eq!(s.ongoing_txns().len(), 1);
    assert!(s.is_empty(), "Kafka's isEmpty ignores ongoing txns");
}

/// A transaction completed before the reset but not yet below the HW is released normally.
#[test]
fn completed_txn_before_pid_reset_is_released_by_the_hw() {
    let mut s = psm();
    assert_eq!(client(&mut s, PID, EPOCH, 0, 0, true), OK);
    assert_eq!(end_txn(&mut s, PID, EPOCH, true, 1, 0), OK);
    assert_eq!(
        append(&mut s, &pid_reset_batch(2, NOW), AppendOrigin::Coordinator),
        OK
    );
    assert_eq!(s.first_unstable_offset(), Some(Offset(0)));
    s.on_high_watermark_updated(Offset(3));
    assert_eq!(s.first_unstable_offset(), None);
}
