//! A sweep split across machines: 4 shards run as separate processes of the built binary
//! (`chaos --shard i/4 --json`), merged with `mirrorsim merge`, give exactly the summary of one
//! unsharded run of the same seeds (verdict counts, failing seeds and capsules, determinism
//! results, sweep hash over every seed's trace hash); truncated, overlapping and missing
//! shards are refused with one line and exit 2.

use std::path::{Path, PathBuf};

mod support;

use support::mirrorsim;

const SEEDS: &str = "1..33";

/// Runs `chaos` over [`SEEDS`] (one shard of it when `shard` is given) into `file`.
fn sweep(dir: &Path, shard: Option<&str>, file: &str) -> PathBuf {
    let out = dir.join("capsules").display().to_string();
    let mut args = vec![
        "chaos",
        "--mirror",
        "--seeds",
        SEEDS,
        "--check-determinism",
        "4",
        "--json",
        "--jobs",
        "1",
        "--out",
        &out,
    ];
    if let Some(s) = shard {
        args.extend(["--shard", s]);
    }
    let (code, stdout, stderr) = mirrorsim(&args);
    assert!(code == 0 || code == 1, "exit {code}: {stderr}");
    let path = dir.join(file);
    std::fs::write(&path, stdout).unwrap();
    path
}

fn merge(files: &[&Path]) -> (i32, String, String) {
    let mut args = vec!["merge", "--json"];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    mirrorsim(&args)
}

#[test]
fn four_shard_processes_merge_to_the_unsharded_run() {
    let dir = std::env::temp_dir().join(format!("mirrorsim-merge-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // The shards run as separate processes, at once, as on separate machines.
    let shards: Vec<PathBuf> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|i| {
                let dir = &dir;
                s.spawn(move || sweep(dir, Some(&format!("{i}/4")), &format!("shard-{i}.jsonl")))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let whole = sweep(&dir, None, "whole.jsonl");

    let refs: Vec<&Path> = shards.iter().map(PathBuf::as_path).collect();
    let (code_sharded, sharded, stderr) = merge(&refs);
    assert!(code_sharded == 0 || code_sharded == 1, "{stderr}");
    let (code_whole, single, _) = merge(&[&whole]);
    assert_eq!(code_sharded, code_whole);
    let mut a: serde_json::Value = serde_json::from_str(&sharded).unwrap();
    let b: serde_json::Value = serde_json::from_str(&single).unwrap();
    assert_eq!(a["shards"], 4);
    assert_eq!(b["shards"], 1);
    assert_eq!(a["count"], 32);
    assert_eq!(a["determinism_checked"], 8);
    a["shards"] = 1.into();
    assert_eq!(a, b, "merged shards differ from the unsharded run");

    // A shard cut mid-line, a shard given twice, a shard left out: one line, exit 2.
    let text = std::fs::read_to_string(&shards[3]).unwrap();
    let cut = dir.join("cut.jsonl");
    std::fs::write(&cut, &text[..text.len() * 2 / 3]).unwrap();
    for (files, what) in [
        (vec![refs[0], refs[1], refs[2], cut.as_path()], "cut.jsonl"),
        (
            vec![refs[0], refs[1], refs[2], refs[2]],
            "overlapping shards",
        ),
        (vec![refs[0], refs[1], refs[3]], "missing shards 2/4"),
    ] {
        let (code, _, stderr) = merge(&files);
        assert_eq!(code, 2, "{what}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(what), "{what}: {stderr}");
    }
}
