//! Checkers: they observe events and inspect node state, never change anything (style.md §3).
//!
//! - [`ghost`]: ghost state kept by the harness: committed history per partition (true HW),
//!   acknowledged writes, consumed records, declared data-loss events.
//! - [`epoch_cache`]: the entry side of `epoch_cache_well_formed` (every entry inside the log
//!   starts a batch of its epoch; only a trailing one may sit at the LEO with no record).
//! - [`log_invariants`]: kafka-semantics §2.3 items 1-10, checked after every event on the
//!   partition the event touched.
//! - [`mirror`]: KIP-1279 mirror invariants (kafka-semantics §2.3 items 11-18, scenarios §5)
//!   after every event on the touched partition, and the end-of-run failback validation.
//! - [`state_history`]: the `__mirror_state` records seen per mirror partition
//!   (`valid_transitions`: late reports are history, two records with one state epoch are a
//!   lost update).
//! - [`hw_bound`]: the leader's `HW ≤ min LEO over maximalIsr` (kafka-semantics §2.3 item 2).
//! - [`prefix`]: LogMatching of a replica's log below its HW against the committed history.
//! - [`history`]: what clients saw (Jepsen-style): acknowledged writes not lost, consumers
//!   reading committed data in order without duplicates.
//! - [`recovery`]: recovery is idempotent (a second recovery of the files a restart left
//!   changes nothing) and, at the end, every replica's files hold its log.
//!
//! The first [`Violation`] stops the run; it names the invariant, node, partition, offset and
//! event number.

// A violation ends the run, so its size on the error path does not matter.
#![allow(clippy::result_large_err)]

pub mod epoch_cache;
pub mod ghost;
pub mod history;
pub mod hw_bound;
pub mod log_invariants;
pub mod mirror;
pub mod outcomes;
pub mod prefix;
pub mod recovery;
pub mod state_history;
pub mod unclean_line;

#[cfg(test)]
mod mirror_test;

use std::fmt;

use mirror_core::types::{Offset, TopicPartition};

/// A broken invariant.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Violation {
    /// The invariant's name (`log_matching`, `no_lost_acked_write`, ...).
    pub invariant: String,
    /// The node where it broke (trace name).
    pub node: String,
    /// The partition, if any.
    pub partition: Option<String>,
    /// The offset, if any.
    pub offset: Option<i64>,
    /// The event number (trace sequence) after which it was detected.
    pub event_seq: u64,
    /// Simulated time in microseconds.
    pub t_micros: u64,
    /// What was seen.
    pub detail: String,
}

impl Violation {
    /// Builds a violation.
    #[must_use]
    pub fn new(
        invariant: &str,
        node: impl Into<String>,
        tp: Option<&TopicPartition>,
        offset: Option<Offset>,
        detail: impl Into<String>,
    ) -> Self {
        Self {
            invariant: invariant.to_string(),
            node: node.into(),
            partition: tp.map(ToString::to_string),
            offset: offset.map(|o| o.0),
            event_seq: 0,
            t_micros: 0,
            detail: detail.into(),
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invariant {} broken at event #{} on {}",
            self.invariant, self.event_seq, self.node
        )?;
        if let Some(p) = &self.partition {
            write!(f, " {p}")?;
        }
        if let Some(o) = self.offset {
            write!(f, " offset {o}")?;
        }
        write!(f, ": {}", self.detail)
    }
}

/// What a check judges (product.md §5: outcome checks decide a run's verdict, rule checks of a
/// design's own mechanism only explain it).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum CheckKind {
    /// What a user of Kafka and of the mirror sees or loses, whatever the design's means.
    Outcome,
    /// A rule of Kafka itself (kafka-semantics §2.3): common to every design, so it judges the
    /// simulated Kafka and decides the verdict like an outcome.
    Kafka,
    /// Whether a design performed its own steps (the seed design's epoch bump, PID reset,
    /// read-only flag, LSO cut): a diagnostic printed beside the verdict as the likely
    /// mechanism. It never ends a run or fails it.
    Mechanism,
}

impl CheckKind {
    /// The kind's name in `mirrorsim list` and reports.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            CheckKind::Outcome => "outcome",
            CheckKind::Kafka => "kafka",
            CheckKind::Mechanism => "mechanism",
        }
    }
}

/// The kind of the check named `invariant` (a name not in [`INVARIANTS`] is a Kafka rule).
#[must_use]
pub fn kind_of(invariant: &str) -> CheckKind {
    INVARIANTS
        .iter()
        .find(|(n, _, _)| *n == invariant)
        .map_or(CheckKind::Kafka, |(_, k, _)| *k)
}

use CheckKind::{Kafka, Mechanism, Outcome};

