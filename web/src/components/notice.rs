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

/// Beside a text field that holds at most `max` characters (its `maxlength`): empty until what
/// the field holds reaches the limit, then it says so, since a browser cuts a longer paste
/// without a word. The field names it in its `aria-describedby` (`id`); it is a status, so a
/// screen reader hears it when it appears.
#[component]
pub fn LimitNote(
    /// Its element id.
    id: String,
    /// What the field holds now.
    #[prop(into)]
    value: Signal<String>,
    /// The field's limit, in the units `maxlength` counts (UTF-16 code units).
    max: usize,
) -> impl IntoView {
    let reached = move || value.with(|v| v.encode_utf16().count() >= max);
    view! {
        <p id=id class="limit-note" role="status">
            {move || reached().then(|| format!(
                "This field holds at most {max} characters: anything past that was not kept."
            ))}
        </p>
    }
}
