//! askloop's status-like words, one type per concept, each the only place that knows its
//! values.
//!
//! Every schema enum is named in the operations' `extern_enums`, so every generated operation
//! uses these types instead of an enum of its own per operation. `Contribution.kind` is a
//! string (contribution types are data); pages read it with `ContributionKind::of(&field)`.
//!
//! Values are matched without regard to case (the server spells `String!` values `active` and
//! enum values `ACTIVE`); a value this build does not know yet is kept as `Other` rather than
//! failing the whole response.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Defines a concept: its variants with their lower-case spelling, how to read and show it.
macro_rules! vocabulary {
    ($(#[$meta:meta])* $name:ident { $($variant:ident = $word:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, PartialEq, Eq, Hash)]
        pub enum $name {
            $(
                #[doc = concat!("`", $word, "`")]
                $variant,
            )+
            /// A value this build does not know yet.
            Other(String),
        }

        impl $name {
            /// The value in lower case, as pages show it and style it (`badge status-…`).
            pub fn as_str(&self) -> &str {
                match self {
                    $(Self::$variant => $word,)+
                    Self::Other(word) => word.as_str(),
                }
            }

            /// Read a value however the server cases it; also takes the concept itself, so
            /// call sites survive a field turning from `String` into this enum.
            pub fn of(value: impl AsRef<str>) -> Self {
                let value = value.as_ref();
                $(
                    if value.eq_ignore_ascii_case($word) {
                        return Self::$variant;
                    }
                )+
                Self::Other(value.to_ascii_lowercase())
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                self.as_str()
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        // GraphQL enum values are the upper-case spelling.
        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.as_str().to_ascii_uppercase())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                String::deserialize(deserializer).map(Self::of)
            }
        }
    };
}

vocabulary! {
    /// The order of the triage queue (schema enum `QueueSort`).
    QueueSort { Urgency = "urgency", Expiring = "expiring", Newest = "newest", Bounty = "bounty" }
}

vocabulary! {
    /// Where a question is (schema enum `QuestionStatus`).
    QuestionStatus { Open = "open", Researching = "researching", Answered = "answered", Dismissed = "dismissed", Expired = "expired" }
}

vocabulary! {
    /// What a live queue change did (schema enum `QueueChangeKind`).
    QueueChangeKind { Added = "added", Updated = "updated", Removed = "removed" }
}

vocabulary! {
    /// How an operator acts on a question (schema enum `AnswerKind`).
    AnswerKind { Answered = "answered", InsufficientContext = "insufficient_context", NeedsResearch = "needs_research", FromKnowledge = "from_knowledge" }
}

vocabulary! {
    /// How a niche's agent budget stands this month (schema enum `BudgetState`).
    BudgetState { Ample = "ample", Tight = "tight", Exhausted = "exhausted" }
}

vocabulary! {
    /// Where a delivery to the agent is (schema enum `DeliveryStatus`).
    DeliveryStatus {
        Pending = "pending",
        Delivered = "delivered",
        Exhausted = "exhausted",
        Dropped = "dropped",
    }
}

vocabulary! {
    /// A member's role in a niche (schema enum `MemberRole`).
    MemberRole { Operator = "operator", Specialist = "specialist", Observer = "observer" }
}

vocabulary! {
    /// A membership's standing (`Member.status`, `Membership.status`).
    MemberStatus { Pending = "pending", Active = "active", Suspended = "suspended", Left = "left" }
}

vocabulary! {
    /// How urgent the agent says a question is (`Question.urgency`).
    Urgency { High = "high", Normal = "normal", Low = "low" }
}

vocabulary! {
    /// How the urgencies not mailed at once are gathered (schema enum `DigestFrequency`).
    DigestFrequency { Hourly = "hourly", Daily = "daily", Off = "off" }
}

vocabulary! {
    /// A niche's lifecycle (`Niche.status`).
    NicheStatus { Draft = "draft", Open = "open", Operated = "operated", Archived = "archived" }
}

vocabulary! {
    /// Where a contribution is in review (`Contribution.status`, `AnswerResult.contributionStatus`).
    ContributionStatus { Pending = "pending", Verified = "verified", Rejected = "rejected", Reversed = "reversed" }
}

vocabulary! {
    /// What earned a contribution (`Contribution.kind`).
    ContributionKind { AgentAnswer = "agent_answer", ManualAdjustment = "manual_adjustment" }
}

