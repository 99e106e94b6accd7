//! The coordinator runtime (Kafka: `CoordinatorRuntime`, `TransactionStateManager`,
//! `TransactionMarkerChannelManager`, `RPCProducerIdManager`): hosts the transaction and group
//! coordinators of the internal partitions this broker leads, appends their records with
//! acks=all, answers clients once the HW passes them, sends transaction markers, and hands out
//! producer ids from blocks allocated by the controller.

use std::collections::{BTreeMap, BTreeSet};

use super::broker::{Broker, Pending};
use super::timers::TimerId;
use crate::coordinator::{
    CoordinatorRecord, GroupCoordinator, TxnAction, TxnAppend, TxnCoordinator, TxnDecision,
    TxnReply, build_batch, coordinator_append_error, coordinator_partition,
};
use crate::log::producer_state::AppendOrigin;
use crate::protocol::messages::{CoordinatorKind, CreatableTopic, TxnMarker};
use crate::protocol::{CorrelationId, ErrorCode, NodeId, Request, Response};
use crate::time::Instant;
use crate::types::{BrokerId, LeaderEpoch, Offset, ProducerEpoch, ProducerId, TopicPartition};

/// Internal topic of the transaction coordinator.
pub const TRANSACTION_STATE_TOPIC: &str = "__transaction_state";
/// Internal topic of the group coordinator.
pub const CONSUMER_OFFSETS_TOPIC: &str = "__consumer_offsets";
/// Partitions of each internal coordinator topic in the model (Kafka: 50; small keeps worlds small).
pub const COORDINATOR_TOPIC_PARTITIONS: i32 = 3;

/// How a waiting client must be answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum TxnClient {
    Init,
    AddPartitions(Vec<TopicPartition>),
    EndTxn,
}

/// What completes when a coordinator write is replicated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum CoordWrite {
    Txn {
        partition: i32,
        epoch: LeaderEpoch,
        /// When the append gives up waiting for the HW (`request.timeout.ms`).
        expires_ms: i64,
        transactional_id: String,
    },
    Group {
        partition: i32,
        epoch: LeaderEpoch,
        /// When the append gives up waiting for the HW (`offsets.commit.timeout.ms`).
        expires_ms: i64,
        records: Vec<CoordinatorRecord>,
        client: Option<(NodeId, CorrelationId)>,
        reply: GroupReply,
    },
}

/// The answer owed after a group write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum GroupReply {
    Commit(Vec<(TopicPartition, ErrorCode)>),
    Error(ErrorCode),
    Nothing,
}

/// Coordinators hosted by one broker.
#[derive(Debug, Default)]
pub struct CoordinatorHost {
    pub(super) txn: BTreeMap<i32, TxnCoordinator>,
    pub(super) group: BTreeMap<i32, GroupCoordinator>,
    /// `[next, end)` of the current producer id block.
    pub(super) pid_block: Option<(i64, i64)>,
    pub(super) pid_request_in_flight: bool,
    /// Writes waiting for the HW: `(internal partition, required offset, seq)` → what completes.
    pub(super) writes: BTreeMap<(TopicPartition, Offset, u64), CoordWrite>,
    pub(super) next_write: u64,
    /// Clients waiting on a transactional id's write.
    pub(super) txn_clients: BTreeMap<(i32, String), (NodeId, CorrelationId, TxnClient)>,
    /// Internal topics being created.
    pub(super) creating: bool,
    /// Marker sends to retry later.
    pub(super) deferred: Vec<(i32, TxnAction)>,
    /// Internal partitions with a loaded coordinator, and the leader epoch it was loaded in.
    pub(super) hosted: BTreeMap<TopicPartition, LeaderEpoch>,
}

impl CoordinatorHost {
    /// The hosted transaction coordinator of `partition`.
    #[must_use]
    pub fn txn_coordinator(&self, partition: i32) -> Option<&TxnCoordinator> {
        self.txn.get(&partition)
    }

    /// Every hosted transaction coordinator, by `__transaction_state` partition.
    pub fn txn_coordinators(&self) -> impl Iterator<Item = (i32, &TxnCoordinator)> {
        self.txn.iter().map(|(p, c)| (*p, c))
    }

    /// The hosted group coordinator of `partition`.
    #[must_use]
    pub fn group_coordinator(&self, partition: i32) -> Option<&GroupCoordinator> {
        self.group.get(&partition)
    }
}

