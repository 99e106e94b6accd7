//! Design lab switches: parsing, canonical names, and the answers each design gives.
//! Reference: kip1279.md A.3.

use super::*;
use crate::mirror::policy::{DivergenceAction, FailbackMarkerKind, FailedRetry};

fn d(s: &str) -> Design {
    Design::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn all_ablation_sets() -> Vec<Ablations> {
    (0u8..128)
        .map(|bits| Ablations {
            no_pid_reset: bits & 1 != 0,
            no_epoch_bump_at_stop: bits & 2 != 0,
            no_isr_wait: bits & 4 != 0,
            no_lso_truncation: bits & 8 != 0,
            no_read_only: bits & 16 != 0,
            no_lme_truncation: bits & 32 != 0,
            no_idempotent_stop: bits & 64 != 0,
        })
        .collect()
}

#[test]
fn parses_presets_and_ablations() {
    // Goal: the brief's examples parse to the expected flags.
    assert_eq!(d("seed"), Design::preset_only(Preset::Seed));
    assert_eq!(d("early").preset(), Preset::Early);
    assert_eq!(d("latest").preset(), Preset::Latest);
    assert_eq!(Design::default(), d("seed"));
    let a = d("seed-no-pid-reset").ablations();
    assert!(a.no_pid_reset && !a.no_epoch_bump_at_stop && !a.no_isr_wait);
    let a = d("seed-no-epoch-bump-no-isr-wait").ablations();
    assert!(a.no_epoch_bump_at_stop && a.no_isr_wait && !a.no_pid_reset);
    // Order of ablations in the input does not matter; Display is canonical.
    assert_eq!(
        d("seed-no-isr-wait-no-epoch-bump").to_string(),
        "seed-no-epoch-bump-no-isr-wait"
    );
    assert_eq!("latest".parse::<Design>(), Ok(d("latest")));
}

#[test]
fn alias_no_abort_markers_is_no_lso_truncation() {
    // Goal: for latest the LSO-truncation ablation removes the ABORT markers; both names work.
    let a = d("latest-no-abort-markers");
    assert_eq!(a, d("latest-no-lso-truncation"));
    assert_eq!(a.to_string(), "latest-no-lso-truncation");
}

#[test]
fn parse_errors_name_the_bad_token() {
    // Goal: every refusal is typed and names what was wrong.
    use DesignParseError as E;
    let cases: &[(&str, DesignParseError)] = &[
        ("", E::Empty),
        ("SEED", E::UnknownPreset("SEED".into())),
        ("seedx", E::UnknownPreset("seedx".into())),
        ("mid-no-pid-reset", E::UnknownPreset("mid".into())),
        ("seed-no-foo", E::UnknownAblation("no-foo".into())),
        ("seed-", E::UnknownAblation(String::new())),
        (
            "seed-no-pid-resetx",
            E::UnknownAblation("no-pid-resetx".into()),
        ),
        (
            "seed-no-pid-reset-bogus-no-isr-wait",
            E::UnknownAblation("bogus".into()),
        ),
        (
            "seed-no-foo-no-isr-wait",
            E::UnknownAblation("no-foo".into()),
        ),
        (
            "seed-no-pid-reset-no-pid-reset",
            E::DuplicateAblation("no-pid-reset".into()),
        ),
        (
            "latest-no-lso-truncation-no-abort-markers",
            E::DuplicateAblation("no-abort-markers".into()),
        ),
        (
            "early-no-pid-reset",
            E::NotApplicable {
                preset: "early",
                ablation: "no-pid-reset".into(),
            },
        ),
        (
            "early-no-epoch-bump",
            E::NotApplicable {
                preset: "early",
                ablation: "no-epoch-bump".into(),
            },
        ),
    ];
    for (input, want) in cases {
        assert_eq!(Design::parse(input).as_ref(), Err(want), "input {input:?}");
        assert!(!want.to_string().is_empty());
    }
}

#[test]
fn display_round_trips_for_every_valid_design() {
    // Goal: every constructible design prints to a name that parses back to it.
    let mut valid = 0;
    for preset in Preset::ALL {
        for a in all_ablation_sets() {
            let Ok(design) = Design::new(preset, a) else {
                assert_eq!(preset, Preset::Early);
                assert!(
                    a.no_pid_reset
                        || a.no_epoch_bump_at_stop
                        || a.no_lme_truncation
                        || a.no_idempotent_stop
                );
                continue;
            };
            valid += 1;
            let name = design.to_string();
            assert_eq!(Design::parse(&name), Ok(design), "{name}");
        }
    }
    // seed and latest take every subset of the 7 ablations; early only the 3 it has.
    assert_eq!(valid, 128 + 128 + 8);
}

#[test]
fn all_named_parse_round_trip_and_cover_single_ablations() {
    // Goal: the list `mirrorsim list` shows is exactly the presets plus each applicable
    // single ablation, every name canonical.
    let named = Design::all_named();
    let mut seen = std::collections::BTreeSet::new();
    for (name, description) in &named {
        assert!(!description.is_empty(), "{name}");
        assert_eq!(d(name).to_string(), *name);
        assert!(seen.insert(*name), "duplicate {name}");
    }
    let mut expected = 0;
    for preset in Preset::ALL {
        expected += 1;
        assert!(seen.contains(preset.name()));
        for token in [
            "no-pid-reset",
            "no-epoch-bump",
            "no-isr-wait",
            "no-lso-truncation",
            "no-read-only",
            "no-lme-truncation",
            "no-idempotent-stop",
        ] {
            let name = format!("{preset}-{token}");
            if Design::parse(&name).is_ok() {
                expected += 1;
                assert!(seen.contains(name.as_str()), "{name} missing");
            }
        }
    }
    assert_eq!(named.len(), expected);
}

#[test]
fn preset_answers() {
    // Goal: the table of A.3 as the broker sees it.
    // (design, marker, truncate LSO, abort markers, bump, pid reset, isr wait, read-only)
    type Row = (
        &'static str,
        FailbackMarkerKind,
        bool,
        bool,
        bool,
        bool,
        bool,
        bool,
    );
    let rows: &[Row] = &[
        (
            "early",
            FailbackMarkerKind::LastMirroredOffset,
            true,
            false,
            false,
            false,
            true,
            true,
        ),
        (
            "seed",
            FailbackMarkerKind::LastMirroredEpoch,
            true,
            false,
            true,
            true,
            true,
            true,
        ),
        (
            "latest",
            FailbackMarkerKind::LastMirrorPosition,
            false,
            true,
            true,
            true,
            true,
            true,
        ),
    ];
    for &(name, marker, lso, abort, bump, pid, isr, ro) in rows {
        let x = d(name);
        assert_eq!(x.failback_marker(), marker, "{name}");
        assert_eq!(x.stop_truncates_to_lso(), lso, "{name}");
        assert_eq!(x.stop_writes_abort_markers(), abort, "{name}");
        assert_eq!(x.stop_bumps_epoch(), bump, "{name}");
        assert_eq!(x.stop_writes_pid_reset(), pid, "{name}");
        assert_eq!(x.prepare_waits_for_isr(), isr, "{name}");
        assert_eq!(x.read_only_enforced(), ro, "{name}");
    }
    // Only the late prototype's convergence wait has a min-ISR gate (B §8.1 step 4); A.1
    // waits only until no ISR member is ahead of the leader.
    assert!(!d("early").prepare_waits_for_min_isr());
    assert!(!d("seed").prepare_waits_for_min_isr());
    assert!(d("latest").prepare_waits_for_min_isr());
    // Latest re-asserts FAILED before the desired state (B §7.4 step 2); seed stops it.
    assert!(d("early").stop_overrides_failed());
    assert!(d("seed").stop_overrides_failed());
    assert!(!d("latest").stop_overrides_failed());
    // Latest fails a partition whose mirror fetch got no answer and re-writes a transition
    // whose write got none (B §7.4, §7.5); seed and early keep the state (A.1).
    for (name, latest) in [("early", false), ("seed", false), ("latest", true)] {
        assert_eq!(
            d(name).mirror_fetch_error_fails_partitions(),
            latest,
            "{name}"
        );
        assert_eq!(d(name).rewrites_unanswered_transition(), latest, "{name}");
    }
    assert_eq!(
        d("early").mirror_fetch_isolation(),
        FetchIsolation::TxnCommitted
    );
    assert_eq!(
        d("seed").mirror_fetch_isolation(),
        FetchIsolation::HighWatermark
    );
    assert_eq!(
        d("latest").mirror_fetch_isolation(),
        FetchIsolation::HighWatermark
    );
}

#[test]
fn each_ablation_changes_exactly_its_answer() {
    // Goal: an ablation removes one mechanism and nothing else.
    fn answers(x: &Design) -> [bool; 8] {
        [
            x.stop_truncates_to_lso(),
            x.stop_writes_abort_markers(),
            x.stop_bumps_epoch(),
            x.stop_writes_pid_reset(),
            x.prepare_waits_for_isr(),
            x.read_only_enforced(),
            x.prepare_truncates_above_lme(),
            x.stop_is_idempotent(),
        ]
    }
    let cases: &[(&str, &str, usize)] = &[
        ("seed", "no-lso-truncation", 0),
        ("latest", "no-lso-truncation", 1),
        ("seed", "no-epoch-bump", 2),
        ("latest", "no-epoch-bump", 2),
        ("seed", "no-pid-reset", 3),
        ("latest", "no-pid-reset", 3),
        ("early", "no-isr-wait", 4),
        ("seed", "no-isr-wait", 4),
        ("latest", "no-isr-wait", 4),
        ("early", "no-read-only", 5),
        ("seed", "no-read-only", 5),
        ("latest", "no-read-only", 5),
        ("early", "no-lso-truncation", 0),
        ("seed", "no-lme-truncation", 6),
        ("latest", "no-lme-truncation", 6),
        ("seed", "no-idempotent-stop", 7),
        ("latest", "no-idempotent-stop", 7),
    ];
    for &(preset, token, index) in cases {
        let base = answers(&d(preset));
        let ablated = answers(&d(&format!("{preset}-{token}")));
        for i in 0..8 {
            if i == index {
                assert!(base[i] && !ablated[i], "{preset}-{token} answer {i}");
            } else {
                assert_eq!(base[i], ablated[i], "{preset}-{token} answer {i}");
            }
        }
        // Policies other than the switches are untouched.
        let (b, a) = (d(preset), d(&format!("{preset}-{token}")));
        assert_eq!(b.failback_marker(), a.failback_marker());
        assert_eq!(b.divergence_policy(), a.divergence_policy());
        assert_eq!(b.epoch_fencing(), a.epoch_fencing());
        assert_eq!(b.failed_retry(), a.failed_retry());
    }
}

#[test]
fn divergence_fencing_and_retry_by_preset() {
    // Goal: seed continues after a divergence; latest recovers (ULE flag) or fails; only
    // latest fences epochs and retries FAILED.
    for name in ["early", "seed"] {
        let x = d(name);
        for flag in [false, true] {
            assert_eq!(
                x.divergence_policy().action(flag),
                DivergenceAction::TruncateAndContinue
            );
        }
        assert_eq!(x.epoch_fencing(), None);
        assert_eq!(x.failed_retry(), FailedRetry::Never);
    }
    let latest = d("latest");
    assert_eq!(
        latest.divergence_policy().action(true),
        DivergenceAction::UleRecovery
    );
    assert_eq!(
        latest.divergence_policy().action(false),
        DivergenceAction::FailNonRetryable
    );
    let fencing = latest.epoch_fencing().expect("latest fences epochs");
    assert_eq!((fencing.bump_threshold, fencing.bump_increment), (3, 10));
    assert!(matches!(
        latest.failed_retry(),
        FailedRetry::Exponential { .. }
    ));
}

#[test]
fn admin_validation_by_preset() {
    // Goal: Stop is accepted from PREPARING/MIRRORING/FAILED in seed (A.1, A.2) and from
    // MIRRORING/PAUSED only in latest (B §6.1, §7.6-1); Start/Pause/Resume are shared.
    use MirrorPartitionState as S;
    let seed_stop = [S::Preparing, S::Mirroring, S::Failed];
    let latest_stop = [S::Mirroring, S::Paused];
    for s in S::ALL {
        assert_eq!(
            d("seed").stop_allowed_from(s),
            seed_stop.contains(&s),
            "{s}"
        );
        assert_eq!(
            d("early").stop_allowed_from(s),
            seed_stop.contains(&s),
            "{s}"
        );
        assert_eq!(
            d("latest").stop_allowed_from(s),
            latest_stop.contains(&s),
            "{s}"
        );
        for x in [d("early"), d("seed"), d("latest")] {
            assert_eq!(
                x.start_allowed_from(s),
                matches!(s, S::Unknown | S::Stopped)
            );
            assert_eq!(x.pause_allowed_from(s), s == S::Mirroring);
            assert_eq!(x.resume_allowed_from(s), s == S::Paused);
        }
    }
}

#[test]
fn no_lme_truncation_parses_round_trips_and_does_not_apply_to_early() {
    // Goal: the failback-truncation ablation is a first-class token: canonical order after
    // the others, refused for early (which fails back by offset, not by epoch).
    let x = d("seed-no-lme-truncation-no-pid-reset");
    assert!(x.ablations().no_lme_truncation && x.ablations().no_pid_reset);
    assert_eq!(x.to_string(), "seed-no-pid-reset-no-lme-truncation");
    assert!(!x.prepare_truncates_above_lme());
    assert!(d("seed").prepare_truncates_above_lme());
    assert_eq!(
        Design::parse("early-no-lme-truncation"),
        Err(DesignParseError::NotApplicable {
            preset: "early",
            ablation: "no-lme-truncation".into()
        })
    );
    assert_eq!(
        Design::parse("seed-no-lme-truncation-no-lme-truncation"),
        Err(DesignParseError::DuplicateAblation(
            "no-lme-truncation".into()
        ))
    );
}

#[test]
fn no_idempotent_stop_needs_a_pid_reset_to_mark_the_stop_done() {
    // Goal: the idempotent re-drive is a mechanism of the designs that write the reset it
    // reads; early has none to remove (without a reset, `seed-no-pid-reset` finds no mark).
    assert!(d("seed").stop_is_idempotent() && d("latest").stop_is_idempotent());
    assert!(!d("early").stop_is_idempotent());
    assert!(!d("latest-no-idempotent-stop").stop_is_idempotent());
    assert_eq!(
        Design::parse("early-no-idempotent-stop"),
        Err(DesignParseError::NotApplicable {
            preset: "early",
            ablation: "no-idempotent-stop".into()
        })
    );
}
