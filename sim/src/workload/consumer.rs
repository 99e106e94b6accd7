//! The consumer (Kafka: `KafkaConsumer` with `Fetcher` / `FetchCollector` /
//! `CompletedFetch`), as a sans-I/O node, with a static assignment.
//!
//! - Positions: with a group, `OffsetFetch` from the group coordinator
//!   (`FindCoordinator(GROUP)`) resumes from committed offsets; partitions without one (and
//!   consumers without a group) reset with `ListOffsets(EARLIEST)` (`auto.offset.reset=earliest`).
//! - Fetch: one request in flight per leader (as Kafka's fetcher), `current_leader_epoch` from
//!   metadata, isolation HIGH_WATERMARK (read_uncommitted) or TXN_COMMITTED (read_committed),
//!   `max_wait_ms` 500, `min_bytes` 1. A response is used only if the position still equals the
//!   fetch offset. OFFSET_OUT_OF_RANGE resets to earliest; leadership errors refresh metadata
//!   and back off.
//! - Records returned (`Consumed`): data records at offsets ≥ the position, in offset order;
//!   control batches are skipped; for read_committed, Kafka's aborted-transaction filter
//!   (`CompletedFetch.nextFetchedRecord`): the response's aborted transactions are consumed in
//!   first-offset order as batches pass them, marking their producer aborted; its data batches
//!   are skipped until that producer's ABORT marker.
//! - KIP-320 position validation: when metadata shows a newer leader epoch than the one the
//!   position was validated against, and the position carries the epoch of its last record,
//!   `OffsetsForLeaderEpoch` checks it; an end offset below the position (log truncation)
//!   moves the position there, as Kafka does with a reset policy; an undefined answer resets
//!   to earliest.
//! - Group: `GroupHeartbeat` every `session_timeout_ms / 3` (the simplified membership of the
//!   model), auto-commit every `auto_commit_interval_ms` of the positions that changed, with
//!   the leader epoch of the last consumed record; [`Consumer::stop`] commits once more, then
//!   `LeaveGroup`, then the consumer goes silent.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use mirror_core::broker::{Event, Message, Node, Output};
use mirror_core::keyed_map::PartitionMap;
use mirror_core::protocol::messages::{
    CoordinatorKind, FetchPartition, FetchPartitionResponse, OffsetSpec,
};
use mirror_core::protocol::{ClusterIdx, CorrelationId, ErrorCode, NodeId, Request, Response};
use mirror_core::record::ControlRecord;
use mirror_core::replication::fetch_leader::FetchIsolation;
use mirror_core::time::Instant;
use mirror_core::types::{BrokerId, LeaderEpoch, Offset, ProducerId, TopicPartition};

use super::common::{Rng, Wire, invalidates_metadata, is_retriable, needs_new_coordinator};
use super::metadata::MetadataCache;

/// Consumer settings.
#[derive(Clone, Debug, PartialEq)]
pub struct ConsumerConfig {
    /// Client number.
    pub client: u32,
    /// Cluster.
    pub cluster: ClusterIdx,
    /// Bootstrap brokers.
    pub brokers: Vec<BrokerId>,
    /// `group.id` (`None`: no commits, always start from earliest).
    pub group: Option<String>,
    /// Topic.
    pub topic: String,
    /// Static assignment.
    pub partitions: Vec<i32>,
    /// `isolation.level=read_committed`.
    pub read_committed: bool,
    /// `auto.commit.interval.ms`.
    pub auto_commit_interval_ms: i64,
    /// `session.timeout.ms`.
    pub session_timeout_ms: i64,
    /// PRNG seed (first bootstrap broker).
    pub seed: u64,
    /// `request.timeout.ms`.
    pub request_timeout_ms: i64,
    /// `retry.backoff.ms`.
    pub retry_backoff_ms: i64,
    /// `metadata.max.age.ms`.
    pub metadata_max_age_ms: i64,
    /// `fetch.max.wait.ms`.
    pub fetch_max_wait_ms: i64,
    /// `fetch.max.bytes`.
    pub fetch_max_bytes: usize,
}

