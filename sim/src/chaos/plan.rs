//! A chaos plan: the world, workload and fault schedule a seed draws, as data. The plan is
//! drawn with `arbitrary` from bytes of a seeded RNG, so the same seed gives the same plan,
//! and a plan (a capsule) replays without the RNG.

use arbitrary::{Arbitrary, Result as ArbResult, Unstructured};
use rand::{RngCore, SeedableRng};

/// How a crash treats unflushed data.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum CrashMode {
    /// Process crash: the page cache survives (most crashes).
    Process,
    /// Power loss: unflushed writes are lost.
    PowerLoss,
    /// Power loss that may tear the last write.
    Torn,
}

/// One fault or operator action.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ChaosFault {
    /// Crash broker `broker` (1-based) of cluster `cluster`.
    Crash {
        /// Cluster index.
        cluster: u16,
        /// Broker id.
        broker: i32,
        /// Crash mode.
        mode: CrashMode,
        /// Restart after this long (the liveness phase restarts it anyway).
        down_ms: u64,
    },
    /// Restart a crashed broker.
    Restart {
        /// Cluster index.
        cluster: u16,
        /// Broker id.
        broker: i32,
    },
    /// Pause a broker for a while.
    Pause {
        /// Cluster index.
        cluster: u16,
        /// Broker id.
        broker: i32,
        /// How long.
        for_ms: u64,
    },
    /// Cut a broker from the rest of its cluster (and clients) for a while.
    Isolate {
        /// Cluster index.
        cluster: u16,
        /// Broker id.
        broker: i32,
        /// How long.
        for_ms: u64,
    },
    /// Cut a broker from the controller only (it gets fenced but keeps serving).
    IsolateFromController {
        /// Cluster index.
        cluster: u16,
        /// Broker id.
        broker: i32,
        /// How long.
        for_ms: u64,
    },
    /// Cut the current leader of a partition from its controller only, for a while: the
    /// controller elects another leader while the old one, still reachable by everyone else,
    /// keeps acting in its old epoch (a zombie). On a mirror partition both drive the state
    /// machine and race on its `__mirror_state` key (`no_lost_state_update`).
    IsolateLeaderFromController {
        /// Cluster index.
        cluster: u16,
        /// Topic index in the plan.
        topic: usize,
        /// Partition.
        partition: i32,
        /// How long.
        for_ms: u64,
    },
    /// Drop a fraction of all messages for a while.
    PacketLoss {
        /// Fraction in permille.
        permille: u16,
        /// How long.
        for_ms: u64,
    },
    /// Ask for an unclean election of a partition (acts only when it has no leader).
    UncleanElection {
        /// Cluster index.
        cluster: u16,
        /// Topic index in the plan.
        topic: usize,
        /// Partition.
        partition: i32,
    },
    /// Operator: stop mirroring every topic (failover to the destination).
    StopMirror,
    /// Operator: pause mirroring for a while, then resume.
    PauseMirror {
        /// How long.
        for_ms: u64,
    },
    /// Operator: fail back: mirror from the destination onto the old source (after a stop).
    Failback,
    /// Crash whichever broker leads the partition when the step runs (a leader change is
    /// what gives a cluster new leader epochs; a random broker often is not the leader).
    CrashLeader {
        /// Cluster index.
        cluster: u16,
        /// Topic index in the plan.
        topic: usize,
        /// Partition.
        partition: i32,
        /// Crash mode.
        mode: CrashMode,
        /// Restart after this long.
        down_ms: u64,
    },
    /// A client that writes one plain batch to the cluster that is currently the mirror
    /// destination (cluster 1, or cluster 0 after a failback). While the partition is not
    /// STOPPED the broker must refuse it (`read_only_until_stopped`).
    ProbeWrite {
        /// Topic index.
        topic: usize,
        /// Partition.
        partition: i32,
    },
    /// Applications leave the old primary: every producer on cluster 0 closes (its open
    /// transaction still ends). What is left on cluster 0 after a stop is the unmirrored
    /// tail a failback must cut.
    MoveSourceProducers,
    /// DeleteRecords up to the HW.
    DeleteRecords {
        /// Cluster index.
        cluster: u16,
        /// Topic index.
        topic: usize,
        /// Partition.
        partition: i32,
    },
    /// Bit rot on a replica's disk: the broker crashes (a process crash, so its log is all on
    /// the platter), a bit of a batch's CRC flips (`crate::kafka::rot`), and it restarts after
    /// `down_ms`: its recovery must cut the log at the rotted batch and the replica re-fetch
    /// what it lost.
    RotBatch {
        /// Cluster index.
        cluster: u16,
        /// Topic index.
        topic: usize,
        /// Partition.
        partition: i32,
        /// Which replica: an index into the partition's replica list, modulo its length.
        replica: u16,
        /// Which flushed batch the next recovery scans: modulo the number of candidates.
        pick: u32,
        /// Restart after this long.
        down_ms: u64,
    },
}

