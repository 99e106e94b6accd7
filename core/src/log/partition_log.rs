//! [`PartitionLog`]: one replica's log of one partition (Kafka: `UnifiedLog` + `LocalLog`).
//!
//! It owns the batches, the log start offset, the log end offset (LEO), the high watermark
//! (HW), the leader epoch cache, producer state and the aborted-transaction index, and keeps
//! them consistent through appends (as leader or as follower/mirror), truncations
//! (`truncate_to`, `truncate_fully_and_start_at`) and log-start moves (retention,
//! DeleteRecords, following a leader's log start).
//!
//! Each batch plays the role of a Kafka segment for retention: the model has no segment
//! files, so retention deletes whole batches (documented simplification).

use std::collections::VecDeque;

use bytes::Bytes;
use thiserror::Error;

use super::epoch_cache::{EpochCacheError, LeaderEpochCache};
use super::producer_state::{
    AppendCheck, AppendOrigin, ProducerStateError, ProducerStateManager, VerificationGuard,
};
use super::txn_index::{AbortedTxn, TransactionIndex};
use crate::protocol::ErrorCode;
use crate::record::{BatchError, RecordBatch};
use crate::replication::fetch_leader::FetchIsolation;
use crate::types::{LeaderEpoch, Offset, OffsetAndEpoch, ProducerEpoch, ProducerId, Sequence};

/// Per-log settings that change behaviour.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogConfig {
    /// `producer.id.expiration.ms` (Kafka default 1 day).
    pub producer_id_expiration_ms: i64,
    /// `transaction.partition.verification.enable` (KIP-890 part 1). Kafka's default is true;
    /// the model's is false, since its brokers start no verification: with it on, a
    /// transactional first write needs [`PartitionLog::maybe_start_transaction_verification`]'s
    /// guard ([`PartitionLog::append_as_leader_verified`]).
    pub transaction_verification_enabled: bool,
}

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            producer_id_expiration_ms: 86_400_000,
            transaction_verification_enabled: false,
        }
    }
}

/// Why an append was refused. Nothing is appended when this is returned.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum AppendError {
    /// The bytes are not a valid v2 batch (CRC, framing).
    #[error("invalid batch: {0}")]
    InvalidBatch(#[from] BatchError),
    /// A follower/mirror batch starts below the LEO (Kafka: `UnexpectedAppendOffsetException`).
    #[error("batch base offset {got} is below the log end offset {expected}")]
    OffsetMismatch {
        /// The LEO.
        expected: Offset,
        /// The batch's base offset.
        got: Offset,
    },
    /// A leader epoch below zero (Kafka: `IllegalArgumentException` from the epoch cache).
    #[error("invalid leader epoch {0}")]
    InvalidEpoch(LeaderEpoch),
    /// A replicated batch carries an epoch above the leader epoch of the fetch
    /// (KAFKA-18723: the follower rejects it).
    #[error("batch epoch {batch_epoch} is above the leader epoch {leader_epoch}")]
    EpochAboveLeader {
        /// The batch's partition leader epoch.
        batch_epoch: LeaderEpoch,
        /// The epoch the fetch was made under.
        leader_epoch: LeaderEpoch,
    },
    /// Clients may not write control batches (Kafka: `LogValidator`).
    #[error("control batches may not be appended by clients")]
    ControlBatchFromClient,
    /// Producer-state validation failed (sequence, epoch, transaction state).
    #[error("producer state: {0}")]
    ProducerState(#[from] ProducerStateError),
}

impl From<AppendError> for ErrorCode {
    fn from(e: AppendError) -> Self {
        match e {
            AppendError::InvalidBatch(_) | AppendError::ControlBatchFromClient => {
                ErrorCode::CorruptMessage
            }
            AppendError::OffsetMismatch { .. } | AppendError::EpochAboveLeader { .. } => {
                ErrorCode::InvalidRequest
            }
            AppendError::InvalidEpoch(_) => ErrorCode::InvalidRequest,
            AppendError::ProducerState(p) => p.into(),
        }
    }
}

impl From<EpochCacheError> for AppendError {
    fn from(e: EpochCacheError) -> Self {
        match e {
            EpochCacheError::InvalidEntry { epoch, .. } => AppendError::InvalidEpoch(epoch),
        }
    }
}

/// Why a log-start move or truncation was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum OffsetError {
    /// A negative offset.
    #[error("negative offset {0}")]
    Negative(Offset),
    /// A log start above the HW (Kafka: `OffsetOutOfRangeException` from
    /// `maybeIncrementLogStartOffset`).
    #[error("log start {requested} is above the high watermark {high_watermark}")]
    AboveHighWatermark {
        /// The requested log start.
        requested: Offset,
        /// The HW.
        high_watermark: Offset,
    },
    /// A read outside `[logStart, LEO]`.
    #[error("offset {requested} is out of range [{log_start}, {log_end}]")]
    OutOfRange {
        /// The requested offset.
        requested: Offset,
        /// The log start offset.
        log_start: Offset,
        /// The log end offset.
        log_end: Offset,
    },
}

