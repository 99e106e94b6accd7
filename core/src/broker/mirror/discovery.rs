//! KIP-1279 pattern discovery and exclude enforcement by the mirror coordinator (kip1279.md
//! B §8.11 "Pattern discovery", B §7.4 "Source syncer"; prototype
//! `MirrorSourceSyncer.discoverTopicsByPattern` and `enforceExcludePatterns`, both run at
//! the end of every coordinator sync pass).
//!
//! Every `mirror.metadata.refresh.interval.ms`, the broker that coordinates a mirror:
//! 1. **Discovery** (only when `topics.include` has an entry): asks a source broker for all
//!    its topics (`Metadata` with no topic list, the prototype's `listTopics` +
//!    `describeTopics`), keeps those that match `topics.include` and not `topics.exclude`
//!    and are not in the mirror yet (in any desired state: a topic stopped explicitly keeps
//!    `mirror.name=<m>.removed` and is not started again), and sends `StartMirrorTopics`
//!    with their ids and partition counts to the controller. The candidates are computed
//!    when the listing arrives, from the image of that moment.
//! 2. **Exclusion**: the mirror's topics desired MIRRORING that `topics.exclude` matches get
//!    a `StopMirrorTopics` (this catches an exclude list changed through
//!    IncrementalAlterConfigs).
//!
//! Both are fire-and-forget, as in the prototype: the answer is reported as an event and a
//! failed topic is tried again on the next tick. Both requests carry the metadata offset
//! this broker saw (B §6.6), so a topic whose mirror state changed meanwhile is refused.
//! With the default filters (`topics.include` "", `topics.exclude` `__.*`) neither sends
//! anything.

use crate::broker::broker::Broker;
use crate::broker::output::Event;
use crate::mirror::filters::{
    FilterConfigError, MirrorFilters, discovery_candidates, excluded_topics,
};
use crate::protocol::messages::MirrorTopic;
use crate::protocol::metadata::ConfigResourceRef;
use crate::protocol::{ErrorCode, Request, Response};

use super::sync::SyncStep;

impl Broker {
    /// The mirror's filter lists (Kafka's defaults for keys not set).
    pub(in crate::broker) fn mirror_filters(
        &self,
        mirror: &str,
    ) -> Result<MirrorFilters, FilterConfigError> {
        MirrorFilters::from_configs(self.image.configs_of(ConfigResourceRef::Mirror(mirror)))
    }

    /// One tick's discovery and exclusion for `mirror` (this broker coordinates it).
    pub(in crate::broker) fn sync_discover_and_enforce(&mut self, mirror: &str) {
        let Ok(filters) = self.mirror_filters(mirror) else {
            return;
        };
        let round = self.mirror_sync.started;
        if !filters.topics_include.is_empty()
            && let Some((source, brokers)) = self.mirror_source(mirror)
            && !brokers.is_empty()
        {
            let to = self.sync_source_broker(source, &brokers);
            let req = Request::Metadata { topics: None };
            self.sync_send(mirror, round, to, req, SyncStep::DiscoverTopics);
        }
        let active: Vec<String> = self
            .image
            .topic_ids
            .keys()
            .filter(|t| self.desired_mirroring(mirror, t))
            .cloned()
            .collect();
        let excluded = excluded_topics(active.iter().map(String::as_str), &filters);
        if !excluded.is_empty() {
            let req = Request::StopMirrorTopics {
                mirror_name: mirror.to_string(),
                topics: excluded,
                patterns: Vec::new(),
                state_validation_offset: Some(self.image.offset),
            };
            let controller = self.controller();
            self.sync_send(mirror, round, controller, req, SyncStep::StopExcluded);
        }
    }

    /// An answer (`None`: timed out) to a discovery or exclusion request.
    pub(in crate::broker) fn on_discovery_response(
        &mut self,
        mirror: &str,
        step: SyncStep,
        resp: Option<Response>,
    ) {
        match step {
            SyncStep::DiscoverTopics => self.on_source_topic_listing(mirror, resp),
            SyncStep::StartDiscovered | SyncStep::StopExcluded => {
                let (error, topics) = match resp {
                    Some(Response::MirrorAdmin { error, topics, .. }) => (
                        error,
                        topics.into_iter().map(|t| (t.name, t.error)).collect(),
                    ),
                    Some(Response::Error { error }) => (error, Vec::new()),
                    Some(_) => (ErrorCode::UnknownServerError, Vec::new()),
                    None => (ErrorCode::RequestTimedOut, Vec::new()),
                };
                let mirror = mirror.to_string();
                self.emit(if step == SyncStep::StartDiscovered {
                    Event::MirrorTopicsDiscovered {
                        mirror,
                        topics,
                        error,
                    }
                } else {
                    Event::MirrorTopicsExcluded {
                        mirror,
                        topics,
                        error,
                    }
                });
            }
            _ => {}
        }
    }

    /// The source's topic listing arrived: start the topics the filters discover.
    fn on_source_topic_listing(&mut self, mirror: &str, resp: Option<Response>) {
        let Some(Response::Metadata { topics, .. }) = resp else {
            return;
        };
        if !self.mirror_exists(mirror) || !self.is_mirror_coordinator(mirror) {
            return;
        }
        let Ok(filters) = self.mirror_filters(mirror) else {
            return;
        };
        let listed: Vec<&str> = topics
            .iter()
            .filter(|t| t.error.is_ok() && !t.partitions.is_empty())
            .map(|t| t.name.as_str())
            .collect();
        let configured = |t: &str| {
            self.mirror_membership(t)
                .is_some_and(|m| m.mirror_name == mirror)
        };
        let names = discovery_candidates(listed, &filters, &configured);
        if names.is_empty() {
            return;
        }
        let start: Vec<MirrorTopic> = topics
            .into_iter()
            .filter(|t| names.contains(&t.name))
            .map(|t| MirrorTopic {
                num_partitions: i32::try_from(t.partitions.len()).unwrap_or(i32::MAX),
                topic_id: t.topic_id,
                name: t.name,
            })
            .collect();
        let req = Request::StartMirrorTopics {
            mirror_name: mirror.to_string(),
            topics: start,
            include_patterns: Vec::new(),
            exclude_patterns: Vec::new(),
            state_validation_offset: Some(self.image.offset),
        };
        let round = self.mirror_sync.started;
        let controller = self.controller();
        self.sync_send(mirror, round, controller, req, SyncStep::StartDiscovered);
    }
}
