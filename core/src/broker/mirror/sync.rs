//! KIP-1279 metadata sync (spec kip1279.md A.1 "Metadata sync", B §8.10, §8.11; prototype
//! `MirrorMetadataManager.syncMirrorMetadata` / `MirrorSourceSyncer`).
//!
//! The broker that leads `__mirror_state` partition [`mirror_coordinator_partition`] of a
//! mirror is that mirror's coordinator. Every `mirror.metadata.refresh.interval.ms` (mirror
//! config, [`DEFAULT_METADATA_REFRESH_INTERVAL_MS`]) it runs one *sync round*:
//!
//! 1. Phase 1, gathered in parallel: the source's metadata of the mirror's topics (partition
//!    counts, ids), the **persisted** partition states (`ReadMirrorStates` to each
//!    `__mirror_state` leader), and the destination log start and log end offset of every
//!    partition (`ListOffsets` to the destination leaders; the LEO is asked for as a replica
//!    would, since B §8.11 clamps to the LEO).
//! 2. Phase 2, for the topics still desired MIRRORING (`mirror.name` = the mirror) with at
//!    least one partition persisted MIRRORING:
//!    - **Partitions** (B §8.10): a source with more partitions makes the coordinator send
//!      `StartMirrorTopics` with the source count to the controller, which grows the topic
//!      (CreatePartitions is read-only while mirroring). New partitions go UNKNOWN →
//!      PREPARING → MIRRORING through their leaders' mirror manager, from offset 0.
//!    - **Topic configs** (B §8.11): `DescribeTopicConfigs` to a source broker; every key
//!      whose value differs on the destination, minus `topic.properties.exclude` (mirror
//!      config, default [`DEFAULT_TOPIC_PROPERTIES_EXCLUDE`]) and always minus `mirror.name`,
//!      is SET through `IncrementalAlterConfigs` at the controller. Keys are only set, never
//!      deleted (the prototype's behaviour).
//!    - **Group offsets** (B §8.11): `ListGroups` to every source broker; per group
//!      `FindCoordinator` + `OffsetFetch` at the source; for each partition persisted
//!      MIRRORING (and still desired MIRRORING when the answer arrives), the offset
//!      `max(dest log start, min(source committed, dest LEO))` with the leader epoch rule of
//!      [`synced_offset`] is committed to the destination group coordinator without a member
//!      id. The coordinator refuses that with UNKNOWN_MEMBER_ID while the group has live
//!      members: the group is skipped, as the KIP says.
//!
//! Decision (brief): the MIRRORING gate uses the persisted state read from `__mirror_state`
//! in phase 1 *and* the desired state from the image (re-checked when the source offsets
//! arrive), so nothing is synced for PREPARING (the log may still be truncated), PAUSED,
//! STOPPING or STOPPED partitions, and a stop requested mid-round stops the round's commits
//! as soon as this broker's image shows it.
//!
//!    - **ACLs** (B §8.11): `DescribeAcls` to a source broker, then `CreateAcls` /
//!      `DeleteAcls` at the controller for the TOPIC ACLs of MIRRORING topics; the rules,
//!      the deletion semantics and the `acls.include` switch are in [`super::acl_sync`].
//!
//!    - **Group filters** (B §5.2): only source groups that `groups.include` matches (an
//!      empty include: every group) and `groups.exclude` does not are synced
//!      ([`crate::mirror::filters::MirrorFilters::syncs_group`]); the defaults sync all.
//!
//! Every tick the coordinator also runs pattern discovery and exclude enforcement (see
//! [`super::discovery`]), outside the round: they do not depend on MIRRORING partitions.
//!
//! Not modelled: share groups, regex patterns in `topic.properties.exclude` (exact key
//! names; the prototype compiles that list as regexes too), quotas (not mirrored, MM7).
//!
//! A round that has not finished when the next one starts is abandoned: answers carry the
//! round id and late ones are ignored.

use std::collections::{BTreeMap, BTreeSet};

use crate::broker::broker::{Broker, Pending};
use crate::broker::output::Event;
use crate::broker::timers::TimerId;
use crate::mirror::{
    MirrorPartitionState as S, mirror_coordinator_partition, mirror_state_partition,
};
use crate::protocol::acl::AclBinding;
use crate::protocol::messages::{CoordinatorKind, MirrorTopic, OffsetSpec, ReadMirrorStatesTopic};
use crate::protocol::metadata::{
    ConfigResource, ConfigResourceRef, DesiredMirrorState, MIRROR_NAME_CONFIG, MIRROR_STATE_TOPIC,
    MIRROR_STATE_TOPIC_PARTITIONS,
};
use crate::protocol::{ClusterIdx, ErrorCode, NodeId, Request, Response};
use crate::replication::fetch_leader::FetchIsolation;
use crate::types::{BrokerId, LeaderEpoch, Offset, TopicId, TopicPartition};

