//! Hosting the `__mirror_state` coordinator (KIP-1279 B §3, §4.2): the leader of each
//! `__mirror_state` partition runs a [`MirrorStateStore`], answers `ReadMirrorStates`,
//! persists `WriteMirrorStates` with acks=all before answering, and answers the LME lookups of
//! `DescribeMirrors` from what it hosts (local-only, as in the prototype). `DescribeMirrors`
//! without lookups (the describe of states and lags) is answered here too, from the mirror
//! runs this broker leads and the records it hosts.

use std::collections::BTreeMap;

use crate::broker::broker::Broker;
use crate::broker::coordinator_runtime::write_outcome;
use crate::coordinator::{CoordinatorRecord, build_batch};
use crate::log::producer_state::AppendOrigin;
use crate::mirror::{
    Design, MirrorPartitionKey, MirrorPartitionState, MirrorStateStore, StateWrite,
};
use crate::protocol::messages::{
    MirrorDescription, MirrorPartitionDescription, MirrorPartitionStateData,
    MirrorTopicDescription, ReadMirrorStatesTopic, ReadMirrorStatesTopicResult,
    WriteMirrorStatesTopic, WriteMirrorStatesTopicResult,
};
use crate::protocol::metadata::{
    ConfigResource, ConfigResourceRef, MIRROR_SOURCE_CLUSTER_CONFIG, MIRROR_STATE_TOPIC,
    MIRROR_STATE_TOPIC_PARTITIONS,
};
use crate::protocol::{CorrelationId, ErrorCode, NodeId, Response};
use crate::types::{LeaderEpoch, Offset, TopicId, TopicPartition};

/// Mirror config key naming the source cluster's index in the simulated world.
pub const SOURCE_CLUSTER_INDEX_CONFIG: &str = "source.cluster.index";
/// Mirror config key listing the source brokers to bootstrap from (`1,2,3`).
pub const BOOTSTRAP_SERVERS_CONFIG: &str = "bootstrap.servers";

/// A write waiting for its records to be replicated.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::broker) struct MirrorWrite {
    pub partition: i32,
    pub epoch: LeaderEpoch,
    /// When the write gives up waiting for the HW (`mirror.coordinator.write.timeout.ms`).
    pub expires_ms: i64,
    pub client: (NodeId, CorrelationId),
    pub response: Response,
}

/// Hosted mirror state stores.
#[derive(Debug, Default)]
pub struct MirrorCoordinatorHost {
    pub(in crate::broker) stores: BTreeMap<i32, (LeaderEpoch, MirrorStateStore)>,
    pub(in crate::broker) writes: BTreeMap<(Offset, u64), MirrorWrite>,
    pub(in crate::broker) next: u64,
}

impl MirrorCoordinatorHost {
    /// The store of `__mirror_state` partition `p`, if hosted here.
    #[must_use]
    pub fn store(&self, p: i32) -> Option<&MirrorStateStore> {
        self.stores.get(&p).map(|(_, s)| s)
    }
}

impl Broker {
    pub(in crate::broker) fn mirror_design(&self) -> Design {
        self.config.mirror_design
    }

    /// (Un)loads the store of a `__mirror_state` partition after a leadership change.
    pub(in crate::broker) fn on_mirror_state_leadership(&mut self, tp: &TopicPartition) {
        if tp.topic.as_ref() != MIRROR_STATE_TOPIC {
            return;
        }
        let leading = self
            .partitions
            .get(tp)
            .filter(|p| p.is_leader())
            .map(|p| p.leader_epoch);
        if leading.is_some()
            && self.mirror_coord.stores.get(&tp.partition).map(|(e, _)| *e) == leading
        {
            return;
        }
        self.mirror_coord.stores.remove(&tp.partition);
        self.complete_mirror_writes();
        let Some(epoch) = leading else {
            return;
        };
        let mut store = MirrorStateStore::new(self.mirror_design());
        for b in self.partitions[tp]
            .log
            .batches()
            .filter(|b| !b.is_control_batch())
        {
            for r in b.records() {
                if let Some(k) = r.key {
                    let _ = store.replay(&k, r.value.as_deref());
                }
            }
        }
        self.mirror_coord
            .stores
            .insert(tp.partition, (epoch, store));
    }

