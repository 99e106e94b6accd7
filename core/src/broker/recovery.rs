//! Reading a partition replica back from its files after a restart (Kafka: `LogLoader.load`,
//! `LogSegment.recover`, `Partition.createLog`).
//!
//! Recovery is pure: the same files and [`RecoveryInputs`] give the same log, and running it
//! again on the files it left must change nothing (the sim checks that after every restart).
//!
//! Which segments are validated is Kafka's `LogLoader.recoverLog`: after an unclean shutdown
//! (every stop in the model is a crash), the segments from the one holding the checkpointed
//! recovery point on; after a clean shutdown, none. A validated segment is cut at its first
//! invalid batch (a torn tail, or a flushed batch whose CRC no longer matches) and every later
//! segment is deleted. A segment below the recovery point is read as it is, CRC unchecked:
//! bit rot there stays in the log until a reader that checks CRCs meets it (a follower's
//! append, `UnifiedLog.analyzeAndValidateRecords`).

use std::collections::BTreeMap;

use bytes::Bytes;

use super::output::IoOp;
use super::storage::{PartitionFiles, Segment, partition_dir, segment_path};
use crate::log::partition_log::{AppendError, LogConfig, PartitionLog};
use crate::log::producer_snapshot;
use crate::log::producer_state::ProducerStateManager;
use crate::record::{BatchError, RecordBatch};
use crate::types::{Offset, TopicId, TopicPartition};

/// A partition's files as found on disk after a restart.
#[derive(Clone, Debug, Default)]
pub struct RecoveredPartition {
    /// Topic id from `partition.metadata`.
    pub topic_id: Option<TopicId>,
    /// Segments by base offset.
    pub segments: BTreeMap<Offset, Bytes>,
    /// The producer snapshot, if written.
    pub producer_snapshot: Option<Bytes>,
}

/// Which segments recovery validates (Kafka: `LogLoader.recoverLog`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RecoveryScan {
    /// A clean shutdown marker was found: nothing is validated.
    Clean,
    /// An unclean shutdown: segments from the one holding `recovery_point` on are validated
    /// (`segments.values(recoveryPointCheckpoint, MAX)`); 0 when it was never checkpointed.
    Unclean {
        /// The checkpointed recovery point.
        recovery_point: Offset,
    },
}

/// Why recovery cut a segment.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CutKind {
    /// The last append was torn (the bytes end inside a batch).
    Torn,
    /// A whole batch is invalid: its CRC does not match (bit rot), or the framing is broken.
    Corrupt,
}

/// Where recovery cut the log and why.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RecoveryCut {
    /// The first offset lost (the recovered log end).
    pub at: Offset,
    /// Why.
    pub kind: CutKind,
}

/// What recovery found in one partition directory, after validating batches.
#[derive(Clone, Debug)]
pub struct LoadedSegments {
    /// The batches kept, in order.
    pub batches: Vec<RecordBatch>,
    /// Files rebuilt to match (sizes and indexes).
    pub files: PartitionFiles,
    /// Bytes cut from a torn or corrupt tail (and later segments).
    pub truncated_bytes: u64,
    /// The error that ended the valid prefix, if any.
    pub error: Option<BatchError>,
    /// Where and why the log was cut, if it was.
    pub cut: Option<RecoveryCut>,
}

/// Groups a disk image (path → bytes) by partition directory.
#[must_use]
pub fn group_by_partition(
    files: &BTreeMap<String, Bytes>,
) -> BTreeMap<TopicPartition, RecoveredPartition> {
    let mut out: BTreeMap<TopicPartition, RecoveredPartition> = BTreeMap::new();
    for (path, bytes) in files {
        let Some((dir, file)) = path.split_once('/') else {
            continue;
        };
        let Some((topic, part)) = dir.rsplit_once('-') else {
            continue;
        };
        let Ok(partition) = part.parse::<i32>() else {
            continue;
        };
        let entry = out
            .entry(TopicPartition::new(topic, partition))
            .or_default();
        if let Some(base) = file
            .strip_suffix(".log")
            .and_then(|b| b.parse::<i64>().ok())
        {
            entry.segments.insert(Offset(base), bytes.clone());
        } else if file == "producer-snapshot" {
            entry.producer_snapshot = Some(bytes.clone());
        } else if file == "partition.metadata" {
            entry.topic_id = std::str::from_utf8(bytes)
                .ok()
                .and_then(|t| t.lines().find_map(|l| l.strip_prefix("topic_id: ")))
                .and_then(|h| u128::from_str_radix(h.trim(), 16).ok())
                .map(TopicId);
        }
    }
    out
}

