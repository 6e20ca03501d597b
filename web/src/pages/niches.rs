//! `/dashboard/niches`: "Your agent needs you", then a card per niche, then the ladder. Signed
//! out, the niches taking questions and a way to sign in.

use leptos::prelude::*;

use crate::api;

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
    let awaiting = LocalResource::new(api::awaiting_me);
    let cards = viewer
        .memberships
        .into_iter()
        .map(|m| view! { <MembershipCard membership=m/> })
        .collect_view();
    view! {
        <p class="muted">"Signed in as "<strong>{viewer.user.handle}</strong></p>
        <section class="awaiting" aria-labelledby="awaiting-title">
            <h1 id="awaiting-title">"Your agent needs you"</h1>
            <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
                <ErrorBoundary fallback=|_| view! { <p class="error" role="alert">"Could not load your questions."</p> }>
                    {move || awaiting.get().map(|result| result.map(|list| {
                        if list.is_empty() {
                            view! { <p class="empty">"Nothing is waiting for you. Your agent will ask when it is stuck."</p> }.into_any()
                        } else {
                            view! {
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
                            }.into_any()
                        }
                    }))}
                </ErrorBoundary>
            </Transition>
        </section>
        <section class="cards">{cards}</section>
    }
}

#[component]
fn MembershipCard(membership: api::Membership) -> impl IntoView {
    let href = format!("/dashboard/niches/{}/questions", membership.niche.slug);
    let share = format!("{}%", membership.share_bps as f64 / 100.0);
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
            <a href=href>"Open the queue"</a>
        </article>
    }
}
