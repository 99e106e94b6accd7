//! The producer (Kafka: `KafkaProducer` = `RecordAccumulator` + `Sender` +
//! `TransactionManager`), as a sans-I/O node.
//!
//! Records are generated at `records_per_second` with unique values `c{client}-{n}`, sticky
//! to one partition until a batch of `batch_records` closes (Kafka's sticky partitioner, with
//! `linger.ms` modelled as the batch size), then moved to a partition drawn from the seeded
//! PRNG. One `Produce` request carries one batch.
//!
//! Behaviour choices (Kafka ≥ 3.x semantics unless noted):
//! - **max.in.flight.requests.per.connection** 1..=5 batches per partition (Kafka allows up to
//!   5 with idempotence): batches are sent in sequence order and pipelined; each is
//!   acknowledged as its answer arrives (Kafka completes each batch's future on its own
//!   response). After a retriable failure the partition drains (no new send until nothing is
//!   in flight), then resends every unacknowledged batch in sequence order with its *same*
//!   sequence (go-back-N, as Kafka re-enqueues retries in sequence order), so the broker's
//!   duplicate detection over its last five batches is exercised across leader changes. An
//!   OUT_OF_ORDER_SEQUENCE_NUMBER for a batch behind an earlier unresolved one is that earlier
//!   batch's gap and is retried (Kafka `TransactionManager.canRetry`); for the first
//!   unresolved batch it means the broker lost the producer's state (KIP-360 below).
//! - Retriable errors (`RetriableException` codes and request timeouts) retry after
//!   `retry.backoff.ms`, refreshing metadata for leadership errors, until
//!   `delivery.timeout.ms` (from batch creation) passes: then `ProduceFailed`.
//! - Idempotent producer (TransactionManager.canRetry, KIP-360): UNKNOWN_PRODUCER_ID and
//!   OUT_OF_ORDER_SEQUENCE_NUMBER bump the epoch (InitProducerId with the current id and
//!   epoch, once no produce is in flight), restart every partition's sequences at 0 and retry
//!   the batch. A batch that expires after having been sent leaves its sequence unresolved:
//!   the epoch is bumped too. Other non-retriable errors (INVALID_PRODUCER_EPOCH, ...) fail the
//!   batch (`ProduceFailed`) and give its sequence range back.
//! - Transactional producer: FindCoordinator(TRANSACTION) → InitProducerId(transactional id)
//!   → per transaction AddPartitionsToTxn before the first batch of a partition, produce,
//!   EndTxn. A planned abort (PRNG draw against `abort_probability` at the start of the
//!   transaction) still waits until every batch is acknowledged, so aborted data reaches the
//!   log. Non-retriable produce errors and expiries are *abortable* (KIP-588): queued batches
//!   fail, in-flight ones finish, EndTxn(abort), then the epoch is bumped (KIP-360
//!   InitProducerId with id and epoch). PRODUCER_FENCED, TRANSACTION_COORDINATOR_FENCED,
//!   INVALID_PRODUCER_EPOCH on EndTxn/AddPartitions, INVALID_TXN_STATE and
//!   INVALID_PRODUCER_ID_MAPPING are fatal: every pending batch fails, the open transaction
//!   ends with the error, the producer stops ([`Producer::fatal_error`]).
//! - `ProduceAcked` is emitted only for NONE answers, with the broker's base offset; acks=0
//!   writes get no answer and therefore no event.
//! - Idempotence and transactions require acks=all (Kafka rejects the config otherwise).

use std::collections::{BTreeSet, VecDeque};

use bytes::Bytes;
use mirror_core::broker::{Event, Message, Node, Output};
use mirror_core::protocol::messages::{CoordinatorKind, ProducePartitionResponse};
use mirror_core::protocol::{ClusterIdx, CorrelationId, ErrorCode, NodeId, Request, Response};
use mirror_core::record::{BatchBuilder, SimpleRecord};
use mirror_core::time::Instant;
use mirror_core::types::{BrokerId, ProducerEpoch, ProducerId, Sequence, TopicPartition};

use super::common::{Rng, Wire, invalidates_metadata, is_retriable, needs_new_coordinator};
use super::metadata::MetadataCache;

/// Transaction shape.
#[derive(Clone, Debug, PartialEq)]
pub struct TxnConfig {
    /// Records per transaction.
    pub records_per_txn: usize,
    /// Probability that a transaction is aborted instead of committed.
    pub abort_probability: f64,
}

/// Producer settings (Kafka's names where they exist).
#[derive(Clone, Debug, PartialEq)]
pub struct ProducerConfig {
    /// Client number (the node is `NodeId::client(cluster, client)`).
    pub client: u32,
    /// Cluster.
    pub cluster: ClusterIdx,
    /// Bootstrap brokers.
    pub brokers: Vec<BrokerId>,
    /// Topic.
    pub topic: String,
    /// Partitions written to.
    pub partitions: Vec<i32>,
    /// `acks`: 0, 1 or -1.
    pub acks: i16,
    /// `enable.idempotence`.
    pub idempotent: bool,
    /// `transactional.id` (implies idempotence).
    pub transactional_id: Option<String>,
    /// Record generation rate.
    pub records_per_second: f64,
    /// Records per batch (`linger.ms` modelled as a batch size).
    pub batch_records: usize,
    /// Stop after this many records (`None` = never).
    pub max_records: Option<u64>,
    /// Transaction shape (transactional producers only).
    pub txn: TxnConfig,
    /// PRNG seed.
    pub seed: u64,
    /// `request.timeout.ms` (also the produce request's `timeout_ms`).
    pub request_timeout_ms: i64,
    /// `retry.backoff.ms`.
    pub retry_backoff_ms: i64,
    /// `delivery.timeout.ms`.
    pub delivery_timeout_ms: i64,
    /// `metadata.max.age.ms`.
    pub metadata_max_age_ms: i64,
    /// `transaction.timeout.ms`.
    pub transaction_timeout_ms: i64,
    /// `buffer.memory` in records: generation pauses while this many are unacknowledged.
    pub max_buffered_records: usize,
    /// `max.in.flight.requests.per.connection`: batches in flight per partition (1..=5).
    pub max_in_flight: usize,
    /// Planted bug (checker teeth for `liveness:client_busy`): a metadata refresh asked for
    /// while sending waits for the next step, as before the fix of fresh seed 717000823.
    pub ablation_defers_metadata_refresh: bool,
}

impl ProducerConfig {
    /// Kafka's defaults (acks=all, idempotent, 100 records/s, batches of 10).
    #[must_use]
    pub fn new(
        client: u32,
        cluster: ClusterIdx,
        brokers: Vec<BrokerId>,
        topic: &str,
        partitions: Vec<i32>,
    ) -> Self {
        Self {
            client,
            cluster,
            brokers,
            topic: topic.to_string(),
            partitions,
            acks: -1,
            idempotent: true,
            transactional_id: None,
            records_per_second: 100.0,
            batch_records: 10,
            max_records: None,
            txn: TxnConfig {
                records_per_txn: 10,
                abort_probability: 0.0,
            },
            seed: 0,
            request_timeout_ms: 30_000,
            retry_backoff_ms: 100,
            delivery_timeout_ms: 120_000,
            metadata_max_age_ms: 300_000,
            transaction_timeout_ms: 60_000,
            max_buffered_records: 10_000,
            max_in_flight: 1,
            ablation_defers_metadata_refresh: false,
        }
    }
}

/// What an in-flight request was.
#[derive(Clone, Debug)]
enum Tag {
    Metadata,
    FindCoordinator,
    InitProducerId,
    AddPartitions(Vec<i32>),
    EndTxn,
    /// A produce of batch `id` to partition `p`, send attempt `attempt` (a response to an
    /// attempt the partition gave up on is ignored).
    Produce(i32, u64, u64),
}

/// One batch in the accumulator.
#[derive(Clone, Debug)]
struct Batch {
    /// Unique within the producer: names the batch in its request's tag.
    id: u64,
    values: Vec<Bytes>,
    created: Instant,
    timestamp_ms: i64,
    /// `(producer id, epoch, base sequence)` the batch was stamped with.
    stamp: Option<(ProducerId, ProducerEpoch, Sequence)>,
    /// Sent at least once (its outcome may be unknown).
    sent: bool,
    last_error: ErrorCode,
    retry_at: Instant,
    /// A request carrying it is outstanding (or answered out of order and stashed).
    in_flight: bool,
    /// The outstanding request's attempt number.
    attempt: u64,
    /// An answer that arrived while an earlier batch of the partition was still unanswered:
    /// held back and handled in sequence order, as responses on one Kafka connection arrive
    /// in request order (TCP).
    stashed: Option<Option<Response>>,
    /// An attempt ended with no answer (a timeout, a dropped connection): the broker may have
    /// written it. Kafka never resends such a batch under a new producer epoch (an
    /// "unresolved sequence", KIP-360): it fails it instead, so no duplicate is created.
    maybe_written: bool,
}

