//! Agent-side reads (docs/contract.md#looking-up-questions): an agent reads its questions by
//! external id, and may hold the request open until one of them changes.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use entity::agent_answers::{self, AnswerKind};
use entity::agent_questions::{self, QuestionStatus};
use entity::contribution_events::ContributionStatus;
use entity::niches;
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter, QueryOrder};
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

use crate::domain::intake::NicheRef;
use crate::error::ServiceError;
use crate::live::{LiveEvent, LiveHub};
use crate::service::agents::Asker;
use crate::service::niches::find_niche;

/// The most external ids one lookup may name.
pub const MAX_IDS: usize = 100;
/// The longest a lookup may wait.
pub const MAX_WAIT_SECS: u64 = 55;

/// A parsed lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lookup {
    /// The niche's slug.
    pub niche_slug: String,
    /// The questions, by the agent's ids, in the order asked (duplicates dropped).
    pub external_ids: Vec<String>,
    /// How long to wait for a change, if at all.
    pub wait: Option<Duration>,
}

/// Parse `{nicheSlug, externalIds, waitSeconds?}` (also inside `payload`).
pub fn parse(body: &Value) -> Result<Lookup, ServiceError> {
    let fields = body
        .get("payload")
        .filter(|p| p.is_object())
        .unwrap_or(body);
    let bad = |m: String| ServiceError::BadInput(m);
    let niche_slug = fields
        .get("nicheSlug")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| bad("nicheSlug is required".into()))?
        .to_lowercase();
    let ids = fields
        .get("externalIds")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("externalIds must be a list of strings".into()))?;
    if ids.is_empty() || ids.len() > MAX_IDS {
        return Err(bad(format!(
            "externalIds must name 1 to {MAX_IDS} questions"
        )));
    }
    let mut seen = HashSet::new();
    let mut external_ids = Vec::with_capacity(ids.len());
    for id in ids {
        let id = id
            .as_str()
            .map(str::trim)
            .filter(|s| !s.is_empty() && s.len() <= 200)
            .ok_or_else(|| bad("each externalId must be a string of 1 to 200 characters".into()))?;
        if seen.insert(id.to_owned()) {
            external_ids.push(id.to_owned());
        }
    }
    let wait = match fields.get("waitSeconds") {
        None | Some(Value::Null) => None,
        Some(value) => match value.as_u64() {
            Some(0) => None,
            Some(secs) if secs <= MAX_WAIT_SECS => Some(Duration::from_secs(secs)),
            _ => {
                return Err(bad(format!(
                    "waitSeconds must be a whole number from 0 to {MAX_WAIT_SECS}"
                )));
            }
        },
    };
    Ok(Lookup {
        niche_slug,
        external_ids,
        wait,
    })
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
    db: &DatabaseConnection,
    live: &LiveHub,
    asker: &Asker,
    lookup: Lookup,
) -> Result<Value, ServiceError> {
    let niche = find_niche(db, &NicheRef::Slug(lookup.niche_slug.clone()))
        .await?
        .ok_or_else(|| ServiceError::NotFound(format!("no niche '{}'", lookup.niche_slug)))?;
    // Subscribe before reading, so a change between the read and the wait is not missed.
    let mut changes = live.subscribe();
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
    let stopped = live.stopped();
    tokio::pin!(stopped);
    let deadline = tokio::time::sleep(wait);
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            () = &mut deadline => break,
            () = &mut stopped => break,
            event = changes.recv() => match event {
                Ok(LiveEvent::Question(change))
                    if change.niche_id == niche.id && is_news(&change.question) => break,
                Ok(_) => {}
                // Fell behind: something may have changed; read again.
                Err(RecvError::Lagged(_)) => break,
                Err(RecvError::Closed) => break,
            },
        }
    }
    let found = read(db, asker, &niche, &lookup.external_ids).await?;
    Ok(render(&lookup.external_ids, &found))
}

type Found = HashMap<String, (agent_questions::Model, Option<FoundAnswer>)>;

/// A question's winning answer with who gave it and where it is in review.
struct FoundAnswer {
    answer: agent_answers::Model,
    handle: String,
    review: &'static str,
}

/// A review state as the contract spells it.
fn review_word(status: ContributionStatus) -> &'static str {
    match status {
        ContributionStatus::Pending => "pending",
        ContributionStatus::Verified => "verified",
        ContributionStatus::Rejected => "rejected",
        ContributionStatus::Reversed => "reversed",
    }
}

async fn read(
    db: &DatabaseConnection,
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
    let answered: Vec<i64> = questions
        .iter()
        .filter(|q| q.status == QuestionStatus::Answered)
        .map(|q| q.id)
        .collect();
    let answers = agent_answers::Entity::find()
        .filter(agent_answers::Column::QuestionId.is_in(answered))
        .filter(agent_answers::Column::Kind.eq(AnswerKind::Answered))
        // Oldest first, so the newest answer wins the map below: a question reopened after a
        // rejection and answered again is settled by its latest answer.
        .order_by_asc(agent_answers::Column::Id)
        .all(db)
        .await?;
    let handles = crate::service::names::handles(db, answers.iter().map(|a| a.user_id)).await?;
    let reviews = crate::service::queue::reviews_of(
        db,
        answers.iter().filter_map(|a| a.contribution_event_id),
    )
    .await?;
    let mut by_question: HashMap<i64, FoundAnswer> = answers
        .into_iter()
        .map(|answer| {
            let handle = handles.get(&answer.user_id).cloned().unwrap_or_default();
            let review = answer
                .contribution_event_id
                .and_then(|c| reviews.get(&c))
                .map_or("verified", |status| review_word(*status));
            (
                answer.question_id,
                FoundAnswer {
                    answer,
                    handle,
                    review,
                },
            )
        })
        .collect();
    Ok(questions
        .into_iter()
        .filter_map(|q| {
            let external = q.external_id.clone()?;
            let answer = by_question.remove(&q.id);
            Some((external, (q, answer)))
        })
        .collect())
}

fn render(external_ids: &[String], found: &Found) -> Value {
    let questions: Vec<Value> = external_ids
        .iter()
        .map(|external| match found.get(external) {
            None => json!({ "externalId": external, "found": false }),
            Some((q, answer)) => json!({
                "externalId": external,
                "found": true,
                "id": q.id,
                "status": q.status,
                "expiresAt": q.expires_at,
                "answeredAt": q.answered_at,
                "answer": answer.as_ref().map(|found| json!({
                    "answerId": found.answer.id,
                    "optionId": found.answer.option_id,
                    "body": found.answer.body,
                    "answeredBy": found.handle,
                    "createdAt": found.answer.created_at,
                    "review": found.review,
                })),
            }),
        })
        .collect();
    json!({ "questions": questions })
}

#[cfg(test)]
mod tests {
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
