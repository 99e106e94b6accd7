//! KIP-1279 mirror filters at the controller (kip1279.md B §6.1 Start/StopMirrorTopics rows,
//! B §5.2, "IncrementalAlterConfigs / DescribeConfigs with resource type CLUSTER_MIRROR";
//! prototype `ConfigurationControlManager.startMirrorTopics` / `stopMirrorTopics` /
//! `updatePatternsAndStopExcluded` / `validateTopicsInPatterns` / `stopExcludedTopics`).
//!
//! - StartMirrorTopics' `IncludePatterns` / `ExcludePatterns` and StopMirrorTopics'
//!   `Patterns` are merged into the mirror's `topics.include` / `topics.exclude`
//!   ([`crate::mirror::filters::merge_start`] / [`merge_stop`]); only keys whose list
//!   changed are written, so a request without patterns writes no config record.
//! - An invalid pattern refuses the whole request with INVALID_REGULAR_EXPRESSION (the
//!   prototype's `MirrorUtils.validateRe2jPatterns`) and writes nothing; an explicitly
//!   started topic that the merged exclude list matches refuses the whole request with
//!   INVALID_REQUEST ("some topics are excluded by exclude patterns") and writes nothing.
//! - After the merge, the mirror's topics that the merged exclude list matches are stopped
//!   (`stopExcludedTopics`), and a Stop's patterns also stop the mirror's topics they match
//!   (the newer prototype's broker-side `resolvePatternsFromDst`; they are answered with
//!   the request's topics). Both follow the Stop rule of [`super::mirror_admin`]: a paused
//!   topic is left paused unless the design stops from PAUSED.
//! - IncrementalAlterConfigs on a mirror: UNKNOWN_CLUSTER_MIRROR for a mirror that does not
//!   exist (it would otherwise create configs without `__mirror_state`); INVALID_CONFIG for
//!   a filter list that does not compile or for deleting a required key. CreateMirror
//!   validates its filter lists the same way.
//!
//! [`merge_stop`]: crate::mirror::filters::merge_stop

use std::collections::BTreeMap;

use super::mirror_admin::{MirrorAdminError, MirrorTopicsOp, decide_topic_op, membership};
use super::quorum_controller::Controller;
use crate::broker::MetadataImage;
use crate::broker::mirror::coordinator::{BOOTSTRAP_SERVERS_CONFIG, SOURCE_CLUSTER_INDEX_CONFIG};
use crate::mirror::filters::{
    PATTERN_CONFIGS, PatternList, TOPICS_EXCLUDE_CONFIG, TOPICS_INCLUDE_CONFIG, TopicLists,
    join_list, merge_start, merge_stop, validate_patterns,
};
use crate::protocol::metadata::{
    ConfigResource, ConfigResourceRef, DesiredMirrorState, MIRROR_SOURCE_CLUSTER_CONFIG,
    MetadataRecord,
};
use crate::protocol::{ErrorCode, Response};

/// Mirror config keys a mirror cannot do without (deleting one is INVALID_CONFIG): the
/// source (`source.cluster`, required by CreateMirror) and how the brokers reach it.
pub const REQUIRED_MIRROR_CONFIGS: [&str; 3] = [
    MIRROR_SOURCE_CLUSTER_CONFIG,
    SOURCE_CLUSTER_INDEX_CONFIG,
    BOOTSTRAP_SERVERS_CONFIG,
];

/// What a Start or Stop with patterns writes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PatternPlan {
    /// `(key, value)` config records for the mirror (only the lists that changed).
    pub writes: Vec<(String, String)>,
    /// The mirror's topics to stop because the merged exclude list matches them, sorted.
    pub excluded: Vec<String>,
    /// A Stop's patterns resolved to the mirror's topics not desired STOPPED, sorted.
    pub matched: Vec<String>,
}

fn mirror_configs<'a>(
    image: &'a MetadataImage,
    mirror: &str,
) -> Option<&'a BTreeMap<String, String>> {
    image.configs_of(ConfigResourceRef::Mirror(mirror))
}

