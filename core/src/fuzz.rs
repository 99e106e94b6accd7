//! `arbitrary::Arbitrary` for the request types, for RPC fuzzing (cargo feature `fuzz`, off in
//! normal builds). Derives cover the enums and structs of [`crate::protocol`]; this module
//! writes the impls a derive would make useless:
//!
//! - scalars ([`Offset`], [`LeaderEpoch`], ...) are mostly small or a wire sentinel, sometimes
//!   any value of their width, so a request both reaches the code behind the checks and probes
//!   the extremes (overflows count as panics: release builds keep overflow checks);
//! - names (topics, mirrors, groups, transactional ids) are mostly ones a test cluster has,
//!   sometimes any string;
//! - a [`RecordBatch`] is a real v2 batch (data or control) built from drawn fields, sometimes
//!   with a CRC that no longer matches (bit rot in flight).
//!
//! A request drawn here is well typed, never well formed: any field may be out of range.

use std::collections::BTreeMap;

use arbitrary::{Arbitrary, Result, Unstructured};

use crate::record::{BatchBuilder, ControlRecord, RecordBatch, SimpleRecord, batch::TimestampType};
use crate::types::{
    BrokerId, LeaderEpoch, Offset, ProducerEpoch, ProducerId, Sequence, TopicId, TopicPartition,
};

/// Topic names a fuzz cluster is expected to have (the test creates `t0` and `t1`), and the
/// internal topics.
pub const TOPICS: [&str; 5] = [
    "t0",
    "t1",
    "__consumer_offsets",
    "__transaction_state",
    "__mirror_state",
];

/// Mirror names a fuzz cluster may have.
pub const MIRRORS: [&str; 2] = ["m1", "m1.paused"];

/// Group ids, member ids and transactional ids drawn most of the time.
pub const IDS: [&str; 3] = ["g0", "txn-0", "member-0"];

/// Config keys that change behaviour, drawn most of the time.
pub const CONFIG_KEYS: [&str; 8] = [
    "min.insync.replicas",
    "retention.ms",
    "unclean.leader.election.enable",
    "mirror.name",
    "source.cluster",
    "source.cluster.id",
    "cleanup.policy",
    "segment.bytes",
];

/// An `i64` that is small (`-3..=20`) three times in four, else any value.
fn biased_i64(u: &mut Unstructured<'_>) -> Result<i64> {
    if u.ratio(3, 4)? {
        u.int_in_range(-3..=20)
    } else {
        i64::arbitrary(u)
    }
}

macro_rules! biased_newtype {
    ($($name:ident($inner:ty)),* $(,)?) => {$(
        impl<'a> Arbitrary<'a> for $name {
            fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
                let v = if u.ratio(3, 4)? {
                    u.int_in_range(-3..=20)?
                } else {
                    <$inner>::arbitrary(u)?
                };
                Ok($name(v))
            }
        }
    )*};
}

biased_newtype!(
    Offset(i64),
    LeaderEpoch(i32),
    ProducerId(i64),
    ProducerEpoch(i16),
    Sequence(i32),
    BrokerId(i32),
);

impl<'a> Arbitrary<'a> for TopicId {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        if u.ratio(1, 2)? {
            Ok(TopicId::ZERO)
        } else {
            Ok(TopicId(u128::arbitrary(u)?))
        }
    }
}

/// Produce `acks`: -1, 0 or 1 seven times in eight, else any value.
pub fn acks(u: &mut Unstructured<'_>) -> Result<i16> {
    if u.ratio(7, 8)? {
        u.int_in_range(-1..=1)
    } else {
        i16::arbitrary(u)
    }
}

/// A topic name from [`TOPICS`] most of the time.
pub fn topic_name(u: &mut Unstructured<'_>) -> Result<String> {
    pick_or_any(u, &TOPICS)
}

/// A few topic names.
pub fn topic_names(u: &mut Unstructured<'_>) -> Result<Vec<String>> {
    let n = u.int_in_range(0..=3)?;
    (0..n).map(|_| topic_name(u)).collect()
}

/// A mirror name from [`MIRRORS`] most of the time.
pub fn mirror_name(u: &mut Unstructured<'_>) -> Result<String> {
    pick_or_any(u, &MIRRORS)
}

/// A group, member or transactional id from [`IDS`] most of the time.
pub fn id_string(u: &mut Unstructured<'_>) -> Result<String> {
    pick_or_any(u, &IDS)
}

