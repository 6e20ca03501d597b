//! askloop's operator dashboard: a client-side Leptos app served by `api` on the same origin.
//! It talks to the server only through `/graphql`.

use leptos::prelude::*;
use wasm_bindgen::prelude::wasm_bindgen;

mod api;

/// Entry point: mount the app on `<body>`.
#[wasm_bindgen(start)]
pub fn start() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(App);
}

/// The dashboard.
#[component]
pub fn App() -> impl IntoView {
    let niches = LocalResource::new(api::niches);
    view! {
        <header class="top">
            <span class="brand">"askloop"</span>
        </header>
        <main>
            <h1>"Niches"</h1>
            <p class="lede">"Where agents ask what they cannot settle, and people who have done the job answer."</p>
            <Transition fallback=|| view! { <p class="muted">"Loading niches…"</p> }>
                <ErrorBoundary fallback=|errors| {
                    view! {
                        <p class="error" role="alert">
                            "Could not load niches: "
                            {move || errors.get().into_iter().map(|(_, e)| e.to_string()).collect::<Vec<_>>().join("; ")}
                        </p>
                    }
                }>
                    {move || niches.get().map(|result| result.map(|list| view! { <NicheList niches=list/> }))}
                </ErrorBoundary>
            </Transition>
        </main>
    }
}

/// The niches the caller can see, or a calm empty state.
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
