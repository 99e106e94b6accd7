//! The leader epoch cache (Kafka: `LeaderEpochFileCache`): `(epoch, startOffset)` entries,
//! strictly increasing in both, mapping every offset of the log to the epoch of the leader
//! that appended it. Followers use it to find where their log diverges from the leader's
//! (KIP-101, KIP-279); KIP-1279 reuses it on the destination, filled with *source* epochs.

use thiserror::Error;

use crate::types::{LeaderEpoch, Offset};

/// One cache entry: the epoch and the first offset appended in it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct EpochEntry {
    /// The leader epoch.
    pub epoch: LeaderEpoch,
    /// The first offset of that epoch.
    pub start_offset: Offset,
}

impl EpochEntry {
    /// Builds an entry.
    #[must_use]
    pub fn new(epoch: i32, start_offset: i64) -> Self {
        Self {
            epoch: LeaderEpoch(epoch),
            start_offset: Offset(start_offset),
        }
    }
}

/// Invalid input to [`LeaderEpochCache::assign`] (Kafka throws `IllegalArgumentException`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum EpochCacheError {
    /// Epoch or start offset below zero.
    #[error("invalid leader epoch entry (epoch {epoch}, start offset {start_offset})")]
    InvalidEntry {
        /// Requested epoch.
        epoch: LeaderEpoch,
        /// Requested start offset.
        start_offset: Offset,
    },
}

/// The cache. Entries are kept in a `Vec` sorted by epoch (and therefore by offset):
/// appends and truncations happen at the ends, lookups are binary searches.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LeaderEpochCache {
    entries: Vec<EpochEntry>,
}

impl LeaderEpochCache {
    /// An empty cache.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Rebuilds a cache from checkpointed entries, keeping Kafka's invariant by assigning
    /// them in order (a corrupt checkpoint cannot produce a non-monotonic cache).
    pub fn from_entries(entries: &[EpochEntry]) -> Result<Self, EpochCacheError> {
        let mut c = Self::new();
        for e in entries {
            c.assign(e.epoch, e.start_offset)?;
        }
        Ok(c)
    }

    /// Records that `epoch` starts at `start_offset` (Kafka: `assign`).
    ///
    /// A no-op when `epoch` is the latest epoch and `start_offset` is not earlier than its
    /// start: an epoch is never moved to a later offset. Otherwise every tail entry with an
    /// epoch `>= epoch` or a start `>= start_offset` is dropped first, keeping both columns
    /// strictly increasing. Returns whether the cache changed.
    pub fn assign(
        &mut self,
        epoch: LeaderEpoch,
        start_offset: Offset,
    ) -> Result<bool, EpochCacheError> {
        if epoch.0 < 0 || start_offset.0 < 0 {
            return Err(EpochCacheError::InvalidEntry {
                epoch,
                start_offset,
            });
        }
        if let Some(last) = self.entries.last()
            && epoch == last.epoch
            && start_offset >= last.start_offset
        {
            return Ok(false);
        }
        // Kafka: maybeTruncateNonMonotonicEntries
        while let Some(last) = self.entries.last() {
            if last.epoch >= epoch || last.start_offset >= start_offset {
                self.entries.pop();
            } else {
                break;
            }
        }
        self.entries.push(EpochEntry {
            epoch,
            start_offset,
        });
        Ok(true)
    }

    /// All entries, oldest first.
    #[must_use]
    pub fn epoch_entries(&self) -> &[EpochEntry] {
        &self.entries
    }

    /// True when the cache has no entry.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The newest entry.
    #[must_use]
    pub fn latest_entry(&self) -> Option<EpochEntry> {
        self.entries.last().copied()
    }

    /// The newest epoch.
    #[must_use]
    pub fn latest_epoch(&self) -> Option<LeaderEpoch> {
        self.entries.last().map(|e| e.epoch)
    }

    /// The oldest entry.
    #[must_use]
    pub fn earliest_entry(&self) -> Option<EpochEntry> {
        self.entries.first().copied()
    }

    /// The epoch just below the latest one (Kafka: `previousEpoch()`).
    #[must_use]
    pub fn previous_epoch(&self) -> Option<LeaderEpoch> {
        let n = self.entries.len();
        (n >= 2).then(|| self.entries[n - 2].epoch)
    }

    /// The largest cached epoch strictly below `epoch` (Kafka: `previousEpoch(epoch)`).
    #[must_use]
    pub fn previous_epoch_of(&self, epoch: LeaderEpoch) -> Option<LeaderEpoch> {
        let i = self.entries.partition_point(|e| e.epoch < epoch);
        i.checked_sub(1).map(|j| self.entries[j].epoch)
    }

