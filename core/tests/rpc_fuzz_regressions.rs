//! Regression tests for the panics and wrong answers the RPC fuzz test
//! (`sim/tests/rpc_fuzz.rs`) found: each malformed request now gets a Kafka error code (or,
//! where Kafka accepts it, its answer) and changes nothing it should not.

mod support;

use std::collections::BTreeMap;

use mirror_core::broker::{Broker, BrokerConfig};
use mirror_core::controller::{Controller, ControllerConfig};
use mirror_core::log::partition_log::{AppendError, LogConfig, PartitionLog};
use mirror_core::log::producer_state::AppendOrigin;
use mirror_core::protocol::messages::{CreatableTopic, FetchPartition};
use mirror_core::protocol::{ClusterIdx, ErrorCode, NodeId, Request, Response};
use mirror_core::record::{BatchBuilder, BatchError, RecordBatch, SimpleRecord};
use mirror_core::replication::fetch_leader::FetchIsolation;
use mirror_core::types::{BrokerId, LeaderEpoch, Offset, TopicPartition};
use support::{AnyNode, MiniNet};

const C: ClusterIdx = ClusterIdx(0);

fn client() -> NodeId {
    NodeId::client(C, 0)
}

fn cluster() -> MiniNet {
    let mut net = MiniNet::new();
    let mut cc = ControllerConfig::new(C);
    cc.default_replication_factor = 1;
    net.add(
        NodeId::controller(C),
        AnyNode::Controller(Box::new(Controller::new(cc, Vec::new()))),
    );
    let cfg = BrokerConfig::new(C, BrokerId(0));
    net.add(
        NodeId::broker(C, BrokerId(0)),
        AnyNode::Broker(Box::new(Broker::new(cfg, 1, BTreeMap::new()))),
    );
    net.run_for_ms(3_000);
    net
}

fn ask(net: &mut MiniNet, to: NodeId, req: Request) -> Option<Response> {
    let id = net.request(client(), to, req);
    net.run_for_ms(2_000);
    net.take_response(client(), id)
}

fn topic(name: &str, partitions: i32) -> CreatableTopic {
    CreatableTopic {
        name: name.into(),
        num_partitions: partitions,
        replication_factor: 1,
        configs: BTreeMap::new(),
        topic_id: None,
    }
}

fn errors(resp: Option<Response>) -> Vec<ErrorCode> {
    match resp {
        Some(Response::TopicErrors { results }) => results.into_iter().map(|r| r.1).collect(),
        other => panic!("expected topic errors, got {other:?}"),
    }
}

fn partition_count(net: &MiniNet, name: &str) -> usize {
    let image = net.controller(NodeId::controller(C)).image();
    image
        .topic_id(name)
        .and_then(|id| image.topics.get(&id))
        .map_or(0, |t| t.partitions.len())
}

fn broker() -> NodeId {
    NodeId::broker(C, BrokerId(0))
}

/// Found by the fuzz: CreatePartitions with `count = i32::MAX` made the controller place two
/// billion partitions (out of memory). Kafka bounds one request at `MAX_PARTITIONS_PER_BATCH`
/// partitions; the request is refused and the topic keeps its partitions.
#[test]
fn create_partitions_beyond_the_batch_bound_is_a_policy_violation() {
    let mut net = cluster();
    assert_eq!(
        errors(ask(
            &mut net,
            broker(),
            Request::CreateTopics {
                topics: vec![topic("t0", 1)]
            }
        )),
        vec![ErrorCode::None]
    );
    let before = net.controller(NodeId::controller(C)).metadata_log().len();
    let resp = ask(
        &mut net,
        broker(),
        Request::CreatePartitions {
            topic: "t0".into(),
            count: i32::MAX,
        },
    );
    assert_eq!(errors(resp), vec![ErrorCode::PolicyViolation]);
    assert_eq!(partition_count(&net, "t0"), 1);
    assert_eq!(
        net.controller(NodeId::controller(C)).metadata_log().len(),
        before,
        "nothing written"
    );
    // A bounded increase is still allowed.
    let resp = ask(
        &mut net,
        broker(),
        Request::CreatePartitions {
            topic: "t0".into(),
            count: 3,
        },
    );
    assert_eq!(errors(resp), vec![ErrorCode::None]);
    assert_eq!(partition_count(&net, "t0"), 3);
}

/// Kafka `ReplicationControlManager.validateTotalNumberOfPartitions`: more than 10,000
/// partitions in one CreateTopics request fails every topic of it with POLICY_VIOLATION, one
/// huge topic or several that add up.
#[test]
fn create_topics_beyond_the_batch_bound_fails_the_whole_request() {
    let mut net = cluster();
    let resp = ask(
        &mut net,
        broker(),
        Request::CreateTopics {
            topics: vec![topic("huge", i32::MAX)],
        },
    );
    assert_eq!(errors(resp), vec![ErrorCode::PolicyViolation]);
    let resp = ask(
        &mut net,
        broker(),
        Request::CreateTopics {
            topics: vec![topic("a", 6_000), topic("b", 5_000)],
        },
    );
    assert_eq!(
        errors(resp),
        vec![ErrorCode::PolicyViolation, ErrorCode::PolicyViolation]
    );
    for name in ["huge", "a", "b"] {
        assert_eq!(partition_count(&net, name), 0, "{name} not created");
    }
}