/// A timed fault.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FaultStep {
    /// When, in ms after the workload starts.
    pub at_ms: u64,
    /// What.
    pub fault: ChaosFault,
}

/// A topic of the plan.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TopicPlan {
    /// Name.
    pub name: String,
    /// Partitions.
    pub partitions: i32,
    /// Replication factor.
    pub replication_factor: i16,
    /// `min.insync.replicas`.
    pub min_insync_replicas: i16,
}

/// A workload client of the plan.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ClientPlan {
    /// Idempotent producer.
    Producer {
        /// Topic index.
        topic: usize,
        /// acks.
        acks: i16,
        /// Records per second.
        rate: u32,
        /// `max.in.flight.requests.per.connection` (1..=5; capsules before it: 1).
        #[serde(default = "one_in_flight")]
        max_in_flight: u8,
    },
    /// Transactional producer.
    TransactionalProducer {
        /// Topic index.
        topic: usize,
        /// Abort one transaction in this many (0 = never).
        abort_one_in: u32,
        /// Records per second.
        rate: u32,
        /// `max.in.flight.requests.per.connection` (1..=5; capsules before it: 1).
        #[serde(default = "one_in_flight")]
        max_in_flight: u8,
    },
    /// Consumer in a group.
    Consumer {
        /// Topic index.
        topic: usize,
        /// Isolation.
        read_committed: bool,
    },
}

fn one_in_flight() -> u8 {
    1
}

/// Everything a chaos run does.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ChaosPlan {
    /// The seed the plan was drawn from.
    pub seed: u64,
    /// Brokers per cluster.
    pub brokers: Vec<u16>,
    /// Cluster default for unclean elections.
    pub unclean_leader_election_enable: bool,
    /// `log.flush.interval.ms`.
    pub log_flush_interval_ms: Option<i64>,
    /// Topics (created on cluster 0).
    pub topics: Vec<TopicPlan>,
    /// Clients.
    pub clients: Vec<ClientPlan>,
    /// Faults, in time order.
    pub faults: Vec<FaultStep>,
    /// Length of the safety phase (faults happen in it).
    pub safety_ms: u64,
    /// Bound of the liveness phase (no faults; the system must converge).
    pub liveness_ms: u64,
    /// KIP-1279: cluster 1 mirrors every topic of cluster 0 (mirror `m1`).
    #[serde(default)]
    pub mirror: bool,
    /// KIP-1279 design (kip1279.md A.3) of both clusters: `seed`, `seed-no-pid-reset`, ...
    #[serde(default = "default_design")]
    pub design: String,
    /// Applications that move to the new primary: producers started on cluster 1 once a
    /// StopMirror (failover) has reached STOPPED, during the safety phase.
    #[serde(default)]
    pub failover_clients: Vec<ClientPlan>,
    /// The build that wrote the capsule (recorded, not enforced: a capsule replays on later
    /// code, which may behave differently).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<String>,
    /// Link latencies the seed drew (`None`: the default network).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net: Option<NetPlan>,
    /// The liveness phase's persistent partial fault (`None`: everything heals).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistent: Option<PersistentFault>,
}

