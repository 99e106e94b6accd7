//! `mirrorsim run SCENARIO...`: plays scenario files (or every `*.toml` in a directory) and
//! prints one line per scenario, the failing step or invariant, and the trace on request.

use std::path::{Path, PathBuf};

use super::CliError;
use crate::scenario::{RunOptions, Scenario, ScenarioOutcome, files_in, run_scenario};

/// Expands directories to their `*.toml` files, keeping the order given.
pub fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>, CliError> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            out.extend(files_in(p).map_err(|e| {
                CliError::BadArgument(format!("{}: cannot list: {e}", p.display()))
            })?);
        } else {
            out.push(p.clone());
        }
    }
    if out.is_empty() {
        return Err(CliError::BadArgument("no scenario files given".into()));
    }
    Ok(out)
}

/// Parses every file first, so a bad file fails the command (exit 2) before anything runs.
pub fn load_all(paths: &[PathBuf]) -> Result<Vec<Scenario>, CliError> {
    paths
        .iter()
        .map(|p| Scenario::load(p).map_err(|e| CliError::BadArgument(e.to_string())))
        .collect()
}

/// One summary line.
#[must_use]
pub fn outcome_line(o: &ScenarioOutcome) -> String {
    let (secs, hash) = o.report.as_ref().map_or((0.0, "-".to_string()), |r| {
        (r.sim_seconds, r.trace_hash.clone())
    });
    let verdict = if o.passed() { "pass" } else { "FAIL" };
    let broke = o
        .violation
        .as_ref()
        .map(|v| format!(" broke={}", v.invariant))
        .unwrap_or_default();
    format!(
        "{verdict:<4} {:<48} design={:<24} sim={secs:>6.1}s hash={hash}{broke}",
        o.name, o.design
    )
}

/// Runs the command; returns the exit code.
pub fn run(
    paths: &[PathBuf],
    design: Option<&str>,
    trace: bool,
    verbose: bool,
    json: bool,
    jobs: usize,
) -> Result<i32, CliError> {
    let design = design
        .map(mirror_core::mirror::Design::parse)
        .transpose()
        .map_err(|e| CliError::BadArgument(format!("--design: {e}")))?;
    let scenarios = load_all(&expand(paths)?)?;
    let opts = RunOptions {
        design,
        verbose,
        tap: None,
    };
    let mut failed = 0;
    super::jobs::run_ordered(
        &scenarios,
        jobs,
        |sc| run_scenario(sc, &opts),
        |_, o| {
            if trace || verbose {
                for l in o.report.iter().flat_map(|r| r.lines.iter()) {
                    println!("{l}");
                }
            }
            if json {
                println!(
                    "{}",
                    serde_json::json!({
                        "scenario": o.name,
                        "file": o.file,
                        "design": o.design,
                        "seed": o.seed,
                        "passed": o.passed(),
                        "verdict": o.verdict,
                        "violation": o.violation,
                        "mechanisms": o.diagnostics,
                        "trace_hash": o.report.as_ref().map(|r| r.trace_hash.clone()),
                        "sim_seconds": o.report.as_ref().map(|r| r.sim_seconds),
                        "steps": o.steps,
                    })
                );
            } else {
                println!("{}", outcome_line(&o));
                if !o.passed() {
                    describe(&o, Path::new(&o.file));
                }
            }
            if !o.passed() {
                failed += 1;
            }
        },
    );
    if !json && scenarios.len() > 1 {
        println!();
        println!(
            "{} scenarios: {} passed, {failed} failed",
            scenarios.len(),
            scenarios.len() - failed
        );
    }
    Ok(i32::from(failed > 0))
}

fn describe(o: &ScenarioOutcome, file: &Path) {
    if let crate::scenario::ScenarioVerdict::Fail { reason } = &o.verdict {
        println!("     {reason}");
    }
    if let Some(v) = &o.violation {
        println!("     {v}");
    }
    println!(
        "     replay: cargo run --release -- run {} --trace",
        file.display()
    );
}
