//! Teeth of the mirror checkers' rules, on hand-built inputs: each rule reports the broken
//! case and accepts the correct one. (The event glue runs in `sim/tests/mirror_checkers.rs`
//! against real brokers with the design ablations.)

use std::collections::BTreeSet;

use mirror_core::log::producer_state::{AppendOrigin, ProducerStateManager};
use mirror_core::mirror::{Design, MirrorPartitionState as S};
use mirror_core::protocol::{ClusterIdx, NodeId};
use mirror_core::record::{BatchBuilder, ControlRecord, RecordBatch, SimpleRecord};
use mirror_core::types::{
    BrokerId, LeaderEpoch, Offset, ProducerEpoch, ProducerId, Sequence, TopicPartition,
};

use super::ghost::Ghost;
use super::mirror::{
    FailbackInput, OwnWrites, epoch_violation, exposed_beyond_source,
    exposed_beyond_source_after_failback, failback_outcome, hanging_txn_violation, history_split,
    mirrored_batch_violation, read_only_violation, stale_producer, superseded_leader_epoch,
    transition_violation,
};

const SRC: ClusterIdx = ClusterIdx(0);

fn tp() -> TopicPartition {
    TopicPartition::new("orders", 0)
}

fn batch(base: i64, n: usize, epoch: i32, tag: &str) -> RecordBatch {
    let recs: Vec<SimpleRecord> = (0..n)
        .map(|i| SimpleRecord::value(i as i64, format!("{tag}-{i}")))
        .collect();
    BatchBuilder::new()
        .base_offset(Offset(base))
        .leader_epoch(LeaderEpoch(epoch))
        .build(&recs)
}

/// A ghost whose source partition committed `batches` (true HW = end of the last).
fn ghost_with(batches: &[RecordBatch]) -> Ghost {
    let mut g = Ghost::default();
    let p = g.partition(SRC, &tp());
    for b in batches {
        p.committed.insert(b.base_offset(), b.clone());
        p.true_hw = b.last_offset().plus(1);
    }
    g
}

#[test]
fn valid_transitions_rejects_disallowed_moves_and_non_rising_state_epochs() {
    let seed = Design::default();
    assert_eq!(
        transition_violation(&seed, None, S::Unknown, S::Preparing, 1),
        None
    );
    assert_eq!(
        transition_violation(&seed, Some(1), S::Preparing, S::Mirroring, 2),
        None
    );
    // STOPPED -> MIRRORING skips PREPARING (no LME alignment): not allowed.
    let d = transition_violation(&seed, Some(4), S::Stopped, S::Mirroring, 5).unwrap();
    assert!(d.contains("not allowed"), "{d}");
    // MIRRORING -> STOPPED skips STOPPING (no stop plan).
    assert!(transition_violation(&seed, Some(2), S::Mirroring, S::Stopped, 3).is_some());
    // A latest-only state in the seed design.
    assert!(transition_violation(&seed, Some(2), S::Mirroring, S::EpochFencing, 3).is_some());
    // The state epoch must strictly rise.
    let d = transition_violation(&seed, Some(3), S::Mirroring, S::Stopping, 3).unwrap();
    assert!(d.contains("state epoch"), "{d}");
    assert!(transition_violation(&seed, Some(3), S::Mirroring, S::Stopping, 2).is_some());
}

#[test]
fn mirror_prefix_rejects_a_batch_that_differs_from_or_is_missing_in_the_source_history() {
    let a = batch(0, 3, 0, "a");
    let g = ghost_with(std::slice::from_ref(&a));
    assert_eq!(mirrored_batch_violation(&g, SRC, &tp(), &a), None);
    // Same offset, different bytes (a value changed).
    let forged = batch(0, 3, 0, "x");
    let d = mirrored_batch_violation(&g, SRC, &tp(), &forged).unwrap();
    assert!(d.contains("differs"), "{d}");
    // Same records, different epoch: the header must match byte for byte too.
    assert!(mirrored_batch_violation(&g, SRC, &tp(), &batch(0, 3, 1, "a")).is_some());
    // Beyond the source's committed history (an uncommitted source batch).
    let ahead = batch(3, 2, 0, "b");
    let d = mirrored_batch_violation(&g, SRC, &tp(), &ahead).unwrap();
    assert!(d.contains("not in source"), "{d}");
    // A source with no history at all.
    assert!(mirrored_batch_violation(&Ghost::default(), SRC, &tp(), &a).is_some());
}

