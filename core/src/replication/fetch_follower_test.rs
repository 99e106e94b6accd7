//! Follower-side tests, transcribed from Kafka's `AbstractFetcherThreadTest`
//! (`testTruncation`, `testDivergingEpochs`, `testTruncateOnFetchDoesNotProcessPartitionData`,
//! `testTruncationSkippedIfNoEpochChange`, `testFollowerFetchOutOfRangeHigh/Low`,
//! `testTruncateToHighWatermarkIfLeaderEpoch*`, fencing tests) plus a table for
//! `getOffsetTruncationState` and KIP-279 multi-round truncation.
//!
//! A tiny in-test log (one record per offset, offset = index from log start 0) drives the
//! leader ([`handle_fetch`]) and the follower ([`truncation_offset`]) against each other.

use super::fetch_follower::*;
use super::fetch_leader::{
    FetchDecision, FetchIsolation, FetchPartitionRequest, LeaderView, handle_fetch,
    handle_offsets_for_leader_epoch,
};
use crate::log::{EpochEntry, LeaderEpochCache};
use crate::protocol::ErrorCode;
use crate::types::{BrokerId, LeaderEpoch, Offset, OffsetAndEpoch};

/// A log of single-record batches: `epochs[i]` is the epoch of offset `log_start + i`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct SimLog {
    log_start: i64,
    epochs: Vec<i32>,
    cache: LeaderEpochCache,
    hw: i64,
}

impl SimLog {
    fn new(epochs: &[i32]) -> Self {
        let mut log = SimLog {
            log_start: 0,
            epochs: Vec::new(),
            cache: LeaderEpochCache::new(),
            hw: 0,
        };
        for &e in epochs {
            log.append(e);
        }
        log
    }

    fn leo(&self) -> Offset {
        Offset(self.log_start + self.epochs.len() as i64)
    }

    fn append(&mut self, epoch: i32) {
        let at = self.leo();
        self.cache
            .assign(LeaderEpoch(epoch), at)
            .expect("valid epoch");
        self.epochs.push(epoch);
    }

    /// `UnifiedLog.truncateTo` restricted to what these tests need.
    fn truncate_to(&mut self, target: Offset) {
        if target >= self.leo() {
            self.cache.truncate_from_end(self.leo());
            return;
        }
        let keep = usize::try_from(target.0 - self.log_start).expect("target >= log start");
        self.epochs.truncate(keep);
        self.cache.truncate_from_end(target);
        self.hw = self.hw.min(target.0);
    }

    fn truncate_fully_and_start_at(&mut self, x: Offset) {
        self.epochs.clear();
        self.cache.clear();
        self.log_start = x.0;
        self.hw = x.0;
    }

    fn epoch_at(&self, o: i64) -> i32 {
        self.epochs[usize::try_from(o - self.log_start).expect("offset in log")]
    }

    fn leader_view(&self, leader_epoch: i32) -> LeaderView<'_> {
        LeaderView {
            leader_epoch: LeaderEpoch(leader_epoch),
            is_leader: true,
            epoch_cache: &self.cache,
            log_start_offset: Offset(self.log_start),
            log_end_offset: self.leo(),
            high_watermark: Offset(self.hw),
            last_stable_offset: Offset(self.hw),
        }
    }
}

fn oe(epoch: i32, end: i64) -> OffsetAndEpoch {
    OffsetAndEpoch::new(Offset(end), LeaderEpoch(epoch))
}

fn ts(offset: i64, completed: bool) -> OffsetTruncationState {
    OffsetTruncationState {
        offset: Offset(offset),
        truncation_completed: completed,
    }
}

fn fetch_request(state: &FollowerFetchState, epoch: i32) -> FetchPartitionRequest {
    let (fetch_offset, last_fetched_epoch) = match *state {
        FollowerFetchState::Fetching {
            fetch_offset,
            last_fetched_epoch,
        } => (fetch_offset, last_fetched_epoch),
        FollowerFetchState::Truncating { .. } => panic!("not fetching: {state:?}"),
    };
    FetchPartitionRequest {
        fetch_offset,
        current_leader_epoch: Some(LeaderEpoch(epoch)),
        last_fetched_epoch,
        replica_id: Some(BrokerId(1)),
        isolation: FetchIsolation::LogEnd,
    }
}

