//! The admin client (Kafka: `Admin` / `KafkaAdminClient`), as a sans-I/O node executing a
//! schedule of operations.
//!
//! Operations run one at a time, in schedule order, each no earlier than its `at_ms`.
//! Controller operations (create/delete topics, create partitions, elect leaders, alter
//! configs) go to any broker (round-robin), which forwards them to the controller; a request
//! timeout, REQUEST_TIMED_OUT (the forward timed out) or NOT_CONTROLLER retries on the next
//! broker after `retry.backoff.ms`. `DeleteRecords` goes to the partition leader from the
//! metadata cache, retrying on leadership errors. Retries stop at `default.api.timeout.ms`
//! (the last error is reported). As in Kafka, a retried create can report
//! TOPIC_ALREADY_EXISTS when the first attempt succeeded unseen.

use std::collections::{BTreeMap, VecDeque};

use mirror_core::broker::{Event, Message, Node, Output};
use mirror_core::protocol::messages::CreatableTopic;
use mirror_core::protocol::metadata::ConfigResource;
use mirror_core::protocol::{ClusterIdx, CorrelationId, ErrorCode, NodeId, Request, Response};
use mirror_core::time::Instant;
use mirror_core::types::{BrokerId, Offset, TopicPartition};
use serde::{Deserialize, Serialize};

use super::common::{Rng, Wire, invalidates_metadata};
use super::metadata::MetadataCache;

/// One admin operation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "op")]
pub enum AdminOp {
    /// `createTopics`.
    CreateTopic {
        /// Name.
        name: String,
        /// Partition count.
        partitions: i32,
        /// Replication factor (-1 = cluster default).
        replication_factor: i16,
        /// Topic configs.
        #[serde(default)]
        configs: BTreeMap<String, String>,
    },
    /// `deleteTopics`.
    DeleteTopic {
        /// Name.
        name: String,
    },
    /// `createPartitions`: raises the partition count to `count`.
    CreatePartitions {
        /// Topic.
        topic: String,
        /// New total count.
        count: i32,
    },
    /// `deleteRecords`: moves the log start of one partition to `before` (-1 = the HW).
    DeleteRecords {
        /// Topic.
        topic: String,
        /// Partition.
        partition: i32,
        /// New log start.
        before: i64,
    },
    /// `electLeaders` (PREFERRED, or UNCLEAN).
    ElectLeaders {
        /// Topic.
        topic: String,
        /// Partition.
        partition: i32,
        /// UNCLEAN election.
        unclean: bool,
    },
    /// `incrementalAlterConfigs` on a topic: SET `key=value`, or DELETE `key` (`None`).
    AlterTopicConfig {
        /// Topic.
        topic: String,
        /// Key.
        key: String,
        /// Value (`None` deletes the key).
        value: Option<String>,
    },
}

impl AdminOp {
    /// The readable operation string reported in `AdminResult`.
    #[must_use]
    pub fn describe(&self) -> String {
        match self {
            AdminOp::CreateTopic {
                name,
                partitions,
                replication_factor,
                ..
            } => format!("create_topics {name} partitions={partitions} rf={replication_factor}"),
            AdminOp::DeleteTopic { name } => format!("delete_topics {name}"),
            AdminOp::CreatePartitions { topic, count } => {
                format!("create_partitions {topic} count={count}")
            }
            AdminOp::DeleteRecords {
                topic,
                partition,
                before,
            } => format!("delete_records {topic}-{partition} before={before}"),
            AdminOp::ElectLeaders {
                topic,
                partition,
                unclean,
            } => format!(
                "elect_leaders {} {topic}-{partition}",
                if *unclean { "unclean" } else { "preferred" }
            ),
            AdminOp::AlterTopicConfig { topic, key, value } => match value {
                Some(v) => format!("alter_configs {topic} set {key}={v}"),
                None => format!("alter_configs {topic} delete {key}"),
            },
        }
    }

    fn request(&self) -> Request {
        match self.clone() {
            AdminOp::CreateTopic {
                name,
                partitions,
                replication_factor,
                configs,
            } => Request::CreateTopics {
                topics: vec![CreatableTopic {
                    name,
                    num_partitions: partitions,
                    replication_factor,
                    configs,
                    topic_id: None,
                }],
            },
            AdminOp::DeleteTopic { name } => Request::DeleteTopics { names: vec![name] },
            AdminOp::CreatePartitions { topic, count } => {
                Request::CreatePartitions { topic, count }
            }
            AdminOp::DeleteRecords {
                topic,
                partition,
                before,
            } => Request::DeleteRecords {
                partitions: vec![(TopicPartition::new(topic, partition), Offset(before))],
                timeout_ms: 30_000,
            },
            AdminOp::ElectLeaders {
                topic,
                partition,
                unclean,
            } => Request::ElectLeaders {
                partitions: vec![TopicPartition::new(topic, partition)],
                unclean,
                test_only_candidate: None,
            },
            AdminOp::AlterTopicConfig { topic, key, value } => Request::IncrementalAlterConfigs {
                resource: ConfigResource::Topic(topic),
                ops: vec![(key, value)],
            },
        }
    }

