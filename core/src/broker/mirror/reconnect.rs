//! KIP-1279: a mirror's connection configs changed (kip1279.md B ConfigRecord MIRROR row:
//! "a change to any non-filter key makes brokers reconnect: remove source-leader cache,
//! close source admin, remove fetchers, re-evaluate MIRRORING partitions"; prototype
//! `MirrorMetadataManager.maybeRecreateConnection`, its `NON_CONNECTION_CONFIGS` being
//! [`crate::mirror::filters::FILTER_CONFIGS`]).
//!
//! In the model a mirror's "connection" is this broker's state about its source: the cached
//! source leaders of its partitions, their mirror fetchers and a metadata refresh in flight.
//! On a change of any other key of an existing mirror, for the mirror partitions this broker
//! leads: the source leaders are forgotten, the fetchers removed, a refresh in flight is
//! abandoned, and fetches still in flight are dropped when they answer (Kafka closes the
//! connection they were sent on). Then every partition persisted MIRRORING and idle
//! re-enters MIRRORING, which starts a fetcher from its log end and a source metadata
//! refresh through the (new) bootstrap brokers. No state is written: MIRRORING is
//! re-entered as after a leader change. Partitions in other states pick the new configs up
//! at their next request. A change of filter keys only (`topics.include`, ...) or the
//! creation or deletion of the mirror does not reconnect.

use std::collections::BTreeSet;

use crate::broker::broker::Broker;
use crate::broker::output::Event;
use crate::mirror::MirrorPartitionState as S;
use crate::mirror::filters::is_filter_config;
use crate::types::TopicPartition;

use super::manager::MirrorStep;

impl Broker {
    /// Keys of existing mirror `mirror` changed in the metadata just applied.
    pub(in crate::broker) fn mirror_configs_altered(
        &mut self,
        mirror: &str,
        keys: &BTreeSet<String>,
    ) {
        let connection: Vec<String> = keys
            .iter()
            .filter(|k| !is_filter_config(k))
            .cloned()
            .collect();
        if connection.is_empty() || !self.mirror_exists(mirror) {
            return;
        }
        let led: Vec<TopicPartition> = self
            .mirror_runs
            .iter()
            .filter(|(_, r)| r.mirror == mirror)
            .map(|(tp, _)| tp.clone())
            .collect();
        if led.is_empty() {
            return;
        }
        for tp in &led {
            self.mirror_fetch.source_leaders.remove(tp);
            if self.mirror_fetch.parts.get(tp).is_some_and(|p| p.in_flight) {
                self.mirror_fetch.closed.insert(tp.clone());
            }
            self.remove_from_mirror_fetcher(tp);
        }
        self.mirror_fetch.refreshing.remove(mirror);
        let mirroring: Vec<TopicPartition> = led
            .into_iter()
            .filter(|tp| {
                self.mirror_runs
                    .get(tp)
                    .is_some_and(|r| r.step == MirrorStep::Idle && r.state() == S::Mirroring)
            })
            .collect();
        self.emit(Event::MirrorReconnected {
            mirror: mirror.to_string(),
            keys: connection,
            partitions: mirroring.clone(),
        });
        for tp in mirroring {
            self.mirror_drive_from_state(&tp, true);
        }
    }
}
