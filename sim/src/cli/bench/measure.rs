//! One scale's measurement and the ways `bench` prints it: the stable line scripts read, the
//! human tables, and the `--json` object. Every figure is computed here once, so the three
//! forms cannot disagree.

use mirror_core::protocol::NodeRole;
use serde_json::{Value, json};

use super::floor::FloorRun;
use crate::net::{KindKey, LinkStats};
use crate::world::RunStats;
use crate::world::clock::{TimerCounts, TimerOwner};

/// The reference world at one scale, and its floor.
#[derive(Clone, Debug)]
pub struct Measurement {
    /// The scale factor.
    pub scale: u32,
    /// The reference run's verdict (`pass`, `liveness`, ...).
    pub verdict: String,
    /// Simulated seconds of the reference run.
    pub sim_seconds: f64,
    /// Wall seconds of the reference run.
    pub wall_seconds: f64,
    /// Trace events of the reference run.
    pub events: u64,
    /// The reference run's trace hash: a change that only speeds the world up keeps it.
    pub trace_hash: String,
    /// What the reference run cost madsim (empty if it crashed).
    pub stats: RunStats,
    /// Peak resident memory during the reference run, MiB.
    pub peak_mib: Option<f64>,
    /// The floor world for this scale's load (`None` if the reference run crashed).
    pub floor: Option<FloorRun>,
}

impl Measurement {
    /// Simulated seconds per wall second.
    #[must_use]
    pub fn ratio(&self) -> f64 {
        self.sim_seconds / self.wall_seconds.max(1e-9)
    }

    /// Trace events per wall second.
    #[must_use]
    pub fn events_per_s(&self) -> f64 {
        self.events as f64 / self.wall_seconds.max(1e-9)
    }

    /// Wall seconds per trace event (what `cost_per_event` compares between scales).
    #[must_use]
    pub fn cost_per_event(&self) -> f64 {
        self.wall_seconds / (self.events.max(1) as f64)
    }

    /// Seeds of this length one core runs per hour.
    #[must_use]
    pub fn seeds_per_core_hour(&self) -> f64 {
        3600.0 / self.wall_seconds.max(1e-9)
    }

    /// Messages sent (dropped ones included).
    #[must_use]
    pub fn messages(&self) -> u64 {
        self.stats.net.total().sent
    }

    /// Messages sent per simulated second.
    #[must_use]
    pub fn messages_per_sim_s(&self) -> f64 {
        self.messages() as f64 / self.sim_seconds.max(1e-9)
    }

    /// Partition entries of the fetch requests and responses sent
    /// ([`crate::net::MessageKind::partitions`]).
    #[must_use]
    pub fn partition_entries(&self) -> u64 {
        self.stats.net.total().partitions_sent
    }

    /// Fetch partition entries per trace event: the per-event work that grows with the number
    /// of partitions (a follower's fetch names every partition it follows from that leader,
    /// with or without new data; Kafka's fetch sessions, KIP-227, which this model does not
    /// have, would leave unchanged partitions out of the messages, though the leader still
    /// reads each of them).
    #[must_use]
    pub fn partition_entries_per_event(&self) -> f64 {
        self.partition_entries() as f64 / (self.events.max(1) as f64)
    }

    /// `bench partition_entries scale=N per_event=P per_sim_s=S`.
    #[must_use]
    pub fn partition_entries_line(&self) -> String {
        format!(
            "bench partition_entries scale={} per_event={:.2} per_sim_s={:.0}",
            self.scale,
            self.partition_entries_per_event(),
            self.partition_entries() as f64 / self.sim_seconds.max(1e-9)
        )
    }

    /// The reference ratio over the floor's.
    #[must_use]
    pub fn of_floor(&self) -> Option<f64> {
        self.floor
            .as_ref()
            .map(|f| self.ratio() / f.ratio().max(1e-9))
    }

    /// `bench scale=N ratio=R events_per_s=E messages_per_sim_s=X peak_mib=M`: one line
    /// whose format does not change, for scripts.
    #[must_use]
    pub fn stable_line(&self) -> String {
        format!(
            "bench scale={} ratio={:.1} events_per_s={:.0} messages_per_sim_s={:.1} peak_mib={:.1}",
            self.scale,
            self.ratio(),
            self.events_per_s(),
            self.messages_per_sim_s(),
            self.peak_mib.unwrap_or(f64::NAN)
        )
    }