/// Loads a partition's segments in order (Kafka: `LogLoader.load` / `recoverLog`). Segments
/// `scan` selects are validated batch by batch (`LogSegment.recover`: `ensureValid`); the
/// first invalid batch ends the log: its segment is truncated there and every later segment
/// deleted. Emits the truncations and deletions that make the files match.
#[must_use]
pub fn load_segments(
    tp: &TopicPartition,
    rec: &RecoveredPartition,
    scan: RecoveryScan,
    out: &mut Vec<IoOp>,
) -> LoadedSegments {
    let dir = partition_dir(tp);
    // The first validated segment: the floor of the recovery point (all when it has none).
    let scan_from = match scan {
        RecoveryScan::Clean => None,
        RecoveryScan::Unclean { recovery_point } => Some(
            rec.segments
                .range(..=recovery_point)
                .next_back()
                .map_or(Offset(i64::MIN), |(b, _)| *b),
        ),
    };
    let mut batches: Vec<RecordBatch> = Vec::new();
    let mut segments = Vec::new();
    let mut truncated_bytes = 0u64;
    let mut error = None;
    for (base, bytes) in &rec.segments {
        if error.is_some() {
            truncated_bytes += bytes.len() as u64;
            out.push(IoOp::Delete {
                path: segment_path(&dir, *base),
            });
            continue;
        }
        let (valid, err) = if scan_from.is_some_and(|f| *base >= f) {
            RecordBatch::decode_many(bytes.clone())
        } else {
            // Not scanned: Kafka reads the file as it is. A batch whose framing or records do
            // not parse cannot be represented by the model and is cut as if scanned; the
            // sim's faults never produce one below the recovery point (torn writes are in the
            // last segment, always scanned; bit rot flips CRC bits).
            RecordBatch::decode_many_unchecked_crc(bytes.clone())
        };
        let mut seg = Segment {
            base: *base,
            size: 0,
            index: Vec::new(),
        };
        for b in valid {
            if batches
                .last()
                .is_some_and(|p| b.base_offset() <= p.last_offset())
            {
                error = Some(BatchError::CorruptRecord {
                    index: 0,
                    reason: "offsets not increasing across batches",
                });
                break;
            }
            seg.size += b.size_in_bytes() as u64;
            seg.index.push((b.next_offset(), seg.size));
            batches.push(b);
        }
        if err.is_some() && error.is_none() {
            error = err;
        }
        if seg.size < bytes.len() as u64 {
            truncated_bytes += bytes.len() as u64 - seg.size;
            out.push(IoOp::Truncate {
                path: segment_path(&dir, *base),
                len: seg.size,
            });
        }
        segments.push(seg);
    }
    if segments.is_empty() {
        segments.push(Segment {
            base: Offset(0),
            size: 0,
            index: Vec::new(),
        });
    }
    let files = PartitionFiles::recovered(dir, segments, Offset(0));
    let log_end = files.log_end_offset();
    let cut = error.as_ref().map(|e| RecoveryCut {
        at: log_end,
        kind: match e {
            BatchError::Truncated { .. } => CutKind::Torn,
            _ => CutKind::Corrupt,
        },
    });
    // Kafka `recoverLog`: after a clean shutdown the recovery point is the log end; otherwise
    // the checkpoint, never above the log end.
    let recovery_point = match scan {
        RecoveryScan::Clean => log_end,
        RecoveryScan::Unclean { recovery_point } => recovery_point.min(log_end),
    };
    LoadedSegments {
        batches,
        files: files.with_recovery_point(recovery_point),
        truncated_bytes,
        error,
        cut,
    }
}

/// A partition's log loaded at start-up, waiting for metadata to say it is ours.
#[derive(Clone, Debug)]
pub struct LoadedPartition {
    /// The loaded segments.
    pub loaded: LoadedSegments,
    /// Topic id from `partition.metadata`.
    pub topic_id: Option<TopicId>,
    /// The producer snapshot, if written.
    pub producer_snapshot: Option<Bytes>,
    /// Which segments were validated.
    pub scan: RecoveryScan,
}

/// What a partition's recovery reads besides its own directory: the broker's checkpoints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecoveryInputs {
    /// Which segments are validated.
    pub scan: RecoveryScan,
    /// Its entry in `log-start-offset-checkpoint`.
    pub log_start_checkpoint: Option<Offset>,
    /// Its entry in `replication-offset-checkpoint`.
    pub hw_checkpoint: Option<Offset>,
}

