//! HTML escaping: every piece of run data (node names, topics, violation details, trace
//! lines) goes through [`esc`] before it reaches the report, in text and attributes alike.

/// Escapes `&`, `<`, `>`, `"` and `'` for HTML text and quoted attribute values.
#[must_use]
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::esc;

    #[test]
    fn escapes_markup_and_quotes_and_keeps_the_rest() {
        assert_eq!(
            esc(r#"<script>alert("x&y")</script> it's"#),
            "&lt;script&gt;alert(&quot;x&amp;y&quot;)&lt;/script&gt; it&#39;s"
        );
        assert_eq!(
            esc("MIRRORING→STOPPING ¬src-1"),
            "MIRRORING→STOPPING ¬src-1"
        );
    }
}
