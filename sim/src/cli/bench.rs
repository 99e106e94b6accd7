//! `mirrorsim bench`: speed on the reference world (product.md §9), measured, never assumed.
//! Prints simulated seconds per wall second, seeds per core-hour, events per wall second,
//! messages per simulated second (in total and by kind) and the peak memory, for the
//! reference scale and its scale-ups, each beside its floor: a bare madsim world with the
//! same load ([`floor`]). Scripts read the `bench ...` lines or `--json` ([`measure`]).

pub mod floor;
pub mod measure;

use std::time::Instant as WallInstant;

use crate::chaos::plan::TopicPlan;
use crate::chaos::{
    ChaosFault, ChaosOptions, ChaosPlan, ClientPlan, CrashMode, FaultStep, run_plan,
};
use crate::net::NetConfig;
use floor::FloorLoad;
use measure::Measurement;

/// The reference world at `scale` (product.md §9): a source and a destination cluster of 3
/// brokers each, 2 topics × 4·scale partitions (RF 3) on the source mirrored into the
/// destination (KIP-1279, seed design), producers writing 1000·scale records/s in total, a
/// consumer, 60 simulated seconds with a source broker crash, a destination broker crash and
/// an isolation, then the liveness phase (the mirror must converge).
#[must_use]
pub fn reference_plan(scale: u32) -> ChaosPlan {
    scaled_plan(scale, scale)
}

/// The reference world with its partitions scaled by `partitions_k` and its producers' rate
/// by `rate_k` (`bench --split` scales one without the other, to tell which of the two the
/// cost per event grows with).
#[must_use]
pub fn scaled_plan(partitions_k: u32, rate_k: u32) -> ChaosPlan {
    let partitions = 4 * i32::try_from(partitions_k).unwrap_or(1);
    let topics = (0..2)
        .map(|i| TopicPlan {
            name: format!("t{i}"),
            partitions,
            replication_factor: 3,
            min_insync_replicas: 2,
        })
        .collect();
    let clients = vec![
        ClientPlan::Producer {
            topic: 0,
            acks: -1,
            rate: 500 * rate_k,
            max_in_flight: 5,
        },
        ClientPlan::Producer {
            topic: 1,
            acks: -1,
            rate: 500 * rate_k,
            max_in_flight: 5,
        },
        ClientPlan::Consumer {
            topic: 0,
            read_committed: false,
        },
    ];
    let faults = vec![
        FaultStep {
            at_ms: 20_000,
            fault: ChaosFault::Crash {
                cluster: 0,
                broker: 2,
                mode: CrashMode::Process,
                down_ms: 10_000,
            },
        },
        FaultStep {
            at_ms: 30_000,
            fault: ChaosFault::Crash {
                cluster: 1,
                broker: 1,
                mode: CrashMode::Process,
                down_ms: 8_000,
            },
        },
        FaultStep {
            at_ms: 40_000,
            fault: ChaosFault::Isolate {
                cluster: 0,
                broker: 3,
                for_ms: 5_000,
            },
        },
    ];
    ChaosPlan {
        seed: 42,
        brokers: vec![3, 3],
        unclean_leader_election_enable: false,
        log_flush_interval_ms: None,
        topics,
        clients,
        faults,
        safety_ms: 60_000,
        liveness_ms: 120_000,
        mirror: true,
        design: "seed".to_string(),
        failover_clients: Vec::new(),
        build: None,
        net: None,
        persistent: None,
    }
}

/// Runs the reference world of `plan` and then its floor: one [`Measurement`]. The
/// process's peak memory is reset first (where Linux allows), so the peak is this run's.
pub fn measure(scale: u32, plan: ChaosPlan) -> Result<Measurement, floor::FloorError> {
    measure_with(scale, plan, true)
}

