//! Clients against the real broker and controller, in the deterministic test loop.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use mirror_core::broker::{Broker, BrokerConfig, Event};
use mirror_core::controller::{Controller, ControllerConfig};
use mirror_core::protocol::{ClusterIdx, ErrorCode, NodeId};
use mirror_core::replication::fetch_leader::FetchIsolation;
use mirror_core::types::{BrokerId, Offset, TopicPartition};

use super::test_loop::{AnyNode, MiniNet};
use super::*;

const C: ClusterIdx = ClusterIdx(0);

fn brokers(n: i32) -> Vec<BrokerId> {
    (0..n).map(BrokerId).collect()
}

fn cluster(n: i32) -> MiniNet {
    let mut net = MiniNet::new();
    let mut cc = ControllerConfig::new(C);
    cc.default_replication_factor = i16::try_from(n).expect("small");
    net.add(
        NodeId::controller(C),
        AnyNode::Controller(Box::new(Controller::new(cc, Vec::new()))),
    );
    for i in 0..n {
        net.add(
            NodeId::broker(C, BrokerId(i)),
            AnyNode::Broker(Box::new(Broker::new(
                BrokerConfig::new(C, BrokerId(i)),
                1,
                BTreeMap::new(),
            ))),
        );
    }
    net.run_for_ms(3_000);
    net
}

fn add_client(net: &mut MiniNet, n: u32, c: impl Into<ClientNode>) -> NodeId {
    let id = NodeId::client(C, n);
    net.add(id, AnyNode::Client(Box::new(c.into())));
    id
}

fn create_topic(net: &mut MiniNet, client: u32, name: &str, partitions: i32, min_isr: &str) {
    let op = ScheduledOp {
        at_ms: 0,
        op: AdminOp::CreateTopic {
            name: name.into(),
            partitions,
            replication_factor: -1,
            configs: [("min.insync.replicas".to_string(), min_isr.to_string())].into(),
        },
    };
    let n = brokers(i32::try_from(net.slots.len() - 1).expect("small"));
    let id = add_client(
        net,
        client,
        Admin::new(AdminConfig::new(client, C, n, vec![op])),
    );
    net.run_for_ms(2_000);
    let results = net.client(id).as_admin().expect("admin").results().to_vec();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].1, ErrorCode::None, "{results:?}");
}

fn leader_of(net: &MiniNet, tp: &TopicPartition) -> BrokerId {
    net.controller(NodeId::controller(C))
        .image()
        .partition(tp)
        .and_then(|r| r.leader)
        .expect("a leader")
}

/// Data records of `tp` in broker `b`'s log: offset → value.
fn log_records(net: &MiniNet, b: BrokerId, tp: &TopicPartition) -> BTreeMap<Offset, Bytes> {
    let p = net
        .broker(NodeId::broker(C, b))
        .partition(tp)
        .expect("replica");
    let data = p
        .log
        .read(
            p.log.log_start_offset(),
            usize::MAX / 2,
            FetchIsolation::LogEnd,
        )
        .expect("read");
    let mut out = BTreeMap::new();
    for batch in data.batches.iter().filter(|b| !b.is_control_batch()) {
        for r in batch.records() {
            let o = batch.base_offset().plus(i64::from(r.offset_delta));
            out.insert(o, r.value.expect("value"));
        }
    }
    out
}

/// `(tp, offset, value)` of every acknowledged record.
fn acked(events: &[Event]) -> Vec<(TopicPartition, Offset, Bytes)> {
    let mut out = Vec::new();
    for e in events {
        if let Event::ProduceAcked {
            tp,
            base_offset,
            values,
            ..
        } = e
        {
            for (i, v) in values.iter().enumerate() {
                out.push((tp.clone(), base_offset.plus(i as i64), v.clone()));
            }
        }
    }
    out
}

fn consumed(events: &[Event]) -> Vec<(TopicPartition, Offset, Bytes)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Consumed {
                tp, offset, value, ..
            } => Some((tp.clone(), *offset, value.clone())),
            _ => None,
        })
        .collect()
}