/// Mirror config: the sync period in milliseconds (B §5.1 `mirror.metadata.refresh.interval.ms`;
/// read from the mirror's configs here, so a test can shorten it per mirror).
pub const METADATA_REFRESH_INTERVAL_CONFIG: &str = "mirror.metadata.refresh.interval.ms";
/// Default of [`METADATA_REFRESH_INTERVAL_CONFIG`] (B §5.1: 60000).
pub const DEFAULT_METADATA_REFRESH_INTERVAL_MS: i64 = 60_000;
/// Mirror config: comma-separated topic config keys never synced (B §5.2
/// `topic.properties.exclude`). When set it replaces the default list; `mirror.name` is
/// excluded regardless.
pub const TOPIC_PROPERTIES_EXCLUDE_CONFIG: &str = "topic.properties.exclude";
/// Default of [`TOPIC_PROPERTIES_EXCLUDE_CONFIG`] (B §5.2, verbatim).
pub const DEFAULT_TOPIC_PROPERTIES_EXCLUDE: &[&str] = &[
    "follower.replication.throttled.replicas",
    "leader.replication.throttled.replicas",
    "message.timestamp.difference.max.ms",
    "log.message.timestamp.before.max.ms",
    "log.message.timestamp.after.max.ms",
    "message.timestamp.type",
    "unclean.leader.election.enable",
    "min.insync.replicas",
    "mirror.replication.throttled.replicas",
    "mirror.support.unclean.leader.election",
];

/// What one outstanding metadata-sync request was for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(in crate::broker) enum SyncStep {
    /// Phase 1: `Metadata` of the mirror's topics at a source broker.
    SourceMetadata,
    /// Phase 1: `ReadMirrorStates` at a `__mirror_state` leader.
    States,
    /// Phase 1: `ListOffsets` (log start or LEO) at a destination leader.
    DestOffsets(OffsetSpec),
    /// `DescribeTopicConfigs` at a source broker.
    TopicConfigs,
    /// `IncrementalAlterConfigs` of a topic at the controller (the keys set).
    AlterConfigs {
        /// Topic.
        topic: String,
        /// `(key, value)` set.
        configs: Vec<(String, String)>,
    },
    /// `StartMirrorTopics` growing a topic at the controller.
    Grow {
        /// Topic.
        topic: String,
        /// The source's partition count.
        partitions: i32,
    },
    /// `ListGroups` at a source broker.
    ListGroups,
    /// `FindCoordinator` of a group at a source broker.
    FindSourceCoordinator(String),
    /// `OffsetFetch` of a group at its source coordinator.
    SourceOffsets(String),
    /// `OffsetCommit` of a group at its destination coordinator.
    Commit {
        /// Group.
        group: String,
        /// Offsets committed.
        offsets: Vec<(TopicPartition, Offset)>,
    },
    /// `DescribeAcls` (TOPIC) at a source broker.
    SourceAcls,
    /// `CreateAcls` at the controller (the ACLs created).
    CreateAcls(Vec<AclBinding>),
    /// `DeleteAcls` at the controller (the ACLs deleted).
    DeleteAcls(Vec<AclBinding>),
    /// Latest: the periodic `BumpLeaderEpochs` at the controller (B §8.4, mechanism 3).
    BumpEpochs,
    /// Pattern discovery: `Metadata` of every topic at a source broker (`listTopics`).
    DiscoverTopics,
    /// Pattern discovery: `StartMirrorTopics` of the discovered topics at the controller.
    StartDiscovered,
    /// `enforceExcludePatterns`: `StopMirrorTopics` of the excluded topics at the controller.
    StopExcluded,
}

/// One sync round of one mirror.
#[derive(Clone, Debug, Default)]
pub struct SyncRound {
    /// Round id (answers of older rounds are ignored).
    pub id: u64,
    /// Phase-1 requests not answered yet.
    phase1_pending: usize,
    /// Destination topics desired MIRRORING at the start: name → (id, partition count).
    topics: BTreeMap<String, (TopicId, i32)>,
    /// The source's view of those topics: name → (id, partition count).
    source_topics: BTreeMap<String, (TopicId, i32)>,
    /// Partitions persisted MIRRORING.
    mirroring: BTreeSet<TopicPartition>,
    /// Destination log start offsets and their epochs.
    log_start: BTreeMap<TopicPartition, (Offset, LeaderEpoch)>,
    /// Destination log end offsets and their epochs.
    log_end: BTreeMap<TopicPartition, (Offset, LeaderEpoch)>,
    /// Source groups already asked for in this round.
    groups: BTreeSet<String>,
    /// Latest: this mirror's topics desired STOPPED, whose source epochs the periodic bump
    /// also watches (the prototype's `buildSourceEpochBumpTargets` takes the topics
    /// configured MIRRORING or STOPPED).
    stopped: BTreeSet<String>,
    /// Source leader epochs from the source metadata (known ones only).
    source_epochs: BTreeMap<TopicPartition, LeaderEpoch>,
}

