//! The shrinker: greedy delta debugging on a failing chaos plan. It tries smaller plans
//! (fewer faults, fewer clients, a shorter safety phase, lower rates, fewer topics,
//! partitions and brokers) and keeps each one that still fails *the same way*: the same
//! violated invariant, or the same verdict kind for liveness failures and crashes. A
//! capsule that fails for a different reason after a cut is a different bug, so the cut is
//! refused.
//!
//! Every candidate is a full deterministic run, so a shrink is itself reproducible: the same
//! capsule and build shrink to the same plan.

use super::edit::{drop_topic, reduce_brokers, reduce_partitions};
use super::plan::{ChaosFault, ChaosPlan, ClientPlan, PlanSize};
use std::time::Duration;

use super::run::{ChaosOptions, ChaosOutcome, RunLimits, Verdict, run_plan};

/// The failure a shrink preserves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FailureKind {
    /// An invariant broke: this one.
    Violation(String),
    /// The system did not converge, stuck this way (`state FAILED want MIRRORING`,
    /// `isr_short`, ...; [`crate::chaos::FailureSite::stuck`]): a run stuck another way is
    /// another bug.
    Liveness(Option<String>),
    /// A node or the harness panicked.
    Crash,
}

impl FailureKind {
    /// The failure of an outcome; `None` for a pass.
    #[must_use]
    pub fn of(o: &ChaosOutcome) -> Option<FailureKind> {
        match &o.verdict {
            Verdict::Pass => None,
            Verdict::Violation(x) => Some(FailureKind::Violation(x.invariant.clone())),
            Verdict::Liveness { .. } => Some(FailureKind::Liveness(
                o.site.as_ref().and_then(|s| s.stuck.clone()),
            )),
            Verdict::Crash { .. } => Some(FailureKind::Crash),
        }
    }
}

impl std::fmt::Display for FailureKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FailureKind::Violation(i) => write!(f, "violation:{i}"),
            FailureKind::Liveness(None) => f.write_str("liveness"),
            FailureKind::Liveness(Some(s)) => write!(f, "liveness [{s}]"),
            FailureKind::Crash => f.write_str("crash"),
        }
    }
}

/// Why a shrink could not start.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ShrinkError {
    /// The plan passes: there is no failure to keep.
    #[error("the plan passes (seed {seed}): nothing to shrink")]
    DoesNotFail {
        /// The plan's seed.
        seed: u64,
    },
}

/// One accepted cut.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ShrinkStep {
    /// What was cut.
    pub what: String,
    /// The plan's size after the cut.
    pub size: PlanSize,
}

/// The result of a shrink.
#[derive(Clone, Debug)]
pub struct Shrunk {
    /// The failure that every accepted plan showed.
    pub kind: FailureKind,
    /// The smallest failing plan found.
    pub plan: ChaosPlan,
    /// Its verdict.
    pub verdict: Verdict,
    /// Size before.
    pub before: PlanSize,
    /// Accepted cuts, in order.
    pub steps: Vec<ShrinkStep>,
    /// Runs spent (the first run included).
    pub runs: usize,
}

/// Runs budget of a shrink by default: enough for plans of a few dozen faults.
pub const DEFAULT_MAX_RUNS: usize = 300;

/// How many times the original's event count a candidate may run before it is stopped.
pub const EVENT_FACTOR: u64 = 10;

/// Shrinks `plan`, calling `on_step` for each accepted cut, spending at most `max_runs`
/// runs, one at a time.
pub fn shrink(
    plan: ChaosPlan,
    opts: &ChaosOptions,
    max_runs: usize,
    on_step: impl FnMut(&ShrinkStep),
) -> Result<Shrunk, ShrinkError> {
    shrink_on(plan, opts, max_runs, 1, on_step)
}

