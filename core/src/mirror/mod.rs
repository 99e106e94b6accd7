//! KIP-1279 cluster mirroring: the per-partition rules the destination leader and the
//! `__mirror_state` coordinator follow, as pure data and pure functions.
//!
//! - [`design`]: the design lab switches (kip1279.md A.3): a preset (`early`, `seed`,
//!   `latest`) plus ablations, parsed from `--design seed-no-pid-reset`, and the questions the
//!   broker asks of them ("does stop bump the epoch?").
//! - [`policy`]: the value types those questions answer with (failback marker, divergence
//!   policy, epoch fencing thresholds, FAILED retry backoff) and their small decision rules.
//! - [`state`]: [`MirrorPartitionState`], its persisted byte values and the transition table
//!   of each preset; [`MirrorPartitionStatus`], what the coordinator keeps per partition.
//! - [`mirror_name`]: the seed revision's `mirror.name` topic config (`<m>`, `<m>.paused`,
//!   `<m>.removed`) and the mirror-name rules.
//! - [`state_records`]: the `__mirror_state` keys and values, their codec and placement.
//! - [`state_store`]: the `__mirror_state` coordinator for one partition, with leader-epoch
//!   and state-epoch fencing (kip1279.md B §4.2).
//! - [`alignment`]: where PREPARING / LOG_ALIGNMENT truncates (LME, LMO or last mirror
//!   position) and when the replicas have converged.
//! - [`lme_lookup`]: the failback lookup on the other cluster (LME, loop and stopped
//!   checks) and when its answers are enough.
//! - [`filters`]: the mirror's topic and group filter lists (`topics.include` / `exclude`,
//!   `groups.include` / `exclude`: regexes matched as a whole), their merge with Start/Stop
//!   patterns, discovery and exclusion, and which config keys are filters.
//! - [`stopping`]: the STOPPING (failover) plan of each design as an ordered list of steps.
//!
//! Nothing here does I/O, reads a clock or draws random numbers.

pub mod alignment;
pub mod design;
pub mod filters;
pub mod lme_lookup;
pub mod mirror_name;
pub mod policy;
pub mod state;
pub mod state_records;
pub mod state_store;
pub mod stopping;

pub use alignment::{TruncationPoint, isr_converged, truncation_point};
pub use design::{Ablations, Design, DesignParseError, Preset};
pub use lme_lookup::{LmeLookup, LookupVerdict, RetryReason};
pub use mirror_name::{DesiredState, MirrorNameConfig, MirrorNameError, validate_mirror_name};
pub use policy::{
    DIVERGENCE_FAILED_MESSAGE, DivergenceAction, DivergencePolicy, EpochCheck, EpochFencing,
    FailbackMarker, FailbackMarkerKind, FailedRetry,
};
pub use state::{MirrorPartitionState, MirrorPartitionStatus, is_valid_transition};
pub use state_records::{
    LastMirrorEpochsValue, MirrorPartitionKey, MirrorPartitionStateValue, MirrorRecordError,
    MirrorStateKey, mirror_coordinator_partition, mirror_state_partition,
};
pub use state_store::{MirrorStateStore, StateWrite, StateWriteError, previous_state_after};
pub use stopping::{
    StopStep, bump_complete, last_mirror_position, last_mirrored_epoch, lso_truncation_target,
    stop_min_leader_epoch, stop_plan,
};
