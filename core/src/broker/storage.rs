//! How a broker lays its logs out on its (simulated) disk, and how it reads them back after
//! a crash (Kafka: `LocalLog`, `LogSegment`, `LogLoader`, the checkpoint files).
//!
//! ```text
//! <topic>-<partition>/00000000000000000000.log   segments, rolled at log.segment.bytes
//! <topic>-<partition>/leader-epoch-checkpoint     "0\n<n>\n<epoch> <start offset>\n..."
//! <topic>-<partition>/partition.metadata          "version: 0\ntopic_id: <hex>\n"
//! <topic>-<partition>/producer-snapshot           producer state at the log start
//! replication-offset-checkpoint                   "0\n<n>\n<topic> <partition> <hw>\n..."
//! log-start-offset-checkpoint                     same format, log start offsets
//! recovery-point-offset-checkpoint                same format, recovery points
//! ```
//! Appends and truncations go to the page cache; a segment is flushed when it rolls (and on
//! `log.flush.interval.ms` if set), as Kafka does. Checkpoints are written atomically. The
//! recovery point (Kafka: `LocalLog.recoveryPoint`) is the offset below which the log was
//! flushed; recovery after a crash validates from the segment that holds its checkpointed value
//! (see [`super::recovery`]).

use std::collections::BTreeMap;

use bytes::Bytes;

use super::output::IoOp;
use crate::log::epoch_cache::EpochEntry;
use crate::record::RecordBatch;
use crate::types::{Offset, TopicId, TopicPartition};

pub use super::recovery::{LoadedSegments, RecoveredPartition, group_by_partition};

/// One segment file: its base offset, size, and the end position of each batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Segment {
    pub(super) base: Offset,
    pub(super) size: u64,
    /// `(next offset after the batch, end position)` per batch, in order.
    pub(super) index: Vec<(Offset, u64)>,
}

/// The files of one partition replica.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionFiles {
    dir: String,
    segments: Vec<Segment>,
    /// Bytes appended since the last flush of the active segment.
    dirty: bool,
    /// Offsets below this are flushed (Kafka: `LocalLog.recoveryPoint`): raised when a roll
    /// flushes the old segment and by a periodic flush, lowered by truncation.
    recovery_point: Offset,
}

/// Directory name of a partition (Kafka: `<topic>-<partition>`).
#[must_use]
pub fn partition_dir(tp: &TopicPartition) -> String {
    format!("{}-{}", tp.topic, tp.partition)
}

/// File name of the segment starting at `base`.
#[must_use]
pub fn segment_file(base: Offset) -> String {
    let mut s = String::with_capacity(SEGMENT_FILE_LEN);
    push_segment_file(&mut s, base);
    s
}

/// Length of a segment file name: 20 digits and `.log`.
const SEGMENT_FILE_LEN: usize = 24;

/// Path of the segment starting at `base` in partition directory `dir`. Built by hand: a
/// path is made for every append, and `format!` cost more than the append's bookkeeping.
#[must_use]
pub fn segment_path(dir: &str, base: Offset) -> String {
    let mut s = String::with_capacity(dir.len() + 1 + SEGMENT_FILE_LEN);
    s.push_str(dir);
    s.push('/');
    push_segment_file(&mut s, base);
    s
}

/// Appends `format!("{:020}.log", base.0)` to `s`.
fn push_segment_file(s: &mut String, base: Offset) {
    match u64::try_from(base.0) {
        Ok(mut v) => {
            // Zeros, then the digits from the right until none is left (u64::MAX has 20
            // digits, so all fit).
            let mut digits = [b'0'; 20];
            let mut i = digits.len();
            while v > 0 {
                i -= 1;
                // A decimal digit: the cast cannot truncate.
                #[allow(clippy::cast_possible_truncation)]
                let digit = (v % 10) as u8;
                digits[i] = b'0' + digit;
                v /= 10;
            }
            s.extend(digits.iter().map(|&d| char::from(d)));
        }
        Err(_) => s.push_str(&format!("{:020}", base.0)),
    }
    s.push_str(".log");
}

/// Path of the broker's HW checkpoint.
pub const HW_CHECKPOINT: &str = "replication-offset-checkpoint";
/// Path of the broker's log start checkpoint.
pub const LOG_START_CHECKPOINT: &str = "log-start-offset-checkpoint";
/// Path of the broker's recovery point checkpoint (Kafka: `LogManager.RecoveryPointCheckpointFile`).
pub const RECOVERY_POINT_CHECKPOINT: &str = "recovery-point-offset-checkpoint";
/// The marker a clean shutdown leaves (Kafka: `CleanShutdownFileHandler`); with it, recovery
/// scans nothing. The model's brokers only ever stop by a crash, so none writes it.
pub const CLEAN_SHUTDOWN_FILE: &str = ".kafka_cleanshutdown";

