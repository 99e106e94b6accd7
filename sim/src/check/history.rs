//! What clients saw (Jepsen-style history checks): consumers read committed data at the
//! right offsets and in order, and no acknowledged write is lost.

use std::collections::BTreeMap;

use bytes::Bytes;
use mirror_core::protocol::ClusterIdx;
use mirror_core::record::RecordBatch;
use mirror_core::types::{Offset, TopicPartition};

use super::Violation;
use super::ghost::Ghost;
use super::log_invariants::{NodeMap, with_partition};
use mirror_core::protocol::NodeId;

/// Per-consumer reading state.
#[derive(Clone, Debug, Default)]
pub struct History {
    last: BTreeMap<(ClusterIdx, u32, TopicPartition), Offset>,
    /// Records consumed.
    pub consumed: u64,
}

/// The value at `offset` inside `batch`.
#[must_use]
pub fn value_at(batch: &RecordBatch, offset: Offset) -> Option<Option<Bytes>> {
    let delta = i32::try_from(offset.0 - batch.base_offset().0).ok()?;
    batch
        .records()
        .into_iter()
        .find(|r| r.offset_delta == delta)
        .map(|r| r.value)
}

impl History {
    /// A consumer returned `(offset, value)`: it must not repeat the offset it returned last
    /// (a consumer only re-reads after a seek or restart, which start from an earlier committed
    /// position), and below the true HW the value must be the committed one (ConsistentRead).
    #[allow(clippy::too_many_arguments)]
    pub fn on_consumed(
        &mut self,
        cluster: ClusterIdx,
        client: u32,
        tp: &TopicPartition,
        offset: Offset,
        value: &Bytes,
        ghost: &Ghost,
        node: &str,
    ) -> Result<(), Violation> {
        self.consumed += 1;
        let key = (cluster, client, tp.clone());
        if self.last.get(&key) == Some(&offset) {
            return Err(Violation::new(
                "consumer_order",
                node,
                Some(tp),
                Some(offset),
                "the consumer returned the same offset twice in a row",
            ));
        }
        self.last.insert(key, offset);
        if let Some(g) = ghost.partitions.get(&(cluster, tp.clone()))
            && offset < g.true_hw
            && let Some(b) = g.committed_batch(offset)
            && let Some(committed) = value_at(b, offset)
            && committed.as_ref() != Some(value)
        {
            return Err(Violation::new(
                "consistent_read",
                node,
                Some(tp),
                Some(offset),
                format!("read {value:?} but the committed record is {committed:?}"),
            ));
        }
        Ok(())
    }
}

/// End-of-run validation: every acks=all write, on a partition with no declared data loss,
/// is in the log of the current leader at its offset (unless retention removed it).
pub fn check_no_lost_acked_writes(
    ghost: &Ghost,
    nodes: &NodeMap,
    name: &dyn Fn(NodeId) -> String,
) -> Result<(), Violation> {
    for w in ghost.acked.iter().filter(|w| w.acks == -1) {
        let g = ghost.partitions.get(&(w.cluster, w.tp.clone()));
        if g.is_some_and(|g| g.declared_losses > 0) {
            continue;
        }
        let leader = nodes.keys().copied().find(|n| {
            n.cluster == w.cluster
                && with_partition(nodes, *n, &w.tp, |p| p.is_leader()).unwrap_or(false)
        });
        let Some(leader) = leader else {
            continue; // offline partition at the end: nothing to read
        };
        for (i, v) in w.values.iter().enumerate() {
            let offset = w.base_offset.plus(i as i64);
            let found = with_partition(nodes, leader, &w.tp, |p| {
                if offset < p.log.log_start_offset() {
                    return Ok(());
                }
                match p
                    .log
                    .batch_containing(offset)
                    .and_then(|b| value_at(b, offset))
                {
                    Some(Some(got)) if got == *v => Ok(()),
                    other => Err(format!(
                        "acknowledged {v:?} (event #{}) but the leader has {other:?}",
                        w.event_seq
                    )),
                }
            });
            if let Some(Err(detail)) = found {
                return Err(Violation::new(
                    "no_lost_acked_write",
                    name(leader),
                    Some(&w.tp),
                    Some(offset),
                    detail,
                ));
            }
        }
    }
    Ok(())
}
