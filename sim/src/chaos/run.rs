//! Runs a chaos plan: build the world, start the workload, play faults during the safety
//! phase, heal everything, and require convergence within the liveness bound. The checker
//! watches every event; the first violation ends the run.

use std::time::Duration;

use mirror_core::protocol::{ClusterIdx, NodeRole};

use super::actions::{MirrorOps, apply};
use super::clients::start_clients;
use super::converge;
use super::plan::ChaosPlan;
use super::site::{self, FailureSite};
use crate::check::Violation;
use crate::kafka::{ClusterSpec, KafkaWorld, KafkaWorldSpec};
use crate::net::NetConfig;
use crate::trace::EVENT_LIMIT_EXCEEDED;
use crate::world::harness::DEFAULT_TIME_LIMIT;
use crate::world::{RunReport, run_seed_with_limit};

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

    /// True for a run stopped by its [`RunLimits`] (simulated time or events), which says
    /// nothing about the plan but that it runs longer than allowed.
    #[must_use]
    pub fn is_limit(&self) -> bool {
        matches!(self, Verdict::Crash { message } if is_limit_message(message))
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
    /// Where it failed (`None` for a pass), for grouping failures.
    pub site: Option<FailureSite>,
    /// The run report (trace hash, simulated seconds, events, compact trace).
    pub report: Option<RunReport>,
    /// Design-mechanism rules that broke (diagnostics, first of each, in order): the likely
    /// mechanism beside the verdict (`check::CheckKind::Mechanism`).
    pub diagnostics: Vec<Violation>,
    /// Declared losses by cause and the failover RPO.
    pub losses: crate::check::ghost::LossSummary,
    /// The plan that ran.
    pub plan: ChaosPlan,
}

impl ChaosOutcome {
    /// The verdict's kind for baselines (`.ci/known-mirror-findings.txt`): the short verdict,
    /// and for a liveness failure what did not converge ([`FailureSite::stuck`], spaces as
    /// `_`: `liveness:isr_short`, `liveness:state_FAILED_want_MIRRORING`). A known liveness
    /// finding then only covers new seeds stuck the same way, not every liveness failure.
    /// A violation's site may qualify it the same way
    /// (`violation:lso_reaches_hw:mirror_cut_inside_txn`, [`MIRROR_CUT_INSIDE_TXN`]).
    #[must_use]
    pub fn kind(&self) -> String {
        verdict_kind(&self.verdict, self.site.as_ref())
    }
}

/// The qualifier of an `lso_reaches_hw` violation on the failback target whose open
/// transaction a mirror truncation cut through ([`KafkaWorld::mirror_cut_inside_open_txn`]):
/// kind `violation:lso_reaches_hw:mirror_cut_inside_txn`.
pub const MIRROR_CUT_INSIDE_TXN: &str = "mirror_cut_inside_txn";

/// The qualifier of an `lso_reaches_hw` violation whose open transaction Kafka's own
/// transaction coordinator lost: it answered from a loaded record that never committed
/// ([`KafkaWorld::coordinator_lost_open_txn`]): kind
/// `violation:lso_reaches_hw:coordinator_lost_txn`, a finding about Kafka, not the KIP.
pub const COORDINATOR_LOST_TXN: &str = "coordinator_lost_txn";

/// The kind of a liveness failure where every log converged but a workload producer never
/// finished the batch or transaction it held when the producers were stopped:
/// `liveness:client_busy`.
pub const CLIENT_BUSY: &str = "client_busy";

/// The qualifier of a `synced_offset_in_bounds` violation whose destination log a declared
/// mirror truncation cut below the synced offset
/// ([`KafkaWorld::mirror_truncation_below`]): kind
/// `violation:synced_offset_in_bounds:under_mirror_truncation`, a finding of the KIP (the
/// sync clamps to a LEO read when its round starts, B §8.11, and commits later).
pub const UNDER_MIRROR_TRUNCATION: &str = "under_mirror_truncation";

/// [`ChaosOutcome::kind`] from its parts.
#[must_use]
pub fn verdict_kind(verdict: &Verdict, site: Option<&FailureSite>) -> String {
    match (verdict, site.and_then(|s| s.stuck.as_deref())) {
        (Verdict::Violation(v), Some(qualifier)) => {
            format!("violation:{}:{qualifier}", v.invariant)
        }
        (Verdict::Liveness { .. }, Some(stuck)) => {
            format!(
                "liveness:{}",
                stuck.split_whitespace().collect::<Vec<_>>().join("_")
            )
        }
        _ => verdict.short(),
    }
}

