//! Bad scenario files: every refusal names the file, the line and the field.

use super::format::{BatchKind, BatchPattern, Scenario};

const WORLD: &str = r#"
description = "x"

[[cluster]]
name = "src"
brokers = 3

[[cluster]]
name = "dst"
brokers = 2
"#;

fn parse(extra: &str) -> Result<Scenario, String> {
    Scenario::parse(&format!("{WORLD}{extra}"), "t.toml", "t").map_err(|e| e.to_string())
}

#[test]
fn a_good_file_parses_with_step_lines() {
    let sc = parse(
        "\n[[step]]\ndo = \"sleep\"\nms = 5\n\n[[step]]\ndo = \"wait_state\"\ncluster = \"dst\"\ntopic = \"t\"\nstate = \"mirroring\"\n",
    )
    .unwrap();
    assert_eq!(sc.name, "t");
    assert_eq!(sc.steps.len(), 2);
    assert_eq!(sc.steps[0].0, 12);
    assert_eq!(sc.steps[1].0, 16);
}

#[test]
fn syntax_errors_name_the_line() {
    let e = parse("\n[[step]]\ndo = \"sleep\"\nms = \n").unwrap_err();
    assert!(e.starts_with("t.toml:14"), "{e}");
}

#[test]
fn unknown_step_kinds_and_fields_are_refused_with_the_line() {
    // The line is the field's own (the `do` line, the unknown key's line).
    let e = parse("\n[[step]]\ndo = \"explode\"\n").unwrap_err();
    assert!(
        e.starts_with("t.toml:13: field `step[1].do`") && e.contains("explode"),
        "{e}"
    );
    assert!(
        !e.contains("did you mean"),
        "nothing is close to `explode`: {e}"
    );
    let e = parse("\n[[step]]\ndo = \"sleep\"\nms = 1\nsecs = 2\n").unwrap_err();
    assert!(e.starts_with("t.toml:15: field `step[1].secs`"), "{e}");
}

#[test]
fn misspelt_names_get_the_closest_valid_one() {
    let e =
        parse("\n[[step]]\ndo = \"create_topik\"\ncluster = \"src\"\ntopic = \"t\"\n").unwrap_err();
    assert!(e.starts_with("t.toml:13: field `step[1].do`"), "{e}");
    assert!(e.ends_with("did you mean `create_topic`?"), "{e}");
    let e = parse(
        "\n[[step]]\ndo = \"create_topic\"\ncluster = \"src\"\ntopic = \"t\"\npartitons = 4\n",
    )
    .unwrap_err();
    assert!(e.starts_with("t.toml:16: field `step[1].partitons`"), "{e}");
    assert!(e.ends_with("did you mean `partitions`?"), "{e}");
    let e = parse("\n[[step]]\ndo = \"crash\"\ncluster = \"dts\"\nbroker = 1\n").unwrap_err();
    assert!(e.ends_with("did you mean `dst`?"), "{e}");
    let e = parse(
        "\n[[step]]\ndo = \"expect_state\"\ncluster = \"dst\"\ntopic = \"t\"\nstate = \"MIRORING\"\n",
    )
    .unwrap_err();
    assert!(e.ends_with("did you mean `MIRRORING`?"), "{e}");
    let e = Scenario::parse(
        "description = \"x\"\ndesign = \"seeed\"\n[[cluster]]\nname = \"a\"\nbrokers = 1\n",
        "w.toml",
        "w",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.starts_with("w.toml:2: field `design`") && e.ends_with("did you mean `seed`?"),
        "{e}"
    );
    let e = Scenario::parse(
        "description = \"x\"\n[[cluster]]\nnam = \"a\"\nbrokers = 1\n",
        "w.toml",
        "w",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.starts_with("w.toml:3: field `cluster[0].nam`") && e.ends_with("did you mean `name`?"),
        "{e}"
    );
}

