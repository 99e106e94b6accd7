//! Teeth of the KIP-1279 mirror checkers against real brokers: each design ablation removes
//! one safety mechanism of the seed design (kip1279.md A.3), and the checker that guards it
//! reports the run; the seed design with the same workload stays green.

use mirror_core::mirror::MirrorPartitionState as S;
use mirror_core::protocol::{ClusterIdx, ErrorCode, Request, Response};
use mirror_core::record::{BatchBuilder, RecordBatch, SimpleRecord};
use mirror_core::types::{Offset, ProducerEpoch, ProducerId, Sequence, TopicPartition};
use mirror_sim::check::Violation;
use mirror_sim::check::mirror::FailbackReport;
use mirror_sim::kafka::{ClusterSpec, KafkaWorld, KafkaWorldSpec};
use mirror_sim::net::NetConfig;
use mirror_sim::world::run_seed;

const SRC: ClusterIdx = ClusterIdx(0);
const DST: ClusterIdx = ClusterIdx(1);

fn spec(design: &str) -> KafkaWorldSpec {
    let mut clusters = vec![ClusterSpec::new("src", 3), ClusterSpec::new("dst", 3)];
    for c in &mut clusters {
        c.tuning.mirror_design = Some(design.to_string());
    }
    KafkaWorldSpec {
        clusters,
        net: NetConfig::default(),
    }
}

fn tp() -> TopicPartition {
    TopicPartition::new("orders", 0)
}

fn plain(n: usize, tag: &str) -> RecordBatch {
    let recs: Vec<SimpleRecord> = (0..n)
        .map(|i| SimpleRecord::value(i as i64, format!("{tag}-{i}")))
        .collect();
    BatchBuilder::new().build(&recs)
}

fn idempotent(pid: i64, seq: i32, n: usize, tag: &str) -> RecordBatch {
    let recs: Vec<SimpleRecord> = (0..n)
        .map(|i| SimpleRecord::value(i as i64, format!("{tag}-{i}")))
        .collect();
    BatchBuilder::idempotent(ProducerId(pid), ProducerEpoch(0), Sequence(seq)).build(&recs)
}

fn transactional(pid: i64, n: usize, tag: &str) -> RecordBatch {
    let recs: Vec<SimpleRecord> = (0..n)
        .map(|i| SimpleRecord::value(i as i64, format!("{tag}-{i}")))
        .collect();
    BatchBuilder::transactional(ProducerId(pid), ProducerEpoch(0), Sequence(0)).build(&recs)
}

async fn produce(
    w: &KafkaWorld,
    cluster: ClusterIdx,
    batch: RecordBatch,
    txn: bool,
) -> (ErrorCode, Offset) {
    let tp = tp();
    let Some(leader) = w.leader(cluster, &tp) else {
        return (ErrorCode::LeaderNotAvailable, Offset(-1));
    };
    let req = Request::Produce {
        transactional_id: txn.then(|| "t1".to_string()),
        acks: -1,
        timeout_ms: 10_000,
        partitions: vec![(tp, batch)],
    };
    match w.request_to(cluster, leader, req).await {
        Some(Response::Produce { partitions }) => (partitions[0].error, partitions[0].base_offset),
        _ => (ErrorCode::RequestTimedOut, Offset(-1)),
    }
}

fn leo(w: &KafkaWorld, cluster: ClusterIdx) -> Option<Offset> {
    let l = w.leader(cluster, &tp())?;
    w.replica_offsets(cluster, l, &tp()).map(|o| o.0)
}

fn hw(w: &KafkaWorld, cluster: ClusterIdx) -> Option<Offset> {
    let l = w.leader(cluster, &tp())?;
    w.replica_offsets(cluster, l, &tp()).map(|o| o.1)
}

