//! Timeline recording: an observer that keeps, per (cluster, partition) lane, what a person
//! reading a failed run wants to see over time — leaders and epochs, the leader's LEO and HW,
//! mirror states and notable log events — plus the run's faults and operator actions.
//!
//! The recorder only observes (style §3): it runs after the checker on every event, reads
//! node state under the same locks, and never changes anything. It is opt-in
//! ([`crate::kafka::KafkaWorld::attach_recorder`]), so chaos sweeps without a report pay
//! nothing. Everything is kept in `BTreeMap`s and `Vec`s in event order, so the same run
//! gives the same timeline.

use std::collections::BTreeMap;

use mirror_core::broker::Event;
use mirror_core::protocol::{ClusterIdx, NodeId, NodeRole, Response};
use mirror_core::types::{BrokerId, TopicPartition};

use super::faults::{FaultMarker, parse_faults};
use crate::check::Violation;
use crate::check::log_invariants::NodeMap;
use crate::world::node::lock;
use crate::world::{EventCtx, RunReport};

/// One lane of the timeline: a partition as one cluster sees it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct LaneKey {
    /// Cluster index (0 = the first cluster, `src` in mirror runs).
    pub cluster: u16,
    /// Topic name.
    pub topic: String,
    /// Partition index.
    pub partition: i32,
}

impl LaneKey {
    /// The lane of `tp` on `cluster`.
    #[must_use]
    pub fn new(cluster: ClusterIdx, tp: &TopicPartition) -> Self {
        Self {
            cluster: cluster.0,
            topic: tp.topic.to_string(),
            partition: tp.partition,
        }
    }

    /// `orders-0`, as Kafka (and violations) name the partition.
    #[must_use]
    pub fn partition_name(&self) -> String {
        format!("{}-{}", self.topic, self.partition)
    }
}

/// A leader election as the cluster's controller decided it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LeaderSpan {
    /// When it started (µs of simulated time).
    pub t_micros: u64,
    /// The leader (`None`: the partition is offline).
    pub leader: Option<i32>,
    /// The leader epoch.
    pub epoch: i32,
    /// An unclean election (data may have been lost).
    pub unclean: bool,
}

/// The leader's log end offset and high watermark, recorded when either changes.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct OffsetSample {
    /// When (µs).
    pub t_micros: u64,
    /// Log end offset.
    pub leo: i64,
    /// High watermark.
    pub hw: i64,
}

/// A KIP-1279 mirror partition state change.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct StateChange {
    /// When (µs).
    pub t_micros: u64,
    /// Trace event number.
    pub seq: u64,
    /// The new state (`MIRRORING`, `STOPPING`, ...).
    pub state: String,
    /// The state epoch it was written with.
    pub state_epoch: i32,
}

/// A notable log event on one lane (truncation, mirror divergence, log start move).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LaneMark {
    /// When (µs).
    pub t_micros: u64,
    /// Trace event number.
    pub seq: u64,
    /// The node that reported it (trace name).
    pub node: String,
    /// What happened.
    pub label: String,
}

/// Consecutive batches of one kind and epoch in a log at the end of the run.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct BatchRun {
    /// First offset of the first batch.
    pub base: i64,
    /// Last offset of the last batch.
    pub last: i64,
    /// Their partition leader epoch.
    pub epoch: i32,
    /// Their kind as `expect_log` names it: data, txn, commit, abort, pid_reset, control.
    pub kind: String,
    /// How many batches.
    pub batches: usize,
}

/// A lane's log at the end of the run, as one replica holds it.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct FinalLog {
    /// The replica (the partition's leader then, else the first live replica).
    pub broker: i32,
    /// Log start offset.
    pub log_start: i64,
    /// High watermark.
    pub hw: i64,
    /// Log end offset.
    pub leo: i64,
    /// The batches, runs of one kind and epoch merged.
    pub runs: Vec<BatchRun>,
}

/// Everything recorded for one lane.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Lane {
    /// Leader elections, in order.
    pub leaders: Vec<LeaderSpan>,
    /// Leader LEO/HW, one sample per change.
    pub offsets: Vec<OffsetSample>,
    /// Mirror state changes, in order.
    pub states: Vec<StateChange>,
    /// Truncations, divergences and log start moves.
    pub marks: Vec<LaneMark>,
    /// The log at the end of the run, with each batch's kind (`None`: no live replica).
    pub final_log: Option<FinalLog>,
}

