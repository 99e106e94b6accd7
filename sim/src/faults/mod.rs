//! Faults as data (product §4): the [`Fault`] vocabulary, timed [`FaultStep`]s, and
//! [`apply`] against a [`World`](crate::world::World). Schedules serialize to JSON for
//! capsules, replay and shrinking.
//!
//! Kafka-level faults (unclean election, clean leader change, DeleteRecords) need the admin
//! client; they are in the vocabulary as [`KafkaFault`] and applied through a
//! [`KafkaFaults`] handler passed to [`apply_with`]; plain [`apply`] rejects them.

pub mod schedule;

#[cfg(test)]
mod tests;

pub use schedule::{
    CrashMode, Fault, FaultError, FaultSchedule, FaultStep, KafkaFault, KafkaFaults, LinkDirection,
    Member, NoKafkaFaults, NodeRef, Side, apply, apply_with,
};
