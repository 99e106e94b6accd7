//! Faults and operator actions for the timeline. Faults are world actions, not node events,
//! so the observer never sees them; they are read back from the compact trace, where every
//! one has a line with `fault` in the node column (see `world::trace_event`).
//! Lines are split back into columns in the layout of [`crate::trace::format::line`].

use crate::world::trace_event::FAULT_COLUMN;

/// What kind of marker.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub enum MarkerKind {
    /// A fault the harness injected (crash, restart, partition, heal, ...).
    Fault,
    /// An operator action (an admin RPC's result: create, stop, pause, failback, ...).
    Operator,
}

/// One fault or operator action on the time axis.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FaultMarker {
    /// When (µs of simulated time).
    pub t_micros: u64,
    /// Trace event number.
    pub seq: u64,
    /// Fault or operator action.
    pub kind: MarkerKind,
    /// The trace subject (a node, a link, a node set), or the admin client.
    pub subject: String,
    /// What happened (`crash PowerLoss lost=120B files=2`, `admin stop_mirror_topics ...`).
    pub text: String,
    /// Clusters it touches (empty: the whole world, e.g. packet loss or heal all).
    pub clusters: Vec<u16>,
}

impl FaultMarker {
    /// An operator action issued by a client of `cluster`.
    #[must_use]
    pub fn operator(t_micros: u64, seq: u64, cluster: u16, subject: &str, text: &str) -> Self {
        Self {
            t_micros,
            seq,
            kind: MarkerKind::Operator,
            subject: subject.to_string(),
            text: text.to_string(),
            clusters: vec![cluster],
        }
    }
}

/// One compact trace line split into its columns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceColumns<'a> {
    /// Simulated time (µs, millisecond precision as printed).
    pub t_micros: u64,
    /// Event number.
    pub seq: u64,
    /// Node column.
    pub node: &'a str,
    /// Subject column (may be empty).
    pub subject: &'a str,
    /// Free text.
    pub text: &'a str,
}

/// Splits a numbered trace line (`t=  12.004s #0004391 dst-1  orders-0     text`).
/// Headers and footers (lines without `t=` and `#`) give `None`.
#[must_use]
pub fn split_line(line: &str) -> Option<TraceColumns<'_>> {
    let rest = line.strip_prefix("t=")?.trim_start();
    let (time, rest) = rest.split_once("s #")?;
    let (secs, millis) = time.split_once('.')?;
    let t_micros = secs.parse::<u64>().ok()? * 1_000_000 + millis.parse::<u64>().ok()? * 1_000;
    let (seq, rest) = rest.split_once(' ')?;
    let seq = seq.parse::<u64>().ok()?;
    let (node, rest) = rest.split_once(' ').unwrap_or((rest, ""));
    // The node is padded to 6 columns then one space; the subject to 12 then one space.
    let pad = 6usize.saturating_sub(node.chars().count());
    let rest = skip_spaces(rest, pad);
    let (subject, text) = if rest.starts_with(' ') {
        ("", rest.trim_start())
    } else {
        match rest.split_once(' ') {
            Some((s, t)) => (s, t.trim_start()),
            None => (rest, ""),
        }
    };
    Some(TraceColumns {
        t_micros,
        seq,
        node,
        subject,
        text,
    })
}

/// Drops up to `n` leading spaces.
fn skip_spaces(s: &str, n: usize) -> &str {
    let k = s.bytes().take(n).take_while(|b| *b == b' ').count();
    &s[k..]
}

/// The fault lines of a trace, with the clusters each touches.
#[must_use]
pub fn parse_faults(lines: &[String], clusters: &[String]) -> Vec<FaultMarker> {
    lines
        .iter()
        .filter_map(|l| split_line(l))
        .filter(|c| c.node == FAULT_COLUMN || c.text.starts_with("! halt"))
        .map(|c| {
            let subject = if c.node == FAULT_COLUMN {
                c.subject
            } else {
                c.node
            };
            FaultMarker {
                t_micros: c.t_micros,
                seq: c.seq,
                kind: MarkerKind::Fault,
                subject: subject.to_string(),
                text: c.text.to_string(),
                clusters: clusters_in(subject, clusters),
            }
        })
        .collect()
}

/// Clusters named in a fault subject: `src-1`, `src↮dst`, `¬src-1+dst-2`, `src-1→src-2`.
fn clusters_in(subject: &str, clusters: &[String]) -> Vec<u16> {
    let words = subject
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
        .filter(|w| !w.is_empty());
    let mut out: Vec<u16> = words
        .filter_map(|w| clusters.iter().position(|c| c == w))
        .filter_map(|i| u16::try_from(i).ok())
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::format::line;

    #[test]
    fn split_line_reads_back_every_column_layout() {
        let l = line(
            12_004_000,
            4391,
            "dst-1",
            "orders-0",
            "MIRRORING→STOPPING se=4",
        );
        let c = split_line(&l).expect("columns");
        assert_eq!(
            (c.t_micros, c.seq, c.node, c.subject, c.text),
            (
                12_004_000,
                4391,
                "dst-1",
                "orders-0",
                "MIRRORING→STOPPING se=4"
            )
        );
        let l = line(1_000, 7, "fault", "", "packet loss rate=0.100");
        let c = split_line(&l).expect("columns");
        assert_eq!(
            (c.node, c.subject, c.text),
            ("fault", "", "packet loss rate=0.100")
        );
        let l = line(0, 1, "a-very-long-node", "a-very-long-subject", "x y");
        let c = split_line(&l).expect("columns");
        assert_eq!(
            (c.node, c.subject, c.text),
            ("a-very-long-node", "a-very-long-subject", "x y")
        );
        assert_eq!(split_line("=== seed 7 ==="), None);
    }

    #[test]
    fn faults_name_the_clusters_they_touch() {
        let names = vec!["src".to_string(), "dst".to_string()];
        let lines = vec![
            line(
                1_000_000,
                10,
                "fault",
                "src-2",
                "crash PowerLoss lost=0B files=0",
            ),
            line(
                2_000_000,
                11,
                "fault",
                "src↮dst",
                "partition symmetric id=3",
            ),
            line(3_000_000, 12, "fault", "", "heal all"),
            line(3_500_000, 13, "dst-1", "orders-0", "leader le=3 isr=[1]"),
            line(4_000_000, 14, "dst-3", "", "! halt: EIO"),
        ];
        let f = parse_faults(&lines, &names);
        let got: Vec<(u64, Vec<u16>, &str)> = f
            .iter()
            .map(|m| (m.seq, m.clusters.clone(), m.text.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (10, vec![0], "crash PowerLoss lost=0B files=0"),
                (11, vec![0, 1], "partition symmetric id=3"),
                (12, vec![], "heal all"),
                (14, vec![1], "! halt: EIO"),
            ]
        );
    }
}
