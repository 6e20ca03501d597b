//! What the knowledge benchmarks (`knowledge-search`, `loadgen --similar`) start from: a niche
//! holding many verified knowledge entries, written fast, and text that reads like a niche's
//! questions.
//!
//! The text comes from a made-up vocabulary of [`VOCABULARY`] words drawn with Zipf–Mandelbrot
//! frequencies (a word's weight is 1 / (rank + 2.7)), as words are in real text: a few words are
//! in most entries, most words are in few. A deterministic generator makes every run write the
//! same entries and ask the same queries.
//!
//! Entries are written as verifying answers would leave them, but in bulk: for each one an
//! answered question, its answer, a verified `agent_answer` contribution and a current entry (version 1, the
//! niche trusting the answerer), in multi-row INSERTs inside large transactions. On SQLite the
//! same words go into the `knowledge_search` FTS5 table that `service::knowledge` indexes (title,
//! question, and the option's label then the answer's words, at the rowid that names the entry's
//! niche and status); on PostgreSQL the `search` vector is
//! the generated column, written with the row.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use chrono::Utc;
use entity::agent_questions::{self, ExchangeKind, QuestionStatus, Urgency};
use entity::contribution_events::{self, ContributionStatus};
use entity::knowledge_entries::{self, KnowledgeStatus, Verification};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DbBackend, EntityTrait, NotSet, QueryFilter,
    QueryOrder, QuerySelect, Statement,
};
use serde_json::json;

use askloop::db::{Db, WriteTxn};
use askloop::domain::knowledge;
use askloop::service::audit::Actor;
use askloop::service::people::accounts::{self, NewUser, new_token};

/// How many words the vocabulary holds.
pub const VOCABULARY: usize = 5_000;
/// Rows in one INSERT (well under either store's limit on bound values).
const ROWS_PER_INSERT: usize = 500;
/// Rows written in one transaction.
const ROWS_PER_TRANSACTION: usize = 50_000;

/// A small deterministic generator (splitmix64): the same seed gives the same text.
pub struct Rng(u64);

impl Rng {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1_u64 << 53) as f64
    }

    /// A whole number from `low` to `high`, both included.
    pub fn between(&mut self, low: usize, high: usize) -> usize {
        low + (self.next_u64() % (high - low + 1) as u64) as usize
    }
}

/// Made-up words with Zipf–Mandelbrot frequencies.
pub struct Vocabulary {
    words: Vec<String>,
    /// The running total of the words' weights, for drawing one.
    cumulative: Vec<f64>,
}

impl Default for Vocabulary {
    fn default() -> Self {
        Self::new(VOCABULARY, 20_261_203)
    }
}

impl Vocabulary {
    /// `size` distinct words of two to four syllables, made from `seed`.
    pub fn new(size: usize, seed: u64) -> Self {
        const CONSONANTS: &[u8] = b"bcdfghklmnprstvz";
        const VOWELS: &[u8] = b"aeiou";
        // No final s, d or g: an English stemmer would fold such a word into another.
        const FINALS: &[u8] = b"klmnprtvx";
        let mut rng = Rng::new(seed);
        let mut seen = HashSet::with_capacity(size);
        let mut words = Vec::with_capacity(size);
        while words.len() < size {
            let mut word = String::new();
            for _ in 0..rng.between(2, 4) {
                word.push(CONSONANTS[rng.between(0, CONSONANTS.len() - 1)] as char);
                word.push(VOWELS[rng.between(0, VOWELS.len() - 1)] as char);
            }
            word.push(FINALS[rng.between(0, FINALS.len() - 1)] as char);
            if seen.insert(word.clone()) {
                words.push(word);
            }
        }
        let mut total = 0.0;
        let cumulative = (0..size)
            .map(|rank| {
                total += 1.0 / (rank as f64 + 1.0 + 2.7);
                total
            })
            .collect();
        Vocabulary { words, cumulative }
    }

    /// One word, drawn by frequency.
    pub fn word(&self, rng: &mut Rng) -> &str {
        let total = self.cumulative.last().copied().unwrap_or(0.0);
        let at = rng.unit() * total;
        let rank = self
            .cumulative
            .partition_point(|&c| c <= at)
            .min(self.words.len() - 1);
        &self.words[rank]
    }

