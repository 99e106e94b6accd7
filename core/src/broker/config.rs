//! Broker settings, with Kafka's names and defaults (and the switches the design lab needs).

use crate::protocol::ClusterIdx;
use crate::types::BrokerId;

/// One broker's configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrokerConfig {
    /// `node.id`.
    pub broker_id: BrokerId,
    /// The cluster the broker belongs to.
    pub cluster: ClusterIdx,
    /// `replica.lag.time.max.ms`: a follower not caught up for this long leaves the ISR.
    pub replica_lag_time_max_ms: i64,
    /// `replica.fetch.wait.max.ms`: follower fetch long-poll.
    pub replica_fetch_wait_max_ms: i64,
    /// `replica.fetch.backoff.ms`: delay after a fetch error.
    pub replica_fetch_backoff_ms: i64,
    /// `replica.fetch.max.bytes` (also the response bound of follower fetches).
    pub replica_fetch_max_bytes: usize,
    /// `request.timeout.ms` for inter-broker and controller requests.
    pub request_timeout_ms: i64,
    /// `controller.quorum.request.timeout.ms`: a broker's metadata-log fetch (KRaft
    /// observer fetch) to the controller gives up after this long, so a broker cut off
    /// from the controller catches up within seconds of the cut healing instead of a whole
    /// `request.timeout.ms` later.
    pub metadata_request_timeout_ms: i64,
    /// `offsets.commit.timeout.ms`: how long a group coordinator write waits for the HW
    /// (the group `CoordinatorRuntime`'s default write timeout, every group write's).
    pub offsets_commit_timeout_ms: i64,
    /// `mirror.coordinator.write.timeout.ms` (KIP-1279 prototype): how long a
    /// `__mirror_state` write waits for the HW.
    pub mirror_coordinator_write_timeout_ms: i64,
    /// `broker.heartbeat.interval.ms`.
    pub heartbeat_interval_ms: i64,
    /// Long-poll wait of metadata fetches.
    pub metadata_fetch_wait_ms: i64,
    /// `replica.high.watermark.checkpoint.interval.ms`.
    pub hw_checkpoint_interval_ms: i64,
    /// `log.flush.interval.ms`: periodic fsync of logs; `None` = Kafka's default (never;
    /// durability comes from replication and segment rolls).
    pub log_flush_interval_ms: Option<i64>,
    /// `log.segment.bytes`: a segment is flushed when it rolls.
    pub segment_bytes: usize,
    /// `log.flush.offset.checkpoint.interval.ms`: how often recovery points are checkpointed.
    pub recovery_point_checkpoint_interval_ms: i64,
    /// `log.initial.task.delay.ms`: delay of the log manager's first periodic tasks.
    pub log_initial_task_delay_ms: i64,
    /// Ablation (a broken recovery, for proving `recovery_idempotent` has teeth): recovery cuts
    /// a torn tail from the log it rebuilds but leaves the bytes in the file. Never on in a
    /// real design.
    pub ablation_recovery_keeps_torn_tail: bool,
    /// `log.retention.check.interval.ms`.
    pub retention_check_interval_ms: i64,
    /// `producer.id.expiration.ms`.
    pub producer_id_expiration_ms: i64,
    /// `producer.id.expiration.check.interval.ms`.
    pub producer_id_expiration_check_interval_ms: i64,
    /// Cluster default `min.insync.replicas`.
    pub min_insync_replicas: usize,
    /// Cluster default `unclean.leader.election.enable`.
    pub unclean_leader_election_enable: bool,
    /// KIP-966: no HW advance while the ISR is below min.insync.replicas (switch off to
    /// model older brokers).
    pub kip966_min_isr_gate: bool,
    /// Ablation (a broken rule, for proving the checkers have teeth): the leader advances its
    /// HW to its own LEO without waiting for the ISR. Never on in a real design.
    pub ablation_hw_ignores_isr: bool,
    /// KIP-1279 design (preset and ablations) this broker's mirror code follows.
    pub mirror_design: crate::mirror::Design,
}

impl BrokerConfig {
    /// Kafka's defaults for `broker_id` in `cluster`.
    #[must_use]
    pub fn new(cluster: ClusterIdx, broker_id: BrokerId) -> Self {
        Self {
            broker_id,
            cluster,
            replica_lag_time_max_ms: 30_000,
            replica_fetch_wait_max_ms: 500,
            replica_fetch_backoff_ms: 1_000,
            replica_fetch_max_bytes: 1 << 20,
            request_timeout_ms: 30_000,
            metadata_request_timeout_ms: 2_000,
            offsets_commit_timeout_ms: 5_000,
            mirror_coordinator_write_timeout_ms: 5_000,
            heartbeat_interval_ms: 2_000,
            metadata_fetch_wait_ms: 500,
            hw_checkpoint_interval_ms: 5_000,
            log_flush_interval_ms: None,
            segment_bytes: 1 << 20,
            recovery_point_checkpoint_interval_ms: 60_000,
            log_initial_task_delay_ms: 30_000,
            ablation_recovery_keeps_torn_tail: false,
            retention_check_interval_ms: 300_000,
            producer_id_expiration_ms: 86_400_000,
            producer_id_expiration_check_interval_ms: 600_000,
            min_insync_replicas: 1,
            unclean_leader_election_enable: false,
            kip966_min_isr_gate: true,
            ablation_hw_ignores_isr: false,
            mirror_design: crate::mirror::Design::default(),
        }
    }
}
