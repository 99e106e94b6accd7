//! Read-only views of a running world for scenario steps: partition logs as batch rows,
//! bounds, replicas, convergence. Nothing here changes state.

use mirror_core::protocol::{ClusterIdx, NodeId};
use mirror_core::record::{ControlRecord, RecordBatch};
use mirror_core::types::{BrokerId, TopicPartition};

use super::format::BatchKind;
use crate::kafka::KafkaWorld;
use crate::world::node::lock;

/// `(base offset, last offset, partition leader epoch, kind)` of a batch.
pub type Row = (i64, i64, i32, BatchKind);

/// The kind of a batch.
#[must_use]
pub fn kind_of(b: &RecordBatch) -> BatchKind {
    match b.control_record() {
        Some(ControlRecord::MirrorPidReset) => BatchKind::PidReset,
        Some(ControlRecord::EndTxn { commit: true, .. }) => BatchKind::Commit,
        Some(ControlRecord::EndTxn { commit: false, .. }) => BatchKind::Abort,
        Some(ControlRecord::Other(_)) => BatchKind::OtherControl,
        None if b.is_transactional() => BatchKind::Txn,
        None => BatchKind::Data,
    }
}

/// The rows of a log.
#[must_use]
pub fn rows(log: &[RecordBatch]) -> Vec<Row> {
    log.iter()
        .map(|b| {
            (
                b.base_offset().0,
                b.last_offset().0,
                b.partition_leader_epoch().0,
                kind_of(b),
            )
        })
        .collect()
}

/// The rows of a log in the `expect_log` syntax (`"0-3@0 data"`), for failure messages.
#[must_use]
pub fn shown(log: &[RecordBatch]) -> Vec<String> {
    rows(log)
        .iter()
        .map(|g| super::format::render_batch(g.0, g.1, g.2, g.3))
        .collect()
}

/// A replica's batches.
#[must_use]
pub fn replica_log(
    w: &KafkaWorld,
    c: ClusterIdx,
    b: BrokerId,
    tp: &TopicPartition,
) -> Option<Vec<RecordBatch>> {
    w.with_broker(c, b, |br| {
        br.partition(tp).map(|p| p.log.batches().cloned().collect())
    })
    .flatten()
}

/// The leader's batches.
#[must_use]
pub fn leader_log(w: &KafkaWorld, c: ClusterIdx, tp: &TopicPartition) -> Option<Vec<RecordBatch>> {
    replica_log(w, c, w.leader(c, tp)?, tp)
}

/// `(log start, LSO, HW, LEO)` of a replica.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// Log start offset.
    pub log_start: i64,
    /// Last stable offset.
    pub lso: i64,
    /// High watermark.
    pub hw: i64,
    /// Log end offset.
    pub leo: i64,
}

/// A replica's bounds.
#[must_use]
pub fn bounds(w: &KafkaWorld, c: ClusterIdx, b: BrokerId, tp: &TopicPartition) -> Option<Bounds> {
    w.with_broker(c, b, |br| {
        br.partition(tp).map(|p| Bounds {
            log_start: p.log.log_start_offset().0,
            lso: p.log.last_stable_offset().0,
            hw: p.log.high_watermark().0,
            leo: p.log.log_end_offset().0,
        })
    })
    .flatten()
}

/// `(epoch, start offset)` entries of a replica's epoch cache.
#[must_use]
pub fn epoch_entries(
    w: &KafkaWorld,
    c: ClusterIdx,
    b: BrokerId,
    tp: &TopicPartition,
) -> Option<Vec<[i64; 2]>> {
    w.with_broker(c, b, |br| {
        br.partition(tp).map(|p| {
            p.log
                .epoch_cache()
                .epoch_entries()
                .iter()
                .map(|e| [i64::from(e.epoch.0), e.start_offset.0])
                .collect()
        })
    })
    .flatten()
}

/// The leader's current leader epoch.
#[must_use]
pub fn leader_epoch(w: &KafkaWorld, c: ClusterIdx, tp: &TopicPartition) -> Option<i32> {
    let l = w.leader(c, tp)?;
    w.with_broker(c, l, |br| br.partition(tp).map(|p| p.leader_epoch.0))
        .flatten()
}

/// The leader epoch `b`'s replica of `tp` knows.
#[must_use]
pub fn replica_leader_epoch(
    w: &KafkaWorld,
    c: ClusterIdx,
    b: BrokerId,
    tp: &TopicPartition,
) -> Option<i32> {
    w.with_broker(c, b, |br| br.partition(tp).map(|p| p.leader_epoch.0))
        .flatten()
}

