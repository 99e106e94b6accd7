//! KIP-1279 mirror administration at the controller, seed design (spec kip1279.md A.1):
//! mirrors are `ConfigRecord`s of resource `MIRROR` (one per property); a topic's membership
//! and desired state is its `mirror.name` config (`<m>`, `<m>.paused`, `<m>.removed`).
//! Kafka's prototype: `ConfigurationControlManager` (create/delete mirror) and
//! `ReplicationControlManager` (start/stop/pause/resume, mirror topic creation).
//!
//! The rules are pure functions of the [`MetadataImage`] (`validate_*`, `decide_*`); the
//! `on_*` handlers of [`Controller`] apply their results as records. Decisions made here:
//! - `CreateMirror` requires `source.cluster` (the simulator's `bootstrap.servers`); other
//!   keys are stored as given. The first mirror creates `__mirror_state` (3 partitions,
//!   RF `min(3, usable brokers)`, compacted) before the mirror's configs, in one input;
//!   if that creation fails nothing is written.
//! - Per-topic requests apply every valid topic and report each one in request order; a
//!   name given twice is INVALID_REQUEST for every occurrence. The top-level error is the
//!   first topic error (or the request's own, e.g. UNKNOWN_CLUSTER_MIRROR).
//! - Stop is accepted from desired MIRRORING; from PAUSED it is MIRROR_TOPIC_ALREADY_PAUSED
//!   unless [`super::ControllerConfig::mirror_stop_from_paused`] (the "latest" design) is
//!   set: A.1 allows Stop from PREPARING/MIRRORING only, and the controller sees desired
//!   states, so a paused topic must be resumed first.
//! - Stop/Pause/Resume of a topic without `mirror.name` is UNKNOWN_CLUSTER_MIRROR (B §6.1's
//!   Stop rule, used for all three).
//! - Start of an existing topic with fewer partitions than the source adds the missing
//!   partitions (B §8.10: the destination follows the source's partition count); this is
//!   the only way to grow a mirror topic, as CreatePartitions is read-only while mirroring.
//! - Internal topics (`__*`) are never mirrored (B §5.2 `topics.exclude` default).
//! - Read-only at the controller: DeleteTopics and CreatePartitions on a topic whose desired
//!   state is not STOPPED are INVALID_MIRROR_STATE; `mirror.name` may not be changed through
//!   IncrementalAlterConfigs. The partition-level STOPPED condition is the brokers' check.
//! - B §6.6 optimistic locking: a request's `state_validation_offset` is compared with the
//!   offset of the last record that changed the topic's `mirror.name` or identity
//!   ([`MirrorStateChanges`]); a later change is INVALID_CLUSTER_MIRROR_STATES.

use std::collections::{BTreeMap, BTreeSet};

use thiserror::Error;

use super::quorum_controller::Controller;
use super::replication::{self, TopicError};
use crate::broker::MetadataImage;
use crate::broker::mirror::coordinator::SOURCE_CLUSTER_INDEX_CONFIG;
use crate::protocol::messages::{
    CreatableTopic, ListMirrorsFilter, MirrorListing, MirrorTopic, MirrorTopicResult,
};
use crate::protocol::metadata::{
    ConfigResource, ConfigResourceRef, DesiredMirrorState, MIRROR_NAME_CONFIG,
    MIRROR_PAUSED_SUFFIX, MIRROR_REMOVED_SUFFIX, MIRROR_SOURCE_CLUSTER_CONFIG,
    MIRROR_SOURCE_CLUSTER_ID_CONFIG, MIRROR_STATE_TOPIC, MIRROR_STATE_TOPIC_PARTITIONS,
    MetadataRecord, MirrorMembership,
};
use crate::protocol::{ErrorCode, Response};
use crate::types::TopicId;

