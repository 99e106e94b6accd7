//! Rendering a hand-built timeline: lanes, markers, the failing event, escaping and
//! byte-identical output.

use super::faults::{FaultMarker, MarkerKind};
use super::timeline::{
    BatchRun, FinalLog, Lane, LaneKey, LaneMark, LeaderSpan, OffsetSample, StateChange, Timeline,
};
use super::{RunSummary, render};
use crate::check::Violation;

fn key(cluster: u16, topic: &str, partition: i32) -> LaneKey {
    LaneKey {
        cluster,
        topic: topic.into(),
        partition,
    }
}

fn lane(epoch: i32) -> Lane {
    Lane {
        leaders: vec![LeaderSpan {
            t_micros: 1_000_000,
            leader: Some(2),
            epoch,
            unclean: false,
        }],
        offsets: vec![
            OffsetSample {
                t_micros: 1_500_000,
                leo: 4,
                hw: 0,
            },
            OffsetSample {
                t_micros: 1_600_000,
                leo: 4,
                hw: 4,
            },
        ],
        states: vec![StateChange {
            t_micros: 2_000_000,
            seq: 40,
            state: "MIRRORING".into(),
            state_epoch: 1,
        }],
        marks: vec![LaneMark {
            t_micros: 2_500_000,
            seq: 41,
            node: "dst-1".into(),
            label: "truncate 4→2".into(),
        }],
        final_log: Some(FinalLog {
            broker: 2,
            log_start: 0,
            hw: 5,
            leo: 5,
            runs: vec![
                BatchRun {
                    base: 0,
                    last: 3,
                    epoch,
                    kind: "data".into(),
                    batches: 2,
                },
                BatchRun {
                    base: 4,
                    last: 4,
                    epoch: epoch + 1,
                    kind: "pid_reset".into(),
                    batches: 1,
                },
            ],
        }),
    }
}

fn timeline(violation: Option<Violation>) -> Timeline {
    let mut t = Timeline {
        clusters: vec!["src".into(), "dst".into()],
        end_micros: 10_000_000,
        violation,
        ..Timeline::default()
    };
    t.lanes.insert(key(0, "orders", 0), lane(1));
    t.lanes.insert(key(1, "orders", 0), lane(3));
    t.lanes.insert(key(1, "orders", 1), lane(5));
    t.faults.push(FaultMarker {
        t_micros: 3_000_000,
        seq: 50,
        kind: MarkerKind::Fault,
        subject: "dst-2".into(),
        text: "crash PowerLoss lost=10B files=1".into(),
        clusters: vec![1],
    });
    t
}

fn summary(trace: Vec<String>) -> RunSummary {
    RunSummary {
        title: "unit".into(),
        seed: 7,
        design: "seed-no-read-only".into(),
        verdict: "violation:read_only_until_stopped".into(),
        verdict_detail: String::new(),
        trace_hash: "00112233aabbccdd".into(),
        sim_seconds: 10.0,
        events: 99,
        trace,
    }
}

fn read_only_violation() -> Violation {
    let mut v = Violation::new(
        "read_only_until_stopped",
        "dst-2",
        Some(&mirror_core::types::TopicPartition::new("orders", 1)),
        Some(mirror_core::types::Offset(4)),
        "leader append at 4 while MIRRORING",
    );
    v.event_seq = 77;
    v.t_micros = 6_000_000;
    v
}

#[test]
fn one_lane_per_cluster_and_partition_with_header_and_markers() {
    let html = render(&timeline(None), &summary(Vec::new()));
    assert_eq!(html.matches("<g class=\"lane\"").count(), 3);
    for lane in ["src orders-0", "dst orders-0", "dst orders-1"] {
        assert!(html.contains(&format!("data-lane=\"{lane}\"")), "{lane}");
    }
    for want in [
        "00112233aabbccdd",
        "seed-no-read-only",
        ">MIRRORING</text>",
        "b2 e3",
        "class=\"marker fault\"",
        "crash PowerLoss",
        "polyline class=\"leo\"",
        "polyline class=\"hw\"",
        "truncate 4→2",
    ] {
        assert!(html.contains(want), "missing {want}");
    }
    assert!(
        !html.contains("class=\"violation-line\""),
        "no failing event"
    );
    for fetch in ["src=\"http", "href=\"http", "url(", "@import", "<link"] {
        assert!(!html.contains(fetch), "no network fetch: {fetch}");
    }
    assert!(!html.contains("<script"), "no scripts");
}