impl SyncRound {
    /// Partitions the round found persisted MIRRORING.
    #[must_use]
    pub fn mirroring(&self) -> &BTreeSet<TopicPartition> {
        &self.mirroring
    }
}

/// Metadata-sync bookkeeping of one broker (only mirror coordinators run rounds).
#[derive(Clone, Debug, Default)]
pub struct MirrorSyncHost {
    /// The current round per mirror this broker coordinates.
    pub(in crate::broker) rounds: BTreeMap<String, SyncRound>,
    /// Rounds started so far (ids).
    pub(in crate::broker) started: u64,
    /// Rotates the source bootstrap broker.
    pub(in crate::broker) cursor: usize,
}

impl MirrorSyncHost {
    /// Rounds started by this broker so far.
    #[must_use]
    pub fn rounds_started(&self) -> u64 {
        self.started
    }

    /// The current (or last unfinished) round of `mirror`.
    #[must_use]
    pub fn round(&self, mirror: &str) -> Option<&SyncRound> {
        self.rounds.get(mirror)
    }
}

/// B §8.11: the offset (and leader epoch) the destination group gets for a source commit
/// `source = (offset, epoch)`, given the destination `log_start` and `log_end` with the
/// epochs their offsets fall in (`epochForOffset`):
/// `offset = max(log start, min(source, LEO))`; the source's epoch when unclamped, the LEO's
/// epoch when clamped to the LEO, the log start's when clamped to it. `None` when the needed
/// epoch is unknown (an empty log): the prototype skips the partition then.
#[must_use]
pub fn synced_offset(
    source: (Offset, Option<LeaderEpoch>),
    log_start: (Offset, LeaderEpoch),
    log_end: (Offset, LeaderEpoch),
) -> Option<(Offset, Option<LeaderEpoch>)> {
    let (committed, committed_epoch) = source;
    let offset = log_start.0.max(committed.min(log_end.0));
    if offset == committed {
        return Some((committed, committed_epoch));
    }
    let epoch = if offset == log_end.0 {
        log_end.1
    } else {
        log_start.1
    };
    (epoch.0 >= 0).then_some((offset, Some(epoch)))
}

/// B §8.11: the `IncrementalAlterConfigs` SET operations that bring `destination` to
/// `source`, skipping `exclude` and always `mirror.name`. Keys only on the destination are
/// left alone.
#[must_use]
pub fn config_ops(
    source: &BTreeMap<String, String>,
    destination: Option<&BTreeMap<String, String>>,
    exclude: &BTreeSet<String>,
) -> Vec<(String, Option<String>)> {
    source
        .iter()
        .filter(|(k, _)| k.as_str() != MIRROR_NAME_CONFIG && !exclude.contains(k.as_str()))
        .filter(|(k, v)| destination.and_then(|d| d.get(k.as_str())) != Some(*v))
        .map(|(k, v)| (k.clone(), Some(v.clone())))
        .collect()
}

/// Parses a `topic.properties.exclude` value (comma-separated keys; blanks ignored).
#[must_use]
pub fn parse_exclude(value: Option<&str>) -> BTreeSet<String> {
    match value {
        None => DEFAULT_TOPIC_PROPERTIES_EXCLUDE
            .iter()
            .map(|k| (*k).to_string())
            .collect(),
        Some(v) => v
            .split(',')
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .map(str::to_string)
            .collect(),
    }
}

impl Broker {
    /// Metadata-sync state (for tests and traces).
    #[must_use]
    pub fn mirror_sync(&self) -> &MirrorSyncHost {
        &self.mirror_sync
    }

    pub(in crate::broker) fn mirror_config(&self, mirror: &str, key: &str) -> Option<&str> {
        self.image
            .configs_of(ConfigResourceRef::Mirror(mirror))?
            .get(key)
            .map(String::as_str)
    }

    fn mirror_refresh_interval_ms(&self, mirror: &str) -> i64 {
        self.mirror_config(mirror, METADATA_REFRESH_INTERVAL_CONFIG)
            .and_then(|v| v.trim().parse::<i64>().ok())
            .filter(|ms| *ms > 0)
            .unwrap_or(DEFAULT_METADATA_REFRESH_INTERVAL_MS)
    }

