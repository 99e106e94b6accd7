//! The replica fetcher (Kafka: `ReplicaFetcherThread` / `AbstractFetcherThread`): one fetch
//! session per leader broker, truncate-on-fetch with `LastFetchedEpoch` (KIP-595 / IBP 2.7+),
//! OFFSET_OUT_OF_RANGE handling through ListOffsets, back-off on errors.

use super::broker::{Broker, Pending};
use super::fetch_session::{SentPartition, SessionHandler};
use super::output::{Event, TruncationCause};
use super::partition::Partition;
use super::timers::TimerId;
use crate::keyed_map::PartitionMap;
use crate::protocol::messages::{FetchPartitionResponse, ListOffsetsPartitionResponse, OffsetSpec};
use crate::protocol::{ErrorCode, Request};
use crate::replication::fetch_follower::{
    FetchErrorAction, FollowerFetchState, OutOfRangeAction, classify_fetch_error,
    mirror_follower_out_of_range_action, reset_offset_after_out_of_range, truncation_offset,
};
use crate::replication::fetch_leader::FetchIsolation;
use crate::time::Instant;
use crate::types::{BrokerId, LeaderEpoch, Offset, TopicPartition};

/// A partition's fetch state inside a fetcher.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FetchPart {
    /// Truncating or fetching, with the offset and last fetched epoch.
    pub state: FollowerFetchState,
    /// The leader epoch this replica follows (sent as `currentLeaderEpoch`).
    pub current_leader_epoch: LeaderEpoch,
    /// Not fetched before this time (error back-off).
    pub delayed_until: Option<Instant>,
    /// Waiting for a ListOffsets answer after OFFSET_OUT_OF_RANGE.
    pub resetting: bool,
    /// For observers: the HW in the leader's last answer for this partition, applied or
    /// not (a divergence, an answer to an overtaken request or a failed append leaves it
    /// unapplied, and KIP-227's session does not tell it again until it moves).
    pub told_high_watermark: Option<Offset>,
}

impl FetchPart {
    /// A part starting in `state`.
    #[must_use]
    pub fn new(state: FollowerFetchState, current_leader_epoch: LeaderEpoch) -> Self {
        Self {
            state,
            current_leader_epoch,
            delayed_until: None,
            resetting: false,
            told_high_watermark: None,
        }
    }
}

/// The fetcher for one leader.
#[derive(Clone, Debug, Default)]
pub struct Fetcher {
    /// Partitions fetched from this leader.
    pub partitions: PartitionMap<FetchPart>,
    /// The outstanding fetch, if any.
    pub in_flight: bool,
    /// KIP-227: the fetch session with this leader.
    pub session: SessionHandler,
}

impl Broker {
    pub(super) fn add_to_fetcher(&mut self, leader: BrokerId, tp: TopicPartition, part: FetchPart) {
        self.fetchers
            .get_or_insert_with(leader, Fetcher::default)
            .partitions
            .insert(tp, part);
        self.maybe_send_fetch(leader);
    }

    pub(super) fn remove_from_fetchers(&mut self, tp: &TopicPartition) {
        for f in self.fetchers.values_mut() {
            f.partitions.remove(tp);
        }
    }

    /// KIP-227, for observers: the HW this leader's fetch session with `follower` last
    /// told it for `tp`.
    #[must_use]
    pub fn fetch_session_told_hw(&self, follower: BrokerId, tp: &TopicPartition) -> Option<Offset> {
        self.fetch_sessions.told_high_watermark(follower, tp)
    }

    /// The fetcher states (for checkers and tests).
    #[must_use]
    pub fn fetch_state(&self, tp: &TopicPartition) -> Option<(BrokerId, &FetchPart)> {
        self.fetchers
            .iter()
            .find_map(|(l, f)| f.partitions.get(tp).map(|p| (*l, p)))
    }

