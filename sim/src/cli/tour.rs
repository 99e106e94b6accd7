//! `cargo run --release` with no arguments: the guided tour.

use crate::chaos::{ChaosOptions, run_chaos_seed};

/// Prints the tour; returns the exit code (1 if any run broke an invariant).
#[must_use]
pub fn run() -> i32 {
    println!("mirrorsim — deterministic simulation testbed for KIP-1279 cluster mirroring");
    println!();
    println!("1. The Kafka partition model (mirror-core), rule by rule");
    for line in crate::tour::partition_story() {
        println!("   {line}");
    }
    println!();
    println!("2. KIP-1279 between two simulated clusters (seed 21): mirror, fail over, fail back");
    let (lines, violation, hash) = crate::tour::mirror_story(21);
    for l in &lines {
        println!("   {l}");
    }
    println!(
        "   verdict: {}   trace hash {hash}",
        violation.as_deref().unwrap_or("all invariants held")
    );
    let mut code = i32::from(violation.is_some());
    println!();
    println!("3. A short chaos sweep (single cluster, seeds 1..=12): crashes, power loss, torn");
    println!(
        "   writes, isolation, packet loss, unclean elections, DeleteRecords; invariants after"
    );
    println!("   every event; a liveness phase at the end");
    println!();
    println!(
        "   {:<6} {:<34} {:>9} {:>8}  trace hash",
        "seed", "verdict", "sim time", "events"
    );
    let start = std::time::Instant::now();
    let mut sim = 0.0;
    for seed in 1..=12 {
        let o = run_chaos_seed(seed, &ChaosOptions::default());
        let (secs, events, hash) = o.report.as_ref().map_or((0.0, 0, "-".to_string()), |r| {
            (r.sim_seconds, r.events, r.trace_hash.clone())
        });
        sim += secs;
        println!(
            "   {seed:<6} {:<34} {secs:>8.1}s {events:>8}  {hash}",
            o.verdict.short()
        );
        if !o.verdict.is_pass() {
            code = 1;
        }
    }
    let wall = start.elapsed().as_secs_f64();
    println!();
    println!(
        "   {sim:.0} simulated seconds in {wall:.2} s of wall time ({:.0}x real time)",
        sim / wall.max(1e-9)
    );
    println!();
    println!(
        "More: `cargo run --release -- list`, `-- chaos --seeds 1..200`, `-- replay 7`, `-- bench`."
    );
    code
}
