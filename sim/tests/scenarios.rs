//! The scenario catalogue: every file in `scenarios/` runs, must meet its own `[expect]`,
//! and its compact trace and verdict must equal the insta snapshot in `snapshots/`.
//!
//! Review a change: `cargo test --release -p mirror-sim --test scenarios` writes
//! `snapshots/*.snap.new` next to each changed snapshot; read the diff and accept with
//! `INSTA_UPDATE=always cargo test --release -p mirror-sim --test scenarios` (CI sets `CI=true`
//! and fails on any difference without writing files).

use std::path::PathBuf;

use mirror_sim::scenario::{RunOptions, Scenario, ScenarioVerdict, files_in, run_scenario};

fn scenario_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios")
}

#[test]
fn every_scenario_meets_its_expectations_and_matches_its_snapshot() {
    let files = files_in(&scenario_dir()).expect("scenarios/ is readable");
    let mut failed = Vec::new();
    for f in &files {
        let sc = Scenario::load(f).unwrap_or_else(|e| panic!("{e}"));
        let o = run_scenario(&sc, &RunOptions::default());
        if !o.passed() {
            failed.push(format!("{}: {:?}", sc.name, o.verdict));
        }
        let mut settings = insta::Settings::clone_current();
        settings.set_snapshot_path("../../snapshots");
        settings.set_prepend_module_to_snapshot(false);
        settings.set_omit_expression(true);
        settings.set_description(sc.description.clone());
        settings.bind(|| insta::assert_snapshot!(sc.name.clone(), o.snapshot()));
    }
    assert!(failed.is_empty(), "scenarios failed: {failed:#?}");
    assert!(
        files.len() >= 30,
        "the catalogue has {} scenarios",
        files.len()
    );
}

#[test]
fn a_scenario_replays_to_the_same_trace_hash() {
    let f = scenario_dir().join("failback_after_writes_on_both_sides.toml");
    let sc = Scenario::load(&f).unwrap();
    let a = run_scenario(&sc, &RunOptions::default());
    let b = run_scenario(&sc, &RunOptions::default());
    let hash =
        |o: &mirror_sim::scenario::ScenarioOutcome| o.report.as_ref().map(|r| r.trace_hash.clone());
    assert!(hash(&a).is_some());
    assert_eq!(hash(&a), hash(&b));
}

#[test]
fn a_run_that_breaks_an_invariant_still_shows_the_logs_its_later_steps_name() {
    // The read-only ablation breaks `mirror_not_ahead_of_source` at the client's write, before
    // the file's last step (an `expect_log`) runs: the trace shows that log, marked.
    let sc = Scenario::load(
        &scenario_dir().join("lab_no_read_only_accepts_a_write_while_mirroring.toml"),
    )
    .unwrap();
    let o = run_scenario(&sc, &RunOptions::default());
    assert!(o.violation.is_some(), "the ablation breaks an invariant");
    let lines = o.report.map(|r| r.lines).unwrap_or_default();
    let dump = lines
        .iter()
        .find(|l| l.contains("expect_log after the violation"))
        .expect("the remaining expect_log is dumped");
    assert!(
        dump.contains("orders-0") && dump.contains("leo=5"),
        "{dump}"
    );
}

#[test]
fn exact_producer_state_and_leader_epoch_expectations_are_checked() {
    // `expect_log`'s `producers` and `leader_epoch` are exact: the file's values pass, and a
    // changed value fails the step that names it, with the expected and actual values.
    let path = scenario_dir().join("s14_stop_rerun_after_lost_mirror_state_records_no_lme.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let run = |text: &str| {
        let sc = Scenario::parse(text, "s14.toml", "s14").unwrap();
        run_scenario(&sc, &RunOptions::default()).verdict
    };
    assert_eq!(run(&text), ScenarioVerdict::Pass);
    for (from, to, needle) in [
        (
            "producers = [\"7@0 seq=3\"]",
            "producers = [\"7@0 seq=1\"]",
            "producer state: expected [\"7@0 seq=1\"], got [\"7@0 seq=3\"]",
        ),
        (
            "leader_epoch = 2",
            "leader_epoch = 3",
            "leader epoch: expected 3, got 2",
        ),
    ] {
        assert!(text.contains(from), "{from}");
        match run(&text.replacen(from, to, 1)) {
            ScenarioVerdict::Fail { reason } => assert!(reason.contains(needle), "{reason}"),
            ScenarioVerdict::Pass => panic!("{to} should fail"),
        }
    }
}
