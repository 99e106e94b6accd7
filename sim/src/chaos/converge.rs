//! What convergence means at the end of a chaos run, and, when it is not reached, where and
//! how the run is stuck ([`Stuck`]): every partition led, with a full ISR whose replicas
//! match the leader's LEO and HW; and for mirror plans, the state the operator asked for
//! (MIRRORING, STOPPED after a stop, MIRRORING back after a failback) with identical logs.

use mirror_core::mirror::MirrorPartitionState as S;
use mirror_core::protocol::ClusterIdx;
use mirror_core::record::RecordBatch;
use mirror_core::types::{BrokerId, LeaderEpoch, Offset, TopicPartition};
use std::collections::BTreeSet;

use super::actions::MirrorOps;
use super::persistent::HeldOut;
use super::plan::ChaosPlan;
use crate::kafka::KafkaWorld;

/// [`Stuck::kind`] of mirrored logs that stay apart while both hold different records of one
/// leader epoch, the latest of one of them ([`shared_epoch_split`]): F1's stall form.
pub const LOGS_DIFFER_IN_A_SHARED_EPOCH: &str = "logs_differ_in_a_shared_epoch";

/// Where and how a run did not converge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stuck {
    /// The cluster.
    pub cluster: ClusterIdx,
    /// The partition.
    pub tp: TopicPartition,
    /// The broker the finding is about, if one: the leader (HW, mirror state) or the replica
    /// that is behind.
    pub broker: Option<BrokerId>,
    /// What kind of non-convergence, with no numbers, for grouping (`no_leader`,
    /// `hw_below_leo`, `isr_short`, `replica_behind`, `state FAILED want MIRRORING`,
    /// `logs_differ`).
    pub kind: String,
    /// The message (`t0-0 on cluster 0 is Some(Failed), want MIRRORING`).
    pub detail: String,
}

/// The [`Stuck::kind`] of a leader whose LSO stays below its HW: the `lso_reaches_hw`
/// outcome.
pub const LSO_BELOW_HW: &str = "lso_below_hw";

/// The [`Stuck::kind`] of a partition whose followers out of the ISR are all cut at the
/// leader's mid-batch log start ([`KafkaWorld::follower_cut_at_mid_batch_log_start`]): K2,
/// a finding about Kafka (kind `liveness:isr_short:cut_at_mid_batch_log_start`).
pub const ISR_SHORT_CUT_AT_MID_BATCH_LOG_START: &str = "isr_short:cut_at_mid_batch_log_start";

/// `None` when the run converged (the cluster side first, then the mirror).
/// A broker in `held` (the persistent partial fault) is not expected in any ISR.
pub(super) fn stuck(
    w: &KafkaWorld,
    plan: &ChaosPlan,
    ops: &MirrorOps,
    held: &HeldOut,
) -> Option<Stuck> {
    stuck_judged(w, plan, ops, held, false, true)
}

/// Whether [`stuck`] is `None`, without working out the [`Stuck::kind`] of logs that differ
/// (the liveness phase asks every 10 ms of simulated time).
pub(super) fn converged(w: &KafkaWorld, plan: &ChaosPlan, ops: &MirrorOps, held: &HeldOut) -> bool {
    stuck_judged(w, plan, ops, held, false, false).is_none()
}

/// `detailed` works out which way mirrored logs differ ([`shared_epoch_split`]) and whether
/// a short ISR is K2's ([`ISR_SHORT_CUT_AT_MID_BATCH_LOG_START`]); without it they are
/// `logs_differ` and `isr_short` (only whether the run is stuck is asked).
fn stuck_judged(
    w: &KafkaWorld,
    plan: &ChaosPlan,
    ops: &MirrorOps,
    held: &HeldOut,
    below_source_hw: bool,
    detailed: bool,
) -> Option<Stuck> {
    (0..plan.brokers.len())
        .filter_map(|c| u16::try_from(c).ok().map(ClusterIdx))
        .find_map(|c| cluster_stuck(w, plan, c, held.get(&c).copied(), detailed))
        .or_else(|| mirror_stuck(w, plan, ops, below_source_hw, detailed))
}

/// [`stuck`] once the liveness phase ran out, with the mirror's source compared only below
/// its HW: the mirror copies what its source committed (A.1: a fetch with HW isolation),
/// and a source HW below its LEO gets past `cluster_stuck` only where Kafka leaves it until
/// the next write (a follower that held it back went silent). That write never comes with
/// the producers stopped (fresh mirror seed 172384947: a follower's fetch response lost,
/// then its broker down for good; the source leader stays at HW 180 under LEO 430, the
/// mirror at 180). Used only after the strict wait, so a run whose source HW still moves
/// on its own converges as before.
pub(super) fn stuck_below_source_hw(
    w: &KafkaWorld,
    plan: &ChaosPlan,
    ops: &MirrorOps,
    held: &HeldOut,
) -> Option<Stuck> {
    stuck_judged(w, plan, ops, held, true, true)
}

