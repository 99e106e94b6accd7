//! Recovery over hand-built segment files: a torn tail, bit rot in a flushed batch (scanned or
//! below the recovery point), a clean shutdown; and a second recovery of the files a first one
//! left changes nothing.

use std::collections::BTreeMap;

use bytes::{Bytes, BytesMut};

use super::*;
use crate::record::{BatchBuilder, SimpleRecord, codec};
use crate::types::{LeaderEpoch, ProducerEpoch, ProducerId, Sequence};

const PID: ProducerId = ProducerId(7);

fn tp() -> TopicPartition {
    TopicPartition::new("t", 0)
}

/// An idempotent batch of `n` records at `base`, in `epoch`, continuing `PID`'s sequence.
fn batch(base: i64, n: i32, epoch: i32) -> RecordBatch {
    let records: Vec<SimpleRecord> = (0..n)
        .map(|i| SimpleRecord::value(base + i64::from(i), format!("v{}", base + i64::from(i))))
        .collect();
    BatchBuilder::idempotent(
        PID,
        ProducerEpoch(0),
        Sequence(i32::try_from(base).unwrap()),
    )
    .base_offset(Offset(base))
    .leader_epoch(LeaderEpoch(epoch))
    .build(&records)
}

fn concat(batches: &[&RecordBatch]) -> Bytes {
    let mut b = BytesMut::new();
    for x in batches {
        b.extend_from_slice(x.bytes());
    }
    b.freeze()
}

/// `b` with one bit of its stored CRC flipped: bit rot the CRC check catches.
fn rotted(b: &RecordBatch) -> Bytes {
    let mut bytes = BytesMut::from(&b.bytes()[..]);
    bytes[codec::CRC + 1] ^= 0x10;
    bytes.freeze()
}

fn seg_path(base: i64) -> String {
    format!("t-0/{base:020}.log")
}

/// Applies recovery's file operations to a disk image (what `SimDisk` does).
fn apply(files: &mut BTreeMap<String, Bytes>, ops: &[IoOp]) {
    for op in ops {
        match op {
            IoOp::Truncate { path, len } => {
                let f = files.get_mut(path).expect("truncated file exists");
                *f = f.slice(..usize::try_from(*len).unwrap());
            }
            IoOp::Delete { path } => {
                files.remove(path);
            }
            IoOp::Append { path, bytes } => {
                let mut b = BytesMut::from(&files.get(path).cloned().unwrap_or_default()[..]);
                b.extend_from_slice(bytes);
                files.insert(path.clone(), b.freeze());
            }
            IoOp::WriteAtomic { path, bytes } => {
                files.insert(path.clone(), bytes.clone());
            }
            IoOp::Flush { .. } => {}
        }
    }
}

fn rec(files: &BTreeMap<String, Bytes>) -> RecoveredPartition {
    group_by_partition(files).remove(&tp()).unwrap_or_default()
}

fn unclean(rp: i64, hw: Option<i64>) -> RecoveryInputs {
    RecoveryInputs {
        scan: RecoveryScan::Unclean {
            recovery_point: Offset(rp),
        },
        log_start_checkpoint: None,
        hw_checkpoint: hw.map(Offset),
    }
}

/// Recovers `files` (applying recovery's operations to them) and returns the log and cut.
fn recover(
    files: &mut BTreeMap<String, Bytes>,
    inputs: &RecoveryInputs,
) -> (PartitionLog, LoadedSegments, Vec<IoOp>) {
    let mut ops = Vec::new();
    let (loaded, log) =
        recover_partition(LogConfig::default(), &tp(), &rec(files), inputs, &mut ops);
    apply(files, &ops);
    (log.expect("recovered"), loaded, ops)
}

fn offsets(log: &PartitionLog) -> Vec<(i64, i64)> {
    log.batches()
        .map(|b| (b.base_offset().0, b.last_offset().0))
        .collect()
}