#[test]
fn type_errors_carry_the_field_path_and_its_line() {
    let e = parse("\n[[step]]\ndo = \"create_topic\"\ncluster = \"src\"\ntopic = \"t\"\npartitions = \"four\"\n")
        .unwrap_err();
    assert_eq!(
        e,
        "t.toml:16: field `step[1].partitions`: invalid type: string \"four\", expected i32"
    );
    let e = parse("\n[[step]]\ndo = \"sleep\"\nat_ms = -5\nms = 1\n").unwrap_err();
    assert!(e.starts_with("t.toml:14: field `step[1].at_ms`"), "{e}");
    let e = parse("\n[[step]]\ndo = \"create_topic\"\ntopic = \"t\"\n").unwrap_err();
    assert!(
        e.starts_with("t.toml:12: field `step[1].cluster`: missing field"),
        "{e}"
    );
    let e = Scenario::parse(
        "description = \"x\"\n[[cluster]]\nname = \"a\"\nbrokers = \"x\"\n",
        "w.toml",
        "w",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.starts_with("w.toml:4: field `cluster[0].brokers`: invalid type"),
        "{e}"
    );
    let e = Scenario::parse("", "w.toml", "w").unwrap_err().to_string();
    assert!(
        e.starts_with("w.toml:1: field `description`: missing field"),
        "{e}"
    );
}

#[test]
fn states_accept_the_latest_presets_names() {
    let sc = parse(
        "\n[[step]]\ndo = \"wait_state\"\ncluster = \"dst\"\ntopic = \"t\"\nstate = \"LOG_ALIGNMENT\"\n",
    )
    .unwrap();
    assert_eq!(sc.steps.len(), 1);
}

#[test]
fn semantic_errors_name_the_step_field() {
    let e = parse("\n[[step]]\ndo = \"crash\"\ncluster = \"nowhere\"\nbroker = 1\n").unwrap_err();
    assert!(e.starts_with("t.toml:14: field `step[1].cluster`"), "{e}");
    let e = parse("\n[[step]]\ndo = \"crash\"\ncluster = \"dst\"\nbroker = 3\n").unwrap_err();
    assert!(
        e.contains("step[1].broker") && e.contains("broker 3"),
        "{e}"
    );
    let e =
        parse("\n[[step]]\ndo = \"crash\"\ncluster = \"dst\"\nbroker = \"leader\"\n").unwrap_err();
    assert!(e.contains("step[1].topic"), "{e}");
    let e = parse(
        "\n[[step]]\ndo = \"expect_state\"\ncluster = \"dst\"\ntopic = \"t\"\nstate = \"FLYING\"\n",
    )
    .unwrap_err();
    assert!(
        e.contains("step[1].state") && e.contains("MIRRORING"),
        "{e}"
    );
    let e = parse("\n[[step]]\ndo = \"stop_mirror\"\ncluster = \"dst\"\nmirror = \"m\"\ntopics = []\nexpect = \"oops\"\n").unwrap_err();
    assert!(e.contains("step[1].expect"), "{e}");
    let e = parse("\n[[step]]\ndo = \"expect_log\"\ncluster = \"dst\"\ntopic = \"t\"\nbatches = [\"0-3 data\"]\n").unwrap_err();
    assert!(e.contains("step[1].batches[0]") && e.contains("@"), "{e}");
    let e = parse("\n[[step]]\ndo = \"create_topic\"\ncluster = \"dst\"\ntopic = \"t\"\nreplication_factor = 3\n").unwrap_err();
    assert!(
        e.contains("replication_factor") && e.contains("2 brokers"),
        "{e}"
    );
}

#[test]
fn world_errors_are_refused() {
    let e = Scenario::parse("description = \"x\"\ndesign = \"seed-no-brakes\"\n[[cluster]]\nname = \"a\"\nbrokers = 1\n", "w.toml", "w").unwrap_err().to_string();
    assert!(
        e.starts_with("w.toml:2: field `design`") && e.contains("no-brakes"),
        "{e}"
    );
    let e = Scenario::parse(
        "description = \"x\"\n[[cluster]]\nname = \"a\"\nbrokers = 9\n",
        "w.toml",
        "w",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("cluster[0].brokers"), "{e}");
    let e = Scenario::parse("description = \"x\"\n[[cluster]]\nname = \"a\"\nbrokers = 1\n[[cluster]]\nname = \"a\"\nbrokers = 1\n", "w.toml", "w").unwrap_err().to_string();
    assert!(e.contains("defined twice"), "{e}");
    let e = Scenario::parse("description = \"x\"\n", "w.toml", "w")
        .unwrap_err()
        .to_string();
    assert!(e.contains("cluster"), "{e}");
    let e = Scenario::parse("description = \"x\"\n[[cluster]]\nname = \"a\"\nbrokers = 1\n[expect]\ninvariant = \"mirror_prefix\"\n", "w.toml", "w").unwrap_err().to_string();
    assert!(e.contains("expect.invariant"), "{e}");
}

