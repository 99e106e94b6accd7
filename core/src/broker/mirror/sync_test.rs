use std::collections::{BTreeMap, BTreeSet};

use super::*;

fn e(v: i32) -> LeaderEpoch {
    LeaderEpoch(v)
}

#[test]
fn synced_offset_follows_b_8_11() {
    let start = (Offset(5), e(1));
    let end = (Offset(20), e(3));
    // Inside the destination log: the source's offset and epoch.
    assert_eq!(
        synced_offset((Offset(12), Some(e(2))), start, end),
        Some((Offset(12), Some(e(2))))
    );
    assert_eq!(
        synced_offset((Offset(20), None), start, end),
        Some((Offset(20), None)),
        "equal to the LEO is not clamped"
    );
    // Ahead of the destination: clamped to the LEO with the LEO's epoch.
    assert_eq!(
        synced_offset((Offset(1000), Some(e(7))), start, end),
        Some((Offset(20), Some(e(3))))
    );
    // Behind the log start: clamped to it with its epoch.
    assert_eq!(
        synced_offset((Offset(2), Some(e(0))), start, end),
        Some((Offset(5), Some(e(1))))
    );
    // An empty destination log has no epoch to commit with: skipped.
    assert_eq!(
        synced_offset(
            (Offset(3), Some(e(0))),
            (Offset(0), LeaderEpoch::UNDEFINED),
            (Offset(0), LeaderEpoch::UNDEFINED)
        ),
        None
    );
}

#[test]
fn config_ops_skip_excluded_keys_mirror_name_and_equal_values() {
    let source: BTreeMap<String, String> = [
        ("retention.ms", "1000"),
        ("cleanup.policy", "delete"),
        ("min.insync.replicas", "2"),
        ("mirror.name", "other"),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
    .collect();
    let dest: BTreeMap<String, String> = [
        ("cleanup.policy", "delete"),
        ("mirror.name", "m1"),
        ("local.only", "x"),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
    .collect();
    let exclude = parse_exclude(None);
    assert_eq!(
        config_ops(&source, Some(&dest), &exclude),
        vec![("retention.ms".to_string(), Some("1000".to_string()))]
    );
    // An explicit (empty) exclude list still never syncs `mirror.name`.
    let none: BTreeSet<String> = parse_exclude(Some(" , "));
    assert!(none.is_empty());
    assert_eq!(
        config_ops(&source, None, &none),
        vec![
            ("cleanup.policy".to_string(), Some("delete".to_string())),
            ("min.insync.replicas".to_string(), Some("2".to_string())),
            ("retention.ms".to_string(), Some("1000".to_string())),
        ]
    );
}

#[test]
fn default_exclude_list_is_b_5_2() {
    let d = parse_exclude(None);
    for k in [
        "min.insync.replicas",
        "unclean.leader.election.enable",
        "mirror.support.unclean.leader.election",
    ] {
        assert!(d.contains(k), "{k}");
    }
    assert_eq!(
        parse_exclude(Some("retention.bytes, min.insync.replicas")),
        ["min.insync.replicas", "retention.bytes"]
            .iter()
            .map(|k| (*k).to_string())
            .collect()
    );
}
