//! The simulated Kafka network: per-connection FIFO links with per-cluster-pair latency, and
//! the fault vocabulary of madsim/turmoil (partition, heal, isolate, clog, latency spike,
//! packet loss). A link flap is `partition` followed by `heal`.
//!
//! Why not madsim's `Endpoint`: it has one global latency and delivers datagrams unordered,
//! whereas Kafka connections are TCP (FIFO per connection) and the WAN link between clusters
//! needs its own latency distribution. Here a message on the directed link `from → to` is
//! delivered at `max(now + latency, previous delivery on that link)`, so each link is FIFO.
//!
//! Failure semantics, chosen to match what a Kafka client observes:
//! - **partitioned** link: messages are DROPPED, at send time or at delivery time (a reset
//!   connection); callers time out and retry.
//! - **clogged** link: messages are HELD and delivered in order on `unclog` (a stalled TCP
//!   connection whose backlog flushes when it recovers).
//! - **crash** (`unregister`) or restart (`register` again): queued and in-flight messages to
//!   or from the old incarnation are dropped, and the old [`Inbox`] ends.
//! - **packet loss**: a lost message is dropped at send time.
//!
//! Randomness comes only from `madsim::rand::thread_rng()` and time only from madsim, so a
//! seed fixes every latency and every delivery order.

mod due;
mod kinds;
mod links;
mod router;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::future::poll_fn;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use madsim::time::Instant;
use mirror_core::protocol::{ClusterIdx, NodeId};
use rand::Rng;

pub use kinds::{Kind, KindKey, MessageKind, Part, Route};
pub use links::{Direction, FaultId, LatencyDist, LinkSet, NetConfig, NodeSet};
use router::{InFlight, NodeSlot, Router, lock};

/// Bytes a message would take on the wire, for the per-link byte counters.
pub trait WireSize {
    /// Encoded size in bytes (an estimate is fine; it only feeds statistics).
    fn wire_size(&self) -> usize;
}

impl WireSize for Vec<u8> {
    fn wire_size(&self) -> usize {
        self.len()
    }
}

impl WireSize for bytes::Bytes {
    fn wire_size(&self) -> usize {
        self.len()
    }
}

impl WireSize for String {
    fn wire_size(&self) -> usize {
        self.len()
    }
}

impl WireSize for u64 {
    fn wire_size(&self) -> usize {
        8
    }
}

/// A delivered message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Envelope<M> {
    /// Network-wide send sequence number (unique; ties in delivery time break by it).
    pub seq: u64,
    /// Sender.
    pub from: NodeId,
    /// Receiver.
    pub to: NodeId,
    /// Simulated time of the `send`.
    pub sent_at: Instant,
    /// The payload.
    pub msg: M,
}

/// Why a message was not delivered.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DropReason {
    /// The link was partitioned at send or delivery time.
    Partitioned,
    /// Packet loss.
    Lost,
    /// An end was not registered, or crashed or restarted while the message was in flight.
    ConnectionReset,
}

/// What happened to a message, for the verbose trace.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum NetEventKind {
    /// Handed to the network with this many bytes.
    Sent {
        /// [`WireSize::wire_size`] of the message.
        bytes: u64,
    },
    /// Pushed into the receiver's inbox.
    Delivered,
    /// Reached a clogged link and waits for `unclog`.
    Held,
    /// Dropped.
    Dropped(DropReason),
}

/// One network event (recorded only after [`Network::record_events`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct NetEvent {
    /// The message's [`Envelope::seq`].
    pub seq: u64,
    /// Sender.
    pub from: NodeId,
    /// Receiver.
    pub to: NodeId,
    /// Simulated time of the event.
    pub at: Instant,
    /// What happened.
    pub kind: NetEventKind,
}

