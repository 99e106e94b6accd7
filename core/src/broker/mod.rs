//! The sans-I/O broker: fed requests, responses and time; emits sends, disk operations and
//! events (style.md §2).
//!
//! - [`broker`]: the node ([`Broker`]), its state and entry points.
//! - `lifecycle`: registration, heartbeats, metadata, leader/follower transitions.
//! - `handlers`: Produce, Fetch (leader side), ListOffsets, DeleteRecords, markers, forwarding.
//! - [`fetcher`]: the replica fetcher (truncate-on-fetch).
//! - [`fetch_session`]: KIP-227 incremental fetch sessions, leader and follower ends.
//! - [`partition`]: one replica (log + leader/follower state).
//! - [`purgatory`]: delayed produce and fetch.
//! - [`storage`]: segments and checkpoints on disk.
//! - [`recovery`]: reading a replica back after a crash (torn tails, bit rot, recovery point).
//! - [`mirror`]: the KIP-1279 mirror drivers (states, fetcher, `__mirror_state`, sync).

#[allow(clippy::module_inception)]
pub mod broker;
pub mod config;
pub mod coordinator_runtime;
pub mod fetch_session;
pub mod fetcher;
mod handlers;
mod lifecycle;
pub mod metadata_image;
pub mod mirror;
pub mod output;
pub mod partition;
pub mod purgatory;
pub mod recovery;
pub mod storage;
pub mod timers;

pub use broker::{Broker, Lifecycle};
pub use config::BrokerConfig;
pub use metadata_image::MetadataImage;
pub use output::{Event, IoOp, Message, Node, Output, TruncationCause};
pub use timers::{TimerId, Timers};
