//! `/dashboard/niches/:slug/questions`: the niche's triage queue and "Settled".
//!
//! Waiting questions show as compact rows (urgency, bounty or task limit, title, the agent and
//! the question's first words, age, time left) that open in place into the full card. The
//! queue is the person's own: what they declined, sent back for research or answered (and
//! whose answer was rejected) leaves "Needs me" for "Handled by you", saying which
//! (`Niche.myParts`), and comes back only when the agent's research does ("research is
//! back"). Filters (urgency, task or question, has a bounty), the sort (most urgent then
//! expiring soonest by default, expiring soonest, newest, bounty) and a title search live in
//! the URL (`?urgency=high&sort=newest&q=roof`), are read by the server (`Niche.queue`) and
//! carry into "Load more"; live arrivals (`questionQueue`) join only when they match. A search
//! longer than the server takes is refused beside the search box, the rest of the view kept.
//! The heading and the document title count what needs me ("57 waiting · 5 high"), as the
//! niches page does, re-read after each live change. On a phone the filters fold away. Keys:
//! `j`/`k` move between rows, `Enter` opens one, `a`/`d`/`r` answer, decline or send back
//! the current row, Ctrl/Cmd+`Enter` sends an open answer, `Esc` closes it, `u` undoes a
//! pending decline or research, `/` goes to the search, `?` lists them (not offered on touch
//! screens).
//!
//! A question someone else settles while this person has its row open or a draft on it stays
//! in place, read-only, saying who did it, until they close it. Others with a question's form
//! open show as "mara is answering" (`answeringNow`).

use std::collections::{HashMap, HashSet};

use leptos::Params;
use leptos::prelude::*;
use leptos_router::NavigateOptions;
use leptos_router::components::A;
use leptos_router::hooks::{use_navigate, use_params, use_query_map};
use leptos_router::params::Params;
use leptos_router::{LazyRoute, lazy_route};
use wasm_bindgen::JsCast;

use crate::api::{self, ApiError, ErrorCode};
use crate::components::countdown::TimeLeft;
use crate::components::drafts;
use crate::components::held::{Held, Sent};
use crate::components::loaded::Loaded;
use crate::components::notice::Notice;
use crate::components::question_card::{
    Acted, PriceBadge, QuestionCard, SettledElsewhere, answering_words, shorten, visible_controls,
};
use crate::components::time_ago::{TimeAgo, exact};
use crate::components::title::page_title;
use crate::live::{self, LiveEvent};
use crate::operations::{
    AnsweringNow, QueueChanges, QueueCounts, QueueMore, QueuePage as QueueRead, answering_now,
    queue_changes, queue_counts, queue_more, queue_page,
};
use crate::vocab::{
    ContributionStatus, ExchangeKind, MyPart, QuestionStatus, QueueChangeKind, QueueSort, Urgency,
};

type Question = queue_page::QuestionCard;
type Settled = queue_page::QueuePageNicheSettledNodes;

/// The route's typed parameters.
#[derive(Params, Clone, PartialEq)]
pub struct NicheParams {
    /// The niche's slug.
    pub slug: Option<String>,
}

/// The niche in the path, once it is known.
pub fn niche_slug() -> Memo<String> {
    let params = use_params::<NicheParams>();
    Memo::new(move |_| params.get().ok().and_then(|p| p.slug).unwrap_or_default())
}

/// What the URL asks the queue to show.
#[derive(Clone, PartialEq, Default)]
struct View {
    urgency: Option<Urgency>,
    kind: Option<ExchangeKind>,
    bounty: Option<bool>,
    sort: Option<QueueSort>,
    search: String,
}

/// The longest title search the server takes, in characters.
const MAX_SEARCH: usize = 200;

impl View {
    fn sort(&self) -> QueueSort {
        self.sort.clone().unwrap_or(QueueSort::Urgency)
    }

    /// Why the search from the URL cannot be sent, if it cannot (too long, or not text).
    fn search_refusal(&self) -> Option<String> {
        let search = self.search.trim();
        let length = search.chars().count();
        if length > MAX_SEARCH {
            Some(format!(
                "A search is at most {MAX_SEARCH} characters; this one has {length}. Shorten it and search again: the queue below is not searched."
            ))
        } else if search.chars().any(char::is_control) {
            Some("A search cannot hold control characters. Retype it and search again: the queue below is not searched.".to_owned())
        } else {
            None
        }
    }

    /// The search the server is asked for: none when blank or refused.
    fn sent_search(&self) -> Option<String> {
        Some(self.search.trim().to_owned())
            .filter(|s| !s.is_empty() && self.search_refusal().is_none())
    }

    /// Whether `q` belongs in this view (a live arrival joins only then).
    fn admits(&self, q: &Question) -> bool {
        self.urgency
            .as_ref()
            .is_none_or(|u| Urgency::of(&q.urgency) == *u)
            && self.kind.as_ref().is_none_or(|k| q.kind == *k)
            && self.bounty.is_none_or(|b| (q.bounty_minor > 0) == b)
            && self
                .sent_search()
                .is_none_or(|search| q.title.to_lowercase().contains(&search.to_lowercase()))
    }

    fn filtered(&self) -> bool {
        self.urgency.is_some()
            || self.kind.is_some()
            || self.bounty.is_some()
            || self.sent_search().is_some()
    }

    /// The query string for this view (empty values left out).
    fn query(&self) -> String {
        let mut parts = Vec::new();
        if let Some(u) = &self.urgency {
            parts.push(format!("urgency={u}"));
        }
        if let Some(k) = &self.kind {
            parts.push(format!("kind={k}"));
        }
        if let Some(b) = self.bounty {
            parts.push(format!("bounty={}", if b { "yes" } else { "no" }));
        }
        if let Some(s) = self.sort.as_ref().filter(|s| **s != QueueSort::Urgency) {
            parts.push(format!("sort={s}"));
        }
        if !self.search.trim().is_empty() {
            parts.push(format!(
                "q={}",
                String::from(js_sys::encode_uri_component(self.search.trim()))
            ));
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!("?{}", parts.join("&"))
        }
    }
}

/// `module::Variables` for the view `v` (its sort, filters and search) with the operation's
/// own fields: every read of the queue asks for the same view.
macro_rules! with_view {
    ($module:ident, $v:expr, { $($field:ident $(: $value:expr)?),* }) => {
        $module::Variables {
            $($field $(: $value)?,)*
            sort: $v.sort(),
            urgency: $v.urgency.clone(),
            kind: $v.kind.clone(),
            has_bounty: $v.bounty,
            search: $v.sent_search(),
        }
    };
}

