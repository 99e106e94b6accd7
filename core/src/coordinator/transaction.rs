//! The transaction coordinator for ONE `__transaction_state` partition (Kafka:
//! `TransactionCoordinator`, `TransactionStateManager`, `TransactionMetadata`, the completion
//! half of `TransactionMarkerChannelManager`), transaction version 1 semantics (KIP-98 with
//! KIP-360 epoch bumps; no KIP-890 part 2 per-transaction bumps).
//!
//! # Pending transitions (Kafka's `pendingState` + "transition on write completion")
//!
//! A handler validates the request against the current metadata and, when the state must
//! change, computes the target metadata, records it as the transaction's *pending* transition
//! and returns [`TxnDecision::Append`] with one record. The current metadata is left unchanged
//! (except for an epoch fence, see below) until the runtime reports the write's outcome with
//! [`TxnCoordinator::on_write_complete`]: on success the target becomes current, on failure it
//! is dropped. While a transition is pending every other request for the same transactional id
//! gets `CONCURRENT_TRANSACTIONS`, so at most one write per transactional id is in flight.
//! [`TxnCoordinator::replay`] applies records directly and is used only to load the partition;
//! the runtime must NOT replay its own live writes into the same machine.
//!
//! After a `PREPARE_COMMIT`/`PREPARE_ABORT` commits, the `COMPLETE_*` transition is pending at
//! once (as in Kafka's `prepareComplete`), markers are sent, and the `COMPLETE_*` record is
//! appended when every partition acknowledged its marker.
//!
//! An epoch fence (InitProducerId on an `Ongoing` transaction, or a timeout) bumps the
//! in-memory epoch before the `PREPARE_ABORT` write, as Kafka's `endTransaction` does with
//! `PrepareEpochFence`; if that write fails, the next fence reuses the epoch
//! (`hasFailedEpochFence`).

use std::collections::{BTreeMap, BTreeSet};

use super::coordinator_append_error;
use super::records::{CoordinatorRecord, RecordError, TxnLogKey, TxnLogValue};
use crate::protocol::ErrorCode;
use crate::protocol::messages::TxnMarker;
use crate::types::{ProducerEpoch, ProducerId, TopicPartition};

/// A transaction's state (Kafka: `TransactionState`, with its ids).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TxnState {
    /// No transaction in progress (after InitProducerId).
    Empty,
    /// Partitions were added; data may be written.
    Ongoing,
    /// Commit decided; markers being written.
    PrepareCommit,
    /// Abort decided; markers being written.
    PrepareAbort,
    /// Commit markers written everywhere.
    CompleteCommit,
    /// Abort markers written everywhere.
    CompleteAbort,
    /// The transactional id expired and is being removed (written as a tombstone).
    Dead,
    /// Transient: the epoch is being bumped to fence a producer (never persisted).
    PrepareEpochFence,
}

impl TxnState {
    /// Kafka's state id.
    #[must_use]
    pub fn id(self) -> i8 {
        match self {
            TxnState::Empty => 0,
            TxnState::Ongoing => 1,
            TxnState::PrepareCommit => 2,
            TxnState::PrepareAbort => 3,
            TxnState::CompleteCommit => 4,
            TxnState::CompleteAbort => 5,
            TxnState::Dead => 6,
            TxnState::PrepareEpochFence => 7,
        }
    }

    /// Parses Kafka's state id.
    #[must_use]
    pub fn from_id(id: i8) -> Option<Self> {
        Some(match id {
            0 => TxnState::Empty,
            1 => TxnState::Ongoing,
            2 => TxnState::PrepareCommit,
            3 => TxnState::PrepareAbort,
            4 => TxnState::CompleteCommit,
            5 => TxnState::CompleteAbort,
            6 => TxnState::Dead,
            7 => TxnState::PrepareEpochFence,
            _ => return None,
        })
    }

    /// True for the states a `__transaction_state` value may hold.
    #[must_use]
    pub fn is_persisted(self) -> bool {
        !matches!(self, TxnState::Dead | TxnState::PrepareEpochFence)
    }

    fn is_complete_or_empty(self) -> bool {
        matches!(
            self,
            TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort
        )
    }
}

/// Coordinator settings (Kafka broker configs of the same names).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TxnCoordinatorConfig {
    /// `transaction.max.timeout.ms`: larger InitProducerId timeouts get
    /// `INVALID_TRANSACTION_TIMEOUT`.
    pub transaction_max_timeout_ms: i64,
    /// `transactional.id.expiration.ms`: idle transactional ids are removed after this.
    pub transactional_id_expiration_ms: i64,
}

