//! `mirrorsim triage`: groups the failures of a sweep by signature and shrinks one
//! representative per group, so a sweep's red seeds read as a handful of mechanisms.
//!
//! The signature is the verdict (with the broken invariant), the failing partition's role
//! (source / destination / failback target, leader / follower, and for a liveness failure
//! what did not converge: [`FailureSite`]) and the fault kinds left in the representative's
//! shrunk plan. Seeds are grouped by the first two; only the representative (the lowest seed
//! of a group) is shrunk, since shrinking every seed would cost a sweep per failure.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::triage_input::{Failure, read_files};
use super::{CliError, jobs, seeds};
use crate::chaos::shrink::{ShrinkError, fault_name, shrink};
use crate::chaos::{ChaosOptions, FailureSite, run_plan};

/// What `triage` was asked to do.
pub struct TriageArgs<'a> {
    /// `--json` outputs of earlier sweeps; empty: run `seeds`.
    pub files: &'a [PathBuf],
    /// `--seeds` to run when no file is given.
    pub seeds: Option<&'a str>,
    /// `--mirror`.
    pub mirror: bool,
    /// `--design`.
    pub design: Option<String>,
    /// Run options from `--ablation` (a planted bug, as in the sweep that failed).
    pub opts: ChaosOptions,
    /// `--ablation`, for replay commands.
    pub ablation: Option<&'a str>,
    /// `--jobs`, resolved.
    pub jobs: usize,
    /// Where shrunk capsules go.
    pub out: &'a Path,
    /// Runs per shrink.
    pub max_runs: usize,
    /// Skip shrinking (group by verdict and role only).
    pub no_shrink: bool,
    /// One JSON object per group.
    pub json: bool,
}

/// One group of failures.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Group {
    /// Short verdict.
    pub verdict: String,
    /// Where.
    pub site: Option<FailureSite>,
    /// Fault kinds in the shrunk representative (sorted); `None` when not shrunk.
    pub faults: Option<Vec<String>>,
    /// Every seed of the group, ascending.
    pub seeds: Vec<u64>,
    /// The representative (lowest seed).
    pub representative: u64,
    /// Its shrunk capsule, or why there is none.
    pub capsule: Option<String>,
    /// How to replay it.
    pub replay: String,
    /// Whether the representative still fails the same way (a sweep from an older build
    /// may not).
    pub reproduces: bool,
}

/// Runs the command; exit 0 when there is nothing to triage, 1 when there are failures.
pub fn run(a: &TriageArgs<'_>) -> Result<i32, CliError> {
    let failures = if a.files.is_empty() {
        let s = a.seeds.ok_or_else(|| {
            CliError::BadArgument("triage: give sweep files (`--json` lines) or --seeds".into())
        })?;
        sweep(a, s)?
    } else {
        read_files(a.files)?
    };
    let mut by_key: BTreeMap<(String, Option<FailureSite>), Vec<Failure>> = BTreeMap::new();
    let mut seen = BTreeSet::new();
    for f in failures {
        let mut f = f;
        if !seen.insert((f.seed, f.mirror, f.design.clone())) {
            continue;
        }
        if f.site.is_none() {
            // An older sweep did not record where: replay the seed once to learn it.
            f.site = run_plan(f.plan(), &a.opts).site;
        }
        by_key
            .entry((f.verdict.clone(), f.site.clone()))
            .or_default()
            .push(f);
    }
    let keys: Vec<_> = by_key.into_iter().collect();
    let mut groups: Vec<Group> = Vec::with_capacity(keys.len());
    // Groups shrink in parallel (each shrink is sequential and deterministic).
    jobs::run_ordered(
        &keys,
        a.jobs,
        |((verdict, site), members)| group(a, verdict, site.as_ref(), members),
        |_, g| groups.push(g),
    );
    groups.sort_by(|x, y| {
        y.seeds
            .len()
            .cmp(&x.seeds.len())
            .then(x.representative.cmp(&y.representative))
    });
    if a.json {
        for g in &groups {
            println!("{}", serde_json::to_string(g).unwrap_or_default());
        }
    } else {
        print_table(&groups);
    }
    Ok(i32::from(!groups.is_empty()))
}

