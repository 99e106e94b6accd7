//! Scenario steps that read KIP-1279's admin answers: `describe_mirror` /
//! `wait_describe_mirror` (DescribeClusterMirrors: state, lag, LME, retry attempt, reason per
//! partition), `list_mirrors` / `wait_list_mirrors` (ListClusterMirrors with its filters) and
//! `expect_mirror_state_record` (the `__mirror_state` record as its coordinator holds it,
//! the ReadMirrorStates answer).
//!
//! Each reads the answer the brokers (or the controller, for ListMirrors) would give now,
//! through the same core function their request handler calls, without a network round
//! trip: an expectation never adds traffic or draws randomness, so it does not change the
//! run it observes (as `expect_state` and `expect_log` read state directly).

use mirror_core::mirror::{MirrorPartitionKey, MirrorPartitionState};
use mirror_core::protocol::messages::{
    ListMirrorsFilter, MirrorListing, MirrorPartitionDescription, MirrorPartitionStateData,
};
use mirror_core::protocol::metadata::{
    DesiredMirrorState, MIRROR_STATE_TOPIC, MIRROR_STATE_TOPIC_PARTITIONS,
};
use mirror_core::protocol::{ClusterIdx, ErrorCode, NodeId, Response};
use mirror_core::types::{BrokerId, TopicPartition};
use serde::Deserialize;

use super::format::{did_you_mean, parse_state};
use super::inspect;
use crate::kafka::KafkaWorld;
use crate::world::node::lock;

/// `describe_mirror` and `wait_describe_mirror`: a mirror's partitions as DescribeClusterMirrors
/// answers them. Every field after `partition` is an expectation that each described
/// partition must meet (the prototype's `allPartitionsSatisfy`; at least one partition must
/// be described); `partitions` is the whole answer, exactly.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct DescribeMirrorDef {
    /// The destination cluster the mirror is defined on.
    pub cluster: String,
    /// The mirror.
    pub mirror: String,
    /// Only these topics (each must be in the mirror); empty: every topic of the mirror.
    #[serde(default)]
    pub topics: Vec<String>,
    /// Only this partition of each topic.
    #[serde(default)]
    pub partition: Option<i32>,
    /// The partition state (`MIRRORING`, `FAILED`, ...; `LOG_ALIGNMENT` is PREPARING).
    #[serde(default)]
    pub state: Option<String>,
    /// `max(0, source_offset - destination_offset)`, `-1` when either is unknown.
    #[serde(default)]
    pub lag: Option<i64>,
    /// The source HW the mirror fetcher last saw (`-1`: not being fetched).
    #[serde(default)]
    pub source_offset: Option<i64>,
    /// The destination LEO while being fetched (`-1`: not being fetched).
    #[serde(default)]
    pub destination_offset: Option<i64>,
    /// The LME the `__mirror_state` record holds (`-1`: none).
    #[serde(default)]
    pub last_mirror_epoch: Option<i32>,
    /// The LMO the `__mirror_state` record holds (`-1`: none).
    #[serde(default)]
    pub last_mirror_offset: Option<i64>,
    /// Exactly this retry attempt (0: not failed, -1: non-retryable).
    #[serde(default)]
    pub retry_attempt: Option<i16>,
    /// At least this retry attempt (the prototype's `waitForFailedState`).
    #[serde(default)]
    pub retry_attempt_at_least: Option<i16>,
    /// Exactly this FAILED reason (`""`: none).
    #[serde(default)]
    pub error_message: Option<String>,
    /// A FAILED reason containing this text.
    #[serde(default)]
    pub error_contains: Option<String>,
    /// The whole answer, one row per partition in topic and partition order:
    /// `"orders-0 MIRRORING lag=0 src=20 dst=20 lme=-1 lmo=-1 retry=0"`, with
    /// ` reason=<text>` last when the partition has a FAILED reason.
    #[serde(default)]
    pub partitions: Option<Vec<String>>,
    /// The mirror's error (`UNKNOWN_CLUSTER_MIRROR`); NONE is the default.
    #[serde(default)]
    pub expect: Option<String>,
    /// `wait_describe_mirror` only: how long to wait (default 60 s).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// `list_mirrors` and `wait_list_mirrors`: ListClusterMirrors with the prototype's filters,
