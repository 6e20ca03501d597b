//! Niche knowledge (docs/contract.md#knowledge): verified answers become entries of their
//! niche's knowledge, in the transaction that verifies them, and are searched with each store's
//! own full-text index.
//!
//! - **Written** where an answer becomes verified: on arrival for an answerer the niche trusts
//!   (`answering`), or by review (`admin::review`). Tasks are not knowledge. A question's entries
//!   are versions: the first is 1, a later verified answer to the reopened question is the next,
//!   naming the one it replaces.
//! - **Retracted** in the transaction that rejects or reverses the answer: gone from every search
//!   that asks for current entries, still there by id with its status.
//! - **Searched** by title, question and answer words — never the agent's context, which is
//!   untrusted and is not copied into an entry at all. The index (SQLite FTS5, PostgreSQL's
//!   `tsvector` column) changes in the entry's transaction, so an entry is found the moment it
//!   is committed.

use chrono::{DateTime, Utc};
use entity::agent_answers::{self, AnswerKind};
use entity::agent_questions::{self, ExchangeKind};
use entity::contribution_events::{self, ContributionStatus};
use entity::knowledge_corrections::{self, CorrectionStatus};
use entity::knowledge_entries::{self, KnowledgeStatus, Verification};
use entity::niches;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveEnum, ActiveValue::Set, ColumnTrait, ConnectionTrait, DbBackend, EntityTrait,
    FromQueryResult, Iterable, NotSet, QueryFilter, QueryOrder, QuerySelect, Statement, Value,
};
use serde_json::json;

use crate::db::{Db, WriteTxn};
use crate::domain::intake::option_label;
use crate::domain::knowledge::{self, QUERY_MAX};
use crate::domain::text::char_len;
use crate::error::{Conflict, ServiceError};
use crate::service::access::{self, Viewer};
use crate::service::agents::Asker;
use crate::service::audit::{self, Actor, AuditEntry};
use crate::service::outbox::{self, EventType, NewEvent};
use crate::service::reuse;
use std::collections::{BTreeMap, HashMap};

/// The most results one page of a search holds.
pub const MAX_PAGE: u64 = 50;
/// An agent's search returns at most this many.
pub use askloop_wire::knowledge::MAX_AGENT_RESULTS;

/// An entry found, with how well it matched (higher is better; 0 without a search).
#[derive(Debug, Clone)]
pub struct Found {
    /// The entry.
    pub entry: knowledge_entries::Model,
    /// The engine's relevance: bm25 (negated) on SQLite; on PostgreSQL `ts_rank_cd` for a
    /// person's search, `ts_rank` for a likes query.
    pub score: f64,
}

/// What a search looks for.
#[derive(Debug, Clone)]
pub enum Looking {
    /// Every entry, newest verified first.
    All,
    /// What a person typed: any of its plain words, ranked; quoted phrases required, `-word`s
    /// left out ([`knowledge::Loose`]).
    Typed(knowledge::Loose),
    /// Entries like a question: any of its content words.
    Like(Vec<String>),
}

impl Looking {
    /// A person's search text: refused over [`QUERY_MAX`] characters; one with no word to look
    /// for finds nothing (never an error).
    pub fn typed(text: &str) -> Result<Option<Self>, ServiceError> {
        check_length(text)?;
        Ok(knowledge::parse_loose(text).map(Looking::Typed))
    }

    /// Entries like `text` (a question's title and words): `None` when it has no content word.
    pub fn like(text: &str) -> Option<Self> {
        let words = knowledge::content_words(text);
        (!words.is_empty()).then_some(Looking::Like(words))
    }
}

fn check_length(text: &str) -> Result<(), ServiceError> {
    if char_len(text) > QUERY_MAX {
        return Err(ServiceError::BadInput(format!(
            "a search is at most {QUERY_MAX} characters"
        )));
    }
    Ok(())
}

