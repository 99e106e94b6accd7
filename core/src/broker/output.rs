//! What a node (broker or controller) asks its driver to do ([`Output`]) and the facts it
//! reports ([`Event`]). The driver performs sends and disk operations in order; events feed
//! traces and checkers and are never read back by the node.

use bytes::Bytes;

use crate::protocol::metadata::MetadataRecord;
use crate::protocol::{CorrelationId, NodeId, Request, Response};
use crate::time::Instant;
use crate::types::{BrokerId, LeaderEpoch, Offset, TopicPartition};

/// A message on the wire.
#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    /// A request expecting a response with the same correlation id.
    Request(Request),
    /// A response.
    Response(Response),
}

/// A disk operation on a broker-local file. Files are paths relative to the broker's log
/// directory. Appends and truncations land in the page cache; only `Flush` makes them
/// durable; `WriteAtomic` is Kafka's write-temp-fsync-rename for checkpoints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IoOp {
    /// Appends bytes to a file.
    Append {
        /// File.
        path: String,
        /// Bytes.
        bytes: Bytes,
    },
    /// Cuts a file to `len` bytes.
    Truncate {
        /// File.
        path: String,
        /// New length.
        len: u64,
    },
    /// fsync.
    Flush {
        /// File.
        path: String,
    },
    /// Atomically replaces a file with durable contents (checkpoints, snapshots).
    WriteAtomic {
        /// File.
        path: String,
        /// Contents.
        bytes: Bytes,
    },
    /// Deletes a file (durably).
    Delete {
        /// File.
        path: String,
    },
}

/// Why a replica truncated its log.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum TruncationCause {
    /// A fetch response carried a diverging epoch (KIP-595 truncate-on-fetch).
    DivergingEpoch,
    /// OFFSET_OUT_OF_RANGE with the leader's LEO below ours (after an unclean election).
    LeaderEndBelowLocal,
    /// OFFSET_OUT_OF_RANGE below the leader's log start: the log starts over.
    BelowLeaderLogStart,
    /// No epoch information: truncate to the HW (pre-KIP-101 path).
    HighWatermark,
    /// Crash recovery cut a torn or unflushed tail.
    Recovery,
    /// KIP-1279 mirror rules (LME truncation, LSO truncation at stop).
    Mirror,
    /// A test called `UnifiedLog.truncateTo` on this replica directly (the
    /// `TestTruncateLog` hook: a simulated unclean election or lost tail).
    TestHook,
}

