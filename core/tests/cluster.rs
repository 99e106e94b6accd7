//! Broker and controller together, driven by a deterministic message loop (no simulator):
//! registration, topic creation, replication, acks=all, leader failover, follower catch-up
//! after a restart from disk.

mod support;

use std::collections::BTreeMap;

use mirror_core::broker::coordinator_runtime::{
    CONSUMER_OFFSETS_TOPIC, COORDINATOR_TOPIC_PARTITIONS, TRANSACTION_STATE_TOPIC,
};
use mirror_core::broker::{Broker, BrokerConfig};
use mirror_core::controller::{Controller, ControllerConfig};
use mirror_core::protocol::messages::{CoordinatorKind, CreatableTopic};
use mirror_core::protocol::{ClusterIdx, CorrelationId, ErrorCode, NodeId, Request, Response};
use mirror_core::record::{BatchBuilder, SimpleRecord};
use mirror_core::types::{BrokerId, Offset, ProducerEpoch, ProducerId, Sequence, TopicPartition};
use support::MiniNet;

const C: ClusterIdx = ClusterIdx(0);

fn broker_cfg(id: i32) -> BrokerConfig {
    BrokerConfig::new(C, BrokerId(id))
}

/// [`broker_cfg`] with the cluster default `min.insync.replicas` set to `min_isr`.
fn broker_cfg_with_min_isr(id: i32, min_isr: usize) -> BrokerConfig {
    let mut cfg = broker_cfg(id);
    cfg.min_insync_replicas = min_isr;
    cfg
}

fn cluster(n: i32) -> MiniNet {
    cluster_with_min_isr(n, 1)
}

/// [`cluster`] with the cluster default `min.insync.replicas` (brokers and controller) set
/// to `min_isr`.
fn cluster_with_min_isr(n: i32, min_isr: usize) -> MiniNet {
    let mut net = MiniNet::new();
    let mut cc = ControllerConfig::new(C);
    cc.default_replication_factor = n as i16;
    cc.min_insync_replicas = min_isr;
    net.add(
        NodeId::controller(C),
        support::AnyNode::Controller(Box::new(Controller::new(cc, Vec::new()))),
    );
    for i in 0..n {
        net.add(
            NodeId::broker(C, BrokerId(i)),
            support::AnyNode::Broker(Box::new(Broker::new(
                broker_cfg_with_min_isr(i, min_isr),
                1,
                BTreeMap::new(),
            ))),
        );
    }
    net.run_for_ms(3_000);
    net
}

fn client() -> NodeId {
    NodeId::client(C, 0)
}

fn create_topic(net: &mut MiniNet, name: &str, partitions: i32, rf: i16, configs: &[(&str, &str)]) {
    let req = Request::CreateTopics {
        topics: vec![CreatableTopic {
            name: name.into(),
            num_partitions: partitions,
            replication_factor: rf,
            configs: configs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            topic_id: None,
        }],
    };
    let id = net.request(client(), NodeId::broker(C, BrokerId(0)), req);
    net.run_for_ms(2_000);
    match net.take_response(client(), id) {
        Some(Response::TopicErrors { results }) => {
            assert_eq!(results[0].1, ErrorCode::None, "{results:?}")
        }
        other => panic!("create topic: {other:?}"),
    }
}

fn leader_of(net: &MiniNet, tp: &TopicPartition) -> BrokerId {
    net.controller(NodeId::controller(C))
        .image()
        .partition(tp)
        .and_then(|r| r.leader)
        .expect("a leader")
}

fn produce(
    net: &mut MiniNet,
    to: BrokerId,
    tp: &TopicPartition,
    seq: i32,
    n: usize,
    acks: i16,
) -> Option<Response> {
    let recs: Vec<SimpleRecord> = (0..n)
        .map(|i| SimpleRecord::value(i as i64, format!("v{seq}-{i}")))
        .collect();
    let batch =
        BatchBuilder::idempotent(ProducerId(1), ProducerEpoch(0), Sequence(seq)).build(&recs);
    let req = Request::Produce {
        transactional_id: None,
        acks,
        timeout_ms: 5_000,
        partitions: vec![(tp.clone(), batch)],
    };
    let id = net.request(client(), NodeId::broker(C, to), req);
    net.run_for_ms(1_500);
    net.take_response(client(), id)
}

fn log_of(net: &MiniNet, b: i32, tp: &TopicPartition) -> (Offset, Offset) {
    let p = net
        .broker(NodeId::broker(C, BrokerId(b)))
        .partition(tp)
        .expect("replica");
    (p.log.log_end_offset(), p.log.high_watermark())
}

#[test]
fn brokers_register_and_a_replicated_topic_accepts_acks_all_writes() {
    let mut net = cluster(3);
    let registered = net
        .events
        .iter()
        .filter(|(_, _, e)| matches!(e, mirror_core::broker::Event::Registered { .. }))
        .count();
    assert_eq!(registered, 3);
    create_topic(&mut net, "orders", 1, 3, &[("min.insync.replicas", "2")]);
    let tp = TopicPartition::new("orders", 0);
    let leader = leader_of(&net, &tp);
    let r = produce(&mut net, leader, &tp, 0, 3, -1).expect("acks=all answered");
    match r {
        Response::Produce { partitions } => {
            assert_eq!(partitions[0].error, ErrorCode::None);
            assert_eq!(partitions[0].base_offset, Offset(0));
        }
        other => panic!("{other:?}"),
    }
    net.run_for_ms(1_000);
    for b in 0..3 {
        assert_eq!(
            log_of(&net, b, &tp),
            (Offset(3), Offset(3)),
            "broker {b} replicated and knows the HW"
        );
    }
}