/// Configs keyed by [`CONFIG_KEYS`] most of the time, with small numbers, booleans, names or
/// any string as values.
pub fn configs(u: &mut Unstructured<'_>) -> Result<BTreeMap<String, String>> {
    Ok(config_ops(u)?
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect())
}

/// `IncrementalAlterConfigs` operations: `(key, Some(value))` sets, `(key, None)` deletes.
pub fn config_ops(u: &mut Unstructured<'_>) -> Result<Vec<(String, Option<String>)>> {
    let n = u.int_in_range(0..=3)?;
    (0..n)
        .map(|_| {
            let key = pick_or_any(u, &CONFIG_KEYS)?;
            let value = if u.ratio(1, 5)? {
                None
            } else {
                Some(config_value(u)?)
            };
            Ok((key, value))
        })
        .collect()
}

fn config_value(u: &mut Unstructured<'_>) -> Result<String> {
    Ok(match u.int_in_range(0..=4)? {
        0 => biased_i64(u)?.to_string(),
        1 => bool::arbitrary(u)?.to_string(),
        2 => mirror_name(u)?,
        3 => "src".to_string(),
        _ => String::arbitrary(u)?,
    })
}

fn pick_or_any(u: &mut Unstructured<'_>, names: &[&str]) -> Result<String> {
    if u.ratio(7, 8)? {
        Ok((*u.choose(names)?).to_string())
    } else {
        String::arbitrary(u)
    }
}

impl<'a> Arbitrary<'a> for TopicPartition {
    /// Mostly a partition of the test cluster's data topics (`t0-0`, `t0-1`, `t1-0`), so
    /// data-plane requests reach the code past the "unknown partition" check.
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        if u.ratio(3, 4)? {
            let (topic, partition) = *u.choose(&[("t0", 0), ("t0", 1), ("t1", 0)])?;
            return Ok(TopicPartition::new(topic, partition));
        }
        let topic = topic_name(u)?;
        let partition = if u.ratio(7, 8)? {
            u.int_in_range(-1..=3)?
        } else {
            i32::arbitrary(u)?
        };
        Ok(TopicPartition::new(topic, partition))
    }
}

impl<'a> Arbitrary<'a> for RecordBatch {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        let mut builder = match u.int_in_range(0..=2)? {
            0 => BatchBuilder::new(),
            1 => BatchBuilder::idempotent(
                ProducerId::arbitrary(u)?,
                ProducerEpoch::arbitrary(u)?,
                Sequence::arbitrary(u)?,
            ),
            _ => BatchBuilder::transactional(
                ProducerId::arbitrary(u)?,
                ProducerEpoch::arbitrary(u)?,
                Sequence::arbitrary(u)?,
            ),
        };
        builder = builder
            .base_offset(Offset::arbitrary(u)?)
            .leader_epoch(LeaderEpoch::arbitrary(u)?);
        if u.ratio(1, 4)? {
            builder.timestamp_type = TimestampType::LogAppendTime;
        }
        let batch = match u.int_in_range(0..=9)? {
            0 => {
                let control = match u.int_in_range(0..=2)? {
                    0 => ControlRecord::commit(i32::arbitrary(u)?),
                    1 => ControlRecord::abort(i32::arbitrary(u)?),
                    _ => ControlRecord::MirrorPidReset,
                };
                builder.build_control(control, biased_i64(u)?)
            }
            _ => {
                let n = u.int_in_range(1..=4)?;
                let records = (0..n)
                    .map(|i| {
                        Ok(SimpleRecord::value(
                            biased_i64(u)?,
                            format!("v{i}-{}", u8::arbitrary(u)?),
                        ))
                    })
                    .collect::<Result<Vec<_>>>()?;
                builder.build(&records)
            }
        };
        if u.ratio(1, 16)? {
            return Ok(with_bad_crc(&batch));
        }
        Ok(batch)
    }
}

/// The batch with one CRC bit flipped: it still parses (what a segment recovery that skips
/// the CRC yields) but [`RecordBatch::is_valid`] is false.
fn with_bad_crc(batch: &RecordBatch) -> RecordBatch {
    let mut bytes = batch.bytes().to_vec();
    bytes[crate::record::codec::CRC] ^= 1;
    RecordBatch::decode_unchecked_crc(bytes.into()).expect("only the crc changed")
}