#[test]
fn batch_patterns_parse_and_match() {
    let p = BatchPattern::parse("0-3@0 data").unwrap();
    assert!(p.matches(0, 3, 0, BatchKind::Data));
    assert!(!p.matches(0, 3, 1, BatchKind::Data));
    let p = BatchPattern::parse("12@* pid_reset").unwrap();
    assert!(p.matches(12, 12, 7, BatchKind::PidReset));
    assert!(BatchPattern::parse("5-3@0 data").is_err());
    assert!(BatchPattern::parse("5@x data").is_err());
    assert!(BatchPattern::parse("5@0 blob").is_err());
}

#[test]
fn a_repeat_block_expands_in_place_with_each_steps_own_line() {
    // Goal: `times` copies of the block's steps, between the steps around it, each copy at
    // the line of its own `[[step.steps]]` table (prototype tests bounce a broker 10-20
    // times).
    let sc = parse(
        "\n[[step]]\ndo = \"sleep\"\nms = 1\n\n[[step]]\ndo = \"repeat\"\ntimes = 3\n\n[[step.steps]]\ndo = \"crash\"\ncluster = \"dst\"\nbroker = 1\n\n[[step.steps]]\ndo = \"restart\"\ncluster = \"dst\"\nbroker = 1\n\n[[step]]\ndo = \"sleep\"\nms = 2\n",
    )
    .unwrap();
    let kinds: Vec<String> = sc
        .steps
        .iter()
        .map(|(line, s)| {
            format!("{line}:{:?}", s.kind)
                .split([' ', '{'])
                .next()
                .unwrap_or("")
                .to_string()
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "12:Sleep",
            "20:Crash",
            "25:Restart",
            "20:Crash",
            "25:Restart",
            "20:Crash",
            "25:Restart",
            "30:Sleep"
        ]
    );
}

#[test]
fn a_bad_repeat_block_is_refused_with_its_field() {
    let block = |body: &str| parse(&format!("\n[[step]]\ndo = \"repeat\"\n{body}")).unwrap_err();
    let e = block("times = 0\n[[step.steps]]\ndo = \"sleep\"\nms = 1\n");
    assert!(
        e.starts_with("t.toml:14: field `step[1].times`: expected an integer from 1 to 100"),
        "{e}"
    );
    let e = block("[[step.steps]]\ndo = \"sleep\"\nms = 1\n");
    assert!(
        e.contains("field `step[1].times`: a repeat block needs `times`"),
        "{e}"
    );
    let e = block("times = 2\n");
    assert!(
        e.contains("field `step[1].steps`: a repeat block needs `steps`"),
        "{e}"
    );
    let e = block("times = 2\nsteps = []\n");
    assert!(
        e.contains("field `step[1].steps`: expected a non-empty array"),
        "{e}"
    );
    let e = block("times = 2\nevery = 3\n[[step.steps]]\ndo = \"sleep\"\nms = 1\n");
    assert!(
        e.contains("field `step[1].every`: unknown field `every`"),
        "{e}"
    );
    let e = block("times = 2\n[[step.steps]]\ndo = \"sleep\"\nat_ms = 5\nms = 1\n");
    assert!(
        e.contains("field `step[1].steps[1]`: a step in a repeat block cannot carry `at_ms`"),
        "{e}"
    );
    let e = block("times = 2\n[[step.steps]]\ndo = \"repeat\"\ntimes = 2\n");
    assert!(e.contains("cannot hold another repeat block"), "{e}");
    // A bad field inside the block is named with its path in the block.
    let e = block("times = 2\n[[step.steps]]\ndo = \"sleep\"\nms = \"long\"\n");
    assert!(
        e.contains("field `step[1].steps[1].ms`: invalid type"),
        "{e}"
    );
    // ... and so is a validation error (an unknown broker).
    let e = block("times = 2\n[[step.steps]]\ndo = \"crash\"\ncluster = \"dst\"\nbroker = 9\n");
    assert!(
        e.contains("field `step[1].steps[1].broker`: broker 9 does not exist"),
        "{e}"
    );
}

