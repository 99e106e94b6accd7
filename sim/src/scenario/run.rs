//! Plays a [`Scenario`] in a fresh madsim runtime: builds the world, runs the steps in
//! order (each traced as a compact `scenario` line), stops at the first failed step or the
//! first broken invariant, runs the end-of-run validations, and compares with `[expect]`.

use std::collections::BTreeMap;
use std::time::Duration;

use mirror_core::protocol::messages::{FetchPartition, TxnMarker};
use mirror_core::protocol::metadata::ConfigResource;
use mirror_core::protocol::{ClusterIdx, ErrorCode, NodeId, NodeRole, Request, Response};
use mirror_core::record::{BatchBuilder, SimpleRecord};
use mirror_core::replication::fetch_leader::FetchIsolation;
use mirror_core::types::{
    BrokerId, LeaderEpoch, Offset, ProducerEpoch, ProducerId, Sequence, TopicId, TopicPartition,
};

use super::format::{
    BatchPattern, BrokerRef, CrashModeDef, DescribeMirrorDef, ExpectedVerdict, IsolationDef,
    ListMirrorsDef, MirrorStateRecordDef, ProducerKindDef, Scenario, StepDef, StepKind, TopicIdRef,
    parse_state,
};
use super::inspect::{self, Bounds};
use super::mirror_steps;
use crate::check::Violation;
use crate::disk::CrashPolicy;
use crate::kafka::rot::RotTarget;
use crate::kafka::{ClusterSpec, KafkaWorld, KafkaWorldSpec};
use crate::net::{Direction, FaultId, NetConfig, NodeSet};
use crate::workload::{ClientNode, Producer, ProducerConfig};
use crate::world::node::lock;
use crate::world::{RunReport, run_seed};

/// Options that change how a scenario runs without changing the file.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Run under this design instead of the file's (the design lab).
    pub design: Option<mirror_core::mirror::Design>,
    /// Keep verbose trace lines.
    pub verbose: bool,
    /// Record a timeline for `mirrorsim report`.
    pub tap: Option<crate::report::Tap>,
}

/// What one step did.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct StepRecord {
    /// 1-based step number.
    pub index: usize,
    /// Line in the file.
    pub line: usize,
    /// The step kind (`produce`, `stop_mirror`, ...).
    pub kind: String,
    /// What happened, or why the step failed.
    pub result: Result<String, String>,
}

/// Whether the run met the file's `[expect]`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum ScenarioVerdict {
    /// The outcome is what the file expects.
    Pass,
    /// It is not: why.
    Fail {
        /// Why.
        reason: String,
    },
}

/// The result of a scenario run.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ScenarioOutcome {
    /// Scenario name.
    pub name: String,
    /// The file.
    pub file: String,
    /// The design it ran under.
    pub design: String,
    /// The madsim seed.
    pub seed: u64,
    /// Steps that ran, in order.
    pub steps: Vec<StepRecord>,
    /// The first broken invariant, if any.
    pub violation: Option<Violation>,
    /// Design-mechanism rules that broke (diagnostics), first of each.
    pub diagnostics: Vec<Violation>,
    /// A panic inside the run (a broken internal assertion), if any.
    pub crash: Option<String>,
    /// Compared with `[expect]`.
    pub verdict: ScenarioVerdict,
    /// Trace hash, simulated time, events, compact trace.
    pub report: Option<RunReport>,
}

impl ScenarioOutcome {
    /// True when the run met the file's expectations.
    #[must_use]
    pub fn passed(&self) -> bool {
        self.verdict == ScenarioVerdict::Pass
    }

    /// The text an insta snapshot records: the header, every step's outcome, the compact
    /// trace (event numbers dropped so that an extra RPC elsewhere does not churn every
    /// line), the violation and the verdict.
    #[must_use]
    pub fn snapshot(&self) -> String {
        let mut s = format!(
            "scenario: {}\ndesign: {}\nseed: {}\n\n-- steps\n",
            self.name, self.design, self.seed
        );
        for st in &self.steps {
            let (mark, text) = match &st.result {
                Ok(t) => ("ok  ", t.as_str()),
                Err(t) => ("FAIL", t.as_str()),
            };
            s.push_str(&format!(
                "{mark} #{:<2} line {:<3} {:<22} {text}\n",
                st.index, st.line, st.kind
            ));
        }
        s.push_str("\n-- compact trace\n");
        for l in self.report.iter().flat_map(|r| r.lines.iter()) {
            s.push_str(&strip_event_number(l));
            s.push('\n');
        }
        s.push_str("\n-- outcome\n");
        if let Some(v) = &self.violation {
            s.push_str(&format!("violation: {v}\n"));
        }
        for d in &self.diagnostics {
            s.push_str(&format!("mechanism: {d}\n"));
        }
        if let Some(c) = &self.crash {
            s.push_str(&format!("crash: {c}\n"));
        }
        match &self.verdict {
            ScenarioVerdict::Pass => s.push_str("verdict: pass\n"),
            ScenarioVerdict::Fail { reason } => s.push_str(&format!("verdict: FAIL: {reason}\n")),
        }
        s
    }
}

/// `t=  3.000s #0000128 src-c1 ...` → `t=  3.000s src-c1 ...`.
fn strip_event_number(line: &str) -> String {
    match line.find(" #") {
        Some(i) if line[i + 2..].starts_with(|c: char| c.is_ascii_digit()) => {
            let rest = &line[i + 2..];
            let end = rest.find(' ').unwrap_or(rest.len());
            format!("{}{}", &line[..i], &rest[end..])
        }
        _ => line.to_owned(),
    }
}

fn spec_of(sc: &Scenario, design: &mirror_core::mirror::Design) -> KafkaWorldSpec {
    KafkaWorldSpec {
        clusters: sc
            .clusters
            .iter()
            .map(|c| {
                let mut spec = ClusterSpec::new(&c.name, c.brokers);
                spec.unclean_leader_election_enable = c.unclean_leader_election;
                spec.tuning.log_flush_interval_ms = c.flush_interval_ms;
                if let Some(m) = c.min_insync_replicas {
                    spec.tuning.min_insync_replicas = m;
                }
                spec.tuning.mirror_design = Some(design.to_string());
                spec
            })
            .collect(),
        net: NetConfig::default(),
    }
}

/// Runs a scenario on a fresh thread and runtime.
#[must_use]
pub fn run_scenario(sc: &Scenario, opts: &RunOptions) -> ScenarioOutcome {
    let design = opts.design.unwrap_or(sc.design);
    let sc2 = sc.clone();
    let verbose = opts.verbose;
    let tap = opts.tap.clone();
    let res = run_seed(sc.seed, move || async move {
        execute(sc2, design, verbose, tap).await
    });
    let (steps, violation, diagnostics, report, crash) = match res {
        Ok((steps, violation, diagnostics, report)) => {
            (steps, violation, diagnostics, Some(report), None)
        }
        Err(message) => (Vec::new(), None, Vec::new(), None, Some(message)),
    };
    let verdict = judge(
        sc,
        &steps,
        violation.as_ref(),
        &diagnostics,
        crash.as_deref(),
    );
    ScenarioOutcome {
        name: sc.name.clone(),
        file: sc.file.clone(),
        design: design.to_string(),
        seed: sc.seed,
        steps,
        violation,
        diagnostics,
        crash,
        verdict,
        report,
    }
}