/// Outcome of one simulated fetch round.
#[derive(Debug, PartialEq, Eq)]
enum Round {
    Truncated(OffsetTruncationState),
    Appended,
    UpToDate,
    Error(ErrorCode),
}

/// One fetch round with truncate-on-fetch, the way `processFetchRequest` +
/// `truncateOnFetchResponse` apply it. Appends one record at a time like Kafka's mock fetcher.
fn fetch_round(
    leader: &SimLog,
    leader_epoch: i32,
    follower: &mut SimLog,
    state: &mut FollowerFetchState,
) -> Round {
    let req = fetch_request(state, leader_epoch);
    match handle_fetch(&leader.leader_view(leader_epoch), &req, true) {
        FetchDecision::Error(e) => Round::Error(e),
        FetchDecision::Diverging {
            diverging_epoch, ..
        } => {
            let t = truncation_offset(
                diverging_epoch,
                &follower.cache,
                follower.leo(),
                req.fetch_offset,
            );
            follower.truncate_to(t.offset);
            *state = state_after_truncation(true, t, follower.cache.latest_epoch());
            Round::Truncated(t)
        }
        FetchDecision::Read {
            fetch_offset,
            max_offset,
            high_watermark,
            log_start_offset,
            ..
        } => {
            if fetch_offset < max_offset {
                follower.append(leader.epoch_at(fetch_offset.0));
            }
            follower.hw =
                follower_high_watermark(high_watermark, Offset(follower.log_start), follower.leo())
                    .0;
            follower.log_start =
                follower_log_start_offset(Offset(follower.log_start), log_start_offset).0;
            let appended = fetch_offset < max_offset;
            *state = FollowerFetchState::Fetching {
                fetch_offset: follower.leo(),
                last_fetched_epoch: follower.cache.latest_epoch(),
            };
            if appended {
                Round::Appended
            } else {
                Round::UpToDate
            }
        }
    }
}

/// Fetches until the follower is up to date, checking liveness (§2.3 invariant 19): every
/// truncation strictly lowers the LEO or completes.
fn reconcile(
    leader: &SimLog,
    leader_epoch: i32,
    follower: &mut SimLog,
    state: &mut FollowerFetchState,
) -> Vec<Round> {
    let mut rounds = Vec::new();
    for _ in 0..100 {
        let leo_before = follower.leo();
        let r = fetch_round(leader, leader_epoch, follower, state);
        if let Round::Truncated(t) = &r {
            assert!(
                t.truncation_completed || follower.leo() < leo_before,
                "no progress: {t:?}"
            );
        }
        let done = r == Round::UpToDate;
        rounds.push(r);
        if done {
            return rounds;
        }
    }
    panic!("did not converge: {rounds:?}");
}

fn start_fetching(follower: &SimLog) -> FollowerFetchState {
    initial_fetch_state(
        true,
        follower.cache.latest_epoch(),
        follower.leo(),
        Offset(follower.hw),
    )
}

// ---- getOffsetTruncationState table -------------------------------------------------------

