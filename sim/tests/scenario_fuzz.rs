//! Fuzzing the scenario parser with a fixed budget: every input, however broken, must come
//! back as a scenario or as one error line naming the file, never as a panic. Inputs are
//! mutations of the shipped scenario files (so most of them get past the TOML syntax and
//! reach the field checks) and raw bytes, all drawn with `arbitrary` from a fixed stream.

use arbitrary::Unstructured;
use mirror_sim::scenario::{Scenario, files_in};

/// A fixed byte stream (SplitMix64): the same inputs on every run.
fn stream(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed;
    (0..len)
        .map(|_| {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            (z ^ (z >> 31)) as u8
        })
        .collect()
}

/// Values of every TOML type, to put where another type is expected.
const VALUES: &[&str] = &[
    "\"four\"",
    "-1",
    "0",
    "99999999999999999999",
    "9223372036854775807",
    "-9223372036854775808",
    "1.5",
    "true",
    "[]",
    "[1, \"a\"]",
    "{}",
    "{ a = 1 }",
    "\"\"",
    "\"leader\"",
    "\"follower\"",
    "\"src\"",
    "\"dst\"",
    "\"MIRRORING\"",
    "\"LOG_ALIGNMENT\"",
    "1979-05-27T07:32:00Z",
];

/// One mutation of `text`, chosen by `u`.
fn mutate(u: &mut Unstructured<'_>, text: &str) -> arbitrary::Result<String> {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    if lines.is_empty() {
        lines.push(String::new());
    }
    let rounds = u.int_in_range(1..=4)?;
    for _ in 0..rounds {
        let i = u.choose_index(lines.len())?;
        match u.int_in_range(0..=7)? {
            // Replace a value by one of another type.
            0 => {
                if let Some((key, _)) = lines[i].split_once('=') {
                    let v = u.choose(VALUES)?;
                    lines[i] = format!("{key}= {v}");
                }
            }
            // Drop a line (a required field, a table header).
            1 => {
                lines.remove(i);
                if lines.is_empty() {
                    lines.push(String::new());
                }
            }
            // Duplicate a line (a key twice, a table twice).
            2 => {
                let l = lines[i].clone();
                lines.insert(i, l);
            }
            // Misspell a key or a value by one character.
            3 => {
                let mut chars: Vec<char> = lines[i].chars().collect();
                if !chars.is_empty() {
                    let at = u.choose_index(chars.len())?;
                    chars[at] = char::from(u.int_in_range(b' '..=b'~')?);
                }
                lines[i] = chars.into_iter().collect();
            }
            // Truncate the line at a random point (unterminated strings, dangling `=`).
            4 => {
                let cut = u.int_in_range(0..=lines[i].len())?;
                let cut = (0..=cut)
                    .rev()
                    .find(|c| lines[i].is_char_boundary(*c))
                    .unwrap_or(0);
                lines[i].truncate(cut);
            }
            // Insert arbitrary bytes as text (lossy: the parser gets a `&str`).
            5 => {
                let n = u.int_in_range(1..=24)?;
                let bytes = u.bytes(n)?;
                lines.insert(i, String::from_utf8_lossy(bytes).into_owned());
            }
            // Swap two lines (a field moved under another table).
            6 => {
                let j = u.choose_index(lines.len())?;
                lines.swap(i, j);
            }
            // Cut the file here.
            _ => lines.truncate(i),
        }
        if lines.is_empty() {
            lines.push(String::new());
        }
    }
    Ok(lines.join("\n"))
}

/// Parses `text`; an error must be one line that names the file.
fn parse_no_panic(text: &str, what: &str) -> bool {
    let result = std::panic::catch_unwind(|| Scenario::parse(text, "fuzz.toml", "fuzz"));
    match result {
        Ok(Ok(_)) => true,
        Ok(Err(e)) => {
            let line = e.to_string();
            assert!(
                line.starts_with("fuzz.toml") && !line.contains('\n'),
                "{what}: the error is not one line naming the file: {line:?}\n--- input ---\n{text}"
            );
            false
        }
        Err(_) => panic!("{what}: the parser panicked on\n--- input ---\n{text}"),
    }
}

#[test]
fn mutated_scenario_files_parse_or_fail_with_one_line() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let files = files_in(&dir).unwrap();
    assert!(files.len() > 10, "scenario files found: {}", files.len());
    let (mut ok, mut refused) = (0, 0);
    for (n, path) in files.iter().enumerate() {
        let text = std::fs::read_to_string(path).unwrap();
        assert!(
            parse_no_panic(&text, &path.display().to_string()),
            "{} must parse",
            path.display()
        );
        let bytes = stream(n as u64 + 1, 64 * 1024);
        let mut u = Unstructured::new(&bytes);
        for case in 0..60 {
            let Ok(mutated) = mutate(&mut u, &text) else {
                break;
            };
            if parse_no_panic(&mutated, &format!("{} case {case}", path.display())) {
                ok += 1;
            } else {
                refused += 1;
            }
        }
    }
    // Both outcomes occur: the mutations reach past the syntax and some still parse.
    assert!(ok > 0 && refused > 0, "parsed {ok}, refused {refused}");
}

#[test]
fn raw_bytes_parse_or_fail_with_one_line() {
    let bytes = stream(0xF022, 512 * 1024);
    let mut u = Unstructured::new(&bytes);
    for case in 0..2000 {
        let Ok(len) = u.int_in_range(0..=200usize) else {
            break;
        };
        let Ok(raw) = u.bytes(len) else {
            break;
        };
        let text = String::from_utf8_lossy(raw).into_owned();
        parse_no_panic(&text, &format!("raw case {case}"));
    }
    for text in [
        "",
        "\n",
        "description = \"x\"",
        "[[step]]",
        "[[cluster]]\nname = 1",
    ] {
        assert!(!parse_no_panic(text, "fixed"), "{text:?} must be refused");
    }
}
