//! KIP-227 incremental fetch sessions, both ends.
//!
//! - The leader's [`FetchSessionCache`] (Kafka: `FetchSession.scala`, `FetchManager`): a
//!   session remembers, per partition, what its fetcher last asked for and what the leader
//!   last answered. An incremental fetch names only the partitions added or changed; the
//!   leader still reads every partition of the session (Kafka:
//!   `IncrementalFetchContext.foreachPartition` feeds all of them to `fetchMessages`, so
//!   followers' fetch state and the HW move as without sessions), and answers only those
//!   with something new: records, a HW or log start change, an error, a divergence
//!   (`CachedPartition.maybeUpdateResponseData`).
//! - The follower's [`SessionHandler`] (Kafka: `FetchSessionHandler`): builds each request
//!   as the difference from the session, and moves the session on from each answer.
//!
//! Two simplifications, neither visible to a result: both ends keep a session's partitions
//! in partition order (Kafka's leader moves answered partitions to the end of the session,
//! which only matters when an answer hits its byte bound; this model's fetcher already
//! walks its partitions in order), and the cache is bounded by [`MAX_SESSIONS`] with the
//! oldest session evicted, where Kafka evicts by age and privilege. A follower's earlier
//! sessions with the same leader are dropped when it opens a new one: it runs one fetcher
//! per leader, so nothing can use them again (Kafka leaves them to eviction).

use std::collections::BTreeMap;

use crate::keyed_map::PartitionMap;
use crate::protocol::ErrorCode;
use crate::protocol::messages::{FetchPartition, FetchPartitionResponse, FetchSessionMeta};
use crate::types::{BrokerId, LeaderEpoch, Offset, TopicPartition};

/// Sessions a leader keeps at most (Kafka: `max.incremental.fetch.session.cache.slots`,
/// 1,000).
pub const MAX_SESSIONS: usize = 1_000;

/// One partition of a session, as the leader caches it (Kafka: `CachedPartition`).
#[derive(Clone, Debug, PartialEq, Eq)]
struct CachedPartition {
    /// The fetcher's request fields, as it last sent them.
    request: FetchPartition,
    /// The HW last answered; -1 before the first answer and after an error, so the next
    /// answer always includes the partition.
    high_watermark: Offset,
    /// The log start last answered.
    log_start_offset: Offset,
}

impl CachedPartition {
    fn new(request: FetchPartition) -> Self {
        Self {
            request,
            high_watermark: Offset(-1),
            log_start_offset: Offset(-1),
        }
    }

    /// Kafka `CachedPartition.maybeUpdateResponseData(respData, updateResponseData = true)`:
    /// whether the answer must include this partition, remembering what it tells.
    fn must_respond(&mut self, resp: &FetchPartitionResponse) -> bool {
        let mut must = !resp.batches.is_empty();
        if self.high_watermark != resp.high_watermark {
            self.high_watermark = resp.high_watermark;
            must = true;
        }
        if self.log_start_offset != resp.log_start_offset {
            self.log_start_offset = resp.log_start_offset;
            must = true;
        }
        if !resp.error.is_ok() {
            self.high_watermark = Offset(-1);
            must = true;
        }
        // "Partitions with diverging epoch are always included in response to trigger
        // truncation."
        must || resp.diverging_epoch.is_some()
    }
}

/// A session on the leader (Kafka: `FetchSession`).
#[derive(Clone, Debug)]
struct FetchSession {
    /// The follower that opened it (`None`: a consumer).
    owner: Option<BrokerId>,
    /// The epoch its next incremental fetch must carry.
    epoch: i32,
    partitions: PartitionMap<CachedPartition>,
}

/// How a fetch is answered (Kafka: the `FetchContext` that `FetchManager.newContext` picks).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FetchContext {
    /// No session: every partition read is answered.
    Sessionless,
    /// A full fetch that opens a session when it is answered.
    Full,
    /// An incremental fetch of session `id`, answered only if the session is still at
    /// `epoch` (no later fetch of it came in meanwhile).
    Incremental {
        /// The session.
        id: i32,
        /// The session's epoch after this fetch.
        epoch: i32,
    },
    /// A session error, answered at once with no partition.
    Error(ErrorCode),
}

