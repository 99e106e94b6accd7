//! Producer-state snapshots and KIP-890 part 1 verification entries, transcribed from Kafka's
//! `ProducerStateManagerTest` (names in snake case). Kafka's "new manager on the same log
//! directory" is [`reopen`]: a fresh manager handed the snapshot files.

use std::collections::BTreeMap;

use bytes::Bytes;

use super::producer_state_test::{
    EPOCH, NOW, PID, append, client, data_batch, end_txn, entry, is_out_of_order, psm,
};
use super::*;

/// A new manager over the same snapshot files (Kafka: `new ProducerStateManager(partition,
/// logDir, ...)`, whose constructor loads the snapshots it finds).
fn reopen(from: &ProducerStateManager) -> ProducerStateManager {
    let mut m = psm();
    m.load_snapshots(from.snapshots().clone());
    m
}

fn offsets(m: &ProducerStateManager) -> Vec<i64> {
    m.snapshots().keys().map(|o| o.0).collect()
}

/// Kafka's `appendClientEntry` with a timestamp.
fn client_at(m: &mut ProducerStateManager, seq: i32, offset: i64, ts: i64) {
    append(
        m,
        &data_batch(PID, EPOCH, seq, offset, 1, ts, false),
        AppendOrigin::Client,
    )
    .expect("append");
}

#[test]
fn test_truncate_and_reload_removes_out_of_range_snapshots() {
    let mut m = psm();
    for seq in 0..5 {
        client(&mut m, PID, EPOCH, seq, i64::from(seq), false).unwrap();
        m.take_snapshot();
    }
    m.truncate_and_reload(Offset(1), Offset(3), NOW);
    assert_eq!(m.oldest_snapshot_offset(), Some(Offset(2)));
    assert_eq!(m.latest_snapshot_offset(), Some(Offset(3)));
}

#[test]
fn test_take_snapshot() {
    let mut m = psm();
    client(&mut m, PID, EPOCH, 0, 0, false).unwrap();
    client(&mut m, PID, EPOCH, 1, 1, false).unwrap();
    assert_eq!(m.take_snapshot(), Some(Offset(2)));
    assert_eq!(m.snapshots().len(), 1, "a single snapshot");
    assert!(!m.snapshot_file_for_offset(Offset(2)).unwrap().is_empty());
}

#[test]
fn test_fetch_snapshot_empty_snap_shot() {
    assert_eq!(psm().snapshot_file_for_offset(Offset(1)), None);
}

#[test]
fn test_recover_from_snapshot_unfinished_transaction() {
    let mut m = psm();
    client(&mut m, PID, EPOCH, 0, 0, true).unwrap();
    client(&mut m, PID, EPOCH, 1, 1, true).unwrap();
    m.take_snapshot();
    let mut recovered = reopen(&m);
    recovered.truncate_and_reload(Offset(0), Offset(3), NOW);
    // The snapshot only persists the last appended batch metadata.
    let e = entry(&recovered, PID);
    assert_eq!(e.first_data_offset(), Some(Offset(1)));
    assert_eq!(e.first_seq(), Sequence(1));
    assert_eq!(e.last_data_offset(), Some(Offset(1)));
    assert_eq!(e.last_seq(), Sequence(1));
    assert_eq!(e.current_txn_first_offset, Some(Offset(0)));
    // An entry added after recovery.
    client(&mut recovered, PID, EPOCH, 2, 2, true).unwrap();
}

#[test]
fn test_recover_from_snapshot_finished_transaction() {
    let mut m = psm();
    client(&mut m, PID, EPOCH, 0, 0, true).unwrap();
    client(&mut m, PID, EPOCH, 1, 1, true).unwrap();
    end_txn(&mut m, PID, EPOCH, false, 2, 0).unwrap();
    m.take_snapshot();
    let mut recovered = reopen(&m);
    recovered.truncate_and_reload(Offset(0), Offset(3), NOW);
    let e = entry(&recovered, PID);
    assert_eq!(e.first_data_offset(), Some(Offset(1)));
    assert_eq!(e.first_seq(), Sequence(1));
    assert_eq!(e.last_data_offset(), Some(Offset(1)));
    assert_eq!(e.last_seq(), Sequence(1));
    assert_eq!(e.current_txn_first_offset, None);
}

