//! Coordinator records: the key/value pairs the coordinators persist in `__transaction_state`
//! and `__consumer_offsets`, and the partition a key maps to.
//!
//! Format (our own, big-endian, in the spirit of Kafka's generated `*Key`/`*Value` schemas):
//!
//! - key   = `type: i16` then the key fields. Types, as Kafka numbers its key versions:
//!   `0` = [`TxnLogKey`] (`__transaction_state`), `1` = [`OffsetCommitKey`],
//!   `2` = [`GroupMetadataKey`] (`__consumer_offsets`).
//! - value = `version: i16` (always 0 here) then the value fields; a `None` value is a
//!   tombstone (the key was deleted).
//! - strings are `len: i16` + UTF-8 bytes; sets/maps are `count: i32` + entries.
//!
//! Decoding never panics: garbage yields a [`RecordError`].

use std::collections::{BTreeMap, BTreeSet};

use bytes::{BufMut, Bytes, BytesMut};

use super::transaction::TxnState;
use crate::record::{BatchBuilder, RecordBatch, SimpleRecord};
use crate::types::{LeaderEpoch, Offset, ProducerEpoch, ProducerId, TopicPartition};

/// Key type of a transaction-log record.
pub const TXN_LOG_KEY_TYPE: i16 = 0;
/// Key type of an offset-commit record.
pub const OFFSET_COMMIT_KEY_TYPE: i16 = 1;
/// Key type of a group-metadata (membership) record.
pub const GROUP_METADATA_KEY_TYPE: i16 = 2;
/// The only value version written and read.
pub const VALUE_VERSION: i16 = 0;

/// Why a coordinator record could not be decoded (or does not belong to this coordinator).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// The bytes end before a field does.
    #[error("record truncated: need {needed} more bytes at position {at}")]
    Truncated {
        /// Position of the field.
        at: usize,
        /// Bytes the field needs.
        needed: usize,
    },
    /// Bytes are left after the last field.
    #[error("{0} trailing bytes after the record")]
    TrailingBytes(usize),
    /// Unknown key type.
    #[error("unknown coordinator key type {0}")]
    UnknownKeyType(i16),
    /// A key of another coordinator (e.g. an offset key in `__transaction_state`).
    #[error("key type {got} does not belong to this coordinator")]
    UnexpectedKeyType {
        /// The key type found.
        got: i16,
    },
    /// Unknown value version.
    #[error("unsupported value version {0}")]
    UnsupportedVersion(i16),
    /// A negative string length or element count.
    #[error("negative length {0}")]
    NegativeLength(i64),
    /// A string is not UTF-8.
    #[error("string is not valid UTF-8")]
    InvalidUtf8,
    /// A transaction state id that is unknown or never persisted (`Dead`,
    /// `PrepareEpochFence`).
    #[error("invalid persisted transaction state {0}")]
    InvalidTxnState(i8),
    /// An optional-field flag other than 0 or 1.
    #[error("invalid presence flag {0}")]
    InvalidFlag(u8),
    /// Fields that cannot hold together (e.g. partitions in an `Empty` transaction; Kafka's
    /// `TransactionLog` refuses to write those).
    #[error("inconsistent record: {0}")]
    Inconsistent(&'static str),
}

/// One coordinator record as appended: key bytes and value bytes (`None` = tombstone).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoordinatorRecord {
    /// Encoded key (type prefix + fields).
    pub key: Bytes,
    /// Encoded value, `None` for a tombstone.
    pub value: Option<Bytes>,
}

impl CoordinatorRecord {
    /// The record as a producer hands it over (for [`BatchBuilder::build`]).
    #[must_use]
    pub fn to_simple_record(&self, timestamp_ms: i64) -> SimpleRecord {
        SimpleRecord {
            timestamp: timestamp_ms,
            key: Some(self.key.clone()),
            value: self.value.clone(),
            headers: Vec::new(),
        }
    }
}

/// Builds the batch a runtime appends (origin `Coordinator`, acks=all) for `records`: a plain
/// non-idempotent v2 batch, as Kafka's coordinators write. `records` must not be empty.
#[must_use]
pub fn build_batch(records: &[CoordinatorRecord], now_ms: i64) -> RecordBatch {
    assert!(!records.is_empty(), "coordinator_batch_not_empty");
    let simple: Vec<SimpleRecord> = records.iter().map(|r| r.to_simple_record(now_ms)).collect();
    BatchBuilder::new().build(&simple)
}

