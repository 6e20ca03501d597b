//! Length caps, and the characters text may hold. Lengths are Unicode scalar values (Rust
//! `char`s), and cutting never splits one.

use serde_json::Value;

/// The longest title a question keeps.
pub const TITLE_MAX: usize = 300;
/// The longest question text a question keeps.
pub const QUESTION_MAX: usize = 8_000;
/// The longest agent research (context) a question keeps.
pub const CONTEXT_MAX: usize = 20_000;
/// The longest answer body.
pub const ANSWER_BODY_MAX: usize = 8_000;
/// The longest result completing a task may carry.
pub const TASK_RESULT_MAX: usize = 20_000;
/// The longest deliverable hint a task may carry.
pub const DELIVERABLE_MAX: usize = 500;
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

/// Whether `c` is a control character askloop refuses in text: the C0 controls (NUL
/// included, which PostgreSQL cannot store in text) other than tab, line feed and carriage
/// return, and DEL.
fn refused_control(c: char) -> bool {
    (c.is_ascii_control() && !matches!(c, '\t' | '\n' | '\r')) || c == '\u{7f}'
}

/// Where in `value` a string (or an object key) holds a refused control character, as a path
/// such as `payload.options[2].label`; `None` when there is none.
pub fn control_character_at(value: &Value) -> Option<String> {
    fn walk(value: &Value, path: &mut String) -> bool {
        match value {
            Value::String(text) => text.chars().any(refused_control),
            Value::Array(items) => items.iter().enumerate().any(|(i, item)| {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                let found = walk(item, path);
                if !found {
                    path.truncate(len);
                }
                found
            }),
            Value::Object(fields) => fields.iter().any(|(key, item)| {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                // A key with a control character is shown escaped, never raw.
                path.push_str(&key.escape_default().to_string());
                let found = key.chars().any(refused_control) || walk(item, path);
                if !found {
                    path.truncate(len);
                }
                found
            }),
            _ => false,
        }
    }
    let mut path = String::new();
    walk(value, &mut path).then(|| {
        if path.is_empty() {
            "the body".to_owned()
        } else {
            path
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_found_with_their_path() {
        let clean = serde_json::json!({"payload": {"title": "tab\there\r\nnew line", "n": 1}});
        assert_eq!(control_character_at(&clean), None);
        let nul = serde_json::json!({"payload": {"options": [{"id": "a"}, {"label": "x\u{0}y"}]}});
        assert_eq!(
            control_character_at(&nul).as_deref(),
            Some("payload.options[1].label")
        );
        let bell = serde_json::json!({"payload": {"question": "ring \u{7}"}});
        assert_eq!(
            control_character_at(&bell).as_deref(),
            Some("payload.question")
        );
        let key = serde_json::json!({"payload": {"ctx": {"a\u{1}b": "v"}}});
        assert_eq!(
            control_character_at(&key).as_deref(),
            Some("payload.ctx.a\\u{1}b")
        );
        assert_eq!(
            control_character_at(&serde_json::json!("\u{0}")).as_deref(),
            Some("the body")
        );
    }

    #[test]
    fn capping_counts_chars_not_bytes() {
        assert_eq!(cap("héllo", 2), "hé");
        assert_eq!(cap("🦀🦀🦀", 2), "🦀🦀");
        assert_eq!(cap("short", 300), "short");
        assert_eq!(cap("", 0), "");
        assert_eq!(char_len(&cap(&"é".repeat(400), TITLE_MAX)), TITLE_MAX);
    }
}
