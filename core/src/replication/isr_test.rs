//! ISR expand / shrink tests, after Kafka's `PartitionTest` (`testIsrExpansion`,
//! `testIsrNotExpandedIfUpdateFails`, `testIsrNotExpandedIfReplicaIsFencedOrShutdown`,
//! `testMaybeShrinkIsr`, `testShouldNotShrinkIsrIfPreviousFetchIsCaughtUp`,
//! `testShouldNotShrinkIsrIfFollowerCaughtUpToLogEnd`, acks=all checks).

use std::collections::BTreeSet;

use super::isr::*;
use super::replica::ReplicaState;
use crate::protocol::ErrorCode;
use crate::types::{BrokerId, Offset};

const LAG_MS: i64 = 30_000;
const LEADER: BrokerId = BrokerId(0);
const REMOTE: BrokerId = BrokerId(1);

fn set(ids: &[i32]) -> BTreeSet<BrokerId> {
    ids.iter().copied().map(BrokerId).collect()
}

/// Kafka's `fetchFollower`: the leader records a fetch at `offset` with its LEO `leader_leo`.
fn fetch(r: &mut ReplicaState, offset: i64, now: i64, leader_leo: i64) {
    r.update_fetch_state(
        Offset(offset),
        Offset(0),
        now,
        Offset(leader_leo),
        1,
        Some(1),
    )
    .expect("fresh broker epoch");
}

#[test]
fn test_isr_expansion() {
    // 10 records in epoch 4; becoming leader in epoch 5 at LEO 10, HW 0, ISR = {leader}.
    let epoch_start = Some(Offset(10));
    let mut state = IsrState::committed([LEADER]);
    let mut remote = ReplicaState::new(REMOTE);
    remote.reset_replica_state(1_000, Offset(10), true, false);
    assert_eq!(remote.last_caught_up_time_ms, ReplicaState::NEVER_MS);

    fetch(&mut remote, 3, 2_000, 10);
    // LEO 3 >= HW 0 but below the epoch start 10 (KIP-320 rule 4): no expansion.
    assert!(!should_expand_isr(
        &remote,
        &state,
        true,
        Offset(0),
        epoch_start
    ));

    fetch(&mut remote, 10, 3_000, 10);
    assert_eq!(remote.last_caught_up_time_ms, 3_000);
    assert!(should_expand_isr(
        &remote,
        &state,
        true,
        Offset(0),
        epoch_start
    ));
    assert_eq!(state.prepare_isr_expand(REMOTE), Some(set(&[0, 1])));
    assert_eq!(state.isr, set(&[0]));
    assert_eq!(state.maximal_isr(), set(&[0, 1]));
    // In flight: no second proposal.
    assert!(!should_expand_isr(
        &remote,
        &state,
        true,
        Offset(0),
        epoch_start
    ));
    assert_eq!(state.prepare_isr_expand(REMOTE), None);

    state.commit(set(&[0, 1]));
    assert_eq!(state.isr, set(&[0, 1]));
    assert!(!state.is_inflight());
    // Already in the ISR.
    assert!(!should_expand_isr(
        &remote,
        &state,
        true,
        Offset(0),
        epoch_start
    ));
}

#[test]
fn test_isr_not_expanded_if_update_fails() {
    let mut state = IsrState::committed([LEADER]);
    state.prepare_isr_expand(REMOTE);
    // A non-retriable error such as INVALID_UPDATE_VERSION leaves the change pending until
    // new metadata arrives: the maximal ISR keeps the replica.
    assert_eq!(state.isr, set(&[0]));
    assert_eq!(state.maximal_isr(), set(&[0, 1]));
    // INELIGIBLE_REPLICA / OPERATION_NOT_ATTEMPTED reset to the committed state.
    state.revert_to_committed();
    assert_eq!(state.maximal_isr(), set(&[0]));
    assert!(!state.is_inflight());
}

