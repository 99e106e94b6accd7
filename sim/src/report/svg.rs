//! The SVG timeline: a time axis in simulated seconds, a strip of fault and operator markers,
//! and one lane per (cluster, partition) with its leader/epoch band, mirror-state band,
//! LEO/HW step chart, log marks, fault lines and the failing event in red.
//!
//! Pure string building from a [`Timeline`]; every number is printed with a fixed precision
//! so the same timeline gives the same bytes.

use std::fmt::Write as _;

use super::escape::esc;
use super::faults::{FaultMarker, MarkerKind};
use super::timeline::{Lane, LaneKey, Timeline};

/// Width of the lane-label column.
const LABEL_W: f64 = 180.0;
/// Width of the plot area.
const PLOT_W: f64 = 1000.0;
/// Height of one lane.
const LANE_H: f64 = 86.0;
/// Room right of the plot for end labels.
const RIGHT_MARGIN: f64 = 24.0;
/// Where the first lane starts (below the axis and the marker strip).
const TOP: f64 = 64.0;

/// Maps simulated time in `[start, end]` to x (times outside are clamped to the edges).
#[derive(Copy, Clone, Debug)]
struct Scale {
    start_micros: u64,
    end_micros: u64,
    /// The end of the run: bands and lines stop there even if the window goes on.
    run_end_micros: u64,
}

impl Scale {
    fn x(self, t_micros: u64) -> f64 {
        let span = self.end_micros.saturating_sub(self.start_micros).max(1) as f64;
        let t = t_micros.clamp(self.start_micros, self.end_micros) - self.start_micros;
        LABEL_W + (t as f64 / span) * PLOT_W
    }

    fn contains(self, t_micros: u64) -> bool {
        (self.start_micros..=self.end_micros).contains(&t_micros)
    }
}

/// The whole run as one SVG element.
#[must_use]
pub fn timeline_svg(t: &Timeline) -> String {
    svg(t, 0, t.end_micros.max(1))
}

/// A zoom on the moments before the failing event (`None` without a violation), where a
/// whole-run view squeezes the last state changes into a pixel: it starts at the
/// window holding three times the time since the [`ZOOM_ITEMS`]-th last change (leader,
/// state, mark, fault) before the violation, at least [`ZOOM_MIN_MICROS`] and at most
/// [`ZOOM_MAX_MICROS`], and shows a tenth more after it.
#[must_use]
pub fn violation_zoom_svg(t: &Timeline) -> Option<String> {
    let v = t.violation.as_ref()?;
    let mut times: Vec<u64> = t
        .lanes
        .values()
        .flat_map(|l| {
            let leaders = l.leaders.iter().map(|x| x.t_micros);
            let states = l.states.iter().map(|x| x.t_micros);
            leaders
                .chain(states)
                .chain(l.marks.iter().map(|x| x.t_micros))
        })
        .chain(t.faults.iter().map(|f| f.t_micros))
        .filter(|x| *x < v.t_micros)
        .collect();
    times.sort_unstable();
    let nth = times.len().saturating_sub(ZOOM_ITEMS);
    let from = times.get(nth).copied().unwrap_or(0);
    let before = (3 * (v.t_micros - from)).clamp(ZOOM_MIN_MICROS, ZOOM_MAX_MICROS);
    let start = v.t_micros.saturating_sub(before);
    Some(svg(t, start, v.t_micros + before / 10 + 1))
}

/// How many recent changes the zoom tries to show.
const ZOOM_ITEMS: usize = 3;
/// The shortest zoom window before the failing event.
const ZOOM_MIN_MICROS: u64 = 20_000;
/// The longest.
const ZOOM_MAX_MICROS: u64 = 5_000_000;

