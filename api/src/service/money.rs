//! Money and what it follows: budgets and bounties, contributions and scores, tiers and shares,
//! revenue and payouts, the ledger's views, and the anomaly signals the monitor logs.

pub mod budget;
pub mod ledger_views;
pub mod payouts;
pub mod revenue;
pub mod scores;
pub mod signals;
pub mod standing;
