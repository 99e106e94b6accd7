use super::*;

/// A shard file of `--seeds 1..9 --shard i/n` as `chaos --json` writes it; `cut` drops that
/// many lines from the end.
fn shard_text(i: u64, n: u64, cut: usize) -> String {
    let seeds = seeds::shard_seeds(1..9, Some((i, n)));
    let mut lines = vec![format!(
        r#"{{"type":"header","command":"chaos","seeds":"1..9","range":[1,9],"shard":[{i},{n}],"mirror":true,"design":null,"ablation":null,"check_determinism":2,"count":{},"build":"b"}}"#,
        seeds.len()
    )];
    for s in &seeds {
        let verdict = if *s == 5 { "liveness" } else { "pass" };
        let det = if s % 2 == 0 { "true" } else { "null" };
        lines.push(format!(
            r#"{{"type":"seed","seed":{s},"verdict":"{verdict}","trace_hash":"{s:016x}","sim_seconds":1.5,"capsule":null,"deterministic":{det}}}"#
        ));
    }
    lines.push(format!(r#"{{"type":"summary","count":{}}}"#, seeds.len()));
    lines.truncate(lines.len() - cut);
    lines.join("\n") + "\n"
}

fn shard(i: u64, n: u64) -> Shard {
    parse_shard(&shard_text(i, n, 0), &format!("s{i}.jsonl")).unwrap()
}

#[test]
fn shards_merge_to_what_the_unsharded_sweep_gives() {
    // Goal: any complete sharding gives the same counts, failures, determinism results and
    // sweep hash as the single file.
    let merge = |shards: Vec<Shard>| {
        check_complete(&shards).unwrap();
        let sweep = shards[0].sweep.clone();
        let mut rows: Vec<Row> = shards.into_iter().flat_map(|s| s.rows).collect();
        rows.sort_by_key(|r| r.seed);
        let mut m = serde_json::to_value(Merged::of(&sweep, 1, &rows)).unwrap();
        m["shards"] = 0.into();
        m
    };
    let one = merge(vec![shard(0, 1)]);
    assert_eq!(one["count"], 8);
    assert_eq!(one["by_verdict"]["liveness"], 1);
    assert_eq!(one["failed"][0]["seed"], 5);
    assert_eq!(one["determinism_checked"], 4);
    assert_eq!(
        merge(vec![shard(2, 4), shard(0, 4), shard(3, 4), shard(1, 4)]),
        one
    );
    assert_eq!(merge(vec![shard(1, 3), shard(0, 3), shard(2, 3)]), one);
}

#[test]
fn incomplete_or_foreign_shards_are_refused_with_one_line() {
    // Goal: truncation (a cut line, a missing summary), overlap, gaps and mixing are each a
    // one-line error naming the file or the shards.
    let err = |r: Result<(), CliError>| r.unwrap_err().to_string();
    let cut = parse_shard(&shard_text(0, 2, 1), "a.jsonl")
        .err()
        .unwrap()
        .to_string();
    assert!(
        cut.starts_with("a.jsonl: truncated: no summary line"),
        "{cut}"
    );
    let half = shard_text(0, 2, 0);
    let partial = &half[..half.len() - 20];
    let e = parse_shard(partial, "a.jsonl").err().unwrap().to_string();
    assert!(e.starts_with("a.jsonl:") && e.contains("not JSON"), "{e}");
    let whole = shard_text(0, 2, 0);
    let mut short = whole.lines().collect::<Vec<_>>();
    short.remove(2);
    let e = parse_shard(&short.join("\n"), "a.jsonl")
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("truncated: 3 seed lines, the header says 4"),
        "{e}"
    );
    let e = err(check_complete(&[shard(0, 2), shard(0, 2)]));
    assert!(e.starts_with("overlapping shards:"), "{e}");
    let e = err(check_complete(&[shard(0, 3), shard(2, 3)]));
    assert!(
        e.starts_with("missing shards 1/3 of --seeds 1..9 (have 0/3 2/3)"),
        "{e}"
    );
    let e = err(check_complete(&[shard(0, 2), shard(1, 3)]));
    assert!(e.contains("mixed shard counts"), "{e}");
    let mut other = shard(1, 2);
    other.sweep.mirror = false;
    let e = err(check_complete(&[shard(0, 2), other]));
    assert!(e.contains("not the same sweep"), "{e}");
    for e in [cut, e] {
        assert!(!e.contains('\n'));
    }
}