impl ConsumerConfig {
    /// Kafka's defaults.
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
            group: None,
            topic: topic.to_string(),
            partitions,
            read_committed: false,
            auto_commit_interval_ms: 5_000,
            session_timeout_ms: 45_000,
            seed: 0,
            request_timeout_ms: 30_000,
            retry_backoff_ms: 100,
            metadata_max_age_ms: 300_000,
            fetch_max_wait_ms: 500,
            fetch_max_bytes: 52_428_800,
        }
    }
}

#[derive(Clone, Debug)]
enum Tag {
    Metadata,
    FindCoordinator,
    Heartbeat,
    OffsetFetch,
    OffsetCommit(Vec<(TopicPartition, Offset, Option<LeaderEpoch>)>),
    LeaveGroup,
    ListOffsets(Vec<TopicPartition>),
    Validate(TopicPartition, LeaderEpoch),
    Fetch(BrokerId, Vec<(TopicPartition, Offset)>),
}

/// Where a partition's position stands.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum PosState {
    /// Waiting for the committed offset.
    AwaitCommitted,
    /// Needs a reset to earliest.
    Reset,
    /// ListOffsets in flight.
    Resetting,
    /// OffsetsForLeaderEpoch in flight.
    Validating,
    /// Fetching.
    Fetchable,
}

#[derive(Clone, Debug)]
struct Part {
    state: PosState,
    position: Offset,
    /// Leader epoch of the last consumed record (or of the committed / reset offset).
    epoch: Option<LeaderEpoch>,
    /// The leader epoch the position was last validated against.
    validated: Option<LeaderEpoch>,
    fetching: bool,
    retry_at: Instant,
    committed: Option<Offset>,
}

/// Group lifecycle.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Life {
    Running,
    /// Final commit / LeaveGroup in flight.
    Leaving,
    Stopped,
}

/// The consumer node.
#[derive(Clone, Debug)]
pub struct Consumer {
    cfg: ConsumerConfig,
    wire: Wire<Tag>,
    meta: MetadataCache,
    member_id: String,
    parts: PartitionMap<Part>,
    coordinator: Option<BrokerId>,
    coordinator_lookup: bool,
    coordinator_retry_at: Instant,
    joined: bool,
    next_heartbeat: Instant,
    next_commit: Instant,
    offset_fetch_done: bool,
    life: Life,
    stop_requested: bool,
    started: bool,
    /// When `step` last ran: timers at or before it have been acted on.
    last_step: Option<Instant>,
}

impl Consumer {
    /// A consumer; it starts on its first timer.
    #[must_use]
    pub fn new(cfg: ConsumerConfig) -> Self {
        let mut rng = Rng::new(cfg.seed);
        let meta = MetadataCache::new(
            cfg.brokers.clone(),
            Some(vec![cfg.topic.clone()]),
            cfg.metadata_max_age_ms,
            cfg.retry_backoff_ms,
            rng.below(cfg.brokers.len().max(1)),
        );
        let initial = if cfg.group.is_some() {
            PosState::AwaitCommitted
        } else {
            PosState::Reset
        };
        let parts = cfg
            .partitions
            .iter()
            .map(|p| {
                (
                    TopicPartition::new(cfg.topic.as_str(), *p),
                    Part {
                        state: initial,
                        position: Offset(0),
                        epoch: None,
                        validated: None,
                        fetching: false,
                        retry_at: Instant::ZERO,
                        committed: None,
                    },
                )
            })
            .collect();
        Self {
            wire: Wire::new(cfg.cluster, cfg.request_timeout_ms),
            meta,
            member_id: format!("c{}-member", cfg.client),
            parts,
            coordinator: None,
            coordinator_lookup: false,
            coordinator_retry_at: Instant::ZERO,
            joined: false,
            next_heartbeat: Instant::ZERO,
            next_commit: Instant::ZERO,
            offset_fetch_done: false,
            life: Life::Running,
            stop_requested: false,
            started: false,
            last_step: None,
            cfg,
        }
    }

    /// The config.
    #[must_use]
    pub fn config(&self) -> &ConsumerConfig {
        &self.cfg
    }

