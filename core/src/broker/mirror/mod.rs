//! The broker's KIP-1279 mirror drivers, one file per concern. The states' entry actions are
//! grouped by state family, and a design's differences are answered by
//! [`Design`](crate::mirror::Design), never by matching on the preset here.
//!
//! - [`manager`]: mirror runs, the `__mirror_state` read/write cycle, next-state decisions and
//!   entry-action dispatch.
//! - `alignment`: PREPARING / LOG_ALIGNMENT (marker lookup, truncation, convergence wait) and
//!   latest's ULE_RECOVERY.
//! - `stopping`: STOPPING, the stop plan.
//! - `fencing`: latest's EPOCH_FENCING and proactive epoch bumps.
//! - `retry`: latest's FAILED retries.
//! - [`fetcher`]: the mirror fetcher (MIRRORING).
//! - [`coordinator`]: the `__mirror_state` coordinator.
//! - [`sync`], [`acl_sync`]: metadata sync (configs, group offsets, ACLs).
//! - [`discovery`]: pattern discovery (`topics.include`) and exclude enforcement by the
//!   mirror coordinator.
//! - `reconnect`: a change to a mirror's connection configs drops its source connection
//!   state and re-enters MIRRORING.
//! - [`admin_validation`]: DeleteMirror and (latest) StopMirrorTopics, validated against
//!   `__mirror_state` before they are forwarded.

pub mod acl_sync;
pub mod admin_validation;
mod alignment;
pub mod coordinator;
pub mod discovery;
mod fencing;
pub mod fetcher;
pub mod manager;
mod reconnect;
mod retry;
mod stopping;
pub mod sync;
