//! Registration, heartbeats, the metadata log, and reacting to metadata: becoming leader or
//! follower, creating and deleting replicas (Kafka: `BrokerLifecycleManager`,
//! `BrokerMetadataPublisher`, `ReplicaManager.applyDelta`).

use std::collections::BTreeMap;

use super::broker::{Broker, Lifecycle, Pending};
use super::fetcher::FetchPart;
use super::output::Event;
use super::partition::Partition;
use super::recovery::{self, RecoveryInputs, RecoveryRecord};
use super::storage::{self, PartitionFiles};
use super::timers::TimerId;
use crate::broker::metadata_image::MetadataDelta;
use crate::log::partition_log::{LogConfig, PartitionLog};
use crate::protocol::metadata::PartitionRegistration;
use crate::protocol::{ErrorCode, Request, Response};
use crate::replication::fetch_follower::initial_fetch_state;
use crate::types::{Offset, TopicId, TopicPartition};

impl Broker {
    pub(super) fn on_timer(&mut self, t: TimerId) {
        match t {
            TimerId::ControllerRetry => self.maybe_register_or_fetch_metadata(),
            TimerId::Heartbeat => self.send_heartbeat(),
            TimerId::RequestTimeout(id) => {
                if let Some(p) = self.pending.remove(&id) {
                    self.on_request_failed(p);
                }
            }
            TimerId::FetchBackoff(leader) => self.maybe_send_fetch(leader),
            TimerId::IsrExpiration => self.on_isr_expiration(),
            TimerId::HwCheckpoint => self.write_checkpoints(),
            TimerId::LogFlush => self.flush_logs(),
            TimerId::Retention => self.on_retention(),
            TimerId::ProducerExpiration => self.on_producer_expiration(),
            TimerId::Delayed(key) => self.expire_delayed(key),
            TimerId::CoordinatorRetry => self.on_coordinator_retry(),
            TimerId::CoordinatorTick => self.on_coordinator_tick(),
            TimerId::CoordinatorWriteTimeout => self.complete_all_coordinator_writes(),
            TimerId::MirrorRetry => self.on_mirror_retry(),
            TimerId::MirrorSync(m) => self.on_mirror_sync_timer(&m),
            TimerId::Partition(_) => {}
        }
    }

    fn maybe_register_or_fetch_metadata(&mut self) {
        match self.lifecycle {
            Lifecycle::Starting => {
                if !self.pending.values().any(|p| *p == Pending::Register) {
                    let req = Request::RegisterBroker {
                        broker_id: self.config.broker_id,
                        incarnation: self.incarnation,
                    };
                    // As for heartbeats (`send_heartbeat`): a lost answer is given up after
                    // one heartbeat interval instead of leaving the broker silent for 30 s.
                    let timeout = self.config.heartbeat_interval_ms;
                    self.send_request_within(self.controller(), req, Pending::Register, timeout);
                }
            }
            Lifecycle::Registered => self.send_fetch_metadata(),
            Lifecycle::Halted => {}
        }
    }

    fn send_heartbeat(&mut self) {
        if self.lifecycle != Lifecycle::Registered {
            return;
        }
        if !self.pending.values().any(|p| *p == Pending::Heartbeat) {
            let req = Request::BrokerHeartbeat {
                broker_id: self.config.broker_id,
                broker_epoch: self.broker_epoch,
                metadata_offset: self.image.offset,
                want_fence: self.image.offset < self.broker_epoch,
            };
            // Given up after one heartbeat interval, so the next goes out: over Kafka's TCP
            // connection a heartbeat sent into a short network cut arrives once the cut
            // heals, while the simulated network drops it; waiting `request.timeout.ms` for
            // its answer would leave the broker silent for 30 s and fenced long after the
            // cut healed.
            let timeout = self.config.heartbeat_interval_ms;
            self.send_request_within(self.controller(), req, Pending::Heartbeat, timeout);
        }
        self.timers.set(
            TimerId::Heartbeat,
            self.now.plus_millis(self.config.heartbeat_interval_ms),
        );
    }