    /// True when this broker leads the mirror's coordinator partition of `__mirror_state`.
    pub(in crate::broker) fn is_mirror_coordinator(&self, mirror: &str) -> bool {
        let tp = TopicPartition::new(
            MIRROR_STATE_TOPIC,
            mirror_coordinator_partition(mirror, MIRROR_STATE_TOPIC_PARTITIONS),
        );
        self.partitions.get(&tp).is_some_and(|p| p.is_leader())
    }

    pub(in crate::broker) fn mirror_exists(&self, mirror: &str) -> bool {
        self.image
            .configs_of(ConfigResourceRef::Mirror(mirror))
            .is_some_and(|c| !c.is_empty())
    }

    /// True while `topic`'s `mirror.name` says: mirror it with `mirror`.
    pub(in crate::broker) fn desired_mirroring(&self, mirror: &str, topic: &str) -> bool {
        self.mirror_membership(topic)
            .is_some_and(|m| m.mirror_name == mirror && m.desired == DesiredMirrorState::Mirroring)
    }

    /// After metadata was applied: arms the sync timer of every mirror this broker now
    /// coordinates, and drops the timers and rounds of the ones it no longer does.
    pub(in crate::broker) fn mirror_sync_on_metadata(&mut self) {
        let mirrors: Vec<String> = self.image.mirror_names();
        for m in mirrors {
            let id = TimerId::MirrorSync(m.clone());
            if self.is_mirror_coordinator(&m) {
                if !self.timers.is_set(&id) {
                    let at = self.now.plus_millis(self.mirror_refresh_interval_ms(&m));
                    self.timers.set(id, at);
                }
            } else {
                self.timers.cancel(&id);
                self.mirror_sync.rounds.remove(&m);
            }
        }
    }

    /// The sync timer of `mirror` fired: re-arm it and start a round if still coordinator.
    pub(in crate::broker) fn on_mirror_sync_timer(&mut self, mirror: &str) {
        if !self.mirror_exists(mirror) || !self.is_mirror_coordinator(mirror) {
            self.mirror_sync.rounds.remove(mirror);
            return;
        }
        let at = self
            .now
            .plus_millis(self.mirror_refresh_interval_ms(mirror));
        self.timers.set(TimerId::MirrorSync(mirror.to_string()), at);
        self.start_sync_round(mirror);
        self.sync_discover_and_enforce(mirror);
    }

    pub(in crate::broker) fn sync_send(
        &mut self,
        mirror: &str,
        round: u64,
        to: NodeId,
        req: Request,
        step: SyncStep,
    ) {
        let pending = Pending::MirrorSync {
            mirror: mirror.to_string(),
            round,
            step,
        };
        self.send_request(to, req, pending, 0);
    }

    /// A source bootstrap broker (rotating, so an unreachable one is not asked every time).
    pub(in crate::broker) fn sync_source_broker(
        &mut self,
        cluster: ClusterIdx,
        brokers: &[BrokerId],
    ) -> NodeId {
        let b = brokers[self.mirror_sync.cursor % brokers.len()];
        self.mirror_sync.cursor += 1;
        NodeId::broker(cluster, b)
    }

