//! What an agent sends and reads back on the signed routes (docs/contract.md#signed-routes): the
//! question it asks, what the intake answers, a question as the lookup shows it, and the answer
//! with its review state. Field names on the wire are camelCase; here they are Rust's.

use std::time::Duration;

use askloop_wire::Field;
use askloop_wire::ask::{AnswersRequest, AskOption, AskRequest};
use chrono::{DateTime, Utc};
use rand::Rng;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// A question to ask ([`Client::ask`](crate::Client::ask)).
///
/// [`Question::new`] gives it a fresh `external_id`. Keep the value (or the id) for as long as a
/// retry is possible: asking again with the same external id is the same question (askloop
/// answers `duplicate: true`), so a retry after a timeout never asks twice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// The niche's slug.
    pub niche: String,
    /// The agent's own id for the question; unique per niche (at most 200 characters).
    pub external_id: String,
    /// A short title (cut to 300 characters by askloop).
    pub title: String,
    /// The question itself (cut to 8000 characters).
    pub question: String,
    /// What the agent found so far (cut to 20000 characters). People see it as untrusted text.
    pub context: Option<String>,
    /// Answers to choose from (askloop keeps the first 12).
    pub options: Vec<AnswerOption>,
    /// How soon it matters; askloop's default is normal.
    pub urgency: Option<Urgency>,
    /// The bounty in minor units; without one, the niche's default bounty.
    pub bounty_minor: Option<u64>,
    /// How long people may answer (60 s to 30 days, whole seconds); without one, the niche's
    /// question lifetime.
    pub expires_in: Option<Duration>,
    /// Ids of what the question is about (askloop keeps the first 50).
    pub related_resource_ids: Vec<String>,
    /// Set, this is a delegated task (docs/contract.md#delegated-tasks) that may cost at most
    /// this many minor units: reserved now, charged what the person reports it cost.
    pub budget_limit_minor: Option<u64>,
    /// What a task should deliver (at most 500 characters).
    pub deliverable: Option<String>,
    /// Ask several people (docs/contract.md#several-answers): how many answers, 2 to 7, and the
    /// share of them the plurality option needs for a consensus, in basis points (5000–10000;
    /// askloop's default 6000 when `None`).
    pub answers: Option<(u8, Option<u16>)>,
}

/// One answer people may choose: its id (unique in the question, at most 200 characters) and
/// what people read (cut to 300 characters). The wire crate's type, as askloop reads it.
pub use askloop_wire::ask::QuestionOption as AnswerOption;

/// How soon a question matters (`low`, `normal`, `high`). The wire crate's type.
pub use askloop_wire::ask::Urgency;

/// A fresh external id: `sdk-` and 128 random bits in hex.
pub fn new_external_id() -> String {
    format!("sdk-{:032x}", rand::rng().random::<u128>())
}

impl Question {
    /// A question in `niche` with a fresh external id and nothing optional set.
    pub fn new(
        niche: impl Into<String>,
        title: impl Into<String>,
        question: impl Into<String>,
    ) -> Self {
        Self {
            niche: niche.into(),
            external_id: new_external_id(),
            title: title.into(),
            question: question.into(),
            context: None,
            options: Vec::new(),
            urgency: None,
            bounty_minor: None,
            expires_in: None,
            related_resource_ids: Vec::new(),
            budget_limit_minor: None,
            deliverable: None,
            answers: None,
        }
    }

    /// Ask `wanted` people (2 to 7) instead of one; the consensus needs `agreement_bps` of
    /// them on one option (5000–10000, `None` for askloop's 6000). The question needs options.
    pub fn several_answers(mut self, wanted: u8, agreement_bps: Option<u16>) -> Self {
        self.answers = Some((wanted, agreement_bps));
        self
    }

    /// A task in `niche`: `what` to do, costing at most `budget_limit_minor` (more than 0). A task
    /// takes no options and no bounty.
    pub fn task(
        niche: impl Into<String>,
        title: impl Into<String>,
        what: impl Into<String>,
        budget_limit_minor: u64,
    ) -> Self {
        Self {
            budget_limit_minor: Some(budget_limit_minor),
            ..Self::new(niche, title, what)
        }
    }

    /// What a task should deliver.
    pub fn deliverable(mut self, deliverable: impl Into<String>) -> Self {
        self.deliverable = Some(deliverable.into());
        self
    }

    /// Use the agent's own id instead of a generated one.
    pub fn external_id(mut self, id: impl Into<String>) -> Self {
        self.external_id = id.into();
        self
    }

    /// What the agent found so far.
    pub fn context(mut self, context: impl Into<String>) -> Self {
        self.context = Some(context.into());
        self
    }