fn failures(events: &[Event]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, Event::ProduceFailed { .. }))
        .count()
}

fn assert_in_leader_logs(net: &MiniNet, acked: &[(TopicPartition, Offset, Bytes)]) {
    let mut logs: BTreeMap<TopicPartition, BTreeMap<Offset, Bytes>> = BTreeMap::new();
    for (tp, o, v) in acked {
        let log = logs
            .entry(tp.clone())
            .or_insert_with(|| log_records(net, leader_of(net, tp), tp));
        assert_eq!(log.get(o), Some(v), "acked {v:?} at {tp}@{o}");
    }
    for (tp, log) in &logs {
        let values: BTreeSet<&Bytes> = log.values().collect();
        assert_eq!(values.len(), log.len(), "duplicates in {tp}");
    }
}

#[test]
fn idempotent_producer_acks_all_writes_land_at_the_acked_offsets() {
    let mut net = cluster(3);
    create_topic(&mut net, 9, "orders", 2, "2");
    let mut cfg = ProducerConfig::new(1, C, brokers(3), "orders", vec![0, 1]);
    cfg.records_per_second = 200.0;
    cfg.batch_records = 5;
    cfg.max_records = Some(200);
    cfg.seed = 42;
    let p = add_client(&mut net, 1, Producer::new(cfg));
    net.run_for_ms(10_000);
    let events = net.events_of(p);
    let acked = acked(&events);
    assert_eq!(failures(&events), 0, "{events:?}");
    assert_eq!(acked.len(), 200);
    let values: BTreeSet<_> = acked.iter().map(|a| a.2.clone()).collect();
    assert_eq!(values.len(), 200, "values are unique");
    assert!(values.contains(&Bytes::from("c1-0")) && values.contains(&Bytes::from("c1-199")));
    for e in &events {
        if let Event::ProduceAcked { producer_id, .. } = e {
            assert!(
                producer_id.is_some(),
                "idempotent batches carry the producer id"
            );
        }
    }
    assert_in_leader_logs(&net, &acked);
    assert!(net.client(p).as_producer().expect("producer").is_done());
}

/// Values of committed and aborted transactions, from the producer's event order
/// (every ProduceAcked of a transaction precedes its TxnEnded).
fn txn_outcomes(events: &[Event]) -> (BTreeSet<Bytes>, BTreeSet<Bytes>) {
    let (mut committed, mut aborted, mut current) = (BTreeSet::new(), BTreeSet::new(), Vec::new());
    for e in events {
        match e {
            Event::ProduceAcked {
                values,
                transactional,
                ..
            } => {
                assert!(transactional);
                current.extend(values.iter().cloned());
            }
            Event::TxnEnded { commit, error, .. } => {
                assert_eq!(*error, ErrorCode::None);
                if *commit {
                    committed.extend(current.drain(..));
                } else {
                    aborted.extend(current.drain(..));
                }
            }
            _ => {}
        }
    }
    assert!(
        current.is_empty(),
        "every acked write belongs to an ended transaction"
    );
    (committed, aborted)
}

