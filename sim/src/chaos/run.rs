//! Runs a chaos plan: build the world, start the workload, play faults during the safety
//! phase, heal everything, and require convergence within the liveness bound. The checker
//! watches every event; the first violation ends the run.

use std::time::Duration;

use mirror_core::protocol::{ClusterIdx, NodeRole};
use mirror_core::record::RecordBatch;
use mirror_core::types::{Offset, TopicPartition};

use super::actions::{MirrorOps, apply};
use super::clients::start_clients;
use super::plan::ChaosPlan;
use crate::check::Violation;
use crate::kafka::{ClusterSpec, KafkaWorld, KafkaWorldSpec};
use crate::net::NetConfig;
use crate::world::{RunReport, run_seed};

/// How a run ended.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// Every invariant held and the system converged.
    Pass,
    /// An invariant broke.
    Violation(Violation),
    /// The system did not converge in the liveness phase.
    Liveness {
        /// What did not converge.
        detail: String,
    },
    /// A node or the harness panicked (a broken internal assertion).
    Crash {
        /// The panic message.
        message: String,
    },
}

impl Verdict {
    /// True for `Pass`.
    #[must_use]
    pub fn is_pass(&self) -> bool {
        matches!(self, Verdict::Pass)
    }

    /// The short name (`pass`, `violation:log_matching`, `liveness`, `crash`).
    #[must_use]
    pub fn short(&self) -> String {
        match self {
            Verdict::Pass => "pass".into(),
            Verdict::Violation(v) => format!("violation:{}", v.invariant),
            Verdict::Liveness { .. } => "liveness".into(),
            Verdict::Crash { .. } => "crash".into(),
        }
    }
}

/// The result of one seed.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ChaosOutcome {
    /// Seed.
    pub seed: u64,
    /// Verdict.
    pub verdict: Verdict,
    /// The run report (trace hash, simulated seconds, events, compact trace).
    pub report: Option<RunReport>,
    /// The plan that ran.
    pub plan: ChaosPlan,
}

/// Options that change a run without changing its plan.
#[derive(Clone, Debug, Default)]
pub struct ChaosOptions {
    /// Planted bug: leaders ignore the ISR when advancing the HW.
    pub ablation_hw_ignores_isr: bool,
    /// Keep verbose trace lines.
    pub verbose_trace: bool,
    /// Draw two-cluster KIP-1279 plans (`ChaosPlan::mirror`) instead of single-cluster ones.
    pub mirror: bool,
    /// Replace the plan's KIP-1279 design (`--design`): the same seed then runs the same
    /// world and schedule against another design.
    pub design: Option<String>,
    /// Observe the run for `mirrorsim report` / `dump` (a timeline, a replica's files).
    pub tap: Option<crate::report::Tap>,
}

/// Runs one seed on a fresh thread and runtime.
#[must_use]
pub fn run_chaos_seed(seed: u64, opts: &ChaosOptions) -> ChaosOutcome {
    let plan = if opts.mirror {
        ChaosPlan::mirror(seed)
    } else {
        ChaosPlan::single_cluster(seed)
    };
    run_plan(plan, opts)
}

/// Runs a plan (a capsule replays through here).
#[must_use]
pub fn run_plan(mut plan: ChaosPlan, opts: &ChaosOptions) -> ChaosOutcome {
    // `--design` replaces the plan's design (seeds and capsules alike); the outcome's plan
    // records the design that ran.
    if let Some(d) = &opts.design {
        plan.design.clone_from(d);
    }
    let seed = plan.seed;
    let p2 = plan.clone();
    let opts = opts.clone();
    let res = run_seed(seed, move || async move { execute(p2, opts).await });
    match res {
        Ok((verdict, report)) => ChaosOutcome {
            seed,
            verdict,
            report: Some(report),
            plan,
        },
        Err(message) => ChaosOutcome {
            seed,
            verdict: Verdict::Crash { message },
            report: None,
            plan,
        },
    }
}

fn spec_of(plan: &ChaosPlan, opts: &ChaosOptions) -> KafkaWorldSpec {
    let clusters = plan
        .brokers
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let mut c = ClusterSpec::new(if i == 0 { "src" } else { "dst" }, *b);
            c.unclean_leader_election_enable = plan.unclean_leader_election_enable;
            c.tuning.log_flush_interval_ms = plan.log_flush_interval_ms;
            c.tuning.ablation_hw_ignores_isr = opts.ablation_hw_ignores_isr;
            c.tuning.mirror_design = Some(plan.design.clone());
            c
        })
        .collect();
    KafkaWorldSpec {
        clusters,
        net: plan
            .net
            .as_ref()
            .map_or_else(NetConfig::default, super::plan::NetPlan::config),
    }
}

