//! The `__mirror_state` coordinator for ONE partition of `__mirror_state` (Kafka prototype:
//! `ClusterMirrorCoordinatorShard`), as a pure state machine over key/value records.
//!
//! The runtime hosting it (the leader of that `__mirror_state` partition) builds a fresh
//! store on becoming leader, [`replay`](MirrorStateStore::replay)s every record of the
//! partition in offset order, then serves ReadMirrorStates with
//! [`read`](MirrorStateStore::read) and WriteMirrorStates with
//! [`handle_write`](MirrorStateStore::handle_write).
//!
//! # Writes apply at once
//!
//! As in Kafka's coordinator runtime (which replays a write's records into its timeline maps
//! before appending them), [`handle_write`](MirrorStateStore::handle_write) and
//! [`tombstones`](MirrorStateStore::tombstones) update the store immediately and return the
//! records to append, so the next write is fenced against this one even before it commits.
//! If the append fails, the runtime must drop the store and reload it from the partition log
//! (Kafka reverts its snapshot to the last committed offset). The runtime must not replay its
//! own live writes.
//!
//! # Fencing (kip1279.md B §4.2, `ClusterMirrorCoordinatorShardTest`)
//!
//! - Leader epoch: a request naming leader epoch `L` (not -1) is refused with
//!   `FENCED_LEADER_EPOCH` when the partition's current leader epoch (from metadata) is known
//!   and differs from `L`, or when a newer leader already wrote (stored leader epoch > `L`).
//! - State epoch: a state write naming state epoch `S` (not -1) is refused with
//!   `FENCED_STATE_EPOCH` when `S` differs from the stored state epoch (0 before any write).
//! - Every persisted transition stores `state_epoch = stored + 1`.
//! - A transition the design forbids is skipped: no state record, no error.
//! - A write whose target state is absent or UNKNOWN writes only the `LastMirrorEpochs`
//!   record (state epoch not checked); `(-1, -1)` is never written.

use std::collections::{BTreeMap, BTreeSet};

use thiserror::Error;

use super::design::Design;
use super::mirror_name::{MirrorNameError, validate_mirror_name};
use super::state::{MirrorPartitionState, MirrorPartitionStatus, is_valid_transition};
use super::state_records::{
    LastMirrorEpochsValue, MirrorPartitionKey, MirrorRecordError, MirrorStateKey,
    last_mirror_epochs_record, partition_state_record,
};
use crate::coordinator::CoordinatorRecord;
use crate::protocol::ErrorCode;
use crate::types::LeaderEpoch;

/// One partition's entry of a WriteMirrorStates request (or a local write by the leader).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateWrite {
    /// The mirror partition.
    pub key: MirrorPartitionKey,
    /// The state to move to; `None` or UNKNOWN = write only `last_mirror`.
    pub target_state: Option<MirrorPartitionState>,
    /// The writer's partition leader epoch; `LeaderEpoch::UNDEFINED` (-1) skips the check.
    pub leader_epoch: LeaderEpoch,
    /// The state epoch the writer last read; [`StateWrite::SKIP_STATE_EPOCH`] skips the check.
    pub state_epoch: i32,
    /// Why the partition fails (kept only with target FAILED or a non-clearing state).
    pub error: Option<String>,
    /// FAILED retry counter to store; -1 = non-retryable.
    pub retry_attempt: i16,
    /// The failback marker `(last_mirror_epoch, last_mirror_offset)` to record, if any.
    pub last_mirror: Option<(i32, i64)>,
}

impl StateWrite {
    /// `state_epoch` value that skips the state-epoch check.
    pub const SKIP_STATE_EPOCH: i32 = -1;

    /// A plain transition to `target` (no error, no marker).
    #[must_use]
    pub fn transition(
        key: MirrorPartitionKey,
        target: MirrorPartitionState,
        leader_epoch: LeaderEpoch,
        state_epoch: i32,
    ) -> Self {
        Self {
            key,
            target_state: Some(target),
            leader_epoch,
            state_epoch,
            error: None,
            retry_attempt: 0,
            last_mirror: None,
        }
    }

    /// A write of the failback marker only (STOPPING's "record the LME" step).
    #[must_use]
    pub fn last_mirror_only(
        key: MirrorPartitionKey,
        leader_epoch: LeaderEpoch,
        last_mirror: (i32, i64),
    ) -> Self {
        Self {
            key,
            target_state: None,
            leader_epoch,
            state_epoch: Self::SKIP_STATE_EPOCH,
            error: None,
            retry_attempt: 0,
            last_mirror: Some(last_mirror),
        }
    }

    /// The same write carrying an error message and retry counter (for target FAILED).
    #[must_use]
    pub fn with_error(mut self, message: &str, retry_attempt: i16) -> Self {
        self.error = Some(message.to_owned());
        self.retry_attempt = retry_attempt;
        self
    }
}

