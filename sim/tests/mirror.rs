//! KIP-1279 end to end between two simulated clusters: start → mirror → stop (failover) →
//! write on the destination → failback to the old source with the LME.

use mirror_core::mirror::MirrorPartitionState as S;
use mirror_core::protocol::{ClusterIdx, ErrorCode};
use mirror_core::record::{BatchBuilder, RecordBatch, SimpleRecord};
use mirror_core::types::{Offset, TopicPartition};
use mirror_sim::kafka::{ClusterSpec, KafkaWorld, KafkaWorldSpec};
use mirror_sim::net::NetConfig;
use mirror_sim::world::run_seed;

const SRC: ClusterIdx = ClusterIdx(0);
const DST: ClusterIdx = ClusterIdx(1);

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
) -> (ErrorCode, Offset) {
    let recs: Vec<SimpleRecord> = (0..n)
        .map(|i| SimpleRecord::value(i as i64, format!("{tag}-{i}")))
        .collect();
    w.produce_batch(cluster, tp, BatchBuilder::new().build(&recs), -1)
        .await
        .unwrap_or((ErrorCode::RequestTimedOut, Offset(-1)))
}

fn leader_log(w: &KafkaWorld, cluster: ClusterIdx, tp: &TopicPartition) -> Vec<RecordBatch> {
    let l = w.leader(cluster, tp).unwrap();
    w.with_broker(cluster, l, |b| {
        b.partition(tp).unwrap().log.batches().cloned().collect()
    })
    .unwrap()
}

#[test]
fn start_mirror_stop_write_and_fail_back() {
    let out = run_seed(21, || async {
        let w = KafkaWorld::start(spec());
        w.run_for_ms(3_000).await;
        let tp = TopicPartition::new("orders", 0);
        assert_eq!(
            w.create_topic(SRC, "orders", 1, 3, &[]).await,
            ErrorCode::None
        );
        for i in 0..5 {
            assert_eq!(
                produce(&w, SRC, &tp, 4, &format!("a{i}")).await.0,
                ErrorCode::None
            );
        }
        // --- start mirroring src -> dst
        assert_eq!(w.create_mirror(DST, "m1", SRC).await, ErrorCode::None);
        assert_eq!(
            w.start_mirror_topics(DST, "m1", SRC, &["orders"]).await,
            ErrorCode::None
        );
        let mirrored = w
            .wait_until(60_000, |w| {
                w.mirror_state(DST, &tp) == Some(S::Mirroring)
                    && w.leader(DST, &tp).is_some_and(|l| {
                        w.replica_offsets(DST, l, &tp).map(|o| o.0) == Some(Offset(20))
                    })
            })
            .await;
        assert!(
            mirrored,
            "state {:?}, dst {:?}",
            w.mirror_state(DST, &tp),
            w.leader(DST, &tp)
                .and_then(|l| w.replica_offsets(DST, l, &tp))
        );
        assert_eq!(
            leader_log(&w, DST, &tp),
            leader_log(&w, SRC, &tp),
            "byte-identical, offset-identical"
        );
        // read-only while mirroring
        assert_eq!(
            produce(&w, DST, &tp, 1, "x").await.0,
            ErrorCode::ReadOnlyTopic
        );
        // more source writes flow through
        assert_eq!(produce(&w, SRC, &tp, 4, "b").await.0, ErrorCode::None);
        assert!(
            w.wait_until(30_000, |w| leader_log(w, DST, &tp)
                == leader_log(w, SRC, &tp))
                .await
        );
        // --- failover: stop on dst
        let src_epoch = leader_log(&w, SRC, &tp)
            .last()
            .unwrap()
            .partition_leader_epoch();
        assert_eq!(
            w.stop_mirror_topics(DST, "m1", &["orders"]).await,
            ErrorCode::None
        );
        let stopped = w
            .wait_until(60_000, |w| w.mirror_state(DST, &tp) == Some(S::Stopped))
            .await;
        assert!(stopped, "state {:?}", w.mirror_state(DST, &tp));
        let (e, off) = produce(&w, DST, &tp, 3, "c").await;
        assert_eq!(e, ErrorCode::None, "writable after STOPPED");
        assert_eq!(
            off,
            Offset(25),
            "after 24 mirrored records and the MIRROR_PID_RESET at 24"
        );
        let dst_log = leader_log(&w, DST, &tp);
        let reset = &dst_log[dst_log.len() - 2];
        assert_eq!(
            reset.control_record(),
            Some(mirror_core::record::ControlRecord::MirrorPidReset)
        );
        assert!(
            dst_log.last().unwrap().partition_leader_epoch() > src_epoch,
            "epoch after stop above the LME"
        );
        // The old source keeps a tail that was never mirrored.
        assert_eq!(produce(&w, SRC, &tp, 2, "d").await.0, ErrorCode::None);
        // --- failback: mirror dst -> src on the old source
        assert_eq!(w.create_mirror(SRC, "back", DST).await, ErrorCode::None);
        assert_eq!(
            w.start_mirror_topics(SRC, "back", DST, &["orders"]).await,
            ErrorCode::None
        );
        let converged = w
            .wait_until(90_000, |w| {
                w.mirror_state(SRC, &tp) == Some(S::Mirroring)
                    && leader_log(w, SRC, &tp) == leader_log(w, DST, &tp)
            })
            .await;
        assert!(
            converged,
            "state {:?} src {} dst {}",
            w.mirror_state(SRC, &tp),
            leader_log(&w, SRC, &tp).len(),
            leader_log(&w, DST, &tp).len()
        );
        let lines = w.world.trace_lines();
        (w.finish(), lines)
    })
    .unwrap();
    assert_eq!(out.0, None, "no invariant broke");
    assert!(
        out.1.iter().any(|l| l.contains("aligned lme=")),
        "failback aligned by the LME"
    );
}

#[test]
fn a_mirror_loop_fails_the_second_mirror_and_the_first_keeps_mirroring() {
    // S20: src -> dst mirrors `orders`; a second mirror dst -> src on the same topic must go
    // FAILED ("Detected mirror loop") while the first stays MIRRORING.
    let out = run_seed(31, || async {
        let w = KafkaWorld::start(spec());
        w.run_for_ms(3_000).await;
        let tp = TopicPartition::new("orders", 0);
        assert_eq!(
            w.create_topic(SRC, "orders", 1, 3, &[]).await,
            ErrorCode::None
        );
        assert_eq!(produce(&w, SRC, &tp, 4, "a").await.0, ErrorCode::None);
        assert_eq!(w.create_mirror(DST, "m1", SRC).await, ErrorCode::None);
        assert_eq!(
            w.start_mirror_topics(DST, "m1", SRC, &["orders"]).await,
            ErrorCode::None
        );
        assert!(
            w.wait_until(30_000, |w| w.mirror_state(DST, &tp) == Some(S::Mirroring))
                .await
        );
        assert_eq!(w.create_mirror(SRC, "loop", DST).await, ErrorCode::None);
        assert_eq!(
            w.start_mirror_topics(SRC, "loop", DST, &["orders"]).await,
            ErrorCode::None
        );
        let failed = w
            .wait_until(30_000, |w| w.mirror_state(SRC, &tp) == Some(S::Failed))
            .await;
        (failed, w.mirror_state(DST, &tp), w.finish())
    })
    .unwrap();
    assert!(out.0, "the looping mirror went FAILED");
    assert_eq!(
        out.1,
        Some(S::Mirroring),
        "the first mirror keeps mirroring"
    );
    assert_eq!(out.2, None);
}