#[test]
fn test_recover_from_snapshot_empty_transaction() {
    let mut m = psm();
    end_txn(&mut m, PID, EPOCH, false, 0, 0).unwrap();
    m.take_snapshot();
    let mut recovered = reopen(&m);
    recovered.truncate_and_reload(Offset(0), Offset(1), NOW);
    let e = entry(&recovered, PID);
    assert_eq!(e.last_timestamp, NOW);
    assert_eq!(e.current_txn_first_offset, None);
}

#[test]
fn test_remove_expired_pids_on_reload() {
    let mut m = psm();
    client_at(&mut m, 0, 0, 0);
    client_at(&mut m, 1, 1, 1);
    m.take_snapshot();
    let mut recovered = reopen(&m);
    recovered.truncate_and_reload(Offset(0), Offset(1), 70_000);
    client_at(&mut recovered, 2, 2, 70_001);
    assert_eq!(recovered.active_producers().len(), 1);
    assert_eq!(
        recovered
            .active_producers()
            .values()
            .next()
            .unwrap()
            .last_seq(),
        Sequence(2)
    );
    assert_eq!(recovered.map_end_offset(), Offset(3));
}

/// `loadFromSnapshot` drops the producers expired at reload time.
#[test]
fn load_from_snapshot_drops_producers_expired_at_reload() {
    let mut m = ProducerStateManager::new(60_000);
    client_at(&mut m, 0, 0, 0);
    m.take_snapshot();
    let mut recovered = ProducerStateManager::new(60_000);
    recovered.load_snapshots(m.snapshots().clone());
    recovered.truncate_and_reload(Offset(0), Offset(5), 70_000);
    assert!(recovered.active_producers().is_empty());
    assert_eq!(recovered.map_end_offset(), Offset(1));
}

#[test]
fn test_delete_snapshots_before() {
    let mut m = psm();
    client(&mut m, PID, EPOCH, 0, 0, false).unwrap();
    client(&mut m, PID, EPOCH, 1, 1, false).unwrap();
    m.take_snapshot();
    assert_eq!(offsets(&m), vec![2]);
    client(&mut m, PID, EPOCH, 2, 2, false).unwrap();
    m.take_snapshot();
    assert_eq!(offsets(&m), vec![2, 3]);
    m.delete_snapshots_before(Offset(3));
    assert_eq!(offsets(&m), vec![3]);
    m.delete_snapshots_before(Offset(4));
    assert_eq!(offsets(&m), Vec::<i64>::new());
}

#[test]
fn test_truncate_fully_and_start_at() {
    let mut m = psm();
    client(&mut m, PID, EPOCH, 0, 0, false).unwrap();
    client(&mut m, PID, EPOCH, 1, 1, false).unwrap();
    m.take_snapshot();
    client(&mut m, PID, EPOCH, 2, 2, false).unwrap();
    m.take_snapshot();
    assert_eq!(offsets(&m), vec![2, 3]);
    m.truncate_fully_and_start_at(Offset(0));
    assert_eq!(offsets(&m), Vec::<i64>::new());
    client(&mut m, PID, EPOCH, 0, 0, false).unwrap();
    m.take_snapshot();
    assert_eq!(offsets(&m), vec![1]);
}

#[test]
fn test_reload_snapshots() {
    let mut m = psm();
    client(&mut m, PID, EPOCH, 1, 1, false).unwrap();
    client(&mut m, PID, EPOCH, 2, 2, false).unwrap();
    m.take_snapshot();
    let saved = m.snapshots().clone();
    client(&mut m, PID, EPOCH, 3, 3, false).unwrap();
    client(&mut m, PID, EPOCH, 4, 4, false).unwrap();
    m.take_snapshot();
    assert_eq!(offsets(&m), vec![3, 5]);
    // Truncate to the range (3, 5]: the snapshot at 3 goes.
    m.truncate_and_reload(Offset(3), Offset(5), NOW);
    assert_eq!(offsets(&m), vec![5]);
    // The files up to 3 come back; reloading finds them.
    m.truncate_fully_and_reload_snapshots(saved);
    assert_eq!(m.latest_snapshot_offset(), Some(Offset(3)));
    assert_eq!(offsets(&m), vec![3]);
}

