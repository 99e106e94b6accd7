//! STOPPING (failover) as data: the ordered steps each design runs between "stop requested"
//! and STOPPED (writable), plus the pure values those steps need from the log.
//!
//! The broker walks [`stop_plan`] in order, persisting nothing between steps: a new leader
//! re-drives STOPPING from the first step, so every step must be idempotent (kip1279.md A.1,
//! B §7.6-5).

use std::fmt;

use super::design::{Design, Preset};
use crate::log::partition_log::PartitionLog;
use crate::types::{LeaderEpoch, Offset};

/// One step of the stop plan.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum StopStep {
    /// Remove the mirror fetchers: no more source data is appended.
    RemoveFetchers,
    /// BumpLeaderEpochs with `MinLeaderEpoch` = [`stop_min_leader_epoch`], then wait until
    /// the metadata shows a larger epoch ([`bump_complete`]): post-failover writes carry an
    /// epoch above every mirrored one.
    BumpLeaderEpoch,
    /// `truncate_to(`[`lso_truncation_target`]`)`: drop open transactions and the uncommitted
    /// tail (early, seed).
    TruncateToLso,
    /// Wait until no ISR member is ahead of the leader (the truncation reached the ISR).
    WaitForIsr,
    /// Append one ABORT marker batch per open transaction (latest), acks=all.
    WriteAbortMarkers,
    /// Write the failback marker ([`last_mirror_position`]) to `__mirror_state`.
    RecordLastMirror,
    /// Append a `MIRROR_PID_RESET` control batch (one offset), acks=all.
    AppendPidReset,
    /// Persist STOPPED: read-only is lifted.
    MarkStopped,
}

impl StopStep {
    /// The step's snake_case name, for traces.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            StopStep::RemoveFetchers => "remove_fetchers",
            StopStep::BumpLeaderEpoch => "bump_leader_epoch",
            StopStep::TruncateToLso => "truncate_to_lso",
            StopStep::WaitForIsr => "wait_for_isr",
            StopStep::WriteAbortMarkers => "write_abort_markers",
            StopStep::RecordLastMirror => "record_last_mirror",
            StopStep::AppendPidReset => "append_pid_reset",
            StopStep::MarkStopped => "mark_stopped",
        }
    }
}

impl fmt::Display for StopStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The preset's full plan, before ablations.
fn preset_plan(preset: Preset) -> &'static [StopStep] {
    use StopStep as S;
    match preset {
        // B §8.5 (a): remove fetchers, truncate to the LSO, wait for the ISR, record the LSO
        // as LMO, STOPPED.
        Preset::Early => &[
            S::RemoveFetchers,
            S::TruncateToLso,
            S::WaitForIsr,
            S::RecordLastMirror,
            S::MarkStopped,
        ],
        // A.1: remove fetchers, bump, truncate to the LSO and wait for the ISR, record the
        // LME, PID reset, STOPPED.
        Preset::Seed => &[
            S::RemoveFetchers,
            S::BumpLeaderEpoch,
            S::TruncateToLso,
            S::WaitForIsr,
            S::RecordLastMirror,
            S::AppendPidReset,
            S::MarkStopped,
        ],
        // B §8.5 (d), `stopPartition`: remove fetchers, record the position, bump, ABORT
        // markers, PID reset, STOPPED.
        Preset::Latest => &[
            S::RemoveFetchers,
            S::RecordLastMirror,
            S::BumpLeaderEpoch,
            S::WriteAbortMarkers,
            S::AppendPidReset,
            S::MarkStopped,
        ],
    }
}

/// The steps `design` runs at STOPPING, in order: the preset's plan minus the steps its
/// ablations remove (each ablation removes exactly one step; `no_isr_wait` concerns
/// PREPARING and `no_read_only` the produce path, so they leave this plan unchanged).
#[must_use]
pub fn stop_plan(design: &Design) -> Vec<StopStep> {
    preset_plan(design.preset())
        .iter()
        .copied()
        .filter(|step| match step {
            StopStep::BumpLeaderEpoch => design.stop_bumps_epoch(),
            StopStep::TruncateToLso => design.stop_truncates_to_lso(),
            StopStep::WriteAbortMarkers => design.stop_writes_abort_markers(),
            StopStep::AppendPidReset => design.stop_writes_pid_reset(),
            StopStep::RemoveFetchers
            | StopStep::WaitForIsr
            | StopStep::RecordLastMirror
            | StopStep::MarkStopped => true,
        })
        .collect()
}

/// The Last Mirrored Epoch: the greatest epoch in the log (the log holds only source
/// epochs while mirroring), -1 when the log has none (A.2).
#[must_use]
pub fn last_mirrored_epoch(log: &PartitionLog) -> i32 {
    log.latest_epoch().map_or(-1, |e| e.0)
}

/// The failback marker recorded at stop: `(last_mirrored_epoch, log end offset)`. Seed reads
/// only the epoch; early runs this after truncating to the LSO, so the offset is the LMO;
/// latest keeps both ("LastMirrorPosition").
#[must_use]
pub fn last_mirror_position(log: &PartitionLog) -> (i32, i64) {
    (last_mirrored_epoch(log), log.log_end_offset().0)
}

/// Where [`StopStep::TruncateToLso`] cuts: the last stable offset (at or below the HW, so the
/// unreplicated tail goes too) of the log **after** the cut. Truncating to the LSO removes the
/// markers above it, and a transaction that began below the LSO and ended above it (its
/// COMMIT/ABORT after the first offset of a still-open one) is open again once its marker is
/// gone (kafka-semantics §1.8: truncation reloads producer state). The seed's stop truncates
/// "to LSO for transactional consistency" (kip1279.md A.1): the cut moves down to that
/// transaction's first offset, and again, until the log has no open transaction (mirror chaos
/// seed 5143: LSO 2280, a transaction from 1960 committed at 2285 reopened by the cut).
#[must_use]
pub fn lso_truncation_target(log: &PartitionLog) -> Offset {
    let mut cut = log.clone();
    loop {
        let lso = cut.last_stable_offset();
        // Each round removes at least the batch at the LSO, so this ends (at the log start
        // at the latest).
        if lso >= cut.log_end_offset() || !matches!(cut.truncate_to(lso), Ok(true)) {
            return lso;
        }
    }
}

/// The `MinLeaderEpoch` of the stop bump: the latest epoch in the log (UNDEFINED when
/// empty), so the new leader epoch exceeds every epoch in it.
#[must_use]
pub fn stop_min_leader_epoch(log: &PartitionLog) -> LeaderEpoch {
    log.latest_epoch().unwrap_or(LeaderEpoch::UNDEFINED)
}

/// A bump to `min_leader_epoch` is complete once the metadata's leader epoch is strictly
/// greater (an already-met target completes at once: "epoch 11 vs target 0").
#[must_use]
pub fn bump_complete(current_leader_epoch: LeaderEpoch, min_leader_epoch: LeaderEpoch) -> bool {
    current_leader_epoch > min_leader_epoch
}

#[cfg(test)]
#[path = "stopping_test.rs"]
mod tests;
