//! STOPPING (failover, kip1279.md A.1, B §8.5): the design's stop plan step by step (remove
//! fetchers, epoch bump, LSO truncation or ABORT markers, the failback marker, the PID reset)
//! until STOPPED.

use crate::broker::broker::{Broker, Pending};
use crate::broker::output::{Event, TruncationCause};
use crate::log::producer_state::AppendOrigin;
use crate::mirror::{MirrorPartitionState as S, StopStep, lso_truncation_target, stop_plan};
use crate::protocol::Request;
use crate::record::{BatchBuilder, ControlRecord};
use crate::types::{LeaderEpoch, Offset, TopicPartition};

use super::manager::{
    MirrorStep, StopWait, greatest_epoch_with_records, last_mirrored_position, own_pid_reset,
    state_was_lost,
};

impl Broker {
    // ------------------------------------------------------------------ STOPPING

    /// Runs the stop plan from the current step until a step has to wait.
    pub(in crate::broker) fn stop_continue(&mut self, tp: &TopicPartition) {
        let plan = stop_plan(&self.mirror_design());
        loop {
            let Some(r) = self.mirror_runs.get(tp) else {
                return;
            };
            let MirrorStep::Stop { index, wait } = r.step.clone() else {
                return;
            };
            let Some(step) = plan.get(index).copied() else {
                return;
            };
            let done = self.stop_step(tp, step, &wait);
            if !done {
                return;
            }
            if step == StopStep::MarkStopped {
                return;
            }
            if let Some(r) = self.mirror_runs.get_mut(tp) {
                r.step = MirrorStep::Stop {
                    index: index + 1,
                    wait: StopWait::Start,
                };
            }
        }
    }