    pub(super) fn send_fetch_metadata(&mut self) {
        if self.fetch_metadata_in_flight || self.lifecycle != Lifecycle::Registered {
            return;
        }
        self.fetch_metadata_in_flight = true;
        let req = Request::FetchMetadata {
            broker_id: self.config.broker_id,
            fetch_offset: self.image.offset + 1,
            max_wait_ms: self.config.metadata_fetch_wait_ms,
        };
        let timeout = self.config.metadata_request_timeout_ms;
        self.send_request_within(self.controller(), req, Pending::FetchMetadata, timeout);
    }

    pub(super) fn on_request_failed(&mut self, p: Pending) {
        let retry = self.now.plus_millis(self.config.replica_fetch_backoff_ms);
        match p {
            Pending::Register => self.timers.set(TimerId::ControllerRetry, retry),
            Pending::Heartbeat => {}
            Pending::FetchMetadata => {
                self.fetch_metadata_in_flight = false;
                self.timers.set(TimerId::ControllerRetry, retry);
            }
            Pending::AlterPartition(tp, id) => self.on_alter_partition_failed(&tp, id),
            Pending::Fetch { leader, .. } => self.on_fetch_failed(leader),
            Pending::ResetOffset { leader, tp } => self.on_reset_failed(leader, &tp),
            Pending::CreateInternalTopics => self.on_internal_topics_created(),
            Pending::AllocateProducerIds => self.coord.pid_request_in_flight = false,
            Pending::MirrorRead(tp, run) => self.on_mirror_read(&tp, run, None),
            Pending::MirrorWrite(tp, run, target, reason) => {
                self.on_mirror_write(&tp, run, target, reason, None);
            }
            Pending::MirrorLookup { tp, broker } => self.on_mirror_lookup(&tp, broker, None),
            Pending::BumpLeaderEpochs(tp) => self.on_bump_response(&tp),
            Pending::SourceMetadata(m, b) => self.on_source_metadata(&m, b, None),
            Pending::MirrorSync {
                mirror,
                round,
                step,
            } => self.on_mirror_sync_response(&mirror, round, step, None),
            Pending::MirrorFetch {
                cluster,
                leader,
                sent,
            } => self.on_mirror_fetch(cluster, leader, sent, None),
            Pending::Markers {
                partition,
                transactional_id,
                partitions,
            } => {
                let results = partitions
                    .into_iter()
                    .map(|tp| (tp, ErrorCode::RequestTimedOut))
                    .collect();
                self.on_markers_result(partition, &transactional_id, results);
            }
            Pending::MirrorValidationStates(v) => self.on_mirror_validation_states(v, None),
            Pending::Forward { client, client_id } => {
                self.respond(
                    client,
                    client_id,
                    Response::Error {
                        error: ErrorCode::RequestTimedOut,
                    },
                );
            }
        }
    }