    /// The store of `__mirror_state` partition `sp` as of its HW, rebuilt from the committed
    /// records, when the log holds records above the HW; `None` when all are committed (the
    /// live store is then the committed one).
    fn committed_mirror_store(&self, sp: i32) -> Option<MirrorStateStore> {
        let p = self
            .partitions
            .get(&TopicPartition::new(MIRROR_STATE_TOPIC, sp))?;
        let hw = p.log.high_watermark();
        if hw >= p.log.log_end_offset() {
            return None;
        }
        let mut store = MirrorStateStore::new(self.mirror_design());
        for b in p
            .log
            .batches()
            .filter(|b| !b.is_control_batch() && b.last_offset() < hw)
        {
            for r in b.records() {
                if let Some(k) = r.key {
                    let _ = store.replay(&k, r.value.as_deref());
                }
            }
        }
        Some(store)
    }

    /// What this broker, as the `__mirror_state` coordinator of `key`, holds for it:
    /// `None` when it does not host the key's store partition, `Some(None)` when it holds no
    /// record. Reads see only committed state (Kafka CoordinatorRuntime: read operations run
    /// against the last committed offset). The live store already holds writes whose records
    /// are not replicated yet; answering from it let a leader take a transition a later
    /// coordinator never saw as its own (mirror chaos seed 102: PAUSED→MIRRORING reported
    /// twice with state epoch 5).
    #[must_use]
    pub fn committed_mirror_state(
        &self,
        key: &MirrorPartitionKey,
    ) -> Option<
        Option<(
            crate::mirror::MirrorPartitionStatus,
            crate::mirror::LastMirrorEpochsValue,
        )>,
    > {
        let sp = crate::mirror::mirror_state_partition(
            &key.mirror_name,
            key.topic_id,
            key.partition,
            MIRROR_STATE_TOPIC_PARTITIONS,
        );
        let (_, store) = self.mirror_coord.stores.get(&sp)?;
        Some(match self.committed_mirror_store(sp) {
            Some(committed) => committed.read(key),
            None => store.read(key),
        })
    }

    /// The `ReadMirrorStates` answer for one partition, as this broker gives it now
    /// (NOT_COORDINATOR when it does not host the record's store partition).
    #[must_use]
    pub fn read_mirror_state(&self, key: &MirrorPartitionKey) -> MirrorPartitionStateData {
        match self.committed_mirror_state(key) {
            Some(read) => state_data(key.partition, ErrorCode::None, read),
            None => state_data(key.partition, ErrorCode::NotCoordinator, None),
        }
    }

    pub(in crate::broker) fn handle_read_mirror_states(
        &mut self,
        mirror_name: &str,
        topics: Vec<ReadMirrorStatesTopic>,
    ) -> Response {
        let mut out = Vec::new();
        for t in topics {
            let mut parts = Vec::new();
            for p in t.partitions {
                let key = MirrorPartitionKey {
                    mirror_name: mirror_name.to_string(),
                    topic_id: t.topic_id,
                    partition: p,
                };
                parts.push(match self.committed_mirror_state(&key) {
                    Some(read) => state_data(p, ErrorCode::None, read),
                    None => state_data(p, ErrorCode::NotCoordinator, None),
                });
            }
            out.push(ReadMirrorStatesTopicResult {
                name: t.name,
                error: ErrorCode::None,
                message: None,
                partitions: parts,
            });
        }
        Response::ReadMirrorStates {
            error: ErrorCode::None,
            topics: out,
        }
    }

