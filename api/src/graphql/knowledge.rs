//! A niche's knowledge (docs/contract.md#knowledge): `knowledge` searches or lists a niche's
//! entries and `knowledgeEntry` reads one with its versions, for the niche's members and admins.

use std::collections::HashMap;

use async_graphql::connection::{Connection, Edge};
use async_graphql::{Context, ID, InputObject, Object, Result, SimpleObject};
use chrono::{DateTime, Utc};
use entity::knowledge_corrections;
use entity::knowledge_entries;

use super::caller_of;
use super::enums::{KnowledgeStatus, Verification};
use crate::db::Db;
use crate::error::ServiceError;
use crate::graphql::error_door::GqlResultExt;
use crate::service::knowledge::{self, MAX_PAGE};
use crate::service::{knowledge::reuse, people::names};

/// The default page of a knowledge search.
const DEFAULT_PAGE: u64 = 20;

/// One version of a piece of a niche's knowledge: a verified answer to a question.
#[derive(SimpleObject, Clone)]
pub struct KnowledgeEntry {
    /// Its id.
    pub id: ID,
    /// The question it answers.
    pub question_id: ID,
    /// 1 for the question's first entry, one more for each after it.
    pub version: i64,
    /// The version it replaces.
    pub replaces: Option<ID>,
    /// Current, superseded or retracted.
    pub status: KnowledgeStatus,
    /// The question's title.
    pub title: String,
    /// The question's text.
    pub question: String,
    /// The chosen option's id.
    pub option_id: Option<String>,
    /// The chosen option's label.
    pub option_label: Option<String>,
    /// The answer's words.
    pub answer: Option<String>,
    /// Who answered, by handle.
    pub answered_by: String,
    /// Who verified it on review; none when the niche trusted the answerer.
    pub verified_by: Option<String>,
    /// How it was verified.
    pub verification: Verification,
    /// When it was verified.
    pub verified_at: DateTime<Utc>,
    /// When it stopped being current.
    pub ended_at: Option<DateTime<Utc>>,
    /// Why it was retracted: the reviewer's note.
    pub ended_reason: Option<String>,
    /// How well it matched the search (higher is better; 0 without one).
    pub score: f64,
    /// The niche it belongs to.
    pub niche_slug: String,
    /// How many times agents relied on it: reuses, and questions settled by pointing to it.
    pub reuse_count: i64,
}

/// What entries are shown with: their people's handles, their niches' slugs, their reuse counts.
pub(crate) struct Known {
    handles: HashMap<i64, String>,
    slugs: HashMap<i64, String>,
    reuses: HashMap<i64, i64>,
}

impl KnowledgeEntry {
    pub(crate) fn from_model(entry: knowledge_entries::Model, known: &Known, score: f64) -> Self {
        let handle = |id: i64| known.handles.get(&id).cloned().unwrap_or_default();
        Self {
            niche_slug: known
                .slugs
                .get(&entry.niche_id)
                .cloned()
                .unwrap_or_default(),
            reuse_count: known.reuses.get(&entry.id).copied().unwrap_or(0),
            id: ID(entry.id.to_string()),
            question_id: ID(entry.question_id.to_string()),
            version: entry.version,
            replaces: entry.replaces.map(|id| ID(id.to_string())),
            status: entry.status.into(),
            title: entry.title,
            question: entry.question,
            option_id: entry.option_id,
            option_label: entry.option_label,
            answer: entry.answer,
            answered_by: handle(entry.answered_by),
            verified_by: entry.verified_by.map(handle),
            verification: entry.verification.into(),
            verified_at: entry.verified_at,
            ended_at: entry.ended_at,
            ended_reason: entry.ended_reason,
            score,
        }
    }
}

/// One of the options an entry's question offered.
#[derive(SimpleObject, Clone)]
pub struct KnowledgeOption {
    /// The option's id.
    pub id: String,
    /// What a person reads.
    pub label: String,
}

/// An entry with every version of its question's line.
#[derive(SimpleObject)]
pub struct KnowledgeEntryWithVersions {
    /// The entry asked for.
    pub entry: KnowledgeEntry,
    /// Every version of its line, oldest first (the entry among them).
    #[graphql(complexity = "crate::graphql::limits::list(child_complexity)")]
    pub versions: Vec<KnowledgeEntry>,
    /// The options its question offered (none when it offered none): what a correction may
    /// choose from.
    #[graphql(complexity = "crate::graphql::limits::list(child_complexity)")]
    pub options: Vec<KnowledgeOption>,
}

