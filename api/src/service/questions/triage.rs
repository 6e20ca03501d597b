//! The dashboard's triage queue: a niche's waiting questions filtered (urgency, task or
//! question, has a bounty, words of the title), sorted (most urgent then expiring soonest,
//! expiring soonest, newest, largest bounty), paged by a keyset cursor of the sort's own key, with the total the filters match;
//! and the niche's waiting counts for its heading ("57 waiting · 5 high").
//!
//! Only waiting questions (open or researching, not yet expired) are listed, through the same
//! partial index as the plain queue.

use chrono::{DateTime, Utc};
use entity::agent_questions::{self, ExchangeKind, Urgency};
use entity::niches;
use sea_orm::sea_query::{Expr, ExprTrait, Func, LikeExpr};
use sea_orm::{
    ColumnTrait, Condition, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder, QuerySelect,
    Select,
};

use crate::db::Db;
use crate::error::ServiceError;
use crate::service::people::access::{self, Viewer};

/// The predicate of the `agent_questions_waiting_idx` partial index, word for word.
const WAITING_PREDICATE: &str = "status IN ('open', 'researching')";

/// The longest title search accepted, in characters.
pub const MAX_SEARCH: usize = 200;

/// The order of a triage page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TriageSort {
    /// Most urgent first, then expiring soonest (the dashboard's default).
    #[default]
    Urgency,
    /// Expiring soonest first.
    Expiring,
    /// Newest first.
    Newest,
    /// Largest bounty (or task limit) first.
    Bounty,
}

impl TriageSort {
    fn letter(self) -> char {
        match self {
            TriageSort::Urgency => 'u',
            TriageSort::Expiring => 'e',
            TriageSort::Newest => 'n',
            TriageSort::Bounty => 'b',
        }
    }
}

/// What a triage page keeps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TriageFilter {
    /// Only this urgency.
    pub urgency: Option<Urgency>,
    /// Only tasks, or only questions.
    pub kind: Option<ExchangeKind>,
    /// Only those with a bounty (`true`) or without (`false`).
    pub has_bounty: Option<bool>,
    /// Only those whose title holds these characters (any case).
    pub search: Option<String>,
}

impl TriageFilter {
    /// The filter with its search trimmed (blank means none) and checked: at most
    /// [`MAX_SEARCH`] characters, no control characters.
    pub fn checked(mut self) -> Result<Self, ServiceError> {
        self.search = self
            .search
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty());
        if let Some(search) = &self.search {
            if search.chars().count() > MAX_SEARCH {
                return Err(ServiceError::BadInput(format!(
                    "search is at most {MAX_SEARCH} characters"
                )));
            }
            if search.chars().any(char::is_control) {
                return Err(ServiceError::BadInput(
                    "search may not hold control characters".into(),
                ));
            }
        }
        Ok(self)
    }
}

/// Where a triage page starts: after the question with this key in this sort.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TriageCursor {
    /// The sort the cursor was given out in.
    pub sort: TriageSort,
    /// The urgency rank (high 0, normal 1, low 2) in the urgency sort; 0 in the others.
    pub rank: i16,
    /// The sort's key: the expiry in nanoseconds (urgency, expiring), the bounty, or 0
    /// (newest).
    pub key: i64,
    /// The question id.
    pub id: i64,
}

impl TriageCursor {
    /// The opaque text clients pass back.
    pub fn encode(self) -> String {
        match self.sort {
            TriageSort::Urgency => {
                format!(
                    "t{}{}:{}.{}",
                    self.sort.letter(),
                    self.rank,
                    self.key,
                    self.id
                )
            }
            _ => format!("t{}{}.{}", self.sort.letter(), self.key, self.id),
        }
    }

    /// Read a cursor a client passed back for a page in `sort`.
    pub fn decode(raw: &str, sort: TriageSort) -> Result<Self, ServiceError> {
        let bad = || ServiceError::BadInput("that cursor is not one askloop gave out".into());
        let rest = raw.strip_prefix('t').ok_or_else(bad)?;
        let mut chars = rest.chars();
        let letter = chars.next().ok_or_else(bad)?;
        if letter != sort.letter() {
            return Err(ServiceError::BadInput(
                "that cursor belongs to another sort: start again without `after`".into(),
            ));
        }
        let (key, id) = chars.as_str().split_once('.').ok_or_else(bad)?;
        let (rank, key) = match sort {
            TriageSort::Urgency => {
                let (rank, key) = key.split_once(':').ok_or_else(bad)?;
                (rank.parse().map_err(|_| bad())?, key)
            }
            _ => (0, key),
        };
        Ok(Self {
            sort,
            rank,
            key: key.parse().map_err(|_| bad())?,
            id: id.parse().map_err(|_| bad())?,
        })
    }