    /// Current positions (next offset to return) of fetchable partitions.
    #[must_use]
    pub fn positions(&self) -> BTreeMap<TopicPartition, Offset> {
        self.parts
            .iter()
            .filter(|(_, p)| p.state == PosState::Fetchable)
            .map(|(tp, p)| (tp.clone(), p.position))
            .collect()
    }

    /// Asks the consumer to stop: final commit, LeaveGroup, silence (Kafka `close()`).
    pub fn stop(&mut self) {
        self.stop_requested = true;
    }

    /// True once stopped.
    #[must_use]
    pub fn is_stopped(&self) -> bool {
        self.life == Life::Stopped
    }

    fn isolation(&self) -> FetchIsolation {
        if self.cfg.read_committed {
            FetchIsolation::TxnCommitted
        } else {
            FetchIsolation::HighWatermark
        }
    }

    // ------------------------------------------------------------------ main loop

    fn step(&mut self, now: Instant) {
        self.started = true;
        self.last_step = Some(now);
        if self.life == Life::Stopped {
            return;
        }
        if self.stop_requested && self.life == Life::Running {
            self.begin_leave(now);
        }
        if self.life == Life::Leaving {
            if !self
                .wire
                .any(|t| matches!(t, Tag::OffsetCommit(_) | Tag::LeaveGroup))
            {
                self.life = Life::Stopped;
                self.wire.clear();
            }
            return;
        }
        if let Some((to, req)) = self.meta.poll_request(now) {
            self.wire.send(now, to, req, Tag::Metadata);
        }
        if self.cfg.group.is_some() {
            self.drive_group(now);
        }
        self.drive_positions(now);
        self.send_fetches(now);
    }

    fn ensure_coordinator(&mut self, now: Instant) -> Option<BrokerId> {
        if self.coordinator.is_none()
            && !self.coordinator_lookup
            && now >= self.coordinator_retry_at
        {
            let to = self.meta.next_broker();
            let key = self.cfg.group.clone().unwrap_or_default();
            self.wire.send(
                now,
                to,
                Request::FindCoordinator {
                    key,
                    kind: CoordinatorKind::Group,
                },
                Tag::FindCoordinator,
            );
            self.coordinator_lookup = true;
        }
        self.coordinator
    }

    fn coordinator_error(&mut self, now: Instant, error: ErrorCode) {
        if needs_new_coordinator(error) {
            self.coordinator = None;
        }
        self.coordinator_retry_at = now.plus_millis(self.cfg.retry_backoff_ms);
    }

    fn drive_group(&mut self, now: Instant) {
        let Some(c) = self.ensure_coordinator(now) else {
            return;
        };
        if now < self.coordinator_retry_at {
            return;
        }
        let group = self.cfg.group.clone().unwrap_or_default();
        if now >= self.next_heartbeat && !self.wire.any(|t| matches!(t, Tag::Heartbeat)) {
            let req = Request::GroupHeartbeat {
                group_id: group.clone(),
                member_id: self.member_id.clone(),
                session_timeout_ms: self.cfg.session_timeout_ms,
            };
            self.wire.send(now, c, req, Tag::Heartbeat);
            self.next_heartbeat = now.plus_millis((self.cfg.session_timeout_ms / 3).max(1));
        }
        if !self.offset_fetch_done && !self.wire.any(|t| matches!(t, Tag::OffsetFetch)) {
            let req = Request::OffsetFetch {
                group_id: group,
                partitions: Some(self.parts.keys().cloned().collect()),
            };
            self.wire.send(now, c, req, Tag::OffsetFetch);
        }
        if self.joined && now >= self.next_commit {
            self.next_commit = now.plus_millis(self.cfg.auto_commit_interval_ms);
            self.commit(now, c, false);
        }
    }

