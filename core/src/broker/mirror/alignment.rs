//! PREPARING (LOG_ALIGNMENT in the late prototype, kip1279.md A.1, B §8.1): the failback
//! marker lookup on the other cluster, the truncation by it, and the replica-convergence
//! wait; also latest's ULE_RECOVERY (B §8.3), the same wait over every replica after a
//! source unclean election.

use crate::broker::broker::{Broker, Pending};
use crate::broker::output::{Event, TruncationCause};
use crate::mirror::{
    FailbackMarker, LastMirrorEpochsValue, LmeLookup, LookupVerdict, MirrorPartitionState as S,
    TruncationPoint, isr_converged, truncation_point,
};
use crate::protocol::metadata::DesiredMirrorState;
use crate::protocol::{NodeId, Request, Response};
use crate::types::{BrokerId, Offset, TopicPartition};

use super::manager::{MirrorStep, StopWait};

impl Broker {
    // ------------------------------------------------------------------ PREPARING

    /// Asks every source broker for the LME (each answers from the `__mirror_state` it
    /// hosts; the answer is the max), prototype `describeClusterMirrors` lookup.
    pub(in crate::broker) fn prepare_lookup(&mut self, tp: &TopicPartition) {
        let Some(r) = self.mirror_runs.get(tp) else {
            return;
        };
        let Some((source, brokers)) = self.mirror_source(&r.mirror) else {
            self.mirror_retry_later();
            return;
        };
        let topic_id = r.topic_id;
        let me = self.config.cluster.0.to_string();
        let r = self.mirror_runs.get_mut(tp).expect("run");
        r.step = MirrorStep::LookupLme(LmeLookup::new(
            &tp.topic,
            tp.partition,
            brokers.iter().copied(),
        ));
        for b in brokers {
            let req = Request::DescribeMirrors {
                mirror_names: None,
                cluster_id: Some(me.clone()),
                last_mirror_epoch_lookups: vec![(topic_id, vec![tp.partition])],
            };
            self.send_request(
                NodeId::broker(source, b),
                req,
                Pending::MirrorLookup {
                    tp: tp.clone(),
                    broker: b,
                },
                0,
            );
        }
    }

    pub(in crate::broker) fn on_mirror_lookup(
        &mut self,
        tp: &TopicPartition,
        broker: BrokerId,
        resp: Option<Response>,
    ) {
        let Some(r) = self.mirror_runs.get_mut(tp) else {
            return;
        };
        let MirrorStep::LookupLme(lookup) = &mut r.step else {
            return;
        };
        match resp {
            Some(Response::DescribeMirrors { mirrors }) => lookup.on_answer(broker, &mirrors),
            // Unreachable broker: left out of this round (see `LmeLookup`).
            _ => lookup.on_unreachable(broker),
        }
        match lookup.verdict() {
            LookupVerdict::Waiting => {}
            LookupVerdict::Loop(m) => {
                r.step = MirrorStep::Idle;
                self.mirror_fail_retryable(tp, &format!("Detected mirror loop for mirror: {m}"));
            }
            LookupVerdict::Retry(_) => {
                r.step = MirrorStep::Idle;
                self.mirror_retry_later();
            }
            LookupVerdict::Truncate(best) => self.prepare_truncate(tp, best),
        }
    }

