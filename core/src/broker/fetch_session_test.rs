//! KIP-227 fetch sessions: the leader's cache (Kafka `FetchSessionTest`) and the follower's
//! handler (Kafka `FetchSessionHandlerTest`), then both ends together.

use proptest::prelude::*;

use super::*;
use crate::types::OffsetAndEpoch;

const F1: Option<BrokerId> = Some(BrokerId(1));
const F2: Option<BrokerId> = Some(BrokerId(2));

fn tp(p: i32) -> TopicPartition {
    TopicPartition::new("t", p)
}

fn sent(offset: i64) -> SentPartition {
    SentPartition {
        fetch_offset: Offset(offset),
        current_leader_epoch: LeaderEpoch(3),
        last_fetched_epoch: Some(LeaderEpoch(3)),
        log_start_offset: Offset(0),
    }
}

fn req(p: i32, offset: i64) -> FetchPartition {
    sent(offset).to_request(tp(p))
}

/// An answer for `p` with HW `hw` and `records` batches' worth of data (none: empty).
fn resp(p: i32, hw: i64, records: bool) -> FetchPartitionResponse {
    let batches = if records {
        use crate::record::{BatchBuilder, SimpleRecord};
        vec![BatchBuilder::new().build(&[SimpleRecord::value(0, "v")])]
    } else {
        Vec::new()
    };
    FetchPartitionResponse {
        tp: tp(p),
        error: ErrorCode::None,
        high_watermark: Offset(hw),
        last_stable_offset: Offset(hw),
        log_start_offset: Offset(0),
        diverging_epoch: None,
        aborted_transactions: None,
        batches,
    }
}

fn tps(parts: &[FetchPartitionResponse]) -> Vec<i32> {
    parts.iter().map(|r| r.tp.partition).collect()
}

/// Opens a session for `owner` over partitions 0..n at offset 10, HW 10; returns its id.
fn open(cache: &mut FetchSessionCache, owner: Option<BrokerId>, n: i32) -> i32 {
    let parts: Vec<_> = (0..n).map(|p| req(p, 10)).collect();
    let (ctx, read) = cache.new_context(owner, FetchSessionMeta::INITIAL, parts, &[]);
    assert_eq!(ctx, FetchContext::Full);
    let answers = (0..n).map(|p| resp(p, 10, false)).collect();
    let a = cache.answer(&ctx, owner, &read, ErrorCode::None, answers);
    assert_eq!(
        a.partitions.len(),
        n as usize,
        "a full answer names every partition"
    );
    a.session_id
}

fn incremental(
    cache: &mut FetchSessionCache,
    owner: Option<BrokerId>,
    id: i32,
    epoch: i32,
    parts: Vec<FetchPartition>,
    forgotten: &[TopicPartition],
) -> (FetchContext, Vec<FetchPartition>) {
    cache.new_context(owner, FetchSessionMeta { id, epoch }, parts, forgotten)
}

#[test]
fn a_full_fetch_opens_a_session_and_an_incremental_one_reads_all_of_it() {
    // Goal: the leader reads every partition of the session on each incremental fetch,
    // at the offsets last sent, including those the request left out.
    let mut cache = FetchSessionCache::default();
    let id = open(&mut cache, F1, 3);
    assert_ne!(id, FetchSessionMeta::NO_SESSION);
    assert_eq!(cache.len(), 1);
    let (ctx, read) = incremental(&mut cache, F1, id, 1, vec![req(1, 15)], &[]);
    assert_eq!(ctx, FetchContext::Incremental { id, epoch: 2 });
    let offsets: Vec<_> = read
        .iter()
        .map(|r| (r.tp.partition, r.fetch_offset.0))
        .collect();
    assert_eq!(offsets, [(0, 10), (1, 15), (2, 10)]);
}

