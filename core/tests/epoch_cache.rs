//! Kafka's `LeaderEpochFileCacheTest` (storage module, trunk; plus the one extra case of the
//! older Scala version) transcribed against `LeaderEpochCache`'s public API, followed by a few
//! model-specific cases and a property test against a literal reference model of Kafka's rules.
//!
//! There is no checkpoint file in the model: Kafka's persistence tests become
//! `LeaderEpochCache::from_entries` round trips (Kafka's constructor re-`assign`s every
//! checkpointed entry, which is what `from_entries` does).

use std::collections::BTreeMap;

use mirror_core::log::epoch_cache::{EpochCacheError, EpochEntry, LeaderEpochCache};
use mirror_core::types::{LeaderEpoch, Offset};
use proptest::prelude::*;

const UNDEFINED_EPOCH: i32 = -1;
const UNDEFINED_EPOCH_OFFSET: i64 = -1;

fn assign(c: &mut LeaderEpochCache, epoch: i32, start: i64) {
    c.assign(LeaderEpoch(epoch), Offset(start))
        .expect("valid epoch entry");
}

fn end_offset_for(c: &LeaderEpochCache, epoch: i32, leo: i64) -> (i32, i64) {
    let (e, o) = c.end_offset_for(LeaderEpoch(epoch), Offset(leo));
    (e.0, o.0)
}

fn entries(c: &LeaderEpochCache) -> Vec<EpochEntry> {
    c.epoch_entries().to_vec()
}

fn e(epoch: i32, start: i64) -> EpochEntry {
    EpochEntry::new(epoch, start)
}

/// The fixture most of Kafka's truncation tests start from: `[(2,6), (3,8), (4,11)]`.
fn three_epochs() -> LeaderEpochCache {
    let mut c = LeaderEpochCache::new();
    assign(&mut c, 2, 6);
    assign(&mut c, 3, 8);
    assign(&mut c, 4, 11);
    c
}

fn latest(c: &LeaderEpochCache) -> Option<i32> {
    c.latest_epoch().map(|e| e.0)
}

// ---------------------------------------------------------------------------------------
// Transcribed from LeaderEpochFileCacheTest
// ---------------------------------------------------------------------------------------

#[test]
fn test_previous_epoch() {
    // Goal: previousEpoch() is the epoch just below the latest, and follows truncation.
    let mut c = LeaderEpochCache::new();
    assert_eq!(c.previous_epoch(), None);
    assign(&mut c, 2, 10);
    assert_eq!(c.previous_epoch(), None);
    assign(&mut c, 4, 15);
    assert_eq!(c.previous_epoch(), Some(LeaderEpoch(2)));
    assign(&mut c, 10, 20);
    assert_eq!(c.previous_epoch(), Some(LeaderEpoch(4)));
    c.truncate_from_end(Offset(18));
    assert_eq!(c.previous_epoch(), Some(LeaderEpoch(2)));
}

#[test]
fn should_add_epoch_and_message_offset_to_cache() {
    // Goal: a single assign is visible as latest epoch, as the entry, and ends at the LEO.
    let mut c = LeaderEpochCache::new();
    assign(&mut c, 2, 10);
    let leo = 11;
    assert_eq!(latest(&c), Some(2));
    assert_eq!(entries(&c)[0], e(2, 10));
    assert_eq!(end_offset_for(&c, 2, leo), (2, leo));
}

#[test]
fn should_return_log_end_offset_if_latest_epoch_requested() {
    // Goal: endOffsetFor(latest epoch) is the log end offset, not a cached offset.
    let mut c = LeaderEpochCache::new();
    assign(&mut c, 2, 11);
    assign(&mut c, 2, 12);
    let leo = 14;
    assert_eq!(end_offset_for(&c, 2, leo), (2, leo));
}

