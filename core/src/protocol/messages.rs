//! Requests and responses exchanged by simulated nodes. They carry Kafka's fields with
//! Kafka's names, in memory (the simulator does not serialize them; record batches are the
//! real v2 bytes). Every response carries error codes per partition or per topic, as Kafka's do.

use std::collections::BTreeMap;

use super::ErrorCode;
use super::acl::{AclBinding, AclBindingFilter, DeleteAclsFilterResult};
use super::metadata::{ConfigResource, DesiredMirrorState, MetadataRecord};
use crate::log::txn_index::AbortedTxn;
use crate::record::RecordBatch;
use crate::replication::fetch_leader::FetchIsolation;
use crate::types::{
    BrokerId, LeaderEpoch, Offset, OffsetAndEpoch, ProducerEpoch, ProducerId, TopicId,
    TopicPartition,
};

/// A request, by API.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "fuzz", derive(arbitrary::Arbitrary))]
pub enum Request {
    // ------------------------------------------------------------ broker -> controller
    /// A broker (re)joins: Kafka's `BrokerRegistration`.
    RegisterBroker {
        /// The broker.
        broker_id: BrokerId,
        /// Changes on every process start, so the controller can tell restarts apart.
        incarnation: u64,
    },
    /// Liveness and fencing (Kafka: `BrokerHeartbeat`).
    BrokerHeartbeat {
        /// The broker.
        broker_id: BrokerId,
        /// The epoch from registration.
        broker_epoch: i64,
        /// Highest metadata offset the broker has applied.
        metadata_offset: i64,
        /// True while the broker has not caught up with metadata after registering.
        want_fence: bool,
    },
    /// Fetches the metadata log from `fetch_offset` (KRaft brokers replicate it).
    FetchMetadata {
        /// The broker.
        broker_id: BrokerId,
        /// First metadata offset wanted.
        fetch_offset: i64,
        /// Long-poll wait when nothing is new.
        max_wait_ms: i64,
    },
    /// The leader asks to change the ISR (Kafka: `AlterPartition`).
    AlterPartition {
        /// The leader.
        broker_id: BrokerId,
        /// Its broker epoch.
        broker_epoch: i64,
        /// The partition.
        tp: TopicPartition,
        /// The leader epoch the leader is in.
        leader_epoch: LeaderEpoch,
        /// The partition epoch the change is based on.
        partition_epoch: i32,
        /// The proposed ISR.
        new_isr: Vec<BrokerId>,
    },
    /// A broker asks for a block of producer ids (Kafka: `AllocateProducerIds`).
    AllocateProducerIds {
        /// The broker.
        broker_id: BrokerId,
        /// Its broker epoch.
        broker_epoch: i64,
    },
    /// KIP-1279: bump leader epochs to above a minimum (Kafka prototype: `BumpLeaderEpochs`).
    BumpLeaderEpochs {
        /// Partitions and the epoch each must exceed.
        partitions: Vec<(TopicPartition, LeaderEpoch)>,
    },

