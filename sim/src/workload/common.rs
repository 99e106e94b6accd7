//! Plumbing shared by the client nodes: a seeded PRNG, the in-flight request table (with
//! `request.timeout.ms`), the output queue, and Kafka's error classification.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use mirror_core::broker::{Event, Message, Output};
use mirror_core::protocol::{ClusterIdx, CorrelationId, ErrorCode, NodeId, Request};
use mirror_core::time::Instant;
use mirror_core::types::BrokerId;

/// splitmix64: the only source of randomness of a client (seeded from its config).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    #[must_use]
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub fn next_f64(&mut self) -> f64 {
        // 53 random mantissa bits; the casts are exact.
        #[allow(clippy::cast_precision_loss)]
        let v = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        v
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        assert!(n > 0, "rng_below_zero");
        usize::try_from(self.next_u64() % (n as u64)).unwrap_or(0)
    }
}

/// A request waiting for its response.
#[derive(Clone, Debug)]
struct Pending<T> {
    to: BrokerId,
    deadline: Instant,
    tag: T,
}

/// The client's side of the wire: correlation ids, in-flight requests with their deadline
/// (`request.timeout.ms`), and the ordered output queue the driver drains.
#[derive(Clone, Debug)]
pub(crate) struct Wire<T> {
    cluster: ClusterIdx,
    next_id: CorrelationId,
    pending: BTreeMap<CorrelationId, Pending<T>>,
    /// `pending`'s (deadline, id) pairs, so the earliest deadline and the expired requests
    /// are found without a pass over every in-flight request.
    deadlines: BTreeSet<(Instant, CorrelationId)>,
    out: VecDeque<Output>,
    pub(crate) request_timeout_ms: i64,
}

impl<T: Clone> Wire<T> {
    pub(crate) fn new(cluster: ClusterIdx, request_timeout_ms: i64) -> Self {
        Self {
            cluster,
            next_id: 1,
            pending: BTreeMap::new(),
            deadlines: BTreeSet::new(),
            out: VecDeque::new(),
            request_timeout_ms,
        }
    }

    /// Sends `req` to broker `to`, expecting a response tagged `tag`.
    pub(crate) fn send(
        &mut self,
        now: Instant,
        to: BrokerId,
        req: Request,
        tag: T,
    ) -> CorrelationId {
        let id = self.send_untracked(to, req);
        let deadline = now.plus_millis(self.request_timeout_ms);
        self.deadlines.insert((deadline, id));
        let earlier = self.pending.insert(id, Pending { to, deadline, tag });
        assert!(
            earlier.is_none(),
            "wire_ids_unique: correlation id {id} reused"
        );
        id
    }

    /// Sends a request whose response is not awaited (acks=0 produce).
    pub(crate) fn send_untracked(&mut self, to: BrokerId, req: Request) -> CorrelationId {
        let id = self.next_id;
        self.next_id += 1;
        self.out.push_back(Output::Send {
            to: NodeId::broker(self.cluster, to),
            id,
            message: Message::Request(req),
        });
        id
    }

    /// The tag of the request `id` answered by `from`, removing it (`None` for unknown,
    /// timed-out or misaddressed responses).
    pub(crate) fn take(&mut self, from: NodeId, id: CorrelationId) -> Option<(BrokerId, T)> {
        let p = self.pending.get(&id)?;
        if from != NodeId::broker(self.cluster, p.to) {
            return None;
        }
        let p = self.pending.remove(&id)?;
        self.deadlines.remove(&(p.deadline, id));
        Some((p.to, p.tag))
    }

    /// Requests whose deadline passed, removed (Kafka: the request times out and the
    /// connection is dropped; a late response is ignored).
    pub(crate) fn expire(&mut self, now: Instant) -> Vec<(BrokerId, T)> {
        let mut due: Vec<CorrelationId> = Vec::new();
        while let Some(&(deadline, id)) = self.deadlines.first()
            && deadline <= now
        {
            self.deadlines.pop_first();
            due.push(id);
        }
        // In id order, as a pass over `pending` gives them.
        due.sort_unstable();
        due.into_iter()
            .filter_map(|id| self.pending.remove(&id))
            .map(|p| (p.to, p.tag))
            .collect()
    }

    /// Forgets every in-flight request (a stopped client ignores late responses).
    pub(crate) fn clear(&mut self) {
        self.pending.clear();
        self.deadlines.clear();
    }

    /// Keeps only the in-flight requests whose tag matches.
    pub(crate) fn retain(&mut self, f: impl Fn(&T) -> bool) {
        let deadlines = &mut self.deadlines;
        self.pending.retain(|id, p| {
            let keep = f(&p.tag);
            if !keep {
                deadlines.remove(&(p.deadline, *id));
            }
            keep
        });
    }

    /// The earliest request deadline.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.deadlines.first().map(|(deadline, _)| *deadline)
    }

    /// True if some in-flight request's tag matches.
    pub(crate) fn any(&self, f: impl Fn(&T) -> bool) -> bool {
        self.pending.values().any(|p| f(&p.tag))
    }

    /// Reports an event.
    pub(crate) fn emit(&mut self, e: Event) {
        self.out.push_back(Output::Event(e));
    }

    /// Outputs waiting to be drained.
    pub(crate) fn queued(&self) -> usize {
        self.out.len()
    }

    /// Next output.
    pub(crate) fn pop(&mut self) -> Option<Output> {
        self.out.pop_front()
    }
}

/// Kafka's `RetriableException` subclasses among the codes the model uses.
#[must_use]
pub fn is_retriable(e: ErrorCode) -> bool {
    use ErrorCode::*;
    matches!(
        e,
        CorruptMessage
            | UnknownTopicOrPartition
            | NotLeaderOrFollower
            | RequestTimedOut
            | CoordinatorLoadInProgress
            | CoordinatorNotAvailable
            | NotCoordinator
            | NotEnoughReplicas
            | NotEnoughReplicasAfterAppend
            | FencedLeaderEpoch
            | UnknownLeaderEpoch
            | OffsetNotAvailable
            | KafkaStorageError
            | LeaderNotAvailable
            | NotController
            | ConcurrentTransactions
    )
}

/// Errors after which Kafka clients refresh metadata (`InvalidMetadataException`
/// subclasses, and timeouts).
#[must_use]
pub fn invalidates_metadata(e: ErrorCode) -> bool {
    use ErrorCode::*;
    matches!(
        e,
        UnknownTopicOrPartition
            | NotLeaderOrFollower
            | FencedLeaderEpoch
            | UnknownLeaderEpoch
            | KafkaStorageError
            | LeaderNotAvailable
            | RequestTimedOut
            | OffsetNotAvailable
    )
}

/// Coordinator errors after which the coordinator is looked up again.
#[must_use]
pub fn needs_new_coordinator(e: ErrorCode) -> bool {
    matches!(
        e,
        ErrorCode::NotCoordinator | ErrorCode::CoordinatorNotAvailable | ErrorCode::RequestTimedOut
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_is_deterministic_and_in_range() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
            let f = a.next_f64();
            assert!((0.0..1.0).contains(&f));
            assert_eq!(b.next_f64(), f);
            assert!(a.below(3) < 3);
            b.below(3);
        }
        assert_ne!(Rng::new(1).next_u64(), Rng::new(2).next_u64());
    }
}
