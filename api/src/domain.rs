//! Pure rules: no I/O, no framework types, unit-tested in place.

pub mod addresses;
pub mod agents;
pub mod answer;
pub mod chain;
pub mod delivery;
pub mod handle;
pub mod html;
pub mod intake;
pub mod knowledge;
pub mod ledger;
pub mod placement;
pub mod research;
pub mod revenue;
pub mod scoring;
pub mod sealing;
pub mod signing;
pub mod slug;
pub mod text;
pub mod tokens;
pub mod user_agent;
pub mod weighing;
pub mod withdraw;