fn restart(net: &mut MiniNet, b: i32, incarnation: u64) {
    restart_with(net, broker_cfg(b), incarnation);
}

/// Restarts broker `cfg.broker_id` from its disk with `cfg`.
fn restart_with(net: &mut MiniNet, cfg: BrokerConfig, incarnation: u64) {
    let id = NodeId::broker(C, cfg.broker_id);
    let disk = net.slots[&id].disk.clone();
    net.replace(
        id,
        support::AnyNode::Broker(Box::new(Broker::new(cfg, incarnation, disk))),
    );
}

#[test]
fn leader_crash_fails_over_within_the_isr_and_the_old_leader_catches_up_from_disk() {
    let mut net = cluster(3);
    create_topic(&mut net, "orders", 1, 3, &[("min.insync.replicas", "2")]);
    let tp = TopicPartition::new("orders", 0);
    let first = leader_of(&net, &tp);
    for seq in [0, 2, 4] {
        produce(&mut net, first, &tp, seq, 2, -1).expect("answered");
    }
    net.crash(NodeId::broker(C, first));
    net.run_for_ms(12_000); // session timeout (9 s) fences it; a new leader is elected
    let second = leader_of(&net, &tp);
    assert_ne!(second, first);
    let r = produce(&mut net, second, &tp, 6, 2, -1).expect("answered");
    let Response::Produce { partitions } = r else {
        panic!()
    };
    assert_eq!(partitions[0].error, ErrorCode::None);
    assert_eq!(
        partitions[0].base_offset,
        Offset(6),
        "no acknowledged write lost"
    );
    restart(&mut net, first.0, 2);
    net.run_for_ms(20_000);
    let (leo, hw) = log_of(&net, first.0, &tp);
    assert_eq!(
        (leo, hw),
        (Offset(8), Offset(8)),
        "the old leader caught up as a follower"
    );
    let isr = net
        .controller(NodeId::controller(C))
        .image()
        .partition(&tp)
        .unwrap()
        .isr
        .clone();
    assert_eq!(isr.len(), 3, "it rejoined the ISR: {isr:?}");
    let a: Vec<_> = net
        .broker(NodeId::broker(C, first))
        .partition(&tp)
        .unwrap()
        .log
        .batches()
        .cloned()
        .collect();
    let b: Vec<_> = net
        .broker(NodeId::broker(C, second))
        .partition(&tp)
        .unwrap()
        .log
        .batches()
        .cloned()
        .collect();
    assert_eq!(a, b, "logs identical byte for byte");
}

#[test]
fn unclean_election_loses_exactly_the_unreplicated_suffix_and_the_old_leader_truncates() {
    let mut net = cluster(2);
    create_topic(&mut net, "t", 1, 2, &[]);
    let tp = TopicPartition::new("t", 0);
    let leader = leader_of(&net, &tp);
    let follower = if leader.0 == 0 { 1 } else { 0 };
    produce(&mut net, leader, &tp, 0, 2, -1).expect("answered"); // 0-1 replicated
    // Isolate the follower from the leader: writes with acks=1 land only on the leader.
    let (l, f) = (
        NodeId::broker(C, leader),
        NodeId::broker(C, BrokerId(follower)),
    );
    net.cut.insert((f, l));
    net.cut.insert((l, f));
    produce(&mut net, leader, &tp, 2, 3, 1).expect("acks=1 answered"); // 2-4 only on the leader
    net.run_for_ms(40_000); // the follower leaves the ISR (replica.lag.time.max.ms)
    // The leader dies; the follower is elected uncleanly on request.
    net.crash(l);
    net.run_for_ms(12_000);
    let id = net.request(
        client(),
        f,
        Request::ElectLeaders {
            partitions: vec![tp.clone()],
            unclean: true,
            test_only_candidate: None,
        },
    );
    net.run_for_ms(2_000);
    let r = net.take_response(client(), id);
    assert!(
        matches!(r, Some(Response::PartitionErrors { ref results }) if results[0].1 == ErrorCode::None),
        "{r:?}"
    );
    assert_eq!(leader_of(&net, &tp), BrokerId(follower));
    let unclean = net.events.iter().any(|(_, _, e)| {
        matches!(
            e,
            mirror_core::broker::Event::LeaderElected { unclean: true, .. }
        )
    });
    assert!(unclean, "declared as an unclean election");
    // A plain producer writes offset 2 in the new epoch (an idempotent producer would get
    // OUT_OF_ORDER_SEQUENCE: its acknowledged sequences 2-4 were lost with the old leader).
    let batch = BatchBuilder::new().build(&[SimpleRecord::value(0, "after")]);
    let id = net.request(
        client(),
        f,
        Request::Produce {
            transactional_id: None,
            acks: 1,
            timeout_ms: 5_000,
            partitions: vec![(tp.clone(), batch)],
        },
    );
    net.run_for_ms(1_000);
    assert!(
        matches!(net.take_response(client(), id), Some(Response::Produce { ref partitions }) if partitions[0].base_offset == Offset(2))
    );
    net.cut.clear();
    restart(&mut net, leader.0, 2);
    net.run_for_ms(20_000);
    let (leo, _) = log_of(&net, leader.0, &tp);
    assert_eq!(
        leo,
        Offset(3),
        "the old leader truncated 2-4 (diverging epoch) and fetched offset 2"
    );
    let trunc = net.events.iter().find_map(|(_, n, e)| match e {
        mirror_core::broker::Event::Truncated { from, to, .. } if *n == l => Some((*from, *to)),
        _ => None,
    });
    assert_eq!(
        trunc,
        Some((Offset(5), Offset(2))),
        "exactly the unreplicated suffix was lost"
    );
}

