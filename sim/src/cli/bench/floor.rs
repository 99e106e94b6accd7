//! The floor: a bare madsim world that replays a reference run's madsim-level load and does
//! nothing else. It has the same nodes (one madsim node each), the same network (the same
//! [`Network`] with the same latencies, FIFO links and delivery task), sends as many
//! messages on every directed link and sets as many node and harness timers, spread evenly
//! over the same simulated time. What it costs per simulated second is what madsim and the
//! transport cost for that load, so the reference world's ratio is judged against it,
//! measured in the same process on the same machine (issue M8).
//!
//! Not replayed: the network's own timers (the delivery task sleeps once per distinct
//! delivery deadline, which the floor's sends make for themselves), faults (the floor drops
//! nothing) and the timing of each message (sends come in bursts at the node's timers).

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant as WallInstant};

use madsim::runtime::Handle;
use mirror_core::protocol::NodeId;

use crate::net::{Inbox, NetConfig, NetStats, Network};
use crate::world::clock::{TimerCounts, TimerOwner, reset_timers, sleep_exact, timers_set};
use crate::world::{RunReport, run_seed};

/// Why the floor world could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum FloorError {
    /// The bare world panicked (a harness bug: it runs no model code).
    #[error("the floor world panicked: {0}")]
    Panicked(String),
}

/// A reference run's load, as the floor replays it.
#[derive(Clone, Debug, PartialEq)]
pub struct FloorLoad {
    /// madsim seed (latency draws).
    pub seed: u64,
    /// The reference world's latencies.
    pub net: NetConfig,
    /// The reference run's simulated time.
    pub sim: Duration,
    /// Every node of the reference world.
    pub nodes: Vec<NodeId>,
    /// Messages sent per directed link (dropped ones included: a send is a send).
    pub links: BTreeMap<(NodeId, NodeId), u64>,
    /// Timers per node driver.
    pub node_timers: BTreeMap<NodeId, u64>,
    /// Timers of the run itself (fault steps, convergence polls).
    pub harness_timers: u64,
}

impl FloorLoad {
    /// The load of `report`'s run on `net` with `seed`.
    #[must_use]
    pub fn of(report: &RunReport, net: NetConfig, seed: u64) -> Self {
        let stats = &report.stats;
        let mut node_timers = BTreeMap::new();
        let mut harness_timers = 0;
        for (owner, n) in &stats.timers {
            match owner {
                TimerOwner::Node(id) => {
                    node_timers.insert(*id, *n);
                }
                TimerOwner::Harness => harness_timers += n,
                TimerOwner::Network => {}
            }
        }
        let mut nodes: Vec<NodeId> = stats.nodes.clone();
        let linked = stats.net.links.keys().flat_map(|(a, b)| [*a, *b]);
        nodes.extend(linked.chain(node_timers.keys().copied()));
        nodes.sort_unstable();
        nodes.dedup();
        Self {
            seed,
            net,
            sim: Duration::from_secs_f64(report.sim_seconds.max(0.0)),
            nodes,
            links: stats.net.links.iter().map(|(l, s)| (*l, s.sent)).collect(),
            node_timers,
            harness_timers,
        }
    }

    /// Messages the load sends.
    #[must_use]
    pub fn messages(&self) -> u64 {
        self.links.values().sum()
    }

    /// Node and harness timers the load sets (what the floor replays exactly).
    #[must_use]
    pub fn replayed_timers(&self) -> u64 {
        self.node_timers.values().sum::<u64>() + self.harness_timers
    }
}

/// What one floor run measured.
#[derive(Clone, Debug, PartialEq)]
pub struct FloorRun {
    /// Simulated seconds.
    pub sim_seconds: f64,
    /// Wall seconds (thread and runtime start included, as for the reference run).
    pub wall_seconds: f64,
    /// The network's counters.
    pub net: NetStats,
    /// Timers registered, by owner.
    pub timers: TimerCounts,
}

impl FloorRun {
    /// Simulated seconds per wall second.
    #[must_use]
    pub fn ratio(&self) -> f64 {
        self.sim_seconds / self.wall_seconds.max(1e-9)
    }

    /// Node and harness timers (the network's own are not replayed, see the module doc).
    #[must_use]
    pub fn replayed_timers(&self) -> u64 {
        self.timers
            .iter()
            .filter(|(o, _)| !matches!(o, TimerOwner::Network))
            .map(|(_, n)| n)
            .sum()
    }
}

/// What travels in the floor world: nothing but a number.
type Payload = u64;

/// One node's share of the load.
#[derive(Clone, Debug)]
struct NodeLoad {
    id: NodeId,
    timers: u64,
    links: Vec<(NodeId, u64)>,
}

/// Runs the floor world for `load` on a fresh thread and runtime.
pub fn run(load: &FloorLoad) -> Result<FloorRun, FloorError> {
    let load = load.clone();
    let start = WallInstant::now();
    let (sim_seconds, net, timers) =
        run_seed(load.seed, move || world(load)).map_err(FloorError::Panicked)?;
    Ok(FloorRun {
        sim_seconds,
        wall_seconds: start.elapsed().as_secs_f64(),
        net,
        timers,
    })
}

