//! KIP-1279 mirror filters (kip1279.md B §5.2; prototype `ClusterMirrorConfig` and
//! `MirrorUtils.compilePatternList`): `topics.include`, `topics.exclude`, `groups.include`
//! and `groups.exclude` are comma-separated lists of regular expressions. A name passes a
//! list when it matches one of its expressions **as a whole**: Kafka joins the trimmed,
//! non-empty entries into `^(p1|p2|…)$`, compiles it with RE2J and calls `matches()`. Here
//! the `regex` crate (the same RE2 family: no backreferences, no look-around) compiles
//! `^(?:p1|p2|…)$`. An empty list compiles to nothing (Kafka's `null` pattern).
//!
//! What each list means (defaults from `ClusterMirrorConfig`):
//! - `topics.include` (default ""): the coordinator's pattern discovery starts every source
//!   topic that matches (and is not excluded); empty: only explicitly started topics.
//! - `topics.exclude` (default `__.*`): never discovered, and a mirror topic that comes to
//!   match it is stopped (`enforceExcludePatterns`); exclude wins over include.
//! - `groups.include` (default `.*`) / `groups.exclude` (default ""): which source groups the
//!   offset sync copies. An empty include lets every group through (the prototype's
//!   `groupsIncludePattern == null ||` test); exclude wins.
//!
//! The merge of StartMirrorTopics' `IncludePatterns` / `ExcludePatterns` and
//! StopMirrorTopics' `Patterns` into these lists (prototype
//! `ConfigurationControlManager.updatePatternsAndStopExcluded`) is [`merge_start`] /
//! [`merge_stop`]; the controller applies it (`controller::mirror_patterns`).
//!
//! A change to any mirror config key outside [`FILTER_CONFIGS`] makes the brokers reconnect
//! to the source (B ConfigRecord row; the prototype's `NON_CONNECTION_CONFIGS`).

use std::collections::BTreeMap;
use std::fmt;

use regex::Regex;
use thiserror::Error;

/// Mirror config: regexes of source topics the coordinator discovers and starts.
pub const TOPICS_INCLUDE_CONFIG: &str = "topics.include";
/// Mirror config: regexes of topics never mirrored (wins over include).
pub const TOPICS_EXCLUDE_CONFIG: &str = "topics.exclude";
/// Mirror config: regexes of source groups whose offsets are synced.
pub const GROUPS_INCLUDE_CONFIG: &str = "groups.include";
/// Mirror config: regexes of source groups never synced (wins over include).
pub const GROUPS_EXCLUDE_CONFIG: &str = "groups.exclude";
/// Mirror config: ACL include rules (parsed by `broker::mirror::acl_sync`).
pub const ACLS_INCLUDE_CONFIG: &str = "acls.include";
/// Default of [`TOPICS_INCLUDE_CONFIG`]: only explicitly started topics.
pub const DEFAULT_TOPICS_INCLUDE: &str = "";
/// Default of [`TOPICS_EXCLUDE_CONFIG`]: internal topics.
pub const DEFAULT_TOPICS_EXCLUDE: &str = "__.*";
/// Default of [`GROUPS_INCLUDE_CONFIG`]: every group.
pub const DEFAULT_GROUPS_INCLUDE: &str = ".*";
/// Default of [`GROUPS_EXCLUDE_CONFIG`]: none.
pub const DEFAULT_GROUPS_EXCLUDE: &str = "";

/// The mirror config keys whose change does not make brokers reconnect to the source: the
/// prototype's `MirrorMetadataManager.NON_CONNECTION_CONFIGS`, verbatim (note that
/// `topic.properties.exclude` is not in it, so changing it reconnects).
pub const FILTER_CONFIGS: [&str; 5] = [
    TOPICS_INCLUDE_CONFIG,
    TOPICS_EXCLUDE_CONFIG,
    GROUPS_INCLUDE_CONFIG,
    GROUPS_EXCLUDE_CONFIG,
    ACLS_INCLUDE_CONFIG,
];

