//! The KIP-1279 admin-answer steps and test hooks of the scenario language (describe_mirror,
//! wait_describe_mirror, list_mirrors, wait_list_mirrors, expect_mirror_state_record,
//! truncate_log, create_topic's topic_id, unclean_election's broker, the committed offset's
//! leader epoch) are exact: each shipped scenario passes as written, and a changed expected
//! value fails the step that names it with the expected and the actual value.

use std::path::PathBuf;

use mirror_sim::scenario::{RunOptions, Scenario, ScenarioVerdict, run_scenario};

fn scenario_text(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios")
        .join(format!("{name}.toml"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn verdict(text: &str) -> ScenarioVerdict {
    let sc = Scenario::parse(text, "t.toml", "t").unwrap_or_else(|e| panic!("{e}"));
    run_scenario(&sc, &RunOptions::default()).verdict
}

/// The file passes as written; with each `(from, to)` edit (the first occurrence of `from`)
/// it fails, and the reason contains every needle.
fn exact(name: &str, edits: &[(&str, &str, &[&str])]) {
    let text = scenario_text(name);
    assert_eq!(verdict(&text), ScenarioVerdict::Pass, "{name} as written");
    for (from, to, needles) in edits {
        assert!(text.contains(from), "{name} holds {from}");
        match verdict(&text.replacen(from, to, 1)) {
            ScenarioVerdict::Fail { reason } => {
                for n in *needles {
                    assert!(reason.contains(n), "{name} with {to}: {reason}");
                }
            }
            ScenarioVerdict::Pass => panic!("{name} with {to} should fail"),
        }
    }
}

#[test]
fn describe_mirror_and_the_mirror_state_record_are_exact() {
    exact(
        "describe_mirror_reports_lag_then_a_non_retryable_failure",
        &[
            (
                "partitions = [\"orders-0 MIRRORING lag=0 src=20 dst=20",
                "partitions = [\"orders-0 MIRRORING lag=0 src=20 dst=19",
                &[
                    "describe_mirror",
                    "expected [\"orders-0 MIRRORING lag=0 src=20 dst=19",
                    "got [\"orders-0 MIRRORING lag=0 src=20 dst=20",
                ],
            ),
            (
                "expect = \"UNKNOWN_CLUSTER_MIRROR\"",
                "expect = \"NONE\"",
                &["nope: expected NONE, got UNKNOWN_CLUSTER_MIRROR"],
            ),
            (
                "retry_attempt = -1\nerror_contains",
                "retry_attempt = 0\nerror_contains",
                &[
                    "wait_describe_mirror",
                    "timed out",
                    "retry attempt: expected 0, got -1",
                ],
            ),
            (
                "record = \"FAILED se=3",
                "record = \"FAILED se=2",
                &[
                    "expect_mirror_state_record",
                    "expected \"FAILED se=2",
                    "got \"FAILED se=3",
                ],
            ),
            (
                "previous_state = \"MIRRORING\"",
                "previous_state = \"PAUSED\"",
                &["previous state: expected PAUSED, got MIRRORING"],
            ),
        ],
    );
}

#[test]
fn retry_attempts_reasons_and_recover_mirror_errors_are_exact() {
    exact(
        "describe_mirror_counts_loop_retries_and_recover_mirror_resets_them",
        &[
            (
                "retry_attempt = 1",
                "retry_attempt = 0",
                &[
                    "wait_describe_mirror",
                    "timed out",
                    "retry attempt: expected 0, got ",
                ],
            ),
            (
                "error_message = \"Detected mirror loop for mirror: m1\"\ntimeout_ms = 30000",
                "error_message = \"Detected a loop\"\ntimeout_ms = 30000",
                &[
                    "error message: expected \"Detected a loop\", got \"Detected mirror loop for mirror: m1\"",
                ],
            ),
            (
                "retry_attempt_at_least = 3",
                "retry_attempt_at_least = 30",
                &["retry attempt: expected at least 30"],
            ),
            (
                "expect = \"UNKNOWN_TOPIC_OR_PARTITION\"",
                "expect = \"NONE\"",
                &["expected NONE, got UNKNOWN_TOPIC_OR_PARTITION"],
            ),
        ],
    );
}

#[test]
fn list_mirrors_is_exact() {
    exact(
        "list_mirrors_filters_by_name_source_and_desired_state",
        &[
            (
                "mirrors = [\"my-mirror source=src topics=\", \"new-mirror source=src topics=list-filter-b\"]",
                "mirrors = [\"new-mirror source=src topics=list-filter-b\"]",
                &[
                    "mirrors: expected [\"new-mirror source=src topics=list-filter-b\"], got [\"my-mirror source=src topics=\", \"new-mirror source=src topics=list-filter-b\"]",
                ],
            ),
            (
                "mirrors = [\"my-mirror source=src topics=list-filter-a\"]\ntimeout_ms = 15000",
                "mirrors = []\ntimeout_ms = 15000",
                &[
                    "timed out after 15000 ms",
                    "(now [\"my-mirror source=src topics=list-filter-a\"])",
                ],
            ),
        ],
    );
}

#[test]
fn truncate_log_results_and_losses_are_exact() {
    exact(
        "truncate_log_on_the_source_leader_drives_ule_recovery",
        &[
            (
                "losses = [\"truncate_log@20\"]",
                "losses = [\"truncate_log@21\"]",
                &["expected [\"truncate_log@21\"], got [\"truncate_log@20\"]"],
            ),
            (
                "offset = 20\n\n[[step]]\ndo = \"wait_describe_mirror\"",
                "offset = -1\n\n[[step]]\ndo = \"wait_describe_mirror\"",
                &["truncate_log", "expected NONE, got INVALID_REQUEST"],
            ),
        ],
    );
}

#[test]
fn create_topic_ids_and_unclean_election_targets_are_checked() {
    exact(
        "create_topic_with_the_source_topic_id_then_mirror",
        &[
            (
                "expect = \"TOPIC_ALREADY_EXISTS\"",
                "expect = \"NONE\"",
                &["expected NONE, got TOPIC_ALREADY_EXISTS"],
            ),
            (
                "topic_id = \"src/my-topic\"",
                "topic_id = \"src/nope\"",
                &["topic_id: `nope` is unknown on src"],
            ),
        ],
    );
    exact(
        "unclean_election_of_a_chosen_replica",
        &[
            (
                "topic = \"orders\"\nbroker = 1\n",
                "topic = \"orders\"\nbroker = 2\n",
                &["unclean_election", "src-2 is down: it cannot be elected"],
            ),
            (
                "leader_epoch = 2",
                "leader_epoch = 1",
                &["leader epoch: expected 1, got 2"],
            ),
        ],
    );
}

#[test]
fn a_committed_offset_s_leader_epoch_is_exact() {
    exact(
        "committed_offset_leader_epochs_synced_to_the_destination",
        &[
            (
                "offset = 20\nleader_epoch = 1",
                "offset = 20\nleader_epoch = 0",
                &["dst g-ahead orders-0 leader epoch: expected 0, got 1"],
            ),
            (
                "offset = 8\nleader_epoch = -1",
                "offset = 8\nleader_epoch = 0",
                &["src g-none orders-0 leader epoch: expected 0, got -1"],
            ),
        ],
    );
}

#[test]
fn an_unclean_election_refuses_a_broker_that_is_not_a_replica() {
    // A one-replica topic on two brokers: one of them holds no replica of it. For the one
    // that does, the election is not needed (the partition has a leader).
    let text = r#"
description = "x"
[[cluster]]
name = "src"
brokers = 2
[[step]]
do = "create_topic"
cluster = "src"
topic = "t"
replication_factor = 1
[[step]]
do = "unclean_election"
cluster = "src"
topic = "t"
broker = 1
expect = "ELECTION_NOT_NEEDED"
[[step]]
do = "unclean_election"
cluster = "src"
topic = "t"
broker = 2
expect = "ELECTION_NOT_NEEDED"
"#;
    match verdict(text) {
        ScenarioVerdict::Fail { reason } => assert!(
            reason.contains("is not a replica of t-0 (replicas [")
                && reason.contains("cannot be elected"),
            "{reason}"
        ),
        ScenarioVerdict::Pass => panic!("one broker is not a replica"),
    }
}

#[test]
fn expectations_after_a_violation_are_dumped_not_only_expect_log() {
    // A broken invariant ends the run; the mirror state and the DescribeMirrors answer that
    // later steps name are written to the trace, marked, as expect_log's logs are.
    let text = scenario_text("lab_no_read_only_accepts_a_write_while_mirroring").replace(
        "[expect]",
        "[[step]]\ndo = \"expect_state\"\ncluster = \"dst\"\ntopic = \"orders\"\nstate = \"STOPPED\"\n\n\
         [[step]]\ndo = \"describe_mirror\"\ncluster = \"dst\"\nmirror = \"m1\"\nstate = \"STOPPED\"\n\n[expect]",
    );
    let sc = Scenario::parse(&text, "t.toml", "t").unwrap();
    let o = run_scenario(&sc, &RunOptions::default());
    assert!(o.violation.is_some());
    assert_eq!(o.verdict, ScenarioVerdict::Pass, "the expected violation");
    let lines = o.report.map(|r| r.lines).unwrap_or_default();
    let dumped = |kind: &str| {
        lines
            .iter()
            .find(|l| l.contains(&format!("{kind} after the violation")))
            .cloned()
            .unwrap_or_else(|| panic!("no {kind} dump"))
    };
    assert!(dumped("expect_state").contains("dst/orders-0 MIRRORING"));
    assert!(dumped("describe_mirror").contains("\"orders-0 MIRRORING"));
}
