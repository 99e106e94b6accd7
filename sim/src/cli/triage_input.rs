//! The failures `triage` groups: from a sweep it runs itself, or read back from the `--json`
//! lines of earlier sweeps (`chaos --json`). A file that cannot be read, or a line that is not
//! a seed object, a header or a summary, is a one-line error naming the file and line.

use std::path::{Path, PathBuf};

use super::CliError;
use crate::chaos::{ChaosOutcome, ChaosPlan, FailureSite};

/// One failing seed.
#[derive(Clone, Debug)]
pub struct Failure {
    /// The seed.
    pub seed: u64,
    /// Short verdict (`violation:log_matching`, `liveness`, `crash`).
    pub verdict: String,
    /// Where it failed; `None` when an older sweep did not record it (triage replays).
    pub site: Option<FailureSite>,
    /// The plan, when known (a sweep run here, or a readable capsule).
    pub plan: Option<ChaosPlan>,
    /// A two-cluster plan.
    pub mirror: bool,
    /// The design it ran under.
    pub design: String,
    /// Its capsule, if the sweep wrote one.
    pub capsule: Option<PathBuf>,
}

impl Failure {
    /// The failure of a run here (`None` for a pass).
    #[must_use]
    pub fn of(o: &ChaosOutcome) -> Option<Failure> {
        (!o.verdict.is_pass()).then(|| Failure {
            seed: o.seed,
            verdict: o.verdict.short(),
            site: o.site.clone(),
            plan: Some(o.plan.clone()),
            mirror: o.plan.mirror,
            design: o.plan.design.clone(),
            capsule: None,
        })
    }

    /// The plan to shrink: the one that ran, else the capsule's, else the seed's draw.
    #[must_use]
    pub fn plan(&self) -> ChaosPlan {
        if let Some(p) = &self.plan {
            return p.clone();
        }
        let mut p = if self.mirror {
            ChaosPlan::mirror(self.seed)
        } else {
            ChaosPlan::single_cluster(self.seed)
        };
        p.design.clone_from(&self.design);
        p
    }
}

/// Reads the failures of every file, in file and line order.
pub fn read_files(files: &[PathBuf]) -> Result<Vec<Failure>, CliError> {
    let mut out = Vec::new();
    for f in files {
        out.extend(read_file(f)?);
    }
    Ok(out)
}

fn read_file(path: &Path) -> Result<Vec<Failure>, CliError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::BadArgument(format!("{name}: cannot read: {e}")))?;
    parse(&text, &name)
}

/// Parses `--json` sweep output: one object per line; seed objects (`seed`, `verdict`, ...)
/// and the sweep's header and summary lines (`type`), which give the defaults for `mirror`
/// and `design`.
pub fn parse(text: &str, file: &str) -> Result<Vec<Failure>, CliError> {
    let mut mirror_default: Option<bool> = None;
    let mut design_default: Option<String> = None;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let at = |why: String| CliError::BadArgument(format!("{file}:{}: {why}", i + 1));
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| at(format!("not JSON: {e}")))?;
        let obj = v
            .as_object()
            .ok_or_else(|| at("expected one JSON object per line".into()))?;
        match obj.get("type").and_then(serde_json::Value::as_str) {
            Some("header") => {
                mirror_default = obj.get("mirror").and_then(serde_json::Value::as_bool);
                design_default = obj
                    .get("design")
                    .and_then(serde_json::Value::as_str)
                    .map(str::to_string);
                continue;
            }
            Some("summary") => continue,
            Some("seed") | None => {}
            Some(other) => return Err(at(format!("unknown line type `{other}`"))),
        }
        let seed = obj
            .get("seed")
            .and_then(serde_json::Value::as_u64)
            .ok_or_else(|| at("field `seed`: expected a seed number".into()))?;
        let verdict = obj
            .get("verdict")
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| at("field `verdict`: expected a string".into()))?;
        if verdict == "pass" {
            continue;
        }
        let capsule = obj
            .get("capsule")
            .and_then(serde_json::Value::as_str)
            .map(PathBuf::from);
        let plan = capsule.as_deref().and_then(|c| {
            std::fs::read_to_string(c)
                .ok()
                .and_then(|t| serde_json::from_str::<ChaosPlan>(&t).ok())
        });
        let mirror = obj
            .get("mirror")
            .and_then(serde_json::Value::as_bool)
            .or(mirror_default)
            .or(plan.as_ref().map(|p| p.mirror))
            .ok_or_else(|| {
                at("field `mirror`: missing (and no header or capsule says it)".into())
            })?;
        let design = obj
            .get("design")
            .and_then(serde_json::Value::as_str)
            .map(str::to_string)
            .or_else(|| design_default.clone())
            .unwrap_or_else(|| "seed".to_string());
        mirror_core::mirror::Design::parse(&design)
            .map_err(|e| at(format!("field `design`: {e}")))?;
        let site = match obj.get("site") {
            None | Some(serde_json::Value::Null) => None,
            Some(s) => Some(
                serde_json::from_value::<FailureSite>(s.clone())
                    .map_err(|e| at(format!("field `site`: {e}")))?,
            ),
        };
        out.push(Failure {
            seed,
            verdict: verdict.to_string(),
            site,
            plan,
            mirror,
            design,
            capsule,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_lines_give_failures_and_passes_are_skipped() {
        let text = concat!(
            r#"{"type":"header","mirror":true,"design":"seed"}"#,
            "\n",
            r#"{"seed":3,"verdict":"pass"}"#,
            "\n",
            r#"{"seed":4,"verdict":"liveness","site":{"cluster":"source","replica":"leader","stuck":"isr_short"}}"#,
            "\n",
            r#"{"seed":5,"verdict":"violation:log_matching","mirror":false,"design":"latest"}"#,
            "\n",
            r#"{"type":"summary"}"#,
            "\n",
        );
        let f = parse(text, "x.jsonl").unwrap();
        assert_eq!(f.len(), 2);
        assert_eq!(
            (f[0].seed, f[0].mirror, f[0].design.as_str()),
            (4, true, "seed")
        );
        assert_eq!(
            f[0].site.as_ref().unwrap().stuck.as_deref(),
            Some("isr_short")
        );
        assert_eq!(
            (f[1].seed, f[1].mirror, f[1].design.as_str()),
            (5, false, "latest")
        );
        assert!(f[1].site.is_none());
    }

    #[test]
    fn bad_lines_name_the_file_and_line() {
        for (text, line, what) in [
            (
                "{\"seed\":1,\"verdict\":\"pass\"}\n{\"seed\":",
                2,
                "not JSON",
            ),
            ("[1,2]", 1, "one JSON object per line"),
            (
                "\n{\"verdict\":\"crash\",\"mirror\":true}",
                2,
                "field `seed`",
            ),
            ("{\"seed\":1,\"verdict\":\"crash\"}", 1, "field `mirror`"),
            (
                "{\"seed\":1,\"verdict\":\"crash\",\"mirror\":true,\"design\":\"nope\"}",
                1,
                "field `design`",
            ),
        ] {
            let e = parse(text, "x.jsonl").unwrap_err().to_string();
            assert!(e.starts_with(&format!("x.jsonl:{line}: ")), "{e}");
            assert!(e.contains(what), "{e}");
            assert!(!e.contains('\n'), "one line: {e}");
        }
    }
}