/// and the listing expected, exactly.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ListMirrorsDef {
    /// The cluster the mirrors are defined on.
    pub cluster: String,
    /// `mirrorNameFilter`: only these mirrors.
    #[serde(default)]
    pub mirror_names: Option<Vec<String>>,
    /// `sourceClusterIdFilter`, by cluster name: only mirrors from these clusters.
    #[serde(default)]
    pub source_clusters: Option<Vec<String>>,
    /// `desiredStateFilter`: the topics listed under each mirror (MIRRORING, PAUSED,
    /// STOPPED; absent: the prototype's default, MIRRORING and PAUSED).
    #[serde(default)]
    pub desired_states: Option<Vec<String>>,
    /// The listing, one row per mirror in name order: `"m1 source=src topics=a,b"`
    /// (`topics=` with nothing after it for none).
    pub mirrors: Vec<String>,
    /// `wait_list_mirrors` only: how long to wait (default 60 s).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// `expect_mirror_state_record`: one partition's `__mirror_state` record as the coordinator
/// (the leader of its `__mirror_state` partition) holds it, committed, as ReadMirrorStates
/// answers. Every field after `partition` is an expectation.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct MirrorStateRecordDef {
    /// The destination cluster.
    pub cluster: String,
    /// The mirror.
    pub mirror: String,
    /// The topic.
    pub topic: String,
    /// The partition.
    #[serde(default)]
    pub partition: i32,
    /// The persisted state.
    #[serde(default)]
    pub state: Option<String>,
    /// Its state epoch.
    #[serde(default)]
    pub state_epoch: Option<i32>,
    /// The state before FAILED (UNKNOWN when none).
    #[serde(default)]
    pub previous_state: Option<String>,
    /// The leader epoch of the leader that wrote it (`-1`: none).
    #[serde(default)]
    pub leader_epoch: Option<i32>,
    /// The retry attempt (0: not failed, -1: non-retryable).
    #[serde(default)]
    pub retry_attempt: Option<i16>,
    /// The LME (`-1`: none).
    #[serde(default)]
    pub last_mirror_epoch: Option<i32>,
    /// The LMO (`-1`: none).
    #[serde(default)]
    pub last_mirror_offset: Option<i64>,
    /// The FAILED reason (`""`: none).
    #[serde(default)]
    pub error_message: Option<String>,
    /// The whole record: `"FAILED se=4 prev=MIRRORING le=2 lme=-1 lmo=-1 retry=-1
    /// reason=<text>"` (` reason=` only with a reason), or `"none"` when there is none.
    #[serde(default)]
    pub record: Option<String>,
}

/// A validation error: `(field, message)`.
pub type Invalid = (String, String);

fn check_state_name(field: &str, s: &str) -> Result<(), Invalid> {
    parse_state(s).map(|_| ()).ok_or_else(|| {
        let names: Vec<&str> = MirrorPartitionState::ALL.iter().map(|s| s.name()).collect();
        let hint = did_you_mean(s, names.iter().copied())
            .map_or_else(String::new, |n| format!("; did you mean `{n}`?"));
        (
            field.to_string(),
            format!(
                "unknown mirror state `{s}` (one of {}){hint}",
                names.join(", ")
            ),
        )
    })
}

impl DescribeMirrorDef {
    /// What serde cannot check; `waits` for `wait_describe_mirror`.
    pub fn validate(&self, waits: bool) -> Result<(), Invalid> {
        if !waits && self.timeout_ms.is_some() {
            return Err((
                "timeout_ms".into(),
                "describe_mirror checks now; use wait_describe_mirror to wait".into(),
            ));
        }
        if let Some(s) = &self.state {
            check_state_name("state", s)?;
        }
        if let Some(p) = self.partition
            && p < 0
        {
            return Err(("partition".into(), format!("must not be negative, got {p}")));
        }
        if let Some(rows) = &self.partitions {
            for (i, r) in rows.iter().enumerate() {
                let state = r.split_whitespace().nth(1).unwrap_or("");
                check_state_name(&format!("partitions[{i}]"), state).map_err(|(f, m)| {
                    (
                        f,
                        format!("`{r}`: expected \"<topic>-<partition> <STATE> lag=..\"; {m}"),
                    )
                })?;
            }
        }
        Ok(())
    }
}