fn call(net: &mut MiniNet, to: BrokerId, req: Request) -> Response {
    let id = net.request(client(), NodeId::broker(C, to), req);
    net.run_for_ms(500);
    net.take_response(client(), id).expect("answered")
}

fn find_txn_coordinator(net: &mut MiniNet, txn_id: &str) -> BrokerId {
    find_coordinator(net, txn_id, CoordinatorKind::Transaction)
}

fn find_coordinator(net: &mut MiniNet, key: &str, kind: CoordinatorKind) -> BrokerId {
    for _ in 0..20 {
        let r = call(
            net,
            BrokerId(0),
            Request::FindCoordinator {
                key: key.into(),
                kind,
            },
        );
        if let Response::FindCoordinator {
            error: ErrorCode::None,
            node: Some(b),
        } = r
        {
            return b;
        }
        net.run_for_ms(1_000);
    }
    panic!("no {kind:?} coordinator for {key}");
}

/// InitProducerId for `txn_id` (transaction timeout 10 s) from a new producer instance.
fn init_request(txn_id: &str) -> Request {
    Request::InitProducerId {
        transactional_id: Some(txn_id.into()),
        transaction_timeout_ms: 10_000,
        producer_id: ProducerId::NONE,
        producer_epoch: ProducerEpoch::NONE,
    }
}

fn init_txn(net: &mut MiniNet, coord: BrokerId, txn_id: &str) -> (ProducerId, ProducerEpoch) {
    for _ in 0..20 {
        let r = call(net, coord, init_request(txn_id));
        match r {
            Response::InitProducerId {
                error: ErrorCode::None,
                producer_id,
                producer_epoch,
            } => {
                return (producer_id, producer_epoch);
            }
            _ => net.run_for_ms(500),
        }
    }
    panic!("InitProducerId never succeeded");
}

#[allow(clippy::too_many_arguments)]
fn txn_produce(
    net: &mut MiniNet,
    coord: BrokerId,
    txn_id: &str,
    pid: ProducerId,
    epoch: ProducerEpoch,
    tp: &TopicPartition,
    seq: i32,
    n: usize,
) {
    let r = call(
        net,
        coord,
        Request::AddPartitionsToTxn {
            transactional_id: txn_id.into(),
            producer_id: pid,
            producer_epoch: epoch,
            partitions: vec![tp.clone()],
        },
    );
    assert!(
        matches!(r, Response::PartitionErrors { ref results } if results[0].1 == ErrorCode::None),
        "{r:?}"
    );
    let recs: Vec<SimpleRecord> = (0..n)
        .map(|i| SimpleRecord::value(i as i64, format!("t{i}")))
        .collect();
    let batch = BatchBuilder::transactional(pid, epoch, Sequence(seq)).build(&recs);
    let leader = leader_of(net, tp);
    let r = call(
        net,
        leader,
        Request::Produce {
            transactional_id: Some(txn_id.into()),
            acks: -1,
            timeout_ms: 5_000,
            partitions: vec![(tp.clone(), batch)],
        },
    );
    assert!(
        matches!(r, Response::Produce { ref partitions } if partitions[0].error == ErrorCode::None),
        "{r:?}"
    );
}

fn end_txn(
    net: &mut MiniNet,
    coord: BrokerId,
    txn_id: &str,
    pid: ProducerId,
    epoch: ProducerEpoch,
    commit: bool,
) -> ErrorCode {
    match call(
        net,
        coord,
        Request::EndTxn {
            transactional_id: txn_id.into(),
            producer_id: pid,
            producer_epoch: epoch,
            commit,
        },
    ) {
        Response::Error { error } => error,
        other => panic!("{other:?}"),
    }
}

/// Creates `payments` (1 partition, RF 3), initialises `txn_id` on its coordinator and
/// writes one transactional batch of `records` records to `payments-0`: the partition, the
/// coordinator, and the producer id and epoch.
fn payments_txn_with_a_batch(
    net: &mut MiniNet,
    txn_id: &str,
    records: usize,
) -> (TopicPartition, BrokerId, ProducerId, ProducerEpoch) {
    create_topic(net, "payments", 1, 3, &[]);
    let tp = TopicPartition::new("payments", 0);
    let coord = find_txn_coordinator(net, txn_id);
    let (pid, epoch) = init_txn(net, coord, txn_id);
    txn_produce(net, coord, txn_id, pid, epoch, &tp, 0, records);
    (tp, coord, pid, epoch)
}

