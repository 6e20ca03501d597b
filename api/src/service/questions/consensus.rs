//! Several answers to one question (docs/contract.md#several-answers): what they came to when
//! the last place is filled or the question expires with what came, the agent told
//! `expert_question.consensus` or `expert_question.disagreement` (which escalates to admins),
//! and, per niche, how well its people agree (Krippendorff's alpha) and with the consensus.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use entity::agent_answers::{self, AnswerKind};
use entity::agent_questions::{self, QuestionStatus};
use entity::contribution_events::ContributionStatus;
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder};
use serde_json::{Value, json};

use crate::db::WriteTxn;
use crate::domain::intake::option_label;
use crate::domain::weighing::{self, Consensus, Record, Vote};
use crate::error::ServiceError;
use crate::service::agents::outbox::{EventType, NewEvent};
use crate::service::audit::{Actor, AuditEntry};
use crate::service::questions::answering::audit_and_tell;
use crate::service::{people::names, questions::queue, reach};

/// One of a question's standing answers, with what weighs it.
#[derive(Debug, Clone)]
pub struct Standing {
    /// The answer.
    pub answer: agent_answers::Model,
    /// Who gave it.
    pub handle: String,
    /// Its contribution's review state (pending or verified: rejected ones do not stand).
    pub review: ContributionStatus,
    /// The answerer's record in the niche.
    pub record: Record,
}

/// An answer's review state if it stands: pending or verified (an answer with no contribution
/// counts as verified); `None` once rejected or reversed.
fn standing_review(
    answer: &agent_answers::Model,
    reviews: &HashMap<i64, ContributionStatus>,
) -> Option<ContributionStatus> {
    let review = answer
        .contribution_event_id
        .and_then(|c| reviews.get(&c).copied())
        .unwrap_or(ContributionStatus::Verified);
    (!matches!(
        review,
        ContributionStatus::Rejected | ContributionStatus::Reversed
    ))
    .then_some(review)
}

/// A question's answers that stand (answered, and their contribution not rejected or reversed),
/// oldest first.
pub async fn standing_answers<C: ConnectionTrait>(
    conn: &C,
    question: &agent_questions::Model,
) -> Result<Vec<Standing>, ServiceError> {
    let answers = agent_answers::Entity::find()
        .filter(agent_answers::Column::QuestionId.eq(question.id))
        .filter(agent_answers::Column::Kind.eq(AnswerKind::Answered))
        .order_by_asc(agent_answers::Column::Id)
        .all(conn)
        .await?;
    let reviews =
        queue::reviews_of(conn, answers.iter().filter_map(|a| a.contribution_event_id)).await?;
    let users: Vec<i64> = answers.iter().map(|a| a.user_id).collect();
    let handles = names::handles(conn, users.iter().copied()).await?;
    let mut records =
        crate::service::people::weighing::records(conn, question.niche_id, Some(&users)).await?;
    Ok(answers
        .into_iter()
        .filter_map(|answer| {
            let review = standing_review(&answer, &reviews)?;
            Some(Standing {
                handle: handles.get(&answer.user_id).cloned().unwrap_or_default(),
                record: records
                    .remove(&answer.user_id)
                    .unwrap_or_else(|| Record::of(&[])),
                review,
                answer,
            })
        })
        .collect())
}

/// What question `question_id`'s standing answers come to, with how many there are; none when
/// there is no such question or they come to nothing.
pub async fn consensus_of_question<C: ConnectionTrait>(
    conn: &C,
    question_id: i64,
) -> Result<Option<(Consensus, usize)>, ServiceError> {
    let Some(question) = agent_questions::Entity::find_by_id(question_id)
        .one(conn)
        .await?
    else {
        return Ok(None);
    };
    let standing = standing_answers(conn, &question).await?;
    Ok(consensus_of(&question, &standing).map(|c| (c, standing.len())))
}

