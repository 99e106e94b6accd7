//! What clients saw (Jepsen-style history checks): consumers read committed data at the
//! right offsets and in order, and no acknowledged write is lost.

use mirror_core::keyed_map::KeyedMap;

use bytes::Bytes;
use mirror_core::protocol::ClusterIdx;
use mirror_core::record::RecordBatch;
use mirror_core::types::{Offset, TopicPartition};

use super::Violation;
use super::ghost::Ghost;
use super::log_invariants::{NodeMap, leader_of, with_partition};
use mirror_core::protocol::NodeId;

/// Per-consumer reading state.
#[derive(Clone, Debug, Default)]
pub struct History {
    /// Per consumer and partition: the offset it returned last, and the partition's count of
    /// declared losses then.
    last: KeyedMap<(ClusterIdx, u32, TopicPartition), (Offset, u32)>,
    /// Records consumed.
    pub consumed: u64,
}

impl History {
    /// A consumer returned `(offset, value)`: it must not repeat the offset it returned last
    /// (a consumer only re-reads after a seek or restart, which start from an earlier committed
    /// position), it must not skip a record it should have returned (`consumer_gap`), and
    /// below the true HW the value must be the committed one (ConsistentRead).
    ///
    /// A loss declared on the partition since it returned that offset is such a seek: the
    /// records under the consumer's position are gone, so its position check (KIP-320
    /// `OffsetsForLeaderEpoch` with no end offset for its epoch, or OFFSET_OUT_OF_RANGE)
    /// resets it by `auto.offset.reset`, and it reads the rewritten history again from there
    /// (mirror fresh seed 707006084: bit rot cut the source's only copy of t1-0 to 0, the
    /// failback mirror copied the same two records back, and the consumer, reset to earliest,
    /// returned offset 1 a second time).
    ///
    /// `log_start` gives the highest log start offset of the partition on any replica of
    /// the cluster: records below it may legitimately be skipped (DeleteRecords, retention,
    /// then an OFFSET_OUT_OF_RANGE reset to earliest). It is asked only when the consumer
    /// skipped offsets, so the common contiguous read costs no replica scan.
    #[allow(clippy::too_many_arguments)]
    pub fn on_consumed(
        &mut self,
        cluster: ClusterIdx,
        client: u32,
        tp: &TopicPartition,
        offset: Offset,
        value: &Bytes,
        read_committed: bool,
        log_start: impl FnOnce() -> Offset,
        ghost: &Ghost,
        node: &str,
    ) -> Result<(), Violation> {
        self.consumed += 1;
        let key = (cluster, client, tp.clone());
        let g = ghost.partitions.get(&(cluster, tp.clone()));
        let losses = g.map_or(0, |g| g.declared_losses);
        let last = self.last.insert(key, (offset, losses));
        if last == Some((offset, losses)) {
            return Err(Violation::new(
                "consumer_order",
                node,
                Some(tp),
                Some(offset),
                "the consumer returned the same offset twice in a row",
            ));
        }
        if let Some((last, _)) = last
            && let Some(skipped) =
                skipped_record(ghost, cluster, tp, last, offset, read_committed, log_start)
        {
            return Err(Violation::new(
                "consumer_gap",
                node,
                Some(tp),
                Some(skipped),
                format!(
                    "the consumer went from offset {} to {} past committed record {} it should have returned",
                    last.0, offset.0, skipped.0
                ),
            ));
        }
        if let Some(g) = g
            && offset < g.true_hw
            && let Some(b) = g.committed_batch(offset)
            && let Some(committed) = b.value_at(offset)
            && committed != Some(value.as_ref())
            // Read from a stale leader, on the branch a declared unclean election cut (its
            // records were committed, or exposed under its HW, before the ghost learned of the
            // election): kafka-semantics §2.3 item 8 asks the record to be on a *non-stale*
            // leader, and a declared loss is what removed it from there (single-cluster chaos
            // seed 1678: a consumer with stale metadata kept fetching from the zombie leader
            // of epoch 1 after epoch 3 was elected uncleanly).
            && !g.cut_holds(offset, Some(value))
        {
            return Err(Violation::new(
                "consistent_read",
                node,
                Some(tp),
                Some(offset),
                format!(
                    "read {value:?} but the committed record is {:?}",
                    committed.map(Bytes::copy_from_slice)
                ),
            ));
        }
        Ok(())
    }
}