impl TxnCoordinatorConfig {
    /// Kafka's `transaction.abort.timed.out.transaction.cleanup.interval.ms` default: how often
    /// the runtime should call [`TxnCoordinator::expire_timed_out`].
    pub const ABORT_TIMED_OUT_INTERVAL_MS: i64 = 10_000;
    /// Kafka's `transaction.remove.expired.transaction.cleanup.interval.ms` default: how often
    /// the runtime should call [`TxnCoordinator::expire_transactional_ids`].
    pub const REMOVE_EXPIRED_INTERVAL_MS: i64 = 3_600_000;
}

impl Default for TxnCoordinatorConfig {
    fn default() -> Self {
        Self {
            transaction_max_timeout_ms: 900_000,
            transactional_id_expiration_ms: 604_800_000,
        }
    }
}

/// One transactional id's metadata (Kafka: `TransactionMetadata`). The public fields are the
/// persisted ones; the pending transition and marker progress are in-memory only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransactionMetadata {
    /// The transactional id.
    pub transactional_id: String,
    /// Current producer id.
    pub producer_id: ProducerId,
    /// Previous producer id after a rotation, else `-1`.
    pub last_producer_id: ProducerId,
    /// Current producer epoch (`-1` right after creation, before the first write).
    pub producer_epoch: ProducerEpoch,
    /// Epoch a retried InitProducerId may still name (KIP-360), else `-1`.
    pub last_producer_epoch: ProducerEpoch,
    /// Transaction timeout.
    pub timeout_ms: i32,
    /// State.
    pub state: TxnState,
    /// Partitions of the current transaction.
    pub partitions: BTreeSet<TopicPartition>,
    /// Last state change.
    pub last_update_ms: i64,
    /// Start of the current transaction, `-1` when none.
    pub start_ms: i64,
    pending: Option<Pending>,
    has_failed_epoch_fence: bool,
    markers_pending: BTreeSet<TopicPartition>,
}

/// A transition waiting for its record to commit.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Pending {
    /// The metadata to adopt once the record commits (`Dead` = remove).
    target: TxnLogValue,
    purpose: Purpose,
}

/// Why a write was issued, hence what its completion answers and does next.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Purpose {
    InitProducerId,
    AddPartitions,
    /// `Ongoing -> Prepare*`.
    EndTxn {
        reply: EndReply,
        epoch_fence: bool,
    },
    /// `Prepare* -> Complete*`.
    Complete,
    /// Tombstone of an expired transactional id.
    Dead,
}

/// Who waits for a `Prepare*` write.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum EndReply {
    /// The client's EndTxn.
    EndTxn,
    /// An InitProducerId that fenced an ongoing transaction (answered CONCURRENT_TRANSACTIONS).
    InitFence,
    /// Nobody (timeout abort).
    Nobody,
}

impl TransactionMetadata {
    fn new_empty(
        transactional_id: &str,
        producer_id: ProducerId,
        timeout_ms: i32,
        now_ms: i64,
    ) -> Self {
        Self {
            transactional_id: transactional_id.to_owned(),
            producer_id,
            last_producer_id: ProducerId::NONE,
            producer_epoch: ProducerEpoch::NONE,
            last_producer_epoch: ProducerEpoch::NONE,
            timeout_ms,
            state: TxnState::Empty,
            partitions: BTreeSet::new(),
            last_update_ms: now_ms,
            start_ms: -1,
            pending: None,
            has_failed_epoch_fence: false,
            markers_pending: BTreeSet::new(),
        }
    }

    fn from_log_value(transactional_id: &str, v: TxnLogValue) -> Self {
        Self {
            transactional_id: transactional_id.to_owned(),
            producer_id: v.producer_id,
            last_producer_id: v.last_producer_id,
            producer_epoch: v.producer_epoch,
            last_producer_epoch: v.last_producer_epoch,
            timeout_ms: v.timeout_ms,
            state: v.state,
            partitions: v.partitions,
            last_update_ms: v.last_update_ms,
            start_ms: v.start_ms,
            pending: None,
            has_failed_epoch_fence: false,
            markers_pending: BTreeSet::new(),
        }
    }

    /// The persisted view of this metadata.
    #[must_use]
    pub fn to_log_value(&self) -> TxnLogValue {
        TxnLogValue {
            producer_id: self.producer_id,
            last_producer_id: self.last_producer_id,
            producer_epoch: self.producer_epoch,
            last_producer_epoch: self.last_producer_epoch,
            timeout_ms: self.timeout_ms,
            state: self.state,
            partitions: self.partitions.clone(),
            last_update_ms: self.last_update_ms,
            start_ms: self.start_ms,
        }
    }

    /// The state of the transition waiting for its write, if any (Kafka: `pendingState`).
    #[must_use]
    pub fn pending_state(&self) -> Option<TxnState> {
        self.pending.as_ref().map(|p| p.target.state)
    }

    /// Partitions whose marker has not been acknowledged yet (only while `Prepare*`).
    #[must_use]
    pub fn markers_pending(&self) -> &BTreeSet<TopicPartition> {
        &self.markers_pending
    }

