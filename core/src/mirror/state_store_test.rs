//! The `__mirror_state` coordinator. Tests named `test*` transcribe the prototype's
//! `ClusterMirrorCoordinatorShardTest` (kip1279.md B §4.2); the rest cover this model's
//! additions (current-leader-epoch fencing per AS18, LME-only writes, tombstones, reload).

use super::*;
use crate::mirror::state_records::MirrorPartitionStateValue;
use crate::types::TopicId;
use MirrorPartitionState as S;

const MIRROR: &str = "my-mirror";
const TOPIC_ID: TopicId = TopicId(0x42);

fn key(p: i32) -> MirrorPartitionKey {
    MirrorPartitionKey::new(MIRROR, TOPIC_ID, p)
}

fn store() -> MirrorStateStore {
    MirrorStateStore::new(Design::default())
}

/// The prototype test's `replayState`: loads a state record as if read from the log.
fn replay_state(
    s: &mut MirrorStateStore,
    p: i32,
    state: MirrorPartitionState,
    leader_epoch: i32,
    state_epoch: i32,
) {
    let value = MirrorPartitionStateValue {
        state,
        leader_epoch: LeaderEpoch(leader_epoch),
        state_epoch,
        ..MirrorPartitionStatus::unknown()
    };
    let r = partition_state_record(&key(p), Some(&value));
    s.replay(&r.key, r.value.as_deref()).expect("valid record");
}

fn write(p: i32, target: MirrorPartitionState, leader_epoch: i32, state_epoch: i32) -> StateWrite {
    StateWrite::transition(key(p), target, LeaderEpoch(leader_epoch), state_epoch)
}

fn status(s: &MirrorStateStore, p: i32) -> MirrorPartitionStatus {
    s.read(&key(p)).expect("partition known").0
}

fn decoded_state(r: &CoordinatorRecord) -> MirrorPartitionStatus {
    assert_eq!(
        MirrorStateKey::decode(&r.key).map(|k| k.key_type()),
        Ok(crate::mirror::state_records::MIRROR_PARTITION_STATE_KEY_TYPE)
    );
    MirrorPartitionStatus::decode(r.value.as_ref().expect("not a tombstone")).expect("decodes")
}

#[test]
fn test_write_partition_state_increments_state_epoch() {
    let mut s = store();
    let records = s
        .handle_write(&write(0, S::Preparing, -1, -1), None)
        .expect("ok");
    assert_eq!(records.len(), 1);
    assert_eq!(decoded_state(&records[0]).state_epoch, 1);
}

#[test]
fn test_write_partition_state_increments_state_epoch_sequentially() {
    let mut s = store();
    s.handle_write(&write(0, S::Preparing, -1, -1), None)
        .expect("ok");
    let records = s
        .handle_write(&write(0, S::Mirroring, -1, -1), None)
        .expect("ok");
    assert_eq!(records.len(), 1);
    assert_eq!(decoded_state(&records[0]).state_epoch, 2);
}

#[test]
fn test_write_partition_state_fenced_leader_epoch() {
    let mut s = store();
    replay_state(&mut s, 0, S::Preparing, 5, 1);
    assert_eq!(
        s.handle_write(&write(0, S::Mirroring, 3, -1), None),
        Err(StateWriteError::FencedLeaderEpoch {
            request: LeaderEpoch(3),
            current: LeaderEpoch(5)
        })
    );
}

#[test]
fn test_write_partition_state_leader_epoch_minus_one_skips_check() {
    let mut s = store();
    replay_state(&mut s, 0, S::Preparing, 10, 1);
    let records = s
        .handle_write(&write(0, S::Mirroring, -1, -1), Some(LeaderEpoch(11)))
        .expect("ok");
    assert_eq!(records.len(), 1);
    assert_eq!(
        decoded_state(&records[0]).leader_epoch,
        LeaderEpoch(10),
        "stored epoch kept"
    );
}

#[test]
fn test_leader_epoch_check_runs_before_state_epoch_check() {
    let mut s = store();
    replay_state(&mut s, 0, S::Preparing, 5, 5);
    assert!(matches!(
        s.handle_write(&write(0, S::Mirroring, 3, 3), None),
        Err(StateWriteError::FencedLeaderEpoch { .. })
    ));
}

