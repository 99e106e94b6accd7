use super::*;
use crate::coordinator::records::CoordinatorKey;

fn tp(t: &str, p: i32) -> TopicPartition {
    TopicPartition::new(t, p)
}

const T: &str = "txn-1";
const TIMEOUT: i64 = 60_000;

/// A minimal runtime: commits every append (or fails it on request), keeps the committed
/// records as the partition log, collects replies and markers.
struct Harness {
    c: TxnCoordinator,
    log: Vec<CoordinatorRecord>,
    next_pid: i64,
    now: i64,
    replies: Vec<TxnReply>,
    markers: Vec<(String, TxnMarker)>,
}

impl Harness {
    fn new() -> Self {
        Self {
            c: TxnCoordinator::new(5),
            log: Vec::new(),
            next_pid: 1000,
            now: 0,
            replies: Vec::new(),
            markers: Vec::new(),
        }
    }

    fn alloc_block(&mut self) -> impl FnMut() -> Option<ProducerId> + use<> {
        let mut next = self.next_pid;
        self.next_pid += 100; // each call gets its own range; determinism is all we need
        move || {
            next += 1;
            Some(ProducerId(next))
        }
    }

    fn init_raw(
        &mut self,
        tid: &str,
        expected: Option<(ProducerId, ProducerEpoch)>,
    ) -> TxnDecision {
        let mut alloc = self.alloc_block();
        self.c
            .handle_init_producer_id(self.now, Some(tid), TIMEOUT, expected, &mut alloc)
    }

    /// Runs a decision to quiescence (all writes succeed); markers are collected, not acked.
    fn drive(&mut self, d: TxnDecision) {
        match d {
            TxnDecision::Respond(r) => self.replies.push(r),
            TxnDecision::Append(a) => self.commit(a),
        }
    }

    fn commit(&mut self, a: TxnAppend) {
        self.log.extend(a.records.iter().cloned());
        let actions = self
            .c
            .on_write_complete(self.now, &a.transactional_id, ErrorCode::None);
        self.run(actions);
    }

    fn run(&mut self, actions: Vec<TxnAction>) {
        for act in actions {
            match act {
                TxnAction::Respond(r) => self.replies.push(r),
                TxnAction::Append(a) => self.commit(a),
                TxnAction::SendMarkers {
                    transactional_id,
                    marker,
                } => self.markers.push((transactional_id, marker)),
            }
        }
    }

    fn ack_all_markers(&mut self) {
        while let Some((tid, m)) = self.markers.pop() {
            let results: Vec<_> = m
                .partitions
                .iter()
                .map(|p| (p.clone(), ErrorCode::None))
                .collect();
            let actions = self.c.on_markers_written(&tid, &results);
            self.run(actions);
        }
    }

    fn last_reply(&mut self) -> TxnReply {
        self.replies.pop().expect("a reply")
    }

    fn init(&mut self, tid: &str) -> (ProducerId, ProducerEpoch) {
        let d = self.init_raw(tid, None);
        self.drive(d);
        match self.last_reply() {
            TxnReply::InitProducerId {
                error: ErrorCode::None,
                producer_id,
                producer_epoch,
            } => (producer_id, producer_epoch),
            other => panic!("init failed: {other:?}"),
        }
    }

    fn add(
        &mut self,
        tid: &str,
        (pid, e): (ProducerId, ProducerEpoch),
        parts: &[TopicPartition],
    ) -> ErrorCode {
        let d = self.c.handle_add_partitions(self.now, tid, pid, e, parts);
        self.drive(d);
        match self.last_reply() {
            TxnReply::AddPartitions(err) => err,
            other => panic!("unexpected {other:?}"),
        }
    }

    fn end(&mut self, tid: &str, (pid, e): (ProducerId, ProducerEpoch), commit: bool) -> ErrorCode {
        let d = self.c.handle_end_txn(self.now, tid, pid, e, commit);
        self.drive(d);
        match self.last_reply() {
            TxnReply::EndTxn(err) => err,
            other => panic!("unexpected {other:?}"),
        }
    }

    fn state(&self, tid: &str) -> TxnState {
        self.c.state(tid).expect("txn").state
    }

    /// A fresh coordinator loaded from the committed log.
    fn reloaded(&self, epoch: i32) -> TxnCoordinator {
        let mut c = TxnCoordinator::new(epoch);
        for r in &self.log {
            c.replay(&r.key, r.value.as_deref()).expect("replay");
        }
        c
    }
}