    /// Sends the next fetch to `leader` if none is outstanding and a partition is ready.
    pub(super) fn maybe_send_fetch(&mut self, leader: BrokerId) {
        let now = self.now;
        let Some(f) = self.fetchers.get_mut(&leader) else {
            return;
        };
        if f.in_flight {
            return;
        }
        // Partitions still in Truncating (no epoch information) truncate to the HW first.
        let truncating: Vec<TopicPartition> = f
            .partitions
            .iter()
            .filter(|(_, p)| matches!(p.state, FollowerFetchState::Truncating { .. }))
            .map(|(tp, _)| tp.clone())
            .collect();
        for tp in truncating {
            self.truncate_to_high_watermark(leader, &tp);
        }
        let replicas = &self.partitions;
        let Some(f) = self.fetchers.get_mut(&leader) else {
            return;
        };
        let mut next_wake: Option<Instant> = None;
        let wanted = f.partitions.iter().filter_map(|(tp, part)| {
            if part.resetting {
                return None;
            }
            if let Some(d) = part.delayed_until
                && d > now
            {
                next_wake = Some(next_wake.map_or(d, |w| w.min(d)));
                return None;
            }
            let FollowerFetchState::Fetching {
                fetch_offset,
                last_fetched_epoch,
            } = part.state
            else {
                return None;
            };
            let log_start_offset = replicas
                .get(tp)
                .map_or(Offset(0), |p| p.log.log_start_offset());
            Some((
                tp,
                SentPartition {
                    fetch_offset,
                    current_leader_epoch: part.current_leader_epoch,
                    last_fetched_epoch,
                    log_start_offset,
                },
            ))
        });
        let build = f.session.build(wanted);
        if let Some(w) = next_wake {
            self.timers.set_if_earlier(TimerId::FetchBackoff(leader), w);
        }
        // Kafka `buildFetch`: no request when the session is empty and forgets nothing. A
        // request that only forgets (every partition backing off or gone) still goes: the
        // leader closes the emptied session, and the next fetch is a full one.
        if f.session.is_empty() && build.forgotten.is_empty() {
            return;
        }
        f.in_flight = true;
        let req = Request::Fetch {
            replica: Some((self.config.broker_id, self.broker_epoch)),
            max_wait_ms: self.config.replica_fetch_wait_max_ms,
            min_bytes: 1,
            max_bytes: self.config.replica_fetch_max_bytes,
            isolation: FetchIsolation::LogEnd,
            partitions: build.partitions,
            session: build.meta,
            forgotten: build.forgotten,
        };
        let to = self.broker_node(leader);
        let wait = self.config.replica_fetch_wait_max_ms;
        self.send_request(to, req, Pending::Fetch { leader }, wait);
    }

    fn truncate_to_high_watermark(&mut self, leader: BrokerId, tp: &TopicPartition) {
        let Some(p) = self.partitions.get_mut(tp) else {
            return;
        };
        let hw = p.log.high_watermark();
        self.truncate_replica(tp, hw, TruncationCause::HighWatermark);
        let p = &self.partitions[tp];
        let state = p.fetching_from_log_end();
        if let Some(part) = self
            .fetchers
            .get_mut(&leader)
            .and_then(|f| f.partitions.get_mut(tp))
        {
            part.state = state;
        }
    }

