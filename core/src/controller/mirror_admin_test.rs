//! KIP-1279 mirror administration at the controller, driven through [`Node`] like
//! `controller_test.rs`: spec kip1279.md A.1 (seed: `MIRROR` config records, `mirror.name`
//! suffixes), B §6.1 (per-topic validation tables), B §6.3 (read-only admin operations) and
//! B §6.6 (optimistic locking).

use std::collections::BTreeMap;

use super::*;
use crate::broker::{Message, Node, Output};
use crate::protocol::messages::{ListMirrorsFilter, MirrorListing, MirrorTopic, MirrorTopicResult};
use crate::protocol::metadata::{
    ConfigResource, DesiredMirrorState, MIRROR_STATE_TOPIC, MetadataRecord, MirrorMembership,
};
use crate::protocol::{ClusterIdx, ErrorCode, NodeId, Request, Response};
use crate::time::Instant;
use crate::types::{BrokerId, TopicId};

const C0: ClusterIdx = ClusterIdx(0);
const SRC_ID: TopicId = TopicId(0xfeed);

pub(in crate::controller) struct Harness {
    pub(in crate::controller) c: Controller,
    next_id: u64,
    now_ms: i64,
}

impl Harness {
    /// A controller with `brokers` unfenced brokers `1..=brokers`.
    pub(in crate::controller) fn new(brokers: i32) -> Self {
        Self::with(ControllerConfig::new(C0), brokers)
    }

    pub(in crate::controller) fn with(config: ControllerConfig, brokers: i32) -> Self {
        let mut h = Self {
            c: Controller::new(config, Vec::new()),
            next_id: 0,
            now_ms: 0,
        };
        for b in 1..=brokers {
            h.join(b);
        }
        h
    }

    fn send(&mut self, from: NodeId, req: Request) -> Vec<Output> {
        self.next_id += 1;
        let now = Instant::from_millis(self.now_ms);
        self.c
            .handle_message(now, from, self.next_id, Message::Request(req));
        std::iter::from_fn(|| self.c.poll_output()).collect()
    }

    /// Sends `req` from a client; returns the response and the persisted records.
    pub(in crate::controller) fn call(&mut self, req: Request) -> (Response, Vec<MetadataRecord>) {
        let client = NodeId::client(C0, 0);
        let outs = self.send(client, req);
        let mut responses = outs.iter().filter_map(|o| match o {
            Output::Send {
                to,
                message: Message::Response(r),
                ..
            } if *to == client => Some(r.clone()),
            _ => None,
        });
        let r = responses.next().expect("a response");
        assert!(responses.next().is_none(), "exactly one response");
        let records = outs
            .iter()
            .filter_map(|o| match o {
                Output::PersistMetadata { record, .. } => Some(record.clone()),
                _ => None,
            })
            .collect();
        (r, records)
    }

    fn join(&mut self, b: i32) {
        let from = NodeId::broker(C0, BrokerId(b));
        let req = Request::RegisterBroker {
            broker_id: BrokerId(b),
            incarnation: 1,
        };
        let outs = self.send(from, req);
        let epoch = outs
            .iter()
            .find_map(|o| match o {
                Output::Send {
                    message:
                        Message::Response(Response::RegisterBroker {
                            error: ErrorCode::None,
                            broker_epoch,
                        }),
                    ..
                } => Some(*broker_epoch),
                _ => None,
            })
            .expect("registered");
        let end = i64::try_from(self.c.metadata_log().len()).expect("len");
        self.send(
            from,
            Request::BrokerHeartbeat {
                broker_id: BrokerId(b),
                broker_epoch: epoch,
                metadata_offset: end - 1,
                want_fence: false,
            },
        );
        assert!(self.c.image().is_broker_active(BrokerId(b)));
    }

    pub(in crate::controller) fn create_mirror(
        &mut self,
        name: &str,
    ) -> (Response, Vec<MetadataRecord>) {
        self.call(Request::CreateMirror {
            mirror_name: name.to_string(),
            configs: configs(&[("source.cluster", "src")]),
        })
    }

    pub(in crate::controller) fn start(
        &mut self,
        mirror: &str,
        topics: &[(&str, TopicId, i32)],
    ) -> Response {
        self.call(start_req(mirror, topics)).0
    }

    pub(in crate::controller) fn op(
        &mut self,
        op: MirrorTopicsOp,
        mirror: &str,
        topics: &[&str],
    ) -> Response {
        self.call(op_req(op, mirror, topics, None)).0
    }

    pub(in crate::controller) fn mirror_name(&self, topic: &str) -> Option<String> {
        self.c
            .image()
            .topic_config(topic, "mirror.name")
            .map(str::to_string)
    }

