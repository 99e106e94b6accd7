//! The fault vocabulary and its application to a world.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use mirror_core::broker::Node;
use mirror_core::protocol::{NodeId, NodeRole};
use mirror_core::types::BrokerId;
use serde::{Deserialize, Serialize};

use crate::disk::CrashPolicy;
use crate::net::{Direction, NodeSet};
use crate::world::World;

/// A node's role within its cluster, as written in schedules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Member {
    /// The controller (`ctl`).
    Controller,
    /// Broker `n` (`1`, `2`, …).
    Broker(i32),
    /// Client `n` (`c1`, …).
    Client(u32),
}

/// Names a node by cluster name and member, resolved against the world. Written and read
/// as its trace name: `src-1`, `src-ctl`, `dst-c2`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct NodeRef {
    /// Cluster name.
    pub cluster: String,
    /// Role in the cluster.
    pub member: Member,
}

impl NodeRef {
    /// Broker `id` of `cluster`.
    #[must_use]
    pub fn broker(cluster: &str, id: i32) -> Self {
        Self {
            cluster: cluster.to_owned(),
            member: Member::Broker(id),
        }
    }

    /// The controller of `cluster`.
    #[must_use]
    pub fn controller(cluster: &str) -> Self {
        Self {
            cluster: cluster.to_owned(),
            member: Member::Controller,
        }
    }

    /// The world's node, if the world has it.
    pub fn resolve<N: Node + Send + 'static>(
        &self,
        world: &World<N>,
    ) -> Result<NodeId, FaultError> {
        let cluster = world
            .cluster(&self.cluster)
            .ok_or_else(|| FaultError::UnknownCluster(self.cluster.clone()))?;
        let role = match self.member {
            Member::Controller => NodeRole::Controller,
            Member::Broker(b) => NodeRole::Broker(BrokerId(b)),
            Member::Client(c) => NodeRole::Client(c),
        };
        let id = NodeId { cluster, role };
        if world.nodes().contains(&id) {
            Ok(id)
        } else {
            Err(FaultError::UnknownNode(self.to_string()))
        }
    }
}

impl fmt::Display for NodeRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.member {
            Member::Controller => write!(f, "{}-ctl", self.cluster),
            Member::Broker(b) => write!(f, "{}-{b}", self.cluster),
            Member::Client(c) => write!(f, "{}-c{c}", self.cluster),
        }
    }
}

impl FromStr for NodeRef {
    type Err = FaultError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || FaultError::BadNodeRef(s.to_owned());
        let (cluster, member) = s.rsplit_once('-').ok_or_else(bad)?;
        if cluster.is_empty() {
            return Err(bad());
        }
        let member = if member == "ctl" {
            Member::Controller
        } else if let Some(c) = member.strip_prefix('c') {
            Member::Client(c.parse().map_err(|_| bad())?)
        } else {
            Member::Broker(member.parse().map_err(|_| bad())?)
        };
        Ok(Self {
            cluster: cluster.to_owned(),
            member,
        })
    }
}

impl TryFrom<String> for NodeRef {
    type Error = FaultError;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<NodeRef> for String {
    fn from(r: NodeRef) -> Self {
        r.to_string()
    }
}

/// One side of a partition or spike.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// Every node of a cluster (by name).
    Cluster(String),
    /// These nodes.
    Nodes(Vec<NodeRef>),
    /// Every node except these.
    AllExcept(Vec<NodeRef>),
}

impl Side {
    fn resolve<N: Node + Send + 'static>(&self, world: &World<N>) -> Result<NodeSet, FaultError> {
        let set = |refs: &[NodeRef]| -> Result<BTreeSet<NodeId>, FaultError> {
            refs.iter().map(|r| r.resolve(world)).collect()
        };
        Ok(match self {
            Side::Cluster(name) => NodeSet::Cluster(
                world
                    .cluster(name)
                    .ok_or_else(|| FaultError::UnknownCluster(name.clone()))?,
            ),
            Side::Nodes(refs) => NodeSet::Nodes(set(refs)?),
            Side::AllExcept(refs) => NodeSet::AllExcept(set(refs)?),
        })
    }
}

