//! `mirrorsim triage` (the built binary): groups a sweep's failures by signature, from its
//! `--json` lines or by running the seeds itself, shrinks one representative per group into a
//! capsule that replays to the same failure, and refuses bad input with one line and exit 2.
//! The failures come from the planted bug (`--ablation hw-ignores-isr`), so they do not
//! depend on the state of the model.

use std::path::{Path, PathBuf};

use serde_json::Value;

mod support;

use support::mirrorsim;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mirrorsim-triage-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn json_lines(s: &str) -> Vec<Value> {
    s.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// (verdict, site, seeds) of each group.
fn groups(stdout: &str) -> Vec<(String, Value, Vec<u64>)> {
    let mut g: Vec<_> = json_lines(stdout)
        .into_iter()
        .map(|v| {
            let seeds: Vec<u64> = v["seeds"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_u64().unwrap())
                .collect();
            (
                v["verdict"].as_str().unwrap().to_string(),
                v["site"].clone(),
                seeds,
            )
        })
        .collect();
    g.sort_by(|a, b| a.2.cmp(&b.2));
    g
}

#[test]
fn triage_groups_a_sweep_and_shrinks_a_replayable_representative() {
    let dir = scratch("groups");
    let out = dir.display().to_string();
    let (code, sweep, _) = mirrorsim(&[
        "chaos",
        "--seeds",
        "1..21",
        "--ablation",
        "hw-ignores-isr",
        "--json",
        "--out",
        &out,
    ]);
    assert_eq!(code, 1, "the planted bug is found");
    let file = dir.join("sweep.jsonl");
    std::fs::write(&file, &sweep).unwrap();
    let failed: Vec<u64> = json_lines(&sweep)
        .iter()
        .filter(|v| v["verdict"].as_str().is_some_and(|x| x != "pass"))
        .map(|v| v["seed"].as_u64().unwrap())
        .collect();
    assert!(!failed.is_empty());

    // From the file, shrinking.
    let shrunk_dir = dir.join("min").display().to_string();
    let (code, stdout, stderr) = mirrorsim(&[
        "triage",
        file.to_str().unwrap(),
        "--ablation",
        "hw-ignores-isr",
        "--json",
        "--jobs",
        "2",
        "--max-runs",
        "30",
        "--out",
        &shrunk_dir,
    ]);
    assert_eq!(code, 1, "{stderr}");
    let from_file = groups(&stdout);
    let mut all: Vec<u64> = from_file.iter().flat_map(|g| g.2.clone()).collect();
    all.sort_unstable();
    assert_eq!(all, failed, "every failure in exactly one group");
    for g in json_lines(&stdout) {
        assert_eq!(g["reproduces"], true, "{g}");
        assert_eq!(g["representative"], g["seeds"][0]);
        assert!(g["faults"].is_array(), "{g}");
        let capsule = g["capsule"].as_str().expect("a shrunk capsule");
        assert!(Path::new(capsule).exists(), "{capsule}");
        assert!(g["replay"].as_str().unwrap().contains(capsule));
        // The representative's capsule fails the same way.
        let (code, replay, _) = mirrorsim(&["replay", capsule, "--ablation", "hw-ignores-isr"]);
        assert_eq!(code, 1);
        let verdict = g["verdict"].as_str().unwrap();
        assert!(
            replay.lines().any(|l| l.contains(verdict)),
            "{verdict} not in the replay of {capsule}"
        );
    }

    // Running the seeds itself gives the same groups.
    let (code, stdout, stderr) = mirrorsim(&[
        "triage",
        "--seeds",
        "1..21",
        "--ablation",
        "hw-ignores-isr",
        "--no-shrink",
        "--json",
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(groups(&stdout), from_file);
}

#[test]
fn triage_refuses_missing_and_malformed_files_with_one_line() {
    let dir = scratch("bad");
    let missing = dir.join("nope.jsonl");
    let (code, _, stderr) = mirrorsim(&["triage", missing.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("nope.jsonl"), "{stderr}");

    let bad = dir.join("bad.jsonl");
    std::fs::write(
        &bad,
        "{\"seed\":1,\"verdict\":\"pass\",\"mirror\":true}\n{\"seed\":2,\"verdict\":\n",
    )
    .unwrap();
    let (code, _, stderr) = mirrorsim(&["triage", bad.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("bad.jsonl:2:"), "{stderr}");

    let (code, stdout, _) = mirrorsim(&["triage", "--seeds", "1..3", "--no-shrink"]);
    assert_eq!(code, 0, "single-cluster seeds 1, 2 pass: {stdout}");
    assert!(stdout.contains("no failures"));
}
