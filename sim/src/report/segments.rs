//! A replica's log as the files Kafka keeps in a partition directory, for `mirrorsim dump`:
//! Kafka's own tools (`kafka-dump-log.sh`, `DumpLogSegments`) can read the result.
//!
//! The broker model already writes byte-exact Kafka v2 batches into segment files rolled at
//! `log.segment.bytes` (`mirror_core::broker::storage`), so the `.log` files are copied batch
//! for batch. What the model does not keep are the indexes; they are rebuilt here the way
//! Kafka's `LogSegment.append` builds them: an offset index entry (last offset of the batch
//! relative to the segment base, position of the batch) and a time index entry once more than
//! `index.interval.bytes` (4096) were appended since the previous entry, plus a final time
//! index entry when a segment is rolled (`onBecomeInactiveSegment`).

use std::collections::BTreeMap;

use bytes::Bytes;
use mirror_core::record::{BatchError, RecordBatch};

/// Kafka's default `index.interval.bytes`.
pub const INDEX_INTERVAL_BYTES: u64 = 4096;

/// Why a partition directory cannot be dumped.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DumpError {
    /// The replica has no segment files (not a replica of the partition, or deleted).
    #[error("no segment files under `{dir}`")]
    NoSegments {
        /// The partition directory.
        dir: String,
    },
    /// A batch offset does not fit a 32-bit index entry relative to its segment base.
    #[error("{file}: offset {offset} is out of range for an index relative to {base}")]
    OffsetOutOfRange {
        /// The segment file.
        file: String,
        /// The segment's base offset.
        base: i64,
        /// The offending offset.
        offset: i64,
    },
}

/// One segment's files, ready to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DumpedSegment {
    /// Base offset (the file names' 20 digits).
    pub base: i64,
    /// The `.log` bytes: the valid batches, exactly as the broker wrote them.
    pub log: Bytes,
    /// The `.index` bytes.
    pub index: Vec<u8>,
    /// The `.timeindex` bytes.
    pub timeindex: Vec<u8>,
    /// Batches in the segment.
    pub batches: usize,
    /// Bytes after the valid prefix that were left out (a torn tail of a crashed replica).
    pub dropped_bytes: u64,
    /// Why the valid prefix ended early, if it did.
    pub error: Option<BatchError>,
}

/// A partition directory in Kafka's layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DumpedPartition {
    /// Segments by base offset.
    pub segments: Vec<DumpedSegment>,
    /// `leader-epoch-checkpoint`, as the broker wrote it (already Kafka's text format).
    pub leader_epoch_checkpoint: Option<Bytes>,
    /// `partition.metadata` with the topic id in Kafka's base64 form.
    pub partition_metadata: Option<String>,
}

impl DumpedPartition {
    /// File name → bytes, in Kafka's names.
    #[must_use]
    pub fn files(&self) -> BTreeMap<String, Vec<u8>> {
        let mut out = BTreeMap::new();
        for s in &self.segments {
            out.insert(format!("{:020}.log", s.base), s.log.to_vec());
            out.insert(format!("{:020}.index", s.base), s.index.clone());
            out.insert(format!("{:020}.timeindex", s.base), s.timeindex.clone());
        }
        if let Some(c) = &self.leader_epoch_checkpoint {
            out.insert("leader-epoch-checkpoint".into(), c.to_vec());
        }
        if let Some(m) = &self.partition_metadata {
            out.insert("partition.metadata".into(), m.clone().into_bytes());
        }
        out
    }
}

/// Builds the Kafka files of the partition directory `dir` (`orders-0`) from a broker's disk
/// files (path → bytes, paths `dir/<file>`).
///
/// # Errors
/// [`DumpError::NoSegments`] if the directory has no `.log` file; [`DumpError::OffsetOutOfRange`]
/// if an offset is more than `u32::MAX` above its segment base.
pub fn dump_partition(
    files: &BTreeMap<String, Bytes>,
    dir: &str,
) -> Result<DumpedPartition, DumpError> {
    let prefix = format!("{dir}/");
    let mut logs: BTreeMap<i64, (&str, &Bytes)> = BTreeMap::new();
    let mut checkpoint = None;
    let mut metadata = None;
    for (path, bytes) in files {
        let Some(name) = path.strip_prefix(&prefix) else {
            continue;
        };
        if let Some(base) = name
            .strip_suffix(".log")
            .and_then(|b| b.parse::<i64>().ok())
        {
            logs.insert(base, (name, bytes));
        } else if name == "leader-epoch-checkpoint" {
            checkpoint = Some(bytes.clone());
        } else if name == "partition.metadata" {
            metadata = partition_metadata(bytes);
        }
    }
    if logs.is_empty() {
        return Err(DumpError::NoSegments {
            dir: dir.to_string(),
        });
    }
    let last = logs.keys().next_back().copied();
    let segments = logs
        .iter()
        .map(|(base, (name, bytes))| segment(name, *base, bytes, Some(*base) != last))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(DumpedPartition {
        segments,
        leader_epoch_checkpoint: checkpoint,
        partition_metadata: metadata,
    })
}

