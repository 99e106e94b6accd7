//! [`RecordBatch`]: one immutable v2 batch, kept as its exact wire bytes plus a parsed header.
//!
//! Keeping the bytes is what makes "mirrored byte for byte" checkable: two batches are equal
//! iff their bytes are equal. A leader stamps offsets and its epoch with
//! [`RecordBatch::with_offset_and_epoch`], which rewrites the two fields outside the CRC.

use bytes::{BufMut, Bytes, BytesMut};

use super::codec::{self, BatchError, RECORD_BATCH_OVERHEAD};
use super::control::ControlRecord;
use crate::types::{LeaderEpoch, Offset, ProducerEpoch, ProducerId, Sequence};

/// A record header (key, optional value).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Header key (UTF-8).
    pub key: String,
    /// Header value; `None` is a null value.
    pub value: Option<Bytes>,
}

/// One record inside a batch, as stored (deltas against the batch header).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Timestamp minus the batch's base timestamp.
    pub timestamp_delta: i64,
    /// Offset minus the batch's base offset.
    pub offset_delta: i32,
    /// Record key; `None` is a null key.
    pub key: Option<Bytes>,
    /// Record value; `None` is a null value (a tombstone).
    pub value: Option<Bytes>,
    /// Record headers.
    pub headers: Vec<Header>,
}

/// A record as a producer hands it over: absolute timestamp, no offset yet.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct SimpleRecord {
    /// Create time in milliseconds.
    pub timestamp: i64,
    /// Record key.
    pub key: Option<Bytes>,
    /// Record value.
    pub value: Option<Bytes>,
    /// Record headers.
    pub headers: Vec<Header>,
}

impl SimpleRecord {
    /// A record with only a value.
    pub fn value(timestamp: i64, value: impl Into<Bytes>) -> Self {
        Self {
            timestamp,
            key: None,
            value: Some(value.into()),
            headers: Vec::new(),
        }
    }
}

/// Timestamp type attribute bit.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TimestampType {
    /// Producer-set create time.
    CreateTime,
    /// Broker-set append time.
    LogAppendTime,
}

/// The parsed v2 batch header (all fixed fields of [`super::codec`]'s layout).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct BatchHeader {
    /// First offset of the batch.
    pub base_offset: Offset,
    /// Bytes after the length field.
    pub batch_length: i32,
    /// Epoch of the leader that first appended the batch.
    pub partition_leader_epoch: LeaderEpoch,
    /// Stored CRC32C.
    pub crc: u32,
    /// Raw attributes.
    pub attributes: i16,
    /// `lastOffset - baseOffset`.
    pub last_offset_delta: i32,
    /// Timestamp of the first record.
    pub base_timestamp: i64,
    /// Largest record timestamp.
    pub max_timestamp: i64,
    /// Producer id, `-1` for none.
    pub producer_id: ProducerId,
    /// Producer epoch, `-1` for none.
    pub producer_epoch: ProducerEpoch,
    /// Sequence of the first record, `-1` for none.
    pub base_sequence: Sequence,
    /// Number of records.
    pub record_count: i32,
}

/// One immutable v2 record batch.
#[derive(Clone, Debug)]
pub struct RecordBatch {
    bytes: Bytes,
    header: BatchHeader,
    control: Option<ControlRecord>,
}

impl PartialEq for RecordBatch {
    /// Byte equality. Replicas share one buffer for a batch they copied unchanged (a fetch
    /// response hands out the leader's `Bytes`), so the same buffer is equal without a
    /// comparison of its bytes.
    fn eq(&self, other: &Self) -> bool {
        (self.bytes.as_ptr() == other.bytes.as_ptr() && self.bytes.len() == other.bytes.len())
            || self.bytes == other.bytes
    }
}
impl Eq for RecordBatch {}

