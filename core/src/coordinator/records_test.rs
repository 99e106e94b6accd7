use super::*;

fn tp(t: &str, p: i32) -> TopicPartition {
    TopicPartition::new(t, p)
}

fn txn_value() -> TxnLogValue {
    TxnLogValue {
        producer_id: ProducerId(4000),
        last_producer_id: ProducerId(17),
        producer_epoch: ProducerEpoch(3),
        last_producer_epoch: ProducerEpoch(2),
        timeout_ms: 60_000,
        state: TxnState::Ongoing,
        partitions: [tp("orders", 0), tp("orders", 3), tp("páyments", 1)]
            .into_iter()
            .collect(),
        last_update_ms: 1_234,
        start_ms: 1_000,
    }
}

#[test]
fn java_string_hash_matches_java() {
    // Goal: the same coordinator partition as a real Kafka cluster for the same key.
    assert_eq!(java_string_hash("hello"), 99_162_322);
    assert_eq!(java_string_hash(""), 0);
    assert_eq!(java_string_hash("Aa"), 2112);
    assert_eq!(java_string_hash("BB"), 2112);
    assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
    // U+1F600 is a surrogate pair in UTF-16: 0xD83D * 31 + 0xDE00.
    assert_eq!(java_string_hash("\u{1F600}"), 1_772_899);
}

#[test]
fn coordinator_partition_uses_kafka_abs() {
    // Goal: Utils.abs(hashCode) % n, with Integer.MIN_VALUE mapping to 0.
    assert_eq!(coordinator_partition("hello", 50), 99_162_322 % 50);
    assert_eq!(coordinator_partition("polygenelubricants", 50), 0);
    assert_eq!(kafka_abs(i32::MIN), 0);
    assert_eq!(kafka_abs(-5), 5);
    // A negative hash: "hello world!" style keys must still land in range.
    for key in ["group-1", "txn-a", "zzzzzzzzzzzzzzz", "\u{1F600}\u{1F600}"] {
        let p = coordinator_partition(key, 7);
        assert!((0..7).contains(&p), "{key} -> {p}");
        assert_eq!(p, kafka_abs(java_string_hash(key)) % 7);
    }
}

#[test]
fn txn_records_round_trip() {
    // Goal: every persisted field survives encode/decode, for every persisted state.
    let key = TxnLogKey {
        transactional_id: "txn-é".into(),
    };
    assert_eq!(TxnLogKey::decode(&key.encode()), Ok(key.clone()));
    assert_eq!(
        CoordinatorKey::decode(&key.encode()),
        Ok(CoordinatorKey::Txn(key))
    );
    for state in [
        TxnState::Empty,
        TxnState::Ongoing,
        TxnState::PrepareCommit,
        TxnState::PrepareAbort,
        TxnState::CompleteCommit,
        TxnState::CompleteAbort,
    ] {
        let mut v = txn_value();
        v.state = state;
        if !matches!(
            state,
            TxnState::Ongoing | TxnState::PrepareCommit | TxnState::PrepareAbort
        ) {
            v.partitions.clear();
        }
        assert_eq!(TxnLogValue::decode(&v.encode()), Ok(v));
    }
}

#[test]
fn offset_and_group_records_round_trip() {
    // Goal: offset and membership records survive encode/decode.
    let k = OffsetCommitKey {
        group: "g".into(),
        tp: tp("orders", 2),
    };
    assert_eq!(
        CoordinatorKey::decode(&k.encode()),
        Ok(CoordinatorKey::OffsetCommit(k))
    );
    for leader_epoch in [None, Some(LeaderEpoch(7))] {
        let v = OffsetCommitValue {
            offset: Offset(42),
            leader_epoch,
            commit_timestamp_ms: 99,
        };
        assert_eq!(OffsetCommitValue::decode(&v.encode()), Ok(v));
    }
    let gk = GroupMetadataKey { group: "g".into() };
    assert_eq!(
        CoordinatorKey::decode(&gk.encode()),
        Ok(CoordinatorKey::GroupMetadata(gk))
    );
    let gv = GroupMetadataValue {
        members: [("m1".to_string(), 10_000), ("m2".to_string(), 45_000)]
            .into_iter()
            .collect(),
    };
    assert_eq!(GroupMetadataValue::decode(&gv.encode()), Ok(gv));
    assert_eq!(
        GroupMetadataValue::decode(&GroupMetadataValue::default().encode()),
        Ok(GroupMetadataValue::default())
    );
}