    /// One stop step; true when it completed now.
    fn stop_step(&mut self, tp: &TopicPartition, step: StopStep, wait: &StopWait) -> bool {
        let index = match self.mirror_runs.get(tp).map(|r| &r.step) {
            Some(MirrorStep::Stop { index, .. }) => *index,
            _ => return false,
        };
        match step {
            StopStep::RemoveFetchers => {
                self.remove_from_mirror_fetcher(tp);
                true
            }
            StopStep::BumpLeaderEpoch => {
                let Some(p) = self.partitions.get(tp) else {
                    return false;
                };
                // MinLeaderEpoch = the latest epoch in the log (of a batch: the trailing entry
                // `makeLeader` adds for the bumped epoch holds no record); done once the
                // partition's leader epoch is above it (A.2).
                let min = LeaderEpoch(greatest_epoch_with_records(&p.log));
                if p.leader_epoch > min {
                    return true;
                }
                if !matches!(wait, StopWait::Bump(_)) {
                    self.send_bump(tp, min);
                    if let Some(r) = self.mirror_runs.get_mut(tp) {
                        r.step = MirrorStep::Stop {
                            index,
                            wait: StopWait::Bump(min),
                        };
                    }
                }
                false
            }
            StopStep::TruncateToLso => {
                if self.stop_already_reset(tp).is_some() {
                    return true;
                }
                let cut = self
                    .partitions
                    .get(tp)
                    .map(|p| (lso_truncation_target(&p.log), p.log.log_end_offset()))
                    .filter(|(lso, leo)| lso < leo);
                // Nothing above the LSO: nothing to cut. Kafka's `truncateTo(t >= LEO)` would
                // still trim the epoch cache from the end, and on this leader that removes the
                // `(epoch, LEO)` entry `makeLeader` gave its own epoch (Kafka never truncates a
                // leader; only this step does). A stop that then appends nothing (its PID reset
                // already at the log end) leaves a leader whose cache ends below its epoch: a
                // follower that holds a later epoch gets OFFSET_OUT_OF_RANGE for ever, its
                // divergence never found (mirror chaos seed 60172).
                if let Some((lso, _)) = cut {
                    self.truncate_replica(tp, lso, TruncationCause::Mirror);
                    self.reassign_own_epoch(tp);
                }
                true
            }
            StopStep::WaitForIsr => {
                // Re-checked on every follower fetch, and periodically: a dead follower never
                // fetches, and only leaving the ISR lets the stop go on.
                let done = self.followers_converged(tp);
                if !done {
                    self.mirror_retry_later();
                }
                done
            }
            StopStep::WriteAbortMarkers => {
                if self.stop_already_reset(tp).is_some() {
                    return true;
                }
                let done = self.write_abort_markers(tp);
                if !done {
                    self.mirror_retry_later();
                }
                done
            }
            StopStep::RecordLastMirror => {
                if matches!(wait, StopWait::Recording) {
                    return false;
                }
                // A stop that runs because the partition's state was lost (a `__mirror_state`
                // record gone with a declared loss while the topic was already STOPPED and
                // writable) cannot tell mirrored records from the partition's own writes: the
                // log's greatest epoch may be one the source never had, which the LME must not
                // claim ("the greatest leader epoch ... the destination cluster recognizes from
                // the source cluster", B §4.2). It records nothing: the coordinator keeps what
                // it still has, or answers -1 and a failback copies everything (A.1, "LME
                // -1 ... truncate everything"), which is always safe. Mirror chaos seed 3212:
                // a stop on an empty log (epoch 0 kept), local writes in epoch 0, the state
                // lost, the re-run stop recorded LME 0 and the failback kept the old source's
                // own epoch 0 under the new primary's.
                let lost = self
                    .mirror_runs
                    .get(tp)
                    .is_some_and(|r| state_was_lost(r.status.as_ref()));
                if lost {
                    return true;
                }
                // The LME is the greatest epoch that has records (a trailing entry of the
                // bumped destination epoch at the LEO holds none). A re-driven stop may find
                // its own MIRROR_PID_RESET (destination epoch) already at the log end: the LME
                // and offset are those of the mirrored log before it.
                let Some((lme, leo)) = self.mirrored_position(tp) else {
                    return false;
                };
                if let Some(r) = self.mirror_runs.get_mut(tp) {
                    r.step = MirrorStep::Stop {
                        index,
                        wait: StopWait::Recording,
                    };
                }
                self.emit(Event::MirrorLastMirroredEpoch {
                    tp: tp.clone(),
                    last_mirrored_epoch: LeaderEpoch(lme),
                    log_end_offset: leo,
                });
                self.mirror_write(tp, None, Some((lme, leo.0)));
                false
            }
            StopStep::AppendPidReset => {
                if let StopWait::Replicated(required) = wait {
                    return self
                        .partitions
                        .get(tp)
                        .is_some_and(|p| p.log.high_watermark() >= *required);
                }
                let required = match self.stop_already_reset(tp) {
                    Some(next) => next,
                    None => {
                        let source = self
                            .mirror_source_cluster(tp)
                            .map_or_else(String::new, |c| c.0.to_string());
                        // This run waits for its reset from before the append on: the append
                        // can move the HW and re-enter the plan, which must not write again.
                        let set_wait = |b: &mut Self, wait: StopWait| {
                            if let Some(r) = b.mirror_runs.get_mut(tp) {
                                r.step = MirrorStep::Stop { index, wait };
                            }
                        };
                        let end = self.partitions.get(tp).map(|p| p.log.log_end_offset());
                        set_wait(self, StopWait::Replicated(end.unwrap_or_default().plus(1)));
                        let batch = BatchBuilder::new()
                            .build_mirror_pid_reset(&source, self.now.as_millis());
                        // acks -1 in the prototype: Kafka's min-ISR check applies.
                        match self.append_leader_acks_all(tp, &batch, AppendOrigin::Coordinator) {
                            Ok(info) => info.last_offset.plus(1),
                            Err(_) => {
                                set_wait(self, StopWait::Start);
                                self.mirror_retry_later();
                                return false;
                            }
                        }
                    }
                };
                if let Some(r) = self.mirror_runs.get_mut(tp) {
                    r.step = MirrorStep::Stop {
                        index,
                        wait: StopWait::Replicated(required),
                    };
                }
                self.partitions
                    .get(tp)
                    .is_some_and(|p| p.log.high_watermark() >= required)
            }
            StopStep::MarkStopped => {
                self.mirror_write(tp, Some(S::Stopped), None);
                true
            }
        }
    }

    /// Where this stop's own `MIRROR_PID_RESET` ends, when the log holds it and the design
    /// makes a re-driven stop idempotent ([`crate::mirror::Design::stop_is_idempotent`]).
    ///
    /// The reset is the stop's last log action: the LSO cut or ABORT markers came before it,
    /// and client writes only after it (read-only is lifted at STOPPED). A stop that finds it
    /// is re-driven: by a new leader before STOPPED (the reset then ends the log), or after
    /// its STOPPED record went with a declared loss of the `__mirror_state` tail while the
    /// topic took the new primary's writes (fresh mirror chaos seed 905707). Running the cut
    /// and the reset again would cut the new primary's open transactions and expire its
    /// idempotent producers: a retry of a batch that is in the log is then appended again
    /// (Kafka's `checkSequence` takes any sequence from a producer it has no entry for).
    /// A.1 asks every re-driven action to be idempotent; the reset is the mark that makes
    /// these two so ([`own_pid_reset`]: a reset mirrored from the other cluster names
    /// another source, and then this stop has not run).
    fn stop_already_reset(&self, tp: &TopicPartition) -> Option<Offset> {
        if !self.mirror_design().stop_is_idempotent() {
            return None;
        }
        let p = self.partitions.get(tp)?;
        let source = self.mirror_source_cluster(tp).map(|c| c.0.to_string());
        own_pid_reset(&p.log, source.as_deref()).map(crate::record::RecordBatch::next_offset)
    }

