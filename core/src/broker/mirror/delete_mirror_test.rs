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
