//! KIP-1279 metadata sync end to end (spec kip1279.md A.1 "Metadata sync", B §8.10, §8.11):
//! the mirror coordinator copies topic configs (minus the exclude list), consumer group
//! offsets (clamped to the destination log, skipped for groups active on the destination,
//! never after STOPPED), new source partitions, and the TOPIC ACLs of MIRRORING topics.

use mirror_core::broker::coordinator_runtime::{
    CONSUMER_OFFSETS_TOPIC, COORDINATOR_TOPIC_PARTITIONS,
};
use mirror_core::coordinator::coordinator_partition;
use mirror_core::mirror::MirrorPartitionState as S;
use mirror_core::protocol::acl::{
    AclBinding, AclBindingFilter, AclOperation, AclPermissionType, AclResourceType, PatternType,
};
use mirror_core::protocol::metadata::ConfigResource;
use mirror_core::protocol::{ClusterIdx, ErrorCode, Request, Response};
use mirror_core::record::{BatchBuilder, RecordBatch, SimpleRecord};
use mirror_core::types::{LeaderEpoch, Offset, TopicPartition};
use mirror_sim::kafka::{ClusterSpec, KafkaWorld, KafkaWorldSpec};
use mirror_sim::net::NetConfig;
use mirror_sim::scenario::inspect::topic_config;
use mirror_sim::world::run_seed;

const SRC: ClusterIdx = ClusterIdx(0);
const DST: ClusterIdx = ClusterIdx(1);
/// Short sync period for the tests (B §5.1: tests use 5000).
const REFRESH: (&str, &str) = ("mirror.metadata.refresh.interval.ms", "5000");

fn spec() -> KafkaWorldSpec {
    KafkaWorldSpec {
        clusters: vec![ClusterSpec::new("src", 3), ClusterSpec::new("dst", 3)],
        net: NetConfig::default(),
    }
}

async fn produce(
    w: &KafkaWorld,
    cluster: ClusterIdx,
    tp: &TopicPartition,
    n: usize,
    tag: &str,
) -> ErrorCode {
    let Some(leader) = w.leader(cluster, tp) else {
        return ErrorCode::LeaderNotAvailable;
    };
    let recs: Vec<SimpleRecord> = (0..n)
        .map(|i| SimpleRecord::value(i as i64, format!("{tag}-{i}")))
        .collect();
    let req = Request::Produce {
        transactional_id: None,
        acks: -1,
        timeout_ms: 10_000,
        partitions: vec![(tp.clone(), BatchBuilder::new().build(&recs))],
    };
    match w.request_to(cluster, leader, req).await {
        Some(Response::Produce { partitions }) => partitions[0].error,
        _ => ErrorCode::RequestTimedOut,
    }
}

async fn commit(
    w: &KafkaWorld,
    cluster: ClusterIdx,
    group: &str,
    member: Option<&str>,
    tp: &TopicPartition,
    offset: Offset,
    epoch: Option<LeaderEpoch>,
) -> ErrorCode {
    let req = Request::OffsetCommit {
        group_id: group.into(),
        member_id: member.map(str::to_string),
        offsets: vec![(tp.clone(), offset, epoch)],
    };
    match w.group_request(cluster, group, req).await {
        Some(Response::PartitionErrors { results }) => results[0].1,
        Some(Response::Error { error }) => error,
        _ => ErrorCode::RequestTimedOut,
    }
}

/// The committed offset as the group's coordinator holds it.
fn committed(
    w: &KafkaWorld,
    cluster: ClusterIdx,
    group: &str,
    tp: &TopicPartition,
) -> Option<(Offset, Option<LeaderEpoch>)> {
    let p = coordinator_partition(group, COORDINATOR_TOPIC_PARTITIONS);
    let leader = w.leader(cluster, &TopicPartition::new(CONSUMER_OFFSETS_TOPIC, p))?;
    w.with_broker(cluster, leader, |b| {
        b.coordinators()
            .group_coordinator(p)
            .and_then(|g| g.committed(group, tp))
            .map(|c| (c.offset, c.leader_epoch))
    })
    .flatten()
}

fn leader_log(w: &KafkaWorld, cluster: ClusterIdx, tp: &TopicPartition) -> Vec<RecordBatch> {
    let Some(l) = w.leader(cluster, tp) else {
        return Vec::new();
    };
    w.with_broker(cluster, l, |b| {
        b.partition(tp)
            .map(|p| p.log.batches().cloned().collect())
            .unwrap_or_default()
    })
    .unwrap_or_default()
}

fn epoch_for_offset(
    w: &KafkaWorld,
    cluster: ClusterIdx,
    tp: &TopicPartition,
    o: Offset,
) -> Option<LeaderEpoch> {
    let l = w.leader(cluster, tp)?;
    w.with_broker(cluster, l, |b| {
        b.partition(tp)
            .and_then(|p| p.log.epoch_cache().epoch_for_offset(o))
    })
    .flatten()
}