fn svg(t: &Timeline, start_micros: u64, end_micros: u64) -> String {
    let scale = Scale {
        start_micros,
        end_micros: end_micros.max(start_micros + 1),
        run_end_micros: t.end_micros,
    };
    // Per cluster, the workload's topics first, internal ones (`__consumer_offsets`) after.
    let mut lanes: Vec<(&LaneKey, &Lane)> = t.lanes.iter().collect();
    lanes.sort_by_key(|(k, _)| (k.cluster, k.topic.starts_with("__")));
    let height = TOP + LANE_H * lanes.len() as f64 + 10.0;
    let width = LABEL_W + PLOT_W + RIGHT_MARGIN;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}">"#
    );
    axis(&mut s, scale, height);
    marker_strip(&mut s, scale, t);
    let violation_lane = t.violation_lane();
    for (i, (key, lane)) in lanes.iter().enumerate() {
        let y0 = TOP + LANE_H * i as f64;
        let name = format!("{} {}", t.cluster_name(key.cluster), key.partition_name());
        let _ = writeln!(
            s,
            r#"<g class="lane" data-lane="{}"><rect class="lane-bg" x="0" y="{y0:.1}" width="{width:.0}" height="{:.1}"/><text class="lane-label" x="6" y="{:.1}">{}</text>"#,
            esc(&name),
            LANE_H - 4.0,
            y0 + 16.0,
            esc(&name)
        );
        leader_band(&mut s, scale, lane, y0 + 4.0);
        state_band(&mut s, scale, lane, y0 + 22.0);
        offsets_chart(&mut s, scale, lane, y0 + 40.0, 38.0);
        lane_faults(&mut s, scale, t, key.cluster, y0);
        lane_marks(&mut s, scale, lane, y0 + 40.0);
        if violation_lane == Some(*key) {
            violation_line(&mut s, scale, t, y0, LANE_H - 4.0);
        }
        s.push_str("</g>\n");
    }
    if violation_lane.is_none() && t.violation.is_some() {
        // No lane to point at (a node-level invariant): mark the whole chart.
        violation_line(&mut s, scale, t, TOP, LANE_H * lanes.len() as f64);
    }
    s.push_str("</svg>\n");
    s
}

/// Tick step (µs) giving at most about 12 ticks.
fn tick_step(span_micros: u64) -> u64 {
    const STEPS_MICROS: [u64; 20] = [
        1_000,
        2_000,
        5_000,
        10_000,
        20_000,
        50_000,
        100_000,
        200_000,
        500_000,
        1_000_000,
        2_000_000,
        5_000_000,
        10_000_000,
        20_000_000,
        30_000_000,
        60_000_000,
        120_000_000,
        300_000_000,
        600_000_000,
        1_800_000_000,
    ];
    STEPS_MICROS
        .iter()
        .copied()
        .find(|step| span_micros / step <= 12)
        .unwrap_or(3_600_000_000)
}

fn axis(s: &mut String, scale: Scale, height: f64) {
    let step = tick_step(scale.end_micros - scale.start_micros);
    let _ = writeln!(
        s,
        r#"<text class="axis-title" x="6" y="18">simulated time (s)</text>"#
    );
    let mut t = scale.start_micros.div_ceil(step) * step;
    while t <= scale.end_micros {
        let x = scale.x(t);
        let _ = writeln!(
            s,
            r#"<line class="tick" x1="{x:.1}" y1="24" x2="{x:.1}" y2="{:.1}"/><text class="tick-label" x="{x:.1}" y="18">{}</text>"#,
            height - 6.0,
            seconds(t)
        );
        t += step;
    }
}

/// `12.5` (seconds, at most 3 decimals, trailing zeros dropped).
#[must_use]
pub fn seconds(t_micros: u64) -> String {
    let s = format!("{}.{:03}", t_micros / 1_000_000, (t_micros / 1_000) % 1_000);
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn marker_class(f: &FaultMarker) -> &'static str {
    match f.kind {
        MarkerKind::Operator => "op",
        MarkerKind::Fault => {
            let heal = ["restart", "resume", "heal", "unclog", "disk free"];
            if heal.iter().any(|h| f.text.starts_with(h)) {
                "fault-end"
            } else {
                "fault"
            }
        }
    }
}