impl Batch {
    /// A batch closed at `created`, never sent.
    fn new(id: u64, values: Vec<Bytes>, created: Instant) -> Self {
        Self {
            id,
            values,
            created,
            timestamp_ms: created.as_millis(),
            stamp: None,
            sent: false,
            last_error: ErrorCode::None,
            retry_at: Instant::ZERO,
            in_flight: false,
            attempt: 0,
            stashed: None,
            maybe_written: false,
        }
    }
}

/// One partition's unacknowledged batches, in sequence order.
#[derive(Clone, Debug, Default)]
struct PartState {
    queue: VecDeque<Batch>,
    /// After a retriable failure: send nothing until no batch is in flight, then resend
    /// from the first unacknowledged batch (go-back-N keeps sequences in order).
    draining: bool,
    /// The (id, epoch) that `next_seq` counts for. After an epoch bump a partition keeps the
    /// old pair while batches stamped with it are unacknowledged: Kafka resends those with
    /// their original stamp and holds new batches back until they complete
    /// (`TransactionManager.maybeUpdateProducerIdAndEpoch`, `RecordAccumulator
    /// .shouldStopDrainBatchesForPartition`), so the broker can still deduplicate them.
    pair: Option<(ProducerId, ProducerEpoch)>,
    /// This partition caused the bump: its unacknowledged batches are re-stamped from
    /// sequence 0 under the new pair (Kafka `partitionsToRewriteSequences`).
    rewrite: bool,
    next_seq: i32,
    /// Batches of `queue` with `in_flight` set (kept by `set_in_flight` and `remove`, so the
    /// per-step send pass does not count a queue that grows long while a leader is away).
    in_flight_count: usize,
}

impl PartState {
    /// Batches with a request outstanding.
    fn in_flight(&self) -> usize {
        self.in_flight_count
    }

    fn any_in_flight(&self) -> bool {
        self.in_flight_count > 0
    }

    /// Sets the `in_flight` flag of the batch at `pos`.
    fn set_in_flight(&mut self, pos: usize, in_flight: bool) {
        let b = &mut self.queue[pos];
        if b.in_flight != in_flight {
            b.in_flight = in_flight;
            if in_flight {
                self.in_flight_count += 1;
            } else {
                self.in_flight_count -= 1;
            }
        }
    }

    /// Removes the batch at `pos`.
    fn remove(&mut self, pos: usize) -> Option<Batch> {
        let b = self.queue.remove(pos)?;
        if b.in_flight {
            self.in_flight_count -= 1;
        }
        Some(b)
    }

    /// Removes every batch.
    fn take_all(&mut self) -> VecDeque<Batch> {
        self.in_flight_count = 0;
        std::mem::take(&mut self.queue)
    }

    fn position(&self, id: u64) -> Option<usize> {
        self.queue.iter().position(|b| b.id == id)
    }

    /// Some unacknowledged batch already carries a sequence (Kafka's in-flight batches by
    /// sequence: sent, not yet completed).
    fn any_stamped(&self) -> bool {
        self.queue.iter().any(|b| b.stamp.is_some())
    }

    /// Nothing for a per-step pass to do here: no batch waiting to be sent (every batch is
    /// in flight, or there is none) and no pending drain. A pass that visits an idle
    /// partition changes nothing and plans no timer: its batches are judged by their answers
    /// or their request timeout. (Expiry at `delivery.timeout.ms` covers an in-flight batch at
    /// the front of a queue that still has batches to send; a queue all in flight expires at
    /// its request timeout at the latest, which Kafka keeps below the delivery timeout.)
    fn is_idle(&self) -> bool {
        self.in_flight_count == self.queue.len() && !self.draining
    }

    /// Counts sequences for `pair` from 0.
    fn start_sequences(&mut self, pair: (ProducerId, ProducerEpoch)) {
        self.pair = Some(pair);
        self.rewrite = false;
        self.next_seq = 0;
    }
}

/// The partitions a producer writes, in partition order: looked up by partition (a binary
/// search over a few `i32`s) and walked by index in the per-step passes, which visit only
/// the partitions that may have work ([`Parts::next_busy`]).
#[derive(Clone, Debug, Default)]
struct Parts {
    /// Partition numbers, ascending, each once.
    ids: Vec<i32>,
    /// `states[k]` belongs to `ids[k]`.
    states: Vec<PartState>,
    /// Indices of partitions that may not be idle ([`PartState::is_idle`]): a superset of
    /// the busy ones. A partition stops being idle only by a queued batch, a drain or an
    /// attempt that ended (its batch is no longer in flight), and all three mark it
    /// ([`Parts::mark_busy`]); the passes drop the idle ones they meet. So a
    /// pass that walks this set in index order does what a walk of every partition did
    /// (visiting an idle partition does nothing), at the cost of the busy ones only: a
    /// producer of many partitions has work on a few at a time. A bit set (bit `k % 64` of
    /// word `k / 64`), so the walk is a few word scans.
    busy: Vec<u64>,
}

impl Parts {
    /// Empty states for `partitions` (sorted, duplicates once).
    fn new(partitions: &[i32]) -> Self {
        let mut ids = partitions.to_vec();
        ids.sort_unstable();
        ids.dedup();
        let states = ids.iter().map(|_| PartState::default()).collect();
        let busy = vec![0; ids.len().div_ceil(64)];
        Self { ids, states, busy }
    }

    /// Marks partition `p` as possibly busy: before a batch is queued on it, a drain set or
    /// an attempt resolved.
    fn mark_busy(&mut self, p: i32) {
        if let Ok(k) = self.ids.binary_search(&p) {
            self.busy[k / 64] |= 1 << (k % 64);
        }
    }

    /// The first marked index at or after `from`.
    fn next_marked(&self, from: usize) -> Option<usize> {
        let mut w = from / 64;
        let mut bits = self.busy.get(w)? & (u64::MAX << (from % 64));
        loop {
            if bits != 0 {
                return Some(w * 64 + bits.trailing_zeros() as usize);
            }
            w += 1;
            bits = *self.busy.get(w)?;
        }
    }

    /// The first index at or after `from` that may be busy, forgetting the idle ones found
    /// before it.
    fn next_busy(&mut self, mut from: usize) -> Option<usize> {
        loop {
            let k = self.next_marked(from)?;
            if !self.states[k].is_idle() {
                return Some(k);
            }
            self.busy[k / 64] &= !(1 << (k % 64));
            from = k + 1;
        }
    }

    /// The states that may be busy, in partition order.
    fn busy_states(&self) -> impl Iterator<Item = &PartState> {
        let mut from = 0;
        std::iter::from_fn(move || {
            let k = self.next_marked(from)?;
            from = k + 1;
            Some(&self.states[k])
        })
    }

    /// The partition number at index `k`.
    fn id(&self, k: usize) -> i32 {
        self.ids[k]
    }

    fn at(&self, k: usize) -> &PartState {
        &self.states[k]
    }

    fn get(&self, p: &i32) -> Option<&PartState> {
        self.ids.binary_search(p).ok().map(|k| &self.states[k])
    }

    fn get_mut(&mut self, p: &i32) -> Option<&mut PartState> {
        self.ids.binary_search(p).ok().map(|k| &mut self.states[k])
    }

    fn keys(&self) -> impl Iterator<Item = i32> + '_ {
        self.ids.iter().copied()
    }

    fn values(&self) -> std::slice::Iter<'_, PartState> {
        self.states.iter()
    }

    fn values_mut(&mut self) -> std::slice::IterMut<'_, PartState> {
        self.states.iter_mut()
    }
}

impl std::ops::Index<&i32> for Parts {
    type Output = PartState;

    fn index(&self, p: &i32) -> &PartState {
        self.get(p).expect("partition state")
    }
}

