//! FAILED with retries (kip1279.md A.3 `latest`, B §7.3-§7.4 `schedulePartitionRetry`): a
//! retryable failure returns to its previous state after an exponential backoff; the seed and
//! early designs never retry (FAILED is for non-retryable conditions).

use crate::broker::broker::Broker;
use crate::broker::output::Event;
use crate::broker::timers::TimerId;
use crate::mirror::FailedRetry;
use crate::mirror::{MirrorPartitionState as S, MirrorPartitionStatus, is_valid_transition};
use crate::protocol::ErrorCode;
use crate::protocol::metadata::ConfigResourceRef;
use crate::types::{TopicId, TopicPartition};

use super::manager::MirrorStep;

/// Mirror config: the first FAILED retry's backoff (B §5.1
/// `mirror.failed.retry.initial.backoff.ms`, default 100).
pub const FAILED_RETRY_INITIAL_BACKOFF_CONFIG: &str = "mirror.failed.retry.initial.backoff.ms";
/// Mirror config: the cap of the doubling backoff (B §5.1 `mirror.failed.retry.max.backoff.ms`,
/// default 300000).
pub const FAILED_RETRY_MAX_BACKOFF_CONFIG: &str = "mirror.failed.retry.max.backoff.ms";
/// Mirror config: attempts before a FAILED partition waits for RecoverMirrorTopics (B §5.1
/// `mirror.failed.retry.max.attempts`, default 20; 0 disables automatic retries).
pub const FAILED_RETRY_MAX_ATTEMPTS_CONFIG: &str = "mirror.failed.retry.max.attempts";

impl Broker {
    /// The design's FAILED retry policy with the mirror's `mirror.failed.retry.*` configs
    /// applied (a design without retries ignores them). A value that does not parse, or a
    /// negative one, keeps the default, as the refresh interval does.
    fn failed_retry_of(&self, mirror: &str) -> FailedRetry {
        let FailedRetry::Exponential {
            initial_backoff_ms,
            max_backoff_ms,
            max_attempts,
        } = self.mirror_design().failed_retry()
        else {
            return FailedRetry::Never;
        };
        let ms = |key: &str, default: i64| {
            self.mirror_config(mirror, key)
                .and_then(|v| v.trim().parse::<i64>().ok())
                .filter(|v| *v >= 0)
                .unwrap_or(default)
        };
        let attempts = self
            .mirror_config(mirror, FAILED_RETRY_MAX_ATTEMPTS_CONFIG)
            .and_then(|v| v.trim().parse::<i16>().ok())
            .filter(|v| *v >= 0)
            .unwrap_or(max_attempts);
        FailedRetry::Exponential {
            initial_backoff_ms: ms(FAILED_RETRY_INITIAL_BACKOFF_CONFIG, initial_backoff_ms),
            max_backoff_ms: ms(FAILED_RETRY_MAX_BACKOFF_CONFIG, max_backoff_ms),
            max_attempts: attempts,
        }
    }

    // ------------------------------------------------------------------ FAILED retries

    /// FAILED entry action (B §7.3 `schedulePartitionRetry`): with the design's retries, a
    /// retryable failure goes back to its previous state (PREPARING when there is none) after
    /// an exponential backoff. The prototype adds 20 % jitter; the core has no randomness, so
    /// the delay is exact. No retry when non-retryable, when the attempts are used up
    /// (`mirror.failed.retry.max.attempts`: "requires manual intervention"), or when the
    /// previous state cannot be entered from FAILED (B §7.6-2: the retry is skipped and the
    /// partition stays FAILED).
    pub(in crate::broker) fn failed_schedule_retry(&mut self, tp: &TopicPartition) {
        let Some(mirror) = self.mirror_runs.get(tp).map(|r| r.mirror.clone()) else {
            return;
        };
        let retry = self.failed_retry_of(&mirror);
        let Some(r) = self.mirror_runs.get_mut(tp) else {
            return;
        };
        let Some(status) = r.status.as_ref() else {
            return;
        };
        let Some(delay) = retry.retry_delay_ms(status.retry_attempt) else {
            return;
        };
        let at = self.now.plus_millis(delay);
        r.step = MirrorStep::RetryAt(at);
        self.timers.set_if_earlier(TimerId::MirrorRetry, at);
    }

    /// The retry timer of a FAILED run fired (or a re-drive came early).
    pub(in crate::broker) fn failed_retry_continue(&mut self, tp: &TopicPartition) {
        let Some(r) = self.mirror_runs.get(tp) else {
            return;
        };
        let MirrorStep::RetryAt(at) = r.step else {
            return;
        };
        if self.now < at {
            self.timers.set_if_earlier(TimerId::MirrorRetry, at);
            return;
        }
        let Some(status) = r.status.clone() else {
            return;
        };
        if let Some(r) = self.mirror_runs.get_mut(tp) {
            r.step = MirrorStep::Idle;
        }
        let Some(target) = self.failed_return_target(tp, &status, status.retry_attempt) else {
            return;
        };
        // The retry keeps the attempt counter: only a successful fetch clears it (B §7.4
        // `clearFailedStateAndPersist`), so a partition that fails again backs off longer.
        let reason = status.error_message.clone().unwrap_or_default();
        self.mirror_write_with(
            tp,
            Some(target),
            None,
            Some((&reason, status.retry_attempt)),
        );
    }