#[test]
fn mirror_prefix_accepts_a_batch_cut_by_a_declared_source_loss_only() {
    let a = batch(0, 2, 0, "a");
    let b = batch(2, 2, 0, "b");
    let mut g = ghost_with(&[a.clone(), b.clone()]);
    // Source unclean election: history from 2 is gone, a new batch takes its place.
    g.partition(SRC, &tp()).cut_from(Offset(2));
    let b2 = batch(2, 1, 1, "b2");
    g.partition(SRC, &tp())
        .committed
        .insert(Offset(2), b2.clone());
    // The mirror fetched `b` before the loss: declared, accepted.
    assert_eq!(mirrored_batch_violation(&g, SRC, &tp(), &b), None);
    assert_eq!(mirrored_batch_violation(&g, SRC, &tp(), &b2), None);
    // A batch that was never committed anywhere is still refused.
    assert!(mirrored_batch_violation(&g, SRC, &tp(), &batch(2, 2, 0, "zz")).is_some());
}

#[test]
fn not_ahead_of_source_rejects_a_destination_hw_above_the_source_true_hw() {
    let a = batch(0, 3, 0, "a");
    let b = batch(3, 2, 0, "b");
    let g = ghost_with(std::slice::from_ref(&a)); // source true HW 3
    let dest = [a.clone(), b.clone()];
    assert_eq!(
        exposed_beyond_source(&g, SRC, &tp(), dest.iter(), Offset(3)),
        None
    );
    let (o, d) = exposed_beyond_source(&g, SRC, &tp(), dest.iter(), Offset(5)).unwrap();
    assert_eq!(o, Offset(3));
    assert!(d.contains("true HW is 3"), "{d}");
    // After a declared source loss, offsets the source once committed may stay exposed until
    // the mirror diverges.
    let mut g = ghost_with(&[a.clone(), b.clone()]);
    g.partition(SRC, &tp()).cut_from(Offset(3));
    assert_eq!(
        exposed_beyond_source(&g, SRC, &tp(), dest.iter(), Offset(5)),
        None
    );
}

#[test]
fn read_only_rejects_client_data_before_stopped_but_not_the_brokers_control_batches() {
    for s in [
        S::Preparing,
        S::Mirroring,
        S::Pausing,
        S::Paused,
        S::Stopping,
        S::Failed,
    ] {
        let d = read_only_violation(Some(s), true, None).unwrap();
        assert!(d.contains(&s.to_string()), "{d}");
        // The stop plan's own control batches.
        assert_eq!(
            read_only_violation(Some(s), true, Some(ControlRecord::MirrorPidReset)),
            None
        );
        assert_eq!(
            read_only_violation(Some(s), true, Some(ControlRecord::abort(-1))),
            None
        );
        // A transaction coordinator's ABORT (coordinator epoch >= 0) is not the broker's.
        assert!(read_only_violation(Some(s), true, Some(ControlRecord::abort(0))).is_some());
        // A COMMIT marker is a client transaction's: refused.
        assert!(read_only_violation(Some(s), true, Some(ControlRecord::commit(0))).is_some());
    }
    assert_eq!(read_only_violation(Some(S::Stopped), true, None), None);
    // A mirror partition whose run has not read its state yet (UNKNOWN) is read-only too.
    assert!(read_only_violation(None, true, None).is_some());
    // Not a mirror partition.
    assert_eq!(read_only_violation(None, false, None), None);
}

#[test]
fn epoch_above_lme_rejects_an_epoch_at_or_below_the_lme() {
    assert!(epoch_violation(LeaderEpoch(3), LeaderEpoch(3)).is_some());
    assert!(epoch_violation(LeaderEpoch(3), LeaderEpoch(1)).is_some());
    assert_eq!(epoch_violation(LeaderEpoch(3), LeaderEpoch(4)), None);
    assert_eq!(epoch_violation(LeaderEpoch(-1), LeaderEpoch(0)), None);
}