/// Why a write was refused. Nothing is recorded when this is returned.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum StateWriteError {
    /// The writer is not (or no longer) the partition leader of `current`.
    #[error("fenced: request leader epoch {request}, current {current}")]
    FencedLeaderEpoch {
        /// The request's leader epoch.
        request: LeaderEpoch,
        /// The current (or stored) leader epoch that fences it.
        current: LeaderEpoch,
    },
    /// The writer read an older (or newer) state than the stored one.
    #[error("fenced: request state epoch {request}, stored {stored}")]
    FencedStateEpoch {
        /// The request's state epoch.
        request: i32,
        /// The stored state epoch.
        stored: i32,
    },
    /// The key's mirror name breaks the mirror-name rules.
    #[error("invalid mirror name: {0}")]
    InvalidMirrorName(#[from] MirrorNameError),
}

impl From<StateWriteError> for ErrorCode {
    fn from(e: StateWriteError) -> ErrorCode {
        match e {
            StateWriteError::FencedLeaderEpoch { .. } => ErrorCode::FencedLeaderEpoch,
            StateWriteError::FencedStateEpoch { .. } => ErrorCode::FencedStateEpoch,
            StateWriteError::InvalidMirrorName(_) => ErrorCode::InvalidClusterMirrorName,
        }
    }
}

/// The coordinator state of one `__mirror_state` partition.
#[derive(Clone, Debug)]
pub struct MirrorStateStore {
    design: Design,
    /// `MirrorPartitionStateKey` records. Invariant: `state_epoch >= 0`.
    states: BTreeMap<MirrorPartitionKey, MirrorPartitionStatus>,
    /// `LastMirrorEpochsKey` records. Invariant: never `(-1, -1)` from a live write.
    last_mirror: BTreeMap<MirrorPartitionKey, LastMirrorEpochsValue>,
}

impl MirrorStateStore {
    /// An empty store; `design` decides which transitions are valid.
    #[must_use]
    pub fn new(design: Design) -> Self {
        Self {
            design,
            states: BTreeMap::new(),
            last_mirror: BTreeMap::new(),
        }
    }

    /// Applies one committed record while loading the partition. Epochs only grow (as in the
    /// prototype's `maybeUpdate*EpochMap`); a `None` value (tombstone) removes the entry.
    pub fn replay(&mut self, key: &[u8], value: Option<&[u8]>) -> Result<(), MirrorRecordError> {
        match MirrorStateKey::decode(key)? {
            MirrorStateKey::PartitionState(k) => match value {
                None => {
                    self.states.remove(&k);
                }
                Some(v) => {
                    let mut status = MirrorPartitionStatus::decode(v)?;
                    if let Some(old) = self.states.get(&k) {
                        status.leader_epoch = status.leader_epoch.max(old.leader_epoch);
                        status.state_epoch = status.state_epoch.max(old.state_epoch);
                    }
                    self.states.insert(k, status);
                }
            },
            MirrorStateKey::LastMirrorEpochs(k) => match value {
                None => {
                    self.last_mirror.remove(&k);
                }
                Some(v) => {
                    self.last_mirror
                        .insert(k, LastMirrorEpochsValue::decode(v)?);
                }
            },
        }
        Ok(())
    }

    /// Handles one WriteMirrorStates entry; `current_partition_leader_epoch` is the data
    /// partition's leader epoch in this broker's metadata image, when known. Returns the
    /// records to append (none when an invalid transition was skipped and no marker was
    /// given). Fencing rules: module docs.
    pub fn handle_write(
        &mut self,
        write: &StateWrite,
        current_partition_leader_epoch: Option<LeaderEpoch>,
    ) -> Result<Vec<CoordinatorRecord>, StateWriteError> {
        validate_mirror_name(&write.key.mirror_name)?;
        let stored = self.states.get(&write.key).cloned();
        self.check_leader_epoch(write, stored.as_ref(), current_partition_leader_epoch)?;
        let target = write
            .target_state
            .filter(|s| *s != MirrorPartitionState::Unknown);
        let mut records = Vec::new();
        if let Some(target) = target {
            let prev = stored.unwrap_or_default();
            if write.state_epoch != StateWrite::SKIP_STATE_EPOCH
                && write.state_epoch != prev.state_epoch
            {
                return Err(StateWriteError::FencedStateEpoch {
                    request: write.state_epoch,
                    stored: prev.state_epoch,
                });
            }
            if is_valid_transition(&self.design, prev.state, target) {
                let next = next_status(&prev, target, write);
                assert!(
                    next.state_epoch > prev.state_epoch,
                    "mirror_state_epoch_increases"
                );
                records.push(partition_state_record(&write.key, Some(&next)));
                self.states.insert(write.key.clone(), next);
            }
        }
        if let Some((epoch, offset)) = write.last_mirror {
            let value = LastMirrorEpochsValue {
                last_mirror_epoch: epoch,
                last_mirror_offset: offset,
            };
            if !value.is_unknown() {
                records.push(last_mirror_epochs_record(&write.key, Some(value)));
                self.last_mirror.insert(write.key.clone(), value);
            }
        }
        Ok(records)
    }