#[test]
fn delete_mirror_writes_tombstones_in_mirror_state() {
    // S27: after stop, DeleteMirror succeeds and the coordinators drop the mirror's keys.
    let out = run_seed(33, || async {
        let w = KafkaWorld::start(spec());
        w.run_for_ms(3_000).await;
        let tp = TopicPartition::new("orders", 0);
        w.create_topic(SRC, "orders", 1, 3, &[]).await;
        assert_eq!(produce(&w, SRC, &tp, 4, "a").await.0, ErrorCode::None);
        w.create_mirror(DST, "m1", SRC).await;
        w.start_mirror_topics(DST, "m1", SRC, &["orders"]).await;
        assert!(
            w.wait_until(30_000, |w| w.mirror_state(DST, &tp) == Some(S::Mirroring))
                .await
        );
        let keys = |w: &KafkaWorld| -> usize {
            w.broker_ids(DST)
                .into_iter()
                .filter_map(|b| {
                    w.with_broker(DST, b, |br| {
                        (0..3)
                            .filter_map(|p| br.mirror_coordinators().store(p))
                            .map(|s| s.partitions_of("m1").len())
                            .sum::<usize>()
                    })
                })
                .sum()
        };
        let before = keys(&w);
        w.stop_mirror_topics(DST, "m1", &["orders"]).await;
        assert!(
            w.wait_until(30_000, |w| w.mirror_state(DST, &tp) == Some(S::Stopped))
                .await
        );
        let del = w
            .admin(
                DST,
                mirror_core::protocol::Request::DeleteMirror {
                    mirror_name: "m1".into(),
                    state_validation_offset: None,
                },
            )
            .await;
        w.run_for_ms(2_000).await;
        (before, keys(&w), del, w.finish())
    })
    .unwrap();
    assert_eq!(out.0, 1, "one partition key before");
    assert_eq!(out.1, 0, "tombstoned after DeleteMirror: {:?}", out.2);
    assert_eq!(out.3, None);
}

/// Replays a shrunk chaos capsule kept under `tests/capsules` (as `mirrorsim shrink` wrote it).
fn replay_capsule(json: &str) -> mirror_sim::chaos::ChaosOutcome {
    let plan: mirror_sim::chaos::ChaosPlan = serde_json::from_str(json).unwrap();
    mirror_sim::chaos::run_plan(plan, &mirror_sim::chaos::ChaosOptions::default())
}

/// The capsule passes and, when `needle` is given, its trace shows it (`why`: the event the
/// case is about).
fn passes_with(json: &str, needle: Option<&str>, why: &str) {
    let out = replay_capsule(json);
    assert!(
        matches!(out.verdict, mirror_sim::chaos::Verdict::Pass),
        "{:?}",
        out.verdict
    );
    if let Some(needle) = needle {
        assert_report_has(&out, &[(needle, why)]);
    }
}

/// The capsule fails with verdict kind `kind` and its trace shows each needle (with the
/// `why` the case needs it); the outcome is returned for further checks.
fn fails_with(json: &str, kind: &str, needles: &[(&str, &str)]) -> mirror_sim::chaos::ChaosOutcome {
    let out = replay_capsule(json);
    assert_eq!(out.kind(), kind, "{:?}", out.verdict);
    assert_report_has(&out, needles);
    out
}

/// Asserts that a line of the replay's report contains each needle; its `why` says what the
/// case needs that line for.
fn assert_report_has(out: &mirror_sim::chaos::ChaosOutcome, needles: &[(&str, &str)]) {
    let lines = out.report.as_ref().map_or(&[][..], |r| r.lines.as_slice());
    for (needle, why) in needles {
        assert!(lines.iter().any(|l| l.contains(needle)), "{why}");
    }
}

#[test]
fn a_stopping_write_whose_response_was_lost_is_reported_when_the_writer_leads_again() {
    // Mirror chaos seed 154 (shrunk): dst-3 leads t0-2 at epoch 0 and writes MIRRORING ->
    // STOPPING to a `__mirror_state` coordinator that dies; the retry lands on a zombie
    // coordinator, is committed only after an unclean election, and dst-3 reads it back when
    // it leads t0-2 at epoch 3. The writer never saw the write succeed, so the read reports
    // the transition (once); before, the checkers kept MIRRORING and flagged the stop plan's
    // control batch (mirror_not_ahead_of_source). t1-1 is the same with another writer
    // (dst-1 at epoch 0, read by dst-3 at epoch 2): no broker can report it, and the checker
    // adopts the state the leader read (its state epoch is newer than the last one seen).
    let out = replay_capsule(include_str!(
        "capsules/mirror-154-stopping-write-surfaces-later.json"
    ));
    assert!(
        matches!(out.verdict, mirror_sim::chaos::Verdict::Pass),
        "{:?}",
        out.verdict
    );
    // Since brokers give up a controller request lost in a healed cut within seconds (not
    // `request.timeout.ms`), this schedule no longer loses the STOPPING response: the stop
    // now runs in the liveness phase and is reported by its writer. The capsule still pins
    // the verdict; the lost-response path needs a re-timed capsule (M6 closing note).
    let lines = out.report.map(|r| r.lines).unwrap_or_default();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("t0-2") && l.contains("MIRRORING→STOPPING")),
        "the stop of t0-2 is reported"
    );
}

#[test]
fn a_zombie_hw_cut_after_an_unclean_election_is_not_a_violation() {
    // Mirror chaos seed 67 (shrunk): dst-1 and dst-3, cut off from the controller, keep
    // `__transaction_state-1` in epoch 0 and advance its HW to 124 after the controller
    // elected epoch 1 and, uncleanly, dst-2 in epoch 2. dst-3 then truncates to the unclean
    // leader's log below that HW: the declared unclean election allows it (kafka-semantics
    // §2.3 item 7).
    let out = replay_capsule(include_str!(
        "capsules/mirror-67-zombie-hw-after-unclean.json"
    ));
    assert!(
        matches!(out.verdict, mirror_sim::chaos::Verdict::Pass),
        "{:?}",
        out.verdict
    );
}

#[test]
fn a_failback_cut_of_the_leaders_own_log_fails_the_produces_parked_past_it() {
    // Mirror chaos seed 1676 (shrunk): src-1 leads t0-0 (RF 2, min ISR 2) with acks=all
    // produces for 110..149 parked above HW 110 when the failback's first mirror fetch
    // diverges in epoch 0 and src-1 cuts its own log 150 -> 70. The copied history then
    // refills 70.. and the HW passes 150: before, the parked produces completed NONE at
    // base offsets 110..140, acknowledging the new primary's records as the client's
    // (no_lost_acked_write). A leader that cuts its log fails what was parked past the cut.
    passes_with(
        include_str!("capsules/mirror-1676-failback-cut-fails-parked-produces.json"),
        Some("truncate leo 150→70 hw=110 cause=Mirror"),
        "the case needs the leader's own cut below parked produces",
    );
}

#[test]
fn a_stop_that_timed_out_on_a_paused_broker_may_land_after_a_resume() {
    // Mirror chaos seed 1630 (shrunk): the mirror is paused, then dst-1 (where the admin
    // client sends first) is frozen. The stop times out on dst-1, its retry on dst-2 is
    // refused (MIRROR_TOPIC_ALREADY_PAUSED), the pause's own resume is accepted, and when
    // dst-1 wakes it forwards the original stop, which the controller now commits: the
    // partition ends STOPPED. A timed-out request may still be applied (its outcome is
    // unknown), so convergence accepts STOPPED after a stop whose client gave up; before,
    // the run was reported stuck (mirror_progress: STOPPED, want MIRRORING).
    passes_with(
        include_str!("capsules/mirror-1630-timed-out-stop-lands-late.json"),
        Some("MIRRORING→STOPPING"),
        "the case needs the late stop to land",
    );
}

