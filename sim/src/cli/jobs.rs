//! `--jobs N`: runs independent items (seeds, scenarios) on up to N threads at once and hands
//! the results back in item order, so output, capsules and summaries are those of `--jobs 1`.
//!
//! Determinism does not depend on the thread count: each run still gets its own fresh OS
//! thread and madsim runtime ([`crate::world::run_seed`]; madsim seeds std's `RandomState`
//! once per thread, so a thread never serves two seeds), and runs share no state. The
//! worker threads here only call into that and never run a seed themselves.

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::sync::{Condvar, Mutex};

use super::CliError;

/// How many results may wait, finished but not yet handed back, behind a slow item: bounds
/// the memory a long seed can pin while the others run ahead.
const AHEAD_PER_JOB: usize = 4;

/// `--jobs`: the given count, or every core (`available_parallelism`); 0 is refused.
pub fn resolve(jobs: Option<usize>) -> Result<usize, CliError> {
    match jobs {
        Some(0) => Err(CliError::BadArgument(
            "--jobs: expected at least 1, got 0".into(),
        )),
        Some(n) => Ok(n),
        None => Ok(std::thread::available_parallelism().map_or(1, std::num::NonZero::get)),
    }
}

/// Runs `work` on every item, up to `jobs` at a time, and calls `emit(index, result)` on the
/// calling thread in item order. With one job everything runs on the calling thread, in
/// order, as before `--jobs` existed.
pub fn run_ordered<I, T>(
    items: &[I],
    jobs: usize,
    work: impl Fn(&I) -> T + Sync,
    mut emit: impl FnMut(usize, T),
) where
    I: Sync,
    T: Send,
{
    if jobs <= 1 || items.len() <= 1 {
        for (i, item) in items.iter().enumerate() {
            emit(i, work(item));
        }
        return;
    }
    let window = jobs * AHEAD_PER_JOB;
    // (next index to start, results handed back so far)
    let state = Mutex::new((0usize, 0usize));
    let turn = Condvar::new();
    let (tx, rx) = mpsc::channel::<(usize, T)>();
    std::thread::scope(|scope| {
        for _ in 0..jobs.min(items.len()) {
            let tx = tx.clone();
            let (state, turn, work) = (&state, &turn, &work);
            scope.spawn(move || {
                loop {
                    let i = {
                        let mut g = state.lock().unwrap_or_else(|p| p.into_inner());
                        while g.0 < items.len() && g.0 >= g.1 + window {
                            g = turn.wait(g).unwrap_or_else(|p| p.into_inner());
                        }
                        let i = g.0;
                        g.0 += 1;
                        i
                    };
                    if i >= items.len() || tx.send((i, work(&items[i]))).is_err() {
                        return;
                    }
                }
            });
        }
        drop(tx);
        let mut pending = BTreeMap::new();
        let mut next = 0;
        for (i, t) in rx {
            pending.insert(i, t);
            while let Some(t) = pending.remove(&next) {
                emit(next, t);
                next += 1;
                state.lock().unwrap_or_else(|p| p.into_inner()).1 = next;
                turn.notify_all();
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partition_key_built_on_a_worker_finds_its_entry_in_a_map_built_here() {
        // Goal: topic names are numbered process-wide, so a key a sweep's worker thread
        // builds compares, hashes and orders as one built on this thread.
        use mirror_core::keyed_map::PartitionMap;
        use mirror_core::types::TopicPartition;
        let mut m = PartitionMap::new();
        m.insert(TopicPartition::new("worker-orders", 3), 1);
        m.insert(TopicPartition::new("worker-a", 0), 2);
        let keys = std::thread::spawn(|| {
            [
                TopicPartition::new("worker-orders", 3),
                TopicPartition::new("worker-b", 9),
            ]
        })
        .join()
        .expect("worker");
        assert_eq!(m.get(&keys[0]), Some(&1));
        assert_eq!(m.get(&keys[1]), None);
        assert!(keys[1] > TopicPartition::new("worker-a", 0));
        assert_eq!(keys[0], TopicPartition::new("worker-orders", 3));
    }

    #[test]
    fn results_come_back_in_item_order_whatever_finishes_first() {
        // Goal: later items that finish first are held until the earlier ones are handed
        // back; every item is handed back exactly once, for any job count.
        let items: Vec<u64> = (0..40).collect();
        for jobs in [1, 2, 3, 8] {
            let mut seen = Vec::new();
            run_ordered(
                &items,
                jobs,
                |x| {
                    // Early items are the slow ones.
                    std::thread::sleep(std::time::Duration::from_micros(200 * (40 - x)));
                    x * 10
                },
                |i, r| seen.push((i, r)),
            );
            let want: Vec<(usize, u64)> = (0..40).map(|i| (i, i as u64 * 10)).collect();
            assert_eq!(seen, want, "jobs={jobs}");
        }
    }

    #[test]
    fn jobs_resolve_to_a_positive_count() {
        assert_eq!(resolve(Some(3)).unwrap(), 3);
        assert!(resolve(None).unwrap() >= 1);
        assert!(resolve(Some(0)).unwrap_err().to_string().contains("--jobs"));
    }
}
