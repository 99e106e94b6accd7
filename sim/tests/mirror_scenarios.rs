//! KIP-1279 scripted two-cluster scenarios (spec `kip1279.md` Part A, `scenarios.md`): every
//! run checks the resulting logs offset by offset (batch boundaries, epochs, control batches,
//! log start / LSO / HW / LEO) and ends with the checker's verdict.

use mirror_core::mirror::MirrorPartitionState as S;
use mirror_core::protocol::messages::FetchPartition;
use mirror_core::protocol::{ClusterIdx, ErrorCode, NodeId, Request, Response};
use mirror_core::record::{BatchBuilder, ControlRecord, RecordBatch, SimpleRecord};
use mirror_core::replication::fetch_leader::FetchIsolation;
use mirror_core::types::{BrokerId, Offset, ProducerEpoch, ProducerId, Sequence, TopicPartition};
use mirror_sim::check::ghost::DeclaredLoss;
use mirror_sim::disk::CrashPolicy;
use mirror_sim::kafka::{ClusterSpec, KafkaWorld, KafkaWorldSpec};
use mirror_sim::net::{Direction, NetConfig, NodeSet};
use mirror_sim::world::run_seed;

const SRC: ClusterIdx = ClusterIdx(0);
const DST: ClusterIdx = ClusterIdx(1);
const TOPIC: &str = "orders";

fn spec() -> KafkaWorldSpec {
    KafkaWorldSpec {
        clusters: vec![ClusterSpec::new("src", 3), ClusterSpec::new("dst", 3)],
        net: NetConfig::default(),
    }
}

fn tp() -> TopicPartition {
    TopicPartition::new(TOPIC, 0)
}

// ------------------------------------------------------------------ requests

async fn produce_batch(
    w: &KafkaWorld,
    cluster: ClusterIdx,
    batch: RecordBatch,
) -> (ErrorCode, Offset) {
    let Some(leader) = w.leader(cluster, &tp()) else {
        return (ErrorCode::LeaderNotAvailable, Offset(-1));
    };
    let req = Request::Produce {
        transactional_id: None,
        acks: -1,
        timeout_ms: 10_000,
        partitions: vec![(tp(), batch)],
    };
    match w.request_to(cluster, leader, req).await {
        Some(Response::Produce { partitions }) => (partitions[0].error, partitions[0].base_offset),
        _ => (ErrorCode::RequestTimedOut, Offset(-1)),
    }
}

fn records(n: usize, tag: &str) -> Vec<SimpleRecord> {
    (0..n)
        .map(|i| SimpleRecord::value(i as i64, format!("{tag}-{i}")))
        .collect()
}

/// A plain (non-idempotent) batch of `n` records.
async fn produce(w: &KafkaWorld, cluster: ClusterIdx, n: usize, tag: &str) -> (ErrorCode, Offset) {
    produce_batch(w, cluster, BatchBuilder::new().build(&records(n, tag))).await
}

/// Produces `n` plain batches of `size` records and asserts each lands at the next offset.
async fn produce_ok(w: &KafkaWorld, cluster: ClusterIdx, first: i64, batches: i64, size: i64) {
    for i in 0..batches {
        let at = first + i * size;
        assert_eq!(
            produce(w, cluster, size as usize, &format!("c{}-{at}", cluster.0)).await,
            (ErrorCode::None, Offset(at)),
            "produce on cluster {} at {at}",
            cluster.0
        );
    }
}

async fn delete_mirror(w: &KafkaWorld, cluster: ClusterIdx, name: &str) -> ErrorCode {
    let req = Request::DeleteMirror {
        mirror_name: name.into(),
        state_validation_offset: None,
    };
    match w.admin(cluster, req).await {
        Some(Response::MirrorAdmin { error, .. } | Response::Error { error }) => error,
        _ => ErrorCode::RequestTimedOut,
    }
}

async fn delete_topic(w: &KafkaWorld, cluster: ClusterIdx) -> ErrorCode {
    let req = Request::DeleteTopics {
        names: vec![TOPIC.into()],
    };
    match w.admin(cluster, req).await {
        Some(Response::TopicErrors { results }) => results[0].1,
        Some(Response::Error { error }) => error,
        _ => ErrorCode::RequestTimedOut,
    }
}

/// A read_uncommitted consumer fetch from the leader: (error, HW, LSO, log start, batches).
async fn consumer_fetch(
    w: &KafkaWorld,
    cluster: ClusterIdx,
    offset: Offset,
) -> (ErrorCode, Offset, Offset, Offset, Vec<RecordBatch>) {
    let leader = w.leader(cluster, &tp()).expect("leader");
    let req = Request::Fetch {
        replica: None,
        max_wait_ms: 0,
        min_bytes: 0,
        max_bytes: 1 << 20,
        isolation: FetchIsolation::HighWatermark,
        partitions: vec![FetchPartition {
            tp: tp(),
            fetch_offset: offset,
            current_leader_epoch: None,
            last_fetched_epoch: None,
            log_start_offset: Offset(-1),
            topic_id: None,
        }],
        session: mirror_core::protocol::messages::FetchSessionMeta::SESSIONLESS,
        forgotten: Vec::new(),
    };
    match w.request_to(cluster, leader, req).await {
        Some(Response::Fetch { partitions, .. }) => {
            let p = partitions.into_iter().next().expect("one partition");
            (
                p.error,
                p.high_watermark,
                p.last_stable_offset,
                p.log_start_offset,
                p.batches,
            )
        }
        other => panic!("fetch failed: {other:?}"),
    }
}

// ------------------------------------------------------------------ log inspection

/// What a batch is, for offset-by-offset expectations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Data,
    Txn,
    Commit,
    Abort,
    PidReset,
}

/// `(base offset, last offset, partition leader epoch, kind)`.
type Row = (i64, i64, i32, Kind);

fn rows(log: &[RecordBatch]) -> Vec<Row> {
    log.iter()
        .map(|b| {
            let kind = match b.control_record() {
                Some(ControlRecord::MirrorPidReset) => Kind::PidReset,
                Some(ControlRecord::EndTxn { commit: true, .. }) => Kind::Commit,
                Some(ControlRecord::EndTxn { commit: false, .. }) => Kind::Abort,
                Some(ControlRecord::Other(t)) => panic!("unexpected control type {t}"),
                None if b.is_transactional() => Kind::Txn,
                None => Kind::Data,
            };
            (
                b.base_offset().0,
                b.last_offset().0,
                b.partition_leader_epoch().0,
                kind,
            )
        })
        .collect()
}

/// `n` plain batches of `size` records from `first`, in `epoch`.
fn data_rows(first: i64, n: i64, size: i64, epoch: i32) -> Vec<Row> {
    (0..n)
        .map(|i| {
            let b = first + i * size;
            (b, b + size - 1, epoch, Kind::Data)
        })
        .collect()
}

fn replica_log(
    w: &KafkaWorld,
    cluster: ClusterIdx,
    b: BrokerId,
    tp: &TopicPartition,
) -> Option<Vec<RecordBatch>> {
    w.with_broker(cluster, b, |br| {
        br.partition(tp).map(|p| p.log.batches().cloned().collect())
    })
    .flatten()
}

fn leader_log(w: &KafkaWorld, cluster: ClusterIdx) -> Vec<RecordBatch> {
    let l = w.leader(cluster, &tp()).expect("leader");
    replica_log(w, cluster, l, &tp()).expect("leader replica")
}

/// `(log start, LSO, HW, LEO)` of a replica.
fn bounds(w: &KafkaWorld, cluster: ClusterIdx, b: BrokerId) -> Option<(i64, i64, i64, i64)> {
    w.with_broker(cluster, b, |br| {
        br.partition(&tp()).map(|p| {
            (
                p.log.log_start_offset().0,
                p.log.last_stable_offset().0,
                p.log.high_watermark().0,
                p.log.log_end_offset().0,
            )
        })
    })
    .flatten()
}