/// [`shrink`] trying up to `jobs` candidates at once. The result does not depend on `jobs`:
/// candidates are tried in the same order, the first that fails the same way is accepted,
/// and runs are counted as if they were tried one at a time (speculative runs past the
/// accepted candidate are not counted, and their results are dropped).
///
/// Every candidate runs under [`RunLimits`]: at most the original's simulated time (plus a
/// second) and [`EVENT_FACTOR`] times its events. A candidate that runs away (a livelock a
/// cut created, a liveness wait that now takes longer) is stopped and refused instead of
/// being waited for.
pub fn shrink_on(
    plan: ChaosPlan,
    opts: &ChaosOptions,
    max_runs: usize,
    jobs: usize,
    mut on_step: impl FnMut(&ShrinkStep),
) -> Result<Shrunk, ShrinkError> {
    super::run::quiet_limit_panics();
    let first = run_plan(plan.clone(), opts);
    let kind = FailureKind::of(&first).ok_or(ShrinkError::DoesNotFail { seed: plan.seed })?;
    let mut limited = opts.clone();
    limited.limits = first.report.as_ref().map(|r| RunLimits {
        sim_time: Duration::from_secs_f64(r.sim_seconds.ceil() + 1.0),
        events: r.events.saturating_mul(EVENT_FACTOR),
    });
    let mut s = Shrinker {
        opts: &limited,
        kind,
        best: plan,
        verdict: first.verdict,
        runs: 1,
        max_runs,
        jobs: jobs.max(1),
        steps: Vec::new(),
    };
    let before = s.best.size();
    loop {
        let progress = s.pass(&mut on_step);
        if !progress || s.runs >= s.max_runs {
            break;
        }
    }
    Ok(Shrunk {
        kind: s.kind,
        before,
        plan: s.best,
        verdict: s.verdict,
        steps: s.steps,
        runs: s.runs,
    })
}

struct Shrinker<'a> {
    opts: &'a ChaosOptions,
    kind: FailureKind,
    best: ChaosPlan,
    verdict: Verdict,
    runs: usize,
    max_runs: usize,
    jobs: usize,
    steps: Vec<ShrinkStep>,
}