#[test]
fn an_incremental_answer_names_only_partitions_with_something_new() {
    // Goal: records, a HW move, a log start move, an error and a divergence each put a
    // partition in the answer; nothing new leaves it out (maybeUpdateResponseData).
    let mut cache = FetchSessionCache::default();
    let id = open(&mut cache, F1, 6);
    let (ctx, read) = incremental(&mut cache, F1, id, 1, Vec::new(), &[]);
    let mut answers: Vec<_> = (0..6).map(|p| resp(p, 10, false)).collect();
    answers[1] = resp(1, 10, true);
    answers[2].high_watermark = Offset(12);
    answers[3].log_start_offset = Offset(4);
    answers[4].error = ErrorCode::NotLeaderOrFollower;
    answers[5].diverging_epoch = Some(OffsetAndEpoch::new(Offset(5), LeaderEpoch(2)));
    let a = cache.answer(&ctx, F1, &read, ErrorCode::None, answers);
    assert_eq!((a.error, a.session_id), (ErrorCode::None, id));
    assert_eq!(tps(&a.partitions), [1, 2, 3, 4, 5]);

    // The session remembers what it told: the same state again names only the partition
    // whose error reset its cached HW, and the divergence (always named).
    let (ctx, read) = incremental(&mut cache, F1, id, 2, Vec::new(), &[]);
    let mut answers: Vec<_> = (0..6).map(|p| resp(p, 10, false)).collect();
    answers[2].high_watermark = Offset(12);
    answers[3].log_start_offset = Offset(4);
    answers[5].diverging_epoch = Some(OffsetAndEpoch::new(Offset(5), LeaderEpoch(2)));
    let a = cache.answer(&ctx, F1, &read, ErrorCode::None, answers);
    assert_eq!(tps(&a.partitions), [4, 5]);
}

#[test]
fn session_errors_unknown_id_other_owner_and_wrong_epoch() {
    // Goal: FETCH_SESSION_ID_NOT_FOUND for an id the cache lacks (or another follower's:
    // ids stand for Kafka's random ones), INVALID_FETCH_SESSION_EPOCH for a wrong epoch;
    // neither reads anything nor touches the session.
    let mut cache = FetchSessionCache::default();
    let id = open(&mut cache, F1, 2);
    for (owner, meta, error) in [
        (
            F1,
            FetchSessionMeta {
                id: id + 7,
                epoch: 1,
            },
            ErrorCode::FetchSessionIdNotFound,
        ),
        (
            F2,
            FetchSessionMeta { id, epoch: 1 },
            ErrorCode::FetchSessionIdNotFound,
        ),
        (
            F1,
            FetchSessionMeta { id, epoch: 2 },
            ErrorCode::InvalidFetchSessionEpoch,
        ),
    ] {
        let (ctx, read) = cache.new_context(owner, meta, vec![req(0, 99)], &[]);
        assert_eq!(ctx, FetchContext::Error(error));
        assert!(read.is_empty());
        let a = cache.answer(&ctx, owner, &read, ErrorCode::None, Vec::new());
        assert_eq!((a.error, a.session_id), (error, 0));
    }
    // The session is untouched: epoch 1 still works, at the old offsets.
    let (ctx, read) = incremental(&mut cache, F1, id, 1, Vec::new(), &[]);
    assert_eq!(ctx, FetchContext::Incremental { id, epoch: 2 });
    assert_eq!(read[0].fetch_offset, Offset(10));
}

#[test]
fn a_parked_incremental_fetch_overtaken_by_a_later_one_answers_an_epoch_error() {
    // Goal: Kafka checks the session's epoch again when it answers; a fetch answered after
    // another fetch of its session moved the epoch gets INVALID_FETCH_SESSION_EPOCH.
    let mut cache = FetchSessionCache::default();
    let id = open(&mut cache, F1, 1);
    let (old_ctx, old_read) = incremental(&mut cache, F1, id, 1, Vec::new(), &[]);
    let (_ctx, _read) = incremental(&mut cache, F1, id, 2, Vec::new(), &[]);
    let a = cache.answer(
        &old_ctx,
        F1,
        &old_read,
        ErrorCode::None,
        vec![resp(0, 11, true)],
    );
    assert_eq!(a.error, ErrorCode::InvalidFetchSessionEpoch);
    assert!(a.partitions.is_empty());
}

