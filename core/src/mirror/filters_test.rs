//! The filter lists' rules (kip1279.md B §5.2; prototype `MirrorUtils.compilePatternList`,
//! `ConfigurationControlManager.startMirrorTopics` / `stopMirrorTopics`,
//! `MirrorSourceSyncer.discoverTopicsByPattern` / `enforceExcludePatterns` /
//! `listSourceGroupIds`).

use std::collections::BTreeMap;

use super::*;

fn list(v: &str) -> PatternList {
    PatternList::parse(v).expect("valid")
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_string()).collect()
}

fn configs(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
    kv.iter()
        .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
        .collect()
}

#[test]
fn a_pattern_matches_the_whole_name_as_re2j_matches_does() {
    // Goal: `Pattern.compile("^(" + joined + ")$").matcher(name).matches()`.
    let l = list("orders-.*, payments");
    assert!(l.matches("orders-us"));
    assert!(l.matches("orders-"));
    assert!(l.matches("payments"));
    assert!(!l.matches("payments-eu"), "a literal matches only itself");
    assert!(!l.matches("eu-orders-us"), "no partial match at the start");
    assert!(!l.matches("xpayments"));
    // The alternation is inside the anchors: `a|b` cannot match `ab`-prefixed names.
    let alt = list("a|b");
    assert!(alt.matches("a") && alt.matches("b"));
    assert!(!alt.matches("ab"));
    // `.` is a regex dot, as in Kafka: `orders.us` also matches `orders-us`.
    assert!(list("orders.us").matches("orders-us"));
}

#[test]
fn lists_split_on_commas_trim_and_drop_empty_entries() {
    assert_eq!(parse_list(" a , ,b,, "), strings(&["a", "b"]));
    assert!(parse_list("").is_empty());
    assert!(parse_list(" , ").is_empty());
    assert_eq!(join_list(&strings(&["a", "b.*"])), "a,b.*");
    let empty = list(" , ");
    assert!(empty.is_empty());
    assert!(!empty.matches(""), "an empty list matches nothing");
    assert!(!empty.matches("orders"));
}

#[test]
fn an_invalid_pattern_is_an_error_naming_it_never_a_panic() {
    for bad in ["orders-(", "[a-", "*", "[z-a]", "(?<n>x)(?<n>y)"] {
        let e = PatternList::parse(&format!("ok-.*,{bad}")).expect_err(bad);
        assert_eq!(e.pattern, bad);
        assert!(!e.reason.is_empty() && !e.reason.contains('\n'), "{e}");
        assert_eq!(validate_patterns(&strings(&["x", bad])), Err(e));
    }
    // Entries that only compile when joined are refused: each is checked on its own.
    assert!(validate_patterns(&strings(&["a(", ")b"])).is_err());
    assert!(PatternList::compile(&strings(&["a(", ")b"])).is_err());
    // Look-around and backreferences are not RE2: refused as RE2J refuses them.
    assert!(validate_patterns(&strings(&["(?=a)a"])).is_err());
    assert!(validate_patterns(&strings(&[r"(a)\1"])).is_err());
    assert!(validate_patterns(&strings(&["", "  "])).is_ok());
    // A comma always separates entries (Kafka's LIST type): `a{1,3}` is `a{1` and `3}`.
    assert_eq!(
        PatternList::parse("a{1,3}").expect_err("split").pattern,
        "a{1"
    );
}

#[test]
fn defaults_are_the_prototypes_cluster_mirror_config() {
    let f = MirrorFilters::from_configs(None).expect("defaults");
    assert!(
        f.topics_include.is_empty(),
        "topics.include \"\": discover nothing"
    );
    assert!(!f.discovers("orders"));
    assert!(f.excludes("__consumer_offsets"), "topics.exclude __.*");
    assert!(!f.excludes("orders"));
    assert!(f.syncs_group("any-group"), "groups.include .*");
    assert!(f.syncs_group(""));
}

#[test]
fn discovery_needs_include_and_not_exclude_and_skips_configured_and_internal_topics() {
    let cfg = configs(&[
        (TOPICS_INCLUDE_CONFIG, "orders-.*,payments,.*-click"),
        (TOPICS_EXCLUDE_CONFIG, "orders-internal"),
    ]);
    let f = MirrorFilters::from_configs(Some(&cfg)).expect("valid");
    let source = [
        "orders-us",
        "orders-internal",
        "payments",
        "logs-app",
        "events-click",
        "__consumer_offsets",
        "orders-eu",
    ];
    // orders-eu is already in the mirror (e.g. stopped explicitly): not started again.
    let configured = |t: &str| t == "orders-eu";
    assert_eq!(
        discovery_candidates(source, &f, &configured),
        strings(&["events-click", "orders-us", "payments"])
    );
    // An include of `.*` with an explicit exclude still never takes an internal topic.
    let all = configs(&[
        (TOPICS_INCLUDE_CONFIG, ".*"),
        (TOPICS_EXCLUDE_CONFIG, "logs-.*"),
    ]);
    let f = MirrorFilters::from_configs(Some(&all)).expect("valid");
    assert_eq!(
        discovery_candidates(source, &f, &|_| false),
        strings(&[
            "events-click",
            "orders-eu",
            "orders-internal",
            "orders-us",
            "payments"
        ])
    );
}