    /// Phase 1: source metadata, persisted states, destination offsets.
    fn start_sync_round(&mut self, mirror: &str) {
        self.mirror_sync.rounds.remove(mirror);
        let Some((source, brokers)) = self.mirror_source(mirror) else {
            return;
        };
        if brokers.is_empty() {
            return;
        }
        let topics: BTreeMap<String, (TopicId, i32)> = self
            .image
            .topic_ids
            .iter()
            .filter(|(name, _)| self.desired_mirroring(mirror, name))
            .filter_map(|(name, id)| {
                let t = self.image.topics.get(id)?;
                let n = i32::try_from(t.partitions.len()).ok()?;
                Some((name.clone(), (*id, n)))
            })
            .collect();
        if topics.is_empty() {
            return;
        }
        // Latest's periodic epoch bump also covers the stopped topics (B §8.4).
        let stopped: BTreeSet<String> = if self.mirror_design().epoch_fencing().is_some() {
            self.image
                .topic_ids
                .keys()
                .filter(|name| {
                    self.mirror_membership(name).is_some_and(|m| {
                        m.mirror_name == mirror && m.desired == DesiredMirrorState::Stopped
                    })
                })
                .cloned()
                .collect()
        } else {
            BTreeSet::new()
        };
        self.mirror_sync.started += 1;
        let round = self.mirror_sync.started;
        // Source metadata.
        let to = self.sync_source_broker(source, &brokers);
        let req = Request::Metadata {
            topics: Some(topics.keys().chain(&stopped).cloned().collect()),
        };
        let mut sends = vec![(to, req, SyncStep::SourceMetadata)];
        // Persisted states, grouped by `__mirror_state` leader.
        let mut by_coordinator: BTreeMap<BrokerId, Vec<ReadMirrorStatesTopic>> = BTreeMap::new();
        let mut by_leader: BTreeMap<BrokerId, Vec<TopicPartition>> = BTreeMap::new();
        for (name, (id, n)) in &topics {
            for p in 0..*n {
                let tp = TopicPartition::new(name.as_str(), p);
                if let Some(l) = self.image.partition(&tp).and_then(|r| r.leader) {
                    by_leader.entry(l).or_default().push(tp);
                }
                let sp = mirror_state_partition(mirror, *id, p, MIRROR_STATE_TOPIC_PARTITIONS);
                let Some(c) = self
                    .image
                    .partition(&TopicPartition::new(MIRROR_STATE_TOPIC, sp))
                    .and_then(|r| r.leader)
                else {
                    continue;
                };
                let list = by_coordinator.entry(c).or_default();
                match list.iter_mut().find(|t| t.name == *name) {
                    Some(t) => t.partitions.push(p),
                    None => list.push(ReadMirrorStatesTopic {
                        name: name.clone(),
                        topic_id: *id,
                        partitions: vec![p],
                    }),
                }
            }
        }
        for (c, ts) in by_coordinator {
            let req = Request::ReadMirrorStates {
                mirror_name: mirror.to_string(),
                topics: ts,
            };
            sends.push((self.broker_node(c), req, SyncStep::States));
        }
        // Destination log start and LEO, at the partition leaders.
        for (l, tps) in by_leader {
            for spec in [OffsetSpec::Earliest, OffsetSpec::Latest] {
                let req = Request::ListOffsets {
                    replica_id: (spec == OffsetSpec::Latest).then_some(self.config.broker_id),
                    isolation: FetchIsolation::HighWatermark,
                    partitions: tps.iter().map(|tp| (tp.clone(), None, spec)).collect(),
                };
                sends.push((self.broker_node(l), req, SyncStep::DestOffsets(spec)));
            }
        }
        self.mirror_sync.rounds.insert(
            mirror.to_string(),
            SyncRound {
                id: round,
                phase1_pending: sends.len(),
                topics,
                stopped,
                ..SyncRound::default()
            },
        );
        for (to, req, step) in sends {
            self.sync_send(mirror, round, to, req, step);
        }
    }

    /// An answer (`None`: timed out) to a metadata-sync request.
    pub(in crate::broker) fn on_mirror_sync_response(
        &mut self,
        mirror: &str,
        round: u64,
        step: SyncStep,
        resp: Option<Response>,
    ) {
        let step = match step {
            SyncStep::AlterConfigs { .. } | SyncStep::Grow { .. } | SyncStep::Commit { .. } => {
                self.on_sync_result(mirror, step, resp.as_ref());
                return;
            }
            // The prototype only logs the answer: completion shows in the metadata, and a
            // bump that did not happen is asked again by the next round.
            SyncStep::BumpEpochs => return,
            // Discovery and exclusion do not belong to a round (see `discovery`).
            SyncStep::DiscoverTopics | SyncStep::StartDiscovered | SyncStep::StopExcluded => {
                self.on_discovery_response(mirror, step, resp);
                return;
            }
            SyncStep::CreateAcls(acls) => {
                self.on_sync_acls_result(mirror, acls, false, resp.as_ref());
                return;
            }
            SyncStep::DeleteAcls(acls) => {
                self.on_sync_acls_result(mirror, acls, true, resp.as_ref());
                return;
            }
            other => other,
        };
        let Some(r) = self
            .mirror_sync
            .rounds
            .get_mut(mirror)
            .filter(|r| r.id == round)
        else {
            return;
        };
        match step {
            SyncStep::SourceMetadata => {
                if let Some(Response::Metadata { topics, .. }) = resp {
                    for t in topics.into_iter().filter(|t| t.error.is_ok()) {
                        let n = i32::try_from(t.partitions.len()).unwrap_or(0);
                        for p in t.partitions.iter().filter(|p| p.leader_epoch.0 >= 0) {
                            r.source_epochs.insert(
                                TopicPartition::new(t.name.as_str(), p.partition),
                                p.leader_epoch,
                            );
                        }
                        if r.topics.contains_key(&t.name) {
                            r.source_topics.insert(t.name, (t.topic_id, n));
                        }
                    }
                }
                self.sync_phase1_answered(mirror);
            }
            SyncStep::States => {
                if let Some(Response::ReadMirrorStates { error, topics }) = resp
                    && error.is_ok()
                {
                    for t in topics.into_iter().filter(|t| t.error.is_ok()) {
                        for p in t.partitions {
                            if p.error.is_ok() && S::from_value(p.state) == Some(S::Mirroring) {
                                r.mirroring
                                    .insert(TopicPartition::new(t.name.as_str(), p.partition));
                            }
                        }
                    }
                }
                self.sync_phase1_answered(mirror);
            }
            SyncStep::DestOffsets(spec) => {
                if let Some(Response::ListOffsets { partitions }) = resp {
                    // The sync asks for EARLIEST and LATEST only.
                    let into = if spec == OffsetSpec::Earliest {
                        &mut r.log_start
                    } else {
                        &mut r.log_end
                    };
                    for p in partitions {
                        if p.error.is_ok() && p.offset.0 >= 0 {
                            into.insert(p.tp, (p.offset, p.leader_epoch));
                        }
                    }
                }
                self.sync_phase1_answered(mirror);
            }
            SyncStep::TopicConfigs => self.on_sync_source_configs(mirror, resp),
            SyncStep::AlterConfigs { .. }
            | SyncStep::Grow { .. }
            | SyncStep::Commit { .. }
            | SyncStep::CreateAcls(_)
            | SyncStep::DeleteAcls(_)
            | SyncStep::BumpEpochs
            | SyncStep::DiscoverTopics
            | SyncStep::StartDiscovered
            | SyncStep::StopExcluded => {}
            SyncStep::SourceAcls => self.on_sync_source_acls(mirror, round, resp),
            SyncStep::ListGroups => self.on_sync_list_groups(mirror, round, resp),
            SyncStep::FindSourceCoordinator(group) => {
                let Some((source, _)) = self.mirror_source(mirror) else {
                    return;
                };
                if let Some(Response::FindCoordinator {
                    error: ErrorCode::None,
                    node: Some(n),
                }) = resp
                {
                    let req = Request::OffsetFetch {
                        group_id: group.clone(),
                        partitions: None,
                    };
                    let to = NodeId::broker(source, n);
                    self.sync_send(mirror, round, to, req, SyncStep::SourceOffsets(group));
                }
            }
            SyncStep::SourceOffsets(group) => {
                if let Some(Response::OffsetFetch {
                    error: ErrorCode::None,
                    offsets,
                }) = resp
                {
                    self.sync_commit_group(mirror, round, &group, offsets);
                }
            }
        }
    }