/// A finished timeline: lanes, faults, the failing event and the run's length.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Timeline {
    /// Cluster names by index.
    pub clusters: Vec<String>,
    /// Lanes by (cluster, topic, partition).
    pub lanes: BTreeMap<LaneKey, Lane>,
    /// Faults (from the compact trace) and operator actions (admin results), in order.
    pub faults: Vec<FaultMarker>,
    /// The first violation, if the run failed on one.
    pub violation: Option<Violation>,
    /// Simulated length of the run (µs).
    pub end_micros: u64,
}

impl Timeline {
    /// The name of cluster `idx` (`c<idx>` if unknown).
    #[must_use]
    pub fn cluster_name(&self, idx: u16) -> String {
        self.clusters
            .get(usize::from(idx))
            .cloned()
            .unwrap_or_else(|| format!("c{idx}"))
    }

    /// The lane a violation points at: its node's cluster and its partition.
    #[must_use]
    pub fn violation_lane(&self) -> Option<&LaneKey> {
        let v = self.violation.as_ref()?;
        let part = v.partition.as_deref()?;
        let cluster = self.cluster_of_node(&v.node);
        self.lanes
            .keys()
            .find(|k| k.partition_name() == part && cluster.is_none_or(|c| c == k.cluster))
    }

    /// The cluster of a trace node name (`dst-2` → the index of `dst`).
    #[must_use]
    pub fn cluster_of_node(&self, node: &str) -> Option<u16> {
        let prefix = node.split('-').next()?;
        let i = self.clusters.iter().position(|c| c == prefix)?;
        u16::try_from(i).ok()
    }
}

/// Per-lane state the recorder needs between events (not part of the timeline).
#[derive(Clone, Debug, Default)]
struct LaneCursor {
    leader: Option<BrokerId>,
}

/// The observer that builds a [`Timeline`]. Feed it every event with [`Recorder::on_event`]
/// (the world does, once attached) and call [`Recorder::finish`] at the end.
#[derive(Debug, Default)]
pub struct Recorder {
    clusters: Vec<String>,
    lanes: BTreeMap<LaneKey, Lane>,
    cursors: BTreeMap<LaneKey, LaneCursor>,
    operator: Vec<FaultMarker>,
}

impl Recorder {
    /// An empty recorder for a world whose clusters are named `clusters` (index order).
    #[must_use]
    pub fn new(clusters: Vec<String>) -> Self {
        Self {
            clusters,
            ..Self::default()
        }
    }

    /// Records one event. `nodes` is the world's node map, read to sample the leader's LEO
    /// and HW after events that may move them.
    pub fn on_event(
        &mut self,
        ctx: &EventCtx,
        event: &Event,
        nodes: &NodeMap,
        name: &dyn Fn(NodeId) -> String,
    ) {
        let t = ctx.t.0;
        let cluster = ctx.node.cluster;
        match event {
            Event::LeaderElected {
                tp,
                leader,
                leader_epoch,
                unclean,
                ..
            } => self.leader(t, cluster, tp, *leader, leader_epoch.0, *unclean),
            Event::BecameLeader {
                tp, leader_epoch, ..
            } => {
                // Topic creation assigns leaders without an election event: the broker's own
                // report is the first word on them.
                if let NodeRole::Broker(id) = ctx.node.role {
                    self.leader(t, cluster, tp, Some(id), leader_epoch.0, false);
                }
            }
            Event::MirrorStateChanged {
                tp,
                to,
                state_epoch,
                ..
            } => {
                let lane = self.lanes.entry(LaneKey::new(cluster, tp)).or_default();
                let same = lane
                    .states
                    .last()
                    .is_some_and(|s| s.state == to.name() && s.state_epoch == *state_epoch);
                if !same {
                    lane.states.push(StateChange {
                        t_micros: t,
                        seq: ctx.seq,
                        state: to.name().to_string(),
                        state_epoch: *state_epoch,
                    });
                }
            }
            Event::AdminResult {
                operation, error, ..
            } => self.operator.push(FaultMarker::operator(
                t,
                ctx.seq,
                cluster.0,
                &name(ctx.node),
                &format!("admin {operation}: {error}"),
            )),
            _ => {}
        }
        if let Some((tp, label)) = mark_of(event) {
            self.lanes
                .entry(LaneKey::new(cluster, tp))
                .or_default()
                .marks
                .push(LaneMark {
                    t_micros: t,
                    seq: ctx.seq,
                    node: name(ctx.node),
                    label,
                });
        }
        if let Some(tp) = offsets_may_move(event) {
            self.sample(ctx, tp, nodes);
        }
    }