fn persisted(c: &TxnCoordinator) -> Vec<(String, TxnLogValue)> {
    c.transactions()
        .map(|m| (m.transactional_id.clone(), m.to_log_value()))
        .collect()
}

#[test]
fn idempotent_producer_gets_fresh_id_and_no_state() {
    // Goal: no transactional id -> alloc() with epoch 0; nothing written, nothing kept.
    let mut c = TxnCoordinator::new(0);
    let mut n = 7;
    let mut alloc = || {
        n += 1;
        Some(ProducerId(n))
    };
    let d = c.handle_init_producer_id(0, None, TIMEOUT, None, &mut alloc);
    assert_eq!(
        d,
        TxnDecision::Respond(TxnReply::InitProducerId {
            error: ErrorCode::None,
            producer_id: ProducerId(8),
            producer_epoch: ProducerEpoch(0)
        })
    );
    assert_eq!(c.transactions().count(), 0);
    let d = c.handle_init_producer_id(0, None, TIMEOUT, None, &mut || None);
    assert_eq!(
        d,
        TxnDecision::Respond(TxnReply::init_error(ErrorCode::CoordinatorLoadInProgress))
    );
}

#[test]
fn init_validates_id_and_timeout_and_allocation() {
    // Goal: Kafka's up-front InitProducerId errors.
    let mut c = TxnCoordinator::new(0);
    let mut alloc = || Some(ProducerId(1));
    let r = |d| match d {
        TxnDecision::Respond(TxnReply::InitProducerId { error, .. }) => error,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        r(c.handle_init_producer_id(0, Some(""), TIMEOUT, None, &mut alloc)),
        ErrorCode::InvalidRequest
    );
    assert_eq!(
        r(c.handle_init_producer_id(0, Some(T), 0, None, &mut alloc)),
        ErrorCode::InvalidTransactionTimeout
    );
    assert_eq!(
        r(c.handle_init_producer_id(0, Some(T), 900_001, None, &mut alloc)),
        ErrorCode::InvalidTransactionTimeout
    );
    assert_eq!(
        r(c.handle_init_producer_id(0, Some(T), TIMEOUT, None, &mut || None)),
        ErrorCode::CoordinatorLoadInProgress
    );
    assert!(c.state(T).is_none(), "no metadata without a producer id");
}

#[test]
fn new_transactional_id_gets_epoch_zero_after_the_write() {
    // Goal: Empty with epoch 0 once the record commits; pending until then.
    let mut h = Harness::new();
    let d = h.init_raw(T, None);
    let TxnDecision::Append(a) = d else { panic!() };
    let m = h.c.state(T).unwrap();
    assert_eq!(
        m.producer_epoch,
        ProducerEpoch::NONE,
        "not current before the write"
    );
    assert_eq!(m.pending_state(), Some(TxnState::Empty));
    // a concurrent request waits
    let d2 = h.init_raw(T, None);
    assert_eq!(
        d2,
        TxnDecision::Respond(TxnReply::init_error(ErrorCode::ConcurrentTransactions))
    );
    h.commit(a);
    let TxnReply::InitProducerId {
        error,
        producer_id,
        producer_epoch,
    } = h.last_reply()
    else {
        panic!()
    };
    assert_eq!((error, producer_epoch), (ErrorCode::None, ProducerEpoch(0)));
    let m = h.c.state(T).unwrap();
    assert_eq!(
        (m.producer_id, m.producer_epoch, m.state),
        (producer_id, ProducerEpoch(0), TxnState::Empty)
    );
    assert_eq!(m.pending_state(), None);
    assert_eq!(m.timeout_ms, 60_000);
}

#[test]
fn reinit_bumps_the_epoch_and_keeps_the_id() {
    // Goal: a second producer instance fences the first by epoch.
    let mut h = Harness::new();
    let (pid, e0) = h.init(T);
    let (pid2, e1) = h.init(T);
    assert_eq!(pid, pid2);
    assert_eq!(e1, ProducerEpoch(e0.0 + 1));
    assert_eq!(
        h.add(T, (pid, e0), &[tp("a", 0)]),
        ErrorCode::ProducerFenced
    );
    assert_eq!(h.end(T, (pid, e0), true), ErrorCode::ProducerFenced);
}

