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
    assert_eq!(r.last_caught_up_time_ms, 0);
    assert_eq!(r.last_fetch_leader_log_end_offset, Offset(0));
    assert_eq!(r.last_fetch_time_ms, 0);
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
    assert_eq!(r.last_caught_up_time_ms, 0);
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
    assert_eq!(r.last_caught_up_time_ms, 0);
    assert_eq!(r.last_fetch_leader_log_end_offset, Offset(11));
    assert_eq!(r.last_fetch_time_ms, 0);
}

#[test]
fn test_reset_replica_state_when_new_leader_is_elected_and_replica_is_in_sync() {
    let mut r = ReplicaState::new(BrokerId(0));
    update(&mut r, 10, 1, 100, 10);
    r.reset_replica_state(200, Offset(11), true, true);
    assert_eq!((r.log_start_offset, r.log_end_offset), (UNKNOWN, UNKNOWN));
    assert_eq!(r.last_caught_up_time_ms, 200);
    assert_eq!(r.last_fetch_leader_log_end_offset, UNKNOWN);
    assert_eq!(r.last_fetch_time_ms, 0);
    assert_eq!(r.broker_epoch, None);
}

#[test]
fn test_reset_replica_state_when_new_leader_is_elected_and_replica_is_not_in_sync() {
    let mut r = ReplicaState::new(BrokerId(0));
    update(&mut r, 10, 1, 100, 10);
    r.reset_replica_state(200, Offset(11), true, false);
    assert_eq!((r.log_start_offset, r.log_end_offset), (UNKNOWN, UNKNOWN));
    assert_eq!(r.last_caught_up_time_ms, 0);
    assert_eq!(r.last_fetch_leader_log_end_offset, UNKNOWN);
    assert_eq!(r.last_fetch_time_ms, 0);
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
