//! Conformance of our v2 record batch codec (`mirror_core::record`) with kafka-protocol 0.18's
//! independent implementation, plus the corruption/truncation behaviour Kafka's
//! `DefaultRecordBatchTest` checks.
//!
//! Known kafka-protocol deviations from Java Kafka that these tests work around (and document):
//! - Its encoder writes `baseTimestamp = min(record timestamps)`; Java's `MemoryRecordsBuilder`
//!   (and our `BatchBuilder`) use the FIRST record's timestamp. Bytes only match when the first
//!   record has the smallest timestamp; decoded absolute timestamps always agree.
//! - Its decoder derives each record's `sequence` as `base_sequence.wrapping_add(offset_delta)`,
//!   even for batches without a sequence (-1) and without Kafka's wrap to 0 after `i32::MAX`
//!   (`DefaultRecordBatch.incrementSequence`). We assert its values as they are and check Kafka's
//!   wrap on our side (`last_sequence`).
//! - Its headers are an `IndexMap<StrBytes, Option<Bytes>>`: duplicate header keys (legal in
//!   Kafka) collapse to one entry, and non-UTF-8 keys are rejected. Cross-checks use unique keys;
//!   `duplicate_header_keys_are_kept_by_us_but_collapsed_by_kafka_protocol` documents the rest.
//! - Its encoder never sets the LOG_APPEND_TIME attribute and decodes LOG_APPEND_TIME batches
//!   with per-record create times (Java returns `maxTimestamp` for every record).

use bytes::{Bytes, BytesMut};
use kafka_protocol::indexmap::IndexMap;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression, Record as KpRecord, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions,
    TimestampType as KpTimestampType,
};
use mirror_core::record::codec::compute_crc;
use mirror_core::record::{
    BatchBuilder, BatchError, ControlRecord, Header, RecordBatch, SimpleRecord, TimestampType,
};
use mirror_core::types::{LeaderEpoch, Offset, ProducerEpoch, ProducerId, Sequence};
use proptest::prelude::*;

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

/// The batch-level fields both encoders take.
#[derive(Copy, Clone, Debug)]
struct Params {
    base_offset: i64,
    epoch: i32,
    pid: i64,
    pepoch: i16,
    base_seq: i32,
    transactional: bool,
}

impl Params {
    fn plain(base_offset: i64, epoch: i32) -> Self {
        Self {
            base_offset,
            epoch,
            pid: -1,
            pepoch: -1,
            base_seq: -1,
            transactional: false,
        }
    }

    fn idempotent(base_offset: i64, epoch: i32, pid: i64, pepoch: i16, seq: i32) -> Self {
        Self {
            base_offset,
            epoch,
            pid,
            pepoch,
            base_seq: seq,
            transactional: false,
        }
    }

    fn transactional(base_offset: i64, epoch: i32, pid: i64, pepoch: i16, seq: i32) -> Self {
        Self {
            transactional: true,
            ..Self::idempotent(base_offset, epoch, pid, pepoch, seq)
        }
    }

    fn builder(self) -> BatchBuilder {
        BatchBuilder {
            base_offset: Offset(self.base_offset),
            partition_leader_epoch: LeaderEpoch(self.epoch),
            producer_id: ProducerId(self.pid),
            producer_epoch: ProducerEpoch(self.pepoch),
            base_sequence: Sequence(self.base_seq),
            is_transactional: self.transactional,
            timestamp_type: TimestampType::CreateTime,
        }
    }
}

fn b(s: &'static str) -> Bytes {
    Bytes::from_static(s.as_bytes())
}

fn hdr(key: &str, value: Option<&'static str>) -> Header {
    Header {
        key: key.to_owned(),
        value: value.map(b),
    }
}

fn rec(ts: i64, key: Option<&'static str>, value: Option<&'static str>) -> SimpleRecord {
    SimpleRecord {
        timestamp: ts,
        key: key.map(b),
        value: value.map(b),
        headers: Vec::new(),
    }
}

fn kp_headers(headers: &[Header]) -> IndexMap<StrBytes, Option<Bytes>> {
    headers
        .iter()
        .map(|h| (StrBytes::from_string(h.key.clone()), h.value.clone()))
        .collect()
}

fn header_list(h: &IndexMap<StrBytes, Option<Bytes>>) -> Vec<(String, Option<Bytes>)> {
    h.iter()
        .map(|(k, v)| (k.as_str().to_owned(), v.clone()))
        .collect()
}

fn our_header_list(h: &[Header]) -> Vec<(String, Option<Bytes>)> {
    h.iter().map(|h| (h.key.clone(), h.value.clone())).collect()
}

/// Decodes exactly one batch with kafka-protocol and checks it consumed every byte.
fn kp_decode_one(bytes: &Bytes) -> Vec<KpRecord> {
    let mut buf = bytes.clone();
    let set = RecordBatchDecoder::decode(&mut buf).expect("kafka-protocol decodes our batch");
    assert!(buf.is_empty(), "kafka-protocol left {} bytes", buf.len());
    assert_eq!(set.version, 2);
    assert_eq!(set.compression, Compression::None);
    set.records
}

/// kafka-protocol records for `records` with the batch fields of `p` (one batch).
fn kp_records(p: Params, control: bool, records: &[SimpleRecord]) -> Vec<KpRecord> {
    records
        .iter()
        .enumerate()
        .map(|(i, r)| KpRecord {
            transactional: p.transactional,
            control,
            delete_horizon: false,
            partition_leader_epoch: p.epoch,
            producer_id: p.pid,
            producer_epoch: p.pepoch,
            timestamp_type: KpTimestampType::Creation,
            offset: p.base_offset + i as i64,
            // kafka-protocol splits batches when `offset - sequence` changes, so sequences must
            // advance with offsets even for a batch without a sequence (base -1).
            sequence: p.base_seq.wrapping_add(i as i32),
            timestamp: r.timestamp,
            key: r.key.clone(),
            value: r.value.clone(),
            headers: kp_headers(&r.headers),
        })
        .collect()
}

fn kp_encode(records: &[KpRecord]) -> Bytes {
    let mut buf = BytesMut::new();
    RecordBatchEncoder::encode(
        &mut buf,
        records.iter(),
        &RecordEncodeOptions {
            version: 2,
            compression: Compression::None,
        },
    )
    .expect("kafka-protocol encodes");
    buf.freeze()
}

