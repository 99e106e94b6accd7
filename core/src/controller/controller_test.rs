//! The controller node driven through [`Node`]: requests in, records, events and responses
//! out, after Kafka's `QuorumControllerTest`, `ReplicationControlManagerTest`,
//! `ClusterControlManagerTest`, `BrokerHeartbeatManagerTest` and
//! `ProducerIdControlManagerTest`.

use std::collections::BTreeMap;

use super::*;
use crate::broker::{Event, Message, Node, Output};
use crate::protocol::messages::CreatableTopic;
use crate::protocol::metadata::{ConfigResource, MetadataRecord};
use crate::protocol::{ClusterIdx, ErrorCode, NodeId, Request, Response};
use crate::time::Instant;
use crate::types::{BrokerId, LeaderEpoch, ProducerId, TopicId, TopicPartition};

const C0: ClusterIdx = ClusterIdx(0);

fn at(ms: i64) -> Instant {
    Instant::from_millis(ms)
}

fn bid(ids: &[i32]) -> Vec<BrokerId> {
    ids.iter().copied().map(BrokerId).collect()
}

fn tp(topic: &str, p: i32) -> TopicPartition {
    TopicPartition::new(topic, p)
}

/// A controller plus a correlation counter; every call drains the outputs.
struct Harness {
    c: Controller,
    next_id: u64,
}

impl Harness {
    fn new() -> Self {
        Self::with(ControllerConfig::new(C0))
    }

    fn with(config: ControllerConfig) -> Self {
        Self {
            c: Controller::new(config, Vec::new()),
            next_id: 0,
        }
    }

    fn drain(&mut self) -> Vec<Output> {
        std::iter::from_fn(|| self.c.poll_output()).collect()
    }

    /// Sends `req` from `from` and returns every output.
    fn send_from(&mut self, now: Instant, from: NodeId, req: Request) -> Vec<Output> {
        self.next_id += 1;
        self.c
            .handle_message(now, from, self.next_id, Message::Request(req));
        self.drain()
    }

    /// Sends `req` from client 0 and returns the one response plus every output.
    fn call(&mut self, now: Instant, req: Request) -> (Response, Vec<Output>) {
        let outs = self.send_from(now, NodeId::client(C0, 0), req);
        (response_to(&outs, NodeId::client(C0, 0)), outs)
    }

    fn call_as(&mut self, now: Instant, broker: i32, req: Request) -> (Response, Vec<Output>) {
        let from = NodeId::broker(C0, BrokerId(broker));
        let outs = self.send_from(now, from, req);
        (response_to(&outs, from), outs)
    }

    fn timeout(&mut self, now: Instant) -> Vec<Output> {
        self.c.handle_timeout(now);
        self.drain()
    }

    /// Registers `broker` (incarnation = id) and unfences it; returns the broker epoch.
    fn join(&mut self, now: Instant, broker: i32) -> i64 {
        let (r, _) = self.call_as(
            now,
            broker,
            Request::RegisterBroker {
                broker_id: BrokerId(broker),
                incarnation: u64::try_from(broker).expect("id"),
            },
        );
        let Response::RegisterBroker {
            error: ErrorCode::None,
            broker_epoch,
        } = r
        else {
            panic!("registration failed: {r:?}");
        };
        let (r, _) = self.heartbeat(now, broker, broker_epoch, false);
        assert_eq!(
            r,
            Response::BrokerHeartbeat {
                error: ErrorCode::None,
                is_fenced: false
            }
        );
        broker_epoch
    }

    fn heartbeat(
        &mut self,
        now: Instant,
        broker: i32,
        epoch: i64,
        want_fence: bool,
    ) -> (Response, Vec<Output>) {
        let end = self.c.metadata_log().len() as i64;
        self.call_as(
            now,
            broker,
            Request::BrokerHeartbeat {
                broker_id: BrokerId(broker),
                broker_epoch: epoch,
                metadata_offset: end - 1,
                want_fence,
            },
        )
    }

    fn create(
        &mut self,
        now: Instant,
        name: &str,
        partitions: i32,
        rf: i16,
    ) -> (Response, Vec<Output>) {
        self.create_with(now, topic(name, partitions, rf))
    }

    fn create_with(&mut self, now: Instant, t: CreatableTopic) -> (Response, Vec<Output>) {
        self.call(now, Request::CreateTopics { topics: vec![t] })
    }

    fn partition(&self, t: &str, p: i32) -> crate::protocol::metadata::PartitionRegistration {
        self.c
            .image()
            .partition(&tp(t, p))
            .cloned()
            .expect("partition")
    }
}

fn topic(name: &str, partitions: i32, rf: i16) -> CreatableTopic {
    CreatableTopic {
        name: name.to_string(),
        num_partitions: partitions,
        replication_factor: rf,
        configs: BTreeMap::new(),
        topic_id: None,
    }
}

fn response_to(outs: &[Output], to: NodeId) -> Response {
    let mut found = outs.iter().filter_map(|o| match o {
        Output::Send {
            to: t,
            message: Message::Response(r),
            ..
        } if *t == to => Some(r.clone()),
        _ => None,
    });
    let r = found.next().expect("a response");
    assert!(found.next().is_none(), "exactly one response");
    r
}

fn persisted(outs: &[Output]) -> Vec<(i64, MetadataRecord)> {
    outs.iter()
        .filter_map(|o| match o {
            Output::PersistMetadata { offset, record } => Some((*offset, record.clone())),
            _ => None,
        })
        .collect()
}

fn events(outs: &[Output]) -> Vec<Event> {
    outs.iter()
        .filter_map(|o| match o {
            Output::Event(e) => Some(e.clone()),
            _ => None,
        })
        .collect()
}

/// Three unfenced brokers 1..=3 at t=0, with their broker epochs.
fn three_brokers() -> (Harness, [i64; 3]) {
    let mut h = Harness::new();
    let epochs = [h.join(at(0), 1), h.join(at(0), 2), h.join(at(0), 3)];
    (h, epochs)
}

