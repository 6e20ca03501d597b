//! Every GraphQL operation the dashboard sends, as types generated at compile time from the
//! `.graphql` files in `web/graphql/` checked against the committed `schema.graphql`: a field
//! renamed or removed on the server fails the dashboard's build, not a page at run time.
//!
//! Each operation is a unit struct implementing `graphql_client::GraphQLQuery`, with a module of
//! the same name in snake case holding its `Variables` and `ResponseData`. Subscriptions are
//! operations too; `live` decodes their payloads into the same generated types.

use graphql_client::GraphQLQuery;

// The schema's enums, one type per concept for every operation (named in `extern_enums`).
pub use crate::vocab::{
    AgentStatus, AllocationStatus, AnswerKind, AttemptOutcome, BudgetEntryKind, BudgetState,
    ContributionStatus, DeliveryStatus, DigestFrequency, ExchangeKind, KnowledgeStatus, MemberRole,
    MemberStatus, MyPart, NicheStatus, PayoutStatus, QuestionStatus, QueueChangeKind, QueueSort,
    Severity, SignalSubject, Urgency, Verification, WebhookScheme,
};

/// The `DateTime` scalar: RFC 3339 text, shown through `components::time_ago`.
pub type DateTime = String;

// The derive reads `schema.graphql` without telling cargo; including it here makes any change to
// the schema rebuild (and so re-check) the dashboard's operations.
const _SCHEMA: &str = include_str!("../../schema.graphql");