/// Asserts that kafka-protocol decodes `batch` to exactly `records` with `batch`'s header.
fn assert_kafka_protocol_agrees(batch: &RecordBatch, records: &[SimpleRecord]) {
    let h = *batch.header();
    let kp = kp_decode_one(batch.bytes());
    assert_eq!(kp.len(), records.len());
    assert_eq!(kp.len(), h.record_count as usize);
    for (i, (k, r)) in kp.iter().zip(records).enumerate() {
        assert_eq!(k.offset, h.base_offset.0 + i as i64, "offset of record {i}");
        assert_eq!(k.partition_leader_epoch, h.partition_leader_epoch.0);
        assert_eq!(k.producer_id, h.producer_id.0);
        assert_eq!(k.producer_epoch, h.producer_epoch.0);
        // kafka-protocol's own derivation (see module docs), not Kafka's wrap.
        assert_eq!(k.sequence, h.base_sequence.0.wrapping_add(i as i32));
        assert_eq!(k.transactional, batch.is_transactional());
        assert_eq!(k.control, batch.is_control_batch());
        assert!(!k.delete_horizon);
        let ts_type = match batch.timestamp_type() {
            TimestampType::CreateTime => KpTimestampType::Creation,
            TimestampType::LogAppendTime => KpTimestampType::LogAppend,
        };
        assert_eq!(k.timestamp_type, ts_type);
        assert_eq!(k.timestamp, r.timestamp, "timestamp of record {i}");
        assert_eq!(k.key, r.key, "key of record {i}");
        assert_eq!(k.value, r.value, "value of record {i}");
        assert_eq!(header_list(&k.headers), our_header_list(&r.headers));
    }
    let info = RecordBatchDecoder::decode_batch_info(&mut batch.bytes().clone())
        .expect("kafka-protocol decodes the header");
    assert_eq!(info.len(), 1);
    let info = &info[0];
    assert_eq!(info.record_count, h.record_count);
    assert_eq!(info.min_offset, h.base_offset.0);
    assert_eq!(info.min_timestamp, h.base_timestamp);
    assert_eq!(info.base_sequence, h.base_sequence.0);
    assert_eq!(info.transactional, batch.is_transactional());
    assert_eq!(info.control, batch.is_control_batch());
    assert_eq!(info.partition_leader_epoch, h.partition_leader_epoch.0);
    assert_eq!(info.producer_id, h.producer_id.0);
    assert_eq!(info.producer_epoch, h.producer_epoch.0);
    assert_eq!(info.version, 2);
}

/// Asserts our header and records for a batch built from `p` and `records`.
fn assert_ours_agrees(batch: &RecordBatch, p: Params, records: &[SimpleRecord]) {
    let h = batch.header();
    let n = records.len() as i32;
    assert_eq!(batch.base_offset(), Offset(p.base_offset));
    assert_eq!(
        batch.last_offset(),
        Offset(p.base_offset + i64::from(n) - 1)
    );
    assert_eq!(batch.next_offset(), Offset(p.base_offset + i64::from(n)));
    assert_eq!(batch.partition_leader_epoch(), LeaderEpoch(p.epoch));
    assert_eq!(batch.producer_id(), ProducerId(p.pid));
    assert_eq!(batch.producer_epoch(), ProducerEpoch(p.pepoch));
    assert_eq!(batch.base_sequence(), Sequence(p.base_seq));
    let last_seq = if p.base_seq == -1 {
        Sequence::NONE
    } else {
        Sequence(p.base_seq).increment(n - 1)
    };
    assert_eq!(batch.last_sequence(), last_seq);
    assert_eq!(batch.is_transactional(), p.transactional);
    assert_eq!(batch.record_count(), n);
    assert_eq!(h.last_offset_delta, n - 1);
    assert_eq!(h.batch_length as usize + 12, batch.size_in_bytes());
    assert_eq!(
        batch.max_timestamp(),
        records
            .iter()
            .map(|r| r.timestamp)
            .max()
            .expect("non-empty")
    );
    assert!(batch.is_valid());
    let decoded = batch.records();
    assert_eq!(decoded.len(), records.len());
    for (i, (d, r)) in decoded.iter().zip(records).enumerate() {
        assert_eq!(d.offset_delta, i as i32);
        assert_eq!(h.base_timestamp + d.timestamp_delta, r.timestamp);
        assert_eq!(d.key, r.key);
        assert_eq!(d.value, r.value);
        assert_eq!(d.headers, r.headers);
    }
    // The in-place value reader agrees with the full decode, record by record.
    let values: Vec<(i32, Option<&[u8]>)> = batch.record_values().collect();
    let expected: Vec<(i32, Option<&[u8]>)> = decoded
        .iter()
        .map(|d| (d.offset_delta, d.value.as_deref()))
        .collect();
    assert_eq!(values, expected);
    for (i, r) in records.iter().enumerate() {
        let at = Offset(p.base_offset + i as i64);
        assert_eq!(batch.value_at(at), Some(r.value.as_deref()));
    }
    assert_eq!(batch.value_at(batch.next_offset()), None);
    assert_eq!(batch.value_at(Offset(p.base_offset - 1)), None);
    // Decoding the wire bytes again gives the same batch (header included).
    let again = RecordBatch::decode(batch.bytes().clone()).expect("our bytes decode");
    assert_eq!(&again, batch);
    assert_eq!(again.header(), batch.header());
}

fn abc_batch() -> RecordBatch {
    BatchBuilder::new().build(&[
        rec(1, Some("a"), Some("1")),
        rec(2, Some("b"), Some("2")),
        rec(3, Some("c"), Some("3")),
    ])
}

fn diff_positions(a: &[u8], b: &[u8]) -> Vec<usize> {
    assert_eq!(a.len(), b.len());
    (0..a.len()).filter(|&i| a[i] != b[i]).collect()
}

// ---------------------------------------------------------------------------------------
// (a) Batches we build decode with kafka-protocol, field for field
// ---------------------------------------------------------------------------------------

#[test]
fn build_default_record_batch() {
    // Kafka: DefaultRecordBatchTest.buildDefaultRecordBatch: a plain two-record batch.
    let p = Params::plain(1_234_567, -1);
    let records = [rec(1, Some("a"), Some("v")), rec(2, Some("b"), Some("v"))];
    let batch = p.builder().build(&records);
    assert_eq!(batch.last_offset(), Offset(1_234_568));
    assert_eq!(batch.max_timestamp(), 2);
    assert_eq!(batch.producer_id(), ProducerId::NONE);
    assert_eq!(batch.producer_epoch(), ProducerEpoch::NONE);
    assert_eq!(batch.base_sequence(), Sequence::NONE);
    assert_eq!(batch.last_sequence(), Sequence::NONE);
    assert!(!batch.is_control_batch());
    assert_eq!(batch.control_record(), None);
    assert_ours_agrees(&batch, p, &records);
    assert_kafka_protocol_agrees(&batch, &records);
}

