//! Structural edits of a chaos plan for the shrinker: remove a topic, partitions or brokers
//! and fix every reference to them, so the edited plan is still a valid world (a fault on a
//! broker that no longer exists is dropped, not redirected: redirecting would change what
//! the fault means).

use super::plan::{ChaosFault, ChaosPlan, ClientPlan};

/// `p` without topic `t`: clients and faults on it are dropped, higher indices shift down.
#[must_use]
pub(super) fn drop_topic(p: &ChaosPlan, t: usize) -> ChaosPlan {
    let mut q = p.clone();
    q.topics.remove(t);
    let fix = |x: usize| -> Option<usize> {
        match x.cmp(&t) {
            std::cmp::Ordering::Less => Some(x),
            std::cmp::Ordering::Equal => None,
            std::cmp::Ordering::Greater => Some(x - 1),
        }
    };
    let fix_client = |c: &ClientPlan| -> Option<ClientPlan> {
        let mut c = c.clone();
        let topic = match &mut c {
            ClientPlan::Producer { topic, .. }
            | ClientPlan::TransactionalProducer { topic, .. }
            | ClientPlan::Consumer { topic, .. } => topic,
        };
        *topic = fix(*topic)?;
        Some(c)
    };
    q.clients = q.clients.iter().filter_map(fix_client).collect();
    q.failover_clients = q.failover_clients.iter().filter_map(fix_client).collect();
    q.faults.retain_mut(|s| match fault_topic(&mut s.fault) {
        Some((topic, _)) => match fix(*topic) {
            Some(n) => {
                *topic = n;
                true
            }
            None => false,
        },
        None => true,
    });
    q
}

/// `p` with topic `t` cut down to `n` partitions; faults on the removed ones are dropped.
#[must_use]
pub(super) fn reduce_partitions(p: &ChaosPlan, t: usize, n: i32) -> ChaosPlan {
    let mut q = p.clone();
    q.topics[t].partitions = n;
    q.faults.retain_mut(|s| match fault_topic(&mut s.fault) {
        Some((topic, partition)) => *topic != t || *partition < n,
        None => true,
    });
    q
}

/// `p` with cluster `c` down to `n` brokers: faults on removed brokers are dropped, and on
/// cluster 0 (where topics are created) replication factors and `min.insync.replicas` are
/// capped.
#[must_use]
pub(super) fn reduce_brokers(p: &ChaosPlan, c: usize, n: u16) -> ChaosPlan {
    let mut q = p.clone();
    q.brokers[c] = n;
    q.faults.retain(|s| match fault_broker(&s.fault) {
        Some((cluster, broker)) => usize::from(cluster) != c || broker <= i32::from(n),
        None => true,
    });
    if c == 0 {
        let cap = i16::try_from(n).unwrap_or(i16::MAX);
        for t in &mut q.topics {
            t.replication_factor = t.replication_factor.min(cap);
            t.min_insync_replicas = t.min_insync_replicas.min(t.replication_factor);
        }
    }
    q
}

/// The (topic, partition) a fault names, mutable.
fn fault_topic(f: &mut ChaosFault) -> Option<(&mut usize, &mut i32)> {
    match f {
        ChaosFault::UncleanElection {
            topic, partition, ..
        }
        | ChaosFault::DeleteRecords {
            topic, partition, ..
        }
        | ChaosFault::CrashLeader {
            topic, partition, ..
        }
        | ChaosFault::IsolateLeaderFromController {
            topic, partition, ..
        }
        | ChaosFault::RotBatch {
            topic, partition, ..
        }
        | ChaosFault::ProbeWrite { topic, partition } => Some((topic, partition)),
        _ => None,
    }
}

/// The (cluster, broker) a fault names.
fn fault_broker(f: &ChaosFault) -> Option<(u16, i32)> {
    match f {
        ChaosFault::Crash {
            cluster, broker, ..
        }
        | ChaosFault::Restart { cluster, broker }
        | ChaosFault::Pause {
            cluster, broker, ..
        }
        | ChaosFault::Isolate {
            cluster, broker, ..
        }
        | ChaosFault::IsolateFromController {
            cluster, broker, ..
        } => Some((*cluster, *broker)),
        _ => None,
    }
}
