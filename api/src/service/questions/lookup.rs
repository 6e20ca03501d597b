//! Agent-side reads (docs/contract.md#looking-up-questions): an agent reads its questions by
//! external id, and may hold the request open until one of them changes; the MCP tools
//! (docs/contract.md#mcp) read one question by id or external id with the same wait, and list an
//! agent's own questions a page at a time.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use crate::db::Db;
use entity::agent_answers::{self, AnswerKind};
use entity::agent_questions::{self, QuestionStatus};
use entity::contribution_events::ContributionStatus;
use entity::knowledge_entries;
use entity::niches;
use sea_orm::{ColumnTrait, Condition, EntityTrait, QueryFilter, QueryOrder, QuerySelect};
use serde_json::Value;
use tokio::sync::broadcast::{self, error::RecvError};

use crate::domain::intake::NicheRef;
use crate::domain::weighing::Record;
use crate::error::ServiceError;
use crate::live::{LiveEvent, LiveHub, QuestionChange};
use crate::service::agents::registry::Asker;
use crate::service::people::niches::find_niche;
use crate::service::people::weighing;

pub use askloop_wire::lookup::{Lookup, LookupRequest, MAX_IDS, MAX_WAIT_SECS};

/// Parse `{nicheSlug, externalIds, waitSeconds?}` (also inside `payload`) as the wire crate's
/// typed request, then check it.
pub fn parse(body: &Value) -> Result<Lookup, ServiceError> {
    Ok(Lookup::try_from(LookupRequest::from_json(body)?)?)
}

/// The questions `asker` asked: its own id, or none for the default agent.
pub fn asked_by(asker: &Asker) -> sea_orm::Condition {
    let column = agent_questions::Column::RegisteredAgentId;
    sea_orm::Condition::all().add(match asker.agent_id() {
        Some(id) => column.eq(id),
        None => column.is_null(),
    })
}

fn is_settled(status: QuestionStatus) -> bool {
    !matches!(status, QuestionStatus::Open | QuestionStatus::Researching)
}

/// Answer `lookup`: each question's status and, when answered, the answer. With a wait and
/// nothing settled yet, hold until one of the questions changes, the time is up, or askloop
/// shuts down; then read again.
///
/// An agent sees only the questions it asked: another agent's is reported as not found.
pub async fn lookup(
    db: &Db,
    live: &LiveHub,
    asker: &Asker,
    lookup: Lookup,
) -> Result<Vec<Looked>, ServiceError> {
    let niche = find_niche(db, &NicheRef::Slug(lookup.niche_slug.clone()))
        .await?
        .ok_or_else(|| ServiceError::NotFound(format!("no niche '{}'", lookup.niche_slug)))?;
    // Subscribe before reading, so a change between the read and the wait is not missed.
    let changes = live.subscribe();
    let found = read(db, asker, &niche, &lookup.external_ids).await?;
    let Some(wait) = lookup.wait else {
        return Ok(render(&lookup.external_ids, &found));
    };
    if found.values().any(|(q, _)| is_settled(q.status)) {
        return Ok(render(&lookup.external_ids, &found));
    }
    // What was read, so that a change already seen (the feed can deliver a question's own
    // creation after this read) does not end the wait.
    let wanted: HashSet<&str> = lookup.external_ids.iter().map(String::as_str).collect();
    let seen: HashMap<&str, chrono::DateTime<chrono::Utc>> = found
        .iter()
        .map(|(external, (q, _))| (external.as_str(), q.updated_at))
        .collect();
    let is_news = |q: &agent_questions::Model| {
        q.registered_agent_id == asker.agent_id()
            && q.external_id.as_deref().is_some_and(|id| {
                wanted.contains(id) && seen.get(id).is_none_or(|read_at| q.updated_at > *read_at)
            })
    };
    wait_for_change(live, changes, wait, |change| {
        change.niche_id == niche.id && is_news(&change.question)
    })
    .await;
    let found = read(db, asker, &niche, &lookup.external_ids).await?;
    Ok(render(&lookup.external_ids, &found))
}

type Found = HashMap<String, (agent_questions::Model, Option<FoundAnswer>)>;

/// A question's winning answer with who gave it and where it is in review.
#[derive(Debug, Clone)]
pub struct FoundAnswer {
    /// The answer.
    pub answer: agent_answers::Model,
    /// The handle of the person who gave it.
    pub handle: String,
    /// Where it stands in review (an answer that never needed review counts as verified).
    pub review: ContributionStatus,
    /// The knowledge entry the answer relied on (pointed to) or became, as it is now.
    pub knowledge: Option<knowledge_entries::Model>,
    /// The answerer's record in the question's niche, as it is now.
    pub answerer: Record,
}