    /// The state a FAILED partition returns to (a retry or RecoverMirrorTopics): its
    /// previous state, PREPARING when there is none. `None`, traced as skipped, when FAILED
    /// cannot enter it (B §7.6-2: the partition stays FAILED).
    fn failed_return_target(
        &mut self,
        tp: &TopicPartition,
        status: &MirrorPartitionStatus,
        attempt: i16,
    ) -> Option<S> {
        let target = match status.previous_state {
            S::Unknown => S::Preparing,
            s => s,
        };
        if is_valid_transition(&self.config.mirror_design, S::Failed, target) {
            return Some(target);
        }
        self.emit(Event::MirrorRetrySkipped {
            tp: tp.clone(),
            target,
            attempt,
        });
        None
    }

    /// Persists FAILED for a condition the design may retry: the attempt counter is the
    /// prototype's `nextAttempt` (B §7.4); without retries it is non-retryable.
    pub(in crate::broker) fn mirror_fail_retryable(&mut self, tp: &TopicPartition, reason: &str) {
        let Some(r) = self.mirror_runs.get(tp) else {
            return;
        };
        let retry = self.failed_retry_of(&r.mirror);
        let current = r.status.as_ref().map_or(0, |s| s.retry_attempt);
        self.mirror_fail_with(tp, reason, retry.next_attempt(current, false));
    }

    /// A successful mirror append clears a retry counter left by an earlier FAILED (B §7.4
    /// `clearFailedStateAndPersist`), in memory and with the next write.
    pub(in crate::broker) fn mirror_clear_retry_counter(&mut self, tp: &TopicPartition) {
        if let Some(s) = self
            .mirror_runs
            .get_mut(tp)
            .and_then(|r| r.status.as_mut())
            .filter(|s| s.state == S::Mirroring && s.retry_attempt > 0)
        {
            s.retry_attempt = 0;
            s.error_message = None;
        }
    }

    /// RecoverMirrorTopics on this broker (B §6, `writeRecoveryRecords`): every FAILED
    /// partition of `topics` in `mirror` that this broker leads goes back to its previous
    /// state (PREPARING when there is none) with RetryAttempt 0, also a non-retryable one.
    /// A previous state FAILED cannot enter is skipped, as a retry is (B §7.6-2). Per topic:
    /// UNKNOWN_TOPIC_OR_PARTITION when it is not a topic of `mirror` here, else NONE. Only
    /// the latest design has the RPC; the others answer INVALID_REQUEST.
    pub(in crate::broker) fn mirror_recover_topics(
        &mut self,
        mirror: &str,
        topics: &[String],
    ) -> Vec<(String, ErrorCode, TopicId)> {
        let supported = self.mirror_design().failed_retry() != FailedRetry::Never;
        // A mirror this broker's metadata does not define: every topic answers
        // UNKNOWN_CLUSTER_MIRROR, as the controller answers the other topic operations.
        let defined = self
            .image
            .configs_of(ConfigResourceRef::Mirror(mirror))
            .is_some_and(|c| !c.is_empty());
        let mut results = Vec::new();
        for topic in topics {
            let id = self.image.topic_id(topic).unwrap_or(TopicId::ZERO);
            if !supported {
                results.push((topic.clone(), ErrorCode::InvalidRequest, id));
                continue;
            }
            if !defined {
                results.push((topic.clone(), ErrorCode::UnknownClusterMirror, id));
                continue;
            }
            let member = self
                .mirror_membership(topic)
                .is_some_and(|m| m.mirror_name == mirror);
            if !member {
                results.push((topic.clone(), ErrorCode::UnknownTopicOrPartition, id));
                continue;
            }
            let failed: Vec<(TopicPartition, MirrorPartitionStatus)> = self
                .mirror_runs
                .iter()
                .filter(|(tp, r)| {
                    tp.topic.as_ref() == topic.as_str()
                        && r.mirror == mirror
                        && matches!(r.step, MirrorStep::Idle | MirrorStep::RetryAt(_))
                })
                .filter_map(|(tp, r)| {
                    r.status
                        .clone()
                        .filter(|s| s.state == S::Failed)
                        .map(|s| (tp.clone(), s))
                })
                .collect();
            for (tp, status) in failed {
                let Some(target) = self.failed_return_target(&tp, &status, 0) else {
                    continue;
                };
                if let Some(r) = self.mirror_runs.get_mut(&tp) {
                    r.step = MirrorStep::Idle;
                    // The recovery record carries neither counter nor reason; DescribeMirrors
                    // answers from this status, so it drops both too.
                    if let Some(s) = r.status.as_mut() {
                        s.retry_attempt = 0;
                        s.error_message = None;
                    }
                }
                self.mirror_write(&tp, Some(target), None);
            }
            results.push((topic.clone(), ErrorCode::None, id));
        }
        results
    }
}
