//! Property tests for `PartitionLog` over random sequences of appends (leader and follower),
//! leadership changes, truncations, log-start moves and HW moves. After every operation they
//! check kafka-semantics §2.3:
//! - (1) EpochCacheWellFormed: cache monotonic, within `[logStart, LEO]`, agreeing with
//!   every batch's epoch;
//! - (2) OffsetBounds: `logStart <= LSO <= HW <= LEO`;
//! - (9) ProducerStateIsReplay: live producer state == replay of the retained log on top
//!   of the log-start snapshot;
//! - (10) LSOFormula: LSO == min(firstUnstable, HW), with firstUnstable computed here by an
//!   independent scan of the full history of the current log (not by the producer state).
//!
//! A rejected operation must change nothing.

use std::collections::BTreeMap;

use mirror_core::log::partition_log::{LogConfig, PartitionLog};
use mirror_core::log::producer_state::AppendOrigin;
use mirror_core::record::{BatchBuilder, ControlRecord, RecordBatch, SimpleRecord};
use mirror_core::types::{LeaderEpoch, Offset, ProducerEpoch, ProducerId, Sequence};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    /// Idempotent or transactional client batch from producer `pid % 3`.
    Produce {
        pid: u8,
        txn: bool,
        n: u8,
        bad_seq: bool,
    },
    /// Plain client batch.
    ProducePlain { n: u8 },
    /// COMMIT or ABORT for producer `pid % 3` (coordinator origin).
    EndTxn { pid: u8, commit: bool },
    /// KIP-1279 MIRROR_PID_RESET.
    PidReset,
    /// New leader epoch: (epoch, LEO) assigned before any record.
    BecomeLeader,
    /// truncate_to(LEO - back), possibly beyond the LEO.
    TruncateTo { back: u8 },
    /// Raise the HW by up to `by`.
    AdvanceHw { by: u8 },
    /// Move the log start forward by up to `by` (bounded by the HW).
    AdvanceLogStart { by: u8 },
    /// Start over at LEO + gap.
    TruncateFully { gap: u8 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (any::<u8>(), any::<bool>(), 1u8..4, proptest::bool::weighted(0.1))
            .prop_map(|(pid, txn, n, bad_seq)| Op::Produce { pid, txn, n, bad_seq }),
        2 => (1u8..4).prop_map(|n| Op::ProducePlain { n }),
        3 => (any::<u8>(), any::<bool>()).prop_map(|(pid, commit)| Op::EndTxn { pid, commit }),
        1 => Just(Op::PidReset),
        2 => Just(Op::BecomeLeader),
        2 => (0u8..8).prop_map(|back| Op::TruncateTo { back }),
        4 => (0u8..6).prop_map(|by| Op::AdvanceHw { by }),
        2 => (0u8..6).prop_map(|by| Op::AdvanceLogStart { by }),
        1 => (0u8..3).prop_map(|gap| Op::TruncateFully { gap }),
    ]
}

/// What a client producer believes: epoch and next sequence.
#[derive(Clone, Copy, Default)]
struct Client {
    epoch: i16,
    next_seq: i32,
}

struct Harness {
    log: PartitionLog,
    epoch: i32,
    clients: BTreeMap<u8, Client>,
    /// Set by the last TruncateTo when Kafka's rule made it a full truncation, or when it cut
    /// at or below the log start (`truncateAndReload` deletes the snapshots there: the
    /// producers of deleted batches are forgotten).
    fully_truncated: bool,
}

fn recs(n: u8) -> Vec<SimpleRecord> {
    (0..n)
        .map(|i| SimpleRecord::value(i64::from(i), vec![i]))
        .collect()
}