#[test]
fn transactions_commit_and_abort_through_the_coordinator_and_markers() {
    let mut net = cluster(3);
    let (tp, coord, pid, epoch) = payments_txn_with_a_batch(&mut net, "tx-1", 2);
    let leader = leader_of(&net, &tp);
    let lso = |net: &MiniNet| {
        net.broker(NodeId::broker(C, leader))
            .partition(&tp)
            .unwrap()
            .log
            .last_stable_offset()
    };
    assert_eq!(lso(&net), Offset(0), "an open transaction holds the LSO");
    assert_eq!(
        end_txn(&mut net, coord, "tx-1", pid, epoch, true),
        ErrorCode::None
    );
    net.run_for_ms(2_000);
    assert_eq!(
        lso(&net),
        Offset(3),
        "COMMIT marker at 2 replicated: LSO = HW"
    );
    // A second transaction is aborted: the txn index gets an entry.
    txn_produce(&mut net, coord, "tx-1", pid, epoch, &tp, 2, 1);
    assert_eq!(
        end_txn(&mut net, coord, "tx-1", pid, epoch, false),
        ErrorCode::None
    );
    net.run_for_ms(2_000);
    let log = &net
        .broker(NodeId::broker(C, leader))
        .partition(&tp)
        .unwrap()
        .log;
    assert_eq!(log.last_stable_offset(), Offset(5));
    assert_eq!(log.txn_index().all_aborted_txns().len(), 1);
}

#[test]
fn a_new_producer_instance_fences_the_old_one_and_aborts_its_open_transaction() {
    let mut net = cluster(3);
    let (tp, coord, pid, epoch) = payments_txn_with_a_batch(&mut net, "tx-f", 2);
    // A second instance with the same transactional id: epoch bump, the open txn is aborted.
    let (pid2, epoch2) = init_txn(&mut net, coord, "tx-f");
    assert_eq!(pid2, pid);
    assert!(epoch2 > epoch, "epoch bumped: {epoch:?} -> {epoch2:?}");
    net.run_for_ms(2_000);
    let leader = leader_of(&net, &tp);
    let log = &net
        .broker(NodeId::broker(C, leader))
        .partition(&tp)
        .unwrap()
        .log;
    assert_eq!(
        log.txn_index().all_aborted_txns().len(),
        1,
        "the zombie's transaction was aborted"
    );
    assert_eq!(log.last_stable_offset(), log.high_watermark());
    // The old instance is fenced.
    assert_eq!(
        end_txn(&mut net, coord, "tx-f", pid, epoch, true),
        ErrorCode::ProducerFenced
    );
}

#[test]
fn a_transaction_left_open_times_out_and_is_aborted() {
    let mut net = cluster(1);
    create_topic(&mut net, "p", 1, 1, &[]);
    let tp = TopicPartition::new("p", 0);
    let coord = find_txn_coordinator(&mut net, "tx-t");
    let (pid, epoch) = init_txn(&mut net, coord, "tx-t");
    txn_produce(&mut net, coord, "tx-t", pid, epoch, &tp, 0, 1);
    net.run_for_ms(25_000); // transaction.timeout.ms = 10 s, checked every 10 s
    let log = &net
        .broker(NodeId::broker(C, BrokerId(0)))
        .partition(&tp)
        .unwrap()
        .log;
    assert_eq!(
        log.txn_index().all_aborted_txns().len(),
        1,
        "timed out and aborted"
    );
    assert_eq!(log.last_stable_offset(), log.high_watermark());
}

/// The `TestTruncateLog` hook on `to`: its per-partition error.
fn test_truncate(net: &mut MiniNet, to: BrokerId, tp: &TopicPartition, offset: i64) -> ErrorCode {
    let req = Request::TestTruncateLog {
        partition: tp.clone(),
        offset: Offset(offset),
    };
    let id = net.request(client(), NodeId::broker(C, to), req);
    net.run_for_ms(10);
    match net.take_response(client(), id) {
        Some(Response::PartitionErrors { results }) => results[0].1,
        other => panic!("TestTruncateLog: {other:?}"),
    }
}

/// What `pick` keeps of every event the brokers emitted, in order.
fn events_where<T>(
    net: &MiniNet,
    pick: impl Fn(NodeId, &mirror_core::broker::Event) -> Option<T>,
) -> Vec<T> {
    net.events
        .iter()
        .filter_map(|(_, n, e)| pick(*n, e))
        .collect()
}

fn test_hook_truncations(net: &MiniNet) -> Vec<(NodeId, Offset, Offset)> {
    events_where(net, |n, e| match e {
        mirror_core::broker::Event::Truncated {
            from,
            to,
            cause: mirror_core::broker::output::TruncationCause::TestHook,
            ..
        } => Some((n, *from, *to)),
        _ => None,
    })
}

/// Three brokers, `orders-0` with RF 3 holding two batches of three records (0..2, 3..5),
/// and its leader.
fn orders_in_two_batches_of_three() -> (MiniNet, TopicPartition, BrokerId) {
    let mut net = cluster(3);
    create_topic(&mut net, "orders", 1, 3, &[]);
    let tp = TopicPartition::new("orders", 0);
    let leader = leader_of(&net, &tp);
    for seq in [0, 3] {
        assert!(produce(&mut net, leader, &tp, seq, 3, -1).is_some());
    }
    (net, tp, leader)
}

