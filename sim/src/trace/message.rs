//! What a message says, for the verbose trace: its API and the fields a reader needs to
//! replay a failover (partitions, offsets, epochs, error codes, mirror states), rendered from
//! the typed message, one formatter per [`Request`] / [`Response`] variant
//! ([`request`](super::request), [`response`](super::response)).
//!
//! The text is a *detail*: a send is hashed by its header alone (`→ request id=7`), and the
//! detail is formatted only when the line is kept ([`TraceSink::event_detailed`]). A payload
//! follows from the sender's state, which the surrounding events witness, so the hash loses
//! nothing a divergence would not show anyway, and sweeps never pay for formatting payloads.
//!
//! [`TraceSink::event_detailed`]: super::TraceSink::event_detailed

use std::collections::BTreeMap;
use std::fmt::{self, Display, Write as _};

use mirror_core::broker::Message;
use mirror_core::protocol::metadata::ConfigResource;
use mirror_core::protocol::{CorrelationId, NodeId, Request, Response};
use mirror_core::types::{BrokerId, LeaderEpoch, TopicId};

/// Appends formatted text to a `String` (writing into a `String` cannot fail).
macro_rules! w {
    ($out:expr, $($arg:tt)*) => {{
        let _ = write!($out, $($arg)*);
    }};
}
pub(super) use w;

/// The detail of a message: its API and key fields. A response also names the API of the
/// request it answers when `answers` knows it (see [`InFlight`]).
#[must_use]
pub fn detail(message: &Message, answers: Option<&'static str>) -> String {
    let mut out = String::with_capacity(64);
    match message {
        Message::Request(r) => super::request::write(&mut out, r),
        Message::Response(r) => super::response::write(&mut out, r, answers),
    }
    out
}

/// The requests in flight, by `(requester, responder, correlation id)`, so a response line
/// can say which API it answers (`PartitionErrors` answers several). Kept only while verbose
/// lines are printed; a request whose response never comes (its node crashed) stays, which
/// only costs memory in a replay.
#[derive(Debug, Default)]
pub struct InFlight {
    apis: BTreeMap<(NodeId, NodeId, CorrelationId), &'static str>,
}

impl InFlight {
    /// Notes a send from `from` to `to`; for a response, returns the API it answers.
    pub fn on_send(
        &mut self,
        from: NodeId,
        to: NodeId,
        id: CorrelationId,
        message: &Message,
    ) -> Option<&'static str> {
        match message {
            Message::Request(r) => {
                self.apis.insert((from, to, id), api(r));
                None
            }
            Message::Response(_) => self.apis.remove(&(to, from, id)),
        }
    }
}

/// A response's variant name: the API it answers, except for the variants that answer
/// several (`PartitionErrors`, `TopicErrors`, `Error`, `MirrorAdmin`).
#[must_use]
pub fn response_api(r: &Response) -> &'static str {
    super::response::variant(r)
}