impl Harness {
    fn apply(&mut self, op: &Op) {
        let before = (self.log.log_end_offset(), self.log.batch_count());
        match *op {
            Op::Produce {
                pid,
                txn,
                n,
                bad_seq,
            } => {
                let p = pid % 3;
                let c = self.clients.entry(p).or_default();
                let seq = if bad_seq { c.next_seq + 7 } else { c.next_seq };
                let pid_v = ProducerId(i64::from(p) + 100);
                let b = if txn {
                    BatchBuilder::transactional(pid_v, ProducerEpoch(c.epoch), Sequence(seq))
                } else {
                    BatchBuilder::idempotent(pid_v, ProducerEpoch(c.epoch), Sequence(seq))
                }
                .build(&recs(n));
                match self
                    .log
                    .append_as_leader(&b, LeaderEpoch(self.epoch), AppendOrigin::Client)
                {
                    Ok(info) if !info.duplicate => c.next_seq = seq + i32::from(n),
                    Ok(_) => {}
                    Err(_) => {
                        // rejected: nothing changed; the client bumps its epoch and restarts
                        assert_eq!(before, (self.log.log_end_offset(), self.log.batch_count()));
                        c.epoch += 1;
                        c.next_seq = 0;
                    }
                }
            }
            Op::ProducePlain { n } => {
                let b = BatchBuilder::new().build(&recs(n));
                self.log
                    .append_as_leader(&b, LeaderEpoch(self.epoch), AppendOrigin::Client)
                    .expect("plain appends always succeed");
            }
            Op::EndTxn { pid, commit } => {
                let p = pid % 3;
                let c = self.clients.entry(p).or_default();
                let rec = if commit {
                    ControlRecord::commit(0)
                } else {
                    ControlRecord::abort(0)
                };
                let b = BatchBuilder::transactional(
                    ProducerId(i64::from(p) + 100),
                    ProducerEpoch(c.epoch),
                    Sequence::NONE,
                )
                .build_control(rec, 0);
                if self
                    .log
                    .append_as_leader(&b, LeaderEpoch(self.epoch), AppendOrigin::Coordinator)
                    .is_err()
                {
                    assert_eq!(before, (self.log.log_end_offset(), self.log.batch_count()));
                }
            }
            Op::PidReset => {
                let b = BatchBuilder::new().build_control(ControlRecord::MirrorPidReset, 0);
                self.log
                    .append_as_leader(&b, LeaderEpoch(self.epoch), AppendOrigin::Coordinator)
                    .expect("pid reset");
                // every producer is forgotten: clients restart with a fresh epoch
                for c in self.clients.values_mut() {
                    c.epoch += 1;
                    c.next_seq = 0;
                }
            }
            Op::BecomeLeader => {
                self.epoch += 1;
                let leo = self.log.log_end_offset();
                self.log
                    .maybe_assign_epoch_start_offset(LeaderEpoch(self.epoch), leo)
                    .unwrap();
            }
            Op::TruncateTo { back } => {
                let t = Offset((self.log.log_end_offset().0 + 2 - i64::from(back)).max(0));
                // Kafka's rule: a target below the first retained batch truncates fully.
                let first = self.log.batches().next().map(RecordBatch::base_offset);
                let full = t < self.log.log_end_offset()
                    && (first.is_some_and(|f| f > t) || t <= self.log.log_start_offset());
                self.log.truncate_to(t).unwrap();
                self.resync_clients();
                self.fully_truncated = full;
            }
            Op::AdvanceHw { by } => {
                let hw =
                    (self.log.high_watermark().0 + i64::from(by)).min(self.log.log_end_offset().0);
                self.log.maybe_increment_high_watermark(Offset(hw)).unwrap();
            }
            Op::AdvanceLogStart { by } => {
                let ls = (self.log.log_start_offset().0 + i64::from(by))
                    .min(self.log.high_watermark().0);
                self.log
                    .maybe_increment_log_start_offset(Offset(ls))
                    .unwrap();
            }
            Op::TruncateFully { gap } => {
                let at = self.log.log_end_offset().plus(i64::from(gap));
                self.log.truncate_fully_and_start_at(at, None);
                self.resync_clients();
            }
        }
    }

    /// After a truncation, clients cannot know where their sequences stand: they bump.
    fn resync_clients(&mut self) {
        for c in self.clients.values_mut() {
            c.epoch += 1;
            c.next_seq = 0;
        }
    }
}

/// firstUnstable by an independent scan of the current log's full history
/// (`history` holds every batch of the current log, including those below the log start).
fn first_unstable_by_scan(
    history: &[RecordBatch],
    hw: Offset,
    log_start: Offset,
) -> Option<Offset> {
    let mut open: BTreeMap<ProducerId, Offset> = BTreeMap::new();
    let mut orphaned: Vec<Offset> = Vec::new();
    let mut unstable: Vec<Offset> = Vec::new();
    for b in history {
        if let Some(ControlRecord::MirrorPidReset) = b.control_record() {
            // producers are forgotten; their open txns can never be completed
            orphaned.extend(open.values().copied());
            open.clear();
            continue;
        }
        if !b.producer_id().is_some() {
            continue;
        }
        match b.control_record() {
            Some(ControlRecord::EndTxn { .. }) => {
                if let Some(first) = open.remove(&b.producer_id())
                    && b.base_offset() >= hw
                {
                    unstable.push(first);
                }
            }
            Some(_) => {}
            None if b.is_transactional() => {
                open.entry(b.producer_id()).or_insert(b.base_offset());
            }
            None => {}
        }
    }
    open.values()
        .chain(orphaned.iter())
        .chain(unstable.iter())
        .min()
        .map(|o| (*o).max(log_start))
}

