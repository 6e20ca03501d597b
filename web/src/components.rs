//! Components: they render what pages fetched.

pub mod notice;
pub mod question_card;
