//! Idempotent and transactional producer state (Kafka: `ProducerStateManager`,
//! `ProducerAppendInfo`, `ProducerStateEntry`, `BatchMetadata`, `TxnMetadata`, `CompletedTxn`).
//!
//! The log asks [`ProducerStateManager::check_append`] whether a batch may be appended (the
//! leader's validation: duplicates, epochs, sequences, transaction state), then applies it with
//! [`ProducerStateManager::apply_batch`] at its final offsets. A marker that ends a transaction
//! returns a [`CompletedTxn`]; the log computes [`ProducerStateManager::last_stable_offset`] for
//! the transaction index, then calls [`ProducerStateManager::complete_txn`].
//!
//! Kafka validates a whole produce request before applying any of it. For a request with several
//! batches the log should check each batch against a scratch clone to which the previous batches
//! were applied, and commit only if every batch passed.
//!
//! The manager also holds its snapshot "files" (Kafka: `takeSnapshot`, `truncateAndReload`, in
//! `producer_state_snapshots.rs`) and KIP-890 part 1 transaction verification
//! (`VerificationStateEntry`, `VerificationGuard`, in `producer_state_verification.rs`).
//!
//! Not modelled: KIP-890 part 2 (TV2: the "sequence 0 with no state" rule, the marker epoch
//! rule `markerEpoch <= currentEpoch`), `hasLateTransaction`.

use std::borrow::Cow;
use std::collections::{BTreeMap, VecDeque};

use bytes::Bytes;
use thiserror::Error;

use crate::protocol::ErrorCode;
use crate::record::{ControlRecord, RecordBatch};
use crate::types::{Offset, ProducerEpoch, ProducerId, Sequence};

#[cfg(test)]
#[path = "producer_state_snapshots_test.rs"]
mod producer_state_snapshots_test;
#[cfg(test)]
#[path = "producer_state_test.rs"]
mod producer_state_test;

#[path = "producer_state_snapshots.rs"]
mod snapshots;
#[path = "producer_state_verification.rs"]
mod verification;

pub use verification::{VerificationGuard, VerificationStateEntry};

/// Kafka's default `producer.id.expiration.ms` (one day).
pub const DEFAULT_PRODUCER_ID_EXPIRATION_MS: i64 = 86_400_000;

/// Kafka's `RecordBatch.NO_TIMESTAMP`: the timestamp of a fresh, empty entry.
pub const NO_TIMESTAMP: i64 = -1;

/// Who is appending, which decides how much validation runs (Kafka: `AppendOrigin`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppendOrigin {
    /// A producer's Produce request on the leader: full validation, duplicate detection.
    Client,
    /// Written by the broker itself (transaction markers, `MIRROR_PID_RESET`, coordinator
    /// records): epoch and coordinator-epoch checks only, no sequence checks.
    Coordinator,
    /// A follower copying the leader, or log recovery replaying the log: state is overwritten,
    /// a lower epoch or a stale coordinator epoch is only "warned" about.
    Replication,
}

/// One retained batch of a producer (Kafka: `BatchMetadata`), used for duplicate detection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchMetadata {
    /// Sequence of the batch's last record.
    pub last_seq: Sequence,
    /// Offset of the batch's last record.
    pub last_offset: Offset,
    /// `last_offset - first_offset` (also `last_seq - first_seq`, modulo wraparound).
    pub offset_delta: i32,
    /// The batch's max timestamp.
    pub timestamp: i64,
}

impl BatchMetadata {
    /// Sequence of the batch's first record, wrapping at `i32::MAX` as Kafka does.
    #[must_use]
    pub fn first_seq(&self) -> Sequence {
        self.last_seq.decrement(self.offset_delta)
    }

    /// Offset of the batch's first record.
    #[must_use]
    pub fn first_offset(&self) -> Offset {
        self.last_offset.plus(-i64::from(self.offset_delta))
    }
}

/// What the partition knows about one producer id (Kafka: `ProducerStateEntry`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProducerStateEntry {
    /// The producer id.
    pub producer_id: ProducerId,
    /// The latest epoch seen (`NO_PRODUCER_EPOCH` = -1 for an entry with no appends yet).
    pub producer_epoch: ProducerEpoch,
    /// Coordinator epoch of the last transaction marker (-1 if none); fences zombie coordinators.
    pub coordinator_epoch: i32,
    /// Max timestamp of the last batch or marker; drives expiration.
    pub last_timestamp: i64,
    /// First offset of the producer's open transaction, if any.
    pub current_txn_first_offset: Option<Offset>,
    /// The last [`ProducerStateEntry::NUM_BATCHES_TO_RETAIN`] batches of the current epoch,
    /// oldest first.
    batch_metadata: VecDeque<BatchMetadata>,
}

impl ProducerStateEntry {
    /// How many batches Kafka keeps per producer for duplicate detection
    /// (`NUM_BATCHES_TO_RETAIN`, matching `max.in.flight.requests.per.connection <= 5`).
    pub const NUM_BATCHES_TO_RETAIN: usize = 5;

