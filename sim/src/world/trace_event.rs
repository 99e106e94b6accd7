//! Everything the world writes to the trace, as one enum rendered in one place (style §7):
//! node lifecycle, node events, sends (verbose) and faults. Call sites build a
//! [`TraceEvent`]; only [`TraceEvent::render`] turns it into columns.

use std::fmt::Write as _;
use std::time::Duration;

use mirror_core::broker::{Event, Message};
use mirror_core::protocol::{ClusterIdx, CorrelationId, NodeId, NodeRole};

use crate::disk::{CrashPolicy, CrashReport};
use crate::net::{Direction, FaultId, NodeSet};
use crate::trace::format::push_decimal;
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
        let mut out = String::new();
        self.write_node(&mut out, n);
        out
    }

    /// [`Self::node`] appended to `out`.
    pub fn write_node(&self, out: &mut String, n: NodeId) {
        match self.clusters.get(usize::from(n.cluster.0)) {
            Some(c) => out.push_str(c),
            None => {
                out.push('c');
                push_int(out, i64::from(n.cluster.0));
            }
        }
        match n.role {
            NodeRole::Controller => out.push_str("-ctl"),
            NodeRole::Broker(b) => {
                out.push('-');
                push_int(out, i64::from(b.0));
            }
            NodeRole::Client(k) => {
                out.push_str("-c");
                push_int(out, i64::from(k));
            }
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

/// Reusable column buffers: the world renders every event into the same three strings
/// (most events are only hashed, so allocating them per event was pure overhead), and
/// writes a frequent event's hash key into the same bytes ([`TraceEvent::hash_key`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Columns {
    /// A frequent event's hash key.
    pub key: Vec<u8>,
    /// Node column.
    pub node: String,
    /// Subject column.
    pub subject: String,
    /// Free text.
    pub text: String,
}

/// `v` in decimal (what `Display` gives for the integer newtypes of the trace).
fn push_int(out: &mut String, v: i64) {
    if v < 0 {
        out.push('-');
    }
    push_decimal(out, v.unsigned_abs(), 0);
}

/// `orders-0`, as `TopicPartition`'s `Display`.
fn push_tp(out: &mut String, tp: &mirror_core::types::TopicPartition) {
    out.push_str(&tp.topic);
    out.push('-');
    push_int(out, i64::from(tp.partition));
}

impl TraceEvent<'_> {
    /// Renders the event into `out` (cleared first) and returns its level: the form the
    /// world uses for every event. The most frequent events (sends, appends, HW changes,
    /// consumed records, acknowledgements) are written straight into the buffers; the
    /// others go through [`Self::render`]. Both give the same columns.
    pub fn render_into(&self, names: &Names, out: &mut Columns) -> TraceLevel {
        out.node.clear();
        out.subject.clear();
        out.text.clear();
        if let Some(level) = self.render_frequent(names, out) {
            return level;
        }
        let r = self.render(names);
        out.node.push_str(&r.node);
        out.subject.push_str(&r.subject);
        out.text.push_str(&r.text);
        r.level
    }

    /// The frequent events written in place; `None` (nothing written) for the others. The
    /// one definition of their columns: [`Self::render`] uses it too.
    fn render_frequent(&self, names: &Names, out: &mut Columns) -> Option<TraceLevel> {
        match self {
            TraceEvent::Send {
                from,
                to,
                id,
                message,
                ..
            } => {
                names.write_node(&mut out.node, *from);
                names.write_node(&mut out.subject, *to);
                out.text.push_str(match message {
                    Message::Request(_) => "→ request id=",
                    Message::Response(_) => "→ response id=",
                });
                push_decimal(&mut out.text, *id, 0);
                Some(TraceLevel::Verbose)
            }
            TraceEvent::Node { node, event } => {
                let t = &mut out.text;
                let tp = match event {
                    Event::Appended {
                        tp,
                        base_offset,
                        last_offset,
                        epoch,
                        as_leader,
                    } => {
                        t.push_str("append ");
                        push_int(t, base_offset.0);
                        t.push_str("..=");
                        push_int(t, last_offset.0);
                        t.push_str(" le=");
                        push_int(t, i64::from(epoch.0));
                        t.push_str(if *as_leader { " leader" } else { " replica" });
                        tp
                    }
                    Event::HighWatermarkChanged { tp, high_watermark } => {
                        t.push_str("hw=");
                        push_int(t, high_watermark.0);
                        tp
                    }
                    Event::Consumed { tp, offset, .. } => {
                        t.push_str("consumed ");
                        push_int(t, offset.0);
                        tp
                    }
                    Event::MirrorAppended {
                        tp,
                        base_offset,
                        last_offset,
                        epoch,
                    } => {
                        t.push_str("mirror append ");
                        push_int(t, base_offset.0);
                        t.push_str("..=");
                        push_int(t, last_offset.0);
                        t.push_str(" le=");
                        push_int(t, i64::from(epoch.0));
                        tp
                    }
                    Event::ProduceAcked {
                        tp,
                        base_offset,
                        values,
                        acks,
                        transactional,
                        ..
                    } => {
                        t.push_str("acked ");
                        push_int(t, base_offset.0);
                        t.push('+');
                        push_decimal(t, values.len() as u64, 0);
                        t.push_str(" acks=");
                        push_int(t, i64::from(*acks));
                        if *transactional {
                            t.push_str(" txn");
                        }
                        tp
                    }
                    _ => return None,
                };
                names.write_node(&mut out.node, *node);
                push_tp(&mut out.subject, tp);
                Some(TraceLevel::Verbose)
            }
            _ => None,
        }
    }
}

