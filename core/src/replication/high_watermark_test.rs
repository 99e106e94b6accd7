//! Leader HW advance tests, after Kafka's `PartitionTest`
//! (`testHighWatermarkIncreasesWithFencedOrShutdownFollower`, the KIP-966 under-min-ISR cases,
//! the maximal-ISR cases of KIP-497).

use std::collections::BTreeSet;

use super::high_watermark::*;
use super::isr::{IsrState, PendingIsrChange};
use super::replica::ReplicaState;
use crate::types::{BrokerId, Offset};

const LAG_MS: i64 = 30_000;
const LEADER: BrokerId = BrokerId(0);

fn follower(id: i32, leo: i64, last_caught_up: i64) -> ReplicaState {
    let mut r = ReplicaState::new(BrokerId(id));
    r.log_end_offset = Offset(leo);
    r.log_start_offset = Offset(0);
    r.last_caught_up_time_ms = last_caught_up;
    r
}

fn isr(ids: &[i32]) -> IsrState {
    IsrState::committed(ids.iter().copied().map(BrokerId))
}

const CFG: HwConfig = HwConfig {
    min_insync_replicas: 1,
    kip966_min_isr_gate: true,
};

fn all_eligible(_: BrokerId) -> bool {
    true
}

#[test]
fn test_hw_is_min_leo_of_isr() {
    let now = 1_000_000;
    let replicas = [follower(1, 7, now), follower(2, 5, now)];
    let hw = maybe_increment_leader_hw(
        Offset(9),
        Offset(0),
        &replicas,
        &isr(&[0, 1, 2]),
        all_eligible,
        now,
        LAG_MS,
        &CFG,
    );
    assert_eq!(hw, Some(Offset(5)));
}

#[test]
fn test_hw_never_decreases_and_needs_strict_increase() {
    let now = 1_000_000;
    let replicas = [follower(1, 5, now)];
    let i = isr(&[0, 1]);
    assert_eq!(
        maybe_increment_leader_hw(
            Offset(9),
            Offset(6),
            &replicas,
            &i,
            all_eligible,
            now,
            LAG_MS,
            &CFG
        ),
        None
    );
    assert_eq!(
        maybe_increment_leader_hw(
            Offset(9),
            Offset(5),
            &replicas,
            &i,
            all_eligible,
            now,
            LAG_MS,
            &CFG
        ),
        None
    );
    assert_eq!(
        maybe_increment_leader_hw(
            Offset(9),
            Offset(4),
            &replicas,
            &i,
            all_eligible,
            now,
            LAG_MS,
            &CFG
        ),
        Some(Offset(5))
    );
}

#[test]
fn test_unknown_follower_leo_in_isr_holds_hw() {
    // Right after a new leader's makeLeader, ISR followers have LEO -1 until they fetch.
    let now = 1_000_000;
    let replicas = [follower(1, -1, now)];
    assert_eq!(
        maybe_increment_leader_hw(
            Offset(10),
            Offset(0),
            &replicas,
            &isr(&[0, 1]),
            all_eligible,
            now,
            LAG_MS,
            &CFG
        ),
        None
    );
}

fn fenced_or_shutdown_case(follower_eligible: bool) -> Option<Offset> {
    // The follower caught up to 10 and was then removed from the ISR by the controller; the
    // leader appended 10 more records. It is still "caught up" by time.
    let now = 1_000_000;
    let replicas = [follower(1, 10, now)];
    let shrunk = isr(&[0]);
    maybe_increment_leader_hw(
        Offset(20),
        Offset(10),
        &replicas,
        &shrunk,
        |_| follower_eligible,
        now,
        LAG_MS,
        &CFG,
    )
}

#[test]
fn test_high_watermark_increases_with_fenced_or_shutdown_follower() {
    // "unfenced": a caught-up, eligible follower outside the ISR holds the HW (it is waited
    // for so it can join).
    assert_eq!(fenced_or_shutdown_case(true), None);
    // "fenced" / "shutdown": ineligible, so the HW moves to the leader's LEO.
    assert_eq!(fenced_or_shutdown_case(false), Some(Offset(20)));
}