    /// Add an answer to choose from.
    pub fn option(mut self, id: impl Into<String>, label: impl Into<String>) -> Self {
        self.options.push(AnswerOption {
            id: id.into(),
            label: label.into(),
        });
        self
    }

    /// How soon it matters.
    pub fn urgency(mut self, urgency: Urgency) -> Self {
        self.urgency = Some(urgency);
        self
    }

    /// The bounty in minor units.
    pub fn bounty_minor(mut self, bounty: u64) -> Self {
        self.bounty_minor = Some(bounty);
        self
    }

    /// How long people may answer (whole seconds count).
    pub fn expires_in(mut self, lifetime: Duration) -> Self {
        self.expires_in = Some(lifetime);
        self
    }

    /// Add the id of something the question is about.
    pub fn related_resource(mut self, id: impl Into<String>) -> Self {
        self.related_resource_ids.push(id.into());
        self
    }

    /// The intake's typed request (docs/contract.md#asking-a-question), the one askloop parses,
    /// with the unset optional fields left out so that askloop applies its defaults.
    pub fn to_request(&self) -> AskRequest {
        // An amount past i64 cannot be a valid one; sent as it is, askloop refuses it by name.
        let amount =
            |minor: u64| i64::try_from(minor).map_or(Field::Wrong(json!(minor)), Field::Given);
        let mut request = AskRequest::new(&self.niche, &self.title, &self.question);
        request.external_id = Field::Given(self.external_id.as_str().into());
        request.context = self.context.clone().into();
        if !self.options.is_empty() {
            request.options = Field::Given(
                self.options
                    .iter()
                    .map(|option| Field::Given(AskOption::new(&option.id, &option.label)))
                    .collect(),
            );
        }
        request.urgency = self.urgency.map(|u| u.as_str().to_owned()).into();
        if let Some(bounty) = self.bounty_minor {
            request.bounty_minor = amount(bounty);
        }
        if let Some(lifetime) = self.expires_in {
            request.expires_in_seconds = amount(lifetime.as_secs());
        }
        if !self.related_resource_ids.is_empty() {
            request.related_resource_ids = Field::Given(
                self.related_resource_ids
                    .iter()
                    .map(|id| Field::Given(id.as_str().into()))
                    .collect(),
            );
        }
        if let Some(limit) = self.budget_limit_minor {
            request.kind = Field::Given("task".to_owned());
            request.budget_limit_minor = amount(limit);
        }
        if let Some((wanted, agreement)) = self.answers {
            request.answers = Field::Given(AnswersRequest {
                wanted: Field::Given(i64::from(wanted)),
                agreement: agreement.map(|bps| f64::from(bps) / 10_000.0).into(),
                ..AnswersRequest::default()
            });
        }
        request.deliverable = self.deliverable.clone().into();
        request
    }

    /// The intake body: [`Question::to_request`] as JSON.
    pub(crate) fn to_body(&self) -> Value {
        // Strings, whole numbers and fractions of one: serialising them to a value cannot fail.
        serde_json::to_value(self.to_request()).unwrap_or_else(|_| json!({}))
    }
}

/// Where a question is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Waiting for people.
    Open,
    /// Sent back for research: add research ([`Client::add_research`](crate::Client::add_research))
    /// and it is open again.
    Researching,
    /// Answered: the answer is there.
    Answered,
    /// Dismissed by people; no answer will come.
    Dismissed,
    /// Its time ran out; no answer will come.
    Expired,
    /// A status this version of the crate does not know.
    #[serde(other)]
    Unknown,
}

impl Status {
    /// Whether askloop is done with the question: answered, dismissed or expired.
    pub fn is_settled(self) -> bool {
        matches!(self, Status::Answered | Status::Dismissed | Status::Expired)
    }
}

/// What the intake answered ([`Client::ask`](crate::Client::ask)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asked {
    /// askloop's id for the question.
    pub id: i64,
    /// The niche it was asked in, as sent.
    pub niche: String,
    /// The external id that names it (the one sent).
    pub external_id: String,
    /// Whether this external id was asked before: the status is then the question's current one.
    /// A retry of a request whose first answer was lost also reads `true`.
    pub duplicate: bool,
    /// Where it is now.
    pub status: Status,
    /// When people stop answering it.
    pub expires_at: DateTime<Utc>,
    /// The niche's budget after the intake.
    pub budget: Budget,
}

/// A niche's budget (docs/contract.md#budgets-and-bounties).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Budget {
    /// The monthly limit in minor units; none without a limit.
    pub limit_minor: Option<i64>,
    /// Charged this month.
    pub spent_minor: i64,
    /// Reserved by questions still waiting.
    pub reserved_minor: i64,
    /// What is left this month; none without a limit.
    pub remaining_minor: Option<i64>,
    /// How much is left, in a word.
    pub state: BudgetState,
    /// When the month (and with it the budget) starts again.
    pub resets_at: DateTime<Utc>,
}

