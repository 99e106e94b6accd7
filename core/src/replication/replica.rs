//! The leader's bookkeeping of one follower (Kafka: `kafka.cluster.Replica` / `ReplicaState`).
//! Updated on every non-diverging follower fetch; read by HW advance and ISR shrink/expand.

use crate::protocol::ErrorCode;
use crate::types::{BrokerId, Offset};

/// What the leader knows about one follower (Kafka: `ReplicaState` plus the broker id).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplicaState {
    /// The follower's broker id.
    pub broker_id: BrokerId,
    /// The follower's LEO as of its last fetch (the fetch offset); -1 until it fetches.
    pub log_end_offset: Offset,
    /// The follower's log start offset as of its last fetch; -1 until it fetches.
    pub log_start_offset: Offset,
    /// The largest time `t` such that the follower's fetch offset was `>=` the leader's LEO at
    /// time `t`. Drives ISR shrink and "caught up" for the HW.
    pub last_caught_up_time_ms: i64,
    /// The leader's LEO when the last fetch from this follower arrived.
    pub last_fetch_leader_log_end_offset: Offset,
    /// When the last fetch from this follower arrived.
    pub last_fetch_time_ms: i64,
    /// The broker epoch the follower sent in its last fetch (KIP-903); `None` until then.
    pub broker_epoch: Option<i64>,
    /// KIP-1279 only: the end the leader truncated its own log to since this follower's last
    /// fetch (see [`Self::on_leader_truncated`]); `None` once the follower fetched again.
    pub leader_truncated_to: Option<Offset>,
}

impl ReplicaState {
    /// Kafka's `UnifiedLog.UnknownOffset` (-1): a follower the leader has not heard from.
    pub const UNKNOWN_OFFSET: Offset = Offset(-1);

    /// "Never" for the fetch and caught-up times. Kafka writes `0L`, the Unix epoch, which
    /// is decades before any wall-clock `now`; simulated time starts at 0, where `0` would
    /// mean "just now" and let a follower that is not in the ISR count as caught up for the
    /// first `replica.lag.time.max.ms` of a run, holding a new leader's HW at an offset the
    /// follower never reported (mirror chaos seed 420: a sole-ISR coordinator leader kept
    /// its HW below an uncommitted state record, fencing every write with
    /// FENCED_STATE_EPOCH).
    pub const NEVER_MS: i64 = i64::MIN / 2;

    /// A follower the leader has not heard from (Kafka: `ReplicaState.Empty`).
    #[must_use]
    pub fn new(broker_id: BrokerId) -> Self {
        Self {
            broker_id,
            log_end_offset: Self::UNKNOWN_OFFSET,
            log_start_offset: Self::UNKNOWN_OFFSET,
            last_caught_up_time_ms: Self::NEVER_MS,
            last_fetch_leader_log_end_offset: Offset(0),
            last_fetch_time_ms: Self::NEVER_MS,
            broker_epoch: None,
            leader_truncated_to: None,
        }
    }

    /// Records a follower fetch (Kafka: `Replica.updateFetchStateOrThrow`).
    ///
    /// Rejects the update with NOT_LEADER_OR_FOLLOWER when `broker_epoch` is stale: not -1 and
    /// below `cached_broker_epoch` (the metadata's alive-broker epoch). Otherwise
    /// `last_caught_up_time_ms` advances to the fetch time if `fetch_offset >=
    /// leader_end_offset`, else to the previous fetch time if `fetch_offset >=` the leader LEO
    /// seen at the previous fetch, else stays. This lets a follower that is always one small
    /// produce behind still count as caught up.
    pub fn update_fetch_state(
        &mut self,
        fetch_offset: Offset,
        follower_start: Offset,
        fetch_time_ms: i64,
        leader_end_offset: Offset,
        broker_epoch: i64,
        cached_broker_epoch: Option<i64>,
    ) -> Result<(), ErrorCode> {
        if broker_epoch != -1 && cached_broker_epoch.is_some_and(|c| c > broker_epoch) {
            return Err(ErrorCode::NotLeaderOrFollower);
        }
        let last_caught_up = if fetch_offset >= leader_end_offset {
            self.last_caught_up_time_ms.max(fetch_time_ms)
        } else if fetch_offset >= self.last_fetch_leader_log_end_offset {
            self.last_caught_up_time_ms.max(self.last_fetch_time_ms)
        } else {
            self.last_caught_up_time_ms
        };
        self.log_start_offset = follower_start;
        self.log_end_offset = fetch_offset;
        self.last_fetch_leader_log_end_offset =
            leader_end_offset.max(self.last_fetch_leader_log_end_offset);
        self.last_fetch_time_ms = fetch_time_ms;
        self.last_caught_up_time_ms = last_caught_up;
        self.broker_epoch = Some(broker_epoch);
        self.leader_truncated_to = None;
        Ok(())
    }