#[test]
fn a_torn_last_batch_is_cut_from_the_file_and_a_second_recovery_changes_nothing() {
    let (b0, b1, b2) = (batch(0, 2, 0), batch(2, 3, 0), batch(5, 2, 1));
    let whole = concat(&[&b0, &b1]);
    let mut torn = BytesMut::from(&whole[..]);
    torn.extend_from_slice(&b2.bytes()[..b2.size_in_bytes() - 7]);
    let mut files = BTreeMap::from([(seg_path(0), torn.freeze())]);

    let (log, loaded, ops) = recover(&mut files, &unclean(0, Some(9)));
    assert_eq!(
        ops,
        vec![IoOp::Truncate {
            path: seg_path(0),
            len: whole.len() as u64,
        }],
        "the file is cut at the end of the last whole batch"
    );
    assert_eq!(
        loaded.cut,
        Some(RecoveryCut {
            at: Offset(5),
            kind: CutKind::Torn
        })
    );
    assert_eq!(files[&seg_path(0)], whole);
    assert_eq!(offsets(&log), vec![(0, 1), (2, 4)]);
    assert_eq!(log.log_end_offset(), Offset(5));
    assert_eq!(
        log.high_watermark(),
        Offset(5),
        "HW checkpoint 9 clamped to the LEO"
    );
    let epochs: Vec<(i32, i64)> = log
        .epoch_cache()
        .epoch_entries()
        .iter()
        .map(|e| (e.epoch.0, e.start_offset.0))
        .collect();
    assert_eq!(epochs, vec![(0, 0)], "the torn batch's epoch 1 is gone");
    assert_eq!(
        log.producer_state().active_producers()[&PID].last_seq(),
        Sequence(4)
    );

    let before = files.clone();
    let (again, loaded2, ops2) = recover(&mut files, &unclean(0, Some(9)));
    assert!(ops2.is_empty(), "nothing left to cut: {ops2:?}");
    assert_eq!(loaded2.cut, None);
    assert_eq!(loaded2.truncated_bytes, 0);
    assert_eq!(files, before);
    assert_eq!(log_difference(&log, &again), None);
}

#[test]
fn a_rotted_batch_mid_segment_cuts_the_log_there_and_drops_later_segments() {
    // Segment 0: [0-1]@0 [2-4]@0 [5-6]@1 [7]@1, segment 8: [8-9]@2. Bit rot in [5-6].
    let (b0, b1, b2, b3, b4) = (
        batch(0, 2, 0),
        batch(2, 3, 0),
        batch(5, 2, 1),
        batch(7, 1, 1),
        batch(8, 2, 2),
    );
    let mut seg0 = BytesMut::from(&concat(&[&b0, &b1])[..]);
    seg0.extend_from_slice(&rotted(&b2));
    seg0.extend_from_slice(b3.bytes());
    let mut files = BTreeMap::from([(seg_path(0), seg0.freeze()), (seg_path(8), concat(&[&b4]))]);
    // The recovery point (checkpointed at 3) lies in segment 0: it is scanned.
    let (log, loaded, ops) = recover(&mut files, &unclean(3, Some(10)));
    let kept = concat(&[&b0, &b1]).len() as u64;
    assert_eq!(
        ops,
        vec![
            IoOp::Truncate {
                path: seg_path(0),
                len: kept
            },
            IoOp::Delete { path: seg_path(8) },
        ]
    );
    assert_eq!(
        loaded.cut,
        Some(RecoveryCut {
            at: Offset(5),
            kind: CutKind::Corrupt
        })
    );
    assert!(matches!(
        loaded.error,
        Some(BatchError::InvalidCrc { base_offset: 5, .. })
    ));
    assert_eq!(offsets(&log), vec![(0, 1), (2, 4)]);
    assert_eq!(log.high_watermark(), Offset(5));
    assert_eq!(
        log.epoch_cache().epoch_entries().len(),
        1,
        "epochs 1 and 2 went"
    );
    assert_eq!(
        log.producer_state().active_producers()[&PID].last_seq(),
        Sequence(4)
    );
    assert_eq!(loaded.files.recovery_point(), Offset(3));

    let (again, _, ops2) = recover(&mut files, &unclean(3, Some(10)));
    assert!(ops2.is_empty(), "{ops2:?}");
    assert_eq!(log_difference(&log, &again), None);
}

