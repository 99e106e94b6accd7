//! KIP-1279 mirror admin requests sent to a broker reach the controller (Kafka forwards
//! admin requests to the active controller), while DescribeMirrors / ReadMirrorStates /
//! WriteMirrorStates are the broker's own (INVALID_REQUEST until the mirror logic exists).

mod support;

use std::collections::BTreeMap;

use mirror_core::broker::{Broker, BrokerConfig};
use mirror_core::controller::{Controller, ControllerConfig};
use mirror_core::protocol::messages::MirrorTopic;
use mirror_core::protocol::metadata::MIRROR_STATE_TOPIC;
use mirror_core::protocol::{ClusterIdx, ErrorCode, NodeId, Request, Response};
use mirror_core::types::{BrokerId, TopicId};
use support::MiniNet;

const C: ClusterIdx = ClusterIdx(0);

fn cluster(n: i32) -> MiniNet {
    let mut net = MiniNet::new();
    net.add(
        NodeId::controller(C),
        support::AnyNode::Controller(Box::new(Controller::new(
            ControllerConfig::new(C),
            Vec::new(),
        ))),
    );
    for i in 0..n {
        let cfg = BrokerConfig::new(C, BrokerId(i));
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
    let Response::ListMirrors { error, mirrors } = call(&mut net, Request::ListMirrors {}) else {
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
