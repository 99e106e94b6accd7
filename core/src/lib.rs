//! `mirror-core`: a deterministic model of a Kafka partition and of KIP-1279 cluster
//! mirroring. Pure logic: no I/O, no clock (time is an argument), no randomness, no threads.
//! The simulator (`mirror-sim`) drives it; tests drive it directly.
//!
//! - [`types`]: Kafka's scalar types (offsets, epochs, producer ids) as newtypes.
//! - [`record`]: v2 record batches byte for byte, control records (COMMIT, ABORT,
//!   `MIRROR_PID_RESET`).
//! - [`log`]: the partition log (`UnifiedLog`): leader epoch cache, producer state,
//!   transaction index, HW, LSO, truncation, log start moves, reads.
//! - [`replication`]: the leader side of Fetch, the follower truncation rule, HW advance and
//!   ISR expand/shrink, as pure functions.
//! - [`protocol`]: error codes.
//! - [`keyed_map`]: ordered maps found by hash, for the per-partition maps searched per
//!   fetch entry.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod broker;
pub mod controller;
pub mod coordinator;
#[cfg(feature = "fuzz")]
pub mod fuzz;
pub mod keyed_map;
pub mod log;
pub mod mirror;
pub mod protocol;
pub mod record;
pub mod replication;
pub mod small_map;
pub mod testing;
pub mod time;
pub mod types;