/// Creates `topic` on the source with 20 records and mirrors it to the destination.
async fn mirrored_topic(w: &KafkaWorld, topic: &str, extra: &[(&str, &str)]) {
    w.run_for_ms(3_000).await;
    let tp = TopicPartition::new(topic, 0);
    assert_eq!(w.create_topic(SRC, topic, 1, 3, &[]).await, ErrorCode::None);
    for i in 0..5 {
        assert_eq!(
            produce(w, SRC, &tp, 4, &format!("a{i}")).await,
            ErrorCode::None
        );
    }
    let mut configs = vec![REFRESH];
    configs.extend_from_slice(extra);
    assert_eq!(
        w.create_mirror_with(DST, "m1", SRC, &configs).await,
        ErrorCode::None
    );
    assert_eq!(
        w.start_mirror_topics(DST, "m1", SRC, &[topic]).await,
        ErrorCode::None
    );
    let mirrored = w
        .wait_until(60_000, |w| {
            w.mirror_state(DST, &tp) == Some(S::Mirroring) && leader_log(w, DST, &tp).len() == 5
        })
        .await;
    assert!(mirrored, "state {:?}", w.mirror_state(DST, &tp));
}

#[test]
fn topic_configs_are_synced_except_excluded_keys() {
    let out = run_seed(31, || async {
        let w = KafkaWorld::start(spec());
        mirrored_topic(&w, "orders", &[]).await;
        let req = Request::IncrementalAlterConfigs {
            resource: ConfigResource::Topic("orders".into()),
            ops: vec![
                ("retention.bytes".into(), Some("1048576".into())),
                ("cleanup.policy".into(), Some("delete".into())),
                // Excluded by default (B §5.2).
                ("min.insync.replicas".into(), Some("2".into())),
                ("unclean.leader.election.enable".into(), Some("true".into())),
            ],
        };
        assert!(matches!(
            w.admin(SRC, req).await,
            Some(Response::TopicErrors { results }) if results[0].1 == ErrorCode::None
        ));
        let synced = w
            .wait_until(30_000, |w| {
                topic_config(w, DST, "orders", "retention.bytes").as_deref() == Some("1048576")
                    && topic_config(w, DST, "orders", "cleanup.policy").as_deref() == Some("delete")
            })
            .await;
        assert!(synced, "source configs reach the destination");
        // Two more rounds: the excluded keys never arrive, mirror.name is untouched.
        w.run_for_ms(12_000).await;
        assert_eq!(topic_config(&w, DST, "orders", "min.insync.replicas"), None);
        assert_eq!(
            topic_config(&w, DST, "orders", "unclean.leader.election.enable"),
            None
        );
        assert_eq!(
            topic_config(&w, DST, "orders", "mirror.name").as_deref(),
            Some("m1")
        );
        // A later source change follows.
        let req = Request::IncrementalAlterConfigs {
            resource: ConfigResource::Topic("orders".into()),
            ops: vec![("retention.bytes".into(), Some("2097152".into()))],
        };
        assert!(w.admin(SRC, req).await.is_some());
        assert!(
            w.wait_until(30_000, |w| topic_config(
                w,
                DST,
                "orders",
                "retention.bytes"
            )
            .as_deref()
                == Some("2097152"))
                .await
        );
        let lines = w.world.trace_lines();
        (w.finish(), lines)
    })
    .unwrap();
    assert_eq!(out.0, None, "no invariant broke");
    assert!(
        out.1
            .iter()
            .any(|l| l.contains("mirror m1 sync configs") && l.contains("retention.bytes=1048576")),
        "the sync is traced"
    );
}