#[test]
fn build_default_record_batch_with_producer_id() {
    // Kafka: DefaultRecordBatchTest.buildDefaultRecordBatchWithProducerId: an idempotent batch.
    let p = Params::idempotent(1_234_567, 3, 23_423, 145, 983);
    let records = [rec(1, Some("a"), Some("v")), rec(2, Some("b"), Some("v"))];
    let batch = p.builder().build(&records);
    assert_eq!(batch.last_sequence(), Sequence(984));
    assert!(!batch.is_transactional());
    assert_ours_agrees(&batch, p, &records);
    assert_kafka_protocol_agrees(&batch, &records);
}

#[test]
fn build_default_record_batch_with_sequence_wrap_around() {
    // Kafka: DefaultRecordBatchTest.buildDefaultRecordBatchWithSequenceWrapAround: Kafka's
    // record sequences are MAX-1, MAX, 0 and lastSequence is 0.
    let p = Params::idempotent(1_234_567, 0, 23_423, 145, i32::MAX - 1);
    let records = [
        rec(1, Some("a"), Some("v")),
        rec(2, Some("b"), Some("v")),
        rec(3, Some("c"), Some("v")),
    ];
    let batch = p.builder().build(&records);
    assert_eq!(batch.base_sequence(), Sequence(i32::MAX - 1));
    assert_eq!(batch.last_sequence(), Sequence(0));
    assert_ours_agrees(&batch, p, &records);
    // kafka-protocol does not wrap to 0: its third record has i32::MIN (documented deviation).
    let kp = kp_decode_one(batch.bytes());
    let seqs: Vec<i32> = kp.iter().map(|r| r.sequence).collect();
    assert_eq!(seqs, vec![i32::MAX - 1, i32::MAX, i32::MIN]);
    assert_kafka_protocol_agrees(&batch, &records);
}

#[test]
fn transactional_batch_decodes_with_kafka_protocol() {
    // Goal: the transactional attribute and producer fields survive a kafka-protocol decode.
    let p = Params::transactional(100, 7, 4242, 3, 17);
    let records = [
        rec(1_000, Some("k1"), Some("v1")),
        rec(1_005, None, Some("v2")),
    ];
    let batch = p.builder().build(&records);
    assert!(batch.is_transactional());
    assert!(!batch.is_control_batch());
    assert_eq!(batch.header().attributes, 0x10);
    assert_ours_agrees(&batch, p, &records);
    assert_kafka_protocol_agrees(&batch, &records);
    // The raw header layout (offsets of DefaultRecordBatch), read by hand.
    let raw = batch.bytes();
    assert_eq!(&raw[0..8], &100i64.to_be_bytes());
    assert_eq!(&raw[8..12], &((raw.len() - 12) as i32).to_be_bytes());
    assert_eq!(&raw[12..16], &7i32.to_be_bytes());
    assert_eq!(raw[16], 2);
    assert_eq!(&raw[21..23], &0x10i16.to_be_bytes());
    assert_eq!(&raw[23..27], &1i32.to_be_bytes());
    assert_eq!(&raw[27..35], &1_000i64.to_be_bytes());
    assert_eq!(&raw[35..43], &1_005i64.to_be_bytes());
    assert_eq!(&raw[43..51], &4242i64.to_be_bytes());
    assert_eq!(&raw[51..53], &3i16.to_be_bytes());
    assert_eq!(&raw[53..57], &17i32.to_be_bytes());
    assert_eq!(&raw[57..61], &2i32.to_be_bytes());
    assert_eq!(
        compute_crc(raw),
        u32::from_be_bytes(raw[17..21].try_into().expect("4"))
    );
}

#[test]
fn keys_values_headers_and_nulls_decode_with_kafka_protocol() {
    // Goal: null keys, null values (tombstones), empty keys/values, null and empty header
    // values, an empty header key and a non-ASCII header key all round-trip.
    let p = Params::idempotent(42, 5, 9, 0, 0);
    let records = [
        SimpleRecord {
            timestamp: 10,
            key: None,
            value: None,
            headers: vec![],
        },
        SimpleRecord {
            timestamp: 11,
            key: Some(Bytes::new()),
            value: Some(Bytes::new()),
            headers: vec![hdr("", None)],
        },
        SimpleRecord {
            timestamp: 12,
            key: Some(b("key")),
            value: None,
            headers: vec![
                hdr("foo", Some("value")),
                hdr("bar", None),
                hdr("empty", Some("")),
                hdr("ünïcødé-κλειδί", Some("x")),
            ],
        },
        SimpleRecord {
            timestamp: 13,
            key: None,
            value: Some(Bytes::from(vec![0u8; 300])),
            headers: vec![hdr("k", Some("v"))],
        },
    ];
    let batch = p.builder().build(&records);
    assert_ours_agrees(&batch, p, &records);
    assert_kafka_protocol_agrees(&batch, &records);
}

#[test]
fn many_records_decode_with_kafka_protocol() {
    // Goal: multi-byte varints (offset deltas > 63 and > 8191, large and negative timestamp
    // deltas, long values) agree with kafka-protocol.
    let p = Params::transactional(5_000_000_000, 12, 77, 2, 1_000);
    let records: Vec<SimpleRecord> = (0..10_000i64)
        .map(|i| SimpleRecord {
            // Not monotonic: some records are older than the first one.
            timestamp: 1_700_000_000_000 + (i * 7_919) % 100_003 - 50_000,
            key: (i % 3 != 0).then(|| Bytes::from(format!("key-{i}"))),
            value: Some(Bytes::from(vec![(i % 251) as u8; (i % 200) as usize])),
            headers: if i % 5 == 0 {
                vec![Header {
                    key: format!("h{i}"),
                    value: Some(Bytes::from(i.to_be_bytes().to_vec())),
                }]
            } else {
                vec![]
            },
        })
        .collect();
    let batch = p.builder().build(&records);
    assert_eq!(batch.last_offset(), Offset(5_000_000_000 + 9_999));
    assert_ours_agrees(&batch, p, &records);
    assert_kafka_protocol_agrees(&batch, &records);
}