#[test]
fn commit_flow_walks_every_state() {
    // Goal: Empty -> Ongoing -> PrepareCommit -> (markers) -> CompleteCommit, answering EndTxn
    // after the PREPARE write and before the markers, as Kafka does.
    let mut h = Harness::new();
    h.now = 100;
    let id = h.init(T);
    h.now = 200;
    assert_eq!(h.add(T, id, &[tp("a", 0), tp("b", 1)]), ErrorCode::None);
    let m = h.c.state(T).unwrap();
    assert_eq!(
        (m.state, m.start_ms, m.partitions.len()),
        (TxnState::Ongoing, 200, 2)
    );
    // subset: answered at once without a write
    let before = h.log.len();
    assert_eq!(h.add(T, id, &[tp("a", 0)]), ErrorCode::None);
    assert_eq!(h.log.len(), before);
    // a new partition extends the txn, start time unchanged
    h.now = 250;
    assert_eq!(h.add(T, id, &[tp("c", 0)]), ErrorCode::None);
    assert_eq!(h.c.state(T).unwrap().start_ms, 200);

    h.now = 300;
    assert_eq!(h.end(T, id, true), ErrorCode::None);
    assert_eq!(h.state(T), TxnState::PrepareCommit);
    assert_eq!(
        h.c.state(T).unwrap().pending_state(),
        Some(TxnState::CompleteCommit)
    );
    assert_eq!(h.markers.len(), 1);
    let (_, m) = h.markers[0].clone();
    assert_eq!(
        m,
        TxnMarker {
            producer_id: id.0,
            producer_epoch: id.1,
            commit: true,
            coordinator_epoch: 5,
            partitions: vec![tp("a", 0), tp("b", 1), tp("c", 0)],
        }
    );
    // while markers are out: retries of the same decision wait, the opposite is refused
    // (the pending completion answers CONCURRENT_TRANSACTIONS first, as in Kafka)
    assert_eq!(h.end(T, id, true), ErrorCode::ConcurrentTransactions);
    assert_eq!(
        h.init_raw(T, None),
        TxnDecision::Respond(TxnReply::init_error(ErrorCode::ConcurrentTransactions))
    );
    assert_eq!(
        h.add(T, id, &[tp("d", 0)]),
        ErrorCode::ConcurrentTransactions
    );

    // partial acks: one ok, one retriable -> resend only that one
    h.markers.clear();
    let acts = h.c.on_markers_written(
        T,
        &[
            (tp("a", 0), ErrorCode::None),
            (tp("b", 1), ErrorCode::NotLeaderOrFollower),
        ],
    );
    let [TxnAction::SendMarkers { marker, .. }] = acts.as_slice() else {
        panic!("{acts:?}")
    };
    assert_eq!(marker.partitions, vec![tp("b", 1)]);
    assert_eq!(h.state(T), TxnState::PrepareCommit);
    // the rest acked -> COMPLETE_COMMIT appended
    h.now = 400;
    let acts = h.c.on_markers_written(
        T,
        &[(tp("b", 1), ErrorCode::None), (tp("c", 0), ErrorCode::None)],
    );
    let [TxnAction::Append(a)] = acts.as_slice() else {
        panic!("{acts:?}")
    };
    h.commit(a.clone());
    let m = h.c.state(T).unwrap();
    assert_eq!(m.state, TxnState::CompleteCommit);
    assert!(m.partitions.is_empty());
    assert_eq!(m.pending_state(), None);
    assert!(h.replies.is_empty(), "no extra replies: {:?}", h.replies);
    // EndTxn retry after completion: same decision ok, opposite invalid
    assert_eq!(h.end(T, id, true), ErrorCode::None);
    assert_eq!(h.end(T, id, false), ErrorCode::InvalidTxnState);
    // stale marker results are ignored
    assert!(
        h.c.on_markers_written(T, &[(tp("a", 0), ErrorCode::None)])
            .is_empty()
    );
    // a new transaction starts from CompleteCommit with a fresh start time
    h.now = 500;
    assert_eq!(h.add(T, id, &[tp("a", 0)]), ErrorCode::None);
    assert_eq!(h.c.state(T).unwrap().start_ms, 500);
}