    /// An admin request the harness sent to `cluster` at `t_micros` (an operator action:
    /// create, stop, pause, failback, elect) and what came back.
    pub fn operator(
        &mut self,
        t_micros: u64,
        seq: u64,
        cluster: ClusterIdx,
        request: &str,
        response: Option<&Response>,
    ) {
        // Lookups (metadata, describe, list) are the harness finding its way, not actions.
        if ["Metadata", "Describe", "List"]
            .iter()
            .any(|p| request.starts_with(p))
        {
            return;
        }
        let outcome = match response {
            None => "no answer".to_string(),
            Some(Response::MirrorAdmin { error, .. } | Response::Error { error }) => {
                error.to_string()
            }
            Some(r) => format!("{r:?}"),
        };
        let text = format!("{} → {}", clip(request), clip(&outcome));
        let subject = self
            .clusters
            .get(usize::from(cluster.0))
            .cloned()
            .unwrap_or_default();
        self.operator.push(FaultMarker::operator(
            t_micros, seq, cluster.0, &subject, &text,
        ));
    }

    /// A new leader (or none) for `tp` from the controller's election or a broker becoming
    /// leader; a report of the span already recorded, or of an older epoch, changes nothing.
    fn leader(
        &mut self,
        t: u64,
        cluster: ClusterIdx,
        tp: &TopicPartition,
        leader: Option<BrokerId>,
        epoch: i32,
        unclean: bool,
    ) {
        let key = LaneKey::new(cluster, tp);
        let lane = self.lanes.entry(key.clone()).or_default();
        if let Some(last) = lane.leaders.last_mut() {
            if epoch < last.epoch {
                return;
            }
            if epoch == last.epoch && last.leader == leader.map(|b| b.0) {
                last.unclean |= unclean;
                return;
            }
        }
        lane.leaders.push(LeaderSpan {
            t_micros: t,
            leader: leader.map(|b| b.0),
            epoch,
            unclean,
        });
        self.cursors.entry(key).or_default().leader = leader;
    }

    /// Records the leader's LEO/HW for `tp` if `ctx.node` is its current leader and either
    /// moved since the last sample.
    fn sample(&mut self, ctx: &EventCtx, tp: &TopicPartition, nodes: &NodeMap) {
        let NodeRole::Broker(id) = ctx.node.role else {
            return;
        };
        let key = LaneKey::new(ctx.node.cluster, tp);
        if self.cursors.get(&key).and_then(|c| c.leader) != Some(id) {
            return;
        }
        let Some(state) = nodes.get(&ctx.node) else {
            return;
        };
        let offsets = {
            let g = lock(state);
            g.as_broker()
                .and_then(|b| b.partition(tp))
                .map(|p| (p.log.log_end_offset().0, p.log.high_watermark().0))
        };
        let Some((leo, hw)) = offsets else { return };
        let lane = self.lanes.entry(key).or_default();
        if lane
            .offsets
            .last()
            .is_some_and(|s| s.leo == leo && s.hw == hw)
        {
            return;
        }
        lane.offsets.push(OffsetSample {
            t_micros: ctx.t.0,
            leo,
            hw,
        });
    }

    /// Records every lane's log as it is at the end of the run (the partition's leader's,
    /// else the first live replica's), batches of one kind and epoch merged into runs.
    /// Called while the world still exists ([`super::Tap::finish`]).
    pub fn record_final_logs(&mut self, w: &crate::kafka::KafkaWorld) {
        for (key, lane) in &mut self.lanes {
            let c = ClusterIdx(key.cluster);
            let tp = TopicPartition::new(key.topic.as_str(), key.partition);
            let up = |b: BrokerId| !w.world.status(NodeId::broker(c, b)).is_down();
            let holder = w.leader(c, &tp).filter(|b| up(*b)).or_else(|| {
                w.broker_ids(c).into_iter().find(|b| {
                    up(*b) && w.with_broker(c, *b, |br| br.partition(&tp).is_some()) == Some(true)
                })
            });
            lane.final_log = holder.and_then(|b| final_log(w, c, b, &tp));
        }
    }