    /// The entry Kafka builds for a producer id it has never seen (`ProducerStateEntry.empty`).
    #[must_use]
    pub fn empty(producer_id: ProducerId) -> Self {
        Self {
            producer_id,
            producer_epoch: ProducerEpoch::NONE,
            coordinator_epoch: -1,
            last_timestamp: NO_TIMESTAMP,
            current_txn_first_offset: None,
            batch_metadata: VecDeque::new(),
        }
    }

    /// Builds an entry with at most one batch, as Kafka does when reading a snapshot file.
    #[must_use]
    pub fn new(
        producer_id: ProducerId,
        producer_epoch: ProducerEpoch,
        coordinator_epoch: i32,
        last_timestamp: i64,
        current_txn_first_offset: Option<Offset>,
        first_batch: Option<BatchMetadata>,
    ) -> Self {
        Self {
            producer_id,
            producer_epoch,
            coordinator_epoch,
            last_timestamp,
            current_txn_first_offset,
            batch_metadata: first_batch.into_iter().collect(),
        }
    }

    /// The retained batches, oldest first.
    #[must_use]
    pub fn batch_metadata(&self) -> &VecDeque<BatchMetadata> {
        &self.batch_metadata
    }

    /// True when no batch is retained (new entry, or only markers seen in this epoch).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.batch_metadata.is_empty()
    }

    /// First sequence of the oldest retained batch, `Sequence::NONE` when empty.
    #[must_use]
    pub fn first_seq(&self) -> Sequence {
        self.batch_metadata
            .front()
            .map_or(Sequence::NONE, BatchMetadata::first_seq)
    }

    /// Last sequence of the newest retained batch, `Sequence::NONE` when empty.
    #[must_use]
    pub fn last_seq(&self) -> Sequence {
        self.batch_metadata
            .back()
            .map_or(Sequence::NONE, |b| b.last_seq)
    }

    /// First offset of the oldest retained batch (Kafka returns -1 when empty).
    #[must_use]
    pub fn first_data_offset(&self) -> Option<Offset> {
        self.batch_metadata.front().map(BatchMetadata::first_offset)
    }

    /// Last offset of the newest retained batch (Kafka returns -1 when empty).
    #[must_use]
    pub fn last_data_offset(&self) -> Option<Offset> {
        self.batch_metadata.back().map(|b| b.last_offset)
    }

    /// The retained batch with exactly this batch's `(firstSeq, lastSeq)`, if the batch has the
    /// entry's epoch (Kafka: `findDuplicateBatch`). A retry of an older batch is not found and
    /// then fails the sequence check as out of order.
    #[must_use]
    pub fn find_duplicate_batch(&self, batch: &RecordBatch) -> Option<BatchMetadata> {
        if batch.producer_epoch() != self.producer_epoch {
            return None;
        }
        self.batch_with_sequence_range(batch.base_sequence(), batch.last_sequence())
    }

    /// The retained batch with exactly this sequence range (Kafka: `batchWithSequenceRange`).
    #[must_use]
    pub fn batch_with_sequence_range(
        &self,
        first_seq: Sequence,
        last_seq: Sequence,
    ) -> Option<BatchMetadata> {
        self.batch_metadata
            .iter()
            .find(|b| b.first_seq() == first_seq && b.last_seq == last_seq)
            .copied()
    }

    /// What Kafka's snapshot file keeps of this entry: only the newest batch, whose timestamp
    /// is the entry's `last_timestamp` (`writeSnapshot` / `readSnapshot`). After a reload from
    /// a snapshot the duplicate window is therefore one batch.
    #[must_use]
    pub fn snapshot_entry(&self) -> ProducerStateEntry {
        let last = self.batch_metadata.back().map(|b| BatchMetadata {
            timestamp: self.last_timestamp,
            ..*b
        });
        Self::new(
            self.producer_id,
            self.producer_epoch,
            self.coordinator_epoch,
            self.last_timestamp,
            self.current_txn_first_offset,
            last,
        )
    }

    /// A new epoch forgets the old epoch's batches (Kafka: `maybeUpdateProducerEpoch`).
    fn maybe_update_producer_epoch(&mut self, epoch: ProducerEpoch) -> bool {
        if self.producer_epoch == epoch {
            return false;
        }
        self.batch_metadata.clear();
        self.producer_epoch = epoch;
        true
    }

    /// Records a data batch (Kafka: `addBatch`), keeping only the newest batches.
    fn add_batch(&mut self, epoch: ProducerEpoch, metadata: BatchMetadata) {
        self.maybe_update_producer_epoch(epoch);
        if self.batch_metadata.len() == Self::NUM_BATCHES_TO_RETAIN {
            self.batch_metadata.pop_front();
        }
        self.batch_metadata.push_back(metadata);
        self.last_timestamp = metadata.timestamp;
        assert!(
            self.batch_metadata.len() <= Self::NUM_BATCHES_TO_RETAIN,
            "batch_metadata_bounded: {} batches for {}",
            self.batch_metadata.len(),
            self.producer_id
        );
    }

    /// Records a transaction marker (Kafka: `update(epoch, coordinatorEpoch, ts)`): the marker's
    /// epoch may bump the entry's (clearing its batches), and the transaction is closed.
    fn update_for_marker(&mut self, epoch: ProducerEpoch, coordinator_epoch: i32, timestamp: i64) {
        self.maybe_update_producer_epoch(epoch);
        self.coordinator_epoch = coordinator_epoch;
        self.current_txn_first_offset = None;
        self.last_timestamp = timestamp;
    }
}