#[test]
fn abort_flow_and_invalid_end_states() {
    // Goal: abort mirrors commit; EndTxn from Empty is INVALID_TXN_STATE (TV1).
    let mut h = Harness::new();
    let id = h.init(T);
    assert_eq!(h.end(T, id, true), ErrorCode::InvalidTxnState);
    assert_eq!(h.end(T, id, false), ErrorCode::InvalidTxnState);
    h.add(T, id, &[tp("a", 0)]);
    assert_eq!(h.end(T, id, false), ErrorCode::None);
    assert_eq!(h.state(T), TxnState::PrepareAbort);
    assert!(!h.markers[0].1.commit);
    h.ack_all_markers();
    assert_eq!(h.state(T), TxnState::CompleteAbort);
    assert_eq!(h.end(T, id, false), ErrorCode::None);
    assert_eq!(h.end(T, id, true), ErrorCode::InvalidTxnState);
}

#[test]
fn prepare_state_without_pending_answers_like_kafka() {
    // Goal: after a reload in PrepareCommit (before complete_load), the state rules apply:
    // same decision -> CONCURRENT_TRANSACTIONS, opposite -> INVALID_TXN_STATE.
    let mut h = Harness::new();
    let id = h.init(T);
    h.add(T, id, &[tp("a", 0)]);
    h.end(T, id, true);
    let mut c = h.reloaded(6);
    assert_eq!(
        c.handle_end_txn(0, T, id.0, id.1, true),
        TxnDecision::Respond(TxnReply::EndTxn(ErrorCode::ConcurrentTransactions))
    );
    assert_eq!(
        c.handle_end_txn(0, T, id.0, id.1, false),
        TxnDecision::Respond(TxnReply::EndTxn(ErrorCode::InvalidTxnState))
    );
    assert_eq!(
        c.handle_add_partitions(0, T, id.0, id.1, &[tp("a", 0)]),
        TxnDecision::Respond(TxnReply::AddPartitions(ErrorCode::ConcurrentTransactions))
    );
}

#[test]
fn fencing_errors() {
    // Goal: unknown id / wrong pid -> INVALID_PRODUCER_ID_MAPPING, stale epoch -> PRODUCER_FENCED.
    let mut h = Harness::new();
    let (pid, e) = h.init(T);
    assert_eq!(
        h.add("other", (pid, e), &[tp("a", 0)]),
        ErrorCode::InvalidProducerIdMapping
    );
    assert_eq!(
        h.end("other", (pid, e), true),
        ErrorCode::InvalidProducerIdMapping
    );
    assert_eq!(
        h.add(T, (ProducerId(pid.0 + 1), e), &[tp("a", 0)]),
        ErrorCode::InvalidProducerIdMapping
    );
    assert_eq!(
        h.end(T, (ProducerId(pid.0 + 1), e), true),
        ErrorCode::InvalidProducerIdMapping
    );
    assert_eq!(
        h.add(T, (pid, ProducerEpoch(e.0 + 1)), &[tp("a", 0)]),
        ErrorCode::ProducerFenced
    );
    assert_eq!(
        h.add("", (pid, e), &[tp("a", 0)]),
        ErrorCode::InvalidRequest
    );
    assert_eq!(h.end("", (pid, e), true), ErrorCode::InvalidRequest);
}

#[test]
fn init_on_ongoing_txn_fences_aborts_then_bumps_again() {
    // Goal: Kafka's PrepareEpochFence: bump, PREPARE_ABORT, markers with the bumped epoch,
    // CONCURRENT_TRANSACTIONS to the new instance; its retry bumps once more.
    let mut h = Harness::new();
    let old = h.init(T);
    h.add(T, old, &[tp("a", 0)]);
    let d = h.init_raw(T, None);
    let TxnDecision::Append(a) = d else { panic!() };
    // the in-memory epoch is bumped before the write: the old producer is fenced at once
    assert_eq!(
        h.c.state(T).unwrap().producer_epoch,
        ProducerEpoch(old.1.0 + 1)
    );
    assert_eq!(h.end(T, old, true), ErrorCode::ProducerFenced);
    h.commit(a);
    assert_eq!(
        h.last_reply(),
        TxnReply::init_error(ErrorCode::ConcurrentTransactions)
    );
    assert_eq!(h.state(T), TxnState::PrepareAbort);
    let (_, m) = h.markers[0].clone();
    assert!(!m.commit);
    assert_eq!(m.producer_epoch, ProducerEpoch(old.1.0 + 1));
    // retry while markers are out
    assert_eq!(
        h.init_raw(T, None),
        TxnDecision::Respond(TxnReply::init_error(ErrorCode::ConcurrentTransactions))
    );
    h.ack_all_markers();
    assert_eq!(h.state(T), TxnState::CompleteAbort);
    let new = h.init(T);
    assert_eq!(new, (old.0, ProducerEpoch(old.1.0 + 2)));
    assert_eq!(h.state(T), TxnState::Empty);
}