    /// Truncates a replica's log and files, reporting it.
    pub(super) fn truncate_replica(
        &mut self,
        tp: &TopicPartition,
        to: Offset,
        cause: TruncationCause,
    ) {
        let Some(p) = self.partitions.get_mut(tp) else {
            return;
        };
        if to.0 >= 0 && to < p.log.log_end_offset() && p.log.truncation_restarts_log(to) {
            // Kafka `UnifiedLog.truncateTo`: a target below the first segment is
            // `truncateFullyAndStartAt`, which deletes every segment and producer snapshot.
            // Truncating the files alone kept the old producer snapshot, which a restart
            // then replayed under the new history (mirror chaos seed 6872: a transaction
            // of the old source's history left open, so the copied history's next
            // non-transactional batch failed to append forever).
            self.truncate_replica_fully(tp, to, cause);
            return;
        }
        let from = p.log.log_end_offset();
        let hw_before = p.log.high_watermark();
        let log_start_before = p.log.log_start_offset();
        let cache_before = p.log.epoch_cache().epoch_entries().to_vec();
        let Ok(changed) = p.log.truncate_to(to) else {
            return;
        };
        let mut io = Vec::new();
        if changed {
            p.files.truncate_to(p.log.log_end_offset(), &mut io);
        }
        if changed && to <= log_start_before {
            // A cut at or below the log start restarts the producer state there
            // (`PartitionLog::truncate_to`, Kafka `truncateAndReload` deleting the snapshots
            // at or below the log start); the snapshot on disk says the same.
            p.files.write_producer_snapshot(
                crate::log::producer_snapshot::encode(p.log.producer_state_base()),
                &mut io,
            );
        }
        if p.log.epoch_cache().epoch_entries() != cache_before.as_slice() {
            p.files
                .write_epoch_checkpoint(p.log.epoch_cache().epoch_entries(), &mut io);
        }
        let to = p.log.log_end_offset();
        // Only KIP-1279 truncates a leader's log (LME alignment, mirror divergence, LSO cut
        // at stop).
        p.on_leader_log_truncated();
        let leads = p.is_leader();
        self.io(io);
        if leads && changed {
            self.fail_produces_cut_by_truncation(tp, to);
        }
        if changed {
            // Kafka `LogManager.truncateTo` checkpoints the lowered recovery point at once.
            self.write_recovery_point_checkpoint();
            self.emit(Event::Truncated {
                tp: tp.clone(),
                from,
                to,
                high_watermark_before: hw_before,
                cause,
            });
        }
    }

    /// The `TestTruncateLog` hook: Kafka's tests calling `UnifiedLog.truncateTo(offset)` on
    /// this broker's replica. As `truncateTo`: a no-op at or above the LEO, a restart of the
    /// log at `offset` when it lies below the first batch (`truncateFullyAndStartAt`), else
    /// the batches from `offset` on go. A fetcher that fetches this replica (as a follower or
    /// a mirror leader) continues from the new log end.
    pub(super) fn test_truncate_log(&mut self, tp: &TopicPartition, offset: Offset) -> ErrorCode {
        let Some(p) = self.partitions.get(tp) else {
            return ErrorCode::UnknownTopicOrPartition;
        };
        if offset.0 < 0 {
            return ErrorCode::InvalidRequest;
        }
        if offset >= p.log.log_end_offset() {
            return ErrorCode::None;
        }
        self.truncate_replica(tp, offset, TruncationCause::TestHook);
        let p = &self.partitions[tp];
        let (state, leo, epoch) = (
            p.fetching_from_log_end(),
            p.log.log_end_offset(),
            p.log.latest_epoch(),
        );
        for f in self.fetchers.values_mut() {
            if let Some(part) = f.partitions.get_mut(tp) {
                part.state = state;
            }
        }
        if let Some(part) = self.mirror_fetch.parts.get_mut(tp) {
            part.fetch_offset = leo;
            part.last_fetched_epoch = epoch;
        }
        ErrorCode::None
    }

    /// Kafka `Partition.appendRecordsToFollowerOrFutureReplica` on
    /// `UnexpectedAppendOffsetException`: an empty log that starts inside the first fetched
    /// batch (the leader's log start fell mid-batch, e.g. DeleteRecords) restarts at that
    /// batch's base offset so the batch can be appended whole.
    pub(super) fn maybe_restart_at_first_batch(
        &mut self,
        tp: &TopicPartition,
        batches: &[crate::record::RecordBatch],
        cause: TruncationCause,
    ) {
        let Some(p) = self.partitions.get(tp) else {
            return;
        };
        let leo = p.log.log_end_offset();
        if leo != p.log.log_start_offset() || p.log.batch_count() != 0 {
            return;
        }
        if let Some(b) = batches.iter().find(|b| b.last_offset() >= leo)
            && b.base_offset() < leo
        {
            self.truncate_replica_fully(tp, b.base_offset(), cause);
        }
    }

