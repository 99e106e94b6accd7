//! Bit rot in a partition replica's flushed log: the latent corruption that Kafka's recovery
//! finds by CRC (`LogSegment.recover`) and cuts, after which the replica re-fetches.
//!
//! The rot flips one bit of a batch's stored CRC: every field still reads as written and only
//! the checksum tells, which is what any flipped bit in the CRC-covered bytes looks like to
//! recovery. It only hits batches the next recovery scans (the segments from the one holding
//! the checkpointed recovery point, `LogLoader.recoverLog`): below that, Kafka never looks,
//! the rot stays latent, and a leader serving it stalls its followers for good
//! (`AbstractFetcherThread` retries a `CorruptRecordException`), a fault Kafka does not
//! survive without an operator.

use mirror_core::broker::storage::{self, partition_dir};
use mirror_core::protocol::{ClusterIdx, NodeId};
use mirror_core::record::{RecordBatch, codec};
use mirror_core::types::{BrokerId, Offset, TopicPartition};

use super::KafkaWorld;
use crate::world::node::lock;

/// Which flushed batch rots.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RotTarget {
    /// The batch containing this offset.
    Offset(Offset),
    /// Candidate number `n` modulo the number of candidates (chaos draws it).
    Pick(u32),
}

/// A batch that rotted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rotted {
    /// The segment file.
    pub path: String,
    /// First offset of the batch.
    pub base_offset: Offset,
    /// Last offset of the batch.
    pub last_offset: Offset,
}

/// A flushed batch in a scanned segment: (segment path, position, batch).
type Candidate = (String, u64, RecordBatch);

impl KafkaWorld {
    /// Rots a flushed batch of broker `broker`'s replica of `tp` (a bit of its CRC flips on
    /// disk; the running broker does not notice, its next recovery does). Errors say why
    /// nothing rotted: no replica files, nothing flushed in the scanned segments, or an offset
    /// that is not in one of them.
    pub fn rot_batch(
        &self,
        cluster: ClusterIdx,
        broker: BrokerId,
        tp: &TopicPartition,
        target: RotTarget,
    ) -> Result<Rotted, String> {
        let node = NodeId::broker(cluster, broker);
        let who = self.world.node_name(node);
        let disk = self.world.disk(node);
        let mut d = lock(&disk);
        let candidates = candidates(&d, tp);
        if candidates.is_empty() {
            return Err(format!(
                "{who} has no flushed batch of {tp} that recovery would scan"
            ));
        }
        let (path, pos, batch) = match target {
            RotTarget::Pick(n) => {
                let i = usize::try_from(n).unwrap_or(0) % candidates.len();
                candidates[i].clone()
            }
            RotTarget::Offset(o) => candidates
                .iter()
                .find(|(_, _, b)| b.base_offset() <= o && o <= b.last_offset())
                .cloned()
                .ok_or_else(|| {
                    format!(
                        "{who} {tp}: offset {o} is not in a flushed batch that recovery would scan (flushed and scanned: {}..={})",
                        candidates[0].2.base_offset(),
                        candidates[candidates.len() - 1].2.last_offset()
                    )
                })?,
        };
        let salt = match target {
            RotTarget::Pick(n) => n,
            RotTarget::Offset(o) => u32::try_from(o.0.rem_euclid(32)).unwrap_or(0),
        };
        let byte = pos + (codec::CRC as u64) + u64::from(salt % 4);
        let mask = 1u8 << ((salt / 4) % 8);
        if !d.rot(&path, byte, mask) {
            return Err(format!("{who} {path}: byte {byte} is not flushed"));
        }
        drop(d);
        let rotted = Rotted {
            path,
            base_offset: batch.base_offset(),
            last_offset: batch.last_offset(),
        };
        self.world.note(
            &who,
            &tp.to_string(),
            &format!(
                "bit rot in the flushed batch {}-{} ({})",
                rotted.base_offset, rotted.last_offset, rotted.path
            ),
        );
        Ok(rotted)
    }
}

/// Flushed batches of `tp` in the segments its next recovery validates, in offset order.
fn candidates(d: &crate::disk::SimDisk, tp: &TopicPartition) -> Vec<Candidate> {
    let dir = format!("{}/", partition_dir(tp));
    let recovery_point = d
        .read(storage::RECOVERY_POINT_CHECKPOINT)
        .and_then(|b| storage::decode_offset_checkpoint(&b).get(tp).copied())
        .unwrap_or(Offset(0));
    let segments: Vec<(Offset, String)> = d
        .list_under(&dir)
        .into_iter()
        .filter_map(|p| {
            let base = p.strip_prefix(&dir)?.strip_suffix(".log")?.parse().ok()?;
            Some((Offset(base), p))
        })
        .collect();
    // Kafka `LogSegments.values(recoveryPoint, MAX)`: from the floor segment on.
    let first = segments
        .iter()
        .rev()
        .find(|(b, _)| *b <= recovery_point)
        .map_or(Offset(i64::MIN), |(b, _)| *b);
    let mut out = Vec::new();
    for (_, path) in segments.into_iter().filter(|(b, _)| *b >= first) {
        let (Some(bytes), Some(flushed)) = (d.read(&path), d.flushed_len(&path)) else {
            continue;
        };
        let (batches, _) = RecordBatch::decode_many(bytes);
        let mut pos = 0u64;
        for b in batches {
            let end = pos + b.size_in_bytes() as u64;
            if end <= flushed {
                out.push((path.clone(), pos, b));
            }
            pos = end;
        }
    }
    out
}