async fn execute(plan: ChaosPlan, opts: ChaosOptions) -> (Verdict, RunReport) {
    let w = KafkaWorld::start_traced(spec_of(&plan, &opts), opts.verbose_trace);
    if let Some(tap) = &opts.tap {
        tap.attach(&w);
    }
    let c0 = ClusterIdx(0);
    w.run_for_ms(3_000).await;
    for t in &plan.topics {
        let min_isr = t.min_insync_replicas.to_string();
        w.create_topic(
            c0,
            &t.name,
            t.partitions,
            t.replication_factor,
            &[("min.insync.replicas", min_isr.as_str())],
        )
        .await;
    }
    let ops = std::sync::Arc::new(std::sync::Mutex::new(MirrorOps::default()));
    if plan.mirror {
        let names: Vec<&str> = plan.topics.iter().map(|t| t.name.as_str()).collect();
        w.create_mirror(ClusterIdx(1), "m1", c0).await;
        w.start_mirror_topics(ClusterIdx(1), "m1", c0, &names).await;
    }
    let source_clients = start_clients(&w, &plan);
    if let Ok(mut o) = ops.lock() {
        o.source_clients = source_clients;
    }
    let start = w.world.now();
    for step in &plan.faults {
        let at = start.plus_millis(i64::try_from(step.at_ms).unwrap_or(i64::MAX));
        let now = w.world.now();
        if at > now {
            madsim::time::sleep(Duration::from_micros(at.0 - now.0)).await;
        }
        if w.violation().is_some() {
            break;
        }
        apply(&w, &plan, &step.fault, &ops).await;
    }
    let end = start.plus_millis(i64::try_from(plan.safety_ms).unwrap_or(i64::MAX));
    let now = w.world.now();
    if end > now && w.violation().is_none() {
        madsim::time::sleep(Duration::from_micros(end.0 - now.0)).await;
    }
    // Liveness phase: heal everything, restart what is down, stop producing, require
    // convergence.
    w.world.heal_all();
    if let Ok(mut o) = ops.lock() {
        o.liveness = true;
    }
    w.stop_producers();
    for n in w.world.down_nodes() {
        if !matches!(n.role, NodeRole::Client(_)) {
            w.world.restart(n);
        }
    }
    let verdict = if let Some(v) = w.violation() {
        Verdict::Violation(v)
    } else {
        let converged = w
            .wait_until(plan.liveness_ms, |w| {
                (converged(w, &plan).is_none() && mirror_converged(w, &plan, &ops).is_none())
                    || w.violation().is_some()
            })
            .await;
        match (w.finish(), converged) {
            (Some(v), _) => Verdict::Violation(v),
            (None, true) => Verdict::Pass,
            (None, false) => Verdict::Liveness {
                detail: converged_detail(&w, &plan, &ops),
            },
        }
    };
    if let Some(tap) = &opts.tap {
        tap.finish(&w);
    }
    (verdict, w.world.report(plan.seed))
}

fn converged_detail(w: &KafkaWorld, plan: &ChaosPlan, ops: &std::sync::Mutex<MirrorOps>) -> String {
    converged(w, plan)
        .or_else(|| mirror_converged(w, plan, ops))
        .unwrap_or_else(|| "converged late".into())
}

/// The leader's log start, LEO and batches.
fn leader_log(
    w: &KafkaWorld,
    c: ClusterIdx,
    tp: &TopicPartition,
) -> Option<(Offset, Offset, Vec<RecordBatch>)> {
    let l = w.leader(c, tp)?;
    w.with_broker(c, l, |b| {
        b.partition(tp).map(|p| {
            (
                p.log.log_start_offset(),
                p.log.log_end_offset(),
                p.log.batches().cloned().collect(),
            )
        })
    })
    .flatten()
}