#[test]
fn pid_reset_rejects_a_mirrored_producer_that_survives_the_barrier() {
    let mut ps = ProducerStateManager::new(86_400_000);
    let b = BatchBuilder::idempotent(ProducerId(42), ProducerEpoch(0), Sequence(0))
        .base_offset(Offset(0))
        .leader_epoch(LeaderEpoch(0))
        .build(&[SimpleRecord::value(0, "v0"), SimpleRecord::value(0, "v1")]);
    ps.apply_batch(&b, AppendOrigin::Replication);
    // Barrier at 2 (the MIRROR_PID_RESET offset): the entry (last batch at 1) is stale.
    let (o, d) = stale_producer(&ps, Offset(2), true).unwrap();
    assert_eq!(o, Some(Offset(1)));
    assert!(d.contains("producer 42"), "{d}");
    // Applying the reset clears it.
    let reset = BatchBuilder::new()
        .base_offset(Offset(2))
        .leader_epoch(LeaderEpoch(1))
        .build_control(ControlRecord::MirrorPidReset, 0);
    ps.apply_batch(&reset, AppendOrigin::Coordinator);
    assert_eq!(stale_producer(&ps, Offset(2), true), None);
    // A producer writing after the barrier is fine.
    let after = BatchBuilder::idempotent(ProducerId(42), ProducerEpoch(0), Sequence(0))
        .base_offset(Offset(3))
        .leader_epoch(LeaderEpoch(1))
        .build(&[SimpleRecord::value(0, "w")]);
    ps.apply_batch(&after, AppendOrigin::Client);
    assert_eq!(stale_producer(&ps, Offset(2), false), None);
}

#[test]
fn no_hanging_txn_rejects_an_open_transaction_or_an_unstable_end_at_stop() {
    assert_eq!(
        hanging_txn_violation(Offset(5), Offset(5), Offset(5), 0, false),
        None
    );
    // An open transaction from the mirror cut: LSO stuck below the HW.
    let (o, d) = hanging_txn_violation(Offset(3), Offset(5), Offset(5), 1, false).unwrap();
    assert_eq!(o, Offset(3));
    assert!(d.contains("open transaction"), "{d}");
    assert!(hanging_txn_violation(Offset(3), Offset(5), Offset(5), 1, true).is_some());
    // Seed: the stop cuts to a stable end, so HW == LEO.
    assert!(hanging_txn_violation(Offset(5), Offset(5), Offset(7), 0, false).is_some());
    // Latest: ABORT markers end transactions without truncation; only LSO == HW is required.
    assert_eq!(
        hanging_txn_violation(Offset(5), Offset(5), Offset(7), 0, true),
        None
    );
}

/// The failback of the end-to-end test: the old source kept `d` (2 records at 24) that were
/// never mirrored; the new source has the PID reset at 24 and `c` after it.
fn failback_logs() -> (Vec<RecordBatch>, Vec<RecordBatch>) {
    let prefix = batch(0, 24, 0, "a");
    let old_tail = batch(24, 2, 0, "d");
    let reset = BatchBuilder::new()
        .base_offset(Offset(24))
        .leader_epoch(LeaderEpoch(2))
        .build_control(ControlRecord::MirrorPidReset, 0);
    let c = batch(25, 3, 2, "c");
    (vec![prefix.clone(), old_tail], vec![prefix, reset, c])
}

#[test]
fn failback_converges_reports_the_dropped_tail_as_the_declared_loss() {
    let (snapshot, final_log) = failback_logs();
    let losses = [(24, 1)];
    let i = FailbackInput {
        snapshot: &snapshot,
        snapshot_leo: Offset(26),
        snapshot_hw: Offset(26),
        old_start: Offset(0),
        old_log: &final_log,
        new_start: Offset(0),
        new_log: &final_log,
        min_truncated_to: Some(Offset(24)),
        losses: &losses,
        lowest_other_loss: None,
    };
    let r = failback_outcome(&i).unwrap();
    assert_eq!(r.divergence_offset, 24);
    assert_eq!(r.records_dropped, 2);
    assert_eq!(r.records_truncated, 2);
    assert_eq!((r.declared_losses, r.declared_batches), (1, 1));
}