fn judge(
    sc: &Scenario,
    steps: &[StepRecord],
    violation: Option<&Violation>,
    diagnostics: &[Violation],
    crash: Option<&str>,
) -> ScenarioVerdict {
    let fail = |reason: String| ScenarioVerdict::Fail { reason };
    if let Some(c) = crash {
        return fail(format!("the run crashed: {c}"));
    }
    if let Some(want) = sc
        .expect
        .mechanism
        .iter()
        .find(|m| !diagnostics.iter().any(|d| d.invariant == **m))
    {
        let broke: Vec<&str> = diagnostics.iter().map(|d| d.invariant.as_str()).collect();
        return fail(format!(
            "expected the mechanism rule {want} to break; broke: {broke:?}"
        ));
    }
    let failed = steps.iter().find_map(|s| {
        s.result
            .as_ref()
            .err()
            .map(|e| format!("step #{} (line {}, {}): {e}", s.index, s.line, s.kind))
    });
    match (sc.expect.verdict, violation, failed) {
        (_, None, Some(f)) => fail(f),
        (ExpectedVerdict::Pass, None, None) => ScenarioVerdict::Pass,
        (ExpectedVerdict::Pass, Some(v), _) => fail(format!("invariant broke: {v}")),
        (ExpectedVerdict::Violation, None, None) => fail(format!(
            "expected invariant {} to break; every invariant held",
            sc.expect.invariant.as_deref().unwrap_or("(any)")
        )),
        (ExpectedVerdict::Violation, Some(v), _) => match &sc.expect.invariant {
            Some(want) if *want != v.invariant => {
                fail(format!("expected invariant {want} to break first; got {v}"))
            }
            _ => ScenarioVerdict::Pass,
        },
    }
}

async fn execute(
    sc: Scenario,
    design: mirror_core::mirror::Design,
    verbose: bool,
    tap: Option<crate::report::Tap>,
) -> (
    Vec<StepRecord>,
    Option<Violation>,
    Vec<Violation>,
    RunReport,
) {
    let w = KafkaWorld::start_traced(spec_of(&sc, &design), verbose);
    if let Some(t) = &tap {
        t.attach(&w);
    }
    // Brokers register and get unfenced before the first step (as every scripted test does).
    w.run_for_ms(3_000).await;
    let mut ctx = Ctx {
        w: w.clone(),
        sc: &sc,
        start: w.world.now(),
        sequences: BTreeMap::new(),
        faults: BTreeMap::new(),
    };
    let mut records = Vec::new();
    for (i, (line, step)) in sc.steps.iter().enumerate() {
        if let Some(at) = step.at_ms {
            let when = ctx.start.plus_millis(i64::try_from(at).unwrap_or(i64::MAX));
            let now = w.world.now();
            if when > now {
                crate::world::clock::sleep(Duration::from_micros(when.0 - now.0)).await;
            }
        }
        let kind = kind_name(&step.kind);
        let mut head = format!("step #{} line {line} {kind}", i + 1);
        if let Some(n) = &step.note {
            head.push_str(&format!(" -- {n}"));
        }
        w.world.note("scenario", "", &head);
        let result = ctx.step(step).await;
        let text = match &result {
            Ok(t) => format!("step #{} ok: {t}", i + 1),
            Err(e) => format!("step #{} FAILED: {e}", i + 1),
        };
        w.world.note("scenario", "", &text);
        let failed = result.is_err();
        records.push(StepRecord {
            index: i + 1,
            line: *line,
            kind: kind.to_owned(),
            result,
        });
        if w.violation().is_some() {
            // The run ends here (also when this step failed after the violation), but what
            // the remaining expectation steps name is what a reader needs to see the
            // violation's effect: dump it, marked, uncompared.
            for (j, (line, later)) in sc.steps.iter().enumerate().skip(i + 1) {
                if let Some(dump) = ctx.dump_expectation(&later.kind) {
                    w.world.note(
                        "scenario",
                        "",
                        &format!(
                            "step #{} line {line} {} after the violation: {dump}",
                            j + 1,
                            kind_name(&later.kind)
                        ),
                    );
                }
            }
            break;
        }
        if failed {
            break;
        }
    }
    // End-of-run validations only for a run whose steps all held (a failed step already
    // decides the outcome).
    let all_ok = records.iter().all(|r: &StepRecord| r.result.is_ok());
    let violation = w
        .violation()
        .or_else(|| if all_ok { w.finish() } else { None });
    if let Some(v) = &violation {
        w.world.note("scenario", "", &format!("violation {v}"));
    }
    let diagnostics = w.diagnostics();
    for d in &diagnostics {
        w.world.note("scenario", "", &format!("mechanism {d}"));
    }
    if let Some(t) = &tap {
        t.finish(&w);
    }
    let report = w.world.report(sc.seed);
    w.world.shutdown();
    (records, violation, diagnostics, report)
}

#[path = "run_mirror_config.rs"]
mod mirror_config;

fn kind_name(k: &StepKind) -> &'static str {
    use StepKind as K;
    match k {
        K::CreateTopic { .. } => "create_topic",
        K::Produce { .. } => "produce",
        K::EndTxn { .. } => "end_txn",
        K::Consume { .. } => "consume",
        K::StartProducer { .. } => "start_producer",
        K::StopProducers => "stop_producers",
        K::CreateMirror { .. } => "create_mirror",
        K::StartMirror { .. } => "start_mirror",
        K::StopMirror { .. } => "stop_mirror",
        K::PauseMirror { .. } => "pause_mirror",
        K::ResumeMirror { .. } => "resume_mirror",
        K::RecoverMirror { .. } => "recover_mirror",
        K::DeleteMirror { .. } => "delete_mirror",
        K::DeleteTopic { .. } => "delete_topic",
        K::CreatePartitions { .. } => "create_partitions",
        K::AlterTopicConfig { .. } => "alter_topic_config",
        K::DeleteRecords { .. } => "delete_records",
        K::UncleanElection { .. } => "unclean_election",
        K::Crash { .. } => "crash",
        K::RotBatch { .. } => "rot_batch",
        K::Restart { .. } => "restart",
        K::RestartAll { .. } => "restart_all",
        K::PauseBroker { .. } => "pause_broker",
        K::ResumeBroker { .. } => "resume_broker",
        K::Isolate { .. } => "isolate",
        K::IsolateFromController { .. } => "isolate_from_controller",
        K::PartitionClusters { .. } => "partition_clusters",
        K::Heal { .. } => "heal",
        K::HealAll => "heal_all",
        K::DiskFull { .. } => "disk_full",
        K::Sleep { .. } => "sleep",
        K::WaitState { .. } => "wait_state",
        K::WaitConverged { .. } => "wait_converged",
        K::WaitOffsets { .. } => "wait_offsets",
        K::WaitLeader { .. } => "wait_leader",
        K::ExpectState { .. } => "expect_state",
        K::ExpectLog { .. } => "expect_log",
        K::ExpectLogsEqual { .. } => "expect_logs_equal",
        K::ExpectLosses { .. } => "expect_losses",
        K::CommitOffset { .. } => "commit_offset",
        K::JoinGroup { .. } => "join_group",
        K::ExpectCommittedOffset { .. } => "expect_committed_offset",
        K::WaitCommittedOffset { .. } => "wait_committed_offset",
        K::ExpectTopicConfig { .. } => "expect_topic_config",
        K::WaitTopicConfig { .. } => "wait_topic_config",
        K::AlterMirrorConfig { .. } => "alter_mirror_config",
        K::ExpectMirrorConfig { .. } => "expect_mirror_config",
        K::WaitMirrorConfig { .. } => "wait_mirror_config",
        K::CreateAcl { .. } => "create_acl",
        K::DeleteAcl { .. } => "delete_acl",
        K::ExpectAcls { .. } => "expect_acls",
        K::WaitAcls { .. } => "wait_acls",
        K::TruncateLog { .. } => "truncate_log",
        K::DescribeMirror(_) => "describe_mirror",
        K::WaitDescribeMirror(_) => "wait_describe_mirror",
        K::ListMirrors(_) => "list_mirrors",
        K::WaitListMirrors(_) => "wait_list_mirrors",
        K::ExpectMirrorStateRecord(_) => "expect_mirror_state_record",
    }
}

type StepResult = Result<String, String>;

struct Ctx<'a> {
    w: KafkaWorld,
    sc: &'a Scenario,
    start: mirror_core::time::Instant,
    /// Next sequence per (cluster, partition, producer id).
    sequences: BTreeMap<(usize, TopicPartition, i64), i32>,
    /// Named network faults.
    faults: BTreeMap<String, FaultId>,
}

