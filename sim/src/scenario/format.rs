//! The scenario file format (TOML): a world (clusters), an optional design, a list of steps
//! run in order, and the expected verdict. The README documents it with an example.
//!
//! Parsing is two passes: `toml` + serde build the typed file (syntax errors, unknown keys,
//! wrong types and unknown step kinds come back with the line), then [`Scenario::validate`]
//! checks what serde cannot (cluster names that exist, brokers in range, state and design
//! names), naming the step's line and the field. Nothing here panics on bad input.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use mirror_core::mirror::{Design, MirrorPartitionState};
use serde::Deserialize;
use toml::Spanned;

pub use super::mirror_steps::{DescribeMirrorDef, ListMirrorsDef, MirrorStateRecordDef};

/// Why a scenario file was refused: the file, the line, the field, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    /// The file (as given).
    pub file: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// The field (`step[3].cluster`), when known.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
        }
        if let Some(field) = &self.field {
            write!(f, ": field `{field}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ScenarioError {}

/// One cluster of the world.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ClusterDef {
    /// Its name (`src`, `dst`): steps refer to clusters by name; brokers are `<name>-<id>`.
    pub name: String,
    /// Broker count (1..=7).
    pub brokers: u16,
    /// Cluster default `unclean.leader.election.enable`.
    #[serde(default)]
    pub unclean_leader_election: bool,
    /// `log.flush.interval.ms` (absent: never, Kafka's default).
    #[serde(default)]
    pub flush_interval_ms: Option<i64>,
    /// Cluster default `min.insync.replicas`.
    #[serde(default)]
    pub min_insync_replicas: Option<usize>,
}

/// A broker named by id or by role for a partition (`"leader"`, `"follower"`: the first
/// in-sync non-leader replica), resolved when the step runs.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(untagged)]
pub enum BrokerRef {
    /// Broker id (1-based).
    Id(i32),
    /// `leader` or `follower` of the step's `topic`/`partition`.
    Role(String),
}

/// How a crash treats data not yet flushed.
#[derive(Copy, Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum CrashModeDef {
    /// A process crash: the page cache survives.
    #[default]
    Process,
    /// Power loss: unflushed writes are lost.
    PowerLoss,
    /// Power loss that may tear the last write.
    Torn,
}

/// Consumer isolation.
#[derive(Copy, Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum IsolationDef {
    /// Up to the HW.
    #[default]
    ReadUncommitted,
    /// Up to the LSO.
    ReadCommitted,
}

/// A background producer's kind.
#[derive(Copy, Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ProducerKindDef {
    /// Idempotent, acks=all.
    #[default]
    Idempotent,
    /// Transactional (commits, and aborts one transaction in `abort_one_in`).
    Transactional,
}

const fn one() -> i32 {
    1
}
const fn minus_one() -> i16 {
    -1
}
const fn default_timeout() -> u64 {
    60_000
}
const fn long_session() -> i64 {
    600_000
}

