//! Transcribed from Kafka's `TransactionIndexTest` (file, channel and rename cases have no
//! in-memory counterpart and are left out).

use super::*;

fn four() -> Vec<AbortedTxn> {
    vec![
        AbortedTxn::new(0, 0, 10, 11),
        AbortedTxn::new(1, 5, 15, 13),
        AbortedTxn::new(2, 18, 35, 25),
        AbortedTxn::new(3, 32, 50, 40),
    ]
}

fn index_of(txns: &[AbortedTxn]) -> TransactionIndex {
    let mut index = TransactionIndex::new();
    for t in txns {
        index.append(*t).expect("increasing last offsets");
    }
    index
}

/// `testPositionSetCorrectlyWhenOpened`: a copy of the index ("reopened") keeps every entry and
/// accepts the next append.
#[test]
fn test_position_set_correctly_when_opened() {
    let mut txns = four();
    let index = index_of(&txns);
    let mut reopened = index.clone();
    let another = AbortedTxn::new(3, 50, 60, 55);
    reopened.append(another).unwrap();
    txns.push(another);
    assert_eq!(reopened.all_aborted_txns(), &txns[..]);
}

/// `testLastOffsetMustIncrease`: an equal last offset is rejected.
#[test]
fn test_last_offset_must_increase() {
    let mut index = TransactionIndex::new();
    index.append(AbortedTxn::new(1, 5, 15, 13)).unwrap();
    assert_eq!(
        index.append(AbortedTxn::new(0, 0, 15, 11)),
        Err(TxnIndexError::LastOffsetNotIncreasing {
            last: Offset(15),
            appended: Offset(15)
        })
    );
    assert_eq!(index.len(), 1);
}

/// `testLastOffsetCannotDecrease`: a smaller last offset is rejected.
#[test]
fn test_last_offset_cannot_decrease() {
    let mut index = TransactionIndex::new();
    index.append(AbortedTxn::new(1, 5, 15, 13)).unwrap();
    assert!(index.append(AbortedTxn::new(0, 0, 10, 11)).is_err());
    assert_eq!(index.all_aborted_txns(), &[AbortedTxn::new(1, 5, 15, 13)]);
}

/// `testCollectAbortedTransactions`: the overlap filter and the early stop on
/// `last_stable_offset >= upper_bound`.
#[test]
fn test_collect_aborted_transactions() {
    let txns = four();
    let index = index_of(&txns);
    let cases: [(i64, i64, &[AbortedTxn], bool); 6] = [
        (0, 100, &txns[..], false),
        (0, 32, &txns[0..3], true),
        (0, 35, &txns[..], true),
        (10, 35, &txns[..], true),
        (11, 35, &txns[1..4], true),
        (20, 41, &txns[2..4], false),
    ];
    for (fetch, upper, expected, complete) in cases {
        let r = index.collect_aborted_txns(Offset(fetch), Offset(upper));
        assert_eq!(
            r.aborted_transactions, expected,
            "fetch {fetch} upper {upper}"
        );
        assert_eq!(r.is_complete, complete, "fetch {fetch} upper {upper}");
    }
}

/// Kafka's scan stops at the first entry with a high enough LSO even if a later entry would
/// overlap: the stop entry's LSO says no later transaction started below the upper bound.
#[test]
fn collect_stops_at_first_entry_whose_lso_reaches_the_upper_bound() {
    let index = index_of(&[AbortedTxn::new(1, 0, 5, 20), AbortedTxn::new(2, 3, 30, 31)]);
    let r = index.collect_aborted_txns(Offset(0), Offset(20));
    assert_eq!(r.aborted_transactions, vec![AbortedTxn::new(1, 0, 5, 20)]);
    assert!(r.is_complete);
}

/// `testTruncate`: truncation keeps entries whose marker is below the offset; reset clears.
#[test]
fn test_truncate() {
    let txns = vec![
        AbortedTxn::new(0, 0, 10, 2),
        AbortedTxn::new(1, 5, 15, 16),
        AbortedTxn::new(2, 18, 35, 25),
        AbortedTxn::new(3, 32, 50, 40),
    ];
    let mut index = index_of(&txns);
    index.truncate_to(Offset(51));
    assert_eq!(
        index
            .collect_aborted_txns(Offset(0), Offset(100))
            .aborted_transactions,
        txns
    );
    index.truncate_to(Offset(50));
    assert_eq!(
        index
            .collect_aborted_txns(Offset(0), Offset(100))
            .aborted_transactions,
        &txns[0..3]
    );
    // After truncation the next append only has to be above the new last entry.
    index.append(AbortedTxn::new(4, 40, 45, 46)).unwrap();
    index.clear();
    assert!(
        index
            .collect_aborted_txns(Offset(0), Offset(100))
            .aborted_transactions
            .is_empty()
    );
    assert!(index.is_empty());
}

/// `testAbortedTxnSerde` (fields only: the model has no byte format).
#[test]
fn test_aborted_txn_serde() {
    let t = AbortedTxn::new(983_493, 137, 299, 200);
    assert_eq!(t.producer_id, ProducerId(983_493));
    assert_eq!(t.first_offset, Offset(137));
    assert_eq!(t.last_offset, Offset(299));
    assert_eq!(t.last_stable_offset, Offset(200));
}

/// `testIsEmptyWhenFileIsEmpty` / `testIsEmptyWhenFileIsNotEmpty`.
#[test]
fn test_is_empty() {
    let mut index = TransactionIndex::new();
    assert!(index.is_empty());
    index.append(AbortedTxn::new(0, 0, 10, 2)).unwrap();
    assert!(!index.is_empty());
}

/// No Kafka test (segment deletion): moving the log start drops entries whose marker is
/// below it and keeps the rest.
#[test]
fn retain_from_drops_entries_below_log_start() {
    let txns = four();
    let mut index = index_of(&txns);
    index.retain_from(Offset(15));
    assert_eq!(index.all_aborted_txns(), &txns[1..]);
    index.retain_from(Offset(16));
    assert_eq!(index.all_aborted_txns(), &txns[2..]);
    index.retain_from(Offset(100));
    assert!(index.is_empty());
    assert_eq!(index.last_offset(), None);
}