    /// Reports the outcome of a write the sync sent (an event; failures retry next round).
    fn on_sync_result(&mut self, mirror: &str, step: SyncStep, resp: Option<&Response>) {
        match step {
            SyncStep::AlterConfigs { topic, configs } => {
                let error = topic_error(resp);
                self.emit(Event::MirrorConfigsSynced {
                    mirror: mirror.to_string(),
                    topic,
                    configs,
                    error,
                });
            }
            SyncStep::Grow { topic, partitions } => {
                let error = match resp {
                    Some(Response::MirrorAdmin { error, .. } | Response::Error { error }) => *error,
                    Some(_) => ErrorCode::UnknownServerError,
                    None => ErrorCode::RequestTimedOut,
                };
                self.emit(Event::MirrorPartitionsSynced {
                    mirror: mirror.to_string(),
                    topic,
                    partitions,
                    error,
                });
            }
            SyncStep::Commit { group, offsets } => {
                // UNKNOWN_MEMBER_ID: the group is active on the destination, skipped (B §8.11;
                // MM3 asks for it to be visible).
                let error = match resp {
                    Some(Response::PartitionErrors { results }) => results
                        .iter()
                        .map(|(_, e)| *e)
                        .find(|e| !e.is_ok())
                        .unwrap_or(ErrorCode::None),
                    Some(Response::Error { error }) => *error,
                    Some(_) => ErrorCode::UnknownServerError,
                    None => ErrorCode::RequestTimedOut,
                };
                self.emit(Event::MirrorOffsetsSynced {
                    mirror: mirror.to_string(),
                    group,
                    offsets,
                    error,
                });
            }
            _ => {}
        }
    }

    fn sync_phase1_answered(&mut self, mirror: &str) {
        let Some(r) = self.mirror_sync.rounds.get_mut(mirror) else {
            return;
        };
        r.phase1_pending = r.phase1_pending.saturating_sub(1);
        if r.phase1_pending == 0 {
            self.sync_phase2(mirror);
        }
    }

