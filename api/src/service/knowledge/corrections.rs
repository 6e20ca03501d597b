//! Corrections (docs/contract.md#knowledge): a member proposes a new version of an entry, an admin
//! reviews it, and a verified correction becomes the entry's next version.

use chrono::{DateTime, Utc};
use entity::agent_questions;
use entity::contribution_events::{self, ContributionStatus};
use entity::knowledge_corrections::{self, CorrectionStatus};
use entity::knowledge_entries::{self, KnowledgeStatus};
use entity::niches;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DbBackend, EntityTrait, NotSet, QueryFilter,
    QueryOrder, QuerySelect,
};
use serde_json::json;

use crate::db::{Db, WriteTxn};
use crate::domain::text::char_len;
use crate::error::{Conflict, ServiceError};
use crate::service::audit::{self, Actor, AuditEntry};
use crate::service::people::access::{self, Viewer};

use super::entries::{Version, end, insert_version, tell_superseded};

/// A correction as a member proposes it.
#[derive(Debug, Clone)]
pub struct NewCorrection {
    /// The entry to correct: its current version.
    pub entry_id: i64,
    /// Another of the question's options, if the option changes.
    pub option_id: Option<String>,
    /// New words, if the words change (at most the answer's cap).
    pub answer: Option<String>,
    /// Why, for the reviewer (at most 2000 characters).
    pub note: Option<String>,
}

/// The longest note a correction carries.
pub const NOTE_MAX: usize = 2000;

/// Propose a correction to a current entry (docs/contract.md#knowledge): any active member of
/// its niche who acts on questions, or an admin. It is a contribution of its own, pending until
/// someone other than its author verifies it (`admin::review`); nothing of the entry changes
/// until then. Refused: not signed in (401), not a member (403, and another niche's entry is not
/// found), an entry no longer current (409 `KNOWLEDGE_NOT_CURRENT`), a correction that changes
/// nothing (an option or words the same as the entry's are no change) or names an option the
/// question does not have (by id or label), or words or a note over their caps (400). One
/// pending correction per person per entry: proposing again returns the pending one, unchanged.
pub async fn propose_correction(
    db: &Db,
    viewer: Option<&Viewer>,
    new: NewCorrection,
    now: DateTime<Utc>,
) -> Result<Proposed, ServiceError> {
    let viewer = access::signed_in(viewer)?;
    let not_found = || ServiceError::NotFound("no such knowledge entry".into());
    let entry = knowledge_entries::Entity::find_by_id(new.entry_id)
        .one(db)
        .await?
        .ok_or_else(not_found)?;
    let niche = niches::Entity::find_by_id(entry.niche_id)
        .one(db)
        .await?
        .ok_or_else(not_found)?;
    let member = access::membership(db, viewer, niche.id).await?;
    if !viewer.is_admin && !access::reads_questions(member.as_ref()) {
        return Err(not_found());
    }
    if !viewer.is_admin && !access::acts_on_questions(member.as_ref()) {
        return Err(access::not_a_member(&niche));
    }
    let trimmed =
        |text: Option<String>| text.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty());
    let (option_id, answer, note) = (
        trimmed(new.option_id),
        trimmed(new.answer),
        trimmed(new.note),
    );
    if let Some(words) = &answer
        && char_len(words) > crate::domain::text::ANSWER_BODY_MAX
    {
        return Err(ServiceError::BadInput(format!(
            "The corrected answer is longer than {} characters.",
            crate::domain::text::ANSWER_BODY_MAX
        )));
    }
    if let Some(note) = &note
        && char_len(note) > NOTE_MAX
    {
        return Err(ServiceError::BadInput(format!(
            "The note is longer than {NOTE_MAX} characters."
        )));
    }
    let question = agent_questions::Entity::find_by_id(entry.question_id)
        .one(db)
        .await?
        .ok_or_else(not_found)?;
    // The option is named by its id or its label, as the question offers it.
    let option_id = match option_id {
        None => None,
        Some(chosen) => Some(option_of(&question.options, &chosen).ok_or_else(|| {
            ServiceError::BadInput(format!(
                "“{}” is not one of the question's options.",
                chosen.chars().take(60).collect::<String>()
            ))
        })?),
    };
    // What is the same as the entry is no change.
    let option_id = option_id.filter(|o| entry.option_id.as_ref() != Some(o));
    let answer = answer.filter(|a| entry.answer.as_deref().map(str::trim) != Some(a.as_str()));
    if option_id.is_none() && answer.is_none() {
        return Err(ServiceError::BadInput(
            "The correction changes nothing: choose another option, change the words, or both."
                .into(),
        ));
    }
    let txn = db.begin_write().await?;
    // Still current now that this writer holds the turn (a review may have just ended it). On
    // PostgreSQL the entry's row stays locked until the end, so two proposals of one person at
    // once (a double click, two tabs) run one after the other and the second finds the first.
    let mut find = knowledge_entries::Entity::find_by_id(entry.id);
    if txn.get_database_backend() == DbBackend::Postgres {
        find = find.lock_exclusive();
    }
    let current = find
        .one(&txn)
        .await?
        .is_some_and(|e| e.status == KnowledgeStatus::Current);
    if !current {
        txn.rollback().await?;
        return Err(Conflict::KnowledgeNotCurrent.into());
    }
    // One pending correction per person per entry: a second proposal returns the first.
    if let Some(pending) = knowledge_corrections::Entity::find()
        .filter(knowledge_corrections::Column::EntryId.eq(entry.id))
        .filter(knowledge_corrections::Column::ProposedBy.eq(viewer.user_id))
        .filter(knowledge_corrections::Column::Status.eq(CorrectionStatus::Pending))
        .one(&txn)
        .await?
    {
        txn.rollback().await?;
        return Ok(Proposed {
            correction: pending,
            entry,
            already_pending: true,
        });
    }
    let kind = crate::service::money::scores::contribution_type(&txn, CORRECTION_TYPE).await?;
    let contribution = contribution_events::Entity::insert(contribution_events::ActiveModel {
        id: NotSet,
        niche_id: Set(niche.id),
        user_id: Set(viewer.user_id),
        type_id: Set(kind.id),
        points: Set(kind.default_points),
        status: Set(ContributionStatus::Pending),
        source: Set("correction".into()),
        evidence: Set(json!({ "entryId": entry.id, "questionId": entry.question_id })),
        dedupe_key: Set(None),
        verified_at: Set(None),
        verified_by: Set(None),
        reverses: Set(None),
        created_at: Set(now),
    })
    .exec_with_returning(&txn)
    .await?;
    let correction = knowledge_corrections::Entity::insert(knowledge_corrections::ActiveModel {
        id: NotSet,
        entry_id: Set(entry.id),
        niche_id: Set(niche.id),
        proposed_by: Set(viewer.user_id),
        option_id: Set(option_id),
        answer: Set(answer),
        note: Set(note),
        contribution_event_id: Set(contribution.id),
        status: Set(CorrectionStatus::Pending),
        created_at: Set(now),
        decided_at: Set(None),
    })
    .exec_with_returning(&txn)
    .await?;
    audit::record(
        &txn,
        AuditEntry {
            actor: &Actor::User(viewer.user_id),
            action: "knowledge.correction_proposed",
            subject_type: "knowledge_entry",
            subject_id: entry.id,
            niche_id: Some(niche.id),
            detail: json!({ "correctionId": correction.id, "contributionId": contribution.id }),
        },
        now,
    )
    .await?;
    txn.commit().await?;
    Ok(Proposed {
        correction,
        entry,
        already_pending: false,
    })
}