/// Kafka's name of a request's API.
#[must_use]
pub fn api(r: &Request) -> &'static str {
    use Request as R;
    match r {
        R::RegisterBroker { .. } => "RegisterBroker",
        R::BrokerHeartbeat { .. } => "BrokerHeartbeat",
        R::FetchMetadata { .. } => "FetchMetadata",
        R::AlterPartition { .. } => "AlterPartition",
        R::AllocateProducerIds { .. } => "AllocateProducerIds",
        R::BumpLeaderEpochs { .. } => "BumpLeaderEpochs",
        R::CreateTopics { .. } => "CreateTopics",
        R::DeleteTopics { .. } => "DeleteTopics",
        R::CreatePartitions { .. } => "CreatePartitions",
        R::ElectLeaders { .. } => "ElectLeaders",
        R::IncrementalAlterConfigs { .. } => "IncrementalAlterConfigs",
        R::CreateMirror { .. } => "CreateMirror",
        R::DeleteMirror { .. } => "DeleteMirror",
        R::StartMirrorTopics { .. } => "StartMirrorTopics",
        R::StopMirrorTopics { .. } => "StopMirrorTopics",
        R::PauseMirrorTopics { .. } => "PauseMirrorTopics",
        R::ResumeMirrorTopics { .. } => "ResumeMirrorTopics",
        R::RecoverMirrorTopics { .. } => "RecoverMirrorTopics",
        R::ListMirrors { .. } => "ListMirrors",
        R::TestTruncateLog { .. } => "TestTruncateLog",
        R::CreateAcls { .. } => "CreateAcls",
        R::DeleteAcls { .. } => "DeleteAcls",
        R::DescribeAcls { .. } => "DescribeAcls",
        R::DescribeMirrors { .. } => "DescribeMirrors",
        R::ReadMirrorStates { .. } => "ReadMirrorStates",
        R::WriteMirrorStates { .. } => "WriteMirrorStates",
        R::DescribeTopicConfigs { .. } => "DescribeTopicConfigs",
        R::ListGroups {} => "ListGroups",
        R::Metadata { .. } => "Metadata",
        R::Produce { .. } => "Produce",
        R::Fetch { .. } => "Fetch",
        R::ListOffsets { .. } => "ListOffsets",
        R::DeleteRecords { .. } => "DeleteRecords",
        R::OffsetsForLeaderEpoch { .. } => "OffsetsForLeaderEpoch",
        R::FindCoordinator { .. } => "FindCoordinator",
        R::InitProducerId { .. } => "InitProducerId",
        R::AddPartitionsToTxn { .. } => "AddPartitionsToTxn",
        R::EndTxn { .. } => "EndTxn",
        R::WriteTxnMarkers { .. } => "WriteTxnMarkers",
        R::OffsetCommit { .. } => "OffsetCommit",
        R::OffsetFetch { .. } => "OffsetFetch",
        R::GroupHeartbeat { .. } => "GroupHeartbeat",
        R::LeaveGroup { .. } => "LeaveGroup",
    }
}

// ------------------------------------------------------------------ shared pieces

/// A topic id as the controller builds it (`(cluster + 1) << 64 | n`): `1:3`.
pub(super) struct Id(pub TopicId);

impl Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0.0;
        write!(f, "{}:{}", v >> 64, v & u128::from(u64::MAX))
    }
}

/// A config resource: `topic:orders`, `broker:2`, `mirror:m1`.
pub(super) struct Resource<'a>(pub &'a ConfigResource);

impl Display for Resource<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            ConfigResource::Topic(t) => write!(f, "topic:{t}"),
            ConfigResource::Broker(b) => write!(f, "broker:{b}"),
            ConfigResource::Mirror(m) => write!(f, "mirror:{m}"),
        }
    }
}

/// An optional epoch: the number, or `-` when absent.
pub(super) struct Epoch(pub Option<LeaderEpoch>);

impl Display for Epoch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(e) => write!(f, "{e}"),
            None => f.write_str("-"),
        }
    }
}

/// `[a,b,c]`.
pub(super) struct List<'a, T>(pub &'a [T]);

impl<T: Display> Display for List<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, x) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{x}")?;
        }
        f.write_str("]")
    }
}

/// Brokers: `[1,2]`.
pub(super) fn brokers(out: &mut String, bs: &[BrokerId]) {
    w!(out, "{}", List(bs));
}

/// ` key="text"` when present (quoted: reasons contain spaces).
pub(super) fn text(out: &mut String, key: &str, v: Option<&str>) {
    if let Some(v) = v {
        w!(out, " {key}={v:?}");
    }
}

/// Writes `items` separated by single spaces, each with `item`.
pub(super) fn each<T>(out: &mut String, items: &[T], mut item: impl FnMut(&mut String, &T)) {
    for (i, x) in items.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        item(out, x);
    }
}

#[cfg(test)]
#[path = "message_test.rs"]
mod tests;