#[test]
fn registration_appends_a_record_whose_offset_is_the_epoch_and_starts_fenced() {
    // Kafka: ClusterControlManagerTest.testRegistrationWithIncorrectClusterId's happy path;
    // QuorumController uses the record offset as the broker epoch.
    let mut h = Harness::new();
    let (r, outs) = h.call_as(
        at(0),
        1,
        Request::RegisterBroker {
            broker_id: BrokerId(1),
            incarnation: 7,
        },
    );
    assert_eq!(
        r,
        Response::RegisterBroker {
            error: ErrorCode::None,
            broker_epoch: 0
        }
    );
    assert_eq!(
        persisted(&outs),
        vec![(
            0,
            MetadataRecord::RegisterBroker {
                broker_id: BrokerId(1),
                broker_epoch: 0
            }
        )]
    );
    // Persist precedes the response.
    assert!(matches!(outs[0], Output::PersistMetadata { .. }));
    assert!(matches!(outs.last(), Some(Output::Send { .. })));
    assert!(!h.c.image().is_broker_active(BrokerId(1)));
    assert_eq!(h.c.image().broker_epoch(BrokerId(1)), Some(0));
}

#[test]
fn heartbeat_unfences_only_once_caught_up_to_the_registration() {
    // Kafka: BrokerHeartbeatManagerTest.testCalculateNextBrokerState.
    let mut h = Harness::new();
    h.join(at(0), 2); // offsets 0, 1
    let (r, _) = h.call_as(
        at(0),
        1,
        Request::RegisterBroker {
            broker_id: BrokerId(1),
            incarnation: 1,
        },
    );
    let Response::RegisterBroker { broker_epoch, .. } = r else {
        panic!("{r:?}")
    };
    assert_eq!(broker_epoch, 2);
    let hb = |offset, want_fence| Request::BrokerHeartbeat {
        broker_id: BrokerId(1),
        broker_epoch,
        metadata_offset: offset,
        want_fence,
    };
    let (r, outs) = h.call_as(at(10), 1, hb(1, false));
    assert_eq!(
        r,
        Response::BrokerHeartbeat {
            error: ErrorCode::None,
            is_fenced: true
        }
    );
    assert!(
        persisted(&outs).is_empty(),
        "behind its registration: stays fenced"
    );
    let (r, outs) = h.call_as(at(20), 1, hb(2, true));
    assert_eq!(
        r,
        Response::BrokerHeartbeat {
            error: ErrorCode::None,
            is_fenced: true
        }
    );
    assert!(persisted(&outs).is_empty(), "wants to stay fenced");
    let (r, outs) = h.call_as(at(30), 1, hb(2, false));
    assert_eq!(
        r,
        Response::BrokerHeartbeat {
            error: ErrorCode::None,
            is_fenced: false
        }
    );
    assert_eq!(
        persisted(&outs),
        vec![(
            3,
            MetadataRecord::BrokerFencing {
                broker_id: BrokerId(1),
                fenced: false
            }
        )]
    );
    assert_eq!(
        events(&outs),
        vec![Event::BrokerFencing {
            broker_id: BrokerId(1),
            fenced: false
        }]
    );
    assert!(h.c.image().is_broker_active(BrokerId(1)));
}

#[test]
fn a_new_incarnation_invalidates_the_old_epoch() {
    // Kafka: ClusterControlManager.checkBrokerEpoch -> STALE_BROKER_EPOCH.
    let mut h = Harness::new();
    let e1 = h.join(at(0), 1);
    let (r, _) = h.heartbeat(at(0), 1, e1 + 100, false);
    assert_eq!(
        r,
        Response::BrokerHeartbeat {
            error: ErrorCode::StaleBrokerEpoch,
            is_fenced: true
        }
    );
    let (r, _) = h.heartbeat(at(0), 9, 0, false);
    assert_eq!(
        r,
        Response::BrokerHeartbeat {
            error: ErrorCode::StaleBrokerEpoch,
            is_fenced: true
        },
        "unregistered broker"
    );
    // A new incarnation must wait for the old session to expire (Kafka:
    // DuplicateBrokerRegistrationException while hasValidSession).
    let reg = |inc| Request::RegisterBroker {
        broker_id: BrokerId(1),
        incarnation: inc,
    };
    let (r, outs) = h.call_as(at(9_000), 1, reg(2));
    assert_eq!(
        r,
        Response::RegisterBroker {
            error: ErrorCode::DuplicateBrokerRegistration,
            broker_epoch: -1
        }
    );
    assert!(persisted(&outs).is_empty());
    // One microsecond after the session ends, the input first fences the old incarnation.
    let (r, outs) = h.call_as(at(9_000).plus_micros(1), 1, reg(2));
    let Response::RegisterBroker {
        error: ErrorCode::None,
        broker_epoch: e2,
    } = r
    else {
        panic!("{r:?}")
    };
    assert_eq!(
        persisted(&outs),
        vec![
            (
                2,
                MetadataRecord::BrokerFencing {
                    broker_id: BrokerId(1),
                    fenced: true
                }
            ),
            (
                3,
                MetadataRecord::RegisterBroker {
                    broker_id: BrokerId(1),
                    broker_epoch: 3
                }
            ),
        ]
    );
    assert_eq!(e2, 3);
    let (r, _) = h.heartbeat(at(9_001), 1, e1, false);
    assert_eq!(
        r,
        Response::BrokerHeartbeat {
            error: ErrorCode::StaleBrokerEpoch,
            is_fenced: true
        }
    );
    let (r, _) = h.call_as(
        at(9_001),
        1,
        Request::AllocateProducerIds {
            broker_id: BrokerId(1),
            broker_epoch: e1,
        },
    );
    assert!(matches!(
        r,
        Response::AllocateProducerIds {
            error: ErrorCode::StaleBrokerEpoch,
            ..
        }
    ));
}