#[test]
fn read_committed_sees_exactly_the_committed_transactions_read_uncommitted_sees_all() {
    let mut net = cluster(3);
    create_topic(&mut net, 9, "tx", 2, "2");
    let mut cfg = ProducerConfig::new(1, C, brokers(3), "tx", vec![0, 1]);
    cfg.transactional_id = Some("tx-1".into());
    cfg.records_per_second = 100.0;
    cfg.batch_records = 4;
    cfg.max_records = Some(120);
    cfg.txn = TxnConfig {
        records_per_txn: 10,
        abort_probability: 0.4,
    };
    cfg.seed = 7;
    let p = add_client(&mut net, 1, Producer::new(cfg));
    let mut rc = ConsumerConfig::new(2, C, brokers(3), "tx", vec![0, 1]);
    rc.read_committed = true;
    let rc = add_client(&mut net, 2, Consumer::new(rc));
    let ru = ConsumerConfig::new(3, C, brokers(3), "tx", vec![0, 1]);
    let ru = add_client(&mut net, 3, Consumer::new(ru));
    net.run_for_ms(30_000);

    let events = net.events_of(p);
    assert_eq!(failures(&events), 0, "{events:?}");
    let (committed, aborted) = txn_outcomes(&events);
    assert!(
        !committed.is_empty() && !aborted.is_empty(),
        "seed gives both outcomes"
    );
    assert_eq!(committed.len() + aborted.len(), 120);
    assert!(net.client(p).as_producer().expect("producer").is_done());

    let got_rc = consumed(&net.events_of(rc));
    let got_ru = consumed(&net.events_of(ru));
    let rc_values: Vec<Bytes> = got_rc.iter().map(|c| c.2.clone()).collect();
    let rc_set: BTreeSet<Bytes> = rc_values.iter().cloned().collect();
    assert_eq!(rc_set.len(), rc_values.len(), "no duplicates");
    assert_eq!(
        rc_set, committed,
        "read_committed returns exactly the committed values"
    );
    let ru_set: BTreeSet<Bytes> = got_ru.iter().map(|c| c.2.clone()).collect();
    assert_eq!(ru_set.len(), got_ru.len());
    let all: BTreeSet<Bytes> = committed.union(&aborted).cloned().collect();
    assert_eq!(ru_set, all, "read_uncommitted returns every data record");
    // Offsets strictly increase per partition and match the log.
    for got in [&got_rc, &got_ru] {
        let mut last: BTreeMap<TopicPartition, Offset> = BTreeMap::new();
        for (tp, o, v) in got {
            if let Some(prev) = last.insert(tp.clone(), *o) {
                assert!(prev < *o);
            }
            let log = log_records(&net, leader_of(&net, tp), tp);
            assert_eq!(log.get(o), Some(v));
        }
    }
}

#[test]
fn consumer_resumes_from_its_committed_offset_after_being_replaced() {
    let mut net = cluster(3);
    create_topic(&mut net, 9, "events", 1, "2");
    let mut cfg = ProducerConfig::new(1, C, brokers(3), "events", vec![0]);
    cfg.records_per_second = 20.0;
    cfg.batch_records = 2;
    cfg.max_records = Some(100);
    let p = add_client(&mut net, 1, Producer::new(cfg));
    let mut cc = ConsumerConfig::new(2, C, brokers(3), "events", vec![0]);
    cc.group = Some("g".into());
    cc.auto_commit_interval_ms = 1_000;
    let a = add_client(&mut net, 2, Consumer::new(cc.clone()));
    net.run_for_ms(2_500);
    net.with_client(a, |c| c.as_consumer_mut().expect("consumer").stop());
    net.run_for_ms(1_000);
    let a_events = net.events_of(a);
    let a_got = consumed(&a_events);
    let last_commit = a_events
        .iter()
        .rev()
        .find_map(|e| match e {
            Event::OffsetsCommitted { offsets, group, .. } => {
                assert_eq!(group, "g");
                Some(offsets[0].1)
            }
            _ => None,
        })
        .expect("a commit");
    assert!(!a_got.is_empty());
    assert_eq!(
        last_commit,
        a_got.last().expect("consumed").1.plus(1),
        "close commits the position"
    );
    assert!(last_commit.0 < 100, "A stopped mid-stream");

    cc.client = 3;
    cc.seed = 3;
    let b = add_client(&mut net, 3, Consumer::new(cc));
    net.run_for_ms(10_000);
    let b_got = consumed(&net.events_of(b));
    assert_eq!(b_got.first().expect("B consumed").1, last_commit);
    let offsets: Vec<i64> = a_got.iter().chain(&b_got).map(|c| c.1.0).collect();
    assert_eq!(offsets, (0..100).collect::<Vec<_>>(), "no gap, no replay");
    assert_eq!(acked(&net.events_of(p)).len(), 100);
}