    /// Applies writes to the hosted store and appends the records; the answer goes out once
    /// they are replicated. One partition per request (the mirror manager sends them so).
    pub(in crate::broker) fn handle_write_mirror_states(
        &mut self,
        from: NodeId,
        id: CorrelationId,
        mirror_name: &str,
        topics: Vec<WriteMirrorStatesTopic>,
    ) {
        let mut results = Vec::new();
        let mut records: BTreeMap<i32, Vec<CoordinatorRecord>> = BTreeMap::new();
        for t in &topics {
            let mut parts = Vec::new();
            let data_tp = TopicPartition::new(t.name.as_str(), 0);
            for w in &t.partitions {
                let key = MirrorPartitionKey {
                    mirror_name: mirror_name.to_string(),
                    topic_id: t.topic_id,
                    partition: w.partition,
                };
                let sp = crate::mirror::mirror_state_partition(
                    mirror_name,
                    t.topic_id,
                    w.partition,
                    MIRROR_STATE_TOPIC_PARTITIONS,
                );
                let current = self
                    .image
                    .partition(&TopicPartition::new(data_tp.topic.clone(), w.partition))
                    .map(|r| r.leader_epoch);
                let Some((_, store)) = self.mirror_coord.stores.get_mut(&sp) else {
                    parts.push((w.partition, ErrorCode::NotCoordinator, -1));
                    continue;
                };
                let write = StateWrite {
                    key: key.clone(),
                    target_state: MirrorPartitionState::from_value(w.state)
                        .filter(|s| *s != MirrorPartitionState::Unknown),
                    leader_epoch: w.leader_epoch.unwrap_or(LeaderEpoch::UNDEFINED),
                    state_epoch: w.state_epoch.unwrap_or(StateWrite::SKIP_STATE_EPOCH),
                    error: w.error_message.clone(),
                    retry_attempt: w.retry_attempt,
                    last_mirror: w
                        .last_mirror_epoch
                        .map(|e| (e.0, w.last_mirror_offset.map_or(-1, |o| o.0))),
                };
                match store.handle_write(&write, current) {
                    Ok(recs) => {
                        let new_epoch = store.read(&key).map_or(0, |(s, _)| s.state_epoch);
                        records.entry(sp).or_default().extend(recs);
                        parts.push((w.partition, ErrorCode::None, new_epoch));
                    }
                    Err(e) => parts.push((w.partition, e.into(), -1)),
                }
            }
            results.push(WriteMirrorStatesTopicResult {
                name: t.name.clone(),
                error: ErrorCode::None,
                message: None,
                partitions: parts,
            });
        }
        let response = Response::WriteMirrorStates {
            error: ErrorCode::None,
            topics: results,
        };
        if records.values().all(Vec::is_empty) {
            self.respond(from, id, response);
            return;
        }
        // One store partition per request in practice; answer after the last append commits.
        let mut last: Option<(i32, Offset, LeaderEpoch)> = None;
        for (sp, recs) in records {
            if recs.is_empty() {
                continue;
            }
            let tp = TopicPartition::new(MIRROR_STATE_TOPIC, sp);
            let batch = build_batch(&recs, self.now.as_millis());
            let epoch = self
                .partitions
                .get(&tp)
                .map_or(LeaderEpoch::UNDEFINED, |p| p.leader_epoch);
            match self.append_leader(&tp, &batch, AppendOrigin::Coordinator) {
                Ok(info) => last = Some((sp, info.last_offset.plus(1), epoch)),
                Err(e) => {
                    // The store already applied the write: rebuild it from the log.
                    self.on_mirror_state_leadership_reload(&tp);
                    self.respond(
                        from,
                        id,
                        Response::WriteMirrorStates {
                            error: crate::coordinator::coordinator_append_error(e),
                            topics: Vec::new(),
                        },
                    );
                    return;
                }
            }
        }
        let (partition, required, epoch) = last.expect("records were appended");
        let seq = self.mirror_coord.next;
        self.mirror_coord.next += 1;
        self.mirror_coord.writes.insert(
            (required, seq),
            MirrorWrite {
                partition,
                epoch,
                expires_ms: self.now.as_millis() + self.config.mirror_coordinator_write_timeout_ms,
                client: (from, id),
                response,
            },
        );
        self.complete_mirror_writes();
    }

    fn on_mirror_state_leadership_reload(&mut self, tp: &TopicPartition) {
        self.mirror_coord.stores.remove(&tp.partition);
        self.on_mirror_state_leadership(tp);
    }