    pub(in crate::controller) fn end_offset(&self) -> i64 {
        i64::try_from(self.c.metadata_log().len()).expect("len")
    }
}

pub(in crate::controller) fn configs(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
    kv.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

pub(in crate::controller) fn start_req(mirror: &str, topics: &[(&str, TopicId, i32)]) -> Request {
    Request::StartMirrorTopics {
        mirror_name: mirror.to_string(),
        topics: topics
            .iter()
            .map(|(n, id, p)| MirrorTopic {
                name: n.to_string(),
                topic_id: *id,
                num_partitions: *p,
            })
            .collect(),
        include_patterns: Vec::new(),
        exclude_patterns: Vec::new(),
        state_validation_offset: None,
    }
}

pub(in crate::controller) fn op_req(
    op: MirrorTopicsOp,
    mirror: &str,
    topics: &[&str],
    svo: Option<i64>,
) -> Request {
    let mirror_name = mirror.to_string();
    let topics = topics.iter().map(|t| t.to_string()).collect();
    match op {
        MirrorTopicsOp::Stop => Request::StopMirrorTopics {
            mirror_name,
            topics,
            patterns: Vec::new(),
            state_validation_offset: svo,
        },
        MirrorTopicsOp::Pause => Request::PauseMirrorTopics {
            mirror_name,
            topics,
        },
        MirrorTopicsOp::Resume => Request::ResumeMirrorTopics {
            mirror_name,
            topics,
        },
    }
}

/// `(top-level error, per-topic (name, error))` of a `MirrorAdmin` response.
pub(in crate::controller) fn errors(r: &Response) -> (ErrorCode, Vec<(String, ErrorCode)>) {
    let Response::MirrorAdmin { error, topics, .. } = r else {
        panic!("not a MirrorAdmin response: {r:?}");
    };
    let per_topic = topics
        .iter()
        .map(|MirrorTopicResult { name, error, .. }| (name.clone(), *error))
        .collect();
    (*error, per_topic)
}

pub(in crate::controller) fn top(r: &Response) -> ErrorCode {
    errors(r).0
}

pub(in crate::controller) fn topic_errors(r: &Response) -> Vec<ErrorCode> {
    errors(r).1.into_iter().map(|(_, e)| e).collect()
}

/// A plain topic (no `mirror.name`) created through CreateTopics.
pub(in crate::controller) fn create_plain(h: &mut Harness, name: &str) {
    let (r, _) = h.call(Request::CreateTopics {
        topics: vec![crate::protocol::messages::CreatableTopic {
            name: name.to_string(),
            num_partitions: 1,
            replication_factor: 1,
            configs: BTreeMap::new(),
            topic_id: None,
        }],
    });
    assert!(matches!(r, Response::TopicErrors { ref results } if results[0].1 == ErrorCode::None));
}

/// Brings `topic` into `mirror` with the given desired state through the admin APIs.
fn mirror_topic_in(h: &mut Harness, mirror: &str, topic: &str, desired: DesiredMirrorState) {
    assert_eq!(
        top(&h.start(mirror, &[(topic, TopicId::ZERO, 1)])),
        ErrorCode::None
    );
    let op = match desired {
        DesiredMirrorState::Mirroring => return,
        DesiredMirrorState::Paused => MirrorTopicsOp::Pause,
        DesiredMirrorState::Stopped => MirrorTopicsOp::Stop,
    };
    assert_eq!(top(&h.op(op, mirror, &[topic])), ErrorCode::None);
}

#[test]
fn create_mirror_writes_one_config_record_per_property_and_mirror_state_topic_first_only() {
    // Goal: spec A.1 "CreateMirror → one ConfigRecord per property; the first mirror makes
    // the controller create __mirror_state" (B §3: compacted internal topic).
    let mut h = Harness::new(3);
    let (r, records) = h.call(Request::CreateMirror {
        mirror_name: "m1".into(),
        configs: configs(&[("source.cluster", "src"), ("fetch.max.bytes", "1024")]),
    });
    assert_eq!(
        r,
        Response::MirrorAdmin {
            error: ErrorCode::None,
            message: None,
            topics: vec![]
        }
    );
    let kinds: Vec<String> = records
        .iter()
        .map(|r| match r {
            MetadataRecord::Config {
                resource: ConfigResource::Topic(t),
                ..
            } => format!("topic-config {t}"),
            MetadataRecord::Config {
                resource: ConfigResource::Mirror(m),
                name,
                ..
            } => format!("mirror-config {m} {name}"),
            MetadataRecord::Topic { name, .. } => format!("topic {name}"),
            MetadataRecord::Partition { .. } => "partition".into(),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "topic-config __mirror_state",
            "topic-config __mirror_state",
            "topic __mirror_state",
            "partition",
            "partition",
            "partition",
            "mirror-config m1 fetch.max.bytes",
            "mirror-config m1 source.cluster",
        ]
    );
    let image = h.c.image();
    let id = image.topic_id(MIRROR_STATE_TOPIC).expect("__mirror_state");
    let t = &image.topics[&id];
    assert_eq!(t.partitions.len(), 3);
    assert!(t.partitions.values().all(|p| p.replicas.len() == 3));
    assert_eq!(
        image.topic_config(MIRROR_STATE_TOPIC, "cleanup.policy"),
        Some("compact")
    );
    // The second mirror does not create it again.
    let (r, records) = h.create_mirror("m2");
    assert_eq!(top(&r), ErrorCode::None);
    assert_eq!(records.len(), 1);
    // Duplicate: CLUSTER_MIRROR_ALREADY_EXISTS, nothing written.
    let (r, records) = h.create_mirror("m1");
    assert_eq!(top(&r), ErrorCode::ClusterMirrorAlreadyExists);
    assert!(
        matches!(r, Response::MirrorAdmin { message: Some(ref m), .. } if m.contains("already exists"))
    );
    assert!(records.is_empty());
}

#[test]
fn create_mirror_refuses_bad_names_and_missing_source_without_writing() {
    // Goal: B §2.1 (topic-name rules) and A.1 (no `.paused`/`.removed` suffix); the source
    // setting is required; a refused first mirror creates no __mirror_state.
    let mut h = Harness::new(1);
    let long = "x".repeat(250);
    for name in [
        "m.paused",
        "m.removed",
        "",
        "..",
        "a b",
        "a/b",
        long.as_str(),
    ] {
        let (r, records) = h.create_mirror(name);
        assert_eq!(top(&r), ErrorCode::InvalidClusterMirrorName, "{name:?}");
        assert!(records.is_empty(), "{name:?}");
    }
    for cfg in [
        vec![],
        vec![("source.cluster", "")],
        vec![("bootstrap", "x")],
    ] {
        let (r, records) = h.call(Request::CreateMirror {
            mirror_name: "m".into(),
            configs: configs(&cfg),
        });
        assert_eq!(top(&r), ErrorCode::InvalidConfig, "{cfg:?}");
        assert!(records.is_empty());
    }
    assert!(h.c.image().topic_id(MIRROR_STATE_TOPIC).is_none());
    // Names that merely contain a suffix are fine; RF of __mirror_state is min(3, brokers).
    let (r, _) = h.create_mirror("m.paused.x");
    assert_eq!(top(&r), ErrorCode::None);
    let image = h.c.image();
    let id = image.topic_id(MIRROR_STATE_TOPIC).expect("created");
    assert!(
        image.topics[&id]
            .partitions
            .values()
            .all(|p| p.replicas.len() == 1)
    );
    // Without usable brokers the first mirror fails as a whole.
    let mut empty = Harness::new(0);
    let (r, records) = empty.create_mirror("m");
    assert_eq!(top(&r), ErrorCode::InvalidReplicationFactor);
    assert!(records.is_empty());
}

#[test]
fn start_creates_missing_topics_with_the_source_id_and_partition_count() {
    // Goal: B §6.3 CreateTopics+MirrorInfo / B §8.10: the destination topic gets the source
    // topic id and partition count, RF = destination default, and mirror.name=<m>.
    let mut cfg = ControllerConfig::new(C0);
    cfg.default_replication_factor = 2;
    let mut h = Harness::with(cfg, 3);
    h.create_mirror("m1");
    let r = h.start("m1", &[("orders", SRC_ID, 4), ("legacy", TopicId::ZERO, 1)]);
    assert_eq!(topic_errors(&r), [ErrorCode::None, ErrorCode::None]);
    let image = h.c.image();
    assert_eq!(image.topic_id("orders"), Some(SRC_ID));
    let orders = &image.topics[&SRC_ID];
    assert_eq!(orders.partitions.len(), 4);
    assert!(orders.partitions.values().all(|p| p.replicas.len() == 2));
    assert_eq!(h.mirror_name("orders").as_deref(), Some("m1"));
    // A pre-2.8 source (zero id): the destination generates one.
    assert!(
        image
            .topic_id("legacy")
            .is_some_and(|id| id != TopicId::ZERO)
    );
    // Starting again is a no-op that succeeds; a zero id accepts the existing id.
    let (r, records) = h.call(start_req(
        "m1",
        &[("orders", SRC_ID, 4), ("legacy", TopicId::ZERO, 1)],
    ));
    assert_eq!(top(&r), ErrorCode::None);
    assert!(records.is_empty());
    // Conflicting ids: INCONSISTENT_TOPIC_ID (name taken with another id) and
    // TOPIC_ALREADY_EXISTS (id taken by another name); a missing topic needs partitions.
    let (r, records) = h.call(start_req(
        "m1",
        &[
            ("orders", TopicId(0xbad), 4),
            ("orders2", SRC_ID, 4),
            ("fresh", TopicId(0x77), 0),
        ],
    ));
    assert_eq!(
        topic_errors(&r),
        [
            ErrorCode::InconsistentTopicId,
            ErrorCode::TopicAlreadyExists,
            ErrorCode::InvalidPartitions
        ]
    );
    assert_eq!(top(&r), ErrorCode::InconsistentTopicId);
    assert!(
        matches!(r, Response::MirrorAdmin { message: Some(ref m), .. } if m.contains("doesn't match"))
    );
    assert!(records.is_empty());
    // The source grew: starting again adds the missing partitions (and only then).
    let (r, records) = h.call(start_req("m1", &[("orders", SRC_ID, 6)]));
    assert_eq!(top(&r), ErrorCode::None);
    assert_eq!(records.len(), 2);
    assert_eq!(h.c.image().topics[&SRC_ID].partitions.len(), 6);
}

#[test]
fn start_validation_table_with_per_topic_results_in_request_order() {
    // Goal: B §6.1 StartMirrorTopics controller table; start is valid only from UNKNOWN (no
    // mirror.name) or STOPPED; other topics of a mixed request still apply.
    use DesiredMirrorState::{Mirroring, Paused, Stopped};
    let mut h = Harness::new(1);
    h.create_mirror("m1");
    h.create_mirror("m2");
    create_plain(&mut h, "plain");
    mirror_topic_in(&mut h, "m1", "mine", Mirroring);
    mirror_topic_in(&mut h, "m1", "mine_paused", Paused);
    mirror_topic_in(&mut h, "m1", "mine_stopped", Stopped);
    mirror_topic_in(&mut h, "m2", "other", Mirroring);
    mirror_topic_in(&mut h, "m2", "other_paused", Paused);
    mirror_topic_in(&mut h, "m2", "other_stopped", Stopped);
    let table: [(&str, ErrorCode, Option<&str>); 10] = [
        ("plain", ErrorCode::None, Some("m1")),
        ("mine", ErrorCode::None, Some("m1")),
        (
            "mine_paused",
            ErrorCode::MirrorTopicNotStopped,
            Some("m1.paused"),
        ),
        ("mine_stopped", ErrorCode::None, Some("m1")),
        ("other", ErrorCode::TopicAlreadyInClusterMirror, Some("m2")),
        (
            "other_paused",
            ErrorCode::TopicAlreadyInClusterMirror,
            Some("m2.paused"),
        ),
        ("other_stopped", ErrorCode::None, Some("m1")),
        ("dup", ErrorCode::InvalidRequest, None),
        ("dup", ErrorCode::InvalidRequest, None),
        ("__internal", ErrorCode::InvalidRequest, None),
    ];
    let req: Vec<(&str, TopicId, i32)> = table
        .iter()
        .map(|(t, _, _)| (*t, TopicId::ZERO, 1))
        .collect();
    let r = h.start("m1", &req);
    let (top_error, results) = errors(&r);
    assert_eq!(
        top_error,
        ErrorCode::MirrorTopicNotStopped,
        "first topic error"
    );
    for ((topic, error, after), (name, got)) in table.iter().zip(&results) {
        assert_eq!((name.as_str(), got), (*topic, error));
        assert_eq!(h.mirror_name(topic).as_deref(), *after, "{topic}");
    }
    assert!(h.c.image().topic_id("dup").is_none());
    // An unknown mirror fails every topic and the request.
    let r = h.start("nope", &[("plain", TopicId::ZERO, 1)]);
    assert_eq!(
        errors(&r),
        (
            ErrorCode::UnknownClusterMirror,
            vec![("plain".to_string(), ErrorCode::UnknownClusterMirror)]
        )
    );
}

#[test]
fn stop_pause_resume_validation_tables_with_mixed_requests() {
    // Goal: B §6.1 Stop/Pause/Resume controller tables, each as one mixed request whose
    // valid topics apply: Stop from MIRRORING (seed: not from PAUSED), Pause from
    // MIRRORING, Resume from PAUSED; the target state itself is a successful no-op.
    use DesiredMirrorState::{Mirroring, Paused, Stopped};
    use ErrorCode as E;
    type Row = (&'static str, E, Option<&'static str>);
    let cases: [(MirrorTopicsOp, [Row; 3]); 3] = [
        (
            MirrorTopicsOp::Stop,
            [
                ("mirroring", E::None, Some("m1.removed")),
                ("paused", E::MirrorTopicAlreadyPaused, Some("m1.paused")),
                ("stopped", E::None, Some("m1.removed")),
            ],
        ),
        (
            MirrorTopicsOp::Pause,
            [
                ("mirroring", E::None, Some("m1.paused")),
                ("paused", E::None, Some("m1.paused")),
                ("stopped", E::MirrorTopicBeingStopped, Some("m1.removed")),
            ],
        ),
        (
            MirrorTopicsOp::Resume,
            [
                ("mirroring", E::None, Some("m1")),
                ("paused", E::None, Some("m1")),
                ("stopped", E::MirrorTopicNotPaused, Some("m1.removed")),
            ],
        ),
    ];
    // Rows shared by every operation: membership errors come before state errors.
    let common: [Row; 5] = [
        ("plain", E::UnknownClusterMirror, None),
        ("other", E::TopicNotInClusterMirror, Some("m2")),
        ("missing", E::UnknownTopicOrPartition, None),
        ("dup", E::InvalidRequest, Some("m1")),
        ("dup", E::InvalidRequest, Some("m1")),
    ];
    for (op, rows) in cases {
        let mut h = Harness::new(1);
        h.create_mirror("m1");
        h.create_mirror("m2");
        create_plain(&mut h, "plain");
        mirror_topic_in(&mut h, "m1", "mirroring", Mirroring);
        mirror_topic_in(&mut h, "m1", "paused", Paused);
        mirror_topic_in(&mut h, "m1", "stopped", Stopped);
        mirror_topic_in(&mut h, "m2", "other", Mirroring);
        mirror_topic_in(&mut h, "m1", "dup", Mirroring);
        let all: Vec<Row> = rows.iter().chain(&common).copied().collect();
        let names: Vec<&str> = all.iter().map(|(t, _, _)| *t).collect();
        let r = h.op(op, "m1", &names);
        let (top_error, results) = errors(&r);
        let first = all.iter().map(|(_, e, _)| *e).find(|e| !e.is_ok());
        assert_eq!(Some(top_error), first, "{op:?}");
        for ((topic, error, after), (name, got)) in all.iter().zip(&results) {
            assert_eq!((name.as_str(), got), (*topic, error), "{op:?}");
            assert_eq!(h.mirror_name(topic).as_deref(), *after, "{op:?} {topic}");
        }
        let r = h.op(op, "nope", &["mirroring"]);
        assert_eq!(top(&r), E::UnknownClusterMirror, "{op:?}");
    }
}

#[test]
fn stop_from_paused_is_accepted_by_the_latest_design_switch() {
    // Goal: A.3 "latest": stop accepted from MIRRORING and PAUSED.
    let mut cfg = ControllerConfig::new(C0);
    cfg.mirror_stop_from_paused = true;
    let mut h = Harness::with(cfg, 1);
    h.create_mirror("m1");
    mirror_topic_in(&mut h, "m1", "t", DesiredMirrorState::Paused);
    assert_eq!(
        top(&h.op(MirrorTopicsOp::Stop, "m1", &["t"])),
        ErrorCode::None
    );
    assert_eq!(h.mirror_name("t").as_deref(), Some("m1.removed"));
}

#[test]
fn failback_start_from_stopped_reuses_the_topic_and_refuses_another_incarnation() {
    // Goal: A.1 "STOPPED → PREPARING (failback / restart)": start from `.removed` sets
    // mirror.name=<m> again on the same topic (same id); AS26: a same-named topic with
    // another id is never mirrored into.
    let mut h = Harness::new(1);
    h.create_mirror("m1");
    h.start("m1", &[("orders", SRC_ID, 2)]);
    h.op(MirrorTopicsOp::Stop, "m1", &["orders"]);
    assert_eq!(h.mirror_name("orders").as_deref(), Some("m1.removed"));
    let r = h.start("m1", &[("orders", TopicId(0x1), 2)]);
    assert_eq!(top(&r), ErrorCode::InconsistentTopicId);
    assert_eq!(h.mirror_name("orders").as_deref(), Some("m1.removed"));
    let (r, records) = h.call(start_req("m1", &[("orders", SRC_ID, 2)]));
    assert_eq!(top(&r), ErrorCode::None);
    assert_eq!(records.len(), 1, "only the mirror.name record");
    assert_eq!(h.mirror_name("orders").as_deref(), Some("m1"));
    assert_eq!(h.c.image().topic_id("orders"), Some(SRC_ID));
    // Failback through a new (reverse) mirror works the same way from STOPPED.
    h.op(MirrorTopicsOp::Stop, "m1", &["orders"]);
    h.create_mirror("back");
    assert_eq!(
        top(&h.start("back", &[("orders", SRC_ID, 2)])),
        ErrorCode::None
    );
    assert_eq!(h.mirror_name("orders").as_deref(), Some("back"));
}

#[test]
fn delete_mirror_is_refused_while_any_topic_is_not_stopped_then_clears_everything() {
    // Goal: A.1 / B §8.14: DeleteMirror only when every topic is STOPPED; then, atomically,
    // the topics' mirror.name is cleared and every mirror config key is deleted.
    use DesiredMirrorState::{Mirroring, Paused, Stopped};
    let mut h = Harness::new(1);
    h.create_mirror("m1");
    mirror_topic_in(&mut h, "m1", "a", Mirroring);
    mirror_topic_in(&mut h, "m1", "b", Paused);
    mirror_topic_in(&mut h, "m1", "c", Stopped);
    let del = |svo| Request::DeleteMirror {
        mirror_name: "m1".into(),
        state_validation_offset: svo,
    };
    let (r, records) = h.call(del(None));
    assert_eq!(
        errors(&r),
        (
            ErrorCode::ClusterMirrorNotEmpty,
            vec![
                ("a".to_string(), ErrorCode::ClusterMirrorNotEmpty),
                ("b".to_string(), ErrorCode::ClusterMirrorNotEmpty),
            ]
        )
    );
    assert!(records.is_empty());
    h.op(MirrorTopicsOp::Stop, "m1", &["a"]);
    h.op(MirrorTopicsOp::Resume, "m1", &["b"]);
    h.op(MirrorTopicsOp::Stop, "m1", &["b"]);
    let (r, records) = h.call(del(None));
    assert_eq!(
        errors(&r),
        (
            ErrorCode::None,
            ["a", "b", "c"]
                .iter()
                .map(|t| (t.to_string(), ErrorCode::None))
                .collect()
        )
    );
    assert!(
        records
            .iter()
            .all(|r| matches!(r, MetadataRecord::Config { value: None, .. }))
    );
    assert_eq!(
        records.len(),
        4,
        "3 mirror.name deletions + 1 mirror config key"
    );
    for t in ["a", "b", "c"] {
        assert_eq!(h.mirror_name(t), None);
    }
    assert!(!mirror_admin::mirror_exists(h.c.image(), "m1"));
    assert_eq!(
        h.call(Request::ListMirrors {
            filter: ListMirrorsFilter::default()
        })
        .0,
        Response::ListMirrors {
            error: ErrorCode::None,
            mirrors: vec![]
        }
    );
    // Gone: deleting again is UNKNOWN_CLUSTER_MIRROR; the name can be reused.
    assert_eq!(top(&h.call(del(None)).0), ErrorCode::UnknownClusterMirror);
    let (r, records) = h.create_mirror("m1");
    assert_eq!(top(&r), ErrorCode::None);
    assert_eq!(records.len(), 1, "__mirror_state already exists");
}

#[test]
fn delete_topics_and_create_partitions_are_refused_until_the_topic_is_stopped() {
    // Goal: B §6.3 / §8.8: DeleteTopics and CreatePartitions on a mirror topic that is not
    // STOPPED fail with INVALID_MIRROR_STATE and change nothing; mixed DeleteTopics get
    // per-topic results; mirror.name cannot be altered directly.
    let mut h = Harness::new(1);
    h.create_mirror("m1");
    h.start("m1", &[("m", SRC_ID, 1)]);
    create_plain(&mut h, "plain");
    let delete = |names: &[&str]| Request::DeleteTopics {
        names: names.iter().map(|n| n.to_string()).collect(),
    };
    let grow = Request::CreatePartitions {
        topic: "m".into(),
        count: 2,
    };
    let codes = |r: &Response| -> Vec<ErrorCode> {
        match r {
            Response::TopicErrors { results } => results.iter().map(|(_, e, _)| *e).collect(),
            other => panic!("{other:?}"),
        }
    };
    for op in [None, Some(MirrorTopicsOp::Pause)] {
        if let Some(op) = op {
            h.op(op, "m1", &["m"]);
        }
        let (r, records) = h.call(delete(&["m"]));
        assert_eq!(codes(&r), vec![ErrorCode::InvalidMirrorState]);
        assert!(records.is_empty());
        let (r, records) = h.call(grow.clone());
        assert_eq!(codes(&r), vec![ErrorCode::InvalidMirrorState]);
        assert!(records.is_empty());
    }
    let (r, _) = h.call(delete(&["m", "plain"]));
    assert_eq!(
        codes(&r),
        vec![ErrorCode::InvalidMirrorState, ErrorCode::None]
    );
    let (r, records) = h.call(Request::IncrementalAlterConfigs {
        resource: ConfigResource::Topic("m".into()),
        ops: vec![("mirror.name".into(), None)],
    });
    assert_eq!(codes(&r), vec![ErrorCode::InvalidConfig]);
    assert!(records.is_empty());
    h.op(MirrorTopicsOp::Resume, "m1", &["m"]);
    h.op(MirrorTopicsOp::Stop, "m1", &["m"]);
    let (r, _) = h.call(grow);
    assert_eq!(codes(&r), vec![ErrorCode::None]);
    let (r, _) = h.call(delete(&["m"]));
    assert_eq!(codes(&r), vec![ErrorCode::None]);
    assert!(h.c.image().topic_id("m").is_none());
}

#[test]
fn list_mirrors_reports_sources_and_topics_with_desired_states() {
    // Goal: ListMirrors answers from the controller's image.
    let mut h = Harness::new(1);
    h.call(Request::CreateMirror {
        mirror_name: "m1".into(),
        configs: configs(&[("source.cluster", "src"), ("source.cluster.id", "cid")]),
    });
    h.create_mirror("m2");
    mirror_topic_in(&mut h, "m1", "b", DesiredMirrorState::Paused);
    mirror_topic_in(&mut h, "m1", "a", DesiredMirrorState::Mirroring);
    mirror_topic_in(&mut h, "m1", "c", DesiredMirrorState::Stopped);
    let (r, records) = h.call(Request::ListMirrors {
        filter: ListMirrorsFilter::default(),
    });
    assert!(records.is_empty());
    assert_eq!(
        r,
        Response::ListMirrors {
            error: ErrorCode::None,
            mirrors: vec![
                MirrorListing {
                    mirror_name: "m1".into(),
                    source: "src".into(),
                    source_cluster_id: Some("cid".into()),
                    topics: vec![
                        ("a".into(), DesiredMirrorState::Mirroring),
                        ("b".into(), DesiredMirrorState::Paused)
                    ],
                },
                MirrorListing {
                    mirror_name: "m2".into(),
                    source: "src".into(),
                    source_cluster_id: None,
                    topics: vec![],
                },
            ],
        }
    );
}

#[test]
fn list_mirrors_filters_mirrors_by_name_and_source_and_topics_by_desired_state() {
    // Goal: the prototype's ListClusterMirrorsOptions (integration test
    // testListClusterMirrorsFilters): name and source-cluster-id filters select mirrors; the
    // desired-state filter (default MIRRORING + PAUSED) selects the topics under each mirror,
    // which is listed even with none.
    let mut h = Harness::new(1);
    h.call(Request::CreateMirror {
        mirror_name: "m1".into(),
        configs: configs(&[("source.cluster", "src"), ("source.cluster.id", "cid")]),
    });
    h.call(Request::CreateMirror {
        mirror_name: "m2".into(),
        configs: configs(&[("source.cluster", "src"), ("source.cluster.index", "0")]),
    });
    mirror_topic_in(&mut h, "m1", "a", DesiredMirrorState::Mirroring);
    mirror_topic_in(&mut h, "m2", "b", DesiredMirrorState::Stopped);
    let list = |h: &mut Harness,
                filter: ListMirrorsFilter|
     -> Vec<(String, Option<String>, Vec<String>)> {
        match h.call(Request::ListMirrors { filter }).0 {
            Response::ListMirrors {
                error: ErrorCode::None,
                mirrors,
            } => mirrors
                .into_iter()
                .map(|m| {
                    let topics = m.topics.into_iter().map(|(t, _)| t).collect();
                    (m.mirror_name, m.source_cluster_id, topics)
                })
                .collect(),
            other => panic!("{other:?}"),
        }
    };
    let row = |m: &str, id: &str, topics: &[&str]| {
        (
            m.to_string(),
            Some(id.to_string()),
            topics.iter().map(|t| t.to_string()).collect::<Vec<_>>(),
        )
    };
    // Default: both mirrors; the source id falls back to the model's cluster index.
    assert_eq!(
        list(&mut h, ListMirrorsFilter::default()),
        vec![row("m1", "cid", &["a"]), row("m2", "0", &[])]
    );
    let names = |n: &[&str]| Some(n.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    assert_eq!(
        list(
            &mut h,
            ListMirrorsFilter {
                mirror_names: names(&["m2"]),
                ..ListMirrorsFilter::default()
            }
        ),
        vec![row("m2", "0", &[])]
    );
    assert_eq!(
        list(
            &mut h,
            ListMirrorsFilter {
                mirror_names: names(&["nope"]),
                ..ListMirrorsFilter::default()
            }
        ),
        vec![]
    );
    assert_eq!(
        list(
            &mut h,
            ListMirrorsFilter {
                source_cluster_ids: names(&["cid"]),
                ..ListMirrorsFilter::default()
            }
        ),
        vec![row("m1", "cid", &["a"])]
    );
    assert_eq!(
        list(
            &mut h,
            ListMirrorsFilter {
                desired_states: Some(vec![DesiredMirrorState::Stopped]),
                ..ListMirrorsFilter::default()
            }
        ),
        vec![row("m1", "cid", &[]), row("m2", "0", &["b"])]
    );
}

#[test]
fn state_validation_offset_refuses_changes_made_after_the_brokers_validation() {
    // Goal: B §6.6 optimistic locking: a topic whose mirror state changed after the offset
    // the broker validated at gets INVALID_CLUSTER_MIRROR_STATES; otherwise it applies.
    let mut h = Harness::new(1);
    h.create_mirror("m1");
    h.start("m1", &[("t", SRC_ID, 1), ("u", TopicId(0x2), 1)]);
    let validated = h.end_offset() - 1;
    h.op(MirrorTopicsOp::Pause, "m1", &["t"]);
    let (r, records) = h.call(op_req(
        MirrorTopicsOp::Stop,
        "m1",
        &["t", "u"],
        Some(validated),
    ));
    assert_eq!(
        topic_errors(&r),
        [ErrorCode::InvalidClusterMirrorStates, ErrorCode::None]
    );
    assert_eq!(records.len(), 1);
    assert_eq!(h.mirror_name("t").as_deref(), Some("m1.paused"));
    // Delete: every topic of the mirror is checked.
    h.op(MirrorTopicsOp::Resume, "m1", &["t"]);
    h.op(MirrorTopicsOp::Stop, "m1", &["t"]);
    let stale = h.end_offset() - 2;
    let (r, records) = h.call(Request::DeleteMirror {
        mirror_name: "m1".into(),
        state_validation_offset: Some(stale),
    });
    assert_eq!(
        errors(&r),
        (
            ErrorCode::InvalidClusterMirrorStates,
            vec![("t".to_string(), ErrorCode::InvalidClusterMirrorStates)]
        )
    );
    assert!(records.is_empty());
    let (r, _) = h.call(Request::DeleteMirror {
        mirror_name: "m1".into(),
        state_validation_offset: Some(h.end_offset() - 1),
    });
    assert_eq!(top(&r), ErrorCode::None);
}

#[test]
fn mirror_state_is_rebuilt_identically_after_a_controller_restart() {
    // Goal: mirror configs and the §6.6 change offsets are derived from the log only.
    let mut h = Harness::new(1);
    h.create_mirror("m1");
    h.start("m1", &[("t", SRC_ID, 1)]);
    h.op(MirrorTopicsOp::Pause, "m1", &["t"]);
    let log = h.c.metadata_log().to_vec();
    let restarted = Controller::new(h.c.config().clone(), log);
    assert_eq!(restarted.image(), h.c.image());
    assert_eq!(
        restarted.mirror_changes().last_change("t"),
        h.c.mirror_changes().last_change("t")
    );
    assert_eq!(
        mirror_admin::membership(restarted.image(), "t"),
        MirrorMembership::parse("m1.paused")
    );
}

#[test]
fn mirror_name_values_parse_from_the_right() {
    // Goal: A.1 "Parse the suffix from the right"; one suffix at most.
    use DesiredMirrorState::{Mirroring, Paused, Stopped};
    let table = [
        ("m", Some(("m", Mirroring))),
        ("m.paused", Some(("m", Paused))),
        ("m.removed", Some(("m", Stopped))),
        ("a.removed.paused", Some(("a.removed", Paused))),
        ("m.pausedx", Some(("m.pausedx", Mirroring))),
        (".paused", None),
        ("", None),
    ];
    for (value, expected) in table {
        let got = MirrorMembership::parse(value);
        let want = expected.map(|(n, d)| MirrorMembership {
            mirror_name: n.to_string(),
            desired: d,
        });
        assert_eq!(got, want, "{value:?}");
        if let Some(m) = got {
            assert_eq!(m.config_value(), value);
        }
    }
}

#[test]
fn a_non_controller_refuses_mirror_requests_in_their_response_shape() {
    // Goal: requests from another cluster get NOT_CONTROLLER per topic.
    let mut h = Harness::new(1);
    let other = NodeId::client(ClusterIdx(1), 0);
    let outs = h.send(other, op_req(MirrorTopicsOp::Stop, "m1", &["t"], None));
    let r = outs.iter().find_map(|o| match o {
        Output::Send {
            message: Message::Response(r),
            ..
        } => Some(r.clone()),
        _ => None,
    });
    assert_eq!(
        r.map(|r| errors(&r)),
        Some((
            ErrorCode::NotController,
            vec![("t".to_string(), ErrorCode::NotController)]
        ))
    );
}
