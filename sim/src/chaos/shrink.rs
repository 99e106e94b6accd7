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
use super::run::{ChaosOptions, Verdict, run_plan};

/// The failure a shrink preserves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FailureKind {
    /// An invariant broke: this one.
    Violation(String),
    /// The system did not converge.
    Liveness,
    /// A node or the harness panicked.
    Crash,
}

impl FailureKind {
    /// The failure of `v`; `None` for a pass.
    #[must_use]
    pub fn of(v: &Verdict) -> Option<FailureKind> {
        match v {
            Verdict::Pass => None,
            Verdict::Violation(x) => Some(FailureKind::Violation(x.invariant.clone())),
            Verdict::Liveness { .. } => Some(FailureKind::Liveness),
            Verdict::Crash { .. } => Some(FailureKind::Crash),
        }
    }
}

impl std::fmt::Display for FailureKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FailureKind::Violation(i) => write!(f, "violation:{i}"),
            FailureKind::Liveness => f.write_str("liveness"),
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

/// Shrinks `plan`, calling `on_step` for each accepted cut, spending at most `max_runs`
/// runs.
pub fn shrink(
    plan: ChaosPlan,
    opts: &ChaosOptions,
    max_runs: usize,
    mut on_step: impl FnMut(&ShrinkStep),
) -> Result<Shrunk, ShrinkError> {
    let first = run_plan(plan.clone(), opts);
    let kind =
        FailureKind::of(&first.verdict).ok_or(ShrinkError::DoesNotFail { seed: plan.seed })?;
    let mut s = Shrinker {
        opts,
        kind,
        best: plan,
        verdict: first.verdict,
        runs: 1,
        max_runs,
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
    steps: Vec<ShrinkStep>,
}

impl Shrinker<'_> {
    /// One round of every kind of cut; true when any was accepted.
    fn pass(&mut self, on_step: &mut impl FnMut(&ShrinkStep)) -> bool {
        let mut progress = false;
        progress |= self.drop_fault_chunks(on_step);
        for candidate in [
            Cut::Clients,
            Cut::SafetyPhase,
            Cut::Rates,
            Cut::Topics,
            Cut::Partitions,
            Cut::Brokers,
        ] {
            // Candidates are derived from the current best plan, so after an accepted cut
            // they are drawn again (a stale candidate would undo the cut before it).
            'cut: loop {
                for (what, plan) in candidate.candidates(&self.best) {
                    if self.try_accept(what, plan, on_step) {
                        progress = true;
                        continue 'cut;
                    }
                }
                break;
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
                let end = (start + chunk).min(self.best.faults.len());
                let mut plan = self.best.clone();
                let cut: Vec<String> = plan
                    .faults
                    .drain(start..end)
                    .map(|f| format!("{}@{}ms", fault_name(&f.fault), f.at_ms))
                    .collect();
                if self.try_accept(format!("drop faults {}", cut.join(", ")), plan, on_step) {
                    progress = true;
                } else {
                    start = end;
                }
            }
            if chunk == 1 {
                break;
            }
            chunk = chunk.div_ceil(2);
        }
        progress
    }

    /// Runs `plan`; keeps it when it fails the same way and is smaller in some way.
    fn try_accept(
        &mut self,
        what: String,
        plan: ChaosPlan,
        on_step: &mut impl FnMut(&ShrinkStep),
    ) -> bool {
        if self.runs >= self.max_runs || plan == self.best {
            return false;
        }
        self.runs += 1;
        let out = run_plan(plan.clone(), self.opts);
        if FailureKind::of(&out.verdict).as_ref() != Some(&self.kind) {
            return false;
        }
        self.best = plan;
        self.verdict = out.verdict;
        let step = ShrinkStep {
            what,
            size: self.best.size(),
        };
        on_step(&step);
        self.steps.push(step);
        true
    }
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
        ChaosFault::ProbeWrite { .. } => "probe_write",
        ChaosFault::MoveSourceProducers => "move_source_producers",
        ChaosFault::DeleteRecords { .. } => "delete_records",
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