/// One step. `do` names the kind; every step may carry `at_ms` (do not start before this
/// simulated time, counted from the scenario's start) and a `note` printed in the trace.
///
/// Deserialized externally tagged (`{ <do>: { fields } }`, built by [`parse_step`]), not with
/// serde's internal tag: an internally tagged enum buffers the step, and its errors lose the
/// field (`invalid type: string "four", expected i32` with no name).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum StepKind {
    /// CreateTopics; waits until every partition has a leader.
    CreateTopic {
        cluster: String,
        topic: String,
        #[serde(default = "one")]
        partitions: i32,
        #[serde(default)]
        replication_factor: Option<i16>,
        #[serde(default)]
        configs: BTreeMap<String, String>,
        /// The topic id to create it with (CreateTopics with a topic id, as the prototype's
        /// `ClusterMirrorCommand` pre-creates a destination topic): `"<cluster>/<topic>"`,
        /// the id that topic has when the step runs (`"src/orders"`), or up to 32 hex digits.
        #[serde(default)]
        topic_id: Option<String>,
        #[serde(default)]
        expect: Option<String>,
    },
    /// `batches` batches of `records` records to the partition leader, one at a time. With
    /// `producer_id` the batches are idempotent (or `transactional`) with sequences that
    /// continue per producer and partition unless `sequence` is given; their values are named
    /// by (producer id, epoch, sequence), so a resend of a sequence is a producer's retry, and
    /// `no_duplicates` watches them.
    Produce {
        cluster: String,
        topic: String,
        #[serde(default)]
        partition: i32,
        #[serde(default = "one")]
        batches: i32,
        #[serde(default = "one")]
        records: i32,
        #[serde(default = "minus_one")]
        acks: i16,
        #[serde(default)]
        producer_id: Option<i64>,
        #[serde(default)]
        producer_epoch: i16,
        #[serde(default)]
        sequence: Option<i32>,
        #[serde(default)]
        transactional: bool,
        /// Expected error name (default `NONE`).
        #[serde(default)]
        expect: Option<String>,
        /// Expected base offset of the first batch (the others follow contiguously).
        #[serde(default)]
        expect_offset: Option<i64>,
        /// The broker the Produce goes to: the partition's leader unless given (`follower`,
        /// or an id: a deposed leader that has not yet learned it was replaced, a replica
        /// that must answer NOT_LEADER_OR_FOLLOWER).
        #[serde(default)]
        broker: Option<BrokerRef>,
    },
    /// A COMMIT or ABORT marker written to the leader as the transaction coordinator would
    /// (WriteTxnMarkers).
    EndTxn {
        cluster: String,
        topic: String,
        #[serde(default)]
        partition: i32,
        producer_id: i64,
        #[serde(default)]
        producer_epoch: i16,
        commit: bool,
        #[serde(default)]
        expect: Option<String>,
    },
    /// A read from the leader; checks the error and, when given, HW / LSO / log start and
    /// the number of records returned. A topic the cluster does not have answers
    /// UNKNOWN_TOPIC_OR_PARTITION (e.g. a topic a mirror never created).
    Consume {
        cluster: String,
        topic: String,
        #[serde(default)]
        partition: i32,
        #[serde(default)]
        offset: i64,
        #[serde(default)]
        isolation: IsolationDef,
        #[serde(default)]
        expect: Option<String>,
        #[serde(default)]
        expect_records: Option<i64>,
        #[serde(default)]
        expect_hw: Option<i64>,
        #[serde(default)]
        expect_lso: Option<i64>,
        #[serde(default)]
        expect_log_start: Option<i64>,
    },
    /// Background producers (the workload clients the chaos engine uses).
    StartProducer {
        cluster: String,
        topic: String,
        #[serde(default)]
        kind: ProducerKindDef,
        /// Records per second.
        rate: u32,
        #[serde(default)]
        abort_one_in: u32,
    },
    /// Closes every background producer.
    StopProducers,
    /// KIP-1279 CreateMirror on the destination `cluster`, pulling from `source`.
    CreateMirror {
        cluster: String,
        mirror: String,
        source: String,
        #[serde(default)]
        configs: BTreeMap<String, String>,
        #[serde(default)]
        expect: Option<String>,
    },
    /// StartMirrorTopics (topic ids and partition counts are read from the source).
    /// `include_patterns` / `exclude_patterns` (the request's `IncludePatterns` /
    /// `ExcludePatterns`, regexes matched against whole names) are merged into the mirror's
    /// `topics.include` / `topics.exclude`; the coordinator's next sync discovers and starts
    /// the source topics they match. An explicit topic the merged exclude list matches fails
    /// the whole request (INVALID_REQUEST); an invalid regex is INVALID_REGULAR_EXPRESSION.
    StartMirror {
        cluster: String,
        mirror: String,
        source: String,
        #[serde(default)]
        topics: Vec<String>,
        #[serde(default)]
        include_patterns: Vec<String>,
        #[serde(default)]
        exclude_patterns: Vec<String>,
        #[serde(default)]
        expect: Option<String>,
    },
    /// StopMirrorTopics (failover). `patterns` (the request's `Patterns`): each is removed
    /// from `topics.include` when it is an entry there, else added to `topics.exclude`, and
    /// the mirror's topics it matches are stopped too (never discovered again).
    StopMirror {
        cluster: String,
        mirror: String,
        #[serde(default)]
        topics: Vec<String>,
        #[serde(default)]
        patterns: Vec<String>,
        #[serde(default)]
        expect: Option<String>,
    },
    /// PauseMirrorTopics.
    PauseMirror {
        cluster: String,
        mirror: String,
        topics: Vec<String>,
        #[serde(default)]
        expect: Option<String>,
    },
    /// RecoverMirrorTopics (latest): sent to every live broker of `cluster`; each rewrites
    /// the FAILED partitions it leads to their previous state.
    RecoverMirror {
        cluster: String,
        mirror: String,
        topics: Vec<String>,
        #[serde(default)]
        expect: Option<String>,
    },
    /// ResumeMirrorTopics.
    ResumeMirror {
        cluster: String,
        mirror: String,
        topics: Vec<String>,
        #[serde(default)]
        expect: Option<String>,
    },
    /// DeleteMirror.
    DeleteMirror {
        cluster: String,
        mirror: String,
        #[serde(default)]
        expect: Option<String>,
    },
    /// DeleteTopics.
    DeleteTopic {
        cluster: String,
        topic: String,
        #[serde(default)]
        expect: Option<String>,
    },
    /// CreatePartitions to a new total `count`.
    CreatePartitions {
        cluster: String,
        topic: String,
        count: i32,
        #[serde(default)]
        expect: Option<String>,
    },
    /// IncrementalAlterConfigs on a topic (`value` absent: delete the key).
    AlterTopicConfig {
        cluster: String,
        topic: String,
        key: String,
        #[serde(default)]
        value: Option<String>,
        #[serde(default)]
        expect: Option<String>,
    },
    /// DeleteRecords before `offset` on the leader.
    DeleteRecords {
        cluster: String,
        topic: String,
        #[serde(default)]
        partition: i32,
        offset: i64,
        #[serde(default)]
        expect: Option<String>,
    },
    /// ElectLeaders with unclean = true (acts when the partition has no leader). Kafka's
    /// controller takes the first live replica in assignment order; with `broker`, the
    /// election goes as if every other replica were shut down (the `ElectLeaders` test hook;
    /// Kafka's tests shut the others down), and the step fails first, saying why, when that
    /// broker is not a replica, is down, or is fenced by the controller.
    UncleanElection {
        cluster: String,
        topic: String,
        #[serde(default)]
        partition: i32,
        #[serde(default)]
        broker: Option<i32>,
        #[serde(default)]
        expect: Option<String>,
    },
    /// A test hook: `broker`'s replica truncates its log to `offset` at once, as Kafka's
    /// tests call `UnifiedLog.truncateTo(offset)` on one broker's log (a no-op at or above
    /// the LEO; below the first batch the log restarts empty at `offset`). On the leader it
    /// is a declared data-loss event (`truncate_log@<offset>`). The hook travels the
    /// simulated network, so a cut-off broker does not get it.
    TruncateLog {
        cluster: String,
        broker: BrokerRef,
        topic: String,
        #[serde(default)]
        partition: i32,
        offset: i64,
        #[serde(default)]
        expect: Option<String>,
    },
    /// Crashes a broker (stays down until `restart`).
    Crash {
        cluster: String,
        broker: BrokerRef,
        #[serde(default)]
        topic: Option<String>,
        #[serde(default)]
        partition: i32,
        #[serde(default)]
        mode: CrashModeDef,
    },
    /// Bit rot: a bit of the stored CRC of the flushed batch holding `offset` flips on the
    /// broker's disk (the batch must lie in a segment its next recovery scans). The broker
    /// does not notice until it restarts (`crash` + `restart`).
    RotBatch {
        cluster: String,
        broker: BrokerRef,
        topic: String,
        #[serde(default)]
        partition: i32,
        offset: i64,
    },
    /// Restarts a crashed broker.
    Restart { cluster: String, broker: i32 },
    /// Restarts every crashed broker of `cluster` (of every cluster when absent).
    RestartAll {
        #[serde(default)]
        cluster: Option<String>,
    },
    /// Pauses a broker (a stop-the-world pause).
    PauseBroker { cluster: String, broker: i32 },
    /// Resumes a paused broker.
    ResumeBroker { cluster: String, broker: i32 },
    /// Cuts a broker from everything; `id` names the fault for `heal`.
    Isolate {
        cluster: String,
        broker: BrokerRef,
        #[serde(default)]
        topic: Option<String>,
        #[serde(default)]
        partition: i32,
        id: String,
    },
    /// Cuts a broker from its controller only (it is fenced but keeps serving).
    IsolateFromController {
        cluster: String,
        broker: i32,
        id: String,
    },
    /// Cuts every link between two clusters (`one_way`: only `from` → `to` traffic).
    PartitionClusters {
        from: String,
        to: String,
        #[serde(default)]
        one_way: bool,
        id: String,
    },
    /// Heals the network fault named `id`.
    Heal { id: String },
    /// Heals every link fault, full disk and pause.
    HealAll,
    /// A broker's disk is full (`on = false` frees it).
    DiskFull {
        cluster: String,
        broker: i32,
        on: bool,
    },
    /// Lets simulated time pass.
    Sleep { ms: u64 },
    /// Waits until the partition leader's mirror state is `state`.
    WaitState {
        cluster: String,
        topic: String,
        #[serde(default)]
        partition: i32,
        state: String,
        #[serde(default = "default_timeout")]
        timeout_ms: u64,
    },
    /// Waits until, for every partition of `topic`, the two clusters' leaders hold the same
    /// batches and every live replica on both sides caught up (LEO = HW = the leader's).
    WaitConverged {
        clusters: Vec<String>,
        topic: String,
        #[serde(default = "default_timeout")]
        timeout_ms: u64,
    },
    /// Waits until the leader's HW (and LEO, when given) reach these values.
    WaitOffsets {
        cluster: String,
        topic: String,
        #[serde(default)]
        partition: i32,
        #[serde(default)]
        hw: Option<i64>,
        #[serde(default)]
        leo: Option<i64>,
        /// Wait for every live replica, not only the leader.
        #[serde(default)]
        all_replicas: bool,
        #[serde(default = "default_timeout")]
        timeout_ms: u64,
    },
    /// Waits until the partition has a leader (or, with `none = true`, has none).
    WaitLeader {
        cluster: String,
        topic: String,
        #[serde(default)]
        partition: i32,
        #[serde(default)]
        none: bool,
        /// The leader must be a broker that is up (after a crash, the controller needs a
        /// session timeout to move leadership away from the dead broker).
        #[serde(default)]
        live: bool,
        #[serde(default = "default_timeout")]
        timeout_ms: u64,
    },
    /// The leader's mirror state is `state` now.
    ExpectState {
        cluster: String,
        topic: String,
        #[serde(default)]
        partition: i32,
        state: String,
    },
    /// The partition's log, offset by offset: `batches` as `"<base>-<last>@<epoch> <kind>"`
    /// (kind: data, txn, commit, abort, pid_reset; `@*` matches any epoch), the epoch cache
    /// as `[epoch, start]` pairs, and the bounds. Checked on the leader and, unless
    /// `leader_only`, on every live replica; with `broker`, on that replica only (it need not
    /// be in sync, and the partition need not have a leader). `isr` is the leader's committed
    /// ISR.
    ExpectLog {
        cluster: String,
        topic: String,
        #[serde(default)]
        partition: i32,
        #[serde(default)]
        broker: Option<i32>,
        #[serde(default)]
        batches: Option<Vec<String>>,
        #[serde(default)]
        epochs: Option<Vec<[i64; 2]>>,
        #[serde(default)]
        log_start: Option<i64>,
        #[serde(default)]
        lso: Option<i64>,
        #[serde(default)]
        hw: Option<i64>,
        #[serde(default)]
        leo: Option<i64>,
        #[serde(default)]
        leader_epoch_above: Option<i64>,
        /// The leader's epoch for the partition, exactly (with `broker`, that replica's).
        #[serde(default)]
        leader_epoch: Option<i32>,
        /// Each checked replica's producer-state entries, by producer id:
        /// `"<pid>@<epoch> seq=<last sequence>"`, with ` txn=<first offset>` while a
        /// transaction is open (seq -1: no batch retained in the epoch).
        #[serde(default)]
        producers: Option<Vec<String>>,
        #[serde(default)]
        leader_only: bool,
        #[serde(default)]
        isr: Option<Vec<i32>>,
    },
    /// The two clusters' leaders hold byte-identical logs for the partition.
    ExpectLogsEqual {
        clusters: Vec<String>,
        topic: String,
        #[serde(default)]
        partition: i32,
    },
    /// OffsetCommit through the group's coordinator (FindCoordinator first).
    CommitOffset {
        cluster: String,
        group: String,
        topic: String,
        #[serde(default)]
        partition: i32,
        offset: i64,
        /// A member id: the group counts as active on this cluster (the mirror's offset sync
        /// skips active groups).
        #[serde(default)]
        member: Option<String>,
        /// The leader epoch of the record before `offset` (`-1` or absent: none).
        #[serde(default)]
        leader_epoch: Option<i32>,
        #[serde(default)]
        expect: Option<String>,
    },
    /// GroupHeartbeat: `member` joins (or stays in) `group`, which is then active on this
    /// cluster for `session_timeout_ms`.
    JoinGroup {
        cluster: String,
        group: String,
        member: String,
        #[serde(default = "long_session")]
        session_timeout_ms: i64,
    },
    /// The group's committed offset at its coordinator now (`offset` absent: none
    /// committed), and, when given, the leader epoch committed with it (`-1`: none).
    ExpectCommittedOffset {
        cluster: String,
        group: String,
        topic: String,
        #[serde(default)]
        partition: i32,
        #[serde(default)]
        offset: Option<i64>,
        #[serde(default)]
        leader_epoch: Option<i32>,
    },
    /// Waits until the group's committed offset is `offset`.
    WaitCommittedOffset {
        cluster: String,
        group: String,
        topic: String,
        #[serde(default)]
        partition: i32,
        offset: i64,
        #[serde(default = "default_timeout")]
        timeout_ms: u64,
    },
    /// A topic config at the controller now (`value` absent: the key is unset).
    ExpectTopicConfig {
        cluster: String,
        topic: String,
        key: String,
        #[serde(default)]
        value: Option<String>,
    },
    /// Waits until a topic config at the controller is `value` (absent: unset).
    WaitTopicConfig {
        cluster: String,
        topic: String,
        key: String,
        #[serde(default)]
        value: Option<String>,
        #[serde(default = "default_timeout")]
        timeout_ms: u64,
    },
    /// CreateAcls with one ACL, written `"TOPIC:LITERAL:orders User:alice READ ALLOW"`
    /// (`<type>:<LITERAL|PREFIXED>:<name> <principal> <operation> <ALLOW|DENY>`, host `*`).
    CreateAcl {
        cluster: String,
        acl: String,
        #[serde(default)]
        expect: Option<String>,
    },
    /// DeleteAcls with a filter matching exactly this ACL.
    DeleteAcl { cluster: String, acl: String },
    /// The cluster's TOPIC ACLs at the controller now, in any order.
    ExpectAcls { cluster: String, acls: Vec<String> },
    /// Waits until the cluster's TOPIC ACLs are exactly `acls`.
    WaitAcls {
        cluster: String,
        acls: Vec<String>,
        #[serde(default = "default_timeout")]
        timeout_ms: u64,
    },
    /// IncrementalAlterConfigs on mirror `mirror` (resource `CLUSTER_MIRROR`): SET `key` to
    /// `value`, or DELETE it when `value` is absent. Filter keys (`topics.include`,
    /// `topics.exclude`, `groups.include`, `groups.exclude`, `acls.include`) take effect at
    /// the coordinator's next sync; any other key makes the brokers reconnect to the source.
    AlterMirrorConfig {
        cluster: String,
        mirror: String,
        key: String,
        #[serde(default)]
        value: Option<String>,
        #[serde(default)]
        expect: Option<String>,
    },
    /// A mirror config at the controller now (`value` absent: the key is unset).
    ExpectMirrorConfig {
        cluster: String,
        mirror: String,
        key: String,
        #[serde(default)]
        value: Option<String>,
    },
    /// Waits until a mirror config at the controller is `value` (absent: unset).
    WaitMirrorConfig {
        cluster: String,
        mirror: String,
        key: String,
        #[serde(default)]
        value: Option<String>,
        #[serde(default = "default_timeout")]
        timeout_ms: u64,
    },
    /// The data-loss events the checker was told about on `cluster` (unclean elections,
    /// mirror truncations, failback truncations), as `"<cause>@<from_offset>"`, in order.
    ExpectLosses {
        cluster: String,
        losses: Vec<String>,
    },
    /// DescribeClusterMirrors now: per partition state, lag, offsets, LME/LMO, retry attempt
    /// and reason (see [`DescribeMirrorDef`]).
    DescribeMirror(DescribeMirrorDef),
    /// Waits until a DescribeClusterMirrors answer meets the expectations (the prototype
    /// tests' `waitForMirrorState`, `waitForMirrorLagZero`, `waitForFailedState`).
    WaitDescribeMirror(DescribeMirrorDef),
    /// ListClusterMirrors now, with its filters (see [`ListMirrorsDef`]).
    ListMirrors(ListMirrorsDef),
    /// Waits until the ListClusterMirrors answer is the one given.
    WaitListMirrors(ListMirrorsDef),
    /// A partition's `__mirror_state` record as its coordinator holds it (ReadMirrorStates;
    /// see [`MirrorStateRecordDef`]).
    ExpectMirrorStateRecord(MirrorStateRecordDef),
}