impl Shrinker<'_> {
    /// One round of every kind of cut; true when any was accepted. The world shrinks first
    /// (topics, partitions, brokers: every later run is cheaper), then the faults, then the
    /// rest.
    fn pass(&mut self, on_step: &mut impl FnMut(&ShrinkStep)) -> bool {
        let mut progress = false;
        progress |= self.cut_all(&[Cut::Topics, Cut::Partitions, Cut::Brokers], on_step);
        progress |= self.drop_fault_chunks(on_step);
        progress |= self.cut_all(
            &[
                Cut::Clients,
                Cut::SafetyPhase,
                Cut::Rates,
                Cut::Topics,
                Cut::Partitions,
                Cut::Brokers,
            ],
            on_step,
        );
        progress
    }

    /// Each cut in turn, until none of its candidates is accepted.
    fn cut_all(&mut self, cuts: &[Cut], on_step: &mut impl FnMut(&ShrinkStep)) -> bool {
        let mut progress = false;
        for cut in cuts {
            // Candidates are derived from the current best plan, so after an accepted cut
            // they are drawn again (a stale candidate would undo the cut before it).
            while self
                .first_accepted(cut.candidates(&self.best), on_step)
                .is_some()
            {
                progress = true;
            }
        }
        progress
    }

    /// ddmin over the fault list: chunks of half the list, then quarters, down to single
    /// faults.
    fn drop_fault_chunks(&mut self, on_step: &mut impl FnMut(&ShrinkStep)) -> bool {
        let mut progress = false;
        let mut chunk = self.best.faults.len().div_ceil(2).max(1);
        while chunk >= 1 && !self.best.faults.is_empty() {
            let mut start = 0;
            while start < self.best.faults.len() {
                // Every chunk from `start` on, each cut alone from the current plan: the
                // first accepted one is kept and the scan resumes where it was.
                let candidates: Vec<(String, ChaosPlan)> = (start..self.best.faults.len())
                    .step_by(chunk)
                    .map(|from| {
                        let end = (from + chunk).min(self.best.faults.len());
                        let mut plan = self.best.clone();
                        let cut: Vec<String> = plan
                            .faults
                            .drain(from..end)
                            .map(|f| format!("{}@{}ms", fault_name(&f.fault), f.at_ms))
                            .collect();
                        (format!("drop faults {}", cut.join(", ")), plan)
                    })
                    .collect();
                match self.first_accepted(candidates, on_step) {
                    Some(i) => {
                        progress = true;
                        start += i * chunk;
                    }
                    None => break,
                }
            }
            if chunk == 1 {
                break;
            }
            chunk = chunk.div_ceil(2);
        }
        progress
    }

    /// Tries `candidates` in order and keeps the first that fails the same way; returns its
    /// index. Up to `jobs` run at once; runs are counted as if tried one by one.
    fn first_accepted(
        &mut self,
        candidates: Vec<(String, ChaosPlan)>,
        on_step: &mut impl FnMut(&ShrinkStep),
    ) -> Option<usize> {
        let candidates: Vec<(usize, (String, ChaosPlan))> = candidates
            .into_iter()
            .enumerate()
            .filter(|(_, (_, p))| *p != self.best)
            .collect();
        for batch in candidates.chunks(self.jobs) {
            let budget = self.max_runs.saturating_sub(self.runs);
            let batch = &batch[..batch.len().min(budget)];
            if batch.is_empty() {
                return None;
            }
            let outcomes = run_all(batch.iter().map(|(_, (_, p))| p), self.opts);
            for ((i, (what, plan)), out) in batch.iter().zip(outcomes) {
                self.runs += 1;
                if out.verdict.is_limit() || FailureKind::of(&out).as_ref() != Some(&self.kind) {
                    continue;
                }
                self.best = plan.clone();
                self.verdict = out.verdict;
                let step = ShrinkStep {
                    what: what.clone(),
                    size: self.best.size(),
                };
                on_step(&step);
                self.steps.push(step);
                return Some(*i);
            }
        }
        None
    }
}

