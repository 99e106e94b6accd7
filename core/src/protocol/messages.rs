//! Requests and responses exchanged by simulated nodes. They carry Kafka's fields with
//! Kafka's names, in memory (the simulator does not serialize them; record batches are the
//! real v2 bytes). Every response carries error codes per partition or per topic, as Kafka's do.

use std::collections::BTreeMap;

use super::ErrorCode;
use super::metadata::{ConfigResource, MetadataRecord};
use crate::log::txn_index::AbortedTxn;
use crate::record::RecordBatch;
use crate::replication::fetch_leader::FetchIsolation;
use crate::types::{
    BrokerId, LeaderEpoch, Offset, OffsetAndEpoch, ProducerEpoch, ProducerId, TopicId,
    TopicPartition,
};

/// A request, by API.
#[derive(Clone, Debug, PartialEq)]
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
        names: Vec<String>,
    },
    /// Raises a topic's partition count.
    CreatePartitions {
        /// Topic name.
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
    },
    /// Sets or deletes config keys (Kafka: `IncrementalAlterConfigs`).
    IncrementalAlterConfigs {
        /// The resource.
        resource: ConfigResource,
        /// `(key, Some(value))` sets, `(key, None)` deletes.
        ops: Vec<(String, Option<String>)>,
    },

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
        /// Partitions to fetch.
        partitions: Vec<FetchPartition>,
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
        group_id: String,
        /// Member committing, `None` for an admin/simple commit.
        member_id: Option<String>,
        /// `(partition, offset, leader epoch of the record before it)`.
        offsets: Vec<(TopicPartition, Offset, Option<LeaderEpoch>)>,
    },
    /// Reads committed offsets (Kafka: `OffsetFetch`).
    OffsetFetch {
        /// Group id.
        group_id: String,
        /// `None` = all partitions of the group.
        partitions: Option<Vec<TopicPartition>>,
    },
    /// Simplified group membership: keeps `member_id` alive in `group_id` (stands in for
    /// JoinGroup/SyncGroup/Heartbeat; assignment is done by the workload).
    GroupHeartbeat {
        /// Group id.
        group_id: String,
        /// Member id.
        member_id: String,
        /// Member expires after this long without a heartbeat.
        session_timeout_ms: i64,
    },
    /// Removes a member (Kafka: `LeaveGroup`).
    LeaveGroup {
        /// Group id.
        group_id: String,
        /// Member id.
        member_id: String,
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
        /// Top-level error (e.g. stale broker epoch).
        error: ErrorCode,
        /// Per partition.
        partitions: Vec<FetchPartitionResponse>,
    },
    /// To `ListOffsets`.
    ListOffsets {
        /// `(partition, error, offset, leader epoch)`.
        partitions: Vec<(TopicPartition, ErrorCode, Offset, LeaderEpoch)>,
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
}

/// A topic to create.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CreatableTopic {
    /// Name.
    pub name: String,
    /// Partition count.
    pub num_partitions: i32,
    /// Replication factor (`-1` = the cluster default).
    pub replication_factor: i16,
    /// Topic configs.
    pub configs: BTreeMap<String, String>,
    /// KIP-1279 `MirrorInfo`: create with this id (the source topic's).
    pub topic_id: Option<TopicId>,
}

/// What `ListOffsets` asks for.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum OffsetSpec {
    /// The log start offset.
    Earliest,
    /// HW (read_uncommitted) or LSO (read_committed).
    Latest,
}

/// Coordinator types for `FindCoordinator`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CoordinatorKind {
    /// Consumer groups (`__consumer_offsets`).
    Group,
    /// Transactions (`__transaction_state`).
    Transaction,
    /// KIP-1279 mirrors (`__mirror_state`).
    Mirror,
}

/// One partition of a fetch request.
#[derive(Clone, Debug, PartialEq, Eq)]
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
