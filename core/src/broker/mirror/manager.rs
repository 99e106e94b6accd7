//! The mirror metadata manager (KIP-1279 A.1; prototype `MirrorMetadataManager`): for every
//! mirror partition this broker leads it reads the persisted state from `__mirror_state`,
//! decides the next state from the desired state (the topic config `mirror.name`), persists
//! each transition before its side effects, and dispatches the entry actions: PREPARING and
//! ULE_RECOVERY (`alignment`), MIRRORING (the mirror fetcher), PAUSING, STOPPING
//! (`stopping`), EPOCH_FENCING (`fencing`) and FAILED retries (`retry`). A new leader
//! re-drives the current state.

use std::collections::BTreeMap;

use super::coordinator::{BOOTSTRAP_SERVERS_CONFIG, SOURCE_CLUSTER_INDEX_CONFIG};
use crate::broker::broker::{Broker, Pending};
use crate::broker::output::Event;
use crate::broker::timers::TimerId;
use crate::mirror::{
    LmeLookup, LookupVerdict, MirrorPartitionState as S, MirrorPartitionStatus, StopStep,
    is_valid_transition, previous_state_after, stop_plan,
};
use crate::protocol::messages::{
    MirrorPartitionStateWrite, ReadMirrorStatesTopic, WriteMirrorStatesTopic,
};
use crate::protocol::metadata::{
    ConfigResourceRef, DesiredMirrorState, MIRROR_NAME_CONFIG, MIRROR_STATE_TOPIC,
    MIRROR_STATE_TOPIC_PARTITIONS, MirrorMembership,
};
use crate::protocol::{ClusterIdx, ErrorCode, NodeId, Request, Response};
use crate::record::ControlRecord;
use crate::types::{BrokerId, LeaderEpoch, Offset, TopicId, TopicPartition};

/// Where a mirror partition's driver is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MirrorStep {
    /// Reading the persisted state.
    Reading,
    /// Persisting a transition to this state.
    Writing(S),
    /// In a stable state (MIRRORING with a fetcher, PAUSED, STOPPED, FAILED).
    Idle,
    /// PREPARING: asking the other cluster's brokers for the LME.
    LookupLme(LmeLookup),
    /// PREPARING: waiting until no ISR follower is ahead.
    AwaitIsr,
    /// ULE_RECOVERY (latest): waiting until no replica at all is ahead.
    AwaitAllReplicas,
    /// EPOCH_FENCING (latest): waiting for the metadata to show a leader epoch above the
    /// bump's `MinLeaderEpoch` (recomputed on every re-drive); `sent` while a
    /// BumpLeaderEpochs request is out.
    Fencing {
        /// A request is in flight.
        sent: bool,
    },
    /// FAILED (latest): the retry to the previous state is due at this time.
    RetryAt(crate::time::Instant),
    /// STOPPING: at step `index` of the stop plan, waiting for `wait`.
    Stop {
        /// Index in the plan.
        index: usize,
        /// What the step waits for.
        wait: StopWait,
    },
}

/// What a STOPPING step waits for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StopWait {
    /// Nothing yet: run the step.
    Start,
    /// Metadata to show a leader epoch above this.
    Bump(LeaderEpoch),
    /// The LME write to be acknowledged.
    Recording,
    /// The HW to pass this offset (PID reset replicated).
    Replicated(Offset),
}

/// One mirror partition led by this broker.
#[derive(Clone, Debug)]
pub struct MirrorRun {
    /// Mirror name.
    pub mirror: String,
    /// Topic id (part of the `__mirror_state` key).
    pub topic_id: TopicId,
    /// Desired state from `mirror.name`.
    pub desired: DesiredMirrorState,
    /// Persisted status (after the read).
    pub status: Option<MirrorPartitionStatus>,
    /// The driver's position.
    pub step: MirrorStep,
    /// Leader epoch this run belongs to.
    pub leader_epoch: LeaderEpoch,
    /// A proactive EPOCH_FENCING bump is in flight (latest): one at a time.
    pub proactive_bump_pending: bool,
    /// The coordinator's answer while it is older than the STOPPED this run saw committed
    /// (see [`Event::MirrorStateRegressed`]): writes repair the record from it, while the
    /// partition keeps behaving as `status` says.
    pub behind: Option<MirrorPartitionStatus>,
    /// The last transition this run sent to the coordinator, as sent.
    pub last_write: Option<TransitionWrite>,
    /// Latest ([`crate::mirror::Design::rewrites_unanswered_transition`]): a transition whose
    /// write got no answer or a fenced epoch, written again after the re-read unless the state
    /// read back cannot enter it or the desired state changed meanwhile (the prototype's
    /// `refreshAndPersistState`; a desired-state change writes a newer transition, which
    /// `pendingStateTransitions` lets replace it).
    pub rewrite: Option<TransitionWrite>,
}

/// A transition write, kept to send it again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransitionWrite {
    /// The state written.
    pub target: S,
    /// The failback marker written with it.
    pub last_mirror: Option<(i32, i64)>,
    /// A FAILED reason and retry counter written with it.
    pub failure: Option<(String, i16)>,
}

/// A transition this broker wrote to `__mirror_state` without seeing it succeed (the response
/// was lost, timed out or said NOT_LEADER after the record was appended), kept across its
/// runs of the partition so a later leadership of the same broker that reads the record
/// reports it: only the writer can tell that nobody reported it. Reporting only: the driver
/// never reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnconfirmedTransition {
    /// State before the write.
    pub from: S,
    /// Its state epoch.
    pub from_epoch: i32,
    /// The state written.
    pub to: S,
    /// The writer's leader epoch (one leader per epoch: identifies the record as ours).
    pub writer: LeaderEpoch,
}

impl MirrorRun {
    /// The persisted state (UNKNOWN before the read).
    #[must_use]
    pub fn state(&self) -> S {
        self.status.as_ref().map_or(S::Unknown, |s| s.state)
    }

