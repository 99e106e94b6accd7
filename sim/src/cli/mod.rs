//! The `mirrorsim` command line: the guided tour, chaos sweeps, replay, list and bench.
//! Exit codes: 0 every run held, 1 an invariant broke (or a run crashed or did not
//! converge), 2 bad input.

pub mod bench;
pub mod compare;
pub mod dump;
pub mod jobs;
pub mod known;
pub mod memory;
pub mod merge;
pub mod report;
pub mod scenarios;
pub mod seeds;
pub mod shrink;
pub mod summary;
pub mod sweep;
pub mod tour;
pub mod triage;
pub mod triage_input;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::chaos::{ChaosOptions, ChaosOutcome, ChaosPlan, Verdict, run_plan};

/// Deterministic simulation testbed for KIP-1279 cluster mirroring.
#[derive(Parser, Debug)]
#[command(name = "mirrorsim", version, about)]
pub struct Cli {
    /// What to do (no subcommand: the guided tour).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run seeded chaos: each seed draws a world, workload and fault schedule.
    Chaos {
        /// Seeds: `A..B`, `A..=B` or one seed.
        #[arg(long, default_value = "1..51")]
        seeds: String,
        /// Run only shard `i/n` of the range (seed % n == i).
        #[arg(long)]
        shard: Option<String>,
        /// One JSON object per seed on stdout (for CI).
        #[arg(long)]
        json: bool,
        /// Plant a bug to check the checkers: `hw-ignores-isr`, `recovery-keeps-torn-tail`,
        /// `producer-defers-metadata-refresh`.
        #[arg(long)]
        ablation: Option<String>,
        /// Two clusters with KIP-1279 mirroring (faults on both, stop / pause / failback).
        #[arg(long)]
        mirror: bool,
        /// Run every N-th seed twice and compare trace hashes.
        #[arg(long, value_name = "N")]
        check_determinism: Option<u64>,
        /// Where failing capsules are written.
        #[arg(long, default_value = "target/mirrorsim")]
        out: PathBuf,
        /// KIP-1279 design of both clusters (`seed`, `latest`, `seed-no-pid-reset`, ...).
        #[arg(long)]
        design: Option<String>,
        /// A baseline of known findings (`SEED VERDICT` lines): the sweep then fails on any
        /// difference from it instead of on any failure.
        #[arg(long, value_name = "FILE")]
        known: Option<PathBuf>,
        /// With `--known`: the seeds are fresh (none is listed), so a failure passes only if
        /// its verdict is one a known finding also has; any other verdict fails the sweep.
        #[arg(long, requires = "known")]
        fresh: bool,
        /// Seeds run at once, each on its own thread and runtime (default: every core);
        /// output and hashes are those of `--jobs 1`.
        #[arg(long, value_name = "N")]
        jobs: Option<usize>,
    },
    /// Replay a seed or a capsule (JSON) and print its trace.
    Replay {
        /// A seed number or a capsule file.
        target: String,
        /// Print every RPC-level event, not only the compact trace.
        #[arg(long)]
        verbose: bool,
        /// Plant the same bug as the failing sweep.
        #[arg(long)]
        ablation: Option<String>,
        /// The seed is a two-cluster mirror plan.
        #[arg(long)]
        mirror: bool,
        /// Run under this KIP-1279 design instead of the plan's.
        #[arg(long)]
        design: Option<String>,
    },
    /// Shrink a failing capsule to a smaller plan that fails the same way.
    Shrink {
        /// The capsule file (JSON).
        capsule: String,
        /// Where the minimal capsule is written (default: next to the input, `.min.json`).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Plant the same bug as the failing sweep.
        #[arg(long)]
        ablation: Option<String>,
        /// At most this many runs.
        #[arg(long, default_value_t = crate::chaos::shrink::DEFAULT_MAX_RUNS)]
        max_runs: usize,
        /// Candidates tried at once (default: every core); the result is that of `--jobs 1`.
        #[arg(long, value_name = "N")]
        jobs: Option<usize>,
    },
    /// Combine the `--json` outputs of `chaos --shard i/n` runs into one summary; refuses
    /// truncated files and overlapping or missing shards.
    Merge {
        /// The shards' `--json` outputs.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// One JSON object for the merged summary.
        #[arg(long)]
        json: bool,
        /// A baseline of known findings: fail on any difference from it instead of on any
        /// failure (as `chaos --known`).
        #[arg(long, value_name = "FILE")]
        known: Option<PathBuf>,
    },
    /// Group the failures of a sweep by signature (verdict, invariant, the partition's role,
    /// the fault kinds of the shrunk plan) and shrink one representative per group.
    Triage {
        /// `--json` outputs of earlier sweeps (`chaos --json > FILE`); none: run `--seeds`.
        files: Vec<PathBuf>,
        /// Seeds to run when no file is given: `A..B`, `A..=B` or one seed.
        #[arg(long)]
        seeds: Option<String>,
        /// Two-cluster mirror plans (with `--seeds`).
        #[arg(long)]
        mirror: bool,
        /// KIP-1279 design (with `--seeds`).
        #[arg(long)]
        design: Option<String>,
        /// Seeds (and shrinks) run at once (default: every core).
        #[arg(long, value_name = "N")]
        jobs: Option<usize>,
        /// Where the shrunk representatives are written.
        #[arg(long, default_value = "target/mirrorsim/triage")]
        out: PathBuf,
        /// At most this many runs per shrink.
        #[arg(long, default_value_t = crate::chaos::shrink::DEFAULT_MAX_RUNS)]
        max_runs: usize,
        /// Group without shrinking (no fault kinds in the signature).
        #[arg(long)]
        no_shrink: bool,
        /// One JSON object per group.
        #[arg(long)]
        json: bool,
        /// Plant the same bug as the failing sweep.
        #[arg(long)]
        ablation: Option<String>,
    },
    /// The design lab: run each design over the same mirror seeds; a table of design ×
    /// invariant with the first failing seed and its shrunk size.
    Compare {
        /// Comma-separated designs.
        #[arg(long)]
        designs: String,
        /// Seeds: `A..B`, `A..=B` or one seed.
        #[arg(long, default_value = "1..51")]
        seeds: String,
        /// Do not shrink the first failure of each cell.
        #[arg(long)]
        no_shrink: bool,
        /// One JSON object for the whole table on stdout.
        #[arg(long)]
        json: bool,
        /// Mirror plans (always on: the designs are KIP-1279 designs).
        #[arg(long, hide = true)]
        mirror: bool,
        /// Where the failing capsules of each cell are written.
        #[arg(long, default_value = "target/mirrorsim/compare")]
        out: PathBuf,
        /// Seeds run at once, each on its own thread and runtime (default: every core);
        /// output and hashes are those of `--jobs 1`.
        #[arg(long, value_name = "N")]
        jobs: Option<usize>,
    },
    /// Run scenario files (or every `*.toml` in a directory) and check their expectations.
    Run {
        /// Scenario files or directories.
        #[arg(required = true)]
        scenarios: Vec<PathBuf>,
        /// Run under this design instead of the file's (e.g. `seed-no-pid-reset`).
        #[arg(long)]
        design: Option<String>,
        /// Print the compact trace.
        #[arg(long)]
        trace: bool,
        /// Print every RPC-level event too.
        #[arg(long)]
        verbose: bool,
        /// One JSON object per scenario.
        #[arg(long)]
        json: bool,
        /// Scenarios run at once, each on its own thread and runtime (default: every core);
        /// output comes in file order.
        #[arg(long, value_name = "N")]
        jobs: Option<usize>,
    },
    /// Replay a seed or capsule and write an HTML timeline of it (one lane per partition
    /// and cluster; leaders, epochs, LEO/HW, mirror states, faults, the failing event).
    Report {
        /// A seed number or a capsule file.
        target: String,
        /// The seed is a two-cluster mirror plan.
        #[arg(long)]
        mirror: bool,
        /// KIP-1279 design preset or ablation (`seed`, `latest`, `seed-no-read-only`, ...).
        #[arg(long)]
        design: Option<String>,
        /// Plant the same bug as the failing sweep.
        #[arg(long)]
        ablation: Option<String>,
        /// Output file (default `target/mirrorsim/report-<seed>.html`).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Replay a seed or capsule to its end and write one replica's log as Kafka segment
    /// files (`.log`, `.index`, `.timeindex`, `leader-epoch-checkpoint`, `partition.metadata`).
    Dump {
        /// A seed number or a capsule file.
        target: String,
        /// Cluster index (`0`, `1`) or name (`src`, `dst`).
        #[arg(long, default_value = "0")]
        cluster: String,
        /// Topic.
        #[arg(long)]
        topic: String,
        /// Partition.
        #[arg(long)]
        partition: i32,
        /// Broker id (default: the partition's leader at the end of the run).
        #[arg(long)]
        broker: Option<i32>,
        /// Output directory (default `target/mirrorsim/dump-<seed>`); files go to
        /// `DIR/<topic>-<partition>/`.
        #[arg(long)]
        out: Option<PathBuf>,
        /// The seed is a two-cluster mirror plan.
        #[arg(long)]
        mirror: bool,
        /// KIP-1279 design preset or ablation.
        #[arg(long)]
        design: Option<String>,
        /// Plant the same bug as the failing sweep.
        #[arg(long)]
        ablation: Option<String>,
    },
    /// List invariants, fault kinds and designs.
    List,
    /// Measure speed on the reference world and its scale-ups.
    Bench {
        /// Scale factors to run (1 = reference).
        #[arg(long, default_value = "1,10")]
        scales: String,
        /// Print one JSON object with every figure instead of the tables and lines.
        #[arg(long)]
        json: bool,
        /// Also run each scale after the first with only its rate and with only its
        /// partitions scaled, and print the cost per event of each (what the growth is made of).
        #[arg(long)]
        split: bool,
    },
}

/// A command-line error (exit code 2).
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A bad argument.
    #[error("{0}")]
    BadArgument(String),
    /// A capsule that cannot be read.
    #[error("{path}: {reason}")]
    BadCapsule {
        /// The file.
        path: String,
        /// What was wrong (line and column for JSON errors).
        reason: String,
    },
    /// `bench` could not measure its floor world.
    #[error(transparent)]
    Floor(#[from] bench::floor::FloorError),
}

fn options(ablation: Option<&str>) -> Result<ChaosOptions, CliError> {
    match ablation {
        None => Ok(ChaosOptions::default()),
        Some("hw-ignores-isr") => Ok(ChaosOptions {
            ablation_hw_ignores_isr: true,
            ..ChaosOptions::default()
        }),
        Some("recovery-keeps-torn-tail") => Ok(ChaosOptions {
            ablation_recovery_keeps_torn_tail: true,
            ..ChaosOptions::default()
        }),
        Some("producer-defers-metadata-refresh") => Ok(ChaosOptions {
            ablation_producer_defers_metadata_refresh: true,
            ..ChaosOptions::default()
        }),
        Some(other) => Err(CliError::BadArgument(format!(
            "--ablation: unknown `{other}` (known: hw-ignores-isr, recovery-keeps-torn-tail, \
             producer-defers-metadata-refresh)"
        ))),
    }
}

/// Checks a `--design` value: a bad one is a one-line error (exit 2), never a panic inside
/// a run.
fn validate_design(design: Option<String>) -> Result<Option<String>, CliError> {
    if let Some(d) = &design {
        mirror_core::mirror::Design::parse(d)
            .map_err(|e| CliError::BadArgument(format!("--design {d}: {e}")))?;
    }
    Ok(design)
}

/// Reads a capsule file; errors name the file (and line and column for JSON errors), and
/// a capsule naming an unknown design is refused here rather than crashing the run.
pub fn read_capsule(path: &str) -> Result<ChaosPlan, CliError> {
    let text = std::fs::read_to_string(path).map_err(|e| CliError::BadCapsule {
        path: path.to_string(),
        reason: e.to_string(),
    })?;
    let plan: ChaosPlan = serde_json::from_str(&text).map_err(|e| CliError::BadCapsule {
        path: path.to_string(),
        reason: format!("line {} column {}: {e}", e.line(), e.column()),
    })?;
    mirror_core::mirror::Design::parse(&plan.design).map_err(|e| CliError::BadCapsule {
        path: path.to_string(),
        reason: format!("field `design`: {e}"),
    })?;
    Ok(plan)
}

/// Runs the CLI; returns the process exit code.
pub fn run(cli: Cli) -> i32 {
    let res = match cli.command {
        None => Ok(tour::run()),
        Some(Command::List) => {
            list();
            Ok(0)
        }
        Some(Command::Chaos {
            seeds,
            shard,
            json,
            ablation,
            mirror,
            check_determinism,
            out,
            design,
            known,
            fresh,
            jobs,
        }) => options(ablation.as_deref()).and_then(|mut o| {
            o.mirror = mirror;
            o.design = validate_design(design)?;
            let known = known.as_deref().map(known::load).transpose()?;
            sweep::run(&sweep::SweepArgs {
                seeds: &seeds,
                shard: shard.as_deref(),
                json,
                opts: o,
                ablation: ablation.as_deref(),
                check_determinism,
                out: &out,
                known: known.as_ref(),
                fresh,
                jobs: jobs::resolve(jobs)?,
            })
        }),
        Some(Command::Replay {
            target,
            verbose,
            ablation,
            mirror,
            design,
        }) => validate_design(design)
            .and_then(|d| replay(&target, verbose, ablation.as_deref(), mirror, d)),
        Some(Command::Shrink {
            capsule,
            out,
            ablation,
            max_runs,
            jobs,
        }) => options(ablation.as_deref()).and_then(|o| {
            shrink::run(&shrink::ShrinkArgs {
                capsule: &capsule,
                out: out.as_deref(),
                opts: &o,
                ablation: ablation.as_deref(),
                max_runs,
                jobs: jobs::resolve(jobs)?,
            })
        }),
        Some(Command::Compare {
            designs,
            seeds,
            no_shrink,
            json,
            mirror: _,
            out,
            jobs,
        }) => jobs::resolve(jobs)
            .and_then(|j| compare::run(&designs, &seeds, !no_shrink, json, &out, j)),
        Some(Command::Bench {
            scales,
            json,
            split,
        }) => bench::run(&scales, json, split),
        Some(Command::Merge { files, json, known }) => known
            .as_deref()
            .map(known::load)
            .transpose()
            .and_then(|k| merge::run(&files, json, k.as_ref())),
        Some(Command::Triage {
            files,
            seeds,
            mirror,
            design,
            jobs,
            out,
            max_runs,
            no_shrink,
            json,
            ablation,
        }) => {
            if !files.is_empty() && seeds.is_some() {
                Err(CliError::BadArgument(
                    "triage: give sweep files or --seeds, not both".into(),
                ))
            } else {
                validate_design(design).and_then(|design| {
                    triage::run(&triage::TriageArgs {
                        files: &files,
                        seeds: seeds.as_deref(),
                        mirror,
                        design,
                        opts: options(ablation.as_deref())?,
                        ablation: ablation.as_deref(),
                        jobs: jobs::resolve(jobs)?,
                        out: &out,
                        max_runs,
                        no_shrink,
                        json,
                    })
                })
            }
        }
        Some(Command::Run {
            scenarios,
            design,
            trace,
            verbose,
            json,
            jobs,
        }) => jobs::resolve(jobs)
            .and_then(|j| scenarios::run(&scenarios, design.as_deref(), trace, verbose, json, j)),
        Some(Command::Report {
            target,
            mirror,
            design,
            ablation,
            out,
        }) => report::run(
            &target,
            mirror,
            design.as_deref(),
            ablation.as_deref(),
            out.as_deref(),
        ),
        Some(Command::Dump {
            target,
            cluster,
            topic,
            partition,
            broker,
            out,
            mirror,
            design,
            ablation,
        }) => dump::run(&dump::DumpArgs {
            target: &target,
            mirror,
            design: design.as_deref(),
            ablation: ablation.as_deref(),
            cluster: &cluster,
            topic: &topic,
            partition,
            broker,
            out: out.as_deref(),
        }),
    };
    match res {
        Ok(code) => code,
        Err(e) => {
            eprintln!("mirrorsim: {e}");
            2
        }
    }
}

fn list() {
    use crate::check::CheckKind;
    println!("Checks (after every event, or at the end of a run). A run's verdict comes from the");
    println!(
        "outcome checks and Kafka's own rules; a design-mechanism rule is a diagnostic printed"
    );
    println!("beside the verdict as its likely mechanism, and never fails a run.");
    for (kind, title) in [
        (
            CheckKind::Outcome,
            "Outcomes (what a user of Kafka and of the mirror sees or loses):",
        ),
        (CheckKind::Kafka, "Kafka's rules (common to every design):"),
        (
            CheckKind::Mechanism,
            "Design mechanisms (diagnostics: did the design perform its own steps):",
        ),
    ] {
        println!("{title}");
        for (name, _, what) in crate::check::INVARIANTS.iter().filter(|c| c.1 == kind) {
            println!("  {name:<30} {what}");
        }
    }
    println!();
    println!("Fault kinds (chaos): crash (process | power loss | torn write) with restart, pause,");
    println!("  isolate, isolate from controller, packet loss, unclean election, DeleteRecords,");
    println!("  bit rot (rot_batch: crash, a bit of a batch CRC flips on disk, restart);");
    println!(
        "  world faults also: partition (one-way/symmetric), clog, latency spike, disk full, EIO."
    );
    println!("Mirror chaos (--mirror) adds: stop, pause, failback, crash of a partition leader,");
    println!("  probe writes to the destination, failover producers, source producers leaving.");
    println!();
    println!("Designs (KIP-1279 design lab, `--design` in chaos, replay, compare and scenarios):");
    for (name, what) in mirror_core::mirror::Design::all_named() {
        println!("  {name:<36} {what}");
    }
    println!();
    println!("Chaos ablations (planted bugs): hw-ignores-isr, recovery-keeps-torn-tail");
}

/// One line of a sweep summary.
pub(crate) fn outcome_line(o: &ChaosOutcome) -> String {
    let (hash, secs, events) = o.report.as_ref().map_or(("-".to_string(), 0.0, 0), |r| {
        (r.trace_hash.clone(), r.sim_seconds, r.events)
    });
    format!(
        "seed {:>6}  {:<34} sim={secs:>7.1}s events={events:>7} hash={hash}",
        o.seed,
        o.verdict.short()
    )
}

/// The design-mechanism rules that broke, the first as the verdict's likely mechanism.
pub(crate) fn print_mechanisms(diagnostics: &[crate::check::Violation]) {
    for (i, d) in diagnostics.iter().enumerate() {
        let what = if i == 0 {
            "likely mechanism"
        } else {
            "also broke"
        };
        println!("  {what}: {d}");
    }
}

/// Writes the capsule of a failing run (stamped with this build's id) into `out`.
pub(crate) fn write_capsule(out: &std::path::Path, o: &ChaosOutcome) -> Option<PathBuf> {
    std::fs::create_dir_all(out).ok()?;
    let path = out.join(format!("capsule-{}.json", o.seed));
    let mut plan = o.plan.clone();
    plan.build = Some(crate::chaos::build_id());
    let text = serde_json::to_string_pretty(&plan).ok()?;
    std::fs::write(&path, text).ok()?;
    Some(path)
}

pub(crate) fn describe_failure(
    o: &ChaosOutcome,
    capsule: Option<&std::path::Path>,
    ablation: Option<&str>,
) {
    match &o.verdict {
        Verdict::Violation(v) => println!("  {v}"),
        Verdict::Liveness { detail } => println!("  did not converge: {detail}"),
        Verdict::Crash { message } => println!("  crashed: {message}"),
        Verdict::Pass => {}
    }
    print_mechanisms(&o.diagnostics);
    let mut abl = ablation
        .map(|a| format!(" --ablation {a}"))
        .unwrap_or_default();
    let capsule_flags = abl.clone();
    if o.plan.mirror {
        abl.push_str(" --mirror");
    }
    if o.plan.design != "seed" {
        abl.push_str(&format!(" --design {}", o.plan.design));
    }
    println!("  replay: cargo run --release -- replay {}{abl}", o.seed);
    if let Some(c) = capsule {
        println!(
            "  capsule: {} (replay: cargo run --release -- replay {}{capsule_flags}; shrink: cargo run --release -- shrink {}{capsule_flags})",
            c.display(),
            c.display(),
            c.display()
        );
    }
}

fn replay(
    target: &str,
    verbose: bool,
    ablation: Option<&str>,
    mirror: bool,
    design: Option<String>,
) -> Result<i32, CliError> {
    let opts = options(ablation)?;
    let mut plan = if let Ok(seed) = target.parse::<u64>() {
        if mirror {
            ChaosPlan::mirror(seed)
        } else {
            ChaosPlan::single_cluster(seed)
        }
    } else {
        read_capsule(target)?
    };
    if let Some(d) = design {
        plan.design = d;
    }
    let o = run_plan_verbose(plan, &opts, verbose);
    if let Some(r) = &o.report {
        for l in &r.lines {
            println!("{l}");
        }
    }
    println!("{}", outcome_line(&o));
    for l in o.losses.lines() {
        println!("  {l}");
    }
    match &o.verdict {
        Verdict::Pass => {
            print_mechanisms(&o.diagnostics);
            Ok(0)
        }
        _ => {
            describe_failure(&o, None, ablation);
            Ok(1)
        }
    }
}

fn run_plan_verbose(plan: ChaosPlan, opts: &ChaosOptions, verbose: bool) -> ChaosOutcome {
    let mut o = opts.clone();
    o.verbose_trace = verbose;
    run_plan(plan, &o)
}