/// Creates `orders` on the source with `batches`, starts mirroring it to the destination and
/// waits until the destination holds the whole source log below its HW (a stop cuts an
/// unreplicated tail: the LSO is at most the HW).
async fn mirror_up(w: &KafkaWorld, batches: Vec<(RecordBatch, bool)>) {
    w.run_for_ms(3_000).await;
    assert_eq!(
        w.create_topic(SRC, "orders", 1, 3, &[]).await,
        ErrorCode::None
    );
    for (b, txn) in batches {
        assert_eq!(produce(w, SRC, b, txn).await.0, ErrorCode::None);
    }
    assert_eq!(w.create_mirror(DST, "m1", SRC).await, ErrorCode::None);
    assert_eq!(
        w.start_mirror_topics(DST, "m1", SRC, &["orders"]).await,
        ErrorCode::None
    );
    let src_leo = leo(w, SRC);
    let up = w
        .wait_until(60_000, |w| {
            w.mirror_state(DST, &tp()) == Some(S::Mirroring)
                && leo(w, DST) == src_leo
                && hw(w, DST) == src_leo
        })
        .await;
    assert!(
        up || w.violation().is_some(),
        "mirroring did not catch up: {:?} {:?}",
        w.mirror_state(DST, &tp()),
        leo(w, DST)
    );
}

/// Stops mirroring and waits for STOPPED (or a violation).
async fn stop(w: &KafkaWorld) {
    assert_eq!(
        w.stop_mirror_topics(DST, "m1", &["orders"]).await,
        ErrorCode::None
    );
    w.wait_until(60_000, |w| {
        w.mirror_state(DST, &tp()) == Some(S::Stopped) || w.violation().is_some()
    })
    .await;
}

fn invariant(v: Option<&Violation>) -> Option<&str> {
    v.map(|v| v.invariant.as_str())
}

/// The design-mechanism rule `name` among a run's diagnostics (they never fail a run: they
/// explain the outcome a missing mechanism leads to).
fn diagnosed<'a>(diagnostics: &'a [Violation], name: &str) -> Option<&'a Violation> {
    diagnostics.iter().find(|d| d.invariant == name)
}

/// The workload of the stop scenarios: plain records, an idempotent producer, and a
/// transaction the mirror cut leaves open (never committed on the source).
fn stop_workload() -> Vec<(RecordBatch, bool)> {
    vec![
        (plain(4, "a"), false),
        (idempotent(7000, 0, 3, "i"), false),
        (idempotent(7000, 3, 2, "j"), false),
        (transactional(8000, 2, "t"), true),
    ]
}

async fn stop_then_write(design: &str) -> (Option<Violation>, Vec<Violation>, ErrorCode) {
    let w = KafkaWorld::start(spec(design));
    mirror_up(&w, stop_workload()).await;
    stop(&w).await;
    let mut produced = ErrorCode::RequestTimedOut;
    if w.violation().is_none() {
        produced = produce(&w, DST, plain(3, "c"), false).await.0;
        w.run_for_ms(2_000).await;
    }
    (w.finish(), w.diagnostics(), produced)
}

#[test]
fn seed_design_stops_cleanly_with_idempotent_and_open_transactional_producers() {
    // Control: the checkers accept the full seed stop (epoch bump, LSO truncation, LME,
    // PID reset) on the workload the ablations below break.
    let (v, d, produced) = run_seed(31, || stop_then_write("seed")).unwrap();
    assert_eq!(v, None, "no invariant broke");
    assert!(d.is_empty(), "no mechanism rule broke: {d:?}");
    assert_eq!(produced, ErrorCode::None, "writable after STOPPED");
}

#[test]
fn no_pid_reset_is_caught_by_pid_reset_after_stop() {
    let (_, d, _) = run_seed(31, || stop_then_write("seed-no-pid-reset")).unwrap();
    let rule = diagnosed(&d, "pid_reset_after_stop").unwrap_or_else(|| panic!("{d:?}"));
    assert!(rule.detail.contains("producer 7000"));
}

