//! Stop plans per design and the log values their steps use.
//! Reference: kip1279.md A.1 STOPPING, B §8.5 (a), (b), (d).

use super::*;
use crate::log::partition_log::LogConfig;
use crate::record::{BatchBuilder, SimpleRecord};
use crate::types::{ProducerEpoch, ProducerId, Sequence};
use StopStep as S;

fn d(s: &str) -> Design {
    Design::parse(s).expect("valid design")
}

#[test]
fn preset_plans_in_order() {
    assert_eq!(
        stop_plan(&d("seed")),
        vec![
            S::RemoveFetchers,
            S::BumpLeaderEpoch,
            S::TruncateToLso,
            S::WaitForIsr,
            S::RecordLastMirror,
            S::AppendPidReset,
            S::MarkStopped
        ]
    );
    assert_eq!(
        stop_plan(&d("early")),
        vec![
            S::RemoveFetchers,
            S::TruncateToLso,
            S::WaitForIsr,
            S::RecordLastMirror,
            S::MarkStopped
        ]
    );
    assert_eq!(
        stop_plan(&d("latest")),
        vec![
            S::RemoveFetchers,
            S::RecordLastMirror,
            S::BumpLeaderEpoch,
            S::WriteAbortMarkers,
            S::AppendPidReset,
            S::MarkStopped
        ]
    );
}

#[test]
fn each_ablation_removes_exactly_its_step() {
    // (design, step removed or None)
    let cases: &[(&str, Option<StopStep>)] = &[
        ("seed-no-pid-reset", Some(S::AppendPidReset)),
        ("seed-no-epoch-bump", Some(S::BumpLeaderEpoch)),
        ("seed-no-lso-truncation", Some(S::TruncateToLso)),
        ("seed-no-isr-wait", None),
        ("seed-no-read-only", None),
        ("latest-no-pid-reset", Some(S::AppendPidReset)),
        ("latest-no-epoch-bump", Some(S::BumpLeaderEpoch)),
        ("latest-no-lso-truncation", Some(S::WriteAbortMarkers)),
        ("latest-no-isr-wait", None),
        ("latest-no-read-only", None),
        ("early-no-lso-truncation", Some(S::TruncateToLso)),
        ("early-no-isr-wait", None),
        ("early-no-read-only", None),
    ];
    for &(name, removed) in cases {
        let design = d(name);
        let full = stop_plan(&Design::preset_only(design.preset()));
        let want: Vec<StopStep> = full
            .iter()
            .copied()
            .filter(|s| Some(*s) != removed)
            .collect();
        assert_eq!(stop_plan(&design), want, "{name}");
        if removed.is_some() {
            assert_eq!(want.len() + 1, full.len(), "{name} removes one step");
        }
    }
    // Every ablation at once keeps the skeleton, in order.
    assert_eq!(
        stop_plan(&d("seed-no-pid-reset-no-epoch-bump-no-lso-truncation")),
        vec![
            S::RemoveFetchers,
            S::WaitForIsr,
            S::RecordLastMirror,
            S::MarkStopped
        ]
    );
}

#[test]
fn every_plan_starts_and_ends_the_same_way() {
    // Goal: fetchers go first (nothing is appended from the source during the stop) and
    // STOPPED comes last (read-only is lifted only after every other step).
    for (name, _) in Design::all_named() {
        let plan = stop_plan(&d(name));
        assert_eq!(plan.first(), Some(&S::RemoveFetchers), "{name}");
        assert_eq!(plan.last(), Some(&S::MarkStopped), "{name}");
        if let (Some(bump), Some(reset)) = (
            plan.iter().position(|s| *s == S::BumpLeaderEpoch),
            plan.iter().position(|s| *s == S::AppendPidReset),
        ) {
            assert!(
                bump < reset,
                "{name}: the reset is written under the bumped epoch"
            );
        }
        let names: Vec<String> = plan.iter().map(ToString::to_string).collect();
        assert!(names.iter().all(|n| n == &n.to_lowercase()));
    }
}

/// A mirrored log: plain batches in source epochs 1 and 4, then an open transaction in
/// epoch 6, with the HW at the LEO.
fn mirrored_log() -> PartitionLog {
    let mut log = PartitionLog::new(LogConfig::default());
    let plain = |offset: i64, epoch: i32| {
        BatchBuilder::new()
            .base_offset(Offset(offset))
            .leader_epoch(LeaderEpoch(epoch))
            .build(&[SimpleRecord::value(0, "a"), SimpleRecord::value(0, "b")])
    };
    log.append_as_follower(&plain(0, 1), None).expect("append");
    log.append_as_follower(&plain(2, 4), None).expect("append");
    let txn = BatchBuilder::transactional(ProducerId(9), ProducerEpoch(0), Sequence(0))
        .base_offset(Offset(4))
        .leader_epoch(LeaderEpoch(6))
        .build(&[SimpleRecord::value(0, "t")]);
    log.append_as_follower(&txn, None).expect("append");
    log.append_as_follower(&plain(5, 6), None).expect("append");
    log.update_high_watermark(log.log_end_offset());
    log
}

