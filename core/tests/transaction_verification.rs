//! KIP-890 part 1 transaction verification and producer snapshots on `PartitionLog`,
//! transcribed from Kafka's `UnifiedLogTest` (names in snake case; TV2-only tests, which need
//! epoch bumps on markers, have no counterpart). Producer 23, epoch 1, as in Kafka.

use mirror_core::log::partition_log::{AppendError, LogConfig, PartitionLog};
use mirror_core::log::producer_state::{AppendOrigin, ProducerStateError, VerificationGuard};
use mirror_core::record::{BatchBuilder, ControlRecord, RecordBatch, SimpleRecord};
use mirror_core::types::{LeaderEpoch, Offset, ProducerEpoch, ProducerId, Sequence};

const PID: ProducerId = ProducerId(23);
const EPOCH: ProducerEpoch = ProducerEpoch(1);
const NOW: i64 = 1_000;

fn log(verification: bool) -> PartitionLog {
    PartitionLog::new(LogConfig {
        transaction_verification_enabled: verification,
        ..LogConfig::default()
    })
}

fn two(builder: BatchBuilder) -> RecordBatch {
    builder.build(&[SimpleRecord::value(NOW, "1"), SimpleRecord::value(NOW, "2")])
}

fn idempotent(seq: i32) -> RecordBatch {
    two(BatchBuilder::idempotent(PID, EPOCH, Sequence(seq)))
}

fn transactional(seq: i32) -> RecordBatch {
    two(BatchBuilder::transactional(PID, EPOCH, Sequence(seq)))
}

fn commit() -> RecordBatch {
    BatchBuilder::transactional(PID, EPOCH, Sequence::NONE)
        .build_control(ControlRecord::commit(0), NOW)
}

fn append(
    log: &mut PartitionLog,
    b: &RecordBatch,
    origin: AppendOrigin,
    guard: VerificationGuard,
) -> Result<(), AppendError> {
    log.append_as_leader_verified(b, LeaderEpoch(0), origin, guard)
        .map(|_| ())
}

#[test]
fn test_transaction_is_ongoing_and_verification_guard_tv1() {
    for origin in [AppendOrigin::Client, AppendOrigin::Coordinator] {
        let mut log = log(true);
        let mut sequence = if origin == AppendOrigin::Client { 3 } else { 0 };
        assert!(!log.has_ongoing_transaction(PID));
        assert_eq!(log.verification_guard(PID), VerificationGuard::SENTINEL);
        assert!(
            !log.verification_guard(PID)
                .verify(VerificationGuard::SENTINEL)
        );
        let idempotent_records = idempotent(sequence);
        if origin == AppendOrigin::Client {
            sequence += 2;
        }
        let transactional_records = transactional(sequence);
        let guard = log.maybe_start_transaction_verification(PID, Sequence(sequence), EPOCH, NOW);
        assert_ne!(guard, VerificationGuard::SENTINEL);

        append(
            &mut log,
            &idempotent_records,
            origin,
            VerificationGuard::SENTINEL,
        )
        .unwrap();
        assert!(!log.has_ongoing_transaction(PID));
        // Idempotent records keep the guard.
        assert_eq!(log.verification_guard(PID), guard);

        assert!(log.verification_guard(PID).verify(guard));
        append(&mut log, &transactional_records, origin, guard).unwrap();
        assert!(log.has_ongoing_transaction(PID));
        // The transaction has a first offset: the guard is cleared.
        assert_eq!(log.verification_guard(PID), VerificationGuard::SENTINEL);
        // Already verified: nothing to start.
        assert_eq!(
            log.maybe_start_transaction_verification(PID, Sequence(sequence), EPOCH, NOW),
            VerificationGuard::SENTINEL
        );

        append(
            &mut log,
            &commit(),
            AppendOrigin::Coordinator,
            VerificationGuard::SENTINEL,
        )
        .unwrap();
        assert!(!log.has_ongoing_transaction(PID));
        assert_eq!(log.verification_guard(PID), VerificationGuard::SENTINEL);

        if origin == AppendOrigin::Client {
            sequence += 1;
        }
        // The next transaction needs a new verification, with a new guard.
        let next = log.maybe_start_transaction_verification(PID, Sequence(sequence), EPOCH, NOW);
        assert_ne!(next, VerificationGuard::SENTINEL);
        assert_ne!(next, guard);
        assert!(!guard.verify(next));
    }
}

/// With `supportsEpochBump = false` (TV1): a marker in the same epoch clears the guard.
#[test]
fn test_empty_transaction_still_clears_verification_guard() {
    let mut log = log(true);
    let guard = log.maybe_start_transaction_verification(PID, Sequence(0), EPOCH, NOW);
    assert_ne!(guard, VerificationGuard::SENTINEL);
    append(
        &mut log,
        &commit(),
        AppendOrigin::Coordinator,
        VerificationGuard::SENTINEL,
    )
    .unwrap();
    assert!(!log.has_ongoing_transaction(PID));
    assert_eq!(log.verification_guard(PID), VerificationGuard::SENTINEL);
}

