//! KIP-1279 mirror invariants (kafka-semantics §2.3 items 11-18, scenarios §5), checked after
//! every event on the partition the event touched, plus the end-of-run failback validation.
//!
//! Keys are `(cluster, topic-partition)` of the **destination** (the cluster whose broker runs
//! the mirror). The source of a destination partition is read from the broker's mirror run
//! ([`Broker::mirror_source_cluster`]). Every check is cheap: it reads one replica of the
//! touched partition and the ghost state of its source.
//!
//! | invariant | when |
//! |---|---|
//! | `mirror_prefix` | `MirrorAppended`: the batch equals the source's committed batch at its offset |
//! | `mirror_not_ahead_of_source` | HW change / mirror append while MIRRORING: HW <= source true HW |
//! | `read_only_until_stopped` | leader append while not STOPPED: only the broker's control batches |
//! | `epoch_above_lme_after_stop` | leader append after the LME was recorded: epoch > LME |
//! | `pid_reset_after_stop` | STOPPED, and appends after: no producer entry below the PID reset |
//! | `no_hanging_txn_after_stop` | STOPPED: LSO == HW (== LEO outside the latest design) |
//! | `valid_transitions` | `MirrorStateChanged`: allowed by the design, state epoch rises |
//! | `failback_converges` | end of run ([`MirrorChecker::check_failback`]) |

use crate::world::node::lock;
use std::collections::{BTreeMap, BTreeSet};

use mirror_core::broker::coordinator_runtime::{
    CONSUMER_OFFSETS_TOPIC, COORDINATOR_TOPIC_PARTITIONS,
};
use mirror_core::broker::partition::Partition;
use mirror_core::broker::{Broker, Event, TruncationCause};
use mirror_core::coordinator::coordinator_partition;
use mirror_core::keyed_map::KeyedMap;
use mirror_core::log::producer_state::ProducerStateManager;
use mirror_core::mirror::{
    Design, MirrorPartitionKey, MirrorPartitionState as S, Preset, is_valid_transition,
    mirror_state_partition,
};
use mirror_core::protocol::metadata::{MIRROR_STATE_TOPIC, MIRROR_STATE_TOPIC_PARTITIONS};
use mirror_core::protocol::{ClusterIdx, ErrorCode, NodeId};
use mirror_core::record::{ControlRecord, RecordBatch};
use mirror_core::types::{LeaderEpoch, Offset, TopicId, TopicPartition};

use super::Violation;
use super::ghost::{DeclaredLoss, Ghost, PartitionKey};
use super::log_invariants::{NodeMap, leader_of, with_partition};
use super::state_history::{Observation, SeenRecord, StateHistory, committed_record};
use crate::world::EventCtx;

/// A failback seen so far: the old source `(cluster, tp)` started mirroring from the cluster
/// that had mirrored from it.
#[derive(Clone, Debug)]
struct Failback {
    /// The old source's leader log when its mirror run entered PREPARING.
    snapshot: Vec<RecordBatch>,
    /// Its LEO then.
    snapshot_leo: Offset,
    /// Its HW then: the tail above was never committed.
    snapshot_hw: Offset,
    /// `ghost.losses.len()` then: declared losses of the failback come after.
    losses_before: usize,
    /// A `MirrorAligned` was seen.
    aligned: bool,
    /// MIRRORING was reached after the alignment (a failback proper).
    mirroring: bool,
    /// The cluster it mirrors from.
    new_source: Option<ClusterIdx>,
    /// Lowest offset a mirror truncation cut the old source to since PREPARING.
    min_truncated_to: Option<Offset>,
}

/// What the failback validation found for one partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailbackReport {
    /// The old source (now destination) partition, `cluster:topic-partition`.
    pub partition: String,
    /// The cluster it fails back from.
    pub new_source: ClusterIdx,
    /// First offset where the old source's log at failback start differs from the final log
    /// (its LEO then if nothing differs).
    pub divergence_offset: i64,
    /// Records (offsets) of the old source's log at failback start from the divergence offset
    /// on: its tail beyond the LME boundary, dropped.
    pub records_dropped: i64,
    /// Offsets of that log removed by mirror truncations (>= `records_dropped`; more when the
    /// design truncates records the source also has, which are then fetched again).
    pub records_truncated: i64,
    /// Declared data-loss events on the old source since the failback started.
    pub declared_losses: usize,
    /// Committed batches those declared losses removed from the ghost history.
    pub declared_batches: usize,
}

/// Mirror checker state (kept by [`super::log_invariants::Checker`]).
#[derive(Clone, Debug, Default)]
pub struct MirrorChecker {
    /// Last persisted state and state epoch per destination partition.
    states: KeyedMap<PartitionKey, (S, i32)>,
    /// The `__mirror_state` records seen per destination partition (`valid_transitions`).
    histories: KeyedMap<PartitionKey, StateHistory>,
    /// `ghost.losses.len()` when the histories last caught up with the declared losses.
    losses_seen: usize,
    /// The LME recorded at stop and the LEO then.
    lme: KeyedMap<PartitionKey, (LeaderEpoch, Offset)>,
    /// Offset of the `MIRROR_PID_RESET` appended at stop.
    pid_reset: KeyedMap<PartitionKey, Offset>,
    /// Stopped partitions whose PID barrier a declared loss of the cluster's own replication
    /// cut (unclean election, unflushed loss of the last ISR member): the barrier is no
    /// longer in the partition's history, so `pid_reset_after_stop` has nothing to check.
    barrier_lost: BTreeSet<PartitionKey>,
    /// Source partitions some destination mirrored.
    sources: BTreeSet<PartitionKey>,
    /// The batches (base offset, CRC) each partition's own leaders appended, not a mirror: its
    /// producers' and coordinators' writes while writable (no mirror state, or stopping or
    /// stopped) and any zombie leader's. Never source data, so never "ahead of the source"
    /// when a later failback finds them in its log ([`exposed_beyond_source_after_failback`]).
    own_writes: KeyedMap<PartitionKey, BTreeSet<(Offset, u32)>>,
    /// Failbacks, by the old source partition.
    failbacks: KeyedMap<PartitionKey, Failback>,
    /// Results of the last [`MirrorChecker::check_failback`].
    pub failback_reports: Vec<FailbackReport>,
    /// The failover RPO of each stop: what the source had committed that the destination
    /// had not mirrored when it recorded its LME.
    pub rpo: Vec<Rpo>,
    /// Partitions whose current stop already has its RPO recorded (a re-driven stop records
    /// its LME again).
    rpo_seen: BTreeSet<PartitionKey>,
    /// Group offsets a sync committed whose outcome its answer left open, by
    /// `(cluster, group, partition)`: COORDINATOR_NOT_AVAILABLE (the group coordinator gave up
    /// waiting for its HW, and a `CoordinatorRuntime` timeout reverts nothing, so the offset
    /// takes effect once the HW passes its record), NOT_COORDINATOR (the record may be in the
    /// log the next coordinator loads) or no answer at all. A consumer that fails over reads
    /// such an offset once it takes effect.
    /// `synced_offset_in_bounds` judges it when the coordinator holds it from a commit other
    /// than the one it held when the answer came (its commit timestamp, if any, is kept: the
    /// sync commits the same clamped offset round after round, and an earlier commit answered
    /// NONE was judged then) ([`MirrorChecker::check_landed_syncs`]).
    in_doubt_syncs: BTreeMap<(ClusterIdx, String, TopicPartition), (Offset, Option<i64>)>,
}

