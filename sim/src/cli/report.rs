//! `mirrorsim report TARGET`: replays a chaos seed or a capsule with the timeline recorder on
//! and writes one self-contained HTML file (product §7).

use std::path::{Path, PathBuf};

use super::CliError;
use crate::chaos::{ChaosOptions, ChaosPlan, Verdict, run_plan};
use crate::report::{RunSummary, Tap, render};

/// A run to replay: a seed (drawn as a single-cluster or mirror plan) or a capsule file.
pub(crate) fn load_plan(target: &str, mirror: bool) -> Result<ChaosPlan, CliError> {
    if let Ok(seed) = target.parse::<u64>() {
        return Ok(if mirror {
            ChaosPlan::mirror(seed)
        } else {
            ChaosPlan::single_cluster(seed)
        });
    }
    let text = std::fs::read_to_string(target).map_err(|e| CliError::BadCapsule {
        path: target.to_string(),
        reason: e.to_string(),
    })?;
    serde_json::from_str(&text).map_err(|e| CliError::BadCapsule {
        path: target.to_string(),
        reason: format!("line {} column {}: {e}", e.line(), e.column()),
    })
}

/// Options shared by `report` and `dump`: the planted bug and the KIP-1279 design.
pub(crate) fn run_options(
    ablation: Option<&str>,
    design: Option<&str>,
) -> Result<ChaosOptions, CliError> {
    let mut opts = super::options(ablation)?;
    if let Some(d) = design {
        mirror_core::mirror::Design::parse(d)
            .map_err(|e| CliError::BadArgument(format!("--design `{d}`: {e}")))?;
        opts.design = Some(d.to_string());
    }
    Ok(opts)
}

/// Runs `report`; returns the exit code (0 the run passed, 1 it failed; the file is written
/// either way).
pub fn run(
    target: &str,
    mirror: bool,
    design: Option<&str>,
    ablation: Option<&str>,
    out: Option<&Path>,
) -> Result<i32, CliError> {
    if std::path::Path::new(target)
        .extension()
        .is_some_and(|e| e == "toml")
    {
        return run_scenario_report(target, design, out);
    }
    let plan = load_plan(target, mirror)?;
    let mut opts = run_options(ablation, design)?;
    let tap = Tap::recording();
    opts.tap = Some(tap.clone());
    let seed = plan.seed;
    let o = run_plan(plan, &opts);
    let violation = match &o.verdict {
        Verdict::Violation(v) => Some(v),
        _ => None,
    };
    let timeline = o
        .report
        .as_ref()
        .and_then(|r| tap.timeline(r, violation))
        .unwrap_or_default();
    let title = if target.parse::<u64>().is_ok() {
        format!(
            "chaos seed {seed}{}",
            if o.plan.mirror { " (mirror)" } else { "" }
        )
    } else {
        format!("capsule {target}")
    };
    let summary = RunSummary::from_chaos(&title, design.unwrap_or("seed"), &o);
    let html = render(&timeline, &summary);
    let path = out.map_or_else(
        || PathBuf::from(format!("target/mirrorsim/report-{seed}.html")),
        Path::to_path_buf,
    );
    write_file(&path, html.as_bytes())?;
    println!(
        "{}  ({} bytes, {} lanes, verdict {})",
        path.display(),
        html.len(),
        timeline.lanes.len(),
        o.verdict.short()
    );
    Ok(i32::from(!o.verdict.is_pass()))
}

/// Writes `bytes` to `path`, creating its directory. An unwritable path is bad input
/// (`--out`), exit code 2.
pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    let io = |p: &Path, e: std::io::Error| {
        CliError::BadArgument(format!("cannot write {}: {e}", p.display()))
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    }
    std::fs::write(path, bytes).map_err(|e| io(path, e))
}

/// `report scenarios/x.toml`: the timeline of a scenario run.
fn run_scenario_report(
    target: &str,
    design: Option<&str>,
    out: Option<&Path>,
) -> Result<i32, CliError> {
    let sc = crate::scenario::Scenario::load(Path::new(target))
        .map_err(|e| CliError::BadArgument(e.to_string()))?;
    let design = design
        .map(mirror_core::mirror::Design::parse)
        .transpose()
        .map_err(|e| CliError::BadArgument(format!("--design: {e}")))?;
    let tap = Tap::recording();
    let opts = crate::scenario::RunOptions {
        design,
        verbose: false,
        tap: Some(tap.clone()),
    };
    let o = crate::scenario::run_scenario(&sc, &opts);
    let timeline = o
        .report
        .as_ref()
        .and_then(|r| tap.timeline(r, o.violation.as_ref()))
        .unwrap_or_default();
    let html = render(&timeline, &RunSummary::from_scenario(&o));
    let path = out.map_or_else(
        || PathBuf::from(format!("target/mirrorsim/report-{}.html", sc.name)),
        Path::to_path_buf,
    );
    if let Some(dir) = path.parent()
        && !dir.as_os_str().is_empty()
    {
        std::fs::create_dir_all(dir)
            .map_err(|e| CliError::BadArgument(format!("--out {}: {e}", path.display())))?;
    }
    std::fs::write(&path, &html)
        .map_err(|e| CliError::BadArgument(format!("--out {}: {e}", path.display())))?;
    println!(
        "{}  ({} bytes, {} lanes, scenario {})",
        path.display(),
        html.len(),
        timeline.lanes.len(),
        if o.passed() {
            "met its expectations"
        } else {
            "FAILED"
        }
    );
    Ok(i32::from(!o.passed()))
}
