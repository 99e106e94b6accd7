//! Everything the world writes to the trace, as one enum rendered in one place (style §7):
//! node lifecycle, node events, sends (verbose) and faults. Call sites build a
//! [`TraceEvent`]; only [`TraceEvent::render`] turns it into columns.

use std::fmt::Write as _;
use std::time::Duration;

use mirror_core::broker::{Event, Message};
use mirror_core::protocol::{ClusterIdx, CorrelationId, NodeId, NodeRole};

use crate::disk::{CrashPolicy, CrashReport};
use crate::net::{Direction, FaultId, NodeSet};
use crate::trace::{TraceLevel, message};

/// Node column of fault lines.
pub const FAULT_COLUMN: &str = "fault";

/// Human names of clusters and nodes: `src-1`, `src-ctl`, `dst-c3` (client 3).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Names {
    clusters: Vec<String>,
}

impl Names {
    /// Names for clusters `0..`, in order.
    #[must_use]
    pub fn new(clusters: Vec<String>) -> Self {
        Self { clusters }
    }

    /// The name of cluster `c` (`c7` if it was not declared).
    #[must_use]
    pub fn cluster(&self, c: ClusterIdx) -> String {
        self.clusters
            .get(usize::from(c.0))
            .cloned()
            .unwrap_or_else(|| format!("c{}", c.0))
    }

    /// The index of the cluster called `name`.
    #[must_use]
    pub fn cluster_idx(&self, name: &str) -> Option<ClusterIdx> {
        let i = self.clusters.iter().position(|c| c == name)?;
        u16::try_from(i).ok().map(ClusterIdx)
    }

    /// `src-1`, `src-ctl`, `src-c3`.
    #[must_use]
    pub fn node(&self, n: NodeId) -> String {
        let c = self.cluster(n.cluster);
        match n.role {
            NodeRole::Controller => format!("{c}-ctl"),
            NodeRole::Broker(b) => format!("{c}-{}", b.0),
            NodeRole::Client(k) => format!("{c}-c{k}"),
        }
    }

    /// A node set: `src`, `src-1+dst-2`, `¬src-1`.
    #[must_use]
    pub fn set(&self, s: &NodeSet) -> String {
        match s {
            NodeSet::Cluster(c) => self.cluster(*c),
            NodeSet::Nodes(ns) => self.join(ns.iter().copied()),
            NodeSet::AllExcept(ns) => format!("¬{}", self.join(ns.iter().copied())),
        }
    }

    fn join(&self, ns: impl Iterator<Item = NodeId>) -> String {
        ns.map(|n| self.node(n)).collect::<Vec<_>>().join("+")
    }
}