fn leader_bounds(w: &KafkaWorld, cluster: ClusterIdx) -> (i64, i64, i64, i64) {
    let l = w.leader(cluster, &tp()).expect("leader");
    bounds(w, cluster, l).expect("leader replica")
}

/// `(epoch, start offset)` entries of the leader's epoch cache.
fn epoch_cache(w: &KafkaWorld, cluster: ClusterIdx) -> Vec<(i32, i64)> {
    let l = w.leader(cluster, &tp()).expect("leader");
    w.with_broker(cluster, l, |br| {
        br.partition(&tp())
            .unwrap()
            .log
            .epoch_cache()
            .epoch_entries()
            .iter()
            .map(|e| (e.epoch.0, e.start_offset.0))
            .collect()
    })
    .unwrap()
}

fn leader_epoch(w: &KafkaWorld, cluster: ClusterIdx) -> i32 {
    let l = w.leader(cluster, &tp()).expect("leader");
    w.with_broker(cluster, l, |br| br.partition(&tp()).unwrap().leader_epoch.0)
        .unwrap()
}

/// Every live replica of `cluster` holds exactly `log` (byte for byte) and the same LEO/HW.
fn replicas_equal(w: &KafkaWorld, cluster: ClusterIdx, log: &[RecordBatch]) -> bool {
    let leo = log.last().map_or(-1, |b| b.next_offset().0);
    w.broker_ids(cluster).into_iter().all(|b| {
        if w.world.status(NodeId::broker(cluster, b)).is_down() {
            return true;
        }
        // A broker that hosts no replica of the partition (4-broker worlds) is skipped.
        replica_log(w, cluster, b, &tp()).is_none_or(|l| l == log)
            && bounds(w, cluster, b).is_none_or(|(_, _, hw, end)| end == leo && hw == leo)
    })
}

/// The destination leader's log equals the source leader's and every replica on both sides
/// holds it, fully replicated.
fn converged(w: &KafkaWorld) -> bool {
    let (Some(_), Some(_)) = (w.leader(SRC, &tp()), w.leader(DST, &tp())) else {
        return false;
    };
    let src = leader_log(w, SRC);
    src == leader_log(w, DST) && replicas_equal(w, SRC, &src) && replicas_equal(w, DST, &src)
}

fn losses(w: &KafkaWorld, cluster: ClusterIdx) -> Vec<DeclaredLoss> {
    let prefix = format!("{}:", cluster.0);
    w.checker
        .lock()
        .unwrap()
        .ghost
        .losses
        .iter()
        .filter(|l| l.partition.starts_with(&prefix))
        // The initial PREPARING with no LME empties the (empty) log at 0: nothing is lost.
        .filter(|l| !(l.from_offset == 0 && l.batches == 0))
        .cloned()
        .collect()
}

/// Trace lines of the destination cluster's brokers about `orders-0` containing `needle`.
fn trace_with(w: &KafkaWorld, needle: &str) -> Vec<String> {
    w.world
        .trace_lines()
        .into_iter()
        .filter(|l| l.contains(needle))
        .collect()
}

/// With `DUMP` set, prints the trace lines about the mirrored partition (debugging aid).
fn dump(w: &KafkaWorld) {
    if std::env::var("DUMP").is_ok() {
        for l in w.world.trace_lines() {
            if l.contains(TOPIC) || l.contains("admin") {
                eprintln!("{l}");
            }
        }
    }
}

// ------------------------------------------------------------------ common phases

/// Creates `orders` (1 partition, RF 3) on the source with 5 batches of 4 records (offsets
/// 0..20, epoch 0), mirrors it into the destination and waits until both logs are identical.
async fn mirrored_world() -> KafkaWorld {
    mirrored_world_in(spec(), 0).await
}

/// [`mirrored_world`] in `spec`, after creating `pad` single-partition topics on the
/// destination (they shift the replica placement of later topics).
async fn mirrored_world_in(spec: KafkaWorldSpec, pad: usize) -> KafkaWorld {
    let w = KafkaWorld::start(spec);
    w.run_for_ms(3_000).await;
    for i in 0..pad {
        let name = format!("pad{i}");
        assert_eq!(w.create_topic(DST, &name, 1, 3, &[]).await, ErrorCode::None);
    }
    assert_eq!(w.create_topic(SRC, TOPIC, 1, 3, &[]).await, ErrorCode::None);
    produce_ok(&w, SRC, 0, 5, 4).await;
    assert_eq!(w.create_mirror(DST, "m1", SRC).await, ErrorCode::None);
    assert_eq!(
        w.start_mirror_topics(DST, "m1", SRC, &[TOPIC]).await,
        ErrorCode::None
    );
    let ok = w
        .wait_until(60_000, |w| {
            w.mirror_state(DST, &tp()) == Some(S::Mirroring) && converged(w)
        })
        .await;
    assert!(ok, "initial mirror: {:?}", w.mirror_state(DST, &tp()));
    assert_eq!(rows(&leader_log(&w, DST)), data_rows(0, 5, 4, 0));
    assert_eq!(leader_bounds(&w, DST), (0, 20, 20, 20));
    assert_eq!(epoch_cache(&w, DST), vec![(0, 0)], "source epochs only");
    assert!(losses(&w, DST).is_empty());
    assert_eq!(
        trace_with(&w, "aligned lme=-1 leo=0").len(),
        1,
        "no LME: the empty destination log starts over at 0"
    );
    w
}

async fn wait_state(w: &KafkaWorld, cluster: ClusterIdx, s: S, ms: u64) {
    let ok = w
        .wait_until(ms, |w| w.mirror_state(cluster, &tp()) == Some(s))
        .await;
    assert!(
        ok,
        "waiting for {s}, state {:?}",
        w.mirror_state(cluster, &tp())
    );
}

async fn stop_and_wait(w: &KafkaWorld) {
    assert_eq!(
        w.stop_mirror_topics(DST, "m1", &[TOPIC]).await,
        ErrorCode::None
    );
    wait_state(w, DST, S::Stopped, 60_000).await;
    // STOPPED means the PID reset is replicated; let every follower fetch it.
    let leo = leader_bounds(w, DST).3;
    let ok = w
        .wait_until(10_000, |w| {
            w.broker_ids(DST)
                .into_iter()
                .all(|b| bounds(w, DST, b).is_some_and(|x| x.3 == leo && x.2 == leo))
        })
        .await;
    assert!(ok, "every destination replica has the stop");
}

fn other_broker(w: &KafkaWorld, cluster: ClusterIdx, not: BrokerId) -> BrokerId {
    w.broker_ids(cluster)
        .into_iter()
        .find(|b| *b != not)
        .unwrap()
}

// ------------------------------------------------------------------ 1. pause / resume

