//! The partition log (Kafka: `UnifiedLog`) and its parts: the leader epoch cache, producer
//! state, the aborted-transaction index.

pub mod epoch_cache;
pub mod offset_for_timestamp;
pub mod partition_log;
pub mod producer_snapshot;
pub mod producer_state;
pub mod txn_index;

pub use epoch_cache::{EpochCacheError, EpochEntry, LeaderEpochCache};
pub use offset_for_timestamp::TimestampAndOffset;
pub use partition_log::{
    AppendError, FetchDataInfo, LogAppendInfo, LogConfig, OffsetError, PartitionLog,
};
pub use producer_state::{
    AppendCheck, AppendOrigin, BatchMetadata, CompletedTxn, ProducerStateEntry, ProducerStateError,
    ProducerStateManager, TxnMetadata, VerificationGuard, VerificationStateEntry,
};
pub use txn_index::{AbortedTxn, TransactionIndex, TxnIndexError, TxnIndexSearchResult};
