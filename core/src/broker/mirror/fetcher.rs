//! The mirror fetcher (KIP-1279 A.1 MIRRORING; prototype `MirrorFetcherThread`): consumer
//! fetches (read_uncommitted, bounded by the source HW) to the source partition leaders,
//! always with `LastFetchedEpoch`; batches are appended unchanged (source epochs kept);
//! a diverging epoch is handled by truncating like a follower; OFFSET_OUT_OF_RANGE below the
//! source log start restarts the log there; the destination log start follows the source.

use std::collections::{BTreeMap, BTreeSet};

use crate::broker::broker::{Broker, Pending};
use crate::broker::output::{Event, TruncationCause};
use crate::broker::timers::TimerId;
use crate::keyed_map::PartitionMap;
use crate::mirror::{
    DIVERGENCE_FAILED_MESSAGE, DivergenceAction, MirrorPartitionState as S, MirrorPartitionStatus,
};
use crate::protocol::messages::{FetchPartition, FetchPartitionResponse};
use crate::protocol::{ClusterIdx, ErrorCode, NodeId, Request, Response};
use crate::replication::fetch_follower::truncation_offset;
use crate::time::Instant;
use crate::types::{BrokerId, LeaderEpoch, Offset, TopicPartition};

/// One partition being mirrored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MirrorFetchPart {
    /// Next offset to fetch (our LEO).
    pub fetch_offset: Offset,
    /// Epoch of the last batch we hold (`LastFetchedEpoch`).
    pub last_fetched_epoch: Option<LeaderEpoch>,
    /// Not fetched before this time.
    pub delayed_until: Option<Instant>,
    /// In the outstanding fetch.
    pub in_flight: bool,
    /// The source high watermark of the last answer without an error (the prototype
    /// fetcher's `updateMirrorOffsetInfo`; DescribeMirrors' `SourceOffset`).
    pub source_high_watermark: Option<Offset>,
}

/// Mirror fetch bookkeeping of one broker.
#[derive(Clone, Debug, Default)]
pub struct MirrorFetchState {
    /// Partitions being mirrored.
    pub parts: PartitionMap<MirrorFetchPart>,
    /// Known source leaders: `(cluster, leader, leader epoch)`.
    pub source_leaders: BTreeMap<TopicPartition, (ClusterIdx, BrokerId, LeaderEpoch)>,
    /// Sessions with a fetch in flight.
    pub busy: BTreeSet<(ClusterIdx, BrokerId)>,
    /// Mirrors whose source metadata is being refreshed.
    pub refreshing: BTreeSet<String>,
    /// Rotates the bootstrap broker.
    pub bootstrap_cursor: usize,
    /// Source brokers whose last request from us timed out, with the time it did, until one
    /// answers again. Kafka's `NetworkClient` disconnects a node on a request timeout and
    /// `leastLoadedNode` picks another for the metadata refresh that the disconnect asks for;
    /// without this a refresh rotates back onto a dead broker and waits out another request
    /// timeout (mirror chaos seed 9730: one isolated source broker held a failback past the
    /// liveness bound).
    pub unreachable: BTreeMap<(ClusterIdx, BrokerId), Instant>,
    /// "Unknown topic" answers per topic: `(first broker, first time)`. A deletion needs a
    /// second answer from another broker at least 5 s later (the prototype needs two
    /// observations; a broker still catching up on metadata must not fail a mirror).
    pub missing: BTreeMap<String, (BrokerId, Instant)>,
    /// Partitions whose fetch in flight was sent on a connection closed since (a mirror
    /// config change, `reconnect`): its answer is dropped when it comes.
    pub closed: BTreeSet<TopicPartition>,
}

impl Broker {
    /// The mirror fetcher's bookkeeping (for tests and checkers).
    #[must_use]
    pub fn mirror_fetch_state(&self) -> &MirrorFetchState {
        &self.mirror_fetch
    }

    /// Starts (or keeps) mirroring `tp` from the local LEO.
    pub(in crate::broker) fn add_to_mirror_fetcher(&mut self, tp: &TopicPartition) {
        let Some(p) = self.partitions.get(tp) else {
            return;
        };
        let part = MirrorFetchPart {
            fetch_offset: p.log.log_end_offset(),
            last_fetched_epoch: p.log.latest_epoch(),
            delayed_until: None,
            in_flight: false,
            source_high_watermark: None,
        };
        self.mirror_fetch.parts.get_or_insert_with(tp, || part);
        if !self.mirror_fetch.source_leaders.contains_key(tp)
            && let Some(m) = self.mirror_runs.get(tp).map(|r| r.mirror.clone())
        {
            self.refresh_source_metadata(&m);
        }
        self.maybe_send_mirror_fetches();
    }

