//! The design lab switches (kip1279.md A.3) as data.
//!
//! A run names a preset and optional ablations: `seed`, `latest`, `early`,
//! `seed-no-pid-reset`, `seed-no-epoch-bump-no-isr-wait`. The broker never matches on the
//! preset itself; it asks the query methods of [`Design`] (`stop_bumps_epoch()`,
//! `prepare_waits_for_isr()`, ...), so a new variant changes this file only.
//!
//! Grammar: `<preset>(-<ablation>)*` with presets `early | seed | latest` and ablations
//! `no-pid-reset | no-epoch-bump | no-isr-wait | no-lso-truncation | no-read-only |
//! no-lme-truncation | no-idempotent-stop`
//! (`no-abort-markers` is accepted as an alias of `no-lso-truncation`: for `latest` that
//! ablation removes the ABORT markers). [`Design`]'s `Display` prints the canonical form,
//! ablations in that order, so `parse(d.to_string()) == d`.

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

use super::policy::{DivergencePolicy, EpochFencing, FailbackMarkerKind, FailedRetry};
use super::state::MirrorPartitionState;
use crate::replication::fetch_leader::FetchIsolation;

/// A revision of the KIP the simulator can run (kip1279.md B §1 timeline).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Preset {
    /// Feb–Mar 2026: LMO failback, read_committed fetch, stop = truncate to LSO + record LMO.
    Early,
    /// The seed revision (kip1279.md A.1): the default.
    #[default]
    Seed,
    /// The late prototype (B §7, §8): LOG_ALIGNMENT, EPOCH_FENCING, ULE_RECOVERY, FAILED with
    /// retries, ABORT markers at stop, LastMirrorPosition.
    Latest,
}

impl Preset {
    /// Every preset, in timeline order.
    pub const ALL: [Preset; 3] = [Preset::Early, Preset::Seed, Preset::Latest];

    /// The preset's name in `--design`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Preset::Early => "early",
            Preset::Seed => "seed",
            Preset::Latest => "latest",
        }
    }

    fn from_name(s: &str) -> Option<Preset> {
        Preset::ALL.into_iter().find(|p| p.name() == s)
    }
}

/// Safety mechanisms removed from a preset. Each flag removes exactly one mechanism, so the
/// checkers can show which invariant it protects. All false = the preset as specified.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ablations {
    /// No `MIRROR_PID_RESET` at the end of STOPPING (seed, latest).
    pub no_pid_reset: bool,
    /// No BumpLeaderEpochs at STOPPING (seed, latest): post-failover writes may reuse an
    /// epoch <= LME.
    pub no_epoch_bump_at_stop: bool,
    /// PREPARING / LOG_ALIGNMENT does not wait for the replicas to converge.
    pub no_isr_wait: bool,
    /// STOPPING neither truncates to the LSO (early, seed) nor writes ABORT markers (latest).
    pub no_lso_truncation: bool,
    /// Client writes to a not-yet-STOPPED mirror topic are accepted.
    pub no_read_only: bool,
    /// PREPARING (failback) does not truncate at the start of the first epoch above the
    /// last mirrored epoch (seed, latest): the old source keeps a tail whose epoch numbers
    /// also exist, with other data, on the new source.
    pub no_lme_truncation: bool,
    /// A re-driven STOPPING (a new leader, or a stop whose STOPPED record a declared loss
    /// took) re-runs its log actions, the LSO cut or ABORT markers and the `MIRROR_PID_RESET`,
    /// although the stop's own reset in the log shows they ran (seed, latest). That is the
    /// KIP's sequence as written, and the prototype's `writePidResetRecord` (B §7.6 item 5:
    /// "PID reset (could be written twice)"). Run over the new primary's writes, it cuts
    /// their open transactions and expires their idempotent producers (F5).
    pub no_idempotent_stop: bool,
}

/// One ablation token: its canonical spelling and the flag it sets.
struct AblationToken {
    name: &'static str,
    get: fn(&Ablations) -> bool,
    set: fn(&mut Ablations),
}

