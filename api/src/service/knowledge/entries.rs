//! Writing entries: a verified answer becomes a version of its question's entry, a rejected or
//! reversed one is retracted, and everyone who relied on an ended version is told; the
//! full-text index changes in the same transaction.

use chrono::{DateTime, Utc};
use entity::agent_answers::{self, AnswerKind};
use entity::agent_questions::{self, ExchangeKind};
use entity::contribution_events::{self, ContributionStatus};
use entity::knowledge_entries::{self, KnowledgeStatus, Verification};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DbBackend, EntityTrait, NotSet, QueryFilter,
    QueryOrder, QuerySelect, Statement, Value,
};
use serde_json::json;

use crate::db::WriteTxn;
use crate::domain::intake::option_label;
use crate::domain::knowledge;
use crate::error::ServiceError;
use crate::service::agents::outbox::{self, EventType, NewEvent};
use crate::service::audit::{self, Actor, AuditEntry};
use crate::service::knowledge::reuse;
use std::collections::{BTreeMap, HashMap};

use super::search::searchable;

/// Write the knowledge entry of a verified answer, in the transaction that verifies it:
/// `verified_by` is the reviewer, or `None` when the niche trusted the answerer on arrival. Only
/// an answer (not a decline) to a question (not a task) is knowledge; anything else writes
/// nothing. Written once per contribution: a second call returns the entry the first wrote. The
/// question's last entry, if any, is the one this replaces (and stops being current).
///
/// A several-answer question is one piece of knowledge, written when it concludes
/// ([`record_concluded`]): while its places are open no answer of it becomes an entry, so no
/// search, similar-knowledge offer or entry page shows anyone its choice before they answer.
pub async fn record_verified_answer(
    txn: &WriteTxn,
    question: &agent_questions::Model,
    answer: &agent_answers::Model,
    contribution_id: i64,
    verified_by: Option<i64>,
    now: DateTime<Utc>,
) -> Result<Option<knowledge_entries::Model>, ServiceError> {
    // An answer from knowledge is that entry again, not a new piece of knowledge.
    if question.kind != ExchangeKind::Question
        || answer.kind != AnswerKind::Answered
        || answer.knowledge_entry_id.is_some()
    {
        return Ok(None);
    }
    if let Some(written) = written_from(txn, contribution_id).await? {
        return Ok(Some(written));
    }
    if question.answers_wanted > 1 {
        return record_concluded(txn, question.id, now).await;
    }
    let Some(question) = lock_question(txn, question.id).await? else {
        return Ok(None);
    };
    let last = last_version(txn, question.id).await?;
    write_version(
        txn,
        &question,
        last,
        answer,
        contribution_id,
        verified_by,
        json!(null),
        now,
    )
    .await
    .map(Some)
}