/// The value of record `n` of client `client`: `c<client>-<n>`, unique in a run (the
/// checkers find a record by its value). Written by hand: one is made per record, and
/// `format!` cost as much as the rest of generating it.
fn record_value(client: u32, n: u64) -> Bytes {
    let mut s = String::with_capacity(24);
    s.push('c');
    crate::trace::format::push_decimal(&mut s, u64::from(client), 0);
    s.push('-');
    crate::trace::format::push_decimal(&mut s, n, 0);
    Bytes::from(s)
}

/// Whether sending `batch` under `current` gives it a new sequence: it has none yet, or it
/// carries an older pair and its partition already counts sequences for `current`
/// (`partition_current`: a rewrite after a bump).
fn batch_needs_stamp(
    batch: &Batch,
    current: (ProducerId, ProducerEpoch),
    partition_current: bool,
) -> bool {
    match batch.stamp {
        None => true,
        Some((sp, se, _)) => (sp, se) != current && partition_current,
    }
}

/// Producer identity (idempotent / transactional).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Identity {
    /// Plain producer.
    Plain,
    /// Needs InitProducerId (first time, or an epoch bump with the current pair).
    NeedInit {
        bump: Option<(ProducerId, ProducerEpoch)>,
    },
    /// InitProducerId in flight.
    Initing {
        bump: Option<(ProducerId, ProducerEpoch)>,
    },
    /// Usable.
    Ready(ProducerId, ProducerEpoch),
}

/// Transaction state.
#[derive(Clone, Debug, PartialEq)]
enum TxnState {
    /// No transaction open.
    Idle,
    /// Open: generating and producing.
    Open {
        abort: bool,
        records: usize,
        added: BTreeSet<i32>,
        to_add: BTreeSet<i32>,
        /// Abortable error (KIP-588).
        error: Option<ErrorCode>,
    },
    /// EndTxn to send or in flight.
    Ending { commit: bool, bump_after: bool },
}

/// The producer node.
#[derive(Clone, Debug)]
pub struct Producer {
    cfg: ProducerConfig,
    wire: Wire<Tag>,
    meta: MetadataCache,
    rng: Rng,
    started: bool,
    generated: u64,
    next_gen_at: Option<Instant>,
    open: Option<(i32, Vec<Bytes>, Instant)>,
    sticky: i32,
    /// Every partition written to has its state from the start.
    parts: Parts,
    /// Records in the batches of `parts` (kept with every queue change, so `buffered` does
    /// not walk the queues on every generated record).
    queued_records: usize,
    identity: Identity,
    coordinator: Option<BrokerId>,
    txn: TxnState,
    txn_req_in_flight: bool,
    txn_retry_at: Instant,
    fatal: Option<ErrorCode>,
    closed: bool,
    /// When `step` last ran: timers at or before it have been acted on.
    last_step: Option<Instant>,
    /// The next batch id.
    next_batch_id: u64,
    /// The next send attempt number.
    next_attempt: u64,
}

impl Producer {
    /// A producer; it starts on its first timer.
    ///
    /// # Panics
    /// On configs Kafka rejects: idempotence or transactions without acks=all, no partitions.
    #[must_use]
    pub fn new(cfg: ProducerConfig) -> Self {
        let idem = cfg.idempotent || cfg.transactional_id.is_some();
        assert!(!cfg.partitions.is_empty(), "producer_without_partitions");
        assert!(
            !idem || cfg.acks == -1,
            "idempotence requires acks=all (Kafka ConfigException)"
        );
        let mut rng = Rng::new(cfg.seed);
        let start = rng.below(cfg.brokers.len().max(1));
        let meta = MetadataCache::new(
            cfg.brokers.clone(),
            Some(vec![cfg.topic.clone()]),
            cfg.metadata_max_age_ms,
            cfg.retry_backoff_ms,
            start,
        );
        let sticky = cfg.partitions[rng.below(cfg.partitions.len())];
        let parts = Parts::new(&cfg.partitions);
        Self {
            wire: Wire::new(cfg.cluster, cfg.request_timeout_ms),
            meta,
            rng,
            started: false,
            generated: 0,
            next_gen_at: None,
            open: None,
            sticky,
            parts,
            queued_records: 0,
            identity: if idem {
                Identity::NeedInit { bump: None }
            } else {
                Identity::Plain
            },
            coordinator: None,
            txn: TxnState::Idle,
            txn_req_in_flight: false,
            txn_retry_at: Instant::ZERO,
            fatal: None,
            closed: false,
            last_step: None,
            next_batch_id: 0,
            next_attempt: 0,
            cfg,
        }
    }

    /// The config.
    #[must_use]
    pub fn config(&self) -> &ProducerConfig {
        &self.cfg
    }

    /// The fatal error that stopped the producer, if any.
    #[must_use]
    pub fn fatal_error(&self) -> Option<ErrorCode> {
        self.fatal
    }

    /// Records generated so far.
    #[must_use]
    pub fn generated(&self) -> u64 {
        self.generated
    }

    /// Current producer id and epoch, once initialised.
    #[must_use]
    pub fn producer_id_and_epoch(&self) -> Option<(ProducerId, ProducerEpoch)> {
        match self.identity {
            Identity::Ready(p, e) => Some((p, e)),
            _ => None,
        }
    }

    /// Stops generating records (pending ones are still delivered, an open transaction
    /// still ends).
    pub fn close(&mut self) {
        self.closed = true;
    }

    /// True when every generated record was acknowledged or failed and nothing is open.
    #[must_use]
    pub fn is_done(&self) -> bool {
        self.fatal.is_some()
            || (self.generation_finished()
                && self.open.is_none()
                && self.parts.values().all(|p| p.queue.is_empty())
                && self.txn == TxnState::Idle)
    }

    fn transactional(&self) -> bool {
        self.cfg.transactional_id.is_some()
    }

    fn tp(&self, p: i32) -> TopicPartition {
        TopicPartition::new(self.cfg.topic.as_str(), p)
    }

    fn generation_finished(&self) -> bool {
        self.closed || self.cfg.max_records.is_some_and(|m| self.generated >= m)
    }

    fn buffered(&self) -> usize {
        self.queued_records + self.open.as_ref().map_or(0, |o| o.1.len())
    }

    // ------------------------------------------------------------------ main loop

    fn step(&mut self, now: Instant) {
        if self.fatal.is_some() {
            return;
        }
        self.started = true;
        self.last_step = Some(now);
        // A later stage can unblock an earlier one (a sent acks=0 batch frees buffer, an
        // ended transaction lets the next begin): repeat until nothing moves.
        for _ in 0..8 {
            let before = (
                self.wire.queued(),
                self.generated,
                self.txn.clone(),
                self.identity,
            );
            if let Some((to, req)) = self.meta.poll_request(now) {
                self.wire.send(now, to, req, Tag::Metadata);
            }
            self.expire_batches(now);
            self.drive_identity(now);
            self.maybe_begin_txn();
            self.generate(now);
            self.drive_txn(now);
            self.send_batches(now);
            if self.fatal.is_some()
                || before
                    == (
                        self.wire.queued(),
                        self.generated,
                        self.txn.clone(),
                        self.identity,
                    )
            {
                break;
            }
        }
        // A batch whose leader is unknown asks for a refresh while it is being sent, after
        // this step's metadata poll: Kafka's sender sends that request in the same pass
        // (`NetworkClient.poll` → `maybeUpdate` after `sendProducerData`). Left for the next
        // step, its due time is already past when `poll_timeout` is asked, so a producer with
        // nothing else to do slept until its batch expired (fresh mirror seed 717000823: 120 s
        // without a send after a leader change).
        if self.fatal.is_none()
            && !self.cfg.ablation_defers_metadata_refresh
            && let Some((to, req)) = self.meta.poll_request(now)
        {
            self.wire.send(now, to, req, Tag::Metadata);
        }
    }

    fn drive_identity(&mut self, now: Instant) {
        let Identity::NeedInit { bump } = self.identity else {
            return;
        };
        if self.parts.values().any(PartState::any_in_flight) || now < self.txn_retry_at {
            return; // Kafka bumps once in-flight batches drained
        }
        let (to, tid) = if let Some(tid) = self.cfg.transactional_id.clone() {
            if self.txn_req_in_flight {
                return;
            }
            let Some(c) = self.ensure_coordinator(now) else {
                return;
            };
            (c, Some(tid))
        } else {
            (self.meta.next_broker(), None)
        };
        let (producer_id, producer_epoch) = bump.unwrap_or((ProducerId::NONE, ProducerEpoch::NONE));
        let req = Request::InitProducerId {
            transactional_id: tid,
            transaction_timeout_ms: self.cfg.transaction_timeout_ms,
            producer_id,
            producer_epoch,
        };
        self.wire.send(now, to, req, Tag::InitProducerId);
        self.txn_req_in_flight = self.transactional();
        self.identity = Identity::Initing { bump };
    }