/// Why a mirror admin operation (or one topic of it) was refused.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum MirrorAdminError {
    /// Not a valid topic name, or ends in `.paused` / `.removed`.
    #[error(
        "invalid mirror name {0:?}: topic-name rules apply and it may not end in `.paused` or `.removed`"
    )]
    InvalidMirrorName(String),
    /// `CreateMirror` for a name that exists.
    #[error("mirror {0:?} already exists")]
    MirrorAlreadyExists(String),
    /// No such mirror.
    #[error("mirror {0:?} not found")]
    UnknownMirror(String),
    /// A required mirror config is missing or empty.
    #[error("mirror config {0:?} is required")]
    MissingConfig(&'static str),
    /// `DeleteMirror` while some topic's desired state is not STOPPED.
    #[error("topic {topic:?} of mirror {mirror:?} is {desired:?}, not stopped")]
    MirrorNotEmpty {
        /// The mirror.
        mirror: String,
        /// A topic that is not stopped.
        topic: String,
        /// Its desired state.
        desired: DesiredMirrorState,
    },
    /// The same topic twice in one request.
    #[error("topic {0:?} appears more than once in the request")]
    DuplicateTopic(String),
    /// Internal topics are never mirrored.
    #[error("internal topic {0:?} cannot be mirrored")]
    InternalTopic(String),
    /// Stop/Pause/Resume of a topic that does not exist.
    #[error("unknown topic {0:?}")]
    UnknownTopic(String),
    /// Stop/Pause/Resume of a topic that has no `mirror.name`.
    #[error("topic {0:?} is not a mirror topic")]
    NotAMirrorTopic(String),
    /// Start with a source topic id other than the existing topic's.
    #[error(
        "topic id {requested} in the request doesn't match the existing topic id {existing} for topic {topic:?}"
    )]
    InconsistentTopicId {
        /// Topic.
        topic: String,
        /// The id in the request (the source's).
        requested: TopicId,
        /// The destination's id.
        existing: TopicId,
    },
    /// Start would create a topic with an id another topic has.
    #[error("topic id {topic_id} is already used by topic {existing:?}")]
    TopicIdInUse {
        /// The requested id.
        topic_id: TopicId,
        /// The topic that has it.
        existing: String,
    },
    /// Start of a topic that another mirror is mirroring or has paused.
    #[error("topic {topic:?} is already in mirror {other:?}")]
    TopicInOtherMirror {
        /// Topic.
        topic: String,
        /// The mirror it belongs to.
        other: String,
    },
    /// Stop/Pause/Resume through a mirror the topic does not belong to.
    #[error("topic {topic:?} is not in mirror {mirror:?}")]
    TopicNotInMirror {
        /// Topic.
        topic: String,
        /// The mirror named in the request.
        mirror: String,
    },
    /// Start of a paused topic.
    #[error("topic {0:?} is paused, not stopped")]
    TopicNotStopped(String),
    /// Pause of a topic being stopped.
    #[error("topic {0:?} is being stopped")]
    TopicBeingStopped(String),
    /// Stop of a paused topic (seed design).
    #[error("topic {0:?} is paused; resume it before stopping")]
    TopicAlreadyPaused(String),
    /// Resume of a topic that is not paused.
    #[error("topic {0:?} is not paused")]
    TopicNotPaused(String),
    /// DeleteTopics / CreatePartitions on a mirror topic that is not stopped.
    #[error("topic {0:?} is a mirror topic that is not stopped")]
    ReadOnlyMirrorTopic(String),
    /// B §6.6: the topic's mirror state changed after the broker validated it.
    #[error(
        "mirror state of topic {topic:?} changed at offset {changed_at}, after validation at {validated_at}"
    )]
    StaleStateValidation {
        /// Topic.
        topic: String,
        /// Offset of the last change.
        changed_at: i64,
        /// The request's `state_validation_offset`.
        validated_at: i64,
    },
    /// A Start/Stop pattern that is not a valid regular expression (B §6.1; the prototype's
    /// `validateRe2jPatterns`).
    #[error(transparent)]
    InvalidPattern(crate::mirror::filters::PatternError),
    /// An explicitly started topic matches the mirror's (merged) `topics.exclude`.
    #[error(
        "unable to start the topics to mirror because topic {topic:?} is excluded by exclude patterns: {exclude}"
    )]
    TopicExcluded {
        /// The topic.
        topic: String,
        /// The merged `topics.exclude`.
        exclude: String,
    },
    /// A filter config (`topics.include`, ...) that does not compile.
    #[error("invalid value for mirror config {key}: {error}")]
    InvalidFilterConfig {
        /// The key.
        key: &'static str,
        /// Why.
        error: crate::mirror::filters::PatternError,
    },
    /// The same config key twice in one IncrementalAlterConfigs.
    #[error("config {0:?} appears more than once in the request")]
    DuplicateConfig(String),
    /// Creating a topic (a destination topic or `__mirror_state`) failed.
    #[error(transparent)]
    Topic(#[from] TopicError),
}