/// The knowledge of a several-answer question once it has concluded (its places filled, or
/// expired with what came), in the transaction that concluded it or that verified one of its
/// answers after: nothing while it still waits, the current entry when one stands, else an entry
/// from the first verified standing answer that chose the consensus option (with no options, the
/// first verified answer). A disagreement writes nothing: half its answerers would contradict
/// it. The entry's audit row lists every standing answer (who, which option, its review).
pub async fn record_concluded(
    txn: &WriteTxn,
    question_id: i64,
    now: DateTime<Utc>,
) -> Result<Option<knowledge_entries::Model>, ServiceError> {
    let Some(question) = lock_question(txn, question_id).await? else {
        return Ok(None);
    };
    if question.kind != ExchangeKind::Question
        || question.answers_wanted <= 1
        || agent_questions::WAITING.contains(&question.status)
    {
        return Ok(None);
    }
    let last = last_version(txn, question.id).await?;
    if let Some(current) = last
        .as_ref()
        .filter(|e| e.status == KnowledgeStatus::Current)
    {
        return Ok(Some(current.clone()));
    }
    let standing = crate::service::questions::consensus::standing_answers(txn, &question).await?;
    let wanted = match crate::service::questions::consensus::consensus_of(&question, &standing) {
        Some(consensus) if consensus.reached => Some(Some(consensus.option_id)),
        Some(_) => None,
        None => Some(None),
    };
    let Some(wanted) = wanted else {
        return Ok(None);
    };
    let verified = |s: &&crate::service::questions::consensus::Standing| {
        s.review == ContributionStatus::Verified
            && s.answer.kind == AnswerKind::Answered
            && wanted
                .as_ref()
                .is_none_or(|option| s.answer.option_id.as_ref() == Some(option))
    };
    let Some(chosen) = standing.iter().find(verified) else {
        return Ok(None);
    };
    let Some(contribution_id) = chosen.answer.contribution_event_id else {
        return Ok(None);
    };
    let verified_by = contribution_events::Entity::find_by_id(contribution_id)
        .one(txn)
        .await?
        .and_then(|c| c.verified_by);
    let provenance = json!(
        standing
            .iter()
            .map(|s| json!({
                "answerId": s.answer.id,
                "answeredBy": s.handle,
                "optionId": s.answer.option_id,
                "review": s.review,
            }))
            .collect::<Vec<_>>()
    );
    write_version(
        txn,
        &question,
        last,
        &chosen.answer,
        contribution_id,
        verified_by,
        provenance,
        now,
    )
    .await
    .map(Some)
}

/// The entry written from contribution `contribution_id`, if one was.
pub(super) async fn written_from(
    txn: &WriteTxn,
    contribution_id: i64,
) -> Result<Option<knowledge_entries::Model>, ServiceError> {
    Ok(knowledge_entries::Entity::find()
        .filter(knowledge_entries::Column::ContributionEventId.eq(contribution_id))
        .one(txn)
        .await?)
}

/// The question's row as `txn` may now write its knowledge. On PostgreSQL it is locked until the
/// transaction ends: two verifications of one question's answers (two admins at once) write its
/// versions one after the other, the second reading what the first wrote, instead of both
/// taking the same version number. SQLite's one writer orders them already.
pub(super) async fn lock_question(
    txn: &WriteTxn,
    question_id: i64,
) -> Result<Option<agent_questions::Model>, ServiceError> {
    let mut find = agent_questions::Entity::find_by_id(question_id);
    if txn.get_database_backend() == DbBackend::Postgres {
        find = find.lock_exclusive();
    }
    Ok(find.one(txn).await?)
}

/// The question's newest entry, whatever its status.
pub(super) async fn last_version(
    txn: &WriteTxn,
    question_id: i64,
) -> Result<Option<knowledge_entries::Model>, ServiceError> {
    Ok(knowledge_entries::Entity::find()
        .filter(knowledge_entries::Column::QuestionId.eq(question_id))
        .order_by_desc(knowledge_entries::Column::Version)
        .one(txn)
        .await?)
}

/// Append `answer` (its contribution `contribution_id`) as the question's next version after
/// `last`, which stops being current; `answers` is the provenance of a several-answer
/// question's entry (`null` for one answer), kept in the audit row.
#[expect(
    clippy::too_many_arguments,
    reason = "one version's parts, each from its caller"
)]
pub(super) async fn write_version(
    txn: &WriteTxn,
    question: &agent_questions::Model,
    last: Option<knowledge_entries::Model>,
    answer: &agent_answers::Model,
    contribution_id: i64,
    verified_by: Option<i64>,
    answers: serde_json::Value,
    now: DateTime<Utc>,
) -> Result<knowledge_entries::Model, ServiceError> {
    let superseded = match last
        .as_ref()
        .filter(|e| e.status == KnowledgeStatus::Current)
    {
        Some(last) => end(txn, last, KnowledgeStatus::Superseded, None, now)
            .await?
            .then_some(last.id),
        None => None,
    };
    let entry = insert_version(
        txn,
        question,
        Version {
            answer_id: Some(answer.id),
            contribution_id,
            version: last.as_ref().map_or(1, |e| e.version + 1),
            replaces: last.as_ref().map(|e| e.id),
            option_id: answer.option_id.clone(),
            answer: answer.body.clone(),
            answered_by: answer.user_id,
            verified_by,
        },
        now,
    )
    .await?;
    if let Some(old) = superseded {
        tell_superseded(txn, question, old, entry.id, now).await?;
    }
    let mut detail = json!({
        "questionId": question.id,
        "answerId": answer.id,
        "version": entry.version,
        "replaces": entry.replaces,
    });
    if !answers.is_null() {
        detail["answers"] = answers;
    }
    audit::record(
        txn,
        AuditEntry {
            actor: &Actor::User(verified_by.unwrap_or(answer.user_id)),
            action: "knowledge.written",
            subject_type: "knowledge_entry",
            subject_id: entry.id,
            niche_id: Some(entry.niche_id),
            detail,
        },
        now,
    )
    .await?;
    Ok(entry)
}