    fn apply(&mut self, v: TxnLogValue) {
        self.producer_id = v.producer_id;
        self.last_producer_id = v.last_producer_id;
        self.producer_epoch = v.producer_epoch;
        self.last_producer_epoch = v.last_producer_epoch;
        self.timeout_ms = v.timeout_ms;
        self.state = v.state;
        self.partitions = v.partitions;
        self.last_update_ms = v.last_update_ms;
        self.start_ms = v.start_ms;
    }

    /// Kafka: `prepareComplete`.
    fn complete_target(&self, now_ms: i64) -> TxnLogValue {
        let state = match self.state {
            TxnState::PrepareCommit => TxnState::CompleteCommit,
            TxnState::PrepareAbort => TxnState::CompleteAbort,
            s => panic!("complete_target_from_prepare: {s:?}"),
        };
        TxnLogValue {
            state,
            partitions: BTreeSet::new(),
            last_update_ms: now_ms,
            ..self.to_log_value()
        }
    }

    fn marker(&self, coordinator_epoch: i32, partitions: Vec<TopicPartition>) -> TxnMarker {
        TxnMarker {
            producer_id: self.producer_id,
            producer_epoch: self.producer_epoch,
            commit: self.state == TxnState::PrepareCommit,
            coordinator_epoch,
            partitions,
        }
    }
}

/// The answer to a client request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TxnReply {
    /// InitProducerId: on error the id and epoch are `-1`.
    InitProducerId {
        /// Error.
        error: ErrorCode,
        /// Producer id.
        producer_id: ProducerId,
        /// Producer epoch.
        producer_epoch: ProducerEpoch,
    },
    /// AddPartitionsToTxn: the same error for every requested partition.
    AddPartitions(ErrorCode),
    /// EndTxn.
    EndTxn(ErrorCode),
}

impl TxnReply {
    fn init_error(error: ErrorCode) -> Self {
        TxnReply::InitProducerId {
            error,
            producer_id: ProducerId::NONE,
            producer_epoch: ProducerEpoch::NONE,
        }
    }
}

/// Records to append to the coordinator partition for one transactional id. Report the outcome
/// with [`TxnCoordinator::on_write_complete`] once the HW passed them (or the append failed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnAppend {
    /// Whose transition this write carries.
    pub transactional_id: String,
    /// The records (one, for transactions).
    pub records: Vec<CoordinatorRecord>,
    /// How long the write may wait for the HW: the transaction's own timeout
    /// (`appendTransactionToLog` passes `newMetadata.txnTimeoutMs`); `None` for a tombstone,
    /// which Kafka writes with `request.timeout.ms`.
    pub timeout_ms: Option<i64>,
}

/// What a client request handler decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TxnDecision {
    /// Answer the client now; nothing to write.
    Respond(TxnReply),
    /// Append, keep the client waiting; its answer comes from `on_write_complete`.
    Append(TxnAppend),
}

/// Follow-up work after a write or marker result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TxnAction {
    /// Answer the client request waiting on this transactional id's write.
    Respond(TxnReply),
    /// Append more records (no client waits for them).
    Append(TxnAppend),
    /// Send WriteTxnMarkers to the partitions' leaders; report per-partition results with
    /// [`TxnCoordinator::on_markers_written`].
    SendMarkers {
        /// The transactional id the markers complete.
        transactional_id: String,
        /// The marker.
        marker: TxnMarker,
    },
}

/// The transaction coordinator for one `__transaction_state` partition.
#[derive(Clone, Debug)]
pub struct TxnCoordinator {
    coordinator_epoch: i32,
    config: TxnCoordinatorConfig,
    txns: BTreeMap<String, TransactionMetadata>,
}

fn is_epoch_exhausted(epoch: ProducerEpoch) -> bool {
    // Kafka: TransactionMetadata.isEpochExhausted (>= Short.MaxValue - 1)
    epoch.0 >= i16::MAX - 1
}

fn txn_record(transactional_id: &str, value: Option<&TxnLogValue>) -> TxnAppend {
    let key = TxnLogKey {
        transactional_id: transactional_id.to_owned(),
    };
    TxnAppend {
        transactional_id: transactional_id.to_owned(),
        records: vec![CoordinatorRecord {
            key: key.encode(),
            value: value.map(TxnLogValue::encode),
        }],
        timeout_ms: value.map(|v| i64::from(v.timeout_ms)),
    }
}

impl TxnCoordinator {
    /// A coordinator with default configs. `coordinator_epoch` = the internal partition's
    /// leader epoch (stamped on markers to fence zombie coordinators).
    #[must_use]
    pub fn new(coordinator_epoch: i32) -> Self {
        Self::with_config(coordinator_epoch, TxnCoordinatorConfig::default())
    }

