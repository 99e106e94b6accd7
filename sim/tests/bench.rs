//! `mirrorsim bench`: its stable lines parse and carry positive figures, and its floor world
//! replays the reference world's load exactly (as many messages on every link, as many node
//! and harness timers). Nothing here bounds wall time: the machine's speed is what bench
//! measures, not what a test may assume.

mod support;

use mirror_sim::chaos::ChaosPlan;
use mirror_sim::cli::bench::{self, floor::FloorLoad};
use mirror_sim::net::NetConfig;
use mirror_sim::world::clock::TimerOwner;

/// The `key=value` fields of a `bench ...` line that starts with `prefix`, in order.
fn fields<'a>(stdout: &'a str, prefix: &str) -> Vec<(&'a str, &'a str)> {
    let line = stdout
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` line in:\n{stdout}"));
    line[prefix.len()..]
        .split_whitespace()
        .map(|kv| kv.split_once('=').expect("key=value"))
        .collect()
}

fn positive(key: &str, value: &str) {
    let v: f64 = value
        .parse()
        .unwrap_or_else(|e| panic!("{key}={value}: {e}"));
    assert!(v > 0.0 && v.is_finite(), "{key}={value} is not positive");
}

#[test]
fn bench_prints_its_stable_lines_with_positive_figures() {
    let (code, stdout, stderr) = support::mirrorsim(&["bench", "--scales", "1"]);
    assert_eq!(code, 0, "the reference world passes:\n{stdout}\n{stderr}");
    let scale = fields(&stdout, "bench scale=1 ");
    let keys: Vec<&str> = scale.iter().map(|(k, _)| *k).collect();
    assert_eq!(
        keys,
        ["ratio", "events_per_s", "messages_per_sim_s", "peak_mib"],
        "the stable line's fields, in order"
    );
    for (k, v) in &scale {
        positive(k, v);
    }
    let entries = fields(&stdout, "bench partition_entries scale=1 ");
    assert_eq!(
        entries.iter().map(|(k, _)| *k).collect::<Vec<_>>(),
        ["per_event", "per_sim_s"]
    );
    for (k, v) in &entries {
        positive(k, v);
    }
    let floor = fields(&stdout, "bench floor ");
    assert_eq!(floor.len(), 1);
    assert_eq!(floor[0].0, "ratio");
    positive("floor ratio", floor[0].1);
    let (json_code, json_out, _) = support::mirrorsim(&["bench", "--scales", "1", "--json"]);
    assert_eq!(json_code, 0);
    let v: serde_json::Value = serde_json::from_str(json_out.trim()).expect("one JSON object");
    let s = &v["scales"][0];
    assert_eq!(s["scale"], 1);
    for key in ["ratio", "events_per_s", "messages_per_sim_s", "peak_mib"] {
        assert!(s[key].as_f64().is_some_and(|x| x > 0.0), "json {key}: {s}");
    }
    assert_eq!(
        s["messages"], s["floor"]["messages"],
        "the floor sends what the reference world sent"
    );
}

/// A short reference world: scale 1, 6 s of faults-free safety, then the liveness phase.
fn tiny_plan() -> ChaosPlan {
    let mut plan = bench::reference_plan(1);
    plan.faults.clear();
    plan.safety_ms = 6_000;
    plan.liveness_ms = 60_000;
    plan
}

#[test]
fn the_floor_world_replays_the_reference_load() {
    let m = bench::measure(1, tiny_plan()).expect("bench measures");
    assert_eq!(m.verdict, "pass");
    let floor = m.floor.as_ref().expect("a floor for a run that finished");
    assert!(m.messages() > 0);
    assert_eq!(
        floor.net.total().sent,
        m.messages(),
        "same number of messages"
    );
    let reference = m.stats.net.links.iter().map(|(l, s)| (*l, s.sent));
    let replayed = floor.net.links.iter().map(|(l, s)| (*l, s.sent));
    assert!(
        reference.eq(replayed),
        "same messages on every directed link"
    );
    let node_and_harness = |t: &mirror_sim::world::clock::TimerCounts| -> u64 {
        t.iter()
            .filter(|(o, _)| !matches!(o, TimerOwner::Network))
            .map(|(_, n)| n)
            .sum()
    };
    assert!(node_and_harness(&m.stats.timers) > 0);
    assert_eq!(
        node_and_harness(&floor.timers),
        node_and_harness(&m.stats.timers),
        "same number of node and harness timers"
    );
    let load = FloorLoad::of(
        &mirror_sim::world::RunReport {
            seed: 42,
            trace_hash: String::new(),
            sim_seconds: m.sim_seconds,
            events: m.events,
            lines: Vec::new(),
            stats: m.stats.clone(),
        },
        NetConfig::default(),
        42,
    );
    assert_eq!(load.nodes, m.stats.nodes, "same nodes");
    assert!(
        (floor.sim_seconds - m.sim_seconds).abs() < 1e-3,
        "same time"
    );
    let by_kind: u64 = m.stats.net.kinds.values().map(|s| s.sent).sum();
    assert_eq!(by_kind, m.messages(), "every message has a kind");
    positive("ratio", &m.ratio().to_string());
    positive("floor ratio", &floor.ratio().to_string());
}

#[test]
fn bench_split_scales_the_rate_and_the_partitions_apart() {
    // Scale 2 taken apart: with only the rate doubled a fetch names as many partitions per
    // event as at scale 1; with only the partitions doubled it names more. Swapping the two
    // plans, or scaling both in each, fails this.
    let (code, stdout, stderr) = support::mirrorsim(&["bench", "--scales", "1,2", "--split"]);
    assert_eq!(code, 0, "every world passes:\n{stdout}\n{stderr}");
    let per_event = |prefix: &str| -> f64 {
        let f = fields(&stdout, prefix);
        assert_eq!(
            f.iter().map(|(k, _)| *k).collect::<Vec<_>>(),
            ["cost_per_event_ratio", "partition_entries_per_event"]
        );
        positive(f[0].0, f[0].1);
        f[1].1.parse().expect("a number")
    };
    let rate = per_event("bench split scale=2 only=rate ");
    let partitions = per_event("bench split scale=2 only=partitions ");
    let base: f64 = fields(&stdout, "bench partition_entries scale=1 ")[0]
        .1
        .parse()
        .expect("a number");
    assert!(
        partitions > 1.3 * base && rate < 1.3 * base,
        "entries per event: base {base}, rate only {rate}, partitions only {partitions}"
    );
}
