//! The Kafka v2 record batch wire format (`DefaultRecordBatch`, magic 2).
//!
//! ```text
//! 0  baseOffset i64 | 8  batchLength i32 | 12 partitionLeaderEpoch i32 | 16 magic i8 | 17 crc u32
//! 21 attributes i16 | 23 lastOffsetDelta i32 | 27 baseTimestamp i64 | 35 maxTimestamp i64
//! 43 producerId i64 | 51 producerEpoch i16 | 53 baseSequence i32 | 57 recordCount i32 | 61 records
//! ```
//! The CRC32C covers bytes `21..` (attributes to the end), so `baseOffset` and
//! `partitionLeaderEpoch` can be rewritten in place without recomputing it, which is what a
//! leader does when it assigns offsets and its epoch to a produced batch.

use std::ops::Range;

use bytes::{BufMut, Bytes, BytesMut};
use thiserror::Error;

use super::batch::{Header, Record};

/// Bytes before the batch length field plus the field itself (`LOG_OVERHEAD`).
pub const LOG_OVERHEAD: usize = 12;
/// Size of a v2 batch header, records excluded (`RECORD_BATCH_OVERHEAD`).
pub const RECORD_BATCH_OVERHEAD: usize = 61;
/// The only magic this model supports.
pub const MAGIC_V2: i8 = 2;

/// Position of the base offset (8 bytes).
pub const BASE_OFFSET: usize = 0;
pub(crate) const BATCH_LENGTH: usize = 8;
pub(crate) const PARTITION_LEADER_EPOCH: usize = 12;
pub(crate) const MAGIC: usize = 16;
/// Position of the stored CRC32C (4 bytes, outside the range it covers).
pub const CRC: usize = 17;
pub(crate) const ATTRIBUTES: usize = 21;
/// Position of the last offset delta (4 bytes).
pub const LAST_OFFSET_DELTA: usize = 23;
pub(crate) const BASE_TIMESTAMP: usize = 27;
pub(crate) const MAX_TIMESTAMP: usize = 35;
pub(crate) const PRODUCER_ID: usize = 43;
pub(crate) const PRODUCER_EPOCH: usize = 51;
pub(crate) const BASE_SEQUENCE: usize = 53;
pub(crate) const RECORD_COUNT: usize = 57;

/// Attribute bits (Kafka: `DefaultRecordBatch`).
pub(crate) const TIMESTAMP_TYPE_MASK: i16 = 0x08;
pub(crate) const TRANSACTIONAL_FLAG_MASK: i16 = 0x10;
pub(crate) const CONTROL_FLAG_MASK: i16 = 0x20;
pub(crate) const COMPRESSION_CODEC_MASK: i16 = 0x07;

/// Why bytes are not a valid v2 batch.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BatchError {
    /// Fewer bytes than a batch header, or than the batch length says.
    #[error("batch truncated: need {needed} bytes, have {available}")]
    Truncated {
        /// Bytes the header or length field requires.
        needed: usize,
        /// Bytes present.
        available: usize,
    },
    /// Magic other than 2 (old message formats are out of scope).
    #[error("unsupported magic {0}")]
    UnsupportedMagic(i8),
    /// `batchLength` is too small to hold a header.
    #[error("invalid batch length {0}")]
    InvalidLength(i32),
    /// The stored CRC32C does not match the bytes (Kafka: `CorruptRecordException`).
    #[error(
        "crc mismatch at base offset {base_offset}: stored {stored:#010x}, computed {computed:#010x}"
    )]
    InvalidCrc {
        /// The batch's base offset.
        base_offset: i64,
        /// CRC in the header.
        stored: u32,
        /// CRC of the bytes.
        computed: u32,
    },
    /// Compressed batches are out of scope for the model.
    #[error("compressed batches are not supported (codec {0})")]
    UnsupportedCompression(i16),
    /// A record inside the batch is malformed, or the count does not match.
    #[error("corrupt record {index}: {reason}")]
    CorruptRecord {
        /// Record index within the batch.
        index: usize,
        /// What was wrong.
        reason: &'static str,
    },
    /// A control batch must hold exactly one well-formed control record.
    #[error("invalid control batch")]
    InvalidControlBatch,
    /// A batch must hold at least one record (control batches cleaned by compaction aside).
    #[error("empty batch")]
    Empty,
}