impl RecordBatch {
    /// Parses and validates one batch that spans exactly `bytes` (Kafka:
    /// `DefaultRecordBatch.ensureValid`): magic, length, CRC32C, record framing, and for
    /// control batches a well-formed single control record.
    pub fn decode(bytes: Bytes) -> Result<Self, BatchError> {
        let total = codec::validate_frame(&bytes)?;
        Self::decode_framed(bytes, total)
    }

    /// Parses one batch like [`Self::decode`] but without comparing its CRC: what a Kafka
    /// segment that recovery did not scan yields (below the recovery point, or after a clean
    /// shutdown; `LogLoader.recoverLog`). The records must still parse; a batch whose stored
    /// CRC is wrong comes back with [`Self::is_valid`] false, and readers that check it
    /// (a follower's append) refuse it.
    pub fn decode_unchecked_crc(bytes: Bytes) -> Result<Self, BatchError> {
        let total = codec::frame_len_unchecked_crc(&bytes)?;
        Self::decode_framed(bytes, total)
    }

    fn decode_framed(bytes: Bytes, total: usize) -> Result<Self, BatchError> {
        if total != bytes.len() {
            return Err(BatchError::CorruptRecord {
                index: 0,
                reason: "bytes beyond the batch length",
            });
        }
        let header = parse_header(&bytes);
        if header.record_count < 0 || header.last_offset_delta < 0 {
            return Err(BatchError::CorruptRecord {
                index: 0,
                reason: "negative record count or offset delta",
            });
        }
        // Every record is checked as a full decode would, without building them: the count,
        // the first record's key and value (a control record) and the last offset delta.
        let mut count = 0usize;
        let mut first = None;
        let mut last_delta = None;
        codec::walk_records(&bytes, header.record_count, |r| {
            if count == 0 {
                first = Some((r.key, r.value));
            }
            last_delta = Some(r.offset_delta);
            count += 1;
        })?;
        let control = if header.attributes & codec::CONTROL_FLAG_MASK != 0 {
            let (Some((key, value)), 1) = (first, count) else {
                return Err(BatchError::InvalidControlBatch);
            };
            let field = |r: Option<std::ops::Range<usize>>| r.map(|r| &bytes[r]);
            Some(
                ControlRecord::decode(field(key), field(value))
                    .ok_or(BatchError::InvalidControlBatch)?,
            )
        } else {
            if count == 0 {
                return Err(BatchError::Empty);
            }
            None
        };
        if let Some(last) = last_delta
            && last != header.last_offset_delta
        {
            return Err(BatchError::CorruptRecord {
                index: count - 1,
                reason: "last offset delta does not match the header",
            });
        }
        Ok(Self {
            bytes,
            header,
            control,
        })
    }

    /// Splits a buffer of consecutive batches (a log segment) into batches, stopping at the
    /// first invalid one. Returns the valid prefix and the error at its end, if any (Kafka's
    /// log recovery truncates there).
    #[must_use]
    pub fn decode_many(bytes: Bytes) -> (Vec<RecordBatch>, Option<BatchError>) {
        Self::split(bytes, true)
    }

    /// [`Self::decode_many`] without CRC comparisons (see [`Self::decode_unchecked_crc`]).
    #[must_use]
    pub fn decode_many_unchecked_crc(bytes: Bytes) -> (Vec<RecordBatch>, Option<BatchError>) {
        Self::split(bytes, false)
    }

    fn split(mut bytes: Bytes, check_crc: bool) -> (Vec<RecordBatch>, Option<BatchError>) {
        let mut out = Vec::new();
        while !bytes.is_empty() {
            let framed = if check_crc {
                codec::validate_frame(&bytes)
            } else {
                codec::frame_len_unchecked_crc(&bytes)
            };
            match framed {
                Ok(total) => {
                    let b = bytes.split_to(total);
                    match RecordBatch::decode_framed(b, total) {
                        Ok(batch) => out.push(batch),
                        Err(e) => return (out, Some(e)),
                    }
                }
                Err(e) => return (out, Some(e)),
            }
        }
        (out, None)
    }

    /// The exact wire bytes.
    #[must_use]
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// Size on the wire and on disk.
    #[must_use]
    pub fn size_in_bytes(&self) -> usize {
        self.bytes.len()
    }