/// The leader's fetch sessions (Kafka: `FetchSessionCache`). Lost with the process.
#[derive(Clone, Debug, Default)]
pub struct FetchSessionCache {
    /// The last id handed out.
    last_id: i32,
    sessions: BTreeMap<i32, FetchSession>,
}

/// The session fields and partitions of an answer.
#[derive(Debug, PartialEq, Eq)]
pub struct SessionAnswer {
    /// Top-level error.
    pub error: ErrorCode,
    /// The session id (0: none).
    pub session_id: i32,
    /// The partitions to answer.
    pub partitions: Vec<FetchPartitionResponse>,
}

impl FetchSessionCache {
    /// Number of open sessions.
    #[must_use]
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    /// True when no session is open.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// The HW the session of follower `owner` last told it for `tp`, if that partition is
    /// in one of its sessions (for observers: an incremental answer names `tp` again only
    /// when the HW moves past this).
    #[must_use]
    pub fn told_high_watermark(&self, owner: BrokerId, tp: &TopicPartition) -> Option<Offset> {
        self.sessions
            .values()
            .filter(|s| s.owner == Some(owner))
            .find_map(|s| s.partitions.get(tp))
            .map(|c| c.high_watermark)
    }

    /// Kafka `FetchManager.newContext`: applies a request to the cache and returns how it is
    /// answered and the partitions to read (an incremental fetch reads its whole session).
    /// `owner` is the fetching follower (`None` for a consumer): a session is only ever
    /// used or closed by its owner, which stands in for Kafka's random session ids.
    pub fn new_context(
        &mut self,
        owner: Option<BrokerId>,
        meta: FetchSessionMeta,
        partitions: Vec<FetchPartition>,
        forgotten: &[TopicPartition],
    ) -> (FetchContext, Vec<FetchPartition>) {
        if meta.is_full() {
            // "Any session specified in a FULL fetch request will be closed."
            if meta.id != FetchSessionMeta::NO_SESSION
                && self
                    .sessions
                    .get(&meta.id)
                    .is_some_and(|s| s.owner == owner)
            {
                self.sessions.remove(&meta.id);
            }
            let context = if meta.epoch == FetchSessionMeta::FINAL_EPOCH {
                FetchContext::Sessionless
            } else {
                FetchContext::Full
            };
            return (context, partitions);
        }
        let Some(session) = self.sessions.get_mut(&meta.id).filter(|s| s.owner == owner) else {
            return (
                FetchContext::Error(ErrorCode::FetchSessionIdNotFound),
                Vec::new(),
            );
        };
        if session.epoch != meta.epoch {
            return (
                FetchContext::Error(ErrorCode::InvalidFetchSessionEpoch),
                Vec::new(),
            );
        }
        for fp in partitions {
            match session.partitions.get_mut(&fp.tp) {
                Some(cached) => cached.request = fp,
                None => {
                    session
                        .partitions
                        .insert(fp.tp.clone(), CachedPartition::new(fp));
                }
            }
        }
        for tp in forgotten {
            session.partitions.remove(tp);
        }
        if session.partitions.is_empty() {
            // Kafka: "after removing ..., there are no more partitions left": the session
            // closes and the fetch is answered sessionless.
            self.sessions.remove(&meta.id);
            return (FetchContext::Sessionless, Vec::new());
        }
        session.epoch = FetchSessionMeta::next_epoch(session.epoch);
        let read = session
            .partitions
            .values()
            .map(|c| c.request.clone())
            .collect();
        (
            FetchContext::Incremental {
                id: meta.id,
                epoch: session.epoch,
            },
            read,
        )
    }

