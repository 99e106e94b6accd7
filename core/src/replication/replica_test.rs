//! `ReplicaState` tests, transcribed from Kafka's `ReplicaTest`.

use super::replica::ReplicaState;
use crate::protocol::ErrorCode;
use crate::types::{BrokerId, Offset};

const LAG_MS: i64 = 30_000;
const UNKNOWN: Offset = ReplicaState::UNKNOWN_OFFSET;

fn update(r: &mut ReplicaState, fetch: i64, start: i64, now: i64, leader_end: i64) {
    r.update_fetch_state(
        Offset(fetch),
        Offset(start),
        now,
        Offset(leader_end),
        1,
        Some(1),
    )
    .expect("fresh broker epoch");
}

#[test]
fn test_initial_state() {
    let r = ReplicaState::new(BrokerId(0));
    assert_eq!(r.log_start_offset, UNKNOWN);
    assert_eq!(r.log_end_offset, UNKNOWN);
    assert_eq!(r.last_caught_up_time_ms, ReplicaState::NEVER_MS);
    assert_eq!(r.last_fetch_leader_log_end_offset, Offset(0));
    assert_eq!(r.last_fetch_time_ms, ReplicaState::NEVER_MS);
    assert_eq!(r.broker_epoch, None);
}

#[test]
fn test_update_fetch_state() {
    let mut r = ReplicaState::new(BrokerId(0));
    update(&mut r, 5, 1, 100, 10);
    assert_eq!(
        (r.log_start_offset, r.log_end_offset),
        (Offset(1), Offset(5))
    );
    assert_eq!(r.last_caught_up_time_ms, ReplicaState::NEVER_MS);
    assert_eq!(r.last_fetch_leader_log_end_offset, Offset(10));
    assert_eq!(r.last_fetch_time_ms, 100);
    assert_eq!(r.broker_epoch, Some(1));

    // Fetch offset 10 reaches the leader LEO seen at the previous fetch: caught up as of then.
    update(&mut r, 10, 2, 200, 15);
    assert_eq!(
        (r.log_start_offset, r.log_end_offset),
        (Offset(2), Offset(10))
    );
    assert_eq!(r.last_caught_up_time_ms, 100);
    assert_eq!(r.last_fetch_leader_log_end_offset, Offset(15));
    assert_eq!(r.last_fetch_time_ms, 200);

    // Fetch offset reaches the current leader LEO: caught up now.
    update(&mut r, 15, 3, 300, 15);
    assert_eq!(r.last_caught_up_time_ms, 300);
    assert_eq!(r.last_fetch_time_ms, 300);
}

#[test]
fn test_last_caught_up_time_never_goes_back() {
    let mut r = ReplicaState::new(BrokerId(0));
    update(&mut r, 10, 0, 500, 10);
    // A fetch with an older timestamp that is caught up keeps the max.
    update(&mut r, 10, 0, 400, 10);
    assert_eq!(r.last_caught_up_time_ms, 500);
    // A lagging fetch (below both LEOs) leaves it alone.
    update(&mut r, 3, 0, 900, 12);
    assert_eq!(r.last_caught_up_time_ms, 500);
    // The leader LEO seen at fetches only grows.
    update(&mut r, 3, 0, 950, 11);
    assert_eq!(r.last_fetch_leader_log_end_offset, Offset(12));
}

#[test]
fn test_reset_replica_state_when_leader_is_reelected_and_replica_is_in_sync() {
    let mut r = ReplicaState::new(BrokerId(0));
    update(&mut r, 10, 1, 100, 10);
    r.reset_replica_state(200, Offset(11), false, true);
    assert_eq!(
        (r.log_start_offset, r.log_end_offset),
        (Offset(1), Offset(10))
    );
    assert_eq!(r.last_caught_up_time_ms, 200);
    assert_eq!(r.last_fetch_leader_log_end_offset, Offset(11));
    assert_eq!(r.last_fetch_time_ms, 200);
    assert_eq!(r.broker_epoch, Some(1));
}

