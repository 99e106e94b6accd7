//! `PartitionChangeBuilder`, placement and `AlterPartition` validation as pure functions,
//! after Kafka's `PartitionChangeBuilderTest` and `ReplicationControlManagerTest`.

use std::collections::BTreeSet;

use super::replication::*;
use crate::protocol::ErrorCode;
use crate::protocol::metadata::PartitionRegistration;
use crate::types::{BrokerId, LeaderEpoch};

fn b(ids: &[i32]) -> Vec<BrokerId> {
    ids.iter().copied().map(BrokerId).collect()
}

fn reg(replicas: &[i32], isr: &[i32], leader: Option<i32>, epoch: i32) -> PartitionRegistration {
    PartitionRegistration {
        replicas: b(replicas),
        isr: b(isr),
        leader: leader.map(BrokerId),
        leader_epoch: LeaderEpoch(epoch),
        partition_epoch: 10,
        leader_recovering: false,
    }
}

#[test]
fn online_election_keeps_an_acceptable_leader_and_otherwise_follows_replica_order() {
    // Kafka: PartitionChangeBuilderTest.testElectLeader (ONLINE).
    let r = reg(&[1, 2, 3], &[1, 2, 3], Some(1), 4);
    let all = |_: BrokerId| true;
    assert_eq!(PartitionChangeBuilder::new(&r, &all).build(), None, "no-op");
    let not1 = |x: BrokerId| x != BrokerId(1);
    let c = PartitionChangeBuilder::new(&r, &not1)
        .target_isr(b(&[3, 2]))
        .build()
        .expect("change");
    // Replica order (2 before 3), not ISR order.
    assert_eq!(c.registration.leader, Some(BrokerId(2)));
    assert_eq!(c.registration.isr, b(&[3, 2]));
    assert_eq!(c.registration.leader_epoch, LeaderEpoch(5));
    assert_eq!(c.registration.partition_epoch, 11);
    assert!(c.leader_changed && !c.unclean);
}

#[test]
fn isr_change_without_leader_change_keeps_the_leader_epoch() {
    // Kafka 3.6+: no leader epoch bump on ISR shrink (KAFKA-15021 only for older MVs).
    let r = reg(&[1, 2, 3], &[1, 2, 3], Some(1), 4);
    let all = |_: BrokerId| true;
    let c = PartitionChangeBuilder::new(&r, &all)
        .target_isr(b(&[1, 2]))
        .build()
        .expect("change");
    assert_eq!(c.registration.leader_epoch, LeaderEpoch(4));
    assert_eq!(c.registration.partition_epoch, 11);
    assert!(!c.leader_changed);
}

#[test]
fn empty_target_isr_keeps_the_last_member_and_goes_offline() {
    // Pre-ELR Kafka never writes an empty ISR (PartitionChangeBuilder.build).
    let r = reg(&[1, 2], &[1], Some(1), 0);
    let none = |_: BrokerId| false;
    let c = PartitionChangeBuilder::new(&r, &none)
        .target_isr(vec![])
        .build()
        .expect("change");
    assert_eq!(c.registration.leader, None);
    assert_eq!(c.registration.isr, b(&[1]));
    assert_eq!(c.registration.leader_epoch, LeaderEpoch(1));
}

#[test]
fn unclean_election_picks_an_acceptable_replica_outside_the_isr() {
    let r = reg(&[1, 2, 3], &[1], None, 3);
    let only3 = |x: BrokerId| x == BrokerId(3);
    assert_eq!(
        PartitionChangeBuilder::new(&r, &only3)
            .election(Election::Online)
            .build(),
        None,
        "clean election finds no ISR member"
    );
    let c = PartitionChangeBuilder::new(&r, &only3)
        .election(Election::Unclean)
        .build()
        .expect("unclean");
    assert_eq!(c.registration.leader, Some(BrokerId(3)));
    assert_eq!(c.registration.isr, b(&[3]));
    assert!(c.registration.leader_recovering);
    assert!(c.unclean);
    assert_eq!(c.registration.leader_epoch, LeaderEpoch(4));
}