#[test]
fn failed_fence_write_does_not_bump_twice() {
    // Goal: hasFailedEpochFence: a failed PREPARE_ABORT keeps the bumped epoch; the next fence
    // reuses it rather than bumping again.
    let mut h = Harness::new();
    let old = h.init(T);
    h.add(T, old, &[tp("a", 0)]);
    let TxnDecision::Append(_) = h.init_raw(T, None) else {
        panic!()
    };
    let acts = h.c.on_write_complete(0, T, ErrorCode::NotEnoughReplicas);
    assert_eq!(
        acts,
        vec![TxnAction::Respond(TxnReply::init_error(
            ErrorCode::CoordinatorNotAvailable
        ))]
    );
    let m = h.c.state(T).unwrap();
    assert_eq!(
        (m.state, m.producer_epoch),
        (TxnState::Ongoing, ProducerEpoch(old.1.0 + 1))
    );
    let TxnDecision::Append(a) = h.init_raw(T, None) else {
        panic!()
    };
    assert_eq!(
        h.c.state(T).unwrap().producer_epoch,
        ProducerEpoch(old.1.0 + 1)
    );
    h.commit(a);
    h.ack_all_markers();
    assert_eq!(h.state(T), TxnState::CompleteAbort);
    assert_eq!(
        h.c.state(T).unwrap().producer_epoch,
        ProducerEpoch(old.1.0 + 1)
    );
}

#[test]
fn timeout_aborts_with_an_epoch_bump() {
    // Goal: abortTimedOutTransactions: start + timeout < now -> fence + abort, nobody answered.
    let mut h = Harness::new();
    let id = h.init(T);
    h.now = 1_000;
    h.add(T, id, &[tp("a", 0), tp("b", 0)]);
    assert!(
        h.c.expire_timed_out(1_000 + TIMEOUT).is_empty(),
        "not strictly past"
    );
    h.now = 1_001 + TIMEOUT;
    let appends = h.c.expire_timed_out(h.now);
    assert_eq!(appends.len(), 1);
    assert!(h.c.expire_timed_out(h.now).is_empty(), "pending: not twice");
    h.commit(appends[0].clone());
    assert!(h.replies.is_empty());
    assert_eq!(h.state(T), TxnState::PrepareAbort);
    assert_eq!(h.markers[0].1.producer_epoch, ProducerEpoch(id.1.0 + 1));
    h.ack_all_markers();
    assert_eq!(h.state(T), TxnState::CompleteAbort);
    // the timed-out producer is fenced
    assert_eq!(h.end(T, id, true), ErrorCode::ProducerFenced);
    assert_eq!(h.add(T, id, &[tp("a", 0)]), ErrorCode::ProducerFenced);
    // only Ongoing transactions time out
    assert!(h.c.expire_timed_out(i64::MAX).is_empty());
}

#[test]
fn write_failures_answer_mapped_errors_and_change_nothing() {
    // Goal: a failed append drops the pending transition and answers Kafka's mapped error.
    let mut h = Harness::new();
    let id = h.init(T);
    let TxnDecision::Append(_) = h.c.handle_add_partitions(0, T, id.0, id.1, &[tp("a", 0)]) else {
        panic!()
    };
    let acts = h.c.on_write_complete(0, T, ErrorCode::NotLeaderOrFollower);
    assert_eq!(
        acts,
        vec![TxnAction::Respond(TxnReply::AddPartitions(
            ErrorCode::NotCoordinator
        ))]
    );
    assert_eq!(h.state(T), TxnState::Empty);
    assert_eq!(h.c.state(T).unwrap().pending_state(), None);
    assert_eq!(h.add(T, id, &[tp("a", 0)]), ErrorCode::None);
    let TxnDecision::Append(_) = h.c.handle_end_txn(0, T, id.0, id.1, true) else {
        panic!()
    };
    let acts = h.c.on_write_complete(0, T, ErrorCode::RequestTimedOut);
    assert_eq!(
        acts,
        vec![TxnAction::Respond(TxnReply::EndTxn(
            ErrorCode::CoordinatorNotAvailable
        ))]
    );
    assert_eq!(h.state(T), TxnState::Ongoing);
}

