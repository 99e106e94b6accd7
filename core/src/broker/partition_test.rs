//! Leader ISR bookkeeping across a metadata update that races an AlterPartition (Kafka
//! `Partition.makeLeader` with the same leader epoch, `handleAlterPartitionUpdate`).

use std::collections::BTreeSet;

use super::{Partition, Role};
use crate::broker::output::Event;
use crate::broker::storage::PartitionFiles;
use crate::log::partition_log::{LogConfig, PartitionLog};
use crate::protocol::metadata::PartitionRegistration;
use crate::types::Offset;
use crate::types::{BrokerId, LeaderEpoch, TopicId, TopicPartition};

fn reg(isr: &[i32], partition_epoch: i32) -> PartitionRegistration {
    PartitionRegistration {
        replicas: vec![BrokerId(1), BrokerId(2), BrokerId(3)],
        isr: isr.iter().copied().map(BrokerId).collect(),
        leader: Some(BrokerId(2)),
        leader_epoch: LeaderEpoch(2),
        partition_epoch,
        leader_recovering: false,
    }
}

fn leader_of(isr: &[i32]) -> Partition {
    let tp = TopicPartition::new("t", 0);
    let mut io = Vec::new();
    let files = PartitionFiles::create(&tp, TopicId(1), Offset(0), &mut io);
    let mut p = Partition::new(
        tp,
        TopicId(1),
        PartitionLog::new(LogConfig::default()),
        files,
    );
    let mut events = Vec::new();
    assert!(p.make_leader(BrokerId(2), &reg(isr, 3), 0, true, &mut events));
    p
}

fn isr(p: &Partition) -> BTreeSet<BrokerId> {
    p.isr().into_iter().collect()
}

#[test]
fn an_isr_only_update_replaces_the_isr_even_with_an_alter_partition_in_flight() {
    // Goal: the controller removed fenced broker 3 from the ISR (handleBrokerFenced) while
    // this leader had an expansion of broker 1 in flight on top of its older ISR [2, 3]. The
    // metadata's ISR is the committed state (Kafka makeLeader sets CommittedPartitionState),
    // and the in-flight proposal is stale: keeping [2, 3] made every later expansion propose
    // the fenced broker again, refused INELIGIBLE_REPLICA for ever (mirror chaos seed 7540).
    let mut p = leader_of(&[2, 3]);
    let Some(l) = p.leader_state() else {
        panic!("leader")
    };
    assert!(l.alter_in_flight.is_none());
    // An expansion goes out (the broker records its correlation id in `alter_in_flight`).
    let proposed = {
        let Role::Leader(l) = &mut p.role else {
            panic!("leader")
        };
        l.alter_in_flight = Some(7);
        l.isr.prepare_isr_expand(BrokerId(1))
    };
    assert_eq!(
        proposed,
        Some(
            [BrokerId(1), BrokerId(2), BrokerId(3)]
                .into_iter()
                .collect()
        )
    );
    let mut events = Vec::new();
    let changed = p.make_leader(BrokerId(2), &reg(&[1, 2], 4), 0, true, &mut events);
    assert!(!changed, "same leader epoch: not a new leadership");
    assert_eq!(isr(&p), [BrokerId(1), BrokerId(2)].into_iter().collect());
    let l = p.leader_state().expect("leader");
    assert_eq!(l.alter_in_flight, None, "the in-flight proposal is stale");
    assert!(!l.isr.is_inflight());
    assert_eq!(p.partition_epoch, 4);
}

#[test]
fn an_isr_only_update_with_nothing_in_flight_adopts_the_committed_isr() {
    // Goal: the plain case (a shrink committed by the controller arrives as metadata).
    let mut p = leader_of(&[1, 2, 3]);
    let mut events = Vec::new();
    assert!(!p.make_leader(BrokerId(2), &reg(&[2, 3], 4), 0, true, &mut events));
    assert_eq!(isr(&p), [BrokerId(2), BrokerId(3)].into_iter().collect());
    assert_eq!(
        events,
        vec![Event::IsrChanged {
            tp: TopicPartition::new("t", 0),
            isr: vec![BrokerId(2), BrokerId(3)],
        }],
        "an ISR change, no new leadership"
    );
    // The metadata log delivering an older partition epoch than this leader already has
    // (an AlterPartition response got here first) changes nothing (Kafka makeLeader).
    let mut events = Vec::new();
    assert!(!p.make_leader(BrokerId(2), &reg(&[1, 2, 3], 3), 0, true, &mut events));
    assert_eq!(isr(&p), [BrokerId(2), BrokerId(3)].into_iter().collect());
    assert!(events.is_empty());
}
