//! ListOffsets on a broker (Kafka: `ReplicaManager.fetchOffset` →
//! `Partition.fetchOffsetForTimestamp` → `UnifiedLog.fetchOffsetByTimestamp`): lookups by
//! timestamp and the special timestamps, bounded by what the requester may read.

mod support;

use std::collections::BTreeMap;

use mirror_core::broker::{Broker, BrokerConfig};
use mirror_core::controller::{Controller, ControllerConfig};
use mirror_core::protocol::messages::{CreatableTopic, ListOffsetsPartitionResponse, OffsetSpec};
use mirror_core::protocol::{ClusterIdx, ErrorCode, NodeId, Request, Response};
use mirror_core::record::{BatchBuilder, RecordBatch, SimpleRecord};
use mirror_core::replication::fetch_leader::FetchIsolation;
use mirror_core::types::{
    BrokerId, LeaderEpoch, Offset, ProducerEpoch, ProducerId, Sequence, TopicPartition,
};
use support::{AnyNode, MiniNet};

const C: ClusterIdx = ClusterIdx(0);

fn client() -> NodeId {
    NodeId::client(C, 0)
}

fn broker() -> NodeId {
    NodeId::broker(C, BrokerId(0))
}

fn tp() -> TopicPartition {
    TopicPartition::new("t0", 0)
}

/// One broker leading `t0-0`.
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
        broker(),
        AnyNode::Broker(Box::new(Broker::new(cfg, 1, BTreeMap::new()))),
    );
    net.run_for_ms(3_000);
    let id = net.request(
        client(),
        broker(),
        Request::CreateTopics {
            topics: vec![CreatableTopic {
                name: "t0".into(),
                num_partitions: 1,
                replication_factor: 1,
                configs: BTreeMap::new(),
                topic_id: None,
            }],
        },
    );
    net.run_for_ms(2_000);
    assert!(net.take_response(client(), id).is_some());
    net
}

fn produce(net: &mut MiniNet, batch: RecordBatch) {
    let id = net.request(
        client(),
        broker(),
        Request::Produce {
            transactional_id: None,
            acks: -1,
            timeout_ms: 1_000,
            partitions: vec![(tp(), batch)],
        },
    );
    net.run_for_ms(500);
    match net.take_response(client(), id) {
        Some(Response::Produce { partitions }) => assert_eq!(partitions[0].error, ErrorCode::None),
        other => panic!("{other:?}"),
    }
}

fn plain(timestamps: &[i64]) -> RecordBatch {
    let recs: Vec<SimpleRecord> = timestamps
        .iter()
        .map(|&t| SimpleRecord::value(t, "v"))
        .collect();
    BatchBuilder::new().build(&recs)
}

fn list(
    net: &mut MiniNet,
    replica_id: Option<BrokerId>,
    isolation: FetchIsolation,
    spec: OffsetSpec,
) -> ListOffsetsPartitionResponse {
    let id = net.request(
        client(),
        broker(),
        Request::ListOffsets {
            replica_id,
            isolation,
            partitions: vec![(tp(), None, spec)],
        },
    );
    net.run_for_ms(100);
    match net.take_response(client(), id) {
        Some(Response::ListOffsets { mut partitions }) => partitions.remove(0),
        other => panic!("{other:?}"),
    }
}

fn consumer(net: &mut MiniNet, spec: OffsetSpec) -> (ErrorCode, i64, i64, i32) {
    let r = list(net, None, FetchIsolation::HighWatermark, spec);
    (r.error, r.timestamp, r.offset.0, r.leader_epoch.0)
}

/// A timestamp lookup answers the first record at or above it, with that record's timestamp
/// and its batch's epoch; MAX_TIMESTAMP the first record with the largest timestamp; the
/// tiered-storage timestamps -1 (no tiered storage); EARLIEST_LOCAL the log start. A
/// timestamp above every record is no error and no offset. EARLIEST and LATEST keep their
/// answers (no timestamp).
#[test]
fn list_offsets_by_timestamp_and_the_special_timestamps() {
    let mut net = cluster();
    produce(&mut net, plain(&[100]));
    produce(&mut net, plain(&[200, 300]));
    produce(&mut net, plain(&[150]));
    let none = ErrorCode::None;
    assert_eq!(
        consumer(&mut net, OffsetSpec::Timestamp(150)),
        (none, 200, 1, 0)
    );
    assert_eq!(
        consumer(&mut net, OffsetSpec::Timestamp(0)),
        (none, 100, 0, 0)
    );
    assert_eq!(
        consumer(&mut net, OffsetSpec::Timestamp(301)),
        (none, -1, -1, -1)
    );
    assert_eq!(
        consumer(&mut net, OffsetSpec::MaxTimestamp),
        (none, 300, 2, 0)
    );
    assert_eq!(
        consumer(&mut net, OffsetSpec::EarliestLocal),
        (none, -1, 0, 0)
    );
    assert_eq!(
        consumer(&mut net, OffsetSpec::LatestTiered),
        (none, -1, -1, -1)
    );
    assert_eq!(
        consumer(&mut net, OffsetSpec::EarliestPendingUpload),
        (none, -1, -1, -1)
    );
    assert_eq!(consumer(&mut net, OffsetSpec::Earliest), (none, -1, 0, 0));
    assert_eq!(consumer(&mut net, OffsetSpec::Latest), (none, -1, 4, 0));
    // The wire's special values mean the same through `Timestamp`.
    assert_eq!(
        consumer(&mut net, OffsetSpec::Timestamp(-3)),
        (none, 300, 2, 0)
    );
}

/// Kafka `ReplicaManager.fetchOffset`: an offset found at or past the last offset the
/// requester may read (the LSO for read_committed, the HW for read_uncommitted, the LEO for a
/// replica) is not given out.
#[test]
fn a_found_offset_past_the_last_stable_offset_is_not_given_to_read_committed() {
    let mut net = cluster();
    produce(&mut net, plain(&[100]));
    let open = BatchBuilder::transactional(ProducerId(7), ProducerEpoch(0), Sequence(0))
        .build(&[SimpleRecord::value(500, "in-txn")]);
    produce(&mut net, open);
    let committed = list(
        &mut net,
        None,
        FetchIsolation::TxnCommitted,
        OffsetSpec::Timestamp(400),
    );
    assert_eq!(
        (committed.error, committed.offset),
        (ErrorCode::None, Offset(-1))
    );
    let uncommitted = list(
        &mut net,
        None,
        FetchIsolation::HighWatermark,
        OffsetSpec::Timestamp(400),
    );
    assert_eq!(
        (
            uncommitted.timestamp,
            uncommitted.offset,
            uncommitted.leader_epoch
        ),
        (500, Offset(1), LeaderEpoch(0))
    );
    let replica = list(
        &mut net,
        Some(BrokerId(1)),
        FetchIsolation::LogEnd,
        OffsetSpec::MaxTimestamp,
    );
    assert_eq!((replica.timestamp, replica.offset), (500, Offset(1)));
}