impl From<&MirrorAdminError> for ErrorCode {
    fn from(e: &MirrorAdminError) -> Self {
        use MirrorAdminError as E;
        match e {
            E::InvalidMirrorName(_) => ErrorCode::InvalidClusterMirrorName,
            E::MirrorAlreadyExists(_) => ErrorCode::ClusterMirrorAlreadyExists,
            E::UnknownMirror(_) | E::NotAMirrorTopic(_) => ErrorCode::UnknownClusterMirror,
            E::MissingConfig(_) => ErrorCode::InvalidConfig,
            E::MirrorNotEmpty { .. } => ErrorCode::ClusterMirrorNotEmpty,
            E::DuplicateTopic(_) | E::InternalTopic(_) => ErrorCode::InvalidRequest,
            E::UnknownTopic(_) => ErrorCode::UnknownTopicOrPartition,
            E::InconsistentTopicId { .. } => ErrorCode::InconsistentTopicId,
            E::TopicIdInUse { .. } => ErrorCode::TopicAlreadyExists,
            E::TopicInOtherMirror { .. } => ErrorCode::TopicAlreadyInClusterMirror,
            E::TopicNotInMirror { .. } => ErrorCode::TopicNotInClusterMirror,
            E::TopicNotStopped(_) => ErrorCode::MirrorTopicNotStopped,
            E::TopicBeingStopped(_) => ErrorCode::MirrorTopicBeingStopped,
            E::TopicAlreadyPaused(_) => ErrorCode::MirrorTopicAlreadyPaused,
            E::TopicNotPaused(_) => ErrorCode::MirrorTopicNotPaused,
            E::ReadOnlyMirrorTopic(_) => ErrorCode::InvalidMirrorState,
            E::StaleStateValidation { .. } => ErrorCode::InvalidClusterMirrorStates,
            E::InvalidPattern(_) => ErrorCode::InvalidRegularExpression,
            E::TopicExcluded { .. } | E::DuplicateConfig(_) => ErrorCode::InvalidRequest,
            E::InvalidFilterConfig { .. } => ErrorCode::InvalidConfig,
            E::Topic(t) => t.clone().into(),
        }
    }
}

impl From<MirrorAdminError> for ErrorCode {
    fn from(e: MirrorAdminError) -> Self {
        (&e).into()
    }
}

/// The desired-state change a Stop, Pause or Resume asks for.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum MirrorTopicsOp {
    /// `StopMirrorTopics` → `<m>.removed`.
    Stop,
    /// `PauseMirrorTopics` → `<m>.paused`.
    Pause,
    /// `ResumeMirrorTopics` → `<m>`.
    Resume,
}

/// What `StartMirrorTopics` does with one topic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StartAction {
    /// The topic exists: set `mirror.name=<m>` unless `already_mirroring`, and add
    /// partitions up to `grow_to` if given.
    Existing {
        /// Desired MIRRORING in this mirror already: no config record.
        already_mirroring: bool,
        /// The source's partition count when it exceeds the destination's.
        grow_to: Option<i32>,
    },
    /// The topic is missing: create it with the source id and partition count and
    /// `mirror.name=<m>`.
    Create(CreatableTopic),
}

// ------------------------------------------------------------------ pure rules

/// Mirror names follow topic-name rules (B §2.1, AS3) and may not end in a `mirror.name`
/// suffix (A.1), so the suffix parse from the right is unambiguous.
///
/// # Errors
/// [`MirrorAdminError::InvalidMirrorName`].
pub fn validate_mirror_name(name: &str) -> Result<(), MirrorAdminError> {
    let suffixed = name.ends_with(MIRROR_PAUSED_SUFFIX) || name.ends_with(MIRROR_REMOVED_SUFFIX);
    if !replication::is_valid_topic_name(name) || suffixed {
        return Err(MirrorAdminError::InvalidMirrorName(name.to_string()));
    }
    Ok(())
}

/// True when `name` has at least one mirror config key (a deleted mirror has none).
#[must_use]
pub fn mirror_exists(image: &MetadataImage, name: &str) -> bool {
    image
        .configs_of(ConfigResourceRef::Mirror(name))
        .is_some_and(|c| !c.is_empty())
}

/// The topic's parsed `mirror.name`, if set.
#[must_use]
pub fn membership(image: &MetadataImage, topic: &str) -> Option<MirrorMembership> {
    MirrorMembership::parse(image.topic_config(topic, MIRROR_NAME_CONFIG)?)
}

/// Topics whose `mirror.name` names `mirror`, with their desired state, by name.
#[must_use]
pub fn mirror_topics(image: &MetadataImage, mirror: &str) -> Vec<(String, DesiredMirrorState)> {
    image
        .topic_ids
        .keys()
        .filter_map(|t| {
            let m = membership(image, t)?;
            (m.mirror_name == mirror).then(|| (t.clone(), m.desired))
        })
        .collect()
}

