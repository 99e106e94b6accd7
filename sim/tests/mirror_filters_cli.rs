//! Bad input to the KIP-1279 filter steps through the built binary: a malformed step field
//! is refused before anything runs, with one line naming the file, line and field, exit 2;
//! an invalid regex is not bad input but the cluster's INVALID_REGULAR_EXPRESSION, so a file
//! expecting it passes (exit 0) and one expecting NONE fails its step (exit 1).

mod support;

fn write(name: &str, body: &str) -> String {
    let dir = std::env::temp_dir().join(format!("mirrorsim-filters-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, body).expect("write scenario");
    path.display().to_string()
}

const WORLD: &str = r#"description = "filters"

[[cluster]]
name = "src"
brokers = 1

[[cluster]]
name = "dst"
brokers = 1

[[step]]
do = "create_topic"
cluster = "src"
topic = "orders"

[[step]]
do = "create_mirror"
cluster = "dst"
mirror = "m1"
source = "src"
"#;

#[test]
fn a_malformed_pattern_field_exits_2_naming_file_line_and_field() {
    let file = write(
        "bad.toml",
        &format!(
            "{WORLD}\n[[step]]\ndo = \"stop_mirror\"\ncluster = \"dst\"\nmirror = \"m1\"\npatterns = \"orders-.*\"\n"
        ),
    );
    let (code, stdout, stderr) = support::mirrorsim(&["run", &file]);
    assert_eq!(code, 2, "stdout: {stdout}\nstderr: {stderr}");
    let line = format!("{file}:26: field `step[3].patterns`: invalid type: string");
    assert!(stderr.contains(&line), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
}

#[test]
fn an_invalid_regex_is_answered_by_the_cluster() {
    let step = |expect: &str| {
        format!(
            "{WORLD}\n[[step]]\ndo = \"start_mirror\"\ncluster = \"dst\"\nmirror = \"m1\"\nsource = \"src\"\ntopics = [\"orders\"]\ninclude_patterns = [\"orders-(\"]\nexpect = \"{expect}\"\n\n[expect]\nverdict = \"pass\"\n"
        )
    };
    let ok = write("regex_expected.toml", &step("INVALID_REGULAR_EXPRESSION"));
    let (code, stdout, stderr) = support::mirrorsim(&["run", &ok]);
    assert_eq!(code, 0, "stdout: {stdout}\nstderr: {stderr}");
    let wrong = write("regex_unexpected.toml", &step("NONE"));
    let (code, stdout, _) = support::mirrorsim(&["run", &wrong]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("expected NONE, got INVALID_REGULAR_EXPRESSION"),
        "{stdout}"
    );
}
