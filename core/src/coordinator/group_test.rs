use super::*;

fn tp(t: &str, p: i32) -> TopicPartition {
    TopicPartition::new(t, p)
}

/// Commits as a runtime would: validate, append (kept in `log`), replay once committed.
fn commit(
    c: &mut GroupCoordinator,
    log: &mut Vec<CoordinatorRecord>,
    now_ms: i64,
    group: &str,
    member: Option<&str>,
    offsets: &[(TopicPartition, Offset, Option<LeaderEpoch>)],
) -> Vec<(TopicPartition, ErrorCode)> {
    let (results, records) = c.handle_offset_commit(now_ms, group, member, offsets);
    for r in &records {
        c.replay(&r.key, r.value.as_deref()).unwrap();
    }
    log.extend(records);
    results
}

fn loaded() -> GroupCoordinator {
    let mut c = GroupCoordinator::new();
    c.complete_load(0);
    c
}

#[test]
fn simple_commit_into_an_unknown_group_creates_it() {
    // Goal: an admin/manual commit (no member) into an empty or unknown group is accepted.
    let mut c = loaded();
    let mut log = Vec::new();
    let res = commit(
        &mut c,
        &mut log,
        7,
        "g",
        None,
        &[(tp("a", 0), Offset(5), Some(LeaderEpoch(2)))],
    );
    assert_eq!(res, vec![(tp("a", 0), ErrorCode::None)]);
    assert_eq!(
        c.committed("g", &tp("a", 0)),
        Some(&CommittedOffset {
            offset: Offset(5),
            leader_epoch: Some(LeaderEpoch(2)),
            commit_timestamp_ms: 7
        })
    );
    assert!(!c.is_group_active("g"));
    assert_eq!(c.groups().collect::<Vec<_>>(), vec!["g"]);
}

#[test]
fn offsets_are_visible_only_after_the_records_commit() {
    // Goal: handle_offset_commit changes nothing until the runtime replays its records.
    let mut c = loaded();
    let (res, records) = c.handle_offset_commit(0, "g", None, &[(tp("a", 0), Offset(1), None)]);
    assert_eq!(res, vec![(tp("a", 0), ErrorCode::None)]);
    assert_eq!(records.len(), 1);
    assert!(c.handle_offset_fetch("g", None).is_empty());
    c.replay(&records[0].key, records[0].value.as_deref())
        .unwrap();
    assert_eq!(
        c.handle_offset_fetch("g", None).get(&tp("a", 0)),
        Some(&(Offset(1), None))
    );
}

#[test]
fn commits_into_active_groups_need_a_member() {
    // Goal: Kafka's validateOffsetCommit: memberless commit into a non-empty group ->
    // UNKNOWN_MEMBER_ID (what KIP-1279 offset sync relies on), unknown member ->
    // UNKNOWN_MEMBER_ID, member of an unknown group -> GROUP_ID_NOT_FOUND.
    let mut c = loaded();
    let mut log = Vec::new();
    let offs = [(tp("a", 0), Offset(3), None), (tp("a", 1), Offset(4), None)];
    assert_eq!(
        commit(&mut c, &mut log, 0, "g", Some("m1"), &offs),
        vec![
            (tp("a", 0), ErrorCode::GroupIdNotFound),
            (tp("a", 1), ErrorCode::GroupIdNotFound)
        ]
    );
    assert_eq!(c.handle_heartbeat(0, "g", "m1", 10_000).0, ErrorCode::None);
    assert!(c.is_group_active("g"));
    let (res, records) = c.handle_offset_commit(0, "g", None, &offs);
    assert!(records.is_empty());
    assert!(res.iter().all(|(_, e)| *e == ErrorCode::UnknownMemberId));
    // an empty member id is a memberless commit
    let (res, _) = c.handle_offset_commit(0, "g", Some(""), &offs);
    assert!(res.iter().all(|(_, e)| *e == ErrorCode::UnknownMemberId));
    let (res, _) = c.handle_offset_commit(0, "g", Some("m2"), &offs);
    assert!(res.iter().all(|(_, e)| *e == ErrorCode::UnknownMemberId));
    // the member itself commits
    let res = commit(&mut c, &mut log, 0, "g", Some("m1"), &offs);
    assert!(res.iter().all(|(_, e)| *e == ErrorCode::None));
    assert_eq!(c.committed("g", &tp("a", 1)).unwrap().offset, Offset(4));
    // once the group is empty again, the simple commit is accepted
    assert_eq!(c.handle_leave("g", "m1").0, ErrorCode::None);
    assert!(!c.is_group_active("g"));
    let res = commit(
        &mut c,
        &mut log,
        0,
        "g",
        None,
        &[(tp("a", 0), Offset(9), None)],
    );
    assert_eq!(res, vec![(tp("a", 0), ErrorCode::None)]);
    assert_eq!(
        c.handle_offset_commit(0, "", None, &offs).0[0].1,
        ErrorCode::InvalidRequest
    );
}

#[test]
fn offset_fetch_filters_partitions() {
    // Goal: None = all committed partitions; a list returns only the committed ones.
    let mut c = loaded();
    let mut log = Vec::new();
    commit(
        &mut c,
        &mut log,
        0,
        "g",
        None,
        &[
            (tp("a", 0), Offset(1), None),
            (tp("b", 0), Offset(2), Some(LeaderEpoch(1))),
        ],
    );
    assert_eq!(c.handle_offset_fetch("g", None).len(), 2);
    let got = c.handle_offset_fetch("g", Some(&[tp("b", 0), tp("c", 0)]));
    assert_eq!(
        got.into_iter().collect::<Vec<_>>(),
        vec![(tp("b", 0), (Offset(2), Some(LeaderEpoch(1))))]
    );
    assert!(c.handle_offset_fetch("nope", None).is_empty());
}

