//! The verbose trace is fit for replaying a failover bug: every request and response line
//! names its API and fields, a FAILED transition names its reason, and keeping verbose lines
//! changes neither the hash nor the event numbering.

use mirror_sim::chaos::{ChaosOptions, run_chaos_seed};

/// A mirror seed whose failback partition goes PREPARING→FAILED after a DescribeMirrors
/// round (a stale MIRRORING answer: "Detected mirror loop"). The assertions below hold for
/// any seed; this one also exercises the mirror RPCs and the FAILED reason.
const SEED: u64 = 335;

#[test]
fn verbose_lines_show_each_message_and_do_not_change_the_hash() {
    let compact = run_chaos_seed(
        SEED,
        &ChaosOptions {
            mirror: true,
            ..ChaosOptions::default()
        },
    );
    let verbose = run_chaos_seed(
        SEED,
        &ChaosOptions {
            mirror: true,
            verbose_trace: true,
            ..ChaosOptions::default()
        },
    );
    let (c, v) = (compact.report.unwrap(), verbose.report.unwrap());
    assert_eq!(c.trace_hash, v.trace_hash);
    assert_eq!(c.events, v.events);
    assert!(v.lines.len() > c.lines.len());
    let sends: Vec<&String> = v
        .lines
        .iter()
        .filter(|l| l.contains("→ request id=") || l.contains("→ response id="))
        .collect();
    assert!(sends.len() > 1000, "{} send lines", sends.len());
    for l in &sends {
        // `→ request id=N API ...`: an API name right after the id.
        let after = l.split(" id=").nth(1).unwrap();
        let mut words = after.split(' ');
        words.next();
        let api = words.next().unwrap_or_default();
        assert!(
            api.starts_with(|ch: char| ch.is_ascii_uppercase()),
            "no API on: {l}"
        );
    }
    let has = |needle: &str| v.lines.iter().any(|l| l.contains(needle));
    assert!(has("Fetch replica="), "follower fetches");
    assert!(has(" lfe="), "LastFetchedEpoch");
    assert!(has(" hw="), "fetch responses carry the HW");
    assert!(has("DescribeMirrors mirrors="), "the LME lookup");
    assert!(has("WriteMirrorStates "), "state writes");
    assert!(has("ReadMirrorStates NONE"), "state reads answered");
    for l in c.lines.iter().filter(|l| l.contains("→FAILED")) {
        assert!(l.contains(" reason=\""), "FAILED without its reason: {l}");
    }
}
