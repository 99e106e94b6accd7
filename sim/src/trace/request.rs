//! One formatter per [`Request`] variant: the API name, then its key fields. Partition
//! fields use Kafka's abbreviations: `off` fetch offset, `cle` current leader epoch, `lfe`
//! LastFetchedEpoch, `le` leader epoch, `se` state epoch, `lme`/`lmo` last mirror
//! epoch/offset, `ls` log start, `be` broker epoch.

use std::fmt::Write as _;

use mirror_core::mirror::MirrorPartitionState;
use mirror_core::protocol::Request;
use mirror_core::protocol::acl::AclBindingFilter;
use mirror_core::protocol::messages::{
    FetchPartition, FetchSessionMeta, MirrorPartitionStateWrite, ReadMirrorStatesTopic, TxnMarker,
    WriteMirrorStatesTopic,
};
use mirror_core::record::RecordBatch;
use mirror_core::types::TopicPartition;

use super::message::{Epoch, Id, List, Resource, api, brokers, each, text, w};

/// Writes `r`'s API and key fields.
pub(super) fn write(out: &mut String, r: &Request) {
    use Request as R;
    out.push_str(api(r));
    match r {
        R::RegisterBroker {
            broker_id,
            incarnation,
        } => w!(out, " broker={broker_id} inc={incarnation}"),
        R::BrokerHeartbeat {
            broker_id,
            broker_epoch,
            metadata_offset,
            want_fence,
        } => w!(
            out,
            " broker={broker_id} be={broker_epoch} meta={metadata_offset}{}",
            if *want_fence { " want_fence" } else { "" }
        ),
        R::FetchMetadata {
            broker_id,
            fetch_offset,
            max_wait_ms,
        } => w!(
            out,
            " broker={broker_id} off={fetch_offset} wait={max_wait_ms}"
        ),
        R::AlterPartition {
            broker_id,
            broker_epoch,
            tp,
            leader_epoch,
            partition_epoch,
            new_isr,
        } => {
            w!(
                out,
                " {tp} broker={broker_id} be={broker_epoch} le={leader_epoch} pe={partition_epoch} isr="
            );
            brokers(out, new_isr);
        }
        R::AllocateProducerIds {
            broker_id,
            broker_epoch,
        } => w!(out, " broker={broker_id} be={broker_epoch}"),
        R::BumpLeaderEpochs { partitions } => {
            for (tp, min) in partitions {
                w!(out, " {tp}(le>{min})");
            }
        }
        R::CreateTopics { topics } => {
            for t in topics {
                w!(
                    out,
                    " {}(p={} rf={}",
                    t.name,
                    t.num_partitions,
                    t.replication_factor
                );
                if let Some(id) = t.topic_id {
                    w!(out, " id={}", Id(id));
                }
                out.push(')');
            }
        }
        R::DeleteTopics { names } => w!(out, " {}", List(names)),
        R::CreatePartitions { topic, count } => w!(out, " {topic} count={count}"),
        R::ElectLeaders {
            partitions,
            unclean,
            test_only_candidate,
        } => {
            w!(out, " {}", List(partitions));
            if *unclean {
                out.push_str(" UNCLEAN");
            }
            if let Some(b) = test_only_candidate {
                w!(out, " test_only_candidate={b}");
            }
        }
        R::IncrementalAlterConfigs { resource, ops } => {
            w!(out, " {}", Resource(resource));
            for (k, v) in ops {
                match v {
                    Some(v) => w!(out, " {k}={v}"),
                    None => w!(out, " -{k}"),
                }
            }
        }
        R::CreateMirror {
            mirror_name,
            configs,
        } => {
            w!(out, " {mirror_name}");
            for (k, v) in configs {
                w!(out, " {k}={v}");
            }
        }
        R::DeleteMirror {
            mirror_name,
            state_validation_offset,
        } => {
            w!(out, " {mirror_name}");
            validation(out, *state_validation_offset);
        }
        R::StartMirrorTopics {
            mirror_name,
            topics,
            include_patterns,
            exclude_patterns,
            state_validation_offset,
        } => {
            w!(out, " {mirror_name}");
            for t in topics {
                w!(
                    out,
                    " {}(id={} p={})",
                    t.name,
                    Id(t.topic_id),
                    t.num_partitions
                );
            }
            if !include_patterns.is_empty() {
                w!(out, " include={}", List(include_patterns));
            }
            if !exclude_patterns.is_empty() {
                w!(out, " exclude={}", List(exclude_patterns));
            }
            validation(out, *state_validation_offset);
        }
        R::StopMirrorTopics {
            mirror_name,
            topics,
            patterns,
            state_validation_offset,
        } => {
            w!(out, " {mirror_name} {}", List(topics));
            if !patterns.is_empty() {
                w!(out, " patterns={}", List(patterns));
            }
            validation(out, *state_validation_offset);
        }
        R::PauseMirrorTopics {
            mirror_name,
            topics,
        }
        | R::ResumeMirrorTopics {
            mirror_name,
            topics,
        }
        | R::RecoverMirrorTopics {
            mirror_name,
            topics,
        } => w!(out, " {mirror_name} {}", List(topics)),
        R::ListGroups {} => {}
        R::ListMirrors { filter } => {
            if let Some(ns) = &filter.mirror_names {
                w!(out, " mirrors={}", List(ns));
            }
            if let Some(ids) = &filter.source_cluster_ids {
                w!(out, " source_ids={}", List(ids));
            }
            if let Some(ds) = &filter.desired_states {
                let names: Vec<String> = ds.iter().map(|d| format!("{d:?}")).collect();
                w!(out, " desired={}", List(&names));
            }
        }
        R::TestTruncateLog { partition, offset } => w!(out, " {partition} to={offset}"),
        R::CreateAcls { creations } => w!(out, " {}", List(creations)),
        R::DeleteAcls { filters } => each_filter(out, filters),
        R::DescribeAcls { filter } => each_filter(out, std::slice::from_ref(filter)),
        R::DescribeMirrors {
            mirror_names,
            cluster_id,
            last_mirror_epoch_lookups,
        } => {
            match mirror_names {
                Some(ns) => w!(out, " mirrors={}", List(ns)),
                None => out.push_str(" mirrors=all"),
            }
            text(out, "cluster", cluster_id.as_deref());
            if !last_mirror_epoch_lookups.is_empty() {
                out.push_str(" lme_lookups=");
                for (id, ps) in last_mirror_epoch_lookups {
                    w!(out, "{}{}", Id(*id), List(ps));
                }
            }
        }
        R::ReadMirrorStates {
            mirror_name,
            topics,
        } => {
            w!(out, " {mirror_name}");
            for t in topics {
                read_topic(out, t);
            }
        }
        R::WriteMirrorStates {
            mirror_name,
            topics,
        } => {
            w!(out, " {mirror_name}");
            for t in topics {
                write_topic(out, t);
            }
        }
        R::DescribeTopicConfigs { topics } => w!(out, " {}", List(topics)),
        R::Metadata { topics } => match topics {
            Some(ts) => w!(out, " {}", List(ts)),
            None => out.push_str(" all"),
        },
        R::Produce {
            transactional_id,
            acks,
            timeout_ms,
            partitions,
        } => {
            w!(out, " acks={acks} timeout={timeout_ms}");
            text(out, "txn", transactional_id.as_deref());
            for (tp, b) in partitions {
                w!(out, " {tp}(");
                produced_batch(out, b);
                out.push(')');
            }
        }
        R::Fetch {
            replica,
            max_wait_ms,
            min_bytes,
            max_bytes,
            isolation,
            partitions,
            session,
            forgotten,
        } => {
            match replica {
                Some((b, e)) => w!(out, " replica={b} be={e}"),
                None => out.push_str(" consumer"),
            }
            w!(
                out,
                " iso={isolation:?} wait={max_wait_ms} min={min_bytes} max={max_bytes}"
            );
            // KIP-227 fields only when a session is used (consumers fetch sessionless).
            if *session != FetchSessionMeta::SESSIONLESS {
                w!(out, " session={}/{}", session.id, session.epoch);
            }
            for p in partitions {
                out.push(' ');
                fetch_partition(out, p);
            }
            for tp in forgotten {
                w!(out, " forget={tp}");
            }
        }
        R::ListOffsets {
            replica_id,
            isolation,
            partitions,
        } => {
            if let Some(b) = replica_id {
                w!(out, " replica={b}");
            }
            w!(out, " iso={isolation:?}");
            for (tp, cle, spec) in partitions {
                w!(out, " {tp}({spec:?} cle={})", Epoch(*cle));
            }
        }
        R::DeleteRecords {
            partitions,
            timeout_ms,
        } => {
            for (tp, before) in partitions {
                w!(out, " {tp}(before={before})");
            }
            w!(out, " timeout={timeout_ms}");
        }
        R::OffsetsForLeaderEpoch { partitions } => {
            for (tp, cle, epoch) in partitions {
                w!(out, " {tp}(cle={} epoch={epoch})", Epoch(*cle));
            }
        }
        R::FindCoordinator { key, kind } => w!(out, " {kind:?} key={key}"),
        R::InitProducerId {
            transactional_id,
            transaction_timeout_ms,
            producer_id,
            producer_epoch,
        } => {
            text(out, "txn", transactional_id.as_deref());
            w!(
                out,
                " pid={producer_id} pe={producer_epoch} timeout={transaction_timeout_ms}"
            );
        }
        R::AddPartitionsToTxn {
            transactional_id,
            producer_id,
            producer_epoch,
            partitions,
        } => w!(
            out,
            " txn={transactional_id} pid={producer_id} pe={producer_epoch} {}",
            List(partitions)
        ),
        R::EndTxn {
            transactional_id,
            producer_id,
            producer_epoch,
            commit,
        } => w!(
            out,
            " txn={transactional_id} pid={producer_id} pe={producer_epoch} {}",
            if *commit { "COMMIT" } else { "ABORT" }
        ),
        R::WriteTxnMarkers { markers } => {
            for m in markers {
                marker(out, m);
            }
        }
        R::OffsetCommit {
            group_id,
            member_id,
            offsets,
        } => {
            w!(out, " group={group_id}");
            text(out, "member", member_id.as_deref());
            for (tp, o, e) in offsets {
                w!(out, " {tp}@{o}(le={})", Epoch(*e));
            }
        }
        R::OffsetFetch {
            group_id,
            partitions,
        } => {
            w!(out, " group={group_id}");
            match partitions {
                Some(ps) => w!(out, " {}", List(ps)),
                None => out.push_str(" all"),
            }
        }
        R::GroupHeartbeat {
            group_id,
            member_id,
            session_timeout_ms,
        } => w!(
            out,
            " group={group_id} member={member_id} session={session_timeout_ms}"
        ),
        R::LeaveGroup {
            group_id,
            member_id,
        } => w!(out, " group={group_id} member={member_id}"),
    }
}

