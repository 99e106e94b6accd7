//! The world's clock: madsim's virtual time mapped to `mirror_core::time::Instant`
//! (microseconds since the world started), and exact sleeps.
//!
//! madsim's `sleep_until` never sleeps less than 1 ms (it mimics tokio), which would make a
//! timer due in 200 µs fire 800 µs late. [`sleep_exact`] resets the deadline after
//! construction, which madsim does not clamp, so node timers fire at their deadline.

use std::pin::Pin;
use std::time::Duration;

use madsim::time::Sleep;
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
        Instant(micros(self.elapsed()))
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

    /// Sleeps until world time `t` (returns at once if it has passed).
    pub async fn sleep_until(&self, t: Instant) {
        sleep_exact(self.to_sim(t)).await;
    }

    /// Sleeps until `ms` milliseconds after the world started.
    pub async fn sleep_until_ms(&self, ms: u64) {
        self.sleep_until(Instant(ms.saturating_mul(1_000))).await;
    }
}

/// A madsim sleep that ends exactly at `deadline`, without madsim's 1 ms minimum.
pub fn sleep_exact(deadline: madsim::time::Instant) -> Sleep {
    let mut sleep = madsim::time::sleep_until(deadline);
    Pin::new(&mut sleep).reset(deadline);
    sleep
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}
