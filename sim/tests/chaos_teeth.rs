//! Chaos has teeth: with one KIP-1279 rule deliberately broken through a design ablation
//! (kip1279.md A.3), mirror chaos over a fixed seed list must find it by an *outcome* (what a
//! user of the mirror loses or sees: `mirrorsim list`), not by the rule of the design's own
//! mechanism, which is only a diagnostic. A find counts only when the seed design on the same
//! seed does *not* fail with that outcome, so a seed that already fails the unablated design
//! (a known finding of the seed design) cannot stand in for the ablation's teeth.
//!
//! Each ablation stops at its first find; the number of seeds it took is printed (run with
//! `--nocapture`) so regressions in the workload's reach show up as growing counts.

use std::collections::BTreeMap;

use mirror_sim::chaos::{ChaosOptions, Verdict, run_chaos_seed};
use mirror_sim::check::{CheckKind, kind_of};

/// Seeds tried per ablation at most. The workload reaches every rule well inside it (the
/// slowest, the LME truncation, needs a source leader change between stop and failback).
const MAX_SEEDS: u64 = 150;

/// (ablated design, the outcomes its missing mechanism leads to).
const RULES: [(&str, &[&str]); 5] = [
    (
        "seed-no-lme-truncation",
        &[
            "failback_converges",
            "one_history_per_offset",
            "log_matching",
        ],
    ),
    (
        "seed-no-epoch-bump",
        &[
            "one_history_per_offset",
            "failback_converges",
            "log_matching",
        ],
    ),
    (
        "seed-no-pid-reset",
        &["failover_producer_not_fenced", "no_lost_acked_write"],
    ),
    ("seed-no-lso-truncation", &["lso_reaches_hw"]),
    (
        "seed-no-read-only",
        &["mirror_not_ahead_of_source", "mirror_prefix"],
    ),
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

/// The first seed of `1..=MAX_SEEDS` where `design` breaks one of `outcomes` and the seed
/// design does not break that one; `control` caches the seed design's verdicts.
fn first_find(
    design: &str,
    outcomes: &[&str],
    control: &mut BTreeMap<u64, Verdict>,
) -> Option<(u64, String)> {
    (1..=MAX_SEEDS).find_map(|seed| {
        let out = run_chaos_seed(seed, &opts(design));
        let broke = violated(&out.verdict)?.to_string();
        if !outcomes.contains(&broke.as_str()) {
            return None;
        }
        assert_eq!(
            kind_of(&broke),
            CheckKind::Outcome,
            "{broke} decides a verdict"
        );
        let base = control
            .entry(seed)
            .or_insert_with(|| run_chaos_seed(seed, &opts("seed")).verdict);
        (violated(base) != Some(broke.as_str())).then_some((seed, broke))
    })
}

#[test]
fn every_ablated_mirror_rule_is_found_by_chaos() {
    let mut control = BTreeMap::new();
    let mut missed = Vec::new();
    for (design, outcomes) in RULES {
        match first_find(design, outcomes, &mut control) {
            Some((seed, broke)) => {
                eprintln!("{design:<26} caught by {broke:<28} after {seed} seeds");
            }
            None => missed.push((design, outcomes)),
        }
    }
    assert!(
        missed.is_empty(),
        "not found within {MAX_SEEDS} seeds: {missed:?}"
    );
}

#[test]
fn a_hang_the_stop_left_keeps_the_bare_kind() {
    // Goal: the `mirror_cut_inside_txn` qualifier (a failback cut through one of the old
    // source's transactions, F1, fresh seed 912441 in `mirror.rs`) covers that form only: a
    // transaction a stop without its LSO cut left open on the new primary is the plain
    // `violation:lso_reaches_hw`, which no known-findings line may cover.
    let o = opts("seed-no-lso-truncation");
    let out = (1..=MAX_SEEDS)
        .map(|s| run_chaos_seed(s, &o))
        .find(|out| violated(&out.verdict) == Some("lso_reaches_hw"))
        .expect("no-lso-truncation leaves a hanging transaction");
    assert_eq!(out.kind(), "violation:lso_reaches_hw", "{:?}", out.site);
}

#[test]
fn a_find_replays_to_the_same_violation() {
    // Goal: what the teeth test counts is reproducible: the same seed and design give the
    // same trace hash and the same violation.
    let o = opts("seed-no-read-only");
    let seed = (1..=MAX_SEEDS)
        .find(|s| violated(&run_chaos_seed(*s, &o).verdict) == Some("mirror_not_ahead_of_source"))
        .expect("no-read-only is found");
    let (a, b) = (run_chaos_seed(seed, &o), run_chaos_seed(seed, &o));
    assert_eq!(a.verdict, b.verdict);
    assert_eq!(
        a.report.map(|r| r.trace_hash),
        b.report.map(|r| r.trace_hash)
    );
}