    /// The cursor of `question` in `sort`.
    pub fn of(question: &agent_questions::Model, sort: TriageSort) -> Self {
        let key = match sort {
            TriageSort::Urgency | TriageSort::Expiring => question
                .expires_at
                .timestamp_nanos_opt()
                .unwrap_or(i64::MAX),
            TriageSort::Newest => 0,
            TriageSort::Bounty => price(question),
        };
        Self {
            sort,
            rank: match sort {
                TriageSort::Urgency => question.urgency_rank,
                _ => 0,
            },
            key,
            id: question.id,
        }
    }
}

/// What a question offers: its bounty (a task's budget limit is stored there too).
fn price(question: &agent_questions::Model) -> i64 {
    question.bounty_minor
}

/// A page of the triage queue.
#[derive(Debug, Clone)]
pub struct TriagePage {
    /// The questions, in the sort's order.
    pub items: Vec<agent_questions::Model>,
    /// Whether more follow.
    pub has_next: bool,
    /// How many waiting questions the filters match, on every page.
    pub total: u64,
}

/// How many questions of a niche wait, how many of them are urgent, and how many need the
/// viewer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitingCounts {
    /// Every waiting question.
    pub total: u64,
    /// Those of high urgency.
    pub high: u64,
    /// Those the viewer has not acted on in their current research round (nor answered):
    /// the count of "Needs me", as the niches page counts it.
    pub needs_me: u64,
    /// Those of high urgency among them.
    pub needs_me_high: u64,
}

fn waiting(niche_id: i64, now: DateTime<Utc>) -> Select<agent_questions::Entity> {
    agent_questions::Entity::find()
        .filter(agent_questions::Column::NicheId.eq(niche_id))
        // Written as the partial index's predicate, so the planner may use it.
        .filter(Expr::cust(WAITING_PREDICATE))
        .filter(agent_questions::Column::ExpiresAt.gt(now))
}

fn filtered(
    select: Select<agent_questions::Entity>,
    filter: &TriageFilter,
) -> Select<agent_questions::Entity> {
    let mut select = select;
    if let Some(urgency) = filter.urgency {
        select = select.filter(agent_questions::Column::Urgency.eq(urgency));
    }
    if let Some(kind) = filter.kind {
        select = select.filter(agent_questions::Column::Kind.eq(kind));
    }
    if let Some(has) = filter.has_bounty {
        select = select.filter(if has {
            agent_questions::Column::BountyMinor.gt(0)
        } else {
            agent_questions::Column::BountyMinor.lte(0)
        });
    }
    if let Some(search) = &filter.search {
        let pattern = format!("%{}%", escape_like(&search.to_lowercase()));
        select = select.filter(
            Expr::expr(Func::lower(Expr::col(agent_questions::Column::Title)))
                .like(LikeExpr::new(pattern).escape('\\')),
        );
    }
    select
}