#[test]
fn group_offsets_are_clamped_skip_active_groups_and_stop_at_stopped() {
    let out = run_seed(32, || async {
        let w = KafkaWorld::start(spec());
        mirrored_topic(&w, "orders", &[]).await;
        let tp = TopicPartition::new("orders", 0);
        let src_epoch = epoch_for_offset(&w, SRC, &tp, Offset(11));
        assert!(src_epoch.is_some());
        // Inside the destination log: synced as is, with the source's epoch.
        assert_eq!(
            commit(&w, SRC, "g-in", None, &tp, Offset(12), src_epoch).await,
            ErrorCode::None
        );
        // Ahead of the destination (a commit is not validated against the log): clamped.
        assert_eq!(
            commit(&w, SRC, "g-ahead", None, &tp, Offset(1000), src_epoch).await,
            ErrorCode::None
        );
        // Active on the destination: a live member, its own commit.
        let hb = Request::GroupHeartbeat {
            group_id: "g-active".into(),
            member_id: "member-1".into(),
            session_timeout_ms: 600_000,
        };
        assert!(matches!(
            w.group_request(DST, "g-active", hb).await,
            Some(Response::Error {
                error: ErrorCode::None
            })
        ));
        assert_eq!(
            commit(&w, DST, "g-active", Some("member-1"), &tp, Offset(3), None).await,
            ErrorCode::None
        );
        assert_eq!(
            commit(&w, SRC, "g-active", None, &tp, Offset(15), src_epoch).await,
            ErrorCode::None
        );
        let synced = w
            .wait_until(30_000, |w| {
                committed(w, DST, "g-in", &tp).is_some()
                    && committed(w, DST, "g-ahead", &tp).is_some()
            })
            .await;
        assert!(synced, "offsets reach the destination");
        assert_eq!(
            committed(&w, DST, "g-in", &tp),
            Some((Offset(12), src_epoch))
        );
        let dst_leo = w
            .replica_offsets(DST, w.leader(DST, &tp).unwrap(), &tp)
            .unwrap()
            .0;
        assert_eq!(dst_leo, Offset(20));
        assert_eq!(
            committed(&w, DST, "g-ahead", &tp),
            Some((dst_leo, epoch_for_offset(&w, DST, &tp, dst_leo))),
            "clamped to the destination LEO with the LEO's epoch"
        );
        w.run_for_ms(12_000).await;
        assert_eq!(
            committed(&w, DST, "g-active", &tp),
            Some((Offset(3), None)),
            "a group active on the destination is not overwritten"
        );
        // Failover: once STOPPED no sync rewrites destination offsets.
        assert_eq!(
            w.stop_mirror_topics(DST, "m1", &["orders"]).await,
            ErrorCode::None
        );
        assert!(
            w.wait_until(60_000, |w| w.mirror_state(DST, &tp) == Some(S::Stopped))
                .await
        );
        assert_eq!(
            commit(&w, SRC, "g-in", None, &tp, Offset(18), src_epoch).await,
            ErrorCode::None
        );
        w.run_for_ms(20_000).await;
        assert_eq!(
            committed(&w, DST, "g-in", &tp),
            Some((Offset(12), src_epoch)),
            "not synced after STOPPED"
        );
        let lines = w.world.trace_lines();
        (w.finish(), lines)
    })
    .unwrap();
    assert_eq!(out.0, None, "no invariant broke");
    assert!(
        out.1.iter().any(|l| l.contains("g-active")
            && l.contains("mirror m1 sync offsets")
            && l.contains("UNKNOWN_MEMBER_ID")),
        "the skipped active group is visible (MM3)"
    );
}

#[test]
fn new_source_partitions_are_created_and_mirrored_from_zero() {
    let out = run_seed(33, || async {
        let w = KafkaWorld::start(spec());
        mirrored_topic(&w, "events", &[]).await;
        // Read-only: the destination refuses CreatePartitions while mirroring.
        let grow = |count| Request::CreatePartitions {
            topic: "events".into(),
            count,
        };
        assert!(matches!(
            w.admin(DST, grow(3)).await,
            Some(Response::TopicErrors { results }) if results[0].1 == ErrorCode::InvalidMirrorState
        ));
        assert!(matches!(
            w.admin(SRC, grow(2)).await,
            Some(Response::TopicErrors { results }) if results[0].1 == ErrorCode::None
        ));
        let tp1 = TopicPartition::new("events", 1);
        assert!(
            w.wait_until(30_000, |w| w.leader(SRC, &tp1).is_some())
                .await
        );
        for i in 0..2 {
            assert_eq!(
                produce(&w, SRC, &tp1, 3, &format!("n{i}")).await,
                ErrorCode::None
            );
        }
        let mirrored = w
            .wait_until(90_000, |w| {
                w.mirror_state(DST, &tp1) == Some(S::Mirroring)
                    && leader_log(w, DST, &tp1).len() == 2
            })
            .await;
        assert!(
            mirrored,
            "state {:?} leader {:?}",
            w.mirror_state(DST, &tp1),
            w.leader(DST, &tp1)
        );
        let dst = leader_log(&w, DST, &tp1);
        assert_eq!(dst[0].base_offset(), Offset(0), "mirrored from offset 0");
        assert_eq!(dst, leader_log(&w, SRC, &tp1), "byte-identical");
        // The original partition keeps mirroring.
        let tp0 = TopicPartition::new("events", 0);
        assert_eq!(produce(&w, SRC, &tp0, 2, "z").await, ErrorCode::None);
        assert!(
            w.wait_until(30_000, |w| leader_log(w, DST, &tp0)
                == leader_log(w, SRC, &tp0))
                .await
        );
        let lines = w.world.trace_lines();
        (w.finish(), lines)
    })
    .unwrap();
    assert_eq!(out.0, None, "no invariant broke");
    assert!(
        out.1
            .iter()
            .any(|l| l.contains("mirror m1 sync partitions → 2: NONE")),
        "grown by the sync"
    );
}

