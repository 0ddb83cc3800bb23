//! Text for the self-contained HTML reports (`cover`, `mutate`, `check`): one escaping rule,
//! so every report shows kernel source with `<`, `&` and quotes the same way.

/// Escapes text for HTML element content and attribute values (single and double quotes).
pub fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}
