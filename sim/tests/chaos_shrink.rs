//! The shrinker on a real failure: a mirror seed that breaks `mirror_not_ahead_of_source` under
//! the `seed-no-read-only` ablation shrinks to a plan that still breaks that outcome
//! (checked again by an independent replay), is no larger in any dimension, and is smaller
//! in at least one.

use std::time::Duration;

use mirror_sim::chaos::shrink::{FailureKind, shrink, shrink_on};
use mirror_sim::chaos::{ChaosOptions, ChaosPlan, RunLimits, Verdict, run_chaos_seed, run_plan};

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
        .find(|out| invariant(&out.verdict).as_deref() == Some("mirror_not_ahead_of_source"))
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
        FailureKind::Violation("mirror_not_ahead_of_source".into())
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
        Some("mirror_not_ahead_of_source"),
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

#[test]
fn two_jobs_shrink_to_the_plan_one_job_finds() {
    // Goal: trying candidates two at a time changes nothing but the wall time: the same
    // cuts, in the same order, the same run count, the same plan.
    let o = opts();
    let failing = (1..100u64)
        .map(|s| run_chaos_seed(s, &o))
        .find(|out| invariant(&out.verdict).as_deref() == Some("mirror_not_ahead_of_source"))
        .expect("the ablation is found");
    let run = |jobs| {
        let mut whats = Vec::new();
        let s = shrink_on(failing.plan.clone(), &o, 40, jobs, |st| {
            whats.push(st.what.clone());
        })
        .expect("fails");
        (s.plan, s.runs, whats)
    };
    let one = run(1);
    assert!(!one.2.is_empty(), "some cut was accepted");
    assert_eq!(one, run(2));
    assert_eq!(one, run(3));
}

#[test]
fn a_run_past_its_limits_is_stopped_and_says_so() {
    // Goal: a candidate that runs longer (in simulated time or in events) than allowed ends
    // as a limit, which the shrinker refuses, instead of being waited for; a run within its
    // limits is unaffected.
    let o = ChaosOptions {
        mirror: true,
        ..ChaosOptions::default()
    };
    let free = run_chaos_seed(3, &o);
    let report = free.report.clone().expect("a report");
    let limited = |sim_time: Duration, events: u64| ChaosOptions {
        limits: Some(RunLimits { sim_time, events }),
        ..o.clone()
    };
    let by_events = run_plan(free.plan.clone(), &limited(Duration::from_secs(3600), 500));
    assert!(by_events.verdict.is_limit(), "{:?}", by_events.verdict);
    let by_time = run_plan(
        free.plan.clone(),
        &limited(Duration::from_secs(5), u64::MAX),
    );
    assert!(by_time.verdict.is_limit(), "{:?}", by_time.verdict);
    let within = run_plan(
        free.plan.clone(),
        &limited(
            Duration::from_secs_f64(report.sim_seconds + 1.0),
            report.events,
        ),
    );
    assert_eq!(within.verdict, free.verdict);
    assert_eq!(within.report.unwrap().trace_hash, report.trace_hash);
    assert!(!free.verdict.is_limit());
}
