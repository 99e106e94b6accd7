//! [`Broker`]: one Kafka broker as a sans-I/O state machine (style.md §2). It registers with
//! its controller, replicates the metadata log, leads and follows partitions, serves
//! Produce/Fetch/ListOffsets/DeleteRecords/WriteTxnMarkers, forwards admin requests to the
//! controller, and writes its logs and checkpoints through [`IoOp`]s.
//!
//! The handlers live in sibling files (`lifecycle.rs`, `handlers.rs`, `fetcher.rs`); this file
//! holds the state, the [`Node`] entry points and the shared helpers.

use std::collections::{BTreeMap, VecDeque};

use bytes::Bytes;

use super::config::BrokerConfig;
use super::fetcher::Fetcher;
use super::metadata_image::MetadataImage;
use super::output::{Event, IoOp, Message, Node, Output};
use super::partition::Partition;
use super::purgatory::Purgatory;
use super::recovery::{self, LoadedPartition, RecoveryScan};
use super::storage;
use super::timers::{TimerId, Timers};
use crate::keyed_map::PartitionMap;
use crate::protocol::{ClusterIdx, CorrelationId, NodeId, NodeRole, Request, Response};
use crate::small_map::SmallMap;
use crate::time::Instant;
use crate::types::{BrokerId, Offset, TopicPartition};

/// Where the broker is in its life.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Lifecycle {
    /// Not yet registered with the controller.
    Starting,
    /// Registered (the controller may still fence it until it catches up).
    Registered,
    /// Stopped for good (disk failure).
    Halted,
}

/// What one of our outstanding requests was for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Pending {
    Register,
    Heartbeat,
    FetchMetadata,
    AlterPartition(TopicPartition, CorrelationId),
    /// A replica fetch; what it named is in the fetcher's session.
    Fetch {
        leader: BrokerId,
    },
    ResetOffset {
        leader: BrokerId,
        tp: TopicPartition,
    },
    /// Internal topics are being created.
    CreateInternalTopics,
    /// A producer id block is being allocated.
    AllocateProducerIds,
    /// Transaction markers sent for a coordinator.
    Markers {
        partition: i32,
        transactional_id: String,
        partitions: Vec<TopicPartition>,
    },
    /// KIP-1279: reading a mirror partition's state, for the run of that leader epoch.
    MirrorRead(TopicPartition, crate::types::LeaderEpoch),
    /// KIP-1279: persisting a transition (or only the failback marker when `None`) for the run
    /// of that leader epoch, with the FAILED reason it carries (reported in the transition's
    /// event).
    MirrorWrite(
        TopicPartition,
        crate::types::LeaderEpoch,
        Option<crate::mirror::MirrorPartitionState>,
        Option<String>,
    ),
    /// KIP-1279: LME lookup at a source broker.
    MirrorLookup {
        tp: TopicPartition,
        broker: BrokerId,
    },
    /// KIP-1279: leader epoch bump at stop.
    BumpLeaderEpochs(TopicPartition),
    /// KIP-1279: source cluster metadata for a mirror.
    SourceMetadata(String, BrokerId),
    /// KIP-1279: a mirror fetch.
    MirrorFetch {
        cluster: ClusterIdx,
        leader: BrokerId,
        sent: Vec<(TopicPartition, Offset)>,
    },
    /// KIP-1279: a metadata-sync request of `mirror`'s sync round `round`.
    MirrorSync {
        mirror: String,
        round: u64,
        step: super::mirror::sync::SyncStep,
    },
    /// KIP-1279: `ReadMirrorStates` of admin validation `.0` (see `admin_validation`).
    MirrorValidationStates(u64),
    /// An admin request relayed to the controller for `client`.
    Forward {
        client: NodeId,
        client_id: CorrelationId,
    },
}

