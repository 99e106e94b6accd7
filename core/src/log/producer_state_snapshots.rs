//! Producer-state snapshots (Kafka: `ProducerStateManager.takeSnapshot`, `truncateAndReload`,
//! `deleteSnapshotsBefore`, `removeStraySnapshots`, `removeAndMarkSnapshotForDeletion`,
//! `latestSnapshotOffset` / `oldestSnapshotOffset`).
//!
//! Kafka keeps one snapshot file per offset in the log directory. The core has no I/O: the
//! manager holds each file's bytes (in the [`super::super::producer_snapshot`] format), keyed
//! by the offset it was taken at, and a caller that persists them writes what
//! [`ProducerStateManager::take_snapshot`] made and hands back what it finds at a restart
//! ([`ProducerStateManager::load_snapshots`]). Like Kafka's, a snapshot keeps per producer
//! only the newest batch, and no unreplicated transactions.

use std::collections::BTreeMap;

use bytes::Bytes;

use super::super::producer_snapshot;
use super::ProducerStateManager;
use crate::types::Offset;

impl ProducerStateManager {
    /// Takes a snapshot at the map end offset, unless one was already taken there or later
    /// (Kafka: `takeSnapshot`, "if not a new offset, then it is not worth taking another
    /// snapshot"). Returns the offset of the snapshot it took.
    pub fn take_snapshot(&mut self) -> Option<Offset> {
        if self.map_end_offset <= self.last_snap_offset {
            return None;
        }
        let offset = self.map_end_offset;
        self.snapshots
            .insert(offset, producer_snapshot::encode(self));
        self.last_snap_offset = offset;
        Some(offset)
    }

    /// The offset of the newest snapshot (Kafka: `latestSnapshotOffset`).
    #[must_use]
    pub fn latest_snapshot_offset(&self) -> Option<Offset> {
        self.snapshots.keys().next_back().copied()
    }

    /// The offset of the oldest snapshot (Kafka: `oldestSnapshotOffset`).
    #[must_use]
    pub fn oldest_snapshot_offset(&self) -> Option<Offset> {
        self.snapshots.first_key_value().map(|(o, _)| *o)
    }

    /// The snapshot taken at `offset`, if any (Kafka: `snapshotFileForOffset`,
    /// `fetchSnapshot`).
    #[must_use]
    pub fn snapshot_file_for_offset(&self, offset: Offset) -> Option<&Bytes> {
        self.snapshots.get(&offset)
    }

    /// Every snapshot, by offset (what Kafka's log directory holds).
    #[must_use]
    pub fn snapshots(&self) -> &BTreeMap<Offset, Bytes> {
        &self.snapshots
    }

    /// The map end offset of the newest snapshot taken (Kafka: `lastSnapOffset`).
    #[must_use]
    pub fn last_snap_offset(&self) -> Offset {
        self.last_snap_offset
    }

    /// Replaces the snapshots with the ones found at a restart (Kafka: `loadSnapshots`, which
    /// scans the log directory when the manager is built).
    pub fn load_snapshots(&mut self, files: BTreeMap<Offset, Bytes>) {
        self.snapshots = files;
    }

    /// Forgets all state and takes the snapshots found again (Kafka:
    /// `truncateFullyAndReloadSnapshots`).
    pub fn truncate_fully_and_reload_snapshots(&mut self, files: BTreeMap<Offset, Bytes>) {
        self.truncate_fully_and_start_at(Offset(0));
        self.load_snapshots(files);
    }

    /// Deletes the snapshots below `offset` (Kafka: `deleteSnapshotsBefore`, exclusive).
    pub fn delete_snapshots_before(&mut self, offset: Offset) {
        self.snapshots = self.snapshots.split_off(&offset);
    }

    /// Removes the snapshot at `offset` and returns it, for the caller to delete (Kafka:
    /// `removeAndMarkSnapshotForDeletion`, which renames the file with the deletion suffix).
    pub fn remove_and_mark_snapshot_for_deletion(&mut self, offset: Offset) -> Option<Bytes> {
        self.snapshots.remove(&offset)
    }

    /// Deletes the snapshots that match no segment, except the newest such one when it is
    /// above every segment (the snapshot a clean shutdown writes at the log end) (Kafka:
    /// `removeStraySnapshots(segmentBaseOffsets)`).
    pub fn remove_stray_snapshots(&mut self, segment_base_offsets: &[Offset]) {
        let max_segment_base = segment_base_offsets.iter().max().copied();
        let strays: Vec<Offset> = self
            .snapshots
            .keys()
            .filter(|o| !segment_base_offsets.contains(o))
            .copied()
            .collect();
        let Some((&latest_stray, older)) = strays.split_last() else {
            return;
        };
        for o in older {
            self.snapshots.remove(o);
        }
        if max_segment_base.is_some_and(|max| latest_stray < max) {
            self.snapshots.remove(&latest_stray);
        }
    }

    /// Kafka `truncateAndReload`: deletes the snapshots outside `(log_start, log_end]`; if
    /// `log_end` is not the map end offset, forgets every producer and transaction and loads
    /// the newest snapshot left (skipping and deleting corrupt ones), dropping producers
    /// expired at `now_ms`; else only moves the log start. Kafka assumes `log_end` is at or
    /// below the HW, so unreplicated transactions are dropped too.
    ///
    /// The caller then replays the log from the map end offset (Kafka:
    /// `rebuildProducerState`).
    pub fn truncate_and_reload(&mut self, log_start: Offset, log_end: Offset, now_ms: i64) {
        self.remove_snapshots_outside(log_start, log_end);
        if log_end == self.map_end_offset {
            self.on_log_start_offset_incremented(log_start);
            return;
        }
        self.producers.clear();
        self.ongoing_txns.clear();
        self.unreplicated_txns.clear();
        self.load_from_snapshot(log_start, now_ms);
    }

    /// Deletes the snapshots outside `(log_start, log_end]` (the first step of Kafka's
    /// `truncateAndReload`).
    pub fn remove_snapshots_outside(&mut self, log_start: Offset, log_end: Offset) {
        self.snapshots.retain(|&o, _| o <= log_end && o > log_start);
    }

    /// Takes over `other`'s snapshot files, verification entries and settings: what a
    /// rebuild of the state from the log (the model's replay) does not produce.
    pub(crate) fn carry_files_and_verifications(&mut self, other: ProducerStateManager) {
        self.snapshots = other.snapshots;
        self.last_snap_offset = other.last_snap_offset;
        self.verification_states = other.verification_states;
        self.last_verification_guard = other.last_verification_guard;
        self.transaction_verification_enabled = other.transaction_verification_enabled;
    }

    /// Kafka `loadFromSnapshot`: the newest readable snapshot's non-expired producers, with
    /// the map end offset at the snapshot; with no snapshot left, nothing at the log start.
    fn load_from_snapshot(&mut self, log_start: Offset, now_ms: i64) {
        while let Some((&offset, bytes)) = self.snapshots.iter().next_back() {
            match producer_snapshot::decode(bytes, self.producer_id_expiration_ms) {
                Ok(loaded) => {
                    for entry in loaded.active_producers().values() {
                        if !self.is_producer_expired(entry, now_ms) {
                            self.load_producer_entry(entry.clone());
                        }
                    }
                    self.last_snap_offset = offset;
                    self.map_end_offset = offset;
                    return;
                }
                // Kafka: `CorruptSnapshotException` → `removeAndDeleteSnapshot`, try the next.
                Err(_) => {
                    self.snapshots.remove(&offset);
                }
            }
        }
        self.last_snap_offset = log_start;
        self.map_end_offset = log_start;
    }
}
