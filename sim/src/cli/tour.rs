//! `cargo run --release` with no arguments: the guided tour. It runs every scenario in
//! `scenarios/` and a short chaos sweep on both kinds of worlds, with a progress line and a
//! summary table.

use std::io::IsTerminal;
use std::path::PathBuf;

use crate::chaos::{ChaosOptions, run_chaos_seed};
use crate::scenario::{RunOptions, Scenario, files_in, run_scenario};

/// `scenarios/` of the working directory, else of the source tree.
fn scenario_dir() -> PathBuf {
    let here = PathBuf::from("scenarios");
    if here.is_dir() {
        here
    } else {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios")
    }
}

fn progress(done: usize, total: usize, what: &str) {
    if std::io::stderr().is_terminal() {
        let width = 30;
        let filled = done * width / total.max(1);
        eprint!(
            "\r   [{}{}] {done}/{total} {what:<50}",
            "#".repeat(filled),
            ".".repeat(width - filled)
        );
        if done == total {
            eprintln!();
        }
    }
}

/// Prints the tour; returns the exit code (1 if any scenario missed its expectations or a
/// chaos run broke an invariant).
#[must_use]
pub fn run() -> i32 {
    println!("mirrorsim — deterministic simulation testbed for KIP-1279 cluster mirroring");
    println!();
    println!("1. The Kafka partition model (mirror-core), rule by rule");
    for line in crate::tour::partition_story() {
        println!("   {line}");
    }
    println!();
    let mut code = 0;
    let start = std::time::Instant::now();
    let mut sim = 0.0;
    let dir = scenario_dir();
    let files = files_in(&dir).unwrap_or_default();
    println!(
        "2. The scenario catalogue ({} files in {}): named failover stories with exact",
        files.len(),
        dir.display()
    );
    println!("   expected logs; design-lab files must break the invariant they name");
    println!();
    println!(
        "   {:<54} {:<24} {:<7} {:>7}  broke",
        "scenario", "design", "verdict", "sim"
    );
    for (i, f) in files.iter().enumerate() {
        progress(
            i,
            files.len(),
            &f.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        );
        let sc = match Scenario::load(f) {
            Ok(sc) => sc,
            Err(e) => {
                println!("   {e}");
                code = 1;
                continue;
            }
        };
        let o = run_scenario(&sc, &RunOptions::default());
        let secs = o.report.as_ref().map_or(0.0, |r| r.sim_seconds);
        sim += secs;
        if !o.passed() {
            code = 1;
        }
        if std::io::stderr().is_terminal() {
            eprint!("\r");
        }
        println!(
            "   {:<54} {:<24} {:<7} {secs:>6.1}s  {}",
            o.name,
            o.design,
            if o.passed() { "pass" } else { "FAIL" },
            o.violation.as_ref().map_or("-", |v| v.invariant.as_str())
        );
        if let crate::scenario::ScenarioVerdict::Fail { reason } = &o.verdict {
            println!("      {reason}");
        }
    }
    progress(files.len(), files.len(), "");
    println!();
    println!("3. A short chaos sweep: each seed draws a world, a workload and a fault schedule");
    println!("   (crashes, power loss, torn writes, isolation, packet loss, unclean elections,");
    println!(
        "   DeleteRecords; for mirror worlds also stop / pause / failback at random moments);"
    );
    println!("   invariants after every event, then a liveness phase that must converge");
    println!();
    println!(
        "   {:<8} {:<6} {:<34} {:>9} {:>8}  trace hash",
        "world", "seed", "verdict", "sim time", "events"
    );
    let runs: Vec<(bool, u64)> = (1..=6)
        .map(|s| (false, s))
        .chain((1..=6).map(|s| (true, s)))
        .collect();
    for (i, (mirror, seed)) in runs.iter().enumerate() {
        progress(i, runs.len(), "chaos");
        let opts = ChaosOptions {
            mirror: *mirror,
            ..ChaosOptions::default()
        };
        let o = run_chaos_seed(*seed, &opts);
        let (secs, events, hash) = o.report.as_ref().map_or((0.0, 0, "-".to_string()), |r| {
            (r.sim_seconds, r.events, r.trace_hash.clone())
        });
        sim += secs;
        if std::io::stderr().is_terminal() {
            eprint!("\r");
        }
        println!(
            "   {:<8} {seed:<6} {:<34} {secs:>8.1}s {events:>8}  {hash}",
            if *mirror { "mirror" } else { "single" },
            o.verdict.short()
        );
        if !o.verdict.is_pass() {
            code = 1;
        }
    }
    progress(runs.len(), runs.len(), "");
    let wall = start.elapsed().as_secs_f64();
    println!();
    println!(
        "   {sim:.0} simulated seconds in {wall:.2} s of wall time ({:.0}x real time)",
        sim / wall.max(1e-9)
    );
    println!();
    println!("More: `cargo run --release -- list`, `-- run scenarios/<file>.toml --trace`,");
    println!("      `-- chaos --mirror --seeds 1..200`, `-- replay 7 --mirror`, `-- bench`.");
    code
}