#[test]
fn session_timeout_fences_the_broker_and_fails_over_from_the_isr() {
    // Kafka: QuorumControllerTest.testFenceMultipleBrokers / BrokerHeartbeatManager
    // session expiry, and ReplicationControlManager.handleBrokerFenced.
    let (mut h, [_, e2, e3]) = three_brokers();
    let (r, _) = h.create(at(0), "t", 1, 3);
    let Response::TopicErrors { results } = r else {
        panic!()
    };
    assert_eq!(results[0].1, ErrorCode::None);
    let p = h.partition("t", 0);
    let old_leader = p.leader.expect("leader");
    assert_eq!(p.isr.len(), 3);
    // Everyone but the leader keeps heart-beating.
    let e1 = h.c.image().broker_epoch(BrokerId(1)).expect("registered");
    for (b, e) in [(1, e1), (2, e2), (3, e3)] {
        if BrokerId(b) != old_leader {
            h.heartbeat(at(5_000), b, e, false);
        }
    }
    assert_eq!(
        h.c.poll_timeout(),
        Some(at(9_000).plus_micros(1)),
        "leader's session"
    );
    assert!(
        h.timeout(at(9_000)).is_empty(),
        "still valid at exactly the timeout"
    );
    let outs = h.timeout(at(9_000).plus_micros(1));
    let p2 = h.partition("t", 0);
    let survivors: Vec<BrokerId> = p.isr.iter().copied().filter(|&b| b != old_leader).collect();
    assert_eq!(p2.isr, survivors);
    // The new leader is the first surviving replica in assignment order.
    let expected = p.replicas.iter().copied().find(|&b| b != old_leader);
    assert_eq!(p2.leader, expected);
    assert_eq!(p2.leader_epoch, LeaderEpoch(1));
    assert_eq!(p2.partition_epoch, 1);
    assert!(!h.c.image().is_broker_active(old_leader));
    let recs = persisted(&outs);
    assert_eq!(recs.len(), 2, "partition change then fence: {recs:?}");
    assert!(matches!(
        recs[0].1,
        MetadataRecord::PartitionChange {
            min_leader_epoch: None,
            ..
        }
    ));
    assert_eq!(
        recs[1].1,
        MetadataRecord::BrokerFencing {
            broker_id: old_leader,
            fenced: true
        }
    );
    assert_eq!(
        events(&outs),
        vec![
            Event::LeaderElected {
                tp: tp("t", 0),
                leader: expected,
                leader_epoch: LeaderEpoch(1),
                isr: survivors,
                unclean: false
            },
            Event::BrokerFencing {
                broker_id: old_leader,
                fenced: true
            },
        ]
    );
    assert_eq!(h.c.poll_timeout(), Some(at(14_000).plus_micros(1)));
}

#[test]
fn fencing_the_last_isr_member_keeps_the_isr_and_unfencing_restores_it_cleanly() {
    // Pre-ELR Kafka never shrinks the ISR to empty (PartitionChangeBuilder.build).
    let mut h = Harness::new();
    let e1 = h.join(at(0), 1);
    h.create(at(0), "t", 1, 1);
    let p = h.partition("t", 0);
    assert_eq!((p.leader, p.isr.clone()), (Some(BrokerId(1)), bid(&[1])));
    let (r, outs) = h.heartbeat(at(10), 1, e1, true);
    assert_eq!(
        r,
        Response::BrokerHeartbeat {
            error: ErrorCode::None,
            is_fenced: true
        }
    );
    let p = h.partition("t", 0);
    assert_eq!(p.leader, None);
    assert_eq!(p.isr, bid(&[1]), "last ISR member kept");
    assert_eq!(p.leader_epoch, LeaderEpoch(1));
    assert!(events(&outs).contains(&Event::LeaderElected {
        tp: tp("t", 0),
        leader: None,
        leader_epoch: LeaderEpoch(1),
        isr: bid(&[1]),
        unclean: false
    }));
    let (_, outs) = h.heartbeat(at(20), 1, e1, false);
    let p = h.partition("t", 0);
    assert_eq!(p.leader, Some(BrokerId(1)));
    assert_eq!(p.leader_epoch, LeaderEpoch(2));
    let recs = persisted(&outs);
    assert!(matches!(
        recs[0].1,
        MetadataRecord::BrokerFencing { fenced: false, .. }
    ));
    assert!(matches!(recs[1].1, MetadataRecord::PartitionChange { .. }));
}

/// Topic `t` on replicas [1, 2] with the ISR shrunk to its leader (the other replica out of
/// sync). Returns the harness and the leader's broker epoch.
fn offline_with_out_of_sync_replica(unclean_config: Option<&str>) -> (Harness, i64) {
    let mut h = Harness::new();
    h.join(at(0), 1);
    h.join(at(0), 2);
    let mut t = topic("t", 1, 2);
    if let Some(v) = unclean_config {
        t.configs
            .insert("unclean.leader.election.enable".into(), v.into());
    }
    h.create_with(at(0), t);
    let p = h.partition("t", 0);
    let leader = p.leader.expect("leader").0;
    let broker_epoch = h.c.image().broker_epoch(BrokerId(leader)).expect("epoch");
    let (r, _) = h.call_as(
        at(1),
        leader,
        Request::AlterPartition {
            broker_id: BrokerId(leader),
            broker_epoch,
            tp: tp("t", 0),
            leader_epoch: p.leader_epoch,
            partition_epoch: p.partition_epoch,
            new_isr: vec![BrokerId(leader)],
        },
    );
    assert!(
        matches!(
            r,
            Response::AlterPartition {
                error: ErrorCode::None,
                ..
            }
        ),
        "{r:?}"
    );
    (h, broker_epoch)
}

#[test]
fn unclean_election_happens_only_when_enabled_or_requested() {
    // Disabled: fencing the only ISR member leaves the partition offline although the
    // other replica is alive.
    let (mut h, e_leader) = offline_with_out_of_sync_replica(None);
    let leader = h.partition("t", 0).leader.expect("leader");
    let (_, outs) = h.heartbeat(at(2), leader.0, e_leader, true);
    let p = h.partition("t", 0);
    assert_eq!(p.leader, None);
    assert_eq!(p.isr, vec![leader]);
    assert!(
        events(&outs)
            .iter()
            .all(|e| !matches!(e, Event::LeaderElected { unclean: true, .. }))
    );
    // Requested: ElectLeaders(UNCLEAN) picks the live out-of-sync replica.
    let (r, outs) = h.call(
        at(3),
        Request::ElectLeaders {
            partitions: vec![tp("t", 0), tp("nope", 0)],
            unclean: true,
            test_only_candidate: None,
        },
    );
    assert_eq!(
        r,
        Response::PartitionErrors {
            results: vec![
                (tp("t", 0), ErrorCode::None),
                (tp("nope", 0), ErrorCode::UnknownTopicOrPartition)
            ]
        }
    );
    let other = BrokerId(3 - leader.0);
    let p = h.partition("t", 0);
    assert_eq!(p.leader, Some(other));
    assert_eq!(p.isr, vec![other]);
    assert!(p.leader_recovering);
    assert_eq!(p.leader_epoch, LeaderEpoch(2));
    assert_eq!(
        events(&outs),
        vec![Event::LeaderElected {
            tp: tp("t", 0),
            leader: Some(other),
            leader_epoch: LeaderEpoch(2),
            isr: vec![other],
            unclean: true
        }]
    );
    // A partition with a live leader needs no unclean election (Kafka: ELECTION_NOT_NEEDED).
    let (r, _) = h.call(
        at(4),
        Request::ElectLeaders {
            partitions: vec![tp("t", 0)],
            unclean: true,
            test_only_candidate: None,
        },
    );
    assert_eq!(
        r,
        Response::PartitionErrors {
            results: vec![(tp("t", 0), ErrorCode::ElectionNotNeeded)]
        }
    );
    // The recovered leader's AlterPartition clears RECOVERING.
    let e_other = h.c.image().broker_epoch(other).expect("epoch");
    let (r, _) = h.call_as(
        at(5),
        other.0,
        Request::AlterPartition {
            broker_id: other,
            broker_epoch: e_other,
            tp: tp("t", 0),
            leader_epoch: p.leader_epoch,
            partition_epoch: p.partition_epoch,
            new_isr: vec![other],
        },
    );
    assert!(matches!(
        r,
        Response::AlterPartition {
            error: ErrorCode::None,
            ..
        }
    ));
    assert!(!h.partition("t", 0).leader_recovering);
}