    fn leader_tp(&self) -> Option<TopicPartition> {
        match self {
            AdminOp::DeleteRecords {
                topic, partition, ..
            } => Some(TopicPartition::new(topic.as_str(), *partition)),
            _ => None,
        }
    }
}

/// An operation with its start time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduledOp {
    /// Earliest start, in world milliseconds.
    pub at_ms: i64,
    /// The operation.
    pub op: AdminOp,
}

/// Admin settings.
#[derive(Clone, Debug, PartialEq)]
pub struct AdminConfig {
    /// Client number.
    pub client: u32,
    /// Cluster.
    pub cluster: ClusterIdx,
    /// Bootstrap brokers.
    pub brokers: Vec<BrokerId>,
    /// The schedule (run in `at_ms` order; ties keep their order).
    pub ops: Vec<ScheduledOp>,
    /// PRNG seed (first broker).
    pub seed: u64,
    /// `request.timeout.ms`.
    pub request_timeout_ms: i64,
    /// `retry.backoff.ms`.
    pub retry_backoff_ms: i64,
    /// `default.api.timeout.ms`.
    pub api_timeout_ms: i64,
}

impl AdminConfig {
    /// Kafka's defaults.
    #[must_use]
    pub fn new(
        client: u32,
        cluster: ClusterIdx,
        brokers: Vec<BrokerId>,
        ops: Vec<ScheduledOp>,
    ) -> Self {
        Self {
            client,
            cluster,
            brokers,
            ops,
            seed: 0,
            request_timeout_ms: 30_000,
            retry_backoff_ms: 100,
            api_timeout_ms: 60_000,
        }
    }
}

#[derive(Clone, Debug)]
enum Tag {
    Metadata,
    Op,
}

#[derive(Clone, Debug)]
struct Running {
    op: AdminOp,
    started: Instant,
    retry_at: Instant,
    in_flight: bool,
    last_error: ErrorCode,
}

/// The admin node.
#[derive(Clone, Debug)]
pub struct Admin {
    cfg: AdminConfig,
    wire: Wire<Tag>,
    meta: MetadataCache,
    queue: VecDeque<ScheduledOp>,
    running: Option<Running>,
    results: Vec<(String, ErrorCode)>,
    /// When `step` last ran: timers at or before it have been acted on.
    last_step: Option<Instant>,
}

impl Admin {
    /// An admin client with its schedule.
    #[must_use]
    pub fn new(cfg: AdminConfig) -> Self {
        let mut rng = Rng::new(cfg.seed);
        let mut meta = MetadataCache::new(
            cfg.brokers.clone(),
            Some(Vec::new()),
            300_000,
            cfg.retry_backoff_ms,
            rng.below(cfg.brokers.len().max(1)),
        );
        // Nothing to learn until an operation needs a leader.
        let _ = meta.poll_request(Instant::ZERO);
        meta.on_response(
            Instant::ZERO,
            &Response::Metadata {
                brokers: Vec::new(),
                topics: Vec::new(),
            },
        );
        let mut ops = cfg.ops.clone();
        ops.sort_by_key(|o| o.at_ms); // stable: ties keep their order
        Self {
            wire: Wire::new(cfg.cluster, cfg.request_timeout_ms),
            meta,
            queue: ops.into(),
            running: None,
            results: Vec::new(),
            last_step: None,
            cfg,
        }
    }

    /// `(operation, error)` of every finished operation, in order.
    #[must_use]
    pub fn results(&self) -> &[(String, ErrorCode)] {
        &self.results
    }

    /// True when every scheduled operation finished.
    #[must_use]
    pub fn is_done(&self) -> bool {
        self.queue.is_empty() && self.running.is_none()
    }

    /// Appends an operation to the schedule.
    pub fn push(&mut self, op: ScheduledOp) {
        self.queue.push_back(op);
    }

    fn step(&mut self, now: Instant) {
        self.last_step = Some(now);
        // An operation finishing here lets the next one start at once.
        let mut done = self.results.len();
        loop {
            self.step_once(now);
            if self.results.len() == done {
                break;
            }
            done = self.results.len();
        }
    }

