//! kafka-semantics §2.3 items 1-10, checked after every event on the partition it touched
//! (only the touched partition, so the cost per event stays small).

use crate::world::node::lock;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use mirror_core::broker::partition::{Partition, Role};
use mirror_core::broker::{Broker, Event, TruncationCause};
use mirror_core::keyed_map::KeyedMap;
use mirror_core::log::producer_state::ProducerStateManager;
use mirror_core::protocol::{ClusterIdx, NodeId};
use mirror_core::types::{BrokerId, LeaderEpoch, Offset, TopicPartition};

use super::Violation;
use super::ghost::{AckedWrite, DeclaredLoss, Ghost, TxnLogTruncation};
use super::history::History;
use super::hw_bound::{LeaderSide, leader_hw_above_isr_follower};
use super::mirror::MirrorChecker;
use super::prefix::committed_prefix_check;
use crate::kafka::SimNode;
use crate::world::EventCtx;

/// Node states by id (the same `Arc`s the world drives).
pub type NodeMap = BTreeMap<NodeId, Arc<Mutex<SimNode>>>;

/// Trace names of nodes.
pub type NameFn = dyn Fn(NodeId) -> String;

/// The checker of a run: ghost state plus per-replica bookkeeping.
pub struct Checker {
    /// Ghost state.
    pub ghost: Ghost,
    /// Client history checks.
    pub history: History,
    /// KIP-1279 mirror checks.
    pub mirror: MirrorChecker,
    /// What the outcome checks remember of the clients' writes.
    pub clients: super::outcomes::ClientRecords,
    /// Report a leader elected cleanly with committed data missing (Kafka's known loss when
    /// the last ISR member lost unflushed data) as a violation instead of a declared loss.
    pub strict_durability: bool,
    first: Option<Violation>,
    /// Design-mechanism rules that broke ([`super::CheckKind::Mechanism`]), the first of each
    /// in the order they broke: diagnostics, the run goes on.
    diagnostics: Vec<Violation>,
    last_epoch: KeyedMap<(NodeId, TopicPartition), LeaderEpoch>,
    leader_hw: KeyedMap<(NodeId, TopicPartition), (LeaderEpoch, Offset)>,
    verified: KeyedMap<(NodeId, TopicPartition), Offset>,
    /// The leader epoch a replica was in when its HW last moved: the epoch lineage whose
    /// leader promised that HW (see [`truncation_below_hw_declared`]).
    hw_epoch: KeyedMap<(NodeId, TopicPartition), LeaderEpoch>,
    /// Each replica's log end offset and last batch as its events left them (appends,
    /// truncations, recoveries): a restart that recovers less, or another last batch, lost
    /// unflushed writes.
    leo_seen: KeyedMap<(NodeId, TopicPartition), (Offset, Option<BatchMark>)>,
    /// Replicas whose last restart lost unflushed writes and that have not learned an HW
    /// since: their recovered HW is not a promise over their recovered log (see
    /// [`truncation_below_hw_declared`]).
    lossy_restart: BTreeSet<(NodeId, TopicPartition)>,
    /// Brokers' disks, for `recovery_idempotent` (empty: not checked).
    pub disks: super::recovery::DiskMap,
}

impl Default for Checker {
    fn default() -> Self {
        Self::new()
    }
}

impl Checker {
    /// A fresh checker.
    #[must_use]
    pub fn new() -> Self {
        Self {
            ghost: Ghost::default(),
            history: History::default(),
            mirror: MirrorChecker::default(),
            clients: super::outcomes::ClientRecords::default(),
            strict_durability: false,
            first: None,
            diagnostics: Vec::new(),
            last_epoch: KeyedMap::new(),
            leader_hw: KeyedMap::new(),
            verified: KeyedMap::new(),
            hw_epoch: KeyedMap::new(),
            leo_seen: KeyedMap::new(),
            lossy_restart: BTreeSet::new(),
            disks: BTreeMap::new(),
        }
    }

    /// The first violation, if any.
    #[must_use]
    pub fn violation(&self) -> Option<&Violation> {
        self.first.as_ref()
    }

    /// The design-mechanism rules that broke, first of each, in order (diagnostics).
    #[must_use]
    pub fn diagnostics(&self) -> &[Violation] {
        &self.diagnostics
    }

    /// Records a violation: an outcome or Kafka rule ends the run (the first one is the
    /// verdict); a design-mechanism rule is kept as a diagnostic and the run goes on.
    pub fn report(&mut self, v: Violation) {
        if super::kind_of(&v.invariant) == super::CheckKind::Mechanism {
            if !self.diagnostics.iter().any(|d| d.invariant == v.invariant) {
                self.diagnostics.push(v);
            }
        } else if self.first.is_none() {
            self.first = Some(v);
        }
    }

    /// Checks the invariants an event may have affected. Returns the first violation (only
    /// once).
    pub fn on_event(
        &mut self,
        ctx: &EventCtx,
        event: &Event,
        nodes: &NodeMap,
        name: &dyn Fn(NodeId) -> String,
    ) {
        if self.first.is_some() {
            return;
        }
        if let Err(mut v) = self.check(ctx, event, nodes, name) {
            v.event_seq = ctx.seq;
            v.t_micros = ctx.t.0;
            self.report(v);
        }
    }

    fn check(
        &mut self,
        ctx: &EventCtx,
        event: &Event,
        nodes: &NodeMap,
        name: &dyn Fn(NodeId) -> String,
    ) -> Result<(), Violation> {
        if let Event::Truncated { tp, .. }
        | Event::TruncatedFully { tp, .. }
        | Event::LogStartChanged { tp, .. } = event
        {
            // The broker's writes for the event reached the disk before it (outputs in order).
            super::recovery::check_producer_snapshot(&self.disks, ctx.node, tp, nodes, name)?;
        }
        self.check_log(ctx, event, nodes, name)?;
        // After the single-cluster checks: they may have declared a loss this event caused.
        self.mirror.on_event(ctx, event, &self.ghost, nodes, name)
    }