#[test]
fn unclean_election_prefers_a_clean_candidate() {
    let r = reg(&[1, 2, 3], &[1, 2], None, 3);
    let all = |_: BrokerId| true;
    let c = PartitionChangeBuilder::new(&r, &all)
        .election(Election::Unclean)
        .build()
        .expect("change");
    assert_eq!(c.registration.leader, Some(BrokerId(1)));
    assert!(!c.unclean);
    assert_eq!(c.registration.isr, b(&[1, 2]));
}

#[test]
fn preferred_election_moves_leadership_to_the_first_replica() {
    let r = reg(&[1, 2, 3], &[1, 2, 3], Some(2), 7);
    let all = |_: BrokerId| true;
    let c = PartitionChangeBuilder::new(&r, &all)
        .election(Election::Preferred)
        .build()
        .expect("change");
    assert_eq!(c.registration.leader, Some(BrokerId(1)));
    assert_eq!(c.registration.leader_epoch, LeaderEpoch(8));
    let not1 = |x: BrokerId| x != BrokerId(1);
    assert_eq!(
        PartitionChangeBuilder::new(&r, &not1)
            .election(Election::Preferred)
            .build(),
        None,
        "preferred replica unavailable: the current leader stays"
    );
}

#[test]
fn min_leader_epoch_bump_follows_spec_a2_formula() {
    // spec kip1279.md A.2: new epoch = max(current, MinLeaderEpoch) + 1, leader unchanged;
    // an epoch already above MinLeaderEpoch needs nothing ("epoch 11 vs target 0").
    let cases = [
        // (current, min, expected new epoch or None when already met)
        (5, 5, Some(6)),
        (5, 9, Some(10)),
        (0, 0, Some(1)),
        (11, 0, None),
        (6, 5, None),
    ];
    let all = |_: BrokerId| true;
    for (current, min, expected) in cases {
        let r = reg(&[1, 2], &[1, 2], Some(2), current);
        let c = PartitionChangeBuilder::new(&r, &all)
            .min_leader_epoch(LeaderEpoch(min))
            .build();
        match expected {
            None => assert_eq!(c, None, "current {current} min {min}"),
            Some(e) => {
                let c = c.expect("bump");
                assert_eq!(
                    c.registration.leader_epoch,
                    LeaderEpoch(e),
                    "current {current} min {min}"
                );
                assert_eq!(c.registration.leader, Some(BrokerId(2)), "leader unchanged");
                assert_eq!(c.min_leader_epoch, Some(LeaderEpoch(min)));
                assert!(!c.leader_changed);
                assert_eq!(c.registration.partition_epoch, 11);
            }
        }
    }
}

#[test]
fn alter_partition_validation_follows_kafkas_order() {
    // Kafka: ReplicationControlManager.validateAlterPartitionData. The controller holds
    // leader 1, leader epoch 5, partition epoch 10, replicas [1, 2, 3]; broker 4 is not a
    // replica, broker 3 is fenced.
    let r = reg(&[1, 2, 3], &[1, 2], Some(1), 5);
    let eligible = |x: BrokerId| x != BrokerId(3);
    type Case = (&'static str, i32, i32, i32, &'static [i32], ErrorCode);
    let cases: [Case; 11] = [
        ("valid expansion", 1, 5, 10, &[1, 2], ErrorCode::None),
        (
            "newer leader epoch",
            1,
            6,
            10,
            &[1, 2],
            ErrorCode::NotController,
        ),
        (
            "newer partition epoch",
            1,
            5,
            11,
            &[1, 2],
            ErrorCode::NotController,
        ),
        (
            "older leader epoch",
            1,
            4,
            10,
            &[1, 2],
            ErrorCode::FencedLeaderEpoch,
        ),
        (
            "not the leader",
            2,
            5,
            10,
            &[1, 2],
            ErrorCode::InvalidRequest,
        ),
        (
            "older partition epoch",
            1,
            5,
            9,
            &[1, 2],
            ErrorCode::InvalidUpdateVersion,
        ),
        ("empty ISR", 1, 5, 10, &[], ErrorCode::InvalidRequest),
        (
            "unassigned member",
            1,
            5,
            10,
            &[1, 4],
            ErrorCode::InvalidRequest,
        ),
        (
            "duplicate member",
            1,
            5,
            10,
            &[1, 1],
            ErrorCode::InvalidRequest,
        ),
        (
            "ISR without the leader",
            1,
            5,
            10,
            &[2],
            ErrorCode::InvalidRequest,
        ),
        (
            "fenced member",
            1,
            5,
            10,
            &[1, 2, 3],
            ErrorCode::IneligibleReplica,
        ),
    ];
    for (label, requester, le, pe, isr, expected) in cases {
        let got = validate_alter_partition(
            &r,
            BrokerId(requester),
            LeaderEpoch(le),
            pe,
            &b(isr),
            &eligible,
        )
        .map_or_else(ErrorCode::from, |()| ErrorCode::None);
        assert_eq!(got, expected, "{label}");
    }
}

