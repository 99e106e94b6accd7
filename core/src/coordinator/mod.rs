//! Coordinator state machines: the transaction coordinator ([`transaction`]) for one
//! `__transaction_state` partition and the group coordinator's offsets and simplified
//! membership ([`group`]) for one `__consumer_offsets` partition, plus the key/value records
//! both persist ([`records`]).
//!
//! As in Kafka, the coordinator for a key is the leader of partition
//! [`records::coordinator_partition`] of the internal topic. The broker hosting it (the
//! "runtime") appends the records these machines return as ordinary key/value records
//! ([`records::build_batch`], origin `Coordinator`), waits for the HW to pass them (acks=all),
//! and reports the outcome back. On becoming leader of an internal partition it builds a fresh
//! machine with the partition's leader epoch, `replay`s every record of the partition in offset
//! order, then calls `complete_load`. On losing leadership it drops the machine and answers
//! every request still waiting on it with `NOT_COORDINATOR`.
//!
//! Nothing here does I/O, reads a clock (time is an argument) or draws random numbers.

pub mod group;
pub mod records;
pub mod transaction;

pub use group::{CommittedOffset, GroupCoordinator};
pub use records::{CoordinatorRecord, RecordError, build_batch, coordinator_partition};
pub use transaction::{
    TransactionMetadata, TxnAction, TxnAppend, TxnCoordinator, TxnCoordinatorConfig, TxnDecision,
    TxnReply, TxnState,
};

use crate::protocol::ErrorCode;

/// Maps the error of a failed coordinator-record append (as the log / replication layer reports
/// it) to the error a coordinator returns to its client.
///
/// Kafka: `TransactionStateManager.appendTransactionToLog` (and the group coordinator's
/// equivalent): a retriable replication failure becomes `COORDINATOR_NOT_AVAILABLE` (the client
/// retries the same coordinator after rediscovery), a lost leadership or disk failure becomes
/// `NOT_COORDINATOR`, a too-large batch becomes `UNKNOWN_SERVER_ERROR`.
#[must_use]
pub fn coordinator_append_error(append_error: ErrorCode) -> ErrorCode {
    match append_error {
        ErrorCode::UnknownTopicOrPartition
        | ErrorCode::NotEnoughReplicas
        | ErrorCode::NotEnoughReplicasAfterAppend
        | ErrorCode::RequestTimedOut => ErrorCode::CoordinatorNotAvailable,
        ErrorCode::NotLeaderOrFollower | ErrorCode::KafkaStorageError => ErrorCode::NotCoordinator,
        ErrorCode::CorruptMessage => ErrorCode::UnknownServerError,
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_errors_map_like_kafka() {
        // Goal: the client sees Kafka's coordinator errors, never replication errors.
        assert_eq!(
            coordinator_append_error(ErrorCode::NotEnoughReplicas),
            ErrorCode::CoordinatorNotAvailable
        );
        assert_eq!(
            coordinator_append_error(ErrorCode::RequestTimedOut),
            ErrorCode::CoordinatorNotAvailable
        );
        assert_eq!(
            coordinator_append_error(ErrorCode::NotLeaderOrFollower),
            ErrorCode::NotCoordinator
        );
        assert_eq!(coordinator_append_error(ErrorCode::None), ErrorCode::None);
    }
}