    /// Answers writes whose records the HW passed; fails writes whose store partition this
    /// broker no longer leads in the write's epoch, and writes that waited longer than
    /// `mirror.coordinator.write.timeout.ms`.
    ///
    /// A timed-out write is answered COORDINATOR_NOT_AVAILABLE, as the group coordinator maps
    /// its runtime's REQUEST_TIMED_OUT (`GroupCoordinatorService`; the prototype's mirror
    /// service is not public). As in `CoordinatorRuntime`, a timeout reverts nothing: the
    /// records stay in the log and the store keeps them as its latest (uncommitted) state.
    pub(in crate::broker) fn complete_mirror_writes(&mut self) {
        let keys: Vec<(Offset, u64)> = self.mirror_coord.writes.keys().copied().collect();
        let now_ms = self.now.as_millis();
        for key in keys {
            let w = &self.mirror_coord.writes[&key];
            let tp = TopicPartition::new(MIRROR_STATE_TOPIC, w.partition);
            let (hw, epoch, leader) = match self.partitions.get(&tp) {
                Some(p) => (p.log.high_watermark(), p.leader_epoch, p.is_leader()),
                None => (Offset(-1), LeaderEpoch::UNDEFINED, false),
            };
            let lost = !leader || epoch != w.epoch;
            let Some(error) = write_outcome(lost, now_ms >= w.expires_ms, hw, key.0) else {
                continue;
            };
            let w = self.mirror_coord.writes.remove(&key).expect("listed");
            let resp = if error.is_ok() {
                w.response
            } else {
                Response::WriteMirrorStates {
                    error,
                    topics: Vec::new(),
                }
            };
            self.respond(w.client.0, w.client.1, resp);
        }
        self.arm_coordinator_write_timeout();
    }

    /// A mirror's configs changed: once the mirror is deleted (no config left), the hosted
    /// stores write its tombstones (prototype: brokers write them after DeleteClusterMirror).
    pub(in crate::broker) fn on_mirror_config_changed(&mut self, mirror: &str) {
        let exists = self
            .image
            .configs_of(ConfigResourceRef::Mirror(mirror))
            .is_some_and(|c| !c.is_empty());
        if exists {
            return;
        }
        let parts: Vec<i32> = self.mirror_coord.stores.keys().copied().collect();
        for sp in parts {
            let recs = match self.mirror_coord.stores.get_mut(&sp) {
                Some((_, store)) => store.tombstones(mirror),
                None => continue,
            };
            if recs.is_empty() {
                continue;
            }
            let tp = TopicPartition::new(MIRROR_STATE_TOPIC, sp);
            let batch = build_batch(&recs, self.now.as_millis());
            if self
                .append_leader(&tp, &batch, AppendOrigin::Coordinator)
                .is_err()
            {
                self.on_mirror_state_leadership_reload(&tp);
            }
        }
    }

