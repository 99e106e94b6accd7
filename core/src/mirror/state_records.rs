//! `__mirror_state` records (kip1279.md B §3, §4.2): what the mirror coordinator persists,
//! their binary form, and which `__mirror_state` partition a key lives in.
//!
//! Format (our own, big-endian, shaped like the prototype's generated schemas):
//!
//! - key = `type: i16` ([`LAST_MIRROR_EPOCHS_KEY_TYPE`] = 1, [`MIRROR_PARTITION_STATE_KEY_TYPE`]
//!   = 2, the prototype's coordinator-key api keys) + `mirror_name: string` +
//!   `topic_id: 16 bytes` + `partition: i32`;
//! - `MirrorPartitionStateValue` = `version: i16 (0)` + `state: i8` + `leader_epoch: i32` +
//!   `state_epoch: i32` + `error_message: nullable string` + `retry_attempt: i16` +
//!   `previous_state: i8`;
//! - `LastMirrorEpochsValue` = `version: i16 (0)` + `last_mirror_epoch: i32` +
//!   `last_mirror_offset: i64`;
//! - a `None` value is a tombstone (DeleteMirror);
//! - strings are `len: i16` + UTF-8; a nullable string uses `len = -1` for null.
//!
//! Decoding never panics: garbage yields a [`MirrorRecordError`].

use bytes::{BufMut, Bytes, BytesMut};
use thiserror::Error;

use super::state::{MirrorPartitionState, MirrorPartitionStatus};
use crate::coordinator::CoordinatorRecord;
use crate::coordinator::records::{coordinator_partition, java_string_hash, kafka_abs};
use crate::types::{LeaderEpoch, TopicId};

/// Key type of a [`MirrorStateKey::LastMirrorEpochs`] record.
pub const LAST_MIRROR_EPOCHS_KEY_TYPE: i16 = 1;
/// Key type of a [`MirrorStateKey::PartitionState`] record.
pub const MIRROR_PARTITION_STATE_KEY_TYPE: i16 = 2;
/// The only value version written and read.
pub const MIRROR_VALUE_VERSION: i16 = 0;

/// Why a `__mirror_state` record could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum MirrorRecordError {
    /// The bytes end before a field does.
    #[error("mirror record truncated: need {needed} more bytes at position {at}")]
    Truncated {
        /// Position of the field.
        at: usize,
        /// Bytes the field needs.
        needed: usize,
    },
    /// Bytes are left after the last field.
    #[error("{0} trailing bytes after the mirror record")]
    TrailingBytes(usize),
    /// Not a `__mirror_state` key type.
    #[error("unknown mirror key type {0}")]
    UnknownKeyType(i16),
    /// Unknown value version.
    #[error("unsupported mirror value version {0}")]
    UnsupportedVersion(i16),
    /// A string length below -1, or -1 where null is not allowed.
    #[error("invalid string length {0}")]
    InvalidLength(i16),
    /// A string is not UTF-8.
    #[error("string is not valid UTF-8")]
    InvalidUtf8,
    /// A state byte no [`MirrorPartitionState`] has.
    #[error("invalid mirror partition state {0}")]
    InvalidState(i8),
}

/// The identity of one mirror partition: the `__mirror_state` key fields
/// `(mirrorName, topicId, partition)`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MirrorPartitionKey {
    /// The mirror.
    pub mirror_name: String,
    /// The topic's id (the same on source and destination).
    pub topic_id: TopicId,
    /// The partition index.
    pub partition: i32,
}

impl MirrorPartitionKey {
    /// Builds a key.
    #[must_use]
    pub fn new(mirror_name: &str, topic_id: TopicId, partition: i32) -> Self {
        Self {
            mirror_name: mirror_name.to_owned(),
            topic_id,
            partition,
        }
    }
}

/// A `__mirror_state` record key: the prototype's `MirrorPartitionStateKey` and
/// `LastMirrorEpochsKey`, which share their fields.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum MirrorStateKey {
    /// `MirrorPartitionStateKey` -> [`MirrorPartitionStateValue`].
    PartitionState(MirrorPartitionKey),
    /// `LastMirrorEpochsKey` -> [`LastMirrorEpochsValue`].
    LastMirrorEpochs(MirrorPartitionKey),
}

/// The persisted partition state: the same fields as the coordinator's in-memory status.
pub type MirrorPartitionStateValue = MirrorPartitionStatus;

/// The failback marker recorded at stop (`LastMirrorEpochsValue`; latest: "LastMirrorPosition").
/// `-1` fields mean unknown; `(-1, -1)` means "replicate from scratch".
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LastMirrorEpochsValue {
    /// The greatest source epoch in the log at stop (the LME).
    pub last_mirror_epoch: i32,
    /// The log end offset at stop (early: the LSO recorded as LMO).
    pub last_mirror_offset: i64,
}