    /// The transaction coordinator, or starts looking it up.
    fn ensure_coordinator(&mut self, now: Instant) -> Option<BrokerId> {
        if self.coordinator.is_some() {
            return self.coordinator;
        }
        if !self.txn_req_in_flight && now >= self.txn_retry_at {
            let key = self.cfg.transactional_id.clone().unwrap_or_default();
            let to = self.meta.next_broker();
            self.wire.send(
                now,
                to,
                Request::FindCoordinator {
                    key,
                    kind: CoordinatorKind::Transaction,
                },
                Tag::FindCoordinator,
            );
            self.txn_req_in_flight = true;
        }
        None
    }

    fn maybe_begin_txn(&mut self) {
        if !self.transactional()
            || self.txn != TxnState::Idle
            || self.generation_finished()
            || !matches!(self.identity, Identity::Ready(..))
        {
            return;
        }
        let abort = self.rng.next_f64() < self.cfg.txn.abort_probability;
        self.txn = TxnState::Open {
            abort,
            records: 0,
            added: BTreeSet::new(),
            to_add: BTreeSet::new(),
            error: None,
        };
    }

    fn may_generate(&self) -> bool {
        if self.generation_finished() || self.cfg.records_per_second <= 0.0 {
            return false;
        }
        if self.transactional() {
            matches!(&self.txn, TxnState::Open { records, error: None, .. }
                if *records < self.cfg.txn.records_per_txn)
        } else {
            self.buffered() < self.cfg.max_buffered_records
        }
    }

    fn generate(&mut self, now: Instant) {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let interval_us = ((1e6 / self.cfg.records_per_second.max(1e-9)) as u64).max(1);
        loop {
            if !self.may_generate() {
                // Blocked (buffer full, transaction complete): no burst catch-up later.
                self.next_gen_at = None;
                break;
            }
            let at = *self.next_gen_at.get_or_insert(now);
            if at > now {
                break;
            }
            let value = record_value(self.cfg.client, self.generated);
            self.generated += 1;
            self.next_gen_at = Some(at.plus_micros(interval_us));
            let p = self.sticky;
            let open = self.open.get_or_insert_with(|| (p, Vec::new(), now));
            open.1.push(value);
            let mut txn_full = false;
            if let TxnState::Open { records, .. } = &mut self.txn {
                *records += 1;
                txn_full = *records >= self.cfg.txn.records_per_txn;
            }
            if open.1.len() >= self.cfg.batch_records.max(1) || txn_full {
                self.close_batch();
            }
        }
        if self.generation_finished() || self.transactional() && !self.may_generate() {
            self.close_batch();
        }
    }

    /// Closes the open batch and moves the sticky partition.
    fn close_batch(&mut self) {
        let Some((p, values, created)) = self.open.take() else {
            return;
        };
        if let TxnState::Open { added, to_add, .. } = &mut self.txn
            && !added.contains(&p)
        {
            to_add.insert(p);
        }
        let id = self.next_batch_id;
        self.next_batch_id += 1;
        let batch = Batch::new(id, values, created);
        self.queued_records += batch.values.len();
        self.parts.mark_busy(p);
        self.parts
            .get_mut(&p)
            .expect("partition_state_exists: open batches are on configured partitions")
            .queue
            .push_back(batch);
        self.sticky = self.cfg.partitions[self.rng.below(self.cfg.partitions.len())];
    }

    fn drive_txn(&mut self, now: Instant) {
        if !self.transactional() || self.txn_req_in_flight || now < self.txn_retry_at {
            return;
        }
        if !matches!(self.identity, Identity::Ready(..)) {
            return;
        }
        let tid = self.cfg.transactional_id.clone().unwrap_or_default();
        let Identity::Ready(producer_id, producer_epoch) = self.identity else {
            return;
        };
        let idle = self.open.is_none() && self.parts.values().all(|p| p.queue.is_empty());
        match &mut self.txn {
            TxnState::Idle => {}
            TxnState::Open {
                abort,
                records,
                to_add,
                error,
                ..
            } => {
                let finished = *records >= self.cfg.txn.records_per_txn
                    || self.closed
                    || self.cfg.max_records.is_some_and(|m| self.generated >= m);
                if error.is_none() && !to_add.is_empty() {
                    let parts: Vec<i32> = to_add.iter().copied().collect();
                    let Some(c) = self.coordinator else {
                        self.ensure_coordinator(now);
                        return;
                    };
                    let req = Request::AddPartitionsToTxn {
                        transactional_id: tid,
                        producer_id,
                        producer_epoch,
                        partitions: parts.iter().map(|p| self.tp(*p)).collect(),
                    };
                    self.wire.send(now, c, req, Tag::AddPartitions(parts));
                    self.txn_req_in_flight = true;
                } else if (finished || error.is_some()) && idle {
                    if *records == 0 && error.is_none() {
                        self.txn = TxnState::Idle; // nothing was written: nothing to end
                        return;
                    }
                    let commit = !*abort && error.is_none();
                    let bump_after = error.is_some();
                    self.txn = TxnState::Ending { commit, bump_after };
                    self.send_end_txn(now);
                }
            }
            TxnState::Ending { .. } => self.send_end_txn(now),
        }
    }

    fn send_end_txn(&mut self, now: Instant) {
        let TxnState::Ending { commit, .. } = self.txn else {
            return;
        };
        let Identity::Ready(producer_id, producer_epoch) = self.identity else {
            return;
        };
        let Some(c) = self.ensure_coordinator(now) else {
            return;
        };
        let req = Request::EndTxn {
            transactional_id: self.cfg.transactional_id.clone().unwrap_or_default(),
            producer_id,
            producer_epoch,
            commit,
        };
        self.wire.send(now, c, req, Tag::EndTxn);
        self.txn_req_in_flight = true;
    }

    fn send_batches(&mut self, now: Instant) {
        let producer = match self.identity {
            Identity::Plain => None,
            Identity::Ready(p, e) => Some((p, e)),
            _ => return,
        };
        let added = match &self.txn {
            TxnState::Open { added, error, .. } if self.transactional() => {
                if error.is_some() {
                    return;
                }
                Some(added.clone())
            }
            _ if self.transactional() => return,
            _ => None,
        };
        let mut next = self.parts.next_busy(0);
        while let Some(k) = next {
            let p = self.parts.id(k);
            if added.as_ref().is_none_or(|a| a.contains(&p)) {
                self.send_partition(now, k, producer);
            }
            next = self.parts.next_busy(k + 1);
        }
    }