#[test]
fn a_coordinator_write_the_hw_never_reaches_times_out_and_the_client_retries() {
    // Mirror chaos seed 9149 (shrunk): a failover client's EndTxn makes the coordinator on
    // dst-3 append its PrepareAbort to `__transaction_state`, whose HW a silent follower
    // still counted as caught up holds back; nothing writes there again, so the HW is never
    // recomputed. Kafka's coordinator append waits at most `request.timeout.ms` and answers
    // COORDINATOR_NOT_AVAILABLE; the client's retry appends again, the HW moves and the
    // markers go out. Before, the write waited for ever, EndTxn was answered
    // CONCURRENT_TRANSACTIONS for good and the transaction hung (lso_reaches_hw).
    passes_with(
        include_str!("capsules/mirror-9149-coordinator-write-times-out.json"),
        None,
        "",
    );
}

#[test]
fn an_epoch_bump_caused_by_one_partition_keeps_the_stamps_of_batches_sent_to_others() {
    // Mirror chaos seed 30462 (shrunk): a failover producer's batch for t0-1 (pid 0, seq 80)
    // is appended at 602 but answered NOT_LEADER_OR_FOLLOWER; before its retry, a
    // READ_ONLY_TOPIC on t0-3 makes the idempotent producer bump (a new pid, 2000). The
    // retry was re-stamped pid 2000 seq 0 and written again at 612 (no_duplicates). Kafka
    // rewrites sequences only for the partition that caused the bump
    // (`partitionsToRewriteSequences`); a batch already sent elsewhere keeps its stamp and
    // the broker recognises it (acked at 602). Since fresh seed 711013777's fix, that
    // READ_ONLY_TOPIC (a leader that had not read t0-3's state yet) is a retriable
    // NOT_LEADER_OR_FOLLOWER and this schedule no longer bumps; the capsule still pins the
    // verdict, and the rule itself is tested on the producer alone
    // (`workload::producer::bump_tests::a_bump_caused_by_one_partition_rewrites_only_that_partitions_sequences`).
    passes_with(
        include_str!("capsules/mirror-30462-bump-keeps-sent-batch-stamps.json"),
        None,
        "",
    );
}

#[test]
fn a_new_leader_that_has_not_read_a_stopped_partitions_state_asks_producers_to_retry() {
    // Fresh mirror chaos seed 711013777 (shrinking cut nothing): a failover producer's
    // batches on t1-1 were appended at 387..416 by the new primary's leader, which was paused
    // and lost its leadership (NOT_LEADER_OR_FOLLOWER); an unclean election made it leader
    // again with them. Before its read of t1-1's `__mirror_state` record returned it took
    // the partition for read-only and answered the retry READ_ONLY_TOPIC, which is not
    // retriable: the idempotent producer took a new producer id and resent the batches
    // after the refused one, appended again at 417 (no_duplicates). A retriable answer
    // while the stop's state is unread lets the retry keep its stamp, and the broker
    // recognises it.
    passes_with(
        include_str!("capsules/mirror-711013777-read-only-before-state-read.json"),
        Some("t1-1         elect leader=2 le=5 isr=[2] UNCLEAN"),
        "the case needs the unclean election of the leader that holds the batches",
    );
}

#[test]
fn a_stopped_partition_re_reads_its_state_when_the_mirror_state_partition_moves() {
    // Mirror chaos seed 7771 (shrunk, re-timed for KIP-227 fetch sessions): an unclean election of `__mirror_state-2` on the new
    // primary loses the STOPPING and STOPPED records of t1-0 (MIRRORING is read back). The
    // STOPPED leader never wrote again, so the coordinator answered MIRRORING to the old
    // source's failback lookup for ever (PREPARING, liveness). A settled run re-reads when
    // its `__mirror_state` partition changes leader and stops again.
    passes_with(
        include_str!("capsules/mirror-7771-mirror-state-regressed-by-unclean-election.json"),
        Some("t1-0         STOPPING→STOPPED se=4 le=1"),
        "the case needs the second stop after the regressed read",
    );
}

#[test]
fn a_stopped_leader_that_reads_back_stopping_writes_stopped_again_without_a_second_stop() {
    // Mirror chaos seed 64 (the drawn plan): `__mirror_state` loses t0-1's STOPPED record
    // with a declared loss and its new leader loads STOPPING. The STOPPED leader of t0-1
    // re-reads when that partition changes leader, finds the older state and writes STOPPED
    // again (with the failback marker taken as the stop took it). Re-running the stop plan
    // instead would cut and PID-reset a log that has taken the failover's writes.
    passes_with(
        include_str!("capsules/mirror-64-stopped-record-regressed-to-stopping.json"),
        Some("state regressed: read STOPPING se=3 below STOPPED se=4, writing STOPPED again"),
        "the case needs the regressed read",
    );
}

#[test]
fn a_stopped_leader_keeps_stopped_while_a_new_coordinator_reads_back_an_older_state() {
    // Fresh mirror chaos seed 704949 (shrunk): the `__mirror_state` leader restarts and
    // leads again alone, below min.insync.replicas, so its HW (KIP-966) stays below the
    // STOPPING and STOPPED records it holds: its reads answer MIRRORING se=2, its writes are
    // checked against STOPPED se=4. The STOPPED leader of t0-0 took MIRRORING as its own
    // (its failed-over topic refused producers and transaction markers with READ_ONLY_TOPIC)
    // and, once the HW passed the records, reported MIRRORING -> STOPPED (valid_transitions).
    // It now stays STOPPED and writes the record forward from the older answer; the write is
    // fenced until the coordinator catches up.
    passes_with(
        include_str!("capsules/mirror-704949-stale-coordinator-read-below-stopped.json"),
        Some("state regressed: read MIRRORING se=2 below STOPPED se=4, writing STOPPING again"),
        "the case needs the stale read",
    );
}

#[test]
fn finding_an_uncommitted_state_write_that_cannot_commit_fences_every_later_writer() {
    // F4 (fresh mirror seed 804767, shrunk; kip1279.md A "fenced by leader epoch and a state
    // epoch", B §4.2 "request stateEpoch != stored -> FENCED_STATE_EPOCH", read operations of
    // Kafka's CoordinatorRuntime at the last committed offset). src-3 leads the failback
    // target t1-1 at epoch 3 and writes UNKNOWN -> PREPARING to the `__mirror_state`
    // coordinator src-2, which appends it (offset 2 of __mirror_state-0, ISR [2]) but cannot
    // commit it: src-3 is out of the ISR but still counts for the HW as a caught-up, eligible
    // replica (Kafka's maybeIncrementLeaderHW waits for it up to replica.lag.time.max.ms), and
    // it never fetches (its fetch to src-2 was lost in src-2's crash), then crashes for good.
    // Kafka recomputes a leader HW only on an append, a follower fetch, an ISR change or
    // makeLeader (kafka-semantics.md 1.5), so the record stays uncommitted. The next leader
    // (src-1, epoch 4) reads the committed state (UNKNOWN, state epoch 0) and writes with
    // state epoch 0; the coordinator checks the latest state (epoch 1) and answers
    // FENCED_STATE_EPOCH, with no append, for ever.
    let out = replay_capsule(include_str!(
        "capsules/mirror-804767-uncommitted-state-write-fences-later-writers.json"
    ));
    match &out.verdict {
        mirror_sim::chaos::Verdict::Liveness { detail } => assert!(
            detail.contains("state UNKNOWN want MIRRORING") && detail.contains("t1-1 on cluster 0"),
            "{detail}"
        ),
        other => panic!("expected the failback target stuck in UNKNOWN, got {other:?}"),
    }
}