/// How much of a budget is left.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum BudgetState {
    /// Plenty (also: no limit).
    Ample,
    /// Less than a fifth of the limit.
    Tight,
    /// Nothing.
    Exhausted,
    /// A state this version of the crate does not know.
    #[serde(other)]
    Unknown,
}

/// The intake's response body.
#[derive(Deserialize)]
pub(crate) struct IntakeResponse {
    pub(crate) duplicate: bool,
    pub(crate) question: IntakeQuestion,
    pub(crate) budget: Budget,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct IntakeQuestion {
    pub(crate) id: i64,
    pub(crate) status: Status,
    pub(crate) expires_at: DateTime<Utc>,
}

/// One of the agent's questions as the lookup shows it (docs/contract.md#looking-up-questions).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuestionState {
    /// askloop's id.
    pub id: i64,
    /// The agent's id for it.
    pub external_id: String,
    /// Where it is.
    pub status: Status,
    /// When people stop answering it.
    pub expires_at: DateTime<Utc>,
    /// When it was answered.
    pub answered_at: Option<DateTime<Utc>>,
    /// `question` or `task`.
    #[serde(default)]
    pub kind: Option<String>,
    /// A task's budget limit, minor units.
    #[serde(default)]
    pub budget_limit_minor: Option<i64>,
    /// The answer (a task: its completion), once it is answered.
    pub answer: Option<Answer>,
}

/// An answer to one of the agent's questions.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Answer {
    /// askloop's id for the answer.
    pub answer_id: i64,
    /// The option chosen, if the question had options and one was chosen.
    pub option_id: Option<String>,
    /// The answer's text, if it has one (a task: its result).
    pub body: Option<String>,
    /// A completed task: what it cost, minor units.
    #[serde(default)]
    pub actual_cost_minor: Option<i64>,
    /// The handle of the person who answered.
    pub answered_by: String,
    /// When it was given.
    pub created_at: DateTime<Utc>,
    /// Where it stands in review.
    pub review: Review,
    /// How sure the answerer said they were, in percent (50–100), when they said.
    #[serde(default)]
    pub confidence: Option<i32>,
}

/// Where an answer stands in review: weigh a pending one accordingly, and discard a rejected or
/// reversed one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Review {
    /// The answerer is trusted in the niche, or an admin verified it.
    Verified,
    /// An admin has yet to check it.
    Pending,
    /// An admin rejected it: discard it.
    Rejected,
    /// An admin reversed it after verifying it: discard it.
    Reversed,
    /// A review state this version of the crate does not know.
    #[serde(other)]
    Unknown,
}

impl Review {
    /// Whether the answer should be discarded (rejected or reversed).
    pub fn is_discarded(self) -> bool {
        matches!(self, Review::Rejected | Review::Reversed)
    }

    /// The word askloop uses for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Review::Verified => "verified",
            Review::Pending => "pending",
            Review::Rejected => "rejected",
            Review::Reversed => "reversed",
            Review::Unknown => "unknown",
        }
    }
}

/// One entry of a lookup: the question, or nothing when the agent has no question with that
/// external id in the niche (another agent's question is not shown either).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LookedUp {
    /// The external id asked for.
    pub external_id: String,
    /// The question, when found.
    pub question: Option<QuestionState>,
}

/// The lookup's response body: each entry is read on its own, so that one the crate does not
/// understand names itself in the error.
#[derive(Deserialize)]
pub(crate) struct LookupResponse {
    pub(crate) questions: Vec<serde_json::Value>,
}

/// What the research route answered ([`Client::add_research`](crate::Client::add_research)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct ResearchAdded {
    /// askloop's id for the question.
    pub id: i64,
    /// Where it is now (`open` again).
    pub status: Status,
}

/// What a withdrawal did ([`Client::withdraw`](crate::Client::withdraw)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WithdrawOutcome {
    /// Withdrawn now: dismissed, its reservation released, out of every queue.
    Withdrawn,
    /// It had been withdrawn before; nothing changed.
    AlreadyWithdrawn,
    /// It was settled before (answered, dismissed by people, expired); nothing changed.
    Settled,
    /// An outcome this version of the crate does not know.
    #[serde(other)]
    Unknown,
}

/// What the withdrawal route answered.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Withdrawn {
    /// askloop's id for the question.
    #[serde(rename = "questionId")]
    pub id: i64,
    /// Where it is now: [`Status::Dismissed`] once withdrawn, else as it was.
    pub status: Status,
    /// What this request did.
    pub outcome: WithdrawOutcome,
    /// When it was withdrawn, if it was.
    pub withdrawn_at: Option<DateTime<Utc>>,
    /// What this request released of its bounty or task limit, in minor units.
    pub released_minor: i64,
}

