//! Tidy (TigerBeetle's `tidy.zig`): `core/` stays pure. No simulator, runtime, clock or
//! randomness may be named in its sources; the benchmark is the one place allowed a clock.

use std::fs;
use std::path::Path;

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in fs::read_dir(dir).expect("readable dir") {
        let p = entry.expect("entry").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn core_sources_name_no_simulator_clock_or_randomness() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 10, "found the sources");
    let forbidden = [
        "madsim",
        "tokio",
        "std::time",
        "SystemTime",
        "rand::",
        "thread::spawn",
        "HashMap",
        "HashSet",
    ];
    for f in files {
        let text = fs::read_to_string(&f).expect("utf8 source");
        for word in forbidden {
            assert!(
                !text.contains(word),
                "{} mentions `{word}`: core must stay pure",
                f.display()
            );
        }
    }
}