/// A topic id as `create_topic.topic_id` names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TopicIdRef {
    /// This id.
    Literal(u128),
    /// The id topic `topic` has on cluster `cluster` when the step runs.
    Of {
        /// The cluster.
        cluster: String,
        /// The topic.
        topic: String,
    },
}

impl TopicIdRef {
    /// Parses `"<cluster>/<topic>"` or up to 32 hex digits.
    pub fn parse(s: &str) -> Result<TopicIdRef, String> {
        if let Some((cluster, topic)) = s.split_once('/') {
            if cluster.is_empty() || topic.is_empty() {
                return Err(format!("`{s}`: expected \"<cluster>/<topic>\""));
            }
            return Ok(TopicIdRef::Of {
                cluster: cluster.to_string(),
                topic: topic.to_string(),
            });
        }
        if s.is_empty() || s.len() > 32 || !s.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(format!(
                "`{s}`: expected \"<cluster>/<topic>\" or a topic id of 1 to 32 hex digits"
            ));
        }
        u128::from_str_radix(s, 16)
            .map(TopicIdRef::Literal)
            .map_err(|e| format!("`{s}`: {e}"))
    }
}

/// A step with its optional timing and note.
#[derive(Clone, Debug, PartialEq)]
pub struct StepDef {
    /// Do not start before this simulated time (ms after the scenario's start).
    pub at_ms: Option<u64>,
    /// Free text for the trace.
    pub note: Option<String>,
    /// What to do.
    pub kind: StepKind,
}