/// Compares an error code with the expected name (`NONE` when absent).
fn check_error(got: ErrorCode, expect: Option<&String>) -> Result<(), String> {
    let want = expect.map_or("NONE", String::as_str);
    if got.name() == want {
        Ok(())
    } else {
        Err(format!("expected {want}, got {got}"))
    }
}

fn records(n: i32, tag: &str) -> Vec<SimpleRecord> {
    (0..n)
        .map(|i| SimpleRecord::value(i64::from(i), format!("{tag}-{i}")))
        .collect()
}

fn str_refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// ACLs in the scenario syntax, sorted (validated at parse time).
fn normalize_acls(acls: &[String]) -> Vec<String> {
    let mut v: Vec<String> = acls
        .iter()
        .filter_map(|a| super::format::parse_acl(a).ok())
        .map(|b| inspect::acl_text(&b))
        .collect();
    v.sort();
    v
}

impl Ctx<'_> {
    /// What an expectation step would look at, as it is now (nothing is compared): the
    /// logs of `expect_log`, the state of `expect_state`, the answer of `describe_mirror`
    /// and the record of `expect_mirror_state_record`. `None` for other steps.
    fn dump_expectation(&self, kind: &StepKind) -> Option<String> {
        match kind {
            StepKind::ExpectLog { .. } => self.dump_expected_log(kind),
            StepKind::ExpectState {
                cluster,
                topic,
                partition,
                ..
            } => {
                let tp = TopicPartition::new(topic.as_str(), *partition);
                let state = self.w.mirror_state(self.cluster(cluster), &tp);
                Some(format!(
                    "{cluster}/{tp} {}",
                    state.map_or_else(|| "no mirror state".to_string(), |s| s.to_string())
                ))
            }
            StepKind::DescribeMirror(d) => {
                let (error, rows) =
                    mirror_steps::describe(&self.w, self.cluster(&d.cluster), &d.mirror);
                let rows: Vec<String> = rows.iter().map(|r| r.render()).collect();
                Some(format!("{} {}: {error} {rows:?}", d.cluster, d.mirror))
            }
            StepKind::ExpectMirrorStateRecord(d) => Some(
                match mirror_steps::read_record(&self.w, self.cluster(&d.cluster), d) {
                    Ok((record, design)) => format!(
                        "{}/{}-{} in {}: {}",
                        d.cluster,
                        d.topic,
                        d.partition,
                        d.mirror,
                        mirror_steps::render_record(record.as_ref(), &design)
                    ),
                    Err(e) => e,
                },
            ),
            _ => None,
        }
    }

    /// For an `expect_log` step: each replica it would check (the named broker, else the
    /// leader and the live replicas), with its batches and bounds, as they are now. Nothing
    /// is compared.
    fn dump_expected_log(&self, kind: &StepKind) -> Option<String> {
        let StepKind::ExpectLog {
            cluster,
            topic,
            partition,
            broker,
            leader_only,
            ..
        } = kind
        else {
            return None;
        };
        let w = &self.w;
        let c = self.cluster(cluster);
        let tp = TopicPartition::new(topic.as_str(), *partition);
        let mut replicas: Vec<BrokerId> = match broker {
            Some(b) => vec![BrokerId(*b)],
            None => w.leader(c, &tp).into_iter().collect(),
        };
        if broker.is_none()
            && !leader_only
            && let Some((all, _)) = inspect::replicas_and_isr(w, c, &tp)
        {
            let leader = replicas.first().copied();
            replicas.extend(
                all.into_iter()
                    .filter(|b| Some(*b) != leader && inspect::is_up(w, c, *b)),
            );
        }
        if replicas.is_empty() {
            return Some(format!("{cluster}/{tp}: no leader"));
        }
        let parts: Vec<String> = replicas
            .iter()
            .map(|b| {
                let who = format!("{cluster}-{}", b.0);
                match (
                    inspect::replica_log(w, c, *b, &tp),
                    inspect::bounds(w, c, *b, &tp),
                ) {
                    (Some(log), Some(x)) => format!(
                        "{who} {tp} start={} lso={} hw={} leo={} batches={:?}",
                        x.log_start,
                        x.lso,
                        x.hw,
                        x.leo,
                        inspect::shown(&log)
                    ),
                    _ => format!("{who} has no replica of {tp}"),
                }
            })
            .collect();
        Some(parts.join("; "))
    }

    fn cluster(&self, name: &str) -> ClusterIdx {
        // Validation checked every cluster name.
        ClusterIdx(u16::try_from(self.sc.cluster_index(name).unwrap_or(0)).unwrap_or(0))
    }

    fn resolve_broker(
        &self,
        c: ClusterIdx,
        b: &BrokerRef,
        topic: Option<&String>,
        partition: i32,
    ) -> Result<BrokerId, String> {
        match b {
            BrokerRef::Id(id) => Ok(BrokerId(*id)),
            BrokerRef::Role(role) => {
                let tp = TopicPartition::new(topic.map_or("", String::as_str), partition);
                let leader = self
                    .w
                    .leader(c, &tp)
                    .ok_or_else(|| format!("{tp} has no leader"))?;
                if role == "leader" {
                    return Ok(leader);
                }
                let (_, isr) = inspect::replicas_and_isr(&self.w, c, &tp)
                    .ok_or_else(|| format!("{tp} leader state missing"))?;
                isr.into_iter()
                    .find(|r| *r != leader)
                    .ok_or_else(|| format!("{tp} has no in-sync follower"))
            }
        }
    }

    async fn wait(
        &self,
        timeout_ms: u64,
        what: &str,
        cond: impl FnMut(&KafkaWorld) -> bool,
    ) -> StepResult {
        let from = self.w.world.now();
        if self.w.wait_until(timeout_ms, cond).await {
            let waited = (self.w.world.now().0 - from.0) / 1_000;
            Ok(format!("{what} after {waited} ms"))
        } else {
            Err(format!(
                "timed out after {timeout_ms} ms waiting for {what}"
            ))
        }
    }

    async fn admin_error(&self, c: ClusterIdx, req: Request) -> ErrorCode {
        match self.w.admin(c, req).await {
            Some(Response::TopicErrors { results }) => results
                .first()
                .map_or(ErrorCode::UnknownServerError, |r| r.1),
            Some(Response::PartitionErrors { results }) => results
                .first()
                .map_or(ErrorCode::UnknownServerError, |r| r.1),
            Some(Response::MirrorAdmin { error, .. } | Response::Error { error }) => error,
            Some(_) => ErrorCode::UnknownServerError,
            None => ErrorCode::RequestTimedOut,
        }
    }

    #[allow(clippy::too_many_lines)]
    async fn step(&mut self, step: &StepDef) -> StepResult {
        use StepKind as K;
        let w = self.w.clone();
        match &step.kind {
            K::CreateTopic {
                cluster,
                topic,
                partitions,
                replication_factor,
                configs,
                topic_id,
                expect,
            } => {
                let c = self.cluster(cluster);
                let rf = replication_factor.unwrap_or_else(|| {
                    w.spec().clusters[usize::from(c.0)].default_replication_factor
                });
                let cfg: Vec<(&str, &str)> = configs
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect();
                let id = topic_id
                    .as_deref()
                    .map(|id| self.resolve_topic_id(id))
                    .transpose()?;
                let e = w
                    .create_topic_with_id(c, topic, *partitions, rf, &cfg, id)
                    .await;
                check_error(e, expect.as_ref())?;
                let with_id = id.map_or_else(String::new, |id| format!(" id={id}"));
                Ok(format!(
                    "{cluster}/{topic} partitions={partitions} rf={rf}{with_id}: {e}"
                ))
            }
            K::Produce {
                cluster,
                topic,
                partition,
                batches,
                records: n,
                acks,
                producer_id,
                producer_epoch,
                sequence,
                transactional,
                expect,
                expect_offset,
                broker,
            } => {
                let c = self.cluster(cluster);
                let ci = usize::from(c.0);
                let tp = TopicPartition::new(topic.as_str(), *partition);
                let target = broker
                    .as_ref()
                    .map(|b| self.resolve_broker(c, b, Some(topic), *partition))
                    .transpose()?;
                let mut first = None;
                let mut last_err = ErrorCode::None;
                for i in 0..*batches {
                    let batch = match producer_id {
                        None => BatchBuilder::new().build(&records(*n, &format!("{cluster}-{i}"))),
                        Some(pid) => {
                            let key = (ci, tp.clone(), *pid);
                            let seq = match sequence {
                                Some(s) if i == 0 => *s,
                                _ => self.sequences.get(&key).copied().unwrap_or(0),
                            };
                            self.sequences.insert(key, seq.wrapping_add(*n));
                            let (p, e, s) = (
                                ProducerId(*pid),
                                ProducerEpoch(*producer_epoch),
                                Sequence(seq),
                            );
                            let b = if *transactional {
                                BatchBuilder::transactional(p, e, s)
                            } else {
                                BatchBuilder::idempotent(p, e, s)
                            };
                            // Values named by (producer, epoch, sequence): a resend of the
                            // same sequence is the same records, as a producer's retry is, and
                            // `no_duplicates` finds it if the log takes it twice.
                            let rs =
                                records(*n, &format!("{cluster}-p{pid}e{producer_epoch}-s{seq}"));
                            let values: Vec<_> =
                                rs.iter().filter_map(|r| r.value.clone()).collect();
                            w.watch_scenario_write(c, &tp, &values);
                            b.build(&rs)
                        }
                    };
                    let sent = match target {
                        Some(b) => w.produce_batch_to(c, b, &tp, batch, *acks).await,
                        None => w.produce_batch(c, &tp, batch, *acks).await,
                    };
                    let (err, off) = sent.unwrap_or((ErrorCode::RequestTimedOut, Offset(-1)));
                    last_err = err;
                    if !err.is_ok() {
                        break;
                    }
                    if let Some(base) = expect_offset {
                        let want = base + i64::from(i) * i64::from(*n);
                        if *acks != 0 && off.0 != want {
                            return Err(format!("batch {i} landed at {}, expected {want}", off.0));
                        }
                    }
                    first.get_or_insert(off.0);
                }
                check_error(last_err, expect.as_ref())?;
                Ok(match first {
                    Some(f) if last_err.is_ok() && *acks != 0 => format!(
                        "{cluster}/{tp} {batches}x{n} at {f}..{}",
                        f + i64::from(*batches) * i64::from(*n)
                    ),
                    _ => format!("{cluster}/{tp}: {last_err}"),
                })
                .map(|r| match target {
                    Some(b) => format!("{r} (sent to {cluster}-{})", b.0),
                    None => r,
                })
            }
            K::EndTxn {
                cluster,
                topic,
                partition,
                producer_id,
                producer_epoch,
                commit,
                expect,
            } => {
                let c = self.cluster(cluster);
                let tp = TopicPartition::new(topic.as_str(), *partition);
                let leader = w
                    .leader(c, &tp)
                    .ok_or_else(|| format!("{tp} has no leader"))?;
                let req = Request::WriteTxnMarkers {
                    markers: vec![TxnMarker {
                        producer_id: ProducerId(*producer_id),
                        producer_epoch: ProducerEpoch(*producer_epoch),
                        commit: *commit,
                        coordinator_epoch: 0,
                        partitions: vec![tp.clone()],
                    }],
                };
                let e = match self.w.request_to(c, leader, req).await {
                    Some(Response::PartitionErrors { results }) => results
                        .first()
                        .map_or(ErrorCode::UnknownServerError, |r| r.1),
                    Some(Response::Error { error }) => error,
                    _ => ErrorCode::RequestTimedOut,
                };
                check_error(e, expect.as_ref())?;
                let what = if *commit { "COMMIT" } else { "ABORT" };
                Ok(format!(
                    "{what} for pid {producer_id} on {cluster}/{tp}: {e}"
                ))
            }
            K::Consume {
                cluster,
                topic,
                partition,
                offset,
                isolation,
                expect,
                expect_records,
                expect_hw,
                expect_lso,
                expect_log_start,
            } => {
                let c = self.cluster(cluster);
                let tp = TopicPartition::new(topic.as_str(), *partition);
                if !inspect::topic_exists(&w, c, topic) {
                    // A consumer's metadata lookup of a topic the cluster does not have.
                    let e = ErrorCode::UnknownTopicOrPartition;
                    check_error(e, expect.as_ref())?;
                    return Ok(format!("{cluster}/{tp}: {e}"));
                }
                let leader = w
                    .leader(c, &tp)
                    .ok_or_else(|| format!("{tp} has no leader"))?;
                let req = Request::Fetch {
                    replica: None,
                    max_wait_ms: 0,
                    min_bytes: 0,
                    max_bytes: 1 << 24,
                    isolation: match isolation {
                        IsolationDef::ReadUncommitted => FetchIsolation::HighWatermark,
                        IsolationDef::ReadCommitted => FetchIsolation::TxnCommitted,
                    },
                    partitions: vec![FetchPartition {
                        tp: tp.clone(),
                        fetch_offset: Offset(*offset),
                        current_leader_epoch: None,
                        last_fetched_epoch: None,
                        log_start_offset: Offset(-1),
                        topic_id: None,
                    }],
                    session: mirror_core::protocol::messages::FetchSessionMeta::SESSIONLESS,
                    forgotten: Vec::new(),
                };
                let Some(Response::Fetch { partitions, .. }) =
                    self.w.request_to(c, leader, req).await
                else {
                    return Err("fetch got no answer".into());
                };
                let p = partitions
                    .into_iter()
                    .next()
                    .ok_or("fetch answered no partition")?;
                check_error(p.error, expect.as_ref())?;
                let aborted: Vec<(i64, i64)> = p
                    .aborted_transactions
                    .iter()
                    .flatten()
                    .map(|a| (a.producer_id.0, a.first_offset.0))
                    .collect();
                let n: i64 = p
                    .batches
                    .iter()
                    .filter(|b| !b.is_control_batch())
                    .filter(|b| {
                        // read_committed drops records of aborted transactions.
                        !(b.is_transactional()
                            && aborted.iter().any(|(pid, first)| {
                                *pid == b.producer_id().0 && *first <= b.base_offset().0
                            }))
                    })
                    .flat_map(|b| {
                        let base = b.base_offset().0;
                        b.records()
                            .into_iter()
                            .map(move |r| base + i64::from(r.offset_delta))
                    })
                    .filter(|o| *o >= *offset)
                    .count()
                    .try_into()
                    .unwrap_or(i64::MAX);
                let checks = [
                    ("records", *expect_records, n),
                    ("HW", *expect_hw, p.high_watermark.0),
                    ("LSO", *expect_lso, p.last_stable_offset.0),
                    ("log start", *expect_log_start, p.log_start_offset.0),
                ];
                for (what, want, got) in checks {
                    if let Some(want) = want
                        && want != got
                    {
                        return Err(format!("{what}: expected {want}, got {got}"));
                    }
                }
                Ok(format!(
                    "{cluster}/{tp} from {offset}: {} records={n} hw={} lso={} start={}",
                    p.error, p.high_watermark.0, p.last_stable_offset.0, p.log_start_offset.0
                ))
            }
            K::StartProducer {
                cluster,
                topic,
                kind,
                rate,
                abort_one_in,
            } => {
                let c = self.cluster(cluster);
                let parts = inspect::partition_count(&w, c, topic)
                    .ok_or_else(|| format!("`{topic}` is unknown on {cluster}"))?;
                let brokers = w.broker_ids(c);
                let (t, kind, rate, abort) = (topic.clone(), *kind, *rate, *abort_one_in);
                let seed = self.sc.seed;
                w.add_workload_client(c, move |boot| {
                    let n = match boot.id.role {
                        NodeRole::Client(n) => n,
                        _ => 0,
                    };
                    let mut cfg =
                        ProducerConfig::new(n, c, brokers.clone(), &t, (0..parts).collect());
                    cfg.records_per_second = f64::from(rate);
                    cfg.seed = seed.wrapping_mul(31).wrapping_add(u64::from(n));
                    if kind == ProducerKindDef::Transactional {
                        cfg.transactional_id = Some(format!("txn-{n}"));
                        cfg.txn.abort_probability = if abort == 0 {
                            0.0
                        } else {
                            1.0 / f64::from(abort)
                        };
                    }
                    ClientNode::Producer(Box::new(Producer::new(cfg)))
                });
                Ok(format!(
                    "{kind:?} producer on {cluster}/{topic} at {rate}/s"
                ))
            }
            K::StopProducers => {
                w.stop_producers();
                Ok("producers closed".into())
            }
            K::CreateMirror {
                cluster,
                mirror,
                source,
                configs,
                expect,
            } => {
                let extra: Vec<(&str, &str)> = configs
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect();
                let e = w
                    .create_mirror_with(self.cluster(cluster), mirror, self.cluster(source), &extra)
                    .await;
                check_error(e, expect.as_ref())?;
                Ok(format!("{mirror} on {cluster} from {source}: {e}"))
            }
            K::StartMirror {
                cluster,
                mirror,
                source,
                topics,
                include_patterns,
                exclude_patterns,
                expect,
            } => {
                let refs = str_refs(topics);
                let (c, s) = (self.cluster(cluster), self.cluster(source));
                let patterns = (&include_patterns[..], &exclude_patterns[..]);
                let e = w
                    .start_mirror_topics_with(c, mirror, s, &refs, patterns)
                    .await;
                check_error(e, expect.as_ref())?;
                Ok(format!("{mirror} {topics:?}: {e}"))
            }
            K::StopMirror {
                cluster,
                mirror,
                topics,
                expect,
                ..
            }
            | K::PauseMirror {
                cluster,
                mirror,
                topics,
                expect,
            }
            | K::ResumeMirror {
                cluster,
                mirror,
                topics,
                expect,
            }
            | K::RecoverMirror {
                cluster,
                mirror,
                topics,
                expect,
            } => {
                let (c, refs) = (self.cluster(cluster), str_refs(topics));
                let e = match &step.kind {
                    K::StopMirror { patterns, .. } => {
                        w.stop_mirror_topics_with(c, mirror, &refs, patterns).await
                    }
                    K::RecoverMirror { .. } => w.recover_mirror_topics(c, mirror, &refs).await,
                    k => {
                        let pause = matches!(k, K::PauseMirror { .. });
                        w.pause_mirror_topics(c, mirror, &refs, pause).await
                    }
                };
                check_error(e, expect.as_ref())?;
                Ok(format!("{mirror} {topics:?}: {e}"))
            }
            K::DeleteMirror {
                cluster,
                mirror,
                expect,
            } => {
                let req = Request::DeleteMirror {
                    mirror_name: mirror.clone(),
                    state_validation_offset: None,
                };
                let e = self.admin_error(self.cluster(cluster), req).await;
                check_error(e, expect.as_ref())?;
                Ok(format!("{mirror}: {e}"))
            }
            K::DeleteTopic {
                cluster,
                topic,
                expect,
            } => {
                let req = Request::DeleteTopics {
                    names: vec![topic.clone()],
                };
                let e = self.admin_error(self.cluster(cluster), req).await;
                check_error(e, expect.as_ref())?;
                Ok(format!("{cluster}/{topic}: {e}"))
            }
            K::CreatePartitions {
                cluster,
                topic,
                count,
                expect,
            } => {
                let req = Request::CreatePartitions {
                    topic: topic.clone(),
                    count: *count,
                };
                let e = self.admin_error(self.cluster(cluster), req).await;
                check_error(e, expect.as_ref())?;
                Ok(format!("{cluster}/{topic} to {count}: {e}"))
            }
            K::AlterTopicConfig {
                cluster,
                topic,
                key,
                value,
                expect,
            } => {
                let req = Request::IncrementalAlterConfigs {
                    resource: ConfigResource::Topic(topic.clone()),
                    ops: vec![(key.clone(), value.clone())],
                };
                let e = self.admin_error(self.cluster(cluster), req).await;
                check_error(e, expect.as_ref())?;
                Ok(format!("{cluster}/{topic} {key}={value:?}: {e}"))
            }
            K::DeleteRecords {
                cluster,
                topic,
                partition,
                offset,
                expect,
            } => {
                let tp = TopicPartition::new(topic.as_str(), *partition);
                let e = w
                    .delete_records(self.cluster(cluster), &tp, Offset(*offset))
                    .await;
                check_error(e, expect.as_ref())?;
                Ok(format!("{cluster}/{tp} before {offset}: {e}"))
            }
            K::UncleanElection {
                cluster,
                topic,
                partition,
                broker,
                expect,
            } => {
                let tp = TopicPartition::new(topic.as_str(), *partition);
                let c = self.cluster(cluster);
                let candidate = broker
                    .map(|b| self.election_candidate(c, &tp, BrokerId(b)))
                    .transpose()?;
                let e = w.unclean_election_of(c, &tp, candidate).await;
                check_error(e, expect.as_ref())?;
                Ok(format!(
                    "{cluster}/{tp}: {e} leader={:?}",
                    w.leader(self.cluster(cluster), &tp).map(|b| b.0)
                ))
            }
            K::Crash {
                cluster,
                broker,
                topic,
                partition,
                mode,
            } => {
                let c = self.cluster(cluster);
                let b = self.resolve_broker(c, broker, topic.as_ref(), *partition)?;
                let policy = match mode {
                    CrashModeDef::Process => CrashPolicy::KeepAll,
                    CrashModeDef::PowerLoss => CrashPolicy::LoseAllUnflushed,
                    CrashModeDef::Torn => CrashPolicy::KeepRandomPrefix,
                };
                if w.world.crash(NodeId::broker(c, b), policy) {
                    Ok(format!("{cluster}-{} ({mode:?})", b.0))
                } else {
                    Err(format!("{cluster}-{} is already down", b.0))
                }
            }
            K::RotBatch {
                cluster,
                broker,
                topic,
                partition,
                offset,
            } => {
                let c = self.cluster(cluster);
                let tp = TopicPartition::new(topic.as_str(), *partition);
                let b = self.resolve_broker(c, broker, Some(topic), *partition)?;
                let r = w.rot_batch(c, b, &tp, RotTarget::Offset(Offset(*offset)))?;
                Ok(format!(
                    "{cluster}-{} {tp}: batch {}-{} rotted",
                    b.0, r.base_offset, r.last_offset
                ))
            }
            K::Restart { cluster, broker } => {
                let n = NodeId::broker(self.cluster(cluster), BrokerId(*broker));
                if !w.world.status(n).is_down() {
                    return Err(format!("{cluster}-{broker} is not down"));
                }
                w.world.restart(n);
                Ok(format!("{cluster}-{broker}"))
            }
            K::RestartAll { cluster } => {
                let only = cluster.as_deref().map(|c| self.cluster(c));
                let mut restarted = Vec::new();
                for n in w.world.down_nodes() {
                    if matches!(n.role, NodeRole::Broker(_)) && only.is_none_or(|c| n.cluster == c)
                    {
                        w.world.restart(n);
                        restarted.push(w.world.node_name(n));
                    }
                }
                Ok(format!("restarted {restarted:?}"))
            }
            K::PauseBroker { cluster, broker } => {
                let n = NodeId::broker(self.cluster(cluster), BrokerId(*broker));
                if w.world.pause(n) {
                    Ok(format!("{cluster}-{broker}"))
                } else {
                    Err(format!("{cluster}-{broker} cannot be paused"))
                }
            }
            K::ResumeBroker { cluster, broker } => {
                let n = NodeId::broker(self.cluster(cluster), BrokerId(*broker));
                if w.world.resume(n) {
                    Ok(format!("{cluster}-{broker}"))
                } else {
                    Err(format!("{cluster}-{broker} is not paused"))
                }
            }
            K::Isolate {
                cluster,
                broker,
                topic,
                partition,
                id,
            } => {
                let c = self.cluster(cluster);
                let b = self.resolve_broker(c, broker, topic.as_ref(), *partition)?;
                let f = w.world.isolate(NodeId::broker(c, b));
                self.faults.insert(id.clone(), f);
                Ok(format!("{cluster}-{} as `{id}`", b.0))
            }
            K::IsolateFromController {
                cluster,
                broker,
                id,
            } => {
                let c = self.cluster(cluster);
                let f = w.world.partition(
                    NodeSet::node(NodeId::broker(c, BrokerId(*broker))),
                    NodeSet::node(NodeId::controller(c)),
                    Direction::Both,
                );
                self.faults.insert(id.clone(), f);
                Ok(format!("{cluster}-{broker} from {cluster}-ctl as `{id}`"))
            }
            K::PartitionClusters {
                from,
                to,
                one_way,
                id,
            } => {
                let dir = if *one_way {
                    Direction::AtoB
                } else {
                    Direction::Both
                };
                let f = w.world.partition(
                    NodeSet::Cluster(self.cluster(from)),
                    NodeSet::Cluster(self.cluster(to)),
                    dir,
                );
                self.faults.insert(id.clone(), f);
                Ok(format!(
                    "{from} {} {to} as `{id}`",
                    if *one_way { "->" } else { "<->" }
                ))
            }
            K::Heal { id } => {
                let f = self
                    .faults
                    .remove(id)
                    .ok_or_else(|| format!("no network fault named `{id}` is active"))?;
                w.world.heal(f);
                Ok(format!("`{id}`"))
            }
            K::HealAll => {
                w.world.heal_all();
                self.faults.clear();
                Ok("every fault".into())
            }
            K::DiskFull {
                cluster,
                broker,
                on,
            } => {
                w.world.disk_full(
                    NodeId::broker(self.cluster(cluster), BrokerId(*broker)),
                    *on,
                );
                Ok(format!("{cluster}-{broker} full={on}"))
            }
            K::Sleep { ms } => {
                w.run_for_ms(*ms).await;
                Ok(format!("{ms} ms"))
            }
            K::WaitState {
                cluster,
                topic,
                partition,
                state,
                timeout_ms,
            } => {
                let c = self.cluster(cluster);
                let tp = TopicPartition::new(topic.as_str(), *partition);
                let want = parse_state(state).ok_or("unknown state")?;
                let what = format!("{cluster}/{tp} {want}");
                self.wait(*timeout_ms, &what, |w| w.mirror_state(c, &tp) == Some(want))
                    .await
                    .map_err(|e| format!("{e} (state {:?})", w.mirror_state(c, &tp)))
            }
            K::WaitConverged {
                clusters,
                topic,
                timeout_ms,
            } => {
                let (a, b) = (self.cluster(&clusters[0]), self.cluster(&clusters[1]));
                let what = format!("{topic} identical on {} and {}", clusters[0], clusters[1]);
                self.wait(*timeout_ms, &what, |w| {
                    inspect::divergence(w, a, b, topic).is_none()
                })
                .await
                .map_err(|e| {
                    format!(
                        "{e}: {}",
                        inspect::divergence(&w, a, b, topic).unwrap_or_default()
                    )
                })
            }
            K::WaitOffsets {
                cluster,
                topic,
                partition,
                hw,
                leo,
                all_replicas,
                timeout_ms,
            } => {
                let c = self.cluster(cluster);
                let tp = TopicPartition::new(topic.as_str(), *partition);
                let scope = if *all_replicas {
                    "every replica of "
                } else {
                    ""
                };
                let what = format!("{scope}{cluster}/{tp} hw={hw:?} leo={leo:?}");
                let at =
                    |w: &KafkaWorld| w.leader(c, &tp).and_then(|l| inspect::bounds(w, c, l, &tp));
                let reached =
                    |x: Bounds| hw.is_none_or(|h| x.hw >= h) && leo.is_none_or(|l| x.leo >= l);
                self.wait(*timeout_ms, &what, |w| {
                    at(w).is_some_and(reached)
                        && (!*all_replicas
                            || inspect::replicas_and_isr(w, c, &tp).is_some_and(|(rs, _)| {
                                rs.into_iter()
                                    .filter(|b| inspect::is_up(w, c, *b))
                                    .all(|b| inspect::bounds(w, c, b, &tp).is_some_and(reached))
                            }))
                })
                .await
                .map_err(|e| format!("{e} (at {:?})", at(&w)))
            }
            K::WaitLeader {
                cluster,
                topic,
                partition,
                none,
                live,
                timeout_ms,
            } => {
                let c = self.cluster(cluster);
                let tp = TopicPartition::new(topic.as_str(), *partition);
                let what = if *none {
                    format!("{cluster}/{tp} without a leader")
                } else {
                    format!("a leader for {cluster}/{tp}")
                };
                let r = self
                    .wait(*timeout_ms, &what, |w| match w.leader(c, &tp) {
                        None => *none,
                        Some(l) => !*none && (!*live || inspect::is_up(w, c, l)),
                    })
                    .await?;
                Ok(format!("{r}: {:?}", w.leader(c, &tp).map(|b| b.0)))
            }
            K::ExpectState {
                cluster,
                topic,
                partition,
                state,
            } => {
                let c = self.cluster(cluster);
                let tp = TopicPartition::new(topic.as_str(), *partition);
                let want = parse_state(state).ok_or("unknown state")?;
                let got = w.mirror_state(c, &tp);
                if got == Some(want) {
                    Ok(format!("{cluster}/{tp} {want}"))
                } else {
                    Err(format!("{cluster}/{tp}: expected {want}, got {got:?}"))
                }
            }
            K::ExpectLog {
                cluster,
                topic,
                partition,
                broker,
                batches,
                epochs,
                log_start,
                lso,
                hw,
                leo,
                leader_epoch_above,
                leader_epoch,
                producers,
                leader_only,
                isr,
            } => {
                let c = self.cluster(cluster);
                let tp = TopicPartition::new(topic.as_str(), *partition);
                if let Some(want) = isr {
                    w.leader(c, &tp)
                        .ok_or_else(|| format!("{tp} has no leader"))?;
                    let (_, got) = inspect::replicas_and_isr(&w, c, &tp)
                        .ok_or_else(|| format!("{tp} leader state missing"))?;
                    let got: Vec<i32> = got.iter().map(|b| b.0).collect();
                    let mut want = want.clone();
                    want.sort_unstable();
                    if got != want {
                        return Err(format!("{tp} ISR: expected {want:?}, got {got:?}"));
                    }
                }
                let leader = match broker {
                    Some(b) => BrokerId(*b),
                    None => w
                        .leader(c, &tp)
                        .ok_or_else(|| format!("{tp} has no leader"))?,
                };
                let mut replicas = vec![leader];
                if !leader_only && broker.is_none() {
                    let (all, _) = inspect::replicas_and_isr(&w, c, &tp)
                        .ok_or_else(|| format!("{tp} leader state missing"))?;
                    replicas.extend(
                        all.into_iter()
                            .filter(|b| *b != leader && inspect::is_up(&w, c, *b)),
                    );
                }
                for b in &replicas {
                    let who = format!("{cluster}-{}", b.0);
                    let log = inspect::replica_log(&w, c, *b, &tp)
                        .ok_or_else(|| format!("{who} has no replica of {tp}"))?;
                    if let Some(want) = batches {
                        let got = inspect::rows(&log);
                        let ok = got.len() == want.len()
                            && got.iter().zip(want).all(|(g, p)| {
                                BatchPattern::parse(p).is_ok_and(|p| p.matches(g.0, g.1, g.2, g.3))
                            });
                        if !ok {
                            let shown = inspect::shown(&log);
                            return Err(format!(
                                "{who} {tp} batches: expected {want:?}, got {shown:?}"
                            ));
                        }
                    }
                    if let Some(want) = epochs {
                        let got = inspect::epoch_entries(&w, c, *b, &tp).unwrap_or_default();
                        if &got != want {
                            return Err(format!(
                                "{who} {tp} epoch cache: expected {want:?}, got {got:?}"
                            ));
                        }
                    }
                    if let Some(want) = producers {
                        let got = inspect::producer_entries(&w, c, *b, &tp).unwrap_or_default();
                        if &got != want {
                            return Err(format!(
                                "{who} {tp} producer state: expected {want:?}, got {got:?}"
                            ));
                        }
                    }
                    let x: Bounds = inspect::bounds(&w, c, *b, &tp)
                        .ok_or_else(|| format!("{who} has no replica of {tp}"))?;
                    for (what, want, got) in [
                        ("log start", *log_start, x.log_start),
                        ("LSO", *lso, x.lso),
                        ("HW", *hw, x.hw),
                        ("LEO", *leo, x.leo),
                    ] {
                        if let Some(want) = want
                            && want != got
                        {
                            return Err(format!("{who} {tp} {what}: expected {want}, got {got}"));
                        }
                    }
                }
                if let Some(want) = leader_epoch {
                    let got = match broker {
                        Some(b) => inspect::replica_leader_epoch(&w, c, BrokerId(*b), &tp),
                        None => inspect::leader_epoch(&w, c, &tp),
                    }
                    .ok_or_else(|| format!("{tp}: no replica to read a leader epoch from"))?;
                    if got != *want {
                        return Err(format!("{tp} leader epoch: expected {want}, got {got}"));
                    }
                }
                if let Some(min) = leader_epoch_above {
                    let e = inspect::leader_epoch(&w, c, &tp).unwrap_or(-1);
                    if i64::from(e) <= *min {
                        return Err(format!("{tp} leader epoch {e} is not above {min}"));
                    }
                }
                let first = replicas[0];
                let x = inspect::bounds(&w, c, first, &tp).ok_or("replica missing")?;
                let on = if first == leader {
                    format!("{} replica(s)", replicas.len())
                } else {
                    format!("{cluster}-{}", first.0)
                };
                Ok(format!(
                    "{cluster}/{tp} on {on}: start={} lso={} hw={} leo={}",
                    x.log_start, x.lso, x.hw, x.leo
                ))
            }
            K::ExpectLogsEqual {
                clusters,
                topic,
                partition,
            } => {
                let (a, b) = (self.cluster(&clusters[0]), self.cluster(&clusters[1]));
                let tp = TopicPartition::new(topic.as_str(), *partition);
                let la = inspect::leader_log(&w, a, &tp)
                    .ok_or_else(|| format!("{tp} has no leader on {}", clusters[0]))?;
                let lb = inspect::leader_log(&w, b, &tp)
                    .ok_or_else(|| format!("{tp} has no leader on {}", clusters[1]))?;
                if la == lb {
                    Ok(format!("{tp}: {} identical batches", la.len()))
                } else {
                    Err(format!(
                        "{tp} differs: {:?} vs {:?}",
                        inspect::shown(&la),
                        inspect::shown(&lb)
                    ))
                }
            }
            K::CommitOffset {
                cluster,
                group,
                topic,
                partition,
                offset,
                member,
                leader_epoch,
                expect,
            } => {
                let c = self.cluster(cluster);
                let tp = TopicPartition::new(topic.as_str(), *partition);
                let epoch = leader_epoch.filter(|e| *e >= 0).map(LeaderEpoch);
                let req = Request::OffsetCommit {
                    group_id: group.clone(),
                    member_id: member.clone(),
                    offsets: vec![(tp.clone(), Offset(*offset), epoch)],
                };
                let e = match self.w.group_request(c, group, req).await {
                    Some(Response::PartitionErrors { results }) => results
                        .first()
                        .map_or(ErrorCode::UnknownServerError, |r| r.1),
                    Some(Response::Error { error }) => error,
                    _ => ErrorCode::RequestTimedOut,
                };
                check_error(e, expect.as_ref())?;
                let at = epoch.map_or_else(String::new, |e| format!("@{e}"));
                Ok(format!("{cluster} {group} {tp}={offset}{at}: {e}"))
            }
            K::JoinGroup {
                cluster,
                group,
                member,
                session_timeout_ms,
            } => {
                let req = Request::GroupHeartbeat {
                    group_id: group.clone(),
                    member_id: member.clone(),
                    session_timeout_ms: *session_timeout_ms,
                };
                let e = match self
                    .w
                    .group_request(self.cluster(cluster), group, req)
                    .await
                {
                    Some(Response::Error { error }) => error,
                    Some(_) => ErrorCode::UnknownServerError,
                    None => ErrorCode::RequestTimedOut,
                };
                check_error(e, None)?;
                Ok(format!("{cluster} {group} member {member}: {e}"))
            }
            K::ExpectCommittedOffset {
                cluster,
                group,
                topic,
                partition,
                offset,
                leader_epoch,
            } => {
                let tp = TopicPartition::new(topic.as_str(), *partition);
                let c = self.cluster(cluster);
                let got = inspect::committed(&w, c, group, &tp);
                if got != *offset {
                    return Err(format!(
                        "{cluster} {group} {tp}: expected {offset:?}, got {got:?}"
                    ));
                }
                let Some(want) = leader_epoch else {
                    return Ok(format!("{cluster} {group} {tp}: {got:?}"));
                };
                let epoch = inspect::committed_leader_epoch(&w, c, group, &tp).unwrap_or(-1);
                if epoch == *want {
                    Ok(format!(
                        "{cluster} {group} {tp}: {got:?} leader epoch {epoch}"
                    ))
                } else {
                    Err(format!(
                        "{cluster} {group} {tp} leader epoch: expected {want}, got {epoch}"
                    ))
                }
            }
            K::WaitCommittedOffset {
                cluster,
                group,
                topic,
                partition,
                offset,
                timeout_ms,
            } => {
                let c = self.cluster(cluster);
                let tp = TopicPartition::new(topic.as_str(), *partition);
                let what = format!("{cluster} {group} {tp} committed at {offset}");
                self.wait(*timeout_ms, &what, |w| {
                    inspect::committed(w, c, group, &tp) == Some(*offset)
                })
                .await
                .map_err(|e| format!("{e} (now {:?})", inspect::committed(&w, c, group, &tp)))
            }
            K::ExpectTopicConfig {
                cluster,
                topic,
                key,
                value,
            } => {
                let got = inspect::topic_config(&w, self.cluster(cluster), topic, key);
                if got == *value {
                    Ok(format!("{cluster}/{topic} {key}={got:?}"))
                } else {
                    Err(format!(
                        "{cluster}/{topic} {key}: expected {value:?}, got {got:?}"
                    ))
                }
            }
            K::WaitTopicConfig {
                cluster,
                topic,
                key,
                value,
                timeout_ms,
            } => {
                let c = self.cluster(cluster);
                let what = format!("{cluster}/{topic} {key}={value:?}");
                self.wait(*timeout_ms, &what, |w| {
                    inspect::topic_config(w, c, topic, key) == *value
                })
                .await
                .map_err(|e| format!("{e} (now {:?})", inspect::topic_config(&w, c, topic, key)))
            }
            K::AlterMirrorConfig { .. }
            | K::ExpectMirrorConfig { .. }
            | K::WaitMirrorConfig { .. } => self.mirror_config_step(&step.kind).await,
            K::CreateAcl {
                cluster,
                acl,
                expect,
            } => {
                let b = super::format::parse_acl(acl)?;
                let e = w
                    .create_acls(self.cluster(cluster), vec![b])
                    .await
                    .and_then(|r| r.first().copied())
                    .unwrap_or(ErrorCode::RequestTimedOut);
                check_error(e, expect.as_ref())?;
                Ok(format!("{cluster} {acl}: {e}"))
            }
            K::DeleteAcl { cluster, acl } => {
                let b = super::format::parse_acl(acl)?;
                let filter = mirror_core::protocol::acl::AclBindingFilter::exact(&b);
                let r = w.delete_acls(self.cluster(cluster), vec![filter]).await;
                let n = r
                    .as_ref()
                    .map_or(0, |r| r.iter().map(|f| f.matching.len()).sum());
                if r.is_none() {
                    return Err("DeleteAcls got no answer".into());
                }
                Ok(format!("{cluster} {acl}: {n} deleted"))
            }
            K::ExpectAcls { cluster, acls } => {
                let got = inspect::topic_acls(&w, self.cluster(cluster));
                let want = normalize_acls(acls);
                if got == want {
                    Ok(format!("{cluster}: {} ACLs", got.len()))
                } else {
                    Err(format!("{cluster} ACLs: expected {want:?}, got {got:?}"))
                }
            }
            K::WaitAcls {
                cluster,
                acls,
                timeout_ms,
            } => {
                let c = self.cluster(cluster);
                let want = normalize_acls(acls);
                let what = format!("{cluster} ACLs {want:?}");
                self.wait(*timeout_ms, &what, |w| inspect::topic_acls(w, c) == want)
                    .await
                    .map_err(|e| format!("{e} (now {:?})", inspect::topic_acls(&w, c)))
            }
            K::ExpectLosses { cluster, losses } => {
                let prefix = format!("{}:", self.cluster(cluster).0);
                let got: Vec<String> = lock(&w.checker)
                    .ghost
                    .losses
                    .iter()
                    .filter(|l| l.partition.starts_with(&prefix))
                    // PREPARING without an LME empties an empty log at 0: nothing is lost.
                    .filter(|l| !(l.from_offset == 0 && l.batches == 0))
                    .map(|l| format!("{}@{}", l.cause, l.from_offset))
                    .collect();
                if &got == losses {
                    Ok(format!("{cluster}: {got:?}"))
                } else {
                    Err(format!(
                        "{cluster} losses: expected {losses:?}, got {got:?}"
                    ))
                }
            }
            K::TruncateLog {
                cluster,
                broker,
                topic,
                partition,
                offset,
                expect,
            } => {
                self.truncate_log(cluster, broker, topic, *partition, *offset, expect.as_ref())
                    .await
            }
            K::DescribeMirror(d) => self.describe_mirror(d),
            K::WaitDescribeMirror(d) => self.wait_describe_mirror(d).await,
            K::ListMirrors(d) => self.list_mirrors(d),
            K::WaitListMirrors(d) => self.wait_list_mirrors(d).await,
            K::ExpectMirrorStateRecord(d) => self.expect_mirror_state_record(d),
        }
    }
}

