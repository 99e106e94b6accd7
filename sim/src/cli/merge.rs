//! `mirrorsim merge FILE...`: combines the `--json` outputs of `chaos --shard i/n` runs (one
//! per machine or pod) into the summary of the whole sweep: verdict counts, failing seeds and
//! their capsules, determinism results, and a sweep hash over every seed's trace hash (equal
//! to the unsharded run's). It refuses inputs that are not one complete sweep: a truncated
//! file, shards that overlap or are missing, or shards of different sweeps, each with a
//! one-line error (exit 2).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;

use super::{CliError, known, seeds};
use crate::trace::TraceHash;

/// What a shard's header says about its sweep (every shard of one sweep agrees on these).
#[derive(Clone, Debug, PartialEq)]
struct Sweep {
    seeds: String,
    range: (u64, u64),
    mirror: bool,
    design: Option<String>,
    ablation: Option<String>,
    check_determinism: Option<u64>,
    build: String,
}

/// One seed's line.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
struct Row {
    seed: u64,
    verdict: String,
    /// The baseline kind (`ChaosOutcome::kind`; the verdict in files written before it).
    kind: String,
    trace_hash: Option<String>,
    capsule: Option<String>,
    deterministic: Option<bool>,
    sim_seconds: f64,
}

/// One shard file, read and checked.
struct Shard {
    path: String,
    sweep: Sweep,
    shard: (u64, u64),
    rows: Vec<Row>,
}

fn bad(msg: String) -> CliError {
    CliError::BadArgument(msg)
}

/// Runs the command.
pub fn run(files: &[PathBuf], json: bool, known: Option<&known::Known>) -> Result<i32, CliError> {
    if files.is_empty() {
        return Err(bad("merge: no files given".into()));
    }
    let shards = files
        .iter()
        .map(read_shard)
        .collect::<Result<Vec<_>, _>>()?;
    check_complete(&shards)?;
    let sweep = shards[0].sweep.clone();
    let mut rows: Vec<Row> = shards.into_iter().flat_map(|s| s.rows).collect();
    rows.sort_by_key(|r| r.seed);
    let merged = Merged::of(&sweep, files.len(), &rows);
    let mut ok = merged.failed.is_empty();
    let mut diffs = Vec::new();
    if let Some(k) = known {
        let ran: Vec<u64> = rows.iter().map(|r| r.seed).collect();
        let failed: BTreeMap<u64, String> = merged
            .failed
            .iter()
            .map(|r| (r.seed, r.kind.clone()))
            .collect();
        diffs = known::differences(k, &ran, &failed);
        ok = diffs.is_empty();
    }
    ok &= merged.nondeterministic.is_empty();
    if json {
        let mut v = serde_json::to_value(&merged).unwrap_or_default();
        if known.is_some() {
            v["baseline_differences"] = diffs.into();
        }
        println!("{v}");
    } else {
        merged.print(&sweep);
        if known.is_some() {
            println!("baseline differences {}", diffs.len());
            for d in &diffs {
                println!("  {d}");
            }
        }
    }
    Ok(i32::from(!ok))
}

fn read_shard(path: &PathBuf) -> Result<Shard, CliError> {
    let name = path.display().to_string();
    let text =
        std::fs::read_to_string(path).map_err(|e| bad(format!("{name}: cannot read: {e}")))?;
    parse_shard(&text, &name)
}