    /// A coordinator with explicit configs.
    #[must_use]
    pub fn with_config(coordinator_epoch: i32, config: TxnCoordinatorConfig) -> Self {
        assert!(
            config.transaction_max_timeout_ms > 0
                && config.transaction_max_timeout_ms <= i64::from(i32::MAX),
            "txn_max_timeout_in_i32_range"
        );
        Self {
            coordinator_epoch,
            config,
            txns: BTreeMap::new(),
        }
    }

    /// The coordinator epoch.
    #[must_use]
    pub fn coordinator_epoch(&self) -> i32 {
        self.coordinator_epoch
    }

    /// A transactional id's metadata.
    #[must_use]
    pub fn state(&self, transactional_id: &str) -> Option<&TransactionMetadata> {
        self.txns.get(transactional_id)
    }

    /// Every transactional id's metadata, by id.
    pub fn transactions(&self) -> impl Iterator<Item = &TransactionMetadata> {
        self.txns.values()
    }

    // -------------------------------------------------------------------------- loading

    /// Applies one record of the partition while loading (Kafka:
    /// `TransactionStateManager.loadTransactionsForTxnTopicPartition`): a value replaces the
    /// transactional id's metadata, a tombstone removes it.
    pub fn replay(&mut self, key: &[u8], value: Option<&[u8]>) -> Result<(), RecordError> {
        let key = TxnLogKey::decode(key)?;
        match value {
            None => {
                self.txns.remove(&key.transactional_id);
            }
            Some(v) => {
                let v = TxnLogValue::decode(v)?;
                let meta = TransactionMetadata::from_log_value(&key.transactional_id, v);
                self.txns.insert(key.transactional_id, meta);
            }
        }
        Ok(())
    }

    /// Ends loading: every transaction left in `Prepare*` resumes its markers (Kafka: load
    /// hands `prepareComplete` transitions to `TransactionMarkerChannelManager.addTxnMarkersToSend`).
    pub fn complete_load(&mut self, now_ms: i64) -> Vec<TxnAction> {
        let epoch = self.coordinator_epoch;
        let mut actions = Vec::new();
        for meta in self.txns.values_mut() {
            if matches!(meta.state, TxnState::PrepareCommit | TxnState::PrepareAbort)
                && meta.pending.is_none()
            {
                actions.push(Self::start_completion(meta, epoch, now_ms));
            }
        }
        actions
    }

    // -------------------------------------------------------------------------- handlers

    /// InitProducerId (Kafka: `TransactionCoordinator.handleInitProducerId`).
    ///
    /// `transactional_id = None` is an idempotent producer: a fresh id with epoch 0 and no
    /// state. `expected` is KIP-360's `(producerId, producerEpoch)`, `None` when the request
    /// carried `-1/-1`. `alloc` draws from the broker's producer-id block; `None` (block not
    /// ready) answers `COORDINATOR_LOAD_IN_PROGRESS` (Kafka's `generateProducerId` failure).
    pub fn handle_init_producer_id(
        &mut self,
        now_ms: i64,
        transactional_id: Option<&str>,
        timeout_ms: i64,
        expected: Option<(ProducerId, ProducerEpoch)>,
        alloc: &mut dyn FnMut() -> Option<ProducerId>,
    ) -> TxnDecision {
        let Some(tid) = transactional_id else {
            return TxnDecision::Respond(match alloc() {
                Some(producer_id) => TxnReply::InitProducerId {
                    error: ErrorCode::None,
                    producer_id,
                    producer_epoch: ProducerEpoch(0),
                },
                None => TxnReply::init_error(ErrorCode::CoordinatorLoadInProgress),
            });
        };
        if tid.is_empty() {
            return TxnDecision::Respond(TxnReply::init_error(ErrorCode::InvalidRequest));
        }
        if timeout_ms <= 0 || timeout_ms > self.config.transaction_max_timeout_ms {
            return TxnDecision::Respond(TxnReply::init_error(
                ErrorCode::InvalidTransactionTimeout,
            ));
        }
        let timeout_ms = i32::try_from(timeout_ms).expect("validated_timeout_fits_i32");
        if !self.txns.contains_key(tid) {
            // Kafka inserts the new metadata (epoch -1) before the write; a failed write leaves
            // it there and the retry bumps it to epoch 0 with the same producer id.
            let Some(pid) = alloc() else {
                return TxnDecision::Respond(TxnReply::init_error(
                    ErrorCode::CoordinatorLoadInProgress,
                ));
            };
            let meta = TransactionMetadata::new_empty(tid, pid, timeout_ms, now_ms);
            self.txns.insert(tid.to_owned(), meta);
        }
        let meta = self.txns.get_mut(tid).expect("txn_present");
        if meta.pending.is_some() {
            return TxnDecision::Respond(TxnReply::init_error(ErrorCode::ConcurrentTransactions));
        }
        if let Some(exp) = expected
            && !Self::is_valid_producer_id(meta, exp)
        {
            return TxnDecision::Respond(TxnReply::init_error(ErrorCode::ProducerFenced));
        }
        match meta.state {
            TxnState::PrepareCommit | TxnState::PrepareAbort => {
                TxnDecision::Respond(TxnReply::init_error(ErrorCode::ConcurrentTransactions))
            }
            TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort => {
                let base = TxnLogValue {
                    state: TxnState::Empty,
                    partitions: BTreeSet::new(),
                    timeout_ms,
                    start_ms: -1,
                    last_update_ms: now_ms,
                    ..meta.to_log_value()
                };
                let target = if is_epoch_exhausted(meta.producer_epoch)
                    && expected.is_none_or(|(_, e)| e == meta.producer_epoch)
                {
                    // Kafka: prepareProducerIdRotation
                    let Some(new_pid) = alloc() else {
                        return TxnDecision::Respond(TxnReply::init_error(
                            ErrorCode::CoordinatorLoadInProgress,
                        ));
                    };
                    TxnLogValue {
                        producer_id: new_pid,
                        last_producer_id: meta.producer_id,
                        producer_epoch: ProducerEpoch(0),
                        last_producer_epoch: if expected.is_some() {
                            meta.producer_epoch
                        } else {
                            ProducerEpoch::NONE
                        },
                        ..base
                    }
                } else {
                    match Self::increment_epoch(meta, expected.map(|(_, e)| e)) {
                        Ok((producer_epoch, last_producer_epoch)) => TxnLogValue {
                            producer_epoch,
                            last_producer_epoch,
                            ..base
                        },
                        Err(e) => return TxnDecision::Respond(TxnReply::init_error(e)),
                    }
                };
                let append = txn_record(tid, Some(&target));
                meta.pending = Some(Pending {
                    target,
                    purpose: Purpose::InitProducerId,
                });
                TxnDecision::Append(append)
            }
            TxnState::Ongoing => {
                // Kafka: prepareFenceProducerEpoch + endTransaction(ABORT, isFromClient=false);
                // the client gets CONCURRENT_TRANSACTIONS and retries, bumping again.
                TxnDecision::Append(Self::fence_and_abort(meta, now_ms, EndReply::InitFence))
            }
            TxnState::Dead | TxnState::PrepareEpochFence => {
                panic!("txn_state_never_current: {:?}", meta.state)
            }
        }
    }