    // ------------------------------------------------------------ admin (any broker -> controller)
    /// Creates topics.
    CreateTopics {
        /// Topics to create.
        topics: Vec<CreatableTopic>,
    },
    /// Deletes topics.
    DeleteTopics {
        /// Topic names.
        #[cfg_attr(feature = "fuzz", arbitrary(with = crate::fuzz::topic_names))]
        names: Vec<String>,
    },
    /// Raises a topic's partition count.
    CreatePartitions {
        /// Topic name.
        #[cfg_attr(feature = "fuzz", arbitrary(with = crate::fuzz::topic_name))]
        topic: String,
        /// New total partition count.
        count: i32,
    },
    /// Leader election (Kafka: `ElectLeaders`); `unclean` picks any live replica.
    ElectLeaders {
        /// Partitions to elect for.
        partitions: Vec<TopicPartition>,
        /// UNCLEAN election type.
        unclean: bool,
        /// Test hook, not a Kafka field (`None` in every request a Kafka client sends):
        /// elect as if every replica but this broker were shut down at this instant. Kafka's
        /// controller takes the first acceptable replica in assignment order
        /// (`PartitionChangeBuilder.electLeader`), so Kafka's tests choose an unclean leader
        /// by shutting the other replicas down first; this is that, without the restarts.
        test_only_candidate: Option<BrokerId>,
    },
    /// Sets or deletes config keys (Kafka: `IncrementalAlterConfigs`).
    IncrementalAlterConfigs {
        /// The resource.
        resource: ConfigResource,
        /// `(key, Some(value))` sets, `(key, None)` deletes.
        #[cfg_attr(feature = "fuzz", arbitrary(with = crate::fuzz::config_ops))]
        ops: Vec<(String, Option<String>)>,
    },
    /// KIP-1279: creates a mirror (one `ConfigRecord` per config, resource `MIRROR`; the first
    /// mirror also creates `__mirror_state`).
    CreateMirror {
        /// Mirror name: topic-name rules, not ending in `.paused` / `.removed`.
        #[cfg_attr(feature = "fuzz", arbitrary(with = crate::fuzz::mirror_name))]
        mirror_name: String,
        /// Mirror configs; `source.cluster` is required.
        #[cfg_attr(feature = "fuzz", arbitrary(with = crate::fuzz::configs))]
        configs: BTreeMap<String, String>,
    },
    /// KIP-1279: deletes a mirror whose topics are all STOPPED.
    DeleteMirror {
        /// Mirror name.
        #[cfg_attr(feature = "fuzz", arbitrary(with = crate::fuzz::mirror_name))]
        mirror_name: String,
        /// KIP-1279 §6.6 `StateValidationOffset`: the metadata offset the broker validated the
        /// mirror's partition states at; the controller refuses the request if a topic's
        /// `mirror.name` changed after it. `None` skips the check (requests from clients).
        state_validation_offset: Option<i64>,
    },
    /// KIP-1279: starts (or, from STOPPED, restarts = failback) mirroring topics.
    StartMirrorTopics {
        /// Mirror name.
        #[cfg_attr(feature = "fuzz", arbitrary(with = crate::fuzz::mirror_name))]
        mirror_name: String,
        /// Topics, with the source's id and partition count (filled in by the broker).
        topics: Vec<MirrorTopic>,
        /// B §6.1 `IncludePatterns`: regexes merged into the mirror's `topics.include` (the
        /// coordinator's pattern discovery then starts the source topics they match).
        include_patterns: Vec<String>,
        /// B §6.1 `ExcludePatterns`: regexes merged into the mirror's `topics.exclude`.
        exclude_patterns: Vec<String>,
        /// KIP-1279 §6.6 optimistic lock, as in `DeleteMirror`.
        state_validation_offset: Option<i64>,
    },
    /// KIP-1279: stops mirroring topics (failover: they become writable once STOPPED).
    StopMirrorTopics {
        /// Mirror name.
        #[cfg_attr(feature = "fuzz", arbitrary(with = crate::fuzz::mirror_name))]
        mirror_name: String,
        /// Topic names.
        #[cfg_attr(feature = "fuzz", arbitrary(with = crate::fuzz::topic_names))]
        topics: Vec<String>,
        /// B §6.1 `Patterns`: each is removed from `topics.include` when it is an entry
        /// there, else added to `topics.exclude`; the mirror's topics it matches are stopped
        /// too, and are not discovered again.
        patterns: Vec<String>,
        /// KIP-1279 §6.6 optimistic lock, as in `DeleteMirror`.
        state_validation_offset: Option<i64>,
    },
    /// KIP-1279: pauses mirroring topics (they stay read-only).
    PauseMirrorTopics {
        /// Mirror name.
        #[cfg_attr(feature = "fuzz", arbitrary(with = crate::fuzz::mirror_name))]
        mirror_name: String,
        /// Topic names.
        #[cfg_attr(feature = "fuzz", arbitrary(with = crate::fuzz::topic_names))]
        topics: Vec<String>,
    },
    /// KIP-1279: resumes paused topics from their log end (no truncation).
    ResumeMirrorTopics {
        /// Mirror name.
        #[cfg_attr(feature = "fuzz", arbitrary(with = crate::fuzz::mirror_name))]
        mirror_name: String,
        /// Topic names.
        #[cfg_attr(feature = "fuzz", arbitrary(with = crate::fuzz::topic_names))]
        topics: Vec<String>,
    },
    /// KIP-1279 latest (B §6, RecoverMirrorTopics): manual recovery of FAILED partitions,
    /// rewritten to their previous state with the retry counter reset. Answered by the
    /// broker that receives it for the partitions it leads (an admin client sends it to
    /// every broker); per-topic errors.
    RecoverMirrorTopics {
        /// Mirror name.
        #[cfg_attr(feature = "fuzz", arbitrary(with = crate::fuzz::mirror_name))]
        mirror_name: String,
        /// Topic names.
        #[cfg_attr(feature = "fuzz", arbitrary(with = crate::fuzz::topic_names))]
        topics: Vec<String>,
    },
    /// KIP-1279 `ListClusterMirrors`: lists mirrors and their topics (answered by the
    /// controller from its image), filtered as the prototype's `ListClusterMirrorsOptions`.
    ListMirrors {
        /// Which mirrors and which of their topics.
        filter: ListMirrorsFilter,
    },
    /// Creates ACLs (Kafka: `CreateAcls`, forwarded to the controller). Creating an ACL
    /// that exists already succeeds and writes nothing.
    CreateAcls {
        /// The ACLs, each answered on its own.
        creations: Vec<AclBinding>,
    },
    /// Deletes the ACLs each filter matches (Kafka: `DeleteAcls`, forwarded to the
    /// controller).
    DeleteAcls {
        /// Filters, each answered on its own.
        filters: Vec<AclBindingFilter>,
    },
    /// Lists the ACLs a filter matches (Kafka: `DescribeAcls`). Answered by the receiving
    /// broker from its metadata image, as Kafka's brokers answer it from their authorizer.
    DescribeAcls {
        /// The filter.
        filter: AclBindingFilter,
    },

    // ------------------------------------------------------------ KIP-1279 (-> broker)
    /// KIP-1279: partition states, lags and the LME lookup used by failback. Answered by each
    /// broker from its own state (local-only; the caller takes the max across brokers).
    DescribeMirrors {
        /// `None` = all mirrors.
        mirror_names: Option<Vec<String>>,
        /// LME lookups are answered only for mirrors whose source has this cluster id.
        cluster_id: Option<String>,
        /// `(topic id, partitions)` whose last mirror epoch the caller wants.
        last_mirror_epoch_lookups: Vec<(TopicId, Vec<i32>)>,
    },
    /// KIP-1279: a partition leader reads states from the `__mirror_state` coordinator.
    ReadMirrorStates {
        /// Mirror name.
        #[cfg_attr(feature = "fuzz", arbitrary(with = crate::fuzz::mirror_name))]
        mirror_name: String,
        /// Topics and partitions to read.
        topics: Vec<ReadMirrorStatesTopic>,
    },
    /// KIP-1279: a partition leader persists transitions / last mirror epochs to the
    /// `__mirror_state` coordinator, fenced by leader epoch and state epoch.
    WriteMirrorStates {
        /// Mirror name.
        #[cfg_attr(feature = "fuzz", arbitrary(with = crate::fuzz::mirror_name))]
        mirror_name: String,
        /// Topics and partition states to write.
        topics: Vec<WriteMirrorStatesTopic>,
    },
    /// KIP-1279 metadata sync: a topic's dynamic configs, answered by any broker from its
    /// metadata image (stands in for Kafka's `DescribeConfigs` of `DYNAMIC_TOPIC_CONFIG`
    /// entries; `mirror.name` is included, the syncer always drops it).
    DescribeTopicConfigs {
        /// Topic names.
        #[cfg_attr(feature = "fuzz", arbitrary(with = crate::fuzz::topic_names))]
        topics: Vec<String>,
    },
    /// KIP-1279 metadata sync: the groups of the group coordinators this broker hosts
    /// (local-only, like Kafka's `ListGroups` sent to one broker; ask every broker).
    ListGroups {},