/// A transaction started in this partition (Kafka: `TxnMetadata`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnMetadata {
    /// The producer that owns the transaction.
    pub producer_id: ProducerId,
    /// Offset of the transaction's first batch in this partition.
    pub first_offset: Offset,
    /// Offset of its COMMIT/ABORT marker, once written (`None` while ongoing).
    pub last_offset: Option<Offset>,
}

/// A transaction that a marker just ended (Kafka: `CompletedTxn`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompletedTxn {
    /// The producer that owned the transaction.
    pub producer_id: ProducerId,
    /// Offset of the transaction's first batch.
    pub first_offset: Offset,
    /// Offset of the marker.
    pub last_offset: Offset,
    /// True for ABORT: the log then appends an `AbortedTxn` to the transaction index.
    pub is_aborted: bool,
}

/// Why [`ProducerStateManager::complete_txn`] refused a completion (Kafka `completeTxn`
/// throws `IllegalArgumentException` for the first; it does not check the second, which
/// would move another producer's transaction to the unreplicated set).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CompleteTxnError {
    /// No ongoing transaction starts at `first_offset`.
    #[error(
        "attempted to complete the transaction of producer {producer_id} at {first_offset}, which was not started"
    )]
    NotStarted {
        /// The producer named by the completion.
        producer_id: ProducerId,
        /// The first offset named by the completion.
        first_offset: Offset,
    },
    /// The ongoing transaction at `first_offset` belongs to another producer.
    #[error("the transaction at {first_offset} belongs to producer {owner}, not {producer_id}")]
    OtherProducer {
        /// The producer named by the completion.
        producer_id: ProducerId,
        /// The first offset named by the completion.
        first_offset: Offset,
        /// The producer whose transaction starts there.
        owner: ProducerId,
    },
}

/// Why a batch may not be appended (Kafka's exceptions from `ProducerAppendInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ProducerStateError {
    /// The batch's producer epoch is older than the producer's (`InvalidProducerEpochException`).
    #[error(
        "epoch of producer {producer_id} at offset {offset} is {batch_epoch}, older than the last seen epoch {current_epoch}"
    )]
    InvalidProducerEpoch {
        /// The producer.
        producer_id: ProducerId,
        /// Where the batch would go.
        offset: Offset,
        /// The batch's epoch.
        batch_epoch: ProducerEpoch,
        /// The entry's epoch.
        current_epoch: ProducerEpoch,
    },
    /// The batch does not continue the producer's sequence (`OutOfOrderSequenceException`).
    #[error(
        "out of order sequence for producer {producer_id} at offset {offset}: {first_seq} (epoch {batch_epoch}), current end sequence {last_seq} (epoch {current_epoch})"
    )]
    OutOfOrderSequence {
        /// The producer.
        producer_id: ProducerId,
        /// Where the batch would go.
        offset: Offset,
        /// The batch's epoch.
        batch_epoch: ProducerEpoch,
        /// The batch's first sequence.
        first_seq: Sequence,
        /// The entry's epoch.
        current_epoch: ProducerEpoch,
        /// The entry's last sequence (`-1` if it retains no batch).
        last_seq: Sequence,
    },
    /// A non-transactional batch while the producer has an open transaction
    /// (`InvalidTxnStateException`).
    #[error(
        "expected a transactional write from producer {producer_id} at offset {offset}: its transaction started at {txn_first_offset}"
    )]
    InvalidTxnState {
        /// The producer.
        producer_id: ProducerId,
        /// Where the batch would go.
        offset: Offset,
        /// First offset of the open transaction.
        txn_first_offset: Offset,
    },
    /// KIP-890 part 1: a transactional write with no ongoing transaction and no matching
    /// verification guard (`InvalidTxnStateException`: "Record was not part of an ongoing
    /// transaction").
    #[error(
        "transactional write from producer {producer_id} at offset {offset} was not part of an ongoing transaction"
    )]
    TransactionNotVerified {
        /// The producer.
        producer_id: ProducerId,
        /// Where the batch would go.
        offset: Offset,
    },
    /// A marker from an older transaction coordinator (`TransactionCoordinatorFencedException`).
    #[error(
        "invalid coordinator epoch for producer {producer_id} at offset {offset}: {marker_coordinator_epoch} (zombie), {current_coordinator_epoch} (current)"
    )]
    TransactionCoordinatorFenced {
        /// The producer.
        producer_id: ProducerId,
        /// Where the marker would go.
        offset: Offset,
        /// The marker's coordinator epoch.
        marker_coordinator_epoch: i32,
        /// The entry's coordinator epoch.
        current_coordinator_epoch: i32,
    },
}