/// The config writes that take the mirror from `current` to `merged`.
fn list_writes(current: &TopicLists, merged: &TopicLists) -> Vec<(String, String)> {
    let mut writes = Vec::new();
    if merged.include != current.include {
        writes.push((
            TOPICS_INCLUDE_CONFIG.to_string(),
            join_list(&merged.include),
        ));
    }
    if merged.exclude != current.exclude {
        writes.push((
            TOPICS_EXCLUDE_CONFIG.to_string(),
            join_list(&merged.exclude),
        ));
    }
    writes
}

/// The mirror's topics whose desired state is not STOPPED and that `list` matches, sorted.
fn active_topics_matching(image: &MetadataImage, mirror: &str, list: &PatternList) -> Vec<String> {
    if list.is_empty() {
        return Vec::new();
    }
    super::mirror_admin::mirror_topics(image, mirror)
        .into_iter()
        .filter(|(t, d)| *d != DesiredMirrorState::Stopped && list.matches(t))
        .map(|(t, _)| t)
        .collect()
}

/// B §6.1 StartMirrorTopics' pattern step, for an existing mirror.
///
/// # Errors
/// INVALID_REGULAR_EXPRESSION for a pattern that does not compile; INVALID_REQUEST when the
/// merged `topics.exclude` matches one of the explicitly started (non-internal) topics.
pub fn decide_start_patterns(
    image: &MetadataImage,
    mirror: &str,
    topic_names: &[&str],
    include_patterns: &[String],
    exclude_patterns: &[String],
) -> Result<PatternPlan, MirrorAdminError> {
    validate_patterns(include_patterns).map_err(MirrorAdminError::InvalidPattern)?;
    validate_patterns(exclude_patterns).map_err(MirrorAdminError::InvalidPattern)?;
    let current = TopicLists::of(mirror_configs(image, mirror));
    let merged = merge_start(&current, topic_names, include_patterns, exclude_patterns);
    let exclude = compiled(&merged.exclude)?;
    // Internal topics get their own per-topic error (never mirrored, A.1).
    if let Some(t) = topic_names
        .iter()
        .find(|t| !t.starts_with("__") && exclude.matches(t))
    {
        return Err(MirrorAdminError::TopicExcluded {
            topic: (*t).to_string(),
            exclude: join_list(&merged.exclude),
        });
    }
    Ok(PatternPlan {
        writes: list_writes(&current, &merged),
        excluded: excluded_unless_written(image, mirror, &current, &merged, &exclude),
        matched: Vec::new(),
    })
}

/// B §6.1 StopMirrorTopics' pattern step, for an existing mirror.
///
/// # Errors
/// INVALID_REGULAR_EXPRESSION for a pattern that does not compile.
pub fn decide_stop_patterns(
    image: &MetadataImage,
    mirror: &str,
    patterns: &[String],
) -> Result<PatternPlan, MirrorAdminError> {
    validate_patterns(patterns).map_err(MirrorAdminError::InvalidPattern)?;
    if patterns.iter().all(|p| p.trim().is_empty()) {
        return Ok(PatternPlan::default());
    }
    let current = TopicLists::of(mirror_configs(image, mirror));
    let merged = merge_stop(&current, patterns);
    let exclude = compiled(&merged.exclude)?;
    let matched = active_topics_matching(image, mirror, &compiled(patterns)?);
    Ok(PatternPlan {
        writes: list_writes(&current, &merged),
        excluded: excluded_unless_written(image, mirror, &current, &merged, &exclude),
        matched,
    })
}

/// `stopExcludedTopics` runs only when the lists are written (the prototype writes them on
/// every Start; here a request that changes nothing stops nothing, so a plain Start keeps the
/// seed design's records exactly).
fn excluded_unless_written(
    image: &MetadataImage,
    mirror: &str,
    current: &TopicLists,
    merged: &TopicLists,
    exclude: &PatternList,
) -> Vec<String> {
    if current == merged {
        return Vec::new();
    }
    active_topics_matching(image, mirror, exclude)
}

