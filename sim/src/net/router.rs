//! The shared network state and the single delivery task.
//!
//! Every in-flight message sits in one queue ordered by `(deliver_at, seq)`. One madsim task
//! (the pump) sleeps until the head's deadline, delivers everything due, and sleeps again; a
//! send that lands before the current head kicks it awake. One task per world, not one per
//! message, keeps the cost per message at a heap push and pop (product §9).

use std::collections::{BTreeMap, VecDeque};
use std::future::{Future, poll_fn};
use std::sync::{Mutex, MutexGuard, PoisonError, Weak};
use std::task::{Poll, Waker};

use madsim::time::Instant;
use mirror_core::keyed_map::KeyedMap;
use mirror_core::protocol::NodeId;

use super::due::DueQueue;
use super::links::{LinkFaults, NetConfig};
use super::{DropReason, Envelope, KindKey, LinkStats, NetEvent, NetEventKind};
use crate::world::clock::{TimerOwner, sleep_exact};

/// A registered (or formerly registered) node.
pub(super) struct NodeSlot<M> {
    /// Bumped by every `register`: messages carry the incarnation they were addressed to.
    pub(super) incarnation: u64,
    pub(super) alive: bool,
    pub(super) queue: VecDeque<Envelope<M>>,
    pub(super) waker: Option<Waker>,
}

/// A message between send and delivery, with the incarnations of both ends at send time:
/// if either end has crashed since, the "TCP connection" it travelled on is gone.
pub(super) struct InFlight<M> {
    pub(super) env: Envelope<M>,
    pub(super) from_incarnation: u64,
    pub(super) to_incarnation: u64,
    pub(super) bytes: u64,
    /// Classified once at send, so delivery and drops count it without matching again.
    pub(super) kind: KindKey,
}

/// Everything behind the `Network` handle's mutex. madsim runs one task at a time, so the
/// lock is never contended; it exists so that handles are `Send` for `madsim::task::spawn`.
pub(super) struct Router<M> {
    pub(super) config: NetConfig,
    pub(super) faults: LinkFaults,
    pub(super) nodes: KeyedMap<NodeId, NodeSlot<M>>,
    pub(super) queue: DueQueue<Instant, InFlight<M>>,
    /// Last scheduled delivery per directed link: the FIFO floor for the next message.
    pub(super) link_clock: KeyedMap<(NodeId, NodeId), Instant>,
    /// Messages that reached a clogged link, in link order.
    pub(super) held: BTreeMap<(NodeId, NodeId), VecDeque<InFlight<M>>>,
    pub(super) stats: KeyedMap<(NodeId, NodeId), LinkStats>,
    pub(super) kinds: KeyedMap<KindKey, LinkStats>,
    pub(super) events: Option<Vec<NetEvent>>,
    pub(super) next_seq: u64,
    pub(super) start: Instant,
    pump_waker: Option<Waker>,
    pump_kicked: bool,
    /// Set by [`Network::close`](super::Network::close): the pump returns at its next wake.
    pub(super) closed: bool,
}

impl<M> Router<M> {
    pub(super) fn new(config: NetConfig, start: Instant) -> Self {
        Self {
            config,
            faults: LinkFaults::default(),
            nodes: KeyedMap::new(),
            queue: DueQueue::default(),
            link_clock: KeyedMap::new(),
            held: BTreeMap::new(),
            stats: KeyedMap::new(),
            kinds: KeyedMap::new(),
            events: None,
            next_seq: 0,
            start,
            pump_waker: None,
            pump_kicked: false,
            closed: false,
        }
    }

    /// Whether `node`'s current incarnation is registered.
    pub(super) fn alive_incarnation(&self, node: NodeId) -> Option<u64> {
        self.nodes
            .get(&node)
            .filter(|s| s.alive)
            .map(|s| s.incarnation)
    }

    /// Ends the pump: it returns when it next runs, so no pending task (and no timer of it)
    /// outlives the run.
    pub(super) fn close(&mut self) {
        self.closed = true;
        self.queue.clear();
        self.held.clear();
        self.pump_kicked = true;
        if let Some(w) = self.pump_waker.take() {
            w.wake();
        }
    }

    /// Queues a message; wakes the pump if it now has an earlier deadline.
    pub(super) fn schedule(&mut self, at: Instant, msg: InFlight<M>) {
        let earlier = self.queue.first_due().is_none_or(|head| at < head);
        let seq = msg.env.seq;
        self.queue.push(at, seq, msg);
        if earlier {
            self.pump_kicked = true;
            if let Some(w) = self.pump_waker.take() {
                w.wake();
            }
        }
    }