    /// The record the coordinator holds, which the next write must name: the older answer
    /// being repaired, else the status.
    #[must_use]
    pub fn write_base(&self) -> Option<&MirrorPartitionStatus> {
        self.behind.as_ref().or(self.status.as_ref())
    }
}

impl Broker {
    /// Mirror partitions this broker leads (for checkers and traces).
    #[must_use]
    pub fn mirror_runs(&self) -> &BTreeMap<TopicPartition, MirrorRun> {
        &self.mirror_runs
    }

    /// The source cluster a mirror partition fetches from (for checkers): the mirror named by
    /// this broker's run for `tp`, else by the topic's `mirror.name`, resolved through the
    /// mirror's configs. `None` for a topic that is not mirrored here.
    #[must_use]
    pub fn mirror_source_cluster(&self, tp: &TopicPartition) -> Option<ClusterIdx> {
        match self.mirror_runs.get(tp) {
            Some(r) => self.mirror_source_index(&r.mirror),
            None => self.mirror_source_index(&self.mirror_membership(&tp.topic)?.mirror_name),
        }
    }

    /// The mirror membership of a topic, from its `mirror.name` config.
    pub(in crate::broker) fn mirror_membership(&self, topic: &str) -> Option<MirrorMembership> {
        self.image
            .topic_config(topic, MIRROR_NAME_CONFIG)
            .and_then(MirrorMembership::parse)
    }

    /// True while client writes must be refused (the partition is a mirror partition that is
    /// not STOPPED; A.2: read-only is lifted at STOPPED, not when the stop is requested).
    pub(in crate::broker) fn is_read_only(&self, tp: &TopicPartition) -> bool {
        if !self.config.mirror_design.read_only_enforced()
            || self.mirror_membership(&tp.topic).is_none()
        {
            return false;
        }
        self.mirror_runs
            .get(tp)
            .is_none_or(|r| r.state() != S::Stopped)
    }

    /// The answer to a write on `tp` while it is read-only (KIP-1279), or `None` when it is
    /// writable: READ_ONLY_TOPIC, except for a partition the operator stopped whose state
    /// this leader has not read back yet (it just took over or restarted). That one may be
    /// STOPPED already, so the writer is asked to retry (NOT_LEADER_OR_FOLLOWER, retriable)
    /// rather than to give up.
    pub(in crate::broker) fn read_only_error(&self, tp: &TopicPartition) -> Option<ErrorCode> {
        if !self.is_read_only(tp) {
            return None;
        }
        Some(if self.mirror_stop_pending_read(tp) {
            ErrorCode::NotLeaderOrFollower
        } else {
            ErrorCode::ReadOnlyTopic
        })
    }

    /// True when the operator asked for a stop of `tp` and this leader has not read the
    /// partition's persisted state yet (it does not know whether it is STOPPED).
    pub(in crate::broker) fn mirror_stop_pending_read(&self, tp: &TopicPartition) -> bool {
        self.mirror_membership(&tp.topic)
            .is_some_and(|m| m.desired == DesiredMirrorState::Stopped)
            && self.mirror_runs.get(tp).is_none_or(|r| r.status.is_none())
    }

    /// Whether `make_leader` records the new epoch in the log's epoch cache: not for a mirror
    /// partition while it mirrors (its cache holds source epochs only), yes once the desired
    /// state is STOPPED (prototype `Partition.makeLeader`).
    pub(in crate::broker) fn assign_epoch_start_on_leadership(&self, tp: &TopicPartition) -> bool {
        match self.mirror_membership(&tp.topic) {
            None => true,
            Some(m) => m.desired == DesiredMirrorState::Stopped,
        }
    }

    /// Leadership or metadata of `tp` changed: start, re-drive or drop its mirror run.
    pub(in crate::broker) fn mirror_on_partition(&mut self, tp: &TopicPartition) {
        let Some(m) = self.mirror_membership(&tp.topic) else {
            self.drop_mirror_run(tp);
            return;
        };
        let Some((epoch, topic_id)) = self
            .partitions
            .get(tp)
            .filter(|p| p.is_leader())
            .map(|p| (p.leader_epoch, p.topic_id))
        else {
            self.drop_mirror_run(tp);
            return;
        };
        match self.mirror_runs.get_mut(tp) {
            Some(r) if r.leader_epoch == epoch => {
                let changed = r.desired != m.desired || r.mirror != m.mirror_name;
                r.desired = m.desired;
                r.mirror = m.mirror_name;
                if changed {
                    // The new desired state decides the next transition after the re-read.
                    r.rewrite = None;
                    self.mirror_drive(tp);
                }
                // A bump during STOPPING changes the epoch: handled below as a new run only
                // when the epoch differs.
            }
            _ => {
                let carried = self.mirror_runs.remove(tp);
                self.remove_from_mirror_fetcher(tp);
                let run = MirrorRun {
                    mirror: m.mirror_name,
                    topic_id,
                    desired: m.desired,
                    status: carried.as_ref().and_then(|r| r.status.clone()),
                    step: MirrorStep::Reading,
                    leader_epoch: epoch,
                    proactive_bump_pending: false,
                    behind: None,
                    last_write: None,
                    rewrite: None,
                };
                self.mirror_runs.insert(tp.clone(), run);
                self.send_mirror_read(tp);
            }
        }
    }

    /// The leader epoch of every `__mirror_state` partition in the metadata image.
    pub(in crate::broker) fn mirror_state_leader_epochs(&self) -> Vec<Option<LeaderEpoch>> {
        (0..MIRROR_STATE_TOPIC_PARTITIONS)
            .map(|sp| {
                self.image
                    .partition(&TopicPartition::new(MIRROR_STATE_TOPIC, sp))
                    .map(|r| r.leader_epoch)
            })
            .collect()
    }