#[test]
fn test_read_and_write_control_batch() {
    // Kafka: DefaultRecordBatchTest.testReadAndWriteControlBatch: a COMMIT marker (and ABORT)
    // is a transactional control batch whose record is (version 0, type) / (version 0, epoch).
    for (marker, type_id) in [
        (ControlRecord::commit(15), 1u8),
        (ControlRecord::abort(-1), 0),
    ] {
        let p = Params::transactional(88, 4, 1, 0, -1);
        let batch = p.builder().build_control(marker, 1_234);
        assert!(batch.is_control_batch());
        assert!(batch.is_transactional());
        assert_eq!(batch.header().attributes, 0x30);
        assert_eq!(batch.control_record(), Some(marker));
        assert_eq!(batch.record_count(), 1);
        assert_eq!(batch.base_sequence(), Sequence::NONE);
        let expected = [SimpleRecord {
            timestamp: 1_234,
            key: Some(Bytes::from(vec![0, 0, 0, type_id])),
            value: Some(marker.value_bytes()),
            headers: vec![],
        }];
        assert_ours_agrees(&batch, p, &expected);
        assert_kafka_protocol_agrees(&batch, &expected);
        let kp = kp_decode_one(batch.bytes());
        let value = kp[0].value.as_ref().expect("marker value");
        assert_eq!(&value[..2], &[0, 0], "marker value version 0");
        let coordinator_epoch = i32::from_be_bytes(value[2..6].try_into().expect("4 bytes"));
        assert_eq!(
            ControlRecord::EndTxn {
                commit: type_id == 1,
                coordinator_epoch
            },
            marker
        );
    }
}

#[test]
fn mirror_pid_reset_control_batch_decodes_with_kafka_protocol() {
    // Goal: KIP-1279's MIRROR_PID_RESET is a NON-transactional control batch of one record
    // with key (0, 7) and value (0), and kafka-protocol reads it as a control batch.
    let p = Params::plain(300, 9);
    let batch = p.builder().build_control(ControlRecord::MirrorPidReset, 55);
    assert!(batch.is_control_batch());
    assert!(!batch.is_transactional());
    assert_eq!(batch.header().attributes, 0x20);
    assert_eq!(batch.control_record(), Some(ControlRecord::MirrorPidReset));
    assert_eq!(batch.next_offset(), Offset(301));
    let expected = [SimpleRecord {
        timestamp: 55,
        key: Some(Bytes::from_static(&[0, 0, 0, 7])),
        value: Some(Bytes::from_static(&[0, 0])),
        headers: vec![],
    }];
    assert_ours_agrees(&batch, p, &expected);
    assert_kafka_protocol_agrees(&batch, &expected);
}

#[test]
fn mirror_pid_reset_names_its_source_cluster() {
    // Goal: the stop's reset carries `SourceClusterId` (the prototype's MirrorPidResetRecord
    // {Version, SourceClusterId}) as a Kafka string, still a one-record, non-transactional
    // control batch that kafka-protocol reads; a version-only reset names no source.
    let p = Params::plain(20, 1);
    let batch = p.builder().build_mirror_pid_reset("src-cluster", 55);
    assert!(batch.is_control_batch());
    assert!(!batch.is_transactional());
    assert_eq!(batch.control_record(), Some(ControlRecord::MirrorPidReset));
    assert_eq!(
        batch.mirror_pid_reset_source().as_deref(),
        Some("src-cluster")
    );
    let mut value = vec![0, 0, 0, 11];
    value.extend_from_slice(b"src-cluster");
    let expected = [SimpleRecord {
        timestamp: 55,
        key: Some(Bytes::from_static(&[0, 0, 0, 7])),
        value: Some(Bytes::from(value)),
        headers: vec![],
    }];
    assert_ours_agrees(&batch, p, &expected);
    assert_kafka_protocol_agrees(&batch, &expected);
    let plain = p.builder().build_control(ControlRecord::MirrorPidReset, 55);
    assert_eq!(plain.mirror_pid_reset_source(), None);
    let commit = p.builder().build_control(ControlRecord::commit(0), 55);
    assert_eq!(commit.mirror_pid_reset_source(), None);
}

#[test]
fn log_append_time_attribute_decodes_with_kafka_protocol() {
    // Goal: the timestamp-type bit (0x08) is read the same way by kafka-protocol.
    let mut builder = Params::plain(0, 1).builder();
    builder.timestamp_type = TimestampType::LogAppendTime;
    let records = [rec(5, None, Some("x")), rec(6, None, Some("y"))];
    let batch = builder.build(&records);
    assert_eq!(batch.timestamp_type(), TimestampType::LogAppendTime);
    assert_eq!(batch.header().attributes, 0x08);
    assert_kafka_protocol_agrees(&batch, &records);
}

#[test]
fn duplicate_header_keys_are_kept_by_us_but_collapsed_by_kafka_protocol() {
    // Goal: Kafka allows repeated header keys; we keep both in order. kafka-protocol's
    // IndexMap keeps one entry (first position, last value): a limitation of that crate.
    let records = [SimpleRecord {
        timestamp: 1,
        key: None,
        value: Some(b("v")),
        headers: vec![hdr("k", Some("1")), hdr("other", None), hdr("k", Some("2"))],
    }];
    let batch = BatchBuilder::new().build(&records);
    assert_eq!(batch.records()[0].headers, records[0].headers);
    let kp = kp_decode_one(batch.bytes());
    assert_eq!(
        header_list(&kp[0].headers),
        vec![("k".to_owned(), Some(b("2"))), ("other".to_owned(), None)]
    );
}

// ---------------------------------------------------------------------------------------
// (b) Batches encoded by kafka-protocol decode with ours and rebuild byte for byte
// ---------------------------------------------------------------------------------------

fn assert_kp_batch_rebuilds(p: Params, records: &[SimpleRecord]) {
    let bytes = kp_encode(&kp_records(p, false, records));
    let ours = RecordBatch::decode(bytes.clone()).expect("we decode kafka-protocol's batch");
    assert_ours_agrees(&ours, p, records);
    let rebuilt = p.builder().build(records);
    assert_eq!(rebuilt.bytes(), &bytes, "byte-identical rebuild for {p:?}");
    assert_eq!(rebuilt, ours);
}

#[test]
fn kafka_protocol_data_batches_rebuild_byte_identical() {
    // Goal: plain, idempotent and transactional batches from kafka-protocol's encoder are
    // byte-identical to what our BatchBuilder produces from the same fields.
    let records = vec![
        rec(1_000, Some("a"), Some("1")),
        rec(1_000, None, Some("2")),
        SimpleRecord {
            timestamp: 1_010,
            key: Some(b("c")),
            value: None,
            headers: vec![hdr("h1", Some("x")), hdr("h2", None)],
        },
        rec(2_000_000, Some(""), Some("")),
    ];
    for p in [
        Params::plain(0, -1),
        Params::plain(17, 3),
        Params::idempotent(1 << 40, 6, 1 << 33, i16::MAX, 0),
        Params::idempotent(9, 0, 0, 0, i32::MAX - 1),
        Params::transactional(123_456, 2_000_000, 4242, 3, 17),
    ] {
        assert_kp_batch_rebuilds(p, &records);
        assert_kp_batch_rebuilds(p, &records[..1]);
    }
}

