//! Delayed operations (Kafka: `DelayedProduce`, `DelayedFetch` in a purgatory): requests
//! parked until the HW passes an offset, data arrives, or a deadline passes.

use std::collections::BTreeMap;

use crate::keyed_map::PartitionMap;
use crate::protocol::messages::FetchPartition;
use crate::protocol::{CorrelationId, ErrorCode, NodeId};
use crate::replication::fetch_leader::FetchIsolation;
use crate::time::Instant;
use crate::types::{BrokerId, Offset, TopicPartition};

/// One partition of a delayed produce.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProduceWait {
    /// Partition.
    pub tp: TopicPartition,
    /// The HW must reach this (last offset + 1).
    pub required_offset: Offset,
    /// First offset of the batch, reported to the client.
    pub base_offset: Offset,
    /// Error decided so far (set when the partition is done).
    pub error: Option<ErrorCode>,
}

/// What answers a completed delayed produce.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ProduceReply {
    /// A `Produce` response.
    Produce,
    /// A `PartitionErrors` response (WriteTxnMarkers, coordinator writes).
    PartitionErrors,
}

/// An acks=all produce waiting for replication.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DelayedProduce {
    /// Requester.
    pub from: NodeId,
    /// Its correlation id.
    pub id: CorrelationId,
    /// Give up then (REQUEST_TIMED_OUT).
    pub deadline: Instant,
    /// Partitions.
    pub partitions: Vec<ProduceWait>,
    /// Response shape.
    pub reply: ProduceReply,
}

/// A fetch waiting for data (long poll).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DelayedFetch {
    /// Requester.
    pub from: NodeId,
    /// Its correlation id.
    pub id: CorrelationId,
    /// Respond (possibly empty) then.
    pub deadline: Instant,
    /// Follower identity, if a follower fetch.
    pub replica: Option<(BrokerId, i64)>,
    /// Respond once this many bytes are available.
    pub min_bytes: usize,
    /// Response bound.
    pub max_bytes: usize,
    /// Read bound.
    pub isolation: FetchIsolation,
    /// Partitions to read: an incremental fetch's whole session.
    pub partitions: Vec<FetchPartition>,
    /// KIP-227: how the answer is made (which partitions it names, its session).
    pub context: super::fetch_session::FetchContext,
}

/// A parked operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Delayed {
    /// Waiting for the HW.
    Produce(DelayedProduce),
    /// Waiting for data.
    Fetch(DelayedFetch),
}

impl Delayed {
    /// Its deadline.
    #[must_use]
    pub fn deadline(&self) -> Instant {
        match self {
            Delayed::Produce(p) => p.deadline,
            Delayed::Fetch(f) => f.deadline,
        }
    }

    /// Whether it watches `tp`.
    #[must_use]
    pub fn watches(&self, tp: &TopicPartition) -> bool {
        self.watched().any(|w| w == tp)
    }

    /// The partitions it watches, in request order.
    pub fn watched(&self) -> impl Iterator<Item = &TopicPartition> {
        let (produce, fetch) = match self {
            Delayed::Produce(p) => (p.partitions.as_slice(), &[][..]),
            Delayed::Fetch(f) => (&[][..], f.partitions.as_slice()),
        };
        produce
            .iter()
            .map(|w| &w.tp)
            .chain(fetch.iter().map(|w| &w.tp))
    }
}

/// Parked operations by key, plus a per-partition watch list.
///
/// Taking an operation leaves its key in the other partitions' watch lists, as Kafka's
/// `DelayedOperationPurgatory` leaves a completed operation in its `Watchers` until a purge:
/// a follower's fetch watches every partition it names, and most are taken (answered) long
/// before those partitions change. [`Purgatory::watching`] skips taken keys (keys are never
/// reused), and every list is purged once more than [`PURGE_INTERVAL`] taken operations may
/// be left in them (Kafka's `advanceClock`: `estimatedTotalOperations - numDelayed >
/// purgeInterval`).
#[derive(Clone, Debug, Default)]
pub struct Purgatory {
    next: u64,
    ops: BTreeMap<u64, Delayed>,
    watchers: PartitionMap<Vec<u64>>,
    /// Operations taken since the last purge: their keys may still be in watch lists.
    taken: usize,
}

/// Taken operations left in the watch lists before a purge (Kafka's
/// `fetch.purgatory.purge.interval.requests` default is 1000).
const PURGE_INTERVAL: usize = 1000;

impl Purgatory {
    /// Parks an operation; returns its key (for the deadline timer).
    pub fn park(&mut self, op: Delayed) -> u64 {
        let key = self.next;
        self.next += 1;
        for tp in op.watched() {
            match self.watchers.get_mut(tp) {
                Some(keys) => keys.push(key),
                None => {
                    self.watchers.insert(tp.clone(), vec![key]);
                }
            }
        }
        self.ops.insert(key, op);
        key
    }

    /// Keys of operations watching `tp`, oldest first. Drops the keys of taken operations
    /// from `tp`'s list on the way, as Kafka's `Watchers.tryCompleteWatched` does.
    pub fn watching(&mut self, tp: &TopicPartition) -> Vec<u64> {
        let Some(keys) = self.watchers.get_mut(tp) else {
            return Vec::new();
        };
        // With no operation taken since the last purge, every key is live.
        if self.taken > 0 {
            keys.retain(|k| self.ops.contains_key(k));
        }
        keys.clone()
    }

