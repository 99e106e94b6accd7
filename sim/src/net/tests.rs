//! Network behaviour under madsim: each test builds a runtime with a fixed seed on a fresh
//! OS thread (toolchain.md: one thread per seed) and drives the network from its main task.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use madsim::time::{Instant, sleep, timeout};
use mirror_core::protocol::{ClusterIdx, NodeId};
use mirror_core::types::BrokerId;
use rand::Rng;

use super::*;

const A: NodeId = NodeId {
    cluster: ClusterIdx(0),
    role: mirror_core::protocol::NodeRole::Broker(BrokerId(1)),
};
const B: NodeId = NodeId {
    cluster: ClusterIdx(0),
    role: mirror_core::protocol::NodeRole::Broker(BrokerId(2)),
};
const C: NodeId = NodeId {
    cluster: ClusterIdx(1),
    role: mirror_core::protocol::NodeRole::Broker(BrokerId(1)),
};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn sim<F, Fut>(seed: u64, f: F) -> Fut::Output
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future + 'static,
    Fut::Output: Send + 'static,
{
    std::thread::spawn(move || {
        madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default())
            .block_on(f())
    })
    .join()
    .expect("simulation panicked")
}

fn fixed(intra: u64, wan: u64) -> NetConfig {
    NetConfig {
        intra: LatencyDist::Fixed(ms(intra)),
        wan: LatencyDist::Fixed(ms(wan)),
        ..NetConfig::default()
    }
}

/// Receives one message and returns (payload, time since `t0`).
async fn recv_at(inbox: &mut Inbox<u64>, t0: Instant) -> (u64, Duration) {
    let env = inbox.recv().await.expect("inbox open");
    (env.msg, Instant::now() - t0)
}

async fn nothing_within(inbox: &mut Inbox<u64>, d: Duration) -> bool {
    timeout(d, inbox.recv()).await.is_err()
}

#[test]
fn each_link_is_fifo_under_random_latency() {
    // Goal: with latencies drawn from 1..50 ms, messages on one link still arrive in send
    // order, and the draws really vary (so FIFO queuing was exercised).
    let delays = sim(1, || async {
        let cfg = NetConfig {
            intra: LatencyDist::Uniform {
                min: ms(1),
                max: ms(50),
            },
            ..NetConfig::default()
        };
        let net = Network::<u64>::new(cfg);
        let _a = net.register(A);
        let mut b = net.register(B);
        let sender = net.clone();
        madsim::task::spawn_local(async move {
            for i in 0..200 {
                sender.send(A, B, i);
                let pause = madsim::rand::thread_rng().gen_range(0..3);
                sleep(ms(pause)).await;
            }
        });
        let mut delays = Vec::new();
        for i in 0..200 {
            let env = b.recv().await.unwrap();
            assert_eq!(env.msg, i, "fifo: link A→B reordered");
            delays.push(Instant::now() - env.sent_at);
        }
        delays
    });
    let distinct: std::collections::BTreeSet<_> = delays.iter().collect();
    assert!(
        distinct.len() > 50,
        "latencies should vary, got {}",
        distinct.len()
    );
}

#[test]
fn wan_latency_is_distinct_from_intra_and_overridable_per_pair() {
    // Goal: intra-cluster, WAN and per-ordered-pair distributions apply to the right links.
    sim(2, || async {
        let net = Network::<u64>::new(fixed(1, 40));
        let (mut a, mut b, mut c) = (net.register(A), net.register(B), net.register(C));
        let t0 = Instant::now();
        net.send(A, B, 1);
        net.send(A, C, 2);
        let (_, intra) = recv_at(&mut b, t0).await;
        let (_, wan) = recv_at(&mut c, t0).await;
        assert!(intra >= ms(1) && intra < ms(2), "{intra:?}");
        assert!(wan >= ms(40) && wan < ms(41), "{wan:?}");

        net.set_latency(ClusterIdx(0), ClusterIdx(1), LatencyDist::Fixed(ms(100)));
        let t1 = Instant::now();
        net.send(A, C, 3);
        net.send(C, A, 4);
        let (_, back) = recv_at(&mut a, t1).await;
        let (_, forth) = recv_at(&mut c, t1).await;
        assert!(
            back >= ms(40) && back < ms(41),
            "reverse pair keeps the WAN default"
        );
        assert!(forth >= ms(100) && forth < ms(101), "{forth:?}");
    });
}

