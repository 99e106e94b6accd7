//! The scenario steps on a mirror's configs (resource `CLUSTER_MIRROR`, kip1279.md B
//! "IncrementalAlterConfigs / DescribeConfigs with resource type CLUSTER_MIRROR"):
//! `alter_mirror_config`, `expect_mirror_config`, `wait_mirror_config`.

use mirror_core::protocol::Request;
use mirror_core::protocol::metadata::ConfigResource;

use super::{Ctx, StepKind, StepResult, check_error, inspect};

impl Ctx<'_> {
    /// Runs one of the mirror config steps (any other kind is a caller bug).
    pub(super) async fn mirror_config_step(&mut self, kind: &StepKind) -> StepResult {
        let w = self.w.clone();
        match kind {
            StepKind::AlterMirrorConfig {
                cluster,
                mirror,
                key,
                value,
                expect,
            } => {
                let req = Request::IncrementalAlterConfigs {
                    resource: ConfigResource::Mirror(mirror.clone()),
                    ops: vec![(key.clone(), value.clone())],
                };
                let e = self.admin_error(self.cluster(cluster), req).await;
                check_error(e, expect.as_ref())?;
                Ok(format!("{cluster} mirror {mirror} {key}={value:?}: {e}"))
            }
            StepKind::ExpectMirrorConfig {
                cluster,
                mirror,
                key,
                value,
            } => {
                let got = inspect::mirror_config(&w, self.cluster(cluster), mirror, key);
                if got == *value {
                    Ok(format!("{cluster} mirror {mirror} {key}={got:?}"))
                } else {
                    Err(format!(
                        "{cluster} mirror {mirror} {key}: expected {value:?}, got {got:?}"
                    ))
                }
            }
            StepKind::WaitMirrorConfig {
                cluster,
                mirror,
                key,
                value,
                timeout_ms,
            } => {
                let c = self.cluster(cluster);
                let what = format!("{cluster} mirror {mirror} {key}={value:?}");
                self.wait(*timeout_ms, &what, |w| {
                    inspect::mirror_config(w, c, mirror, key) == *value
                })
                .await
                .map_err(|e| {
                    let now = inspect::mirror_config(&w, c, mirror, key);
                    format!("{e} (now {now:?})")
                })
            }
            other => Err(format!("not a mirror config step: {other:?}")),
        }
    }
}