/// What `entries` are shown with, in three reads.
pub(crate) async fn known_of(db: &Db, entries: &[&knowledge_entries::Model]) -> Result<Known> {
    let handles = names::handles(
        db,
        entries
            .iter()
            .flat_map(|e| std::iter::once(e.answered_by).chain(e.verified_by)),
    )
    .await
    .gql()?;
    let ids: Vec<i64> = entries.iter().map(|e| e.id).collect();
    let reuses = reuse::counts(db, &ids).await.gql()?;
    let slugs = names::niches(db, entries.iter().map(|e| e.niche_id))
        .await
        .gql()?
        .into_iter()
        .map(|(id, niche)| (id, niche.slug))
        .collect();
    Ok(Known {
        handles,
        slugs,
        reuses,
    })
}

/// A page's cursor: how many entries come before the next one.
fn cursor(position: u64) -> String {
    format!("k{position}")
}

fn skip_after(after: Option<&str>) -> Result<u64, ServiceError> {
    match after {
        None => Ok(0),
        Some(cursor) => cursor
            .strip_prefix('k')
            .and_then(|n| n.parse::<u64>().ok())
            .filter(|n| *n <= 10_000)
            .ok_or_else(|| {
                ServiceError::BadInput(format!("'{cursor}' is not a cursor of this list"))
            }),
    }
}

fn page_size(first: Option<i32>) -> Result<u64, ServiceError> {
    match first {
        None => Ok(DEFAULT_PAGE),
        Some(n) if n >= 1 && u64::try_from(n).is_ok_and(|n| n <= MAX_PAGE) => Ok(n as u64),
        Some(_) => Err(ServiceError::BadInput(format!(
            "first must be between 1 and {MAX_PAGE}"
        ))),
    }
}

/// Knowledge queries.
#[derive(Default)]
pub struct KnowledgeQuery;

#[Object]
impl KnowledgeQuery {
    /// A niche's knowledge, for its members and admins: with `search` (web-search syntax:
    /// `"a phrase"`, `-word`, `or`) the best matches first, without it the newest verified first;
    /// of one `status` (current unless asked).
    #[graphql(complexity = "crate::graphql::limits::page(first, child_complexity)")]
    async fn knowledge(
        &self,
        ctx: &Context<'_>,
        niche_slug: String,
        search: Option<String>,
        status: Option<KnowledgeStatus>,
        first: Option<i32>,
        after: Option<String>,
    ) -> Result<Connection<String, KnowledgeEntry>> {
        let db = ctx.data::<Db>()?;
        let first = page_size(first).gql()?;
        let skip = skip_after(after.as_deref()).gql()?;
        let page = knowledge::for_members(
            db,
            caller_of(ctx)?.viewer(),
            &niche_slug,
            search.as_deref(),
            status.map(Into::into),
            first,
            skip,
        )
        .await
        .gql()?;
        let known = known_of(db, &page.items.iter().map(|f| &f.entry).collect::<Vec<_>>()).await?;
        let mut connection = Connection::new(skip > 0, page.has_next);
        connection
            .edges
            .extend(page.items.into_iter().enumerate().map(|(i, found)| {
                Edge::new(
                    cursor(skip + i as u64 + 1),
                    KnowledgeEntry::from_model(found.entry, &known, found.score),
                )
            }));
        Ok(connection)
    }

    /// The correction a contribution awaiting review is, for admins: the version it corrects
    /// and the version it proposes; none when the contribution is no correction.
    async fn correction_review(
        &self,
        ctx: &Context<'_>,
        contribution_id: ID,
    ) -> Result<Option<CorrectionReview>> {
        let db = ctx.data::<Db>()?;
        let id: i64 = contribution_id
            .parse()
            .map_err(|_| {
                ServiceError::BadInput(format!(
                    "'{}' is not a contribution id",
                    contribution_id.as_str()
                ))
            })
            .gql()?;
        let Some(found) = knowledge::correction_for_review(db, caller_of(ctx)?.viewer(), id)
            .await
            .gql()?
        else {
            return Ok(None);
        };
        let c = found.correction;
        let label = |id: &str| {
            found
                .options
                .iter()
                .find(|o| o.id == id)
                .map(|o| o.label.clone())
        };
        let proposed_by = names::handles(db, [c.proposed_by])
            .await
            .gql()?
            .remove(&c.proposed_by)
            .unwrap_or_default();
        let known = known_of(db, &[&found.entry]).await?;
        let proposed_option_label = c
            .option_id
            .as_deref()
            .and_then(label)
            .or(found.entry.option_label.clone());
        let proposed_answer = c.answer.clone().or(found.entry.answer.clone());
        Ok(Some(CorrectionReview {
            id: ID(c.id.to_string()),
            status: sea_orm::ActiveEnum::to_value(&c.status),
            proposed_by,
            note: c.note,
            option_changed: c.option_id.is_some(),
            answer_changed: c.answer.is_some(),
            proposed_option_label,
            proposed_answer,
            entry: KnowledgeEntry::from_model(found.entry, &known, 0.0),
        }))
    }