    /// `__mirror_state` partitions whose leader epoch differs from `before` have a new
    /// coordinator, which loaded the state from its own log. After an unclean election (or a
    /// crash of unflushed data, both declared losses) that log may lack the tail this broker
    /// saw committed: a STOPPED record gone, STOPPING read instead. A run in a settled state
    /// (STOPPED, PAUSED, FAILED) writes nothing more on its own, so it would never notice,
    /// and the coordinator would answer the old state for ever (mirror chaos seed 7771: the
    /// failback's LME lookup saw STOPPING, and PREPARING never ended). Such runs re-read;
    /// `on_mirror_read` restores what they had confirmed. Runs that still write learn of an
    /// older state from the state-epoch fencing of their next write.
    pub(in crate::broker) fn mirror_on_coordinators_moved(
        &mut self,
        before: &[Option<LeaderEpoch>],
    ) {
        let moved: Vec<i32> = (0..MIRROR_STATE_TOPIC_PARTITIONS)
            .zip(self.mirror_state_leader_epochs().into_iter().zip(before))
            .filter(|(_, (after, before))| after.is_some() && after != *before)
            .map(|(sp, _)| sp)
            .collect();
        if moved.is_empty() {
            return;
        }
        let settled: Vec<TopicPartition> = self
            .mirror_runs
            .iter()
            .filter(|(tp, r)| {
                r.step == MirrorStep::Idle
                    && matches!(r.state(), S::Stopped | S::Paused | S::Failed)
                    && moved.contains(&crate::mirror::mirror_state_partition(
                        &r.mirror,
                        r.topic_id,
                        tp.partition,
                        MIRROR_STATE_TOPIC_PARTITIONS,
                    ))
            })
            .map(|(tp, _)| tp.clone())
            .collect();
        for tp in settled {
            if let Some(r) = self.mirror_runs.get_mut(&tp) {
                r.step = MirrorStep::Reading;
            }
            self.send_mirror_read(&tp);
        }
    }

    fn drop_mirror_run(&mut self, tp: &TopicPartition) {
        if self.mirror_runs.remove(tp).is_some() {
            self.remove_from_mirror_fetcher(tp);
        }
    }

    /// The broker hosting the `__mirror_state` partition of a key.
    fn mirror_state_coordinator(
        &self,
        mirror: &str,
        topic_id: TopicId,
        partition: i32,
    ) -> Option<NodeId> {
        let sp = crate::mirror::mirror_state_partition(
            mirror,
            topic_id,
            partition,
            MIRROR_STATE_TOPIC_PARTITIONS,
        );
        let leader = self
            .image
            .partition(&TopicPartition::new(MIRROR_STATE_TOPIC, sp))?
            .leader?;
        Some(self.broker_node(leader))
    }

    fn send_mirror_read(&mut self, tp: &TopicPartition) {
        let Some(r) = self.mirror_runs.get(tp) else {
            return;
        };
        let Some(to) = self.mirror_state_coordinator(&r.mirror, r.topic_id, tp.partition) else {
            self.mirror_retry_later();
            return;
        };
        let req = Request::ReadMirrorStates {
            mirror_name: r.mirror.clone(),
            topics: vec![ReadMirrorStatesTopic {
                name: tp.topic.to_string(),
                topic_id: r.topic_id,
                partitions: vec![tp.partition],
            }],
        };
        let run = r.leader_epoch;
        self.send_request(to, req, Pending::MirrorRead(tp.clone(), run), 0);
    }

    pub(in crate::broker) fn mirror_retry_later(&mut self) {
        let at = self.now.plus_millis(500);
        self.timers.set_if_earlier(TimerId::MirrorRetry, at);
    }