#[test]
fn test_truncation_offset_table() {
    // Follower cache (0,0) (2,1) (4,2), LEO 3 (log [0:0, 1:2, 2:4]), fetch offset 3.
    let follower = SimLog::new(&[0, 2, 4]);
    let leo = follower.leo();
    #[rustfmt::skip]
    let table: &[(&str, OffsetAndEpoch, i64, OffsetTruncationState)] = &[
        ("leader end undefined: fall back to the fetch offset", oe(2, -1), 1, ts(1, true)),
        ("leader end undefined, both undefined", oe(-1, -1), 3, ts(3, true)),
        ("leader epoch undefined (pre-IBP-2.0): min(end, LEO)", oe(-1, 2), 3, ts(2, true)),
        ("leader epoch undefined, end above LEO", oe(-1, 7), 3, ts(3, true)),
        ("same epoch known: min(follower end, leader end)", oe(2, 2), 3, ts(2, true)),
        ("same epoch, leader end lower than ours", oe(2, 1), 3, ts(1, true)),
        ("latest epoch: follower end is LEO", oe(4, 3), 3, ts(3, true)),
        ("latest epoch, leader end above LEO: capped by LEO", oe(4, 9), 3, ts(3, true)),
        ("follower lacks epoch 3: end of epoch 2, partial", oe(3, 2), 3, ts(2, false)),
        ("follower lacks epoch 1: end of epoch 0, partial", oe(1, 1), 3, ts(1, false)),
        ("leader epoch above all ours: cache answers UNDEFINED, min(end, LEO)", oe(7, 10), 3, ts(3, true)),
        ("leader epoch above all ours, lower end", oe(7, 1), 3, ts(1, true)),
    ];
    for (name, leader, fetch_offset, expected) in table {
        assert_eq!(
            truncation_offset(*leader, &follower.cache, leo, Offset(*fetch_offset)),
            *expected,
            "{name}"
        );
    }
}

#[test]
fn test_truncation_offset_follower_has_no_epoch_at_or_below_leaders() {
    // Follower knows epochs 3 and 5 only (cache (3,4) (5,6)); leader answers epoch 1.
    // Kafka: the cache echoes the requested epoch below its first entry, so the follower's
    // end for epoch 1 is 4 (same epoch): min(4, leader end, LEO).
    let mut follower = SimLog::new(&[]);
    follower.truncate_fully_and_start_at(Offset(4));
    for e in [3, 3, 5, 5] {
        follower.append(e);
    }
    assert_eq!(
        truncation_offset(oe(1, 2), &follower.cache, follower.leo(), Offset(8)),
        ts(2, true)
    );
    // An empty cache has no epoch at all (log-level endOffsetForEpoch = None): min(end, LEO).
    let empty = LeaderEpochCache::new();
    assert_eq!(
        truncation_offset(oe(4, 6), &empty, Offset(9), Offset(0)),
        ts(6, true)
    );
    assert_eq!(
        truncation_offset(oe(4, 12), &empty, Offset(9), Offset(0)),
        ts(9, true)
    );
}

#[test]
fn test_truncation_offset_never_above_log_end() {
    let cache = LeaderEpochCache::from_entries(&[EpochEntry::new(0, 0), EpochEntry::new(3, 5)])
        .expect("valid");
    for epoch in -1..6 {
        for end in [-1, 0, 3, 5, 8, 20] {
            let t = truncation_offset(oe(epoch, end), &cache, Offset(8), Offset(8));
            assert!(t.offset <= Offset(8), "epoch {epoch} end {end}: {t:?}");
        }
    }
}

// ---- AbstractFetcherThreadTest -------------------------------------------------------------

#[test]
fn test_truncation() {
    // Kafka testTruncation: no epoch in common past offset 0; two partial rounds.
    let leader = SimLog::new(&[1, 3, 5]);
    let mut follower = SimLog::new(&[0, 2, 4]);
    let mut state = start_fetching(&follower);
    assert_eq!(
        state,
        FollowerFetchState::Fetching {
            fetch_offset: Offset(3),
            last_fetched_epoch: Some(LeaderEpoch(4))
        }
    );
    let rounds = reconcile(&leader, 5, &mut follower, &mut state);
    assert_eq!(
        rounds[..3],
        [
            Round::Truncated(ts(2, false)),
            Round::Truncated(ts(1, false)),
            Round::Truncated(ts(0, true))
        ]
    );
    assert_eq!(follower.epochs, leader.epochs);
    assert_eq!(follower.cache, leader.cache);
}

