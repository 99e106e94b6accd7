//! The report page: one self-contained HTML file (inline CSS and SVG, no scripts, no
//! network fetches) with a header (seed, design, verdict, trace hash), the failing event, the
//! timeline, every lane's log at the end of the run with each batch's kind (data, txn,
//! commit, abort, pid_reset, control) and the compact trace as a table. Same inputs, same
//! bytes.

use std::fmt::Write as _;

use super::RunSummary;
use super::escape::esc;
use super::faults::split_line;
use super::svg::{seconds, timeline_svg, violation_zoom_svg};
use super::timeline::Timeline;
use crate::check::Violation;

const STYLE: &str = r#"
body { font: 13px/1.4 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 16px; color: #222; }
h1 { font-size: 18px; margin: 0 0 8px; } h2 { font-size: 15px; margin: 18px 0 6px; }
table.meta td { padding: 1px 12px 1px 0; } table.meta td:first-child { color: #666; }
.verdict-pass { color: #17812b; font-weight: bold; } .verdict-fail { color: #c01818; font-weight: bold; }
.violation-box { border: 2px solid #c01818; background: #fff0f0; padding: 8px 12px; margin: 10px 0; }
.violation-box b { color: #c01818; }
.legend span { display: inline-block; margin-right: 14px; }
.swatch { display: inline-block; width: 12px; height: 12px; vertical-align: -2px; margin-right: 4px; border: 1px solid #888; }
.scroll { overflow-x: auto; }
svg.timeline { font: 11px sans-serif; background: #fff; }
.lane-bg { fill: #fafafa; stroke: #e2e2e2; } .lane-label { font-weight: bold; fill: #333; }
.axis-title, .strip-label, .scale-label { fill: #777; } .tick { stroke: #eee; } .tick-label { fill: #555; text-anchor: middle; }
.leader, .state { stroke: #fff; stroke-width: 1; } .leader.unclean { stroke: #c01818; stroke-width: 2; }
.band-label { fill: #222; pointer-events: none; }
polyline.leo { fill: none; stroke: #2a62c9; stroke-width: 1.5; } polyline.hw { fill: none; stroke: #1f9a3c; stroke-width: 1.5; stroke-dasharray: 4 2; }
.end-label { fill: #555; text-anchor: end; paint-order: stroke; stroke: #fafafa; stroke-width: 3px; }
.marker.fault { fill: #d9822b; } .marker.fault-end { fill: #8fb48f; } .marker.op { fill: #3a6fd8; }
.fault-line { stroke-width: 1; stroke-dasharray: 3 3; } .fault-line.fault { stroke: #d9822b; } .fault-line.fault-end { stroke: #8fb48f; } .fault-line.op { stroke: #3a6fd8; }
.mark { fill: #b05fc4; }
.violation-line { stroke: #e00000; stroke-width: 3; } .violation-dot { fill: #e00000; } .violation-label { fill: #e00000; font-weight: bold; paint-order: stroke; stroke: #fff; stroke-width: 3px; }
table.trace { border-collapse: collapse; font: 12px/1.3 ui-monospace, Menlo, Consolas, monospace; }
table.trace td, table.trace th { padding: 1px 8px; border-bottom: 1px solid #f0f0f0; text-align: left; white-space: pre; }
table.trace tr.fault td { color: #a35a12; } table.trace tr.violation td { background: #ffd6d6; color: #900; font-weight: bold; }
table.log { border-collapse: collapse; font: 12px/1.3 ui-monospace, Menlo, Consolas, monospace; margin: 2px 0 10px; }
table.log td, table.log th { padding: 1px 8px; border-bottom: 1px solid #f0f0f0; text-align: left; }
tr.kind-data td:nth-child(3) { color: #2a62c9; } tr.kind-txn td:nth-child(3) { color: #7a4fb8; }
tr.kind-commit td { background: #e4f5e4; } tr.kind-abort td { background: #fde2e2; }
tr.kind-pid_reset td { background: #fff1c7; font-weight: bold; } tr.kind-control td { background: #eee; }
"#;

/// The whole page.
#[must_use]
pub fn page(t: &Timeline, run: &RunSummary) -> String {
    let mut s = String::new();
    s.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    let _ = writeln!(
        s,
        "<title>mirrorsim report: {} ({})</title>",
        esc(&run.title),
        esc(&run.verdict)
    );
    let _ = writeln!(s, "<style>{STYLE}</style>\n</head>\n<body>");
    header(&mut s, run);
    if let Some(v) = &t.violation {
        violation_box(&mut s, v);
    } else if !run.verdict_detail.is_empty() {
        let _ = writeln!(
            s,
            "<div class=\"violation-box\"><b>{}</b>: {}</div>",
            esc(&run.verdict),
            esc(&run.verdict_detail)
        );
    }
    legend(&mut s, t);
    let _ = writeln!(
        s,
        "<h2>Timeline ({} lanes)</h2>\n<div class=\"scroll\">",
        t.lanes.len()
    );
    s.push_str(&timeline_svg(t));
    s.push_str("</div>\n");
    if let Some(zoom) = violation_zoom_svg(t) {
        s.push_str("<h2>Zoom: the moments before the failing event</h2>\n<div class=\"scroll\">");
        s.push_str(&zoom);
        s.push_str("</div>\n");
    }
    final_logs(&mut s, t);
    trace_table(&mut s, run, t.violation.as_ref());
    s.push_str("</body>\n</html>\n");
    s
}

/// Every lane's log at the end of the run, one row per run of batches of one kind and
/// epoch, the kind named as `expect_log` names it and coloured (data, txn, commit, abort,
/// pid_reset, control).
fn final_logs(s: &mut String, t: &Timeline) {
    s.push_str(
        "<h2>Logs at the end of the run</h2>\n<p class=\"legend\">Batch kinds: \
         <span>data</span><span>txn (transactional data)</span>\
         <span style=\"background:#e4f5e4\">commit</span>\
         <span style=\"background:#fde2e2\">abort</span>\
         <span style=\"background:#fff1c7\">pid_reset (MIRROR_PID_RESET)</span>\
         <span style=\"background:#eee\">control (another control record)</span></p>\n",
    );
    for (key, lane) in &t.lanes {
        let lane_name = format!("{} {}", t.cluster_name(key.cluster), key.partition_name());
        let Some(log) = &lane.final_log else {
            let _ = writeln!(s, "<p><b>{}</b>: no live replica</p>", esc(&lane_name));
            continue;
        };
        let _ = writeln!(
            s,
            "<p data-log=\"{}\"><b>{}</b> on broker {}: start={} hw={} leo={}</p>",
            esc(&lane_name),
            esc(&lane_name),
            log.broker,
            log.log_start,
            log.hw,
            log.leo
        );
        if log.runs.is_empty() {
            continue;
        }
        s.push_str(
            "<table class=\"log\">\n<tr><th>offsets</th><th>epoch</th><th>kind</th><th>batches</th></tr>\n",
        );
        for r in &log.runs {
            let _ = writeln!(
                s,
                "<tr class=\"kind-{}\"><td>{}-{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&r.kind),
                r.base,
                r.last,
                r.epoch,
                esc(&r.kind),
                r.batches
            );
        }
        s.push_str("</table>\n");
    }
}

fn header(s: &mut String, run: &RunSummary) {
    let _ = writeln!(s, "<h1>mirrorsim report: {}</h1>", esc(&run.title));
    let class = if run.verdict == "pass" {
        "verdict-pass"
    } else {
        "verdict-fail"
    };
    let rows: [(&str, String, &str); 6] = [
        ("seed", run.seed.to_string(), ""),
        ("design", run.design.clone(), ""),
        ("verdict", run.verdict.clone(), class),
        ("trace hash", run.trace_hash.clone(), ""),
        ("simulated", format!("{:.3} s", run.sim_seconds), ""),
        ("events", run.events.to_string(), ""),
    ];
    s.push_str("<table class=\"meta\">\n");
    for (k, v, class) in rows {
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td class=\"{class}\">{}</td></tr>",
            esc(k),
            esc(&v)
        );
    }
    s.push_str("</table>\n");
}

fn violation_box(s: &mut String, v: &Violation) {
    let mut at = esc(&v.node);
    if let Some(p) = &v.partition {
        let _ = write!(at, " {}", esc(p));
    }
    if let Some(o) = v.offset {
        let _ = write!(at, " offset {o}");
    }
    let _ = writeln!(
        s,
        "<div class=\"violation-box\" id=\"violation\"><b>invariant {} broken</b> at t={}s, \
         <a href=\"#ev-violation\">event #{}</a>, on {at}<br>{}</div>",
        esc(&v.invariant),
        seconds(v.t_micros),
        v.event_seq,
        esc(&v.detail)
    );
}

fn legend(s: &mut String, t: &Timeline) {
    s.push_str("<p class=\"legend\">");
    let items: [(&str, &str); 9] = [
        (
            "background:hsl(90,55%,78%)",
            "leader bN eE (broker N, epoch E; red edge = unclean)",
        ),
        ("background:#9fd49f", "MIRRORING"),
        ("background:#f5c08a", "STOPPING"),
        ("background:#c9b3e0", "STOPPED"),
        ("background:#2a62c9", "LEO (solid)"),
        ("background:#1f9a3c", "HW (dashed)"),
        ("background:#d9822b", "fault"),
        ("background:#3a6fd8", "operator action"),
        ("background:#b05fc4", "truncation / mirror mark"),
    ];
    for (style, label) in items {
        let _ = write!(
            s,
            "<span><i class=\"swatch\" style=\"{style}\"></i>{}</span>",
            esc(label)
        );
    }
    if t.violation.is_some() {
        s.push_str(
            "<span><i class=\"swatch\" style=\"background:#e00000\"></i>failing event</span>",
        );
    }
    s.push_str("</p>\n<p class=\"legend\">Hover a band, marker or line for details.</p>\n");
}

fn trace_table(s: &mut String, run: &RunSummary, violation: Option<&Violation>) {
    let _ = writeln!(
        s,
        "<h2>Compact trace ({} lines)</h2>\n<table class=\"trace\">\n\
         <tr><th>t (s)</th><th>#</th><th>node</th><th>subject</th><th>text</th></tr>",
        run.trace.len()
    );
    let bad = violation.map(|v| v.event_seq);
    // The failing event's own line may be verbose (not kept); the verdict row goes right
    // after the last kept line at or before it, so it is always in the table.
    let mut pending = violation;
    for line in &run.trace {
        let cols = split_line(line);
        if let (Some(v), Some(c)) = (pending, &cols)
            && c.seq > v.event_seq
        {
            violation_row(s, v);
            pending = None;
        }
        match cols {
            Some(c) => {
                let class = if Some(c.seq) == bad {
                    " class=\"violation\""
                } else if c.node == crate::world::trace_event::FAULT_COLUMN {
                    " class=\"fault\""
                } else {
                    ""
                };
                let _ = writeln!(
                    s,
                    "<tr id=\"ev-{}\"{class}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    c.seq,
                    seconds(c.t_micros),
                    c.seq,
                    esc(c.node),
                    esc(c.subject),
                    esc(c.text)
                );
            }
            None => {
                let _ = writeln!(s, "<tr><td colspan=\"5\">{}</td></tr>", esc(line));
            }
        }
    }
    if let Some(v) = pending {
        violation_row(s, v);
    }
    s.push_str("</table>\n");
}

/// The verdict row of the trace table: the invariant and its detail, in red.
fn violation_row(s: &mut String, v: &Violation) {
    let _ = writeln!(
        s,
        "<tr id=\"ev-violation\" class=\"violation\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        seconds(v.t_micros),
        v.event_seq,
        esc(&v.node),
        esc(v.partition.as_deref().unwrap_or("")),
        esc(&format!("✗ {}: {}", v.invariant, v.detail))
    );
}