/// The verdict a scenario expects.
#[derive(Copy, Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ExpectedVerdict {
    /// Every step held and no invariant broke.
    #[default]
    Pass,
    /// An invariant broke (the one named in `invariant`, if given).
    Violation,
}

/// The `[expect]` table.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ExpectDef {
    /// `pass` (default) or `violation`.
    #[serde(default)]
    pub verdict: ExpectedVerdict,
    /// With `violation`: the invariant that must break first.
    #[serde(default)]
    pub invariant: Option<String>,
    /// Design-mechanism rules that must have broken (diagnostics, `mirrorsim list`), in any
    /// order; the verdict still comes from `verdict`.
    #[serde(default)]
    pub mechanism: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    name: Option<String>,
    description: String,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    seed: Option<u64>,
    #[serde(default)]
    design: Option<Spanned<String>>,
    #[serde(rename = "cluster")]
    clusters: Vec<Spanned<ClusterDef>>,
    #[serde(rename = "step", default)]
    steps: Vec<Spanned<toml::Table>>,
    #[serde(default)]
    expect: Option<Spanned<ExpectDef>>,
}

/// A parsed and validated scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// The file it came from (for messages).
    pub file: String,
    /// Its name (the `name` key, else the file stem).
    pub name: String,
    /// One paragraph on what it shows.
    pub description: String,
    /// Catalogue tags (`S5`, `failback`, ...).
    pub tags: Vec<String>,
    /// The madsim seed.
    pub seed: u64,
    /// The design (kip1279.md A.3); `seed` unless given.
    pub design: Design,
    /// Clusters, in index order (the first is cluster 0).
    pub clusters: Vec<ClusterDef>,
    /// Steps with their 1-based line.
    pub steps: Vec<(usize, StepDef)>,
    /// Expected verdict.
    pub expect: ExpectDef,
}

fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset.min(text.len()))
        .map_or(1, |t| t.bytes().filter(|b| *b == b'\n').count() + 1)
}

/// The line of key `field` (its first segment) in the table that starts at `span` (a
/// `[[step]]`: up to the next table header), else the table's line.
fn field_line(text: &str, span: &std::ops::Range<usize>, field: &str) -> usize {
    let field = field.split(['.', '[']).next().unwrap_or(field);
    let start = span.start.min(text.len());
    let mut offset = start;
    for (i, line) in text
        .get(start..)
        .unwrap_or("")
        .split_inclusive('\n')
        .enumerate()
    {
        if i > 0 && line.trim_start().starts_with('[') {
            break;
        }
        let key = line.trim_start().trim_start_matches('"');
        if let Some(rest) = key.strip_prefix(field)
            && rest.trim_start_matches('"').trim_start().starts_with('=')
        {
            return line_of(text, offset);
        }
        offset += line.len();
    }
    line_of(text, start)
}

/// The closest of `candidates` to a misspelt `name`, if one is close enough to be the
/// intended one (edit distance at most a third of the name, and at least 1 allowed).
#[must_use]
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).max(1);
    let name = name.to_ascii_lowercase();
    candidates
        .into_iter()
        .map(|c| {
            (
                strsim::damerau_levenshtein(&name, &c.to_ascii_lowercase()),
                c,
            )
        })
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, c)| (*d, *c))
        .map(|(_, c)| c)
}

/// A serde path as a user reads it: no serde-internal segments (`toml::Spanned`'s wrapper),
/// and, for a missing or unknown field, ending at that field.
fn field_path(path: &str, message: &str) -> String {
    let mut segments: Vec<&str> = path
        .split('.')
        .filter(|s| !s.is_empty() && !s.starts_with("$__") && *s != "?")
        .collect();
    if let Some(name) = quoted_after(message, &["missing field `", "unknown field `"])
        && segments.last() != Some(&name)
    {
        segments.push(name);
    }
    segments.join(".").replace(".[", "[")
}

/// The name serde quotes right after one of `prefixes` (`unknown field `a`, ...` → `a`).
fn quoted_after<'m>(message: &'m str, prefixes: &[&str]) -> Option<&'m str> {
    prefixes
        .iter()
        .find_map(|p| message.strip_prefix(p))
        .and_then(|rest| rest.split('`').next())
}

/// `; did you mean `x`?` for a suggestion, else nothing.
fn suggestion(s: Option<&str>) -> String {
    s.map_or_else(String::new, |s| format!("; did you mean `{s}`?"))
}

/// Appends `; did you mean `x`?` to a serde message naming an unknown field or variant
/// (`unknown field `a`, expected one of `b`, `c``), when one of the listed names is close.
fn with_suggestion(message: &str) -> String {
    let unknown = quoted_after(message, &["unknown field `", "unknown variant `"]);
    let listed: Vec<&str> = message
        .split_once("expected")
        .map(|(_, l)| l.split('`').skip(1).step_by(2).collect())
        .unwrap_or_default();
    let hint = unknown.and_then(|u| did_you_mean(u, listed.iter().copied()));
    format!("{message}{}", suggestion(hint))
}