#[test]
fn unclean_election_is_automatic_when_the_topic_enables_it() {
    let (mut h, e_leader) = offline_with_out_of_sync_replica(Some("true"));
    let leader = h.partition("t", 0).leader.expect("leader");
    let (_, outs) = h.heartbeat(at(2), leader.0, e_leader, true);
    let other = BrokerId(3 - leader.0);
    let p = h.partition("t", 0);
    assert_eq!((p.leader, p.isr.clone()), (Some(other), vec![other]));
    assert!(
        events(&outs)
            .iter()
            .any(|e| matches!(e, Event::LeaderElected { unclean: true, .. }))
    );
}

#[test]
fn enabling_unclean_election_on_a_topic_elects_its_offline_partitions() {
    let (mut h, e_leader) = offline_with_out_of_sync_replica(Some("false"));
    let leader = h.partition("t", 0).leader.expect("leader");
    h.heartbeat(at(2), leader.0, e_leader, true);
    assert_eq!(h.partition("t", 0).leader, None);
    let (r, outs) = h.call(
        at(3),
        Request::IncrementalAlterConfigs {
            resource: ConfigResource::Topic("t".into()),
            ops: vec![("unclean.leader.election.enable".into(), Some("true".into()))],
        },
    );
    let Response::TopicErrors { results } = r else {
        panic!()
    };
    assert_eq!(results[0].1, ErrorCode::None);
    let recs = persisted(&outs);
    assert!(matches!(recs[0].1, MetadataRecord::Config { .. }));
    assert!(matches!(recs[1].1, MetadataRecord::PartitionChange { .. }));
    assert_eq!(h.partition("t", 0).leader, Some(BrokerId(3 - leader.0)));
}

#[test]
fn preferred_election_restores_the_first_replica() {
    let (mut h, [e1, _, _]) = three_brokers();
    h.create(at(0), "t", 1, 3);
    let p = h.partition("t", 0);
    let preferred = p.replicas[0];
    let (r, _) = h.call(
        at(1),
        Request::ElectLeaders {
            partitions: vec![tp("t", 0)],
            unclean: false,
            test_only_candidate: None,
        },
    );
    assert_eq!(
        r,
        Response::PartitionErrors {
            results: vec![(tp("t", 0), ErrorCode::ElectionNotNeeded)]
        }
    );
    // Fence and unfence the preferred leader: leadership moved away and stays away.
    let e = if preferred == BrokerId(1) {
        e1
    } else {
        h.c.image().broker_epoch(preferred).expect("e")
    };
    h.heartbeat(at(2), preferred.0, e, true);
    h.heartbeat(at(3), preferred.0, e, false);
    assert_ne!(h.partition("t", 0).leader, Some(preferred));
    // Not yet back in the ISR: preferred election is not possible.
    let (r, _) = h.call(
        at(4),
        Request::ElectLeaders {
            partitions: vec![tp("t", 0)],
            unclean: false,
            test_only_candidate: None,
        },
    );
    assert_eq!(
        r,
        Response::PartitionErrors {
            results: vec![(tp("t", 0), ErrorCode::PreferredLeaderNotAvailable)]
        }
    );
    // The leader adds it back, then the preferred election moves leadership.
    let p = h.partition("t", 0);
    let leader = p.leader.expect("leader");
    let le = h.c.image().broker_epoch(leader).expect("e");
    let (r, _) = h.call_as(
        at(5),
        leader.0,
        Request::AlterPartition {
            broker_id: leader,
            broker_epoch: le,
            tp: tp("t", 0),
            leader_epoch: p.leader_epoch,
            partition_epoch: p.partition_epoch,
            new_isr: p.replicas.clone(),
        },
    );
    assert!(matches!(
        r,
        Response::AlterPartition {
            error: ErrorCode::None,
            ..
        }
    ));
    let (r, outs) = h.call(
        at(6),
        Request::ElectLeaders {
            partitions: vec![tp("t", 0)],
            unclean: false,
            test_only_candidate: None,
        },
    );
    assert_eq!(
        r,
        Response::PartitionErrors {
            results: vec![(tp("t", 0), ErrorCode::None)]
        }
    );
    assert_eq!(h.partition("t", 0).leader, Some(preferred));
    assert!(
        events(&outs)
            .iter()
            .any(|e| matches!(e, Event::LeaderElected { unclean: false, .. }))
    );
}