    /// Stops mirroring `tp` (a response in flight for it is ignored).
    pub(in crate::broker) fn remove_from_mirror_fetcher(&mut self, tp: &TopicPartition) {
        self.mirror_fetch.parts.remove(tp);
    }

    /// Asks a source broker for the leaders of the mirror's topics.
    pub(in crate::broker) fn refresh_source_metadata(&mut self, mirror: &str) {
        if self.mirror_fetch.refreshing.contains(mirror) {
            return;
        }
        let Some((cluster, brokers)) = self.mirror_source(mirror) else {
            return;
        };
        if brokers.is_empty() {
            return;
        }
        let topics: BTreeSet<String> = self
            .mirror_runs
            .iter()
            .filter(|(_, r)| r.mirror == mirror)
            .map(|(tp, _)| tp.topic.to_string())
            .collect();
        let b = self.pick_source_broker(cluster, &brokers);
        self.mirror_fetch.refreshing.insert(mirror.to_string());
        let req = Request::Metadata {
            topics: Some(topics.into_iter().collect()),
        };
        self.send_request(
            NodeId::broker(cluster, b),
            req,
            Pending::SourceMetadata(mirror.to_string(), b),
            0,
        );
    }

    /// The bootstrap broker for a metadata refresh (Kafka `leastLoadedNode`): the next one in
    /// rotation that has not timed out on us since it last answered; when every one has, the
    /// one that timed out longest ago.
    fn pick_source_broker(&mut self, cluster: ClusterIdx, brokers: &[BrokerId]) -> BrokerId {
        let n = brokers.len();
        let start = self.mirror_fetch.bootstrap_cursor;
        self.mirror_fetch.bootstrap_cursor += 1;
        let unreachable = &self.mirror_fetch.unreachable;
        (0..n)
            .map(|i| brokers[(start + i) % n])
            .find(|b| !unreachable.contains_key(&(cluster, *b)))
            .unwrap_or_else(|| {
                *brokers
                    .iter()
                    .min_by_key(|b| unreachable.get(&(cluster, **b)))
                    .expect("brokers_not_empty")
            })
    }

    /// A request to a source broker timed out: until it answers again, metadata refreshes
    /// go elsewhere, and every partition whose cached leader it is rediscovers its leader
    /// (Kafka: a disconnect requests a metadata update for the node's partitions).
    ///
    /// In the latest design the cached leaders stay: the prototype's mirror cache keeps the
    /// last source leader it learned (`MirrorFetcherThread.updateSourceClusterLeader` only
    /// replaces it with a newer one), so a FAILED partition's retry fetches from it again and
    /// fails again while the source is down (see [`Self::on_mirror_fetch_unanswered`]).
    fn on_source_broker_timeout(&mut self, cluster: ClusterIdx, broker: BrokerId) {
        self.mirror_fetch
            .unreachable
            .insert((cluster, broker), self.now);
        if self.mirror_design().mirror_fetch_error_fails_partitions() {
            return;
        }
        self.mirror_fetch
            .source_leaders
            .retain(|_, (c, l, _)| (*c, *l) != (cluster, broker));
    }

