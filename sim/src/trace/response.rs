//! One formatter per [`Response`] variant: the variant name (and the API it answers, when
//! known: `PartitionErrors` answers several), then its key fields, error codes first.
//! Abbreviations as in [`request`](super::request), plus `hw` high watermark, `lso` last
//! stable offset, `div` DivergingEpoch (`end@epoch`), `src`/`dst` the source HW and the
//! destination LEO a mirror reports.

use std::fmt::Write as _;

use mirror_core::mirror::MirrorPartitionState;
use mirror_core::protocol::Response;
use mirror_core::protocol::messages::{
    FetchPartitionResponse, MirrorDescription, MirrorPartitionStateData,
    ReadMirrorStatesTopicResult, TopicMetadata,
};
use mirror_core::protocol::metadata::MetadataRecord;
use mirror_core::record::{ControlRecord, RecordBatch};

use super::message::{Epoch, Id, List, Resource, brokers, each, text, w};

/// Batches listed one by one in a fetch response; the rest are counted.
const BATCHES_SHOWN: usize = 4;
/// Metadata records listed one by one in a metadata fetch; the rest are counted.
const RECORDS_SHOWN: usize = 8;

/// Writes `r`'s variant, the API it answers (if known) and its key fields.
pub(super) fn write(out: &mut String, r: &Response, answers: Option<&'static str>) {
    use Response as R;
    let name = variant(r);
    match answers {
        Some(a) if a != name => w!(out, "{name}({a})"),
        _ => out.push_str(name),
    }
    match r {
        R::RegisterBroker {
            error,
            broker_epoch,
        } => w!(out, " {error} be={broker_epoch}"),
        R::BrokerHeartbeat { error, is_fenced } => {
            w!(out, " {error}{}", if *is_fenced { " fenced" } else { "" });
        }
        R::FetchMetadata {
            error,
            records,
            end_offset,
        } => {
            w!(out, " {error} end={end_offset} records={}", records.len());
            for (o, rec) in records.iter().take(RECORDS_SHOWN) {
                w!(out, " {o}:");
                metadata_record(out, rec);
            }
            if records.len() > RECORDS_SHOWN {
                w!(out, " …+{}", records.len() - RECORDS_SHOWN);
            }
        }
        R::AlterPartition {
            tp,
            error,
            isr,
            leader_epoch,
            partition_epoch,
        } => {
            w!(
                out,
                " {tp} {error} le={leader_epoch} pe={partition_epoch} isr="
            );
            brokers(out, isr);
        }
        R::AllocateProducerIds {
            error,
            first_producer_id,
            count,
        } => w!(out, " {error} first={first_producer_id} count={count}"),
        R::PartitionErrors { results } => {
            for (tp, e) in results {
                w!(out, " {tp}:{e}");
            }
        }
        R::TopicErrors { results } => {
            for (t, e, id) in results {
                w!(out, " {t}:{e} id={}", Id(*id));
            }
        }
        R::Metadata {
            brokers: bs,
            topics,
        } => {
            out.push_str(" brokers=");
            brokers(out, bs);
            for t in topics {
                topic_metadata(out, t);
            }
        }
        R::Produce { partitions } => {
            for p in partitions {
                w!(
                    out,
                    " {}({} base={} ls={})",
                    p.tp,
                    p.error,
                    p.base_offset,
                    p.log_start_offset
                );
            }
        }
        R::Fetch {
            error,
            session_id,
            partitions,
        } => {
            w!(out, " {error}");
            if *session_id != 0 {
                w!(out, " session={session_id}");
            }
            for p in partitions {
                out.push(' ');
                fetch_partition(out, p);
            }
        }
        R::ListOffsets { partitions } => {
            for p in partitions {
                let (tp, e, o, le) = (&p.tp, p.error, p.offset, p.leader_epoch);
                // The timestamp only when there is one (a timestamp or MAX_TIMESTAMP lookup),
                // so EARLIEST / LATEST answers print as they always did.
                if p.timestamp == -1 {
                    w!(out, " {tp}({e} off={o} le={le})");
                } else {
                    w!(out, " {tp}({e} ts={} off={o} le={le})", p.timestamp);
                }
            }
        }
        R::DeleteRecords { partitions } => {
            for (tp, e, low) in partitions {
                w!(out, " {tp}({e} low={low})");
            }
        }
        R::OffsetsForLeaderEpoch { partitions } => {
            for (tp, e, oe) in partitions {
                w!(out, " {tp}({e} end={}@{})", oe.offset, oe.leader_epoch);
            }
        }
        R::FindCoordinator { error, node } => match node {
            Some(n) => w!(out, " {error} node={n}"),
            None => w!(out, " {error} node=-"),
        },
        R::InitProducerId {
            error,
            producer_id,
            producer_epoch,
        } => w!(out, " {error} pid={producer_id} pe={producer_epoch}"),
        R::Error { error } => w!(out, " {error}"),
        R::OffsetFetch { error, offsets } => {
            w!(out, " {error}");
            for (tp, (o, le)) in offsets {
                w!(out, " {tp}@{o}(le={})", Epoch(*le));
            }
        }
        R::MirrorAdmin {
            error,
            message,
            topics,
        } => {
            w!(out, " {error}");
            text(out, "msg", message.as_deref());
            for t in topics {
                w!(out, " {}({}", t.name, t.error);
                text(out, "msg", t.message.as_deref());
                out.push(')');
            }
        }
        R::ListMirrors { error, mirrors } => {
            w!(out, " {error}");
            for m in mirrors {
                w!(out, " {}(src={}", m.mirror_name, m.source);
                text(out, "src_id", m.source_cluster_id.as_deref());
                for (t, d) in &m.topics {
                    w!(out, " {t}:{d:?}");
                }
                out.push(')');
            }
        }
        R::DescribeMirrors { mirrors } => {
            for m in mirrors {
                describe_mirror(out, m);
            }
        }
        R::ReadMirrorStates { error, topics } => {
            w!(out, " {error}");
            for t in topics {
                read_topic(out, t);
            }
        }
        R::WriteMirrorStates { error, topics } => {
            w!(out, " {error}");
            for t in topics {
                if !t.error.is_ok() || t.message.is_some() {
                    w!(out, " {}:{}", t.name, t.error);
                    text(out, "msg", t.message.as_deref());
                }
                for (p, e, se) in &t.partitions {
                    w!(out, " {}-{p}({e} se={se})", t.name);
                }
            }
        }
        R::DescribeTopicConfigs { topics } => {
            for (t, e, cs) in topics {
                w!(out, " {t}({e}");
                for (k, v) in cs {
                    w!(out, " {k}={v}");
                }
                out.push(')');
            }
        }
        R::ListGroups { groups } => w!(out, " {}", List(groups)),
        R::CreateAcls { results } => {
            for (e, m) in results {
                w!(out, " {e}");
                text(out, "msg", m.as_deref());
            }
        }
        R::DeleteAcls { results } => {
            for f in results {
                w!(out, " {}", f.error);
                text(out, "msg", f.message.as_deref());
                w!(out, " deleted={}", List(&f.matching));
            }
        }
        R::DescribeAcls { error, acls } => w!(out, " {error} {}", List(acls)),
    }
}

