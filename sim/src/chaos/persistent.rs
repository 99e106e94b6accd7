//! The liveness phase's persistent partial fault ([`PersistentFault`]): which broker of each
//! cluster stays out, and keeping it out.

use std::collections::BTreeMap;

use mirror_core::protocol::{ClusterIdx, NodeId};
use mirror_core::types::BrokerId;

use super::plan::{ChaosPlan, PersistentFault, PersistentKind};
use crate::kafka::KafkaWorld;

/// How long after the heal the fault starts: a broker session timeout (9 s) and a little.
pub(super) const SETTLE_MS: u64 = 10_000;

/// The brokers kept out of the liveness phase, per cluster.
pub(super) type HeldOut = BTreeMap<ClusterIdx, BrokerId>;

/// Chooses and keeps out one broker per cluster (see [`PersistentFault`]); call once the
/// liveness phase has healed and restarted everything and the controller's view settled. A cluster with fewer than three brokers,
/// or with no broker whose every partition keeps another in-sync replica, keeps everyone.
pub(super) fn hold_out(w: &KafkaWorld, plan: &ChaosPlan) -> HeldOut {
    let Some(fault) = plan.persistent else {
        return HeldOut::new();
    };
    let mut out = HeldOut::new();
    for c in 0..plan.brokers.len() {
        let Ok(c) = u16::try_from(c).map(ClusterIdx) else {
            continue;
        };
        let Some(b) = eligible(w, c, fault) else {
            continue;
        };
        let node = NodeId::broker(c, b);
        let how = match fault.kind {
            PersistentKind::Down => {
                w.world.hold_down(node);
                "stays down"
            }
            PersistentKind::Isolated => {
                w.world.isolate(node);
                "stays isolated"
            }
        };
        w.world.note(
            "fault",
            &format!("c{}/b{}", c.0, b.0),
            &format!("persistent partial fault: {how} through the liveness phase"),
        );
        out.insert(c, b);
    }
    out
}

/// The first broker from `pick` on whose every partition (per the controller) keeps a live
/// ISR quorum without it: at least `min.insync.replicas` other in-sync replicas that run and
/// are unfenced. Fewer would leave the partition available but its HW frozen (KIP-966:
/// the leader does not advance the HW while the ISR is below min.insync.replicas), which is
/// Kafka working as designed, not a liveness failure. (A snapshot: the controller may still fence a broker whose heartbeats a healed cut
/// lost; a partition whose ISR then shrinks to the held broker goes offline, which the
/// liveness verdict reports.)
fn eligible(w: &KafkaWorld, c: ClusterIdx, fault: PersistentFault) -> Option<BrokerId> {
    let brokers = w.broker_ids(c);
    let n = brokers.len();
    if n < 3 {
        return None;
    }
    let start = usize::try_from(fault.pick).unwrap_or(0) % n;
    let partitions = w.controller_partitions(c);
    let unfenced = w.unfenced_brokers(c);
    let live =
        |r: &BrokerId| unfenced.contains(r) && !w.world.status(NodeId::broker(c, *r)).is_down();
    (0..n).map(|i| brokers[(start + i) % n]).find(|b| {
        partitions
            .iter()
            .filter(|(p, _)| p.replicas.contains(b))
            .all(|(p, min_isr)| p.isr.iter().filter(|r| *r != b && live(r)).count() >= *min_isr)
    })
}