#[test]
fn kafka_protocol_control_batches_rebuild_byte_identical() {
    // Goal: COMMIT/ABORT markers and MIRROR_PID_RESET encoded by kafka-protocol decode as
    // control records and equal our `build_control` output byte for byte.
    let cases = [
        (
            Params::transactional(50, 3, 77, 1, -1),
            ControlRecord::commit(9),
        ),
        (
            Params::transactional(51, 3, 77, 1, -1),
            ControlRecord::abort(0),
        ),
        (Params::plain(52, 3), ControlRecord::MirrorPidReset),
    ];
    for (p, marker) in cases {
        let records = [SimpleRecord {
            timestamp: 777,
            key: Some(marker.key_bytes()),
            value: Some(marker.value_bytes()),
            headers: vec![],
        }];
        let bytes = kp_encode(&kp_records(p, true, &records));
        let ours = RecordBatch::decode(bytes.clone()).expect("we decode the control batch");
        assert!(ours.is_control_batch());
        assert_eq!(ours.is_transactional(), p.transactional);
        assert_eq!(ours.control_record(), Some(marker));
        let rebuilt = p.builder().build_control(marker, 777);
        assert_eq!(rebuilt.bytes(), &bytes, "{marker:?}");
        assert_built_is_decoded(&rebuilt);
    }
    for cluster in ["", "src", "a-much-longer-source-cluster-id"] {
        let reset = Params::plain(9, 1)
            .builder()
            .build_mirror_pid_reset(cluster, 5);
        assert_built_is_decoded(&reset);
        assert_eq!(reset.mirror_pid_reset_source().as_deref(), Some(cluster));
    }
}

/// The builder puts its batch together from what it wrote instead of parsing it back: that
/// batch must be exactly what a decode of its bytes gives (header, control record, validity).
fn assert_built_is_decoded(built: &RecordBatch) {
    let decoded = RecordBatch::decode(built.bytes().clone()).expect("a built batch decodes");
    assert_eq!(built.header(), decoded.header());
    assert_eq!(built.control_record(), decoded.control_record());
    assert!(built.is_valid());
}

#[test]
fn kafka_protocol_uses_min_timestamp_as_base_where_kafka_uses_the_first() {
    // Goal: document the one header difference: for records whose first timestamp is not the
    // smallest, kafka-protocol writes baseTimestamp = min (Java and we write the first record's).
    // Both decoders still agree on every absolute timestamp.
    let p = Params::plain(0, 0);
    let records = [
        rec(500, None, Some("a")),
        rec(100, None, Some("b")),
        rec(900, None, Some("c")),
    ];
    let kp_bytes = kp_encode(&kp_records(p, false, &records));
    let from_kp = RecordBatch::decode(kp_bytes.clone()).expect("decodes");
    assert_eq!(from_kp.header().base_timestamp, 100);
    assert_ours_agrees(&from_kp, p, &records);
    let ours = p.builder().build(&records);
    assert_eq!(ours.header().base_timestamp, 500);
    assert_eq!(ours.header().max_timestamp, 900);
    assert_ne!(ours.bytes(), &kp_bytes);
    assert_kafka_protocol_agrees(&ours, &records);
}

#[test]
fn kafka_protocol_multi_batch_stream_splits_with_decode_many() {
    // Goal: kafka-protocol splits records with different batch properties into consecutive
    // batches; `decode_many` reads them all back.
    let a = Params::idempotent(0, 1, 5, 0, 0);
    let b2 = Params::transactional(2, 1, 6, 0, 0);
    let c = Params::plain(3, 2);
    let mut all = kp_records(
        a,
        false,
        &[rec(1, None, Some("a")), rec(2, None, Some("b"))],
    );
    all.extend(kp_records(b2, false, &[rec(3, None, Some("c"))]));
    all.extend(kp_records(c, false, &[rec(4, None, Some("d"))]));
    let bytes = kp_encode(&all);
    let (batches, err) = RecordBatch::decode_many(bytes);
    assert_eq!(err, None);
    assert_eq!(batches.len(), 3);
    assert_eq!(
        batches
            .iter()
            .map(|b| b.base_offset().0)
            .collect::<Vec<_>>(),
        vec![0, 2, 3]
    );
    assert!(batches[1].is_transactional());
    assert_eq!(batches[2].producer_id(), ProducerId::NONE);
}

// ---------------------------------------------------------------------------------------
// (c) Corruption, truncation, in-place rewrites, torn segments
// ---------------------------------------------------------------------------------------

#[test]
fn flipped_payload_byte_is_invalid_crc() {
    // Goal: flipping any byte covered by the CRC (attributes onwards) fails with InvalidCrc,
    // reporting the stored and recomputed checksums; kafka-protocol rejects it as well.
    let batch = abc_batch();
    let stored = batch.header().crc;
    for i in 21..batch.size_in_bytes() {
        let mut bytes = batch.bytes().to_vec();
        bytes[i] ^= 0xff;
        let computed = compute_crc(&bytes);
        assert_ne!(computed, stored);
        assert_eq!(
            RecordBatch::decode(Bytes::from(bytes.clone())),
            Err(BatchError::InvalidCrc {
                base_offset: 0,
                stored,
                computed
            }),
            "byte {i}"
        );
        assert!(RecordBatchDecoder::decode(&mut Bytes::from(bytes)).is_err());
    }
}

#[test]
fn flipped_crc_field_is_invalid_crc() {
    // Goal: corrupting the stored CRC itself is detected.
    let batch = abc_batch();
    for i in 17..21 {
        let mut bytes = batch.bytes().to_vec();
        bytes[i] ^= 0x01;
        assert!(matches!(
            RecordBatch::decode(Bytes::from(bytes)),
            Err(BatchError::InvalidCrc { .. })
        ));
    }
}

#[test]
fn test_invalid_crc() {
    // Kafka: DefaultRecordBatchTest.testInvalidCrc: rewriting lastOffsetDelta breaks the CRC.
    let mut bytes = abc_batch().bytes().to_vec();
    bytes[23..27].copy_from_slice(&23i32.to_be_bytes());
    assert!(matches!(
        RecordBatch::decode(Bytes::from(bytes)),
        Err(BatchError::InvalidCrc { .. })
    ));
}

