//! Test-only: core's deterministic message loop ([`mirror_core::testing`]) hosting workload
//! clients next to the real broker and controller.

use super::ClientNode;

pub type MiniNet = mirror_core::testing::MiniNet<ClientNode>;
pub type AnyNode = mirror_core::testing::AnyNode<ClientNode>;