#[test]
fn closing_forgetting_and_replacing_sessions() {
    // Goal: a full fetch naming a session closes it (only its owner's); forgetting every
    // partition closes the session and answers sessionless; a follower opening a new
    // session drops its older ones.
    let mut cache = FetchSessionCache::default();
    let a = open(&mut cache, F1, 2);
    let b = open(&mut cache, F2, 2);
    assert_eq!(cache.len(), 2);
    let close_b_as_f1 = FetchSessionMeta { id: b, epoch: 0 };
    let (ctx, _) = cache.new_context(F1, close_b_as_f1, vec![req(0, 10)], &[]);
    assert_eq!(ctx, FetchContext::Full);
    assert_eq!(cache.len(), 2, "F1 cannot close F2's session");
    let close_a = FetchSessionMeta { id: a, epoch: 0 };
    cache.new_context(F1, close_a, vec![req(0, 10)], &[]);
    assert_eq!(cache.len(), 1);

    let (ctx, read) = incremental(&mut cache, F2, b, 1, Vec::new(), &[tp(0), tp(1)]);
    assert_eq!(ctx, FetchContext::Sessionless);
    assert!(read.is_empty());
    assert!(cache.is_empty());

    let first = open(&mut cache, F1, 1);
    let second = open(&mut cache, F1, 1);
    assert_ne!(first, second);
    assert_eq!(cache.len(), 1, "the follower's older session went");
    let (ctx, _) = incremental(&mut cache, F1, first, 1, Vec::new(), &[]);
    assert_eq!(ctx, FetchContext::Error(ErrorCode::FetchSessionIdNotFound));
}

#[test]
fn the_cache_is_bounded_and_a_final_epoch_opens_no_session() {
    // Goal: memory stays flat: beyond MAX_SESSIONS the oldest session goes. A full fetch
    // at FINAL_EPOCH (and a top-level error) opens none.
    let mut cache = FetchSessionCache::default();
    for _ in 0..=MAX_SESSIONS {
        open(&mut cache, None, 1);
    }
    assert_eq!(cache.len(), MAX_SESSIONS);
    let mut cache = FetchSessionCache::default();
    let (ctx, read) = cache.new_context(F1, FetchSessionMeta::SESSIONLESS, vec![req(0, 1)], &[]);
    assert_eq!(ctx, FetchContext::Sessionless);
    let a = cache.answer(&ctx, F1, &read, ErrorCode::None, vec![resp(0, 1, false)]);
    assert_eq!((a.session_id, a.partitions.len()), (0, 1));
    let (ctx, read) = cache.new_context(F1, FetchSessionMeta::INITIAL, vec![req(0, 1)], &[]);
    let a = cache.answer(&ctx, F1, &read, ErrorCode::StaleBrokerEpoch, Vec::new());
    assert_eq!((a.error, a.session_id), (ErrorCode::StaleBrokerEpoch, 0));
    assert!(cache.is_empty());
}

#[test]
fn session_epochs_wrap_to_one_and_never_reach_zero() {
    // Goal: Kafka `FetchMetadata.nextEpoch`.
    assert_eq!(FetchSessionMeta::next_epoch(0), 1);
    assert_eq!(FetchSessionMeta::next_epoch(41), 42);
    assert_eq!(FetchSessionMeta::next_epoch(i32::MAX), 1);
    assert_eq!(FetchSessionMeta::next_epoch(-1), -1);
    assert!(FetchSessionMeta::INITIAL.is_full());
    assert!(FetchSessionMeta::SESSIONLESS.is_full());
    assert!(!FetchSessionMeta { id: 3, epoch: 1 }.is_full());
}

fn wanted(parts: &[(TopicPartition, SentPartition)]) -> Vec<(&TopicPartition, SentPartition)> {
    parts.iter().map(|(t, s)| (t, *s)).collect()
}

#[test]
fn the_follower_sends_everything_first_then_only_what_changed() {
    // Goal: FetchSessionHandler.Builder: a full request names all; an incremental one
    // names the added and changed partitions and forgets those no longer wanted.
    let mut h = SessionHandler::default();
    let all = vec![(tp(0), sent(10)), (tp(1), sent(10)), (tp(2), sent(10))];
    let b = h.build(wanted(&all));
    assert_eq!(b.meta, FetchSessionMeta::INITIAL);
    assert_eq!(b.partitions.len(), 3);
    assert!(h.on_response(ErrorCode::None, 7));
    assert_eq!(h.next_meta(), FetchSessionMeta { id: 7, epoch: 1 });

    let b = h.build(wanted(&all));
    assert_eq!(b.meta, FetchSessionMeta { id: 7, epoch: 1 });
    assert!(b.partitions.is_empty() && b.forgotten.is_empty());
    assert!(h.on_response(ErrorCode::None, 7));

    let next = vec![(tp(0), sent(10)), (tp(2), sent(12)), (tp(3), sent(0))];
    let b = h.build(wanted(&next));
    assert_eq!(b.meta, FetchSessionMeta { id: 7, epoch: 2 });
    let named: Vec<_> = b
        .partitions
        .iter()
        .map(|p| (p.tp.partition, p.fetch_offset.0))
        .collect();
    assert_eq!(named, [(2, 12), (3, 0)]);
    assert_eq!(b.forgotten, [tp(1)]);
    assert_eq!(h.sent(&tp(2)).map(|s| s.fetch_offset), Some(Offset(12)));
    assert_eq!(h.sent(&tp(1)), None);
}