impl From<ProducerStateError> for ErrorCode {
    fn from(e: ProducerStateError) -> Self {
        match e {
            ProducerStateError::InvalidProducerEpoch { .. } => ErrorCode::InvalidProducerEpoch,
            ProducerStateError::OutOfOrderSequence { .. } => ErrorCode::OutOfOrderSequenceNumber,
            ProducerStateError::InvalidTxnState { .. }
            | ProducerStateError::TransactionNotVerified { .. } => ErrorCode::InvalidTxnState,
            ProducerStateError::TransactionCoordinatorFenced { .. } => {
                ErrorCode::TransactionCoordinatorFenced
            }
        }
    }
}

/// The outcome of a successful [`ProducerStateManager::check_append`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppendCheck {
    /// A client retry of a retained batch: append nothing and answer with the original
    /// batch's offsets (Kafka: `UnifiedLog.analyzeAndValidateProducerState`).
    Duplicate(BatchMetadata),
    /// The batch may be appended.
    Accept,
}

/// What a batch means to producer state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BatchKind {
    /// KIP-1279 `MIRROR_PID_RESET`, whatever its producer id.
    PidReset,
    /// No producer id: plain producer, or a control record such as KRaft's LEADER_CHANGE.
    NoProducer,
    /// COMMIT or ABORT.
    EndTxn {
        commit: bool,
        coordinator_epoch: i32,
    },
    /// A control batch with a producer id that is neither a marker nor a reset.
    OtherControl,
    /// A data batch with a producer id.
    Data,
}

impl BatchKind {
    fn of(batch: &RecordBatch) -> Self {
        let control = batch.control_record();
        if control == Some(ControlRecord::MirrorPidReset) {
            return BatchKind::PidReset;
        }
        if !batch.producer_id().is_some() {
            return BatchKind::NoProducer;
        }
        match control {
            Some(ControlRecord::EndTxn {
                commit,
                coordinator_epoch,
            }) => BatchKind::EndTxn {
                commit,
                coordinator_epoch,
            },
            Some(_) => BatchKind::OtherControl,
            None if batch.is_control_batch() => BatchKind::OtherControl,
            None => BatchKind::Data,
        }
    }
}

/// Per-partition producer state (Kafka: `ProducerStateManager`).
///
/// Invariant kept by [`Self::apply_batch`]: every entry with `current_txn_first_offset = Some(o)`
/// has an `ongoing_txns[o]` owned by it. The converse does not hold after `MIRROR_PID_RESET`
/// (see [`Self::apply_batch`]).
///
/// Equality compares the producer state itself (producers, transactions, map end offset,
/// expiration): the snapshot files and the verification entries are not state a replay of the
/// log rebuilds, so a live manager and its replay compare equal with or without them.
#[derive(Clone, Debug)]
pub struct ProducerStateManager {
    /// Producer entries by id (Kafka: `producers`).
    producers: BTreeMap<ProducerId, ProducerStateEntry>,
    /// Transactions without a marker yet, by first offset (Kafka: `ongoingTxns`).
    ongoing_txns: BTreeMap<Offset, TxnMetadata>,
    /// Transactions whose marker is at or above the HW, by first offset (Kafka:
    /// `unreplicatedTxns`). They still hold the LSO back.
    unreplicated_txns: BTreeMap<Offset, TxnMetadata>,
    /// The offset up to which the log has been applied (exclusive; Kafka: `lastMapOffset`).
    map_end_offset: Offset,
    /// `producer.id.expiration.ms`.
    producer_id_expiration_ms: i64,
    /// Snapshot files by the offset they end at (Kafka: `snapshots`), each in the
    /// [`super::producer_snapshot`] format. The model has no disk: these are the bytes a
    /// broker would write, held here.
    snapshots: BTreeMap<Offset, Bytes>,
    /// The map end offset of the newest snapshot taken (Kafka: `lastSnapOffset`).
    last_snap_offset: Offset,
    /// KIP-890 part 1: producers whose transactional write is being verified with the
    /// transaction coordinator (Kafka: `verificationStates`).
    verification_states: BTreeMap<ProducerId, VerificationStateEntry>,
    /// The last [`VerificationGuard`] handed out (Kafka: a global counter).
    last_verification_guard: u64,
    /// `transaction.partition.verification.enable` (Kafka's default is true; the model's is
    /// false, see [`Self::set_transaction_verification_enabled`]).
    transaction_verification_enabled: bool,
}

impl PartialEq for ProducerStateManager {
    fn eq(&self, other: &Self) -> bool {
        self.producers == other.producers
            && self.ongoing_txns == other.ongoing_txns
            && self.unreplicated_txns == other.unreplicated_txns
            && self.map_end_offset == other.map_end_offset
            && self.producer_id_expiration_ms == other.producer_id_expiration_ms
    }
}
impl Eq for ProducerStateManager {}