    fn check_log(
        &mut self,
        ctx: &EventCtx,
        event: &Event,
        nodes: &NodeMap,
        name: &dyn Fn(NodeId) -> String,
    ) -> Result<(), Violation> {
        let node = ctx.node;
        let cluster = node.cluster;
        self.track_leo(node, event, nodes);
        if let Event::Appended {
            tp, last_offset, ..
        } = event
            && is_txn_log(tp)
        {
            self.ghost
                .txn_log_appends
                .entry((node, tp.partition))
                .or_default()
                .push((*last_offset, ctx.seq));
        }
        if let Event::Appended {
            tp,
            epoch,
            as_leader: true,
            ..
        } = event
        {
            self.ghost.partition(cluster, tp).own_epochs.insert(*epoch);
        }
        if let Event::BecameLeader { tp, .. } | Event::BecameFollower { tp, .. } = event
            && let Some(id) = with_partition(nodes, node, tp, |p| p.topic_id)
            && self.ghost.track_topic_id(cluster, tp, id)
        {
            // A new topic under an old name: epochs and HWs start over too.
            let other = |(n, t): &(NodeId, TopicPartition)| n.cluster != cluster || t != tp;
            self.verified.retain(|k, _| other(k));
            self.last_epoch.retain(|k, _| other(k));
            self.leader_hw.retain(|k, _| other(k));
        }
        match event {
            Event::LeaderElected {
                tp,
                leader,
                leader_epoch,
                unclean,
                ..
            } => {
                let g = self.ghost.partition(cluster, tp);
                if *unclean {
                    g.unclean_epochs.push(*leader_epoch);
                }
                g.elected.insert(*leader_epoch, *leader);
                Ok(())
            }
            Event::BecameLeader {
                tp,
                leader_epoch,
                isr,
            } => {
                self.check_epoch(node, tp, *leader_epoch, name)?;
                let g = self.ghost.partition(cluster, tp);
                if let Some(other) = g.leaders.insert(*leader_epoch, node)
                    && other != node
                {
                    return Err(Violation::new(
                        "single_leader",
                        name(node),
                        Some(tp),
                        None,
                        format!(
                            "{} and {} both led epoch {leader_epoch}",
                            name(other),
                            name(node)
                        ),
                    ));
                }
                self.on_new_leader(ctx, node, tp, (*leader_epoch, isr), nodes, name)?;
                self.check_replica(ctx, node, tp, nodes, name, ReplicaCheck::Deep)
            }
            Event::BecameFollower {
                tp, leader_epoch, ..
            } => {
                self.check_epoch(node, tp, *leader_epoch, name)?;
                self.check_replica(ctx, node, tp, nodes, name, ReplicaCheck::Shallow)
            }
            // Leader and follower appends, and batches a mirror fetched from its source.
            Event::Appended {
                tp,
                base_offset,
                last_offset,
                epoch,
                ..
            }
            | Event::MirrorAppended {
                tp,
                base_offset,
                last_offset,
                epoch,
                ..
            } => {
                let r = with_partition(nodes, node, tp, |p| {
                    // The log start may fall inside the batch: a follower whose empty log starts
                    // mid-batch restarts at the batch base (Kafka: Partition.appendRecordsTo-
                    // FollowerOrFutureReplica, UnexpectedAppendOffsetException), appends it, then
                    // applies the leader's log start, and `truncateFromStart` re-bases the
                    // covering entry at the log start (kafka-semantics §1.1). The batch's epoch
                    // is then owed from the log start on, as in the deep check
                    // (`epoch_cache_matches_batches`); offsets below it are not in the log.
                    let ls = p.log.log_start_offset();
                    if *last_offset < ls {
                        return Ok(());
                    }
                    let cached = p.log.epoch_cache().epoch_for_offset((*base_offset).max(ls));
                    (cached == Some(*epoch)).then_some(()).ok_or(cached)
                });
                if let Some(Err(cached)) = r {
                    return Err(Violation::new(
                        "epoch_cache_well_formed",
                        name(node),
                        Some(tp),
                        Some(*base_offset),
                        format!("batch epoch {epoch} but the cache says {cached:?}"),
                    ));
                }
                // A replica that re-fetched past a corrupt-batch cut has the data again.
                if !self.ghost.lost_to_corruption.is_empty() {
                    let key = (node, tp.clone());
                    if self
                        .ghost
                        .lost_to_corruption
                        .get(&key)
                        .is_some_and(|at| *last_offset >= *at)
                    {
                        self.ghost.lost_to_corruption.remove(&key);
                    }
                }
                self.check_replica(ctx, node, tp, nodes, name, ReplicaCheck::Shallow)
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
                // KIP-1279 truncations (LME alignment at failback, LSO truncation at stop, a
                // source divergence) are declared data-loss events.
                self.declare_loss(ctx, cluster, tp, *to, DeclaredLoss::MIRROR_TRUNCATION);
                self.verified.insert((node, tp.clone()), *to);
                // A declared mirror truncation on a leader (failback alignment, LSO cut at
                // stop, source divergence) may take its HW back within the same epoch.
                self.leader_hw.remove(&(node, tp.clone()));
                self.check_replica(ctx, node, tp, nodes, name, ReplicaCheck::Deep)
            }
            Event::Truncated {
                tp,
                to,
                cause: TruncationCause::TestHook,
                ..
            }
            | Event::TruncatedFully {
                tp,
                start: to,
                cause: TruncationCause::TestHook,
                ..
            } => {
                // A test truncated this replica directly (`TestTruncateLog`, Kafka's tests
                // calling `UnifiedLog.truncateTo`). On the leader it cuts the partition's
                // history: a declared data-loss event, as an unclean election is. A follower
                // still has the leader to re-fetch from: nothing is lost, and its truncation
                // below its own HW is the test's doing, not a broker's.
                let leads = with_partition(nodes, node, tp, |p| p.is_leader()).unwrap_or(false);
                if leads {
                    self.declare_loss(ctx, cluster, tp, *to, "truncate_log");
                    self.leader_hw.remove(&(node, tp.clone()));
                    self.verified.insert((node, tp.clone()), *to);
                } else if let Some(v) = self.verified.get_mut(&(node, tp.clone())) {
                    *v = (*v).min(*to);
                }
                let kept = (!matches!(event, Event::TruncatedFully { .. })).then_some(*to);
                self.note_txn_log_truncation(ctx, tp, kept);
                self.check_replica(ctx, node, tp, nodes, name, ReplicaCheck::Deep)
            }
            Event::Truncated {
                tp,
                to,
                high_watermark_before,
                cause,
                ..
            } => {
                let current_epoch = with_partition(nodes, node, tp, |p| p.leader_epoch);
                let hw_epoch = self.hw_epoch.get(&(node, tp.clone())).copied();
                let lossy_restart = self.lossy_restart.contains(&(node, tp.clone()));
                let g = self.ghost.partition(cluster, tp);
                if *to < *high_watermark_before
                    && !truncation_below_hw_declared(
                        g.declared_losses,
                        &g.unclean_epochs,
                        hw_epoch,
                        current_epoch,
                        lossy_restart,
                    )
                {
                    return Err(Violation::new(
                        "no_truncation_below_hw",
                        name(node),
                        Some(tp),
                        Some(*to),
                        format!(
                            "truncated to {to} below its HW {high_watermark_before} ({cause:?}) with no declared data loss"
                        ),
                    ));
                }
                let key = (node, tp.clone());
                if let Some(v) = self.verified.get_mut(&key) {
                    *v = (*v).min(*to);
                }
                self.note_txn_log_truncation(ctx, tp, Some(*to));
                self.check_replica(ctx, node, tp, nodes, name, ReplicaCheck::Deep)
            }
            Event::TruncatedFully { tp, start, .. } => {
                self.note_txn_log_truncation(ctx, tp, None);
                self.verified.insert((node, tp.clone()), *start);
                self.check_replica(ctx, node, tp, nodes, name, ReplicaCheck::Deep)
            }
            Event::CorruptBatchCut { tp, at, .. } => {
                // Flushed data cut at a corrupt batch: a loss of this replica only, unless it
                // is the last copy and leads again before it re-fetched (`on_new_leader`).
                self.ghost
                    .lost_to_corruption
                    .insert((node, tp.clone()), *at);
                self.ghost
                    .last_corruption_cut
                    .insert((node, tp.clone()), *at);
                Ok(())
            }
            Event::LogRecovered {
                tp,
                log_end_offset,
                record,
                ..
            } => {
                let key = (node, tp.clone());
                let now = (*log_end_offset, last_batch_mark(nodes, node, tp));
                let before = self.leo_seen.insert(key.clone(), now);
                // Shorter is lossy, and so is a recovered log that no longer holds the last
                // batch the replica had: a truncation and the re-fetch over it that never
                // reached the disk come back as the old tail, as long or longer (fresh mirror
                // seed 913900: t0-0 back to its own epoch-0 20..29 over the copied epoch-1
                // reset at 20, with the HW 21 checkpointed in between).
                let lost_tail = before.is_some_and(|(leo, mark)| {
                    *log_end_offset < leo
                        || mark.is_some_and(|m| batch_mark_at(nodes, node, tp, m.0) != Some(m))
                });
                if lost_tail {
                    self.lossy_restart.insert(key);
                } else {
                    self.lossy_restart.remove(&key);
                }
                super::recovery::check_recovered(&self.disks, node, tp, record, name)?;
                // Unflushed data may be gone: note it (Kafka relies on replication, not fsync).
                self.ghost
                    .lost_unflushed
                    .insert((node, tp.clone()), *log_end_offset);
                self.verified.remove(&(node, tp.clone()));
                self.last_epoch.remove(&(node, tp.clone()));
                // The recovered HW is the checkpoint, a promise learned no later than the last
                // HW this replica learned in memory, so the epoch of that HW still bounds it and
                // is kept: an unclean election crossed since then still allows a truncation
                // below the recovered HW (fresh single-cluster seed 971804: src-1, a zombie
                // leader of epoch 0 with ISR [1], committed 13 alone after the controller had
                // elected src-2 uncleanly in epoch 1; it restarted with nothing lost and HW 14,
                // then truncated to 13 as a follower of epoch 3). Forgetting the epoch made
                // every such truncation after a restart a violation.
                self.leader_hw.retain(|(n, t), _| !(*n == node && t == tp));
                self.check_replica(ctx, node, tp, nodes, name, ReplicaCheck::Deep)
            }
            Event::Registered { .. } => {
                // A new incarnation: in-memory epochs restart from metadata.
                self.last_epoch.retain(|(n, _), _| *n != node);
                self.leader_hw.retain(|(n, _), _| *n != node);
                Ok(())
            }
            Event::HighWatermarkChanged { tp, high_watermark } => {
                if let Some(e) = with_partition(nodes, node, tp, |p| p.leader_epoch) {
                    self.hw_epoch.insert((node, tp.clone()), e);
                }
                self.lossy_restart.remove(&(node, tp.clone()));
                self.on_hw(node, tp, *high_watermark, nodes, name)?;
                self.check_replica(ctx, node, tp, nodes, name, ReplicaCheck::HwMoved)
            }
            Event::LogStartChanged { tp, .. } | Event::IsrChanged { tp, .. } => {
                self.check_replica(ctx, node, tp, nodes, name, ReplicaCheck::Deep)
            }
            Event::ProduceFailed {
                client, tp, values, ..
            } => {
                self.clients.on_failed(cluster, *client, tp, values);
                Ok(())
            }
            Event::ProducerStateRefused {
                client,
                producer_id,
                ..
            } => {
                self.clients.on_producer_id(cluster, *client, *producer_id);
                Ok(())
            }
            Event::ProduceAcked {
                client,
                tp,
                base_offset,
                values,
                acks,
                producer_id,
                transactional,
            } => {
                self.clients
                    .on_acked(cluster, *client, tp, *producer_id, values);
                self.ghost.acked.push(AckedWrite {
                    cluster,
                    tp: tp.clone(),
                    base_offset: *base_offset,
                    values: values.clone(),
                    acks: *acks,
                    transactional: *transactional,
                    event_seq: ctx.seq,
                    producer_id: *producer_id,
                });
                Ok(())
            }
            Event::Consumed {
                client,
                tp,
                offset,
                value,
                read_committed,
            } => {
                let log_start = || {
                    nodes
                        .keys()
                        .filter(|n| n.cluster == cluster)
                        .filter_map(|n| with_partition(nodes, *n, tp, |p| p.log.log_start_offset()))
                        .max()
                        .unwrap_or(Offset(0))
                };
                self.history.on_consumed(
                    cluster,
                    *client,
                    tp,
                    *offset,
                    value,
                    *read_committed,
                    log_start,
                    &self.ghost,
                    &name(node),
                )
            }
            _ => Ok(()),
        }
    }