pub(crate) fn get_i16(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([b[at], b[at + 1]])
}
pub(crate) fn get_i32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
pub(crate) fn get_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
pub(crate) fn get_i64(b: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Zigzag varint (Kafka: `ByteUtils.writeVarint`).
pub(crate) fn put_varint(buf: &mut BytesMut, v: i32) {
    put_varlong(buf, i64::from(v));
}

/// Zigzag varlong (Kafka: `ByteUtils.writeVarlong`).
pub(crate) fn put_varlong(buf: &mut BytesMut, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z & !0x7f != 0 {
        buf.put_u8(((z & 0x7f) | 0x80) as u8);
        z >>= 7;
    }
    buf.put_u8(z as u8);
}

fn varlong_len(v: i64) -> usize {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    let mut n = 1;
    while z & !0x7f != 0 {
        n += 1;
        z >>= 7;
    }
    n
}

/// Reads a zigzag varlong at `*pos`, advancing it. `None` on truncation or overlong input.
pub(crate) fn read_varlong(b: &[u8], pos: &mut usize) -> Option<i64> {
    let mut z: u64 = 0;
    let mut shift = 0;
    loop {
        let byte = *b.get(*pos)?;
        *pos += 1;
        z |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            break;
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
    Some(((z >> 1) as i64) ^ -((z & 1) as i64))
}

/// Reads a zigzag varint at `*pos`, advancing it, exactly as Kafka's `ByteUtils.readVarint`:
/// at most 5 bytes (a 6th continuation byte is an error), and bits of the 5th byte beyond 32
/// are dropped rather than rejected. `None` on truncation or overlong input.
fn read_varint(b: &[u8], pos: &mut usize) -> Option<i32> {
    let mut value: u32 = 0;
    let mut shift = 0u32;
    loop {
        let byte = *b.get(*pos)?;
        *pos += 1;
        if byte & 0x80 == 0 {
            value |= u32::from(byte) << shift;
            break;
        }
        value |= u32::from(byte & 0x7f) << shift;
        shift += 7;
        if shift > 28 {
            return None;
        }
    }
    Some(((value >> 1) as i32) ^ -((value & 1) as i32))
}

fn opt_len(v: &Option<Bytes>) -> i32 {
    v.as_ref().map_or(-1, |b| b.len() as i32)
}

/// Encodes one record body (Kafka: `DefaultRecord.writeTo`).
pub(crate) fn encode_record(buf: &mut BytesMut, r: &Record) {
    let mut body_len = 1 + varlong_len(r.timestamp_delta) + varlong_len(i64::from(r.offset_delta));
    body_len += varlong_len(i64::from(opt_len(&r.key))) + r.key.as_ref().map_or(0, Bytes::len);
    body_len += varlong_len(i64::from(opt_len(&r.value))) + r.value.as_ref().map_or(0, Bytes::len);
    body_len += varlong_len(r.headers.len() as i64);
    for h in &r.headers {
        body_len += varlong_len(h.key.len() as i64) + h.key.len();
        body_len +=
            varlong_len(i64::from(opt_len(&h.value))) + h.value.as_ref().map_or(0, Bytes::len);
    }
    put_varint(buf, body_len as i32);
    buf.put_i8(0); // record attributes: unused
    put_varlong(buf, r.timestamp_delta);
    put_varint(buf, r.offset_delta);
    put_varint(buf, opt_len(&r.key));
    if let Some(k) = &r.key {
        buf.put_slice(k);
    }
    put_varint(buf, opt_len(&r.value));
    if let Some(v) = &r.value {
        buf.put_slice(v);
    }
    put_varint(buf, r.headers.len() as i32);
    for h in &r.headers {
        put_varint(buf, h.key.len() as i32);
        buf.put_slice(h.key.as_bytes());
        put_varint(buf, opt_len(&h.value));
        if let Some(v) = &h.value {
            buf.put_slice(v);
        }
    }
}

/// One record of a batch, its fields located in the batch's bytes (`start..end` ranges):
/// what [`read_record`] checks and finds, before anything is copied or allocated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RecordSpan {
    /// Timestamp minus the batch's base timestamp.
    pub(crate) timestamp_delta: i64,
    /// Offset minus the batch's base offset.
    pub(crate) offset_delta: i32,
    /// The key's bytes; `None` for a null key.
    pub(crate) key: Option<Range<usize>>,
    /// The value's bytes; `None` for a null value.
    pub(crate) value: Option<Range<usize>>,
    /// Each header's key and value bytes (empty, and unallocated, for records without).
    pub(crate) headers: Vec<(Range<usize>, Option<Range<usize>>)>,
}

impl RecordSpan {
    /// The owned record, its byte fields sharing `bytes`.
    fn to_record(&self, bytes: &Bytes) -> Record {
        let slice = |r: &Option<Range<usize>>| r.clone().map(|r| bytes.slice(r));
        Record {
            timestamp_delta: self.timestamp_delta,
            offset_delta: self.offset_delta,
            key: slice(&self.key),
            value: slice(&self.value),
            headers: self
                .headers
                .iter()
                .map(|(k, v)| Header {
                    // Kafka decodes header keys with `new String(bytes, UTF_8)`, which
                    // replaces malformed input instead of failing; the batch bytes themselves
                    // stay exact.
                    key: String::from_utf8_lossy(&bytes[k.clone()]).into_owned(),
                    value: slice(v),
                })
                .collect(),
        }
    }
}

/// A length-prefixed byte field at `*pos` as a range, advancing past it: `Some(None)` for a
/// null (negative length), `None` when it runs past the end.
fn read_range(b: &[u8], pos: &mut usize) -> Option<Option<Range<usize>>> {
    let len = read_varint(b, pos)?;
    if len < 0 {
        return Some(None);
    }
    let start = *pos;
    let end = start.checked_add(len as usize)?;
    if end > b.len() {
        return None;
    }
    *pos = end;
    Some(Some(start..end))
}

/// Reads record `index` at `*pos` (Kafka `DefaultRecord.readFrom`), advancing past it.
fn read_record(b: &[u8], pos: &mut usize, index: usize) -> Result<RecordSpan, BatchError> {
    let bad = |reason| BatchError::CorruptRecord { index, reason };
    let len = read_varint(b, pos).ok_or(bad("length"))?;
    if len < 0 {
        return Err(bad("negative length"));
    }
    let end = *pos + len as usize;
    if end > b.len() {
        return Err(bad("length past end of batch"));
    }
    *pos += 1; // attributes
    let timestamp_delta = read_varlong(b, pos).ok_or(bad("timestamp delta"))?;
    let offset_delta = read_varint(b, pos).ok_or(bad("offset delta"))?;
    let key = read_range(b, pos).ok_or(bad("key"))?;
    let value = read_range(b, pos).ok_or(bad("value"))?;
    let n_headers = read_varint(b, pos).ok_or(bad("header count"))?;
    if n_headers < 0 {
        return Err(bad("negative header count"));
    }
    let mut headers = Vec::new();
    for _ in 0..n_headers {
        let k = read_range(b, pos).flatten().ok_or(bad("header key"))?;
        let v = read_range(b, pos).ok_or(bad("header value"))?;
        headers.push((k, v));
    }
    if *pos != end {
        return Err(bad("record length mismatch"));
    }
    Ok(RecordSpan {
        timestamp_delta,
        offset_delta,
        key,
        value,
        headers,
    })
}

/// Walks the `count` records of a batch whose header is already validated, handing each to
/// `f` in order: the one parser behind [`decode_records`], batch validation and
/// [`RecordValues`]. Fails as [`decode_records`] does, on the first bad record or on bytes
/// after the last one.
pub(crate) fn walk_records(
    bytes: &[u8],
    count: i32,
    mut f: impl FnMut(RecordSpan),
) -> Result<(), BatchError> {
    let count = count.max(0) as usize;
    let mut pos = RECORD_BATCH_OVERHEAD;
    for index in 0..count {
        f(read_record(bytes, &mut pos, index)?);
    }
    if pos != bytes.len() {
        return Err(BatchError::CorruptRecord {
            index: count,
            reason: "trailing bytes after the last record",
        });
    }
    Ok(())
}

/// The offset delta and value of each record of a validated batch, read in place: what a
/// checker looking values up needs, without decoding keys and headers into owned records.
#[derive(Clone, Debug)]
pub struct RecordValues<'a> {
    bytes: &'a [u8],
    pos: usize,
    index: usize,
    count: usize,
}