    /// AddPartitionsToTxn (Kafka: `handleAddPartitionsToTransaction`).
    pub fn handle_add_partitions(
        &mut self,
        now_ms: i64,
        transactional_id: &str,
        producer_id: ProducerId,
        producer_epoch: ProducerEpoch,
        partitions: &[TopicPartition],
    ) -> TxnDecision {
        let reply = |e| TxnDecision::Respond(TxnReply::AddPartitions(e));
        if transactional_id.is_empty() {
            return reply(ErrorCode::InvalidRequest);
        }
        let Some(meta) = self.txns.get_mut(transactional_id) else {
            return reply(ErrorCode::InvalidProducerIdMapping);
        };
        if meta.producer_id != producer_id {
            return reply(ErrorCode::InvalidProducerIdMapping);
        }
        if meta.producer_epoch != producer_epoch {
            return reply(ErrorCode::ProducerFenced);
        }
        if meta.pending.is_some()
            || matches!(meta.state, TxnState::PrepareCommit | TxnState::PrepareAbort)
        {
            return reply(ErrorCode::ConcurrentTransactions);
        }
        if meta.state == TxnState::Ongoing
            && partitions.iter().all(|tp| meta.partitions.contains(tp))
        {
            return reply(ErrorCode::None);
        }
        assert!(
            meta.state.is_complete_or_empty() || meta.state == TxnState::Ongoing,
            "add_partitions_from_valid_state"
        );
        // Kafka: prepareAddPartitions
        let mut all = meta.partitions.clone();
        all.extend(partitions.iter().cloned());
        let target = TxnLogValue {
            state: TxnState::Ongoing,
            partitions: all,
            start_ms: if meta.state == TxnState::Ongoing {
                meta.start_ms
            } else {
                now_ms
            },
            last_update_ms: now_ms,
            ..meta.to_log_value()
        };
        let append = txn_record(transactional_id, Some(&target));
        meta.pending = Some(Pending {
            target,
            purpose: Purpose::AddPartitions,
        });
        TxnDecision::Append(append)
    }

