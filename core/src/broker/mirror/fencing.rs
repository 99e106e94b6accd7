//! EPOCH_FENCING (kip1279.md A.3 `latest`, B §8.4): keep the destination leader epoch
//! above every mirrored source epoch, reactively (a fetched batch above the local epoch is
//! refused and the partition bumps) and proactively (a batch within the threshold is
//! appended and a bump asked for). The seed and early designs never enter it.

use crate::broker::broker::Broker;
use crate::broker::output::Event;
use crate::mirror::{EpochCheck, MirrorPartitionState as S};
use crate::record::RecordBatch;
use crate::types::{LeaderEpoch, TopicPartition};

use super::manager::{MirrorStep, greatest_epoch_with_records};

impl Broker {
    // ------------------------------------------------------------------ EPOCH_FENCING

    /// The fetcher's epoch check on a fetched batch set (B §8.4): `false` when the batches
    /// must not be appended (reactive: a batch epoch above the local leader epoch, the
    /// prototype's `MirrorLeaderEpochExceededException`; the partition moves to
    /// EPOCH_FENCING). A batch within the threshold of the local epoch is appended and an
    /// asynchronous bump is asked for (proactive).
    pub(in crate::broker) fn mirror_epoch_check(
        &mut self,
        tp: &TopicPartition,
        batches: &[RecordBatch],
    ) -> bool {
        let Some(fencing) = self.mirror_design().epoch_fencing() else {
            return true;
        };
        let Some(highest_batch_epoch) = batches
            .iter()
            .map(RecordBatch::partition_leader_epoch)
            .max()
        else {
            return true;
        };
        let Some(local) = self.partitions.get(tp).map(|p| p.leader_epoch) else {
            return false;
        };
        match fencing.check(highest_batch_epoch, local) {
            EpochCheck::Append => true,
            EpochCheck::AppendAndBump => {
                let pending = self
                    .mirror_runs
                    .get(tp)
                    .is_some_and(|r| r.proactive_bump_pending);
                if !pending && let Some(min) = self.fencing_min_epoch(tp, highest_batch_epoch) {
                    self.request_fencing_bump(tp, highest_batch_epoch, local, min, true);
                    if let Some(r) = self.mirror_runs.get_mut(tp) {
                        r.proactive_bump_pending = true;
                    }
                }
                true
            }
            EpochCheck::Fence => {
                self.remove_from_mirror_fetcher(tp);
                self.mirror_write(tp, Some(S::EpochFencing), None);
                false
            }
        }
    }

    /// `MinLeaderEpoch` of a fencing bump: the source leader epoch (as last learned from the
    /// source metadata, never below a batch just fetched or an epoch in the log) plus the
    /// increment. `None` on overflow (Kafka's `Math.addExact`).
    fn fencing_min_epoch(&self, tp: &TopicPartition, seen: LeaderEpoch) -> Option<LeaderEpoch> {
        let fencing = self.mirror_design().epoch_fencing()?;
        let source = self
            .mirror_fetch
            .source_leaders
            .get(tp)
            .map_or(LeaderEpoch(-1), |&(_, _, e)| e);
        let logged = self
            .partitions
            .get(tp)
            .map_or(-1, |p| greatest_epoch_with_records(&p.log));
        fencing.min_leader_epoch(source.max(seen).max(LeaderEpoch(logged)))
    }

    /// Traces and sends a fencing bump (`batch_epoch` -1: the EPOCH_FENCING re-drive).
    fn request_fencing_bump(
        &mut self,
        tp: &TopicPartition,
        batch_epoch: LeaderEpoch,
        local_epoch: LeaderEpoch,
        min_leader_epoch: LeaderEpoch,
        proactive: bool,
    ) {
        self.emit(Event::MirrorEpochBumpRequested {
            tp: tp.clone(),
            batch_epoch,
            local_epoch,
            min_leader_epoch,
            proactive,
        });
        self.send_bump(tp, min_leader_epoch);
    }

    /// EPOCH_FENCING entry action and re-drive (B §7.3 `handleEpochFencing`): ask for a bump
    /// to `source epoch + 10` and go back to MIRRORING once the metadata shows a leader epoch
    /// above it. The bump changes the leader epoch, so the next leadership of this broker
    /// re-reads EPOCH_FENCING and finds the condition met.
    pub(in crate::broker) fn epoch_fencing_continue(&mut self, tp: &TopicPartition) {
        if self.mirror_wait_overtaken(tp) {
            return;
        }
        let sent = self
            .mirror_runs
            .get(tp)
            .is_some_and(|r| matches!(r.step, MirrorStep::Fencing { sent: true }));
        let Some(local) = self.partitions.get(tp).map(|p| p.leader_epoch) else {
            return;
        };
        let Some(min) = self.fencing_min_epoch(tp, LeaderEpoch(-1)) else {
            self.mirror_fail(tp, "The leader epoch bump overflowed.");
            return;
        };
        if local > min {
            self.mirror_back_to_mirroring(tp);
            return;
        }
        if !sent {
            self.request_fencing_bump(tp, LeaderEpoch(-1), local, min, false);
        }
        if let Some(r) = self.mirror_runs.get_mut(tp) {
            r.step = MirrorStep::Fencing { sent: true };
        }
    }

    /// A BumpLeaderEpochs answer for a fencing run or a proactive bump: completion shows in
    /// the metadata; a failed request is asked again by the re-drive.
    pub(in crate::broker) fn on_fencing_bump_response(&mut self, tp: &TopicPartition) {
        if let Some(r) = self.mirror_runs.get_mut(tp) {
            r.proactive_bump_pending = false;
            if matches!(r.step, MirrorStep::Fencing { .. }) {
                r.step = MirrorStep::Fencing { sent: false };
            }
        }
    }
}
