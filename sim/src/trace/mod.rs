//! The run trace: one fixed-column line per event, at two levels, with a rolling hash over
//! every line so that "same seed, same build ⇒ same trace" can be checked by comparing one
//! `u64` (product §6, style §7).
//!
//! - [`hash`](mod@hash): FNV-1a 64, a specified algorithm (never `DefaultHasher`, which may change
//!   between Rust releases).
//! - [`format`](mod@format): the column layout, the two levels and the [`TraceSink`].
//! - [`message`]: what a request or response says (API and key fields), for verbose lines.

pub mod format;
pub mod hash;
pub mod message;
mod request;
mod response;

pub use format::{EVENT_LIMIT_EXCEEDED, TraceLevel, TraceOutput, TraceSink, line};
pub use hash::TraceHash;
