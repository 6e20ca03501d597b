//! Length caps. Lengths are Unicode scalar values (Rust `char`s), and cutting never splits one.

/// The longest title a question keeps.
pub const TITLE_MAX: usize = 300;
/// The longest question text a question keeps.
pub const QUESTION_MAX: usize = 8_000;
/// The longest agent research (context) a question keeps.
pub const CONTEXT_MAX: usize = 20_000;
/// The longest answer body.
pub const ANSWER_BODY_MAX: usize = 8_000;
/// The longest anomaly finding.
pub const FINDING_MAX: usize = 4_000;
/// How many options a question keeps; later ones are dropped.
pub const OPTIONS_MAX: usize = 12;
/// The longest option label.
pub const OPTION_LABEL_MAX: usize = 300;
/// The longest identifier an agent may send (external ids, agent ids, option ids).
pub const IDENTIFIER_MAX: usize = 200;
/// How many related resource ids a question keeps.
pub const RELATED_MAX: usize = 50;

/// `text` cut to at most `max` chars, on a char boundary.
pub fn cap(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((byte, _)) => text[..byte].to_owned(),
        None => text.to_owned(),
    }
}

/// The number of chars in `text`, the unit every cap is counted in.
pub fn char_len(text: &str) -> usize {
    text.chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capping_counts_chars_not_bytes() {
        assert_eq!(cap("héllo", 2), "hé");
        assert_eq!(cap("🦀🦀🦀", 2), "🦀🦀");
        assert_eq!(cap("short", 300), "short");
        assert_eq!(cap("", 0), "");
        assert_eq!(char_len(&cap(&"é".repeat(400), TITLE_MAX)), TITLE_MAX);
    }
}
