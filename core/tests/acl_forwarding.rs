//! ACL admin requests sent to a broker: CreateAcls / DeleteAcls are forwarded to the
//! controller (Kafka forwards them to the active controller), DescribeAcls is answered by
//! the receiving broker from its metadata image (Kafka: the broker's authorizer).

mod support;

use std::collections::BTreeMap;

use mirror_core::broker::{Broker, BrokerConfig};
use mirror_core::controller::{Controller, ControllerConfig};
use mirror_core::protocol::acl::{
    AclBinding, AclBindingFilter, AclOperation, AclPermissionType, AclResourceType, PatternType,
    PatternTypeFilter,
};
use mirror_core::protocol::{ClusterIdx, ErrorCode, NodeId, Request, Response};
use mirror_core::types::BrokerId;
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

fn call(net: &mut MiniNet, broker: i32, req: Request) -> Response {
    let client = NodeId::client(C, 0);
    let id = net.request(client, NodeId::broker(C, BrokerId(broker)), req);
    net.run_for_ms(500);
    net.take_response(client, id).expect("answered")
}

fn read(topic: &str, pattern: PatternType) -> AclBinding {
    AclBinding::new(
        AclResourceType::Topic,
        topic,
        pattern,
        "User:alice",
        AclOperation::Read,
        AclPermissionType::Allow,
    )
}

fn describe(net: &mut MiniNet, broker: i32, filter: AclBindingFilter) -> Vec<AclBinding> {
    match call(net, broker, Request::DescribeAcls { filter }) {
        Response::DescribeAcls {
            error: ErrorCode::None,
            acls,
        } => acls,
        other => panic!("{other:?}"),
    }
}

#[test]
fn acls_created_through_one_broker_are_described_by_another_and_deleted_by_filter() {
    // Goal: the full ACL path: client → broker 0 → controller → metadata log → broker 1.
    let mut net = cluster(2);
    let creations = vec![
        read("orders", PatternType::Literal),
        read("ord", PatternType::Prefixed),
    ];
    let r = call(&mut net, 0, Request::CreateAcls { creations });
    assert_eq!(
        r,
        Response::CreateAcls {
            results: vec![(ErrorCode::None, None), (ErrorCode::None, None)]
        }
    );
    let controller_acls = net.controller(NodeId::controller(C)).image().acls.len();
    assert_eq!(controller_acls, 2, "written by the controller");
    let all = describe(&mut net, 1, AclBindingFilter::any());
    let mut want = vec![
        read("orders", PatternType::Literal),
        read("ord", PatternType::Prefixed),
    ];
    want.sort();
    assert_eq!(all, want, "broker 1 learned them from the metadata log");
    let matching_orders = AclBindingFilter {
        resource_type: Some(AclResourceType::Topic),
        name: Some("orders".into()),
        pattern_type: PatternTypeFilter::Match,
        ..AclBindingFilter::any()
    };
    assert_eq!(describe(&mut net, 0, matching_orders).len(), 2);
    let prefixed_only = AclBindingFilter {
        pattern_type: PatternTypeFilter::Prefixed,
        ..AclBindingFilter::any()
    };
    let r = call(
        &mut net,
        1,
        Request::DeleteAcls {
            filters: vec![prefixed_only],
        },
    );
    let Response::DeleteAcls { results } = r else {
        panic!("{r:?}")
    };
    assert_eq!(
        results[0].matching,
        vec![read("ord", PatternType::Prefixed)]
    );
    assert_eq!(
        describe(&mut net, 0, AclBindingFilter::any()),
        vec![read("orders", PatternType::Literal)]
    );
}