impl<'a> RecordValues<'a> {
    /// The records of `bytes`, a batch of `count` records whose framing was validated.
    pub(crate) fn new(bytes: &'a [u8], count: i32) -> Self {
        Self {
            bytes,
            pos: RECORD_BATCH_OVERHEAD,
            index: 0,
            count: usize::try_from(count).unwrap_or(0),
        }
    }
}

impl<'a> RecordValues<'a> {
    /// The offset delta of the next record and where it ends, reading only the fields before
    /// the key (the length, attributes and timestamp delta are skipped); `*pos` is left just
    /// after the offset delta.
    fn head(&self, pos: &mut usize) -> (i32, usize) {
        let b = self.bytes;
        let len = read_varint(b, pos);
        let head = len.and_then(|len| {
            let end = pos.checked_add(usize::try_from(len).ok()?)?;
            *pos += 1; // attributes
            read_varlong(b, pos)?;
            Some((read_varint(b, pos)?, end))
        });
        head.expect("batch_records_valid: records were validated when the batch was built")
    }

    /// The value of the first record whose offset delta is `delta` (as `find` on the
    /// iterator), skipping every other record after its offset delta: the key, value and
    /// headers of a record that does not match are never read.
    #[must_use]
    pub fn find_delta(mut self, delta: i32) -> Option<Option<&'a [u8]>> {
        while self.index < self.count {
            self.index += 1;
            let mut pos = self.pos;
            let (d, end) = self.head(&mut pos);
            self.pos = end;
            if d == delta {
                return Some(self.value_after_head(pos));
            }
        }
        None
    }

    /// The value of the record whose key starts at `pos`.
    fn value_after_head(&self, mut pos: usize) -> Option<&'a [u8]> {
        let b = self.bytes;
        read_range(b, &mut pos)
            .and_then(|_key| read_range(b, &mut pos))
            .expect("batch_records_valid: records were validated when the batch was built")
            .map(|v| &b[v])
    }
}