    /// Empties a replica's log and restarts it at `start`.
    pub(super) fn truncate_replica_fully(
        &mut self,
        tp: &TopicPartition,
        start: Offset,
        cause: TruncationCause,
    ) {
        let Some(p) = self.partitions.get_mut(tp) else {
            return;
        };
        let from = p.log.log_end_offset();
        p.log.truncate_fully_and_start_at(start, None);
        if let super::partition::Role::Leader(l) = &mut p.role {
            l.leader_epoch_start_offset = start;
        }
        p.on_leader_log_truncated();
        let leads = p.is_leader();
        let mut io = Vec::new();
        p.files.truncate_fully(start, &mut io);
        p.files.write_epoch_checkpoint(&[], &mut io);
        p.files.write_producer_snapshot(
            crate::log::producer_snapshot::encode(p.log.producer_state_base()),
            &mut io,
        );
        self.io(io);
        if leads {
            // Every record it held is gone, whatever offset the new log starts at.
            self.fail_produces_cut_by_truncation(tp, Offset(-1));
        }
        // Kafka `LogManager.truncateFullyAndStartAt` checkpoints recovery points at once.
        self.write_recovery_point_checkpoint();
        self.emit(Event::TruncatedFully {
            tp: tp.clone(),
            from,
            start,
            cause,
        });
    }

    pub(super) fn on_fetch_response(
        &mut self,
        leader: BrokerId,
        error: ErrorCode,
        session_id: i32,
        partitions: Vec<FetchPartitionResponse>,
    ) {
        if let Some(f) = self.fetchers.get_mut(&leader) {
            f.in_flight = false;
            f.session.on_response(error, session_id);
        }
        if matches!(
            error,
            ErrorCode::FetchSessionIdNotFound | ErrorCode::InvalidFetchSessionEpoch
        ) {
            // Kafka: no partition is processed, and the next fetch (a full one) goes out
            // at once.
            self.maybe_send_fetch(leader);
            return;
        }
        if !error.is_ok() {
            self.on_fetch_failed(leader);
            return;
        }
        for resp in partitions {
            // The leader read each partition at what its session holds: what was last
            // sent for it.
            let Some(sent) = self
                .fetchers
                .get(&leader)
                .and_then(|f| f.session.sent(&resp.tp))
            else {
                continue;
            };
            self.on_fetch_partition(leader, sent.fetch_offset, sent.current_leader_epoch, resp);
        }
        self.maybe_send_fetch(leader);
    }

    fn part(&self, leader: BrokerId, tp: &TopicPartition) -> Option<&FetchPart> {
        self.fetchers
            .get(&leader)
            .and_then(|f| f.partitions.get(tp))
    }

    fn part_mut(&mut self, leader: BrokerId, tp: &TopicPartition) -> Option<&mut FetchPart> {
        self.fetchers
            .get_mut(&leader)
            .and_then(|f| f.partitions.get_mut(tp))
    }

    fn on_fetch_partition(
        &mut self,
        leader: BrokerId,
        req_offset: Offset,
        req_epoch: LeaderEpoch,
        resp: FetchPartitionResponse,
    ) {
        if resp.error.is_ok() && resp.diverging_epoch.is_none() && resp.batches.is_empty() {
            self.process_fetch_offsets(leader, req_offset, req_epoch, &resp);
            return;
        }
        let tp = resp.tp.clone();
        // Kafka: a response for a stale request (fetch offset or epoch moved) is ignored.
        let backoff = self.now.plus_millis(self.config.replica_fetch_backoff_ms);
        let Some(part) = self.part_mut(leader, &tp) else {
            return;
        };
        part.told_high_watermark = Some(resp.high_watermark);
        if part.state.fetch_offset() != req_offset || part.current_leader_epoch != req_epoch {
            return;
        }
        match classify_fetch_error(resp.error, req_epoch, part.current_leader_epoch) {
            FetchErrorAction::Process => self.process_fetch_data(leader, req_epoch, resp),
            FetchErrorAction::ResetOffset => self.start_reset(leader, &tp),
            FetchErrorAction::RemoveAndMarkFailed => {
                // Fenced in our own epoch: wait for new metadata.
                if let Some(f) = self.fetchers.get_mut(&leader) {
                    f.partitions.remove(&tp);
                }
            }
            FetchErrorAction::BackoffAndRetry => {
                if let Some(p) = self.part_mut(leader, &tp) {
                    p.delayed_until = Some(backoff);
                }
                self.timers
                    .set_if_earlier(TimerId::FetchBackoff(leader), backoff);
            }
        }
    }

