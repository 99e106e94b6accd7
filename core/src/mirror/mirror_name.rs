//! The seed revision's topic config `mirror.name`: it says which mirror a topic belongs to
//! and what the operator wants for it (kip1279.md A.1, B §4.1 item 2).
//!
//! - `<mirror>` = mirror the topic ([`DesiredState::Mirroring`]);
//! - `<mirror>.paused` = paused ([`DesiredState::Paused`]);
//! - `<mirror>.removed` = stopped, i.e. failed over ([`DesiredState::Stopped`]).
//!
//! The suffix is parsed from the right, and mirror names may not end in `.paused` or
//! `.removed` (AS3, RS3), so the encoding is unambiguous: `a.paused.paused` is refused
//! because its mirror part `a.paused` is not a valid mirror name.

use std::fmt;

use thiserror::Error;

use crate::protocol::ErrorCode;

/// Kafka's maximum topic-name length (`Topic.MAX_NAME_LENGTH`); mirror names follow the
/// topic-name rules.
pub const MAX_MIRROR_NAME_LENGTH: usize = 249;
/// Suffix of a paused topic's `mirror.name`.
pub const PAUSED_SUFFIX: &str = ".paused";
/// Suffix of a stopped topic's `mirror.name`.
pub const REMOVED_SUFFIX: &str = ".removed";

/// What the operator asked for a mirror topic (the controller's view; the partition state
/// follows it).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DesiredState {
    /// StartMirrorTopics / ResumeMirrorTopics.
    Mirroring,
    /// PauseMirrorTopics.
    Paused,
    /// StopMirrorTopics (failover).
    Stopped,
}

/// Why a mirror name (or a `mirror.name` value) was refused.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum MirrorNameError {
    /// Empty name.
    #[error("mirror name is empty")]
    Empty,
    /// `.` or `..`.
    #[error("mirror name cannot be '{0}'")]
    Reserved(String),
    /// Longer than [`MAX_MIRROR_NAME_LENGTH`].
    #[error("mirror name is {len} characters long, the maximum is {MAX_MIRROR_NAME_LENGTH}")]
    TooLong {
        /// The name's length.
        len: usize,
    },
    /// A character outside `[a-zA-Z0-9._-]`.
    #[error("mirror name contains the illegal character {0:?}")]
    IllegalCharacter(char),
    /// Ends in `.paused` or `.removed`, which the `mirror.name` encoding reserves.
    #[error("mirror name '{name}' may not end in '{suffix}'")]
    ReservedSuffix {
        /// The name.
        name: String,
        /// The reserved suffix it ends with.
        suffix: &'static str,
    },
}

impl From<MirrorNameError> for ErrorCode {
    fn from(_: MirrorNameError) -> ErrorCode {
        ErrorCode::InvalidClusterMirrorName
    }
}

/// Checks `name` against Kafka's topic-name rules (`Topic.validate`) and the reserved
/// suffixes. Called by CreateMirror and when decoding `mirror.name`.
pub fn validate_mirror_name(name: &str) -> Result<(), MirrorNameError> {
    if name.is_empty() {
        return Err(MirrorNameError::Empty);
    }
    if name == "." || name == ".." {
        return Err(MirrorNameError::Reserved(name.to_owned()));
    }
    if name.len() > MAX_MIRROR_NAME_LENGTH {
        return Err(MirrorNameError::TooLong { len: name.len() });
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(MirrorNameError::IllegalCharacter(c));
    }
    for suffix in [PAUSED_SUFFIX, REMOVED_SUFFIX] {
        if name.ends_with(suffix) {
            return Err(MirrorNameError::ReservedSuffix {
                name: name.to_owned(),
                suffix,
            });
        }
    }
    Ok(())
}

/// A decoded `mirror.name` value: the mirror and the desired state.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MirrorNameConfig {
    mirror: String,
    desired: DesiredState,
}

impl MirrorNameConfig {
    /// Builds the config for `mirror` (validated) and `desired`.
    pub fn new(mirror: &str, desired: DesiredState) -> Result<MirrorNameConfig, MirrorNameError> {
        validate_mirror_name(mirror)?;
        Ok(MirrorNameConfig {
            mirror: mirror.to_owned(),
            desired,
        })
    }

    /// Decodes a `mirror.name` value, stripping at most one suffix from the right.
    pub fn parse(value: &str) -> Result<MirrorNameConfig, MirrorNameError> {
        let (mirror, desired) = if let Some(m) = value.strip_suffix(PAUSED_SUFFIX) {
            (m, DesiredState::Paused)
        } else if let Some(m) = value.strip_suffix(REMOVED_SUFFIX) {
            (m, DesiredState::Stopped)
        } else {
            (value, DesiredState::Mirroring)
        };
        MirrorNameConfig::new(mirror, desired)
    }

    /// The mirror the topic belongs to.
    #[must_use]
    pub fn mirror(&self) -> &str {
        &self.mirror
    }

    /// What the operator wants for the topic.
    #[must_use]
    pub fn desired(&self) -> DesiredState {
        self.desired
    }

    /// The same mirror with another desired state (Stop/Pause/Resume rewrite the config).
    #[must_use]
    pub fn with_desired(&self, desired: DesiredState) -> MirrorNameConfig {
        MirrorNameConfig {
            mirror: self.mirror.clone(),
            desired,
        }
    }

    /// The `mirror.name` value to store.
    #[must_use]
    pub fn to_config_value(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for MirrorNameConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.mirror)?;
        match self.desired {
            DesiredState::Mirroring => Ok(()),
            DesiredState::Paused => f.write_str(PAUSED_SUFFIX),
            DesiredState::Stopped => f.write_str(REMOVED_SUFFIX),
        }
    }
}

#[cfg(test)]
#[path = "mirror_name_test.rs"]
mod tests;