fn validation(out: &mut String, offset: Option<i64>) {
    if let Some(o) = offset {
        w!(out, " validated@{o}");
    }
}

fn fetch_partition(out: &mut String, p: &FetchPartition) {
    w!(
        out,
        "{}(off={} cle={} lfe={} ls={}",
        p.tp,
        p.fetch_offset,
        Epoch(p.current_leader_epoch),
        Epoch(p.last_fetched_epoch),
        p.log_start_offset
    );
    if let Some(id) = p.topic_id {
        w!(out, " id={}", Id(id));
    }
    out.push(')');
}

/// A produced batch: its producer fields and size (offsets are assigned by the leader).
fn produced_batch(out: &mut String, b: &RecordBatch) {
    w!(out, "n={}", b.record_count());
    if b.producer_id().0 >= 0 {
        w!(
            out,
            " pid={} pe={} seq={}",
            b.producer_id(),
            b.producer_epoch(),
            b.base_sequence()
        );
    }
    if b.is_transactional() {
        out.push_str(" txn");
    }
}

fn read_topic(out: &mut String, t: &ReadMirrorStatesTopic) {
    out.push(' ');
    let tps: Vec<TopicPartition> = t
        .partitions
        .iter()
        .map(|p| TopicPartition::new(t.name.as_str(), *p))
        .collect();
    each(out, &tps, |out, tp| w!(out, "{tp}"));
    w!(out, " id={}", Id(t.topic_id));
}