#[test]
fn test_invalid_record_size() {
    // Kafka: DefaultRecordBatchTest.testInvalidRecordSize: batchLength = 10 is corrupt.
    let mut bytes = abc_batch().bytes().to_vec();
    bytes[8..12].copy_from_slice(&10i32.to_be_bytes());
    assert_eq!(
        RecordBatch::decode(Bytes::from(bytes)),
        Err(BatchError::InvalidLength(10))
    );
}

#[test]
fn batch_length_past_the_buffer_is_truncated() {
    // Goal: a batchLength larger than the bytes present reads as a truncated batch.
    let batch = abc_batch();
    let mut bytes = batch.bytes().to_vec();
    let len = batch.header().batch_length + 5;
    bytes[8..12].copy_from_slice(&len.to_be_bytes());
    assert_eq!(
        RecordBatch::decode(Bytes::from(bytes)),
        Err(BatchError::Truncated {
            needed: 12 + len as usize,
            available: batch.size_in_bytes()
        })
    );
}

#[test]
fn every_truncated_prefix_is_truncated() {
    // Goal: any strict prefix of a batch (torn write) fails with Truncated, never a panic.
    let batch = abc_batch();
    let total = batch.size_in_bytes();
    for len in 0..total {
        let needed = if len < 61 { 61 } else { total };
        assert_eq!(
            RecordBatch::decode(batch.bytes().slice(..len)),
            Err(BatchError::Truncated {
                needed,
                available: len
            }),
            "prefix of {len} bytes"
        );
        assert!(RecordBatchDecoder::decode(&mut batch.bytes().slice(..len)).is_err());
    }
}

#[test]
fn wrong_magic_is_unsupported_magic() {
    // Goal: magic 0/1 (legacy message sets) and unknown magics are rejected before the CRC
    // (the magic byte is outside the CRC, so the CRC itself is still valid).
    let batch = abc_batch();
    for magic in [0i8, 1, 3, -1] {
        let mut bytes = batch.bytes().to_vec();
        bytes[16] = magic as u8;
        assert_eq!(
            RecordBatch::decode(Bytes::from(bytes.clone())),
            Err(BatchError::UnsupportedMagic(magic))
        );
        assert!(RecordBatchDecoder::decode(&mut Bytes::from(bytes)).is_err());
    }
}

#[test]
fn compressed_batch_with_valid_crc_is_unsupported_compression() {
    // Goal: a compression codec in the attributes (CRC recomputed) is out of the model's scope.
    let batch = abc_batch();
    for codec in 1i16..=4 {
        let mut bytes = batch.bytes().to_vec();
        bytes[21..23].copy_from_slice(&codec.to_be_bytes());
        let crc = compute_crc(&bytes);
        bytes[17..21].copy_from_slice(&crc.to_be_bytes());
        assert_eq!(
            RecordBatch::decode(Bytes::from(bytes)),
            Err(BatchError::UnsupportedCompression(codec))
        );
    }
}

/// A CRC-valid batch holding `body` as its records section (hand-crafted record bytes).
fn raw_batch(body: &[u8], count: i32, last_offset_delta: i32) -> Bytes {
    let template = BatchBuilder::new().build(&[rec(0, None, Some("x"))]);
    let mut bytes = template.bytes()[..61].to_vec();
    bytes.extend_from_slice(body);
    let len = (bytes.len() - 12) as i32;
    bytes[8..12].copy_from_slice(&len.to_be_bytes());
    bytes[23..27].copy_from_slice(&last_offset_delta.to_be_bytes());
    bytes[57..61].copy_from_slice(&count.to_be_bytes());
    let crc = compute_crc(&bytes);
    bytes[17..21].copy_from_slice(&crc.to_be_bytes());
    Bytes::from(bytes)
}

/// Record bytes: `[length][attributes 0][fields...]` with a one-byte length prefix.
fn raw_record(fields: &[u8]) -> Vec<u8> {
    let body_len = fields.len() + 1;
    assert!(body_len < 64, "one-byte zigzag length");
    let mut out = vec![(body_len as u8) << 1, 0];
    out.extend_from_slice(fields);
    out
}

fn with_record_count(batch: &RecordBatch, count: i32) -> Bytes {
    let mut bytes = batch.bytes().to_vec();
    bytes[57..61].copy_from_slice(&count.to_be_bytes());
    let crc = compute_crc(&bytes);
    bytes[17..21].copy_from_slice(&crc.to_be_bytes());
    Bytes::from(bytes)
}

#[test]
fn raw_batch_helper_matches_the_builder() {
    // Goal: the hand-crafting helper reproduces a builder batch exactly (so the tests below
    // change only what they mean to change).
    // ts delta 0, offset delta 0, key null (-1 -> 0x01), value "x" (1 -> 0x02), 0 headers.
    let body = raw_record(&[0, 0, 0x01, 0x02, b'x', 0]);
    let built = BatchBuilder::new().build(&[rec(0, None, Some("x"))]);
    assert_eq!(&raw_batch(&body, 1, 0), built.bytes());
}

#[test]
fn test_invalid_record_count_too_many_non_compressed_v2() {
    // Kafka: DefaultRecordBatchTest.testInvalidRecordCountTooManyNonCompressedV2: a count
    // above the records present is corrupt (CRC recomputed, so only the count is wrong).
    let bytes = with_record_count(&abc_batch(), 5);
    assert!(matches!(
        RecordBatch::decode(bytes),
        Err(BatchError::CorruptRecord { index: 3, .. })
    ));
}

#[test]
fn test_invalid_record_count_too_little_non_compressed_v2() {
    // Kafka: DefaultRecordBatchTest.testInvalidRecordCountTooLittleNonCompressedV2: records
    // left over after `count` records are corrupt.
    let bytes = with_record_count(&abc_batch(), 2);
    assert!(matches!(
        RecordBatch::decode(bytes),
        Err(BatchError::CorruptRecord { .. })
    ));
}

#[test]
fn varint_longer_than_five_bytes_is_corrupt_like_kafka() {
    // Goal: Kafka's ByteUtils.readVarint fails when a 5th byte still has the continuation bit
    // (DefaultRecord.readFrom turns that into InvalidRecordException). Here the key length -1
    // is written in 6 bytes.
    let body = raw_record(&[
        0, // timestamp delta
        0, // offset delta
        0x81, 0x80, 0x80, 0x80, 0x80, 0x00, // key length -1, overlong
        0x02, b'x', // value "x"
        0,    // headers
    ]);
    assert!(matches!(
        RecordBatch::decode(raw_batch(&body, 1, 0)),
        Err(BatchError::CorruptRecord { index: 0, .. })
    ));
}