fn internal_tp(kind: CoordinatorKind, partition: i32) -> TopicPartition {
    let topic = match kind {
        CoordinatorKind::Transaction => TRANSACTION_STATE_TOPIC,
        _ => CONSUMER_OFFSETS_TOPIC,
    };
    TopicPartition::new(topic, partition)
}

impl Broker {
    /// Routes coordinator requests; returns the request back if it is not one.
    pub(super) fn handle_coordinator_request(
        &mut self,
        from: NodeId,
        id: CorrelationId,
        req: Request,
    ) -> Option<Request> {
        match req {
            Request::FindCoordinator { key, kind } => {
                let r = self.find_coordinator(&key, kind);
                self.respond(from, id, r);
            }
            Request::InitProducerId {
                transactional_id,
                transaction_timeout_ms,
                producer_id,
                producer_epoch,
            } => self.handle_init_producer_id(
                from,
                id,
                transactional_id,
                transaction_timeout_ms,
                producer_id,
                producer_epoch,
            ),
            Request::AddPartitionsToTxn {
                transactional_id,
                producer_id,
                producer_epoch,
                partitions,
            } => self.txn_request(
                from,
                id,
                &transactional_id,
                TxnClient::AddPartitions(partitions.clone()),
                |c, now| {
                    c.handle_add_partitions(
                        now,
                        &transactional_id,
                        producer_id,
                        producer_epoch,
                        &partitions,
                    )
                },
            ),
            Request::EndTxn {
                transactional_id,
                producer_id,
                producer_epoch,
                commit,
            } => self.txn_request(from, id, &transactional_id, TxnClient::EndTxn, |c, now| {
                c.handle_end_txn(now, &transactional_id, producer_id, producer_epoch, commit)
            }),
            Request::OffsetCommit {
                group_id,
                member_id,
                offsets,
            } => self.group_request(from, id, &group_id, |g, now| {
                let (results, records) =
                    g.handle_offset_commit(now, &group_id, member_id.as_deref(), &offsets);
                (GroupReply::Commit(results), records)
            }),
            Request::GroupHeartbeat {
                group_id,
                member_id,
                session_timeout_ms,
            } => self.group_request(from, id, &group_id, |g, now| {
                let (e, records) =
                    g.handle_heartbeat(now, &group_id, &member_id, session_timeout_ms);
                (GroupReply::Error(e), records)
            }),
            Request::LeaveGroup {
                group_id,
                member_id,
            } => self.group_request(from, id, &group_id, |g, _| {
                let (e, records) = g.handle_leave(&group_id, &member_id);
                (GroupReply::Error(e), records)
            }),
            Request::OffsetFetch {
                group_id,
                partitions,
            } => {
                let p = coordinator_partition(&group_id, COORDINATOR_TOPIC_PARTITIONS);
                let resp = match self.coord.group.get(&p) {
                    Some(g) => Response::OffsetFetch {
                        error: ErrorCode::None,
                        offsets: g.handle_offset_fetch(&group_id, partitions.as_deref()),
                    },
                    None => Response::OffsetFetch {
                        error: ErrorCode::NotCoordinator,
                        offsets: BTreeMap::new(),
                    },
                };
                self.respond(from, id, resp);
            }
            other => return Some(other),
        }
        None
    }

    pub(super) fn find_coordinator(&mut self, key: &str, kind: CoordinatorKind) -> Response {
        let topic = match kind {
            CoordinatorKind::Transaction => TRANSACTION_STATE_TOPIC,
            CoordinatorKind::Group => CONSUMER_OFFSETS_TOPIC,
            CoordinatorKind::Mirror => {
                return Response::FindCoordinator {
                    error: ErrorCode::CoordinatorNotAvailable,
                    node: None,
                };
            }
        };
        let tp = TopicPartition::new(
            topic,
            coordinator_partition(key, COORDINATOR_TOPIC_PARTITIONS),
        );
        match self.image.partition(&tp).and_then(|r| r.leader) {
            Some(leader) => Response::FindCoordinator {
                error: ErrorCode::None,
                node: Some(leader),
            },
            None => {
                if self.image.topic_id(topic).is_none() {
                    self.create_internal_topics();
                }
                Response::FindCoordinator {
                    error: ErrorCode::CoordinatorNotAvailable,
                    node: None,
                }
            }
        }
    }