    // ------------------------------------------------------------ data plane (-> broker)
    /// Topic metadata for clients (Kafka: `Metadata`).
    Metadata {
        /// `None` = all topics.
        topics: Option<Vec<String>>,
    },
    /// Produce (Kafka: `Produce`, one batch per partition as v2 requires).
    Produce {
        /// Set by transactional producers.
        transactional_id: Option<String>,
        /// 0, 1 or -1 (all).
        #[cfg_attr(feature = "fuzz", arbitrary(with = crate::fuzz::acks))]
        acks: i16,
        /// How long an acks=all request may wait.
        timeout_ms: i64,
        /// One batch per partition.
        partitions: Vec<(TopicPartition, RecordBatch)>,
    },
    /// Fetch by followers (with `replica`) and consumers (without).
    Fetch {
        /// `(broker id, broker epoch)` of a follower; `None` for a consumer.
        replica: Option<(BrokerId, i64)>,
        /// Long-poll bound.
        max_wait_ms: i64,
        /// Respond early once this many bytes are available.
        min_bytes: usize,
        /// Response size bound.
        max_bytes: usize,
        /// Read bound: LEO for followers, HW or LSO for consumers.
        isolation: FetchIsolation,
        /// Partitions to fetch: all of them in a sessionless or full fetch; in an
        /// incremental one (KIP-227), only those added to the session or changed since.
        partitions: Vec<FetchPartition>,
        /// The fetch session (KIP-227): sessionless for consumers, a session for followers.
        session: FetchSessionMeta,
        /// KIP-227: partitions an incremental fetch removes from its session.
        forgotten: Vec<TopicPartition>,
    },
    /// Earliest / latest offsets (Kafka: `ListOffsets`).
    ListOffsets {
        /// A follower resetting after OFFSET_OUT_OF_RANGE (gets the LEO for `Latest`).
        replica_id: Option<BrokerId>,
        /// Consumers' isolation (latest = HW or LSO).
        isolation: FetchIsolation,
        /// Partitions with an optional current leader epoch.
        partitions: Vec<(TopicPartition, Option<LeaderEpoch>, OffsetSpec)>,
    },
    /// Moves log start offsets (Kafka: `DeleteRecords`).
    DeleteRecords {
        /// `(partition, before offset)`.
        partitions: Vec<(TopicPartition, Offset)>,
        /// How long to wait for followers.
        timeout_ms: i64,
    },
    /// End offset of an epoch (Kafka: `OffsetsForLeaderEpoch`).
    OffsetsForLeaderEpoch {
        /// `(partition, current leader epoch, requested epoch)`.
        partitions: Vec<(TopicPartition, Option<LeaderEpoch>, LeaderEpoch)>,
    },

    // ------------------------------------------------------------ coordinators (-> broker)
    /// Locates a coordinator (Kafka: `FindCoordinator`).
    FindCoordinator {
        /// Group id or transactional id.
        #[cfg_attr(feature = "fuzz", arbitrary(with = crate::fuzz::id_string))]
        key: String,
        /// Which coordinator.
        kind: CoordinatorKind,
    },
    /// Gets a producer id and epoch (Kafka: `InitProducerId`).
    InitProducerId {
        /// For transactional producers.
        transactional_id: Option<String>,
        /// Transaction timeout.
        transaction_timeout_ms: i64,
        /// Current id when re-initialising (KIP-360), else -1.
        producer_id: ProducerId,
        /// Current epoch when re-initialising, else -1.
        producer_epoch: ProducerEpoch,
    },
    /// Adds partitions to the ongoing transaction (Kafka: `AddPartitionsToTxn`).
    AddPartitionsToTxn {
        /// Transactional id.
        #[cfg_attr(feature = "fuzz", arbitrary(with = crate::fuzz::id_string))]
        transactional_id: String,
        /// Producer id.
        producer_id: ProducerId,
        /// Producer epoch.
        producer_epoch: ProducerEpoch,
        /// Partitions.
        partitions: Vec<TopicPartition>,
    },
    /// Commits or aborts (Kafka: `EndTxn`).
    EndTxn {
        /// Transactional id.
        #[cfg_attr(feature = "fuzz", arbitrary(with = crate::fuzz::id_string))]
        transactional_id: String,
        /// Producer id.
        producer_id: ProducerId,
        /// Producer epoch.
        producer_epoch: ProducerEpoch,
        /// True to commit.
        commit: bool,
    },
    /// Coordinator -> partition leaders: write COMMIT/ABORT markers (Kafka: `WriteTxnMarkers`).
    WriteTxnMarkers {
        /// Markers, each for a set of partitions.
        markers: Vec<TxnMarker>,
    },
    /// Commits consumer offsets (Kafka: `OffsetCommit`).
    OffsetCommit {
        /// Group id.
        #[cfg_attr(feature = "fuzz", arbitrary(with = crate::fuzz::id_string))]
        group_id: String,
        /// Member committing, `None` for an admin/simple commit.
        member_id: Option<String>,
        /// `(partition, offset, leader epoch of the record before it)`.
        offsets: Vec<(TopicPartition, Offset, Option<LeaderEpoch>)>,
    },
    /// Reads committed offsets (Kafka: `OffsetFetch`).
    OffsetFetch {
        /// Group id.
        #[cfg_attr(feature = "fuzz", arbitrary(with = crate::fuzz::id_string))]
        group_id: String,
        /// `None` = all partitions of the group.
        partitions: Option<Vec<TopicPartition>>,
    },
    /// Simplified group membership: keeps `member_id` alive in `group_id` (stands in for
    /// JoinGroup/SyncGroup/Heartbeat; assignment is done by the workload).
    GroupHeartbeat {
        /// Group id.
        #[cfg_attr(feature = "fuzz", arbitrary(with = crate::fuzz::id_string))]
        group_id: String,
        /// Member id.
        #[cfg_attr(feature = "fuzz", arbitrary(with = crate::fuzz::id_string))]
        member_id: String,
        /// Member expires after this long without a heartbeat.
        session_timeout_ms: i64,
    },
    /// Removes a member (Kafka: `LeaveGroup`).
    LeaveGroup {
        /// Group id.
        #[cfg_attr(feature = "fuzz", arbitrary(with = crate::fuzz::id_string))]
        group_id: String,
        /// Member id.
        #[cfg_attr(feature = "fuzz", arbitrary(with = crate::fuzz::id_string))]
        member_id: String,
    },