    /// Sends an OffsetCommit of the positions that moved since the last commit.
    fn commit(&mut self, now: Instant, coordinator: BrokerId, force: bool) -> bool {
        if !force && self.wire.any(|t| matches!(t, Tag::OffsetCommit(_))) {
            return false;
        }
        let offsets: Vec<(TopicPartition, Offset, Option<LeaderEpoch>)> = self
            .parts
            .iter()
            .filter(|(_, p)| p.state == PosState::Fetchable && p.committed != Some(p.position))
            .map(|(tp, p)| (tp.clone(), p.position, p.epoch))
            .collect();
        if offsets.is_empty() {
            return false;
        }
        let req = Request::OffsetCommit {
            group_id: self.cfg.group.clone().unwrap_or_default(),
            member_id: Some(self.member_id.clone()),
            offsets: offsets.clone(),
        };
        self.wire
            .send(now, coordinator, req, Tag::OffsetCommit(offsets));
        true
    }

    fn begin_leave(&mut self, now: Instant) {
        self.life = Life::Leaving;
        // Kafka close(): in-flight fetches are abandoned, nothing more is returned; an
        // in-flight commit is still awaited (its result is reported).
        self.wire.retain(|t| matches!(t, Tag::OffsetCommit(_)));
        let Some(c) = self
            .coordinator
            .filter(|_| self.cfg.group.is_some() && self.joined)
        else {
            return;
        };
        self.commit(now, c, true);
        let req = Request::LeaveGroup {
            group_id: self.cfg.group.clone().unwrap_or_default(),
            member_id: self.member_id.clone(),
        };
        self.wire.send(now, c, req, Tag::LeaveGroup);
    }

    fn drive_positions(&mut self, now: Instant) {
        // Resets, grouped by leader.
        let mut resets: BTreeMap<BrokerId, Vec<(TopicPartition, Option<LeaderEpoch>, OffsetSpec)>> =
            BTreeMap::new();
        let mut validations = Vec::new();
        for (tp, p) in &self.parts {
            if p.retry_at > now {
                continue;
            }
            let leader = self.meta.leader(tp);
            match p.state {
                PosState::Reset => match leader {
                    Some((b, e)) => resets.entry(b).or_default().push((
                        tp.clone(),
                        Some(e),
                        OffsetSpec::Earliest,
                    )),
                    None => self.meta.request_update(),
                },
                PosState::Fetchable if !p.fetching => {
                    if let (Some((b, e)), Some(last)) = (leader, p.epoch)
                        && p.validated.is_none_or(|v| v < e)
                    {
                        validations.push((tp.clone(), b, e, last));
                    }
                }
                _ => {}
            }
        }
        for (b, partitions) in resets {
            let tps: Vec<TopicPartition> = partitions.iter().map(|x| x.0.clone()).collect();
            for tp in &tps {
                if let Some(p) = self.parts.get_mut(tp) {
                    p.state = PosState::Resetting;
                }
            }
            let req = Request::ListOffsets {
                replica_id: None,
                isolation: self.isolation(),
                partitions,
            };
            self.wire.send(now, b, req, Tag::ListOffsets(tps));
        }
        for (tp, b, current, last) in validations {
            if let Some(p) = self.parts.get_mut(&tp) {
                p.state = PosState::Validating;
            }
            let req = Request::OffsetsForLeaderEpoch {
                partitions: vec![(tp.clone(), Some(current), last)],
            };
            self.wire.send(now, b, req, Tag::Validate(tp, current));
        }
    }