/// The mirrors `filter` selects, each with its source and the topics whose desired state
/// the filter lists (the answer to `ListMirrors`; prototype `ListClusterMirrors`). The
/// source cluster id is the learned `source.cluster.id`, else the source's id in this world
/// (`source.cluster.index`, the id DescribeMirrors lookups are matched against).
#[must_use]
pub fn list_mirrors(image: &MetadataImage, filter: &ListMirrorsFilter) -> Vec<MirrorListing> {
    image
        .configs
        .iter()
        .filter_map(|(r, c)| match r {
            ConfigResource::Mirror(name) if !c.is_empty() => {
                let source_cluster_id = c
                    .get(MIRROR_SOURCE_CLUSTER_ID_CONFIG)
                    .or_else(|| c.get(SOURCE_CLUSTER_INDEX_CONFIG))
                    .cloned();
                filter
                    .lists_mirror(name, source_cluster_id.as_deref())
                    .then(|| MirrorListing {
                        mirror_name: name.clone(),
                        source: c
                            .get(MIRROR_SOURCE_CLUSTER_CONFIG)
                            .cloned()
                            .unwrap_or_default(),
                        source_cluster_id,
                        topics: mirror_topics(image, name)
                            .into_iter()
                            .filter(|(_, d)| filter.lists_topic(*d))
                            .collect(),
                    })
            }
            _ => None,
        })
        .collect()
}

/// Kafka prototype: `ConfigurationControlManager` create-mirror validation.
///
/// # Errors
/// Invalid name, existing mirror, no `source.cluster`, or a filter list (`topics.include`,
/// ...) that does not compile (INVALID_CONFIG).
pub fn validate_create_mirror(
    image: &MetadataImage,
    name: &str,
    configs: &BTreeMap<String, String>,
) -> Result<(), MirrorAdminError> {
    validate_mirror_name(name)?;
    if mirror_exists(image, name) {
        return Err(MirrorAdminError::MirrorAlreadyExists(name.to_string()));
    }
    if configs
        .get(MIRROR_SOURCE_CLUSTER_CONFIG)
        .is_none_or(String::is_empty)
    {
        return Err(MirrorAdminError::MissingConfig(
            MIRROR_SOURCE_CLUSTER_CONFIG,
        ));
    }
    super::mirror_patterns::validate_filter_configs(
        configs.iter().map(|(k, v)| (k.as_str(), Some(v.as_str()))),
    )
}

/// The `__mirror_state` topic the first mirror creates: compacted, RF `min(3, usable)`.
#[must_use]
pub fn mirror_state_topic(usable_brokers: usize) -> CreatableTopic {
    let rf = i16::try_from(usable_brokers.clamp(1, 3)).expect("rf_at_most_3");
    let min_isr = if rf >= 3 { "2" } else { "1" };
    CreatableTopic {
        name: MIRROR_STATE_TOPIC.to_string(),
        num_partitions: MIRROR_STATE_TOPIC_PARTITIONS,
        replication_factor: rf,
        configs: [
            ("cleanup.policy".to_string(), "compact".to_string()),
            (
                replication::MIN_INSYNC_REPLICAS.to_string(),
                min_isr.to_string(),
            ),
        ]
        .into(),
        topic_id: None,
    }
}

/// B §6.1 StartMirrorTopics, controller side, for one topic of an existing mirror: start is
/// valid from UNKNOWN (no `mirror.name`) or STOPPED, in this mirror or (stopped) another.
///
/// # Errors
/// In B §6.1's order: internal topic, INCONSISTENT_TOPIC_ID, TOPIC_ALREADY_EXISTS (id in
/// use), TOPIC_ALREADY_IN_CLUSTER_MIRROR, MIRROR_TOPIC_NOT_STOPPED (paused here), and
/// INVALID_PARTITIONS when a missing topic has no source partition count.
pub fn decide_start(
    image: &MetadataImage,
    mirror: &str,
    t: &MirrorTopic,
) -> Result<StartAction, MirrorAdminError> {
    if t.name.starts_with("__") {
        return Err(MirrorAdminError::InternalTopic(t.name.clone()));
    }
    let Some(existing) = image.topic_id(&t.name) else {
        return decide_start_missing(image, mirror, t);
    };
    if t.topic_id != TopicId::ZERO && t.topic_id != existing {
        return Err(MirrorAdminError::InconsistentTopicId {
            topic: t.name.clone(),
            requested: t.topic_id,
            existing,
        });
    }
    let already_mirroring = match membership(image, &t.name) {
        None => false,
        Some(m) if m.desired == DesiredMirrorState::Stopped => false,
        Some(m) if m.mirror_name != mirror => {
            return Err(MirrorAdminError::TopicInOtherMirror {
                topic: t.name.clone(),
                other: m.mirror_name,
            });
        }
        Some(m) if m.desired == DesiredMirrorState::Paused => {
            return Err(MirrorAdminError::TopicNotStopped(t.name.clone()));
        }
        Some(_) => true,
    };
    let current = image
        .topics
        .get(&existing)
        .map_or(0, |topic| topic.partitions.len());
    let current = i32::try_from(current).unwrap_or(i32::MAX);
    Ok(StartAction::Existing {
        already_mirroring,
        grow_to: (t.num_partitions > current).then_some(t.num_partitions),
    })
}