#[test]
fn test_lagging_non_isr_follower_does_not_hold_hw() {
    let now = 1_000_000;
    let replicas = [follower(1, 3, now - LAG_MS - 1)];
    assert_eq!(
        maybe_increment_leader_hw(
            Offset(20),
            Offset(0),
            &replicas,
            &isr(&[0]),
            all_eligible,
            now,
            LAG_MS,
            &CFG
        ),
        Some(Offset(20))
    );
}

#[test]
fn test_high_watermark_does_not_advance_when_under_min_isr() {
    let now = 1_000_000;
    // min.insync = 2, RF 3, ISR = {leader}: KIP-966 blocks the HW.
    let replicas = [follower(1, 3, 0), follower(2, 3, 0)];
    let cfg = HwConfig {
        min_insync_replicas: 2,
        kip966_min_isr_gate: true,
    };
    assert_eq!(
        maybe_increment_leader_hw(
            Offset(20),
            Offset(0),
            &replicas,
            &isr(&[0]),
            all_eligible,
            now,
            LAG_MS,
            &cfg
        ),
        None
    );
    // Old brokers advanced the HW with ISR = {leader} even under min ISR.
    let old = HwConfig {
        kip966_min_isr_gate: false,
        ..cfg
    };
    assert_eq!(
        maybe_increment_leader_hw(
            Offset(20),
            Offset(0),
            &replicas,
            &isr(&[0]),
            all_eligible,
            now,
            LAG_MS,
            &old
        ),
        Some(Offset(20))
    );
    // At min ISR it advances.
    assert_eq!(
        maybe_increment_leader_hw(
            Offset(20),
            Offset(0),
            &replicas,
            &isr(&[0, 1]),
            all_eligible,
            now,
            LAG_MS,
            &cfg
        ),
        Some(Offset(3))
    );
}

#[test]
fn test_effective_min_isr_caps_at_replication_factor() {
    assert_eq!(effective_min_isr(3, 2), 2);
    assert_eq!(effective_min_isr(2, 3), 2);
    // min.insync = 5 on a single-replica partition: effective 1, not under min ISR.
    assert!(!is_under_min_isr(&isr(&[0]), 5, 1));
    let cfg = HwConfig {
        min_insync_replicas: 5,
        kip966_min_isr_gate: true,
    };
    assert_eq!(
        maybe_increment_leader_hw(
            Offset(4),
            Offset(0),
            &[],
            &isr(&[0]),
            all_eligible,
            0,
            LAG_MS,
            &cfg
        ),
        Some(Offset(4))
    );
    assert!(is_under_min_isr(&isr(&[0]), 2, 3));
    assert!(!is_under_min_isr(&isr(&[0, 1]), 2, 3));
}

#[test]
fn test_pending_expand_counts_in_maximal_isr() {
    // The replica being added (lagging by time, and ineligible) still holds the HW.
    let now = 1_000_000;
    let replicas = [follower(1, 6, 0)];
    let mut state = isr(&[0]);
    state.pending = Some(PendingIsrChange::Expand {
        new_in_sync_replica: BrokerId(1),
    });
    assert_eq!(
        maybe_increment_leader_hw(
            Offset(10),
            Offset(0),
            &replicas,
            &state,
            |_| false,
            now,
            LAG_MS,
            &CFG
        ),
        Some(Offset(6))
    );
}

#[test]
fn test_pending_shrink_still_counts_removed_replicas() {
    let now = 1_000_000;
    let replicas = [follower(1, 10, now), follower(2, 4, 0)];
    let mut state = isr(&[0, 1, 2]);
    state.pending = Some(PendingIsrChange::Shrink {
        out_of_sync_replicas: BTreeSet::from([BrokerId(2)]),
    });
    assert_eq!(
        maybe_increment_leader_hw(
            Offset(10),
            Offset(0),
            &replicas,
            &state,
            all_eligible,
            now,
            LAG_MS,
            &CFG
        ),
        Some(Offset(4))
    );
    // Once the shrink commits, replica 2 no longer counts (it lags by time).
    state.commit(BTreeSet::from([LEADER, BrokerId(1)]));
    assert_eq!(
        maybe_increment_leader_hw(
            Offset(10),
            Offset(4),
            &replicas,
            &state,
            all_eligible,
            now,
            LAG_MS,
            &CFG
        ),
        Some(Offset(10))
    );
}