/// The recovery point a failover incurred on one partition (kip1279.md A.1 STOPPING: the
/// records the source had committed but the destination had not mirrored are the user's loss
/// once applications move; the source keeps them until a failback truncates them).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Rpo {
    /// The destination partition, `cluster:topic-partition`.
    pub partition: String,
    /// Committed source records the destination did not have.
    pub records: i64,
    /// Their span in source time: the newest one's timestamp minus the first one's (ms).
    pub ms: i64,
    /// When the stop recorded its LME (µs).
    pub t_micros: u64,
}

/// The RPO of a stop: `source`'s committed batches from the destination's mirrored end on.
#[must_use]
pub fn rpo_of(source: &super::ghost::GhostPartition, mirrored_end: Offset) -> (i64, i64) {
    let mut records = 0;
    let mut span: Option<(i64, i64)> = None;
    for b in source
        .committed
        .values()
        .filter(|b| b.last_offset() >= mirrored_end)
    {
        let first = b.base_offset().max(mirrored_end);
        records += b.last_offset().0 - first.0 + 1;
        let (lo, hi) = (b.header().base_timestamp, b.max_timestamp());
        span = Some(span.map_or((lo, hi), |(a, z)| (a.min(lo), z.max(hi))));
    }
    (records, span.map_or(0, |(lo, hi)| hi - lo))
}

/// Runs `f` on a node's broker, if it is one.
fn with_broker<R>(nodes: &NodeMap, node: NodeId, f: impl FnOnce(&Broker) -> R) -> Option<R> {
    let arc = nodes.get(&node)?;
    let guard = lock(arc);
    guard.as_broker().map(f)
}

/// The batch starting at `base` in a replica's log.
fn batch_at(p: &Partition, base: Offset) -> Option<RecordBatch> {
    p.log
        .batch_containing(base)
        .filter(|b| b.base_offset() == base)
        .cloned()
}

/// `synced_offset_in_bounds` for `offset` of `tp` on `cluster`, against its leader's log now.
fn check_synced_offset(
    nodes: &NodeMap,
    cluster: ClusterIdx,
    tp: &TopicPartition,
    offset: Offset,
    name: &dyn Fn(NodeId) -> String,
) -> Result<(), Violation> {
    let Some(leader) = leader_of(nodes, cluster, tp) else {
        return Ok(());
    };
    let bad = with_partition(nodes, leader, tp, |p| {
        super::outcomes::synced_offset_violation(
            offset,
            p.log.log_start_offset(),
            p.log.log_end_offset(),
        )
    })
    .flatten();
    match bad {
        Some(d) => Err(Violation::new(
            "synced_offset_in_bounds",
            name(leader),
            Some(tp),
            Some(offset),
            d,
        )),
        None => Ok(()),
    }
}

/// The offset and commit timestamp `node`'s coordinator of `group` (`__consumer_offsets`
/// partition `partition`) holds for `tp`.
fn committed_on(
    nodes: &NodeMap,
    node: NodeId,
    partition: i32,
    group: &str,
    tp: &TopicPartition,
) -> Option<(Offset, i64)> {
    with_broker(nodes, node, |b| {
        b.coordinators()
            .group_coordinator(partition)
            .and_then(|g| g.committed(group, tp))
            .map(|c| (c.offset, c.commit_timestamp_ms))
    })
    .flatten()
}

/// [`committed_on`] the leader of `group`'s `__consumer_offsets` partition on `cluster`.
fn held_commit(
    nodes: &NodeMap,
    cluster: ClusterIdx,
    group: &str,
    tp: &TopicPartition,
) -> Option<(Offset, i64)> {
    let partition = coordinator_partition(group, COORDINATOR_TOPIC_PARTITIONS);
    let offsets_tp = TopicPartition::new(CONSUMER_OFFSETS_TOPIC, partition);
    committed_on(
        nodes,
        leader_of(nodes, cluster, &offsets_tp)?,
        partition,
        group,
        tp,
    )
}

impl MirrorChecker {
    /// The HW of `__consumer_offsets` partition `partition` moved on `node`: the syncs in
    /// doubt whose group that partition hosts and whose offset `node`'s coordinator now holds
    /// took effect, and are judged now, as a commit answered NONE is when answered.
    fn check_landed_syncs(
        &mut self,
        node: NodeId,
        partition: i32,
        nodes: &NodeMap,
        name: &dyn Fn(NodeId) -> String,
    ) -> Result<(), Violation> {
        let landed: Vec<(ClusterIdx, String, TopicPartition)> = self
            .in_doubt_syncs
            .iter()
            .filter(|((c, group, _), _)| {
                *c == node.cluster
                    && coordinator_partition(group, COORDINATOR_TOPIC_PARTITIONS) == partition
            })
            .filter(|((_, group, tp), (offset, before))| {
                committed_on(nodes, node, partition, group, tp)
                    .is_some_and(|(held, at)| held == *offset && Some(at) != *before)
            })
            .map(|(k, _)| k.clone())
            .collect();
        for key in landed {
            let (offset, _) = self.in_doubt_syncs.remove(&key).expect("listed");
            check_synced_offset(nodes, key.0, &key.2, offset, name)?;
        }
        Ok(())
    }
    /// The last persisted mirror state of a destination partition seen in events.
    #[must_use]
    pub fn state(&self, cluster: ClusterIdx, tp: &TopicPartition) -> Option<S> {
        self.states.get(&(cluster, tp.clone())).map(|s| s.0)
    }

    /// The last persisted state epoch of a destination partition seen in events.
    #[must_use]
    pub fn state_epoch(&self, cluster: ClusterIdx, tp: &TopicPartition) -> Option<i32> {
        self.states.get(&(cluster, tp.clone())).map(|s| s.1)
    }

    /// Adopts a persisted transition no event reported. A leader learns its partition's
    /// state by reading the `__mirror_state` coordinator's committed record; that record may
    /// carry a transition whose writer never saw its write succeed (the coordinator committed
    /// it only after the writer lost leadership or the response), so no `MirrorStateChanged`
    /// ever announced it (mirror chaos seed 154: STOPPING written by dst-1 at epoch 0,
    /// committed after an unclean election, read by dst-3 leading at epoch 2, whose stop plan
    /// then appended its control batch while this checker still believed MIRRORING). The
    /// leader's status after that read is the persisted state: when its state epoch is newer
    /// than the last one seen, it is the state (state epochs rise with every persisted
    /// transition; after a coordinator restart, `i32::MIN`, what it still has is the state).
    /// Only a different state is adopted: a run's status that merely restates the known state
    /// would undo the restart's epoch reset (mirror chaos seed 182).
    /// Only a leader whose epoch no newer election superseded speaks for the partition.
    fn sync_persisted_state(
        &mut self,
        node: NodeId,
        tp: &TopicPartition,
        ghost: &Ghost,
        nodes: &NodeMap,
    ) {
        let key = (node.cluster, tp.clone());
        let Some(&(known_state, known)) = self.states.get(&key) else {
            return;
        };
        let read = with_broker(nodes, node, |b| {
            b.mirror_runs().get(tp).and_then(|r| {
                r.status.as_ref().map(|s| {
                    let key = mirror_key(&r.mirror, r.topic_id, tp);
                    (s.state, s.state_epoch, r.leader_epoch, s.leader_epoch, key)
                })
            })
        })
        .flatten();
        if let Some((state, epoch, run_epoch, writer, mkey)) = read
            && epoch > known
            && state != known_state
            && !superseded_leader_epoch(ghost, node.cluster, tp, run_epoch)
            && is_committed(
                ghost,
                node.cluster,
                &mkey,
                epoch,
                SeenRecord { state, writer },
            )
        {
            // A conflicting record is left for its writer's report to flag.
            let _ = self
                .histories
                .get_or_insert_with(&key, StateHistory::default)
                .observe(epoch, SeenRecord { state, writer });
            self.states.insert(key, (state, epoch));
        }
    }

