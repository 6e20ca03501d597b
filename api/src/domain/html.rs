//! Text made safe to place inside HTML: the mails' HTML part and the pages signed links answer with.

/// HTML-escaped `text`.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn the_five_markup_characters_are_escaped_and_nothing_else() {
        assert_eq!(
            escape(r#"<a href="x">Tom & Jerry's</a> é"#),
            "&lt;a href=&quot;x&quot;&gt;Tom &amp; Jerry&#39;s&lt;/a&gt; é"
        );
    }
}