/// Java's `String.hashCode`: `h = 31 * h + c` over UTF-16 code units, wrapping `i32`.
#[must_use]
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

/// Kafka's `Utils.abs`: `|n|`, except `i32::MIN` maps to 0 (not to itself).
#[must_use]
pub fn kafka_abs(n: i32) -> i32 {
    if n == i32::MIN { 0 } else { n.abs() }
}

/// The internal-topic partition whose leader coordinates `key` (Kafka:
/// `TransactionStateManager.partitionFor` / `GroupCoordinator.partitionFor`:
/// `Utils.abs(key.hashCode) % partitionCount`). `partitions` must be positive.
#[must_use]
pub fn coordinator_partition(key: &str, partitions: i32) -> i32 {
    assert!(partitions > 0, "coordinator_partition_count_positive");
    kafka_abs(java_string_hash(key)) % partitions
}

// ------------------------------------------------------------------ keys and values

/// `__transaction_state` key.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct TxnLogKey {
    /// The transactional id.
    pub transactional_id: String,
}

/// `__transaction_state` value: the persisted part of a transaction's metadata (Kafka:
/// `TransactionLogValue`). Kafka keeps `lastProducerEpoch` in memory only; it is persisted
/// here so a reloaded coordinator accepts the same InitProducerId retries as the live one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnLogValue {
    /// Current producer id.
    pub producer_id: ProducerId,
    /// Previous producer id (after a rotation on epoch exhaustion), else `-1`.
    pub last_producer_id: ProducerId,
    /// Current producer epoch.
    pub producer_epoch: ProducerEpoch,
    /// Epoch before the last InitProducerId bump that named its expected epoch, else `-1`.
    pub last_producer_epoch: ProducerEpoch,
    /// Transaction timeout.
    pub timeout_ms: i32,
    /// State (never `Dead` or `PrepareEpochFence`).
    pub state: TxnState,
    /// Partitions in the transaction (empty unless `Ongoing` / `Prepare*`).
    pub partitions: BTreeSet<TopicPartition>,
    /// Last state change.
    pub last_update_ms: i64,
    /// Start of the current transaction, `-1` when none.
    pub start_ms: i64,
}

/// `__consumer_offsets` offset key.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct OffsetCommitKey {
    /// Group id.
    pub group: String,
    /// Partition.
    pub tp: TopicPartition,
}

/// `__consumer_offsets` offset value (Kafka: `OffsetCommitValue`, without metadata string and
/// expiry).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffsetCommitValue {
    /// Next offset to consume.
    pub offset: Offset,
    /// Leader epoch of the record before `offset` (KIP-320).
    pub leader_epoch: Option<LeaderEpoch>,
    /// Commit time.
    pub commit_timestamp_ms: i64,
}

/// `__consumer_offsets` group-metadata key (Kafka: `GroupMetadataKey`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct GroupMetadataKey {
    /// Group id.
    pub group: String,
}

/// `__consumer_offsets` group-metadata value: the group's members with their session
/// timeouts (a much reduced Kafka `GroupMetadataValue`).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct GroupMetadataValue {
    /// Member id -> session timeout.
    pub members: BTreeMap<String, i64>,
}

/// Any coordinator key, decoded by its type prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CoordinatorKey {
    /// A transaction-log key.
    Txn(TxnLogKey),
    /// An offset-commit key.
    OffsetCommit(OffsetCommitKey),
    /// A group-metadata key.
    GroupMetadata(GroupMetadataKey),
}

impl CoordinatorKey {
    /// Decodes any key.
    pub fn decode(bytes: &[u8]) -> Result<Self, RecordError> {
        let mut r = Reader::new(bytes);
        let key = match r.i16()? {
            TXN_LOG_KEY_TYPE => CoordinatorKey::Txn(TxnLogKey {
                transactional_id: r.string()?,
            }),
            OFFSET_COMMIT_KEY_TYPE => {
                let group = r.string()?;
                let tp = r.topic_partition()?;
                CoordinatorKey::OffsetCommit(OffsetCommitKey { group, tp })
            }
            GROUP_METADATA_KEY_TYPE => {
                CoordinatorKey::GroupMetadata(GroupMetadataKey { group: r.string()? })
            }
            other => return Err(RecordError::UnknownKeyType(other)),
        };
        r.finish()?;
        Ok(key)
    }