impl From<OffsetError> for ErrorCode {
    fn from(_: OffsetError) -> Self {
        ErrorCode::OffsetOutOfRange
    }
}

/// What an append did (Kafka: `LogAppendInfo`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogAppendInfo {
    /// First offset of the appended (or duplicate) batch.
    pub first_offset: Offset,
    /// Last offset of the appended (or duplicate) batch.
    pub last_offset: Offset,
    /// True when the batch was a retry of a retained batch: nothing was appended and the
    /// original offsets are returned (Kafka's idempotent dedup).
    pub duplicate: bool,
    /// The batch as stored (offsets and epoch assigned), `None` for a duplicate.
    pub appended: Option<RecordBatch>,
    /// Aborted transactions indexed by this append.
    pub aborted: Vec<AbortedTxn>,
}

/// What a read returns (Kafka: `FetchDataInfo` with the log's offsets at read time).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FetchDataInfo {
    /// Whole batches, the first one containing the fetch offset.
    pub batches: Vec<RecordBatch>,
    /// For read_committed: aborted transactions overlapping the returned range.
    pub aborted_transactions: Option<Vec<AbortedTxn>>,
    /// The HW at read time.
    pub high_watermark: Offset,
    /// The LSO at read time.
    pub last_stable_offset: Offset,
    /// The log start at read time.
    pub log_start_offset: Offset,
}

/// One replica's partition log.
#[derive(Clone, Debug)]
pub struct PartitionLog {
    config: LogConfig,
    /// Batches in offset order; the first one's last offset is `>= log_start_offset`.
    batches: VecDeque<RecordBatch>,
    log_start_offset: Offset,
    /// Invariant: `log_start_offset <= high_watermark <= log_end_offset`.
    log_end_offset: Offset,
    high_watermark: Offset,
    epoch_cache: LeaderEpochCache,
    producer_state: ProducerStateManager,
    /// Producer state as of the first retained batch: what Kafka's snapshot at the log start
    /// holds (state contributed by deleted batches). Reloads replay the log on top of it.
    producer_state_base: ProducerStateManager,
    txn_index: TransactionIndex,
}

impl PartitionLog {
    /// An empty log starting at offset 0.
    #[must_use]
    pub fn new(config: LogConfig) -> Self {
        let mut producer_state = ProducerStateManager::new(config.producer_id_expiration_ms);
        producer_state
            .set_transaction_verification_enabled(config.transaction_verification_enabled);
        Self {
            config,
            batches: VecDeque::new(),
            log_start_offset: Offset(0),
            log_end_offset: Offset(0),
            high_watermark: Offset(0),
            epoch_cache: LeaderEpochCache::new(),
            producer_state_base: producer_state.clone(),
            producer_state,
            txn_index: TransactionIndex::default(),
        }
    }

    /// Rebuilds a log after a restart (Kafka: `LogLoader`): the recovered batches (a
    /// CRC-validated prefix of the segments) are replayed as a follower would append them,
    /// which rebuilds the epoch cache from the batches; producer state is the snapshot at the
    /// log start plus replay; the cache is trimmed to `[log_start, LEO]`; the HW checkpoint is
    /// clamped into `[log_start, LEO]`.
    pub fn recover(
        config: LogConfig,
        log_start: Offset,
        producer_base: ProducerStateManager,
        batches: Vec<RecordBatch>,
        high_watermark: Offset,
    ) -> Result<Self, AppendError> {
        let mut log = Self::new(config);
        // Batches wholly below the log start belong to deleted segments; the snapshot covers them.
        let batches: Vec<RecordBatch> = batches
            .into_iter()
            .filter(|b| b.last_offset() >= log_start)
            .collect();
        let start = batches
            .first()
            .map_or(log_start, |b| b.base_offset().min(log_start));
        log.truncate_fully_and_start_at(start, None);
        for b in &batches {
            log.append_replayed(b, None)?;
        }
        let log_start = log_start.max(start).min(log.log_end_offset);
        log.log_start_offset = log_start;
        // Kafka LogLoader.load: `truncateFromEnd(recovered LEO)` then
        // `truncateFromStart(logStartOffset)`; every entry points at a recovered record.
        log.epoch_cache.truncate_from_end(log.log_end_offset);
        log.epoch_cache.truncate_from_start(log_start);
        log.producer_state_base = producer_base;
        log.producer_state_base
            .set_transaction_verification_enabled(log.config.transaction_verification_enabled);
        log.producer_state_base.update_map_end_offset(log_start);
        log.high_watermark = high_watermark.max(log_start).min(log.log_end_offset);
        log.reload_producer_state();
        log.check_invariants();
        Ok(log)
    }

    /// The log's settings.
    #[must_use]
    pub fn config(&self) -> &LogConfig {
        &self.config
    }

    // ---------------------------------------------------------------- getters

    /// First readable offset.
    #[must_use]
    pub fn log_start_offset(&self) -> Offset {
        self.log_start_offset
    }

    /// The offset the next appended record gets (exclusive end of the log).
    #[must_use]
    pub fn log_end_offset(&self) -> Offset {
        self.log_end_offset
    }