#[test]
fn a_produce_names_the_broker_it_goes_to() {
    // Goal: `broker` on a produce is checked like a crash's: an id of the cluster, or a role
    // of the step's own topic.
    let sc = parse(
        "\n[[step]]\ndo = \"produce\"\ncluster = \"src\"\ntopic = \"t\"\nbroker = \"follower\"\n",
    )
    .unwrap();
    assert_eq!(sc.steps.len(), 1);
    let e = parse("\n[[step]]\ndo = \"produce\"\ncluster = \"dst\"\ntopic = \"t\"\nbroker = 3\n")
        .unwrap_err();
    assert!(
        e.starts_with("t.toml:16: field `step[1].broker`: broker 3 does not exist in `dst`"),
        "{e}"
    );
}

#[test]
fn mirror_pattern_and_mirror_config_fields_are_typed_and_named_in_errors() {
    // Patterns are lists of strings; a bare string is a type error at its own line.
    let e = parse(
        "\n[[step]]\ndo = \"start_mirror\"\ncluster = \"dst\"\nmirror = \"m1\"\nsource = \"src\"\ninclude_patterns = \"orders-.*\"\n",
    )
    .unwrap_err();
    assert!(
        e.starts_with("t.toml:17: field `step[1].include_patterns`: invalid type: string"),
        "{e}"
    );
    let e = parse(
        "\n[[step]]\ndo = \"stop_mirror\"\ncluster = \"dst\"\nmirror = \"m1\"\npatterns = [\"a\", 3]\n",
    )
    .unwrap_err();
    assert!(e.starts_with("t.toml:16: field `step[1].patterns"), "{e}");
    // A misspelt field gets the closest valid one; an unknown cluster is refused by name.
    let e = parse(
        "\n[[step]]\ndo = \"alter_mirror_config\"\ncluster = \"dst\"\nmirror = \"m1\"\nkey = \"topics.include\"\nvalues = \"x\"\n",
    )
    .unwrap_err();
    assert!(e.starts_with("t.toml:17: field `step[1].values`"), "{e}");
    assert!(e.contains("did you mean `value`?"), "{e}");
    let e = parse(
        "\n[[step]]\ndo = \"wait_mirror_config\"\ncluster = \"dest\"\nmirror = \"m1\"\nkey = \"k\"\n",
    )
    .unwrap_err();
    assert!(e.starts_with("t.toml:14: field `step[1].cluster`"), "{e}");
    assert!(e.ends_with("did you mean `dst`?"), "{e}");
    let e = parse(
        "\n[[step]]\ndo = \"alter_mirror_config\"\ncluster = \"dst\"\nmirror = \"m1\"\nkey = \"k\"\nexpect = \"invalid config\"\n",
    )
    .unwrap_err();
    assert!(e.starts_with("t.toml:17: field `step[1].expect`"), "{e}");
    // An invalid regex is not refused here: the cluster answers it (INVALID_REGULAR_EXPRESSION).
    let sc = parse(
        "\n[[step]]\ndo = \"start_mirror\"\ncluster = \"dst\"\nmirror = \"m1\"\nsource = \"src\"\nexclude_patterns = [\"(\"]\nexpect = \"INVALID_REGULAR_EXPRESSION\"\n",
    )
    .unwrap();
    assert_eq!(sc.steps.len(), 1);
}

/// One step table after the world, as `parse` wants it.
fn step(body: &str) -> Result<Scenario, String> {
    parse(&format!("\n[[step]]\n{body}"))
}