#[test]
fn an_unclean_leader_with_an_empty_log_below_the_committed_log_start_starts_a_new_history() {
    // Fresh mirror chaos seed 903072 (shrunk; a checker false positive, fixed in the ghost).
    // The new primary's committed history of t0-0 starts at 22 (DeleteRecords on the source,
    // mirrored as a log start), and dst-3, whose log is empty (LEO 0), wins an unclean
    // election. Its stop writes a PID reset at offset 0 and commits it. The ghost cut the
    // committed history only from the first batch dst-3 lacked (22), so the true HW stayed
    // at 22 and the new batches below it never entered the committed history: the failback's
    // copy of the reset at 0 was judged "not in source cluster 1's committed history"
    // (mirror_prefix). The history an unclean election chooses starts at its leader's LEO
    // (kafka-semantics 2.2), so the cut now starts there.
    passes_with(
        include_str!("capsules/mirror-903072-unclean-leader-below-the-committed-log-start.json"),
        Some("record lme=-1 leo=0"),
        "the case needs the stop of the empty unclean leader's log",
    );
}

#[test]
fn finding_a_stop_re_driven_over_the_new_primarys_writes_duplicates_their_retries() {
    // F5 (fresh mirror chaos seed 905707, shrunk; kip1279.md A "every action must be
    // idempotent", B 7.6 item 5 "PID reset (could be written twice)"). dst-1 is the only
    // broker of the new primary. t0-0 stops (reset at 110, STOPPED) and the failover producer
    // writes 111..234; its batch at 195 (pid 0, seq 40) is written but the answer is lost
    // (dst-1 isolated, then crashed). The crash loses the unflushed tail of the log (205..)
    // and of `__mirror_state` (the STOPPED record): declared losses. The restarted leader reads
    // STOPPING and re-drives the stop. As the KIP writes it, the stop appends a second
    // MIRROR_PID_RESET at 205, which expires pid 0; the producer's retry of seq 40 is then a
    // new producer to Kafka's checkSequence and is appended again at 206: a duplicate that
    // no declared loss covers (Kafka alone deduplicates it from the producer state it rebuilds
    // from the log). The seed design takes the stop's own reset in the log as the mark that
    // its cut and barrier ran, and skips them.
    let json =
        include_str!("capsules/mirror-905707-redriven-stop-resets-the-new-primarys-producer.json");
    passes_with(
        json,
        Some("t0-0         STOPPING→STOPPED se=4 le=3"),
        "the case needs the re-driven stop of t0-0 after the restart",
    );
    let plan: mirror_sim::chaos::ChaosPlan = serde_json::from_str(json).unwrap();
    let out = mirror_sim::chaos::run_plan(
        plan,
        &mirror_sim::chaos::ChaosOptions {
            design: Some("seed-no-idempotent-stop".into()),
            ..mirror_sim::chaos::ChaosOptions::default()
        },
    );
    match &out.verdict {
        mirror_sim::chaos::Verdict::Violation(v) => {
            assert_eq!(v.invariant, "no_duplicates", "{v:?}");
        }
        other => panic!("the KIP's re-driven stop should duplicate a retry, got {other:?}"),
    }
}

#[test]
fn a_failback_start_whose_answer_was_lost_is_waited_for() {
    // Latest mirror chaos seed 558 (shrunk; a harness false positive). The failback's
    // StartMirrorTopics is committed by the old source's controller (src-1 goes PREPARING ->
    // MIRRORING at 26.8 s), but the answer never reaches the operator: src-1 pauses at 26.9 s,
    // and the liveness phase then ends the operator's retries. The run took the failback as
    // never started, found the destination STOPPED as asked and ended while the failback had
    // copied nothing, and `failback_converges` judged the half-done copy. A start whose
    // answer was lost is a "maybe", as a stop's is: once the old source mirrors back, the run
    // waits for the failback to converge.
    passes_with(
        include_str!("capsules/mirror-latest-558-failback-start-answer-lost.json"),
        Some("src-1  t0-0         PREPARING→MIRRORING se=2 le=2"),
        "the case needs the failback that the operator never heard of",
    );
}

#[test]
fn the_liveness_phase_finds_a_producer_that_never_finishes_a_batch() {
    // Checker teeth for `liveness:client_busy`: fresh mirror seed 717000823 (shrunk to 2
    // faults with the bug planted) with the workload producer's bug fixed there undone. A
    // batch whose leader is unknown asks for a metadata refresh while it is being sent; left
    // for the next step, whose due time is then already past, the producer sleeps until the
    // batch expires (delivery.timeout.ms, 120 s), after every log has converged. The
    // liveness phase waits for producers in flight, so it ends with the producer named; the
    // same capsule without the planted bug passes.
    let json =
        include_str!("capsules/mirror-717000823-producer-defers-metadata-refresh-planted.json");
    let plan: mirror_sim::chaos::ChaosPlan = serde_json::from_str(json).unwrap();
    let planted = mirror_sim::chaos::ChaosOptions {
        ablation_producer_defers_metadata_refresh: true,
        ..mirror_sim::chaos::ChaosOptions::default()
    };
    let out = mirror_sim::chaos::run_plan(plan, &planted);
    assert_eq!(out.kind(), "liveness:client_busy");
    let mirror_sim::chaos::Verdict::Liveness { detail } = &out.verdict else {
        unreachable!("the kind says liveness")
    };
    assert!(detail.ends_with(": src-c6"), "{detail}");
    passes_with(json, None, "");
}

#[test]
fn finding_a_stale_leaders_acks_1_tail_cut_at_a_mid_batch_log_start_never_rejoins_the_isr() {
    // K2 (Kafka) with no declared loss, fresh single-cluster chaos seed 718001077 (shrunk to
    // 4 faults). src-1 leads t0-0 (RF 2, min ISR 1) cut off from the controller while src-2
    // is down: the ISR cannot shrink, the HW stays at 150, and src-1 appends 150..439 in
    // epoch 0 for an acks=1 producer. Fenced, it is replaced by src-2 in a clean election
    // (epoch 3, writing from 150): the acks=1 tail was never committed and may go. A
    // DeleteRecords to 275 leaves src-2's epoch cache {3@275}; src-1, back, fetches with
    // LastFetchedEpoch 0, is told that epoch ends at 275, truncates 440 -> 275 inside
    // src-2's batch 270..279, and every later fetch returns that batch, which Kafka appends
    // only into an empty log. src-1 never rejoins the ISR.
    let out = fails_with(
        include_str!(
            "capsules/single-718001077-stale-leaders-acks1-tail-cut-at-a-mid-batch-log-start.json"
        ),
        "liveness:isr_short:cut_at_mid_batch_log_start",
        &[
            (
                "src-2  t0-0         log start=275",
                "the case needs the mid-batch log start",
            ),
            (
                "src-1  t0-0         ! truncate leo 440→275 hw=150 cause=DivergingEpoch",
                "the case needs the stale leader cut at the log start",
            ),
        ],
    );
    assert!(out.losses.by_cause.is_empty(), "{:?}", out.losses);
}

#[test]
fn lab_no_epoch_bump_a_follower_cut_inside_its_batch_at_the_mirrored_log_start_never_rejoins() {
    // The design lab's one liveness seed of `seed-no-epoch-bump` over 1..1001 (mirror seed
    // 639; its shrink keeps all 11 faults), K2's outcome after a declared loss. Bit rot on
    // src-1, the old source's last ISR member of t0-1, leaves it empty at its log start 5
    // (mirrored from the new primary's DeleteRecords). src-2 resets to that end, inside its
    // own batch 0..9, which it drops whole: LEO 5, log start 0. At the failback src-1 copies
    // the new primary's epoch-0 batch 0..9 again with log start 5; src-2's fetch at 5 gets
    // that batch, which starts below its LEO in a log that is not empty, and is refused on
    // every try. Its kind is the bare one: the model left src-2 no epoch at all.
    let out = fails_with(
        include_str!(
            "capsules/mirror-639-seed-no-epoch-bump-follower-cut-inside-its-batch-at-the-mirrored-log-start.json"
        ),
        "liveness:isr_short",
        &[
            (
                "src-2  t0-1         ! truncate leo 10→5 hw=0 cause=LeaderEndBelowLocal",
                "the case needs the follower cut inside its own batch",
            ),
            (
                "src-1  t0-1         log start=5",
                "the case needs the mirrored mid-batch log start",
            ),
        ],
    );
    assert!(
        out.losses
            .by_cause
            .contains_key("corrupt_batch_on_last_isr_member"),
        "{:?}",
        out.losses
    );
}

