//! KIP-1279 filter lists at the controller: B §6.1 StartMirrorTopics (`IncludePatterns` /
//! `ExcludePatterns` merged into `topics.include` / `topics.exclude`, an excluded topic is
//! INVALID_REQUEST), StopMirrorTopics (`Patterns` removed from include or added to exclude,
//! matching topics stopped), invalid patterns, and IncrementalAlterConfigs on a mirror
//! (prototype `ConfigurationControlManager`).

use super::mirror_admin_test::{Harness, configs, errors, op_req, start_req, top};
use super::*;
use crate::mirror::filters::{TOPICS_EXCLUDE_CONFIG, TOPICS_INCLUDE_CONFIG};
use crate::protocol::metadata::{ConfigResource, MetadataRecord};
use crate::protocol::{ErrorCode, Request, Response};
use crate::types::TopicId;

fn mirror_config(h: &Harness, key: &str) -> Option<String> {
    h.c.image()
        .configs
        .get(&ConfigResource::Mirror("m1".into()))
        .and_then(|c| c.get(key))
        .cloned()
}

fn start_with(
    mirror: &str,
    topics: &[(&str, TopicId, i32)],
    include: &[&str],
    exclude: &[&str],
) -> Request {
    let mut r = start_req(mirror, topics);
    if let Request::StartMirrorTopics {
        include_patterns,
        exclude_patterns,
        ..
    } = &mut r
    {
        *include_patterns = include.iter().map(|s| (*s).to_string()).collect();
        *exclude_patterns = exclude.iter().map(|s| (*s).to_string()).collect();
    }
    r
}

fn stop_with(mirror: &str, topics: &[&str], patterns: &[&str]) -> Request {
    let mut r = op_req(MirrorTopicsOp::Stop, mirror, topics, None);
    if let Request::StopMirrorTopics { patterns: p, .. } = &mut r {
        *p = patterns.iter().map(|s| (*s).to_string()).collect();
    }
    r
}

/// The mirror config records among `records`, as `(key, value)`.
fn mirror_records(records: &[MetadataRecord]) -> Vec<(String, Option<String>)> {
    records
        .iter()
        .filter_map(|r| match r {
            MetadataRecord::Config {
                resource: ConfigResource::Mirror(_),
                name,
                value,
            } => Some((name.clone(), value.clone())),
            _ => None,
        })
        .collect()
}

fn pair(k: &str, v: &str) -> (String, Option<String>) {
    (k.to_string(), Some(v.to_string()))
}

fn mirrored(h: &mut Harness, names: &[&str]) {
    let topics: Vec<(&str, TopicId, i32)> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (*n, TopicId(0x100 + u128::try_from(i).expect("i")), 1))
        .collect();
    assert_eq!(top(&h.start("m1", &topics)), ErrorCode::None);
}

#[test]
fn a_start_without_patterns_writes_no_filter_config() {
    // Goal: the default (explicit topics only) keeps the seed design's records exactly.
    let mut h = Harness::new(3);
    h.create_mirror("m1");
    let (r, records) = h.call(start_req("m1", &[("orders", TopicId(7), 1)]));
    assert_eq!(top(&r), ErrorCode::None);
    assert!(mirror_records(&records).is_empty(), "{records:?}");
    assert_eq!(mirror_config(&h, TOPICS_INCLUDE_CONFIG), None);
    assert_eq!(mirror_config(&h, TOPICS_EXCLUDE_CONFIG), None);
}

#[test]
fn start_merges_include_and_exclude_patterns_into_the_mirror_config() {
    // Goal: B §6.1 "patterns merged into topics.include/exclude"; the default `__.*` stays.
    let mut h = Harness::new(3);
    h.create_mirror("m1");
    let (r, records) = h.call(start_with(
        "m1",
        &[("orders-us", TopicId(7), 1)],
        &["orders-.*"],
        &["orders-internal"],
    ));
    assert_eq!(top(&r), ErrorCode::None);
    assert_eq!(
        mirror_records(&records),
        vec![
            pair(TOPICS_INCLUDE_CONFIG, "orders-.*"),
            pair(TOPICS_EXCLUDE_CONFIG, "__.*,orders-internal"),
        ]
    );
    assert_eq!(h.mirror_name("orders-us").as_deref(), Some("m1"));
    // A second start with an already-merged pattern writes nothing new.
    let (r, records) = h.call(start_with("m1", &[], &["orders-.*"], &[]));
    assert_eq!(top(&r), ErrorCode::None);
    assert!(mirror_records(&records).is_empty());
}