    // ------------------------------------------------------------ test hooks (-> broker)
    /// Test hook, not a Kafka API: the receiving broker truncates its own replica of
    /// `partition` to `offset` at once, as Kafka's tests call `UnifiedLog.truncateTo` on one
    /// broker's log (a simulated unclean election or lost disk tail). Answered with
    /// `PartitionErrors`: UNKNOWN_TOPIC_OR_PARTITION without a replica, INVALID_REQUEST for a
    /// negative offset.
    TestTruncateLog {
        /// The replica's partition.
        partition: TopicPartition,
        /// Kafka `truncateTo(targetOffset)`: no-op at or above the LEO; below the log start,
        /// the log restarts empty there (`truncateFullyAndStartAt`).
        offset: Offset,
    },
}

/// A response, by API.
#[derive(Clone, Debug, PartialEq)]
pub enum Response {
    /// To `RegisterBroker`.
    RegisterBroker {
        /// Error.
        error: ErrorCode,
        /// The new broker epoch.
        broker_epoch: i64,
    },
    /// To `BrokerHeartbeat`.
    BrokerHeartbeat {
        /// Error.
        error: ErrorCode,
        /// Whether the controller considers the broker fenced.
        is_fenced: bool,
    },
    /// To `FetchMetadata`.
    FetchMetadata {
        /// Error.
        error: ErrorCode,
        /// `(offset, record)` from the requested offset on.
        records: Vec<(i64, MetadataRecord)>,
        /// End of the controller's metadata log.
        end_offset: i64,
    },
    /// To `AlterPartition`.
    AlterPartition {
        /// Partition.
        tp: TopicPartition,
        /// Error (FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION as InvalidRequest, ...).
        error: ErrorCode,
        /// The committed ISR after the request.
        isr: Vec<BrokerId>,
        /// Leader epoch.
        leader_epoch: LeaderEpoch,
        /// Partition epoch.
        partition_epoch: i32,
    },
    /// To `AllocateProducerIds`.
    AllocateProducerIds {
        /// Error.
        error: ErrorCode,
        /// First id of the block.
        first_producer_id: ProducerId,
        /// Block size.
        count: i64,
    },
    /// Per-partition errors (BumpLeaderEpochs, ElectLeaders, DeleteRecords ack, WriteTxnMarkers, AddPartitionsToTxn, OffsetCommit).
    PartitionErrors {
        /// `(partition, error)`.
        results: Vec<(TopicPartition, ErrorCode)>,
    },
    /// Per-topic errors (CreateTopics, DeleteTopics, CreatePartitions, IncrementalAlterConfigs).
    TopicErrors {
        /// `(topic, error, topic id if known)`.
        results: Vec<(String, ErrorCode, TopicId)>,
    },
    /// To `Metadata`.
    Metadata {
        /// Live brokers.
        brokers: Vec<BrokerId>,
        /// Topics.
        topics: Vec<TopicMetadata>,
    },
    /// To `Produce`.
    Produce {
        /// Per partition.
        partitions: Vec<ProducePartitionResponse>,
    },
    /// To `Fetch`.
    Fetch {
        /// Top-level error (e.g. stale broker epoch, a fetch session error).
        error: ErrorCode,
        /// KIP-227: the session the answer belongs to (0: none).
        session_id: i32,
        /// Per partition: every partition read in a sessionless or full fetch; in an
        /// incremental one, only those with something new (records, a HW or log start
        /// change, an error, a divergence).
        partitions: Vec<FetchPartitionResponse>,
    },
    /// To `ListOffsets`.
    ListOffsets {
        /// Per partition, in request order.
        partitions: Vec<ListOffsetsPartitionResponse>,
    },
    /// To `DeleteRecords`.
    DeleteRecords {
        /// `(partition, error, low watermark)`.
        partitions: Vec<(TopicPartition, ErrorCode, Offset)>,
    },
    /// To `OffsetsForLeaderEpoch`.
    OffsetsForLeaderEpoch {
        /// `(partition, error, end offset and epoch)`.
        partitions: Vec<(TopicPartition, ErrorCode, OffsetAndEpoch)>,
    },
    /// To `FindCoordinator`.
    FindCoordinator {
        /// Error.
        error: ErrorCode,
        /// The coordinator broker.
        node: Option<BrokerId>,
    },
    /// To `InitProducerId`.
    InitProducerId {
        /// Error.
        error: ErrorCode,
        /// Producer id.
        producer_id: ProducerId,
        /// Producer epoch.
        producer_epoch: ProducerEpoch,
    },
    /// To `EndTxn`, `GroupHeartbeat`, `LeaveGroup`: one error.
    Error {
        /// Error.
        error: ErrorCode,
    },
    /// To `OffsetFetch`.
    OffsetFetch {
        /// Error.
        error: ErrorCode,
        /// Committed offsets.
        offsets: BTreeMap<TopicPartition, (Offset, Option<LeaderEpoch>)>,
    },
    /// KIP-1279: to `CreateMirror`, `DeleteMirror`, `Start/Stop/Pause/ResumeMirrorTopics`.
    /// The top-level error and message are the first topic error's (or the request's own,
    /// e.g. CLUSTER_MIRROR_ALREADY_EXISTS, which has no topics).
    MirrorAdmin {
        /// Top-level error.
        error: ErrorCode,
        /// Top-level message.
        message: Option<String>,
        /// Per topic, in request order (`DeleteMirror`: the topics it released, or the ones
        /// that are not stopped).
        topics: Vec<MirrorTopicResult>,
    },
    /// KIP-1279: to `ListMirrors`.
    ListMirrors {
        /// Error.
        error: ErrorCode,
        /// Mirrors by name.
        mirrors: Vec<MirrorListing>,
    },
    /// KIP-1279: to `DescribeMirrors`.
    DescribeMirrors {
        /// Mirrors.
        mirrors: Vec<MirrorDescription>,
    },
    /// KIP-1279: to `ReadMirrorStates`.
    ReadMirrorStates {
        /// Top-level error (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, ...).
        error: ErrorCode,
        /// Per topic.
        topics: Vec<ReadMirrorStatesTopicResult>,
    },
    /// KIP-1279: to `WriteMirrorStates`.
    WriteMirrorStates {
        /// Top-level error.
        error: ErrorCode,
        /// Per topic.
        topics: Vec<WriteMirrorStatesTopicResult>,
    },
    /// To `DescribeTopicConfigs`.
    DescribeTopicConfigs {
        /// `(topic, error (UNKNOWN_TOPIC_OR_PARTITION), dynamic configs)`, in request order.
        topics: Vec<(String, ErrorCode, BTreeMap<String, String>)>,
    },
    /// To `ListGroups`.
    ListGroups {
        /// Group ids known to the group coordinators the answering broker hosts, sorted.
        groups: Vec<String>,
    },
    /// To `CreateAcls`: `(error, message)` per creation, in request order.
    CreateAcls {
        /// Per creation.
        results: Vec<(ErrorCode, Option<String>)>,
    },
    /// To `DeleteAcls`: one result per filter, in request order.
    DeleteAcls {
        /// Per filter.
        results: Vec<DeleteAclsFilterResult>,
    },
    /// To `DescribeAcls`.
    DescribeAcls {
        /// Error.
        error: ErrorCode,
        /// The matching ACLs, sorted.
        acls: Vec<AclBinding>,
    },
}

