//! Broker registrations, heartbeats and session expiry (Kafka: `ClusterControlManager` and
//! `BrokerHeartbeatManager`). Registrations and fencing are replicated state (they live in
//! the metadata image); sessions (last contact, incarnation) are the active controller's
//! soft state and are rebuilt after a restart as Kafka does on controller activation.

use std::collections::BTreeMap;

use thiserror::Error;

use crate::broker::MetadataImage;
use crate::protocol::ErrorCode;
use crate::time::Instant;
use crate::types::BrokerId;

/// Why a broker-to-controller request was refused before reaching its API logic.
#[derive(Copy, Clone, Debug, Error, PartialEq, Eq)]
pub enum BrokerError {
    /// No registration, or an epoch other than the current registration's (Kafka:
    /// `ClusterControlManager.checkBrokerEpoch`).
    #[error("stale broker epoch {got} (current {current:?})")]
    StaleBrokerEpoch {
        /// The epoch in the request.
        got: i64,
        /// The registration's epoch, if registered.
        current: Option<i64>,
    },
    /// Another incarnation of this broker id still holds a live session (Kafka:
    /// `DuplicateBrokerRegistrationException`); the broker retries once it expires.
    #[error("broker {0} has a live session under another incarnation")]
    DuplicateBrokerRegistration(BrokerId),
}

impl From<BrokerError> for ErrorCode {
    fn from(e: BrokerError) -> Self {
        match e {
            BrokerError::StaleBrokerEpoch { .. } => ErrorCode::StaleBrokerEpoch,
            BrokerError::DuplicateBrokerRegistration(_) => ErrorCode::DuplicateBrokerRegistration,
        }
    }
}

/// A broker's fencing state after a heartbeat (Kafka: `BrokerControlState`, without
/// controlled shutdown).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BrokerControlState {
    /// Not eligible to lead or join ISRs.
    Fenced,
    /// Eligible.
    Unfenced,
}

/// Kafka: `BrokerHeartbeatManager.calculateNextBrokerState`. A fenced broker is unfenced
/// once it asks to be and has applied metadata up to its own registration record; an
/// unfenced broker that asks to be fenced is fenced.
#[must_use]
pub fn next_broker_state(
    fenced: bool,
    want_fence: bool,
    metadata_offset: i64,
    registration_offset: i64,
) -> BrokerControlState {
    match (fenced, want_fence) {
        (_, true) => BrokerControlState::Fenced,
        (true, false) if metadata_offset >= registration_offset => BrokerControlState::Unfenced,
        (true, false) => BrokerControlState::Fenced,
        (false, false) => BrokerControlState::Unfenced,
    }
}

/// Soft per-broker session state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Session {
    /// The process incarnation that registered last (`None` after a controller restart:
    /// the metadata record does not carry it).
    incarnation: Option<u64>,
    /// Last heartbeat (or registration, or controller activation).
    last_contact: Option<Instant>,
}

/// Sessions of the registered brokers.
#[derive(Clone, Debug)]
pub struct ClusterControl {
    session_timeout_ms: i64,
    sessions: BTreeMap<BrokerId, Session>,
}

impl ClusterControl {
    /// No sessions yet; `broker_session_timeout_ms` is Kafka's `broker.session.timeout.ms`.
    #[must_use]
    pub fn new(broker_session_timeout_ms: i64) -> Self {
        Self {
            session_timeout_ms: broker_session_timeout_ms,
            sessions: BTreeMap::new(),
        }
    }

    /// Kafka: `ClusterControlManager.activate` touches every registered broker with the
    /// current time. Called at the start of every input with `now`, it starts a session
    /// for each registered broker that has none (after a restart, or before the first
    /// input).
    pub fn activate(&mut self, image: &MetadataImage, now: Instant) {
        for id in image.brokers.keys() {
            let s = self.sessions.entry(*id).or_default();
            if s.last_contact.is_none() {
                s.last_contact = Some(now);
            }
        }
    }

    /// Kafka: `checkBrokerEpoch`.
    ///
    /// # Errors
    /// [`BrokerError::StaleBrokerEpoch`] when `broker_epoch` is not the registration's.
    pub fn check_broker_epoch(
        image: &MetadataImage,
        broker_id: BrokerId,
        broker_epoch: i64,
    ) -> Result<(), BrokerError> {
        match image.broker_epoch(broker_id) {
            Some(e) if e == broker_epoch => Ok(()),
            current => Err(BrokerError::StaleBrokerEpoch {
                got: broker_epoch,
                current,
            }),
        }
    }

    /// Kafka: `BrokerHeartbeatManager.hasValidSession`: unfenced and heard from within the
    /// session timeout (inclusive).
    #[must_use]
    pub fn has_valid_session(&self, image: &MetadataImage, id: BrokerId, now: Instant) -> bool {
        image.is_broker_active(id)
            && self
                .deadline(id)
                .is_some_and(|expires_after| now <= expires_after)
    }

    /// Kafka: `ClusterControlManager.registerBroker`'s duplicate check. A different (or,
    /// after a controller restart, unknown) incarnation may not replace a broker whose
    /// session is still valid.
    ///
    /// # Errors
    /// [`BrokerError::DuplicateBrokerRegistration`].
    pub fn check_registration(
        &self,
        image: &MetadataImage,
        id: BrokerId,
        incarnation: u64,
        now: Instant,
    ) -> Result<(), BrokerError> {
        let same = self
            .sessions
            .get(&id)
            .is_some_and(|s| s.incarnation == Some(incarnation));
        if image.brokers.contains_key(&id) && self.has_valid_session(image, id, now) && !same {
            return Err(BrokerError::DuplicateBrokerRegistration(id));
        }
        Ok(())
    }

    /// Records a (committed) registration by `incarnation`.
    pub fn on_registered(&mut self, id: BrokerId, incarnation: u64, now: Instant) {
        self.sessions.insert(
            id,
            Session {
                incarnation: Some(incarnation),
                last_contact: Some(now),
            },
        );
    }

    /// A heartbeat arrived: the session is renewed.
    pub fn touch(&mut self, id: BrokerId, now: Instant) {
        self.sessions.entry(id).or_default().last_contact = Some(now);
    }

    /// The last instant at which the broker's session is still valid.
    fn deadline(&self, id: BrokerId) -> Option<Instant> {
        let last = self.sessions.get(&id)?.last_contact?;
        Some(last.plus_millis(self.session_timeout_ms))
    }

    /// Unfenced brokers whose session has expired at `now` (Kafka fences a broker once
    /// `lastContact + sessionTimeout < now`), oldest contact first, then by id.
    #[must_use]
    pub fn expired_sessions(&self, image: &MetadataImage, now: Instant) -> Vec<BrokerId> {
        let mut out: Vec<(Instant, BrokerId)> = image
            .brokers
            .iter()
            .filter(|(_, b)| !b.fenced)
            .filter_map(|(id, _)| Some((self.deadline(*id)?, *id)))
            .filter(|(d, _)| *d < now)
            .collect();
        out.sort();
        out.into_iter().map(|(_, id)| id).collect()
    }

    /// When the next unfenced broker's session expires (the first instant past its
    /// deadline), for `poll_timeout`.
    #[must_use]
    pub fn next_expiry(&self, image: &MetadataImage) -> Option<Instant> {
        image
            .brokers
            .iter()
            .filter(|(_, b)| !b.fenced)
            .filter_map(|(id, _)| self.deadline(*id))
            .min()
            .map(|d| d.plus_micros(1))
    }
}
