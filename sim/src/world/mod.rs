//! The simulated world: madsim nodes driving sans-I/O `mirror_core` nodes, their disks,
//! durable metadata, the network, the trace and the fault API.
//!
//! - [`clock`]: madsim time ↔ `mirror_core::time::Instant` (µs since world start).
//! - [`node`](mod@node): the driver loop of one node incarnation, [`Wire`], [`Boot`].
//! - [`world`](mod@world): [`World`] (builder, inspection handles, faults), [`WorldConfig`].
//! - [`trace_event`]: the one [`TraceEvent`] enum every world trace line is rendered from.
//! - [`harness`]: [`run_seed`] (a fresh thread and runtime per seed) and [`RunReport`].
//! - [`test_node`]: [`PingNode`](test_node::PingNode), a small node that exercises timers,
//!   sends, disk appends/flushes, metadata records and events.
//!
//! Plugging in real nodes: `World<N>` is generic over the node type, built by one factory
//! from a [`Boot`] (id, incarnation, surviving disk image, durable metadata records):
//!
//! ```ignore
//! enum SimNode { Broker(Box<Broker>), Controller(Box<Controller>) }
//! impl Node for SimNode { /* delegate the four methods with a match */ }
//!
//! let world: World<SimNode> = World::new(config);
//! world.start(move |boot: &Boot| match boot.id.role {
//!     NodeRole::Controller => SimNode::Controller(Box::new(Controller::new(
//!         ControllerConfig::new(boot.id.cluster),
//!         boot.metadata.clone(),
//!     ))),
//!     NodeRole::Broker(id) => SimNode::Broker(Box::new(Broker::new(
//!         BrokerConfig::new(boot.id.cluster, id),
//!         boot.incarnation,
//!         boot.disk_image.clone(),
//!     ))),
//!     NodeRole::Client(_) => unreachable!("clients are started with their own factory"),
//! });
//! ```
//!
//! Checkers lock [`World::node_state`] and match on the variant.

pub mod clock;
pub mod harness;
pub mod node;
pub mod test_node;
pub mod trace_event;
#[allow(clippy::module_inception)]
pub mod world;

#[cfg(test)]
mod tests;

pub use clock::SimClock;
pub use harness::{RunReport, RunStats, run_seed, run_seed_with_limit};
pub use node::{Boot, Factory, Wire};
pub use trace_event::{Names, TraceEvent};
pub use world::{ClusterConfig, EventCtx, HaltRecord, NodeStatus, Observer, World, WorldConfig};