/// Declares operations found in one `.graphql` file of `web/graphql/`.
macro_rules! operations {
    ($file:tt: $($(#[$meta:meta])* $name:ident),+ $(,)?) => {
        $(
            $(#[$meta])*
            #[derive(GraphQLQuery)]
            #[graphql(
                schema_path = "../schema.graphql",
                query_path = $file,
                response_derives = "Clone",
                extern_enums(
                    "QuestionStatus", "QueueChangeKind", "AnswerKind", "BudgetState", "DeliveryStatus",
                    "MemberRole", "MemberStatus", "Urgency", "NicheStatus", "ContributionStatus",
                    "AllocationStatus", "PayoutStatus", "AttemptOutcome", "BudgetEntryKind", "Severity",
                    "SignalSubject", "AgentStatus", "WebhookScheme", "DigestFrequency", "ExchangeKind",
                    "KnowledgeStatus", "Verification", "QueueSort", "MyPart"
                )
            )]
            pub struct $name;
        )+
    };
}

operations!("graphql/session.graphql":
    /// The signed-in person, if any.
    Me,
    /// Sign in; the server sets the session cookie.
    Login,
    /// Sign out; the server ends the session and clears the cookie.
    Logout,
);

operations!("graphql/niches.graphql":
    /// The niches anyone can see.
    Niches,
    /// My memberships with where I stand in each.
    Standing,
    /// "Your agent needs you": what waits for me across my niches.
    AwaitingMe,
    /// Live changes to what waits for me.
    AwaitingMeChanges,
    /// People in no niche yet (admins only).
    WaitingToJoin,
    /// My latest contributions and the tier ladder.
    ContributionsAndLadder,
);

operations!("graphql/queue_page.graphql":
    /// A niche's waiting questions as filtered and sorted, its counts, and the recently settled.
    QueuePage,
);

operations!("graphql/activity.graphql":
    /// What I answered, declined and sent back, with each one's state and verdict.
    MyActivity,
);

operations!("graphql/queue.graphql":
    /// The next page of a niche's waiting questions.
    QueueMore,
    /// Live changes to a niche's waiting queue.
    QueueChanges,
    /// Up to two current knowledge entries like a waiting question.
    SimilarKnowledge,
    /// Answer, decline or send back a question.
    AnswerQuestion,
    /// Close a question nobody should answer, with an optional reason for the agent.
    DismissQuestion,
    /// The heading's counts and the filtered total, re-read after live changes.
    QueueCounts,
    /// Say which question's answer form I have open (or none).
    MarkAnswering,
    /// Who is answering the niche's waiting questions, live.
    AnsweringNow,
);

operations!("graphql/revenue.graphql":
    /// My balances, allocations, payouts and payout address.
    MyRevenue,
    /// Save where I want to be paid.
    SetPayoutAddress,
    /// A niche's name, revenue and agent budget.
    NicheMoney,
);

operations!("graphql/question.graphql":
    /// One question with its answers, timeline and budget entries.
    QuestionPage,
    /// A question's deliveries to the agent (admins only).
    QuestionDeliveries,
    /// Take back a verified answer's contribution (admins only).
    ReverseContribution,
);

operations!("graphql/review.graphql":
    /// Contributions awaiting review, each with its question, answer and answerer's record.
    ReviewQueue,
    /// Changes to the review inbox, live (admins only).
    ReviewInboxChanges,
);

operations!("graphql/admin.graphql":
    /// The numbers on the admin tabs.
    AdminCounts,
    /// Every niche's slug and name (the review filter).
    AdminNicheNames,
    /// Every niche with its members.
    AdminMembers,
    /// The newest deliveries with their attempts.
    AdminDeliveries,
    /// Revenue events across niches.
    AdminRevenue,
    /// Who is owed what, payouts and payout addresses.
    AdminPayouts,
    /// A page of the audit log, filtered.
    AdminAudit,
    /// Mark an anomaly signal as looked at.
    AcknowledgeSignal,
    /// The newest anomaly signals.
    AnomalySignals,
    /// Anomaly signals as they arrive.
    AnomalySignalArrivals,
    /// Count a contribution.
    VerifyContribution,
    /// Never count a contribution.
    RejectContribution,
    /// Add a person to a niche.
    AddMember,
    /// Suspend a member.
    SuspendMember,
    /// Make a suspended member active again.
    ReinstateMember,
    /// Send an exhausted delivery again.
    Redeliver,
    /// Confirm a person's payout address.
    VerifyPayoutAddress,
    /// Schedule everything owed to a person.
    SchedulePayout,
    /// Settle a payout with the payment's reference.
    MarkPayoutPaid,
    /// Record that a payout failed; its money is owed again.
    MarkPayoutFailed,
    /// A niche's budget settings and where this month stands.
    NicheBudget,
    /// Set a niche's monthly limit and bounties.
    SetNicheBudget,
);

operations!("graphql/agents.graphql":
    /// Every registered agent with its niches, endpoint and newest deliveries, and the niches.
    AgentRegistry,
    /// Register an agent; its signing secret comes back once.
    CreateAgent,
    /// Give an agent a new signing secret (back once); the previous one retires later.
    RotateAgentSecret,
    /// Take an agent out of service: its requests get 403, its events wait.
    DisableAgent,
    /// Put an agent back in service; its waiting events are sent.
    EnableAgent,
    /// Replace the niches an agent may ask in.
    SetAgentNiches,
    /// Replace an agent's endpoint: URL, scheme and the events it wants.
    SetAgentEndpoint,
);

operations!("graphql/settings.graphql":
    /// My API keys that are not revoked.
    MyApiKeys,
    /// Make an API key for myself; the key comes back once.
    CreateApiKey,
    /// Revoke one of my API keys.
    RevokeApiKey,
    /// My sign-in sessions, this one marked.
    MySessions,
    /// End one of my sessions.
    EndSession,
    /// End all my sessions but this one.
    SignOutOtherSessions,
);

operations!("graphql/notifications.graphql":
    /// My address, whether it is verified, my time zone and quiet hours.
    MyMailSettings,
    /// Change my address; it is unverified until its mailed link is followed.
    SetMyEmail,
    /// Mail a verification link to my address.
    SendVerificationEmail,
    /// Set my time zone and quiet hours (none: no quiet hours).
    SetQuietHours,
    /// What I want mailed about each niche I belong to.
    MyNotificationPreferences,
    /// Choose what is mailed about one niche.
    SetNotificationPreference,
    /// My operator webhooks, and the niches I may register one for.
    MyOperatorWebhooks,
    /// Register an operator webhook; its secret comes back once.
    RegisterOperatorWebhook,
    /// Remove one of my operator webhooks.
    RemoveOperatorWebhook,
    /// Send a test event to one of my operator webhooks.
    TestOperatorWebhook,
    /// The most recent deliveries to one of my operator webhooks.
    OperatorWebhookDeliveries,
);

operations!("graphql/knowledge.graphql":
    /// A page of a niche's knowledge: a search, or the newest verified first, of one status.
    KnowledgeSearch,
    /// One knowledge entry with every version of its question's line.
    KnowledgeEntryPage,
    /// Propose a correction to a current knowledge entry; it waits for someone else's review.
    ProposeKnowledgeCorrection,
    /// A correction awaiting review: the version it corrects and the one it proposes.
    CorrectionReview,
);

/// A card from another operation, as the queue's first read shapes it: the same `QuestionCard`
/// fragment, generated once per operation (a live arrival, and a card of the next page).
macro_rules! card_as_first_read {
    ($operation:ident) => {
        impl From<$operation::QuestionCard> for queue_page::QuestionCard {
            fn from(card: $operation::QuestionCard) -> Self {
                Self {
                    id: card.id,
                    agent_name: card.agent_name,
                    title: card.title,
                    question: card.question,
                    context: card.context,
                    urgency: card.urgency,
                    status: card.status,
                    created_at: card.created_at,
                    expires_at: card.expires_at,
                    bounty_minor: card.bounty_minor,
                    kind: card.kind,
                    budget_limit_minor: card.budget_limit_minor,
                    deliverable: card.deliverable,
                    research_round: card.research_round,
                    escalation_step: card.escalation_step,
                    answers_wanted: card.answers_wanted,
                    answers_in: card.answers_in,
                    options: card
                        .options
                        .into_iter()
                        .map(|o| queue_page::QuestionCardOptions {
                            id: o.id,
                            label: o.label,
                        })
                        .collect(),
                }
            }
        }
    };
}

card_as_first_read!(queue_changes);
card_as_first_read!(queue_more);

/// A signal that arrived live, as the signal log's read shapes it (the `SignalRow` fragment).
impl From<anomaly_signal_arrivals::SignalRow> for anomaly_signals::SignalRow {
    fn from(s: anomaly_signal_arrivals::SignalRow) -> Self {
        Self {
            id: s.id,
            acknowledged_by: s.acknowledged_by,
            signal_id: s.signal_id,
            subject_type: s.subject_type,
            subject_id: s.subject_id,
            kind: s.kind,
            severity: s.severity,
            finding: s.finding,
            received_at: s.received_at,
        }
    }
}

/// A niche's allocations to me, shaped as my own allocations are (the `AllocationRow` fragment).
impl From<niche_money::AllocationRow> for my_revenue::AllocationRow {
    fn from(a: niche_money::AllocationRow) -> Self {
        Self {
            id: a.id,
            niche_slug: a.niche_slug,
            share_bps: a.share_bps,
            amount_minor: a.amount_minor,
            status: a.status,
            source_type: a.source_type,
            revenue_event_id: a.revenue_event_id,
            question_id: a.question_id,
            payout_id: a.payout_id,
            currency: a.currency,
            created_at: a.created_at,
        }
    }
}
