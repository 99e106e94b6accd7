//! The world: clusters of simulated nodes on madsim, their disks and durable metadata, the
//! network, the trace, the observer, and the fault API (product §4).

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, Mutex, TryLockError};
use std::time::Duration;

use bytes::Bytes;
use madsim::runtime::Handle;
use mirror_core::broker::{Event, Message, Node};
use mirror_core::protocol::metadata::MetadataRecord;
use mirror_core::protocol::{ClusterIdx, CorrelationId, NodeId};
use mirror_core::time::Instant;
use mirror_core::types::BrokerId;

use super::clock::SimClock;
use super::harness::{RunReport, RunStats};
use super::node::{self, Boot, Factory, Run, Wire, lock};
use super::trace_event::{Columns, Names, TraceEvent};
use crate::disk::{CrashPolicy, DiskError, SimDisk};
use crate::net::{Direction, FaultId, Inbox, LinkSet, NetConfig, Network, NodeSet};
use crate::trace::message::InFlight;
use crate::trace::{TraceHash, TraceLevel, TraceOutput, TraceSink};

/// One cluster of the world: a controller and `brokers` brokers with ids `1..=brokers`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterConfig {
    /// Short name used in traces (`src`, `dst`).
    pub name: String,
    /// Number of brokers.
    pub brokers: u16,
}

impl ClusterConfig {
    /// A cluster called `name` with `brokers` brokers.
    #[must_use]
    pub fn new(name: impl Into<String>, brokers: u16) -> Self {
        Self {
            name: name.into(),
            brokers,
        }
    }
}

/// The seed-independent shape of a world.
#[derive(Clone, Debug, PartialEq)]
pub struct WorldConfig {
    /// Clusters, in `ClusterIdx` order.
    pub clusters: Vec<ClusterConfig>,
    /// Latencies and loss.
    pub net: NetConfig,
    /// Capacity of every node's disk (`None` = unlimited).
    pub disk_capacity_bytes: Option<u64>,
    /// Trace lines kept in memory (all lines are hashed either way).
    pub trace_keep: TraceLevel,
    /// Where kept lines go.
    pub trace_output: TraceOutput,
}

impl Default for WorldConfig {
    fn default() -> Self {
        Self {
            clusters: Vec::new(),
            net: NetConfig::default(),
            disk_capacity_bytes: None,
            trace_keep: TraceLevel::Compact,
            trace_output: TraceOutput::Memory,
        }
    }
}

impl WorldConfig {
    /// Clusters with the default network, unlimited disks and a compact in-memory trace.
    #[must_use]
    pub fn new(clusters: Vec<ClusterConfig>, net: NetConfig) -> Self {
        Self {
            clusters,
            net,
            ..Self::default()
        }
    }
}

/// Where a node is in its life.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NodeStatus {
    /// Running.
    Up,
    /// Not scheduled until resumed; messages queue in its inbox.
    Paused,
    /// Killed by a crash fault; stays down until restarted.
    Crashed,
    /// Stopped itself after a disk error; stays down until restarted.
    Halted,
}

impl NodeStatus {
    /// Crashed or halted.
    #[must_use]
    pub fn is_down(self) -> bool {
        matches!(self, NodeStatus::Crashed | NodeStatus::Halted)
    }
}

/// A node halting on a disk error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HaltRecord {
    /// World time.
    pub t: Instant,
    /// The node.
    pub node: NodeId,
    /// The incarnation that halted.
    pub incarnation: u64,
    /// The disk error.
    pub error: DiskError,
}

/// Where an observed event comes from.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct EventCtx {
    /// World time.
    pub t: Instant,
    /// The event's trace event number (violations cite it).
    pub seq: u64,
    /// The node that reported it.
    pub node: NodeId,
}

/// Receives every node event, in order, with no node lock held (so it may lock any node to
/// inspect it). It must not inject faults that make nodes emit events (a halt), which would
/// re-enter it; it reports a violation by panicking or by recording it.
pub type Observer = Box<dyn FnMut(&EventCtx, &Event) + Send>;

/// One node as the world keeps it across incarnations.
struct Slot<N> {
    madsim_id: Option<madsim::task::NodeId>,
    state: Arc<Mutex<N>>,
    disk: Arc<Mutex<SimDisk>>,
    metadata: Arc<Mutex<Vec<(i64, MetadataRecord)>>>,
    incarnation: u64,
    status: NodeStatus,
    /// The inbox of the current incarnation, until its driver takes it.
    inbox: Option<Inbox<Wire>>,
}