#[test]
fn the_truncate_log_hook_cuts_one_replica_as_unified_log_truncate_to_does() {
    // Kafka's tests call `UnifiedLog.truncateTo(offset)` on one broker's log. A follower cut
    // re-fetches from the leader; a leader cut makes the followers diverge and truncate too.
    let (mut net, tp, leader) = orders_in_two_batches_of_three();
    net.run_for_ms(1_000);
    let follower = BrokerId((leader.0 + 1) % 3);
    assert_eq!(log_of(&net, follower.0, &tp), (Offset(6), Offset(6)));
    // Refusals and no-ops.
    assert_eq!(
        test_truncate(&mut net, follower, &TopicPartition::new("nope", 0), 1),
        ErrorCode::UnknownTopicOrPartition
    );
    assert_eq!(
        test_truncate(&mut net, follower, &tp, -1),
        ErrorCode::InvalidRequest
    );
    assert_eq!(test_truncate(&mut net, follower, &tp, 6), ErrorCode::None);
    assert!(
        test_hook_truncations(&net).is_empty(),
        "at the LEO: a no-op"
    );
    // A follower: cut, then it fetches the tail again.
    assert_eq!(test_truncate(&mut net, follower, &tp, 3), ErrorCode::None);
    assert_eq!(
        test_hook_truncations(&net),
        vec![(NodeId::broker(C, follower), Offset(6), Offset(3))]
    );
    net.run_for_ms(1_000);
    assert_eq!(log_of(&net, follower.0, &tp), (Offset(6), Offset(6)));
    // The leader: its HW follows its LEO down, and the followers cut their tails.
    assert_eq!(test_truncate(&mut net, leader, &tp, 3), ErrorCode::None);
    assert_eq!(log_of(&net, leader.0, &tp), (Offset(3), Offset(3)));
    net.run_for_ms(2_000);
    for b in 0..3 {
        assert_eq!(log_of(&net, b, &tp).0, Offset(3), "broker {b}");
    }
    // To the first batch's base: every batch goes (Kafka truncates fully only below it).
    assert_eq!(test_truncate(&mut net, follower, &tp, 0), ErrorCode::None);
    assert_eq!(
        test_hook_truncations(&net).last(),
        Some(&(NodeId::broker(C, follower), Offset(3), Offset(0)))
    );
}

fn fetch_failures(net: &MiniNet, b: BrokerId) -> Vec<(Offset, String)> {
    events_where(net, |n, e| match e {
        mirror_core::broker::Event::FetchPartitionFailed {
            log_end_offset,
            reason,
            ..
        } if n == NodeId::broker(C, b) => Some((*log_end_offset, reason.clone())),
        _ => None,
    })
}

#[test]
fn a_follower_append_refused_below_its_log_end_stops_fetching_until_the_next_leader_epoch() {
    // Kafka `AbstractFetcherThread.processFetchRequest`: an exception from the append other
    // than a corrupt or invalid record (here `UnexpectedAppendOffsetException`) runs
    // `markPartitionFailed`: the partition leaves the fetcher, and only a new leader epoch
    // (`makeFollower` → `addFetcherForPartitions`) brings it back.
    let (mut net, tp, leader) = orders_in_two_batches_of_three();
    let follower = BrokerId((leader.0 + 1) % 3);
    // Cut inside its own batch 3..5: the batch goes whole and the LEO stays at 4 in a log
    // that is not empty, so the leader's batch 3..5 can never be appended.
    assert_eq!(test_truncate(&mut net, follower, &tp, 4), ErrorCode::None);
    // Past `replica.lag.time.max.ms` (30 s) and the next ISR expiration check (every 15 s):
    // a follower that stopped fetching leaves the ISR.
    net.run_for_ms(50_000);
    let failures = fetch_failures(&net, follower);
    assert_eq!(
        failures.len(),
        1,
        "marked failed once, not retried: {failures:?}"
    );
    assert_eq!(failures[0].0, Offset(4));
    assert!(
        failures[0].1.contains("below the log end offset"),
        "{failures:?}"
    );
    assert!(
        net.broker(NodeId::broker(C, follower))
            .fetch_state(&tp)
            .is_none(),
        "the partition left the fetcher"
    );
    assert_eq!(log_of(&net, follower.0, &tp).0, Offset(4));
    let isr = &net
        .controller(NodeId::controller(C))
        .image()
        .partition(&tp)
        .expect("registered")
        .isr;
    assert!(!isr.contains(&follower), "{isr:?}");
    // A new leader epoch adds it back: it fetches, and is refused (and marked) again.
    net.crash(NodeId::broker(C, leader));
    net.run_for_ms(12_000);
    let next = leader_of(&net, &tp);
    assert_ne!(next, leader);
    assert_ne!(
        next, follower,
        "the third replica, with every record, leads"
    );
    assert_eq!(fetch_failures(&net, follower).len(), 2);
}

