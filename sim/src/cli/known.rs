//! `chaos --known FILE`: a baseline of known findings (one `SEED VERDICT` per line, `#`
//! comments), so a sweep of a design with open findings still gates CI: it fails on any new
//! or changed verdict, and on a known finding that no longer reproduces (fixed: remove it from
//! the baseline). Every other seed must pass.
//!
//! A `kind VERDICT` line names a known kind with no seed in the baseline's range: a form of
//! a finding family first seen on a fresh seed (the comment beside it says which and why),
//! which fresh windows may then show too.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::CliError;

/// A baseline: known verdicts by seed, and the known kinds that have no seed in its range.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Known {
    /// `SEED VERDICT` lines.
    pub seeds: BTreeMap<u64, String>,
    /// `kind VERDICT` lines.
    pub kinds: BTreeSet<String>,
}

impl Known {
    /// The known verdict of `seed`.
    #[must_use]
    pub fn get(&self, seed: &u64) -> Option<&String> {
        self.seeds.get(seed)
    }

    /// Whether `seed` is listed.
    #[must_use]
    pub fn contains_key(&self, seed: &u64) -> bool {
        self.seeds.contains_key(seed)
    }

    /// Whether some known finding has this verdict kind.
    #[must_use]
    pub fn has_kind(&self, kind: &str) -> bool {
        self.kinds.contains(kind) || self.seeds.values().any(|k| k == kind)
    }

    /// Listed seeds.
    #[must_use]
    pub fn len(&self) -> usize {
        self.seeds.len()
    }

    /// No seed listed.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.seeds.is_empty()
    }
}

/// Reads a baseline file; a malformed line is a one-line error naming the file and line.
pub fn load(path: &Path) -> Result<Known, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::BadArgument(format!("{}: cannot read: {e}", path.display())))?;
    parse(&text, &path.display().to_string())
}

/// Parses baseline text.
pub fn parse(text: &str, file: &str) -> Result<Known, CliError> {
    let mut known = Known::default();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let bad = |why: &str| CliError::BadArgument(format!("{file}:{}: {why}: `{raw}`", i + 1));
        let mut parts = line.split_whitespace();
        let (Some(seed), Some(verdict), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(bad("expected `SEED VERDICT` or `kind VERDICT`"));
        };
        if verdict == "pass" {
            return Err(bad("a baseline lists failures only"));
        }
        if seed == "kind" {
            if !known.kinds.insert(verdict.to_string()) {
                return Err(bad("kind listed twice"));
            }
            continue;
        }
        let seed: u64 = seed.parse().map_err(|_| bad("bad seed"))?;
        if known.seeds.insert(seed, verdict.to_string()).is_some() {
            return Err(bad("seed listed twice"));
        }
    }
    Ok(known)
}

/// Differences between a sweep's failures (seed → verdict) and the baseline, restricted to
/// the seeds that ran; empty when they match exactly.
#[must_use]
pub fn differences(known: &Known, ran: &[u64], failed: &BTreeMap<u64, String>) -> Vec<String> {
    let mut out = Vec::new();
    for seed in ran {
        match (known.get(seed), failed.get(seed)) {
            (None, Some(v)) => out.push(format!("seed {seed}: new failure {v}")),
            (Some(k), None) => out.push(format!(
                "seed {seed}: known {k} no longer reproduces (fixed? remove it from the baseline)"
            )),
            (Some(k), Some(v)) if k != v => {
                out.push(format!("seed {seed}: known {k}, now {v}"));
            }
            _ => {}
        }
    }
    out
}

/// For fresh seeds (`chaos --known FILE --fresh`): the failures whose verdict no known
/// finding has (a new kind of failure); failures of a known kind are the findings' families
/// showing up on new seeds.
#[must_use]
pub fn unknown_kinds(known: &Known, failed: &BTreeMap<u64, String>) -> Vec<String> {
    failed
        .iter()
        .filter(|(_, v)| !known.has_kind(v))
        .map(|(seed, v)| format!("seed {seed}: {v}, a kind no known finding has"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn baselines_parse_and_compare() {
        let k = parse("# findings\n3 violation:x\n 5 liveness # why\n", "k").unwrap();
        assert_eq!(k.len(), 2);
        let failed: BTreeMap<u64, String> =
            [(3, "violation:x".to_string()), (7, "crash".to_string())].into();
        let d = differences(&k, &[3, 5, 7, 9], &failed);
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(d[0].contains("seed 5") && d[1].contains("seed 7"));
        assert!(differences(&k, &[3], &failed).is_empty());
    }

    #[test]
    fn fresh_seeds_are_judged_by_kind() {
        let k = parse(
            "3 violation:log_matching\n5 liveness:isr_short\nkind violation:x # fresh 9\n",
            "k",
        )
        .unwrap();
        assert_eq!(k.len(), 2);
        let failed: BTreeMap<u64, String> = [
            (900, "violation:log_matching".to_string()),
            (901, "violation:valid_transitions".to_string()),
            (902, "violation:x".to_string()),
            (903, "liveness:hw_below_leo".to_string()),
        ]
        .into();
        let d = unknown_kinds(&k, &failed);
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(d[0].starts_with("seed 901:") && d[1].starts_with("seed 903:"));
        // A kind-only line covers fresh seeds, never a seed of the baseline's range.
        assert_eq!(differences(&k, &[902], &failed).len(), 1);
    }

    #[test]
    fn malformed_baselines_name_the_line() {
        for bad in [
            "x liveness",
            "3",
            "3 pass",
            "3 a\n3 b",
            "3 a b",
            "kind pass",
            "kind a\nkind a",
        ] {
            let e = parse(bad, "k.txt").unwrap_err().to_string();
            assert!(e.starts_with("k.txt:"), "{e}");
        }
    }
}
