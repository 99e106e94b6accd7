//! Running one seed: a fresh OS thread per seed (madsim seeds std's `RandomState` once per
//! thread, so reusing a thread breaks determinism), a madsim runtime with that seed, a
//! simulated-time limit, and panics returned as errors.

use std::future::Future;
use std::time::Duration;

/// Default limit on simulated time per run: long enough for any scenario, short enough
/// that a livelocked run fails instead of spinning.
pub const DEFAULT_TIME_LIMIT: Duration = Duration::from_secs(24 * 3600);

/// The summary of one run.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunReport {
    /// The seed.
    pub seed: u64,
    /// FNV-1a hash of the whole trace, 16 hex digits.
    pub trace_hash: String,
    /// Simulated time the run took.
    pub sim_seconds: f64,
    /// Numbered trace events.
    pub events: u64,
    /// The kept trace lines.
    pub lines: Vec<String>,
    /// What the run cost madsim: messages by link and kind, timers by owner (for `bench`;
    /// not serialized, a sweep's JSON stays as it was).
    #[serde(skip)]
    pub stats: RunStats,
}

/// The madsim-level work of one run: enough to replay its load in a bare world (the bench's
/// floor) and to count its messages per simulated second by kind.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunStats {
    /// Every node started, in order.
    pub nodes: Vec<mirror_core::protocol::NodeId>,
    /// The network's counters.
    pub net: crate::net::NetStats,
    /// Timers registered with madsim, by owner.
    pub timers: super::clock::TimerCounts,
}

/// Runs `f()` in a madsim runtime seeded with `seed` on a fresh OS thread, with
/// [`DEFAULT_TIME_LIMIT`]. A panic anywhere in the run (the main task or any node task,
/// including "time limit exceeded" and madsim's deadlock detection) comes back as
/// `Err(message)`.
pub fn run_seed<R, F, Fut>(seed: u64, f: F) -> Result<R, String>
where
    R: Send + 'static,
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = R> + 'static,
{
    run_seed_with_limit(seed, DEFAULT_TIME_LIMIT, f)
}

/// [`run_seed`] with an explicit simulated-time limit.
pub fn run_seed_with_limit<R, F, Fut>(seed: u64, limit: Duration, f: F) -> Result<R, String>
where
    R: Send + 'static,
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = R> + 'static,
{
    let thread = std::thread::Builder::new()
        .name(format!("seed-{seed}"))
        .spawn(move || {
            let mut rt =
                madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default());
            rt.set_time_limit(limit);
            rt.block_on(f())
        })
        .map_err(|e| format!("cannot spawn the thread for seed {seed}: {e}"))?;
    thread.join().map_err(|payload| panic_message(&*payload))
}

/// The text of a panic payload.
#[must_use]
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-string payload".to_owned()
    }
}
