//! A one-request client: sends one request to a broker (trying the next broker on timeout)
//! and keeps the response for the harness. Scripted steps and Kafka-level faults use it.

use std::sync::{Arc, Mutex};

use mirror_core::broker::{Message, Node, Output};
use mirror_core::protocol::{CorrelationId, NodeId, Request, Response};
use mirror_core::time::Instant;
use mirror_core::types::BrokerId;

/// Where the response lands.
pub type ResponseSlot = Arc<Mutex<Option<Response>>>;

/// The client.
pub struct OneShot {
    me: NodeId,
    brokers: Vec<BrokerId>,
    request: Request,
    slot: ResponseSlot,
    attempt: usize,
    in_flight: Option<CorrelationId>,
    deadline: Option<Instant>,
    outputs: Vec<Output>,
    timeout_ms: i64,
}

impl OneShot {
    /// A client that will send `request` to `brokers[0]` (then the next on timeout).
    #[must_use]
    pub fn new(
        me: NodeId,
        brokers: Vec<BrokerId>,
        request: Request,
        slot: ResponseSlot,
        timeout_ms: i64,
    ) -> Self {
        Self {
            me,
            brokers,
            request,
            slot,
            attempt: 0,
            in_flight: None,
            deadline: Some(Instant::ZERO),
            outputs: Vec::new(),
            timeout_ms,
        }
    }

    fn send(&mut self, now: Instant) {
        if self.brokers.is_empty() {
            self.deadline = None;
            return;
        }
        let b = self.brokers[self.attempt % self.brokers.len()];
        self.attempt += 1;
        let id = self.attempt as CorrelationId;
        self.in_flight = Some(id);
        self.deadline = Some(now.plus_millis(self.timeout_ms));
        self.outputs.push(Output::Send {
            to: NodeId::broker(self.me.cluster, b),
            id,
            message: Message::Request(self.request.clone()),
        });
    }
}

impl Node for OneShot {
    fn handle_message(
        &mut self,
        _now: Instant,
        _from: NodeId,
        id: CorrelationId,
        message: Message,
    ) {
        if self.in_flight != Some(id) {
            return;
        }
        if let Message::Response(r) = message {
            *self
                .slot
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(r);
            self.in_flight = None;
            self.deadline = None;
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        if self.deadline.is_some_and(|d| d <= now) {
            self.send(now);
        }
    }

    fn poll_output(&mut self) -> Option<Output> {
        if self.outputs.is_empty() {
            None
        } else {
            Some(self.outputs.remove(0))
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.deadline
    }
}