#[test]
fn the_failing_event_is_red_on_its_lane_and_in_the_trace() {
    let trace = vec![
        crate::trace::format::line(5_000_000, 76, "dst-2", "orders-1", "leader le=5 isr=[2]"),
        crate::trace::format::line(7_000_000, 80, "dst-2", "orders-1", "isr=[2,3]"),
    ];
    let html = render(&timeline(Some(read_only_violation())), &summary(trace));
    // Once in the whole-run view, once in the zoom on the moments before it.
    assert_eq!(html.matches("class=\"violation-line\"").count(), 2);
    assert!(html.contains("Zoom: the moments before the failing event"));
    let main = &html[..html.find("</svg>").expect("main view")];
    let lane_start = main.find("data-lane=\"dst orders-1\"").expect("lane");
    let line_at = main.find("class=\"violation-line\"").expect("line");
    assert!(
        line_at > lane_start,
        "the red line is drawn in the violating lane"
    );
    assert!(html.contains("id=\"violation\""));
    assert!(html.contains("invariant read_only_until_stopped broken"));
    assert!(html.contains("leader append at 4 while MIRRORING"));
    // The verdict row sits between events 76 and 80.
    let (a, row, b) = (
        html.find("id=\"ev-76\"").expect("76"),
        html.find("id=\"ev-violation\"").expect("row"),
        html.find("id=\"ev-80\"").expect("80"),
    );
    assert!(a < row && row < b);
}

#[test]
fn rendering_is_deterministic() {
    let t = timeline(Some(read_only_violation()));
    let s = summary(vec![crate::trace::format::line(1, 1, "src-1", "", "x")]);
    assert_eq!(render(&t, &s), render(&t.clone(), &s.clone()));
}

#[test]
fn every_run_text_is_escaped() {
    let evil = "<script>alert('x')</script>&\"";
    let mut t = timeline(None);
    t.clusters[1] = evil.into();
    t.faults[0].text = evil.into();
    t.lanes.get_mut(&key(1, "orders", 0)).expect("lane").states[0].state = evil.into();
    let mut v = read_only_violation();
    v.detail = evil.into();
    v.node = evil.into();
    t.violation = Some(v);
    let mut s = summary(vec![
        crate::trace::format::line(1, 1, "src-1", "t<0>", evil),
        evil.to_string(),
    ]);
    s.title = evil.into();
    s.design = evil.into();
    let html = render(&t, &s);
    assert!(!html.contains("<script"), "raw markup leaked");
    assert!(!html.contains("'x'"), "quotes leaked");
    assert!(html.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;"));
    assert!(html.contains("t&lt;0&gt;"));
}

#[test]
fn each_lane_s_final_log_shows_its_batch_kinds() {
    // Goal: the page names every batch run's kind (data, pid_reset, ...) per lane, coloured
    // by a class of that kind.
    let html = render(&timeline(None), &summary(Vec::new()));
    assert!(html.contains("<h2>Logs at the end of the run</h2>"));
    assert!(html.contains("<b>src orders-0</b> on broker 2: start=0 hw=5 leo=5"));
    assert!(
        html.contains("<tr class=\"kind-data\"><td>0-3</td><td>1</td><td>data</td><td>2</td></tr>")
    );
    assert!(html.contains(
        "<tr class=\"kind-pid_reset\"><td>4-4</td><td>4</td><td>pid_reset</td><td>1</td></tr>"
    ));
    let mut t = timeline(None);
    if let Some(l) = t.lanes.values_mut().next() {
        l.final_log = None;
    }
    assert!(render(&t, &summary(Vec::new())).contains("<b>src orders-0</b>: no live replica"));
}