/// The research route's response body.
#[derive(Deserialize)]
pub(crate) struct ResearchResponse {
    pub(crate) question: ResearchAdded,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_question_has_a_fresh_external_id_of_its_own() {
        let one = Question::new("games", "t", "q");
        let two = Question::new("games", "t", "q");
        assert!(one.external_id.starts_with("sdk-"));
        assert_eq!(one.external_id.len(), 36);
        assert_ne!(one.external_id, two.external_id);
        assert_eq!(one.clone().external_id("mine").external_id, "mine");
    }

    #[test]
    fn the_intake_body_names_every_field_as_the_contract_does_and_leaves_out_the_unset() {
        let bare = Question::new("games", "T", "Q?")
            .external_id("q-1")
            .to_body();
        assert_eq!(
            bare,
            json!({"nicheSlug": "games", "externalId": "q-1", "title": "T", "question": "Q?"})
        );
        let full = Question::new("games", "T", "Q?")
            .external_id("q-2")
            .context("found this")
            .option("ea", "Early access")
            .urgency(Urgency::High)
            .bounty_minor(300)
            .expires_in(Duration::from_secs(3600))
            .related_resource("doc-1");
        assert_eq!(
            full.to_body(),
            json!({"nicheSlug": "games", "externalId": "q-2", "title": "T", "question": "Q?",
                   "context": "found this", "options": [{"id": "ea", "label": "Early access"}],
                   "urgency": "high", "bountyMinor": 300, "expiresInSeconds": 3600,
                   "relatedResourceIds": ["doc-1"]})
        );
    }

    #[test]
    fn what_the_sdk_sends_is_what_askloop_checks_it_into() {
        use askloop_wire::ask::{ExchangeKind, NewQuestion, NicheRef};
        let asked = NewQuestion::try_from(
            Question::new("Games", "T", "Q?")
                .external_id("q-1")
                .option("ea", "Early access")
                .option("full", "1.0")
                .urgency(Urgency::Low)
                .several_answers(3, Some(7000))
                .to_request(),
        )
        .expect("the sdk's question is valid");
        assert_eq!(asked.niche, NicheRef::Slug("games".into()));
        assert_eq!(asked.external_id.as_deref(), Some("q-1"));
        assert_eq!(asked.options.len(), 2);
        assert_eq!(asked.urgency, Urgency::Low);
        assert_eq!(
            (asked.answers.wanted, asked.answers.agreement_bps),
            (3, 7000)
        );
        let task = NewQuestion::try_from(
            Question::task("games", "T", "do it", 900)
                .deliverable("a list")
                .to_request(),
        )
        .expect("the sdk's task is valid");
        assert_eq!(task.kind, ExchangeKind::Task);
        assert_eq!(task.budget_limit_minor, Some(900));
        // An amount no signed number holds is sent as it is, and refused by name.
        let refused = NewQuestion::try_from(
            Question::new("games", "T", "Q?")
                .bounty_minor(u64::MAX)
                .to_request(),
        )
        .expect_err("refused");
        assert_eq!(refused.0, "bountyMinor must be a whole number");
    }

    #[test]
    fn several_answers_go_in_the_body_as_the_contract_names_them() {
        let three = Question::new("games", "T", "Q?")
            .option("ea", "Early access")
            .option("full", "1.0")
            .several_answers(3, Some(7000))
            .to_body();
        assert_eq!(three["answers"], json!({"wanted": 3, "agreement": 0.7}));
        let default_agreement = Question::new("games", "T", "Q?")
            .several_answers(2, None)
            .to_body();
        assert_eq!(default_agreement["answers"], json!({"wanted": 2}));
        assert!(
            Question::new("games", "T", "Q?")
                .to_body()
                .get("answers")
                .is_none()
        );
    }

    #[test]
    fn statuses_and_reviews_read_as_askloop_spells_them_and_tolerate_new_words() {
        let status = |word: &str| serde_json::from_value::<Status>(json!(word)).expect("a status");
        assert_eq!(status("open"), Status::Open);
        assert_eq!(status("researching"), Status::Researching);
        assert!(status("answered").is_settled());
        assert!(status("dismissed").is_settled() && status("expired").is_settled());
        assert!(!Status::Open.is_settled() && !Status::Researching.is_settled());
        assert_eq!(status("archived"), Status::Unknown);
        let review = |word: &str| serde_json::from_value::<Review>(json!(word)).expect("a review");
        assert_eq!(review("pending"), Review::Pending);
        assert!(review("rejected").is_discarded() && review("reversed").is_discarded());
        assert!(!review("verified").is_discarded());
        assert_eq!(review("later").as_str(), "unknown");
    }
}