#[test]
fn a_power_loss_that_brings_back_a_truncated_tail_of_the_same_length_is_a_lossy_restart() {
    // Fresh mirror chaos seed 913900 (shrunk; a checker false positive). At the failback
    // src-1, a follower of the mirror leader src-2, truncates its own epoch-0 tail 30 -> 20
    // (DivergingEpoch), takes the copied epoch-1 PID reset at 20 and learns HW 21; the HW
    // checkpoint reaches the disk, the truncation and the append do not. A power loss brings
    // back 0..29 in epoch 0 with HW 21, and the next fetch truncates to 20, below that HW.
    // Kafka does the same: the recovered HW is no promise over a log that lost unflushed
    // writes (seed 6220). The checker took a restart as lossy only when the LEO came back
    // shorter; it now also does when the replica's last batch is gone.
    passes_with(
        include_str!("capsules/mirror-913900-power-loss-brings-back-the-truncated-tail.json"),
        Some("truncate leo 30→20 hw=21 cause=DivergingEpoch"),
        "the case needs the truncation below the recovered HW",
    );
}

#[test]
fn a_transaction_whose_marker_rotted_on_an_unclean_leader_is_kafkas_hang() {
    // Fresh mirror chaos seed 912889 (shrunk; a checker false positive). dst-2 stops t0-2
    // (LME 0 at 823) with the mirrored transactions all decided; bit rot in its flushed
    // batch at 394 cuts its log there on the next recovery, dropping the marker of a source
    // transaction begun at 384. dst-1 had led uncleanly in between (the declared loss starts
    // where its short history differs); dst-2 then leads uncleanly with 0..393, and the
    // transaction at 384 stays open for ever: its coordinator is in the other cluster, and
    // the stop that would have cut it is done. A marker lost to bit rot on the only copy
    // hangs a transaction in plain Kafka too (KIP-664): a declared loss of the partition and
    // the leader's own cut above the transaction's start now explain it.
    passes_with(
        include_str!("capsules/mirror-912889-rotten-marker-under-an-unclean-leader.json"),
        Some("dst-2  t0-2         recovery cut the log at a corrupt batch: leo=394"),
        "the case needs the rotten marker on the replica that then leads",
    );
}

/// The `lso_reaches_hw` violation of a run that must end with a hanging transaction.
fn hang_of(out: &mirror_sim::chaos::ChaosOutcome) -> &mirror_sim::check::Violation {
    match &out.verdict {
        mirror_sim::chaos::Verdict::Violation(v) if v.invariant == "lso_reaches_hw" => v,
        other => panic!("expected a hanging transaction, got {other:?}"),
    }
}

#[test]
fn finding_a_failback_cut_at_the_new_primarys_log_start_splits_an_old_transaction() {
    // F1, fresh mirror chaos seed 912441 (shrunk to 3 faults: stop, DeleteRecords on the new
    // primary, failback). The new primary stopped t0-1 with LME 0 at 20 (its epoch 1 starts
    // at the reset at 20), then a DeleteRecords moved its log start to 164: Kafka's
    // `truncateFromStart` moves the first cache entry up, so epoch 1 "starts" at 164 and
    // epoch 0 has no entry. At the failback the old source's own log is all epoch 0, so the
    // LME truncation cuts nothing, and its mirror fetch (LastFetchedEpoch 0) is answered
    // "epoch 0 ends at 164": it cuts its log at 164, inside one of its own committed
    // transactions (data below 164, COMMIT above), and follows the log start to 164. The
    // records are gone, the open transaction is not: the old source is a read-only mirror
    // now, no marker will come, and its LSO stays at 164 for ever.
    let out = replay_capsule(include_str!(
        "capsules/mirror-912441-failback-cut-at-the-primarys-log-start-splits-a-transaction.json"
    ));
    let v = hang_of(&out);
    assert!(v.detail.contains("LSO 164"), "{v:?}");
    // Its own kind, so the known-findings file lists this form without covering every hang
    // (`chaos_teeth.rs`: a hang the stop left keeps the bare kind).
    assert_eq!(out.kind(), "violation:lso_reaches_hw:mirror_cut_inside_txn");
}

#[test]
fn finding_kafkas_transaction_coordinator_answers_from_a_record_that_never_commits() {
    // A finding about Kafka (not the KIP), fresh mirror chaos seed 140445159 (shrunk to 5
    // faults, all on the source; the mirror plays no part). txn-8's AddPartitionsToTxn
    // reached src-1, the coordinator then, which appended the Ongoing record (t0-0) and was
    // isolated before it committed: the ISR member src-2 lacked it. src-3, elected for
    // `__transaction_state-0`, loaded its log up to the end, record included (Kafka loads to
    // the LEO), and answered the retried AddPartitionsToTxn NONE at once, with nothing
    // written. The producer wrote its transactional batch to t0-0 (acks=all, committed) and
    // sent EndTxn; src-3's PrepareCommit never committed either, and src-3 crashed. src-2,
    // elected cleanly, loaded the completed earlier transaction, answered the EndTxn retry
    // NONE (a retry of a completed commit) and wrote no marker, while src-1 truncated the
    // records nobody had committed. t0-0's transaction stays open: its LSO never reaches the
    // HW. The kind says so, and the known-findings file lists it as K1.
    let out = replay_capsule(include_str!(
        "capsules/mirror-140445159-coordinator-answered-from-an-uncommitted-record.json"
    ));
    assert_eq!(hang_of(&out).node, "src-2");
    assert_eq!(out.kind(), "violation:lso_reaches_hw:coordinator_lost_txn");
}

#[test]
fn finding_a_zombie_transaction_coordinator_answers_from_records_an_unclean_election_drops() {
    // K1's second route, fresh single-cluster chaos seed 974855 (shrunk to 5 faults, 2
    // brokers, so `__transaction_state` has RF 2 and min ISR 1). src-2 led
    // `__transaction_state-1` in epoch 1 with ISR [2]; isolated, it was superseded by an
    // unclean election of src-1 (epoch 2) that lacked nothing committed. Back on the network
    // before its metadata caught up, src-2 is a zombie coordinator: it appends txn-3's
    // AddPartitionsToTxn(t1-0) at 7 in epoch 1, commits it alone (ISR [2]) and answers NONE.
    // The producer writes 11..20 to t1-0's real leader src-1 (acknowledged), and its EndTxn
    // goes to the zombie, whose COMMIT marker lands on its own zombie copy of t1-0. src-2 then
    // follows epoch 2 and truncates both; src-1, the real coordinator, never knew that
    // transaction, so no marker comes and t1-0's LSO stays at 11. Nothing acknowledged is lost
    // and the ghost declares nothing (a zombie's local commits are never in the committed
    // history). The kind is K1's: the coordinator no longer has the transaction open, after
    // its `__transaction_state` replica dropped records written since the ack.
    let out = replay_capsule(include_str!(
        "capsules/single-974855-zombie-coordinator-answers-from-records-an-unclean-election-drops.json"
    ));
    assert_eq!(hang_of(&out).node, "src-1");
    assert_eq!(out.kind(), "violation:lso_reaches_hw:coordinator_lost_txn");
}