/// A parsed step with where it was written: its line, its label (`step[3]`,
/// `step[3].steps[2]`) and the table's span, for validation errors.
struct PlacedStep {
    line: usize,
    label: String,
    span: std::ops::Range<usize>,
    def: StepDef,
}

/// How many times a `repeat` block may run its steps.
const MAX_REPEAT: i64 = 100;

/// Where each `[[step.steps]]` table of each `[[step]]` is written, read by a second,
/// lenient pass over the file (`toml::Table` values carry no spans). `None` when that pass
/// fails: the copies then report their block's line.
#[derive(Deserialize)]
struct StepSpans {
    #[serde(rename = "step", default)]
    steps: Vec<BlockSpans>,
}

#[derive(Deserialize)]
struct BlockSpans {
    #[serde(default)]
    steps: Vec<Spanned<toml::Value>>,
}

/// The span of the `j`-th step table inside block `i` (0-based), when known.
fn inner_span(spans: Option<&StepSpans>, i: usize, j: usize) -> Option<std::ops::Range<usize>> {
    spans?.steps.get(i)?.steps.get(j).map(Spanned::span)
}

/// The `[[step]]` tables in order, each `repeat` block expanded in place: `times` copies of
/// its `steps` (an array of step tables, `[[step.steps]]`), so a test that bounces a broker
/// twenty times is written once. The copies report the line of their own step table and
/// their own label (`step[3].steps[2]`); a block holds no `at_ms` (an absolute time cannot
/// repeat) and no other block.
fn expand_steps(
    text: &str,
    file: &str,
    steps: &[Spanned<toml::Table>],
) -> Result<Vec<PlacedStep>, ScenarioError> {
    let spans: Option<StepSpans> = toml::from_str(text).ok();
    let mut out = Vec::new();
    for (i, s) in steps.iter().enumerate() {
        let label = format!("step[{}]", i + 1);
        let line = line_of(text, s.span().start);
        let err = |field: &str, message: String| ScenarioError {
            file: file.to_owned(),
            line: Some(field_line(text, &s.span(), field)),
            field: Some(format!("{label}.{field}")),
            message,
        };
        if s.get_ref().get("do").and_then(toml::Value::as_str) != Some("repeat") {
            out.push(PlacedStep {
                line,
                def: parse_step(text, file, &label, s)?,
                label,
                span: s.span(),
            });
            continue;
        }
        let table = s.get_ref();
        if let Some(extra) = table
            .keys()
            .find(|k| !matches!(k.as_str(), "do" | "times" | "steps" | "note"))
        {
            return Err(err(
                extra,
                format!("unknown field `{extra}` of a repeat block (expected times, steps, note)"),
            ));
        }
        let times = match table.get("times") {
            Some(toml::Value::Integer(n)) if (1..=MAX_REPEAT).contains(n) => *n,
            Some(other) => {
                return Err(err(
                    "times",
                    format!("expected an integer from 1 to {MAX_REPEAT}, got {other}"),
                ));
            }
            None => return Err(err("times", "a repeat block needs `times`".into())),
        };
        let body: Vec<toml::Table> = match table.get("steps") {
            Some(toml::Value::Array(items)) if !items.is_empty() => items
                .iter()
                .enumerate()
                .map(|(j, v)| match v {
                    toml::Value::Table(t) => Ok(t.clone()),
                    other => Err(err(
                        &format!("steps[{}]", j + 1),
                        format!("expected a step table, got {}", other.type_str()),
                    )),
                })
                .collect::<Result<_, _>>()?,
            Some(_) => {
                return Err(err(
                    "steps",
                    "expected a non-empty array of step tables ([[step.steps]])".into(),
                ));
            }
            None => {
                return Err(err(
                    "steps",
                    "a repeat block needs `steps` ([[step.steps]] tables)".into(),
                ));
            }
        };
        let mut parsed = Vec::new();
        for (j, t) in body.iter().enumerate() {
            let inner = format!("{label}.steps[{}]", j + 1);
            let span = inner_span(spans.as_ref(), i, j).unwrap_or_else(|| s.span());
            let inner_line = line_of(text, span.start);
            let nested = |message: String| ScenarioError {
                file: file.to_owned(),
                line: Some(inner_line),
                field: Some(inner.clone()),
                message,
            };
            if t.get("do").and_then(toml::Value::as_str) == Some("repeat") {
                return Err(nested(
                    "a repeat block cannot hold another repeat block".into(),
                ));
            }
            if t.contains_key("at_ms") {
                return Err(nested(
                    "a step in a repeat block cannot carry `at_ms` (an absolute time runs once)"
                        .into(),
                ));
            }
            let spanned = Spanned::new(span.clone(), t.clone());
            parsed.push((
                inner.clone(),
                inner_line,
                span,
                parse_step(text, file, &inner, &spanned)?,
            ));
        }
        for _ in 0..times {
            for (inner, inner_line, span, def) in &parsed {
                out.push(PlacedStep {
                    line: *inner_line,
                    label: inner.clone(),
                    span: span.clone(),
                    def: def.clone(),
                });
            }
        }
    }
    Ok(out)
}

/// One `[[step]]` table: `do` names the kind, `at_ms` and `note` are common, the rest are
/// the kind's fields. Errors name the field (`step[3].partitions`) and its line.
fn parse_step(
    text: &str,
    file: &str,
    label: &str,
    table: &Spanned<toml::Table>,
) -> Result<StepDef, ScenarioError> {
    let span = table.span();
    let err = |field: &str, message: String| ScenarioError {
        file: file.to_owned(),
        line: Some(if field.is_empty() {
            line_of(text, span.start)
        } else {
            field_line(text, &span, field)
        }),
        field: Some(if field.is_empty() {
            label.to_owned()
        } else {
            format!("{label}.{field}")
        }),
        message,
    };
    let mut fields = table.get_ref().clone();
    let kind = match fields.remove("do") {
        Some(toml::Value::String(k)) => k,
        Some(other) => {
            return Err(err(
                "do",
                format!(
                    "expected the step kind as a string, got {}",
                    other.type_str()
                ),
            ));
        }
        None => return Err(err("", "a step needs `do = \"<kind>\"`".into())),
    };
    let at_ms = match fields.remove("at_ms") {
        None => None,
        Some(toml::Value::Integer(ms)) if ms >= 0 => u64::try_from(ms).ok(),
        Some(other) => {
            return Err(err(
                "at_ms",
                format!("expected a non-negative integer (ms), got {other}"),
            ));
        }
    };
    let note = match fields.remove("note") {
        None => None,
        Some(toml::Value::String(n)) => Some(n),
        Some(other) => {
            return Err(err(
                "note",
                format!("expected a string, got {}", other.type_str()),
            ));
        }
    };
    let mut tagged = toml::Table::new();
    tagged.insert(kind, toml::Value::Table(fields));
    let kind = serde_path_to_error::deserialize::<_, StepKind>(toml::Value::Table(tagged))
        .map_err(|e| {
            // The path is `<kind>.<field>...`; its first segment is the tag.
            let raw = e.inner().message().trim().to_owned();
            let message = with_suggestion(&raw);
            if raw.starts_with("unknown variant") {
                return err("do", message);
            }
            let path = field_path(&e.path().to_string(), &raw);
            err(path.split_once('.').map_or("", |(_, f)| f), message)
        })?;
    Ok(StepDef { at_ms, note, kind })
}