/// A topic to create.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "fuzz", derive(arbitrary::Arbitrary))]
pub struct CreatableTopic {
    /// Name.
    #[cfg_attr(feature = "fuzz", arbitrary(with = crate::fuzz::topic_name))]
    pub name: String,
    /// Partition count.
    pub num_partitions: i32,
    /// Replication factor (`-1` = the cluster default).
    pub replication_factor: i16,
    /// Topic configs.
    #[cfg_attr(feature = "fuzz", arbitrary(with = crate::fuzz::configs))]
    pub configs: BTreeMap<String, String>,
    /// KIP-1279 `MirrorInfo`: create with this id (the source topic's).
    pub topic_id: Option<TopicId>,
}

/// What `ListOffsets` asks for: Kafka's `timestamp` field, its special values named.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "fuzz", derive(arbitrary::Arbitrary))]
pub enum OffsetSpec {
    /// The log start offset (`EARLIEST_TIMESTAMP`, -2).
    Earliest,
    /// HW (read_uncommitted) or LSO (read_committed); the LEO for a replica
    /// (`LATEST_TIMESTAMP`, -1).
    Latest,
    /// The record with the largest timestamp (`MAX_TIMESTAMP`, -3, KIP-734).
    MaxTimestamp,
    /// The local log start offset (`EARLIEST_LOCAL_TIMESTAMP`, -4, KIP-405): the log start
    /// without tiered storage.
    EarliestLocal,
    /// The highest offset in remote storage (`LATEST_TIERED_TIMESTAMP`, -5, KIP-1005): offset
    /// -1 without tiered storage.
    LatestTiered,
    /// The first offset not uploaded to remote storage (`EARLIEST_PENDING_UPLOAD_TIMESTAMP`,
    /// -6, KIP-1023): offset -1 without tiered storage.
    EarliestPendingUpload,
    /// The first offset whose record timestamp is at or above this one. A negative value is
    /// taken as Kafka's wire field would be: one of the special timestamps above, or, below
    /// -6, a search that every record matches.
    Timestamp(i64),
}