    pub(in crate::broker) fn on_source_metadata(
        &mut self,
        mirror: &str,
        from_broker: BrokerId,
        resp: Option<Response>,
    ) {
        self.mirror_fetch.refreshing.remove(mirror);
        let Some((cluster, _)) = self.mirror_source(mirror) else {
            return;
        };
        let Some(Response::Metadata { topics, .. }) = resp else {
            if resp.is_none() {
                self.on_source_broker_timeout(cluster, from_broker);
            }
            self.mirror_retry_later_ms(1_000);
            return;
        };
        self.mirror_fetch
            .unreachable
            .remove(&(cluster, from_broker));
        for t in topics {
            if t.error == ErrorCode::UnknownTopicOrPartition {
                let (first_broker, first_at) = *self
                    .mirror_fetch
                    .missing
                    .entry(t.name.clone())
                    .or_insert((from_broker, self.now));
                if first_broker != from_broker && self.now.millis_since(first_at) >= 5_000 {
                    self.fail_source_topic_deleted(&t.name);
                }
                continue;
            }
            self.mirror_fetch.missing.remove(&t.name);
            // The destination topic carries the source topic's id (StartMirrorTopics creates
            // it with that id). A different id under the same name is a new topic: the old one
            // was deleted and re-created, and its records must never be appended after the old
            // topic's (scenarios S9). Non-retryable, like a deleted source topic.
            let recreated = self
                .mirror_runs
                .iter()
                .any(|(tp, r)| tp.topic.as_ref() == t.name.as_str() && r.topic_id != t.topic_id);
            if recreated {
                self.fail_source_topic(
                    &t.name,
                    "The source topic was re-created with a different topic id.",
                );
                continue;
            }
            for p in t.partitions {
                let tp = TopicPartition::new(t.name.as_str(), p.partition);
                match p.leader {
                    Some(l) => {
                        self.mirror_fetch
                            .source_leaders
                            .insert(tp, (cluster, l, p.leader_epoch));
                    }
                    None => {
                        self.mirror_fetch.source_leaders.remove(&tp);
                    }
                }
            }
        }
        self.maybe_send_mirror_fetches();
        self.mirror_retry_later_ms(1_000);
    }

    fn mirror_retry_later_ms(&mut self, ms: i64) {
        let at = self.now.plus_millis(ms);
        self.timers.set_if_earlier(TimerId::MirrorRetry, at);
    }

    /// A deleted source topic fails its partitions for good (A.2); the topic stays readable.
    fn fail_source_topic_deleted(&mut self, topic: &str) {
        self.fail_source_topic(topic, "The source topic is deleted.");
    }

    /// Fails the mirrored partitions of `topic` for good; the topic stays readable.
    fn fail_source_topic(&mut self, topic: &str, reason: &str) {
        let tps: Vec<TopicPartition> = self
            .mirror_runs
            .keys()
            .filter(|tp| tp.topic.as_ref() == topic)
            .cloned()
            .collect();
        for tp in tps {
            self.remove_from_mirror_fetcher(&tp);
            let state = self
                .mirror_runs
                .get(&tp)
                .map(super::manager::MirrorRun::state);
            if matches!(
                state,
                Some(S::Mirroring | S::Preparing | S::Paused | S::Pausing)
            ) {
                self.mirror_fail(&tp, reason);
            }
        }
    }

    /// Sends a fetch to every source leader with ready partitions and no fetch in flight.
    pub(in crate::broker) fn maybe_send_mirror_fetches(&mut self) {
        let now = self.now;
        let mut by_leader: BTreeMap<(ClusterIdx, BrokerId), Vec<FetchPartition>> = BTreeMap::new();
        let mut missing_meta: BTreeSet<String> = BTreeSet::new();
        let mut wake: Option<Instant> = None;
        for (tp, part) in &self.mirror_fetch.parts {
            if part.in_flight {
                continue;
            }
            if let Some(d) = part.delayed_until
                && d > now
            {
                wake = Some(wake.map_or(d, |w| w.min(d)));
                continue;
            }
            let Some(&(cluster, leader, epoch)) = self.mirror_fetch.source_leaders.get(tp) else {
                if let Some(r) = self.mirror_runs.get(tp) {
                    missing_meta.insert(r.mirror.clone());
                }
                continue;
            };
            if self.mirror_fetch.busy.contains(&(cluster, leader)) {
                continue;
            }
            // The destination topic has the source topic's id (StartMirrorTopics).
            let topic_id = self.mirror_runs.get(tp).map(|r| r.topic_id);
            by_leader
                .entry((cluster, leader))
                .or_default()
                .push(FetchPartition {
                    tp: tp.clone(),
                    fetch_offset: part.fetch_offset,
                    current_leader_epoch: Some(epoch),
                    last_fetched_epoch: part.last_fetched_epoch,
                    log_start_offset: Offset(-1),
                    topic_id,
                });
        }
        if let Some(w) = wake {
            self.timers.set_if_earlier(TimerId::MirrorRetry, w);
        }
        for m in missing_meta {
            self.refresh_source_metadata(&m);
        }
        let isolation = self.mirror_design().mirror_fetch_isolation();
        for ((cluster, leader), parts) in by_leader {
            for fp in &parts {
                if let Some(p) = self.mirror_fetch.parts.get_mut(&fp.tp) {
                    p.in_flight = true;
                }
            }
            self.mirror_fetch.busy.insert((cluster, leader));
            let sent = parts
                .iter()
                .map(|p| (p.tp.clone(), p.fetch_offset))
                .collect();
            let req = Request::Fetch {
                replica: None,
                max_wait_ms: 500,
                min_bytes: 1,
                max_bytes: self.config.replica_fetch_max_bytes,
                isolation,
                partitions: parts,
                session: crate::protocol::messages::FetchSessionMeta::SESSIONLESS,
                forgotten: Vec::new(),
            };
            self.send_request(
                NodeId::broker(cluster, leader),
                req,
                Pending::MirrorFetch {
                    cluster,
                    leader,
                    sent,
                },
                500,
            );
        }
    }