impl Scenario {
    /// Reads and parses a scenario file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            file: file.clone(),
            line: None,
            field: None,
            message: format!("cannot read: {e}"),
        })?;
        let stem = path
            .file_stem()
            .map_or_else(|| file.clone(), |s| s.to_string_lossy().into_owned());
        Scenario::parse(&text, &file, &stem)
    }

    /// Parses scenario text; `file` names it in errors and `stem` is the default name.
    pub fn parse(text: &str, file: &str, stem: &str) -> Result<Scenario, ScenarioError> {
        let syntax = |e: toml::de::Error| ScenarioError {
            file: file.to_owned(),
            line: e.span().map(|s| line_of(text, s.start)),
            field: None,
            message: with_suggestion(e.message().trim()),
        };
        let raw: RawFile =
            serde_path_to_error::deserialize(toml::Deserializer::parse(text).map_err(syntax)?)
                .map_err(|e| {
                    let path = field_path(&e.path().to_string(), e.inner().message());
                    let mut out = syntax(e.into_inner());
                    out.field = Some(path).filter(|p| !p.is_empty());
                    out
                })?;
        let err = |span: std::ops::Range<usize>, field: String, message: String| ScenarioError {
            file: file.to_owned(),
            line: Some(line_of(text, span.start)),
            field: Some(field),
            message,
        };
        let design = match &raw.design {
            None => Design::default(),
            Some(d) => Design::parse(d.get_ref()).map_err(|e| {
                let names = Design::all_named();
                let hint = suggestion(did_you_mean(d.get_ref(), names.iter().map(|(n, _)| *n)));
                err(d.span(), "design".into(), format!("{e}{hint}"))
            })?,
        };
        if raw.clusters.is_empty() {
            return Err(ScenarioError {
                file: file.to_owned(),
                line: None,
                field: Some("cluster".into()),
                message: "a scenario needs at least one [[cluster]]".into(),
            });
        }
        let expect = raw
            .expect
            .as_ref()
            .map(|e| e.get_ref().clone())
            .unwrap_or_default();
        if let (ExpectedVerdict::Pass, Some(_), Some(e)) =
            (expect.verdict, &expect.invariant, &raw.expect)
        {
            return Err(err(
                e.span(),
                "expect.invariant".into(),
                "an invariant can only be named with verdict = \"violation\"".into(),
            ));
        }
        let placed = expand_steps(text, file, &raw.steps)?;
        let sc = Scenario {
            file: file.to_owned(),
            name: raw.name.clone().unwrap_or_else(|| stem.to_owned()),
            description: raw.description.clone(),
            tags: raw.tags.clone(),
            seed: raw.seed.unwrap_or(1),
            design,
            clusters: raw.clusters.iter().map(|c| c.get_ref().clone()).collect(),
            steps: placed.iter().map(|p| (p.line, p.def.clone())).collect(),
            expect,
        };
        for (i, c) in raw.clusters.iter().enumerate() {
            let c_ref = c.get_ref();
            if !(1..=7).contains(&c_ref.brokers) {
                return Err(err(
                    c.span(),
                    format!("cluster[{i}].brokers"),
                    format!("{} brokers: a cluster has 1 to 7", c_ref.brokers),
                ));
            }
            if raw.clusters[..i]
                .iter()
                .any(|o| o.get_ref().name == c_ref.name)
            {
                return Err(err(
                    c.span(),
                    format!("cluster[{i}].name"),
                    format!("cluster `{}` is defined twice", c_ref.name),
                ));
            }
        }
        for p in &placed {
            sc.validate_step(&p.def)
                .map_err(|(field, msg)| ScenarioError {
                    file: file.to_owned(),
                    line: Some(field_line(text, &p.span, &field)),
                    field: Some(format!("{}.{field}", p.label)),
                    message: msg,
                })?;
        }
        Ok(sc)
    }

    /// The index of cluster `name`.
    #[must_use]
    pub fn cluster_index(&self, name: &str) -> Option<usize> {
        self.clusters.iter().position(|c| c.name == name)
    }

    fn validate_step(&self, step: &StepDef) -> Result<(), (String, String)> {
        use StepKind as K;
        let cluster = |field: &str, name: &str| -> Result<usize, (String, String)> {
            self.cluster_index(name).ok_or_else(|| {
                (
                    field.to_owned(),
                    format!(
                        "unknown cluster `{name}` (defined: {}){}",
                        self.clusters
                            .iter()
                            .map(|c| c.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", "),
                        suggestion(did_you_mean(
                            name,
                            self.clusters.iter().map(|c| c.name.as_str())
                        ))
                    ),
                )
            })
        };
        let broker = |c: usize, b: i32| -> Result<(), (String, String)> {
            let n = i32::from(self.clusters[c].brokers);
            if (1..=n).contains(&b) {
                Ok(())
            } else {
                Err((
                    "broker".into(),
                    format!(
                        "broker {b} does not exist in `{}` (brokers 1..={n})",
                        self.clusters[c].name
                    ),
                ))
            }
        };
        let broker_ref = |c: usize, b: &BrokerRef, topic: &Option<String>| match b {
            BrokerRef::Id(id) => broker(c, *id),
            BrokerRef::Role(r) if r == "leader" || r == "follower" => {
                if topic.is_none() {
                    Err((
                        "topic".into(),
                        format!("broker = \"{r}\" needs the topic (and partition) it leads"),
                    ))
                } else {
                    Ok(())
                }
            }
            BrokerRef::Role(r) => Err((
                "broker".into(),
                format!("`{r}`: expected a broker id, \"leader\" or \"follower\""),
            )),
        };
        let state = |s: &str| -> Result<(), (String, String)> {
            parse_state(s).map(|_| ()).ok_or_else(|| {
                (
                    "state".into(),
                    format!(
                        "unknown mirror state `{s}` (one of {}){}",
                        MirrorPartitionState::ALL
                            .iter()
                            .map(|s| s.name())
                            .collect::<Vec<_>>()
                            .join(", "),
                        suggestion(did_you_mean(
                            s,
                            MirrorPartitionState::ALL.iter().map(|s| s.name())
                        ))
                    ),
                )
            })
        };
        let expect = |e: &Option<String>| -> Result<(), (String, String)> {
            match e {
                Some(name)
                    if name.is_empty()
                        || !name.chars().all(|c| c.is_ascii_uppercase() || c == '_') =>
                {
                    Err((
                        "expect".into(),
                        format!(
                            "`{name}` is not a Kafka error name (like NONE or READ_ONLY_TOPIC)"
                        ),
                    ))
                }
                _ => Ok(()),
            }
        };
        let positive = |field: &str, v: i64| -> Result<(), (String, String)> {
            if v > 0 {
                Ok(())
            } else {
                Err((field.into(), format!("must be positive, got {v}")))
            }
        };
        match &step.kind {
            K::CreateTopic {
                cluster: c,
                partitions,
                replication_factor,
                topic_id,
                expect: e,
                ..
            } => {
                let ci = cluster("cluster", c)?;
                if let Some(id) = topic_id {
                    match TopicIdRef::parse(id).map_err(|m| ("topic_id".to_string(), m))? {
                        TopicIdRef::Of { cluster: of, .. } => {
                            cluster("topic_id", &of)?;
                        }
                        TopicIdRef::Literal(_) => {}
                    }
                }
                positive("partitions", i64::from(*partitions))?;
                if let Some(rf) = replication_factor {
                    positive("replication_factor", i64::from(*rf))?;
                    if *rf > i16::try_from(self.clusters[ci].brokers).unwrap_or(i16::MAX) {
                        return Err((
                            "replication_factor".into(),
                            format!(
                                "RF {rf} exceeds the {} brokers of `{c}`",
                                self.clusters[ci].brokers
                            ),
                        ));
                    }
                }
                expect(e)
            }
            K::Produce {
                cluster: c,
                topic,
                batches,
                records,
                acks,
                transactional,
                producer_id,
                expect: e,
                broker: b,
                ..
            } => {
                let ci = cluster("cluster", c)?;
                if let Some(b) = b {
                    broker_ref(ci, b, &Some(topic.clone()))?;
                }
                positive("batches", i64::from(*batches))?;
                positive("records", i64::from(*records))?;
                if ![-1, 0, 1].contains(acks) {
                    return Err(("acks".into(), format!("acks {acks}: expected -1, 0 or 1")));
                }
                if *transactional && producer_id.is_none() {
                    return Err((
                        "producer_id".into(),
                        "a transactional batch needs a producer_id".into(),
                    ));
                }
                expect(e)
            }
            K::EndTxn {
                cluster: c,
                expect: e,
                ..
            }
            | K::Consume {
                cluster: c,
                expect: e,
                ..
            }
            | K::DeleteMirror {
                cluster: c,
                expect: e,
                ..
            }
            | K::DeleteTopic {
                cluster: c,
                expect: e,
                ..
            }
            | K::CreatePartitions {
                cluster: c,
                expect: e,
                ..
            }
            | K::AlterTopicConfig {
                cluster: c,
                expect: e,
                ..
            }
            | K::AlterMirrorConfig {
                cluster: c,
                expect: e,
                ..
            }
            | K::DeleteRecords {
                cluster: c,
                expect: e,
                ..
            }
            | K::StopMirror {
                cluster: c,
                expect: e,
                ..
            }
            | K::PauseMirror {
                cluster: c,
                expect: e,
                ..
            }
            | K::ResumeMirror {
                cluster: c,
                expect: e,
                ..
            }
            | K::RecoverMirror {
                cluster: c,
                expect: e,
                ..
            } => {
                cluster("cluster", c)?;
                expect(e)
            }
            K::UncleanElection {
                cluster: c,
                broker: b,
                expect: e,
                ..
            } => {
                let ci = cluster("cluster", c)?;
                if let Some(b) = b {
                    broker(ci, *b)?;
                }
                expect(e)
            }
            K::TruncateLog {
                cluster: c,
                broker: b,
                topic,
                expect: e,
                ..
            } => {
                let ci = cluster("cluster", c)?;
                broker_ref(ci, b, &Some(topic.clone()))?;
                expect(e)
            }
            K::DescribeMirror(d) | K::WaitDescribeMirror(d) => {
                cluster("cluster", &d.cluster)?;
                expect(&d.expect)?;
                d.validate(matches!(step.kind, K::WaitDescribeMirror(_)))
            }
            K::ListMirrors(d) | K::WaitListMirrors(d) => {
                cluster("cluster", &d.cluster)?;
                for (i, s) in d.source_clusters.iter().flatten().enumerate() {
                    cluster(&format!("source_clusters[{i}]"), s)?;
                }
                d.validate(matches!(step.kind, K::WaitListMirrors(_)))
            }
            K::ExpectMirrorStateRecord(d) => {
                cluster("cluster", &d.cluster)?;
                d.validate()
            }
            K::StartProducer {
                cluster: c, rate, ..
            } => {
                cluster("cluster", c)?;
                positive("rate", i64::from(*rate))
            }
            K::CreateMirror {
                cluster: c,
                source,
                expect: e,
                ..
            }
            | K::StartMirror {
                cluster: c,
                source,
                expect: e,
                ..
            } => {
                cluster("cluster", c)?;
                cluster("source", source)?;
                expect(e)
            }
            K::RotBatch {
                cluster: c,
                broker: b,
                topic,
                ..
            } => {
                let ci = cluster("cluster", c)?;
                broker_ref(ci, b, &Some(topic.clone()))
            }
            K::Crash {
                cluster: c,
                broker: b,
                topic,
                ..
            }
            | K::Isolate {
                cluster: c,
                broker: b,
                topic,
                ..
            } => {
                let ci = cluster("cluster", c)?;
                broker_ref(ci, b, topic)
            }
            K::Restart {
                cluster: c,
                broker: b,
            }
            | K::PauseBroker {
                cluster: c,
                broker: b,
            }
            | K::ResumeBroker {
                cluster: c,
                broker: b,
            }
            | K::IsolateFromController {
                cluster: c,
                broker: b,
                ..
            }
            | K::DiskFull {
                cluster: c,
                broker: b,
                ..
            } => {
                let ci = cluster("cluster", c)?;
                broker(ci, *b)
            }
            K::PartitionClusters { from, to, .. } => {
                cluster("from", from)?;
                cluster("to", to)?;
                if from == to {
                    return Err((
                        "to".into(),
                        "a partition needs two different clusters".into(),
                    ));
                }
                Ok(())
            }
            K::WaitState {
                cluster: c,
                state: s,
                ..
            }
            | K::ExpectState {
                cluster: c,
                state: s,
                ..
            } => {
                cluster("cluster", c)?;
                state(s)
            }
            K::WaitConverged { clusters, .. } | K::ExpectLogsEqual { clusters, .. } => {
                if clusters.len() != 2 {
                    return Err((
                        "clusters".into(),
                        format!("expected two clusters, got {}", clusters.len()),
                    ));
                }
                for c in clusters {
                    cluster("clusters", c)?;
                }
                Ok(())
            }
            K::WaitOffsets { cluster: c, .. }
            | K::WaitLeader { cluster: c, .. }
            | K::ExpectLosses { cluster: c, .. } => cluster("cluster", c).map(|_| ()),
            K::ExpectLog {
                cluster: c,
                batches,
                broker: b,
                ..
            } => {
                let ci = cluster("cluster", c)?;
                if let Some(b) = b {
                    broker(ci, *b)?;
                }
                for (i, b) in batches.iter().flatten().enumerate() {
                    BatchPattern::parse(b)
                        .map_err(|m| (format!("batches[{i}]"), format!("`{b}`: {m}")))?;
                }
                Ok(())
            }
            K::RestartAll { cluster: c } => match c {
                Some(c) => cluster("cluster", c).map(|_| ()),
                None => Ok(()),
            },
            K::CommitOffset {
                cluster: c,
                expect: e,
                ..
            } => {
                cluster("cluster", c)?;
                expect(e)
            }
            K::JoinGroup { cluster: c, .. }
            | K::ExpectCommittedOffset { cluster: c, .. }
            | K::WaitCommittedOffset { cluster: c, .. }
            | K::ExpectTopicConfig { cluster: c, .. }
            | K::WaitTopicConfig { cluster: c, .. }
            | K::ExpectMirrorConfig { cluster: c, .. }
            | K::WaitMirrorConfig { cluster: c, .. } => cluster("cluster", c).map(|_| ()),
            K::CreateAcl {
                cluster: c,
                acl,
                expect: e,
            } => {
                cluster("cluster", c)?;
                parse_acl(acl).map_err(|m| ("acl".to_string(), m))?;
                expect(e)
            }
            K::DeleteAcl { cluster: c, acl } => {
                cluster("cluster", c)?;
                parse_acl(acl)
                    .map(|_| ())
                    .map_err(|m| ("acl".to_string(), m))
            }
            K::ExpectAcls { cluster: c, acls }
            | K::WaitAcls {
                cluster: c, acls, ..
            } => {
                cluster("cluster", c)?;
                for (i, a) in acls.iter().enumerate() {
                    parse_acl(a).map_err(|m| (format!("acls[{i}]"), m))?;
                }
                Ok(())
            }
            K::StopProducers | K::Heal { .. } | K::HealAll | K::Sleep { .. } => Ok(()),
        }
    }
}

