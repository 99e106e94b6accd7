//! `recovery_idempotent` has teeth: a recovery that cuts a torn tail from the log it rebuilds
//! but leaves the bytes in the file (the ablation `recovery-keeps-torn-tail`) is caught at the
//! restart, while the real recovery passes the same run; and chaos finds the planted bug.

use mirror_core::protocol::{ClusterIdx, ErrorCode, NodeId};
use mirror_core::record::{BatchBuilder, SimpleRecord};
use mirror_core::types::{BrokerId, TopicPartition};
use mirror_sim::chaos::{ChaosOptions, Verdict, run_chaos_seed};
use mirror_sim::check::Violation;
use mirror_sim::disk::CrashPolicy;
use mirror_sim::kafka::{ClusterSpec, KafkaWorld, KafkaWorldSpec};
use mirror_sim::net::NetConfig;
use mirror_sim::world::run_seed;

const SRC: ClusterIdx = ClusterIdx(0);

/// One broker: 3 batches, a power loss, half a batch written back over the flushed log (a
/// torn write), a restart. Returns the first violation.
fn torn_restart(keeps_torn_tail: bool) -> Option<Violation> {
    run_seed(5, move || async move {
        let mut c = ClusterSpec::new("src", 1);
        c.tuning.log_flush_interval_ms = Some(500);
        c.tuning.ablation_recovery_keeps_torn_tail = keeps_torn_tail;
        let w = KafkaWorld::start(KafkaWorldSpec {
            clusters: vec![c],
            net: NetConfig::default(),
        });
        w.run_for_ms(3_000).await;
        assert_eq!(w.create_topic(SRC, "t", 1, 1, &[]).await, ErrorCode::None);
        let tp = TopicPartition::new("t", 0);
        for i in 0..3 {
            let b = BatchBuilder::new().build(&[SimpleRecord::value(i, format!("v{i}"))]);
            let r = w.produce_batch(SRC, &tp, b, -1).await;
            assert_eq!(r.map(|x| x.0), Some(ErrorCode::None));
        }
        w.run_for_ms(1_000).await;
        let n = NodeId::broker(SRC, BrokerId(1));
        w.world.crash(n, CrashPolicy::LoseAllUnflushed);
        let next = BatchBuilder::new().build(&[SimpleRecord::value(3, "torn")]);
        let half = &next.bytes()[..next.size_in_bytes() / 2];
        w.world
            .disk(n)
            .lock()
            .unwrap()
            .append("t-0/00000000000000000000.log", half)
            .unwrap();
        w.world.restart(n);
        w.wait_until(30_000, |w| {
            w.replica_offsets(SRC, BrokerId(1), &tp).is_some()
        })
        .await;
        w.run_for_ms(1_000).await;
        w.finish()
    })
    .unwrap()
}

#[test]
fn a_recovery_that_keeps_a_torn_tail_in_the_file_is_caught_at_the_restart() {
    assert_eq!(torn_restart(false), None, "the real recovery cuts the file");
    let v = torn_restart(true).expect("the broken recovery is caught");
    assert_eq!(v.invariant, "recovery_idempotent", "{v}");
    assert!(v.detail.contains("truncate t-0/"), "{v}");
}

#[test]
fn chaos_finds_the_recovery_that_keeps_torn_tails() {
    let opts = ChaosOptions {
        ablation_recovery_keeps_torn_tail: true,
        ..ChaosOptions::default()
    };
    let found = (1..=120).find(|s| {
        matches!(
            run_chaos_seed(*s, &opts).verdict,
            Verdict::Violation(ref v) if v.invariant == "recovery_idempotent"
        )
    });
    eprintln!("recovery-keeps-torn-tail found by seed {found:?}");
    let seed = found.expect("chaos finds the planted recovery bug");
    let real = run_chaos_seed(seed, &ChaosOptions::default()).verdict;
    assert!(
        !matches!(real, Verdict::Violation(ref v) if v.invariant == "recovery_idempotent"),
        "the real recovery passes seed {seed}: {real:?}"
    );
}