    /// Catches up with the declared losses since the last call. A loss of a `__mirror_state`
    /// partition (unclean election, last ISR member losing unflushed data) forgets the records
    /// seen of its keys: the coordinator that takes over no longer has them, and its state
    /// epochs restart from what it still has (module [`super::state_history`]). A loss that
    /// cuts a stopped partition at or below its PID barrier takes the barrier with it
    /// (mirror chaos seeds 4448, 5597: an unclean election, and the last ISR member losing its
    /// unflushed tail, dropped the `MIRROR_PID_RESET`). Kafka allows both losses (declared,
    /// kafka-semantics §2.2 `unclean_events`) and the seed's STOPPED has no action that
    /// could write the reset again (kip1279.md A.1), so the mirrored producer state that the
    /// replay of the remaining log brings back is the loss's, not a broken barrier.
    fn on_declared_losses(&mut self, ghost: &Ghost) {
        let new = &ghost.losses[self.losses_seen.min(ghost.losses.len())..];
        self.losses_seen = ghost.losses.len();
        for loss in new {
            // A mirror truncation is the mirror's own doing (a new PREPARING resets the stop
            // bookkeeping; a zombie mirror leader's cut is not the partition's history).
            if !loss.is_mirror_truncation() {
                let cut: Vec<PartitionKey> = self
                    .pid_reset
                    .keys()
                    .chain(self.lme.keys())
                    .filter(|key| {
                        loss.partition == format!("{}:{}", key.0.0, key.1)
                            && self
                                .pid_barrier(key)
                                .is_some_and(|b| Offset(loss.from_offset) <= b)
                    })
                    .cloned()
                    .collect();
                self.barrier_lost.extend(cut);
            }
            for ((c, tp), h) in &mut self.histories {
                let lost = match h.store_partition {
                    Some(sp) => {
                        let store = TopicPartition::new(MIRROR_STATE_TOPIC, sp);
                        loss.partition == format!("{}:{store}", c.0)
                    }
                    None => loss
                        .partition
                        .starts_with(&format!("{}:{MIRROR_STATE_TOPIC}-", c.0)),
                };
                if lost {
                    h.forget();
                    if let Some(s) = self.states.get_mut(&(*c, tp.clone())) {
                        s.1 = i32::MIN;
                    }
                }
            }
        }
    }