fn parse_shard(text: &str, name: &str) -> Result<Shard, CliError> {
    let lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| (i + 1, l))
        .collect();
    let parse = |(n, l): (usize, &str)| -> Result<Value, CliError> {
        let v: Value = serde_json::from_str(l)
            .map_err(|e| bad(format!("{name}:{n}: not JSON (truncated?): {e}")))?;
        if v.is_object() {
            Ok(v)
        } else {
            Err(bad(format!(
                "{name}:{n}: expected one JSON object per line"
            )))
        }
    };
    let Some(&first) = lines.first() else {
        return Err(bad(format!("{name}: empty: no header line")));
    };
    let header = parse(first)?;
    if header["type"] != "header" {
        return Err(bad(format!(
            "{name}:{}: expected the sweep's header line (`chaos --json` of this build)",
            first.0
        )));
    }
    let (sweep, shard, count) = read_header(&header)
        .ok_or_else(|| bad(format!("{name}:{}: malformed header line", first.0)))?;
    let mut rows = Vec::new();
    let mut summary = None;
    for &(n, l) in &lines[1..] {
        let v = parse((n, l))?;
        if summary.is_some() {
            return Err(bad(format!("{name}:{n}: a line after the summary line")));
        }
        match v["type"].as_str() {
            Some("summary") => summary = Some((n, v)),
            Some("seed") => rows
                .push(read_row(&v).ok_or_else(|| bad(format!("{name}:{n}: malformed seed line")))?),
            _ => return Err(bad(format!("{name}:{n}: expected a seed or summary line"))),
        }
    }
    let last = lines.last().map_or(0, |l| l.0);
    let Some((n, summary)) = summary else {
        return Err(bad(format!(
            "{name}: truncated: no summary line after line {last} (the sweep did not finish)"
        )));
    };
    let want = seeds::shard_seeds(sweep.range.0..sweep.range.1, Some(shard));
    let got: Vec<u64> = rows.iter().map(|r| r.seed).collect();
    if summary["count"].as_u64() != Some(count as u64) || got.len() != count {
        return Err(bad(format!(
            "{name}:{n}: truncated: {} seed lines, the header says {count}",
            got.len()
        )));
    }
    if got != want {
        let stray = got.iter().find(|s| !want.contains(s));
        return Err(bad(match stray {
            Some(s) => format!(
                "{name}: seed {s} is not in shard {}/{} of {}",
                shard.0, shard.1, sweep.seeds
            ),
            None => format!(
                "{name}: the seeds are not those of shard {}/{} of {}",
                shard.0, shard.1, sweep.seeds
            ),
        }));
    }
    Ok(Shard {
        path: name.to_string(),
        sweep,
        shard,
        rows,
    })
}

fn read_header(v: &Value) -> Option<(Sweep, (u64, u64), usize)> {
    let range = v["range"].as_array()?;
    let shard = match &v["shard"] {
        Value::Null => (0, 1),
        Value::Array(a) => (a.first()?.as_u64()?, a.get(1)?.as_u64()?),
        _ => return None,
    };
    let text = |k: &str| v[k].as_str().map(str::to_string);
    Some((
        Sweep {
            seeds: text("seeds")?,
            range: (range.first()?.as_u64()?, range.get(1)?.as_u64()?),
            mirror: v["mirror"].as_bool()?,
            design: text("design"),
            ablation: text("ablation"),
            check_determinism: v["check_determinism"].as_u64(),
            build: text("build")?,
        },
        shard,
        usize::try_from(v["count"].as_u64()?).ok()?,
    ))
}

fn read_row(v: &Value) -> Option<Row> {
    Some(Row {
        seed: v["seed"].as_u64()?,
        verdict: v["verdict"].as_str()?.to_string(),
        kind: v["kind"]
            .as_str()
            .or_else(|| v["verdict"].as_str())?
            .to_string(),
        trace_hash: v["trace_hash"].as_str().map(str::to_string),
        capsule: v["capsule"].as_str().map(str::to_string),
        deterministic: v["deterministic"].as_bool(),
        sim_seconds: v["sim_seconds"].as_f64().unwrap_or(0.0),
    })
}

/// The shards are one sweep, each shard once, none missing.
fn check_complete(shards: &[Shard]) -> Result<(), CliError> {
    let first = &shards[0];
    let n = first.shard.1;
    let mut by_index: BTreeMap<u64, &str> = BTreeMap::new();
    for s in shards {
        if s.sweep != first.sweep {
            return Err(bad(format!(
                "{}: not the same sweep as {} (seeds, mirror, design, ablation, determinism or build differ)",
                s.path, first.path
            )));
        }
        if s.shard.1 != n {
            return Err(bad(format!(
                "{}: shard {}/{}, but {} is shard {}/{n}: mixed shard counts",
                s.path, s.shard.0, s.shard.1, first.path, first.shard.0
            )));
        }
        if let Some(other) = by_index.insert(s.shard.0, &s.path) {
            return Err(bad(format!(
                "overlapping shards: {other} and {} are both shard {}/{n}",
                s.path, s.shard.0
            )));
        }
    }
    let missing: Vec<String> = (0..n)
        .filter(|i| !by_index.contains_key(i))
        .map(|i| format!("{i}/{n}"))
        .collect();
    if !missing.is_empty() {
        return Err(bad(format!(
            "missing shards {} of --seeds {} (have {})",
            missing.join(" "),
            first.sweep.seeds,
            by_index
                .keys()
                .map(|i| format!("{i}/{n}"))
                .collect::<Vec<_>>()
                .join(" ")
        )));
    }
    Ok(())
}

