//! Failback truncation points over cache shapes, and replica convergence.
//! Reference: kip1279.md A.1 PREPARING, B §8.1 steps 3-4.

use super::*;
use crate::log::epoch_cache::EpochEntry;

fn cache(entries: &[(i32, i64)]) -> LeaderEpochCache {
    let e: Vec<EpochEntry> = entries
        .iter()
        .map(|&(e, o)| EpochEntry::new(e, o))
        .collect();
    LeaderEpochCache::from_entries(&e).expect("valid cache")
}

fn lme(e: i32) -> FailbackMarker {
    FailbackMarker::Lme((e >= 0).then_some(LeaderEpoch(e)))
}

fn lmo(o: i64) -> FailbackMarker {
    FailbackMarker::Lmo((o >= 0).then_some(Offset(o)))
}

fn pos(e: i32, o: i64) -> FailbackMarker {
    FailbackMarker::Position {
        epoch: (e >= 0).then_some(LeaderEpoch(e)),
        offset: (o >= 0).then_some(Offset(o)),
    }
}

use TruncationPoint::{At, Fully, Nothing};

fn at(o: i64) -> TruncationPoint {
    At(Offset(o))
}

#[test]
fn lme_rule_over_cache_shapes() {
    // Goal: truncate at the start of the first epoch > LME; -1 truncates fully; nothing
    // when no epoch is above the LME.
    let c = cache(&[(1, 0), (3, 10), (5, 20)]);
    let leo = Offset(30);
    let cases = [
        (-1, Fully),
        (0, at(0)), // below all epochs: the whole log is unknown to the other side
        (1, at(10)),
        (2, at(10)), // in a gap between cached epochs
        (3, at(20)),
        (4, at(20)),
        (5, Nothing), // LME = latest epoch
        (9, Nothing), // above all epochs
    ];
    for (e, want) in cases {
        assert_eq!(truncation_point(&c, leo, lme(e)), want, "lme {e}");
    }
}

#[test]
fn lme_rule_on_empty_and_trimmed_caches() {
    let empty = LeaderEpochCache::new();
    assert_eq!(truncation_point(&empty, Offset(0), lme(3)), Nothing);
    assert_eq!(truncation_point(&empty, Offset(0), lme(-1)), Fully);
    assert_eq!(
        truncation_point(&empty, Offset(50), lme(0)),
        Nothing,
        "log start moved, no batches"
    );
    // Cache trimmed by retention: the first entry starts at the log start.
    let trimmed = cache(&[(3, 100), (5, 120)]);
    assert_eq!(truncation_point(&trimmed, Offset(130), lme(1)), at(100));
    assert_eq!(truncation_point(&trimmed, Offset(130), lme(3)), at(120));
    // An epoch assigned at the LEO with no data yet: nothing to cut.
    let at_leo = cache(&[(5, 0), (7, 30)]);
    assert_eq!(truncation_point(&at_leo, Offset(30), lme(5)), Nothing);
}

#[test]
fn lmo_rule() {
    // Goal: early truncates to the recorded offset.
    let c = cache(&[(1, 0), (3, 10)]);
    let leo = Offset(30);
    for (o, want) in [
        (-1, Fully),
        (0, at(0)),
        (10, at(10)),
        (29, at(29)),
        (30, Nothing),
        (100, Nothing),
    ] {
        assert_eq!(truncation_point(&c, leo, lmo(o)), want, "lmo {o}");
    }
}

#[test]
fn last_mirror_position_rule() {
    // Goal: latest: min(epoch rule, offset) when the offset is known; (-1, -1) = scratch.
    let c = cache(&[(1, 0), (3, 10), (5, 20)]);
    let leo = Offset(30);
    let cases = [
        ((-1, -1), Fully),
        ((-1, 10), Fully),
        ((3, -1), at(20)),
        ((3, 15), at(15)),
        ((3, 25), at(20)),
        ((5, 25), at(25)),
        ((5, 30), Nothing),
        ((9, 40), Nothing),
        ((0, 5), at(0)),
    ];
    for ((e, o), want) in cases {
        assert_eq!(
            truncation_point(&c, leo, pos(e, o)),
            want,
            "position ({e}, {o})"
        );
    }
}

#[test]
fn truncation_points_order_from_most_to_least() {
    assert!(Fully < at(0));
    assert!(at(0) < at(5));
    assert!(at(5) < Nothing);
}

#[test]
fn isr_convergence() {
    // Goal: B §8.1 step 4: followers must not be ahead; with the ULE flag all replicas
    // must be in the ISR and count; the ISR must meet min.insync.replicas.
    let b = |i| BrokerId(i);
    let leo = Offset(100);
    // (followers, wait_all, replicas, isr, min_isr, converged)
    type Case = (Vec<FollowerLeo>, bool, usize, usize, usize, bool);
    let cases: Vec<Case> = vec![
        (vec![], false, 1, 1, 1, true),
        (
            vec![(b(2), Offset(100), true), (b(3), Offset(40), true)],
            false,
            3,
            3,
            2,
            true,
        ),
        (
            vec![(b(2), Offset(120), true), (b(3), Offset(40), true)],
            false,
            3,
            3,
            2,
            false,
        ),
        // An out-of-ISR replica ahead is ignored without the flag...
        (
            vec![(b(2), Offset(100), true), (b(3), Offset(150), false)],
            false,
            3,
            2,
            2,
            true,
        ),
        // ...but blocks with it (and the ISR lacking a replica blocks too).
        (
            vec![(b(2), Offset(100), true), (b(3), Offset(150), false)],
            true,
            3,
            2,
            2,
            false,
        ),
        (
            vec![(b(2), Offset(100), true), (b(3), Offset(90), true)],
            true,
            3,
            3,
            2,
            true,
        ),
        (
            vec![(b(2), Offset(100), true), (b(3), Offset(150), true)],
            true,
            3,
            3,
            2,
            false,
        ),
        // ISR below min.insync.replicas waits.
        (vec![(b(2), Offset(10), true)], false, 3, 1, 2, false),
        (vec![], false, 3, 1, 2, false),
    ];
    for (i, (followers, wait_all, replicas, isr, min_isr, want)) in cases.into_iter().enumerate() {
        assert_eq!(
            isr_converged(leo, &followers, wait_all, replicas, isr, min_isr),
            want,
            "case {i}"
        );
    }
}