fn check(h: &Harness, history: &[RecordBatch]) {
    let l = &h.log;
    l.check_invariants();
    assert_eq!(
        l.epoch_cache_matches_batches(),
        Ok(()),
        "EpochCacheWellFormed"
    );
    assert!(
        l.log_start_offset() <= l.last_stable_offset(),
        "OffsetBounds"
    );
    assert!(l.last_stable_offset() <= l.high_watermark(), "OffsetBounds");
    assert!(l.high_watermark() <= l.log_end_offset(), "OffsetBounds");
    assert_eq!(
        *l.producer_state(),
        l.replayed_producer_state(),
        "ProducerStateIsReplay"
    );
    let fu = first_unstable_by_scan(history, l.high_watermark(), l.log_start_offset());
    assert_eq!(l.first_unstable_offset(), fu, "firstUnstable by scan");
    let lso = match fu {
        Some(o) if o < l.high_watermark() => o,
        _ => l.high_watermark(),
    };
    assert_eq!(l.last_stable_offset(), lso, "LSOFormula");
    // The batch look-ups answer as a scan of the batches does, at every offset around the
    // log (its gaps, its start and end, and past them).
    let batches: Vec<&RecordBatch> = l.batches().collect();
    for o in (l.log_start_offset().0 - 2)..=(l.log_end_offset().0 + 2) {
        let o = Offset(o);
        let first = batches.iter().position(|b| b.last_offset() >= o);
        assert_eq!(
            l.batches_from(o).next().map(RecordBatch::base_offset),
            first.map(|i| batches[i].base_offset()),
            "batches_from({o})"
        );
        assert_eq!(
            l.batches_from(o).count(),
            first.map_or(0, |i| batches.len() - i),
            "batches_from({o}) length"
        );
        assert_eq!(
            l.batch_containing(o).map(RecordBatch::base_offset),
            batches
                .iter()
                .find(|b| b.base_offset() <= o && o <= b.last_offset())
                .map(|b| b.base_offset()),
            "batch_containing({o})"
        );
    }
}

/// The full history of the current log: every batch ever appended that is still part of
/// the log's lineage (truncations cut it, full truncations restart it).
fn update_history(
    history: &mut Vec<RecordBatch>,
    log: &PartitionLog,
    op: &Op,
    fully_truncated: bool,
) {
    match op {
        Op::TruncateFully { .. } => history.clear(),
        Op::TruncateTo { .. } if fully_truncated => history.clear(),
        Op::TruncateTo { .. } => {
            let leo = log.log_end_offset();
            history.retain(|b| b.last_offset() < leo);
        }
        _ => {
            for b in log.batches() {
                if history
                    .last()
                    .is_none_or(|h| b.base_offset() > h.last_offset())
                {
                    history.push(b.clone());
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, .. ProptestConfig::default() })]

    #[test]
    fn partition_log_invariants_hold(ops in proptest::collection::vec(op(), 1..80)) {
        let mut h = Harness { log: PartitionLog::new(LogConfig::default()), epoch: 0, clients: BTreeMap::new(), fully_truncated: false };
        let mut history = Vec::new();
        for op in &ops {
            h.apply(op);
            update_history(&mut history, &h.log, op, h.fully_truncated);
            check(&h, &history);
        }
    }

    #[test]
    fn follower_replaying_the_leader_log_has_identical_state(ops in proptest::collection::vec(op(), 1..60)) {
        // A follower appending the leader's batches unchanged ends with the same bytes,
        // epoch cache, producer state and LSO bookkeeping (mirroring relies on this).
        let mut h = Harness { log: PartitionLog::new(LogConfig::default()), epoch: 0, clients: BTreeMap::new(), fully_truncated: false };
        for op in ops.iter().filter(|o| !matches!(o, Op::TruncateTo { .. } | Op::TruncateFully { .. } | Op::AdvanceLogStart { .. })) {
            h.apply(op);
        }
        let mut f = PartitionLog::new(LogConfig::default());
        for b in h.log.batches() {
            f.append_as_follower(b, None).unwrap();
        }
        f.maybe_increment_high_watermark(h.log.high_watermark()).unwrap();
        prop_assert!(h.log.batches().eq(f.batches()));
        prop_assert_eq!(h.log.producer_state().active_producers(), f.producer_state().active_producers());
        prop_assert_eq!(h.log.last_stable_offset(), f.last_stable_offset());
        prop_assert_eq!(h.log.txn_index(), f.txn_index());
        // caches agree except for a trailing become-leader entry with no records
        let mut lc = h.log.epoch_cache().clone();
        lc.truncate_from_end(h.log.log_end_offset());
        prop_assert_eq!(&lc, f.epoch_cache());
    }
}