    pub(in crate::broker) fn on_mirror_fetch(
        &mut self,
        cluster: ClusterIdx,
        leader: BrokerId,
        sent: Vec<(TopicPartition, Offset)>,
        resp: Option<Response>,
    ) {
        self.mirror_fetch.busy.remove(&(cluster, leader));
        if resp.is_some() {
            self.mirror_fetch.unreachable.remove(&(cluster, leader));
        } else {
            self.on_source_broker_timeout(cluster, leader);
        }
        // Answers on a closed connection are dropped (the partitions refetch on the new one).
        let sent: Vec<(TopicPartition, Offset)> = sent
            .into_iter()
            .filter(|(tp, _)| !self.mirror_fetch.closed.remove(tp))
            .collect();
        for (tp, _) in &sent {
            if let Some(p) = self.mirror_fetch.parts.get_mut(tp) {
                p.in_flight = false;
            }
        }
        if resp.is_none() && self.mirror_design().mirror_fetch_error_fails_partitions() {
            self.on_mirror_fetch_unanswered(leader, &sent);
            self.maybe_send_mirror_fetches();
            return;
        }
        let backoff = self.now.plus_millis(1_000);
        match resp {
            Some(Response::Fetch {
                error, partitions, ..
            }) if error.is_ok() => {
                let sent: BTreeMap<TopicPartition, Offset> = sent.into_iter().collect();
                for r in partitions {
                    let Some(&req_offset) = sent.get(&r.tp) else {
                        continue;
                    };
                    // Stale (the partition moved on, or was removed): ignore.
                    if self
                        .mirror_fetch
                        .parts
                        .get(&r.tp)
                        .is_none_or(|p| p.fetch_offset != req_offset)
                    {
                        continue;
                    }
                    self.on_mirror_partition_data(r, backoff);
                }
            }
            _ => {
                for (tp, _) in sent {
                    if let Some(p) = self.mirror_fetch.parts.get_mut(&tp) {
                        p.delayed_until = Some(backoff);
                    }
                    self.mirror_fetch.source_leaders.remove(&tp);
                }
                self.timers.set_if_earlier(TimerId::MirrorRetry, backoff);
            }
        }
        self.maybe_send_mirror_fetches();
    }