impl ProducerStateManager {
    /// Empty state at offset 0. Kafka's default expiration is
    /// [`DEFAULT_PRODUCER_ID_EXPIRATION_MS`].
    #[must_use]
    pub fn new(producer_id_expiration_ms: i64) -> Self {
        Self {
            producers: BTreeMap::new(),
            ongoing_txns: BTreeMap::new(),
            unreplicated_txns: BTreeMap::new(),
            map_end_offset: Offset(0),
            producer_id_expiration_ms,
            snapshots: BTreeMap::new(),
            last_snap_offset: Offset(0),
            verification_states: BTreeMap::new(),
            last_verification_guard: 0,
            transaction_verification_enabled: false,
        }
    }

    /// The configured `producer.id.expiration.ms`.
    #[must_use]
    pub fn producer_id_expiration_ms(&self) -> i64 {
        self.producer_id_expiration_ms
    }

    /// Validates one batch without changing state (Kafka: the duplicate check of
    /// `UnifiedLog.analyzeAndValidateProducerState`, then `ProducerAppendInfo.append`).
    ///
    /// Data batch: for [`AppendOrigin::Client`] a retained duplicate wins first; then the epoch
    /// check (not for `Replication`), the sequence check (`Client` only), and the transaction
    /// state check. Marker: epoch and coordinator-epoch checks (not for `Replication`).
    /// Error offsets are the batch's base offset, so pass it with its offsets assigned.
    ///
    /// Kafka fidelity: the transaction-state check runs for *every* origin, `Replication`
    /// included (`ProducerAppendInfo.appendDataBatch` throws unconditionally). A control batch
    /// with a producer id that is neither COMMIT nor ABORT is accepted and ignored (Kafka would
    /// fail to parse it as a marker). `MIRROR_PID_RESET` is always accepted.
    pub fn check_append(
        &self,
        batch: &RecordBatch,
        origin: AppendOrigin,
    ) -> Result<AppendCheck, ProducerStateError> {
        self.check_append_verified(batch, origin, VerificationGuard::SENTINEL)
    }

    /// [`Self::check_append`] for a write that carries the request's [`VerificationGuard`]
    /// (Kafka: `appendAsLeader(..., verificationGuard)`): with transaction verification on,
    /// a transactional data batch from a client or coordinator whose producer has no ongoing
    /// transaction needs the guard of its verification entry (KIP-890 part 1, checked after
    /// the duplicate check as in `UnifiedLog.analyzeAndValidateProducerState`).
    pub fn check_append_verified(
        &self,
        batch: &RecordBatch,
        origin: AppendOrigin,
        guard: VerificationGuard,
    ) -> Result<AppendCheck, ProducerStateError> {
        match BatchKind::of(batch) {
            BatchKind::PidReset | BatchKind::NoProducer | BatchKind::OtherControl => {
                Ok(AppendCheck::Accept)
            }
            BatchKind::EndTxn {
                coordinator_epoch, ..
            } => {
                let entry = self.entry_or_empty(batch.producer_id());
                check_producer_epoch(&entry, batch, origin)?;
                check_coordinator_epoch(&entry, batch, coordinator_epoch, origin)?;
                Ok(AppendCheck::Accept)
            }
            BatchKind::Data => self.check_data_batch(batch, origin, guard),
        }
    }

    fn check_data_batch(
        &self,
        batch: &RecordBatch,
        origin: AppendOrigin,
        guard: VerificationGuard,
    ) -> Result<AppendCheck, ProducerStateError> {
        if origin == AppendOrigin::Client
            && let Some(duplicate) = self
                .producers
                .get(&batch.producer_id())
                .and_then(|e| e.find_duplicate_batch(batch))
        {
            return Ok(AppendCheck::Duplicate(duplicate));
        }
        self.check_transaction_verified(batch, origin, guard)?;
        let entry = self.entry_or_empty(batch.producer_id());
        check_producer_epoch(&entry, batch, origin)?;
        if origin == AppendOrigin::Client {
            let verification = self.verification_states.get(&batch.producer_id());
            check_sequence(&entry, batch, verification)?;
        }
        check_txn_state(&entry, batch)?;
        Ok(AppendCheck::Accept)
    }