#[test]
fn failed_init_write_for_new_id_keeps_the_allocated_id() {
    // Goal: Kafka caches new metadata before the write; the retry reuses its producer id.
    let mut h = Harness::new();
    let TxnDecision::Append(_) = h.init_raw(T, None) else {
        panic!()
    };
    let pid = h.c.state(T).unwrap().producer_id;
    let acts =
        h.c.on_write_complete(0, T, ErrorCode::NotEnoughReplicasAfterAppend);
    assert_eq!(
        acts,
        vec![TxnAction::Respond(TxnReply::init_error(
            ErrorCode::CoordinatorNotAvailable
        ))]
    );
    assert_eq!(h.init(T), (pid, ProducerEpoch(0)));
}

#[test]
fn complete_write_failure_retries_or_gives_up() {
    // Goal: the COMPLETE append is retried on COORDINATOR_NOT_AVAILABLE, dropped on
    // NOT_COORDINATOR (the next coordinator resumes it from Prepare*).
    let mut h = Harness::new();
    let id = h.init(T);
    h.add(T, id, &[tp("a", 0)]);
    h.end(T, id, true);
    let acts = h.c.on_markers_written(T, &[(tp("a", 0), ErrorCode::None)]);
    let [TxnAction::Append(a)] = acts.as_slice() else {
        panic!()
    };
    let acts = h.c.on_write_complete(0, T, ErrorCode::NotEnoughReplicas);
    assert_eq!(acts, vec![TxnAction::Append(a.clone())]);
    let acts = h.c.on_write_complete(0, T, ErrorCode::NotLeaderOrFollower);
    assert!(acts.is_empty());
    assert_eq!(h.state(T), TxnState::PrepareCommit);
    assert_eq!(h.c.state(T).unwrap().pending_state(), None);
}

#[test]
fn fenced_marker_stops_sending() {
    // Goal: INVALID_PRODUCER_EPOCH / TRANSACTION_COORDINATOR_FENCED mean a stale coordinator.
    let mut h = Harness::new();
    let id = h.init(T);
    h.add(T, id, &[tp("a", 0), tp("b", 0)]);
    h.end(T, id, true);
    let acts =
        h.c.on_markers_written(T, &[(tp("a", 0), ErrorCode::TransactionCoordinatorFenced)]);
    assert!(acts.is_empty());
    assert!(
        h.c.on_markers_written(T, &[(tp("b", 0), ErrorCode::None)])
            .is_empty()
    );
    assert_eq!(h.state(T), TxnState::PrepareCommit);
}

#[test]
fn empty_transaction_completes_without_markers() {
    // Goal: an Ongoing txn with no partitions (AddPartitions with an empty list) commits with
    // no markers: PREPARE then COMPLETE directly.
    let mut h = Harness::new();
    let id = h.init(T);
    assert_eq!(h.add(T, id, &[]), ErrorCode::None);
    assert_eq!(h.state(T), TxnState::Ongoing);
    assert_eq!(h.end(T, id, true), ErrorCode::None);
    assert!(h.markers.is_empty());
    assert_eq!(h.state(T), TxnState::CompleteCommit);
}

#[test]
fn kip360_expected_epoch_rules() {
    // Goal: InitProducerId with the producer's current (pid, epoch): bump and remember the last
    // epoch; a retry naming that last epoch gets the same epoch; anything else is fenced.
    let mut h = Harness::new();
    let (pid, e0) = h.init(T);
    let d = h.init_raw(T, Some((pid, e0)));
    h.drive(d);
    let TxnReply::InitProducerId {
        error,
        producer_epoch: e1,
        ..
    } = h.last_reply()
    else {
        panic!()
    };
    assert_eq!((error, e1), (ErrorCode::None, ProducerEpoch(e0.0 + 1)));
    assert_eq!(h.c.state(T).unwrap().last_producer_epoch, e0);
    // retry of the same call (answer lost): same epoch, no bump
    let d = h.init_raw(T, Some((pid, e0)));
    h.drive(d);
    let TxnReply::InitProducerId { producer_epoch, .. } = h.last_reply() else {
        panic!()
    };
    assert_eq!(producer_epoch, e1);
    // an unknown epoch or producer id is fenced
    let d = h.init_raw(T, Some((pid, ProducerEpoch(40))));
    assert_eq!(
        d,
        TxnDecision::Respond(TxnReply::init_error(ErrorCode::ProducerFenced))
    );
    let d = h.init_raw(T, Some((ProducerId(9), e1)));
    assert_eq!(
        d,
        TxnDecision::Respond(TxnReply::init_error(ErrorCode::ProducerFenced))
    );
    // a plain InitProducerId clears the last epoch
    h.init(T);
    assert_eq!(
        h.c.state(T).unwrap().last_producer_epoch,
        ProducerEpoch::NONE
    );
}