/// True when changing `key` leaves the brokers' source connections alone.
#[must_use]
pub fn is_filter_config(key: &str) -> bool {
    FILTER_CONFIGS.contains(&key)
}

/// The regex list keys, validated when a mirror's configs are written.
pub const PATTERN_CONFIGS: [&str; 4] = [
    TOPICS_INCLUDE_CONFIG,
    TOPICS_EXCLUDE_CONFIG,
    GROUPS_INCLUDE_CONFIG,
    GROUPS_EXCLUDE_CONFIG,
];

/// A pattern that is not a valid regular expression.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("invalid pattern {pattern:?}: {reason}")]
pub struct PatternError {
    /// The pattern as written (trimmed).
    pub pattern: String,
    /// The parser's complaint, on one line.
    pub reason: String,
}

/// Splits a Kafka LIST value: comma-separated, entries trimmed, empty entries dropped
/// (`ConfigDef.Type.LIST` parsing followed by `compilePatternList`'s filter).
#[must_use]
pub fn parse_list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}

/// The value written back for a list (`String.join(",", …)`).
#[must_use]
pub fn join_list(entries: &[String]) -> String {
    entries.join(",")
}

/// Checks every entry on its own (prototype `MirrorUtils.validateRe2jPatterns`: the first
/// invalid one is reported).
///
/// # Errors
/// [`PatternError`] for the first entry that does not compile.
pub fn validate_patterns(patterns: &[String]) -> Result<(), PatternError> {
    for p in patterns.iter().map(|p| p.trim()).filter(|p| !p.is_empty()) {
        Regex::new(&format!("^(?:{p})$")).map_err(|e| PatternError {
            pattern: p.to_string(),
            reason: one_line(&e.to_string()),
        })?;
    }
    Ok(())
}

fn one_line(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A compiled list: matches a name that one of its entries matches as a whole.
#[derive(Clone)]
pub struct PatternList {
    entries: Vec<String>,
    regex: Option<Regex>,
}

impl fmt::Debug for PatternList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("PatternList").field(&self.entries).finish()
    }
}

impl PartialEq for PatternList {
    fn eq(&self, other: &Self) -> bool {
        self.entries == other.entries
    }
}

impl PatternList {
    /// Compiles `entries` (trimmed, empty ones dropped) into `^(?:e1|e2|…)$`.
    ///
    /// # Errors
    /// [`PatternError`] naming the first entry that does not compile on its own (so a list
    /// whose entries only compile when joined, like `a(` and `)b`, is refused too).
    pub fn compile(entries: &[String]) -> Result<Self, PatternError> {
        let entries: Vec<String> = entries
            .iter()
            .map(|e| e.trim())
            .filter(|e| !e.is_empty())
            .map(str::to_string)
            .collect();
        validate_patterns(&entries)?;
        if entries.is_empty() {
            return Ok(Self {
                entries,
                regex: None,
            });
        }
        let joined = format!("^(?:{})$", entries.join("|"));
        let regex = Regex::new(&joined).map_err(|e| PatternError {
            pattern: entries.join(","),
            reason: one_line(&e.to_string()),
        })?;
        Ok(Self {
            entries,
            regex: Some(regex),
        })
    }

    /// Parses and compiles a config value.
    ///
    /// # Errors
    /// As [`PatternList::compile`].
    pub fn parse(value: &str) -> Result<Self, PatternError> {
        Self::compile(&parse_list(value))
    }

    /// True for a list with no entry (Kafka's `null` pattern).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.regex.is_none()
    }

    /// True when one entry matches the whole of `name` (false for an empty list).
    #[must_use]
    pub fn matches(&self, name: &str) -> bool {
        self.regex.as_ref().is_some_and(|r| r.is_match(name))
    }

    /// The entries, trimmed, in order.
    #[must_use]
    pub fn entries(&self) -> &[String] {
        &self.entries
    }
}

