//! The failback lookup's verdicts: loops need agreement, a partition not stopped blocks, a
//! dead minority is left out only when the partition's record was still seen.
//! Reference: kip1279.md B §8.1 steps 1-2, §8.12.

use super::*;
use crate::protocol::ErrorCode;
use crate::protocol::messages::{MirrorPartitionDescription, MirrorTopicDescription};

use DesiredMirrorState::{Mirroring, Stopped};

fn b(id: i32) -> BrokerId {
    BrokerId(id)
}

fn lookup() -> LmeLookup {
    LmeLookup::new("t0", 0, [b(1), b(2), b(3)])
}

/// One broker's answer: mirror `m1` with `t0` in `desired` and, if `record` is given, the
/// record it hosts for partition 0 (state name, LME, LMO).
fn answer(
    desired: Option<DesiredMirrorState>,
    record: Option<(&str, i32, i64)>,
) -> Vec<MirrorDescription> {
    let partitions = record
        .map(|(state, lme, lmo)| MirrorPartitionDescription {
            partition: 0,
            state: state.to_string(),
            last_mirror_epoch: lme,
            last_mirror_offset: lmo,
            source_offset: -1,
            destination_offset: -1,
            error_message: None,
            retry_attempt: 0,
        })
        .into_iter()
        .collect::<Vec<_>>();
    let topics = if desired.is_some() || !partitions.is_empty() {
        vec![MirrorTopicDescription {
            name: "t0".into(),
            desired,
            partitions,
        }]
    } else {
        Vec::new()
    };
    vec![MirrorDescription {
        mirror_name: "m1".into(),
        error: ErrorCode::None,
        source: "0".into(),
        topics,
    }]
}

#[test]
fn waits_for_every_broker_then_takes_the_max_lme() {
    let mut l = lookup();
    l.on_answer(b(1), &answer(Some(Stopped), Some(("STOPPED", 4, 120))));
    assert_eq!(l.verdict(), LookupVerdict::Waiting);
    l.on_answer(b(2), &answer(Some(Stopped), Some(("STOPPED", 2, 80))));
    l.on_answer(b(3), &answer(Some(Stopped), None));
    assert_eq!(l.verdict(), LookupVerdict::Truncate((4, 120)));
}

#[test]
fn a_loop_is_reported_only_when_every_answer_agrees() {
    // Forbidden: a stale broker alone must not end the failback (mirror chaos seed 335).
    let mut l = lookup();
    l.on_answer(b(1), &answer(Some(Mirroring), Some(("MIRRORING", -1, -1))));
    l.on_answer(b(2), &answer(Some(Stopped), Some(("STOPPED", 0, 630))));
    l.on_answer(b(3), &answer(Some(Stopped), None));
    assert_eq!(l.verdict(), LookupVerdict::Retry(RetryReason::LoopDisputed));
    // Allowed: every broker lists the topic as mirroring from us.
    let mut l = lookup();
    for id in 1..=3 {
        l.on_answer(b(id), &answer(Some(Mirroring), None));
    }
    assert_eq!(l.verdict(), LookupVerdict::Loop("m1".into()));
}

#[test]
fn a_reverse_partition_not_stopped_blocks_without_failing() {
    let mut l = lookup();
    l.on_answer(b(1), &answer(Some(Stopped), Some(("STOPPING", -1, -1))));
    l.on_answer(b(2), &answer(Some(Stopped), None));
    l.on_answer(b(3), &answer(Some(Stopped), None));
    assert_eq!(l.verdict(), LookupVerdict::Retry(RetryReason::NotStopped));
}

#[test]
fn a_dead_broker_is_left_out_when_the_record_was_seen() {
    let mut l = lookup();
    l.on_answer(b(1), &answer(Some(Stopped), Some(("STOPPED", 3, 90))));
    l.on_unreachable(b(2));
    l.on_answer(b(3), &answer(Some(Stopped), None));
    assert_eq!(l.verdict(), LookupVerdict::Truncate((3, 90)));
}

#[test]
fn a_dead_coordinator_makes_the_lookup_wait_instead_of_mirroring_from_scratch() {
    // The topic is in a reverse mirror, so a record exists; the broker hosting it is down.
    let mut l = lookup();
    l.on_unreachable(b(1));
    l.on_answer(b(2), &answer(Some(Stopped), None));
    l.on_answer(b(3), &answer(Some(Stopped), None));
    assert_eq!(l.verdict(), LookupVerdict::Retry(RetryReason::RecordUnseen));
}

#[test]
fn a_cluster_with_no_reverse_mirror_answers_from_scratch_even_with_a_dead_broker() {
    let mut l = lookup();
    l.on_unreachable(b(1));
    l.on_answer(b(2), &[]);
    l.on_answer(b(3), &answer(None, None));
    assert_eq!(l.verdict(), LookupVerdict::Truncate((-1, -1)));
}

#[test]
fn late_or_repeated_answers_are_ignored() {
    let mut l = lookup();
    l.on_unreachable(b(1));
    l.on_answer(b(1), &answer(Some(Mirroring), None));
    l.on_answer(b(2), &answer(Some(Stopped), Some(("STOPPED", 1, 10))));
    l.on_answer(b(2), &answer(Some(Mirroring), None));
    l.on_answer(b(3), &answer(Some(Stopped), None));
    assert_eq!(l.verdict(), LookupVerdict::Truncate((1, 10)));
}

#[test]
fn a_loop_reported_by_a_minority_alone_is_not_believed() {
    // Mirror chaos seed 2215: the up-to-date broker is down, the stale one answers alone.
    let mut l = LmeLookup::new("t0", 0, [b(1), b(2)]);
    l.on_answer(b(1), &answer(Some(Mirroring), Some(("STOPPING", -1, -1))));
    l.on_unreachable(b(2));
    assert_eq!(l.verdict(), LookupVerdict::Retry(RetryReason::LoopDisputed));
    // Two of three agree and none disagrees: a loop.
    let mut l = lookup();
    l.on_answer(b(1), &answer(Some(Mirroring), None));
    l.on_answer(b(2), &answer(Some(Mirroring), None));
    l.on_unreachable(b(3));
    assert_eq!(l.verdict(), LookupVerdict::Loop("m1".into()));
}