    /// The answer to a read sent by the run of leader epoch `run`; a later run (this broker
    /// led again, or a bump gave it a new epoch) sent its own and ignores it.
    pub(in crate::broker) fn on_mirror_read(
        &mut self,
        tp: &TopicPartition,
        run: LeaderEpoch,
        resp: Option<Response>,
    ) {
        let data = match resp {
            Some(Response::ReadMirrorStates { error, topics }) if error.is_ok() => topics
                .into_iter()
                .flat_map(|t| t.partitions)
                .find(|p| p.partition == tp.partition && p.error.is_ok()),
            _ => None,
        };
        let Some(r) = self.mirror_runs.get_mut(tp) else {
            return;
        };
        if r.step != MirrorStep::Reading || r.leader_epoch != run {
            return;
        }
        let Some(d) = data else {
            self.mirror_retry_later();
            return;
        };
        let before = r.status.as_ref().map(|s| (s.state, s.state_epoch));
        let answer = MirrorPartitionStatus {
            state: S::from_value(d.state).unwrap_or(S::Unknown),
            previous_state: S::from_value(d.previous_state).unwrap_or(S::Unknown),
            state_epoch: d.state_epoch,
            leader_epoch: d.leader_epoch.unwrap_or(LeaderEpoch::UNDEFINED),
            error_message: d.error_message,
            retry_attempt: d.retry_attempt,
        };
        r.step = MirrorStep::Idle;
        if let Some((S::Stopped, confirmed)) = before
            && answer.state_epoch < confirmed
            && answer.state != S::Unknown
            && r.desired == DesiredMirrorState::Stopped
        {
            self.mirror_repair_stopped(tp, answer, confirmed);
            return;
        }
        r.behind = None;
        r.status = Some(answer);
        // Our own write may have been persisted while its response was lost: the re-read is
        // then the first time this leader learns of the transition, so report it as one. Only
        // a record written at our leader epoch is ours (one leader per epoch), only from a
        // state this leader knew, and only forward (a newer state epoch).
        let leader_epoch = r.leader_epoch;
        let status = r
            .status
            .as_ref()
            .map(|s| (s.state, s.state_epoch, s.leader_epoch));
        let previous = r.status.as_ref().map(|s| s.previous_state);
        // A FAILED record read back carries its reason.
        let reason = r
            .status
            .as_ref()
            .filter(|s| s.state == S::Failed)
            .and_then(|s| s.error_message.clone());
        let read = status
            .filter(|s| s.2 == leader_epoch)
            .map(|(state, state_epoch, _)| (state, state_epoch));
        // The same, across leaderships of this broker: a transition it wrote in an earlier
        // leader epoch whose response it never saw (the coordinator could not commit it, the
        // write timed out, or this broker lost leadership first) and that the coordinator
        // persisted after all. Its writer never reported it, so this read does, once (mirror
        // chaos seed 154: STOPPING written at epoch 0 surfaced when the broker led again at
        // epoch 3, whose stop plan then ran unseen by the checkers).
        let lost = self.mirror_unconfirmed.get(tp).and_then(|us| {
            us.iter().copied().find(|u| {
                status.is_some_and(|(state, state_epoch, writer)| {
                    writer == u.writer && state == u.to && state_epoch > u.from_epoch
                })
            })
        });
        // A lost first write (UNKNOWN -> PREPARING) is reported too: its PREPARING starts a
        // mirroring cycle (a failback) that the checkers must see begin (mirror chaos seed
        // 7825: without it the old source's own tail looked exposed beyond the source).
        if let Some(u) = lost
            && let Some((to, state_epoch, writer)) = status
        {
            self.mirror_unconfirmed.remove(tp);
            self.emit(Event::MirrorStateChanged {
                tp: tp.clone(),
                from: u.from,
                to,
                state_epoch,
                leader_epoch: writer,
                reason,
            });
        } else if let (Some((from, from_epoch)), Some((to, state_epoch))) = (before, read)
            && from != S::Unknown
            && to != from
            && state_epoch > from_epoch
        {
            self.mirror_unconfirmed.remove(tp);
            self.emit(Event::MirrorStateChanged {
                tp: tp.clone(),
                from,
                to,
                state_epoch,
                leader_epoch,
                reason,
            });
        } else if let Some((from, state_epoch, writer)) =
            unreported_cycle_start(before, status, previous, leader_epoch)
        {
            // A PREPARING written at an earlier leader epoch, found by a leader that knew no
            // state: its writer may have crashed before the answer (its unconfirmed write
            // went with its memory), so nobody reported it (fresh mirror seed 155591179: the
            // old source's leader wrote UNKNOWN -> PREPARING, crashed, and led again at a
            // later epoch when the coordinator committed the record; the checkers never saw
            // the failback begin and took the old source's own tail for exposed source
            // data). Reported once here; a checker that saw the writer's own report takes
            // this as a repeat of the same record.
            self.emit(Event::MirrorStateChanged {
                tp: tp.clone(),
                from,
                to: S::Preparing,
                state_epoch,
                leader_epoch: writer,
                reason: None,
            });
        }
        if self.mirror_rewrite_after_read(tp) {
            return;
        }
        self.mirror_drive_from_state(tp, true);
    }

    /// Latest: writes again the transition whose write got no answer or a fenced epoch, now
    /// that the state was read back (the prototype's `refreshAndPersistState` then
    /// `persistState`, B §7.5): true when it did. A read that shows the transition persisted
    /// (its answer was lost) re-drives it like any read state; one from which the transition
    /// is not valid (another leader moved the state on) drops it.
    fn mirror_rewrite_after_read(&mut self, tp: &TopicPartition) -> bool {
        let design = self.mirror_design();
        let Some(r) = self.mirror_runs.get_mut(tp) else {
            return false;
        };
        let Some(w) = r.rewrite.take() else {
            return false;
        };
        let read = r.state();
        if read == w.target || !is_valid_transition(&design, read, w.target) {
            return false;
        }
        let failure = w.failure.as_ref().map(|(m, a)| (m.as_str(), *a));
        self.mirror_write_with(tp, Some(w.target), w.last_mirror, failure);
        true
    }

    /// This STOPPED run read back an older `answer` than the STOPPED it saw committed at
    /// state epoch `confirmed`. Either the coordinator lost its tail (a declared loss: an
    /// unclean election of `__mirror_state`, mirror chaos seeds 64 and 7771) or its new
    /// leader's HW has not reached the records (alone below min.insync.replicas, KIP-966: its
    /// reads answer the committed state, its writes are checked against the newer one; seed
    /// 704949). The stop plan ran to its end on this log (the bump, LSO cut and PID reset are
    /// in it) and the partition has taken client writes since: taking the older state as its
    /// own made the failover's topic read-only again (seed 704949: READ_ONLY_TOPIC to its
    /// producers and its transaction markers), and re-running the plan would cut and reset
    /// the failover's own producers. So the partition stays STOPPED and only the record is
    /// written forward from the answer: STOPPING (from an older PREPARING, MIRRORING or
    /// FAILED), then STOPPED with the failback marker computed as the stop did
    /// (`last_mirrored_position` skips the writes after this stop's PID reset). A coordinator
    /// that still holds the newer records fences the write, and the run reads again until
    /// its HW passes them.
    fn mirror_repair_stopped(
        &mut self,
        tp: &TopicPartition,
        answer: MirrorPartitionStatus,
        confirmed: i32,
    ) {
        let design = self.mirror_design();
        let writing = if answer.state == S::Stopping {
            S::Stopped
        } else {
            S::Stopping
        };
        let Some(r) = self.mirror_runs.get_mut(tp) else {
            return;
        };
        let (read, read_state_epoch) = (answer.state, answer.state_epoch);
        if !is_valid_transition(&design, read, writing) {
            // No write leads forward from it (seed: PAUSING/PAUSED -> STOPPING): wait for the
            // coordinator to catch up.
            r.behind = None;
            r.step = MirrorStep::Reading;
            self.mirror_retry_later();
            return;
        }
        let repeated = r
            .behind
            .as_ref()
            .is_some_and(|b| b.state == read && b.state_epoch == read_state_epoch);
        r.behind = Some(answer);
        if !repeated {
            self.emit(Event::MirrorStateRegressed {
                tp: tp.clone(),
                read,
                read_state_epoch,
                confirmed_state_epoch: confirmed,
                writing,
            });
        }
        self.mirror_write_repair(tp, writing);
    }