    /// Kafka auto-creates the coordinator topics on first use.
    fn create_internal_topics(&mut self) {
        if self.coord.creating {
            return;
        }
        self.coord.creating = true;
        let live = self
            .image
            .brokers
            .values()
            .filter(|b| !b.fenced)
            .count()
            .max(1);
        // Kafka's defaults (replication factor 3, `transaction.state.log.min.isr` 2) leave a
        // cluster of fewer than 3 brokers without a transaction log at all; the model sizes
        // both to the cluster instead, as a small cluster's operator configures them.
        let rf = live.min(3) as i16;
        let min_isr = if rf >= 3 { "2" } else { "1" };
        // Kafka sets `min.insync.replicas` on the transaction log only
        // (`transactionTopicConfigs`). `__consumer_offsets` takes the cluster default
        // (`groupMetadataTopicConfigs` sets none), and its writer appends with acks 1 anyway.
        let configs = |t: &str| {
            if t == TRANSACTION_STATE_TOPIC {
                [("min.insync.replicas".to_string(), min_isr.to_string())].into()
            } else {
                BTreeMap::new()
            }
        };
        let topics = [TRANSACTION_STATE_TOPIC, CONSUMER_OFFSETS_TOPIC]
            .iter()
            .filter(|t| self.image.topic_id(t).is_none())
            .map(|t| CreatableTopic {
                name: (*t).to_string(),
                num_partitions: COORDINATOR_TOPIC_PARTITIONS,
                replication_factor: rf,
                configs: configs(t),
                topic_id: None,
            })
            .collect();
        let controller = self.controller();
        self.send_request(
            controller,
            Request::CreateTopics { topics },
            Pending::CreateInternalTopics,
            0,
        );
    }

    pub(super) fn on_internal_topics_created(&mut self) {
        self.coord.creating = false;
    }

    // ------------------------------------------------------------------ producer ids

    fn alloc_pid(&mut self) -> Option<ProducerId> {
        let block = &mut self.coord.pid_block;
        let got = match block {
            Some((next, end)) if *next < *end => {
                let id = *next;
                *next += 1;
                Some(ProducerId(id))
            }
            _ => None,
        };
        let low = block.is_none_or(|(n, e)| e - n < 10);
        if low && !self.coord.pid_request_in_flight && self.broker_epoch >= 0 {
            self.coord.pid_request_in_flight = true;
            let req = Request::AllocateProducerIds {
                broker_id: self.config.broker_id,
                broker_epoch: self.broker_epoch,
            };
            let controller = self.controller();
            self.send_request(controller, req, Pending::AllocateProducerIds, 0);
        }
        got
    }

    pub(super) fn on_producer_ids(&mut self, resp: Response) {
        self.coord.pid_request_in_flight = false;
        if let Response::AllocateProducerIds {
            error,
            first_producer_id,
            count,
        } = resp
            && error.is_ok()
        {
            // Kafka's RPCProducerIdManager prefetches; a new block replaces an exhausted one.
            let keep = self.coord.pid_block.filter(|(n, e)| n < e);
            if keep.is_none() {
                self.coord.pid_block = Some((first_producer_id.0, first_producer_id.0 + count));
            }
        }
    }

    fn handle_init_producer_id(
        &mut self,
        from: NodeId,
        id: CorrelationId,
        transactional_id: Option<String>,
        timeout_ms: i64,
        producer_id: ProducerId,
        producer_epoch: ProducerEpoch,
    ) {
        let expected = (producer_id.0 >= 0).then_some((producer_id, producer_epoch));
        let Some(tid) = transactional_id else {
            // Idempotent producers: any broker hands out an id from its block.
            let r = match self.alloc_pid() {
                Some(pid) => Response::InitProducerId {
                    error: ErrorCode::None,
                    producer_id: pid,
                    producer_epoch: ProducerEpoch(0),
                },
                None => Response::InitProducerId {
                    error: ErrorCode::CoordinatorLoadInProgress,
                    producer_id: ProducerId::NONE,
                    producer_epoch: ProducerEpoch::NONE,
                },
            };
            self.respond(from, id, r);
            return;
        };
        // Pre-draw an id so the coordinator's allocation closure does not borrow the broker; an
        // unused one is simply skipped (Kafka's id blocks have gaps too).
        let mut spare = self.alloc_pid();
        let tid2 = tid.clone();
        self.txn_request(from, id, &tid, TxnClient::Init, move |c, now| {
            c.handle_init_producer_id(now, Some(&tid2), timeout_ms, expected, &mut || spare.take())
        });
    }

