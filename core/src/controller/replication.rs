//! Topics and partitions as the controller decides them (Kafka: `ReplicationControlManager`
//! and `PartitionChangeBuilder`), as pure functions of the current registration: replica
//! placement, leader elections, ISR changes, `AlterPartition` validation and KIP-1279's
//! `MinLeaderEpoch` bumps. The node ([`super::Controller`]) turns their results into records.

use std::collections::BTreeSet;

use thiserror::Error;

use crate::protocol::ErrorCode;
use crate::protocol::metadata::PartitionRegistration;
use crate::types::{BrokerId, LeaderEpoch};

/// How a new leader may be chosen (Kafka: `PartitionChangeBuilder.Election`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Election {
    /// The preferred replica (first in the assignment) if it is an acceptable ISR member,
    /// else keep the current leader, else any acceptable ISR member (admin `PREFERRED`).
    Preferred,
    /// Keep the current leader if still acceptable, else the first acceptable ISR member in
    /// assignment order (Kafka's default, `ONLINE`).
    Online,
    /// As `Online`, then, when no ISR member is acceptable, the first acceptable replica
    /// outside the ISR: data may be lost (topic `unclean.leader.election.enable` or an
    /// `UNCLEAN` `ElectLeaders`).
    Unclean,
}

/// The outcome of [`PartitionChangeBuilder::build`]: the registration a `PartitionChange`
/// record will carry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionChange {
    /// The resulting registration (epochs already bumped).
    pub registration: PartitionRegistration,
    /// True when the leader field changed (including to or from `None`).
    pub leader_changed: bool,
    /// True when the new leader came from outside the ISR (a declared data-loss event).
    pub unclean: bool,
    /// KIP-1279: set when the change is a `MinLeaderEpoch` bump.
    pub min_leader_epoch: Option<LeaderEpoch>,
}

/// Computes one partition's next registration (Kafka: `PartitionChangeBuilder`, without
/// reassignment and without KIP-966 ELR: pre-ELR Kafka never writes an empty ISR, so the
/// last ISR member stays in the ISR of an offline partition).
pub struct PartitionChangeBuilder<'a> {
    current: &'a PartitionRegistration,
    target_isr: Vec<BrokerId>,
    election: Election,
    acceptable_leader: &'a dyn Fn(BrokerId) -> bool,
    target_recovered: Option<bool>,
    min_leader_epoch: Option<LeaderEpoch>,
    elect: bool,
}

impl<'a> PartitionChangeBuilder<'a> {
    /// Starts from `current`; `acceptable_leader` says which brokers may lead (Kafka's
    /// `LeaderAcceptor`: registered and unfenced, minus a broker being fenced).
    pub fn new(
        current: &'a PartitionRegistration,
        acceptable_leader: &'a dyn Fn(BrokerId) -> bool,
    ) -> Self {
        Self {
            current,
            target_isr: current.isr.clone(),
            election: Election::Online,
            acceptable_leader,
            target_recovered: None,
            min_leader_epoch: None,
            elect: true,
        }
    }

    /// The ISR to move to (an empty target keeps the current ISR, as pre-ELR Kafka does).
    #[must_use]
    pub fn target_isr(mut self, isr: Vec<BrokerId>) -> Self {
        self.target_isr = isr;
        self
    }

    /// The election type to use if the leader must change.
    #[must_use]
    pub fn election(mut self, election: Election) -> Self {
        self.election = election;
        self
    }

    /// Marks the leader as recovered (KIP-704 `RECOVERED`) after an unclean election.
    #[must_use]
    pub fn leader_recovered(mut self) -> Self {
        self.target_recovered = Some(true);
        self
    }

    /// KIP-1279 `MinLeaderEpoch`: the leader epoch must end strictly above `min`. The
    /// leader is kept as it is (spec A.1: "leader unchanged"), so no election runs.
    #[must_use]
    pub fn min_leader_epoch(mut self, min: LeaderEpoch) -> Self {
        self.min_leader_epoch = Some(min);
        self.elect = false;
        self
    }