    pub(super) fn handle_response(&mut self, p: Pending, resp: Response) {
        match (p, resp) {
            (
                Pending::Register,
                Response::RegisterBroker {
                    error,
                    broker_epoch,
                },
            ) => {
                if error.is_ok() {
                    self.lifecycle = Lifecycle::Registered;
                    self.broker_epoch = broker_epoch;
                    self.emit(Event::Registered { broker_epoch });
                    self.send_heartbeat();
                    self.send_fetch_metadata();
                    self.start_periodic_timers();
                } else {
                    let at = self.now.plus_millis(self.config.replica_fetch_backoff_ms);
                    self.timers.set(TimerId::ControllerRetry, at);
                }
            }
            (Pending::Heartbeat, Response::BrokerHeartbeat { error, .. }) => {
                if error == ErrorCode::StaleBrokerEpoch {
                    // The controller no longer knows this registration: register again.
                    self.lifecycle = super::broker::Lifecycle::Starting;
                    self.timers.set(TimerId::ControllerRetry, self.now);
                }
            }
            (Pending::FetchMetadata, Response::FetchMetadata { error, records, .. }) => {
                self.fetch_metadata_in_flight = false;
                if !error.is_ok() {
                    let at = self.now.plus_millis(self.config.replica_fetch_backoff_ms);
                    self.timers.set(TimerId::ControllerRetry, at);
                    return;
                }
                // Kafka publishes a metadata batch as one delta on the final image, so a
                // broker replaying history never acts on stale intermediate leaderships.
                let mut changed = std::collections::BTreeMap::new();
                let mut changed_topics = std::collections::BTreeSet::new();
                let mut changed_mirrors = std::collections::BTreeSet::new();
                // KIP-1279: the keys changed per mirror that existed before the record (a
                // creation or deletion is not an alteration).
                let mut altered_mirrors: std::collections::BTreeMap<
                    String,
                    std::collections::BTreeSet<String>,
                > = std::collections::BTreeMap::new();
                let mirrors_before: std::collections::BTreeSet<String> =
                    self.image.mirror_names().into_iter().collect();
                let mut removed = Vec::new();
                let coordinators_before = self.mirror_state_leader_epochs();
                for (offset, record) in records {
                    if offset != self.image.offset + 1 {
                        continue; // duplicate or gap: refetch from our offset
                    }
                    if let crate::protocol::metadata::MetadataRecord::Config {
                        resource: crate::protocol::metadata::ConfigResource::Mirror(m),
                        name,
                        ..
                    } = &record
                        && mirrors_before.contains(m)
                    {
                        altered_mirrors
                            .entry(m.clone())
                            .or_default()
                            .insert(name.clone());
                    }
                    match self.image.apply(offset, &record) {
                        MetadataDelta::Partition { tp, topic_id, .. } => {
                            changed.insert(tp, topic_id);
                        }
                        MetadataDelta::TopicRemoved { partitions } => {
                            for tp in partitions {
                                changed.remove(&tp);
                                removed.push(tp);
                            }
                        }
                        MetadataDelta::Config(
                            crate::protocol::metadata::ConfigResource::Topic(t),
                        ) => {
                            changed_topics.insert(t);
                        }
                        MetadataDelta::Config(
                            crate::protocol::metadata::ConfigResource::Mirror(m),
                        ) => {
                            changed_mirrors.insert(m);
                        }
                        MetadataDelta::None
                        | MetadataDelta::Config(_)
                        | MetadataDelta::Broker(_) => {}
                    }
                }
                for tp in removed {
                    self.remove_partition(&tp);
                }
                for (tp, topic_id) in changed {
                    if let Some(reg) = self.image.partition(&tp).cloned()
                        && self.image.topic_id(&tp.topic) == Some(topic_id)
                    {
                        self.on_partition_change(tp, topic_id, &reg);
                    }
                }
                // KIP-1279: a `__mirror_state` partition with a new leader may have reloaded
                // an older state (its tail lost with a declared loss).
                self.mirror_on_coordinators_moved(&coordinators_before);
                // KIP-1279: `mirror.name` changes move the desired state of led partitions.
                let led: Vec<TopicPartition> = self
                    .partitions
                    .keys()
                    .filter(|tp| changed_topics.contains(tp.topic.as_ref()))
                    .cloned()
                    .collect();
                for tp in led {
                    self.mirror_on_partition(&tp);
                }
                for m in changed_mirrors {
                    self.on_mirror_config_changed(&m);
                }
                for (m, keys) in &altered_mirrors {
                    self.mirror_configs_altered(m, keys);
                }
                // KIP-1279: (dis)arm the metadata sync of the mirrors this broker coordinates.
                self.mirror_sync_on_metadata();
                self.send_fetch_metadata();
            }
            (Pending::AlterPartition(tp, id), resp) => {
                self.on_alter_partition_response(&tp, id, resp);
            }
            (
                Pending::Fetch { leader },
                Response::Fetch {
                    error,
                    session_id,
                    partitions,
                },
            ) => {
                self.on_fetch_response(leader, error, session_id, partitions);
            }
            (Pending::ResetOffset { leader, tp }, Response::ListOffsets { partitions }) => {
                self.on_reset_response(leader, &tp, partitions);
            }
            (Pending::Forward { client, client_id }, resp) => self.respond(client, client_id, resp),
            (Pending::MirrorValidationStates(v), resp) => {
                self.on_mirror_validation_states(v, Some(resp))
            }
            (Pending::CreateInternalTopics, _) => self.on_internal_topics_created(),
            (Pending::MirrorRead(tp, run), resp) => self.on_mirror_read(&tp, run, Some(resp)),
            (Pending::MirrorWrite(tp, run, target, reason), resp) => {
                self.on_mirror_write(&tp, run, target, reason, Some(resp))
            }
            (Pending::MirrorLookup { tp, broker }, resp) => {
                self.on_mirror_lookup(&tp, broker, Some(resp))
            }
            (Pending::BumpLeaderEpochs(tp), _) => self.on_bump_response(&tp),
            (Pending::SourceMetadata(m, b), resp) => self.on_source_metadata(&m, b, Some(resp)),
            (
                Pending::MirrorSync {
                    mirror,
                    round,
                    step,
                },
                resp,
            ) => self.on_mirror_sync_response(&mirror, round, step, Some(resp)),
            (
                Pending::MirrorFetch {
                    cluster,
                    leader,
                    sent,
                },
                resp,
            ) => self.on_mirror_fetch(cluster, leader, sent, Some(resp)),
            (Pending::AllocateProducerIds, resp) => self.on_producer_ids(resp),
            (
                Pending::Markers {
                    partition,
                    transactional_id,
                    partitions,
                },
                resp,
            ) => {
                let results = match resp {
                    Response::PartitionErrors { results } => results,
                    _ => partitions
                        .into_iter()
                        .map(|tp| (tp, ErrorCode::NotLeaderOrFollower))
                        .collect(),
                };
                self.on_markers_result(partition, &transactional_id, results);
            }
            (p, _) => self.on_request_failed(p),
        }
    }