    /// Whether the follower is caught up (Kafka: `ReplicaState.isCaughtUp`): its LEO equals
    /// the leader's, or it was caught up within `replica_lag_time_max_ms`.
    #[must_use]
    pub fn is_caught_up(
        &self,
        leader_end_offset: Offset,
        now_ms: i64,
        replica_lag_time_max_ms: i64,
    ) -> bool {
        leader_end_offset == self.log_end_offset
            || now_ms.saturating_sub(self.last_caught_up_time_ms) <= replica_lag_time_max_ms
    }

    /// KIP-1279 only: the leader truncated its own log to `leader_end` (LME alignment, a
    /// mirror divergence, the LSO cut at stop, a restart at the source log start). Kafka never
    /// truncates a leader, so a follower's fetch offset always names a prefix of the leader's
    /// log (the leader records it only on a non-diverging fetch, kafka-semantics §1.2). After
    /// the cut the two share at most the leader's log below `leader_end`, and the leader may
    /// refill the rest with other data: counted at its old offset, the follower would let the
    /// HW pass what it holds (`HW ≤ min LEO over maximalIsr`, kafka-semantics §2.3 item 2;
    /// mirror chaos seeds 918, 1336, 1914). So the HW counts it at most at the cut
    /// ([`Self::end_for_high_watermark`]) until its next fetch reports where it is. The
    /// reported LEO itself stays: PREPARING's wait needs to know the follower may still hold
    /// the cut tail (prototype `maybeCompleteReplicaConvergence`).
    pub fn on_leader_truncated(&mut self, leader_end: Offset) {
        if self.log_end_offset > leader_end {
            self.leader_truncated_to = Some(
                self.leader_truncated_to
                    .map_or(leader_end, |t| t.min(leader_end)),
            );
        }
    }

    /// The offset up to which the follower counts for the leader's HW: its reported LEO,
    /// capped at a later cut of the leader's own log (KIP-1279).
    #[must_use]
    pub fn end_for_high_watermark(&self) -> Offset {
        self.leader_truncated_to
            .map_or(self.log_end_offset, |t| t.min(self.log_end_offset))
    }

    /// Re-initialises the state when this broker becomes leader in a new epoch (Kafka:
    /// `Replica.resetReplicaState`, called by `makeLeader` with `leader_end_offset` = the
    /// leader epoch start offset). An ISR member is considered caught up "now"; others get
    /// "never" (Kafka: 0, the epoch) so they do not hold the HW back. A *new* leader forgets the follower's offsets and
    /// broker epoch; a re-elected one keeps them.
    pub fn reset_replica_state(
        &mut self,
        now_ms: i64,
        leader_end_offset: Offset,
        is_new_leader: bool,
        is_follower_in_sync: bool,
    ) {
        let in_sync_time = if is_follower_in_sync {
            now_ms
        } else {
            Self::NEVER_MS
        };
        self.last_caught_up_time_ms = in_sync_time;
        if is_new_leader {
            self.log_start_offset = Self::UNKNOWN_OFFSET;
            self.log_end_offset = Self::UNKNOWN_OFFSET;
            self.last_fetch_leader_log_end_offset = Self::UNKNOWN_OFFSET;
            self.last_fetch_time_ms = Self::NEVER_MS;
            self.broker_epoch = None;
            self.leader_truncated_to = None;
        } else {
            self.last_fetch_leader_log_end_offset = leader_end_offset;
            self.last_fetch_time_ms = in_sync_time;
        }
    }
}
