//! Ghost state (TigerBeetle's `commits`, the TLA+ specs' "true HW" and "acked values"): what
//! the harness knows happened, kept outside the brokers and fed only by events.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use mirror_core::keyed_map::KeyedMap;
use mirror_core::protocol::{ClusterIdx, NodeId};
use mirror_core::record::RecordBatch;
use mirror_core::types::{LeaderEpoch, Offset, ProducerEpoch, ProducerId, TopicId, TopicPartition};

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
    /// How many records they held (control records included).
    pub records: i64,
    /// Milliseconds of producer time they spanned: the newest dropped record's timestamp
    /// minus the oldest's (0 for one batch written at once).
    pub span_ms: i64,
    /// Why (`unclean_election`, `unflushed_loss_on_last_isr_member`, ...).
    pub cause: String,
    /// When (µs).
    pub t_micros: u64,
    /// The committed transaction markers the cut dropped: a transaction whose marker went
    /// with it hangs in any history that still holds its data (see
    /// `kafka::cluster::kafka_loss_explains_hang`). Not reported: it explains, it is no loss.
    #[serde(skip)]
    pub markers: Vec<CutMarker>,
}

impl DeclaredLoss {
    /// [`Self::cause`] of a KIP-1279 mirror truncation (LME alignment, the stop's LSO cut, a
    /// source divergence): the mirror's own doing, not one of Kafka's losses.
    pub const MIRROR_TRUNCATION: &'static str = "mirror_truncation";

    /// [`Self::partition`] of `tp` on `cluster`.
    #[must_use]
    pub fn partition_of(cluster: ClusterIdx, tp: &TopicPartition) -> String {
        format!("{}:{tp}", cluster.0)
    }

    /// True for a KIP-1279 mirror truncation.
    #[must_use]
    pub fn is_mirror_truncation(&self) -> bool {
        self.cause == Self::MIRROR_TRUNCATION
    }
}

/// A committed COMMIT or ABORT marker that a declared loss dropped.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct CutMarker {
    /// The producer whose transaction it ended.
    pub producer_id: ProducerId,
    /// Its epoch.
    pub producer_epoch: ProducerEpoch,
    /// When the coordinator wrote it (the batch's timestamp, ms).
    pub timestamp_ms: i64,
}

/// What a declared loss removed from a committed history.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CutCount {
    /// Committed batches dropped.
    pub batches: usize,
    /// Records they held.
    pub records: i64,
    /// Newest minus oldest record timestamp among them (ms).
    pub span_ms: i64,
    /// The transaction markers among them.
    pub markers: Vec<CutMarker>,
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
    /// Leader epochs in which a leader of this cluster appended records of its own (client
    /// writes, markers, a stop's reset; not mirrored batches): with the same epoch in another
    /// cluster's, one epoch number names two histories (F1, `chaos::converge`).
    pub own_epochs: BTreeSet<LeaderEpoch>,
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
        self.cut_counted(from).batches
    }

    /// [`Self::cut_from`], counting what went.
    pub fn cut_counted(&mut self, from: Offset) -> CutCount {
        let cut: Vec<Offset> = self.committed.range(from..).map(|(o, _)| *o).collect();
        let mut count = CutCount {
            batches: cut.len(),
            ..CutCount::default()
        };
        let mut span: Option<(i64, i64)> = None;
        let mut tally = |b: &RecordBatch| {
            count.records += i64::from(b.record_count());
            if matches!(
                b.control_record(),
                Some(mirror_core::record::ControlRecord::EndTxn { .. })
            ) {
                count.markers.push(CutMarker {
                    producer_id: b.producer_id(),
                    producer_epoch: b.producer_epoch(),
                    timestamp_ms: b.max_timestamp(),
                });
            }
            let (lo, hi) = (b.header().base_timestamp, b.max_timestamp());
            span = Some(span.map_or((lo, hi), |(a, z)| (a.min(lo), z.max(hi))));
        };
        for o in &cut {
            if let Some(b) = self.committed.remove(o) {
                tally(&b);
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
            tally(&b);
            self.archive(b);
        }
        self.true_hw = self.true_hw.min(from);
        count.span_ms = span.map_or(0, |(lo, hi)| hi - lo);
        count
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
            .any(|b| b.value_at(offset) == Some(value.map(AsRef::as_ref)))
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
    /// The producer id that wrote it (-1 for a plain producer).
    pub producer_id: mirror_core::types::ProducerId,
}

/// A `__transaction_state` replica dropped records (a truncation of Kafka's own, not a
/// declared loss): coordinator writes that never committed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnLogTruncation {
    /// Event number of the truncation.
    pub at: u64,
    /// Event numbers at which the replica had appended the batches it dropped.
    pub dropped_appended_at: Vec<u64>,
}