impl OffsetSpec {
    /// Kafka's wire `timestamp` for this spec.
    #[must_use]
    pub fn timestamp(self) -> i64 {
        use crate::log::offset_for_timestamp as t;
        match self {
            OffsetSpec::Earliest => t::EARLIEST_TIMESTAMP,
            OffsetSpec::Latest => t::LATEST_TIMESTAMP,
            OffsetSpec::MaxTimestamp => t::MAX_TIMESTAMP,
            OffsetSpec::EarliestLocal => t::EARLIEST_LOCAL_TIMESTAMP,
            OffsetSpec::LatestTiered => t::LATEST_TIERED_TIMESTAMP,
            OffsetSpec::EarliestPendingUpload => t::EARLIEST_PENDING_UPLOAD_TIMESTAMP,
            OffsetSpec::Timestamp(ts) => ts,
        }
    }
}

/// One partition of a `ListOffsets` response (Kafka: `ListOffsetsPartitionResponse`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListOffsetsPartitionResponse {
    /// Partition.
    pub tp: TopicPartition,
    /// Error.
    pub error: ErrorCode,
    /// The found record's timestamp; -1 (`UNKNOWN_TIMESTAMP`) for EARLIEST, LATEST and the
    /// other special timestamps except MAX_TIMESTAMP, and for errors.
    pub timestamp: i64,
    /// The offset, -1 when none was found or on error.
    pub offset: Offset,
    /// The offset's leader epoch, -1 when unknown.
    pub leader_epoch: LeaderEpoch,
}

/// Coordinator types for `FindCoordinator`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "fuzz", derive(arbitrary::Arbitrary))]
pub enum CoordinatorKind {
    /// Consumer groups (`__consumer_offsets`).
    Group,
    /// Transactions (`__transaction_state`).
    Transaction,
    /// KIP-1279 mirrors (`__mirror_state`).
    Mirror,
}

/// A fetch request's session fields (KIP-227; Kafka: `FetchMetadata`): `(0, -1)` is a
/// sessionless fetch, `(0, 0)` a full fetch that opens a session, `(id, 0)` a full fetch
/// that closes session `id` and opens another, `(id, n > 0)` the `n`th incremental fetch of
/// session `id`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "fuzz", derive(arbitrary::Arbitrary))]
pub struct FetchSessionMeta {
    /// The session id (0: none).
    pub id: i32,
    /// The session epoch: 0 opens a session, -1 asks for none.
    pub epoch: i32,
}

impl FetchSessionMeta {
    /// Kafka `INVALID_SESSION_ID`.
    pub const NO_SESSION: i32 = 0;
    /// Kafka `INITIAL_EPOCH`: a full fetch that opens a session.
    pub const INITIAL_EPOCH: i32 = 0;
    /// Kafka `FINAL_EPOCH`: a full fetch that opens none.
    pub const FINAL_EPOCH: i32 = -1;
    /// A sessionless fetch (consumers and the mirror fetcher here).
    pub const SESSIONLESS: Self = Self {
        id: Self::NO_SESSION,
        epoch: Self::FINAL_EPOCH,
    };
    /// A follower's first fetch to a leader (Kafka: `FetchMetadata.INITIAL`).
    pub const INITIAL: Self = Self {
        id: Self::NO_SESSION,
        epoch: Self::INITIAL_EPOCH,
    };

    /// A full fetch (names every partition) rather than an incremental one.
    #[must_use]
    pub fn is_full(self) -> bool {
        self.epoch == Self::INITIAL_EPOCH || self.epoch == Self::FINAL_EPOCH
    }

    /// Kafka `FetchMetadata.nextEpoch`: 1 after `i32::MAX`, never back to 0.
    #[must_use]
    pub fn next_epoch(epoch: i32) -> i32 {
        if epoch < 0 {
            Self::FINAL_EPOCH
        } else if epoch == i32::MAX {
            1
        } else {
            epoch + 1
        }
    }

    /// Kafka `nextCloseExisting`: after an error, a full fetch that closes this session.
    #[must_use]
    pub fn close_existing(self) -> Self {
        Self {
            id: self.id,
            epoch: Self::INITIAL_EPOCH,
        }
    }

    /// Kafka `nextIncremental`: the next fetch of the same session.
    #[must_use]
    pub fn next_incremental(self) -> Self {
        Self {
            id: self.id,
            epoch: Self::next_epoch(self.epoch),
        }
    }
}

/// One partition of a fetch request.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "fuzz", derive(arbitrary::Arbitrary))]
pub struct FetchPartition {
    /// Partition.
    pub tp: TopicPartition,
    /// First offset wanted.
    pub fetch_offset: Offset,
    /// The fetcher's view of the leader epoch (fencing).
    pub current_leader_epoch: Option<LeaderEpoch>,
    /// Epoch of the last fetched batch (divergence check, KIP-595 / Fetch v12).
    pub last_fetched_epoch: Option<LeaderEpoch>,
    /// A follower's log start (informational).
    pub log_start_offset: Offset,
    /// Fetch v13+ names topics by id; `Some` makes the leader refuse a partition whose topic
    /// has another id (UNKNOWN_TOPIC_ID), so a topic re-created under the same name is never
    /// read as the old one. `None`: by name only.
    pub topic_id: Option<TopicId>,
}

