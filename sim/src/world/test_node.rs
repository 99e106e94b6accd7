//! `PingNode`: a small sans-I/O node that proves the world's machinery before the real
//! broker and controller exist. Every `interval_ms` it appends an 8-byte entry (its index,
//! big-endian) to `ping/ping.log`, flushes every `flush_every` entries, pings its peers,
//! optionally persists a metadata record, and reports each append as an event. On start it
//! recovers the log from the disk image, cutting a torn tail as Kafka's log loader does.

use std::collections::{BTreeMap, VecDeque};

use bytes::Bytes;
use mirror_core::broker::recovery::{RecoveryInputs, RecoveryRecord, RecoveryScan};
use mirror_core::broker::{Event, IoOp, Message, Node, Output};
use mirror_core::log::partition_log::{LogConfig, PartitionLog};
use mirror_core::protocol::metadata::MetadataRecord;
use mirror_core::protocol::{CorrelationId, ErrorCode, NodeId, Request, Response};
use mirror_core::time::Instant;
use mirror_core::types::{BrokerId, LeaderEpoch, Offset, TopicPartition};

use super::node::Boot;

/// The log file.
pub const PING_LOG: &str = "ping/ping.log";
/// Bytes per log entry.
const ENTRY: u64 = 8;

/// How a ping node behaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PingConfig {
    /// Nodes pinged on every tick.
    pub peers: Vec<NodeId>,
    /// Tick period.
    pub interval_ms: i64,
    /// Flush the log every this many entries (0 = never).
    pub flush_every: u64,
    /// Emit one `PersistMetadata` per tick (as a controller would).
    pub persist_metadata: bool,
}

/// The test node.
#[derive(Debug)]
pub struct PingNode {
    id: NodeId,
    config: PingConfig,
    incarnation: u64,
    next_tick: Instant,
    next_correlation: CorrelationId,
    ticks: u64,
    entries: u64,
    recovered_entries: u64,
    recovered_torn_bytes: u64,
    recovered_metadata: usize,
    next_metadata_offset: i64,
    pings: BTreeMap<NodeId, u64>,
    pongs: u64,
    handled_at: Vec<Instant>,
    out: VecDeque<Output>,
}

impl PingNode {
    /// Builds an incarnation from its durable state.
    #[must_use]
    pub fn new(config: PingConfig, boot: &Boot) -> Self {
        let image = boot.disk_image.get(PING_LOG).cloned().unwrap_or_default();
        let len = image.len() as u64;
        let entries = len / ENTRY;
        let torn = len % ENTRY;
        let mut out = VecDeque::new();
        if torn > 0 {
            out.push_back(Output::Io(IoOp::Truncate {
                path: PING_LOG.into(),
                len: entries * ENTRY,
            }));
            out.push_back(Output::Io(IoOp::Flush {
                path: PING_LOG.into(),
            }));
        }
        out.push_back(Output::Event(Event::LogRecovered {
            tp: tp(),
            log_end_offset: Offset(i64::try_from(entries).unwrap_or(i64::MAX)),
            truncated_bytes: torn,
            record: std::sync::Arc::new(RecoveryRecord {
                inputs: RecoveryInputs {
                    scan: RecoveryScan::Unclean {
                        recovery_point: Offset(0),
                    },
                    log_start_checkpoint: None,
                    hw_checkpoint: None,
                },
                log: PartitionLog::new(LogConfig::default()),
            }),
        }));
        let consistent = image
            .chunks_exact(8)
            .enumerate()
            .all(|(i, c)| u64::from_be_bytes(c.try_into().unwrap_or_default()) == i as u64);
        assert!(
            consistent,
            "ping_log_prefix: {} recovered a corrupt log",
            boot.name
        );
        Self {
            id: boot.id,
            next_tick: boot.now.plus_millis(config.interval_ms),
            config,
            incarnation: boot.incarnation,
            next_correlation: 0,
            ticks: 0,
            entries,
            recovered_entries: entries,
            recovered_torn_bytes: torn,
            recovered_metadata: boot.metadata.len(),
            next_metadata_offset: boot.metadata.last().map_or(0, |(o, _)| o + 1),
            pings: BTreeMap::new(),
            pongs: 0,
            handled_at: Vec::new(),
            out,
        }
    }