/// `text` with LIKE's wildcards and its escape character taken literally.
fn escape_like(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn after_cursor(
    select: Select<agent_questions::Entity>,
    after: TriageCursor,
) -> Select<agent_questions::Entity> {
    use agent_questions::Column as C;
    match after.sort {
        TriageSort::Urgency => {
            let at = DateTime::from_timestamp_nanos(after.key);
            select.filter(
                Condition::any().add(C::UrgencyRank.gt(after.rank)).add(
                    Condition::all().add(C::UrgencyRank.eq(after.rank)).add(
                        Condition::any().add(C::ExpiresAt.gt(at)).add(
                            Condition::all()
                                .add(C::ExpiresAt.eq(at))
                                .add(C::Id.gt(after.id)),
                        ),
                    ),
                ),
            )
        }
        TriageSort::Expiring => {
            let at = DateTime::from_timestamp_nanos(after.key);
            select.filter(
                Condition::any().add(C::ExpiresAt.gt(at)).add(
                    Condition::all()
                        .add(C::ExpiresAt.eq(at))
                        .add(C::Id.gt(after.id)),
                ),
            )
        }
        TriageSort::Newest => select.filter(C::Id.lt(after.id)),
        TriageSort::Bounty => {
            let price = price_expr();
            select.filter(
                Condition::any().add(price.clone().lt(after.key)).add(
                    Condition::all()
                        .add(price.eq(after.key))
                        .add(C::Id.gt(after.id)),
                ),
            )
        }
    }
}

/// What a question offers, in SQL (see [`price`]).
fn price_expr() -> Expr {
    Expr::col(agent_questions::Column::BountyMinor)
}

fn ordered(
    select: Select<agent_questions::Entity>,
    sort: TriageSort,
) -> Select<agent_questions::Entity> {
    use agent_questions::Column as C;
    match sort {
        TriageSort::Urgency => select
            .order_by_asc(C::UrgencyRank)
            .order_by_asc(C::ExpiresAt)
            .order_by_asc(C::Id),
        TriageSort::Expiring => select.order_by_asc(C::ExpiresAt).order_by_asc(C::Id),
        TriageSort::Newest => select.order_by_desc(C::Id),
        TriageSort::Bounty => select.order_by_desc(price_expr()).order_by_asc(C::Id),
    }
}

/// A page of `niche`'s waiting questions as `filter` and `sort` say, for someone allowed to
/// read them.
#[expect(
    clippy::too_many_arguments,
    reason = "the niche, viewer, filter, sort and page of one triage request, each its own input"
)]
pub async fn triage(
    db: &Db,
    viewer: Option<&Viewer>,
    niche: &niches::Model,
    filter: TriageFilter,
    sort: TriageSort,
    first: u64,
    after: Option<TriageCursor>,
    now: DateTime<Utc>,
) -> Result<TriagePage, ServiceError> {
    access::can_read_questions(db, viewer, niche).await?;
    let filter = filter.checked()?;
    if after.is_some_and(|a| a.sort != sort) {
        return Err(ServiceError::BadInput(
            "that cursor belongs to another sort: start again without `after`".into(),
        ));
    }
    let base = filtered(waiting(niche.id, now), &filter);
    let total = base.clone().count(db).await?;
    let mut page = base;
    if let Some(after) = after {
        page = after_cursor(page, after);
    }
    let mut items = ordered(page, sort).limit(first + 1).all(db).await?;
    let has_next = items.len() as u64 > first;
    items.truncate(first as usize);
    Ok(TriagePage {
        items,
        has_next,
        total,
    })
}

/// How many of `niche`'s questions wait, and how many of them are urgent, for someone allowed
/// to read them.
pub async fn waiting_counts(
    db: &Db,
    viewer: Option<&Viewer>,
    niche: &niches::Model,
    now: DateTime<Utc>,
) -> Result<WaitingCounts, ServiceError> {
    access::can_read_questions(db, viewer, niche).await?;
    let total = waiting(niche.id, now).count(db).await?;
    let high = waiting(niche.id, now)
        .filter(agent_questions::Column::Urgency.eq(Urgency::High))
        .count(db)
        .await?;
    let (needs_me, needs_me_high) = match viewer {
        Some(viewer) => {
            let mine = || {
                waiting(niche.id, now)
                    .filter(crate::service::questions::queue::not_acted_on_by(viewer))
            };
            let all = mine().count(db).await?;
            let high = mine()
                .filter(agent_questions::Column::Urgency.eq(Urgency::High))
                .count(db)
                .await?;
            (all, high)
        }
        None => (total, high),
    };
    Ok(WaitingCounts {
        total,
        high,
        needs_me,
        needs_me_high,
    })
}

/// One thing I did to a question: my answer or decline, the question as it is now, its niche's
/// slug and (for an answer) where it is in review.
#[derive(Debug, Clone)]
pub struct Activity {
    /// What I gave.
    pub answer: entity::agent_answers::Model,
    /// The question now.
    pub question: agent_questions::Model,
    /// Its niche's slug.
    pub niche_slug: String,
    /// My answer's review state; none for a decline.
    pub review: Option<entity::contribution_events::ContributionStatus>,
}