    /// Sends the partition's next batches in sequence order, up to `max_in_flight`.
    fn send_partition(
        &mut self,
        now: Instant,
        k: usize,
        producer: Option<(ProducerId, ProducerEpoch)>,
    ) {
        let p = self.parts.id(k);
        let max_in_flight = self.cfg.max_in_flight.clamp(1, 5);
        let mut tp: Option<TopicPartition> = None;
        let state = &mut self.parts.states[k];
        if state.draining {
            if state.any_in_flight() {
                return;
            }
            state.draining = false;
        }
        let mut in_flight = state.in_flight();
        if in_flight == state.queue.len() {
            // Every batch is in flight: the walk below would only skip them, reading each.
            return;
        }
        let mut i = 0;
        while i < self.parts.at(k).queue.len() && in_flight < max_in_flight {
            let state = self.parts.at(k);
            let batch = &state.queue[i];
            if batch.in_flight {
                i += 1;
                continue;
            }
            // In sequence order: a batch waiting for its retry holds back every later one.
            if batch.retry_at > now {
                break;
            }
            // Built only when a batch is to be sent: most calls find nothing sendable.
            let tp = tp.get_or_insert_with(|| TopicPartition::new(self.cfg.topic.as_str(), p));
            let Some((leader, _)) = self.meta.leader(tp) else {
                self.meta.request_update();
                break;
            };
            let state = &mut self.parts.states[k];
            if let Some(current) = producer
                && state.pair != Some(current)
            {
                if state.rewrite || !state.any_stamped() {
                    state.start_sequences(current);
                } else if batch_needs_stamp(&state.queue[i], current, false) {
                    // A new batch behind batches of the old pair: wait for those to complete,
                    // or sequence 0 of the new pair could land before them.
                    break;
                }
            }
            let restamp = producer.is_some_and(|current| {
                batch_needs_stamp(&state.queue[i], current, state.pair == Some(current))
            });
            // A batch that may be in the log under an earlier (id, epoch) is never stamped
            // again: Kafka fails an unresolved sequence instead of writing it twice.
            if restamp && state.queue[i].stamp.is_some() && state.queue[i].maybe_written {
                self.fail_at(p, i, ErrorCode::RequestTimedOut, true);
                continue;
            }
            let attempt = self.next_attempt;
            self.next_attempt += 1;
            let batch = &mut state.queue[i];
            let builder = match producer {
                None => BatchBuilder::new(),
                Some((pid, epoch)) => {
                    let (pid, epoch, seq) = if restamp {
                        let s = Sequence(state.next_seq);
                        let n = i32::try_from(batch.values.len()).unwrap_or(i32::MAX);
                        state.next_seq = s.increment(n).0;
                        batch.stamp = Some((pid, epoch, s));
                        (pid, epoch, s)
                    } else {
                        batch.stamp.expect("a batch that needs no stamp has one")
                    };
                    if self.cfg.transactional_id.is_some() {
                        BatchBuilder::transactional(pid, epoch, seq)
                    } else {
                        BatchBuilder::idempotent(pid, epoch, seq)
                    }
                }
            };
            let records: Vec<SimpleRecord> = batch
                .values
                .iter()
                .map(|v| SimpleRecord::value(batch.timestamp_ms, v.clone()))
                .collect();
            let req = Request::Produce {
                transactional_id: self.cfg.transactional_id.clone(),
                acks: self.cfg.acks,
                timeout_ms: self.cfg.request_timeout_ms,
                partitions: vec![(tp.clone(), builder.build(&records))],
            };
            batch.sent = true;
            let id = batch.id;
            if self.cfg.acks == 0 {
                // Kafka: acks=0 completes on send, with no offset: nothing to report.
                if let Some(sent) = state.remove(i) {
                    self.queued_records -= sent.values.len();
                }
                self.wire.send_untracked(leader, req);
            } else {
                batch.attempt = attempt;
                state.set_in_flight(i, true);
                in_flight += 1;
                i += 1;
                self.wire
                    .send(now, leader, req, Tag::Produce(p, id, attempt));
            }
        }
    }

    /// Fails queued batches whose delivery timeout passed (in-flight ones are judged when
    /// their request completes or times out).
    fn expire_batches(&mut self, now: Instant) {
        let timeout = self.cfg.delivery_timeout_ms;
        let mut next = self.parts.next_busy(0);
        while let Some(k) = next {
            let p = self.parts.id(k);
            loop {
                let state = self.parts.at(k);
                match state.queue.front() {
                    Some(b) if now >= b.created.plus_millis(timeout) => {
                        let err = if b.last_error.is_ok() {
                            ErrorCode::RequestTimedOut
                        } else {
                            b.last_error
                        };
                        self.fail_front(p, err, !b.last_error.is_ok() || b.sent);
                    }
                    _ => break,
                }
            }
            next = self.parts.next_busy(k + 1);
        }
    }

    /// Fails the head batch of `p`. `unknown_outcome`: it may have been written.
    fn fail_front(&mut self, p: i32, error: ErrorCode, unknown_outcome: bool) {
        self.fail_at(p, 0, error, unknown_outcome);
    }

    /// Fails the batch at `pos` of `p`'s queue. `unknown_outcome`: it may have been written.
    fn fail_at(&mut self, p: i32, pos: usize, error: ErrorCode, unknown_outcome: bool) {
        let tp = self.tp(p);
        self.parts.mark_busy(p); // it may start draining below
        let current = self.producer_id_and_epoch();
        let state = self.parts.get_mut(&p).expect("partition state");
        let Some(batch) = state.remove(pos) else {
            return;
        };
        self.queued_records -= batch.values.len();
        // Later batches hold sequences after this one's: they are resent in order.
        state.draining = true;
        let last_stamped = batch.stamp.is_some_and(|(_, _, seq)| {
            let n = i32::try_from(batch.values.len()).unwrap_or(i32::MAX);
            seq.increment(n).0 == state.next_seq
        });
        self.wire.emit(Event::ProduceFailed {
            client: self.cfg.client,
            tp,
            values: batch.values.clone(),
            error,
        });
        let stamped_now = batch
            .stamp
            .filter(|(sp, se, _)| Some((*sp, *se)) == current);
        if self.transactional() {
            self.abortable(error);
        } else if let Some((pid, epoch, seq)) = stamped_now {
            if unknown_outcome || !last_stamped {
                // Unresolved sequence (or a hole before later batches' sequences): Kafka
                // bumps the epoch to start sequences over.
                self.request_bump(p, pid, epoch);
            } else if let Some(state) = self.parts.get_mut(&p) {
                // The batch was certainly not written and nothing came after it: give its
                // sequences back.
                state.next_seq = seq.0;
            }
        }
    }

    /// Asks for an epoch bump because a batch of `p` stamped `(pid, epoch)` left a sequence
    /// hole or an unknown outcome; `p`'s sequences are rewritten under the new pair.
    fn request_bump(&mut self, p: i32, pid: ProducerId, epoch: ProducerEpoch) {
        if let Some(state) = self.parts.get_mut(&p)
            && state.pair == Some((pid, epoch))
        {
            state.rewrite = true;
        }
        if let Identity::Ready(p, e) = self.identity
            && p == pid
            && e == epoch
        {
            self.identity = Identity::NeedInit {
                bump: Some((pid, epoch)),
            };
        }
    }

    /// Enters the abortable-error state of the open transaction.
    fn abortable(&mut self, error: ErrorCode) {
        if let TxnState::Open { error: e, .. } = &mut self.txn
            && e.is_none()
        {
            *e = Some(error);
            // Kafka aborts undrained batches with the transaction.
            if let Some((p, values, _)) = self.open.take() {
                self.wire.emit(Event::ProduceFailed {
                    client: self.cfg.client,
                    tp: self.tp(p),
                    values,
                    error,
                });
            }
            let parts: Vec<i32> = self.parts.keys().collect();
            for p in parts {
                let tp = self.tp(p);
                let state = self.parts.get_mut(&p).expect("partition state");
                // In-flight batches finish; the queued ones fail with the transaction.
                let failed: Vec<Batch> = state
                    .queue
                    .iter()
                    .filter(|b| !b.in_flight)
                    .cloned()
                    .collect();
                state.queue.retain(|b| b.in_flight);
                state.in_flight_count = state.queue.len();
                for b in failed {
                    self.queued_records -= b.values.len();
                    self.wire.emit(Event::ProduceFailed {
                        client: self.cfg.client,
                        tp: tp.clone(),
                        values: b.values,
                        error,
                    });
                }
            }
        }
    }

    fn fatal(&mut self, error: ErrorCode) {
        if self.fatal.is_some() {
            return;
        }
        self.fatal = Some(error);
        let parts: Vec<i32> = self.parts.keys().collect();
        for p in parts {
            let tp = self.tp(p);
            let queue = self.parts.get_mut(&p).expect("partition").take_all();
            for b in queue {
                self.queued_records -= b.values.len();
                self.wire.emit(Event::ProduceFailed {
                    client: self.cfg.client,
                    tp: tp.clone(),
                    values: b.values,
                    error,
                });
            }
        }
        let intended = match &self.txn {
            TxnState::Open { abort, error, .. } => Some(!*abort && error.is_none()),
            TxnState::Ending { commit, .. } => Some(*commit),
            TxnState::Idle => None,
        };
        if let Some(commit) = intended {
            let producer_id = self
                .producer_id_and_epoch()
                .map_or(ProducerId::NONE, |x| x.0);
            self.wire.emit(Event::TxnEnded {
                client: self.cfg.client,
                producer_id,
                commit,
                error,
            });
        }
        self.txn = TxnState::Idle;
        self.open = None;
        self.wire.clear();
    }

    // ------------------------------------------------------------------ responses