    fn check_leader_epoch(
        &self,
        write: &StateWrite,
        stored: Option<&MirrorPartitionStatus>,
        current: Option<LeaderEpoch>,
    ) -> Result<(), StateWriteError> {
        let request = write.leader_epoch;
        if request == LeaderEpoch::UNDEFINED {
            return Ok(());
        }
        if let Some(current) = current
            && current != request
        {
            return Err(StateWriteError::FencedLeaderEpoch { request, current });
        }
        match stored {
            Some(s) if s.leader_epoch > request => Err(StateWriteError::FencedLeaderEpoch {
                request,
                current: s.leader_epoch,
            }),
            _ => Ok(()),
        }
    }

    /// The state and failback marker of `key` (ReadMirrorStates), or `None` when the
    /// coordinator has neither record. A missing half reads as UNKNOWN / `(-1, -1)`.
    #[must_use]
    pub fn read(
        &self,
        key: &MirrorPartitionKey,
    ) -> Option<(MirrorPartitionStatus, LastMirrorEpochsValue)> {
        let status = self.states.get(key);
        let last = self.last_mirror.get(key);
        if status.is_none() && last.is_none() {
            return None;
        }
        Some((
            status.cloned().unwrap_or_default(),
            last.copied().unwrap_or(LastMirrorEpochsValue::UNKNOWN),
        ))
    }

    /// Every mirror partition of `mirror_name` this store holds a record for, in key order.
    #[must_use]
    pub fn partitions_of(&self, mirror_name: &str) -> Vec<MirrorPartitionKey> {
        let keys: BTreeSet<&MirrorPartitionKey> = self
            .states
            .keys()
            .chain(self.last_mirror.keys())
            .filter(|k| k.mirror_name == mirror_name)
            .collect();
        keys.into_iter().cloned().collect()
    }

    /// DeleteMirror: removes every record of `mirror_name` and returns the tombstones to
    /// append: per partition, the `MirrorPartitionStateKey` tombstone then the
    /// `LastMirrorEpochsKey` one (`testDeleteClusterMirror`). Idempotent: a second call
    /// returns nothing (the periodic sync retries tombstones safely).
    pub fn tombstones(&mut self, mirror_name: &str) -> Vec<CoordinatorRecord> {
        let keys = self.partitions_of(mirror_name);
        let mut records = Vec::with_capacity(keys.len() * 2);
        for k in &keys {
            self.states.remove(k);
            self.last_mirror.remove(k);
            records.push(partition_state_record(k, None));
            records.push(last_mirror_epochs_record(k, None));
        }
        records
    }

    /// Panics if a stored entry breaks the store's invariants.
    pub fn check_invariants(&self) {
        for (k, s) in &self.states {
            assert!(
                s.state_epoch >= 0,
                "mirror_state_epoch_non_negative: {k:?} {s:?}"
            );
            assert!(
                s.retry_attempt >= -1,
                "mirror_retry_attempt_ge_minus_one: {k:?} {s:?}"
            );
        }
    }
}

/// The status a valid transition `prev -> target` stores. FAILED keeps the error and the
/// state it failed from (a FAILED -> FAILED rewrite keeps the original previous state);
/// PREPARING, PAUSED and STOPPED clear the error info (as the prototype's replay does);
/// other targets store the write's error info with no previous state.
fn next_status(
    prev: &MirrorPartitionStatus,
    target: MirrorPartitionState,
    write: &StateWrite,
) -> MirrorPartitionStatus {
    use MirrorPartitionState as S;
    let previous_state = previous_state_after(prev, target);
    let (error_message, retry_attempt) = match target {
        S::Preparing | S::Paused | S::Stopped => (None, 0),
        _ => (
            write.error.as_deref().map(clamp_message),
            write.retry_attempt,
        ),
    };
    MirrorPartitionStatus {
        state: target,
        previous_state,
        state_epoch: prev
            .state_epoch
            .checked_add(1)
            .expect("mirror_state_epoch_overflow"),
        leader_epoch: prev.leader_epoch.max(write.leader_epoch),
        error_message,
        retry_attempt,
    }
}

/// The state a retry or RecoverMirrorTopics returns to after `prev -> target`: FAILED
/// remembers the state it failed from (a FAILED -> FAILED rewrite keeps the first); any other
/// state has none. The partition leader keeps the same in memory.
#[must_use]
pub fn previous_state_after(
    prev: &MirrorPartitionStatus,
    target: MirrorPartitionState,
) -> MirrorPartitionState {
    use MirrorPartitionState as S;
    match target {
        S::Failed if prev.state == S::Failed => prev.previous_state,
        S::Failed => prev.state,
        _ => S::Unknown,
    }
}

/// Error messages come from other brokers: cut them to what the record format holds.
fn clamp_message(m: &str) -> String {
    let max = usize::try_from(i16::MAX).unwrap_or(usize::MAX);
    if m.len() <= max {
        return m.to_owned();
    }
    let mut end = max;
    while !m.is_char_boundary(end) {
        end -= 1;
    }
    m[..end].to_owned()
}

#[cfg(test)]
#[path = "state_store_test.rs"]
mod tests;
