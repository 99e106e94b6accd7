//! `mirror.name` encoding and mirror-name rules. Reference: kip1279.md A.1, B §4.1 item 2
//! (AS3: parse from the right; RS3: names ending in the suffixes).

use super::*;

fn cfg(mirror: &str, desired: DesiredState) -> MirrorNameConfig {
    MirrorNameConfig::new(mirror, desired).expect("valid")
}

#[test]
fn parses_desired_state_from_the_right() {
    let cases = [
        ("m1", "m1", DesiredState::Mirroring),
        ("m1.paused", "m1", DesiredState::Paused),
        ("m1.removed", "m1", DesiredState::Stopped),
        ("a.b.c", "a.b.c", DesiredState::Mirroring),
        ("a.removedx", "a.removedx", DesiredState::Mirroring),
        ("a.paused-x.removed", "a.paused-x", DesiredState::Stopped),
        ("paused", "paused", DesiredState::Mirroring),
        ("removed.paused", "removed", DesiredState::Paused),
    ];
    for (value, mirror, desired) in cases {
        let c = MirrorNameConfig::parse(value).unwrap_or_else(|e| panic!("{value}: {e}"));
        assert_eq!((c.mirror(), c.desired()), (mirror, desired), "{value}");
        assert_eq!(c.to_config_value(), value, "round trip");
    }
}

#[test]
fn double_suffix_is_refused() {
    // Goal: "a.paused.paused" would need the mirror name "a.paused", which is invalid.
    for (value, name, suffix) in [
        ("a.paused.paused", "a.paused", PAUSED_SUFFIX),
        ("a.removed.paused", "a.removed", REMOVED_SUFFIX),
        ("a.paused.removed", "a.paused", PAUSED_SUFFIX),
        ("a.removed.removed", "a.removed", REMOVED_SUFFIX),
    ] {
        assert_eq!(
            MirrorNameConfig::parse(value),
            Err(MirrorNameError::ReservedSuffix {
                name: name.to_owned(),
                suffix
            }),
            "{value}"
        );
    }
}

#[test]
fn suffix_alone_leaves_an_empty_mirror() {
    assert_eq!(
        MirrorNameConfig::parse(".paused"),
        Err(MirrorNameError::Empty)
    );
    assert_eq!(
        MirrorNameConfig::parse(".removed"),
        Err(MirrorNameError::Empty)
    );
    assert_eq!(MirrorNameConfig::parse(""), Err(MirrorNameError::Empty));
}

#[test]
fn mirror_names_follow_topic_rules() {
    assert_eq!(validate_mirror_name("dr-1_east.v2"), Ok(()));
    assert_eq!(validate_mirror_name(&"a".repeat(249)), Ok(()));
    assert_eq!(
        validate_mirror_name(&"a".repeat(250)),
        Err(MirrorNameError::TooLong { len: 250 })
    );
    assert_eq!(validate_mirror_name(""), Err(MirrorNameError::Empty));
    assert_eq!(
        validate_mirror_name("."),
        Err(MirrorNameError::Reserved(".".into()))
    );
    assert_eq!(
        validate_mirror_name(".."),
        Err(MirrorNameError::Reserved("..".into()))
    );
    assert_eq!(
        validate_mirror_name("a b"),
        Err(MirrorNameError::IllegalCharacter(' '))
    );
    assert_eq!(
        validate_mirror_name("dr/1"),
        Err(MirrorNameError::IllegalCharacter('/'))
    );
    assert_eq!(
        validate_mirror_name("é"),
        Err(MirrorNameError::IllegalCharacter('é'))
    );
    assert_eq!(
        validate_mirror_name("m.paused"),
        Err(MirrorNameError::ReservedSuffix {
            name: "m.paused".into(),
            suffix: PAUSED_SUFFIX
        })
    );
    assert_eq!(
        validate_mirror_name("m.removed"),
        Err(MirrorNameError::ReservedSuffix {
            name: "m.removed".into(),
            suffix: REMOVED_SUFFIX
        })
    );
    // The suffix words are fine elsewhere in the name.
    assert_eq!(validate_mirror_name("m.paused.x"), Ok(()));
    assert_eq!(
        ErrorCode::from(MirrorNameError::Empty),
        ErrorCode::InvalidClusterMirrorName
    );
}

#[test]
fn desired_state_rewrites() {
    // Goal: Stop / Pause / Resume rewrite the config by changing the suffix only.
    let c = cfg("m1", DesiredState::Mirroring);
    assert_eq!(
        c.with_desired(DesiredState::Paused).to_string(),
        "m1.paused"
    );
    assert_eq!(
        c.with_desired(DesiredState::Stopped).to_string(),
        "m1.removed"
    );
    assert_eq!(
        c.with_desired(DesiredState::Stopped)
            .with_desired(DesiredState::Mirroring),
        c
    );
    assert!(MirrorNameConfig::new("m.removed", DesiredState::Mirroring).is_err());
}