fn decide_start_missing(
    image: &MetadataImage,
    mirror: &str,
    t: &MirrorTopic,
) -> Result<StartAction, MirrorAdminError> {
    if let Some(other) = image.topics.get(&t.topic_id) {
        return Err(MirrorAdminError::TopicIdInUse {
            topic_id: t.topic_id,
            existing: other.name.clone(),
        });
    }
    if t.num_partitions < 1 {
        return Err(TopicError::InvalidPartitions {
            requested: t.num_partitions,
            current: 0,
        }
        .into());
    }
    Ok(StartAction::Create(CreatableTopic {
        name: t.name.clone(),
        num_partitions: t.num_partitions,
        replication_factor: -1,
        configs: [(MIRROR_NAME_CONFIG.to_string(), mirror.to_string())].into(),
        // A pre-2.8 source has no id: the destination generates one (B §8.10).
        topic_id: (t.topic_id != TopicId::ZERO).then_some(t.topic_id),
    }))
}

/// B §6.1 Stop/Pause/Resume, controller side, for one topic: the new desired state, or
/// `None` when the topic already is where the operation leads (a no-op that succeeds).
///
/// # Errors
/// UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_CLUSTER_MIRROR (no `mirror.name`),
/// TOPIC_NOT_IN_CLUSTER_MIRROR, then the per-operation state errors.
pub fn decide_topic_op(
    image: &MetadataImage,
    mirror: &str,
    topic: &str,
    op: MirrorTopicsOp,
    stop_from_paused: bool,
) -> Result<Option<DesiredMirrorState>, MirrorAdminError> {
    use DesiredMirrorState::{Mirroring, Paused, Stopped};
    use MirrorAdminError as E;
    if image.topic_id(topic).is_none() {
        return Err(E::UnknownTopic(topic.to_string()));
    }
    let Some(m) = membership(image, topic) else {
        return Err(E::NotAMirrorTopic(topic.to_string()));
    };
    if m.mirror_name != mirror {
        return Err(E::TopicNotInMirror {
            topic: topic.to_string(),
            mirror: mirror.to_string(),
        });
    }
    let name = || topic.to_string();
    match (op, m.desired) {
        (MirrorTopicsOp::Stop, Mirroring) => Ok(Some(Stopped)),
        (MirrorTopicsOp::Stop, Paused) if stop_from_paused => Ok(Some(Stopped)),
        (MirrorTopicsOp::Stop, Paused) => Err(E::TopicAlreadyPaused(name())),
        (MirrorTopicsOp::Pause, Mirroring) => Ok(Some(Paused)),
        (MirrorTopicsOp::Pause, Stopped) => Err(E::TopicBeingStopped(name())),
        (MirrorTopicsOp::Resume, Paused) => Ok(Some(Mirroring)),
        (MirrorTopicsOp::Resume, Stopped) => Err(E::TopicNotPaused(name())),
        (MirrorTopicsOp::Stop, Stopped)
        | (MirrorTopicsOp::Pause, Paused)
        | (MirrorTopicsOp::Resume, Mirroring) => Ok(None),
    }
}