/// A persistent partial fault (TigerBeetle VOPR's "core"): when the liveness phase heals
/// everything, one broker per cluster of at least three stays down or isolated, chosen so
/// that every partition it hosts keeps another in-sync replica. The mirror and the clusters
/// must converge without it: a lookup or a wait that needs every broker would hang.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PersistentFault {
    /// Down (crashed, never restarted) or isolated (running, cut off from every node).
    pub kind: PersistentKind,
    /// Which broker: the first eligible one from index `pick % brokers` on.
    pub pick: u32,
}

/// How the persistent fault keeps its broker out.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PersistentKind {
    /// Crashed and never restarted.
    Down,
    /// Running but cut off from every other node.
    Isolated,
}

/// Link latency distributions a seed draws (product.md §3): uniform inside a cluster (same
/// data centre), a long-tailed WAN between clusters.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NetPlan {
    /// Intra-cluster latency, lower bound (µs).
    pub intra_min_us: u64,
    /// Intra-cluster latency, upper bound (µs).
    pub intra_max_us: u64,
    /// WAN propagation floor (ms).
    pub wan_min_ms: u64,
    /// Mean of the WAN's exponential tail (ms).
    pub wan_mean_extra_ms: u64,
    /// WAN cap (ms).
    pub wan_max_ms: u64,
}

impl NetPlan {
    fn draw(u: &mut Unstructured<'_>) -> ArbResult<Self> {
        let intra_min_us = u64::from(u.int_in_range(50..=500u32)?);
        let intra_max_us = intra_min_us + u64::from(u.int_in_range(100..=3_000u32)?);
        let wan_min_ms = u64::from(u.int_in_range(1..=80u32)?);
        let wan_mean_extra_ms = u64::from(u.int_in_range(0..=30u32)?);
        Ok(Self {
            intra_min_us,
            intra_max_us,
            wan_min_ms,
            wan_mean_extra_ms,
            wan_max_ms: wan_min_ms + 10 * wan_mean_extra_ms + 50,
        })
    }

    /// The network of a run.
    #[must_use]
    pub fn config(&self) -> crate::net::NetConfig {
        use crate::net::LatencyDist;
        use std::time::Duration;
        crate::net::NetConfig {
            intra: LatencyDist::Uniform {
                min: Duration::from_micros(self.intra_min_us),
                max: Duration::from_micros(self.intra_max_us),
            },
            wan: LatencyDist::LongTail {
                min: Duration::from_millis(self.wan_min_ms),
                mean_extra: Duration::from_millis(self.wan_mean_extra_ms),
                max: Duration::from_millis(self.wan_max_ms),
            },
            ..crate::net::NetConfig::default()
        }
    }
}

fn default_design() -> String {
    "seed".to_string()
}

/// The build id written into capsules: the crate version (plus the git description when the
/// build environment provides `MIRRORSIM_GIT_DESCRIBE`).
#[must_use]
pub fn build_id() -> String {
    match option_env!("MIRRORSIM_GIT_DESCRIBE") {
        Some(g) => format!("mirror-sim {} ({g})", env!("CARGO_PKG_VERSION")),
        None => format!("mirror-sim {}", env!("CARGO_PKG_VERSION")),
    }
}

