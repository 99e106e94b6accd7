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
    let e = parse("\n[[step]]\ndo = \"explode\"\n").unwrap_err();
    assert!(e.starts_with("t.toml:12") && e.contains("explode"), "{e}");
    let e = parse("\n[[step]]\ndo = \"sleep\"\nms = 1\nsecs = 2\n").unwrap_err();
    assert!(e.starts_with("t.toml:12") && e.contains("secs"), "{e}");
}

#[test]
fn semantic_errors_name_the_step_field() {
    let e = parse("\n[[step]]\ndo = \"crash\"\ncluster = \"nowhere\"\nbroker = 1\n").unwrap_err();
    assert!(e.starts_with("t.toml:12: field `step[1].cluster`"), "{e}");
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
