//! Ghost state (TigerBeetle's `commits`, the TLA+ specs' "true HW" and "acked values"): what
//! the harness knows happened, kept outside the brokers and fed only by events.

use std::collections::BTreeMap;

use bytes::Bytes;
use mirror_core::protocol::{ClusterIdx, NodeId};
use mirror_core::record::RecordBatch;
use mirror_core::types::{LeaderEpoch, Offset, TopicId, TopicPartition};

/// A partition of one cluster.
pub type PartitionKey = (ClusterIdx, TopicPartition);

/// Why committed data may be gone: a declared data-loss event.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct DeclaredLoss {
    /// Partition (`cluster:topic-partition`).
    pub partition: String,
    /// First offset of the history that was cut.
    pub from_offset: i64,
    /// How many committed batches were dropped from the history.
    pub batches: usize,
    /// Why (`unclean_election`, `unflushed_loss_on_last_isr_member`, ...).
    pub cause: String,
    /// When (µs).
    pub t_micros: u64,
}

/// Ghost state of one partition.
#[derive(Clone, Debug, Default)]
pub struct GhostPartition {
    /// Committed history: batches below the true HW, by base offset.
    pub committed: BTreeMap<Offset, RecordBatch>,
    /// The largest HW any leader exposed (since the last declared loss).
    pub true_hw: Offset,
    /// Declared data-loss events so far.
    pub declared_losses: u32,
    /// The leader of each epoch (SingleLeader).
    pub leaders: BTreeMap<LeaderEpoch, NodeId>,
    /// Epochs elected uncleanly (declared loss when their leader takes over).
    pub unclean_epochs: Vec<LeaderEpoch>,
    /// The controller's choice of leader per epoch (`None`: offline), for
    /// [`crate::check::unclean_line::inherits_unclean_cut`].
    pub elected: BTreeMap<LeaderEpoch, Option<mirror_core::types::BrokerId>>,
    /// Batches that were committed and later dropped by a declared loss, by base offset (a
    /// mirror may have fetched them before the loss: the mirror checkers accept them).
    pub cut: BTreeMap<Offset, Vec<RecordBatch>>,
    /// The topic id this history belongs to: a topic deleted and re-created under the same
    /// name starts a new history (S9).
    pub topic_id: Option<TopicId>,
    /// When the last declared loss cut this history (µs; 0: never).
    pub last_loss_micros: u64,
}

impl GhostPartition {
    /// The committed batch containing `offset`.
    #[must_use]
    pub fn committed_batch(&self, offset: Offset) -> Option<&RecordBatch> {
        self.committed
            .range(..=offset)
            .next_back()
            .map(|(_, b)| b)
            .filter(|b| b.last_offset() >= offset)
    }

    /// Drops history from `from` on (a declared loss); returns how many batches went.
    pub fn cut_from(&mut self, from: Offset) -> usize {
        let cut: Vec<Offset> = self.committed.range(from..).map(|(o, _)| *o).collect();
        for o in &cut {
            if let Some(b) = self.committed.remove(o) {
                self.archive(b);
            }
        }
        // a batch straddling `from` goes too
        if let Some((o, b)) = self
            .committed
            .range(..from)
            .next_back()
            .map(|(o, b)| (*o, b.clone()))
            && b.last_offset() >= from
        {
            self.committed.remove(&o);
            self.archive(b);
        }
        self.true_hw = self.true_hw.min(from);
        cut.len()
    }

    /// Keeps `b` as once-exposed data that a declared loss dropped (see [`Self::was_cut`]).
    pub fn archive(&mut self, b: RecordBatch) {
        let v = self.cut.entry(b.base_offset()).or_default();
        if !v.contains(&b) {
            v.push(b);
        }
    }

    /// True when a batch holding `value` at `offset` is on a branch a declared data-loss
    /// event cut: committed once and dropped by the loss ([`Self::cut_from`]), or exposed by
    /// a stale leader of an epoch that a later unclean election superseded (archived instead
    /// of committed). kafka-semantics §2.2: the true HW is the largest HW exposed *in a
    /// non-ULE history*, and what an unclean election drops is a declared loss; §2.1: with an
    /// unclean election (`canRecoverFromSingleNodeCommittedDataLoss`) committed data may go.
    #[must_use]
    pub fn cut_holds(&self, offset: Offset, value: Option<&bytes::Bytes>) -> bool {
        self.cut
            .range(..=offset)
            .rev()
            .flat_map(|(_, v)| v.iter())
            .filter(|b| b.last_offset() >= offset)
            .any(|b| {
                crate::check::history::value_at(b, offset)
                    .as_ref()
                    .map(Option::as_ref)
                    == Some(value)
            })
    }

    /// True when `batch` was committed at its offset once and dropped by a declared loss.
    #[must_use]
    pub fn was_cut(&self, batch: &RecordBatch) -> bool {
        self.cut
            .get(&batch.base_offset())
            .is_some_and(|v| v.contains(batch))
    }
}

/// An acknowledged write, as the client saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AckedWrite {
    /// Cluster.
    pub cluster: ClusterIdx,
    /// Partition.
    pub tp: TopicPartition,
    /// Offset of the first value.
    pub base_offset: Offset,
    /// Values in offset order.
    pub values: Vec<Bytes>,
    /// acks used.
    pub acks: i16,
    /// Transactional write.
    pub transactional: bool,
    /// Event number of the ack.
    pub event_seq: u64,
}

/// All ghost state of a run.
#[derive(Clone, Debug, Default)]
pub struct Ghost {
    /// Per partition.
    pub partitions: BTreeMap<PartitionKey, GhostPartition>,
    /// Every acknowledged write.
    pub acked: Vec<AckedWrite>,
    /// Declared data-loss events.
    pub losses: Vec<DeclaredLoss>,
    /// Nodes whose last restart recovered less than they had (unflushed data lost).
    pub lost_unflushed: BTreeMap<(NodeId, TopicPartition), Offset>,
    /// Replicas whose last recovery cut the log at a corrupt batch (bit rot in flushed data):
    /// the first offset lost.
    pub lost_to_corruption: BTreeMap<(NodeId, TopicPartition), Offset>,
}

impl Ghost {
    /// The ghost partition (created on first use).
    pub fn partition(&mut self, cluster: ClusterIdx, tp: &TopicPartition) -> &mut GhostPartition {
        self.partitions.entry((cluster, tp.clone())).or_default()
    }

    /// Records that a replica of `tp` belongs to topic `id`. A different id than the one
    /// recorded means the topic was deleted and re-created under the same name: its committed
    /// history and acknowledged writes went with the old topic, so they are forgotten. Returns
    /// true when that happened.
    pub fn track_topic_id(
        &mut self,
        cluster: ClusterIdx,
        tp: &TopicPartition,
        id: TopicId,
    ) -> bool {
        let g = self.partition(cluster, tp);
        match g.topic_id {
            Some(old) if old != id => {
                *g = GhostPartition {
                    topic_id: Some(id),
                    ..GhostPartition::default()
                };
                self.acked
                    .retain(|w| !(w.cluster == cluster && w.tp == *tp));
                true
            }
            _ => {
                g.topic_id = Some(id);
                false
            }
        }
    }
}