    /// The high watermark: offsets below it are committed.
    #[must_use]
    pub fn high_watermark(&self) -> Offset {
        self.high_watermark
    }

    /// The first offset of an undecided or unreplicated transaction, clamped to the log
    /// start (Kafka: `firstUnstableOffset`).
    #[must_use]
    pub fn first_unstable_offset(&self) -> Option<Offset> {
        self.producer_state
            .first_unstable_offset()
            .map(|o| o.max(self.log_start_offset))
    }

    /// The last stable offset: `min(firstUnstable, HW)` (Kafka: `lastStableOffset`).
    #[must_use]
    pub fn last_stable_offset(&self) -> Offset {
        match self.first_unstable_offset() {
            Some(o) if o < self.high_watermark => o,
            _ => self.high_watermark,
        }
    }

    /// The leader epoch cache.
    #[must_use]
    pub fn epoch_cache(&self) -> &LeaderEpochCache {
        &self.epoch_cache
    }

    /// The latest epoch in the cache (Kafka: `latestEpoch`).
    #[must_use]
    pub fn latest_epoch(&self) -> Option<LeaderEpoch> {
        self.epoch_cache.latest_epoch()
    }

    /// End offset of `epoch` and the epoch it resolves to, `None` when the cache cannot
    /// answer (Kafka: `UnifiedLog.endOffsetForEpoch`).
    #[must_use]
    pub fn end_offset_for_epoch(&self, epoch: LeaderEpoch) -> Option<OffsetAndEpoch> {
        let (e, off) = self.epoch_cache.end_offset_for(epoch, self.log_end_offset);
        (off != Offset::UNDEFINED).then(|| OffsetAndEpoch::new(off, e))
    }

    /// Producer state.
    #[must_use]
    pub fn producer_state(&self) -> &ProducerStateManager {
        &self.producer_state
    }

    /// Producer state as of the first retained batch (the reload base).
    #[must_use]
    pub fn producer_state_base(&self) -> &ProducerStateManager {
        &self.producer_state_base
    }

    /// Takes a producer-state snapshot at the log end, unless one is there already (Kafka:
    /// `producerStateManager.takeSnapshot()`, which `UnifiedLog` runs on a segment roll and
    /// at close). Returns the offset of the snapshot taken.
    pub fn take_producer_snapshot(&mut self) -> Option<Offset> {
        self.producer_state.take_snapshot()
    }

    /// The offset of the newest producer-state snapshot (Kafka:
    /// `UnifiedLog.latestProducerSnapshotOffset`).
    #[must_use]
    pub fn latest_producer_snapshot_offset(&self) -> Option<Offset> {
        self.producer_state.latest_snapshot_offset()
    }

    /// The offset of the oldest producer-state snapshot (Kafka:
    /// `UnifiedLog.oldestProducerSnapshotOffset`).
    #[must_use]
    pub fn oldest_producer_snapshot_offset(&self) -> Option<Offset> {
        self.producer_state.oldest_snapshot_offset()
    }

    /// The offset up to which producer state is built (Kafka:
    /// `UnifiedLog.latestProducerStateEndOffset`).
    #[must_use]
    pub fn latest_producer_state_end_offset(&self) -> Offset {
        self.producer_state.map_end_offset()
    }

    /// Turns KIP-890 transaction verification on or off (Kafka: the dynamic broker config
    /// `transaction.partition.verification.enable`).
    pub fn set_transaction_verification_enabled(&mut self, enabled: bool) {
        self.config.transaction_verification_enabled = enabled;
        self.producer_state
            .set_transaction_verification_enabled(enabled);
        self.producer_state_base
            .set_transaction_verification_enabled(enabled);
    }

    /// KIP-890 part 1: starts the verification of a transactional write (Kafka:
    /// `UnifiedLog.maybeStartTransactionVerification`): the sentinel when the producer has a
    /// transaction ongoing here (no verification needed), else the guard of its verification
    /// entry, created at `now_ms` if it has none.
    pub fn maybe_start_transaction_verification(
        &mut self,
        producer_id: ProducerId,
        sequence: Sequence,
        epoch: ProducerEpoch,
        now_ms: i64,
    ) -> VerificationGuard {
        if self.producer_state.has_ongoing_transaction(producer_id) {
            return VerificationGuard::SENTINEL;
        }
        self.producer_state
            .maybe_create_verification_state_entry(producer_id, sequence, epoch, now_ms)
            .verification_guard
    }

    /// The guard of the producer's pending verification, else the sentinel (Kafka:
    /// `UnifiedLog.verificationGuard`).
    #[must_use]
    pub fn verification_guard(&self, producer_id: ProducerId) -> VerificationGuard {
        self.producer_state.verification_guard(producer_id)
    }

    /// Whether the producer has a transaction open here (Kafka:
    /// `UnifiedLog.hasOngoingTransaction`).
    #[must_use]
    pub fn has_ongoing_transaction(&self, producer_id: ProducerId) -> bool {
        self.producer_state.has_ongoing_transaction(producer_id)
    }

