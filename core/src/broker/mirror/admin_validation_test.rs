//! `DeleteMirror` validation (spec kip1279.md A.1, B §6.1): every partition of the mirror's
//! topics must read STOPPED in `__mirror_state`.

use std::collections::BTreeMap;

use super::*;

fn tp(t: &str, p: i32) -> TopicPartition {
    TopicPartition::new(t, p)
}

#[test]
fn every_partition_stopped_lets_the_request_through() {
    let states = BTreeMap::from([
        (tp("a", 0), Ok(Some(S::Stopped))),
        (tp("a", 1), Ok(Some(S::Stopped))),
        (tp("b", 0), Ok(Some(S::Stopped))),
    ]);
    assert_eq!(blocking_partitions("m1", &states), None);
}

#[test]
fn a_stopping_unknown_or_unreadable_partition_blocks_with_one_result_per_topic() {
    // Goal: desired = removed is not enough; a partition still STOPPING (or never written,
    // or unreadable) refuses the delete, naming the first such partition of each topic.
    let states = BTreeMap::from([
        (tp("a", 0), Ok(Some(S::Stopped))),
        (tp("a", 1), Ok(Some(S::Stopping))),
        (tp("a", 2), Ok(None)),
        (tp("b", 0), Err(ErrorCode::CoordinatorNotAvailable)),
        (tp("c", 0), Ok(Some(S::Stopped))),
    ]);
    let r = blocking_partitions("m1", &states).expect("blocked");
    assert_eq!(
        r.iter()
            .map(|t| (t.name.as_str(), t.error))
            .collect::<Vec<_>>(),
        vec![
            ("a", ErrorCode::InvalidClusterMirrorStates),
            ("b", ErrorCode::CoordinatorNotAvailable),
        ]
    );
    let msg = r[0].message.as_deref().unwrap_or_default();
    assert!(msg.contains("a-1") && msg.contains("STOPPING"), "{msg}");
}

fn latest_allows(s: S) -> bool {
    crate::mirror::Design::parse("latest")
        .expect("preset")
        .stop_allowed_from(s)
}

#[test]
fn a_latest_stop_passes_when_every_partition_is_mirroring_or_paused() {
    let states = BTreeMap::from([
        (tp("a", 0), Ok(Some(S::Mirroring))),
        (tp("a", 1), Ok(Some(S::Paused))),
        (tp("b", 0), Ok(Some(S::Mirroring))),
    ]);
    let topics = ["a".to_string(), "b".to_string()];
    assert_eq!(
        stop_blocking_partitions("m1", &topics, &states, latest_allows),
        None
    );
}

#[test]
fn one_failed_partition_refuses_the_whole_latest_stop_naming_every_topic() {
    // Goal: B §7.6-1, the prototype's `validateStopMirrorStates` accepts MIRRORING and PAUSED
    // only: a FAILED (or LOG_ALIGNMENT, or never written) partition refuses the request, and
    // nothing of it is applied, so every topic is answered, in request order.
    let states = BTreeMap::from([
        (tp("a", 0), Ok(Some(S::Mirroring))),
        (tp("a", 1), Ok(Some(S::Failed))),
        (tp("b", 0), Ok(Some(S::Mirroring))),
        (tp("c", 0), Ok(None)),
        (tp("d", 0), Err(ErrorCode::CoordinatorNotAvailable)),
    ]);
    let topics: Vec<String> = ["b", "a", "c", "d"].map(String::from).to_vec();
    let r = stop_blocking_partitions("m1", &topics, &states, latest_allows).expect("refused");
    assert_eq!(
        r.iter()
            .map(|t| (t.name.as_str(), t.error))
            .collect::<Vec<_>>(),
        vec![
            ("b", ErrorCode::InvalidMirrorPartitionState),
            ("a", ErrorCode::InvalidMirrorPartitionState),
            ("c", ErrorCode::InvalidMirrorPartitionState),
            ("d", ErrorCode::CoordinatorNotAvailable),
        ]
    );
    let msg = |i: usize| r[i].message.clone().unwrap_or_default();
    assert!(
        msg(1).contains("a-1") && msg(1).contains("FAILED"),
        "{}",
        msg(1)
    );
    assert!(
        msg(0).starts_with("not applied:") && msg(0).contains("a-1"),
        "{}",
        msg(0)
    );
    assert!(msg(2).contains("UNKNOWN"), "{}", msg(2));
}

#[test]
fn the_seed_rule_would_let_preparing_and_failed_partitions_stop() {
    // Goal: the validation is the design's rule (`Design::stop_allowed_from`); seed's A.1/A.2
    // allow PREPARING and FAILED, which latest refuses.
    let states = BTreeMap::from([
        (tp("a", 0), Ok(Some(S::Preparing))),
        (tp("a", 1), Ok(Some(S::Failed))),
    ]);
    let seed = crate::mirror::Design::parse("seed").expect("preset");
    let topics = ["a".to_string()];
    assert_eq!(
        stop_blocking_partitions("m1", &topics, &states, |s| seed.stop_allowed_from(s)),
        None
    );
    assert!(stop_blocking_partitions("m1", &topics, &states, latest_allows).is_some());
}