    /// One write of [`Self::mirror_repair_stopped`]; STOPPED carries the failback marker.
    fn mirror_write_repair(&mut self, tp: &TopicPartition, writing: S) {
        let marker = (writing == S::Stopped)
            .then(|| {
                stop_plan(&self.mirror_design())
                    .contains(&StopStep::RecordLastMirror)
                    .then(|| self.mirrored_position(tp))
                    .flatten()
                    .map(|(lme, end)| (lme, end.0))
            })
            .flatten();
        self.mirror_write(tp, Some(writing), marker);
    }

    /// Re-evaluates a run after an outside change (desired state, timer).
    pub(in crate::broker) fn mirror_drive(&mut self, tp: &TopicPartition) {
        let Some(r) = self.mirror_runs.get(tp) else {
            return;
        };
        match &r.step {
            MirrorStep::Reading | MirrorStep::Writing(_) => {}
            MirrorStep::Idle => self.mirror_drive_from_state(tp, false),
            MirrorStep::LookupLme(lookup) => {
                if r.desired == DesiredMirrorState::Stopped {
                    // A stop overtakes PREPARING even while the other cluster does not answer
                    // the LME lookup: failover during a source outage must work (A.1). Late
                    // lookup answers find the step changed and are dropped.
                    self.mirror_drive_from_state(tp, false);
                } else if lookup.verdict() != LookupVerdict::Waiting {
                    self.mirror_drive_from_state(tp, true);
                }
            }
            MirrorStep::AwaitIsr => self.prepare_await_isr(tp),
            MirrorStep::AwaitAllReplicas => self.ule_recovery_continue(tp),
            MirrorStep::Fencing { .. } => self.epoch_fencing_continue(tp),
            MirrorStep::RetryAt(_) => self.failed_retry_continue(tp),
            MirrorStep::Stop { .. } => self.stop_continue(tp),
        }
    }

    /// Decides the next state (prototype `applyStateTransition`) and either persists a
    /// transition or re-runs the current state's action (`redrive`: after a read).
    pub(in crate::broker) fn mirror_drive_from_state(
        &mut self,
        tp: &TopicPartition,
        redrive: bool,
    ) {
        let Some(r) = self.mirror_runs.get(tp) else {
            return;
        };
        let current = r.state();
        let target = match (current, r.desired) {
            // Latest re-asserts FAILED before it looks at the desired state (B §7.4 step 2):
            // only a retry (or RecoverMirrorTopics) leaves FAILED. A failure that stands for
            // a lost state (this model's UNKNOWN + desired STOPPED path) still stops.
            (S::Failed, DesiredMirrorState::Stopped)
                if !self.mirror_design().stop_overrides_failed()
                    && !state_was_lost(r.status.as_ref()) =>
            {
                S::Failed
            }
            (S::Failed, DesiredMirrorState::Stopped) => S::Stopping,
            // Stopped is desired but no state is recorded: the `__mirror_state` record was lost
            // (a single-replica coordinator partition that lost unflushed data) or the
            // partition was added after the stop and never mirrored. The seed table has no
            // UNKNOWN -> STOPPING, so the partition fails (any -> FAILED) and the stop then
            // runs its whole plan (FAILED -> STOPPING): epoch bump, LSO truncation, LME, PID
            // reset. Writable only after that, never by skipping it.
            (S::Unknown, DesiredMirrorState::Stopped) => S::Failed,
            (S::Failed, _) => S::Failed,
            // Seed allows STOPPING only from PREPARING/MIRRORING: a stop that overtook a
            // resume goes through MIRRORING first.
            (S::Paused, DesiredMirrorState::Stopped) => S::Mirroring,
            // Likewise a stop that overtook a pause: the coordinator skips a PAUSING ->
            // STOPPING write it does not allow (no error, no new state epoch), so asking for
            // it would loop forever (mirror chaos seeds 420, 848, 1453). The pause finishes
            // first (PAUSING -> PAUSED -> MIRRORING -> STOPPING).
            (S::Pausing, DesiredMirrorState::Stopped)
                if !is_valid_transition(&self.config.mirror_design, S::Pausing, S::Stopping) =>
            {
                S::Pausing
            }
            (S::Stopped, DesiredMirrorState::Stopped) => S::Stopped,
            (_, DesiredMirrorState::Stopped) => S::Stopping,
            (S::Stopping, _) => S::Stopping,
            (S::Mirroring, DesiredMirrorState::Paused) => S::Pausing,
            (S::Pausing, _) => S::Pausing,
            (S::Paused, DesiredMirrorState::Paused) => S::Paused,
            (S::Paused, DesiredMirrorState::Mirroring) => S::Mirroring,
            (S::Unknown | S::Stopped, _) => S::Preparing,
            (s, _) => s,
        };
        if target == current {
            if redrive {
                self.mirror_enter(tp, target);
            }
            return;
        }
        if current == S::Unknown && target == S::Failed {
            self.mirror_fail(tp, LOST_STATE_REASON);
            return;
        }
        if current == S::Failed && target == S::Stopping && state_was_lost(r.status.as_ref()) {
            // The stop after a lost state carries the reason on, so that its leader (or the
            // next one, after a re-read) knows it cannot tell mirrored records from the
            // partition's own writes (see `StopStep::RecordLastMirror`).
            self.mirror_write_with(tp, Some(target), None, Some((LOST_STATE_REASON, 0)));
            return;
        }
        self.mirror_write(tp, Some(target), None);
    }

    /// Persists a transition (and/or the failback marker) at the coordinator.
    pub(in crate::broker) fn mirror_write(
        &mut self,
        tp: &TopicPartition,
        target: Option<S>,
        last_mirror: Option<(i32, i64)>,
    ) {
        self.mirror_write_with(tp, target, last_mirror, None);
    }

