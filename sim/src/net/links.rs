//! Link vocabulary: latency distributions, node sets, directed link selectors and the fault
//! state (partitions, clogs, latency spikes) that the router consults on every message.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use madsim::time::Instant;
use mirror_core::protocol::{ClusterIdx, NodeId};
use rand::Rng;

/// How long a message takes on a link, before FIFO queuing and spikes.
#[derive(Clone, Debug, PartialEq)]
pub enum LatencyDist {
    /// Always the same.
    Fixed(Duration),
    /// Uniform in `[min, max]`.
    Uniform {
        /// Lower bound.
        min: Duration,
        /// Upper bound (inclusive).
        max: Duration,
    },
    /// `min` plus an exponential extra with mean `mean_extra`, capped at `max`: the long
    /// tail of a WAN link, where most round trips are near the floor and a few are slow.
    LongTail {
        /// Propagation floor.
        min: Duration,
        /// Mean of the exponential part.
        mean_extra: Duration,
        /// Cap, so one draw cannot stall a run.
        max: Duration,
    },
}

impl LatencyDist {
    /// Draws one latency. Uses exactly one RNG draw (none for `Fixed`), so adding a link
    /// does not shift other links' draws more than necessary.
    pub fn sample(&self, rng: &mut impl Rng) -> Duration {
        match *self {
            LatencyDist::Fixed(d) => d,
            LatencyDist::Uniform { min, max } => {
                let (lo, hi) = (nanos(min), nanos(max).max(nanos(min)));
                Duration::from_nanos(rng.gen_range(lo..=hi))
            }
            LatencyDist::LongTail {
                min,
                mean_extra,
                max,
            } => {
                let u: f64 = rng.r#gen();
                let extra = -(1.0 - u).ln() * mean_extra.as_secs_f64();
                (min + Duration::from_secs_f64(extra.min(3600.0))).min(max.max(min))
            }
        }
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Latencies and loss of the whole network.
#[derive(Clone, Debug, PartialEq)]
pub struct NetConfig {
    /// Links inside one cluster (same data centre).
    pub intra: LatencyDist,
    /// Links between clusters, unless `per_pair` says otherwise.
    pub wan: LatencyDist,
    /// Overrides per ordered (sender cluster, receiver cluster) pair; also allowed for
    /// `(c, c)` to give one cluster a slower LAN.
    pub per_pair: BTreeMap<(ClusterIdx, ClusterIdx), LatencyDist>,
    /// Probability that a message is silently dropped at send time (clients time out and
    /// retry, as Kafka's do).
    pub packet_loss_rate: f64,
}

impl Default for NetConfig {
    /// 0.1–1 ms inside a cluster; a 20 ms floor with a 5 ms mean tail (≤ 250 ms) across.
    fn default() -> Self {
        Self {
            intra: LatencyDist::Uniform {
                min: Duration::from_micros(100),
                max: Duration::from_millis(1),
            },
            wan: LatencyDist::LongTail {
                min: Duration::from_millis(20),
                mean_extra: Duration::from_millis(5),
                max: Duration::from_millis(250),
            },
            per_pair: BTreeMap::new(),
            packet_loss_rate: 0.0,
        }
    }
}

impl NetConfig {
    /// The distribution for a message from cluster `from` to cluster `to`.
    #[must_use]
    pub fn latency_for(&self, from: ClusterIdx, to: ClusterIdx) -> &LatencyDist {
        match self.per_pair.get(&(from, to)) {
            Some(d) => d,
            None if from == to => &self.intra,
            None => &self.wan,
        }
    }
}

/// A set of nodes, described so that it also covers nodes registered later.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeSet {
    /// Exactly these nodes.
    Nodes(BTreeSet<NodeId>),
    /// Every node of a cluster (brokers, controller and clients).
    Cluster(ClusterIdx),
    /// Every node except these.
    AllExcept(BTreeSet<NodeId>),
}

impl NodeSet {
    /// One node.
    #[must_use]
    pub fn node(n: NodeId) -> Self {
        NodeSet::Nodes(BTreeSet::from([n]))
    }

    /// Whether `n` belongs to the set.
    #[must_use]
    pub fn contains(&self, n: NodeId) -> bool {
        match self {
            NodeSet::Nodes(s) => s.contains(&n),
            NodeSet::Cluster(c) => n.cluster == *c,
            NodeSet::AllExcept(s) => !s.contains(&n),
        }
    }
}

/// Which directions of the links between two sets a fault affects.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Direction {
    /// Both directions.
    Both,
    /// Only messages from side `a` to side `b`.
    AtoB,
    /// Only messages from side `b` to side `a`.
    BtoA,
}

/// The directed links between two node sets that a fault applies to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkSet {
    /// One side.
    pub a: NodeSet,
    /// The other side.
    pub b: NodeSet,
    /// Affected directions.
    pub direction: Direction,
}

impl LinkSet {
    /// Whether the directed link `from → to` is selected.
    #[must_use]
    pub fn matches(&self, from: NodeId, to: NodeId) -> bool {
        let a_to_b = self.a.contains(from) && self.b.contains(to);
        let b_to_a = self.b.contains(from) && self.a.contains(to);
        match self.direction {
            Direction::Both => a_to_b || b_to_a,
            Direction::AtoB => a_to_b,
            Direction::BtoA => b_to_a,
        }
    }
}