/// A leader's `(log start, LEO, batches)`, as [`leader_log`] reads it.
type LeaderLog = (Offset, Offset, Vec<RecordBatch>);

/// Two clusters' leader logs agree: the same LEO and the same batches from the later log start
/// on (a batch straddling that start is left out on both sides). Each side is `(log start,
/// end, batches)`; batches at or past its end (its LEO, or its HW when only committed records
/// count) are left out. Read in place: the liveness phase asks every 10 ms of simulated time.
fn logs_agree<'a>(
    a: (Offset, Offset, impl IntoIterator<Item = &'a RecordBatch>),
    b: (Offset, Offset, impl IntoIterator<Item = &'a RecordBatch>),
) -> bool {
    let start = a.0.max(b.0);
    let within =
        |end: Offset| move |x: &&RecordBatch| x.base_offset() >= start && x.last_offset() < end;
    a.1 == b.1
        && a.2
            .into_iter()
            .filter(within(a.1))
            .eq(b.2.into_iter().filter(within(b.1)))
}

/// A partition's `(log start, end, batches)` for [`logs_agree`]: the end is its LEO, or with
/// `committed` its HW.
fn log_view(
    p: &mirror_core::broker::partition::Partition,
    committed: bool,
) -> (Offset, Offset, impl Iterator<Item = &RecordBatch>) {
    let end = if committed {
        p.log.high_watermark()
    } else {
        p.log.log_end_offset()
    };
    (p.log.log_start_offset(), end, p.log.batches())
}

/// Whether both clusters' leaders of `tp` hold it and their logs agree ([`logs_agree`]),
/// each read under its broker's lock without copying a batch.
fn leader_logs_agree(w: &KafkaWorld, tp: &TopicPartition, committed: (bool, bool)) -> bool {
    let (src, dst) = (ClusterIdx(0), ClusterIdx(1));
    let (Some(ls), Some(ld)) = (w.leader(src, tp), w.leader(dst, tp)) else {
        return false;
    };
    w.with_broker(src, ls, |a| {
        w.with_broker(dst, ld, |b| match (a.partition(tp), b.partition(tp)) {
            (Some(pa), Some(pb)) => {
                logs_agree(log_view(pa, committed.0), log_view(pb, committed.1))
            }
            _ => false,
        })
    })
    .flatten()
    .unwrap_or(false)
}

/// The first of `shared` (leader epochs in which both clusters' own leaders wrote records,
/// `KafkaWorld::epochs_led_in_both`) under which the two leaders' logs hold different
/// batches in the offsets both have: one epoch number names two histories (F1,
/// `.ci/known-mirror-findings.txt`). Kafka's divergence check compares epochs only, so a
/// replica whose LastFetchedEpoch is such an epoch is answered with where the other
/// cluster's epoch ends, further out, and no divergence is reported: a failback mirror keeps
/// the old source's records (fresh seed 930213: its fetch offset then falls inside one of
/// the new primary's batches, never appended), or the hole a truncation inside its own batch
/// left (fresh seed 932067: Kafka's `truncateTo` drops the whole batch holding the target
/// and still sets the LEO to the target; the new primary's PID reset at 0 is never copied).
/// A mirror that only lags has the same batches in the common offsets, and an epoch only
/// one cluster led cannot name two histories, so neither qualifies.
fn shared_epoch_split(
    a: &LeaderLog,
    b: &LeaderLog,
    shared: &BTreeSet<LeaderEpoch>,
) -> Option<LeaderEpoch> {
    let (start, end) = (a.0.max(b.0), a.1.min(b.1));
    let in_epoch = |l: &LeaderLog, e: LeaderEpoch| -> Vec<RecordBatch> {
        l.2.iter()
            .filter(|x| x.base_offset() >= start && x.last_offset() < end)
            .filter(|x| x.partition_leader_epoch() == e)
            .cloned()
            .collect()
    };
    shared
        .iter()
        .copied()
        .find(|e| in_epoch(a, *e) != in_epoch(b, *e))
}

/// The leader's log start, LEO and batches; with `committed`, only its records below its HW
/// (the LEO is then the HW). A copy, for [`shared_epoch_split`] on a verdict.
fn leader_log(
    w: &KafkaWorld,
    c: ClusterIdx,
    tp: &TopicPartition,
    committed: bool,
) -> Option<LeaderLog> {
    let l = w.leader(c, tp)?;
    w.with_broker(c, l, |b| {
        b.partition(tp).map(|p| {
            let (start, end, batches) = log_view(p, committed);
            (
                start,
                end,
                batches.filter(|b| b.last_offset() < end).cloned().collect(),
            )
        })
    })
    .flatten()
}

/// `None` when the mirror reached what the operator asked for: identical logs in MIRRORING,
/// STOPPED after a stop, identical logs again after a failback.
fn mirror_stuck(
    w: &KafkaWorld,
    plan: &ChaosPlan,
    ops: &MirrorOps,
    below_source_hw: bool,
    detailed: bool,
) -> Option<Stuck> {
    if !plan.mirror {
        return None;
    }
    let (src, dst) = (ClusterIdx(0), ClusterIdx(1));
    for t in &plan.topics {
        for p in 0..t.partitions {
            let tp = TopicPartition::new(t.name.as_str(), p);
            // A start whose answer was lost (the old source's broker paused or the response
            // dropped, then the liveness phase ended the operator's retries) may still have
            // been committed: its partitions then mirror back, and the checkers judge that
            // failback (`failback_converges`), so the run must wait for it to converge
            // (latest mirror chaos seed 558, which ended on STOPPED with the failback 3 s in).
            let failing_back =
                ops.failed_back || (ops.failback_started && w.mirror_state(src, &tp).is_some());
            let (cluster, want, compare) = if failing_back {
                (src, S::Mirroring, true)
            } else if ops.stopped {
                (dst, S::Stopped, false)
            } else {
                (dst, S::Mirroring, true)
            };
            let state = w.mirror_state(cluster, &tp);
            // A stop whose client gave up may have been committed later (mirror chaos seed
            // 1630: the stops timed out on a paused broker, their retries were refused while
            // the mirror was paused, a resume was accepted, then the paused broker woke and
            // forwarded the original stops): STOPPED is then what the operator asked for.
            if !ops.stopped && ops.stop_maybe && cluster == dst && state == Some(S::Stopped) {
                continue;
            }
            // Likewise a pause whose first attempt timed out may land after the resume.
            if !ops.stopped
                && !failing_back
                && ops.pause_maybe
                && cluster == dst
                && state == Some(S::Paused)
            {
                continue;
            }
            if state != Some(want) {
                let shown = state.map_or_else(|| "NONE".to_string(), |s| s.to_string());
                return Some(Stuck {
                    cluster,
                    broker: w.leader(cluster, &tp),
                    kind: format!("state {shown} want {want}"),
                    detail: format!("{tp} on cluster {} is {state:?}, want {want}", cluster.0),
                    tp,
                });
            }
            let differ = |tp: TopicPartition| Stuck {
                cluster,
                broker: None,
                kind: "logs_differ".into(),
                detail: format!("{tp}: logs differ between the clusters"),
                tp,
            };
            if compare {
                // The destination's log start only ever moves up (kip1279 A.1 MIRRORING:
                // "makes the destination log start follow the source's", i.e.
                // `maybeIncrementLogStartOffset`), and a mirror truncation below its own log
                // start leaves it at the target (kafka-semantics: UnifiedLog `truncateTo` sets
                // `logStartOffset = min(target, logStartOffset)`). The other cluster's log
                // start can be lower for good reasons: after a failback, a DeleteRecords on the
                // old source while it was not a mirror removed a prefix the new source still
                // holds; while mirroring, a source broker that crashed before its periodic
                // log-start checkpoint (Kafka: `log-start-offset-checkpoint`, written every
                // `log.flush.start.offset.checkpoint.interval.ms`) comes back with the prefix a
                // DeleteRecords had already cut, and leads with it (mirror chaos seed 6514:
                // source log start back to 0, destination at 489). The logs must agree from the
                // later log start to the same LEO ([`logs_agree`]), as `failback_converges`
                // checks.
                // With `below_source_hw`, the mirror's source counts only below its HW
                // ([`stuck_below_source_hw`]).
                let committed = (
                    below_source_hw && !failing_back,
                    below_source_hw && failing_back,
                );
                if !leader_logs_agree(w, &tp, committed) {
                    let mut stuck = differ(tp);
                    // Which way they differ is read only for the verdict, not for every poll.
                    if detailed
                        && let (Some(a), Some(b)) = (
                            leader_log(w, src, &stuck.tp, committed.0),
                            leader_log(w, dst, &stuck.tp, committed.1),
                        )
                        && let Some(epoch) =
                            shared_epoch_split(&a, &b, &w.epochs_led_in_both(src, dst, &stuck.tp))
                    {
                        stuck.kind = LOGS_DIFFER_IN_A_SHARED_EPOCH.into();
                        stuck.detail = format!(
                            "{}: logs differ between the clusters: both hold records of leader epoch {epoch}, different ones",
                            stuck.tp
                        );
                    }
                    return Some(stuck);
                }
            }
        }
    }
    None
}

/// `None` when every partition of cluster `c0` has a leader, a full ISR, and every replica's
/// LEO and HW equal the leader's.
fn cluster_stuck(
    w: &KafkaWorld,
    plan: &ChaosPlan,
    c0: ClusterIdx,
    held: Option<BrokerId>,
    detailed: bool,
) -> Option<Stuck> {
    if c0.0 > 0 && !plan.mirror {
        return None;
    }
    for t in &plan.topics {
        for p in 0..t.partitions {
            let tp = TopicPartition::new(t.name.as_str(), p);
            let at = |broker: Option<BrokerId>, kind: &str, detail: String| {
                Some(Stuck {
                    cluster: c0,
                    tp: tp.clone(),
                    broker,
                    kind: kind.to_string(),
                    detail,
                })
            };
            let Some(leader) = w.leader(c0, &tp) else {
                return at(None, "no_leader", format!("{tp} has no leader"));
            };
            let Some((leo, hw)) = w.replica_offsets(c0, leader, &tp) else {
                return at(
                    Some(leader),
                    "leader_without_replica",
                    format!("{tp} leader {leader} has no replica"),
                );
            };
            // Kafka recomputes a leader's HW only on an append, a follower fetch, a
            // leadership change or an ISR update (`maybeIncrementLeaderHW`'s callers). With
            // the producers stopped, a HW held back by a caught-up, ISR-eligible follower
            // that then went silent (the persistent partial fault) stays put though the rule
            // would now advance it to the LEO: the next write moves it (single-cluster and
            // mirror chaos seed 43533). That is Kafka's behaviour, not a stuck model: it
            // converges if the rule, run now, gives the LEO.
            let kick = || {
                w.with_broker(c0, leader, |b| {
                    b.high_watermark_if_recomputed(&tp, w.world.now())
                })
                .flatten()
            };
            if hw != leo && kick() != Some(leo) {
                return at(
                    Some(leader),
                    "hw_below_leo",
                    format!("{tp} leader HW {hw} != LEO {leo}"),
                );
            }
            // `lso_reaches_hw`: the producers stopped at the start of the liveness phase, so
            // a transaction still open here hangs (a coordinator aborts its own timed-out
            // ones well within the bound; `transaction.timeout.ms` is 60 s).
            let lso = w
                .with_broker(c0, leader, |b| {
                    b.partition(&tp).map(|p| p.log.last_stable_offset())
                })
                .flatten();
            // A transaction one of Kafka's own declared losses left open hangs for good:
            // Kafka's known consequence of that loss, not one the producers or the mirror
            // caused (`KafkaWorld::kafka_loss_explains_hang`).
            if let Some(lso) =
                lso.filter(|l| *l < hw && !w.kafka_loss_explains_hang(c0, leader, &tp))
            {
                return at(
                    Some(leader),
                    LSO_BELOW_HW,
                    format!("{tp} leader LSO {lso} < HW {hw}: a transaction hangs"),
                );
            }
            let replicas = w
                .with_broker(c0, leader, |b| {
                    b.partition(&tp).map(|p| (p.replicas.clone(), p.isr()))
                })
                .flatten();
            let Some((replicas, isr)) = replicas else {
                return at(
                    Some(leader),
                    "leader_without_state",
                    format!("{tp} leader state missing"),
                );
            };
            let replicas: Vec<BrokerId> =
                replicas.into_iter().filter(|r| Some(*r) != held).collect();
            let out: Vec<BrokerId> = replicas
                .iter()
                .filter(|r| !isr.contains(r))
                .copied()
                .collect();
            if let Some(&first) = out.first() {
                // K2: followers Kafka itself can never bring back, each cut at the leader's
                // mid-batch log start, are a finding about Kafka with its own kind; any
                // other follower out of the ISR keeps the bare kind.
                let kind = if detailed
                    && out
                        .iter()
                        .all(|r| w.follower_cut_at_mid_batch_log_start(c0, leader, *r, &tp))
                {
                    ISR_SHORT_CUT_AT_MID_BATCH_LOG_START
                } else {
                    "isr_short"
                };
                return at(
                    Some(first),
                    kind,
                    format!("{tp} ISR {isr:?} of replicas {replicas:?}"),
                );
            }
            for r in replicas {
                let at_r = w.replica_offsets(c0, r, &tp);
                // A follower's HW that Kafka's own fetch session leaves stale is not a stuck
                // replica (`early` seed 9000 once KIP-227 sessions came in): Kafka does it.
                if at_r != Some((leo, hw))
                    && !(r != leader && w.session_keeps_follower_hw_stale(c0, leader, r, &tp))
                {
                    return at(
                        Some(r),
                        "replica_behind",
                        format!("{tp} replica {r} at {at_r:?}, leader at {:?}", (leo, hw)),
                    );
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use mirror_core::record::{BatchBuilder, SimpleRecord};
    use mirror_core::types::LeaderEpoch;

    fn batch(base: i64, tag: &'static str) -> RecordBatch {
        BatchBuilder::new()
            .base_offset(Offset(base))
            .leader_epoch(LeaderEpoch(0))
            .build(&[SimpleRecord::value(0, tag)])
    }

    fn batch_in(base: i64, epoch: i32, tag: &'static str) -> RecordBatch {
        BatchBuilder::new()
            .base_offset(Offset(base))
            .leader_epoch(LeaderEpoch(epoch))
            .build(&[SimpleRecord::value(0, tag)])
    }

    #[test]
    fn a_shared_epoch_split_needs_an_epoch_both_clusters_led_and_different_batches_in_it() {
        let both: BTreeSet<LeaderEpoch> = [LeaderEpoch(0), LeaderEpoch(1)].into();
        let primary: LeaderLog = (
            Offset(0),
            Offset(4),
            vec![
                batch_in(0, 0, "a"),
                batch_in(1, 1, "reset"),
                batch_in(2, 1, "b"),
                batch_in(3, 1, "c"),
            ],
        );
        // Seed 930213: the old source keeps its own epoch-1 records where the primary has its own.
        let own: LeaderLog = (
            Offset(0),
            Offset(3),
            vec![
                batch_in(0, 0, "a"),
                batch_in(1, 1, "x"),
                batch_in(2, 1, "y"),
            ],
        );
        assert_eq!(
            shared_epoch_split(&own, &primary, &both),
            Some(LeaderEpoch(1))
        );
        // Only one cluster led epoch 1 (its records there were mirrored): not F1.
        let only_zero: BTreeSet<LeaderEpoch> = [LeaderEpoch(0)].into();
        assert_eq!(shared_epoch_split(&own, &primary, &only_zero), None);
        // Seed 932067: a hole where the primary's first batch was, the rest copied.
        let hole: LeaderLog = (Offset(0), Offset(4), primary.2[1..].to_vec());
        assert_eq!(
            shared_epoch_split(&hole, &primary, &both),
            Some(LeaderEpoch(0))
        );
        // A mirror that only lags holds the same batches in the offsets both have.
        let lagging: LeaderLog = (Offset(0), Offset(2), primary.2[..2].to_vec());
        assert_eq!(shared_epoch_split(&lagging, &primary, &both), None);
        assert_eq!(shared_epoch_split(&primary, &primary, &both), None);
    }

    fn agree(a: &LeaderLog, b: &LeaderLog) -> bool {
        logs_agree((a.0, a.1, &a.2), (b.0, b.1, &b.2))
    }

    #[test]
    fn logs_agree_from_the_later_log_start_to_the_same_leo() {
        let full = vec![batch(0, "a"), batch(1, "b"), batch(2, "c")];
        let src: LeaderLog = (Offset(0), Offset(3), full.clone());
        // Seed 6514: the source's log start went back to 0 after a crash; the destination
        // keeps the later one and lacks the prefix: they agree.
        let dst: LeaderLog = (Offset(1), Offset(3), full[1..].to_vec());
        assert!(agree(&src, &dst));
        assert!(agree(&dst, &src));
        // A different record above both log starts: they do not.
        let other: LeaderLog = (Offset(1), Offset(3), vec![batch(1, "b"), batch(2, "x")]);
        assert!(!agree(&src, &other));
        // A missing tail (a different LEO): they do not.
        let short: LeaderLog = (Offset(1), Offset(2), vec![batch(1, "b")]);
        assert!(!agree(&src, &short));
        // A hole below the LEO above both log starts: they do not.
        let hole: LeaderLog = (Offset(0), Offset(3), vec![batch(0, "a"), batch(2, "c")]);
        assert!(!agree(&src, &hole));
    }
}
