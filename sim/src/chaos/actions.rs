//! Applies one step of a chaos plan to the running world: node and network faults, and the
//! operator's mirror actions (stop, pause, failback), tracking what the operator did so the
//! liveness phase knows what convergence means.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mirror_core::protocol::{ClusterIdx, ErrorCode, NodeId};
use mirror_core::record::{BatchBuilder, SimpleRecord};
use mirror_core::types::{BrokerId, Offset, TopicPartition};

use super::clients::{close_producers, start_failover_clients};
use super::plan::{ChaosFault, ChaosPlan, CrashMode};
use crate::disk::CrashPolicy;
use crate::kafka::KafkaWorld;
use crate::kafka::rot::RotTarget;
use crate::net::{Direction, NodeSet};

/// What the operator did to the mirror during the run.
#[derive(Clone, Debug, Default)]
pub(super) struct MirrorOps {
    /// A StopMirror was accepted.
    pub stopped: bool,
    /// A StopMirror failed on the client (a timeout, or a retry refused by the state an
    /// earlier attempt met): the outcome is unknown, since an attempt that timed out may
    /// still be committed when its broker comes back (a timeout means "maybe", as in Kafka's
    /// admin client), so STOPPED is one of the states the operator asked for.
    pub stop_maybe: bool,
    /// A PauseMirror needed more than one attempt (it took longer than one attempt's 5 s
    /// timeout): the attempt that timed out may still be committed later, after the resume
    /// (mirror chaos seed 6784), so PAUSED is one of the states the operator asked for.
    pub pause_maybe: bool,
    /// A failback (reverse mirror) was started.
    pub failed_back: bool,
    /// A failback is under way (at most one per run).
    pub failback_started: bool,
    /// The failover clients were started (once per run).
    pub failover_started: bool,
    /// The liveness phase began: no new workload may start.
    pub liveness: bool,
    /// The source's workload clients (closed by `MoveSourceProducers`).
    pub source_clients: Vec<NodeId>,
}

/// How long the failover clients wait for the destination to reach STOPPED.
const FAILOVER_WAIT_MS: u64 = 60_000;

/// A stop refused for a partition's state is sent again this many times, this far apart.
const STOP_REFUSED_RETRIES: u32 = 30;
const STOP_REFUSED_BACKOFF_MS: u64 = 2_000;

