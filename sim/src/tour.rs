//! The guided tour printed by `cargo run --release` while the simulated world is being
//! built: a scripted story through the partition model of `mirror-core`, printing what
//! Kafka's rules do at each step.

use mirror_core::log::{AppendOrigin, LogConfig, PartitionLog};
use mirror_core::record::{BatchBuilder, ControlRecord, SimpleRecord};
use mirror_core::replication::fetch_follower::truncation_offset;
use mirror_core::replication::fetch_leader::{
    FetchDecision, FetchIsolation, FetchPartitionRequest, LeaderView, handle_fetch,
};
use mirror_core::types::{BrokerId, LeaderEpoch, Offset, ProducerEpoch, ProducerId, Sequence};

fn view(log: &PartitionLog, epoch: i32) -> LeaderView<'_> {
    LeaderView {
        leader_epoch: LeaderEpoch(epoch),
        is_leader: true,
        epoch_cache: log.epoch_cache(),
        log_start_offset: log.log_start_offset(),
        log_end_offset: log.log_end_offset(),
        high_watermark: log.high_watermark(),
        last_stable_offset: log.last_stable_offset(),
    }
}

fn describe(name: &str, log: &PartitionLog) -> String {
    let cache: Vec<String> = log
        .epoch_cache()
        .epoch_entries()
        .iter()
        .map(|e| format!("({},{})", e.epoch, e.start_offset))
        .collect();
    format!(
        "  {name:<9} leo={:<3} hw={:<3} lso={:<3} epochs=[{}] producers={}",
        log.log_end_offset(),
        log.high_watermark(),
        log.last_stable_offset(),
        cache.join(" "),
        log.producer_state().active_producers().len()
    )
}

/// Runs the story and returns its lines. Every step uses the real core rules; the final
/// line states whether the follower converged to the leader byte for byte.
#[must_use]
pub fn partition_story() -> Vec<String> {
    let mut out = Vec::new();
    let recs = |n: usize| -> Vec<SimpleRecord> {
        (0..n)
            .map(|i| SimpleRecord::value(i as i64, format!("r{i}")))
            .collect()
    };
    let mut a = PartitionLog::new(LogConfig::default());
    let mut b = PartitionLog::new(LogConfig::default());
    out.push(
        "1. Broker A leads in epoch 1; an idempotent producer writes 6 records; B replicates 4."
            .into(),
    );
    for seq in [0, 2, 4] {
        let batch = BatchBuilder::idempotent(ProducerId(7), ProducerEpoch(0), Sequence(seq))
            .build(&recs(2));
        a.append_as_leader(&batch, LeaderEpoch(1), AppendOrigin::Client)
            .expect("append");
    }
    for batch in a.batches().take(2) {
        b.append_as_follower(batch, Some(LeaderEpoch(1)))
            .expect("replicate");
    }
    a.maybe_increment_high_watermark(Offset(4)).expect("hw");
    b.update_high_watermark(Offset(4));
    out.push(describe("A", &a));
    out.push(describe("B", &b));

    out.push("2. A crashes; unclean election: B leads in epoch 2 and takes 2 new records.".into());
    b.maybe_assign_epoch_start_offset(LeaderEpoch(2), b.log_end_offset())
        .expect("epoch");
    let batch = BatchBuilder::new().build(&recs(2));
    b.append_as_leader(&batch, LeaderEpoch(2), AppendOrigin::Client)
        .expect("append");
    out.push(describe("B", &b));

    out.push("3. A returns as a follower and fetches with lastFetchedEpoch=1 at offset 6.".into());
    let req = FetchPartitionRequest {
        fetch_offset: a.log_end_offset(),
        current_leader_epoch: Some(LeaderEpoch(2)),
        last_fetched_epoch: a.latest_epoch(),
        replica_id: Some(BrokerId(1)),
        isolation: FetchIsolation::LogEnd,
    };
    match handle_fetch(&view(&b, 2), &req, true) {
        FetchDecision::Diverging {
            diverging_epoch, ..
        } => {
            out.push(format!(
                "  B answers DivergingEpoch(epoch={}, endOffset={})",
                diverging_epoch.leader_epoch, diverging_epoch.offset
            ));
            let ts = truncation_offset(
                diverging_epoch,
                a.epoch_cache(),
                a.log_end_offset(),
                req.fetch_offset,
            );
            a.truncate_to(ts.offset).expect("truncate");
            out.push(format!(
                "  A truncates to {} (Kafka: AbstractFetcherThread.truncateOnFetchResponse)",
                ts.offset
            ));
        }
        other => out.push(format!("  unexpected: {other:?}")),
    }
    let from = a.log_end_offset();
    for batch in b.batches().filter(|x| x.base_offset() >= from) {
        a.append_as_follower(batch, Some(LeaderEpoch(2)))
            .expect("replicate");
    }
    out.push(describe("A", &a));
    out.push(format!(
        "  logs identical byte for byte: {}",
        a.batches().eq(b.batches())
    ));

    out.push(
        "4. KIP-1279 stop: a MIRROR_PID_RESET control batch expires all producer state.".into(),
    );
    let reset = BatchBuilder::new().build_control(ControlRecord::MirrorPidReset, 0);
    b.append_as_leader(&reset, LeaderEpoch(3), AppendOrigin::Coordinator)
        .expect("reset");
    out.push(describe("B", &b));
    out
}

