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
    // Two clusters with KIP-1279 mirroring under the seed design: faults on both clusters,
    // operator stop / pause / failback at random moments, and the failover story (probe
    // writes to the destination, applications failing over to it, a source leader crash
    // after the stop, the source's applications leaving, a failback after STOPPED), mirror
    // checkers after every event, and convergence (identical logs, or STOPPED) in the
    // liveness phase.
    //
    // The failover story makes the seed design fail on some seeds. Each verdict below is
    // pinned, so a fix shows up as a seed that now passes (remove it here) and a regression
    // as a new failure. Triage (see the M4 report):
    // - liveness `Unknown`: a KIP gap. With a single-replica `__mirror_state` a power loss
    //   drops the unflushed coordinator records, the persisted state is gone (UNKNOWN), a
    //   desired STOPPED has no allowed path from UNKNOWN and the topic stays read-only.
    // - mirror_not_ahead_of_source on the old source after a failback: PREPARING truncates
    //   only above the LME, so the old source's tail written in the LME's own epoch is
    //   exposed under MIRRORING until the first diverging fetch (seed design gap).
    // - read_only_until_stopped: a source transaction's EndTxn marker after a failback
    //   began, and a zombie leader (stale metadata) appending at an old epoch.
    // - failback_converges, epoch_cache_well_formed, log_matching, pid_reset_after_stop,
    //   valid_transitions, liveness `None`/ISR: open core findings on the failback path.
    const KNOWN: [(u64, &str); 36] = [
        (3, "violation:mirror_not_ahead_of_source"),
        (5, "violation:pid_reset_after_stop"),
        (6, "violation:mirror_not_ahead_of_source"),
        (12, "violation:failback_converges"),
        (25, "violation:failback_converges"),
        (33, "violation:read_only_until_stopped"),
        (35, "violation:mirror_not_ahead_of_source"),
        (41, "violation:mirror_not_ahead_of_source"),
        (43, "violation:epoch_cache_well_formed"),
        (54, "violation:epoch_cache_well_formed"),
        (55, "violation:mirror_not_ahead_of_source"),
        (66, "violation:failback_converges"),
        (82, "violation:mirror_not_ahead_of_source"),
        (83, "liveness"),
        (88, "violation:mirror_not_ahead_of_source"),
        (89, "liveness"),
        (92, "violation:failback_converges"),
        (94, "violation:mirror_not_ahead_of_source"),
        (98, "violation:mirror_not_ahead_of_source"),
        (102, "violation:valid_transitions"),
        (104, "violation:epoch_cache_well_formed"),
        (106, "violation:read_only_until_stopped"),
        (107, "violation:epoch_cache_well_formed"),
        (108, "violation:failback_converges"),
        (114, "violation:mirror_not_ahead_of_source"),
        (116, "violation:epoch_cache_well_formed"),
        (130, "violation:read_only_until_stopped"),
        (135, "liveness"),
        (138, "violation:epoch_cache_well_formed"),
        (154, "liveness"),
        (165, "violation:mirror_not_ahead_of_source"),
        (167, "violation:epoch_cache_well_formed"),
        (178, "violation:mirror_not_ahead_of_source"),
        (182, "liveness"),
        (184, "violation:mirror_not_ahead_of_source"),
        (185, "violation:log_matching"),
    ];
    let known: std::collections::BTreeMap<u64, &str> = KNOWN.into_iter().collect();
    let opts = ChaosOptions {
        mirror: true,
        ..ChaosOptions::default()
    };
    let mut unexpected = Vec::new();
    for seed in 1..201 {
        let out = run_chaos_seed(seed, &opts);
        let want = known.get(&seed).copied().unwrap_or("pass");
        if out.verdict.short() != want {
            unexpected.push((seed, want, out.verdict));
        }
    }
    assert!(
        unexpected.is_empty(),
        "mirror seed verdicts changed (seed, pinned, now): {unexpected:#?}"
    );
}