struct Shared<N> {
    config: WorldConfig,
    names: Names,
    clock: SimClock,
    net: Network<Wire>,
    trace: Mutex<TraceSink>,
    /// The column buffers every event is rendered into before the sink formats its line.
    columns: Mutex<Columns>,
    /// Requests in flight, tracked only while verbose lines are kept (responses name the
    /// API they answer).
    in_flight: Option<Mutex<InFlight>>,
    observer: Mutex<Option<Observer>>,
    factory: Mutex<Option<Factory<N>>>,
    nodes: Mutex<BTreeMap<NodeId, Slot<N>>>,
    links: Mutex<BTreeMap<FaultId, LinkSet>>,
    /// Nodes kept down for the rest of the run ([`World::hold_down`]): restarts are refused.
    held_down: Mutex<std::collections::BTreeSet<NodeId>>,
    halts: Mutex<Vec<HaltRecord>>,
    node_events: Mutex<u64>,
    /// Tasks spawned on the run's main node through [`World::spawn`] (operator actions):
    /// aborted by [`World::shutdown`] so none outlives the run.
    tasks: Mutex<Vec<madsim::task::JoinHandle<()>>>,
}

/// Handle to the world. Cheap to clone; every clone is the same world.
pub struct World<N> {
    inner: Arc<Shared<N>>,
}