#[test]
fn exclude_enforcement_picks_the_active_topics_the_exclude_list_matches() {
    let cfg = configs(&[(TOPICS_EXCLUDE_CONFIG, "orders-eu, tmp-.*")]);
    let f = MirrorFilters::from_configs(Some(&cfg)).expect("valid");
    assert_eq!(
        excluded_topics(["orders-us", "tmp-1", "orders-eu"], &f),
        strings(&["orders-eu", "tmp-1"])
    );
    // Setting the key replaces the default: `__.*` is no longer excluded by itself.
    assert!(!f.excludes("__x"));
    let none = MirrorFilters::from_configs(None).expect("defaults");
    assert!(excluded_topics(["orders-us"], &none).is_empty());
}

#[test]
fn group_filter_include_then_exclude_and_an_empty_include_lets_all_through() {
    let cfg = configs(&[
        (GROUPS_INCLUDE_CONFIG, "app-.*"),
        (GROUPS_EXCLUDE_CONFIG, "app-test"),
    ]);
    let f = MirrorFilters::from_configs(Some(&cfg)).expect("valid");
    assert!(f.syncs_group("app-billing"));
    assert!(!f.syncs_group("app-test"), "exclude wins");
    assert!(!f.syncs_group("other"), "not included");
    let empty_include = configs(&[(GROUPS_INCLUDE_CONFIG, ""), (GROUPS_EXCLUDE_CONFIG, "x")]);
    let f = MirrorFilters::from_configs(Some(&empty_include)).expect("valid");
    assert!(f.syncs_group("other"), "include null: no include filter");
    assert!(!f.syncs_group("x"));
}

#[test]
fn a_bad_stored_filter_names_its_key() {
    let cfg = configs(&[(GROUPS_EXCLUDE_CONFIG, "ok,(")]);
    let e = MirrorFilters::from_configs(Some(&cfg)).expect_err("invalid");
    assert_eq!(e.key, GROUPS_EXCLUDE_CONFIG);
    assert_eq!(e.error.pattern, "(");
}

#[test]
fn only_the_five_filter_keys_leave_connections_alone() {
    for k in [
        "topics.include",
        "topics.exclude",
        "groups.include",
        "groups.exclude",
        "acls.include",
    ] {
        assert!(is_filter_config(k), "{k}");
    }
    for k in [
        "bootstrap.servers",
        "source.cluster",
        "request.timeout.ms",
        "mirror.metadata.refresh.interval.ms",
        "topic.properties.exclude",
    ] {
        assert!(!is_filter_config(k), "{k}");
    }
    assert_eq!(
        ACLS_INCLUDE_CONFIG,
        crate::broker::mirror::acl_sync::ACLS_INCLUDE_CONFIG
    );
}

#[test]
fn current_lists_take_the_defaults_for_unset_keys() {
    let l = TopicLists::of(None);
    assert!(l.include.is_empty());
    assert_eq!(l.exclude, strings(&["__.*"]));
    let cfg = configs(&[
        (TOPICS_INCLUDE_CONFIG, "a, b,a"),
        (TOPICS_EXCLUDE_CONFIG, ""),
    ]);
    let l = TopicLists::of(Some(&cfg));
    assert_eq!(l.include, strings(&["a", "b"]), "duplicates collapse");
    assert!(
        l.exclude.is_empty(),
        "an explicit empty exclude stays empty"
    );
}

#[test]
fn start_merges_patterns_and_takes_started_names_out_of_exclude() {
    let current = TopicLists {
        include: strings(&["orders-.*"]),
        exclude: strings(&["__.*", "orders-eu", "events-.*"]),
    };
    let m = merge_start(
        &current,
        &["orders-eu"],
        &strings(&["events-.*", " payments "]),
        &strings(&["orders-.*", "tmp-.*"]),
    );
    // orders-eu (started) and events-.* (included) leave exclude; orders-.* moves from
    // include to exclude; entries keep their order and are not duplicated.
    assert_eq!(m.include, strings(&["events-.*", "payments"]));
    assert_eq!(m.exclude, strings(&["__.*", "orders-.*", "tmp-.*"]));
    // Explicit names never go into include (see merge_start's decision).
    let m = merge_start(&TopicLists::of(None), &["orders"], &[], &[]);
    assert_eq!(m, TopicLists::of(None), "a plain start changes nothing");
}

#[test]
fn stop_removes_an_include_entry_or_else_adds_an_exclude_entry() {
    let current = TopicLists {
        include: strings(&["orders-.*", "payments"]),
        exclude: strings(&["__.*"]),
    };
    let m = merge_stop(&current, &strings(&["payments", "orders-eu", "orders-eu"]));
    assert_eq!(m.include, strings(&["orders-.*"]));
    assert_eq!(m.exclude, strings(&["__.*", "orders-eu"]));
    assert_eq!(merge_stop(&current, &[]), current);
}