    /// Follows each replica's log end offset and last batch from its appends and
    /// truncations. An append names its batch; only a truncation (which leaves an earlier
    /// batch last) looks at the log.
    fn track_leo(&mut self, node: NodeId, event: &Event, nodes: &NodeMap) {
        let (tp, leo, mark) = match event {
            Event::Appended {
                tp,
                base_offset,
                last_offset,
                epoch,
                ..
            }
            | Event::MirrorAppended {
                tp,
                base_offset,
                last_offset,
                epoch,
            } => (tp, last_offset.plus(1), Some((*base_offset, *epoch))),
            Event::Truncated { tp, to, .. } => (tp, *to, last_batch_mark(nodes, node, tp)),
            Event::TruncatedFully { tp, start, .. } => (tp, *start, None),
            _ => return,
        };
        self.leo_seen.insert((node, tp.clone()), (leo, mark));
    }

    /// Records that a replica of a `__transaction_state` partition dropped the records at and
    /// above `kept` (all of them for `None`, a restart of its log), with when it had
    /// appended them ([`crate::check::ghost::Ghost::txn_log_truncations`]).
    fn note_txn_log_truncation(
        &mut self,
        ctx: &EventCtx,
        tp: &TopicPartition,
        kept: Option<Offset>,
    ) {
        if !is_txn_log(tp) {
            return;
        }
        let appends = self
            .ghost
            .txn_log_appends
            .entry((ctx.node, tp.partition))
            .or_default();
        let keep = appends.partition_point(|(last, _)| kept.is_some_and(|k| *last < k));
        let dropped_appended_at = appends.drain(keep..).map(|(_, at)| at).collect();
        self.ghost
            .txn_log_truncations
            .entry((ctx.node.cluster, tp.partition))
            .or_default()
            .push(TxnLogTruncation {
                at: ctx.seq,
                dropped_appended_at,
            });
    }