    /// Keys of every parked operation.
    #[must_use]
    pub fn keys(&self) -> Vec<u64> {
        self.ops.keys().copied().collect()
    }

    /// Borrows an operation.
    #[must_use]
    pub fn get(&self, key: u64) -> Option<&Delayed> {
        self.ops.get(&key)
    }

    /// Borrows an operation mutably.
    pub fn get_mut(&mut self, key: u64) -> Option<&mut Delayed> {
        self.ops.get_mut(&key)
    }

    /// Removes an operation.
    pub fn take(&mut self, key: u64) -> Option<Delayed> {
        let op = self.ops.remove(&key)?;
        self.taken += 1;
        if self.taken > PURGE_INTERVAL {
            self.purge();
        }
        Some(op)
    }

    /// Drops taken keys from every watch list. A list left empty is kept: the partition's
    /// next park reuses it instead of allocating and inserting a new one. The lists number
    /// at most the partitions that ever had an operation parked.
    fn purge(&mut self) {
        let ops = &self.ops;
        for keys in self.watchers.values_mut() {
            keys.retain(|k| ops.contains_key(k));
        }
        self.taken = 0;
    }

    /// Number of parked operations.
    #[must_use]
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// True when nothing is parked.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fetch(tps: &[(&str, i32)]) -> Delayed {
        Delayed::Fetch(DelayedFetch {
            from: NodeId::broker(crate::protocol::ClusterIdx(0), BrokerId(1)),
            id: 1,
            deadline: Instant(500),
            replica: None,
            min_bytes: 1,
            max_bytes: 1 << 20,
            isolation: FetchIsolation::HighWatermark,
            partitions: tps
                .iter()
                .map(|(t, p)| FetchPartition {
                    tp: TopicPartition::new(*t, *p),
                    fetch_offset: Offset(0),
                    current_leader_epoch: None,
                    last_fetched_epoch: None,
                    log_start_offset: Offset(0),
                    topic_id: None,
                })
                .collect(),
            context: crate::broker::fetch_session::FetchContext::Sessionless,
        })
    }

    #[test]
    fn taking_an_operation_removes_it_from_its_partitions_watch_lists_only() {
        // Goal: `take` touches only the taken operation's partitions, and every other
        // operation stays watched on each of its partitions, oldest first.
        let mut p = Purgatory::default();
        let a = p.park(fetch(&[("t", 0), ("t", 1)]));
        let b = p.park(fetch(&[("t", 1), ("u", 0)]));
        let c = p.park(fetch(&[("t", 1)]));
        assert_eq!(p.watching(&TopicPartition::new("t", 1)), vec![a, b, c]);
        assert!(p.take(b).is_some());
        assert_eq!(p.watching(&TopicPartition::new("t", 1)), vec![a, c]);
        assert!(p.watching(&TopicPartition::new("u", 0)).is_empty());
        assert_eq!(p.watching(&TopicPartition::new("t", 0)), vec![a]);
        assert!(p.take(b).is_none());
        assert!(p.take(a).is_some() && p.take(c).is_some());
        assert!(p.is_empty());
        assert!(p.watching(&TopicPartition::new("t", 1)).is_empty());
        let d = p.park(fetch(&[("t", 1)]));
        assert_eq!(p.watching(&TopicPartition::new("t", 1)), vec![d]);
    }

    #[test]
    fn taken_keys_are_purged_from_the_watch_lists_and_live_ones_stay_in_order() {
        // Goal: keys of taken operations linger in the watch lists only until a purge, so
        // the lists stay bounded under a follower's park/answer cycle, and the operations
        // still parked are watched on each of their partitions, oldest first, throughout.
        let mut p = Purgatory::default();
        let old = p.park(fetch(&[("t", 0), ("u", 0)]));
        let mut newest = old;
        for i in 0..10 * PURGE_INTERVAL {
            let k = p.park(fetch(&[("t", 0), ("t", 1), ("t", 2)]));
            if i % 2 == 1 {
                assert!(p.take(newest).is_some());
            }
            newest = k;
            // Each operation watches at most 3 partitions: the lists hold the live ones'
            // keys and at most PURGE_INTERVAL taken ones'.
            let list: usize = p.watchers.values().map(Vec::len).sum();
            assert!(p.taken <= PURGE_INTERVAL, "{}", p.taken);
            assert!(list <= 3 * (p.len() + PURGE_INTERVAL), "{list}");
        }
        let live: Vec<u64> = p.keys().into_iter().filter(|k| *k != old).collect();
        let mut t0 = vec![old];
        t0.extend(&live);
        assert_eq!(p.watching(&TopicPartition::new("t", 0)), t0);
        assert_eq!(p.watching(&TopicPartition::new("t", 2)), live);
        assert_eq!(p.watching(&TopicPartition::new("u", 0)), vec![old]);
        for k in p.keys() {
            p.take(k);
        }
        assert!(p.watching(&TopicPartition::new("t", 0)).is_empty());
    }
}
