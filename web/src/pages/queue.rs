//! `/dashboard/niches/:slug/questions`: the live waiting queue and "Settled".
//!
//! The page reads the queue once, then follows the `questionQueue` subscription: new questions
//! appear marked "new", questions settled elsewhere leave. When the connection drops, a banner
//! says so; on return the page re-reads everything, since what happened meanwhile was not sent.

use std::collections::HashSet;

use leptos::prelude::*;
use leptos::task::spawn_local;
use serde::Deserialize;
use serde_json::json;

use crate::api::{self, ApiError, QueueQuestion, SettledQuestion};
use crate::components::notice::Notice;
use crate::components::question_card::{Acted, QuestionCard};
use crate::components::time_ago::TimeAgo;
use crate::live::{self, LiveEvent};

/// A card on the page.
#[derive(Clone)]
struct Card {
    question: QueueQuestion,
    fresh: bool,
}

#[derive(Clone)]
enum Load {
    Loading,
    Ready,
    NoNiche,
    Failed(ApiError),
}

/// Where the live connection stands.
#[derive(Clone, Copy, PartialEq)]
enum Link {
    Connecting,
    Live,
    Dropped,
    Ended,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct QueueChange {
    change: String,
    question: QueueQuestion,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct QueueChangeData {
    question_queue: QueueChange,
}

fn urgency_rank(urgency: &str) -> u8 {
    match urgency {
        "high" => 0,
        "normal" => 1,
        _ => 2,
    }
}

fn sort_cards(cards: &mut [Card]) {
    cards.sort_by_key(|c| {
        (
            urgency_rank(&c.question.urgency),
            c.question.id.parse::<i64>().unwrap_or(i64::MAX),
        )
    });
}

/// The queue of one niche.
#[component]
pub fn QueuePage(slug: String) -> impl IntoView {
    let load = RwSignal::new(Load::Loading);
    let name = RwSignal::new(String::new());
    let cards = RwSignal::new(Vec::<Card>::new());
    let settled = RwSignal::new(Vec::<SettledQuestion>::new());
    let link = RwSignal::new(Link::Connecting);
    let link_message = RwSignal::new(None::<String>);
    let acted_notice = RwSignal::new(None::<(String, Option<String>)>);
    // What I acted on, with the research round I saw: it stays out of my view until it comes
    // back from research.
    let acted = StoredValue::new(HashSet::<(String, i64)>::new());
    let read_once = StoredValue::new(false);

    let read = {
        let slug = slug.clone();
        move || {
            let slug = slug.clone();
            spawn_local(async move {
                match api::queue_page(&slug).await {
                    Ok(Some(page)) => {
                        let first = !read_once.get_value();
                        read_once.set_value(true);
                        let known: HashSet<String> = cards
                            .get_untracked()
                            .iter()
                            .map(|c| c.question.id.clone())
                            .collect();
                        let previous_fresh: HashSet<String> = cards
                            .get_untracked()
                            .iter()
                            .filter(|c| c.fresh)
                            .map(|c| c.question.id.clone())
                            .collect();
                        let next = page
                            .waiting
                            .into_iter()
                            .filter(|q| {
                                !acted.with_value(|a| a.contains(&(q.id.clone(), q.research_round)))
                            })
                            .map(|q| Card {
                                fresh: !first
                                    && (!known.contains(&q.id) || previous_fresh.contains(&q.id)),
                                question: q,
                            })
                            .collect();
                        name.set(page.name);
                        cards.set(next);
                        settled.set(page.settled);
                        load.set(Load::Ready);
                    }
                    Ok(None) => load.set(Load::NoNiche),
                    Err(err) if err.code == "UNAUTHENTICATED" => crate::go_to_login(),
                    Err(err) => load.set(Load::Failed(err)),
                }
            });
        }
    };
    read();

    let changes_slug = slug.clone();
    let on_change = move |change: QueueChange| {
        let question = change.question;
        match change.change.as_str() {
            "REMOVED" => {
                cards.update(|list| list.retain(|c| c.question.id != question.id));
                // It may have been settled: "Settled" shows it.
                let slug = changes_slug.clone();
                spawn_local(async move {
                    if let Ok(Some(page)) = api::queue_page(&slug).await {
                        settled.set(page.settled);
                    }
                });
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

    let on_change = StoredValue::new(on_change);
    let resync = read.clone();
    live::subscribe(
        &format!(
            "subscription Queue($slug: String!) {{ questionQueue(nicheSlug: $slug) {{ change question {{ {} }} }} }}",
            api::CARD_FIELDS
        ),
        json!({ "slug": slug }),
        move |event| match event {
            LiveEvent::Connected => {
                let was_dropped = link.get_untracked() == Link::Dropped;
                link.set(Link::Live);
                link_message.set(None);
                // The first acknowledgement closes the gap between the first read and the
                // subscription; later ones follow a drop.
                if was_dropped || read_once.get_value() {
                    resync();
                }
            }
            LiveEvent::Next(data) => {
                if let Ok(data) = serde_json::from_value::<QueueChangeData>(data) {
                    on_change.with_value(|f| f(data.question_queue));
                }
            }
            LiveEvent::Failed(err) if err.code == "UNAUTHENTICATED" => crate::go_to_login(),
            LiveEvent::Failed(err) if err.code == "CONFLICT" => {}
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
        let points = result
            .contribution_status
            .map(|status| format!("{} points, {status}", result.points));
        acted_notice.set(Some((result.notice, points)));
    });

    view! {
        <main>
            <p><a href="/dashboard/niches">"← Your niches"</a></p>
            <Notice/>
            {move || acted_notice.get().map(|(notice, points)| view! {
                <p class="notice" role="status">{notice}</p>
                {points.map(|p| view! { <p class="points muted">{p}</p> })}
            })}
            <Show when=move || matches!(load.get(), Load::Ready)>
                <LinkBanner link=link message=link_message/>
            </Show>
            {move || match load.get() {
                Load::Loading => view! { <p class="muted">"Loading the queue…"</p> }.into_any(),
                Load::NoNiche => view! { <h1>"No such niche"</h1> }.into_any(),
                Load::Failed(err) if err.code == "FORBIDDEN" => view! {
                    <p class="error" role="alert">"Only the niche's active members see its questions: "{err.to_string()}"."</p>
                }.into_any(),
                Load::Failed(err) => view! { <p class="error" role="alert">{err.to_string()}</p> }.into_any(),
                Load::Ready => view! {
                    <h1>{move || name.get()}</h1>
                    <section class="waiting" aria-label="Waiting questions">
                        <Show
                            when=move || !cards.with(Vec::is_empty)
                            fallback=|| view! { <p class="empty">"Nothing is waiting. New questions appear here."</p> }
                        >
                            <For
                                each=move || cards.get()
                                key=|card| (card.question.id.clone(), card.question.research_round, card.question.status.clone())
                                children=move |card| view! { <QuestionCard question=card.question fresh=card.fresh on_done=on_done/> }
                            />
                        </Show>
                    </section>
                    <Settled settled=settled/>
                }.into_any(),
            }}
        </main>
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
fn Settled(settled: RwSignal<Vec<SettledQuestion>>) -> impl IntoView {
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