#[test]
fn alter_partition_commits_the_isr_and_answers_the_committed_state() {
    // Kafka: ReplicationControlManagerTest.testAlterPartitionHandleUnknownTopicIdOrName,
    // testShrinkAndExpandIsr, testInvalidAlterPartitionRequests (the rules themselves are
    // tabled in replication_test).
    let (mut h, _) = three_brokers();
    h.create(at(0), "t", 1, 3);
    let p = h.partition("t", 0);
    let leader = p.leader.expect("leader");
    let le = h.c.image().broker_epoch(leader).expect("e");
    let alter =
        |broker_epoch, leader_epoch, partition_epoch, isr: Vec<BrokerId>| Request::AlterPartition {
            broker_id: leader,
            broker_epoch,
            tp: tp("t", 0),
            leader_epoch,
            partition_epoch,
            new_isr: isr,
        };
    let (r, outs) = h.call_as(
        at(1),
        leader.0,
        alter(le + 1000, p.leader_epoch, 0, vec![leader]),
    );
    assert!(matches!(
        r,
        Response::AlterPartition {
            error: ErrorCode::StaleBrokerEpoch,
            ..
        }
    ));
    assert!(persisted(&outs).is_empty());
    let (r, outs) = h.call_as(at(1), leader.0, alter(le, p.leader_epoch, 0, vec![leader]));
    assert_eq!(
        r,
        Response::AlterPartition {
            tp: tp("t", 0),
            error: ErrorCode::None,
            isr: vec![leader],
            leader_epoch: LeaderEpoch(0),
            partition_epoch: 1
        }
    );
    assert_eq!(persisted(&outs).len(), 1);
    assert!(events(&outs).is_empty(), "an ISR change elects no one");
    // Replaying the same request is now stale.
    let (r, _) = h.call_as(at(2), leader.0, alter(le, p.leader_epoch, 0, vec![leader]));
    assert!(matches!(
        r,
        Response::AlterPartition {
            error: ErrorCode::InvalidUpdateVersion,
            ..
        }
    ));
    // A no-op change answers the committed state and writes nothing.
    let (r, outs) = h.call_as(at(3), leader.0, alter(le, p.leader_epoch, 1, vec![leader]));
    assert!(matches!(
        r,
        Response::AlterPartition {
            error: ErrorCode::None,
            partition_epoch: 1,
            ..
        }
    ));
    assert!(persisted(&outs).is_empty());
    let (r, _) = h.call_as(
        at(4),
        leader.0,
        Request::AlterPartition {
            broker_id: leader,
            broker_epoch: le,
            tp: tp("zz", 0),
            leader_epoch: LeaderEpoch(0),
            partition_epoch: 0,
            new_isr: vec![leader],
        },
    );
    assert!(matches!(
        r,
        Response::AlterPartition {
            error: ErrorCode::UnknownTopicOrPartition,
            ..
        }
    ));
}

#[test]
fn create_topics_validates_places_deterministically_and_writes_configs_first() {
    // Kafka: ReplicationControlManagerTest.testCreateTopics, testInvalidCreateTopicsWith*.
    let (mut h, _) = three_brokers();
    let mut t = topic("orders", 3, 2);
    t.configs.insert("mirror.name".into(), "m1".into());
    let (r, outs) = h.create_with(at(0), t);
    let Response::TopicErrors { results } = r else {
        panic!()
    };
    let (_, err, id) = &results[0];
    assert_eq!(*err, ErrorCode::None);
    assert_ne!(*id, TopicId::ZERO);
    let kinds: Vec<&str> = persisted(&outs)
        .iter()
        .map(|(_, r)| match r {
            MetadataRecord::Config { .. } => "config",
            MetadataRecord::Topic { .. } => "topic",
            MetadataRecord::Partition { .. } => "partition",
            _ => "other",
        })
        .collect();
    assert_eq!(
        kinds,
        ["config", "topic", "partition", "partition", "partition"]
    );
    let sorted = [BrokerId(1), BrokerId(2), BrokerId(3)]
        .into_iter()
        .collect();
    let expected = place_replicas("orders", 0..3, 2, &sorted).expect("placement");
    for (p, replicas) in expected.iter().enumerate() {
        let r = h.partition("orders", i32::try_from(p).expect("p"));
        assert_eq!(&r.replicas, replicas);
        assert_eq!(&r.isr, replicas);
        assert_eq!(r.leader, Some(replicas[0]));
        assert_eq!((r.leader_epoch, r.partition_epoch), (LeaderEpoch(0), 0));
    }
    assert_eq!(
        h.c.image().topic_config("orders", "mirror.name"),
        Some("m1")
    );
    let err = |h: &mut Harness, t: CreatableTopic| {
        let (r, outs) = h.create_with(at(1), t);
        assert!(persisted(&outs).is_empty());
        let Response::TopicErrors { results } = r else {
            panic!()
        };
        results[0].1
    };
    assert_eq!(
        err(&mut h, topic("orders", 1, 1)),
        ErrorCode::TopicAlreadyExists
    );
    assert_eq!(
        err(&mut h, topic("", 1, 1)),
        ErrorCode::InvalidTopicException
    );
    assert_eq!(
        err(&mut h, topic("a b", 1, 1)),
        ErrorCode::InvalidTopicException
    );
    assert_eq!(err(&mut h, topic("x", 0, 1)), ErrorCode::InvalidPartitions);
    assert_eq!(err(&mut h, topic("x", -2, 1)), ErrorCode::InvalidPartitions);
    assert_eq!(
        err(&mut h, topic("x", 1, 4)),
        ErrorCode::InvalidReplicationFactor
    );
    assert_eq!(
        err(&mut h, topic("x", 1, 0)),
        ErrorCode::InvalidReplicationFactor
    );
    let mut bad = topic("x", 1, 1);
    bad.configs
        .insert("unclean.leader.election.enable".into(), "yes".into());
    assert_eq!(err(&mut h, bad), ErrorCode::InvalidConfig);
    let mut taken = topic("x", 1, 1);
    taken.topic_id = Some(*id);
    assert_eq!(err(&mut h, taken), ErrorCode::TopicAlreadyExists);
    // Duplicates within one request.
    let (r, _) = h.call(
        at(2),
        Request::CreateTopics {
            topics: vec![topic("d", 1, 1), topic("d", 1, 1)],
        },
    );
    let Response::TopicErrors { results } = r else {
        panic!()
    };
    assert!(
        results
            .iter()
            .all(|(_, e, _)| *e == ErrorCode::InvalidRequest)
    );
    // Defaults: -1 partitions / RF, the RF capped at the usable brokers.
    let mut config = ControllerConfig::new(C0);
    config.default_replication_factor = 3;
    config.default_num_partitions = 2;
    let mut h = Harness::with(config);
    h.join(at(0), 1);
    let (r, _) = h.create(at(0), "dflt", -1, -1);
    let Response::TopicErrors { results } = r else {
        panic!()
    };
    assert_eq!(results[0].1, ErrorCode::None);
    assert_eq!(h.partition("dflt", 1).replicas, bid(&[1]));
}

#[test]
fn placement_uses_only_unfenced_brokers() {
    let (mut h, [e1, _, _]) = three_brokers();
    h.heartbeat(at(1), 1, e1, true);
    h.create(at(1), "t", 4, 2);
    for p in 0..4 {
        assert!(!h.partition("t", p).replicas.contains(&BrokerId(1)));
    }
    let (r, _) = h.create(at(1), "u", 1, 3);
    assert!(
        matches!(r, Response::TopicErrors { results } if results[0].1 == ErrorCode::InvalidReplicationFactor)
    );
}