/// Retract the current entry written from `contribution_id`, in the transaction that rejects or
/// reverses it; `reason` is the reviewer's note. The entry retracted, or `None` when it had none
/// (a pending answer has no entry) or it was no longer current.
pub async fn retract_for(
    txn: &WriteTxn,
    contribution_id: i64,
    reason: Option<&str>,
    actor: &Actor,
    now: DateTime<Utc>,
) -> Result<Option<knowledge_entries::Model>, ServiceError> {
    let Some(entry) = knowledge_entries::Entity::find()
        .filter(knowledge_entries::Column::ContributionEventId.eq(contribution_id))
        .filter(knowledge_entries::Column::Status.eq(KnowledgeStatus::Current))
        .one(txn)
        .await?
    else {
        return Ok(None);
    };
    if !end(txn, &entry, KnowledgeStatus::Retracted, reason, now).await? {
        return Ok(None);
    }
    // Nothing pays for a guess, even a reused one: every reuse of it is given back.
    let refunded = reuse::refund_all(txn, &entry, actor, now).await?;
    if let Some(question) = agent_questions::Entity::find_by_id(entry.question_id)
        .one(txn)
        .await?
    {
        tell_who_relied_on_it(
            txn,
            &question,
            entry.id,
            EventType::KnowledgeRetracted,
            json!({ "entryId": entry.id, "reason": reason }),
            now,
        )
        .await?;
    }
    audit::record(
        txn,
        AuditEntry {
            actor,
            action: "knowledge.retracted",
            subject_type: "knowledge_entry",
            subject_id: entry.id,
            niche_id: Some(entry.niche_id),
            detail: json!({
                "questionId": entry.question_id,
                "reason": reason,
                "reusesRefunded": refunded.len(),
            }),
        },
        now,
    )
    .await?;
    Ok(knowledge_entries::Entity::find_by_id(entry.id)
        .one(txn)
        .await?)
}