/// One trace event of the world.
#[derive(Clone, Debug, PartialEq)]
pub enum TraceEvent<'a> {
    /// A node incarnation was built from its durable state and started.
    NodeStarted {
        /// The node.
        node: NodeId,
        /// 1 for the first start, +1 per restart.
        incarnation: u64,
        /// Files in the disk image it was built from.
        files: usize,
        /// Durable metadata records it was built from.
        metadata_records: usize,
    },
    /// A node reported a fact.
    Node {
        /// The node.
        node: NodeId,
        /// The fact.
        event: &'a Event,
    },
    /// A node sent a message (verbose). The line is hashed by its header (direction and
    /// correlation id); the message's fields are a detail shown only when the line is kept
    /// ([`TraceEvent::detail`]).
    Send {
        /// Sender.
        from: NodeId,
        /// Receiver.
        to: NodeId,
        /// Correlation id.
        id: CorrelationId,
        /// The message.
        message: &'a Message,
        /// For a response, the API of the request it answers, when known.
        answers: Option<&'static str>,
    },
    /// Fault: a node crashed.
    Crash {
        /// The node.
        node: NodeId,
        /// What its disk kept.
        policy: CrashPolicy,
        /// What its disk lost.
        report: &'a CrashReport,
    },
    /// A node halted itself after a disk error (Kafka's only log dir failing).
    Halt {
        /// The node.
        node: NodeId,
        /// The disk error.
        reason: &'a str,
    },
    /// Fault: a node restarted as a new incarnation.
    Restart {
        /// The node.
        node: NodeId,
        /// The new incarnation.
        incarnation: u64,
    },
    /// Fault: a node stopped being scheduled (a long GC or VM pause).
    Pause {
        /// The node.
        node: NodeId,
    },
    /// Fault end: a paused node runs again.
    Resume {
        /// The node.
        node: NodeId,
    },
    /// Fault: messages between two sides are dropped.
    Partition {
        /// One side.
        a: &'a NodeSet,
        /// Other side.
        b: &'a NodeSet,
        /// Affected directions.
        direction: Direction,
        /// Id for healing.
        id: FaultId,
    },
    /// Fault: one node is cut off from all others.
    Isolate {
        /// The node.
        node: NodeId,
        /// Id for healing.
        id: FaultId,
    },
    /// Fault end: a partition (or isolation) was removed.
    Heal {
        /// One side.
        a: &'a NodeSet,
        /// Other side.
        b: &'a NodeSet,
        /// Its id.
        id: FaultId,
    },
    /// Fault: a directed link stalls.
    Clog {
        /// Sender side.
        from: NodeId,
        /// Receiver side.
        to: NodeId,
    },
    /// Fault end: a stalled link flushes.
    Unclog {
        /// Sender side.
        from: NodeId,
        /// Receiver side.
        to: NodeId,
    },
    /// Fault: extra latency on some links for a while.
    LatencySpike {
        /// One side.
        a: &'a NodeSet,
        /// Other side.
        b: &'a NodeSet,
        /// Affected directions.
        direction: Direction,
        /// Extra latency.
        extra: Duration,
        /// How long it lasts.
        duration: Duration,
    },
    /// Fault: a message loss rate.
    PacketLoss {
        /// Probability in `[0, 1]`.
        rate: f64,
    },
    /// Fault: a disk fills up or frees.
    DiskFull {
        /// The node.
        node: NodeId,
        /// Full or not.
        on: bool,
    },
    /// Fault: the next I/O under a path prefix fails with EIO.
    DiskEio {
        /// The node.
        node: NodeId,
        /// Path prefix (empty = any file).
        prefix: &'a str,
    },
    /// Every link fault, full disk and pause ends (the liveness phase starts).
    HealAll,
    /// A fault that did not apply in the node's current state (e.g. crashing a down node).
    Skipped {
        /// The fault's name.
        fault: &'static str,
        /// The node.
        node: NodeId,
        /// Why.
        why: &'static str,
    },
}

/// A trace event in columns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rendered {
    /// Compact or verbose.
    pub level: TraceLevel,
    /// Node column.
    pub node: String,
    /// Subject column (partition, target node, link).
    pub subject: String,
    /// Free text.
    pub text: String,
}

