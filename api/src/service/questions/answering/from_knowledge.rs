//! Answering from knowledge (docs/contract.md#knowledge): a verified entry settles a question,
//! paying its author, when its option is one the question offers.

use chrono::{DateTime, Utc};
use entity::agent_questions::{self, ExchangeKind};
use entity::budget_entries::BudgetEntryKind;
use entity::contribution_events::{self, ContributionStatus};
use entity::knowledge_entries;
use sea_orm::{ActiveValue::Set, EntityTrait, NotSet};
use serde_json::json;

use crate::db::{Db, WriteTxn};
use crate::domain::answer::{Kind, ValidAnswer};
use crate::error::{Conflict, ServiceError};
use crate::service::agents::outbox::{self, EventType, NewEvent};
use crate::service::audit::Actor;
use crate::service::people::access::Viewer;
use crate::service::{knowledge, knowledge::reuse, money::budget, money::scores};

use super::booking::{Contribution, Stored, audit_the_answer, budget_audit, store_answer};
use super::{
    AnswerOutcome, AnswerRequest, Closing, close_if_waiting, find_question, niche_of, not_waiting,
    options_of,
};

/// The entry an answer `from_knowledge` points to, checked: only `entryId` is sent (400
/// otherwise), the question is a question (a task's result is not knowledge: 400), and the
/// entry is one of the question's niche (404 otherwise, as for an entry that does not exist).
/// Whether it is still current is checked in the writing transaction.
pub(super) async fn pointed_entry(
    db: &Db,
    question: &agent_questions::Model,
    request: &AnswerRequest,
) -> Result<knowledge_entries::Model, ServiceError> {
    let bad = |m: &str| Err(ServiceError::BadInput(m.to_owned()));
    let Some(entry_id) = request.entry_id else {
        return bad("an answer from knowledge needs entryId, the entry that answers it");
    };
    let words = |t: &Option<String>| t.as_deref().is_some_and(|t| !t.trim().is_empty());
    if words(&request.option_id)
        || words(&request.body)
        || request.actual_cost_minor.is_some()
        || request.confidence.is_some()
    {
        return bad(
            "an answer from knowledge gives the entry's option and words: send only entryId",
        );
    }
    if question.kind == ExchangeKind::Task {
        return bad("a task cannot be settled from knowledge");
    }
    if question.answers_wanted > 1 {
        return bad("a question asking for several answers takes each person's own answer");
    }
    let entry = knowledge_entries::Entity::find_by_id(entry_id)
        .one(db)
        .await?
        .filter(|e| e.niche_id == question.niche_id && e.question_id != question.id)
        .ok_or_else(|| {
            ServiceError::NotFound(format!("no knowledge entry {entry_id} in this niche"))
        })?;
    option_for_entry(question, &entry)?;
    Ok(entry)
}

/// The question's option an entry's chosen option stands for, matched by label (ignoring case
/// and surrounding spaces): an entry answers a question with options only when it chose one of
/// them (400 otherwise, naming the entry's choice). `None` for a question without options.
pub(super) fn option_for_entry(
    question: &agent_questions::Model,
    entry: &knowledge_entries::Model,
) -> Result<Option<String>, ServiceError> {
    let options = options_of(question);
    if options.is_empty() {
        return Ok(None);
    }
    let same = |a: &str, b: &str| a.trim().to_lowercase() == b.trim().to_lowercase();
    let chosen = entry.option_label.as_deref().unwrap_or_default();
    options
        .iter()
        .find(|o| !chosen.trim().is_empty() && same(&o.label, chosen))
        .map(|o| Some(o.id.clone()))
        .ok_or_else(|| {
            ServiceError::BadInput(if chosen.trim().is_empty() {
                format!(
                    "knowledge entry {} chose no option, and this question asks for one of its options",
                    entry.id
                )
            } else {
                format!(
                    "knowledge entry {} chose \"{chosen}\", which is not one of this question's options",
                    entry.id
                )
            })
        })
}