/// One page of entries.
#[derive(Debug, Clone)]
pub struct FoundPage {
    /// The entries, best first (newest first without a search).
    pub items: Vec<Found>,
    /// Whether there are more after these.
    pub has_next: bool,
}

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
    let standing = crate::service::consensus::standing_answers(txn, &question).await?;
    let wanted = match crate::service::consensus::consensus_of(&question, &standing) {
        Some(consensus) if consensus.reached => Some(Some(consensus.option_id)),
        Some(_) => None,
        None => Some(None),
    };
    let Some(wanted) = wanted else {
        return Ok(None);
    };
    let verified = |s: &&crate::service::consensus::Standing| {
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
async fn written_from(
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
async fn lock_question(
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
async fn last_version(
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
async fn write_version(
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
async fn tell_who_relied_on_it(
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
async fn tell_superseded(
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
async fn end(
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
struct Version {
    /// The answer it is made from (none for a correction).
    answer_id: Option<i64>,
    /// The contribution whose verification writes it.
    contribution_id: i64,
    /// Its number in the line.
    version: i64,
    /// The version it replaces.
    replaces: Option<i64>,
    /// The chosen option's id (its label is looked up in the question's options).
    option_id: Option<String>,
    /// The answer's words.
    answer: Option<String>,
    /// Its author.
    answered_by: i64,
    /// Its reviewer; none when the niche trusted the author on arrival.
    verified_by: Option<i64>,
}

/// Append `version` to `question`'s line as its current entry, and index it.
async fn insert_version(
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
async fn index(txn: &WriteTxn, entry: &knowledge_entries::Model) -> Result<(), ServiceError> {
    count_terms(txn, entry).await?;
    if txn.get_database_backend() != DbBackend::Sqlite {
        return Ok(());
    }
    txn.execute_raw(Statement::from_sql_and_values(
        DbBackend::Sqlite,
        "INSERT INTO knowledge_search (rowid, title, question, answer) VALUES (?, ?, ?, ?)",
        [
            knowledge::search_rowid(entry.niche_id, entry.status, entry.id).into(),
            entry.title.clone().into(),
            entry.question.clone().into(),
            answer_words(entry).into(),
        ],
    ))
    .await?;
    Ok(())
}

/// Count `entry` under each of its words in its niche (`knowledge_terms`), and once under the
/// empty word (the niche's total), in the entry's transaction: what a likes query reads to leave
/// out the words a large share of the niche holds ([`knowledge::rare_words`]). One statement.
async fn count_terms(txn: &WriteTxn, entry: &knowledge_entries::Model) -> Result<(), ServiceError> {
    let answer = answer_words(entry);
    let mut terms = knowledge::counted_terms(&[&entry.title, &entry.question, &answer]);
    terms.push(String::new());
    let backend = txn.get_database_backend();
    let rows = vec!["(?, ?, 1)"; terms.len()].join(", ");
    let mut values: Vec<Value> = Vec::with_capacity(terms.len() * 2);
    for term in terms {
        values.push(entry.niche_id.into());
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

/// A likes query narrowed to its words worth asking for in niche `niche_id`
/// ([`knowledge::rare_words`], from the niche's word counts: one indexed read), with how many
/// entries the counts say it matches at most; any other search as it is, with 0 (not counted).
pub async fn narrowed<C: ConnectionTrait>(
    conn: &C,
    niche_id: i64,
    looking: Looking,
) -> Result<(Looking, i64), ServiceError> {
    let Looking::Like(words) = looking else {
        return Ok((looking, 0));
    };
    let backend = conn.get_database_backend();
    let mut terms: Vec<String> = words.iter().map(|w| knowledge::counted_term(w)).collect();
    terms.push(String::new());
    terms.sort();
    terms.dedup();
    let listed = vec!["?"; terms.len()].join(", ");
    let sql = format!(
        "SELECT term, entries FROM knowledge_terms WHERE niche_id = ? AND term IN ({listed})"
    );
    let mut values: Vec<Value> = vec![niche_id.into()];
    values.extend(terms.into_iter().map(Value::from));
    let rows = conn
        .query_all_raw(crate::db::statement(backend, &sql, values))
        .await?;
    let mut counts = HashMap::with_capacity(rows.len());
    for row in rows {
        let term: String = row.try_get("", "term")?;
        let entries: i64 = row.try_get("", "entries")?;
        counts.insert(term, entries);
    }
    let total = counts.remove("").unwrap_or(0);
    let kept = knowledge::rare_words(&words, &counts, total);
    let matches = knowledge::matches_at_most(&kept, &counts, total);
    Ok((Looking::Like(kept), matches))
}

/// The words an entry's answer is searched by: the chosen option's label, then the words.
fn answer_words(entry: &knowledge_entries::Model) -> String {
    [entry.option_label.as_deref(), entry.answer.as_deref()]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ")
}

/// `entry`'s columns, qualified by the alias `e`.
fn entry_columns() -> String {
    use sea_orm::IdenStatic;
    knowledge_entries::Column::iter()
        .map(|c| format!("e.{}", c.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Search `niche_id`'s entries of `status`: one page of `first` after skipping `skip`.
pub async fn search<C: ConnectionTrait>(
    conn: &C,
    niche_id: i64,
    looking: &Looking,
    status: KnowledgeStatus,
    first: u64,
    skip: u64,
) -> Result<FoundPage, ServiceError> {
    let (looking, matches) = narrowed(conn, niche_id, looking.clone()).await?;
    let statement = search_statement(
        conn.get_database_backend(),
        niche_id,
        &looking,
        status,
        knowledge::walks_newest_first(matches),
        (first, skip),
    );
    let rows = conn.query_all_raw(statement).await?;
    let mut items = Vec::with_capacity(rows.len());
    for row in &rows {
        items.push(Found {
            entry: knowledge_entries::Model::from_query_result(row, "")?,
            score: row.try_get("", "score")?,
        });
    }
    let has_next = items.len() as u64 > first;
    items.truncate(usize::try_from(first).unwrap_or(usize::MAX));
    Ok(FoundPage { items, has_next })
}

/// The statement [`search`] runs (one row more than `first`, to tell whether a next page
/// exists): what the benchmark's plan check explains.
///
/// The niche's matching entries of `status` are found (on SQLite by the full-text index alone:
/// they are one range of its rowids, [`knowledge::search_rowids`], read newest first); the
/// newest [`knowledge::RANKED_MAX`] are ranked and only the page's rows are joined to their
/// entries. `walk` (PostgreSQL only: [`knowledge::walks_newest_first`]) reads the niche's entries
/// newest first for the matches instead of fetching every match the GIN index finds; the
/// result is the same.
pub fn search_statement(
    backend: DbBackend,
    niche_id: i64,
    looking: &Looking,
    status: KnowledgeStatus,
    walk: bool,
    (first, skip): (u64, u64),
) -> Statement {
    let columns = entry_columns();
    let skip_rows = skip;
    let limit: Value = i64::try_from(first + 1).unwrap_or(i64::MAX).into();
    let skip: Value = i64::try_from(skip).unwrap_or(i64::MAX).into();
    let ranked = knowledge::RANKED_MAX;
    let word = status_word(status);
    let mut values: Vec<Value> = Vec::new();
    let sql = match (looking, backend) {
        (Looking::All, _) => {
            // The status is written in: one of the status words (see the SQLite search below).
            values.extend([niche_id.into(), limit, skip]);
            format!(
                "SELECT {columns}, CAST(0 AS DOUBLE PRECISION) AS score FROM knowledge_entries e \
                 WHERE e.niche_id = ? AND e.status = '{word}' \
                 ORDER BY e.verified_at DESC, e.id DESC LIMIT ? OFFSET ?"
            )
        }
        (Looking::Typed(_) | Looking::Like(_), DbBackend::Sqlite) => {
            let words = match looking {
                Looking::Typed(search) => search.fts5(),
                Looking::Like(words) => knowledge::fts5_any(words),
                Looking::All => unreachable!("matched above"),
            };
            let (low, high) = knowledge::search_rowids(niche_id, status);
            values.extend([words.into(), low.into(), high.into(), niche_id.into()]);
            let id = knowledge::SEARCH_ID_MAX;
            // The page's bounds and the status are written in, not bound: SQLite plans by the
            // values bound to a LIMIT or OFFSET, and by a value compared with a partial index's
            // condition (`knowledge_entries_one_current`), and prepares the statement again every
            // time such a value is bound ([`crate::db::fixed_limits`]). All three are numbers or
            // one of the status words, never text from outside.
            let (limit, skip) = (first.saturating_add(1), skip_rows);
            format!(
                "SELECT {columns}, r.score AS score FROM (\
                   SELECT id, score FROM (\
                     SELECT rowid & {id} AS id, -bm25(knowledge_search, 10.0, 4.0, 10.0) AS score \
                     FROM knowledge_search \
                     WHERE knowledge_search MATCH ? AND rowid BETWEEN ? AND ? \
                     ORDER BY rowid DESC LIMIT {ranked}) \
                   ORDER BY score DESC, id DESC LIMIT {limit} OFFSET {skip}) r \
                 CROSS JOIN knowledge_entries e ON e.id = r.id \
                 WHERE e.niche_id = ? AND e.status = '{word}' \
                 ORDER BY r.score DESC, e.id DESC"
            )
        }
        (Looking::Typed(_) | Looking::Like(_), _) => {
            // A person's search is ranked by cover density (`ts_rank_cd`: how close together its
            // terms stand, which a phrase is about); a likes query, any one of its words, by how
            // often they occur (`ts_rank`), which is what cover density comes to for single words,
            // at a fraction of the cost per ranked row (docs/benchmarks.md#knowledge-search).
            let (function, text, rank) = match looking {
                Looking::Typed(search) => ("to_tsquery", search.tsquery(), "ts_rank_cd"),
                Looking::Like(words) => ("to_tsquery", knowledge::tsquery_any(words), "ts_rank"),
                Looking::All => unreachable!("matched above"),
            };
            values.extend([
                text.clone().into(),
                text.into(),
                niche_id.into(),
                word.into(),
                limit,
                skip,
            ]);
            // Only the newest RANKED_MAX matches are ranked. Unless `walk`, the GIN index finds
            // the matches and the rows' niche and status filter them (`id + 0`: ordered by the
            // primary key, the planner would walk it from the newest entry testing every row's
            // vector, most of the niche for a rare word). Fetching each match from the heap is
            // the cost, so a query the word counts say matches many walks the primary key from
            // the newest entry instead and stops at the RANKED_MAX-th match: neighbouring rows,
            // RANKED_MAX / share of them.
            let order = if walk { "id" } else { "id + 0" };
            let query = format!("{function}('askloop_search'::regconfig, ?)");
            format!(
                "SELECT {columns}, r.score AS score FROM (\
                   SELECT m.id, {rank}(m.search, {query})::float8 AS score FROM (\
                     SELECT id, search FROM knowledge_entries \
                     WHERE search @@ {query} AND niche_id = ? AND status = ? \
                     ORDER BY {order} DESC LIMIT {ranked}) m \
                   ORDER BY score DESC, m.id DESC LIMIT ? OFFSET ?) r \
                 JOIN knowledge_entries e ON e.id = r.id \
                 ORDER BY r.score DESC, e.id DESC"
            )
        }
    };
    crate::db::statement(backend, &sql, values)
}

/// The word a status is stored as.
fn status_word(status: KnowledgeStatus) -> String {
    status.to_value()
}

/// The niche `slug` for a member's or an admin's reading of its knowledge, or why not.
async fn readable_niche(
    db: &Db,
    viewer: Option<&Viewer>,
    slug: &str,
) -> Result<niches::Model, ServiceError> {
    let niche = crate::service::queue::niche_by_slug(db, slug).await?;
    access::can_read_questions(db, viewer, &niche).await?;
    Ok(niche)
}

/// A niche's knowledge for its members and admins: `search` ranked on any of its words, quoted
/// phrases required and `-word`s left out ([`knowledge::Loose`]; none lists the newest first), of one status (none: current), a page of `first` after `skip`.
pub async fn for_members(
    db: &Db,
    viewer: Option<&Viewer>,
    slug: &str,
    search_text: Option<&str>,
    status: Option<KnowledgeStatus>,
    first: u64,
    skip: u64,
) -> Result<FoundPage, ServiceError> {
    let niche = readable_niche(db, viewer, slug).await?;
    let looking = match search_text.map(str::trim).filter(|t| !t.is_empty()) {
        None => Looking::All,
        Some(text) => match Looking::typed(text)? {
            Some(looking) => looking,
            None => {
                return Ok(FoundPage {
                    items: Vec::new(),
                    has_next: false,
                });
            }
        },
    };
    let status = status.unwrap_or(KnowledgeStatus::Current);
    search(db, niche.id, &looking, status, first, skip).await
}

/// One entry and every version of its question's line, oldest first, for members of its niche
/// and admins; another niche's entry is not found.
pub async fn entry(
    db: &Db,
    viewer: Option<&Viewer>,
    id: i64,
) -> Result<(knowledge_entries::Model, Vec<knowledge_entries::Model>), ServiceError> {
    let viewer = access::signed_in(viewer)?;
    let not_found = || ServiceError::NotFound("no such knowledge entry".into());
    let entry = knowledge_entries::Entity::find_by_id(id)
        .one(db)
        .await?
        .ok_or_else(not_found)?;
    let niche = niches::Entity::find_by_id(entry.niche_id)
        .one(db)
        .await?
        .ok_or_else(not_found)?;
    if access::can_read_questions(db, Some(viewer), &niche)
        .await
        .is_err()
    {
        return Err(not_found());
    }
    let versions = knowledge_entries::Entity::find()
        .filter(knowledge_entries::Column::QuestionId.eq(entry.question_id))
        .order_by_asc(knowledge_entries::Column::Version)
        .all(db)
        .await?;
    Ok((entry, versions))
}

/// An agent's search, checked at the edge (the wire crate's typed request).
pub use askloop_wire::knowledge::AgentSearch;

/// An agent searches a niche it may ask in (403 otherwise; 404 for no such niche): the current
/// entries holding any of the query's content words, best first.
pub async fn for_agent(
    db: &Db,
    asker: &Asker,
    request: &AgentSearch,
) -> Result<Vec<Found>, ServiceError> {
    let niche = crate::service::queue::niche_by_slug(db, &request.niche_slug).await?;
    if !asker.may_use_niche(niche.id) {
        return Err(Asker::not_your_niche(&niche.slug));
    }
    let Some(looking) = Looking::like(&request.query) else {
        return Ok(Vec::new());
    };
    Ok(search(
        db,
        niche.id,
        &looking,
        KnowledgeStatus::Current,
        request.first,
        0,
    )
    .await?
    .items)
}

/// The newest version of `question_id`'s knowledge, whatever its status: what the question
/// page links to.
pub async fn of_question<C: ConnectionTrait>(
    conn: &C,
    question_id: i64,
) -> Result<Option<knowledge_entries::Model>, ServiceError> {
    Ok(knowledge_entries::Entity::find()
        .filter(knowledge_entries::Column::QuestionId.eq(question_id))
        .order_by_desc(knowledge_entries::Column::Version)
        .one(conn)
        .await?)
}

/// The most similar entries intake returns.
pub const SIMILAR_MAX: usize = 3;
/// How many of the engine's best candidates are weighed against the threshold.
const SIMILAR_CANDIDATES: u64 = 10;

/// A current entry like a new question.
#[derive(Debug, Clone)]
pub struct Similar {
    /// The entry, with the engine's score.
    pub found: Found,
    /// The share of the question's content words the entry holds, in basis points.
    pub likeness_bps: i32,
}

/// Up to `limit` current entries of `niche_id` like a question of `title` and `question` (its
/// context is never looked at): the engine's best candidates holding at least the niche's
/// similarity threshold of the question's content words, best first; never an entry of the
/// question `except` (a question is not like itself).
pub async fn similar<C: ConnectionTrait>(
    conn: &C,
    niche_id: i64,
    (title, question): (&str, &str),
    except: Option<i64>,
    limit: usize,
) -> Result<Vec<Similar>, ServiceError> {
    let words = knowledge::content_words(&format!("{title} {question}"));
    if words.is_empty() || limit == 0 {
        return Ok(Vec::new());
    }
    let threshold = niches::Entity::find_by_id(niche_id)
        .one(conn)
        .await?
        .map_or(10_000, |niche| niche.similarity_threshold_bps);
    let looking = Looking::Like(words.clone());
    let candidates = search(
        conn,
        niche_id,
        &looking,
        KnowledgeStatus::Current,
        SIMILAR_CANDIDATES,
        0,
    )
    .await?;
    Ok(candidates
        .items
        .into_iter()
        .filter(|found| Some(found.entry.question_id) != except)
        .filter_map(|found| {
            let text = format!(
                "{} {} {}",
                found.entry.title,
                found.entry.question,
                answer_words(&found.entry)
            );
            let likeness_bps = knowledge::likeness_bps(&words, &text);
            (likeness_bps >= threshold).then_some(Similar {
                found,
                likeness_bps,
            })
        })
        .take(limit)
        .collect())
}

/// [`export`] for a person: admins only (the download of the admin pages).
pub async fn export_for<C, F>(
    conn: &C,
    viewer: Option<&Viewer>,
    slug: &str,
    write: F,
) -> Result<u64, ServiceError>
where
    C: ConnectionTrait,
    F: FnMut(serde_json::Map<String, serde_json::Value>) -> Result<(), ServiceError>,
{
    access::admin(viewer)?;
    export(conn, slug, write).await
}

/// How many entries an export reads at a time.
const EXPORT_BATCH: u64 = 500;

/// Export niche `slug`'s current entries, oldest first, one record at a time to `write`: each
/// with its provenance — the question, the answer and the option chosen, who answered and who
/// verified (handles) and when, and the line of versions it ends. The records are not yet
/// chained; the caller seals them (`domain::chain`). How many were written.
pub async fn export<C, F>(conn: &C, slug: &str, mut write: F) -> Result<u64, ServiceError>
where
    C: ConnectionTrait,
    F: FnMut(serde_json::Map<String, serde_json::Value>) -> Result<(), ServiceError>,
{
    let niche = niches::Entity::find()
        .filter(niches::Column::Slug.eq(slug.to_lowercase()))
        .one(conn)
        .await?
        .ok_or_else(|| ServiceError::NotFound(format!("no niche '{slug}'")))?;
    let mut after = 0_i64;
    let mut written = 0_u64;
    loop {
        let batch = knowledge_entries::Entity::find()
            .filter(knowledge_entries::Column::NicheId.eq(niche.id))
            .filter(knowledge_entries::Column::Status.eq(KnowledgeStatus::Current))
            .filter(knowledge_entries::Column::Id.gt(after))
            .order_by_asc(knowledge_entries::Column::Id)
            .limit(EXPORT_BATCH)
            .all(conn)
            .await?;
        let Some(last) = batch.last() else {
            return Ok(written);
        };
        after = last.id;
        let handles = crate::service::names::handles(
            conn,
            batch
                .iter()
                .flat_map(|e| std::iter::once(e.answered_by).chain(e.verified_by)),
        )
        .await?;
        let lines = knowledge_entries::Entity::find()
            .filter(
                knowledge_entries::Column::QuestionId
                    .is_in(batch.iter().map(|e| e.question_id).collect::<Vec<_>>()),
            )
            .order_by_asc(knowledge_entries::Column::Version)
            .all(conn)
            .await?;
        for entry in batch {
            let versions: Vec<serde_json::Value> = lines
                .iter()
                .filter(|v| v.question_id == entry.question_id)
                .map(|v| json!({"entryId": v.id, "version": v.version, "status": status_word(v.status)}))
                .collect();
            let handle = |id: i64| handles.get(&id).cloned();
            let record = json!({
                "entryId": entry.id,
                "niche": niche.slug,
                "version": entry.version,
                "replaces": entry.replaces,
                "versions": versions,
                "questionId": entry.question_id,
                "title": entry.title,
                "question": entry.question,
                "optionId": entry.option_id,
                "optionLabel": entry.option_label,
                "answer": entry.answer,
                "answeredBy": handle(entry.answered_by),
                "verifiedBy": entry.verified_by.and_then(handle),
                "verification": entry.verification.to_value(),
                "verifiedAt": entry.verified_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            });
            if let serde_json::Value::Object(record) = record {
                write(record)?;
                written += 1;
            }
        }
    }
}

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
    let kind = crate::service::scores::contribution_type(&txn, CORRECTION_TYPE).await?;
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
fn option_of(options: &serde_json::Value, chosen: &str) -> Option<String> {
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
async fn latest_version(txn: &WriteTxn, question_id: i64) -> Result<i64, ServiceError> {
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
