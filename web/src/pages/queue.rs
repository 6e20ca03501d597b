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

mod filters;
mod keys;
mod live;
mod presence;

use std::collections::{HashMap, HashSet};

use leptos::Params;
use leptos::prelude::*;
use leptos_router::components::A;
use leptos_router::hooks::{use_params, use_query_map};
use leptos_router::params::Params;

use self::filters::{Filters, View, with_view};
use self::keys::{KeyList, close_focus_target};
use self::live::{Row, Rows, Tallies, show_tallies};
use self::presence::Answering;
use crate::api::{self, ApiError, ErrorCode};
use crate::components::countdown::TimeLeft;
use crate::components::drafts;
use crate::components::held::{Held, Sent};
use crate::components::loaded::Loaded;
use crate::components::notice::Notice;
use crate::components::question_card::{
    Acted, PriceBadge, QuestionCard, answering_words, shorten, visible_controls,
};
use crate::components::time_ago::{TimeAgo, exact};
use crate::components::title::page_title;
use crate::live::{self as live_feed, LiveEvent};
use crate::operations::{
    QueueChanges, QueueMore, QueuePage as QueueRead, queue_changes, queue_more, queue_page,
};
use crate::vocab::{ContributionStatus, MyPart, QuestionStatus, Urgency};

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

lazy_page! {
    /// The queue as a lazily loaded route: its code (and the card's) is fetched the first time
    /// someone opens a queue.
    QueueRoute => QueueRouteView
}

/// A fresh page (and subscription) for each niche and view.
#[component]
fn QueueRouteView() -> impl IntoView {
    let slug = niche_slug();
    let query = use_query_map();
    let view = Memo::new(move |_| query.with(View::from_query));
    move || view! { <QueuePage slug=slug.get() view=view.get()/> }
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

/// The question page's path.
pub fn question_path(slug: &str, id: &str) -> String {
    format!("/dashboard/niches/{slug}/questions/{id}")
}

/// The queue of one niche.
#[component]
fn QueuePage(slug: String, view: View) -> impl IntoView {
    let view = StoredValue::new(view);
    let merged = Rows::new(view);
    let rows = merged.list;
    let open = RwSignal::new(HashSet::<String>::new());
    let settled = RwSignal::new(Vec::<Settled>::new());
    let link = RwSignal::new(Link::Connecting);
    let link_message = RwSignal::new(None::<String>);
    let tallies = Tallies::new();
    let Tallies {
        counts,
        parts,
        matching,
    } = tallies;
    let niche_name = RwSignal::new(String::new());
    let answering = RwSignal::new(Answering::new());
    let show_keys = RwSignal::new(false);
    let held = Held::get();
    let read_once = StoredValue::new(false);
    let more = RwSignal::new(None::<String>);
    let more_said = RwSignal::new(None::<String>);

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
            show_tallies!(tallies, niche);
            let waiting = niche.waiting;
            let first_read = !read_once.get_value();
            read_once.set_value(true);
            more.set(
                waiting
                    .page_info
                    .end_cursor
                    .filter(|_| waiting.page_info.has_next_page),
            );
            merged.take_read(waiting.nodes, first_read);
            settled.set(niche.settled.nodes);
            Ok(Some(niche.name))
        }
    });

    // The heading's counts, re-read after live changes (one read in flight at a time).
    let recount = tallies.reader(slug.clone(), view);

    let on_change = move |change: queue_changes::QueueChangesQuestionQueue| {
        recount.run(());
        let read_again = merged.take_change(
            change.change,
            change.by,
            Question::from(change.question),
            open,
            more.with_untracked(Option::is_some),
        );
        if read_again {
            queue.refetch();
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
            let added = merged.take_page(page.nodes.into_iter().map(Question::from).collect());
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
    live_feed::subscribe::<QueueChanges>(
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
    presence::follow(slug, answering);

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
        recount.run(());
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
            recount.run(());
        }
    });

    // The page's frame depends on the niche's name only, so a re-read (after a live change or a
    // drop) merges into the rows without rebuilding them: focus and scroll stay where they are.
    let shell = Memo::new(move |_| queue.get());

    keys::listen(open, show_keys);

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
    answering: RwSignal<Answering>,
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