    /// `(LME, end offset)` of `tp`'s mirrored log as this stop records it
    /// ([`last_mirrored_position`] with this mirror's source cluster).
    pub(in crate::broker) fn mirrored_position(
        &self,
        tp: &TopicPartition,
    ) -> Option<(i32, Offset)> {
        let p = self.partitions.get(tp)?;
        let source = self.mirror_source_cluster(tp).map(|c| c.0.to_string());
        Some(last_mirrored_position(&p.log, source.as_deref()))
    }

    /// After this leader cut its own log: its epoch's start moves to the new LEO, as
    /// `makeLeader` would have put it (the cut trimmed the entry from the end). Only where
    /// `makeLeader` assigns the epoch (a stopping partition whose log holds no later epoch).
    fn reassign_own_epoch(&mut self, tp: &TopicPartition) {
        if !self.assign_epoch_start_on_leadership(tp) {
            return;
        }
        let Some(p) = self.partitions.get_mut(tp).filter(|p| p.is_leader()) else {
            return;
        };
        let epoch = p.leader_epoch;
        if p.log.latest_epoch().is_some_and(|e| e >= epoch) || epoch.0 < 0 {
            return;
        }
        let leo = p.log.log_end_offset();
        if p.log.maybe_assign_epoch_start_offset(epoch, leo) == Ok(true) {
            let mut io = Vec::new();
            p.files
                .write_epoch_checkpoint(p.log.epoch_cache().epoch_entries(), &mut io);
            self.io(io);
        }
    }

    /// Latest design: ABORT markers for every open transaction (prototype
    /// `abortOngoingTransactions`), one per producer. Each carries the producer's epoch and
    /// the coordinator epoch of its state entry (kip1279.md B §8.5: "take them from the PSM
    /// entry"): Kafka's WriteTxnMarkers check refuses a marker whose coordinator epoch is
    /// below the entry's, and a marker written with -1 to a producer whose transactions a
    /// coordinator had already ended was refused while the stop went on to STOPPED with the
    /// transaction still open. Returns false (the step is retried) if any append failed;
    /// the markers already written ended their transactions, so a retry writes only the rest.
    fn write_abort_markers(&mut self, tp: &TopicPartition) -> bool {
        let Some(p) = self.partitions.get(tp) else {
            return false;
        };
        let open: Vec<(crate::types::ProducerId, crate::types::ProducerEpoch, i32)> = p
            .log
            .producer_state()
            .ongoing_txns()
            .values()
            .filter_map(|t| {
                p.log
                    .producer_state()
                    .last_entry(t.producer_id)
                    .map(|e| (t.producer_id, e.producer_epoch, e.coordinator_epoch))
            })
            .collect();
        let mut ok = true;
        for (pid, epoch, coordinator_epoch) in open {
            let batch = BatchBuilder::transactional(pid, epoch, crate::types::Sequence::NONE)
                .build_control(
                    ControlRecord::abort(coordinator_epoch),
                    self.now.as_millis(),
                );
            // acks -1 in the prototype (`abortOngoingTransactions`): the min-ISR check applies.
            ok &= self
                .append_leader_acks_all(tp, &batch, AppendOrigin::Coordinator)
                .is_ok();
        }
        ok
    }

    pub(in crate::broker) fn on_bump_response(&mut self, tp: &TopicPartition) {
        self.on_fencing_bump_response(tp);
        // Completion is observed through metadata (epoch above the minimum); a failed request
        // is retried by the re-drive.
        if let Some(r) = self.mirror_runs.get_mut(tp)
            && let MirrorStep::Stop {
                index,
                wait: StopWait::Bump(_),
            } = r.step
        {
            r.step = MirrorStep::Stop {
                index,
                wait: StopWait::Start,
            };
        }
        self.mirror_retry_later();
    }

    /// Asks the controller for a leader epoch above `min` (BumpLeaderEpochs; the controller
    /// writes `max(current, min) + 1`): the stop's bump and EPOCH_FENCING's.
    pub(in crate::broker) fn send_bump(&mut self, tp: &TopicPartition, min: LeaderEpoch) {
        let req = Request::BumpLeaderEpochs {
            partitions: vec![(tp.clone(), min)],
        };
        let controller = self.controller();
        self.send_request(controller, req, Pending::BumpLeaderEpochs(tp.clone()), 0);
    }
}
