//! Controller settings, with Kafka's names and defaults.

use crate::protocol::ClusterIdx;

/// One cluster's controller configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ControllerConfig {
    /// The cluster this controller serves; mixed into generated topic ids so they differ
    /// across clusters.
    pub cluster: ClusterIdx,
    /// `broker.session.timeout.ms`: an unfenced broker not heard from for longer is fenced.
    pub broker_session_timeout_ms: i64,
    /// `default.replication.factor`, used for `replication_factor = -1` (capped at the
    /// number of usable brokers: a simulator convenience, see the module docs).
    pub default_replication_factor: i16,
    /// `num.partitions`, used for `num_partitions = -1`.
    pub default_num_partitions: i32,
    /// Cluster default `unclean.leader.election.enable`; the topic config overrides it.
    pub unclean_leader_election_enable: bool,
    /// Producer ids per `AllocateProducerIds` block (Kafka: 1000).
    pub producer_id_block_size: i64,
    /// Cluster default `min.insync.replicas` (reported by
    /// [`super::Controller::min_insync_replicas`]; the pre-ELR controller does not use it
    /// for elections).
    pub min_insync_replicas: usize,
    /// KIP-1279: accept `StopMirrorTopics` for a topic whose desired state is PAUSED. The
    /// seed design (spec A.1: Stop from PREPARING/MIRRORING) refuses it with
    /// MIRROR_TOPIC_ALREADY_PAUSED; the "latest" design (A.3) accepts it.
    pub mirror_stop_from_paused: bool,
}

impl ControllerConfig {
    /// Kafka's defaults for the controller of `cluster`.
    #[must_use]
    pub fn new(cluster: ClusterIdx) -> Self {
        Self {
            cluster,
            broker_session_timeout_ms: 9_000,
            default_replication_factor: 1,
            default_num_partitions: 1,
            unclean_leader_election_enable: false,
            producer_id_block_size: 1_000,
            min_insync_replicas: 1,
            mirror_stop_from_paused: false,
        }
    }
}