    /// [`Self::on_fetch_partition`] for an answer without an error, a divergence or a batch
    /// (most partitions of a follower's fetch: it names every partition it follows): the
    /// leader's HW and log start only. The steps of the general path (`process_fetch_data`
    /// with no batch), with one look-up in each map instead of three.
    fn process_fetch_offsets(
        &mut self,
        leader: BrokerId,
        req_offset: Offset,
        req_epoch: LeaderEpoch,
        resp: &FetchPartitionResponse,
    ) {
        let tp = &resp.tp;
        let Some(part) = self
            .fetchers
            .get_mut(&leader)
            .and_then(|f| f.partitions.get_mut(tp))
        else {
            return;
        };
        part.told_high_watermark = Some(resp.high_watermark);
        // Kafka: a response for a stale request (fetch offset or epoch moved) is ignored.
        if part.state.fetch_offset() != req_offset || part.current_leader_epoch != req_epoch {
            return;
        }
        let Some(p) = self.partitions.get_mut(tp) else {
            return;
        };
        let hw_before = p.log.high_watermark();
        let (new_hw, ls_moved) = take_leader_offsets(p, resp);
        // Before the steps below, which queue outputs and never read the fetch state.
        part.state = p.fetching_from_log_end();
        if let Some(hw) = new_hw.filter(|h| *h != hw_before) {
            self.emit(Event::HighWatermarkChanged {
                tp: tp.clone(),
                high_watermark: hw,
            });
        }
        if ls_moved {
            self.after_log_start_moved(tp);
        }
    }

    fn process_fetch_data(
        &mut self,
        leader: BrokerId,
        req_epoch: LeaderEpoch,
        resp: FetchPartitionResponse,
    ) {
        let tp = resp.tp.clone();
        if let Some(div) = resp.diverging_epoch {
            // Kafka truncateOnFetchResponse: records, HW and log start are not applied.
            let Some(p) = self.partitions.get(&tp) else {
                return;
            };
            let fetch_offset = self
                .part(leader, &tp)
                .map_or(p.log.log_end_offset(), |x| x.state.fetch_offset());
            let ts = truncation_offset(
                div,
                p.log.epoch_cache(),
                p.log.log_end_offset(),
                fetch_offset,
            );
            self.truncate_replica(&tp, ts.offset, TruncationCause::DivergingEpoch);
            let p = &self.partitions[&tp];
            let state = p.fetching_from_log_end();
            if let Some(part) = self.part_mut(leader, &tp) {
                part.state = state;
            }
            return;
        }
        if !resp.batches.is_empty() {
            self.maybe_restart_at_first_batch(
                &tp,
                &resp.batches,
                TruncationCause::BelowLeaderLogStart,
            );
        }
        let segment_bytes = self.config.segment_bytes;
        // Only an append reads it (a fetch response is mostly partitions with no new batch).
        let is_mirror = !resp.batches.is_empty() && self.mirror_membership(&tp.topic).is_some();
        let Some(p) = self.partitions.get_mut(&tp) else {
            return;
        };
        let mut io = Vec::new();
        let mut events = Vec::new();
        let mut refused = None;
        for b in &resp.batches {
            if b.last_offset() < p.log.log_end_offset() {
                continue; // the first batch may start below our fetch offset
            }
            let cache_before = p.log.epoch_cache().latest_entry();
            // Mirror partitions hold source epochs that may exceed the destination leader's
            // epoch (seed has no DLE >= SLE rule), so KAFKA-18723's bound cannot apply there.
            let bound = (!is_mirror).then_some(req_epoch);
            match p.log.append_as_follower(b, bound) {
                Ok(_) => {
                    p.files.append(b, segment_bytes, &mut io);
                    if p.log.epoch_cache().latest_entry() != cache_before {
                        p.files
                            .write_epoch_checkpoint(p.log.epoch_cache().epoch_entries(), &mut io);
                    }
                    events.push(Event::Appended {
                        tp: tp.clone(),
                        base_offset: b.base_offset(),
                        last_offset: b.last_offset(),
                        epoch: b.partition_leader_epoch(),
                        as_leader: false,
                    });
                }
                Err(e) => {
                    refused = Some(e);
                    break;
                }
            }
        }
        let hw_before = p.log.high_watermark();
        // Kafka `ReplicaFetcherThread.processPartitionData`: the append throws (e.g.
        // `UnexpectedAppendOffsetException`) before `maybeUpdateHighWatermark` and the log
        // start update, so a failed append takes neither the leader's HW nor its log start.
        // Taking the HW anyway put it over records the leader does not hold (seed 486).
        let (new_hw, ls_moved) = if refused.is_some() {
            (None, false)
        } else {
            take_leader_offsets(p, &resp)
        };
        let state = p.fetching_from_log_end();
        self.io(io);
        self.emit_all(events);
        if let Some(hw) = new_hw.filter(|h| *h != hw_before) {
            self.emit(Event::HighWatermarkChanged {
                tp: tp.clone(),
                high_watermark: hw,
            });
        }
        if ls_moved {
            self.after_log_start_moved(&tp);
        }
        if let Some(e) = refused.as_ref().filter(|e| marks_partition_failed(e)) {
            self.remove_from_fetchers(&tp);
            self.emit(Event::FetchPartitionFailed {
                log_end_offset: state.fetch_offset(),
                reason: e.to_string(),
                tp,
                leader,
            });
            return;
        }
        let backoff = self.now.plus_millis(self.config.replica_fetch_backoff_ms);
        if let Some(part) = self.part_mut(leader, &tp) {
            part.state = state;
            if refused.is_some() {
                part.delayed_until = Some(backoff);
            }
        }
        if refused.is_some() {
            self.timers
                .set_if_earlier(TimerId::FetchBackoff(leader), backoff);
        }
    }