#[test]
fn test_diverging_epochs() {
    let leader = SimLog::new(&[0, 2, 5]);
    let mut follower = SimLog::new(&[0, 2, 4]);
    let mut state = start_fetching(&follower);
    assert_eq!(
        fetch_round(&leader, 5, &mut follower, &mut state),
        Round::Truncated(ts(2, true))
    );
    assert_eq!(
        state,
        FollowerFetchState::Fetching {
            fetch_offset: Offset(2),
            last_fetched_epoch: Some(LeaderEpoch(2))
        }
    );
    reconcile(&leader, 5, &mut follower, &mut state);
    assert_eq!(follower.epochs, leader.epochs);
    assert!(matches!(
        state,
        FollowerFetchState::Fetching {
            last_fetched_epoch: Some(LeaderEpoch(5)),
            ..
        }
    ));
}

#[test]
fn test_truncate_on_fetch_does_not_process_partition_data() {
    let mut leader = SimLog::new(&[0, 0, 2, 5, 5]);
    leader.hw = 4;
    let mut follower = SimLog::new(&[0, 0, 2, 4, 4, 4]);
    follower.hw = 1;
    let mut state = start_fetching(&follower);
    // The first fetch truncates; its HW / log start are not applied.
    assert_eq!(
        fetch_round(&leader, 5, &mut follower, &mut state),
        Round::Truncated(ts(3, true))
    );
    assert_eq!(follower.leo(), Offset(3));
    assert_eq!(follower.hw, 1);
    let rounds = reconcile(&leader, 5, &mut follower, &mut state);
    assert!(
        rounds.iter().all(|r| !matches!(r, Round::Truncated(_))),
        "truncated only once"
    );
    assert_eq!(follower.epochs, leader.epochs);
    assert_eq!(follower.hw, 4);
}

#[test]
fn test_truncation_skipped_if_no_epoch_change() {
    assert!(keeps_existing_fetch_state(
        Some(LeaderEpoch(5)),
        LeaderEpoch(5)
    ));
    assert!(!keeps_existing_fetch_state(
        Some(LeaderEpoch(4)),
        LeaderEpoch(5)
    ));
    assert!(!keeps_existing_fetch_state(None, LeaderEpoch(5)));
}

#[test]
fn test_follower_fetch_out_of_range_high() {
    // The leader's log was wiped (unclean election onto an empty replica).
    let leader = SimLog::new(&[]);
    let mut follower = SimLog::new(&[0, 2, 4]);
    let mut state = start_fetching(&follower);
    assert_eq!(
        fetch_round(&leader, 4, &mut follower, &mut state),
        Round::Error(ErrorCode::OffsetOutOfRange)
    );
    assert_eq!(
        classify_fetch_error(ErrorCode::OffsetOutOfRange, LeaderEpoch(4), LeaderEpoch(4)),
        FetchErrorAction::ResetOffset
    );
    let action =
        reset_offset_after_out_of_range(leader.leo(), Offset(leader.log_start), follower.leo());
    assert_eq!(action, OutOfRangeAction::TruncateTo(Offset(0)));
    follower.truncate_to(action.fetch_offset());
    assert_eq!(follower.leo(), Offset(0));
    assert_eq!(follower.hw, 0);
}

#[test]
fn test_follower_fetch_out_of_range_low() {
    // The follower is behind the leader's log start: fetch offset < log start is
    // OFFSET_OUT_OF_RANGE even though the epochs would also diverge.
    let mut leader = SimLog::new(&[]);
    leader.truncate_fully_and_start_at(Offset(2));
    leader.append(4);
    leader.hw = 3;
    let mut follower = SimLog::new(&[0]);
    let mut state = start_fetching(&follower);
    assert_eq!(
        fetch_round(&leader, 4, &mut follower, &mut state),
        Round::Error(ErrorCode::OffsetOutOfRange)
    );
    let action =
        reset_offset_after_out_of_range(leader.leo(), Offset(leader.log_start), follower.leo());
    assert_eq!(action, OutOfRangeAction::TruncateFullyAndStartAt(Offset(2)));
    follower.truncate_fully_and_start_at(action.fetch_offset());
    state = FollowerFetchState::Fetching {
        fetch_offset: action.fetch_offset(),
        last_fetched_epoch: follower.cache.latest_epoch(),
    };
    reconcile(&leader, 4, &mut follower, &mut state);
    assert_eq!(follower.log_start, 2);
    assert_eq!(follower.epochs, leader.epochs);
    assert_eq!(follower.hw, 3);
}