pub(super) async fn apply(
    w: &KafkaWorld,
    plan: &ChaosPlan,
    f: &ChaosFault,
    ops: &Arc<Mutex<MirrorOps>>,
) {
    let names: Vec<String> = plan.topics.iter().map(|t| t.name.clone()).collect();
    let (src, dst) = (ClusterIdx(0), ClusterIdx(1));
    match f {
        ChaosFault::StopMirror => {
            let w2 = w.clone();
            let ops = Arc::clone(ops);
            let plan = plan.clone();
            w.world.spawn(async move {
                let refs: Vec<&str> = names.iter().map(String::as_str).collect();
                let mut result = w2.stop_mirror_topics(dst, "m1", &refs).await;
                // The latest design's broker refuses a stop while a partition is not
                // MIRRORING or PAUSED (`admin_validation`): the operator tries again, as an
                // admin script would, for a bounded time.
                for _ in 0..STOP_REFUSED_RETRIES {
                    if result != ErrorCode::InvalidMirrorPartitionState {
                        break;
                    }
                    crate::world::clock::sleep(Duration::from_millis(STOP_REFUSED_BACKOFF_MS))
                        .await;
                    result = w2.stop_mirror_topics(dst, "m1", &refs).await;
                }
                if result.is_ok() {
                    if let Ok(mut o) = ops.lock() {
                        o.stopped = true;
                    }
                    fail_over_clients(&w2, &plan, &ops).await;
                } else if let Ok(mut o) = ops.lock() {
                    o.stop_maybe = true;
                }
            });
            return;
        }
        ChaosFault::MoveSourceProducers => {
            let ids = ops
                .lock()
                .map(|o| o.source_clients.clone())
                .unwrap_or_default();
            close_producers(w, &ids);
            return;
        }
        ChaosFault::ProbeWrite { topic, partition } => {
            let tp = TopicPartition::new(plan.topics[*topic].name.as_str(), *partition);
            let target = if ops.lock().map(|o| o.failed_back).unwrap_or(false) {
                src
            } else {
                dst
            };
            let w2 = w.clone();
            w.world.spawn(async move {
                let _ = w2.produce_batch(target, &tp, probe_batch(), -1).await;
            });
            return;
        }
        ChaosFault::PauseMirror { for_ms } => {
            let w2 = w.clone();
            let d = *for_ms;
            let ops = Arc::clone(ops);
            w.world.spawn(async move {
                let refs: Vec<&str> = names.iter().map(String::as_str).collect();
                let asked = madsim::time::Instant::now();
                let paused = w2.pause_mirror_topics(dst, "m1", &refs, true).await;
                if (!paused.is_ok() || asked.elapsed() >= Duration::from_millis(5_000))
                    && let Ok(mut o) = ops.lock()
                {
                    o.pause_maybe = true;
                }
                if paused.is_ok() {
                    crate::world::clock::sleep(Duration::from_millis(d)).await;
                    let _ = w2.pause_mirror_topics(dst, "m1", &refs, false).await;
                }
            });
            return;
        }
        ChaosFault::Failback => {
            let stopped = ops
                .lock()
                .map(|o| o.stopped && !o.failed_back)
                .unwrap_or(false);
            if !stopped {
                return;
            }
            let w2 = w.clone();
            let ops = Arc::clone(ops);
            let plan = plan.clone();
            w.world.spawn(async move {
                // An operator fails back once the failover finished: a reverse mirror while
                // the destination still mirrors from us is a loop, which KIP-1279 fails on
                // purpose (FAILED, non-retryable), not a failback.
                if !destination_stopped(&w2, &plan).await {
                    return;
                }
                match ops.lock() {
                    Ok(mut o) if !o.liveness && !o.failback_started => o.failback_started = true,
                    _ => return,
                }
                let refs: Vec<&str> = names.iter().map(String::as_str).collect();
                // The operator retries a start that failed (e.g. the new source's metadata is
                // not available yet after a restart), until the liveness phase.
                for _ in 0..FAILBACK_ATTEMPTS {
                    let _ = w2.create_mirror(src, "back", dst).await;
                    if w2
                        .start_mirror_topics(src, "back", dst, &refs)
                        .await
                        .is_ok()
                    {
                        if let Ok(mut o) = ops.lock() {
                            o.failed_back = true;
                        }
                        return;
                    }
                    if ops.lock().map_or(true, |o| o.liveness) {
                        return;
                    }
                    crate::world::clock::sleep(Duration::from_millis(1_000)).await;
                }
            });
            return;
        }
        _ => {}
    }
    let broker = |cluster: u16, b: i32| NodeId::broker(ClusterIdx(cluster), BrokerId(b));
    match f {
        ChaosFault::Crash {
            cluster,
            broker: b,
            mode,
            down_ms,
        } => {
            crash(w, broker(*cluster, *b), *mode, *down_ms);
        }
        ChaosFault::Restart { cluster, broker: b } => {
            let n = broker(*cluster, *b);
            if w.world.status(n).is_down() {
                w.world.restart(n);
            }
        }
        ChaosFault::Pause {
            cluster,
            broker: b,
            for_ms,
        } => {
            let n = broker(*cluster, *b);
            if w.world.pause(n) {
                let w2 = w.clone();
                let d = *for_ms;
                w.world.spawn(async move {
                    crate::world::clock::sleep(Duration::from_millis(d)).await;
                    w2.world.resume(n);
                });
            }
        }
        ChaosFault::Isolate {
            cluster,
            broker: b,
            for_ms,
        } => {
            let id = w.world.isolate(broker(*cluster, *b));
            heal_later(w, id, *for_ms);
        }
        ChaosFault::IsolateFromController {
            cluster,
            broker: b,
            for_ms,
        } => {
            let id = w.world.partition(
                NodeSet::node(broker(*cluster, *b)),
                NodeSet::node(NodeId::controller(ClusterIdx(*cluster))),
                Direction::Both,
            );
            heal_later(w, id, *for_ms);
        }
        ChaosFault::IsolateLeaderFromController {
            cluster,
            topic,
            partition,
            for_ms,
        } => {
            let tp = TopicPartition::new(plan.topics[*topic].name.as_str(), *partition);
            if let Some(leader) = w.leader(ClusterIdx(*cluster), &tp) {
                let id = w.world.partition(
                    NodeSet::node(broker(*cluster, leader.0)),
                    NodeSet::node(NodeId::controller(ClusterIdx(*cluster))),
                    Direction::Both,
                );
                heal_later(w, id, *for_ms);
            }
        }
        ChaosFault::PacketLoss { permille, for_ms } => {
            w.world.packet_loss(f64::from(*permille) / 1000.0);
            let w2 = w.clone();
            let d = *for_ms;
            w.world.spawn(async move {
                crate::world::clock::sleep(Duration::from_millis(d)).await;
                w2.world.packet_loss(0.0);
            });
        }
        ChaosFault::UncleanElection {
            cluster,
            topic,
            partition,
        } => {
            let tp = TopicPartition::new(plan.topics[*topic].name.as_str(), *partition);
            let w2 = w.clone();
            let c = ClusterIdx(*cluster);
            w.world.spawn(async move {
                let _ = w2.unclean_election(c, &tp).await;
            });
        }
        ChaosFault::CrashLeader {
            cluster,
            topic,
            partition,
            mode,
            down_ms,
        } => {
            let tp = TopicPartition::new(plan.topics[*topic].name.as_str(), *partition);
            if let Some(leader) = w.leader(ClusterIdx(*cluster), &tp) {
                crash(w, broker(*cluster, leader.0), *mode, *down_ms);
            }
        }
        ChaosFault::StopMirror
        | ChaosFault::PauseMirror { .. }
        | ChaosFault::Failback
        | ChaosFault::ProbeWrite { .. }
        | ChaosFault::MoveSourceProducers => {}
        ChaosFault::RotBatch {
            cluster,
            topic,
            partition,
            replica,
            pick,
            down_ms,
        } => {
            let tp = TopicPartition::new(plan.topics[*topic].name.as_str(), *partition);
            rot(w, ClusterIdx(*cluster), &tp, (*replica, *pick), *down_ms);
        }
        ChaosFault::DeleteRecords {
            cluster,
            topic,
            partition,
        } => {
            let tp = TopicPartition::new(plan.topics[*topic].name.as_str(), *partition);
            let c = ClusterIdx(*cluster);
            let hw = w
                .leader(c, &tp)
                .and_then(|l| w.replica_offsets(c, l, &tp))
                .map_or(Offset(0), |(_, hw)| hw);
            let w2 = w.clone();
            w.world.spawn(async move {
                let _ = w2.delete_records(c, &tp, Offset(hw.0 / 2)).await;
            });
        }
    }
}