// ------------------------------------------------------------------ ACLs (B §8.11, S30)

fn topic_acl(name: &str, pattern: PatternType, principal: &str, op: AclOperation) -> AclBinding {
    AclBinding::new(
        AclResourceType::Topic,
        name,
        pattern,
        principal,
        op,
        AclPermissionType::Allow,
    )
}

#[test]
fn acls_of_mirroring_topics_are_synced_deleted_with_the_source_and_frozen_after_stop() {
    // Goal: A.1 "Metadata sync ... ACLs" with the rules of `acl_sync`: TOPIC ACLs that apply
    // to a MIRRORING topic reach the destination within a refresh interval; ACLs of other
    // topics and resources do not; an ACL deleted on the source is deleted on the
    // destination while the topic mirrors (prototype); after STOPPED nothing is synced or
    // deleted any more (A.1: only MIRRORING partitions).
    let out = run_seed(34, || async {
        let w = KafkaWorld::start(spec());
        mirrored_topic(&w, "orders", &[]).await;
        assert_eq!(
            w.create_topic(SRC, "payments", 1, 3, &[]).await,
            ErrorCode::None
        );
        let literal = topic_acl(
            "orders",
            PatternType::Literal,
            "User:alice",
            AclOperation::Read,
        );
        let prefixed = topic_acl(
            "ord",
            PatternType::Prefixed,
            "User:bob",
            AclOperation::Write,
        );
        let other_topic = topic_acl(
            "payments",
            PatternType::Literal,
            "User:alice",
            AclOperation::Read,
        );
        let group = AclBinding::new(
            AclResourceType::Group,
            "orders",
            PatternType::Literal,
            "User:alice",
            AclOperation::Read,
            AclPermissionType::Allow,
        );
        let created = w
            .create_acls(
                SRC,
                vec![
                    literal.clone(),
                    prefixed.clone(),
                    other_topic.clone(),
                    group.clone(),
                ],
            )
            .await;
        assert_eq!(created, Some(vec![ErrorCode::None; 4]));
        let synced = w
            .wait_until(15_000, |w| {
                let dst = w.controller_acls(DST);
                dst.contains(&literal) && dst.contains(&prefixed)
            })
            .await;
        assert!(synced, "destination ACLs {:?}", w.controller_acls(DST));
        // Two more rounds: the other topic's and the group's ACLs never arrive.
        w.run_for_ms(12_000).await;
        let mut want = vec![literal.clone(), prefixed.clone()];
        want.sort();
        assert_eq!(w.controller_acls(DST), want);
        // DescribeAcls at a destination broker shows the same.
        assert_eq!(
            w.describe_acls(DST, AclBindingFilter::any()).await,
            Some(want)
        );
        // Deleted on the source while mirroring → deleted on the destination.
        let removed = w
            .delete_acls(SRC, vec![AclBindingFilter::exact(&literal)])
            .await
            .expect("answered");
        assert_eq!(removed[0].matching, vec![literal.clone()]);
        let gone = w
            .wait_until(15_000, |w| !w.controller_acls(DST).contains(&literal))
            .await;
        assert!(gone, "destination ACLs {:?}", w.controller_acls(DST));
        assert_eq!(w.controller_acls(DST), vec![prefixed.clone()]);
        // Failover: after STOPPED, new source ACLs are not synced and deletions not followed.
        assert_eq!(
            w.stop_mirror_topics(DST, "m1", &["orders"]).await,
            ErrorCode::None
        );
        let tp = TopicPartition::new("orders", 0);
        assert!(
            w.wait_until(30_000, |w| w.mirror_state(DST, &tp) == Some(S::Stopped))
                .await
        );
        let late = topic_acl(
            "orders",
            PatternType::Literal,
            "User:carol",
            AclOperation::Write,
        );
        assert_eq!(
            w.create_acls(SRC, vec![late.clone()]).await,
            Some(vec![ErrorCode::None])
        );
        assert!(
            w.delete_acls(SRC, vec![AclBindingFilter::exact(&prefixed)])
                .await
                .is_some()
        );
        w.run_for_ms(15_000).await;
        assert_eq!(w.controller_acls(DST), vec![prefixed.clone()]);
        let lines = w.world.trace_lines();
        (w.finish(), lines)
    })
    .unwrap();
    assert_eq!(out.0, None, "no invariant broke");
    assert!(
        out.1
            .iter()
            .any(|l| l.contains("mirror m1 sync acls create") && l.contains("TOPIC:LITERAL:orders")),
        "the sync is traced"
    );
    assert!(
        out.1
            .iter()
            .any(|l| l.contains("mirror m1 sync acls delete") && l.contains("User:alice")),
        "the deletion is traced"
    );
}