impl<'a> Iterator for RecordValues<'a> {
    type Item = (i32, Option<&'a [u8]>);

    /// Reads the record's offset delta and value and jumps to its end by its length: the
    /// headers are not parsed (the batch was validated when it was built, so the length is
    /// that of the fields [`read_record`] would have read).
    fn next(&mut self) -> Option<Self::Item> {
        if self.index == self.count {
            return None;
        }
        self.index += 1;
        let mut pos = self.pos;
        let (d, end) = self.head(&mut pos);
        self.pos = end;
        Some((d, self.value_after_head(pos)))
    }
}

/// Parses the records of a batch whose header is already validated.
pub(crate) fn decode_records(bytes: &Bytes, count: i32) -> Result<Vec<Record>, BatchError> {
    let mut out = Vec::with_capacity(count.max(0) as usize);
    walk_records(bytes, count, |r| out.push(r.to_record(bytes)))?;
    Ok(out)
}

/// Computes the CRC32C of a batch (bytes from `attributes` to the end).
#[must_use]
pub fn compute_crc(batch: &[u8]) -> u32 {
    crc32c::crc32c(&batch[ATTRIBUTES..])
}

/// Checks the framing and CRC of one batch at the start of `bytes`; returns its total size.
pub fn validate_frame(bytes: &[u8]) -> Result<usize, BatchError> {
    let total = frame_len(bytes)?;
    let stored = get_u32(bytes, CRC);
    let computed = compute_crc(&bytes[..total]);
    if stored != computed {
        return Err(BatchError::InvalidCrc {
            base_offset: get_i64(bytes, BASE_OFFSET),
            stored,
            computed,
        });
    }
    check_codec(bytes)?;
    Ok(total)
}

/// The framing checks of [`validate_frame`] without the CRC (what Kafka's
/// `FileLogInputStream` reads when it iterates a segment: header, magic and length; the CRC is
/// only compared by `ensureValid`); returns the batch's total size.
pub fn frame_len_unchecked_crc(bytes: &[u8]) -> Result<usize, BatchError> {
    let total = frame_len(bytes)?;
    check_codec(bytes)?;
    Ok(total)
}

fn frame_len(bytes: &[u8]) -> Result<usize, BatchError> {
    if bytes.len() < RECORD_BATCH_OVERHEAD {
        return Err(BatchError::Truncated {
            needed: RECORD_BATCH_OVERHEAD,
            available: bytes.len(),
        });
    }
    let magic = bytes[MAGIC] as i8;
    if magic != MAGIC_V2 {
        return Err(BatchError::UnsupportedMagic(magic));
    }
    let batch_length = get_i32(bytes, BATCH_LENGTH);
    if batch_length < (RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) as i32 {
        return Err(BatchError::InvalidLength(batch_length));
    }
    let total = LOG_OVERHEAD + batch_length as usize;
    if bytes.len() < total {
        return Err(BatchError::Truncated {
            needed: total,
            available: bytes.len(),
        });
    }
    Ok(total)
}

fn check_codec(bytes: &[u8]) -> Result<(), BatchError> {
    let codec = get_i16(bytes, ATTRIBUTES) & COMPRESSION_CODEC_MASK;
    if codec != 0 {
        return Err(BatchError::UnsupportedCompression(codec));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_like_kafka() {
        // Kafka: ByteUtilsTest.testVarlongSerde boundary values
        for v in [
            0i64,
            1,
            -1,
            63,
            -64,
            64,
            -65,
            8191,
            -8192,
            i64::from(i32::MAX),
            i64::MIN,
            i64::MAX,
        ] {
            let mut b = BytesMut::new();
            put_varlong(&mut b, v);
            assert_eq!(b.len(), varlong_len(v));
            let mut pos = 0;
            assert_eq!(read_varlong(&b, &mut pos), Some(v));
            assert_eq!(pos, b.len());
        }
        // Known encodings: zigzag(1) = 2, zigzag(-1) = 1, 300 -> [0xd8, 0x04]
        let mut b = BytesMut::new();
        put_varint(&mut b, 300);
        assert_eq!(&b[..], &[0xd8, 0x04]);
    }

    #[test]
    fn truncated_varint_is_an_error_not_a_panic() {
        let mut pos = 0;
        assert_eq!(read_varlong(&[0x80, 0x80], &mut pos), None);
    }
}