    /// `min..=max` words drawn by frequency, separated by spaces.
    pub fn words(&self, rng: &mut Rng, min: usize, max: usize) -> String {
        let count = rng.between(min, max);
        let mut text = String::new();
        for i in 0..count {
            if i > 0 {
                text.push(' ');
            }
            text.push_str(self.word(rng));
        }
        text
    }

    /// A question's title: four to nine words, capitalised, with a question mark.
    pub fn title(&self, rng: &mut Rng) -> String {
        let words = self.words(rng, 4, 9);
        let mut chars = words.chars();
        match chars.next() {
            Some(first) => format!("{}{}?", first.to_uppercase(), chars.as_str()),
            None => words,
        }
    }

    /// A question's text: ten to twenty-four words.
    pub fn question(&self, rng: &mut Rng) -> String {
        format!("{}?", self.words(rng, 10, 24))
    }

    /// An answer's words: six to twenty.
    pub fn answer(&self, rng: &mut Rng) -> String {
        format!("{}.", self.words(rng, 6, 20))
    }

    /// A search as an agent asks it: three to eight words, like a question looking for its likes.
    pub fn query(&self, rng: &mut Rng) -> String {
        self.words(rng, 3, 8)
    }
}

/// Create the person the seeded answers are from (handle `handle`); their id.
pub async fn answerer(db: &Db, handle: &str) -> anyhow::Result<i64> {
    let user = accounts::create_user(
        db,
        NewUser {
            handle: handle.to_owned(),
            email: format!("{handle}@askloop.invalid"),
            password: new_token(""),
            admin: false,
        },
        &Actor::Cli,
        Utc::now(),
    )
    .await?;
    Ok(user.id)
}

/// The options every seeded question offers; each entry's answer chose one of them.
const OPTIONS: [(&str, &str); 2] = [("a", "Yes"), ("b", "No")];

/// Write `count` verified entries into niche `niche_id`, answered by `answerer`, with text from
/// `vocabulary` and `rng`: a question, a contribution and an entry each (and on SQLite their
/// FTS5 rows). How long it took.
pub async fn entries(
    db: &Db,
    niche_id: i64,
    answerer: i64,
    count: usize,
    vocabulary: &Vocabulary,
    rng: &mut Rng,
) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let answer_type = entity::contribution_types::Entity::find()
        .filter(entity::contribution_types::Column::Key.eq("agent_answer"))
        .one(db)
        .await?
        .ok_or_else(|| anyhow::anyhow!("the agent_answer contribution type is missing"))?;
    let mut written = 0;
    let mut terms: std::collections::HashMap<String, i64> = std::collections::HashMap::new();
    while written < count {
        let in_transaction = (count - written).min(ROWS_PER_TRANSACTION);
        let txn = db.begin_write().await?;
        let mut done = 0;
        while done < in_transaction {
            let batch = (in_transaction - done).min(ROWS_PER_INSERT);
            let texts: Vec<(String, String, usize, String)> = (0..batch)
                .map(|_| {
                    (
                        vocabulary.title(rng),
                        vocabulary.question(rng),
                        rng.between(0, OPTIONS.len() - 1),
                        vocabulary.answer(rng),
                    )
                })
                .collect();
            for (title, question, option, answer) in &texts {
                let text = knowledge::Searchable::of(
                    title,
                    question,
                    Some(OPTIONS[*option].1),
                    Some(answer),
                );
                for term in text.terms() {
                    *terms.entry(term).or_insert(0) += 1;
                }
            }
            write_batch(&txn, niche_id, answerer, &answer_type, &texts).await?;
            done += batch;
        }
        txn.commit().await?;
        written += in_transaction;
    }
    // The niche's word counts, as writing each entry would have left them.
    *terms.entry(String::new()).or_insert(0) += i64::try_from(count).unwrap_or(i64::MAX);
    let terms: Vec<(String, i64)> = terms.into_iter().collect();
    let backend = db.get_database_backend();
    let txn = db.begin_write().await?;
    for chunk in terms.chunks(ROWS_PER_INSERT) {
        let mut sql = String::from("INSERT INTO knowledge_terms (niche_id, term, entries) VALUES ");
        let mut values: Vec<sea_orm::Value> = Vec::with_capacity(chunk.len() * 3);
        for (i, (term, entries)) in chunk.iter().enumerate() {
            if i > 0 {
                sql.push_str(", ");
            }
            match backend {
                DbBackend::Postgres => {
                    sql.push_str(&format!("(${}, ${}, ${})", i * 3 + 1, i * 3 + 2, i * 3 + 3))
                }
                _ => sql.push_str("(?, ?, ?)"),
            }
            values.push(niche_id.into());
            values.push(term.clone().into());
            values.push((*entries).into());
        }
        sql.push_str(
            " ON CONFLICT (niche_id, term) DO UPDATE SET entries = knowledge_terms.entries + excluded.entries",
        );
        txn.execute_raw(Statement::from_sql_and_values(backend, sql, values))
            .await?;
    }
    txn.commit().await?;
    if db.get_database_backend() == DbBackend::Postgres {
        let txn = db.begin_write().await?;
        txn.execute_unprepared(
            "ANALYZE agent_questions, contribution_events, knowledge_entries, knowledge_terms",
        )
        .await?;
        txn.commit().await?;
    }
    Ok(started.elapsed())
}