/// The variant's name.
pub(super) fn variant(r: &Response) -> &'static str {
    use Response as R;
    match r {
        R::RegisterBroker { .. } => "RegisterBroker",
        R::BrokerHeartbeat { .. } => "BrokerHeartbeat",
        R::FetchMetadata { .. } => "FetchMetadata",
        R::AlterPartition { .. } => "AlterPartition",
        R::AllocateProducerIds { .. } => "AllocateProducerIds",
        R::PartitionErrors { .. } => "PartitionErrors",
        R::TopicErrors { .. } => "TopicErrors",
        R::Metadata { .. } => "Metadata",
        R::Produce { .. } => "Produce",
        R::Fetch { .. } => "Fetch",
        R::ListOffsets { .. } => "ListOffsets",
        R::DeleteRecords { .. } => "DeleteRecords",
        R::OffsetsForLeaderEpoch { .. } => "OffsetsForLeaderEpoch",
        R::FindCoordinator { .. } => "FindCoordinator",
        R::InitProducerId { .. } => "InitProducerId",
        R::Error { .. } => "Error",
        R::OffsetFetch { .. } => "OffsetFetch",
        R::MirrorAdmin { .. } => "MirrorAdmin",
        R::ListMirrors { .. } => "ListMirrors",
        R::DescribeMirrors { .. } => "DescribeMirrors",
        R::ReadMirrorStates { .. } => "ReadMirrorStates",
        R::WriteMirrorStates { .. } => "WriteMirrorStates",
        R::DescribeTopicConfigs { .. } => "DescribeTopicConfigs",
        R::ListGroups { .. } => "ListGroups",
        R::CreateAcls { .. } => "CreateAcls",
        R::DeleteAcls { .. } => "DeleteAcls",
        R::DescribeAcls { .. } => "DescribeAcls",
    }
}