    fn txn_request(
        &mut self,
        from: NodeId,
        id: CorrelationId,
        transactional_id: &str,
        shape: TxnClient,
        f: impl FnOnce(&mut TxnCoordinator, i64) -> TxnDecision,
    ) {
        let p = coordinator_partition(transactional_id, COORDINATOR_TOPIC_PARTITIONS);
        let now_ms = self.now.as_millis();
        let Some(c) = self.coord.txn.get_mut(&p) else {
            let resp =
                txn_reply_to_response(&shape, error_reply(&shape, ErrorCode::NotCoordinator));
            self.respond(from, id, resp);
            return;
        };
        match f(c, now_ms) {
            TxnDecision::Respond(reply) => {
                let resp = txn_reply_to_response(&shape, reply);
                self.respond(from, id, resp);
            }
            TxnDecision::Append(append) => {
                self.coord
                    .txn_clients
                    .insert((p, transactional_id.to_string()), (from, id, shape));
                self.txn_append(p, append);
            }
        }
    }

    fn txn_append(&mut self, partition: i32, append: TxnAppend) {
        let tp = internal_tp(CoordinatorKind::Transaction, partition);
        let batch = build_batch(&append.records, self.now.as_millis());
        let epoch = self
            .partitions
            .get(&tp)
            .map_or(LeaderEpoch::UNDEFINED, |p| p.leader_epoch);
        // `TransactionStateManager.appendTransactionToLog` appends with acks -1.
        match self.append_leader_acks_all(&tp, &batch, AppendOrigin::Coordinator) {
            Ok(info) => {
                let key = (tp.clone(), info.last_offset.plus(1), self.coord.next_write);
                self.coord.next_write += 1;
                self.coord.writes.insert(
                    key,
                    CoordWrite::Txn {
                        partition,
                        epoch,
                        expires_ms: self.now.as_millis()
                            + append.timeout_ms.unwrap_or(self.config.request_timeout_ms),
                        transactional_id: append.transactional_id,
                    },
                );
                self.complete_coordinator_writes(&tp);
            }
            // Refused before the append (NOT_ENOUGH_REPLICAS, not the leader).
            Err(e) => self.on_txn_write_done(
                partition,
                &append.transactional_id,
                coordinator_append_error(e),
                true,
            ),
        }
    }

    /// The outcome of a transaction-log write. `refused`: it was refused before appending,
    /// inside the append call; a retry of the append it asks for (the completion record's,
    /// on COORDINATOR_NOT_AVAILABLE) then waits for the retry tick, as Kafka's marker channel
    /// re-appends on a later pass of its send thread (`txnLogAppendRetryQueue`), not inside
    /// the failed append's callback (an immediate retry would be refused again, recursively).
    fn on_txn_write_done(
        &mut self,
        partition: i32,
        transactional_id: &str,
        error: ErrorCode,
        refused: bool,
    ) {
        let now_ms = self.now.as_millis();
        let Some(c) = self.coord.txn.get_mut(&partition) else {
            return;
        };
        let actions = c.on_write_complete(now_ms, transactional_id, error);
        let (later, now): (Vec<_>, Vec<_>) = actions
            .into_iter()
            .partition(|a| refused && matches!(a, TxnAction::Append(_)));
        self.run_txn_actions(partition, transactional_id, now);
        self.defer_txn_actions(partition, later);
    }

    /// Carries out a coordinator's follow-up work for `transactional_id` (the id whose write
    /// or markers produced `actions`; a `Respond` answers that id's waiting client).
    fn run_txn_actions(&mut self, partition: i32, transactional_id: &str, actions: Vec<TxnAction>) {
        for a in actions {
            match a {
                TxnAction::Respond(reply) => {
                    self.answer_txn_client(partition, transactional_id, reply)
                }
                TxnAction::Append(append) => self.txn_append(partition, append),
                TxnAction::SendMarkers {
                    transactional_id,
                    marker,
                } => self.send_markers(partition, transactional_id, marker),
            }
        }
    }

    fn answer_txn_client(&mut self, partition: i32, transactional_id: &str, reply: TxnReply) {
        if let Some((from, id, shape)) = self
            .coord
            .txn_clients
            .remove(&(partition, transactional_id.to_string()))
        {
            let resp = txn_reply_to_response(&shape, reply);
            self.respond(from, id, resp);
        }
    }