/// The first offset strictly between `last` and `next` that a consumer must have returned:
/// a committed (below the true HW) data record at or above `log_start`, not transactional
/// when reading committed (its outcome decides; aborted data is skipped by design). Partitions
/// with a declared loss are not judged: their committed history was rewritten.
fn skipped_record(
    ghost: &Ghost,
    cluster: ClusterIdx,
    tp: &TopicPartition,
    last: Offset,
    next: Offset,
    read_committed: bool,
    log_start: impl FnOnce() -> Offset,
) -> Option<Offset> {
    if next <= last.plus(1) {
        return None;
    }
    let g = ghost.partitions.get(&(cluster, tp.clone()))?;
    if g.declared_losses > 0 {
        return None;
    }
    let from = last.plus(1).max(log_start());
    let to = next.min(g.true_hw);
    if from >= to {
        return None;
    }
    let first_batch = g.committed_batch(from).map(RecordBatch::base_offset);
    let start = first_batch.unwrap_or(from);
    for (_, b) in g.committed.range(start..to) {
        if b.is_control_batch() || (read_committed && b.is_transactional()) {
            continue;
        }
        let hit = b
            .records()
            .into_iter()
            .map(|r| b.base_offset().plus(i64::from(r.offset_delta)))
            .find(|o| *o >= from && *o < to);
        if hit.is_some() {
            return hit;
        }
    }
    None
}