    /// The timeline of the finished run: what was recorded, the faults of its compact trace,
    /// and the first violation (if any).
    #[must_use]
    pub fn finish(&self, run: &RunReport, violation: Option<&Violation>) -> Timeline {
        let mut faults = parse_faults(&run.lines, &self.clusters);
        faults.extend(self.operator.iter().cloned());
        faults.sort_by_key(|f| (f.t_micros, f.seq));
        let last_line = faults.last().map_or(0, |f| f.t_micros);
        // sim_seconds is the clock at the end of the run; rounding to µs is deterministic.
        let end = (run.sim_seconds * 1e6).round();
        let end_micros = if end.is_finite() && end > 0.0 {
            end as u64
        } else {
            0
        };
        Timeline {
            clusters: self.clusters.clone(),
            lanes: self.lanes.clone(),
            faults,
            violation: violation.cloned(),
            end_micros: end_micros.max(last_line),
        }
    }
}

/// Replica `b`'s log of `tp`, batches of one kind and epoch merged.
fn final_log(
    w: &crate::kafka::KafkaWorld,
    c: ClusterIdx,
    b: BrokerId,
    tp: &TopicPartition,
) -> Option<FinalLog> {
    use crate::scenario::inspect;
    let log = inspect::replica_log(w, c, b, tp)?;
    let x = inspect::bounds(w, c, b, tp)?;
    let mut runs: Vec<BatchRun> = Vec::new();
    for (base, last, epoch, kind) in inspect::rows(&log) {
        let kind = kind.name();
        match runs.last_mut() {
            Some(r) if r.kind == kind && r.epoch == epoch && r.last + 1 == base => {
                r.last = last;
                r.batches += 1;
            }
            _ => runs.push(BatchRun {
                base,
                last,
                epoch,
                kind: kind.to_string(),
                batches: 1,
            }),
        }
    }
    Some(FinalLog {
        broker: b.0,
        log_start: x.log_start,
        hw: x.hw,
        leo: x.leo,
        runs,
    })
}

/// At most 160 characters of a request or response dump (a marker is a tooltip, not a log).
fn clip(s: &str) -> String {
    const MAX: usize = 160;
    if s.chars().count() <= MAX {
        return s.to_string();
    }
    let mut out: String = s.chars().take(MAX).collect();
    out.push('…');
    out
}

/// The partition whose leader LEO/HW an event may have moved.
fn offsets_may_move(event: &Event) -> Option<&TopicPartition> {
    match event {
        Event::Appended { tp, .. }
        | Event::MirrorAppended { tp, .. }
        | Event::HighWatermarkChanged { tp, .. }
        | Event::Truncated { tp, .. }
        | Event::TruncatedFully { tp, .. }
        | Event::BecameLeader { tp, .. }
        | Event::LogRecovered { tp, .. }
        | Event::LogStartChanged { tp, .. } => Some(tp),
        _ => None,
    }
}

/// A lane mark for events worth a glyph on the timeline.
fn mark_of(event: &Event) -> Option<(&TopicPartition, String)> {
    match event {
        Event::Truncated { tp, from, to, .. } => Some((tp, format!("truncate {from}→{to}"))),
        Event::TruncatedFully {
            tp, from, start, ..
        } => Some((tp, format!("truncate fully {from}→start {start}"))),
        Event::MirrorDiverged {
            tp,
            diverging_epoch,
            truncate_to,
            ..
        } => Some((
            tp,
            format!("mirror diverged epoch={diverging_epoch} truncate→{truncate_to}"),
        )),
        Event::FetchPartitionFailed {
            tp, log_end_offset, ..
        } => Some((tp, format!("fetch failed at {log_end_offset}"))),
        Event::MirrorLogStartReset { tp, start } => {
            Some((tp, format!("mirror restart at source log start {start}")))
        }
        Event::MirrorLastMirroredEpoch {
            tp,
            last_mirrored_epoch,
            log_end_offset,
        } => Some((
            tp,
            format!("record lme={last_mirrored_epoch} leo={log_end_offset}"),
        )),
        Event::LogStartChanged {
            tp,
            log_start_offset,
        } => Some((tp, format!("log start={log_start_offset}"))),
        _ => None,
    }
}
