//! `recovery_idempotent`: recovery leaves files that recover to the same log.
//!
//! After every restart, each partition the broker rebuilt (`LogRecovered`) is recovered a
//! second time, from the files the first recovery left on the broker's disk and with the same
//! checkpoints it read. Nothing may be left to cut (no torn tail or invalid batch still in a
//! file, no segment it should have deleted) and the log must come out the same: batches, log
//! start, LEO, HW, epoch cache, producer state. A recovery that fixes its in-memory log but
//! not the file passes every other check until the next crash, when the bytes it left behind
//! cut away whatever was appended after them.
//!
//! At the end of a run, every live replica's segment files hold exactly its log from its log
//! start (`files_hold_logs`): appends, truncations and deletions all reached the disk.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use mirror_core::broker::recovery::{self, RecoveryRecord};
use mirror_core::broker::storage::partition_dir;
use mirror_core::broker::{IoOp, partition::Partition};
use mirror_core::log::partition_log::PartitionLog;
use mirror_core::log::producer_snapshot;
use mirror_core::log::producer_state::ProducerStateManager;
use mirror_core::protocol::NodeId;
use mirror_core::record::{RecordBatch, codec};
use mirror_core::types::{Offset, ProducerId, TopicPartition};

use super::Violation;
use super::log_invariants::{NodeMap, with_partition};
use crate::disk::SimDisk;
use crate::world::node::lock;

/// Each broker's disk (the same `Arc`s the world drives; they outlive restarts).
pub type DiskMap = BTreeMap<NodeId, Arc<Mutex<SimDisk>>>;

const INVARIANT: &str = "recovery_idempotent";

/// The files under a partition's directory, as a disk image.
fn partition_image(disk: &SimDisk, tp: &TopicPartition) -> BTreeMap<String, Bytes> {
    let dir = format!("{}/", partition_dir(tp));
    disk.list_under(&dir)
        .into_iter()
        .filter_map(|p| disk.read(&p).map(|b| (p, b)))
        .collect()
}

/// The files under `tp`'s directory on `node`'s disk, if the world has that disk.
fn image_on(disks: &DiskMap, node: NodeId, tp: &TopicPartition) -> Option<BTreeMap<String, Bytes>> {
    disks.get(&node).map(|d| partition_image(&lock(d), tp))
}

/// Repeats the recovery of `tp` on `node` from the files it left; `Err` describes what a
/// second recovery would change or rebuild differently.
pub fn check_recovered(
    disks: &DiskMap,
    node: NodeId,
    tp: &TopicPartition,
    record: &RecoveryRecord,
    name: &dyn Fn(NodeId) -> String,
) -> Result<(), Violation> {
    let Some(image) = image_on(disks, node, tp) else {
        return Ok(());
    };
    let rec = recovery::group_by_partition(&image)
        .remove(tp)
        .unwrap_or_default();
    let mut ops = Vec::new();
    let (loaded, log) = recovery::recover_partition(
        record.log.config().clone(),
        tp,
        &rec,
        &record.inputs,
        &mut ops,
    );
    let fail = |detail: String| {
        Err(Violation::new(
            INVARIANT,
            name(node),
            Some(tp),
            None,
            detail,
        ))
    };
    if !ops.is_empty() {
        return fail(format!(
            "a second recovery of the files the first left would change them ({} bytes to cut: {}; {:?})",
            loaded.truncated_bytes,
            ops.iter().map(describe).collect::<Vec<_>>().join(", "),
            loaded.error,
        ));
    }
    match log {
        Err(e) => fail(format!("a second recovery fails: {e}")),
        Ok(again) => match recovery::log_difference(&record.log, &again) {
            Some(d) => fail(format!("a second recovery rebuilds another log: {d}")),
            None => Ok(()),
        },
    }
}

fn describe(op: &IoOp) -> String {
    match op {
        IoOp::Truncate { path, len } => format!("truncate {path} to {len}"),
        IoOp::Delete { path } => format!("delete {path}"),
        other => format!("{other:?}"),
    }
}

