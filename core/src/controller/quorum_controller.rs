//! The controller node (Kafka: `QuorumController` with a single voter): dispatches requests
//! to the control managers, appends and applies the records they decide, answers, fences
//! brokers whose sessions expire and answers parked metadata fetches.
//!
//! Every handler first decides (pure helpers in [`super::replication`],
//! [`super::cluster`], [`super::producer_ids`]) and then applies through [`Controller::append`],
//! which is the only path that changes replicated state. Outputs of one input come in this
//! order: `PersistMetadata` and `Event`s as records are appended, then the response, then
//! answers to parked fetches that the new records satisfy.

use std::collections::{BTreeSet, VecDeque};

use super::cluster::{BrokerControlState, ClusterControl, next_broker_state};
use super::config::ControllerConfig;
use super::metadata_log::{FetchWaiter, FetchWaiters, MetadataLog};
use super::mirror_admin::{
    MirrorStateChanges, MirrorTopicsOp, check_mirror_topic_mutable, mirror_admin_error,
};
use super::producer_ids::ProducerIdControl;
use super::replication::{
    self, Election, PartitionChange, PartitionChangeBuilder, TopicError,
    UNCLEAN_LEADER_ELECTION_ENABLE, check_partition_transition, check_registration, parse_bool,
    place_replicas, validate_alter_partition, validate_topic_config,
};
use crate::broker::{Event, Message, MetadataImage, Node, Output};
use crate::protocol::messages::CreatableTopic;
use crate::protocol::metadata::{
    ConfigResource, MIRROR_NAME_CONFIG, MetadataRecord, PartitionRegistration,
};
use crate::protocol::{CorrelationId, ErrorCode, NodeId, Request, Response};
use crate::time::Instant;
use crate::types::{BrokerId, LeaderEpoch, ProducerId, TopicId, TopicPartition};

/// The single (KRaft) controller of one simulated cluster: a sans-I/O state machine.
#[derive(Debug)]
pub struct Controller {
    config: ControllerConfig,
    log: MetadataLog,
    cluster: ClusterControl,
    producer_ids: ProducerIdControl,
    /// `Topic` records in the log so far: the counter behind generated topic ids.
    topic_records: u64,
    /// KIP-1279 §6.6: offsets of the last mirror-state change per topic.
    mirror_changes: MirrorStateChanges,
    waiters: FetchWaiters,
    outputs: VecDeque<Output>,
    /// The log end at which [`Self::check_invariants`] last passed. They read only the
    /// image, which changes only by an append, so an input that appended nothing (most
    /// heartbeats and metadata fetches) need not walk every partition again.
    invariants_checked_at: i64,
}

impl Controller {
    /// A controller whose durable metadata log holds `recovered` (empty for a new cluster).
    /// The records are replayed into the image and the control managers exactly as when
    /// they were first appended, so a restart yields the same state. Broker sessions start
    /// at the first input after the restart (Kafka: `ClusterControlManager.activate`).
    ///
    /// # Panics
    /// If `recovered` is not the controller's own log (offsets not consecutive from 0, or
    /// a record that breaks a partition invariant): that is a broken simulator invariant.
    #[must_use]
    pub fn new(config: ControllerConfig, recovered: Vec<(i64, MetadataRecord)>) -> Self {
        let mut c = Self {
            cluster: ClusterControl::new(config.broker_session_timeout_ms),
            producer_ids: ProducerIdControl::new(config.producer_id_block_size),
            config,
            log: MetadataLog::new(),
            topic_records: 0,
            mirror_changes: MirrorStateChanges::default(),
            waiters: FetchWaiters::default(),
            outputs: VecDeque::new(),
            invariants_checked_at: -1,
        };
        for (offset, record) in recovered {
            c.replay(offset, record);
        }
        c.check_invariants();
        c.invariants_checked_at = c.log.end_offset();
        c
    }

    /// The metadata image after the last committed record.
    #[must_use]
    pub fn image(&self) -> &MetadataImage {
        self.log.image()
    }