#[test]
fn failback_converges_rejects_diverged_logs_undeclared_drops_and_a_kept_tail() {
    let (snapshot, final_log) = failback_logs();
    let losses = [(24, 1)];
    let base = FailbackInput {
        snapshot: &snapshot,
        snapshot_leo: Offset(26),
        snapshot_hw: Offset(26),
        old_start: Offset(0),
        old_log: &final_log,
        new_start: Offset(0),
        new_log: &final_log,
        min_truncated_to: Some(Offset(24)),
        losses: &losses,
        lowest_other_loss: None,
    };
    // The old source still holds its own tail: the logs differ at 24.
    let (o, d) = failback_outcome(&FailbackInput {
        old_log: &snapshot,
        ..base
    })
    .unwrap_err();
    assert_eq!(o, Some(Offset(24)));
    assert!(d.contains("logs differ"), "{d}");
    // The old source lags the new one (a missing batch at the end).
    assert!(
        failback_outcome(&FailbackInput {
            old_log: &final_log[..2],
            ..base
        })
        .is_err()
    );
    // Records truncated with no declared loss.
    let (_, d) = failback_outcome(&FailbackInput {
        losses: &[],
        ..base
    })
    .unwrap_err();
    assert!(d.contains("declared loss"), "{d}");
    // A declared loss above the truncation point does not cover it.
    assert!(
        failback_outcome(&FailbackInput {
            losses: &[(25, 1)],
            ..base
        })
        .is_err()
    );
    // The differing tail was replaced without any mirror truncation.
    let (_, d) = failback_outcome(&FailbackInput {
        min_truncated_to: None,
        ..base
    })
    .unwrap_err();
    assert!(d.contains("never truncated"), "{d}");
    // ... unless a declared loss that is not a mirror truncation had already cut the old
    // source's log at or below the divergence (seed 94: its only replica's recovery cut a
    // rotted batch); one above the divergence does not excuse it.
    assert!(
        failback_outcome(&FailbackInput {
            min_truncated_to: None,
            lowest_other_loss: Some(20),
            ..base
        })
        .is_ok()
    );
    assert!(
        failback_outcome(&FailbackInput {
            min_truncated_to: None,
            lowest_other_loss: Some(25),
            ..base
        })
        .is_err()
    );
    // ... and the tail was never committed (HW 24 at the snapshot): a leader change may drop
    // it with nothing to declare (seed 9960). With HW 25, record 24 was committed: an error.
    assert!(
        failback_outcome(&FailbackInput {
            min_truncated_to: None,
            snapshot_hw: Offset(24),
            ..base
        })
        .is_ok()
    );
    assert!(
        failback_outcome(&FailbackInput {
            min_truncated_to: None,
            snapshot_hw: Offset(25),
            ..base
        })
        .is_err()
    );
    // Comparison starts at the later log start: a retention gap below it is fine.
    let r = failback_outcome(&FailbackInput {
        old_start: Offset(24),
        old_log: &final_log[1..],
        ..base
    })
    .unwrap();
    assert_eq!(r.records_dropped, 2);
}

#[test]
fn not_ahead_of_source_after_failback_exempts_only_the_old_sources_own_tail() {
    // Goal: on an old source failing back, its own tail (left by PREPARING in the LME's epoch
    // until the first diverging fetch) is not "exposing uncommitted source data", whether it
    // was committed before the failback or its HW reached it since (mirror chaos seed 541: a
    // lagging follower caught up during PREPARING); anything the mirror run appended above the
    // new source's true HW still is.
    let a = batch(0, 3, 0, "a"); // mirrored to the new source before the stop
    let tail = batch(3, 2, 0, "tail"); // the old source's own, committed there
    let uncommitted = batch(5, 1, 0, "u"); // above the old source's HW at failback start
    let g = ghost_with(std::slice::from_ref(&a)); // new source's true HW 3
    let snapshot = [a.clone(), tail.clone(), uncommitted.clone()];
    let dest = [a.clone(), tail.clone()];
    let check = |dest: &[RecordBatch], hw: i64, snap: &[RecordBatch]| {
        let own = OwnWrites {
            snapshot: snap,
            appended: None,
        };
        exposed_beyond_source_after_failback(&g, SRC, &tp(), dest.iter(), Offset(hw), &own)
    };
    assert_eq!(check(&dest, 5, &snapshot), None);
    // Not failing back (no snapshot): the same log is a violation.
    assert_eq!(check(&dest, 5, &[]).map(|x| x.0), Some(Offset(3)));
    // The old source's tail it had not committed when the failback started, committed since
    // by its own followers: still its own data, exempt.
    let dest = [a.clone(), tail.clone(), uncommitted.clone()];
    assert_eq!(check(&dest, 6, &snapshot), None);
    // Something the run appended at a tail offset (e.g. a marker, a different batch): checked.
    let marker = batch(3, 1, 0, "marker");
    let dest = [a.clone(), marker];
    assert_eq!(check(&dest, 4, &snapshot).map(|x| x.0), Some(Offset(3)));
    // A batch mirrored past the snapshot's end and above the new source's true HW: checked.
    let mirrored = batch(6, 2, 1, "m");
    let dest = [a.clone(), tail, uncommitted, mirrored.clone()];
    assert_eq!(check(&dest, 8, &snapshot).map(|x| x.0), Some(Offset(6)));
    // Past the snapshot, a batch one of its own leaders appended (a zombie's, brought back by
    // an unclean election; fresh seed 845002405): exempt, matched by offset and CRC only.
    let zombie = batch(3, 3, 0, "zombie");
    let appended: BTreeSet<(Offset, u32)> = [(Offset(3), zombie.header().crc)].into();
    let own = OwnWrites {
        snapshot: &[],
        appended: Some(&appended),
    };
    let with_own = |dest: &[RecordBatch], hw: i64| {
        exposed_beyond_source_after_failback(&g, SRC, &tp(), dest.iter(), Offset(hw), &own)
    };
    assert_eq!(with_own(&[a.clone(), zombie], 6), None);
    let other = batch(3, 3, 0, "other");
    assert_eq!(
        with_own(&[a.clone(), other], 6).map(|x| x.0),
        Some(Offset(3))
    );
    assert_eq!(with_own(&[a, mirrored], 8).map(|x| x.0), Some(Offset(6)));
}