    /// Kafka `FetchContext.updateAndGenerateResponseData`: the answer to a fetch that read
    /// `read` (in order) and got `error` and `partitions` (one per partition read, in the
    /// same order, unless `error` is set).
    pub fn answer(
        &mut self,
        context: &FetchContext,
        owner: Option<BrokerId>,
        read: &[FetchPartition],
        error: ErrorCode,
        partitions: Vec<FetchPartitionResponse>,
    ) -> SessionAnswer {
        let no_session = |error, partitions| SessionAnswer {
            error,
            session_id: FetchSessionMeta::NO_SESSION,
            partitions,
        };
        match *context {
            FetchContext::Sessionless => no_session(error, partitions),
            FetchContext::Error(e) => no_session(e, Vec::new()),
            FetchContext::Full if !error.is_ok() => no_session(error, partitions),
            FetchContext::Full => {
                let mut session = FetchSession {
                    owner,
                    epoch: FetchSessionMeta::next_epoch(FetchSessionMeta::INITIAL_EPOCH),
                    partitions: PartitionMap::new(),
                };
                for (req, resp) in read.iter().zip(&partitions) {
                    let mut cached = CachedPartition::new(req.clone());
                    cached.must_respond(resp);
                    session.partitions.insert(req.tp.clone(), cached);
                }
                let id = self.open(session);
                SessionAnswer {
                    error,
                    session_id: id,
                    partitions,
                }
            }
            FetchContext::Incremental { id, epoch } => {
                let Some(session) = self.sessions.get_mut(&id) else {
                    // Closed meanwhile by a full fetch of its owner, which has moved on.
                    return no_session(ErrorCode::FetchSessionIdNotFound, Vec::new());
                };
                if session.epoch != epoch {
                    return SessionAnswer {
                        error: ErrorCode::InvalidFetchSessionEpoch,
                        session_id: id,
                        partitions: Vec::new(),
                    };
                }
                if !error.is_ok() {
                    return SessionAnswer {
                        error,
                        session_id: id,
                        partitions,
                    };
                }
                // The session has not changed since the read (its epoch has not), so its
                // partitions are the ones read, in the same order.
                let mut cached = session.partitions.values_mut();
                let partitions = partitions
                    .into_iter()
                    .filter(|resp| {
                        let c = cached.next().expect("session_partitions_are_the_read");
                        debug_assert_eq!(c.request.tp, resp.tp);
                        c.must_respond(resp)
                    })
                    .collect();
                SessionAnswer {
                    error,
                    session_id: id,
                    partitions,
                }
            }
        }
    }

    /// Adds a session under a new id, dropping its owner's older sessions and, beyond
    /// [`MAX_SESSIONS`], the oldest one.
    fn open(&mut self, session: FetchSession) -> i32 {
        if let Some(owner) = session.owner {
            self.sessions.retain(|_, s| s.owner != Some(owner));
        }
        while self.sessions.len() >= MAX_SESSIONS {
            self.sessions.pop_first();
        }
        let mut id = self.last_id;
        loop {
            id = if id == i32::MAX { 1 } else { id + 1 };
            if !self.sessions.contains_key(&id) {
                break;
            }
        }
        self.last_id = id;
        self.sessions.insert(id, session);
        id
    }
}

/// What a follower sends for one partition (Kafka: `FetchRequest.PartitionData`); the
/// leader holds the same for its session.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SentPartition {
    /// The offset to fetch from.
    pub fetch_offset: Offset,
    /// The leader epoch the follower follows.
    pub current_leader_epoch: LeaderEpoch,
    /// The epoch of its last fetched batch.
    pub last_fetched_epoch: Option<LeaderEpoch>,
    /// Its log start.
    pub log_start_offset: Offset,
}

impl SentPartition {
    /// As a request partition.
    #[must_use]
    pub fn to_request(self, tp: TopicPartition) -> FetchPartition {
        FetchPartition {
            tp,
            fetch_offset: self.fetch_offset,
            current_leader_epoch: Some(self.current_leader_epoch),
            last_fetched_epoch: self.last_fetched_epoch,
            log_start_offset: self.log_start_offset,
            topic_id: None,
        }
    }
}

/// One partition of the follower's session: what it last sent, and the build that last
/// wanted it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct SessionPartition {
    sent: SentPartition,
    round: u64,
}