/// End-of-run validation: every acks=all write, on a partition with no declared data loss,
/// is in the log of the current leader at its offset (unless retention removed it).
///
/// A write on a branch a declared unclean election cut ([`super::ghost::GhostPartition::cut_holds`]) is
/// that election's loss, not a lost acknowledged write: a stale leader whose ISR had shrunk
/// to itself keeps acknowledging acks=all writes (min ISR met) after the controller elected
/// another replica uncleanly, and they are gone once that replica leads (Kafka's documented
/// price of `unclean.leader.election.enable`; kafka-semantics §2.2, §2.3 item 5: the true HW
/// goes back only at a declared unclean event). Without an unclean election a stale leader
/// cannot acknowledge such a write: its maximal ISR still holds the replica the controller
/// elects, which no longer fetches from it (single-cluster chaos seeds 4800, 5033, 5417,
/// 6074, 6085; mirror chaos seed 2166).
pub fn check_no_lost_acked_writes(
    ghost: &Ghost,
    nodes: &NodeMap,
    name: &dyn Fn(NodeId) -> String,
) -> Result<(), Violation> {
    for w in ghost.acked.iter().filter(|w| w.acks == -1) {
        let g = ghost.partitions.get(&(w.cluster, w.tp.clone()));
        let Some(leader) = leader_of(nodes, w.cluster, &w.tp) else {
            continue; // offline partition at the end: nothing to read
        };
        // One look at the leader's replica per write; the batch holding its records is
        // found once and its values read in place.
        let found = with_partition(nodes, leader, &w.tp, |p| {
            let mut batch: Option<&RecordBatch> = None;
            for (i, v) in w.values.iter().enumerate() {
                let offset = w.base_offset.plus(i as i64);
                if offset < p.log.log_start_offset() {
                    continue;
                }
                if batch.is_none_or(|b| offset < b.base_offset() || offset > b.last_offset()) {
                    batch = p.log.batch_containing(offset);
                }
                match batch.and_then(|b| b.value_at(offset)) {
                    Some(Some(got)) if got == v.as_ref() => {}
                    _ if g.is_some_and(|g| g.cut_holds(offset, Some(v))) => {}
                    other => {
                        let other = other.map(|o| o.map(Bytes::copy_from_slice));
                        return Err((
                            offset,
                            format!(
                                "acknowledged {v:?} (event #{}) but the leader has {other:?}",
                                w.event_seq
                            ),
                        ));
                    }
                }
            }
            Ok(())
        });
        if let Some(Err((offset, detail))) = found {
            return Err(Violation::new(
                "no_lost_acked_write",
                name(leader),
                Some(&w.tp),
                Some(offset),
                detail,
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use mirror_core::record::{BatchBuilder, ControlRecord, SimpleRecord};
    use mirror_core::types::{ProducerEpoch, ProducerId, Sequence};

    fn rec(v: &str) -> SimpleRecord {
        SimpleRecord {
            timestamp: 0,
            key: None,
            value: Some(Bytes::from(v.to_owned())),
            headers: Vec::new(),
        }
    }

    /// Offsets 0-2 plain data, 3-4 transactional data, 5 its COMMIT marker, 6-7 plain data;
    /// true HW 8.
    fn ghost() -> (Ghost, TopicPartition) {
        let tp = TopicPartition::new("t", 0);
        let mut ghost = Ghost::default();
        let g = ghost.partition(ClusterIdx(0), &tp);
        let txn = BatchBuilder::transactional(ProducerId(7), ProducerEpoch(0), Sequence(0));
        let batches = [
            BatchBuilder::new()
                .base_offset(Offset(0))
                .build(&[rec("a"), rec("b"), rec("c")]),
            txn.clone()
                .base_offset(Offset(3))
                .build(&[rec("d"), rec("e")]),
            txn.base_offset(Offset(5))
                .build_control(ControlRecord::commit(0), 0),
            BatchBuilder::new()
                .base_offset(Offset(6))
                .build(&[rec("f"), rec("g")]),
        ];
        for b in batches {
            g.committed.insert(b.base_offset(), b);
        }
        g.true_hw = Offset(8);
        (ghost, tp)
    }

    fn consume(
        h: &mut History,
        ghost: &Ghost,
        tp: &TopicPartition,
        offsets: &[i64],
        read_committed: bool,
        log_start: i64,
    ) -> Result<(), Violation> {
        let values = ["a", "b", "c", "d", "e", "", "f", "g"];
        for o in offsets {
            let value = Bytes::from(values[usize::try_from(*o).unwrap()].to_owned());
            h.on_consumed(
                ClusterIdx(0),
                1,
                tp,
                Offset(*o),
                &value,
                read_committed,
                || Offset(log_start),
                ghost,
                "c1",
            )?;
        }
        Ok(())
    }

    #[test]
    fn contiguous_reads_pass() {
        let (ghost, tp) = ghost();
        let mut h = History::default();
        consume(&mut h, &ghost, &tp, &[0, 1, 2, 3, 4, 6, 7], false, 0).unwrap();
        assert_eq!(h.consumed, 7);
    }

    #[test]
    fn skipping_a_plain_record_is_a_gap() {
        let (ghost, tp) = ghost();
        let v = consume(&mut History::default(), &ghost, &tp, &[0, 2], false, 0).unwrap_err();
        assert_eq!(v.invariant, "consumer_gap");
        assert_eq!(v.offset, Some(1));
    }

    #[test]
    fn read_committed_may_skip_transactional_data_and_markers() {
        let (ghost, tp) = ghost();
        consume(
            &mut History::default(),
            &ghost,
            &tp,
            &[0, 1, 2, 6, 7],
            true,
            0,
        )
        .unwrap();
    }

    #[test]
    fn read_uncommitted_must_return_transactional_data() {
        let (ghost, tp) = ghost();
        let v = consume(&mut History::default(), &ghost, &tp, &[2, 6], false, 0).unwrap_err();
        assert_eq!((v.invariant.as_str(), v.offset), ("consumer_gap", Some(3)));
    }

    #[test]
    fn records_below_the_log_start_may_be_skipped() {
        let (ghost, tp) = ghost();
        consume(&mut History::default(), &ghost, &tp, &[0, 6, 7], false, 6).unwrap();
        let v = consume(&mut History::default(), &ghost, &tp, &[0, 7], false, 6).unwrap_err();
        assert_eq!(v.offset, Some(6));
    }

    #[test]
    fn declared_loss_suspends_the_gap_check() {
        let (mut ghost, tp) = ghost();
        ghost.partition(ClusterIdx(0), &tp).declared_losses = 1;
        consume(&mut History::default(), &ghost, &tp, &[0, 7], false, 0).unwrap();
    }

    /// Consumes one `value` at `offset` (a fresh consumer).
    fn read_one(
        ghost: &Ghost,
        tp: &TopicPartition,
        offset: i64,
        value: &str,
    ) -> Result<(), Violation> {
        History::default().on_consumed(
            ClusterIdx(0),
            1,
            tp,
            Offset(offset),
            &Bytes::from(value.to_owned()),
            false,
            || Offset(0),
            ghost,
            "c1",
        )
    }

    #[test]
    fn a_read_of_a_branch_a_declared_unclean_election_cut_is_consistent() {
        // Committed 6..7 = f, g. A stale leader of a superseded epoch exposed x, y at 6..7
        // under its HW (archived by the ghost, as `on_hw` does after an unclean election).
        let (mut ghost, tp) = ghost();
        let stale = BatchBuilder::new()
            .base_offset(Offset(6))
            .build(&[rec("x"), rec("y")]);
        ghost.partition(ClusterIdx(0), &tp).archive(stale);
        // Reading the stale branch (from that leader) is that election's declared loss.
        read_one(&ghost, &tp, 7, "y").unwrap();
        // A value nobody committed or exposed there is still an inconsistent read.
        let v = read_one(&ghost, &tp, 7, "z").unwrap_err();
        assert_eq!(
            (v.invariant.as_str(), v.offset),
            ("consistent_read", Some(7))
        );
        // Nothing archived at all: the committed value is owed.
        let (ghost, tp) = self::ghost();
        let v = read_one(&ghost, &tp, 7, "y").unwrap_err();
        assert_eq!(v.invariant, "consistent_read");
    }

    #[test]
    fn cut_holds_matches_the_value_at_the_offset_inside_archived_batches() {
        let (mut ghost, tp) = ghost();
        let g = ghost.partition(ClusterIdx(0), &tp);
        g.archive(BatchBuilder::new().base_offset(Offset(10)).build(&[
            rec("p"),
            rec("q"),
            rec("r"),
        ]));
        let b = |v: &str| Bytes::from(v.to_owned());
        assert!(g.cut_holds(Offset(11), Some(&b("q"))));
        assert!(
            !g.cut_holds(Offset(11), Some(&b("p"))),
            "the value at that offset"
        );
        assert!(!g.cut_holds(Offset(13), Some(&b("r"))), "past the batch");
        assert!(!g.cut_holds(Offset(9), Some(&b("p"))), "before the batch");
    }

    #[test]
    fn repeating_the_last_offset_is_an_order_violation() {
        let (ghost, tp) = ghost();
        let v = consume(&mut History::default(), &ghost, &tp, &[0, 1, 1], false, 0).unwrap_err();
        assert_eq!(v.invariant, "consumer_order");
    }

    #[test]
    fn repeating_the_last_offset_after_a_declared_loss_is_a_reset() {
        // Goal: a loss declared between two reads of one offset rewrote the history under the
        // consumer, whose position check then resets it (`auto.offset.reset`): the repeat is
        // that reset, not a consumer bug. Without a new loss the repeat is still a violation.
        let (mut ghost, tp) = ghost();
        let mut h = History::default();
        consume(&mut h, &ghost, &tp, &[0, 1], false, 0).unwrap();
        ghost.partition(ClusterIdx(0), &tp).declared_losses += 1;
        consume(&mut h, &ghost, &tp, &[1], false, 0).unwrap();
        let v = consume(&mut h, &ghost, &tp, &[1], false, 0).unwrap_err();
        assert_eq!(v.invariant, "consumer_order", "no loss since the last read");
    }
}