fn write_topic(out: &mut String, t: &WriteMirrorStatesTopic) {
    for p in &t.partitions {
        w!(out, " {}-{}(", t.name, p.partition);
        state_write(out, p);
        out.push(')');
    }
    w!(out, " id={}", Id(t.topic_id));
}

fn state_write(out: &mut String, p: &MirrorPartitionStateWrite) {
    match MirrorPartitionState::from_value(p.state) {
        // UNKNOWN writes only the last mirror epoch (the failback marker).
        Some(MirrorPartitionState::Unknown) | None => out.push_str("lme-only"),
        Some(s) => w!(out, "→{s}"),
    }
    w!(out, " le={}", Epoch(p.leader_epoch));
    match p.state_epoch {
        Some(se) => w!(out, " se={se}"),
        None => out.push_str(" se=-"),
    }
    if p.last_mirror_epoch.is_some() || p.last_mirror_offset.is_some() {
        w!(out, " lme={}", Epoch(p.last_mirror_epoch));
        match p.last_mirror_offset {
            Some(o) => w!(out, " lmo={o}"),
            None => out.push_str(" lmo=-"),
        }
    }
    if let Some(prev) = MirrorPartitionState::from_value(p.previous_state) {
        w!(out, " prev={prev}");
    }
    if p.retry_attempt != 0 {
        w!(out, " retry={}", p.retry_attempt);
    }
    text(out, "reason", p.error_message.as_deref());
}

fn marker(out: &mut String, m: &TxnMarker) {
    w!(
        out,
        " {}(pid={} pe={} ce={}) {}",
        if m.commit { "COMMIT" } else { "ABORT" },
        m.producer_id,
        m.producer_epoch,
        m.coordinator_epoch,
        List(&m.partitions)
    );
}

fn each_filter(out: &mut String, filters: &[AclBindingFilter]) {
    for f in filters {
        out.push_str(" filter(");
        let mut parts: Vec<String> = Vec::new();
        if let Some(t) = f.resource_type {
            parts.push(format!("type={t:?}"));
        }
        if let Some(n) = &f.name {
            parts.push(format!("name={n}"));
        }
        parts.push(format!("pattern={:?}", f.pattern_type));
        if let Some(p) = &f.principal {
            parts.push(format!("principal={p}"));
        }
        if let Some(h) = &f.host {
            parts.push(format!("host={h}"));
        }
        if let Some(o) = f.operation {
            parts.push(format!("op={o:?}"));
        }
        if let Some(p) = f.permission_type {
            parts.push(format!("perm={p:?}"));
        }
        each(out, &parts, |out, s| out.push_str(s));
        out.push(')');
    }
}