/// Names an installed partition or latency spike so that exactly it can be healed.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FaultId(pub u64);

/// Active link faults. Clogs are per directed link; partitions and spikes per [`LinkSet`].
#[derive(Debug, Default)]
pub(super) struct LinkFaults {
    next_id: u64,
    partitions: BTreeMap<FaultId, LinkSet>,
    spikes: BTreeMap<FaultId, (LinkSet, Duration, Instant)>,
    clogged: BTreeSet<(NodeId, NodeId)>,
}

impl LinkFaults {
    pub(super) fn add_partition(&mut self, links: LinkSet) -> FaultId {
        let id = self.fresh_id();
        self.partitions.insert(id, links);
        id
    }

    pub(super) fn add_spike(&mut self, links: LinkSet, extra: Duration, until: Instant) -> FaultId {
        let id = self.fresh_id();
        self.spikes.insert(id, (links, extra, until));
        id
    }

    /// Removes a partition or spike; false if `id` was not active.
    pub(super) fn remove(&mut self, id: FaultId) -> bool {
        self.partitions.remove(&id).is_some() || self.spikes.remove(&id).is_some()
    }

    pub(super) fn clear_partitions_and_spikes(&mut self) {
        self.partitions.clear();
        self.spikes.clear();
    }

    pub(super) fn is_partitioned(&self, from: NodeId, to: NodeId) -> bool {
        self.partitions.values().any(|l| l.matches(from, to))
    }

    /// The largest active spike on `from → to` (overlapping spikes do not add up); expired
    /// spikes are pruned here.
    pub(super) fn spike_extra(&mut self, from: NodeId, to: NodeId, now: Instant) -> Duration {
        self.spikes.retain(|_, (_, _, until)| *until > now);
        self.spikes
            .values()
            .filter(|(l, _, _)| l.matches(from, to))
            .map(|(_, extra, _)| *extra)
            .max()
            .unwrap_or_default()
    }

    pub(super) fn clog(&mut self, from: NodeId, to: NodeId) {
        self.clogged.insert((from, to));
    }

    pub(super) fn unclog(&mut self, from: NodeId, to: NodeId) -> bool {
        self.clogged.remove(&(from, to))
    }

    pub(super) fn clogged_links(&self) -> Vec<(NodeId, NodeId)> {
        self.clogged.iter().copied().collect()
    }

    pub(super) fn is_clogged(&self, from: NodeId, to: NodeId) -> bool {
        self.clogged.contains(&(from, to))
    }

    fn fresh_id(&mut self) -> FaultId {
        self.next_id += 1;
        FaultId(self.next_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mirror_core::types::BrokerId;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    fn b(c: u16, id: i32) -> NodeId {
        NodeId::broker(ClusterIdx(c), BrokerId(id))
    }

    #[test]
    fn link_sets_select_directions() {
        // Goal: one-way selectors match only their direction; cluster sets cover all roles.
        let l = LinkSet {
            a: NodeSet::Cluster(ClusterIdx(0)),
            b: NodeSet::node(b(1, 1)),
            direction: Direction::AtoB,
        };
        assert!(l.matches(b(0, 2), b(1, 1)));
        assert!(l.matches(NodeId::controller(ClusterIdx(0)), b(1, 1)));
        assert!(!l.matches(b(1, 1), b(0, 2)));
        assert!(!l.matches(b(0, 2), b(1, 2)));
        let all_but = NodeSet::AllExcept(BTreeSet::from([b(0, 1)]));
        assert!(all_but.contains(b(5, 9)) && !all_but.contains(b(0, 1)));
    }

    #[test]
    fn distributions_stay_in_bounds() {
        // Goal: samples respect bounds and the long tail is mostly near its floor.
        let mut rng = StdRng::seed_from_u64(7);
        let ms = Duration::from_millis;
        let u = LatencyDist::Uniform {
            min: ms(1),
            max: ms(3),
        };
        let t = LatencyDist::LongTail {
            min: ms(20),
            mean_extra: ms(5),
            max: ms(60),
        };
        let mut near_floor = 0;
        for _ in 0..1000 {
            let x = u.sample(&mut rng);
            assert!(x >= ms(1) && x <= ms(3));
            let y = t.sample(&mut rng);
            assert!(y >= ms(20) && y <= ms(60));
            near_floor += u32::from(y < ms(30));
        }
        assert!(near_floor > 800, "{near_floor}");
        assert_eq!(LatencyDist::Fixed(ms(4)).sample(&mut rng), ms(4));
    }

    #[test]
    fn per_pair_overrides_intra_and_wan() {
        // Goal: lookup order is override, then intra/wan by cluster equality.
        let mut cfg = NetConfig::default();
        let slow = LatencyDist::Fixed(Duration::from_millis(80));
        cfg.per_pair
            .insert((ClusterIdx(0), ClusterIdx(2)), slow.clone());
        assert_eq!(cfg.latency_for(ClusterIdx(0), ClusterIdx(2)), &slow);
        assert_eq!(cfg.latency_for(ClusterIdx(2), ClusterIdx(0)), &cfg.wan);
        assert_eq!(cfg.latency_for(ClusterIdx(1), ClusterIdx(1)), &cfg.intra);
    }
}
