//! `mirrorsim report` and `dump` on real runs: the timeline has a lane per cluster ×
//! partition, a design ablation's failing event is drawn in red, the same run renders to the
//! same bytes, and a dumped replica's segment files parse back as the broker's log with
//! indexes pointing at batch starts.

use std::collections::BTreeMap;

use bytes::Bytes;
use mirror_core::protocol::{ClusterIdx, ErrorCode, NodeId};
use mirror_core::record::{BatchBuilder, RecordBatch, SimpleRecord};
use mirror_core::types::TopicPartition;
use mirror_sim::chaos::{ChaosOptions, ChaosOutcome, ChaosPlan, Verdict, run_plan};
use mirror_sim::disk::CrashPolicy;
use mirror_sim::kafka::{ClusterSpec, KafkaWorld, KafkaWorldSpec};
use mirror_sim::net::NetConfig;
use mirror_sim::report::segments::{dump_partition, parse_index, parse_timeindex};
use mirror_sim::report::{RunSummary, Tap, Timeline, render};
use mirror_sim::world::run_seed;

/// Runs `plan` with the recorder on; returns the outcome, its timeline and its HTML.
fn report(plan: ChaosPlan, design: Option<&str>) -> (ChaosOutcome, Timeline, String) {
    let tap = Tap::recording();
    let opts = ChaosOptions {
        tap: Some(tap.clone()),
        design: design.map(str::to_string),
        ..ChaosOptions::default()
    };
    let o = run_plan(plan, &opts);
    let violation = match &o.verdict {
        Verdict::Violation(v) => Some(v),
        _ => None,
    };
    let run = o.report.as_ref().expect("the run ended normally");
    let timeline = tap.timeline(run, violation).expect("recording");
    let summary = RunSummary::from_chaos("test", design.unwrap_or("seed"), &o);
    let html = render(&timeline, &summary);
    (o, timeline, html)
}

/// The first timeline SVG (the whole run; a failing run has a zoom after it).
fn main_svg(html: &str) -> &str {
    let a = html.find("<svg").expect("svg");
    let b = html[a..].find("</svg>").expect("end") + a;
    &html[a..b]
}

#[test]
fn mirror_run_has_a_lane_per_cluster_and_partition_and_renders_deterministically() {
    let plan = ChaosPlan::mirror(1);
    let (o, timeline, html) = report(plan.clone(), None);
    assert!(o.verdict.is_pass(), "{:?}", o.verdict);
    for t in &plan.topics {
        for p in 0..t.partitions {
            for (c, name) in [(0, "src"), (1, "dst")] {
                let lane = format!("data-lane=\"{name} {}-{p}\"", t.name);
                assert_eq!(main_svg(&html).matches(&lane).count(), 1, "{lane}");
                let key = timeline
                    .lanes
                    .keys()
                    .find(|k| k.cluster == c && k.topic == t.name && k.partition == p);
                assert!(key.is_some(), "lane {name} {}-{p}", t.name);
            }
        }
    }
    let lanes = main_svg(&html).matches("<g class=\"lane\"").count();
    assert_eq!(lanes, timeline.lanes.len());
    // A band is labelled when it is wide enough; this seed's stop comes early, so its
    // widest bands may be STOPPED ones.
    assert!(
        [">MIRRORING</text>", ">STOPPED</text>", ">PREPARING</text>"]
            .iter()
            .any(|label| html.contains(label)),
        "mirror state band"
    );
    assert!(!html.contains("class=\"violation-line\""));
    let hash = &o.report.as_ref().expect("report").trace_hash;
    assert!(html.contains(hash.as_str()), "header has the trace hash");
    // Same seed, fresh run: the same bytes.
    let (_, _, again) = report(plan, None);
    assert!(
        html == again,
        "report differs between two runs of the same seed"
    );
}