fn marker_title(t: &Timeline, f: &FaultMarker) -> String {
    let who = if f.subject.is_empty() {
        "all".to_string()
    } else {
        f.subject.clone()
    };
    let clusters = f
        .clusters
        .iter()
        .map(|c| t.cluster_name(*c))
        .collect::<Vec<_>>()
        .join(",");
    format!(
        "t={}s #{} {who}: {}{}",
        seconds(f.t_micros),
        f.seq,
        f.text,
        if clusters.is_empty() {
            String::new()
        } else {
            format!(" [{clusters}]")
        }
    )
}

fn marker_strip(s: &mut String, scale: Scale, t: &Timeline) {
    let _ = writeln!(
        s,
        r#"<text class="strip-label" x="6" y="46">faults / operator</text>"#
    );
    for f in t.faults.iter().filter(|f| scale.contains(f.t_micros)) {
        let x = scale.x(f.t_micros);
        let _ = writeln!(
            s,
            r#"<path class="marker {}" d="M{x:.1} 52 l-4 -9 h8 z"><title>{}</title></path>"#,
            marker_class(f),
            esc(&marker_title(t, f))
        );
    }
    if let Some(v) = &t.violation {
        let x = scale.x(v.t_micros);
        let _ = writeln!(
            s,
            r##"<a href="#violation"><circle class="violation-dot" cx="{x:.1}" cy="47" r="6"><title>{}</title></circle></a>"##,
            esc(&format!("t={}s {v}", seconds(v.t_micros)))
        );
    }
}

/// Segments `[start, next start)` over `items` that overlap the scale's window, the last one
/// running to the window's end.
fn spans<T>(
    items: &[T],
    start: impl Fn(&T) -> u64,
    scale: Scale,
) -> impl Iterator<Item = (u64, u64, &T)> {
    items
        .iter()
        .enumerate()
        .map(move |(i, it)| {
            let a = start(it);
            let b = items
                .get(i + 1)
                .map_or(scale.end_micros.min(scale.run_end_micros), &start);
            (a, b.max(a), it)
        })
        .filter(move |(a, b, _)| *b >= scale.start_micros && *a <= scale.end_micros)
}

fn band_rect(s: &mut String, class: &str, style: &str, x0: f64, x1: f64, y: f64, title: &str) {
    let w = (x1 - x0).max(1.0);
    let _ = write!(
        s,
        r#"<rect class="{class}" style="{style}" x="{x0:.1}" y="{y:.1}" width="{w:.1}" height="15"><title>{}</title></rect>"#,
        esc(title)
    );
}

fn band_text(s: &mut String, x0: f64, x1: f64, y: f64, label: &str) {
    // Roughly 6 px per character; a label that does not fit is left to the tooltip.
    if x1 - x0 >= 6.0 * label.chars().count() as f64 + 6.0 {
        let _ = write!(
            s,
            r#"<text class="band-label" x="{:.1}" y="{:.1}">{}</text>"#,
            x0 + 3.0,
            y + 11.5,
            esc(label)
        );
    }
}

fn leader_band(s: &mut String, scale: Scale, lane: &Lane, y: f64) {
    for (a, b, span) in spans(&lane.leaders, |l| l.t_micros, scale) {
        let (x0, x1) = (scale.x(a), scale.x(b));
        let label = match span.leader {
            Some(l) => format!("b{l} e{}", span.epoch),
            None => format!("offline e{}", span.epoch),
        };
        let style = match span.leader {
            Some(_) => format!("fill:hsl({},55%,78%)", (span.epoch.rem_euclid(12)) * 30),
            None => "fill:#ddd".to_string(),
        };
        let class = if span.unclean {
            "leader unclean"
        } else {
            "leader"
        };
        let title = format!(
            "leader {} epoch {} from t={}s{}",
            span.leader
                .map_or("none".to_string(), |l| format!("broker {l}")),
            span.epoch,
            seconds(a),
            if span.unclean {
                " (UNCLEAN election)"
            } else {
                ""
            }
        );
        band_rect(s, class, &style, x0, x1, y, &title);
        band_text(s, x0, x1, y, &label);
    }
    s.push('\n');
}