/// End of run: every live replica's segment files hold exactly its batches from its log start
/// (a segment may still begin below it: Kafka deletes whole segments only).
pub fn files_hold_logs(
    disks: &DiskMap,
    nodes: &NodeMap,
    live: &dyn Fn(NodeId) -> bool,
    name: &dyn Fn(NodeId) -> String,
) -> Result<(), Violation> {
    for (node, disk) in disks {
        if !live(*node) {
            continue;
        }
        let tps: Vec<TopicPartition> = {
            let Some(arc) = nodes.get(node) else {
                continue;
            };
            let g = lock(arc);
            let Some(b) = g.as_broker() else {
                continue;
            };
            b.partitions().map(|(tp, _)| tp.clone()).collect()
        };
        for tp in tps {
            let image = partition_image(&lock(disk), &tp);
            let r = with_partition(nodes, *node, &tp, |p| files_difference(&image, p));
            if let Some(Some(d)) = r {
                return Err(Violation::new(
                    INVARIANT,
                    name(*node),
                    Some(&tp),
                    None,
                    format!("the files do not hold the log: {d}"),
                ));
            }
        }
    }
    Ok(())
}

/// After a truncation or a log-start move: the producer snapshot on `node`'s disk holds the
/// open transactions of `tp`'s producer state at its log start, which a restart replays the
/// log on (`snapshot_difference`).
pub fn check_producer_snapshot(
    disks: &DiskMap,
    node: NodeId,
    tp: &TopicPartition,
    nodes: &NodeMap,
    name: &dyn Fn(NodeId) -> String,
) -> Result<(), Violation> {
    let Some(image) = image_on(disks, node, tp) else {
        return Ok(());
    };
    match with_partition(nodes, node, tp, |p| snapshot_difference(&image, &p.log)) {
        Some(Some(d)) => Err(Violation::new(INVARIANT, name(node), Some(tp), None, d)),
        _ => Ok(()),
    }
}

/// How a replica's segment files or producer snapshot differ from its log, if they do.
fn files_difference(image: &BTreeMap<String, Bytes>, p: &Partition) -> Option<String> {
    let log = &p.log;
    if let Some(d) = snapshot_difference(image, log) {
        return Some(d);
    }
    if files_are_log(image, log) {
        return None;
    }
    let mut on_disk: Vec<RecordBatch> = Vec::new();
    for (path, bytes) in image.iter().filter(|(p, _)| p.ends_with(".log")) {
        let (batches, err) = RecordBatch::decode_many_unchecked_crc(bytes.clone());
        if let Some(e) = err {
            return Some(format!("{path}: {e} after {} batches", batches.len()));
        }
        on_disk.extend(batches);
    }
    let start = log.log_start_offset();
    on_disk.retain(|b| b.last_offset() >= start);
    if on_disk.len() != log.batch_count() {
        return Some(format!(
            "{} batches on disk from the log start {start}, {} in the log",
            on_disk.len(),
            log.batch_count()
        ));
    }
    on_disk
        .iter()
        .zip(log.batches())
        .find(|(d, m)| d != m)
        .map(|(d, _)| format!("batch at {} differs", d.base_offset()))
}

/// Open transactions by producer: what a restart's replay starts from.
fn open_txns(psm: &ProducerStateManager) -> BTreeMap<ProducerId, Offset> {
    psm.active_producers()
        .iter()
        .filter_map(|(pid, e)| e.current_txn_first_offset.map(|o| (*pid, o)))
        .collect()
}