fn heal_later(w: &KafkaWorld, id: crate::net::FaultId, for_ms: u64) {
    let w2 = w.clone();
    w.world.spawn(async move {
        crate::world::clock::sleep(Duration::from_millis(for_ms)).await;
        w2.world.heal(id);
    });
}

/// Crashes `n` and restarts it after `down_ms` (if still down).
fn crash(w: &KafkaWorld, n: NodeId, mode: CrashMode, down_ms: u64) {
    let policy = match mode {
        CrashMode::Process => CrashPolicy::KeepAll,
        CrashMode::PowerLoss => CrashPolicy::LoseAllUnflushed,
        CrashMode::Torn => CrashPolicy::KeepRandomPrefix,
    };
    if w.world.crash(n, policy) {
        restart_later(w, n, down_ms);
    }
}

/// Restarts `n` after `down_ms` if it is still down then.
fn restart_later(w: &KafkaWorld, n: NodeId, down_ms: u64) {
    let w2 = w.clone();
    w.world.spawn(async move {
        crate::world::clock::sleep(Duration::from_millis(down_ms)).await;
        if w2.world.status(n).is_down() {
            w2.world.restart(n);
        }
    });
}

/// Rots a batch on the disk of one replica of `tp` (the `replica`-th of its assignment) and
/// has its recovery meet it: the broker crashes first (a process crash: the page cache is
/// written back, so its whole log is on the platter), a bit of a batch in the segments its
/// next recovery scans flips, and it restarts after `down_ms`. A replica that is already down
/// rots the same way and keeps its own restart. Nothing to rot leaves a plain crash (a trace
/// note says why).
fn rot(
    w: &KafkaWorld,
    c: ClusterIdx,
    tp: &TopicPartition,
    (replica, pick): (u16, u32),
    down_ms: u64,
) {
    let replicas = w.replicas(c, tp);
    if replicas.is_empty() {
        return;
    }
    let b = replicas[usize::from(replica) % replicas.len()];
    let n = NodeId::broker(c, b);
    let crashed = w.world.crash(n, CrashPolicy::KeepAll);
    if let Err(why) = w.rot_batch(c, b, tp, RotTarget::Pick(pick)) {
        w.world.note(
            &w.world.node_name(n),
            &tp.to_string(),
            &format!("no rot: {why}"),
        );
    }
    if crashed {
        restart_later(w, n, down_ms);
    }
}

/// How many times the failback's create + start is tried.
const FAILBACK_ATTEMPTS: usize = 5;

/// After a failover: waits until every partition of the destination is STOPPED, then starts
/// the failover clients there, once, and only during the safety phase.
async fn fail_over_clients(w: &KafkaWorld, plan: &ChaosPlan, ops: &Mutex<MirrorOps>) {
    if plan.failover_clients.is_empty() {
        return;
    }
    let stopped = destination_stopped(w, plan).await;
    let Ok(mut o) = ops.lock() else {
        return;
    };
    if stopped && !o.failover_started && !o.liveness {
        o.failover_started = true;
        drop(o);
        start_failover_clients(w, plan);
    }
}

/// Waits (up to [`FAILOVER_WAIT_MS`]) until every partition of the destination is STOPPED.
async fn destination_stopped(w: &KafkaWorld, plan: &ChaosPlan) -> bool {
    use mirror_core::mirror::MirrorPartitionState as S;
    let dst = ClusterIdx(1);
    w.wait_until(FAILOVER_WAIT_MS, |w| {
        plan.topics.iter().all(|t| {
            (0..t.partitions).all(|p| {
                w.mirror_state(dst, &TopicPartition::new(t.name.as_str(), p)) == Some(S::Stopped)
            })
        })
    })
    .await
}

/// The probe's batch: one plain record (no producer id, so no producer state to check).
fn probe_batch() -> mirror_core::record::RecordBatch {
    BatchBuilder::new().build(&[SimpleRecord::value(0, "probe".to_string())])
}