#[test]
fn test_first_unstable_offset_after_truncation() {
    let mut m = psm();
    client(&mut m, PID, EPOCH, 0, 99, true).unwrap();
    assert_eq!(m.first_unstable_offset(), Some(Offset(99)));
    m.take_snapshot();
    end_txn(&mut m, PID, EPOCH, true, 105, 0).unwrap();
    m.on_high_watermark_updated(Offset(106));
    assert_eq!(m.first_unstable_offset(), None);
    m.take_snapshot();
    client(&mut m, PID, EPOCH, 1, 106, false).unwrap();
    m.truncate_and_reload(Offset(0), Offset(106), NOW);
    assert_eq!(m.first_unstable_offset(), None);
    m.truncate_and_reload(Offset(0), Offset(100), NOW);
    assert_eq!(m.first_unstable_offset(), Some(Offset(99)));
}

#[test]
fn test_load_from_snapshot_retains_non_expired_producers() {
    let (pid1, pid2) = (1, 2);
    let mut m = psm();
    client(&mut m, pid1, EPOCH, 0, 0, false).unwrap();
    client(&mut m, pid2, EPOCH, 0, 1, false).unwrap();
    m.take_snapshot();
    assert_eq!(m.active_producers().len(), 2);
    m.truncate_and_reload(Offset(1), Offset(2), NOW);
    assert_eq!(m.active_producers().len(), 2);
    let e1 = entry(&m, pid1);
    assert_eq!(
        (e1.last_seq(), e1.last_data_offset()),
        (Sequence(0), Some(Offset(0)))
    );
    let e2 = entry(&m, pid2);
    assert_eq!(
        (e2.last_seq(), e2.last_data_offset()),
        (Sequence(0), Some(Offset(1)))
    );
}

#[test]
fn test_skip_snapshot_if_offset_unchanged() {
    let mut m = psm();
    client(&mut m, PID, EPOCH, 0, 0, false).unwrap();
    assert_eq!(m.take_snapshot(), Some(Offset(1)));
    assert_eq!(offsets(&m), vec![1]);
    // Nothing changed: no new snapshot.
    assert_eq!(m.take_snapshot(), None);
    assert_eq!(offsets(&m), vec![1]);
}

/// As in Kafka, the stale marker goes to the original manager (Kafka's reload at log end 2
/// deletes the snapshot at 101, so the recovered manager has nothing to fence with).
#[test]
fn test_coordinator_fenced_after_reload() {
    let mut m = psm();
    client(&mut m, PID, EPOCH, 0, 99, true).unwrap();
    end_txn(&mut m, PID, EPOCH, true, 100, 1).unwrap();
    m.take_snapshot();
    let mut recovered = reopen(&m);
    recovered.truncate_and_reload(Offset(0), Offset(2), 70_000);
    assert_eq!(recovered.latest_snapshot_offset(), None);
    assert!(matches!(
        end_txn(&mut m, PID, EPOCH, true, 101, 0),
        Err(ProducerStateError::TransactionCoordinatorFenced { .. })
    ));
}

/// The coordinator epoch survives a reload from a snapshot that covers the marker.
#[test]
fn a_reload_from_a_snapshot_keeps_the_coordinator_epoch_that_fences() {
    let mut m = psm();
    client(&mut m, PID, EPOCH, 0, 99, true).unwrap();
    end_txn(&mut m, PID, EPOCH, true, 100, 1).unwrap();
    m.take_snapshot();
    let mut recovered = reopen(&m);
    recovered.truncate_and_reload(Offset(0), Offset(101), 70_000);
    assert_eq!(entry(&recovered, PID).coordinator_epoch, 1);
    assert!(matches!(
        end_txn(&mut recovered, PID, EPOCH, true, 101, 0),
        Err(ProducerStateError::TransactionCoordinatorFenced { .. })
    ));
}