/// The id of the option of `options` named `chosen` by its id or, failing that, its label.
pub(super) fn option_of(options: &serde_json::Value, chosen: &str) -> Option<String> {
    let stored = crate::domain::intake::stored_options(options);
    stored
        .iter()
        .find(|o| o.id == chosen)
        .or_else(|| stored.iter().find(|o| o.label.trim() == chosen))
        .map(|o| o.id.clone())
}

/// A correction proposed, or the one its author already has pending on the entry.
#[derive(Debug, Clone)]
pub struct Proposed {
    /// The correction.
    pub correction: knowledge_corrections::Model,
    /// The entry it corrects.
    pub entry: knowledge_entries::Model,
    /// Whether it was already pending (nothing new was written).
    pub already_pending: bool,
}

/// The contribution type of a correction.
pub const CORRECTION_TYPE: &str = "knowledge_correction";

/// What a review decided of a correction, in the review's transaction: verified, the correction
/// is written as the entry's next version (the corrected one superseded, and the agents that
/// received it told); rejected, it is marked so; a reversed correction retracts the version it
/// wrote (`retract_for`, as for an answer). `Ok(false)` when the contribution is no correction.
/// Verifying a correction of an entry that is no longer current is 409 `KNOWLEDGE_NOT_CURRENT`.
pub async fn review_correction(
    txn: &WriteTxn,
    contribution_id: i64,
    verified: bool,
    reviewer: i64,
    now: DateTime<Utc>,
) -> Result<bool, ServiceError> {
    let Some(correction) = knowledge_corrections::Entity::find()
        .filter(knowledge_corrections::Column::ContributionEventId.eq(contribution_id))
        .filter(knowledge_corrections::Column::Status.eq(CorrectionStatus::Pending))
        .one(txn)
        .await?
    else {
        return Ok(false);
    };
    knowledge_corrections::Entity::update_many()
        .col_expr(
            knowledge_corrections::Column::Status,
            Expr::value(if verified {
                CorrectionStatus::Verified
            } else {
                CorrectionStatus::Rejected
            }),
        )
        .col_expr(
            knowledge_corrections::Column::DecidedAt,
            Expr::value(Some(now)),
        )
        .filter(knowledge_corrections::Column::Id.eq(correction.id))
        .exec(txn)
        .await?;
    if !verified {
        return Ok(true);
    }
    let entry = knowledge_entries::Entity::find_by_id(correction.entry_id)
        .one(txn)
        .await?
        .ok_or_else(|| ServiceError::Internal(anyhow::anyhow!("correction of no entry")))?;
    if entry.status != KnowledgeStatus::Current
        || !end(txn, &entry, KnowledgeStatus::Superseded, None, now).await?
    {
        return Err(Conflict::KnowledgeNotCurrent.into());
    }
    let question = agent_questions::Entity::find_by_id(entry.question_id)
        .one(txn)
        .await?
        .ok_or_else(|| ServiceError::Internal(anyhow::anyhow!("entry of no question")))?;
    // What the correction does not change is kept.
    let next = insert_version(
        txn,
        &question,
        Version {
            answer_id: None,
            contribution_id,
            version: latest_version(txn, entry.question_id).await? + 1,
            replaces: Some(entry.id),
            option_id: correction.option_id.clone().or(entry.option_id.clone()),
            answer: correction.answer.clone().or(entry.answer.clone()),
            answered_by: correction.proposed_by,
            verified_by: Some(reviewer),
        },
        now,
    )
    .await?;
    tell_superseded(txn, &question, entry.id, next.id, now).await?;
    audit::record(
        txn,
        AuditEntry {
            actor: &Actor::User(reviewer),
            action: "knowledge.corrected",
            subject_type: "knowledge_entry",
            subject_id: next.id,
            niche_id: Some(next.niche_id),
            detail: json!({ "replaces": entry.id, "correctionId": correction.id, "version": next.version }),
        },
        now,
    )
    .await?;
    Ok(true)
}

