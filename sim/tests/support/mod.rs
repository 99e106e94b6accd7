//! Helpers shared by the tests that drive the built `mirrorsim` binary.

use std::process::Command;

/// Runs the built binary from the repository root: `(exit code, stdout, stderr)`.
pub fn mirrorsim(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_mirrorsim"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .output()
        .expect("mirrorsim runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).expect("utf-8 stdout"),
        String::from_utf8(out.stderr).expect("utf-8 stderr"),
    )
}