#[test]
fn mirror_topics_keep_the_requested_id_and_generated_ids_differ_across_clusters() {
    // KIP-1279 MirrorInfo: the destination topic has the source topic's id.
    let mut ids = Vec::new();
    for cluster in [ClusterIdx(0), ClusterIdx(1)] {
        let mut h = Harness::with(ControllerConfig::new(cluster));
        let from = NodeId::broker(cluster, BrokerId(1));
        let outs = h.send_from(
            at(0),
            from,
            Request::RegisterBroker {
                broker_id: BrokerId(1),
                incarnation: 1,
            },
        );
        let Response::RegisterBroker { broker_epoch, .. } = response_to(&outs, from) else {
            panic!()
        };
        h.send_from(
            at(0),
            from,
            Request::BrokerHeartbeat {
                broker_id: BrokerId(1),
                broker_epoch,
                metadata_offset: 0,
                want_fence: false,
            },
        );
        let client = NodeId::client(cluster, 0);
        let outs = h.send_from(
            at(0),
            client,
            Request::CreateTopics {
                topics: vec![topic("t", 1, 1)],
            },
        );
        let Response::TopicErrors { results } = response_to(&outs, client) else {
            panic!()
        };
        ids.push(results[0].2);
        let mut mirrored = topic("m", 1, 1);
        mirrored.topic_id = Some(TopicId(0xabc));
        let outs = h.send_from(
            at(0),
            client,
            Request::CreateTopics {
                topics: vec![mirrored],
            },
        );
        let Response::TopicErrors { results } = response_to(&outs, client) else {
            panic!()
        };
        assert_eq!(results[0].2, TopicId(0xabc));
        assert_eq!(h.c.image().topic_id("m"), Some(TopicId(0xabc)));
    }
    assert_ne!(ids[0], ids[1]);
    assert!(ids.iter().all(|id| *id != TopicId::ZERO));
}

#[test]
fn delete_topics_and_create_partitions() {
    // Kafka: ReplicationControlManagerTest.testDeleteTopics, testCreatePartitions.
    let (mut h, _) = three_brokers();
    let (r, _) = h.create(at(0), "t", 2, 2);
    let Response::TopicErrors { results } = r else {
        panic!()
    };
    let id = results[0].2;
    let (r, _) = h.call(
        at(1),
        Request::CreatePartitions {
            topic: "t".into(),
            count: 2,
        },
    );
    assert_eq!(
        r,
        Response::TopicErrors {
            results: vec![("t".into(), ErrorCode::InvalidPartitions, id)]
        }
    );
    let (r, outs) = h.call(
        at(1),
        Request::CreatePartitions {
            topic: "t".into(),
            count: 4,
        },
    );
    assert_eq!(
        r,
        Response::TopicErrors {
            results: vec![("t".into(), ErrorCode::None, id)]
        }
    );
    assert_eq!(persisted(&outs).len(), 2);
    assert_eq!(h.partition("t", 3).replicas.len(), 2);
    let (r, _) = h.call(
        at(1),
        Request::CreatePartitions {
            topic: "zz".into(),
            count: 4,
        },
    );
    assert!(
        matches!(r, Response::TopicErrors { results } if results[0].1 == ErrorCode::UnknownTopicOrPartition)
    );
    let (r, outs) = h.call(
        at(2),
        Request::DeleteTopics {
            names: vec!["t".into(), "zz".into()],
        },
    );
    assert_eq!(
        r,
        Response::TopicErrors {
            results: vec![
                ("t".into(), ErrorCode::None, id),
                (
                    "zz".into(),
                    ErrorCode::UnknownTopicOrPartition,
                    TopicId::ZERO
                )
            ]
        }
    );
    assert_eq!(
        persisted(&outs)
            .iter()
            .map(|(_, r)| r.clone())
            .collect::<Vec<_>>(),
        vec![MetadataRecord::RemoveTopic { topic_id: id }]
    );
    assert!(h.c.image().topic_id("t").is_none());
    // A recreated topic gets a new id.
    let (r, _) = h.create(at(3), "t", 1, 1);
    let Response::TopicErrors { results } = r else {
        panic!()
    };
    assert_ne!(results[0].2, id);
}

#[test]
fn incremental_alter_configs_writes_changed_keys_and_validates_topics() {
    let (mut h, _) = three_brokers();
    h.create(at(0), "t", 1, 1);
    let alter = |resource, ops| Request::IncrementalAlterConfigs { resource, ops };
    let (r, outs) = h.call(
        at(1),
        alter(
            ConfigResource::Topic("t".into()),
            vec![
                ("retention.ms".into(), Some("10".into())),
                ("absent".into(), None),
            ],
        ),
    );
    assert!(matches!(r, Response::TopicErrors { ref results } if results[0].1 == ErrorCode::None));
    assert_eq!(
        persisted(&outs).len(),
        1,
        "deleting an absent key is a no-op"
    );
    assert_eq!(h.c.image().topic_config("t", "retention.ms"), Some("10"));
    let (r, _) = h.call(
        at(1),
        alter(ConfigResource::Topic("zz".into()), vec![("a".into(), None)]),
    );
    assert!(
        matches!(r, Response::TopicErrors { ref results } if results[0].1 == ErrorCode::UnknownTopicOrPartition)
    );
    let (r, _) = h.call(
        at(1),
        alter(
            ConfigResource::Topic("t".into()),
            vec![("min.insync.replicas".into(), Some("0".into()))],
        ),
    );
    assert!(
        matches!(r, Response::TopicErrors { ref results } if results[0].1 == ErrorCode::InvalidConfig)
    );
    // A mirror's configs: only an existing mirror's (KIP-1279, see `mirror_patterns`).
    let (r, outs) = h.call(
        at(1),
        alter(
            ConfigResource::Mirror("m1".into()),
            vec![("source.bootstrap".into(), Some("c0".into()))],
        ),
    );
    assert!(
        matches!(r, Response::TopicErrors { ref results } if results[0].1 == ErrorCode::UnknownClusterMirror)
    );
    assert!(persisted(&outs).is_empty());
    let create = Request::CreateMirror {
        mirror_name: "m1".into(),
        configs: [("source.cluster".to_string(), "src".to_string())].into(),
    };
    let (r, _) = h.call(at(1), create);
    assert!(matches!(
        r,
        Response::MirrorAdmin {
            error: ErrorCode::None,
            ..
        }
    ));
    let (r, outs) = h.call(
        at(1),
        alter(
            ConfigResource::Mirror("m1".into()),
            vec![("source.bootstrap".into(), Some("c0".into()))],
        ),
    );
    assert!(matches!(r, Response::TopicErrors { ref results } if results[0].1 == ErrorCode::None));
    assert_eq!(persisted(&outs).len(), 1);
    assert_eq!(h.c.min_insync_replicas("t"), 1);
}

