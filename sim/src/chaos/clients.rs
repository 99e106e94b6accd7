//! Starts the workload clients of a chaos plan: the source's clients at the start of the run,
//! and the failover clients on the destination once a failover reached STOPPED.

use mirror_core::protocol::{ClusterIdx, NodeId, NodeRole};

use super::plan::{ChaosPlan, ClientPlan};
use crate::kafka::KafkaWorld;
use crate::workload::{ClientNode, Consumer, ConsumerConfig, Producer, ProducerConfig};

/// Salt of the failover clients' seeds, so they never draw the same stream as a source
/// client of the same index.
const FAILOVER_SEED_SALT: u64 = 0x0f41_10fe;

/// Starts `plan.clients` on cluster 0; returns the client nodes.
pub(super) fn start_clients(w: &KafkaWorld, plan: &ChaosPlan) -> Vec<NodeId> {
    let mut ids = Vec::new();
    for (i, c) in plan.clients.iter().enumerate() {
        let seed = plan.seed.wrapping_mul(31).wrapping_add(i as u64);
        ids.push(start_client(w, plan, ClusterIdx(0), c, seed));
    }
    ids
}

/// Closes the producers among `ids` (they finish what they have, then stop generating).
pub(super) fn close_producers(w: &KafkaWorld, ids: &[NodeId]) {
    for id in ids {
        let arc = w.world.node_state(*id);
        let mut g = crate::world::node::lock(&arc);
        if let crate::kafka::SimNode::Client(c) = &mut *g
            && let ClientNode::Producer(p) = c.as_mut()
        {
            p.close();
        }
    }
}

/// Starts `plan.failover_clients` on cluster 1: the applications that moved to the new
/// primary after a failover.
pub(super) fn start_failover_clients(w: &KafkaWorld, plan: &ChaosPlan) {
    for (i, c) in plan.failover_clients.iter().enumerate() {
        let seed = (plan.seed ^ FAILOVER_SEED_SALT)
            .wrapping_mul(31)
            .wrapping_add(i as u64);
        start_client(w, plan, ClusterIdx(1), c, seed);
    }
}

fn start_client(
    w: &KafkaWorld,
    plan: &ChaosPlan,
    cluster: ClusterIdx,
    c: &ClientPlan,
    seed: u64,
) -> NodeId {
    let brokers = w.broker_ids(cluster);
    let defers_refresh = w.spec().clusters[usize::from(cluster.0)]
        .tuning
        .ablation_producer_defers_metadata_refresh;
    match c.clone() {
        ClientPlan::Producer {
            topic,
            acks,
            rate,
            max_in_flight,
        } => {
            let t = plan.topics[topic].clone();
            w.add_workload_client(cluster, move |boot| {
                let n = client_number(boot.id);
                let parts = (0..t.partitions).collect();
                let mut cfg = ProducerConfig::new(n, cluster, brokers.clone(), &t.name, parts);
                cfg.acks = acks;
                // Kafka refuses idempotence without acks=all: such producers are plain.
                cfg.idempotent = acks == -1;
                cfg.records_per_second = f64::from(rate);
                cfg.max_in_flight = usize::from(max_in_flight);
                cfg.seed = seed;
                cfg.ablation_defers_metadata_refresh = defers_refresh;
                ClientNode::Producer(Box::new(Producer::new(cfg)))
            })
        }
        ClientPlan::TransactionalProducer {
            topic,
            abort_one_in,
            rate,
            max_in_flight,
        } => {
            let t = plan.topics[topic].clone();
            w.add_workload_client(cluster, move |boot| {
                let n = client_number(boot.id);
                let parts = (0..t.partitions).collect();
                let mut cfg = ProducerConfig::new(n, cluster, brokers.clone(), &t.name, parts);
                cfg.transactional_id = Some(format!("txn-{n}"));
                cfg.records_per_second = f64::from(rate);
                cfg.txn.abort_probability = if abort_one_in == 0 {
                    0.0
                } else {
                    1.0 / f64::from(abort_one_in)
                };
                cfg.max_in_flight = usize::from(max_in_flight);
                cfg.seed = seed;
                cfg.ablation_defers_metadata_refresh = defers_refresh;
                ClientNode::Producer(Box::new(Producer::new(cfg)))
            })
        }
        ClientPlan::Consumer {
            topic,
            read_committed,
        } => {
            let t = plan.topics[topic].clone();
            w.add_workload_client(cluster, move |boot| {
                let n = client_number(boot.id);
                let parts = (0..t.partitions).collect();
                let mut cfg = ConsumerConfig::new(n, cluster, brokers.clone(), &t.name, parts);
                cfg.group = Some(format!("g{n}"));
                cfg.read_committed = read_committed;
                cfg.seed = seed;
                ClientNode::Consumer(Box::new(Consumer::new(cfg)))
            })
        }
    }
}

fn client_number(id: NodeId) -> u32 {
    match id.role {
        NodeRole::Client(n) => n,
        _ => 0,
    }
}
