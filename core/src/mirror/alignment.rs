//! PREPARING / LOG_ALIGNMENT (kip1279.md A.1, B §8.1): where the destination log is cut
//! before mirroring resumes after a failback, and when the replicas have caught up with the
//! cut.
//!
//! The marker comes from the other cluster's `__mirror_state` (DescribeMirrors lookup):
//!
//! - LME (seed): truncate at the start offset of the first local epoch greater than the
//!   LME. Offsets in epochs <= LME were mirrored from (or are known to) the other cluster;
//!   anything in a later epoch was written locally after the stop and must go. A remaining
//!   tail inside an epoch <= LME that the source never had is removed later by the normal
//!   fetch divergence path.
//! - LMO (early): truncate to the offset.
//! - LastMirrorPosition (latest): the LME rule, bounded by the offset when known
//!   (`min(epoch rule, offset)`, the natural reading of B §8.1 step 3's note).
//!
//! An unknown marker (`-1`) means "start from scratch": truncate everything; the fetch's
//! OFFSET_OUT_OF_RANGE path then snaps to the source log start.

use super::policy::FailbackMarker;
use crate::log::epoch_cache::LeaderEpochCache;
use crate::types::{BrokerId, LeaderEpoch, Offset};

/// Where to cut the log. Ordered from most to least truncation, so `min` combines rules.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum TruncationPoint {
    /// Drop the whole log (`truncate_fully_and_start_at`): the other cluster knows nothing.
    Fully,
    /// `truncate_to(offset)`; always below the LEO.
    At(Offset),
    /// Keep the log as it is.
    Nothing,
}

/// The truncation point for `marker` over a log with epoch cache `cache` and end `leo`.
#[must_use]
pub fn truncation_point(
    cache: &LeaderEpochCache,
    leo: Offset,
    marker: FailbackMarker,
) -> TruncationPoint {
    let point = match marker {
        FailbackMarker::Lme(lme) => epoch_rule(cache, leo, lme),
        FailbackMarker::Lmo(lmo) => offset_rule(leo, lmo),
        FailbackMarker::Position { epoch, offset } => {
            let by_epoch = epoch_rule(cache, leo, epoch);
            match offset {
                Some(_) => by_epoch.min(offset_rule(leo, offset)),
                None => by_epoch,
            }
        }
    };
    if let TruncationPoint::At(o) = point {
        assert!(
            o < leo && o.0 >= 0,
            "truncation_point_below_leo: {o} leo={leo}"
        );
    }
    point
}

/// Seed: the start of the first epoch above the LME; nothing when no epoch is above it.
fn epoch_rule(cache: &LeaderEpochCache, leo: Offset, lme: Option<LeaderEpoch>) -> TruncationPoint {
    let Some(lme) = lme else {
        return TruncationPoint::Fully;
    };
    match cache.first_entry_above(lme) {
        Some(entry) => below_leo(entry.start_offset, leo),
        None => TruncationPoint::Nothing,
    }
}

/// Early: the offset itself.
fn offset_rule(leo: Offset, lmo: Option<Offset>) -> TruncationPoint {
    match lmo {
        None => TruncationPoint::Fully,
        Some(o) => below_leo(o, leo),
    }
}

fn below_leo(offset: Offset, leo: Offset) -> TruncationPoint {
    if offset < leo {
        TruncationPoint::At(offset)
    } else {
        TruncationPoint::Nothing
    }
}

/// One follower as the leader sees it for convergence: `(broker, log end offset, in ISR)`.
pub type FollowerLeo = (BrokerId, Offset, bool);

/// Whether PREPARING may move on to MIRRORING (kip1279.md B §8.1 step 4, Kafka prototype
/// `Partition.maybeCompleteReplicaConvergence`). Truncation removes whole batches, so
/// followers need only be *not ahead* of the leader, not caught up:
///
/// 1. with `mirror.support.unclean.leader.election` (`wait_for_all_replicas`), wait while
///    the ISR lacks a replica (`replica_count > isr_len`);
/// 2. wait while the ISR is below `min_isr`;
/// 3. with no followers, done;
/// 4. otherwise done iff no relevant follower (every follower with the flag, ISR members
///    without it) has a log end offset above `leader_leo`.
#[must_use]
pub fn isr_converged(
    leader_leo: Offset,
    followers: &[FollowerLeo],
    wait_for_all_replicas: bool,
    replica_count: usize,
    isr_len: usize,
    min_isr: usize,
) -> bool {
    if wait_for_all_replicas && replica_count > isr_len {
        return false;
    }
    if isr_len < min_isr {
        return false;
    }
    followers
        .iter()
        .filter(|(_, _, in_isr)| wait_for_all_replicas || *in_isr)
        .all(|(_, leo, _)| *leo <= leader_leo)
}

#[cfg(test)]
#[path = "alignment_test.rs"]
mod tests;
