//! A sweep's memory stays flat: a few hundred chaos seeds (mirror and single-cluster,
//! interleaved) in one process, the resident set read from `/proc/self/statm` after each
//! third. Whatever a seed leaves behind (tasks outliving their runtime, traces, ghosts) grows
//! with the number of seeds; allocator warm-up does not. Before `World::shutdown` a mirror
//! seed leaked about 2.8 MiB and a single-cluster seed about 1.3 MiB, so the last two thirds
//! here would have grown by well over 100 MiB. No wall-clock limit: only memory is checked.
//!
//! Alone in its test binary, so no other test's allocations are measured.

use mirror_sim::chaos::{ChaosOptions, run_chaos_seed};
use mirror_sim::cli::memory::resident_bytes;

/// Seeds per third; each seed runs once as a mirror plan and once single-cluster.
const PER_THIRD: u64 = 40;
/// Allowed growth of the resident set between the end of the first third and the end of
/// the last one.
const BOUND_MIB: f64 = 24.0;

#[test]
fn resident_memory_stops_growing_across_a_sweep() {
    if resident_bytes().is_none() {
        eprintln!("no /proc/self/statm: skipped");
        return;
    }
    let mirror = ChaosOptions {
        mirror: true,
        ..ChaosOptions::default()
    };
    let single = ChaosOptions::default();
    let mut after = Vec::new();
    for third in 0..3 {
        let first = 5_000 + third * PER_THIRD;
        for seed in first..first + PER_THIRD {
            for opts in [&mirror, &single] {
                let o = run_chaos_seed(seed, opts);
                assert!(o.report.is_some(), "seed {seed}: {:?}", o.verdict);
            }
        }
        let rss = resident_bytes().unwrap() as f64 / (1024.0 * 1024.0);
        eprintln!(
            "after {} seeds: resident {rss:.1} MiB",
            2 * PER_THIRD * (third + 1)
        );
        after.push(rss);
    }
    let growth = after[2] - after[0];
    assert!(
        growth < BOUND_MIB,
        "resident memory grew by {growth:.1} MiB over the last {} seeds: {after:?}",
        4 * PER_THIRD
    );
}