/// [`measure`], with the floor runs only if `with_floor`.
fn measure_with(
    scale: u32,
    plan: ChaosPlan,
    with_floor: bool,
) -> Result<Measurement, floor::FloorError> {
    let net = plan
        .net
        .as_ref()
        .map_or_else(NetConfig::default, crate::chaos::plan::NetPlan::config);
    let seed = plan.seed;
    super::memory::reset_peak();
    let start = WallInstant::now();
    let o = run_plan(plan, &ChaosOptions::default());
    let wall_seconds = start.elapsed().as_secs_f64();
    let peak_mib = super::memory::peak_resident_mib();
    let floor = match &o.report {
        Some(r) if with_floor => Some(floor_median(&FloorLoad::of(r, net, seed))?),
        _ => None,
    };
    let report = o.report.unwrap_or_else(|| crate::world::RunReport {
        seed,
        trace_hash: String::new(),
        sim_seconds: 0.0,
        events: 0,
        lines: Vec::new(),
        stats: crate::world::RunStats::default(),
    });
    Ok(Measurement {
        scale,
        verdict: o.verdict.short(),
        sim_seconds: report.sim_seconds,
        wall_seconds,
        events: report.events,
        trace_hash: report.trace_hash,
        stats: report.stats,
        peak_mib,
        floor,
    })
}

/// Floor runs per scale. The floor world runs in a tenth of a second at scale 1, short enough
/// for one scheduler hiccup on a shared machine to halve its ratio; the median of a few is
/// what the reference is compared with. Every run replays the same load (same seed), so
/// they differ in wall time only.
const FLOOR_RUNS: usize = 3;

/// The floor run of median ratio among [`FLOOR_RUNS`].
fn floor_median(load: &FloorLoad) -> Result<floor::FloorRun, floor::FloorError> {
    let mut runs = (0..FLOOR_RUNS)
        .map(|_| floor::run(load))
        .collect::<Result<Vec<_>, _>>()?;
    runs.sort_by(|a, b| a.ratio().total_cmp(&b.ratio()));
    Ok(runs.swap_remove(FLOOR_RUNS / 2))
}

/// Runs the benchmark for the comma-separated `scales`; `json` prints one JSON object
/// instead of the tables and lines; `split` also runs, for every scale after the first, the
/// world with only its rate and the world with only its partitions scaled
/// ([`measure::Split`]). Exit code 1 if a reference run did not pass.
pub fn run(scales: &str, json: bool, split: bool) -> Result<i32, super::CliError> {
    let scales: Vec<u32> = scales
        .split(',')
        .map(|s| s.trim().parse::<u32>().ok().filter(|n| *n > 0))
        .collect::<Option<_>>()
        .ok_or_else(|| {
            super::CliError::BadArgument(format!(
                "--scales: expected positive integers, got `{scales}`"
            ))
        })?;
    if !json {
        println!(
            "reference world: source and destination of 3 brokers each, 2 topics × 4·k partitions RF 3"
        );
        println!(
            "mirrored (seed design), 1000·k records/s, 60 s with crashes on both sides and an isolation,"
        );
        println!(
            "then the liveness phase until the mirror converges; one thread. floor: a bare madsim"
        );
        println!(
            "world with the same nodes, links and latencies, the same messages and timers, no work (median of 3)"
        );
        println!();
    }
    let mut ms = Vec::new();
    for &k in &scales {
        ms.push(measure(k, reference_plan(k))?);
    }
    let mut splits = Vec::new();
    if split && let Some(&base) = scales.first() {
        for &k in scales.iter().skip(1) {
            splits.push(measure::Split {
                rate_only: measure_with(k, scaled_plan(base, k), false)?,
                partitions_only: measure_with(k, scaled_plan(k, base), false)?,
            });
        }
    }
    let code = i32::from(
        ms.iter()
            .chain(
                splits
                    .iter()
                    .flat_map(|s| [&s.rate_only, &s.partitions_only]),
            )
            .any(|m| m.verdict != "pass"),
    );
    if json {
        println!("{}", measure::json_all(&ms, &splits));
        return Ok(code);
    }
    let print = |lines: Vec<String>| lines.iter().for_each(|l| println!("{l}"));
    print(measure::table(&ms));
    println!();
    println!(
        "what the floor replayed (messages sent; timers: node drivers + harness, network task)"
    );
    print(measure::floor_table(&ms));
    for m in &ms {
        println!();
        println!("messages per simulated second by kind, scale {}", m.scale);
        print(measure::kind_table(m));
    }
    println!();
    print(ms.iter().map(Measurement::stable_line).collect());
    if let Some(l) = measure::floor_line(&ms) {
        println!("{l}");
    }
    print(measure::cost_lines(&ms));
    print(ms.iter().map(Measurement::partition_entries_line).collect());
    if let Some(base) = ms.first() {
        print(splits.iter().flat_map(|s| s.lines(base)).collect());
    }
    Ok(code)
}