#[test]
fn symmetric_partition_drops_both_directions_until_healed() {
    // Goal: a cluster-to-cluster partition drops both ways, leaves intra links alone, and
    // heal restores delivery.
    sim(3, || async {
        let net = Network::<u64>::new(fixed(1, 10));
        let (mut a, mut b, mut c) = (net.register(A), net.register(B), net.register(C));
        let id = net.partition(
            NodeSet::Cluster(ClusterIdx(0)),
            NodeSet::Cluster(ClusterIdx(1)),
            Direction::Both,
        );
        net.send(A, C, 1);
        net.send(C, A, 2);
        net.send(A, B, 3);
        assert_eq!(b.recv().await.unwrap().msg, 3);
        assert!(nothing_within(&mut c, ms(100)).await);
        assert!(nothing_within(&mut a, ms(1)).await);
        assert_eq!(net.stats().total().dropped_partitioned, 2);
        assert!(net.heal(id));
        assert!(!net.heal(id));
        net.send(A, C, 4);
        assert_eq!(c.recv().await.unwrap().msg, 4);
    });
}

#[test]
fn one_way_partition_drops_one_direction() {
    // Goal: AtoB drops only a→b; isolate cuts one node off both ways.
    sim(4, || async {
        let net = Network::<u64>::new(fixed(1, 10));
        let (mut a, mut b, mut c) = (net.register(A), net.register(B), net.register(C));
        let id = net.partition(NodeSet::node(A), NodeSet::node(C), Direction::AtoB);
        net.send(A, C, 1);
        net.send(C, A, 2);
        assert_eq!(a.recv().await.unwrap().msg, 2);
        assert!(nothing_within(&mut c, ms(50)).await);
        net.heal(id);

        net.isolate(B);
        net.send(A, B, 3);
        net.send(B, C, 4);
        net.send(A, C, 5);
        assert_eq!(c.recv().await.unwrap().msg, 5);
        assert!(nothing_within(&mut b, ms(50)).await);
        net.heal_all();
        net.send(B, C, 6);
        assert_eq!(c.recv().await.unwrap().msg, 6);
    });
}

#[test]
fn partition_at_delivery_time_drops_in_flight_messages() {
    // Goal: a message already on the wire when the partition starts is dropped too.
    sim(5, || async {
        let net = Network::<u64>::new(fixed(10, 10));
        let (_a, mut b) = (net.register(A), net.register(B));
        net.send(A, B, 1);
        sleep(ms(5)).await;
        let id = net.partition(NodeSet::node(A), NodeSet::node(B), Direction::Both);
        sleep(ms(10)).await;
        net.heal(id);
        assert!(nothing_within(&mut b, ms(50)).await);
        assert_eq!(net.stats().links[&(A, B)].dropped_partitioned, 1);
    });
}

#[test]
fn clog_holds_then_releases_in_order() {
    // Goal: a clogged link neither drops nor delivers; unclog delivers the backlog in order,
    // and later sends queue behind it.
    sim(6, || async {
        let net = Network::<u64>::new(NetConfig::default());
        let (_a, mut b) = (net.register(A), net.register(B));
        net.clog(A, B);
        for i in 0..5 {
            net.send(A, B, i);
        }
        assert!(nothing_within(&mut b, ms(200)).await);
        assert_eq!(net.in_flight(), 5);
        net.unclog(A, B);
        net.send(A, B, 5);
        for i in 0..6 {
            assert_eq!(b.recv().await.unwrap().msg, i);
        }
        assert_eq!(net.stats().links[&(A, B)].delivered, 6);
        assert_eq!(net.in_flight(), 0);
    });
}