fn state_color(state: &str) -> &'static str {
    match state {
        "MIRRORING" => "#9fd49f",
        "PREPARING" | "EPOCH_FENCING" | "ULE_RECOVERY" => "#f3e39b",
        "PAUSING" | "PAUSED" => "#b9c9e6",
        "STOPPING" => "#f5c08a",
        "STOPPED" => "#c9b3e0",
        "FAILED" => "#f08f8f",
        _ => "#e4e4e4",
    }
}

fn state_band(s: &mut String, scale: Scale, lane: &Lane, y: f64) {
    for (a, b, st) in spans(&lane.states, |c| c.t_micros, scale) {
        let (x0, x1) = (scale.x(a), scale.x(b));
        let title = format!(
            "{} se={} from t={}s (#{})",
            st.state,
            st.state_epoch,
            seconds(a),
            st.seq
        );
        let style = format!("fill:{}", state_color(&st.state));
        band_rect(s, "state", &style, x0, x1, y, &title);
        band_text(s, x0, x1, y, &st.state);
    }
    s.push('\n');
}

/// Step-chart points for one series, at most one point pair per pixel column (the last
/// value in the column wins), so a long run stays a small file.
fn step_points(scale: Scale, samples: &[(u64, i64)], y_of: impl Fn(i64) -> f64) -> Vec<(f64, f64)> {
    let mut pts: Vec<(f64, f64)> = Vec::new();
    let mut last_col: Option<i64> = None;
    for (t, v) in samples.iter().filter(|(t, _)| *t <= scale.end_micros) {
        let x = scale.x(*t);
        let y = y_of(*v);
        let col = x.floor() as i64;
        if last_col == Some(col)
            && let Some(p) = pts.last_mut()
        {
            p.1 = y;
            continue;
        }
        if let Some(&(_, py)) = pts.last() {
            pts.push((x, py));
        }
        pts.push((x, y));
        last_col = Some(col);
    }
    if let Some(&(_, py)) = pts.last() {
        pts.push((scale.x(scale.end_micros.min(scale.run_end_micros)), py));
    }
    pts
}

fn polyline(s: &mut String, class: &str, pts: &[(f64, f64)]) {
    if pts.is_empty() {
        return;
    }
    let mut d = String::new();
    for (x, y) in pts {
        let _ = write!(d, "{x:.1},{y:.1} ");
    }
    let _ = write!(
        s,
        r#"<polyline class="{class}" points="{}"/>"#,
        d.trim_end()
    );
}

fn offsets_chart(s: &mut String, scale: Scale, lane: &Lane, y: f64, h: f64) {
    let max = lane
        .offsets
        .iter()
        .map(|o| o.leo.max(o.hw))
        .max()
        .unwrap_or(0);
    let y_of = |v: i64| y + h - (v.max(0) as f64 / max.max(1) as f64) * h;
    let leo: Vec<(u64, i64)> = lane.offsets.iter().map(|o| (o.t_micros, o.leo)).collect();
    let hw: Vec<(u64, i64)> = lane.offsets.iter().map(|o| (o.t_micros, o.hw)).collect();
    let _ = write!(
        s,
        r#"<text class="scale-label" x="6" y="{:.1}">LEO/HW 0..{max}</text>"#,
        y + h - 2.0
    );
    polyline(s, "leo", &step_points(scale, &leo, y_of));
    polyline(s, "hw", &step_points(scale, &hw, y_of));
    if let Some(last) = lane
        .offsets
        .iter()
        .rev()
        .find(|o| o.t_micros <= scale.end_micros)
    {
        let _ = write!(
            s,
            r#"<text class="end-label" x="{:.1}" y="{:.1}">leo={} hw={}</text>"#,
            LABEL_W + PLOT_W - 2.0,
            y + 9.0,
            last.leo,
            last.hw
        );
    }
    s.push('\n');
}