    /// Phase 2: partitions, configs, and the group listing.
    fn sync_phase2(&mut self, mirror: &str) {
        let Some((source, brokers)) = self.mirror_source(mirror) else {
            return;
        };
        let Some(r) = self.mirror_sync.rounds.get(mirror) else {
            return;
        };
        let round = r.id;
        self.sync_periodic_epoch_bump(mirror, round);
        let Some(r) = self.mirror_sync.rounds.get(mirror) else {
            return;
        };
        let eligible: Vec<String> = r
            .topics
            .keys()
            .filter(|t| r.mirroring.iter().any(|tp| tp.topic.as_ref() == t.as_str()))
            .filter(|t| self.desired_mirroring(mirror, t))
            .cloned()
            .collect();
        if eligible.is_empty() || brokers.is_empty() {
            return;
        }
        // New source partitions (B §8.10).
        let grow: Vec<MirrorTopic> = eligible
            .iter()
            .filter_map(|t| {
                let (_, dest) = r.topics.get(t)?;
                let (id, src) = r.source_topics.get(t)?;
                (*src > *dest).then(|| MirrorTopic {
                    name: t.clone(),
                    topic_id: *id,
                    num_partitions: *src,
                })
            })
            .collect();
        for t in grow {
            let step = SyncStep::Grow {
                topic: t.name.clone(),
                partitions: t.num_partitions,
            };
            let req = Request::StartMirrorTopics {
                mirror_name: mirror.to_string(),
                topics: vec![t],
                include_patterns: Vec::new(),
                exclude_patterns: Vec::new(),
                // Refused if the topic's mirror state changed after what this broker saw.
                state_validation_offset: Some(self.image.offset),
            };
            let controller = self.controller();
            self.sync_send(mirror, round, controller, req, step);
        }
        // Topic configs.
        let to = self.sync_source_broker(source, &brokers);
        let req = Request::DescribeTopicConfigs { topics: eligible };
        self.sync_send(mirror, round, to, req, SyncStep::TopicConfigs);
        // ACLs (see `acl_sync`).
        let to = self.sync_source_broker(source, &brokers);
        let req = Request::DescribeAcls {
            filter: super::acl_sync::source_topic_acls_filter(),
        };
        self.sync_send(mirror, round, to, req, SyncStep::SourceAcls);
        // Group offsets: every source broker lists the groups it coordinates.
        for b in brokers {
            let to = NodeId::broker(source, b);
            self.sync_send(
                mirror,
                round,
                to,
                Request::ListGroups {},
                SyncStep::ListGroups,
            );
        }
    }

    /// Latest's periodic epoch bump (B §8.4, mechanism 3; the prototype's
    /// `maybeBumpLeaderEpochs` from the coordinator's sync): every partition of the topics
    /// desired MIRRORING or STOPPED whose source leader epoch `e` is above the local leader
    /// epoch minus the threshold asks for `MinLeaderEpoch = e + increment`, in one request.
    /// A bump that would overflow is left out (the prototype's `Math.addExact` throws and
    /// that sync pass logs the error). The seed and early designs have no epoch fencing.
    fn sync_periodic_epoch_bump(&mut self, mirror: &str, round: u64) {
        let Some(fencing) = self.mirror_design().epoch_fencing() else {
            return;
        };
        let Some(r) = self.mirror_sync.rounds.get(mirror) else {
            return;
        };
        let targets: Vec<(TopicPartition, LeaderEpoch, LeaderEpoch, LeaderEpoch)> = r
            .source_epochs
            .iter()
            .filter(|(tp, _)| {
                let t = tp.topic.as_ref();
                r.topics.contains_key(t) || r.stopped.contains(t)
            })
            .filter_map(|(tp, &source)| {
                let local = self.image.partition(tp)?.leader_epoch;
                if !fencing.needs_periodic_bump(source, local) {
                    return None;
                }
                let min = fencing.min_leader_epoch(source)?;
                Some((tp.clone(), source, local, min))
            })
            .collect();
        if targets.is_empty() {
            return;
        }
        for (tp, source_epoch, local_epoch, min_leader_epoch) in &targets {
            self.emit(Event::MirrorSyncEpochBump {
                tp: tp.clone(),
                source_epoch: *source_epoch,
                local_epoch: *local_epoch,
                min_leader_epoch: *min_leader_epoch,
            });
        }
        let req = Request::BumpLeaderEpochs {
            partitions: targets
                .into_iter()
                .map(|(tp, _, _, min)| (tp, min))
                .collect(),
        };
        let controller = self.controller();
        self.sync_send(mirror, round, controller, req, SyncStep::BumpEpochs);
    }

