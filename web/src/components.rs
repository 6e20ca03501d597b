//! Pieces the pages share.

pub mod money;
pub mod notice;
pub mod question_card;
pub mod time_ago;
