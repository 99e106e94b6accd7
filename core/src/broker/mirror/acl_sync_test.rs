//! The ACL sync decision ([`plan_acl_sync`]) and the `acls.include` rules: what is synced
//! (TOPIC ACLs that apply to a MIRRORING topic of the mirror), what is deleted (ACLs the
//! mirror owns that the source lost), and the switch.

use std::collections::BTreeSet;

use super::*;
use crate::protocol::acl::{
    AclBinding, AclOperation as Op, AclPermissionType as Perm, PatternType as Pt,
};

fn acl(rt: AclResourceType, name: &str, pt: Pt, principal: &str, op: Op) -> AclBinding {
    AclBinding::new(rt, name, pt, principal, op, Perm::Allow)
}

fn topic(name: &str, pt: Pt, op: Op) -> AclBinding {
    acl(AclResourceType::Topic, name, pt, "User:alice", op)
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| (*s).to_string()).collect()
}

fn all() -> Vec<AclIncludeRule> {
    parse_acls_include(None).expect("default parses")
}

#[test]
fn only_topic_acls_of_mirroring_topics_are_created() {
    // Goal: A.1 "only for MIRRORING partitions": a literal ACL of the mirrored topic, a
    // prefix that covers it and the wildcard are synced; ACLs of other topics, of a stopped
    // topic and of other resource types are not.
    let source = vec![
        topic("orders", Pt::Literal, Op::Read),
        topic("ord", Pt::Prefixed, Op::Write),
        topic("*", Pt::Literal, Op::Describe),
        topic("payments", Pt::Literal, Op::Read),
        topic("stopped", Pt::Literal, Op::Read),
        acl(
            AclResourceType::Group,
            "orders",
            Pt::Literal,
            "User:alice",
            Op::Read,
        ),
    ];
    let dest_topics = set(&["orders", "payments", "stopped"]);
    let plan = plan_acl_sync(&source, &[], &set(&["orders"]), &dest_topics, &all());
    let mut want = vec![
        topic("orders", Pt::Literal, Op::Read),
        topic("ord", Pt::Prefixed, Op::Write),
        topic("*", Pt::Literal, Op::Describe),
    ];
    want.sort();
    assert_eq!(plan.create, want);
    assert!(plan.delete.is_empty());
    // Nothing mirroring (all STOPPED / PAUSED): nothing at all.
    let plan = plan_acl_sync(&source, &[], &set(&[]), &dest_topics, &all());
    assert_eq!(plan, AclSyncPlan::default());
}

#[test]
fn acls_already_on_the_destination_are_not_recreated() {
    let a = topic("orders", Pt::Literal, Op::Read);
    let both = [a];
    let plan = plan_acl_sync(&both, &both, &set(&["orders"]), &set(&["orders"]), &all());
    assert_eq!(plan, AclSyncPlan::default());
}

#[test]
fn deletion_removes_only_acls_the_mirror_owns() {
    // Goal: S30 / B §8.11: destination ACLs missing on the source are deleted (prototype),
    // narrowed to the ones that apply only to MIRRORING topics of this mirror (corner case
    // 7): a stopped topic's ACL, a prefix that also covers a non-mirrored topic and the
    // wildcard stay.
    let dest = vec![
        topic("orders", Pt::Literal, Op::Read),
        topic("orders-", Pt::Prefixed, Op::Read),
        topic("ord", Pt::Prefixed, Op::Write),
        topic("*", Pt::Literal, Op::Describe),
        topic("stopped", Pt::Literal, Op::Write),
    ];
    let mirroring = set(&["orders", "orders-eu"]);
    let dest_topics = set(&["orders", "orders-eu", "ord-local", "stopped"]);
    let plan = plan_acl_sync(&[], &dest, &mirroring, &dest_topics, &all());
    let mut want = vec![
        topic("orders", Pt::Literal, Op::Read),
        topic("orders-", Pt::Prefixed, Op::Read),
    ];
    want.sort();
    assert_eq!(plan.delete, want);
    assert!(plan.create.is_empty());
    // Once the topic is no longer MIRRORING, its ACLs are left alone.
    let plan = plan_acl_sync(&[], &dest, &set(&[]), &dest_topics, &all());
    assert!(plan.delete.is_empty());
}

#[test]
fn acls_include_rules_select_and_an_empty_list_disables() {
    // Goal: B §5.2 `acls.include` rules `resourceType;resourceName;operation;permission;
    // principal`, `*` = any, trailing fields optional; empty = sync nothing.
    let read = topic("orders", Pt::Literal, Op::Read);
    let write = topic("orders", Pt::Literal, Op::Write);
    let bob = acl(
        AclResourceType::Topic,
        "orders",
        Pt::Literal,
        "User:bob",
        Op::Read,
    );
    let source = vec![read.clone(), write.clone(), bob.clone()];
    let m = set(&["orders"]);
    let run = |v: &str| {
        let rules = parse_acls_include(Some(v)).expect("parses");
        plan_acl_sync(&source, &[], &m, &m, &rules).create
    };
    assert_eq!(run("TOPIC;orders;READ"), {
        let mut v = vec![read.clone(), bob.clone()];
        v.sort();
        v
    });
    assert_eq!(run("topic;*;*;ALLOW;User:bob"), vec![bob]);
    assert_eq!(run("*;*;WRITE"), vec![write]);
    assert!(run("").is_empty(), "empty list: ACL sync disabled");
    assert!(run("GROUP").is_empty());
    assert_eq!(
        parse_acls_include(Some("TOPIC;x;READ;ALLOW;User:a;extra")),
        Err(AclRuleError::TooManyFields(
            "TOPIC;x;READ;ALLOW;User:a;extra".into()
        ))
    );
    assert_eq!(
        parse_acls_include(Some("TABLE")),
        Err(AclRuleError::UnknownResourceType("TABLE".into()))
    );
    assert_eq!(
        parse_acls_include(Some("TOPIC;x;FLY")),
        Err(AclRuleError::UnknownOperation("FLY".into()))
    );
}