/// What `standing` came to against the question's agreement; `None` with no answer.
pub fn consensus_of(question: &agent_questions::Model, standing: &[Standing]) -> Option<Consensus> {
    let votes: Vec<Vote> = standing
        .iter()
        .filter_map(|s| {
            Some(Vote {
                option_id: s.answer.option_id.clone()?,
                weight: s.record.lower_bound,
            })
        })
        .collect();
    weighing::consensus(&votes, question.agreement_bps)
}

/// The answers as the agent receives them.
pub fn answers_json(question: &agent_questions::Model, standing: &[Standing]) -> Value {
    Value::Array(
        standing
            .iter()
            .map(|s| {
                json!({
                    "answerId": s.answer.id,
                    "optionId": s.answer.option_id,
                    "optionLabel": s.answer.option_id.as_deref()
                        .and_then(|o| option_label(&question.options, o)),
                    "answer": s.answer.body,
                    "answeredBy": s.handle,
                    "confidence": s.answer.confidence,
                    "review": match s.review {
                        ContributionStatus::Verified => "verified",
                        _ => "pending",
                    },
                    "answerer": crate::service::people::weighing::answerer_json(&s.record),
                })
            })
            .collect(),
    )
}

/// The consensus as the agent receives it (also in the lookup and `get_answer`).
pub fn consensus_json(question: &agent_questions::Model, consensus: &Consensus) -> Value {
    let round = crate::service::people::weighing::round4;
    json!({
        "optionId": consensus.option_id,
        "optionLabel": option_label(&question.options, &consensus.option_id),
        "agreement": round(consensus.agreement),
        "weightedAgreement": round(consensus.weighted_agreement),
        "required": f64::from(question.agreement_bps) / 10_000.0,
        "reached": consensus.reached,
    })
}

/// A several-answer question as its agent reads it (lookup, `get_answer`): how many answers
/// it takes and has, each standing answer, and the consensus once it concluded. `None` for a
/// one-answer question.
pub async fn several_json<C: ConnectionTrait>(
    conn: &C,
    question: &agent_questions::Model,
) -> Result<Option<Value>, ServiceError> {
    if question.answers_wanted <= 1 {
        return Ok(None);
    }
    let standing = standing_answers(conn, question).await?;
    let concluded = !matches!(
        question.status,
        QuestionStatus::Open | QuestionStatus::Researching
    );
    let consensus = concluded
        .then(|| consensus_of(question, &standing))
        .flatten()
        .map(|c| consensus_json(question, &c));
    Ok(Some(json!({
        "wanted": question.answers_wanted,
        "in": question.answers_in,
        "agreement": f64::from(question.agreement_bps) / 10_000.0,
        "answers": answers_json(question, &standing),
        "consensus": consensus,
    })))
}

/// Conclude a several-answer question whose places are filled (or which expired with answers
/// in), inside the transaction that did it (whose caller then writes its knowledge,
/// `knowledge::record_concluded`): the agent hears `expert_question.consensus` or
/// `expert_question.disagreement`; a disagreement escalates to the niche's admins as an
/// escalation's second step does (docs/contract.md#several-answers) and is audited as
/// `question.disagreement`.
pub async fn conclude(
    txn: &WriteTxn,
    question: &agent_questions::Model,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    if question.answers_wanted <= 1 {
        return Ok(());
    }
    let standing = standing_answers(txn, question).await?;
    let Some(consensus) = consensus_of(question, &standing) else {
        return Ok(());
    };
    let answers = answers_json(question, &standing);
    let (event, action) = if consensus.reached {
        (EventType::Consensus, "question.consensus")
    } else {
        (EventType::Disagreement, "question.disagreement")
    };
    let mut told = NewEvent::about_question(
        event,
        question,
        None,
        json!({
            "answersWanted": question.answers_wanted,
            "answers": answers,
            "complete": question.status == QuestionStatus::Answered,
        }),
    );
    let summary = consensus_json(question, &consensus);
    if consensus.reached {
        for key in ["optionId", "optionLabel", "agreement", "weightedAgreement"] {
            told.payload[key] = summary[key].clone();
        }
    } else {
        told.payload["plurality"] = summary.clone();
    }
    audit_and_tell(
        txn,
        AuditEntry::about_question(&Actor::System, action, question, summary),
        told,
        now,
    )
    .await?;
    if !consensus.reached {
        reach::plan_admin_escalation(txn, question.id, now).await?;
    }
    Ok(())
}

