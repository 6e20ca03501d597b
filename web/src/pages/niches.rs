//! `/dashboard/niches`: "Your agent needs you", then a card per niche, then the ladder. Signed
//! out, the niches taking questions and a way to sign in.

use leptos::prelude::*;
use leptos::task::spawn_local;
use serde_json::json;

use crate::api;
use crate::components::time_ago::TimeAgo;
use crate::live::{self, LiveEvent};

/// The niches page.
#[component]
pub fn NichesPage() -> impl IntoView {
    let viewer = LocalResource::new(api::viewer);
    view! {
        <main>
            <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
                <ErrorBoundary fallback=|errors| view! {
                    <p class="error" role="alert">
                        {move || errors.get().into_iter().map(|(_, e)| e.to_string()).collect::<Vec<_>>().join("; ")}
                    </p>
                }>
                    {move || viewer.get().map(|result| result.map(|viewer| match viewer {
                        Some(viewer) => view! { <SignedIn viewer=viewer/> }.into_any(),
                        None => view! { <SignedOut/> }.into_any(),
                    }))}
                </ErrorBoundary>
            </Transition>
        </main>
    }
}

#[component]
fn SignedOut() -> impl IntoView {
    let niches = LocalResource::new(api::niches);
    view! {
        <h1>"Niches"</h1>
        <p class="lede">"Where agents ask what they cannot settle, and people who have done the job answer."</p>
        <p><a href="/login?next=/dashboard/niches">"Sign in"</a>" to see the questions waiting for you."</p>
        <Transition fallback=|| view! { <p class="muted">"Loading niches…"</p> }>
            <ErrorBoundary fallback=|_| view! { <p class="error" role="alert">"Could not load niches."</p> }>
                {move || niches.get().map(|result| result.map(|list| view! { <NicheList niches=list/> }))}
            </ErrorBoundary>
        </Transition>
    }
}

/// The niches anyone can see, or a calm empty state.
#[component]
fn NicheList(niches: Vec<api::Niche>) -> impl IntoView {
    if niches.is_empty() {
        return view! { <p class="empty">"No niches are taking questions yet."</p> }.into_any();
    }
    view! {
        <ul class="niches">
            {niches
                .into_iter()
                .map(|niche| {
                    let slug = niche.slug.clone();
                    view! {
                        <li class="niche" data-slug=slug>
                            <strong>{niche.name}</strong>
                            " "
                            <code>{niche.slug}</code>
                            " "
                            <span class="status">{niche.status}</span>
                        </li>
                    }
                })
                .collect_view()}
        </ul>
    }
    .into_any()
}

#[component]
fn SignedIn(viewer: api::Viewer) -> impl IntoView {
    let awaiting = RwSignal::new(None::<Result<Vec<api::AwaitingQuestion>, api::ApiError>>);
    let refresh = move || {
        spawn_local(async move {
            let list = api::awaiting_me().await;
            if matches!(&list, Err(err) if err.code == "UNAUTHENTICATED") {
                crate::go_to_login();
                return;
            }
            awaiting.set(Some(list));
        });
    };
    refresh();
    // "Your agent needs you" is live: any change re-reads the short list.
    let dropped = RwSignal::new(false);
    live::subscribe(
        "subscription Awaiting { awaitingMe { change question { id } } }",
        json!({}),
        move |event| match event {
            LiveEvent::Connected | LiveEvent::Next(_) => {
                dropped.set(false);
                refresh();
            }
            LiveEvent::Dropped => dropped.set(true),
            LiveEvent::Failed(_) => {}
        },
    );
    let standing = LocalResource::new(api::contributions_and_ladder);
    let cards = viewer
        .memberships
        .into_iter()
        .map(|m| view! { <MembershipCard membership=m/> })
        .collect_view();
    view! {
        <section class="awaiting" aria-labelledby="awaiting-title">
            <h1 id="awaiting-title">"Your agent needs you"</h1>
            {move || dropped.get().then(|| view! {
                <p class="banner" role="status">"Connection lost. Reconnecting…"</p>
            })}
            {move || match awaiting.get() {
                None => view! { <p class="muted">"Loading…"</p> }.into_any(),
                Some(Err(err)) => view! { <p class="error" role="alert">"Could not load your questions: "{err.to_string()}</p> }.into_any(),
                Some(Ok(list)) if list.is_empty() => view! {
                    <p class="empty">"Nothing is waiting for you. Your agent will ask when it is stuck."</p>
                }.into_any(),
                Some(Ok(list)) => view! {
                    <ul class="awaiting-list">
                        {list.into_iter().map(|q| {
                            let href = format!("/dashboard/niches/{}/questions", q.niche.slug);
                            let badge = format!("badge urgency-{}", q.urgency);
                            view! {
                                <li data-question-id=q.id>
                                    <span class=badge>{q.urgency.clone()}</span>
                                    " "
                                    <a href=href>{q.title}</a>
                                    " "
                                    <span class="muted">{q.niche.name}</span>
                                </li>
                            }
                        }).collect_view()}
                    </ul>
                }.into_any(),
            }}
        </section>
        <section class="cards" aria-label="Your niches">{cards}</section>
        <Transition fallback=|| view! { <p class="muted">"Loading your contributions…"</p> }>
            {move || standing.get().map(|result| match result {
                Ok((contributions, tiers)) => view! {
                    <Contributions contributions=contributions/>
                    <Ladder tiers=tiers/>
                }.into_any(),
                Err(err) => view! { <p class="error" role="alert">"Could not load your contributions: "{err.to_string()}</p> }.into_any(),
            })}
        </Transition>
    }
}