    /// EndTxn (Kafka: `handleEndTransaction` -> `endTransaction(isFromClient = true)`).
    /// The client is answered once the `PREPARE_*` record commits, before the markers.
    pub fn handle_end_txn(
        &mut self,
        now_ms: i64,
        transactional_id: &str,
        producer_id: ProducerId,
        producer_epoch: ProducerEpoch,
        commit: bool,
    ) -> TxnDecision {
        let reply = |e| TxnDecision::Respond(TxnReply::EndTxn(e));
        if transactional_id.is_empty() {
            return reply(ErrorCode::InvalidRequest);
        }
        let Some(meta) = self.txns.get_mut(transactional_id) else {
            return reply(ErrorCode::InvalidProducerIdMapping);
        };
        if meta.producer_id != producer_id {
            return reply(ErrorCode::InvalidProducerIdMapping);
        }
        // Strict equality for client requests (they never bump the epoch).
        if meta.producer_epoch != producer_epoch {
            return reply(ErrorCode::ProducerFenced);
        }
        if meta.pending.is_some() {
            return reply(ErrorCode::ConcurrentTransactions);
        }
        match (meta.state, commit) {
            (TxnState::Ongoing, _) => {
                let target = TxnLogValue {
                    state: if commit {
                        TxnState::PrepareCommit
                    } else {
                        TxnState::PrepareAbort
                    },
                    last_update_ms: now_ms,
                    ..meta.to_log_value()
                };
                let append = txn_record(transactional_id, Some(&target));
                meta.pending = Some(Pending {
                    target,
                    purpose: Purpose::EndTxn {
                        reply: EndReply::EndTxn,
                        epoch_fence: false,
                    },
                });
                TxnDecision::Append(append)
            }
            // A retry of the completed decision succeeds; the opposite decision is invalid.
            (TxnState::CompleteCommit, true) | (TxnState::CompleteAbort, false) => {
                reply(ErrorCode::None)
            }
            (TxnState::PrepareCommit, true) | (TxnState::PrepareAbort, false) => {
                reply(ErrorCode::ConcurrentTransactions)
            }
            (
                TxnState::Empty
                | TxnState::CompleteCommit
                | TxnState::CompleteAbort
                | TxnState::PrepareCommit
                | TxnState::PrepareAbort,
                _,
            ) => reply(ErrorCode::InvalidTxnState),
            (TxnState::Dead | TxnState::PrepareEpochFence, _) => {
                panic!("txn_state_never_current: {:?}", meta.state)
            }
        }
    }

    // -------------------------------------------------------------------------- completions

    /// The runtime reports the outcome of a [`TxnAppend`] of `transactional_id`:
    /// `append_error = ErrorCode::None` once the HW passed the records, else the append or
    /// replication error (mapped with [`coordinator_append_error`]). Must be called exactly
    /// once per append, and only for appends of this machine.
    pub fn on_write_complete(
        &mut self,
        now_ms: i64,
        transactional_id: &str,
        append_error: ErrorCode,
    ) -> Vec<TxnAction> {
        let epoch = self.coordinator_epoch;
        let meta = self
            .txns
            .get_mut(transactional_id)
            .expect("write_complete_for_known_txn");
        let pending = meta.pending.take().expect("write_complete_has_pending");
        let error = coordinator_append_error(append_error);
        let mut actions = Vec::new();
        if error == ErrorCode::None {
            match pending.purpose {
                Purpose::Dead => {
                    self.txns.remove(transactional_id);
                    return actions;
                }
                Purpose::InitProducerId => {
                    meta.apply(pending.target);
                    actions.push(TxnAction::Respond(TxnReply::InitProducerId {
                        error: ErrorCode::None,
                        producer_id: meta.producer_id,
                        producer_epoch: meta.producer_epoch,
                    }));
                }
                Purpose::AddPartitions => {
                    meta.apply(pending.target);
                    actions.push(TxnAction::Respond(TxnReply::AddPartitions(ErrorCode::None)));
                }
                Purpose::EndTxn { reply, .. } => {
                    meta.apply(pending.target);
                    match reply {
                        EndReply::EndTxn => {
                            actions.push(TxnAction::Respond(TxnReply::EndTxn(ErrorCode::None)));
                        }
                        EndReply::InitFence => actions.push(TxnAction::Respond(
                            TxnReply::init_error(ErrorCode::ConcurrentTransactions),
                        )),
                        EndReply::Nobody => {}
                    }
                    actions.push(Self::start_completion(meta, epoch, now_ms));
                }
                Purpose::Complete => {
                    meta.apply(pending.target);
                    meta.markers_pending.clear();
                }
            }
        } else {
            match pending.purpose {
                Purpose::Dead => {}
                Purpose::InitProducerId => {
                    actions.push(TxnAction::Respond(TxnReply::init_error(error)));
                }
                Purpose::AddPartitions => {
                    actions.push(TxnAction::Respond(TxnReply::AddPartitions(error)));
                }
                Purpose::EndTxn { reply, epoch_fence } => {
                    if epoch_fence {
                        meta.has_failed_epoch_fence = true;
                    }
                    match reply {
                        EndReply::EndTxn => {
                            actions.push(TxnAction::Respond(TxnReply::EndTxn(error)))
                        }
                        EndReply::InitFence => {
                            actions.push(TxnAction::Respond(TxnReply::init_error(error)));
                        }
                        EndReply::Nobody => {}
                    }
                }
                Purpose::Complete => {
                    // Kafka: TransactionMarkerChannelManager retries the completion append on
                    // COORDINATOR_NOT_AVAILABLE and gives up otherwise (the partition is moving;
                    // the next coordinator resumes from Prepare*).
                    if error == ErrorCode::CoordinatorNotAvailable {
                        let append = txn_record(transactional_id, Some(&pending.target));
                        meta.pending = Some(pending);
                        actions.push(TxnAction::Append(append));
                    } else {
                        meta.markers_pending.clear();
                    }
                }
            }
        }
        self.check_invariants();
        actions
    }