#[test]
fn describe_mirror_steps_refuse_bad_fields_with_line_and_path() {
    // Goal: every new field is checked at parse time, naming the file, line and field.
    let ok = step(
        "do = \"wait_describe_mirror\"\ncluster = \"dst\"\nmirror = \"m1\"\nstate = \"LOG_ALIGNMENT\"\nlag = 0\ntimeout_ms = 5000\n",
    );
    assert!(ok.is_ok(), "{ok:?}");
    let e = step("do = \"describe_mirror\"\ncluster = \"dst\"\nmirror = \"m1\"\ntimeout_ms = 5\n")
        .unwrap_err();
    assert!(
        e.starts_with("t.toml:16: field `step[1].timeout_ms`: describe_mirror checks now"),
        "{e}"
    );
    let e = step(
        "do = \"describe_mirror\"\ncluster = \"dst\"\nmirror = \"m1\"\nstate = \"MIRORING\"\n",
    )
    .unwrap_err();
    assert!(e.starts_with("t.toml:16: field `step[1].state`"), "{e}");
    assert!(e.ends_with("did you mean `MIRRORING`?"), "{e}");
    let e = step("do = \"describe_mirror\"\ncluster = \"dst\"\nmirror = \"m1\"\nlag = \"zero\"\n")
        .unwrap_err();
    assert!(
        e.starts_with("t.toml:16: field `step[1].lag`: invalid type: string \"zero\""),
        "{e}"
    );
    let e = step("do = \"describe_mirror\"\ncluster = \"dst\"\nmirror = \"m1\"\nlagg = 0\n")
        .unwrap_err();
    assert!(e.starts_with("t.toml:16: field `step[1].lagg`"), "{e}");
    assert!(e.ends_with("did you mean `lag`?"), "{e}");
    let e = step(
        "do = \"describe_mirror\"\ncluster = \"dst\"\nmirror = \"m1\"\npartitions = [\"orders-0 RUNNING lag=0\"]\n",
    )
    .unwrap_err();
    assert!(
        e.starts_with("t.toml:16: field `step[1].partitions[0]`: `orders-0 RUNNING lag=0`"),
        "{e}"
    );
    let e =
        step("do = \"wait_describe_mirror\"\ncluster = \"dts\"\nmirror = \"m1\"\n").unwrap_err();
    assert!(e.starts_with("t.toml:14: field `step[1].cluster`"), "{e}");
    assert!(e.ends_with("did you mean `dst`?"), "{e}");
    let e = step("do = \"wait_describe_mirror\"\ncluster = \"dst\"\n").unwrap_err();
    assert!(
        e.contains("field `step[1].mirror`: missing field `mirror`"),
        "{e}"
    );
    let e = step(
        "do = \"describe_mirror\"\ncluster = \"dst\"\nmirror = \"m1\"\nexpect = \"unknown\"\n",
    )
    .unwrap_err();
    assert!(
        e.starts_with("t.toml:16: field `step[1].expect`: `unknown` is not a Kafka error name"),
        "{e}"
    );
}

#[test]
fn list_mirrors_steps_refuse_bad_filters_with_line_and_path() {
    let ok = step(
        "do = \"list_mirrors\"\ncluster = \"dst\"\nsource_clusters = [\"src\"]\ndesired_states = [\"stopped\"]\nmirrors = []\n",
    );
    assert!(ok.is_ok(), "{ok:?}");
    let e = step(
        "do = \"list_mirrors\"\ncluster = \"dst\"\ndesired_states = [\"MIRRORING\", \"PAUSD\"]\nmirrors = []\n",
    )
    .unwrap_err();
    assert!(
        e.starts_with("t.toml:15: field `step[1].desired_states[1]`: `PAUSD`"),
        "{e}"
    );
    assert!(e.ends_with("did you mean `PAUSED`?"), "{e}");
    let e = step(
        "do = \"list_mirrors\"\ncluster = \"dst\"\nsource_clusters = [\"scr\"]\nmirrors = []\n",
    )
    .unwrap_err();
    assert!(
        e.starts_with("t.toml:15: field `step[1].source_clusters[0]`: unknown cluster `scr`"),
        "{e}"
    );
    let e = step("do = \"list_mirrors\"\ncluster = \"dst\"\n").unwrap_err();
    assert!(
        e.contains("field `step[1].mirrors`: missing field `mirrors`"),
        "{e}"
    );
    let e = step("do = \"list_mirrors\"\ncluster = \"dst\"\nmirrors = []\ntimeout_ms = 5\n")
        .unwrap_err();
    assert!(
        e.starts_with("t.toml:16: field `step[1].timeout_ms`: list_mirrors checks now"),
        "{e}"
    );
    let e = step("do = \"wait_list_mirrors\"\ncluster = \"dst\"\nmirrors = \"m1\"\n").unwrap_err();
    assert!(
        e.starts_with("t.toml:15: field `step[1].mirrors`: invalid type"),
        "{e}"
    );
}

