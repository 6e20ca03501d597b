//! Searching knowledge with each store's own full-text index: members' search, agents' search,
//! one entry by id, a question's entries, and the similar entries shown at intake.

use entity::agent_questions;
use entity::knowledge_entries::{self, KnowledgeStatus};
use entity::niches;
use sea_orm::{
    ActiveEnum, ColumnTrait, ConnectionTrait, DbBackend, EntityTrait, FromQueryResult, Iterable,
    QueryFilter, QueryOrder, Statement, Value,
};

use crate::db::Db;
use crate::domain::knowledge::{self, QUERY_MAX};
use crate::domain::text::char_len;
use crate::error::ServiceError;
use crate::service::agents::registry::Asker;
use crate::service::people::access::{self, Viewer};
use std::collections::HashMap;

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

pub(super) fn check_length(text: &str) -> Result<(), ServiceError> {
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
pub(super) fn searchable(entry: &knowledge_entries::Model) -> knowledge::Searchable<'_> {
    knowledge::Searchable::of(
        &entry.title,
        &entry.question,
        entry.option_label.as_deref(),
        entry.answer.as_deref(),
    )
}

/// `entry`'s columns, qualified by the alias `e`.
pub(super) fn entry_columns() -> String {
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
pub(super) fn status_word(status: KnowledgeStatus) -> String {
    status.to_value()
}

/// The niche `slug` for a member's or an admin's reading of its knowledge, or why not.
pub(super) async fn readable_niche(
    db: &Db,
    viewer: Option<&Viewer>,
    slug: &str,
) -> Result<niches::Model, ServiceError> {
    let niche = crate::service::questions::queue::niche_by_slug(db, slug).await?;
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
    let niche = crate::service::questions::queue::niche_by_slug(db, &request.niche_slug).await?;
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
pub(super) const SIMILAR_CANDIDATES: u64 = 10;

/// A current entry like a new question.
#[derive(Debug, Clone)]
pub struct Similar {
    /// The entry, with the engine's score.
    pub found: Found,
    /// The share of the question's content words the entry holds, in basis points.
    pub likeness_bps: i32,
}

/// The entries like stored question `question_id` (its niche, title and question; it is left
/// out of its own results), at most [`SIMILAR_MAX`]: what an agent asking with `checkSimilar`
/// gets back. None for an id no question has: nothing is like a question that is not there.
pub async fn similar_to_question<C: ConnectionTrait>(
    conn: &C,
    question_id: i64,
) -> Result<Vec<Similar>, ServiceError> {
    let Some(question) = agent_questions::Entity::find_by_id(question_id)
        .one(conn)
        .await?
    else {
        return Ok(Vec::new());
    };
    similar(
        conn,
        question.niche_id,
        (&question.title, &question.question),
        None,
        SIMILAR_MAX,
    )
    .await
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
            let text = searchable(&found.entry).joined();
            let likeness_bps = knowledge::likeness_bps(&words, &text);
            (likeness_bps >= threshold).then_some(Similar {
                found,
                likeness_bps,
            })
        })
        .take(limit)
        .collect())
}
