//! `mirrorsim bench`: speed on the reference world (product.md §9), measured, never assumed.
//! Prints simulated seconds per wall second, seeds per core-hour, events per wall second and
//! the process's peak memory, for the reference scale and its scale-ups.

use crate::chaos::plan::TopicPlan;
use crate::chaos::{
    ChaosFault, ChaosOptions, ChaosPlan, ClientPlan, CrashMode, FaultStep, run_plan,
};

/// The reference world at `scale` (product.md §9): a source and a destination cluster of 3
/// brokers each, 2 topics × 4·scale partitions (RF 3) on the source mirrored into the
/// destination (KIP-1279, seed design), producers writing 1000·scale records/s in total, a
/// consumer, 60 simulated seconds with a source broker crash, a destination broker crash and
/// an isolation, then the liveness phase (the mirror must converge).
#[must_use]
pub fn reference_plan(scale: u32) -> ChaosPlan {
    let partitions = 4 * i32::try_from(scale).unwrap_or(1);
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
            rate: 500 * scale,
            max_in_flight: 5,
        },
        ClientPlan::Producer {
            topic: 1,
            acks: -1,
            rate: 500 * scale,
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

/// Runs the benchmark for the comma-separated `scales`.
pub fn run(scales: &str) -> Result<i32, super::CliError> {
    let scales: Vec<u32> = scales
        .split(',')
        .map(|s| s.trim().parse::<u32>().ok().filter(|n| *n > 0))
        .collect::<Option<_>>()
        .ok_or_else(|| {
            super::CliError::BadArgument(format!(
                "--scales: expected positive integers, got `{scales}`"
            ))
        })?;
    println!(
        "reference world: source and destination of 3 brokers each, 2 topics × 4·k partitions RF 3"
    );
    println!(
        "mirrored (seed design), 1000·k records/s, 60 s with crashes on both sides and an isolation,"
    );
    println!("then the liveness phase until the mirror converges; one thread");
    println!();
    println!(
        "{:>5} {:>10} {:>8} {:>10} {:>12} {:>14} {:>14} {:>9}",
        "scale",
        "verdict",
        "sim s",
        "wall s",
        "sim s/wall s",
        "seeds/core-h",
        "events/wall s",
        "peak MiB"
    );
    let mut code = 0;
    for k in scales {
        let plan = reference_plan(k);
        let start = std::time::Instant::now();
        let o = run_plan(plan, &ChaosOptions::default());
        let wall = start.elapsed().as_secs_f64();
        let (sim, events) = o
            .report
            .as_ref()
            .map_or((0.0, 0), |r| (r.sim_seconds, r.events));
        if !o.verdict.is_pass() {
            code = 1;
        }
        println!(
            "{k:>5} {:>10} {sim:>8.1} {wall:>10.3} {:>12.0} {:>14.0} {:>14.0} {:>9.1}",
            o.verdict.short(),
            sim / wall.max(1e-9),
            3600.0 / wall.max(1e-9),
            events as f64 / wall.max(1e-9),
            super::memory::peak_resident_mib().unwrap_or(f64::NAN)
        );
    }
    Ok(code)
}
