//! KIP-1279 filters and mirror config changes across two clusters in the deterministic
//! message loop: the coordinator's pattern discovery and exclude enforcement (kip1279.md
//! B §8.11; prototype `MirrorSourceSyncer.discoverTopicsByPattern` /
//! `enforceExcludePatterns`), and the reconnect on a non-filter config change with none on a
//! filter change (B ConfigRecord row; prototype `maybeRecreateConnection`).

mod support;

use std::collections::BTreeMap;

use mirror_core::broker::output::Event;
use mirror_core::broker::{Broker, BrokerConfig};
use mirror_core::controller::{Controller, ControllerConfig};
use mirror_core::mirror::MirrorPartitionState;
use mirror_core::protocol::messages::{CreatableTopic, MirrorTopic};
use mirror_core::protocol::metadata::ConfigResource;
use mirror_core::protocol::{ClusterIdx, ErrorCode, NodeId, Request, Response};
use mirror_core::types::{BrokerId, TopicPartition};
use support::MiniNet;

const SRC: ClusterIdx = ClusterIdx(0);
const DST: ClusterIdx = ClusterIdx(1);

fn world() -> MiniNet {
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
            net.add(
                NodeId::broker(c, BrokerId(b)),
                support::AnyNode::Broker(Box::new(Broker::new(
                    BrokerConfig::new(c, BrokerId(b)),
                    1,
                    BTreeMap::new(),
                ))),
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

fn create_source_topic(net: &mut MiniNet, name: &str) {
    let req = Request::CreateTopics {
        topics: vec![CreatableTopic {
            name: name.into(),
            num_partitions: 1,
            replication_factor: 2,
            configs: BTreeMap::new(),
            topic_id: None,
        }],
    };
    let r = call(net, SRC, req);
    assert!(
        matches!(r, Response::TopicErrors { ref results } if results[0].1.is_ok()),
        "{r:?}"
    );
}

fn admin_ok(r: &Response) {
    match r {
        Response::MirrorAdmin { error, topics, .. } => {
            assert_eq!(*error, ErrorCode::None, "{r:?}");
            assert!(topics.iter().all(|t| t.error.is_ok()), "{r:?}");
        }
        Response::TopicErrors { results } => assert!(results[0].1.is_ok(), "{r:?}"),
        other => panic!("{other:?}"),
    }
}

/// Mirror `m1` on DST from SRC, synced every second, with `extra` configs.
fn create_mirror(net: &mut MiniNet, extra: &[(&str, &str)]) {
    let configs = [
        ("source.cluster", "src"),
        ("source.cluster.index", "0"),
        ("bootstrap.servers", "0,1"),
        ("mirror.metadata.refresh.interval.ms", "1000"),
    ]
    .iter()
    .chain(extra)
    .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
    .collect();
    let r = call(
        net,
        DST,
        Request::CreateMirror {
            mirror_name: "m1".into(),
            configs,
        },
    );
    admin_ok(&r);
}

fn alter_mirror(net: &mut MiniNet, key: &str, value: &str) {
    let r = call(
        net,
        DST,
        Request::IncrementalAlterConfigs {
            resource: ConfigResource::Mirror("m1".into()),
            ops: vec![(key.to_string(), Some(value.to_string()))],
        },
    );
    admin_ok(&r);
}

fn mirror_name(net: &MiniNet, topic: &str) -> Option<String> {
    net.controller(NodeId::controller(DST))
        .image()
        .topic_config(topic, "mirror.name")
        .map(str::to_string)
}

/// The DST broker leading `tp` and its mirror state there.
fn leader_state(net: &MiniNet, tp: &TopicPartition) -> Option<(NodeId, MirrorPartitionState)> {
    (0..2).find_map(|b| {
        let id = NodeId::broker(DST, BrokerId(b));
        net.broker(id)
            .mirror_runs()
            .get(tp)
            .map(|r| (id, r.state()))
    })
}

fn events(net: &MiniNet) -> Vec<Event> {
    net.events.iter().map(|(_, _, e)| e.clone()).collect()
}

#[test]
fn discovery_starts_included_topics_and_enforcement_stops_newly_excluded_ones() {
    // Goal: topics.include regexes matched against the source's topics start them; a topic
    // stopped explicitly is not rediscovered; a topics.exclude change stops an active topic.
    let mut net = world();
    for t in ["orders-us", "orders-eu", "logs-app", "__internal-x"] {
        create_source_topic(&mut net, t);
    }
    create_mirror(&mut net, &[("topics.include", "orders-.*,__.*")]);
    net.run_for_ms(8_000);
    let us = TopicPartition::new("orders-us", 0);
    let eu = TopicPartition::new("orders-eu", 0);
    assert_eq!(mirror_name(&net, "orders-us").as_deref(), Some("m1"));
    assert_eq!(mirror_name(&net, "orders-eu").as_deref(), Some("m1"));
    assert_eq!(mirror_name(&net, "logs-app"), None, "not included");
    assert_eq!(
        mirror_name(&net, "__internal-x"),
        None,
        "internal: excluded by default"
    );
    assert_eq!(
        leader_state(&net, &us).map(|s| s.1),
        Some(MirrorPartitionState::Mirroring)
    );
    let discovered: Vec<Vec<(String, ErrorCode)>> = events(&net)
        .into_iter()
        .filter_map(|e| match e {
            Event::MirrorTopicsDiscovered { topics, error, .. } if error.is_ok() => Some(topics),
            _ => None,
        })
        .collect();
    assert_eq!(
        discovered,
        vec![vec![
            ("orders-eu".to_string(), ErrorCode::None),
            ("orders-us".to_string(), ErrorCode::None),
        ]],
        "one start, then nothing new to discover"
    );
    // An explicit stop: the topic stays in the mirror (`m1.removed`) and is not started
    // again by later discovery ticks.
    let stop = Request::StopMirrorTopics {
        mirror_name: "m1".into(),
        topics: vec!["orders-eu".into()],
        patterns: Vec::new(),
        state_validation_offset: None,
    };
    admin_ok(&call(&mut net, DST, stop));
    net.run_for_ms(6_000);
    assert_eq!(
        mirror_name(&net, "orders-eu").as_deref(),
        Some("m1.removed")
    );
    assert_eq!(
        leader_state(&net, &eu).map(|s| s.1),
        Some(MirrorPartitionState::Stopped)
    );
    // Excluding orders-us through the mirror config stops it at the next tick.
    net.events.clear();
    alter_mirror(&mut net, "topics.exclude", "__.*,orders-us");
    net.run_for_ms(6_000);
    assert_eq!(
        mirror_name(&net, "orders-us").as_deref(),
        Some("m1.removed")
    );
    let excluded: Vec<Vec<(String, ErrorCode)>> = events(&net)
        .into_iter()
        .filter_map(|e| match e {
            Event::MirrorTopicsExcluded { topics, .. } => Some(topics),
            _ => None,
        })
        .collect();
    assert_eq!(
        excluded[0],
        vec![("orders-us".to_string(), ErrorCode::None)]
    );
    assert!(
        !events(&net)
            .iter()
            .any(|e| matches!(e, Event::MirrorReconnected { .. })),
        "a filter change does not reconnect"
    );
}

#[test]
fn a_connection_config_change_reconnects_and_a_filter_change_does_not() {
    // Goal: the prototype's NON_CONNECTION_CONFIGS split: fetch.backoff.ms reconnects (the
    // leader drops source leaders and fetchers and re-enters MIRRORING), groups.include
    // does not.
    let mut net = world();
    create_source_topic(&mut net, "orders");
    create_mirror(&mut net, &[]);
    let src_id = net
        .controller(NodeId::controller(SRC))
        .image()
        .topic_id("orders")
        .expect("source topic");
    let start = Request::StartMirrorTopics {
        mirror_name: "m1".into(),
        topics: vec![MirrorTopic {
            name: "orders".into(),
            topic_id: src_id,
            num_partitions: 1,
        }],
        include_patterns: Vec::new(),
        exclude_patterns: Vec::new(),
        state_validation_offset: None,
    };
    admin_ok(&call(&mut net, DST, start));
    net.run_for_ms(6_000);
    let tp = TopicPartition::new("orders", 0);
    let (leader, state) = leader_state(&net, &tp).expect("led");
    assert_eq!(state, MirrorPartitionState::Mirroring);
    net.events.clear();
    alter_mirror(&mut net, "groups.include", "app-.*");
    net.run_for_ms(3_000);
    assert!(
        !events(&net)
            .iter()
            .any(|e| matches!(e, Event::MirrorReconnected { .. })),
        "filter keys leave the connections alone"
    );
    net.events.clear();
    alter_mirror(&mut net, "fetch.backoff.ms", "500");
    net.run_for_ms(3_000);
    let reconnects: Vec<(NodeId, Event)> = net
        .events
        .iter()
        .filter(|(_, _, e)| matches!(e, Event::MirrorReconnected { .. }))
        .map(|(_, n, e)| (*n, e.clone()))
        .collect();
    assert_eq!(
        reconnects,
        vec![(
            leader,
            Event::MirrorReconnected {
                mirror: "m1".into(),
                keys: vec!["fetch.backoff.ms".into()],
                partitions: vec![tp.clone()],
            }
        )],
        "only the broker with mirror partitions reconnects"
    );
    // MIRRORING was re-entered without a state write, and the fetcher is back.
    assert_eq!(
        leader_state(&net, &tp).map(|s| s.1),
        Some(MirrorPartitionState::Mirroring)
    );
    assert!(
        net.broker(leader)
            .mirror_fetch_state()
            .parts
            .contains_key(&tp)
    );
    assert!(
        !events(&net)
            .iter()
            .any(|e| matches!(e, Event::MirrorStateChanged { .. })),
        "no transition"
    );
}