/// The queue as a lazily loaded route: its code (and the card's) is fetched the first time
/// someone opens a queue.
pub struct QueueRoute;

#[lazy_route]
impl LazyRoute for QueueRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <QueueRouteView/> }.into_any()
    }
}

/// A fresh page (and subscription) for each niche and view.
#[component]
fn QueueRouteView() -> impl IntoView {
    let slug = niche_slug();
    let query = use_query_map();
    let view = Memo::new(move |_| {
        query.with(|q| View {
            urgency: q
                .get("urgency")
                .map(Urgency::of)
                .filter(|u| !matches!(u, Urgency::Other(_))),
            kind: q
                .get("kind")
                .map(ExchangeKind::of)
                .filter(|k| !matches!(k, ExchangeKind::Other(_))),
            bounty: q.get("bounty").and_then(|b| match b.as_str() {
                "yes" => Some(true),
                "no" => Some(false),
                _ => None,
            }),
            sort: q
                .get("sort")
                .map(QueueSort::of)
                .filter(|s| !matches!(s, QueueSort::Other(_))),
            search: q.get("q").unwrap_or_default(),
        })
    });
    move || view! { <QueuePage slug=slug.get() view=view.get()/> }
}

/// A row on the page.
#[derive(Clone)]
struct Row {
    question: Question,
    fresh: bool,
    /// What my own answer did (shown in place until closed).
    outcome: RwSignal<Option<(String, Option<String>)>>,
    /// Someone else settled it while I had it open or a draft on it.
    settled: RwSignal<Option<SettledElsewhere>>,
}

/// Where the live connection stands.
#[derive(Clone, Copy, PartialEq)]
enum Link {
    Connecting,
    Live,
    Dropped,
    Ended,
}

/// How many waiting questions a page of the queue holds.
const PAGE: usize = 50;
/// The most one read may ask for (the server's limit on `first`).
const MAX_READ: usize = 100;

/// Where a question sorts in `sort` (the server's order, so the client's merge and the
/// server's cursor agree).
fn sort_key(sort: &QueueSort, q: &Question) -> (i64, i64, i64) {
    let id = q.id.parse::<i64>().unwrap_or(i64::MAX);
    let expires = js_sys::Date::parse(&q.expires_at) as i64;
    match sort {
        QueueSort::Newest => (0, 0, -id),
        QueueSort::Bounty => (0, -q.bounty_minor, id),
        QueueSort::Expiring => (0, expires, id),
        _ => {
            let rank = match Urgency::of(&q.urgency) {
                Urgency::High => 0,
                Urgency::Low => 2,
                _ => 1,
            };
            (rank, expires, id)
        }
    }
}

/// My part in the waiting questions I acted on, by question id.
type Parts = HashMap<String, MyPart>;

/// Whether my part in a question takes it off "Needs me".
fn handled(part: Option<&MyPart>) -> bool {
    part.is_some_and(|p| *p != MyPart::ResearchBack)
}

/// What "Handled by you" says of my part.
fn part_words(part: &MyPart) -> &'static str {
    match part {
        MyPart::Declined => "You declined: not enough context.",
        MyPart::SentBack => "You sent it back for research — waiting for the agent's research.",
        MyPart::Answered => "You answered — awaiting review.",
        MyPart::Rejected => "Your answer was rejected; others may answer it.",
        _ => "You acted on it.",
    }
}

/// Whether the window is phone-width (under 640 CSS pixels).
fn narrow() -> bool {
    window()
        .inner_width()
        .ok()
        .and_then(|w| w.as_f64())
        .is_some_and(|w| w < 640.0)
}

/// The question page's path.
pub fn question_path(slug: &str, id: &str) -> String {
    format!("/dashboard/niches/{slug}/questions/{id}")
}

fn html(el: web_sys::Element) -> Option<web_sys::HtmlElement> {
    el.dyn_into::<web_sys::HtmlElement>().ok()
}

/// The row holding the focus, if any.
fn current_row() -> Option<web_sys::Element> {
    document().active_element().and_then(|el| {
        el.closest("article.question[data-question-id]")
            .ok()
            .flatten()
    })
}