impl ListMirrorsDef {
    /// What serde cannot check (cluster names are checked by the caller).
    pub fn validate(&self, waits: bool) -> Result<(), Invalid> {
        if !waits && self.timeout_ms.is_some() {
            return Err((
                "timeout_ms".into(),
                "list_mirrors checks now; use wait_list_mirrors to wait".into(),
            ));
        }
        for (i, d) in self.desired_states.iter().flatten().enumerate() {
            desired_state(d).ok_or_else(|| {
                let hint = did_you_mean(d, ["MIRRORING", "PAUSED", "STOPPED"])
                    .map_or_else(String::new, |n| format!("; did you mean `{n}`?"));
                (
                    format!("desired_states[{i}]"),
                    format!("`{d}`: a desired state is MIRRORING, PAUSED or STOPPED{hint}"),
                )
            })?;
        }
        Ok(())
    }
}

impl MirrorStateRecordDef {
    /// What serde cannot check.
    pub fn validate(&self) -> Result<(), Invalid> {
        if let Some(s) = &self.state {
            check_state_name("state", s)?;
        }
        if let Some(s) = &self.previous_state {
            check_state_name("previous_state", s)?;
        }
        if self.partition < 0 {
            return Err((
                "partition".into(),
                format!("must not be negative, got {}", self.partition),
            ));
        }
        Ok(())
    }
}

fn desired_state(s: &str) -> Option<DesiredMirrorState> {
    match s.to_ascii_uppercase().as_str() {
        "MIRRORING" => Some(DesiredMirrorState::Mirroring),
        "PAUSED" => Some(DesiredMirrorState::Paused),
        "STOPPED" => Some(DesiredMirrorState::Stopped),
        _ => None,
    }
}

// ------------------------------------------------------------------ describe

/// One partition of a DescribeClusterMirrors answer, merged across the brokers as the admin
/// client merges it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DescribedPartition {
    /// Topic.
    pub topic: String,
    /// The partition's answer (LME and LMO the maximum any broker gave).
    pub d: MirrorPartitionDescription,
}

impl DescribedPartition {
    /// `max(0, source - destination)`, `-1` when either is unknown (prototype
    /// `LeaderStateDescription.lag`).
    #[must_use]
    pub fn lag(&self) -> i64 {
        if self.d.source_offset < 0 || self.d.destination_offset < 0 {
            -1
        } else {
            (self.d.source_offset - self.d.destination_offset).max(0)
        }
    }

    /// The row in `describe_mirror.partitions` syntax.
    #[must_use]
    pub fn render(&self) -> String {
        let mut s = format!(
            "{}-{} {} lag={} src={} dst={} lme={} lmo={} retry={}",
            self.topic,
            self.d.partition,
            self.d.state,
            self.lag(),
            self.d.source_offset,
            self.d.destination_offset,
            self.d.last_mirror_epoch,
            self.d.last_mirror_offset,
            self.d.retry_attempt
        );
        if let Some(r) = &self.d.error_message {
            s.push_str(&format!(" reason={r}"));
        }
        s
    }
}