/// One partition of a fetch response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FetchPartitionResponse {
    /// Partition.
    pub tp: TopicPartition,
    /// Error.
    pub error: ErrorCode,
    /// Leader HW.
    pub high_watermark: Offset,
    /// Leader LSO.
    pub last_stable_offset: Offset,
    /// Leader log start.
    pub log_start_offset: Offset,
    /// Set when the fetcher's log diverges (no records then).
    pub diverging_epoch: Option<OffsetAndEpoch>,
    /// For read_committed.
    pub aborted_transactions: Option<Vec<AbortedTxn>>,
    /// Whole batches, byte for byte.
    pub batches: Vec<RecordBatch>,
}

/// One partition of a produce response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProducePartitionResponse {
    /// Partition.
    pub tp: TopicPartition,
    /// Error.
    pub error: ErrorCode,
    /// First offset of the appended (or duplicate) batch.
    pub base_offset: Offset,
    /// Log start at append time.
    pub log_start_offset: Offset,
}

/// A transaction marker to write on a set of partitions.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "fuzz", derive(arbitrary::Arbitrary))]
pub struct TxnMarker {
    /// Producer id.
    pub producer_id: ProducerId,
    /// Producer epoch the marker is written with.
    pub producer_epoch: ProducerEpoch,
    /// True for COMMIT.
    pub commit: bool,
    /// The coordinator epoch (fencing of zombie coordinators).
    pub coordinator_epoch: i32,
    /// Partitions.
    pub partitions: Vec<TopicPartition>,
}

/// Topic metadata for clients.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicMetadata {
    /// Name.
    pub name: String,
    /// Id.
    pub topic_id: TopicId,
    /// Error (UNKNOWN_TOPIC_OR_PARTITION).
    pub error: ErrorCode,
    /// Partitions.
    pub partitions: Vec<PartitionMetadata>,
}

/// Partition metadata for clients.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionMetadata {
    /// Partition index.
    pub partition: i32,
    /// Leader, if any.
    pub leader: Option<BrokerId>,
    /// Leader epoch.
    pub leader_epoch: LeaderEpoch,
    /// Replicas.
    pub replicas: Vec<BrokerId>,
    /// ISR.
    pub isr: Vec<BrokerId>,
}

/// KIP-1279 `MirrorTopicMetadata`: a topic to start mirroring, as the source describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "fuzz", derive(arbitrary::Arbitrary))]
pub struct MirrorTopic {
    /// Name (the same on both clusters).
    #[cfg_attr(feature = "fuzz", arbitrary(with = crate::fuzz::topic_name))]
    pub name: String,
    /// The source topic id; the destination topic is created with it. `ZERO` (pre-2.8
    /// source) = keep the existing id or generate one.
    pub topic_id: TopicId,
    /// The source partition count; the destination topic is created with it.
    pub num_partitions: i32,
}

/// KIP-1279: one topic's outcome in a mirror admin response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MirrorTopicResult {
    /// Topic name.
    pub name: String,
    /// Error.
    pub error: ErrorCode,
    /// Why, for an error (KIP-1279 AS33: per-topic error messages).
    pub message: Option<String>,
}

/// KIP-1279 `ListClusterMirrors` filters (prototype `ListClusterMirrorsOptions`):
/// `mirrorNameFilter`, `sourceClusterIdFilter`, `desiredStateFilter`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "fuzz", derive(arbitrary::Arbitrary))]
pub struct ListMirrorsFilter {
    /// Only these mirrors (`None`: every mirror).
    pub mirror_names: Option<Vec<String>>,
    /// Only mirrors whose source has one of these cluster ids (`None`: every source).
    pub source_cluster_ids: Option<Vec<String>>,
    /// The topics listed under each mirror: those whose desired state is one of these.
    /// `None` is the prototype's default, MIRRORING and PAUSED. Mirrors are listed even when
    /// none of their topics pass (with no topics).
    pub desired_states: Option<Vec<DesiredMirrorState>>,
}

impl ListMirrorsFilter {
    /// The prototype's default desired-state filter: MIRRORING and PAUSED.
    pub const DEFAULT_DESIRED_STATES: [DesiredMirrorState; 2] =
        [DesiredMirrorState::Mirroring, DesiredMirrorState::Paused];

    /// Whether mirror `name` with source cluster id `source_id` is listed.
    #[must_use]
    pub fn lists_mirror(&self, name: &str, source_id: Option<&str>) -> bool {
        self.mirror_names
            .as_ref()
            .is_none_or(|n| n.iter().any(|m| m == name))
            && self
                .source_cluster_ids
                .as_ref()
                .is_none_or(|ids| source_id.is_some_and(|s| ids.iter().any(|i| i == s)))
    }

    /// Whether a topic with this desired state is listed under its mirror.
    #[must_use]
    pub fn lists_topic(&self, desired: DesiredMirrorState) -> bool {
        match &self.desired_states {
            Some(states) => states.contains(&desired),
            None => Self::DEFAULT_DESIRED_STATES.contains(&desired),
        }
    }
}

/// KIP-1279: one mirror in a `ListMirrors` response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MirrorListing {
    /// Mirror name.
    pub mirror_name: String,
    /// The `source.cluster` config.
    pub source: String,
    /// The `source.cluster.id` config, once learned.
    pub source_cluster_id: Option<String>,
    /// Topics whose `mirror.name` names this mirror, with their desired state, by name.
    pub topics: Vec<(String, DesiredMirrorState)>,
}

/// KIP-1279: one mirror in a `DescribeMirrors` response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MirrorDescription {
    /// Mirror name.
    pub mirror_name: String,
    /// Error (UNKNOWN_CLUSTER_MIRROR for a requested name that does not exist).
    pub error: ErrorCode,
    /// The mirror's source (`source.cluster`).
    pub source: String,
    /// Topics.
    pub topics: Vec<MirrorTopicDescription>,
}

