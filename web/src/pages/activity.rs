//! `/dashboard/activity`: "My activity" — what I answered, declined and sent back, newest
//! first, each with its question's state now and my answer's review verdict, linked to the
//! question's page. A lazily loaded route.

use leptos::prelude::*;
use leptos_router::components::A;

use crate::api::{self, ApiError};
use crate::components::loaded::Loaded;
use crate::components::question_card::visible_controls;
use crate::components::time_ago::TimeAgo;
use crate::components::title::page_title;
use crate::operations::{MyActivity, my_activity};
use crate::pages::queue::question_path;
use crate::vocab::{AnswerKind, ContributionStatus, ExchangeKind, QuestionStatus};

type Item = my_activity::MyActivityMyActivityNodes;

lazy_page! {
    /// The page as a lazily loaded route.
    ActivityRoute => ActivityPage
}

/// What I did, in words.
fn did(kind: &AnswerKind, task: bool) -> &'static str {
    match kind {
        AnswerKind::Answered if task => "Completed",
        AnswerKind::Answered => "Answered",
        AnswerKind::InsufficientContext => "Declined: not enough context",
        AnswerKind::NeedsResearch => "Sent back for research",
        AnswerKind::FromKnowledge => "Answered from knowledge",
        AnswerKind::Other(_) => "Acted",
    }
}

/// Where the question is now, in words.
fn state(status: &QuestionStatus) -> &'static str {
    match status {
        QuestionStatus::Open => "waiting",
        QuestionStatus::Researching => "with the agent for research",
        QuestionStatus::Answered => "settled",
        QuestionStatus::Dismissed => "dismissed",
        QuestionStatus::Expired => "expired",
        QuestionStatus::Other(_) => "unknown",
    }
}

#[component]
fn ActivityPage() -> impl IntoView {
    page_title(|| "My activity".to_owned());
    let items = RwSignal::new(Vec::<Item>::new());
    let after = RwSignal::new(None::<String>);
    let more = RwSignal::new(false);
    let first = LocalResource::new(move || async move {
        let data = api::run::<MyActivity>(my_activity::Variables { after: None }).await?;
        items.set(data.my_activity.nodes);
        after.set(data.my_activity.page_info.end_cursor);
        more.set(data.my_activity.page_info.has_next_page);
        Ok::<_, ApiError>(())
    });
    let load_more = Action::new_local(move |_: &()| {
        let cursor = after.get_untracked();
        async move {
            let data = api::run::<MyActivity>(my_activity::Variables { after: cursor }).await?;
            items.update(|list| list.extend(data.my_activity.nodes));
            after.set(data.my_activity.page_info.end_cursor);
            more.set(data.my_activity.page_info.has_next_page);
            Ok::<_, ApiError>(())
        }
    });
    view! {
        <main class="activity-page">
            <p><A href="/dashboard/niches">"← Your niches"</A></p>
            <h1>"My activity"</h1>
            <p class="lede">"What you answered, declined and sent back, with where each question is now and how your answer was reviewed."</p>
            <Loaded loading="Loading your activity…">
                {move || first.get().map(|result| result.map(|()| view! {
                    <Show when=move || !items.with(Vec::is_empty) fallback=|| view! { <p class="empty">"Nothing yet: what you answer, decline or send back shows here."</p> }>
                        <ol class="activity-list">
                            <For each=move || items.get() key=|item| item.answer.id.clone() children=|item| view! { <ActivityRow item=item/> }/>
                        </ol>
                    </Show>
                    <Show when=move || more.get()>
                        <button type="button" class="secondary" disabled=load_more.pending() on:click=move |_| { load_more.dispatch(()); }>"Load more"</button>
                    </Show>
                    {move || load_more.value().get().and_then(Result::err).map(|err| view! {
                        <p class="error" role="alert">{format!("Could not load more: {err}")}</p>
                    })}
                }))}
            </Loaded>
        </main>
    }
}

#[component]
fn ActivityRow(item: Item) -> impl IntoView {
    let q = item.question;
    let a = item.answer;
    let task = q.kind == ExchangeKind::Task;
    let href = question_path(&item.niche_slug, &q.id);
    let status = QuestionStatus::of(&q.status);
    view! {
        <li data-answer-id=a.id.clone() data-question-id=q.id.clone()>
            <p>
                <strong>{did(&a.kind, task)}</strong>" · "
                <A href=href><bdi>{visible_controls(&q.title)}</bdi></A>
            </p>
            <p class="muted">
                <TimeAgo at=a.created_at/>" · "<span class="niche-slug">{item.niche_slug.clone()}</span>
                " · the question is "<span class=format!("badge status-{status}")>{state(&status)}</span>
                {a.review.map(|r| {
                    let r = ContributionStatus::of(&r);
                    view! { " · your answer: "<span class=format!("badge status-{r}")>{r.to_string()}</span> }
                })}
            </p>
            {a.option_label.map(|l| view! { <p class="answer-words">"Chosen: "<bdi>{visible_controls(&l)}</bdi></p> })}
            {a.body.filter(|b| !b.trim().is_empty()).map(|b| view! { <p class="answer-words"><bdi>{visible_controls(&crate::components::question_card::shorten(&b, 300))}</bdi></p> })}
        </li>
    }
}