/// All ghost state of a run.
#[derive(Clone, Debug, Default)]
pub struct Ghost {
    /// Per partition.
    pub partitions: KeyedMap<PartitionKey, GhostPartition>,
    /// Every acknowledged write.
    pub acked: Vec<AckedWrite>,
    /// Declared data-loss events.
    pub losses: Vec<DeclaredLoss>,
    /// Nodes whose last restart recovered less than they had (unflushed data lost).
    pub lost_unflushed: BTreeMap<(NodeId, TopicPartition), Offset>,
    /// Replicas whose last recovery cut the log at a corrupt batch (bit rot in flushed data):
    /// the first offset lost.
    pub lost_to_corruption: BTreeMap<(NodeId, TopicPartition), Offset>,
    /// Each replica's last corrupt-batch cut, kept after it appends past it (unlike
    /// [`Self::lost_to_corruption`]): a transaction whose marker went with the rotten batches
    /// stays open however far the log grows (`kafka_loss_explains_hang`).
    pub last_corruption_cut: BTreeMap<(NodeId, TopicPartition), Offset>,
    /// Per cluster and `__transaction_state` partition, every time a replica of it dropped
    /// records. Kafka's transaction coordinator loads its partition up to the log end, so it
    /// may have answered clients from them (`KafkaWorld::coordinator_lost_open_txn`).
    pub txn_log_truncations: BTreeMap<(ClusterIdx, i32), Vec<TxnLogTruncation>>,
    /// Per `__transaction_state` replica, the last offset of each batch it holds and the
    /// event number of its append: what a truncation drops, and when it was written.
    pub txn_log_appends: BTreeMap<(NodeId, i32), Vec<(Offset, u64)>>,
}

impl Ghost {
    /// The ghost partition (created on first use).
    pub fn partition(&mut self, cluster: ClusterIdx, tp: &TopicPartition) -> &mut GhostPartition {
        self.partitions
            .get_or_insert_with(&(cluster, tp.clone()), GhostPartition::default)
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

/// Declared losses of a run by cause, and the failover RPO of each stop: what a run summary
/// prints (records, and milliseconds of producer time).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct LossSummary {
    /// Per cause: `(events, batches, records, span_ms)`; `span_ms` sums each event's span.
    pub by_cause: BTreeMap<String, (usize, usize, i64, i64)>,
    /// Failover RPO per stopped partition.
    pub rpo: Vec<super::mirror::Rpo>,
}

impl LossSummary {
    /// Groups `losses` by cause.
    #[must_use]
    pub fn of(losses: &[DeclaredLoss], rpo: &[super::mirror::Rpo]) -> Self {
        let mut by_cause: BTreeMap<String, (usize, usize, i64, i64)> = BTreeMap::new();
        for l in losses {
            let e = by_cause.entry(l.cause.clone()).or_default();
            e.0 += 1;
            e.1 += l.batches;
            e.2 += l.records;
            e.3 += l.span_ms;
        }
        Self {
            by_cause,
            rpo: rpo.to_vec(),
        }
    }

    /// One line per cause and one for the RPO, or nothing when nothing was lost.
    #[must_use]
    pub fn lines(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .by_cause
            .iter()
            .map(|(cause, (n, batches, records, ms))| {
                format!("declared loss {cause}: {n} event(s), {records} record(s) in {batches} batch(es), {ms} ms of producer time")
            })
            .collect();
        if !self.rpo.is_empty() {
            let records: i64 = self.rpo.iter().map(|r| r.records).sum();
            let ms = self.rpo.iter().map(|r| r.ms).max().unwrap_or(0);
            out.push(format!(
                "failover RPO: {records} committed source record(s) not mirrored at the stop over {} partition(s), at most {ms} ms of source time",
                self.rpo.len()
            ));
        }
        out
    }
}
