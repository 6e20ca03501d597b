//! `/dashboard/niches/:slug/questions`: the live waiting queue and "Settled".
//!
//! The page reads the first 50 waiting questions, then follows the `questionQueue` subscription
//! on the app's live connection: new questions appear marked "new", questions settled elsewhere
//! leave. "Load more" reads the next page after the last card's cursor; live changes merge into
//! every card loaded, whichever page it came from. When the connection drops, a banner says so;
//! on return the page re-reads as many questions as it had loaded, since what happened meanwhile
//! was not sent.

use std::collections::HashSet;

use leptos::Params;
use leptos::prelude::*;
use leptos_router::components::A;
use leptos_router::hooks::use_params;
use leptos_router::params::Params;

use crate::api::{self, ApiError, ErrorCode};
use crate::components::loaded::Loaded;
use crate::components::notice::Notice;
use crate::components::question_card::{Acted, QuestionCard};
use crate::components::time_ago::TimeAgo;
use crate::live::{self, LiveEvent};
use crate::operations::{
    QueueChanges, QueueMore, QueuePage as QueueRead, queue_changes, queue_more, queue_page,
};
use crate::vocab::{ContributionStatus, QueueChangeKind, Urgency};

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

/// The queue route: a fresh page (and subscription) for each niche.
#[component]
pub fn QueueRoute() -> impl IntoView {
    let slug = niche_slug();
    move || view! { <QueuePage slug=slug.get()/> }
}