/// Settle a waiting question by pointing to a current knowledge entry of its niche, in one
/// transaction (docs/contract.md#knowledge): close it, store the entry's option and words as the
/// winning answer naming the entry, book the pointer's contribution (verified: the entry was),
/// release the question's reservation and credit the entry's author as for a reuse, and tell
/// the agent the entry's answer, version and verdict. 409 `KNOWLEDGE_NOT_CURRENT` when the entry
/// stopped being current.
pub(super) async fn settle_from_knowledge(
    txn: &WriteTxn,
    viewer: &Viewer,
    question: &agent_questions::Model,
    entry: &knowledge_entries::Model,
    trusted: bool,
    now: DateTime<Utc>,
) -> Result<AnswerOutcome, ServiceError> {
    let entry = reuse::current_for_update(txn, entry.id)
        .await?
        .ok_or(ServiceError::Conflict(Conflict::KnowledgeNotCurrent))?;
    let option_id = option_for_entry(question, &entry)?;
    let Some(closed) = close_if_waiting(txn, question.id, Closing::Answered, now).await? else {
        return Err(not_waiting(&find_question(txn, question.id).await?));
    };
    // An answer like any other (docs/contract.md#knowledge): verified on arrival only for an
    // operator the niche trusts, and never when it points at their own entry (four eyes: the
    // pointer earns its author a reuse credit).
    let niche = niche_of(txn, question).await?;
    let status = if trusted && entry.answered_by != viewer.user_id {
        ContributionStatus::Verified
    } else {
        ContributionStatus::Pending
    };
    let verified = status == ContributionStatus::Verified;
    let pointer = scores::contribution_type(txn, knowledge::POINTER_TYPE).await?;
    let contribution = contribution_events::Entity::insert(contribution_events::ActiveModel {
        id: NotSet,
        niche_id: Set(question.niche_id),
        user_id: Set(viewer.user_id),
        type_id: Set(pointer.id),
        points: Set(pointer.default_points),
        status: Set(status),
        source: Set("answer".into()),
        evidence: Set(json!({ "questionId": question.id, "entryId": entry.id })),
        dedupe_key: Set(None),
        verified_at: Set(verified.then_some(now)),
        verified_by: Set(None),
        reverses: Set(None),
        created_at: Set(now),
    })
    .exec(txn)
    .await?
    .last_insert_id;
    let valid = ValidAnswer {
        kind: Kind::Answered,
        option_id: option_id.clone().or_else(|| entry.option_id.clone()),
        body: entry.answer.clone(),
        actual_cost_minor: None,
    };
    let answer = store_answer(
        txn,
        viewer,
        question,
        &valid,
        Stored {
            contribution_event_id: Some(contribution),
            knowledge_entry_id: Some(entry.id),
            confidence: None,
        },
        now,
    )
    .await?;
    scores::recompute(txn, question.niche_id, viewer.user_id, now).await?;
    let actor = Actor::User(viewer.user_id);
    let booked = Contribution {
        id: contribution,
        points: pointer.default_points,
        status,
    };
    audit_the_answer(txn, &actor, question, &answer, &valid, &booked, now).await?;
    if let Some(released) = budget::settle(
        txn,
        question.niche_id,
        question.id,
        BudgetEntryKind::Release,
        now,
    )
    .await?
    {
        budget_audit(txn, &actor, question, "budget.released", released, now).await?;
    }
    // The author's credit is held until this pointer is verified (docs/contract.md#held-money).
    let reuse = reuse::credit_pointer(
        txn, &niche, &entry, question, answer.id, !verified, &actor, now,
    )
    .await?;
    if reuse.amount_minor > 0 {
        budget_audit(
            txn,
            &actor,
            question,
            "budget.charged",
            reuse.amount_minor,
            now,
        )
        .await?;
    }
    let event = NewEvent::about_question(
        EventType::AnswerCreated,
        question,
        Some(viewer.user_id),
        json!({
            "answerId": answer.id,
            "answer": entry.answer,
            "optionId": valid.option_id,
            "optionLabel": entry.option_label,
            "answeredBy": viewer.handle,
            "review": if verified { "verified" } else { "pending" },
            "entryId": entry.id,
            "version": entry.version,
            "verdict": knowledge::verdict_word(&entry),
            "verifiedAt": entry.verified_at,
        }),
    );
    outbox::enqueue_to(txn, event, question.registered_agent_id, now).await?;
    let notice = if verified {
        format!(
            "Thanks. The agent has the answer from knowledge. That is {} point{}.",
            pointer.default_points,
            if pointer.default_points == 1 { "" } else { "s" }
        )
    } else {
        "Thanks. The agent has the answer from knowledge; it goes to review before it counts."
            .to_owned()
    };
    Ok(AnswerOutcome {
        answer,
        question: closed,
        points: pointer.default_points,
        contribution_status: Some(status),
        notice,
    })
}
