//! The transition tables, checked over every (from, to) pair of every preset.
//! Reference: kip1279.md A.1 (seed, early) and B §7.2 (latest,
//! `MirrorPartitionMetadata.isValidStateTransition`).

use super::*;
use MirrorPartitionState as S;

fn design(s: &str) -> Design {
    Design::parse(s).expect("valid design")
}

/// Non-self transitions allowed in seed and early: `(to, allowed from)`.
const SEED_TABLE: &[(MirrorPartitionState, &[MirrorPartitionState])] = &[
    (S::Unknown, &[]),
    (S::Preparing, &[S::Unknown, S::Stopped]),
    (S::EpochFencing, &[]),
    (S::UleRecovery, &[]),
    (S::Mirroring, &[S::Preparing, S::Paused]),
    (S::Pausing, &[S::Mirroring]),
    (S::Paused, &[S::Pausing]),
    (S::Stopping, &[S::Preparing, S::Mirroring, S::Failed]),
    (S::Stopped, &[S::Stopping]),
    (
        S::Failed,
        &[
            S::Unknown,
            S::Preparing,
            S::Mirroring,
            S::Pausing,
            S::Paused,
            S::Stopping,
            S::Stopped,
        ],
    ),
];

/// Non-self transitions allowed in latest (B §7.2 verbatim, LOG_ALIGNMENT = PREPARING).
const LATEST_TABLE: &[(MirrorPartitionState, &[MirrorPartitionState])] = &[
    (S::Unknown, &[]),
    (S::Preparing, &[S::Unknown, S::Stopped, S::Failed]),
    (S::EpochFencing, &[S::Mirroring]),
    (S::UleRecovery, &[S::Mirroring]),
    (
        S::Mirroring,
        &[
            S::Preparing,
            S::EpochFencing,
            S::Paused,
            S::UleRecovery,
            S::Failed,
        ],
    ),
    (S::Pausing, &[S::Mirroring]),
    (S::Paused, &[S::Pausing]),
    (
        S::Stopping,
        &[
            S::Preparing,
            S::EpochFencing,
            S::Mirroring,
            S::Pausing,
            S::Paused,
            S::UleRecovery,
            S::Failed,
        ],
    ),
    (S::Stopped, &[S::Stopping]),
    (
        S::Failed,
        &[
            S::Unknown,
            S::Preparing,
            S::EpochFencing,
            S::UleRecovery,
            S::Mirroring,
            S::Pausing,
            S::Paused,
            S::Stopping,
            S::Stopped,
        ],
    ),
];

fn check_table(d: &Design, table: &[(MirrorPartitionState, &[MirrorPartitionState])]) {
    assert_eq!(table.len(), S::ALL.len());
    for &(to, froms) in table {
        for from in S::ALL {
            let self_ok = from == to && (d.preset() == Preset::Latest || !to.is_latest_only());
            let want = self_ok || froms.contains(&from);
            assert_eq!(
                is_valid_transition(d, from, to),
                want,
                "{d}: {from} -> {to}"
            );
        }
    }
}

#[test]
fn seed_transition_table() {
    check_table(&design("seed"), SEED_TABLE);
}

#[test]
fn early_uses_the_seed_table() {
    check_table(&design("early"), SEED_TABLE);
}

#[test]
fn latest_transition_table() {
    check_table(&design("latest"), LATEST_TABLE);
}

#[test]
fn ablations_do_not_change_the_tables() {
    // Goal: ablations remove mechanisms, never transitions.
    check_table(
        &design("seed-no-pid-reset-no-epoch-bump-no-isr-wait-no-lso-truncation-no-read-only"),
        SEED_TABLE,
    );
    check_table(&design("latest-no-read-only"), LATEST_TABLE);
}

#[test]
fn seed_lifecycle_paths() {
    // Goal: A.1's walks are valid step by step: start, pause/resume, stop, failback.
    let d = design("seed");
    let path = [
        S::Unknown,
        S::Preparing,
        S::Mirroring,
        S::Pausing,
        S::Paused,
        S::Mirroring,
        S::Stopping,
        S::Stopped,
        S::Preparing,
        S::Mirroring,
        S::Failed,
        S::Stopping,
        S::Stopped,
    ];
    for w in path.windows(2) {
        assert!(is_valid_transition(&d, w[0], w[1]), "{} -> {}", w[0], w[1]);
    }
    // Resume never goes back through PREPARING: no truncation on resume.
    assert!(!is_valid_transition(&d, S::Paused, S::Preparing));
    // Stop from PAUSED is a latest-only path.
    assert!(!is_valid_transition(&d, S::Paused, S::Stopping));
    assert!(is_valid_transition(
        &design("latest"),
        S::Paused,
        S::Stopping
    ));
}

#[test]
fn byte_values_match_the_prototype() {
    // Goal: persisted bytes are the latest prototype's enum values (B §7.1).
    let want = [
        (S::Unknown, -1),
        (S::Preparing, 0),
        (S::EpochFencing, 1),
        (S::UleRecovery, 2),
        (S::Mirroring, 3),
        (S::Pausing, 4),
        (S::Paused, 5),
        (S::Stopping, 6),
        (S::Stopped, 7),
        (S::Failed, 8),
    ];
    for (s, v) in want {
        assert_eq!(s.value(), v);
        assert_eq!(S::from_value(v), Some(s));
    }
    for v in [9, 16, 100, -2, i8::MIN, i8::MAX] {
        assert_eq!(S::from_value(v), None, "{v}");
    }
}

#[test]
fn names_are_upper_case_and_parse_back() {
    for s in S::ALL {
        let name = s.to_string();
        assert_eq!(name, name.to_uppercase());
        assert_eq!(S::from_name(&name), Some(s));
    }
    assert_eq!(S::Preparing.name_in(&design("latest")), "LOG_ALIGNMENT");
    assert_eq!(S::Preparing.name_in(&design("seed")), "PREPARING");
    assert_eq!(S::from_name("LOG_ALIGNMENT"), Some(S::Preparing));
    assert_eq!(S::from_name("mirroring"), None);
}

#[test]
fn unknown_status_defaults() {
    let s = MirrorPartitionStatus::default();
    assert_eq!(s.state, S::Unknown);
    assert_eq!(s.state_epoch, 0);
    assert_eq!(s.leader_epoch, LeaderEpoch::UNDEFINED);
    assert!(!s.is_non_retryable());
    let failed = MirrorPartitionStatus {
        state: S::Failed,
        retry_attempt: MirrorPartitionStatus::NON_RETRYABLE,
        ..s
    };
    assert!(failed.is_non_retryable());
}
