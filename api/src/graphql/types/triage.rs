//! The triage queue (`Niche.queue`, `Niche.waitingCounts`, `Niche.myParts`).

use crate::db::Db;
use async_graphql::connection::{Connection, Edge};
use async_graphql::{Context, Enum, ID, Result, SimpleObject};
use chrono::Utc;

use super::Question;
use crate::graphql::caller_of;
use crate::graphql::enums::ExchangeKind;
use crate::graphql::enums::Urgency;
use crate::graphql::error_door::GqlResultExt;
use crate::service::questions::queue;
use crate::service::questions::triage::{self, TriageCursor, TriageFilter, TriageSort};
use async_graphql::OutputType;
use async_graphql::connection::{ConnectionNameType, EdgeNameType, EmptyFields};

/// The order of the triage queue.
#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug, Default)]
pub enum QueueSort {
    /// Most urgent first, then expiring soonest (the default).
    #[default]
    Urgency,
    /// Expiring soonest first.
    Expiring,
    /// Newest first.
    Newest,
    /// Largest bounty (a task: its limit) first.
    Bounty,
}

impl From<QueueSort> for TriageSort {
    fn from(sort: QueueSort) -> Self {
        match sort {
            QueueSort::Urgency => TriageSort::Urgency,
            QueueSort::Expiring => TriageSort::Expiring,
            QueueSort::Newest => TriageSort::Newest,
            QueueSort::Bounty => TriageSort::Bounty,
        }
    }
}

/// What a page of the triage queue says beside its questions.
#[derive(SimpleObject)]
pub struct TriageTotals {
    /// How many waiting questions the filters match, across every page.
    pub total_count: i64,
}

/// The schema's name of a triage page.
pub struct TriageName;

impl ConnectionNameType for TriageName {
    fn type_name<T: OutputType>() -> String {
        "QueuePage".to_owned()
    }
}

/// The schema's name of one question on a triage page.
pub struct TriageEdgeName;

impl EdgeNameType for TriageEdgeName {
    fn type_name<T: OutputType>() -> String {
        "QueueEdge".to_owned()
    }
}

/// A page of the triage queue.
pub type TriageConnection =
    Connection<String, Question, TriageTotals, EmptyFields, TriageName, TriageEdgeName>;

/// How many of a niche's questions wait.
#[derive(SimpleObject)]
pub struct WaitingCounts {
    /// Every waiting question.
    pub total: i64,
    /// Those of high urgency.
    pub high: i64,
    /// Those that need me: not declined, sent back or answered by me in their current research
    /// round (an answer of mine, rejected or not, keeps a question off it). The count the
    /// queue's heading, the document title and the niches page show.
    pub needs_me: i64,
    /// Those of high urgency among them.
    pub needs_me_high: i64,
}

/// What I did to a waiting question (`Niche.myParts`).
#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
pub enum MyPart {
    /// I declined it ("not enough context") in its current research round.
    Declined,
    /// I sent it back for research in its current round: waiting for the agent's research.
    SentBack,
    /// I answered it; my answer is awaiting review.
    Answered,
    /// My answer was rejected (or reversed); I may not answer it again.
    Rejected,
    /// I declined it or sent it back before, and the agent's research has come back since: it
    /// needs me again.
    ResearchBack,
}

impl From<queue::MyPart> for MyPart {
    fn from(part: queue::MyPart) -> Self {
        match part {
            queue::MyPart::Declined => MyPart::Declined,
            queue::MyPart::SentBack => MyPart::SentBack,
            queue::MyPart::Answered => MyPart::Answered,
            queue::MyPart::Rejected => MyPart::Rejected,
            queue::MyPart::ResearchBack => MyPart::ResearchBack,
        }
    }
}

/// My part in one waiting question.
#[derive(SimpleObject)]
pub struct MyPartIn {
    /// The question.
    pub question_id: ID,
    /// What I did.
    pub part: MyPart,
    /// Whether it needs me (only `RESEARCH_BACK` does).
    pub needs_me: bool,
    /// The question's research round now (the agent's round of findings it is on).
    pub round: i64,
}

/// A page of `niche`'s triage queue, for `Niche.queue`.
#[expect(
    clippy::too_many_arguments,
    reason = "the GraphQL field's arguments: the niche, the page and each filter"
)]
pub async fn queue_of(
    ctx: &Context<'_>,
    niche: &entity::niches::Model,
    first: Option<i32>,
    after: Option<String>,
    sort: QueueSort,
    urgency: Option<Urgency>,
    kind: Option<ExchangeKind>,
    has_bounty: Option<bool>,
    search: Option<String>,
) -> Result<TriageConnection> {
    let db = ctx.data::<Db>()?;
    let first = queue::page_size(first).gql()?;
    let sort = TriageSort::from(sort);
    let after = after
        .as_deref()
        .map(|raw| TriageCursor::decode(raw, sort))
        .transpose()
        .gql()?;
    let filter = TriageFilter {
        urgency: urgency.map(Into::into),
        kind: kind.map(Into::into),
        has_bounty,
        search,
    };
    let page = triage::triage(
        db,
        caller_of(ctx)?.viewer(),
        niche,
        filter,
        sort,
        first,
        after,
        Utc::now(),
    )
    .await
    .gql()?;
    let mut connection = Connection::with_additional_fields(
        after.is_some(),
        page.has_next,
        TriageTotals {
            total_count: i64::try_from(page.total).unwrap_or(i64::MAX),
        },
    );
    connection.edges.extend(
        page.items
            .into_iter()
            .map(|q| Edge::new(TriageCursor::of(&q, sort).encode(), Question::from(q))),
    );
    Ok(connection)
}

/// `niche`'s waiting counts, for `Niche.waitingCounts`.
pub async fn counts_of(ctx: &Context<'_>, niche: &entity::niches::Model) -> Result<WaitingCounts> {
    let db = ctx.data::<Db>()?;
    let counts = triage::waiting_counts(db, caller_of(ctx)?.viewer(), niche, Utc::now())
        .await
        .gql()?;
    Ok(WaitingCounts {
        total: i64::try_from(counts.total).unwrap_or(i64::MAX),
        high: i64::try_from(counts.high).unwrap_or(i64::MAX),
        needs_me: i64::try_from(counts.needs_me).unwrap_or(i64::MAX),
        needs_me_high: i64::try_from(counts.needs_me_high).unwrap_or(i64::MAX),
    })
}
