//! The transaction index (Kafka: `TransactionIndex`, `AbortedTxn`, `TxnIndexSearchResult`):
//! the aborted transactions of the log, in marker order, which a READ_COMMITTED fetch returns so
//! the consumer can drop aborted records.
//!
//! Kafka keeps one index file per segment, holding the transactions whose ABORT marker is in
//! that segment. The model has one index for the whole log; scanning it from the start gives the
//! same aborted transactions as Kafka's scan from the fetch offset's segment onwards, because
//! an entry's `last_stable_offset` never exceeds its `last_offset + 1`.

use thiserror::Error;

use crate::types::{Offset, ProducerId};

#[cfg(test)]
#[path = "txn_index_test.rs"]
mod txn_index_test;

/// One aborted transaction (Kafka: `AbortedTxn`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AbortedTxn {
    /// The producer whose transaction was aborted.
    pub producer_id: ProducerId,
    /// Offset of the transaction's first batch.
    pub first_offset: Offset,
    /// Offset of the ABORT marker.
    pub last_offset: Offset,
    /// The LSO when the marker was written (`ProducerStateManager::last_stable_offset`): a
    /// fetch whose upper bound is at or below it needs no later index entries.
    pub last_stable_offset: Offset,
}

impl AbortedTxn {
    /// Builds an entry from raw offsets, in Kafka's argument order.
    #[must_use]
    pub fn new(
        producer_id: i64,
        first_offset: i64,
        last_offset: i64,
        last_stable_offset: i64,
    ) -> Self {
        Self {
            producer_id: ProducerId(producer_id),
            first_offset: Offset(first_offset),
            last_offset: Offset(last_offset),
            last_stable_offset: Offset(last_stable_offset),
        }
    }
}

/// Invalid input to [`TransactionIndex::append`] (Kafka throws `IllegalArgumentException`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum TxnIndexError {
    /// Markers are appended in offset order, so each entry's `last_offset` must be greater
    /// than the previous one's.
    #[error(
        "the last offset of appended transactions must increase: {appended} is not greater than {last}"
    )]
    LastOffsetNotIncreasing {
        /// The index's current last `last_offset`.
        last: Offset,
        /// The rejected entry's `last_offset`.
        appended: Offset,
    },
}

/// The result of [`TransactionIndex::collect_aborted_txns`] (Kafka: `TxnIndexSearchResult`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnIndexSearchResult {
    /// Aborted transactions overlapping the fetch range, in index order.
    pub aborted_transactions: Vec<AbortedTxn>,
    /// True when the scan stopped at an entry whose `last_stable_offset >= upper_bound`: in
    /// Kafka, later segments need not be searched.
    pub is_complete: bool,
}

/// The aborted transactions of the log, in append (marker offset) order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TransactionIndex {
    entries: Vec<AbortedTxn>,
}

impl TransactionIndex {
    /// An empty index.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends the entry for an ABORT marker (Kafka: `append`). Rejects an entry whose
    /// `last_offset` is not greater than the previous entry's.
    pub fn append(&mut self, txn: AbortedTxn) -> Result<(), TxnIndexError> {
        if let Some(last) = self.last_offset()
            && last >= txn.last_offset
        {
            return Err(TxnIndexError::LastOffsetNotIncreasing {
                last,
                appended: txn.last_offset,
            });
        }
        self.entries.push(txn);
        Ok(())
    }

    /// Drops entries whose marker is at or above `offset` (Kafka: `truncateTo`, which cuts
    /// the file at the first such entry).
    pub fn truncate_to(&mut self, offset: Offset) {
        let keep = self.entries.partition_point(|t| t.last_offset < offset);
        self.entries.truncate(keep);
    }

    /// Drops entries whose marker is below the new log start (Kafka deletes whole segments,
    /// and their indexes with them; the model drops exactly the entries below `log_start`).
    pub fn retain_from(&mut self, log_start: Offset) {
        let drop = self.entries.partition_point(|t| t.last_offset < log_start);
        self.entries.drain(..drop);
    }

    /// Removes every entry (Kafka: `reset`), for `truncateFullyAndStartAt`.
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// The aborted transactions overlapping `[fetch_offset, upper_bound_offset)` (Kafka:
    /// `collectAbortedTxns`): entries with `last_offset >= fetch_offset` and
    /// `first_offset < upper_bound_offset`. The scan stops after the first entry with
    /// `last_stable_offset >= upper_bound_offset`, and then reports `is_complete`.
    #[must_use]
    pub fn collect_aborted_txns(
        &self,
        fetch_offset: Offset,
        upper_bound_offset: Offset,
    ) -> TxnIndexSearchResult {
        let mut aborted_transactions = Vec::new();
        for txn in &self.entries {
            if txn.last_offset >= fetch_offset && txn.first_offset < upper_bound_offset {
                aborted_transactions.push(*txn);
            }
            if txn.last_stable_offset >= upper_bound_offset {
                return TxnIndexSearchResult {
                    aborted_transactions,
                    is_complete: true,
                };
            }
        }
        TxnIndexSearchResult {
            aborted_transactions,
            is_complete: false,
        }
    }

    /// Every entry, in append order (Kafka: `allAbortedTxns`).
    #[must_use]
    pub fn all_aborted_txns(&self) -> &[AbortedTxn] {
        &self.entries
    }

    /// The newest entry's `last_offset`.
    #[must_use]
    pub fn last_offset(&self) -> Option<Offset> {
        self.entries.last().map(|t| t.last_offset)
    }

    /// True when there are no entries (Kafka: `isEmpty`).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Number of entries.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }
}