#[test]
fn test_isr_not_expanded_if_replica_is_fenced_or_shutdown() {
    let state = IsrState::committed([LEADER]);
    let mut remote = ReplicaState::new(REMOTE);
    fetch(&mut remote, 10, 1_000, 10);
    let eligible =
        |fenced, shutdown| is_replica_isr_eligible(fenced, shutdown, remote.broker_epoch, Some(1));
    assert!(!should_expand_isr(
        &remote,
        &state,
        eligible(true, false),
        Offset(10),
        Some(Offset(10))
    ));
    assert!(!should_expand_isr(
        &remote,
        &state,
        eligible(false, true),
        Offset(10),
        Some(Offset(10))
    ));
    assert!(should_expand_isr(
        &remote,
        &state,
        eligible(false, false),
        Offset(10),
        Some(Offset(10))
    ));
}

#[test]
fn test_isr_not_expanded_if_broker_epoch_is_stale() {
    assert!(is_broker_epoch_isr_eligible(Some(2), Some(2)));
    assert!(is_broker_epoch_isr_eligible(Some(-1), Some(2)));
    assert!(!is_broker_epoch_isr_eligible(Some(1), Some(2)));
    assert!(!is_broker_epoch_isr_eligible(None, Some(2)));
    assert!(!is_broker_epoch_isr_eligible(Some(2), None));
}

#[test]
fn test_isr_expansion_requires_hw_and_leadership() {
    let state = IsrState::committed([LEADER]);
    let mut remote = ReplicaState::new(REMOTE);
    fetch(&mut remote, 8, 1_000, 12);
    // Below the HW.
    assert!(!should_expand_isr(
        &remote,
        &state,
        true,
        Offset(9),
        Some(Offset(5))
    ));
    // Exactly at the HW and above the epoch start.
    assert!(should_expand_isr(
        &remote,
        &state,
        true,
        Offset(8),
        Some(Offset(5))
    ));
    // Not leader: no epoch start offset.
    assert!(!should_expand_isr(&remote, &state, true, Offset(8), None));
}

#[test]
fn test_maybe_shrink_isr() {
    let state = IsrState::committed([LEADER, REMOTE]);
    let mut remote = ReplicaState::new(REMOTE);
    // makeLeader at t=0 with the follower in the ISR: caught up "now".
    remote.reset_replica_state(0, Offset(10), true, true);
    assert!(
        out_of_sync_replicas(
            LEADER,
            std::slice::from_ref(&remote),
            &state,
            Offset(10),
            LAG_MS,
            LAG_MS
        )
        .is_empty()
    );
    // No fetch for longer than the lag: out of sync.
    assert_eq!(
        out_of_sync_replicas(LEADER, &[remote], &state, Offset(10), LAG_MS + 1, LAG_MS),
        set(&[1])
    );
}

#[test]
fn test_should_not_shrink_isr_if_previous_fetch_is_caught_up() {
    let state = IsrState::committed([LEADER, REMOTE]);
    let mut remote = ReplicaState::new(REMOTE);
    remote.reset_replica_state(0, Offset(10), true, true);
    // First fetch at 5_000 is behind the LEO (10) but reaches the leader LEO of the previous
    // fetch (unknown, -1): caught up as of the previous fetch time (0).
    fetch(&mut remote, 5, 5_000, 10);
    // Leader appends to 15; the next fetch reaches 10, the LEO at the previous fetch: caught up
    // as of 5_000.
    fetch(&mut remote, 10, 10_000, 15);
    assert_eq!(remote.last_caught_up_time_ms, 5_000);
    let now = 5_000 + LAG_MS;
    assert!(
        out_of_sync_replicas(
            LEADER,
            std::slice::from_ref(&remote),
            &state,
            Offset(15),
            now,
            LAG_MS
        )
        .is_empty()
    );
    assert_eq!(
        out_of_sync_replicas(LEADER, &[remote], &state, Offset(15), now + 1, LAG_MS),
        set(&[1])
    );
}

