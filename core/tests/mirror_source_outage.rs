//! A source outage while a partition mirrors, in the deterministic message loop, under the
//! seed and latest designs. Latest follows the late prototype (kip1279.md B §7.4: a mirror
//! fetch that throws an `IOException` goes through `AbstractFetcherThread.handlePartitionsWithErrors`
//! to `MirrorFetcherThread.refreshSourceClusterMetadata`, FAILED and retryable; its retries
//! fetch from the cached leader again); seed keeps MIRRORING with fetcher backoff (A.1).

mod support;

use std::collections::BTreeMap;

use mirror_core::broker::{Broker, BrokerConfig};
use mirror_core::controller::{Controller, ControllerConfig};
use mirror_core::mirror::{Design, MirrorPartitionState};
use mirror_core::protocol::messages::CreatableTopic;
use mirror_core::protocol::{ClusterIdx, ErrorCode, NodeId, Request, Response};
use mirror_core::types::{BrokerId, TopicPartition};
use support::MiniNet;

const SRC: ClusterIdx = ClusterIdx(0);
const DST: ClusterIdx = ClusterIdx(1);

fn world(design: &str) -> MiniNet {
    let design = Design::parse(design).expect("design");
    let mut net = MiniNet::new();
    for c in [SRC, DST] {
        net.add(
            NodeId::controller(c),
            support::AnyNode::Controller(Box::new(Controller::new(
                ControllerConfig::new(c),
                Vec::new(),
            ))),
        );
        for b in 0..2 {
            let mut config = BrokerConfig::new(c, BrokerId(b));
            config.mirror_design = design;
            net.add(
                NodeId::broker(c, BrokerId(b)),
                support::AnyNode::Broker(Box::new(Broker::new(config, 1, BTreeMap::new()))),
            );
        }
    }
    net.run_for_ms(3_000);
    net
}

fn call(net: &mut MiniNet, cluster: ClusterIdx, req: Request) -> Response {
    let client = NodeId::client(cluster, 0);
    let id = net.request(client, NodeId::broker(cluster, BrokerId(0)), req);
    net.run_for_ms(2_000);
    net.take_response(client, id).expect("answered")
}

/// Source topic `orders` (RF 2), mirrored to DST by `m1`'s `topics.include`.
fn mirroring(design: &str) -> MiniNet {
    let mut net = world(design);
    let r = call(
        &mut net,
        SRC,
        Request::CreateTopics {
            topics: vec![CreatableTopic {
                name: "orders".into(),
                num_partitions: 1,
                replication_factor: 2,
                configs: BTreeMap::new(),
                topic_id: None,
            }],
        },
    );
    assert!(
        matches!(r, Response::TopicErrors { ref results } if results[0].1.is_ok()),
        "{r:?}"
    );
    let configs = [
        ("source.cluster", "src"),
        ("source.cluster.index", "0"),
        ("bootstrap.servers", "0,1"),
        ("mirror.metadata.refresh.interval.ms", "1000"),
        ("topics.include", "orders"),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
    .collect();
    let r = call(
        &mut net,
        DST,
        Request::CreateMirror {
            mirror_name: "m1".into(),
            configs,
        },
    );
    assert!(
        matches!(
            r,
            Response::MirrorAdmin {
                error: ErrorCode::None,
                ..
            }
        ),
        "{r:?}"
    );
    net.run_for_ms(8_000);
    assert_eq!(leader_state(&net).2, MirrorPartitionState::Mirroring);
    net
}

/// The DST leader of `orders-0`: its id, whether its fetcher holds the partition, its state.
fn leader_state(net: &MiniNet) -> (NodeId, bool, MirrorPartitionState) {
    let tp = TopicPartition::new("orders", 0);
    (0..2)
        .find_map(|b| {
            let id = NodeId::broker(DST, BrokerId(b));
            let broker = net.broker(id);
            broker.mirror_runs().get(&tp).map(|r| {
                let fetching = broker.mirror_fetch_state().parts.contains_key(&tp);
                (id, fetching, r.state())
            })
        })
        .expect("a DST leader runs orders-0")
}

fn status(net: &MiniNet) -> (i16, Option<String>) {
    let tp = TopicPartition::new("orders", 0);
    let (id, _, _) = leader_state(net);
    let s = net.broker(id).mirror_runs()[&tp]
        .status
        .clone()
        .expect("status read");
    (s.retry_attempt, s.error_message)
}

fn crash_source(net: &mut MiniNet) {
    for b in 0..2 {
        net.crash(NodeId::broker(SRC, BrokerId(b)));
    }
}

/// Runs in 10 ms steps until the DST leader's state is `want`; the simulated ms it took.
fn run_until_state(net: &mut MiniNet, want: MirrorPartitionState, max_ms: i64) -> i64 {
    let start = net.now;
    while leader_state(net).2 != want {
        assert!(
            net.now.millis_since(start) < max_ms,
            "no {want:?} within {max_ms} ms"
        );
        net.run_for_ms(10);
    }
    net.now.millis_since(start)
}

#[test]
fn latest_fails_a_partition_whose_source_fetch_gets_no_answer_and_counts_its_retries() {
    // Goal: the fetch in flight when the source goes down times out after request.timeout.ms
    // (30 s, + the fetch's 0.5 s wait); the partition leaves the fetcher and goes FAILED,
    // retryable, with Kafka's IOException message; the retry re-enters MIRRORING and, the
    // cached leader still down, its fetch fails again with the next attempt (B §7.4
    // `nextAttempt`).
    let mut net = mirroring("latest");
    crash_source(&mut net);
    let waited = run_until_state(&mut net, MirrorPartitionState::Failed, 40_000);
    assert!(
        (30_000..=30_600).contains(&waited),
        "FAILED after {waited} ms"
    );
    let (_, fetching, _) = leader_state(&net);
    assert!(!fetching, "a FAILED partition is out of the fetcher");
    let (attempt, reason) = status(&net);
    assert_eq!(attempt, 1);
    let reason = reason.expect("reason");
    assert!(
        reason.starts_with("Connection to ")
            && reason.ends_with(" was disconnected before the response was read"),
        "{reason}"
    );
    // The default backoff (100 ms × 2^1) returns to MIRRORING, the counter kept.
    let backoff = run_until_state(&mut net, MirrorPartitionState::Mirroring, 1_000);
    assert!(backoff <= 260, "retry after {backoff} ms");
    assert!(leader_state(&net).1, "back in the fetcher");
    assert_eq!(status(&net).0, 1, "a retry keeps the counter");
    // Its fetch goes to the cached leader, still down: FAILED again, one attempt more.
    let waited = run_until_state(&mut net, MirrorPartitionState::Failed, 40_000);
    assert!(
        (30_000..=30_600).contains(&waited),
        "FAILED again after {waited} ms"
    );
    assert_eq!(status(&net).0, 2);
}

#[test]
fn seed_keeps_mirroring_through_a_source_outage() {
    // Goal: A.1: transient fetch errors keep the partition in its state with fetcher backoff,
    // so the seed design's partition is still MIRRORING, fetcher included, long after the
    // request timeout (and a failover stop would be accepted).
    let mut net = mirroring("seed");
    crash_source(&mut net);
    net.run_for_ms(120_000);
    let (_, fetching, state) = leader_state(&net);
    assert_eq!(state, MirrorPartitionState::Mirroring);
    assert!(fetching);
    assert_eq!(status(&net), (0, None));
}