/// The floor world's main task: starts the nodes, sets the harness timers (the last one at
/// the reference run's end), then stops everything.
async fn world(load: FloorLoad) -> (f64, NetStats, TimerCounts) {
    reset_timers();
    let net = Network::<Payload>::new(load.net.clone());
    let t0 = madsim::time::Instant::now();
    let mut madsim_ids = Vec::new();
    for (i, id) in load.nodes.iter().enumerate() {
        let share = NodeLoad {
            id: *id,
            timers: load.node_timers.get(id).copied().unwrap_or(0),
            links: load
                .links
                .iter()
                .filter(|((from, _), _)| from == id)
                .map(|((_, to), n)| (*to, *n))
                .collect(),
        };
        let inbox = Arc::new(Mutex::new(Some(net.register(*id))));
        let (net, sim) = (net.clone(), load.sim);
        let handle = Handle::current()
            .create_node()
            .name(format!("floor-{i}"))
            .ip(node_ip(i))
            .init(move || {
                let inbox = inbox.lock().ok().and_then(|mut g| g.take());
                node(net.clone(), share.clone(), inbox, t0, sim)
            })
            .build();
        madsim_ids.push(handle.id());
    }
    let harness = load.harness_timers.max(1);
    for k in 1..=harness {
        sleep_exact(t0 + spread(load.sim, k, harness), TimerOwner::Harness).await;
    }
    let report = (
        (madsim::time::Instant::now() - t0).as_secs_f64(),
        net.stats(),
        timers_set(),
    );
    for (id, m) in load.nodes.iter().zip(madsim_ids) {
        Handle::current().kill(m);
        net.unregister(*id);
    }
    net.close();
    report
}

/// One floor node: a task that drains its inbox, and its timers, each of which sends the
/// node's share of messages due by then on every link (exact totals at the last one). The
/// timers end before the reference run's end, so the harness's last timer comes after.
async fn node(
    net: Network<Payload>,
    load: NodeLoad,
    inbox: Option<Inbox<Payload>>,
    t0: madsim::time::Instant,
    sim: Duration,
) {
    if let Some(mut inbox) = inbox {
        madsim::task::spawn(async move { while inbox.recv().await.is_some() {} });
    }
    let mut sent = vec![0u64; load.links.len()];
    let mut send_due = |k: u64, of: u64| {
        for ((to, total), done) in load.links.iter().zip(sent.iter_mut()) {
            let due = scale(*total, k, of);
            while *done < due {
                net.send(load.id, *to, *done);
                *done += 1;
            }
        }
    };
    if load.timers == 0 {
        // A node that set no timer (none does in a Kafka world) sends everything at once.
        send_due(1, 1);
        return;
    }
    for k in 1..=load.timers {
        sleep_exact(
            t0 + spread(sim, k, load.timers + 1),
            TimerOwner::Node(load.id),
        )
        .await;
        send_due(k, load.timers);
    }
}

/// The `k`-th of `n` evenly spaced instants in `(0, span]`, in nanoseconds.
fn spread(span: Duration, k: u64, n: u64) -> Duration {
    let ns = u64::try_from(span.as_nanos()).unwrap_or(u64::MAX);
    Duration::from_nanos(scale(ns, k, n))
}

/// `total · k / n`, without overflow.
fn scale(total: u64, k: u64, n: u64) -> u64 {
    let v = u128::from(total) * u128::from(k) / u128::from(n.max(1));
    u64::try_from(v).unwrap_or(u64::MAX)
}

/// 10.0.0.1, 10.0.0.2, … as the reference world numbers its nodes.
fn node_ip(index: usize) -> IpAddr {
    let n = u32::try_from(index).unwrap_or(u32::MAX - 1) + 1;
    IpAddr::V4(Ipv4Addr::from(0x0a00_0000 | n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_ends_at_the_span_and_never_repeats_an_instant() {
        let span = Duration::from_secs(75);
        assert_eq!(spread(span, 4, 4), span);
        let mut last = Duration::ZERO;
        for k in 1..=1000 {
            let t = spread(span, k, 1001);
            assert!(t > last && t < span);
            last = t;
        }
    }

    #[test]
    fn a_floor_world_sends_and_sets_exactly_its_load() {
        let a = NodeId::controller(mirror_core::protocol::ClusterIdx(0));
        let b = NodeId::controller(mirror_core::protocol::ClusterIdx(1));
        let load = FloorLoad {
            seed: 7,
            net: NetConfig::default(),
            sim: Duration::from_secs(2),
            nodes: vec![a, b],
            links: BTreeMap::from([((a, b), 300), ((b, a), 17)]),
            node_timers: BTreeMap::from([(a, 40), (b, 3)]),
            harness_timers: 5,
        };
        let run = run(&load).expect("floor runs");
        assert_eq!(run.net.total().sent, load.messages());
        assert_eq!(run.replayed_timers(), load.replayed_timers());
        assert_eq!(run.timers.get(&TimerOwner::Node(a)), Some(&40));
        assert!((run.sim_seconds - 2.0).abs() < 1e-6);
    }
}
