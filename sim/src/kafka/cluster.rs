//! [`KafkaWorld`]: clusters of real brokers and a controller each, clients, the checker wired
//! as the world's observer, and the Kafka-level faults.

use crate::world::node::lock;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mirror_core::broker::{Broker, BrokerConfig, Node};
use mirror_core::controller::{Controller, ControllerConfig};
use mirror_core::coordinator::transaction::TxnState;
use mirror_core::protocol::messages::CreatableTopic;
use mirror_core::protocol::{ClusterIdx, ErrorCode, NodeId, NodeRole, Request, Response};
use mirror_core::types::{BrokerId, Offset, TopicPartition};

use super::oneshot::{OneShot, ResponseSlot};
use super::sim_node::SimNode;
use crate::check::Violation;
use crate::check::ghost::DeclaredLoss;
use crate::check::history::check_no_lost_acked_writes;
use crate::check::log_invariants::{Checker, NodeMap};
use crate::net::NetConfig;
use crate::report::Recorder;
use crate::world::{Boot, ClusterConfig, World, WorldConfig};

/// Broker settings a world may vary.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BrokerTuning {
    /// Cluster default `min.insync.replicas`.
    pub min_insync_replicas: usize,
    /// `log.flush.interval.ms` (`None` = never, Kafka's default).
    pub log_flush_interval_ms: Option<i64>,
    /// `log.segment.bytes`.
    pub segment_bytes: usize,
    /// `replica.lag.time.max.ms`.
    pub replica_lag_time_max_ms: i64,
    /// KIP-966 HW gate.
    pub kip966_min_isr_gate: bool,
    /// Planted bug: leaders ignore the ISR when advancing the HW (checker teeth).
    #[serde(default)]
    pub ablation_hw_ignores_isr: bool,
    /// Planted bug: recovery cuts a torn tail from the log but not from the file (checker
    /// teeth for `recovery_idempotent`).
    #[serde(default)]
    pub ablation_recovery_keeps_torn_tail: bool,
    /// Planted bug in this cluster's workload producers, not its brokers
    /// (`ProducerConfig::ablation_defers_metadata_refresh`).
    #[serde(default)]
    pub ablation_producer_defers_metadata_refresh: bool,
    /// KIP-1279 design preset and ablations (`seed`, `latest`, `seed-no-pid-reset`, ...;
    /// kip1279.md A.3). `None` = the default design (seed).
    #[serde(default)]
    pub mirror_design: Option<String>,
}

impl Default for BrokerTuning {
    fn default() -> Self {
        Self {
            min_insync_replicas: 1,
            log_flush_interval_ms: None,
            segment_bytes: 64 * 1024,
            replica_lag_time_max_ms: 30_000,
            kip966_min_isr_gate: true,
            ablation_hw_ignores_isr: false,
            ablation_recovery_keeps_torn_tail: false,
            ablation_producer_defers_metadata_refresh: false,
            mirror_design: None,
        }
    }
}

/// One cluster.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClusterSpec {
    /// Name (`src`, `dst`).
    pub name: String,
    /// Broker count.
    pub brokers: u16,
    /// Default replication factor (capped at the broker count).
    pub default_replication_factor: i16,
    /// Cluster default for unclean elections.
    pub unclean_leader_election_enable: bool,
    /// Broker settings.
    pub tuning: BrokerTuning,
}

impl ClusterSpec {
    /// A cluster with Kafka defaults and RF = min(3, brokers).
    #[must_use]
    pub fn new(name: &str, brokers: u16) -> Self {
        Self {
            name: name.into(),
            brokers,
            default_replication_factor: i16::try_from(brokers.min(3)).unwrap_or(3),
            unclean_leader_election_enable: false,
            tuning: BrokerTuning::default(),
        }
    }
}

/// The whole world.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct KafkaWorldSpec {
    /// Clusters.
    pub clusters: Vec<ClusterSpec>,
    /// Network.
    #[serde(skip)]
    pub net: NetConfig,
}

type ClientMaker = Box<dyn Fn(&Boot) -> SimNode + Send + Sync>;

/// A running Kafka world.
#[derive(Clone)]
pub struct KafkaWorld {
    /// The simulated world.
    pub world: World<SimNode>,
    /// The checker (ghost state and invariants).
    pub checker: Arc<Mutex<Checker>>,
    nodes: Arc<Mutex<NodeMap>>,
    clients: Arc<Mutex<BTreeMap<NodeId, ClientMaker>>>,
    next_client: Arc<Mutex<u32>>,
    workload: Arc<Mutex<Vec<NodeId>>>,
    spec: Arc<KafkaWorldSpec>,
    /// The timeline recorder, if one is attached (admin calls are operator actions on it).
    recorder: Arc<Mutex<Option<Arc<Mutex<Recorder>>>>>,
}

fn broker_config(cluster: ClusterIdx, id: BrokerId, spec: &ClusterSpec) -> BrokerConfig {
    let mut c = BrokerConfig::new(cluster, id);
    c.min_insync_replicas = spec.tuning.min_insync_replicas;
    c.log_flush_interval_ms = spec.tuning.log_flush_interval_ms;
    c.segment_bytes = spec.tuning.segment_bytes;
    c.replica_lag_time_max_ms = spec.tuning.replica_lag_time_max_ms;
    c.kip966_min_isr_gate = spec.tuning.kip966_min_isr_gate;
    c.ablation_hw_ignores_isr = spec.tuning.ablation_hw_ignores_isr;
    c.ablation_recovery_keeps_torn_tail = spec.tuning.ablation_recovery_keeps_torn_tail;
    c.mirror_design = cluster_design(spec);
    c.unclean_leader_election_enable = spec.unclean_leader_election_enable;
    c
}

/// The KIP-1279 design of a cluster's brokers and controller (the broker default when none
/// is set).
fn cluster_design(spec: &ClusterSpec) -> mirror_core::mirror::Design {
    match &spec.tuning.mirror_design {
        Some(d) => mirror_core::mirror::Design::parse(d)
            .unwrap_or_else(|e| panic!("invalid mirror_design {d:?}: {e}")),
        None => BrokerConfig::new(ClusterIdx(0), BrokerId(0)).mirror_design,
    }
}

impl KafkaWorld {
    /// Builds and starts every cluster. Call from the run's main task.
    #[must_use]
    pub fn start(spec: KafkaWorldSpec) -> Self {
        Self::start_traced(spec, false)
    }

    /// Like [`KafkaWorld::start`], keeping verbose trace lines too (every append, HW move and
    /// client acknowledgement) when `verbose`.
    #[must_use]
    pub fn start_traced(spec: KafkaWorldSpec, verbose: bool) -> Self {
        let mut config = WorldConfig::new(
            spec.clusters
                .iter()
                .map(|c| ClusterConfig::new(c.name.clone(), c.brokers))
                .collect(),
            spec.net.clone(),
        );
        if verbose {
            config.trace_keep = crate::trace::TraceLevel::Verbose;
        }
        let world: World<SimNode> = World::new(config);
        let checker = Arc::new(Mutex::new(Checker::new()));
        let nodes: Arc<Mutex<NodeMap>> = Arc::new(Mutex::new(BTreeMap::new()));
        let clients: Arc<Mutex<BTreeMap<NodeId, ClientMaker>>> =
            Arc::new(Mutex::new(BTreeMap::new()));
        let spec = Arc::new(spec);
        install_observer(&world, &checker, &nodes, None);
        {
            let spec = Arc::clone(&spec);
            let clients = Arc::clone(&clients);
            world.start(move |boot: &Boot| {
                let cluster = &spec.clusters[usize::from(boot.id.cluster.0)];
                match boot.id.role {
                    NodeRole::Controller => {
                        let mut cc = ControllerConfig::new(boot.id.cluster);
                        cc.default_replication_factor = cluster.default_replication_factor;
                        cc.unclean_leader_election_enable = cluster.unclean_leader_election_enable;
                        cc.min_insync_replicas = cluster.tuning.min_insync_replicas;
                        // The controller sees desired states only: a design that stops from
                        // PAUSED (latest) must accept a stop of a topic desired PAUSED.
                        cc.mirror_stop_from_paused = cluster_design(cluster)
                            .stop_allowed_from(mirror_core::mirror::MirrorPartitionState::Paused);
                        SimNode::Controller(Box::new(Controller::new(cc, boot.metadata.clone())))
                    }
                    NodeRole::Broker(id) => SimNode::Broker(Box::new(Broker::new(
                        broker_config(boot.id.cluster, id, cluster),
                        boot.incarnation,
                        boot.disk_image.clone(),
                    ))),
                    NodeRole::Client(_) => {
                        let makers = lock(&clients);
                        let make = makers
                            .get(&boot.id)
                            .expect("client registered before start");
                        make(boot)
                    }
                }
            });
        }
        {
            let mut map = lock(&nodes);
            let mut disks = BTreeMap::new();
            for id in world.configured_nodes() {
                map.insert(id, world.node_state(id));
                if matches!(id.role, NodeRole::Broker(_)) {
                    disks.insert(id, world.disk(id));
                }
            }
            lock(&checker).disks = disks;
        }
        Self {
            world,
            checker,
            nodes,
            clients,
            next_client: Arc::new(Mutex::new(0)),
            workload: Arc::new(Mutex::new(Vec::new())),
            spec,
            recorder: Arc::new(Mutex::new(None)),
        }
    }

