//! askloop's sea-orm entities, one file per table. They are storage types: the API has its own.

pub mod agent_answers;
pub mod agent_niches;
pub mod agent_questions;
pub mod agent_tokens;
pub mod agents;
pub mod allocations;
pub mod anomaly_signals;
pub mod api_keys;
pub mod audit_log;
pub mod budget_entries;
pub mod contribution_events;
pub mod contribution_scores;
pub mod contribution_tiers;
pub mod contribution_types;
pub mod deliveries;
pub mod delivery_attempts;
pub mod escalations;
pub mod knowledge_entries;
pub mod link_keys;
pub mod niche_members;
pub mod niches;
pub mod notification_preferences;
pub mod notification_settings;
pub mod notifications;
pub mod operator_webhooks;
pub mod payout_accounts;
pub mod payouts;
pub mod revenue_events;
pub mod sessions;
pub mod tier_history;
pub mod users;

/// The entities under their table names.
pub mod prelude {
    pub use super::agent_answers::Entity as AgentAnswers;
    pub use super::agent_niches::Entity as AgentNiches;
    pub use super::agent_questions::Entity as AgentQuestions;
    pub use super::agent_tokens::Entity as AgentTokens;
    pub use super::agents::Entity as Agents;
    pub use super::allocations::Entity as Allocations;
    pub use super::anomaly_signals::Entity as AnomalySignals;
    pub use super::api_keys::Entity as ApiKeys;
    pub use super::audit_log::Entity as AuditLog;
    pub use super::budget_entries::Entity as BudgetEntries;
    pub use super::contribution_events::Entity as ContributionEvents;
    pub use super::contribution_scores::Entity as ContributionScores;
    pub use super::contribution_tiers::Entity as ContributionTiers;
    pub use super::contribution_types::Entity as ContributionTypes;
    pub use super::deliveries::Entity as Deliveries;
    pub use super::delivery_attempts::Entity as DeliveryAttempts;
    pub use super::escalations::Entity as Escalations;
    pub use super::knowledge_entries::Entity as KnowledgeEntries;
    pub use super::link_keys::Entity as LinkKeys;
    pub use super::niche_members::Entity as NicheMembers;
    pub use super::niches::Entity as Niches;
    pub use super::notification_preferences::Entity as NotificationPreferences;
    pub use super::notification_settings::Entity as NotificationSettings;
    pub use super::notifications::Entity as Notifications;
    pub use super::operator_webhooks::Entity as OperatorWebhooks;
    pub use super::payout_accounts::Entity as PayoutAccounts;
    pub use super::payouts::Entity as Payouts;
    pub use super::revenue_events::Entity as RevenueEvents;
    pub use super::sessions::Entity as Sessions;
    pub use super::tier_history::Entity as TierHistory;
    pub use super::users::Entity as Users;
}
