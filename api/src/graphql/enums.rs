//! The status-like values the API shows, as GraphQL enums rather than strings, so clients can
//! match on them exhaustively and a generated client sees a new value as a change. Most mirror a
//! stored enum one-to-one (`remote` derives both conversions); the anomaly-signal and delivery
//! words are stored as checked text and are read back through [`Severity::from_stored`] and
//! friends.

use async_graphql::Enum;
use entity::payouts;
use entity::{agent_questions, allocations, budget_entries, contribution_events, niche_members};

/// What an agent handed to people (docs/contract.md#delegated-tasks).
#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(remote = "agent_questions::ExchangeKind")]
pub enum ExchangeKind {
    /// A question, answered for its bounty.
    Question,
    /// A task, completed for what it actually cost, up to its `budgetLimitMinor`.
    Task,
}

/// Where a member stands in a niche.
#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(remote = "niche_members::MemberStatus")]
pub enum MemberStatus {
    /// Asked to join; sees nothing yet.
    Pending,
    /// Sees and answers the niche's questions.
    Active,
    /// Stopped by an admin.
    Suspended,
    /// Left the niche.
    Left,
}

/// Where a contribution is in review.
#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(remote = "contribution_events::ContributionStatus")]
pub enum ContributionStatus {
    /// Awaiting a second person's review; its points do not count yet.
    Pending,
    /// Reviewed and counted.
    Verified,
    /// Reviewed and never counted.
    Rejected,
    /// Counted once, then taken back.
    Reversed,
}

/// Where an allocation's money is.
#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(remote = "allocations::AllocationStatus")]
pub enum AllocationStatus {
    /// Held until the answer it is for is verified: shown, not owed, in no payout.
    Held,
    /// Owed, not yet in a payout.
    Accrued,
    /// In a scheduled payout.
    Scheduled,
    /// Paid out.
    Paid,
    /// Taken back.
    Reversed,
}

/// Where a payout is.
#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(remote = "payouts::PayoutStatus")]
pub enum PayoutStatus {
    /// Gathered, waiting to be paid.
    Scheduled,
    /// Paid, with its reference.
    Paid,
    /// Failed; its allocations are owed again.
    Failed,
}

/// What a line of a niche's budget ledger records.
#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(remote = "budget_entries::BudgetEntryKind")]
pub enum BudgetEntryKind {
    /// A question's bounty held at intake.
    Reserve,
    /// The bounty spent on an answer.
    Charge,
    /// The bounty given back (dismissed or expired).
    Release,
    /// A charge given back because its answer was rejected or reversed.
    ChargeReversal,
}

/// How urgent the agent says a question is.
#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(remote = "agent_questions::Urgency")]
pub enum Urgency {
    /// Whenever someone can.
    Low,
    /// The usual.
    Normal,
    /// Soon, please.
    High,
}

/// How serious the monitor thinks an anomaly is.
#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
pub enum Severity {
    /// Worth a look.
    Low,
    /// Worth a look soon.
    Medium,
    /// Look now.
    High,
    /// Look now; something is badly wrong.
    Critical,
}

impl Severity {
    /// The stored word (checked at intake) as a severity.
    pub fn from_stored(word: &str) -> Option<Self> {
        Some(match word {
            "low" => Severity::Low,
            "medium" => Severity::Medium,
            "high" => Severity::High,
            "critical" => Severity::Critical,
            _ => return None,
        })
    }
}

/// What an anomaly signal is about.
#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
pub enum SignalSubject {
    /// A question.
    Question,
    /// An answer.
    Answer,
    /// An operator.
    Operator,
    /// An agent.
    Agent,
}

impl SignalSubject {
    /// The stored word (checked at intake) as a subject.
    pub fn from_stored(word: &str) -> Option<Self> {
        Some(match word {
            "question" => SignalSubject::Question,
            "answer" => SignalSubject::Answer,
            "operator" => SignalSubject::Operator,
            "agent" => SignalSubject::Agent,
            _ => return None,
        })
    }
}

/// How one delivery attempt ended.
#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
pub enum AttemptOutcome {
    /// The agent took it.
    Delivered,
    /// It failed; another attempt is due.
    Retry,
    /// It failed and the retry window is over.
    Exhausted,
}

impl AttemptOutcome {
    /// The stored word as an outcome.
    pub fn from_stored(word: &str) -> Option<Self> {
        Some(match word {
            "delivered" => AttemptOutcome::Delivered,
            "retry" => AttemptOutcome::Retry,
            "exhausted" => AttemptOutcome::Exhausted,
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_stored_word_the_services_write_reads_back() {
        for word in crate::service::money::signals::SEVERITIES {
            assert!(Severity::from_stored(word).is_some(), "{word}");
        }
        for word in crate::service::money::signals::SUBJECT_TYPES {
            assert!(SignalSubject::from_stored(word).is_some(), "{word}");
        }
        for word in ["delivered", "retry", "exhausted"] {
            assert!(AttemptOutcome::from_stored(word).is_some(), "{word}");
        }
        assert_eq!(Severity::from_stored("urgent"), None);
    }
}

/// Where a knowledge entry is in its life (docs/contract.md#knowledge).
#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(remote = "entity::knowledge_entries::KnowledgeStatus")]
pub enum KnowledgeStatus {
    /// The version to rely on.
    Current,
    /// A newer version replaced it.
    Superseded,
    /// The answer it was made from was rejected or reversed.
    Retracted,
}

/// How a knowledge entry's answer was verified.
#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(remote = "entity::knowledge_entries::Verification")]
pub enum Verification {
    /// On arrival: the niche trusts its answerer.
    Trust,
    /// By a second person's review.
    Review,
}
