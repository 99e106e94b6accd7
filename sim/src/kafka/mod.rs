//! Kafka worlds: the real `mirror-core` brokers, controllers and clients plugged into the
//! simulated [`World`](crate::world::World).
//!
//! - [`sim_node`]: [`SimNode`], the one node type the world drives.
//! - [`cluster`]: [`KafkaWorld`], building clusters from a spec, client start-up, and the
//!   Kafka-level faults (unclean election, leader change, DeleteRecords) through admin requests.
//! - [`rot`]: bit rot in a replica's flushed log (latent corruption its recovery must cut).

pub mod cluster;
pub mod oneshot;
pub mod rot;
pub mod sim_node;

pub use cluster::{BrokerTuning, ClusterSpec, KafkaWorld, KafkaWorldSpec};
pub use sim_node::SimNode;