    fn on_response(&mut self, now: Instant, tag: Tag, resp: Option<Response>) {
        match tag {
            Tag::Metadata => match resp {
                Some(r) => {
                    self.meta.on_response(now, &r);
                }
                None => self.meta.on_failure(now),
            },
            Tag::FindCoordinator => {
                self.txn_req_in_flight = false;
                match resp {
                    Some(Response::FindCoordinator {
                        error: ErrorCode::None,
                        node: Some(n),
                    }) => self.coordinator = Some(n),
                    _ => self.txn_retry_at = now.plus_millis(self.cfg.retry_backoff_ms),
                }
            }
            Tag::InitProducerId => self.on_init_producer_id(now, resp),
            Tag::AddPartitions(parts) => self.on_add_partitions(now, &parts, resp),
            Tag::EndTxn => self.on_end_txn(now, resp),
            Tag::Produce(p, id, attempt) => self.on_produce(now, p, id, attempt, resp),
        }
    }

    fn coordinator_error(&mut self, now: Instant, error: ErrorCode) {
        if needs_new_coordinator(error) {
            self.coordinator = None;
        }
        self.txn_retry_at = now.plus_millis(self.cfg.retry_backoff_ms);
    }

    fn on_init_producer_id(&mut self, now: Instant, resp: Option<Response>) {
        self.txn_req_in_flight = false;
        let Identity::Initing { bump } = self.identity else {
            return;
        };
        let (error, pid, epoch) = match resp {
            Some(Response::InitProducerId {
                error,
                producer_id,
                producer_epoch,
            }) => (error, producer_id, producer_epoch),
            Some(_) => (
                ErrorCode::UnknownServerError,
                ProducerId::NONE,
                ProducerEpoch::NONE,
            ),
            None => (
                ErrorCode::RequestTimedOut,
                ProducerId::NONE,
                ProducerEpoch::NONE,
            ),
        };
        if error.is_ok() {
            self.identity = Identity::Ready(pid, epoch);
            // New (id, epoch): a partition's sequences start at 0 once nothing stamped with
            // the old pair is unacknowledged, or at once where the bump rewrites them. A
            // transaction's batches never outlive its abort, so they all start over.
            let transactional = self.transactional();
            for s in self.parts.values_mut() {
                if transactional || s.rewrite || !s.any_stamped() {
                    s.start_sequences((pid, epoch));
                }
            }
            if matches!(self.txn, TxnState::Ending { .. }) {
                self.txn = TxnState::Idle;
            }
        } else if is_retriable(error) {
            self.identity = Identity::NeedInit { bump };
            self.coordinator_error(now, error);
        } else {
            self.fatal(error);
        }
    }

    fn on_add_partitions(&mut self, now: Instant, parts: &[i32], resp: Option<Response>) {
        self.txn_req_in_flight = false;
        let error = match resp {
            Some(Response::PartitionErrors { results }) => results
                .iter()
                .map(|(_, e)| *e)
                .find(|e| !e.is_ok())
                .unwrap_or(ErrorCode::None),
            Some(Response::Error { error }) => error,
            Some(_) => ErrorCode::UnknownServerError,
            None => ErrorCode::RequestTimedOut,
        };
        match error {
            ErrorCode::None => {
                if let TxnState::Open { added, to_add, .. } = &mut self.txn {
                    for p in parts {
                        to_add.remove(p);
                        added.insert(*p);
                    }
                }
            }
            e if is_retriable(e) => self.coordinator_error(now, e),
            e @ (ErrorCode::ProducerFenced
            | ErrorCode::InvalidProducerEpoch
            | ErrorCode::TransactionCoordinatorFenced
            | ErrorCode::InvalidTxnState
            | ErrorCode::InvalidProducerIdMapping) => self.fatal(e),
            e => self.abortable(e),
        }
    }

    fn on_end_txn(&mut self, now: Instant, resp: Option<Response>) {
        self.txn_req_in_flight = false;
        let TxnState::Ending { commit, bump_after } = self.txn else {
            return;
        };
        let error = match resp {
            Some(Response::Error { error }) => error,
            Some(_) => ErrorCode::UnknownServerError,
            None => ErrorCode::RequestTimedOut,
        };
        if error.is_ok() {
            let producer_id = self
                .producer_id_and_epoch()
                .map_or(ProducerId::NONE, |x| x.0);
            self.wire.emit(Event::TxnEnded {
                client: self.cfg.client,
                producer_id,
                commit,
                error,
            });
            match (bump_after, self.identity) {
                (true, Identity::Ready(pid, epoch)) => {
                    // KIP-360: bump the epoch after an abortable error; stay `Ending` until
                    // InitProducerId succeeds so no new transaction starts.
                    self.identity = Identity::NeedInit {
                        bump: Some((pid, epoch)),
                    };
                }
                _ => self.txn = TxnState::Idle,
            }
        } else if is_retriable(error) {
            self.coordinator_error(now, error);
        } else {
            self.fatal(error);
        }
    }

    fn on_produce(&mut self, now: Instant, p: i32, id: u64, attempt: u64, resp: Option<Response>) {
        let Some(state) = self.parts.get_mut(&p) else {
            return;
        };
        let Some(pos) = state.position(id) else {
            return; // failed meanwhile (an aborted transaction's queue, a fatal error)
        };
        let batch = &state.queue[pos];
        if !batch.in_flight || batch.attempt != attempt || batch.stashed.is_some() {
            return; // an attempt the partition gave up on (its connection dropped)
        }
        if state
            .queue
            .iter()
            .take(pos)
            .any(|b| b.in_flight && b.stashed.is_none())
        {
            // An earlier batch is still unanswered: on one connection its response comes
            // first. Hold this one back.
            state.queue[pos].stashed = Some(resp);
            return;
        }
        self.resolve(now, p, pos, resp);
        self.release_stashed(now, p);
    }

    /// Handles the stashed answers that are next in sequence order.
    fn release_stashed(&mut self, now: Instant, p: i32) {
        loop {
            let Some(state) = self.parts.get_mut(&p) else {
                return;
            };
            let Some(pos) = state.queue.iter().position(|b| b.in_flight) else {
                return;
            };
            let Some(resp) = state.queue[pos].stashed.take() else {
                return;
            };
            self.resolve(now, p, pos, resp);
        }
    }

    /// An attempt of the batch at `pos` of `p` ended with `resp` (`None`: no answer).
    fn resolve(&mut self, now: Instant, p: i32, pos: usize, resp: Option<Response>) {
        self.parts.mark_busy(p); // its batch leaves flight: it may wait to be sent again
        let Some(state) = self.parts.get_mut(&p) else {
            return;
        };
        state.set_in_flight(pos, false);
        if resp.is_none() {
            // No answer: Kafka drops the connection, and every later request on it fails
            // too (their answers, even if they came, are gone with it). All of them may
            // have been written; they are resent in order, and the broker's last-five
            // batch window recognises the ones it has.
            state.queue[pos].maybe_written = true;
            for later in pos + 1..state.queue.len() {
                if !state.queue[later].in_flight {
                    continue;
                }
                state.set_in_flight(later, false);
                let b = &mut state.queue[later];
                b.stashed = None;
                b.maybe_written = true;
                b.last_error = ErrorCode::RequestTimedOut;
                b.retry_at = now.plus_millis(self.cfg.retry_backoff_ms);
            }
        }
        let tp = self.tp(p);
        let answer: ProducePartitionResponse = match resp {
            Some(Response::Produce { partitions }) => {
                match partitions.into_iter().find(|r| r.tp == tp) {
                    Some(r) => r,
                    None => return self.retry_at(now, p, pos, ErrorCode::UnknownServerError),
                }
            }
            Some(Response::Error { error }) => ProducePartitionResponse {
                tp: tp.clone(),
                error,
                base_offset: mirror_core::types::Offset(-1),
                log_start_offset: mirror_core::types::Offset(-1),
            },
            Some(_) => return self.retry_at(now, p, pos, ErrorCode::UnknownServerError),
            None => return self.retry_at(now, p, pos, ErrorCode::RequestTimedOut),
        };
        let transactional = self.transactional();
        if matches!(
            answer.error,
            ErrorCode::OutOfOrderSequenceNumber
                | ErrorCode::InvalidProducerEpoch
                | ErrorCode::ProducerFenced
                | ErrorCode::UnknownProducerId
        ) && let Some((pid, epoch, seq)) = self.parts[&p].queue[pos].stamp
        {
            // For the checkers (`failover_producer_not_fenced`): the broker refused this
            // producer's sequence or epoch.
            self.wire.emit(Event::ProducerStateRefused {
                client: self.cfg.client,
                tp: tp.clone(),
                producer_id: pid,
                producer_epoch: epoch,
                sequence: seq,
                error: answer.error,
            });
        }
        match answer.error {
            ErrorCode::None => {
                let state = self.parts.get_mut(&p).expect("partition state");
                let Some(batch) = state.remove(pos) else {
                    return;
                };
                self.queued_records -= batch.values.len();
                let producer_id = batch.stamp.map_or(ProducerId::NONE, |s| s.0);
                self.wire.emit(Event::ProduceAcked {
                    client: self.cfg.client,
                    tp,
                    base_offset: answer.base_offset,
                    values: batch.values,
                    acks: self.cfg.acks,
                    producer_id,
                    transactional,
                });
            }
            e @ (ErrorCode::ProducerFenced | ErrorCode::TransactionCoordinatorFenced) => {
                self.fatal(e);
            }
            // Behind an earlier unacknowledged batch, the sequence gap is that batch's: retry
            // in order (Kafka `TransactionManager.canRetry`).
            ErrorCode::OutOfOrderSequenceNumber if pos > 0 && self.identity != Identity::Plain => {
                self.retry_at(now, p, pos, ErrorCode::OutOfOrderSequenceNumber);
            }
            e @ (ErrorCode::UnknownProducerId | ErrorCode::OutOfOrderSequenceNumber)
                if !transactional && self.identity != Identity::Plain =>
            {
                if let Some((pid, epoch, _)) = self.parts[&p].queue[pos].stamp {
                    self.request_bump(p, pid, epoch);
                }
                self.retry_at(now, p, pos, e);
            }
            e if is_retriable(e) => self.retry_at(now, p, pos, e),
            e => self.fail_at(p, pos, e, false),
        }
    }