/// `n` in [`TraceEvent::hash_key`]: the cluster (2 bytes), the role (1) and its number (4).
fn key_node(out: &mut Vec<u8>, n: NodeId) {
    out.extend_from_slice(&n.cluster.0.to_le_bytes());
    let (role, number) = match n.role {
        NodeRole::Controller => (0, 0),
        NodeRole::Broker(b) => (1, b.0.cast_unsigned()),
        NodeRole::Client(k) => (2, k),
    };
    out.push(role);
    out.extend_from_slice(&number.to_le_bytes());
}

/// A partition in [`TraceEvent::hash_key`]: the topic's name (not its interned number, which
/// depends on what the process interned before) behind its length, and the partition.
fn key_tp(out: &mut Vec<u8>, tp: &mirror_core::types::TopicPartition) {
    out.extend_from_slice(&(tp.topic.len() as u64).to_le_bytes());
    out.extend_from_slice(tp.topic.as_bytes());
    out.extend_from_slice(&tp.partition.to_le_bytes());
}

/// Little-endian integers, appended.
fn key_ints(out: &mut Vec<u8>, vs: &[i64]) {
    for v in vs {
        out.extend_from_slice(&v.to_le_bytes());
    }
}

impl TraceEvent<'_> {
    /// The frequent events' hash key, written into `out` (cleared first): a tag byte, then
    /// exactly the fields their line shows ([`Self::render_frequent`]), in fixed-width binary.
    /// The trace hashes these events by it ([`crate::trace::TraceSink::event_keyed`]) and
    /// formats their line only when it is kept. `None` for every other event, which is
    /// hashed by its line. A test holds the two lists of events equal.
    pub fn hash_key(&self, out: &mut Vec<u8>) -> Option<TraceLevel> {
        out.clear();
        match self {
            TraceEvent::Send {
                from,
                to,
                id,
                message,
                ..
            } => {
                out.push(match message {
                    Message::Request(_) => 1,
                    Message::Response(_) => 2,
                });
                key_node(out, *from);
                key_node(out, *to);
                out.extend_from_slice(&id.to_le_bytes());
            }
            TraceEvent::Node { node, event } => {
                // The tag, the node and the partition, then the event's own fields.
                let head = |out: &mut Vec<u8>, tag: u8, tp| {
                    out.push(tag);
                    key_node(out, *node);
                    key_tp(out, tp);
                };
                match event {
                    Event::Appended {
                        tp,
                        base_offset,
                        last_offset,
                        epoch,
                        as_leader,
                    } => {
                        head(out, 3, tp);
                        key_ints(out, &[base_offset.0, last_offset.0, i64::from(epoch.0)]);
                        out.push(u8::from(*as_leader));
                    }
                    Event::HighWatermarkChanged { tp, high_watermark } => {
                        head(out, 4, tp);
                        key_ints(out, &[high_watermark.0]);
                    }
                    Event::Consumed { tp, offset, .. } => {
                        head(out, 5, tp);
                        key_ints(out, &[offset.0]);
                    }
                    Event::MirrorAppended {
                        tp,
                        base_offset,
                        last_offset,
                        epoch,
                    } => {
                        head(out, 6, tp);
                        key_ints(out, &[base_offset.0, last_offset.0, i64::from(epoch.0)]);
                    }
                    Event::ProduceAcked {
                        tp,
                        base_offset,
                        values,
                        acks,
                        transactional,
                        ..
                    } => {
                        head(out, 7, tp);
                        key_ints(out, &[base_offset.0, values.len() as i64, i64::from(*acks)]);
                        out.push(u8::from(*transactional));
                    }
                    _ => return None,
                }
            }
            _ => return None,
        }
        Some(TraceLevel::Verbose)
    }
}

