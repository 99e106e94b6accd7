//! KRaft metadata records: the controller's replicated log that every broker applies.
//! `PartitionChange` carries the full resulting state (leader, epochs, ISR) rather than
//! Kafka's field-by-field delta, so applying it never needs the previous record.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::collections::BTreeMap;

use super::acl::{AclBinding, AclId};
use crate::types::{BrokerId, LeaderEpoch, ProducerId, TopicId};

/// Which config a `Config` record or `IncrementalAlterConfigs` addresses.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "fuzz", derive(arbitrary::Arbitrary))]
pub enum ConfigResource {
    /// A topic, by name.
    Topic(#[cfg_attr(feature = "fuzz", arbitrary(with = crate::fuzz::topic_name))] String),
    /// A broker (dynamic broker config).
    Broker(BrokerId),
    /// KIP-1279: a mirror (ConfigResource type `MIRROR`).
    Mirror(#[cfg_attr(feature = "fuzz", arbitrary(with = crate::fuzz::mirror_name))] String),
}

/// A [`ConfigResource`] by reference: a map keyed by `ConfigResource` is searched with it
/// through [`ConfigResourceKey`], without building an owned key (a `String`) per look-up.
/// Its variants are those of `ConfigResource`, in the same order, so the derived orders agree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ConfigResourceRef<'a> {
    /// [`ConfigResource::Topic`].
    Topic(&'a str),
    /// [`ConfigResource::Broker`].
    Broker(BrokerId),
    /// [`ConfigResource::Mirror`].
    Mirror(&'a str),
}

/// What owned and borrowed config resources compare by (the `Borrow` trick for composite
/// keys: `map.get(&ConfigResourceRef::Topic(name) as &dyn ConfigResourceKey)`).
pub trait ConfigResourceKey {
    /// The resource by reference.
    fn key(&self) -> ConfigResourceRef<'_>;
}

impl ConfigResourceKey for ConfigResource {
    fn key(&self) -> ConfigResourceRef<'_> {
        match self {
            Self::Topic(t) => ConfigResourceRef::Topic(t),
            Self::Broker(b) => ConfigResourceRef::Broker(*b),
            Self::Mirror(m) => ConfigResourceRef::Mirror(m),
        }
    }
}

impl ConfigResourceKey for ConfigResourceRef<'_> {
    fn key(&self) -> ConfigResourceRef<'_> {
        *self
    }
}

impl<'a> Borrow<dyn ConfigResourceKey + 'a> for ConfigResource {
    fn borrow(&self) -> &(dyn ConfigResourceKey + 'a) {
        self
    }
}

impl PartialEq for dyn ConfigResourceKey + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for dyn ConfigResourceKey + '_ {}

impl PartialOrd for dyn ConfigResourceKey + '_ {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for dyn ConfigResourceKey + '_ {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
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
    /// An ACL was created: `AccessControlEntryRecord` (id, resource type, name, pattern
    /// type, principal, host, operation, permission type).
    AccessControlEntry {
        /// The ACL's id.
        id: AclId,
        /// The ACL.
        binding: AclBinding,
    },
    /// An ACL was deleted: `RemoveAccessControlEntryRecord`.
    RemoveAccessControlEntry {
        /// The ACL's id.
        id: AclId,
    },
}

/// A config map.
pub type Configs = BTreeMap<String, String>;

