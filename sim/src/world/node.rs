//! The node driver: the only code that awaits on behalf of a sans-I/O node (style §2).
//!
//! One madsim task per node incarnation loops:
//! 1. drain `poll_output` (lock, take one output, unlock, then act on it): sends go to the
//!    [`Network`](crate::net::Network), disk operations to the node's `SimDisk`, events to the
//!    trace and the observer, metadata records to the node's durable metadata log;
//! 2. wait for the earlier of the node's timer (`poll_timeout`) and its inbox, with a biased,
//!    deterministic choice: a due timer first, then the inbox;
//! 3. call `handle_timeout` or `handle_message` with the world time.
//!
//! A disk error halts the node, as Kafka halts when its only log directory fails.

use std::collections::BTreeMap;
use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::Poll;

use bytes::Bytes;
use mirror_core::broker::{IoOp, Message, Node, Output};
use mirror_core::protocol::metadata::MetadataRecord;
use mirror_core::protocol::{CorrelationId, NodeId};
use mirror_core::time::Instant;

use super::World;
use super::clock::{SimClock, TimerOwner, sleep_exact};
use crate::disk::{DiskError, SimDisk};
use crate::net::{Envelope, Inbox, Kind, MessageKind, Part, WireSize};

/// What travels on the simulated network: a core message and its correlation id.
#[derive(Clone, Debug, PartialEq)]
pub struct Wire {
    /// Correlation id (the requester's, echoed by the response).
    pub id: CorrelationId,
    /// The message.
    pub message: Message,
}

impl WireSize for Wire {
    /// A fixed estimate: messages are not serialized in the simulation, and the byte
    /// counters only feed statistics.
    fn wire_size(&self) -> usize {
        std::mem::size_of::<Wire>()
    }
}

impl MessageKind for Wire {
    /// The API and part, for the network's per-kind counters (`mirrorsim bench`).
    fn kind(&self) -> Kind {
        use crate::trace::message::{api, response_api};
        use mirror_core::protocol::Response;
        match &self.message {
            Message::Request(r) => Kind {
                api: api(r),
                part: Part::Request,
            },
            Message::Response(r) => {
                let empty = matches!(r, Response::Fetch { error, partitions, .. }
                    if error.is_ok()
                        && partitions.iter().all(|p| p.error.is_ok() && p.batches.is_empty()));
                Kind {
                    api: response_api(r),
                    part: if empty {
                        Part::EmptyResponse
                    } else {
                        Part::Response
                    },
                }
            }
        }
    }

    fn partitions(&self) -> usize {
        use mirror_core::protocol::{Request, Response};
        match &self.message {
            Message::Request(Request::Fetch { partitions, .. }) => partitions.len(),
            Message::Response(Response::Fetch { partitions, .. }) => partitions.len(),
            Message::Request(_) | Message::Response(_) => 0,
        }
    }
}

/// Everything a node factory gets to build one incarnation of a node.
#[derive(Clone, Debug, PartialEq)]
pub struct Boot {
    /// The node.
    pub id: NodeId,
    /// Its human name (`src-1`).
    pub name: String,
    /// 1 for the first start, +1 for every restart.
    pub incarnation: u64,
    /// World time of the start.
    pub now: Instant,
    /// What survived on its disk: every file's content (empty on the first start).
    pub disk_image: BTreeMap<String, Bytes>,
    /// Its durable metadata records (`PersistMetadata` outputs so far; controllers).
    pub metadata: Vec<(i64, MetadataRecord)>,
}

/// Builds a node incarnation from its durable state. Called on start and on every restart,
/// with no world lock held.
pub type Factory<N> = Arc<dyn Fn(&Boot) -> N + Send + Sync>;

/// Locks a mutex, ignoring poisoning: a poisoned lock means a task already panicked and the
/// run is failing, and the original panic is the one to report.
pub(crate) fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What the driver of one incarnation owns or shares with the world.
pub(super) struct Run<N> {
    pub(super) state: Arc<Mutex<N>>,
    pub(super) disk: Arc<Mutex<SimDisk>>,
    pub(super) metadata: Arc<Mutex<Vec<(i64, MetadataRecord)>>>,
    pub(super) inbox: Inbox<Wire>,
    pub(super) incarnation: u64,
}

/// What woke the driver.
enum Wake {
    Timer,
    Message(Envelope<Wire>),
    Closed,
}

/// Consecutive timer firings at one instant after which a node is declared stuck: its
/// `poll_timeout` stays at or before `now` whatever `handle_timeout` does.
const MAX_TIMER_SPINS: u32 = 10_000;