const ABLATION_TOKENS: [AblationToken; 7] = [
    AblationToken {
        name: "no-pid-reset",
        get: |a| a.no_pid_reset,
        set: |a| a.no_pid_reset = true,
    },
    AblationToken {
        name: "no-epoch-bump",
        get: |a| a.no_epoch_bump_at_stop,
        set: |a| a.no_epoch_bump_at_stop = true,
    },
    AblationToken {
        name: "no-isr-wait",
        get: |a| a.no_isr_wait,
        set: |a| a.no_isr_wait = true,
    },
    AblationToken {
        name: "no-lso-truncation",
        get: |a| a.no_lso_truncation,
        set: |a| a.no_lso_truncation = true,
    },
    AblationToken {
        name: "no-read-only",
        get: |a| a.no_read_only,
        set: |a| a.no_read_only = true,
    },
    AblationToken {
        name: "no-lme-truncation",
        get: |a| a.no_lme_truncation,
        set: |a| a.no_lme_truncation = true,
    },
    AblationToken {
        name: "no-idempotent-stop",
        get: |a| a.no_idempotent_stop,
        set: |a| a.no_idempotent_stop = true,
    },
];

/// Accepted alias -> canonical ablation token.
const ABLATION_ALIASES: [(&str, &str); 1] = [("no-abort-markers", "no-lso-truncation")];

/// Why a `--design` string was refused. Every variant names the offending token.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum DesignParseError {
    /// The string is empty.
    #[error("empty design name (valid designs: {names})", names = valid_names())]
    Empty,
    /// The first token is not a preset.
    #[error("unknown design '{0}' (valid designs: {names})", names = valid_names())]
    UnknownPreset(String),
    /// A token after the preset is not an ablation.
    #[error(
        "unknown ablation '{0}' (expected no-pid-reset, no-epoch-bump, no-isr-wait, no-lso-truncation, no-read-only, no-lme-truncation or no-idempotent-stop)"
    )]
    UnknownAblation(String),
    /// The same ablation appears twice.
    #[error("ablation '{0}' given twice")]
    DuplicateAblation(String),
    /// The ablation removes a mechanism the preset does not have (e.g. `early-no-pid-reset`:
    /// the early design writes no PID reset), so the variant would equal the preset.
    #[error("ablation '{ablation}' does not apply to preset '{preset}'")]
    NotApplicable {
        /// The preset.
        preset: &'static str,
        /// The ablation token.
        ablation: String,
    },
}

/// Every named design, comma-separated (for errors).
fn valid_names() -> String {
    NAMED.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
}

/// A preset plus ablations. Built by [`Design::parse`] or [`Design::new`], which refuse
/// ablations the preset does not have, so every `Design` prints to a parseable name.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Design {
    preset: Preset,
    ablations: Ablations,
}