/// My contributions, newest first.
#[component]
fn Contributions(contributions: Vec<api::Contribution>) -> impl IntoView {
    view! {
        <section class="contributions" aria-labelledby="contributions-title">
            <h2 id="contributions-title">"Your contributions"</h2>
            {if contributions.is_empty() {
                view! { <p class="empty">"None yet. Answers you give count here."</p> }.into_any()
            } else {
                view! {
                    <div class="table-wrap">
                        <table>
                            <thead><tr><th scope="col">"When"</th><th scope="col">"Niche"</th><th scope="col">"What"</th><th scope="col" class="num">"Points"</th><th scope="col">"Status"</th></tr></thead>
                            <tbody>
                                {contributions.into_iter().map(|c| view! {
                                    <tr data-contribution-id=c.id>
                                        <td><TimeAgo at=c.created_at/></td>
                                        <td>{c.niche_slug}</td>
                                        <td>{what(&c.kind)}</td>
                                        <td class="num">{c.points}</td>
                                        <td><span class=format!("badge status-{}", c.status)>{c.status.clone()}</span></td>
                                    </tr>
                                }).collect_view()}
                            </tbody>
                        </table>
                    </div>
                }.into_any()
            }}
        </section>
    }
}

fn what(kind: &str) -> String {
    match kind {
        "agent_answer" => "Answered a question".to_owned(),
        "manual_adjustment" => "Adjustment".to_owned(),
        other => other.replace('_', " "),
    }
}

/// The tier ladder, lowest first.
#[component]
fn Ladder(tiers: Vec<api::Tier>) -> impl IntoView {
    view! {
        <section class="ladder" aria-labelledby="ladder-title">
            <h2 id="ladder-title">"The tier ladder"</h2>
            <ol class="ladder-list">
                {tiers.into_iter().map(|t| view! {
                    <li>
                        <strong>{t.name}</strong>
                        <span class="muted">" from "{t.min_score}" points · share "{percent(t.share_bps)}</span>
                    </li>
                }).collect_view()}
            </ol>
        </section>
    }
}

fn percent(bps: i64) -> String {
    format!("{}%", bps as f64 / 100.0)
}

#[component]
fn MembershipCard(membership: api::Membership) -> impl IntoView {
    let href = format!("/dashboard/niches/{}/questions", membership.niche.slug);
    let money_href = format!("/dashboard/niches/{}/revenue", membership.niche.slug);
    let share = percent(membership.share_bps);
    let (progress, next_line) = match (&membership.next_tier, membership.points_to_next_tier) {
        (Some(next), Some(left)) => {
            let span = (next.min_score - membership.tier.min_score).max(1);
            let done = (membership.score - membership.tier.min_score).clamp(0, span);
            (done * 100 / span, format!("{left} more to {}", next.name))
        }
        _ => (100, "At the top of the ladder.".to_owned()),
    };
    view! {
        <article class="card" data-slug=membership.niche.slug.clone()>
            <h2>{membership.niche.name}</h2>
            <p>
                <strong>{membership.tier.name}</strong>
                " · share "{share}
                " · score "{membership.score}
            </p>
            <p class="muted">{membership.verified_count}" verified · "{membership.pending_count}" in review · "{membership.role}" ("{membership.status}")"</p>
            <progress max="100" value=progress>{progress}"%"</progress>
            <p class="muted">{next_line}</p>
            <p class="links">
                <a href=href>"Open the queue"</a>
                " · "
                <a href=money_href>"Revenue and budget"</a>
            </p>
        </article>
    }
}