    /// [`Self::mirror_write`] carrying an error message and retry counter (a FAILED reason is
    /// `(reason, -1)`: non-retryable).
    pub(in crate::broker) fn mirror_write_with(
        &mut self,
        tp: &TopicPartition,
        target: Option<S>,
        last_mirror: Option<(i32, i64)>,
        failure: Option<(&str, i16)>,
    ) {
        let Some(r) = self.mirror_runs.get_mut(tp) else {
            return;
        };
        let Some(to) = ({
            let (m, id) = (r.mirror.clone(), r.topic_id);
            self.mirror_state_coordinator(&m, id, tp.partition)
        }) else {
            // No coordinator (its `__mirror_state` partition has no leader): nothing was sent,
            // so no answer will reset a stop waiting for its failback-marker write; the retry
            // must run the step again (mirror chaos seeds 300432, 300949: STOPPING for ever).
            if let Some(r) = self.mirror_runs.get_mut(tp)
                && let MirrorStep::Stop {
                    index,
                    wait: StopWait::Recording,
                } = r.step
            {
                r.step = MirrorStep::Stop {
                    index,
                    wait: StopWait::Start,
                };
            }
            self.mirror_retry_later();
            return;
        };
        let r = self.mirror_runs.get_mut(tp).expect("checked");
        let state_epoch = r.write_base().map_or(0, |s| s.state_epoch);
        let base_state = r.write_base().map_or(S::Unknown, |s| s.state);
        if let Some(t) = target {
            r.step = MirrorStep::Writing(t);
            r.last_write = Some(TransitionWrite {
                target: t,
                last_mirror,
                failure: failure.map(|(m, a)| (m.to_string(), a)),
            });
            let u = UnconfirmedTransition {
                from: base_state,
                from_epoch: state_epoch,
                to: t,
                writer: r.leader_epoch,
            };
            // Earlier unconfirmed writes stay: any of them may be the one persisted.
            let us = self.mirror_unconfirmed.entry(tp.clone()).or_default();
            us.retain(|o| *o != u);
            us.push(u);
        }
        let w = MirrorPartitionStateWrite {
            partition: tp.partition,
            state: target.unwrap_or(S::Unknown).value(),
            leader_epoch: Some(r.leader_epoch),
            state_epoch: target.map(|_| state_epoch),
            last_mirror_epoch: last_mirror.map(|(e, _)| LeaderEpoch(e)),
            last_mirror_offset: last_mirror.map(|(_, o)| Offset(o)),
            error_message: failure.map(|(m, _)| m.to_string()),
            retry_attempt: failure.map_or(0, |(_, r)| r),
            previous_state: base_state.value(),
        };
        let req = Request::WriteMirrorStates {
            mirror_name: r.mirror.clone(),
            topics: vec![WriteMirrorStatesTopic {
                name: tp.topic.to_string(),
                topic_id: r.topic_id,
                partitions: vec![w],
            }],
        };
        let reason = failure.map(|(m, _)| m.to_string());
        let run = r.leader_epoch;
        self.send_request(
            to,
            req,
            Pending::MirrorWrite(tp.clone(), run, target, reason),
            0,
        );
    }