#[test]
fn pause_resume_keeps_the_log_and_catches_up_without_truncation() {
    let out = run_seed(101, || async {
        let w = mirrored_world().await;
        assert_eq!(
            w.pause_mirror_topics(DST, "m1", &[TOPIC], true).await,
            ErrorCode::None
        );
        wait_state(&w, DST, S::Paused, 30_000).await;
        // The source keeps writing: 3 batches at 20..32.
        produce_ok(&w, SRC, 20, 3, 4).await;
        w.run_for_ms(10_000).await;
        assert_eq!(w.mirror_state(DST, &tp()), Some(S::Paused));
        assert_eq!(
            rows(&leader_log(&w, DST)),
            data_rows(0, 5, 4, 0),
            "nothing new arrives while paused"
        );
        assert_eq!(leader_bounds(&w, DST), (0, 20, 20, 20));
        assert_eq!(leader_bounds(&w, SRC), (0, 32, 32, 32));
        // Still read-only while paused (produce and DeleteRecords).
        assert_eq!(produce(&w, DST, 1, "x").await.0, ErrorCode::ReadOnlyTopic);
        assert_eq!(
            w.delete_records(DST, &tp(), Offset(4)).await,
            ErrorCode::InvalidMirrorState
        );
        assert_eq!(leader_bounds(&w, DST), (0, 20, 20, 20), "nothing changed");
        // Resume: catches up from offset 20, no truncation.
        assert_eq!(
            w.pause_mirror_topics(DST, "m1", &[TOPIC], false).await,
            ErrorCode::None
        );
        let ok = w
            .wait_until(60_000, |w| {
                w.mirror_state(DST, &tp()) == Some(S::Mirroring) && converged(w)
            })
            .await;
        assert!(ok, "caught up after resume");
        assert_eq!(rows(&leader_log(&w, DST)), data_rows(0, 8, 4, 0));
        assert_eq!(leader_bounds(&w, DST), (0, 32, 32, 32));
        assert_eq!(epoch_cache(&w, DST), vec![(0, 0)]);
        assert_eq!(produce(&w, DST, 1, "x").await.0, ErrorCode::ReadOnlyTopic);
        if std::env::var("DUMP").is_ok() {
            for l in w.world.trace_lines() {
                if l.contains("orders") || l.contains("admin") {
                    eprintln!("{l}");
                }
            }
            eprintln!("{:?}", losses(&w, DST));
        }
        assert!(
            losses(&w, DST).is_empty(),
            "no truncation on the destination"
        );
        assert_eq!(
            trace_with(&w, "! truncate").len(),
            1,
            "only the initial alignment of the empty log"
        );
        let transitions: Vec<String> = trace_with(&w, "se=")
            .into_iter()
            .filter(|l| l.contains("dst"))
            .collect();
        (w.finish(), transitions)
    })
    .unwrap();
    assert_eq!(out.0, None);
    let path: Vec<&str> = ["MIRRORING→PAUSING", "PAUSING→PAUSED", "PAUSED→MIRRORING"].to_vec();
    let mut it = out.1.iter();
    for step in path {
        assert!(
            it.any(|l| l.contains(step)),
            "transition {step} in order:\n{}",
            out.1.join("\n")
        );
    }
}

// ------------------------------------------------------------------ 2. source leader change

#[test]
fn source_leader_change_while_mirroring_is_followed_without_loss() {
    let out = run_seed(102, || async {
        let w = mirrored_world().await;
        let old = w.leader(SRC, &tp()).unwrap();
        w.world
            .crash(NodeId::broker(SRC, old), CrashPolicy::KeepAll);
        let moved = w
            .wait_until(30_000, |w| w.leader(SRC, &tp()).is_some_and(|l| l != old))
            .await;
        assert!(moved);
        let new_epoch = leader_epoch(&w, SRC);
        assert_eq!(new_epoch, 1, "a clean failover bumps the source epoch once");
        // Two batches in the new source epoch: 20..28.
        produce_ok(&w, SRC, 20, 2, 4).await;
        w.world.restart(NodeId::broker(SRC, old));
        let ok = w
            .wait_until(60_000, |w| {
                w.mirror_state(DST, &tp()) == Some(S::Mirroring) && converged(w)
            })
            .await;
        assert!(ok, "mirroring continued to identical logs");
        let mut expect = data_rows(0, 5, 4, 0);
        expect.extend(data_rows(20, 2, 4, 1));
        assert_eq!(rows(&leader_log(&w, DST)), expect);
        assert_eq!(leader_bounds(&w, DST), (0, 28, 28, 28));
        assert_eq!(
            epoch_cache(&w, DST),
            vec![(0, 0), (1, 20)],
            "the destination cache holds the source epochs"
        );
        assert!(
            leader_epoch(&w, DST) < 1,
            "the destination's own epoch is unchanged (no stop yet)"
        );
        assert!(losses(&w, DST).is_empty(), "no declared loss on dst");
        assert!(losses(&w, SRC).is_empty(), "no declared loss on src");
        assert_eq!(w.mirror_state(DST, &tp()), Some(S::Mirroring));
        w.finish()
    })
    .unwrap();
    assert_eq!(out, None);
}

// ------------------------------------------------------------------ 3. source crash, power loss

#[test]
fn source_broker_crashes_and_power_loss_on_a_follower_while_mirroring() {
    let out = run_seed(103, || async {
        let w = mirrored_world().await;
        let leader = w.leader(SRC, &tp()).unwrap();
        let follower = other_broker(&w, SRC, leader);
        // Power loss on a follower: its unflushed log is gone (no flush interval).
        w.world
            .crash(NodeId::broker(SRC, follower), CrashPolicy::LoseAllUnflushed);
        produce_ok(&w, SRC, 20, 2, 4).await;
        w.run_for_ms(2_000).await;
        w.world.restart(NodeId::broker(SRC, follower));
        let ok = w
            .wait_until(60_000, |w| {
                w.mirror_state(DST, &tp()) == Some(S::Mirroring) && converged(w)
            })
            .await;
        assert!(
            ok,
            "the follower re-fetched its lost log; the mirror kept up"
        );
        // A process crash and restart of the source leader.
        w.world
            .crash(NodeId::broker(SRC, leader), CrashPolicy::KeepAll);
        let moved = w
            .wait_until(30_000, |w| {
                w.leader(SRC, &tp()).is_some_and(|l| l != leader)
            })
            .await;
        assert!(moved);
        produce_ok(&w, SRC, 28, 1, 4).await;
        w.world.restart(NodeId::broker(SRC, leader));
        let ok = w
            .wait_until(60_000, |w| {
                w.mirror_state(DST, &tp()) == Some(S::Mirroring) && converged(w)
            })
            .await;
        assert!(ok, "identical after the leader crash and restart");
        let mut expect = data_rows(0, 7, 4, 0);
        expect.extend(data_rows(28, 1, 4, 1));
        assert_eq!(rows(&leader_log(&w, DST)), expect);
        assert_eq!(rows(&leader_log(&w, SRC)), expect);
        assert_eq!(leader_bounds(&w, DST), (0, 32, 32, 32));
        assert_eq!(epoch_cache(&w, DST), vec![(0, 0), (1, 28)]);
        assert!(losses(&w, DST).is_empty(), "no declared loss on dst");
        w.finish()
    })
    .unwrap();
    assert_eq!(out, None);
}

// ------------------------------------------------------------------ 4. destination leader change

#[test]
fn destination_leader_change_during_preparing_is_redriven_to_mirroring() {
    let out = run_seed(104, || async {
        let w = KafkaWorld::start(spec());
        w.run_for_ms(3_000).await;
        assert_eq!(w.create_topic(SRC, TOPIC, 1, 3, &[]).await, ErrorCode::None);
        produce_ok(&w, SRC, 0, 5, 4).await;
        assert_eq!(w.create_mirror(DST, "m1", SRC).await, ErrorCode::None);
        // The clusters cannot talk: PREPARING's LME lookup waits (transient).
        let cut = w.world.partition(
            NodeSet::Cluster(SRC),
            NodeSet::Cluster(DST),
            Direction::Both,
        );
        // start_mirror_topics reads the source metadata with a source client: heal for it.
        let req = Request::Metadata {
            topics: Some(vec![TOPIC.into()]),
        };
        let Some(Response::Metadata { topics, .. }) = w.admin(SRC, req).await else {
            panic!("source metadata");
        };
        let start = Request::StartMirrorTopics {
            mirror_name: "m1".into(),
            topics: vec![mirror_core::protocol::messages::MirrorTopic {
                name: TOPIC.into(),
                topic_id: topics[0].topic_id,
                num_partitions: 1,
            }],
            include_patterns: Vec::new(),
            exclude_patterns: Vec::new(),
            state_validation_offset: None,
        };
        assert!(matches!(
            w.admin(DST, start).await,
            Some(Response::MirrorAdmin {
                error: ErrorCode::None,
                ..
            })
        ));
        wait_state(&w, DST, S::Preparing, 30_000).await;
        w.run_for_ms(3_000).await;
        assert_eq!(w.mirror_state(DST, &tp()), Some(S::Preparing), "stuck");
        let first = w.leader(DST, &tp()).unwrap();
        w.world
            .crash(NodeId::broker(DST, first), CrashPolicy::KeepAll);
        let moved = w
            .wait_until(30_000, |w| w.leader(DST, &tp()).is_some_and(|l| l != first))
            .await;
        assert!(moved);
        wait_state(&w, DST, S::Preparing, 30_000).await;
        w.world.heal(cut);
        w.world.restart(NodeId::broker(DST, first));
        let ok = w
            .wait_until(60_000, |w| {
                w.mirror_state(DST, &tp()) == Some(S::Mirroring) && converged(w)
            })
            .await;
        assert!(ok, "the new leader re-drove PREPARING to MIRRORING");
        assert_eq!(rows(&leader_log(&w, DST)), data_rows(0, 5, 4, 0));
        assert_eq!(leader_bounds(&w, DST), (0, 20, 20, 20));
        assert_eq!(epoch_cache(&w, DST), vec![(0, 0)]);
        assert!(losses(&w, DST).is_empty());
        // The new leader re-read PREPARING and re-ran its action (the LME lookup and the
        // alignment), then moved to MIRRORING in its own epoch.
        let new_leader = w.leader(DST, &tp()).unwrap();
        let me = format!("dst-{} ", new_leader.0);
        let aligned = trace_with(&w, "aligned lme=-1 leo=0");
        let mirroring = trace_with(&w, "PREPARING→MIRRORING");
        (w.finish(), aligned, mirroring, me)
    })
    .unwrap();
    assert_eq!(out.0, None);
    assert!(
        out.1.iter().any(|l| l.contains(&out.3)),
        "the new leader {} re-drove the alignment: {:?}",
        out.3,
        out.1
    );
    assert_eq!(out.2.len(), 1, "{:?}", out.2);
    assert!(
        out.2[0].contains(&out.3) && out.2[0].contains("le=1"),
        "{:?}",
        out.2
    );
}

