//! `mirrorsim compare --designs D1,D2 --seeds A..B`: the design lab (kip1279.md A.3). Every
//! design runs the same mirror seeds (same world, workload and schedule); the table shows,
//! per design and verdict, how many seeds ended that way, the first such seed, and the size
//! of that first failure once shrunk.

use std::collections::BTreeMap;
use std::path::Path;

use super::{CliError, seeds, write_capsule};
use crate::chaos::shrink::{DEFAULT_MAX_RUNS, shrink};
use crate::chaos::{ChaosOptions, PlanSize, run_chaos_seed};

/// One cell of the table: a design and a verdict.
#[derive(Clone, Debug, serde::Serialize)]
struct Cell {
    design: String,
    verdict: String,
    seeds: usize,
    first_seed: u64,
    first_size: PlanSize,
    shrunk_size: Option<PlanSize>,
    capsule: Option<String>,
}

/// Runs the subcommand.
pub fn run(
    designs: &str,
    seeds_arg: &str,
    do_shrink: bool,
    json: bool,
    out: &Path,
    jobs: usize,
) -> Result<i32, CliError> {
    let designs: Vec<String> = designs.split(',').map(|d| d.trim().to_string()).collect();
    for d in &designs {
        mirror_core::mirror::Design::parse(d)
            .map_err(|e| CliError::BadArgument(format!("--designs {d}: {e}")))?;
    }
    let range = seeds::parse_seeds(seeds_arg).map_err(|e| CliError::BadArgument(e.to_string()))?;
    let list = seeds::shard_seeds(range, None);
    let mut cells = Vec::new();
    let mut any_failure = false;
    for d in &designs {
        let opts = ChaosOptions {
            mirror: true,
            design: Some(d.clone()),
            ..ChaosOptions::default()
        };
        let design_cells = run_design(d, &list, &opts, do_shrink, json, out, jobs);
        any_failure |= design_cells.iter().any(|c| c.verdict != "pass");
        cells.extend(design_cells);
    }
    if json {
        println!(
            "{}",
            serde_json::json!({ "seeds": seeds_arg, "designs": designs, "cells": cells })
        );
    } else {
        print_table(&cells, list.len());
    }
    Ok(i32::from(any_failure))
}

fn run_design(
    design: &str,
    list: &[u64],
    opts: &ChaosOptions,
    do_shrink: bool,
    quiet: bool,
    out: &Path,
    jobs: usize,
) -> Vec<Cell> {
    let mut progress = super::summary::Progress::new(list.len(), quiet);
    let mut by_verdict: BTreeMap<String, Cell> = BTreeMap::new();
    super::jobs::run_ordered(
        list,
        jobs,
        |seed| run_chaos_seed(*seed, opts),
        |i, o| {
            let verdict = o.verdict.short();
            progress.tick(i + 1, !o.verdict.is_pass());
            if let Some(c) = by_verdict.get_mut(&verdict) {
                c.seeds += 1;
                return;
            }
            let mut cell = Cell {
                design: design.to_string(),
                verdict: verdict.clone(),
                seeds: 1,
                first_seed: o.seed,
                first_size: o.plan.size(),
                shrunk_size: None,
                capsule: None,
            };
            if !o.verdict.is_pass() {
                let dir = out.join(design);
                cell.capsule = write_capsule(&dir, &o).map(|p| p.display().to_string());
                if do_shrink && let Ok(s) = shrink(o.plan.clone(), opts, DEFAULT_MAX_RUNS, |_| {}) {
                    cell.shrunk_size = Some(s.plan.size());
                    let path = dir.join(format!("capsule-{}.min.json", o.seed));
                    if super::shrink::write(&path, &s).is_ok() {
                        cell.capsule = Some(path.display().to_string());
                    }
                }
            }
            by_verdict.insert(verdict, cell);
        },
    );
    progress.finish();
    by_verdict.into_values().collect()
}

fn print_table(cells: &[Cell], seeds: usize) {
    println!();
    println!(
        "{:<28} {:<36} {:>6} {:>6}  {:<24} {:<24}",
        "design",
        "verdict",
        format!("/{seeds}"),
        "first",
        "size (f/c/p/b)",
        "shrunk (f/c/p/b)"
    );
    println!("{}", "-".repeat(132));
    let fmt = |s: &PlanSize| format!("{}/{}/{}/{}", s.faults, s.clients, s.partitions, s.brokers);
    for c in cells {
        println!(
            "{:<28} {:<36} {:>6} {:>6}  {:<24} {:<24}",
            c.design,
            c.verdict,
            c.seeds,
            c.first_seed,
            if c.verdict == "pass" {
                String::new()
            } else {
                fmt(&c.first_size)
            },
            c.shrunk_size.as_ref().map(fmt).unwrap_or_default()
        );
    }
    println!();
    for c in cells.iter().filter(|c| c.capsule.is_some()) {
        if let Some(p) = &c.capsule {
            println!(
                "{} {}: replay: cargo run --release -- replay {p}",
                c.design, c.verdict
            );
        }
    }
}
