//! The sans-I/O broker: fed requests, responses and time; emits sends, disk operations and
//! events (style.md §2). Built up milestone by milestone.

pub mod config;
pub mod metadata_image;
pub mod output;
pub mod timers;

pub use config::BrokerConfig;
pub use metadata_image::MetadataImage;
pub use output::{Event, IoOp, Message, Node, Output, TruncationCause};
pub use timers::{TimerId, Timers};