impl PartitionFiles {
    /// Files for a new, empty log starting at `start`; emits the directory's metadata file.
    pub fn create(
        tp: &TopicPartition,
        topic_id: TopicId,
        start: Offset,
        out: &mut Vec<IoOp>,
    ) -> Self {
        let dir = partition_dir(tp);
        out.push(IoOp::WriteAtomic {
            path: format!("{dir}/partition.metadata"),
            bytes: Bytes::from(format!("version: 0\ntopic_id: {topic_id}\n")),
        });
        Self {
            dir,
            segments: vec![Segment {
                base: start,
                size: 0,
                index: Vec::new(),
            }],
            dirty: false,
            recovery_point: start,
        }
    }

    /// Files rebuilt by recovery (already matching the disk).
    pub(super) fn recovered(dir: String, segments: Vec<Segment>, recovery_point: Offset) -> Self {
        Self {
            dir,
            segments,
            dirty: false,
            recovery_point,
        }
    }

    /// The same files with their recovery point set (after recovery).
    #[must_use]
    pub(super) fn with_recovery_point(mut self, recovery_point: Offset) -> Self {
        self.recovery_point = recovery_point;
        self
    }

    /// The offset below which the log is flushed (what the recovery point checkpoint records).
    #[must_use]
    pub fn recovery_point(&self) -> Offset {
        self.recovery_point
    }

    /// The base offset of the first segment file (Kafka: `segments.firstSegment.baseOffset`).
    #[must_use]
    pub fn first_segment_base(&self) -> Offset {
        self.segments
            .first()
            .expect("one segment always exists")
            .base
    }

    /// The offset after the last batch in the files.
    #[must_use]
    pub fn log_end_offset(&self) -> Offset {
        let seg = self.segments.last().expect("one segment always exists");
        seg.index.last().map_or(seg.base, |(next, _)| *next)
    }

    /// Every segment file's path with the bytes it must hold, in order (for checkers).
    #[must_use]
    pub fn segment_paths(&self) -> Vec<(String, u64)> {
        self.segments
            .iter()
            .filter(|s| s.size > 0)
            .map(|s| (self.path(s.base), s.size))
            .collect()
    }

    /// The partition's directory.
    #[must_use]
    pub fn dir(&self) -> &str {
        &self.dir
    }

    fn path(&self, base: Offset) -> String {
        segment_path(&self.dir, base)
    }

    /// Appends a batch to the active segment, rolling (and flushing the old segment) first
    /// when the active one is full.
    pub fn append(&mut self, batch: &RecordBatch, segment_bytes: usize, out: &mut Vec<IoOp>) {
        let roll = self.segments.last().is_some_and(|s| {
            s.size > 0 && s.size + batch.size_in_bytes() as u64 > segment_bytes as u64
        });
        if roll {
            let old = self.segments.last().expect("active segment").base;
            out.push(IoOp::Flush {
                path: self.path(old),
            });
            // Kafka `UnifiedLog.roll` flushes up to the new segment's base offset
            // (`flushUptoOffsetExclusive`), which moves the recovery point there.
            self.recovery_point = self.recovery_point.max(batch.base_offset());
            self.segments.push(Segment {
                base: batch.base_offset(),
                size: 0,
                index: Vec::new(),
            });
        }
        let seg = self.segments.last_mut().expect("active segment");
        if seg.index.is_empty() && seg.size == 0 {
            // an empty segment's file is created by its first append, named after that batch
            seg.base = batch.base_offset();
        }
        seg.size += batch.size_in_bytes() as u64;
        seg.index.push((batch.next_offset(), seg.size));
        let path = segment_path(&self.dir, seg.base);
        out.push(IoOp::Append {
            path,
            bytes: batch.bytes().clone(),
        });
        self.dirty = true;
    }

    /// Mirrors `PartitionLog::truncate_to(to)` on disk: batches whose next offset is above
    /// `to` are cut (whole batches, as Kafka's `LogSegment.truncateTo`).
    pub fn truncate_to(&mut self, to: Offset, out: &mut Vec<IoOp>) {
        while self.segments.len() > 1
            && self
                .segments
                .last()
                .is_some_and(|s| s.index.first().is_none_or(|(next, _)| *next > to))
        {
            let s = self.segments.pop().expect("segment");
            out.push(IoOp::Delete {
                path: self.path(s.base),
            });
        }
        let dir = self.dir.clone();
        let seg = self.segments.last_mut().expect("one segment always exists");
        let keep = seg.index.iter().take_while(|(next, _)| *next <= to).count();
        let new_size = if keep == 0 { 0 } else { seg.index[keep - 1].1 };
        if new_size < seg.size {
            seg.index.truncate(keep);
            seg.size = new_size;
            out.push(IoOp::Truncate {
                path: segment_path(&dir, seg.base),
                len: new_size,
            });
        }
        // Kafka `LocalLog.updateLogEndOffset`: the recovery point never stays above the end.
        self.recovery_point = self.recovery_point.min(self.log_end_offset());
    }

