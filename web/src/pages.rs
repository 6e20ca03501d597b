//! Pages: each fetches what it shows.

pub mod activity;
pub mod admin;
pub mod agents;
pub mod knowledge;
pub mod login;
pub mod niches;
pub mod question;
pub mod queue;
pub mod revenue;
pub mod settings;
