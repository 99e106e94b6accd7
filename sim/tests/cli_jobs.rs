//! `--jobs N` changes nothing but the wall time: the built binary's output with `--jobs 2`
//! equals `--jobs 1` line for line (same seeds in the same order, same verdicts, same trace
//! hashes) for `chaos`, `compare` and `run`.

mod support;

/// `(exit code, stdout)` of the built binary.
fn mirrorsim(args: &[&str]) -> (i32, String) {
    let (code, stdout, _) = support::mirrorsim(args);
    (code, stdout)
}

/// The JSON lines of one seed each (a sweep's header and summary lines carry wall times).
fn seed_lines(stdout: &str) -> Vec<&str> {
    stdout
        .lines()
        .filter(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("one JSON object per line");
            v.get("seed").is_some() && v.get("verdict").is_some()
        })
        .collect()
}

fn out_dir(name: &str) -> String {
    let dir =
        std::env::temp_dir().join(format!("mirrorsim-cli-jobs-{}-{name}", std::process::id()));
    dir.display().to_string()
}

#[test]
fn chaos_with_two_jobs_gives_the_output_and_hashes_of_one() {
    for (extra, seeds) in [(&["--mirror"][..], "1..41"), (&[][..], "1..21")] {
        let mut lines = Vec::new();
        for jobs in ["1", "2"] {
            let out = out_dir(&format!("chaos-{jobs}"));
            let mut args = vec![
                "chaos",
                "--seeds",
                seeds,
                "--json",
                "--check-determinism",
                "5",
                "--jobs",
                jobs,
                "--out",
                &out,
            ];
            args.extend_from_slice(extra);
            let (code, stdout) = mirrorsim(&args);
            assert!(code == 0 || code == 1, "exit {code}");
            let seeds: Vec<String> = seed_lines(&stdout)
                .into_iter()
                .map(|l| l.replace(&out, "OUT"))
                .collect();
            lines.push(seeds);
        }
        assert!(lines[0].len() >= 20, "{:?}", lines[0]);
        assert!(lines[0].iter().all(|l| l.contains("\"trace_hash\":\"")));
        assert_eq!(lines[0], lines[1], "{extra:?} {seeds}");
    }
}

#[test]
fn compare_and_run_with_two_jobs_print_what_one_job_prints() {
    let compare = |jobs: &str| {
        let out = out_dir(&format!("compare-{jobs}"));
        let (code, stdout) = mirrorsim(&[
            "compare",
            "--designs",
            "seed,early",
            "--seeds",
            "1..9",
            "--no-shrink",
            "--json",
            "--jobs",
            jobs,
            "--out",
            &out,
        ]);
        assert!(code == 0 || code == 1, "exit {code}");
        stdout.replace(&out, "OUT")
    };
    assert_eq!(compare("1"), compare("2"));
    let run = |jobs: &str| {
        let (code, stdout) = mirrorsim(&["run", "scenarios/", "--json", "--jobs", jobs]);
        assert_eq!(code, 0, "{stdout}");
        stdout
    };
    let one = run("1");
    assert!(one.lines().count() > 40);
    assert_eq!(one, run("2"));
}
