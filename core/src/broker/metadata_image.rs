//! The broker's view of cluster metadata (Kafka: `MetadataImage`), built by applying the
//! controller's metadata records in order.

use std::collections::BTreeMap;

use crate::protocol::acl::{AclBinding, AclBindingFilter, AclId};
use crate::protocol::metadata::{
    ConfigResource, ConfigResourceKey, ConfigResourceRef, MetadataRecord, PartitionRegistration,
};
use crate::types::{BrokerId, TopicId, TopicPartition};

/// A broker as the metadata log describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrokerRegistration {
    /// Epoch of the current registration.
    pub broker_epoch: i64,
    /// Fenced brokers lead nothing and are not ISR-eligible.
    pub fenced: bool,
}

/// A topic: id, name, partitions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicImage {
    /// Name.
    pub name: String,
    /// Id.
    pub topic_id: TopicId,
    /// Partitions by index.
    pub partitions: BTreeMap<i32, PartitionRegistration>,
}

/// The applied metadata.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MetadataImage {
    /// Offset of the last applied record (-1 when empty).
    pub offset: i64,
    /// Brokers.
    pub brokers: BTreeMap<BrokerId, BrokerRegistration>,
    /// Topics by id.
    pub topics: BTreeMap<TopicId, TopicImage>,
    /// Topic ids by name.
    pub topic_ids: BTreeMap<String, TopicId>,
    /// Configs by resource.
    pub configs: BTreeMap<ConfigResource, BTreeMap<String, String>>,
    /// ACLs by id (Kafka: `AclsImage`). ACLs outlive the topics they name, as in Kafka.
    pub acls: BTreeMap<AclId, AclBinding>,
}

/// What changed when a record was applied, for the broker to react to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MetadataDelta {
    /// Nothing the broker reacts to.
    None,
    /// A partition was created or changed.
    Partition {
        /// Partition.
        tp: TopicPartition,
        /// Topic id.
        topic_id: TopicId,
        /// New registration.
        registration: PartitionRegistration,
    },
    /// A topic was removed, with the partitions it had.
    TopicRemoved {
        /// Its partitions.
        partitions: Vec<TopicPartition>,
    },
    /// A config changed.
    Config(ConfigResource),
    /// A broker's registration or fencing changed.
    Broker(BrokerId),
}

impl MetadataImage {
    /// An empty image.
    #[must_use]
    pub fn new() -> Self {
        Self {
            offset: -1,
            ..Self::default()
        }
    }

    /// Applies the record at `offset`.
    pub fn apply(&mut self, offset: i64, record: &MetadataRecord) -> MetadataDelta {
        self.offset = offset;
        match record {
            MetadataRecord::RegisterBroker {
                broker_id,
                broker_epoch,
            } => {
                self.brokers.insert(
                    *broker_id,
                    BrokerRegistration {
                        broker_epoch: *broker_epoch,
                        fenced: true,
                    },
                );
                MetadataDelta::Broker(*broker_id)
            }
            MetadataRecord::BrokerFencing { broker_id, fenced } => {
                if let Some(b) = self.brokers.get_mut(broker_id) {
                    b.fenced = *fenced;
                }
                MetadataDelta::Broker(*broker_id)
            }
            MetadataRecord::Topic { name, topic_id } => {
                self.topic_ids.insert(name.clone(), *topic_id);
                self.topics.insert(
                    *topic_id,
                    TopicImage {
                        name: name.clone(),
                        topic_id: *topic_id,
                        partitions: BTreeMap::new(),
                    },
                );
                MetadataDelta::None
            }
            MetadataRecord::Partition {
                topic_id,
                partition,
                registration,
            }
            | MetadataRecord::PartitionChange {
                topic_id,
                partition,
                registration,
                ..
            } => {
                let Some(t) = self.topics.get_mut(topic_id) else {
                    return MetadataDelta::None;
                };
                t.partitions.insert(*partition, registration.clone());
                MetadataDelta::Partition {
                    tp: TopicPartition::new(t.name.as_str(), *partition),
                    topic_id: *topic_id,
                    registration: registration.clone(),
                }
            }
            MetadataRecord::RemoveTopic { topic_id } => {
                let Some(t) = self.topics.remove(topic_id) else {
                    return MetadataDelta::None;
                };
                self.topic_ids.remove(&t.name);
                self.configs.remove(&ConfigResource::Topic(t.name.clone()));
                MetadataDelta::TopicRemoved {
                    partitions: t
                        .partitions
                        .keys()
                        .map(|p| TopicPartition::new(t.name.as_str(), *p))
                        .collect(),
                }
            }
            MetadataRecord::Config {
                resource,
                name,
                value,
            } => {
                let m = self.configs.entry(resource.clone()).or_default();
                match value {
                    Some(v) => {
                        m.insert(name.clone(), v.clone());
                    }
                    None => {
                        m.remove(name);
                    }
                }
                MetadataDelta::Config(resource.clone())
            }
            MetadataRecord::ProducerIds { .. } => MetadataDelta::None,
            MetadataRecord::AccessControlEntry { id, binding } => {
                self.acls.insert(*id, binding.clone());
                MetadataDelta::None
            }
            MetadataRecord::RemoveAccessControlEntry { id } => {
                self.acls.remove(id);
                MetadataDelta::None
            }
        }
    }

