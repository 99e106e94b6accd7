//! The core-level integration tests' message loop: [`mirror_core::testing`] with brokers and
//! controllers only.

pub type MiniNet = mirror_core::testing::MiniNet;
pub type AnyNode = mirror_core::testing::AnyNode;