/// `DeleteMirror` may proceed only when every topic of the mirror is desired STOPPED.
/// Returns the topics to release; on refusal, one error per topic that is not stopped.
///
/// # Errors
/// UNKNOWN_CLUSTER_MIRROR (no per-topic errors) or CLUSTER_MIRROR_NOT_EMPTY.
pub fn decide_delete_mirror(
    image: &MetadataImage,
    mirror: &str,
) -> Result<Vec<String>, Vec<MirrorAdminError>> {
    if !mirror_exists(image, mirror) {
        return Err(vec![MirrorAdminError::UnknownMirror(mirror.to_string())]);
    }
    let topics = mirror_topics(image, mirror);
    let busy: Vec<MirrorAdminError> = topics
        .iter()
        .filter(|(_, d)| *d != DesiredMirrorState::Stopped)
        .map(|(t, d)| MirrorAdminError::MirrorNotEmpty {
            mirror: mirror.to_string(),
            topic: t.clone(),
            desired: *d,
        })
        .collect();
    if busy.is_empty() {
        Ok(topics.into_iter().map(|(t, _)| t).collect())
    } else {
        Err(busy)
    }
}

/// B §6.3 read-only rule at the controller: DeleteTopics and CreatePartitions need the
/// topic's desired state to be STOPPED (or the topic not to be a mirror topic).
///
/// # Errors
/// [`MirrorAdminError::ReadOnlyMirrorTopic`] (INVALID_MIRROR_STATE).
pub fn check_mirror_topic_mutable(
    image: &MetadataImage,
    topic: &str,
) -> Result<(), MirrorAdminError> {
    match membership(image, topic) {
        Some(m) if m.desired != DesiredMirrorState::Stopped => {
            Err(MirrorAdminError::ReadOnlyMirrorTopic(topic.to_string()))
        }
        _ => Ok(()),
    }
}

/// Names given more than once in a request (each occurrence is INVALID_REQUEST).
fn duplicates<'a>(names: impl Iterator<Item = &'a str>) -> BTreeSet<&'a str> {
    let mut seen = BTreeSet::new();
    names.filter(|n| !seen.insert(*n)).collect()
}

// ------------------------------------------------------------------ optimistic locking

/// B §6.6: per topic name, the offset of the last record that changed its mirror state
/// (`mirror.name` config, topic creation or deletion). Soft state derived from the log, so
/// it is rebuilt identically by replay after a restart.
#[derive(Clone, Debug, Default)]
pub struct MirrorStateChanges {
    last_change: BTreeMap<String, i64>,
}

impl MirrorStateChanges {
    /// Notes `record` at `offset`; `image` is the image *before* the record is applied.
    pub fn replay(&mut self, offset: i64, record: &MetadataRecord, image: &MetadataImage) {
        let topic = match record {
            MetadataRecord::Config {
                resource: ConfigResource::Topic(t),
                name,
                ..
            } if name == MIRROR_NAME_CONFIG => Some(t.clone()),
            MetadataRecord::Topic { name, .. } => Some(name.clone()),
            MetadataRecord::RemoveTopic { topic_id } => {
                image.topics.get(topic_id).map(|t| t.name.clone())
            }
            _ => None,
        };
        if let Some(t) = topic {
            self.last_change.insert(t, offset);
        }
    }

    /// The offset of the last mirror-state change of `topic`.
    #[must_use]
    pub fn last_change(&self, topic: &str) -> Option<i64> {
        self.last_change.get(topic).copied()
    }

    /// Refuses `topic` if it changed after `validated_at` (`None` skips the check).
    ///
    /// # Errors
    /// [`MirrorAdminError::StaleStateValidation`] (INVALID_CLUSTER_MIRROR_STATES).
    pub fn check(&self, topic: &str, validated_at: Option<i64>) -> Result<(), MirrorAdminError> {
        match (validated_at, self.last_change(topic)) {
            (Some(v), Some(c)) if c > v => Err(MirrorAdminError::StaleStateValidation {
                topic: topic.to_string(),
                changed_at: c,
                validated_at: v,
            }),
            _ => Ok(()),
        }
    }
}

// ------------------------------------------------------------------ responses

fn topic_result(name: &str, result: &Result<(), MirrorAdminError>) -> MirrorTopicResult {
    match result {
        Ok(()) => MirrorTopicResult {
            name: name.to_string(),
            error: ErrorCode::None,
            message: None,
        },
        Err(e) => MirrorTopicResult {
            name: name.to_string(),
            error: e.into(),
            message: Some(e.to_string()),
        },
    }
}

/// A `MirrorAdmin` response: the top-level error is `top`'s if given, else the first topic
/// error's.
fn admin_response(top: Option<&MirrorAdminError>, topics: Vec<MirrorTopicResult>) -> Response {
    let (error, message) = match top {
        Some(e) => (e.into(), Some(e.to_string())),
        None => topics
            .iter()
            .find(|t| !t.error.is_ok())
            .map_or((ErrorCode::None, None), |t| (t.error, t.message.clone())),
    };
    Response::MirrorAdmin {
        error,
        message,
        topics,
    }
}