    /// The ACLs `filter` matches, sorted (Kafka: `StandardAuthorizer.acls(filter)`).
    #[must_use]
    pub fn acls_matching(&self, filter: &AclBindingFilter) -> Vec<AclBinding> {
        let mut v: Vec<AclBinding> = self
            .acls
            .values()
            .filter(|b| filter.matches(b))
            .cloned()
            .collect();
        v.sort();
        v
    }

    /// The registration of `tp`.
    #[must_use]
    pub fn partition(&self, tp: &TopicPartition) -> Option<&PartitionRegistration> {
        let id = self.topic_ids.get(tp.topic.as_ref())?;
        self.topics.get(id)?.partitions.get(&tp.partition)
    }

    /// The id of topic `name`.
    #[must_use]
    pub fn topic_id(&self, name: &str) -> Option<TopicId> {
        self.topic_ids.get(name).copied()
    }

    /// The KIP-1279 mirrors that exist (a `MIRROR` config resource with keys), in name order.
    #[must_use]
    pub fn mirror_names(&self) -> Vec<String> {
        self.configs
            .iter()
            .filter_map(|(r, c)| match r {
                ConfigResource::Mirror(n) if !c.is_empty() => Some(n.clone()),
                _ => None,
            })
            .collect()
    }

    /// The configs set on `resource`, searched by reference (no owned key is built: topic
    /// configs are asked on every HW check and produce, a mirror's on every mirror fetch).
    #[must_use]
    pub fn configs_of(&self, resource: ConfigResourceRef<'_>) -> Option<&BTreeMap<String, String>> {
        let key: &dyn ConfigResourceKey = &resource;
        self.configs.get(key)
    }

    /// A topic config value, if set.
    #[must_use]
    pub fn topic_config(&self, topic: &str, key: &str) -> Option<&str> {
        self.configs_of(ConfigResourceRef::Topic(topic))?
            .get(key)
            .map(String::as_str)
    }

    /// True if the broker is registered and unfenced.
    #[must_use]
    pub fn is_broker_active(&self, id: BrokerId) -> bool {
        self.brokers.get(&id).is_some_and(|b| !b.fenced)
    }

    /// The broker epoch in the image.
    #[must_use]
    pub fn broker_epoch(&self, id: BrokerId) -> Option<i64> {
        self.brokers.get(&id).map(|b| b.broker_epoch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_config_finds_the_named_topic_among_prefixes_and_other_resources() {
        // Goal: the key-free lookup answers like a map lookup by `ConfigResource::Topic`,
        // with names that prefix each other and broker and mirror resources around them.
        let mut image = MetadataImage::new();
        let set = |image: &mut MetadataImage, resource: ConfigResource, v: &str| {
            image.apply(
                0,
                &MetadataRecord::Config {
                    resource,
                    name: "k".to_string(),
                    value: Some(v.to_string()),
                },
            );
        };
        set(&mut image, ConfigResource::Broker(BrokerId(1)), "broker");
        set(
            &mut image,
            ConfigResource::Mirror("t".to_string()),
            "mirror",
        );
        for t in ["t0", "t", "ta", "t00", ""] {
            set(&mut image, ConfigResource::Topic(t.to_string()), t);
        }
        for t in ["t0", "t", "ta", "t00", ""] {
            assert_eq!(image.topic_config(t, "k"), Some(t));
            assert_eq!(image.topic_config(t, "other"), None);
        }
        assert_eq!(image.topic_config("t1", "k"), None);
        assert_eq!(image.topic_config("u", "k"), None);
        assert_eq!(MetadataImage::new().topic_config("t", "k"), None);
    }
}