    /// The answer to a write sent by the run of leader epoch `run`. A later run ignores it
    /// (mirror fresh seed 804710: a STOPPING write of dst-2's epoch-0 run, answered 27 s late
    /// when dst-2 led again at epoch 2, was taken as the new run's own: UNKNOWN -> STOPPING).
    /// The write may have been persisted all the same: `mirror_unconfirmed` keeps it, and the
    /// new run's read reports it.
    pub(in crate::broker) fn on_mirror_write(
        &mut self,
        tp: &TopicPartition,
        run: LeaderEpoch,
        target: Option<S>,
        reason: Option<String>,
        resp: Option<Response>,
    ) {
        // COORDINATOR_NOT_AVAILABLE: the coordinator gave up waiting for its HW
        // (`mirror.coordinator.write.timeout.ms`) or could not append. Either way the writer
        // cannot tell whether the record will take effect, as with no answer at all.
        let outcome_unknown = resp.is_none()
            || matches!(
                resp,
                Some(Response::WriteMirrorStates {
                    error: ErrorCode::CoordinatorNotAvailable,
                    ..
                })
            );
        let rewrites = self.mirror_design().rewrites_unanswered_transition();
        let result = match resp {
            Some(Response::WriteMirrorStates { error, topics }) if error.is_ok() => topics
                .into_iter()
                .flat_map(|t| t.partitions)
                .find(|p| p.0 == tp.partition),
            _ => None,
        };
        let Some(r) = self.mirror_runs.get_mut(tp) else {
            return;
        };
        if r.leader_epoch != run {
            return;
        }
        match (target, result) {
            (Some(_), Some((_, ErrorCode::None, new_epoch)))
                if r.write_base().is_some_and(|s| s.state_epoch == new_epoch) =>
            {
                // The coordinator skipped an invalid transition (no record, same state epoch):
                // nothing was persisted, so no side effect may run. Re-read and retry later.
                r.step = MirrorStep::Reading;
                let writer = r.leader_epoch;
                if let (Some(t), Some(us)) = (target, self.mirror_unconfirmed.get_mut(tp)) {
                    us.retain(|u| !(u.writer == writer && u.to == t));
                }
                self.mirror_retry_later();
            }
            (Some(t), Some((_, ErrorCode::None, new_epoch))) if r.behind.is_some() => {
                // A repair write of a STOPPED run (`mirror_repair_stopped`): the coordinator's
                // record moved forward; the partition did not (it stays STOPPED, no entry
                // action runs). The record's transition is reported as the coordinator's
                // history now has it.
                let behind = r.behind.as_mut().expect("guarded");
                let from = behind.state;
                behind.previous_state = previous_state_after(behind, t);
                behind.state = t;
                behind.state_epoch = new_epoch;
                behind.leader_epoch = r.leader_epoch;
                let leader_epoch = r.leader_epoch;
                if t == S::Stopped {
                    r.status = r.behind.take();
                    r.step = MirrorStep::Idle;
                }
                self.mirror_unconfirmed.remove(tp);
                self.emit(Event::MirrorStateChanged {
                    tp: tp.clone(),
                    from,
                    to: t,
                    state_epoch: new_epoch,
                    leader_epoch,
                    reason: None,
                });
                if t == S::Stopping {
                    self.mirror_write_repair(tp, S::Stopped);
                }
            }
            (Some(t), Some((_, ErrorCode::None, new_epoch))) => {
                let from = r.state();
                let status = r.status.get_or_insert_with(MirrorPartitionStatus::unknown);
                status.previous_state = previous_state_after(status, t);
                status.state = t;
                status.state_epoch = new_epoch;
                status.leader_epoch = r.leader_epoch;
                r.step = MirrorStep::Idle;
                let (state_epoch, leader_epoch) = (new_epoch, r.leader_epoch);
                self.mirror_unconfirmed.remove(tp);
                self.emit(Event::MirrorStateChanged {
                    tp: tp.clone(),
                    from,
                    to: t,
                    state_epoch,
                    leader_epoch,
                    reason: reason.filter(|_| t == S::Failed),
                });
                self.mirror_enter(tp, t);
            }
            (Some(_), Some((_, ErrorCode::FencedStateEpoch | ErrorCode::FencedLeaderEpoch, _))) => {
                // Someone newer owns the state, or our view is stale: re-read, after the
                // retry backoff. Reads see committed state only while writes are checked
                // against the coordinator's latest (uncommitted) state, so an immediate re-read
                // can return the very state that was just fenced; without a backoff a leader
                // spins read→write→fenced until the pending record commits or its coordinator
                // learns it was replaced (seed 102: ~650 round trips in 0.7 s).
                r.step = MirrorStep::Reading;
                if rewrites && r.behind.is_none() {
                    r.rewrite = r.last_write.clone();
                }
                self.mirror_retry_later();
            }
            (Some(_), None) if outcome_unknown && rewrites && r.behind.is_none() => {
                // Latest: the write got no answer (its coordinator down or cut off) or timed
                // out on the coordinator: the prototype's `transitionTo` re-reads the state and
                // writes the same transition again (`refreshAndPersistState`), so a transition
                // an event decided (the fetcher's ULE_RECOVERY after a divergence it already
                // truncated) is not lost to a re-drive of the state read back.
                r.step = MirrorStep::Reading;
                r.rewrite = r.last_write.clone();
                self.mirror_retry_later();
            }
            (Some(_), _) => {
                // A repair re-reads first: the answer decides what to write next.
                r.step = if r.behind.is_some() {
                    MirrorStep::Reading
                } else {
                    MirrorStep::Idle
                };
                self.mirror_retry_later();
            }
            (None, Some((_, ErrorCode::None, _))) => {
                if let MirrorStep::Stop {
                    index,
                    wait: StopWait::Recording,
                } = r.step
                {
                    r.step = MirrorStep::Stop {
                        index: index + 1,
                        wait: StopWait::Start,
                    };
                    self.stop_continue(tp);
                }
            }
            (None, _) => {
                if let MirrorStep::Stop { index, .. } = r.step {
                    r.step = MirrorStep::Stop {
                        index,
                        wait: StopWait::Start,
                    };
                }
                self.mirror_retry_later();
            }
        }
    }

    /// Runs a state's entry action (idempotent: a new leader re-runs it).
    fn mirror_enter(&mut self, tp: &TopicPartition, state: S) {
        match state {
            S::Preparing => self.prepare_lookup(tp),
            S::Mirroring => {
                self.add_to_mirror_fetcher(tp);
                // A desired-state change (stop, pause) that arrived while the transition was
                // being written is picked up now.
                self.mirror_drive_from_state(tp, false);
            }
            S::Pausing => {
                self.remove_from_mirror_fetcher(tp);
                self.mirror_write(tp, Some(S::Paused), None);
            }
            S::Stopping => {
                if let Some(r) = self.mirror_runs.get_mut(tp) {
                    r.step = MirrorStep::Stop {
                        index: 0,
                        wait: StopWait::Start,
                    };
                }
                self.stop_continue(tp);
            }
            S::EpochFencing => {
                self.remove_from_mirror_fetcher(tp);
                if let Some(r) = self.mirror_runs.get_mut(tp) {
                    r.step = MirrorStep::Fencing { sent: false };
                }
                self.epoch_fencing_continue(tp);
            }
            S::UleRecovery => {
                self.remove_from_mirror_fetcher(tp);
                self.ule_recovery_continue(tp);
            }
            S::Failed => {
                self.remove_from_mirror_fetcher(tp);
                self.failed_schedule_retry(tp);
                self.mirror_drive_from_state(tp, false);
            }
            S::Paused | S::Stopped | S::Unknown => {
                self.remove_from_mirror_fetcher(tp);
                // A desired-state change that arrived while writing is picked up now.
                self.mirror_drive_from_state(tp, false);
            }
        }
    }

    // ------------------------------------------------------------------ source cluster

    /// The source cluster of a mirror and its bootstrap brokers (mirror configs).
    pub(in crate::broker) fn mirror_source(
        &self,
        mirror: &str,
    ) -> Option<(ClusterIdx, Vec<BrokerId>)> {
        let (cluster, bootstrap) = self.mirror_source_configs(mirror)?;
        let brokers = bootstrap
            .split(',')
            .filter_map(|b| b.trim().parse().ok().map(BrokerId))
            .collect();
        Some((cluster, brokers))
    }

    /// The source cluster of a mirror: [`Self::mirror_source`] without parsing the brokers
    /// (the mirror checker asks for it on every mirrored append).
    fn mirror_source_index(&self, mirror: &str) -> Option<ClusterIdx> {
        self.mirror_source_configs(mirror).map(|(c, _)| c)
    }