/// The response a controller gives a mirror admin request it refuses wholesale.
#[must_use]
pub fn mirror_admin_error(error: ErrorCode, topics: &[&str]) -> Response {
    Response::MirrorAdmin {
        error,
        message: None,
        topics: topics
            .iter()
            .map(|t| MirrorTopicResult {
                name: (*t).to_string(),
                error,
                message: None,
            })
            .collect(),
    }
}

// ------------------------------------------------------------------ handlers

impl Controller {
    fn set_mirror_name(&mut self, topic: &str, value: Option<String>) {
        self.append(MetadataRecord::Config {
            resource: ConfigResource::Topic(topic.to_string()),
            name: MIRROR_NAME_CONFIG.to_string(),
            value,
        });
    }

    /// Sets `topic`'s desired state in `mirror` (its `mirror.name`).
    pub(super) fn set_desired(&mut self, mirror: &str, topic: &str, desired: DesiredMirrorState) {
        let m = MirrorMembership {
            mirror_name: mirror.to_string(),
            desired,
        };
        self.set_mirror_name(topic, Some(m.config_value()));
    }

    /// KIP-1279 `CreateMirror`: validate, create `__mirror_state` if it is missing, then one
    /// `ConfigRecord` per mirror config.
    pub(super) fn on_create_mirror(
        &mut self,
        name: &str,
        configs: &BTreeMap<String, String>,
    ) -> Response {
        let result = self.create_mirror(name, configs);
        admin_response(result.as_ref().err(), Vec::new())
    }

    fn create_mirror(
        &mut self,
        name: &str,
        configs: &BTreeMap<String, String>,
    ) -> Result<(), MirrorAdminError> {
        validate_create_mirror(self.image(), name, configs)?;
        if self.image().topic_id(MIRROR_STATE_TOPIC).is_none() {
            // Fails before appending anything, so a failed CreateMirror writes nothing.
            let t = mirror_state_topic(self.usable_brokers().len());
            self.create_topic(&t)?;
        }
        let resource = ConfigResource::Mirror(name.to_string());
        for (k, v) in configs {
            self.append(MetadataRecord::Config {
                resource: resource.clone(),
                name: k.clone(),
                value: Some(v.clone()),
            });
        }
        Ok(())
    }

    /// KIP-1279 `DeleteMirror`: refused unless every topic of the mirror is desired
    /// STOPPED; then clears the topics' `mirror.name` and deletes every mirror config key.
    pub(super) fn on_delete_mirror(&mut self, mirror: &str, validated_at: Option<i64>) -> Response {
        let topics = match decide_delete_mirror(self.image(), mirror) {
            Ok(topics) => topics,
            Err(errors) => {
                let top = errors.first().cloned();
                let results = errors
                    .iter()
                    .filter_map(|e| match e {
                        MirrorAdminError::MirrorNotEmpty { topic, .. } => {
                            Some(topic_result(topic, &Err(e.clone())))
                        }
                        _ => None,
                    })
                    .collect();
                return admin_response(top.as_ref(), results);
            }
        };
        let stale: Vec<MirrorTopicResult> = topics
            .iter()
            .map(|t| (t, self.mirror_changes().check(t, validated_at)))
            .filter(|(_, r)| r.is_err())
            .map(|(t, r)| topic_result(t, &r))
            .collect();
        if !stale.is_empty() {
            return admin_response(None, stale);
        }
        for t in &topics {
            self.set_mirror_name(t, None);
        }
        let resource = ConfigResource::Mirror(mirror.to_string());
        let keys: Vec<String> = self
            .image()
            .configs
            .get(&resource)
            .map(|c| c.keys().cloned().collect())
            .unwrap_or_default();
        for k in keys {
            self.append(MetadataRecord::Config {
                resource: resource.clone(),
                name: k,
                value: None,
            });
        }
        let results = topics.iter().map(|t| topic_result(t, &Ok(()))).collect();
        admin_response(None, results)
    }

