//! The mirror partition state machine: states, their persisted byte values, and the
//! transitions each preset allows, as tables (kip1279.md A.1 for seed and early, B §7.2 for
//! latest). The destination partition leader proposes transitions; the `__mirror_state`
//! coordinator persists only valid ones and silently skips the rest.

use std::fmt;

use super::design::{Design, Preset};
use crate::types::LeaderEpoch;

/// A mirror partition's state. Seed names; the latest preset's LOG_ALIGNMENT is
/// [`Preparing`](Self::Preparing), and [`EpochFencing`](Self::EpochFencing) /
/// [`UleRecovery`](Self::UleRecovery) exist only in the latest preset.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MirrorPartitionState {
    /// Never mirrored, or unknown to the coordinator (no record).
    #[default]
    Unknown,
    /// Failback truncation by the LME and replica convergence (latest: LOG_ALIGNMENT).
    Preparing,
    /// Latest only: the destination leader epoch is being bumped above the source's.
    EpochFencing,
    /// Latest only: waiting for every replica to converge after a source divergence.
    UleRecovery,
    /// Fetching from the source; read-only.
    Mirroring,
    /// Fetchers being removed for a pause.
    Pausing,
    /// Not fetching; still read-only.
    Paused,
    /// Failover in progress (the stop plan runs).
    Stopping,
    /// Failed over: writable.
    Stopped,
    /// A non-retryable (seed) or retryable (latest) failure; the message is kept.
    Failed,
}

impl MirrorPartitionState {
    /// Every state, in byte-value order (UNKNOWN first).
    pub const ALL: [MirrorPartitionState; 10] = [
        MirrorPartitionState::Unknown,
        MirrorPartitionState::Preparing,
        MirrorPartitionState::EpochFencing,
        MirrorPartitionState::UleRecovery,
        MirrorPartitionState::Mirroring,
        MirrorPartitionState::Pausing,
        MirrorPartitionState::Paused,
        MirrorPartitionState::Stopping,
        MirrorPartitionState::Stopped,
        MirrorPartitionState::Failed,
    ];

    /// The byte persisted in `__mirror_state` (the latest prototype's
    /// `MirrorPartitionState.value()`, which covers every variant).
    #[must_use]
    pub fn value(self) -> i8 {
        match self {
            MirrorPartitionState::Unknown => -1,
            MirrorPartitionState::Preparing => 0,
            MirrorPartitionState::EpochFencing => 1,
            MirrorPartitionState::UleRecovery => 2,
            MirrorPartitionState::Mirroring => 3,
            MirrorPartitionState::Pausing => 4,
            MirrorPartitionState::Paused => 5,
            MirrorPartitionState::Stopping => 6,
            MirrorPartitionState::Stopped => 7,
            MirrorPartitionState::Failed => 8,
        }
    }

    /// Parses a persisted byte; `None` for an unknown value.
    #[must_use]
    pub fn from_value(v: i8) -> Option<MirrorPartitionState> {
        Self::ALL.into_iter().find(|s| s.value() == v)
    }

    /// The seed name, UPPER_CASE (`PREPARING`).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            MirrorPartitionState::Unknown => "UNKNOWN",
            MirrorPartitionState::Preparing => "PREPARING",
            MirrorPartitionState::EpochFencing => "EPOCH_FENCING",
            MirrorPartitionState::UleRecovery => "ULE_RECOVERY",
            MirrorPartitionState::Mirroring => "MIRRORING",
            MirrorPartitionState::Pausing => "PAUSING",
            MirrorPartitionState::Paused => "PAUSED",
            MirrorPartitionState::Stopping => "STOPPING",
            MirrorPartitionState::Stopped => "STOPPED",
            MirrorPartitionState::Failed => "FAILED",
        }
    }

    /// The name the design uses (latest calls PREPARING `LOG_ALIGNMENT`), for traces.
    #[must_use]
    pub fn name_in(self, design: &Design) -> &'static str {
        match (self, design.preset()) {
            (MirrorPartitionState::Preparing, Preset::Latest) => "LOG_ALIGNMENT",
            _ => self.name(),
        }
    }

    /// Parses an UPPER_CASE name (scenario files); `LOG_ALIGNMENT` is PREPARING.
    #[must_use]
    pub fn from_name(s: &str) -> Option<MirrorPartitionState> {
        if s == "LOG_ALIGNMENT" {
            return Some(MirrorPartitionState::Preparing);
        }
        Self::ALL.into_iter().find(|st| st.name() == s)
    }

    /// True for the states only the latest preset uses.
    #[must_use]
    pub fn is_latest_only(self) -> bool {
        matches!(
            self,
            MirrorPartitionState::EpochFencing | MirrorPartitionState::UleRecovery
        )
    }
}