#[test]
fn placement_is_deterministic_round_robin_from_a_name_hash() {
    let brokers: BTreeSet<BrokerId> = b(&[1, 2, 3]).into_iter().collect();
    let a = place_replicas("orders", 0..6, 2, &brokers).expect("placed");
    assert_eq!(
        a,
        place_replicas("orders", 0..6, 2, &brokers).expect("placed")
    );
    for (p, replicas) in a.iter().enumerate() {
        assert_eq!(replicas.len(), 2);
        assert_ne!(replicas[0], replicas[1]);
        // Consecutive partitions start on consecutive brokers.
        let next = &a[(p + 1) % 6];
        let i = |x: BrokerId| b(&[1, 2, 3]).iter().position(|&y| y == x).expect("known");
        assert_eq!((i(replicas[0]) + 1) % 3, i(next[0]));
        assert_eq!((i(replicas[0]) + 1) % 3, i(replicas[1]));
    }
    // Leaders spread evenly.
    let leaders: BTreeSet<_> = a.iter().map(|r| r[0]).collect();
    assert_eq!(leaders.len(), 3);
    assert_eq!(
        place_replicas("orders", 0..1, 4, &brokers),
        Err(TopicError::InvalidReplicationFactor {
            replication_factor: 4,
            usable_brokers: 3
        })
    );
    assert!(place_replicas("orders", 0..1, 0, &brokers).is_err());
}

#[test]
fn topic_names_follow_kafkas_rules() {
    assert!(is_valid_topic_name("orders.v1_x-2"));
    for bad in ["", ".", "..", "a b", "ü", &"x".repeat(250)] {
        assert!(!is_valid_topic_name(bad), "{bad:?}");
    }
    assert_eq!(unify_collision_chars("a.b"), unify_collision_chars("a_b"));
}

#[test]
#[should_panic(expected = "one_leader_per_epoch")]
fn a_leader_change_without_an_epoch_bump_is_a_broken_invariant() {
    let prev = reg(&[1, 2], &[1, 2], Some(1), 3);
    let mut next = prev.clone();
    next.leader = Some(BrokerId(2));
    next.partition_epoch += 1;
    check_partition_transition(&prev, &next);
}

#[test]
#[should_panic(expected = "leader_epoch_monotonic")]
fn a_decreasing_leader_epoch_is_a_broken_invariant() {
    let prev = reg(&[1, 2], &[1, 2], Some(1), 3);
    let mut next = prev.clone();
    next.leader_epoch = LeaderEpoch(2);
    next.partition_epoch += 1;
    check_partition_transition(&prev, &next);
}

#[test]
fn a_registration_with_a_broker_twice_in_its_isr_is_refused() {
    check_registration(&reg(&[1, 2, 3], &[1, 2, 3], Some(1), 0));
    let twice =
        std::panic::catch_unwind(|| check_registration(&reg(&[1, 2, 3], &[1, 3, 1], Some(1), 0)));
    let msg = twice.expect_err("a repeated ISR member must fail the check");
    let text = msg.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(text.starts_with("isr_distinct"), "{text}");
}
