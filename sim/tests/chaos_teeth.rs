//! Chaos has teeth: with one KIP-1279 rule deliberately broken through a design ablation
//! (kip1279.md A.3), mirror chaos over a fixed seed list must find it, reported by the
//! invariant that guards the rule. A find counts only when the seed design on the same seed
//! does *not* fail with that invariant, so a seed that already fails the unablated design
//! (a known finding of the seed design) cannot stand in for the ablation's teeth.
//!
//! Each ablation stops at its first find; the number of seeds it took is printed (run with
//! `--nocapture`) so regressions in the workload's reach show up as growing counts.

use std::collections::BTreeMap;

use mirror_sim::chaos::{ChaosOptions, Verdict, run_chaos_seed};

/// Seeds tried per ablation at most. The workload reaches every rule well inside it (the
/// slowest, the LME truncation, needs a source leader change between stop and failback).
const MAX_SEEDS: u64 = 150;

/// (ablated design, the invariant that must catch it).
const RULES: [(&str, &str); 5] = [
    ("seed-no-lme-truncation", "failback_converges"),
    ("seed-no-epoch-bump", "epoch_above_lme_after_stop"),
    ("seed-no-pid-reset", "pid_reset_after_stop"),
    ("seed-no-lso-truncation", "no_hanging_txn_after_stop"),
    ("seed-no-read-only", "read_only_until_stopped"),
];

fn violated(v: &Verdict) -> Option<&str> {
    match v {
        Verdict::Violation(x) => Some(x.invariant.as_str()),
        _ => None,
    }
}

fn opts(design: &str) -> ChaosOptions {
    ChaosOptions {
        mirror: true,
        design: Some(design.to_string()),
        ..ChaosOptions::default()
    }
}

/// The first seed of `1..=MAX_SEEDS` where `design` breaks `invariant` and the seed design
/// does not; `control` caches the seed design's verdicts across ablations.
fn first_find(design: &str, invariant: &str, control: &mut BTreeMap<u64, Verdict>) -> Option<u64> {
    (1..=MAX_SEEDS).find(|seed| {
        let out = run_chaos_seed(*seed, &opts(design));
        if violated(&out.verdict) != Some(invariant) {
            return false;
        }
        let base = control
            .entry(*seed)
            .or_insert_with(|| run_chaos_seed(*seed, &opts("seed")).verdict);
        violated(base) != Some(invariant)
    })
}

#[test]
fn every_ablated_mirror_rule_is_found_by_chaos() {
    let mut control = BTreeMap::new();
    let mut missed = Vec::new();
    for (design, invariant) in RULES {
        match first_find(design, invariant, &mut control) {
            Some(seed) => eprintln!("{design:<26} caught by {invariant:<28} after {seed} seeds"),
            None => missed.push((design, invariant)),
        }
    }
    assert!(
        missed.is_empty(),
        "not found within {MAX_SEEDS} seeds: {missed:?}"
    );
}

#[test]
fn a_find_replays_to_the_same_violation() {
    // Goal: what the teeth test counts is reproducible: the same seed and design give the
    // same trace hash and the same violation.
    let o = opts("seed-no-read-only");
    let seed = (1..=MAX_SEEDS)
        .find(|s| violated(&run_chaos_seed(*s, &o).verdict) == Some("read_only_until_stopped"))
        .expect("no-read-only is found");
    let (a, b) = (run_chaos_seed(seed, &o), run_chaos_seed(seed, &o));
    assert_eq!(a.verdict, b.verdict);
    assert_eq!(
        a.report.map(|r| r.trace_hash),
        b.report.map(|r| r.trace_hash)
    );
}
