//! The world's clock: madsim's virtual time mapped to `mirror_core::time::Instant`
//! (microseconds since the world started), and exact sleeps.
//!
//! madsim's `sleep_until` never sleeps less than 1 ms (it mimics tokio), which would make a
//! timer due in 200 µs fire 800 µs late. [`sleep_exact`] resets the deadline after
//! construction, which madsim does not clamp, so node timers fire at their deadline.
//!
//! Every sleep of the simulation goes through this module as a [`Timer`], which counts the
//! madsim timers it registers, by [`TimerOwner`] ([`timers_set`]). `mirrorsim bench` needs
//! that count to build its floor world (a bare madsim world setting as many timers), and
//! madsim does not expose it. Counting reads no randomness and writes no trace line, so it
//! changes no run.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use madsim::time::Sleep;
use mirror_core::protocol::NodeId;
use mirror_core::time::Instant;

/// Maps madsim time to world time. Cheap to copy.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SimClock {
    start: madsim::time::Instant,
}

impl SimClock {
    /// A clock whose zero is now. Must be called inside a madsim runtime.
    #[must_use]
    pub fn start_now() -> Self {
        Self {
            start: madsim::time::Instant::now(),
        }
    }

    /// World time now, truncated to whole microseconds (never ahead of madsim time).
    #[must_use]
    pub fn now(&self) -> Instant {
        self.at(madsim::time::Instant::now())
    }

    /// World time of madsim instant `sim` (for a caller that read madsim's time already: a
    /// read is a call into madsim's clock, a few hundred instructions).
    #[must_use]
    pub fn at(&self, sim: madsim::time::Instant) -> Instant {
        Instant(micros(sim.saturating_duration_since(self.start)))
    }

    /// Simulated time since the world started.
    #[must_use]
    pub fn elapsed(&self) -> Duration {
        madsim::time::Instant::now().saturating_duration_since(self.start)
    }

    /// The madsim instant of world time `t`.
    #[must_use]
    pub fn to_sim(&self, t: Instant) -> madsim::time::Instant {
        self.start + Duration::from_micros(t.0)
    }

    /// Sleeps until world time `t` (returns at once if it has passed); a harness timer.
    pub async fn sleep_until(&self, t: Instant) {
        sleep_exact(self.to_sim(t), TimerOwner::Harness).await;
    }

    /// Sleeps until `ms` milliseconds after the world started.
    pub async fn sleep_until_ms(&self, ms: u64) {
        self.sleep_until(Instant(ms.saturating_mul(1_000))).await;
    }
}

/// A madsim sleep that ends exactly at `deadline`, without madsim's 1 ms minimum; its
/// timers are counted for `owner`.
pub fn sleep_exact(deadline: madsim::time::Instant, owner: TimerOwner) -> Timer {
    let mut sleep = madsim::time::sleep_until(deadline);
    Pin::new(&mut sleep).reset(deadline);
    Timer {
        sleep,
        owner,
        slot: usize::MAX,
    }
}

/// `madsim::time::sleep(duration)` (same deadline, 1 ms minimum included), counted as a
/// harness timer: the run's own waits between fault steps and its convergence polls.
pub fn sleep(duration: Duration) -> Timer {
    Timer {
        sleep: madsim::time::sleep(duration),
        owner: TimerOwner::Harness,
        slot: usize::MAX,
    }
}

/// Who set a timer: the share of the madsim timer work each part of a run causes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TimerOwner {
    /// A node driver waiting for its next timeout (or a message).
    Node(NodeId),
    /// The network's delivery task waiting for the next delivery.
    Network,
    /// The run itself: waits between fault steps, convergence polls, scenario steps.
    Harness,
}

/// Timers registered with madsim so far on this thread, by owner.
pub type TimerCounts = BTreeMap<TimerOwner, u64>;

thread_local! {
    /// One madsim runtime runs per thread (a fresh thread per seed), so per-thread counts
    /// are per-run counts once [`reset_timers`] has run at the world's start. One slot per
    /// owner, in first-use order: a [`Timer`] remembers its owner's slot, so counting a
    /// registration (once per `Pending` poll, the most frequent thing a run does) is an
    /// index, not a map search.
    static TIMERS: RefCell<Vec<(TimerOwner, u64)>> = const { RefCell::new(Vec::new()) };
}

/// Forgets the counts (a world starting on a thread that ran another before).
pub fn reset_timers() {
    TIMERS.with(|t| t.borrow_mut().clear());
}

/// The timers registered since the last [`reset_timers`] on this thread.
#[must_use]
pub fn timers_set() -> TimerCounts {
    TIMERS.with(|t| t.borrow().iter().copied().collect())
}

/// Counts one registration for `owner`, at `slot` if that is still its slot; returns the
/// slot used.
fn count_timer(owner: TimerOwner, slot: usize) -> usize {
    TIMERS.with(|t| {
        let mut t = t.borrow_mut();
        let slot = match t.get(slot) {
            Some((o, _)) if *o == owner => slot,
            _ => match t.iter().position(|(o, _)| *o == owner) {
                Some(i) => i,
                None => {
                    t.push((owner, 0));
                    t.len() - 1
                }
            },
        };
        t[slot].1 += 1;
        slot
    })
}

/// A madsim [`Sleep`] that counts its registrations. madsim registers one timer each time a
/// sleep is polled before its deadline (a re-poll after another wake registers another), so
/// a `Pending` poll is exactly one madsim timer.
#[must_use = "futures do nothing unless you `.await` or poll them"]
#[derive(Debug)]
pub struct Timer {
    sleep: Sleep,
    owner: TimerOwner,
    /// The owner's slot in this thread's counts, once known (`usize::MAX` before).
    slot: usize,
}

impl Timer {
    /// The same timer, trying `slot` first for its owner's count: a driver that sets one
    /// sleep after another passes the slot its last timer found ([`Self::slot`]), so
    /// counting a registration is an index, not a search through every owner's slot.
    pub fn with_slot(mut self, slot: usize) -> Self {
        self.slot = slot;
        self
    }

    /// The owner's slot as last found (`usize::MAX` before the first count).
    #[must_use]
    pub fn slot(&self) -> usize {
        self.slot
    }
}

impl Future for Timer {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let owner = self.owner;
        let polled = Pin::new(&mut self.sleep).poll(cx);
        if polled.is_pending() {
            self.slot = count_timer(owner, self.slot);
        }
        polled
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use mirror_core::protocol::ClusterIdx;
    use mirror_core::types::BrokerId;

    use super::*;

    #[test]
    fn counts_follow_the_owner_even_through_a_stale_slot() {
        // Goal: a timer's remembered slot is a shortcut only: after a reset (a new world on
        // this thread) it may name another owner's slot or none, and the count still goes
        // to the timer's own owner.
        let a = TimerOwner::Node(NodeId::broker(ClusterIdx(0), BrokerId(1)));
        let b = TimerOwner::Harness;
        reset_timers();
        let sa = count_timer(a, usize::MAX);
        let sb = count_timer(b, usize::MAX);
        assert_eq!(count_timer(a, sa), sa);
        reset_timers();
        assert_eq!(count_timer(b, usize::MAX), 0);
        assert_eq!(count_timer(a, sa), 1, "slot 0 is b's now");
        count_timer(a, sb);
        count_timer(TimerOwner::Network, 7);
        let counts = timers_set();
        assert_eq!(counts.get(&a), Some(&2));
        assert_eq!(counts.get(&b), Some(&1));
        assert_eq!(counts.get(&TimerOwner::Network), Some(&1));
        reset_timers();
        assert!(timers_set().is_empty());
    }
}
