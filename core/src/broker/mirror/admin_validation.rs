//! KIP-1279 admin requests validated at the receiving broker against the partition states in
//! `__mirror_state` before they are forwarded to the controller: `DeleteMirror` (spec
//! kip1279.md A.1: "allowed only when every topic of the mirror is STOPPED"; B §6.1
//! DeleteMirror → DeleteClusterMirror) and, in the latest design, `StopMirrorTopics` (B §6.1,
//! §7.6-1: the prototype's `validateStopMirrorStates` accepts MIRRORING and PAUSED only).
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
//!
//! `StopMirrorTopics` (latest only, [`crate::mirror::Design::stop_allowed_from`]): the listed
//! topics that are this mirror's and not desired STOPPED are read the same way; every one of
//! their partitions must read a state the stop is allowed from. A request with a partition
//! in any other state (LOG_ALIGNMENT, FAILED, ...) or unreadable is refused whole with
//! INVALID_MIRROR_PARTITION_STATE (or the read error), every topic named: the prototype
//! validates before it forwards, so nothing of the request is applied (our reading; whether
//! it refuses per topic is not known). Otherwise it is forwarded with the validation offset,
//! and the controller's optimistic lock (B §6.6) refuses a topic whose mirror state changed
//! since. A FAILED partition therefore blocks the failover of its topic until it is retried
//! back or recovered (B §7.6-1: failover during a source outage looks blocked).

use std::collections::BTreeMap;

use crate::broker::broker::{Broker, Pending};
use crate::mirror::{MirrorPartitionState as S, mirror_state_partition};
use crate::protocol::messages::{MirrorTopicResult, ReadMirrorStatesTopic};
use crate::protocol::metadata::{
    DesiredMirrorState, MIRROR_STATE_TOPIC, MIRROR_STATE_TOPIC_PARTITIONS,
};
use crate::protocol::{CorrelationId, ErrorCode, NodeId, Request, Response};
use crate::types::{BrokerId, TopicId, TopicPartition};

/// The request a validation is for.
#[derive(Clone, Debug)]
enum Purpose {
    DeleteMirror,
    /// `StopMirrorTopics` of these topics, in request order, with its `Patterns` (forwarded
    /// as they are: the controller resolves them against the mirror's topics, whose states
    /// this broker does not read first).
    StopTopics(Vec<String>, Vec<String>),
}

/// One admin request being validated.
#[derive(Clone, Debug)]
pub(in crate::broker) struct Validation {
    client: NodeId,
    client_id: CorrelationId,
    purpose: Purpose,
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

/// Admin validations in flight on one broker.
#[derive(Clone, Debug, Default)]
pub struct AdminValidations {
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

/// Why `StopMirrorTopics` of `topics` (request order) is refused, one result per topic:
/// `None` when every partition read a state `allowed` accepts. The first blocking partition
/// names the error of the whole request; a topic whose own partitions pass says it was not
/// applied because of it.
#[must_use]
pub fn stop_blocking_partitions(
    mirror: &str,
    topics: &[String],
    states: &BTreeMap<TopicPartition, Result<Option<S>, ErrorCode>>,
    allowed: impl Fn(S) -> bool,
) -> Option<Vec<MirrorTopicResult>> {
    let mut blocked: BTreeMap<&str, (ErrorCode, String)> = BTreeMap::new();
    for (tp, r) in states {
        let (error, why) = match r {
            Ok(s) if allowed(s.unwrap_or(S::Unknown)) => continue,
            Ok(s) => (
                ErrorCode::InvalidMirrorPartitionState,
                s.unwrap_or(S::Unknown).name().to_string(),
            ),
            Err(e) => (*e, format!("unreadable ({e})")),
        };
        blocked.entry(tp.topic.as_ref()).or_insert((
            error,
            format!("partition {tp} of mirror {mirror:?} is {why}: stop needs MIRRORING or PAUSED"),
        ));
    }
    let (first_error, first_message) = blocked.values().next()?.clone();
    Some(
        topics
            .iter()
            .map(|name| {
                let (error, message) = blocked
                    .get(name.as_str())
                    .cloned()
                    .unwrap_or((first_error, format!("not applied: {first_message}")));
                MirrorTopicResult {
                    name: name.clone(),
                    error,
                    message: Some(message),
                }
            })
            .collect(),
    )
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
        let topics = self.mirror_topics_in_image(&mirror);
        let all_stopped = !topics.is_empty()
            && topics
                .values()
                .all(|t| t.desired == DesiredMirrorState::Stopped);
        if state_validation_offset.is_some() || !all_stopped {
            self.forward_delete_mirror(from, id, mirror, validated_at);
            return;
        }
        self.validate_partition_states(
            from,
            id,
            mirror,
            validated_at,
            &topics,
            Purpose::DeleteMirror,
        );
    }

