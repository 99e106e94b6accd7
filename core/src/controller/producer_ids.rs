//! Producer id blocks (Kafka: `ProducerIdControlManager`). Every cluster starts at 0, so two
//! clusters hand out the same ids, exactly as in Kafka: KIP-1279's `MIRROR_PID_RESET`
//! exists because mirrored batches carry the source cluster's producer ids.

use thiserror::Error;

use crate::protocol::ErrorCode;
use crate::types::ProducerId;

/// A block of producer ids handed to one broker.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ProducerIdBlock {
    /// First id of the block.
    pub first_producer_id: ProducerId,
    /// Number of ids.
    pub count: i64,
}

/// Why no block could be handed out.
#[derive(Copy, Clone, Debug, Error, PartialEq, Eq)]
pub enum ProducerIdsError {
    /// The id space is exhausted (Kafka: `UnknownServerException("Exhausted all
    /// producerIds ...")`).
    #[error("producer ids exhausted at {0}")]
    Exhausted(ProducerId),
}

impl From<ProducerIdsError> for ErrorCode {
    fn from(_: ProducerIdsError) -> Self {
        ErrorCode::UnknownServerError
    }
}

/// The next producer id to hand out, replicated through `ProducerIds` records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProducerIdControl {
    block_size: i64,
    next_producer_id: ProducerId,
}

impl ProducerIdControl {
    /// Starts at 0 with Kafka's block size (`ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE`, 1000).
    #[must_use]
    pub fn new(block_size: i64) -> Self {
        assert!(
            block_size > 0,
            "producer_id_block_size_positive: {block_size}"
        );
        Self {
            block_size,
            next_producer_id: ProducerId(0),
        }
    }

    /// The block the next allocation would hand out and the `next_producer_id` its record
    /// must carry.
    ///
    /// # Errors
    /// [`ProducerIdsError::Exhausted`] near `i64::MAX`.
    pub fn next_block(&self) -> Result<(ProducerIdBlock, ProducerId), ProducerIdsError> {
        let first = self.next_producer_id;
        let next = first
            .0
            .checked_add(self.block_size)
            .ok_or(ProducerIdsError::Exhausted(first))?;
        Ok((
            ProducerIdBlock {
                first_producer_id: first,
                count: self.block_size,
            },
            ProducerId(next),
        ))
    }

    /// Kafka: `ProducerIdControlManager.replay(ProducerIdsRecord)`.
    pub fn replay(&mut self, next_producer_id: ProducerId) {
        assert!(
            next_producer_id > self.next_producer_id,
            "producer_ids_increase: {} -> {}",
            self.next_producer_id,
            next_producer_id
        );
        self.next_producer_id = next_producer_id;
    }

    /// The next id to hand out.
    #[must_use]
    pub fn next_producer_id(&self) -> ProducerId {
        self.next_producer_id
    }
}