#[test]
fn finding_an_old_source_replica_with_its_own_records_in_a_shared_epoch_freezes_the_failback_hw() {
    // F1, fresh mirror chaos seed 930213 (shrunk). The new primary stopped t0-3 with a bump
    // to its own epoch 1 (reset at 33, then its own writes in epoch 1); the old source had
    // led epoch 1 too, writing 44..65 of its own. src-2, a replica of the old source outside
    // the ISR at the failback, keeps them: its LastFetchedEpoch 1 ends at the primary's LEO
    // on the failback leader src-1, so no divergence, and its fetch offset (66) falls inside
    // the primary's batch 64.., which Kafka does not append mid-batch. Its fetcher marks the
    // partition failed (`markPartitionFailed`) until the next leader epoch; then one fetch at
    // 66 (>= the HW) re-admits it, its append is refused again, and it drops out after
    // `replica.lag.time.max.ms`. With min.insync.replicas 2 the HW stays at 66 (KIP-966) and
    // the old source never holds the primary's log. Before the model marked a partition
    // failed, its retries kept it re-admitted until it was elected and led the failback mirror
    // with its own records: `one_history_per_offset`, the outcome fresh seed 803085 keeps
    // (`finding_an_old_source_replica_elected_uncleanly_leads_the_failback_with_its_own_history`).
    fails_with(
        include_str!(
            "capsules/mirror-930213-failback-leader-keeps-its-own-records-in-a-shared-epoch.json"
        ),
        "liveness:hw_below_leo",
        &[(
            "src-2  t0-3         ! fetch from 1 failed at leo 66: batch base offset 64 is below the log end offset 66",
            "the case needs the old source's own epoch-1 records cut inside a copied batch",
        )],
    );
}

#[test]
fn finding_an_old_source_replica_elected_uncleanly_leads_the_failback_with_its_own_history() {
    // F1, fresh mirror chaos seed 803085 (shrunk to 5 faults). The new primary stopped t1-2
    // with a bump to its own epoch 1 at 40; on the old source, src-3 had led epoch 1 too and
    // written its own records from 60. Isolated at the failback, src-3 is outside the ISR
    // when src-2 (epoch 2) truncates to 40, where the primary's epoch 0 ends, and copies the
    // primary's epoch-1 history. src-2 crashes and src-3 wins an unclean election (epoch 3):
    // the mirror leader now holds the old source's own epoch-1 records, and its mirror fetch
    // (LastFetchedEpoch 1, which ends at the primary's LEO) finds no divergence. The two
    // clusters keep different records at 40, below both HWs.
    fails_with(
        include_str!(
            "capsules/mirror-803085-old-source-replica-elected-uncleanly-leads-the-failback.json"
        ),
        "violation:one_history_per_offset",
        &[
            (
                "src-2  t1-2         ! mirror diverged epoch=0 end=40 truncate→40",
                "the case needs the failback's cut to where the primary's epoch 0 ends",
            ),
            (
                "src-ctl t1-2         elect leader=3 le=3 isr=[3] UNCLEAN",
                "the case needs the old-source replica elected uncleanly",
            ),
        ],
    );
}

#[test]
fn finding_a_cut_inside_its_own_batch_leaves_a_hole_the_failback_never_fills() {
    // F1, fresh mirror chaos seed 932067 (shrunk). The new primary stopped an empty t0-0:
    // no bump, its PID reset at 0 and its own writes in epoch 0, the epoch the old source
    // wrote its own 0..9 in. At the failback a replica of the old source outside the ISR
    // asks with LastFetchedEpoch 0; the mirror leader (having copied only the reset) answers
    // "epoch 0 ends at 1", and Kafka's truncateTo(1) drops the whole batch 0..9 and sets the
    // LEO to 1. It then copies 1.. and rejoins the ISR, is elected cleanly later, and leads
    // the failback mirror without offset 0: the primary's reset is never copied, and the
    // logs stay apart below both HWs (an unflushed loss on the last ISR member is declared,
    // which excuses `leader_completeness`, not the stall).
    let out = replay_capsule(include_str!(
        "capsules/mirror-932067-mid-batch-cut-leaves-a-hole-in-a-shared-epoch.json"
    ));
    assert_eq!(
        out.kind(),
        "liveness:logs_differ_in_a_shared_epoch",
        "{:?}",
        out.verdict
    );
}

#[test]
fn finding_a_hole_from_a_cut_inside_its_own_batch_leads_the_failback_mirror() {
    // F1, fresh mirror chaos seed 364370220 (shrunk), the mechanism of seed 932067 above
    // judged at the end of the run. The new primary stopped an empty t0-3 (no bump: its PID
    // reset at 0 in epoch 0); the old source wrote its own transactional batch 0..9 in epoch
    // 0. At the failback src-1 leads, truncates fully and copies the reset; src-2, down at
    // that moment, comes back with 0..32 and asks with LastFetchedEpoch 0. "Epoch 0 ends at
    // 1": Kafka's truncateTo(1) drops the whole batch 0..9 and sets the LEO to 1, so src-2
    // holds no record at 0 yet fetches from 1, and rejoins the ISR. src-1 then crashes,
    // src-2 is elected cleanly and leads the failback mirror with the hole, and its fetch
    // (LastFetchedEpoch 0 ending at the primary's LEO) never reports a divergence: the reset
    // at 0 is never copied. The liveness wait runs out, and the end-of-run check's violation
    // is the verdict (a violation of `finish` outranks a stall).
    fails_with(
        include_str!(
            "capsules/mirror-364370220-hole-from-a-mid-batch-cut-leads-the-failback-mirror.json"
        ),
        "violation:failback_converges",
        &[(
            "src-2  t0-3         ! truncate leo 33→1 hw=0 cause=DivergingEpoch",
            "the case needs src-2's truncation inside its own batch",
        )],
    );
}

#[test]
fn a_failback_prepare_written_before_its_writer_crashed_is_reported_by_the_next_read() {
    // Fresh mirror chaos seed 155591179 (shrunk). At the failback src-1 (leading t0-0 at
    // epoch 0, its own tail 316..336 in epoch 0 beyond the new primary's copy of that epoch)
    // writes UNKNOWN -> PREPARING to a `__mirror_state` coordinator that cannot commit it
    // (F4's stall), and crashes with the write unanswered: its unconfirmed entry goes with
    // its memory. Back as leader at epoch 2 it reads UNKNOWN until the record commits, then
    // PREPARING, and carries on. Nobody reported the start, so the checkers never saw the
    // failback begin: without its snapshot they took the old source's own tail, which the
    // HW passes before the first mirror fetch's divergence cuts it (B §8.1 step 3), for
    // exposed source data (mirror_not_ahead_of_source). The read now reports it.
    passes_with(
        include_str!("capsules/mirror-155591179-failback-prepare-written-before-a-crash.json"),
        Some("src-1  t0-0         UNKNOWN→PREPARING se=1 le=0"),
        "the case needs the start reported by the read of the leader at epoch 2",
    );
}

#[test]
fn a_write_answered_after_its_leader_led_again_is_reported_by_the_new_runs_read() {
    // Fresh mirror chaos seed 804710 (shrunk): dst-2 writes MIRRORING -> STOPPING at leader
    // epoch 0, is cut off from its controller and deposed; the answer comes 27 s later, just
    // after dst-2 leads t1-2 again at epoch 2. The new run took it as its own (UNKNOWN ->
    // STOPPING, valid_transitions). An answer now only counts for the run that sent it; the
    // new run's read finds the record and reports the transition with its writer's epoch.
    passes_with(
        include_str!("capsules/mirror-804710-late-write-answer-of-an-earlier-run.json"),
        Some("MIRRORING→STOPPING se=3 le=0"),
        "the case needs the late answer's transition, reported by the read",
    );
}

