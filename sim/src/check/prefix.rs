//! LogMatching against the committed history (kafka-semantics §2.3 item 3): a replica's
//! batches below its HW must be the ghost's committed batches at the same offsets, with one
//! allowance for a replica still behind a declared loss.

use mirror_core::record::RecordBatch;
use mirror_core::types::Offset;

use super::ghost::GhostPartition;

/// Checks `batches` (a replica's log from the first offset not yet verified, in order) below
/// `upto` (its HW, capped at the true HW) against the committed history `g`. `Ok(o)`: verified
/// up to `o`; `Err(o)`: the first offending batch.
///
/// A declared loss (a failback truncation, a source divergence, an unclean election) cuts the
/// committed history on the leader, in the seed design's failback even within one leader epoch.
/// A follower that has not fetched since still holds the cut batches below the HW its leader
/// issued before the cut (`stale_hw`): a fetch response built before the cut may even deliver
/// that HW after it (mirror chaos seed 5543: a follower paused across the failback's LME
/// truncation resumed, applied the queued response and set HW 110 over the old source's records
/// 60..110, cut at 60). The loss revoked that promise, and Kafka repairs the replica at its next
/// fetch (DivergingEpoch, kafka-semantics §1.3) by a truncation below that HW, which item 7
/// allows for declared events. So for such a follower a suffix below the HW made only of batches
/// the ghost archived as cut (`was_cut`: byte-identical to committed batches a declared loss
/// dropped) is not a violation yet; it is re-checked from its first offset on every HW change.
/// Once any other batch lies below the HW after it, or the HW was issued after the loss (the
/// follower fetched from the post-loss leader and kept the cut history: its LastFetchedEpoch
/// named the other lineage's epoch, known finding 185), the first cut batch is reported. A
/// batch that differs from the committed one and was never committed is reported at once.
pub fn committed_prefix_check<'a>(
    batches: impl Iterator<Item = &'a RecordBatch>,
    g: &GhostPartition,
    upto: Offset,
    stale_hw: bool,
) -> Result<Offset, Offset> {
    let mut stale_from: Option<Offset> = None;
    for b in batches.take_while(|b| b.last_offset() < upto) {
        let differs = g.committed.get(&b.base_offset()).is_some_and(|c| c != b);
        match stale_from {
            Some(s) if !g.was_cut(b) => return Err(s),
            Some(_) => {}
            None if differs && stale_hw && g.was_cut(b) => stale_from = Some(b.base_offset()),
            None if differs => return Err(b.base_offset()),
            None => {}
        }
    }
    Ok(stale_from.unwrap_or(upto))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mirror_core::record::{BatchBuilder, SimpleRecord};
    use mirror_core::types::LeaderEpoch;

    fn batch(base: i64, n: usize, epoch: i32, tag: &str) -> RecordBatch {
        let recs: Vec<SimpleRecord> = (0..n)
            .map(|i| SimpleRecord::value(i as i64, format!("{tag}-{i}")))
            .collect();
        BatchBuilder::new()
            .base_offset(Offset(base))
            .leader_epoch(LeaderEpoch(epoch))
            .build(&recs)
    }

    /// Seed 5543's shape: 0..60 committed and kept, 60..110 committed then cut at 60 by the
    /// failback truncation, 60..70 and 70..80 the new (post-loss) committed history.
    fn ghost() -> (GhostPartition, Vec<RecordBatch>) {
        let mut g = GhostPartition::default();
        let kept = batch(0, 60, 0, "kept");
        let old = vec![batch(60, 25, 0, "old-a"), batch(85, 25, 0, "old-b")];
        for b in std::iter::once(&kept).chain(&old) {
            g.committed.insert(b.base_offset(), b.clone());
        }
        g.true_hw = Offset(110);
        g.cut_from(Offset(60));
        for b in [batch(60, 10, 1, "new-a"), batch(70, 10, 1, "new-b")] {
            g.committed.insert(b.base_offset(), b);
        }
        g.true_hw = Offset(80);
        let mut log = vec![kept];
        log.extend(old);
        (g, log)
    }

    #[test]
    fn a_replica_behind_a_declared_loss_may_hold_the_cut_history_below_its_stale_hw() {
        // Goal: under a pre-loss HW the cut suffix alone is tolerated and re-checked from its
        // start; under a post-loss HW, or with post-loss data on top, it is a violation at its
        // first offset.
        let (g, behind) = ghost();
        assert_eq!(
            committed_prefix_check(behind.iter(), &g, Offset(110), true),
            Ok(Offset(60))
        );
        // The same log under an HW issued after the loss (seed 5792: the follower fetched from
        // the post-loss leader and kept the cut history): reported.
        assert_eq!(
            committed_prefix_check(behind.iter(), &g, Offset(110), false),
            Err(Offset(60))
        );
        let mut mixed = behind[..2].to_vec();
        mixed.push(batch(85, 10, 1, "new-on-top"));
        assert_eq!(
            committed_prefix_check(mixed.iter(), &g, Offset(95), true),
            Err(Offset(60))
        );
        // The repaired replica (truncated to 60, then fetched the new history) passes.
        let repaired = [
            behind[0].clone(),
            batch(60, 10, 1, "new-a"),
            batch(70, 10, 1, "new-b"),
        ];
        assert_eq!(
            committed_prefix_check(repaired.iter(), &g, Offset(80), false),
            Ok(Offset(80))
        );
    }

    #[test]
    fn a_batch_that_was_never_committed_is_reported_at_once() {
        let (g, behind) = ghost();
        let bogus = [behind[0].clone(), batch(60, 10, 1, "bogus")];
        assert_eq!(
            committed_prefix_check(bogus.iter(), &g, Offset(80), true),
            Err(Offset(60))
        );
        // Above `upto` nothing is judged.
        assert_eq!(
            committed_prefix_check(bogus.iter(), &g, Offset(60), true),
            Ok(Offset(60))
        );
    }
}
