//! Sweep UX: a progress line on stderr (redrawn in place on a terminal, a plain line every
//! 50 seeds otherwise, so CI logs stay readable) and the summary table printed at the end.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};

use crate::chaos::ChaosOutcome;

/// The progress display of a sweep.
pub struct Progress {
    total: usize,
    tty: bool,
    failed: usize,
    start: std::time::Instant,
}

impl Progress {
    /// A progress display for `total` seeds (silent when `quiet`, e.g. with `--json`).
    #[must_use]
    pub fn new(total: usize, quiet: bool) -> Self {
        Self {
            total,
            tty: !quiet && std::io::stderr().is_terminal(),
            failed: if quiet { usize::MAX } else { 0 },
            start: std::time::Instant::now(),
        }
    }

    fn quiet(&self) -> bool {
        self.failed == usize::MAX
    }

    /// Seed number `done` (1-based) finished; `failed` says whether it failed.
    pub fn tick(&mut self, done: usize, failed: bool) {
        if self.quiet() {
            return;
        }
        self.failed += usize::from(failed);
        let elapsed = self.start.elapsed().as_secs_f64();
        let eta = elapsed / done.max(1) as f64 * (self.total - done) as f64;
        let line = format!(
            "[{done:>6}/{}] {} {} failed, {elapsed:.0}s elapsed, eta {eta:.0}s",
            self.total,
            bar(done, self.total),
            self.failed
        );
        if self.tty {
            eprint!("\r{line}");
            let _ = std::io::stderr().flush();
        } else if done.is_multiple_of(50) || done == self.total {
            eprintln!("{line}");
        }
    }

    /// Before printing a failure on stdout: end the in-place line so the two do not mix.
    pub fn interrupt(&self) {
        if self.tty {
            eprintln!();
        }
    }

    /// The sweep is over.
    pub fn finish(&self) {
        if self.tty {
            eprintln!();
        }
    }
}

fn bar(done: usize, total: usize) -> String {
    let width = 30;
    let filled = done * width / total.max(1);
    format!("[{}{}]", "#".repeat(filled), ".".repeat(width - filled))
}

/// What a sweep found, for the table at its end.
#[derive(Default)]
pub struct SweepSummary {
    /// Seeds run.
    pub total: usize,
    /// Seeds by short verdict (`pass`, `violation:<invariant>`, `liveness`, `crash`).
    pub by_verdict: BTreeMap<String, Vec<u64>>,
    /// Simulated seconds over all runs.
    pub sim_seconds: f64,
    /// Seeds whose repeat gave another trace hash.
    pub nondeterministic: Vec<u64>,
    /// The failures' kinds ([`ChaosOutcome::kind`]), compared with a baseline.
    pub kinds: BTreeMap<u64, String>,
}

impl SweepSummary {
    /// Records one outcome.
    pub fn add(&mut self, o: &ChaosOutcome) {
        self.total += 1;
        self.sim_seconds += o.report.as_ref().map_or(0.0, |r| r.sim_seconds);
        self.by_verdict
            .entry(o.verdict.short())
            .or_default()
            .push(o.seed);
        if !o.verdict.is_pass() {
            self.kinds.insert(o.seed, o.kind());
        }
    }

    /// Seeds that did not pass.
    #[must_use]
    pub fn failed(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self
            .by_verdict
            .iter()
            .filter(|(k, _)| k.as_str() != "pass")
            .flat_map(|(_, s)| s.iter().copied())
            .collect();
        v.sort_unstable();
        v
    }

    /// Prints the table; `wall` is the sweep's wall time in seconds, over `jobs` threads.
    pub fn print(&self, wall: f64, check_determinism: Option<u64>, jobs: usize) {
        println!();
        println!("{:<40} {:>7}  seeds", "verdict", "count");
        println!("{}", "-".repeat(72));
        for (verdict, seeds) in &self.by_verdict {
            let list = if verdict == "pass" {
                String::new()
            } else {
                abbreviated(seeds)
            };
            println!("{verdict:<40} {:>7}  {list}", seeds.len());
        }
        println!("{}", "-".repeat(72));
        let failed = self.failed();
        println!("{:<40} {:>7}", "seeds run", self.total);
        println!("{:<40} {:>7}", "passed", self.total - failed.len());
        println!("{:<40} {:>7}", "failed", failed.len());
        if let Some(n) = check_determinism {
            println!(
                "{:<40} {:>7}  {}",
                format!("determinism (every {n}th seed twice)"),
                self.nondeterministic.len(),
                abbreviated(&self.nondeterministic)
            );
        }
        let per_hour = self.total as f64 / wall.max(1e-9) * 3600.0;
        println!(
            "simulated {:.0} s in {wall:.1} s wall ({:.0}x real time), {per_hour:.0} seeds/hour on {jobs} job{}, {:.0} seeds/core-hour",
            self.sim_seconds,
            self.sim_seconds / wall.max(1e-9),
            if jobs == 1 { "" } else { "s" },
            per_hour / jobs.max(1) as f64
        );
        if let Some(peak) = super::memory::peak_resident_mib() {
            println!("peak resident memory {peak:.1} MiB (VmHWM)");
        }
    }
}

/// At most 20 seeds, then a count of the rest.
fn abbreviated(seeds: &[u64]) -> String {
    let shown: Vec<String> = seeds.iter().take(20).map(u64::to_string).collect();
    let more = seeds.len().saturating_sub(20);
    if more > 0 {
        format!("{} … (+{more})", shown.join(" "))
    } else {
        shown.join(" ")
    }
}
