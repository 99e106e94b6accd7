//! The producer-state snapshot file (Kafka: `ProducerStateManager.writeSnapshot` /
//! `readSnapshot`), as readable text. Like Kafka's, it keeps per producer only the newest
//! batch and no unreplicated transactions; an open transaction is restored from the entry's
//! `current_txn_first_offset`.
//!
//! ```text
//! producer-snapshot v0 end=<map end offset> count=<n>
//! <pid> <epoch> <coordinator epoch> <last timestamp> <txn first offset|-1> <last seq> <last offset> <offset delta>
//! ```

use bytes::Bytes;
use thiserror::Error;

use super::producer_state::{BatchMetadata, ProducerStateEntry, ProducerStateManager};
use crate::types::{Offset, ProducerEpoch, ProducerId, Sequence};

/// A snapshot that cannot be parsed (Kafka: `CorruptSnapshotException`).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("corrupt producer snapshot at line {line}: {reason}")]
pub struct CorruptSnapshot {
    /// 1-based line.
    pub line: usize,
    /// What was wrong.
    pub reason: &'static str,
}

/// Writes the snapshot of `psm`.
#[must_use]
pub fn encode(psm: &ProducerStateManager) -> Bytes {
    let mut s = format!(
        "producer-snapshot v0 end={} count={}\n",
        psm.map_end_offset().0,
        psm.active_producers().len()
    );
    for e in psm.active_producers().values() {
        let snap = e.snapshot_entry();
        let last = snap.batch_metadata().back().copied();
        s.push_str(&format!(
            "{} {} {} {} {} {} {} {}\n",
            snap.producer_id.0,
            snap.producer_epoch.0,
            snap.coordinator_epoch,
            snap.last_timestamp,
            snap.current_txn_first_offset.map_or(-1, |o| o.0),
            last.map_or(-1, |b| b.last_seq.0),
            last.map_or(-1, |b| b.last_offset.0),
            last.map_or(0, |b| b.offset_delta),
        ));
    }
    Bytes::from(s)
}

fn field<T: std::str::FromStr>(
    it: &mut std::str::SplitWhitespace<'_>,
    line: usize,
) -> Result<T, CorruptSnapshot> {
    it.next()
        .and_then(|v| v.parse().ok())
        .ok_or(CorruptSnapshot {
            line,
            reason: "missing or malformed field",
        })
}

/// Reads a snapshot into a fresh manager with `expiration_ms`.
pub fn decode(bytes: &[u8], expiration_ms: i64) -> Result<ProducerStateManager, CorruptSnapshot> {
    let text = std::str::from_utf8(bytes).map_err(|_| CorruptSnapshot {
        line: 1,
        reason: "not utf-8",
    })?;
    let mut lines = text.lines();
    let header = lines.next().ok_or(CorruptSnapshot {
        line: 1,
        reason: "empty",
    })?;
    let parse_kv = |prefix: &str| -> Option<i64> {
        header
            .split_whitespace()
            .find_map(|w| w.strip_prefix(prefix))
            .and_then(|v| v.parse().ok())
    };
    if !header.starts_with("producer-snapshot v0 ") {
        return Err(CorruptSnapshot {
            line: 1,
            reason: "bad header",
        });
    }
    let end = parse_kv("end=").ok_or(CorruptSnapshot {
        line: 1,
        reason: "missing end",
    })?;
    let count = parse_kv("count=").ok_or(CorruptSnapshot {
        line: 1,
        reason: "missing count",
    })?;
    let mut psm = ProducerStateManager::new(expiration_ms);
    let mut n = 0;
    for (i, l) in lines.enumerate() {
        let line = i + 2;
        let mut it = l.split_whitespace();
        let pid: i64 = field(&mut it, line)?;
        let epoch: i16 = field(&mut it, line)?;
        let coord: i32 = field(&mut it, line)?;
        let ts: i64 = field(&mut it, line)?;
        let txn: i64 = field(&mut it, line)?;
        let last_seq: i32 = field(&mut it, line)?;
        let last_offset: i64 = field(&mut it, line)?;
        let delta: i32 = field(&mut it, line)?;
        let batch = (last_offset >= 0).then_some(BatchMetadata {
            last_seq: Sequence(last_seq),
            last_offset: Offset(last_offset),
            offset_delta: delta,
            timestamp: ts,
        });
        psm.load_producer_entry(ProducerStateEntry::new(
            ProducerId(pid),
            ProducerEpoch(epoch),
            coord,
            ts,
            (txn >= 0).then_some(Offset(txn)),
            batch,
        ));
        n += 1;
    }
    if n != count {
        return Err(CorruptSnapshot {
            line: 1,
            reason: "count does not match the entries",
        });
    }
    psm.update_map_end_offset(Offset(end));
    Ok(psm)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::producer_state::AppendOrigin;
    use crate::record::{BatchBuilder, SimpleRecord};

    #[test]
    fn snapshot_round_trips_the_newest_batch_and_open_txns() {
        let mut psm = ProducerStateManager::new(1_000);
        let recs = [SimpleRecord::value(5, "x")];
        let b1 = BatchBuilder::idempotent(ProducerId(3), ProducerEpoch(1), Sequence(0))
            .base_offset(Offset(0))
            .build(&recs);
        let b2 = BatchBuilder::transactional(ProducerId(4), ProducerEpoch(0), Sequence(0))
            .base_offset(Offset(1))
            .build(&recs);
        psm.apply_batch(&b1, AppendOrigin::Replication);
        psm.apply_batch(&b2, AppendOrigin::Replication);
        psm.update_map_end_offset(Offset(2));
        let back = decode(&encode(&psm), 1_000).unwrap();
        assert_eq!(back.active_producers(), psm.active_producers());
        assert_eq!(back.ongoing_txns(), psm.ongoing_txns());
        assert_eq!(back.map_end_offset(), Offset(2));
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(decode(b"", 1).is_err());
        assert!(decode(b"nope", 1).is_err());
        assert!(decode(b"producer-snapshot v0 end=1 count=2\n1 2 3\n", 1).is_err());
        assert!(decode(&[0xff, 0xfe], 1).is_err());
    }
}