    /// Truncates at the start of the first epoch above the LME (or per the design's marker).
    fn prepare_truncate(&mut self, tp: &TopicPartition, (lme, lmo): (i32, i64)) {
        let design = self.mirror_design();
        let marker = design.failback_marker().marker(LastMirrorEpochsValue {
            last_mirror_epoch: lme,
            last_mirror_offset: lmo,
        });
        let Some(p) = self.partitions.get(tp) else {
            return;
        };
        let mut point = truncation_point(p.log.epoch_cache(), p.log.log_end_offset(), marker);
        // Design lab ablation `no-lme-truncation`: keep the tail above the LME.
        if !design.prepare_truncates_above_lme() && matches!(point, TruncationPoint::At(_)) {
            point = TruncationPoint::Nothing;
        }
        // A position with no epoch is "replicate from scratch" even when its offset is known:
        // a stop of an empty log records (-1, 0). Without the full truncation the epoch cache
        // keeps the `(epoch, 0)` entry `makeLeader` gave the writable topic, the first fetch
        // sends that epoch, which the other cluster never had, and OFFSET_OUT_OF_RANGE comes
        // back for ever (latest, compare seed 11).
        let lme_known = !matches!(
            marker,
            FailbackMarker::Lme(None)
                | FailbackMarker::Lmo(None)
                | FailbackMarker::Position { epoch: None, .. }
        );
        match point {
            TruncationPoint::Fully => {
                if p.log.log_end_offset() > Offset(0) || !lme_known {
                    self.truncate_replica_fully(tp, Offset(0), TruncationCause::Mirror);
                }
            }
            TruncationPoint::At(o) => self.truncate_replica(tp, o, TruncationCause::Mirror),
            TruncationPoint::Nothing => {
                // The first epoch above the LME may start at the LEO with no record in it: the
                // `(epoch, LEO)` entry this replica added when it last became leader of a
                // writable topic (kafka-semantics §1.1 "become leader"). Truncating "at the
                // start offset of the first epoch beyond the LME" (A.1) is then
                // `truncateTo(LEO)`, which keeps every record but still trims the cache from
                // the end (Kafka `UnifiedLog.truncateTo`, target >= LEO; kafka-semantics §2.4
                // (b)). Without it the mirror fetch sends that local-only epoch as
                // `LastFetchedEpoch`; the source has no such epoch, answers
                // OFFSET_OUT_OF_RANGE, and the tail the source never had (epoch <= LME) is
                // never cut by divergence: failback never converges (mirror chaos seed 12).
                let above_lme = match marker {
                    FailbackMarker::Lme(Some(e))
                    | FailbackMarker::Position { epoch: Some(e), .. } => {
                        p.log.epoch_cache().first_entry_above(e).is_some()
                    }
                    _ => false,
                };
                if above_lme && design.prepare_truncates_above_lme() {
                    let leo = p.log.log_end_offset();
                    self.truncate_replica(tp, leo, TruncationCause::Mirror);
                }
            }
        }
        self.emit(Event::MirrorAligned {
            tp: tp.clone(),
            last_mirrored_epoch: lme,
            log_end_offset: self.partitions[tp].log.log_end_offset(),
        });
        if let Some(r) = self.mirror_runs.get_mut(tp) {
            r.step = MirrorStep::AwaitIsr;
        }
        self.prepare_await_isr(tp);
    }

    /// True when no ISR follower is ahead of the leader (prototype
    /// `maybeCompleteReplicaConvergence`).
    pub(in crate::broker) fn followers_converged(&self, tp: &TopicPartition) -> bool {
        self.followers_converged_with(tp, false)
    }

    /// [`Self::followers_converged`], over every replica when `all_replicas` (or the topic's
    /// `mirror.support.unclean.leader.election` flag) says so.
    pub(in crate::broker) fn followers_converged_with(
        &self,
        tp: &TopicPartition,
        all_replicas: bool,
    ) -> bool {
        let Some(p) = self.partitions.get(tp) else {
            return false;
        };
        let Some(l) = p.leader_state() else {
            return false;
        };
        let isr = l.isr.maximal_isr();
        // A follower whose LEO is unknown (-1: it has not fetched since this leader epoch
        // began, e.g. right after the stop's epoch bump or a leader change) may still hold
        // the tail the leader just truncated: count it as ahead until it fetches.
        let followers: Vec<(BrokerId, Offset, bool)> = l
            .followers
            .iter()
            .map(|(b, st)| {
                let leo = if st.log_end_offset.0 < 0 {
                    Offset(i64::MAX)
                } else {
                    st.log_end_offset
                };
                (*b, leo, isr.contains(b))
            })
            .collect();
        // `mirror.support.unclean.leader.election=true`: every replica, not only the ISR,
        // must have converged (B §8.1 step 4).
        let wait_all = all_replicas || self.mirror_supports_unclean_election(&tp.topic);
        isr_converged(
            p.log.log_end_offset(),
            &followers,
            wait_all,
            p.replicas.len(),
            isr.len(),
            if self.mirror_design().prepare_waits_for_min_isr() {
                self.min_isr(tp)
            } else {
                0
            },
        )
    }