impl TraceEvent<'_> {
    /// Renders the event with human names.
    #[must_use]
    pub fn render(&self, names: &Names) -> Rendered {
        use TraceEvent as T;
        let fault = |subject: String, text: String| Rendered {
            level: TraceLevel::Compact,
            node: FAULT_COLUMN.to_owned(),
            subject,
            text,
        };
        match self {
            T::NodeStarted {
                node,
                incarnation,
                files,
                metadata_records,
            } => Rendered {
                level: TraceLevel::Compact,
                node: names.node(*node),
                subject: String::new(),
                text: format!("start inc={incarnation} files={files} meta={metadata_records}"),
            },
            T::Node { node, event } => render_node_event(names, *node, event),
            T::Send {
                from,
                to,
                id,
                message,
                ..
            } => Rendered {
                level: TraceLevel::Verbose,
                node: names.node(*from),
                subject: names.node(*to),
                text: match message {
                    Message::Request(_) => format!("→ request id={id}"),
                    Message::Response(_) => format!("→ response id={id}"),
                },
            },
            T::Crash {
                node,
                policy,
                report,
            } => {
                let mut text = format!(
                    "crash {policy:?} lost={}B files={}",
                    report.bytes_lost(),
                    report.files.len()
                );
                if report.any_torn() {
                    text.push_str(" torn");
                }
                fault(names.node(*node), text)
            }
            T::Halt { node, reason } => Rendered {
                level: TraceLevel::Compact,
                node: names.node(*node),
                subject: String::new(),
                text: format!("! halt: {reason}"),
            },
            T::Restart { node, incarnation } => {
                fault(names.node(*node), format!("restart inc={incarnation}"))
            }
            T::Pause { node } => fault(names.node(*node), "pause".into()),
            T::Resume { node } => fault(names.node(*node), "resume".into()),
            T::Partition {
                a,
                b,
                direction,
                id,
            } => {
                let (sa, sb) = (names.set(a), names.set(b));
                let (subject, kind) = match direction {
                    Direction::Both => (format!("{sa}↮{sb}"), "symmetric"),
                    Direction::AtoB => (format!("{sa}↛{sb}"), "one-way"),
                    Direction::BtoA => (format!("{sb}↛{sa}"), "one-way"),
                };
                fault(subject, format!("partition {kind} id={}", id.0))
            }
            T::Isolate { node, id } => fault(names.node(*node), format!("isolate id={}", id.0)),
            T::Heal { a, b, id } => fault(
                format!("{}↔{}", names.set(a), names.set(b)),
                format!("heal id={}", id.0),
            ),
            T::Clog { from, to } => fault(
                format!("{}→{}", names.node(*from), names.node(*to)),
                "clog".into(),
            ),
            T::Unclog { from, to } => fault(
                format!("{}→{}", names.node(*from), names.node(*to)),
                "unclog".into(),
            ),
            T::LatencySpike {
                a,
                b,
                direction,
                extra,
                duration,
            } => fault(
                format!("{}~{}", names.set(a), names.set(b)),
                format!(
                    "latency spike {direction:?} +{}ms for {}ms",
                    extra.as_millis(),
                    duration.as_millis()
                ),
            ),
            T::PacketLoss { rate } => fault(String::new(), format!("packet loss rate={rate:.3}")),
            T::DiskFull { node, on } => fault(
                names.node(*node),
                if *on { "disk full" } else { "disk free" }.into(),
            ),
            T::DiskEio { node, prefix } => fault(
                names.node(*node),
                format!("disk eio next op on '{prefix}*'"),
            ),
            T::HealAll => fault(String::new(), "heal all".into()),
            T::Skipped {
                fault: f,
                node,
                why,
            } => fault(names.node(*node), format!("{f} skipped: {why}")),
        }
    }
}

impl TraceEvent<'_> {
    /// The unhashed detail of the line, formatted only when it is kept: a message's API and
    /// key fields ([`crate::trace::message`]).
    #[must_use]
    pub fn detail(&self) -> Option<String> {
        match self {
            TraceEvent::Send {
                message, answers, ..
            } => Some(message::detail(message, *answers)),
            _ => None,
        }
    }
}

fn list<T: std::fmt::Display>(xs: &[T]) -> String {
    let mut s = String::from("[");
    for (i, x) in xs.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        // Writing into a String cannot fail.
        let _ = write!(s, "{x}");
    }
    s.push(']');
    s
}