/// Counters of one directed link.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Messages sent (including those later dropped).
    pub sent: u64,
    /// Messages delivered into the receiver's inbox.
    pub delivered: u64,
    /// Dropped by a partition.
    pub dropped_partitioned: u64,
    /// Dropped by packet loss.
    pub dropped_lost: u64,
    /// Dropped because an end was down or restarted.
    pub dropped_reset: u64,
    /// Bytes sent.
    pub bytes_sent: u64,
    /// Bytes delivered.
    pub bytes_delivered: u64,
    /// Partition entries of the messages sent ([`MessageKind::partitions`]).
    pub partitions_sent: u64,
}

impl LinkStats {
    /// Adds `o`'s counts to these.
    pub fn add(&mut self, o: &LinkStats) {
        self.sent += o.sent;
        self.delivered += o.delivered;
        self.dropped_partitioned += o.dropped_partitioned;
        self.dropped_lost += o.dropped_lost;
        self.dropped_reset += o.dropped_reset;
        self.bytes_sent += o.bytes_sent;
        self.bytes_delivered += o.bytes_delivered;
        self.partitions_sent += o.partitions_sent;
    }
}

/// Per-link and per-kind counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NetStats {
    /// Every directed link that carried a message, keyed by (from, to).
    pub links: BTreeMap<(NodeId, NodeId), LinkStats>,
    /// The same messages by [`MessageKind::kind`] and [`Route`] (what `mirrorsim bench`
    /// reports per simulated second).
    pub kinds: BTreeMap<KindKey, LinkStats>,
}

impl NetStats {
    /// Sum over all links.
    #[must_use]
    pub fn total(&self) -> LinkStats {
        let mut t = LinkStats::default();
        self.links.values().for_each(|l| t.add(l));
        t
    }
}

/// Handle to the world's network. Cheap to clone; `Send` when `M` is, so node tasks may be
/// spawned with `madsim::task::spawn` or `spawn_local`.
pub struct Network<M> {
    inner: Arc<Mutex<Router<M>>>,
}

