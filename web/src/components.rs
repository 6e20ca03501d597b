//! Pieces the pages share.

pub mod account;
pub mod clipboard;
pub mod correction;
pub mod countdown;
pub mod deliveries;
pub mod drafts;
pub mod held;
pub mod keys;
pub mod loaded;
pub mod money;
pub mod notice;
pub mod question_card;
pub mod secret_once;
pub mod time_ago;
pub mod title;