#[test]
fn test_write_state_batched_leader_epoch_fencing() {
    // One WriteMirrorStates request, two partitions: TP0 fenced, TP1 accepted.
    let mut s = store();
    replay_state(&mut s, 0, S::Preparing, 5, 1);
    replay_state(&mut s, 1, S::Preparing, 3, 1);
    let r0 = s.handle_write(&write(0, S::Mirroring, 2, -1), None);
    let r1 = s.handle_write(&write(1, S::Mirroring, 3, -1), None);
    assert_eq!(
        r0.map_err(ErrorCode::from),
        Err(ErrorCode::FencedLeaderEpoch)
    );
    assert_eq!(r1.expect("ok").len(), 1);
}

#[test]
fn test_write_partition_state_fenced_state_epoch() {
    let mut s = store();
    replay_state(&mut s, 0, S::Preparing, -1, 5);
    assert_eq!(
        s.handle_write(&write(0, S::Mirroring, -1, 3), None),
        Err(StateWriteError::FencedStateEpoch {
            request: 3,
            stored: 5
        })
    );
}

#[test]
fn test_write_partition_state_fenced_state_epoch_produces_no_records() {
    let mut s = store();
    replay_state(&mut s, 0, S::Preparing, -1, 5);
    let _ = s.handle_write(&write(0, S::Mirroring, -1, 3), None);
    let st = status(&s, 0);
    assert_eq!((st.state, st.state_epoch), (S::Preparing, 5));
}

#[test]
fn test_write_partition_state_state_epoch_minus_one_skips_check() {
    let mut s = store();
    replay_state(&mut s, 0, S::Preparing, -1, 10);
    let records = s
        .handle_write(&write(0, S::Mirroring, -1, -1), None)
        .expect("ok");
    assert_eq!(decoded_state(&records[0]).state_epoch, 11);
}

#[test]
fn test_write_state_batched_state_epoch_fencing() {
    let mut s = store();
    replay_state(&mut s, 0, S::Preparing, -1, 5);
    replay_state(&mut s, 1, S::Preparing, -1, 3);
    let r0 = s.handle_write(&write(0, S::Mirroring, -1, 2), None);
    let r1 = s
        .handle_write(&write(1, S::Mirroring, -1, 3), None)
        .expect("ok");
    assert_eq!(
        r0.map_err(ErrorCode::from),
        Err(ErrorCode::FencedStateEpoch)
    );
    assert_eq!(decoded_state(&r1[0]).state_epoch, 4);
    assert_eq!(status(&s, 1).state_epoch, 4);
}

#[test]
fn test_brokers_race_simulation() {
    // Two brokers read state epoch 5; the first write wins, the second is fenced.
    let mut s = store();
    replay_state(&mut s, 0, S::Preparing, -1, 5);
    let first = write(0, S::Failed, -1, 5).with_error("error", 1);
    assert_eq!(s.handle_write(&first, None).expect("ok").len(), 1);
    assert!(matches!(
        s.handle_write(&write(0, S::Mirroring, -1, 5), None),
        Err(StateWriteError::FencedStateEpoch {
            request: 5,
            stored: 6
        })
    ));
}

#[test]
fn test_replay_populates_leader_and_state_epoch() {
    let mut s = store();
    replay_state(&mut s, 0, S::Preparing, 7, 4);
    let st = status(&s, 0);
    assert_eq!(
        (st.state, st.leader_epoch, st.state_epoch),
        (S::Preparing, LeaderEpoch(7), 4)
    );
    // Epochs never go backwards on replay.
    replay_state(&mut s, 0, S::Mirroring, -1, 2);
    let st = status(&s, 0);
    assert_eq!(
        (st.state, st.leader_epoch, st.state_epoch),
        (S::Mirroring, LeaderEpoch(7), 4)
    );
}

#[test]
fn test_tombstone_removes_leader_and_state_epoch() {
    let mut s = store();
    replay_state(&mut s, 0, S::Preparing, 5, 5);
    let t = partition_state_record(&key(0), None);
    s.replay(&t.key, None).expect("ok");
    assert_eq!(s.read(&key(0)), None);
    // A new first write starts again at state epoch 1, with no leader fence.
    let records = s
        .handle_write(&write(0, S::Preparing, 1, 0), None)
        .expect("ok");
    assert_eq!(decoded_state(&records[0]).state_epoch, 1);
}