#[test]
fn should_return_undefined_offset_if_undefined_epoch_requested() {
    // Goal: a bootstrapping follower asking for UNDEFINED_EPOCH gets (-1, -1) from a non-empty cache.
    let mut c = LeaderEpochCache::new();
    assign(&mut c, 2, 11);
    assign(&mut c, 3, 12);
    assert_eq!(
        end_offset_for(&c, UNDEFINED_EPOCH, 0),
        (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
    );
}

#[test]
fn should_not_overwrite_log_end_offset_for_a_leader_epoch_once_it_has_been_assigned() {
    // Goal: assigning the latest epoch again at a later offset is a no-op.
    let mut c = LeaderEpochCache::new();
    let leo = 9;
    assign(&mut c, 2, leo);
    assert_eq!(c.assign(LeaderEpoch(2), Offset(10)), Ok(false));
    assert_eq!(entries(&c)[0].start_offset, Offset(leo));
    assert_eq!(entries(&c), vec![e(2, 9)]);
}

#[test]
fn should_enforce_monotonically_increasing_start_offsets() {
    // Goal: a new epoch at the same start offset replaces the older entry.
    let mut c = LeaderEpochCache::new();
    assign(&mut c, 2, 9);
    assign(&mut c, 3, 9);
    assert_eq!(entries(&c), vec![e(3, 9)]);
}

#[test]
fn should_not_overwrite_offset_for_a_leader_epoch_once_it_has_been_assigned() {
    // Goal: a later, greater offset for the same epoch is ignored.
    let mut c = LeaderEpochCache::new();
    assign(&mut c, 2, 6);
    assign(&mut c, 2, 10);
    assert_eq!(entries(&c)[0].start_offset, Offset(6));
}

#[test]
fn should_return_unsupported_if_no_epoch_recorded() {
    // Goal: an empty cache answers (-1, -1) for any epoch.
    let c = LeaderEpochCache::new();
    assert_eq!(
        end_offset_for(&c, 0, 0),
        (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
    );
}

#[test]
fn should_return_unsupported_if_no_epoch_recorded_and_undefined_epoch_requested() {
    // Goal: an empty cache answers (-1, -1) for UNDEFINED_EPOCH, whatever the LEO.
    let c = LeaderEpochCache::new();
    assert_eq!(
        end_offset_for(&c, UNDEFINED_EPOCH, 73),
        (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
    );
}

#[test]
fn should_return_first_epoch_if_requested_epoch_less_than_first_epoch() {
    // Goal (KAFKA-7415): an epoch below the first entry echoes the REQUESTED epoch and ends
    // at the first entry's start offset.
    let mut c = LeaderEpochCache::new();
    assign(&mut c, 5, 11);
    assign(&mut c, 6, 12);
    assign(&mut c, 7, 13);
    assert_eq!(end_offset_for(&c, 4, 0), (4, 11));
}

#[test]
fn should_truncate_if_matching_epoch_but_earlier_starting_offset() {
    // Goal: the latest epoch re-assigned at an EARLIER offset moves it and drops conflicting entries.
    let mut c = LeaderEpochCache::new();
    assign(&mut c, 5, 11);
    assign(&mut c, 6, 12);
    assign(&mut c, 7, 13);
    assert_eq!(c.assign(LeaderEpoch(7), Offset(12)), Ok(true));
    assert_eq!(end_offset_for(&c, 5, 0), (5, 12));
    assert_eq!(end_offset_for(&c, 6, 0), (5, 12));
    assert_eq!(entries(&c), vec![e(5, 11), e(7, 12)]);
}

#[test]
fn should_get_first_offset_of_subsequent_epoch_when_offset_requested_for_previous_epoch() {
    // Goal: an older epoch ends where the next epoch starts.
    let mut c = LeaderEpochCache::new();
    assign(&mut c, 1, 11);
    assign(&mut c, 1, 12);
    assign(&mut c, 2, 13);
    assign(&mut c, 2, 14);
    assign(&mut c, 3, 15);
    assign(&mut c, 3, 16);
    assert_eq!(end_offset_for(&c, 2, 17), (2, 15));
}

#[test]
fn should_return_next_available_epoch_if_there_is_no_exact_epoch_for_the_one_requested() {
    // Goal: a missing epoch answers with the floor epoch and the next epoch's start.
    let mut c = LeaderEpochCache::new();
    assign(&mut c, 0, 10);
    assign(&mut c, 2, 13);
    assign(&mut c, 4, 17);
    assert_eq!(end_offset_for(&c, 1, 0), (0, 13));
    assert_eq!(end_offset_for(&c, 2, 0), (2, 17));
    assert_eq!(end_offset_for(&c, 3, 0), (2, 17));
}

#[test]
fn should_not_update_epoch_and_start_offset_if_it_did_not_change() {
    // Goal: repeated assigns of the latest epoch at later offsets leave a single entry.
    let mut c = LeaderEpochCache::new();
    assign(&mut c, 2, 6);
    assign(&mut c, 2, 7);
    assert_eq!(entries(&c), vec![e(2, 6)]);
}

#[test]
fn should_return_invalid_offset_if_epoch_is_requested_which_is_not_currently_tracked() {
    // Goal: an epoch above the latest answers (-1, -1).
    let mut c = LeaderEpochCache::new();
    assign(&mut c, 2, 100);
    assert_eq!(
        end_offset_for(&c, 3, 100),
        (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
    );
}

#[test]
fn should_support_epochs_that_do_not_start_from_zero() {
    // Goal: a first epoch other than 0 works like any other.
    let mut c = LeaderEpochCache::new();
    assign(&mut c, 2, 6);
    let leo = 7;
    assert_eq!(end_offset_for(&c, 2, leo), (2, leo));
    assert_eq!(entries(&c), vec![e(2, 6)]);
}

#[test]
fn should_persist_epochs_between_instances() {
    // Goal (checkpoint → from_entries): a cache rebuilt from another cache's entries is identical.
    let mut c = LeaderEpochCache::new();
    assign(&mut c, 2, 6);
    let c2 = LeaderEpochCache::from_entries(c.epoch_entries()).expect("valid entries");
    assert_eq!(entries(&c2), vec![e(2, 6)]);
    assert_eq!(c2, c);
}

#[test]
fn should_enforce_monotonically_increasing_epochs() {
    // Goal: assigning an OLDER epoch at a later offset drops every later epoch.
    let mut c = LeaderEpochCache::new();
    assign(&mut c, 1, 5);
    assign(&mut c, 2, 6);
    assign(&mut c, 1, 7);
    let leo = 8;
    assert_eq!(latest(&c), Some(1));
    assert_eq!(end_offset_for(&c, 1, leo), (1, leo));
    assert_eq!(
        end_offset_for(&c, 2, leo),
        (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
    );
    assert_eq!(entries(&c)[0], e(1, 7));
    assert_eq!(entries(&c), vec![e(1, 7)]);
}

#[test]
fn should_enforce_offsets_increase_monotonically() {
    // Goal: a newer epoch at an earlier offset wins; the conflicting entry is removed.
    let mut c = LeaderEpochCache::new();
    assign(&mut c, 2, 6);
    assign(&mut c, 3, 5);
    assert_eq!(entries(&c), vec![e(3, 5)]);
}

#[test]
fn should_increase_and_track_epochs_as_leaders_change_many_times() {
    // Goal: leader changes with no data in between keep correct end offsets per epoch.
    let mut c = LeaderEpochCache::new();
    let mut leo = 0;
    assign(&mut c, 0, 0);
    assign(&mut c, 1, 0);
    assert_eq!(latest(&c), Some(1));
    assert_eq!(end_offset_for(&c, 1, leo), (1, 0));
    // Epoch 0 was replaced by epoch 1 at the same offset, so 0 is below the first entry.
    assert_eq!(end_offset_for(&c, 0, leo), (0, 0));

    leo = 5;
    assert_eq!(end_offset_for(&c, 1, leo), (1, 5));
    assert_eq!(end_offset_for(&c, 0, leo), (0, 0));

    assign(&mut c, 2, 5);
    leo = 10;
    assert_eq!(end_offset_for(&c, 2, leo), (2, 10));
    assert_eq!(end_offset_for(&c, 1, leo), (1, 5));
    assert_eq!(end_offset_for(&c, 0, leo), (0, 0));
}

#[test]
fn should_increase_and_track_epochs_as_follower_receives_many_messages() {
    // Goal: per-record assigns (as a follower appends) keep one entry per epoch.
    let mut c = LeaderEpochCache::new();
    assign(&mut c, 0, 0);
    assign(&mut c, 0, 1);
    assign(&mut c, 0, 2);
    let mut leo = 3;
    assert_eq!(latest(&c), Some(0));
    assert_eq!(end_offset_for(&c, 0, leo), (0, leo));

    assign(&mut c, 1, 3);
    assign(&mut c, 1, 4);
    assign(&mut c, 1, 5);
    leo = 6;
    assert_eq!(latest(&c), Some(1));
    assert_eq!(end_offset_for(&c, 1, leo), (1, leo));

    assign(&mut c, 2, 6);
    assign(&mut c, 2, 7);
    assign(&mut c, 2, 8);
    leo = 9;
    assert_eq!(latest(&c), Some(2));
    assert_eq!(end_offset_for(&c, 2, leo), (2, leo));

    assert_eq!(end_offset_for(&c, 0, leo), (0, 3));
    assert_eq!(end_offset_for(&c, 1, leo), (1, 6));
    assert_eq!(entries(&c), vec![e(0, 0), e(1, 3), e(2, 6)]);
}

#[test]
fn should_drop_entries_on_epoch_boundary_when_removing_latest_entries() {
    // Goal: truncateFromEnd is inclusive: an entry starting exactly at the end offset goes.
    let mut c = three_epochs();
    c.truncate_from_end(Offset(8));
    assert_eq!(entries(&c), vec![e(2, 6)]);
}

#[test]
fn should_preserve_reset_offset_on_clear_earliest_if_one_exists() {
    // Goal: truncateFromStart on an epoch boundary keeps that entry unchanged.
    let mut c = three_epochs();
    c.truncate_from_start(Offset(8));
    assert_eq!(entries(&c), vec![e(3, 8), e(4, 11)]);
}

#[test]
fn should_update_saved_offset_when_offset_to_clear_to_is_between_epochs() {
    // Goal (Scala version): truncateFromStart between boundaries re-bases the covering epoch.
    let mut c = three_epochs();
    c.truncate_from_start(Offset(9));
    assert_eq!(entries(&c), vec![e(3, 9), e(4, 11)]);
}

#[test]
fn should_not_clear_anything_if_offset_too_early() {
    // Goal: truncateFromStart below the first entry changes nothing.
    let mut c = three_epochs();
    c.truncate_from_start(Offset(1));
    assert_eq!(entries(&c), vec![e(2, 6), e(3, 8), e(4, 11)]);
}

#[test]
fn should_not_clear_anything_if_offset_is_first_offset() {
    // Goal: truncateFromStart at the first entry's start changes nothing (exclusive semantics).
    let mut c = three_epochs();
    c.truncate_from_start(Offset(6));
    assert_eq!(entries(&c), vec![e(2, 6), e(3, 8), e(4, 11)]);
}

#[test]
fn should_retain_latest_epoch_on_clear_all_earliest() {
    // Goal: truncateFromStart at the last entry's start keeps exactly that entry.
    let mut c = three_epochs();
    c.truncate_from_start(Offset(11));
    assert_eq!(entries(&c), vec![e(4, 11)]);
}

#[test]
fn should_update_offset_between_epoch_boundaries_on_clear_earliest() {
    // Goal: truncateFromStart(9) between 8 and 11 re-bases epoch 3 to 9.
    let mut c = three_epochs();
    c.truncate_from_start(Offset(9));
    assert_eq!(entries(&c), vec![e(3, 9), e(4, 11)]);
}

#[test]
fn should_update_offset_between_first_two_epoch_boundaries_on_clear_earliest() {
    // Goal: truncateFromStart inside the first epoch re-bases only the first entry.
    let mut c = LeaderEpochCache::new();
    assign(&mut c, 0, 0);
    assign(&mut c, 1, 7);
    assign(&mut c, 2, 10);
    c.truncate_from_start(Offset(5));
    assert_eq!(entries(&c), vec![e(0, 5), e(1, 7), e(2, 10)]);
}

#[test]
fn should_retain_latest_epoch_on_clear_all_earliest_and_update_its_offset() {
    // Goal: truncateFromStart beyond every entry keeps the last epoch, re-based to the new start.
    let mut c = three_epochs();
    c.truncate_from_start(Offset(15));
    assert_eq!(entries(&c), vec![e(4, 15)]);
}

#[test]
fn should_drop_entries_between_epoch_boundary_when_removing_newest() {
    // Goal: truncateFromEnd between boundaries keeps the epoch that started before the end.
    let mut c = three_epochs();
    c.truncate_from_end(Offset(9));
    assert_eq!(latest(&c), Some(3));
    assert_eq!(entries(&c), vec![e(2, 6), e(3, 8)]);
}

#[test]
fn should_clear_all_entries() {
    // Goal: clearAndFlush empties the cache.
    let mut c = three_epochs();
    c.clear();
    assert!(c.is_empty());
    assert_eq!(c.epoch_entries().len(), 0);
}

#[test]
fn should_not_reset_epoch_history_head_if_undefined_passed() {
    // Goal: truncateFromStart(UNDEFINED_EPOCH_OFFSET) is a no-op.
    let mut c = three_epochs();
    c.truncate_from_start(Offset(UNDEFINED_EPOCH_OFFSET));
    assert_eq!(entries(&c), vec![e(2, 6), e(3, 8), e(4, 11)]);
}

#[test]
fn should_not_reset_epoch_history_tail_if_undefined_passed() {
    // Goal: truncateFromEnd(UNDEFINED_EPOCH_OFFSET) is a no-op.
    let mut c = three_epochs();
    c.truncate_from_end(Offset(UNDEFINED_EPOCH_OFFSET));
    assert_eq!(entries(&c), vec![e(2, 6), e(3, 8), e(4, 11)]);
}

#[test]
fn should_fetch_latest_epoch_of_empty_cache() {
    // Goal: an empty cache has no latest epoch.
    let c = LeaderEpochCache::new();
    assert_eq!(c.latest_epoch(), None);
    assert_eq!(c.latest_entry(), None);
    assert_eq!(c.earliest_entry(), None);
}

#[test]
fn should_fetch_end_offset_of_empty_cache() {
    // Goal: an empty cache answers (-1, -1).
    let c = LeaderEpochCache::new();
    assert_eq!(
        end_offset_for(&c, 7, 0),
        (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
    );
}

#[test]
fn should_clear_earliest_on_empty_cache() {
    // Goal: truncateFromStart on an empty cache does not fail and inserts nothing.
    let mut c = LeaderEpochCache::new();
    c.truncate_from_start(Offset(7));
    assert!(c.is_empty());
}

#[test]
fn should_clear_latest_on_empty_cache() {
    // Goal: truncateFromEnd on an empty cache does not fail.
    let mut c = LeaderEpochCache::new();
    c.truncate_from_end(Offset(7));
    assert!(c.is_empty());
}

#[test]
fn test_find_previous_epoch() {
    // Goal: previousEpoch(e) is the largest cached epoch strictly below e.
    let mut c = LeaderEpochCache::new();
    assert_eq!(c.previous_epoch_of(LeaderEpoch(2)), None);
    assign(&mut c, 2, 10);
    assert_eq!(c.previous_epoch_of(LeaderEpoch(2)), None);
    assign(&mut c, 4, 15);
    assert_eq!(c.previous_epoch_of(LeaderEpoch(4)), Some(LeaderEpoch(2)));
    assign(&mut c, 10, 20);
    assert_eq!(c.previous_epoch_of(LeaderEpoch(10)), Some(LeaderEpoch(4)));
    c.truncate_from_end(Offset(18));
    let l = c.latest_epoch().expect("non-empty");
    assert_eq!(c.previous_epoch_of(l), Some(LeaderEpoch(2)));
}

#[test]
fn test_find_previous_entry() {
    // Goal: previousEntry(e) is the entry of the largest epoch strictly below e. The model has
    // no `previous_entry`; it is `epoch_entry(previous_epoch_of(e))`.
    fn previous_entry(c: &LeaderEpochCache, epoch: i32) -> Option<EpochEntry> {
        c.previous_epoch_of(LeaderEpoch(epoch))
            .and_then(|p| c.epoch_entry(p))
    }
    let mut c = LeaderEpochCache::new();
    assert_eq!(previous_entry(&c, 2), None);
    assign(&mut c, 2, 10);
    assert_eq!(previous_entry(&c, 2), None);
    assign(&mut c, 4, 15);
    assert_eq!(previous_entry(&c, 4), Some(e(2, 10)));
    assign(&mut c, 10, 20);
    assert_eq!(previous_entry(&c, 10), Some(e(4, 15)));
    c.truncate_from_end(Offset(18));
    assert_eq!(
        previous_entry(&c, latest(&c).expect("non-empty")),
        Some(e(2, 10))
    );
}

#[test]
fn test_find_next_epoch() {
    // Goal: nextEpoch(e) is the smallest cached epoch strictly above e.
    let mut c = LeaderEpochCache::new();
    assign(&mut c, 0, 0);
    assign(&mut c, 1, 100);
    assign(&mut c, 2, 200);
    assert_eq!(c.next_epoch(LeaderEpoch(-1)), Some(LeaderEpoch(0)));
    assert_eq!(c.next_epoch(LeaderEpoch(0)), Some(LeaderEpoch(1)));
    assert_eq!(c.next_epoch(LeaderEpoch(1)), Some(LeaderEpoch(2)));
    assert_eq!(c.next_epoch(LeaderEpoch(2)), None);
    assert_eq!(c.next_epoch(LeaderEpoch(100)), None);
}

#[test]
fn test_get_epoch_entry() {
    // Goal: epochEntry(e) returns exactly the entry of e.
    let mut c = LeaderEpochCache::new();
    assign(&mut c, 2, 100);
    assign(&mut c, 3, 500);
    assign(&mut c, 5, 1000);
    assert_eq!(c.epoch_entry(LeaderEpoch(2)), Some(e(2, 100)));
    assert_eq!(c.epoch_entry(LeaderEpoch(3)), Some(e(3, 500)));
    assert_eq!(c.epoch_entry(LeaderEpoch(5)), Some(e(5, 1000)));
    assert_eq!(c.epoch_entry(LeaderEpoch(4)), None);
}

#[test]
fn should_fetch_epoch_for_given_offset() {
    // Goal: epochForOffset: exact start match, inside a range, after the last start, below the first.
    let mut c = LeaderEpochCache::new();
    assign(&mut c, 0, 10);
    assign(&mut c, 1, 20);
    assign(&mut c, 5, 30);
    assert_eq!(c.epoch_for_offset(Offset(25)), Some(LeaderEpoch(1)));
    assert_eq!(c.epoch_for_offset(Offset(20)), Some(LeaderEpoch(1)));
    assert_eq!(c.epoch_for_offset(Offset(30)), Some(LeaderEpoch(5)));
    assert_eq!(c.epoch_for_offset(Offset(50)), Some(LeaderEpoch(5)));
    assert_eq!(c.epoch_for_offset(Offset(5)), None);
    assert_eq!(c.epoch_for_offset(Offset(10)), Some(LeaderEpoch(0)));
    assert_eq!(c.epoch_for_offset(Offset(9)), None);
}

#[test]
fn should_write_checkpoint_on_truncation() {
    // Goal (checkpoint → from_entries): the state after both truncations round-trips.
    let mut c = three_epochs();
    c.truncate_from_end(Offset(11));
    c.truncate_from_start(Offset(8));
    assert_eq!(entries(&c), vec![e(3, 8)]);
    let reloaded = LeaderEpochCache::from_entries(c.epoch_entries()).expect("valid entries");
    assert_eq!(entries(&reloaded), vec![e(3, 8)]);
}

// ---------------------------------------------------------------------------------------
// Model-specific cases (Kafka's rules from kafka-semantics.md §1.1 not covered above)
// ---------------------------------------------------------------------------------------

#[test]
fn assign_rejects_negative_epoch_or_offset() {
    // Goal: Kafka's assign throws IllegalArgumentException for a negative epoch or offset; the
    // model returns Err and leaves the cache unchanged.
    let mut c = three_epochs();
    let before = c.clone();
    assert_eq!(
        c.assign(LeaderEpoch(-1), Offset(20)),
        Err(EpochCacheError::InvalidEntry {
            epoch: LeaderEpoch(-1),
            start_offset: Offset(20)
        })
    );
    assert!(matches!(
        c.assign(LeaderEpoch(5), Offset(-1)),
        Err(EpochCacheError::InvalidEntry { .. })
    ));
    assert!(c.assign(LeaderEpoch(-3), Offset(-3)).is_err());
    assert_eq!(c, before);
    // from_entries propagates the error (a corrupt checkpoint).
    assert!(LeaderEpochCache::from_entries(&[e(1, 0), e(-1, 5)]).is_err());
}

#[test]
fn assign_same_epoch_at_same_offset_is_a_no_op() {
    // Goal: re-assigning the latest entry exactly is not an update (isUpdateNeeded is false).
    let mut c = three_epochs();
    assert_eq!(c.assign(LeaderEpoch(4), Offset(11)), Ok(false));
    assert_eq!(entries(&c), vec![e(2, 6), e(3, 8), e(4, 11)]);
}

#[test]
fn assign_same_epoch_at_earlier_offset_moves_it() {
    // Goal: the latest epoch at an earlier offset moves its start back; older entries survive
    // when they still start earlier.
    let mut c = three_epochs();
    assert_eq!(c.assign(LeaderEpoch(4), Offset(9)), Ok(true));
    assert_eq!(entries(&c), vec![e(2, 6), e(3, 8), e(4, 9)]);
}

#[test]
fn assign_non_latest_epoch_replaces_its_own_entry_and_the_tail() {
    // Goal: assigning an epoch that exists but is not the latest is an update: that entry and
    // everything after it are dropped, then the new entry is added (even at a later offset).
    let mut c = three_epochs();
    assert_eq!(c.assign(LeaderEpoch(3), Offset(12)), Ok(true));
    assert_eq!(entries(&c), vec![e(2, 6), e(3, 12)]);
}

#[test]
fn assign_lower_epoch_at_earlier_offset_drops_all_conflicting_entries() {
    // Goal: a lower epoch at an earlier offset drops every tail entry with epoch >= or start >=.
    let mut c = three_epochs();
    assert_eq!(c.assign(LeaderEpoch(1), Offset(3)), Ok(true));
    assert_eq!(entries(&c), vec![e(1, 3)]);
    let mut c = three_epochs();
    assign(&mut c, 3, 7);
    assert_eq!(entries(&c), vec![e(2, 6), e(3, 7)]);
}

#[test]
fn end_offset_for_epoch_below_first_entry_of_single_entry_cache() {
    // Goal (KAFKA-7415): with one entry, an older epoch gets (requested, first.start), not the LEO.
    let mut c = LeaderEpochCache::new();
    assign(&mut c, 5, 40);
    assert_eq!(end_offset_for(&c, 0, 100), (0, 40));
    assert_eq!(end_offset_for(&c, 4, 100), (4, 40));
    assert_eq!(end_offset_for(&c, 5, 100), (5, 100));
    assert_eq!(end_offset_for(&c, 6, 100), (-1, -1));
}

#[test]
fn end_offset_for_latest_epoch_is_leo_even_when_leo_equals_its_start() {
    // Goal: a new leader's entry exists before any record of its epoch; its end is the LEO.
    let mut c = three_epochs();
    assign(&mut c, 7, 20);
    assert_eq!(end_offset_for(&c, 7, 20), (7, 20));
    assert_eq!(end_offset_for(&c, 5, 20), (4, 20));
    assert_eq!(end_offset_for(&c, 4, 20), (4, 20));
}

#[test]
fn truncate_from_end_at_leo_trims_trailing_entry_with_no_records() {
    // Goal: an entry starting AT the truncation offset (e.g. assigned at LEO by makeLeader) is removed.
    let mut c = three_epochs();
    assign(&mut c, 5, 20);
    c.truncate_from_end(Offset(20));
    assert_eq!(entries(&c), vec![e(2, 6), e(3, 8), e(4, 11)]);
}

#[test]
fn truncate_from_end_beyond_every_entry_is_a_no_op() {
    // Goal: truncateFromEnd past the latest start changes nothing.
    let mut c = three_epochs();
    c.truncate_from_end(Offset(12));
    c.truncate_from_end(Offset(1_000));
    assert_eq!(entries(&c), vec![e(2, 6), e(3, 8), e(4, 11)]);
}

#[test]
fn truncate_from_end_at_or_below_first_entry_empties_the_cache() {
    // Goal: truncateFromEnd at or below the first start removes every entry.
    let mut c = three_epochs();
    c.truncate_from_end(Offset(6));
    assert!(c.is_empty());
    let mut c = three_epochs();
    c.truncate_from_end(Offset(0));
    assert!(c.is_empty());
}

#[test]
fn truncate_from_start_keeps_entry_starting_exactly_at_new_start() {
    // Goal: "exclusive" semantics: truncate_from_start(6) on a cache starting at 6 keeps (2, 6);
    // truncate_from_start(8) drops (2, 6) but keeps (3, 8) as it is.
    let mut c = three_epochs();
    c.truncate_from_start(Offset(6));
    assert_eq!(c.earliest_entry(), Some(e(2, 6)));
    c.truncate_from_start(Offset(8));
    assert_eq!(entries(&c), vec![e(3, 8), e(4, 11)]);
}

#[test]
fn epoch_for_offset_on_empty_cache_and_for_negative_offset() {
    // Goal: no entry covers any offset in an empty cache, nor a negative offset.
    let c = LeaderEpochCache::new();
    assert_eq!(c.epoch_for_offset(Offset(0)), None);
    let c = three_epochs();
    assert_eq!(c.epoch_for_offset(Offset(-1)), None);
}

#[test]
fn previous_and_next_epoch_for_uncached_epochs() {
    // Goal: lowerKey/higherKey semantics for epochs that are not in the cache.
    let c = three_epochs();
    assert_eq!(c.previous_epoch_of(LeaderEpoch(100)), Some(LeaderEpoch(4)));
    assert_eq!(c.previous_epoch_of(LeaderEpoch(3)), Some(LeaderEpoch(2)));
    assert_eq!(c.previous_epoch_of(LeaderEpoch(0)), None);
    assert_eq!(c.next_epoch(LeaderEpoch(0)), Some(LeaderEpoch(2)));
    assert_eq!(c.next_epoch(LeaderEpoch(4)), None);
    assert_eq!(c.first_entry_above(LeaderEpoch(2)), Some(e(3, 8)));
    assert_eq!(c.first_entry_above(LeaderEpoch(4)), None);
    assert_eq!(c.first_entry_above(LeaderEpoch(-1)), Some(e(2, 6)));
}

#[test]
fn from_entries_enforces_monotonicity_like_reassigning_a_checkpoint() {
    // Goal: Kafka's constructor re-assigns checkpointed entries, so a non-monotonic checkpoint
    // collapses to a monotonic cache rather than loading as is.
    let c = LeaderEpochCache::from_entries(&[e(1, 0), e(3, 10), e(2, 20), e(4, 15)])
        .expect("non-negative entries");
    assert_eq!(entries(&c), vec![e(1, 0), e(4, 15)]);
    c.check_invariants();
}

// ---------------------------------------------------------------------------------------
// Property test against a literal transcription of Kafka's LeaderEpochFileCache
// ---------------------------------------------------------------------------------------

/// Kafka's `LeaderEpochFileCache` over a `TreeMap<Integer, EpochEntry>`, transcribed literally
/// (same branches, same iteration order) into a `BTreeMap<epoch, startOffset>`.
#[derive(Clone, Debug, Default)]
struct RefCache {
    epochs: BTreeMap<i32, i64>,
}

impl RefCache {
    fn latest_entry(&self) -> Option<(i32, i64)> {
        self.epochs.last_key_value().map(|(&e, &s)| (e, s))
    }

    /// `assign(EpochEntry)`; `Err(())` stands for IllegalArgumentException.
    fn assign(&mut self, epoch: i32, start: i64) -> Result<bool, ()> {
        if epoch < 0 || start < 0 {
            return Err(());
        }
        // isUpdateNeeded
        let needed = self
            .latest_entry()
            .is_none_or(|(le, ls)| epoch != le || start < ls);
        if !needed {
            return Ok(false);
        }
        // maybeTruncateNonMonotonicEntries: removeWhileMatching(descendingMap, ...)
        while let Some((le, ls)) = self.latest_entry() {
            if le >= epoch || ls >= start {
                self.epochs.remove(&le);
            } else {
                break;
            }
        }
        self.epochs.insert(epoch, start);
        Ok(true)
    }

    fn end_offset_for(&self, requested: i32, leo: i64) -> (i32, i64) {
        if requested == UNDEFINED_EPOCH {
            return (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET);
        }
        if self.latest_entry().map(|(e, _)| e) == Some(requested) {
            return (requested, leo);
        }
        // higherEntry / floorEntry
        let higher = self
            .epochs
            .range((
                std::ops::Bound::Excluded(requested),
                std::ops::Bound::Unbounded,
            ))
            .next();
        match higher {
            None => (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET),
            Some((_, &hs)) => match self.epochs.range(..=requested).next_back() {
                None => (requested, hs),
                Some((&fe, _)) => (fe, hs),
            },
        }
    }

    fn truncate_from_end(&mut self, end: i64) {
        if end >= 0 && self.latest_entry().is_some_and(|(_, s)| s >= end) {
            while let Some((le, ls)) = self.latest_entry() {
                if ls >= end {
                    self.epochs.remove(&le);
                } else {
                    break;
                }
            }
        }
    }

    fn truncate_from_start(&mut self, start: i64) {
        let mut removed = Vec::new();
        while let Some((&fe, &fs)) = self.epochs.first_key_value() {
            if fs <= start {
                self.epochs.remove(&fe);
                removed.push((fe, fs));
            } else {
                break;
            }
        }
        if let Some(&(le, _)) = removed.last() {
            self.epochs.insert(le, start);
        }
    }

    fn epoch_for_offset(&self, offset: i64) -> Option<i32> {
        let mut previous = None;
        for (&epoch, &start) in &self.epochs {
            if start == offset {
                return Some(epoch);
            }
            if start > offset {
                return previous;
            }
            previous = Some(epoch);
        }
        previous
    }

    fn previous_epoch(&self) -> Option<i32> {
        let (le, _) = self.latest_entry()?;
        self.previous_epoch_of(le)
    }

    fn previous_epoch_of(&self, epoch: i32) -> Option<i32> {
        self.epochs.range(..epoch).next_back().map(|(&e, _)| e)
    }

    fn next_epoch(&self, epoch: i32) -> Option<i32> {
        self.epochs
            .range((std::ops::Bound::Excluded(epoch), std::ops::Bound::Unbounded))
            .next()
            .map(|(&e, _)| e)
    }

    fn entries(&self) -> Vec<EpochEntry> {
        self.epochs
            .iter()
            .map(|(&e, &s)| EpochEntry::new(e, s))
            .collect()
    }
}

#[derive(Clone, Debug)]
enum Op {
    Assign(i32, i64),
    TruncateFromEnd(i64),
    TruncateFromStart(i64),
    Clear,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (-1i32..12, -1i64..40).prop_map(|(e, o)| Op::Assign(e, o)),
        2 => (-1i64..45).prop_map(Op::TruncateFromEnd),
        2 => (-1i64..45).prop_map(Op::TruncateFromStart),
        1 => Just(Op::Clear),
    ]
}

fn check_agrees(model: &LeaderEpochCache, reference: &RefCache) {
    model.check_invariants();
    assert_eq!(model.epoch_entries(), reference.entries().as_slice());
    assert_eq!(
        model.latest_epoch().map(|e| e.0),
        reference.latest_entry().map(|(e, _)| e)
    );
    assert_eq!(
        model.previous_epoch().map(|e| e.0),
        reference.previous_epoch()
    );
    let leo = reference.latest_entry().map_or(0, |(_, s)| s) + 3;
    for epoch in -2..14 {
        assert_eq!(
            end_offset_for(model, epoch, leo),
            reference.end_offset_for(epoch, leo),
            "end_offset_for({epoch}, {leo})"
        );
        assert_eq!(
            model.previous_epoch_of(LeaderEpoch(epoch)).map(|e| e.0),
            reference.previous_epoch_of(epoch)
        );
        assert_eq!(
            model.next_epoch(LeaderEpoch(epoch)).map(|e| e.0),
            reference.next_epoch(epoch)
        );
        assert_eq!(
            model.epoch_entry(LeaderEpoch(epoch)),
            reference
                .epochs
                .get(&epoch)
                .map(|&s| EpochEntry::new(epoch, s))
        );
    }
    for offset in -1..46 {
        assert_eq!(
            model.epoch_for_offset(Offset(offset)).map(|e| e.0),
            reference.epoch_for_offset(offset),
            "epoch_for_offset({offset})"
        );
    }
    // Checkpoint round trip.
    let reloaded = LeaderEpochCache::from_entries(model.epoch_entries()).expect("valid entries");
    assert_eq!(&reloaded, model);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_operations_keep_invariants_and_agree_with_kafka_reference(
        ops in prop::collection::vec(op(), 0..40)
    ) {
        // Goal: every public mutation keeps strict monotonicity and matches Kafka's rules literally.
        let mut model = LeaderEpochCache::new();
        let mut reference = RefCache::default();
        for op in ops {
            match op {
                Op::Assign(e, o) => {
                    let got = model.assign(LeaderEpoch(e), Offset(o));
                    let want = reference.assign(e, o);
                    prop_assert_eq!(got.ok(), want.ok(), "assign({}, {})", e, o);
                }
                Op::TruncateFromEnd(o) => {
                    model.truncate_from_end(Offset(o));
                    reference.truncate_from_end(o);
                }
                Op::TruncateFromStart(o) => {
                    model.truncate_from_start(Offset(o));
                    reference.truncate_from_start(o);
                }
                Op::Clear => {
                    model.clear();
                    reference.epochs.clear();
                }
            }
            check_agrees(&model, &reference);
        }
    }
}