/// The merged summary; equal for any sharding of the same sweep.
#[derive(Debug, serde::Serialize)]
struct Merged {
    seeds: String,
    mirror: bool,
    design: Option<String>,
    ablation: Option<String>,
    shards: usize,
    count: usize,
    by_verdict: BTreeMap<String, usize>,
    failed: Vec<Row>,
    check_determinism: Option<u64>,
    determinism_checked: usize,
    nondeterministic: Vec<u64>,
    sim_seconds: f64,
    /// FNV-1a over `seed verdict trace_hash` lines in seed order.
    sweep_hash: String,
}

impl Merged {
    fn of(sweep: &Sweep, shards: usize, rows: &[Row]) -> Merged {
        let mut by_verdict = BTreeMap::new();
        let mut hash = TraceHash::new();
        for r in rows {
            *by_verdict.entry(r.verdict.clone()).or_insert(0) += 1;
            let h = r.trace_hash.as_deref().unwrap_or("-");
            hash.update(format!("{} {} {h}\n", r.seed, r.verdict).as_bytes());
        }
        Merged {
            seeds: sweep.seeds.clone(),
            mirror: sweep.mirror,
            design: sweep.design.clone(),
            ablation: sweep.ablation.clone(),
            shards,
            count: rows.len(),
            by_verdict,
            failed: rows
                .iter()
                .filter(|r| r.verdict != "pass")
                .cloned()
                .collect(),
            check_determinism: sweep.check_determinism,
            determinism_checked: rows.iter().filter(|r| r.deterministic.is_some()).count(),
            nondeterministic: rows
                .iter()
                .filter(|r| r.deterministic == Some(false))
                .map(|r| r.seed)
                .collect(),
            // Summed in seed order, so the float sum is the same for any sharding.
            sim_seconds: rows.iter().map(|r| r.sim_seconds).sum(),
            sweep_hash: hash.hex(),
        }
    }

    fn print(&self, sweep: &Sweep) {
        println!(
            "merged {} shard{} of chaos{} --seeds {}{}{}: {} seeds",
            self.shards,
            if self.shards == 1 { "" } else { "s" },
            if sweep.mirror { " --mirror" } else { "" },
            self.seeds,
            sweep
                .design
                .as_ref()
                .map(|d| format!(" --design {d}"))
                .unwrap_or_default(),
            sweep
                .ablation
                .as_ref()
                .map(|a| format!(" --ablation {a}"))
                .unwrap_or_default(),
            self.count
        );
        println!();
        println!("{:<40} {:>7}", "verdict", "count");
        println!("{}", "-".repeat(48));
        for (v, n) in &self.by_verdict {
            println!("{v:<40} {n:>7}");
        }
        println!("{}", "-".repeat(48));
        println!("{:<40} {:>7}", "failed", self.failed.len());
        if let Some(n) = self.check_determinism {
            println!(
                "{:<40} {:>7}  checked {}{}",
                format!("determinism (every {n}th seed twice)"),
                self.nondeterministic.len(),
                self.determinism_checked,
                if self.nondeterministic.is_empty() {
                    String::new()
                } else {
                    format!(", differing: {:?}", self.nondeterministic)
                }
            );
        }
        println!(
            "simulated {:.0} s; sweep hash {}",
            self.sim_seconds, self.sweep_hash
        );
        for r in &self.failed {
            println!(
                "  seed {:>6} {:<34} {}",
                r.seed,
                r.verdict,
                r.capsule.as_deref().unwrap_or("(no capsule)")
            );
        }
    }
}

#[cfg(test)]
#[path = "merge_test.rs"]
mod tests;