/// A card on the page.
#[derive(Clone)]
struct Card {
    question: Question,
    fresh: bool,
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

/// Where a question sorts in the waiting queue: most urgent first, then oldest (the server's
/// order, so the client's merge and the server's cursor agree).
fn queue_key(question: &Question) -> (u8, i64) {
    (
        Urgency::of(&question.urgency).rank(),
        question.id.parse::<i64>().unwrap_or(i64::MAX),
    )
}

fn sort_cards(cards: &mut [Card]) {
    cards.sort_by_key(|c| queue_key(&c.question));
}

/// The question page's path.
pub fn question_path(slug: &str, id: &str) -> String {
    format!("/dashboard/niches/{slug}/questions/{id}")
}

/// The queue of one niche.
#[component]
pub fn QueuePage(slug: String) -> impl IntoView {
    let cards = RwSignal::new(Vec::<Card>::new());
    let settled = RwSignal::new(Vec::<Settled>::new());
    let link = RwSignal::new(Link::Connecting);
    let link_message = RwSignal::new(None::<String>);
    let acted_notice = RwSignal::new(None::<(String, Option<String>)>);
    // What I acted on, with the research round I saw: it stays out of my view until it comes
    // back from research.
    let acted = StoredValue::new(HashSet::<(String, i64)>::new());
    let read_once = StoredValue::new(false);
    // The cursor after the last question loaded, while the server has more.
    let more = RwSignal::new(None::<String>);
    let more_said = RwSignal::new(None::<String>);

    // The read merges into the cards the page holds, so a re-read after a drop marks what
    // arrived meanwhile as new. It yields the niche's name, or `None` for no such niche.
    let read_slug = slug.clone();
    let queue = LocalResource::new(move || {
        let slug = read_slug.clone();
        async move {
            // As many as are loaded, so a re-read does not take "Load more" back.
            let loaded = cards.with_untracked(Vec::len).clamp(PAGE, MAX_READ);
            let first = i64::try_from(loaded).unwrap_or(50);
            let data = api::run::<QueueRead>(queue_page::Variables { slug, first }).await?;
            let Some(niche) = data.niche else {
                return Ok::<_, ApiError>(None);
            };
            let waiting = niche.waiting;
            let window_end = waiting.nodes.last().map(queue_key);
            let first_read = !read_once.get_value();
            read_once.set_value(true);
            let (known, previous_fresh) = cards.with_untracked(|list| {
                let known: HashSet<String> = list.iter().map(|c| c.question.id.clone()).collect();
                let fresh: HashSet<String> = list
                    .iter()
                    .filter(|c| c.fresh)
                    .map(|c| c.question.id.clone())
                    .collect();
                (known, fresh)
            });
            // Cards loaded past this read's window (more than one read may ask for) stay, with the
            // cursor that follows them; otherwise the cursor is this read's.
            let tail: Vec<Card> = match (waiting.page_info.has_next_page, window_end) {
                (true, Some(end)) => cards.with_untracked(|list| {
                    list.iter()
                        .filter(|c| queue_key(&c.question) > end)
                        .cloned()
                        .collect()
                }),
                _ => Vec::new(),
            };
            if tail.is_empty() {
                more.set(
                    waiting
                        .page_info
                        .end_cursor
                        .filter(|_| waiting.page_info.has_next_page),
                );
            }
            let mut next: Vec<Card> = waiting
                .nodes
                .into_iter()
                .filter(|q| !acted.with_value(|a| a.contains(&(q.id.clone(), q.research_round))))
                .map(|q| Card {
                    fresh: !first_read
                        && (!known.contains(&q.id) || previous_fresh.contains(&q.id)),
                    question: q,
                })
                .collect();
            next.extend(tail);
            cards.set(next);
            settled.set(niche.settled.nodes);
            Ok(Some(niche.name))
        }
    });

    let on_change = move |change: queue_changes::QueueChangesQuestionQueue| {
        let question = Question::from(change.question);
        match change.change {
            QueueChangeKind::Removed => {
                cards.update(|list| list.retain(|c| c.question.id != question.id));
                // It may have been settled: "Settled" shows it.
                queue.refetch();
            }
            _ => {
                if acted.with_value(|a| a.contains(&(question.id.clone(), question.research_round)))
                {
                    return;
                }
                cards.update(|list| {
                    match list.iter_mut().find(|c| c.question.id == question.id) {
                        Some(card) => card.question = question,
                        // New to this page: an arrival, or back from research.
                        None => list.push(Card {
                            question,
                            fresh: true,
                        }),
                    }
                    sort_cards(list);
                });
            }
        }
    };

    // "Load more": the page after the last card, merged in (a card that arrived live meanwhile
    // is not shown twice).
    let more_slug = slug.clone();
    let load_more = Action::new_local(move |_: &()| {
        let slug = more_slug.clone();
        let after = more.get_untracked();
        async move {
            let Some(after) = after else {
                return Ok::<_, ApiError>(());
            };
            let data = api::run::<QueueMore>(queue_more::Variables { slug, after }).await?;
            let Some(niche) = data.niche else {
                return Ok(());
            };
            let page = niche.waiting;
            let mut added = 0;
            cards.update(|list| {
                for q in page.nodes.into_iter().map(Question::from) {
                    let seen = list.iter().any(|c| c.question.id == q.id)
                        || acted.with_value(|a| a.contains(&(q.id.clone(), q.research_round)));
                    if !seen {
                        added += 1;
                        list.push(Card {
                            question: q,
                            fresh: false,
                        });
                    }
                }
                sort_cards(list);
            });
            more.set(
                page.page_info
                    .end_cursor
                    .filter(|_| page.page_info.has_next_page),
            );
            more_said.set(Some(match (added, more.get_untracked().is_some()) {
                (1, true) => "1 more question loaded.".to_owned(),
                (n, true) => format!("{n} more questions loaded."),
                (1, false) => "1 more question loaded; that is every waiting question.".to_owned(),
                (n, false) => format!("{n} more questions loaded; that is every waiting question."),
            }));
            Ok(())
        }
    });

    let page_slug = StoredValue::new(slug.clone());
    live::subscribe::<QueueChanges>(
        queue_changes::Variables { slug },
        move |event| match event {
            LiveEvent::Connected => {
                let was_dropped = link.get_untracked() == Link::Dropped;
                link.set(Link::Live);
                link_message.set(None);
                // The first subscription closes the gap between the first read and itself; later
                // ones follow a drop.
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

    let on_done = Callback::new(move |(id, round, result): Acted| {
        acted.update_value(|a| {
            a.insert((id.clone(), round));
        });
        cards.update(|list| list.retain(|c| c.question.id != id));
        let points = result.contribution_status.map(|status| {
            format!(
                "{} points, {}",
                result.points,
                ContributionStatus::of(&status)
            )
        });
        acted_notice.set(Some((result.notice, points)));
    });

    let on_dismissed = Callback::new(move |id: String| {
        cards.update(|list| list.retain(|c| c.question.id != id));
        acted_notice.set(Some((
            "Dismissed. Nobody will be asked about it again.".to_owned(),
            None,
        )));
    });

    view! {
        <main>
            <p><A href="/dashboard/niches">"← Your niches"</A></p>
            <Notice/>
            // What the last action did stays in view (it sticks to the top while the person is
            // deep in the queue) and is announced.
            <div class="acted" aria-live="polite">
                {move || acted_notice.get().map(|(notice, points)| view! {
                    <p class="notice" role="status">{notice}</p>
                    {points.map(|p| view! { <p class="points muted">{p}</p> })}
                })}
            </div>
            <Loaded loading="Loading the queue…" forbidden="Only the niche's active members see its questions">
                {move || queue.get().map(|result| result.map(|name| match name {
                    None => view! { <h1>"No such niche"</h1> }.into_any(),
                    Some(name) => view! {
                        <LinkBanner link=link message=link_message/>
                        <h1>{name}</h1>
                        <p class="links">
                            <A href=page_slug.with_value(|slug| crate::pages::knowledge::knowledge_path(slug))>"Knowledge"</A>
                        </p>
                        <section class="waiting" aria-label="Waiting questions">
                            <Show
                                when=move || !cards.with(Vec::is_empty)
                                fallback=|| view! { <p class="empty">"Nothing is waiting. New questions appear here."</p> }
                            >
                                <For
                                    each=move || cards.get()
                                    key=|card| (card.question.id.clone(), card.question.research_round, card.question.status.clone())
                                    children=move |card| {
                                        let page = page_slug.with_value(|slug| question_path(slug, &card.question.id));
                                        view! { <QuestionCard question=card.question page=page fresh=card.fresh on_done=on_done on_dismissed=on_dismissed/> }
                                    }
                                />
                            </Show>
                            <LoadMore more=more said=more_said load=load_more/>
                        </section>
                        <SettledList settled=settled/>
                    }.into_any(),
                }))}
            </Loaded>
        </main>
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
fn SettledList(settled: RwSignal<Vec<Settled>>) -> impl IntoView {
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
                        children=|q| view! {
                            <li data-question-id=q.id.clone()>
                                {q.title}
                                " "
                                {q.answered_at.map(|at| view! { <span class="muted">"answered "<TimeAgo at=at/></span> })}
                            </li>
                        }
                    />
                </ul>
            </Show>
        </section>
    }
}