/// Runs plans at once, each on its own thread and runtime; outcomes in the plans' order.
fn run_all<'a>(
    plans: impl Iterator<Item = &'a ChaosPlan>,
    opts: &ChaosOptions,
) -> Vec<ChaosOutcome> {
    let plans: Vec<&ChaosPlan> = plans.collect();
    if plans.len() == 1 {
        return vec![run_plan(plans[0].clone(), opts)];
    }
    std::thread::scope(|s| {
        let handles: Vec<_> = plans
            .iter()
            .map(|p| s.spawn(|| run_plan((*p).clone(), opts)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("run_plan returns panics as verdicts"))
            .collect()
    })
}

/// The kinds of cut besides dropping faults.
#[derive(Copy, Clone, Debug)]
enum Cut {
    Clients,
    SafetyPhase,
    Rates,
    Topics,
    Partitions,
    Brokers,
}

impl Cut {
    /// The candidate plans of this cut, each with a description.
    fn candidates(self, p: &ChaosPlan) -> Vec<(String, ChaosPlan)> {
        match self {
            Cut::Clients => client_cuts(p),
            Cut::SafetyPhase => safety_cuts(p),
            Cut::Rates => rate_cuts(p),
            Cut::Topics => (0..p.topics.len())
                .filter(|_| p.topics.len() > 1)
                .map(|t| (format!("drop topic {}", p.topics[t].name), drop_topic(p, t)))
                .collect(),
            Cut::Partitions => (0..p.topics.len())
                .filter(|t| p.topics[*t].partitions > 1)
                .map(|t| {
                    let n = p.topics[t].partitions - 1;
                    let what = format!("topic {} down to {n} partitions", p.topics[t].name);
                    (what, reduce_partitions(p, t, n))
                })
                .collect(),
            Cut::Brokers => (0..p.brokers.len())
                .filter(|c| p.brokers[*c] > 1)
                .map(|c| {
                    let n = p.brokers[c] - 1;
                    (
                        format!("cluster {c} down to {n} brokers"),
                        reduce_brokers(p, c, n),
                    )
                })
                .collect(),
        }
    }
}

fn client_cuts(p: &ChaosPlan) -> Vec<(String, ChaosPlan)> {
    let mut out = Vec::new();
    for i in 0..p.clients.len() {
        let mut q = p.clone();
        let c = q.clients.remove(i);
        out.push((format!("drop client {}", client_name(&c)), q));
    }
    for i in 0..p.failover_clients.len() {
        let mut q = p.clone();
        let c = q.failover_clients.remove(i);
        out.push((format!("drop failover client {}", client_name(&c)), q));
    }
    out
}

/// The safety phase ends soon after the last fault, then halves (never below 1 s after it).
fn safety_cuts(p: &ChaosPlan) -> Vec<(String, ChaosPlan)> {
    let last = p.faults.iter().map(|f| f.at_ms).max().unwrap_or(0);
    let mut out = Vec::new();
    if p.persistent.is_some() {
        let mut q = p.clone();
        q.persistent = None;
        out.push(("drop the persistent partial fault".to_string(), q));
    }
    for target in [last + 2_000, p.safety_ms / 2] {
        let target = target.max(last + 1_000).max(1_000);
        if target < p.safety_ms {
            let mut q = p.clone();
            q.safety_ms = target;
            out.push((format!("safety phase {} -> {target} ms", p.safety_ms), q));
        }
    }
    out
}

/// Halves every producer rate (not below 10 records/s).
fn rate_cuts(p: &ChaosPlan) -> Vec<(String, ChaosPlan)> {
    let halve = |c: &mut ClientPlan| match c {
        ClientPlan::Producer { rate, .. } | ClientPlan::TransactionalProducer { rate, .. } => {
            *rate = (*rate / 2).max(10);
        }
        ClientPlan::Consumer { .. } => {}
    };
    let mut q = p.clone();
    q.clients.iter_mut().for_each(halve);
    q.failover_clients.iter_mut().for_each(halve);
    if q == *p {
        Vec::new()
    } else {
        vec![("halve producer rates".to_string(), q)]
    }
}

/// A short name of a fault kind for step descriptions.
#[must_use]
pub fn fault_name(f: &ChaosFault) -> &'static str {
    match f {
        ChaosFault::Crash { .. } => "crash",
        ChaosFault::Restart { .. } => "restart",
        ChaosFault::Pause { .. } => "pause",
        ChaosFault::Isolate { .. } => "isolate",
        ChaosFault::IsolateFromController { .. } => "isolate_from_controller",
        ChaosFault::PacketLoss { .. } => "packet_loss",
        ChaosFault::UncleanElection { .. } => "unclean_election",
        ChaosFault::StopMirror => "stop_mirror",
        ChaosFault::PauseMirror { .. } => "pause_mirror",
        ChaosFault::Failback => "failback",
        ChaosFault::CrashLeader { .. } => "crash_leader",
        ChaosFault::IsolateLeaderFromController { .. } => "isolate_leader_from_controller",
        ChaosFault::ProbeWrite { .. } => "probe_write",
        ChaosFault::MoveSourceProducers => "move_source_producers",
        ChaosFault::DeleteRecords { .. } => "delete_records",
        ChaosFault::RotBatch { .. } => "rot_batch",
    }
}

fn client_name(c: &ClientPlan) -> String {
    match c {
        ClientPlan::Producer { topic, rate, .. } => format!("producer(t{topic}, {rate}/s)"),
        ClientPlan::TransactionalProducer { topic, rate, .. } => {
            format!("txn_producer(t{topic}, {rate}/s)")
        }
        ClientPlan::Consumer { topic, .. } => format!("consumer(t{topic})"),
    }
}