/// The four filter lists of a mirror, with Kafka's defaults for keys not set.
#[derive(Clone, Debug, PartialEq)]
pub struct MirrorFilters {
    /// `topics.include`.
    pub topics_include: PatternList,
    /// `topics.exclude`.
    pub topics_exclude: PatternList,
    /// `groups.include`.
    pub groups_include: PatternList,
    /// `groups.exclude`.
    pub groups_exclude: PatternList,
}

/// A filter config value that does not compile.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("mirror config {key}: {error}")]
pub struct FilterConfigError {
    /// The config key.
    pub key: &'static str,
    /// Why.
    pub error: PatternError,
}

impl MirrorFilters {
    /// The filters of a mirror whose configs are `configs` (`None`: all defaults).
    ///
    /// # Errors
    /// [`FilterConfigError`] for the first filter key whose value does not compile.
    pub fn from_configs(
        configs: Option<&BTreeMap<String, String>>,
    ) -> Result<Self, FilterConfigError> {
        let list = |key: &'static str, default: &str| {
            let value = configs
                .and_then(|c| c.get(key))
                .map_or(default, String::as_str);
            PatternList::parse(value).map_err(|error| FilterConfigError { key, error })
        };
        Ok(Self {
            topics_include: list(TOPICS_INCLUDE_CONFIG, DEFAULT_TOPICS_INCLUDE)?,
            topics_exclude: list(TOPICS_EXCLUDE_CONFIG, DEFAULT_TOPICS_EXCLUDE)?,
            groups_include: list(GROUPS_INCLUDE_CONFIG, DEFAULT_GROUPS_INCLUDE)?,
            groups_exclude: list(GROUPS_EXCLUDE_CONFIG, DEFAULT_GROUPS_EXCLUDE)?,
        })
    }

    /// True when pattern discovery starts source topic `topic` (prototype
    /// `discoverTopicsByPattern`: matches include and not exclude). Internal topics never
    /// qualify, whatever the lists say (A.1: internal topics are never mirrored).
    #[must_use]
    pub fn discovers(&self, topic: &str) -> bool {
        !topic.starts_with("__")
            && self.topics_include.matches(topic)
            && !self.topics_exclude.matches(topic)
    }

    /// True when `topic` matches `topics.exclude`.
    #[must_use]
    pub fn excludes(&self, topic: &str) -> bool {
        self.topics_exclude.matches(topic)
    }

    /// True when the offset sync copies source group `group` (prototype
    /// `listSourceGroupIds`): an empty include lets every group through; exclude wins.
    #[must_use]
    pub fn syncs_group(&self, group: &str) -> bool {
        (self.groups_include.is_empty() || self.groups_include.matches(group))
            && !self.groups_exclude.matches(group)
    }
}

/// Pattern discovery: the source topics to start, sorted, skipping those already
/// `configured` in this mirror (in any desired state, so a topic stopped explicitly is not
/// started again: the prototype's `getConfiguredTopics(mirror, true)`).
#[must_use]
pub fn discovery_candidates<'a>(
    source_topics: impl IntoIterator<Item = &'a str>,
    filters: &MirrorFilters,
    configured: &dyn Fn(&str) -> bool,
) -> Vec<String> {
    let mut v: Vec<String> = source_topics
        .into_iter()
        .filter(|t| filters.discovers(t) && !configured(t))
        .map(str::to_string)
        .collect();
    v.sort();
    v.dedup();
    v
}

/// `enforceExcludePatterns`: the active topics of the mirror that `topics.exclude` now
/// matches, sorted.
#[must_use]
pub fn excluded_topics<'a>(
    active_topics: impl IntoIterator<Item = &'a str>,
    filters: &MirrorFilters,
) -> Vec<String> {
    let mut v: Vec<String> = active_topics
        .into_iter()
        .filter(|t| filters.excludes(t))
        .map(str::to_string)
        .collect();
    v.sort();
    v.dedup();
    v
}