fn lane_faults(s: &mut String, scale: Scale, t: &Timeline, cluster: u16, y0: f64) {
    for f in t.faults.iter().filter(|f| scale.contains(f.t_micros)) {
        if !f.clusters.is_empty() && !f.clusters.contains(&cluster) {
            continue;
        }
        let x = scale.x(f.t_micros);
        let _ = write!(
            s,
            r#"<line class="fault-line {}" x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}"><title>{}</title></line>"#,
            marker_class(f),
            y0 + 2.0,
            y0 + LANE_H - 6.0,
            esc(&marker_title(t, f))
        );
    }
    s.push('\n');
}

fn lane_marks(s: &mut String, scale: Scale, lane: &Lane, y: f64) {
    for m in lane.marks.iter().filter(|m| scale.contains(m.t_micros)) {
        let x = scale.x(m.t_micros);
        let _ = write!(
            s,
            r#"<path class="mark" d="M{x:.1} {y:.1} l-3 -4 l3 -4 l3 4 z"><title>{}</title></path>"#,
            esc(&format!(
                "t={}s #{} {}: {}",
                seconds(m.t_micros),
                m.seq,
                m.node,
                m.label
            ))
        );
    }
    s.push('\n');
}

fn violation_line(s: &mut String, scale: Scale, t: &Timeline, y0: f64, h: f64) {
    let Some(v) = &t.violation else { return };
    let x = scale.x(v.t_micros);
    // Near the right edge the label goes left of the line so it stays readable.
    let (label_x, anchor) = if x > LABEL_W + PLOT_W * 0.75 {
        (x - 8.0, "end")
    } else {
        (x + 8.0, "start")
    };
    let _ = writeln!(
        s,
        r#"<g class="violation-mark"><line class="violation-line" x1="{x:.1}" y1="{y0:.1}" x2="{x:.1}" y2="{:.1}"/><circle class="violation-dot" cx="{x:.1}" cy="{:.1}" r="5"/><text class="violation-label" text-anchor="{anchor}" x="{label_x:.1}" y="{:.1}">{}</text><title>{}</title></g>"#,
        y0 + h,
        y0 + h / 2.0,
        y0 + h - 10.0,
        esc(&v.invariant),
        esc(&format!("t={}s {v}", seconds(v.t_micros)))
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_short_and_exact() {
        assert_eq!(seconds(0), "0");
        assert_eq!(seconds(12_500_000), "12.5");
        assert_eq!(seconds(3_004_999), "3.004");
    }

    #[test]
    fn ticks_stay_few() {
        for end in [
            1,
            20_000,
            999_999,
            60_000_000,
            3_600_000_000,
            86_400_000_000,
        ] {
            let step = tick_step(end);
            assert!(end / step <= 24, "{end} step {step}");
        }
    }

    #[test]
    fn step_points_keep_one_pair_per_pixel_column() {
        let scale = Scale {
            start_micros: 0,
            end_micros: 1_000_000,
            run_end_micros: 1_000_000,
        };
        // 1000 samples in 1 s over 1000 px: about one column each; 10 000 would collapse.
        let dense: Vec<(u64, i64)> = (0..10_000).map(|i| (i * 100, i as i64)).collect();
        let pts = step_points(scale, &dense, |v| v as f64);
        assert!(pts.len() <= 2 * 1001 + 1, "{}", pts.len());
        assert_eq!(pts.last().map(|p| p.1), Some(9_999.0), "last value kept");
    }
}