#[test]
fn idempotent_producer_survives_a_leader_crash_without_loss_or_duplicates() {
    let mut net = cluster(3);
    create_topic(&mut net, 9, "orders", 1, "2");
    let tp = TopicPartition::new("orders", 0);
    let mut cfg = ProducerConfig::new(1, C, brokers(3), "orders", vec![0]);
    cfg.records_per_second = 100.0;
    cfg.batch_records = 5;
    cfg.max_records = Some(400);
    cfg.seed = 5;
    let p = add_client(&mut net, 1, Producer::new(cfg));
    net.run_for_ms(1_500);
    let old = leader_of(&net, &tp);
    net.crash(NodeId::broker(C, old));
    net.run_for_ms(90_000);
    let new = leader_of(&net, &tp);
    assert_ne!(new, old, "failover happened");
    let events = net.events_of(p);
    assert_eq!(failures(&events), 0, "{events:?}");
    let acked = acked(&events);
    assert_eq!(acked.len(), 400, "every record acknowledged");
    assert_in_leader_logs(&net, &acked);
    let log = log_records(&net, new, &tp);
    assert_eq!(log.len(), 400, "no duplicates, nothing unacknowledged");
}

#[test]
fn admin_ops_report_results() {
    let mut net = cluster(3);
    let at = |at_ms: i64, op: AdminOp| ScheduledOp { at_ms, op };
    let ops = vec![
        at(
            0,
            AdminOp::CreateTopic {
                name: "a".into(),
                partitions: 2,
                replication_factor: 3,
                configs: BTreeMap::new(),
            },
        ),
        at(
            0,
            AdminOp::CreateTopic {
                name: "a".into(),
                partitions: 2,
                replication_factor: 3,
                configs: BTreeMap::new(),
            },
        ),
        at(
            100,
            AdminOp::CreatePartitions {
                topic: "a".into(),
                count: 4,
            },
        ),
        at(
            200,
            AdminOp::AlterTopicConfig {
                topic: "a".into(),
                key: "min.insync.replicas".into(),
                value: Some("2".into()),
            },
        ),
        at(
            1_000,
            AdminOp::DeleteRecords {
                topic: "a".into(),
                partition: 0,
                before: 0,
            },
        ),
        at(
            1_000,
            AdminOp::ElectLeaders {
                topic: "a".into(),
                partition: 0,
                unclean: false,
            },
        ),
        at(
            1_000,
            AdminOp::DeleteRecords {
                topic: "nope".into(),
                partition: 0,
                before: 0,
            },
        ),
        at(2_000, AdminOp::DeleteTopic { name: "a".into() }),
    ];
    let json = serde_json::to_string(&ops).expect("serde");
    let back: Vec<ScheduledOp> = serde_json::from_str(&json).expect("serde");
    assert_eq!(back, ops);
    let id = add_client(
        &mut net,
        1,
        Admin::new(AdminConfig::new(1, C, brokers(3), ops)),
    );
    net.run_for_ms(5_000);
    let admin = net.client(id).as_admin().expect("admin");
    assert!(admin.is_done(), "{:?}", admin.results());
    let got: Vec<(String, ErrorCode)> = admin.results().to_vec();
    let want = vec![
        (
            "create_topics a partitions=2 rf=3".to_string(),
            ErrorCode::None,
        ),
        (
            "create_topics a partitions=2 rf=3".to_string(),
            ErrorCode::TopicAlreadyExists,
        ),
        ("create_partitions a count=4".to_string(), ErrorCode::None),
        (
            "alter_configs a set min.insync.replicas=2".to_string(),
            ErrorCode::None,
        ),
        ("delete_records a-0 before=0".to_string(), ErrorCode::None),
        (
            "elect_leaders preferred a-0".to_string(),
            ErrorCode::ElectionNotNeeded,
        ),
        (
            "delete_records nope-0 before=0".to_string(),
            ErrorCode::UnknownTopicOrPartition,
        ),
        ("delete_topics a".to_string(), ErrorCode::None),
    ];
    assert_eq!(got, want);
    let events: Vec<(String, ErrorCode)> = net
        .events_of(id)
        .into_iter()
        .filter_map(|e| match e {
            Event::AdminResult {
                operation, error, ..
            } => Some((operation, error)),
            _ => None,
        })
        .collect();
    assert_eq!(events, want);
}