    /// Records a declared data-loss event and cuts the committed history at `from`.
    fn declare_loss(
        &mut self,
        ctx: &EventCtx,
        cluster: ClusterIdx,
        tp: &TopicPartition,
        from: Offset,
        cause: &str,
    ) {
        let g = self.ghost.partition(cluster, tp);
        let cut = g.cut_counted(from);
        g.declared_losses += 1;
        g.last_loss_micros = ctx.t.0;
        self.ghost.losses.push(DeclaredLoss {
            partition: DeclaredLoss::partition_of(cluster, tp),
            from_offset: from.0,
            batches: cut.batches,
            records: cut.records,
            span_ms: cut.span_ms,
            cause: cause.to_string(),
            t_micros: ctx.t.0,
            markers: cut.markers,
        });
        self.verified
            .retain(|(n, t), _| !(t == tp && n.cluster == cluster));
        // A declared truncation may lower the leader's HW (KIP-1279 failback, LSO cut).
        self.leader_hw
            .retain(|(n, t), _| !(t == tp && n.cluster == cluster));
    }

    fn check_epoch(
        &mut self,
        node: NodeId,
        tp: &TopicPartition,
        epoch: LeaderEpoch,
        name: &dyn Fn(NodeId) -> String,
    ) -> Result<(), Violation> {
        let key = (node, tp.clone());
        if let Some(prev) = self.last_epoch.get(&key)
            && epoch < *prev
        {
            return Err(Violation::new(
                "monotonic_epoch",
                name(node),
                Some(tp),
                None,
                format!("leader epoch went from {prev} to {epoch}"),
            ));
        }
        self.last_epoch.insert(key, epoch);
        Ok(())
    }

    /// A new leader: a clean one must hold the committed history; an unclean one (or one that
    /// lost unflushed data, or flushed data to bit rot, while being the last ISR member) cuts
    /// it: a declared loss.
    fn on_new_leader(
        &mut self,
        ctx: &EventCtx,
        node: NodeId,
        tp: &TopicPartition,
        (epoch, isr): (LeaderEpoch, &[mirror_core::types::BrokerId]),
        nodes: &NodeMap,
        name: &dyn Fn(NodeId) -> String,
    ) -> Result<(), Violation> {
        let cluster = node.cluster;
        let Some((first_diff, leader_leo)) = with_partition(nodes, node, tp, |p| {
            let g = self.ghost.partitions.get(&(cluster, tp.clone()));
            (
                g.and_then(|g| first_difference(p, &g.committed)),
                p.log.log_end_offset(),
            )
        }) else {
            return Ok(());
        };
        let Some(from) = first_diff else {
            return Ok(());
        };
        let g = self.ghost.partition(cluster, tp);
        let unclean = g.unclean_epochs.contains(&epoch)
            || node.broker_id().is_some_and(|b| {
                crate::check::unclean_line::inherits_unclean_cut(
                    &g.unclean_epochs,
                    &g.elected,
                    b,
                    epoch,
                )
            });
        let key = (node, tp.clone());
        let facts = NewLeaderFacts {
            unclean,
            corrupt_cut_at: self.ghost.lost_to_corruption.get(&key).copied(),
            lost_unflushed: self.ghost.lost_unflushed.contains_key(&key),
            strict_durability: self.strict_durability,
            others_in_isr: isr.iter().any(|b| Some(*b) != node.broker_id()),
        };
        let cause = match leader_loss_cause(&facts, from) {
            Ok(cause) => cause,
            Err(why) => {
                return Err(Violation::new(
                    "leader_completeness",
                    name(node),
                    Some(tp),
                    Some(from),
                    format!("{why} in epoch {epoch} but missing committed data from offset {from}"),
                ));
            }
        };
        let g = self.ghost.partition(cluster, tp);
        // The new history starts where the leader's log ends, which can be below the first
        // committed batch it lacks: a committed history that retention or DeleteRecords moved
        // up (log start 374) and an unclean leader with an empty log (LEO 0) writes from 0
        // again. The true HW must drop to that LEO, or the leader's new batches below the old
        // true HW are never taken into the committed history (kafka-semantics 2.2: the true
        // HW is the largest HW exposed in the history the unclean election chose; mirror chaos
        // seed 903072, where the failback then mirrored that history's batch at 0).
        let cut = g.cut_counted(from.min(leader_leo));
        g.declared_losses += 1;
        g.last_loss_micros = ctx.t.0;
        self.ghost.losses.push(DeclaredLoss {
            partition: DeclaredLoss::partition_of(cluster, tp),
            from_offset: from.0,
            batches: cut.batches,
            records: cut.records,
            span_ms: cut.span_ms,
            cause: cause.to_string(),
            t_micros: ctx.t.0,
            markers: cut.markers,
        });
        // every replica must be re-verified against the cut history
        self.verified.retain(|(_, t), _| t != tp);
        Ok(())
    }