#[test]
fn crash_drops_in_flight_and_restart_gets_a_fresh_inbox() {
    // Goal: unregister drops messages in flight to and from the node; the old inbox ends;
    // the new incarnation receives only what was sent to it.
    sim(7, || async {
        let net = Network::<u64>::new(fixed(10, 10));
        let (mut a, mut b_old) = (net.register(A), net.register(B));
        net.send(A, B, 1);
        net.send(B, A, 2);
        sleep(ms(5)).await;
        net.unregister(B);
        assert!(!net.is_registered(B));
        assert!(b_old.recv().await.is_none(), "crashed inbox ends");
        net.send(A, B, 3); // to a dead node: refused
        let mut b_new = net.register(B);
        net.send(A, B, 4);
        assert_eq!(b_new.recv().await.unwrap().msg, 4);
        assert!(
            nothing_within(&mut a, ms(50)).await,
            "B's pre-crash message is reset too"
        );
        assert!(b_old.try_recv().is_none());
        let total = net.stats().total();
        assert_eq!((total.delivered, total.dropped_reset), (1, 3));
    });
}

#[test]
fn packet_loss_drops_a_fraction_and_keeps_fifo() {
    // Goal: loss drops roughly the configured share; what survives is still in order.
    sim(8, || async {
        let net = Network::<u64>::new(NetConfig::default());
        let (_a, mut b) = (net.register(A), net.register(B));
        net.packet_loss(0.3);
        for i in 0..1000 {
            net.send(A, B, i);
        }
        net.packet_loss(0.0);
        net.send(A, B, 1000);
        let mut last = None;
        let mut got = 0;
        loop {
            let m = b.recv().await.unwrap().msg;
            assert!(last < Some(m));
            last = Some(m);
            got += 1;
            if m == 1000 {
                break;
            }
        }
        let lost = net.stats().total().dropped_lost;
        assert_eq!(got + lost, 1001);
        assert!((200..400).contains(&lost), "{lost}");
    });
}

#[test]
fn latency_spike_applies_to_its_links_until_it_expires() {
    // Goal: extra latency on selected directed links only, and only until `until`.
    sim(9, || async {
        let net = Network::<u64>::new(fixed(1, 1));
        let (mut a, mut b) = (net.register(A), net.register(B));
        let t0 = Instant::now();
        let links = LinkSet {
            a: NodeSet::node(A),
            b: NodeSet::node(B),
            direction: Direction::AtoB,
        };
        net.latency_spike(links, ms(50), t0 + ms(100));
        net.send(A, B, 1);
        net.send(B, A, 2);
        let (_, fast) = recv_at(&mut a, t0).await;
        let (_, slow) = recv_at(&mut b, t0).await;
        assert!(slow >= ms(51) && slow < ms(52), "{slow:?}");
        assert!(fast < ms(2), "{fast:?}");
        sleep(ms(100)).await;
        let t1 = Instant::now();
        net.send(A, B, 3);
        let (_, after) = recv_at(&mut b, t1).await;
        assert!(after < ms(2), "{after:?}");
    });
}

#[test]
fn events_and_byte_counters_are_recorded() {
    // Goal: the verbose trace feed sees send, hold and delivery; bytes are counted per link.
    sim(10, || async {
        let net = Network::<u64>::new(fixed(1, 1));
        let (_a, mut b) = (net.register(A), net.register(B));
        net.record_events(true);
        net.clog(A, B);
        let seq = net.send(A, B, 7);
        sleep(ms(5)).await;
        net.unclog(A, B);
        assert_eq!(b.recv().await.unwrap().seq, seq);
        let kinds: Vec<_> = net.take_events().into_iter().map(|e| e.kind).collect();
        assert_eq!(
            kinds,
            [
                NetEventKind::Sent { bytes: 8 },
                NetEventKind::Held,
                NetEventKind::Delivered
            ]
        );
        assert!(net.take_events().is_empty());
        let s = net.stats().links[&(A, B)];
        assert_eq!((s.bytes_sent, s.bytes_delivered), (8, 8));
    });
}