/// The `__transaction_state` partition holding `txn_id` and its log end on `coord`.
fn txn_log_end(net: &MiniNet, coord: BrokerId, txn_id: &str) -> (TopicPartition, Offset) {
    let p = mirror_core::coordinator::coordinator_partition(txn_id, COORDINATOR_TOPIC_PARTITIONS);
    let tp = TopicPartition::new(TRANSACTION_STATE_TOPIC, p);
    let end = net
        .broker(NodeId::broker(C, coord))
        .partition(&tp)
        .expect("the coordinator leads its partition")
        .log
        .log_end_offset();
    (tp, end)
}

/// Crashes every broker of the 3 but `keep`; returns the crashed ones.
fn crash_all_but(net: &mut MiniNet, keep: BrokerId) -> Vec<i32> {
    let others: Vec<i32> = (0..3).filter(|b| BrokerId(*b) != keep).collect();
    for b in &others {
        net.crash(NodeId::broker(C, BrokerId(*b)));
    }
    others
}

/// Restarts `crashed` and, once the ISR is back, expects InitProducerId for `txn_id` to
/// succeed with an epoch above `before`'s: the coordinator's writes commit again and no
/// transaction of the id is left pending.
fn restart_and_expect_a_bump(
    net: &mut MiniNet,
    crashed: &[i32],
    coord: BrokerId,
    txn_id: &str,
    before: (ProducerId, ProducerEpoch),
) {
    for b in crashed {
        restart(net, *b, 2);
    }
    net.run_for_ms(20_000);
    let (pid, epoch) = init_txn(net, coord, txn_id);
    assert_eq!(pid, before.0);
    assert!(epoch > before.1, "the epoch was bumped, with the ISR back");
}

#[test]
fn the_transaction_log_refuses_a_write_while_its_isr_is_below_its_min_isr() {
    // Goal: the transaction coordinator appends with acks -1
    // (`TransactionLog.EnforcedRequiredAcks`) to a log whose min.insync.replicas is 2
    // (`transaction.state.log.min.isr`). With the ISR down to the leader alone, Kafka's
    // `Partition.appendRecordsToLeader` refuses the write before appending
    // (NOT_ENOUGH_REPLICAS) and the client gets COORDINATOR_NOT_AVAILABLE, which it retries:
    // nothing reaches the log, and the retry succeeds once the ISR is back.
    let mut net = cluster(3);
    let coord = find_txn_coordinator(&mut net, "tx-i");
    let (pid, epoch) = init_txn(&mut net, coord, "tx-i");
    let others = crash_all_but(&mut net, coord);
    net.run_for_ms(45_000); // past replica.lag.time.max.ms: the ISR shrinks to the leader
    let (txn_tp, end) = txn_log_end(&net, coord, "tx-i");
    assert_eq!(
        net.broker(NodeId::broker(C, coord))
            .partition(&txn_tp)
            .unwrap()
            .isr(),
        vec![coord]
    );
    // A second InitProducerId bumps the epoch: a write to the transaction log.
    let init = init_request("tx-i");
    let r = call(&mut net, coord, init);
    assert!(
        matches!(
            r,
            Response::InitProducerId {
                error: ErrorCode::CoordinatorNotAvailable,
                ..
            }
        ),
        "{r:?}"
    );
    assert_eq!(txn_log_end(&net, coord, "tx-i").1, end, "nothing appended");
    restart_and_expect_a_bump(&mut net, &others, coord, "tx-i", (pid, epoch));
}

#[test]
fn transaction_markers_are_refused_below_the_partitions_min_isr() {
    // Goal: WriteTxnMarkers appends with acks -1 (`KafkaApis.handleWriteTxnMarkersRequest`),
    // so a partition whose ISR is below its min.insync.replicas refuses the marker with
    // NOT_ENOUGH_REPLICAS before appending; the coordinator retries it.
    let mut net = cluster(3);
    create_topic(&mut net, "orders", 1, 3, &[("min.insync.replicas", "2")]);
    let tp = TopicPartition::new("orders", 0);
    let leader = leader_of(&net, &tp);
    crash_all_but(&mut net, leader);
    net.run_for_ms(45_000);
    let end = log_of(&net, leader.0, &tp).0;
    let r = call(
        &mut net,
        leader,
        Request::WriteTxnMarkers {
            markers: vec![mirror_core::protocol::messages::TxnMarker {
                producer_id: ProducerId(7),
                producer_epoch: ProducerEpoch(0),
                commit: true,
                coordinator_epoch: 0,
                partitions: vec![tp.clone()],
            }],
        },
    );
    assert!(
        matches!(r, Response::PartitionErrors { ref results }
            if results == &[(tp.clone(), ErrorCode::NotEnoughReplicas)]),
        "{r:?}"
    );
    assert_eq!(log_of(&net, leader.0, &tp).0, end, "no marker appended");
}

#[test]
fn only_the_transaction_log_sets_its_own_min_isr() {
    // Goal: Kafka creates `__transaction_state` with min.insync.replicas 2
    // (`transactionTopicConfigs`) and `__consumer_offsets` with none
    // (`groupMetadataTopicConfigs`): the offsets topic takes the cluster default, so a
    // consumer group's commits are not held back by an ISR of one under KIP-966.
    let mut net = cluster(3);
    find_txn_coordinator(&mut net, "tx-c");
    let image = net.controller(NodeId::controller(C)).image();
    assert_eq!(
        image.topic_config(TRANSACTION_STATE_TOPIC, "min.insync.replicas"),
        Some("2")
    );
    assert!(image.topic_id(CONSUMER_OFFSETS_TOPIC).is_some());
    assert_eq!(
        image.topic_config(CONSUMER_OFFSETS_TOPIC, "min.insync.replicas"),
        None
    );
}