    /// Latest: a mirror fetch to source broker `leader` got no answer. Kafka's client gives up
    /// on a request after `request.timeout.ms` and disconnects the node, and `leader.fetch`
    /// throws `IOException("Connection to <node> was disconnected before the response was
    /// read")` (`NetworkClientUtils.sendAndReceive`). The prototype's
    /// `AbstractFetcherThread.handlePartitionsWithErrors` then removes every partition of
    /// the fetch from the fetcher (`markPartitionRemoved`) and calls
    /// `MirrorFetcherThread.refreshSourceClusterMetadata`: a source metadata refresh, and
    /// FAILED with `nonRetryable = false`. The FAILED retry re-enters MIRRORING, whose fetch
    /// to the cached leader fails the same way while the source is down, one more attempt
    /// each time, until `mirror.failed.retry.max.attempts`; once the source answers, the retry
    /// mirrors again.
    ///
    /// The reason text: the newest prototype passes a `reason` string whose construction in
    /// `AbstractFetcherThread` could not be read (the version read passes none, leaving the
    /// error message empty); the model records the exception's message, as the prototype's
    /// other failure paths do (`ex.getMessage()`). A partition whose run is busy writing a
    /// transition (a stop or a fence decided meanwhile) only backs off, as before: its
    /// transition decides what comes next.
    fn on_mirror_fetch_unanswered(&mut self, leader: BrokerId, sent: &[(TopicPartition, Offset)]) {
        let reason = format!(
            "Connection to {} was disconnected before the response was read",
            leader.0
        );
        let backoff = self.now.plus_millis(1_000);
        let mut mirrors = BTreeSet::new();
        for (tp, _) in sent {
            if !self.mirror_fetch.parts.contains_key(tp) {
                continue;
            }
            let settled = self.mirror_runs.get(tp).is_some_and(|r| {
                r.step == super::manager::MirrorStep::Idle && r.state() == S::Mirroring
            });
            if !settled {
                if let Some(p) = self.mirror_fetch.parts.get_mut(tp) {
                    p.delayed_until = Some(backoff);
                }
                self.timers.set_if_earlier(TimerId::MirrorRetry, backoff);
                continue;
            }
            if let Some(r) = self.mirror_runs.get(tp) {
                mirrors.insert(r.mirror.clone());
            }
            self.remove_from_mirror_fetcher(tp);
            self.mirror_fail_retryable(tp, &reason);
        }
        for m in mirrors {
            self.refresh_source_metadata(&m);
        }
    }

    fn on_mirror_partition_data(&mut self, r: FetchPartitionResponse, backoff: Instant) {
        let tp = r.tp.clone();
        match r.error {
            ErrorCode::None => {
                if let Some(p) = self.mirror_fetch.parts.get_mut(&tp) {
                    p.source_high_watermark = Some(r.high_watermark);
                }
            }
            ErrorCode::OffsetOutOfRange => {
                self.mirror_out_of_range(&tp, &r);
                return;
            }
            _ => {
                // NOT_LEADER / FENCED / UNKNOWN_LEADER_EPOCH / UNKNOWN_TOPIC: rediscover the
                // source leader and back off (transient: the state does not change).
                self.mirror_fetch.source_leaders.remove(&tp);
                if let Some(p) = self.mirror_fetch.parts.get_mut(&tp) {
                    p.delayed_until = Some(backoff);
                }
                self.timers.set_if_earlier(TimerId::MirrorRetry, backoff);
                return;
            }
        }
        if let Some(div) = r.diverging_epoch {
            // A.2: divergence while MIRRORING (source unclean election) is handled like a
            // follower: truncate and continue; the checker records a declared loss.
            let Some(p) = self.partitions.get(&tp) else {
                return;
            };
            let fetch_offset = p.log.log_end_offset();
            let ts = truncation_offset(
                div,
                p.log.epoch_cache(),
                p.log.log_end_offset(),
                fetch_offset,
            );
            self.emit(Event::MirrorDiverged {
                tp: tp.clone(),
                diverging_epoch: div.leader_epoch,
                end_offset: div.offset,
                truncate_to: ts.offset,
            });
            self.truncate_replica(&tp, ts.offset, TruncationCause::Mirror);
            // The design's answer to a source data loss (B §8.3): seed and early keep
            // mirroring; latest removes the fetcher and waits for every replica
            // (ULE_RECOVERY) or, with the flag off, fails for good.
            let flag = self.mirror_supports_unclean_election(&tp.topic);
            match self.mirror_design().divergence_policy().action(flag) {
                DivergenceAction::TruncateAndContinue => self.reset_mirror_part(&tp),
                DivergenceAction::UleRecovery => {
                    self.remove_from_mirror_fetcher(&tp);
                    self.mirror_write(&tp, Some(S::UleRecovery), None);
                }
                DivergenceAction::FailNonRetryable => {
                    self.remove_from_mirror_fetcher(&tp);
                    self.mirror_fail(&tp, DIVERGENCE_FAILED_MESSAGE);
                }
            }
            return;
        }
        // Latest's EPOCH_FENCING check on the highest fetched batch epoch (B §8.4).
        if !self.mirror_epoch_check(&tp, &r.batches) {
            return;
        }
        // The source log start may fall inside the first batch (DeleteRecords, retention):
        // restart at its base offset, as a follower does.
        self.maybe_restart_at_first_batch(&tp, &r.batches, TruncationCause::Mirror);
        let segment_bytes = self.config.segment_bytes;
        let Some(p) = self.partitions.get_mut(&tp) else {
            return;
        };
        let mut io = Vec::new();
        let mut events = Vec::new();
        for b in &r.batches {
            if b.last_offset() < p.log.log_end_offset() {
                continue;
            }
            let cache_before = p.log.epoch_cache().latest_entry();
            // Appended unchanged: offsets, source epochs and producer fields kept.
            if p.log.append_as_follower(b, None).is_err() {
                break;
            }
            p.files.append(b, segment_bytes, &mut io);
            if p.log.epoch_cache().latest_entry() != cache_before {
                p.files
                    .write_epoch_checkpoint(p.log.epoch_cache().epoch_entries(), &mut io);
            }
            events.push(Event::MirrorAppended {
                tp: tp.clone(),
                base_offset: b.base_offset(),
                last_offset: b.last_offset(),
                epoch: b.partition_leader_epoch(),
            });
        }
        // The destination log start follows the source's (never above our HW).
        let ls = r.log_start_offset.min(p.log.high_watermark());
        let ls_moved = p.log.maybe_increment_log_start_offset(ls).unwrap_or(false);
        let appended = !events.is_empty();
        self.io(io);
        self.emit_all(events);
        if ls_moved {
            self.after_log_start_moved(&tp);
        }
        if appended {
            self.mirror_clear_retry_counter(&tp);
        }
        self.reset_mirror_part(&tp);
        // The destination HW advances by its own ISR (as an acks=1 write, prototype).
        self.maybe_increment_hw(&tp);
        self.try_complete_delayed(&tp);
    }