    fn send_markers(&mut self, partition: i32, transactional_id: String, marker: TxnMarker) {
        let mut by_leader: BTreeMap<BrokerId, Vec<TopicPartition>> = BTreeMap::new();
        let mut results = Vec::new();
        for tp in &marker.partitions {
            match self.image.topic_id(&tp.topic) {
                None => results.push((tp.clone(), ErrorCode::None)), // deleted topic: done (Kafka)
                Some(_) => match self.image.partition(tp).and_then(|r| r.leader) {
                    Some(l) => by_leader.entry(l).or_default().push(tp.clone()),
                    None => results.push((tp.clone(), ErrorCode::NotLeaderOrFollower)),
                },
            }
        }
        for (leader, tps) in by_leader {
            let m = TxnMarker {
                partitions: tps.clone(),
                ..marker.clone()
            };
            let to = self.broker_node(leader);
            self.send_request(
                to,
                Request::WriteTxnMarkers { markers: vec![m] },
                Pending::Markers {
                    partition,
                    transactional_id: transactional_id.clone(),
                    partitions: tps,
                },
                0,
            );
        }
        if !results.is_empty() {
            self.on_markers_result(partition, &transactional_id, results);
        }
    }

    pub(super) fn on_markers_result(
        &mut self,
        partition: i32,
        transactional_id: &str,
        results: Vec<(TopicPartition, ErrorCode)>,
    ) {
        let Some(c) = self.coord.txn.get_mut(&partition) else {
            return;
        };
        let actions = c.on_markers_written(transactional_id, &results);
        let (now, later): (Vec<_>, Vec<_>) = actions
            .into_iter()
            .partition(|a| !matches!(a, TxnAction::SendMarkers { .. }));
        self.run_txn_actions(partition, transactional_id, now);
        self.defer_txn_actions(partition, later);
    }

    /// Runs `actions` at the next coordinator retry tick. Retries back off (Kafka's marker
    /// channel retries with `retry.backoff.ms`).
    fn defer_txn_actions(&mut self, partition: i32, actions: Vec<TxnAction>) {
        if actions.is_empty() {
            return;
        }
        for a in actions {
            self.coord.deferred.push((partition, a));
        }
        let at = self.now.plus_millis(100);
        self.timers.set_if_earlier(TimerId::CoordinatorRetry, at);
    }

    pub(super) fn on_coordinator_retry(&mut self) {
        let deferred = std::mem::take(&mut self.coord.deferred);
        for (p, a) in deferred {
            let tid = match &a {
                TxnAction::SendMarkers {
                    transactional_id, ..
                } => transactional_id.clone(),
                TxnAction::Append(x) => x.transactional_id.clone(),
                TxnAction::Respond(_) => String::new(),
            };
            self.run_txn_actions(p, &tid, vec![a]);
        }
    }

    // ------------------------------------------------------------------ groups

    fn group_request(
        &mut self,
        from: NodeId,
        id: CorrelationId,
        group: &str,
        f: impl FnOnce(&mut GroupCoordinator, i64) -> (GroupReply, Vec<CoordinatorRecord>),
    ) {
        let p = coordinator_partition(group, COORDINATOR_TOPIC_PARTITIONS);
        let now_ms = self.now.as_millis();
        let Some(g) = self.coord.group.get_mut(&p) else {
            self.respond(
                from,
                id,
                group_error_response(
                    &GroupReply::Error(ErrorCode::NotCoordinator),
                    ErrorCode::NotCoordinator,
                ),
            );
            return;
        };
        let (reply, records) = f(g, now_ms);
        if records.is_empty() {
            let resp = group_error_response(&reply, ErrorCode::None);
            self.respond(from, id, resp);
            return;
        }
        self.group_append(p, records, Some((from, id)), reply);
    }

    fn group_append(
        &mut self,
        partition: i32,
        records: Vec<CoordinatorRecord>,
        client: Option<(NodeId, CorrelationId)>,
        reply: GroupReply,
    ) {
        let tp = internal_tp(CoordinatorKind::Group, partition);
        let batch = build_batch(&records, self.now.as_millis());
        let epoch = self
            .partitions
            .get(&tp)
            .map_or(LeaderEpoch::UNDEFINED, |p| p.leader_epoch);
        // `CoordinatorPartitionWriter` appends with acks 1: no min-ISR check.
        match self.append_leader(&tp, &batch, AppendOrigin::Coordinator) {
            Ok(info) => {
                let key = (tp.clone(), info.last_offset.plus(1), self.coord.next_write);
                self.coord.next_write += 1;
                self.coord.writes.insert(
                    key,
                    CoordWrite::Group {
                        partition,
                        epoch,
                        expires_ms: self.now.as_millis() + self.config.offsets_commit_timeout_ms,
                        records,
                        client,
                        reply,
                    },
                );
                self.complete_coordinator_writes(&tp);
            }
            Err(e) => {
                if let Some((from, id)) = client {
                    let resp = group_error_response(&reply, coordinator_append_error(e));
                    self.respond(from, id, resp);
                }
            }
        }
    }