#[test]
fn bump_leader_epochs_applies_the_kip1279_formula_per_partition() {
    // spec kip1279.md A.1/A.2: new epoch = max(current, MinLeaderEpoch) + 1, leader
    // unchanged; an epoch already above MinLeaderEpoch is NONE without a record.
    let (mut h, _) = three_brokers();
    h.create(at(0), "t", 2, 2);
    let leader = h.partition("t", 0).leader;
    let (r, outs) = h.call(
        at(1),
        Request::BumpLeaderEpochs {
            partitions: vec![
                (tp("t", 0), LeaderEpoch(7)),
                (tp("t", 1), LeaderEpoch(-1)),
                (tp("zz", 0), LeaderEpoch(1)),
            ],
        },
    );
    assert_eq!(
        r,
        Response::PartitionErrors {
            results: vec![
                (tp("t", 0), ErrorCode::None),
                (tp("t", 1), ErrorCode::None),
                (tp("zz", 0), ErrorCode::UnknownTopicOrPartition)
            ]
        }
    );
    let recs = persisted(&outs);
    assert_eq!(recs.len(), 1, "partition 1 already above -1");
    let MetadataRecord::PartitionChange {
        partition,
        registration,
        min_leader_epoch,
        ..
    } = &recs[0].1
    else {
        panic!("{recs:?}")
    };
    assert_eq!((*partition, *min_leader_epoch), (0, Some(LeaderEpoch(7))));
    assert_eq!(registration.leader_epoch, LeaderEpoch(8));
    assert_eq!(registration.leader, leader);
    assert_eq!(h.partition("t", 0).leader_epoch, LeaderEpoch(8));
    assert_eq!(h.partition("t", 1).leader_epoch, LeaderEpoch(0));
    // Already met now: no record.
    let (_, outs) = h.call(
        at(2),
        Request::BumpLeaderEpochs {
            partitions: vec![(tp("t", 0), LeaderEpoch(7))],
        },
    );
    assert!(persisted(&outs).is_empty());
    // At the boundary: current 8, min 8 -> 9.
    h.call(
        at(3),
        Request::BumpLeaderEpochs {
            partitions: vec![(tp("t", 0), LeaderEpoch(8))],
        },
    );
    assert_eq!(h.partition("t", 0).leader_epoch, LeaderEpoch(9));
}

#[test]
fn producer_id_blocks_are_consecutive_and_start_at_zero_in_every_cluster() {
    // Kafka: ProducerIdControlManagerTest.testInitialResult / testMonotonic.
    let mut h = Harness::new();
    let e1 = h.join(at(0), 1);
    let e2 = h.join(at(0), 2);
    let alloc = |b, e| Request::AllocateProducerIds {
        broker_id: BrokerId(b),
        broker_epoch: e,
    };
    let (r, outs) = h.call_as(at(1), 1, alloc(1, e1));
    assert_eq!(
        r,
        Response::AllocateProducerIds {
            error: ErrorCode::None,
            first_producer_id: ProducerId(0),
            count: 1000
        }
    );
    assert_eq!(
        persisted(&outs)[0].1,
        MetadataRecord::ProducerIds {
            broker_id: BrokerId(1),
            next_producer_id: ProducerId(1000)
        }
    );
    let (r, _) = h.call_as(at(1), 2, alloc(2, e2));
    assert!(matches!(
        r,
        Response::AllocateProducerIds {
            first_producer_id: ProducerId(1000),
            ..
        }
    ));
    assert_eq!(h.c.next_producer_id(), ProducerId(2000));
    let mut other = Harness::with(ControllerConfig::new(ClusterIdx(1)));
    let from = NodeId::broker(ClusterIdx(1), BrokerId(1));
    let outs = other.send_from(
        at(0),
        from,
        Request::RegisterBroker {
            broker_id: BrokerId(1),
            incarnation: 1,
        },
    );
    let Response::RegisterBroker { broker_epoch, .. } = response_to(&outs, from) else {
        panic!()
    };
    let outs = other.send_from(at(0), from, alloc(1, broker_epoch));
    assert!(matches!(
        response_to(&outs, from),
        Response::AllocateProducerIds {
            first_producer_id: ProducerId(0),
            ..
        }
    ));
}

#[test]
fn fetch_metadata_answers_parks_at_the_end_and_times_out_empty() {
    // KRaft Fetch long-poll (KafkaRaftClient: a fetch at the end waits up to maxWaitMs).
    let mut h = Harness::new();
    h.join(at(0), 1); // offsets 0, 1
    let fetch = |offset, wait| Request::FetchMetadata {
        broker_id: BrokerId(1),
        fetch_offset: offset,
        max_wait_ms: wait,
    };
    let (r, _) = h.call_as(at(1), 1, fetch(1, 500));
    assert_eq!(
        r,
        Response::FetchMetadata {
            error: ErrorCode::None,
            records: vec![(
                1,
                MetadataRecord::BrokerFencing {
                    broker_id: BrokerId(1),
                    fenced: false
                }
            )],
            end_offset: 2
        }
    );
    let (r, _) = h.call_as(at(1), 1, fetch(3, 500));
    assert_eq!(
        r,
        Response::FetchMetadata {
            error: ErrorCode::OffsetOutOfRange,
            records: vec![],
            end_offset: 2
        }
    );
    let (r, _) = h.call_as(at(1), 1, fetch(-1, 500));
    assert!(matches!(
        r,
        Response::FetchMetadata {
            error: ErrorCode::OffsetOutOfRange,
            ..
        }
    ));
    // Parked at the end: no response yet.
    let from = NodeId::broker(C0, BrokerId(1));
    let outs = h.send_from(at(1), from, fetch(2, 500));
    assert!(outs.is_empty());
    assert_eq!(h.c.parked_fetches(), 1);
    assert_eq!(h.c.poll_timeout(), Some(at(501)));
    // A record arrives: the parked fetch is answered after the creator's response.
    let (_, outs) = h.create(at(100), "t", 1, 1);
    let sends: Vec<_> = outs
        .iter()
        .filter(|o| matches!(o, Output::Send { .. }))
        .collect();
    assert_eq!(sends.len(), 2);
    let Output::Send {
        to,
        message:
            Message::Response(Response::FetchMetadata {
                records,
                end_offset,
                ..
            }),
        ..
    } = sends[1]
    else {
        panic!("{sends:?}")
    };
    assert_eq!(*to, from);
    assert_eq!(records.first().map(|r| r.0), Some(2));
    assert_eq!(*end_offset, h.c.metadata_log().len() as i64);
    assert_eq!(h.c.parked_fetches(), 0);
    // Parked again, nothing arrives: an empty answer at the deadline.
    let end = h.c.metadata_log().len() as i64;
    h.send_from(at(200), from, fetch(end, 300));
    assert!(h.timeout(at(499)).is_empty());
    let outs = h.timeout(at(500));
    assert_eq!(
        response_to(&outs, from),
        Response::FetchMetadata {
            error: ErrorCode::None,
            records: vec![],
            end_offset: end
        }
    );
    // max_wait 0 answers at once.
    let (r, _) = h.call_as(at(600), 1, fetch(end, 0));
    assert_eq!(
        r,
        Response::FetchMetadata {
            error: ErrorCode::None,
            records: vec![],
            end_offset: end
        }
    );
}