    /// The parsed header.
    #[must_use]
    pub fn header(&self) -> &BatchHeader {
        &self.header
    }

    /// First offset.
    #[must_use]
    pub fn base_offset(&self) -> Offset {
        self.header.base_offset
    }

    /// Last offset (inclusive).
    #[must_use]
    pub fn last_offset(&self) -> Offset {
        self.header
            .base_offset
            .plus(i64::from(self.header.last_offset_delta))
    }

    /// The offset after this batch.
    #[must_use]
    pub fn next_offset(&self) -> Offset {
        self.last_offset().plus(1)
    }

    /// The batch's `partitionLeaderEpoch`.
    #[must_use]
    pub fn partition_leader_epoch(&self) -> LeaderEpoch {
        self.header.partition_leader_epoch
    }

    /// Producer id (`-1` if none).
    #[must_use]
    pub fn producer_id(&self) -> ProducerId {
        self.header.producer_id
    }

    /// Producer epoch.
    #[must_use]
    pub fn producer_epoch(&self) -> ProducerEpoch {
        self.header.producer_epoch
    }

    /// Sequence of the first record.
    #[must_use]
    pub fn base_sequence(&self) -> Sequence {
        self.header.base_sequence
    }

    /// Sequence of the last record (wrapping; `-1` if the batch has no sequence).
    #[must_use]
    pub fn last_sequence(&self) -> Sequence {
        if self.header.base_sequence == Sequence::NONE {
            Sequence::NONE
        } else {
            self.header
                .base_sequence
                .increment(self.header.last_offset_delta)
        }
    }

    /// True if the transactional attribute is set.
    #[must_use]
    pub fn is_transactional(&self) -> bool {
        self.header.attributes & codec::TRANSACTIONAL_FLAG_MASK != 0
    }

    /// True if the control attribute is set.
    #[must_use]
    pub fn is_control_batch(&self) -> bool {
        self.header.attributes & codec::CONTROL_FLAG_MASK != 0
    }

    /// The control record of a control batch.
    #[must_use]
    pub fn control_record(&self) -> Option<ControlRecord> {
        self.control
    }

    /// Largest record timestamp.
    #[must_use]
    pub fn max_timestamp(&self) -> i64 {
        self.header.max_timestamp
    }

    /// Timestamp of the first record (the header's `baseTimestamp`).
    #[must_use]
    pub fn base_timestamp(&self) -> i64 {
        self.header.base_timestamp
    }

    /// Each record's timestamp, in offset order (Kafka: `Record.timestamp()`): the batch's
    /// max timestamp for a LOG_APPEND_TIME batch (`DefaultRecordBatch` hands it to every
    /// record), else `baseTimestamp + timestampDelta`, wrapping as Java's long arithmetic does.
    #[must_use]
    pub fn record_timestamps(&self) -> Vec<i64> {
        let append_time = self.timestamp_type() == TimestampType::LogAppendTime;
        self.records()
            .iter()
            .map(|r| {
                if append_time {
                    self.header.max_timestamp
                } else {
                    self.header.base_timestamp.wrapping_add(r.timestamp_delta)
                }
            })
            .collect()
    }

    /// Each record's offset and timestamp, in offset order.
    #[must_use]
    pub fn record_offsets_and_timestamps(&self) -> Vec<(Offset, i64)> {
        let base = self.header.base_offset;
        self.records()
            .iter()
            .zip(self.record_timestamps())
            .map(|(r, ts)| (base.plus(i64::from(r.offset_delta)), ts))
            .collect()
    }

    /// The offset of the first record whose timestamp is the batch's max timestamp, `None` if
    /// no record has it (Kafka: `RecordBatch.offsetOfMaxTimestamp`, which iterates the records:
    /// a batch's stored max timestamp is what its writer put there).
    #[must_use]
    pub fn offset_of_max_timestamp(&self) -> Option<Offset> {
        self.record_offsets_and_timestamps()
            .into_iter()
            .find(|&(_, ts)| ts == self.header.max_timestamp)
            .map(|(o, _)| o)
    }