    /// The topic's `mirror.support.unclean.leader.election` (a destination-only config, never
    /// synced): convergence waits for every replica, and latest recovers from a divergence.
    pub(in crate::broker) fn mirror_supports_unclean_election(&self, topic: &str) -> bool {
        self.image
            .topic_config(topic, "mirror.support.unclean.leader.election")
            == Some("true")
    }

    pub(in crate::broker) fn prepare_await_isr(&mut self, tp: &TopicPartition) {
        let wait = self.mirror_design().prepare_waits_for_isr();
        if wait && !self.followers_converged(tp) {
            // Re-checked on every follower fetch, and periodically (an ISR shrink).
            self.mirror_retry_later();
            return;
        }
        self.mirror_back_to_mirroring(tp);
    }

    /// A follower fetched: runs waiting on ISR convergence may proceed.
    pub(in crate::broker) fn mirror_on_follower_progress(&mut self, tp: &TopicPartition) {
        let waiting = self.mirror_runs.get(tp).is_some_and(|r| {
            matches!(r.step, MirrorStep::AwaitIsr | MirrorStep::AwaitAllReplicas)
                || matches!(
                    r.step,
                    MirrorStep::Stop {
                        wait: StopWait::Start,
                        ..
                    }
                )
                || matches!(
                    r.step,
                    MirrorStep::Stop {
                        wait: StopWait::Replicated(_),
                        ..
                    }
                )
        });
        if waiting {
            self.mirror_drive(tp);
        }
    }

    // ------------------------------------------------------------------ ULE_RECOVERY

    /// ULE_RECOVERY entry action and re-drive (B §7.3 `awaitReplicaConvergence(true)`): the
    /// fetchers are already removed; MIRRORING once every replica (not only the ISR) is not
    /// ahead of the leader.
    pub(in crate::broker) fn ule_recovery_continue(&mut self, tp: &TopicPartition) {
        if self.mirror_wait_overtaken(tp) {
            return;
        }
        if let Some(r) = self.mirror_runs.get_mut(tp) {
            r.step = MirrorStep::AwaitAllReplicas;
        }
        // `awaitReplicaConvergence(waitForAllReplicas = true)`: every replica, ISR or not.
        if !self.followers_converged_with(tp, true) {
            self.mirror_retry_later();
            return;
        }
        self.mirror_back_to_mirroring(tp);
    }

    /// The end of a wait (PREPARING's convergence, ULE_RECOVERY, EPOCH_FENCING): persist
    /// MIRRORING, whose entry action starts the fetcher.
    pub(in crate::broker) fn mirror_back_to_mirroring(&mut self, tp: &TopicPartition) {
        if let Some(r) = self.mirror_runs.get_mut(tp) {
            r.step = MirrorStep::Idle;
        }
        self.mirror_write(tp, Some(S::Mirroring), None);
    }

    /// A latest-only wait (ULE_RECOVERY, EPOCH_FENCING) gives way once the desired state is
    /// no longer MIRRORING: a stop or pause overtakes it (STOPPING is valid from both) and
    /// the next state is decided again. True when it did (or the run is gone).
    pub(in crate::broker) fn mirror_wait_overtaken(&mut self, tp: &TopicPartition) -> bool {
        let Some(r) = self.mirror_runs.get(tp) else {
            return true;
        };
        if r.desired == DesiredMirrorState::Mirroring {
            return false;
        }
        self.mirror_drive_from_state(tp, false);
        true
    }
}
