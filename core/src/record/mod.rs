//! Kafka v2 record batches (`DefaultRecordBatch`): the unit that is appended, replicated and
//! mirrored byte for byte.
//!
//! - [`batch`]: the immutable [`RecordBatch`] (wire bytes plus a parsed header) and its builder.
//! - [`codec`]: the v2 wire format (header layout, varints, CRC32C).
//! - [`control`]: control records: COMMIT, ABORT and KIP-1279's `MIRROR_PID_RESET`.

pub mod batch;
pub mod codec;
pub mod control;

pub use batch::{
    BatchBuilder, BatchHeader, Header, Record, RecordBatch, SimpleRecord, TimestampType,
};
pub use codec::BatchError;
pub use control::{ControlRecord, ControlRecordType};