    fn start_periodic_timers(&mut self) {
        if self.next_recovery_point_checkpoint.is_none() {
            self.next_recovery_point_checkpoint =
                Some(self.now.plus_millis(self.config.log_initial_task_delay_ms));
        }
        let lag = self.config.replica_lag_time_max_ms / 2;
        self.timers
            .set_if_earlier(TimerId::IsrExpiration, self.now.plus_millis(lag));
        self.timers.set_if_earlier(
            TimerId::HwCheckpoint,
            self.now.plus_millis(self.config.hw_checkpoint_interval_ms),
        );
        if let Some(f) = self.config.log_flush_interval_ms {
            self.timers
                .set_if_earlier(TimerId::LogFlush, self.now.plus_millis(f));
        }
        self.timers.set_if_earlier(
            TimerId::Retention,
            self.now
                .plus_millis(self.config.retention_check_interval_ms),
        );
        self.timers
            .set_if_earlier(TimerId::CoordinatorTick, self.now.plus_millis(1_000));
        self.timers.set_if_earlier(
            TimerId::ProducerExpiration,
            self.now
                .plus_millis(self.config.producer_id_expiration_check_interval_ms),
        );
    }

    /// Kafka `ReplicaManager.applyLocalLeadersDelta` / `applyLocalFollowersDelta`.
    pub(super) fn on_partition_change(
        &mut self,
        tp: TopicPartition,
        topic_id: TopicId,
        reg: &PartitionRegistration,
    ) {
        let me = self.config.broker_id;
        if !reg.replicas.contains(&me) {
            self.remove_partition(&tp);
            return;
        }
        self.ensure_partition(&tp, topic_id);
        let now_ms = self.now.as_millis();
        let mut events = Vec::new();
        let mut assign = self.assign_epoch_start_on_leadership(&tp);
        let is_mirror = self.mirror_membership(&tp.topic).is_some();
        let p = self.partitions.get_mut(&tp).expect("ensured");
        // A mirror partition's log holds source epochs that may be above this leader epoch
        // (the seed design has no DLE >= SLE rule). Assigning a lower epoch would drop the
        // cache entries above it (Kafka's `assign` removes them), so the epoch starts at the
        // first append after the stop's bump instead. Found by mirror chaos (seed 36).
        if is_mirror && p.log.latest_epoch().is_some_and(|e| e >= reg.leader_epoch) {
            assign = false;
        }
        if reg.leader == Some(me) {
            let epoch_before = p.log.epoch_cache().latest_entry();
            if p.make_leader(me, reg, now_ms, assign, &mut events) {
                if p.log.epoch_cache().latest_entry() != epoch_before {
                    let mut io = Vec::new();
                    p.files
                        .write_epoch_checkpoint(p.log.epoch_cache().epoch_entries(), &mut io);
                    self.io(io);
                }
                self.remove_from_fetchers(&tp);
                self.emit_all(events);
                self.after_leader_change(&tp);
            } else {
                self.emit_all(events);
                // Kafka `Partition.makeLeader` ends with `maybeIncrementLeaderHW` for every
                // leader delta, not only a new epoch: "we may need to increment high
                // watermark since ISR could be down to 1" (e.g. the controller removed a
                // fenced follower from the ISR). Without it, records waiting only on that
                // follower stay uncommitted until the next append or fetch (mirror chaos seed
                // 154: a `__mirror_state` STOPPING record whose write never completed).
                self.maybe_increment_hw(&tp);
            }
            self.on_coordinator_leadership(&tp);
            self.on_mirror_state_leadership(&tp);
            self.mirror_on_partition(&tp);
        } else if p.make_follower(reg, &mut events) {
            self.emit_all(events);
            self.remove_from_fetchers(&tp);
            self.fail_delayed_for(&tp);
            if let Some(leader) = reg.leader.filter(|l| *l != me) {
                let p = &self.partitions[&tp];
                let state = initial_fetch_state(
                    true,
                    p.log.latest_epoch(),
                    p.log.log_end_offset(),
                    p.log.high_watermark(),
                );
                self.add_to_fetcher(leader, tp.clone(), FetchPart::new(state, reg.leader_epoch));
            }
            self.on_coordinator_leadership(&tp);
            self.on_mirror_state_leadership(&tp);
            self.mirror_on_partition(&tp);
        }
    }

