//! [`SimNode`]: brokers, controllers and clients behind one type, so one world drives them.

use mirror_core::broker::{Broker, Message, Node, Output};
use mirror_core::controller::Controller;
use mirror_core::protocol::{CorrelationId, NodeId};
use mirror_core::time::Instant;

/// A node of a Kafka world.
pub enum SimNode {
    /// A broker.
    Broker(Box<Broker>),
    /// A controller.
    Controller(Box<Controller>),
    /// A workload client (producer, consumer, admin).
    Client(Box<crate::workload::ClientNode>),
    /// Any other node (one-shot request clients, test nodes).
    Other(Box<dyn Node + Send>),
}

impl std::fmt::Debug for SimNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SimNode::Broker(b) => write!(f, "Broker({})", b.node_id()),
            SimNode::Controller(_) => write!(f, "Controller"),
            SimNode::Client(_) => write!(f, "Client"),
            SimNode::Other(_) => write!(f, "Other"),
        }
    }
}

impl SimNode {
    fn inner(&mut self) -> &mut dyn Node {
        match self {
            SimNode::Broker(b) => b.as_mut(),
            SimNode::Controller(c) => c.as_mut(),
            SimNode::Client(c) => c.as_mut(),
            SimNode::Other(c) => c.as_mut(),
        }
    }

    /// The broker, if this is one.
    #[must_use]
    pub fn as_broker(&self) -> Option<&Broker> {
        match self {
            SimNode::Broker(b) => Some(b),
            _ => None,
        }
    }

    /// The controller, if this is one.
    #[must_use]
    pub fn as_controller(&self) -> Option<&Controller> {
        match self {
            SimNode::Controller(c) => Some(c),
            _ => None,
        }
    }
}

impl Node for SimNode {
    fn handle_message(&mut self, now: Instant, from: NodeId, id: CorrelationId, message: Message) {
        self.inner().handle_message(now, from, id, message);
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.inner().handle_timeout(now);
    }

    fn poll_output(&mut self) -> Option<Output> {
        self.inner().poll_output()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match self {
            SimNode::Broker(b) => b.poll_timeout(),
            SimNode::Controller(c) => c.poll_timeout(),
            SimNode::Client(c) => c.poll_timeout(),
            SimNode::Other(c) => c.poll_timeout(),
        }
    }
}
