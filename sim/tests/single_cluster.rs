//! Scripted single-cluster runs in the madsim world with the real brokers and controller,
//! checked after every event by the invariant checker.

use mirror_core::protocol::NodeId;
use mirror_core::protocol::{ClusterIdx, ErrorCode, Request, Response};
use mirror_core::record::{BatchBuilder, SimpleRecord};
use mirror_core::types::{BrokerId, Offset, ProducerEpoch, ProducerId, Sequence, TopicPartition};
use mirror_sim::disk::CrashPolicy;
use mirror_sim::kafka::{ClusterSpec, KafkaWorld, KafkaWorldSpec};
use mirror_sim::net::NetConfig;
use mirror_sim::world::run_seed;

const SRC: ClusterIdx = ClusterIdx(0);

fn spec(brokers: u16) -> KafkaWorldSpec {
    KafkaWorldSpec {
        clusters: vec![ClusterSpec::new("src", brokers)],
        net: NetConfig::default(),
    }
}

async fn produce(
    w: &KafkaWorld,
    tp: &TopicPartition,
    seq: i32,
    n: usize,
    acks: i16,
) -> Option<(ErrorCode, Offset)> {
    let leader = w.leader(SRC, tp)?;
    let recs: Vec<SimpleRecord> = (0..n)
        .map(|i| SimpleRecord::value(i as i64, format!("s{seq}-{i}")))
        .collect();
    let batch =
        BatchBuilder::idempotent(ProducerId(900), ProducerEpoch(0), Sequence(seq)).build(&recs);
    let req = Request::Produce {
        transactional_id: None,
        acks,
        timeout_ms: 10_000,
        partitions: vec![(tp.clone(), batch)],
    };
    // admin() sends to brokers in order; put the leader first by asking it directly
    let slot = std::sync::Arc::new(std::sync::Mutex::new(None));
    let s2 = slot.clone();
    w.add_client(SRC, move |boot| {
        Box::new(mirror_sim::kafka::oneshot::OneShot::new(
            boot.id,
            vec![leader],
            req.clone(),
            s2.clone(),
            15_000,
        ))
    });
    w.wait_until(20_000, |_| slot.lock().unwrap().is_some())
        .await;
    let r = slot.lock().unwrap().take();
    match r {
        Some(Response::Produce { partitions }) => {
            Some((partitions[0].error, partitions[0].base_offset))
        }
        _ => None,
    }
}

#[test]
fn replicated_writes_survive_a_leader_crash_and_the_checker_stays_green() {
    let out = run_seed(7, || async {
        let w = KafkaWorld::start(spec(3));
        w.run_for_ms(3_000).await;
        assert_eq!(
            w.create_topic(SRC, "orders", 1, 3, &[("min.insync.replicas", "2")])
                .await,
            ErrorCode::None
        );
        let tp = TopicPartition::new("orders", 0);
        for seq in [0, 3, 6] {
            let r = produce(&w, &tp, seq, 3, -1).await;
            assert_eq!(r.map(|x| x.0), Some(ErrorCode::None));
        }
        let first = w.leader(SRC, &tp).unwrap();
        w.world
            .crash(NodeId::broker(SRC, first), CrashPolicy::LoseAllUnflushed);
        let moved = w
            .wait_until(30_000, |w| w.leader(SRC, &tp).is_some_and(|l| l != first))
            .await;
        assert!(moved, "a new leader was elected");
        let r = produce(&w, &tp, 9, 3, -1).await;
        assert_eq!(r, Some((ErrorCode::None, Offset(9))));
        w.world.restart(NodeId::broker(SRC, first));
        let caught_up = w
            .wait_until(60_000, |w| {
                w.replica_offsets(SRC, first, &tp)
                    .is_some_and(|(leo, hw)| leo == Offset(12) && hw == Offset(12))
            })
            .await;
        assert!(
            caught_up,
            "the old leader recovered and caught up: {:?}",
            w.replica_offsets(SRC, first, &tp)
        );
        (w.finish(), w.world.report(7))
    })
    .unwrap();
    assert_eq!(out.0, None, "no invariant broke");
    assert!(out.1.events > 50);
}

#[test]
fn same_seed_same_trace_hash() {
    let run = |seed| {
        run_seed(seed, move || async move {
            let w = KafkaWorld::start(spec(3));
            w.run_for_ms(2_000).await;
            w.create_topic(SRC, "t", 2, 3, &[]).await;
            let tp = TopicPartition::new("t", 1);
            produce(&w, &tp, 0, 5, -1).await;
            w.world.crash(
                NodeId::broker(SRC, BrokerId(2)),
                CrashPolicy::KeepRandomPrefix,
            );
            w.run_for_ms(15_000).await;
            w.world.restart(NodeId::broker(SRC, BrokerId(2)));
            w.run_for_ms(15_000).await;
            w.world.trace_hash().hex()
        })
        .unwrap()
    };
    for seed in [1, 2, 3] {
        assert_eq!(run(seed), run(seed), "seed {seed} replays exactly");
    }
    assert_ne!(run(1), run(2));
}