/// Tell every agent that received entry `entry_id` of `question` that it changed, once each,
/// through the outbox in the transaction that changed it: the agent that asked its question
/// (which received its answer), the agents that reused it, and those whose questions were
/// settled by pointing to it. One event per agent, naming what of theirs relied on it: `payload`
/// plus, for the asker, the question's `questionId` and `externalId`; `reuses` (their external
/// ids) and `questions` (`{questionId, externalId}`) for the rest.
pub(super) async fn tell_who_relied_on_it(
    txn: &WriteTxn,
    question: &agent_questions::Model,
    entry_id: i64,
    event: EventType,
    payload: serde_json::Value,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    #[derive(Default)]
    struct Relied {
        asked: bool,
        reuses: Vec<String>,
        questions: Vec<(i64, Option<String>)>,
    }
    let mut agents: BTreeMap<Option<i64>, Relied> = BTreeMap::new();
    agents
        .entry(question.registered_agent_id)
        .or_default()
        .asked = true;
    let reuses = reuse::reuses_of(txn, entry_id).await?;
    let pointed: Vec<i64> = reuses.iter().filter_map(|r| r.question_id).collect();
    let pointed: HashMap<i64, Option<String>> = if pointed.is_empty() {
        HashMap::new()
    } else {
        agent_questions::Entity::find()
            .filter(agent_questions::Column::Id.is_in(pointed))
            .all(txn)
            .await?
            .into_iter()
            .map(|q| (q.id, q.external_id))
            .collect()
    };
    for reuse in reuses {
        let relied = agents.entry(reuse.agent_id).or_default();
        if let Some(external_id) = reuse.external_id {
            relied.reuses.push(external_id);
        }
        if let Some(id) = reuse.question_id {
            relied
                .questions
                .push((id, pointed.get(&id).cloned().flatten()));
        }
    }
    for (agent_id, relied) in agents {
        let mut body = payload.clone();
        if relied.asked {
            body["questionId"] = json!(question.id);
            body["externalId"] = json!(question.external_id);
        }
        if !relied.reuses.is_empty() {
            body["reuses"] = json!(relied.reuses);
        }
        if !relied.questions.is_empty() {
            body["questions"] = relied
                .questions
                .iter()
                .map(|(id, external_id)| json!({ "questionId": id, "externalId": external_id }))
                .collect();
        }
        let delivered_for = if relied.asked {
            Some(question.id)
        } else {
            relied.questions.first().map(|(id, _)| *id)
        };
        outbox::enqueue_to(
            txn,
            NewEvent {
                event,
                niche_id: question.niche_id,
                question_id: delivered_for,
                user_id: None,
                payload: body,
            },
            agent_id,
            now,
        )
        .await?;
    }
    Ok(())
}

/// Tell the agents that received entry `old` of `question` that `new` replaced it.
pub(super) async fn tell_superseded(
    txn: &WriteTxn,
    question: &agent_questions::Model,
    old: i64,
    new: i64,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    tell_who_relied_on_it(
        txn,
        question,
        old,
        EventType::KnowledgeSuperseded,
        json!({ "entryId": old, "newEntryId": new }),
        now,
    )
    .await
}

/// A current entry stops being current: superseded or retracted, in SQLite's index too (its
/// rowid names the status). Whether it was current.
pub(super) async fn end(
    txn: &WriteTxn,
    entry: &knowledge_entries::Model,
    status: KnowledgeStatus,
    reason: Option<&str>,
    now: DateTime<Utc>,
) -> Result<bool, ServiceError> {
    let ended = knowledge_entries::Entity::update_many()
        .col_expr(knowledge_entries::Column::Status, Expr::value(status))
        .col_expr(knowledge_entries::Column::EndedAt, Expr::value(Some(now)))
        .col_expr(
            knowledge_entries::Column::EndedReason,
            Expr::value(reason.map(str::to_owned)),
        )
        .filter(knowledge_entries::Column::Id.eq(entry.id))
        .filter(knowledge_entries::Column::Status.eq(KnowledgeStatus::Current))
        .exec(txn)
        .await?;
    if ended.rows_affected != 1 {
        return Ok(false);
    }
    if txn.get_database_backend() == DbBackend::Sqlite {
        txn.execute_raw(Statement::from_sql_and_values(
            DbBackend::Sqlite,
            "UPDATE knowledge_search SET rowid = ? WHERE rowid = ?",
            [
                knowledge::search_rowid(entry.niche_id, status, entry.id).into(),
                knowledge::search_rowid(entry.niche_id, KnowledgeStatus::Current, entry.id).into(),
            ],
        ))
        .await?;
    }
    Ok(true)
}

/// A version to append to a question's line of knowledge.
pub(super) struct Version {
    /// The answer it is made from (none for a correction).
    pub(super) answer_id: Option<i64>,
    /// The contribution whose verification writes it.
    pub(super) contribution_id: i64,
    /// Its number in the line.
    pub(super) version: i64,
    /// The version it replaces.
    pub(super) replaces: Option<i64>,
    /// The chosen option's id (its label is looked up in the question's options).
    pub(super) option_id: Option<String>,
    /// The answer's words.
    pub(super) answer: Option<String>,
    /// Its author.
    pub(super) answered_by: i64,
    /// Its reviewer; none when the niche trusted the author on arrival.
    pub(super) verified_by: Option<i64>,
}