    // ------------------------------------------------------------------ write completion

    /// Completes coordinator writes whose records the HW has passed; fails those whose
    /// partition this broker no longer leads in the write's epoch; answers those that waited
    /// past their timeout (a timed-out group write stays listed, answered, until the HW passes
    /// it or its epoch ends).
    pub(super) fn complete_coordinator_writes(&mut self, tp: &TopicPartition) {
        if !tp.topic.starts_with("__") {
            return;
        }
        let (hw, epoch, leader) = match self.partitions.get(tp) {
            Some(p) => (p.log.high_watermark(), p.leader_epoch, p.is_leader()),
            None => (Offset(-1), LeaderEpoch::UNDEFINED, false),
        };
        let keys: Vec<_> = self
            .coord
            .writes
            .keys()
            .filter(|(t, _, _)| t == tp)
            .cloned()
            .collect();
        let now_ms = self.now.as_millis();
        for key in keys {
            // A transaction write's answer can append and complete writes of this partition
            // (a refused completion's re-append): a key listed above may be gone.
            let Some(w) = self.coord.writes.get(&key) else {
                continue;
            };
            let (w_epoch, expires_ms) = match w {
                CoordWrite::Txn {
                    epoch, expires_ms, ..
                }
                | CoordWrite::Group {
                    epoch, expires_ms, ..
                } => (*epoch, *expires_ms),
            };
            let lost = !leader || w_epoch != epoch;
            let Some(outcome) = write_outcome(lost, now_ms >= expires_ms, hw, key.1) else {
                continue;
            };
            if outcome == ErrorCode::CoordinatorNotAvailable
                && let Some(CoordWrite::Group {
                    client,
                    reply,
                    expires_ms,
                    ..
                }) = self.coord.writes.get_mut(&key)
            {
                // `CoordinatorRuntime` times out only the client's wait: the records stay in
                // the log and in the shard's state (uncommitted; no revert on a timeout), so
                // they take effect once the HW passes them. The model applies group records
                // at commit, so the write stays listed, answered, until then.
                *expires_ms = i64::MAX;
                let answer = client.take();
                let reply = std::mem::replace(reply, GroupReply::Nothing);
                if let Some((from, id)) = answer {
                    let resp = group_error_response(&reply, ErrorCode::CoordinatorNotAvailable);
                    self.respond(from, id, resp);
                }
                continue;
            }
            let w = self.coord.writes.remove(&key).expect("listed");
            // Kafka: the coordinator's append waits a bounded time for the HW (a transaction
            // log write its transaction's timeout, `appendTransactionToLog`'s
            // `newMetadata.txnTimeoutMs`; a group write the group runtime's write timeout,
            // `offsets.commit.timeout.ms`);
            // REQUEST_TIMED_OUT maps to COORDINATOR_NOT_AVAILABLE, the
            // pending state is reset and the client retries. Waiting for ever left EndTxn
            // answered CONCURRENT_TRANSACTIONS for good while a silent follower, still
            // counted as caught up, held the HW back with no further write to recompute it
            // (mirror chaos seed 9149).
            let error = match (outcome, &w) {
                // An acks=-1 produce: past the HW it can still fail with
                // NOT_ENOUGH_REPLICAS_AFTER_APPEND (COORDINATOR_NOT_AVAILABLE to the client).
                // Group writes go through `CoordinatorPartitionWriter` with acks 1.
                (ErrorCode::None, CoordWrite::Txn { .. }) => self
                    .acks_all_reached(tp, key.1)
                    .map_or(ErrorCode::None, |(_, error)| error),
                _ => outcome,
            };
            match w {
                CoordWrite::Txn {
                    partition,
                    transactional_id,
                    ..
                } => self.on_txn_write_done(partition, &transactional_id, error, false),
                CoordWrite::Group {
                    partition,
                    records,
                    client,
                    reply,
                    ..
                } => {
                    if error.is_ok()
                        && let Some(g) = self.coord.group.get_mut(&partition)
                    {
                        for r in &records {
                            let _ = g.replay(&r.key, r.value.as_deref());
                        }
                    }
                    if let Some((from, id)) = client {
                        let resp = group_error_response(&reply, error);
                        self.respond(from, id, resp);
                    }
                }
            }
        }
        self.arm_coordinator_write_timeout();
    }

