use mirror_core::broker::Message;
use mirror_core::mirror::MirrorPartitionState as S;
use mirror_core::protocol::messages::{
    FetchPartition, FetchPartitionResponse, MirrorDescription, MirrorPartitionDescription,
    MirrorPartitionStateData, MirrorPartitionStateWrite, MirrorTopicDescription,
    ReadMirrorStatesTopicResult, WriteMirrorStatesTopic, WriteMirrorStatesTopicResult,
};
use mirror_core::protocol::metadata::DesiredMirrorState;
use mirror_core::protocol::{ClusterIdx, ErrorCode, NodeId, Request, Response};
use mirror_core::record::{BatchBuilder, ControlRecord, SimpleRecord};
use mirror_core::replication::fetch_leader::FetchIsolation;
use mirror_core::types::{
    BrokerId, LeaderEpoch, Offset, OffsetAndEpoch, ProducerEpoch, ProducerId, Sequence, TopicId,
    TopicPartition,
};

use super::{InFlight, detail};

fn tp(p: i32) -> TopicPartition {
    TopicPartition::new("t0", p)
}

fn req(r: Request) -> String {
    detail(&Message::Request(r), None)
}

fn resp(r: Response, answers: Option<&'static str>) -> String {
    detail(&Message::Response(r), answers)
}

#[test]
fn a_follower_fetch_shows_offset_and_both_epochs() {
    // Goal: the fields a truncation bug turns on (fetch offset, current leader epoch,
    // LastFetchedEpoch) are on the request line; an absent epoch shows as `-`.
    let r = Request::Fetch {
        replica: Some((BrokerId(2), 5)),
        max_wait_ms: 500,
        min_bytes: 1,
        max_bytes: 1024,
        isolation: FetchIsolation::LogEnd,
        partitions: vec![
            FetchPartition {
                tp: tp(0),
                fetch_offset: Offset(12),
                current_leader_epoch: Some(LeaderEpoch(3)),
                last_fetched_epoch: Some(LeaderEpoch(2)),
                log_start_offset: Offset(0),
                topic_id: Some(TopicId((2 << 64) | 1)),
            },
            FetchPartition {
                tp: tp(1),
                fetch_offset: Offset(0),
                current_leader_epoch: None,
                last_fetched_epoch: None,
                log_start_offset: Offset(0),
                topic_id: None,
            },
        ],
        session: mirror_core::protocol::messages::FetchSessionMeta::SESSIONLESS,
        forgotten: Vec::new(),
    };
    assert_eq!(
        req(r),
        "Fetch replica=2 be=5 iso=LogEnd wait=500 min=1 max=1024 \
         t0-0(off=12 cle=3 lfe=2 ls=0 id=2:1) t0-1(off=0 cle=- lfe=- ls=0)"
    );
}

#[test]
fn a_fetch_response_shows_divergence_offsets_and_batches() {
    // Goal: a diverging epoch, the leader's HW/LSO/log start and each batch's offsets and
    // epoch (control batches named) are visible; long batch lists are cut with a count.
    let data = |base: i64, epoch: i32| {
        BatchBuilder::idempotent(ProducerId(7), ProducerEpoch(0), Sequence(0))
            .base_offset(Offset(base))
            .leader_epoch(LeaderEpoch(epoch))
            .build(&[SimpleRecord::value(0, "a"), SimpleRecord::value(0, "b")])
    };
    let reset = BatchBuilder::idempotent(ProducerId(7), ProducerEpoch(0), Sequence(0))
        .base_offset(Offset(14))
        .leader_epoch(LeaderEpoch(4))
        .build_control(ControlRecord::MirrorPidReset, 0);
    let r = Response::Fetch {
        error: ErrorCode::None,
        session_id: 0,
        partitions: vec![
            FetchPartitionResponse {
                tp: tp(0),
                error: ErrorCode::None,
                high_watermark: Offset(10),
                last_stable_offset: Offset(10),
                log_start_offset: Offset(0),
                diverging_epoch: Some(OffsetAndEpoch::new(Offset(8), LeaderEpoch(2))),
                aborted_transactions: None,
                batches: vec![],
            },
            FetchPartitionResponse {
                tp: tp(1),
                error: ErrorCode::None,
                high_watermark: Offset(20),
                last_stable_offset: Offset(20),
                log_start_offset: Offset(2),
                diverging_epoch: None,
                aborted_transactions: None,
                batches: vec![data(10, 3), data(12, 3), reset, data(15, 4), data(17, 4)],
            },
        ],
    };
    assert_eq!(
        resp(r, Some("Fetch")),
        "Fetch NONE t0-0(NONE hw=10 lso=10 ls=0 div=8@2) \
         t0-1(NONE hw=20 lso=20 ls=2 batches=[10..=11@3,12..=13@3,14..=14@4 pid_reset,15..=16@4,…+1])"
    );
}