/// What a lookup found for one external id: the question and its answer, or nothing.
#[derive(Debug, Clone)]
pub struct Looked {
    /// The agent's id, as asked.
    pub external_id: String,
    /// The question with its winning answer, if the agent asked one under that id.
    pub found: Option<(agent_questions::Model, Option<FoundAnswer>)>,
}

async fn read(
    db: &Db,
    asker: &Asker,
    niche: &niches::Model,
    external_ids: &[String],
) -> Result<Found, ServiceError> {
    let questions = agent_questions::Entity::find()
        .filter(agent_questions::Column::NicheId.eq(niche.id))
        .filter(asked_by(asker))
        .filter(agent_questions::Column::ExternalId.is_in(external_ids.iter().cloned()))
        .all(db)
        .await?;
    let mut by_question = answers_of(db, &questions).await?;
    Ok(questions
        .into_iter()
        .filter_map(|q| {
            let external = q.external_id.clone()?;
            let answer = by_question.remove(&q.id);
            Some((external, (q, answer)))
        })
        .collect())
}

/// The winning answer of each answered question among `questions`, by question id.
async fn answers_of(
    db: &Db,
    questions: &[agent_questions::Model],
) -> Result<HashMap<i64, FoundAnswer>, ServiceError> {
    let answered: Vec<i64> = questions
        .iter()
        .filter(|q| q.status == QuestionStatus::Answered)
        .map(|q| q.id)
        .collect();
    if answered.is_empty() {
        return Ok(HashMap::new());
    }
    let answers = agent_answers::Entity::find()
        .filter(agent_answers::Column::QuestionId.is_in(answered))
        .filter(agent_answers::Column::Kind.eq(AnswerKind::Answered))
        // Oldest first, so the newest answer wins the map below: a question reopened after a
        // rejection and answered again is settled by its latest answer.
        .order_by_asc(agent_answers::Column::Id)
        .all(db)
        .await?;
    let handles =
        crate::service::people::names::handles(db, answers.iter().map(|a| a.user_id)).await?;
    // Each answerer's record in the niche of the question they answered.
    let niche_of: HashMap<i64, i64> = questions.iter().map(|q| (q.id, q.niche_id)).collect();
    let mut people: HashMap<i64, Vec<i64>> = HashMap::new();
    for answer in &answers {
        if let Some(niche) = niche_of.get(&answer.question_id) {
            people.entry(*niche).or_default().push(answer.user_id);
        }
    }
    let mut records: HashMap<(i64, i64), Record> = HashMap::new();
    for (niche, users) in people {
        for (user, record) in weighing::records(db, niche, Some(&users)).await? {
            records.insert((niche, user), record);
        }
    }
    let reviews = crate::service::questions::queue::reviews_of(
        db,
        answers.iter().filter_map(|a| a.contribution_event_id),
    )
    .await?;
    // The entry each answer pointed to, or the one written from it.
    let pointed: Vec<i64> = answers
        .iter()
        .filter_map(|a| a.knowledge_entry_id)
        .collect();
    let entries = knowledge_entries::Entity::find()
        .filter(
            Condition::any()
                .add(knowledge_entries::Column::Id.is_in(pointed))
                .add(knowledge_entries::Column::AnswerId.is_in(answers.iter().map(|a| a.id))),
        )
        .all(db)
        .await?;
    Ok(answers
        .into_iter()
        .map(|answer| {
            let knowledge = entries
                .iter()
                .find(|e| match answer.knowledge_entry_id {
                    Some(pointed) => e.id == pointed,
                    None => e.answer_id == Some(answer.id),
                })
                .cloned();
            let handle = handles.get(&answer.user_id).cloned().unwrap_or_default();
            let answerer = niche_of
                .get(&answer.question_id)
                .and_then(|niche| records.get(&(*niche, answer.user_id)))
                .cloned()
                .unwrap_or_else(|| Record::of(&[]));
            let review = answer
                .contribution_event_id
                .and_then(|c| reviews.get(&c))
                .map_or(ContributionStatus::Verified, |status| *status);
            (
                answer.question_id,
                FoundAnswer {
                    answer,
                    handle,
                    review,
                    knowledge,
                    answerer,
                },
            )
        })
        .collect())
}

/// One entry per external id, in the order asked.
fn render(external_ids: &[String], found: &Found) -> Vec<Looked> {
    external_ids
        .iter()
        .map(|external| Looked {
            external_id: external.clone(),
            found: found.get(external).cloned(),
        })
        .collect()
}