/// `(name, one-line description)` of every named design `mirrorsim list` shows.
const NAMED: [(&str, &str); 20] = [
    (
        "early",
        "LMO failback, read_committed fetch, stop truncates to the LSO and records it as LMO",
    ),
    (
        "seed",
        "default (A.1): LME failback; stop bumps the epoch, truncates to the LSO, records the LME, resets PIDs",
    ),
    (
        "latest",
        "late prototype: LOG_ALIGNMENT by LastMirrorPosition (epoch rule bounded by the offset), convergence also waits for min ISR; EPOCH_FENCING reactive, proactive and periodic (threshold 3, increment 10; the mirror coordinator's sync bumps partitions of topics desired MIRRORING or STOPPED whose source epoch nears the local one); a divergence goes ULE_RECOVERY with mirror.support.unclean.leader.election, else FAILED for good; a mirror fetch that gets no answer (source unreachable) fails its partitions, retryable, keeping the cached source leader; a transition write that gets no answer or a fenced epoch is read back and written again; FAILED retries to the previous state with a doubling backoff (no jitter; the mirror's mirror.failed.retry.initial.backoff.ms, max.backoff.ms and max.attempts, defaults 100, 300000, 20), after max.attempts only RecoverMirrorTopics leaves it, and it is re-asserted before a stop; stop accepted only when every partition reads MIRRORING or PAUSED (the broker's validateStopMirrorStates); stop: record the position, bump, ABORT markers, PID reset (B §8.5). RecoverMirrorTopics rewrites FAILED to the previous state. Not modelled: the stale source metadata check (every mirror fetch carries currentLeaderEpoch, so a source leader fences a stale fetch before it could return a batch above it)",
    ),
    (
        "early-no-isr-wait",
        "early without waiting for replicas to converge after failback truncation",
    ),
    (
        "early-no-lso-truncation",
        "early without truncating to the LSO at stop (open transactions survive failover)",
    ),
    (
        "early-no-read-only",
        "early with client writes accepted before STOPPED",
    ),
    (
        "seed-no-pid-reset",
        "seed without MIRROR_PID_RESET at stop (mirrored PIDs may collide with new ones)",
    ),
    (
        "seed-no-epoch-bump",
        "seed without the leader-epoch bump at stop (post-failover epochs may not exceed the LME)",
    ),
    (
        "seed-no-isr-wait",
        "seed without waiting for the ISR to converge in PREPARING",
    ),
    (
        "seed-no-lso-truncation",
        "seed without truncating to the LSO at stop (open transactions survive failover)",
    ),
    (
        "seed-no-read-only",
        "seed with client writes accepted before STOPPED",
    ),
    (
        "seed-no-lme-truncation",
        "seed without the failback truncation at the first epoch above the LME",
    ),
    (
        "seed-no-idempotent-stop",
        "seed with a re-driven stop re-running its LSO cut and PID reset over the new primary's writes (F5)",
    ),
    (
        "latest-no-pid-reset",
        "latest without MIRROR_PID_RESET at stop",
    ),
    (
        "latest-no-epoch-bump",
        "latest without the leader-epoch bump at stop",
    ),
    (
        "latest-no-isr-wait",
        "latest without waiting for replica convergence in LOG_ALIGNMENT",
    ),
    (
        "latest-no-lso-truncation",
        "latest without ABORT markers for open transactions at stop",
    ),
    (
        "latest-no-read-only",
        "latest with client writes accepted before STOPPED",
    ),
    (
        "latest-no-lme-truncation",
        "latest without the LOG_ALIGNMENT truncation at the first epoch above the last mirror position's epoch",
    ),
    (
        "latest-no-idempotent-stop",
        "latest with a re-driven stop re-writing ABORT markers and the PID reset over the new primary's writes (the prototype's writePidResetRecord)",
    ),
];

impl Design {
    /// `preset` with `ablations`; refuses ablations the preset does not have.
    pub fn new(preset: Preset, ablations: Ablations) -> Result<Design, DesignParseError> {
        for t in &ABLATION_TOKENS {
            if (t.get)(&ablations) && !applies(preset, t.name) {
                return Err(DesignParseError::NotApplicable {
                    preset: preset.name(),
                    ablation: t.name.to_owned(),
                });
            }
        }
        Ok(Design { preset, ablations })
    }

    /// A preset without ablations.
    #[must_use]
    pub fn preset_only(preset: Preset) -> Design {
        Design {
            preset,
            ablations: Ablations::default(),
        }
    }

    /// Parses a `--design` value (module docs give the grammar).
    pub fn parse(s: &str) -> Result<Design, DesignParseError> {
        if s.is_empty() {
            return Err(DesignParseError::Empty);
        }
        let preset_token = s.split('-').next().unwrap_or(s);
        let preset = Preset::from_name(preset_token)
            .ok_or_else(|| DesignParseError::UnknownPreset(preset_token.to_owned()))?;
        let mut ablations = Ablations::default();
        let mut rest = &s[preset_token.len()..];
        while !rest.is_empty() {
            // `rest` starts with '-' (the preset ended at a '-', and so does every token).
            let body = &rest[1..];
            let (token, consumed) = next_ablation_token(body);
            let canonical = ABLATION_ALIASES
                .iter()
                .find(|(alias, _)| *alias == token)
                .map_or(token, |(_, c)| c);
            let Some(t) = ABLATION_TOKENS.iter().find(|t| t.name == canonical) else {
                return Err(DesignParseError::UnknownAblation(token.to_owned()));
            };
            if (t.get)(&ablations) {
                return Err(DesignParseError::DuplicateAblation(token.to_owned()));
            }
            (t.set)(&mut ablations);
            rest = &body[consumed..];
        }
        Design::new(preset, ablations)
    }