/// The queue of one niche.
#[component]
fn QueuePage(slug: String, view: View) -> impl IntoView {
    let rows = RwSignal::new(Vec::<Row>::new());
    // A row's own signals belong to the page, not to the read (or the live change) that made the
    // row: a later re-read must not dispose of them while the row is shown.
    let page_owner = StoredValue::new_local(Owner::current());
    fn made_by<T: Send + Sync + 'static>(
        owner: StoredValue<Option<Owner>, LocalStorage>,
    ) -> RwSignal<Option<T>> {
        match owner.get_value() {
            Some(owner) => owner.with(|| RwSignal::new(None)),
            None => RwSignal::new(None),
        }
    }
    let open = RwSignal::new(HashSet::<String>::new());
    let settled = RwSignal::new(Vec::<Settled>::new());
    let link = RwSignal::new(Link::Connecting);
    let link_message = RwSignal::new(None::<String>);
    let counts = RwSignal::new(None::<(i64, i64)>);
    let parts = RwSignal::new(Parts::new());
    let matching = RwSignal::new(None::<i64>);
    let niche_name = RwSignal::new(String::new());
    let answering = RwSignal::new(HashMap::<String, (Vec<String>, f64)>::new());
    let show_keys = RwSignal::new(false);
    let held = Held::get();
    let me = crate::session::Session::get()
        .person()
        .flatten()
        .map(|p| p.handle)
        .unwrap_or_default();
    let read_once = StoredValue::new(false);
    let more = RwSignal::new(None::<String>);
    let more_said = RwSignal::new(None::<String>);
    let view = StoredValue::new(view);
    let sort_rows = move |list: &mut Vec<Row>| {
        let sort = view.with_value(View::sort);
        list.sort_by_key(|r| sort_key(&sort, &r.question));
    };

    page_title(move || {
        let name = niche_name.get();
        match counts.get() {
            Some((total, _)) if !name.is_empty() => format!("({total}) {name}"),
            _ => name,
        }
    });

    let read_slug = slug.clone();
    let queue = LocalResource::new(move || {
        let slug = read_slug.clone();
        async move {
            let loaded = rows.with_untracked(Vec::len).clamp(PAGE, MAX_READ);
            let first = i64::try_from(loaded).unwrap_or(50);
            let v = view.get_value();
            let variables = with_view!(queue_page, v, { slug, first });
            let data = api::run::<QueueRead>(variables).await?;
            let Some(niche) = data.niche else {
                return Ok::<_, ApiError>(None);
            };
            niche_name.set(niche.name.clone());
            counts.set(Some((
                niche.waiting_counts.needs_me,
                niche.waiting_counts.needs_me_high,
            )));
            parts.set(
                niche
                    .my_parts
                    .iter()
                    .map(|p| (p.question_id.clone(), p.part.clone()))
                    .collect(),
            );
            matching.set(Some(niche.waiting.total_count));
            let waiting = niche.waiting;
            let first_read = !read_once.get_value();
            read_once.set_value(true);
            more.set(
                waiting
                    .page_info
                    .end_cursor
                    .filter(|_| waiting.page_info.has_next_page),
            );
            let ids: HashSet<String> = waiting.nodes.iter().map(|q| q.id.clone()).collect();
            rows.update(|list| {
                let previous: HashMap<String, Row> =
                    list.drain(..).map(|r| (r.question.id.clone(), r)).collect();
                let mut next: Vec<Row> = waiting
                    .nodes
                    .into_iter()
                    .map(|q| match previous.get(&q.id) {
                        Some(old) => Row {
                            question: q,
                            ..old.clone()
                        },
                        None => Row {
                            question: q,
                            fresh: !first_read,
                            outcome: made_by(page_owner),
                            settled: made_by(page_owner),
                        },
                    })
                    .collect();
                // Rows the person is still looking at stay: my outcomes, collided cards.
                next.extend(
                    previous
                        .into_values()
                        .filter(|r| !ids.contains(&r.question.id))
                        .filter(|r| {
                            r.outcome.with_untracked(Option::is_some)
                                || r.settled.with_untracked(Option::is_some)
                        }),
                );
                list.extend(next);
            });
            rows.update(sort_rows);
            settled.set(niche.settled.nodes);
            Ok(Some(niche.name))
        }
    });

    // The heading's counts, re-read after live changes (one read in flight at a time).
    let counts_slug = slug.clone();
    let reading_counts = StoredValue::new(false);
    let again = StoredValue::new(false);
    let read_counts = StoredValue::new(None::<Callback<()>>);
    read_counts.set_value(Some(Callback::new(move |()| {
        if reading_counts.get_value() {
            again.set_value(true);
            return;
        }
        reading_counts.set_value(true);
        let v = view.get_value();
        let variables = with_view!(queue_counts, v, { slug: counts_slug.clone() });
        leptos::task::spawn_local(async move {
            if let Ok(data) = api::run::<QueueCounts>(variables).await
                && let Some(niche) = data.niche
            {
                counts.set(Some((
                    niche.waiting_counts.needs_me,
                    niche.waiting_counts.needs_me_high,
                )));
                parts.set(
                    niche
                        .my_parts
                        .iter()
                        .map(|p| (p.question_id.clone(), p.part.clone()))
                        .collect(),
                );
                matching.set(Some(niche.waiting.total_count));
            }
            reading_counts.set_value(false);
            if again.get_value() {
                again.set_value(false);
                if let Some(cb) = read_counts.get_value() {
                    cb.run(());
                }
            }
        });
    })));
    let recount = move || {
        if let Some(cb) = read_counts.get_value() {
            cb.run(());
        }
    };

    let on_change = move |change: queue_changes::QueueChangesQuestionQueue| {
        let by = change.by.clone();
        let question = Question::from(change.question);
        recount();
        match change.change {
            QueueChangeKind::Removed => {
                let id = question.id.clone();
                let keep = open.with_untracked(|o| o.contains(&id)) || drafts::load(&id).is_some();
                let row = rows.with_untracked(|list| {
                    list.iter()
                        .find(|r| r.question.id == id)
                        .map(|r| (r.outcome, r.settled))
                });
                let gone = SettledElsewhere {
                    status: QuestionStatus::of(&question.status),
                    by: by.clone(),
                    at: String::from(js_sys::Date::new_0().to_iso_string()),
                };
                match row {
                    // My own notice stays until closed; closing it then lets the row go.
                    Some((outcome, settled)) if outcome.with_untracked(Option::is_some) => {
                        settled.set(Some(gone));
                    }
                    Some((_, settled)) if keep => settled.set(Some(gone)),
                    _ => rows.update(|list| list.retain(|r| r.question.id != id)),
                }
                queue.refetch();
            }
            _ => {
                let admitted = view.with_value(|v| v.admits(&question));
                let sort = view.with_value(View::sort);
                let key = sort_key(&sort, &question);
                let beyond_loaded = more.with_untracked(Option::is_some)
                    && rows.with_untracked(|list| {
                        list.last()
                            .is_some_and(|r| sort_key(&sort, &r.question) < key)
                    });
                rows.update(|list| {
                    match list.iter_mut().find(|r| r.question.id == question.id) {
                        Some(row) if admitted => row.question = question,
                        Some(_) => list.retain(|r| r.question.id != question.id),
                        // New to this page: an arrival, or back from research; joins only when
                        // it matches the view and falls within what is loaded.
                        None if admitted && !beyond_loaded => list.push(Row {
                            question,
                            fresh: true,
                            outcome: made_by(page_owner),
                            settled: made_by(page_owner),
                        }),
                        None => {}
                    }
                });
                rows.update(sort_rows);
            }
        }
    };

    // "Load more": the page after the last row, in the same view.
    let more_slug = slug.clone();
    let load_more = Action::new_local(move |_: &()| {
        let slug = more_slug.clone();
        let after = more.get_untracked();
        let v = view.get_value();
        async move {
            let Some(after) = after else {
                return Ok::<_, ApiError>(());
            };
            let variables = with_view!(queue_more, v, { slug, after });
            let data = api::run::<QueueMore>(variables).await?;
            let Some(niche) = data.niche else {
                return Ok(());
            };
            let page = niche.waiting;
            let mut added = 0;
            rows.update(|list| {
                for q in page.nodes.into_iter().map(Question::from) {
                    let seen = list.iter().any(|r| r.question.id == q.id);
                    if !seen {
                        added += 1;
                        list.push(Row {
                            question: q,
                            fresh: false,
                            outcome: made_by(page_owner),
                            settled: made_by(page_owner),
                        });
                    }
                }
            });
            rows.update(sort_rows);
            more.set(
                page.page_info
                    .end_cursor
                    .filter(|_| page.page_info.has_next_page),
            );
            let total = matching.get_untracked().unwrap_or_default();
            let shown = rows.with_untracked(Vec::len);
            let questions = if added == 1 { "question" } else { "questions" };
            more_said.set(Some(if more.get_untracked().is_some() {
                format!("{added} more {questions} loaded; {shown} of {total} shown.")
            } else {
                format!("{added} more {questions} loaded; that is every waiting question.")
            }));
            Ok(())
        }
    });

    let page_slug = StoredValue::new(slug.clone());
    live::subscribe::<QueueChanges>(
        queue_changes::Variables { slug: slug.clone() },
        move |event| match event {
            LiveEvent::Connected => {
                let was_dropped = link.get_untracked() == Link::Dropped;
                link.set(Link::Live);
                link_message.set(None);
                if was_dropped || read_once.get_value() {
                    queue.refetch();
                }
            }
            LiveEvent::Next(data) => on_change(data.question_queue),
            LiveEvent::Failed(err) if err.code == ErrorCode::Conflict => {}
            LiveEvent::Failed(err) => {
                link.set(Link::Ended);
                link_message.set(Some(err.to_string()));
            }
            LiveEvent::Dropped => link.set(Link::Dropped),
        },
    );
    // Who else is answering what (best effort: nothing here is needed to answer).
    let me_for_presence = me.clone();
    live::subscribe::<AnsweringNow>(answering_now::Variables { slug }, move |event| {
        if let LiveEvent::Next(data) = event {
            let a = data.answering_now;
            let others: Vec<String> = a
                .handles
                .into_iter()
                .filter(|h| *h != me_for_presence)
                .collect();
            answering.update(|map| {
                if others.is_empty() {
                    map.remove(&a.question_id);
                } else {
                    map.insert(a.question_id, (others, js_sys::Date::now()));
                }
            });
        }
    });
    // Marks not renewed lapse after 35 s.
    if let Ok(handle) = set_interval_with_handle(
        move || {
            let now = js_sys::Date::now();
            if answering.with_untracked(|m| m.values().any(|(_, at)| now - at > 35_000.0)) {
                answering.update(|m| m.retain(|_, (_, at)| now - *at <= 35_000.0));
            }
        },
        std::time::Duration::from_secs(5),
    ) {
        on_cleanup(move || handle.clear());
    }

    // What my last action did shows in its row's place; it replaces the one before (one notice
    // at a time, never over anything).
    let show_outcome = move |id: &str, outcome: (String, Option<String>)| {
        // The notice before goes; its question, if it still waits and I handled it, stays
        // under "Handled by you".
        rows.update(|list| {
            list.retain(|r| {
                r.question.id == id
                    || r.outcome.with_untracked(Option::is_none)
                    || (r.settled.with_untracked(Option::is_none)
                        && parts.with_untracked(|p| handled(p.get(&r.question.id))))
            });
        });
        rows.with_untracked(|list| {
            for row in list.iter().filter(|r| r.question.id != id) {
                if row.outcome.with_untracked(Option::is_some) {
                    row.outcome.set(None);
                }
            }
        });
        rows.with_untracked(|list| {
            if let Some(row) = list.iter().find(|r| r.question.id == id) {
                row.outcome.set(Some(outcome));
            }
        });
    };
    let on_done = Callback::new(move |(id, _round, result): Acted| {
        // Mine now, until the server's next word on it (re-read after the live change).
        if result.contribution_status.is_some() {
            parts.update(|p| {
                p.insert(id.clone(), MyPart::Answered);
            });
        }
        recount();
        let points = result.contribution_status.map(|status| {
            format!(
                "{} points, {}",
                result.points,
                ContributionStatus::of(&status)
            )
        });
        show_outcome(&id, (result.notice.clone(), points));
    });
    let on_dismissed = Callback::new(move |id: String| {
        show_outcome(
            &id,
            (
                "Dismissed. Nobody will be asked about it again.".to_owned(),
                None,
            ),
        );
    });
    let on_close = Callback::new(move |id: String| {
        let next = close_focus_target(&id);
        // A question I acted on that still waits moves to "Handled by you" (the next read of
        // my parts places it); any other goes.
        let still_waits = rows.with_untracked(|list| {
            list.iter().find(|r| r.question.id == id).is_some_and(|r| {
                r.settled.with_untracked(Option::is_none)
                    && (r.outcome.with_untracked(Option::is_some)
                        || parts.with_untracked(|p| handled(p.get(&id))))
            })
        });
        if still_waits {
            rows.with_untracked(|list| {
                if let Some(row) = list.iter().find(|r| r.question.id == id) {
                    row.outcome.set(None);
                }
            });
        } else {
            rows.update(|list| list.retain(|r| r.question.id != id));
        }
        open.update(|o| {
            o.remove(&id);
        });
        if let Some(next) = next {
            request_animation_frame(move || {
                let _ = next.focus();
            });
        }
    });
    // A held decline or research request that went through: out of my view, like an answer.
    Effect::new(move |_| {
        let done: Vec<(String, i64, String)> = rows.with(|list| {
            list.iter()
                .filter_map(|r| match held.ended_on(&r.question.id) {
                    Some((round, Sent::Done(notice))) if round == r.question.research_round => {
                        Some((r.question.id.clone(), round, notice))
                    }
                    _ => None,
                })
                .collect()
        });
        for (id, _round, notice) in done {
            held.forget(&id);
            // Sent: the note is no longer a draft, and the form will not come back filled.
            drafts::forget(&id);
            show_outcome(&id, (notice, None));
            recount();
        }
    });

    // The page's frame depends on the niche's name only, so a re-read (after a live change or a
    // drop) merges into the rows without rebuilding them: focus and scroll stay where they are.
    let shell = Memo::new(move |_| queue.get());

    // The queue's keys.
    let keys = window_event_listener(leptos::ev::keydown, move |ev| {
        let key = ev.key();
        // In an open card: Ctrl/Cmd+Enter sends what is written, Esc closes the card.
        if let Some(row) = row_of(ev.target()) {
            if key == "Enter" && (ev.ctrl_key() || ev.meta_key()) && !ev.alt_key() {
                let in_note = ev
                    .target()
                    .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
                    .and_then(|el| el.closest(".research-note").ok().flatten())
                    .is_some();
                let kind = if in_note { "send_research" } else { "answered" };
                if let Some(button) = row
                    .query_selector(&format!("form.answer button[data-kind={kind}]"))
                    .ok()
                    .flatten()
                    .and_then(html)
                {
                    ev.prevent_default();
                    button.click();
                }
                return;
            }
            if key == "Escape"
                && let Some(id) = row.get_attribute("data-question-id")
                && open.with_untracked(|o| o.contains(&id))
            {
                ev.prevent_default();
                open.update(|o| {
                    o.remove(&id);
                });
                if let Some(toggle) = row
                    .query_selector("button.row-toggle")
                    .ok()
                    .flatten()
                    .and_then(html)
                {
                    let _ = toggle.focus();
                }
                return;
            }
        }
        if ev.ctrl_key()
            || ev.meta_key()
            || ev.alt_key()
            || crate::components::keys::typing_in(ev.target())
        {
            return;
        }
        let toggles = || {
            document()
                .query_selector_all("section.waiting article.question button.row-toggle")
                .ok()
        };
        match key.as_str() {
            "?" => {
                ev.prevent_default();
                show_keys.update(|s| *s = !*s);
            }
            "Escape" => show_keys.set(false),
            "/" => {
                if let Some(fold) = document()
                    .query_selector("details.filters-fold")
                    .ok()
                    .flatten()
                {
                    let _ = fold.set_attribute("open", "");
                }
                if let Some(search) = document()
                    .query_selector("form.filters input[type=search]")
                    .ok()
                    .flatten()
                    .and_then(html)
                {
                    ev.prevent_default();
                    let _ = search.focus();
                }
            }
            "u" => {
                // Undo the pending decline or research: the current row's, else the only one.
                let undo = current_row()
                    .and_then(|row| row.query_selector(".held button.undo").ok().flatten())
                    .or_else(|| {
                        document()
                            .query_selector(".held button.undo")
                            .ok()
                            .flatten()
                    })
                    .and_then(html);
                if let Some(undo) = undo {
                    ev.prevent_default();
                    undo.click();
                }
            }
            "j" | "k" => {
                let Some(list) = toggles() else { return };
                let n = list.length();
                if n == 0 {
                    return;
                }
                let current = current_row();
                let mut at = None;
                for i in 0..n {
                    let row = list
                        .get(i)
                        .and_then(|node| node.dyn_into::<web_sys::Element>().ok())
                        .and_then(|el| el.closest("article.question").ok().flatten());
                    if row.is_some() && row == current {
                        at = Some(i);
                    }
                }
                let next = match (at, key.as_str()) {
                    (None, _) => 0,
                    (Some(i), "j") => (i + 1).min(n - 1),
                    (Some(i), _) => i.saturating_sub(1),
                };
                if let Some(el) = list
                    .get(next)
                    .and_then(|node| node.dyn_into::<web_sys::HtmlElement>().ok())
                {
                    ev.prevent_default();
                    let _ = el.focus();
                }
            }
            "a" | "d" | "r" => {
                let Some(row) = current_row() else { return };
                let Some(id) = row.get_attribute("data-question-id") else {
                    return;
                };
                ev.prevent_default();
                let was_open = open.with_untracked(|o| o.contains(&id));
                open.update(|o| {
                    o.insert(id.clone());
                });
                let kind = match key.as_str() {
                    "a" => "answered",
                    "d" => "insufficient_context",
                    _ => "needs_research",
                };
                let ready = key != "a" || row_has_answer(&row);
                request_animation_frame(move || {
                    let Some(row) = document()
                        .query_selector(&format!("article.question[data-question-id=\"{id}\"]"))
                        .ok()
                        .flatten()
                    else {
                        return;
                    };
                    if !ready || (!was_open && kind == "answered" && !row_has_answer(&row)) {
                        // Nothing to send yet: go to the first field of the answer.
                        if let Some(field) = row
                            .query_selector("form.answer input[type=radio], form.answer textarea")
                            .ok()
                            .flatten()
                            .and_then(html)
                        {
                            let _ = field.focus();
                        }
                        return;
                    }
                    if let Some(button) = row
                        .query_selector(&format!("form.answer button[data-kind={kind}]"))
                        .ok()
                        .flatten()
                        .and_then(html)
                    {
                        button.click();
                    }
                });
            }
            _ => {}
        }
    });
    on_cleanup(move || keys.remove());

    view! {
        <main class="queue-page">
            <p><A href="/dashboard/niches">"← Your niches"</A></p>
            <Notice/>
            <Loaded loading="Loading the queue…" forbidden="Only the niche's active members see its questions">
                {move || shell.get().map(|result| result.map(|name| match name {
                    None => view! { <h1>"No such niche"</h1> }.into_any(),
                    Some(name) => view! {
                        <LinkBanner link=link message=link_message/>
                        <div class="queue-head">
                            <h1><bdi>{name}</bdi></h1>
                            <p class="counts" aria-live="polite">{move || counts.get().map(|(total, high)| {
                                if high > 0 { format!("{total} waiting · {high} high") } else { format!("{total} waiting") }
                            })}</p>
                        </div>
                        <p class="links">
                            <A href=page_slug.with_value(|slug| crate::pages::knowledge::knowledge_path(slug))>"Knowledge"</A>
                            " · "<A href="/dashboard/activity">"My activity"</A>
                            // Not offered on touch screens (the style sheet hides it there).
                            <span class="keys-offer">" · "<button type="button" class="link-like" aria-expanded=move || show_keys.get().to_string() on:click=move |_| show_keys.update(|s| *s = !*s)>"Keyboard keys (?)"</button></span>
                        </p>
                        <Show when=move || show_keys.get()>
                            <KeyList close=Callback::new(move |()| show_keys.set(false))/>
                        </Show>
                        <Filters slug=page_slug.get_value() current=view.get_value()/>
                        <section class="waiting" aria-labelledby="needs-me-title">
                            <h2 id="needs-me-title" class="group-title">"Needs me"</h2>
                            <p class="muted shown" role="status">{move || matching.get().map(|total| {
                                let shown = rows.with(|l| l.iter().filter(|r| r.outcome.with(Option::is_none) && r.settled.with(Option::is_none)).count());
                                if view.with_value(View::filtered) {
                                    format!("{total} match these filters; {shown} shown.")
                                } else {
                                    format!("{shown} of {total} shown.")
                                }
                            })}</p>
                            <Show
                                when=move || !rows.with(Vec::is_empty)
                                fallback=|| ()
                            >
                                <ol class="rows">
                                    <For
                                        each=move || {
                                            let mine = parts.get();
                                            rows.get().into_iter().filter(|r| {
                                                !handled(mine.get(&r.question.id))
                                                    || r.outcome.with(Option::is_some)
                                                    || r.settled.with(Option::is_some)
                                            }).collect::<Vec<_>>()
                                        }
                                        key=|row| (row.question.id.clone(), row.question.research_round, row.question.status.clone())
                                        children=move |row| {
                                            let page = page_slug.with_value(|slug| question_path(slug, &row.question.id));
                                            let back_id = row.question.id.clone();
                                            let back = Signal::derive(move || parts.with(|p| p.get(&back_id) == Some(&MyPart::ResearchBack)));
                                            view! { <QueueRow row=row page=page open=open answering=answering back=back on_done=on_done on_dismissed=on_dismissed on_close=on_close/> }
                                        }
                                    />
                                </ol>
                            </Show>
                            {move || {
                                let mine = parts.get();
                                rows.with(|l| l.iter().all(|r| r.outcome.with(Option::is_some) || (handled(mine.get(&r.question.id)) && r.settled.with(Option::is_none))))
                            }.then(|| view! {
                                <p class="empty">{if view.with_value(View::filtered) { "Nothing that needs you matches these filters." } else { "Nothing needs you now. New questions appear here." }}</p>
                            })}
                            <LoadMore more=more said=more_said load=load_more/>
                        </section>
                        <HandledList rows=rows parts=parts page_slug=page_slug/>
                        <SettledList settled=settled page_slug=page_slug/>
                    }.into_any(),
                }))}
            </Loaded>
        </main>
    }
}