/// Goal: the group coordinator's writes to `__consumer_offsets` are not acks=all writes.
/// Kafka's `CoordinatorPartitionWriter` (the `CoordinatorRuntime` behind the group
/// coordinator) appends with acks 1, and `Partition.appendRecordsToLeader` checks the ISR
/// against min.insync.replicas only when `requiredAcks == -1`: with the ISR down to the
/// leader alone and a min ISR of 2, a client's acks=all produce is refused
/// (NOT_ENOUGH_REPLICAS, nothing appended), while an OffsetCommit is appended to the log.
/// KIP-966 keeps the HW from passing it while the ISR is below the min ISR, so the commit
/// waits for the HW (the runtime completes a write once the HW passes it) and is answered
/// without error once the ISR is back within the write's timeout. A commit refused like the
/// produce would have appended nothing and been answered COORDINATOR_NOT_AVAILABLE at once.
#[test]
fn group_offset_writes_append_below_min_isr_as_kafkas_coordinator_writes_acks_1() {
    // The cluster default min ISR, 2, is the one `__consumer_offsets` and `orders` take.
    let mut net = cluster_with_min_isr(3, 2);
    let coord = find_coordinator(&mut net, "g-1", CoordinatorKind::Group);
    let offsets_tp = TopicPartition::new(
        CONSUMER_OFFSETS_TOPIC,
        mirror_core::coordinator::coordinator_partition("g-1", COORDINATOR_TOPIC_PARTITIONS),
    );
    create_topic(&mut net, "orders", 3, 3, &[]);
    let tp = (0..3)
        .map(|p| TopicPartition::new("orders", p))
        .find(|tp| leader_of(&net, tp) == coord)
        .expect("the group coordinator leads a partition of orders");
    let others = crash_all_but(&mut net, coord);
    net.run_for_ms(45_000); // past replica.lag.time.max.ms: the ISRs shrink to the leader
    let isr = |net: &MiniNet, tp: &TopicPartition| {
        net.broker(NodeId::broker(C, coord))
            .partition(tp)
            .unwrap()
            .isr()
    };
    assert_eq!(isr(&net, &offsets_tp), vec![coord]);
    assert_eq!(isr(&net, &tp), vec![coord]);

    // A client's acks=all produce is refused before appending.
    let end = log_of(&net, coord.0, &tp).0;
    let r = produce(&mut net, coord, &tp, 0, 1, -1);
    assert!(
        matches!(r, Some(Response::Produce { ref partitions })
            if partitions[0].error == ErrorCode::NotEnoughReplicas),
        "{r:?}"
    );
    assert_eq!(log_of(&net, coord.0, &tp).0, end, "no produce appended");

    // An OffsetCommit in the same situation is appended and waits for the HW.
    let (end, hw) = log_of(&net, coord.0, &offsets_tp);
    let committed = TopicPartition::new("orders", 0);
    let id = send_offset_commit(&mut net, coord, "g-1", &committed, Offset(42));
    net.run_for_ms(500);
    let (end_after, hw_after) = log_of(&net, coord.0, &offsets_tp);
    assert!(
        end_after > end,
        "the commit was appended: {end:?} -> {end_after:?}"
    );
    assert_eq!(hw_after, hw, "KIP-966: no HW advance below the min ISR");
    assert_eq!(
        net.take_response(client(), id),
        None,
        "the commit waits for the HW"
    );

    // With the ISR back the HW passes the commit, which completes without error: the
    // restarted followers rejoin the ISR about 2 s after the restart, well within the
    // group write's timeout (5 s, `offsets.commit.timeout.ms`).
    for b in others {
        restart_with(&mut net, broker_cfg_with_min_isr(b, 2), 2);
    }
    net.run_for_ms(20_000);
    let r = net.take_response(client(), id);
    assert_eq!(
        r,
        Some(Response::PartitionErrors {
            results: vec![(committed.clone(), ErrorCode::None)]
        })
    );
    assert_eq!(
        fetch_committed(&mut net, coord, "g-1", &committed),
        Some(Offset(42))
    );
}