#[test]
fn expect_mirror_state_record_refuses_bad_fields_with_line_and_path() {
    let base =
        "do = \"expect_mirror_state_record\"\ncluster = \"dst\"\nmirror = \"m1\"\ntopic = \"t\"\n";
    assert!(step(&format!("{base}state = \"FAILED\"\nretry_attempt = -1\n")).is_ok());
    let e = step(&format!("{base}previous_state = \"MIRRORRING\"\n")).unwrap_err();
    assert!(
        e.starts_with("t.toml:17: field `step[1].previous_state`"),
        "{e}"
    );
    assert!(e.ends_with("did you mean `MIRRORING`?"), "{e}");
    let e = step(&format!("{base}partition = -1\n")).unwrap_err();
    assert!(
        e.starts_with("t.toml:17: field `step[1].partition`: must not be negative"),
        "{e}"
    );
    let e = step(&format!("{base}retry_attempt = 70000\n")).unwrap_err();
    assert!(
        e.starts_with("t.toml:17: field `step[1].retry_attempt`"),
        "{e}"
    );
    let e = step(&format!("{base}state_epok = 1\n")).unwrap_err();
    assert!(e.ends_with("did you mean `state_epoch`?"), "{e}");
    let e = step("do = \"expect_mirror_state_record\"\ncluster = \"dst\"\nmirror = \"m1\"\n")
        .unwrap_err();
    assert!(
        e.contains("field `step[1].topic`: missing field `topic`"),
        "{e}"
    );
}

#[test]
fn truncate_log_create_topic_ids_and_election_targets_are_checked() {
    let ok = step(
        "do = \"truncate_log\"\ncluster = \"src\"\nbroker = \"leader\"\ntopic = \"t\"\noffset = 20\n",
    );
    assert!(ok.is_ok(), "{ok:?}");
    let e =
        step("do = \"truncate_log\"\ncluster = \"dst\"\nbroker = 3\ntopic = \"t\"\noffset = 2\n")
            .unwrap_err();
    assert!(
        e.starts_with("t.toml:15: field `step[1].broker`: broker 3 does not exist in `dst`"),
        "{e}"
    );
    let e = step(
        "do = \"truncate_log\"\ncluster = \"src\"\nbroker = \"boss\"\ntopic = \"t\"\noffset = 2\n",
    )
    .unwrap_err();
    assert!(e.contains("`boss`: expected a broker id"), "{e}");
    let e =
        step("do = \"truncate_log\"\ncluster = \"src\"\nbroker = 1\ntopic = \"t\"\n").unwrap_err();
    assert!(
        e.contains("field `step[1].offset`: missing field `offset`"),
        "{e}"
    );
    // create_topic.topic_id: a cluster's topic or hex digits.
    let ct = "do = \"create_topic\"\ncluster = \"dst\"\ntopic = \"t\"\n";
    assert!(step(&format!("{ct}topic_id = \"src/t\"\n")).is_ok());
    assert!(step(&format!("{ct}topic_id = \"1f\"\n")).is_ok());
    let e = step(&format!("{ct}topic_id = \"scr/t\"\n")).unwrap_err();
    assert!(
        e.starts_with("t.toml:16: field `step[1].topic_id`: unknown cluster `scr`"),
        "{e}"
    );
    assert!(e.ends_with("did you mean `src`?"), "{e}");
    let e = step(&format!("{ct}topic_id = \"xyz\"\n")).unwrap_err();
    assert!(
        e.starts_with("t.toml:16: field `step[1].topic_id`: `xyz`: expected"),
        "{e}"
    );
    let e = step(&format!("{ct}topic_id = \"src/\"\n")).unwrap_err();
    assert!(e.contains("field `step[1].topic_id`"), "{e}");
    // unclean_election.broker and commit_offset / expect_committed_offset leader_epoch.
    let e = step("do = \"unclean_election\"\ncluster = \"dst\"\ntopic = \"t\"\nbroker = 5\n")
        .unwrap_err();
    assert!(
        e.starts_with("t.toml:16: field `step[1].broker`: broker 5 does not exist in `dst`"),
        "{e}"
    );
    let e = step(
        "do = \"expect_committed_offset\"\ncluster = \"dst\"\ngroup = \"g\"\ntopic = \"t\"\nleader_epoch = \"one\"\n",
    )
    .unwrap_err();
    assert!(
        e.starts_with("t.toml:17: field `step[1].leader_epoch`: invalid type"),
        "{e}"
    );
}

#[test]
fn a_bad_step_in_a_repeat_block_names_its_own_line() {
    // Goal: errors inside a copy point at the field's line in the copy's own
    // `[[step.steps]]` table (its second table starts at line 20).
    let e = parse(
        "\n[[step]]\ndo = \"repeat\"\ntimes = 2\n\n[[step.steps]]\ndo = \"sleep\"\nms = 1\n\n[[step.steps]]\ndo = \"crash\"\ncluster = \"dst\"\nbroker = 9\n",
    )
    .unwrap_err();
    assert!(
        e.starts_with("t.toml:23: field `step[1].steps[2].broker`: broker 9 does not exist"),
        "{e}"
    );
}
