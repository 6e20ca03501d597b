//! The caps on what an agent sends (docs/contract.md#asking-a-question): lengths in Unicode
//! scalar values (Rust `char`s), cutting never splits one, and the largest amount askloop keeps.

/// The longest title a question keeps.
pub const TITLE_MAX: usize = 300;
/// The longest question text a question keeps.
pub const QUESTION_MAX: usize = 8_000;
/// The longest agent research (context) a question keeps.
pub const CONTEXT_MAX: usize = 20_000;
/// The longest deliverable hint a task may carry.
pub const DELIVERABLE_MAX: usize = 500;
/// How many options a question keeps; later ones are dropped.
pub const OPTIONS_MAX: usize = 12;
/// The longest option label.
pub const OPTION_LABEL_MAX: usize = 300;
/// The longest identifier an agent may send (external ids, agent ids, option ids).
pub const IDENTIFIER_MAX: usize = 200;
/// How many related resource ids a question keeps.
pub const RELATED_MAX: usize = 50;

/// The largest amount in minor units that one revenue event (or one of its costs), one bounty or
/// one budget setting may carry: 10^15, ten trillion in a two-decimal currency. Anything larger
/// is refused at the edge with a 400, so no sum askloop keeps can come near `i64::MAX`.
pub const MAX_AMOUNT_MINOR: i64 = 1_000_000_000_000_000;

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

/// Why an amount is refused, if it is: negative, or above [`MAX_AMOUNT_MINOR`].
pub fn amount_problem(field: &str, amount: i64) -> Option<String> {
    if amount < 0 {
        Some(format!("{field} cannot be negative"))
    } else if amount > MAX_AMOUNT_MINOR {
        Some(format!(
            "{field} is above the largest amount askloop keeps ({MAX_AMOUNT_MINOR} minor units)"
        ))
    } else {
        None
    }
}