/// `b`'s producer-state entries for `tp`, by producer id, as `expect_log`'s `producers`
/// writes them: `"<pid>@<epoch> seq=<last sequence>"`, ` txn=<first offset>` while a
/// transaction is open.
#[must_use]
pub fn producer_entries(
    w: &KafkaWorld,
    c: ClusterIdx,
    b: BrokerId,
    tp: &TopicPartition,
) -> Option<Vec<String>> {
    w.with_broker(c, b, |br| {
        br.partition(tp).map(|p| {
            p.log
                .producer_state()
                .active_producers()
                .values()
                .map(|e| {
                    let txn = e
                        .current_txn_first_offset
                        .map_or_else(String::new, |o| format!(" txn={}", o.0));
                    format!(
                        "{}@{} seq={}{txn}",
                        e.producer_id.0,
                        e.producer_epoch.0,
                        e.last_seq().0
                    )
                })
                .collect()
        })
    })
    .flatten()
}

/// Replicas and ISR as the leader sees them.
#[must_use]
pub fn replicas_and_isr(
    w: &KafkaWorld,
    c: ClusterIdx,
    tp: &TopicPartition,
) -> Option<(Vec<BrokerId>, Vec<BrokerId>)> {
    let l = w.leader(c, tp)?;
    w.with_broker(c, l, |br| {
        br.partition(tp)
            .map(|p| (p.replicas.clone(), p.isr().into_iter().collect()))
    })
    .flatten()
}

/// Whether a broker is up.
#[must_use]
pub fn is_up(w: &KafkaWorld, c: ClusterIdx, b: BrokerId) -> bool {
    !w.world.status(NodeId::broker(c, b)).is_down()
}

/// The topic's partition count per the controller (`None`: unknown topic).
#[must_use]
pub fn partition_count(w: &KafkaWorld, c: ClusterIdx, topic: &str) -> Option<i32> {
    let arc = w.world.node_state(NodeId::controller(c));
    let g = lock(&arc);
    let image = g.as_controller()?.image();
    let id = image.topic_id(topic)?;
    image
        .topics
        .get(&id)
        .map(|t| i32::try_from(t.partitions.len()).unwrap_or(i32::MAX))
}

/// Every live replica of the partition holds `log` byte for byte, with LEO = HW = its end;
/// a follower's HW may trail where Kafka's own fetch session leaves it stale
/// ([`KafkaWorld::session_keeps_follower_hw_stale`]).
#[must_use]
pub fn replicas_hold(
    w: &KafkaWorld,
    c: ClusterIdx,
    tp: &TopicPartition,
    log: &[RecordBatch],
) -> bool {
    let Some((replicas, _)) = replicas_and_isr(w, c, tp) else {
        return false;
    };
    let leader = w.leader(c, tp);
    let end = log.last().map(|b| b.next_offset().0);
    replicas.into_iter().filter(|b| is_up(w, c, *b)).all(|b| {
        let stale_hw =
            leader.is_some_and(|l| l != b && w.session_keeps_follower_hw_stale(c, l, b, tp));
        replica_log(w, c, b, tp).is_some_and(|l| l == log)
            && bounds(w, c, b, tp).is_some_and(|x| {
                end.is_none_or(|e| x.leo == e && (x.hw == e || stale_hw))
                    && (x.hw == x.leo || stale_hw)
            })
    })
}

/// `None` when, for every partition of `topic`, both clusters' leaders hold the same batches
/// and every live replica on both sides caught up; else what differs.
#[must_use]
pub fn divergence(w: &KafkaWorld, a: ClusterIdx, b: ClusterIdx, topic: &str) -> Option<String> {
    let Some(n) = partition_count(w, a, topic) else {
        return Some(format!("`{topic}` is unknown on cluster {}", a.0));
    };
    for p in 0..n {
        let tp = TopicPartition::new(topic, p);
        let (Some(la), Some(lb)) = (leader_log(w, a, &tp), leader_log(w, b, &tp)) else {
            return Some(format!("{tp} has no leader on one side"));
        };
        if la != lb {
            return Some(format!(
                "{tp}: {} batches (LEO {}) vs {} batches (LEO {})",
                la.len(),
                la.last().map_or(0, |x| x.next_offset().0),
                lb.len(),
                lb.last().map_or(0, |x| x.next_offset().0)
            ));
        }
        if !replicas_hold(w, a, &tp, &la) || !replicas_hold(w, b, &tp, &lb) {
            return Some(format!("{tp}: a replica has not caught up"));
        }
    }
    None
}