/// Options that change a run without changing its plan.
#[derive(Clone, Debug, Default)]
pub struct ChaosOptions {
    /// Planted bug: leaders ignore the ISR when advancing the HW.
    pub ablation_hw_ignores_isr: bool,
    /// Planted bug: recovery leaves a torn tail in the file (`recovery_idempotent` finds it).
    pub ablation_recovery_keeps_torn_tail: bool,
    /// Planted bug: workload producers defer a metadata refresh asked for while sending
    /// (`liveness:client_busy` finds it).
    pub ablation_producer_defers_metadata_refresh: bool,
    /// Keep verbose trace lines.
    pub verbose_trace: bool,
    /// Draw two-cluster KIP-1279 plans (`ChaosPlan::mirror`) instead of single-cluster ones.
    pub mirror: bool,
    /// Replace the plan's KIP-1279 design (`--design`): the same seed then runs the same
    /// world and schedule against another design.
    pub design: Option<String>,
    /// Observe the run for `mirrorsim report` / `dump` (a timeline, a replica's files).
    pub tap: Option<crate::report::Tap>,
    /// Stop the run early (shrink candidates): it then ends as a crash whose message says
    /// which limit ([`Verdict::is_limit`]).
    pub limits: Option<RunLimits>,
}

/// Bounds on one run.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RunLimits {
    /// Simulated time (madsim's time limit).
    pub sim_time: Duration,
    /// Trace events.
    pub events: u64,
}

/// Makes runs stopped by their [`RunLimits`] quiet: installs, once per process, a panic hook
/// that prints nothing for a limit's panic and defers to the previous hook for any other. A
/// shrink stops many candidates that way; each is an expected outcome, not a crash report.
pub fn quiet_limit_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let p = info.payload();
            let msg = p
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| p.downcast_ref::<&str>().copied())
                .unwrap_or("");
            if !is_limit_message(msg) {
                previous(info);
            }
        }));
    });
}