    fn on_hw(
        &mut self,
        node: NodeId,
        tp: &TopicPartition,
        hw: Offset,
        nodes: &NodeMap,
        name: &dyn Fn(NodeId) -> String,
    ) -> Result<(), Violation> {
        let cluster = node.cluster;
        let Some((is_leader, epoch)) =
            with_partition(nodes, node, tp, |p| (p.is_leader(), p.leader_epoch))
        else {
            return Ok(());
        };
        if is_leader {
            let key = (node, tp.clone());
            if let Some((e, prev)) = self.leader_hw.get(&key)
                && *e == epoch
                && hw < *prev
            {
                return Err(Violation::new(
                    "monotonic_hw",
                    name(node),
                    Some(tp),
                    Some(hw),
                    format!("leader HW went back from {prev} to {hw} in epoch {epoch}"),
                ));
            }
            let prev_hw = self
                .leader_hw
                .get(&key)
                .filter(|(e, _)| *e == epoch)
                .map(|(_, h)| *h);
            self.leader_hw.insert(key, (epoch, hw));
            let g = self.ghost.partition(cluster, tp);
            if g.unclean_epochs.iter().any(|u| *u > epoch) {
                // A stale leader (one that has not yet learned of a later unclean election, e.g.
                // partitioned from the controller with a follower still fetching from it) can
                // keep advancing its own HW with its local ISR (kafka-semantics 2.1: "for any
                // replica that presumes leadership" is WeakIsr only; the ghost trueHW is "max HW
                // exposed by any leader in a non-ULE history", 2.2). Its branch is the one the
                // unclean election already cut: what it exposes now is lost with it, not
                // committed history. Archive it (a consumer may have read it, a client may
                // have had it acknowledged) instead: everything this leader newly exposes,
                // from its own previous HW (not the true HW: that follows the leader the
                // unclean election chose and may be far above or below the stale branch;
                // single-cluster chaos seed 1678).
                let from = prev_hw.unwrap_or(Offset(0));
                let batches = with_partition(nodes, node, tp, |p| {
                    p.log
                        .batches_from(from)
                        .take_while(|b| b.last_offset() < hw)
                        .cloned()
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default();
                let g = self.ghost.partition(cluster, tp);
                for b in batches {
                    if g.committed.get(&b.base_offset()) != Some(&b) {
                        g.archive(b);
                    }
                }
            } else if hw > g.true_hw {
                // extend the committed history with the leader's batches below the new HW
                let from = g.true_hw;
                let batches = with_partition(nodes, node, tp, |p| {
                    p.log
                        .batches_from(from)
                        .take_while(|b| b.last_offset() < hw)
                        .cloned()
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default();
                let g = self.ghost.partition(cluster, tp);
                for b in batches {
                    g.committed.entry(b.base_offset()).or_insert(b);
                }
                g.true_hw = hw;
            }
        }
        self.verify_prefix(node, tp, nodes, name)
    }

    /// LogMatching / StrongIsr: the replica's batches below its HW equal the committed history.
    fn verify_prefix(
        &mut self,
        node: NodeId,
        tp: &TopicPartition,
        nodes: &NodeMap,
        name: &dyn Fn(NodeId) -> String,
    ) -> Result<(), Violation> {
        let cluster = node.cluster;
        let key = (node, tp.clone());
        let from = self.verified.get(&key).copied().unwrap_or(Offset(0));
        let Some(g) = self.ghost.partitions.get(&(cluster, tp.clone())) else {
            return Ok(());
        };
        let newest_epoch = g.leaders.keys().next_back().copied();
        let stale_hw =
            learned_before_the_last_loss(nodes, node, tp, g.last_loss_micros, newest_epoch);
        let res = with_partition(nodes, node, tp, |p| {
            if g.unclean_epochs.iter().any(|u| *u > p.leader_epoch) {
                // The replica has not yet learned of a later unclean election: its log and HW
                // are the branch that election cut (a stale leader and its followers). It
                // reconciles (DivergingEpoch) once it sees the new epoch; checked from then on.
                return Ok(from);
            }
            let upto = p.log.high_watermark().min(g.true_hw);
            committed_prefix_check(p.log.batches_from(from), g, upto, stale_hw)
        });
        match res {
            Some(Ok(upto)) => {
                self.verified.insert(key, upto.max(from));
                Ok(())
            }
            Some(Err(o)) => Err(Violation::new(
                "log_matching",
                name(node),
                Some(tp),
                Some(o),
                "batch below the HW differs from the committed history",
            )),
            None => Ok(()),
        }
    }

    /// Local invariants of one replica: bounds, cache, LSO, and (on structural events)
    /// producer state against replay.
    fn check_replica(
        &mut self,
        ctx: &EventCtx,
        node: NodeId,
        tp: &TopicPartition,
        nodes: &NodeMap,
        name: &dyn Fn(NodeId) -> String,
        check: ReplicaCheck,
    ) -> Result<(), Violation> {
        let now_ms = ctx.t.as_millis();
        let deep = check == ReplicaCheck::Deep;
        let hw_moved = check == ReplicaCheck::HwMoved;
        let r = nodes.get(&node).and_then(|arc| {
            let guard = lock(arc);
            let b: &Broker = guard.as_broker()?;
            let p = b.partition(tp)?;
            Some(replica_violation(p, deep, hw_moved, now_ms, |id| {
                b.image().broker_epoch(id)
            }))
        });
        match r {
            Some(Some((inv, off, detail))) => {
                Err(Violation::new(inv, name(node), Some(tp), off, detail))
            }
            _ => Ok(()),
        }
    }
}

/// True when `node`'s HW may still belong to the lineage the last declared loss of `tp`
/// (`last_loss_micros`) cut (see [`committed_prefix_check`]):
/// - a follower whose leader last served a fetch from it before that loss (or holds no fetch
///   state for it, e.g. a new leader it has not fetched from yet): Kafka's follower HW is the
///   leader's HW in the last response it applied (kafka-semantics §1.3), so until it fetches
///   again its HW is the pre-loss leader's promise;
/// - a leader whose epoch a newer election superseded (`newest_epoch`, the ghost's SingleLeader
///   record): a deposed leader cut off from its controller still advances its HW with followers
///   equally unaware, over the branch the new lineage has since cut (mirror chaos seed 21227:
///   src-3, deposed in epoch 0, moved its HW to 1090 over records the failback had cut at 500),
///   as with a stale leader behind an unclean election (kafka-semantics §2.1: WeakIsr only
///   for "any replica that presumes leadership").
///
/// A current leader's own HW is never stale.
fn learned_before_the_last_loss(
    nodes: &NodeMap,
    node: NodeId,
    tp: &TopicPartition,
    last_loss_micros: u64,
    newest_epoch: Option<LeaderEpoch>,
) -> bool {
    if last_loss_micros == 0 {
        return false;
    }
    let role = with_partition(nodes, node, tp, |p| match p.role {
        Role::Follower { leader } => Err(leader),
        Role::Leader(_) => Ok(newest_epoch.is_some_and(|n| n > p.leader_epoch)),
    });
    let leader = match role {
        Some(Ok(deposed)) => return deposed,
        Some(Err(leader)) => leader,
        None => None,
    };
    let (Some(leader), Some(me)) = (leader, node.broker_id()) else {
        return false;
    };
    let last_fetch_ms = with_partition(nodes, NodeId::broker(node.cluster, leader), tp, |p| {
        p.leader_state()
            .and_then(|l| l.followers.get(&me))
            .map(|r| r.last_fetch_time_ms)
    })
    .flatten();
    last_fetch_ms.is_none_or(|ms| u64::try_from(ms).unwrap_or(0) * 1000 < last_loss_micros)
}

/// A batch told apart from another at the same place: base offset and leader epoch (one
/// leader per epoch writes one batch at an offset), as an append event names it.
type BatchMark = (Offset, LeaderEpoch);

fn mark_of(b: &mirror_core::record::RecordBatch) -> BatchMark {
    (b.base_offset(), b.partition_leader_epoch())
}

/// The [`BatchMark`] of the replica's last batch.
fn last_batch_mark(nodes: &NodeMap, node: NodeId, tp: &TopicPartition) -> Option<BatchMark> {
    with_partition(nodes, node, tp, |p| {
        p.log.batches().next_back().map(mark_of)
    })
    .flatten()
}

/// The [`BatchMark`] of the replica's batch that contains `offset`.
fn batch_mark_at(
    nodes: &NodeMap,
    node: NodeId,
    tp: &TopicPartition,
    offset: Offset,
) -> Option<BatchMark> {
    with_partition(nodes, node, tp, |p| {
        p.log.batch_containing(offset).map(mark_of)
    })
    .flatten()
}

/// First committed batch the replica does not hold identically (below the true HW).
fn first_difference(
    p: &Partition,
    committed: &BTreeMap<Offset, mirror_core::record::RecordBatch>,
) -> Option<Offset> {
    for (base, b) in committed {
        if *base < p.log.log_start_offset() && b.last_offset() < p.log.log_start_offset() {
            continue; // deleted by retention on this replica
        }
        match p.log.batch_containing(*base) {
            Some(mine) if mine == b => {}
            _ => return Some(*base),
        }
    }
    None
}

/// How much of a replica `Checker::check_replica` judges after an event.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum ReplicaCheck {
    /// Bounds, cache and LSO.
    Shallow,
    /// Also producer state against replay (a structural event).
    Deep,
    /// Also the leader's HW against the followers it counted (the HW just moved).
    HwMoved,
}

fn replica_violation(
    p: &Partition,
    deep: bool,
    hw_moved: bool,
    now_ms: i64,
    known_broker_epoch: impl Fn(BrokerId) -> Option<i64>,
) -> Option<(&'static str, Option<Offset>, String)> {
    let log = &p.log;
    let (ls, lso, hw, leo) = (
        log.log_start_offset(),
        log.last_stable_offset(),
        log.high_watermark(),
        log.log_end_offset(),
    );
    if !(ls <= lso && lso <= hw && hw <= leo) {
        return Some((
            "offset_bounds",
            None,
            format!("logStart={ls} lso={lso} hw={hw} leo={leo}"),
        ));
    }
    // The leader's HW bound is judged when the HW moves, against the ISR it moved over. Kafka
    // lets a replica enter the ISR afterwards with a lower LEO (as the leader last saw it): a
    // metadata update at the partition epoch the leader already holds resets a pending
    // expansion to the committed ISR (`Partition.makeLeader` allows an equal epoch and
    // `updateAssignmentAndIsr` sets `CommittedPartitionState`), the AlterPartition response
    // is then ignored as stale, the HW advances over the smaller ISR, and the controller's
    // commit of the expansion arrives next with the follower in it (mirror chaos seed 329:
    // HW 6 over [1,2], then ISR [1,2,3] with follower 3 last seen at 4). A follower's missing
    // committed data is judged where it matters, when it is elected (`leader_completeness`).
    if let Some(l) = p.leader_state().filter(|_| hw_moved) {
        let side = LeaderSide {
            high_watermark: hw,
            log_start: ls,
            leader_epoch_start: l.leader_epoch_start_offset,
            isr: &l.isr,
            followers: &l.followers,
        };
        if let Some((b, leo)) = leader_hw_above_isr_follower(&side, known_broker_epoch) {
            return Some((
                "offset_bounds",
                Some(hw),
                format!("leader HW {hw} above ISR follower {b}'s LEO {leo}"),
            ));
        }
    }
    let fu = log
        .producer_state()
        .first_unstable_offset()
        .map(|o| o.max(ls));
    let expect = match fu {
        Some(o) if o < hw => o,
        _ => hw,
    };
    if lso != expect {
        return Some((
            "lso_formula",
            Some(lso),
            format!("LSO {lso} but min(firstUnstable {fu:?}, HW {hw}) = {expect}"),
        ));
    }
    if deep {
        if let Err((o, cached, batch)) = log.epoch_cache_matches_batches() {
            return Some((
                "epoch_cache_well_formed",
                Some(o),
                format!("batch epoch {batch} but the cache says {cached:?}"),
            ));
        }
        let spans: Vec<super::epoch_cache::BatchSpan> = log
            .batches()
            .map(|b| (b.base_offset(), b.last_offset(), b.partition_leader_epoch()))
            .collect();
        if let Some((o, d)) = super::epoch_cache::entry_without_records(
            log.epoch_cache().epoch_entries(),
            &spans,
            ls,
            log.log_end_offset(),
        ) {
            return Some(("epoch_cache_well_formed", Some(o), d));
        }
        if let Some(first) = log.epoch_cache().earliest_entry()
            && first.start_offset < ls
        {
            return Some((
                "epoch_cache_well_formed",
                Some(first.start_offset),
                "cache entry below the log start".into(),
            ));
        }
        if let Some(d) =
            producer_state_difference(log.producer_state(), &log.replayed_producer_state(), now_ms)
        {
            return Some(("producer_state_is_replay", None, d));
        }
    }
    None
}

/// Compares live producer state with the replay, allowing producers that expired.
fn producer_state_difference(
    live: &ProducerStateManager,
    replay: &ProducerStateManager,
    now_ms: i64,
) -> Option<String> {
    for (pid, e) in live.active_producers() {
        match replay.active_producers().get(pid) {
            Some(r)
                if r.producer_epoch == e.producer_epoch
                    && r.last_seq() == e.last_seq()
                    && r.current_txn_first_offset == e.current_txn_first_offset => {}
            other => return Some(format!("producer {pid}: live {e:?} replay {other:?}")),
        }
    }
    for (pid, r) in replay.active_producers() {
        if !live.active_producers().contains_key(pid) && !replay.is_producer_expired(r, now_ms) {
            return Some(format!(
                "producer {pid} in the replay but not live (not expired)"
            ));
        }
    }
    if live.ongoing_txns() != replay.ongoing_txns() {
        return Some(format!(
            "ongoing txns differ: live {:?} replay {:?}",
            live.ongoing_txns(),
            replay.ongoing_txns()
        ));
    }
    None
}

/// What the checker knows about a leader that lacks committed history from some offset.
#[derive(Copy, Clone, Debug, Default)]
pub struct NewLeaderFacts {
    /// Its epoch was elected uncleanly.
    pub unclean: bool,
    /// Its last recovery cut the log at a corrupt batch (bit rot), losing offsets from here.
    pub corrupt_cut_at: Option<Offset>,
    /// It restarted, so unflushed data may be gone.
    pub lost_unflushed: bool,
    /// Unflushed losses are violations (`Checker::strict_durability`).
    pub strict_durability: bool,
    /// The ISR it was elected with names another broker.
    pub others_in_isr: bool,
}

/// The declared cause of a new leader's missing committed history from `from`, or why it is a
/// `leader_completeness` violation.
///
/// A replica whose recovery cut its flushed log at a corrupt batch (`LogLoader.recoverLog`)
/// lost that data; that is a loss of the partition only when the controller had nobody else
/// to elect: it was the last ISR member (a restarted broker leaves every ISR it is not the last
/// of when its old session is fenced), so it is elected with an ISR of itself. Elected next to
/// another ISR member, a replica that still held the data was passed over: a violation, not an
/// unflushed tail to excuse.
pub fn leader_loss_cause(f: &NewLeaderFacts, from: Offset) -> Result<&'static str, &'static str> {
    if f.unclean {
        return Ok("unclean_election");
    }
    if f.corrupt_cut_at.is_some_and(|at| at <= from) {
        return if f.others_in_isr {
            Err("elected with other ISR members after recovery cut its log at a corrupt batch")
        } else {
            Ok("corrupt_batch_on_last_isr_member")
        };
    }
    if f.lost_unflushed && !f.strict_durability {
        return Ok("unflushed_loss_on_last_isr_member");
    }
    Err("cleanly elected")
}

/// The broker that leads `tp` in `cluster` now, if any.
#[must_use]
pub fn leader_of(nodes: &NodeMap, cluster: ClusterIdx, tp: &TopicPartition) -> Option<NodeId> {
    // A crashed, paused or isolated old leader still believes it leads until it learns the
    // new epoch: the current leader is the claimant with the highest leader epoch.
    nodes
        .keys()
        .copied()
        .filter(|n| n.cluster == cluster)
        .filter_map(|n| {
            with_partition(nodes, n, tp, |p| p.is_leader().then_some(p.leader_epoch))
                .flatten()
                .map(|e| (e, n))
        })
        .max_by_key(|(e, n)| (*e, std::cmp::Reverse(*n)))
        .map(|(_, n)| n)
}

/// Runs `f` on a broker's replica of `tp`, if the node is a broker hosting it.
pub fn with_partition<R>(
    nodes: &NodeMap,
    node: NodeId,
    tp: &TopicPartition,
    f: impl FnOnce(&Partition) -> R,
) -> Option<R> {
    let arc = nodes.get(&node)?;
    let guard = lock(arc);
    let b: &Broker = guard.as_broker()?;
    b.partition(tp).map(f)
}

/// kafka-semantics §2.3 item 7: a truncation below a replica's HW is allowed only at a
/// declared unclean event (or failback, declared as a mirror truncation).
///
/// Declared the usual way when the ghost cut committed history (`declared_losses`). But an
/// unclean election is a declared unclean event even when it cut nothing of the ghost's
/// history: a replica's local HW is only the promise of the leader it fetched from, and a
/// superseded (zombie) leader cut off from the controller keeps advancing its HW with a
/// follower equally cut off (both still in epoch `e`, which Kafka's fencing accepts: same
/// epoch on both sides). Those records never enter the true HW (the ghost reads only
/// non-stale leaders), so the unclean election that superseded `e` "lost nothing"; yet when
/// the follower learns the unclean leader's epoch it must truncate to that leader's log,
/// below its zombie HW (mirror chaos seed 67, `__transaction_state-1`: dst-1 and dst-3 stuck
/// in epoch 0 commit 122..=123 after the controller elected dst-3 in epoch 1 and dst-2
/// uncleanly in epoch 2). With a clean election the new leader would be in every ISR the
/// zombie could use and hold those records, so only an unclean epoch `u` crossed since the HW
/// was learned (`hw_epoch < u <= current_epoch`) allows it; any other truncation below the
/// HW is still a violation.
///
/// A replica whose last restart lost unflushed writes (`lossy_restart`: it recovered a shorter
/// log than it had, and has learned no HW since) is a declared unclean event of its own
/// (kafka-semantics §2.1: a node that loses data breaks the HW invariants, which is why
/// `canRecoverFromSingleNodeCommittedDataLoss` drops them). Its HW is the checkpoint clamped to
/// the recovered end (Kafka `UnifiedLog.updateHighWatermark`), a promise made over the log it had
/// before the crash; the lost writes may include a truncation, so the recovered log can hold
/// batches that truncation had removed (Kafka does not flush after `LocalLog.truncateTo`), below
/// that HW. Its next fetch truncates them (DivergingEpoch) below the recovered HW (mirror chaos
/// seed 6220: a zombie coordinator append at 4 in epoch 0, truncated, then 4..9 from the new
/// leader; power loss brought the old 4 back with HW 5). A restart that lost nothing keeps the
/// rule, and so does a lossy one once the replica has learned an HW again.
#[must_use]
pub fn truncation_below_hw_declared(
    declared_losses: u32,
    unclean_epochs: &[LeaderEpoch],
    hw_epoch: Option<LeaderEpoch>,
    current_epoch: Option<LeaderEpoch>,
    lossy_restart: bool,
) -> bool {
    if declared_losses > 0 || lossy_restart {
        return true;
    }
    let (Some(hw_epoch), Some(current)) = (hw_epoch, current_epoch) else {
        return false;
    };
    unclean_epochs
        .iter()
        .any(|u| hw_epoch < *u && *u <= current)
}

/// Whether `tp` is a partition of Kafka's transaction log.
fn is_txn_log(tp: &TopicPartition) -> bool {
    tp.topic.as_ref() == mirror_core::broker::coordinator_runtime::TRANSACTION_STATE_TOPIC
}

#[cfg(test)]
mod tests {
    use super::{
        NewLeaderFacts, leader_loss_cause, replica_violation, truncation_below_hw_declared,
    };
    use mirror_core::broker::partition::{Partition, Role};
    use mirror_core::broker::storage::PartitionFiles;
    use mirror_core::log::partition_log::{LogConfig, PartitionLog};
    use mirror_core::log::producer_state::AppendOrigin;
    use mirror_core::protocol::metadata::PartitionRegistration;
    use mirror_core::record::{BatchBuilder, SimpleRecord};
    use mirror_core::replication::isr::IsrState;
    use mirror_core::types::{BrokerId, LeaderEpoch, Offset, TopicId, TopicPartition};

    /// Broker 2 leads with ISR [1, 2] and HW 6 (follower 1 at 6); follower 3 was last seen
    /// at 4. Then the ISR becomes [1, 2, 3] as in seed 329: the controller committing an
    /// expansion the leader's equal-epoch metadata update had reset.
    fn leader_with_a_late_isr_member() -> Partition {
        let tp = TopicPartition::new("t", 0);
        let mut io = Vec::new();
        let files = PartitionFiles::create(&tp, TopicId(1), Offset(0), &mut io);
        let mut p = Partition::new(
            tp,
            TopicId(1),
            PartitionLog::new(LogConfig::default()),
            files,
        );
        let reg = PartitionRegistration {
            replicas: vec![BrokerId(1), BrokerId(2), BrokerId(3)],
            isr: vec![BrokerId(1), BrokerId(2)],
            leader: Some(BrokerId(2)),
            leader_epoch: LeaderEpoch(0),
            partition_epoch: 5,
            leader_recovering: false,
        };
        assert!(p.make_leader(BrokerId(2), &reg, 0, true, &mut Vec::new()));
        let recs: Vec<SimpleRecord> = (0..6)
            .map(|i| SimpleRecord::value(0, format!("v{i}")))
            .collect();
        p.log
            .append_as_leader(
                &BatchBuilder::new().build(&recs),
                LeaderEpoch(0),
                AppendOrigin::Client,
            )
            .expect("append");
        p.log.maybe_increment_high_watermark(Offset(6)).expect("hw");
        let Role::Leader(l) = &mut p.role else {
            panic!("leader")
        };
        for (b, leo) in [(1, 6), (3, 4)] {
            let st = l.followers.get_mut(&BrokerId(b)).expect("follower");
            st.log_end_offset = Offset(leo);
            st.log_start_offset = Offset(0);
        }
        l.isr = IsrState::committed([BrokerId(1), BrokerId(2), BrokerId(3)]);
        p
    }

    #[test]
    fn the_leader_hw_bound_is_judged_when_the_hw_moves_not_when_a_replica_joins() {
        let p = leader_with_a_late_isr_member();
        // Allowed: broker 3 entered the ISR after the HW moved over [1, 2] (Kafka lets it).
        assert_eq!(replica_violation(&p, false, false, 0, |_| None), None);
        // Forbidden: the HW moving past an ISR member's LEO.
        let v = replica_violation(&p, false, true, 0, |_| None).expect("violation");
        assert_eq!(v.0, "offset_bounds");
    }

    #[test]
    fn bit_rot_is_a_declared_loss_only_on_the_last_isr_member() {
        let rot = NewLeaderFacts {
            corrupt_cut_at: Some(Offset(8)),
            lost_unflushed: true,
            ..NewLeaderFacts::default()
        };
        // The only copy: declared, under its own cause (not as an unflushed tail).
        assert_eq!(
            leader_loss_cause(&rot, Offset(8)),
            Ok("corrupt_batch_on_last_isr_member")
        );
        // ... even in strict durability mode, which only refuses unflushed losses.
        let strict = NewLeaderFacts {
            strict_durability: true,
            ..rot
        };
        assert_eq!(
            leader_loss_cause(&strict, Offset(12)),
            Ok("corrupt_batch_on_last_isr_member")
        );
        // Another ISR member had the data: electing the cut replica is a violation.
        let others = NewLeaderFacts {
            others_in_isr: true,
            ..rot
        };
        assert!(leader_loss_cause(&others, Offset(8)).is_err());
        // Data missing below the cut is not the rot's doing: the unflushed rule applies.
        assert_eq!(
            leader_loss_cause(&rot, Offset(4)),
            Ok("unflushed_loss_on_last_isr_member")
        );
        assert!(leader_loss_cause(&NewLeaderFacts::default(), Offset(0)).is_err());
        let unclean = NewLeaderFacts {
            unclean: true,
            ..others
        };
        assert_eq!(
            leader_loss_cause(&unclean, Offset(8)),
            Ok("unclean_election")
        );
    }

    const E: fn(i32) -> LeaderEpoch = LeaderEpoch;

    fn declared(
        losses: u32,
        unclean: &[LeaderEpoch],
        hw_epoch: Option<LeaderEpoch>,
        current: Option<LeaderEpoch>,
    ) -> bool {
        truncation_below_hw_declared(losses, unclean, hw_epoch, current, false)
    }

    #[test]
    fn truncation_below_hw_needs_a_declared_loss_or_a_crossed_unclean_epoch() {
        // No unclean event at all: a violation.
        assert!(!declared(0, &[], Some(E(0)), Some(E(2))));
        // A loss the ghost declared: allowed (as before).
        assert!(declared(1, &[], Some(E(3)), Some(E(3))));
        // Seed 67: HW learned from a zombie leader in epoch 0, epoch 2 elected uncleanly, the
        // follower now follows epoch 2: allowed.
        assert!(declared(0, &[E(2)], Some(E(0)), Some(E(2))));
        // The HW was learned in or after the unclean epoch: the unclean leader's own promise,
        // so cutting below it is a violation.
        assert!(!declared(0, &[E(2)], Some(E(2)), Some(E(3))));
        assert!(!declared(0, &[E(2)], Some(E(3)), Some(E(3))));
        // The unclean epoch is not yet known to the replica: not its cause.
        assert!(!declared(0, &[E(4)], Some(E(0)), Some(E(3))));
        // Unknown HW epoch (replica restarted, never saw its HW move): no exemption.
        assert!(!declared(0, &[E(2)], None, Some(E(2))));
    }

    #[test]
    fn truncation_below_a_recovered_hw_is_declared_only_after_a_lossy_restart() {
        // Seed 6220: the restart lost unflushed writes (a truncation among them) and the
        // replica learned no HW since: its recovered HW is no promise, the truncation is allowed.
        assert!(truncation_below_hw_declared(0, &[], None, Some(E(1)), true));
        // The same truncation after a restart that lost nothing (or once an HW was learned
        // again, which clears the flag): a violation.
        assert!(!truncation_below_hw_declared(
            0,
            &[],
            None,
            Some(E(1)),
            false
        ));
    }

    #[test]
    fn a_restart_that_lost_nothing_keeps_the_epoch_its_hw_was_learned_in() {
        // Fresh single-cluster seed 971804: src-1 learned HW 14 as a zombie leader of epoch 0
        // (ISR [1]) after the controller had elected src-2 uncleanly in epoch 1; it restarted
        // with nothing lost and truncated to 13 following epoch 3. The restart keeps the HW's
        // epoch (0), so the unclean epoch crossed since allows the truncation.
        assert!(truncation_below_hw_declared(
            0,
            &[E(1)],
            Some(E(0)),
            Some(E(3)),
            false
        ));
        // The same restart and truncation with every election since the HW clean: a violation.
        assert!(!truncation_below_hw_declared(
            0,
            &[],
            Some(E(0)),
            Some(E(3)),
            false
        ));
    }
}