    fn is_valid_new_leader(&self, b: BrokerId) -> bool {
        self.target_isr.contains(&b) && (self.acceptable_leader)(b)
    }

    /// Kafka: `PartitionChangeBuilder.electLeader`. Returns `(leader, unclean)`.
    fn elect_leader(&self) -> (Option<BrokerId>, bool) {
        let current = self.current.leader.filter(|&l| self.is_valid_new_leader(l));
        if self.election == Election::Preferred {
            if let Some(&preferred) = self.current.replicas.first()
                && self.is_valid_new_leader(preferred)
            {
                return (Some(preferred), false);
            }
            if current.is_some() {
                return (current, false);
            }
            let other = self
                .current
                .replicas
                .iter()
                .skip(1)
                .copied()
                .find(|&r| self.is_valid_new_leader(r));
            return (other, false);
        }
        if current.is_some() {
            return (current, false);
        }
        if let Some(r) = self
            .current
            .replicas
            .iter()
            .copied()
            .find(|&r| self.is_valid_new_leader(r))
        {
            return (Some(r), false);
        }
        if self.election == Election::Unclean
            && let Some(r) = self
                .current
                .replicas
                .iter()
                .copied()
                .find(|&r| (self.acceptable_leader)(r))
        {
            return (Some(r), true);
        }
        (None, false)
    }

    /// The change, or `None` when nothing would change (Kafka writes no record then).
    #[must_use]
    pub fn build(self) -> Option<PartitionChange> {
        let cur = self.current;
        let mut next = cur.clone();
        let (leader, unclean) = if self.elect {
            self.elect_leader()
        } else {
            (cur.leader, false)
        };
        let leader_changed = leader != cur.leader;
        if leader_changed {
            next.leader = leader;
            if unclean {
                // Kafka: an unclean election forcibly sets the ISR to the new leader and
                // marks the leader RECOVERING (KIP-704).
                next.isr = leader.into_iter().collect();
                next.leader_recovering = true;
            }
        }
        if !unclean && !self.target_isr.is_empty() && self.target_isr != cur.isr {
            next.isr = self.target_isr.clone();
        }
        if self.target_recovered == Some(true) && !unclean {
            next.leader_recovering = false;
        }
        if leader_changed {
            next.leader_epoch = LeaderEpoch(cur.leader_epoch.0 + 1);
        }
        let mut min_leader_epoch = None;
        if let Some(min) = self.min_leader_epoch
            && next.leader_epoch <= min
        {
            // KIP-1279 (spec A.2): new epoch = max(current, MinLeaderEpoch) + 1.
            next.leader_epoch = LeaderEpoch(next.leader_epoch.0.max(min.0) + 1);
            min_leader_epoch = Some(min);
        }
        if next == *cur {
            return None;
        }
        next.partition_epoch = cur.partition_epoch + 1;
        check_partition_transition(cur, &next);
        Some(PartitionChange {
            registration: next,
            leader_changed,
            unclean: leader_changed && unclean,
            min_leader_epoch,
        })
    }
}

/// Asserts the controller's per-partition invariants on a change from `prev` to `next`:
/// the leader epoch never decreases, the partition epoch strictly increases, a leader
/// change always bumps the leader epoch (so one epoch has at most one leader), and the
/// registration is well formed.
pub fn check_partition_transition(prev: &PartitionRegistration, next: &PartitionRegistration) {
    assert!(
        next.leader_epoch >= prev.leader_epoch,
        "leader_epoch_monotonic: {} -> {}",
        prev.leader_epoch,
        next.leader_epoch
    );
    assert!(
        next.partition_epoch > prev.partition_epoch,
        "partition_epoch_increases: {} -> {}",
        prev.partition_epoch,
        next.partition_epoch
    );
    if next.leader != prev.leader {
        assert!(
            next.leader_epoch > prev.leader_epoch,
            "one_leader_per_epoch: leader {:?} -> {:?} in epoch {}",
            prev.leader,
            next.leader,
            next.leader_epoch
        );
    }
    check_registration(next);
}