impl<M> Clone for Network<M> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<M: WireSize + MessageKind + 'static> Network<M> {
    /// Creates the network and spawns its delivery task. Must be called inside a madsim
    /// runtime, from the world's own task (not a simulated node that may be killed, which
    /// would kill the delivery task with it).
    #[must_use]
    pub fn new(config: NetConfig) -> Self {
        let inner = Arc::new(Mutex::new(Router::new(config, Instant::now())));
        madsim::task::spawn_local(router::pump(Arc::downgrade(&inner)));
        Self { inner }
    }

    /// Starts a new incarnation of `node` and returns its inbox. Re-registering replaces the
    /// previous inbox (it then yields `None`) and drops messages addressed to the old one.
    pub fn register(&self, node: NodeId) -> Inbox<M> {
        let mut r = lock(&self.inner);
        reset_connections(&mut r, node);
        let slot = r.nodes.get_or_insert_with(&node, || NodeSlot {
            incarnation: 0,
            alive: false,
            queue: Default::default(),
            waker: None,
        });
        slot.incarnation += 1;
        slot.alive = true;
        slot.queue.clear();
        if let Some(w) = slot.waker.take() {
            w.wake();
        }
        Inbox {
            router: Arc::clone(&self.inner),
            node,
            incarnation: slot.incarnation,
        }
    }

    /// Crashes `node`'s network presence: its inbox ends, and messages queued for it or in
    /// flight to or from it are dropped, as when a TCP connection is reset.
    pub fn unregister(&self, node: NodeId) {
        let mut r = lock(&self.inner);
        reset_connections(&mut r, node);
        if let Some(slot) = r.nodes.get_mut(&node) {
            slot.alive = false;
            slot.queue.clear();
            if let Some(w) = slot.waker.take() {
                w.wake();
            }
        }
    }

    /// Closes the network at the end of a run: in-flight messages are dropped and the
    /// delivery task ends, so it does not outlive the runtime (a pending madsim task left at
    /// runtime drop leaks, with everything it holds, through the executor's queue).
    pub fn close(&self) {
        lock(&self.inner).close();
    }

    /// Whether `node` is currently registered.
    #[must_use]
    pub fn is_registered(&self, node: NodeId) -> bool {
        lock(&self.inner).alive_incarnation(node).is_some()
    }

    /// Sends `msg` on the directed link `from → to` and returns its sequence number. Like a
    /// TCP write it never reports failure: a message that will not arrive is simply dropped
    /// (see the module doc), and the caller's request timeout handles it.
    pub fn send(&self, from: NodeId, to: NodeId, msg: M) -> u64 {
        self.send_at(from, to, msg, Instant::now())
    }

    /// [`Self::send`] for a caller that has read the madsim time already: `now` must be the
    /// current madsim time (it does not move while a task runs).
    pub fn send_at(&self, from: NodeId, to: NodeId, msg: M, now: Instant) -> u64 {
        let bytes = msg.wire_size() as u64;
        let kind = KindKey::new(msg.kind(), from, to);
        let partitions = msg.partitions() as u64;
        let mut guard = lock(&self.inner);
        let r = &mut *guard;
        let seq = r.next_seq;
        r.next_seq += 1;
        let env = Envelope {
            seq,
            from,
            to,
            sent_at: now,
            msg,
        };
        r.count((from, to), kind, |s| {
            s.sent += 1;
            s.bytes_sent += bytes;
            s.partitions_sent += partitions;
        });
        r.record(&env, now, NetEventKind::Sent { bytes });
        let (Some(from_incarnation), Some(to_incarnation)) =
            (r.alive_incarnation(from), r.alive_incarnation(to))
        else {
            r.drop_msg(&env, kind, DropReason::ConnectionReset, now);
            return seq;
        };
        if r.faults.is_partitioned(from, to) {
            r.drop_msg(&env, kind, DropReason::Partitioned, now);
            return seq;
        }
        let mut rng = madsim::rand::thread_rng();
        if r.config.packet_loss_rate > 0.0 && rng.gen_bool(r.config.packet_loss_rate) {
            r.drop_msg(&env, kind, DropReason::Lost, now);
            return seq;
        }
        let latency = r
            .config
            .latency_for(from.cluster, to.cluster)
            .sample(&mut rng)
            + r.faults.spike_extra(from, to, now);
        // FIFO per link: never before the link's last delivery (one look-up reads and sets).
        let clock = r.link_clock.get_or_insert_with(&(from, to), || now);
        let at = (now + latency).max(*clock);
        *clock = at;
        r.schedule(
            at,
            InFlight {
                env,
                from_incarnation,
                to_incarnation,
                bytes,
                kind,
            },
        );
        seq
    }

    /// Drops every message from side `a` to side `b` (per `direction`) until healed.
    pub fn partition(&self, a: NodeSet, b: NodeSet, direction: Direction) -> FaultId {
        lock(&self.inner)
            .faults
            .add_partition(LinkSet { a, b, direction })
    }

    /// Cuts `node` off from every other node, both ways.
    pub fn isolate(&self, node: NodeId) -> FaultId {
        let others = NodeSet::AllExcept([node].into());
        self.partition(NodeSet::node(node), others, Direction::Both)
    }

    /// Removes one partition or latency spike; false if it was not active.
    pub fn heal(&self, id: FaultId) -> bool {
        lock(&self.inner).faults.remove(id)
    }

    /// Ends every link fault: partitions, spikes and packet loss are removed and clogged
    /// links are released. The switch into a run's liveness phase.
    pub fn heal_all(&self) {
        let mut r = lock(&self.inner);
        r.faults.clear_partitions_and_spikes();
        r.config.packet_loss_rate = 0.0;
        let now = Instant::now();
        for (from, to) in r.faults.clogged_links() {
            r.faults.unclog(from, to);
            r.release(from, to, now);
        }
    }

    /// Stalls the directed link `from → to`: messages reaching it wait, in order.
    pub fn clog(&self, from: NodeId, to: NodeId) {
        lock(&self.inner).faults.clog(from, to);
    }

    /// Un-stalls `from → to` and delivers its held messages now, in order (each still
    /// subject to partitions and crashes).
    pub fn unclog(&self, from: NodeId, to: NodeId) {
        let mut r = lock(&self.inner);
        if r.faults.unclog(from, to) {
            r.release(from, to, Instant::now());
        }
    }

    /// Adds `extra` latency to messages sent on `links` until `until` (the largest of
    /// overlapping spikes applies). FIFO order is kept, so later messages queue behind.
    pub fn latency_spike(&self, links: LinkSet, extra: Duration, until: Instant) -> FaultId {
        lock(&self.inner).faults.add_spike(links, extra, until)
    }

    /// Sets the probability (clamped to `[0, 1]`) that a sent message is lost.
    pub fn packet_loss(&self, rate: f64) {
        lock(&self.inner).config.packet_loss_rate = rate.clamp(0.0, 1.0);
    }

    /// Sets the latency distribution of messages from cluster `from` to cluster `to`.
    pub fn set_latency(&self, from: ClusterIdx, to: ClusterIdx, dist: LatencyDist) {
        lock(&self.inner).config.per_pair.insert((from, to), dist);
    }

    /// Per-link and per-kind counters so far.
    #[must_use]
    pub fn stats(&self) -> NetStats {
        let r = lock(&self.inner);
        NetStats {
            links: r.stats.iter().map(|(k, v)| (*k, *v)).collect(),
            kinds: r.kinds.iter().map(|(k, v)| (*k, *v)).collect(),
        }
    }

    /// Messages in flight or held on clogged links.
    #[must_use]
    pub fn in_flight(&self) -> usize {
        let r = lock(&self.inner);
        r.queue.len() + r.held.values().map(|h| h.len()).sum::<usize>()
    }

    /// Simulated time since the network was created (the world's start), for trace stamps.
    #[must_use]
    pub fn elapsed(&self) -> Duration {
        Instant::now() - lock(&self.inner).start
    }

    /// Starts (or stops and discards) recording [`NetEvent`]s for the verbose trace.
    pub fn record_events(&self, on: bool) {
        lock(&self.inner).events = on.then(Vec::new);
    }

    /// Takes the events recorded since the last call.
    pub fn take_events(&self) -> Vec<NetEvent> {
        lock(&self.inner)
            .events
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }
}