#[test]
fn a_leader_append_stamped_with_a_superseded_epoch_is_a_zombies() {
    // Goal: read_only_until_stopped judges the partition's current leader; a fenced leader
    // with stale metadata (it cannot know the topic became a mirror) appending with an epoch
    // a newer election superseded is a zombie, whose records never commit.
    let mut g = Ghost::default();
    assert!(!superseded_leader_epoch(&g, SRC, &tp(), LeaderEpoch(1)));
    let p = g.partition(SRC, &tp());
    p.leaders
        .insert(LeaderEpoch(1), NodeId::broker(SRC, BrokerId(1)));
    assert!(!superseded_leader_epoch(&g, SRC, &tp(), LeaderEpoch(1)));
    g.partition(SRC, &tp())
        .leaders
        .insert(LeaderEpoch(2), NodeId::broker(SRC, BrokerId(5)));
    assert!(superseded_leader_epoch(&g, SRC, &tp(), LeaderEpoch(1)));
    assert!(!superseded_leader_epoch(&g, SRC, &tp(), LeaderEpoch(2)));
    // Another cluster's epochs do not count.
    assert!(!superseded_leader_epoch(
        &g,
        ClusterIdx(1),
        &tp(),
        LeaderEpoch(1)
    ));
}

#[test]
fn one_history_per_offset_compares_the_records_below_both_hws() {
    // Goal: after a failback both clusters hold the same record at every offset below the
    // lower HW, from the later log start; above it, or across a log start, nothing is judged.
    let common = [batch(0, 4, 0, "a"), batch(4, 4, 0, "b")];
    let mut old = common.to_vec();
    let mut new = common.to_vec();
    new.push(batch(8, 4, 1, "c"));
    // Allowed: the old source lags (its HW 8 is the lower).
    assert_eq!(history_split(&old, &new, Offset(0), Offset(8)), None);
    // Allowed: a different tail above the lower HW (the mirror still catching up).
    old.push(batch(8, 4, 1, "x"));
    assert_eq!(history_split(&old, &new, Offset(0), Offset(8)), None);
    // Forbidden: the same offsets, other records, below both HWs.
    assert_eq!(
        history_split(&old, &new, Offset(0), Offset(12)),
        Some(Offset(8))
    );
    // Forbidden: batch boundaries that differ (one history's batch straddles the other's).
    let shifted = [
        batch(0, 4, 0, "a"),
        batch(4, 2, 0, "b"),
        batch(6, 2, 0, "b2"),
    ];
    assert_eq!(
        history_split(&common, &shifted, Offset(0), Offset(8)),
        Some(Offset(4))
    );
    // Allowed: a log start that moved past a batch on one side only.
    assert_eq!(
        history_split(&common[1..], &common, Offset(4), Offset(8)),
        None
    );
}