    /// LME lookups (`DescribeMirrors` with `last_mirror_epoch_lookups`): for every mirror
    /// defined here whose source is the asking cluster, what the hosted stores know.
    pub(in crate::broker) fn handle_describe_mirrors(
        &self,
        cluster_id: Option<String>,
        lookups: Vec<(TopicId, Vec<i32>)>,
    ) -> Response {
        let mut mirrors = Vec::new();
        let names: Vec<String> = self
            .image
            .configs
            .keys()
            .filter_map(|r| match r {
                ConfigResource::Mirror(n) => Some(n.clone()),
                _ => None,
            })
            .collect();
        for name in names {
            let cfg = self.image.configs_of(ConfigResourceRef::Mirror(&name));
            let source = cfg
                .and_then(|c| c.get(SOURCE_CLUSTER_INDEX_CONFIG))
                .cloned()
                .unwrap_or_default();
            if cluster_id.as_ref().is_some_and(|c| *c != source) {
                continue;
            }
            let mut topics = Vec::new();
            for (topic_id, parts) in &lookups {
                let topic_name = self
                    .image
                    .topics
                    .get(topic_id)
                    .map_or_else(|| topic_id.to_string(), |t| t.name.clone());
                let mut pds = Vec::new();
                for p in parts {
                    let key = MirrorPartitionKey {
                        mirror_name: name.clone(),
                        topic_id: *topic_id,
                        partition: *p,
                    };
                    let sp = crate::mirror::mirror_state_partition(
                        &name,
                        *topic_id,
                        *p,
                        MIRROR_STATE_TOPIC_PARTITIONS,
                    );
                    if let Some((_, store)) = self.mirror_coord.stores.get(&sp)
                        && let Some((status, last)) = store.read(&key)
                    {
                        // A partition whose stop was requested (desired STOPPED) reports
                        // STOPPING until it is STOPPED: the asking cluster waits instead of
                        // seeing a loop (prototype: loops are judged on the desired state).
                        let stopping = self.mirror_membership(&topic_name).is_some_and(|m| {
                            m.desired == crate::protocol::metadata::DesiredMirrorState::Stopped
                        });
                        let state = if stopping && status.state != MirrorPartitionState::Stopped {
                            MirrorPartitionState::Stopping
                        } else {
                            status.state
                        };
                        pds.push(MirrorPartitionDescription {
                            partition: *p,
                            state: state.to_string(),
                            last_mirror_epoch: last.last_mirror_epoch,
                            last_mirror_offset: last.last_mirror_offset,
                            source_offset: -1,
                            destination_offset: -1,
                            error_message: status.error_message.clone(),
                            retry_attempt: status.retry_attempt,
                        });
                    }
                }
                let desired = self
                    .mirror_membership(&topic_name)
                    .filter(|m| m.mirror_name == name)
                    .map(|m| m.desired);
                if !pds.is_empty() || desired.is_some() {
                    topics.push(MirrorTopicDescription {
                        name: topic_name,
                        desired,
                        partitions: pds,
                    });
                }
            }
            mirrors.push(MirrorDescription {
                mirror_name: name,
                error: ErrorCode::None,
                source,
                topics,
            });
        }
        Response::DescribeMirrors { mirrors }
    }

    /// KIP-1279 `DescribeClusterMirrors` without LME lookups: the states and lags this
    /// broker knows, local-only as the prototype's brokers answer (each partition's leader
    /// reports its `LeaderStateDescription`). For every mirror (all, or the requested ones; a
    /// requested name that does not exist answers UNKNOWN_CLUSTER_MIRROR), every topic this
    /// broker's metadata puts in it, every partition:
    /// - that it leads: the state of its mirror run (UNKNOWN before the first read; named as
    ///   the design names it), the retry attempt and the FAILED reason; while the mirror
    ///   fetcher fetches the partition, the source HW the fetcher last saw (`-1` before the
    ///   first answer) and the local LEO, else `-1` for both;
    /// - whose `__mirror_state` record it hosts: the committed record's LME and LMO, and,
    ///   when it does not lead the partition, the state, retry attempt and reason the record
    ///   holds (offsets `-1`).
    ///
    /// Partitions it neither leads nor hosts are left out. An admin client merges the
    /// brokers' answers: state, offsets, retry attempt and reason from the partition's
    /// leader, LME and LMO as the maximum (as for lookups).
    #[must_use]
    pub fn describe_mirrors(&self, names: Option<&[String]>) -> Response {
        let defined: Vec<String> = self.image.mirror_names();
        let wanted: Vec<String> = names.map_or_else(|| defined.clone(), <[String]>::to_vec);
        let mirrors = wanted
            .into_iter()
            .map(|name| {
                if !defined.contains(&name) {
                    return MirrorDescription {
                        mirror_name: name,
                        error: ErrorCode::UnknownClusterMirror,
                        source: String::new(),
                        topics: Vec::new(),
                    };
                }
                let source = self
                    .image
                    .configs_of(ConfigResourceRef::Mirror(&name))
                    .and_then(|c| c.get(MIRROR_SOURCE_CLUSTER_CONFIG))
                    .cloned()
                    .unwrap_or_default();
                let topics = crate::controller::mirror_admin::mirror_topics(&self.image, &name)
                    .into_iter()
                    .map(|(topic, desired)| MirrorTopicDescription {
                        partitions: self.describe_mirror_topic(&name, &topic),
                        name: topic,
                        desired: Some(desired),
                    })
                    .collect();
                MirrorDescription {
                    mirror_name: name,
                    error: ErrorCode::None,
                    source,
                    topics,
                }
            })
            .collect();
        Response::DescribeMirrors { mirrors }
    }