fn fault(
    u: &mut Unstructured<'_>,
    brokers: &[u16],
    topics: &[TopicPlan],
    mirror: bool,
) -> ArbResult<ChaosFault> {
    let cluster = u.choose_index(brokers.len())?;
    if mirror && u.ratio(1, 4)? {
        return Ok(match u.int_in_range(0..=3u8)? {
            0 | 1 => ChaosFault::StopMirror,
            2 => ChaosFault::PauseMirror {
                for_ms: u64::from(u.int_in_range(1_000..=15_000u32)?),
            },
            _ => ChaosFault::Failback,
        });
    }
    let c = u16::try_from(cluster).unwrap_or(0);
    let broker = i32::from(u.int_in_range(1..=brokers[cluster])?);
    let for_ms = u64::from(u.int_in_range(500..=20_000u32)?);
    let topic = u.choose_index(topics.len())?;
    let partition = u.int_in_range(0..=topics[topic].partitions - 1)?;
    Ok(match u.int_in_range(0..=9u8)? {
        0..=2 => ChaosFault::Crash {
            cluster: c,
            broker,
            mode: match u.int_in_range(0..=9u8)? {
                0 => CrashMode::Torn,
                1 => CrashMode::PowerLoss,
                _ => CrashMode::Process,
            },
            down_ms: for_ms,
        },
        3 => ChaosFault::Pause {
            cluster: c,
            broker,
            for_ms,
        },
        4 | 5 => ChaosFault::Isolate {
            cluster: c,
            broker,
            for_ms,
        },
        6 => ChaosFault::IsolateFromController {
            cluster: c,
            broker,
            for_ms,
        },
        7 => ChaosFault::PacketLoss {
            permille: u.int_in_range(10..=200)?,
            for_ms,
        },
        8 => ChaosFault::UncleanElection {
            cluster: c,
            topic,
            partition,
        },
        _ => ChaosFault::DeleteRecords {
            cluster: c,
            topic,
            partition,
        },
    })
}

impl ChaosPlan {
    /// Draws the plan of `seed` (single cluster).
    #[must_use]
    pub fn single_cluster(seed: u64) -> Self {
        let mut bytes = vec![0u8; 4096];
        rand::rngs::StdRng::seed_from_u64(seed).fill_bytes(&mut bytes);
        let mut u = Unstructured::new(&bytes);
        Self::draw(seed, &mut u).expect("4 KiB of bytes always draw a plan")
    }

    /// Draws the plan of `seed` with KIP-1279 mirroring: cluster 1 mirrors cluster 0, and
    /// the schedule mixes faults on both clusters with operator actions (stop, pause, failback).
    #[must_use]
    pub fn mirror(seed: u64) -> Self {
        let mut bytes = vec![0u8; 4096];
        rand::rngs::StdRng::seed_from_u64(seed ^ 0x6d69_7272_6f72).fill_bytes(&mut bytes);
        let mut u = Unstructured::new(&bytes);
        Self::draw_with(seed, &mut u, true).expect("4 KiB of bytes always draw a plan")
    }

    fn draw(seed: u64, u: &mut Unstructured<'_>) -> ArbResult<Self> {
        Self::draw_with(seed, u, false)
    }