#[test]
fn a_failed_write_shows_its_reason_and_the_reply_its_state_epoch() {
    // Goal: a WriteMirrorStates to FAILED carries the target, the fencing epochs and the
    // reason; its reply, a generic variant, names the API it answers.
    let r = Request::WriteMirrorStates {
        mirror_name: "m1".into(),
        topics: vec![WriteMirrorStatesTopic {
            name: "t0".into(),
            topic_id: TopicId((1 << 64) | 1),
            partitions: vec![MirrorPartitionStateWrite {
                partition: 0,
                state: S::Failed.value(),
                leader_epoch: Some(LeaderEpoch(0)),
                state_epoch: Some(1),
                last_mirror_epoch: None,
                last_mirror_offset: None,
                error_message: Some("no LME for epoch 3".into()),
                retry_attempt: -1,
                previous_state: S::Preparing.value(),
            }],
        }],
    };
    assert_eq!(
        req(r),
        "WriteMirrorStates m1 t0-0(→FAILED le=0 se=1 prev=PREPARING retry=-1 \
         reason=\"no LME for epoch 3\") id=1:1"
    );
    let reply = Response::WriteMirrorStates {
        error: ErrorCode::None,
        topics: vec![WriteMirrorStatesTopicResult {
            name: "t0".into(),
            error: ErrorCode::None,
            message: None,
            partitions: vec![(0, ErrorCode::None, 2)],
        }],
    };
    assert_eq!(resp(reply, None), "WriteMirrorStates NONE t0-0(NONE se=2)");
    let errors = Response::PartitionErrors {
        results: vec![(tp(0), ErrorCode::FencedLeaderEpoch)],
    };
    assert_eq!(
        resp(errors, Some("BumpLeaderEpochs")),
        "PartitionErrors(BumpLeaderEpochs) t0-0:FENCED_LEADER_EPOCH"
    );
}

#[test]
fn mirror_state_replies_show_state_epochs_and_last_mirror_epoch() {
    // Goal: DescribeMirrors (the LME lookup) and ReadMirrorStates replies show state, LME,
    // offsets and a FAILED reason: what a reader needs to see why PREPARING failed.
    let d = Response::DescribeMirrors {
        mirrors: vec![MirrorDescription {
            mirror_name: "m1".into(),
            error: ErrorCode::None,
            source: "src".into(),
            topics: vec![MirrorTopicDescription {
                name: "t0".into(),
                desired: Some(DesiredMirrorState::Stopped),
                partitions: vec![MirrorPartitionDescription {
                    partition: 0,
                    state: "STOPPED".into(),
                    last_mirror_epoch: 3,
                    last_mirror_offset: 40,
                    source_offset: 38,
                    destination_offset: 45,
                    error_message: None,
                    retry_attempt: -1,
                }],
            }],
        }],
    };
    assert_eq!(
        resp(d, Some("DescribeMirrors")),
        "DescribeMirrors m1(NONE src=src t0:Stopped t0-0(STOPPED lme=3 lmo=40 src=38 dst=45 retry=-1))"
    );
    let r = Response::ReadMirrorStates {
        error: ErrorCode::None,
        topics: vec![ReadMirrorStatesTopicResult {
            name: "t0".into(),
            error: ErrorCode::None,
            message: None,
            partitions: vec![MirrorPartitionStateData {
                partition: 1,
                error: ErrorCode::None,
                state: S::Failed.value(),
                leader_epoch: Some(LeaderEpoch(2)),
                state_epoch: 4,
                last_mirror_epoch: Some(LeaderEpoch(1)),
                last_mirror_offset: Some(Offset(9)),
                error_message: Some("why".into()),
                retry_attempt: -1,
                previous_state: S::Preparing.value(),
            }],
        }],
    };
    assert_eq!(
        resp(r, None),
        "ReadMirrorStates NONE t0-1(NONE FAILED le=2 se=4 lme=1 lmo=9 prev=PREPARING \
         retry=-1 reason=\"why\")"
    );
}

#[test]
fn in_flight_pairs_a_response_with_its_request() {
    // Goal: the response from B to A with A's correlation id names A's request API, once.
    let a = NodeId::broker(ClusterIdx(0), BrokerId(1));
    let b = NodeId::broker(ClusterIdx(1), BrokerId(2));
    let mut f = InFlight::default();
    let bump = Message::Request(Request::BumpLeaderEpochs {
        partitions: vec![(tp(0), LeaderEpoch(3))],
    });
    let reply = Message::Response(Response::PartitionErrors { results: vec![] });
    assert_eq!(f.on_send(a, b, 7, &bump), None);
    // Same id, other direction pair: not the answer.
    assert_eq!(f.on_send(a, b, 8, &reply), None);
    assert_eq!(f.on_send(b, a, 7, &reply), Some("BumpLeaderEpochs"));
    assert_eq!(f.on_send(b, a, 7, &reply), None);
    assert_eq!(req_line(&bump), "BumpLeaderEpochs t0-0(le>3)");
}

fn req_line(m: &Message) -> String {
    detail(m, None)
}
