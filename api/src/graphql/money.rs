//! The ledger views: a niche's budget, my revenue, a niche's revenue; for admins the revenue
//! events, the anomaly signals (with a live subscription) and the audit log; and the admin mutation
//! that sets a niche's budget and bounties. Their rules: docs/contract.md#revenue-and-payouts,
//! docs/contract.md#budgets-and-bounties and docs/contract.md#anomaly-signals.
//!
//! By area: budgets (`budget`), revenue (`revenue`), payouts (`payouts`), what admins watch
//! (`oversight`), and the query root's money fields (`query`).

mod budget;
mod oversight;
mod payouts;
mod query;
mod revenue;

pub use budget::{Budget, BudgetEntry, MoneyMutation};
pub use oversight::{AnomalySignal, AuditEntryView, MoneySubscription};
pub use payouts::{Payout, PayoutAccount, PayoutMutation};
pub use query::MoneyQuery;
pub use revenue::{Balance, MemberShare, MyRevenue, NicheRevenue, RevenueEvent};