    /// Creates the replica, from recovered files when they belong to this topic id.
    ///
    /// (Internal coordinator partitions are (un)loaded by `on_coordinator_leadership`.)
    fn ensure_partition(&mut self, tp: &TopicPartition, topic_id: TopicId) {
        if let Some(p) = self.partitions.get(tp) {
            if p.topic_id == topic_id {
                return;
            }
            self.remove_partition(tp);
        }
        let cfg = LogConfig {
            producer_id_expiration_ms: self.config.producer_id_expiration_ms,
            ..LogConfig::default()
        };
        let mut io = Vec::new();
        let mut events = Vec::new();
        let partition = match self.recovered.remove(tp) {
            Some(found) if found.topic_id.is_none_or(|i| i == topic_id) => {
                let inputs = RecoveryInputs {
                    scan: found.scan,
                    log_start_checkpoint: self.log_start_checkpoint.get(tp).copied(),
                    hw_checkpoint: self.hw_checkpoint.get(tp).copied(),
                };
                let loaded = found.loaded;
                match recovery::rebuild_log(
                    cfg.clone(),
                    &loaded,
                    found.producer_snapshot.as_ref(),
                    &inputs,
                ) {
                    Ok(log) => {
                        events.push(Event::LogRecovered {
                            tp: tp.clone(),
                            log_end_offset: log.log_end_offset(),
                            truncated_bytes: loaded.truncated_bytes,
                            record: std::sync::Arc::new(RecoveryRecord {
                                inputs,
                                log: log.clone(),
                            }),
                        });
                        Partition::new(tp.clone(), topic_id, log, loaded.files)
                    }
                    Err(_) => {
                        loaded.files.delete_all(&mut io);
                        self.fresh_partition(tp, topic_id, cfg, &mut io)
                    }
                }
            }
            Some(found) => {
                // A stray log of an older incarnation of the topic (different id): delete it.
                found.loaded.files.delete_all(&mut io);
                self.fresh_partition(tp, topic_id, cfg, &mut io)
            }
            None => self.fresh_partition(tp, topic_id, cfg, &mut io),
        };
        self.partitions.insert(tp.clone(), partition);
        self.io(io);
        self.emit_all(events);
    }

    fn fresh_partition(
        &self,
        tp: &TopicPartition,
        topic_id: TopicId,
        cfg: LogConfig,
        io: &mut Vec<crate::broker::output::IoOp>,
    ) -> Partition {
        let files = PartitionFiles::create(tp, topic_id, Offset(0), io);
        Partition::new(tp.clone(), topic_id, PartitionLog::new(cfg), files)
    }

    /// Stops and deletes a replica (topic deletion or reassignment away).
    pub(super) fn remove_partition(&mut self, tp: &TopicPartition) {
        self.remove_from_fetchers(tp);
        self.fail_delayed_for(tp);
        if let Some(p) = self.partitions.remove(tp) {
            let mut io = Vec::new();
            p.files.delete_all(&mut io);
            self.io(io);
        }
        self.on_coordinator_leadership(tp);
        self.on_mirror_state_leadership(tp);
        self.mirror_on_partition(tp);
        self.hw_checkpoint.remove(tp);
        self.log_start_checkpoint.remove(tp);
    }