/// What `viewer` answered, declined and sent back, newest first, after answer id `before`:
/// `first` of them and whether more follow. Only questions of niches they may still read.
pub async fn my_activity(
    db: &Db,
    viewer: Option<&Viewer>,
    first: u64,
    before: Option<i64>,
) -> Result<(Vec<Activity>, bool), ServiceError> {
    use entity::agent_answers;
    let viewer = access::signed_in(viewer)?;
    let mut select = agent_answers::Entity::find()
        .filter(agent_answers::Column::UserId.eq(viewer.user_id))
        .order_by_desc(agent_answers::Column::Id);
    if let Some(before) = before {
        select = select.filter(agent_answers::Column::Id.lt(before));
    }
    let mut answers = select.limit(first + 1).all(db).await?;
    let has_next = answers.len() as u64 > first;
    answers.truncate(first as usize);
    let questions: std::collections::HashMap<i64, agent_questions::Model> =
        agent_questions::Entity::find()
            .filter(agent_questions::Column::Id.is_in(answers.iter().map(|a| a.question_id)))
            .all(db)
            .await?
            .into_iter()
            .map(|q| (q.id, q))
            .collect();
    let niches =
        crate::service::people::names::niches(db, questions.values().map(|q| q.niche_id)).await?;
    let reviews = crate::service::questions::queue::reviews_of(
        db,
        answers.iter().filter_map(|a| a.contribution_event_id),
    )
    .await?;
    let mut readable = std::collections::HashMap::new();
    let mut items = Vec::with_capacity(answers.len());
    for answer in answers {
        let Some(question) = questions.get(&answer.question_id).cloned() else {
            continue;
        };
        let Some(niche) = niches.get(&question.niche_id) else {
            continue;
        };
        let may_read = match readable.get(&niche.id) {
            Some(may) => *may,
            None => {
                let may = access::can_read_questions(db, Some(viewer), niche)
                    .await
                    .is_ok();
                readable.insert(niche.id, may);
                may
            }
        };
        if !may_read {
            continue;
        }
        let review = answer
            .contribution_event_id
            .and_then(|id| reviews.get(&id).copied());
        items.push(Activity {
            niche_slug: niche.slug.clone(),
            answer,
            question,
            review,
        });
    }
    Ok((items, has_next))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_reads_back_only_in_its_own_sort() {
        let cursor = TriageCursor {
            sort: TriageSort::Bounty,
            rank: 0,
            key: 2500,
            id: 42,
        };
        let text = cursor.encode();
        assert_eq!(
            TriageCursor::decode(&text, TriageSort::Bounty).ok(),
            Some(cursor)
        );
        assert!(TriageCursor::decode(&text, TriageSort::Expiring).is_err());
        for bad in ["", "t", "tb", "tb1", "tbx.1", "q1.2", "tb1.x", "te-1"] {
            assert!(
                TriageCursor::decode(bad, TriageSort::Bounty).is_err(),
                "{bad}"
            );
        }
        let urgent = TriageCursor {
            sort: TriageSort::Urgency,
            rank: 1,
            key: 1_700_000_000_000_000_000,
            id: 7,
        };
        assert_eq!(
            TriageCursor::decode(&urgent.encode(), TriageSort::Urgency).ok(),
            Some(urgent)
        );
        for bad in ["tu1.7", "tux:1.7", "tu1:x.7", "te1:1.7"] {
            assert!(
                TriageCursor::decode(bad, TriageSort::Urgency).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_search_takes_wildcards_literally_and_refuses_what_is_not_text() {
        assert_eq!(escape_like("50%_off\\"), "50\\%\\_off\\\\");
        let checked = |s: &str| {
            TriageFilter {
                search: Some(s.to_owned()),
                ..TriageFilter::default()
            }
            .checked()
        };
        assert_eq!(checked("  ").map(|f| f.search).ok(), Some(None));
        assert_eq!(
            checked(" roof ").map(|f| f.search).ok(),
            Some(Some("roof".to_owned()))
        );
        assert!(checked("a\u{0}b").is_err());
        assert!(checked(&"x".repeat(MAX_SEARCH + 1)).is_err());
    }
}