#[test]
fn test_should_not_shrink_isr_if_follower_caught_up_to_log_end() {
    let state = IsrState::committed([LEADER, REMOTE]);
    let mut remote = ReplicaState::new(REMOTE);
    fetch(&mut remote, 10, 0, 10);
    // Long idle, but its LEO equals the leader's.
    assert!(
        out_of_sync_replicas(LEADER, &[remote], &state, Offset(10), 10 * LAG_MS, LAG_MS).is_empty()
    );
}

#[test]
fn test_out_of_sync_replicas_edge_cases() {
    let lagging = ReplicaState::new(BrokerId(2));
    let mut state = IsrState::committed([LEADER, BrokerId(2), BrokerId(3)]);
    let now = 10 * LAG_MS;
    // The leader is never a candidate; a replica the leader has no state for is out of sync.
    assert_eq!(
        out_of_sync_replicas(
            LEADER,
            std::slice::from_ref(&lagging),
            &state,
            Offset(10),
            now,
            LAG_MS
        ),
        set(&[2, 3])
    );
    // Nothing while an AlterPartition is in flight.
    assert_eq!(state.prepare_isr_shrink(&set(&[2, 3])), Some(set(&[0])));
    assert!(out_of_sync_replicas(LEADER, &[lagging], &state, Offset(10), now, LAG_MS).is_empty());
    // The pending shrink keeps the old set as the maximal ISR.
    assert_eq!(state.maximal_isr(), set(&[0, 2, 3]));
    assert_eq!(state.prepare_isr_shrink(&set(&[2])), None);
    assert_eq!(
        IsrState::committed([LEADER]).prepare_isr_shrink(&BTreeSet::new()),
        None
    );
}

#[test]
fn test_produce_acks_all_precheck() {
    assert_eq!(
        produce_acks_all_precheck(1, 2, 3),
        Err(ErrorCode::NotEnoughReplicas)
    );
    assert_eq!(produce_acks_all_precheck(2, 2, 3), Ok(()));
    // Effective min ISR = min(min.insync, replicas).
    assert_eq!(produce_acks_all_precheck(1, 3, 1), Ok(()));
    assert_eq!(
        produce_acks_all_precheck(1, 3, 2),
        Err(ErrorCode::NotEnoughReplicas)
    );
}

#[test]
fn test_check_enough_replicas_reach_offset() {
    assert_eq!(
        check_enough_replicas_reach_offset(Offset(4), Offset(5), 3, 2),
        (false, ErrorCode::None)
    );
    assert_eq!(
        check_enough_replicas_reach_offset(Offset(5), Offset(5), 3, 2),
        (true, ErrorCode::None)
    );
    assert_eq!(
        check_enough_replicas_reach_offset(Offset(5), Offset(5), 1, 2),
        (true, ErrorCode::NotEnoughReplicasAfterAppend)
    );
}

#[test]
fn membership_and_size_of_the_maximal_isr_match_the_built_set() {
    // Goal: the allocation-free `in_maximal_isr`/`maximal_isr_len` answer exactly as the set
    // `maximal_isr` builds, with nothing in flight, an expand (of a new member or, after
    // metadata raced it, of one already committed) and a shrink.
    let pendings = [
        None,
        Some(PendingIsrChange::Expand {
            new_in_sync_replica: BrokerId(3),
        }),
        Some(PendingIsrChange::Expand {
            new_in_sync_replica: BrokerId(1),
        }),
        Some(PendingIsrChange::Shrink {
            out_of_sync_replicas: set(&[1]),
        }),
    ];
    for committed in [set(&[]), set(&[0]), set(&[0, 1]), set(&[0, 1, 2])] {
        for pending in &pendings {
            let state = IsrState {
                isr: committed.clone(),
                pending: pending.clone(),
            };
            let built = state.maximal_isr();
            assert_eq!(state.maximal_isr_len(), built.len(), "{state:?}");
            for b in 0..5 {
                assert_eq!(
                    state.in_maximal_isr(BrokerId(b)),
                    built.contains(&BrokerId(b)),
                    "{state:?} broker {b}"
                );
            }
        }
    }
}