    /// KIP-1279 `StartMirrorTopics`: the patterns are merged into the mirror's filter lists
    /// first (see `mirror_patterns`; a refusal there refuses the whole request), then topic
    /// by topic in request order.
    pub(super) fn on_start_mirror_topics(
        &mut self,
        mirror: &str,
        topics: &[MirrorTopic],
        (include_patterns, exclude_patterns): (&[String], &[String]),
        validated_at: Option<i64>,
    ) -> Response {
        let names: Vec<&str> = topics.iter().map(|t| t.name.as_str()).collect();
        if !mirror_exists(self.image(), mirror) {
            let e = MirrorAdminError::UnknownMirror(mirror.to_string());
            let results = names.iter().map(|n| topic_result(n, &Err(e.clone())));
            return admin_response(Some(&e), results.collect());
        }
        let plan = match super::mirror_patterns::decide_start_patterns(
            self.image(),
            mirror,
            &names,
            include_patterns,
            exclude_patterns,
        ) {
            Ok(plan) => plan,
            Err(e) => {
                let results = names.iter().map(|n| topic_result(n, &Err(e.clone())));
                return admin_response(Some(&e), results.collect());
            }
        };
        self.apply_pattern_plan(mirror, &plan);
        let dups = duplicates(names.iter().copied());
        let mut results = Vec::with_capacity(topics.len());
        for t in topics {
            let r = if dups.contains(t.name.as_str()) {
                Err(MirrorAdminError::DuplicateTopic(t.name.clone()))
            } else {
                self.start_mirror_topic(mirror, t, validated_at)
            };
            results.push(topic_result(&t.name, &r));
        }
        admin_response(None, results)
    }

    fn start_mirror_topic(
        &mut self,
        mirror: &str,
        t: &MirrorTopic,
        validated_at: Option<i64>,
    ) -> Result<(), MirrorAdminError> {
        self.mirror_changes().check(&t.name, validated_at)?;
        match decide_start(self.image(), mirror, t)? {
            StartAction::Create(ct) => {
                self.create_topic(&ct)?;
            }
            StartAction::Existing {
                already_mirroring,
                grow_to,
            } => {
                if let Some(count) = grow_to {
                    self.create_partitions(&t.name, count)?;
                }
                if !already_mirroring {
                    self.set_mirror_name(&t.name, Some(mirror.to_string()));
                }
            }
        }
        Ok(())
    }

    /// KIP-1279 `StopMirrorTopics` / `PauseMirrorTopics` / `ResumeMirrorTopics`, topic by
    /// topic in request order. A Stop's `patterns` are merged into the mirror's filter lists
    /// first, and the mirror's topics they match are stopped after the listed ones (see
    /// `mirror_patterns`).
    pub(super) fn on_mirror_topics_op(
        &mut self,
        mirror: &str,
        (topics, patterns): (&[String], &[String]),
        op: MirrorTopicsOp,
        validated_at: Option<i64>,
    ) -> Response {
        if !mirror_exists(self.image(), mirror) {
            let e = MirrorAdminError::UnknownMirror(mirror.to_string());
            let results = topics.iter().map(|n| topic_result(n, &Err(e.clone())));
            return admin_response(Some(&e), results.collect());
        }
        let plan =
            match super::mirror_patterns::decide_stop_patterns(self.image(), mirror, patterns) {
                Ok(plan) => plan,
                Err(e) => {
                    let results = topics.iter().map(|n| topic_result(n, &Err(e.clone())));
                    return admin_response(Some(&e), results.collect());
                }
            };
        self.apply_pattern_plan(mirror, &plan);
        let topics: Vec<String> = topics
            .iter()
            .cloned()
            .chain(plan.matched.into_iter().filter(|t| !topics.contains(t)))
            .collect();
        let dups = duplicates(topics.iter().map(String::as_str));
        let stop_from_paused = self.config().mirror_stop_from_paused;
        let mut results = Vec::with_capacity(topics.len());
        for t in &topics {
            let r = if dups.contains(t.as_str()) {
                Err(MirrorAdminError::DuplicateTopic(t.clone()))
            } else {
                self.mirror_topic_op(mirror, t, op, validated_at, stop_from_paused)
            };
            results.push(topic_result(t, &r));
        }
        admin_response(None, results)
    }

    fn mirror_topic_op(
        &mut self,
        mirror: &str,
        topic: &str,
        op: MirrorTopicsOp,
        validated_at: Option<i64>,
        stop_from_paused: bool,
    ) -> Result<(), MirrorAdminError> {
        self.mirror_changes().check(topic, validated_at)?;
        if let Some(desired) = decide_topic_op(self.image(), mirror, topic, op, stop_from_paused)? {
            self.set_desired(mirror, topic, desired);
        }
        Ok(())
    }

    /// KIP-1279 `ListMirrors`, from the image.
    pub(super) fn on_list_mirrors(&self, filter: &ListMirrorsFilter) -> Response {
        Response::ListMirrors {
            error: ErrorCode::None,
            mirrors: list_mirrors(self.image(), filter),
        }
    }
}
