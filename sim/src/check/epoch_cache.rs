//! `epoch_cache_well_formed`, the entry side (kafka-semantics §2.3 item 1): "every start ≤ LEO
//! (at most one trailing entry may have start == LEO with no records: the current leader
//! epoch)", and every entry inside the log points at records of its epoch. The batch side
//! ("for each batch, epochForOffset(batch.base) == batch.epoch") is
//! `PartitionLog::epoch_cache_matches_batches`; it cannot see an entry that starts inside a
//! batch of an older epoch, or in the middle of the log with no batch at all (issue M6 bug 1:
//! a follower cut in the middle of a batch kept [[3,0],[6,1]] with no record of epoch 6, and
//! fetched with LastFetchedEpoch 6 forever).

use mirror_core::log::epoch_cache::EpochEntry;
use mirror_core::types::{LeaderEpoch, Offset};

/// A batch as the rule sees it: base offset, last offset, epoch.
pub type BatchSpan = (Offset, Offset, LeaderEpoch);

/// The first entry of `entries` that breaks the rule, with the offset to report and why.
///
/// An entry `(e, s)` with `log_start <= s < leo` must start a batch of epoch `e`; the first
/// retained entry may instead start at the log start inside a batch of epoch `e` (Kafka's
/// `truncateFromStart` re-bases it there). An entry with `s == leo` holds no record and may
/// only be the last one (the epoch a leader assigned at `makeLeader`). No entry starts above
/// the LEO. Entries below the log start are another rule's.
#[must_use]
pub fn entry_without_records(
    entries: &[EpochEntry],
    batches: &[BatchSpan],
    log_start: Offset,
    leo: Offset,
) -> Option<(Offset, String)> {
    for (i, e) in entries.iter().enumerate() {
        let (epoch, start) = (e.epoch, e.start_offset);
        if start < log_start {
            continue;
        }
        if start > leo {
            return Some((
                start,
                format!("cache entry ({epoch}, {start}) above the LEO {leo}"),
            ));
        }
        if start == leo {
            if i + 1 < entries.len() {
                return Some((
                    start,
                    format!("cache entry ({epoch}, {start}) at the LEO is not the last one"),
                ));
            }
            continue;
        }
        let at = batches.partition_point(|b| b.1 < start);
        let batch = batches.get(at).filter(|b| b.0 <= start);
        let holds = match batch {
            Some(b) => b.2 == epoch && (b.0 == start || start == log_start),
            // The first entry re-based at the log start may sit in a hole: Kafka's
            // `LocalLog.truncateTo` sets the LEO to a target inside a batch it removes whole,
            // and a later log start inside that gap keeps the entry there
            // (`truncateFromStart`), with no record until the LEO (mirror chaos seed 6276).
            None => start == log_start,
        };
        if !holds {
            return Some((
                start,
                format!(
                    "cache entry ({epoch}, {start}) inside the log (LEO {leo}) starts no batch of epoch {epoch}"
                ),
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(epoch: i32, start: i64) -> EpochEntry {
        EpochEntry::new(epoch, start)
    }

    fn b(base: i64, last: i64, epoch: i32) -> BatchSpan {
        (Offset(base), Offset(last), LeaderEpoch(epoch))
    }

    #[test]
    fn entries_must_start_batches_of_their_epoch_or_trail_at_the_leo() {
        let batches = [b(0, 0, 3), b(1, 4, 6)];
        // Allowed: each entry starts a batch of its epoch.
        let ok = [e(3, 0), e(6, 1)];
        assert_eq!(
            entry_without_records(&ok, &batches, Offset(0), Offset(5)),
            None
        );
        // Allowed: a trailing entry at the LEO (makeLeader's), no record yet.
        let trailing = [e(3, 0), e(6, 1), e(7, 5)];
        assert_eq!(
            entry_without_records(&trailing, &batches, Offset(0), Offset(5)),
            None
        );
        // Allowed: the first entry re-based at a log start inside a batch of its epoch.
        let rebased = [e(6, 2)];
        assert_eq!(
            entry_without_records(&rebased, &batches, Offset(2), Offset(5)),
            None
        );
        // Allowed: the only entry at a log start inside the hole a mid-batch truncation
        // left (batches up to 142, LEO 149, log start 148).
        let hole = [b(133, 142, 0)];
        assert_eq!(
            entry_without_records(&[e(0, 148)], &hole, Offset(148), Offset(149)),
            None
        );
        // Forbidden: the same hole, but the entry is not the first retained one.
        assert!(
            entry_without_records(&[e(0, 140), e(1, 148)], &hole, Offset(140), Offset(149))
                .is_some()
        );
        // Forbidden (bug 1): the batch of epoch 6 is gone, the entry stayed, LEO 3.
        let cut = [b(0, 0, 3)];
        let (o, d) = entry_without_records(&ok, &cut, Offset(0), Offset(3)).unwrap();
        assert_eq!(o, Offset(1));
        assert!(d.contains("starts no batch"), "{d}");
        // Forbidden: an entry inside a batch of an older epoch.
        let one = [b(0, 4, 3)];
        assert!(entry_without_records(&ok, &one, Offset(0), Offset(5)).is_some());
        // Forbidden: a record-less entry at the LEO followed by another.
        let bad_tail = [e(3, 0), e(6, 1), e(7, 5), e(8, 5)];
        assert!(entry_without_records(&bad_tail, &batches, Offset(0), Offset(5)).is_some());
        // Forbidden: an entry above the LEO.
        let above = [e(3, 0), e(6, 1), e(7, 9)];
        assert!(entry_without_records(&above, &batches, Offset(0), Offset(5)).is_some());
        // Entries below the log start are left to the log-start rule.
        assert_eq!(
            entry_without_records(&[e(3, 0), e(6, 1)], &batches, Offset(1), Offset(5)),
            None
        );
    }
}