#[test]
fn test_reset_offset_after_out_of_range_keeps_log_when_inside_leader_range() {
    // Leader LEO >= ours and leader start <= ours: fetch from our LEO, no truncation.
    assert_eq!(
        reset_offset_after_out_of_range(Offset(10), Offset(2), Offset(5)),
        OutOfRangeAction::FetchFrom(Offset(5))
    );
    assert_eq!(
        reset_offset_after_out_of_range(Offset(5), Offset(5), Offset(5)),
        OutOfRangeAction::FetchFrom(Offset(5))
    );
    // The LEO check wins over the log start check.
    assert_eq!(
        reset_offset_after_out_of_range(Offset(4), Offset(9), Offset(5)),
        OutOfRangeAction::TruncateTo(Offset(4))
    );
}

#[test]
fn test_truncate_to_high_watermark_if_leader_epoch_info_not_available() {
    // No epoch in the follower's log: Truncating from the HW, and the HW path truncates there.
    assert_eq!(
        initial_fetch_state(true, None, Offset(3), Offset(2)),
        FollowerFetchState::Truncating {
            fetch_offset: Offset(2)
        }
    );
    let t = OffsetTruncationState {
        offset: Offset(2),
        truncation_completed: true,
    };
    assert_eq!(
        state_after_truncation(true, t, None),
        FollowerFetchState::Fetching {
            fetch_offset: Offset(2),
            last_fetched_epoch: None
        }
    );
}

#[test]
fn test_truncate_to_high_watermark_if_leader_epoch_request_not_supported() {
    assert_eq!(
        initial_fetch_state(false, Some(LeaderEpoch(4)), Offset(3), Offset(2)),
        FollowerFetchState::Truncating {
            fetch_offset: Offset(2)
        }
    );
}

#[test]
fn test_leader_with_truncation_on_fetch_starts_fetching_at_log_end() {
    assert_eq!(
        initial_fetch_state(true, Some(LeaderEpoch(4)), Offset(3), Offset(2)),
        FollowerFetchState::Fetching {
            fetch_offset: Offset(3),
            last_fetched_epoch: Some(LeaderEpoch(4))
        }
    );
}

#[test]
fn test_state_after_partial_truncation() {
    let partial = OffsetTruncationState {
        offset: Offset(4),
        truncation_completed: false,
    };
    // Truncate-on-fetch: Fetching anyway; the next fetch re-checks divergence.
    assert_eq!(
        state_after_truncation(true, partial, Some(LeaderEpoch(2))),
        FollowerFetchState::Fetching {
            fetch_offset: Offset(4),
            last_fetched_epoch: Some(LeaderEpoch(2))
        }
    );
    // OffsetsForLeaderEpoch path: stay Truncating and ask again.
    assert_eq!(
        state_after_truncation(false, partial, Some(LeaderEpoch(2))),
        FollowerFetchState::Truncating {
            fetch_offset: Offset(4)
        }
    );
}