#[test]
fn the_stops_lso_cut_at_the_log_end_keeps_the_leaders_own_epoch() {
    // Mirror chaos seed 60172 (shrunk): on the new primary a stop is finished, after two
    // unclean elections, by dst-2 leading epoch 2 with its epoch-0 PID reset at the log end.
    // Its LSO cut at the LEO called `truncateTo(LEO)`, which trims the epoch cache from the
    // end and removed the `(2, 1)` entry `makeLeader` had given the leader's own epoch; the
    // reset already at the log end meant nothing was appended to put it back. dst-1, holding
    // its own reset in epoch 1, then got OFFSET_OUT_OF_RANGE for ever (no epoch >= 1 on the
    // leader) and never rejoined the ISR. The cut now runs only when the LSO is below the LEO
    // (and gives the leader's epoch its start again after a real cut): dst-1 finds the
    // divergence.
    passes_with(
        include_str!("capsules/mirror-60172-stop-cut-keeps-the-leaders-epoch.json"),
        Some("dst-1  t0-0         ! truncate leo 1→0 hw=0 cause=DivergingEpoch"),
        "the case needs dst-1 to find its divergence",
    );
}

#[test]
fn finding_a_follower_cut_at_a_mid_batch_log_start_never_rejoins_the_isr() {
    // K2 (Kafka), single-cluster chaos seed 6430 (shrunk, re-timed for KIP-227 fetch
    // sessions): bit rot on the last ISR member (a declared loss) lets src-5 rewrite t0-0 from
    // 110; a DeleteRecords then puts the log start at 155, inside batch 150..159. src-4
    // truncates to exactly 155 (the leader's epoch cache, cut from the start, says its old
    // epoch ends there) and keeps its own 110..154; Kafka takes the straddling batch only
    // into an empty log, so src-4 never rejoins the ISR. Without the K2 qualifier
    // (`KafkaWorld::follower_cut_at_mid_batch_log_start`) the kind is the bare isr_short.
    fails_with(
        include_str!("capsules/single-6430-follower-stuck-below-a-mid-batch-log-start.json"),
        "liveness:isr_short:cut_at_mid_batch_log_start",
        &[(
            "src-5  t0-0         log start=155",
            "the case needs the mid-batch log start",
        )],
    );
}

#[test]
fn a_power_loss_that_brings_back_a_transaction_whose_marker_went_with_another_history_is_kafkas_hang()
 {
    // Fresh single-cluster chaos seed 528767289 (shrunk): src-4, the last ISR member of t0-1,
    // loses its whole unflushed log and leads from 0; the coordinator writes txn-4's COMMIT
    // at offset 0 of that history and src-3 truncates 208 -> 0 to follow it. The truncation
    // never reaches src-3's disk: when it, now the last ISR member, loses its unflushed tail,
    // it comes back leading the old 0..207 with the transaction open at 198 and no marker, a
    // declared loss that cut the marker from the other history (`marker_cut_after_txn_began`;
    // without it the run is reported as a hang, lso_reaches_hw).
    passes_with(
        include_str!(
            "capsules/single-528767289-power-loss-brings-back-a-transaction-whose-marker-went-with-the-other-history.json"
        ),
        Some("src-3  t0-1         ! truncate leo 208→0 hw=198 cause=DivergingEpoch"),
        "the case needs the truncation that never reaches src-3's disk",
    );
}

#[test]
fn a_zombie_leaders_own_tail_brought_back_by_an_unclean_election_during_a_failback_is_not_source_data()
 {
    // Fresh mirror chaos seed 845002405 (shrunk): src-2 led the old source's t0-0, was cut off
    // from its controller and, while src-1 led at epoch 1 and ran the failback, kept taking its
    // producers' writes at epoch 0 (640..659). src-1 crashed; src-2 led uncleanly with 0..659
    // and its HW passed 640 before its first mirror fetch found the divergence and cut to 490.
    // Those are the old source's own writes, not the new source's data: without the own-writes
    // exemption the run fails mirror_not_ahead_of_source ("HW 660 exposes offset 640").
    passes_with(
        include_str!(
            "capsules/mirror-845002405-zombie-leaders-own-tail-brought-back-by-an-unclean-failback-leader.json"
        ),
        Some("src-2  t0-0         ! mirror diverged epoch=0 end=490 truncate→490"),
        "the case needs the unclean leader's diverging fetch",
    );
}

#[test]
fn a_lost_first_prepare_write_is_reported_when_the_read_finds_it() {
    // Mirror chaos seed 7825 (shrunk): at failback src-1 writes UNKNOWN -> PREPARING for t0-3;
    // the coordinator commits it but the answer is lost (packet loss). A retry 30 s later is
    // fenced and the re-read returns PREPARING at state epoch 1. The read reported lost writes
    // only from a state other than UNKNOWN, so this failback's PREPARING was never seen: the
    // checker took no failback snapshot and flagged the old source's own tail as exposed
    // beyond the source (mirror_not_ahead_of_source), a false positive of our bookkeeping.
    passes_with(
        include_str!("capsules/mirror-7825-lost-first-prepare-write-reported-on-read.json"),
        Some("src-1  t0-3         UNKNOWN→PREPARING se=1 le=0"),
        "the lost UNKNOWN -> PREPARING is reported by the read",
    );
}

#[test]
fn a_stop_whose_marker_write_finds_no_coordinator_writes_it_once_there_is_one() {
    // Mirror chaos seed 300432 (fresh window, shrunk): dst-2 stops t0-0 and reaches the
    // failback-marker write while `__mirror_state-0` has no leader. Nothing is sent, yet the
    // run waited for the write's answer, so no retry ran the step again and t0-0 stayed
    // STOPPING after the coordinator partition had a leader again (38.0 s).
    passes_with(
        include_str!("capsules/mirror-300432-stop-marker-write-without-a-coordinator.json"),
        Some("dst-2  t0-0         STOPPING→STOPPED se=4 le=1"),
        "the stop writes its marker once the coordinator is back, and reaches STOPPED",
    );
}

#[test]
fn the_liveness_phase_waits_for_a_producer_in_flight_before_calling_the_run_converged() {
    // Fresh single-cluster seed 971804 (shrunk to 5 faults), K1's second route: a zombie
    // `__transaction_state-1` leader answers an AddPartitionsToTxn for t1-3 from a record it
    // commits alone, and drops when it learns the new epoch. The producer's batch for t1-3
    // waits for the ISR; at 37.4 s every log agreed and the liveness phase called the run
    // converged with that produce still in flight, so the batch, appended a few ms later into
    // a transaction the real coordinator never knew, was never seen to hang. The run is now
    // settled only once every producer has finished what it held.
    let out = replay_capsule(include_str!(
        "capsules/single-971804-k1-batch-in-flight-when-the-logs-converge.json"
    ));
    assert_eq!(out.kind(), "violation:lso_reaches_hw:coordinator_lost_txn");
    assert_eq!(hang_of(&out).node, "src-2");
}

#[test]
fn a_zombie_hw_recovered_after_a_restart_is_still_excused_by_the_unclean_election() {
    // Fresh single-cluster seed 971804 (shrunk): src-1 leads `__transaction_state-1` in epoch 0
    // with ISR [1]; isolated, it is superseded by an unclean election of src-2 (epoch 1). Back
    // on the network as a zombie it commits 13 alone (HW 14), crashes with nothing lost and
    // restarts with HW 14, then follows epoch 3 and truncates to 13 (DivergingEpoch), as Kafka
    // does. The restart made the checker forget the epoch that HW was learned in, so the
    // crossed unclean epoch no longer excused the truncation (no_truncation_below_hw).
    //
    // The record it drops (13, #946) is the zombie's answer to an AddPartitionsToTxn for t1-3:
    // the producer's batch there (acknowledged at 38.8 s, once src-1 is back in t1-3's ISR)
    // belongs to a transaction the real coordinator never knew, and its EndTxn is answered as
    // a retry of the completed one. That is K1's second route, and the run now goes on long
    // enough to see the hang (group writes time out at their own deadline since, which moved
    // the liveness phase's last poll past the append). The truncation here comes before the
    // acknowledgement, so K1's qualifier looks at when the dropped record was written.
    fails_with(
        include_str!("capsules/single-971804-zombie-hw-kept-across-a-restart.json"),
        "violation:lso_reaches_hw:coordinator_lost_txn",
        &[(
            "__transaction_state-1 ! truncate leo 14→13 hw=14 cause=DivergingEpoch",
            "the case needs the truncation below the recovered zombie HW",
        )],
    );
}