    /// Gives every pending coordinator write (transaction, group, `__mirror_state`) its
    /// chance to complete, fail or time out.
    pub(super) fn complete_all_coordinator_writes(&mut self) {
        let waiting: BTreeSet<TopicPartition> = self
            .coord
            .writes
            .keys()
            .map(|(tp, _, _)| tp.clone())
            .collect();
        for tp in waiting {
            self.complete_coordinator_writes(&tp);
        }
        if !self.mirror_coord.writes.is_empty() {
            self.complete_mirror_writes();
        }
        self.arm_coordinator_write_timeout();
    }

    /// Sets [`TimerId::CoordinatorWriteTimeout`] to the earliest timeout of a pending write
    /// that is still waiting for its answer, or cancels it when none is. Kafka's
    /// `CoordinatorRuntime` arms a timer task per write (`writeTimeout`), and a transaction
    /// log append is a `DelayedProduce` with its own deadline, so a write that cannot commit
    /// is answered at its timeout, not on the next coordinator tick.
    pub(in crate::broker) fn arm_coordinator_write_timeout(&mut self) {
        let coord = self.coord.writes.values().map(|w| match w {
            CoordWrite::Txn { expires_ms, .. } | CoordWrite::Group { expires_ms, .. } => {
                *expires_ms
            }
        });
        let mirror = self.mirror_coord.writes.values().map(|w| w.expires_ms);
        // A timed-out group write stays listed with `i64::MAX`: nobody waits for it.
        match coord.chain(mirror).filter(|&ms| ms != i64::MAX).min() {
            Some(ms) => self
                .timers
                .set(TimerId::CoordinatorWriteTimeout, Instant::from_millis(ms)),
            None => self.timers.cancel(&TimerId::CoordinatorWriteTimeout),
        }
    }

    /// Leadership of an internal partition changed: load or unload its coordinator.
    pub(super) fn on_coordinator_leadership(&mut self, tp: &TopicPartition) {
        let kind = match tp.topic.as_ref() {
            TRANSACTION_STATE_TOPIC => CoordinatorKind::Transaction,
            CONSUMER_OFFSETS_TOPIC => CoordinatorKind::Group,
            _ => return,
        };
        let partition = tp.partition;
        let now_ms = self.now.as_millis();
        let leading_epoch = self
            .partitions
            .get(tp)
            .filter(|p| p.is_leader())
            .map(|p| p.leader_epoch);
        if leading_epoch.is_some() && self.coord.hosted.get(tp) == leading_epoch.as_ref() {
            return; // same leadership (an ISR-only change): keep the loaded coordinator
        }
        // Unload whatever was hosted; answer its waiting clients NOT_COORDINATOR.
        self.coord.hosted.remove(tp);
        match kind {
            CoordinatorKind::Transaction => {
                self.coord.txn.remove(&partition);
                let waiting: Vec<_> = self
                    .coord
                    .txn_clients
                    .keys()
                    .filter(|(p, _)| *p == partition)
                    .cloned()
                    .collect();
                for k in waiting {
                    if let Some((from, id, shape)) = self.coord.txn_clients.remove(&k) {
                        let resp = txn_reply_to_response(
                            &shape,
                            error_reply(&shape, ErrorCode::NotCoordinator),
                        );
                        self.respond(from, id, resp);
                    }
                }
            }
            _ => {
                self.coord.group.remove(&partition);
            }
        }
        self.complete_coordinator_writes(tp);
        let Some(epoch) = leading_epoch else {
            return;
        };
        self.coord.hosted.insert(tp.clone(), epoch);
        let p = &self.partitions[tp];
        let records: Vec<(bytes::Bytes, Option<bytes::Bytes>)> = p
            .log
            .batches()
            .filter(|b| !b.is_control_batch())
            .flat_map(|b| b.records())
            .filter_map(|r| r.key.map(|k| (k, r.value)))
            .collect();
        match kind {
            CoordinatorKind::Transaction => {
                let mut c = TxnCoordinator::new(epoch.0);
                for (k, v) in &records {
                    let _ = c.replay(k, v.as_deref());
                }
                let actions = c.complete_load(now_ms);
                self.coord.txn.insert(partition, c);
                for a in actions {
                    let tid = match &a {
                        TxnAction::SendMarkers {
                            transactional_id, ..
                        } => transactional_id.clone(),
                        TxnAction::Append(x) => x.transactional_id.clone(),
                        TxnAction::Respond(_) => String::new(),
                    };
                    self.run_txn_actions(partition, &tid, vec![a]);
                }
            }
            _ => {
                let mut g = GroupCoordinator::new();
                for (k, v) in &records {
                    let _ = g.replay(k, v.as_deref());
                }
                g.complete_load(now_ms);
                self.coord.group.insert(partition, g);
            }
        }
    }