#[test]
fn test_kip279_multi_round_offsets_for_leader_epoch() {
    // OffsetsForLeaderEpoch path (state Truncating). The follower lacks the leader's epoch 1,
    // so the first answer is partial; it asks again with its new latest epoch.
    let leader = SimLog::new(&[0, 1, 3]);
    let mut follower = SimLog::new(&[0, 2, 2]);
    let mut state = initial_fetch_state(
        false,
        follower.cache.latest_epoch(),
        follower.leo(),
        Offset(follower.hw),
    );
    let mut answers = Vec::new();
    while let FollowerFetchState::Truncating { fetch_offset } = state {
        assert!(answers.len() < 10, "no convergence");
        let epoch = follower.cache.latest_epoch().expect("has epochs");
        let answer =
            handle_offsets_for_leader_epoch(&leader.leader_view(3), Some(LeaderEpoch(3)), epoch)
                .expect("no error");
        let t = truncation_offset(answer, &follower.cache, follower.leo(), fetch_offset);
        answers.push((epoch, answer, t));
        follower.truncate_to(t.offset);
        state = state_after_truncation(false, t, follower.cache.latest_epoch());
    }
    assert_eq!(
        answers,
        vec![
            (LeaderEpoch(2), oe(1, 2), ts(1, false)),
            (LeaderEpoch(0), oe(0, 1), ts(1, true)),
        ]
    );
    assert_eq!(
        state,
        FollowerFetchState::Fetching {
            fetch_offset: Offset(1),
            last_fetched_epoch: Some(LeaderEpoch(0))
        }
    );
    reconcile(&leader, 3, &mut follower, &mut state);
    assert_eq!(follower.epochs, leader.epochs);
}

#[test]
fn test_kip279_multi_round_truncate_on_fetch_where_follower_lacks_leader_epoch() {
    // The mirror case: D holds source epochs 0,2,4; the source (after an unclean election)
    // holds 0,1,3,6. Each partial round strictly lowers D's LEO until it converges.
    let leader = SimLog::new(&[0, 0, 1, 1, 3, 6, 6]);
    let mut follower = SimLog::new(&[0, 0, 2, 2, 4, 4]);
    let mut state = start_fetching(&follower);
    let rounds = reconcile(&leader, 6, &mut follower, &mut state);
    let truncations: Vec<_> = rounds
        .iter()
        .filter_map(|r| {
            if let Round::Truncated(t) = r {
                Some(*t)
            } else {
                None
            }
        })
        .collect();
    assert_eq!(truncations, vec![ts(4, false), ts(2, false)]);
    assert_eq!(follower.epochs, leader.epochs);
}

#[test]
fn test_fenced_and_retriable_errors() {
    let e = |err, req, cur| classify_fetch_error(err, LeaderEpoch(req), LeaderEpoch(cur));
    assert_eq!(e(ErrorCode::None, 4, 4), FetchErrorAction::Process);
    assert_eq!(
        e(ErrorCode::OffsetOutOfRange, 4, 4),
        FetchErrorAction::ResetOffset
    );
    // testFencedOffsetResetAfterOutOfRange: fenced in our current epoch -> failed partition.
    assert_eq!(
        e(ErrorCode::FencedLeaderEpoch, 4, 4),
        FetchErrorAction::RemoveAndMarkFailed
    );
    // Fenced for an epoch we already moved past: just retry.
    assert_eq!(
        e(ErrorCode::FencedLeaderEpoch, 4, 5),
        FetchErrorAction::BackoffAndRetry
    );
    assert_eq!(
        e(ErrorCode::UnknownLeaderEpoch, 4, 4),
        FetchErrorAction::BackoffAndRetry
    );
    assert_eq!(
        e(ErrorCode::NotLeaderOrFollower, 4, 4),
        FetchErrorAction::BackoffAndRetry
    );
    assert_eq!(
        e(ErrorCode::UnknownTopicOrPartition, 4, 4),
        FetchErrorAction::BackoffAndRetry
    );
    assert_eq!(
        e(ErrorCode::CorruptMessage, 4, 4),
        FetchErrorAction::BackoffAndRetry
    );
}

#[test]
fn test_stale_fetch_response_is_ignored() {
    let fetching = FollowerFetchState::Fetching {
        fetch_offset: Offset(5),
        last_fetched_epoch: Some(LeaderEpoch(1)),
    };
    assert!(should_process_fetch_response(Offset(5), Some(&fetching)));
    // Truncated meanwhile: the fetch offset changed.
    assert!(!should_process_fetch_response(Offset(7), Some(&fetching)));
    // Removed, or back to Truncating.
    assert!(!should_process_fetch_response(Offset(5), None));
    assert!(!should_process_fetch_response(
        Offset(5),
        Some(&FollowerFetchState::Truncating {
            fetch_offset: Offset(5)
        })
    ));
}