    fn on_sync_source_configs(&mut self, mirror: &str, resp: Option<Response>) {
        let Some(Response::DescribeTopicConfigs { topics }) = resp else {
            return;
        };
        let Some(round) = self.mirror_sync.rounds.get(mirror).map(|r| r.id) else {
            return;
        };
        let exclude = parse_exclude(self.mirror_config(mirror, TOPIC_PROPERTIES_EXCLUDE_CONFIG));
        for (topic, error, source) in topics {
            if !error.is_ok() || !self.desired_mirroring(mirror, &topic) {
                continue;
            }
            let resource = ConfigResource::Topic(topic.clone());
            let ops = config_ops(&source, self.image.configs.get(&resource), &exclude);
            if ops.is_empty() {
                continue;
            }
            let step = SyncStep::AlterConfigs {
                topic,
                configs: ops
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone().unwrap_or_default()))
                    .collect(),
            };
            let req = Request::IncrementalAlterConfigs { resource, ops };
            let controller = self.controller();
            self.sync_send(mirror, round, controller, req, step);
        }
    }

    fn on_sync_list_groups(&mut self, mirror: &str, round: u64, resp: Option<Response>) {
        let Some(Response::ListGroups { groups }) = resp else {
            return;
        };
        let Some((source, brokers)) = self.mirror_source(mirror) else {
            return;
        };
        if brokers.is_empty() {
            return;
        }
        // `groups.include` / `groups.exclude` (B §5.2; prototype `listSourceGroupIds`). A
        // filter that does not compile syncs no group, as the prototype's config parse
        // throws and ends that sync pass.
        let Ok(filters) = self.mirror_filters(mirror) else {
            return;
        };
        let Some(r) = self.mirror_sync.rounds.get_mut(mirror) else {
            return;
        };
        let new: Vec<String> = groups
            .into_iter()
            .filter(|g| filters.syncs_group(g))
            .filter(|g| r.groups.insert(g.clone()))
            .collect();
        for g in new {
            let to = self.sync_source_broker(source, &brokers);
            let req = Request::FindCoordinator {
                key: g.clone(),
                kind: CoordinatorKind::Group,
            };
            self.sync_send(mirror, round, to, req, SyncStep::FindSourceCoordinator(g));
        }
    }

    /// Commits the clamped source offsets of `group` on the destination (admin commit: no
    /// member id; refused with UNKNOWN_MEMBER_ID while the group is active there).
    fn sync_commit_group(
        &mut self,
        mirror: &str,
        round: u64,
        group: &str,
        offsets: BTreeMap<TopicPartition, (Offset, Option<LeaderEpoch>)>,
    ) {
        let Some(r) = self.mirror_sync.rounds.get(mirror) else {
            return;
        };
        let commits: Vec<(TopicPartition, Offset, Option<LeaderEpoch>)> = offsets
            .into_iter()
            .filter(|(tp, _)| r.mirroring.contains(tp))
            .filter(|(tp, _)| self.desired_mirroring(mirror, &tp.topic))
            .filter_map(|(tp, source)| {
                let start = *r.log_start.get(&tp)?;
                let end = *r.log_end.get(&tp)?;
                let (o, e) = synced_offset(source, start, end)?;
                Some((tp, o, e))
            })
            .collect();
        if commits.is_empty() {
            return;
        }
        let node = match self.find_coordinator(group, CoordinatorKind::Group) {
            Response::FindCoordinator {
                error: ErrorCode::None,
                node: Some(n),
            } => n,
            _ => return, // no destination coordinator yet: next round
        };
        let step = SyncStep::Commit {
            group: group.to_string(),
            offsets: commits.iter().map(|(tp, o, _)| (tp.clone(), *o)).collect(),
        };
        let req = Request::OffsetCommit {
            group_id: group.to_string(),
            member_id: None,
            offsets: commits,
        };
        let to = self.broker_node(node);
        self.sync_send(mirror, round, to, req, step);
    }

    /// Answers `DescribeTopicConfigs` from the metadata image.
    pub(in crate::broker) fn handle_describe_topic_configs(&self, topics: Vec<String>) -> Response {
        let topics = topics
            .into_iter()
            .map(|t| {
                if self.image.topic_id(&t).is_none() {
                    return (t, ErrorCode::UnknownTopicOrPartition, BTreeMap::new());
                }
                let configs = self
                    .image
                    .configs_of(ConfigResourceRef::Topic(&t))
                    .cloned()
                    .unwrap_or_default();
                (t, ErrorCode::None, configs)
            })
            .collect();
        Response::DescribeTopicConfigs { topics }
    }

    /// Answers `ListGroups` from the group coordinators hosted here.
    pub(in crate::broker) fn handle_list_groups(&self) -> Response {
        let groups: BTreeSet<String> = self
            .coord
            .group
            .values()
            .flat_map(|g| g.groups().map(str::to_string))
            .collect();
        Response::ListGroups {
            groups: groups.into_iter().collect(),
        }
    }
}

fn topic_error(resp: Option<&Response>) -> ErrorCode {
    match resp {
        Some(Response::TopicErrors { results }) => results
            .iter()
            .map(|r| r.1)
            .find(|e| !e.is_ok())
            .unwrap_or(ErrorCode::None),
        Some(Response::Error { error }) => *error,
        Some(_) => ErrorCode::UnknownServerError,
        None => ErrorCode::RequestTimedOut,
    }
}

#[cfg(test)]
#[path = "sync_test.rs"]
mod tests;