    /// One knowledge entry with its versions, for members of its niche and admins.
    async fn knowledge_entry(
        &self,
        ctx: &Context<'_>,
        id: ID,
    ) -> Result<KnowledgeEntryWithVersions> {
        let db = ctx.data::<Db>()?;
        let id: i64 = id
            .parse()
            .map_err(|_| ServiceError::BadInput(format!("'{}' is not an entry id", id.as_str())))
            .gql()?;
        let (entry, versions) = knowledge::entry(db, caller_of(ctx)?.viewer(), id)
            .await
            .gql()?;
        let known = known_of(db, &versions.iter().collect::<Vec<_>>()).await?;
        let options = knowledge::options_of(db, &entry)
            .await
            .gql()?
            .into_iter()
            .map(|o| KnowledgeOption {
                id: o.id,
                label: o.label,
            })
            .collect();
        Ok(KnowledgeEntryWithVersions {
            options,
            entry: KnowledgeEntry::from_model(entry, &known, 0.0),
            versions: versions
                .into_iter()
                .map(|v| KnowledgeEntry::from_model(v, &known, 0.0))
                .collect(),
        })
    }
}

/// A correction to propose: another of the question's options, new words, or both.
#[derive(InputObject)]
pub struct KnowledgeCorrectionInput {
    /// The entry to correct (its current version).
    pub entry_id: ID,
    /// Another of the question's options, by its id or its label.
    pub option_id: Option<String>,
    /// New words (at most 8000 characters).
    pub answer: Option<String>,
    /// Why, for the reviewer (at most 2000 characters).
    pub note: Option<String>,
}

/// A proposed correction of a knowledge entry: a contribution, pending until someone other than
/// its author verifies it.
#[derive(SimpleObject)]
pub struct KnowledgeCorrection {
    /// Its id.
    pub id: ID,
    /// The entry it corrects.
    pub entry_id: ID,
    /// The contribution it is (verify or reject it like an answer's).
    pub contribution_id: ID,
    /// Pending, verified or rejected.
    pub status: String,
    /// The option it chooses instead.
    pub option_id: Option<String>,
    /// The words it gives instead.
    pub answer: Option<String>,
    /// Why.
    pub note: Option<String>,
    /// Whether its author had already proposed it and it was still pending: proposing again
    /// returned it unchanged, and nothing new was filed.
    pub already_pending: bool,
}

impl From<knowledge_corrections::Model> for KnowledgeCorrection {
    fn from(c: knowledge_corrections::Model) -> Self {
        Self {
            id: ID(c.id.to_string()),
            entry_id: ID(c.entry_id.to_string()),
            contribution_id: ID(c.contribution_event_id.to_string()),
            status: sea_orm::ActiveEnum::to_value(&c.status),
            option_id: c.option_id,
            answer: c.answer,
            note: c.note,
            already_pending: false,
        }
    }
}

/// Knowledge mutations.
#[derive(Default)]
pub struct KnowledgeMutation;

#[Object]
impl KnowledgeMutation {
    /// Propose a correction to a current knowledge entry, as an active member of its niche (or
    /// an admin). It waits for review by someone else; verified, it becomes the entry's next
    /// version.
    async fn propose_knowledge_correction(
        &self,
        ctx: &Context<'_>,
        input: KnowledgeCorrectionInput,
    ) -> Result<KnowledgeCorrection> {
        let db = ctx.data::<Db>()?;
        let caller = caller_of(ctx)?;
        crate::service::people::access::signed_in(caller.viewer()).gql()?;
        caller.check_write().gql()?;
        let entry_id: i64 = input
            .entry_id
            .parse()
            .map_err(|_| {
                ServiceError::BadInput(format!("'{}' is not an entry id", input.entry_id.as_str()))
            })
            .gql()?;
        let proposed = knowledge::propose_correction(
            db,
            caller.viewer(),
            knowledge::NewCorrection {
                entry_id,
                option_id: input.option_id,
                answer: input.answer,
                note: input.note,
            },
            Utc::now(),
        )
        .await
        .gql()?;
        Ok(KnowledgeCorrection {
            already_pending: proposed.already_pending,
            ..proposed.correction.into()
        })
    }
}

/// A correction as its reviewer weighs it: the version it corrects and the whole version it
/// proposes (what it does not change is kept from the entry).
#[derive(SimpleObject)]
pub struct CorrectionReview {
    /// The correction's id.
    pub id: ID,
    /// Pending, verified or rejected.
    pub status: String,
    /// Who proposed it, by handle.
    pub proposed_by: String,
    /// Why, for the reviewer.
    pub note: Option<String>,
    /// The version it corrects.
    pub entry: KnowledgeEntry,
    /// Whether it chooses another option.
    pub option_changed: bool,
    /// Whether it gives new words.
    pub answer_changed: bool,
    /// The proposed version's option label.
    pub proposed_option_label: Option<String>,
    /// The proposed version's words.
    pub proposed_answer: Option<String>,
}