#[test]
fn bit_rot_below_the_recovery_point_is_not_scanned_and_a_follower_refuses_the_batch() {
    // Kafka `LogLoader.recoverLog` recovers only `segments.values(recoveryPoint, MAX)`: the
    // rotted batch in segment 0 stays, unvalidated, when the recovery point is in segment 8.
    let (b0, b1, b4) = (batch(0, 2, 0), batch(2, 3, 0), batch(8, 2, 2));
    let b2 = batch(5, 3, 1);
    let mut seg0 = BytesMut::from(&concat(&[&b0, &b1])[..]);
    seg0.extend_from_slice(&rotted(&b2));
    let mut files = BTreeMap::from([(seg_path(0), seg0.freeze()), (seg_path(8), concat(&[&b4]))]);
    let (log, loaded, ops) = recover(&mut files, &unclean(9, None));
    assert!(ops.is_empty(), "{ops:?}");
    assert_eq!(loaded.cut, None);
    assert_eq!(offsets(&log), vec![(0, 1), (2, 4), (5, 7), (8, 9)]);
    let bad = log.batch_containing(Offset(6)).expect("kept").clone();
    assert!(!bad.is_valid(), "the rot is still there");

    // A follower fetching it checks the CRC (Kafka `analyzeAndValidateRecords`).
    let mut follower = PartitionLog::new(LogConfig::default());
    follower.append_as_follower(&b0, None).expect("valid");
    follower.append_as_follower(&b1, None).expect("valid");
    let err = follower.append_as_follower(&bad, None).unwrap_err();
    assert!(matches!(
        err,
        AppendError::InvalidBatch(BatchError::InvalidCrc { base_offset: 5, .. })
    ));
    assert_eq!(follower.log_end_offset(), Offset(5));

    // With the recovery point back in segment 0 (never checkpointed: 0), it is found.
    let (cut, loaded, _) = recover(&mut files, &unclean(0, None));
    assert_eq!(
        loaded.cut,
        Some(RecoveryCut {
            at: Offset(5),
            kind: CutKind::Corrupt
        })
    );
    assert_eq!(offsets(&cut), vec![(0, 1), (2, 4)]);
}

#[test]
fn a_clean_shutdown_scans_nothing_and_sets_the_recovery_point_to_the_end() {
    let (b0, b1) = (batch(0, 2, 0), batch(2, 3, 0));
    let mut seg0 = BytesMut::from(&concat(&[&b0])[..]);
    seg0.extend_from_slice(&rotted(&b1));
    let files = BTreeMap::from([(seg_path(0), seg0.freeze())]);
    let mut ops = Vec::new();
    let loaded = load_segments(&tp(), &rec(&files), RecoveryScan::Clean, &mut ops);
    assert!(ops.is_empty());
    assert_eq!(loaded.batches.len(), 2);
    assert_eq!(loaded.files.recovery_point(), Offset(5));
}

#[test]
fn the_recovery_point_follows_rolls_flushes_and_truncations() {
    let id = TopicId(1);
    let mut out = Vec::new();
    let mut files = PartitionFiles::create(&tp(), id, Offset(0), &mut out);
    let (b0, b1, b2) = (batch(0, 2, 0), batch(2, 3, 0), batch(5, 2, 0));
    let seg = b0.size_in_bytes() + b1.size_in_bytes();
    files.append(&b0, seg, &mut out);
    files.append(&b1, seg, &mut out);
    assert_eq!(files.recovery_point(), Offset(0), "nothing flushed yet");
    files.append(&b2, seg, &mut out);
    assert_eq!(
        files.recovery_point(),
        Offset(5),
        "the roll flushed segment 0"
    );
    files.flush(&mut out);
    assert_eq!(files.recovery_point(), Offset(7), "a flush reaches the LEO");
    files.truncate_to(Offset(2), &mut out);
    assert_eq!(files.recovery_point(), Offset(2), "never above the end");
    files.truncate_fully(Offset(20), &mut out);
    assert_eq!(files.recovery_point(), Offset(2));
}

#[test]
fn a_stale_log_start_checkpoint_yields_to_the_first_surviving_segment() {
    // A DeleteRecords to 12 deleted segment 0; the broker crashed before its periodic
    // log-start checkpoint recorded 12, so the checkpoint still says 0 (Kafka LogLoader:
    // `max(logStartOffsetCheckpoint, firstSegment.baseOffset)`).
    let (b10, b15) = (batch(10, 5, 0), batch(15, 5, 0));
    let mut files = BTreeMap::from([(seg_path(10), concat(&[&b10, &b15]))]);
    let mut inputs = unclean(20, Some(20));
    inputs.log_start_checkpoint = Some(Offset(0));
    let (log, _, _) = recover(&mut files, &inputs);
    assert_eq!(
        log.log_start_offset(),
        Offset(10),
        "offsets below 10 are gone: a fetch there must be out of range"
    );
    assert_eq!(log.log_end_offset(), Offset(20));

    // A checkpoint inside the first segment still wins: the prefix it cut stays cut.
    inputs.log_start_checkpoint = Some(Offset(12));
    let (log, _, _) = recover(&mut files, &inputs);
    assert_eq!(log.log_start_offset(), Offset(12));

    // With no checkpoint at all, the first segment's base.
    inputs.log_start_checkpoint = None;
    let (log, _, _) = recover(&mut files, &inputs);
    assert_eq!(log.log_start_offset(), Offset(10));
}