#[test]
fn current_partition_leader_epoch_fences_other_epochs() {
    // Goal: AS18: the request's leader epoch must equal the partition's current one.
    let mut s = store();
    for (request, current) in [(4, 5), (6, 5)] {
        assert_eq!(
            s.handle_write(
                &write(0, S::Preparing, request, -1),
                Some(LeaderEpoch(current))
            ),
            Err(StateWriteError::FencedLeaderEpoch {
                request: LeaderEpoch(request),
                current: LeaderEpoch(current)
            })
        );
    }
    assert_eq!(s.read(&key(0)), None, "nothing recorded");
    let records = s
        .handle_write(&write(0, S::Preparing, 5, -1), Some(LeaderEpoch(5)))
        .expect("ok");
    assert_eq!(decoded_state(&records[0]).leader_epoch, LeaderEpoch(5));
}

#[test]
fn invalid_transitions_are_skipped_without_records() {
    // Goal: B §7.2 "Invalid transitions are silently skipped": no record, no epoch bump.
    let mut s = store();
    assert_eq!(
        s.handle_write(&write(0, S::Mirroring, -1, 0), None),
        Ok(vec![])
    );
    assert_eq!(s.read(&key(0)), None);
    replay_state(&mut s, 0, S::Paused, -1, 3);
    assert_eq!(
        s.handle_write(&write(0, S::Stopping, -1, 3), None),
        Ok(vec![])
    );
    assert_eq!(status(&s, 0).state_epoch, 3);
    // Latest allows PAUSED -> STOPPING.
    let mut latest = MirrorStateStore::new(Design::parse("latest").expect("valid"));
    replay_state(&mut latest, 0, S::Paused, -1, 3);
    assert_eq!(
        latest
            .handle_write(&write(0, S::Stopping, -1, 3), None)
            .expect("ok")
            .len(),
        1
    );
    // Latest-only states are refused by seed.
    replay_state(&mut s, 1, S::Mirroring, -1, 1);
    assert_eq!(
        s.handle_write(&write(1, S::EpochFencing, -1, 1), None),
        Ok(vec![])
    );
}

#[test]
fn self_transition_re_drives_and_bumps_the_state_epoch() {
    // Goal: a new leader re-writes the current state, fencing the old leader's epoch.
    let mut s = store();
    replay_state(&mut s, 0, S::Stopping, 3, 7);
    let records = s
        .handle_write(&write(0, S::Stopping, 4, 7), Some(LeaderEpoch(4)))
        .expect("ok");
    let v = decoded_state(&records[0]);
    assert_eq!(
        (v.state, v.state_epoch, v.leader_epoch),
        (S::Stopping, 8, LeaderEpoch(4))
    );
    assert!(matches!(
        s.handle_write(&write(0, S::Stopped, 3, 7), None),
        Err(StateWriteError::FencedLeaderEpoch { .. })
    ));
}