/// The KIP-1279 admin-answer steps and test hooks (`mirror_steps`), kept apart from the
/// long `step` match.
impl Ctx<'_> {
    /// The topic id a `create_topic.topic_id` names.
    fn resolve_topic_id(&self, id: &str) -> Result<TopicId, String> {
        match TopicIdRef::parse(id)? {
            TopicIdRef::Literal(n) => Ok(TopicId(n)),
            TopicIdRef::Of { cluster, topic } => {
                let c = self.cluster(&cluster);
                let arc = self.w.world.node_state(NodeId::controller(c));
                let g = lock(&arc);
                g.as_controller()
                    .and_then(|ctl| ctl.image().topic_id(&topic))
                    .ok_or_else(|| format!("topic_id: `{topic}` is unknown on {cluster}"))
            }
        }
    }

    /// `unclean_election.broker`, checked the way the step documents: a replica of `tp`, up,
    /// and not fenced by the controller.
    fn election_candidate(
        &self,
        c: ClusterIdx,
        tp: &TopicPartition,
        b: BrokerId,
    ) -> Result<BrokerId, String> {
        let name = self.w.world.node_name(NodeId::broker(c, b));
        let replicas = self.w.replicas(c, tp);
        if !replicas.contains(&b) {
            let ids: Vec<i32> = replicas.iter().map(|r| r.0).collect();
            return Err(format!(
                "{name} is not a replica of {tp} (replicas {ids:?}): it cannot be elected"
            ));
        }
        if !inspect::is_up(&self.w, c, b) {
            return Err(format!("{name} is down: it cannot be elected"));
        }
        if !self.w.unfenced_brokers(c).contains(&b) {
            return Err(format!(
                "{name} is fenced by the controller: it cannot be elected"
            ));
        }
        Ok(b)
    }

    async fn truncate_log(
        &self,
        cluster: &str,
        broker: &BrokerRef,
        topic: &str,
        partition: i32,
        offset: i64,
        expect: Option<&String>,
    ) -> StepResult {
        let c = self.cluster(cluster);
        let tp = TopicPartition::new(topic, partition);
        let b = self.resolve_broker(c, broker, Some(&topic.to_string()), partition)?;
        let who = format!("{cluster}-{}", b.0);
        let before = inspect::bounds(&self.w, c, b, &tp);
        let e = self
            .w
            .test_truncate_log(c, b, &tp, Offset(offset))
            .await
            .unwrap_or(ErrorCode::RequestTimedOut);
        check_error(e, expect)?;
        let after = inspect::bounds(&self.w, c, b, &tp);
        Ok(match (before, after) {
            (Some(x), Some(y)) if e.is_ok() => format!(
                "{who} {tp} to {offset}: LEO {}->{} HW {}->{} start {}->{}",
                x.leo, y.leo, x.hw, y.hw, x.log_start, y.log_start
            ),
            _ => format!("{who} {tp} to {offset}: {e}"),
        })
    }

    fn describe_mirror(&self, d: &DescribeMirrorDef) -> StepResult {
        let (error, rows) = mirror_steps::describe(&self.w, self.cluster(&d.cluster), &d.mirror);
        mirror_steps::check_describe(d, error, &rows).map(|ok| format!("{}: {ok}", d.cluster))
    }

    async fn wait_describe_mirror(&self, d: &DescribeMirrorDef) -> StepResult {
        let c = self.cluster(&d.cluster);
        let timeout = d.timeout_ms.unwrap_or(60_000);
        let check = |w: &KafkaWorld| {
            let (error, rows) = mirror_steps::describe(w, c, &d.mirror);
            mirror_steps::check_describe(d, error, &rows)
        };
        let what = format!("{} {} as described", d.cluster, d.mirror);
        let waited = self.wait(timeout, &what, |w| check(w).is_ok()).await;
        match (waited, check(&self.w)) {
            (Ok(r), Ok(now)) => Ok(format!("{r}: {now}")),
            (Err(e), Err(why)) | (Ok(e), Err(why)) => Err(format!("{e}: {why}")),
            (Err(e), Ok(_)) => Err(e),
        }
    }

    fn list_mirrors_now(&self, d: &ListMirrorsDef, w: &KafkaWorld) -> Vec<String> {
        let filter = mirror_steps::list_filter(d, |n| self.sc.cluster_index(n).unwrap_or(0));
        mirror_steps::list(w, self.cluster(&d.cluster), &filter)
            .iter()
            .map(mirror_steps::render_listing)
            .collect()
    }

    fn list_mirrors(&self, d: &ListMirrorsDef) -> StepResult {
        let got = self.list_mirrors_now(d, &self.w);
        if got == d.mirrors {
            Ok(format!("{}: {got:?}", d.cluster))
        } else {
            Err(format!(
                "{} mirrors: expected {:?}, got {got:?}",
                d.cluster, d.mirrors
            ))
        }
    }

    async fn wait_list_mirrors(&self, d: &ListMirrorsDef) -> StepResult {
        let timeout = d.timeout_ms.unwrap_or(60_000);
        let what = format!("{} mirrors {:?}", d.cluster, d.mirrors);
        self.wait(timeout, &what, |w| self.list_mirrors_now(d, w) == d.mirrors)
            .await
            .map_err(|e| format!("{e} (now {:?})", self.list_mirrors_now(d, &self.w)))
    }

    fn expect_mirror_state_record(&self, d: &MirrorStateRecordDef) -> StepResult {
        let (record, design) = mirror_steps::read_record(&self.w, self.cluster(&d.cluster), d)?;
        mirror_steps::check_record(d, record.as_ref(), &design)
    }
}
