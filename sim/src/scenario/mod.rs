//! Scenario files: named, human-readable failover stories with exact expected outcomes
//! (product.md §6). [`format`] parses and validates a TOML file, [`run`] plays it in a fresh
//! simulated world, and the outcome's [`ScenarioOutcome::snapshot`] is what the insta
//! snapshot test diffs on every change.

pub mod format;
pub mod inspect;
pub mod mirror_steps;
pub mod run;

pub use format::{Scenario, ScenarioError};
pub use run::{RunOptions, ScenarioOutcome, ScenarioVerdict, run_scenario};

/// The scenario files under `dir` (`*.toml`), sorted by name.
pub fn files_in(dir: &std::path::Path) -> std::io::Result<Vec<std::path::PathBuf>> {
    let mut v: Vec<_> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    v.sort();
    Ok(v)
}

#[cfg(test)]
mod format_test;
