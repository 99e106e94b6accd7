//! KIP-1279 `DeleteMirror` validation at the receiving broker (spec kip1279.md A.1: "allowed
//! only when every topic of the mirror is STOPPED"; B §6.1 DeleteMirror → DeleteClusterMirror).
//!
//! The controller only knows desired states (`mirror.name`); the partition states live in
//! `__mirror_state`, which brokers host. The prototype splits the check the same way: the
//! broker validates that every partition of the mirror's topics has *coordinator* state
//! STOPPED (else INVALID_CLUSTER_MIRROR_STATES) and forwards the request with
//! `StateValidationOffset` = the metadata offset it validated at; the controller then
//! refuses topics not desired STOPPED (CLUSTER_MIRROR_NOT_EMPTY) and topics whose mirror
//! state changed after that offset (INVALID_CLUSTER_MIRROR_STATES, the optimistic lock of
//! B §6.6), and only then writes the deletion.
//!
//! Here, a client's `DeleteMirror` (no validation offset) whose mirror exists and whose topics
//! are all desired STOPPED makes the broker send `ReadMirrorStates` to the `__mirror_state`
//! leaders of every partition; it forwards only when every partition reads STOPPED. Any
//! other case (unknown mirror, a topic not desired STOPPED, a mirror without topics) is
//! forwarded at once with the current offset, so the controller gives its own error.
//! A partition whose coordinator has no leader, does not answer, or answers an error is
//! refused with that error (the operator retries; deleting on a guess would drop the state
//! of a partition that may still be stopping).

use std::collections::BTreeMap;

use crate::broker::broker::{Broker, Pending};
use crate::mirror::{MirrorPartitionState as S, mirror_state_partition};
use crate::protocol::messages::{MirrorTopicResult, ReadMirrorStatesTopic};
use crate::protocol::metadata::{
    DesiredMirrorState, MIRROR_STATE_TOPIC, MIRROR_STATE_TOPIC_PARTITIONS,
};
use crate::protocol::{CorrelationId, ErrorCode, NodeId, Request, Response};
use crate::types::{BrokerId, TopicId, TopicPartition};

/// One `DeleteMirror` being validated.
#[derive(Clone, Debug)]
pub(in crate::broker) struct Validation {
    client: NodeId,
    client_id: CorrelationId,
    mirror: String,
    /// The metadata offset the desired states were read at.
    validated_at: i64,
    /// `ReadMirrorStates` not answered yet.
    pending: usize,
    /// Per partition: the state read, or the error that prevented reading it.
    states: BTreeMap<TopicPartition, Result<Option<S>, ErrorCode>>,
}

/// A topic of the mirror as the metadata image has it.
#[derive(Clone, Debug)]
struct MirrorTopicInImage {
    topic_id: TopicId,
    partitions: Vec<i32>,
    desired: DesiredMirrorState,
}

/// `DeleteMirror` validations in flight on one broker.
#[derive(Clone, Debug, Default)]
pub struct DeleteMirrorHost {
    validations: BTreeMap<u64, Validation>,
    next: u64,
}

/// Why a partition blocks `DeleteMirror`, per topic (in topic order): `None` when every
/// partition read STOPPED. A partition is "not stopped" when its persisted state is another
/// one (or none was ever written), and carries its read error when it could not be read.
#[must_use]
pub fn blocking_partitions(
    mirror: &str,
    states: &BTreeMap<TopicPartition, Result<Option<S>, ErrorCode>>,
) -> Option<Vec<MirrorTopicResult>> {
    let mut by_topic: BTreeMap<String, (ErrorCode, String)> = BTreeMap::new();
    for (tp, r) in states {
        let (error, why) = match r {
            Ok(Some(S::Stopped)) => continue,
            Ok(Some(s)) => (ErrorCode::InvalidClusterMirrorStates, s.name().to_string()),
            Ok(None) => (ErrorCode::InvalidClusterMirrorStates, "UNKNOWN".to_string()),
            Err(e) => (*e, format!("unreadable ({e})")),
        };
        by_topic.entry(tp.topic.to_string()).or_insert((
            error,
            format!("partition {tp} of mirror {mirror:?} is {why}, not STOPPED"),
        ));
    }
    (!by_topic.is_empty()).then(|| {
        by_topic
            .into_iter()
            .map(|(name, (error, message))| MirrorTopicResult {
                name,
                error,
                message: Some(message),
            })
            .collect()
    })
}