    /// Timestamp type attribute.
    #[must_use]
    pub fn timestamp_type(&self) -> TimestampType {
        if self.header.attributes & codec::TIMESTAMP_TYPE_MASK != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }

    /// Number of records.
    #[must_use]
    pub fn record_count(&self) -> i32 {
        self.header.record_count
    }

    /// Parses the records (the bytes were validated at construction, so this cannot fail).
    #[must_use]
    pub fn records(&self) -> Vec<Record> {
        codec::decode_records(&self.bytes, self.header.record_count)
            .expect("batch_records_valid: records were validated when the batch was built")
    }

    /// Each record's offset delta and value, read in place (cheaper than [`Self::records`]
    /// when only values are looked at).
    pub fn record_values(&self) -> codec::RecordValues<'_> {
        codec::RecordValues::new(&self.bytes, self.header.record_count)
    }

    /// The value of the record at `offset`: `None` when the batch has no record there,
    /// `Some(None)` for a null value.
    #[must_use]
    pub fn value_at(&self, offset: Offset) -> Option<Option<&[u8]>> {
        let delta = i32::try_from(offset.0.checked_sub(self.base_offset().0)?).ok()?;
        self.record_values().find_delta(delta)
    }

    /// The `SourceClusterId` of a `MIRROR_PID_RESET` batch: `None` for any other batch and for a
    /// reset written without one (version-only value).
    #[must_use]
    pub fn mirror_pid_reset_source(&self) -> Option<String> {
        if self.control != Some(ControlRecord::MirrorPidReset) {
            return None;
        }
        let value = self.records().into_iter().next()?.value?;
        let len = usize::try_from(i16::from_be_bytes([*value.get(2)?, *value.get(3)?])).ok()?;
        let id = value.get(4..4 + len)?;
        String::from_utf8(id.to_vec()).ok()
    }

    /// Recomputes the CRC over the current bytes and compares it with the stored one.
    #[must_use]
    pub fn is_valid(&self) -> bool {
        codec::validate_frame(&self.bytes).is_ok()
    }

    /// A copy with a new base offset and partition leader epoch (the two fields outside the
    /// CRC). This is what a leader does on append (Kafka: `LogValidator` assigning offsets and
    /// `setPartitionLeaderEpoch`).
    #[must_use]
    pub fn with_offset_and_epoch(&self, base_offset: Offset, epoch: LeaderEpoch) -> RecordBatch {
        if base_offset == self.header.base_offset && epoch == self.header.partition_leader_epoch {
            return self.clone();
        }
        let mut b = BytesMut::from(&self.bytes[..]);
        b[codec::BASE_OFFSET..codec::BASE_OFFSET + 8].copy_from_slice(&base_offset.0.to_be_bytes());
        b[codec::PARTITION_LEADER_EPOCH..codec::PARTITION_LEADER_EPOCH + 4]
            .copy_from_slice(&epoch.0.to_be_bytes());
        let mut header = self.header;
        header.base_offset = base_offset;
        header.partition_leader_epoch = epoch;
        RecordBatch {
            bytes: b.freeze(),
            header,
            control: self.control,
        }
    }
}

fn parse_header(b: &[u8]) -> BatchHeader {
    BatchHeader {
        base_offset: Offset(codec::get_i64(b, codec::BASE_OFFSET)),
        batch_length: codec::get_i32(b, codec::BATCH_LENGTH),
        partition_leader_epoch: LeaderEpoch(codec::get_i32(b, codec::PARTITION_LEADER_EPOCH)),
        crc: codec::get_u32(b, codec::CRC),
        attributes: codec::get_i16(b, codec::ATTRIBUTES),
        last_offset_delta: codec::get_i32(b, codec::LAST_OFFSET_DELTA),
        base_timestamp: codec::get_i64(b, codec::BASE_TIMESTAMP),
        max_timestamp: codec::get_i64(b, codec::MAX_TIMESTAMP),
        producer_id: ProducerId(codec::get_i64(b, codec::PRODUCER_ID)),
        producer_epoch: ProducerEpoch(codec::get_i16(b, codec::PRODUCER_EPOCH)),
        base_sequence: Sequence(codec::get_i32(b, codec::BASE_SEQUENCE)),
        record_count: codec::get_i32(b, codec::RECORD_COUNT),
    }
}