/// A group's committed offset as its coordinator holds it.
#[must_use]
pub fn committed(w: &KafkaWorld, c: ClusterIdx, group: &str, tp: &TopicPartition) -> Option<i64> {
    committed_entry(w, c, group, tp, |x| Some(x.offset.0))
}

/// The leader epoch committed with a group's offset (`None`: no offset, or none with it).
#[must_use]
pub fn committed_leader_epoch(
    w: &KafkaWorld,
    c: ClusterIdx,
    group: &str,
    tp: &TopicPartition,
) -> Option<i32> {
    committed_entry(w, c, group, tp, |x| x.leader_epoch.map(|e| e.0))
}

/// `pick` applied to a group's committed offset entry, read at the leader of the group's
/// `__consumer_offsets` partition.
fn committed_entry<T>(
    w: &KafkaWorld,
    c: ClusterIdx,
    group: &str,
    tp: &TopicPartition,
    pick: impl FnOnce(&mirror_core::coordinator::CommittedOffset) -> Option<T>,
) -> Option<T> {
    use mirror_core::broker::coordinator_runtime::{
        CONSUMER_OFFSETS_TOPIC, COORDINATOR_TOPIC_PARTITIONS,
    };
    let p = mirror_core::coordinator::coordinator_partition(group, COORDINATOR_TOPIC_PARTITIONS);
    let leader = w.leader(c, &TopicPartition::new(CONSUMER_OFFSETS_TOPIC, p))?;
    w.with_broker(c, leader, |b| {
        b.coordinators()
            .group_coordinator(p)
            .and_then(|g| g.committed(group, tp))
            .and_then(pick)
    })
    .flatten()
}

/// A topic config at the cluster's controller.
#[must_use]
pub fn topic_config(w: &KafkaWorld, c: ClusterIdx, topic: &str, key: &str) -> Option<String> {
    let arc = w.world.node_state(NodeId::controller(c));
    let g = lock(&arc);
    g.as_controller()?
        .image()
        .topic_config(topic, key)
        .map(str::to_string)
}

/// True when the cluster's controller knows topic `topic`.
#[must_use]
pub fn topic_exists(w: &KafkaWorld, c: ClusterIdx, topic: &str) -> bool {
    let arc = w.world.node_state(NodeId::controller(c));
    let g = lock(&arc);
    g.as_controller()
        .is_some_and(|ctl| ctl.image().topic_id(topic).is_some())
}

/// A mirror config at the controller (`None`: unset, or no such mirror).
#[must_use]
pub fn mirror_config(w: &KafkaWorld, c: ClusterIdx, mirror: &str, key: &str) -> Option<String> {
    let arc = w.world.node_state(NodeId::controller(c));
    let g = lock(&arc);
    g.as_controller()?
        .image()
        .configs_of(mirror_core::protocol::metadata::ConfigResourceRef::Mirror(
            mirror,
        ))?
        .get(key)
        .cloned()
}

/// An ACL in the scenario syntax (`TOPIC:LITERAL:orders User:alice READ ALLOW`).
#[must_use]
pub fn acl_text(b: &mirror_core::protocol::acl::AclBinding) -> String {
    use mirror_core::protocol::acl::{AclPermissionType, PatternType};
    format!(
        "{}:{}:{} {} {} {}",
        b.pattern.resource_type.name(),
        match b.pattern.pattern_type {
            PatternType::Literal => "LITERAL",
            PatternType::Prefixed => "PREFIXED",
        },
        b.pattern.name,
        b.entry.principal,
        b.entry.operation.name(),
        match b.entry.permission_type {
            AclPermissionType::Allow => "ALLOW",
            AclPermissionType::Deny => "DENY",
        }
    )
}

/// The cluster's TOPIC ACLs at the controller, in the scenario syntax, sorted.
#[must_use]
pub fn topic_acls(w: &KafkaWorld, c: ClusterIdx) -> Vec<String> {
    let mut v: Vec<String> = w
        .controller_acls(c)
        .iter()
        .filter(|b| b.pattern.resource_type == mirror_core::protocol::acl::AclResourceType::Topic)
        .map(acl_text)
        .collect();
    v.sort();
    v
}
