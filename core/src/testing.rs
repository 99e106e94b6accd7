//! A deterministic message loop for tests of sans-I/O nodes (`MiniNet`): every node is a
//! [`Node`], messages take a fixed latency, timers fire in time order, files are kept in
//! memory with no crash model. No simulator and no randomness: it tests broker and
//! controller rules together without the simulator (whose own tests cover the simulated
//! world). `C` is an extra node kind the caller hosts beside brokers and controllers (the
//! simulator's workload clients); [`NoClient`] when there is none.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;

use crate::broker::output::Event;
use crate::broker::{Broker, IoOp, Message, Node, Output};
use crate::controller::Controller;
use crate::protocol::metadata::MetadataRecord;
use crate::protocol::{CorrelationId, NodeId, Request, Response};
use crate::time::Instant;

/// No extra node kind: a loop of brokers and controllers only.
#[derive(Debug)]
pub enum NoClient {}

impl Node for NoClient {
    fn handle_message(&mut self, _: Instant, _: NodeId, _: CorrelationId, _: Message) {
        match *self {}
    }
    fn handle_timeout(&mut self, _: Instant) {
        match *self {}
    }
    fn poll_output(&mut self) -> Option<Output> {
        match *self {}
    }
    fn poll_timeout(&self) -> Option<Instant> {
        match *self {}
    }
}

/// In-flight message.
struct Envelope {
    from: NodeId,
    to: NodeId,
    id: CorrelationId,
    message: Message,
}

/// A node of the loop.
pub enum AnyNode<C = NoClient> {
    /// A broker.
    Broker(Box<Broker>),
    /// A controller.
    Controller(Box<Controller>),
    /// A caller-defined node (a workload client).
    Client(Box<C>),
}

impl<C: Node> AnyNode<C> {
    fn node(&mut self) -> &mut dyn Node {
        match self {
            AnyNode::Broker(b) => b.as_mut(),
            AnyNode::Controller(c) => c.as_mut(),
            AnyNode::Client(c) => c.as_mut(),
        }
    }

    fn node_ref(&self) -> &dyn Node {
        match self {
            AnyNode::Broker(b) => b.as_ref(),
            AnyNode::Controller(c) => c.as_ref(),
            AnyNode::Client(c) => c.as_ref(),
        }
    }
}

/// A node plus its durable state.
pub struct Slot<C = NoClient> {
    /// The node.
    pub node: AnyNode<C>,
    /// Files (no crash model here: everything written is kept).
    pub disk: BTreeMap<String, Bytes>,
    /// Metadata records the node persisted, with their offsets.
    pub metadata: Vec<(i64, MetadataRecord)>,
    /// False after [`MiniNet::crash`]: the node gets no messages and no timers.
    pub up: bool,
}

/// The loop.
pub struct MiniNet<C = NoClient> {
    /// Current time.
    pub now: Instant,
    /// One-way latency of every message.
    pub latency_us: u64,
    seq: u64,
    queue: BTreeMap<(Instant, u64), Envelope>,
    /// The nodes.
    pub slots: BTreeMap<NodeId, Slot<C>>,
    /// Every event, with its time and node.
    pub events: Vec<(Instant, NodeId, Event)>,
    /// Responses delivered to test clients, by correlation id.
    pub client_inbox: BTreeMap<(NodeId, CorrelationId), Response>,
    next_client_id: CorrelationId,
    /// Links that drop everything (from, to).
    pub cut: BTreeSet<(NodeId, NodeId)>,
}

impl<C: Node> Default for MiniNet<C> {
    fn default() -> Self {
        Self::new()
    }
}

impl<C: Node> MiniNet<C> {
    /// An empty loop at time zero with 1 ms latency.
    #[must_use]
    pub fn new() -> Self {
        Self {
            now: Instant::ZERO,
            latency_us: 1_000,
            seq: 0,
            queue: BTreeMap::new(),
            slots: BTreeMap::new(),
            events: Vec::new(),
            client_inbox: BTreeMap::new(),
            next_client_id: 1_000_000,
            cut: BTreeSet::new(),
        }
    }

    /// Adds a node (and drains what it emits at start).
    pub fn add(&mut self, id: NodeId, node: AnyNode<C>) {
        self.slots.insert(
            id,
            Slot {
                node,
                disk: BTreeMap::new(),
                metadata: Vec::new(),
                up: true,
            },
        );
        self.drain(id);
    }

    /// Replaces a node (restart) keeping its disk.
    pub fn replace(&mut self, id: NodeId, node: AnyNode<C>) {
        let slot = self.slots.get_mut(&id).expect("known node");
        slot.node = node;
        slot.up = true;
        self.drain(id);
    }

    /// The broker at `id`.
    pub fn broker(&self, id: NodeId) -> &Broker {
        match &self.slots[&id].node {
            AnyNode::Broker(b) => b,
            _ => panic!("{id} is not a broker"),
        }
    }

    /// The controller at `id`.
    pub fn controller(&self, id: NodeId) -> &Controller {
        match &self.slots[&id].node {
            AnyNode::Controller(c) => c,
            _ => panic!("{id} is not a controller"),
        }
    }

    /// The client at `id`.
    pub fn client(&self, id: NodeId) -> &C {
        match &self.slots[&id].node {
            AnyNode::Client(c) => c,
            _ => panic!("{id} is not a client"),
        }
    }

