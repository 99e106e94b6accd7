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
        let keyed_map = f.file_name().is_some_and(|n| n == "keyed_map.rs");
        if keyed_map {
            // The one `HashMap` in core: `KeyedMap`'s private index, with a fixed hasher
            // (no `RandomState`, so no randomness) and never iterated (walks read the
            // sorted entries), so no hash order can reach a result. Held to both here.
            for word in [
                "RandomState",
                "index.iter",
                "index.keys",
                "index.values",
                "index.drain",
                "index.into",
                "in &self.index",
                "in self.index",
            ] {
                assert!(!text.contains(word), "keyed_map.rs mentions `{word}`");
            }
        }
        for word in forbidden {
            if keyed_map && word == "HashMap" {
                continue;
            }
            assert!(
                !text.contains(word),
                "{} mentions `{word}`: core must stay pure",
                f.display()
            );
        }
    }
}