#[test]
fn last_mirror_only_writes() {
    // Goal: B §4.2: State null/UNKNOWN + LastMirrorEpoch writes only LastMirrorEpochs; the
    // state epoch is not checked; (-1, -1) is never written.
    let mut s = store();
    replay_state(&mut s, 0, S::Stopping, 2, 9);
    let w = StateWrite::last_mirror_only(key(0), LeaderEpoch(2), (7, 130));
    let records = s.handle_write(&w, Some(LeaderEpoch(2))).expect("ok");
    assert_eq!(records.len(), 1);
    assert_eq!(
        MirrorStateKey::decode(&records[0].key),
        Ok(MirrorStateKey::LastMirrorEpochs(key(0)))
    );
    let (st, lme) = s.read(&key(0)).expect("known");
    assert_eq!(st.state_epoch, 9, "no state change");
    assert_eq!(
        lme,
        LastMirrorEpochsValue {
            last_mirror_epoch: 7,
            last_mirror_offset: 130
        }
    );

    let unknown_target = StateWrite {
        target_state: Some(S::Unknown),
        state_epoch: 1,
        ..StateWrite::last_mirror_only(key(1), LeaderEpoch::UNDEFINED, (3, -1))
    };
    assert_eq!(s.handle_write(&unknown_target, None).expect("ok").len(), 1);
    let (st1, lme1) = s.read(&key(1)).expect("known");
    assert_eq!(st1.state, S::Unknown);
    assert_eq!(lme1.last_mirror_epoch, 3);

    let nothing = StateWrite::last_mirror_only(key(2), LeaderEpoch::UNDEFINED, (-1, -1));
    assert_eq!(s.handle_write(&nothing, None), Ok(vec![]));
    assert_eq!(s.read(&key(2)), None);

    // A stale leader cannot overwrite the marker.
    let stale = StateWrite::last_mirror_only(key(0), LeaderEpoch(1), (9, 999));
    assert!(s.handle_write(&stale, None).is_err());
    assert_eq!(s.read(&key(0)).expect("known").1.last_mirror_epoch, 7);
}

#[test]
fn state_and_marker_in_one_write() {
    // Goal: a transition with a marker yields the state record then the marker record; an
    // invalid transition still records the marker (prototype writePartitionStates).
    let mut s = store();
    replay_state(&mut s, 0, S::Stopping, -1, 2);
    let w = StateWrite {
        last_mirror: Some((5, 40)),
        ..write(0, S::Stopped, -1, 2)
    };
    let records = s.handle_write(&w, None).expect("ok");
    assert_eq!(records.len(), 2);
    assert_eq!(decoded_state(&records[0]).state, S::Stopped);
    let skipped = StateWrite {
        last_mirror: Some((6, 50)),
        ..write(0, S::Mirroring, -1, 3)
    };
    let records = s.handle_write(&skipped, None).expect("ok");
    assert_eq!(records.len(), 1, "only the marker");
    assert_eq!(s.read(&key(0)).expect("known").1.last_mirror_epoch, 6);
}

#[test]
fn failed_keeps_error_and_previous_state() {
    // Goal: FAILED records why and from where; FAILED -> FAILED keeps the original
    // previous state; PREPARING / PAUSED / STOPPED clear the error info.
    let mut s = MirrorStateStore::new(Design::parse("latest").expect("valid"));
    s.handle_write(&write(0, S::Preparing, -1, -1), None)
        .expect("ok");
    s.handle_write(&write(0, S::Mirroring, -1, -1), None)
        .expect("ok");
    s.handle_write(
        &write(0, S::Failed, -1, -1).with_error("source unreachable", 1),
        None,
    )
    .expect("ok");
    let st = status(&s, 0);
    assert_eq!(st.previous_state, S::Mirroring);
    assert_eq!(st.error_message.as_deref(), Some("source unreachable"));
    assert_eq!(st.retry_attempt, 1);
    s.handle_write(
        &write(0, S::Failed, -1, -1).with_error("still down", 2),
        None,
    )
    .expect("ok");
    let st = status(&s, 0);
    assert_eq!((st.previous_state, st.retry_attempt), (S::Mirroring, 2));
    assert_eq!(st.error_message.as_deref(), Some("still down"));
    s.handle_write(&write(0, S::Preparing, -1, -1), None)
        .expect("ok");
    let st = status(&s, 0);
    assert_eq!(
        (st.error_message, st.retry_attempt, st.previous_state),
        (None, 0, S::Unknown)
    );

    let mut seed = store();
    seed.handle_write(&write(0, S::Preparing, -1, -1), None)
        .expect("ok");
    seed.handle_write(
        &write(0, S::Failed, -1, -1).with_error("The source topic is deleted.", -1),
        None,
    )
    .expect("ok");
    assert!(status(&seed, 0).is_non_retryable());
}

#[test]
fn long_error_messages_are_clamped() {
    let mut s = store();
    let long = "é".repeat(20_000);
    let w = write(0, S::Failed, -1, -1).with_error(&long, -1);
    let records = s.handle_write(&w, None).expect("ok");
    let msg = decoded_state(&records[0]).error_message.expect("message");
    assert!(msg.len() <= i16::MAX as usize && long.starts_with(&msg));
}