/// Rebuilds one segment's indexes; `rolled` segments get Kafka's final time index entry.
fn segment(name: &str, base: i64, bytes: &Bytes, rolled: bool) -> Result<DumpedSegment, DumpError> {
    let (batches, error) = RecordBatch::decode_many(bytes.clone());
    let relative = |offset: i64| {
        u32::try_from(offset - base).map_err(|_| DumpError::OffsetOutOfRange {
            file: name.to_string(),
            base,
            offset,
        })
    };
    let mut index = Vec::new();
    let mut timeindex = Vec::new();
    let mut last_time_entry = (-1i64, 0u32);
    let mut max_ts: (i64, u32) = (-1, 0);
    let mut since_last_entry = 0u64;
    let mut position = 0u64;
    for b in &batches {
        let last = relative(b.last_offset().0)?;
        if b.max_timestamp() > max_ts.0 {
            max_ts = (b.max_timestamp(), last);
        }
        if since_last_entry > INDEX_INTERVAL_BYTES {
            index.extend_from_slice(&last.to_be_bytes());
            // A segment is far below 4 GiB (log.segment.bytes is an int).
            index.extend_from_slice(&u32::try_from(position).unwrap_or(u32::MAX).to_be_bytes());
            push_time_entry(&mut timeindex, &mut last_time_entry, max_ts);
            since_last_entry = 0;
        }
        since_last_entry += b.size_in_bytes() as u64;
        position += b.size_in_bytes() as u64;
    }
    if rolled {
        push_time_entry(&mut timeindex, &mut last_time_entry, max_ts);
    }
    let log = bytes.slice(..usize::try_from(position).unwrap_or(bytes.len()));
    Ok(DumpedSegment {
        base,
        dropped_bytes: bytes.len() as u64 - position,
        log,
        index,
        timeindex,
        batches: batches.len(),
        error,
    })
}

/// Kafka's `TimeIndex.maybeAppend`: only a strictly larger timestamp gets an entry.
fn push_time_entry(out: &mut Vec<u8>, last: &mut (i64, u32), entry: (i64, u32)) {
    if entry.0 > last.0 {
        out.extend_from_slice(&entry.0.to_be_bytes());
        out.extend_from_slice(&entry.1.to_be_bytes());
        *last = entry;
    }
}

/// `partition.metadata` with the topic id as Kafka prints a `Uuid` (URL-safe base64 of its
/// 16 bytes, no padding). The model writes it in hex.
fn partition_metadata(bytes: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(bytes).ok()?;
    let hex = text.lines().find_map(|l| l.strip_prefix("topic_id: "))?;
    let id = u128::from_str_radix(hex.trim(), 16).ok()?;
    Some(format!(
        "version: 0\ntopic_id: {}\n",
        base64_url(&id.to_be_bytes())
    ))
}

/// URL-safe base64 without padding (`java.util.Base64.getUrlEncoder().withoutPadding()`).
#[must_use]
pub fn base64_url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    out
}

/// Reads a `.index` file back: `(relative offset, position)` entries.
#[must_use]
pub fn parse_index(bytes: &[u8]) -> Vec<(u32, u32)> {
    bytes
        .chunks_exact(8)
        .map(|c| {
            (
                u32::from_be_bytes([c[0], c[1], c[2], c[3]]),
                u32::from_be_bytes([c[4], c[5], c[6], c[7]]),
            )
        })
        .collect()
}