/// A mirror state by its KIP name (`MIRRORING`) or lower-case (`mirroring`).
#[must_use]
pub fn parse_state(s: &str) -> Option<MirrorPartitionState> {
    // `LOG_ALIGNMENT` (the latest preset's name for PREPARING) is accepted as the core does.
    MirrorPartitionState::from_name(&s.to_ascii_uppercase())
}

/// What a batch is, for offset-by-offset expectations.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BatchKind {
    /// Plain or idempotent data.
    Data,
    /// Transactional data.
    Txn,
    /// COMMIT marker.
    Commit,
    /// ABORT marker.
    Abort,
    /// KIP-1279 `MIRROR_PID_RESET`.
    PidReset,
    /// Another control record type.
    OtherControl,
}

impl BatchKind {
    /// Its name in `expect_log.batches`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            BatchKind::Data => "data",
            BatchKind::Txn => "txn",
            BatchKind::Commit => "commit",
            BatchKind::Abort => "abort",
            BatchKind::PidReset => "pid_reset",
            BatchKind::OtherControl => "control",
        }
    }
}

/// One expected batch: `"0-3@0 data"`, `"11@0 commit"` (one offset), `"12@* pid_reset"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchPattern {
    /// Base offset.
    pub base: i64,
    /// Last offset.
    pub last: i64,
    /// Partition leader epoch (`None` = any).
    pub epoch: Option<i32>,
    /// Kind.
    pub kind: BatchKind,
}