    /// The preset.
    #[must_use]
    pub fn preset(&self) -> Preset {
        self.preset
    }

    /// The ablations.
    #[must_use]
    pub fn ablations(&self) -> Ablations {
        self.ablations
    }

    /// Every named design with a one-line description, for `mirrorsim list` and swarm runs:
    /// the presets, then each preset with each single ablation that applies to it.
    #[must_use]
    pub fn all_named() -> Vec<(&'static str, &'static str)> {
        NAMED.to_vec()
    }

    // ------------------------------------------------------------ questions the broker asks

    /// The marker failback looks up and PREPARING truncates by.
    #[must_use]
    pub fn failback_marker(&self) -> FailbackMarkerKind {
        match self.preset {
            Preset::Early => FailbackMarkerKind::LastMirroredOffset,
            Preset::Seed => FailbackMarkerKind::LastMirroredEpoch,
            Preset::Latest => FailbackMarkerKind::LastMirrorPosition,
        }
    }

    /// Isolation of the mirror fetch against the source: early reads committed data up to
    /// the source LSO; seed and latest read uncommitted data up to the source HW (A.2).
    #[must_use]
    pub fn mirror_fetch_isolation(&self) -> FetchIsolation {
        match self.preset {
            Preset::Early => FetchIsolation::TxnCommitted,
            Preset::Seed | Preset::Latest => FetchIsolation::HighWatermark,
        }
    }

    /// STOPPING truncates the log to its LSO (early, seed) unless ablated.
    #[must_use]
    pub fn stop_truncates_to_lso(&self) -> bool {
        self.preset != Preset::Latest && !self.ablations.no_lso_truncation
    }

    /// STOPPING writes ABORT markers for open transactions (latest) unless ablated.
    #[must_use]
    pub fn stop_writes_abort_markers(&self) -> bool {
        self.preset == Preset::Latest && !self.ablations.no_lso_truncation
    }

    /// STOPPING bumps the leader epoch above every epoch in the log (seed, latest) unless
    /// ablated.
    #[must_use]
    pub fn stop_bumps_epoch(&self) -> bool {
        self.preset != Preset::Early && !self.ablations.no_epoch_bump_at_stop
    }

    /// STOPPING appends `MIRROR_PID_RESET` (seed, latest) unless ablated. The early design
    /// rewrote PIDs instead, which this model does not do: early has no PID barrier.
    #[must_use]
    pub fn stop_writes_pid_reset(&self) -> bool {
        self.preset != Preset::Early && !self.ablations.no_pid_reset
    }

    /// A re-driven STOPPING skips the log actions (LSO cut or ABORT markers, PID reset) that
    /// this mirror's own `MIRROR_PID_RESET` in the log shows already ran (A.1: "every action
    /// must be idempotent"), unless ablated. Early writes no reset, so it has no such mark
    /// (nor does `no-pid-reset`: its stops find none, and re-run everything).
    #[must_use]
    pub fn stop_is_idempotent(&self) -> bool {
        self.preset != Preset::Early && !self.ablations.no_idempotent_stop
    }

    /// PREPARING / LOG_ALIGNMENT waits for the replicas to converge
    /// ([`isr_converged`](super::isr_converged)) unless ablated.
    #[must_use]
    pub fn prepare_waits_for_isr(&self) -> bool {
        !self.ablations.no_isr_wait
    }

    /// The replica-convergence waits (PREPARING's, and STOPPING's after the LSO cut) also
    /// wait while the ISR is below `min.insync.replicas`. The late prototype does (B §8.1
    /// step 4, `maybeCompleteReplicaConvergence`); the seed (A.1) and early texts wait only
    /// until no ISR member is ahead of the leader, so an ISR of the leader alone moves on
    /// (the HW still needs `min.insync.replicas`). The difference matters when the only replica that could complete the ISR
    /// cannot fetch from a mirror leader until that leader mirrors again (seed 61585).
    #[must_use]
    pub fn prepare_waits_for_min_isr(&self) -> bool {
        self.preset == Preset::Latest
    }

