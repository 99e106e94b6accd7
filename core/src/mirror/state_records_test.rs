//! `__mirror_state` codec round trips, garbage, and placement. Reference: kip1279.md B §3,
//! §4.2.

use super::*;

fn key(p: i32) -> MirrorPartitionKey {
    MirrorPartitionKey::new("m1", TopicId(0x0123_4567_89ab_cdef_0011_2233_4455_6677), p)
}

fn status() -> MirrorPartitionStatus {
    MirrorPartitionStatus {
        state: MirrorPartitionState::Failed,
        previous_state: MirrorPartitionState::Mirroring,
        state_epoch: 9,
        leader_epoch: LeaderEpoch(4),
        error_message: Some("The source topic is deleted.".into()),
        retry_attempt: -1,
    }
}

#[test]
fn keys_round_trip() {
    for k in [
        MirrorStateKey::PartitionState(key(0)),
        MirrorStateKey::LastMirrorEpochs(key(7)),
        MirrorStateKey::PartitionState(MirrorPartitionKey::new("a", TopicId::ZERO, i32::MAX)),
    ] {
        let bytes = k.encode();
        assert_eq!(MirrorStateKey::decode(&bytes), Ok(k.clone()));
    }
    // The two key types of one partition differ only in their prefix.
    let a = MirrorStateKey::PartitionState(key(1)).encode();
    let b = MirrorStateKey::LastMirrorEpochs(key(1)).encode();
    assert_eq!(a[..2], [0, 2]);
    assert_eq!(b[..2], [0, 1]);
    assert_eq!(a[2..], b[2..]);
}

#[test]
fn values_round_trip() {
    let s = status();
    assert_eq!(MirrorPartitionStatus::decode(&s.encode()), Ok(s.clone()));
    let cleared = MirrorPartitionStatus {
        error_message: None,
        ..s
    };
    assert_eq!(
        MirrorPartitionStatus::decode(&cleared.encode()),
        Ok(cleared.clone())
    );
    let empty_msg = MirrorPartitionStatus {
        error_message: Some(String::new()),
        ..cleared
    };
    assert_eq!(
        MirrorPartitionStatus::decode(&empty_msg.encode()),
        Ok(empty_msg)
    );
    for v in [
        LastMirrorEpochsValue::UNKNOWN,
        LastMirrorEpochsValue {
            last_mirror_epoch: 12,
            last_mirror_offset: 1 << 40,
        },
    ] {
        assert_eq!(LastMirrorEpochsValue::decode(&v.encode()), Ok(v));
    }
}

#[test]
fn every_truncation_is_an_error() {
    // Goal: a cut at any byte is a typed error, never a panic.
    let k = MirrorStateKey::PartitionState(key(3)).encode();
    for n in 0..k.len() {
        assert!(
            matches!(
                MirrorStateKey::decode(&k[..n]),
                Err(MirrorRecordError::Truncated { .. })
            ),
            "key cut at {n}"
        );
    }
    let v = status().encode();
    for n in 0..v.len() {
        assert!(
            matches!(
                MirrorPartitionStatus::decode(&v[..n]),
                Err(MirrorRecordError::Truncated { .. })
            ),
            "state value cut at {n}"
        );
    }
    let l = LastMirrorEpochsValue::UNKNOWN.encode();
    for n in 0..l.len() {
        assert!(
            LastMirrorEpochsValue::decode(&l[..n]).is_err(),
            "lme cut at {n}"
        );
    }
}

#[test]
fn garbage_is_refused_with_typed_errors() {
    let mut k = MirrorStateKey::PartitionState(key(3)).encode().to_vec();
    k.push(0);
    assert_eq!(
        MirrorStateKey::decode(&k),
        Err(MirrorRecordError::TrailingBytes(1))
    );
    assert_eq!(
        MirrorStateKey::decode(&[0, 0, 0, 0]),
        Err(MirrorRecordError::UnknownKeyType(0)),
        "a transaction-log key type is not a mirror key"
    );
    assert_eq!(
        MirrorStateKey::decode(&[0, 2, 0xff, 0xfe]),
        Err(MirrorRecordError::InvalidLength(-2))
    );
    assert_eq!(
        MirrorStateKey::decode(&[0, 2, 0xff, 0xff]),
        Err(MirrorRecordError::InvalidLength(-1)),
        "mirror name is not nullable"
    );
    let mut bad_utf8 = vec![0, 1, 0, 1, 0xff];
    bad_utf8.extend_from_slice(&[0; 20]);
    assert_eq!(
        MirrorStateKey::decode(&bad_utf8),
        Err(MirrorRecordError::InvalidUtf8)
    );

    let mut v = status().encode().to_vec();
    v[1] = 1;
    assert_eq!(
        MirrorPartitionStatus::decode(&v),
        Err(MirrorRecordError::UnsupportedVersion(1))
    );
    let mut v = status().encode().to_vec();
    v[2] = 42;
    assert_eq!(
        MirrorPartitionStatus::decode(&v),
        Err(MirrorRecordError::InvalidState(42))
    );
    let mut v = status().encode().to_vec();
    let last = v.len() - 1;
    v[last] = 0x80;
    assert_eq!(
        MirrorPartitionStatus::decode(&v),
        Err(MirrorRecordError::InvalidState(-128))
    );
    let mut l = LastMirrorEpochsValue::UNKNOWN.encode().to_vec();
    l.extend_from_slice(&[1, 2]);
    assert_eq!(
        LastMirrorEpochsValue::decode(&l),
        Err(MirrorRecordError::TrailingBytes(2))
    );
}

#[test]
fn record_builders_and_tombstones() {
    let r = partition_state_record(&key(0), Some(&status()));
    assert_eq!(
        MirrorStateKey::decode(&r.key),
        Ok(MirrorStateKey::PartitionState(key(0)))
    );
    assert_eq!(
        MirrorPartitionStatus::decode(r.value.as_ref().expect("value")),
        Ok(status())
    );
    assert_eq!(partition_state_record(&key(0), None).value, None);
    assert_eq!(last_mirror_epochs_record(&key(0), None).value, None);
}

#[test]
fn placement_is_stable_and_in_range() {
    // Goal: the documented hash, pinned so a change of algorithm is caught (values computed
    // with Java's String.hashCode).
    assert_eq!(mirror_state_partition("m1", TopicId(1), 0, 50), 37);
    assert_eq!(mirror_state_partition("m1", TopicId(1), 1, 50), 36);
    assert_eq!(mirror_state_partition("dr", TopicId(0xabcdef), 3, 3), 2);
    assert_eq!(mirror_coordinator_partition("m1", 50), 28);
    for p in 0..100 {
        let x = mirror_state_partition("mirror-x", TopicId(u128::MAX - p as u128), p, 7);
        assert!((0..7).contains(&x));
    }
}