/// How a niche's people agree over its several-answer questions (admins).
#[derive(Debug, Clone, PartialEq)]
pub struct Agreement {
    /// Krippendorff's alpha (nominal) over the questions' standing answers; `None` when it is
    /// undefined (fewer than two pairable answers, or one option chosen throughout).
    pub alpha: Option<f64>,
    /// Several-answer questions with two or more standing answers.
    pub questions: u64,
    /// Per person: (user id, answers given to those questions, of which agreeing with the
    /// question's plurality option).
    pub people: Vec<(i64, u64, u64)>,
}

/// The agreement over `niche_id`'s several-answer questions, the newest `limit` of them: four
/// reads whatever the number of questions (the questions, their answers, those answers'
/// reviews, the answerers' records).
pub async fn agreement<C: ConnectionTrait>(
    conn: &C,
    niche_id: i64,
    limit: u64,
) -> Result<Agreement, ServiceError> {
    use sea_orm::QuerySelect;
    let questions = agent_questions::Entity::find()
        .filter(agent_questions::Column::NicheId.eq(niche_id))
        .filter(agent_questions::Column::AnswersWanted.gt(1))
        .order_by_desc(agent_questions::Column::Id)
        .limit(limit)
        .all(conn)
        .await?;
    let answers = agent_answers::Entity::find()
        .filter(agent_answers::Column::QuestionId.is_in(questions.iter().map(|q| q.id)))
        .filter(agent_answers::Column::Kind.eq(AnswerKind::Answered))
        .order_by_asc(agent_answers::Column::Id)
        .all(conn)
        .await?;
    let reviews =
        queue::reviews_of(conn, answers.iter().filter_map(|a| a.contribution_event_id)).await?;
    let users: Vec<i64> = answers.iter().map(|a| a.user_id).collect();
    let records = crate::service::people::weighing::records(conn, niche_id, Some(&users)).await?;
    let mut by_question: HashMap<i64, Vec<Standing>> = HashMap::new();
    for answer in answers {
        let Some(review) = standing_review(&answer, &reviews) else {
            continue;
        };
        by_question
            .entry(answer.question_id)
            .or_default()
            .push(Standing {
                handle: String::new(),
                record: records
                    .get(&answer.user_id)
                    .cloned()
                    .unwrap_or_else(|| Record::of(&[])),
                review,
                answer,
            });
    }
    let mut units: Vec<Vec<String>> = Vec::new();
    let mut people: HashMap<i64, (u64, u64)> = HashMap::new();
    for question in &questions {
        let standing = by_question.remove(&question.id).unwrap_or_default();
        let chosen: Vec<(i64, String)> = standing
            .iter()
            .filter_map(|s| Some((s.answer.user_id, s.answer.option_id.clone()?)))
            .collect();
        if chosen.len() < 2 {
            continue;
        }
        let plurality = consensus_of(question, &standing).map(|c| c.option_id);
        for (user, option) in &chosen {
            let entry = people.entry(*user).or_default();
            entry.0 += 1;
            if plurality.as_deref() == Some(option.as_str()) {
                entry.1 += 1;
            }
        }
        units.push(chosen.into_iter().map(|(_, option)| option).collect());
    }
    let mut people: Vec<(i64, u64, u64)> = people
        .into_iter()
        .map(|(u, (n, agreed))| (u, n, agreed))
        .collect();
    people.sort_by_key(|(user, n, _)| (std::cmp::Reverse(*n), *user));
    Ok(Agreement {
        alpha: weighing::krippendorff_alpha_nominal(&units),
        questions: units.len() as u64,
        people,
    })
}
