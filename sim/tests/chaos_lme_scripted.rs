//! The failback truncation at the first epoch above the LME, scripted (the chaos teeth test
//! finds the same ablation by seed; this is the minimal schedule, written out).
//!
//! mirror src→dst, stop (dst bumps to epoch 1 and records LME 0), dst takes new writes in
//! epoch 1, the src leader changes (src epoch 1, same number, other data) and src takes a
//! short tail, then src fails back from dst. The seed design truncates src at the start of
//! its epoch 1 and converges; without that truncation (`seed-no-lme-truncation`) src's
//! fetch with LastFetchedEpoch 1 finds dst's epoch 1 ending beyond its LEO, no divergence
//! is reported, dst's data lands on top of src's tail, and `failback_converges` fails.

use mirror_core::mirror::MirrorPartitionState as S;
use mirror_core::protocol::{ClusterIdx, ErrorCode, NodeId};
use mirror_core::record::{BatchBuilder, RecordBatch, SimpleRecord};
use mirror_core::types::{Offset, TopicPartition};
use mirror_sim::check::Violation;
use mirror_sim::disk::CrashPolicy;
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

fn leo(w: &KafkaWorld, c: ClusterIdx) -> Option<Offset> {
    let l = w.leader(c, &tp())?;
    w.replica_offsets(c, l, &tp()).map(|o| o.0)
}

async fn produce(w: &KafkaWorld, c: ClusterIdx, n: usize, tag: &str) {
    let r = w.produce_batch(c, &tp(), plain(n, tag), -1).await;
    assert_eq!(r.map(|r| r.0), Some(ErrorCode::None), "produce {tag}");
}

/// Returns the run's first violation and whether the failback converged (src MIRRORING
/// with dst's LEO).
async fn failback_after_source_leader_change(design: &str) -> (Option<Violation>, bool) {
    let w = KafkaWorld::start(spec(design));
    w.run_for_ms(3_000).await;
    assert_eq!(
        w.create_topic(SRC, "orders", 1, 3, &[]).await,
        ErrorCode::None
    );
    produce(&w, SRC, 4, "a").await;
    produce(&w, SRC, 4, "b").await;
    assert_eq!(w.create_mirror(DST, "m1", SRC).await, ErrorCode::None);
    assert_eq!(
        w.start_mirror_topics(DST, "m1", SRC, &["orders"]).await,
        ErrorCode::None
    );
    let src_leo = leo(&w, SRC);
    assert!(w.wait_until(60_000, |w| leo(w, DST) == src_leo).await);
    assert_eq!(
        w.stop_mirror_topics(DST, "m1", &["orders"]).await,
        ErrorCode::None
    );
    assert!(
        w.wait_until(60_000, |w| w.mirror_state(DST, &tp()) == Some(S::Stopped))
            .await
    );
    // The new primary outgrows the old source's coming tail.
    for i in 0..6 {
        produce(&w, DST, 5, &format!("d{i}")).await;
    }
    // The old source changes leader (epoch 1 there too) and takes a short tail.
    let old = w.leader(SRC, &tp()).expect("src leader");
    let node = NodeId::broker(SRC, old);
    assert!(w.world.crash(node, CrashPolicy::KeepAll));
    assert!(
        w.wait_until(30_000, |w| w.leader(SRC, &tp()).is_some_and(|l| l != old))
            .await
    );
    produce(&w, SRC, 2, "tail").await;
    w.world.restart(node);
    w.run_for_ms(5_000).await;
    assert_eq!(w.create_mirror(SRC, "back", DST).await, ErrorCode::None);
    assert_eq!(
        w.start_mirror_topics(SRC, "back", DST, &["orders"]).await,
        ErrorCode::None
    );
    let converged = w
        .wait_until(60_000, |w| {
            w.mirror_state(SRC, &tp()) == Some(S::Mirroring) && leo(w, SRC) == leo(w, DST)
        })
        .await;
    w.run_for_ms(5_000).await;
    (w.finish(), converged)
}

#[test]
fn seed_design_fails_back_over_a_source_leader_change() {
    let (v, converged) = run_seed(41, || failback_after_source_leader_change("seed")).unwrap();
    assert_eq!(v, None);
    assert!(
        converged,
        "the failback reached MIRRORING with identical LEOs"
    );
}

#[test]
fn no_lme_truncation_is_caught_by_one_history_per_offset() {
    // Without the LME truncation the old source keeps a tail whose offsets the new source
    // wrote other records at: the clusters hold two histories below both HWs.
    let (v, _) = run_seed(41, || {
        failback_after_source_leader_change("seed-no-lme-truncation")
    })
    .unwrap();
    assert_eq!(
        v.as_ref().map(|v| v.invariant.as_str()),
        Some("one_history_per_offset"),
        "{v:?}"
    );
}
