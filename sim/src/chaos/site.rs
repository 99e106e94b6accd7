//! Where a chaos run failed, in terms that group failures of the same mechanism (`triage`):
//! the cluster's role in the mirror, the node's role for the partition, and for a liveness
//! failure what did not converge. Taken when the verdict is reached, which is as close to
//! the failure as a run gets: the fault schedule stops at the first violation.

use std::fmt;

use mirror_core::protocol::ClusterIdx;
use mirror_core::types::{BrokerId, TopicPartition};

use super::actions::MirrorOps;
use super::converge::Stuck;
use super::plan::ChaosPlan;
use crate::check::Violation;
use crate::kafka::KafkaWorld;

/// The role of a failing partition.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct FailureSite {
    /// `source` (cluster 0 before a failback), `destination` (cluster 1), `failback-target`
    /// (cluster 0 mirroring back from cluster 1 after a failback), `cluster` (single-cluster
    /// plans), or `-` when no cluster is named.
    pub cluster: String,
    /// `leader` or `follower` of the partition at the end of the run, `client`,
    /// `controller`, or `-` when no node is named.
    pub replica: String,
    /// For a liveness failure, what did not converge (`state FAILED want MIRRORING`,
    /// `isr_short`, `logs_differ`, ...; no numbers); for a violation, an optional qualifier
    /// of its kind (`mirror_cut_inside_txn`, `run::MIRROR_CUT_INSIDE_TXN`).
    pub stuck: Option<String>,
}

impl fmt::Display for FailureSite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.cluster, self.replica)?;
        if let Some(s) = &self.stuck {
            write!(f, " [{s}]")?;
        }
        Ok(())
    }
}

/// The site of a violation: the node and partition it names.
pub(super) fn of_violation(
    w: &KafkaWorld,
    plan: &ChaosPlan,
    ops: &MirrorOps,
    v: &Violation,
) -> FailureSite {
    let (cluster, role) = parse_node(&v.node);
    let tp = v.partition.as_deref().and_then(parse_tp);
    let replica = match (cluster, role, &tp) {
        (_, NodeRole::Client, _) => "client".to_string(),
        (_, NodeRole::Controller, _) => "controller".to_string(),
        (Some(c), NodeRole::Broker(b), Some(tp)) => leadership(w, c, tp, b),
        _ => "-".to_string(),
    };
    FailureSite {
        cluster: cluster_role(plan, ops, cluster),
        replica,
        stuck: None,
    }
}

/// The broker replica a violation names (`dst-1`, `t0-2`), if it names one.
pub(super) fn broker_replica(v: &Violation) -> Option<(ClusterIdx, BrokerId, TopicPartition)> {
    let (Some(cluster), NodeRole::Broker(b)) = parse_node(&v.node) else {
        return None;
    };
    Some((cluster, b, v.partition.as_deref().and_then(parse_tp)?))
}

/// The site of a liveness failure (`None`: it converged, but late).
pub(super) fn of_stuck(
    w: &KafkaWorld,
    plan: &ChaosPlan,
    ops: &MirrorOps,
    s: Option<&Stuck>,
) -> FailureSite {
    let Some(s) = s else {
        return FailureSite {
            cluster: "-".into(),
            replica: "-".into(),
            stuck: Some("converged_late".into()),
        };
    };
    FailureSite {
        cluster: cluster_role(plan, ops, Some(s.cluster)),
        replica: s
            .broker
            .map_or_else(|| "-".to_string(), |b| leadership(w, s.cluster, &s.tp, b)),
        stuck: Some(s.kind.clone()),
    }
}

/// The site of a crash: nothing is known but the plan.
#[must_use]
pub fn of_crash() -> FailureSite {
    FailureSite {
        cluster: "-".into(),
        replica: "-".into(),
        stuck: None,
    }
}

fn cluster_role(plan: &ChaosPlan, ops: &MirrorOps, c: Option<ClusterIdx>) -> String {
    match c {
        None => "-",
        Some(_) if !plan.mirror => "cluster",
        Some(ClusterIdx(0)) if ops.failed_back => "failback-target",
        Some(ClusterIdx(0)) => "source",
        Some(_) => "destination",
    }
    .to_string()
}

fn leadership(w: &KafkaWorld, c: ClusterIdx, tp: &TopicPartition, b: BrokerId) -> String {
    if w.leader(c, tp) == Some(b) {
        "leader"
    } else {
        "follower"
    }
    .to_string()
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum NodeRole {
    Broker(BrokerId),
    Controller,
    Client,
    Unknown,
}

/// A trace node name: `src-2`, `dst-ctl`, `src-c3` (the chaos world names clusters `src`
/// and `dst`, in that order).
fn parse_node(name: &str) -> (Option<ClusterIdx>, NodeRole) {
    let Some((cluster, rest)) = name.split_once('-') else {
        return (None, NodeRole::Unknown);
    };
    let c = match cluster {
        "src" => Some(ClusterIdx(0)),
        "dst" => Some(ClusterIdx(1)),
        _ => None,
    };
    let role = if rest == "ctl" {
        NodeRole::Controller
    } else if let Some(n) = rest.strip_prefix('c')
        && n.parse::<u32>().is_ok()
    {
        NodeRole::Client
    } else {
        rest.parse::<i32>()
            .map_or(NodeRole::Unknown, |b| NodeRole::Broker(BrokerId(b)))
    };
    (c, role)
}

/// `orders-3` → `TopicPartition { orders, 3 }`.
fn parse_tp(s: &str) -> Option<TopicPartition> {
    let (topic, p) = s.rsplit_once('-')?;
    Some(TopicPartition::new(topic, p.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_and_partition_names_parse() {
        assert_eq!(
            parse_node("dst-2"),
            (Some(ClusterIdx(1)), NodeRole::Broker(BrokerId(2)))
        );
        assert_eq!(
            parse_node("src-ctl"),
            (Some(ClusterIdx(0)), NodeRole::Controller)
        );
        assert_eq!(
            parse_node("src-c12"),
            (Some(ClusterIdx(0)), NodeRole::Client)
        );
        assert_eq!(parse_node("checker").1, NodeRole::Unknown);
        assert_eq!(parse_tp("t0-3"), Some(TopicPartition::new("t0", 3)));
        assert_eq!(
            parse_tp("__mirror_state-0"),
            Some(TopicPartition::new("__mirror_state", 0))
        );
        assert_eq!(parse_tp("t0"), None);
    }
}