impl fmt::Display for MirrorPartitionState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether `from -> to` is allowed in `design`. Self-transitions are allowed for every state
/// the design has: a new leader re-drives the current state by re-writing it, which bumps
/// the state epoch and fences the old leader. EPOCH_FENCING and ULE_RECOVERY do not exist
/// outside the latest preset.
#[must_use]
pub fn is_valid_transition(
    design: &Design,
    from: MirrorPartitionState,
    to: MirrorPartitionState,
) -> bool {
    let latest = design.preset() == Preset::Latest;
    if !latest && (from.is_latest_only() || to.is_latest_only()) {
        return false;
    }
    if from == to {
        return true;
    }
    if latest {
        latest_allows(from, to)
    } else {
        seed_allows(from, to)
    }
}

/// kip1279.md A.1 (seed; early has the same machine with INITIALIZING/PREPARING):
/// UNKNOWN/STOPPED -> PREPARING -> MIRRORING; MIRRORING -> PAUSING -> PAUSED -> MIRRORING;
/// PREPARING/MIRRORING -> STOPPING -> STOPPED; any -> FAILED; FAILED -> STOPPING (A.2: a
/// failed partition can still be stopped).
fn seed_allows(from: MirrorPartitionState, to: MirrorPartitionState) -> bool {
    use MirrorPartitionState as S;
    match to {
        S::Preparing => matches!(from, S::Unknown | S::Stopped),
        S::Mirroring => matches!(from, S::Preparing | S::Paused),
        S::Pausing => from == S::Mirroring,
        S::Paused => from == S::Pausing,
        S::Stopping => matches!(from, S::Preparing | S::Mirroring | S::Failed),
        S::Stopped => from == S::Stopping,
        S::Failed => true,
        S::Unknown | S::EpochFencing | S::UleRecovery => false,
    }
}

/// kip1279.md B §7.2 (latest prototype, `MirrorPartitionMetadata.isValidStateTransition`),
/// with `null` read as UNKNOWN.
fn latest_allows(from: MirrorPartitionState, to: MirrorPartitionState) -> bool {
    use MirrorPartitionState as S;
    match to {
        S::Preparing => matches!(from, S::Unknown | S::Stopped | S::Failed),
        S::EpochFencing | S::UleRecovery | S::Pausing => from == S::Mirroring,
        S::Mirroring => matches!(
            from,
            S::Preparing | S::EpochFencing | S::Paused | S::UleRecovery | S::Failed
        ),
        S::Paused => from == S::Pausing,
        S::Stopping => matches!(
            from,
            S::Preparing
                | S::EpochFencing
                | S::Mirroring
                | S::Pausing
                | S::Paused
                | S::UleRecovery
                | S::Failed
        ),
        S::Stopped => from == S::Stopping,
        S::Failed => true,
        S::Unknown => false,
    }
}

/// What the `__mirror_state` coordinator keeps for one mirror partition (the persisted
/// `MirrorPartitionStateValue`), and what ReadMirrorStates returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MirrorPartitionStatus {
    /// The current state.
    pub state: MirrorPartitionState,
    /// The state before FAILED (what a retry returns to); UNKNOWN when there is none.
    pub previous_state: MirrorPartitionState,
    /// Incremented by every persisted transition; writes naming another epoch are fenced.
    /// 0 before the first write.
    pub state_epoch: i32,
    /// The partition leader epoch of the last writer, `UNDEFINED` (-1) when unknown.
    pub leader_epoch: LeaderEpoch,
    /// Why the partition FAILED.
    pub error_message: Option<String>,
    /// FAILED retries so far; 0 when not failed; -1 = non-retryable.
    pub retry_attempt: i16,
}

impl MirrorPartitionStatus {
    /// `retry_attempt` value of a non-retryable failure.
    pub const NON_RETRYABLE: i16 = -1;

    /// The status of a partition the coordinator has no record for.
    #[must_use]
    pub fn unknown() -> MirrorPartitionStatus {
        MirrorPartitionStatus {
            state: MirrorPartitionState::Unknown,
            previous_state: MirrorPartitionState::Unknown,
            state_epoch: 0,
            leader_epoch: LeaderEpoch::UNDEFINED,
            error_message: None,
            retry_attempt: 0,
        }
    }

    /// True when FAILED with `retry_attempt == -1`.
    #[must_use]
    pub fn is_non_retryable(&self) -> bool {
        self.state == MirrorPartitionState::Failed && self.retry_attempt == Self::NON_RETRYABLE
    }
}

impl Default for MirrorPartitionStatus {
    fn default() -> Self {
        Self::unknown()
    }
}

#[cfg(test)]
#[path = "state_test.rs"]
mod tests;