    fn draw_with(seed: u64, u: &mut Unstructured<'_>, mirror: bool) -> ArbResult<Self> {
        let brokers: u16 = u.int_in_range(1..=5)?;
        let dst_brokers: u16 = if mirror { u.int_in_range(1..=4)? } else { 0 };
        let n_topics = u.int_in_range(1..=2usize)?;
        let mut topics = Vec::new();
        for i in 0..n_topics {
            let rf = u.int_in_range(1..=brokers.min(3))? as i16;
            topics.push(TopicPlan {
                name: format!("t{i}"),
                partitions: u.int_in_range(1..=4)?,
                replication_factor: rf,
                min_insync_replicas: u.int_in_range(1..=rf.min(2))?,
            });
        }
        let mut clients = Vec::new();
        for _ in 0..u.int_in_range(1..=3usize)? {
            let topic = u.choose_index(topics.len())?;
            clients.push(match u.int_in_range(0..=3u8)? {
                0 | 1 => ClientPlan::Producer {
                    topic,
                    acks: *u.choose(&[-1i16, -1, 1])?,
                    rate: u.int_in_range(20..=200)?,
                    max_in_flight: u.int_in_range(1..=5)?,
                },
                2 => ClientPlan::TransactionalProducer {
                    topic,
                    abort_one_in: u.int_in_range(0..=4)?,
                    rate: u.int_in_range(20..=100)?,
                    max_in_flight: u.int_in_range(1..=5)?,
                },
                _ => ClientPlan::Consumer {
                    topic,
                    read_committed: bool::arbitrary(u)?,
                },
            });
        }
        let safety_ms = u64::from(u.int_in_range(20_000..=60_000u32)?);
        let cluster_sizes: Vec<u16> = if mirror {
            vec![brokers, dst_brokers]
        } else {
            vec![brokers]
        };
        let mut faults = Vec::new();
        for _ in 0..u.int_in_range(0..=8usize)? {
            faults.push(FaultStep {
                at_ms: u64::from(u.int_in_range(0..=u32::try_from(safety_ms).unwrap_or(60_000))?),
                fault: fault(u, &cluster_sizes, &topics, mirror)?,
            });
        }
        faults.sort_by_key(|f| f.at_ms);
        let mut plan = Self {
            seed,
            brokers: cluster_sizes.clone(),
            unclean_leader_election_enable: u.ratio(1, 5)?,
            log_flush_interval_ms: if u.ratio(1, 3)? { Some(1_000) } else { None },
            topics,
            clients,
            faults,
            safety_ms,
            liveness_ms: 120_000,
            mirror,
            design: default_design(),
            failover_clients: Vec::new(),
            build: None,
            net: None,
            persistent: None,
        };
        if mirror {
            // Drawn from the bytes the base plan left, so the base plan of a seed (and what
            // it found before the story existed) stays the same.
            super::story::draw_failover_story(u, &mut plan)?;
        }
        // Last, for the same reason: the latencies of the links.
        plan.net = Some(NetPlan::draw(u)?);
        // After everything else, so every other part of a seed's plan stays what it was: in a
        // third of the seeds, one or two batches rot on disk.
        plan.draw_rot(u)?;
        // Last again: in a quarter of the seeds the liveness phase keeps one broker per
        // cluster out.
        if u.ratio(1, 4)? {
            plan.persistent = Some(PersistentFault {
                kind: if bool::arbitrary(u)? {
                    PersistentKind::Down
                } else {
                    PersistentKind::Isolated
                },
                pick: u32::arbitrary(u)?,
            });
        }
        Ok(plan)
    }

    /// Adds `RotBatch` faults (in time order with the others), late enough in the safety phase
    /// that some data has been flushed.
    fn draw_rot(&mut self, u: &mut Unstructured<'_>) -> ArbResult<()> {
        let n = if u.ratio(1, 3)? {
            u.int_in_range(1..=2usize)?
        } else {
            0
        };
        let safety = u32::try_from(self.safety_ms).unwrap_or(60_000);
        for _ in 0..n {
            let cluster = u16::try_from(u.choose_index(self.brokers.len())?).unwrap_or(0);
            let topic = u.choose_index(self.topics.len())?;
            let fault = ChaosFault::RotBatch {
                cluster,
                topic,
                partition: u.int_in_range(0..=self.topics[topic].partitions - 1)?,
                replica: u.int_in_range(0..=2)?,
                pick: u32::arbitrary(u)?,
                down_ms: u64::from(u.int_in_range(500..=10_000u32)?),
            };
            self.faults.push(FaultStep {
                at_ms: u64::from(u.int_in_range(safety / 4..=safety)?),
                fault,
            });
        }
        // Stable: faults at the same instant keep their order.
        self.faults.sort_by_key(|f| f.at_ms);
        Ok(())
    }