    /// The runtime reports WriteTxnMarkers results for partitions of `transactional_id`'s
    /// current markers (any subset, any number of calls). A partition whose topic no longer
    /// exists must be reported as `ErrorCode::None` (Kafka drops it).
    ///
    /// Kafka (`TransactionMarkerRequestCompletionHandler`): `NONE` completes the partition;
    /// `INVALID_PRODUCER_EPOCH` / `TRANSACTION_COORDINATOR_FENCED` mean this coordinator is
    /// stale and stop the sending; any other error retries the partition. KIP-1279 model
    /// decision: `READ_ONLY_TOPIC` (a mirror partition not STOPPED) drops the partition. When every
    /// partition completed, the `COMPLETE_*` record is appended.
    pub fn on_markers_written(
        &mut self,
        transactional_id: &str,
        results: &[(TopicPartition, ErrorCode)],
    ) -> Vec<TxnAction> {
        let epoch = self.coordinator_epoch;
        let Some(meta) = self.txns.get_mut(transactional_id) else {
            return Vec::new();
        };
        let completing = matches!(
            meta.pending,
            Some(Pending {
                purpose: Purpose::Complete,
                ..
            })
        );
        if !completing || meta.markers_pending.is_empty() {
            return Vec::new(); // stale results
        }
        let mut retry = Vec::new();
        for (tp, error) in results {
            if !meta.markers_pending.contains(tp) {
                continue;
            }
            match error {
                // READ_ONLY_TOPIC: the partition became a mirror destination (KIP-1279
                // failback); its log now follows the source cluster's history, so this
                // cluster's marker has no place there. Dropped like Kafka drops the partition
                // of a deleted topic (or an UNSUPPORTED_FOR_MESSAGE_FORMAT one): not retried.
                ErrorCode::None | ErrorCode::ReadOnlyTopic => {
                    meta.markers_pending.remove(tp);
                }
                ErrorCode::InvalidProducerEpoch | ErrorCode::TransactionCoordinatorFenced => {
                    meta.markers_pending.clear();
                    return Vec::new();
                }
                _ => retry.push(tp.clone()),
            }
        }
        if meta.markers_pending.is_empty() {
            let target = &meta.pending.as_ref().expect("completing").target;
            return vec![TxnAction::Append(txn_record(
                transactional_id,
                Some(target),
            ))];
        }
        if retry.is_empty() {
            return Vec::new();
        }
        vec![TxnAction::SendMarkers {
            transactional_id: transactional_id.to_owned(),
            marker: meta.marker(epoch, retry),
        }]
    }

    // -------------------------------------------------------------------------- timers

    /// Aborts every `Ongoing` transaction past its timeout with an epoch bump that fences the
    /// producer (Kafka: `abortTimedOutTransactions`: `txnStartTimestamp + txnTimeoutMs < now`,
    /// skipping transactions with a pending transition). Nobody waits for these writes.
    pub fn expire_timed_out(&mut self, now_ms: i64) -> Vec<TxnAppend> {
        let mut out = Vec::new();
        for meta in self.txns.values_mut() {
            if meta.state == TxnState::Ongoing
                && meta.pending.is_none()
                && meta.start_ms.saturating_add(i64::from(meta.timeout_ms)) < now_ms
            {
                out.push(Self::fence_and_abort(meta, now_ms, EndReply::Nobody));
            }
        }
        out
    }

    /// Removes transactional ids idle for `transactional.id.expiration.ms` (Kafka:
    /// `removeExpiredTransactionalIds`: `Empty`/`Complete*`, no pending transition,
    /// `txnLastUpdateTimestamp <= now - expiration`) by writing tombstones. Nobody waits.
    pub fn expire_transactional_ids(&mut self, now_ms: i64) -> Vec<TxnAppend> {
        let expiration = self.config.transactional_id_expiration_ms;
        let mut out = Vec::new();
        for (tid, meta) in &mut self.txns {
            if meta.state.is_complete_or_empty()
                && meta.pending.is_none()
                && meta.last_update_ms <= now_ms.saturating_sub(expiration)
            {
                let target = TxnLogValue {
                    state: TxnState::Dead,
                    last_update_ms: now_ms,
                    ..meta.to_log_value()
                };
                meta.pending = Some(Pending {
                    target,
                    purpose: Purpose::Dead,
                });
                out.push(txn_record(tid, None));
            }
        }
        out
    }