    fn send_fetches(&mut self, now: Instant) {
        let mut by_leader: BTreeMap<BrokerId, Vec<FetchPartition>> = BTreeMap::new();
        for (tp, p) in &self.parts {
            if p.state != PosState::Fetchable || p.fetching || p.retry_at > now {
                continue;
            }
            let Some((b, e)) = self.meta.leader(tp) else {
                self.meta.request_update();
                continue;
            };
            by_leader.entry(b).or_default().push(FetchPartition {
                tp: tp.clone(),
                fetch_offset: p.position,
                current_leader_epoch: Some(e),
                last_fetched_epoch: None,
                log_start_offset: Offset(-1),
                topic_id: None,
            });
        }
        for (b, partitions) in by_leader {
            // One fetch in flight per broker (Kafka's `nodesWithPendingFetchRequests`).
            if self.wire.any(|t| matches!(t, Tag::Fetch(x, _) if *x == b)) {
                continue;
            }
            let tag: Vec<(TopicPartition, Offset)> = partitions
                .iter()
                .map(|f| (f.tp.clone(), f.fetch_offset))
                .collect();
            for (tp, _) in &tag {
                if let Some(p) = self.parts.get_mut(tp) {
                    p.fetching = true;
                }
            }
            let req = Request::Fetch {
                replica: None,
                max_wait_ms: self.cfg.fetch_max_wait_ms,
                min_bytes: 1,
                max_bytes: self.cfg.fetch_max_bytes,
                isolation: self.isolation(),
                partitions,
                session: mirror_core::protocol::messages::FetchSessionMeta::SESSIONLESS,
                forgotten: Vec::new(),
            };
            self.wire.send(now, b, req, Tag::Fetch(b, tag));
        }
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
                self.coordinator_lookup = false;
                match resp {
                    Some(Response::FindCoordinator {
                        error: ErrorCode::None,
                        node: Some(n),
                    }) => self.coordinator = Some(n),
                    _ => self.coordinator_retry_at = now.plus_millis(self.cfg.retry_backoff_ms),
                }
            }
            Tag::Heartbeat => match error_of(resp.as_ref()) {
                ErrorCode::None => self.joined = true,
                e => {
                    self.coordinator_error(now, e);
                    self.next_heartbeat = now.plus_millis(self.cfg.retry_backoff_ms);
                }
            },
            Tag::OffsetFetch => match resp {
                Some(Response::OffsetFetch {
                    error: ErrorCode::None,
                    offsets,
                }) => {
                    self.offset_fetch_done = true;
                    for (tp, p) in self.parts.iter_mut() {
                        if p.state != PosState::AwaitCommitted {
                            continue;
                        }
                        match offsets.get(tp) {
                            Some((o, e)) if o.0 >= 0 => {
                                p.position = *o;
                                p.epoch = *e;
                                p.committed = Some(*o);
                                p.validated = None;
                                p.state = PosState::Fetchable;
                            }
                            _ => p.state = PosState::Reset,
                        }
                    }
                }
                other => self.coordinator_error(now, error_of(other.as_ref())),
            },
            Tag::OffsetCommit(offsets) => self.on_commit(now, &offsets, resp),
            Tag::LeaveGroup => {}
            Tag::ListOffsets(tps) => self.on_list_offsets(now, &tps, resp),
            Tag::Validate(tp, current) => self.on_validate(now, &tp, current, resp),
            Tag::Fetch(_, sent) => self.on_fetch(now, &sent, resp),
        }
    }

    fn on_commit(
        &mut self,
        now: Instant,
        offsets: &[(TopicPartition, Offset, Option<LeaderEpoch>)],
        resp: Option<Response>,
    ) {
        let results: BTreeMap<TopicPartition, ErrorCode> = match resp {
            Some(Response::PartitionErrors { results }) => results.into_iter().collect(),
            other => {
                let e = error_of(other.as_ref());
                offsets.iter().map(|(tp, _, _)| (tp.clone(), e)).collect()
            }
        };
        let mut done = Vec::new();
        let mut error = ErrorCode::None;
        for (tp, o, _) in offsets {
            match results
                .get(tp)
                .copied()
                .unwrap_or(ErrorCode::UnknownServerError)
            {
                ErrorCode::None => {
                    if let Some(p) = self.parts.get_mut(tp) {
                        p.committed = Some(*o);
                    }
                    done.push((tp.clone(), *o));
                }
                e => error = e,
            }
        }
        if !done.is_empty() {
            self.wire.emit(Event::OffsetsCommitted {
                client: self.cfg.client,
                group: self.cfg.group.clone().unwrap_or_default(),
                offsets: done,
            });
        }
        if !error.is_ok() {
            if error == ErrorCode::UnknownMemberId {
                self.joined = false;
                self.next_heartbeat = now;
            }
            self.coordinator_error(now, error);
            self.next_commit = now.plus_millis(self.cfg.retry_backoff_ms);
        }
    }

    fn on_list_offsets(&mut self, now: Instant, tps: &[TopicPartition], resp: Option<Response>) {
        let answers: BTreeMap<TopicPartition, (ErrorCode, Offset, LeaderEpoch)> = match resp {
            Some(Response::ListOffsets { partitions }) => partitions
                .into_iter()
                .map(|p| (p.tp, (p.error, p.offset, p.leader_epoch)))
                .collect(),
            _ => BTreeMap::new(),
        };
        for tp in tps {
            let leader_epoch = self.meta.leader(tp).map(|x| x.1);
            let Some(p) = self.parts.get_mut(tp) else {
                continue;
            };
            if p.state != PosState::Resetting {
                continue;
            }
            match answers.get(tp) {
                Some((ErrorCode::None, o, ep)) => {
                    p.position = *o;
                    p.epoch = (ep.0 >= 0).then_some(*ep);
                    p.validated = leader_epoch;
                    p.state = PosState::Fetchable;
                }
                other => {
                    p.state = PosState::Reset;
                    p.retry_at = now.plus_millis(self.cfg.retry_backoff_ms);
                    let e = other.map_or(ErrorCode::RequestTimedOut, |x| x.0);
                    if invalidates_metadata(e) || !is_retriable(e) {
                        self.meta.request_update();
                    }
                }
            }
        }
    }

    fn on_validate(
        &mut self,
        now: Instant,
        tp: &TopicPartition,
        current: LeaderEpoch,
        resp: Option<Response>,
    ) {
        let answer = match resp {
            Some(Response::OffsetsForLeaderEpoch { partitions }) => {
                partitions.into_iter().find(|(t, _, _)| t == tp)
            }
            _ => None,
        };
        let Some(p) = self.parts.get_mut(tp) else {
            return;
        };
        if p.state != PosState::Validating {
            return;
        }
        match answer {
            Some((_, ErrorCode::None, end)) => {
                if end.offset.0 < 0 || end.leader_epoch.0 < 0 {
                    // Kafka: undefined end offset → reset with the default policy.
                    p.state = PosState::Reset;
                } else {
                    if end.offset < p.position {
                        // Truncation detected: resume at the first offset known to diverge.
                        p.position = end.offset;
                        p.epoch = Some(end.leader_epoch);
                    }
                    p.validated = Some(current);
                    p.state = PosState::Fetchable;
                }
            }
            _ => {
                p.state = PosState::Fetchable; // validation is retried (validated unchanged)
                p.retry_at = now.plus_millis(self.cfg.retry_backoff_ms);
                self.meta.request_update();
            }
        }
    }

    fn on_fetch(
        &mut self,
        now: Instant,
        sent: &[(TopicPartition, Offset)],
        resp: Option<Response>,
    ) {
        for (tp, _) in sent {
            if let Some(p) = self.parts.get_mut(tp) {
                p.fetching = false;
            }
        }
        let (top, partitions) = match resp {
            Some(Response::Fetch {
                error, partitions, ..
            }) => (error, partitions),
            other => (error_of(other.as_ref()), Vec::new()),
        };
        let mut answers: BTreeMap<TopicPartition, FetchPartitionResponse> =
            partitions.into_iter().map(|r| (r.tp.clone(), r)).collect();
        for (tp, offset) in sent {
            let Some(p) = self.parts.get(tp) else {
                continue;
            };
            if p.state != PosState::Fetchable || p.position != *offset {
                continue; // stale response (Kafka drops it)
            }
            let error = match answers.remove(tp) {
                Some(r) if top.is_ok() && r.error.is_ok() => {
                    self.consume(tp, r);
                    continue;
                }
                Some(r) if top.is_ok() => r.error,
                Some(_) | None => {
                    if top.is_ok() {
                        ErrorCode::UnknownServerError
                    } else {
                        top
                    }
                }
            };
            let p = self.parts.get_mut(tp).expect("partition");
            if error == ErrorCode::OffsetOutOfRange {
                p.state = PosState::Reset; // auto.offset.reset=earliest
            } else {
                p.retry_at = now.plus_millis(self.cfg.retry_backoff_ms);
                self.meta.request_update();
            }
        }
    }

    /// Kafka's `CompletedFetch`: returns records ≥ the position, skipping control batches and
    /// (read_committed) aborted transactions.
    fn consume(&mut self, tp: &TopicPartition, r: FetchPartitionResponse) {
        let read_committed = self.cfg.read_committed;
        let mut aborted: Vec<_> = if read_committed {
            r.aborted_transactions.unwrap_or_default()
        } else {
            Vec::new()
        };
        aborted.sort_by_key(|a| (a.first_offset, a.producer_id));
        let mut aborted = aborted.into_iter().peekable();
        let mut aborted_pids: BTreeSet<ProducerId> = BTreeSet::new();
        let client = self.cfg.client;
        let p = self.parts.get_mut(tp).expect("partition");
        let mut events = Vec::new();
        for batch in r.batches {
            if batch.next_offset() <= p.position {
                continue;
            }
            if read_committed && batch.producer_id().is_some() {
                while let Some(a) = aborted.next_if(|a| a.first_offset <= batch.last_offset()) {
                    aborted_pids.insert(a.producer_id);
                }
                let is_abort_marker = batch.is_control_batch()
                    && matches!(
                        batch.control_record(),
                        Some(ControlRecord::EndTxn { commit: false, .. })
                    );
                if is_abort_marker {
                    aborted_pids.remove(&batch.producer_id());
                } else if batch.is_transactional() && aborted_pids.contains(&batch.producer_id()) {
                    p.position = batch.next_offset();
                    continue;
                }
            }
            if batch.is_control_batch() {
                p.position = batch.next_offset();
                continue;
            }
            let base = batch.base_offset();
            for rec in batch.records() {
                let offset = base.plus(i64::from(rec.offset_delta));
                if offset < p.position {
                    continue;
                }
                events.push(Event::Consumed {
                    client,
                    tp: tp.clone(),
                    offset,
                    value: rec.value.unwrap_or_else(Bytes::new),
                    read_committed,
                });
                p.epoch = Some(batch.partition_leader_epoch());
                p.position = offset.plus(1);
            }
            p.position = p.position.max(batch.next_offset());
        }
        for e in events {
            self.wire.emit(e);
        }
    }

    fn next_timer(&self) -> Option<Instant> {
        if !self.started || (self.stop_requested && self.life == Life::Running) {
            return Some(Instant::ZERO);
        }
        if self.life != Life::Running {
            return self.wire.next_deadline();
        }
        let mut t: Vec<Instant> = Vec::new();
        t.extend(self.wire.next_deadline());
        t.extend(self.meta.next_timer());
        if self.cfg.group.is_some() {
            if self.coordinator.is_none() && !self.coordinator_lookup {
                t.push(self.coordinator_retry_at);
            }
            if self.coordinator.is_some() {
                t.push(self.next_heartbeat.max(self.coordinator_retry_at));
                if self.joined {
                    t.push(self.next_commit.max(self.coordinator_retry_at));
                }
            }
        }
        for p in self.parts.values() {
            if matches!(p.state, PosState::Reset | PosState::Fetchable) && !p.fetching {
                t.push(p.retry_at);
            }
        }
        // Everything due at the last step was done then; only later instants can help.
        let floor = self.last_step;
        t.into_iter().filter(|x| floor.is_none_or(|f| *x > f)).min()
    }
}

fn error_of(resp: Option<&Response>) -> ErrorCode {
    match resp {
        None => ErrorCode::RequestTimedOut,
        Some(Response::Error { error }) => *error,
        Some(Response::OffsetFetch { error, .. }) => *error,
        Some(Response::FindCoordinator { error, .. }) => *error,
        Some(Response::PartitionErrors { results }) => results
            .iter()
            .map(|(_, e)| *e)
            .find(|e| !e.is_ok())
            .unwrap_or(ErrorCode::None),
        Some(_) => ErrorCode::UnknownServerError,
    }
}

impl Node for Consumer {
    fn handle_message(&mut self, now: Instant, from: NodeId, id: CorrelationId, message: Message) {
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