/// The follower's side of its session with one leader (Kafka: `FetchSessionHandler`).
#[derive(Clone, Debug)]
pub struct SessionHandler {
    /// The session fields of the next request.
    next: FetchSessionMeta,
    /// The session's partitions as the leader holds them: what was last sent for each.
    partitions: PartitionMap<SessionPartition>,
    /// Builds so far.
    round: u64,
}

impl Default for SessionHandler {
    fn default() -> Self {
        Self {
            next: FetchSessionMeta::INITIAL,
            partitions: PartitionMap::new(),
            round: 0,
        }
    }
}

/// A request built by [`SessionHandler::build`].
#[derive(Debug, PartialEq, Eq)]
pub struct FetchBuild {
    /// The session fields.
    pub meta: FetchSessionMeta,
    /// The partitions to name: all of them in a full fetch, else the added and changed.
    pub partitions: Vec<FetchPartition>,
    /// The partitions the session drops.
    pub forgotten: Vec<TopicPartition>,
}

impl SessionHandler {
    /// The session fields of the next request.
    #[must_use]
    pub fn next_meta(&self) -> FetchSessionMeta {
        self.next
    }

    /// Kafka `FetchSessionHandler.Builder.build`: the request for fetching `wanted` now
    /// (every partition to fetch, with what to send for it). A full fetch names them all
    /// and makes them the session; an incremental one names those added or changed since
    /// the last request and forgets those no longer wanted.
    pub fn build<'a>(
        &mut self,
        wanted: impl IntoIterator<Item = (&'a TopicPartition, SentPartition)>,
    ) -> FetchBuild {
        self.round += 1;
        let round = self.round;
        if self.next.is_full() {
            self.partitions = PartitionMap::new();
        }
        let mut partitions = Vec::new();
        let mut kept = 0usize;
        for (tp, sent) in wanted {
            kept += 1;
            match self.partitions.get_mut(tp) {
                Some(p) => {
                    p.round = round;
                    if p.sent != sent {
                        p.sent = sent;
                        partitions.push(sent.to_request(tp.clone()));
                    }
                }
                None => {
                    self.partitions
                        .insert(tp.clone(), SessionPartition { sent, round });
                    partitions.push(sent.to_request(tp.clone()));
                }
            }
        }
        let mut forgotten = Vec::new();
        if self.partitions.len() > kept {
            self.partitions.retain(|tp, p| {
                let keep = p.round == round;
                if !keep {
                    forgotten.push(tp.clone());
                }
                keep
            });
        }
        FetchBuild {
            meta: self.next,
            partitions,
            forgotten,
        }
    }

    /// True when the session holds no partition.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.partitions.is_empty()
    }

    /// What the leader holds for `tp` in this session (what the answer was read at).
    #[must_use]
    pub fn sent(&self, tp: &TopicPartition) -> Option<SentPartition> {
        self.partitions.get(tp).map(|p| p.sent)
    }

    /// Kafka `FetchSessionHandler.handleResponse`: moves the session on from an answer;
    /// false when the answer's partitions must not be processed (a top-level error).
    pub fn on_response(&mut self, error: ErrorCode, session_id: i32) -> bool {
        if !error.is_ok() {
            self.next = if error == ErrorCode::FetchSessionIdNotFound {
                FetchSessionMeta::INITIAL
            } else {
                self.next.close_existing()
            };
            return false;
        }
        self.next = if session_id == FetchSessionMeta::NO_SESSION {
            // No session was opened, or the leader closed it.
            FetchSessionMeta::INITIAL
        } else if self.next.is_full() {
            // The leader opened a session.
            FetchSessionMeta {
                id: session_id,
                epoch: FetchSessionMeta::INITIAL_EPOCH,
            }
            .next_incremental()
        } else {
            self.next.next_incremental()
        };
        true
    }

    /// Kafka `FetchSessionHandler.handleError`: after a failed request (timeout, lost
    /// connection) the next fetch is full and closes the session.
    pub fn on_error(&mut self) {
        self.next = self.next.close_existing();
    }
}

#[cfg(test)]
#[path = "fetch_session_test.rs"]
mod fetch_session_test;