/// The open question card `target` is in, if any.
fn row_of(target: Option<web_sys::EventTarget>) -> Option<web_sys::Element> {
    target
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        .and_then(|el| {
            el.closest("article.question[data-question-id] .card-body")
                .ok()
                .flatten()
        })
        .and_then(|body| body.closest("article.question").ok().flatten())
}

/// Whether a row's form has something to send: an option chosen or words typed.
fn row_has_answer(row: &web_sys::Element) -> bool {
    let chosen = row
        .query_selector("form.answer input[type=radio]:checked")
        .ok()
        .flatten()
        .is_some();
    let typed = row
        .query_selector("form.answer textarea[name=body]")
        .ok()
        .flatten()
        .and_then(|el| el.dyn_into::<web_sys::HtmlTextAreaElement>().ok())
        .is_some_and(|t| !t.value().trim().is_empty());
    chosen || typed
}

/// Where focus goes when row `id` closes: the next row's toggle, else the previous one's.
fn close_focus_target(id: &str) -> Option<web_sys::HtmlElement> {
    let row = document()
        .query_selector(&format!("article.question[data-question-id=\"{id}\"]"))
        .ok()
        .flatten()?;
    let item = row.parent_element()?;
    let neighbour = item
        .next_element_sibling()
        .or_else(|| item.previous_element_sibling())?;
    neighbour
        .query_selector("button.row-toggle")
        .ok()
        .flatten()
        .and_then(html)
}