    /// The per-kind rows, most frequent first (ties in key order).
    #[must_use]
    pub fn kind_rows(&self) -> Vec<(KindKey, LinkStats)> {
        let mut rows: Vec<_> = self.stats.net.kinds.iter().map(|(k, s)| (*k, *s)).collect();
        rows.sort_by(|a, b| b.1.sent.cmp(&a.1.sent).then(a.0.cmp(&b.0)));
        rows
    }

    /// The `--json` object of this scale.
    #[must_use]
    pub fn json(&self) -> Value {
        let per_s = |n: u64| n as f64 / self.sim_seconds.max(1e-9);
        let kinds: Vec<Value> = self
            .kind_rows()
            .iter()
            .map(|(k, s)| {
                json!({
                    "api": k.kind.api,
                    "part": k.kind.part.name(),
                    "route": k.route.name(),
                    "sent": s.sent,
                    "delivered": s.delivered,
                    "dropped": dropped(s),
                    "sent_per_sim_s": per_s(s.sent),
                    "partitions_sent": s.partitions_sent,
                })
            })
            .collect();
        json!({
            "scale": self.scale,
            "verdict": self.verdict,
            "sim_seconds": self.sim_seconds,
            "wall_seconds": self.wall_seconds,
            "ratio": self.ratio(),
            "seeds_per_core_h": self.seeds_per_core_hour(),
            "events": self.events,
            "events_per_s": self.events_per_s(),
            "trace_hash": self.trace_hash,
            "messages": self.messages(),
            "delivered": self.stats.net.total().delivered,
            "messages_per_sim_s": self.messages_per_sim_s(),
            "partition_entries": self.partition_entries(),
            "partition_entries_per_event": self.partition_entries_per_event(),
            "timers": timers_json(&self.stats.timers),
            "peak_mib": self.peak_mib,
            "kinds": kinds,
            "floor": self.floor.as_ref().map(floor_json),
            "of_floor": self.of_floor(),
        })
    }
}

/// Messages dropped for any reason.
fn dropped(s: &LinkStats) -> u64 {
    s.dropped_partitioned + s.dropped_lost + s.dropped_reset
}

/// Timers summed by owner class: per node, the network's delivery task, the harness.
fn timer_classes(t: &TimerCounts) -> (u64, u64, u64) {
    t.iter()
        .fold((0, 0, 0), |(node, net, harness), (owner, n)| match owner {
            TimerOwner::Node(_) => (node + n, net, harness),
            TimerOwner::Network => (node, net + n, harness),
            TimerOwner::Harness => (node, net, harness + n),
        })
}

fn timers_json(t: &TimerCounts) -> Value {
    let (node, network, harness) = timer_classes(t);
    let mut by_role = std::collections::BTreeMap::new();
    for (owner, n) in t {
        if let TimerOwner::Node(id) = owner {
            let role = match id.role {
                NodeRole::Controller => "controller",
                NodeRole::Broker(_) => "broker",
                NodeRole::Client(_) => "client",
            };
            *by_role.entry(role).or_insert(0u64) += n;
        }
    }
    json!({ "node": node, "network": network, "harness": harness, "node_by_role": by_role })
}

fn floor_json(f: &FloorRun) -> Value {
    json!({
        "ratio": f.ratio(),
        "sim_seconds": f.sim_seconds,
        "wall_seconds": f.wall_seconds,
        "messages": f.net.total().sent,
        "delivered": f.net.total().delivered,
        "timers": timers_json(&f.timers),
    })
}

/// `bench cost_per_event scale=N vs scale=B ratio=C` for every scale after the first.
#[must_use]
pub fn cost_lines(ms: &[Measurement]) -> Vec<String> {
    cost_ratios(ms)
        .into_iter()
        .map(|(n, base, c)| format!("bench cost_per_event scale={n} vs scale={base} ratio={c:.2}"))
        .collect()
}

/// `(scale, base scale, cost per event over the base's)` for every scale after the first.
fn cost_ratios(ms: &[Measurement]) -> Vec<(u32, u32, f64)> {
    let Some(base) = ms.first() else {
        return Vec::new();
    };
    ms.iter()
        .skip(1)
        .map(|m| {
            let c = m.cost_per_event() / base.cost_per_event().max(1e-18);
            (m.scale, base.scale, c)
        })
        .collect()
}

/// `bench floor ratio=F`: the floor of the first scale's world (the reference world when
/// the scales start at 1).
#[must_use]
pub fn floor_line(ms: &[Measurement]) -> Option<String> {
    let f = ms.first()?.floor.as_ref()?;
    Some(format!("bench floor ratio={:.1}", f.ratio()))
}

