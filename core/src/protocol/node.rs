//! Addresses of simulated nodes. Brokers address each other and other clusters' brokers by
//! [`NodeId`]; the simulator maps ids to its nodes and to human names (`src-1`, `dst-ctl`).

use std::fmt;

use crate::types::BrokerId;

/// Index of a cluster in the world (0 = the first cluster declared).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ClusterIdx(pub u16);

/// What a node is within its cluster.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NodeRole {
    /// The cluster's (single, KRaft) controller.
    Controller,
    /// A broker.
    Broker(BrokerId),
    /// A client process (producer, consumer or admin) attached to the cluster.
    Client(u32),
}

/// A node of the simulated world.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId {
    /// The cluster the node belongs to.
    pub cluster: ClusterIdx,
    /// Its role there.
    pub role: NodeRole,
}

impl NodeId {
    /// The controller of `cluster`.
    #[must_use]
    pub fn controller(cluster: ClusterIdx) -> Self {
        Self {
            cluster,
            role: NodeRole::Controller,
        }
    }

    /// Broker `id` of `cluster`.
    #[must_use]
    pub fn broker(cluster: ClusterIdx, id: BrokerId) -> Self {
        Self {
            cluster,
            role: NodeRole::Broker(id),
        }
    }

    /// Client `n` attached to `cluster`.
    #[must_use]
    pub fn client(cluster: ClusterIdx, n: u32) -> Self {
        Self {
            cluster,
            role: NodeRole::Client(n),
        }
    }

    /// The broker id, if this is a broker.
    #[must_use]
    pub fn broker_id(&self) -> Option<BrokerId> {
        match self.role {
            NodeRole::Broker(b) => Some(b),
            _ => None,
        }
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.role {
            NodeRole::Controller => write!(f, "c{}-ctl", self.cluster.0),
            NodeRole::Broker(b) => write!(f, "c{}-{}", self.cluster.0, b.0),
            NodeRole::Client(n) => write!(f, "c{}-client{n}", self.cluster.0),
        }
    }
}

/// Correlates a response with its request (Kafka's `correlationId`), unique per sender.
pub type CorrelationId = u64;
