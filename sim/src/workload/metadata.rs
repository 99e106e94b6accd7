//! The client-side metadata cache (Kafka: `Metadata` / `MetadataCache` in the clients):
//! leader and leader epoch per partition, learnt from `Metadata` requests sent round-robin to
//! the bootstrap brokers.
//!
//! Refreshes happen when a client asks for one ([`MetadataCache::request_update`], after
//! NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, FENCED/UNKNOWN_LEADER_EPOCH, timeouts)
//! and every `metadata.max.age.ms`; consecutive refreshes are spaced by `retry.backoff.ms`
//! (Kafka's `metadata refresh backoff`). As Kafka does (KIP-232 / KIP-320), partition metadata
//! with an older leader epoch than the cached one is ignored: a lagging broker cannot move a
//! client back to a deposed leader.

use std::collections::BTreeMap;

use mirror_core::keyed_map::PartitionMap;
use mirror_core::protocol::{ErrorCode, Request, Response};
use mirror_core::time::Instant;
use mirror_core::types::{BrokerId, LeaderEpoch, TopicId, TopicPartition};

/// What the cache knows about one partition.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PartitionLeader {
    /// Leader (`None` = offline).
    pub leader: Option<BrokerId>,
    /// Leader epoch.
    pub leader_epoch: LeaderEpoch,
}

/// The cache.
#[derive(Clone, Debug)]
pub struct MetadataCache {
    bootstrap: Vec<BrokerId>,
    next_bootstrap: usize,
    /// Topics asked for (`None` = all topics).
    topics: Option<Vec<String>>,
    /// Looked up per partition on every client step: a hash index, not a tree of names.
    partitions: PartitionMap<PartitionLeader>,
    topic_state: BTreeMap<String, (ErrorCode, TopicId)>,
    live_brokers: Vec<BrokerId>,
    max_age_ms: i64,
    retry_backoff_ms: i64,
    last_success: Option<Instant>,
    update_requested: bool,
    in_flight: bool,
    not_before: Instant,
}

impl MetadataCache {
    /// A cold cache. `start` picks the first bootstrap broker (callers pass a seeded draw).
    #[must_use]
    pub fn new(
        bootstrap: Vec<BrokerId>,
        topics: Option<Vec<String>>,
        max_age_ms: i64,
        retry_backoff_ms: i64,
        start: usize,
    ) -> Self {
        assert!(!bootstrap.is_empty(), "client_without_bootstrap_brokers");
        let next_bootstrap = start % bootstrap.len();
        Self {
            bootstrap,
            next_bootstrap,
            topics,
            partitions: PartitionMap::new(),
            topic_state: BTreeMap::new(),
            live_brokers: Vec::new(),
            max_age_ms,
            retry_backoff_ms,
            last_success: None,
            update_requested: true,
            in_flight: false,
            not_before: Instant::ZERO,
        }
    }

    /// The next bootstrap broker, round-robin (also used for requests any broker can serve).
    pub fn next_broker(&mut self) -> BrokerId {
        let b = self.bootstrap[self.next_bootstrap % self.bootstrap.len()];
        self.next_bootstrap = (self.next_bootstrap + 1) % self.bootstrap.len();
        b
    }

    /// Asks for a refresh as soon as the backoff allows.
    pub fn request_update(&mut self) {
        self.update_requested = true;
    }

    /// Adds a topic to the set the cache tracks (no-op when tracking all topics).
    pub fn add_topic(&mut self, topic: &str) {
        if let Some(t) = &mut self.topics
            && !t.iter().any(|x| x == topic)
        {
            t.push(topic.to_string());
            self.update_requested = true;
        }
    }

    /// A refresh request to send now, if one is due: `(broker, request)`.
    pub fn poll_request(&mut self, now: Instant) -> Option<(BrokerId, Request)> {
        if self.in_flight || now < self.not_before {
            return None;
        }
        let stale = self
            .last_success
            .is_none_or(|t| now >= t.plus_millis(self.max_age_ms));
        if !(self.update_requested || stale) {
            return None;
        }
        self.in_flight = true;
        let to = self.next_broker();
        Some((
            to,
            Request::Metadata {
                topics: self.topics.clone(),
            },
        ))
    }

    /// When [`MetadataCache::poll_request`] will next have something to send.
    #[must_use]
    pub fn next_timer(&self) -> Option<Instant> {
        if self.in_flight {
            return None;
        }
        if self.update_requested || self.last_success.is_none() {
            return Some(self.not_before);
        }
        self.last_success
            .map(|t| t.plus_millis(self.max_age_ms).max(self.not_before))
    }