/// Every invariant and validation with its kind and what it checks, for `mirrorsim list`.
pub const INVARIANTS: &[(&str, CheckKind, &str)] = &[
    (
        "no_lost_acked_write",
        Outcome,
        "every acknowledged write (acks=all; acks=1 once committed) is in the log at its offset, unless a declared loss cut it after it was committed: exact offsets, never a whole partition",
    ),
    (
        "no_duplicates",
        Outcome,
        "no record of an idempotent or transactional producer is in a log twice (any replica, any cluster)",
    ),
    (
        "failover_producer_not_fenced",
        Outcome,
        "a producer started on a cluster after a stop is never refused for a sequence or epoch it did not make (a mirrored producer id's state)",
    ),
    (
        "consistent_read",
        Outcome,
        "every record a consumer read below the HW is the committed record at that offset",
    ),
    (
        "consumer_order",
        Outcome,
        "a consumer session reads offsets strictly increasing with no duplicates",
    ),
    (
        "consumer_gap",
        Outcome,
        "a consumer never skips a committed record it should return (data above the log start; transactional data only for read_uncommitted); read_committed never returns aborted data",
    ),
    (
        "lso_reaches_hw",
        Outcome,
        "once producers stop, every partition's LSO reaches its HW within the liveness bound (no hanging transaction, whatever the design's means)",
    ),
    (
        "log_matching",
        Outcome,
        "one history per offset in a cluster: every replica's data below its HW equals the committed history at the same offsets",
    ),
    (
        "mirror_prefix",
        Outcome,
        "one history per offset across clusters while mirroring: every batch a destination appends equals, byte for byte and at the same offset, the source's committed batch (unless cut by a declared source loss)",
    ),
    (
        "mirror_not_ahead_of_source",
        Outcome,
        "while MIRRORING a destination HW never exposes an offset the source has not committed",
    ),
    (
        "one_history_per_offset",
        Outcome,
        "after a failback both clusters hold the same record at every offset below the lower HW (from the later log start)",
    ),
    (
        "failback_converges",
        Outcome,
        "at the end, a failed-back partition's log equals its new source's, and every record the old source dropped is a declared loss",
    ),
    (
        "mirror_progress",
        Outcome,
        "with the source partition led and the faults healed, the destination closes its lag to the source within the liveness bound",
    ),
    (
        "synced_offset_in_bounds",
        Outcome,
        "a group offset the mirror syncs to the destination is within the destination partition's [log start, LEO]",
    ),
    (
        "no_lost_state_update",
        Outcome,
        "no two __mirror_state writers commit transitions from the same state epoch of one partition",
    ),
    (
        "epoch_cache_well_formed",
        Kafka,
        "cache strictly increasing, within [logStart, LEO], matching every batch's epoch",
    ),
    (
        "offset_bounds",
        Kafka,
        "logStart <= LSO <= HW <= LEO on every replica; leader HW <= follower LEOs it counted",
    ),
    (
        "leader_completeness",
        Kafka,
        "a cleanly elected leader holds the whole committed history (LEO >= true HW)",
    ),
    (
        "monotonic_hw",
        Kafka,
        "a leader's HW never decreases in its tenure; the true HW never decreases without a declared loss",
    ),
    (
        "monotonic_epoch",
        Kafka,
        "a replica's leader epoch never decreases",
    ),
    (
        "single_leader",
        Kafka,
        "at most one broker leads a partition in a given leader epoch",
    ),
    (
        "no_truncation_below_hw",
        Kafka,
        "no replica truncates below its HW unless the partition had a declared data loss",
    ),
    (
        "producer_state_is_replay",
        Kafka,
        "producer state equals the replay of the retained log (minus expired producers)",
    ),
    (
        "lso_formula",
        Kafka,
        "LSO = min(first unstable offset, HW), and LSO = HW with no open transaction",
    ),
    (
        "recovery_idempotent",
        Kafka,
        "after every restart a second recovery of the files the first left cuts nothing and rebuilds the same log (batches, log start, LEO, HW, epoch cache, producer state); at the end every replica's files hold its log",
    ),
    (
        "valid_transitions",
        Kafka,
        "every mirror state change is allowed by the design's transition table and the state epoch strictly rises",
    ),
    (
        "read_only_until_stopped",
        Mechanism,
        "no leader append on a mirror partition before STOPPED except the broker's control batches (MIRROR_PID_RESET, ABORT)",
    ),
    (
        "epoch_above_lme_after_stop",
        Mechanism,
        "after the last mirrored epoch is recorded at stop, every leader-appended batch has epoch > LME",
    ),
    (
        "pid_reset_after_stop",
        Mechanism,
        "once STOPPED no replica keeps a producer entry whose last batch is below the MIRROR_PID_RESET offset",
    ),
    (
        "no_hanging_txn_after_stop",
        Mechanism,
        "at STOPPED the leader has no open transaction: LSO == HW (== LEO outside the latest design)",
    ),
];