    /// Size of the plan, for the shrinker's report: (faults, clients, partitions, brokers).
    #[must_use]
    pub fn size(&self) -> PlanSize {
        PlanSize {
            faults: self.faults.len(),
            clients: self.clients.len() + self.failover_clients.len(),
            partitions: self
                .topics
                .iter()
                .map(|t| usize::try_from(t.partitions).unwrap_or(0))
                .sum(),
            brokers: self.brokers.iter().map(|b| usize::from(*b)).sum(),
        }
    }
}

/// How big a plan is; the shrinker never makes any component larger.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PlanSize {
    /// Fault steps.
    pub faults: usize,
    /// Workload clients (source and failover).
    pub clients: usize,
    /// Partitions over all topics.
    pub partitions: usize,
    /// Brokers over all clusters.
    pub brokers: usize,
}

impl PlanSize {
    /// True when no component of `self` exceeds `other`'s.
    #[must_use]
    pub fn no_larger_than(&self, other: &PlanSize) -> bool {
        self.faults <= other.faults
            && self.clients <= other.clients
            && self.partitions <= other.partitions
            && self.brokers <= other.brokers
    }
}

impl std::fmt::Display for PlanSize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} faults, {} clients, {} partitions, {} brokers",
            self.faults, self.clients, self.partitions, self.brokers
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_draws_the_same_plan_and_plans_vary() {
        assert_eq!(ChaosPlan::single_cluster(7), ChaosPlan::single_cluster(7));
        let distinct: std::collections::BTreeSet<String> = (0..20)
            .map(|s| serde_json::to_string(&ChaosPlan::single_cluster(s)).unwrap())
            .collect();
        assert!(distinct.len() > 15);
    }

    #[test]
    fn mirror_plans_tell_failover_stories_and_old_capsules_still_parse() {
        // Goal: over a few seeds the story draws every ingredient (stop, failover clients,
        // probes, source leader crash, failback), and a capsule without the new fields
        // reads as the seed design with no failover clients.
        let plans: Vec<ChaosPlan> = (1..40).map(ChaosPlan::mirror).collect();
        let has = |f: &dyn Fn(&ChaosFault) -> bool| {
            plans.iter().any(|p| p.faults.iter().any(|s| f(&s.fault)))
        };
        assert!(has(&|f| matches!(f, ChaosFault::ProbeWrite { .. })));
        assert!(has(&|f| matches!(f, ChaosFault::CrashLeader { .. })));
        assert!(has(&|f| matches!(f, ChaosFault::Failback)));
        assert!(plans.iter().any(|p| !p.failover_clients.is_empty()));
        assert!(plans.iter().all(|p| p.design == "seed"));
        let mut v = serde_json::to_value(ChaosPlan::mirror(5)).unwrap();
        let o = v.as_object_mut().unwrap();
        o.remove("design");
        o.remove("failover_clients");
        let back: ChaosPlan = serde_json::from_value(v).unwrap();
        assert_eq!(back.design, "seed");
        assert!(back.failover_clients.is_empty());
    }

    #[test]
    fn a_third_of_the_seeds_draw_bit_rot_in_both_kinds_of_chaos() {
        let rots = |plans: Vec<ChaosPlan>| {
            plans
                .iter()
                .filter(|p| {
                    p.faults
                        .iter()
                        .any(|f| matches!(f.fault, ChaosFault::RotBatch { .. }))
                })
                .count()
        };
        let single = rots((1..61).map(ChaosPlan::single_cluster).collect());
        let mirror = rots((1..61).map(ChaosPlan::mirror).collect());
        assert!((10..=35).contains(&single), "{single} of 60");
        assert!((10..=35).contains(&mirror), "{mirror} of 60");
        let p = ChaosPlan::mirror(3);
        assert!(p.faults.windows(2).all(|w| w[0].at_ms <= w[1].at_ms));
    }

    #[test]
    fn plans_round_trip_through_json() {
        let p = ChaosPlan::single_cluster(3);
        let j = serde_json::to_string(&p).unwrap();
        assert_eq!(serde_json::from_str::<ChaosPlan>(&j).unwrap(), p);
    }
}
