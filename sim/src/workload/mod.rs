//! Workload clients: a producer, a consumer and an admin client with Kafka's client
//! semantics (KafkaProducer with idempotence and transactions, KafkaConsumer with groups and
//! isolation levels, Admin), written as sans-I/O state machines like the brokers.
//!
//! Every client implements [`mirror_core::broker::Node`], so the world's node driver runs it
//! like any other node at `NodeId::client(cluster, n)`; clients talk to
//! `NodeId::broker(cluster, id)`. Clients read no clock (time arrives as `now`), draw
//! randomness only from a splitmix64 generator seeded by their config, and keep ordered maps
//! only, so a run is a function of the seed.
//!
//! What the application saw is reported as `Output::Event` with the client events of core
//! (they feed the ghost state and the history checkers, so they are exact):
//! - `ProduceAcked`: a batch the broker acknowledged with NONE, at the offset it returned;
//!   `ProduceFailed`: a batch given up on (delivery timeout, non-retriable error, fatal error,
//!   aborted with its transaction);
//! - `TxnEnded`: the result of EndTxn (or the fatal error that ended the transaction);
//! - `Consumed`: a record a real consumer would return (data records at offsets ≥ the
//!   position, never control records, never aborted data for read_committed);
//! - `OffsetsCommitted`: offsets the group coordinator accepted;
//! - `AdminResult`: one per admin operation.
//!
//! Modules: [`metadata`] (client metadata cache), [`producer`], [`consumer`], [`admin`],
//! [`common`] (PRNG, request table, error classes); [`ClientNode`] holds any of the three.

pub mod admin;
pub mod common;
pub mod consumer;
pub mod metadata;
pub mod producer;

#[cfg(test)]
mod test_loop;
#[cfg(test)]
mod tests;

use mirror_core::broker::{Message, Node, Output};
use mirror_core::protocol::{CorrelationId, NodeId};
use mirror_core::time::Instant;

pub use admin::{Admin, AdminConfig, AdminOp, ScheduledOp};
pub use common::Rng;
pub use consumer::{Consumer, ConsumerConfig};
pub use metadata::MetadataCache;
pub use producer::{Producer, ProducerConfig, TxnConfig};

/// Any client, so the world can hold them in one type.
#[derive(Clone, Debug)]
pub enum ClientNode {
    /// A producer.
    Producer(Box<Producer>),
    /// A consumer.
    Consumer(Box<Consumer>),
    /// An admin client.
    Admin(Box<Admin>),
}

impl ClientNode {
    fn node(&mut self) -> &mut dyn Node {
        match self {
            ClientNode::Producer(p) => p.as_mut(),
            ClientNode::Consumer(c) => c.as_mut(),
            ClientNode::Admin(a) => a.as_mut(),
        }
    }

    fn node_ref(&self) -> &dyn Node {
        match self {
            ClientNode::Producer(p) => p.as_ref(),
            ClientNode::Consumer(c) => c.as_ref(),
            ClientNode::Admin(a) => a.as_ref(),
        }
    }

    /// The producer inside, if any.
    #[must_use]
    pub fn as_producer(&self) -> Option<&Producer> {
        match self {
            ClientNode::Producer(p) => Some(p),
            _ => None,
        }
    }

    /// The consumer inside, if any.
    pub fn as_consumer_mut(&mut self) -> Option<&mut Consumer> {
        match self {
            ClientNode::Consumer(c) => Some(c),
            _ => None,
        }
    }

    /// The admin client inside, if any.
    #[must_use]
    pub fn as_admin(&self) -> Option<&Admin> {
        match self {
            ClientNode::Admin(a) => Some(a),
            _ => None,
        }
    }
}

impl From<Producer> for ClientNode {
    fn from(p: Producer) -> Self {
        ClientNode::Producer(Box::new(p))
    }
}

impl From<Consumer> for ClientNode {
    fn from(c: Consumer) -> Self {
        ClientNode::Consumer(Box::new(c))
    }
}

impl From<Admin> for ClientNode {
    fn from(a: Admin) -> Self {
        ClientNode::Admin(Box::new(a))
    }
}

impl Node for ClientNode {
    fn handle_message(&mut self, now: Instant, from: NodeId, id: CorrelationId, message: Message) {
        self.node().handle_message(now, from, id, message);
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.node().handle_timeout(now);
    }

    fn poll_output(&mut self) -> Option<Output> {
        self.node().poll_output()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.node_ref().poll_timeout()
    }
}