#[test]
fn an_explicit_topic_the_merged_exclude_matches_refuses_the_whole_request() {
    // Goal: B §6.1 "topic must match include and not exclude → INVALID_REQUEST"; nothing
    // is written, not even the patterns.
    let mut h = Harness::new(3);
    h.create_mirror("m1");
    let before = h.end_offset();
    let (r, records) = h.call(start_with(
        "m1",
        &[("payments", TopicId(8), 1), ("orders-eu", TopicId(7), 1)],
        &[],
        &["orders-.*"],
    ));
    let (error, per_topic) = errors(&r);
    assert_eq!(error, ErrorCode::InvalidRequest);
    assert_eq!(
        per_topic,
        vec![
            ("payments".to_string(), ErrorCode::InvalidRequest),
            ("orders-eu".to_string(), ErrorCode::InvalidRequest),
        ]
    );
    assert!(records.is_empty());
    assert_eq!(h.end_offset(), before);
    // An explicit start is accepted whatever topics.include says (see merge_start).
    let (r, _) = h.call(start_with("m1", &[], &["orders-.*"], &[]));
    assert_eq!(top(&r), ErrorCode::None);
    let (r, _) = h.call(start_req("m1", &[("payments", TopicId(8), 1)]));
    assert_eq!(top(&r), ErrorCode::None);
}

#[test]
fn starting_a_literally_excluded_topic_takes_it_out_of_exclude() {
    // Goal: a failback of a topic stopped by pattern is not stopped again by the exclude
    // enforcement: the started name leaves topics.exclude.
    let mut h = Harness::new(3);
    h.create_mirror("m1");
    mirrored(&mut h, &["orders-eu", "orders-us"]);
    let (r, _) = h.call(stop_with("m1", &[], &["orders-eu"]));
    assert_eq!(top(&r), ErrorCode::None);
    assert_eq!(
        mirror_config(&h, TOPICS_EXCLUDE_CONFIG).as_deref(),
        Some("__.*,orders-eu")
    );
    let (r, records) = h.call(start_req("m1", &[("orders-eu", TopicId(0x100), 1)]));
    assert_eq!(top(&r), ErrorCode::None);
    assert_eq!(
        mirror_records(&records),
        vec![pair(TOPICS_EXCLUDE_CONFIG, "__.*")]
    );
    assert_eq!(h.mirror_name("orders-eu").as_deref(), Some("m1"));
}

#[test]
fn an_invalid_pattern_is_invalid_regular_expression_and_writes_nothing() {
    // Goal: the prototype's `MirrorUtils.validateRe2jPatterns` → InvalidRegularExpression.
    let mut h = Harness::new(3);
    h.create_mirror("m1");
    mirrored(&mut h, &["orders"]);
    let before = h.end_offset();
    for req in [
        start_with("m1", &[("a", TopicId(9), 1)], &["orders-("], &[]),
        start_with("m1", &[], &[], &["[x-"]),
        stop_with("m1", &["orders"], &["ok", "*"]),
    ] {
        let (r, records) = h.call(req);
        let (error, per_topic) = errors(&r);
        assert_eq!(error, ErrorCode::InvalidRegularExpression);
        assert!(per_topic.iter().all(|(_, e)| *e == error), "{per_topic:?}");
        assert!(records.is_empty());
    }
    assert_eq!(h.end_offset(), before);
    assert_eq!(
        h.mirror_name("orders").as_deref(),
        Some("m1"),
        "not stopped"
    );
}

#[test]
fn stop_patterns_leave_include_or_join_exclude_and_stop_the_topics_they_match() {
    // Goal: B §6.1 StopMirrorTopics "Patterns are removed from include or added to
    // exclude (so a stopped topic is not rediscovered)"; the matching topics stop.
    let mut h = Harness::new(3);
    h.create_mirror("m1");
    let (r, _) = h.call(start_with("m1", &[], &["orders-.*", "payments"], &[]));
    assert_eq!(top(&r), ErrorCode::None);
    mirrored(&mut h, &["orders-eu", "orders-us", "payments"]);
    let (r, records) = h.call(stop_with("m1", &[], &["payments", "orders-e.*"]));
    let (error, per_topic) = errors(&r);
    assert_eq!(error, ErrorCode::None);
    assert_eq!(
        per_topic,
        vec![
            ("orders-eu".to_string(), ErrorCode::None),
            ("payments".to_string(), ErrorCode::None),
        ],
        "the matched topics are answered, sorted"
    );
    assert_eq!(
        mirror_records(&records),
        vec![
            pair(TOPICS_INCLUDE_CONFIG, "orders-.*"),
            pair(TOPICS_EXCLUDE_CONFIG, "__.*,orders-e.*"),
        ]
    );
    assert_eq!(h.mirror_name("orders-eu").as_deref(), Some("m1.removed"));
    assert_eq!(h.mirror_name("payments").as_deref(), Some("m1.removed"));
    assert_eq!(h.mirror_name("orders-us").as_deref(), Some("m1"));
    // A stop without patterns changes no filter config.
    let (r, records) = h.call(stop_with("m1", &["orders-us"], &[]));
    assert_eq!(top(&r), ErrorCode::None);
    assert!(mirror_records(&records).is_empty());
}