/// The highest id of `table` (0 for none): read by the primary key alone, so it costs the same
/// however many rows there are (seeding is the only writer, so the next rows come after it).
async fn last_id(txn: &WriteTxn, table: &str) -> anyhow::Result<i64> {
    let backend = txn.get_database_backend();
    let row = txn
        .query_one_raw(Statement::from_string(
            backend,
            format!("SELECT CAST(COALESCE(MAX(id), 0) AS BIGINT) AS id FROM {table}"),
        ))
        .await?;
    Ok(match row {
        Some(row) => row.try_get::<i64>("", "id")?,
        None => 0,
    })
}

/// One INSERT of questions, one of contributions, one of entries (and on SQLite one of FTS5
/// rows) for `texts` (title, question, option chosen, answer).
async fn write_batch(
    txn: &WriteTxn,
    niche_id: i64,
    answerer: i64,
    answer_type: &entity::contribution_types::Model,
    texts: &[(String, String, usize, String)],
) -> anyhow::Result<()> {
    let now = Utc::now();
    let options = json!(
        OPTIONS
            .iter()
            .map(|(id, label)| json!({"id": id, "label": label}))
            .collect::<Vec<_>>()
    );
    let before = last_id(txn, "agent_questions").await?;
    agent_questions::Entity::insert_many(texts.iter().map(|(title, question, _, _)| {
        agent_questions::ActiveModel {
            id: NotSet,
            niche_id: Set(niche_id),
            external_id: Set(None),
            agent_id: Set(None),
            registered_agent_id: Set(None),
            title: Set(title.clone()),
            question: Set(question.clone()),
            context: Set(None),
            options: Set(options.clone()),
            urgency: Set(Urgency::Normal),
            urgency_rank: Set(1),
            related_resource_ids: Set(json!([])),
            status: Set(QuestionStatus::Answered),
            bounty_minor: Set(0),
            research_round: Set(0),
            needs_context_round: Set(None),
            expires_at: Set(now + chrono::Duration::days(7)),
            created_at: Set(now),
            answered_at: Set(Some(now)),
            updated_at: Set(now),
            escalate_at: Set(None),
            escalation_step: Set(0),
            kind: Set(ExchangeKind::Question),
            deliverable: Set(None),
            answers_wanted: Set(1),
            agreement_bps: Set(6000),
            answers_in: Set(0),
            withdrawn_at: Set(None),
        }
    }))
    .exec_without_returning(txn)
    .await?;
    let questions: Vec<i64> = agent_questions::Entity::find()
        .select_only()
        .column(agent_questions::Column::Id)
        .filter(agent_questions::Column::Id.gt(before))
        .order_by_asc(agent_questions::Column::Id)
        .into_tuple()
        .all(txn)
        .await?;
    anyhow::ensure!(
        questions.len() == texts.len(),
        "wrote {} questions, found {}",
        texts.len(),
        questions.len()
    );

    let before = last_id(txn, "contribution_events").await?;
    contribution_events::Entity::insert_many(questions.iter().zip(texts).map(
        |(question, (_, _, option, _))| contribution_events::ActiveModel {
            id: NotSet,
            niche_id: Set(niche_id),
            user_id: Set(answerer),
            type_id: Set(answer_type.id),
            points: Set(answer_type.default_points),
            status: Set(ContributionStatus::Verified),
            source: Set("answer".into()),
            evidence: Set(json!({ "questionId": question, "optionId": OPTIONS[*option].0 })),
            dedupe_key: Set(Some(format!("agent_answer:question:{question}"))),
            verified_at: Set(Some(now)),
            verified_by: Set(None),
            reverses: Set(None),
            created_at: Set(now),
        },
    ))
    .exec_without_returning(txn)
    .await?;
    let contributions: Vec<i64> = contribution_events::Entity::find()
        .select_only()
        .column(contribution_events::Column::Id)
        .filter(contribution_events::Column::Id.gt(before))
        .order_by_asc(contribution_events::Column::Id)
        .into_tuple()
        .all(txn)
        .await?;
    anyhow::ensure!(
        contributions.len() == texts.len(),
        "wrote {} contributions, found {}",
        texts.len(),
        contributions.len()
    );

    // The answers the contributions were earned by: an answerer's record joins them.
    entity::agent_answers::Entity::insert_many(
        questions.iter().zip(&contributions).zip(texts).map(
            |((question, contribution), (_, _, option, answer))| {
                entity::agent_answers::ActiveModel {
                    id: NotSet,
                    question_id: Set(*question),
                    user_id: Set(answerer),
                    kind: Set(entity::agent_answers::AnswerKind::Answered),
                    option_id: Set(Some(OPTIONS[*option].0.into())),
                    body: Set(Some(answer.clone())),
                    actual_cost_minor: Set(None),
                    contribution_event_id: Set(Some(*contribution)),
                    research_round: Set(0),
                    knowledge_entry_id: Set(None),
                    confidence: Set(Some(90)),
                    one_of_several: Set(false),
                    created_at: Set(now),
                    updated_at: Set(now),
                }
            },
        ),
    )
    .exec_without_returning(txn)
    .await?;

    let before = last_id(txn, "knowledge_entries").await?;
    knowledge_entries::Entity::insert_many(questions.iter().zip(&contributions).zip(texts).map(
        |((question, contribution), (title, text, option, answer))| {
            knowledge_entries::ActiveModel {
                id: NotSet,
                niche_id: Set(niche_id),
                question_id: Set(*question),
                answer_id: Set(None),
                contribution_event_id: Set(*contribution),
                version: Set(1),
                replaces: Set(None),
                status: Set(KnowledgeStatus::Current),
                title: Set(title.clone()),
                question: Set(text.clone()),
                option_id: Set(Some(OPTIONS[*option].0.into())),
                option_label: Set(Some(OPTIONS[*option].1.into())),
                answer: Set(Some(answer.clone())),
                answered_by: Set(answerer),
                verified_by: Set(None),
                verification: Set(Verification::Trust),
                verified_at: Set(now),
                ended_at: Set(None),
                ended_reason: Set(None),
                created_at: Set(now),
            }
        },
    ))
    .exec_without_returning(txn)
    .await?;
    if txn.get_database_backend() == DbBackend::Sqlite {
        // The words an entry is searched by (`domain::knowledge::Searchable`): title, question,
        // and the option's label then the answer's words (both present on every seeded entry).
        txn.execute_raw(Statement::from_sql_and_values(
            DbBackend::Sqlite,
            "INSERT INTO knowledge_search (rowid, title, question, answer) \
             SELECT ? | id, title, question, option_label || ' ' || answer \
             FROM knowledge_entries WHERE id > ? ORDER BY id",
            [
                knowledge::search_rowids(niche_id, KnowledgeStatus::Current)
                    .0
                    .into(),
                before.into(),
            ],
        ))
        .await?;
    }
    Ok(())
}