    fn step_once(&mut self, now: Instant) {
        if self.running.is_none()
            && let Some(next) = self.queue.front()
            && now >= Instant::from_millis(next.at_ms)
        {
            let next = self.queue.pop_front().expect("front");
            if let Some(tp) = next.op.leader_tp() {
                self.meta.add_topic(&tp.topic);
                self.meta.request_update();
            }
            self.running = Some(Running {
                op: next.op,
                started: now,
                retry_at: now,
                in_flight: false,
                last_error: ErrorCode::None,
            });
        }
        if let Some((to, req)) = self.meta.poll_request(now) {
            self.wire.send(now, to, req, Tag::Metadata);
        }
        let Some(r) = &self.running else {
            return;
        };
        if r.in_flight || now < r.retry_at {
            return;
        }
        if now >= r.started.plus_millis(self.cfg.api_timeout_ms) {
            let e = if r.last_error.is_ok() {
                ErrorCode::RequestTimedOut
            } else {
                r.last_error
            };
            self.finish(e);
            return;
        }
        let to = match r.op.leader_tp() {
            Some(tp) => {
                let fresh = self.meta.last_success().is_some_and(|t| t >= r.started);
                if fresh
                    && self.meta.topic_error(&tp.topic) == Some(ErrorCode::UnknownTopicOrPartition)
                {
                    self.finish(ErrorCode::UnknownTopicOrPartition);
                    return;
                }
                match self.meta.leader(&tp) {
                    Some((b, _)) if fresh => b,
                    _ => {
                        self.meta.request_update();
                        return;
                    }
                }
            }
            None => self.meta.next_broker(),
        };
        let req = r.op.request();
        self.wire.send(now, to, req, Tag::Op);
        if let Some(r) = &mut self.running {
            r.in_flight = true;
        }
    }

    fn finish(&mut self, error: ErrorCode) {
        let Some(r) = self.running.take() else {
            return;
        };
        let operation = r.op.describe();
        self.results.push((operation.clone(), error));
        self.wire.emit(Event::AdminResult {
            client: self.cfg.client,
            operation,
            error,
        });
    }

    fn on_op(&mut self, now: Instant, resp: Option<Response>) {
        let Some(r) = &mut self.running else {
            return;
        };
        r.in_flight = false;
        let error = match &resp {
            None => ErrorCode::RequestTimedOut,
            Some(Response::TopicErrors { results }) => results
                .iter()
                .map(|x| x.1)
                .find(|e| !e.is_ok())
                .unwrap_or(ErrorCode::None),
            Some(Response::PartitionErrors { results }) => results
                .iter()
                .map(|x| x.1)
                .find(|e| !e.is_ok())
                .unwrap_or(ErrorCode::None),
            Some(Response::DeleteRecords { partitions }) => partitions
                .iter()
                .map(|x| x.1)
                .find(|e| !e.is_ok())
                .unwrap_or(ErrorCode::None),
            Some(Response::Error { error }) => *error,
            Some(_) => ErrorCode::UnknownServerError,
        };
        let leader_op = r.op.leader_tp().is_some();
        let retry = match error {
            ErrorCode::RequestTimedOut | ErrorCode::NotController => true,
            e if leader_op => invalidates_metadata(e),
            _ => false,
        };
        if retry {
            r.last_error = error;
            r.retry_at = now.plus_millis(self.cfg.retry_backoff_ms);
            if leader_op {
                self.meta.request_update();
            }
        } else {
            self.finish(error);
        }
    }

    fn next_timer(&self) -> Option<Instant> {
        let mut t: Vec<Instant> = Vec::new();
        t.extend(self.wire.next_deadline());
        match &self.running {
            Some(r) => {
                t.extend(
                    self.meta
                        .next_timer()
                        .filter(|_| r.op.leader_tp().is_some()),
                );
                if !r.in_flight {
                    t.push(r.retry_at);
                }
            }
            None => t.extend(self.queue.front().map(|o| Instant::from_millis(o.at_ms))),
        }
        let floor = self.last_step;
        t.into_iter().filter(|x| floor.is_none_or(|f| *x > f)).min()
    }
}

impl Node for Admin {
    fn handle_message(&mut self, now: Instant, from: NodeId, id: CorrelationId, message: Message) {
        let Message::Response(resp) = message else {
            return;
        };
        match self.wire.take(from, id) {
            Some((_, Tag::Metadata)) => {
                self.meta.on_response(now, &resp);
            }
            Some((_, Tag::Op)) => self.on_op(now, Some(resp)),
            None => {}
        }
        self.step(now);
    }

    fn handle_timeout(&mut self, now: Instant) {
        for (_, tag) in self.wire.expire(now) {
            match tag {
                Tag::Metadata => self.meta.on_failure(now),
                Tag::Op => self.on_op(now, None),
            }
        }
        self.step(now);
    }

    fn poll_output(&mut self) -> Option<Output> {
        self.wire.pop()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.next_timer()
    }
}