/// Kafka `testLoadFromCorruptSnapshot`: two snapshots, the newest made unreadable; a reload
/// deletes it and loads the one before.
fn load_from_corrupt_snapshot(corrupt: impl Fn(&Bytes) -> Bytes) {
    let mut m = psm();
    client(&mut m, PID, EPOCH, 0, 0, false).unwrap();
    m.take_snapshot();
    client(&mut m, PID, EPOCH, 1, 1, false).unwrap();
    m.take_snapshot();
    assert_eq!(m.latest_snapshot_offset(), Some(Offset(2)));
    let mut files: BTreeMap<Offset, Bytes> = m.snapshots().clone();
    let bad = corrupt(&files[&Offset(2)]);
    files.insert(Offset(2), bad);
    let mut reloaded = psm();
    reloaded.load_snapshots(files);
    reloaded.truncate_and_reload(Offset(0), Offset(20), NOW);
    assert_eq!(
        reloaded.snapshot_file_for_offset(Offset(2)),
        None,
        "deleted"
    );
    assert_eq!(entry(&reloaded, PID).last_data_offset(), Some(Offset(0)));
}

#[test]
fn test_load_from_empty_snapshot_file() {
    load_from_corrupt_snapshot(|_| Bytes::new());
}

#[test]
fn test_load_from_truncated_snapshot_file() {
    load_from_corrupt_snapshot(|b| {
        assert!(b.len() > 2);
        b.slice(..b.len() / 2)
    });
}

#[test]
fn test_load_from_corrupt_snapshot_file() {
    load_from_corrupt_snapshot(|b| {
        let mut v = b.to_vec();
        v[..37.min(b.len())].fill(0);
        Bytes::from(v)
    });
}

fn files(at: &[i64]) -> BTreeMap<Offset, Bytes> {
    at.iter()
        .map(|&o| (Offset(o), Bytes::from_static(b"")))
        .collect()
}

#[test]
fn test_remove_stray_snapshots_keep_clean_shutdown_snapshot() {
    let mut m = psm();
    m.load_snapshots(files(&[5, 2, 42]));
    // One segment, based at 5: 2 is a stray; 42, the largest, is the clean-shutdown one.
    m.remove_stray_snapshots(&[Offset(5)]);
    assert_eq!(m.latest_snapshot_offset(), Some(Offset(42)));
    assert_eq!(m.oldest_snapshot_offset(), Some(Offset(5)));
    assert_eq!(offsets(&m), vec![5, 42]);
}

#[test]
fn test_remove_all_stray_snapshots() {
    let mut m = psm();
    m.load_snapshots(files(&[5, 2, 42]));
    m.remove_stray_snapshots(&[Offset(42)]);
    assert_eq!(offsets(&m), vec![42]);
}

#[test]
fn test_remove_and_mark_snapshot_for_deletion() {
    let mut m = psm();
    m.load_snapshots(files(&[5]));
    assert!(m.latest_snapshot_offset().is_some());
    assert!(m.remove_and_mark_snapshot_for_deletion(Offset(5)).is_some());
    assert_eq!(m.latest_snapshot_offset(), None);
}

#[test]
fn test_remove_and_mark_snapshot_for_deletion_already_deleted() {
    let mut m = psm();
    m.load_snapshots(files(&[5]));
    assert!(m.remove_and_mark_snapshot_for_deletion(Offset(5)).is_some());
    assert_eq!(m.remove_and_mark_snapshot_for_deletion(Offset(5)), None);
    assert_eq!(m.latest_snapshot_offset(), None);
}

// ------------------------------------------------------------------ KIP-890 part 1