    /// Checks the mirror invariants an event may have affected.
    pub fn on_event(
        &mut self,
        ctx: &EventCtx,
        event: &Event,
        ghost: &Ghost,
        nodes: &NodeMap,
        name: &dyn Fn(NodeId) -> String,
    ) -> Result<(), Violation> {
        let node = ctx.node;
        let cluster = node.cluster;
        self.on_declared_losses(ghost);
        match event {
            Event::MirrorStateChanged {
                tp,
                from,
                to,
                state_epoch,
                leader_epoch,
                ..
            } => {
                let record = SeenRecord {
                    state: *to,
                    writer: *leader_epoch,
                };
                self.on_state_changed(node, tp, *from, record, *state_epoch, ghost, nodes, name)
            }
            Event::MirrorLastMirroredEpoch {
                tp,
                last_mirrored_epoch,
                log_end_offset,
            } => {
                self.lme.insert(
                    (cluster, tp.clone()),
                    (*last_mirrored_epoch, *log_end_offset),
                );
                let source = with_broker(nodes, node, |b| b.mirror_source_cluster(tp)).flatten();
                if let Some(src) = source
                    && self.rpo_seen.insert((cluster, tp.clone()))
                    && let Some(g) = ghost.partitions.get(&(src, tp.clone()))
                {
                    let (records, ms) = rpo_of(g, *log_end_offset);
                    self.rpo.push(Rpo {
                        partition: format!("{}:{tp}", cluster.0),
                        records,
                        ms,
                        t_micros: ctx.t.0,
                    });
                }
                self.barrier_lost.remove(&(cluster, tp.clone()));
                Ok(())
            }
            Event::ProducerStateRefused {
                tp, producer_id, ..
            } => {
                let Some(barrier) = self.pid_barrier(&(cluster, tp.clone())) else {
                    return Ok(());
                };
                let Some(leader) = leader_of(nodes, cluster, tp) else {
                    return Ok(());
                };
                let refused = with_partition(nodes, leader, tp, |p| {
                    super::outcomes::refused_by_mirrored_state(&p.log, *producer_id, barrier)
                })
                .flatten();
                match refused {
                    Some(d) => Err(Violation::new(
                        "failover_producer_not_fenced",
                        name(node),
                        Some(tp),
                        None,
                        d,
                    )),
                    None => Ok(()),
                }
            }
            Event::ProduceAcked {
                tp,
                base_offset,
                values,
                producer_id,
                ..
            } if producer_id.0 >= 0 && self.pid_barrier(&(cluster, tp.clone())).is_some() => {
                let Some(leader) = leader_of(nodes, cluster, tp) else {
                    return Ok(());
                };
                let dedup = with_partition(nodes, leader, tp, |p| {
                    super::outcomes::deduplicated_against_another_write(
                        &p.log,
                        *producer_id,
                        *base_offset,
                        values,
                    )
                })
                .flatten();
                match dedup {
                    Some(d) => Err(Violation::new(
                        "failover_producer_not_fenced",
                        name(node),
                        Some(tp),
                        Some(*base_offset),
                        d,
                    )),
                    None => Ok(()),
                }
            }
            Event::MirrorOffsetsSynced {
                group,
                offsets,
                error,
                ..
            } => {
                for (tp, offset) in offsets {
                    let key = (cluster, group.clone(), tp.clone());
                    // A later answer for the same offset's key supersedes the one in doubt.
                    self.in_doubt_syncs.remove(&key);
                    if matches!(
                        error,
                        ErrorCode::CoordinatorNotAvailable
                            | ErrorCode::NotCoordinator
                            | ErrorCode::RequestTimedOut
                    ) {
                        let held = held_commit(nodes, cluster, group, tp).map(|(_, at)| at);
                        self.in_doubt_syncs.insert(key, (*offset, held));
                        continue;
                    }
                    if error.is_ok() {
                        check_synced_offset(nodes, cluster, tp, *offset, name)?;
                    }
                }
                Ok(())
            }
            Event::MirrorAligned { tp, .. } => {
                if let Some(f) = self.failbacks.get_mut(&(cluster, tp.clone())) {
                    f.aligned = true;
                }
                Ok(())
            }
            Event::MirrorAppended {
                tp,
                base_offset,
                last_offset,
                ..
            } => {
                self.sync_persisted_state(node, tp, ghost, nodes);
                self.on_mirror_appended(node, tp, *base_offset, *last_offset, ghost, nodes, name)
            }
            Event::Appended {
                tp,
                base_offset,
                epoch,
                as_leader,
                ..
            } => {
                // A leader whose epoch a newer election already superseded (ghost's
                // SingleLeader record) is a zombie: fenced or cut off from the controller, its
                // metadata may predate the mirror (it cannot know the topic became read-only,
                // like any Kafka broker with stale metadata), and its local appends are not the
                // partition's history: they never commit and are truncated when it learns the
                // newer epoch (kafka-semantics §1.3; item 8 reads only non-stale leaders). Item
                // 17 is about appends that land on the partition, i.e. its current leader's.
                let zombie = *as_leader && superseded_leader_epoch(ghost, cluster, tp, *epoch);
                // Only a world of more than one cluster can fail back (its nodes are keyed
                // by cluster first, so the last one tells): a single-cluster run keeps none.
                if *as_leader
                    && nodes.last_key_value().is_some_and(|(n, _)| n.cluster.0 > 0)
                    && (zombie
                        || matches!(
                            self.state(cluster, tp),
                            None | Some(S::Unknown | S::Stopping | S::Stopped)
                        ))
                    && let Some(crc) = with_partition(nodes, node, tp, |p| {
                        // The CRC only: no copy of the batch on every leader append.
                        p.log
                            .batch_containing(*base_offset)
                            .filter(|b| b.base_offset() == *base_offset)
                            .map(|b| b.header().crc)
                    })
                    .flatten()
                {
                    self.own_writes
                        .get_or_insert_with(&(cluster, tp.clone()), BTreeSet::new)
                        .insert((*base_offset, crc));
                }
                self.sync_persisted_state(node, tp, ghost, nodes);
                self.on_appended(
                    node,
                    tp,
                    *base_offset,
                    *epoch,
                    *as_leader && !zombie,
                    nodes,
                    name,
                )
            }
            Event::HighWatermarkChanged { tp, high_watermark } => {
                if tp.topic.as_ref() == CONSUMER_OFFSETS_TOPIC && !self.in_doubt_syncs.is_empty() {
                    self.check_landed_syncs(node, tp.partition, nodes, name)?;
                }
                self.sync_persisted_state(node, tp, ghost, nodes);
                if self.state(cluster, tp) != Some(S::Mirroring) {
                    return Ok(());
                }
                self.check_not_ahead(node, tp, *high_watermark, ghost, nodes, name)
            }
            Event::Truncated {
                tp,
                to,
                cause: TruncationCause::Mirror,
                ..
            }
            | Event::TruncatedFully {
                tp,
                start: to,
                cause: TruncationCause::Mirror,
                ..
            } => {
                if let Some(f) = self.failbacks.get_mut(&(cluster, tp.clone())) {
                    f.min_truncated_to = Some(f.min_truncated_to.map_or(*to, |m| m.min(*to)));
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn on_state_changed(
        &mut self,
        node: NodeId,
        tp: &TopicPartition,
        from: S,
        record: SeenRecord,
        state_epoch: i32,
        ghost: &Ghost,
        nodes: &NodeMap,
        name: &dyn Fn(NodeId) -> String,
    ) -> Result<(), Violation> {
        let key = (node.cluster, tp.clone());
        let to = record.state;
        let (design, mkey) = with_broker(nodes, node, |b| {
            let mkey = b
                .mirror_runs()
                .get(tp)
                .map(|r| mirror_key(&r.mirror, r.topic_id, tp));
            (b.config().mirror_design, mkey)
        })
        .unwrap_or_default();
        let violation =
            |d: String| Violation::new("valid_transitions", name(node), Some(tp), None, d);
        if !is_valid_transition(&design, from, to) {
            return Err(violation(format!(
                "{from} -> {to} is not allowed in design {design}"
            )));
        }
        if let Some(mkey) = &mkey
            && !is_committed(ghost, node.cluster, mkey, state_epoch, record)
        {
            // Acknowledged by a coordinator an unclean election had already replaced, or lost
            // since with a declared loss: not (or no longer) the partition's history.
            return Ok(());
        }
        let history = self
            .histories
            .get_or_insert_with(&key, StateHistory::default);
        history.store_partition = history
            .store_partition
            .or(mkey.as_ref().map(store_partition_of));
        // Two committed records with one state epoch: two writers committed a transition from
        // the same state (the fencing of the store failed): a lost update, an outcome.
        let seen = history
            .observe(state_epoch, record)
            .map_err(|d| Violation::new("no_lost_state_update", name(node), Some(tp), None, d))?;
        if seen == Observation::Repeat {
            return Ok(());
        }
        let prev = match seen {
            Observation::Newest => self.states.get(&key).map(|s| s.1),
            _ => None,
        };
        if let Some(d) = transition_violation(&design, prev, from, to, state_epoch) {
            return Err(violation(d));
        }
        if seen == Observation::Late {
            // A record older than the state now: its side effects were judged when the newer
            // records were (or will be once their reports arrive).
            return Ok(());
        }
        self.states.insert(key.clone(), (to, state_epoch));
        match to {
            S::Preparing => {
                // A new mirroring cycle: the stop bookkeeping of an earlier one is over.
                self.lme.remove(&key);
                self.rpo_seen.remove(&key);
                self.pid_reset.remove(&key);
                self.barrier_lost.remove(&key);
                if self.sources.contains(&key) {
                    // This cluster was a source of the partition: a failback starts.
                    let snapshot = with_partition(nodes, node, tp, |p| {
                        (
                            p.log.batches().cloned().collect(),
                            p.log.log_end_offset(),
                            p.log.high_watermark(),
                        )
                    });
                    if let Some((snapshot, snapshot_leo, snapshot_hw)) = snapshot {
                        self.failbacks.insert(
                            key,
                            Failback {
                                snapshot,
                                snapshot_leo,
                                snapshot_hw,
                                losses_before: ghost.losses.len(),
                                aligned: false,
                                mirroring: false,
                                new_source: None,
                                min_truncated_to: None,
                            },
                        );
                    }
                }
                Ok(())
            }
            S::Mirroring => {
                let source = with_broker(nodes, node, |b| b.mirror_source_cluster(tp)).flatten();
                if let Some(s) = source {
                    self.sources.insert((s, tp.clone()));
                }
                if let Some(f) = self.failbacks.get_mut(&key)
                    && f.aligned
                {
                    f.mirroring = true;
                    f.new_source = source;
                }
                Ok(())
            }
            S::Stopped => self.check_stopped(node, tp, &design, nodes, name),
            _ => Ok(()),
        }
    }

    /// STOPPED on the leader: no hanging transaction, no stale producer.
    fn check_stopped(
        &self,
        node: NodeId,
        tp: &TopicPartition,
        design: &Design,
        nodes: &NodeMap,
        name: &dyn Fn(NodeId) -> String,
    ) -> Result<(), Violation> {
        let latest = design.preset() == Preset::Latest;
        let hanging = with_partition(nodes, node, tp, |p| {
            let log = &p.log;
            hanging_txn_violation(
                log.last_stable_offset(),
                log.high_watermark(),
                log.log_end_offset(),
                log.producer_state().ongoing_txns().len(),
                latest,
            )
        })
        .flatten();
        if let Some((o, d)) = hanging {
            return Err(Violation::new(
                "no_hanging_txn_after_stop",
                name(node),
                Some(tp),
                Some(o),
                d,
            ));
        }
        self.check_producers(node, tp, true, nodes, name)
    }

    /// The PID barrier of a stopped partition: the `MIRROR_PID_RESET` offset, else the LEO
    /// when the LME was recorded (where the reset belongs).
    fn pid_barrier(&self, key: &PartitionKey) -> Option<Offset> {
        self.pid_reset
            .get(key)
            .copied()
            .or_else(|| self.lme.get(key).map(|l| l.1))
    }

    fn check_producers(
        &self,
        node: NodeId,
        tp: &TopicPartition,
        at_stop: bool,
        nodes: &NodeMap,
        name: &dyn Fn(NodeId) -> String,
    ) -> Result<(), Violation> {
        let key = (node.cluster, tp.clone());
        let Some(barrier) = self.pid_barrier(&key) else {
            return Ok(());
        };
        if self.barrier_lost.contains(&key) {
            return Ok(());
        }
        let reset_seen = self.pid_reset.contains_key(&key);
        let stale = with_partition(nodes, node, tp, |p| {
            // A replica that has not reached the barrier yet still holds mirrored producers.
            // The leader at its STOPPED is past it, or the reset is missing: with nothing
            // appended since the LME was recorded, its LEO is the barrier itself.
            if p.log.log_end_offset() < barrier || (!at_stop && p.log.log_end_offset() == barrier) {
                return None;
            }
            // A follower may hold a suffix past the barrier that is not the leader's: mirrored
            // batches the stop cut (LSO truncation) that it appended from a fetch answered
            // before the cut (seen when it was paused across the stop, mirror chaos seed 5).
            // Kafka lets a replica's log above its HW diverge until its next fetch finds the
            // diverging epoch and truncates it (kafka-semantics §1.3, §2.3 invariant 3 only
            // constrains logs below the HW). Such a replica has not fetched the
            // MIRROR_PID_RESET yet, so its producer state is not owed the reset: the barrier
            // is reached only once the reset batch itself is in its log. With an HW past the
            // barrier it must hold the leader's reset (log matching), so it is checked.
            if reset_seen
                && p.log.high_watermark() <= barrier
                && batch_at(p, barrier).and_then(|b| b.control_record())
                    != Some(ControlRecord::MirrorPidReset)
            {
                return None;
            }
            stale_producer(p.log.producer_state(), barrier, at_stop)
        })
        .flatten();
        match stale {
            Some((o, d)) => Err(Violation::new(
                "pid_reset_after_stop",
                name(node),
                Some(tp),
                o,
                d,
            )),
            None => Ok(()),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn on_mirror_appended(
        &mut self,
        node: NodeId,
        tp: &TopicPartition,
        base: Offset,
        last: Offset,
        ghost: &Ghost,
        nodes: &NodeMap,
        name: &dyn Fn(NodeId) -> String,
    ) -> Result<(), Violation> {
        let Some(source) = with_broker(nodes, node, |b| b.mirror_source_cluster(tp)).flatten()
        else {
            return Err(Violation::new(
                "mirror_prefix",
                name(node),
                Some(tp),
                Some(base),
                "mirrored a batch but the partition has no mirror source",
            ));
        };
        self.sources.insert((source, tp.clone()));
        let batch = with_partition(nodes, node, tp, |p| batch_at(p, base)).flatten();
        let Some(batch) = batch else {
            // Gone already (truncated in the same step): nothing left to compare.
            return Ok(());
        };
        if batch.last_offset() != last {
            return Err(Violation::new(
                "mirror_prefix",
                name(node),
                Some(tp),
                Some(base),
                format!(
                    "mirrored batch ends at {} but the event said {last}",
                    batch.last_offset()
                ),
            ));
        }
        if let Some(d) = mirrored_batch_violation(ghost, source, tp, &batch) {
            return Err(Violation::new(
                "mirror_prefix",
                name(node),
                Some(tp),
                Some(base),
                d,
            ));
        }
        if self.state(node.cluster, tp) == Some(S::Mirroring) {
            let hw = with_partition(nodes, node, tp, |p| p.log.high_watermark());
            if let Some(hw) = hw {
                return self.check_not_ahead(node, tp, hw, ghost, nodes, name);
            }
        }
        Ok(())
    }

    fn check_not_ahead(
        &self,
        node: NodeId,
        tp: &TopicPartition,
        hw: Offset,
        ghost: &Ghost,
        nodes: &NodeMap,
        name: &dyn Fn(NodeId) -> String,
    ) -> Result<(), Violation> {
        let Some((source, leader_epoch)) = with_broker(nodes, node, |b| {
            (
                b.mirror_source_cluster(tp),
                b.partition(tp)
                    .filter(|p| p.is_leader())
                    .map(|p| p.leader_epoch),
            )
        }) else {
            return Ok(());
        };
        let Some((source, leader_epoch)) = source.zip(leader_epoch) else {
            return Ok(());
        };
        // A leader that has not learned of a later unclean election exposes the branch that
        // election cut, not the partition's history (kafka-semantics §2.2: the true HW is the
        // max HW exposed in a non-ULE history; log_invariants skips such replicas too). Mirror
        // chaos seed 6568: a zombie dst leader ran its stop plan through a zombie coordinator
        // and its own PID-reset batch went under its HW.
        if ghost
            .partitions
            .get(&(node.cluster, tp.clone()))
            .is_some_and(|g| g.unclean_epochs.iter().any(|u| *u > leader_epoch))
        {
            return Ok(());
        }
        let key = (node.cluster, tp.clone());
        let f = self.failbacks.get(&key);
        let own = OwnWrites {
            snapshot: f.map_or(&[][..], |f| f.snapshot.as_slice()),
            appended: self.own_writes.get(&key),
        };
        let r = with_partition(nodes, node, tp, |p| {
            exposed_beyond_source_after_failback(ghost, source, tp, p.log.batches(), hw, &own)
        })
        .flatten();
        match r {
            Some((o, d)) => Err(Violation::new(
                "mirror_not_ahead_of_source",
                name(node),
                Some(tp),
                Some(o),
                d,
            )),
            None => Ok(()),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn on_appended(
        &mut self,
        node: NodeId,
        tp: &TopicPartition,
        base: Offset,
        epoch: LeaderEpoch,
        as_leader: bool,
        nodes: &NodeMap,
        name: &dyn Fn(NodeId) -> String,
    ) -> Result<(), Violation> {
        let key = (node.cluster, tp.clone());
        let state = self.state(node.cluster, tp);
        if as_leader {
            let (batch, has_run) = with_broker(nodes, node, |b| {
                (
                    b.partition(tp).and_then(|p| batch_at(p, base)),
                    b.mirror_runs().contains_key(tp),
                )
            })
            .unwrap_or((None, false));
            let control = batch.as_ref().and_then(RecordBatch::control_record);
            if control == Some(ControlRecord::MirrorPidReset)
                && matches!(state, Some(S::Stopping | S::Stopped))
            {
                self.pid_reset.insert(key.clone(), base);
                self.barrier_lost.remove(&key);
            }
            if let Some(d) = read_only_violation(state, has_run, control) {
                return Err(Violation::new(
                    "read_only_until_stopped",
                    name(node),
                    Some(tp),
                    Some(base),
                    d,
                ));
            }
            if matches!(state, Some(S::Stopping | S::Stopped))
                && let Some((lme, _)) = self.lme.get(&key)
                && let Some(d) = epoch_violation(*lme, epoch)
            {
                return Err(Violation::new(
                    "epoch_above_lme_after_stop",
                    name(node),
                    Some(tp),
                    Some(base),
                    d,
                ));
            }
        }
        if state == Some(S::Stopped) {
            return self.check_producers(node, tp, false, nodes, name);
        }
        Ok(())
    }

    /// End-of-run validation (scenarios §5.6): every partition that was failed back (its
    /// mirror run on the old source reached MIRRORING after a `MirrorAligned`) and still
    /// mirrors has a log identical to its new source's from the later log start, and the
    /// records the old source dropped (its tail beyond the LME boundary) are covered by
    /// declared losses. Fills [`MirrorChecker::failback_reports`].
    pub fn check_failback(
        &mut self,
        ghost: &Ghost,
        nodes: &NodeMap,
        name: &dyn Fn(NodeId) -> String,
    ) -> Result<(), Violation> {
        let mut reports = Vec::new();
        for ((cluster, tp), f) in &self.failbacks {
            if !f.mirroring || self.state(*cluster, tp) != Some(S::Mirroring) {
                continue; // not failed back, or stopped again since
            }
            let Some(source) = f.new_source else {
                continue;
            };
            let (Some(old_leader), Some(new_leader)) =
                (leader_of(nodes, *cluster, tp), leader_of(nodes, source, tp))
            else {
                continue; // offline at the end: nothing to compare
            };
            let log = |n: NodeId| {
                with_partition(nodes, n, tp, |p| {
                    (
                        p.log.log_start_offset(),
                        p.log.batches().cloned().collect::<Vec<_>>(),
                        p.log.high_watermark(),
                    )
                })
                .unwrap_or((Offset(0), Vec::new(), Offset(0)))
            };
            let (old_start, old_log, old_hw) = log(old_leader);
            let (new_start, new_log, new_hw) = log(new_leader);
            if let Some(at) = history_split(
                &old_log,
                &new_log,
                old_start.max(new_start),
                old_hw.min(new_hw),
            ) {
                self.failback_reports = reports;
                return Err(Violation::new(
                    "one_history_per_offset",
                    name(old_leader),
                    Some(tp),
                    Some(at),
                    format!(
                        "after the failback from cluster {}, the clusters hold different records at offset {at}, below both HWs ({old_hw}, {new_hw})",
                        source.0
                    ),
                ));
            }
            let partition = DeclaredLoss::partition_of(*cluster, tp);
            let losses: Vec<(i64, usize)> = ghost.losses[f.losses_before.min(ghost.losses.len())..]
                .iter()
                .filter(|l| l.partition == partition)
                .map(|l| (l.from_offset, l.batches))
                .collect();
            let lowest_other_loss = ghost.losses[f.losses_before.min(ghost.losses.len())..]
                .iter()
                .filter(|l| l.partition == partition && !l.is_mirror_truncation())
                .map(|l| l.from_offset)
                .min();
            let input = FailbackInput {
                snapshot: &f.snapshot,
                snapshot_leo: f.snapshot_leo,
                snapshot_hw: f.snapshot_hw,
                old_start,
                old_log: &old_log,
                new_start,
                new_log: &new_log,
                min_truncated_to: f.min_truncated_to,
                losses: &losses,
                lowest_other_loss,
            };
            match failback_outcome(&input) {
                Ok(mut r) => {
                    r.partition = partition;
                    r.new_source = source;
                    reports.push(r);
                }
                Err((o, d)) => {
                    self.failback_reports = reports;
                    return Err(Violation::new(
                        "failback_converges",
                        name(old_leader),
                        Some(tp),
                        o,
                        format!("failback from cluster {}: {d}", source.0),
                    ));
                }
            }
        }
        self.failback_reports = reports;
        Ok(())
    }
}

/// The first offset in `[from, below)` where two clusters' logs of one partition hold
/// different records (a batch of one with no identical batch at the same offset in the other),
/// or `None` (`one_history_per_offset`). A batch straddling `from` or `below` is not judged:
/// the log starts differ for good reasons (retention, DeleteRecords) and above the lower HW
/// the mirror may still be catching up.
#[must_use]
pub fn history_split(
    a: &[RecordBatch],
    b: &[RecordBatch],
    from: Offset,
    below: Offset,
) -> Option<Offset> {
    let judged = |l: &[RecordBatch]| -> BTreeMap<Offset, RecordBatch> {
        l.iter()
            .filter(|x| x.base_offset() >= from && x.last_offset() < below)
            .map(|x| (x.base_offset(), x.clone()))
            .collect()
    };
    let (ja, jb) = (judged(a), judged(b));
    let covered = |m: &BTreeMap<Offset, RecordBatch>, o: Offset| {
        m.range(..=o)
            .next_back()
            .is_some_and(|(_, x)| x.last_offset() >= o)
    };
    ja.iter()
        .find(|(o, x)| jb.get(o) != Some(x) && (jb.contains_key(o) || covered(&jb, **o)))
        .map(|(o, _)| *o)
        .into_iter()
        .chain(
            jb.iter()
                .find(|(o, x)| ja.get(o) != Some(x) && covered(&ja, **o))
                .map(|(o, _)| *o),
        )
        .min()
}

/// The `__mirror_state` key of a destination partition.
fn mirror_key(mirror: &str, topic_id: TopicId, tp: &TopicPartition) -> MirrorPartitionKey {
    MirrorPartitionKey {
        mirror_name: mirror.to_string(),
        topic_id,
        partition: tp.partition,
    }
}

/// The `__mirror_state` partition holding `key`'s records.
fn store_partition_of(key: &MirrorPartitionKey) -> i32 {
    mirror_state_partition(
        &key.mirror_name,
        key.topic_id,
        key.partition,
        MIRROR_STATE_TOPIC_PARTITIONS,
    )
}

/// Whether the state record is in the committed history of its `__mirror_state` partition
/// (module [`super::state_history`]); true when the ghost does not track that partition.
fn is_committed(
    ghost: &Ghost,
    cluster: ClusterIdx,
    key: &MirrorPartitionKey,
    state_epoch: i32,
    record: SeenRecord,
) -> bool {
    let store = TopicPartition::new(MIRROR_STATE_TOPIC, store_partition_of(key));
    ghost
        .partitions
        .get(&(cluster, store))
        .is_none_or(|g| committed_record(g, key, state_epoch, record))
}

// ------------------------------------------------------------------ pure rules (unit-tested)

/// `valid_transitions`: the transition is allowed by the design and the state epoch rose.
#[must_use]
pub fn transition_violation(
    design: &Design,
    prev_state_epoch: Option<i32>,
    from: S,
    to: S,
    state_epoch: i32,
) -> Option<String> {
    if !is_valid_transition(design, from, to) {
        return Some(format!("{from} -> {to} is not allowed in design {design}"));
    }
    match prev_state_epoch {
        Some(prev) if state_epoch <= prev => Some(format!(
            "state epoch went from {prev} to {state_epoch} ({from} -> {to})"
        )),
        _ => None,
    }
}

/// `mirror_prefix`: a mirrored batch equals the source's committed batch at its offset, or a
/// batch committed there before a declared source loss.
#[must_use]
pub fn mirrored_batch_violation(
    ghost: &Ghost,
    source: ClusterIdx,
    tp: &TopicPartition,
    batch: &RecordBatch,
) -> Option<String> {
    let base = batch.base_offset();
    let Some(g) = ghost.partitions.get(&(source, tp.clone())) else {
        return Some(format!(
            "mirrored batch [{base}, {}] but source cluster {} has no committed history",
            batch.last_offset(),
            source.0
        ));
    };
    match g.committed.get(&base) {
        Some(c) if c == batch => None,
        _ if g.was_cut(batch) => None,
        Some(c) => Some(format!(
            "mirrored batch [{base}, {}] epoch {} differs from source cluster {}'s committed batch [{base}, {}] epoch {}",
            batch.last_offset(),
            batch.partition_leader_epoch(),
            source.0,
            c.last_offset(),
            c.partition_leader_epoch()
        )),
        None => Some(format!(
            "mirrored batch [{base}, {}] epoch {} is not in source cluster {}'s committed history (source true HW {})",
            batch.last_offset(),
            batch.partition_leader_epoch(),
            source.0,
            g.true_hw
        )),
    }
}

/// `mirror_not_ahead_of_source`: the destination's batches below `hw` and at or above the
/// source's true HW must be batches the source committed before a declared loss.
pub fn exposed_beyond_source<'a>(
    ghost: &Ghost,
    source: ClusterIdx,
    tp: &TopicPartition,
    dest_batches: impl Iterator<Item = &'a RecordBatch>,
    hw: Offset,
) -> Option<(Offset, String)> {
    let g = ghost.partitions.get(&(source, tp.clone()));
    let src_hw = g.map_or(Offset(0), |g| g.true_hw);
    if hw <= src_hw {
        return None;
    }
    for b in dest_batches.filter(|b| b.last_offset() >= src_hw && b.base_offset() < hw) {
        if !g.is_some_and(|g| g.was_cut(b)) {
            let o = b.base_offset().max(src_hw);
            return Some((
                o,
                format!(
                    "HW {hw} exposes offset {o} but source cluster {}'s true HW is {src_hw}",
                    source.0
                ),
            ));
        }
    }
    None
}

/// The destination's own data, which [`exposed_beyond_source_after_failback`] exempts.
#[derive(Clone, Copy, Debug, Default)]
pub struct OwnWrites<'a> {
    /// The old source's leader log when its failback entered PREPARING (empty when not
    /// failing back).
    pub snapshot: &'a [RecordBatch],
    /// (base offset, CRC) of every batch its own leaders appended, not a mirror.
    pub appended: Option<&'a BTreeSet<(Offset, u32)>>,
}

/// [`exposed_beyond_source`] on an old source that fails back, leaving out its own data
/// (`own`).
///
/// Failback (seed design, kip1279 Part B §8.1): PREPARING truncates only from the first local
/// epoch above the LME, so the old source's own tail in epochs up to the LME stays until the
/// first mirror fetch returns a diverging epoch and truncates it ("any remaining tail inside
/// epoch <= LME that the source never had is then removed by the normal Fetch divergence
/// path", B §8.1 step 3; a failback truncation below the HW, which kafka-semantics §2.3 item 7
/// allows). Until then the old source's followers keep replicating that tail and Kafka's HW
/// rule (`maybeIncrementLeaderHW`, §1.5) moves the HW over it, whether or not it was already
/// committed when the failback started (mirror chaos seeds 541, 1092, 1734, 1945, 2530, 3594,
/// 3732, 4420, 4566, 4599, 4886, 5046, 5388, 6986: a follower lagging at the failback catches
/// up during PREPARING or before the first mirror fetch). Those batches are the old source's
/// own writes, in its log before this mirror run appended anything: not source data, so
/// exposing them does not expose uncommitted *source* data (§2.3 item 12 is "over the mirrored
/// range"). Exempt exactly them: the snapshot's batches, byte-identical at the same offset.
/// Anything this run appended (a mirrored batch, a marker) is still checked.
///
/// The snapshot is one replica's log at one moment; the old source's own writes reach the
/// failback's log from elsewhere too. A zombie leader, cut off from the controller while its
/// producers still reach it, appends in the LME's epoch past what the new leader held when
/// PREPARING began, and a later unclean election of it brings that tail back to be cut by the
/// same diverging fetch (fresh mirror seed 845002405: src-2's 640..659, appended at epoch 0
/// after src-1 led at epoch 1; src-1 then crashed and src-2 led uncleanly with 0..659). Every
/// batch a leader of this cluster appended itself (`own.appended`, matched by base offset and
/// CRC) is exempt for the same reason as the snapshot's.
pub fn exposed_beyond_source_after_failback<'a>(
    ghost: &Ghost,
    source: ClusterIdx,
    tp: &TopicPartition,
    dest_batches: impl Iterator<Item = &'a RecordBatch>,
    hw: Offset,
    own: &OwnWrites<'_>,
) -> Option<(Offset, String)> {
    let own_tail: BTreeMap<Offset, &RecordBatch> =
        own.snapshot.iter().map(|b| (b.base_offset(), b)).collect();
    let batches = dest_batches.filter(|b| {
        own_tail.get(&b.base_offset()).is_none_or(|o| *o != *b)
            && own
                .appended
                .is_none_or(|w| !w.contains(&(b.base_offset(), b.header().crc)))
    });
    exposed_beyond_source(ghost, source, tp, batches, hw)
}

/// True when a newer leader epoch than `epoch` was already elected for `tp` on `cluster` (the
/// ghost's SingleLeader record): an append stamped `epoch` as leader is a zombie's.
#[must_use]
pub fn superseded_leader_epoch(
    ghost: &Ghost,
    cluster: ClusterIdx,
    tp: &TopicPartition,
    epoch: LeaderEpoch,
) -> bool {
    ghost
        .partitions
        .get(&(cluster, tp.clone()))
        .and_then(|g| g.leaders.keys().next_back())
        .is_some_and(|newest| *newest > epoch)
}

/// `read_only_until_stopped`: a leader append on a partition in mirror state `state` (`None`:
/// no transition seen yet; `has_run`: the broker treats it as a mirror partition) is allowed
/// only when STOPPED, or when it is the broker's own control batch.
#[must_use]
pub fn read_only_violation(
    state: Option<S>,
    has_run: bool,
    control: Option<ControlRecord>,
) -> Option<String> {
    let read_only = match state {
        Some(s) => s != S::Stopped,
        None => has_run,
    };
    if !read_only {
        return None;
    }
    // The broker's own control batches only: `MIRROR_PID_RESET` and the stop plan's ABORT
    // markers (coordinator epoch -1). A transaction coordinator's marker (epoch >= 0) is a
    // COORDINATOR-origin append, refused by kafka-semantics §2.3 item 17.
    match control {
        Some(
            ControlRecord::MirrorPidReset
            | ControlRecord::EndTxn {
                commit: false,
                coordinator_epoch: -1,
            },
        ) => None,
        _ => Some(format!(
            "leader append while the mirror state is {}{}",
            state.map_or_else(|| "UNKNOWN".to_string(), |s| s.to_string()),
            match control {
                Some(c) => format!(" (control {c:?})"),
                None => String::new(),
            }
        )),
    }
}

/// `epoch_above_lme_after_stop`.
#[must_use]
pub fn epoch_violation(lme: LeaderEpoch, epoch: LeaderEpoch) -> Option<String> {
    (epoch <= lme).then(|| {
        format!("leader-appended batch epoch {epoch} is not above the last mirrored epoch {lme}")
    })
}

/// `pid_reset_after_stop`: a producer entry whose last batch is below the barrier. At the
/// STOPPED transition any entry without a batch is stale too (the reset expired everything).
#[must_use]
pub fn stale_producer(
    ps: &ProducerStateManager,
    barrier: Offset,
    at_stop: bool,
) -> Option<(Option<Offset>, String)> {
    ps.active_producers().iter().find_map(|(pid, e)| {
        let stale = match e.last_data_offset() {
            Some(o) => o < barrier,
            None => at_stop,
        };
        stale.then(|| {
            (
                e.last_data_offset(),
                format!(
                    "producer {pid} (epoch {}, last seq {}) survives the PID barrier at {barrier} (the MIRROR_PID_RESET, or the LEO when the LME was recorded): last batch at {:?}",
                    e.producer_epoch,
                    e.last_seq(),
                    e.last_data_offset()
                ),
            )
        })
    })
}

/// `no_hanging_txn_after_stop`: LSO == HW, no open transaction, and (except the latest
/// design, whose ABORT markers end the transactions without truncating) HW == LEO.
#[must_use]
pub fn hanging_txn_violation(
    lso: Offset,
    hw: Offset,
    leo: Offset,
    ongoing: usize,
    latest: bool,
) -> Option<(Offset, String)> {
    if lso != hw || ongoing > 0 {
        return Some((
            lso,
            format!("STOPPED with LSO {lso} HW {hw} LEO {leo} and {ongoing} open transaction(s)"),
        ));
    }
    if !latest && hw != leo {
        return Some((
            hw,
            format!("STOPPED with HW {hw} below LEO {leo}: the stop did not cut to a stable end"),
        ));
    }
    None
}

/// The data the failback validation works on.
#[derive(Clone, Copy, Debug)]
pub struct FailbackInput<'a> {
    /// The old source's leader log when the failback entered PREPARING.
    pub snapshot: &'a [RecordBatch],
    /// Its LEO then.
    pub snapshot_leo: Offset,
    /// Its HW then.
    pub snapshot_hw: Offset,
    /// The old source's final log start.
    pub old_start: Offset,
    /// The old source's final leader log.
    pub old_log: &'a [RecordBatch],
    /// The new source's final log start.
    pub new_start: Offset,
    /// The new source's final leader log.
    pub new_log: &'a [RecordBatch],
    /// Lowest offset a mirror truncation cut the old source to during the failback.
    pub min_truncated_to: Option<Offset>,
    /// Declared losses on the old source since the failback started: `(from, batches)`.
    pub losses: &'a [(i64, usize)],
    /// The lowest `from` among those losses that were not mirror truncations (an unclean
    /// election, or its last ISR member's recovery cutting its log), if any.
    pub lowest_other_loss: Option<i64>,
}

/// `failback_converges` on one partition: the logs agree from the later log start, and
/// every dropped record is a declared loss. The error carries the offset and detail.
pub fn failback_outcome(i: &FailbackInput<'_>) -> Result<FailbackReport, (Option<Offset>, String)> {
    let start = i.old_start.max(i.new_start);
    let old: Vec<&RecordBatch> = i
        .old_log
        .iter()
        .filter(|b| b.base_offset() >= start)
        .collect();
    let new: Vec<&RecordBatch> = i
        .new_log
        .iter()
        .filter(|b| b.base_offset() >= start)
        .collect();
    if old != new {
        let at = old
            .iter()
            .zip(new.iter())
            .find(|(a, b)| a != b)
            .map(|(a, b)| a.base_offset().min(b.base_offset()))
            .or_else(|| {
                let n = old.len().min(new.len());
                old.get(n).or(new.get(n)).map(|b| b.base_offset())
            });
        return Err((
            at,
            format!(
                "logs differ from offset {at:?} (log start {start}): old source has {} batches to LEO {}, new source {} batches to LEO {}",
                old.len(),
                old.last().map_or(start, |b| b.last_offset().plus(1)),
                new.len(),
                new.last().map_or(start, |b| b.last_offset().plus(1)),
            ),
        ));
    }
    let final_by_base: BTreeMap<Offset, &RecordBatch> =
        i.new_log.iter().map(|b| (b.base_offset(), b)).collect();
    let divergence = i
        .snapshot
        .iter()
        .filter(|b| b.base_offset() >= start)
        .find(|b| final_by_base.get(&b.base_offset()) != Some(b))
        .map_or(i.snapshot_leo, RecordBatch::base_offset);
    let dropped = (i.snapshot_leo.0 - divergence.0).max(0);
    let truncated = i
        .min_truncated_to
        .map_or(0, |t| (i.snapshot_leo.0 - t.0).max(0));
    let lowest_declared = i.losses.iter().map(|l| l.0).min();
    // The old tail must be cut by the failback's LME truncation, unless another declared loss
    // already removed it: the old source's only replica lost its log below the divergence
    // (mirror chaos seed 94: bit rot cut it at 406, the tail began at 517), so alignment found
    // nothing to truncate. Either way every dropped record is a declared loss, which is what
    // `failback_converges` requires.
    let dropped_by_other_loss = i.lowest_other_loss.is_some_and(|d| d <= divergence.0);
    // A tail above the old source's HW at the snapshot was never committed: any leader change
    // may drop it before the alignment looks (Kafka truncates a follower's uncommitted tail to
    // its new leader's log; no loss to declare). Mirror chaos seed 9960: 30..39 appended while
    // the only follower was cut off (HW 30), then an out-of-date replica elected uncleanly
    // with LEO 30; the ghost lost nothing committed and the alignment found nothing to cut.
    let dropped_uncommitted = divergence >= i.snapshot_hw;
    if dropped > 0 && !dropped_by_other_loss && !dropped_uncommitted {
        match i.min_truncated_to {
            Some(t) if t <= divergence => {}
            other => {
                return Err((
                    Some(divergence),
                    format!(
                        "the old source's tail from {divergence} ({dropped} records) was never truncated by the mirror (lowest truncation {other:?})"
                    ),
                ));
            }
        }
    }
    if truncated > 0 {
        let t = i.min_truncated_to.unwrap_or(divergence);
        if lowest_declared.is_none_or(|d| d > t.0) {
            return Err((
                Some(t),
                format!(
                    "{truncated} records truncated from {t} but the lowest declared loss is {lowest_declared:?}"
                ),
            ));
        }
    }
    Ok(FailbackReport {
        partition: String::new(),
        new_source: ClusterIdx(0),
        divergence_offset: divergence.0,
        records_dropped: dropped,
        records_truncated: truncated,
        declared_losses: i.losses.len(),
        declared_batches: i.losses.iter().map(|l| l.1).sum(),
    })
}