#[test]
fn members_join_refresh_leave_and_expire() {
    // Goal: heartbeat joins/refreshes, leave removes, the session timeout expires; only
    // membership changes produce records.
    let mut c = loaded();
    let (e, recs) = c.handle_heartbeat(0, "g", "m1", 1_000);
    assert_eq!((e, recs.len()), (ErrorCode::None, 1));
    let (_, recs) = c.handle_heartbeat(0, "g", "m2", 3_000);
    assert_eq!(recs.len(), 1);
    assert_eq!(c.next_member_expiry_ms(), Some(1_000));
    let (_, recs) = c.handle_heartbeat(900, "g", "m1", 1_000);
    assert!(recs.is_empty(), "refresh only");
    assert!(c.expire_members(1_899).is_empty());
    assert_eq!(c.members("g"), vec!["m1", "m2"]);
    let recs = c.expire_members(1_900);
    assert_eq!(recs.len(), 1);
    assert_eq!(c.members("g"), vec!["m2"]);
    assert!(c.is_group_active("g"));
    assert_eq!(c.handle_leave("g", "m1").0, ErrorCode::UnknownMemberId);
    assert_eq!(c.handle_leave("x", "m1").0, ErrorCode::UnknownMemberId);
    assert_eq!(c.expire_members(3_000).len(), 1);
    assert!(!c.is_group_active("g"));
    assert_eq!(c.next_member_expiry_ms(), None);
    assert_eq!(
        c.handle_heartbeat(0, "g", "", 1_000).0,
        ErrorCode::InvalidRequest
    );
    assert_eq!(
        c.handle_heartbeat(0, "g", "m", 0).0,
        ErrorCode::InvalidRequest
    );
}

#[test]
fn reload_restores_offsets_and_active_members() {
    // Goal: after a coordinator failover the group is still active (members restored with a
    // fresh session from load time) and offsets are the committed ones.
    let mut c = loaded();
    let mut log = Vec::new();
    let (_, r) = c.handle_heartbeat(0, "g", "m1", 10_000);
    log.extend(r);
    let (_, r) = c.handle_heartbeat(0, "g", "m2", 10_000);
    log.extend(r);
    commit(
        &mut c,
        &mut log,
        5,
        "g",
        Some("m1"),
        &[(tp("a", 0), Offset(10), Some(LeaderEpoch(3)))],
    );
    commit(
        &mut c,
        &mut log,
        6,
        "g",
        Some("m1"),
        &[(tp("a", 0), Offset(12), Some(LeaderEpoch(3)))],
    );
    let (_, r) = c.handle_leave("g", "m2");
    log.extend(r);
    commit(
        &mut c,
        &mut log,
        7,
        "simple",
        None,
        &[(tp("b", 0), Offset(1), None)],
    );
    // replaying the live group-metadata records after load changes nothing
    for r in &log {
        c.replay(&r.key, r.value.as_deref()).unwrap();
    }
    assert_eq!(c.members("g"), vec!["m1"]);

    let mut re = GroupCoordinator::new();
    for r in &log {
        re.replay(&r.key, r.value.as_deref()).unwrap();
    }
    assert_eq!(
        re.next_member_expiry_ms(),
        None,
        "no timers before load completes"
    );
    re.complete_load(50_000);
    assert_eq!(re.members("g"), c.members("g"));
    assert!(re.is_group_active("g"));
    assert_eq!(re.next_member_expiry_ms(), Some(60_000));
    for g in ["g", "simple"] {
        assert_eq!(
            re.handle_offset_fetch(g, None),
            c.handle_offset_fetch(g, None)
        );
    }
    assert_eq!(
        re.committed("g", &tp("a", 0)).unwrap().commit_timestamp_ms,
        6
    );
    // and it still refuses the memberless commit until the member expires
    assert_eq!(
        re.handle_offset_commit(0, "g", None, &[(tp("a", 0), Offset(0), None)])
            .0[0]
            .1,
        ErrorCode::UnknownMemberId
    );
    re.expire_members(60_000);
    assert!(!re.is_group_active("g"));
}

#[test]
fn replay_handles_tombstones_and_garbage() {
    // Goal: offset tombstones delete; foreign or garbled records are typed errors.
    let mut c = GroupCoordinator::new();
    let key = OffsetCommitKey {
        group: "g".into(),
        tp: tp("a", 0),
    }
    .encode();
    let v = OffsetCommitValue {
        offset: Offset(1),
        leader_epoch: None,
        commit_timestamp_ms: 0,
    }
    .encode();
    c.replay(&key, Some(&v)).unwrap();
    assert!(c.committed("g", &tp("a", 0)).is_some());
    c.replay(&key, None).unwrap();
    assert!(c.committed("g", &tp("a", 0)).is_none());
    let gk = GroupMetadataKey { group: "g".into() }.encode();
    let gv = GroupMetadataValue {
        members: [("m".to_string(), 5)].into_iter().collect(),
    }
    .encode();
    c.replay(&gk, Some(&gv)).unwrap();
    assert!(c.is_group_active("g"));
    c.replay(&gk, None).unwrap();
    assert!(!c.is_group_active("g"));
    let tk = crate::coordinator::records::TxnLogKey {
        transactional_id: "t".into(),
    }
    .encode();
    assert_eq!(
        c.replay(&tk, None),
        Err(RecordError::UnexpectedKeyType { got: 0 })
    );
    assert!(c.replay(&key, Some(&[0, 0, 1])).is_err());
    assert!(c.replay(&[1, 2, 3], None).is_err());
}