impl LastMirrorEpochsValue {
    /// Nothing known: `(-1, -1)`.
    pub const UNKNOWN: LastMirrorEpochsValue = LastMirrorEpochsValue {
        last_mirror_epoch: -1,
        last_mirror_offset: -1,
    };

    /// True for `(-1, -1)`, which the coordinator never writes.
    #[must_use]
    pub fn is_unknown(self) -> bool {
        self.last_mirror_epoch == -1 && self.last_mirror_offset == -1
    }

    /// Encodes the value.
    #[must_use]
    pub fn encode(&self) -> Bytes {
        let mut b = BytesMut::with_capacity(14);
        b.put_i16(MIRROR_VALUE_VERSION);
        b.put_i32(self.last_mirror_epoch);
        b.put_i64(self.last_mirror_offset);
        b.freeze()
    }

    /// Decodes a value.
    pub fn decode(bytes: &[u8]) -> Result<Self, MirrorRecordError> {
        let mut r = Reader::new(bytes);
        r.version()?;
        let last_mirror_epoch = r.i32()?;
        let last_mirror_offset = r.i64()?;
        r.finish()?;
        Ok(Self {
            last_mirror_epoch,
            last_mirror_offset,
        })
    }
}

impl MirrorStateKey {
    /// The partition the key is about.
    #[must_use]
    pub fn partition_key(&self) -> &MirrorPartitionKey {
        match self {
            MirrorStateKey::PartitionState(k) | MirrorStateKey::LastMirrorEpochs(k) => k,
        }
    }

    /// The key's type prefix.
    #[must_use]
    pub fn key_type(&self) -> i16 {
        match self {
            MirrorStateKey::PartitionState(_) => MIRROR_PARTITION_STATE_KEY_TYPE,
            MirrorStateKey::LastMirrorEpochs(_) => LAST_MIRROR_EPOCHS_KEY_TYPE,
        }
    }

    /// Encodes the key. Mirror names are validated (at most 249 characters) before they
    /// reach the coordinator, so the length always fits.
    #[must_use]
    pub fn encode(&self) -> Bytes {
        let k = self.partition_key();
        let mut b = BytesMut::new();
        b.put_i16(self.key_type());
        put_string(&mut b, &k.mirror_name);
        b.put_u128(k.topic_id.0);
        b.put_i32(k.partition);
        b.freeze()
    }

    /// Decodes a key.
    pub fn decode(bytes: &[u8]) -> Result<Self, MirrorRecordError> {
        let mut r = Reader::new(bytes);
        let key_type = r.i16()?;
        if key_type != MIRROR_PARTITION_STATE_KEY_TYPE && key_type != LAST_MIRROR_EPOCHS_KEY_TYPE {
            return Err(MirrorRecordError::UnknownKeyType(key_type));
        }
        let mirror_name = r.string()?;
        let topic_id = TopicId(r.u128()?);
        let partition = r.i32()?;
        r.finish()?;
        let k = MirrorPartitionKey {
            mirror_name,
            topic_id,
            partition,
        };
        Ok(if key_type == MIRROR_PARTITION_STATE_KEY_TYPE {
            MirrorStateKey::PartitionState(k)
        } else {
            MirrorStateKey::LastMirrorEpochs(k)
        })
    }
}

impl MirrorPartitionStatus {
    /// Encodes the status as a `MirrorPartitionStateValue`.
    #[must_use]
    pub fn encode(&self) -> Bytes {
        let mut b = BytesMut::new();
        b.put_i16(MIRROR_VALUE_VERSION);
        b.put_i8(self.state.value());
        b.put_i32(self.leader_epoch.0);
        b.put_i32(self.state_epoch);
        match &self.error_message {
            Some(m) => put_string(&mut b, m),
            None => b.put_i16(-1),
        }
        b.put_i16(self.retry_attempt);
        b.put_i8(self.previous_state.value());
        b.freeze()
    }

    /// Decodes a `MirrorPartitionStateValue`.
    pub fn decode(bytes: &[u8]) -> Result<Self, MirrorRecordError> {
        let mut r = Reader::new(bytes);
        r.version()?;
        let state = r.state()?;
        let leader_epoch = LeaderEpoch(r.i32()?);
        let state_epoch = r.i32()?;
        let error_message = r.nullable_string()?;
        let retry_attempt = r.i16()?;
        let previous_state = r.state()?;
        r.finish()?;
        Ok(Self {
            state,
            previous_state,
            state_epoch,
            leader_epoch,
            error_message,
            retry_attempt,
        })
    }
}