/// The driver task of node `id`: the init future of its madsim node.
pub(super) async fn drive<N: Node + Send + 'static>(world: World<N>, id: NodeId) {
    let Some(mut run) = world.take_run(id) else {
        return;
    };
    let clock = world.clock();
    let mut spins = (Instant::ZERO, 0u32);
    // World time as of the last wake: madsim's time moves only while every task waits, so it
    // holds until the next await (reading madsim's clock costs a few hundred instructions).
    let mut now = clock.now();
    // Where this node's timer count sits (see `Timer::with_slot`).
    let mut timer_slot = usize::MAX;
    loop {
        if let Err(e) = drain(&world, id, &run) {
            world.halt(id, run.incarnation, &e);
            return;
        }
        let deadline = lock(&run.state).poll_timeout();
        let owner = TimerOwner::Node(id);
        let wake = next_wake(
            &clock,
            &mut run.inbox,
            deadline,
            now,
            owner,
            &mut timer_slot,
        )
        .await;
        now = clock.now();
        match wake {
            Wake::Timer => {
                spins = if spins.0 == now {
                    (now, spins.1 + 1)
                } else {
                    (now, 1)
                };
                assert!(
                    spins.1 <= MAX_TIMER_SPINS,
                    "node_timer_progress: {} keeps a timer due at or before {now} after \
                     {MAX_TIMER_SPINS} handle_timeout calls",
                    world.node_name(id)
                );
                lock(&run.state).handle_timeout(now);
            }
            Wake::Message(env) => {
                let Wire { id: cid, message } = env.msg;
                lock(&run.state).handle_message(now, env.from, cid, message);
            }
            // Unregistered: the node crashed or halted, and madsim drops this task.
            Wake::Closed => return,
        }
    }
}

/// Processes every pending output, without holding the node lock while acting on one.
fn drain<N: Node + Send + 'static>(
    world: &World<N>,
    id: NodeId,
    run: &Run<N>,
) -> Result<(), DiskError> {
    loop {
        let out = lock(&run.state).poll_output();
        let Some(out) = out else {
            return Ok(());
        };
        match out {
            Output::Send {
                to,
                id: cid,
                message,
            } => world.send(id, to, cid, message),
            Output::Io(op) => apply_io(&mut lock(&run.disk), &op)?,
            Output::Event(event) => world.node_event(id, &event),
            Output::PersistMetadata { offset, record } => {
                lock(&run.metadata).push((offset, record));
            }
        }
    }
}

/// Performs one disk operation.
pub(super) fn apply_io(disk: &mut SimDisk, op: &IoOp) -> Result<(), DiskError> {
    match op {
        IoOp::Append { path, bytes } => disk.append(path, bytes),
        IoOp::Truncate { path, len } => disk.truncate(path, *len),
        IoOp::Flush { path } => disk.flush(path),
        IoOp::WriteAtomic { path, bytes } => disk.write_atomic(path, bytes),
        // Kafka deletes files with `Files.deleteIfExists`: a missing file is not an error.
        IoOp::Delete { path } => match disk.delete(path) {
            Err(DiskError::NotFound { .. }) => Ok(()),
            other => other,
        },
    }
}

/// Waits for the node's timer or its inbox (`now` is the current world time; the timer is
/// counted for `owner`, trying its slot hint first and leaving the slot found there). Biased: a timer already due wins without
/// waiting; otherwise the timer is polled before the inbox, so a tie goes to the timer.
async fn next_wake(
    clock: &SimClock,
    inbox: &mut Inbox<Wire>,
    deadline: Option<Instant>,
    now: Instant,
    owner: TimerOwner,
    slot: &mut usize,
) -> Wake {
    if deadline.is_some_and(|d| d <= now) {
        return Wake::Timer;
    }
    let mut sleep = deadline.map(|d| sleep_exact(clock.to_sim(d), owner).with_slot(*slot));
    let mut recv = pin!(inbox.recv());
    let wake = poll_fn(|cx| {
        if let Some(s) = sleep.as_mut()
            && Pin::new(s).poll(cx).is_ready()
        {
            return Poll::Ready(Wake::Timer);
        }
        recv.as_mut().poll(cx).map(|m| match m {
            Some(env) => Wake::Message(env),
            None => Wake::Closed,
        })
    })
    .await;
    if let Some(s) = &sleep {
        *slot = s.slot();
    }
    wake
}