/// `bench --split`: one scale-up's reference world taken apart, the rate scaled with the base
/// scale's partitions and the partitions scaled with the base scale's rate (no floor runs).
#[derive(Clone, Debug)]
pub struct Split {
    /// The rate scaled, the partitions of the base scale.
    pub rate_only: Measurement,
    /// The partitions scaled, the rate of the base scale.
    pub partitions_only: Measurement,
}

impl Split {
    /// `bench split scale=N only=rate|partitions cost_per_event_ratio=C partition_entries_per_event=P`,
    /// the cost per event over `base`'s.
    #[must_use]
    pub fn lines(&self, base: &Measurement) -> Vec<String> {
        [("rate", &self.rate_only), ("partitions", &self.partitions_only)]
            .into_iter()
            .map(|(only, m)| {
                format!(
                    "bench split scale={} only={only} cost_per_event_ratio={:.2} partition_entries_per_event={:.2}",
                    m.scale,
                    m.cost_per_event() / base.cost_per_event().max(1e-18),
                    m.partition_entries_per_event()
                )
            })
            .collect()
    }

    fn json(&self, base: &Measurement) -> Value {
        let one = |m: &Measurement| {
            json!({
                "events": m.events,
                "wall_seconds": m.wall_seconds,
                "cost_per_event_ratio": m.cost_per_event() / base.cost_per_event().max(1e-18),
                "partition_entries_per_event": m.partition_entries_per_event(),
                "verdict": m.verdict,
            })
        };
        json!({
            "scale": self.rate_only.scale,
            "rate_only": one(&self.rate_only),
            "partitions_only": one(&self.partitions_only),
        })
    }
}

/// The whole run as one JSON object (`bench --json`).
#[must_use]
pub fn json_all(ms: &[Measurement], splits: &[Split]) -> Value {
    let cost: Vec<Value> = cost_ratios(ms)
        .into_iter()
        .map(|(n, base, c)| json!({ "scale": n, "vs": base, "ratio": c }))
        .collect();
    let floor = ms.first().and_then(|m| {
        m.floor
            .as_ref()
            .map(|f| json!({ "scale": m.scale, "ratio": f.ratio() }))
    });
    json!({
        "scales": ms.iter().map(Measurement::json).collect::<Vec<_>>(),
        "floor": floor,
        "cost_per_event": cost,
        "split": ms.first().map(|base| splits.iter().map(|s| s.json(base)).collect::<Vec<_>>()),
    })
}

/// The human table: one row per scale, the floor beside it.
#[must_use]
pub fn table(ms: &[Measurement]) -> Vec<String> {
    let mut out = vec![format!(
        "{:>5} {:>9} {:>7} {:>7} {:>9} {:>9} {:>11} {:>10} {:>9} {:>9} {:>8} {:>8}",
        "scale",
        "verdict",
        "sim s",
        "wall s",
        "sim/wall",
        "floor",
        "% of floor",
        "seeds/c-h",
        "events/s",
        "msgs/sim s",
        "timers",
        "peak MiB"
    )];
    for m in ms {
        let (node, net, harness) = timer_classes(&m.stats.timers);
        out.push(format!(
            "{:>5} {:>9} {:>7.1} {:>7.3} {:>9.1} {:>9} {:>11} {:>10.0} {:>9.0} {:>9.0} {:>8} {:>8.1}",
            m.scale,
            m.verdict,
            m.sim_seconds,
            m.wall_seconds,
            m.ratio(),
            m.floor
                .as_ref()
                .map_or_else(|| "-".to_string(), |f| format!("{:.1}", f.ratio())),
            m.of_floor()
                .map_or_else(|| "-".to_string(), |r| format!("{:.0} %", 100.0 * r)),
            m.seeds_per_core_hour(),
            m.events_per_s(),
            m.messages_per_sim_s(),
            node + net + harness,
            m.peak_mib.unwrap_or(f64::NAN),
        ));
    }
    out
}

/// What the floor replayed of each scale's load, to show that it matches.
#[must_use]
pub fn floor_table(ms: &[Measurement]) -> Vec<String> {
    let mut out = vec![format!(
        "{:>5} {:>12} {:>12} {:>14} {:>14} {:>14} {:>14}",
        "scale", "messages", "floor msgs", "node+harness", "floor n+h", "net timers", "floor net"
    )];
    for m in ms {
        let Some(f) = &m.floor else { continue };
        let (node, net, harness) = timer_classes(&m.stats.timers);
        let (fnode, fnet, fharness) = timer_classes(&f.timers);
        out.push(format!(
            "{:>5} {:>12} {:>12} {:>14} {:>14} {:>14} {:>14}",
            m.scale,
            m.messages(),
            f.net.total().sent,
            node + harness,
            fnode + fharness,
            net,
            fnet
        ));
    }
    out
}