/// Asserts that a registration is well formed: a non-empty ISR of distinct assigned
/// replicas, and a leader (if any) that is in the ISR.
pub fn check_registration(r: &PartitionRegistration) {
    assert!(!r.isr.is_empty(), "isr_non_empty: {r:?}");
    // Pairwise: an ISR is a handful of brokers, and this runs for every partition.
    assert!(
        r.isr
            .iter()
            .enumerate()
            .all(|(i, b)| !r.isr[..i].contains(b)),
        "isr_distinct: {r:?}"
    );
    assert!(
        r.isr.iter().all(|b| r.replicas.contains(b)),
        "isr_subset_of_replicas: {r:?}"
    );
    if let Some(l) = r.leader {
        assert!(r.isr.contains(&l), "leader_in_isr: {r:?}");
    }
}

/// Deterministic replica placement. Kafka's `StripedReplicaPlacer` shuffles brokers with a
/// random seed; the simulator must replay from a seed, so placement is a pure function:
/// replica `i` of partition `p` is `brokers[(start + i) % n]` with
/// `start = (fnv1a(topic) + p) % n` over the sorted unfenced brokers. The first replica is
/// the preferred leader.
///
/// # Errors
/// [`TopicError::InvalidReplicationFactor`] when `replication_factor` is not in `1..=n`.
pub fn place_replicas(
    topic: &str,
    partitions: std::ops::Range<i32>,
    replication_factor: i16,
    usable_brokers: &BTreeSet<BrokerId>,
) -> Result<Vec<Vec<BrokerId>>, TopicError> {
    let brokers: Vec<BrokerId> = usable_brokers.iter().copied().collect();
    let n = brokers.len();
    let rf = usize::try_from(replication_factor).unwrap_or(0);
    if rf == 0 || rf > n {
        return Err(TopicError::InvalidReplicationFactor {
            replication_factor,
            usable_brokers: n,
        });
    }
    let h = fnv1a(topic.as_bytes());
    Ok(partitions
        .map(|p| {
            let p = u64::try_from(p).unwrap_or(0);
            let start = usize::try_from(h.wrapping_add(p) % n as u64).unwrap_or(0);
            (0..rf).map(|i| brokers[(start + i) % n]).collect()
        })
        .collect())
}

/// 64-bit FNV-1a: a fixed, platform-independent hash for placement.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Kafka's `Topic.validate`: 1..=249 characters of `[a-zA-Z0-9._-]`, not `.` or `..`.
#[must_use]
pub fn is_valid_topic_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 249
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
}

/// Kafka's `Topic.unifyCollisionChars`: `.` and `_` collide in metric names, so two topics
/// that differ only there may not coexist.
#[must_use]
pub fn unify_collision_chars(name: &str) -> String {
    name.replace('.', "_")
}