#[test]
fn tombstones_delete_a_whole_mirror() {
    // Goal: testDeleteClusterMirror: per partition, the state tombstone then the marker
    // tombstone; other mirrors untouched; a retry writes nothing.
    let mut s = store();
    s.handle_write(&write(0, S::Preparing, -1, -1), None)
        .expect("ok");
    s.handle_write(
        &StateWrite::last_mirror_only(key(1), LeaderEpoch::UNDEFINED, (2, 9)),
        None,
    )
    .expect("ok");
    let other = MirrorPartitionKey::new("other", TOPIC_ID, 0);
    s.handle_write(
        &StateWrite::transition(other.clone(), S::Preparing, LeaderEpoch::UNDEFINED, -1),
        None,
    )
    .expect("ok");
    let t = s.tombstones(MIRROR);
    let decoded: Vec<(MirrorStateKey, bool)> = t
        .iter()
        .map(|r| {
            (
                MirrorStateKey::decode(&r.key).expect("key"),
                r.value.is_none(),
            )
        })
        .collect();
    assert_eq!(
        decoded,
        vec![
            (MirrorStateKey::PartitionState(key(0)), true),
            (MirrorStateKey::LastMirrorEpochs(key(0)), true),
            (MirrorStateKey::PartitionState(key(1)), true),
            (MirrorStateKey::LastMirrorEpochs(key(1)), true),
        ]
    );
    assert_eq!(s.read(&key(0)), None);
    assert_eq!(s.read(&key(1)), None);
    assert!(s.read(&other).is_some());
    assert!(s.tombstones(MIRROR).is_empty());
    assert_eq!(s.partitions_of("other"), vec![other]);
}

#[test]
fn reload_from_records_reproduces_the_store() {
    // Goal: a new coordinator replaying the appended records sees what the old one served.
    let mut live = store();
    let mut log: Vec<CoordinatorRecord> = Vec::new();
    let writes = [
        write(0, S::Preparing, 1, 0),
        write(0, S::Mirroring, 1, 1),
        write(1, S::Preparing, 2, -1),
        write(0, S::Stopping, 1, 2),
        StateWrite::last_mirror_only(key(0), LeaderEpoch(1), (4, 77)),
        write(0, S::Stopped, 1, 3),
        write(1, S::Failed, 2, 1).with_error("boom", -1),
    ];
    for w in &writes {
        log.extend(live.handle_write(w, None).expect("accepted"));
    }
    let other = MirrorPartitionKey::new("gone", TOPIC_ID, 3);
    log.extend(
        live.handle_write(
            &StateWrite::transition(other.clone(), S::Preparing, LeaderEpoch(1), -1),
            None,
        )
        .expect("ok"),
    );
    log.extend(live.tombstones("gone"));
    let mut loaded = store();
    for r in &log {
        loaded.replay(&r.key, r.value.as_deref()).expect("valid");
    }
    loaded.check_invariants();
    for p in 0..2 {
        assert_eq!(loaded.read(&key(p)), live.read(&key(p)), "partition {p}");
    }
    assert_eq!(loaded.read(&other), None);
    assert_eq!(status(&loaded, 0).state, S::Stopped);
}

#[test]
fn replay_refuses_garbage_without_changes() {
    let mut s = store();
    replay_state(&mut s, 0, S::Mirroring, 1, 1);
    let k = MirrorStateKey::PartitionState(key(0)).encode();
    assert!(s.replay(&k, Some(&[0, 0, 99])).is_err());
    assert!(s.replay(&[0, 9], None).is_err());
    assert_eq!(status(&s, 0).state, S::Mirroring);
}

#[test]
fn invalid_mirror_names_are_refused() {
    let mut s = store();
    let w = StateWrite::transition(
        MirrorPartitionKey::new("m.paused", TOPIC_ID, 0),
        S::Preparing,
        LeaderEpoch::UNDEFINED,
        -1,
    );
    let e = s.handle_write(&w, None).expect_err("invalid name");
    assert!(matches!(e, StateWriteError::InvalidMirrorName(_)));
    assert_eq!(ErrorCode::from(e), ErrorCode::InvalidClusterMirrorName);
}