    /// The smallest cached epoch strictly above `epoch` (Kafka: `nextEpoch(epoch)`).
    #[must_use]
    pub fn next_epoch(&self, epoch: LeaderEpoch) -> Option<LeaderEpoch> {
        let i = self.entries.partition_point(|e| e.epoch <= epoch);
        self.entries.get(i).map(|e| e.epoch)
    }

    /// The entry for exactly `epoch`.
    #[must_use]
    pub fn epoch_entry(&self, epoch: LeaderEpoch) -> Option<EpochEntry> {
        self.entries
            .binary_search_by_key(&epoch, |e| e.epoch)
            .ok()
            .map(|i| self.entries[i])
    }

    /// The first entry whose epoch is strictly greater than `epoch` (used by KIP-1279's LME
    /// truncation: "truncate at the start offset of the first epoch above the LME").
    #[must_use]
    pub fn first_entry_above(&self, epoch: LeaderEpoch) -> Option<EpochEntry> {
        let i = self.entries.partition_point(|e| e.epoch <= epoch);
        self.entries.get(i).copied()
    }

    /// The end offset of `requested` and the epoch it belongs to (Kafka: `endOffsetFor`).
    ///
    /// Returns Kafka's sentinels `(UNDEFINED, UNDEFINED)` when `requested` is
    /// `UNDEFINED_EPOCH`, when the cache is empty, or when `requested` is above every
    /// cached epoch. For the latest epoch the end is `log_end_offset`. For an epoch *below
    /// the first entry* the answer echoes the **requested** epoch with the first entry's start
    /// (KAFKA-7415). Otherwise: the largest cached epoch `<= requested`, ending where the
    /// next epoch starts.
    #[must_use]
    pub fn end_offset_for(
        &self,
        requested: LeaderEpoch,
        log_end_offset: Offset,
    ) -> (LeaderEpoch, Offset) {
        if requested == LeaderEpoch::UNDEFINED {
            return (LeaderEpoch::UNDEFINED, Offset::UNDEFINED);
        }
        if self.latest_epoch() == Some(requested) {
            return (requested, log_end_offset);
        }
        let higher_idx = self.entries.partition_point(|e| e.epoch <= requested);
        let Some(higher) = self.entries.get(higher_idx) else {
            return (LeaderEpoch::UNDEFINED, Offset::UNDEFINED);
        };
        match higher_idx.checked_sub(1) {
            None => (requested, higher.start_offset),
            Some(floor_idx) => (self.entries[floor_idx].epoch, higher.start_offset),
        }
    }

    /// Removes every entry starting at or after `end_offset` (Kafka: `truncateFromEnd`).
    /// `end_offset < 0` (UNDEFINED) is a no-op.
    pub fn truncate_from_end(&mut self, end_offset: Offset) {
        if end_offset.0 < 0 {
            return;
        }
        while let Some(last) = self.entries.last() {
            if last.start_offset >= end_offset {
                self.entries.pop();
            } else {
                break;
            }
        }
    }

    /// Drops entries that start at or before `start_offset`, then re-inserts the last one
    /// dropped at `start_offset` so the epoch covering the new log start survives (Kafka:
    /// `truncateFromStart`). An entry starting exactly at `start_offset` is kept as is.
    pub fn truncate_from_start(&mut self, start_offset: Offset) {
        if start_offset.0 < 0 {
            return;
        }
        let n = self
            .entries
            .partition_point(|e| e.start_offset <= start_offset);
        if n == 0 {
            return;
        }
        let last_removed = self.entries[n - 1];
        self.entries.drain(..n);
        self.entries.insert(
            0,
            EpochEntry {
                epoch: last_removed.epoch,
                start_offset,
            },
        );
    }

    /// The epoch whose range contains `offset`; an exact start match wins; `None` below the
    /// first entry (Kafka: `epochForOffset`).
    #[must_use]
    pub fn epoch_for_offset(&self, offset: Offset) -> Option<LeaderEpoch> {
        let i = self.entries.partition_point(|e| e.start_offset <= offset);
        i.checked_sub(1).map(|j| self.entries[j].epoch)
    }

    /// Removes every entry (Kafka: `clearAndFlush`).
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Panics if the cache's own invariant (strictly increasing epochs and offsets, no
    /// negative values) is broken. Called after mutations by the log.
    pub fn check_invariants(&self) {
        for w in self.entries.windows(2) {
            assert!(
                w[0].epoch < w[1].epoch && w[0].start_offset < w[1].start_offset,
                "epoch_cache_monotonic: {:?} then {:?}",
                w[0],
                w[1]
            );
        }
        if let Some(first) = self.entries.first() {
            assert!(
                first.epoch.0 >= 0 && first.start_offset.0 >= 0,
                "epoch_cache_non_negative: {first:?}"
            );
        }
    }
}