fn is_limit_message(m: &str) -> bool {
    m.contains("time limit exceeded") || m.contains(EVENT_LIMIT_EXCEEDED)
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
    let limit = opts.limits.map_or(DEFAULT_TIME_LIMIT, |l| l.sim_time);
    let res = run_seed_with_limit(seed, limit, move || async move { execute(p2, opts).await });
    match res {
        Ok((verdict, site, report, diagnostics, losses)) => ChaosOutcome {
            seed,
            verdict,
            site,
            report: Some(report),
            diagnostics,
            losses,
            plan,
        },
        Err(message) => ChaosOutcome {
            seed,
            verdict: Verdict::Crash { message },
            site: Some(site::of_crash()),
            report: None,
            diagnostics: Vec::new(),
            losses: crate::check::ghost::LossSummary::default(),
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
            c.tuning.ablation_recovery_keeps_torn_tail = opts.ablation_recovery_keeps_torn_tail;
            c.tuning.ablation_producer_defers_metadata_refresh =
                opts.ablation_producer_defers_metadata_refresh;
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

/// What one chaos run produced: its verdict, where it failed, the report, the diagnostics.
type Executed = (
    Verdict,
    Option<FailureSite>,
    RunReport,
    Vec<Violation>,
    crate::check::ghost::LossSummary,
);

async fn execute(plan: ChaosPlan, opts: ChaosOptions) -> Executed {
    let w = KafkaWorld::start_traced(spec_of(&plan, &opts), opts.verbose_trace);
    w.world.set_event_limit(opts.limits.map(|l| l.events));
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
            crate::world::clock::sleep(Duration::from_micros(at.0 - now.0)).await;
        }
        if w.violation().is_some() {
            break;
        }
        apply(&w, &plan, &step.fault, &ops).await;
    }
    let end = start.plus_millis(i64::try_from(plan.safety_ms).unwrap_or(i64::MAX));
    let now = w.world.now();
    if end > now && w.violation().is_none() {
        crate::world::clock::sleep(Duration::from_micros(end.0 - now.0)).await;
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
    // The persistent partial fault starts once the controller's view has settled (a broker
    // session timeout after the heal: brokers that were cut off are fenced or back by then),
    // so the broker it holds out is chosen on an ISR that no longer shrinks on its own.
    let held = if plan.persistent.is_some() && w.violation().is_none() {
        w.run_for_ms(super::persistent::SETTLE_MS).await;
        super::persistent::hold_out(&w, &plan)
    } else {
        super::persistent::HeldOut::new()
    };
    let snapshot = || ops.lock().map(|o| o.clone()).unwrap_or_default();
    let violated = |v: Violation| {
        let mut site = site::of_violation(&w, &plan, &snapshot(), &v);
        // A hanging transaction's known forms get their own kinds, so a known-findings file
        // can list them without covering every hanging transaction (`verdict_kind`): the F1
        // form (a failback cut that split it) and K1 (Kafka's coordinator lost it). Judged
        // alike whether the hang is found at the end of the run (a STOPPED mirror partition)
        // or in the liveness phase (fresh mirror seed 517001819: K1's zombie coordinator on
        // the new primary, first found at the end of the run and left unqualified).
        if v.invariant == "lso_reaches_hw"
            && let Some((cluster, b, tp)) = site::broker_replica(&v)
        {
            if site.cluster == "failback-target" && w.mirror_cut_inside_open_txn(cluster, b, &tp) {
                site.stuck = Some(MIRROR_CUT_INSIDE_TXN.into());
            } else if w.coordinator_lost_open_txn(cluster, b, &tp) {
                site.stuck = Some(COORDINATOR_LOST_TXN.into());
            }
        }
        if v.invariant == "synced_offset_in_bounds"
            && let (Some((cluster, _, tp)), Some(offset)) = (site::broker_replica(&v), v.offset)
            && w.mirror_truncation_below(cluster, &tp, mirror_core::types::Offset(offset))
        {
            site.stuck = Some(UNDER_MIRROR_TRUNCATION.into());
        }
        (Verdict::Violation(v), Some(site))
    };
    let (verdict, site) = if let Some(v) = w.violation() {
        violated(v)
    } else {
        // Converged means settled: the logs agree and every producer has finished what it
        // held when the producers were stopped. A transactional batch still in flight when
        // the logs first agree can hang its transaction after they do (fresh single-cluster
        // seed 971804: K1's batch was appended 2 ms after the run had ended).
        let converged = w
            .wait_until(plan.liveness_ms, |w| {
                let ops = ops.lock().map(|o| o.clone()).unwrap_or_default();
                (converge::converged(w, &plan, &ops, &held) && w.producers_busy().is_empty())
                    || w.violation().is_some()
            })
            .await;
        match (w.finish(), converged) {
            (Some(v), _) => violated(v),
            (None, true) => (Verdict::Pass, None),
            (None, false) => {
                let ops = snapshot();
                let stuck = converge::stuck(&w, &plan, &ops, &held);
                let busy = w.producers_busy();
                match stuck {
                    // Converged, but for a source HW Kafka leaves below its LEO until a next
                    // write that never comes (`converge::stuck_below_source_hw`).
                    Some(_)
                        if converge::stuck_below_source_hw(&w, &plan, &ops, &held).is_none() =>
                    {
                        (Verdict::Pass, None)
                    }
                    // A hanging transaction is the `lso_reaches_hw` outcome, not a stall.
                    Some(s) if s.kind == converge::LSO_BELOW_HW => {
                        let node = s.broker.map_or_else(
                            || format!("c{}", s.cluster.0),
                            |b| {
                                w.world
                                    .names()
                                    .node(mirror_core::protocol::NodeId::broker(s.cluster, b))
                            },
                        );
                        let mut v =
                            Violation::new("lso_reaches_hw", node, Some(&s.tp), None, s.detail);
                        v.t_micros = w.world.now().0;
                        violated(v)
                    }
                    // Every log converged but a producer still holds a batch or a
                    // transaction it could not finish: a stuck client, the user's outcome.
                    None if !busy.is_empty() => {
                        let names = w.world.names();
                        let busy: Vec<String> = busy.into_iter().map(|n| names.node(n)).collect();
                        let detail = format!(
                            "producers still holding a batch or a transaction at the end of \
                             the liveness phase: {}",
                            busy.join(", ")
                        );
                        let site = site::FailureSite {
                            cluster: "-".into(),
                            replica: "client".into(),
                            stuck: Some(CLIENT_BUSY.into()),
                        };
                        (Verdict::Liveness { detail }, Some(site))
                    }
                    stuck => {
                        let site = site::of_stuck(&w, &plan, &ops, stuck.as_ref());
                        let detail = stuck.map_or_else(
                            || "converged late".to_string(),
                            |s| {
                                // The mirror did not reach what the operator asked for:
                                // the `mirror_progress` outcome.
                                if s.kind.starts_with("state") || s.kind.starts_with("logs_differ")
                                {
                                    format!("mirror_progress ({}): {}", s.kind, s.detail)
                                } else {
                                    s.detail
                                }
                            },
                        );
                        (Verdict::Liveness { detail }, Some(site))
                    }
                }
            }
        }
    };
    if let Some(tap) = &opts.tap {
        tap.finish(&w);
    }
    let diagnostics = w.diagnostics();
    for d in &diagnostics {
        w.world.note("chaos", "", &format!("mechanism {d}"));
    }
    let losses = w.loss_summary();
    let report = w.world.report(plan.seed);
    w.world.shutdown();
    (verdict, site, report, diagnostics, losses)
}