#[test]
fn garbage_is_a_typed_error() {
    // Goal: decoding never panics; each kind of damage has its error.
    assert!(matches!(
        CoordinatorKey::decode(&[]),
        Err(RecordError::Truncated { .. })
    ));
    assert_eq!(
        CoordinatorKey::decode(&[0, 9, 0, 0]),
        Err(RecordError::UnknownKeyType(9))
    );
    assert_eq!(
        CoordinatorKey::decode(&[0, 0, 0xff, 0xff]),
        Err(RecordError::NegativeLength(-1))
    );
    assert_eq!(
        CoordinatorKey::decode(&[0, 0, 0, 2, 0xff, 0xfe]),
        Err(RecordError::InvalidUtf8)
    );
    let mut trailing = TxnLogKey {
        transactional_id: "t".into(),
    }
    .encode()
    .to_vec();
    trailing.push(0);
    assert_eq!(
        CoordinatorKey::decode(&trailing),
        Err(RecordError::TrailingBytes(1))
    );
    let offset_key = OffsetCommitKey {
        group: "g".into(),
        tp: tp("t", 0),
    }
    .encode();
    assert_eq!(
        TxnLogKey::decode(&offset_key),
        Err(RecordError::UnexpectedKeyType { got: 1 })
    );

    let v = txn_value().encode().to_vec();
    // every strict prefix is truncated, never a panic
    for n in 0..v.len() {
        assert!(TxnLogValue::decode(&v[..n]).is_err(), "prefix {n}");
    }
    let mut bad_version = v.clone();
    bad_version[1] = 5;
    assert_eq!(
        TxnLogValue::decode(&bad_version),
        Err(RecordError::UnsupportedVersion(5))
    );
    // state byte sits after version(2) + pids(16) + epochs(4) + timeout(4)
    let mut bad_state = v.clone();
    bad_state[26] = TxnState::PrepareEpochFence.id() as u8;
    assert_eq!(
        TxnLogValue::decode(&bad_state),
        Err(RecordError::InvalidTxnState(7))
    );
    bad_state[26] = 42;
    assert_eq!(
        TxnLogValue::decode(&bad_state),
        Err(RecordError::InvalidTxnState(42))
    );
    let mut empty_with_partitions = v.clone();
    empty_with_partitions[26] = TxnState::Empty.id() as u8;
    assert!(matches!(
        TxnLogValue::decode(&empty_with_partitions),
        Err(RecordError::Inconsistent(_))
    ));
    let mut bad_count = v;
    bad_count[27..31].copy_from_slice(&(-3i32).to_be_bytes());
    assert_eq!(
        TxnLogValue::decode(&bad_count),
        Err(RecordError::NegativeLength(-3))
    );

    let mut bad_flag = OffsetCommitValue {
        offset: Offset(1),
        leader_epoch: None,
        commit_timestamp_ms: 0,
    }
    .encode()
    .to_vec();
    bad_flag[10] = 2;
    assert_eq!(
        OffsetCommitValue::decode(&bad_flag),
        Err(RecordError::InvalidFlag(2))
    );
}

#[test]
fn pseudo_random_bytes_never_panic() {
    // Goal: arbitrary bytes decode to Ok or Err, never a panic (deterministic LCG input).
    let mut x: u64 = 0x1234_5678;
    for len in 0..200usize {
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                (x >> 56) as u8
            })
            .collect();
        let _ = CoordinatorKey::decode(&bytes);
        let _ = TxnLogValue::decode(&bytes);
        let _ = OffsetCommitValue::decode(&bytes);
        let _ = GroupMetadataValue::decode(&bytes);
    }
}

#[test]
fn batch_carries_key_value_records() {
    // Goal: the runtime's batch holds the records byte for byte, tombstones as null values.
    let recs = vec![
        CoordinatorRecord {
            key: TxnLogKey {
                transactional_id: "t".into(),
            }
            .encode(),
            value: Some(txn_value().encode()),
        },
        CoordinatorRecord {
            key: TxnLogKey {
                transactional_id: "u".into(),
            }
            .encode(),
            value: None,
        },
    ];
    let batch = build_batch(&recs, 77);
    let out = batch.records();
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].key.as_ref(), Some(&recs[0].key));
    assert_eq!(out[0].value, recs[0].value);
    assert_eq!(out[1].value, None);
    assert!(!batch.producer_id().is_some());
}
