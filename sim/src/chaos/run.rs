//! Runs a chaos plan: build the world, start the workload, play faults during the safety
//! phase, heal everything, and require convergence within the liveness bound. The checker
//! watches every event; the first violation ends the run.

use std::time::Duration;

use mirror_core::protocol::{ClusterIdx, NodeId, NodeRole};
use mirror_core::types::{BrokerId, Offset, TopicPartition};

use super::plan::{ChaosFault, ChaosPlan, ClientPlan, CrashMode};
use crate::check::Violation;
use crate::disk::CrashPolicy;
use crate::kafka::{ClusterSpec, KafkaWorld, KafkaWorldSpec};
use crate::net::{Direction, NetConfig, NodeSet};
use crate::workload::{ClientNode, Consumer, ConsumerConfig, Producer, ProducerConfig};
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
    /// Observe the run for `mirrorsim report` / `dump` (a timeline, a replica's files).
    pub tap: Option<crate::report::Tap>,
    /// KIP-1279 design preset or ablation for every cluster (`None` = the default design).
    pub mirror_design: Option<String>,
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
pub fn run_plan(plan: ChaosPlan, opts: &ChaosOptions) -> ChaosOutcome {
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
            if opts.mirror_design.is_some() {
                c.tuning.mirror_design.clone_from(&opts.mirror_design);
            }
            c
        })
        .collect();
    KafkaWorldSpec {
        clusters,
        net: NetConfig::default(),
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
    start_clients(&w, &plan);
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

/// What the operator did to the mirror during the run.
#[derive(Clone, Debug, Default)]
struct MirrorOps {
    stopped: bool,
    failed_back: bool,
}

fn leader_batches(
    w: &KafkaWorld,
    c: ClusterIdx,
    tp: &TopicPartition,
) -> Option<Vec<mirror_core::record::RecordBatch>> {
    let l = w.leader(c, tp)?;
    w.with_broker(c, l, |b| {
        b.partition(tp).map(|p| p.log.batches().cloned().collect())
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
            if compare {
                let (a, b) = (leader_batches(w, src, &tp), leader_batches(w, dst, &tp));
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

fn start_clients(w: &KafkaWorld, plan: &ChaosPlan) {
    let c0 = ClusterIdx(0);
    let brokers = w.broker_ids(c0);
    for (i, c) in plan.clients.iter().enumerate() {
        let seed = plan.seed.wrapping_mul(31).wrapping_add(i as u64);
        let brokers = brokers.clone();
        match c.clone() {
            ClientPlan::Producer { topic, acks, rate } => {
                let t = plan.topics[topic].clone();
                w.add_workload_client(c0, move |boot| {
                    let n = client_number(boot.id);
                    let mut cfg = ProducerConfig::new(
                        n,
                        c0,
                        brokers.clone(),
                        &t.name,
                        (0..t.partitions).collect(),
                    );
                    cfg.acks = acks;
                    // Kafka refuses idempotence without acks=all: such producers are plain.
                    cfg.idempotent = acks == -1;
                    cfg.records_per_second = f64::from(rate);
                    cfg.seed = seed;
                    ClientNode::Producer(Box::new(Producer::new(cfg)))
                });
            }
            ClientPlan::TransactionalProducer {
                topic,
                abort_one_in,
                rate,
            } => {
                let t = plan.topics[topic].clone();
                w.add_workload_client(c0, move |boot| {
                    let n = client_number(boot.id);
                    let mut cfg = ProducerConfig::new(
                        n,
                        c0,
                        brokers.clone(),
                        &t.name,
                        (0..t.partitions).collect(),
                    );
                    cfg.transactional_id = Some(format!("txn-{n}"));
                    cfg.records_per_second = f64::from(rate);
                    cfg.txn.abort_probability = if abort_one_in == 0 {
                        0.0
                    } else {
                        1.0 / f64::from(abort_one_in)
                    };
                    cfg.seed = seed;
                    ClientNode::Producer(Box::new(Producer::new(cfg)))
                });
            }
            ClientPlan::Consumer {
                topic,
                read_committed,
            } => {
                let t = plan.topics[topic].clone();
                w.add_workload_client(c0, move |boot| {
                    let n = client_number(boot.id);
                    let mut cfg = ConsumerConfig::new(
                        n,
                        c0,
                        brokers.clone(),
                        &t.name,
                        (0..t.partitions).collect(),
                    );
                    cfg.group = Some(format!("g{n}"));
                    cfg.read_committed = read_committed;
                    cfg.seed = seed;
                    ClientNode::Consumer(Box::new(Consumer::new(cfg)))
                });
            }
        }
    }
}

fn client_number(id: NodeId) -> u32 {
    match id.role {
        NodeRole::Client(n) => n,
        _ => 0,
    }
}

async fn apply(
    w: &KafkaWorld,
    plan: &ChaosPlan,
    f: &ChaosFault,
    ops: &std::sync::Arc<std::sync::Mutex<MirrorOps>>,
) {
    let names: Vec<String> = plan.topics.iter().map(|t| t.name.clone()).collect();
    let (src, dst) = (ClusterIdx(0), ClusterIdx(1));
    match f {
        ChaosFault::StopMirror => {
            let w2 = w.clone();
            let ops = std::sync::Arc::clone(ops);
            madsim::task::spawn(async move {
                let refs: Vec<&str> = names.iter().map(String::as_str).collect();
                if w2.stop_mirror_topics(dst, "m1", &refs).await.is_ok()
                    && let Ok(mut o) = ops.lock()
                {
                    o.stopped = true;
                }
            });
            return;
        }
        ChaosFault::PauseMirror { for_ms } => {
            let w2 = w.clone();
            let d = *for_ms;
            madsim::task::spawn(async move {
                let refs: Vec<&str> = names.iter().map(String::as_str).collect();
                if w2.pause_mirror_topics(dst, "m1", &refs, true).await.is_ok() {
                    madsim::time::sleep(Duration::from_millis(d)).await;
                    let _ = w2.pause_mirror_topics(dst, "m1", &refs, false).await;
                }
            });
            return;
        }
        ChaosFault::Failback => {
            let stopped = ops
                .lock()
                .map(|o| o.stopped && !o.failed_back)
                .unwrap_or(false);
            if !stopped {
                return;
            }
            let w2 = w.clone();
            let ops = std::sync::Arc::clone(ops);
            madsim::task::spawn(async move {
                let refs: Vec<&str> = names.iter().map(String::as_str).collect();
                let _ = w2.create_mirror(src, "back", dst).await;
                if w2
                    .start_mirror_topics(src, "back", dst, &refs)
                    .await
                    .is_ok()
                    && let Ok(mut o) = ops.lock()
                {
                    o.failed_back = true;
                }
            });
            return;
        }
        _ => {}
    }
    let broker = |cluster: u16, b: i32| NodeId::broker(ClusterIdx(cluster), BrokerId(b));
    match f {
        ChaosFault::Crash {
            cluster,
            broker: b,
            mode,
            down_ms,
        } => {
            let policy = match mode {
                CrashMode::Process => CrashPolicy::KeepAll,
                CrashMode::PowerLoss => CrashPolicy::LoseAllUnflushed,
                CrashMode::Torn => CrashPolicy::KeepRandomPrefix,
            };
            let n = broker(*cluster, *b);
            if w.world.crash(n, policy) {
                let w2 = w.clone();
                let d = *down_ms;
                madsim::task::spawn(async move {
                    madsim::time::sleep(Duration::from_millis(d)).await;
                    if w2.world.status(n).is_down() {
                        w2.world.restart(n);
                    }
                });
            }
        }
        ChaosFault::Restart { cluster, broker: b } => {
            let n = broker(*cluster, *b);
            if w.world.status(n).is_down() {
                w.world.restart(n);
            }
        }
        ChaosFault::Pause {
            cluster,
            broker: b,
            for_ms,
        } => {
            let n = broker(*cluster, *b);
            if w.world.pause(n) {
                let w2 = w.clone();
                let d = *for_ms;
                madsim::task::spawn(async move {
                    madsim::time::sleep(Duration::from_millis(d)).await;
                    w2.world.resume(n);
                });
            }
        }
        ChaosFault::Isolate {
            cluster,
            broker: b,
            for_ms,
        } => {
            let id = w.world.isolate(broker(*cluster, *b));
            heal_later(w, id, *for_ms);
        }
        ChaosFault::IsolateFromController {
            cluster,
            broker: b,
            for_ms,
        } => {
            let id = w.world.partition(
                NodeSet::node(broker(*cluster, *b)),
                NodeSet::node(NodeId::controller(ClusterIdx(*cluster))),
                Direction::Both,
            );
            heal_later(w, id, *for_ms);
        }
        ChaosFault::PacketLoss { permille, for_ms } => {
            w.world.packet_loss(f64::from(*permille) / 1000.0);
            let w2 = w.clone();
            let d = *for_ms;
            madsim::task::spawn(async move {
                madsim::time::sleep(Duration::from_millis(d)).await;
                w2.world.packet_loss(0.0);
            });
        }
        ChaosFault::UncleanElection {
            cluster,
            topic,
            partition,
        } => {
            let tp = TopicPartition::new(plan.topics[*topic].name.as_str(), *partition);
            let w2 = w.clone();
            let c = ClusterIdx(*cluster);
            madsim::task::spawn(async move {
                let _ = w2.unclean_election(c, &tp).await;
            });
        }
        ChaosFault::StopMirror | ChaosFault::PauseMirror { .. } | ChaosFault::Failback => {}
        ChaosFault::DeleteRecords {
            cluster,
            topic,
            partition,
        } => {
            let tp = TopicPartition::new(plan.topics[*topic].name.as_str(), *partition);
            let c = ClusterIdx(*cluster);
            let hw = w
                .leader(c, &tp)
                .and_then(|l| w.replica_offsets(c, l, &tp))
                .map_or(Offset(0), |(_, hw)| hw);
            let w2 = w.clone();
            madsim::task::spawn(async move {
                let _ = w2.delete_records(c, &tp, Offset(hw.0 / 2)).await;
            });
        }
    }
}

fn heal_later(w: &KafkaWorld, id: crate::net::FaultId, for_ms: u64) {
    let w2 = w.clone();
    madsim::task::spawn(async move {
        madsim::time::sleep(Duration::from_millis(for_ms)).await;
        w2.world.heal(id);
    });
}