    /// Ticks of this incarnation.
    #[must_use]
    pub fn ticks(&self) -> u64 {
        self.ticks
    }

    /// Log entries (recovered plus appended).
    #[must_use]
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// Entries found on disk at start.
    #[must_use]
    pub fn recovered_entries(&self) -> u64 {
        self.recovered_entries
    }

    /// Torn bytes cut at start.
    #[must_use]
    pub fn recovered_torn_bytes(&self) -> u64 {
        self.recovered_torn_bytes
    }

    /// Metadata records found at start.
    #[must_use]
    pub fn recovered_metadata(&self) -> usize {
        self.recovered_metadata
    }

    /// The incarnation this state belongs to.
    #[must_use]
    pub fn incarnation(&self) -> u64 {
        self.incarnation
    }

    /// Pings received from `peer`.
    #[must_use]
    pub fn pings_from(&self, peer: NodeId) -> u64 {
        self.pings.get(&peer).copied().unwrap_or(0)
    }

    /// Pings received in all.
    #[must_use]
    pub fn pings(&self) -> u64 {
        self.pings.values().sum()
    }

    /// Responses received.
    #[must_use]
    pub fn pongs(&self) -> u64 {
        self.pongs
    }

    /// When each message was handled.
    #[must_use]
    pub fn handled_at(&self) -> &[Instant] {
        &self.handled_at
    }

    fn tick(&mut self, now: Instant) {
        self.ticks += 1;
        let offset = self.entries;
        self.entries += 1;
        self.out.push_back(Output::Io(IoOp::Append {
            path: PING_LOG.into(),
            bytes: Bytes::copy_from_slice(&offset.to_be_bytes()),
        }));
        let o = Offset(i64::try_from(offset).unwrap_or(i64::MAX));
        self.out.push_back(Output::Event(Event::Appended {
            tp: tp(),
            base_offset: o,
            last_offset: o,
            epoch: LeaderEpoch(i32::try_from(self.incarnation).unwrap_or(i32::MAX)),
            as_leader: true,
        }));
        if self.config.flush_every > 0 && self.entries.is_multiple_of(self.config.flush_every) {
            self.out.push_back(Output::Io(IoOp::Flush {
                path: PING_LOG.into(),
            }));
        }
        for &peer in &self.config.peers {
            self.next_correlation += 1;
            self.out.push_back(Output::Send {
                to: peer,
                id: self.next_correlation,
                message: Message::Request(Request::BrokerHeartbeat {
                    broker_id: self.id.broker_id().unwrap_or(BrokerId(-1)),
                    broker_epoch: i64::try_from(self.incarnation).unwrap_or(i64::MAX),
                    metadata_offset: o.0,
                    want_fence: false,
                }),
            });
        }
        if self.config.persist_metadata {
            let offset = self.next_metadata_offset;
            self.next_metadata_offset += 1;
            self.out.push_back(Output::PersistMetadata {
                offset,
                record: MetadataRecord::RegisterBroker {
                    broker_id: BrokerId(1),
                    broker_epoch: offset,
                },
            });
        }
        self.next_tick = now.plus_millis(self.config.interval_ms);
    }
}

fn tp() -> TopicPartition {
    TopicPartition::new("ping", 0)
}

impl Node for PingNode {
    fn handle_message(&mut self, now: Instant, from: NodeId, id: CorrelationId, message: Message) {
        self.handled_at.push(now);
        match message {
            Message::Request(_) => {
                *self.pings.entry(from).or_default() += 1;
                self.out.push_back(Output::Send {
                    to: from,
                    id,
                    message: Message::Response(Response::BrokerHeartbeat {
                        error: ErrorCode::None,
                        is_fenced: false,
                    }),
                });
            }
            Message::Response(_) => self.pongs += 1,
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        if now >= self.next_tick {
            self.tick(now);
        }
    }

    fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        Some(self.next_tick)
    }
}