/// Builds batches the way a Kafka producer (or a coordinator writing markers) does.
#[derive(Clone, Debug)]
pub struct BatchBuilder {
    /// Base offset to write (a leader overwrites it on append).
    pub base_offset: Offset,
    /// Partition leader epoch to write (a leader overwrites it on append).
    pub partition_leader_epoch: LeaderEpoch,
    /// Producer id, `-1` for a plain producer.
    pub producer_id: ProducerId,
    /// Producer epoch.
    pub producer_epoch: ProducerEpoch,
    /// Sequence of the first record.
    pub base_sequence: Sequence,
    /// Transactional attribute.
    pub is_transactional: bool,
    /// Timestamp type attribute.
    pub timestamp_type: TimestampType,
}

impl BatchBuilder {
    /// A plain (non-idempotent) batch at offset 0, epoch unset (-1).
    #[must_use]
    pub fn new() -> Self {
        Self {
            base_offset: Offset(0),
            partition_leader_epoch: LeaderEpoch::UNDEFINED,
            producer_id: ProducerId::NONE,
            producer_epoch: ProducerEpoch::NONE,
            base_sequence: Sequence::NONE,
            is_transactional: false,
            timestamp_type: TimestampType::CreateTime,
        }
    }

    /// An idempotent batch.
    #[must_use]
    pub fn idempotent(pid: ProducerId, epoch: ProducerEpoch, base_sequence: Sequence) -> Self {
        Self {
            producer_id: pid,
            producer_epoch: epoch,
            base_sequence,
            ..Self::new()
        }
    }

    /// A transactional batch.
    #[must_use]
    pub fn transactional(pid: ProducerId, epoch: ProducerEpoch, base_sequence: Sequence) -> Self {
        Self {
            is_transactional: true,
            ..Self::idempotent(pid, epoch, base_sequence)
        }
    }

    /// Sets the base offset.
    #[must_use]
    pub fn base_offset(mut self, o: Offset) -> Self {
        self.base_offset = o;
        self
    }

    /// Sets the partition leader epoch.
    #[must_use]
    pub fn leader_epoch(mut self, e: LeaderEpoch) -> Self {
        self.partition_leader_epoch = e;
        self
    }

    /// Builds a data batch. Panics on an empty record list: callers build batches from
    /// non-empty producer buffers (an empty batch is not a valid operation input).
    #[must_use]
    pub fn build(&self, records: &[SimpleRecord]) -> RecordBatch {
        assert!(!records.is_empty(), "batch_not_empty");
        let base_ts = records[0].timestamp;
        let recs: Vec<Record> = records
            .iter()
            .enumerate()
            .map(|(i, r)| Record {
                // Java long arithmetic (`MemoryRecordsBuilder`): the delta wraps, and a reader's
                // `baseTimestamp + delta` wraps back to the record's timestamp.
                timestamp_delta: r.timestamp.wrapping_sub(base_ts),
                offset_delta: i as i32,
                key: r.key.clone(),
                value: r.value.clone(),
                headers: r.headers.clone(),
            })
            .collect();
        let max_ts = records.iter().map(|r| r.timestamp).max().unwrap_or(base_ts);
        self.encode(&recs, base_ts, max_ts, None)
    }