    pub(super) fn on_fetch_failed(&mut self, leader: BrokerId) {
        let backoff = self.now.plus_millis(self.config.replica_fetch_backoff_ms);
        if let Some(f) = self.fetchers.get_mut(&leader) {
            f.in_flight = false;
            f.session.on_error();
            for p in f.partitions.values_mut() {
                p.delayed_until = Some(backoff);
            }
        }
        self.timers
            .set_if_earlier(TimerId::FetchBackoff(leader), backoff);
    }

    /// OFFSET_OUT_OF_RANGE: ask the leader for its log start and end (Kafka:
    /// `fetchOffsetAndTruncate` with ListOffsets EARLIEST / LATEST).
    fn start_reset(&mut self, leader: BrokerId, tp: &TopicPartition) {
        let Some(part) = self.part_mut(leader, tp) else {
            return;
        };
        part.resetting = true;
        let epoch = part.current_leader_epoch;
        let req = Request::ListOffsets {
            replica_id: Some(self.config.broker_id),
            isolation: FetchIsolation::LogEnd,
            partitions: vec![
                (tp.clone(), Some(epoch), OffsetSpec::Latest),
                (tp.clone(), Some(epoch), OffsetSpec::Earliest),
            ],
        };
        let to = self.broker_node(leader);
        self.send_request(
            to,
            req,
            Pending::ResetOffset {
                leader,
                tp: tp.clone(),
            },
            0,
        );
    }

