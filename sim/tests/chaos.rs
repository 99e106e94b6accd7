//! Seeded single-cluster chaos over a fixed seed list: every seed must pass (invariants held
//! after every event, convergence in the liveness phase), each seed replays to the same trace
//! hash, and a planted bug (leaders ignoring the ISR for the HW) must be found.

use mirror_sim::chaos::{ChaosOptions, Verdict, run_chaos_seed};

const SEEDS: std::ops::Range<u64> = 1..21;

#[test]
fn chaos_seeds_pass_on_correct_code() {
    let mut failures = Vec::new();
    for seed in SEEDS {
        let out = run_chaos_seed(seed, &ChaosOptions::default());
        let events = out.report.as_ref().map_or(0, |r| r.events);
        eprintln!(
            "seed {seed}: {} events={events} {:?}",
            out.verdict.short(),
            match &out.verdict {
                Verdict::Liveness { detail } => detail.clone(),
                Verdict::Violation(v) => v.to_string(),
                Verdict::Crash { message } => message.clone(),
                Verdict::Pass => String::new(),
            }
        );
        if !out.verdict.is_pass() {
            failures.push((seed, out.verdict));
        }
    }
    assert!(failures.is_empty(), "failing seeds: {failures:#?}");
}

#[test]
fn chaos_replays_exactly() {
    for seed in [2, 5] {
        let a = run_chaos_seed(seed, &ChaosOptions::default());
        let b = run_chaos_seed(seed, &ChaosOptions::default());
        let (ha, hb) = (a.report.unwrap().trace_hash, b.report.unwrap().trace_hash);
        assert_eq!(ha, hb, "seed {seed}");
    }
}

#[test]
fn chaos_finds_the_planted_hw_bug() {
    let opts = ChaosOptions {
        ablation_hw_ignores_isr: true,
        ..ChaosOptions::default()
    };
    let found: Vec<u64> = SEEDS
        .filter(|s| matches!(run_chaos_seed(*s, &opts).verdict, Verdict::Violation(_)))
        .collect();
    eprintln!("planted bug found by seeds {found:?}");
    assert!(!found.is_empty(), "no seed found the planted bug");
}

#[test]
fn mirror_chaos_seeds_pass() {
    // Two clusters with KIP-1279 mirroring: faults on both clusters plus operator stop /
    // pause / failback at random moments, mirror checkers after every event, and convergence
    // (identical logs, or STOPPED) in the liveness phase.
    //
    // Known finding (a KIP gap, not a simulator bug): with a single-replica `__mirror_state`
    // a power loss drops the unflushed coordinator records, the partition's persisted state
    // is gone (UNKNOWN), a desired STOPPED has no allowed path from UNKNOWN and the topic
    // stays read-only. These seeds must keep finding it, and only it.
    const KNOWN_LIVENESS: [u64; 2] = [21, 182];
    let opts = ChaosOptions {
        mirror: true,
        ..ChaosOptions::default()
    };
    let mut failures = Vec::new();
    for seed in 1..201 {
        let out = run_chaos_seed(seed, &opts);
        let expected_stuck = KNOWN_LIVENESS.contains(&seed);
        match (&out.verdict, expected_stuck) {
            (Verdict::Pass, false) => {}
            (Verdict::Liveness { detail }, true) if detail.contains("Unknown") => {}
            (v, _) => failures.push((seed, v.clone())),
        }
    }
    assert!(
        failures.is_empty(),
        "unexpected mirror seed verdicts: {failures:#?}"
    );
}
