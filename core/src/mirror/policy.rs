//! The answers a [`Design`](super::Design) gives to the broker's questions, as values with
//! their small decision rules: which failback marker PREPARING looks up, what a divergence
//! while MIRRORING leads to, when the destination leader epoch must be bumped (latest preset
//! only) and how a FAILED partition retries.

use super::state_records::LastMirrorEpochsValue;
use crate::types::{LeaderEpoch, Offset};

/// Which marker the failback lookup returns and PREPARING truncates by (kip1279.md B §1,
/// "Failback marker" row).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FailbackMarkerKind {
    /// Early design: the Last Mirrored Offset (the LSO recorded at stop).
    LastMirroredOffset,
    /// Seed design: the Last Mirrored Epoch (greatest source epoch in the log at stop).
    LastMirroredEpoch,
    /// Latest design: `LastMirrorPosition` = (epoch, offset).
    LastMirrorPosition,
}

impl FailbackMarkerKind {
    /// The marker of this kind carried by a stored `LastMirrorEpochsValue` (or the value the
    /// other cluster's DescribeMirrors lookup returned). Negative fields mean "unknown".
    #[must_use]
    pub fn marker(self, stored: LastMirrorEpochsValue) -> FailbackMarker {
        let epoch =
            (stored.last_mirror_epoch >= 0).then_some(LeaderEpoch(stored.last_mirror_epoch));
        let offset = (stored.last_mirror_offset >= 0).then_some(Offset(stored.last_mirror_offset));
        match self {
            FailbackMarkerKind::LastMirroredOffset => FailbackMarker::Lmo(offset),
            FailbackMarkerKind::LastMirroredEpoch => FailbackMarker::Lme(epoch),
            FailbackMarkerKind::LastMirrorPosition => FailbackMarker::Position { epoch, offset },
        }
    }
}

/// A failback marker value, input to [`truncation_point`](super::truncation_point). `None`
/// means the other cluster knows nothing (Kafka's `-1`): replicate from scratch.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FailbackMarker {
    /// Early: truncate to this offset.
    Lmo(Option<Offset>),
    /// Seed: truncate at the start of the first local epoch above this one.
    Lme(Option<LeaderEpoch>),
    /// Latest: the epoch rule, bounded by the offset when it is known.
    Position {
        /// The last mirrored epoch.
        epoch: Option<LeaderEpoch>,
        /// The log end offset at stop.
        offset: Option<Offset>,
    },
}

/// What a mirror partition does when the source answers a fetch with `DivergingEpoch`
/// (kip1279.md B §8.3). Because the mirror reads only up to the source HW, any divergence
/// means the source lost data (an unclean election).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum DivergencePolicy {
    /// Seed and early (A.2): truncate exactly as a follower does and keep MIRRORING; the
    /// loss is declared to the checker.
    TruncateAndContinue,
    /// Latest: remove the fetchers, then ULE_RECOVERY when the topic has
    /// `mirror.support.unclean.leader.election=true`, else FAILED non-retryable.
    UleRecoveryOrFail,
}

/// The action [`DivergencePolicy::action`] picks for one divergence.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum DivergenceAction {
    /// Truncate like a follower, keep fetching, and emit a declared data-loss event.
    TruncateAndContinue,
    /// Move to ULE_RECOVERY and wait for every replica to converge.
    UleRecovery,
    /// Move to FAILED, non-retryable, with [`DIVERGENCE_FAILED_MESSAGE`].
    FailNonRetryable,
}

/// The error message the latest prototype keeps on a partition failed by a divergence.
pub const DIVERGENCE_FAILED_MESSAGE: &str = "Detected log truncation during mirroring. This \
implies unclean leader election in source cluster, but mirror.support.unclean.leader.election \
is disabled. Moving to FAILED state.";

impl DivergencePolicy {
    /// The action for one divergence, given the topic's
    /// `mirror.support.unclean.leader.election` flag.
    #[must_use]
    pub fn action(self, support_unclean_leader_election: bool) -> DivergenceAction {
        match (self, support_unclean_leader_election) {
            (DivergencePolicy::TruncateAndContinue, _) => DivergenceAction::TruncateAndContinue,
            (DivergencePolicy::UleRecoveryOrFail, true) => DivergenceAction::UleRecovery,
            (DivergencePolicy::UleRecoveryOrFail, false) => DivergenceAction::FailNonRetryable,
        }
    }
}

/// Latest preset's EPOCH_FENCING: keeps the destination leader epoch (DLE) at or above every
/// source epoch (SLE) in the log, so destination consumers never see a committed epoch above
/// the metadata epoch (kip1279.md B §8.4).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct EpochFencing {
    /// `LEADER_EPOCH_BUMP_THRESHOLD`: bump proactively once a batch epoch is within this
    /// distance of the DLE.
    pub bump_threshold: i32,
    /// `LEADER_EPOCH_BUMP_INCREMENT`: a bump asks for `MinLeaderEpoch = source epoch + this`.
    pub bump_increment: i32,
}