/// One broker.
#[derive(Debug)]
pub struct Broker {
    pub(super) config: BrokerConfig,
    pub(super) me: NodeId,
    pub(super) incarnation: u64,
    pub(super) lifecycle: Lifecycle,
    pub(super) broker_epoch: i64,
    pub(super) image: MetadataImage,
    pub(super) fetch_metadata_in_flight: bool,
    pub(super) partitions: PartitionMap<Partition>,
    /// Logs found on disk at start-up, waiting for metadata to say they are ours.
    pub(super) recovered: BTreeMap<TopicPartition, LoadedPartition>,
    pub(super) hw_checkpoint: BTreeMap<TopicPartition, Offset>,
    pub(super) log_start_checkpoint: BTreeMap<TopicPartition, Offset>,
    /// When the recovery point checkpoint is next written (Kafka's
    /// `kafka-recovery-point-checkpoint` task); set when the periodic timers start.
    pub(super) next_recovery_point_checkpoint: Option<Instant>,
    pub(super) fetchers: SmallMap<BrokerId, Fetcher>,
    pub(super) pending: BTreeMap<CorrelationId, Pending>,
    pub(super) next_correlation: CorrelationId,
    pub(super) purgatory: Purgatory,
    /// KIP-227: the fetch sessions of followers fetching from this broker.
    pub(super) fetch_sessions: super::fetch_session::FetchSessionCache,
    pub(super) timers: Timers,
    pub(super) outputs: VecDeque<Output>,
    pub(super) now: Instant,
    pub(super) coord: super::coordinator_runtime::CoordinatorHost,
    pub(super) mirror_coord: super::mirror::coordinator::MirrorCoordinatorHost,
    pub(super) mirror_runs: BTreeMap<TopicPartition, super::mirror::manager::MirrorRun>,
    /// KIP-1279 state transitions this broker wrote whose success it has not seen (reporting
    /// only; see `on_mirror_read`).
    pub(super) mirror_unconfirmed:
        BTreeMap<TopicPartition, Vec<super::mirror::manager::UnconfirmedTransition>>,
    pub(super) mirror_fetch: super::mirror::fetcher::MirrorFetchState,
    pub(super) mirror_sync: super::mirror::sync::MirrorSyncHost,
    pub(super) admin_validations: super::mirror::admin_validation::AdminValidations,
}

impl Broker {
    /// Starts a broker process over the files that survived on its disk (`disk_image`:
    /// path → bytes). Torn tails are cut now; logs are rebuilt when metadata names them.
    #[must_use]
    pub fn new(
        config: BrokerConfig,
        incarnation: u64,
        disk_image: BTreeMap<String, Bytes>,
    ) -> Self {
        let me = NodeId::broker(config.cluster, config.broker_id);
        let mut b = Self {
            me,
            incarnation,
            lifecycle: Lifecycle::Starting,
            broker_epoch: -1,
            image: MetadataImage::new(),
            fetch_metadata_in_flight: false,
            partitions: PartitionMap::new(),
            recovered: BTreeMap::new(),
            hw_checkpoint: disk_image
                .get(storage::HW_CHECKPOINT)
                .map(|b| storage::decode_offset_checkpoint(b))
                .unwrap_or_default(),
            log_start_checkpoint: disk_image
                .get(storage::LOG_START_CHECKPOINT)
                .map(|b| storage::decode_offset_checkpoint(b))
                .unwrap_or_default(),
            next_recovery_point_checkpoint: None,
            fetchers: SmallMap::new(),
            pending: BTreeMap::new(),
            next_correlation: 1,
            purgatory: Purgatory::default(),
            fetch_sessions: super::fetch_session::FetchSessionCache::default(),
            timers: Timers::default(),
            outputs: VecDeque::new(),
            now: Instant::ZERO,
            coord: super::coordinator_runtime::CoordinatorHost::default(),
            mirror_coord: super::mirror::coordinator::MirrorCoordinatorHost::default(),
            mirror_runs: BTreeMap::new(),
            mirror_unconfirmed: BTreeMap::new(),
            mirror_fetch: super::mirror::fetcher::MirrorFetchState::default(),
            mirror_sync: super::mirror::sync::MirrorSyncHost::default(),
            admin_validations: super::mirror::admin_validation::AdminValidations::default(),
            config,
        };
        let mut io = Vec::new();
        let mut events = Vec::new();
        // Kafka `LogManager.loadLogs`: a clean shutdown marker skips recovery (and is removed);
        // otherwise each log recovers from its checkpointed recovery point (0 when absent).
        let clean = disk_image.contains_key(storage::CLEAN_SHUTDOWN_FILE);
        if clean {
            io.push(IoOp::Delete {
                path: storage::CLEAN_SHUTDOWN_FILE.into(),
            });
        }
        let recovery_points = disk_image
            .get(storage::RECOVERY_POINT_CHECKPOINT)
            .map(|b| storage::decode_offset_checkpoint(b))
            .unwrap_or_default();
        for (tp, rec) in storage::group_by_partition(&disk_image) {
            let scan = if clean {
                RecoveryScan::Clean
            } else {
                RecoveryScan::Unclean {
                    recovery_point: recovery_points.get(&tp).copied().unwrap_or(Offset(0)),
                }
            };
            let mut ops = Vec::new();
            let loaded = recovery::load_segments(&tp, &rec, scan, &mut ops);
            if b.config.ablation_recovery_keeps_torn_tail
                && loaded
                    .cut
                    .is_some_and(|c| c.kind == recovery::CutKind::Torn)
            {
                ops.retain(|op| !matches!(op, IoOp::Truncate { .. }));
            }
            io.extend(ops);
            if let Some(cut) = loaded.cut.filter(|c| c.kind == recovery::CutKind::Corrupt) {
                events.push(Event::CorruptBatchCut {
                    tp: tp.clone(),
                    at: cut.at,
                    truncated_bytes: loaded.truncated_bytes,
                });
            }
            b.recovered.insert(
                tp,
                LoadedPartition {
                    loaded,
                    topic_id: rec.topic_id,
                    producer_snapshot: rec.producer_snapshot,
                    scan,
                },
            );
        }
        for op in io {
            b.outputs.push_back(Output::Io(op));
        }
        for e in events {
            b.outputs.push_back(Output::Event(e));
        }
        b.timers.set(TimerId::ControllerRetry, Instant::ZERO);
        b
    }