    /// The key's type prefix.
    #[must_use]
    pub fn key_type(&self) -> i16 {
        match self {
            CoordinatorKey::Txn(_) => TXN_LOG_KEY_TYPE,
            CoordinatorKey::OffsetCommit(_) => OFFSET_COMMIT_KEY_TYPE,
            CoordinatorKey::GroupMetadata(_) => GROUP_METADATA_KEY_TYPE,
        }
    }
}

impl TxnLogKey {
    /// Encodes the key.
    #[must_use]
    pub fn encode(&self) -> Bytes {
        let mut b = BytesMut::new();
        b.put_i16(TXN_LOG_KEY_TYPE);
        put_string(&mut b, &self.transactional_id);
        b.freeze()
    }

    /// Decodes a key that must be a transaction-log key.
    pub fn decode(bytes: &[u8]) -> Result<Self, RecordError> {
        match CoordinatorKey::decode(bytes)? {
            CoordinatorKey::Txn(k) => Ok(k),
            other => Err(RecordError::UnexpectedKeyType {
                got: other.key_type(),
            }),
        }
    }
}

impl TxnLogValue {
    /// Encodes the value. Persisting `Dead` or `PrepareEpochFence` is a broken invariant
    /// (Kafka writes `Dead` as a tombstone and never writes `PrepareEpochFence`).
    #[must_use]
    pub fn encode(&self) -> Bytes {
        assert!(self.state.is_persisted(), "txn_state_persistable");
        let mut b = BytesMut::new();
        b.put_i16(VALUE_VERSION);
        b.put_i64(self.producer_id.0);
        b.put_i64(self.last_producer_id.0);
        b.put_i16(self.producer_epoch.0);
        b.put_i16(self.last_producer_epoch.0);
        b.put_i32(self.timeout_ms);
        b.put_i8(self.state.id());
        put_count(&mut b, self.partitions.len());
        for tp in &self.partitions {
            put_string(&mut b, &tp.topic);
            b.put_i32(tp.partition);
        }
        b.put_i64(self.last_update_ms);
        b.put_i64(self.start_ms);
        b.freeze()
    }

    /// Decodes a value.
    pub fn decode(bytes: &[u8]) -> Result<Self, RecordError> {
        let mut r = Reader::new(bytes);
        r.version()?;
        let producer_id = ProducerId(r.i64()?);
        let last_producer_id = ProducerId(r.i64()?);
        let producer_epoch = ProducerEpoch(r.i16()?);
        let last_producer_epoch = ProducerEpoch(r.i16()?);
        let timeout_ms = r.i32()?;
        let state_id = r.i8()?;
        let state = TxnState::from_id(state_id)
            .filter(|s| s.is_persisted())
            .ok_or(RecordError::InvalidTxnState(state_id))?;
        let count = r.count()?;
        let mut partitions = BTreeSet::new();
        for _ in 0..count {
            partitions.insert(r.topic_partition()?);
        }
        let last_update_ms = r.i64()?;
        let start_ms = r.i64()?;
        r.finish()?;
        if !partitions.is_empty()
            && !matches!(
                state,
                TxnState::Ongoing | TxnState::PrepareCommit | TxnState::PrepareAbort
            )
        {
            return Err(RecordError::Inconsistent(
                "partitions outside Ongoing/Prepare*",
            ));
        }
        Ok(Self {
            producer_id,
            last_producer_id,
            producer_epoch,
            last_producer_epoch,
            timeout_ms,
            state,
            partitions,
            last_update_ms,
            start_ms,
        })
    }
}

impl OffsetCommitKey {
    /// Encodes the key.
    #[must_use]
    pub fn encode(&self) -> Bytes {
        let mut b = BytesMut::new();
        b.put_i16(OFFSET_COMMIT_KEY_TYPE);
        put_string(&mut b, &self.group);
        put_string(&mut b, &self.tp.topic);
        b.put_i32(self.tp.partition);
        b.freeze()
    }
}

impl OffsetCommitValue {
    /// Encodes the value.
    #[must_use]
    pub fn encode(&self) -> Bytes {
        let mut b = BytesMut::new();
        b.put_i16(VALUE_VERSION);
        b.put_i64(self.offset.0);
        match self.leader_epoch {
            Some(e) => {
                b.put_u8(1);
                b.put_i32(e.0);
            }
            None => b.put_u8(0),
        }
        b.put_i64(self.commit_timestamp_ms);
        b.freeze()
    }