/// A fact about the broker, for traces and checkers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// Registered with the controller.
    Registered {
        /// The new broker epoch.
        broker_epoch: i64,
    },
    /// Recovered a partition's log from disk.
    LogRecovered {
        /// Partition.
        tp: TopicPartition,
        /// Recovered LEO.
        log_end_offset: Offset,
        /// Bytes dropped from a torn or corrupt tail.
        truncated_bytes: u64,
        /// The recovery's inputs and result, for the checker that repeats it.
        record: std::sync::Arc<super::recovery::RecoveryRecord>,
    },
    /// Loading a partition's segments at start-up (before metadata names the replica) found a
    /// whole batch that fails its CRC in a scanned segment, and cut the log there: flushed
    /// data this replica had is gone (bit rot).
    CorruptBatchCut {
        /// Partition.
        tp: TopicPartition,
        /// The first offset lost (the new log end).
        at: Offset,
        /// Bytes cut from the files (the rest of the segment and every later one).
        truncated_bytes: u64,
    },
    /// Became leader.
    BecameLeader {
        /// Partition.
        tp: TopicPartition,
        /// Leader epoch.
        leader_epoch: LeaderEpoch,
        /// ISR.
        isr: Vec<BrokerId>,
    },
    /// Became (or stayed) a follower of a new leader or epoch.
    BecameFollower {
        /// Partition.
        tp: TopicPartition,
        /// Leader, if any.
        leader: Option<BrokerId>,
        /// Leader epoch.
        leader_epoch: LeaderEpoch,
    },
    /// A batch was appended.
    Appended {
        /// Partition.
        tp: TopicPartition,
        /// First offset.
        base_offset: Offset,
        /// Last offset.
        last_offset: Offset,
        /// The batch's partition leader epoch.
        epoch: LeaderEpoch,
        /// True for leader appends, false for replication.
        as_leader: bool,
    },
    /// The log was truncated.
    Truncated {
        /// Partition.
        tp: TopicPartition,
        /// LEO before.
        from: Offset,
        /// LEO after.
        to: Offset,
        /// HW before the truncation.
        high_watermark_before: Offset,
        /// Why.
        cause: TruncationCause,
    },
    /// A follower's append of fetched records was refused in a way Kafka does not retry
    /// (`AbstractFetcherThread.markPartitionFailed`): the partition leaves its fetcher until
    /// its next leader epoch.
    FetchPartitionFailed {
        /// Partition.
        tp: TopicPartition,
        /// The leader it was fetching from.
        leader: BrokerId,
        /// The follower's LEO when the append was refused.
        log_end_offset: Offset,
        /// Why (the append error).
        reason: String,
    },
    /// The log was emptied and restarted at `start`.
    TruncatedFully {
        /// Partition.
        tp: TopicPartition,
        /// LEO before.
        from: Offset,
        /// New start.
        start: Offset,
        /// Why.
        cause: TruncationCause,
    },
    /// The HW moved.
    HighWatermarkChanged {
        /// Partition.
        tp: TopicPartition,
        /// New HW.
        high_watermark: Offset,
    },
    /// The log start moved.
    LogStartChanged {
        /// Partition.
        tp: TopicPartition,
        /// New log start.
        log_start_offset: Offset,
    },
    /// The leader committed a new ISR.
    IsrChanged {
        /// Partition.
        tp: TopicPartition,
        /// ISR.
        isr: Vec<BrokerId>,
    },
    /// The broker stopped: a disk failure on its only log directory (Kafka halts).
    Halted {
        /// Why.
        reason: String,
    },
    /// Controller: a partition got a new leader (or none).
    LeaderElected {
        /// Partition.
        tp: TopicPartition,
        /// New leader (`None` = offline).
        leader: Option<BrokerId>,
        /// New leader epoch.
        leader_epoch: LeaderEpoch,
        /// ISR after the election.
        isr: Vec<BrokerId>,
        /// True for an unclean election (a declared data-loss event).
        unclean: bool,
    },
    /// Client: a produce was acknowledged (the ghost's "acknowledged writes").
    ProduceAcked {
        /// Client number.
        client: u32,
        /// Partition.
        tp: TopicPartition,
        /// Offset of the first record.
        base_offset: Offset,
        /// Record values, in offset order (values are unique per workload record).
        values: Vec<Bytes>,
        /// The acks the producer used.
        acks: i16,
        /// Producer id (-1 for a plain producer).
        producer_id: crate::types::ProducerId,
        /// True for transactional writes (visible to read_committed only after COMMIT).
        transactional: bool,
    },
    /// Client: a produce failed for good (after retries).
    ProduceFailed {
        /// Client number.
        client: u32,
        /// Partition.
        tp: TopicPartition,
        /// The record values it gave up on (they may still have been written).
        values: Vec<Bytes>,
        /// The last error.
        error: crate::protocol::ErrorCode,
    },
    /// Client: a broker refused a produce for its producer id, epoch or sequence
    /// (OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH, PRODUCER_FENCED,
    /// UNKNOWN_PRODUCER_ID), whatever the client did next.
    ProducerStateRefused {
        /// Client number.
        client: u32,
        /// Partition.
        tp: TopicPartition,
        /// The producer id the batch carried.
        producer_id: crate::types::ProducerId,
        /// Its epoch.
        producer_epoch: crate::types::ProducerEpoch,
        /// Its base sequence.
        sequence: crate::types::Sequence,
        /// The broker's error.
        error: crate::protocol::ErrorCode,
    },
    /// Client: a transaction ended.
    TxnEnded {
        /// Client number.
        client: u32,
        /// Producer id.
        producer_id: crate::types::ProducerId,
        /// True for commit.
        commit: bool,
        /// Result.
        error: crate::protocol::ErrorCode,
    },
    /// Client: a consumer returned a record to its application.
    Consumed {
        /// Client number.
        client: u32,
        /// Partition.
        tp: TopicPartition,
        /// Offset.
        offset: Offset,
        /// Record value.
        value: Bytes,
        /// True for read_committed consumers.
        read_committed: bool,
    },
    /// Client: a consumer committed offsets.
    OffsetsCommitted {
        /// Client number.
        client: u32,
        /// Group.
        group: String,
        /// Partition and offset.
        offsets: Vec<(TopicPartition, Offset)>,
    },
    /// Client: an admin operation finished.
    AdminResult {
        /// Client number.
        client: u32,
        /// What was asked (`create_topics orders`, `elect_leaders unclean t-0`, ...).
        operation: String,
        /// Result.
        error: crate::protocol::ErrorCode,
    },
    /// KIP-1279: a mirror partition's persisted state changed.
    MirrorStateChanged {
        /// Partition.
        tp: TopicPartition,
        /// Previous state.
        from: crate::mirror::MirrorPartitionState,
        /// New state.
        to: crate::mirror::MirrorPartitionState,
        /// New state epoch.
        state_epoch: i32,
        /// Leader epoch of the writer.
        leader_epoch: LeaderEpoch,
        /// Why, for a transition to FAILED (the `error_message` persisted with it).
        reason: Option<String>,
    },
    /// KIP-1279: a STOPPED leader re-read its `__mirror_state` record and found an older
    /// state than the STOPPED it had seen committed: the coordinator lost its tail (a
    /// declared loss), or its HW has not reached the records yet (a new coordinator leader
    /// alone below min.insync.replicas). The partition stays STOPPED (writable) and the
    /// record is written forward again from the older state, instead of re-running the stop
    /// plan on a log that has taken the failover's writes.
    MirrorStateRegressed {
        /// Partition.
        tp: TopicPartition,
        /// The state read back.
        read: crate::mirror::MirrorPartitionState,
        /// Its state epoch.
        read_state_epoch: i32,
        /// The state epoch of the STOPPED record this leader saw committed.
        confirmed_state_epoch: i32,
        /// The state written to repair the record (STOPPING from an older PREPARING,
        /// MIRRORING or FAILED; STOPPED from STOPPING).
        writing: crate::mirror::MirrorPartitionState,
    },
    /// KIP-1279 PREPARING: the log was aligned with the LME from the other cluster.
    MirrorAligned {
        /// Partition.
        tp: TopicPartition,
        /// The LME found (-1: none, truncated fully).
        last_mirrored_epoch: i32,
        /// LEO after the truncation.
        log_end_offset: Offset,
    },
    /// KIP-1279 STOPPING: the LME recorded for a future failback.
    MirrorLastMirroredEpoch {
        /// Partition.
        tp: TopicPartition,
        /// The LME.
        last_mirrored_epoch: LeaderEpoch,
        /// LEO at the time.
        log_end_offset: Offset,
    },
    /// KIP-1279: a batch fetched from the source was appended unchanged.
    MirrorAppended {
        /// Partition.
        tp: TopicPartition,
        /// First offset.
        base_offset: Offset,
        /// Last offset.
        last_offset: Offset,
        /// The batch's (source) epoch.
        epoch: LeaderEpoch,
    },
    /// KIP-1279: the source answered a diverging epoch (source data loss); the mirror
    /// truncates like a follower (a declared data-loss event).
    MirrorDiverged {
        /// Partition.
        tp: TopicPartition,
        /// The source's epoch.
        diverging_epoch: LeaderEpoch,
        /// Its end offset.
        end_offset: Offset,
        /// Where the mirror truncated.
        truncate_to: Offset,
    },
    /// KIP-1279 latest (B §8.4): the mirror leader asked the controller to bump its leader
    /// epoch above the source's, reactively (EPOCH_FENCING: a fetched batch above the local
    /// epoch was not appended) or proactively (a batch within the threshold, appended).
    MirrorEpochBumpRequested {
        /// Partition.
        tp: TopicPartition,
        /// The highest fetched batch epoch (-1 for the EPOCH_FENCING re-drive).
        batch_epoch: LeaderEpoch,
        /// The local (destination) leader epoch.
        local_epoch: LeaderEpoch,
        /// The `MinLeaderEpoch` asked for.
        min_leader_epoch: LeaderEpoch,
        /// Proactive (appended anyway) rather than reactive.
        proactive: bool,
    },
    /// KIP-1279 latest (B §8.4, mechanism 3): the mirror coordinator's periodic sync asks
    /// for a leader epoch above a source epoch that came within the threshold of the local
    /// one (the prototype's `maybeBumpLeaderEpochs`).
    MirrorSyncEpochBump {
        /// Partition.
        tp: TopicPartition,
        /// The source leader epoch the sync's source metadata gave.
        source_epoch: LeaderEpoch,
        /// The local (destination) leader epoch in this broker's metadata image.
        local_epoch: LeaderEpoch,
        /// The `MinLeaderEpoch` asked for (source epoch + the increment).
        min_leader_epoch: LeaderEpoch,
    },
    /// KIP-1279 latest (B §7.6-2): a FAILED retry found its previous state not enterable
    /// from FAILED and was skipped; the partition stays FAILED with no further retry.
    MirrorRetrySkipped {
        /// Partition.
        tp: TopicPartition,
        /// The previous state the retry would have returned to.
        target: crate::mirror::MirrorPartitionState,
        /// The retry attempt.
        attempt: i16,
    },
    /// KIP-1279: the source's log start passed the mirror; the log restarts there.
    MirrorLogStartReset {
        /// Partition.
        tp: TopicPartition,
        /// New start.
        start: Offset,
    },
    /// KIP-1279 metadata sync: the mirror coordinator set source topic configs on the
    /// destination (B §8.11).
    MirrorConfigsSynced {
        /// Mirror.
        mirror: String,
        /// Topic.
        topic: String,
        /// `(key, value)` set.
        configs: Vec<(String, String)>,
        /// The controller's answer.
        error: crate::protocol::ErrorCode,
    },
    /// KIP-1279 metadata sync: a source group's offsets were committed on the destination
    /// (`UNKNOWN_MEMBER_ID`: skipped, the group is active there; B §8.11).
    MirrorOffsetsSynced {
        /// Mirror.
        mirror: String,
        /// Group.
        group: String,
        /// `(partition, offset)` committed.
        offsets: Vec<(TopicPartition, Offset)>,
        /// The destination group coordinator's answer.
        error: crate::protocol::ErrorCode,
    },
    /// KIP-1279 metadata sync: the mirror coordinator created (or deleted) destination ACLs
    /// to match the source's (B §8.11; rules in `acl_sync`).
    MirrorAclsSynced {
        /// Mirror.
        mirror: String,
        /// True for a deletion, false for a creation.
        deleted: bool,
        /// The ACLs, rendered as `AclBinding`'s `Display`.
        acls: Vec<String>,
        /// The controller's answer (the first per-ACL error).
        error: crate::protocol::ErrorCode,
    },
    /// KIP-1279 metadata sync: the source has more partitions; the topic was grown (B §8.10).
    MirrorPartitionsSynced {
        /// Mirror.
        mirror: String,
        /// Topic.
        topic: String,
        /// The source's partition count.
        partitions: i32,
        /// The controller's answer.
        error: crate::protocol::ErrorCode,
    },
    /// KIP-1279: a mirror config outside the filter keys changed, so this broker dropped
    /// its connection state for the mirror (source leaders, fetchers, the metadata refresh
    /// in flight) and re-entered MIRRORING for the partitions that were in it (B ConfigRecord
    /// row; prototype `maybeRecreateConnection`).
    MirrorReconnected {
        /// Mirror.
        mirror: String,
        /// The changed keys, sorted.
        keys: Vec<String>,
        /// The MIRRORING partitions re-entered, sorted.
        partitions: Vec<TopicPartition>,
    },
    /// KIP-1279 pattern discovery (B §8.11): the mirror coordinator asked the controller to
    /// start source topics that match `topics.include` and not `topics.exclude`.
    MirrorTopicsDiscovered {
        /// Mirror.
        mirror: String,
        /// The topics, with the controller's per-topic answer.
        topics: Vec<(String, crate::protocol::ErrorCode)>,
        /// The controller's answer.
        error: crate::protocol::ErrorCode,
    },
    /// KIP-1279 `enforceExcludePatterns` (B §8.11): the mirror coordinator asked the
    /// controller to stop mirror topics that `topics.exclude` now matches.
    MirrorTopicsExcluded {
        /// Mirror.
        mirror: String,
        /// The topics, with the controller's per-topic answer.
        topics: Vec<(String, crate::protocol::ErrorCode)>,
        /// The controller's answer.
        error: crate::protocol::ErrorCode,
    },
    /// Controller: a broker was fenced or unfenced.
    BrokerFencing {
        /// Broker.
        broker_id: BrokerId,
        /// True when fenced.
        fenced: bool,
    },
}