    // ------------------------------------------------------------------ read-only getters

    /// This broker's address.
    #[must_use]
    pub fn node_id(&self) -> NodeId {
        self.me
    }

    /// This broker's id.
    #[must_use]
    pub fn broker_id(&self) -> BrokerId {
        self.config.broker_id
    }

    /// The cluster it belongs to.
    #[must_use]
    pub fn cluster(&self) -> ClusterIdx {
        self.config.cluster
    }

    /// Its configuration.
    #[must_use]
    pub fn config(&self) -> &BrokerConfig {
        &self.config
    }

    /// Where it is in its life.
    #[must_use]
    pub fn lifecycle(&self) -> Lifecycle {
        self.lifecycle
    }

    /// The broker epoch of the current registration (-1 before registering).
    #[must_use]
    pub fn broker_epoch(&self) -> i64 {
        self.broker_epoch
    }

    /// The applied metadata.
    #[must_use]
    pub fn image(&self) -> &MetadataImage {
        &self.image
    }

    /// A hosted partition replica.
    #[must_use]
    pub fn partition(&self, tp: &TopicPartition) -> Option<&Partition> {
        self.partitions.get(tp)
    }

    /// The HW this leader would move `tp` to if Kafka's HW rule ran at `now`
    /// (`Partition.maybeIncrementLeaderHW`), without moving it. Kafka runs the rule only on
    /// an append, a follower fetch, a leadership change or an ISR update, so a leader whose
    /// last computation was held back (e.g. by a caught-up, ISR-eligible follower that then
    /// fell silent) keeps its HW until the next such event. `None`: not the leader, or the
    /// rule would not move it.
    #[must_use]
    pub fn high_watermark_if_recomputed(
        &self,
        tp: &TopicPartition,
        now: Instant,
    ) -> Option<Offset> {
        let p = self.partitions.get(tp)?;
        let cfg = self.hw_config(tp);
        let lag = self.config.replica_lag_time_max_ms;
        p.high_watermark_if_recomputed(
            |b| self.image.is_broker_active(b),
            now.as_millis(),
            lag,
            &cfg,
        )
    }

    /// All hosted partition replicas.
    pub fn partitions(&self) -> impl Iterator<Item = (&TopicPartition, &Partition)> {
        self.partitions.iter()
    }

    /// The `__mirror_state` stores this broker hosts.
    #[must_use]
    pub fn mirror_coordinators(&self) -> &super::mirror::coordinator::MirrorCoordinatorHost {
        &self.mirror_coord
    }