fn fetch_partition(out: &mut String, p: &FetchPartitionResponse) {
    w!(
        out,
        "{}({} hw={} lso={} ls={}",
        p.tp,
        p.error,
        p.high_watermark,
        p.last_stable_offset,
        p.log_start_offset
    );
    if let Some(d) = p.diverging_epoch {
        w!(out, " div={}@{}", d.offset, d.leader_epoch);
    }
    if let Some(a) = &p.aborted_transactions
        && !a.is_empty()
    {
        out.push_str(" aborted=");
        each(out, a, |out, t| {
            w!(
                out,
                "{}:{}..{}",
                t.producer_id,
                t.first_offset,
                t.last_offset
            );
        });
    }
    if !p.batches.is_empty() {
        out.push_str(" batches=[");
        for (i, b) in p.batches.iter().take(BATCHES_SHOWN).enumerate() {
            if i > 0 {
                out.push(',');
            }
            batch(out, b);
        }
        if p.batches.len() > BATCHES_SHOWN {
            w!(out, ",…+{}", p.batches.len() - BATCHES_SHOWN);
        }
        out.push(']');
    }
    out.push(')');
}

/// A fetched batch: `12..=15@3`, with its kind when it is not plain data.
fn batch(out: &mut String, b: &RecordBatch) {
    w!(
        out,
        "{}..={}@{}",
        b.base_offset(),
        b.last_offset(),
        b.partition_leader_epoch()
    );
    match b.control_record() {
        Some(ControlRecord::EndTxn { commit: true, .. }) => out.push_str(" commit"),
        Some(ControlRecord::EndTxn { commit: false, .. }) => out.push_str(" abort"),
        Some(ControlRecord::MirrorPidReset) => out.push_str(" pid_reset"),
        Some(ControlRecord::Other(t)) => w!(out, " control{t}"),
        None if b.is_transactional() => out.push_str(" txn"),
        None => {}
    }
}

fn topic_metadata(out: &mut String, t: &TopicMetadata) {
    w!(out, " {}({} id={}", t.name, t.error, Id(t.topic_id));
    for p in &t.partitions {
        match p.leader {
            Some(l) => w!(out, " p{}:l={l}", p.partition),
            None => w!(out, " p{}:l=-", p.partition),
        }
        w!(out, " le={} isr=", p.leader_epoch);
        brokers(out, &p.isr);
    }
    out.push(')');
}

fn describe_mirror(out: &mut String, m: &MirrorDescription) {
    w!(out, " {}({} src={}", m.mirror_name, m.error, m.source);
    for t in &m.topics {
        if let Some(d) = t.desired {
            w!(out, " {}:{d:?}", t.name);
        }
        for p in &t.partitions {
            w!(
                out,
                " {}-{}({} lme={} lmo={} src={} dst={}",
                t.name,
                p.partition,
                p.state,
                p.last_mirror_epoch,
                p.last_mirror_offset,
                p.source_offset,
                p.destination_offset
            );
            if p.retry_attempt != 0 {
                w!(out, " retry={}", p.retry_attempt);
            }
            text(out, "reason", p.error_message.as_deref());
            out.push(')');
        }
    }
    out.push(')');
}