/// "Handled by you": the waiting questions I declined, sent back or answered, each saying which;
/// one comes back to "Needs me" when the agent's research does.
#[component]
fn HandledList(
    rows: RwSignal<Vec<Row>>,
    parts: RwSignal<Parts>,
    page_slug: StoredValue<String>,
) -> impl IntoView {
    let mine = move || {
        let mine = parts.get();
        rows.get()
            .into_iter()
            .filter(|r| r.outcome.with(Option::is_none) && r.settled.with(Option::is_none))
            .filter_map(|r| {
                let part = mine.get(&r.question.id).filter(|p| handled(Some(p)))?;
                Some((r.question, part.clone()))
            })
            .collect::<Vec<_>>()
    };
    view! {
        <Show when=move || !mine().is_empty()>
            <section class="handled" aria-labelledby="handled-title">
                <h2 id="handled-title" class="group-title">"Handled by you"</h2>
                <p class="muted">"Still waiting for others. One comes back to “Needs me” when something new happens to it, such as the agent's research arriving."</p>
                <ul class="handled-list">
                    <For
                        each=mine
                        key=|(q, part)| (q.id.clone(), q.research_round, part.to_string())
                        children=move |(q, part)| {
                            let href = page_slug.with_value(|slug| question_path(slug, &q.id));
                            let title = visible_controls(&q.title);
                            view! {
                                <li data-question-id=q.id.clone() data-part=part.to_string()>
                                    <A href=href><bdi>{title}</bdi></A>
                                    <p class="handled-state">{part_words(&part)}</p>
                                    <p class="muted tell"><RowTell question=q.clone()/></p>
                                </li>
                            }
                        }
                    />
                </ul>
            </section>
        </Show>
    }
}

