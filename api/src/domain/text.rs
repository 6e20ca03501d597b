//! Length caps, and the characters text may hold (the one text rule, [`TextKind`]). Lengths are
//! Unicode scalar values (Rust `char`s), and cutting never splits one.

use serde_json::Value;

pub use askloop_wire::limits::{
    CONTEXT_MAX, DELIVERABLE_MAX, IDENTIFIER_MAX, OPTION_LABEL_MAX, OPTIONS_MAX, QUESTION_MAX,
    RELATED_MAX, TITLE_MAX, cap, char_len,
};

/// The longest answer body.
pub const ANSWER_BODY_MAX: usize = 8_000;
/// The longest result completing a task may carry.
pub const TASK_RESULT_MAX: usize = 20_000;
/// The longest anomaly finding.
pub const FINDING_MAX: usize = 4_000;

/// Which control characters a kind of text may hold: the one text rule
/// (docs/security.md#text), applied at every transport's edge and, for one-line texts, again
/// by the parser of the field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextKind {
    /// Any text: tab, line feed and carriage return, and no other C0 control character (NUL
    /// included, which PostgreSQL cannot store in text) nor DEL. What every edge checks, since
    /// an edge does not know which field wants one line.
    Lines,
    /// A one-line text (a name, a URL, an address, a reference): no control character at all.
    Line,
}

impl TextKind {
    /// Whether this kind of text refuses `c`.
    pub fn refuses(self, c: char) -> bool {
        let control = c.is_ascii_control();
        match self {
            TextKind::Lines => control && !matches!(c, '\t' | '\n' | '\r'),
            TextKind::Line => control,
        }
    }

    fn allowed(self) -> &'static str {
        match self {
            TextKind::Lines => "only tab and line breaks are allowed",
            TextKind::Line => "it is one line: not even a tab or a line break",
        }
    }
}

/// A text the rule refuses: the field (a path such as `input.body` or
/// `payload.options[2].label`) and the first character refused in it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{field} contains a control character (U+{code:04X}; {allowed})",
    code = u32::from(*character),
    allowed = kind.allowed()
)]
pub struct ControlCharacter {
    /// The field, named as the caller sent it.
    pub field: String,
    /// The first character refused.
    pub character: char,
    /// The rule it broke.
    pub kind: TextKind,
}

/// `text`, unless it holds a character `kind` refuses; the refusal names `field`.
pub fn checked<'a>(
    field: &str,
    text: &'a str,
    kind: TextKind,
) -> Result<&'a str, ControlCharacter> {
    match text.chars().find(|&c| kind.refuses(c)) {
        None => Ok(text),
        Some(character) => Err(ControlCharacter {
            field: field.to_owned(),
            character,
            kind,
        }),
    }
}

/// `text` if it is one line ([`TextKind::Line`]); the refusal names `field`.
pub fn one_line<'a>(field: &str, text: &'a str) -> Result<&'a str, ControlCharacter> {
    checked(field, text, TextKind::Line)
}

/// The first string (or object key) in `value` that holds a character [`TextKind::Lines`]
/// refuses, named by its path from `value` (`payload.options[2].label`; `the body` for a bare
/// string). Fields come in the order the object holds them.
pub fn first_control_character(value: &Value) -> Option<ControlCharacter> {
    fn walk(value: &Value, path: &mut String) -> Option<char> {
        let refused = |text: &str| text.chars().find(|&c| TextKind::Lines.refuses(c));
        match value {
            Value::String(text) => refused(text),
            Value::Array(items) => items.iter().enumerate().find_map(|(i, item)| {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                let found = walk(item, path);
                if found.is_none() {
                    path.truncate(len);
                }
                found
            }),
            Value::Object(fields) => fields.iter().find_map(|(key, item)| {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                // A key with a control character is shown escaped, never raw.
                path.push_str(&key.escape_default().to_string());
                let found = refused(key).or_else(|| walk(item, path));
                if found.is_none() {
                    path.truncate(len);
                }
                found
            }),
            _ => None,
        }
    }
    let mut path = String::new();
    walk(value, &mut path).map(|character| ControlCharacter {
        field: if path.is_empty() {
            "the body".to_owned()
        } else {
            path
        },
        character,
        kind: TextKind::Lines,
    })
}

/// Where in `value` a string (or an object key) holds a refused control character, as a path
/// such as `payload.options[2].label`; `None` when there is none.
pub fn control_character_at(value: &Value) -> Option<String> {
    first_control_character(value).map(|refused| refused.field)
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
    fn the_refusal_names_the_field_and_the_character() {
        assert_eq!(
            checked("body", "tab\tand\r\nbreaks", TextKind::Lines),
            Ok("tab\tand\r\nbreaks")
        );
        let nul = checked("input.body", "a\u{0}b", TextKind::Lines).expect_err("NUL");
        assert_eq!(nul.character, '\u{0}');
        assert_eq!(
            nul.to_string(),
            "input.body contains a control character (U+0000; only tab and line breaks are allowed)"
        );
        let del = checked("name", "x\u{7f}", TextKind::Lines).expect_err("DEL");
        assert_eq!(del.character, '\u{7f}');
        let tab = one_line("name", "two\twords").expect_err("a tab in one line");
        assert!(
            tab.to_string()
                .starts_with("name contains a control character (U+0009; it is one line"),
            "{tab}"
        );
        assert_eq!(
            one_line("name", "Ana María 🦀 \u{a0}\u{85}"),
            Ok("Ana María 🦀 \u{a0}\u{85}")
        );
        let bell = first_control_character(&serde_json::json!({"a": ["ok", "ring \u{7}"]}));
        assert_eq!(
            bell.map(|c| (c.field, c.character)),
            Some(("a[1]".to_owned(), '\u{7}'))
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