/// Which directions between two sides a fault affects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkDirection {
    /// Both.
    Both,
    /// Only from `a` to `b`.
    AtoB,
    /// Only from `b` to `a`.
    BtoA,
}

impl From<LinkDirection> for Direction {
    fn from(d: LinkDirection) -> Self {
        match d {
            LinkDirection::Both => Direction::Both,
            LinkDirection::AtoB => Direction::AtoB,
            LinkDirection::BtoA => Direction::BtoA,
        }
    }
}

/// What a crash keeps of unflushed writes ([`CrashPolicy`] as data).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CrashMode {
    /// Power loss: only flushed data survives.
    LoseAllUnflushed,
    /// Power loss mid write-back: a random ordered prefix survives, maybe torn.
    KeepRandomPrefix,
    /// Process crash: the page cache survives.
    KeepAll,
}

impl From<CrashMode> for CrashPolicy {
    fn from(m: CrashMode) -> Self {
        match m {
            CrashMode::LoseAllUnflushed => CrashPolicy::LoseAllUnflushed,
            CrashMode::KeepRandomPrefix => CrashPolicy::KeepRandomPrefix,
            CrashMode::KeepAll => CrashPolicy::KeepAll,
        }
    }
}

/// Kafka-level faults: they act through the admin client, so a [`KafkaFaults`] handler
/// applies them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum KafkaFault {
    /// Elect a leader outside the ISR (a declared data-loss event).
    UncleanElection {
        /// Cluster name.
        cluster: String,
        /// Topic.
        topic: String,
        /// Partition.
        partition: i32,
    },
    /// Move leadership cleanly (to `to`, or the preferred replica).
    CleanLeaderChange {
        /// Cluster name.
        cluster: String,
        /// Topic.
        topic: String,
        /// Partition.
        partition: i32,
        /// Target broker.
        #[serde(default)]
        to: Option<i32>,
    },
    /// Delete records before an offset (may overtake the mirror).
    DeleteRecords {
        /// Cluster name.
        cluster: String,
        /// Topic.
        topic: String,
        /// Partition.
        partition: i32,
        /// New log start offset.
        before_offset: i64,
    },
}

/// One fault (or fault end).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Fault {
    /// Kill a node; its disk keeps what `mode` allows. It stays down until restarted.
    Crash {
        /// The node.
        node: NodeRef,
        /// What survives of unflushed writes.
        mode: CrashMode,
    },
    /// Start a new incarnation from the durable state (crashing it first if up).
    Restart {
        /// The node.
        node: NodeRef,
    },
    /// Restart every crashed or halted node, in node order.
    RestartAllDown,
    /// Stop scheduling a node.
    Pause {
        /// The node.
        node: NodeRef,
    },
    /// Resume a paused node.
    Resume {
        /// The node.
        node: NodeRef,
    },
    /// Drop messages between two sides.
    Partition {
        /// One side.
        a: Side,
        /// Other side.
        b: Side,
        /// Affected directions.
        direction: LinkDirection,
    },
    /// End the oldest partition with exactly these sides and direction.
    HealPartition {
        /// One side.
        a: Side,
        /// Other side.
        b: Side,
        /// Affected directions.
        direction: LinkDirection,
    },
    /// Cut a node off from all others.
    Isolate {
        /// The node.
        node: NodeRef,
    },
    /// End an isolation.
    Unisolate {
        /// The node.
        node: NodeRef,
    },
    /// Stall the directed link `from → to`.
    Clog {
        /// Sender.
        from: NodeRef,
        /// Receiver.
        to: NodeRef,
    },
    /// Un-stall `from → to`.
    Unclog {
        /// Sender.
        from: NodeRef,
        /// Receiver.
        to: NodeRef,
    },
    /// Extra latency between two sides for a while.
    LatencySpike {
        /// One side.
        a: Side,
        /// Other side.
        b: Side,
        /// Affected directions.
        direction: LinkDirection,
        /// Extra latency.
        extra_ms: u64,
        /// Duration.
        duration_ms: u64,
    },
    /// Message loss probability (0 ends it).
    PacketLoss {
        /// In `[0, 1]`.
        rate: f64,
    },
    /// Fill or free a node's disk.
    DiskFull {
        /// The node.
        node: NodeRef,
        /// Full or free.
        on: bool,
    },
    /// Fail the node's next disk operation under `path_prefix` with EIO.
    DiskEio {
        /// The node.
        node: NodeRef,
        /// Path prefix (empty: any file).
        #[serde(default)]
        path_prefix: String,
    },
    /// End every link fault, full disk and pause.
    HealAll,
    /// A Kafka-level fault (see [`KafkaFaults`]).
    Kafka {
        /// The fault.
        fault: KafkaFault,
    },
}