    /// Mirrors `truncate_fully_and_start_at(start)`: every segment is deleted and a new empty
    /// one starts at `start`.
    pub fn truncate_fully(&mut self, start: Offset, out: &mut Vec<IoOp>) {
        for s in &self.segments {
            out.push(IoOp::Delete {
                path: self.path(s.base),
            });
        }
        self.segments = vec![Segment {
            base: start,
            size: 0,
            index: Vec::new(),
        }];
        self.dirty = false;
        self.recovery_point = self.recovery_point.min(start);
    }

    /// Deletes segments wholly below `log_start` (Kafka deletes whole segments; the active
    /// segment always stays).
    pub fn delete_below(&mut self, log_start: Offset, out: &mut Vec<IoOp>) {
        while self.segments.len() > 1 && self.segments[1].base <= log_start {
            let s = self.segments.remove(0);
            out.push(IoOp::Delete {
                path: self.path(s.base),
            });
        }
    }

    /// fsync of the active segment if it has unflushed appends; the whole log is then flushed
    /// (Kafka `UnifiedLog.flush` up to the LEO marks the recovery point there).
    pub fn flush(&mut self, out: &mut Vec<IoOp>) {
        if self.dirty {
            let base = self.segments.last().expect("active segment").base;
            out.push(IoOp::Flush {
                path: self.path(base),
            });
            self.dirty = false;
        }
        self.recovery_point = self.recovery_point.max(self.log_end_offset());
    }

    /// Deletes every file of the partition.
    pub fn delete_all(&self, out: &mut Vec<IoOp>) {
        for s in &self.segments {
            out.push(IoOp::Delete {
                path: self.path(s.base),
            });
        }
        for f in [
            "leader-epoch-checkpoint",
            "partition.metadata",
            "producer-snapshot",
        ] {
            out.push(IoOp::Delete {
                path: format!("{}/{f}", self.dir),
            });
        }
    }

    /// Writes the leader epoch checkpoint (Kafka: `LeaderEpochCheckpointFile`).
    pub fn write_epoch_checkpoint(&self, entries: &[EpochEntry], out: &mut Vec<IoOp>) {
        let mut s = format!("0\n{}\n", entries.len());
        for e in entries {
            s.push_str(&format!("{} {}\n", e.epoch.0, e.start_offset.0));
        }
        out.push(IoOp::WriteAtomic {
            path: format!("{}/leader-epoch-checkpoint", self.dir),
            bytes: Bytes::from(s),
        });
    }

    /// Writes the producer snapshot at the log start.
    pub fn write_producer_snapshot(&self, bytes: Bytes, out: &mut Vec<IoOp>) {
        out.push(IoOp::WriteAtomic {
            path: format!("{}/producer-snapshot", self.dir),
            bytes,
        });
    }
}

/// Encodes an offset checkpoint (`replication-offset-checkpoint` format).
#[must_use]
pub fn encode_offset_checkpoint(entries: &BTreeMap<TopicPartition, Offset>) -> Bytes {
    let mut s = format!("0\n{}\n", entries.len());
    for (tp, o) in entries {
        s.push_str(&format!("{} {} {}\n", tp.topic, tp.partition, o.0));
    }
    Bytes::from(s)
}

/// Decodes an offset checkpoint; malformed lines are skipped (Kafka would fail the log dir;
/// the model prefers recovering with HW = log start, which is always safe).
#[must_use]
pub fn decode_offset_checkpoint(bytes: &[u8]) -> BTreeMap<TopicPartition, Offset> {
    let mut out = BTreeMap::new();
    let Ok(text) = std::str::from_utf8(bytes) else {
        return out;
    };
    for line in text.lines().skip(2) {
        let mut it = line.split_whitespace();
        if let (Some(t), Some(p), Some(o)) = (it.next(), it.next(), it.next())
            && let (Ok(p), Ok(o)) = (p.parse::<i32>(), o.parse::<i64>())
        {
            out.insert(TopicPartition::new(t, p), Offset(o));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_paths_are_kafkas_zero_padded_names() {
        // Goal: the hand-built path is byte for byte the `format!` one Kafka's layout gives
        // (`LogFileUtils.filenamePrefixFromOffset`: 20 digits), for every magnitude.
        for base in [0, 7, 10, 99_999, 1 << 40, i64::MAX, -1, i64::MIN] {
            assert_eq!(
                segment_path("t-0", Offset(base)),
                format!("t-0/{:020}.log", base),
                "base {base}"
            );
            assert_eq!(segment_file(Offset(base)), format!("{base:020}.log"));
        }
    }
}