/// Crashes the destination leader `first` (the partition is STOPPING), waits until a new
/// leader drives the partition to STOPPED, restarts `first` and heals `cut`; then checks that
/// every replica holds `0..20` (source epoch 0) plus exactly one MIRROR_PID_RESET at 20.
/// Returns the reset's epoch.
async fn crash_leader_during_stopping(
    w: &KafkaWorld,
    first: BrokerId,
    cut: Option<mirror_sim::net::FaultId>,
) -> i32 {
    assert_eq!(w.mirror_state(DST, &tp()), Some(S::Stopping));
    w.world
        .crash(NodeId::broker(DST, first), CrashPolicy::KeepAll);
    if let Some(c) = cut {
        w.world.heal(c);
    }
    crash_leader_during_stopping_after_crash(w, first).await
}

/// [`crash_leader_during_stopping`] once `first` is down.
async fn crash_leader_during_stopping_after_crash(w: &KafkaWorld, first: BrokerId) -> i32 {
    let moved = w
        .wait_until(30_000, |w| w.leader(DST, &tp()).is_some_and(|l| l != first))
        .await;
    assert!(moved);
    wait_state(w, DST, S::Stopped, 60_000).await;
    w.world.restart(NodeId::broker(DST, first));
    let ok = w
        .wait_until(60_000, |w| {
            w.broker_ids(DST).into_iter().all(|b| {
                w.world.status(NodeId::broker(DST, b)).is_down()
                    || bounds(w, DST, b).is_none_or(|x| x == (0, 21, 21, 21))
            })
        })
        .await;
    assert!(ok, "every live replica has the stop");
    let log = leader_log(w, DST);
    assert!(replicas_equal(w, DST, &log));
    let r = rows(&log);
    assert_eq!(r.len(), 6, "exactly one MIRROR_PID_RESET: {r:?}");
    assert_eq!(r[..5], data_rows(0, 5, 4, 0)[..]);
    assert_eq!((r[5].0, r[5].1, r[5].3), (20, 20, Kind::PidReset));
    assert!(r[5].2 > 0, "the reset is written above the LME");
    assert!(
        leader_epoch(w, DST) >= r[5].2,
        "the leader epoch is at least the reset's"
    );
    assert_eq!(leader_bounds(w, DST), (0, 21, 21, 21));
    r[5].2
}

fn recorded_lmes(w: &KafkaWorld) -> Vec<String> {
    dump(w);
    trace_with(w, "record lme=")
}

/// The destination broker hosting the `__mirror_state` coordinator of `(m1, orders, 0)`.
fn state_coordinator(w: &KafkaWorld) -> BrokerId {
    let l = w.leader(DST, &tp()).unwrap();
    let topic_id = w
        .with_broker(DST, l, |b| b.partition(&tp()).unwrap().topic_id)
        .unwrap();
    let sp = mirror_core::mirror::mirror_state_partition(
        "m1",
        topic_id,
        0,
        mirror_core::protocol::metadata::MIRROR_STATE_TOPIC_PARTITIONS,
    );
    w.leader(
        DST,
        &TopicPartition::new(mirror_core::protocol::metadata::MIRROR_STATE_TOPIC, sp),
    )
    .unwrap()
}

/// `(data leader, coordinator, the third broker)`; the seeds are chosen so the
/// `__mirror_state` coordinator is not the data partition's leader.
fn roles(w: &KafkaWorld) -> (BrokerId, BrokerId, BrokerId) {
    let leader = w.leader(DST, &tp()).unwrap();
    let coord = state_coordinator(w);
    assert_ne!(
        leader, coord,
        "seed chosen so the coordinator is another broker"
    );
    let third = w
        .broker_ids(DST)
        .into_iter()
        .find(|b| *b != leader && *b != coord)
        .unwrap();
    (leader, coord, third)
}