impl BatchPattern {
    /// Parses `"<base>[-<last>]@<epoch|*> <kind>"`.
    pub fn parse(s: &str) -> Result<BatchPattern, String> {
        let (range, kind) = s
            .trim()
            .split_once(' ')
            .ok_or("expected \"<base>-<last>@<epoch> <kind>\"")?;
        let kind = [
            BatchKind::Data,
            BatchKind::Txn,
            BatchKind::Commit,
            BatchKind::Abort,
            BatchKind::PidReset,
            BatchKind::OtherControl,
        ]
        .into_iter()
        .find(|k| k.name() == kind.trim())
        .ok_or_else(|| {
            format!("unknown kind `{kind}` (data, txn, commit, abort, pid_reset, control)")
        })?;
        let (offsets, epoch) = range.split_once('@').ok_or("missing `@<epoch>`")?;
        let epoch = if epoch == "*" {
            None
        } else {
            Some(
                epoch
                    .parse::<i32>()
                    .map_err(|_| format!("bad epoch `{epoch}`"))?,
            )
        };
        let num = |t: &str| t.parse::<i64>().map_err(|_| format!("bad offset `{t}`"));
        let (base, last) = match offsets.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None => (num(offsets)?, num(offsets)?),
        };
        if last < base {
            return Err(format!("last offset {last} below base {base}"));
        }
        Ok(BatchPattern {
            base,
            last,
            epoch,
            kind,
        })
    }

    /// Whether an actual batch `(base, last, epoch, kind)` matches.
    #[must_use]
    pub fn matches(&self, base: i64, last: i64, epoch: i32, kind: BatchKind) -> bool {
        self.base == base
            && self.last == last
            && self.epoch.is_none_or(|e| e == epoch)
            && self.kind == kind
    }
}

/// Renders an actual batch in the pattern syntax.
#[must_use]
pub fn render_batch(base: i64, last: i64, epoch: i32, kind: BatchKind) -> String {
    if base == last {
        format!("{base}@{epoch} {}", kind.name())
    } else {
        format!("{base}-{last}@{epoch} {}", kind.name())
    }
}

/// Parses `"<type>:<LITERAL|PREFIXED>:<name> <principal> <operation> <ALLOW|DENY>"` (host `*`).
pub fn parse_acl(s: &str) -> Result<mirror_core::protocol::acl::AclBinding, String> {
    use mirror_core::protocol::acl::{
        AclBinding, AclOperation, AclPermissionType, AclResourceType, PatternType,
    };
    let parts: Vec<&str> = s.split_whitespace().collect();
    let [resource, principal, op, perm] = parts.as_slice() else {
        return Err(format!(
            "`{s}`: expected \"<type>:<LITERAL|PREFIXED>:<name> <principal> <operation> <ALLOW|DENY>\""
        ));
    };
    let mut r = resource.splitn(3, ':');
    let (Some(t), Some(pt), Some(name)) = (r.next(), r.next(), r.next()) else {
        return Err(format!(
            "`{resource}`: expected <type>:<LITERAL|PREFIXED>:<name>"
        ));
    };
    let t = AclResourceType::parse(t).ok_or_else(|| format!("unknown resource type `{t}`"))?;
    let pt = match pt.to_ascii_uppercase().as_str() {
        "LITERAL" => PatternType::Literal,
        "PREFIXED" => PatternType::Prefixed,
        _ => return Err(format!("unknown pattern type `{pt}` (LITERAL or PREFIXED)")),
    };
    let op = AclOperation::parse(op).ok_or_else(|| format!("unknown operation `{op}`"))?;
    let perm =
        AclPermissionType::parse(perm).ok_or_else(|| format!("unknown permission `{perm}`"))?;
    if !principal.contains(':') {
        return Err(format!(
            "principal `{principal}`: expected <type>:<name> like User:alice"
        ));
    }
    Ok(AclBinding::new(t, name, pt, principal, op, perm))
}