#[test]
fn replaying_the_persisted_log_rebuilds_an_identical_controller() {
    // KRaft: a restarted controller replays its log (QuorumControllerTest snapshot/replay).
    let (mut h, [e1, _, _]) = three_brokers();
    let mut outs = Vec::new();
    outs.extend(h.create(at(0), "a", 3, 2).1);
    outs.extend(
        h.call_as(
            at(0),
            1,
            Request::AllocateProducerIds {
                broker_id: BrokerId(1),
                broker_epoch: e1,
            },
        )
        .1,
    );
    outs.extend(h.heartbeat(at(1), 1, e1, true).1);
    outs.extend(
        h.call(
            at(2),
            Request::BumpLeaderEpochs {
                partitions: vec![(tp("a", 0), LeaderEpoch(4))],
            },
        )
        .1,
    );
    outs.extend(
        h.call(
            at(3),
            Request::DeleteTopics {
                names: vec!["a".into()],
            },
        )
        .1,
    );
    let log = h.c.metadata_log().to_vec();
    assert!(
        log.iter().enumerate().all(|(i, (o, _))| *o == i as i64),
        "offsets consecutive from 0"
    );
    let mut restarted = Harness::new();
    restarted.c = Controller::new(ControllerConfig::new(C0), log.clone());
    assert_eq!(restarted.c.image(), h.c.image());
    assert_eq!(restarted.c.metadata_log(), h.c.metadata_log());
    assert_eq!(restarted.c.next_producer_id(), h.c.next_producer_id());
    // The same next input gives the same outputs (topic ids, offsets, placement).
    let a = h.create(at(10), "b", 2, 2).1;
    let b = restarted.create(at(10), "b", 2, 2).1;
    assert_eq!(persisted(&a), persisted(&b));
    // Sessions restart at the first input after recovery: unfenced brokers get a full
    // timeout from then.
    assert_eq!(
        restarted.c.poll_timeout(),
        Some(at(10 + 9_000).plus_micros(1))
    );
}

#[test]
fn requests_a_controller_does_not_serve_get_an_error_and_other_clusters_get_not_controller() {
    let mut h = Harness::new();
    let (r, outs) = h.call(at(0), Request::Metadata { topics: None });
    assert_eq!(
        r,
        Response::Error {
            error: ErrorCode::InvalidRequest
        }
    );
    assert!(persisted(&outs).is_empty());
    let from = NodeId::broker(ClusterIdx(1), BrokerId(1));
    let outs = h.send_from(
        at(0),
        from,
        Request::RegisterBroker {
            broker_id: BrokerId(1),
            incarnation: 1,
        },
    );
    assert_eq!(
        response_to(&outs, from),
        Response::RegisterBroker {
            error: ErrorCode::NotController,
            broker_epoch: -1
        }
    );
    assert!(h.c.metadata_log().is_empty());
    // Responses are ignored.
    h.c.handle_message(
        at(0),
        from,
        1,
        Message::Response(Response::Error {
            error: ErrorCode::None,
        }),
    );
    assert!(h.drain().is_empty());
}

#[test]
fn an_unclean_election_test_hook_elects_its_candidate_as_if_the_others_were_down() {
    // Kafka's tests choose an unclean leader by shutting the other replicas down
    // (`PartitionChangeBuilder.electLeader` takes the first acceptable replica in assignment
    // order); `test_only_candidate` is that choice without the shutdowns.
    let mut h = Harness::new();
    for b in 1..=3 {
        h.join(at(0), b);
    }
    h.create_with(at(0), topic("t", 1, 3));
    let p = h.partition("t", 0);
    let leader = p.leader.expect("leader");
    let e_leader = h.c.image().broker_epoch(leader).expect("epoch");
    let (r, _) = h.call_as(
        at(1),
        leader.0,
        Request::AlterPartition {
            broker_id: leader,
            broker_epoch: e_leader,
            tp: tp("t", 0),
            leader_epoch: p.leader_epoch,
            partition_epoch: p.partition_epoch,
            new_isr: vec![leader],
        },
    );
    assert!(
        matches!(
            r,
            Response::AlterPartition {
                error: ErrorCode::None,
                ..
            }
        ),
        "{r:?}"
    );
    h.heartbeat(at(2), leader.0, e_leader, true);
    assert_eq!(h.partition("t", 0).leader, None);
    let others: Vec<BrokerId> = p
        .replicas
        .iter()
        .copied()
        .filter(|b| *b != leader)
        .collect();
    let last = *others.last().expect("two others");
    let elect = |h: &mut Harness, t: i64, candidate: BrokerId| {
        h.call(
            at(t),
            Request::ElectLeaders {
                partitions: vec![tp("t", 0)],
                unclean: true,
                test_only_candidate: Some(candidate),
            },
        )
        .0
    };
    // The fenced old leader is not acceptable: nothing changes.
    assert_eq!(
        elect(&mut h, 3, leader),
        Response::PartitionErrors {
            results: vec![(tp("t", 0), ErrorCode::EligibleLeadersNotAvailable)]
        }
    );
    assert_eq!(h.partition("t", 0).leader, None);
    // The last live replica in assignment order, not the first one.
    assert_eq!(
        elect(&mut h, 4, last),
        Response::PartitionErrors {
            results: vec![(tp("t", 0), ErrorCode::None)]
        }
    );
    let p = h.partition("t", 0);
    assert_eq!(p.leader, Some(last));
    assert_eq!(p.isr, vec![last]);
    // Without the hook the controller takes the first acceptable replica (test above).
    assert_ne!(others[0], last);
}
