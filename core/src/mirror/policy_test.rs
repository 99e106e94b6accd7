//! Policy values: failback markers from stored values, epoch fencing thresholds, FAILED
//! retry backoff. Reference: kip1279.md B §7.4, §8.4.

use super::*;

#[test]
fn marker_from_stored_value() {
    // Goal: -1 fields become "unknown" and each kind reads its own field.
    let v = LastMirrorEpochsValue {
        last_mirror_epoch: 7,
        last_mirror_offset: 120,
    };
    assert_eq!(
        FailbackMarkerKind::LastMirroredEpoch.marker(v),
        FailbackMarker::Lme(Some(LeaderEpoch(7)))
    );
    assert_eq!(
        FailbackMarkerKind::LastMirroredOffset.marker(v),
        FailbackMarker::Lmo(Some(Offset(120)))
    );
    assert_eq!(
        FailbackMarkerKind::LastMirrorPosition.marker(v),
        FailbackMarker::Position {
            epoch: Some(LeaderEpoch(7)),
            offset: Some(Offset(120))
        }
    );
    let u = LastMirrorEpochsValue::UNKNOWN;
    assert_eq!(
        FailbackMarkerKind::LastMirroredEpoch.marker(u),
        FailbackMarker::Lme(None)
    );
    assert_eq!(
        FailbackMarkerKind::LastMirroredOffset.marker(u),
        FailbackMarker::Lmo(None)
    );
    assert_eq!(
        FailbackMarkerKind::LastMirrorPosition.marker(u),
        FailbackMarker::Position {
            epoch: None,
            offset: None
        }
    );
}

#[test]
fn epoch_fencing_reactive_and_proactive() {
    // Goal: batch epoch > DLE fences; within 3 of the DLE appends and bumps; else appends.
    let f = EpochFencing::PROTOTYPE;
    let dle = LeaderEpoch(20);
    let cases = [
        (25, EpochCheck::Fence),
        (21, EpochCheck::Fence),
        (20, EpochCheck::AppendAndBump),
        (18, EpochCheck::AppendAndBump),
        (17, EpochCheck::Append),
        (0, EpochCheck::Append),
    ];
    for (batch, want) in cases {
        assert_eq!(
            f.check(LeaderEpoch(batch), dle),
            want,
            "batch epoch {batch}"
        );
    }
    assert!(f.needs_periodic_bump(LeaderEpoch(18), dle));
    assert!(!f.needs_periodic_bump(LeaderEpoch(17), dle));
    assert_eq!(f.min_leader_epoch(LeaderEpoch(25)), Some(LeaderEpoch(35)));
    assert_eq!(f.min_leader_epoch(LeaderEpoch(i32::MAX - 5)), None);
    // Extreme DLE values do not overflow the threshold arithmetic.
    assert_eq!(
        f.check(LeaderEpoch(i32::MIN), LeaderEpoch(i32::MIN)),
        EpochCheck::AppendAndBump
    );
}

#[test]
fn failed_retry_backoff_and_attempts() {
    // Goal: the prototype's schedulePartitionRetry / nextAttempt rules.
    let r = FailedRetry::PROTOTYPE;
    assert_eq!(r.retry_delay_ms(-1), None, "non-retryable");
    assert_eq!(r.retry_delay_ms(0), Some(200), "attempt 0 counts as 1");
    assert_eq!(r.retry_delay_ms(1), Some(200));
    assert_eq!(r.retry_delay_ms(2), Some(400));
    assert_eq!(r.retry_delay_ms(11), Some(204_800));
    assert_eq!(r.retry_delay_ms(12), Some(300_000), "capped at max");
    assert_eq!(r.retry_delay_ms(19), Some(300_000));
    assert_eq!(r.retry_delay_ms(20), None, "attempts exhausted");
    assert_eq!(r.next_attempt(0, false), 1);
    assert_eq!(r.next_attempt(1, false), 2);
    assert_eq!(r.next_attempt(20, false), 20, "capped");
    assert_eq!(r.next_attempt(3, true), -1);
    assert_eq!(r.next_attempt(-1, false), -1);
    assert_eq!(FailedRetry::Never.retry_delay_ms(1), None);
    assert_eq!(FailedRetry::Never.next_attempt(0, false), -1);
    let disabled = FailedRetry::Exponential {
        initial_backoff_ms: 100,
        max_backoff_ms: 1000,
        max_attempts: 0,
    };
    assert_eq!(disabled.retry_delay_ms(0), None, "0 disables auto-retry");
    let huge = FailedRetry::Exponential {
        initial_backoff_ms: i64::MAX / 2,
        max_backoff_ms: i64::MAX,
        max_attempts: i16::MAX,
    };
    assert_eq!(huge.retry_delay_ms(100), Some(i64::MAX), "no overflow");
}