/// Why a topic operation (CreateTopics, DeleteTopics, CreatePartitions,
/// IncrementalAlterConfigs) was refused.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum TopicError {
    /// Empty, too long, illegal characters, or colliding on `.`/`_`.
    #[error("invalid topic name {0:?}")]
    InvalidName(String),
    /// The same name twice in one request.
    #[error("topic {0:?} appears more than once in the request")]
    Duplicate(String),
    /// The name (or the requested topic id) is taken.
    #[error("topic {0:?} already exists")]
    AlreadyExists(String),
    /// No such topic.
    #[error("unknown topic {0:?}")]
    UnknownTopic(String),
    /// Partition count not positive, or not an increase.
    #[error("invalid partition count {requested} (current {current})")]
    InvalidPartitions {
        /// Requested count.
        requested: i32,
        /// Current count (0 for a new topic).
        current: i32,
    },
    /// Replication factor not in `1..=usable brokers`.
    #[error("replication factor {replication_factor} with {usable_brokers} usable brokers")]
    InvalidReplicationFactor {
        /// Requested factor.
        replication_factor: i16,
        /// Registered unfenced brokers.
        usable_brokers: usize,
    },
    /// A config value the controller interprets does not parse.
    #[error("invalid value {value:?} for config {key:?}")]
    InvalidConfig {
        /// Key.
        key: String,
        /// Value.
        value: String,
    },
    /// A malformed request (e.g. a zero topic id).
    #[error("invalid request: {0}")]
    InvalidRequest(&'static str),
    /// More than [`MAX_PARTITIONS_PER_BATCH`] partitions in one request (Kafka:
    /// `ReplicationControlManager.validateTotalNumberOfPartitions`, a
    /// `PolicyViolationException` "Excessively large number of partitions per request", there
    /// to fail before allocating them).
    #[error("excessively large number of partitions per request: {requested}")]
    TooManyPartitions {
        /// Partitions the request would create.
        requested: i64,
    },
}

/// Kafka's `ReplicationControlManager.MAX_PARTITIONS_PER_BATCH`: the most partitions one
/// CreateTopics request may create (and, here, one CreatePartitions request may add: Kafka
/// bounds that by the 10,000 records of `QuorumController.MAX_RECORDS_PER_USER_OP`).
pub const MAX_PARTITIONS_PER_BATCH: i64 = 10_000;

impl From<TopicError> for ErrorCode {
    fn from(e: TopicError) -> Self {
        match e {
            TopicError::InvalidName(_) => ErrorCode::InvalidTopicException,
            TopicError::Duplicate(_) | TopicError::InvalidRequest(_) => ErrorCode::InvalidRequest,
            TopicError::AlreadyExists(_) => ErrorCode::TopicAlreadyExists,
            TopicError::UnknownTopic(_) => ErrorCode::UnknownTopicOrPartition,
            TopicError::InvalidPartitions { .. } => ErrorCode::InvalidPartitions,
            TopicError::InvalidReplicationFactor { .. } => ErrorCode::InvalidReplicationFactor,
            TopicError::InvalidConfig { .. } => ErrorCode::InvalidConfig,
            TopicError::TooManyPartitions { .. } => ErrorCode::PolicyViolation,
        }
    }
}

/// Topic config keys the controller interprets, validated on CreateTopics and
/// IncrementalAlterConfigs (other keys are stored as given, as brokers interpret them).
///
/// # Errors
/// [`TopicError::InvalidConfig`] when the value does not parse.
pub fn validate_topic_config(key: &str, value: Option<&str>) -> Result<(), TopicError> {
    let Some(value) = value else { return Ok(()) };
    let ok = match key {
        UNCLEAN_LEADER_ELECTION_ENABLE => parse_bool(value).is_some(),
        MIN_INSYNC_REPLICAS => value.parse::<i32>().is_ok_and(|v| v >= 1),
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        Err(TopicError::InvalidConfig {
            key: key.to_string(),
            value: value.to_string(),
        })
    }
}

/// Topic config `unclean.leader.election.enable` (overrides the cluster default).
pub const UNCLEAN_LEADER_ELECTION_ENABLE: &str = "unclean.leader.election.enable";
/// Topic config `min.insync.replicas` (overrides the cluster default).
pub const MIN_INSYNC_REPLICAS: &str = "min.insync.replicas";

/// Kafka's `ConfigDef.Type.BOOLEAN` parsing: `true`/`false`, case-insensitive.
#[must_use]
pub fn parse_bool(v: &str) -> Option<bool> {
    if v.eq_ignore_ascii_case("true") {
        Some(true)
    } else if v.eq_ignore_ascii_case("false") {
        Some(false)
    } else {
        None
    }
}

