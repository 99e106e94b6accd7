//! Message kinds for the network's counters: what a message is ([`MessageKind`]) and which
//! kind of connection carries it ([`Route`]). `mirrorsim bench` reports messages per
//! simulated second by kind because messages are what a madsim world's floor is made of: a
//! kind Kafka would not send is the only cost that no optimisation of the model removes.

use mirror_core::protocol::{NodeId, NodeRole};

/// How the network's per-kind counters name a message.
pub trait MessageKind {
    /// Its API and part. The default suits payloads that are all alike (tests, the bench's
    /// floor world).
    fn kind(&self) -> Kind {
        Kind {
            api: "message",
            part: Part::Other,
        }
    }

    /// Partition entries it carries (a fetch request's or response's partitions), for the
    /// counters: a follower's fetch names every partition it follows from that leader, so
    /// this, not the message count, is what grows with the number of partitions.
    fn partitions(&self) -> usize {
        0
    }
}

/// What a message is, for the counters: fixed strings and enums, so classifying a message
/// allocates nothing and its counter key compares cheaply.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Kind {
    /// Kafka's API name for a request, the response variant for a response (one variant,
    /// `PartitionErrors`, answers several APIs).
    pub api: &'static str,
    /// Request or response.
    pub part: Part,
}

/// Which half of an exchange a message is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Part {
    /// A request.
    Request,
    /// A response carrying data (or an error).
    Response,
    /// A fetch response without a single batch and without an error: the answer to a long
    /// poll that timed out, the first kind a fetch session or a longer wait would save.
    EmptyResponse,
    /// Not a Kafka message (tests, the bench's floor world).
    Other,
}

impl Part {
    /// Its name in `bench` output.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Part::Request => "request",
            Part::Response => "response",
            Part::EmptyResponse => "response, empty",
            Part::Other => "-",
        }
    }
}

impl MessageKind for Vec<u8> {}
impl MessageKind for bytes::Bytes {}
impl MessageKind for String {}
impl MessageKind for u64 {}

/// The connection a message travels on, from the roles and clusters of its two ends. It
/// tells one `Fetch` from another: a follower's (broker to broker), a consumer's (client)
/// and a mirror fetcher's (across clusters).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Route {
    /// Between two brokers of one cluster (replication, coordinators, markers).
    Broker,
    /// Between a broker and its cluster's controller (registration, heartbeats, metadata).
    Controller,
    /// Between the two clusters (the mirror's fetches and its admin calls).
    CrossCluster,
    /// To or from a client (producers, consumers, admin).
    Client,
}

impl Route {
    /// The route of a message from `from` to `to`. A client end wins over the clusters (a
    /// failed-over client talks to the other cluster), then the clusters, then the roles.
    #[must_use]
    pub fn of(from: NodeId, to: NodeId) -> Self {
        let client = |n: NodeId| matches!(n.role, NodeRole::Client(_));
        let controller = |n: NodeId| matches!(n.role, NodeRole::Controller);
        if client(from) || client(to) {
            Route::Client
        } else if from.cluster != to.cluster {
            Route::CrossCluster
        } else if controller(from) || controller(to) {
            Route::Controller
        } else {
            Route::Broker
        }
    }

    /// Its name in `bench` output.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Route::Broker => "broker",
            Route::Controller => "controller",
            Route::CrossCluster => "cross-cluster",
            Route::Client => "client",
        }
    }
}

/// The key of the per-kind counters: a message's kind and its route.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KindKey {
    /// [`MessageKind::kind`].
    pub kind: Kind,
    /// [`Route::of`] its ends.
    pub route: Route,
}

impl KindKey {
    /// The key of a message of `kind` from `from` to `to`.
    #[must_use]
    pub fn new(kind: Kind, from: NodeId, to: NodeId) -> Self {
        Self {
            kind,
            route: Route::of(from, to),
        }
    }
}
