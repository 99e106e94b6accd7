//! Wire-level vocabulary shared by brokers, controllers and clients: error codes, node
//! addresses, requests/responses and metadata records.

pub mod acl;
pub mod error_code;
pub mod messages;
pub mod metadata;
pub mod node;

pub use error_code::ErrorCode;
pub use messages::{Request, Response};
pub use node::{ClusterIdx, CorrelationId, NodeId, NodeRole};