/// Append `version` to `question`'s line as its current entry, and index it.
pub(super) async fn insert_version(
    txn: &WriteTxn,
    question: &agent_questions::Model,
    version: Version,
    now: DateTime<Utc>,
) -> Result<knowledge_entries::Model, ServiceError> {
    let option_label = version
        .option_id
        .as_deref()
        .and_then(|chosen| option_label(&question.options, chosen));
    let entry = knowledge_entries::Entity::insert(knowledge_entries::ActiveModel {
        id: NotSet,
        niche_id: Set(question.niche_id),
        question_id: Set(question.id),
        answer_id: Set(version.answer_id),
        contribution_event_id: Set(version.contribution_id),
        version: Set(version.version),
        replaces: Set(version.replaces),
        status: Set(KnowledgeStatus::Current),
        title: Set(question.title.clone()),
        question: Set(question.question.clone()),
        option_id: Set(version.option_id),
        option_label: Set(option_label),
        answer: Set(version.answer),
        answered_by: Set(version.answered_by),
        verified_by: Set(version.verified_by),
        verification: Set(if version.verified_by.is_some() {
            Verification::Review
        } else {
            Verification::Trust
        }),
        verified_at: Set(now),
        ended_at: Set(None),
        ended_reason: Set(None),
        created_at: Set(now),
    })
    .exec_with_returning(txn)
    .await?;
    index(txn, &entry).await?;
    Ok(entry)
}

/// Put `entry` into the full-text index. PostgreSQL's vector is a generated column, written
/// with the row; SQLite's FTS5 table takes the same words here, in the same transaction.
pub(super) async fn index(
    txn: &WriteTxn,
    entry: &knowledge_entries::Model,
) -> Result<(), ServiceError> {
    let text = searchable(entry);
    count_terms(txn, entry.niche_id, &text).await?;
    if txn.get_database_backend() != DbBackend::Sqlite {
        return Ok(());
    }
    txn.execute_raw(Statement::from_sql_and_values(
        DbBackend::Sqlite,
        "INSERT INTO knowledge_search (rowid, title, question, answer) VALUES (?, ?, ?, ?)",
        [
            knowledge::search_rowid(entry.niche_id, entry.status, entry.id).into(),
            text.title.into(),
            text.question.into(),
            text.answer.into(),
        ],
    ))
    .await?;
    Ok(())
}

/// Count `entry` under each of its words in its niche (`knowledge_terms`), and once under the
/// empty word (the niche's total), in the entry's transaction: what a likes query reads to leave
/// out the words a large share of the niche holds ([`knowledge::rare_words`]). One statement.
pub(super) async fn count_terms(
    txn: &WriteTxn,
    niche_id: i64,
    text: &knowledge::Searchable<'_>,
) -> Result<(), ServiceError> {
    let mut terms = text.terms();
    terms.push(String::new());
    let backend = txn.get_database_backend();
    let rows = vec!["(?, ?, 1)"; terms.len()].join(", ");
    let mut values: Vec<Value> = Vec::with_capacity(terms.len() * 2);
    for term in terms {
        values.push(niche_id.into());
        values.push(term.into());
    }
    let sql = format!(
        "INSERT INTO knowledge_terms (niche_id, term, entries) VALUES {rows} \
         ON CONFLICT (niche_id, term) DO UPDATE SET entries = knowledge_terms.entries + 1"
    );
    txn.execute_raw(crate::db::statement(backend, &sql, values))
        .await?;
    Ok(())
}

/// The contribution type of settling a question by pointing to an entry (1 point).
pub const POINTER_TYPE: &str = "knowledge_pointer";

/// How an entry was verified, as agents read it: `trust` (on arrival, its author trusted by the
/// niche) or `review` (by a second person).
pub fn verdict_word(entry: &knowledge_entries::Model) -> &'static str {
    match entry.verification {
        Verification::Trust => "trust",
        Verification::Review => "review",
    }
}