/// What tells two questions of the same title apart: the agent that asked, the question's
/// first words and when it was asked.
#[component]
fn RowTell(question: Question) -> impl IntoView {
    let first_words = shorten(&question.question, 60);
    view! {
        {question.agent_name.filter(|a| !a.trim().is_empty()).map(|agent| view! {
            <span class="agent">"from "<bdi>{visible_controls(&shorten(&agent, 60))}</bdi></span>" · "
        })}
        <span class="first-words">"“"<bdi>{visible_controls(&first_words)}</bdi>"”"</span>
        " · "<span>"asked "<TimeAgo at=question.created_at.clone()/></span>
    }
}

/// One row: the compact line that opens in place into the full card.
#[component]
fn QueueRow(
    row: Row,
    page: String,
    open: RwSignal<HashSet<String>>,
    answering: RwSignal<HashMap<String, (Vec<String>, f64)>>,
    /// Back from the agent's research after I had set it aside.
    back: Signal<bool>,
    on_done: Callback<Acted>,
    on_dismissed: Callback<String>,
    on_close: Callback<String>,
) -> impl IntoView {
    let q = row.question.clone();
    let id = q.id.clone();
    let body_id = format!("row-body-{id}");
    let urgency = Urgency::of(&q.urgency);
    let urgency_class = format!("badge urgency-{urgency}");
    let researching = q.status == QuestionStatus::Researching;
    let title = visible_controls(&q.title);
    let has_draft = drafts::load(&id).is_some();
    let open_id = id.clone();
    let is_open = Memo::new(move |_| open.with(|o| o.contains(&open_id)));
    let toggle_id = id.clone();
    let toggle = move |_| {
        open.update(|o| {
            if !o.remove(&toggle_id) {
                o.insert(toggle_id.clone());
            }
        });
    };
    let others_id = id.clone();
    let others = Signal::derive(move || {
        answering.with(|m| {
            m.get(&others_id)
                .map(|(h, _)| h.clone())
                .unwrap_or_default()
        })
    });
    let settled = row.settled;
    let outcome = row.outcome;
    let done_id = id.clone();
    let done_title = title.clone();
    let done_page = page.clone();
    let done = move || {
        outcome.get().map(|(notice, points)| {
            let close_id = done_id.clone();
            let title = done_title.clone();
            view! {
                <article class="question row done" data-question-id=done_id.clone()>
                    <p class="done-title"><bdi>{title.clone()}</bdi></p>
                    <p class="notice" role="status">{notice}</p>
                    {points.map(|p| view! { <p class="points muted">{p}</p> })}
                    <p class="actions">
                        <a href=done_page.clone()>"Its page"<span class="visually-hidden">" — "{title}</span></a>
                        <button type="button" class="secondary small" on:click=move |_| on_close.run(close_id.clone())>"Close"</button>
                    </p>
                </article>
            }
        })
    };
    let expires = q.expires_at.clone();
    let expires_title = exact(&expires);
    view! {
        <li>
            {done}
            <article class:question=move || outcome.with(Option::is_none) class:row=true hidden=move || outcome.with(Option::is_some) class:fresh=row.fresh class:open=move || is_open.get() class:collided=move || settled.with(Option::is_some) data-question-id=id.clone()>
                <div class="row-line">
                    <h2>
                        <button type="button" class="row-toggle" aria-expanded=move || is_open.get().to_string() aria-controls=body_id.clone() on:click=toggle>
                            <bdi>{title.clone()}</bdi>
                        </button>
                    </h2>
                    <p class="meta">
                        <span class=urgency_class>{urgency.to_string()}</span>
                        {row.fresh.then(|| view! { <span class="badge new">"new"</span> })}
                        {researching.then(|| view! { <span class="badge researching">"sent back for research"</span> })}
                        {move || back.get().then(|| view! { <span class="badge research-back">"research is back"</span> })}
                        {(q.escalation_step > 0).then(|| view! { <span class="badge escalated">"escalated"</span> })}
                        <PriceBadge kind=q.kind.clone() budget_limit=q.budget_limit_minor bounty=q.bounty_minor/>
                        {has_draft.then(|| view! { <span class="badge draft">"draft"</span> })}
                        <TimeLeft at=expires title=expires_title/>
                        " · "<span class="tell"><RowTell question=q.clone()/></span>
                        {move || {
                            let o = others.get();
                            (!o.is_empty()).then(|| view! { " · "<span class="presence-mark">{answering_words(&o)}</span> })
                        }}
                    </p>
                </div>
                <Show when=move || outcome.with(Option::is_none) && (is_open.get() || settled.with(Option::is_some))>
                    <div id=body_id.clone()>
                        <QuestionCard question=q.clone() page=page.clone() fresh=false settled=Signal::derive(move || settled.get()) others=others on_done=on_done on_dismissed=on_dismissed on_close=on_close/>
                    </div>
                </Show>
            </article>
        </li>
    }
}