#[test]
fn an_exclude_pattern_given_at_start_stops_the_mirror_topics_it_matches() {
    // Goal: the prototype's `stopExcludedTopics` after the merge; a paused topic stays
    // paused (seed: Stop from PAUSED is refused).
    let mut h = Harness::new(3);
    h.create_mirror("m1");
    mirrored(&mut h, &["tmp-1", "tmp-2", "orders"]);
    assert_eq!(
        top(&h.op(MirrorTopicsOp::Pause, "m1", &["tmp-2"])),
        ErrorCode::None
    );
    let (r, _) = h.call(start_with("m1", &[], &[], &["tmp-.*"]));
    assert_eq!(top(&r), ErrorCode::None);
    assert_eq!(h.mirror_name("tmp-1").as_deref(), Some("m1.removed"));
    assert_eq!(h.mirror_name("tmp-2").as_deref(), Some("m1.paused"));
    assert_eq!(h.mirror_name("orders").as_deref(), Some("m1"));
}

#[test]
fn alter_mirror_configs_checks_existence_required_keys_and_regexes() {
    // Goal: IncrementalAlterConfigs with resource MIRROR (B "CLUSTER_MIRROR" line).
    let mut h = Harness::new(3);
    h.create_mirror("m1");
    let alter = |mirror: &str, ops: &[(&str, Option<&str>)]| Request::IncrementalAlterConfigs {
        resource: ConfigResource::Mirror(mirror.to_string()),
        ops: ops
            .iter()
            .map(|(k, v)| ((*k).to_string(), v.map(str::to_string)))
            .collect(),
    };
    let error = |r: &Response| match r {
        Response::TopicErrors { results } => results[0].1,
        other => panic!("{other:?}"),
    };
    let before = h.end_offset();
    for (req, want) in [
        (
            alter("nope", &[("topics.include", Some("a"))]),
            ErrorCode::UnknownClusterMirror,
        ),
        (
            alter("m1", &[("topics.include", Some("a,("))]),
            ErrorCode::InvalidConfig,
        ),
        (
            alter("m1", &[("groups.exclude", Some("[z-a]"))]),
            ErrorCode::InvalidConfig,
        ),
        (
            alter("m1", &[("source.cluster", None)]),
            ErrorCode::InvalidConfig,
        ),
        (
            alter("m1", &[("a", Some("1")), ("a", Some("2"))]),
            ErrorCode::InvalidRequest,
        ),
    ] {
        let (r, records) = h.call(req);
        assert_eq!(error(&r), want);
        assert!(records.is_empty());
    }
    assert_eq!(h.end_offset(), before);
    let (r, records) = h.call(alter(
        "m1",
        &[
            ("topics.include", Some("orders-.*")),
            ("source.cluster", Some("src")),
        ],
    ));
    assert_eq!(error(&r), ErrorCode::None);
    assert_eq!(
        mirror_records(&records),
        vec![pair("topics.include", "orders-.*")],
        "an unchanged value writes no record"
    );
    let (r, records) = h.call(alter("m1", &[("topics.include", None)]));
    assert_eq!(error(&r), ErrorCode::None);
    assert_eq!(
        mirror_records(&records),
        vec![("topics.include".into(), None)]
    );
}

#[test]
fn create_mirror_refuses_a_filter_list_that_does_not_compile() {
    let mut h = Harness::new(3);
    let (r, records) = h.call(Request::CreateMirror {
        mirror_name: "m1".into(),
        configs: configs(&[("source.cluster", "src"), ("topics.include", "ok,(bad")]),
    });
    assert_eq!(top(&r), ErrorCode::InvalidConfig);
    assert!(records.is_empty(), "not even __mirror_state");
}