#[test]
fn a_design_ablation_failure_is_highlighted_on_its_lane() {
    // seed-no-epoch-bump: the destination keeps appending in the source's epoch after a stop.
    // Take the first mirror seed that stops and trips `epoch_above_lme_after_stop`.
    let found = (1..=40).find_map(|seed| {
        let (o, t, html) = report(ChaosPlan::mirror(seed), Some("seed-no-epoch-bump"));
        matches!(o.verdict, Verdict::Violation(_)).then_some((t, html))
    });
    let (timeline, html) = found.expect("some seed in 1..=40 fails under seed-no-epoch-bump");
    let v = timeline.violation.as_ref().expect("violation");
    let lane = timeline
        .violation_lane()
        .expect("the violation names a lane");
    let lane_attr = format!(
        "data-lane=\"{} {}\"",
        timeline.cluster_name(lane.cluster),
        lane.partition_name()
    );
    let svg = main_svg(&html);
    let lane_at = svg.find(&lane_attr).expect("violating lane drawn");
    let red_at = svg.find("class=\"violation-line\"").expect("red line");
    let next_lane = svg[lane_at + 1..]
        .find("<g class=\"lane\"")
        .map_or(svg.len(), |i| i + lane_at + 1);
    assert!(
        lane_at < red_at && red_at < next_lane,
        "red line inside its lane"
    );
    assert!(html.contains(&format!("invariant {} broken", v.invariant)));
    assert!(
        html.contains("id=\"ev-violation\""),
        "verdict row in the trace table"
    );
    assert!(html.contains("Zoom: the moments before the failing event"));
}

fn batch(i: usize) -> RecordBatch {
    let recs: Vec<SimpleRecord> = (0..4)
        .map(|k| SimpleRecord::value(1_000 + (i * 4 + k) as i64, vec![b'a' + (i % 26) as u8; 250]))
        .collect();
    BatchBuilder::new().build(&recs)
}

/// A one-cluster world with 12 KB segments: 30 batches, a leader crash (a new epoch), 30
/// more; returns the leader's partition directory and the leader.
async fn small_run() -> (BTreeMap<String, Bytes>, ErrorCode) {
    let mut c = ClusterSpec::new("src", 3);
    c.tuning.segment_bytes = 12_000;
    let w = KafkaWorld::start(KafkaWorldSpec {
        clusters: vec![c],
        net: NetConfig::default(),
    });
    let c0 = ClusterIdx(0);
    let tp = TopicPartition::new("orders", 0);
    w.run_for_ms(3_000).await;
    let created = w.create_topic(c0, "orders", 1, 3, &[]).await;
    for i in 0..30 {
        w.produce_batch(c0, &tp, batch(i), -1).await;
    }
    if let Some(l) = w.leader(c0, &tp) {
        w.world.crash(NodeId::broker(c0, l), CrashPolicy::KeepAll);
        w.wait_until(30_000, |w| w.leader(c0, &tp).is_some_and(|n| n != l))
            .await;
        for i in 30..60 {
            w.produce_batch(c0, &tp, batch(i), -1).await;
        }
        w.world.restart(NodeId::broker(c0, l));
    }
    w.run_for_ms(5_000).await;
    let tap = Tap::keeping_files(c0, None, tp);
    tap.finish(&w);
    (tap.files().expect("kept").1, created)
}