impl TraceEvent<'_> {
    /// Renders the event with human names.
    #[must_use]
    pub fn render(&self, names: &Names) -> Rendered {
        use TraceEvent as T;
        let mut frequent = Columns::default();
        if let Some(level) = self.render_frequent(names, &mut frequent) {
            return Rendered {
                level,
                node: frequent.node,
                subject: frequent.subject,
                text: frequent.text,
            };
        }
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
            T::Send { .. } => unreachable!("trace_frequent_events_rendered_in_place: a send"),
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
        // Written by `TraceEvent::render_frequent`, which `render` asks first.
        Event::Appended { .. }
        | Event::HighWatermarkChanged { .. }
        | Event::ProduceAcked { .. }
        | Event::Consumed { .. }
        | Event::MirrorAppended { .. } => {
            unreachable!("trace_frequent_events_rendered_in_place: {event:?}")
        }
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
        Event::FetchPartitionFailed {
            tp,
            leader,
            log_end_offset,
            reason,
        } => compact(
            tp.to_string(),
            format!("! fetch from {leader} failed at leo {log_end_offset}: {reason}"),
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

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use mirror_core::protocol::{Request, Response};
    use mirror_core::types::{BrokerId, LeaderEpoch, Offset, ProducerId, TopicPartition};

    fn columns(ev: &TraceEvent<'_>, names: &Names) -> (TraceLevel, String, String, String) {
        let mut out = Columns::default();
        out.text.push_str("left over from the previous event");
        let level = ev.render_into(names, &mut out);
        (level, out.node, out.subject, out.text)
    }

    #[test]
    fn frequent_events_render_in_place_as_display_formats_them() {
        // Goal: the hand-written columns of the frequent events are the ones `format!` of
        // their fields gives (the trace hash covers them), for negative and large numbers too.
        let names = Names::new(vec!["src".into(), "dst".into()]);
        let broker = NodeId::broker(ClusterIdx(1), BrokerId(3));
        let client = NodeId {
            cluster: ClusterIdx(0),
            role: NodeRole::Client(12),
        };
        let tp = TopicPartition::new("orders", 7);
        let node_ev = |event: &Event| {
            let (level, node, subject, text) = columns(
                &TraceEvent::Node {
                    node: broker,
                    event,
                },
                &names,
            );
            assert_eq!(
                (level, node.as_str(), subject.as_str()),
                (TraceLevel::Verbose, "dst-3", "orders-7")
            );
            text
        };
        for (base, last, epoch, as_leader) in [(0, 9, 0, true), (-1, i64::MAX, i32::MIN, false)] {
            let text = node_ev(&Event::Appended {
                tp: tp.clone(),
                base_offset: Offset(base),
                last_offset: Offset(last),
                epoch: LeaderEpoch(epoch),
                as_leader,
            });
            let role = if as_leader { "leader" } else { "replica" };
            assert_eq!(text, format!("append {base}..={last} le={epoch} {role}"));
            let text = node_ev(&Event::MirrorAppended {
                tp: tp.clone(),
                base_offset: Offset(base),
                last_offset: Offset(last),
                epoch: LeaderEpoch(epoch),
            });
            assert_eq!(text, format!("mirror append {base}..={last} le={epoch}"));
        }
        let text = node_ev(&Event::HighWatermarkChanged {
            tp: tp.clone(),
            high_watermark: Offset(i64::MIN),
        });
        assert_eq!(text, format!("hw={}", i64::MIN));
        let text = node_ev(&Event::Consumed {
            client: 12,
            tp: tp.clone(),
            offset: Offset(1234),
            value: Bytes::from_static(b"v"),
            read_committed: false,
        });
        assert_eq!(text, "consumed 1234");
        for (transactional, acks) in [(false, -1), (true, 1)] {
            let text = node_ev(&Event::ProduceAcked {
                client: 12,
                tp: tp.clone(),
                base_offset: Offset(40),
                values: vec![Bytes::from_static(b"a"); 3],
                acks,
                producer_id: ProducerId(5),
                transactional,
            });
            let txn = if transactional { " txn" } else { "" };
            assert_eq!(text, format!("acked 40+3 acks={acks}{txn}"));
        }
        let request = Message::Request(Request::FindCoordinator {
            key: "g".into(),
            kind: mirror_core::protocol::messages::CoordinatorKind::Group,
        });
        let response = Message::Response(Response::Error {
            error: mirror_core::protocol::ErrorCode::None,
        });
        for (message, arrow) in [(&request, "→ request"), (&response, "→ response")] {
            let id = u64::MAX;
            let send = TraceEvent::Send {
                from: client,
                to: NodeId {
                    cluster: ClusterIdx(9),
                    role: NodeRole::Controller,
                },
                id,
                message,
                answers: None,
            };
            assert_eq!(
                columns(&send, &names),
                (
                    TraceLevel::Verbose,
                    "src-c12".to_string(),
                    "c9-ctl".to_string(),
                    format!("{arrow} id={id}")
                )
            );
            let r = send.render(&names);
            assert_eq!(
                (r.node.as_str(), r.text),
                ("src-c12", format!("{arrow} id={id}"))
            );
        }
    }

    #[test]
    fn a_frequent_events_hash_key_tells_apart_exactly_what_its_line_does() {
        // Goal: hashing the frequent events by their fields (round 8 under Speed) loses
        // nothing the line-hash saw and adds nothing it did not: over events that differ in
        // one field at a time, two keys are equal exactly when the two lines are. Events that
        // are not frequent have no key, and are hashed by their line.
        let names = Names::new(vec!["src".into(), "dst".into()]);
        let brokers = [
            NodeId::broker(ClusterIdx(1), BrokerId(3)),
            NodeId::broker(ClusterIdx(0), BrokerId(3)),
            NodeId::broker(ClusterIdx(1), BrokerId(4)),
        ];
        let tps = [
            TopicPartition::new("orders", 7),
            TopicPartition::new("orders", 8),
            TopicPartition::new("order", 7),
        ];
        let mut events: Vec<Event> = Vec::new();
        for tp in &tps {
            for (base, last, epoch, as_leader) in [
                (0, 9, 0, true),
                (1, 9, 0, true),
                (0, 8, 0, true),
                (0, 9, 1, true),
                (0, 9, 0, false),
            ] {
                events.push(Event::Appended {
                    tp: tp.clone(),
                    base_offset: Offset(base),
                    last_offset: Offset(last),
                    epoch: LeaderEpoch(epoch),
                    as_leader,
                });
                events.push(Event::MirrorAppended {
                    tp: tp.clone(),
                    base_offset: Offset(base),
                    last_offset: Offset(last),
                    epoch: LeaderEpoch(epoch),
                });
            }
            for hw in [9, 10] {
                events.push(Event::HighWatermarkChanged {
                    tp: tp.clone(),
                    high_watermark: Offset(hw),
                });
            }
            for (offset, value) in [(9, "v"), (10, "v"), (9, "w")] {
                events.push(Event::Consumed {
                    client: 12,
                    tp: tp.clone(),
                    offset: Offset(offset),
                    value: Bytes::from(value),
                    read_committed: false,
                });
            }
            for (base, n, acks, transactional, pid) in [
                (40, 3, -1, false, 5),
                (41, 3, -1, false, 5),
                (40, 2, -1, false, 5),
                (40, 3, 1, false, 5),
                (40, 3, -1, true, 5),
                (40, 3, -1, false, 6),
            ] {
                events.push(Event::ProduceAcked {
                    client: 12,
                    tp: tp.clone(),
                    base_offset: Offset(base),
                    values: vec![Bytes::from_static(b"a"); n],
                    acks,
                    producer_id: ProducerId(pid),
                    transactional,
                });
            }
        }
        let request = Message::Request(Request::FindCoordinator {
            key: "g".into(),
            kind: mirror_core::protocol::messages::CoordinatorKind::Group,
        });
        let response = Message::Response(Response::Error {
            error: mirror_core::protocol::ErrorCode::None,
        });
        let mut all: Vec<TraceEvent<'_>> = Vec::new();
        for node in brokers {
            all.extend(events.iter().map(|event| TraceEvent::Node { node, event }));
            for to in brokers {
                for message in [&request, &response] {
                    for id in [1, 2] {
                        all.push(TraceEvent::Send {
                            from: node,
                            to,
                            id,
                            message,
                            answers: None,
                        });
                    }
                }
            }
        }
        let keyed: Vec<_> = all
            .iter()
            .map(|ev| {
                let mut key = vec![0xAA];
                let level = ev.hash_key(&mut key).expect("a frequent event has a key");
                let line = columns(ev, &names);
                assert_eq!(level, line.0, "{ev:?}");
                (key, line)
            })
            .collect();
        for (i, (ka, la)) in keyed.iter().enumerate() {
            for (kb, lb) in &keyed[i + 1..] {
                assert_eq!(ka == kb, la == lb, "{la:?} / {lb:?}");
            }
        }
        let restart = TraceEvent::Restart {
            node: brokers[0],
            incarnation: 3,
        };
        let rare = Event::BecameFollower {
            tp: tps[0].clone(),
            leader_epoch: LeaderEpoch(1),
            leader: Some(BrokerId(1)),
        };
        for ev in [
            restart,
            TraceEvent::Node {
                node: brokers[0],
                event: &rare,
            },
        ] {
            assert_eq!(ev.hash_key(&mut Vec::new()), None, "{ev:?}");
            assert!(
                ev.render_frequent(&names, &mut Columns::default())
                    .is_none()
            );
        }
    }

    #[test]
    fn other_events_render_into_the_same_columns_as_render() {
        // Goal: the buffers are cleared and filled with `render`'s columns for the rest.
        let names = Names::new(vec!["src".into()]);
        let ev = TraceEvent::Restart {
            node: NodeId::broker(ClusterIdx(0), BrokerId(2)),
            incarnation: 3,
        };
        let r = ev.render(&names);
        assert_eq!(columns(&ev, &names), (r.level, r.node, r.subject, r.text));
    }
}