/// Kinds below this share of all messages are summed into one `other` row of the human
/// table (the JSON lists every kind).
const TABLE_MIN_SHARE: f64 = 0.001;

/// Messages per simulated second by kind, for one scale.
#[must_use]
pub fn kind_table(m: &Measurement) -> Vec<String> {
    let per_s = |n: u64| n as f64 / m.sim_seconds.max(1e-9);
    let total = m.messages().max(1) as f64;
    let row = |api: &str, part: &str, route: &str, s: &LinkStats| {
        let parts = if s.partitions_sent == 0 {
            "-".to_string()
        } else {
            format!("{:.1}", s.partitions_sent as f64 / s.sent.max(1) as f64)
        };
        format!(
            "{api:<22} {part:<16} {route:<14} {:>10.1} {:>6.1}% {:>8} {parts:>10}",
            per_s(s.sent),
            100.0 * s.sent as f64 / total,
            dropped(s),
        )
    };
    let mut out = vec![format!(
        "{:<22} {:<16} {:<14} {:>10} {:>7} {:>8} {:>10}",
        "api", "part", "route", "sent/sim s", "share", "dropped", "parts/msg"
    )];
    let (mut rest, mut rest_kinds) = (LinkStats::default(), 0);
    for (k, s) in m.kind_rows() {
        if (s.sent as f64) < TABLE_MIN_SHARE * total {
            rest.add(&s);
            rest_kinds += 1;
        } else {
            out.push(row(k.kind.api, k.kind.part.name(), k.route.name(), &s));
        }
    }
    if rest_kinds > 0 {
        out.push(row(&format!("other ({rest_kinds} kinds)"), "", "", &rest));
    }
    out.push(row("total", "", "", &m.stats.net.total()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(scale: u32, wall_seconds: f64, events: u64) -> Measurement {
        Measurement {
            scale,
            verdict: "pass".into(),
            sim_seconds: 60.0,
            wall_seconds,
            events,
            trace_hash: String::new(),
            stats: RunStats::default(),
            peak_mib: Some(40.0),
            floor: None,
        }
    }

    #[test]
    fn cost_per_event_compares_every_scale_with_the_first() {
        // Scale 10: ten times the events in twenty times the wall time, twice the cost.
        let ms = [at(1, 1.0, 1_000), at(10, 20.0, 10_000)];
        assert_eq!(
            cost_lines(&ms),
            ["bench cost_per_event scale=10 vs scale=1 ratio=2.00"]
        );
        assert!(cost_lines(&ms[..1]).is_empty());
    }

    #[test]
    fn partition_entries_are_counted_per_event_and_per_simulated_second() {
        let mut m = at(10, 2.0, 4_000);
        let link = (
            mirror_core::protocol::NodeId::controller(mirror_core::protocol::ClusterIdx(0)),
            mirror_core::protocol::NodeId::controller(mirror_core::protocol::ClusterIdx(1)),
        );
        m.stats.net.links.insert(
            link,
            LinkStats {
                sent: 100,
                partitions_sent: 6_000,
                ..LinkStats::default()
            },
        );
        assert_eq!(
            m.partition_entries_line(),
            "bench partition_entries scale=10 per_event=1.50 per_sim_s=100"
        );
    }

    #[test]
    fn a_split_compares_each_half_with_the_base_scale() {
        // Base: 1 µs per event. Rate only: the same cost per event; partitions only: twice it.
        let base = at(1, 1.0, 1_000_000);
        let split = Split {
            rate_only: at(10, 10.0, 10_000_000),
            partitions_only: at(10, 2.0, 1_000_000),
        };
        assert_eq!(
            split.lines(&base),
            [
                "bench split scale=10 only=rate cost_per_event_ratio=1.00 partition_entries_per_event=0.00",
                "bench split scale=10 only=partitions cost_per_event_ratio=2.00 partition_entries_per_event=0.00",
            ]
        );
        let j = json_all(std::slice::from_ref(&base), &[split]);
        assert_eq!(
            j["split"][0]["partitions_only"]["cost_per_event_ratio"],
            2.0
        );
        assert!(
            json_all(&[base], &[])["split"]
                .as_array()
                .is_some_and(Vec::is_empty)
        );
    }

    #[test]
    fn the_stable_line_keeps_its_format() {
        assert_eq!(
            at(1, 0.5, 100_000).stable_line(),
            "bench scale=1 ratio=120.0 events_per_s=200000 messages_per_sim_s=0.0 peak_mib=40.0"
        );
    }
}
