//! The PREPARING lookup on the other cluster: the Last Mirrored Epoch (LME) of a partition
//! and the checks that make a failback safe (kip1279.md B §8.1 steps 1-2, §8.12).
//!
//! Every broker of the other cluster is asked (`DescribeMirrors` with a LastMirrorEpochLookup)
//! and answers local-only: the state and LME of the `__mirror_state` stores it hosts, and,
//! from its metadata image, the desired state of the topic in each mirror whose source is
//! the asking cluster (the prototype's `ListClusterMirrors` loop check). The prototype's
//! admin client takes the max LME over the brokers that answer. This type folds the answers
//! and decides, with three rules that make the lookup correct when brokers are stale or
//! down:
//!
//! - **A loop needs a majority of the brokers asked, and no answer against it.** The
//!   prototype judges a loop on the desired state (MIRRORING or PAUSED:
//!   `ListClusterMirrors`' default filter), answered by one broker from its metadata image.
//!   A broker cut off from its controller answers from a stale image, and a loop is
//!   non-retryable (FAILED), so a stale answer would end the failback for good (mirror chaos
//!   seed 335: a broker isolated across the stop still listed the topic as mirroring; seed
//!   2215: the same with the only up-to-date broker down, so the stale one answered alone).
//!   A real loop is a configuration the controller committed, so every broker that has
//!   caught up reports it; when brokers disagree, or too few answered to tell, the lookup
//!   asks again.
//! - **A partition that is not STOPPED there blocks, it does not loop.** The prototype's
//!   `validateSourcePartitionIsStopped` raises a *retryable* error for a reverse mirror
//!   partition that has not stopped; the seed design has no FAILED retry, so PREPARING
//!   waits and asks again.
//! - **A dead minority is tolerated, a missing record is not.** A broker that does not
//!   answer (crashed, isolated) is left out instead of restarting the round (issue M6 bug
//!   2: one dead broker held PREPARING for as long as it was down). Leaving it out is safe
//!   only if the record of the partition was still seen: when the other cluster has the
//!   topic in a mirror from us, some broker must report its record (its `__mirror_state`
//!   coordinator); if none did, the coordinator may be the broker that is down, and taking
//!   "no record" as "mirroring from scratch" (LME -1) would truncate by the wrong point.
//!   The lookup then waits for a new coordinator.

use std::collections::{BTreeMap, BTreeSet};

use crate::protocol::messages::MirrorDescription;
use crate::protocol::metadata::DesiredMirrorState;
use crate::types::BrokerId;

use super::MirrorPartitionState as S;

/// What the folded answers decide.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LookupVerdict {
    /// Some brokers have not answered yet.
    Waiting,
    /// Ask again later: the reason says why.
    Retry(RetryReason),
    /// The other cluster mirrors this topic from us: FAILED, non-retryable.
    Loop(String),
    /// Safe to truncate by this `(LME, LMO)` (`(-1, -1)`: no mirror there ever recorded one).
    Truncate((i32, i64)),
}

/// Why a lookup is asked again.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RetryReason {
    /// A reverse mirror partition there is not STOPPED yet.
    NotStopped,
    /// Brokers there disagree on whether a reverse mirror is active (metadata catching up),
    /// or only a minority of those asked says it is.
    LoopDisputed,
    /// The topic is in a reverse mirror there but no answering broker holds its record.
    RecordUnseen,
}

/// The fold of one lookup round's answers for one partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LmeLookup {
    topic: String,
    partition: i32,
    pending: BTreeSet<BrokerId>,
    asked: usize,
    best: (i32, i64),
    not_stopped: bool,
    /// Per reverse mirror: brokers that list the topic as mirroring/paused, and that don't.
    loop_votes: BTreeMap<String, (u32, u32)>,
    /// Some broker has the topic in a reverse mirror (any desired state).
    member: bool,
    /// Some broker reported the partition's record.
    record_seen: bool,
}

impl LmeLookup {
    /// A round asking `brokers` about `topic`'s `partition`.
    #[must_use]
    pub fn new(topic: &str, partition: i32, brokers: impl IntoIterator<Item = BrokerId>) -> Self {
        let pending: BTreeSet<BrokerId> = brokers.into_iter().collect();
        Self {
            topic: topic.to_string(),
            partition,
            asked: pending.len(),
            pending,
            best: (-1, -1),
            not_stopped: false,
            loop_votes: BTreeMap::new(),
            member: false,
            record_seen: false,
        }
    }

    /// Folds `broker`'s answer (its mirrors whose source is the asking cluster).
    pub fn on_answer(&mut self, broker: BrokerId, mirrors: &[MirrorDescription]) {
        if !self.pending.remove(&broker) {
            return;
        }
        for m in mirrors {
            let topic = m.topics.iter().find(|t| t.name == self.topic);
            let desired = topic.and_then(|t| t.desired);
            self.member |= desired.is_some();
            let votes = self.loop_votes.entry(m.mirror_name.clone()).or_default();
            match desired {
                Some(DesiredMirrorState::Mirroring | DesiredMirrorState::Paused) => votes.0 += 1,
                Some(DesiredMirrorState::Stopped) | None => votes.1 += 1,
            }
            let parts = topic.into_iter().flat_map(|t| &t.partitions);
            for p in parts.filter(|p| p.partition == self.partition) {
                self.record_seen = true;
                let state = S::from_name(&p.state);
                if !matches!(state, Some(S::Stopped | S::Unknown)) {
                    self.not_stopped = true;
                }
                if p.last_mirror_epoch > self.best.0 {
                    self.best = (p.last_mirror_epoch, p.last_mirror_offset);
                }
            }
        }
    }

    /// `broker` did not answer (timeout, disconnect): leave it out of this round.
    pub fn on_unreachable(&mut self, broker: BrokerId) {
        self.pending.remove(&broker);
    }

    /// Brokers that have not answered yet.
    #[must_use]
    pub fn pending(&self) -> &BTreeSet<BrokerId> {
        &self.pending
    }

    /// The decision once every broker answered or was left out.
    #[must_use]
    pub fn verdict(&self) -> LookupVerdict {
        if !self.pending.is_empty() {
            return LookupVerdict::Waiting;
        }
        for (mirror, &(active, inactive)) in &self.loop_votes {
            let majority = usize::try_from(active).unwrap_or(0) * 2 > self.asked;
            if majority && inactive == 0 {
                return LookupVerdict::Loop(mirror.clone());
            }
            if active > 0 {
                return LookupVerdict::Retry(RetryReason::LoopDisputed);
            }
        }
        if self.not_stopped {
            return LookupVerdict::Retry(RetryReason::NotStopped);
        }
        if self.member && !self.record_seen {
            return LookupVerdict::Retry(RetryReason::RecordUnseen);
        }
        LookupVerdict::Truncate(self.best)
    }
}

#[cfg(test)]
#[path = "lme_lookup_test.rs"]
mod tests;