    /// A mirror's source cluster and its bootstrap list, both required.
    fn mirror_source_configs(&self, mirror: &str) -> Option<(ClusterIdx, &str)> {
        let cfg = self.image.configs_of(ConfigResourceRef::Mirror(mirror))?;
        let cluster = ClusterIdx(cfg.get(SOURCE_CLUSTER_INDEX_CONFIG)?.parse().ok()?);
        Some((cluster, cfg.get(BOOTSTRAP_SERVERS_CONFIG)?))
    }

    /// Periodic re-drive of mirror runs that wait on something outside.
    pub(in crate::broker) fn on_mirror_retry(&mut self) {
        let tps: Vec<TopicPartition> = self.mirror_runs.keys().cloned().collect();
        for tp in tps {
            let Some(r) = self.mirror_runs.get(&tp) else {
                continue;
            };
            match &r.step {
                MirrorStep::Reading => self.send_mirror_read(&tp),
                // A round still waiting for answers (or their timeouts) is not restarted: a
                // restart would forget the answers so far and ask a dead broker again, so one
                // dead broker would hold PREPARING for as long as it is down.
                MirrorStep::LookupLme(l) if l.verdict() == LookupVerdict::Waiting => {}
                MirrorStep::LookupLme(_) => self.prepare_lookup(&tp),
                MirrorStep::Idle => self.mirror_drive_from_state(&tp, true),
                _ => self.mirror_drive(&tp),
            }
        }
        self.maybe_send_mirror_fetches();
    }
}

/// The greatest epoch of a batch in the log (-1 if none): the cache's latest entry may be a
/// leader's own epoch assigned at the LEO before any record.
pub(in crate::broker) fn greatest_epoch_with_records(log: &crate::log::PartitionLog) -> i32 {
    greatest_epoch_below(log, log.log_end_offset())
}

/// The greatest epoch with a record below `end` (-1 if none).
pub(in crate::broker) fn greatest_epoch_below(log: &crate::log::PartitionLog, end: Offset) -> i32 {
    log.epoch_cache()
        .epoch_for_offset(end.plus(-1))
        .map_or(-1, |e| e.0)
}

/// Why a partition fails when its desired state is STOPPED and no state is recorded.
const LOST_STATE_REASON: &str = "no mirror state recorded while the topic is stopped";

/// The status is FAILED, or the stop that follows it, because the state was lost.
pub(in crate::broker) fn state_was_lost(status: Option<&MirrorPartitionStatus>) -> bool {
    status.is_some_and(|s| {
        matches!(s.state, S::Failed | S::Stopping)
            && s.error_message.as_deref() == Some(LOST_STATE_REASON)
    })
}

/// `(LME, end offset)` of the mirrored log: up to the LEO, or up to this stop's own
/// MIRROR_PID_RESET.
///
/// A stop writes its reset right before STOPPED, and only then takes client writes. A stop
/// re-driven after its STOPPED record was lost (the `__mirror_state` tail gone with unflushed
/// data, a declared loss, while the partition kept its own post-failover writes) finds its
/// reset followed by those writes, in epochs the source never had: "the greatest source epoch
/// now in the log" (A.1) is the one below the reset (mirror chaos seeds 2335, 7541 recorded
/// the failover's epoch 1, and the failback kept the old source's own epoch-1 tail).
///
/// Only the log's last reset can be this stop's, and only if it names this mirror's source
/// cluster (`SourceClusterId`): a reset mirrored from the other cluster (the second failover
/// of a ping-pong, S6) follows records of *that* cluster's source, and everything after it
/// is source data of this mirror, so the LME is the greatest epoch of the whole log. Taking
/// the epoch below a mirrored reset records an LME the other cluster's writes sit above, and
/// the next failback cuts (and re-copies) acknowledged writes for nothing
/// (`s06_double_failover_ping_pong`).
pub(in crate::broker) fn last_mirrored_position(
    log: &crate::log::PartitionLog,
    source: Option<&str>,
) -> (i32, Offset) {
    let end = own_pid_reset(log, source).map_or_else(|| log.log_end_offset(), |b| b.base_offset());
    (greatest_epoch_below(log, end), end)
}

/// This mirror's own `MIRROR_PID_RESET` in `log`, if a stop of this mirror has written it
/// ([`last_mirrored_position`] says which reset can be: the log's last one, naming `source`).
pub(in crate::broker) fn own_pid_reset<'a>(
    log: &'a crate::log::PartitionLog,
    source: Option<&str>,
) -> Option<&'a crate::record::RecordBatch> {
    match source {
        Some(source) => log
            .batches()
            .rev()
            .find(|b| b.control_record() == Some(ControlRecord::MirrorPidReset))
            .filter(|b| b.mirror_pid_reset_source().as_deref() == Some(source)),
        // The mirror's source is unknown (its config is gone): only a reset at the log end
        // can be told to be this stop's.
        None => log
            .batches()
            .next_back()
            .filter(|b| b.control_record() == Some(ControlRecord::MirrorPidReset)),
    }
}

/// The `(previous state, state epoch, writer's leader epoch)` of a read-back PREPARING record
/// (the start of a mirroring cycle, or of a retry) written at an earlier leader epoch than
/// `ours`, when the run that read it knew no state (`before`: none, or UNKNOWN): a start
/// nobody may have reported (see `on_mirror_read`).
fn unreported_cycle_start(
    before: Option<(S, i32)>,
    read: Option<(S, i32, LeaderEpoch)>,
    previous: Option<S>,
    ours: LeaderEpoch,
) -> Option<(S, i32, LeaderEpoch)> {
    let (state, state_epoch, writer) = read?;
    let knew_nothing = before.is_none_or(|(s, _)| s == S::Unknown);
    (knew_nothing && state == S::Preparing && writer < ours).then_some((
        previous.unwrap_or(S::Unknown),
        state_epoch,
        writer,
    ))
}

#[cfg(test)]
#[path = "manager_test.rs"]
mod manager_test;
