//! [`Tap`]: what a chaos run hands back besides its verdict when a report or a dump asks for
//! it. A run executes on its own thread inside madsim, and the world is gone when it returns;
//! the tap is the shared slot the run fills (a recorder attached to the world from its first
//! event, a replica's files copied at the very end). Without a tap the run does no extra work.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use mirror_core::protocol::{ClusterIdx, NodeId};
use mirror_core::types::{BrokerId, TopicPartition};

use super::timeline::{Recorder, Timeline};
use crate::check::Violation;
use crate::kafka::KafkaWorld;
use crate::world::RunReport;
use crate::world::node::lock;

/// Files of one node's disk, by path.
pub type DiskFiles = BTreeMap<String, Bytes>;

/// A request to observe a run (see the module doc).
#[derive(Clone, Default)]
pub struct Tap {
    recorder: Option<Arc<Mutex<Recorder>>>,
    keep: Option<KeepFiles>,
    files: Arc<Mutex<Option<(BrokerId, DiskFiles)>>>,
}

/// Which replica's partition directory to keep.
#[derive(Clone, Debug)]
struct KeepFiles {
    cluster: ClusterIdx,
    /// `None`: the partition's leader at the end of the run.
    broker: Option<BrokerId>,
    tp: TopicPartition,
}

impl std::fmt::Debug for Tap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tap")
            .field("recording", &self.recorder.is_some())
            .field("keep", &self.keep)
            .finish_non_exhaustive()
    }
}

impl Tap {
    /// Records a [`Timeline`] of the run.
    #[must_use]
    pub fn recording() -> Self {
        Self {
            recorder: Some(Arc::new(Mutex::new(Recorder::default()))),
            ..Self::default()
        }
    }

    /// Keeps, at the end of the run, the partition directory of `tp` on `broker` of
    /// `cluster` (`None`: the partition's leader then, or the first broker if it has none).
    #[must_use]
    pub fn keeping_files(
        cluster: ClusterIdx,
        broker: Option<BrokerId>,
        tp: TopicPartition,
    ) -> Self {
        Self {
            keep: Some(KeepFiles {
                cluster,
                broker,
                tp,
            }),
            ..Self::default()
        }
    }

    /// Hooks the tap into a freshly started world (before its first event).
    pub fn attach(&self, w: &KafkaWorld) {
        if let Some(rec) = &self.recorder {
            let names = w.spec().clusters.iter().map(|c| c.name.clone()).collect();
            *lock(rec) = Recorder::new(names);
            w.attach_recorder(Arc::clone(rec));
        }
    }

    /// Called when the run ends, while its world still exists: the recorder takes each
    /// lane's final log, and the kept replica's files are copied.
    pub fn finish(&self, w: &KafkaWorld) {
        if let Some(rec) = &self.recorder {
            lock(rec).record_final_logs(w);
        }
        let Some(k) = &self.keep else {
            return;
        };
        let Some(broker) = k
            .broker
            .or_else(|| w.leader(k.cluster, &k.tp))
            .or_else(|| w.broker_ids(k.cluster).first().copied())
        else {
            return;
        };
        let disk = w.world.disk(NodeId::broker(k.cluster, broker));
        let d = lock(&disk);
        let prefix = format!("{}/", mirror_core::broker::storage::partition_dir(&k.tp));
        let files = d
            .list_under(&prefix)
            .into_iter()
            .filter_map(|p| d.read(&p).map(|b| (p, b)))
            .collect();
        *lock(&self.files) = Some((broker, files));
    }

    /// The recorded timeline, finished with the run's report and first violation (`None`
    /// if the tap was not recording).
    #[must_use]
    pub fn timeline(&self, run: &RunReport, violation: Option<&Violation>) -> Option<Timeline> {
        let rec = self.recorder.as_ref()?;
        Some(lock(rec).finish(run, violation))
    }

    /// The replica whose files were kept, and the files (`None` if not asked for or the run
    /// never ended normally).
    #[must_use]
    pub fn files(&self) -> Option<(BrokerId, DiskFiles)> {
        lock(&self.files).clone()
    }
}
