//! ACLs at the controller (Kafka `AclControlManagerTest`): validation, idempotent creation,
//! deletion by filter (one record per ACL however many filters match it), filter matching
//! (`ResourcePatternFilterTest`, `AclBindingFilterTest`) and replay.

use super::acls::{AclError, decide_create_acls, decide_delete_acls, validate_new_acl};
use super::{Controller, ControllerConfig};
use crate::broker::{Message, MetadataImage, Node, Output};
use crate::protocol::acl::{
    AclBinding, AclBindingFilter, AclId, AclOperation as Op, AclPermissionType as Perm,
    AclResourceType as Rt, PatternType as Pt, PatternTypeFilter as Pf,
};
use crate::protocol::metadata::MetadataRecord;
use crate::protocol::{ClusterIdx, ErrorCode, NodeId, Request, Response};
use crate::time::Instant;

const C: ClusterIdx = ClusterIdx(0);

fn acl(rt: Rt, name: &str, pt: Pt, principal: &str, op: Op) -> AclBinding {
    AclBinding::new(rt, name, pt, principal, op, Perm::Allow)
}

fn read_orders() -> AclBinding {
    acl(Rt::Topic, "orders", Pt::Literal, "User:alice", Op::Read)
}

fn image_with(acls: &[AclBinding]) -> MetadataImage {
    let mut image = MetadataImage::new();
    for (i, b) in acls.iter().enumerate() {
        let id = AclId(i as u128 + 1);
        image.apply(
            i as i64,
            &MetadataRecord::AccessControlEntry {
                id,
                binding: b.clone(),
            },
        );
    }
    image
}

fn call(c: &mut Controller, id: u64, req: Request) -> (Response, Vec<MetadataRecord>) {
    let client = NodeId::client(C, 0);
    c.handle_message(Instant::from_millis(0), client, id, Message::Request(req));
    let outs: Vec<Output> = std::iter::from_fn(|| c.poll_output()).collect();
    let resp = outs
        .iter()
        .find_map(|o| match o {
            Output::Send {
                message: Message::Response(r),
                ..
            } => Some(r.clone()),
            _ => None,
        })
        .expect("a response");
    let records = outs
        .iter()
        .filter_map(|o| match o {
            Output::PersistMetadata { record, .. } => Some(record.clone()),
            _ => None,
        })
        .collect();
    (resp, records)
}

#[test]
fn validate_new_acl_rejects_empty_names_bad_principals_and_other_cluster_names() {
    // Goal: Kafka AclControlManager.validateNewAcl + AuthHelper's CLUSTER name rule.
    assert_eq!(validate_new_acl(&read_orders()), Ok(()));
    let empty = acl(Rt::Topic, "", Pt::Literal, "User:a", Op::Read);
    assert_eq!(validate_new_acl(&empty), Err(AclError::EmptyResourceName));
    let bad = acl(Rt::Topic, "t", Pt::Literal, "alice", Op::Read);
    assert_eq!(
        validate_new_acl(&bad),
        Err(AclError::InvalidPrincipal("alice".into()))
    );
    let cluster = acl(Rt::Cluster, "other", Pt::Literal, "User:a", Op::Alter);
    assert!(matches!(
        validate_new_acl(&cluster),
        Err(AclError::InvalidClusterName(_))
    ));
    let ok = acl(
        Rt::Cluster,
        "kafka-cluster",
        Pt::Literal,
        "User:a",
        Op::Alter,
    );
    assert_eq!(validate_new_acl(&ok), Ok(()));
}

#[test]
fn create_is_idempotent_for_existing_and_repeated_bindings() {
    // Goal: AclControlManagerTest "testCreateDedupe": duplicates succeed, write nothing.
    let image = image_with(&[read_orders()]);
    let write = acl(Rt::Topic, "orders", Pt::Literal, "User:alice", Op::Write);
    let bad = acl(Rt::Topic, "", Pt::Literal, "User:alice", Op::Write);
    let d = decide_create_acls(&image, &[read_orders(), write.clone(), bad, write.clone()]);
    assert_eq!(d.new, vec![write]);
    assert_eq!(
        d.results,
        vec![Ok(()), Ok(()), Err(AclError::EmptyResourceName), Ok(())]
    );
}

#[test]
fn delete_lists_matches_per_filter_and_removes_each_acl_once() {
    // Goal: AclControlManager.deleteAcls: one RemoveAccessControlEntryRecord per ACL even if
    // two filters match it; each filter's result lists what it matched.
    let prefixed = acl(Rt::Topic, "ord", Pt::Prefixed, "User:bob", Op::Read);
    let group = acl(Rt::Group, "g1", Pt::Literal, "User:alice", Op::Read);
    let image = image_with(&[read_orders(), prefixed.clone(), group.clone()]);
    let by_principal = AclBindingFilter {
        principal: Some("User:alice".into()),
        ..AclBindingFilter::any()
    };
    let topics = AclBindingFilter {
        resource_type: Some(Rt::Topic),
        ..AclBindingFilter::any()
    };
    let none = AclBindingFilter {
        principal: Some("User:nobody".into()),
        ..AclBindingFilter::any()
    };
    let d = decide_delete_acls(&image, &[by_principal, topics, none]);
    let mut alice = vec![read_orders(), group];
    alice.sort();
    let mut topic_acls = vec![read_orders(), prefixed];
    topic_acls.sort();
    assert_eq!(d.results, vec![alice, topic_acls, vec![]]);
    assert_eq!(
        d.remove.into_iter().collect::<Vec<_>>(),
        vec![AclId(1), AclId(2), AclId(3)]
    );
}