    /// The refresh failed (timeout or unusable answer): try the next broker after a backoff.
    pub fn on_failure(&mut self, now: Instant) {
        self.in_flight = false;
        self.update_requested = true;
        self.not_before = now.plus_millis(self.retry_backoff_ms);
    }

    /// Applies a `Metadata` response; returns true when some leader or epoch changed.
    pub fn on_response(&mut self, now: Instant, resp: &Response) -> bool {
        let Response::Metadata { brokers, topics } = resp else {
            self.on_failure(now);
            return false;
        };
        self.in_flight = false;
        self.update_requested = false;
        self.last_success = Some(now);
        self.not_before = now.plus_millis(self.retry_backoff_ms);
        self.live_brokers.clone_from(brokers);
        let mut changed = false;
        for t in topics {
            self.topic_state
                .insert(t.name.clone(), (t.error, t.topic_id));
            if !t.error.is_ok() {
                let before = self.partitions.len();
                self.partitions.retain(|tp, _| *tp.topic != *t.name);
                changed |= before != self.partitions.len();
                continue;
            }
            for p in &t.partitions {
                let tp = TopicPartition::new(t.name.as_str(), p.partition);
                let new = PartitionLeader {
                    leader: p.leader,
                    leader_epoch: p.leader_epoch,
                };
                match self.partitions.get(&tp) {
                    // Stale metadata (older leader epoch): keep what we have (KIP-320).
                    Some(old) if old.leader_epoch > new.leader_epoch => {}
                    Some(old) if *old == new => {}
                    _ => {
                        self.partitions.insert(tp, new);
                        changed = true;
                    }
                }
            }
        }
        changed
    }

    /// Leader and leader epoch of `tp`, if a leader is known.
    #[must_use]
    pub fn leader(&self, tp: &TopicPartition) -> Option<(BrokerId, LeaderEpoch)> {
        let p = self.partitions.get(tp)?;
        p.leader.map(|l| (l, p.leader_epoch))
    }

    /// Everything known about `tp`.
    #[must_use]
    pub fn partition(&self, tp: &TopicPartition) -> Option<PartitionLeader> {
        self.partitions.get(tp).copied()
    }

    /// The last error the cluster reported for `topic` (`None` = never seen).
    #[must_use]
    pub fn topic_error(&self, topic: &str) -> Option<ErrorCode> {
        self.topic_state.get(topic).map(|(e, _)| *e)
    }

    /// When the last refresh succeeded.
    #[must_use]
    pub fn last_success(&self) -> Option<Instant> {
        self.last_success
    }

    /// Live (unfenced) brokers from the last refresh.
    #[must_use]
    pub fn live_brokers(&self) -> &[BrokerId] {
        &self.live_brokers
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mirror_core::protocol::messages::{PartitionMetadata, TopicMetadata};

    fn resp(leader: i32, epoch: i32) -> Response {
        Response::Metadata {
            brokers: vec![BrokerId(0), BrokerId(1)],
            topics: vec![TopicMetadata {
                name: "t".into(),
                topic_id: TopicId(1),
                error: ErrorCode::None,
                partitions: vec![PartitionMetadata {
                    partition: 0,
                    leader: Some(BrokerId(leader)),
                    leader_epoch: LeaderEpoch(epoch),
                    replicas: vec![BrokerId(0), BrokerId(1)],
                    isr: vec![BrokerId(0), BrokerId(1)],
                }],
            }],
        }
    }

    #[test]
    fn refreshes_round_robin_ignores_stale_epochs_and_ages_out() {
        let mut m = MetadataCache::new(vec![BrokerId(0), BrokerId(1)], None, 1_000, 100, 0);
        let now = Instant::ZERO;
        let (to, _) = m.poll_request(now).expect("cold cache refreshes");
        assert_eq!(to, BrokerId(0));
        assert!(m.poll_request(now).is_none(), "one refresh in flight");
        assert!(m.on_response(now, &resp(1, 5)));
        let tp = TopicPartition::new("t", 0);
        assert_eq!(m.leader(&tp), Some((BrokerId(1), LeaderEpoch(5))));
        m.request_update();
        assert!(m.poll_request(now).is_none(), "backoff");
        let (to, _) = m.poll_request(now.plus_millis(100)).expect("after backoff");
        assert_eq!(to, BrokerId(1));
        assert!(!m.on_response(now, &resp(0, 4)), "stale epoch ignored");
        assert_eq!(m.leader(&tp), Some((BrokerId(1), LeaderEpoch(5))));
        assert_eq!(m.next_timer(), Some(now.plus_millis(1_000)));
        m.on_failure(now);
        assert_eq!(m.next_timer(), Some(now.plus_millis(100)));
    }
}