/// The verdict of [`EpochFencing::check`] on a fetched batch set.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum EpochCheck {
    /// The batch epoch is well below the DLE: append.
    Append,
    /// Append, and schedule an asynchronous bump (proactive).
    AppendAndBump,
    /// Do not append: the batch epoch exceeds the DLE (reactive; move to EPOCH_FENCING).
    Fence,
}

impl EpochFencing {
    /// The prototype's constants: threshold 3, increment 10.
    pub const PROTOTYPE: EpochFencing = EpochFencing {
        bump_threshold: 3,
        bump_increment: 10,
    };

    /// Classifies the highest batch epoch of a fetch response against the local DLE.
    #[must_use]
    pub fn check(
        self,
        highest_batch_epoch: LeaderEpoch,
        local_leader_epoch: LeaderEpoch,
    ) -> EpochCheck {
        if highest_batch_epoch > local_leader_epoch {
            EpochCheck::Fence
        } else if i64::from(highest_batch_epoch.0)
            > i64::from(local_leader_epoch.0) - i64::from(self.bump_threshold)
        {
            EpochCheck::AppendAndBump
        } else {
            EpochCheck::Append
        }
    }

    /// True when the periodic sync must bump: the source epoch is within the threshold of
    /// (or above) the local DLE.
    #[must_use]
    pub fn needs_periodic_bump(
        self,
        source_leader_epoch: LeaderEpoch,
        local_leader_epoch: LeaderEpoch,
    ) -> bool {
        self.check(source_leader_epoch, local_leader_epoch) != EpochCheck::Append
    }

    /// The `MinLeaderEpoch` a bump requests for `source_leader_epoch`; `None` on overflow
    /// (Kafka's `Math.addExact` throws; the partition then goes FAILED).
    #[must_use]
    pub fn min_leader_epoch(self, source_leader_epoch: LeaderEpoch) -> Option<LeaderEpoch> {
        source_leader_epoch
            .0
            .checked_add(self.bump_increment)
            .map(LeaderEpoch)
    }
}

/// How a FAILED partition leaves FAILED on its own.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FailedRetry {
    /// Seed and early: FAILED is only entered for non-retryable conditions; the operator
    /// stops the topic.
    Never,
    /// Latest: retry to the previous state after an exponential backoff
    /// (`mirror.failed.retry.*`; base 2). The prototype's 20 % jitter is left to the caller,
    /// which owns the seeded randomness.
    Exponential {
        /// `mirror.failed.retry.initial.backoff.ms`.
        initial_backoff_ms: i64,
        /// `mirror.failed.retry.max.backoff.ms`.
        max_backoff_ms: i64,
        /// `mirror.failed.retry.max.attempts` (0 disables automatic retries).
        max_attempts: i16,
    },
}

impl FailedRetry {
    /// The latest prototype's defaults (100 ms, 300 s, 20 attempts).
    pub const PROTOTYPE: FailedRetry = FailedRetry::Exponential {
        initial_backoff_ms: 100,
        max_backoff_ms: 300_000,
        max_attempts: 20,
    };

    /// The delay before retrying a partition FAILED with `retry_attempt` (`-1` =
    /// non-retryable), or `None` when no automatic retry happens (non-retryable, attempts
    /// exhausted, or the design never retries). Kafka: `schedulePartitionRetry`.
    #[must_use]
    pub fn retry_delay_ms(self, retry_attempt: i16) -> Option<i64> {
        let FailedRetry::Exponential {
            initial_backoff_ms,
            max_backoff_ms,
            max_attempts,
        } = self
        else {
            return None;
        };
        if retry_attempt < 0 {
            return None;
        }
        let attempt = if retry_attempt == 0 { 1 } else { retry_attempt };
        if attempt >= max_attempts {
            return None;
        }
        let factor = 1i64.checked_shl(u32::try_from(attempt).unwrap_or(u32::MAX).min(62));
        let delay = factor.map_or(max_backoff_ms, |f| initial_backoff_ms.saturating_mul(f));
        Some(delay.min(max_backoff_ms))
    }

    /// The retry counter to persist with the next FAILED write (Kafka:
    /// `MirrorPartitionMetadata.nextAttempt`): `-1` stays `-1`, a non-retryable failure is
    /// `-1`, otherwise one more than `current` (starting at 1), capped at `max_attempts`.
    #[must_use]
    pub fn next_attempt(self, current: i16, non_retryable: bool) -> i16 {
        let FailedRetry::Exponential { max_attempts, .. } = self else {
            return -1;
        };
        if non_retryable || current == -1 {
            -1
        } else if current != 0 {
            max_attempts.min(current.saturating_add(1))
        } else {
            1
        }
    }
}

#[cfg(test)]
#[path = "policy_test.rs"]
mod tests;
