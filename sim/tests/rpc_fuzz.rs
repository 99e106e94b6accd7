//! Fuzzing the RPC handlers with a fixed budget: a Kafka broker faces untrusted clients, so any
//! well-typed request to a broker or a controller must come back as a response carrying error
//! codes (or no response, for acks=0), never as a panic. Requests are drawn with `arbitrary`
//! (mirror-core's `fuzz` feature) from a fixed byte stream and sent by a client through the
//! nodes' public sans-I/O API, in core's deterministic message loop (`MiniNet`), to a
//! three-broker cluster with two topics. Every fix this test led to has its own regression
//! test in core.
//!
//! Release builds keep overflow checks on, so an arithmetic overflow counts as a panic.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use arbitrary::{Arbitrary, Unstructured};
use mirror_core::broker::{Broker, BrokerConfig};
use mirror_core::controller::{Controller, ControllerConfig};
use mirror_core::protocol::messages::CreatableTopic;
use mirror_core::protocol::{ClusterIdx, ErrorCode, NodeId, Request, Response};
use mirror_core::testing::{AnyNode, MiniNet};
use mirror_core::types::{BrokerId, TopicPartition};

const C: ClusterIdx = ClusterIdx(0);
/// Clusters built, each fed [`REQUESTS_PER_CLUSTER`] requests: 3,000 requests in all.
const CLUSTERS: usize = 30;
const REQUESTS_PER_CLUSTER: usize = 100;
const BROKERS: i32 = 3;

/// A fixed byte stream (SplitMix64): the same requests on every run.
fn stream(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed;
    (0..len)
        .map(|_| {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            (z ^ (z >> 31)) as u8
        })
        .collect()
}

fn client() -> NodeId {
    NodeId::client(C, 0)
}

/// A controller and three brokers with topics `t0` (2 partitions, rf 3) and `t1` (1
/// partition, rf 2), every replica in sync.
fn cluster() -> MiniNet {
    let mut net = MiniNet::new();
    let mut cc = ControllerConfig::new(C);
    cc.default_replication_factor = 3;
    net.add(
        NodeId::controller(C),
        AnyNode::Controller(Box::new(Controller::new(cc, Vec::new()))),
    );
    for i in 0..BROKERS {
        let cfg = BrokerConfig::new(C, BrokerId(i));
        net.add(
            NodeId::broker(C, BrokerId(i)),
            AnyNode::Broker(Box::new(Broker::new(cfg, 1, BTreeMap::new()))),
        );
    }
    net.run_for_ms(3_000);
    let topics = [("t0", 2, 3), ("t1", 1, 2)]
        .into_iter()
        .map(|(name, n, rf)| CreatableTopic {
            name: name.into(),
            num_partitions: n,
            replication_factor: rf,
            configs: BTreeMap::new(),
            topic_id: None,
        })
        .collect();
    let id = net.request(
        client(),
        NodeId::broker(C, BrokerId(0)),
        Request::CreateTopics { topics },
    );
    net.run_for_ms(2_000);
    match net.take_response(client(), id) {
        Some(Response::TopicErrors { results }) => {
            assert!(
                results.iter().all(|r| r.1 == ErrorCode::None),
                "{results:?}"
            );
        }
        other => panic!("create topics: {other:?}"),
    }
    net
}

/// The first partition a data-plane request names.
fn first_partition(req: &Request) -> Option<&TopicPartition> {
    match req {
        Request::Produce { partitions, .. } => partitions.first().map(|p| &p.0),
        Request::Fetch { partitions, .. } => partitions.first().map(|p| &p.tp),
        Request::ListOffsets { partitions, .. } => partitions.first().map(|p| &p.0),
        Request::DeleteRecords { partitions, .. } => partitions.first().map(|p| &p.0),
        Request::OffsetsForLeaderEpoch { partitions } => partitions.first().map(|p| &p.0),
        Request::WriteTxnMarkers { markers } => markers.first().and_then(|m| m.partitions.first()),
        _ => None,
    }
}

/// Where a drawn request goes: the controller one time in eight; else, for a data-plane
/// request, the leader of its first partition three times in four (so it gets past the
/// NOT_LEADER check); else any broker.
fn target(net: &MiniNet, u: &mut Unstructured<'_>, req: &Request) -> NodeId {
    if u.ratio(1, 8).unwrap_or(false) {
        return NodeId::controller(C);
    }
    let leader = first_partition(req).and_then(|tp| {
        net.controller(NodeId::controller(C))
            .image()
            .partition(tp)
            .and_then(|r| r.leader)
    });
    match leader {
        Some(b) if u.ratio(3, 4).unwrap_or(false) => NodeId::broker(C, b),
        _ => NodeId::broker(C, BrokerId(u.int_in_range(0..=BROKERS - 1).unwrap_or(0))),
    }
}

/// Sends `req` and runs the loop for a while; a panic names the request that caused it.
fn step(net: &mut MiniNet, n: usize, to: NodeId, req: Request, wait_ms: i64) {
    let shown = format!("{req:?}");
    let r = catch_unwind(AssertUnwindSafe(|| {
        let id = net.request(client(), to, req);
        net.run_for_ms(wait_ms);
        net.take_response(client(), id)
    }));
    if let Err(panic) = r {
        eprintln!("request #{n} to {to} panicked: {shown}");
        resume_unwind(panic);
    }
}

#[test]
fn arbitrary_requests_to_brokers_and_the_controller_get_error_codes_never_a_panic() {
    let bytes = stream(0x5EED_F022, 4 << 20);
    let mut u = Unstructured::new(&bytes);
    let mut sent = 0usize;
    for _ in 0..CLUSTERS {
        let mut net = cluster();
        for _ in 0..REQUESTS_PER_CLUSTER {
            let req = Request::arbitrary(&mut u).expect("the stream is long enough");
            let to = target(&net, &mut u, &req);
            // Mostly short waits, sometimes long enough for timeouts, retention and
            // delayed operations to fire.
            let wait_ms = if u.ratio(1, 10).unwrap_or(false) {
                30_000
            } else {
                50
            };
            step(&mut net, sent, to, req, wait_ms);
            sent += 1;
        }
    }
    assert!(
        !u.is_empty(),
        "the byte stream ran out: requests past it were all defaults"
    );
    assert_eq!(sent, CLUSTERS * REQUESTS_PER_CLUSTER);
}