/// `topics.include` and `topics.exclude` as lists, before or after a merge.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TopicLists {
    /// `topics.include` entries, in order, without duplicates.
    pub include: Vec<String>,
    /// `topics.exclude` entries, in order, without duplicates.
    pub exclude: Vec<String>,
}

impl TopicLists {
    /// The lists a mirror has now: the stored values, or the defaults for keys not set (so a
    /// merge keeps `__.*` excluded; the prototype starts from the stored value, "" when
    /// unset, and drops the default the first time it writes the key).
    #[must_use]
    pub fn of(configs: Option<&BTreeMap<String, String>>) -> Self {
        let get = |key: &str, default: &str| {
            parse_list(
                configs
                    .and_then(|c| c.get(key))
                    .map_or(default, String::as_str),
            )
        };
        let mut lists = Self::default();
        for e in get(TOPICS_INCLUDE_CONFIG, DEFAULT_TOPICS_INCLUDE) {
            add(&mut lists.include, &e);
        }
        for e in get(TOPICS_EXCLUDE_CONFIG, DEFAULT_TOPICS_EXCLUDE) {
            add(&mut lists.exclude, &e);
        }
        lists
    }
}

fn add(list: &mut Vec<String>, entry: &str) {
    if !list.iter().any(|e| e == entry) {
        list.push(entry.to_string());
    }
}

fn remove(list: &mut Vec<String>, entry: &str) -> bool {
    let before = list.len();
    list.retain(|e| e != entry);
    list.len() != before
}

/// StartMirrorTopics' merge (prototype `startMirrorTopics` → `updatePatternsAndStopExcluded`):
/// each explicitly started topic name is taken out of the exclude list (a failback of a
/// topic stopped by pattern must not be stopped again by `enforceExcludePatterns`); each
/// include pattern is added to include and taken out of exclude; each exclude pattern is
/// added to exclude and taken out of include. Entries are literal strings: only an equal
/// entry is removed.
///
/// Decision (A.1 "explicit topics"; B §5.2 `topics.include` "" = only explicit topics): the
/// prototype also appends every explicit topic name to `topics.include`, which is why its
/// "topic must match include" check can never fail for an explicit topic (a topic name
/// always matches itself as a regex). Here `topics.include` keeps what the operator and the
/// patterns put there, an explicit start is accepted whatever it says, and a mirror whose
/// topics are all explicit never has the key written.
#[must_use]
pub fn merge_start(
    current: &TopicLists,
    topic_names: &[&str],
    include_patterns: &[String],
    exclude_patterns: &[String],
) -> TopicLists {
    let mut m = current.clone();
    for t in topic_names {
        remove(&mut m.exclude, t);
    }
    for p in include_patterns
        .iter()
        .map(|p| p.trim())
        .filter(|p| !p.is_empty())
    {
        add(&mut m.include, p);
        remove(&mut m.exclude, p);
    }
    for p in exclude_patterns
        .iter()
        .map(|p| p.trim())
        .filter(|p| !p.is_empty())
    {
        add(&mut m.exclude, p);
        remove(&mut m.include, p);
    }
    m
}

/// StopMirrorTopics' merge (prototype `stopMirrorTopics`): a pattern that is an include
/// entry is removed from include, any other is added to exclude, so the topics it names are
/// not discovered again.
#[must_use]
pub fn merge_stop(current: &TopicLists, patterns: &[String]) -> TopicLists {
    let mut m = current.clone();
    for p in patterns.iter().map(|p| p.trim()).filter(|p| !p.is_empty()) {
        if !remove(&mut m.include, p) {
            add(&mut m.exclude, p);
        }
    }
    m
}

#[cfg(test)]
#[path = "filters_test.rs"]
mod tests;