    /// Schedules a retry of the batch at `pos` of `p` (same sequence; the partition drains
    /// and resends in order), or fails it when its delivery timeout passed.
    fn retry_at(&mut self, now: Instant, p: i32, pos: usize, error: ErrorCode) {
        if invalidates_metadata(error) {
            self.meta.request_update();
        }
        let backoff = self.cfg.retry_backoff_ms;
        let timeout = self.cfg.delivery_timeout_ms;
        self.parts.mark_busy(p); // it may start draining below
        let Some(state) = self.parts.get_mut(&p) else {
            return;
        };
        let Some(batch) = state.queue.get_mut(pos) else {
            return;
        };
        batch.last_error = error;
        let created = batch.created;
        let aborting = matches!(self.txn, TxnState::Open { error: Some(_), .. });
        if aborting || now >= created.plus_millis(timeout) {
            self.fail_at(p, pos, error, true);
        } else {
            batch.retry_at = now.plus_millis(backoff);
            state.draining = true;
        }
    }

    fn next_timer(&self) -> Option<Instant> {
        if self.fatal.is_some() {
            return None;
        }
        if !self.started {
            return Some(Instant::ZERO);
        }
        // Everything due at the last step was done then; only later instants can help.
        let floor = self.last_step;
        let mut next: Option<Instant> = None;
        let mut consider = |x: Instant| {
            if floor.is_none_or(|f| x > f) && next.is_none_or(|n| x < n) {
                next = Some(x);
            }
        };
        self.wire
            .next_deadline()
            .into_iter()
            .for_each(&mut consider);
        self.meta.next_timer().into_iter().for_each(&mut consider);
        if self.may_generate() {
            consider(self.next_gen_at.unwrap_or(Instant::ZERO));
        }
        for s in self.parts.busy_states() {
            // A queue whose batches are all in flight has none waiting (skips reading each
            // batch: at scale, most queues are all in flight).
            if s.in_flight() < s.queue.len()
                && let Some(b) = s.queue.iter().find(|b| !b.in_flight)
            {
                consider(b.retry_at);
            }
            if let Some(b) = s.queue.front() {
                consider(b.created.plus_millis(self.cfg.delivery_timeout_ms));
            }
        }
        let identity_waits = matches!(self.identity, Identity::NeedInit { .. });
        let txn_waits = !matches!(self.txn, TxnState::Idle)
            || (self.transactional() && !self.generation_finished());
        if (identity_waits || txn_waits) && !self.txn_req_in_flight {
            consider(self.txn_retry_at);
        }
        next
    }
}

impl Node for Producer {
    fn handle_message(&mut self, now: Instant, from: NodeId, id: CorrelationId, message: Message) {
        if self.fatal.is_some() {
            return;
        }
        let Message::Response(resp) = message else {
            return;
        };
        if let Some((_, tag)) = self.wire.take(from, id) {
            self.on_response(now, tag, Some(resp));
        }
        self.step(now);
    }

    fn handle_timeout(&mut self, now: Instant) {
        for (_, tag) in self.wire.expire(now) {
            if self.fatal.is_some() {
                break;
            }
            self.on_response(now, tag, None);
        }
        self.step(now);
    }

    fn poll_output(&mut self) -> Option<Output> {
        self.wire.pop()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.next_timer()
    }
}

#[cfg(test)]
mod parts_tests {
    use super::*;

    #[test]
    fn record_values_are_client_and_number() {
        for (c, n) in [(0, 0), (7, 10), (u32::MAX, u64::MAX), (12, 1_000_000)] {
            assert_eq!(record_value(c, n), Bytes::from(format!("c{c}-{n}")));
        }
    }

    #[test]
    fn the_busy_walk_crosses_words_of_the_bit_set() {
        let ids: Vec<i32> = (0..130).collect();
        let mut parts = Parts::new(&ids);
        for p in [0, 63, 64, 129] {
            parts.mark_busy(p);
            parts.get_mut(&p).expect("partition").draining = true;
        }
        let mut seen = Vec::new();
        let mut next = parts.next_busy(0);
        while let Some(k) = next {
            seen.push(parts.id(k));
            next = parts.next_busy(k + 1);
        }
        assert_eq!(seen, [0, 63, 64, 129]);
        assert_eq!(parts.next_busy(130), None);
    }

    #[test]
    fn the_busy_walk_visits_partitions_with_work_in_order_and_forgets_idle_ones() {
        // Goal: the per-step passes walk `next_busy`, so it must return every partition
        // with a drain or a batch, in partition order, and nothing else.
        let mut parts = Parts::new(&[3, 1, 2, 0]);
        assert_eq!(parts.next_busy(0), None, "new partitions are idle");
        parts.mark_busy(2);
        parts.mark_busy(9); // not a partition of this producer: ignored
        assert_eq!(
            parts.next_busy(0),
            None,
            "marked but idle: dropped on the walk"
        );
        assert!(parts.busy.iter().all(|w| *w == 0));
        for p in [3, 1] {
            parts.mark_busy(p);
            parts.get_mut(&p).expect("partition").draining = true;
        }
        parts.mark_busy(0); // idle
        let walk = |parts: &mut Parts| {
            let mut seen = Vec::new();
            let mut next = parts.next_busy(0);
            while let Some(k) = next {
                seen.push(parts.id(k));
                next = parts.next_busy(k + 1);
            }
            seen
        };
        assert_eq!(walk(&mut parts), [1, 3]);
        assert_eq!(
            parts.busy_states().count(),
            2,
            "the idle partition 0 was forgotten"
        );
        assert_eq!(parts.busy_states().filter(|s| s.draining).count(), 2);
        parts.get_mut(&1).expect("partition").draining = false;
        assert_eq!(walk(&mut parts), [3]);
    }

    #[test]
    fn a_partition_whose_batches_are_all_in_flight_is_idle() {
        // Goal: the passes look only at batches not in flight, so a queue that is all in
        // flight needs no visit (at scale most queues are), and one unsent batch makes it
        // busy again.
        let mut state = PartState::default();
        for id in 0..3 {
            state
                .queue
                .push_back(Batch::new(id, Vec::new(), Instant::ZERO));
        }
        assert!(!state.is_idle(), "three batches to send");
        for pos in 0..3 {
            state.set_in_flight(pos, true);
        }
        assert!(state.is_idle(), "all in flight: answers will judge them");
        state.set_in_flight(1, false);
        assert!(!state.is_idle(), "one back from flight");
        state.set_in_flight(1, true);
        state.draining = true;
        assert!(!state.is_idle(), "a pending drain");
    }
}