#[test]
fn dumped_segments_parse_back_with_indexes_at_batch_starts() {
    let (files, created) = run_seed(5, small_run).expect("run");
    assert_eq!(created, ErrorCode::None);
    let dumped = dump_partition(&files, "orders-0").expect("dump");
    assert!(
        dumped.segments.len() >= 3,
        "12 KB segments roll: {}",
        dumped.segments.len()
    );
    let dir = std::env::temp_dir().join(format!("mirrorsim-dump-test-{}", std::process::id()));
    let part = dir.join("orders-0");
    std::fs::create_dir_all(&part).expect("mkdir");
    for (name, bytes) in dumped.files() {
        std::fs::write(part.join(name), bytes).expect("write");
    }
    let mut next: Option<i64> = None;
    let mut total = 0;
    let mut index_entries = 0;
    for s in &dumped.segments {
        let log = std::fs::read(part.join(format!("{:020}.log", s.base))).expect("log");
        let (batches, err) = RecordBatch::decode_many(Bytes::from(log.clone()));
        assert_eq!(err, None, "segment {} decodes", s.base);
        assert_eq!(batches.first().map(|b| b.base_offset().0), Some(s.base));
        let mut starts = BTreeMap::new();
        let mut pos = 0u32;
        for b in &batches {
            assert!(b.is_valid(), "CRC of batch at {}", b.base_offset());
            if let Some(n) = next {
                assert_eq!(b.base_offset().0, n, "offsets contiguous");
            }
            next = Some(b.next_offset().0);
            starts.insert(pos, b.last_offset().0);
            pos += u32::try_from(b.size_in_bytes()).expect("size");
        }
        assert_eq!(pos as usize, log.len(), "no bytes after the last batch");
        total += batches.len();
        let idx =
            parse_index(&std::fs::read(part.join(format!("{:020}.index", s.base))).expect("index"));
        for (rel, at) in &idx {
            let last = starts.get(at).expect("index entry points at a batch start");
            assert_eq!(
                i64::from(*rel) + s.base,
                *last,
                "entry offset = that batch's last offset"
            );
        }
        index_entries += idx.len();
        let ti = parse_timeindex(
            &std::fs::read(part.join(format!("{:020}.timeindex", s.base))).expect("timeindex"),
        );
        assert!(ti.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
    }
    assert_eq!(total, 60, "every produced batch is in the dump");
    assert!(
        index_entries >= 2,
        "sparse index entries written: {index_entries}"
    );
    let checkpoint = std::fs::read_to_string(part.join("leader-epoch-checkpoint")).expect("ckpt");
    let lines: Vec<&str> = checkpoint.lines().collect();
    assert_eq!(lines[0], "0", "version");
    let n: usize = lines[1].parse().expect("count");
    assert!(n >= 2, "a leader change adds an epoch: {checkpoint}");
    assert_eq!(lines.len(), 2 + n);
    let meta = std::fs::read_to_string(part.join("partition.metadata")).expect("meta");
    let id = meta.strip_prefix("version: 0\ntopic_id: ").expect("format");
    assert_eq!(id.trim_end().len(), 22, "Kafka's base64 Uuid: {meta}");
    std::fs::remove_dir_all(&dir).expect("cleanup");
}

#[test]
fn a_scenario_report_shows_each_batch_s_kind_in_the_final_logs() {
    // The stop of s03 leaves data, transactional data, COMMIT, ABORT and the KIP-1279
    // MIRROR_PID_RESET in the destination log, then the new primary's own writes: the report
    // names and colours each kind.
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios/s03_stop_with_committed_aborted_and_open_transactions.toml");
    let sc = mirror_sim::scenario::Scenario::load(&path).expect("scenario");
    let tap = Tap::recording();
    let opts = mirror_sim::scenario::RunOptions {
        tap: Some(tap.clone()),
        ..mirror_sim::scenario::RunOptions::default()
    };
    let o = mirror_sim::scenario::run_scenario(&sc, &opts);
    assert!(o.passed(), "{:?}", o.verdict);
    let run = o.report.as_ref().expect("report");
    let timeline = tap.timeline(run, o.violation.as_ref()).expect("recording");
    let lane = timeline
        .lanes
        .iter()
        .find(|(k, _)| k.cluster == 1 && k.topic == "orders" && k.partition == 0)
        .map(|(_, l)| l)
        .expect("dst orders-0 lane");
    let kinds: Vec<&str> = lane
        .final_log
        .as_ref()
        .expect("a live replica at the end")
        .runs
        .iter()
        .map(|r| r.kind.as_str())
        .collect();
    assert_eq!(
        kinds,
        ["data", "txn", "commit", "txn", "abort", "pid_reset", "data"],
        "runs of one kind and epoch merged"
    );
    let html = render(&timeline, &RunSummary::from_scenario(&o));
    assert!(html.contains("<h2>Logs at the end of the run</h2>"));
    for kind in ["data", "txn", "commit", "abort", "pid_reset"] {
        assert!(
            html.contains(&format!("<tr class=\"kind-{kind}\">")),
            "a {kind} row"
        );
    }
    assert!(html.contains("<td>16-16</td><td>"), "the PID reset at 16");
}