    /// Mutates the client at `id`, then drains its outputs.
    pub fn with_client<R>(&mut self, id: NodeId, f: impl FnOnce(&mut C) -> R) -> R {
        let r = match &mut self.slots.get_mut(&id).expect("known node").node {
            AnyNode::Client(c) => f(c),
            _ => panic!("{id} is not a client"),
        };
        self.drain(id);
        r
    }

    /// Events of node `id`, in order.
    #[must_use]
    pub fn events_of(&self, id: NodeId) -> Vec<Event> {
        self.events
            .iter()
            .filter(|(_, n, _)| *n == id)
            .map(|(_, _, e)| e.clone())
            .collect()
    }

    /// Stops delivering to `id` (its disk stays for [`MiniNet::replace`]).
    pub fn crash(&mut self, id: NodeId) {
        if let Some(s) = self.slots.get_mut(&id) {
            s.up = false;
        }
    }

    fn send(&mut self, from: NodeId, to: NodeId, id: CorrelationId, message: Message) {
        if self.cut.contains(&(from, to)) {
            return;
        }
        self.seq += 1;
        let at = self.now.plus_micros(self.latency_us);
        self.queue.insert(
            (at, self.seq),
            Envelope {
                from,
                to,
                id,
                message,
            },
        );
    }

    fn drain(&mut self, id: NodeId) {
        loop {
            let Some(slot) = self.slots.get_mut(&id) else {
                return;
            };
            let Some(out) = slot.node.node().poll_output() else {
                return;
            };
            match out {
                Output::Send {
                    to,
                    id: cid,
                    message,
                } => self.send(id, to, cid, message),
                Output::Io(op) => apply_io(&mut slot.disk, op),
                Output::Event(e) => self.events.push((self.now, id, e)),
                Output::PersistMetadata { offset, record } => slot.metadata.push((offset, record)),
            }
        }
    }

    /// A test client sends a request; the response lands in `client_inbox`.
    pub fn request(&mut self, client: NodeId, to: NodeId, req: Request) -> CorrelationId {
        self.next_client_id += 1;
        let id = self.next_client_id;
        self.send(client, to, id, Message::Request(req));
        id
    }

    /// The response to a [`MiniNet::request`], once delivered.
    pub fn take_response(&mut self, client: NodeId, id: CorrelationId) -> Option<Response> {
        self.client_inbox.remove(&(client, id))
    }

    /// Runs in steps of `step_ms` until `client` holds the answer to `id`, for at most
    /// `limit_ms`: the answer and the milliseconds run, which tell when it came.
    pub fn wait_for_response(
        &mut self,
        client: NodeId,
        id: CorrelationId,
        step_ms: i64,
        limit_ms: i64,
    ) -> Option<(i64, Response)> {
        let mut waited_ms = 0;
        while waited_ms < limit_ms {
            self.run_for_ms(step_ms);
            waited_ms += step_ms;
            if let Some(r) = self.take_response(client, id) {
                return Some((waited_ms, r));
            }
        }
        None
    }

    /// Runs until `until`, delivering messages and firing timers in time order.
    pub fn run_until(&mut self, until: Instant) {
        loop {
            let next_msg = self.queue.keys().next().map(|k| k.0);
            let next_timer = self
                .slots
                .iter()
                .filter(|(_, s)| s.up)
                .filter_map(|(id, s)| s.node.node_ref().poll_timeout().map(|t| (t, *id)))
                .min();
            let next = match (next_msg, next_timer) {
                (Some(m), Some((t, _))) => m.min(t),
                (Some(m), None) => m,
                (None, Some((t, _))) => t,
                (None, None) => break,
            };
            if next > until {
                break;
            }
            self.now = self.now.max(next);
            if next_msg == Some(next) {
                let (_, env) = self.queue.pop_first().expect("message");
                match self.slots.get_mut(&env.to) {
                    Some(slot) if slot.up => {
                        slot.node
                            .node()
                            .handle_message(self.now, env.from, env.id, env.message);
                        self.drain(env.to);
                    }
                    Some(_) => {}
                    None => {
                        if let Message::Response(r) = env.message {
                            self.client_inbox.insert((env.to, env.id), r);
                        }
                    }
                }
            } else if let Some((_, id)) = next_timer {
                let slot = self.slots.get_mut(&id).expect("timer node");
                slot.node.node().handle_timeout(self.now);
                self.drain(id);
            }
        }
        self.now = self.now.max(until);
    }

    /// Runs for `ms` milliseconds.
    pub fn run_for_ms(&mut self, ms: i64) {
        let until = self.now.plus_millis(ms);
        self.run_until(until);
    }
}

fn apply_io(disk: &mut BTreeMap<String, Bytes>, op: IoOp) {
    match op {
        IoOp::Append { path, bytes } => {
            let mut v = disk.get(&path).map(|b| b.to_vec()).unwrap_or_default();
            v.extend_from_slice(&bytes);
            disk.insert(path, Bytes::from(v));
        }
        IoOp::Truncate { path, len } => {
            if let Some(b) = disk.get(&path) {
                let cut = b.slice(..usize::try_from(len).unwrap_or(usize::MAX).min(b.len()));
                disk.insert(path, cut);
            }
        }
        IoOp::Flush { .. } => {}
        IoOp::WriteAtomic { path, bytes } => {
            disk.insert(path, bytes);
        }
        IoOp::Delete { path } => {
            disk.remove(&path);
        }
    }
}