/// The producer driven by hand: a broker answers as each test says.
#[cfg(test)]
mod bump_tests {
    use mirror_core::protocol::messages::{PartitionMetadata, TopicMetadata};
    use mirror_core::record::RecordBatch;
    use mirror_core::types::{LeaderEpoch, Offset, TopicId};

    use super::*;

    const C: ClusterIdx = ClusterIdx(0);
    const BROKER: BrokerId = BrokerId(0);

    /// A produce request the broker has not answered yet.
    struct Sent {
        id: CorrelationId,
        p: i32,
        batch: RecordBatch,
    }

    struct Drive {
        producer: Producer,
        now: Instant,
        /// Produce requests waiting for an answer, in the order sent.
        produces: Vec<Sent>,
        /// Every InitProducerId request's (producer id, epoch).
        inits: Vec<(ProducerId, ProducerEpoch)>,
        next_offset: i64,
    }

    impl Drive {
        fn new(partitions: Vec<i32>, max_records: u64) -> Self {
            let mut cfg = ProducerConfig::new(0, C, vec![BROKER], "t", partitions);
            cfg.records_per_second = 10_000.0;
            cfg.max_records = Some(max_records);
            cfg.seed = 7;
            cfg.max_in_flight = 5;
            let mut producer = Producer::new(cfg);
            producer.handle_timeout(Instant::ZERO);
            Self {
                producer,
                now: Instant::ZERO,
                produces: Vec::new(),
                inits: Vec::new(),
                next_offset: 0,
            }
        }

        fn answer(&mut self, id: CorrelationId, resp: Response) {
            let from = NodeId::broker(C, BROKER);
            self.producer
                .handle_message(self.now, from, id, Message::Response(resp));
        }

        /// Answers metadata and InitProducerId at once (a bump gets the next producer id,
        /// as Kafka gives an idempotent producer), keeps produce requests for the test.
        fn pump(&mut self) {
            while let Some(out) = self.producer.poll_output() {
                let Output::Send {
                    id,
                    message: Message::Request(req),
                    ..
                } = out
                else {
                    continue;
                };
                match req {
                    Request::Metadata { .. } => {
                        let parts = self.producer.config().partitions.clone();
                        let topic = TopicMetadata {
                            name: "t".into(),
                            topic_id: TopicId(1),
                            error: ErrorCode::None,
                            partitions: parts
                                .into_iter()
                                .map(|partition| PartitionMetadata {
                                    partition,
                                    leader: Some(BROKER),
                                    leader_epoch: LeaderEpoch(0),
                                    replicas: vec![BROKER],
                                    isr: vec![BROKER],
                                })
                                .collect(),
                        };
                        let resp = Response::Metadata {
                            brokers: vec![BROKER],
                            topics: vec![topic],
                        };
                        self.answer(id, resp);
                    }
                    Request::InitProducerId {
                        producer_id,
                        producer_epoch,
                        ..
                    } => {
                        self.inits.push((producer_id, producer_epoch));
                        let pid = if producer_id.0 < 0 { 0 } else { 2000 };
                        let resp = Response::InitProducerId {
                            error: ErrorCode::None,
                            producer_id: ProducerId(pid),
                            producer_epoch: ProducerEpoch(0),
                        };
                        self.answer(id, resp);
                    }
                    Request::Produce { partitions, .. } => {
                        for (tp, batch) in partitions {
                            self.produces.push(Sent {
                                id,
                                p: tp.partition,
                                batch,
                            });
                        }
                    }
                    _ => {}
                }
            }
        }

        /// Runs the producer's timers for `ms`, answering what `pump` answers.
        fn run_ms(&mut self, ms: i64) {
            let until = self.now.plus_millis(ms);
            self.pump();
            while let Some(t) = self.producer.poll_timeout().filter(|t| *t <= until) {
                self.now = t.max(self.now);
                self.producer.handle_timeout(self.now);
                self.pump();
            }
            self.now = until;
        }

        /// Answers the waiting produce of partition `p` stamped with sequence `seq`.
        fn answer_produce(&mut self, p: i32, seq: i32, error: ErrorCode) {
            let pos = self
                .produces
                .iter()
                .position(|s| s.p == p && s.batch.base_sequence() == Sequence(seq))
                .expect("that produce is waiting");
            let s = self.produces.remove(pos);
            let base_offset = if error.is_ok() {
                let o = self.next_offset;
                self.next_offset += i64::from(s.batch.record_count());
                Offset(o)
            } else {
                Offset(-1)
            };
            let resp = Response::Produce {
                partitions: vec![ProducePartitionResponse {
                    tp: TopicPartition::new("t", p),
                    error,
                    base_offset,
                    log_start_offset: Offset(0),
                }],
            };
            self.answer(s.id, resp);
            self.pump();
        }

        /// The stamps (producer id, sequence) of the waiting produces of `p`.
        fn stamps(&self, p: i32) -> Vec<(i64, i32)> {
            self.produces
                .iter()
                .filter(|s| s.p == p)
                .map(|s| (s.batch.producer_id().0, s.batch.base_sequence().0))
                .collect()
        }
    }

    #[test]
    fn a_batch_refused_while_every_batch_was_in_flight_is_sent_again() {
        // Goal: a partition whose batches are all in flight is left out of the per-step
        // passes (`PartState::is_idle`); the answer that takes a batch out of flight must
        // bring the partition back, or the retry is never sent.
        let mut d = Drive::new(vec![2], 30);
        d.run_ms(50);
        let sent: Vec<i32> = d.stamps(2).iter().map(|s| s.1).collect();
        assert!(!sent.is_empty(), "batches in flight");
        for seq in &sent {
            d.answer_produce(2, *seq, ErrorCode::NotLeaderOrFollower);
        }
        assert!(d.produces.is_empty(), "nothing resent before the backoff");
        d.run_ms(1_000);
        assert_eq!(
            d.stamps(2).iter().map(|s| s.1).collect::<Vec<_>>(),
            sent,
            "every refused batch sent again with its sequence"
        );
    }

    #[test]
    fn a_bump_caused_by_one_partition_rewrites_only_that_partitions_sequences() {
        // Goal: Kafka rewrites sequences after an idempotent epoch bump only for the
        // partition that caused it (`TransactionManager.partitionsToRewriteSequences`). A
        // batch already sent to another partition keeps its (producer id, sequence), so its
        // retry is recognised by the broker that may have written it (mirror chaos seed
        // 30462: a NOT_LEADER_OR_FOLLOWER batch re-stamped under the new id was written
        // twice).
        let mut d = Drive::new(vec![1, 3], 1_000);
        d.run_ms(50);
        let (a, b) = (1, 3);
        assert!(
            d.stamps(b).len() >= 2 && !d.stamps(a).is_empty(),
            "both partitions have batches in flight, b at least two: {:?} {:?}",
            d.stamps(a),
            d.stamps(b)
        );
        assert_eq!(d.stamps(a)[0], (0, 0));
        // b's first batch is refused for good with later batches of b behind it: its
        // sequence cannot be given back, so the producer bumps (a new id, KIP-360).
        d.answer_produce(b, 0, ErrorCode::ReadOnlyTopic);
        let later_b: Vec<i32> = d.stamps(b).iter().map(|s| s.1).collect();
        for seq in later_b {
            d.answer_produce(b, seq, ErrorCode::NotLeaderOrFollower);
        }
        // a's first batch: outcome unknown to the producer (it may have been written).
        d.answer_produce(a, 0, ErrorCode::NotLeaderOrFollower);
        let later_a: Vec<i32> = d.stamps(a).iter().map(|s| s.1).collect();
        for seq in later_a {
            d.answer_produce(a, seq, ErrorCode::NotLeaderOrFollower);
        }
        d.run_ms(1_000);
        assert_eq!(
            d.inits,
            vec![
                (ProducerId(-1), ProducerEpoch(-1)),
                (ProducerId(0), ProducerEpoch(0))
            ],
            "one bump, asked with the current pair"
        );
        assert_eq!(
            d.stamps(a).first(),
            Some(&(0, 0)),
            "a's retry keeps its stamp: {:?}",
            d.stamps(a)
        );
        assert_eq!(
            d.stamps(b).first(),
            Some(&(2000, 0)),
            "b's sequences start over under the new id: {:?}",
            d.stamps(b)
        );
    }
}