#[test]
fn test_entry_for_verification() {
    let mut m = psm();
    let pid = ProducerId(PID);
    let original =
        m.maybe_create_verification_state_entry(pid, Sequence(0), ProducerEpoch(EPOCH), NOW);
    // An existing entry is reused.
    let updated =
        m.maybe_create_verification_state_entry(pid, Sequence(0), ProducerEpoch(EPOCH), NOW);
    let e = m.verification_state_entry(pid).unwrap();
    assert_eq!(original.verification_guard, e.verification_guard);
    assert_eq!(e.verification_guard, updated.verification_guard);
    // Transactional data, then the entry is cleared (the log's append clears it itself).
    client(&mut m, PID, 0, 0, 0, true).unwrap();
    m.clear_verification_state_entry(pid);
    assert_eq!(m.verification_state_entry(pid), None);
}

#[test]
fn test_sequence_and_epoch_in_verification_entry() {
    let mut m = psm();
    let pid = ProducerId(PID);
    let e0 = ProducerEpoch(EPOCH);
    let original = m.maybe_create_verification_state_entry(pid, Sequence(1), e0, NOW);
    let check = |m: &ProducerStateManager, seq: i32, epoch: ProducerEpoch| {
        let e = m.verification_state_entry(pid).unwrap();
        assert_eq!(e.verification_guard, original.verification_guard);
        assert_eq!((e.lowest_sequence, e.epoch), (Sequence(seq), epoch));
    };
    check(&m, 1, e0);
    // A lower sequence lowers it.
    m.maybe_create_verification_state_entry(pid, Sequence(0), e0, NOW);
    check(&m, 0, e0);
    // A higher epoch replaces the sequence.
    m.maybe_create_verification_state_entry(pid, Sequence(2), ProducerEpoch(1), NOW);
    check(&m, 2, ProducerEpoch(1));
    // A lower epoch is ignored.
    m.maybe_create_verification_state_entry(pid, Sequence(0), e0, NOW);
    check(&m, 2, ProducerEpoch(1));
}

/// Kafka's parameterized test, both ways: the sequence check of a verification entry runs
/// even with verification turned off afterwards.
#[test]
fn test_throw_out_of_order_sequence_with_verification_sequence_check() {
    for dynamically_disable in [true, false] {
        let mut m = psm();
        m.set_transaction_verification_enabled(true);
        let pid = ProducerId(PID);
        let original =
            m.maybe_create_verification_state_entry(pid, Sequence(0), ProducerEpoch(EPOCH), NOW);
        if dynamically_disable {
            m.set_transaction_verification_enabled(false);
        }
        let batch = data_batch(PID, EPOCH, 4, 0, 1, NOW, true);
        let r = m.check_append_verified(&batch, AppendOrigin::Client, original.verification_guard);
        assert!(is_out_of_order(r), "disable={dynamically_disable}");
        assert_eq!(m.verification_state_entry(pid), Some(original));
    }
}

#[test]
fn test_verification_state_entry_expiration() {
    let mut m = psm();
    let pid = ProducerId(PID);
    let original =
        m.maybe_create_verification_state_entry(pid, Sequence(0), ProducerEpoch(EPOCH), NOW);
    let expiration = m.producer_id_expiration_ms();
    m.remove_expired_producers(NOW + expiration / 2);
    assert_eq!(m.verification_state_entry(pid), Some(original));
    m.remove_expired_producers(NOW + expiration + 1);
    assert_eq!(m.verification_state_entry(pid), None);
}

/// Guards are unique and compared by identity; the sentinel verifies nothing.
#[test]
fn verification_guards_are_unique_and_the_sentinel_verifies_nothing() {
    let mut m = psm();
    let a = m
        .maybe_create_verification_state_entry(ProducerId(1), Sequence(0), ProducerEpoch(0), NOW)
        .verification_guard;
    let b = m
        .maybe_create_verification_state_entry(ProducerId(2), Sequence(0), ProducerEpoch(0), NOW)
        .verification_guard;
    assert_ne!(a, b);
    assert!(a.verify(a));
    assert!(!a.verify(b));
    assert!(!VerificationGuard::SENTINEL.verify(VerificationGuard::SENTINEL));
    assert!(!a.verify(VerificationGuard::SENTINEL));
}