    /// HW and log-start checkpoints (Kafka: `replica.high.watermark.checkpoint.interval.ms`).
    pub(super) fn write_checkpoints(&mut self) {
        self.hw_checkpoint = self
            .partitions
            .iter()
            .map(|(tp, p)| (tp.clone(), p.log.high_watermark()))
            .collect();
        self.log_start_checkpoint = self
            .partitions
            .iter()
            .map(|(tp, p)| (tp.clone(), p.log.log_start_offset()))
            .collect();
        // Kafka checkpoints recovery points on their own schedule (every
        // `log.flush.offset.checkpoint.interval.ms` after `log.initial.task.delay.ms`); the
        // model checks that schedule at this tick rather than adding a timer.
        if self
            .next_recovery_point_checkpoint
            .is_some_and(|due| due <= self.now)
        {
            self.write_recovery_point_checkpoint();
            self.next_recovery_point_checkpoint = Some(
                self.now
                    .plus_millis(self.config.recovery_point_checkpoint_interval_ms),
            );
        }
        let hw = storage::encode_offset_checkpoint(&self.hw_checkpoint);
        let ls = storage::encode_offset_checkpoint(&self.log_start_checkpoint);
        self.io(vec![
            crate::broker::output::IoOp::WriteAtomic {
                path: storage::HW_CHECKPOINT.into(),
                bytes: hw,
            },
            crate::broker::output::IoOp::WriteAtomic {
                path: storage::LOG_START_CHECKPOINT.into(),
                bytes: ls,
            },
        ]);
        self.timers.set(
            TimerId::HwCheckpoint,
            self.now.plus_millis(self.config.hw_checkpoint_interval_ms),
        );
    }

    /// Writes every log's recovery point (Kafka: `LogManager.checkpointRecoveryOffsetsInDir`),
    /// the logs loaded at start-up and not yet claimed by metadata included, as Kafka loads
    /// every log before it checkpoints.
    pub(super) fn write_recovery_point_checkpoint(&mut self) {
        let mut points: BTreeMap<TopicPartition, Offset> = self
            .recovered
            .iter()
            .map(|(tp, r)| (tp.clone(), r.loaded.files.recovery_point()))
            .collect();
        points.extend(
            self.partitions
                .iter()
                .map(|(tp, p)| (tp.clone(), p.files.recovery_point())),
        );
        self.io(vec![crate::broker::output::IoOp::WriteAtomic {
            path: storage::RECOVERY_POINT_CHECKPOINT.into(),
            bytes: storage::encode_offset_checkpoint(&points),
        }]);
    }

    fn flush_logs(&mut self) {
        let mut io = Vec::new();
        for p in self.partitions.values_mut() {
            p.files.flush(&mut io);
        }
        self.io(io);
        if let Some(f) = self.config.log_flush_interval_ms {
            self.timers.set(TimerId::LogFlush, self.now.plus_millis(f));
        }
    }

    fn on_producer_expiration(&mut self) {
        let now_ms = self.now.as_millis();
        for p in self.partitions.values_mut() {
            p.log.remove_expired_producers(now_ms);
        }
        self.timers.set(
            TimerId::ProducerExpiration,
            self.now
                .plus_millis(self.config.producer_id_expiration_check_interval_ms),
        );
    }

    fn on_retention(&mut self) {
        let now_ms = self.now.as_millis();
        let tps: Vec<TopicPartition> = self.partitions.keys().cloned().collect();
        for tp in tps {
            let Some(ms) = self
                .image
                .topic_config(&tp.topic, "retention.ms")
                .and_then(|v| v.parse::<i64>().ok())
                .filter(|ms| *ms >= 0)
            else {
                continue;
            };
            let p = self.partitions.get_mut(&tp).expect("listed");
            if !p.is_leader() {
                continue; // followers follow the leader's log start
            }
            if p.log.apply_retention_ms(now_ms, ms).is_some() {
                self.after_log_start_moved(&tp);
            }
        }
        self.timers.set(
            TimerId::Retention,
            self.now
                .plus_millis(self.config.retention_check_interval_ms),
        );
    }
}