/// The KIP-1279 story the tour tells: two 3-broker clusters; `src` takes writes; `dst`
/// mirrors them byte for byte; `dst` fails over (stop), takes writes of its own; `src` fails
/// back by truncating with the Last Mirrored Epoch. Returns the compact trace lines of the
/// mirrored partition, the first violation (if any) and the trace hash.
#[must_use]
pub fn mirror_story(seed: u64) -> (Vec<String>, Option<String>, String) {
    use mirror_core::protocol::{ClusterIdx, Request, Response};
    use mirror_core::types::TopicPartition;

    use crate::kafka::{ClusterSpec, KafkaWorld, KafkaWorldSpec};
    use crate::net::NetConfig;

    let res = crate::world::run_seed(seed, move || async move {
        let (src, dst) = (ClusterIdx(0), ClusterIdx(1));
        let w = KafkaWorld::start(KafkaWorldSpec {
            clusters: vec![ClusterSpec::new("src", 3), ClusterSpec::new("dst", 3)],
            net: NetConfig::default(),
        });
        let tp = TopicPartition::new("orders", 0);
        let produce = |cluster: ClusterIdx, tag: &'static str| {
            let w = w.clone();
            let tp = tp.clone();
            async move {
                let recs: Vec<SimpleRecord> = (0..4)
                    .map(|i| SimpleRecord::value(i, format!("{tag}{i}")))
                    .collect();
                let req = Request::Produce {
                    transactional_id: None,
                    acks: -1,
                    timeout_ms: 10_000,
                    partitions: vec![(tp.clone(), BatchBuilder::new().build(&recs))],
                };
                if let Some(l) = w.leader(cluster, &tp) {
                    let slot = std::sync::Arc::new(std::sync::Mutex::new(None::<Response>));
                    let s2 = slot.clone();
                    w.add_client(cluster, move |boot| {
                        Box::new(crate::kafka::oneshot::OneShot::new(
                            boot.id,
                            vec![l],
                            req.clone(),
                            s2.clone(),
                            10_000,
                        ))
                    });
                    w.wait_until(20_000, |_| slot.lock().is_ok_and(|s| s.is_some()))
                        .await;
                }
            }
        };
        w.run_for_ms(3_000).await;
        w.create_topic(src, "orders", 1, 3, &[]).await;
        for _ in 0..3 {
            produce(src, "a").await;
        }
        w.create_mirror(dst, "m1", src).await;
        w.start_mirror_topics(dst, "m1", src, &["orders"]).await;
        w.run_for_ms(5_000).await;
        w.stop_mirror_topics(dst, "m1", &["orders"]).await;
        w.run_for_ms(5_000).await;
        produce(dst, "b").await;
        produce(src, "c").await;
        w.create_mirror(src, "back", dst).await;
        w.start_mirror_topics(src, "back", dst, &["orders"]).await;
        w.run_for_ms(10_000).await;
        let v = w.finish().map(|v| v.to_string());
        let lines: Vec<String> = w
            .world
            .trace_lines()
            .into_iter()
            .filter(|l| l.contains(" orders-0 "))
            .collect();
        (lines, v, w.world.trace_hash().hex())
    });
    match res {
        Ok(r) => r,
        Err(e) => (Vec::new(), Some(format!("crash: {e}")), String::new()),
    }
}