fn read_topic(out: &mut String, t: &ReadMirrorStatesTopicResult) {
    if !t.error.is_ok() || t.message.is_some() {
        w!(out, " {}:{}", t.name, t.error);
        text(out, "msg", t.message.as_deref());
    }
    for p in &t.partitions {
        w!(out, " {}-{}(", t.name, p.partition);
        state_data(out, p);
        out.push(')');
    }
}

fn state_data(out: &mut String, p: &MirrorPartitionStateData) {
    let state = MirrorPartitionState::from_value(p.state).unwrap_or(MirrorPartitionState::Unknown);
    w!(
        out,
        "{} {state} le={} se={}",
        p.error,
        Epoch(p.leader_epoch),
        p.state_epoch
    );
    if p.last_mirror_epoch.is_some() || p.last_mirror_offset.is_some() {
        w!(out, " lme={}", Epoch(p.last_mirror_epoch));
        match p.last_mirror_offset {
            Some(o) => w!(out, " lmo={o}"),
            None => out.push_str(" lmo=-"),
        }
    }
    if let Some(prev) = MirrorPartitionState::from_value(p.previous_state)
        && prev != MirrorPartitionState::Unknown
    {
        w!(out, " prev={prev}");
    }
    if p.retry_attempt != 0 {
        w!(out, " retry={}", p.retry_attempt);
    }
    text(out, "reason", p.error_message.as_deref());
}

/// A metadata record, briefly: what a reader of a failover needs (leaders, ISR, epochs).
fn metadata_record(out: &mut String, r: &MetadataRecord) {
    use MetadataRecord as M;
    match r {
        M::RegisterBroker {
            broker_id,
            broker_epoch,
        } => w!(out, "RegisterBroker({broker_id} be={broker_epoch})"),
        M::BrokerFencing { broker_id, fenced } => w!(
            out,
            "{}({broker_id})",
            if *fenced { "Fence" } else { "Unfence" }
        ),
        M::Topic { name, topic_id } => w!(out, "Topic({name} id={})", Id(*topic_id)),
        M::Partition {
            topic_id,
            partition,
            registration: g,
        }
        | M::PartitionChange {
            topic_id,
            partition,
            registration: g,
            ..
        } => {
            let kind = if matches!(r, M::Partition { .. }) {
                "Partition"
            } else {
                "PartitionChange"
            };
            match g.leader {
                Some(l) => w!(out, "{kind}({}/{partition} l={l}", Id(*topic_id)),
                None => w!(out, "{kind}({}/{partition} l=-", Id(*topic_id)),
            }
            w!(
                out,
                " le={} pe={} isr={}",
                g.leader_epoch,
                g.partition_epoch,
                List(&g.isr)
            );
            if let M::PartitionChange {
                min_leader_epoch: Some(m),
                ..
            } = r
            {
                w!(out, " min_le={m}");
            }
            if g.leader_recovering {
                out.push_str(" recovering");
            }
            out.push(')');
        }
        M::RemoveTopic { topic_id } => w!(out, "RemoveTopic({})", Id(*topic_id)),
        M::Config {
            resource,
            name,
            value,
        } => match value {
            Some(v) => w!(out, "Config({} {name}={v})", Resource(resource)),
            None => w!(out, "Config({} -{name})", Resource(resource)),
        },
        M::ProducerIds {
            broker_id,
            next_producer_id,
        } => w!(out, "ProducerIds({broker_id} next={next_producer_id})"),
        M::AccessControlEntry { binding, .. } => w!(out, "Acl({binding})"),
        M::RemoveAccessControlEntry { id } => w!(out, "RemoveAcl({id})"),
    }
}