#[test]
fn test_reset_replica_state_when_leader_is_reelected_and_replica_is_not_in_sync() {
    let mut r = ReplicaState::new(BrokerId(0));
    update(&mut r, 10, 1, 100, 10);
    r.reset_replica_state(200, Offset(11), false, false);
    assert_eq!(
        (r.log_start_offset, r.log_end_offset),
        (Offset(1), Offset(10))
    );
    assert_eq!(r.last_caught_up_time_ms, ReplicaState::NEVER_MS);
    assert_eq!(r.last_fetch_leader_log_end_offset, Offset(11));
    assert_eq!(r.last_fetch_time_ms, ReplicaState::NEVER_MS);
}

#[test]
fn test_reset_replica_state_when_new_leader_is_elected_and_replica_is_in_sync() {
    let mut r = ReplicaState::new(BrokerId(0));
    update(&mut r, 10, 1, 100, 10);
    r.reset_replica_state(200, Offset(11), true, true);
    assert_eq!((r.log_start_offset, r.log_end_offset), (UNKNOWN, UNKNOWN));
    assert_eq!(r.last_caught_up_time_ms, 200);
    assert_eq!(r.last_fetch_leader_log_end_offset, UNKNOWN);
    assert_eq!(r.last_fetch_time_ms, ReplicaState::NEVER_MS);
    assert_eq!(r.broker_epoch, None);
}

#[test]
fn test_reset_replica_state_when_new_leader_is_elected_and_replica_is_not_in_sync() {
    let mut r = ReplicaState::new(BrokerId(0));
    update(&mut r, 10, 1, 100, 10);
    r.reset_replica_state(200, Offset(11), true, false);
    assert_eq!((r.log_start_offset, r.log_end_offset), (UNKNOWN, UNKNOWN));
    assert_eq!(r.last_caught_up_time_ms, ReplicaState::NEVER_MS);
    assert_eq!(r.last_fetch_leader_log_end_offset, UNKNOWN);
    assert_eq!(r.last_fetch_time_ms, ReplicaState::NEVER_MS);
    assert_eq!(r.broker_epoch, None);
}

#[test]
fn test_is_caught_up_when_replica_is_caught_up_to_log_end() {
    let mut r = ReplicaState::new(BrokerId(0));
    let now = 100_000;
    assert!(!r.is_caught_up(Offset(10), now, LAG_MS));
    update(&mut r, 10, 1, now, 10);
    assert!(r.is_caught_up(Offset(10), now, LAG_MS));
    // At the leader's LEO it stays caught up however long it waits.
    assert!(r.is_caught_up(Offset(10), now + LAG_MS + 1, LAG_MS));
}

#[test]
fn test_is_caught_up_when_replica_is_not_caught_up_to_log_end() {
    let mut r = ReplicaState::new(BrokerId(0));
    let now = 100_000;
    assert!(!r.is_caught_up(Offset(10), now, LAG_MS));
    update(&mut r, 5, 1, now, 10);
    assert!(!r.is_caught_up(Offset(10), now, LAG_MS));
    update(&mut r, 10, 1, now, 15);
    assert!(r.is_caught_up(Offset(16), now, LAG_MS));
    assert!(r.is_caught_up(Offset(16), now + LAG_MS, LAG_MS));
    assert!(!r.is_caught_up(Offset(16), now + LAG_MS + 1, LAG_MS));
}

#[test]
fn test_fence_stale_updates() {
    // KRaft: the metadata's broker epoch is 2.
    let mut r = ReplicaState::new(BrokerId(0));
    assert_eq!(
        r.update_fetch_state(Offset(5), Offset(1), 1, Offset(10), 2, Some(2)),
        Ok(())
    );
    let before = r.clone();
    assert_eq!(
        r.update_fetch_state(Offset(5), Offset(2), 3, Offset(10), 1, Some(2)),
        Err(ErrorCode::NotLeaderOrFollower)
    );
    assert_eq!(r, before, "a fenced update changes nothing");
    // -1 bypasses the check; no cached epoch (ZK-like) never fences.
    assert_eq!(
        r.update_fetch_state(Offset(5), Offset(2), 4, Offset(10), -1, Some(2)),
        Ok(())
    );
    assert_eq!(
        r.update_fetch_state(Offset(5), Offset(2), 5, Offset(10), 1, None),
        Ok(())
    );
}

