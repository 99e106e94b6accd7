//! Run reports (product §7 `report` and `dump`): what happened in one run, for a person.
//!
//! - [`timeline`]: the [`Recorder`] observer and the [`Timeline`] it builds.
//! - [`faults`]: fault and operator markers, read back from the compact trace.
//! - [`html`] / [`svg`]: the self-contained HTML page ([`render`]).
//! - [`tap`]: [`Tap`], the hook a chaos run takes to record a timeline or keep a replica's
//!   files for [`segments`].
//! - [`segments`]: a replica's log as Kafka segment files (`.log`, `.index`, `.timeindex`,
//!   `leader-epoch-checkpoint`, `partition.metadata`).
//!
//! Scenario runs and chaos runs share the API: record with a [`Recorder`] attached to the
//! world ([`crate::kafka::KafkaWorld::attach_recorder`]), then
//! `render(&recorder.finish(&run_report, violation), &summary)`.

pub mod escape;
pub mod faults;
pub mod html;
pub mod segments;
pub mod svg;
pub mod tap;
pub mod timeline;

pub use tap::Tap;
pub use timeline::{Recorder, Timeline};

use crate::chaos::{ChaosOutcome, Verdict};

/// What the report header says about a run (everything but the timeline).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct RunSummary {
    /// What ran (`chaos seed 7`, a capsule path, a scenario name).
    pub title: String,
    /// The seed.
    pub seed: u64,
    /// The KIP-1279 design (`seed`, `latest`, an ablation).
    pub design: String,
    /// Short verdict (`pass`, `violation:log_matching`, `liveness`, `crash`).
    pub verdict: String,
    /// Why a run that did not pass failed (empty for a pass).
    pub verdict_detail: String,
    /// Trace hash (16 hex digits).
    pub trace_hash: String,
    /// Simulated seconds.
    pub sim_seconds: f64,
    /// Numbered trace events.
    pub events: u64,
    /// The compact trace lines.
    pub trace: Vec<String>,
}

impl RunSummary {
    /// The summary of a chaos run.
    #[must_use]
    pub fn from_chaos(title: &str, design: &str, o: &ChaosOutcome) -> Self {
        let detail = match &o.verdict {
            Verdict::Pass => String::new(),
            Verdict::Violation(v) => v.to_string(),
            Verdict::Liveness { detail } => format!("did not converge: {detail}"),
            Verdict::Crash { message } => format!("crashed: {message}"),
        };
        let (trace_hash, sim_seconds, events, trace) =
            o.report
                .as_ref()
                .map_or((String::from("-"), 0.0, 0, Vec::new()), |r| {
                    (
                        r.trace_hash.clone(),
                        r.sim_seconds,
                        r.events,
                        r.lines.clone(),
                    )
                });
        Self {
            title: title.to_string(),
            seed: o.seed,
            design: design.to_string(),
            verdict: o.verdict.short(),
            verdict_detail: detail,
            trace_hash,
            sim_seconds,
            events,
            trace,
        }
    }
}

impl RunSummary {
    /// The summary of a scenario run.
    #[must_use]
    pub fn from_scenario(o: &crate::scenario::ScenarioOutcome) -> Self {
        let verdict = match (&o.verdict, &o.violation) {
            (_, Some(v)) => format!("violation:{}", v.invariant),
            (crate::scenario::ScenarioVerdict::Pass, None) => "pass".into(),
            (crate::scenario::ScenarioVerdict::Fail { .. }, None) => "step failed".into(),
        };
        let mut detail = o
            .violation
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default();
        if let crate::scenario::ScenarioVerdict::Fail { reason } = &o.verdict {
            if !detail.is_empty() {
                detail.push_str("; ");
            }
            detail.push_str(&format!("expectations not met: {reason}"));
        }
        let (trace_hash, sim_seconds, events, trace) =
            o.report
                .as_ref()
                .map_or((String::from("-"), 0.0, 0, Vec::new()), |r| {
                    (
                        r.trace_hash.clone(),
                        r.sim_seconds,
                        r.events,
                        r.lines.clone(),
                    )
                });
        Self {
            title: format!("scenario {} ({})", o.name, o.file),
            seed: o.seed,
            design: o.design.clone(),
            verdict,
            verdict_detail: detail,
            trace_hash,
            sim_seconds,
            events,
            trace,
        }
    }
}

/// The HTML report of a run: one self-contained, deterministic page.
#[must_use]
pub fn render(timeline: &Timeline, run: &RunSummary) -> String {
    html::page(timeline, run)
}

#[cfg(test)]
mod render_test;