    /// Periodic coordinator work: answer writes that waited past their timeout (group and
    /// `__mirror_state` writes stay in the log and take effect if the HW passes them), abort
    /// timed-out transactions, expire group members.
    pub(super) fn on_coordinator_tick(&mut self) {
        self.complete_all_coordinator_writes();
        let now_ms = self.now.as_millis();
        let parts: Vec<i32> = self.coord.txn.keys().copied().collect();
        for p in parts {
            let appends = self
                .coord
                .txn
                .get_mut(&p)
                .map(|c| c.expire_timed_out(now_ms))
                .unwrap_or_default();
            for a in appends {
                self.txn_append(p, a);
            }
        }
        let parts: Vec<i32> = self.coord.group.keys().copied().collect();
        for p in parts {
            let records = self
                .coord
                .group
                .get_mut(&p)
                .map(|g| g.expire_members(now_ms))
                .unwrap_or_default();
            if !records.is_empty() {
                self.group_append(p, records, None, GroupReply::Nothing);
            }
        }
        self.timers
            .set(TimerId::CoordinatorTick, self.now.plus_millis(1_000));
    }
}

/// What a coordinator write waiting for the HW to pass `required` comes to: `None` while
/// it waits; NOT_COORDINATOR once its epoch's leadership is `lost`; COORDINATOR_NOT_AVAILABLE
/// once `timed_out` below the HW (Kafka's REQUEST_TIMED_OUT, as the coordinators map it);
/// NONE once the HW passed it. Shared by the transaction, group and `__mirror_state` writers.
pub(super) fn write_outcome(
    lost: bool,
    timed_out: bool,
    hw: Offset,
    required: Offset,
) -> Option<ErrorCode> {
    if lost {
        Some(ErrorCode::NotCoordinator)
    } else if hw >= required {
        Some(ErrorCode::None)
    } else if timed_out {
        Some(ErrorCode::CoordinatorNotAvailable)
    } else {
        None
    }
}

fn error_reply(shape: &TxnClient, e: ErrorCode) -> TxnReply {
    match shape {
        TxnClient::Init => TxnReply::InitProducerId {
            error: e,
            producer_id: ProducerId::NONE,
            producer_epoch: ProducerEpoch::NONE,
        },
        TxnClient::AddPartitions(_) => TxnReply::AddPartitions(e),
        TxnClient::EndTxn => TxnReply::EndTxn(e),
    }
}

fn txn_reply_to_response(shape: &TxnClient, reply: TxnReply) -> Response {
    match (shape, reply) {
        (
            _,
            TxnReply::InitProducerId {
                error,
                producer_id,
                producer_epoch,
            },
        ) => Response::InitProducerId {
            error,
            producer_id,
            producer_epoch,
        },
        (TxnClient::AddPartitions(tps), TxnReply::AddPartitions(e)) => Response::PartitionErrors {
            results: tps.iter().map(|tp| (tp.clone(), e)).collect(),
        },
        (_, TxnReply::AddPartitions(e) | TxnReply::EndTxn(e)) => Response::Error { error: e },
    }
}

fn group_error_response(reply: &GroupReply, append_error: ErrorCode) -> Response {
    match reply {
        GroupReply::Commit(results) => Response::PartitionErrors {
            results: results
                .iter()
                .map(|(tp, e)| {
                    (
                        tp.clone(),
                        if append_error.is_ok() {
                            *e
                        } else {
                            append_error
                        },
                    )
                })
                .collect(),
        },
        GroupReply::Error(e) => Response::Error {
            error: if append_error.is_ok() {
                *e
            } else {
                append_error
            },
        },
        GroupReply::Nothing => Response::Error {
            error: append_error,
        },
    }
}