    // -------------------------------------------------------------------------- helpers

    /// Kafka: `prepareInitProducerIdTransit.isValidProducerId`.
    fn is_valid_producer_id(
        meta: &TransactionMetadata,
        (pid, epoch): (ProducerId, ProducerEpoch),
    ) -> bool {
        meta.producer_epoch == ProducerEpoch::NONE
            || pid == meta.producer_id
            || (pid == meta.last_producer_id && is_epoch_exhausted(epoch))
    }

    /// Kafka: `prepareIncrementProducerEpoch`; returns `(epoch, last epoch)`.
    fn increment_epoch(
        meta: &TransactionMetadata,
        expected: Option<ProducerEpoch>,
    ) -> Result<(ProducerEpoch, ProducerEpoch), ErrorCode> {
        let bumped = || {
            if is_epoch_exhausted(meta.producer_epoch) {
                // Kafka throws IllegalStateException here, which the client sees as
                // UNKNOWN_SERVER_ERROR.
                Err(ErrorCode::UnknownServerError)
            } else {
                Ok(ProducerEpoch(meta.producer_epoch.0 + 1))
            }
        };
        match expected {
            None => Ok((bumped()?, ProducerEpoch::NONE)),
            Some(e) if meta.producer_epoch == ProducerEpoch::NONE || e == meta.producer_epoch => {
                Ok((bumped()?, meta.producer_epoch))
            }
            // A retry of a bump whose answer was lost: return the current epoch unchanged.
            Some(e) if e == meta.last_producer_epoch => {
                Ok((meta.producer_epoch, meta.last_producer_epoch))
            }
            Some(_) => Err(ErrorCode::ProducerFenced),
        }
    }

    /// Kafka: `prepareFenceProducerEpoch` then `endTransaction(ABORT, isFromClient = false)`:
    /// the in-memory epoch is bumped now (unless a previous fence write failed) and the
    /// `PREPARE_ABORT` is written with it.
    fn fence_and_abort(meta: &mut TransactionMetadata, now_ms: i64, reply: EndReply) -> TxnAppend {
        assert!(
            meta.state == TxnState::Ongoing && meta.pending.is_none(),
            "fence_from_ongoing_without_pending"
        );
        // Kafka throws on Short.MaxValue; TV1 never reaches Ongoing at MAX (InitProducerId
        // rotates the id at MAX - 1), so saturate instead of panicking on replayed data.
        if !meta.has_failed_epoch_fence && meta.producer_epoch.0 < i16::MAX {
            meta.producer_epoch = ProducerEpoch(meta.producer_epoch.0 + 1);
        }
        meta.last_producer_epoch = ProducerEpoch::NONE;
        let target = TxnLogValue {
            state: TxnState::PrepareAbort,
            last_update_ms: now_ms,
            ..meta.to_log_value()
        };
        let append = txn_record(&meta.transactional_id, Some(&target));
        meta.pending = Some(Pending {
            target,
            purpose: Purpose::EndTxn {
                reply,
                epoch_fence: true,
            },
        });
        append
    }

    /// `Prepare*` is current: the `COMPLETE_*` transition becomes pending and markers go out
    /// (or, with no partitions, the completion is appended at once).
    fn start_completion(meta: &mut TransactionMetadata, epoch: i32, now_ms: i64) -> TxnAction {
        let target = meta.complete_target(now_ms);
        meta.has_failed_epoch_fence = false;
        meta.markers_pending = meta.partitions.clone();
        let action = if meta.markers_pending.is_empty() {
            TxnAction::Append(txn_record(&meta.transactional_id, Some(&target)))
        } else {
            TxnAction::SendMarkers {
                transactional_id: meta.transactional_id.clone(),
                marker: meta.marker(epoch, meta.partitions.iter().cloned().collect()),
            }
        };
        meta.pending = Some(Pending {
            target,
            purpose: Purpose::Complete,
        });
        action
    }

    /// Local invariants (run after every completion; cheap).
    pub fn check_invariants(&self) {
        for (tid, meta) in &self.txns {
            assert_eq!(tid, &meta.transactional_id, "txn_key_matches_id");
            assert!(meta.state.is_persisted(), "txn_current_state_persisted");
            if meta.state.is_complete_or_empty() {
                assert!(meta.partitions.is_empty(), "txn_no_partitions_when_idle");
            }
            assert!(
                meta.markers_pending.is_subset(&meta.partitions),
                "txn_markers_pending_subset"
            );
            if !meta.markers_pending.is_empty() {
                assert_eq!(
                    meta.pending_state().map(TxnState::is_complete_or_empty),
                    Some(true),
                    "txn_markers_only_while_completing"
                );
            }
        }
    }
}

#[cfg(test)]
#[path = "transaction_test.rs"]
mod tests;