impl Fault {
    /// The variant's name, as in JSON.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Fault::Crash { .. } => "crash",
            Fault::Restart { .. } => "restart",
            Fault::RestartAllDown => "restart_all_down",
            Fault::Pause { .. } => "pause",
            Fault::Resume { .. } => "resume",
            Fault::Partition { .. } => "partition",
            Fault::HealPartition { .. } => "heal_partition",
            Fault::Isolate { .. } => "isolate",
            Fault::Unisolate { .. } => "unisolate",
            Fault::Clog { .. } => "clog",
            Fault::Unclog { .. } => "unclog",
            Fault::LatencySpike { .. } => "latency_spike",
            Fault::PacketLoss { .. } => "packet_loss",
            Fault::DiskFull { .. } => "disk_full",
            Fault::DiskEio { .. } => "disk_eio",
            Fault::HealAll => "heal_all",
            Fault::Kafka { .. } => "kafka",
        }
    }
}

/// A fault at a time (milliseconds of world time since the start).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FaultStep {
    /// When.
    pub at_ms: u64,
    /// What.
    pub fault: Fault,
}

/// Why a fault could not be applied.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FaultError {
    /// No cluster has this name.
    #[error("unknown cluster '{0}'")]
    UnknownCluster(String),
    /// The cluster has no such node.
    #[error("unknown node '{0}'")]
    UnknownNode(String),
    /// Not a node name (`src-1`, `src-ctl`, `src-c2`).
    #[error("bad node name '{0}' (expected e.g. src-1, src-ctl, src-c2)")]
    BadNodeRef(String),
    /// The handler does not support this fault.
    #[error("unsupported fault '{0}'")]
    Unsupported(&'static str),
    /// A packet loss rate outside `[0, 1]` or not a number.
    #[error("packet loss rate {0} is not in [0, 1]")]
    BadRate(String),
}

/// Applies Kafka-level faults (implemented by the run, which owns the admin client).
pub trait KafkaFaults<N> {
    /// Applies one Kafka-level fault.
    fn apply(&mut self, world: &World<N>, fault: &KafkaFault) -> Result<(), FaultError>;
}

/// Rejects every Kafka-level fault.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoKafkaFaults;

impl<N> KafkaFaults<N> for NoKafkaFaults {
    fn apply(&mut self, _world: &World<N>, fault: &KafkaFault) -> Result<(), FaultError> {
        Err(FaultError::Unsupported(match fault {
            KafkaFault::UncleanElection { .. } => "unclean_election",
            KafkaFault::CleanLeaderChange { .. } => "clean_leader_change",
            KafkaFault::DeleteRecords { .. } => "delete_records",
        }))
    }
}

/// Applies one fault to the world (Kafka-level faults are rejected).
pub fn apply<N: Node + Send + 'static>(world: &World<N>, fault: &Fault) -> Result<(), FaultError> {
    apply_with(world, fault, &mut NoKafkaFaults)
}