fn compiled(entries: &[String]) -> Result<PatternList, MirrorAdminError> {
    PatternList::compile(entries).map_err(MirrorAdminError::InvalidPattern)
}

/// The filter lists among `configs` compile (CreateMirror, IncrementalAlterConfigs).
///
/// # Errors
/// [`MirrorAdminError::InvalidFilterConfig`] (INVALID_CONFIG) naming the key.
pub fn validate_filter_configs<'a>(
    configs: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
) -> Result<(), MirrorAdminError> {
    for (key, value) in configs {
        let (Some(key), Some(value)) = (PATTERN_CONFIGS.iter().find(|k| **k == key), value) else {
            continue;
        };
        PatternList::parse(value)
            .map_err(|error| MirrorAdminError::InvalidFilterConfig { key, error })?;
    }
    Ok(())
}

/// IncrementalAlterConfigs on mirror `mirror`: the checks before any record is written.
///
/// # Errors
/// UNKNOWN_CLUSTER_MIRROR, INVALID_REQUEST (a key given twice), INVALID_CONFIG (a required key
/// deleted or emptied, a filter list that does not compile).
pub fn validate_alter_mirror_configs(
    image: &MetadataImage,
    mirror: &str,
    ops: &[(String, Option<String>)],
) -> Result<(), MirrorAdminError> {
    if !super::mirror_admin::mirror_exists(image, mirror) {
        return Err(MirrorAdminError::UnknownMirror(mirror.to_string()));
    }
    let mut seen = std::collections::BTreeSet::new();
    if let Some((k, _)) = ops.iter().find(|(k, _)| !seen.insert(k.as_str())) {
        return Err(MirrorAdminError::DuplicateConfig(k.clone()));
    }
    if let Some(k) = REQUIRED_MIRROR_CONFIGS.iter().find(|k| {
        ops.iter()
            .any(|(o, v)| o == **k && v.as_deref().is_none_or(|v| v.trim().is_empty()))
    }) {
        return Err(MirrorAdminError::MissingConfig(k));
    }
    validate_filter_configs(ops.iter().map(|(k, v)| (k.as_str(), v.as_deref())))
}

impl Controller {
    /// Appends a plan's config records, then stops the topics it names (each through the
    /// Stop rule; refusals are left alone: a paused topic stays paused).
    pub(super) fn apply_pattern_plan(&mut self, mirror: &str, plan: &PatternPlan) {
        let resource = ConfigResource::Mirror(mirror.to_string());
        for (k, v) in &plan.writes {
            self.append(MetadataRecord::Config {
                resource: resource.clone(),
                name: k.clone(),
                value: Some(v.clone()),
            });
        }
        let stop_from_paused = self.config().mirror_stop_from_paused;
        for t in &plan.excluded {
            if membership(self.image(), t).is_none() {
                continue;
            }
            if let Ok(Some(desired)) = decide_topic_op(
                self.image(),
                mirror,
                t,
                MirrorTopicsOp::Stop,
                stop_from_paused,
            ) {
                self.set_desired(mirror, t, desired);
            }
        }
    }

    /// KIP-1279 IncrementalAlterConfigs of a mirror (resource `MIRROR`, later
    /// `CLUSTER_MIRROR`): validated, then one `ConfigRecord` per changed key. The brokers
    /// react to the records (filters, discovery, reconnect).
    pub(super) fn on_alter_mirror_configs(
        &mut self,
        mirror: &str,
        ops: &[(String, Option<String>)],
    ) -> Response {
        let error = match validate_alter_mirror_configs(self.image(), mirror, ops) {
            Ok(()) => {
                self.append_config_changes(&ConfigResource::Mirror(mirror.to_string()), ops);
                ErrorCode::None
            }
            Err(e) => (&e).into(),
        };
        Response::TopicErrors {
            results: vec![(mirror.to_string(), error, crate::types::TopicId::ZERO)],
        }
    }
}
