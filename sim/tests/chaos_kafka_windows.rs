//! Windows Kafka itself has, which the checkers must accept (each a shrunk capsule of a
//! single-cluster chaos seed that the base reported as a violation): a follower that lost its
//! disk rejoining a leader whose metadata still lists it in the ISR, and the branch a declared
//! unclean election cuts (writes a stale leader acknowledged, records a consumer read from it).
//! Each test fails if the checker loses the exemption; the checkers' own unit tests
//! (`check::hw_bound`, `check::history`) show the forbidden side.

use mirror_sim::chaos::{ChaosOptions, ChaosPlan, run_plan};

fn run(capsule: &str) -> mirror_sim::chaos::ChaosOutcome {
    let plan: ChaosPlan = serde_json::from_str(capsule).expect("capsule");
    run_plan(plan, &ChaosOptions::default())
}

fn trace_has(out: &mirror_sim::chaos::ChaosOutcome, needle: &str) -> bool {
    out.report
        .as_ref()
        .is_some_and(|r| r.lines.iter().any(|l| l.contains(needle)))
}

/// The capsule passes, and its trace shows `needle`, the event the case is about (`why`).
fn passes_with(capsule: &str, needle: &str, why: &str) {
    let out = run(capsule);
    assert!(out.verdict.is_pass(), "{:?}", out.verdict);
    assert!(trace_has(&out, needle), "{why}");
}

#[test]
fn a_stale_leader_acknowledging_after_an_unclean_election_loses_those_writes_to_it() {
    // Seed 6085, shrunk: t1-0 (RF 2, unclean election on). Broker 1 crashes, broker 2 leads
    // epoch 1 with ISR [2] and is cut off; the controller elects broker 1 uncleanly in a later
    // epoch, and what broker 2 held beyond broker 1's log is the unclean election's declared
    // loss, not a lost acknowledged write (the base reported `no_lost_acked_write` at offset
    // 10). Re-timed when brokers stopped waiting 30 s on a heartbeat lost in a healed cut: the
    // cut is now from the controller only (12 s), which still yields the unclean election.
    const CAPSULE: &str = r#"{"seed":6085,"brokers":[2],"unclean_leader_election_enable":true,"log_flush_interval_ms":null,"topics":[{"name":"t0","partitions":1,"replication_factor":1,"min_insync_replicas":1},{"name":"t1","partitions":1,"replication_factor":2,"min_insync_replicas":1}],"clients":[{"kind":"consumer","topic":0,"read_committed":false},{"kind":"producer","topic":1,"acks":-1,"rate":10}],"faults":[{"at_ms":926,"fault":{"kind":"crash","cluster":0,"broker":1,"mode":"Process","down_ms":19288}},{"at_ms":13458,"fault":{"kind":"isolate_from_controller","cluster":0,"broker":2,"for_ms":12000}}],"safety_ms":27458,"liveness_ms":120000,"mirror":false,"design":"seed","failover_clients":[],"build":"mirror-sim 0.1.0","net":{"intra_min_us":476,"intra_max_us":1781,"wan_min_ms":37,"wan_mean_extra_ms":23,"wan_max_ms":317}}"#;
    passes_with(CAPSULE, "UNCLEAN", "the case needs an unclean election");
}

#[test]
fn a_follower_that_lost_a_torn_tail_may_sit_below_a_leader_hw_the_leader_cannot_know_about() {
    // Seed 8912, shrunk: broker 5 (ISR of __consumer_offsets-1, leader 4) loses a torn tail
    // and comes back as a new incarnation at LEO 1; under packet loss leader 4 never gets the
    // metadata that fenced the old incarnation and dropped it from the ISR, and records the
    // new incarnation's fetch at 1 below its HW 5 (the base reported `offset_bounds`).
    const CAPSULE: &str = r#"{"seed":8912,"brokers":[5],"unclean_leader_election_enable":false,"log_flush_interval_ms":null,"topics":[{"name":"t0","partitions":4,"replication_factor":3,"min_insync_replicas":2}],"clients":[{"kind":"producer","topic":0,"acks":-1,"rate":37},{"kind":"consumer","topic":0,"read_committed":true}],"faults":[{"at_ms":2510,"fault":{"kind":"crash","cluster":0,"broker":5,"mode":"Torn","down_ms":6230}},{"at_ms":2737,"fault":{"kind":"unclean_election","cluster":0,"topic":0,"partition":1}},{"at_ms":3231,"fault":{"kind":"packet_loss","permille":125,"for_ms":9962}}],"safety_ms":17012,"liveness_ms":120000,"mirror":false,"design":"seed","failover_clients":[],"build":"mirror-sim 0.1.0","net":{"intra_min_us":411,"intra_max_us":2126,"wan_min_ms":80,"wan_mean_extra_ms":10,"wan_max_ms":230}}"#;
    passes_with(CAPSULE, "torn", "the case needs a torn crash");
}

