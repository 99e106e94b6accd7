//! `mirrorsim chaos`: a sweep over a seed range (or one shard of it), on `--jobs` threads,
//! with output in seed order: a line per failure (or a JSON object per seed), capsules of
//! failing seeds, the summary table, and the known-findings gate.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use super::{CliError, describe_failure, jobs, known, outcome_line, seeds, summary, write_capsule};
use crate::chaos::{ChaosOptions, ChaosOutcome, run_chaos_seed};

/// What `chaos` was asked to do.
pub struct SweepArgs<'a> {
    /// `--seeds`.
    pub seeds: &'a str,
    /// `--shard i/n`.
    pub shard: Option<&'a str>,
    /// `--json`.
    pub json: bool,
    /// Run options (mirror, design, ablation).
    pub opts: ChaosOptions,
    /// `--ablation`, for replay commands.
    pub ablation: Option<&'a str>,
    /// `--check-determinism N`.
    pub check_determinism: Option<u64>,
    /// `--out`: where capsules go.
    pub out: &'a Path,
    /// `--known`: the findings baseline.
    pub known: Option<&'a known::Known>,
    /// `--fresh`: judge failures by the known findings' verdicts, not by seed.
    pub fresh: bool,
    /// `--jobs`, resolved.
    pub jobs: usize,
}

/// One seed's result: its outcome and, when it was run twice, whether the hashes matched.
pub struct SeedResult {
    /// The first run.
    pub outcome: ChaosOutcome,
    /// `Some(true)` when a second run gave the same trace hash.
    pub deterministic: Option<bool>,
}

/// Runs `seed` (twice when `check_determinism` selects it).
#[must_use]
pub fn run_one(seed: u64, opts: &ChaosOptions, check_determinism: Option<u64>) -> SeedResult {
    let outcome = run_chaos_seed(seed, opts);
    let deterministic = check_determinism
        .filter(|n| *n > 0 && seed.is_multiple_of(*n))
        .map(|_| {
            let again = run_chaos_seed(seed, opts);
            let h = |x: &ChaosOutcome| x.report.as_ref().map(|r| r.trace_hash.clone());
            h(&outcome) == h(&again)
        });
    SeedResult {
        outcome,
        deterministic,
    }
}

/// Runs the sweep; returns the exit code.
pub fn run(a: &SweepArgs<'_>) -> Result<i32, CliError> {
    let range = seeds::parse_seeds(a.seeds).map_err(|e| CliError::BadArgument(e.to_string()))?;
    let shard = a
        .shard
        .map(seeds::parse_shard)
        .transpose()
        .map_err(|e| CliError::BadArgument(e.to_string()))?;
    let list = seeds::shard_seeds(range.clone(), shard);
    if a.json {
        println!("{}", header_line(a, &range, shard, list.len()));
    }
    let mut summary = summary::SweepSummary::default();
    let mut checked = Vec::new();
    let mut progress = summary::Progress::new(list.len(), a.json);
    let start = std::time::Instant::now();
    jobs::run_ordered(
        &list,
        a.jobs,
        |seed| run_one(*seed, &a.opts, a.check_determinism),
        |i, r| {
            let o = &r.outcome;
            summary.add(o);
            if r.deterministic.is_some() {
                checked.push(o.seed);
            }
            if r.deterministic == Some(false) {
                summary.nondeterministic.push(o.seed);
            }
            let capsule = (!o.verdict.is_pass())
                .then(|| write_capsule(a.out, o))
                .flatten();
            if a.json {
                let mut line = seed_line(o, capsule.as_deref());
                line["type"] = "seed".into();
                line["deterministic"] = r.deterministic.into();
                println!("{line}");
            } else if !o.verdict.is_pass() {
                progress.interrupt();
                println!("{}", outcome_line(o));
                describe_failure(o, capsule.as_deref(), a.ablation);
            }
            progress.tick(i + 1, !o.verdict.is_pass());
        },
    );
    progress.finish();
    let wall = start.elapsed().as_secs_f64();
    if a.json {
        println!("{}", summary_line(&summary, &checked, wall, a.jobs));
    } else {
        summary.print(wall, a.check_determinism, a.jobs);
    }
    let findings_ok = match a.known {
        None => summary.failed().is_empty(),
        Some(k) => {
            let failed = &summary.kinds;
            let diffs = if a.fresh {
                known::unknown_kinds(k, failed)
            } else {
                known::differences(k, &list, failed)
            };
            if !a.json && a.fresh {
                println!(
                    "fresh seeds      {} failures of known kinds, {} of other kinds",
                    failed.len() - diffs.len(),
                    diffs.len()
                );
                for (seed, v) in failed
                    .iter()
                    .filter(|(s, _)| !diffs.iter().any(|d| d.starts_with(&format!("seed {s}:"))))
                {
                    println!("  seed {seed}: {v} (a known kind)");
                }
            } else if !a.json {
                println!(
                    "baseline         {} known findings in range, {} differences",
                    list.iter().filter(|s| k.contains_key(s)).count(),
                    diffs.len()
                );
                for d in &diffs {
                    println!("  {d}");
                }
            }
            diffs.is_empty()
        }
    };
    let _ = std::io::stdout().flush();
    Ok(if findings_ok && summary.nondeterministic.is_empty() {
        0
    } else {
        1
    })
}