    fn reset_mirror_part(&mut self, tp: &TopicPartition) {
        let Some(p) = self.partitions.get(tp) else {
            return;
        };
        let (leo, epoch) = (p.log.log_end_offset(), p.log.latest_epoch());
        if let Some(part) = self.mirror_fetch.parts.get_mut(tp) {
            part.fetch_offset = leo;
            part.last_fetched_epoch = epoch;
            part.delayed_until = None;
        }
    }

    /// OFFSET_OUT_OF_RANGE from the source: below its log start, restart there
    /// (`truncateFullyAndStartAt(sourceLogStart)`); above its end, cut back to it.
    fn mirror_out_of_range(&mut self, tp: &TopicPartition, r: &FetchPartitionResponse) {
        let Some(part) = self.mirror_fetch.parts.get(tp) else {
            return;
        };
        let fetch_offset = part.fetch_offset;
        if r.log_start_offset.0 >= 0 && fetch_offset < r.log_start_offset {
            self.truncate_replica_fully(tp, r.log_start_offset, TruncationCause::Mirror);
            self.emit(Event::MirrorLogStartReset {
                tp: tp.clone(),
                start: r.log_start_offset,
            });
        } else if r.high_watermark.0 >= 0 && r.high_watermark < fetch_offset {
            self.truncate_replica(tp, r.high_watermark, TruncationCause::Mirror);
        } else {
            // Neither below the source log start nor above its HW (a stale answer): back off
            // before asking again. The backoff is set after the reset, which clears it.
            self.reset_mirror_part(tp);
            let backoff = self.now.plus_millis(1_000);
            if let Some(p) = self.mirror_fetch.parts.get_mut(tp) {
                p.delayed_until = Some(backoff);
            }
            self.timers.set_if_earlier(TimerId::MirrorRetry, backoff);
            return;
        }
        self.reset_mirror_part(tp);
    }

    /// Moves a mirror partition to FAILED with a reason (non-retryable).
    pub(in crate::broker) fn mirror_fail(&mut self, tp: &TopicPartition, reason: &str) {
        self.mirror_fail_with(tp, reason, MirrorPartitionStatus::NON_RETRYABLE);
    }

    /// Persists FAILED with `reason` and the retry counter `attempt` (-1: non-retryable),
    /// remembered in memory as the write carries them.
    pub(in crate::broker) fn mirror_fail_with(
        &mut self,
        tp: &TopicPartition,
        reason: &str,
        attempt: i16,
    ) {
        let Some(r) = self.mirror_runs.get_mut(tp) else {
            return;
        };
        let status = r.status.get_or_insert_with(MirrorPartitionStatus::unknown);
        status.error_message = Some(reason.to_string());
        status.retry_attempt = attempt;
        self.mirror_write_with(tp, Some(S::Failed), None, Some((reason, attempt)));
    }
}
