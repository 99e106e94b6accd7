//! The fault vocabulary: names, JSON form, resolution errors, and schedules played
//! against a world of `PingNode`s.

use std::sync::{Arc, Mutex};

use mirror_core::protocol::{ClusterIdx, NodeId, NodeRole};
use mirror_core::types::BrokerId;

use super::*;
use crate::net::{LatencyDist, NetConfig};
use crate::world::test_node::{PingConfig, PingNode};
use crate::world::{ClusterConfig, NodeStatus, World, WorldConfig, run_seed};

fn all_faults() -> Vec<Fault> {
    let s1 = NodeRef::broker("src", 1);
    let d2 = NodeRef::broker("dst", 2);
    let kafka = |fault| Fault::Kafka { fault };
    vec![
        Fault::Crash {
            node: s1.clone(),
            mode: CrashMode::KeepRandomPrefix,
        },
        Fault::Restart { node: s1.clone() },
        Fault::RestartAllDown,
        Fault::Pause { node: d2.clone() },
        Fault::Resume { node: d2.clone() },
        Fault::Partition {
            a: Side::Cluster("src".into()),
            b: Side::Nodes(vec![d2.clone(), NodeRef::controller("dst")]),
            direction: LinkDirection::AtoB,
        },
        Fault::HealPartition {
            a: Side::Cluster("src".into()),
            b: Side::AllExcept(vec![s1.clone()]),
            direction: LinkDirection::Both,
        },
        Fault::Isolate { node: s1.clone() },
        Fault::Unisolate { node: s1.clone() },
        Fault::Clog {
            from: s1.clone(),
            to: d2.clone(),
        },
        Fault::Unclog {
            from: s1.clone(),
            to: d2.clone(),
        },
        Fault::LatencySpike {
            a: Side::Cluster("src".into()),
            b: Side::Cluster("dst".into()),
            direction: LinkDirection::BtoA,
            extra_ms: 200,
            duration_ms: 5_000,
        },
        Fault::PacketLoss { rate: 0.25 },
        Fault::DiskFull {
            node: s1.clone(),
            on: true,
        },
        Fault::DiskEio {
            node: s1,
            path_prefix: "orders-0/".into(),
        },
        Fault::HealAll,
        kafka(KafkaFault::UncleanElection {
            cluster: "src".into(),
            topic: "orders".into(),
            partition: 0,
        }),
        kafka(KafkaFault::CleanLeaderChange {
            cluster: "src".into(),
            topic: "orders".into(),
            partition: 1,
            to: Some(2),
        }),
        kafka(KafkaFault::DeleteRecords {
            cluster: "src".into(),
            topic: "orders".into(),
            partition: 0,
            before_offset: 42,
        }),
    ]
}

#[test]
fn node_refs_read_and_print_as_trace_names() {
    // Goal: schedules name nodes exactly as traces do; cluster names may contain '-'.
    for s in ["src-1", "src-ctl", "dst-c2", "us-east-12"] {
        assert_eq!(s.parse::<NodeRef>().unwrap().to_string(), s);
    }
    assert_eq!(
        "us-east-12".parse::<NodeRef>().unwrap(),
        NodeRef::broker("us-east", 12)
    );
    for bad in ["src", "-1", "src-x", "src-c", ""] {
        assert!(
            matches!(bad.parse::<NodeRef>(), Err(FaultError::BadNodeRef(_))),
            "{bad}"
        );
    }
}