    /// A desired STOPPED moves a FAILED partition to STOPPING (seed A.1: any state may be
    /// stopped; early likewise). The late prototype re-asserts FAILED before it looks at the
    /// desired state (B §7.4 `applyStateTransition` step 2), so only a retry or
    /// RecoverMirrorTopics leaves FAILED.
    #[must_use]
    pub fn stop_overrides_failed(&self) -> bool {
        self.preset != Preset::Latest
    }

    /// A mirror fetch that gets no answer (the source broker unreachable: crashed, cut off)
    /// fails the partitions it carried, retryable, keeps their cached source leader and
    /// refreshes the source metadata. The late prototype does: `leader.fetch` throws an
    /// `IOException` (Kafka's `NetworkClient` disconnects a node on a request timeout and
    /// `NetworkClientUtils.sendAndReceive` throws "Connection to <node> was disconnected
    /// before the response was read"), `AbstractFetcherThread.handlePartitionsWithErrors`
    /// then calls `markPartitionRemoved` and `MirrorFetcherThread.refreshSourceClusterMetadata`,
    /// which schedules the source metadata refresh and transitions the partitions to FAILED
    /// (nonRetryable false), and the FAILED retry re-enters MIRRORING, whose fetcher asks the
    /// cached leader again (`ClusterMirroringIntegrationTest.testFailedRetryExhaustion`,
    /// system tests `test_failed_auto_topic_recovery`, `test_failed_manual_topic_recovery`).
    /// Seed and early keep the partition in its state with fetcher backoff (A.1: "transient
    /// fetch errors ... so failover during a source outage works").
    #[must_use]
    pub fn mirror_fetch_error_fails_partitions(&self) -> bool {
        self.preset == Preset::Latest
    }

    /// A transition whose `__mirror_state` write got no answer (the coordinator unreachable),
    /// a timeout (COORDINATOR_NOT_AVAILABLE) or a fenced epoch is read again and written
    /// again, unless a newer transition replaced it (the late prototype's `refreshAndPersistState` from `transitionTo` and
    /// `onRemoteWriteComplete`, B §7.5: "FENCED_* → re-read, merge, retry"). Seed and early
    /// re-drive the state read back (A.1: "a new leader re-reads the state and re-drives the
    /// current state's action"), which loses a transition an event decided and the state
    /// cannot tell again: latest's ULE_RECOVERY after a source divergence, whose truncation
    /// already ran, would resume MIRRORING without waiting for every replica.
    #[must_use]
    pub fn rewrites_unanswered_transition(&self) -> bool {
        self.preset == Preset::Latest
    }

    /// PREPARING / LOG_ALIGNMENT truncates at the start of the first epoch above the last
    /// mirrored epoch (seed, latest) unless ablated. Without it, epoch numbers above the LME
    /// name different histories on the two clusters, and the fetcher's divergence check can
    /// match them by number alone.
    #[must_use]
    pub fn prepare_truncates_above_lme(&self) -> bool {
        !self.ablations.no_lme_truncation
    }

    /// Client Produce, DeleteRecords, DeleteTopics and CreatePartitions on a mirror topic
    /// whose partition is not STOPPED are refused, unless ablated. So are this cluster's
    /// WriteTxnMarkers (the old source's transaction coordinator after failback; the
    /// coordinator drops the partition), a model decision the seed design leaves open.
    #[must_use]
    pub fn read_only_enforced(&self) -> bool {
        !self.ablations.no_read_only
    }

    /// What a divergence while MIRRORING leads to.
    #[must_use]
    pub fn divergence_policy(&self) -> DivergencePolicy {
        match self.preset {
            Preset::Early | Preset::Seed => DivergencePolicy::TruncateAndContinue,
            Preset::Latest => DivergencePolicy::UleRecoveryOrFail,
        }
    }