/// A `MirrorPartitionStateKey` record.
#[must_use]
pub fn partition_state_record(
    key: &MirrorPartitionKey,
    value: Option<&MirrorPartitionStatus>,
) -> CoordinatorRecord {
    CoordinatorRecord {
        key: MirrorStateKey::PartitionState(key.clone()).encode(),
        value: value.map(MirrorPartitionStatus::encode),
    }
}

/// A `LastMirrorEpochsKey` record.
#[must_use]
pub fn last_mirror_epochs_record(
    key: &MirrorPartitionKey,
    value: Option<LastMirrorEpochsValue>,
) -> CoordinatorRecord {
    CoordinatorRecord {
        key: MirrorStateKey::LastMirrorEpochs(key.clone()).encode(),
        value: value.map(|v| v.encode()),
    }
}

/// The `__mirror_state` partition whose leader coordinates the state of
/// `(mirror_name, topic_id, partition)` (kip1279.md B §3: `hash(key) % numPartitions`).
///
/// Hash: Java's `String.hashCode` of `"<mirror_name>:<topic_id as 32 lowercase hex
/// digits>:<partition>"`, then Kafka's `Utils.abs` and `% num_partitions`. It is stable
/// across Rust releases (no `DefaultHasher`). `num_partitions` must be positive.
#[must_use]
pub fn mirror_state_partition(
    mirror_name: &str,
    topic_id: TopicId,
    partition: i32,
    num_partitions: i32,
) -> i32 {
    assert!(num_partitions > 0, "mirror_state_partition_count_positive");
    let key = format!("{mirror_name}:{topic_id}:{partition}");
    kafka_abs(java_string_hash(&key)) % num_partitions
}

/// The `__mirror_state` partition whose leader is the mirror-level coordinator (metadata
/// sync, topic creation): `abs(mirrorName.hashCode()) % numPartitions` (kip1279.md B §3).
#[must_use]
pub fn mirror_coordinator_partition(mirror_name: &str, num_partitions: i32) -> i32 {
    coordinator_partition(mirror_name, num_partitions)
}

// ------------------------------------------------------------------ primitives

fn put_string(b: &mut BytesMut, s: &str) {
    let len = i16::try_from(s.len()).expect("mirror_record_string_fits_i16");
    b.put_i16(len);
    b.put_slice(s.as_bytes());
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

    fn take(&mut self, n: usize) -> Result<&'a [u8], MirrorRecordError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err(MirrorRecordError::Truncated {
                at: self.pos,
                needed: n,
            });
        };
        let out = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], MirrorRecordError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn i8(&mut self) -> Result<i8, MirrorRecordError> {
        Ok(i8::from_be_bytes(self.array()?))
    }
    fn i16(&mut self) -> Result<i16, MirrorRecordError> {
        Ok(i16::from_be_bytes(self.array()?))
    }
    fn i32(&mut self) -> Result<i32, MirrorRecordError> {
        Ok(i32::from_be_bytes(self.array()?))
    }
    fn i64(&mut self) -> Result<i64, MirrorRecordError> {
        Ok(i64::from_be_bytes(self.array()?))
    }
    fn u128(&mut self) -> Result<u128, MirrorRecordError> {
        Ok(u128::from_be_bytes(self.array()?))
    }

    fn version(&mut self) -> Result<(), MirrorRecordError> {
        match self.i16()? {
            MIRROR_VALUE_VERSION => Ok(()),
            v => Err(MirrorRecordError::UnsupportedVersion(v)),
        }
    }

    fn state(&mut self) -> Result<MirrorPartitionState, MirrorRecordError> {
        let v = self.i8()?;
        MirrorPartitionState::from_value(v).ok_or(MirrorRecordError::InvalidState(v))
    }

    fn string(&mut self) -> Result<String, MirrorRecordError> {
        self.nullable_string()?
            .ok_or(MirrorRecordError::InvalidLength(-1))
    }

    fn nullable_string(&mut self) -> Result<Option<String>, MirrorRecordError> {
        let len = self.i16()?;
        if len == -1 {
            return Ok(None);
        }
        let n = usize::try_from(len).map_err(|_| MirrorRecordError::InvalidLength(len))?;
        let bytes = self.take(n)?;
        let s = std::str::from_utf8(bytes).map_err(|_| MirrorRecordError::InvalidUtf8)?;
        Ok(Some(s.to_owned()))
    }

    fn finish(&self) -> Result<(), MirrorRecordError> {
        match self.bytes.len() - self.pos {
            0 => Ok(()),
            n => Err(MirrorRecordError::TrailingBytes(n)),
        }
    }
}

#[cfg(test)]
#[path = "state_records_test.rs"]
mod tests;