#[test]
fn schedules_round_trip_through_json() {
    // Goal: every fault is data: JSON out and back is the identity, and the form is
    // readable (`"kind": "crash"`, `"node": "src-1"`).
    let schedule = FaultSchedule::new(
        all_faults()
            .into_iter()
            .enumerate()
            .map(|(i, fault)| FaultStep {
                at_ms: 100 * i as u64,
                fault,
            })
            .collect(),
    );
    let json = schedule.to_json();
    assert_eq!(FaultSchedule::from_json(&json).unwrap(), schedule);
    let one = serde_json::to_string(&schedule.steps[0]).unwrap();
    assert_eq!(
        one,
        r#"{"at_ms":0,"fault":{"kind":"crash","node":"src-1","mode":"keep_random_prefix"}}"#
    );
    let eio: Fault =
        serde_json::from_str(r#"{"kind":"disk_eio","node":"src-2"}"#).expect("default prefix");
    assert_eq!(
        eio,
        Fault::DiskEio {
            node: NodeRef::broker("src", 2),
            path_prefix: String::new()
        }
    );
    assert!(
        serde_json::from_str::<Fault>(r#"{"kind":"crash","node":"src","mode":"keep_all"}"#)
            .is_err()
    );
    let kinds: Vec<&str> = all_faults().iter().map(Fault::kind).collect();
    assert_eq!(kinds.len(), 19);
}

fn ping_world() -> World<PingNode> {
    let cfg = WorldConfig::new(
        vec![ClusterConfig::new("src", 2), ClusterConfig::new("dst", 2)],
        NetConfig {
            intra: LatencyDist::Fixed(std::time::Duration::from_millis(1)),
            wan: LatencyDist::Fixed(std::time::Duration::from_millis(20)),
            ..NetConfig::default()
        },
    );
    let w = World::new(cfg);
    let brokers: Vec<NodeId> = w
        .configured_nodes()
        .into_iter()
        .filter(|n| n.broker_id().is_some())
        .collect();
    w.start(move |boot| {
        let peers = if boot.id.role == NodeRole::Controller {
            Vec::new()
        } else {
            brokers.iter().copied().filter(|p| *p != boot.id).collect()
        };
        PingNode::new(
            PingConfig {
                peers,
                interval_ms: 100,
                flush_every: 1,
                persist_metadata: false,
            },
            boot,
        )
    });
    w
}

#[test]
fn apply_resolves_names_and_rejects_what_it_cannot_apply() {
    // Goal: unknown names and unsupported faults are errors that change nothing.
    run_seed(1, || async {
        let w = ping_world();
        let before = w.trace_hash();
        let err = |f: Fault| apply(&w, &f).unwrap_err();
        assert_eq!(
            err(Fault::Restart {
                node: NodeRef::broker("src", 9)
            }),
            FaultError::UnknownNode("src-9".into())
        );
        assert_eq!(
            err(Fault::Partition {
                a: Side::Cluster("src".into()),
                b: Side::Cluster("nope".into()),
                direction: LinkDirection::Both
            }),
            FaultError::UnknownCluster("nope".into())
        );
        assert_eq!(
            err(Fault::PacketLoss { rate: 1.5 }),
            FaultError::BadRate("1.5".into())
        );
        assert_eq!(
            err(all_faults().pop().unwrap()),
            FaultError::Unsupported("delete_records")
        );
        assert_eq!(w.trace_hash(), before, "nothing was applied or traced");
    })
    .unwrap();
}

/// Records Kafka-level faults instead of applying them.
struct Recorder(Arc<Mutex<Vec<KafkaFault>>>);

impl<N> KafkaFaults<N> for Recorder {
    fn apply(&mut self, _world: &World<N>, fault: &KafkaFault) -> Result<(), FaultError> {
        self.0.lock().unwrap().push(fault.clone());
        Ok(())
    }
}

#[test]
fn a_schedule_plays_in_time_order_against_the_world() {
    // Goal: steps run at their times (ties in list order), faults take effect, and Kafka
    // faults reach the handler.
    let lines = run_seed(2, || async {
        let w = ping_world();
        let s1 = NodeRef::broker("src", 1);
        let schedule = FaultSchedule::new(vec![
            FaultStep {
                at_ms: 500,
                fault: Fault::Restart { node: s1.clone() },
            },
            FaultStep {
                at_ms: 250,
                fault: Fault::Crash {
                    node: s1.clone(),
                    mode: CrashMode::LoseAllUnflushed,
                },
            },
            FaultStep {
                at_ms: 250,
                fault: Fault::Isolate {
                    node: NodeRef::broker("dst", 2),
                },
            },
            FaultStep {
                at_ms: 600,
                fault: Fault::Unisolate {
                    node: NodeRef::broker("dst", 2),
                },
            },
            FaultStep {
                at_ms: 700,
                fault: all_faults().remove(16),
            },
        ]);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut rec = Recorder(Arc::clone(&seen));
        let s1_id = NodeId::broker(ClusterIdx(0), BrokerId(1));
        let d2_id = NodeId::broker(ClusterIdx(1), BrokerId(2));
        let w2 = w.clone();
        madsim::task::spawn_local(async move {
            w2.clock().sleep_until_ms(400).await;
            assert_eq!(w2.status(s1_id), NodeStatus::Crashed);
            let d2 = w2.node_state(d2_id);
            assert_eq!(
                d2.lock().unwrap().pings(),
                6,
                "3 peers x 2 ticks before isolation"
            );
        });
        schedule.play_with(&w, &mut rec).await.unwrap();
        assert_eq!(w.status(s1_id), NodeStatus::Up);
        assert_eq!(w.node_state(s1_id).lock().unwrap().recovered_entries(), 2);
        assert_eq!(seen.lock().unwrap().len(), 1);
        w.trace_lines()
            .into_iter()
            .filter(|l| l.contains("fault"))
            .collect::<Vec<_>>()
    })
    .unwrap();
    let expect = [
        "t=     0.250s",
        "src-1",
        "crash LoseAllUnflushed",
        "t=     0.250s",
        "dst-2",
        "isolate id=1",
        "t=     0.500s",
        "src-1",
        "restart inc=2",
        "t=     0.600s",
        "dst-2↔¬dst-2",
        "heal id=1",
    ];
    assert_eq!(lines.len(), 4, "{lines:#?}");
    for (line, want) in lines.iter().zip(expect.chunks(3)) {
        assert!(
            want.iter().all(|w| line.contains(w)),
            "{line} lacks {want:?}"
        );
    }
}