/// `None` when the mirror reached what the operator asked for: identical logs in MIRRORING,
/// STOPPED after a stop, identical logs again after a failback.
fn mirror_converged(
    w: &KafkaWorld,
    plan: &ChaosPlan,
    ops: &std::sync::Mutex<MirrorOps>,
) -> Option<String> {
    use mirror_core::mirror::MirrorPartitionState as S;
    if !plan.mirror {
        return None;
    }
    let ops = ops.lock().map(|o| o.clone()).unwrap_or_default();
    let (src, dst) = (ClusterIdx(0), ClusterIdx(1));
    for t in &plan.topics {
        for p in 0..t.partitions {
            let tp = TopicPartition::new(t.name.as_str(), p);
            let (cluster, want, compare) = if ops.failed_back {
                (src, S::Mirroring, true)
            } else if ops.stopped {
                (dst, S::Stopped, false)
            } else {
                (dst, S::Mirroring, true)
            };
            let state = w.mirror_state(cluster, &tp);
            if state != Some(want) {
                return Some(format!(
                    "{tp} on cluster {} is {state:?}, want {want}",
                    cluster.0
                ));
            }
            if compare && ops.failed_back {
                // After a failback the old source is a mirror destination whose log start only
                // ever moves up (kip1279 A.1 MIRRORING: "makes the destination log start follow
                // the source's", i.e. `maybeIncrementLogStartOffset`), and a mirror truncation
                // below its own log start leaves it at the target (kafka-semantics: UnifiedLog
                // `truncateTo` sets `logStartOffset = min(target, logStartOffset)`). A
                // DeleteRecords on the old source while it was not a mirror therefore
                // legitimately removes a prefix the new source still holds: the logs must agree
                // from the later log start to the same LEO, as `failback_converges` checks.
                let (a, b) = (leader_log(w, src, &tp), leader_log(w, dst, &tp));
                let agree = match (&a, &b) {
                    (Some((sa, ea, la)), Some((sb, eb, lb))) => {
                        let start = (*sa).max(*sb);
                        let from = |l: &[RecordBatch]| -> Vec<RecordBatch> {
                            l.iter()
                                .filter(|b| b.base_offset() >= start)
                                .cloned()
                                .collect()
                        };
                        ea == eb && from(la) == from(lb)
                    }
                    _ => false,
                };
                if !agree {
                    return Some(format!("{tp}: logs differ between the clusters"));
                }
            } else if compare {
                let (a, b) = (
                    crate::scenario::inspect::leader_log(w, src, &tp),
                    crate::scenario::inspect::leader_log(w, dst, &tp),
                );
                if a.is_none() || a != b {
                    return Some(format!("{tp}: logs differ between the clusters"));
                }
            }
        }
    }
    None
}

/// `None` when every partition has a leader, a full ISR, and every replica's LEO and HW
/// equal the leader's.
fn converged(w: &KafkaWorld, plan: &ChaosPlan) -> Option<String> {
    for c in 0..plan.brokers.len() {
        if let Some(d) = converged_on(w, plan, ClusterIdx(u16::try_from(c).unwrap_or(0))) {
            return Some(d);
        }
    }
    None
}

fn converged_on(w: &KafkaWorld, plan: &ChaosPlan, c0: ClusterIdx) -> Option<String> {
    if c0.0 > 0 && !plan.mirror {
        return None;
    }
    for t in &plan.topics {
        for p in 0..t.partitions {
            let tp = TopicPartition::new(t.name.as_str(), p);
            let Some(leader) = w.leader(c0, &tp) else {
                return Some(format!("{tp} has no leader"));
            };
            let Some((leo, hw)) = w.replica_offsets(c0, leader, &tp) else {
                return Some(format!("{tp} leader {leader} has no replica"));
            };
            if hw != leo {
                return Some(format!("{tp} leader HW {hw} != LEO {leo}"));
            }
            let replicas = w
                .with_broker(c0, leader, |b| {
                    b.partition(&tp).map(|p| (p.replicas.clone(), p.isr()))
                })
                .flatten();
            let Some((replicas, isr)) = replicas else {
                return Some(format!("{tp} leader state missing"));
            };
            if isr.len() != replicas.len() {
                return Some(format!("{tp} ISR {isr:?} of replicas {replicas:?}"));
            }
            for r in replicas {
                if w.replica_offsets(c0, r, &tp) != Some((leo, hw)) {
                    return Some(format!(
                        "{tp} replica {r} at {:?}, leader at {:?}",
                        w.replica_offsets(c0, r, &tp),
                        (leo, hw)
                    ));
                }
            }
        }
    }
    None
}