#[test]
fn a_consumer_reading_a_stale_leader_after_an_unclean_election_reads_the_cut_branch() {
    // Seed 1678, shrunk: brokers 1 and 3 are isolated in turn, broker 2 leads epoch 1 and
    // commits its own records; broker 1 is elected uncleanly with different records at the
    // same offsets (a declared loss). A consumer with stale metadata may keep fetching from
    // broker 2, still leader of epoch 1 in its own view (the base reported
    // `consistent_read`). Re-timed like the test above: broker 2 is cut from the controller
    // only, for 14 s, so the controller fences it and elects uncleanly while clients still
    // reach it.
    const CAPSULE: &str = r#"{"seed":1678,"brokers":[3],"unclean_leader_election_enable":true,"log_flush_interval_ms":null,"topics":[{"name":"t0","partitions":1,"replication_factor":3,"min_insync_replicas":1}],"clients":[{"kind":"consumer","topic":0,"read_committed":false},{"kind":"producer","topic":0,"acks":1,"rate":10}],"faults":[{"at_ms":5546,"fault":{"kind":"isolate","cluster":0,"broker":1,"for_ms":19442}},{"at_ms":7171,"fault":{"kind":"isolate","cluster":0,"broker":3,"for_ms":11471}},{"at_ms":26237,"fault":{"kind":"isolate_from_controller","cluster":0,"broker":2,"for_ms":14000}}],"safety_ms":52376,"liveness_ms":120000,"mirror":false,"design":"seed","failover_clients":[],"build":"mirror-sim 0.1.0","net":{"intra_min_us":169,"intra_max_us":2585,"wan_min_ms":65,"wan_mean_extra_ms":28,"wan_max_ms":395}}"#;
    passes_with(CAPSULE, "UNCLEAN", "the case needs an unclean election");
}

#[test]
fn a_clean_leader_that_inherits_its_own_unclean_election_is_a_declared_loss() {
    // Seed 3308, shrunk: t0-0 (RF 2, unclean election on). Broker 2 is cut off long enough to
    // leave the ISR, broker 1 commits more alone and crashes; the controller elects broker 2
    // uncleanly in epoch 1 while it is paused, fences it (epoch 2, no leader) and, when it
    // returns, elects it cleanly from the ISR [2] the unclean election left (epoch 3). Broker
    // 2 first acts as leader in epoch 3: what it lacks is the unclean election's declared
    // loss (KIP-704: the ISR was forced to the unclean leader), not a `leader_completeness`
    // violation. `check::unclean_line`'s unit tests show the forbidden side.
    const CAPSULE: &str = r#"{"seed":3308,"brokers":[3],"unclean_leader_election_enable":true,"log_flush_interval_ms":null,"topics":[{"name":"t0","partitions":1,"replication_factor":2,"min_insync_replicas":1}],"clients":[{"kind":"producer","topic":0,"acks":-1,"rate":10}],"faults":[{"at_ms":2870,"fault":{"kind":"isolate","cluster":0,"broker":2,"for_ms":7215}},{"at_ms":15939,"fault":{"kind":"crash","cluster":0,"broker":1,"mode":"Process","down_ms":13332}},{"at_ms":18809,"fault":{"kind":"pause","cluster":0,"broker":2,"for_ms":12985}}],"safety_ms":26900,"liveness_ms":120000,"mirror":false,"design":"seed","failover_clients":[],"build":"mirror-sim 0.1.0","net":{"intra_min_us":77,"intra_max_us":2521,"wan_min_ms":71,"wan_mean_extra_ms":3,"wan_max_ms":151}}"#;
    passes_with(CAPSULE, "UNCLEAN", "the case needs an unclean election");
}