/// Found by the fuzz: a consumer Fetch with `max_wait_ms = i64::MAX` overflowed its deadline
/// (`Instant::plus_millis`). With data to return it is answered at once, like any fetch.
#[test]
fn fetch_with_the_largest_max_wait_is_answered() {
    let mut net = cluster();
    ask(
        &mut net,
        broker(),
        Request::CreateTopics {
            topics: vec![topic("t0", 1)],
        },
    );
    let produced = ask(
        &mut net,
        broker(),
        Request::Produce {
            transactional_id: None,
            acks: 1,
            timeout_ms: 1_000,
            partitions: vec![(
                TopicPartition::new("t0", 0),
                BatchBuilder::new().build(&[SimpleRecord::value(1, "a")]),
            )],
        },
    );
    assert!(matches!(produced, Some(Response::Produce { .. })));
    let resp = ask(
        &mut net,
        broker(),
        Request::Fetch {
            replica: None,
            max_wait_ms: i64::MAX,
            min_bytes: 0,
            max_bytes: usize::MAX,
            isolation: FetchIsolation::HighWatermark,
            partitions: vec![FetchPartition {
                tp: TopicPartition::new("t0", 0),
                fetch_offset: Offset(0),
                current_leader_epoch: None,
                last_fetched_epoch: None,
                log_start_offset: Offset(-1),
                topic_id: None,
            }],
            session: mirror_core::protocol::messages::FetchSessionMeta::SESSIONLESS,
            forgotten: Vec::new(),
        },
    );
    match resp {
        Some(Response::Fetch {
            error, partitions, ..
        }) => {
            assert_eq!(error, ErrorCode::None);
            assert_eq!(partitions[0].error, ErrorCode::None);
            assert_eq!(partitions[0].batches.len(), 1);
        }
        other => panic!("{other:?}"),
    }
}

fn with_bad_crc(batch: &RecordBatch) -> RecordBatch {
    let mut bytes = batch.bytes().to_vec();
    bytes[mirror_core::record::codec::CRC] ^= 1;
    RecordBatch::decode_unchecked_crc(bytes.into()).expect("parses without the crc check")
}

/// Found by the fuzz: a produced batch whose CRC does not match was appended by the leader,
/// and every follower then refused it. Kafka's leader refuses it with CORRUPT_MESSAGE
/// (`analyzeAndValidateRecords`: `CorruptRecordException`).
#[test]
fn produce_with_a_corrupt_crc_is_corrupt_message_and_appends_nothing() {
    let mut net = cluster();
    ask(
        &mut net,
        broker(),
        Request::CreateTopics {
            topics: vec![topic("t0", 1)],
        },
    );
    let good = BatchBuilder::new().build(&[SimpleRecord::value(1, "a")]);
    let resp = ask(
        &mut net,
        broker(),
        Request::Produce {
            transactional_id: None,
            acks: 1,
            timeout_ms: 1_000,
            partitions: vec![(TopicPartition::new("t0", 0), with_bad_crc(&good))],
        },
    );
    match resp {
        Some(Response::Produce { partitions }) => {
            assert_eq!(partitions[0].error, ErrorCode::CorruptMessage);
        }
        other => panic!("{other:?}"),
    }
    let p = net
        .broker(broker())
        .partition(&TopicPartition::new("t0", 0))
        .expect("replica");
    assert_eq!(p.log.log_end_offset(), Offset(0));
}

/// The same rule on the log: a client batch with a bad CRC is `InvalidBatch(InvalidCrc)`.
#[test]
fn append_as_leader_refuses_a_client_batch_with_a_bad_crc() {
    let mut log = PartitionLog::new(LogConfig::default());
    let bad = with_bad_crc(&BatchBuilder::new().build(&[SimpleRecord::value(1, "a")]));
    let err = log
        .append_as_leader(&bad, LeaderEpoch(0), AppendOrigin::Client)
        .unwrap_err();
    assert!(
        matches!(
            err,
            AppendError::InvalidBatch(BatchError::InvalidCrc { .. })
        ),
        "{err:?}"
    );
    assert_eq!(log.log_end_offset(), Offset(0));
}

/// Found by the fuzz: records with the extreme timestamps a client may send overflowed the
/// builder's timestamp delta, and retention's `now - max_timestamp`. Both wrap as Java's long
/// arithmetic does: the records read back with their own timestamps, and retention neither
/// panics nor deletes a batch whose age wraps negative.
#[test]
fn extreme_record_timestamps_round_trip_and_retention_does_not_overflow() {
    let batch = BatchBuilder::new().build(&[
        SimpleRecord::value(i64::MAX, "late"),
        SimpleRecord::value(i64::MIN, "early"),
    ]);
    assert_eq!(batch.record_timestamps(), vec![i64::MAX, i64::MIN]);
    let mut log = PartitionLog::new(LogConfig::default());
    let early = BatchBuilder::new().build(&[SimpleRecord::value(i64::MIN, "early")]);
    log.append_as_leader(&early, LeaderEpoch(0), AppendOrigin::Client)
        .expect("append");
    log.maybe_increment_high_watermark(Offset(1)).expect("hw");
    assert_eq!(log.apply_retention_ms(1_000, 10), None);
    assert_eq!(log.log_start_offset(), Offset(0));
}