/// The DescribeClusterMirrors answer for `mirror` on cluster `c`: every live broker's
/// local answer (`Broker::describe_mirrors`), merged as the admin client does: a partition's
/// state, offsets, retry attempt and reason come from the broker the controller names as its
/// leader (else from the broker hosting its `__mirror_state` record), its LME and LMO are the
/// maximum any broker gave. The mirror's error is UNKNOWN_CLUSTER_MIRROR only when no live
/// broker knows the mirror.
#[must_use]
pub fn describe(
    w: &KafkaWorld,
    c: ClusterIdx,
    mirror: &str,
) -> (ErrorCode, Vec<DescribedPartition>) {
    let names = [mirror.to_string()];
    let mut error = ErrorCode::UnknownClusterMirror;
    let mut found: std::collections::BTreeMap<
        (String, i32),
        Vec<(BrokerId, MirrorPartitionDescription)>,
    > = std::collections::BTreeMap::new();
    for b in w
        .broker_ids(c)
        .into_iter()
        .filter(|b| inspect::is_up(w, c, *b))
    {
        let Some(Response::DescribeMirrors { mirrors }) =
            w.with_broker(c, b, |br| br.describe_mirrors(Some(&names)))
        else {
            continue;
        };
        for m in mirrors.into_iter().filter(|m| m.mirror_name == mirror) {
            if m.error.is_ok() {
                error = ErrorCode::None;
            }
            for t in m.topics {
                for p in t.partitions {
                    found
                        .entry((t.name.clone(), p.partition))
                        .or_default()
                        .push((b, p));
                }
            }
        }
    }
    let rows = found
        .into_iter()
        .filter_map(|((topic, p), answers)| {
            let leader = w.leader(c, &TopicPartition::new(topic.as_str(), p));
            let lme = answers.iter().map(|(_, a)| a.last_mirror_epoch).max()?;
            let lmo = answers.iter().map(|(_, a)| a.last_mirror_offset).max()?;
            let (_, chosen) = answers
                .iter()
                .find(|(b, _)| Some(*b) == leader)
                .or_else(|| answers.first())?;
            let mut d = chosen.clone();
            d.last_mirror_epoch = lme;
            d.last_mirror_offset = lmo;
            Some(DescribedPartition { topic, d })
        })
        .collect();
    (error, rows)
}

/// Checks a describe answer against `def`: `Ok` with a one-line summary, or why not.
pub fn check_describe(
    def: &DescribeMirrorDef,
    error: ErrorCode,
    rows: &[DescribedPartition],
) -> Result<String, String> {
    let m = &def.mirror;
    let want = def.expect.as_deref().unwrap_or("NONE");
    if error.name() != want {
        return Err(format!("{m}: expected {want}, got {error}"));
    }
    let in_mirror: Vec<&str> = {
        let mut v: Vec<&str> = rows.iter().map(|r| r.topic.as_str()).collect();
        v.dedup();
        v
    };
    if error.is_ok()
        && let Some(t) = def.topics.iter().find(|t| !in_mirror.contains(&t.as_str()))
    {
        return Err(format!(
            "{m}: no partition of `{t}` is described (described topics: {in_mirror:?})"
        ));
    }
    let matched: Vec<&DescribedPartition> = rows
        .iter()
        .filter(|r| def.topics.is_empty() || def.topics.contains(&r.topic))
        .filter(|r| def.partition.is_none_or(|p| p == r.d.partition))
        .collect();
    let shown: Vec<String> = matched.iter().map(|r| r.render()).collect();
    if let Some(want) = &def.partitions
        && *want != shown
    {
        return Err(format!("{m} partitions: expected {want:?}, got {shown:?}"));
    }
    let per_partition = def.state.is_some()
        || def.lag.is_some()
        || def.source_offset.is_some()
        || def.destination_offset.is_some()
        || def.last_mirror_epoch.is_some()
        || def.last_mirror_offset.is_some()
        || def.retry_attempt.is_some()
        || def.retry_attempt_at_least.is_some()
        || def.error_message.is_some()
        || def.error_contains.is_some();
    if per_partition && matched.is_empty() {
        return Err(format!("{m}: no partition is described"));
    }
    for r in &matched {
        if let Some(e) = partition_mismatch(def, r) {
            return Err(format!(
                "{m} {}-{} {e} ({})",
                r.topic,
                r.d.partition,
                r.render()
            ));
        }
    }
    Ok(format!("{m}: {shown:?}"))
}