/// Forgets FIFO floors of `node`'s links (a new connection starts empty) and drops messages
/// held on its clogged links.
fn reset_connections<M>(r: &mut Router<M>, node: NodeId) {
    r.link_clock.retain(|(a, b), _| *a != node && *b != node);
    let stale: Vec<_> = r
        .held
        .keys()
        .filter(|(a, b)| *a == node || *b == node)
        .copied()
        .collect();
    let now = Instant::now();
    for link in stale {
        for msg in r.held.remove(&link).unwrap_or_default() {
            r.drop_msg(&msg.env, msg.kind, DropReason::ConnectionReset, now);
        }
    }
}

/// The receiving end of one node incarnation. Single consumer; `recv` is cancel-safe, so it
/// can sit in a `select!` beside timers.
pub struct Inbox<M> {
    router: Arc<Mutex<Router<M>>>,
    node: NodeId,
    incarnation: u64,
}

impl<M> Inbox<M> {
    /// The node this inbox belongs to.
    #[must_use]
    pub fn node(&self) -> NodeId {
        self.node
    }

    /// The next message, or `None` once this incarnation is unregistered or replaced.
    pub async fn recv(&mut self) -> Option<Envelope<M>> {
        poll_fn(|cx| self.poll_recv(cx)).await
    }

    /// The next already-delivered message, without waiting.
    pub fn try_recv(&mut self) -> Option<Envelope<M>> {
        let mut r = lock(&self.router);
        let slot = r.nodes.get_mut(&self.node)?;
        if !slot.alive || slot.incarnation != self.incarnation {
            return None;
        }
        slot.queue.pop_front()
    }

    fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<Envelope<M>>> {
        let mut r = lock(&self.router);
        let Some(slot) = r.nodes.get_mut(&self.node) else {
            return Poll::Ready(None);
        };
        if !slot.alive || slot.incarnation != self.incarnation {
            return Poll::Ready(None);
        }
        if let Some(env) = slot.queue.pop_front() {
            return Poll::Ready(Some(env));
        }
        slot.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}