    /// The EPOCH_FENCING rules (latest only; `None` = no DLE >= SLE enforcement).
    #[must_use]
    pub fn epoch_fencing(&self) -> Option<EpochFencing> {
        (self.preset == Preset::Latest).then_some(EpochFencing::PROTOTYPE)
    }

    /// How FAILED partitions retry on their own.
    #[must_use]
    pub fn failed_retry(&self) -> FailedRetry {
        match self.preset {
            Preset::Early | Preset::Seed => FailedRetry::Never,
            Preset::Latest => FailedRetry::PROTOTYPE,
        }
    }

    /// StopMirrorTopics validation: seed and early accept PREPARING and MIRRORING, plus
    /// FAILED (A.2: a source-deleted topic can still be stopped); latest accepts MIRRORING
    /// and PAUSED only (so failover during a source outage is blocked, B §7.6-1).
    #[must_use]
    pub fn stop_allowed_from(&self, state: MirrorPartitionState) -> bool {
        use MirrorPartitionState as S;
        match self.preset {
            Preset::Early | Preset::Seed => {
                matches!(state, S::Preparing | S::Mirroring | S::Failed)
            }
            Preset::Latest => matches!(state, S::Mirroring | S::Paused),
        }
    }

    /// Whether the broker checks [`Self::stop_allowed_from`] against the partitions'
    /// `__mirror_state` records before it forwards a StopMirrorTopics (latest: the
    /// prototype's `validateStopMirrorStates`, B §6.6). Seed and early judge a stop by the
    /// desired state at the controller only (A.1), and a FAILED or PREPARING partition stops.
    #[must_use]
    pub fn stop_validates_partition_states(&self) -> bool {
        self.preset == Preset::Latest
    }

    /// StartMirrorTopics validation: UNKNOWN (never mirrored) or STOPPED (failback / restart).
    #[must_use]
    pub fn start_allowed_from(&self, state: MirrorPartitionState) -> bool {
        matches!(
            state,
            MirrorPartitionState::Unknown | MirrorPartitionState::Stopped
        )
    }

    /// PauseMirrorTopics validation: MIRRORING only.
    #[must_use]
    pub fn pause_allowed_from(&self, state: MirrorPartitionState) -> bool {
        state == MirrorPartitionState::Mirroring
    }

    /// ResumeMirrorTopics validation: PAUSED only.
    #[must_use]
    pub fn resume_allowed_from(&self, state: MirrorPartitionState) -> bool {
        state == MirrorPartitionState::Paused
    }
}

/// Whether ablation `token` removes something `preset` has.
fn applies(preset: Preset, token: &str) -> bool {
    // Early fails back by offset (LMO), so it has no truncation at an epoch to remove, and it
    // writes no PID reset (so no bump to draw it under, and no reset to mark a stop done).
    !(preset == Preset::Early
        && matches!(
            token,
            "no-pid-reset" | "no-epoch-bump" | "no-lme-truncation" | "no-idempotent-stop"
        ))
}

/// Splits the next ablation token off `body`: a known token (or alias) followed by the end
/// or a '-', else everything up to the next "-no-" (the unknown token to report).
fn next_ablation_token(body: &str) -> (&str, usize) {
    let known = ABLATION_TOKENS
        .iter()
        .map(|t| t.name)
        .chain(ABLATION_ALIASES.iter().map(|(a, _)| *a));
    for name in known {
        if let Some(after) = body.strip_prefix(name)
            && (after.is_empty() || after.starts_with('-'))
        {
            return (name, name.len());
        }
    }
    let end = body
        .get(1..)
        .and_then(|b| b.find("-no-"))
        .map_or(body.len(), |i| i + 1);
    (&body[..end], end)
}

impl fmt::Display for Design {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.preset.name())?;
        for t in &ABLATION_TOKENS {
            if (t.get)(&self.ablations) {
                write!(f, "-{}", t.name)?;
            }
        }
        Ok(())
    }
}

impl fmt::Display for Preset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Design {
    type Err = DesignParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Design::parse(s)
    }
}

#[cfg(test)]
#[path = "design_test.rs"]
mod tests;