    /// Every committed record with its offset (what the driver persisted).
    #[must_use]
    pub fn metadata_log(&self) -> &[(i64, MetadataRecord)] {
        self.log.records()
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &ControllerConfig {
        &self.config
    }

    /// The next producer id a block would start at.
    #[must_use]
    pub fn next_producer_id(&self) -> ProducerId {
        self.producer_ids.next_producer_id()
    }

    /// KIP-1279 §6.6: the offsets of the last mirror-state change per topic.
    #[must_use]
    pub fn mirror_changes(&self) -> &MirrorStateChanges {
        &self.mirror_changes
    }

    /// Number of parked `FetchMetadata` requests.
    #[must_use]
    pub fn parked_fetches(&self) -> usize {
        self.waiters.len()
    }

    /// Whether unclean leader election is enabled for `topic`: the topic config
    /// `unclean.leader.election.enable` if set and valid, else the cluster default.
    #[must_use]
    pub fn unclean_leader_election_enabled(&self, topic: &str) -> bool {
        self.image()
            .topic_config(topic, UNCLEAN_LEADER_ELECTION_ENABLE)
            .and_then(parse_bool)
            .unwrap_or(self.config.unclean_leader_election_enable)
    }

    /// The effective `min.insync.replicas` of `topic` (topic config, else cluster default).
    #[must_use]
    pub fn min_insync_replicas(&self, topic: &str) -> usize {
        self.image()
            .topic_config(topic, replication::MIN_INSYNC_REPLICAS)
            .and_then(|v| v.parse().ok())
            .unwrap_or(self.config.min_insync_replicas)
    }

    /// Asserts the controller's state invariants: the image is at the log end, every
    /// partition registration is well formed (non-empty ISR within the replicas, leader in
    /// the ISR) and every leader is a registered, unfenced broker. Run after every input.
    pub fn check_invariants(&self) {
        let image = self.image();
        assert!(
            image.offset == self.log.end_offset() - 1,
            "image_at_log_end: image {} end {}",
            image.offset,
            self.log.end_offset()
        );
        for topic in image.topics.values() {
            for (p, r) in &topic.partitions {
                check_registration(r);
                if let Some(l) = r.leader {
                    assert!(
                        image.is_broker_active(l),
                        "leader_unfenced: {}-{p} led by fenced or unregistered {l}",
                        topic.name
                    );
                }
            }
        }
    }

    // ------------------------------------------------------------------ records

    /// Applies a record to every control manager (shared by recovery and appends).
    fn replay(&mut self, offset: i64, record: MetadataRecord) {
        match &record {
            MetadataRecord::ProducerIds {
                next_producer_id, ..
            } => self.producer_ids.replay(*next_producer_id),
            MetadataRecord::Topic { .. } => self.topic_records += 1,
            MetadataRecord::Partition { registration, .. } => check_registration(registration),
            MetadataRecord::PartitionChange {
                topic_id,
                partition,
                registration,
                ..
            } => {
                let prev = self
                    .image()
                    .topics
                    .get(topic_id)
                    .and_then(|t| t.partitions.get(partition));
                let prev = prev.expect("partition_change_for_known_partition");
                check_partition_transition(prev, registration);
            }
            _ => {}
        }
        self.mirror_changes
            .replay(offset, &record, self.log.image());
        self.log.append(offset, record);
    }

    /// Commits `record`: the driver persists it (KRaft fsyncs before commit), then it is
    /// applied. Returns its offset.
    pub(super) fn append(&mut self, record: MetadataRecord) -> i64 {
        let offset = self.log.end_offset();
        self.outputs.push_back(Output::PersistMetadata {
            offset,
            record: record.clone(),
        });
        self.replay(offset, record);
        offset
    }

    /// Commits a partition change and reports elections.
    fn append_partition_change(&mut self, topic_id: TopicId, partition: i32, c: PartitionChange) {
        let name = self.image().topics.get(&topic_id).map(|t| t.name.clone());
        let name = name.expect("partition_change_topic_known");
        let prev_epoch = self
            .image()
            .topics
            .get(&topic_id)
            .and_then(|t| t.partitions.get(&partition))
            .map(|r| r.leader_epoch);
        let registration = c.registration.clone();
        self.append(MetadataRecord::PartitionChange {
            topic_id,
            partition,
            registration: c.registration,
            min_leader_epoch: c.min_leader_epoch,
        });
        if c.leader_changed || prev_epoch != Some(registration.leader_epoch) {
            self.event(Event::LeaderElected {
                tp: TopicPartition::new(name.as_str(), partition),
                leader: registration.leader,
                leader_epoch: registration.leader_epoch,
                isr: registration.isr,
                unclean: c.unclean,
            });
        }
    }

    fn event(&mut self, e: Event) {
        self.outputs.push_back(Output::Event(e));
    }

    fn respond(&mut self, to: NodeId, id: CorrelationId, response: Response) {
        self.outputs.push_back(Output::Send {
            to,
            id,
            message: Message::Response(response),
        });
    }

    // ------------------------------------------------------------------ elections

    fn topic_election(&self, topic: &str) -> Election {
        if self.unclean_leader_election_enabled(topic) {
            Election::Unclean
        } else {
            Election::Online
        }
    }

    /// Kafka: `ReplicationControlManager.handleBrokerFenced`. Removes `broker` from every
    /// ISR it is in (never emptying one) and moves its leaderships, then fences it.
    fn fence_broker(&mut self, broker: BrokerId) {
        let image = self.image();
        let acceptable = |b: BrokerId| b != broker && image.is_broker_active(b);
        let mut changes = Vec::new();
        for (topic_id, topic) in &image.topics {
            let election = self.topic_election(&topic.name);
            for (p, r) in &topic.partitions {
                if !r.isr.contains(&broker) && r.leader != Some(broker) {
                    continue;
                }
                let target: Vec<BrokerId> =
                    r.isr.iter().copied().filter(|&b| b != broker).collect();
                if let Some(c) = PartitionChangeBuilder::new(r, &acceptable)
                    .target_isr(target)
                    .election(election)
                    .build()
                {
                    changes.push((*topic_id, *p, c));
                }
            }
        }
        for (t, p, c) in changes {
            self.append_partition_change(t, p, c);
        }
        self.append(MetadataRecord::BrokerFencing {
            broker_id: broker,
            fenced: true,
        });
        self.event(Event::BrokerFencing {
            broker_id: broker,
            fenced: true,
        });
    }

    /// Kafka: `ReplicationControlManager.handleBrokerUnfenced`. Unfences `broker`, then
    /// elects leaders for offline partitions (cleanly from the ISR, or uncleanly where the
    /// topic allows it).
    fn unfence_broker(&mut self, broker: BrokerId) {
        self.append(MetadataRecord::BrokerFencing {
            broker_id: broker,
            fenced: false,
        });
        self.event(Event::BrokerFencing {
            broker_id: broker,
            fenced: false,
        });
        self.elect_offline_partitions(None);
    }

    /// Runs the topic's default election on every partition without a leader (of `topic`
    /// only, if given).
    fn elect_offline_partitions(&mut self, topic: Option<TopicId>) {
        let image = self.image();
        let acceptable = |b: BrokerId| image.is_broker_active(b);
        let mut changes = Vec::new();
        for (topic_id, t) in &image.topics {
            if topic.is_some_and(|only| only != *topic_id) {
                continue;
            }
            let election = self.topic_election(&t.name);
            for (p, r) in &t.partitions {
                if r.leader.is_some() {
                    continue;
                }
                if let Some(c) = PartitionChangeBuilder::new(r, &acceptable)
                    .election(election)
                    .build()
                {
                    changes.push((*topic_id, *p, c));
                }
            }
        }
        for (t, p, c) in changes {
            self.append_partition_change(t, p, c);
        }
    }

    /// Fences every unfenced broker whose session expired at `now`.
    fn fence_expired_sessions(&mut self, now: Instant) {
        for broker in self.cluster.expired_sessions(self.image(), now) {
            if self.image().is_broker_active(broker) {
                self.fence_broker(broker);
            }
        }
    }

    /// Common prologue of every input: sessions for brokers without one, then expiry, so
    /// the result never depends on whether the timeout or a message came first at `now`.
    fn on_input(&mut self, now: Instant) {
        self.cluster.activate(self.log.image(), now);
        self.fence_expired_sessions(now);
    }

    /// Common epilogue: answer parked fetches that new records satisfy, check invariants.
    fn on_input_done(&mut self) {
        self.answer_satisfied_fetches();
        let end = self.log.end_offset();
        if end != self.invariants_checked_at {
            self.check_invariants();
            self.invariants_checked_at = end;
        }
    }

    /// Answers parked fetches whose offset is now below the log end.
    fn answer_satisfied_fetches(&mut self) {
        let end = self.log.end_offset();
        for w in self.waiters.take_satisfied(end) {
            let records = self.log.read_from(w.fetch_offset);
            self.respond(
                w.from,
                w.id,
                Response::FetchMetadata {
                    error: ErrorCode::None,
                    records,
                    end_offset: end,
                },
            );
        }
    }

    // ------------------------------------------------------------------ requests

    fn handle_request(&mut self, now: Instant, from: NodeId, id: CorrelationId, req: Request) {
        if from.cluster != self.config.cluster {
            // Brokers and clients only talk to their own cluster's controller.
            let resp = error_response(&req, ErrorCode::NotController, self.log.end_offset());
            self.respond(from, id, resp);
            return;
        }
        let resp = match req {
            Request::RegisterBroker {
                broker_id,
                incarnation,
            } => self.on_register_broker(now, broker_id, incarnation),
            Request::BrokerHeartbeat {
                broker_id,
                broker_epoch,
                metadata_offset,
                want_fence,
            } => {
                self.on_broker_heartbeat(now, broker_id, broker_epoch, metadata_offset, want_fence)
            }
            Request::FetchMetadata {
                fetch_offset,
                max_wait_ms,
                ..
            } => match self.on_fetch_metadata(now, from, id, fetch_offset, max_wait_ms) {
                Some(r) => r,
                None => return,
            },
            Request::AlterPartition {
                broker_id,
                broker_epoch,
                tp,
                leader_epoch,
                partition_epoch,
                new_isr,
            } => self.on_alter_partition(
                broker_id,
                broker_epoch,
                tp,
                leader_epoch,
                partition_epoch,
                &new_isr,
            ),
            Request::AllocateProducerIds {
                broker_id,
                broker_epoch,
            } => self.on_allocate_producer_ids(broker_id, broker_epoch),
            Request::BumpLeaderEpochs { partitions } => self.on_bump_leader_epochs(&partitions),
            Request::CreateTopics { topics } => self.on_create_topics(&topics),
            Request::DeleteTopics { names } => self.on_delete_topics(&names),
            Request::CreatePartitions { topic, count } => self.on_create_partitions(&topic, count),
            Request::ElectLeaders {
                partitions,
                unclean,
                test_only_candidate,
            } => self.on_elect_leaders(&partitions, unclean, test_only_candidate),
            Request::IncrementalAlterConfigs { resource, ops } => {
                self.on_incremental_alter_configs(&resource, &ops)
            }
            Request::CreateMirror {
                mirror_name,
                configs,
            } => self.on_create_mirror(&mirror_name, &configs),
            Request::DeleteMirror {
                mirror_name,
                state_validation_offset,
            } => self.on_delete_mirror(&mirror_name, state_validation_offset),
            Request::StartMirrorTopics {
                mirror_name,
                topics,
                include_patterns,
                exclude_patterns,
                state_validation_offset,
            } => self.on_start_mirror_topics(
                &mirror_name,
                &topics,
                (&include_patterns, &exclude_patterns),
                state_validation_offset,
            ),
            Request::StopMirrorTopics {
                mirror_name,
                topics,
                patterns,
                state_validation_offset,
            } => self.on_mirror_topics_op(
                &mirror_name,
                (&topics, &patterns),
                MirrorTopicsOp::Stop,
                state_validation_offset,
            ),
            Request::PauseMirrorTopics {
                mirror_name,
                topics,
            } => {
                self.on_mirror_topics_op(&mirror_name, (&topics, &[]), MirrorTopicsOp::Pause, None)
            }
            Request::ResumeMirrorTopics {
                mirror_name,
                topics,
            } => {
                self.on_mirror_topics_op(&mirror_name, (&topics, &[]), MirrorTopicsOp::Resume, None)
            }
            Request::ListMirrors { filter } => self.on_list_mirrors(&filter),
            Request::CreateAcls { creations } => self.on_create_acls(&creations),
            Request::DeleteAcls { filters } => self.on_delete_acls(&filters),
            other => error_response(&other, ErrorCode::InvalidRequest, self.log.end_offset()),
        };
        self.respond(from, id, resp);
    }

    /// Kafka: `ClusterControlManager.registerBroker`. The new registration's epoch is its
    /// record's offset; the broker starts fenced.
    fn on_register_broker(&mut self, now: Instant, broker: BrokerId, incarnation: u64) -> Response {
        if let Err(e) = self
            .cluster
            .check_registration(self.image(), broker, incarnation, now)
        {
            return Response::RegisterBroker {
                error: e.into(),
                broker_epoch: -1,
            };
        }
        if self.image().is_broker_active(broker) {
            // Simplification: pre-ELR Kafka would replace the registration without moving
            // the broker's leaderships; here a fenced broker never leads, so fence first.
            self.fence_broker(broker);
        }
        let offset = self.log.end_offset();
        self.append(MetadataRecord::RegisterBroker {
            broker_id: broker,
            broker_epoch: offset,
        });
        self.cluster.on_registered(broker, incarnation, now);
        Response::RegisterBroker {
            error: ErrorCode::None,
            broker_epoch: offset,
        }
    }

    /// Kafka: `ReplicationControlManager.processBrokerHeartbeat`.
    fn on_broker_heartbeat(
        &mut self,
        now: Instant,
        broker: BrokerId,
        broker_epoch: i64,
        metadata_offset: i64,
        want_fence: bool,
    ) -> Response {
        if let Err(e) = ClusterControl::check_broker_epoch(self.image(), broker, broker_epoch) {
            return Response::BrokerHeartbeat {
                error: e.into(),
                is_fenced: true,
            };
        }
        self.cluster.touch(broker, now);
        let fenced = !self.image().is_broker_active(broker);
        let next = next_broker_state(fenced, want_fence, metadata_offset, broker_epoch);
        match (fenced, next) {
            (true, BrokerControlState::Unfenced) => self.unfence_broker(broker),
            (false, BrokerControlState::Fenced) => self.fence_broker(broker),
            _ => {}
        }
        Response::BrokerHeartbeat {
            error: ErrorCode::None,
            is_fenced: next == BrokerControlState::Fenced,
        }
    }

    /// KRaft `Fetch` on the metadata log. Records from `fetch_offset` to the end; at the end,
    /// parks until a record is appended or `max_wait_ms` passes (then answers empty).
    /// An offset outside `[0, end]` gets OFFSET_OUT_OF_RANGE with the end offset: the
    /// controller's log is never truncated and has no snapshot, so such an offset can only
    /// come from a confused fetcher, which should restart from 0 (Kafka answers a fetch
    /// past the end with a diverging epoch; there is one epoch here).
    fn on_fetch_metadata(
        &mut self,
        now: Instant,
        from: NodeId,
        id: CorrelationId,
        fetch_offset: i64,
        max_wait_ms: i64,
    ) -> Option<Response> {
        let end = self.log.end_offset();
        if fetch_offset < 0 || fetch_offset > end {
            return Some(Response::FetchMetadata {
                error: ErrorCode::OffsetOutOfRange,
                records: Vec::new(),
                end_offset: end,
            });
        }
        if fetch_offset == end && max_wait_ms > 0 {
            self.waiters.park(
                now.plus_millis(max_wait_ms),
                FetchWaiter {
                    from,
                    id,
                    fetch_offset,
                },
            );
            return None;
        }
        Some(Response::FetchMetadata {
            error: ErrorCode::None,
            records: self.log.read_from(fetch_offset),
            end_offset: end,
        })
    }

    /// Kafka: `ReplicationControlManager.alterPartition`.
    fn on_alter_partition(
        &mut self,
        broker: BrokerId,
        broker_epoch: i64,
        tp: TopicPartition,
        leader_epoch: LeaderEpoch,
        partition_epoch: i32,
        new_isr: &[BrokerId],
    ) -> Response {
        let reject = |tp: TopicPartition, error: ErrorCode| Response::AlterPartition {
            tp,
            error,
            isr: Vec::new(),
            leader_epoch: LeaderEpoch::UNDEFINED,
            partition_epoch: -1,
        };
        if let Err(e) = ClusterControl::check_broker_epoch(self.image(), broker, broker_epoch) {
            return reject(tp, e.into());
        }
        let image = self.image();
        let (Some(topic_id), Some(current)) = (image.topic_id(&tp.topic), image.partition(&tp))
        else {
            return reject(tp, ErrorCode::UnknownTopicOrPartition);
        };
        let eligible = |b: BrokerId| image.is_broker_active(b);
        if let Err(e) = validate_alter_partition(
            current,
            broker,
            leader_epoch,
            partition_epoch,
            new_isr,
            &eligible,
        ) {
            return reject(tp, e.into());
        }
        // Simplification: the request carries no LeaderRecoveryState; a leader only alters
        // the ISR once it has recovered, so an accepted change also marks it RECOVERED.
        let change = PartitionChangeBuilder::new(current, &eligible)
            .target_isr(new_isr.to_vec())
            .election(self.topic_election(&tp.topic))
            .leader_recovered()
            .build();
        if let Some(c) = change {
            assert!(
                c.registration.leader == Some(broker),
                "alter_partition_keeps_leader: {tp} {:?}",
                c.registration.leader
            );
            self.append_partition_change(topic_id, tp.partition, c);
        }
        let r = self
            .image()
            .partition(&tp)
            .cloned()
            .expect("altered_partition_exists");
        Response::AlterPartition {
            tp,
            error: ErrorCode::None,
            isr: r.isr,
            leader_epoch: r.leader_epoch,
            partition_epoch: r.partition_epoch,
        }
    }

    /// Kafka: `ProducerIdControlManager.generateNextProducerId`.
    fn on_allocate_producer_ids(&mut self, broker: BrokerId, broker_epoch: i64) -> Response {
        let reject = |error: ErrorCode| Response::AllocateProducerIds {
            error,
            first_producer_id: ProducerId::NONE,
            count: 0,
        };
        if let Err(e) = ClusterControl::check_broker_epoch(self.image(), broker, broker_epoch) {
            return reject(e.into());
        }
        match self.producer_ids.next_block() {
            Err(e) => reject(e.into()),
            Ok((block, next_producer_id)) => {
                self.append(MetadataRecord::ProducerIds {
                    broker_id: broker,
                    next_producer_id,
                });
                Response::AllocateProducerIds {
                    error: ErrorCode::None,
                    first_producer_id: block.first_producer_id,
                    count: block.count,
                }
            }
        }
    }

    /// KIP-1279 `BumpLeaderEpochs`: per partition, if the leader epoch is at most
    /// `MinLeaderEpoch`, write a `PartitionChange` with epoch `max(current, min) + 1`, the
    /// leader unchanged and `min_leader_epoch` set; an epoch already above it needs nothing.
    fn on_bump_leader_epochs(&mut self, partitions: &[(TopicPartition, LeaderEpoch)]) -> Response {
        let mut results = Vec::with_capacity(partitions.len());
        for (tp, min) in partitions {
            let image = self.image();
            let (Some(topic_id), Some(current)) = (image.topic_id(&tp.topic), image.partition(tp))
            else {
                results.push((tp.clone(), ErrorCode::UnknownTopicOrPartition));
                continue;
            };
            let active = |b: BrokerId| image.is_broker_active(b);
            let change = PartitionChangeBuilder::new(current, &active)
                .min_leader_epoch(*min)
                .build();
            if let Some(c) = change {
                self.append_partition_change(topic_id, tp.partition, c);
            }
            results.push((tp.clone(), ErrorCode::None));
        }
        Response::PartitionErrors { results }
    }

    /// Kafka: `ReplicationControlManager.electLeaders`. PREFERRED moves leadership to the
    /// first replica; UNCLEAN only acts on partitions without a leader (Kafka's rule: to
    /// force an unclean election, a fault first fences or crashes the leader) and then may
    /// pick a replica outside the ISR. An empty list elects nothing (Kafka's "all
    /// partitions" form is not modelled).
    fn on_elect_leaders(
        &mut self,
        partitions: &[TopicPartition],
        unclean: bool,
        candidate: Option<BrokerId>,
    ) -> Response {
        let mut results = Vec::with_capacity(partitions.len());
        for tp in partitions {
            let image = self.image();
            let (Some(topic_id), Some(current)) = (image.topic_id(&tp.topic), image.partition(tp))
            else {
                results.push((tp.clone(), ErrorCode::UnknownTopicOrPartition));
                continue;
            };
            let not_needed = if unclean {
                current.leader.is_some()
            } else {
                current.leader.is_some() && current.leader == current.replicas.first().copied()
            };
            if not_needed {
                results.push((tp.clone(), ErrorCode::ElectionNotNeeded));
                continue;
            }
            // The test hook: every replica but the candidate counts as shut down.
            let active =
                |b: BrokerId| image.is_broker_active(b) && candidate.is_none_or(|c| c == b);
            let election = if unclean {
                Election::Unclean
            } else {
                Election::Preferred
            };
            let change = PartitionChangeBuilder::new(current, &active)
                .election(election)
                .build();
            match change {
                Some(c) => {
                    self.append_partition_change(topic_id, tp.partition, c);
                    results.push((tp.clone(), ErrorCode::None));
                }
                None if unclean => {
                    results.push((tp.clone(), ErrorCode::EligibleLeadersNotAvailable))
                }
                None => results.push((tp.clone(), ErrorCode::PreferredLeaderNotAvailable)),
            }
        }
        Response::PartitionErrors { results }
    }

    pub(super) fn usable_brokers(&self) -> BTreeSet<BrokerId> {
        self.image()
            .brokers
            .iter()
            .filter(|(_, b)| !b.fenced)
            .map(|(id, _)| *id)
            .collect()
    }

    /// A fresh topic id for this cluster: `(cluster + 1) << 64 | (n + 1)` where `n` counts
    /// the `Topic` records in the log, skipping ids in use. Stable for a given log,
    /// distinct across clusters, never zero, and readable in traces.
    fn new_topic_id(&self) -> TopicId {
        let high = (u128::from(self.config.cluster.0) + 1) << 64;
        let mut n = self.topic_records;
        loop {
            let id = TopicId(high | u128::from(n + 1));
            if !self.image().topics.contains_key(&id) {
                return id;
            }
            n += 1;
        }
    }

    /// Kafka: `ReplicationControlManager.createTopics`, topic by topic.
    fn on_create_topics(&mut self, topics: &[CreatableTopic]) -> Response {
        let mut seen = BTreeSet::new();
        let duplicates: BTreeSet<&str> = topics
            .iter()
            .filter(|t| !seen.insert(t.name.as_str()))
            .map(|t| t.name.as_str())
            .collect();
        let mut results = Vec::with_capacity(topics.len());
        // Kafka: `validateTotalNumberOfPartitions` runs first and fails the whole request.
        let total: i64 = topics
            .iter()
            .map(|t| match t.num_partitions {
                -1 => i64::from(self.config.default_num_partitions),
                n => i64::from(n.max(0)),
            })
            .sum();
        if total > replication::MAX_PARTITIONS_PER_BATCH {
            let e = TopicError::TooManyPartitions { requested: total };
            let results = topics
                .iter()
                .map(|t| (t.name.clone(), e.clone().into(), TopicId::ZERO))
                .collect();
            return Response::TopicErrors { results };
        }
        for t in topics {
            let result = if duplicates.contains(t.name.as_str()) {
                Err(TopicError::Duplicate(t.name.clone()))
            } else {
                self.create_topic(t)
            };
            match result {
                Ok(id) => results.push((t.name.clone(), ErrorCode::None, id)),
                Err(e) => results.push((t.name.clone(), e.into(), TopicId::ZERO)),
            }
        }
        Response::TopicErrors { results }
    }

    pub(super) fn create_topic(&mut self, t: &CreatableTopic) -> Result<TopicId, TopicError> {
        let image = self.image();
        if !replication::is_valid_topic_name(&t.name) {
            return Err(TopicError::InvalidName(t.name.clone()));
        }
        if image.topic_id(&t.name).is_some() {
            return Err(TopicError::AlreadyExists(t.name.clone()));
        }
        let unified = replication::unify_collision_chars(&t.name);
        if image
            .topic_ids
            .keys()
            .any(|n| replication::unify_collision_chars(n) == unified)
        {
            return Err(TopicError::InvalidName(t.name.clone()));
        }
        match t.topic_id {
            Some(TopicId::ZERO) => return Err(TopicError::InvalidRequest("zero topic id")),
            Some(id) if image.topics.contains_key(&id) => {
                return Err(TopicError::AlreadyExists(t.name.clone()));
            }
            _ => {}
        }
        for (k, v) in &t.configs {
            validate_topic_config(k, Some(v))?;
        }
        let num_partitions = match t.num_partitions {
            -1 => self.config.default_num_partitions,
            n => n,
        };
        if num_partitions < 1 {
            return Err(TopicError::InvalidPartitions {
                requested: t.num_partitions,
                current: 0,
            });
        }
        if i64::from(num_partitions) > replication::MAX_PARTITIONS_PER_BATCH {
            return Err(TopicError::TooManyPartitions {
                requested: i64::from(num_partitions),
            });
        }
        let usable = self.usable_brokers();
        let replication_factor = match t.replication_factor {
            // Simplification: the default is capped at the usable brokers (Kafka fails).
            -1 => {
                let n = i16::try_from(usable.len()).unwrap_or(i16::MAX);
                self.config.default_replication_factor.min(n).max(1)
            }
            rf => rf,
        };
        let assignments = place_replicas(&t.name, 0..num_partitions, replication_factor, &usable)?;
        let topic_id = t.topic_id.unwrap_or_else(|| self.new_topic_id());
        let resource = ConfigResource::Topic(t.name.clone());
        for (k, v) in &t.configs {
            self.append(MetadataRecord::Config {
                resource: resource.clone(),
                name: k.clone(),
                value: Some(v.clone()),
            });
        }
        self.append(MetadataRecord::Topic {
            name: t.name.clone(),
            topic_id,
        });
        self.append_partitions(topic_id, 0, assignments);
        Ok(topic_id)
    }

    /// `PartitionRecord`s: leader = first replica, ISR = all replicas, epochs 0.
    fn append_partitions(
        &mut self,
        topic_id: TopicId,
        first: i32,
        assignments: Vec<Vec<BrokerId>>,
    ) {
        for (p, replicas) in (first..).zip(assignments) {
            let registration = PartitionRegistration {
                leader: replicas.first().copied(),
                isr: replicas.clone(),
                replicas,
                leader_epoch: LeaderEpoch(0),
                partition_epoch: 0,
                leader_recovering: false,
            };
            self.append(MetadataRecord::Partition {
                topic_id,
                partition: p,
                registration,
            });
        }
    }

    /// Kafka: `ReplicationControlManager.deleteTopics` (by name).
    fn on_delete_topics(&mut self, names: &[String]) -> Response {
        let mut seen = BTreeSet::new();
        let duplicates: BTreeSet<&str> = names
            .iter()
            .filter(|n| !seen.insert(n.as_str()))
            .map(String::as_str)
            .collect();
        let mut results = Vec::with_capacity(names.len());
        for name in names {
            if duplicates.contains(name.as_str()) {
                results.push((name.clone(), ErrorCode::InvalidRequest, TopicId::ZERO));
                continue;
            }
            match self.image().topic_id(name) {
                None => results.push((
                    name.clone(),
                    ErrorCode::UnknownTopicOrPartition,
                    TopicId::ZERO,
                )),
                Some(topic_id) => match check_mirror_topic_mutable(self.image(), name) {
                    // KIP-1279 B §6.3: a mirror topic is read-only until stopped.
                    Err(e) => results.push((name.clone(), e.into(), topic_id)),
                    Ok(()) => {
                        self.append(MetadataRecord::RemoveTopic { topic_id });
                        results.push((name.clone(), ErrorCode::None, topic_id));
                    }
                },
            }
        }
        Response::TopicErrors { results }
    }

    /// Kafka: `ReplicationControlManager.createPartitions`: the count must grow; new
    /// partitions get the replication factor of partition 0, placed as at creation.
    /// KIP-1279 B §6.3: refused with INVALID_MIRROR_STATE on a mirror topic not stopped.
    fn on_create_partitions(&mut self, topic: &str, count: i32) -> Response {
        let error = match check_mirror_topic_mutable(self.image(), topic) {
            Err(e) => e.into(),
            Ok(()) => match self.create_partitions(topic, count) {
                Ok(()) => ErrorCode::None,
                Err(e) => e.into(),
            },
        };
        let id = self.image().topic_id(topic).unwrap_or(TopicId::ZERO);
        Response::TopicErrors {
            results: vec![(topic.to_string(), error, id)],
        }
    }

    /// Adds partitions up to `count` (no mirror read-only check: KIP-1279 start uses it to
    /// follow the source's partition count).
    pub(super) fn create_partitions(&mut self, topic: &str, count: i32) -> Result<(), TopicError> {
        let image = self.image();
        let Some(topic_id) = image.topic_id(topic) else {
            return Err(TopicError::UnknownTopic(topic.to_string()));
        };
        let t = image.topics.get(&topic_id).expect("topic_ids_match_topics");
        let current = i32::try_from(t.partitions.len()).unwrap_or(i32::MAX);
        if count <= current {
            return Err(TopicError::InvalidPartitions {
                requested: count,
                current,
            });
        }
        let added = i64::from(count) - i64::from(current);
        if added > replication::MAX_PARTITIONS_PER_BATCH {
            return Err(TopicError::TooManyPartitions { requested: added });
        }
        let rf = t
            .partitions
            .values()
            .next()
            .map_or(1, |r| i16::try_from(r.replicas.len()).unwrap_or(i16::MAX));
        let assignments = place_replicas(topic, current..count, rf, &self.usable_brokers())?;
        self.append_partitions(topic_id, current, assignments);
        Ok(())
    }

    /// Kafka: `ConfigurationControlManager.incrementalAlterConfigs` for one resource. Keys
    /// whose value would not change write nothing. Enabling unclean election on a topic
    /// immediately elects leaders for its offline partitions (simplification: Kafka does
    /// this from a periodic task).
    fn on_incremental_alter_configs(
        &mut self,
        resource: &ConfigResource,
        ops: &[(String, Option<String>)],
    ) -> Response {
        let (name, topic_id) = match resource {
            ConfigResource::Topic(n) => (n.clone(), self.image().topic_id(n)),
            ConfigResource::Broker(b) => (b.0.to_string(), None),
            // KIP-1279: a mirror's configs have their own rules (`mirror_patterns`).
            ConfigResource::Mirror(m) => return self.on_alter_mirror_configs(m, ops),
        };
        let error = match self.alter_configs(resource, topic_id, ops) {
            Ok(()) => ErrorCode::None,
            Err(e) => e.into(),
        };
        Response::TopicErrors {
            results: vec![(name, error, topic_id.unwrap_or(TopicId::ZERO))],
        }
    }

    fn alter_configs(
        &mut self,
        resource: &ConfigResource,
        topic_id: Option<TopicId>,
        ops: &[(String, Option<String>)],
    ) -> Result<(), TopicError> {
        if let ConfigResource::Topic(name) = resource {
            if topic_id.is_none() {
                return Err(TopicError::UnknownTopic(name.clone()));
            }
            for (k, v) in ops {
                if k == MIRROR_NAME_CONFIG {
                    // KIP-1279: only the mirror admin APIs may change `mirror.name`.
                    return Err(TopicError::InvalidConfig {
                        key: k.clone(),
                        value: v.clone().unwrap_or_default(),
                    });
                }
                validate_topic_config(k, v.as_deref())?;
            }
        }
        let mut keys = BTreeSet::new();
        if ops.iter().any(|(k, _)| !keys.insert(k.as_str())) {
            return Err(TopicError::InvalidRequest("duplicate config key"));
        }
        self.append_config_changes(resource, ops);
        if let (ConfigResource::Topic(name), Some(id)) = (resource, topic_id)
            && self.unclean_leader_election_enabled(name)
        {
            self.elect_offline_partitions(Some(id));
        }
        Ok(())
    }

    /// One `ConfigRecord` per key of `ops` whose value differs from the image's (a set to the
    /// same value, or a delete of an unset key, writes nothing).
    pub(super) fn append_config_changes(
        &mut self,
        resource: &ConfigResource,
        ops: &[(String, Option<String>)],
    ) {
        let current = self
            .image()
            .configs
            .get(resource)
            .cloned()
            .unwrap_or_default();
        for (k, v) in ops {
            if current.get(k) == v.as_ref() {
                continue;
            }
            self.append(MetadataRecord::Config {
                resource: resource.clone(),
                name: k.clone(),
                value: v.clone(),
            });
        }
    }
}

/// The response a controller gives `req` when it refuses it wholesale with `error`, in the
/// shape the requester expects. Requests a controller does not serve get `Response::Error`.
fn error_response(req: &Request, error: ErrorCode, end_offset: i64) -> Response {
    match req {
        Request::RegisterBroker { .. } => Response::RegisterBroker {
            error,
            broker_epoch: -1,
        },
        Request::BrokerHeartbeat { .. } => Response::BrokerHeartbeat {
            error,
            is_fenced: true,
        },
        Request::FetchMetadata { .. } => Response::FetchMetadata {
            error,
            records: Vec::new(),
            end_offset,
        },
        Request::AlterPartition { tp, .. } => Response::AlterPartition {
            tp: tp.clone(),
            error,
            isr: Vec::new(),
            leader_epoch: LeaderEpoch::UNDEFINED,
            partition_epoch: -1,
        },
        Request::AllocateProducerIds { .. } => Response::AllocateProducerIds {
            error,
            first_producer_id: ProducerId::NONE,
            count: 0,
        },
        Request::BumpLeaderEpochs { partitions } => Response::PartitionErrors {
            results: partitions
                .iter()
                .map(|(tp, _)| (tp.clone(), error))
                .collect(),
        },
        Request::ElectLeaders { partitions, .. } => Response::PartitionErrors {
            results: partitions.iter().map(|tp| (tp.clone(), error)).collect(),
        },
        Request::CreateTopics { topics } => Response::TopicErrors {
            results: topics
                .iter()
                .map(|t| (t.name.clone(), error, TopicId::ZERO))
                .collect(),
        },
        Request::DeleteTopics { names } => Response::TopicErrors {
            results: names
                .iter()
                .map(|n| (n.clone(), error, TopicId::ZERO))
                .collect(),
        },
        Request::CreatePartitions { topic, .. } => Response::TopicErrors {
            results: vec![(topic.clone(), error, TopicId::ZERO)],
        },
        Request::CreateMirror { .. } | Request::DeleteMirror { .. } => {
            mirror_admin_error(error, &[])
        }
        Request::StartMirrorTopics { topics, .. } => {
            let names: Vec<&str> = topics.iter().map(|t| t.name.as_str()).collect();
            mirror_admin_error(error, &names)
        }
        Request::StopMirrorTopics { topics, .. }
        | Request::PauseMirrorTopics { topics, .. }
        | Request::ResumeMirrorTopics { topics, .. } => {
            let names: Vec<&str> = topics.iter().map(String::as_str).collect();
            mirror_admin_error(error, &names)
        }
        Request::ListMirrors { .. } => Response::ListMirrors {
            error,
            mirrors: Vec::new(),
        },
        Request::CreateAcls { creations } => Response::CreateAcls {
            results: creations.iter().map(|_| (error, None)).collect(),
        },
        Request::DeleteAcls { filters } => Response::DeleteAcls {
            results: filters
                .iter()
                .map(|_| crate::protocol::acl::DeleteAclsFilterResult {
                    error,
                    message: None,
                    matching: Vec::new(),
                })
                .collect(),
        },
        Request::IncrementalAlterConfigs { resource, .. } => {
            let name = match resource {
                ConfigResource::Topic(n) | ConfigResource::Mirror(n) => n.clone(),
                ConfigResource::Broker(b) => b.0.to_string(),
            };
            Response::TopicErrors {
                results: vec![(name, error, TopicId::ZERO)],
            }
        }
        _ => Response::Error { error },
    }
}

impl Node for Controller {
    fn handle_message(&mut self, now: Instant, from: NodeId, id: CorrelationId, message: Message) {
        self.on_input(now);
        match message {
            Message::Request(req) => self.handle_request(now, from, id, req),
            // The controller sends no requests, so there is nothing to correlate.
            Message::Response(_) => {}
        }
        self.on_input_done();
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.on_input(now);
        // Records appended by session expiry at `now` go to parked fetches first.
        self.answer_satisfied_fetches();
        let end = self.log.end_offset();
        for w in self.waiters.take_expired(now) {
            self.respond(
                w.from,
                w.id,
                Response::FetchMetadata {
                    error: ErrorCode::None,
                    records: Vec::new(),
                    end_offset: end,
                },
            );
        }
        self.on_input_done();
    }

    fn poll_output(&mut self) -> Option<Output> {
        self.outputs.pop_front()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let sessions = self.cluster.next_expiry(self.image());
        let fetches = self.waiters.next_deadline();
        sessions.into_iter().chain(fetches).min()
    }
}