/// KIP-1279 (seed) topic config naming the mirror that manages the topic and its desired
/// state: `<mirror>` = mirror it, `<mirror>.paused` = paused, `<mirror>.removed` = stopped.
/// Only the mirror admin APIs may change it (Kafka: `TopicConfig.MIRROR_NAME`).
pub const MIRROR_NAME_CONFIG: &str = "mirror.name";
/// Mirror config naming the source cluster: the simulator's stand-in for Kafka's
/// `bootstrap.servers`. Required by `CreateMirror`.
pub const MIRROR_SOURCE_CLUSTER_CONFIG: &str = "source.cluster";
/// Mirror config holding the source cluster id once a broker has learned it.
pub const MIRROR_SOURCE_CLUSTER_ID_CONFIG: &str = "source.cluster.id";
/// The compacted internal topic holding mirror partition states (KIP-1279 §3), created by
/// the controller with the first mirror.
pub const MIRROR_STATE_TOPIC: &str = "__mirror_state";
/// Partitions of [`MIRROR_STATE_TOPIC`] (Kafka: `mirror.state.topic.num.partitions`, 50;
/// the simulator uses 3 like its other coordinator topics and Kafka's tests).
pub const MIRROR_STATE_TOPIC_PARTITIONS: i32 = 3;
/// Suffix of `mirror.name` for a paused topic.
pub const MIRROR_PAUSED_SUFFIX: &str = ".paused";
/// Suffix of `mirror.name` for a stopped (removed) topic.
pub const MIRROR_REMOVED_SUFFIX: &str = ".removed";

/// The desired state of a mirror topic as the controller records it (seed: the suffix of
/// `mirror.name`). Partition states (PREPARING, STOPPING, ...) are the brokers' business.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "fuzz", derive(arbitrary::Arbitrary))]
pub enum DesiredMirrorState {
    /// `<mirror>`: mirror the topic (read-only).
    Mirroring,
    /// `<mirror>.paused`: keep read-only, stop fetching.
    Paused,
    /// `<mirror>.removed`: stop mirroring; writable once the partitions reach STOPPED.
    Stopped,
}

/// A topic's `mirror.name` value, parsed: which mirror and which desired state.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MirrorMembership {
    /// The mirror.
    pub mirror_name: String,
    /// The desired state.
    pub desired: DesiredMirrorState,
}

impl MirrorMembership {
    /// Parses a `mirror.name` value, stripping one suffix from the right (mirror names may
    /// not end in a suffix, so this is unambiguous). `None` for a value with no mirror name.
    #[must_use]
    pub fn parse(value: &str) -> Option<Self> {
        let (name, desired) = if let Some(n) = value.strip_suffix(MIRROR_REMOVED_SUFFIX) {
            (n, DesiredMirrorState::Stopped)
        } else if let Some(n) = value.strip_suffix(MIRROR_PAUSED_SUFFIX) {
            (n, DesiredMirrorState::Paused)
        } else {
            (value, DesiredMirrorState::Mirroring)
        };
        (!name.is_empty()).then(|| Self {
            mirror_name: name.to_string(),
            desired,
        })
    }

    /// The `mirror.name` value that records this membership.
    #[must_use]
    pub fn config_value(&self) -> String {
        let suffix = match self.desired {
            DesiredMirrorState::Mirroring => "",
            DesiredMirrorState::Paused => MIRROR_PAUSED_SUFFIX,
            DesiredMirrorState::Stopped => MIRROR_REMOVED_SUFFIX,
        };
        format!("{}{suffix}", self.mirror_name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_borrowed_config_resource_orders_and_finds_like_the_owned_one() {
        // Goal: the `Borrow` contract: `ConfigResourceRef` compares exactly as the owned
        // keys do (names that prefix each other, every variant), so a map searched by
        // reference finds what a search by owned key finds.
        let owned = [
            ConfigResource::Topic(String::new()),
            ConfigResource::Topic("t".into()),
            ConfigResource::Topic("t0".into()),
            ConfigResource::Topic("t1".into()),
            ConfigResource::Topic("u".into()),
            ConfigResource::Broker(BrokerId(-1)),
            ConfigResource::Broker(BrokerId(0)),
            ConfigResource::Broker(BrokerId(7)),
            ConfigResource::Mirror("m".into()),
            ConfigResource::Mirror("t0".into()),
        ];
        for a in &owned {
            for b in &owned {
                assert_eq!(a.key().cmp(&b.key()), a.cmp(b), "{a:?} vs {b:?}");
            }
        }
        let map: BTreeMap<ConfigResource, usize> =
            owned.iter().skip(1).step_by(2).cloned().zip(0..).collect();
        for r in &owned {
            let by_ref: &dyn ConfigResourceKey = &r.key();
            assert_eq!(map.get(by_ref), map.get(r), "{r:?}");
        }
    }
}