/// The filters, sort and title search; each change is a new URL.
#[component]
fn Filters(slug: String, current: View) -> impl IntoView {
    let navigate = use_navigate();
    let base = format!("/dashboard/niches/{slug}/questions");
    let go = StoredValue::new(move |next: View| {
        navigate(
            &format!("{base}{}", next.query()),
            NavigateOptions {
                scroll: false,
                ..NavigateOptions::default()
            },
        );
    });
    let search = RwSignal::new(current.search.clone());
    let c = StoredValue::new(current.clone());
    let on_urgency = move |ev| {
        let value = event_target_value(&ev);
        let mut next = c.get_value();
        next.urgency = (!value.is_empty()).then(|| Urgency::of(&value));
        go.with_value(|go| go(next));
    };
    let on_kind = move |ev| {
        let value = event_target_value(&ev);
        let mut next = c.get_value();
        next.kind = (!value.is_empty()).then(|| ExchangeKind::of(&value));
        go.with_value(|go| go(next));
    };
    let on_bounty = move |ev| {
        let value = event_target_value(&ev);
        let mut next = c.get_value();
        next.bounty = match value.as_str() {
            "yes" => Some(true),
            "no" => Some(false),
            _ => None,
        };
        go.with_value(|go| go(next));
    };
    let on_sort = move |ev| {
        let value = event_target_value(&ev);
        let mut next = c.get_value();
        next.sort = Some(QueueSort::of(&value));
        go.with_value(|go| go(next));
    };
    let on_search = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let mut next = c.get_value();
        next.search = search.get_untracked();
        go.with_value(|go| go(next));
    };
    let u = current
        .urgency
        .as_ref()
        .map(ToString::to_string)
        .unwrap_or_default();
    let k = current
        .kind
        .as_ref()
        .map(ToString::to_string)
        .unwrap_or_default();
    let b = match current.bounty {
        Some(true) => "yes",
        Some(false) => "no",
        None => "",
    };
    let s = current.sort().to_string();
    let refusal = current.search_refusal();
    let active = [
        current.urgency.is_some(),
        current.kind.is_some(),
        current.bounty.is_some(),
        current.sent_search().is_some(),
        current.sort() != QueueSort::Urgency,
    ]
    .into_iter()
    .filter(|on| *on)
    .count();
    let summary = match active {
        0 => "Filters and sort".to_owned(),
        1 => "Filters and sort (1 in use)".to_owned(),
        n => format!("Filters and sort ({n} in use)"),
    };
    // On a phone the filters fold away so the questions show in the first screen.
    let unfolded = !narrow() || refusal.is_some();
    let invalid = refusal.is_some();
    view! {
        <details class="filters-fold" open=unfolded>
        <summary>{summary}</summary>
        <form class="filters" role="search" aria-label="Filter the queue" on:submit=on_search>
            <label>"Urgency "
                <select name="urgency" on:change=on_urgency prop:value=u.clone()>
                    <option value="" selected=u.is_empty()>"Any"</option>
                    <option value="high" selected=u == "high">"High"</option>
                    <option value="normal" selected=u == "normal">"Normal"</option>
                    <option value="low" selected=u == "low">"Low"</option>
                </select>
            </label>
            <label>"Kind "
                <select name="kind" on:change=on_kind prop:value=k.clone()>
                    <option value="" selected=k.is_empty()>"Questions and tasks"</option>
                    <option value="question" selected=k == "question">"Questions"</option>
                    <option value="task" selected=k == "task">"Tasks"</option>
                </select>
            </label>
            <label>"Bounty "
                <select name="bounty" on:change=on_bounty prop:value=b>
                    <option value="" selected=b.is_empty()>"Any"</option>
                    <option value="yes" selected=b == "yes">"Has a bounty"</option>
                    <option value="no" selected=b == "no">"No bounty"</option>
                </select>
            </label>
            <label>"Sort "
                <select name="sort" on:change=on_sort prop:value=s.clone()>
                    <option value="urgency" selected=s == "urgency">"Most urgent, then expiring soonest"</option>
                    <option value="expiring" selected=s == "expiring">"Expiring soonest"</option>
                    <option value="newest" selected=s == "newest">"Newest"</option>
                    <option value="bounty" selected=s == "bounty">"Largest bounty"</option>
                </select>
            </label>
            <div class="search-row">
                <label class="grow">"Search titles "
                    <input type="search" name="q" maxlength="200" aria-invalid=invalid.to_string() aria-describedby=invalid.then_some("search-refusal") prop:value=search on:input=move |ev| search.set(event_target_value(&ev))/>
                </label>
                <button type="submit" class="secondary">"Search"</button>
            </div>
            {refusal.map(|why| view! { <p class="error field-error" id="search-refusal" role="alert">{why}</p> })}
        </form>
        </details>
    }
}

