//! KRaft metadata records: the controller's replicated log that every broker applies.
//! `PartitionChange` carries the full resulting state (leader, epochs, ISR) rather than
//! Kafka's field-by-field delta, so applying it never needs the previous record.

use std::collections::BTreeMap;

use crate::types::{BrokerId, LeaderEpoch, ProducerId, TopicId};

/// Which config a `Config` record or `IncrementalAlterConfigs` addresses.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ConfigResource {
    /// A topic, by name.
    Topic(String),
    /// A broker (dynamic broker config).
    Broker(BrokerId),
    /// KIP-1279: a mirror (ConfigResource type `MIRROR`).
    Mirror(String),
}

/// A partition's registration (Kafka: `PartitionRegistration`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionRegistration {
    /// Assigned replicas, preferred leader first.
    pub replicas: Vec<BrokerId>,
    /// In-sync replicas.
    pub isr: Vec<BrokerId>,
    /// Current leader (`None` = offline).
    pub leader: Option<BrokerId>,
    /// Leader epoch: bumps on every leader change and on `MinLeaderEpoch` bumps.
    pub leader_epoch: LeaderEpoch,
    /// Partition epoch: bumps on every change (optimistic concurrency for AlterPartition).
    pub partition_epoch: i32,
    /// True after an unclean election until the new leader recovers (KIP-704 `RECOVERING`).
    pub leader_recovering: bool,
}

/// One metadata log record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MetadataRecord {
    /// A broker registered (new incarnation): `RegisterBrokerRecord`.
    RegisterBroker {
        /// Broker.
        broker_id: BrokerId,
        /// New broker epoch (the record's offset).
        broker_epoch: i64,
    },
    /// A broker's fencing changed: `BrokerRegistrationChangeRecord`.
    BrokerFencing {
        /// Broker.
        broker_id: BrokerId,
        /// True when fenced.
        fenced: bool,
    },
    /// A topic was created: `TopicRecord`.
    Topic {
        /// Name.
        name: String,
        /// Id.
        topic_id: TopicId,
    },
    /// A partition was created: `PartitionRecord`.
    Partition {
        /// Topic id.
        topic_id: TopicId,
        /// Index.
        partition: i32,
        /// Initial registration.
        registration: PartitionRegistration,
    },
    /// A partition changed: `PartitionChangeRecord` (with KIP-1279's `MinLeaderEpoch`).
    PartitionChange {
        /// Topic id.
        topic_id: TopicId,
        /// Index.
        partition: i32,
        /// The resulting registration.
        registration: PartitionRegistration,
        /// KIP-1279: the minimum leader epoch this change satisfies, if it was a bump.
        min_leader_epoch: Option<LeaderEpoch>,
    },
    /// A topic was deleted: `RemoveTopicRecord`.
    RemoveTopic {
        /// Id.
        topic_id: TopicId,
    },
    /// A config key was set (`Some`) or deleted (`None`): `ConfigRecord`.
    Config {
        /// Resource.
        resource: ConfigResource,
        /// Key.
        name: String,
        /// Value.
        value: Option<String>,
    },
    /// A block of producer ids was handed out: `ProducerIdsRecord`.
    ProducerIds {
        /// Broker that received the block.
        broker_id: BrokerId,
        /// Next id the controller will hand out.
        next_producer_id: ProducerId,
    },
}

/// A config map.
pub type Configs = BTreeMap<String, String>;