    fn entry_or_empty(&self, producer_id: ProducerId) -> Cow<'_, ProducerStateEntry> {
        self.producers.get(&producer_id).map_or_else(
            || Cow::Owned(ProducerStateEntry::empty(producer_id)),
            Cow::Borrowed,
        )
    }

    /// Applies one validated (or replicated) batch at its offsets (Kafka:
    /// `ProducerAppendInfo.append` + `ProducerStateManager.update` + `updateMapEndOffset`).
    ///
    /// - Data batch with a producer id: a new epoch clears the retained batches; the batch is
    ///   retained (newest 5); a transactional batch with no open transaction opens one at its
    ///   base offset (`ongoing_txns`).
    /// - COMMIT/ABORT: returns `Some(CompletedTxn)` if the producer had an open transaction. An
    ///   "empty" marker (no open transaction) returns `None` but still updates the epoch
    ///   (clearing batches on a bump), the coordinator epoch and the timestamp. The transaction
    ///   stays in `ongoing_txns` until the log calls [`Self::complete_txn`].
    /// - `MIRROR_PID_RESET` (KIP-1279): every producer entry expires: the next append of any
    ///   producer id is treated as a new producer. `ongoing_txns` and `unreplicated_txns` are
    ///   left alone, so a transaction still open across the reset can never complete: its
    ///   producer entry is gone, so its marker is an "empty" marker, and `first_unstable_offset`
    ///   (hence the LSO) stays stuck at its first offset. This is the hanging-transaction hazard
    ///   that the KIP's stop sequence (truncate to the LSO, or abort open transactions, before
    ///   writing the reset) must prevent.
    /// - Batches without a producer id and other control records: no producer-state effect.
    ///
    /// Always advances `map_end_offset` to `batch.next_offset()`. Application does not depend on
    /// `origin` (Kafka's `update` does not look at it): a replicated lower epoch overwrites.
    pub fn apply_batch(
        &mut self,
        batch: &RecordBatch,
        _origin: AppendOrigin,
    ) -> Option<CompletedTxn> {
        let completed = match BatchKind::of(batch) {
            BatchKind::PidReset => {
                self.producers.clear();
                None
            }
            BatchKind::NoProducer | BatchKind::OtherControl => None,
            BatchKind::EndTxn {
                commit,
                coordinator_epoch,
            } => self.apply_end_txn_marker(batch, commit, coordinator_epoch),
            BatchKind::Data => {
                self.apply_data_batch(batch);
                None
            }
        };
        // Kafka `UnifiedLog.updateProducers`: a transactional write (data or marker) ends the
        // verification: the transaction now has a first offset, or is over.
        if batch.is_transactional() && batch.producer_id().is_some() {
            self.verification_states.remove(&batch.producer_id());
        }
        self.map_end_offset = batch.next_offset();
        completed
    }

    fn entry_mut(&mut self, producer_id: ProducerId) -> &mut ProducerStateEntry {
        self.producers
            .entry(producer_id)
            .or_insert_with(|| ProducerStateEntry::empty(producer_id))
    }

    fn apply_data_batch(&mut self, batch: &RecordBatch) {
        let producer_id = batch.producer_id();
        let first_offset = batch.base_offset();
        let metadata = BatchMetadata {
            last_seq: batch.last_sequence(),
            last_offset: batch.last_offset(),
            offset_delta: batch.header().last_offset_delta,
            timestamp: batch.max_timestamp(),
        };
        let entry = self.entry_mut(producer_id);
        entry.add_batch(batch.producer_epoch(), metadata);
        if entry.current_txn_first_offset.is_none() && batch.is_transactional() {
            entry.current_txn_first_offset = Some(first_offset);
            self.ongoing_txns.insert(
                first_offset,
                TxnMetadata {
                    producer_id,
                    first_offset,
                    last_offset: None,
                },
            );
        }
    }

    fn apply_end_txn_marker(
        &mut self,
        batch: &RecordBatch,
        commit: bool,
        coordinator_epoch: i32,
    ) -> Option<CompletedTxn> {
        let producer_id = batch.producer_id();
        let entry = self.entry_mut(producer_id);
        let completed = entry
            .current_txn_first_offset
            .map(|first_offset| CompletedTxn {
                producer_id,
                first_offset,
                last_offset: batch.base_offset(),
                is_aborted: !commit,
            });
        entry.update_for_marker(
            batch.producer_epoch(),
            coordinator_epoch,
            batch.max_timestamp(),
        );
        completed
    }

    /// The LSO to store with an aborted transaction in the transaction index (Kafka:
    /// `lastStableOffset(CompletedTxn)`): the first offset of the earliest ongoing transaction
    /// of *another* producer, else the marker offset + 1. Call before [`Self::complete_txn`].
    #[must_use]
    pub fn last_stable_offset(&self, completed: &CompletedTxn) -> Offset {
        self.ongoing_txns
            .values()
            .find(|t| t.producer_id != completed.producer_id)
            .map_or_else(|| completed.last_offset.plus(1), |t| t.first_offset)
    }

    /// Moves a completed transaction from ongoing to unreplicated, where it holds the LSO back
    /// until the HW passes its marker (Kafka: `completeTxn`). `completed` must come from
    /// [`Self::apply_batch`]; anything else is a broken caller invariant (Kafka throws
    /// `IllegalArgumentException`).
    pub fn complete_txn(&mut self, completed: &CompletedTxn) -> Result<(), CompleteTxnError> {
        let Some(txn) = self.ongoing_txns.get(&completed.first_offset) else {
            return Err(CompleteTxnError::NotStarted {
                producer_id: completed.producer_id,
                first_offset: completed.first_offset,
            });
        };
        if txn.producer_id != completed.producer_id {
            return Err(CompleteTxnError::OtherProducer {
                producer_id: completed.producer_id,
                first_offset: completed.first_offset,
                owner: txn.producer_id,
            });
        }
        let mut txn = self
            .ongoing_txns
            .remove(&completed.first_offset)
            .expect("looked up above");
        txn.last_offset = Some(completed.last_offset);
        self.unreplicated_txns.insert(completed.first_offset, txn);
        Ok(())
    }

    /// The earliest offset whose transaction is undecided or decided above the HW (Kafka:
    /// `firstUnstableOffset`); the log's LSO is `min(this, HW)`.
    #[must_use]
    pub fn first_unstable_offset(&self) -> Option<Offset> {
        let ongoing = self.first_undecided_offset();
        let unreplicated = self.unreplicated_txns.first_key_value().map(|(o, _)| *o);
        match (ongoing, unreplicated) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The first offset of the earliest transaction with no marker yet (Kafka:
    /// `firstUndecidedOffset`).
    #[must_use]
    pub fn first_undecided_offset(&self) -> Option<Offset> {
        self.ongoing_txns.first_key_value().map(|(o, _)| *o)
    }

    /// Forgets completed transactions whose marker is below the new HW (Kafka:
    /// `onHighWatermarkUpdated`), letting the LSO advance.
    pub fn on_high_watermark_updated(&mut self, hw: Offset) {
        self.remove_unreplicated_transactions(hw);
    }

    /// Drops completed transactions whose marker is below the new log start and moves
    /// `map_end_offset` up to it (Kafka: `onLogStartOffsetIncremented`).
    pub fn on_log_start_offset_incremented(&mut self, log_start: Offset) {
        self.remove_unreplicated_transactions(log_start);
        self.map_end_offset = self.map_end_offset.max(log_start);
        self.last_snap_offset = self.latest_snapshot_offset().unwrap_or(log_start);
    }

    fn remove_unreplicated_transactions(&mut self, offset: Offset) {
        self.unreplicated_txns
            .retain(|_, t| t.last_offset.is_none_or(|last| last >= offset));
    }

    /// Forgets everything and restarts at `offset` (Kafka: `truncateFullyAndStartAt`).
    pub fn truncate_fully_and_start_at(&mut self, offset: Offset) {
        self.producers.clear();
        self.ongoing_txns.clear();
        self.unreplicated_txns.clear();
        // Kafka: every snapshot file is deleted, and `lastSnapOffset` restarts at 0.
        self.snapshots.clear();
        self.last_snap_offset = Offset(0);
        self.map_end_offset = offset;
    }

    /// Removes producers idle for at least `producer.id.expiration.ms` that have no open
    /// transaction (Kafka: `removeExpiredProducers`). A removed producer may then restart at
    /// any sequence.
    pub fn remove_expired_producers(&mut self, now_ms: i64) {
        let expiration = self.producer_id_expiration_ms;
        self.producers
            .retain(|_, e| !entry_expired(expiration, e, now_ms));
        // Kafka: verification entries older than the expiration go too.
        self.verification_states
            .retain(|_, v| now_ms.saturating_sub(v.timestamp) < expiration);
    }

    /// Whether `entry` would be removed at `now_ms` (Kafka: `isProducerExpired`): no open
    /// transaction and `now - last_timestamp >= producer.id.expiration.ms`.
    #[must_use]
    pub fn is_producer_expired(&self, entry: &ProducerStateEntry, now_ms: i64) -> bool {
        entry_expired(self.producer_id_expiration_ms, entry, now_ms)
    }

    /// Installs an entry as read from a snapshot, reopening its transaction if it has one
    /// (Kafka: `loadProducerEntry`).
    pub fn load_producer_entry(&mut self, entry: ProducerStateEntry) {
        let producer_id = entry.producer_id;
        if let Some(first_offset) = entry.current_txn_first_offset {
            self.ongoing_txns.insert(
                first_offset,
                TxnMetadata {
                    producer_id,
                    first_offset,
                    last_offset: None,
                },
            );
        }
        self.producers.insert(producer_id, entry);
    }

    /// The producer's entry, if it has not expired (Kafka: `lastEntry`).
    #[must_use]
    pub fn last_entry(&self, producer_id: ProducerId) -> Option<&ProducerStateEntry> {
        self.producers.get(&producer_id)
    }

    /// All live producer entries (Kafka: `activeProducers`).
    #[must_use]
    pub fn active_producers(&self) -> &BTreeMap<ProducerId, ProducerStateEntry> {
        &self.producers
    }

    /// Transactions with no marker yet, by first offset.
    #[must_use]
    pub fn ongoing_txns(&self) -> &BTreeMap<Offset, TxnMetadata> {
        &self.ongoing_txns
    }

    /// Completed transactions whose marker is not yet below the HW, by first offset.
    #[must_use]
    pub fn unreplicated_txns(&self) -> &BTreeMap<Offset, TxnMetadata> {
        &self.unreplicated_txns
    }

    /// The (exclusive) offset up to which the log has been applied (Kafka: `mapEndOffset`).
    #[must_use]
    pub fn map_end_offset(&self) -> Offset {
        self.map_end_offset
    }

    /// Sets `map_end_offset` (Kafka: `updateMapEndOffset`), e.g. after a replay.
    pub fn update_map_end_offset(&mut self, offset: Offset) {
        self.map_end_offset = offset;
    }

    /// Kafka's `isEmpty`: no producers and no unreplicated transactions. Like Kafka it ignores
    /// `ongoing_txns`, which are normally owned by a producer entry; after `MIRROR_PID_RESET`
    /// a hanging transaction can be ongoing while this returns true.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.producers.is_empty() && self.unreplicated_txns.is_empty()
    }
}