    /// Records a timeline of the run from now on: the recorder sees every event right after
    /// the checker (attach before the first event to see the whole run). Opt-in, so runs
    /// without a report pay nothing for it.
    pub fn attach_recorder(&self, recorder: Arc<Mutex<Recorder>>) {
        *lock(&self.recorder) = Some(Arc::clone(&recorder));
        install_observer(&self.world, &self.checker, &self.nodes, Some(recorder));
    }

    /// The world's spec.
    #[must_use]
    pub fn spec(&self) -> &KafkaWorldSpec {
        &self.spec
    }

    /// Broker ids of a cluster (1-based).
    #[must_use]
    pub fn broker_ids(&self, cluster: ClusterIdx) -> Vec<BrokerId> {
        let n = self.spec.clusters[usize::from(cluster.0)].brokers;
        (1..=n).map(|b| BrokerId(i32::from(b))).collect()
    }

    /// Starts a workload client built by `make` (also on restarts).
    pub fn add_workload_client(
        &self,
        cluster: ClusterIdx,
        make: impl Fn(&Boot) -> crate::workload::ClientNode + Send + Sync + 'static,
    ) -> NodeId {
        let id = self.add_node(
            cluster,
            Box::new(move |boot: &Boot| SimNode::Client(Box::new(make(boot)))),
        );
        lock(&self.workload).push(id);
        id
    }

    /// Stops every producer (consumers keep reading): the start of a liveness phase.
    pub fn stop_producers(&self) {
        for id in lock(&self.workload).clone() {
            let arc = self.world.node_state(id);
            let mut g = lock(&arc);
            if let SimNode::Client(c) = &mut *g
                && let crate::workload::ClientNode::Producer(p) = c.as_mut()
            {
                p.close();
            }
        }
    }

    /// The workload producers that still have a batch or a transaction in hand (closed ones
    /// finish what they hold: [`crate::workload::producer::Producer::is_done`]).
    #[must_use]
    pub fn producers_busy(&self) -> Vec<NodeId> {
        let mut busy = Vec::new();
        let down = self.world.down_nodes();
        for id in lock(&self.workload).iter().copied() {
            if down.contains(&id) {
                continue;
            }
            let arc = self.world.node_state(id);
            let g = lock(&arc);
            if let SimNode::Client(c) = &*g
                && let Some(p) = c.as_producer()
                && !p.is_done()
            {
                busy.push(id);
            }
        }
        busy
    }

    /// Starts another client node built by `make` (also on restarts).
    pub fn add_client(
        &self,
        cluster: ClusterIdx,
        make: impl Fn(&Boot) -> Box<dyn Node + Send> + Send + Sync + 'static,
    ) -> NodeId {
        self.add_node(
            cluster,
            Box::new(move |boot: &Boot| SimNode::Other(make(boot))),
        )
    }

    fn add_node(&self, cluster: ClusterIdx, make: ClientMaker) -> NodeId {
        let n = {
            let mut next = lock(&self.next_client);
            *next += 1;
            *next
        };
        let id = NodeId::client(cluster, n);
        lock(&self.clients).insert(id, make);
        self.world.start_node(id);
        id
    }

    /// Sleeps `ms` of simulated time.
    pub async fn run_for_ms(&self, ms: u64) {
        crate::world::clock::sleep(Duration::from_millis(ms)).await;
    }

    /// Polls `cond` every 10 ms of simulated time for up to `timeout_ms`; true if it held.
    pub async fn wait_until(
        &self,
        timeout_ms: u64,
        mut cond: impl FnMut(&KafkaWorld) -> bool,
    ) -> bool {
        let mut waited = 0;
        while waited <= timeout_ms {
            if cond(self) {
                return true;
            }
            crate::world::clock::sleep(Duration::from_millis(10)).await;
            waited += 10;
        }
        cond(self)
    }

    /// Sends one admin request to the cluster's live brokers and waits for the answer.
    pub async fn admin(&self, cluster: ClusterIdx, req: Request) -> Option<Response> {
        let recorder = lock(&self.recorder).clone();
        let Some(recorder) = recorder else {
            return self.admin_call(cluster, req).await;
        };
        let (t, seq) = (self.world.now(), self.world.with_trace(|s| s.next_seq()));
        let asked = format!("{req:?}");
        let resp = self.admin_call(cluster, req).await;
        lock(&recorder).operator(t.0, seq, cluster, &asked, resp.as_ref());
        resp
    }

    async fn admin_call(&self, cluster: ClusterIdx, req: Request) -> Option<Response> {
        let slot: ResponseSlot = Arc::new(Mutex::new(None));
        let brokers = self.broker_ids(cluster);
        let s2 = Arc::clone(&slot);
        self.add_client(cluster, move |boot| {
            Box::new(OneShot::new(
                boot.id,
                brokers.clone(),
                req.clone(),
                Arc::clone(&s2),
                5_000,
            ))
        });
        let got = self.wait_until(60_000, |_| lock(&slot).is_some()).await;
        if got { lock(&slot).take() } else { None }
    }

    /// Creates a topic and waits until every partition has a leader.
    pub async fn create_topic(
        &self,
        cluster: ClusterIdx,
        name: &str,
        partitions: i32,
        rf: i16,
        configs: &[(&str, &str)],
    ) -> ErrorCode {
        self.create_topic_with_id(cluster, name, partitions, rf, configs, None)
            .await
    }

    /// [`Self::create_topic`] with the topic id to create it with (`None`: the controller
    /// picks one).
    pub async fn create_topic_with_id(
        &self,
        cluster: ClusterIdx,
        name: &str,
        partitions: i32,
        rf: i16,
        configs: &[(&str, &str)],
        topic_id: Option<mirror_core::types::TopicId>,
    ) -> ErrorCode {
        let req = Request::CreateTopics {
            topics: vec![CreatableTopic {
                name: name.into(),
                num_partitions: partitions,
                replication_factor: rf,
                configs: configs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                topic_id,
            }],
        };
        let err = match self.admin(cluster, req).await {
            Some(Response::TopicErrors { results }) => results
                .first()
                .map_or(ErrorCode::UnknownServerError, |r| r.1),
            Some(Response::Error { error }) => error,
            _ => ErrorCode::RequestTimedOut,
        };
        if err.is_ok() {
            let n = name.to_string();
            self.wait_until(30_000, |w| {
                (0..partitions).all(|p| {
                    w.leader(cluster, &TopicPartition::new(n.as_str(), p))
                        .is_some()
                })
            })
            .await;
        }
        err
    }

    /// The partition leader per the controller.
    #[must_use]
    pub fn leader(&self, cluster: ClusterIdx, tp: &TopicPartition) -> Option<BrokerId> {
        let arc = self.world.node_state(NodeId::controller(cluster));
        let g = lock(&arc);
        g.as_controller()?.image().partition(tp)?.leader
    }