#[test]
fn test_follower_high_watermark_clamps_and_may_go_down() {
    assert_eq!(
        follower_high_watermark(Offset(5), Offset(0), Offset(10)),
        Offset(5)
    );
    assert_eq!(
        follower_high_watermark(Offset(12), Offset(0), Offset(10)),
        Offset(10)
    );
    assert_eq!(
        follower_high_watermark(Offset(1), Offset(3), Offset(10)),
        Offset(3)
    );
    // Not monotonic: a lower leader HW (new leader with a lagging HW) lowers ours.
    assert_eq!(
        follower_high_watermark(Offset(4), Offset(0), Offset(10)),
        Offset(4)
    );
    assert_eq!(follower_log_start_offset(Offset(3), Offset(1)), Offset(3));
    assert_eq!(follower_log_start_offset(Offset(3), Offset(6)), Offset(6));
}

#[test]
fn mirror_follower_out_of_range_trims_a_record_less_trailing_epoch() {
    // Mirror chaos seed 135. The follower led the writable topic at epoch 0 with an empty
    // log: its cache holds only the record-less `(0, 0)` entry that `makeLeader` assigned.
    let mut follower = SimLog::new(&[]);
    follower
        .cache
        .assign(LeaderEpoch(0), Offset(0))
        .expect("valid entry");
    // The mirror leader (epoch 1) ran PREPARING with LME -1: log and cache emptied, and a
    // mirror leader assigns no epoch of its own, so it cannot resolve LastFetchedEpoch 0.
    let leader = SimLog::new(&[]);
    let mut state = initial_fetch_state(
        true,
        follower.cache.latest_epoch(),
        follower.leo(),
        Offset(0),
    );
    assert_eq!(
        fetch_round(&leader, 1, &mut follower, &mut state),
        Round::Error(ErrorCode::OffsetOutOfRange)
    );
    // Kafka's reset keeps the log (equal LEOs, leader start not above ours): with the cache
    // untouched the next fetch would send epoch 0 again and fail the same way forever.
    let kafka =
        reset_offset_after_out_of_range(leader.leo(), Offset(leader.log_start), follower.leo());
    assert_eq!(kafka, OutOfRangeAction::FetchFrom(Offset(0)));
    // The mirror follower truncates to the offset it keeps: no record goes, the trailing
    // entry does, and the next fetch carries no LastFetchedEpoch and succeeds.
    let action = mirror_follower_out_of_range_action(kafka);
    assert_eq!(action, OutOfRangeAction::TruncateTo(Offset(0)));
    follower.truncate_to(action.fetch_offset());
    assert!(follower.cache.is_empty());
    state = FollowerFetchState::Fetching {
        fetch_offset: action.fetch_offset(),
        last_fetched_epoch: follower.cache.latest_epoch(),
    };
    assert_eq!(
        reconcile(&leader, 1, &mut follower, &mut state),
        vec![Round::UpToDate]
    );
}

#[test]
fn mirror_follower_out_of_range_keeps_kafka_truncations() {
    // Only the keep-the-log case changes; truncations are Kafka's.
    for a in [
        OutOfRangeAction::TruncateTo(Offset(3)),
        OutOfRangeAction::TruncateFullyAndStartAt(Offset(7)),
    ] {
        assert_eq!(mirror_follower_out_of_range_action(a), a);
    }
    // A follower with records keeps them all: truncateTo(LEO) only trims the cache tail.
    let mut follower = SimLog::new(&[0, 0, 2]);
    follower
        .cache
        .assign(LeaderEpoch(3), follower.leo())
        .expect("valid entry");
    let action = mirror_follower_out_of_range_action(OutOfRangeAction::FetchFrom(follower.leo()));
    follower.truncate_to(action.fetch_offset());
    assert_eq!(follower.leo(), Offset(3));
    assert_eq!(
        follower.cache.epoch_entries(),
        &[EpochEntry::new(0, 0), EpochEntry::new(2, 2)]
    );
}