impl Default for ProducerStateManager {
    fn default() -> Self {
        Self::new(DEFAULT_PRODUCER_ID_EXPIRATION_MS)
    }
}

fn entry_expired(expiration_ms: i64, entry: &ProducerStateEntry, now_ms: i64) -> bool {
    entry.current_txn_first_offset.is_none()
        && now_ms.saturating_sub(entry.last_timestamp) >= expiration_ms
}

/// Kafka: `ProducerAppendInfo.checkProducerEpoch` for TV0/TV1 (and for data batches):
/// `batch.epoch < entry.epoch` is fenced, except on replication where Kafka only warns.
fn check_producer_epoch(
    entry: &ProducerStateEntry,
    batch: &RecordBatch,
    origin: AppendOrigin,
) -> Result<(), ProducerStateError> {
    if batch.producer_epoch() >= entry.producer_epoch || origin == AppendOrigin::Replication {
        return Ok(());
    }
    Err(ProducerStateError::InvalidProducerEpoch {
        producer_id: entry.producer_id,
        offset: batch.base_offset(),
        batch_epoch: batch.producer_epoch(),
        current_epoch: entry.producer_epoch,
    })
}

/// Kafka: `ProducerAppendInfo.checkSequence` (client appends only). KIP-890 part 1: while a
/// verification entry exists, a first sequence above the lowest one it saw is out of order
/// (a later batch of the transaction may not be written before its first).
fn check_sequence(
    entry: &ProducerStateEntry,
    batch: &RecordBatch,
    verification: Option<&VerificationStateEntry>,
) -> Result<(), ProducerStateError> {
    let first_seq = batch.base_sequence();
    let verified_ok = verification.is_none_or(|v| first_seq <= v.lowest_sequence);
    let ok = verified_ok
        && if batch.producer_epoch() != entry.producer_epoch {
            // A new epoch must restart at 0, unless the producer is unknown (no epoch yet).
            first_seq == Sequence(0) || entry.producer_epoch == ProducerEpoch::NONE
        } else {
            entry.producer_epoch == ProducerEpoch::NONE || in_sequence(entry.last_seq(), first_seq)
        };
    if ok {
        return Ok(());
    }
    Err(ProducerStateError::OutOfOrderSequence {
        producer_id: entry.producer_id,
        offset: batch.base_offset(),
        batch_epoch: batch.producer_epoch(),
        first_seq,
        current_epoch: entry.producer_epoch,
        last_seq: entry.last_seq(),
    })
}