vocabulary! {
    /// Where an allocation of revenue is (`Allocation.status`).
    AllocationStatus { Held = "held", Accrued = "accrued", Scheduled = "scheduled", Paid = "paid", Reversed = "reversed" }
}

vocabulary! {
    /// Where a payout is (`Payout.status`).
    PayoutStatus { Scheduled = "scheduled", Paid = "paid", Failed = "failed" }
}

vocabulary! {
    /// How one delivery attempt ended (`DeliveryAttempt.outcome`).
    AttemptOutcome { Delivered = "delivered", Retry = "retry", Exhausted = "exhausted" }
}

vocabulary! {
    /// A line of a niche's budget ledger (`BudgetEntry.kind`).
    BudgetEntryKind { Reserve = "reserve", Charge = "charge", Release = "release", ChargeReversal = "charge_reversal" }
}

vocabulary! {
    /// What an anomaly signal is about (`AnomalySignal.subjectType`).
    SignalSubject { Question = "question", Answer = "answer", Operator = "operator", Agent = "agent" }
}

vocabulary! {
    /// How bad an anomaly signal is (`AnomalySignal.severity`).
    Severity { Low = "low", Medium = "medium", High = "high", Critical = "critical" }
}

vocabulary! {
    /// What an agent handed to people (schema enum `ExchangeKind`): a question answered for its
    /// bounty, or a task completed for what it actually cost.
    ExchangeKind { Question = "question", Task = "task" }
}

vocabulary! {
    /// Whether a registered agent is in service (schema enum `AgentStatus`).
    AgentStatus { Active = "active", Disabled = "disabled" }
}

vocabulary! {
    /// How an agent's events are signed (schema enum `WebhookScheme`).
    WebhookScheme { Chovy = "chovy", Standard = "standard" }
}

vocabulary! {
    /// Where a knowledge entry is in its life (schema enum `KnowledgeStatus`).
    KnowledgeStatus { Current = "current", Superseded = "superseded", Retracted = "retracted" }
}

vocabulary! {
    /// How a knowledge entry's answer was verified (schema enum `Verification`).
    Verification { Trust = "trust", Review = "review" }
}

impl Urgency {
    /// Most urgent first: the queue's order.
    pub fn rank(&self) -> u8 {
        match self {
            Self::High => 0,
            Self::Normal => 1,
            Self::Low | Self::Other(_) => 2,
        }
    }
}

impl AnswerKind {
    /// What an answer of this kind did, in words.
    pub fn describe(&self) -> String {
        match self {
            Self::Answered => "Answered".to_owned(),
            Self::InsufficientContext => "Not enough context".to_owned(),
            Self::NeedsResearch => "Asked the agent to research more".to_owned(),
            Self::FromKnowledge => "Answered from knowledge".to_owned(),
            Self::Other(word) => word.replace('_', " "),
        }
    }
}

impl ContributionKind {
    /// What the contribution was for, in words.
    pub fn describe(&self) -> String {
        match self {
            Self::AgentAnswer => "Answered a question".to_owned(),
            Self::ManualAdjustment => "Adjustment".to_owned(),
            Self::Other(word) => word.replace('_', " "),
        }
    }
}

vocabulary! {
    /// What I did to a waiting question (schema enum `MyPart`): the queue's "Handled by you".
    MyPart { Declined = "declined", SentBack = "sent_back", Answered = "answered", Rejected = "rejected", ResearchBack = "research_back" }
}

/// What a delivery told its receiver, in words (the question page and the admin's deliveries
/// show the event so, never its code).
pub fn event_words(event_type: &str) -> &'static str {
    match event_type {
        "expert_answer.created" => "The answer",
        "expert_answer.verified" => "The answer was verified",
        "expert_answer.rejected" => "The answer was rejected",
        "agent.research_requested" => "A request for research",
        "expert_question.expired" => "It expired",
        "expert_question.dismissed" => "It was dismissed",
        "expert_question.needs_context" => "Nobody had enough context",
        "expert_question.escalated" => "More people were told",
        "expert_question.consensus" => "The answers reached a consensus",
        "expert_question.disagreement" => "The answers disagreed",
        "task.completed" => "The task was completed",
        "knowledge.superseded" => "The knowledge it used was replaced",
        "knowledge.retracted" => "The knowledge it used was withdrawn",
        _ => "A message about it",
    }
}