/// Applies one fault, handing Kafka-level faults to `kafka`. Names are resolved before
/// anything changes, so an error leaves the world untouched.
pub fn apply_with<N: Node + Send + 'static>(
    world: &World<N>,
    fault: &Fault,
    kafka: &mut dyn KafkaFaults<N>,
) -> Result<(), FaultError> {
    match fault {
        Fault::Crash { node, mode } => {
            world.crash(node.resolve(world)?, (*mode).into());
        }
        Fault::Restart { node } => world.restart(node.resolve(world)?),
        Fault::RestartAllDown => {
            for n in world.down_nodes() {
                world.restart(n);
            }
        }
        Fault::Pause { node } => {
            world.pause(node.resolve(world)?);
        }
        Fault::Resume { node } => {
            world.resume(node.resolve(world)?);
        }
        Fault::Partition { a, b, direction } => {
            let (a, b) = (a.resolve(world)?, b.resolve(world)?);
            world.partition(a, b, (*direction).into());
        }
        Fault::HealPartition { a, b, direction } => {
            let (a, b) = (a.resolve(world)?, b.resolve(world)?);
            world.heal_partition(&a, &b, (*direction).into());
        }
        Fault::Isolate { node } => {
            world.isolate(node.resolve(world)?);
        }
        Fault::Unisolate { node } => {
            let n = node.resolve(world)?;
            world.heal_partition(
                &NodeSet::node(n),
                &NodeSet::AllExcept([n].into()),
                Direction::Both,
            );
        }
        Fault::Clog { from, to } => world.clog(from.resolve(world)?, to.resolve(world)?),
        Fault::Unclog { from, to } => world.unclog(from.resolve(world)?, to.resolve(world)?),
        Fault::LatencySpike {
            a,
            b,
            direction,
            extra_ms,
            duration_ms,
        } => {
            let (a, b) = (a.resolve(world)?, b.resolve(world)?);
            world.latency_spike(
                a,
                b,
                (*direction).into(),
                Duration::from_millis(*extra_ms),
                Duration::from_millis(*duration_ms),
            );
        }
        Fault::PacketLoss { rate } => {
            if !(0.0..=1.0).contains(rate) {
                return Err(FaultError::BadRate(rate.to_string()));
            }
            world.packet_loss(*rate);
        }
        Fault::DiskFull { node, on } => world.disk_full(node.resolve(world)?, *on),
        Fault::DiskEio { node, path_prefix } => {
            world.disk_eio(node.resolve(world)?, path_prefix);
        }
        Fault::HealAll => world.heal_all(),
        Fault::Kafka { fault } => kafka.apply(world, fault)?,
    }
    Ok(())
}

/// A timed list of faults: a chaos run's draw, a scenario's fault steps, a capsule's
/// schedule.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FaultSchedule {
    /// Steps; played in `at_ms` order, ties in list order.
    pub steps: Vec<FaultStep>,
}

impl FaultSchedule {
    /// A schedule of these steps.
    #[must_use]
    pub fn new(steps: Vec<FaultStep>) -> Self {
        Self { steps }
    }

    /// Steps in play order (stable sort by time).
    #[must_use]
    pub fn ordered(&self) -> Vec<&FaultStep> {
        let mut steps: Vec<&FaultStep> = self.steps.iter().collect();
        steps.sort_by_key(|s| s.at_ms);
        steps
    }

    /// Sleeps until each step's time and applies it; stops at the first error.
    pub async fn play<N: Node + Send + 'static>(&self, world: &World<N>) -> Result<(), FaultError> {
        self.play_with(world, &mut NoKafkaFaults).await
    }

    /// [`FaultSchedule::play`] with a handler for Kafka-level faults.
    pub async fn play_with<N: Node + Send + 'static>(
        &self,
        world: &World<N>,
        kafka: &mut dyn KafkaFaults<N>,
    ) -> Result<(), FaultError> {
        let clock = world.clock();
        for step in self.ordered() {
            clock.sleep_until_ms(step.at_ms).await;
            apply_with(world, &step.fault, kafka)?;
        }
        Ok(())
    }

    /// Pretty JSON, for capsules.
    #[must_use]
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("fault_schedule_serializes: plain data")
    }

    /// Parses [`FaultSchedule::to_json`] output.
    pub fn from_json(s: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(s)
    }
}