/// Kafka: `ProducerAppendInfo.inSequence`, with the int32 wraparound.
fn in_sequence(last_seq: Sequence, next_seq: Sequence) -> bool {
    i64::from(next_seq.0) == i64::from(last_seq.0) + 1
        || (next_seq == Sequence(0) && last_seq == Sequence(i32::MAX))
}

/// Kafka: `ProducerAppendInfo.appendDataBatch`'s transaction check, which runs for every origin.
fn check_txn_state(
    entry: &ProducerStateEntry,
    batch: &RecordBatch,
) -> Result<(), ProducerStateError> {
    match entry.current_txn_first_offset {
        Some(txn_first_offset) if !batch.is_transactional() => {
            Err(ProducerStateError::InvalidTxnState {
                producer_id: entry.producer_id,
                offset: batch.base_offset(),
                txn_first_offset,
            })
        }
        _ => Ok(()),
    }
}

/// Kafka: `ProducerAppendInfo.checkCoordinatorEpoch`: a marker from an older coordinator is
/// fenced, except on replication where Kafka only logs.
fn check_coordinator_epoch(
    entry: &ProducerStateEntry,
    batch: &RecordBatch,
    marker_coordinator_epoch: i32,
    origin: AppendOrigin,
) -> Result<(), ProducerStateError> {
    if entry.coordinator_epoch <= marker_coordinator_epoch || origin == AppendOrigin::Replication {
        return Ok(());
    }
    Err(ProducerStateError::TransactionCoordinatorFenced {
        producer_id: entry.producer_id,
        offset: batch.base_offset(),
        marker_coordinator_epoch,
        current_coordinator_epoch: entry.coordinator_epoch,
    })
}