/// The highest version of a question's entries (0 when it has none).
pub(super) async fn latest_version(txn: &WriteTxn, question_id: i64) -> Result<i64, ServiceError> {
    Ok(knowledge_entries::Entity::find()
        .filter(knowledge_entries::Column::QuestionId.eq(question_id))
        .order_by_desc(knowledge_entries::Column::Version)
        .one(txn)
        .await?
        .map_or(0, |e| e.version))
}

/// The options of the question entry `entry` answers, as it offered them (none when it has
/// none): what a correction may choose from.
pub async fn options_of<C: ConnectionTrait>(
    conn: &C,
    entry: &knowledge_entries::Model,
) -> Result<Vec<crate::domain::intake::QuestionOption>, ServiceError> {
    Ok(agent_questions::Entity::find_by_id(entry.question_id)
        .one(conn)
        .await?
        .map(|q| crate::domain::intake::stored_options(&q.options))
        .unwrap_or_default())
}

/// A correction as its reviewer weighs it: the correction, the version it corrects, and the
/// question's options (for the labels of both choices).
#[derive(Debug, Clone)]
pub struct ForReview {
    /// The correction.
    pub correction: knowledge_corrections::Model,
    /// The version it corrects, as it stands.
    pub entry: knowledge_entries::Model,
    /// The question's options.
    pub options: Vec<crate::domain::intake::QuestionOption>,
}

/// The correction that contribution `contribution_id` is, for admins (403 otherwise); `None`
/// when the contribution is no correction.
pub async fn correction_for_review(
    db: &Db,
    viewer: Option<&Viewer>,
    contribution_id: i64,
) -> Result<Option<ForReview>, ServiceError> {
    access::admin(viewer)?;
    let Some(correction) = knowledge_corrections::Entity::find()
        .filter(knowledge_corrections::Column::ContributionEventId.eq(contribution_id))
        .one(db)
        .await?
    else {
        return Ok(None);
    };
    let Some(entry) = knowledge_entries::Entity::find_by_id(correction.entry_id)
        .one(db)
        .await?
    else {
        return Ok(None);
    };
    let options = options_of(db, &entry).await?;
    Ok(Some(ForReview {
        correction,
        entry,
        options,
    }))
}
