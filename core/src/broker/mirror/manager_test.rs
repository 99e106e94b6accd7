//! Which `MIRROR_PID_RESET` is this mirror's stop's own, and the mirrored position it bounds
//! (kip1279.md A.1 STOPPING; the re-driven stop of fresh mirror chaos seed 905707), and which
//! read-back cycle start a leader reports (fresh mirror chaos seed 155591179).

use super::{last_mirrored_position, own_pid_reset, unreported_cycle_start};
use crate::log::partition_log::{LogConfig, PartitionLog};
use crate::mirror::MirrorPartitionState as S;
use crate::record::{BatchBuilder, SimpleRecord};
use crate::types::{LeaderEpoch, Offset};

/// Appends a two-record batch in `epoch` at the log end.
fn plain(log: &mut PartitionLog, epoch: i32) {
    let b = BatchBuilder::new()
        .base_offset(log.log_end_offset())
        .leader_epoch(LeaderEpoch(epoch))
        .build(&[SimpleRecord::value(0, "a"), SimpleRecord::value(0, "b")]);
    log.append_as_follower(&b, None).expect("append");
}

/// Appends a reset naming `source` in `epoch` at the log end.
fn reset(log: &mut PartitionLog, source: &str, epoch: i32) {
    let b = BatchBuilder::new()
        .base_offset(log.log_end_offset())
        .leader_epoch(LeaderEpoch(epoch))
        .build_mirror_pid_reset(source, 0);
    log.append_as_follower(&b, None).expect("append");
}

#[test]
fn the_own_reset_is_the_last_reset_when_it_names_this_mirrors_source() {
    // Mirrored 0..4 in source epochs 0 and 1, the stop's reset at 4 in the bumped epoch 2,
    // then the new primary's writes 5..7 in epoch 2: the reset is found behind the writes.
    let mut log = PartitionLog::new(LogConfig::default());
    plain(&mut log, 0);
    plain(&mut log, 1);
    reset(&mut log, "0", 2);
    plain(&mut log, 2);
    assert_eq!(
        own_pid_reset(&log, Some("0")).map(|b| b.base_offset()),
        Some(Offset(4))
    );
    assert_eq!(last_mirrored_position(&log, Some("0")), (1, Offset(4)));
    // Another mirror's reset (the other cluster's stop, copied by a later mirror) is not it.
    assert!(own_pid_reset(&log, Some("1")).is_none());
    assert_eq!(last_mirrored_position(&log, Some("1")), (2, Offset(7)));
    // With the source unknown only a reset that ends the log counts.
    assert!(own_pid_reset(&log, None).is_none());
    reset(&mut log, "0", 2);
    assert_eq!(
        own_pid_reset(&log, None).map(|b| b.base_offset()),
        Some(Offset(7))
    );
}

#[test]
fn a_later_reset_of_another_source_hides_an_earlier_own_one() {
    // Ping-pong (S6): this mirror's first stop wrote a reset naming source 0; a later
    // mirror from this cluster copied the other cluster's own stop (source 1) and its data.
    // Everything after that reset is this mirror's source data again: no own reset.
    let mut log = PartitionLog::new(LogConfig::default());
    plain(&mut log, 0);
    reset(&mut log, "0", 1);
    plain(&mut log, 1);
    reset(&mut log, "1", 2);
    plain(&mut log, 3);
    assert!(own_pid_reset(&log, Some("0")).is_none());
    assert_eq!(last_mirrored_position(&log, Some("0")), (3, Offset(8)));
}

#[test]
fn a_prepare_written_at_an_earlier_epoch_is_reported_by_a_leader_that_knew_no_state() {
    // Goal: the read of fresh seed 155591179 (src-1 wrote UNKNOWN -> PREPARING at epoch 0,
    // crashed, led again at epoch 2, read UNKNOWN while the record was uncommitted, then
    // PREPARING) reports the start, with the record's previous state, and nothing else does.
    let prep = Some((S::Preparing, 1, LeaderEpoch(0)));
    let ours = LeaderEpoch(2);
    let from_unknown = Some(S::Unknown);
    let reported = Some((S::Unknown, 1, LeaderEpoch(0)));
    assert_eq!(
        unreported_cycle_start(Some((S::Unknown, 0)), prep, from_unknown, ours),
        reported
    );
    assert_eq!(
        unreported_cycle_start(None, prep, from_unknown, ours),
        reported,
        "a new run's first read is a leader that knew no state"
    );
    assert_eq!(
        unreported_cycle_start(None, prep, Some(S::Stopped), ours),
        Some((S::Stopped, 1, LeaderEpoch(0))),
        "a stopped partition mirroring again starts a cycle too"
    );
    assert_eq!(
        unreported_cycle_start(Some((S::Preparing, 1)), prep, from_unknown, ours),
        None,
        "a run that already knew PREPARING has nothing new"
    );
    assert_eq!(
        unreported_cycle_start(Some((S::Unknown, 0)), prep, from_unknown, LeaderEpoch(0)),
        None,
        "our own epoch's write: its answer or the unconfirmed entry reports it"
    );
    assert_eq!(
        unreported_cycle_start(
            Some((S::Unknown, 0)),
            Some((S::Mirroring, 2, LeaderEpoch(0))),
            Some(S::Preparing),
            ours
        ),
        None,
        "only PREPARING is reported"
    );
    assert_eq!(unreported_cycle_start(None, None, None, ours), None);
}