/// Reads a `.timeindex` file back: `(timestamp, relative offset)` entries.
#[must_use]
pub fn parse_timeindex(bytes: &[u8]) -> Vec<(i64, u32)> {
    bytes
        .chunks_exact(12)
        .map(|c| {
            let mut ts = [0u8; 8];
            ts.copy_from_slice(&c[..8]);
            (
                i64::from_be_bytes(ts),
                u32::from_be_bytes([c[8], c[9], c[10], c[11]]),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use mirror_core::record::{BatchBuilder, SimpleRecord};
    use mirror_core::types::Offset;

    fn batch(base: i64, n: usize, ts: i64, size: usize) -> RecordBatch {
        let recs: Vec<SimpleRecord> = (0..n)
            .map(|i| SimpleRecord::value(ts + i as i64, vec![b'x'; size]))
            .collect();
        BatchBuilder::new().base_offset(Offset(base)).build(&recs)
    }

    fn disk(segments: &[(i64, Vec<RecordBatch>)]) -> BTreeMap<String, Bytes> {
        let mut files = BTreeMap::new();
        for (base, batches) in segments {
            let mut v = Vec::new();
            for b in batches {
                v.extend_from_slice(b.bytes());
            }
            files.insert(format!("t-0/{base:020}.log"), Bytes::from(v));
        }
        files.insert(
            "t-0/partition.metadata".into(),
            Bytes::from(format!("version: 0\ntopic_id: {:032x}\n", 1u128 << 64 | 2)),
        );
        files
    }

    #[test]
    fn base64_matches_java_url_encoder() {
        assert_eq!(base64_url(b""), "");
        assert_eq!(base64_url(b"f"), "Zg");
        assert_eq!(base64_url(b"fo"), "Zm8");
        assert_eq!(base64_url(b"foo"), "Zm9v");
        assert_eq!(base64_url(&[0xfb, 0xff]), "-_8");
        // Kafka: new Uuid(1L, 2L).toString()
        assert_eq!(
            base64_url(&((1u128 << 64) | 2).to_be_bytes()),
            "AAAAAAAAAAEAAAAAAAAAAg"
        );
    }

    #[test]
    fn index_entries_follow_kafka_append_rules() {
        // 20 batches of ~1.1 KB: entries appear once more than 4096 bytes were appended.
        let batches: Vec<RecordBatch> = (0..20).map(|i| batch(i * 2, 2, 1_000 + i, 500)).collect();
        let size = batches[0].size_in_bytes() as u64;
        let d = dump_partition(&disk(&[(0, batches.clone())]), "t-0").unwrap();
        let seg = &d.segments[0];
        let idx = parse_index(&seg.index);
        let per_entry = INDEX_INTERVAL_BYTES / size + 1;
        assert_eq!(idx.len() as u64, (20 - 1) / per_entry, "{idx:?}");
        for (rel, pos) in &idx {
            let k = (u64::from(*pos) / size) as usize;
            assert_eq!(u64::from(*pos), k as u64 * size, "at a batch start");
            assert_eq!(
                i64::from(*rel),
                batches[k].last_offset().0,
                "last offset of that batch"
            );
        }
        let ti = parse_timeindex(&seg.timeindex);
        assert_eq!(ti.len(), idx.len(), "active segment: no final entry");
        assert!(ti.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(seg.log.len() as u64, 20 * size);
        assert_eq!(
            d.partition_metadata.as_deref(),
            Some("version: 0\ntopic_id: AAAAAAAAAAEAAAAAAAAAAg\n")
        );
    }

    #[test]
    fn rolled_segments_end_with_a_time_entry_and_torn_tails_are_dropped() {
        let first = vec![batch(0, 1, 5, 10), batch(1, 1, 9, 10)];
        let second = vec![batch(2, 1, 20, 10)];
        let mut files = disk(&[(0, first), (2, second)]);
        let p = "t-0/00000000000000000002.log".to_string();
        let mut torn = files[&p].to_vec();
        torn.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 3, 0, 0]);
        files.insert(p, Bytes::from(torn));
        let d = dump_partition(&files, "t-0").unwrap();
        assert_eq!(parse_timeindex(&d.segments[0].timeindex), vec![(9, 1)]);
        assert!(d.segments[1].timeindex.is_empty());
        assert_eq!(d.segments[1].dropped_bytes, 10);
        assert_eq!(d.segments[1].batches, 1);
        assert_eq!(
            dump_partition(&files, "u-0"),
            Err(DumpError::NoSegments { dir: "u-0".into() })
        );
    }
}
