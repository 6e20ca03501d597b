//! The line that says what just happened (`?notice=`) or what went wrong (`?error=`).

use leptos::prelude::*;

/// Shows the page's `notice` or `error` query parameter, if any.
#[component]
pub fn Notice() -> impl IntoView {
    let notice = crate::query_param("notice");
    let error = crate::query_param("error");
    view! {
        {notice.map(|text| view! { <p class="notice" role="status">{text}</p> })}
        {error.map(|text| view! { <p class="error" role="alert">{text}</p> })}
    }
}
