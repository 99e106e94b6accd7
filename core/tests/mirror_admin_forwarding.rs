//! KIP-1279 mirror admin requests sent to a broker reach the controller (Kafka forwards
//! admin requests to the active controller), while DescribeMirrors / ReadMirrorStates /
//! WriteMirrorStates are the broker's own (INVALID_REQUEST until the mirror logic exists);
//! and the `__mirror_state` coordinator's write timeout.

mod support;

use std::collections::BTreeMap;

use mirror_core::broker::{Broker, BrokerConfig};
use mirror_core::controller::{Controller, ControllerConfig};
use mirror_core::mirror::{MirrorPartitionKey, mirror_state_partition};
use mirror_core::protocol::messages::{
    MirrorPartitionStateWrite, MirrorTopic, WriteMirrorStatesTopic,
};
use mirror_core::protocol::metadata::{MIRROR_STATE_TOPIC, MIRROR_STATE_TOPIC_PARTITIONS};
use mirror_core::protocol::{ClusterIdx, ErrorCode, NodeId, Request, Response};
use mirror_core::types::{BrokerId, LeaderEpoch, Offset, TopicId, TopicPartition};
use support::MiniNet;

const C: ClusterIdx = ClusterIdx(0);

fn cluster(n: i32) -> MiniNet {
    cluster_with(n, mirror_core::mirror::Design::default())
}

fn cluster_with(n: i32, design: mirror_core::mirror::Design) -> MiniNet {
    let mut net = MiniNet::new();
    net.add(
        NodeId::controller(C),
        support::AnyNode::Controller(Box::new(Controller::new(
            ControllerConfig::new(C),
            Vec::new(),
        ))),
    );
    for i in 0..n {
        let mut cfg = BrokerConfig::new(C, BrokerId(i));
        cfg.mirror_design = design;
        net.add(
            NodeId::broker(C, BrokerId(i)),
            support::AnyNode::Broker(Box::new(Broker::new(cfg, 1, BTreeMap::new()))),
        );
    }
    net.run_for_ms(3_000);
    net
}

fn call(net: &mut MiniNet, req: Request) -> Response {
    let client = NodeId::client(C, 0);
    let id = net.request(client, NodeId::broker(C, BrokerId(0)), req);
    net.run_for_ms(500);
    net.take_response(client, id).expect("answered")
}

fn top_error(r: &Response) -> ErrorCode {
    match r {
        Response::MirrorAdmin { error, .. } => *error,
        other => panic!("not a MirrorAdmin response: {other:?}"),
    }
}

/// Creates mirror `m1` (source `src`, unreachable) and starts topic `orders` with `partitions`.
fn create_and_start_mirror(net: &mut MiniNet, topic_id: TopicId, partitions: i32) {
    let r = call(
        net,
        Request::CreateMirror {
            mirror_name: "m1".into(),
            configs: [("source.cluster".to_string(), "src".to_string())].into(),
        },
    );
    assert_eq!(top_error(&r), ErrorCode::None);
    let r = call(
        net,
        Request::StartMirrorTopics {
            mirror_name: "m1".into(),
            topics: vec![MirrorTopic {
                name: "orders".into(),
                topic_id,
                num_partitions: partitions,
            }],
            include_patterns: Vec::new(),
            exclude_patterns: Vec::new(),
            state_validation_offset: None,
        },
    );
    assert_eq!(top_error(&r), ErrorCode::None);
}