    /// A `StopMirrorTopics` arrived from `from` (latest design: validated first).
    pub(in crate::broker) fn handle_stop_mirror_topics(
        &mut self,
        from: NodeId,
        id: CorrelationId,
        mirror: String,
        (topics, patterns): (Vec<String>, Vec<String>),
        state_validation_offset: Option<i64>,
    ) {
        let validated_at = state_validation_offset.unwrap_or(self.image.offset);
        // Only the mirror's own topics not yet desired STOPPED are read: for the others
        // (unknown, another mirror's, already stopped) the controller gives its own answer.
        let read: BTreeMap<String, MirrorTopicInImage> = self
            .mirror_topics_in_image(&mirror)
            .into_iter()
            .filter(|(name, t)| topics.contains(name) && t.desired != DesiredMirrorState::Stopped)
            .collect();
        if state_validation_offset.is_some() || read.is_empty() {
            self.forward_stop_mirror_topics(from, id, mirror, (topics, patterns), validated_at);
            return;
        }
        self.validate_partition_states(
            from,
            id,
            mirror,
            validated_at,
            &read,
            Purpose::StopTopics(topics, patterns),
        );
    }

    /// Reads the `__mirror_state` record of every partition of `topics`, then finishes the
    /// validation (`maybe_finish_validation`).
    fn validate_partition_states(
        &mut self,
        from: NodeId,
        id: CorrelationId,
        mirror: String,
        validated_at: i64,
        topics: &BTreeMap<String, MirrorTopicInImage>,
        purpose: Purpose,
    ) {
        let mut states = BTreeMap::new();
        let mut by_coordinator: BTreeMap<BrokerId, Vec<ReadMirrorStatesTopic>> = BTreeMap::new();
        for (name, t) in topics {
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
        let v = self.admin_validations.next;
        self.admin_validations.next += 1;
        self.admin_validations.validations.insert(
            v,
            Validation {
                client: from,
                client_id: id,
                purpose,
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
            self.send_request(to, req, Pending::MirrorValidationStates(v), 0);
        }
        self.maybe_finish_validation(v);
    }

    /// The mirror's topics in the image, by name.
    fn mirror_topics_in_image(&self, mirror: &str) -> BTreeMap<String, MirrorTopicInImage> {
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

    fn forward_stop_mirror_topics(
        &mut self,
        client: NodeId,
        client_id: CorrelationId,
        mirror: String,
        (topics, patterns): (Vec<String>, Vec<String>),
        validated_at: i64,
    ) {
        let req = Request::StopMirrorTopics {
            mirror_name: mirror,
            topics,
            patterns,
            state_validation_offset: Some(validated_at),
        };
        let controller = self.controller();
        self.send_request(controller, req, Pending::Forward { client, client_id }, 0);
    }

    /// An answer (`None`: timed out or failed) to a validation's `ReadMirrorStates`.
    pub(in crate::broker) fn on_mirror_validation_states(
        &mut self,
        v: u64,
        resp: Option<Response>,
    ) {
        let Some(val) = self.admin_validations.validations.get_mut(&v) else {
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
        self.maybe_finish_validation(v);
    }

    fn maybe_finish_validation(&mut self, v: u64) {
        if self
            .admin_validations
            .validations
            .get(&v)
            .is_none_or(|val| val.pending > 0)
        {
            return;
        }
        let Some(val) = self.admin_validations.validations.remove(&v) else {
            return;
        };
        let blocked = match &val.purpose {
            Purpose::DeleteMirror => blocking_partitions(&val.mirror, &val.states),
            Purpose::StopTopics(topics, _) => {
                let design = self.mirror_design();
                stop_blocking_partitions(&val.mirror, topics, &val.states, |s| {
                    design.stop_allowed_from(s)
                })
            }
        };
        match (blocked, val.purpose) {
            (None, Purpose::DeleteMirror) => {
                self.forward_delete_mirror(val.client, val.client_id, val.mirror, val.validated_at)
            }
            (None, Purpose::StopTopics(topics, patterns)) => self.forward_stop_mirror_topics(
                val.client,
                val.client_id,
                val.mirror,
                (topics, patterns),
                val.validated_at,
            ),
            (Some(topics), _) => {
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
#[path = "admin_validation_test.rs"]
mod tests;