    /// The aborted-transaction index.
    #[must_use]
    pub fn txn_index(&self) -> &TransactionIndex {
        &self.txn_index
    }

    /// The retained batches, in offset order.
    pub fn batches(&self) -> impl DoubleEndedIterator<Item = &RecordBatch> + ExactSizeIterator {
        self.batches.iter()
    }

    /// Retained batches from the one containing `offset` on (every batch whose last offset is
    /// at or above it), found by binary search.
    pub fn batches_from(&self, offset: Offset) -> impl DoubleEndedIterator<Item = &RecordBatch> {
        self.batches.range(self.first_batch_at_or_after(offset)..)
    }

    /// Index of the first batch whose last offset is at or above `offset` (the batch count if
    /// none is). Most lookups are at or near the log end (a caught-up or slightly behind
    /// fetcher, the next append, a HW a few batches below the LEO), so the search gallops
    /// back from the last batch (1, 2, 4, ... batches) and then bisects the last step: a
    /// handful of batches are read for a lookup near the end, where a bisection of the whole
    /// log read one batch (a cache miss in a long log) per halving.
    fn first_batch_at_or_after(&self, offset: Offset) -> usize {
        let below = |i: usize| self.batches[i].last_offset() < offset;
        let n = self.batches.len();
        if n == 0 || below(n - 1) {
            return n;
        }
        // The answer is in `lo..=hi`, and batch `hi` is not below `offset`.
        let (mut lo, mut hi) = (0, n - 1);
        let mut step = 1;
        while step <= hi {
            let probe = hi - step;
            if below(probe) {
                lo = probe + 1;
                break;
            }
            hi = probe;
            step *= 2;
        }
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if below(mid) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Number of retained batches.
    #[must_use]
    pub fn batch_count(&self) -> usize {
        self.batches.len()
    }

    /// The retained batch containing `offset`.
    #[must_use]
    pub fn batch_containing(&self, offset: Offset) -> Option<&RecordBatch> {
        let i = self.first_batch_at_or_after(offset);
        self.batches.get(i).filter(|b| b.base_offset() <= offset)
    }

    /// Total bytes of retained batches.
    #[must_use]
    pub fn size_in_bytes(&self) -> usize {
        self.batches.iter().map(RecordBatch::size_in_bytes).sum()
    }

    // ---------------------------------------------------------------- appends

    /// Appends a batch as the leader (Kafka: `appendAsLeader`): assigns offsets from the
    /// LEO and stamps `leader_epoch`, validates producer state for `origin`, returns the
    /// original offsets for an idempotent duplicate without appending.
    pub fn append_as_leader(
        &mut self,
        batch: &RecordBatch,
        leader_epoch: LeaderEpoch,
        origin: AppendOrigin,
    ) -> Result<LogAppendInfo, AppendError> {
        self.append_as_leader_verified(batch, leader_epoch, origin, VerificationGuard::SENTINEL)
    }

    /// [`Self::append_as_leader`] with the produce's KIP-890 verification guard (Kafka:
    /// `appendAsLeader(records, leaderEpoch, origin, requestLocal, verificationGuard)`): with
    /// transaction verification on, a transactional batch whose producer has no ongoing
    /// transaction here is refused with INVALID_TXN_STATE unless `guard` is the one
    /// [`Self::maybe_start_transaction_verification`] handed out and no marker cleared since.
    pub fn append_as_leader_verified(
        &mut self,
        batch: &RecordBatch,
        leader_epoch: LeaderEpoch,
        origin: AppendOrigin,
        guard: VerificationGuard,
    ) -> Result<LogAppendInfo, AppendError> {
        if leader_epoch.0 < 0 {
            return Err(AppendError::InvalidEpoch(leader_epoch));
        }
        if origin == AppendOrigin::Client && batch.is_control_batch() {
            return Err(AppendError::ControlBatchFromClient);
        }
        // Kafka `UnifiedLog.analyzeAndValidateRecords`: a batch whose CRC does not match is a
        // `CorruptRecordException` (CORRUPT_MESSAGE), never appended. Without it the leader
        // kept a batch every follower refuses, and replication stopped (RPC fuzz).
        if origin == AppendOrigin::Client {
            crate::record::codec::validate_frame(batch.bytes())?;
        }
        let stamped = batch.with_offset_and_epoch(self.log_end_offset, leader_epoch);
        if let AppendCheck::Duplicate(meta) = self
            .producer_state
            .check_append_verified(&stamped, origin, guard)?
        {
            return Ok(LogAppendInfo {
                first_offset: meta.first_offset(),
                last_offset: meta.last_offset,
                duplicate: true,
                appended: None,
                aborted: Vec::new(),
            });
        }
        Ok(self.append_validated(stamped, origin))
    }

    /// Decodes wire bytes and appends them as the leader; a bad CRC or framing is an error.
    pub fn append_bytes_as_leader(
        &mut self,
        bytes: Bytes,
        leader_epoch: LeaderEpoch,
        origin: AppendOrigin,
    ) -> Result<LogAppendInfo, AppendError> {
        let batch = RecordBatch::decode(bytes)?;
        self.append_as_leader(&batch, leader_epoch, origin)
    }

    /// Appends a replicated batch unchanged (Kafka: `appendAsFollower`): offsets, epoch and
    /// producer fields are kept byte for byte. Used by followers and by the KIP-1279 mirror
    /// fetcher. `fetch_leader_epoch`, when given, rejects batches stamped with a higher epoch
    /// (KAFKA-18723). A base offset above the LEO (a compaction gap) is accepted, as in Kafka.
    pub fn append_as_follower(
        &mut self,
        batch: &RecordBatch,
        fetch_leader_epoch: Option<LeaderEpoch>,
    ) -> Result<LogAppendInfo, AppendError> {
        // Kafka `UnifiedLog.analyzeAndValidateRecords`: a replicated batch's CRC is checked
        // (`CorruptRecordException`, the fetcher retries after a backoff). Only a batch read
        // unchecked from a segment recovery did not scan can fail it (bit rot).
        crate::record::codec::validate_frame(batch.bytes())?;
        self.append_replayed(batch, fetch_leader_epoch)
    }

    /// [`Self::append_as_follower`] without the CRC check: recovery replays what it loaded.
    fn append_replayed(
        &mut self,
        batch: &RecordBatch,
        fetch_leader_epoch: Option<LeaderEpoch>,
    ) -> Result<LogAppendInfo, AppendError> {
        if batch.base_offset() < self.log_end_offset {
            return Err(AppendError::OffsetMismatch {
                expected: self.log_end_offset,
                got: batch.base_offset(),
            });
        }
        let epoch = batch.partition_leader_epoch();
        if epoch.0 < 0 {
            return Err(AppendError::InvalidEpoch(epoch));
        }
        if let Some(le) = fetch_leader_epoch
            && epoch > le
        {
            return Err(AppendError::EpochAboveLeader {
                batch_epoch: epoch,
                leader_epoch: le,
            });
        }
        let check = self
            .producer_state
            .check_append(batch, AppendOrigin::Replication)?;
        debug_assert!(matches!(check, AppendCheck::Accept));
        Ok(self.append_validated(batch.clone(), AppendOrigin::Replication))
    }

    /// Decodes wire bytes and appends them as a follower.
    pub fn append_bytes_as_follower(
        &mut self,
        bytes: Bytes,
        fetch_leader_epoch: Option<LeaderEpoch>,
    ) -> Result<LogAppendInfo, AppendError> {
        let batch = RecordBatch::decode(bytes)?;
        self.append_as_follower(&batch, fetch_leader_epoch)
    }

    /// Applies a validated batch: epoch cache, records, producer state, txn index, LEO.
    fn append_validated(&mut self, batch: RecordBatch, origin: AppendOrigin) -> LogAppendInfo {
        // Kafka: UnifiedLog.append -> maybeAssignEpochStartOffset for every v2 batch.
        self.epoch_cache
            .assign(batch.partition_leader_epoch(), batch.base_offset())
            .expect("epoch_non_negative: checked by the caller");
        let aborted = apply_to_producer_state(&mut self.producer_state, &batch, origin);
        for a in &aborted {
            self.txn_index
                .append(*a)
                .expect("txn_index_monotonic: markers are appended in offset order");
        }
        self.log_end_offset = batch.next_offset();
        let info = LogAppendInfo {
            first_offset: batch.base_offset(),
            last_offset: batch.last_offset(),
            duplicate: false,
            appended: Some(batch.clone()),
            aborted,
        };
        self.batches.push_back(batch);
        self.check_invariants();
        info
    }

    /// Records that `epoch` starts at `start_offset` (Kafka: `maybeAssignEpochStartOffset`,
    /// called by `Partition.makeLeader` with the LEO before any record of the epoch exists).
    pub fn maybe_assign_epoch_start_offset(
        &mut self,
        epoch: LeaderEpoch,
        start_offset: Offset,
    ) -> Result<bool, EpochCacheError> {
        self.epoch_cache.assign(epoch, start_offset)
    }

    // ---------------------------------------------------------------- truncation

    /// Keeps offsets `< target` (Kafka: `UnifiedLog.truncateTo`). Returns whether anything
    /// was removed. Even when nothing is (target `>= LEO`), a trailing epoch entry that
    /// starts at the LEO is dropped from the cache, exactly as Kafka does.
    pub fn truncate_to(&mut self, target: Offset) -> Result<bool, OffsetError> {
        if target.0 < 0 {
            return Err(OffsetError::Negative(target));
        }
        if target >= self.log_end_offset {
            self.epoch_cache.truncate_from_end(self.log_end_offset);
            return Ok(false);
        }
        if self.truncation_restarts_log(target) {
            self.truncate_fully_and_start_at(target, None);
            return Ok(true);
        }
        // Kafka: LogSegment.truncateTo removes the whole batch containing `target`.
        let mut data_end = target;
        while let Some(b) = self.batches.back().filter(|b| b.last_offset() >= target) {
            data_end = data_end.min(b.base_offset());
            self.batches.pop_back();
        }
        self.txn_index.truncate_to(target);
        // Kafka trims the cache at `target` (`truncateFromEnd(targetOffset)`), which keeps an
        // entry starting inside the removed batch; its LogLoader drops that entry at the next
        // start (`truncateFromEnd(recovered LEO)`), since cache entries point at records. The
        // model applies that rule at once: a target in the middle of a batch trims the cache
        // at the batch's base. Otherwise a follower cut mid-batch (OFFSET_OUT_OF_RANGE with a
        // leader LEO inside its own batch) keeps fetching with the epoch of records it no
        // longer has, which a mirror leader (no epoch of its own, B §8.2) answers with
        // OFFSET_OUT_OF_RANGE forever (issue M6 bug 1).
        self.epoch_cache.truncate_from_end(data_end);
        // Kafka `ProducerStateManager.truncateAndReload` deletes every snapshot at or below the
        // log start ("snapshot.offset <= logStartOffset"), then reloads from the newest one
        // left. A cut at or below the log start leaves none in (logStart, target]: the state
        // restarts empty at the log start, and the producers of batches below it (an open
        // transaction whose data DeleteRecords removed) are forgotten. Keeping them left a
        // mirrored transaction open after the stop's LSO cut had removed its marker (mirror
        // chaos seed 6834). A cut above the log start may still find a segment's snapshot in
        // Kafka; the model's base stands for it.
        if target <= self.log_start_offset {
            self.producer_state_base
                .truncate_fully_and_start_at(self.log_start_offset.min(target));
        }
        self.log_start_offset = self.log_start_offset.min(target);
        self.log_end_offset = target;
        if self.high_watermark >= self.log_end_offset {
            self.high_watermark = self.log_end_offset;
        }
        self.reload_producer_state();
        self.check_invariants();
        Ok(true)
    }

    /// Whether [`Self::truncate_to`] below the LEO would restart the log at `target`
    /// (Kafka `UnifiedLog.truncateTo`: a target below the first segment's base offset is
    /// `truncateFullyAndStartAt`).
    #[must_use]
    pub fn truncation_restarts_log(&self, target: Offset) -> bool {
        match self.batches.front() {
            Some(b) => b.base_offset() > target,
            None => target < self.log_start_offset,
        }
    }

    /// Deletes everything and restarts the log at `offset` (Kafka:
    /// `truncateFullyAndStartAt`): cache, producer state and txn index cleared; LEO = HW =
    /// `offset`; the log start is `log_start` or `offset`.
    pub fn truncate_fully_and_start_at(&mut self, offset: Offset, log_start: Option<Offset>) {
        let offset = offset.max(Offset(0));
        self.batches.clear();
        self.epoch_cache.clear();
        self.txn_index.clear();
        self.producer_state.truncate_fully_and_start_at(offset);
        self.producer_state_base.truncate_fully_and_start_at(offset);
        self.log_start_offset = log_start.unwrap_or(offset).min(offset);
        self.log_end_offset = offset;
        self.high_watermark = offset;
        self.check_invariants();
    }

    /// Rebuilds producer state by replaying the retained log on top of the base snapshot
    /// (Kafka: `truncateAndReload` + `rebuildProducerState`, replay with REPLICATION origin).
    fn reload_producer_state(&mut self) {
        let replayed = self.replayed_producer_state();
        let live = std::mem::replace(&mut self.producer_state, replayed);
        // Snapshot files and verification entries are not rebuilt by a replay: Kafka's
        // `truncateAndReload` keeps them (deleting only snapshots outside the new range).
        self.producer_state.carry_files_and_verifications(live);
        self.producer_state
            .remove_snapshots_outside(self.log_start_offset, self.log_end_offset);
    }

    /// Producer state rebuilt from the base snapshot and the retained log, as a checker's
    /// reference (invariant "producer state equals replay").
    #[must_use]
    pub fn replayed_producer_state(&self) -> ProducerStateManager {
        let mut psm = self.producer_state_base.clone();
        for b in &self.batches {
            apply_to_producer_state(&mut psm, b, AppendOrigin::Replication);
        }
        psm.update_map_end_offset(self.log_end_offset);
        psm.on_high_watermark_updated(self.high_watermark);
        psm
    }

    // ---------------------------------------------------------------- log start

    /// Moves the log start forward (Kafka: `maybeIncrementLogStartOffset`), for
    /// DeleteRecords, retention, or a follower/mirror following its leader's log start.
    /// Refused above the HW. Returns whether it moved.
    pub fn maybe_increment_log_start_offset(
        &mut self,
        new_log_start: Offset,
    ) -> Result<bool, OffsetError> {
        if new_log_start.0 < 0 {
            return Err(OffsetError::Negative(new_log_start));
        }
        if new_log_start > self.high_watermark {
            return Err(OffsetError::AboveHighWatermark {
                requested: new_log_start,
                high_watermark: self.high_watermark,
            });
        }
        if new_log_start <= self.log_start_offset {
            return Ok(false);
        }
        self.log_start_offset = new_log_start;
        self.epoch_cache.truncate_from_start(new_log_start);
        self.producer_state
            .on_log_start_offset_incremented(new_log_start);
        self.delete_batches_below(new_log_start);
        self.check_invariants();
        Ok(true)
    }

    /// Deletes batches wholly below `offset`, folding their producer state into the base.
    fn delete_batches_below(&mut self, offset: Offset) {
        while self
            .batches
            .front()
            .is_some_and(|b| b.last_offset() < offset)
        {
            let b = self.batches.pop_front().expect("front exists");
            // Kafka `deleteSegmentFiles`: a deleted segment's snapshot goes with it.
            self.producer_state
                .remove_and_mark_snapshot_for_deletion(b.base_offset());
            apply_to_producer_state(&mut self.producer_state_base, &b, AppendOrigin::Replication);
        }
        self.producer_state_base.update_map_end_offset(offset);
        self.producer_state_base
            .on_log_start_offset_incremented(offset);
        self.txn_index.retain_from(offset);
    }

    /// Time-based retention: moves the log start past every leading batch whose newest
    /// record is older than `retention_ms`, never past the HW (Kafka: `deleteRetentionMsBreachedSegments`,
    /// with a batch standing in for a segment). Returns the new log start if it moved.
    pub fn apply_retention_ms(&mut self, now_ms: i64, retention_ms: i64) -> Option<Offset> {
        let mut new_start = self.log_start_offset;
        for b in &self.batches {
            // Java long arithmetic (`UnifiedLog.deleteRetentionMsBreachedSegments`): a client
            // sets the timestamps, and `now - i64::MIN` wraps there rather than overflows.
            let age = now_ms.wrapping_sub(b.max_timestamp());
            if age > retention_ms && b.next_offset() <= self.high_watermark {
                new_start = b.next_offset();
            } else {
                break;
            }
        }
        match self.maybe_increment_log_start_offset(new_start) {
            Ok(true) => Some(new_start),
            _ => None,
        }
    }

    // ---------------------------------------------------------------- high watermark

    /// Sets the HW clamped to `[logStart, LEO]` (Kafka: `updateHighWatermark`). Used at
    /// init and by followers; it may decrease. Returns the value set.
    pub fn update_high_watermark(&mut self, hw: Offset) -> Offset {
        let new = hw.max(self.log_start_offset).min(self.log_end_offset);
        self.set_high_watermark(new);
        new
    }

    /// Follower: clamps and sets the HW, returning the new value iff it changed (Kafka:
    /// `maybeUpdateHighWatermark`).
    pub fn maybe_update_high_watermark(&mut self, hw: Offset) -> Option<Offset> {
        let new = hw.max(self.log_start_offset).min(self.log_end_offset);
        if new == self.high_watermark {
            return None;
        }
        self.set_high_watermark(new);
        Some(new)
    }

    /// Leader: raises the HW to `hw` if that is higher (Kafka: `maybeIncrementHighWatermark`).
    /// `hw` above the LEO is refused.
    pub fn maybe_increment_high_watermark(
        &mut self,
        hw: Offset,
    ) -> Result<Option<Offset>, OffsetError> {
        if hw > self.log_end_offset {
            return Err(OffsetError::OutOfRange {
                requested: hw,
                log_start: self.log_start_offset,
                log_end: self.log_end_offset,
            });
        }
        if hw <= self.high_watermark {
            return Ok(None);
        }
        self.set_high_watermark(hw);
        Ok(Some(hw))
    }

    fn set_high_watermark(&mut self, hw: Offset) {
        self.high_watermark = hw;
        self.producer_state.on_high_watermark_updated(hw);
        self.check_invariants();
    }

    // ---------------------------------------------------------------- producer expiry

    /// Removes producers idle for `producer.id.expiration.ms` with no open transaction
    /// (Kafka: `removeExpiredProducers`, run periodically by the log manager).
    pub fn remove_expired_producers(&mut self, now_ms: i64) {
        self.producer_state.remove_expired_producers(now_ms);
        self.producer_state_base.remove_expired_producers(now_ms);
    }

    // ---------------------------------------------------------------- reads

    /// Reads whole batches from `start_offset` up to the isolation bound (Kafka:
    /// `UnifiedLog.read`): LEO for followers, HW for read_uncommitted consumers, LSO for
    /// read_committed (which also gets the overlapping aborted transactions). At least one
    /// batch is returned if any is readable, even above `max_bytes`. A start in
    /// `(bound, LEO]` is an empty read; outside `[logStart, LEO]` is `OutOfRange`.
    pub fn read(
        &self,
        start_offset: Offset,
        max_bytes: usize,
        isolation: FetchIsolation,
    ) -> Result<FetchDataInfo, OffsetError> {
        if start_offset > self.log_end_offset || start_offset < self.log_start_offset {
            return Err(OffsetError::OutOfRange {
                requested: start_offset,
                log_start: self.log_start_offset,
                log_end: self.log_end_offset,
            });
        }
        let max_offset = match isolation {
            FetchIsolation::LogEnd => self.log_end_offset,
            FetchIsolation::HighWatermark => self.high_watermark,
            FetchIsolation::TxnCommitted => self.last_stable_offset(),
        };
        let mut batches = Vec::new();
        let mut bytes = 0usize;
        // Nothing below `max_offset` from `start_offset` on (a caught-up reader): every
        // batch from the one containing `start_offset` ends at or above the bound.
        let first = if start_offset >= max_offset {
            self.batches.len()
        } else {
            self.first_batch_at_or_after(start_offset)
        };
        for b in self.batches.range(first..) {
            // Kafka reads up to the position of the batch containing maxOffset.
            if b.last_offset() >= max_offset {
                break;
            }
            if !batches.is_empty() && bytes + b.size_in_bytes() > max_bytes {
                break;
            }
            bytes += b.size_in_bytes();
            batches.push(b.clone());
        }
        let aborted_transactions = (isolation == FetchIsolation::TxnCommitted).then(|| {
            let upper = batches
                .last()
                .map_or(start_offset, RecordBatch::next_offset);
            self.txn_index
                .collect_aborted_txns(start_offset, upper)
                .aborted_transactions
        });
        Ok(FetchDataInfo {
            batches,
            aborted_transactions,
            high_watermark: self.high_watermark,
            last_stable_offset: self.last_stable_offset(),
            log_start_offset: self.log_start_offset,
        })
    }

    // ---------------------------------------------------------------- invariants

    /// Panics when a local invariant is broken: offsets ordered (`logStart <= HW <= LEO`,
    /// `LSO <= HW`), batches contiguous-or-gapped in order and below the LEO, epoch cache
    /// monotonic, within `[logStart, LEO]` and agreeing with every batch's epoch.
    pub fn check_invariants(&self) {
        let (ls, hw, leo) = (
            self.log_start_offset,
            self.high_watermark,
            self.log_end_offset,
        );
        assert!(ls <= hw, "log_start_le_hw: log_start={ls} hw={hw}");
        assert!(hw <= leo, "hw_le_leo: hw={hw} leo={leo}");
        let lso = self.last_stable_offset();
        assert!(
            ls <= lso && lso <= hw,
            "lso_bounds: log_start={ls} lso={lso} hw={hw}"
        );
        // O(1): the order of the whole log is kept by construction (appends check the LEO);
        // the tail is what changes.
        let n = self.batches.len();
        if n >= 2 {
            let (a, b) = (&self.batches[n - 2], &self.batches[n - 1]);
            assert!(
                b.base_offset() > a.last_offset(),
                "batches_ordered: {} after {}",
                b.base_offset(),
                a.last_offset()
            );
        }
        if let Some(last) = self.batches.back() {
            assert!(
                last.next_offset() <= leo,
                "batches_below_leo: next={} leo={leo}",
                last.next_offset()
            );
        }
        if let Some(first) = self.batches.front() {
            assert!(
                first.last_offset() >= ls,
                "first_batch_readable: last={} ls={ls}",
                first.last_offset()
            );
        }
        self.epoch_cache.check_invariants();
        if let Some(first) = self.epoch_cache.earliest_entry() {
            assert!(
                first.start_offset >= ls,
                "epoch_cache_above_log_start: {first:?} ls={ls}"
            );
        }
        if let Some(last) = self.epoch_cache.latest_entry() {
            assert!(
                last.start_offset <= leo,
                "epoch_cache_below_leo: {last:?} leo={leo}"
            );
        }
    }

    /// Checks that every retained batch's epoch is what the cache says for its base offset
    /// (invariant EpochCacheWellFormed). Linear in the log: for checkers and tests.
    pub fn epoch_cache_matches_batches(
        &self,
    ) -> Result<(), (Offset, Option<LeaderEpoch>, LeaderEpoch)> {
        for b in &self.batches {
            if b.last_offset() < self.log_start_offset {
                continue;
            }
            let at = b.base_offset().max(self.log_start_offset);
            let cached = self.epoch_cache.epoch_for_offset(at);
            if cached != Some(b.partition_leader_epoch()) {
                return Err((b.base_offset(), cached, b.partition_leader_epoch()));
            }
        }
        Ok(())
    }
}

/// Applies one batch to producer state and completes any transaction it ends, returning the
/// aborted transaction to index (Kafka: `UnifiedLog.append` / `loadProducersFromRecords`).
fn apply_to_producer_state(
    psm: &mut ProducerStateManager,
    batch: &RecordBatch,
    origin: AppendOrigin,
) -> Vec<AbortedTxn> {
    let mut aborted = Vec::new();
    if let Some(completed) = psm.apply_batch(batch, origin) {
        let lso = psm.last_stable_offset(&completed);
        if completed.is_aborted {
            aborted.push(AbortedTxn {
                producer_id: completed.producer_id,
                first_offset: completed.first_offset,
                last_offset: completed.last_offset,
                last_stable_offset: lso,
            });
        }
        psm.complete_txn(&completed)
            .expect("apply_batch completes only a transaction the producer has open");
    }
    psm.update_map_end_offset(batch.next_offset());
    aborted
}