    /// [`Self::describe_mirrors`] for one topic of `mirror`.
    fn describe_mirror_topic(&self, mirror: &str, topic: &str) -> Vec<MirrorPartitionDescription> {
        let Some(topic_id) = self.image.topic_id(topic) else {
            return Vec::new();
        };
        let count = self
            .image
            .topics
            .get(&topic_id)
            .map_or(0, |t| t.partitions.len());
        let design = self.mirror_design();
        let mut out = Vec::new();
        for p in 0..i32::try_from(count).unwrap_or(i32::MAX) {
            let tp = TopicPartition::new(topic, p);
            let key = MirrorPartitionKey {
                mirror_name: mirror.to_string(),
                topic_id,
                partition: p,
            };
            let record = self.committed_mirror_state(&key).flatten();
            let (lme, lmo) = record.as_ref().map_or((-1, -1), |(_, last)| {
                (last.last_mirror_epoch, last.last_mirror_offset)
            });
            let led = self
                .partitions
                .get(&tp)
                .filter(|x| x.is_leader())
                .and(self.mirror_runs.get(&tp).filter(|r| r.mirror == mirror));
            let (state, retry_attempt, error_message, source_offset, destination_offset) =
                match (led, &record) {
                    (Some(run), _) => {
                        let status = run.status.as_ref();
                        let fetched = self.mirror_fetch.parts.get(&tp);
                        (
                            run.state(),
                            status.map_or(0, |s| s.retry_attempt),
                            status.and_then(|s| s.error_message.clone()),
                            fetched
                                .and_then(|f| f.source_high_watermark)
                                .map_or(-1, |o| o.0),
                            fetched
                                .and_then(|_| self.partitions.get(&tp))
                                .map_or(-1, |x| x.log.log_end_offset().0),
                        )
                    }
                    (None, Some((status, _))) => (
                        status.state,
                        status.retry_attempt,
                        status.error_message.clone(),
                        -1,
                        -1,
                    ),
                    (None, None) => continue,
                };
            out.push(MirrorPartitionDescription {
                partition: p,
                state: state.name_in(&design).to_string(),
                last_mirror_epoch: lme,
                last_mirror_offset: lmo,
                source_offset,
                destination_offset,
                error_message,
                retry_attempt,
            });
        }
        out
    }
}

fn state_data(
    partition: i32,
    error: ErrorCode,
    read: Option<(
        crate::mirror::MirrorPartitionStatus,
        crate::mirror::LastMirrorEpochsValue,
    )>,
) -> MirrorPartitionStateData {
    match read {
        Some((s, last)) => MirrorPartitionStateData {
            partition,
            error,
            state: s.state.value(),
            leader_epoch: Some(s.leader_epoch),
            state_epoch: s.state_epoch,
            last_mirror_epoch: (last.last_mirror_epoch >= 0)
                .then_some(LeaderEpoch(last.last_mirror_epoch)),
            last_mirror_offset: (last.last_mirror_offset >= 0)
                .then_some(Offset(last.last_mirror_offset)),
            error_message: s.error_message,
            retry_attempt: s.retry_attempt,
            previous_state: s.previous_state.value(),
        },
        None => MirrorPartitionStateData {
            partition,
            error,
            state: MirrorPartitionState::Unknown.value(),
            leader_epoch: None,
            state_epoch: 0,
            last_mirror_epoch: None,
            last_mirror_offset: None,
            error_message: None,
            retry_attempt: 0,
            previous_state: MirrorPartitionState::Unknown.value(),
        },
    }
}
