//! Use-cases, grouped by area. Services own their transactions and accept only validated input;
//! they know nothing of HTTP or GraphQL. Each area is a folder: `questions` (a question's life),
//! `knowledge` (verified answers and their reuse), `money` (budgets, scores, revenue, payouts),
//! `people` (accounts, rights, niches, admin decisions), `agents` (registry, tokens, A2A tasks,
//! the outbox) and `reach` (mail, operator webhooks, the live feed's filtering, notifications).
//! `audit` and `demo` serve every area.

pub mod agents;
pub mod audit;
pub mod demo;
pub mod knowledge;
pub mod money;
pub mod people;
pub mod questions;
pub mod reach;
