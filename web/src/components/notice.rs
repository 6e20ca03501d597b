//! The line that says what just happened (`?notice=`) or what went wrong (`?error=`).

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

/// Shows the page's `notice` or `error` query parameter, if any.
#[component]
pub fn Notice() -> impl IntoView {
    let query = use_query_map();
    let param = move |name: &str| query.read().get(name).filter(|v| !v.is_empty());
    view! {
        {move || param("notice").map(|text| view! { <p class="notice" role="status">{text}</p> })}
        {move || param("error").map(|text| view! { <p class="error" role="alert">{text}</p> })}
    }
}
