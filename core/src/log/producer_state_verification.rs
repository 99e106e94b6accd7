//! KIP-890 part 1, transaction verification (Kafka: `VerificationGuard`,
//! `VerificationStateEntry`, `ProducerStateManager.maybeCreateVerificationStateEntry`,
//! `UnifiedLog.batchMissingRequiredVerification`).
//!
//! Before the first transactional write of a producer to a partition, the leader asks the
//! transaction coordinator whether the partition is in the producer's transaction. It first
//! creates a verification entry holding a unique guard; the produce then carries the guard,
//! and the write is accepted only if the entry still holds that same guard. A marker written
//! in the meantime (an abort, then a new transaction the coordinator does not know includes
//! this partition) clears the entry, so a stale "verified" answer cannot append (the ABA
//! case). Once the transaction has a first offset here, later writes need no guard.

use super::{ProducerStateError, ProducerStateManager};
use crate::record::RecordBatch;
use crate::types::{ProducerEpoch, ProducerId, Sequence};

use super::AppendOrigin;

/// A token tying a produce to the verification it started (Kafka: `VerificationGuard`).
/// Guards are compared by identity: two guards are equal only if they are the same one.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VerificationGuard(pub u64);

impl VerificationGuard {
    /// The guard of a write that started no verification (Kafka: `VerificationGuard.SENTINEL`).
    pub const SENTINEL: VerificationGuard = VerificationGuard(0);

    /// Whether `verifying` is this guard, and not the sentinel (Kafka: `verify`).
    #[must_use]
    pub fn verify(self, verifying: VerificationGuard) -> bool {
        verifying != Self::SENTINEL && verifying == self
    }
}

/// A producer's pending verification (Kafka: `VerificationStateEntry`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct VerificationStateEntry {
    /// When it was created (for expiration with the producer ids).
    pub timestamp: i64,
    /// The guard the verified produce must carry.
    pub verification_guard: VerificationGuard,
    /// The lowest first sequence seen while verifying: a batch above it is out of order.
    pub lowest_sequence: Sequence,
    /// The producer epoch of that sequence.
    pub epoch: ProducerEpoch,
}

impl VerificationStateEntry {
    /// Kafka `maybeUpdateLowestSequenceAndEpoch`: a higher epoch replaces the sequence, a
    /// lower sequence in the same epoch lowers it, a lower epoch is ignored.
    pub fn maybe_update_lowest_sequence_and_epoch(
        &mut self,
        sequence: Sequence,
        epoch: ProducerEpoch,
    ) {
        if epoch > self.epoch {
            self.lowest_sequence = sequence;
            self.epoch = epoch;
        } else if epoch == self.epoch && sequence < self.lowest_sequence {
            self.lowest_sequence = sequence;
        }
    }
}

impl ProducerStateManager {
    /// Turns verification on or off (Kafka: `transaction.partition.verification.enable`,
    /// default true). The model defaults to off: its brokers do not start verifications, so
    /// every transactional first write would otherwise be refused.
    pub fn set_transaction_verification_enabled(&mut self, enabled: bool) {
        self.transaction_verification_enabled = enabled;
    }

    /// Whether verification is on.
    #[must_use]
    pub fn transaction_verification_enabled(&self) -> bool {
        self.transaction_verification_enabled
    }

    /// The producer's verification entry, created at `now_ms` with a fresh guard if it has
    /// none, its lowest sequence and epoch updated (Kafka:
    /// `maybeCreateVerificationStateEntry`).
    pub fn maybe_create_verification_state_entry(
        &mut self,
        producer_id: ProducerId,
        sequence: Sequence,
        epoch: ProducerEpoch,
        now_ms: i64,
    ) -> VerificationStateEntry {
        let next = self.last_verification_guard.wrapping_add(1).max(1);
        let entry = self
            .verification_states
            .entry(producer_id)
            .or_insert_with(|| VerificationStateEntry {
                timestamp: now_ms,
                verification_guard: VerificationGuard(next),
                lowest_sequence: sequence,
                epoch,
            });
        if entry.verification_guard.0 == next {
            self.last_verification_guard = next;
        }
        entry.maybe_update_lowest_sequence_and_epoch(sequence, epoch);
        *entry
    }

    /// The producer's verification entry (Kafka: `verificationStateEntry`).
    #[must_use]
    pub fn verification_state_entry(
        &self,
        producer_id: ProducerId,
    ) -> Option<VerificationStateEntry> {
        self.verification_states.get(&producer_id).copied()
    }

    /// Forgets the producer's verification (Kafka: `clearVerificationStateEntry`).
    pub fn clear_verification_state_entry(&mut self, producer_id: ProducerId) {
        self.verification_states.remove(&producer_id);
    }

    /// The guard of the producer's verification entry, else the sentinel (Kafka:
    /// `UnifiedLog.verificationGuard`).
    #[must_use]
    pub fn verification_guard(&self, producer_id: ProducerId) -> VerificationGuard {
        self.verification_states
            .get(&producer_id)
            .map_or(VerificationGuard::SENTINEL, |v| v.verification_guard)
    }

    /// Whether the producer has a transaction open here (Kafka:
    /// `UnifiedLog.hasOngoingTransaction`).
    #[must_use]
    pub fn has_ongoing_transaction(&self, producer_id: ProducerId) -> bool {
        self.producers
            .get(&producer_id)
            .is_some_and(|e| e.current_txn_first_offset.is_some())
    }

    /// Kafka's check in `analyzeAndValidateProducerState`: a transactional data batch from a
    /// client or coordinator, whose producer has no ongoing transaction, needs the guard of
    /// its verification entry (`batchMissingRequiredVerification`).
    pub(super) fn check_transaction_verified(
        &self,
        batch: &RecordBatch,
        origin: AppendOrigin,
        guard: VerificationGuard,
    ) -> Result<(), ProducerStateError> {
        let pid = batch.producer_id();
        let needs_guard = matches!(origin, AppendOrigin::Client | AppendOrigin::Coordinator)
            && batch.is_transactional()
            && !batch.is_control_batch()
            && self.transaction_verification_enabled
            && !self.has_ongoing_transaction(pid);
        if needs_guard && !self.verification_guard(pid).verify(guard) {
            return Err(ProducerStateError::TransactionNotVerified {
                producer_id: pid,
                offset: batch.base_offset(),
            });
        }
        Ok(())
    }
}