#[test]
fn test_disabled_verification_clears_verification_guard() {
    let mut log = log(true);
    let guard = log.maybe_start_transaction_verification(PID, Sequence(0), EPOCH, NOW);
    assert_ne!(guard, VerificationGuard::SENTINEL);
    // Kafka turns verification off dynamically here; the model's switch is the log config.
    let mut log_off = log.clone();
    log_off.set_transaction_verification_enabled(false);
    append(
        &mut log_off,
        &transactional(0),
        AppendOrigin::Client,
        VerificationGuard::SENTINEL,
    )
    .unwrap();
    assert!(log_off.has_ongoing_transaction(PID));
    assert_eq!(log_off.verification_guard(PID), VerificationGuard::SENTINEL);
    // Still on, the same write without the guard is refused.
    assert!(
        append(
            &mut log,
            &transactional(0),
            AppendOrigin::Client,
            VerificationGuard::SENTINEL
        )
        .is_err()
    );
}

#[test]
fn test_enabling_verification_when_request_is_at_log_layer() {
    let mut log = log(true);
    let records = transactional(0);
    let err = append(
        &mut log,
        &records,
        AppendOrigin::Client,
        VerificationGuard::SENTINEL,
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            AppendError::ProducerState(ProducerStateError::TransactionNotVerified { .. })
        ),
        "{err:?}"
    );
    assert_eq!(
        mirror_core::protocol::ErrorCode::from(err),
        mirror_core::protocol::ErrorCode::InvalidTxnState
    );
    assert!(!log.has_ongoing_transaction(PID));
    assert_eq!(log.verification_guard(PID), VerificationGuard::SENTINEL);
    assert_eq!(log.log_end_offset(), Offset(0), "nothing appended");

    let guard = log.maybe_start_transaction_verification(PID, Sequence(0), EPOCH, NOW);
    assert_ne!(guard, VerificationGuard::SENTINEL);
    append(&mut log, &records, AppendOrigin::Client, guard).unwrap();
    assert!(log.has_ongoing_transaction(PID));
    assert_eq!(log.verification_guard(PID), VerificationGuard::SENTINEL);
}

/// The TV1 half of Kafka's parameterized test: a non-zero first sequence in a non-zero epoch
/// is accepted with a verification guard.
#[test]
fn test_non_zero_sequence_on_first_append_non_zero_epoch() {
    let mut log = log(false);
    assert!(!log.has_ongoing_transaction(PID));
    let guard = log.maybe_start_transaction_verification(PID, Sequence(3), EPOCH, NOW);
    append(&mut log, &transactional(3), AppendOrigin::Client, guard).unwrap();
    assert!(log.has_ongoing_transaction(PID));
}

/// The ABA case KIP-890 guards against: a guard handed out before an abort marker cleared
/// the verification does not verify the write that arrives after it.
#[test]
fn a_guard_from_before_a_marker_does_not_verify_a_later_write() {
    let mut log = log(true);
    let stale = log.maybe_start_transaction_verification(PID, Sequence(0), EPOCH, NOW);
    let abort = BatchBuilder::transactional(PID, EPOCH, Sequence::NONE)
        .build_control(ControlRecord::abort(0), NOW);
    append(
        &mut log,
        &abort,
        AppendOrigin::Coordinator,
        VerificationGuard::SENTINEL,
    )
    .unwrap();
    let leo = log.log_end_offset();
    assert!(append(&mut log, &transactional(0), AppendOrigin::Client, stale).is_err());
    assert_eq!(log.log_end_offset(), leo);
}

/// Verification survives a truncation (Kafka's `truncateAndReload` keeps verification
/// states), and replicated appends need no guard.
#[test]
fn verification_survives_truncation_and_followers_need_no_guard() {
    let mut log = log(true);
    append(
        &mut log,
        &idempotent(0),
        AppendOrigin::Client,
        VerificationGuard::SENTINEL,
    )
    .unwrap();
    let guard = log.maybe_start_transaction_verification(PID, Sequence(2), EPOCH, NOW);
    log.truncate_to(Offset(1)).unwrap();
    assert_eq!(log.verification_guard(PID), guard);
    let mut follower = self::log(true);
    let replicated = transactional(0).with_offset_and_epoch(Offset(0), LeaderEpoch(0));
    follower.append_as_follower(&replicated, None).unwrap();
    assert!(follower.has_ongoing_transaction(PID));
}

// ------------------------------------------------------------------ producer snapshots

/// Snapshots taken on the log follow Kafka's rules: one per new end offset, deleted with a
/// truncation below them and with the batch ("segment") they start at.
#[test]
fn producer_snapshots_follow_truncation_and_deletion() {
    let mut log = log(false);
    for seq in [0, 2, 4] {
        append(
            &mut log,
            &idempotent(seq),
            AppendOrigin::Client,
            VerificationGuard::SENTINEL,
        )
        .unwrap();
        log.take_producer_snapshot();
    }
    assert_eq!(log.take_producer_snapshot(), None, "no new offset");
    assert_eq!(log.oldest_producer_snapshot_offset(), Some(Offset(2)));
    assert_eq!(log.latest_producer_snapshot_offset(), Some(Offset(6)));
    assert_eq!(log.latest_producer_state_end_offset(), Offset(6));
    log.truncate_to(Offset(4)).unwrap();
    assert_eq!(log.latest_producer_snapshot_offset(), Some(Offset(4)));
    log.maybe_increment_high_watermark(Offset(4)).unwrap();
    log.maybe_increment_log_start_offset(Offset(2)).unwrap();
    // The batch at 0 is gone, and the snapshot at its base with it (none was there); the
    // snapshots at 2 and 4 stay.
    assert_eq!(log.oldest_producer_snapshot_offset(), Some(Offset(2)));
    log.maybe_increment_log_start_offset(Offset(4)).unwrap();
    assert_eq!(log.oldest_producer_snapshot_offset(), Some(Offset(4)));
}