/// Runs the seeds and keeps the failures.
fn sweep(a: &TriageArgs<'_>, seeds_arg: &str) -> Result<Vec<Failure>, CliError> {
    let range = seeds::parse_seeds(seeds_arg).map_err(|e| CliError::BadArgument(e.to_string()))?;
    let list = seeds::shard_seeds(range, None);
    let opts = ChaosOptions {
        mirror: a.mirror,
        design: a.design.clone(),
        ..a.opts.clone()
    };
    let mut progress = super::summary::Progress::new(list.len(), a.json);
    let mut out = Vec::new();
    jobs::run_ordered(
        &list,
        a.jobs,
        |seed| crate::chaos::run_chaos_seed(*seed, &opts),
        |i, o| {
            progress.tick(i + 1, !o.verdict.is_pass());
            out.extend(Failure::of(&o));
        },
    );
    progress.finish();
    Ok(out)
}

fn group(
    a: &TriageArgs<'_>,
    verdict: &str,
    site: Option<&FailureSite>,
    members: &[Failure],
) -> Group {
    let rep = members
        .iter()
        .min_by_key(|f| f.seed)
        .expect("a group has members");
    let mut g = Group {
        verdict: verdict.to_string(),
        site: site.cloned(),
        faults: None,
        seeds: {
            let mut s: Vec<u64> = members.iter().map(|f| f.seed).collect();
            s.sort_unstable();
            s
        },
        representative: rep.seed,
        capsule: rep.capsule.as_ref().map(|c| c.display().to_string()),
        replay: replay_command(rep, rep.capsule.as_deref(), a.ablation),
        reproduces: true,
    };
    if a.no_shrink {
        return g;
    }
    match shrink(rep.plan(), &a.opts, a.max_runs, |_| {}) {
        Ok(s) => {
            let kinds: BTreeSet<&str> =
                s.plan.faults.iter().map(|f| fault_name(&f.fault)).collect();
            g.faults = Some(kinds.into_iter().map(str::to_string).collect());
            let path = a.out.join(format!("capsule-{}.min.json", rep.seed));
            if super::shrink::write(&path, &s).is_ok() {
                g.replay = replay_command(rep, Some(&path), a.ablation);
                g.capsule = Some(path.display().to_string());
            }
        }
        Err(ShrinkError::DoesNotFail { .. }) => g.reproduces = false,
    }
    g
}

fn replay_command(f: &Failure, capsule: Option<&Path>, ablation: Option<&str>) -> String {
    let abl = ablation
        .map(|a| format!(" --ablation {a}"))
        .unwrap_or_default();
    match capsule {
        Some(c) => format!("cargo run --release -- replay {}{abl}", c.display()),
        None => {
            let mut flags = abl;
            if f.mirror {
                flags.push_str(" --mirror");
            }
            if f.design != "seed" {
                flags.push_str(&format!(" --design {}", f.design));
            }
            format!("cargo run --release -- replay {}{flags}", f.seed)
        }
    }
}

fn print_table(groups: &[Group]) {
    if groups.is_empty() {
        println!("no failures to triage");
        return;
    }
    println!(
        "{:>3} {:>5}  {:<34} {:<48} {:<40} seeds",
        "#", "count", "verdict", "site", "faults (shrunk)"
    );
    println!("{}", "-".repeat(150));
    for (i, g) in groups.iter().enumerate() {
        let site = g
            .site
            .as_ref()
            .map_or_else(|| "-".into(), ToString::to_string);
        let faults = match (&g.faults, g.reproduces) {
            (_, false) => "does not reproduce".to_string(),
            (Some(f), true) if f.is_empty() => "(none)".to_string(),
            (Some(f), true) => f.join(","),
            (None, true) => "-".to_string(),
        };
        println!(
            "{:>3} {:>5}  {:<34} {:<48} {:<40} {}",
            i + 1,
            g.seeds.len(),
            g.verdict,
            site,
            faults,
            abbreviated(&g.seeds)
        );
    }
    println!();
    for (i, g) in groups.iter().enumerate() {
        println!(
            "{:>3} seed {}: {}",
            i + 1,
            g.representative,
            g.capsule.as_deref().unwrap_or("(no capsule)")
        );
        println!("      replay: {}", g.replay);
    }
}

/// At most 12 seeds, then a count of the rest.
fn abbreviated(seeds: &[u64]) -> String {
    let shown: Vec<String> = seeds.iter().take(12).map(u64::to_string).collect();
    match seeds.len().saturating_sub(12) {
        0 => shown.join(" "),
        more => format!("{} … (+{more})", shown.join(" ")),
    }
}