/// The first expectation `r` misses, as `what: expected .., got ..`.
fn partition_mismatch(def: &DescribeMirrorDef, r: &DescribedPartition) -> Option<String> {
    if let Some(want) = &def.state {
        let got = parse_state(&r.d.state);
        if got != parse_state(want) {
            return Some(format!("state: expected {want}, got {}", r.d.state));
        }
    }
    let d = &r.d;
    let numbers = [
        ("lag", def.lag, r.lag()),
        ("source offset", def.source_offset, d.source_offset),
        (
            "destination offset",
            def.destination_offset,
            d.destination_offset,
        ),
        (
            "last mirror epoch",
            def.last_mirror_epoch.map(i64::from),
            i64::from(d.last_mirror_epoch),
        ),
        (
            "last mirror offset",
            def.last_mirror_offset,
            d.last_mirror_offset,
        ),
        (
            "retry attempt",
            def.retry_attempt.map(i64::from),
            i64::from(d.retry_attempt),
        ),
    ];
    for (what, want, got) in numbers {
        if let Some(want) = want
            && want != got
        {
            return Some(format!("{what}: expected {want}, got {got}"));
        }
    }
    if let Some(min) = def.retry_attempt_at_least
        && d.retry_attempt < min
    {
        return Some(format!(
            "retry attempt: expected at least {min}, got {}",
            d.retry_attempt
        ));
    }
    let reason = d.error_message.as_deref().unwrap_or("");
    if let Some(want) = &def.error_message
        && want != reason
    {
        return Some(format!("error message: expected {want:?}, got {reason:?}"));
    }
    if let Some(part) = &def.error_contains
        && !reason.contains(part.as_str())
    {
        return Some(format!(
            "error message: expected one containing {part:?}, got {reason:?}"
        ));
    }
    None
}

// ------------------------------------------------------------------ list

/// The ListClusterMirrors answer of cluster `c`'s controller for `filter`.
#[must_use]
pub fn list(w: &KafkaWorld, c: ClusterIdx, filter: &ListMirrorsFilter) -> Vec<MirrorListing> {
    let arc = w.world.node_state(NodeId::controller(c));
    let g = lock(&arc);
    g.as_controller()
        .map(|ctl| mirror_core::controller::mirror_admin::list_mirrors(ctl.image(), filter))
        .unwrap_or_default()
}

/// The filter of a `list_mirrors` step; `cluster_index` maps cluster names to the source
/// cluster ids the model uses (the cluster's index).
#[must_use]
pub fn list_filter(
    def: &ListMirrorsDef,
    cluster_index: impl Fn(&str) -> usize,
) -> ListMirrorsFilter {
    ListMirrorsFilter {
        mirror_names: def.mirror_names.clone(),
        source_cluster_ids: def
            .source_clusters
            .as_ref()
            .map(|v| v.iter().map(|n| cluster_index(n).to_string()).collect()),
        desired_states: def
            .desired_states
            .as_ref()
            .map(|v| v.iter().filter_map(|d| desired_state(d)).collect()),
    }
}

/// A listing row in `list_mirrors.mirrors` syntax.
#[must_use]
pub fn render_listing(l: &MirrorListing) -> String {
    let topics: Vec<&str> = l.topics.iter().map(|(t, _)| t.as_str()).collect();
    format!(
        "{} source={} topics={}",
        l.mirror_name,
        l.source,
        topics.join(",")
    )
}

// ------------------------------------------------------------------ __mirror_state records

/// The record as its coordinator holds it now (`None`: it holds none), with the design its
/// state names follow; an error when the topic is unknown or the coordinator is not there.
pub fn read_record(
    w: &KafkaWorld,
    c: ClusterIdx,
    def: &MirrorStateRecordDef,
) -> Result<
    (
        Option<MirrorPartitionStateData>,
        mirror_core::mirror::Design,
    ),
    String,
> {
    let topic_id = {
        let arc = w.world.node_state(NodeId::controller(c));
        let g = lock(&arc);
        g.as_controller()
            .and_then(|ctl| ctl.image().topic_id(&def.topic))
            .ok_or_else(|| format!("`{}` is unknown on {}", def.topic, def.cluster))?
    };
    let key = MirrorPartitionKey {
        mirror_name: def.mirror.clone(),
        topic_id,
        partition: def.partition,
    };
    let sp = mirror_core::mirror::mirror_state_partition(
        &def.mirror,
        topic_id,
        def.partition,
        MIRROR_STATE_TOPIC_PARTITIONS,
    );
    let coord_tp = TopicPartition::new(MIRROR_STATE_TOPIC, sp);
    let coordinator = w
        .leader(c, &coord_tp)
        .ok_or_else(|| format!("{coord_tp} (the record's coordinator) has no leader"))?;
    let (data, present, design) = w
        .with_broker(c, coordinator, |b| {
            (
                b.read_mirror_state(&key),
                b.committed_mirror_state(&key).map(|r| r.is_some()),
                b.config().mirror_design,
            )
        })
        .ok_or_else(|| format!("{}-{} is down", def.cluster, coordinator.0))?;
    match present {
        None => Err(format!(
            "{}-{} answers {} for {coord_tp} (it has not loaded it yet)",
            def.cluster, coordinator.0, data.error
        )),
        Some(true) => Ok((Some(data), design)),
        Some(false) => Ok((None, design)),
    }
}