#[test]
fn brokers_forward_mirror_admin_requests_to_the_controller() {
    // Goal: spec A.1 "client → any broker → forwarded to the active controller".
    let mut net = cluster(2);
    let r = call(
        &mut net,
        Request::CreateMirror {
            mirror_name: "m1".into(),
            configs: [("source.cluster".to_string(), "src".to_string())].into(),
        },
    );
    assert_eq!(top_error(&r), ErrorCode::None);
    let topics = vec![MirrorTopic {
        name: "orders".into(),
        topic_id: TopicId(0xfeed),
        num_partitions: 2,
    }];
    let r = call(
        &mut net,
        Request::StartMirrorTopics {
            mirror_name: "m1".into(),
            topics,
            include_patterns: Vec::new(),
            exclude_patterns: Vec::new(),
            state_validation_offset: None,
        },
    );
    assert_eq!(top_error(&r), ErrorCode::None);
    let names = || vec!["orders".to_string()];
    let pause = Request::PauseMirrorTopics {
        mirror_name: "m1".into(),
        topics: names(),
    };
    assert_eq!(top_error(&call(&mut net, pause)), ErrorCode::None);
    let resume = Request::ResumeMirrorTopics {
        mirror_name: "m1".into(),
        topics: names(),
    };
    assert_eq!(top_error(&call(&mut net, resume)), ErrorCode::None);
    let delete = || Request::DeleteMirror {
        mirror_name: "m1".into(),
        state_validation_offset: None,
    };
    assert_eq!(
        top_error(&call(&mut net, delete())),
        ErrorCode::ClusterMirrorNotEmpty
    );
    let stop = Request::StopMirrorTopics {
        mirror_name: "m1".into(),
        topics: names(),
        patterns: Vec::new(),
        state_validation_offset: None,
    };
    assert_eq!(top_error(&call(&mut net, stop)), ErrorCode::None);
    let Response::ListMirrors { error, mirrors } = call(
        &mut net,
        Request::ListMirrors {
            filter: mirror_core::protocol::messages::ListMirrorsFilter::default(),
        },
    ) else {
        panic!("ListMirrors")
    };
    assert_eq!((error, mirrors.len()), (ErrorCode::None, 1));
    assert_eq!(top_error(&call(&mut net, delete())), ErrorCode::None);
    let image = net.controller(NodeId::controller(C)).image();
    assert_eq!(image.topic_id("orders"), Some(TopicId(0xfeed)));
    assert!(image.topic_id(MIRROR_STATE_TOPIC).is_some());
    // The broker applied the same metadata.
    let broker = net.broker(NodeId::broker(C, BrokerId(1)));
    assert_eq!(broker.image().topic_config("orders", "mirror.name"), None);
}

#[test]
fn describe_read_and_write_mirror_states_are_answered_by_the_broker() {
    // Goal: these RPCs are answered by brokers themselves (never forwarded to the controller).
    let mut net = cluster(1);
    let r = call(
        &mut net,
        Request::DescribeMirrors {
            mirror_names: None,
            cluster_id: None,
            last_mirror_epoch_lookups: vec![],
        },
    );
    assert!(matches!(r, Response::DescribeMirrors { .. }), "{r:?}");
    let r = call(
        &mut net,
        Request::ReadMirrorStates {
            mirror_name: "m1".into(),
            topics: vec![],
        },
    );
    assert!(matches!(r, Response::ReadMirrorStates { .. }), "{r:?}");
    let r = call(
        &mut net,
        Request::WriteMirrorStates {
            mirror_name: "m1".into(),
            topics: vec![],
        },
    );
    assert!(matches!(r, Response::WriteMirrorStates { .. }), "{r:?}");
}

#[test]
fn describe_mirrors_reports_the_partitions_a_broker_leads_and_recover_knows_its_mirrors() {
    // Goal: DescribeMirrors without lookups is the describe of B §6 (API 99): per mirror,
    // per topic, the partitions this broker leads with their state, offsets, LME/LMO, retry
    // attempt and reason; a requested mirror that does not exist is UNKNOWN_CLUSTER_MIRROR.
    // RecoverMirrorTopics (latest) of an unknown mirror answers UNKNOWN_CLUSTER_MIRROR.
    let mut net = cluster_with(
        1,
        mirror_core::mirror::Design::parse("latest").expect("latest"),
    );
    create_and_start_mirror(&mut net, TopicId(0xfeed), 2);
    net.run_for_ms(2_000);
    let r = call(
        &mut net,
        Request::DescribeMirrors {
            mirror_names: Some(vec!["m1".into(), "nope".into()]),
            cluster_id: None,
            last_mirror_epoch_lookups: vec![],
        },
    );
    let Response::DescribeMirrors { mirrors } = r else {
        panic!("{r:?}")
    };
    assert_eq!(mirrors.len(), 2);
    assert_eq!(
        (mirrors[1].mirror_name.as_str(), mirrors[1].error),
        ("nope", ErrorCode::UnknownClusterMirror)
    );
    let m = &mirrors[0];
    assert_eq!((m.error, m.source.as_str()), (ErrorCode::None, "src"));
    assert_eq!(m.topics.len(), 1);
    let t = &m.topics[0];
    assert_eq!(t.name, "orders");
    assert_eq!(
        t.partitions.iter().map(|p| p.partition).collect::<Vec<_>>(),
        vec![0, 1],
        "the only broker leads both"
    );
    for p in &t.partitions {
        // No source to fetch from (no `source.cluster.index`): never mirroring, no offsets.
        assert_ne!(p.state, "MIRRORING", "{p:?}");
        assert_eq!((p.source_offset, p.destination_offset), (-1, -1), "{p:?}");
        assert_eq!(
            (p.last_mirror_epoch, p.last_mirror_offset),
            (-1, -1),
            "{p:?}"
        );
    }
    let r = call(
        &mut net,
        Request::RecoverMirrorTopics {
            mirror_name: "nope".into(),
            topics: vec!["orders".into()],
        },
    );
    let Response::TopicErrors { results } = r else {
        panic!("{r:?}")
    };
    assert_eq!(results[0].1, ErrorCode::UnknownClusterMirror);
}

