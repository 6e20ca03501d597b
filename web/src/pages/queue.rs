//! `/dashboard/niches/:slug/questions`: the waiting queue with a card per question.

use leptos::prelude::*;

use crate::api;
use crate::components::notice::Notice;
use crate::components::question_card::QuestionCard;

/// The queue of one niche.
#[component]
pub fn QueuePage(slug: String) -> impl IntoView {
    let back_to = format!("/dashboard/niches/{slug}/questions");
    let queue = LocalResource::new(move || {
        let slug = slug.clone();
        async move { api::waiting_questions(&slug).await }
    });
    view! {
        <main>
            <p><a href="/dashboard/niches">"← Your niches"</a></p>
            <Notice/>
            <Transition fallback=|| view! { <p class="muted">"Loading the queue…"</p> }>
                <ErrorBoundary fallback=|errors| view! {
                    <p class="error" role="alert">
                        {move || errors.get().into_iter().map(|(_, e)| e.to_string()).collect::<Vec<_>>().join("; ")}
                    </p>
                }>
                    {move || {
                        let back_to = back_to.clone();
                        queue.get().map(|result| match result {
                            Err(err) if err.code == "UNAUTHENTICATED" => {
                                crate::go_to_login();
                                Ok(view! { <p class="muted">"Signing in…"</p> }.into_any())
                            }
                            Err(err) => Err(err),
                            Ok(None) => Ok(view! { <h1>"No such niche"</h1> }.into_any()),
                            Ok(Some((name, questions))) => Ok(view! {
                                <h1>{name}</h1>
                                {if questions.is_empty() {
                                    view! { <p class="empty">"Nothing is waiting. New questions appear here."</p> }.into_any()
                                } else {
                                    questions.into_iter().map(|q| {
                                        let back_to = back_to.clone();
                                        view! { <QuestionCard question=q back_to=back_to/> }
                                    }).collect_view().into_any()
                                }}
                            }.into_any()),
                        })
                    }}
                </ErrorBoundary>
            </Transition>
        </main>
    }
}