/// A record in `expect_mirror_state_record.record` syntax (`"none"` for no record).
#[must_use]
pub fn render_record(
    d: Option<&MirrorPartitionStateData>,
    design: &mirror_core::mirror::Design,
) -> String {
    let name = |v: i8| {
        MirrorPartitionState::from_value(v)
            .unwrap_or(MirrorPartitionState::Unknown)
            .name_in(design)
    };
    let Some(d) = d else {
        return "none".to_string();
    };
    let mut s = format!(
        "{} se={} prev={} le={} lme={} lmo={} retry={}",
        name(d.state),
        d.state_epoch,
        name(d.previous_state),
        d.leader_epoch.map_or(-1, |e| e.0),
        d.last_mirror_epoch.map_or(-1, |e| e.0),
        d.last_mirror_offset.map_or(-1, |o| o.0),
        d.retry_attempt
    );
    if let Some(r) = &d.error_message {
        s.push_str(&format!(" reason={r}"));
    }
    s
}

/// Checks a record (`None`: there is none) against `def`.
pub fn check_record(
    def: &MirrorStateRecordDef,
    record: Option<&MirrorPartitionStateData>,
    design: &mirror_core::mirror::Design,
) -> Result<String, String> {
    let shown = render_record(record, design);
    let who = format!(
        "{}/{}-{} in {}",
        def.cluster, def.topic, def.partition, def.mirror
    );
    if let Some(want) = &def.record
        && *want != shown
    {
        return Err(format!("{who} record: expected {want:?}, got {shown:?}"));
    }
    let Some(d) = record else {
        let asked = def.state.is_some()
            || def.state_epoch.is_some()
            || def.previous_state.is_some()
            || def.leader_epoch.is_some()
            || def.retry_attempt.is_some()
            || def.last_mirror_epoch.is_some()
            || def.last_mirror_offset.is_some()
            || def.error_message.is_some();
        return if asked {
            Err(format!("{who}: the coordinator holds no record"))
        } else {
            Ok(format!("{who}: none"))
        };
    };
    let state =
        |v: i8| MirrorPartitionState::from_value(v).unwrap_or(MirrorPartitionState::Unknown);
    for (what, want, got) in [
        ("state", &def.state, state(d.state)),
        (
            "previous state",
            &def.previous_state,
            state(d.previous_state),
        ),
    ] {
        if let Some(want) = want
            && parse_state(want) != Some(got)
        {
            return Err(format!(
                "{who} {what}: expected {want}, got {}",
                got.name_in(design)
            ));
        }
    }
    let numbers = [
        (
            "state epoch",
            def.state_epoch.map(i64::from),
            i64::from(d.state_epoch),
        ),
        (
            "leader epoch",
            def.leader_epoch.map(i64::from),
            i64::from(d.leader_epoch.map_or(-1, |e| e.0)),
        ),
        (
            "retry attempt",
            def.retry_attempt.map(i64::from),
            i64::from(d.retry_attempt),
        ),
        (
            "last mirror epoch",
            def.last_mirror_epoch.map(i64::from),
            i64::from(d.last_mirror_epoch.map_or(-1, |e| e.0)),
        ),
        (
            "last mirror offset",
            def.last_mirror_offset,
            d.last_mirror_offset.map_or(-1, |o| o.0),
        ),
    ];
    for (what, want, got) in numbers {
        if let Some(want) = want
            && want != got
        {
            return Err(format!(
                "{who} {what}: expected {want}, got {got} ({shown})"
            ));
        }
    }
    let reason = d.error_message.as_deref().unwrap_or("");
    if let Some(want) = &def.error_message
        && want != reason
    {
        return Err(format!(
            "{who} error message: expected {want:?}, got {reason:?}"
        ));
    }
    Ok(format!("{who}: {shown}"))
}