    pub(super) fn on_reset_response(
        &mut self,
        leader: BrokerId,
        tp: &TopicPartition,
        partitions: Vec<ListOffsetsPartitionResponse>,
    ) {
        let latest = partitions
            .first()
            .filter(|p| p.error.is_ok())
            .map(|p| p.offset);
        let earliest = partitions
            .get(1)
            .filter(|p| p.error.is_ok())
            .map(|p| p.offset);
        let (Some(leader_end), Some(leader_start)) = (latest, earliest) else {
            self.on_reset_failed(leader, tp);
            return;
        };
        let Some((local_end, epoch_before)) = self
            .partitions
            .get(tp)
            .map(|p| (p.log.log_end_offset(), p.log.latest_epoch()))
        else {
            return;
        };
        let mut action = reset_offset_after_out_of_range(leader_end, leader_start, local_end);
        // A mirror partition whose leader assigns no epoch of its own (desired state not
        // STOPPED): see `mirror_follower_out_of_range_action` (mirror chaos seed 135).
        if !self.assign_epoch_start_on_leadership(tp) {
            action = mirror_follower_out_of_range_action(action);
        }
        match action {
            OutOfRangeAction::TruncateTo(o) => {
                self.truncate_replica(tp, o, TruncationCause::LeaderEndBelowLocal);
            }
            OutOfRangeAction::TruncateFullyAndStartAt(o) => {
                self.truncate_replica_fully(tp, o, TruncationCause::BelowLeaderLogStart);
            }
            OutOfRangeAction::FetchFrom(_) => {}
        }
        let Some(p) = self.partitions.get(tp) else {
            return;
        };
        let state = p.fetching_from_log_end();
        // The reset changed nothing (same fetch offset, same last fetched epoch): the next
        // fetch would get the same OFFSET_OUT_OF_RANGE. Back off as on any fetch error
        // (`replica.fetch.backoff.ms`) instead of spinning fetch → ListOffsets → fetch.
        let stuck = p.log.log_end_offset() == local_end && p.log.latest_epoch() == epoch_before;
        let backoff = self.now.plus_millis(self.config.replica_fetch_backoff_ms);
        if let Some(part) = self.part_mut(leader, tp) {
            part.state = state;
            part.resetting = false;
            if stuck {
                part.delayed_until = Some(backoff);
            }
        }
        if stuck {
            self.timers
                .set_if_earlier(TimerId::FetchBackoff(leader), backoff);
        }
        self.maybe_send_fetch(leader);
    }

    pub(super) fn on_reset_failed(&mut self, leader: BrokerId, tp: &TopicPartition) {
        let backoff = self.now.plus_millis(self.config.replica_fetch_backoff_ms);
        if let Some(part) = self.part_mut(leader, tp) {
            part.resetting = false;
            part.delayed_until = Some(backoff);
        }
        self.timers
            .set_if_earlier(TimerId::FetchBackoff(leader), backoff);
    }
}

/// A follower takes the leader's HW, then its log start (capped at the new HW) from a fetch
/// answer (Kafka `ReplicaFetcherThread.processPartitionData`): the new HW if it moved, and
/// whether the log start moved.
fn take_leader_offsets(p: &mut Partition, resp: &FetchPartitionResponse) -> (Option<Offset>, bool) {
    let new_hw = p.log.maybe_update_high_watermark(resp.high_watermark);
    let ls_target = resp.log_start_offset.min(p.log.high_watermark());
    let ls_moved = p
        .log
        .maybe_increment_log_start_offset(ls_target)
        .unwrap_or(false);
    (new_hw, ls_moved)
}

/// Whether a refused follower append stops fetching the partition until its next leader
/// epoch (Kafka `AbstractFetcherThread.processFetchRequest`: `CorruptRecordException` and
/// `InvalidRecordException`, which KAFKA-18723's epoch bound throws, back off and retry;
/// any other exception, e.g. `UnexpectedAppendOffsetException`, runs `markPartitionFailed`).
fn marks_partition_failed(e: &crate::log::partition_log::AppendError) -> bool {
    use crate::log::partition_log::AppendError;
    !matches!(
        e,
        AppendError::InvalidBatch(_) | AppendError::EpochAboveLeader { .. }
    )
}

#[cfg(test)]
mod marks_partition_failed_tests {
    use super::marks_partition_failed;
    use crate::log::partition_log::AppendError;
    use crate::record::codec::BatchError;
    use crate::types::{LeaderEpoch, Offset};

    #[test]
    fn only_a_corrupt_or_invalid_record_is_retried() {
        // Kafka catches CorruptRecordException and InvalidRecordException (KAFKA-18723's
        // epoch bound throws the latter) and retries after a back-off; anything else marks
        // the partition failed.
        let retried = [
            AppendError::InvalidBatch(BatchError::UnsupportedMagic(1)),
            AppendError::EpochAboveLeader {
                batch_epoch: LeaderEpoch(3),
                leader_epoch: LeaderEpoch(2),
            },
        ];
        assert!(retried.iter().all(|e| !marks_partition_failed(e)));
        let failed = [
            AppendError::OffsetMismatch {
                expected: Offset(5),
                got: Offset(0),
            },
            AppendError::InvalidEpoch(LeaderEpoch(-2)),
        ];
        assert!(failed.iter().all(marks_partition_failed));
    }
}