#[test]
fn no_lso_truncation_is_caught_by_no_hanging_txn_after_stop() {
    // The mechanism rule explains it; the outcome (the transaction hangs for good on the
    // new primary) decides the verdict.
    let (v, d, _) = run_seed(31, || stop_then_write("seed-no-lso-truncation")).unwrap();
    assert!(
        diagnosed(&d, "no_hanging_txn_after_stop").is_some(),
        "{d:?}"
    );
    assert_eq!(invariant(v.as_ref()), Some("lso_reaches_hw"), "{v:?}");
}

#[test]
fn no_epoch_bump_is_caught_by_epoch_above_lme_after_stop() {
    let (_, d, _) = run_seed(31, || stop_then_write("seed-no-epoch-bump")).unwrap();
    assert!(
        diagnosed(&d, "epoch_above_lme_after_stop").is_some(),
        "{d:?}"
    );
}

async fn write_while_mirroring(design: &str) -> (Option<Violation>, Vec<Violation>, ErrorCode) {
    let w = KafkaWorld::start(spec(design));
    mirror_up(&w, vec![(plain(4, "a"), false)]).await;
    let e = produce(&w, DST, plain(1, "x"), false).await.0;
    w.run_for_ms(1_000).await;
    (w.finish(), w.diagnostics(), e)
}

#[test]
fn no_read_only_is_caught_by_read_only_until_stopped() {
    let (v, d, e) = run_seed(32, || write_while_mirroring("seed")).unwrap();
    assert_eq!(v, None);
    assert!(d.is_empty(), "{d:?}");
    assert_eq!(
        e,
        ErrorCode::ReadOnlyTopic,
        "control: refused while mirroring"
    );
    let (_, d, _) = run_seed(32, || write_while_mirroring("seed-no-read-only")).unwrap();
    let rule = diagnosed(&d, "read_only_until_stopped").unwrap_or_else(|| panic!("{d:?}"));
    assert!(rule.detail.contains("MIRRORING"));
}

#[test]
fn failback_is_validated_and_counts_the_dropped_tail() {
    // start -> mirror -> stop -> write on dst -> the old source writes a tail of 2 records ->
    // failback: the old source drops exactly that tail, a declared loss.
    let (v, reports): (Option<Violation>, Vec<FailbackReport>) = run_seed(21, || async {
        let w = KafkaWorld::start(spec("seed"));
        mirror_up(&w, vec![(plain(4, "a"), false), (plain(4, "b"), false)]).await;
        stop(&w).await;
        assert_eq!(w.mirror_state(DST, &tp()), Some(S::Stopped));
        assert_eq!(
            produce(&w, DST, plain(3, "c"), false).await.0,
            ErrorCode::None
        );
        assert_eq!(
            produce(&w, SRC, plain(2, "d"), false).await.0,
            ErrorCode::None
        );
        assert_eq!(w.create_mirror(SRC, "back", DST).await, ErrorCode::None);
        assert_eq!(
            w.start_mirror_topics(SRC, "back", DST, &["orders"]).await,
            ErrorCode::None
        );
        let converged = w
            .wait_until(90_000, |w| {
                w.mirror_state(SRC, &tp()) == Some(S::Mirroring) && leo(w, SRC) == leo(w, DST)
            })
            .await;
        assert!(converged);
        w.run_for_ms(2_000).await;
        let v = w.finish();
        let reports = w.checker.lock().unwrap().mirror.failback_reports.clone();
        (v, reports)
    })
    .unwrap();
    assert_eq!(v, None);
    assert_eq!(reports.len(), 1, "{reports:?}");
    let r = &reports[0];
    assert_eq!(r.partition, "0:orders-0");
    assert_eq!(r.new_source, DST);
    assert_eq!(r.divergence_offset, 8, "the PID reset took offset 8 on dst");
    assert_eq!(r.records_dropped, 2, "the old source's 2-record tail");
    assert_eq!(r.records_truncated, 2);
    assert!(r.declared_losses >= 1 && r.declared_batches >= 1, "{r:?}");
}