#[test]
fn five_byte_varint_drops_bits_above_32_like_kafka() {
    // Goal: Kafka keeps only the low 32 bits of a 5-byte varint (`result |= tmp << 28` on an
    // int), so offset delta 0 written as 80 80 80 80 10 reads as 0 rather than failing.
    let body = raw_record(&[
        0, // timestamp delta
        0x80, 0x80, 0x80, 0x80, 0x10, // offset delta: 2^32 truncated to 0
        0x01, // key null
        0x02, b'x', // value "x"
        0,    // headers
    ]);
    let batch = RecordBatch::decode(raw_batch(&body, 1, 0)).expect("Kafka accepts this batch");
    let records = batch.records();
    assert_eq!(records[0].offset_delta, 0);
    assert_eq!(records[0].value, Some(b("x")));
}

#[test]
fn non_utf8_header_key_is_accepted_like_kafka() {
    // Goal: Kafka reads header keys with `new String(bytes, UTF_8)`, replacing malformed input,
    // so a batch with a non-UTF-8 header key is valid; the batch bytes stay exact.
    // kafka-protocol (StrBytes) rejects such a batch.
    let body = raw_record(&[
        0, 0, 0x01, 0x02, b'x', // ts, offset delta, null key, value "x"
        0x02, // 1 header
        0x04, 0xff, b'a', // key: 2 bytes, not UTF-8
        0x01, // null header value
    ]);
    let bytes = raw_batch(&body, 1, 0);
    let batch = RecordBatch::decode(bytes.clone()).expect("Kafka accepts this batch");
    assert_eq!(batch.bytes(), &bytes);
    assert_eq!(
        batch.records()[0].headers,
        vec![Header {
            key: "\u{fffd}a".to_owned(),
            value: None
        }]
    );
    assert!(RecordBatchDecoder::decode(&mut bytes.clone()).is_err());
}

#[test]
fn bytes_beyond_the_batch_are_rejected_by_decode() {
    // Goal: `decode` takes exactly one batch; trailing bytes are an error (use decode_many).
    let batch = abc_batch();
    let mut bytes = batch.bytes().to_vec();
    bytes.push(0);
    assert!(matches!(
        RecordBatch::decode(Bytes::from(bytes)),
        Err(BatchError::CorruptRecord { .. })
    ));
}

#[test]
fn fields_outside_the_crc_can_be_rewritten_without_breaking_it() {
    // Goal: baseOffset (0..8) and partitionLeaderEpoch (12..16) are outside the CRC.
    let batch = abc_batch();
    for i in (0..8).chain(12..16) {
        let mut bytes = batch.bytes().to_vec();
        bytes[i] ^= 0x5a;
        let d = RecordBatch::decode(Bytes::from(bytes)).expect("still valid");
        assert_eq!(d.header().crc, batch.header().crc);
    }
}

#[test]
fn test_set_last_offset_and_partition_leader_epoch() {
    // Kafka: DefaultRecordBatchTest.testSetLastOffset / testSetPartitionLeaderEpoch, as the
    // leader's `with_offset_and_epoch`: CRC stays valid, only bytes 0..8 and 12..16 change.
    let batch = Params::idempotent(0, -1, 7, 1, 40).builder().build(&[
        SimpleRecord {
            timestamp: 1,
            key: Some(b("a")),
            value: Some(b("1")),
            headers: vec![hdr("h", Some("v"))],
        },
        rec(2, Some("b"), Some("2")),
        rec(3, Some("c"), Some("3")),
    ]);
    let moved = batch.with_offset_and_epoch(Offset(498), LeaderEpoch(500));
    assert_eq!(moved.last_offset(), Offset(500));
    assert_eq!(moved.base_offset(), Offset(498));
    assert_eq!(moved.partition_leader_epoch(), LeaderEpoch(500));
    assert!(moved.is_valid());
    assert_eq!(moved.header().crc, batch.header().crc);
    let diff = diff_positions(batch.bytes(), moved.bytes());
    assert!(!diff.is_empty());
    assert!(
        diff.iter().all(|&i| i < 8 || (12..16).contains(&i)),
        "changed bytes {diff:?}"
    );
    assert_eq!(&moved.bytes()[0..8], &498i64.to_be_bytes());
    assert_eq!(&moved.bytes()[12..16], &500i32.to_be_bytes());
    assert_eq!(moved.records(), batch.records());
    // Every other header field is unchanged; the re-parsed header equals the patched one.
    let reparsed = RecordBatch::decode(moved.bytes().clone()).expect("valid");
    assert_eq!(reparsed.header(), moved.header());
    let mut expected = *batch.header();
    expected.base_offset = Offset(498);
    expected.partition_leader_epoch = LeaderEpoch(500);
    assert_eq!(*moved.header(), expected);
    // kafka-protocol sees the new offsets and epoch.
    let kp = kp_decode_one(moved.bytes());
    assert_eq!(
        kp.iter().map(|r| r.offset).collect::<Vec<_>>(),
        vec![498, 499, 500]
    );
    assert!(kp.iter().all(|r| r.partition_leader_epoch == 500));
    // Same offset and epoch: identical bytes.
    assert_eq!(
        batch
            .with_offset_and_epoch(Offset(0), LeaderEpoch(-1))
            .bytes(),
        batch.bytes()
    );
    // Only the epoch, or only the offset.
    let e_only = batch.with_offset_and_epoch(Offset(0), LeaderEpoch(3));
    assert!(
        diff_positions(batch.bytes(), e_only.bytes())
            .iter()
            .all(|i| (12..16).contains(i))
    );
    let o_only = batch.with_offset_and_epoch(Offset(1 << 50), LeaderEpoch(-1));
    assert!(
        diff_positions(batch.bytes(), o_only.bytes())
            .iter()
            .all(|&i| i < 8)
    );
    // Control batches keep their control record.
    let marker = Params::transactional(0, 0, 1, 0, -1)
        .builder()
        .build_control(ControlRecord::commit(4), 9);
    let moved = marker.with_offset_and_epoch(Offset(77), LeaderEpoch(8));
    assert_eq!(moved.control_record(), Some(ControlRecord::commit(4)));
    assert!(moved.is_valid());
}

fn three_batches() -> Vec<RecordBatch> {
    vec![
        abc_batch(),
        Params::idempotent(3, 0, 1, 0, 0)
            .builder()
            .build(&[rec(4, None, Some("d"))]),
        Params::transactional(4, 0, 2, 0, 0)
            .builder()
            .build(&[rec(5, Some("e"), Some("5")), rec(6, Some("f"), None)]),
    ]
}

fn concat(batches: &[RecordBatch]) -> Vec<u8> {
    batches.iter().flat_map(|b| b.bytes().to_vec()).collect()
}