/// Which of its questions an agent means (the wire crate's type, shared with every door).
pub use askloop_wire::withdraw::QuestionRef;

/// An id given as text (a string of digits, as GraphQL spells ids), or a refusal naming `field`.
pub fn id_from_text(field: &str, text: &str) -> Result<i64, ServiceError> {
    Ok(askloop_wire::withdraw::id_from_text(field, text)?)
}

/// Which question `questionId` or `externalId` (exactly one) names, `niche` narrowing an
/// external id used in several niches.
pub fn question_ref(
    question_id: Option<i64>,
    external_id: Option<String>,
    niche: Option<String>,
) -> Result<QuestionRef, ServiceError> {
    Ok(askloop_wire::withdraw::question_ref(
        question_id,
        external_id,
        niche,
    )?)
}

/// One of an agent's questions with its winning answer, when it has one.
#[derive(Debug, Clone)]
pub struct OwnQuestion {
    /// The question as it stands.
    pub question: agent_questions::Model,
    /// Its winning answer (answered questions only).
    pub answer: Option<FoundAnswer>,
}

/// The question `which` names among those `asker` asked. Another agent's question is not found,
/// exactly like one that does not exist.
pub async fn find_own(
    db: &Db,
    asker: &Asker,
    which: &QuestionRef,
) -> Result<agent_questions::Model, ServiceError> {
    match which {
        QuestionRef::Id(id) => agent_questions::Entity::find_by_id(*id)
            .filter(asked_by(asker))
            .one(db)
            .await?
            .ok_or_else(|| ServiceError::NotFound(format!("this agent has no question {id}"))),
        QuestionRef::External { external_id, niche } => {
            let mut query = agent_questions::Entity::find()
                .filter(agent_questions::Column::ExternalId.eq(external_id.as_str()))
                .filter(asked_by(asker));
            if let Some(slug) = niche {
                let found = find_niche(db, &NicheRef::Slug(slug.clone()))
                    .await?
                    .ok_or_else(|| ServiceError::NotFound(format!("no niche '{slug}'")))?;
                query = query.filter(agent_questions::Column::NicheId.eq(found.id));
            }
            let mut found = query.limit(2).all(db).await?;
            match found.len() {
                0 => Err(ServiceError::NotFound(format!(
                    "this agent has no question with externalId '{external_id}'"
                ))),
                1 => Ok(found.remove(0)),
                _ => Err(ServiceError::BadInput(format!(
                    "this agent has questions with externalId '{external_id}' in several \
                     niches; name the niche, or use questionId"
                ))),
            }
        }
    }
}

/// One of `asker`'s questions as it stands, optionally after waiting for it to change.
///
/// The wait holds only while the question is open: answered, dismissed, expired or sent back for
/// research, it is returned at once (the agent has something to act on). Otherwise it is held
/// until the question changes, `wait` is up, or askloop shuts down, and then read again — the
/// lookup's long poll, on one question.
pub async fn await_own(
    db: &Db,
    live: &LiveHub,
    asker: &Asker,
    which: &QuestionRef,
    wait: Option<Duration>,
) -> Result<OwnQuestion, ServiceError> {
    // Subscribe before reading, so a change between the read and the wait is not missed.
    let changes = live.subscribe();
    let question = find_own(db, asker, which).await?;
    let Some(wait) = wait.filter(|_| question.status == QuestionStatus::Open) else {
        return with_answer(db, question).await;
    };
    let (id, read_at) = (question.id, question.updated_at);
    wait_for_change(live, changes, wait, |change| {
        change.question.id == id && change.question.updated_at > read_at
    })
    .await;
    let question = find_own(db, asker, &QuestionRef::Id(id)).await?;
    with_answer(db, question).await
}

/// The long poll: wait on `changes` for up to `wait` until a question change `matters`, askloop
/// stops, or the receiver falls behind (something may have changed: the caller reads again).
async fn wait_for_change(
    live: &LiveHub,
    mut changes: broadcast::Receiver<LiveEvent>,
    wait: Duration,
    matters: impl Fn(&QuestionChange) -> bool,
) {
    let stopped = live.stopped();
    tokio::pin!(stopped);
    let deadline = tokio::time::sleep(wait);
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            () = &mut deadline => return,
            () = &mut stopped => return,
            event = changes.recv() => match event {
                Ok(LiveEvent::Question(change)) if matters(&change) => return,
                Ok(_) => {}
                Err(RecvError::Lagged(_) | RecvError::Closed) => return,
            },
        }
    }
}