    /// The coordinators this broker hosts.
    #[must_use]
    pub fn coordinators(&self) -> &super::coordinator_runtime::CoordinatorHost {
        &self.coord
    }

    /// Parked operations (for tests and traces).
    #[must_use]
    pub fn purgatory_len(&self) -> usize {
        self.purgatory.len()
    }

    // ------------------------------------------------------------------ output helpers

    pub(super) fn controller(&self) -> NodeId {
        NodeId::controller(self.config.cluster)
    }

    pub(super) fn broker_node(&self, id: BrokerId) -> NodeId {
        NodeId::broker(self.config.cluster, id)
    }

    pub(super) fn emit(&mut self, e: Event) {
        self.outputs.push_back(Output::Event(e));
    }

    pub(super) fn emit_all(&mut self, events: Vec<Event>) {
        for e in events {
            self.emit(e);
        }
    }

    pub(super) fn io(&mut self, ops: Vec<IoOp>) {
        for op in ops {
            self.outputs.push_back(Output::Io(op));
        }
    }

    pub(super) fn respond(&mut self, to: NodeId, id: CorrelationId, resp: Response) {
        self.outputs.push_back(Output::Send {
            to,
            id,
            message: Message::Response(resp),
        });
    }

    /// Sends a request and remembers what it was for; it times out after
    /// `request.timeout.ms` (plus `extra_ms` for long polls).
    pub(super) fn send_request(
        &mut self,
        to: NodeId,
        req: Request,
        pending: Pending,
        extra_ms: i64,
    ) -> CorrelationId {
        let timeout = self.config.request_timeout_ms + extra_ms;
        self.send_request_within(to, req, pending, timeout)
    }

    /// [`Self::send_request`] with its own timeout (ms from now).
    pub(super) fn send_request_within(
        &mut self,
        to: NodeId,
        req: Request,
        pending: Pending,
        timeout_ms: i64,
    ) -> CorrelationId {
        let id = self.next_correlation;
        self.next_correlation += 1;
        self.pending.insert(id, pending);
        self.timers.set(
            TimerId::RequestTimeout(id),
            self.now.plus_millis(timeout_ms),
        );
        self.outputs.push_back(Output::Send {
            to,
            id,
            message: Message::Request(req),
        });
        id
    }
}

impl Broker {
    /// Whether a request from `from` is processed: always from a broker of this cluster,
    /// from clients and other clusters only once the broker has caught up with the metadata
    /// log up to its registration.
    fn serves(&self, from: NodeId) -> bool {
        let outside =
            from.cluster != self.config.cluster || matches!(from.role, NodeRole::Client(_));
        !outside
            || (self.lifecycle == Lifecycle::Registered && self.image.offset >= self.broker_epoch)
    }
}

impl Node for Broker {
    fn handle_message(&mut self, now: Instant, from: NodeId, id: CorrelationId, message: Message) {
        self.now = self.now.max(now);
        if self.lifecycle == Lifecycle::Halted {
            return;
        }
        match message {
            // Kafka enables request processing only once the broker has caught up with the
            // metadata log up to its own registration (`BrokerServer` waits on the lifecycle
            // manager's initial catch-up): before that a client or another cluster cannot
            // reach it. Answering from an empty image would tell them the topic does not
            // exist (mirror chaos seed 9690: a failback mirror FAILED with "source topic is
            // deleted"). Brokers of its own cluster (replica fetches) are still answered:
            // the broker leads nothing yet, so they get NOT_LEADER as in Kafka.
            Message::Request(_) if !self.serves(from) => {}
            Message::Request(req) => self.handle_request(from, id, req),
            Message::Response(resp) => {
                let Some(p) = self.pending.remove(&id) else {
                    return; // late response to a timed-out request
                };
                self.timers.cancel(&TimerId::RequestTimeout(id));
                self.handle_response(p, resp);
            }
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.now = self.now.max(now);
        if self.lifecycle == Lifecycle::Halted {
            return;
        }
        for t in self.timers.expire(now) {
            self.on_timer(t);
        }
    }

    fn poll_output(&mut self) -> Option<Output> {
        self.outputs.pop_front()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        if self.lifecycle == Lifecycle::Halted {
            return None;
        }
        self.timers.next_deadline()
    }
}