    /// Delivers every message due at `now`, in (deadline, seq) order.
    pub(super) fn deliver_due(&mut self, now: Instant) {
        while let Some(msg) = self.queue.pop_due(now) {
            self.arrive(msg, now);
        }
    }

    /// A message reaches its destination's link end: checks are made at delivery time too,
    /// so a partition or crash that happens while it is in flight still drops it.
    pub(super) fn arrive(&mut self, msg: InFlight<M>, now: Instant) {
        let (from, to) = (msg.env.from, msg.env.to);
        let reason = if self.alive_incarnation(to) != Some(msg.to_incarnation)
            || self.alive_incarnation(from) != Some(msg.from_incarnation)
        {
            Some(DropReason::ConnectionReset)
        } else if self.faults.is_partitioned(from, to) {
            Some(DropReason::Partitioned)
        } else {
            None
        };
        if let Some(reason) = reason {
            self.drop_msg(&msg.env, msg.kind, reason, now);
            return;
        }
        if self.faults.is_clogged(from, to) {
            self.record(&msg.env, now, NetEventKind::Held);
            self.held.entry((from, to)).or_default().push_back(msg);
            return;
        }
        let bytes = msg.bytes;
        self.count((from, to), msg.kind, |s| {
            s.delivered += 1;
            s.bytes_delivered += bytes;
        });
        self.record(&msg.env, now, NetEventKind::Delivered);
        let slot = self
            .nodes
            .get_mut(&to)
            .expect("net_slot_exists: checked alive above");
        slot.queue.push_back(msg.env);
        if let Some(w) = slot.waker.take() {
            w.wake();
        }
    }

    /// Releases a clogged link's held messages in order, as a stalled TCP connection
    /// flushes its backlog.
    pub(super) fn release(&mut self, from: NodeId, to: NodeId, now: Instant) {
        for msg in self.held.remove(&(from, to)).unwrap_or_default() {
            self.arrive(msg, now);
        }
    }

    pub(super) fn drop_msg(
        &mut self,
        env: &Envelope<M>,
        kind: KindKey,
        reason: DropReason,
        now: Instant,
    ) {
        self.count((env.from, env.to), kind, |s| match reason {
            DropReason::Partitioned => s.dropped_partitioned += 1,
            DropReason::Lost => s.dropped_lost += 1,
            DropReason::ConnectionReset => s.dropped_reset += 1,
        });
        self.record(env, now, NetEventKind::Dropped(reason));
    }

    /// Applies `f` to the counters of `link` and of `kind`: both views count every message
    /// the same way, so their totals agree.
    pub(super) fn count(
        &mut self,
        link: (NodeId, NodeId),
        kind: KindKey,
        f: impl Fn(&mut LinkStats),
    ) {
        f(self.stats.get_or_insert_with(&link, LinkStats::default));
        f(self.kinds.get_or_insert_with(&kind, LinkStats::default));
    }

    pub(super) fn record(&mut self, env: &Envelope<M>, at: Instant, kind: NetEventKind) {
        if let Some(events) = &mut self.events {
            events.push(NetEvent {
                seq: env.seq,
                from: env.from,
                to: env.to,
                at,
                kind,
            });
        }
    }
}

/// Locks the shared router.
pub(super) fn lock<M>(m: &Mutex<Router<M>>) -> MutexGuard<'_, Router<M>> {
    // A poisoned lock means a task already panicked and the run is failing; keep going so
    // that the original panic is the one reported.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The delivery task. Holds only a `Weak`, so it ends once every handle is gone.
pub(super) async fn pump<M: 'static>(router: Weak<Mutex<Router<M>>>) {
    // Where the network's timer count sits (see `Timer::with_slot`).
    let mut timer_slot = usize::MAX;
    loop {
        let head = {
            let Some(r) = router.upgrade() else { return };
            let mut r = lock(&r);
            if r.closed {
                return;
            }
            r.deliver_due(Instant::now());
            r.pump_kicked = false;
            r.queue.first_due()
        };
        let mut sleep =
            head.map(|at| Box::pin(sleep_exact(at, TimerOwner::Network).with_slot(timer_slot)));
        poll_fn(|cx| {
            if let Some(s) = sleep.as_mut()
                && s.as_mut().poll(cx).is_ready()
            {
                return Poll::Ready(());
            }
            let Some(r) = router.upgrade() else {
                return Poll::Ready(());
            };
            let mut r = lock(&r);
            if r.pump_kicked {
                return Poll::Ready(());
            }
            r.pump_waker = Some(cx.waker().clone());
            Poll::Pending
        })
        .await;
        if let Some(s) = &sleep {
            timer_slot = s.slot();
        }
    }
}