    /// Decodes a value.
    pub fn decode(bytes: &[u8]) -> Result<Self, RecordError> {
        let mut r = Reader::new(bytes);
        r.version()?;
        let offset = Offset(r.i64()?);
        let leader_epoch = match r.u8()? {
            0 => None,
            1 => Some(LeaderEpoch(r.i32()?)),
            f => return Err(RecordError::InvalidFlag(f)),
        };
        let commit_timestamp_ms = r.i64()?;
        r.finish()?;
        Ok(Self {
            offset,
            leader_epoch,
            commit_timestamp_ms,
        })
    }
}

impl GroupMetadataKey {
    /// Encodes the key.
    #[must_use]
    pub fn encode(&self) -> Bytes {
        let mut b = BytesMut::new();
        b.put_i16(GROUP_METADATA_KEY_TYPE);
        put_string(&mut b, &self.group);
        b.freeze()
    }
}

impl GroupMetadataValue {
    /// Encodes the value.
    #[must_use]
    pub fn encode(&self) -> Bytes {
        let mut b = BytesMut::new();
        b.put_i16(VALUE_VERSION);
        put_count(&mut b, self.members.len());
        for (member, session_timeout_ms) in &self.members {
            put_string(&mut b, member);
            b.put_i64(*session_timeout_ms);
        }
        b.freeze()
    }

    /// Decodes a value.
    pub fn decode(bytes: &[u8]) -> Result<Self, RecordError> {
        let mut r = Reader::new(bytes);
        r.version()?;
        let count = r.count()?;
        let mut members = BTreeMap::new();
        for _ in 0..count {
            let member = r.string()?;
            let session_timeout_ms = r.i64()?;
            members.insert(member, session_timeout_ms);
        }
        r.finish()?;
        Ok(Self { members })
    }
}

// ------------------------------------------------------------------ primitives

fn put_string(b: &mut BytesMut, s: &str) {
    let len = i16::try_from(s.len()).expect("coordinator_string_fits_i16");
    b.put_i16(len);
    b.put_slice(s.as_bytes());
}

fn put_count(b: &mut BytesMut, n: usize) {
    b.put_i32(i32::try_from(n).expect("coordinator_count_fits_i32"));
}

/// A bounds-checked big-endian reader.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, pos: 0 }
    }

    fn take<const N: usize>(&mut self) -> Result<[u8; N], RecordError> {
        let end = self.pos.checked_add(N).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err(RecordError::Truncated {
                at: self.pos,
                needed: N,
            });
        };
        let mut out = [0u8; N];
        out.copy_from_slice(&self.bytes[self.pos..end]);
        self.pos = end;
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, RecordError> {
        Ok(self.take::<1>()?[0])
    }
    fn i8(&mut self) -> Result<i8, RecordError> {
        Ok(i8::from_be_bytes(self.take::<1>()?))
    }
    fn i16(&mut self) -> Result<i16, RecordError> {
        Ok(i16::from_be_bytes(self.take::<2>()?))
    }
    fn i32(&mut self) -> Result<i32, RecordError> {
        Ok(i32::from_be_bytes(self.take::<4>()?))
    }
    fn i64(&mut self) -> Result<i64, RecordError> {
        Ok(i64::from_be_bytes(self.take::<8>()?))
    }

    fn version(&mut self) -> Result<(), RecordError> {
        match self.i16()? {
            VALUE_VERSION => Ok(()),
            v => Err(RecordError::UnsupportedVersion(v)),
        }
    }

    fn count(&mut self) -> Result<usize, RecordError> {
        let n = self.i32()?;
        usize::try_from(n).map_err(|_| RecordError::NegativeLength(i64::from(n)))
    }

    fn string(&mut self) -> Result<String, RecordError> {
        let len = self.i16()?;
        let len = usize::try_from(len).map_err(|_| RecordError::NegativeLength(i64::from(len)))?;
        let Some(end) = self.pos.checked_add(len).filter(|&e| e <= self.bytes.len()) else {
            return Err(RecordError::Truncated {
                at: self.pos,
                needed: len,
            });
        };
        let s = std::str::from_utf8(&self.bytes[self.pos..end])
            .map_err(|_| RecordError::InvalidUtf8)?
            .to_owned();
        self.pos = end;
        Ok(s)
    }

    fn topic_partition(&mut self) -> Result<TopicPartition, RecordError> {
        let topic = self.string()?;
        let partition = self.i32()?;
        Ok(TopicPartition::new(topic, partition))
    }

    fn finish(&self) -> Result<(), RecordError> {
        match self.bytes.len() - self.pos {
            0 => Ok(()),
            n => Err(RecordError::TrailingBytes(n)),
        }
    }
}

#[cfg(test)]
#[path = "records_test.rs"]
mod tests;