    /// Builds a control batch holding one control record (Kafka:
    /// `MemoryRecords.withEndTransactionMarker`, `withMirrorPidResetRecord`). Transaction
    /// markers are transactional batches; `MIRROR_PID_RESET` is not.
    #[must_use]
    pub fn build_control(&self, record: ControlRecord, timestamp: i64) -> RecordBatch {
        let rec = Record {
            timestamp_delta: 0,
            offset_delta: 0,
            key: Some(record.key_bytes()),
            value: Some(record.value_bytes()),
            headers: Vec::new(),
        };
        let transactional = matches!(record, ControlRecord::EndTxn { .. }) || self.is_transactional;
        let mut b = self.clone();
        b.is_transactional = transactional;
        b.encode(&[rec], timestamp, timestamp, Some(record))
    }

    /// Builds the `MIRROR_PID_RESET` control batch a stop appends, naming the source cluster
    /// whose records it follows (the prototype's `MirrorPidResetRecord{Version,
    /// SourceClusterId}`, kip1279.md B §4.3). The id lets a re-driven stop tell its own reset
    /// from one mirrored from another cluster ([`RecordBatch::mirror_pid_reset_source`]).
    #[must_use]
    pub fn build_mirror_pid_reset(&self, source_cluster_id: &str, timestamp: i64) -> RecordBatch {
        let record = ControlRecord::MirrorPidReset;
        let id = source_cluster_id.as_bytes();
        let len = i16::try_from(id.len()).expect("cluster_id_fits_a_kafka_string");
        let mut value = BytesMut::with_capacity(4 + id.len());
        value.put_i16(0);
        value.put_i16(len);
        value.put_slice(id);
        let rec = Record {
            timestamp_delta: 0,
            offset_delta: 0,
            key: Some(record.key_bytes()),
            value: Some(value.freeze()),
            headers: Vec::new(),
        };
        self.encode(&[rec], timestamp, timestamp, Some(record))
    }

    /// Encodes `recs` (`control`: the one record of a control batch, decoded). The batch is
    /// put together from what was written, not parsed back: the builder's output is what
    /// [`RecordBatch::decode`] makes of its bytes (`record_batch.rs` holds the two equal
    /// over every kind of batch and random records), and a producer builds one per send.
    fn encode(
        &self,
        recs: &[Record],
        base_ts: i64,
        max_ts: i64,
        control: Option<ControlRecord>,
    ) -> RecordBatch {
        let mut buf = BytesMut::with_capacity(RECORD_BATCH_OVERHEAD + 32 * recs.len());
        buf.put_i64(self.base_offset.0);
        buf.put_i32(0); // length, patched below
        buf.put_i32(self.partition_leader_epoch.0);
        buf.put_i8(codec::MAGIC_V2);
        buf.put_u32(0); // crc, patched below
        let mut attributes = 0i16;
        if self.timestamp_type == TimestampType::LogAppendTime {
            attributes |= codec::TIMESTAMP_TYPE_MASK;
        }
        if self.is_transactional {
            attributes |= codec::TRANSACTIONAL_FLAG_MASK;
        }
        if control.is_some() {
            attributes |= codec::CONTROL_FLAG_MASK;
        }
        buf.put_i16(attributes);
        buf.put_i32(recs.last().map_or(0, |r| r.offset_delta));
        buf.put_i64(base_ts);
        buf.put_i64(max_ts);
        buf.put_i64(self.producer_id.0);
        buf.put_i16(self.producer_epoch.0);
        buf.put_i32(self.base_sequence.0);
        buf.put_i32(recs.len() as i32);
        for r in recs {
            codec::encode_record(&mut buf, r);
        }
        let len = (buf.len() - codec::LOG_OVERHEAD) as i32;
        buf[codec::BATCH_LENGTH..codec::BATCH_LENGTH + 4].copy_from_slice(&len.to_be_bytes());
        let crc = codec::compute_crc(&buf);
        buf[codec::CRC..codec::CRC + 4].copy_from_slice(&crc.to_be_bytes());
        let bytes = buf.freeze();
        RecordBatch {
            header: parse_header(&bytes),
            bytes,
            control,
        }
    }
}

impl Default for BatchBuilder {
    fn default() -> Self {
        Self::new()
    }
}