/// KIP-1279: one topic in a `DescribeMirrors` response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MirrorTopicDescription {
    /// Topic name.
    pub name: String,
    /// The topic's desired state in this mirror per the answering broker's metadata image
    /// (what `ListClusterMirrors` answers; the failback loop check), `None` when the topic
    /// is not in the mirror there.
    pub desired: Option<crate::protocol::metadata::DesiredMirrorState>,
    /// Partitions this broker leads (brokers answer local-only).
    pub partitions: Vec<MirrorPartitionDescription>,
}

/// KIP-1279: one partition in a `DescribeMirrors` response (wire widths; `-1` = unknown).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MirrorPartitionDescription {
    /// Partition index.
    pub partition: i32,
    /// The partition state's name (`MIRRORING`, `STOPPED`, ...).
    pub state: String,
    /// Last mirror epoch (LME), `-1` when unknown.
    pub last_mirror_epoch: i32,
    /// Last mirror offset, `-1` when unknown.
    pub last_mirror_offset: i64,
    /// The source high watermark the mirror fetcher last saw, `-1` when the partition is
    /// not being fetched (not MIRRORING) or no fetch answered yet.
    pub source_offset: i64,
    /// The destination log end offset, `-1` when the partition is not being fetched.
    pub destination_offset: i64,
    /// The FAILED reason, if any.
    pub error_message: Option<String>,
    /// FAILED retries so far: 0 when not failed, -1 when non-retryable.
    pub retry_attempt: i16,
}

/// KIP-1279: one topic of a `ReadMirrorStates` request.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "fuzz", derive(arbitrary::Arbitrary))]
pub struct ReadMirrorStatesTopic {
    /// Topic name.
    #[cfg_attr(feature = "fuzz", arbitrary(with = crate::fuzz::topic_name))]
    pub name: String,
    /// Topic id (part of the `__mirror_state` key; carried so the coordinator needs no
    /// name lookup and a recreated topic never reads its predecessor's state).
    pub topic_id: TopicId,
    /// Partition indexes.
    pub partitions: Vec<i32>,
}

/// KIP-1279: one topic of a `ReadMirrorStates` response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadMirrorStatesTopicResult {
    /// Topic name.
    pub name: String,
    /// Topic-level error.
    pub error: ErrorCode,
    /// Topic-level message.
    pub message: Option<String>,
    /// Per partition.
    pub partitions: Vec<MirrorPartitionStateData>,
}

/// KIP-1279 `MirrorPartitionStateValue` plus `LastMirrorEpochs`, as `ReadMirrorStates`
/// returns them for one partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MirrorPartitionStateData {
    /// Partition index.
    pub partition: i32,
    /// Per-partition error.
    pub error: ErrorCode,
    /// Partition state (wire `int8`; the mirror module owns the enum; -1 = UNKNOWN).
    pub state: i8,
    /// Leader epoch of the leader that wrote it (`None` = not recorded).
    pub leader_epoch: Option<LeaderEpoch>,
    /// State epoch: +1 on every successful write.
    pub state_epoch: i32,
    /// Last mirror epoch (LME), `None` = unknown (-1 on the wire).
    pub last_mirror_epoch: Option<LeaderEpoch>,
    /// Last mirror offset, `None` = unknown.
    pub last_mirror_offset: Option<Offset>,
    /// The FAILED reason, if any.
    pub error_message: Option<String>,
    /// FAILED retries so far; `-1` = non-retryable.
    pub retry_attempt: i16,
    /// The state before FAILED (retry target; wire `int8`, -1 = UNKNOWN).
    pub previous_state: i8,
}

/// KIP-1279: one topic of a `WriteMirrorStates` request.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "fuzz", derive(arbitrary::Arbitrary))]
pub struct WriteMirrorStatesTopic {
    /// Topic name.
    #[cfg_attr(feature = "fuzz", arbitrary(with = crate::fuzz::topic_name))]
    pub name: String,
    /// Topic id (part of the `__mirror_state` key).
    pub topic_id: TopicId,
    /// Partition writes.
    pub partitions: Vec<MirrorPartitionStateWrite>,
}

/// KIP-1279: one partition state write.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "fuzz", derive(arbitrary::Arbitrary))]
pub struct MirrorPartitionStateWrite {
    /// Partition index.
    pub partition: i32,
    /// Target state (wire `int8`; -1 = UNKNOWN writes only the last mirror epoch).
    pub state: i8,
    /// The writer's leader epoch; `None` skips leader-epoch fencing (-1 on the wire).
    pub leader_epoch: Option<LeaderEpoch>,
    /// The state epoch the write is based on; `None` skips state-epoch fencing.
    pub state_epoch: Option<i32>,
    /// Last mirror epoch to record, if any.
    pub last_mirror_epoch: Option<LeaderEpoch>,
    /// Last mirror offset to record, if any.
    pub last_mirror_offset: Option<Offset>,
    /// The FAILED reason, if any.
    pub error_message: Option<String>,
    /// FAILED retries; `-1` = non-retryable.
    pub retry_attempt: i16,
    /// The state before FAILED (wire `int8`, -1 = UNKNOWN).
    pub previous_state: i8,
}

/// KIP-1279: one topic of a `WriteMirrorStates` response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteMirrorStatesTopicResult {
    /// Topic name.
    pub name: String,
    /// Topic-level error.
    pub error: ErrorCode,
    /// Topic-level message.
    pub message: Option<String>,
    /// `(partition, error, new state epoch)`; the epoch is `-1` when fenced.
    pub partitions: Vec<(i32, ErrorCode, i32)>,
}