impl Broker {
    /// A `DeleteMirror` arrived from `from`.
    pub(in crate::broker) fn handle_delete_mirror(
        &mut self,
        from: NodeId,
        id: CorrelationId,
        mirror: String,
        state_validation_offset: Option<i64>,
    ) {
        let validated_at = state_validation_offset.unwrap_or(self.image.offset);
        let topics = self.delete_mirror_topics(&mirror);
        let all_stopped = !topics.is_empty()
            && topics
                .values()
                .all(|t| t.desired == DesiredMirrorState::Stopped);
        if state_validation_offset.is_some() || !all_stopped {
            self.forward_delete_mirror(from, id, mirror, validated_at);
            return;
        }
        let mut states = BTreeMap::new();
        let mut by_coordinator: BTreeMap<BrokerId, Vec<ReadMirrorStatesTopic>> = BTreeMap::new();
        for (name, t) in &topics {
            let topic_id = &t.topic_id;
            for p in &t.partitions {
                let tp = TopicPartition::new(name.as_str(), *p);
                let sp =
                    mirror_state_partition(&mirror, *topic_id, *p, MIRROR_STATE_TOPIC_PARTITIONS);
                let leader = self
                    .image
                    .partition(&TopicPartition::new(MIRROR_STATE_TOPIC, sp))
                    .and_then(|r| r.leader);
                let Some(c) = leader else {
                    states.insert(tp, Err(ErrorCode::CoordinatorNotAvailable));
                    continue;
                };
                states.insert(tp, Err(ErrorCode::RequestTimedOut));
                let list = by_coordinator.entry(c).or_default();
                match list.iter_mut().find(|t| t.name == *name) {
                    Some(t) => t.partitions.push(*p),
                    None => list.push(ReadMirrorStatesTopic {
                        name: name.clone(),
                        topic_id: *topic_id,
                        partitions: vec![*p],
                    }),
                }
            }
        }
        let v = self.delete_mirror.next;
        self.delete_mirror.next += 1;
        self.delete_mirror.validations.insert(
            v,
            Validation {
                client: from,
                client_id: id,
                mirror: mirror.clone(),
                validated_at,
                pending: by_coordinator.len(),
                states,
            },
        );
        for (c, topics) in by_coordinator {
            let req = Request::ReadMirrorStates {
                mirror_name: mirror.clone(),
                topics,
            };
            let to = self.broker_node(c);
            self.send_request(to, req, Pending::DeleteMirrorStates(v), 0);
        }
        self.maybe_finish_delete_mirror(v);
    }

    /// The mirror's topics in the image, by name.
    fn delete_mirror_topics(&self, mirror: &str) -> BTreeMap<String, MirrorTopicInImage> {
        self.image
            .topic_ids
            .iter()
            .filter_map(|(name, id)| {
                let m = self.mirror_membership(name)?;
                (m.mirror_name == mirror).then_some(())?;
                let partitions = self
                    .image
                    .topics
                    .get(id)?
                    .partitions
                    .keys()
                    .copied()
                    .collect();
                let t = MirrorTopicInImage {
                    topic_id: *id,
                    partitions,
                    desired: m.desired,
                };
                Some((name.clone(), t))
            })
            .collect()
    }

    fn forward_delete_mirror(
        &mut self,
        client: NodeId,
        client_id: CorrelationId,
        mirror: String,
        validated_at: i64,
    ) {
        let req = Request::DeleteMirror {
            mirror_name: mirror,
            state_validation_offset: Some(validated_at),
        };
        let controller = self.controller();
        self.send_request(controller, req, Pending::Forward { client, client_id }, 0);
    }

    /// An answer (`None`: timed out or failed) to a validation's `ReadMirrorStates`.
    pub(in crate::broker) fn on_delete_mirror_states(&mut self, v: u64, resp: Option<Response>) {
        let Some(val) = self.delete_mirror.validations.get_mut(&v) else {
            return;
        };
        val.pending = val.pending.saturating_sub(1);
        if let Some(Response::ReadMirrorStates { error, topics }) = resp {
            for t in topics {
                for p in t.partitions {
                    let tp = TopicPartition::new(t.name.as_str(), p.partition);
                    let Some(slot) = val.states.get_mut(&tp) else {
                        continue;
                    };
                    *slot = if !error.is_ok() {
                        Err(error)
                    } else if !t.error.is_ok() {
                        Err(t.error)
                    } else if !p.error.is_ok() {
                        Err(p.error)
                    } else {
                        Ok(S::from_value(p.state))
                    };
                }
            }
        }
        self.maybe_finish_delete_mirror(v);
    }

    fn maybe_finish_delete_mirror(&mut self, v: u64) {
        if self
            .delete_mirror
            .validations
            .get(&v)
            .is_none_or(|val| val.pending > 0)
        {
            return;
        }
        let Some(val) = self.delete_mirror.validations.remove(&v) else {
            return;
        };
        match blocking_partitions(&val.mirror, &val.states) {
            None => {
                self.forward_delete_mirror(val.client, val.client_id, val.mirror, val.validated_at)
            }
            Some(topics) => {
                let first = &topics[0];
                let resp = Response::MirrorAdmin {
                    error: first.error,
                    message: first.message.clone(),
                    topics,
                };
                self.respond(val.client, val.client_id, resp);
            }
        }
    }
}

#[cfg(test)]
#[path = "delete_mirror_test.rs"]
mod tests;
