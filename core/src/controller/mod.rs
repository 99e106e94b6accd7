//! The single (KRaft) controller of one simulated cluster, as a sans-I/O state machine
//! implementing [`crate::broker::Node`] (Kafka: `QuorumController` with one voter).
//!
//! - [`quorum_controller`]: the node: request dispatch, outputs, session and fetch timers.
//! - [`metadata_log`]: records at consecutive offsets from 0 and the image they build
//!   (the broker's [`crate::broker::MetadataImage`], applied record by record), and parked
//!   `FetchMetadata` long-polls.
//! - [`cluster`]: broker registrations, heartbeats, session expiry and fencing
//!   (`ClusterControlManager`, `BrokerHeartbeatManager`).
//! - [`replication`]: placement, elections, ISR changes, `AlterPartition` validation and
//!   KIP-1279 `MinLeaderEpoch` bumps (`ReplicationControlManager`, `PartitionChangeBuilder`).
//! - [`producer_ids`]: producer id blocks (`ProducerIdControlManager`).
//! - [`acls`]: `CreateAcls` / `DeleteAcls` (`AclControlManager`); the ACLs live in the image.
//! - [`mirror_admin`]: KIP-1279 mirrors and mirror topics (seed design: `MIRROR` config
//!   records and the `mirror.name` topic config), and the controller's read-only rules.
//! - [`mirror_patterns`]: KIP-1279 filter lists at the controller (Start/Stop patterns merged
//!   into `topics.include` / `topics.exclude`, exclusion, mirror config alteration).
//!
//! Simplifications against Kafka (each also noted where it is made):
//! - One voter: a record is committed as soon as the driver persists it; no Raft epochs,
//!   snapshots or log truncation. `FetchMetadata` outside `[0, end]` is OFFSET_OUT_OF_RANGE.
//! - No KIP-966 ELR, no reassignments, no controlled shutdown, no rack awareness: an
//!   offline partition keeps its last ISR member, as pre-ELR Kafka does.
//! - Placement is a deterministic round-robin (Kafka's placer is randomised); the default
//!   replication factor is capped at the usable brokers (Kafka would fail the request).
//! - Broker incarnations are session (soft) state, as the metadata record does not carry
//!   them; re-registering an unfenced broker fences it first, so a fenced broker never leads.
//! - `AlterPartition` carries no leader recovery state: an accepted change marks the leader
//!   RECOVERED. Enabling unclean election on a topic elects its offline partitions at once.
//! - Only `unclean.leader.election.enable` and `min.insync.replicas` are validated among
//!   configs; no-op config changes write no record.

pub mod acls;
pub mod cluster;
pub mod config;
pub mod metadata_log;
pub mod mirror_admin;
pub mod mirror_patterns;
pub mod producer_ids;
pub mod quorum_controller;
pub mod replication;

pub use cluster::{BrokerControlState, BrokerError, ClusterControl, next_broker_state};
pub use config::ControllerConfig;
pub use metadata_log::{FetchWaiter, FetchWaiters, MetadataLog};
pub use mirror_admin::{MirrorAdminError, MirrorStateChanges, MirrorTopicsOp};
pub use producer_ids::{ProducerIdBlock, ProducerIdControl, ProducerIdsError};
pub use quorum_controller::Controller;
pub use replication::{
    AlterPartitionError, Election, PartitionChange, PartitionChangeBuilder, TopicError,
    place_replicas, validate_alter_partition,
};

#[cfg(test)]
mod acls_test;
#[cfg(test)]
mod controller_test;
#[cfg(test)]
mod mirror_admin_test;
#[cfg(test)]
mod mirror_patterns_test;
#[cfg(test)]
mod replication_test;
