//! Deadlines, not ticks: a broker keeps the next instant each of its periodic or delayed
//! actions is due, and the driver sleeps until the earliest one.

use std::collections::BTreeMap;

use crate::protocol::CorrelationId;
use crate::time::Instant;
use crate::types::{BrokerId, TopicPartition};

/// Why the broker wants to be woken.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum TimerId {
    /// Send a heartbeat to the controller.
    Heartbeat,
    /// Retry registration or metadata fetch after a failure.
    ControllerRetry,
    /// A request we sent has not been answered.
    RequestTimeout(CorrelationId),
    /// A fetcher backs off before fetching from `leader` again.
    FetchBackoff(BrokerId),
    /// Check followers for ISR shrink (`isr-expiration`).
    IsrExpiration,
    /// Write the HW checkpoint.
    HwCheckpoint,
    /// Periodic log flush (`log.flush.interval.ms`).
    LogFlush,
    /// Retention check.
    Retention,
    /// Producer id expiration.
    ProducerExpiration,
    /// A delayed (purgatory) operation's deadline.
    Delayed(u64),
    /// Retry deferred coordinator work (transaction markers).
    CoordinatorRetry,
    /// Periodic coordinator work (transaction timeouts, member expiry).
    CoordinatorTick,
    /// The earliest write timeout of a coordinator's pending writes (transaction, group,
    /// `__mirror_state`): `CoordinatorRuntime` gives each write its own timer task.
    CoordinatorWriteTimeout,
    /// Re-drive mirror partitions and mirror fetches.
    MirrorRetry,
    /// KIP-1279: the metadata sync round of a mirror this broker coordinates.
    MirrorSync(String),
    /// Partition-specific retry.
    Partition(TopicPartition),
}

/// A set of deadlines keyed by timer id (one deadline per id).
#[derive(Clone, Debug, Default)]
pub struct Timers {
    by_id: BTreeMap<TimerId, Instant>,
    by_time: BTreeMap<(Instant, TimerId), ()>,
}

impl Timers {
    /// Sets (or moves) a timer. Setting it to the instant it already has changes nothing
    /// (callers re-arm after every change that may move a deadline, most of which do not).
    pub fn set(&mut self, id: TimerId, at: Instant) {
        if self.by_id.get(&id) == Some(&at) {
            return;
        }
        if let Some(old) = self.by_id.insert(id.clone(), at) {
            self.by_time.remove(&(old, id.clone()));
        }
        self.by_time.insert((at, id), ());
    }

    /// Sets a timer unless one with this id is already due earlier.
    pub fn set_if_earlier(&mut self, id: TimerId, at: Instant) {
        match self.by_id.get(&id) {
            Some(&cur) if cur <= at => {}
            _ => self.set(id, at),
        }
    }

    /// Cancels a timer.
    pub fn cancel(&mut self, id: &TimerId) {
        if let Some(at) = self.by_id.remove(id) {
            self.by_time.remove(&(at, id.clone()));
        }
    }

    /// True if `id` is set.
    #[must_use]
    pub fn is_set(&self, id: &TimerId) -> bool {
        self.by_id.contains_key(id)
    }

    /// The earliest deadline.
    #[must_use]
    pub fn next_deadline(&self) -> Option<Instant> {
        self.by_time.first_key_value().map(|((at, _), ())| *at)
    }

    /// Removes and returns every timer due at or before `now`, earliest first.
    pub fn expire(&mut self, now: Instant) -> Vec<TimerId> {
        let mut due = Vec::new();
        while let Some(((at, _), ())) = self.by_time.first_key_value() {
            if *at > now {
                break;
            }
            let ((_, id), ()) = self.by_time.pop_first().expect("non-empty");
            self.by_id.remove(&id);
            due.push(id);
        }
        due
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timers_expire_in_deadline_order_and_can_move() {
        let mut t = Timers::default();
        t.set(TimerId::Heartbeat, Instant(30));
        t.set(TimerId::HwCheckpoint, Instant(10));
        t.set(TimerId::Heartbeat, Instant(5));
        assert_eq!(t.next_deadline(), Some(Instant(5)));
        t.set_if_earlier(TimerId::HwCheckpoint, Instant(20));
        assert_eq!(
            t.expire(Instant(10)),
            vec![TimerId::Heartbeat, TimerId::HwCheckpoint]
        );
        assert_eq!(t.next_deadline(), None);
        t.set(TimerId::Retention, Instant(1));
        t.cancel(&TimerId::Retention);
        assert!(t.expire(Instant(100)).is_empty());
    }
}
