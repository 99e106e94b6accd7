//! Simulated time. Core never reads a clock: every input carries `now`.

use std::fmt;

/// Microseconds since the world started.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(pub u64);

impl Instant {
    /// The world's start.
    pub const ZERO: Instant = Instant(0);

    /// From milliseconds.
    #[must_use]
    pub fn from_millis(ms: i64) -> Self {
        Instant(u64::try_from(ms.max(0)).unwrap_or(0).saturating_mul(1_000))
    }

    /// Milliseconds since the start (Kafka's `time.milliseconds()` in the model).
    #[must_use]
    pub fn as_millis(self) -> i64 {
        i64::try_from(self.0 / 1_000).unwrap_or(i64::MAX)
    }

    /// `self + ms` milliseconds (negative values clamp at zero).
    #[must_use]
    pub fn plus_millis(self, ms: i64) -> Instant {
        // Saturating: a request's `timeout_ms` / `max_wait_ms` is client input, and
        // `i64::MAX` ms in µs does not fit a u64 (RPC fuzz, Fetch max_wait_ms).
        let us = u64::try_from(ms.max(0)).unwrap_or(0).saturating_mul(1_000);
        Instant(self.0.saturating_add(us))
    }

    /// `self + us` microseconds.
    #[must_use]
    pub fn plus_micros(self, us: u64) -> Instant {
        Instant(self.0.saturating_add(us))
    }

    /// Milliseconds from `earlier` to `self` (0 if `earlier` is later).
    #[must_use]
    pub fn millis_since(self, earlier: Instant) -> i64 {
        i64::try_from(self.0.saturating_sub(earlier.0) / 1_000).unwrap_or(i64::MAX)
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:03}s", self.0 / 1_000_000, (self.0 / 1_000) % 1_000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression (RPC fuzz): a Fetch with `max_wait_ms = i64::MAX` overflowed the µs
    /// conversion of its deadline. Far deadlines saturate instead.
    #[test]
    fn plus_millis_saturates_on_huge_client_timeouts() {
        assert_eq!(Instant(5).plus_millis(i64::MAX), Instant(u64::MAX));
        assert_eq!(Instant::from_millis(i64::MAX), Instant(u64::MAX));
        assert_eq!(Instant(5).plus_millis(-3), Instant(5));
        assert_eq!(Instant(5).plus_millis(2), Instant(2_005));
    }
}