/// The `--json` object of one seed.
#[must_use]
pub fn seed_line(o: &ChaosOutcome, capsule: Option<&Path>) -> serde_json::Value {
    serde_json::json!({
        "seed": o.seed,
        "mirror": o.plan.mirror,
        "design": o.plan.design,
        "verdict": o.verdict.short(),
        "kind": o.kind(),
        "trace_hash": o.report.as_ref().map(|r| r.trace_hash.clone()),
        "sim_seconds": o.report.as_ref().map(|r| r.sim_seconds),
        "events": o.report.as_ref().map(|r| r.events),
        "capsule": capsule.map(|c| c.display().to_string()),
        "detail": o.verdict,
        "site": o.site,
        "mechanisms": o.diagnostics.iter().map(|d| d.invariant.as_str()).collect::<Vec<_>>(),
        "losses": o.losses,
    })
}

/// The first `--json` line: what the sweep is (range, shard, options, seed count), so that
/// `merge` can tell which shards it has and whether they belong to one sweep.
fn header_line(
    a: &SweepArgs<'_>,
    range: &std::ops::Range<u64>,
    shard: Option<(u64, u64)>,
    count: usize,
) -> serde_json::Value {
    serde_json::json!({
        "type": "header",
        "command": "chaos",
        "seeds": a.seeds,
        "range": [range.start, range.end],
        "shard": shard.map(|(i, n)| [i, n]),
        "mirror": a.opts.mirror,
        "design": a.opts.design,
        "ablation": a.ablation,
        "check_determinism": a.check_determinism,
        "count": count,
        "build": crate::chaos::build_id(),
    })
}

/// The last `--json` line: the sweep finished (a file without it is truncated), with its
/// verdict counts and determinism results.
fn summary_line(
    s: &summary::SweepSummary,
    checked: &[u64],
    wall: f64,
    jobs: usize,
) -> serde_json::Value {
    let counts: BTreeMap<&str, usize> = s
        .by_verdict
        .iter()
        .map(|(v, seeds)| (v.as_str(), seeds.len()))
        .collect();
    serde_json::json!({
        "type": "summary",
        "count": s.total,
        "by_verdict": counts,
        "failed": s.failed(),
        "determinism_checked": checked,
        "nondeterministic": s.nondeterministic,
        "sim_seconds": s.sim_seconds,
        "wall_seconds": wall,
        "jobs": jobs,
        "peak_rss_mib": super::memory::peak_resident_mib(),
    })
}