#[test]
fn test_is_caught_up_does_not_overflow() {
    let r = ReplicaState::new(BrokerId(0));
    assert!(!r.is_caught_up(Offset(1), i64::MAX, LAG_MS));
    let mut r2 = ReplicaState::new(BrokerId(0));
    r2.last_caught_up_time_ms = i64::MAX;
    assert!(r2.is_caught_up(Offset(1), i64::MIN, LAG_MS));
}

/// KIP-1279: a leader that truncates its own log (a mirror divergence at 1644, its log held
/// 2798) must not keep counting a follower at the old end for its HW: the follower shares at
/// most the leader's log below the cut. The HW waits at the cut until the follower's next
/// fetch reports where it really is (mirror chaos seed 918). The reported LEO itself stays
/// (PREPARING's wait reads it: the follower may still hold the cut tail).
#[test]
fn test_leader_truncation_caps_the_follower_for_the_hw() {
    use super::high_watermark::{HwConfig, maybe_increment_leader_hw};
    use super::isr::IsrState;
    let cfg = HwConfig {
        min_insync_replicas: 1,
        kip966_min_isr_gate: true,
    };
    let isr = IsrState::committed([BrokerId(2), BrokerId(3)]);
    let hw = |r: &ReplicaState| {
        maybe_increment_leader_hw(
            Offset(2900),
            Offset(1644),
            std::slice::from_ref(r),
            &isr,
            |_| true,
            110,
            LAG_MS,
            &cfg,
        )
    };
    let mut r = ReplicaState::new(BrokerId(3));
    update(&mut r, 2798, 0, 100, 2798);
    // Without the cap the leader, refilled past the cut with new data up to 2900, would
    // commit up to 2798: data the follower does not have.
    assert_eq!(hw(&r), Some(Offset(2798)));
    r.on_leader_truncated(Offset(1644));
    assert_eq!(r.log_end_offset, Offset(2798), "the reported end stays");
    assert_eq!(r.end_for_high_watermark(), Offset(1644));
    assert_eq!(hw(&r), None, "no advance until the follower fetches again");
    // A second, lower cut lowers the cap; a higher one does not raise it.
    r.on_leader_truncated(Offset(1500));
    r.on_leader_truncated(Offset(1600));
    assert_eq!(r.end_for_high_watermark(), Offset(1500));
    // A follower at or behind the cut, or unknown, is not affected.
    let mut behind = ReplicaState::new(BrokerId(4));
    update(&mut behind, 1000, 0, 100, 2798);
    behind.on_leader_truncated(Offset(1644));
    assert_eq!(behind.end_for_high_watermark(), Offset(1000));
    assert_eq!(behind.leader_truncated_to, None);
    let mut fresh = ReplicaState::new(BrokerId(5));
    fresh.on_leader_truncated(Offset(1644));
    assert_eq!(fresh.end_for_high_watermark(), UNKNOWN);
    // Its next (non-diverging) fetch, after its own truncation, reports the real end.
    update(&mut r, 1644, 0, 120, 2900);
    assert_eq!(r.leader_truncated_to, None);
    assert_eq!(r.end_for_high_watermark(), Offset(1644));
    update(&mut r, 2900, 0, 130, 2900);
    assert_eq!(hw(&r), Some(Offset(2900)));
}

#[test]
fn a_follower_out_of_the_isr_is_not_caught_up_early_in_a_run() {
    // Kafka's "0" is 1970; simulated time starts at 0, so "never" must not read as "just now".
    let mut r = ReplicaState::new(BrokerId(0));
    r.reset_replica_state(25_000, Offset(18), true, false);
    assert!(!r.is_caught_up(Offset(18), 25_000, 30_000));
    // An ISR member is caught up "now".
    r.reset_replica_state(25_000, Offset(18), true, true);
    assert!(r.is_caught_up(Offset(18), 25_000, 30_000));
}