#[test]
fn epoch_exhaustion_rotates_the_producer_id() {
    // Goal: at epoch >= Short.MAX_VALUE - 1 InitProducerId allocates a new id with epoch 0 and
    // remembers the old one; a retry with (old id, exhausted epoch) is still valid.
    let mut h = Harness::new();
    let (pid, _) = h.init(T);
    // Load a state at the exhausted epoch through the log, as a long-lived id would have.
    let v = TxnLogValue {
        producer_epoch: ProducerEpoch(i16::MAX - 1),
        ..h.c.state(T).unwrap().to_log_value()
    };
    let mut c = TxnCoordinator::new(1);
    let key = TxnLogKey {
        transactional_id: T.into(),
    }
    .encode();
    c.replay(&key, Some(&v.encode())).unwrap();
    h.c = c;
    let d = h.init_raw(T, Some((pid, ProducerEpoch(i16::MAX - 1))));
    h.drive(d);
    let TxnReply::InitProducerId {
        error,
        producer_id,
        producer_epoch,
    } = h.last_reply()
    else {
        panic!()
    };
    assert_eq!(error, ErrorCode::None);
    assert_ne!(producer_id, pid);
    assert_eq!(producer_epoch, ProducerEpoch(0));
    let m = h.c.state(T).unwrap();
    assert_eq!(
        (m.last_producer_id, m.last_producer_epoch),
        (pid, ProducerEpoch(i16::MAX - 1))
    );
    // retry with the old id and its exhausted epoch: valid (not fenced), and the expected epoch
    // is the last epoch, so the current epoch comes back unchanged
    let d = h.init_raw(T, Some((pid, ProducerEpoch(i16::MAX - 1))));
    h.drive(d);
    assert_eq!(
        h.last_reply(),
        TxnReply::InitProducerId {
            error: ErrorCode::None,
            producer_id,
            producer_epoch: ProducerEpoch(0)
        }
    );
}

#[test]
fn load_resumes_markers_of_prepared_transactions() {
    // Goal: a new coordinator (higher epoch) finishes a PREPARE_COMMIT it loaded.
    let mut h = Harness::new();
    let id = h.init(T);
    h.add(T, id, &[tp("a", 0)]);
    h.end(T, id, true);
    let other = h.init("txn-2");
    h.add("txn-2", other, &[tp("b", 0)]);
    let mut c = h.reloaded(9);
    let acts = c.complete_load(5_000);
    assert_eq!(acts.len(), 1);
    let TxnAction::SendMarkers {
        transactional_id,
        marker,
    } = &acts[0]
    else {
        panic!()
    };
    assert_eq!(transactional_id, T);
    assert_eq!((marker.coordinator_epoch, marker.commit), (9, true));
    assert_eq!(marker.partitions, vec![tp("a", 0)]);
    let acts = c.on_markers_written(T, &[(tp("a", 0), ErrorCode::None)]);
    let [TxnAction::Append(_)] = acts.as_slice() else {
        panic!()
    };
    assert!(c.on_write_complete(5_000, T, ErrorCode::None).is_empty());
    assert_eq!(c.state(T).unwrap().state, TxnState::CompleteCommit);
    assert_eq!(c.state("txn-2").unwrap().state, TxnState::Ongoing);
}