#[test]
fn a_refused_completion_record_is_retried_later_without_appending() {
    // Goal: once a transaction's markers are written, the coordinator appends its
    // completion record (acks -1). With the transaction log's ISR below its min ISR that
    // append is refused before appending, and Kafka's marker channel retries it from
    // `txnLogAppendRetryQueue` on a later pass: the model retries on its coordinator retry
    // tick (an immediate retry would loop inside the refusal), appends nothing meanwhile,
    // and completes the transaction once the ISR is back.
    let mut net = cluster(3);
    let (_, coord, pid, epoch) = payments_txn_with_a_batch(&mut net, "tx-r", 1);
    // The commit's PrepareCommit record commits with all three brokers up; the other two
    // crash before the markers' writes and the completion record can reach them.
    let id = net.request(
        client(),
        NodeId::broker(C, coord),
        Request::EndTxn {
            transactional_id: "tx-r".into(),
            producer_id: pid,
            producer_epoch: epoch,
            commit: true,
        },
    );
    net.run_for_ms(5);
    let others = crash_all_but(&mut net, coord);
    net.run_for_ms(60_000); // past replica.lag.time.max.ms: both ISRs shrink to the leader
    let _ = net.take_response(client(), id);
    let (txn_tp, end) = txn_log_end(&net, coord, "tx-r");
    let isr = |net: &MiniNet| {
        net.broker(NodeId::broker(C, coord))
            .partition(&txn_tp)
            .unwrap()
            .isr()
    };
    assert_eq!(isr(&net), vec![coord]);
    net.run_for_ms(10_000);
    assert_eq!(
        txn_log_end(&net, coord, "tx-r").1,
        end,
        "refused retries append nothing"
    );
    restart_and_expect_a_bump(&mut net, &others, coord, "tx-r", (pid, epoch));
    assert!(
        txn_log_end(&net, coord, "tx-r").1 > end,
        "the completion record"
    );
}

#[test]
fn a_transaction_log_write_waits_for_the_hw_as_long_as_the_transaction_timeout() {
    // Goal: `appendTransactionToLog` gives its acks -1 write the transaction's own timeout
    // (`newMetadata.txnTimeoutMs`), not `request.timeout.ms`: with both followers silent but
    // still in the ISR (within replica.lag.time.max.ms) the HW stands still, and the client
    // is answered COORDINATOR_NOT_AVAILABLE once the 10 s transaction timeout has passed.
    let mut net = cluster(3);
    let coord = find_txn_coordinator(&mut net, "tx-w");
    init_txn(&mut net, coord, "tx-w");
    crash_all_but(&mut net, coord);
    let init = init_request("tx-w");
    let id = net.request(client(), NodeId::broker(C, coord), init);
    net.run_for_ms(9_000);
    assert_eq!(
        net.take_response(client(), id),
        None,
        "still waiting for the HW"
    );
    net.run_for_ms(3_000);
    let r = net.take_response(client(), id);
    assert!(
        matches!(
            r,
            Some(Response::InitProducerId {
                error: ErrorCode::CoordinatorNotAvailable,
                ..
            })
        ),
        "{r:?}"
    );
}

/// Goal: a group write waits for the HW as long as the group runtime's write timeout,
/// `offsets.commit.timeout.ms` (5 s), and a timeout ends only the client's wait. With both
/// followers silent but still in the ISR the HW stands still: the OffsetCommit is answered
/// COORDINATOR_NOT_AVAILABLE after 5 s and a read (at the committed offset) does not see it.
/// `CoordinatorRuntime` reverts nothing on a timeout, so once the followers are back and the
/// HW passes the record, the offset takes effect without being committed again.
#[test]
fn a_group_write_times_out_after_the_offsets_commit_timeout_and_takes_effect_once_committed() {
    let mut net = cluster(3);
    let coord = find_coordinator(&mut net, "g-t", CoordinatorKind::Group);
    let others = crash_all_but(&mut net, coord);
    let committed = TopicPartition::new("orders", 0);
    // Half a second off the coordinator's 1 s tick, which used to give timeouts up.
    net.run_for_ms(500);
    let id = send_offset_commit(&mut net, coord, "g-t", &committed, Offset(42));
    // At the write's own deadline, not on the coordinator's next 1 s tick after it.
    let (waited_ms, answer) = net
        .wait_for_response(client(), id, 10, 7_000)
        .expect("an answer within 7 s");
    assert!(
        (5_000..5_050).contains(&waited_ms),
        "answered after {waited_ms} ms, not at the 5 s timeout"
    );
    assert_eq!(
        answer,
        Response::PartitionErrors {
            results: vec![(committed.clone(), ErrorCode::CoordinatorNotAvailable)]
        }
    );
    let fetch = |net: &mut MiniNet| fetch_committed(net, coord, "g-t", &committed);
    assert_eq!(fetch(&mut net), None, "not committed");
    for b in others {
        restart(&mut net, b, 2);
    }
    net.run_for_ms(20_000);
    assert_eq!(fetch(&mut net), Some(Offset(42)), "committed by the HW");
}

/// Sends an OffsetCommit of `offset` for `tp` in `group` (no member) to `coord`.
fn send_offset_commit(
    net: &mut MiniNet,
    coord: BrokerId,
    group: &str,
    tp: &TopicPartition,
    offset: Offset,
) -> CorrelationId {
    net.request(
        client(),
        NodeId::broker(C, coord),
        Request::OffsetCommit {
            group_id: group.into(),
            member_id: None,
            offsets: vec![(tp.clone(), offset, None)],
        },
    )
}

/// The offset `coord` answers for `tp` in `group` (OffsetFetch, expected without error).
fn fetch_committed(
    net: &mut MiniNet,
    coord: BrokerId,
    group: &str,
    tp: &TopicPartition,
) -> Option<Offset> {
    let r = call(
        net,
        coord,
        Request::OffsetFetch {
            group_id: group.into(),
            partitions: None,
        },
    );
    let Response::OffsetFetch { error, offsets } = r else {
        panic!("{r:?}")
    };
    assert_eq!(error, ErrorCode::None);
    offsets.get(tp).map(|o| o.0)
}