#[test]
fn a_failback_cut_below_the_log_start_leaves_no_producer_snapshot_of_the_old_log() {
    // Mirror seed 6872, shrunk: the old source's t0-0 has a DeleteRecords log start of 93,
    // above a transaction of its own that began at 83; the failback's divergence cuts it to
    // 40, below its first batch, so the log restarts there (Kafka `truncateTo` →
    // `truncateFullyAndStartAt`, which deletes every producer snapshot). The model once
    // restarted the log in memory but cut only the segment files: the old snapshot, with
    // that transaction open, stayed on disk, and after a restart the copied history's next
    // non-transactional batch of that producer id failed to append for good (the full seed:
    // `isr_short`). `recovery_idempotent` compares the snapshot's open transactions with the
    // log's after every truncation; on the old code it fails at src-4's cut.
    passes_with(
        include_str!(
            "capsules/mirror-6872-failback-truncation-below-the-log-start-keeps-no-old-snapshot.json"
        ),
        Some("src-4  t0-0         ! truncate fully leo 613→start 40 cause=Mirror"),
        "the case needs the failback cut below the log start",
    );
    // The unshrunk seed, with src-1's crash after the same cut: every replica rejoins.
    let out = mirror_sim::chaos::run_chaos_seed(
        6872,
        &mirror_sim::chaos::ChaosOptions {
            mirror: true,
            ..mirror_sim::chaos::ChaosOptions::default()
        },
    );
    assert!(out.verdict.is_pass(), "{:?}", out.verdict);
}

#[test]
fn finding_k1_on_a_stopped_mirror_partition_is_judged_at_the_end_of_the_run_as_k1() {
    // K1's second route on the new primary, fresh mirror chaos seed 517001819 (shrunk to 4
    // faults). After the stop, dst-3, cut off from the controller, is a zombie leader of
    // `__transaction_state` (ISR [3]) when the controller elects dst-2 uncleanly; it answers
    // the failover producer's AddPartitionsToTxn from a record it commits alone, the batch
    // is acknowledged on the STOPPED t0-0, and dst-2, the real coordinator, answers the
    // EndTxn as a retry of the transaction it last completed: no marker, the LSO stays
    // below the HW. The end-of-run check of STOPPED partitions found it first and gave
    // the bare kind, which no known finding has; the kind now names K1 wherever the hang is
    // found.
    let out = replay_capsule(include_str!(
        "capsules/mirror-517001819-zombie-coordinator-on-the-new-primary-stopped-partition.json"
    ));
    assert_eq!(hang_of(&out).node, "dst-1");
    assert_eq!(out.kind(), "violation:lso_reaches_hw:coordinator_lost_txn");
}

#[test]
fn a_source_hw_kafka_leaves_below_its_leo_is_all_the_mirror_owes() {
    // Fresh mirror seed 172384947: src-2, back from a crash and fetching t0-1 from src-3
    // (ISR [3]), loses a fetch response under packet loss, so it stays caught up on paper
    // (its last fetch reached the leader's LEO) and holds the HW at 180 while src-3 appends
    // to 430; then src-2 goes down for good (the persistent partial fault). With the
    // producers stopped, Kafka recomputes that HW only on a next write, which never comes:
    // the source commits 180 and the mirror, fetching with HW isolation, holds 180. The run
    // converged; judged on whole logs it was a liveness failure (`logs_differ`).
    let out = mirror_sim::chaos::run_chaos_seed(
        172_384_947,
        &mirror_sim::chaos::ChaosOptions {
            mirror: true,
            ..mirror_sim::chaos::ChaosOptions::default()
        },
    );
    assert!(out.verdict.is_pass(), "{:?}", out.verdict);
}

#[test]
fn finding_a_sync_clamped_before_a_mirror_truncation_commits_an_offset_above_the_leo() {
    // F7, fresh mirror chaos seed 731000845 (shrunk to 3 faults). Bit rot takes t0-3's
    // batch 10 from src-1, its only replica, after the mirror copied it and the source
    // groups committed 11. A sync round reads the destination LEO (11, `ListOffsets`),
    // clamps the group offset to it (B §8.11: `min(source committed, destination LEO)`)
    // and sends the commit; the mirror fetch then meets the source's divergence and cuts
    // dst-1's t0-3 to 10 (a declared mirror truncation); the commit waits for
    // `__consumer_offsets` to replicate, which happens only after dst-2's fetch, lost in
    // dst-1's isolation, times out. Its answer gives up first (COORDINATOR_NOT_AVAILABLE after
    // `offsets.commit.timeout.ms`, 5 s), but a runtime timeout reverts nothing: the offset
    // takes effect when the HW passes its record (event #2201), and the checker judges it
    // then. The destination group offset is 11 over a LEO of 10: a consumer that fails over
    // skips whatever the mirror copies at 10. The clamp is a read, not a bound the commit
    // keeps.
    fails_with(
        include_str!(
            "capsules/mirror-731000845-synced-offset-above-a-later-mirror-truncation.json"
        ),
        "violation:synced_offset_in_bounds:under_mirror_truncation",
        &[(
            "dst-1  t0-3         ! truncate leo 11→10 hw=11 cause=Mirror",
            "the case needs the mirror truncation under the synced offset",
        )],
    );
}

#[test]
fn finding_latest_a_timed_out_pause_lands_under_a_later_failed_that_never_retries() {
    // `latest`, fresh mirror seed 715100083 (shrunk to 3 faults: 14 s of packet loss, a 2 s
    // pause of dst-1, a pause of the mirror). A follower of `__mirror_state-0` whose fetch
    // answer was lost still counts as caught up, so the HW stands still (F4's setup). The
    // operator pauses the mirror: the leader's PAUSING write (23.7 s) is appended and answered
    // COORDINATOR_NOT_AVAILABLE at the prototype's `mirror.coordinator.write.timeout.ms` (5 s,
    // 28.7 s), which reverts nothing; the read-back returns the committed MIRRORING and every
    // rewrite is fenced by the uncommitted PAUSING. The operator resumes; the leader stays
    // MIRRORING. A mirror fetch lost in the packet loss times out and FAILED is written
    // (retryable), fenced in turn until the follower fetches again: then PAUSING takes effect
    // 12 s after it was written (35.8 s), and the
    // FAILED rewrite lands over it with PreviousState PAUSING. FAILED retries to its previous
    // state, and FAILED → PAUSING is not a valid transition (B §7.6-2): the retry is skipped
    // and none follows. The partition never mirrors again; the source's ABORT marker for an
    // open transaction is never copied, so the destination's LSO stays below its HW.
    fails_with(
        include_str!(
            "capsules/mirror-latest-715100083-timed-out-pause-lands-under-a-later-failed.json"
        ),
        "violation:lso_reaches_hw",
        &[
            (
                "MIRRORING→PAUSING se=3",
                "the timed-out PAUSING takes effect late",
            ),
            ("PAUSING→FAILED se=4", "FAILED lands over it"),
            (
                "FAILED retry 0 skipped: FAILED→PAUSING is not a valid transition",
                "the retry to the previous state is skipped",
            ),
        ],
    );
}