/// The keys, listed.
#[component]
fn KeyList(close: Callback<()>) -> impl IntoView {
    view! {
        <section class="key-list" role="dialog" aria-label="Keyboard keys">
            <h2>"Keyboard keys"</h2>
            <dl class="facts">
                <dt><kbd>"j"</kbd>" / "<kbd>"k"</kbd></dt><dd>"Next / previous question"</dd>
                <dt><kbd>"Enter"</kbd></dt><dd>"Open or close it"</dd>
                <dt><kbd>"a"</kbd></dt><dd>"Answer (goes to the answer's first field when nothing is chosen or written yet)"</dd>
                <dt><kbd>"d"</kbd></dt><dd>"Not enough context (10 s to undo)"</dd>
                <dt><kbd>"r"</kbd></dt><dd>"Ask the agent to research more"</dd>
                <dt><kbd>"Ctrl"</kbd>" / "<kbd>"⌘"</kbd>" + "<kbd>"Enter"</kbd></dt><dd>"Send the open answer (or the research request being written)"</dd>
                <dt><kbd>"Esc"</kbd></dt><dd>"Close the open question"</dd>
                <dt><kbd>"u"</kbd></dt><dd>"Undo the decline or research request waiting to be sent"</dd>
                <dt><kbd>"/"</kbd></dt><dd>"Search titles"</dd>
                <dt><kbd>"?"</kbd></dt><dd>"Show or hide these keys"</dd>
            </dl>
            <button type="button" class="secondary small" on:click=move |_| close.run(())>"Close"</button>
        </section>
    }
}

/// "Load more" while the server has more waiting questions, what the last load did (announced),
/// and why it failed, if it did.
#[component]
fn LoadMore(
    more: RwSignal<Option<String>>,
    said: RwSignal<Option<String>>,
    load: Action<(), Result<(), ApiError>>,
) -> impl IntoView {
    let busy = load.pending();
    view! {
        <div class="load-more">
            <Show when=move || more.with(Option::is_some)>
                <button type="button" class="secondary" disabled=busy aria-busy=move || busy.get().to_string() on:click=move |_| { load.dispatch(()); }>
                    {move || if busy.get() { "Loading…" } else { "Load more" }}
                </button>
            </Show>
            <p class="muted" role="status">{move || said.get()}</p>
            {move || load.value().get().and_then(Result::err).map(|err| view! {
                <p class="error" role="alert">{format!("Could not load more: {err}")}</p>
            })}
        </div>
    }
}

/// The banner that tells the truth about the live connection.
#[component]
fn LinkBanner(link: RwSignal<Link>, message: RwSignal<Option<String>>) -> impl IntoView {
    move || {
        match link.get() {
        Link::Dropped => Some(
            view! {
                <p class="banner" role="status">
                    "Connection lost. Reconnecting… New questions will show once it is back."
                </p>
            }
            .into_any(),
        ),
        Link::Ended => Some(
            view! {
                <p class="banner" role="status">
                    "Live updates stopped: "{message.get().unwrap_or_default()}" Reload to try again."
                </p>
            }
            .into_any(),
        ),
        Link::Connecting | Link::Live => None,
    }
    }
}

/// Recently answered questions.
#[component]
fn SettledList(settled: RwSignal<Vec<Settled>>, page_slug: StoredValue<String>) -> impl IntoView {
    view! {
        <section class="settled" aria-labelledby="settled-title">
            <h2 id="settled-title">"Settled"</h2>
            <Show
                when=move || !settled.with(Vec::is_empty)
                fallback=|| view! { <p class="muted">"Nothing answered yet."</p> }
            >
                <ul class="settled-list">
                    <For
                        each=move || settled.get()
                        key=|q| q.id.clone()
                        children=move |q| view! {
                            <li data-question-id=q.id.clone()>
                                <A href=page_slug.with_value(|slug| question_path(slug, &q.id))><bdi>{visible_controls(&q.title)}</bdi></A>
                                " "
                                {q.answered_at.map(|at| view! { <span class="muted">"answered "<TimeAgo at=at/></span> })}
                                {q.answers.iter().find(|a| a.review.is_some()).map(|a| {
                                    let review = a.review.clone().map(|r| ContributionStatus::of(&r)).unwrap_or(ContributionStatus::Pending);
                                    view! { " · "<span class="muted">{a.answered_by.clone()}</span>" "<span class=format!("badge status-{review}")>{review.to_string()}</span> }
                                })}
                            </li>
                        }
                    />
                </ul>
            </Show>
        </section>
    }
}