/// Rebuilds the log from loaded segments (Kafka: the rest of `LogLoader.load` and
/// `Partition.createLog`): the log start is the later of the checkpoint and the first
/// segment's base offset; producer state is the snapshot plus replay; the epoch cache is
/// rebuilt from the batches, which is what `truncateFromEnd(LEO)` leaves of Kafka's
/// checkpointed cache; the HW is the checkpoint clamped into `[log start, LEO]`.
pub fn rebuild_log(
    cfg: LogConfig,
    loaded: &LoadedSegments,
    producer_snapshot: Option<&Bytes>,
    inputs: &RecoveryInputs,
) -> Result<PartitionLog, AppendError> {
    // Kafka `LogLoader.load`: `max(logStartOffsetCheckpoint, segments.firstSegment.baseOffset)`.
    // The checkpoint is written only every `log.flush.start.offset.checkpoint.interval.ms`,
    // so after a crash it can be older than a DeleteRecords whose segments are already gone;
    // the first surviving segment then bounds the log start (mirror fresh seed 707003666:
    // with the stale checkpoint 0 and segments from 3350 on, a log start of 0 served a fetch
    // at 1260 from 3350 instead of OFFSET_OUT_OF_RANGE).
    let first_base = loaded.files.first_segment_base();
    let log_start = inputs
        .log_start_checkpoint
        .map_or(first_base, |c| c.max(first_base));
    let base = producer_snapshot
        .and_then(|s| producer_snapshot::decode(s, cfg.producer_id_expiration_ms).ok())
        .unwrap_or_else(|| ProducerStateManager::new(cfg.producer_id_expiration_ms));
    let hw = inputs.hw_checkpoint.unwrap_or(log_start);
    PartitionLog::recover(cfg, log_start, base, loaded.batches.clone(), hw)
}

/// Both steps of a partition's recovery over its files.
pub fn recover_partition(
    cfg: LogConfig,
    tp: &TopicPartition,
    rec: &RecoveredPartition,
    inputs: &RecoveryInputs,
    out: &mut Vec<IoOp>,
) -> (LoadedSegments, Result<PartitionLog, AppendError>) {
    let loaded = load_segments(tp, rec, inputs.scan, out);
    let log = rebuild_log(cfg, &loaded, rec.producer_snapshot.as_ref(), inputs);
    (loaded, log)
}

/// One partition's recovery as the broker did it: its inputs and the log it produced (a
/// checker repeats it on the files it left).
#[derive(Clone, Debug)]
pub struct RecoveryRecord {
    /// The checkpoints it read.
    pub inputs: RecoveryInputs,
    /// The log it rebuilt, before anything else touched it.
    pub log: PartitionLog,
}

impl PartialEq for RecoveryRecord {
    fn eq(&self, other: &Self) -> bool {
        self.inputs == other.inputs && log_difference(&self.log, &other.log).is_none()
    }
}
impl Eq for RecoveryRecord {}

/// How two recovered logs differ, if they do: batches (byte for byte), log start, LEO, HW,
/// epoch cache, producer state.
#[must_use]
pub fn log_difference(a: &PartitionLog, b: &PartitionLog) -> Option<String> {
    let bounds = |l: &PartitionLog| (l.log_start_offset(), l.log_end_offset(), l.high_watermark());
    if bounds(a) != bounds(b) {
        return Some(format!(
            "(log start, LEO, HW) {:?} vs {:?}",
            bounds(a),
            bounds(b)
        ));
    }
    if a.batch_count() != b.batch_count() {
        return Some(format!(
            "{} batches vs {}",
            a.batch_count(),
            b.batch_count()
        ));
    }
    if let Some((x, _)) = a.batches().zip(b.batches()).find(|(x, y)| x != y) {
        return Some(format!("batch at {} differs", x.base_offset()));
    }
    if a.epoch_cache().epoch_entries() != b.epoch_cache().epoch_entries() {
        return Some(format!(
            "epoch cache {:?} vs {:?}",
            a.epoch_cache().epoch_entries(),
            b.epoch_cache().epoch_entries()
        ));
    }
    if a.producer_state() != b.producer_state() {
        return Some("producer state differs".into());
    }
    None
}

#[cfg(test)]
#[path = "recovery_test.rs"]
mod recovery_test;