#[test]
fn a_mirror_state_write_that_cannot_commit_times_out_and_stays_the_latest_state() {
    // Goal: the prototype's `mirror.coordinator.write.timeout.ms` (5 s). A WriteMirrorStates
    // whose records the `__mirror_state` partition's HW cannot pass (both followers crashed:
    // in the ISR until replica.lag.time.max.ms, then below the min ISR of 2) is answered
    // COORDINATOR_NOT_AVAILABLE once 5 s have passed, not left waiting. As in
    // `CoordinatorRuntime`, the timeout reverts nothing: the store keeps the record as its
    // latest state (what later writes are checked against) while a read, at the committed
    // offset, still does not see it.
    let mut net = cluster(3);
    let topic_id = TopicId(0xfeed);
    create_and_start_mirror(&mut net, topic_id, 1);
    net.run_for_ms(3_000);
    let sp = mirror_state_partition("m1", topic_id, 0, MIRROR_STATE_TOPIC_PARTITIONS);
    let state_tp = TopicPartition::new(MIRROR_STATE_TOPIC, sp);
    let coord = (0..3)
        .map(BrokerId)
        .find(|b| {
            net.broker(NodeId::broker(C, *b))
                .partition(&state_tp)
                .is_some_and(|p| p.is_leader())
        })
        .expect("a leader of the state partition");
    for b in (0..3).map(BrokerId).filter(|b| *b != coord) {
        net.crash(NodeId::broker(C, b));
    }
    // Only the failback marker (state UNKNOWN, no fencing), which no mirror run here writes.
    let write = Request::WriteMirrorStates {
        mirror_name: "m1".into(),
        topics: vec![WriteMirrorStatesTopic {
            name: "orders".into(),
            topic_id,
            partitions: vec![MirrorPartitionStateWrite {
                partition: 0,
                state: -1,
                leader_epoch: None,
                state_epoch: None,
                last_mirror_epoch: Some(LeaderEpoch(7)),
                last_mirror_offset: Some(Offset(1_234)),
                error_message: None,
                retry_attempt: 0,
                previous_state: -1,
            }],
        }],
    };
    let client = NodeId::client(C, 0);
    // Half a second off the coordinator's 1 s tick, which used to give timeouts up.
    net.run_for_ms(500);
    let id = net.request(client, NodeId::broker(C, coord), write);
    // The answer comes at the write's own deadline (`CoordinatorRuntime` arms a timer task
    // per write), not on the coordinator's next 1 s tick after it.
    let (waited_ms, answer) = net
        .wait_for_response(client, id, 10, 7_000)
        .expect("an answer within 7 s");
    assert!(
        (5_000..5_050).contains(&waited_ms),
        "answered after {waited_ms} ms, not at the 5 s timeout"
    );
    assert_eq!(
        answer,
        Response::WriteMirrorStates {
            error: ErrorCode::CoordinatorNotAvailable,
            topics: Vec::new(),
        }
    );
    let key = MirrorPartitionKey {
        mirror_name: "m1".into(),
        topic_id,
        partition: 0,
    };
    let broker = net.broker(NodeId::broker(C, coord));
    let latest = broker
        .mirror_coordinators()
        .store(sp)
        .and_then(|s| s.read(&key))
        .map(|(_, last)| (last.last_mirror_epoch, last.last_mirror_offset));
    assert_eq!(
        latest,
        Some((7, 1_234)),
        "the timed-out write stays applied"
    );
    let read = broker.read_mirror_state(&key);
    assert_eq!(
        (read.error, read.last_mirror_epoch, read.last_mirror_offset),
        (ErrorCode::None, None, None),
        "a read at the committed offset does not see it"
    );
}
