//! The controller's metadata log (KRaft's `__cluster_metadata`, one voter): records at
//! consecutive offsets from 0, the image they build, and the brokers' parked
//! `FetchMetadata` long-polls.

use std::collections::BTreeMap;

use crate::broker::MetadataImage;
use crate::protocol::CorrelationId;
use crate::protocol::NodeId;
use crate::protocol::metadata::MetadataRecord;
use crate::time::Instant;

/// The committed records and the image they produce.
#[derive(Clone, Debug)]
pub struct MetadataLog {
    records: Vec<(i64, MetadataRecord)>,
    image: MetadataImage,
}

impl Default for MetadataLog {
    fn default() -> Self {
        Self::new()
    }
}

impl MetadataLog {
    /// An empty log.
    #[must_use]
    pub fn new() -> Self {
        Self {
            records: Vec::new(),
            image: MetadataImage::new(),
        }
    }

    /// The offset the next record gets (the log end offset).
    #[must_use]
    pub fn end_offset(&self) -> i64 {
        i64::try_from(self.records.len()).expect("metadata_log_len_fits_i64")
    }

    /// Appends `record` at `offset` and applies it to the image. The offset must be the
    /// log end: the log has no gaps and is never truncated (one durable voter).
    pub fn append(&mut self, offset: i64, record: MetadataRecord) {
        assert!(
            offset == self.end_offset(),
            "metadata_offsets_consecutive: got {offset}, end {}",
            self.end_offset()
        );
        self.image.apply(offset, &record);
        self.records.push((offset, record));
    }

    /// Every record, in order.
    #[must_use]
    pub fn records(&self) -> &[(i64, MetadataRecord)] {
        &self.records
    }

    /// Records from `offset` to the end (empty at the end).
    #[must_use]
    pub fn read_from(&self, offset: i64) -> Vec<(i64, MetadataRecord)> {
        let start = usize::try_from(offset.max(0)).unwrap_or(usize::MAX);
        self.records
            .get(start..)
            .map(<[_]>::to_vec)
            .unwrap_or_default()
    }

    /// The image after the last record.
    #[must_use]
    pub fn image(&self) -> &MetadataImage {
        &self.image
    }
}

/// A `FetchMetadata` parked at the log end until a record arrives or it times out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FetchWaiter {
    /// Requester.
    pub from: NodeId,
    /// Its correlation id.
    pub id: CorrelationId,
    /// The offset it asked for (the log end when it parked).
    pub fetch_offset: i64,
}

/// Parked fetches keyed by `(deadline, arrival sequence)`, so expiry and completion are in
/// a deterministic order.
#[derive(Clone, Debug, Default)]
pub struct FetchWaiters {
    next_seq: u64,
    by_deadline: BTreeMap<(Instant, u64), FetchWaiter>,
}

impl FetchWaiters {
    /// Parks `waiter` until `deadline`.
    pub fn park(&mut self, deadline: Instant, waiter: FetchWaiter) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.by_deadline.insert((deadline, seq), waiter);
    }

    /// Removes and returns the waiters that can now be answered with records, i.e. whose
    /// fetch offset is below `end_offset`, in arrival order.
    pub fn take_satisfied(&mut self, end_offset: i64) -> Vec<FetchWaiter> {
        let keys: Vec<(Instant, u64)> = self
            .by_deadline
            .iter()
            .filter(|(_, w)| w.fetch_offset < end_offset)
            .map(|(k, _)| *k)
            .collect();
        let mut out: Vec<(u64, FetchWaiter)> = keys
            .into_iter()
            .filter_map(|k| Some((k.1, self.by_deadline.remove(&k)?)))
            .collect();
        out.sort_by_key(|(seq, _)| *seq);
        out.into_iter().map(|(_, w)| w).collect()
    }

    /// Removes and returns the waiters whose deadline is at or before `now`, earliest first.
    pub fn take_expired(&mut self, now: Instant) -> Vec<FetchWaiter> {
        let mut out = Vec::new();
        while let Some(entry) = self.by_deadline.first_entry() {
            if entry.key().0 > now {
                break;
            }
            out.push(entry.remove());
        }
        out
    }

    /// The earliest deadline.
    #[must_use]
    pub fn next_deadline(&self) -> Option<Instant> {
        self.by_deadline.first_key_value().map(|((at, _), _)| *at)
    }

    /// Number of parked fetches.
    #[must_use]
    pub fn len(&self) -> usize {
        self.by_deadline.len()
    }

    /// True when nothing is parked.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.by_deadline.is_empty()
    }
}