impl<N> Clone for World<N> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<N: Node + Send + 'static> World<N> {
    /// Creates the world (network, clock at zero, empty trace). Nodes start with
    /// [`World::start`]. Must be called from the run's main task inside a madsim runtime.
    #[must_use]
    pub fn new(config: WorldConfig) -> Self {
        let names = Names::new(config.clusters.iter().map(|c| c.name.clone()).collect());
        let clock = SimClock::start_now();
        super::clock::reset_timers();
        let net = Network::new(config.net.clone());
        let trace = TraceSink::new(config.trace_keep, config.trace_output);
        let in_flight = trace
            .keeps(TraceLevel::Verbose)
            .then(|| Mutex::new(InFlight::default()));
        Self {
            inner: Arc::new(Shared {
                config,
                names,
                clock,
                net,
                trace: Mutex::new(trace),
                columns: Mutex::new(Columns::default()),
                in_flight,
                observer: Mutex::new(None),
                factory: Mutex::new(None),
                nodes: Mutex::new(BTreeMap::new()),
                links: Mutex::new(BTreeMap::new()),
                held_down: Mutex::new(std::collections::BTreeSet::new()),
                halts: Mutex::new(Vec::new()),
                node_events: Mutex::new(0),
                tasks: Mutex::new(Vec::new()),
            }),
        }
    }

    /// The nodes the config declares: per cluster, the controller then brokers `1..=n`.
    #[must_use]
    pub fn configured_nodes(&self) -> Vec<NodeId> {
        let mut out = Vec::new();
        for (i, c) in self.inner.config.clusters.iter().enumerate() {
            let cluster = ClusterIdx(u16::try_from(i).expect("world_clusters_fit_u16"));
            out.push(NodeId::controller(cluster));
            for b in 1..=c.brokers {
                out.push(NodeId::broker(cluster, BrokerId(i32::from(b))));
            }
        }
        out
    }

    /// Sets the factory and starts every configured node, in [`World::configured_nodes`]
    /// order.
    pub fn start(&self, factory: impl Fn(&Boot) -> N + Send + Sync + 'static) {
        *lock(&self.inner.factory) = Some(Arc::new(factory));
        for id in self.configured_nodes() {
            self.start_node(id);
        }
    }

    /// Starts one more node (a client, or a configured node started late) with the factory
    /// given to [`World::start`]. Panics if the factory is unset or the node exists.
    pub fn start_node(&self, id: NodeId) {
        let factory = self.factory();
        let name = self.node_name(id);
        let boot = Boot {
            id,
            name: name.clone(),
            incarnation: 1,
            now: self.now(),
            disk_image: BTreeMap::new(),
            metadata: Vec::new(),
        };
        let state = factory(&boot);
        let disk = match self.inner.config.disk_capacity_bytes {
            Some(cap) => SimDisk::with_capacity(cap),
            None => SimDisk::new(),
        };
        let inbox = self.inner.net.register(id);
        let ip = {
            let mut nodes = lock(&self.inner.nodes);
            assert!(
                !nodes.contains_key(&id),
                "world_node_unique: {name} started twice"
            );
            let ip = node_ip(nodes.len());
            nodes.insert(
                id,
                Slot {
                    madsim_id: None,
                    state: Arc::new(Mutex::new(state)),
                    disk: Arc::new(Mutex::new(disk)),
                    metadata: Arc::new(Mutex::new(Vec::new())),
                    incarnation: 1,
                    status: NodeStatus::Up,
                    inbox: Some(inbox),
                },
            );
            ip
        };
        self.emit(&TraceEvent::NodeStarted {
            node: id,
            incarnation: 1,
            files: 0,
            metadata_records: 0,
        });
        let world = self.clone();
        let handle = Handle::current()
            .create_node()
            .name(name)
            .ip(ip)
            .init(move || node::drive(world.clone(), id))
            .build();
        self.slot_mut(id, |s| s.madsim_id = Some(handle.id()));
    }

    /// Installs the observer of node events (replacing any previous one).
    pub fn set_observer(&self, observer: impl FnMut(&EventCtx, &Event) + Send + 'static) {
        *lock(&self.inner.observer) = Some(Box::new(observer));
    }

    // ------------------------------------------------------------------ inspection

    /// A node's state, shared with its driver. The same `Arc` across restarts: a restart
    /// replaces the value inside.
    #[must_use]
    pub fn node_state(&self, node: NodeId) -> Arc<Mutex<N>> {
        self.slot(node, |s| Arc::clone(&s.state))
    }

    /// Every started node, sorted.
    #[must_use]
    pub fn nodes(&self) -> Vec<NodeId> {
        lock(&self.inner.nodes).keys().copied().collect()
    }

    /// A node's disk (it survives crashes).
    #[must_use]
    pub fn disk(&self, node: NodeId) -> Arc<Mutex<SimDisk>> {
        self.slot(node, |s| Arc::clone(&s.disk))
    }

    /// A node's durable metadata records.
    #[must_use]
    pub fn metadata(&self, node: NodeId) -> Vec<(i64, MetadataRecord)> {
        let m = self.slot(node, |s| Arc::clone(&s.metadata));
        lock(&m).clone()
    }

    /// A node's status.
    #[must_use]
    pub fn status(&self, node: NodeId) -> NodeStatus {
        self.slot(node, |s| s.status)
    }

    /// A node's current incarnation (1 for the first start).
    #[must_use]
    pub fn incarnation(&self, node: NodeId) -> u64 {
        self.slot(node, |s| s.incarnation)
    }

    /// Halts so far, in order.
    #[must_use]
    pub fn halts(&self) -> Vec<HaltRecord> {
        lock(&self.inner.halts).clone()
    }

    /// The network (for statistics; inject faults through the world so they are traced).
    #[must_use]
    pub fn network(&self) -> Network<Wire> {
        self.inner.net.clone()
    }

    /// World time now.
    #[must_use]
    pub fn now(&self) -> Instant {
        self.inner.clock.now()
    }

    /// The world clock.
    #[must_use]
    pub fn clock(&self) -> SimClock {
        self.inner.clock
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &WorldConfig {
        &self.inner.config
    }

    /// Human names.
    #[must_use]
    pub fn names(&self) -> &Names {
        &self.inner.names
    }

    /// `src-1`, `src-ctl`, `dst-c2`.
    #[must_use]
    pub fn node_name(&self, node: NodeId) -> String {
        self.inner.names.node(node)
    }

    /// The cluster called `name`.
    #[must_use]
    pub fn cluster(&self, name: &str) -> Option<ClusterIdx> {
        self.inner.names.cluster_idx(name)
    }

    /// Node events observed so far.
    #[must_use]
    pub fn node_events(&self) -> u64 {
        *lock(&self.inner.node_events)
    }

    /// Rolling hash of every trace line so far.
    #[must_use]
    pub fn trace_hash(&self) -> TraceHash {
        lock(&self.inner.trace).hash()
    }

    /// The kept trace lines so far.
    #[must_use]
    pub fn trace_lines(&self) -> Vec<String> {
        lock(&self.inner.trace).lines().to_vec()
    }

    /// Runs `f` on the trace sink (headers, verdicts, footers written by the run).
    pub fn with_trace<R>(&self, f: impl FnOnce(&mut TraceSink) -> R) -> R {
        f(&mut lock(&self.inner.trace))
    }

    /// The run's summary so far.
    #[must_use]
    pub fn report(&self, seed: u64) -> RunReport {
        let stats = RunStats {
            nodes: self.nodes(),
            net: self.inner.net.stats(),
            timers: super::clock::timers_set(),
        };
        let t = lock(&self.inner.trace);
        RunReport {
            seed,
            trace_hash: t.hash().hex(),
            sim_seconds: self.inner.clock.elapsed().as_secs_f64(),
            events: t.next_seq(),
            lines: t.lines().to_vec(),
            stats,
        }
    }

    // ------------------------------------------------------------------ node faults

    /// Crashes `node`: madsim kills its tasks, its disk keeps what `policy` lets survive
    /// (drawn from madsim's RNG), and the network drops its connections. The node stays
    /// down until [`World::restart`]. Returns false (and traces a skip) if it was down.
    pub fn crash(&self, node: NodeId, policy: CrashPolicy) -> bool {
        let taken = self.slot_mut(node, |s| {
            if s.status.is_down() {
                return None;
            }
            s.status = NodeStatus::Crashed;
            s.inbox = None;
            Some((s.madsim_id, Arc::clone(&s.disk)))
        });
        let Some((madsim_id, disk)) = taken else {
            self.skip("crash", node, "already down");
            return false;
        };
        if let Some(m) = madsim_id {
            Handle::current().kill(m);
        }
        self.inner.net.unregister(node);
        let report = lock(&disk).crash(policy, &mut madsim::rand::thread_rng());
        self.emit(&TraceEvent::Crash {
            node,
            policy,
            report: &report,
        });
        true
    }

    /// Restarts `node` as a new incarnation built by the factory from its disk image and
    /// durable metadata, then re-registers it in the network. A node that is up is first
    /// crashed with [`CrashPolicy::KeepAll`] (a process restart keeps the page cache).
    pub fn restart(&self, node: NodeId) {
        if lock(&self.inner.held_down).contains(&node) {
            return;
        }
        if !self.status(node).is_down() {
            self.crash(node, CrashPolicy::KeepAll);
        }
        let factory = self.factory();
        let (state, disk, metadata, incarnation, madsim_id) = self.slot_mut(node, |s| {
            s.incarnation += 1;
            (
                Arc::clone(&s.state),
                Arc::clone(&s.disk),
                Arc::clone(&s.metadata),
                s.incarnation,
                s.madsim_id,
            )
        });
        let disk_image = disk_image(&lock(&disk));
        let metadata = lock(&metadata).clone();
        let boot = Boot {
            id: node,
            name: self.node_name(node),
            incarnation,
            now: self.now(),
            disk_image,
            metadata,
        };
        let fresh = factory(&boot);
        *lock(&state) = fresh;
        let inbox = self.inner.net.register(node);
        self.slot_mut(node, |s| {
            s.inbox = Some(inbox);
            s.status = NodeStatus::Up;
        });
        self.emit(&TraceEvent::Restart { node, incarnation });
        self.emit(&TraceEvent::NodeStarted {
            node,
            incarnation,
            files: boot.disk_image.len(),
            metadata_records: boot.metadata.len(),
        });
        if let Some(m) = madsim_id {
            Handle::current().restart(m);
        }
    }

    /// Stops scheduling `node` (a long GC or VM pause): its timers and messages wait.
    /// Returns false (and traces a skip) unless it was up.
    pub fn pause(&self, node: NodeId) -> bool {
        let m = self.slot_mut(node, |s| {
            (s.status == NodeStatus::Up).then(|| {
                s.status = NodeStatus::Paused;
                s.madsim_id
            })
        });
        let Some(m) = m else {
            self.skip("pause", node, "not up");
            return false;
        };
        if let Some(m) = m {
            Handle::current().pause(m);
        }
        self.emit(&TraceEvent::Pause { node });
        true
    }

    /// Resumes a paused node. Returns false (and traces a skip) unless it was paused.
    pub fn resume(&self, node: NodeId) -> bool {
        let m = self.slot_mut(node, |s| {
            (s.status == NodeStatus::Paused).then(|| {
                s.status = NodeStatus::Up;
                s.madsim_id
            })
        });
        let Some(m) = m else {
            self.skip("resume", node, "not paused");
            return false;
        };
        if let Some(m) = m {
            Handle::current().resume(m);
        }
        self.emit(&TraceEvent::Resume { node });
        true
    }

    /// Fills (or frees) `node`'s disk: growing writes fail with `NoSpace`, which halts it.
    pub fn disk_full(&self, node: NodeId, on: bool) {
        lock(&self.disk(node)).set_full(on);
        self.emit(&TraceEvent::DiskFull { node, on });
    }

    /// Arms an EIO on the next mutating operation under `path_prefix` (`""`: any file).
    pub fn disk_eio(&self, node: NodeId, path_prefix: &str) {
        lock(&self.disk(node)).fail_next_io(path_prefix);
        self.emit(&TraceEvent::DiskEio {
            node,
            prefix: path_prefix,
        });
    }

    // ------------------------------------------------------------------ link faults

    /// Drops messages from `a` to `b` (per `direction`) until healed.
    pub fn partition(&self, a: NodeSet, b: NodeSet, direction: Direction) -> FaultId {
        let links = LinkSet { a, b, direction };
        let id = self
            .inner
            .net
            .partition(links.a.clone(), links.b.clone(), direction);
        self.emit(&TraceEvent::Partition {
            a: &links.a,
            b: &links.b,
            direction,
            id,
        });
        lock(&self.inner.links).insert(id, links);
        id
    }

    /// Cuts `node` off from every other node, both ways, until healed.
    pub fn isolate(&self, node: NodeId) -> FaultId {
        let id = self.inner.net.isolate(node);
        self.emit(&TraceEvent::Isolate { node, id });
        let links = LinkSet {
            a: NodeSet::node(node),
            b: NodeSet::AllExcept([node].into()),
            direction: Direction::Both,
        };
        lock(&self.inner.links).insert(id, links);
        id
    }

    /// Removes a partition or isolation; false if it was not active.
    pub fn heal(&self, id: FaultId) -> bool {
        let Some(links) = lock(&self.inner.links).remove(&id) else {
            return false;
        };
        self.inner.net.heal(id);
        self.emit(&TraceEvent::Heal {
            a: &links.a,
            b: &links.b,
            id,
        });
        true
    }

    /// Removes the oldest active partition installed with exactly these sides and
    /// direction; false if there is none.
    pub fn heal_partition(&self, a: &NodeSet, b: &NodeSet, direction: Direction) -> bool {
        let id = lock(&self.inner.links)
            .iter()
            .find(|(_, l)| &l.a == a && &l.b == b && l.direction == direction)
            .map(|(id, _)| *id);
        id.is_some_and(|id| self.heal(id))
    }

    /// Stalls the directed link `from → to`; held messages flush in order on unclog.
    pub fn clog(&self, from: NodeId, to: NodeId) {
        self.inner.net.clog(from, to);
        self.emit(&TraceEvent::Clog { from, to });
    }

    /// Un-stalls `from → to`.
    pub fn unclog(&self, from: NodeId, to: NodeId) {
        self.inner.net.unclog(from, to);
        self.emit(&TraceEvent::Unclog { from, to });
    }

    /// Adds `extra` latency on the selected links for `duration`.
    pub fn latency_spike(
        &self,
        a: NodeSet,
        b: NodeSet,
        direction: Direction,
        extra: Duration,
        duration: Duration,
    ) -> FaultId {
        self.emit(&TraceEvent::LatencySpike {
            a: &a,
            b: &b,
            direction,
            extra,
            duration,
        });
        let until = madsim::time::Instant::now() + duration;
        self.inner
            .net
            .latency_spike(LinkSet { a, b, direction }, extra, until)
    }

    /// Sets the message loss rate (clamped to `[0, 1]`).
    pub fn packet_loss(&self, rate: f64) {
        let rate = rate.clamp(0.0, 1.0);
        self.inner.net.packet_loss(rate);
        self.emit(&TraceEvent::PacketLoss { rate });
    }

    /// Ends the run: kills every node's madsim tasks and drops its network presence, so the
    /// tasks (which hold this world) are dropped with the runtime instead of leaking through
    /// the reference cycle task → world → network → inbox waker → task. Call it last, after
    /// the report is taken; the world is unusable afterwards.
    pub fn shutdown(&self) {
        let nodes: Vec<(NodeId, Option<madsim::task::NodeId>)> = lock(&self.inner.nodes)
            .iter_mut()
            .map(|(id, s)| {
                s.inbox = None;
                (*id, s.madsim_id)
            })
            .collect();
        for (id, m) in nodes {
            if let Some(m) = m {
                Handle::current().kill(m);
            }
            self.inner.net.unregister(id);
        }
        for t in lock(&self.inner.tasks).drain(..) {
            t.abort();
        }
        self.inner.net.close();
        *lock(&self.inner.observer) = None;
        *lock(&self.inner.factory) = None;
    }

    /// Spawns a task on the run's main node (an operator action that outlives the step that
    /// started it). [`World::shutdown`] aborts it if it is still running.
    pub fn spawn(&self, fut: impl std::future::Future<Output = ()> + Send + 'static) {
        let handle = madsim::task::spawn(fut);
        let mut tasks = lock(&self.inner.tasks);
        tasks.retain(|t| !t.is_finished());
        tasks.push(handle);
    }

    /// Ends every link fault (partitions, spikes, loss, clogs), frees every full disk and
    /// resumes every paused node: the switch into the liveness phase. Crashed and halted
    /// nodes stay down (restart them explicitly); armed EIO faults stay armed.
    pub fn heal_all(&self) {
        self.inner.net.heal_all();
        lock(&self.inner.links).clear();
        let disks: Vec<_> = lock(&self.inner.nodes)
            .values()
            .map(|s| Arc::clone(&s.disk))
            .collect();
        for d in disks {
            lock(&d).set_full(false);
        }
        self.emit(&TraceEvent::HealAll);
        let paused: Vec<NodeId> = lock(&self.inner.nodes)
            .iter()
            .filter(|(_, s)| s.status == NodeStatus::Paused)
            .map(|(id, _)| *id)
            .collect();
        for n in paused {
            self.resume(n);
        }
    }

    /// Crashes `node` (a process crash) if it runs and keeps it down for the rest of the run:
    /// later restarts, scheduled or not, are refused (the liveness phase's persistent
    /// partial fault).
    pub fn hold_down(&self, node: NodeId) {
        lock(&self.inner.held_down).insert(node);
        self.crash(node, CrashPolicy::KeepAll);
    }

    /// Nodes that are crashed or halted.
    #[must_use]
    pub fn down_nodes(&self) -> Vec<NodeId> {
        lock(&self.inner.nodes)
            .iter()
            .filter(|(_, s)| s.status.is_down())
            .map(|(id, _)| *id)
            .collect()
    }

    // ------------------------------------------------------------------ driver side

    /// Hands the current incarnation's inbox and shared state to its driver.
    pub(super) fn take_run(&self, node: NodeId) -> Option<Run<N>> {
        self.slot_mut(node, |s| {
            Some(Run {
                inbox: s.inbox.take()?,
                state: Arc::clone(&s.state),
                disk: Arc::clone(&s.disk),
                metadata: Arc::clone(&s.metadata),
                incarnation: s.incarnation,
            })
        })
    }

    pub(super) fn send(&self, from: NodeId, to: NodeId, id: CorrelationId, message: Message) {
        let answers = self
            .inner
            .in_flight
            .as_ref()
            .and_then(|f| lock(f).on_send(from, to, id, &message));
        // One read of madsim's clock serves the trace line and the network.
        let sim_now = madsim::time::Instant::now();
        self.emit_at(
            &TraceEvent::Send {
                from,
                to,
                id,
                message: &message,
                answers,
            },
            self.inner.clock.at(sim_now),
        );
        self.inner
            .net
            .send_at(from, to, Wire { id, message }, sim_now);
    }

    /// Traces a node event and hands it to the observer.
    pub(super) fn node_event(&self, node: NodeId, event: &Event) {
        let t = self.now();
        let seq = self.emit_at(&TraceEvent::Node { node, event }, t);
        self.observe(EventCtx { t, seq, node }, event);
    }

    /// The driver of `incarnation` hit a disk error: the node halts (Kafka's
    /// `LogDirFailureChannel` with a single log dir ends in `Exit.halt`).
    pub(super) fn halt(&self, node: NodeId, incarnation: u64, error: &DiskError) {
        let m = self.slot_mut(node, |s| {
            (s.incarnation == incarnation && !s.status.is_down()).then(|| {
                s.status = NodeStatus::Halted;
                s.inbox = None;
                s.madsim_id
            })
        });
        let Some(m) = m else { return };
        self.inner.net.unregister(node);
        let t = self.now();
        let reason = error.to_string();
        lock(&self.inner.halts).push(HaltRecord {
            t,
            node,
            incarnation,
            error: error.clone(),
        });
        let seq = self.emit(&TraceEvent::Halt {
            node,
            reason: &reason,
        });
        self.observe(EventCtx { t, seq, node }, &Event::Halted { reason });
        if let Some(m) = m {
            // Kills the calling driver task too; it returns right after.
            Handle::current().kill(m);
        }
    }

    // ------------------------------------------------------------------ helpers

    fn observe(&self, ctx: EventCtx, event: &Event) {
        *lock(&self.inner.node_events) += 1;
        let mut guard = match self.inner.observer.try_lock() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => panic!(
                "world_observer_reentry: the observer caused a node event (event #{})",
                ctx.seq
            ),
        };
        if let Some(f) = guard.as_mut() {
            f(&ctx, event);
        }
    }

    /// Stops the run at its `limit`-th trace event (see [`TraceSink::set_limit`]).
    pub fn set_event_limit(&self, limit: Option<u64>) {
        lock(&self.inner.trace).set_limit(limit);
    }

    /// Records a compact trace line written by a driver (a scenario step, an operator
    /// action) at the current simulated time; returns its event number.
    pub fn note(&self, node: &str, subject: &str, text: &str) -> u64 {
        let t = self.now().0;
        lock(&self.inner.trace).event(crate::trace::TraceLevel::Compact, t, node, subject, text)
    }

    fn emit(&self, ev: &TraceEvent<'_>) -> u64 {
        self.emit_at(ev, self.now())
    }

    /// [`Self::emit`] at world time `t`, which must be now.
    fn emit_at(&self, ev: &TraceEvent<'_>, t: Instant) -> u64 {
        let mut columns = lock(&self.inner.columns);
        let t = t.0;
        let mut key = std::mem::take(&mut columns.key);
        if let Some(level) = ev.hash_key(&mut key) {
            let seq = lock(&self.inner.trace).event_keyed(level, t, &key, || {
                ev.render_into(&self.inner.names, &mut columns);
                let c = &*columns;
                (&c.node, &c.subject, &c.text, ev.detail())
            });
            columns.key = key;
            return seq;
        }
        columns.key = key;
        let level = ev.render_into(&self.inner.names, &mut columns);
        let mut sink = lock(&self.inner.trace);
        let detail = if sink.keeps(level) { ev.detail() } else { None };
        let c = &*columns;
        sink.event_detailed(level, t, &c.node, &c.subject, &c.text, detail.as_deref())
    }

    fn skip(&self, fault: &'static str, node: NodeId, why: &'static str) {
        self.emit(&TraceEvent::Skipped { fault, node, why });
    }

    fn factory(&self) -> Factory<N> {
        lock(&self.inner.factory)
            .clone()
            .expect("world_factory_set: call World::start first")
    }

    fn slot<R>(&self, node: NodeId, f: impl FnOnce(&Slot<N>) -> R) -> R {
        let nodes = lock(&self.inner.nodes);
        let s = nodes
            .get(&node)
            .unwrap_or_else(|| panic!("world_node_known: {node} was never started"));
        f(s)
    }

    fn slot_mut<R>(&self, node: NodeId, f: impl FnOnce(&mut Slot<N>) -> R) -> R {
        let mut nodes = lock(&self.inner.nodes);
        let s = nodes
            .get_mut(&node)
            .unwrap_or_else(|| panic!("world_node_known: {node} was never started"));
        f(s)
    }
}

/// Every file's current content (after a crash, that is what survived).
fn disk_image(disk: &SimDisk) -> BTreeMap<String, Bytes> {
    disk.list()
        .into_iter()
        .filter_map(|p| disk.read(&p).map(|b| (p, b)))
        .collect()
}

/// 10.0.0.1, 10.0.0.2, … in start order (madsim wants an address per node; our network
/// routes by `NodeId`).
fn node_ip(index: usize) -> IpAddr {
    let n = u32::try_from(index).expect("world_node_count_fits_u32") + 1;
    IpAddr::V4(Ipv4Addr::from(0x0a00_0000 | n))
}