#[test]
fn log_values_used_by_the_steps() {
    let empty = PartitionLog::new(LogConfig::default());
    assert_eq!(
        last_mirrored_epoch(&empty),
        -1,
        "A.2: LME of an empty log is -1"
    );
    assert_eq!(last_mirror_position(&empty), (-1, 0));
    assert_eq!(stop_min_leader_epoch(&empty), LeaderEpoch::UNDEFINED);
    assert_eq!(lso_truncation_target(&empty), Offset(0));

    let log = mirrored_log();
    assert_eq!(log.log_end_offset(), Offset(7));
    assert_eq!(last_mirrored_epoch(&log), 6);
    assert_eq!(stop_min_leader_epoch(&log), LeaderEpoch(6));
    assert_eq!(
        lso_truncation_target(&log),
        Offset(4),
        "first offset of the open transaction"
    );
    assert_eq!(last_mirror_position(&log), (6, 7));

    // Seed's order: truncating to the LSO first makes the LME the greatest epoch that is
    // still in the log.
    let mut truncated = log.clone();
    truncated
        .truncate_to(lso_truncation_target(&log))
        .expect("truncate");
    assert_eq!(last_mirrored_epoch(&truncated), 4);
    assert_eq!(
        last_mirror_position(&truncated),
        (4, 4),
        "early records the LSO as LMO"
    );
}

/// Kafka's transactional batches: producer `pid` at offset `at`, sequence `seq`, two records.
fn txn_at(pid: i64, seq: i32, at: i64) -> crate::record::RecordBatch {
    BatchBuilder::transactional(ProducerId(pid), ProducerEpoch(0), Sequence(seq))
        .base_offset(Offset(at))
        .leader_epoch(LeaderEpoch(0))
        .build(&[SimpleRecord::value(0, "t"), SimpleRecord::value(0, "u")])
}

#[test]
fn the_lso_cut_reaches_a_log_with_no_open_transaction() {
    use crate::record::ControlRecord;
    // Producer 7 opens at 0, producer 8 opens at 2, producer 7 commits at 4: the LSO is 2.
    let mut log = PartitionLog::new(LogConfig::default());
    log.append_as_follower(&txn_at(7, 0, 0), None)
        .expect("append");
    log.append_as_follower(&txn_at(8, 0, 2), None)
        .expect("append");
    let commit = BatchBuilder::transactional(ProducerId(7), ProducerEpoch(0), Sequence::NONE)
        .base_offset(Offset(4))
        .leader_epoch(LeaderEpoch(0))
        .build_control(ControlRecord::commit(0), 0);
    log.append_as_follower(&commit, None).expect("append");
    log.update_high_watermark(log.log_end_offset());
    assert_eq!(log.last_stable_offset(), Offset(2));
    // Cutting at 2 removes producer 7's COMMIT: its transaction from 0 is open again.
    let mut once = log.clone();
    once.truncate_to(Offset(2)).expect("truncate");
    assert_eq!(once.last_stable_offset(), Offset(0), "reopened at 0");
    // The stop's cut goes down to 0, where nothing is open (seed 5143).
    let target = lso_truncation_target(&log);
    assert_eq!(target, Offset(0));
    let mut cut = log.clone();
    cut.truncate_to(target).expect("truncate");
    assert_eq!(cut.last_stable_offset(), cut.log_end_offset());
    assert!(cut.producer_state().ongoing_txns().is_empty());
    // With the COMMIT below the open transaction, one cut is enough.
    let mut decided = PartitionLog::new(LogConfig::default());
    decided
        .append_as_follower(&txn_at(7, 0, 0), None)
        .expect("append");
    let commit = BatchBuilder::transactional(ProducerId(7), ProducerEpoch(0), Sequence::NONE)
        .base_offset(Offset(2))
        .leader_epoch(LeaderEpoch(0))
        .build_control(ControlRecord::commit(0), 0);
    decided.append_as_follower(&commit, None).expect("append");
    decided
        .append_as_follower(&txn_at(8, 0, 3), None)
        .expect("append");
    decided.update_high_watermark(decided.log_end_offset());
    assert_eq!(lso_truncation_target(&decided), Offset(3));
}

#[test]
fn bump_completion() {
    // Goal: complete once the metadata epoch is strictly greater ("epoch 11 vs target 0").
    assert!(bump_complete(LeaderEpoch(11), LeaderEpoch(0)));
    assert!(bump_complete(LeaderEpoch(7), LeaderEpoch(6)));
    assert!(!bump_complete(LeaderEpoch(6), LeaderEpoch(6)));
    assert!(
        bump_complete(LeaderEpoch(0), LeaderEpoch::UNDEFINED),
        "empty log"
    );
}