#[test]
fn decode_many_reads_every_batch_of_a_clean_segment() {
    // Goal: a clean concatenation decodes fully, with no error; an empty buffer is empty.
    let batches = three_batches();
    let (got, err) = RecordBatch::decode_many(Bytes::from(concat(&batches)));
    assert_eq!(err, None);
    assert_eq!(got, batches);
    assert_eq!(RecordBatch::decode_many(Bytes::new()), (vec![], None));
}

#[test]
fn decode_many_on_torn_last_batch_returns_valid_prefix_and_error() {
    // Goal: for every torn length of the last batch, the first two batches come back and the
    // error says Truncated (Kafka's log recovery truncates the segment there).
    let batches = three_batches();
    let full = concat(&batches);
    let prefix_len = batches[0].size_in_bytes() + batches[1].size_in_bytes();
    for cut in 1..batches[2].size_in_bytes() {
        let torn = Bytes::from(full[..prefix_len + cut].to_vec());
        let (got, err) = RecordBatch::decode_many(torn);
        assert_eq!(got, batches[..2].to_vec(), "cut {cut}");
        assert!(
            matches!(err, Some(BatchError::Truncated { available, .. }) if available == cut),
            "cut {cut}: {err:?}"
        );
    }
}

#[test]
fn decode_many_stops_at_a_corrupt_middle_batch() {
    // Goal: a CRC failure in the middle stops decoding after the valid prefix.
    let batches = three_batches();
    let mut bytes = concat(&batches);
    let at = batches[0].size_in_bytes() + batches[1].size_in_bytes() - 1;
    bytes[at] ^= 0xff;
    let (got, err) = RecordBatch::decode_many(Bytes::from(bytes));
    assert_eq!(got, batches[..1].to_vec());
    assert!(matches!(
        err,
        Some(BatchError::InvalidCrc { base_offset: 3, .. })
    ));
}

// ---------------------------------------------------------------------------------------
// (d) Property tests
// ---------------------------------------------------------------------------------------

fn bytes_opt(max: usize) -> impl Strategy<Value = Option<Bytes>> {
    prop::option::weighted(
        0.8,
        prop::collection::vec(any::<u8>(), 0..max).prop_map(Bytes::from),
    )
}

fn simple_record(base_ts: i64) -> impl Strategy<Value = SimpleRecord> {
    (
        -5_000i64..5_000,
        bytes_opt(24),
        bytes_opt(64),
        // Unique header keys (kafka-protocol's map cannot hold duplicates); order as generated.
        prop::collection::btree_map("[a-zA-Z0-9_.-]{0,8}", bytes_opt(12), 0..4),
    )
        .prop_map(move |(dt, key, value, headers)| SimpleRecord {
            timestamp: base_ts + dt,
            key,
            value,
            headers: headers
                .into_iter()
                .map(|(key, value)| Header { key, value })
                .collect(),
        })
}

fn params() -> impl Strategy<Value = Params> {
    let seq = prop_oneof![0i32..1_000, (i32::MAX - 40)..=i32::MAX];
    (
        0i64..(1 << 45),
        -1i32..100_000,
        0u8..3,
        0i64..(1 << 45),
        0i16..=i16::MAX,
        seq,
    )
        .prop_map(|(base_offset, epoch, kind, pid, pepoch, seq)| match kind {
            0 => Params::plain(base_offset, epoch),
            1 => Params::idempotent(base_offset, epoch, pid, pepoch, seq),
            _ => Params::transactional(base_offset, epoch, pid, pepoch, seq),
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_batches_round_trip_through_ours_and_kafka_protocol(
        p in params(),
        records in prop::collection::vec(simple_record(1_700_000_000_000), 1..40),
    ) {
        // Goal: our encode → our decode is lossless; kafka-protocol decodes our bytes to the same
        // records; kafka-protocol's encoding decodes with ours and is byte-identical to ours when
        // the first record carries the smallest timestamp (see module docs otherwise).
        let batch = p.builder().build(&records);
        assert_ours_agrees(&batch, p, &records);
        assert_kafka_protocol_agrees(&batch, &records);
        assert_built_is_decoded(&batch);

        let kp_bytes = kp_encode(&kp_records(p, false, &records));
        let from_kp = RecordBatch::decode(kp_bytes.clone());
        prop_assert!(from_kp.is_ok(), "{:?}", from_kp);
        let from_kp = from_kp.expect("checked");
        assert_ours_agrees(&from_kp, p, &records);
        let min_ts = records.iter().map(|r| r.timestamp).min().expect("non-empty");
        prop_assert_eq!(from_kp.header().base_timestamp, min_ts);
        if records[0].timestamp == min_ts {
            prop_assert_eq!(batch.bytes(), &kp_bytes);
        } else {
            prop_assert_eq!(batch.header().base_timestamp, records[0].timestamp);
        }
    }

    #[test]
    fn random_rewrites_and_corruptions_behave(
        p in params(),
        records in prop::collection::vec(simple_record(0), 1..10),
        new_offset in 0i64..(1 << 50),
        new_epoch in -1i32..i32::MAX,
        flip_at in any::<prop::sample::Index>(),
        cut_at in any::<prop::sample::Index>(),
    ) {
        // Goal: with_offset_and_epoch only touches bytes 0..8/12..16 and stays valid; any flipped
        // CRC-covered byte is InvalidCrc; any strict prefix is Truncated.
        let batch = p.builder().build(&records);
        let moved = batch.with_offset_and_epoch(Offset(new_offset), LeaderEpoch(new_epoch));
        prop_assert!(moved.is_valid());
        prop_assert!(diff_positions(batch.bytes(), moved.bytes())
            .iter()
            .all(|&i| i < 8 || (12..16).contains(&i)));
        let redecoded = RecordBatch::decode(moved.bytes().clone());
        prop_assert_eq!(redecoded, Ok(moved.clone()));
        let kp = kp_decode_one(moved.bytes());
        prop_assert_eq!(kp[0].offset, new_offset);
        prop_assert_eq!(kp[0].partition_leader_epoch, new_epoch);

        let size = batch.size_in_bytes();
        let mut bytes = batch.bytes().to_vec();
        let i = 21 + flip_at.index(size - 21);
        bytes[i] ^= 0xff;
        let flipped = RecordBatch::decode(Bytes::from(bytes));
        prop_assert!(matches!(flipped, Err(BatchError::InvalidCrc { .. })), "byte {}: {:?}", i, flipped);

        let cut = cut_at.index(size);
        let truncated = RecordBatch::decode(batch.bytes().slice(..cut));
        prop_assert!(matches!(truncated, Err(BatchError::Truncated { .. })), "cut {}: {:?}", cut, truncated);
    }
}