    /// Every partition's registration per the controller (internal topics included), with
    /// its topic's `min.insync.replicas` (1 when the topic does not set it).
    #[must_use]
    pub fn controller_partitions(
        &self,
        cluster: ClusterIdx,
    ) -> Vec<(
        mirror_core::protocol::metadata::PartitionRegistration,
        usize,
    )> {
        let arc = self.world.node_state(NodeId::controller(cluster));
        let g = lock(&arc);
        g.as_controller()
            .map(|c| {
                let image = c.image();
                image
                    .topics
                    .values()
                    .flat_map(|t| {
                        let min_isr = image
                            .topic_config(&t.name, "min.insync.replicas")
                            .and_then(|v| v.parse().ok())
                            .unwrap_or(1);
                        t.partitions.values().map(move |p| (p.clone(), min_isr))
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Brokers the controller has registered and not fenced.
    #[must_use]
    pub fn unfenced_brokers(&self, cluster: ClusterIdx) -> Vec<BrokerId> {
        let arc = self.world.node_state(NodeId::controller(cluster));
        let g = lock(&arc);
        g.as_controller()
            .map(|c| {
                c.image()
                    .brokers
                    .iter()
                    .filter(|(_, r)| !r.fenced)
                    .map(|(b, _)| *b)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The partition's assigned replicas per the controller (empty when unknown).
    #[must_use]
    pub fn replicas(&self, cluster: ClusterIdx, tp: &TopicPartition) -> Vec<BrokerId> {
        let arc = self.world.node_state(NodeId::controller(cluster));
        let g = lock(&arc);
        g.as_controller()
            .and_then(|c| c.image().partition(tp).map(|r| r.replicas.clone()))
            .unwrap_or_default()
    }

    /// Runs `f` on a broker.
    pub fn with_broker<R>(
        &self,
        cluster: ClusterIdx,
        id: BrokerId,
        f: impl FnOnce(&Broker) -> R,
    ) -> Option<R> {
        let arc = self.world.node_state(NodeId::broker(cluster, id));
        let g = lock(&arc);
        g.as_broker().map(f)
    }

    /// LEO and HW of a replica.
    #[must_use]
    pub fn replica_offsets(
        &self,
        cluster: ClusterIdx,
        id: BrokerId,
        tp: &TopicPartition,
    ) -> Option<(Offset, Offset)> {
        self.with_broker(cluster, id, |b| {
            b.partition(tp)
                .map(|p| (p.log.log_end_offset(), p.log.high_watermark()))
        })
        .flatten()
    }

    /// Whether `follower`'s HW for `tp` stays below leader `leader`'s only because Kafka's
    /// incremental fetch session will not tell it again: the follower holds the leader's
    /// LEO, it received the current HW without applying it, and the leader's session with it
    /// cached that HW. This
    /// happens after a truncation on a diverging epoch: the follower does not apply that
    /// answer's HW (`AbstractFetcherThread`: "Those will be updated by the next fetch"), but
    /// the session cached it (`CachedPartition.maybeUpdateResponseData`), so the next
    /// answers leave the partition out until the leader's HW moves.
    #[must_use]
    pub fn session_keeps_follower_hw_stale(
        &self,
        cluster: ClusterIdx,
        leader: BrokerId,
        follower: BrokerId,
        tp: &TopicPartition,
    ) -> bool {
        let Some((leo, hw)) = self.replica_offsets(cluster, leader, tp) else {
            return false;
        };
        let cached = self
            .with_broker(cluster, leader, |b| b.fetch_session_told_hw(follower, tp))
            .flatten();
        // The follower received the current HW (it is not in flight) and did not apply it.
        let received = self
            .with_broker(cluster, follower, |b| {
                b.fetch_state(tp)
                    .filter(|(l, _)| *l == leader)
                    .and_then(|(_, part)| part.told_high_watermark)
            })
            .flatten();
        matches!(self.replica_offsets(cluster, follower, tp), Some((f_leo, f_hw)) if f_leo == leo && f_hw < hw)
            && cached == Some(hw)
            && received == Some(hw)
    }

    /// Kafka-level fault: an unclean election for `tp` (the partition must have no leader).
    pub async fn unclean_election(&self, cluster: ClusterIdx, tp: &TopicPartition) -> ErrorCode {
        self.unclean_election_of(cluster, tp, None).await
    }

    /// [`Self::unclean_election`] that, with `candidate`, elects as if every other replica
    /// were shut down (the `ElectLeaders` test hook: how Kafka's tests choose the new
    /// leader).
    pub async fn unclean_election_of(
        &self,
        cluster: ClusterIdx,
        tp: &TopicPartition,
        candidate: Option<BrokerId>,
    ) -> ErrorCode {
        let req = Request::ElectLeaders {
            partitions: vec![tp.clone()],
            unclean: true,
            test_only_candidate: candidate,
        };
        match self.admin(cluster, req).await {
            Some(Response::PartitionErrors { results }) => results
                .first()
                .map_or(ErrorCode::UnknownServerError, |r| r.1),
            Some(Response::Error { error }) => error,
            _ => ErrorCode::RequestTimedOut,
        }
    }

    /// The `TestTruncateLog` hook: `broker` truncates its replica of `tp` to `offset`, as a
    /// Kafka test calls `UnifiedLog.truncateTo` on one broker's log. The request travels the
    /// simulated network from a one-shot client (`None`: no answer within 20 s).
    pub async fn test_truncate_log(
        &self,
        cluster: ClusterIdx,
        broker: BrokerId,
        tp: &TopicPartition,
        offset: Offset,
    ) -> Option<ErrorCode> {
        let req = Request::TestTruncateLog {
            partition: tp.clone(),
            offset,
        };
        match self.request_to(cluster, broker, req).await? {
            Response::PartitionErrors { results } => Some(
                results
                    .first()
                    .map_or(ErrorCode::UnknownServerError, |r| r.1),
            ),
            Response::Error { error } => Some(error),
            _ => Some(ErrorCode::UnknownServerError),
        }
    }

    /// Kafka-level fault: DeleteRecords before `offset` on the leader.
    pub async fn delete_records(
        &self,
        cluster: ClusterIdx,
        tp: &TopicPartition,
        offset: Offset,
    ) -> ErrorCode {
        let Some(leader) = self.leader(cluster, tp) else {
            return ErrorCode::LeaderNotAvailable;
        };
        let slot: ResponseSlot = Arc::new(Mutex::new(None));
        let s2 = Arc::clone(&slot);
        let req = Request::DeleteRecords {
            partitions: vec![(tp.clone(), offset)],
            timeout_ms: 30_000,
        };
        self.add_client(cluster, move |boot| {
            Box::new(OneShot::new(
                boot.id,
                vec![leader],
                req.clone(),
                Arc::clone(&s2),
                5_000,
            ))
        });
        self.wait_until(30_000, |_| lock(&slot).is_some()).await;
        match lock(&slot).take() {
            Some(Response::DeleteRecords { partitions }) => partitions
                .first()
                .map_or(ErrorCode::UnknownServerError, |p| p.1),
            _ => ErrorCode::RequestTimedOut,
        }
    }

    /// Sends `req` to one broker and waits for the answer (`None`: none within 20 s; the
    /// client retries after 15 s).
    pub async fn request_to(
        &self,
        cluster: ClusterIdx,
        broker: BrokerId,
        req: Request,
    ) -> Option<Response> {
        let slot: ResponseSlot = Arc::new(Mutex::new(None));
        let s2 = Arc::clone(&slot);
        self.add_client(cluster, move |boot| {
            Box::new(OneShot::new(
                boot.id,
                vec![broker],
                req.clone(),
                Arc::clone(&s2),
                15_000,
            ))
        });
        self.wait_until(20_000, |_| lock(&slot).is_some()).await;
        lock(&slot).take()
    }

    /// A group request sent to the group's coordinator: FindCoordinator first, retried while
    /// the coordinator topic is being created or moves (NOT_COORDINATOR, LOAD_IN_PROGRESS).
    pub async fn group_request(
        &self,
        cluster: ClusterIdx,
        group: &str,
        req: Request,
    ) -> Option<Response> {
        for _ in 0..20 {
            let find = Request::FindCoordinator {
                key: group.into(),
                kind: mirror_core::protocol::messages::CoordinatorKind::Group,
            };
            if let Some(Response::FindCoordinator {
                error: ErrorCode::None,
                node: Some(n),
            }) = self.admin(cluster, find).await
            {
                match self.request_to(cluster, n, req.clone()).await {
                    Some(Response::Error {
                        error: ErrorCode::NotCoordinator | ErrorCode::CoordinatorLoadInProgress,
                    })
                    | None => {}
                    r => return r,
                }
            }
            self.run_for_ms(500).await;
        }
        None
    }

    /// Produces one batch to the current leader of `tp` and waits for the answer:
    /// `(error, base offset)`, `None` without a leader or an answer.
    pub async fn produce_batch(
        &self,
        cluster: ClusterIdx,
        tp: &TopicPartition,
        batch: mirror_core::record::RecordBatch,
        acks: i16,
    ) -> Option<(ErrorCode, Offset)> {
        let leader = self.leader(cluster, tp)?;
        self.produce_batch_to(cluster, leader, tp, batch, acks)
            .await
    }

    /// [`Self::produce_batch`] sent to `broker`, leader or not (the broker answers as Kafka
    /// does: NOT_LEADER_OR_FOLLOWER from a replica that is not the leader).
    pub async fn produce_batch_to(
        &self,
        cluster: ClusterIdx,
        broker: BrokerId,
        tp: &TopicPartition,
        batch: mirror_core::record::RecordBatch,
        acks: i16,
    ) -> Option<(ErrorCode, Offset)> {
        let req = Request::Produce {
            transactional_id: None,
            acks,
            timeout_ms: 10_000,
            partitions: vec![(tp.clone(), batch)],
        };
        match self.request_to(cluster, broker, req).await {
            Some(Response::Produce { partitions }) => {
                partitions.first().map(|p| (p.error, p.base_offset))
            }
            _ => None,
        }
    }

    /// A scenario's idempotent or transactional batch values, which `no_duplicates` then
    /// watches (`ClientRecords::on_scenario_write`).
    pub fn watch_scenario_write(
        &self,
        cluster: ClusterIdx,
        tp: &TopicPartition,
        values: &[bytes::Bytes],
    ) {
        lock(&self.checker)
            .clients
            .on_scenario_write(cluster, tp, values);
    }

    /// KIP-1279: creates mirror `name` on `destination`, pulling from `source`.
    pub async fn create_mirror(
        &self,
        destination: ClusterIdx,
        name: &str,
        source: ClusterIdx,
    ) -> ErrorCode {
        self.create_mirror_with(destination, name, source, &[])
            .await
    }

    /// KIP-1279: [`Self::create_mirror`] with extra mirror configs (e.g.
    /// `mirror.metadata.refresh.interval.ms`, `topic.properties.exclude`).
    pub async fn create_mirror_with(
        &self,
        destination: ClusterIdx,
        name: &str,
        source: ClusterIdx,
        extra: &[(&str, &str)],
    ) -> ErrorCode {
        let source_spec = &self.spec.clusters[usize::from(source.0)];
        let brokers: Vec<String> = self
            .broker_ids(source)
            .iter()
            .map(|b| b.0.to_string())
            .collect();
        let configs = [
            ("source.cluster".to_string(), source_spec.name.clone()),
            (
                mirror_core::broker::mirror::coordinator::SOURCE_CLUSTER_INDEX_CONFIG.to_string(),
                source.0.to_string(),
            ),
            (
                mirror_core::broker::mirror::coordinator::BOOTSTRAP_SERVERS_CONFIG.to_string(),
                brokers.join(","),
            ),
        ]
        .into_iter()
        .chain(
            extra
                .iter()
                .map(|(k, v)| ((*k).to_string(), (*v).to_string())),
        )
        .collect();
        let req = Request::CreateMirror {
            mirror_name: name.into(),
            configs,
        };
        mirror_error(self.admin(destination, req).await)
    }

    /// KIP-1279: starts mirroring `topics` (their ids and partition counts are read from the
    /// source, as the broker does in the prototype).
    pub async fn start_mirror_topics(
        &self,
        destination: ClusterIdx,
        name: &str,
        source: ClusterIdx,
        topics: &[&str],
    ) -> ErrorCode {
        self.start_mirror_topics_with(destination, name, source, topics, (&[], &[]))
            .await
    }

    /// KIP-1279: [`Self::start_mirror_topics`] with the request's `IncludePatterns` and
    /// `ExcludePatterns` (merged into the mirror's `topics.include` / `topics.exclude` by
    /// the controller; the coordinator's discovery starts what they match).
    pub async fn start_mirror_topics_with(
        &self,
        destination: ClusterIdx,
        name: &str,
        source: ClusterIdx,
        topics: &[&str],
        (include, exclude): (&[String], &[String]),
    ) -> ErrorCode {
        let req = Request::Metadata {
            topics: Some(topics.iter().map(|t| (*t).to_string()).collect()),
        };
        let Some(Response::Metadata { topics: meta, .. }) = self.admin(source, req).await else {
            return ErrorCode::RequestTimedOut;
        };
        // A topic the source's metadata does not describe (e.g. a restarted broker whose
        // image is not loaded yet answers UNKNOWN_TOPIC_OR_PARTITION) fails the start: an
        // empty or partial request would succeed without starting that topic.
        if let Some(t) = topics
            .iter()
            .find(|t| !meta.iter().any(|m| m.name == **t && m.error.is_ok()))
        {
            return meta
                .iter()
                .find(|m| m.name == *t)
                .map_or(ErrorCode::UnknownTopicOrPartition, |m| m.error);
        }
        let topics = meta
            .into_iter()
            .filter(|t| t.error.is_ok())
            .map(|t| mirror_core::protocol::messages::MirrorTopic {
                name: t.name,
                topic_id: t.topic_id,
                num_partitions: i32::try_from(t.partitions.len()).unwrap_or(0),
            })
            .collect();
        let req = Request::StartMirrorTopics {
            mirror_name: name.into(),
            topics,
            include_patterns: include.to_vec(),
            exclude_patterns: exclude.to_vec(),
            state_validation_offset: None,
        };
        // Per-topic errors count too: a start that starts nothing is not a success.
        match self.admin(destination, req).await {
            Some(Response::MirrorAdmin { error, topics, .. }) if error.is_ok() => topics
                .iter()
                .map(|t| t.error)
                .find(|e| !e.is_ok())
                .unwrap_or(ErrorCode::None),
            r => mirror_error(r),
        }
    }

    /// KIP-1279: stops mirroring (failover).
    pub async fn stop_mirror_topics(
        &self,
        destination: ClusterIdx,
        name: &str,
        topics: &[&str],
    ) -> ErrorCode {
        self.stop_mirror_topics_with(destination, name, topics, &[])
            .await
    }

    /// KIP-1279: [`Self::stop_mirror_topics`] with the request's `Patterns` (removed from
    /// `topics.include` or added to `topics.exclude`; the mirror's topics they match stop).
    pub async fn stop_mirror_topics_with(
        &self,
        destination: ClusterIdx,
        name: &str,
        topics: &[&str],
        patterns: &[String],
    ) -> ErrorCode {
        let req = Request::StopMirrorTopics {
            mirror_name: name.into(),
            topics: topics.iter().map(|t| (*t).to_string()).collect(),
            patterns: patterns.to_vec(),
            state_validation_offset: None,
        };
        mirror_error(self.admin(destination, req).await)
    }

    /// KIP-1279: pauses or resumes mirroring.
    pub async fn pause_mirror_topics(
        &self,
        destination: ClusterIdx,
        name: &str,
        topics: &[&str],
        pause: bool,
    ) -> ErrorCode {
        let topics = topics.iter().map(|t| (*t).to_string()).collect();
        let req = if pause {
            Request::PauseMirrorTopics {
                mirror_name: name.into(),
                topics,
            }
        } else {
            Request::ResumeMirrorTopics {
                mirror_name: name.into(),
                topics,
            }
        };
        mirror_error(self.admin(destination, req).await)
    }

    /// KIP-1279 latest: RecoverMirrorTopics, sent to every live broker of the cluster (each
    /// recovers the FAILED partitions it leads, as an admin client would send it to each
    /// partition's leader). The first error any broker or topic reports, NONE otherwise.
    pub async fn recover_mirror_topics(
        &self,
        cluster: ClusterIdx,
        name: &str,
        topics: &[&str],
    ) -> ErrorCode {
        let topics: Vec<String> = topics.iter().map(|t| (*t).to_string()).collect();
        let mut first = ErrorCode::None;
        let live: Vec<BrokerId> = self
            .broker_ids(cluster)
            .into_iter()
            .filter(|b| !self.world.status(NodeId::broker(cluster, *b)).is_down())
            .collect();
        for b in live {
            let req = Request::RecoverMirrorTopics {
                mirror_name: name.into(),
                topics: topics.clone(),
            };
            let e = match self.request_to(cluster, b, req).await {
                Some(Response::TopicErrors { results }) => results
                    .iter()
                    .map(|r| r.1)
                    .find(|e| !e.is_ok())
                    .unwrap_or(ErrorCode::None),
                _ => ErrorCode::RequestTimedOut,
            };
            if first.is_ok() {
                first = e;
            }
        }
        first
    }

    /// Creates ACLs through any broker (forwarded to the controller); the per-ACL errors,
    /// or `None` when no answer came.
    pub async fn create_acls(
        &self,
        cluster: ClusterIdx,
        creations: Vec<mirror_core::protocol::acl::AclBinding>,
    ) -> Option<Vec<ErrorCode>> {
        match self.admin(cluster, Request::CreateAcls { creations }).await {
            Some(Response::CreateAcls { results }) => {
                Some(results.into_iter().map(|(e, _)| e).collect())
            }
            _ => None,
        }
    }

    /// Deletes the ACLs `filters` match (forwarded to the controller); per filter, the ACLs
    /// it removed, or `None` when no answer came.
    pub async fn delete_acls(
        &self,
        cluster: ClusterIdx,
        filters: Vec<mirror_core::protocol::acl::AclBindingFilter>,
    ) -> Option<Vec<mirror_core::protocol::acl::DeleteAclsFilterResult>> {
        match self.admin(cluster, Request::DeleteAcls { filters }).await {
            Some(Response::DeleteAcls { results }) => Some(results),
            _ => None,
        }
    }

    /// `DescribeAcls` at one of the cluster's brokers (answered from its image).
    pub async fn describe_acls(
        &self,
        cluster: ClusterIdx,
        filter: mirror_core::protocol::acl::AclBindingFilter,
    ) -> Option<Vec<mirror_core::protocol::acl::AclBinding>> {
        match self.admin(cluster, Request::DescribeAcls { filter }).await {
            Some(Response::DescribeAcls {
                error: ErrorCode::None,
                acls,
            }) => Some(acls),
            _ => None,
        }
    }

    /// The cluster's ACLs as its controller's image has them, sorted (a synchronous read
    /// for `wait_until` conditions).
    #[must_use]
    pub fn controller_acls(
        &self,
        cluster: ClusterIdx,
    ) -> Vec<mirror_core::protocol::acl::AclBinding> {
        let arc = self.world.node_state(NodeId::controller(cluster));
        let g = lock(&arc);
        let mut acls: Vec<_> = g
            .as_controller()
            .map(|c| c.image().acls.values().cloned().collect())
            .unwrap_or_default();
        acls.sort();
        acls
    }

    /// The mirror state of `tp` as its leader knows it.
    #[must_use]
    pub fn mirror_state(
        &self,
        cluster: ClusterIdx,
        tp: &TopicPartition,
    ) -> Option<mirror_core::mirror::MirrorPartitionState> {
        let leader = self.leader(cluster, tp)?;
        self.with_broker(cluster, leader, |b| {
            b.mirror_runs().get(tp).map(|r| r.state())
        })
        .flatten()
    }

    /// The first violation so far.
    #[must_use]
    pub fn violation(&self) -> Option<Violation> {
        lock(&self.checker).violation().cloned()
    }

    /// True when one of Kafka's own declared losses explains the open transaction of `tp` on
    /// `broker` of `cluster` (see [`kafka_loss_explains_hang`]).
    #[must_use]
    pub fn kafka_loss_explains_hang(
        &self,
        cluster: ClusterIdx,
        broker: BrokerId,
        tp: &TopicPartition,
    ) -> bool {
        let (losses, own_cut) = {
            let c = lock(&self.checker);
            let key = (NodeId::broker(cluster, broker), tp.clone());
            (
                c.ghost.losses.clone(),
                c.ghost.last_corruption_cut.get(&key).copied(),
            )
        };
        self.with_broker(cluster, broker, |b| {
            b.partition(tp)
                .is_some_and(|p| kafka_loss_explains_hang(&losses, (cluster, tp), &p.log, own_cut))
        })
        .unwrap_or(false)
    }

    /// True when a KIP-1279 mirror truncation of `tp` in `cluster` cut above where the
    /// transaction `broker`'s log holds open begins: the cut fell between the transaction's
    /// first record and its end marker and took the marker (fresh mirror seed 912441, F1). A
    /// cut at a true divergence point never does this: records below it are the same history
    /// on both clusters, and the stop's LSO cut (at the LSO, so not above it) left no
    /// transaction open there. So the qualifier names an outcome (the hang) and what made it
    /// unrepairable, and a hang of any other cause keeps the bare `lso_reaches_hw` kind.
    #[must_use]
    pub fn mirror_cut_inside_open_txn(
        &self,
        cluster: ClusterIdx,
        broker: BrokerId,
        tp: &TopicPartition,
    ) -> bool {
        let Some(start) = self
            .with_broker(cluster, broker, |b| {
                b.partition(tp)
                    .and_then(|p| p.log.producer_state().first_unstable_offset())
            })
            .flatten()
        else {
            return false;
        };
        let partition = DeclaredLoss::partition_of(cluster, tp);
        lock(&self.checker).ghost.losses.iter().any(|l| {
            l.is_mirror_truncation() && l.partition == partition && l.from_offset > start.0
        })
    }

    /// Whether a declared KIP-1279 mirror truncation of `tp` on `cluster` cut its log below
    /// `offset`: the records under a group offset synced there may be gone (S17).
    #[must_use]
    pub fn mirror_truncation_below(
        &self,
        cluster: ClusterIdx,
        tp: &TopicPartition,
        offset: Offset,
    ) -> bool {
        let partition = DeclaredLoss::partition_of(cluster, tp);
        lock(&self.checker).ghost.losses.iter().any(|l| {
            l.is_mirror_truncation() && l.partition == partition && l.from_offset < offset.0
        })
    }

    /// True when the transaction `broker`'s log of `tp` holds open (the lowest one) belongs
    /// to a producer whose transaction coordinator no longer has it open on `tp`, after a
    /// replica of that coordinator's `__transaction_state` partition dropped records after
    /// the transaction's first batch was acknowledged (fresh mirror seed 140445159, on the
    /// source alone) or records appended between the producer's previous acknowledged write
    /// to `tp` and that batch's acknowledgement (fresh single-cluster seed 971804). Kafka's coordinator loads its partition up to the log end, not the
    /// HW (`TransactionStateManager.loadTransactionMetadata`; chosen in the KAFKA-5059
    /// review), and answers from that state at once: an AddPartitionsToTxn whose partitions
    /// are already in an Ongoing record it loaded gets NONE with nothing written. When that
    /// record never commits (a clean election to an ISR member that lacked it), the next
    /// coordinator loads the previous, completed state, so the data the producer wrote under
    /// that answer belongs to a transaction no coordinator knows: no marker comes, the
    /// producer's EndTxn retry is answered NONE (a retry of the completed commit), and the
    /// partition's LSO stops there until that producer's next transaction on it. No declared
    /// loss is involved (every acknowledged write survives). The group coordinator's runtime
    /// (KIP-848) holds such answers until the HW passes the last written offset; the
    /// transaction coordinator does not. A coordinator that still has the transaction open
    /// (markers pending, a PREPARE record waiting) or never knew the producer (a mirrored
    /// transaction on the destination) does not qualify, so every other hang keeps the bare
    /// `lso_reaches_hw` kind.
    #[must_use]
    pub fn coordinator_lost_open_txn(
        &self,
        cluster: ClusterIdx,
        broker: BrokerId,
        tp: &TopicPartition,
    ) -> bool {
        let Some((pid, first)) = self
            .with_broker(cluster, broker, |b| {
                b.partition(tp).and_then(|p| {
                    p.log
                        .producer_state()
                        .ongoing_txns()
                        .values()
                        .next()
                        .map(|t| (t.producer_id, t.first_offset))
                })
            })
            .flatten()
        else {
            return false;
        };
        // Every hosted coordinator's view of that producer: the `__transaction_state`
        // partition it lives in, and whether the transaction is open there on `tp`.
        let mut views = Vec::new();
        for id in self.broker_ids(cluster) {
            self.with_broker(cluster, id, |b| {
                for (partition, c) in b.coordinators().txn_coordinators() {
                    for m in c.transactions().filter(|m| m.producer_id == pid) {
                        let open = m.pending_state().is_some()
                            || (matches!(
                                m.state,
                                TxnState::Ongoing
                                    | TxnState::PrepareCommit
                                    | TxnState::PrepareAbort
                            ) && m.partitions.contains(tp));
                        views.push((partition, open));
                    }
                }
            });
        }
        if views.is_empty() || views.iter().any(|(_, open)| *open) {
            return false;
        }
        // The transaction's first batch was written and acknowledged in this cluster (not
        // mirrored from another: a destination's coordinator never knew the source's producers).
        let c = lock(&self.checker);
        let Some(acked_at) = c
            .ghost
            .acked
            .iter()
            .find(|w| {
                w.cluster == cluster
                    && w.tp == *tp
                    && w.transactional
                    && w.base_offset <= first
                    && first.0 < w.base_offset.0 + w.values.len() as i64
            })
            .map(|w| w.event_seq)
        else {
            return false;
        };
        // The coordinator answered this transaction's AddPartitionsToTxn for `tp` after the
        // producer's previous transaction on `tp` ended, so after its last write there was
        // acknowledged; the record it answered from is one a truncation dropped then, either
        // later (the record was still there at the ack) or already before it (a zombie's
        // record, cut when it learned the new epoch while the produce waited for the ISR:
        // fresh single-cluster seed 971804).
        let previous_ack = c
            .ghost
            .acked
            .iter()
            .filter(|w| {
                w.cluster == cluster
                    && w.tp == *tp
                    && w.producer_id == pid
                    && w.event_seq < acked_at
            })
            .map(|w| w.event_seq)
            .max()
            .unwrap_or(0);
        views.iter().any(|(partition, _)| {
            c.ghost
                .txn_log_truncations
                .get(&(cluster, *partition))
                .into_iter()
                .flatten()
                .any(|t| {
                    t.at > acked_at
                        || t.dropped_appended_at
                            .iter()
                            .any(|a| (previous_ack + 1..acked_at).contains(a))
                })
        })
    }

    /// Leader epochs of `tp` in which leaders of both clusters appended records of their own
    /// ([`crate::check::ghost::GhostPartition::own_epochs`]).
    #[must_use]
    pub fn epochs_led_in_both(
        &self,
        a: ClusterIdx,
        b: ClusterIdx,
        tp: &TopicPartition,
    ) -> std::collections::BTreeSet<mirror_core::types::LeaderEpoch> {
        let c = lock(&self.checker);
        let own = |x: ClusterIdx| {
            c.ghost
                .partitions
                .get(&(x, tp.clone()))
                .map(|g| g.own_epochs.clone())
                .unwrap_or_default()
        };
        own(a).intersection(&own(b)).copied().collect()
    }

    /// True when `replica` of `tp` in `cluster` is cut at `leader`'s mid-batch log start
    /// and Kafka can never bring it back (K2, see [`follower_cut_at_mid_batch_log_start`]).
    #[must_use]
    pub fn follower_cut_at_mid_batch_log_start(
        &self,
        cluster: ClusterIdx,
        leader: BrokerId,
        replica: BrokerId,
        tp: &TopicPartition,
    ) -> bool {
        let cut = self
            .with_broker(cluster, replica, |b| {
                b.partition(tp).map(|p| FollowerCut {
                    log_start: p.log.log_start_offset(),
                    log_end: p.log.log_end_offset(),
                    latest_epoch: p.log.epoch_cache().latest_epoch(),
                })
            })
            .flatten();
        let Some(cut) = cut else {
            return false;
        };
        self.with_broker(cluster, leader, |b| {
            b.partition(tp)
                .is_some_and(|p| follower_cut_at_mid_batch_log_start(&p.log, &cut))
        })
        .unwrap_or(false)
    }

    /// Declared losses by cause and the failover RPO so far.
    #[must_use]
    pub fn loss_summary(&self) -> crate::check::ghost::LossSummary {
        let c = lock(&self.checker);
        crate::check::ghost::LossSummary::of(&c.ghost.losses, &c.mirror.rpo)
    }

    /// The design-mechanism rules that broke so far (diagnostics; first of each, in order).
    #[must_use]
    pub fn diagnostics(&self) -> Vec<Violation> {
        lock(&self.checker).diagnostics().to_vec()
    }

    /// End-of-run validations (call after the liveness phase); returns the first violation
    /// of the whole run.
    #[must_use]
    pub fn finish(&self) -> Option<Violation> {
        let nodes = lock(&self.nodes).clone();
        let names = self.world.names().clone();
        let name = |n: NodeId| names.node(n);
        let mut guard = lock(&self.checker);
        let c = &mut *guard;
        if c.violation().is_none()
            && let Err(v) = check_no_lost_acked_writes(&c.ghost, &nodes, &name)
        {
            c.report(v);
        }
        if c.violation().is_none()
            && let Err(v) =
                crate::check::outcomes::check_no_duplicates(&mut c.clients, &nodes, &name)
        {
            c.report(v);
        }
        // A mirror partition that reached STOPPED keeps no open transaction: its producers
        // were the source's, whose coordinator will never end it here (kip1279.md A.1: the
        // stop truncates to the LSO; latest writes ABORT markers). Every other partition is
        // judged once the chaos producers stop (`chaos::converge`).
        let losses = c.ghost.losses.clone();
        let cuts = c.ghost.last_corruption_cut.clone();
        let stopped = |n: NodeId, tp: &TopicPartition, _lso: Offset| {
            let own_cut = cuts.get(&(n, tp.clone())).copied();
            nodes.get(&n).is_some_and(|arc| {
                lock(arc).as_broker().is_some_and(|b| {
                    // Kafka's own declared losses may cut a marker (see
                    // `kafka_loss_explains_hang`).
                    b.partition(tp).is_some_and(|p| {
                        !kafka_loss_explains_hang(&losses, (n.cluster, tp), &p.log, own_cut)
                    }) && b.mirror_runs().get(tp).map(|r| r.state())
                        == Some(mirror_core::mirror::MirrorPartitionState::Stopped)
                })
            })
        };
        if c.violation().is_none()
            && let Err(v) = crate::check::outcomes::check_lso_reaches_hw(&nodes, &stopped, &name)
        {
            c.report(v);
        }
        if c.violation().is_none()
            && let Err(v) = c.mirror.check_failback(&c.ghost, &nodes, &name)
        {
            c.report(v);
        }
        let live = |n: NodeId| !self.world.status(n).is_down();
        if c.violation().is_none()
            && let Err(v) = crate::check::recovery::files_hold_logs(&c.disks, &nodes, &live, &name)
        {
            c.report(v);
        }
        c.violation().cloned()
    }
}

/// True when one of Kafka's own declared losses in `losses` (not a KIP-1279 mirror truncation)
/// explains the transaction `log` of `tp` holds open: Kafka's known consequence
/// of that loss (KIP-664 finds such hanging transactions), not a hang the producers or the
/// mirror caused. Each an exact cause (product.md §5):
/// - a loss of `tp` at or above where the open transaction begins, in `cluster` or in a
///   cluster it mirrors `tp` with (mirrors keep the topic name and the offsets: a source's
///   hanging transaction is copied as it is). It cut the marker, or the stop's LSO cut (an
///   unclean election brought back the tail the ISR had cut: mirror chaos seed 4251). The
///   transaction's own start counts, not the LSO: the LSO is clamped up to the log start,
///   and a marker lost above a DeleteRecords' new start leaves a transaction that began below
///   it (seed 2912: data 41..50, COMMIT at 51 lost, log start 51);
/// - a loss of a `__transaction_state` partition, with a transaction begun after the last
///   PID reset (or in a log that has none): the coordinator forgot the transaction or that
///   it touched this partition, so no marker comes (seed 9651, plain Kafka on the source:
///   the AddPartitionsToTxn record and PrepareCommit were unflushed on the last ISR member),
///   or a retried produce opened it again (the hazard KIP-890 verification closes, optional
///   in kafka-semantics §1.7; seed 2680, where a failback then copied the hang to the old
///   source, reset included). A mirrored transaction open across a stop (below the reset)
///   is never excused this way: closing it is the stop's job;
/// - bit rot that cut this replica's log (`own_cut`, its last corrupt-batch cut) at or above
///   where the transaction begins, once it led with that log (a declared loss of `tp`: an
///   unclean election, or `corrupt_batch_on_last_isr_member`): the marker went with the
///   rotten batch. The declared loss itself starts where the history it replaced differs,
///   which may be far below (fresh mirror seed 912889: an unclean leader with 0..72 had cut
///   the committed history to 72, then the replica cut at 342 led uncleanly and brought back
///   72..341 with a transaction begun at 332 whose marker had been above 342);
/// - a loss of `tp` that cut this transaction's committed marker from another history,
///   wherever it sat ([`marker_cut_after_txn_began`]).
fn kafka_loss_explains_hang(
    losses: &[DeclaredLoss],
    (cluster, tp): (ClusterIdx, &TopicPartition),
    log: &mirror_core::log::partition_log::PartitionLog,
    own_cut: Option<mirror_core::types::Offset>,
) -> bool {
    let Some(start) = log.producer_state().first_unstable_offset() else {
        return false;
    };
    let kafka = |l: &&DeclaredLoss| !l.is_mirror_truncation();
    let suffix = format!(":{tp}");
    if losses
        .iter()
        .filter(kafka)
        .any(|l| l.partition.ends_with(&suffix) && l.from_offset >= start.0)
    {
        return true;
    }
    if marker_cut_after_txn_began(losses, &DeclaredLoss::partition_of(cluster, tp), log, start) {
        return true;
    }
    if own_cut.is_some_and(|cut| cut >= start)
        && losses
            .iter()
            .filter(kafka)
            .any(|l| l.partition.ends_with(&suffix))
    {
        return true;
    }
    let after_reset = log
        .batches()
        .rfind(|b| b.control_record() == Some(mirror_core::record::ControlRecord::MirrorPidReset))
        .is_none_or(|reset| reset.base_offset() < start);
    after_reset
        && losses
            .iter()
            .filter(kafka)
            .any(|l| l.partition.contains(":__transaction_state-"))
}

/// True when a Kafka declared loss of `partition` (`cluster:topic-partition`, the log's own
/// cluster only) cut, from a committed history, a COMMIT or ABORT marker of the producer
/// whose transaction `log` holds open at `start`, written after that transaction's first
/// batch (the batch's timestamp; a marker of the same producer and epoch or later). The coordinator ended the transaction in that
/// history and will never write its marker again; the loss brought back a history that holds
/// the transaction's data without it. Offsets do not compare across the two histories: the
/// marker may sit below the transaction's start (fresh single-cluster seed 528767289: the
/// last ISR member lost its whole unflushed log, the COMMIT went to offset 0 of the new
/// history, then the other replica, whose truncation to 0 had never reached its disk, lost
/// its unflushed tail as the last ISR member and came back leading the old 0..207 with the
/// transaction open at 198). Only the log's own cluster counts: another cluster's marker
/// going with its loss does not explain this cluster's copy of the data (seed
/// `seed-no-lso-truncation` 203: the stop kept the mirrored transaction open on the
/// destination, while bit rot on the source's last ISR member later cut the source's marker).
fn marker_cut_after_txn_began(
    losses: &[DeclaredLoss],
    partition: &str,
    log: &mirror_core::log::partition_log::PartitionLog,
    start: mirror_core::types::Offset,
) -> bool {
    let Some(first) = log.batch_containing(start) else {
        return false;
    };
    let (pid, epoch, began_ms) = (
        first.producer_id(),
        first.producer_epoch(),
        first.header().base_timestamp,
    );
    losses
        .iter()
        .filter(|l| !l.is_mirror_truncation() && l.partition == partition)
        .flat_map(|l| &l.markers)
        .any(|m| m.producer_id == pid && m.producer_epoch >= epoch && m.timestamp_ms >= began_ms)
}

/// A follower's log as [`follower_cut_at_mid_batch_log_start`] judges it.
#[derive(Clone, Copy, Debug)]
struct FollowerCut {
    log_start: mirror_core::types::Offset,
    log_end: mirror_core::types::Offset,
    latest_epoch: Option<mirror_core::types::LeaderEpoch>,
}

/// K2, a finding about Kafka: a follower that holds history the leader rewrote (a stale
/// leader's acks=1 tail, a declared loss on the last ISR member, an unclean election) and
/// whose divergence point a DeleteRecords then moved below the leader's log start can never
/// rejoin the ISR (single-cluster chaos seeds 6430, 718001077).
///
/// Kafka's `LeaderEpochFileCache.truncateFromStart` moves the first remaining entry's start
/// up to the new log start, so the leader answers an epoch older than all of its cache with
/// "ends at the log start" (`endOffsetFor`: no floor entry, the next entry's start). The
/// follower truncates to exactly the log start, keeps its own records below it, and fetches
/// there. The leader returns the batch that straddles the log start. Kafka appends a batch
/// that begins below the LEO only into an empty log (`Partition.doAppendRecordsToFollower
/// OrFutureReplica`, UnexpectedAppendOffsetException, KAFKA-6975's restart applies only when
/// LEO == log start). This follower's log is not empty, so Kafka marks the partition failed
/// (no fetch until its next leader epoch, as the model does: `Event::FetchPartitionFailed`)
/// and the follower never rejoins the ISR.
///
/// All of these must hold: the leader's first batch straddles its log start; the follower's
/// LEO is that log start while its own log starts below it; and the follower's latest epoch
/// is older than every epoch the leader's cache holds (so `endOffsetFor` gave the log start).
fn follower_cut_at_mid_batch_log_start(
    leader: &mirror_core::log::partition_log::PartitionLog,
    follower: &FollowerCut,
) -> bool {
    let start = leader.log_start_offset();
    let straddles = leader
        .batches()
        .next()
        .is_some_and(|b| b.base_offset() < start && start <= b.last_offset());
    let cut = follower.log_end == start && follower.log_start < start;
    let older = match (follower.latest_epoch, leader.epoch_cache().earliest_entry()) {
        (Some(f), Some(l)) => f < l.epoch,
        _ => false,
    };
    straddles && cut && older
}

/// Makes the checker (and the recorder, if any) the world's observer.
fn install_observer(
    world: &World<SimNode>,
    checker: &Arc<Mutex<Checker>>,
    nodes: &Arc<Mutex<NodeMap>>,
    recorder: Option<Arc<Mutex<Recorder>>>,
) {
    let checker = Arc::clone(checker);
    let nodes = Arc::clone(nodes);
    let names = world.names().clone();
    world.set_observer(move |ctx, event| {
        let nodes = lock(&nodes);
        let name = |n: NodeId| names.node(n);
        lock(&checker).on_event(ctx, event, &nodes, &name);
        if let Some(r) = &recorder {
            lock(r).on_event(ctx, event, &nodes, &name);
        }
    });
}

fn mirror_error(resp: Option<Response>) -> ErrorCode {
    match resp {
        Some(Response::MirrorAdmin { error, .. }) | Some(Response::Error { error }) => error,
        Some(_) => ErrorCode::UnknownServerError,
        None => ErrorCode::RequestTimedOut,
    }
}

#[cfg(test)]
mod hang_tests {
    use super::kafka_loss_explains_hang;
    use crate::check::ghost::{CutMarker, DeclaredLoss};
    use mirror_core::log::partition_log::{LogConfig, PartitionLog};
    use mirror_core::log::producer_state::AppendOrigin;
    use mirror_core::protocol::ClusterIdx;
    use mirror_core::record::{BatchBuilder, SimpleRecord};
    use mirror_core::types::{LeaderEpoch, ProducerEpoch, ProducerId, Sequence, TopicPartition};

    /// The cluster of the logs under test.
    const CL: ClusterIdx = ClusterIdx(0);

    fn loss(partition: &str, from: i64, cause: &str) -> DeclaredLoss {
        DeclaredLoss {
            partition: partition.into(),
            from_offset: from,
            batches: 1,
            records: 1,
            span_ms: 0,
            cause: cause.into(),
            t_micros: 0,
            markers: Vec::new(),
        }
    }

    /// 0..1 plain, then (with `reset`) a PID reset at 2, then a transaction left open.
    fn log_with_open_txn(reset: bool) -> PartitionLog {
        let mut log = PartitionLog::new(LogConfig::default());
        let e = LeaderEpoch(0);
        let recs = [SimpleRecord::value(0, "a"), SimpleRecord::value(0, "b")];
        log.append_as_leader(&BatchBuilder::new().build(&recs), e, AppendOrigin::Client)
            .expect("append");
        if reset {
            let b = BatchBuilder::new().build_mirror_pid_reset("src", 0);
            log.append_as_leader(&b, e, AppendOrigin::Coordinator)
                .expect("reset");
        }
        let txn = BatchBuilder::transactional(ProducerId(3), ProducerEpoch(0), Sequence(0));
        log.append_as_leader(&txn.build(&recs), e, AppendOrigin::Client)
            .expect("txn");
        log
    }

    /// A transaction open at 0..1, then the stop's PID reset at 2.
    fn log_across_a_stop() -> PartitionLog {
        let mut log = PartitionLog::new(LogConfig::default());
        let e = LeaderEpoch(0);
        let recs = [SimpleRecord::value(0, "a"), SimpleRecord::value(0, "b")];
        let txn = BatchBuilder::transactional(ProducerId(3), ProducerEpoch(0), Sequence(0));
        log.append_as_leader(&txn.build(&recs), e, AppendOrigin::Client)
            .expect("txn");
        let b = BatchBuilder::new().build_mirror_pid_reset("src", 0);
        log.append_as_leader(&b, e, AppendOrigin::Coordinator)
            .expect("reset");
        log
    }

    #[test]
    fn a_kafka_loss_at_or_above_the_open_transaction_explains_its_hang() {
        let tp = TopicPartition::new("t0", 0);
        let log = log_with_open_txn(false);
        let start = log
            .producer_state()
            .first_unstable_offset()
            .expect("open")
            .0;
        // Allowed: an unclean election or unflushed loss from the transaction's start on, in
        // this cluster or the one it mirrors with.
        for from in [start, start + 1] {
            let l = [loss("1:t0-0", from, "unclean_election")];
            assert!(
                kafka_loss_explains_hang(&l, (CL, &tp), &log, None),
                "from {from}"
            );
        }
        assert!(kafka_loss_explains_hang(
            &[loss("0:t0-0", start, "unflushed_loss_on_last_isr_member")],
            (CL, &tp),
            &log,
            None
        ));
        // Forbidden: a loss below it, a mirror truncation, another partition.
        for l in [
            loss("1:t0-0", start - 1, "unclean_election"),
            loss("1:t0-0", start, "mirror_truncation"),
            loss("1:t0-1", start, "unclean_election"),
        ] {
            assert!(
                !kafka_loss_explains_hang(std::slice::from_ref(&l), (CL, &tp), &log, None),
                "{l:?}"
            );
        }
    }

    #[test]
    fn a_loss_that_cut_the_transactions_marker_from_another_history_explains_its_hang() {
        // Fresh single-cluster seed 528767289: the COMMIT went to offset 0 of a history a later
        // loss (from 0, below the transaction at 1 here) replaced with the old one.
        let tp = TopicPartition::new("t0", 0);
        let mut log = PartitionLog::new(LogConfig::default());
        let e = LeaderEpoch(0);
        let plain = BatchBuilder::new().build(&[SimpleRecord::value(50, "p")]);
        log.append_as_leader(&plain, e, AppendOrigin::Client)
            .expect("append");
        let txn = BatchBuilder::transactional(ProducerId(3), ProducerEpoch(1), Sequence(0));
        log.append_as_leader(
            &txn.build(&[SimpleRecord::value(100, "a")]),
            e,
            AppendOrigin::Client,
        )
        .expect("txn");
        assert_eq!(
            log.producer_state().first_unstable_offset(),
            Some(mirror_core::types::Offset(1))
        );
        let cut = |(pid, epoch, at): (i64, i16, i64), cause: &str| {
            let mut l = loss("0:t0-0", 0, cause);
            l.markers = vec![CutMarker {
                producer_id: ProducerId(pid),
                producer_epoch: ProducerEpoch(epoch),
                timestamp_ms: at,
            }];
            l
        };
        let explains = |l: DeclaredLoss| kafka_loss_explains_hang(&[l], (CL, &tp), &log, None);
        // Allowed: its marker, or an abort after an epoch bump, written once it had begun.
        assert!(explains(cut(
            (3, 1, 100),
            "unflushed_loss_on_last_isr_member"
        )));
        assert!(explains(cut((3, 2, 400), "unclean_election")));
        // Forbidden: an earlier transaction's marker, another producer's, an older epoch's,
        // the mirror's own truncation, another cluster's loss; with no marker, a loss below the
        // start does not explain it.
        for l in [
            cut((3, 1, 99), "unclean_election"),
            cut((4, 1, 100), "unclean_election"),
            cut((3, 0, 100), "unclean_election"),
            cut((3, 1, 100), "mirror_truncation"),
            loss("0:t0-0", 0, "unclean_election"),
            // Another cluster's marker (the mirror of this partition lost it there).
            DeclaredLoss {
                partition: "1:t0-0".into(),
                ..cut((3, 1, 100), "unclean_election")
            },
        ] {
            assert!(!explains(l.clone()), "{l:?}");
        }
    }

    #[test]
    fn a_bit_rot_cut_of_the_leaders_log_above_the_open_transaction_explains_its_hang() {
        let tp = TopicPartition::new("t0", 0);
        let log = log_with_open_txn(false);
        let start = log.producer_state().first_unstable_offset().expect("open");
        // Fresh mirror seed 912889: the declared loss starts far below the transaction (the
        // history it replaced), the leader's own rot cut is above its start.
        for cause in ["corrupt_batch_on_last_isr_member", "unclean_election"] {
            let rot = [loss("1:t0-0", 0, cause)];
            assert!(kafka_loss_explains_hang(&rot, (CL, &tp), &log, Some(start)));
            assert!(kafka_loss_explains_hang(
                &rot,
                (CL, &tp),
                &log,
                Some(start.plus(3))
            ));
            // Forbidden: a cut below the transaction (its marker was not in the rotten
            // part), or no cut of this replica.
            let below = mirror_core::types::Offset(start.0 - 1);
            assert!(!kafka_loss_explains_hang(
                &rot,
                (CL, &tp),
                &log,
                Some(below)
            ));
            assert!(!kafka_loss_explains_hang(&rot, (CL, &tp), &log, None));
        }
        // Forbidden: a cut with no declared loss of the partition (the replica re-fetched
        // from a leader that had the marker), or only the mirror's own truncation.
        assert!(!kafka_loss_explains_hang(&[], (CL, &tp), &log, Some(start)));
        let mirror = [loss("1:t0-0", 0, "mirror_truncation")];
        assert!(!kafka_loss_explains_hang(
            &mirror,
            (CL, &tp),
            &log,
            Some(start)
        ));
    }

    #[test]
    fn a_coordinator_loss_explains_only_a_transaction_begun_after_the_pid_reset() {
        let tp = TopicPartition::new("t0", 0);
        let coordinator = [loss(
            "1:__transaction_state-2",
            69,
            "unflushed_loss_on_last_isr_member",
        )];
        // Allowed: the new primary's own transaction, after the reset.
        assert!(kafka_loss_explains_hang(
            &coordinator,
            (CL, &tp),
            &log_with_open_txn(true),
            None
        ));
        // Allowed: a plain Kafka log with no reset (this cluster's coordinator forgot it).
        assert!(kafka_loss_explains_hang(
            &coordinator,
            (CL, &tp),
            &log_with_open_txn(false),
            None
        ));
        // Forbidden: a transaction open across the stop (below the reset: the KIP's to
        // close), or a coordinator loss that is the mirror's own truncation.
        assert!(!kafka_loss_explains_hang(
            &coordinator,
            (CL, &tp),
            &log_across_a_stop(),
            None
        ));
        let mirror = [loss("1:__transaction_state-2", 69, "mirror_truncation")];
        assert!(!kafka_loss_explains_hang(
            &mirror,
            (CL, &tp),
            &log_with_open_txn(true),
            None
        ));
    }

    /// `n` batches of `size` records from offset 0 in `epoch`.
    fn log_of(n: usize, size: usize, epoch: i32) -> PartitionLog {
        let mut log = PartitionLog::new(LogConfig::default());
        let recs: Vec<SimpleRecord> = (0..size).map(|_| SimpleRecord::value(0, "x")).collect();
        for _ in 0..n {
            log.append_as_leader(
                &BatchBuilder::new().build(&recs),
                LeaderEpoch(epoch),
                AppendOrigin::Client,
            )
            .expect("append");
        }
        log
    }

    #[test]
    fn a_follower_cut_at_a_mid_batch_log_start_older_than_every_leader_epoch_is_stuck_for_good() {
        use mirror_core::types::Offset;
        let cut = |leader: &PartitionLog, follower: &PartitionLog| {
            super::follower_cut_at_mid_batch_log_start(
                leader,
                &super::FollowerCut {
                    log_start: follower.log_start_offset(),
                    log_end: follower.log_end_offset(),
                    latest_epoch: follower.epoch_cache().latest_epoch(),
                },
            )
        };
        // Leader 0..159 in epoch 3, batches of 10, log start moved into batch 150..159.
        let mut leader = log_of(16, 10, 3);
        leader.update_high_watermark(Offset(160));
        leader
            .maybe_increment_log_start_offset(Offset(155))
            .expect("delete records");
        // Follower: its own epoch-0 0..154, cut at the leader's log start.
        let stuck = log_of(31, 5, 0);
        assert_eq!(stuck.log_end_offset(), Offset(155));
        assert!(cut(&leader, &stuck));
        // Not K2: a follower in an epoch the leader's cache holds (`endOffsetFor` answers
        // from that epoch, not from the log start).
        assert!(!cut(&leader, &log_of(31, 5, 3)));
        // Not K2: a follower elsewhere than the log start (it is merely behind).
        assert!(!cut(&leader, &log_of(30, 5, 0)));
        // Not K2: an empty follower restarted at the log start (KAFKA-6975 handles it).
        let mut empty = PartitionLog::new(LogConfig::default());
        empty.truncate_fully_and_start_at(Offset(155), None);
        assert!(!cut(&leader, &empty));
        // Not K2: a batch-aligned log start (Kafka's fetch then starts at a batch).
        let mut aligned = log_of(16, 10, 3);
        aligned.update_high_watermark(Offset(160));
        aligned
            .maybe_increment_log_start_offset(Offset(150))
            .expect("delete records");
        assert!(!cut(&aligned, &log_of(30, 5, 0)));
    }
}