fn render_node_event(names: &Names, node: NodeId, event: &Event) -> Rendered {
    let compact = |subject: String, text: String| Rendered {
        level: TraceLevel::Compact,
        node: names.node(node),
        subject,
        text,
    };
    let verbose = |subject: String, text: String| Rendered {
        level: TraceLevel::Verbose,
        node: names.node(node),
        subject,
        text,
    };
    match event {
        Event::Registered { broker_epoch } => compact(
            String::new(),
            format!("registered broker_epoch={broker_epoch}"),
        ),
        Event::LogRecovered {
            tp,
            log_end_offset,
            truncated_bytes,
            ..
        } => compact(
            tp.to_string(),
            format!("recovered leo={log_end_offset} torn_bytes={truncated_bytes}"),
        ),
        Event::CorruptBatchCut {
            tp,
            at,
            truncated_bytes,
        } => compact(
            tp.to_string(),
            format!(
                "recovery cut the log at a corrupt batch: leo={at} cut_bytes={truncated_bytes}"
            ),
        ),
        Event::BecameLeader {
            tp,
            leader_epoch,
            isr,
        } => compact(
            tp.to_string(),
            format!("leader le={leader_epoch} isr={}", list(isr)),
        ),
        Event::BecameFollower {
            tp,
            leader,
            leader_epoch,
        } => compact(
            tp.to_string(),
            match leader {
                Some(l) => format!("follower of {l} le={leader_epoch}"),
                None => format!("follower of none le={leader_epoch}"),
            },
        ),
        Event::Appended {
            tp,
            base_offset,
            last_offset,
            epoch,
            as_leader,
        } => verbose(
            tp.to_string(),
            format!(
                "append {base_offset}..={last_offset} le={epoch} {}",
                if *as_leader { "leader" } else { "replica" }
            ),
        ),
        Event::Truncated {
            tp,
            from,
            to,
            high_watermark_before,
            cause,
        } => compact(
            tp.to_string(),
            format!("! truncate leo {from}→{to} hw={high_watermark_before} cause={cause:?}"),
        ),
        Event::TruncatedFully {
            tp,
            from,
            start,
            cause,
        } => compact(
            tp.to_string(),
            format!("! truncate fully leo {from}→start {start} cause={cause:?}"),
        ),
        Event::HighWatermarkChanged { tp, high_watermark } => {
            verbose(tp.to_string(), format!("hw={high_watermark}"))
        }
        Event::LogStartChanged {
            tp,
            log_start_offset,
        } => compact(tp.to_string(), format!("log start={log_start_offset}")),
        Event::IsrChanged { tp, isr } => compact(tp.to_string(), format!("isr={}", list(isr))),
        Event::Halted { reason } => compact(String::new(), format!("! halt: {reason}")),
        Event::LeaderElected {
            tp,
            leader,
            leader_epoch,
            isr,
            unclean,
        } => compact(
            tp.to_string(),
            format!(
                "elect leader={} le={leader_epoch} isr={}{}",
                leader.map_or_else(|| "none".to_owned(), |l| l.to_string()),
                list(isr),
                if *unclean { " UNCLEAN" } else { "" }
            ),
        ),
        Event::BrokerFencing { broker_id, fenced } => compact(
            format!("broker-{broker_id}"),
            if *fenced { "fenced" } else { "unfenced" }.into(),
        ),
        Event::ProduceAcked {
            tp,
            base_offset,
            values,
            acks,
            transactional,
            ..
        } => verbose(
            tp.to_string(),
            format!(
                "acked {base_offset}+{} acks={acks}{}",
                values.len(),
                if *transactional { " txn" } else { "" }
            ),
        ),
        Event::ProduceFailed { tp, error, .. } => {
            compact(tp.to_string(), format!("produce failed {error}"))
        }
        Event::ProducerStateRefused {
            tp,
            producer_id,
            producer_epoch,
            sequence,
            error,
            ..
        } => compact(
            tp.to_string(),
            format!("produce refused {error} pid={producer_id} pe={producer_epoch} seq={sequence}"),
        ),
        Event::TxnEnded {
            producer_id,
            commit,
            error,
            ..
        } => compact(
            format!("pid-{producer_id}"),
            format!("{} {error}", if *commit { "commit" } else { "abort" }),
        ),
        Event::Consumed { tp, offset, .. } => verbose(tp.to_string(), format!("consumed {offset}")),
        Event::OffsetsCommitted { group, offsets, .. } => verbose(
            group.clone(),
            format!(
                "commit {}",
                offsets
                    .iter()
                    .map(|(tp, o)| format!("{tp}@{o}"))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        ),
        Event::AdminResult {
            operation, error, ..
        } => compact(String::new(), format!("admin {operation}: {error}")),
        Event::MirrorStateChanged {
            tp,
            from,
            to,
            state_epoch,
            leader_epoch,
            reason,
        } => compact(
            tp.to_string(),
            match reason {
                Some(r) => format!("{from}→{to} se={state_epoch} le={leader_epoch} reason={r:?}"),
                None => format!("{from}→{to} se={state_epoch} le={leader_epoch}"),
            },
        ),
        Event::MirrorStateRegressed {
            tp,
            read,
            read_state_epoch,
            confirmed_state_epoch,
            writing,
        } => compact(
            tp.to_string(),
            format!(
                "state regressed: read {} se={read_state_epoch} below STOPPED se={confirmed_state_epoch}, writing {} again",
                read.name(),
                writing.name()
            ),
        ),
        Event::MirrorAligned {
            tp,
            last_mirrored_epoch,
            log_end_offset,
        } => compact(
            tp.to_string(),
            format!("aligned lme={last_mirrored_epoch} leo={log_end_offset}"),
        ),
        Event::MirrorLastMirroredEpoch {
            tp,
            last_mirrored_epoch,
            log_end_offset,
        } => compact(
            tp.to_string(),
            format!("record lme={last_mirrored_epoch} leo={log_end_offset}"),
        ),
        Event::MirrorAppended {
            tp,
            base_offset,
            last_offset,
            epoch,
        } => verbose(
            tp.to_string(),
            format!("mirror append {base_offset}..={last_offset} le={epoch}"),
        ),
        Event::MirrorDiverged {
            tp,
            diverging_epoch,
            end_offset,
            truncate_to,
        } => compact(
            tp.to_string(),
            format!(
                "! mirror diverged epoch={diverging_epoch} end={end_offset} truncate→{truncate_to}"
            ),
        ),
        Event::MirrorEpochBumpRequested {
            tp,
            batch_epoch,
            local_epoch,
            min_leader_epoch,
            proactive,
        } => compact(
            tp.to_string(),
            if batch_epoch.0 < 0 {
                format!("fencing epoch bump: local le={local_epoch} min={min_leader_epoch}")
            } else {
                format!(
                    "{} epoch bump: batch le={batch_epoch} local le={local_epoch} min={min_leader_epoch}",
                    if *proactive { "proactive" } else { "fencing" }
                )
            },
        ),
        Event::MirrorSyncEpochBump {
            tp,
            source_epoch,
            local_epoch,
            min_leader_epoch,
        } => compact(
            tp.to_string(),
            format!(
                "periodic epoch bump: source le={source_epoch} local le={local_epoch} min={min_leader_epoch}"
            ),
        ),
        Event::MirrorRetrySkipped {
            tp,
            target,
            attempt,
        } => compact(
            tp.to_string(),
            format!(
                "! FAILED retry {attempt} skipped: FAILED→{} is not a valid transition",
                target.name()
            ),
        ),
        Event::MirrorLogStartReset { tp, start } => compact(
            tp.to_string(),
            format!("! mirror restart at source log start {start}"),
        ),
        Event::MirrorConfigsSynced {
            mirror,
            topic,
            configs,
            error,
        } => compact(
            topic.clone(),
            format!(
                "mirror {mirror} sync configs {}: {error}",
                configs
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        ),
        Event::MirrorOffsetsSynced {
            mirror,
            group,
            offsets,
            error,
        } => compact(
            group.clone(),
            format!(
                "mirror {mirror} sync offsets {}: {error}",
                offsets
                    .iter()
                    .map(|(tp, o)| format!("{tp}@{o}"))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        ),
        Event::MirrorAclsSynced {
            mirror,
            deleted,
            acls,
            error,
        } => compact(
            mirror.clone(),
            format!(
                "mirror {mirror} sync acls {} {}: {error}",
                if *deleted { "delete" } else { "create" },
                acls.join(",")
            ),
        ),
        Event::MirrorPartitionsSynced {
            mirror,
            topic,
            partitions,
            error,
        } => compact(
            topic.clone(),
            format!("mirror {mirror} sync partitions → {partitions}: {error}"),
        ),
        Event::MirrorReconnected {
            mirror,
            keys,
            partitions,
        } => compact(
            mirror.clone(),
            format!(
                "mirror {mirror} reconnect ({} changed): re-enter MIRRORING {}",
                keys.join(","),
                list(partitions)
            ),
        ),
        Event::MirrorTopicsDiscovered {
            mirror,
            topics,
            error,
        } => compact(
            mirror.clone(),
            format!(
                "mirror {mirror} discovered {}: {error}",
                topic_errors(topics)
            ),
        ),
        Event::MirrorTopicsExcluded {
            mirror,
            topics,
            error,
        } => compact(
            mirror.clone(),
            format!("mirror {mirror} excluded {}: {error}", topic_errors(topics)),
        ),
    }
}

/// `a:NONE,b:INVALID_REQUEST` for per-topic answers.
fn topic_errors(topics: &[(String, mirror_core::protocol::ErrorCode)]) -> String {
    topics
        .iter()
        .map(|(t, e)| format!("{t}:{e}"))
        .collect::<Vec<_>>()
        .join(",")
}
