//! `mirrorsim shrink CAPSULE`: shrinks a failing capsule, printing each accepted cut, and
//! writes the minimal capsule with its replay command.

use std::path::{Path, PathBuf};

use super::{CliError, read_capsule};
use crate::chaos::ChaosOptions;
use crate::chaos::shrink::{Shrunk, shrink_on};

/// What `shrink` was asked to do.
pub struct ShrinkArgs<'a> {
    /// The capsule file.
    pub capsule: &'a str,
    /// Where the minimal capsule goes (default: next to the input).
    pub out: Option<&'a Path>,
    /// Run options (`--ablation`).
    pub opts: &'a ChaosOptions,
    /// `--ablation`, for the replay command.
    pub ablation: Option<&'a str>,
    /// At most this many runs.
    pub max_runs: usize,
    /// Candidates tried at once.
    pub jobs: usize,
}

/// Runs the subcommand; exit code 1 when a smaller (or the same) failing capsule was written,
/// since the capsule still fails; 2 for bad input or a capsule that passes.
pub fn run(a: &ShrinkArgs<'_>) -> Result<i32, CliError> {
    let capsule = a.capsule;
    let plan = read_capsule(capsule)?;
    println!(
        "shrinking {capsule} (seed {}, design {}): {}",
        plan.seed,
        plan.design,
        plan.size()
    );
    let t0 = std::time::Instant::now();
    let shrunk = shrink_on(plan, a.opts, a.max_runs, a.jobs, |step| {
        println!("  accepted: {:<60} -> {}", step.what, step.size);
    })
    .map_err(|e| CliError::BadArgument(format!("{capsule}: {e}")))?;
    let path = a
        .out
        .map_or_else(|| default_out(capsule), Path::to_path_buf);
    write(&path, &shrunk)?;
    print_result(&shrunk, &path, a.ablation, t0.elapsed().as_secs_f64());
    Ok(1)
}

fn default_out(capsule: &str) -> PathBuf {
    let p = Path::new(capsule);
    let stem = p.file_stem().map_or_else(
        || "capsule".to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    p.with_file_name(format!("{stem}.min.json"))
}

/// Writes the shrunk plan as a capsule stamped with this build.
pub(crate) fn write(path: &Path, shrunk: &Shrunk) -> Result<(), CliError> {
    let mut plan = shrunk.plan.clone();
    plan.build = Some(crate::chaos::build_id());
    let text = serde_json::to_string_pretty(&plan).map_err(|e| CliError::BadCapsule {
        path: path.display().to_string(),
        reason: e.to_string(),
    })?;
    if let Some(dir) = path.parent()
        && !dir.as_os_str().is_empty()
    {
        std::fs::create_dir_all(dir).map_err(|e| CliError::BadCapsule {
            path: dir.display().to_string(),
            reason: e.to_string(),
        })?;
    }
    std::fs::write(path, text).map_err(|e| CliError::BadCapsule {
        path: path.display().to_string(),
        reason: e.to_string(),
    })
}

fn print_result(s: &Shrunk, path: &Path, ablation: Option<&str>, wall: f64) {
    println!();
    println!("failure kept   {}", s.kind);
    println!("before         {}", s.before);
    println!("after          {}", s.plan.size());
    println!(
        "accepted       {} cuts in {} runs ({wall:.1} s wall)",
        s.steps.len(),
        s.runs
    );
    println!("minimal capsule {}", path.display());
    let abl = ablation
        .map(|a| format!(" --ablation {a}"))
        .unwrap_or_default();
    println!(
        "replay: cargo run --release -- replay {}{abl}",
        path.display()
    );
}