#[test]
fn the_follower_falls_back_to_a_full_fetch_after_any_session_trouble() {
    // Goal: handleResponse / handleError: an unknown session restarts from INITIAL; any
    // other top-level error or a failed request closes the session with a full fetch; a
    // leader that answers without a session sends the follower back to INITIAL.
    let all = vec![(tp(0), sent(10))];
    let mut h = SessionHandler::default();
    h.build(wanted(&all));
    h.on_response(ErrorCode::None, 7);
    assert!(!h.on_response(ErrorCode::FetchSessionIdNotFound, 0));
    assert_eq!(h.next_meta(), FetchSessionMeta::INITIAL);

    h.on_response(ErrorCode::None, 8);
    assert!(!h.on_response(ErrorCode::InvalidFetchSessionEpoch, 8));
    assert_eq!(h.next_meta(), FetchSessionMeta { id: 8, epoch: 0 });
    let b = h.build(wanted(&all));
    assert_eq!(
        b.partitions.len(),
        1,
        "a full fetch names every partition again"
    );

    h.on_response(ErrorCode::None, 9);
    h.on_error();
    assert_eq!(h.next_meta(), FetchSessionMeta { id: 9, epoch: 0 });

    h.on_response(ErrorCode::None, 9);
    h.build(wanted(&all));
    assert!(h.on_response(ErrorCode::None, 0));
    assert_eq!(h.next_meta(), FetchSessionMeta::INITIAL);
}

proptest! {
    /// Both ends together, over random rounds of wanted partitions and offsets: the leader
    /// reads exactly what a sessionless fetch would name (every wanted partition at the
    /// offset the follower wants), and a follower that keeps the last HW it was told per
    /// partition ends each round with the HW a sessionless answer would give.
    #[test]
    fn a_session_reads_and_tells_what_a_sessionless_fetch_would(
        rounds in proptest::collection::vec(
            proptest::collection::vec((any::<bool>(), 0i64..4, 0i64..4), 6),
            1..12,
        ),
    ) {
        let mut cache = FetchSessionCache::default();
        let mut h = SessionHandler::default();
        let mut told: std::collections::BTreeMap<i32, i64> = Default::default();
        for round in rounds {
            let want: Vec<(TopicPartition, SentPartition)> = round
                .iter()
                .enumerate()
                .filter(|(_, (w, _, _))| *w)
                .map(|(p, (_, off, _))| (tp(p as i32), sent(*off)))
                .collect();
            if want.is_empty() {
                continue;
            }
            let b = h.build(wanted(&want));
            let (ctx, read) = cache.new_context(F1, b.meta, b.partitions, &b.forgotten);
            let read_offsets: Vec<_> = read.iter().map(|r| (r.tp.clone(), r.fetch_offset)).collect();
            let want_offsets: Vec<_> = want.iter().map(|(t, s)| (t.clone(), s.fetch_offset)).collect();
            prop_assert_eq!(read_offsets, want_offsets);
            let answers: Vec<_> = read
                .iter()
                .map(|r| {
                    let (_, _, hw) = round[r.tp.partition as usize];
                    resp(r.tp.partition, hw, false)
                })
                .collect();
            let a = cache.answer(&ctx, F1, &read, ErrorCode::None, answers);
            prop_assert!(h.on_response(a.error, a.session_id));
            for r in &a.partitions {
                told.insert(r.tp.partition, r.high_watermark.0);
            }
            for (t, _) in &want {
                let (_, _, hw) = round[t.partition as usize];
                prop_assert_eq!(told.get(&t.partition), Some(&hw));
            }
        }
    }
}