#[test]
fn replay_gives_the_same_state_as_live_handling() {
    // Goal: the log is the truth: loading every committed record rebuilds the live metadata.
    let mut h = Harness::new();
    let a = h.init("a");
    let b = h.init("b");
    let c_id = h.init("c");
    h.now = 10;
    h.add("a", a, &[tp("x", 0)]);
    h.add("b", b, &[tp("y", 1), tp("y", 2)]);
    h.add("c", c_id, &[tp("z", 0)]);
    h.end("a", a, true);
    h.end("b", b, false);
    h.ack_all_markers();
    let d = h.init_raw("c", None); // fence c's ongoing txn
    h.drive(d);
    h.ack_all_markers();
    h.init("c");
    let d = h.init_raw("a", Some((a.0, a.1)));
    h.drive(d);
    let d = h.init_raw("d", None);
    h.drive(d);
    let d = h.c.handle_add_partitions(
        20,
        "d",
        h.c.state("d").unwrap().producer_id,
        ProducerEpoch(0),
        &[tp("w", 0)],
    );
    h.drive(d);
    h.c.check_invariants();
    let reloaded = h.reloaded(6);
    assert_eq!(persisted(&reloaded), persisted(&h.c));
    for m in reloaded.transactions() {
        assert_eq!(m.pending_state(), None);
    }
}

#[test]
fn transactional_id_expiration_writes_a_tombstone() {
    // Goal: idle ids in Empty/Complete* are removed via a tombstone; replay removes them too.
    let mut h = Harness::new();
    h.now = 0;
    let id = h.init(T);
    h.add(T, id, &[tp("a", 0)]);
    h.init("idle");
    let exp = TxnCoordinatorConfig::default().transactional_id_expiration_ms;
    h.now = exp;
    let appends = h.c.expire_transactional_ids(h.now);
    assert_eq!(
        appends.len(),
        1,
        "only the idle Empty id; the Ongoing one stays"
    );
    assert_eq!(appends[0].transactional_id, "idle");
    assert_eq!(appends[0].records[0].value, None);
    assert_eq!(
        h.init_raw("idle", None),
        TxnDecision::Respond(TxnReply::init_error(ErrorCode::ConcurrentTransactions))
    );
    h.commit(appends[0].clone());
    assert!(h.c.state("idle").is_none());
    let reloaded = h.reloaded(2);
    assert!(reloaded.state("idle").is_none());
    assert_eq!(persisted(&reloaded), persisted(&h.c));
    // a new InitProducerId starts over with a new producer id
    let (pid, e) = h.init("idle");
    assert_eq!(e, ProducerEpoch(0));
    assert!(pid.is_some());
}

#[test]
fn replay_rejects_foreign_and_garbage_records() {
    // Goal: typed errors, no state change.
    let mut c = TxnCoordinator::new(0);
    let k = crate::coordinator::records::GroupMetadataKey { group: "g".into() }.encode();
    assert_eq!(
        c.replay(&k, None),
        Err(RecordError::UnexpectedKeyType { got: 2 })
    );
    let tk = TxnLogKey {
        transactional_id: T.into(),
    }
    .encode();
    assert!(c.replay(&tk, Some(&[0, 0, 1])).is_err());
    assert!(matches!(
        CoordinatorKey::decode(&tk),
        Ok(CoordinatorKey::Txn(_))
    ));
    assert_eq!(c.transactions().count(), 0);
}

#[test]
fn read_only_mirror_partition_drops_its_marker() {
    // Goal: a partition that became a KIP-1279 mirror destination (failback) answers
    // WriteTxnMarkers with READ_ONLY_TOPIC; the coordinator drops it from the pending markers
    // (not retried forever) and completes the transaction with the other partitions.
    let mut h = Harness::new();
    h.now = 100;
    let id = h.init(T);
    h.now = 200;
    assert_eq!(h.add(T, id, &[tp("a", 0), tp("b", 0)]), ErrorCode::None);
    h.now = 300;
    assert_eq!(h.end(T, id, false), ErrorCode::None);
    assert_eq!(h.state(T), TxnState::PrepareAbort);
    let acts =
        h.c.on_markers_written(T, &[(tp("a", 0), ErrorCode::ReadOnlyTopic)]);
    assert!(
        acts.is_empty(),
        "no resend to the mirror partition: {acts:?}"
    );
    let acts = h.c.on_markers_written(T, &[(tp("b", 0), ErrorCode::None)]);
    let [TxnAction::Append(a)] = acts.as_slice() else {
        panic!("{acts:?}")
    };
    h.commit(a.clone());
    assert_eq!(h.state(T), TxnState::CompleteAbort);
}
