//! The shrinker on a real failure: a mirror seed that breaks `read_only_until_stopped` under
//! the `seed-no-read-only` ablation shrinks to a plan that still breaks that invariant
//! (checked again by an independent replay), is no larger in any dimension, and is smaller
//! in at least one.

use mirror_sim::chaos::shrink::{FailureKind, shrink};
use mirror_sim::chaos::{ChaosOptions, ChaosPlan, Verdict, run_chaos_seed, run_plan};

fn opts() -> ChaosOptions {
    ChaosOptions {
        mirror: true,
        design: Some("seed-no-read-only".to_string()),
        ..ChaosOptions::default()
    }
}

fn invariant(v: &Verdict) -> Option<String> {
    match v {
        Verdict::Violation(x) => Some(x.invariant.clone()),
        _ => None,
    }
}

#[test]
fn shrinking_an_ablation_failure_keeps_the_invariant_and_never_grows() {
    let o = opts();
    let failing = (1..100u64)
        .map(|s| run_chaos_seed(s, &o))
        .find(|out| invariant(&out.verdict).as_deref() == Some("read_only_until_stopped"))
        .expect("the ablation is found");
    let plan: ChaosPlan = failing.plan.clone();
    let before = plan.size();
    let mut printed = Vec::new();
    let shrunk = shrink(plan, &o, 120, |step| printed.push(step.what.clone())).expect("fails");
    eprintln!(
        "seed {}: {before} -> {} in {} runs: {printed:#?}",
        failing.seed,
        shrunk.plan.size(),
        shrunk.runs
    );
    assert_eq!(
        shrunk.kind,
        FailureKind::Violation("read_only_until_stopped".into())
    );
    assert!(shrunk.plan.size().no_larger_than(&before));
    assert_ne!(shrunk.plan.size(), before, "some cut was accepted");
    assert_eq!(printed.len(), shrunk.steps.len());
    // The capsule (through JSON, as `mirrorsim shrink` writes it) replays to the same failure.
    let json = serde_json::to_string(&shrunk.plan).unwrap();
    let back: ChaosPlan = serde_json::from_str(&json).unwrap();
    let replay = run_plan(back, &ChaosOptions::default());
    assert_eq!(
        invariant(&replay.verdict).as_deref(),
        Some("read_only_until_stopped"),
        "the design travels in the capsule: {:?}",
        replay.verdict
    );
}

#[test]
fn a_passing_plan_is_refused() {
    let o = ChaosOptions {
        mirror: true,
        ..ChaosOptions::default()
    };
    let passing = (1..50u64)
        .map(|s| run_chaos_seed(s, &o))
        .find(|out| out.verdict.is_pass())
        .expect("some seed passes");
    assert!(shrink(passing.plan, &o, 10, |_| {}).is_err());
}