/// Polls every millisecond (up to 60 s) until `cond` holds.
async fn poll_1ms(w: &KafkaWorld, cond: impl Fn(&KafkaWorld) -> bool) -> bool {
    for _ in 0..60_000 {
        if cond(w) {
            return true;
        }
        madsim::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    false
}

/// After the stop: writable above the reset, and every recorded LME is the source's epoch 0
/// at offset 20 (never the destination's own bumped epoch).
async fn after_stop_checks(w: &KafkaWorld, min_records: usize) {
    let (e, off) = produce(w, DST, 3, "after").await;
    assert_eq!((e, off), (ErrorCode::None, Offset(21)));
    let lmes = recorded_lmes(w);
    assert!(
        lmes.len() >= min_records && lmes.iter().all(|l| l.contains("lme=0 leo=20")),
        "the leaders recorded the source epoch 0 at 20: {lmes:?}"
    );
    assert!(
        losses(w, DST).iter().all(|l| l.from_offset >= 20),
        "nothing mirrored below 20 was cut: {:?}",
        losses(w, DST)
    );
}

#[test]
fn destination_leader_change_at_the_start_of_stopping() {
    let out = run_seed(105, || async {
        let w = mirrored_world().await;
        let first = w.leader(DST, &tp()).unwrap();
        assert_eq!(
            w.stop_mirror_topics(DST, "m1", &[TOPIC]).await,
            ErrorCode::None
        );
        // Crash at the first moment the leader is STOPPING (checked every millisecond):
        // the epoch bump and the follower wait are under way, nothing is recorded yet.
        let hit = poll_1ms(&w, |w| w.mirror_state(DST, &tp()) == Some(S::Stopping)).await;
        assert!(hit);
        assert!(recorded_lmes(&w).is_empty());
        assert_eq!(
            bounds(&w, DST, first),
            Some((0, 20, 20, 20)),
            "no reset yet"
        );
        let reset_epoch = crash_leader_during_stopping(&w, first, None).await;
        assert!(reset_epoch >= 2, "bumped, then a new leader: {reset_epoch}");
        after_stop_checks(&w, 1).await;
        w.finish()
    })
    .unwrap();
    assert_eq!(out, None);
}

#[test]
fn destination_leader_change_during_stopping_while_waiting_for_the_isr() {
    let out = run_seed(106, || async {
        let w = mirrored_world().await;
        // Source writes an open transaction (20..23) and the destination mirrors it: the stop
        // truncates to the LSO 20, so the followers must truncate before the leader goes on.
        let t = BatchBuilder::transactional(ProducerId(7_100), ProducerEpoch(0), Sequence(0))
            .build(&records(3, "open"));
        assert_eq!(
            produce_batch(&w, SRC, t).await,
            (ErrorCode::None, Offset(20))
        );
        assert!(w.wait_until(30_000, converged).await);
        assert_eq!(leader_bounds(&w, DST), (0, 20, 23, 23));
        // The third broker (neither leader nor `__mirror_state` coordinator) cannot reach
        // the leader: it keeps the untruncated log and stays in the ISR
        // (replica.lag.time.max.ms = 30 s), so STOPPING waits for it.
        let (first, _coord, lagging) = roles(&w);
        let cut = w.world.partition(
            NodeSet::node(NodeId::broker(DST, first)),
            NodeSet::node(NodeId::broker(DST, lagging)),
            Direction::Both,
        );
        assert_eq!(
            w.stop_mirror_topics(DST, "m1", &[TOPIC]).await,
            ErrorCode::None
        );
        let hit = poll_1ms(&w, |w| {
            w.mirror_state(DST, &tp()) == Some(S::Stopping)
                && bounds(w, DST, first).is_some_and(|b| b.3 == 20)
        })
        .await;
        assert!(hit, "STOPPING, truncated to the LSO on the leader");
        w.run_for_ms(2_000).await;
        assert_eq!(
            w.mirror_state(DST, &tp()),
            Some(S::Stopping),
            "held by the ISR wait"
        );
        assert_eq!(
            bounds(&w, DST, lagging).map(|b| b.3),
            Some(23),
            "untruncated"
        );
        assert_eq!(
            bounds(&w, DST, first).map(|b| b.3),
            Some(20),
            "no LME record and no reset before the ISR has followed"
        );
        assert!(recorded_lmes(&w).is_empty(), "LME not recorded yet");
        crash_leader_during_stopping(&w, first, Some(cut)).await;
        after_stop_checks(&w, 1).await;
        w.finish()
    })
    .unwrap();
    assert_eq!(out, None);
}

/// Seed 113 with `brokers` destination brokers: the first size whose `__mirror_state`
/// coordinator of the key hosts no replica of `orders-0` runs the scenario (`None`: the
/// placement does not fit and is skipped; placement is a hash of the names).
fn after_the_committed_reset(brokers: u16) -> Option<Option<mirror_sim::check::Violation>> {
    run_seed(113, move || async move {
        let mut sp = spec();
        sp.clusters[1] = ClusterSpec::new("dst", brokers);
        let w = mirrored_world_in(sp, 0).await;
        let first = w.leader(DST, &tp()).unwrap();
        let coord = state_coordinator(&w);
        let replicas = w
            .with_broker(DST, first, |b| b.partition(&tp()).unwrap().replicas.clone())
            .unwrap();
        if replicas.contains(&coord) {
            return None;
        }
        // The leader's STOPPED write to the coordinator is held (clogged) once the reset is
        // appended: the reset commits on every replica while the state is still STOPPING.
        // Then the leader crashes and a follower re-drives STOPPING with the committed reset
        // at its log end: it must not record its own epoch as the LME, nor write a 2nd reset.
        assert_eq!(
            w.stop_mirror_topics(DST, "m1", &[TOPIC]).await,
            ErrorCode::None
        );
        let hit = poll_1ms(&w, |w| {
            replica_log(w, DST, first, &tp()).is_some_and(|l| {
                l.last().and_then(RecordBatch::control_record)
                    == Some(ControlRecord::MirrorPidReset)
            })
        })
        .await;
        assert!(hit);
        let (l, c) = (NodeId::broker(DST, first), NodeId::broker(DST, coord));
        w.world.clog(l, c);
        let committed = w
            .wait_until(5_000, |w| {
                replicas
                    .iter()
                    .all(|b| bounds(w, DST, *b) == Some((0, 21, 21, 21)))
            })
            .await;
        assert!(committed, "the reset committed on every replica");
        assert_eq!(
            w.mirror_state(DST, &tp()),
            Some(S::Stopping),
            "STOPPED is held"
        );
        let reset_epoch = rows(&leader_log(&w, DST))[5].2;
        w.world
            .crash(NodeId::broker(DST, first), CrashPolicy::KeepAll);
        // The held STOPPED write of the dead leader reaches the coordinator now: fenced.
        w.world.unclog(l, c);
        assert_eq!(
            crash_leader_during_stopping_after_crash(&w, first).await,
            reset_epoch,
            "the committed reset was kept, not rewritten"
        );
        after_stop_checks(&w, 2).await;
        // Failback from the old source with that LME: its log is a prefix of the
        // destination's, nothing is truncated and no divergence is found.
        assert_eq!(w.create_mirror(SRC, "back", DST).await, ErrorCode::None);
        assert_eq!(
            w.start_mirror_topics(SRC, "back", DST, &[TOPIC]).await,
            ErrorCode::None
        );
        let ok = w
            .wait_until(60_000, |w| {
                w.mirror_state(SRC, &tp()) == Some(S::Mirroring) && converged(w)
            })
            .await;
        assert!(ok, "failback converged");
        assert!(trace_with(&w, "mirror diverged").is_empty());
        assert!(losses(&w, SRC).is_empty(), "{:?}", losses(&w, SRC));
        Some(w.finish())
    })
    .unwrap()
}

#[test]
fn destination_leader_change_during_stopping_after_the_pid_reset_committed() {
    let verdict = (4..=7)
        .find_map(after_the_committed_reset)
        .expect("some placement puts the coordinator outside the replica set");
    assert_eq!(verdict, None);
}

// ------------------------------------------------------------------ 5. open transaction at stop

#[test]
fn stop_with_an_open_source_transaction_truncates_to_the_lso() {
    let out = run_seed(107, || async {
        let w = KafkaWorld::start(spec());
        w.run_for_ms(3_000).await;
        assert_eq!(w.create_topic(SRC, TOPIC, 1, 3, &[]).await, ErrorCode::None);
        produce_ok(&w, SRC, 0, 2, 4).await; // 0..8
        // A committed transaction: 8..11 data, COMMIT at 11.
        let (pid_c, pid_o) = (ProducerId(7_000), ProducerId(7_001));
        let t1 = BatchBuilder::transactional(pid_c, ProducerEpoch(0), Sequence(0))
            .build(&records(3, "committed"));
        assert_eq!(
            produce_batch(&w, SRC, t1).await,
            (ErrorCode::None, Offset(8))
        );
        // The COMMIT marker at 11, as the transaction coordinator writes it.
        let leader = w.leader(SRC, &tp()).unwrap();
        let req = Request::WriteTxnMarkers {
            markers: vec![mirror_core::protocol::messages::TxnMarker {
                producer_id: pid_c,
                producer_epoch: ProducerEpoch(0),
                commit: true,
                coordinator_epoch: 0,
                partitions: vec![tp()],
            }],
        };
        let resp = w.request_to(SRC, leader, req).await;
        assert!(
            matches!(&resp, Some(Response::PartitionErrors { results }) if results[0].1 == ErrorCode::None),
            "{resp:?}"
        );
        // An open transaction: 12..15, never ended.
        let t2 = BatchBuilder::transactional(pid_o, ProducerEpoch(0), Sequence(0))
            .build(&records(3, "open"));
        assert_eq!(
            produce_batch(&w, SRC, t2).await,
            (ErrorCode::None, Offset(12))
        );
        // Plain records after it: 15..19.
        produce_ok(&w, SRC, 15, 1, 4).await;
        assert_eq!(
            leader_bounds(&w, SRC),
            (0, 12, 19, 19),
            "source LSO at the first open txn"
        );
        assert_eq!(w.create_mirror(DST, "m1", SRC).await, ErrorCode::None);
        assert_eq!(
            w.start_mirror_topics(DST, "m1", SRC, &[TOPIC]).await,
            ErrorCode::None
        );
        let ok = w
            .wait_until(60_000, |w| {
                w.mirror_state(DST, &tp()) == Some(S::Mirroring) && converged(w)
            })
            .await;
        assert!(ok);
        let mut expect = data_rows(0, 2, 4, 0);
        expect.push((8, 10, 0, Kind::Txn));
        expect.push((11, 11, 0, Kind::Commit));
        expect.push((12, 14, 0, Kind::Txn));
        expect.extend(data_rows(15, 1, 4, 0));
        assert_eq!(rows(&leader_log(&w, DST)), expect);
        assert_eq!(
            leader_bounds(&w, DST),
            (0, 12, 19, 19),
            "the destination rebuilt the producer state: same LSO"
        );
        stop_and_wait(&w).await;
        // Truncated to the LSO (12): the open transaction (undecided at the stop) and the
        // plain batch above it are cut; the committed one stays; the reset is right after.
        let log = leader_log(&w, DST);
        let r = rows(&log);
        assert_eq!(r[..4], expect[..4]);
        assert_eq!(r.len(), 5, "{r:?}");
        assert_eq!((r[4].0, r[4].1, r[4].3), (12, 12, Kind::PidReset));
        assert!(r[4].2 > 0, "the reset carries the bumped epoch");
        assert_eq!(
            leader_bounds(&w, DST),
            (0, 13, 13, 13),
            "LSO == HW == LEO: nothing hanging"
        );
        assert!(replicas_equal(&w, DST, &log));
        for b in w.broker_ids(DST) {
            assert_eq!(bounds(&w, DST, b), Some((0, 13, 13, 13)), "replica {b}");
        }
        let l = losses(&w, DST);
        assert!(
            l.iter()
                .any(|x| x.from_offset == 12 && x.cause == "mirror_truncation"),
            "the LSO truncation is a declared loss from 12: {l:?}"
        );
        assert!(l.iter().all(|x| x.from_offset >= 12), "{l:?}");
        // Read_committed consumers are not blocked; a new write lands after the reset.
        let (e, off) = produce(&w, DST, 2, "new").await;
        assert_eq!((e, off), (ErrorCode::None, Offset(13)));
        assert_eq!(leader_bounds(&w, DST), (0, 15, 15, 15));
        let (err, hw, lso, start, batches) = consumer_fetch(&w, DST, Offset(0)).await;
        assert_eq!(
            (err, hw, lso, start),
            (ErrorCode::None, Offset(15), Offset(15), Offset(0))
        );
        assert_eq!(batches.len(), 6);
        // The open transaction's producer id can start over on the destination: sequence 0
        // is appended (the reset expired the mirrored entry), not deduplicated or refused.
        let again = BatchBuilder::idempotent(pid_o, ProducerEpoch(0), Sequence(0))
            .build(&records(3, "again"));
        assert_eq!(
            produce_batch(&w, DST, again).await,
            (ErrorCode::None, Offset(15))
        );
        w.finish()
    })
    .unwrap();
    assert_eq!(out, None);
}

// ------------------------------------------------------------------ 6. DeleteRecords overtakes

#[test]
fn source_delete_records_overtaking_a_paused_mirror_restarts_at_the_source_log_start() {
    let out = run_seed(108, || async {
        let w = mirrored_world().await;
        assert_eq!(
            w.pause_mirror_topics(DST, "m1", &[TOPIC], true).await,
            ErrorCode::None
        );
        wait_state(&w, DST, S::Paused, 30_000).await;
        produce_ok(&w, SRC, 20, 3, 4).await; // 20..32
        // Source log start 26: inside the batch 24..27, beyond the destination LEO 20.
        assert_eq!(
            w.delete_records(SRC, &tp(), Offset(26)).await,
            ErrorCode::None
        );
        assert_eq!(leader_bounds(&w, SRC), (26, 32, 32, 32));
        assert_eq!(
            w.pause_mirror_topics(DST, "m1", &[TOPIC], false).await,
            ErrorCode::None
        );
        let ok = w
            .wait_until(60_000, |w| {
                w.mirror_state(DST, &tp()) == Some(S::Mirroring)
                    && leader_bounds(w, DST).3 == 32
                    && leader_bounds(w, DST).0 == 26
                    && converged(w)
            })
            .await;
        assert!(
            ok,
            "dst {:?} src {:?}: {:?}",
            leader_bounds(&w, DST),
            leader_bounds(&w, SRC),
            rows(&leader_log(&w, DST))
        );
        assert_eq!(rows(&leader_log(&w, DST)), data_rows(24, 2, 4, 0));
        assert_eq!(leader_bounds(&w, DST), (26, 32, 32, 32), "log start equal");
        for b in w.broker_ids(DST) {
            assert_eq!(bounds(&w, DST, b).map(|x| x.0), Some(26), "replica {b}");
        }
        // Declared: the restart at the source log start 26 (OFFSET_OUT_OF_RANGE), then at
        // the base 24 of the batch holding 26 (the log start falls mid-batch).
        let l = losses(&w, DST);
        let from: Vec<i64> = l.iter().map(|x| x.from_offset).collect();
        assert_eq!(from, vec![26, 24], "{l:?}");
        assert_eq!(
            trace_with(&w, "mirror restart at source log start 26").len(),
            1
        );
        w.finish()
    })
    .unwrap();
    assert_eq!(out, None);
}

// ------------------------------------------------------------------ 7. source topic deleted

#[test]
fn source_topic_deletion_fails_the_mirror_and_stop_still_works() {
    let out = run_seed(109, || async {
        let w = mirrored_world().await;
        assert_eq!(delete_topic(&w, SRC).await, ErrorCode::None);
        wait_state(&w, DST, S::Failed, 60_000).await;
        // Readable: the whole log, HW 20.
        let (err, hw, lso, start, batches) = consumer_fetch(&w, DST, Offset(0)).await;
        assert_eq!(
            (err, hw, lso, start),
            (ErrorCode::None, Offset(20), Offset(20), Offset(0))
        );
        assert_eq!(rows(&batches), data_rows(0, 5, 4, 0));
        // Still read-only while FAILED.
        assert_eq!(produce(&w, DST, 1, "x").await.0, ErrorCode::ReadOnlyTopic);
        w.run_for_ms(5_000).await;
        assert_eq!(w.mirror_state(DST, &tp()), Some(S::Failed), "sticky");
        // Stop is allowed from FAILED.
        stop_and_wait(&w).await;
        let r = rows(&leader_log(&w, DST));
        assert_eq!(r[..5], data_rows(0, 5, 4, 0)[..]);
        assert_eq!((r[5].0, r[5].3), (20, Kind::PidReset));
        assert_eq!(r.len(), 6);
        assert_eq!(leader_bounds(&w, DST), (0, 21, 21, 21));
        assert_eq!(
            produce(&w, DST, 2, "y").await,
            (ErrorCode::None, Offset(21))
        );
        assert_eq!(delete_mirror(&w, DST, "m1").await, ErrorCode::None);
        let failed = trace_with(&w, "→FAILED");
        (w.finish(), failed)
    })
    .unwrap();
    assert_eq!(out.0, None);
    assert_eq!(out.1.len(), 1, "{:?}", out.1);
}

// ------------------------------------------------------------------ 8. DeleteMirror

#[test]
fn delete_mirror_is_refused_while_desired_removed_but_a_partition_is_still_stopping() {
    // Goal: kip1279 A.1 "DeleteMirror ... allowed only when every topic of the mirror is
    // STOPPED" and B §6.1: the desired state (`m1.removed`) is not enough; the broker checks
    // the partition states in `__mirror_state` before forwarding. A paused ISR follower holds
    // the stop's acks=all PID reset, so the partition stays STOPPING meanwhile.
    let out = run_seed(112, || async {
        let w = mirrored_world().await;
        let leader = w.leader(DST, &tp()).unwrap();
        let coord = state_coordinator(&w);
        let follower = w
            .broker_ids(DST)
            .into_iter()
            .find(|b| *b != leader && *b != coord)
            .unwrap();
        assert!(w.world.pause(NodeId::broker(DST, follower)));
        let stop = Request::StopMirrorTopics {
            mirror_name: "m1".into(),
            topics: vec![TOPIC.into()],
            patterns: Vec::new(),
            state_validation_offset: None,
        };
        assert!(matches!(
            w.request_to(DST, leader, stop).await,
            Some(Response::MirrorAdmin {
                error: ErrorCode::None,
                ..
            })
        ));
        assert!(poll_1ms(&w, |w| w.mirror_state(DST, &tp()) == Some(S::Stopping)).await);
        let desired = w.with_broker(DST, leader, |b| {
            b.image()
                .topic_config(TOPIC, "mirror.name")
                .map(str::to_string)
        });
        assert_eq!(desired.flatten().as_deref(), Some("m1.removed"));
        let delete = || Request::DeleteMirror {
            mirror_name: "m1".into(),
            state_validation_offset: None,
        };
        let refused = w.request_to(DST, leader, delete()).await;
        let Some(Response::MirrorAdmin {
            error,
            message,
            topics,
        }) = refused
        else {
            panic!("{refused:?}")
        };
        assert_eq!(error, ErrorCode::InvalidClusterMirrorStates);
        assert!(
            message.as_deref().unwrap_or_default().contains("STOPPING"),
            "{message:?}"
        );
        assert_eq!(topics.len(), 1);
        assert_eq!(
            w.mirror_state(DST, &tp()),
            Some(S::Stopping),
            "still stopping"
        );
        // The refusal changed nothing: the mirror is still there.
        let listed = w
            .request_to(
                DST,
                leader,
                Request::ListMirrors {
                    filter: mirror_core::protocol::messages::ListMirrorsFilter::default(),
                },
            )
            .await;
        assert!(
            matches!(&listed, Some(Response::ListMirrors { mirrors, .. }) if mirrors.len() == 1),
            "{listed:?}"
        );
        assert!(w.world.resume(NodeId::broker(DST, follower)));
        wait_state(&w, DST, S::Stopped, 60_000).await;
        let accepted = w.request_to(DST, leader, delete()).await;
        assert!(
            matches!(
                accepted,
                Some(Response::MirrorAdmin {
                    error: ErrorCode::None,
                    ..
                })
            ),
            "{accepted:?}"
        );
        w.finish()
    })
    .unwrap();
    assert_eq!(out, None);
}

#[test]
fn delete_mirror_is_refused_while_a_topic_mirrors_and_accepted_after_stop() {
    let out = run_seed(110, || async {
        let w = mirrored_world().await;
        assert_eq!(
            delete_mirror(&w, DST, "m1").await,
            ErrorCode::ClusterMirrorNotEmpty
        );
        assert_eq!(
            w.pause_mirror_topics(DST, "m1", &[TOPIC], true).await,
            ErrorCode::None
        );
        wait_state(&w, DST, S::Paused, 30_000).await;
        assert_eq!(
            delete_mirror(&w, DST, "m1").await,
            ErrorCode::ClusterMirrorNotEmpty,
            "paused is not stopped"
        );
        // Seed: Stop is valid from PREPARING/MIRRORING only, not from PAUSED.
        assert_eq!(
            w.stop_mirror_topics(DST, "m1", &[TOPIC]).await,
            ErrorCode::MirrorTopicAlreadyPaused
        );
        // Refusals changed nothing.
        assert_eq!(w.mirror_state(DST, &tp()), Some(S::Paused));
        assert_eq!(produce(&w, DST, 1, "x").await.0, ErrorCode::ReadOnlyTopic);
        assert_eq!(
            w.pause_mirror_topics(DST, "m1", &[TOPIC], false).await,
            ErrorCode::None
        );
        wait_state(&w, DST, S::Mirroring, 30_000).await;
        stop_and_wait(&w).await;
        assert_eq!(delete_mirror(&w, DST, "m1").await, ErrorCode::None);
        assert_eq!(
            delete_mirror(&w, DST, "m1").await,
            ErrorCode::UnknownClusterMirror,
            "gone"
        );
        // The topic is an ordinary writable topic now.
        assert_eq!(
            produce(&w, DST, 2, "y").await,
            (ErrorCode::None, Offset(21))
        );
        let r = rows(&leader_log(&w, DST));
        assert_eq!(r.len(), 7);
        assert_eq!((r[5].0, r[5].3), (20, Kind::PidReset));
        assert_eq!((r[6].0, r[6].1, r[6].3), (21, 22, Kind::Data));
        w.run_for_ms(2_000).await;
        assert_eq!(w.mirror_state(DST, &tp()), None, "no mirror run left");
        w.finish()
    })
    .unwrap();
    assert_eq!(out, None);
}

// ------------------------------------------------------------------ 9. failback

#[test]
fn failback_after_writes_on_both_sides_and_a_source_leader_change() {
    let out = run_seed(111, || async {
        let w = mirrored_world().await;
        stop_and_wait(&w).await;
        let dst_stop_epoch = rows(&leader_log(&w, DST))[5].2;
        // Destination writes after the failover: 21..25, 25..29.
        produce_ok(&w, DST, 21, 2, 4).await;
        // The old source keeps a tail: 20..24 in epoch 0, then a leader change, then
        // 24..28 in epoch 1.
        produce_ok(&w, SRC, 20, 1, 4).await;
        let old = w.leader(SRC, &tp()).unwrap();
        w.world
            .crash(NodeId::broker(SRC, old), CrashPolicy::KeepAll);
        let moved = w
            .wait_until(30_000, |w| w.leader(SRC, &tp()).is_some_and(|l| l != old))
            .await;
        assert!(moved);
        produce_ok(&w, SRC, 24, 1, 4).await;
        w.world.restart(NodeId::broker(SRC, old));
        let mut src_before = data_rows(0, 6, 4, 0);
        src_before.extend(data_rows(24, 1, 4, 1));
        assert_eq!(rows(&leader_log(&w, SRC)), src_before);
        assert_eq!(epoch_cache(&w, SRC), vec![(0, 0), (1, 24)]);
        // Failback: mirror dst -> src.
        assert_eq!(w.create_mirror(SRC, "back", DST).await, ErrorCode::None);
        assert_eq!(
            w.start_mirror_topics(SRC, "back", DST, &[TOPIC]).await,
            ErrorCode::None
        );
        let ok = w
            .wait_until(90_000, |w| {
                w.mirror_state(SRC, &tp()) == Some(S::Mirroring) && converged(w)
            })
            .await;
        assert!(
            ok,
            "src {:?} dst {:?}",
            rows(&leader_log(&w, SRC)),
            rows(&leader_log(&w, DST))
        );
        let mut expect = data_rows(0, 5, 4, 0);
        expect.push((20, 20, dst_stop_epoch, Kind::PidReset));
        expect.extend(data_rows(21, 2, 4, rows(&leader_log(&w, DST))[6].2));
        assert_eq!(rows(&leader_log(&w, SRC)), expect);
        assert_eq!(leader_bounds(&w, SRC), (0, 29, 29, 29));
        // Source epochs only on the old source now: the destination's.
        let cache = epoch_cache(&w, SRC);
        assert_eq!(cache[0], (0, 0));
        assert_eq!(cache[1], (dst_stop_epoch, 20));
        // Exactly the old source's 8-record tail (20..28) was cut: 24..28 by the LME
        // (first epoch above LME 0), 20..24 by the divergence found on the first fetch.
        let l = losses(&w, SRC);
        let from: Vec<i64> = l.iter().map(|x| x.from_offset).collect();
        assert!(from.contains(&24) && from.contains(&20), "{l:?}");
        assert!(from.iter().all(|o| *o >= 20), "nothing below 20 cut: {l:?}");
        let aligned = trace_with(&w, "aligned lme=0 leo=24");
        assert!(!aligned.is_empty(), "LME alignment cut 24..28");
        let diverged = trace_with(&w, "truncate→20");
        assert!(!diverged.is_empty(), "divergence cut 20..24");
        w.finish()
    })
    .unwrap();
    assert_eq!(out, None);
}

/// The old source's leader changes after its last write, so its epoch cache ends in an
/// empty `(1, LEO)` entry (become leader). The first epoch above LME 0 then starts at the
/// LEO: PREPARING must still `truncateTo(LEO)`, which trims that entry (Kafka
/// `UnifiedLog.truncateTo` with target >= LEO), so the failback fetch carries
/// `LastFetchedEpoch` 0 and the divergence path cuts the epoch-0 tail 20..24. Before the fix
/// the fetch carried epoch 1, unknown to the destination (OFFSET_OUT_OF_RANGE forever), and
/// the failback never converged (mirror chaos seed 12).
#[test]
fn failback_when_the_old_source_changed_leader_after_its_last_write() {
    let out = run_seed(112, || async {
        let w = mirrored_world().await;
        stop_and_wait(&w).await;
        let dst_stop_epoch = rows(&leader_log(&w, DST))[5].2;
        produce_ok(&w, DST, 21, 2, 4).await;
        // The old source keeps a tail 20..24 in epoch 0, then changes leader (epoch 1, no
        // record in it).
        produce_ok(&w, SRC, 20, 1, 4).await;
        let old = w.leader(SRC, &tp()).unwrap();
        w.world
            .crash(NodeId::broker(SRC, old), CrashPolicy::KeepAll);
        let moved = w
            .wait_until(30_000, |w| w.leader(SRC, &tp()).is_some_and(|l| l != old))
            .await;
        assert!(moved);
        w.world.restart(NodeId::broker(SRC, old));
        assert_eq!(rows(&leader_log(&w, SRC)), data_rows(0, 6, 4, 0));
        assert_eq!(epoch_cache(&w, SRC), vec![(0, 0), (1, 24)]);
        assert_eq!(w.create_mirror(SRC, "back", DST).await, ErrorCode::None);
        assert_eq!(
            w.start_mirror_topics(SRC, "back", DST, &[TOPIC]).await,
            ErrorCode::None
        );
        let ok = w
            .wait_until(90_000, |w| {
                w.mirror_state(SRC, &tp()) == Some(S::Mirroring) && converged(w)
            })
            .await;
        assert!(
            ok,
            "src {:?} dst {:?}",
            rows(&leader_log(&w, SRC)),
            rows(&leader_log(&w, DST))
        );
        let mut expect = data_rows(0, 5, 4, 0);
        expect.push((20, 20, dst_stop_epoch, Kind::PidReset));
        expect.extend(data_rows(21, 2, 4, rows(&leader_log(&w, DST))[6].2));
        assert_eq!(rows(&leader_log(&w, SRC)), expect);
        let cache = epoch_cache(&w, SRC);
        assert_eq!(cache[0], (0, 0));
        assert_eq!(cache[1], (dst_stop_epoch, 20));
        assert!(!trace_with(&w, "aligned lme=0 leo=24").is_empty());
        assert!(
            !trace_with(&w, "truncate→20").is_empty(),
            "divergence cut 20..24"
        );
        w.finish()
    })
    .unwrap();
    assert_eq!(out, None);
}

// ------------------------------------------------------------------ 10. determinism

fn faulty_mirror_run(seed: u64) -> String {
    run_seed(seed, move || async move {
        let w = mirrored_world().await;
        let leader = w.leader(SRC, &tp()).unwrap();
        w.world
            .crash(NodeId::broker(SRC, leader), CrashPolicy::KeepRandomPrefix);
        let cut = w.world.partition(
            NodeSet::Cluster(SRC),
            NodeSet::Cluster(DST),
            Direction::Both,
        );
        w.wait_until(30_000, |w| {
            w.leader(SRC, &tp()).is_some_and(|l| l != leader)
        })
        .await;
        let _ = produce(&w, SRC, 4, "x").await;
        w.run_for_ms(3_000).await;
        w.world.heal(cut);
        w.world.restart(NodeId::broker(SRC, leader));
        w.wait_until(60_000, converged).await;
        assert_eq!(w.finish(), None);
        w.world.trace_hash().hex()
    })
    .unwrap()
}

#[test]
fn same_seed_same_mirror_trace_hash_and_different_seeds_differ() {
    let a = faulty_mirror_run(7);
    assert_eq!(a, faulty_mirror_run(7), "seed 7 replays exactly");
    let b = faulty_mirror_run(8);
    assert_eq!(b, faulty_mirror_run(8), "seed 8 replays exactly");
    assert_ne!(a, b, "different seeds, different schedules");
}

// ------------------------------------------------------------------ failback: old coordinator

#[test]
fn old_source_transaction_markers_are_refused_after_failback() {
    // Goal (chaos seeds 3, 33, 106): a transaction begun on the old source while its topic
    // was writable ends after the failback made the topic a mirror destination again. The
    // old source's transaction coordinator then sends WriteTxnMarkers into the mirror
    // partition; a COORDINATOR-origin append while PREPARING/MIRRORING breaks
    // kafka-semantics §2.3 item 17 (and exposes an offset the new source never committed,
    // item 12). The broker refuses it with READ_ONLY_TOPIC and the old source's log stays the
    // new source's.
    let out = run_seed(33, || async {
        let w = mirrored_world().await;
        stop_and_wait(&w).await;
        // The old source's application keeps a transaction open: 20..23, HW 23.
        let pid = ProducerId(7_200);
        let t = BatchBuilder::transactional(pid, ProducerEpoch(0), Sequence(0))
            .build(&records(3, "late"));
        assert_eq!(produce_batch(&w, SRC, t).await, (ErrorCode::None, Offset(20)));
        // Failback.
        assert_eq!(w.create_mirror(SRC, "back", DST).await, ErrorCode::None);
        assert_eq!(
            w.start_mirror_topics(SRC, "back", DST, &[TOPIC]).await,
            ErrorCode::None
        );
        let ok = w
            .wait_until(60_000, |w| {
                w.mirror_state(SRC, &tp()) == Some(S::Mirroring)
                    && leader_log(w, SRC) == leader_log(w, DST)
            })
            .await;
        assert!(ok, "failback converged: {:?}", w.mirror_state(SRC, &tp()));
        // The old coordinator's COMMIT for that transaction.
        let leader = w.leader(SRC, &tp()).unwrap();
        let req = Request::WriteTxnMarkers {
            markers: vec![mirror_core::protocol::messages::TxnMarker {
                producer_id: pid,
                producer_epoch: ProducerEpoch(0),
                commit: true,
                coordinator_epoch: 0,
                partitions: vec![tp()],
            }],
        };
        let resp = w.request_to(SRC, leader, req).await;
        assert!(
            matches!(&resp, Some(Response::PartitionErrors { results }) if results[0].1 == ErrorCode::ReadOnlyTopic),
            "{resp:?}"
        );
        w.run_for_ms(3_000).await;
        assert_eq!(leader_log(&w, SRC), leader_log(&w, DST));
        assert!(
            leader_log(&w, SRC)
                .iter()
                .all(|b| b.producer_id() != pid),
            "neither the old tail nor a marker of the old transaction survives"
        );
        w.finish()
    })
    .unwrap();
    assert_eq!(out, None);
}

#[test]
fn start_mirror_topics_fails_for_a_topic_the_source_does_not_describe() {
    // Goal (chaos seeds 89, 154): the harness's start used to drop topics the source's
    // metadata did not describe (a restarted broker with its image not loaded yet) and send
    // an empty start, which succeeds and starts nothing; the failback then "succeeded" with
    // no mirror state on the old source. The start now reports the topic's error.
    let out = run_seed(89, || async {
        let w = KafkaWorld::start(spec());
        w.run_for_ms(3_000).await;
        assert_eq!(w.create_mirror(DST, "m1", SRC).await, ErrorCode::None);
        assert_eq!(
            w.start_mirror_topics(DST, "m1", SRC, &[TOPIC]).await,
            ErrorCode::UnknownTopicOrPartition
        );
        w.run_for_ms(3_000).await;
        assert_eq!(w.mirror_state(DST, &tp()), None);
        w.finish()
    })
    .unwrap();
    assert_eq!(out, None);
}