/// Why an `AlterPartition` row was refused, in Kafka's validation order
/// (`ReplicationControlManager.validateAlterPartitionData`).
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum AlterPartitionError {
    /// The broker epoch is not the broker's current registration.
    #[error("stale broker epoch")]
    StaleBrokerEpoch,
    /// No such topic or partition.
    #[error("unknown topic or partition")]
    UnknownTopicOrPartition,
    /// The request carries epochs newer than the controller's: Kafka assumes this node is
    /// no longer the active controller.
    #[error("request epochs are newer than the controller's")]
    NotController,
    /// The leader epoch is older than the controller's.
    #[error("leader epoch {requested} is older than {current}")]
    FencedLeaderEpoch {
        /// Requested.
        requested: LeaderEpoch,
        /// Current.
        current: LeaderEpoch,
    },
    /// The requester is not the leader, or the proposed ISR is malformed (empty, duplicate
    /// or unassigned members, or without the leader).
    #[error("invalid request: {0}")]
    InvalidRequest(&'static str),
    /// The partition epoch is older than the controller's.
    #[error("partition epoch {requested} is older than {current}")]
    InvalidUpdateVersion {
        /// Requested.
        requested: i32,
        /// Current.
        current: i32,
    },
    /// A proposed ISR member is not registered or is fenced.
    #[error("ineligible replica {0}")]
    IneligibleReplica(BrokerId),
}

impl From<AlterPartitionError> for ErrorCode {
    fn from(e: AlterPartitionError) -> Self {
        match e {
            AlterPartitionError::StaleBrokerEpoch => ErrorCode::StaleBrokerEpoch,
            AlterPartitionError::UnknownTopicOrPartition => ErrorCode::UnknownTopicOrPartition,
            AlterPartitionError::NotController => ErrorCode::NotController,
            AlterPartitionError::FencedLeaderEpoch { .. } => ErrorCode::FencedLeaderEpoch,
            AlterPartitionError::InvalidRequest(_) => ErrorCode::InvalidRequest,
            AlterPartitionError::InvalidUpdateVersion { .. } => ErrorCode::InvalidUpdateVersion,
            AlterPartitionError::IneligibleReplica(_) => ErrorCode::IneligibleReplica,
        }
    }
}

/// Validates one `AlterPartition` row against the current registration, after the broker
/// epoch check, in Kafka's order. `eligible` says whether a broker may join the ISR
/// (registered and unfenced).
///
/// # Errors
/// The first failing check, as [`AlterPartitionError`].
pub fn validate_alter_partition(
    current: &PartitionRegistration,
    requester: BrokerId,
    leader_epoch: LeaderEpoch,
    partition_epoch: i32,
    new_isr: &[BrokerId],
    eligible: &dyn Fn(BrokerId) -> bool,
) -> Result<(), AlterPartitionError> {
    if leader_epoch > current.leader_epoch || partition_epoch > current.partition_epoch {
        return Err(AlterPartitionError::NotController);
    }
    if leader_epoch < current.leader_epoch {
        return Err(AlterPartitionError::FencedLeaderEpoch {
            requested: leader_epoch,
            current: current.leader_epoch,
        });
    }
    if current.leader != Some(requester) {
        return Err(AlterPartitionError::InvalidRequest(
            "requester is not the leader",
        ));
    }
    if partition_epoch < current.partition_epoch {
        return Err(AlterPartitionError::InvalidUpdateVersion {
            requested: partition_epoch,
            current: current.partition_epoch,
        });
    }
    let distinct: BTreeSet<_> = new_isr.iter().collect();
    if new_isr.is_empty()
        || distinct.len() != new_isr.len()
        || !new_isr.iter().all(|b| current.replicas.contains(b))
    {
        return Err(AlterPartitionError::InvalidRequest("invalid ISR"));
    }
    if !new_isr.contains(&requester) {
        return Err(AlterPartitionError::InvalidRequest(
            "ISR without the leader",
        ));
    }
    if let Some(&b) = new_isr.iter().find(|&&b| !eligible(b)) {
        return Err(AlterPartitionError::IneligibleReplica(b));
    }
    Ok(())
}