async fn with_answer(
    db: &Db,
    question: agent_questions::Model,
) -> Result<OwnQuestion, ServiceError> {
    let answer = answers_of(db, std::slice::from_ref(&question))
        .await?
        .remove(&question.id);
    Ok(OwnQuestion { question, answer })
}

/// Where a page of an agent's own questions starts: after the question with this id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OwnCursor(pub i64);

impl OwnCursor {
    /// The opaque text clients pass back.
    pub fn encode(self) -> String {
        format!("a{}", self.0)
    }

    /// Read a cursor a client passed back.
    pub fn decode(raw: &str) -> Result<Self, ServiceError> {
        raw.strip_prefix('a')
            .and_then(|id| id.parse().ok())
            .map(Self)
            .ok_or_else(|| ServiceError::BadInput("that cursor is not one askloop gave out".into()))
    }
}

/// A page of an agent's own questions, newest first, each with its niche's slug.
#[derive(Debug, Clone)]
pub struct OwnPage {
    /// The questions and their niches' slugs.
    pub items: Vec<(agent_questions::Model, String)>,
    /// Where the next page starts, when there is one.
    pub next: Option<OwnCursor>,
}

/// The questions `asker` asked, newest first, `first` at a time after `after`, optionally only
/// those in `status`.
pub async fn list_own(
    db: &Db,
    asker: &Asker,
    status: Option<QuestionStatus>,
    first: u64,
    after: Option<OwnCursor>,
) -> Result<OwnPage, ServiceError> {
    let mut query = agent_questions::Entity::find().filter(asked_by(asker));
    if let Some(status) = status {
        query = query.filter(agent_questions::Column::Status.eq(status));
    }
    if let Some(OwnCursor(id)) = after {
        query = query.filter(agent_questions::Column::Id.lt(id));
    }
    let mut questions = query
        .order_by_desc(agent_questions::Column::Id)
        .limit(first + 1)
        .all(db)
        .await?;
    let has_next = questions.len() as u64 > first;
    questions.truncate(first as usize);
    let niche_ids: HashSet<i64> = questions.iter().map(|q| q.niche_id).collect();
    let slugs: HashMap<i64, String> = niches::Entity::find()
        .filter(niches::Column::Id.is_in(niche_ids))
        .all(db)
        .await?
        .into_iter()
        .map(|n| (n.id, n.slug))
        .collect();
    let next = has_next
        .then(|| questions.last().map(|q| OwnCursor(q.id)))
        .flatten();
    Ok(OwnPage {
        items: questions
            .into_iter()
            .map(|q| {
                let slug = slugs.get(&q.niche_id).cloned().unwrap_or_default();
                (q, slug)
            })
            .collect(),
        next,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_lookup_names_a_niche_and_one_to_a_hundred_ids() {
        let ok = parse(
            &json!({"nicheSlug": "Games", "externalIds": ["a", "b", "a"], "waitSeconds": 20}),
        )
        .expect("valid");
        assert_eq!(ok.niche_slug, "games");
        assert_eq!(ok.external_ids, vec!["a", "b"]);
        assert_eq!(ok.wait, Some(Duration::from_secs(20)));
        let wrapped = parse(&json!({"payload": {"nicheSlug": "games", "externalIds": ["a"]}}))
            .expect("valid");
        assert_eq!(wrapped.wait, None);
        let too_many: Vec<String> = (0..=MAX_IDS).map(|i| i.to_string()).collect();
        for (body, says) in [
            (json!({"externalIds": ["a"]}), "nicheSlug"),
            (json!({"nicheSlug": "games"}), "externalIds"),
            (json!({"nicheSlug": "games", "externalIds": []}), "1 to 100"),
            (
                json!({"nicheSlug": "games", "externalIds": too_many}),
                "1 to 100",
            ),
            (
                json!({"nicheSlug": "games", "externalIds": [7]}),
                "externalId",
            ),
            (
                json!({"nicheSlug": "games", "externalIds": ["a"], "waitSeconds": 56}),
                "waitSeconds",
            ),
            (
                json!({"nicheSlug": "games", "externalIds": ["a"], "waitSeconds": -1}),
                "waitSeconds",
            ),
            (
                json!({"nicheSlug": "games", "externalIds": ["a"], "waitSeconds": "5"}),
                "waitSeconds",
            ),
        ] {
            let err = parse(&body).expect_err("invalid").to_string();
            assert!(err.contains(says), "{body}: {err}");
        }
    }
}
