//! Use-cases, one module per area. Services own their transactions and accept only validated
//! input; they know nothing of HTTP or GraphQL.

pub mod access;
pub mod accounts;
pub mod admin;
pub mod admin_desk;
pub mod agent_tokens;
pub mod agents;
pub mod answering;
pub mod audit;
pub mod budget;
pub mod demo;
pub mod escalation;
pub mod expiry;
pub mod intake;
pub mod knowledge;
pub mod ledger_views;
pub mod lookup;
pub mod mail;
pub mod names;
pub mod niches;
pub mod operator_hooks;
pub mod outbox;
pub mod passwords;
pub mod payouts;
pub mod presence;
pub mod queue;
pub mod reach;
pub mod research;
pub mod reuse;
pub mod revenue;
pub mod scores;
pub mod sessions;
pub mod signals;
pub mod standing;
pub mod subscriptions;
pub mod triage;
