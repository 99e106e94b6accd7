//! What a broker asks its driver to do ([`Output`]) and the facts it reports ([`Event`]).
//! The driver performs sends and disk operations in order; events feed traces and checkers
//! and are never read back by the broker.

use bytes::Bytes;

use crate::protocol::{CorrelationId, NodeId, Request, Response};
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
}
