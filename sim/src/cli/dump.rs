//! `mirrorsim dump TARGET --cluster N --topic T --partition P [--broker B] [--out DIR]`:
//! replays a chaos seed or capsule to its end and writes one replica's log as Kafka segment
//! files in `DIR/<topic>-<partition>/` (product §7), readable by Kafka's `kafka-dump-log.sh`.

use std::path::{Path, PathBuf};

use mirror_core::protocol::ClusterIdx;
use mirror_core::types::{BrokerId, TopicPartition};

use super::CliError;
use super::report::{load_plan, run_options, write_file};
use crate::chaos::{ChaosPlan, run_plan};
use crate::report::Tap;
use crate::report::segments::dump_partition;

/// What to dump.
#[derive(Clone, Debug)]
pub struct DumpArgs<'a> {
    /// Seed or capsule.
    pub target: &'a str,
    /// The seed is a mirror plan.
    pub mirror: bool,
    /// KIP-1279 design.
    pub design: Option<&'a str>,
    /// Planted bug.
    pub ablation: Option<&'a str>,
    /// Cluster index (`0`, `1`) or name (`src`, `dst`).
    pub cluster: &'a str,
    /// Topic.
    pub topic: &'a str,
    /// Partition.
    pub partition: i32,
    /// Broker id (default: the leader at the end).
    pub broker: Option<i32>,
    /// Output directory.
    pub out: Option<&'a Path>,
}

/// The cluster index an argument names, checked against the plan.
fn cluster_of(plan: &ChaosPlan, arg: &str) -> Result<ClusterIdx, CliError> {
    let n = plan.brokers.len();
    let idx = match arg {
        "src" => Some(0),
        "dst" => Some(1),
        _ => arg.parse::<usize>().ok(),
    };
    match idx {
        Some(i) if i < n => Ok(ClusterIdx(u16::try_from(i).unwrap_or(0))),
        _ => Err(CliError::BadArgument(format!(
            "--cluster `{arg}`: the run has {n} cluster(s) (0{}{})",
            if n > 1 { "..=" } else { "" },
            if n > 1 {
                (n - 1).to_string()
            } else {
                String::new()
            }
        ))),
    }
}

/// Checks the topic, partition and broker against the plan.
fn check_target(plan: &ChaosPlan, c: ClusterIdx, a: &DumpArgs<'_>) -> Result<(), CliError> {
    let Some(t) = plan.topics.iter().find(|t| t.name == a.topic) else {
        let names: Vec<&str> = plan.topics.iter().map(|t| t.name.as_str()).collect();
        return Err(CliError::BadArgument(format!(
            "--topic `{}`: not in the run (topics: {})",
            a.topic,
            names.join(", ")
        )));
    };
    if a.partition < 0 || a.partition >= t.partitions {
        return Err(CliError::BadArgument(format!(
            "--partition {}: `{}` has partitions 0..{}",
            a.partition, a.topic, t.partitions
        )));
    }
    let brokers = i32::from(plan.brokers[usize::from(c.0)]);
    if let Some(b) = a.broker
        && !(1..=brokers).contains(&b)
    {
        return Err(CliError::BadArgument(format!(
            "--broker {b}: cluster {} has brokers 1..={brokers}",
            c.0
        )));
    }
    Ok(())
}

/// Runs `dump`; returns the exit code (0 written, 1 the run crashed before its end or the
/// replica has no log).
pub fn run(a: &DumpArgs<'_>) -> Result<i32, CliError> {
    let plan = load_plan(a.target, a.mirror)?;
    let cluster = cluster_of(&plan, a.cluster)?;
    check_target(&plan, cluster, a)?;
    let mut opts = run_options(a.ablation, a.design)?;
    let tp = TopicPartition::new(a.topic, a.partition);
    let tap = Tap::keeping_files(cluster, a.broker.map(BrokerId), tp.clone());
    opts.tap = Some(tap.clone());
    let seed = plan.seed;
    let o = run_plan(plan, &opts);
    println!("run: seed {seed} verdict {}", o.verdict.short());
    let Some((broker, files)) = tap.files() else {
        eprintln!(
            "mirrorsim: the run ended before its world could be read ({})",
            o.verdict.short()
        );
        return Ok(1);
    };
    let dir_name = mirror_core::broker::storage::partition_dir(&tp);
    let dumped = match dump_partition(&files, &dir_name) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("mirrorsim: broker {broker} of cluster {}: {e}", cluster.0);
            return Ok(1);
        }
    };
    let base = a.out.map_or_else(
        || PathBuf::from(format!("target/mirrorsim/dump-{seed}")),
        Path::to_path_buf,
    );
    let dir = base.join(&dir_name);
    println!(
        "replica: cluster {} broker {broker} {tp} ({} segment(s))",
        cluster.0,
        dumped.segments.len()
    );
    for (name, bytes) in dumped.files() {
        let path = dir.join(&name);
        write_file(&path, &bytes)?;
        println!("  {}  {} bytes", path.display(), bytes.len());
    }
    for s in dumped.segments.iter().filter(|s| s.dropped_bytes > 0) {
        println!(
            "  note: segment {:020} had a torn tail of {} bytes, left out",
            s.base, s.dropped_bytes
        );
    }
    Ok(0)
}