/// How the producer snapshot on disk differs from the log's producer state at its log start
/// (its base), in the open transactions a restart would replay on top of it. Kafka deletes
/// the snapshots a truncation passes (`truncateFullyAndStartAt` all of them), so a restart
/// never replays the new history over a snapshot of the old one (mirror chaos seed 6872: an
/// old source transaction left open after the failback's truncation below the log start).
/// Idle producers may differ: expiry drops them from memory and from the next load alike.
fn snapshot_difference(image: &BTreeMap<String, Bytes>, log: &PartitionLog) -> Option<String> {
    let want = open_txns(log.producer_state_base());
    let on_disk = match image
        .iter()
        .find(|(p, _)| p.ends_with("/producer-snapshot"))
    {
        None => BTreeMap::new(),
        Some((path, bytes)) => {
            match producer_snapshot::decode(bytes, log.config().producer_id_expiration_ms) {
                Ok(psm) => open_txns(&psm),
                Err(e) => return Some(format!("{path}: {e:?}")),
            }
        }
    };
    (on_disk != want).then(|| {
        format!(
            "the producer snapshot holds open transactions {on_disk:?}, the log's state at its start {want:?}"
        )
    })
}

/// True when the segment files hold exactly the log's batches, byte for byte, and no batch
/// below the log start: the usual answer, told by the batches' framing alone. Anything else
/// (a frame that does not parse, a difference, a batch below the log start, which the full
/// check decodes too) is left to the full check, which decodes every record and says where
/// they differ; when this says true, the full check finds no difference either (the log's
/// batches were validated when they were built).
fn files_are_log(image: &BTreeMap<String, Bytes>, log: &PartitionLog) -> bool {
    let start = log.log_start_offset().0;
    let mut want = log.batches();
    for bytes in image
        .iter()
        .filter(|(p, _)| p.ends_with(".log"))
        .map(|(_, b)| b)
    {
        let mut rest: &[u8] = bytes;
        while !rest.is_empty() {
            let Ok(total) = codec::frame_len_unchecked_crc(rest) else {
                return false;
            };
            let (frame, tail) = rest.split_at(total);
            rest = tail;
            let at = |i: usize, n: usize| &frame[i..i + n];
            let base = i64::from_be_bytes(at(codec::BASE_OFFSET, 8).try_into().expect("8"));
            let last_delta =
                i32::from_be_bytes(at(codec::LAST_OFFSET_DELTA, 4).try_into().expect("4"));
            if base.saturating_add(i64::from(last_delta)) < start {
                return false;
            }
            if want.next().is_none_or(|b| b.bytes()[..] != *frame) {
                return false;
            }
        }
    }
    want.next().is_none()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use mirror_core::broker::storage::PartitionFiles;
    use mirror_core::log::partition_log::{LogConfig, PartitionLog};
    use mirror_core::record::{BatchBuilder, SimpleRecord};
    use mirror_core::types::{LeaderEpoch, ProducerEpoch, Sequence, TopicId};

    fn batch(base: i64) -> RecordBatch {
        BatchBuilder::new()
            .base_offset(Offset(base))
            .leader_epoch(LeaderEpoch(0))
            .build(&[SimpleRecord::value(base, format!("v{base}"))])
    }

    /// A replica holding batches 0, 1, 2 with log start `start`, and a segment image.
    fn replica(start: i64) -> Partition {
        let tp = TopicPartition::new("t", 0);
        let mut log = PartitionLog::new(LogConfig::default());
        for b in 0..3 {
            log.append_as_follower(&batch(b), None).unwrap();
        }
        log.maybe_update_high_watermark(Offset(3));
        log.maybe_increment_log_start_offset(Offset(start)).unwrap();
        let files = PartitionFiles::create(&tp, TopicId(1), Offset(0), &mut Vec::new());
        Partition::new(tp, TopicId(1), log, files)
    }

    fn image(batches: &[RecordBatch], tail: &[u8]) -> BTreeMap<String, Bytes> {
        let mut b = BytesMut::new();
        for x in batches {
            b.extend_from_slice(x.bytes());
        }
        b.extend_from_slice(tail);
        BTreeMap::from([("t-0/00000000000000000000.log".to_string(), b.freeze())])
    }

    #[test]
    fn files_must_hold_the_log_from_its_start_and_nothing_else() {
        let all = [batch(0), batch(1), batch(2)];
        assert_eq!(files_difference(&image(&all, b""), &replica(0)), None);
        // A segment may begin below the log start (whole segments are deleted).
        assert_eq!(files_difference(&image(&all, b""), &replica(2)), None);
        // A torn tail left in the file.
        let next = batch(3);
        let d = files_difference(&image(&all, &next.bytes()[..20]), &replica(0)).unwrap();
        assert!(d.contains("after 3 batches"), "{d}");
        // A batch the log no longer has (a truncation that did not reach the disk).
        let more = [batch(0), batch(1), batch(2), batch(3)];
        assert!(files_difference(&image(&more, b""), &replica(0)).is_some());
        // An append that did not reach the disk.
        assert!(files_difference(&image(&all[..2], b""), &replica(0)).is_some());
    }

    #[test]
    fn the_framing_shortcut_answers_only_for_files_that_are_the_log() {
        // Goal: `files_are_log` may say true only where the full decode finds no difference,
        // and says false (leaving the answer to the full check) for everything else,
        // including a batch below the log start, which the full check still decodes.
        let all = [batch(0), batch(1), batch(2)];
        assert!(files_are_log(&image(&all, b""), &replica(0).log));
        assert!(!files_are_log(&image(&all, b""), &replica(2).log));
        assert!(!files_are_log(&image(&all[..2], b""), &replica(0).log));
        assert!(!files_are_log(
            &image(&all, &batch(3).bytes()[..20]),
            &replica(0).log
        ));
        let mut other = BytesMut::from(&batch(2).bytes()[..]);
        // The value's first byte ("v2" is followed only by the header count).
        let at = other.len() - 3;
        other[at] ^= 1;
        let other = RecordBatch::decode_many_unchecked_crc(other.freeze()).0;
        let changed = [batch(0), batch(1), other[0].clone()];
        assert!(!files_are_log(&image(&changed, b""), &replica(0).log));
        let d = files_difference(&image(&changed, b""), &replica(0)).unwrap();
        assert!(d.contains("batch at 2 differs"), "{d}");
    }

    #[test]
    fn the_producer_snapshot_must_hold_the_log_starts_open_transactions() {
        // A log whose start (2) lies above an open transaction at 0: its base state has it.
        let mut log = PartitionLog::new(LogConfig::default());
        let txn = BatchBuilder::transactional(ProducerId(7), ProducerEpoch(0), Sequence(0))
            .leader_epoch(LeaderEpoch(0))
            .build(&[SimpleRecord::value(0, "t")]);
        log.append_as_follower(&txn, None).unwrap();
        for b in 1..3 {
            log.append_as_follower(&batch(b), None).unwrap();
        }
        log.maybe_update_high_watermark(Offset(3));
        log.maybe_increment_log_start_offset(Offset(2)).unwrap();
        let with = |psm: &ProducerStateManager| {
            BTreeMap::from([(
                "t-0/producer-snapshot".to_string(),
                producer_snapshot::encode(psm),
            )])
        };
        assert_eq!(
            snapshot_difference(&with(log.producer_state_base()), &log),
            None
        );
        // No snapshot on disk: a restart would replay from an empty state.
        let d = snapshot_difference(&BTreeMap::new(), &log).unwrap();
        assert!(d.contains("holds open transactions {}"), "{d}");
        // A restart of the log below its first batch forgets the transaction; the old
        // snapshot left on disk would bring it back (mirror chaos seed 6872).
        let old = with(log.producer_state_base());
        assert!(log.truncate_to(Offset(1)).unwrap());
        let d = snapshot_difference(&old, &log).unwrap();
        assert!(d.contains("{ProducerId(7): Offset(0)}"), "{d}");
        assert_eq!(
            snapshot_difference(&with(log.producer_state_base()), &log),
            None
        );
    }
}
