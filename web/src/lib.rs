//! askloop's operator dashboard: a client-side Leptos app served by `api` on the same origin.
//! It talks to the server only through `/graphql` (and, for answering, the same form posts a
//! page without JavaScript would use).
//!
//! Pages are chosen from the path at load; every link is a real URL, so deep links and reloads
//! land on the same page.

use leptos::prelude::*;
use wasm_bindgen::prelude::wasm_bindgen;

mod api;
mod components;
mod live;
mod pages;

/// Entry point: mount the app on `<body>`.
#[wasm_bindgen(start)]
pub fn start() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(App);
}

/// The page a path shows.
enum Page {
    Login,
    Niches,
    Queue(String),
    NicheMoney(String),
    MyRevenue,
    Admin,
    NotFound,
}

fn page_for(path: &str) -> Page {
    let parts: Vec<&str> = path
        .trim_matches('/')
        .split('/')
        .filter(|p| !p.is_empty())
        .collect();
    match parts.as_slice() {
        [] | ["dashboard"] | ["dashboard", "niches"] => Page::Niches,
        ["login"] => Page::Login,
        ["admin", ..] => Page::Admin,
        ["dashboard", "niches", slug, "questions"] => Page::Queue((*slug).to_owned()),
        ["dashboard", "niches", slug, "revenue"] => Page::NicheMoney((*slug).to_owned()),
        ["dashboard", "revenue"] | ["dashboard", "payouts"] => Page::MyRevenue,
        _ => Page::NotFound,
    }
}

/// The path and query of the current page.
pub fn current_location() -> (String, String) {
    let location = window().location();
    (
        location.pathname().unwrap_or_default(),
        location.search().unwrap_or_default(),
    )
}

/// A query-string parameter of the current page.
pub fn query_param(name: &str) -> Option<String> {
    let (_, search) = current_location();
    web_sys::UrlSearchParams::new_with_str(&search)
        .ok()
        .and_then(|params| params.get(name))
        .filter(|v| !v.is_empty())
}

/// Go to `path` (a full load, so the page starts fresh).
pub fn go_to(path: &str) {
    let _ = window().location().assign(path);
}

/// Send a signed-out visitor to the login page, coming back here afterwards.
pub fn go_to_login() {
    let (path, search) = current_location();
    let next = format!("{path}{search}");
    let query = web_sys::UrlSearchParams::new().ok();
    let encoded = query
        .map(|q| {
            q.append("next", &next);
            String::from(q.to_string())
        })
        .unwrap_or_default();
    go_to(&format!("/login?{encoded}"));
}

/// The dashboard.
#[component]
pub fn App() -> impl IntoView {
    components::time_ago::provide_clock();
    let (path, _) = current_location();
    let on_login_page = matches!(page_for(&path), Page::Login);
    let page = match page_for(&path) {
        Page::Login => view! { <pages::login::LoginPage/> }.into_any(),
        Page::Niches => view! { <pages::niches::NichesPage/> }.into_any(),
        Page::Queue(slug) => view! { <pages::queue::QueuePage slug=slug/> }.into_any(),
        Page::NicheMoney(slug) => view! { <pages::revenue::NicheMoneyPage slug=slug/> }.into_any(),
        Page::MyRevenue => view! { <pages::revenue::MyRevenuePage/> }.into_any(),
        Page::Admin => view! { <pages::admin::AdminPage/> }.into_any(),
        Page::NotFound => view! {
            <main><h1>"Not found"</h1><p><a href="/dashboard/niches">"Back to your niches"</a></p></main>
        }
        .into_any(),
    };
    view! {
        <header class="top">
            <a class="brand" href="/dashboard/niches">"askloop"</a>
            {(!on_login_page).then(|| view! { <Account/> })}
        </header>
        {page}
    }
}

/// Who is signed in, with the way out; or the way in.
#[component]
fn Account() -> impl IntoView {
    let viewer = LocalResource::new(api::viewer);
    let (error, set_error) = signal(None::<String>);
    let sign_out = move |_| {
        leptos::task::spawn_local(async move {
            match api::logout().await {
                Ok(()) => go_to("/login"),
                Err(err) => set_error.set(Some(err.to_string())),
            }
        });
    };
    view! {
        <nav class="account" aria-label="Account">
            {move || viewer.get().map(|result| match result {
                Ok(Some(viewer)) => view! {
                    <a href="/dashboard/niches">"Niches"</a>
                    <a href="/dashboard/revenue">"Revenue"</a>
                    {viewer.user.is_admin.then(|| view! { <a href="/admin">"Admin"</a> })}
                    <span class="who">{viewer.user.handle}</span>
                    <button type="button" class="secondary small" on:click=sign_out>"Sign out"</button>
                }.into_any(),
                _ => view! { <a href="/login?next=/dashboard/niches">"Sign in"</a> }.into_any(),
            })}
            {move || error.get().map(|e| view! { <span class="error" role="alert">{e}</span> })}
        </nav>
    }
}