/// A small busy world: three nodes in two clusters exchange random messages; returns the
/// delivery log (receiver, seq, sender, payload, delivery time in µs).
fn delivery_log(seed: u64) -> Vec<(NodeId, u64, NodeId, u64, u128)> {
    sim(seed, || async {
        let net = Network::<u64>::new(NetConfig::default());
        let log = Arc::new(Mutex::new(Vec::new()));
        let t0 = Instant::now();
        for node in [A, B, C] {
            let mut inbox = net.register(node);
            let log = Arc::clone(&log);
            madsim::task::spawn(async move {
                while let Some(e) = inbox.recv().await {
                    let at = (Instant::now() - t0).as_micros();
                    log.lock().unwrap().push((e.to, e.seq, e.from, e.msg, at));
                }
            });
        }
        let nodes = [A, B, C];
        for i in 0..300 {
            let mut rng = madsim::rand::thread_rng();
            let (from, to) = (nodes[rng.gen_range(0..3)], nodes[rng.gen_range(0..3)]);
            net.send(from, to, i);
            sleep(Duration::from_micros(rng.gen_range(0..2000))).await;
        }
        sleep(Duration::from_secs(1)).await;
        let log = log.lock().unwrap().clone();
        assert_eq!(log.len(), 300);
        log
    })
}

#[test]
fn same_seed_same_delivery_log_and_different_seeds_differ() {
    // Goal: determinism — the log is a function of the seed, and the seed matters.
    assert_eq!(delivery_log(11), delivery_log(11));
    assert_ne!(delivery_log(11), delivery_log(12));
}

#[test]
fn handles_are_send_for_send_messages() {
    // Goal: node tasks may use `madsim::task::spawn`, which requires `Send`.
    fn assert_send<T: Send>() {}
    assert_send::<Network<u64>>();
    assert_send::<Inbox<u64>>();
}

#[test]
fn per_kind_counters_agree_with_the_per_link_ones() {
    // Goal: every send, delivery and drop is counted under its kind and route as under its
    // link, so `bench`'s per-kind table sums to the network's totals.
    sim(12, || async {
        let net = Network::<u64>::new(fixed(1, 10));
        let (mut b, mut c) = (net.register(B), net.register(C));
        let _a = net.register(A);
        net.send(A, B, 1);
        net.send(A, C, 2);
        net.send(A, C, 3);
        let id = net.isolate(C);
        net.send(A, C, 4);
        net.heal(id);
        b.recv().await;
        c.recv().await;
        c.recv().await;
        let stats = net.stats();
        let kind = Kind {
            api: "message",
            part: Part::Other,
        };
        let cross = stats.kinds[&KindKey {
            kind,
            route: Route::CrossCluster,
        }];
        assert_eq!(
            (cross.sent, cross.delivered, cross.dropped_partitioned),
            (3, 2, 1)
        );
        let intra = stats.kinds[&KindKey {
            kind,
            route: Route::Broker,
        }];
        assert_eq!((intra.sent, intra.delivered), (1, 1));
        let mut by_kind = LinkStats::default();
        stats.kinds.values().for_each(|s| by_kind.add(s));
        assert_eq!(by_kind, stats.total());
    });
}

#[test]
fn a_route_is_named_by_its_ends() {
    let ctl = NodeId::controller(ClusterIdx(0));
    let client = NodeId::client(ClusterIdx(0), 1);
    assert_eq!(Route::of(A, B), Route::Broker);
    assert_eq!(Route::of(A, C), Route::CrossCluster);
    assert_eq!(Route::of(ctl, A), Route::Controller);
    assert_eq!(Route::of(C, client), Route::Client);
}