/// One output of the broker.
#[derive(Clone, Debug, PartialEq)]
pub enum Output {
    /// Send a message.
    Send {
        /// Destination.
        to: NodeId,
        /// Correlation id: ours for requests, the requester's for responses.
        id: CorrelationId,
        /// The message.
        message: Message,
    },
    /// Perform a disk operation.
    Io(IoOp),
    /// Report a fact.
    Event(Event),
    /// Controller: durably append a metadata record (KRaft fsyncs every metadata batch
    /// before it is committed, so the driver keeps these across crashes).
    PersistMetadata {
        /// Offset of the record.
        offset: i64,
        /// The record.
        record: MetadataRecord,
    },
}

/// A sans-I/O node: everything it learns arrives through these calls, with `now`; everything
/// it wants done leaves through [`Node::poll_output`]. The simulator's driver loop is the only
/// code that awaits.
pub trait Node {
    /// A message arrived from `from` (a request with the sender's correlation id, or a
    /// response to one of ours).
    fn handle_message(&mut self, now: Instant, from: NodeId, id: CorrelationId, message: Message);
    /// Time passed: fire due timers.
    fn handle_timeout(&mut self, now: Instant);
    /// Next output, in order.
    fn poll_output(&mut self) -> Option<Output>;
    /// When [`Node::handle_timeout`] must next be called.
    fn poll_timeout(&self) -> Option<Instant>;
}