#[test]
fn pattern_filters_follow_kafka_any_match_literal_prefixed_rules() {
    // Goal: ResourcePatternFilterTest: ANY compares the name literally over every pattern
    // type, MATCH finds the patterns that apply to a resource name (literal, wildcard,
    // prefix), LITERAL/PREFIXED need the same pattern type and name.
    let literal = acl(Rt::Topic, "orders", Pt::Literal, "User:a", Op::Read);
    let wildcard = acl(Rt::Topic, "*", Pt::Literal, "User:a", Op::Read);
    let prefix = acl(Rt::Topic, "ord", Pt::Prefixed, "User:a", Op::Read);
    let other = acl(Rt::Topic, "payments", Pt::Literal, "User:a", Op::Read);
    let f = |name: &str, pf: Pf| AclBindingFilter {
        resource_type: Some(Rt::Topic),
        name: Some(name.into()),
        pattern_type: pf,
        ..AclBindingFilter::any()
    };
    let all = [&literal, &wildcard, &prefix, &other];
    let hits = |flt: &AclBindingFilter| all.iter().map(|b| flt.matches(b)).collect::<Vec<_>>();
    assert_eq!(hits(&f("orders", Pf::Match)), [true, true, true, false]);
    assert_eq!(hits(&f("orders", Pf::Any)), [true, false, false, false]);
    assert_eq!(hits(&f("ord", Pf::Any)), [false, false, true, false]);
    assert_eq!(hits(&f("orders", Pf::Literal)), [true, false, false, false]);
    assert_eq!(hits(&f("ord", Pf::Literal)), [false, false, false, false]);
    assert_eq!(hits(&f("ord", Pf::Prefixed)), [false, false, true, false]);
    let group = AclBindingFilter {
        resource_type: Some(Rt::Group),
        ..AclBindingFilter::any()
    };
    assert_eq!(hits(&group), [false, false, false, false]);
    let entry = AclBindingFilter {
        operation: Some(Op::Write),
        ..AclBindingFilter::any()
    };
    assert_eq!(hits(&entry), [false, false, false, false]);
    assert!(AclBindingFilter::exact(&prefix).matches(&prefix));
    assert!(!AclBindingFilter::exact(&prefix).matches(&literal));
}

#[test]
fn controller_writes_acl_records_answers_per_acl_and_replays_identically() {
    // Goal: CreateAcls/DeleteAcls at the controller: records with deterministic ids, per-ACL
    // results, nothing written for duplicates or no-match deletes, and a restart from the
    // persisted log rebuilds the same ACLs.
    let mut c = Controller::new(ControllerConfig::new(C), Vec::new());
    let bad = acl(Rt::Topic, "t", Pt::Literal, "nobody", Op::Read);
    let (r, recs) = call(
        &mut c,
        1,
        Request::CreateAcls {
            creations: vec![read_orders(), bad],
        },
    );
    let Response::CreateAcls { results } = r else {
        panic!("{r:?}")
    };
    assert_eq!(results[0], (ErrorCode::None, None));
    assert_eq!(results[1].0, ErrorCode::InvalidRequest);
    assert!(results[1].1.as_deref().unwrap_or("").contains("nobody"));
    let [MetadataRecord::AccessControlEntry { id, binding }] = recs.as_slice() else {
        panic!("{recs:?}")
    };
    assert_eq!(*binding, read_orders());
    assert_eq!(id.0 >> 64, 1, "the cluster is in the high bits");
    let first_id = *id;
    // Duplicate: success, no record.
    let (r, recs) = call(
        &mut c,
        2,
        Request::CreateAcls {
            creations: vec![read_orders()],
        },
    );
    assert_eq!(
        r,
        Response::CreateAcls {
            results: vec![(ErrorCode::None, None)]
        }
    );
    assert!(recs.is_empty());
    let replayed = Controller::new(ControllerConfig::new(C), c.metadata_log().to_vec());
    assert_eq!(replayed.image().acls, c.image().acls);
    // Delete by filter.
    let filter = AclBindingFilter {
        resource_type: Some(Rt::Topic),
        name: Some("orders".into()),
        pattern_type: Pf::Match,
        ..AclBindingFilter::any()
    };
    let (r, recs) = call(
        &mut c,
        3,
        Request::DeleteAcls {
            filters: vec![filter.clone()],
        },
    );
    let Response::DeleteAcls { results } = r else {
        panic!("{r:?}")
    };
    assert_eq!(results[0].error, ErrorCode::None);
    assert_eq!(results[0].matching, vec![read_orders()]);
    assert_eq!(
        recs,
        vec![MetadataRecord::RemoveAccessControlEntry { id: first_id }]
    );
    assert!(c.image().acls.is_empty());
    // Nothing left: an empty match, no record.
    let (r, recs) = call(
        &mut c,
        4,
        Request::DeleteAcls {
            filters: vec![filter],
        },
    );
    let Response::DeleteAcls { results } = r else {
        panic!("{r:?}")
    };
    assert!(results[0].matching.is_empty() && recs.is_empty());
}
