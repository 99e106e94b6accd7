//! Which `MIRROR_PID_RESET` is this mirror's stop's own, and the mirrored position it bounds
//! (kip1279.md A.1 STOPPING; the re-driven stop of fresh mirror chaos seed 905707).

use super::{last_mirrored_position, own_pid_reset};
use crate::log::partition_log::{LogConfig, PartitionLog};
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
