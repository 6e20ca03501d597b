//! How every page shows what it reads: a `Transition` (the last view stays while a re-read
//! runs) around an `ErrorBoundary` with one error view for the whole app.

use leptos::error::Errors;
use leptos::prelude::*;

use crate::api::{ApiError, ErrorCode};
use crate::session::Session;

/// Show `children` (reads that yield `Result<_, ApiError>`) once they have loaded, `loading`
/// before, and the shared error view when one fails. `forbidden` is what a `FORBIDDEN` refusal
/// says on this page.
#[component]
pub fn Loaded(
    /// Shown while the first read runs.
    #[prop(into, default = "Loading…".into())]
    loading: String,
    /// What a `FORBIDDEN` refusal means here; by default, the server's words.
    #[prop(optional)]
    forbidden: Option<&'static str>,
    children: ChildrenFn,
) -> impl IntoView {
    view! {
        <Transition fallback=move || view! { <p class="muted">{loading.clone()}</p> }>
            <ErrorBoundary fallback=move |errors| view! { <Failure errors=errors forbidden=forbidden/> }>
                {children()}
            </ErrorBoundary>
        </Transition>
    }
}

/// The shared error view. An ended session is not shown as an error: it sends the person to
/// sign in again (the route guard takes them to `/login` and back).
#[component]
fn Failure(errors: ArcRwSignal<Errors>, forbidden: Option<&'static str>) -> impl IntoView {
    let session = Session::get();
    move || {
        errors
            .get()
            .into_iter()
            .map(|(_, error)| {
                let api = error.downcast_ref::<ApiError>().cloned();
                match api {
                    Some(err) if session.ended(&err) => ().into_any(),
                    // The stable reason, where the server gives one, is there for tools and tests.
                    Some(err) if err.code == ErrorCode::Forbidden && forbidden.is_some() => view! {
                        <p class="error" role="alert" data-reason=err.reason.clone()>{forbidden.unwrap_or_default()}". "{err.to_string()}</p>
                    }
                    .into_any(),
                    Some(err) => view! {
                        <p class="error" role="alert" data-reason=err.reason.clone()>{err.to_string()}</p>
                    }
                    .into_any(),
                    _ => view! { <p class="error" role="alert">{error.to_string()}</p> }.into_any(),
                }
            })
            .collect_view()
    }
}
