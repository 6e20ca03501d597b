//! `/login`: sign in, then go back where you were (`?next=`, a path on this site). Sent to the
//! home page (no `next`, or the niches page the header's "Sign in" names), an admin lands on
//! the review inbox instead, where their work waits; everyone else on their niches.

use leptos::prelude::*;
use leptos_router::NavigateOptions;
use leptos_router::hooks::{use_navigate, use_query_map};

use crate::api::{self, ApiError, ErrorCode};
use crate::operations::{Login, Me, login, me};
use crate::session::{Session, safe_next};

/// The sign-in form.
#[component]
pub fn LoginPage() -> impl IntoView {
    crate::components::title::page_title(|| "Sign in".to_owned());
    let session = Session::get();
    let query = use_query_map();
    let navigate = use_navigate();
    let (handle, set_handle) = signal(String::new());
    let (password, set_password) = signal(String::new());
    // The handle field holds the focus from the start: a person types their handle at once.
    let handle_field = NodeRef::<leptos::html::Input>::new();
    Effect::new(move |_| {
        if let Some(field) = handle_field.get() {
            let _ = field.focus();
        }
    });
    let sign_in = Action::new_local(move |(handle, password): &(String, String)| {
        let variables = login::Variables {
            handle: handle.clone(),
            password: password.clone(),
        };
        let navigate = navigate.clone();
        async move {
            api::send::<Login>(variables).await?;
            let person = api::run::<Me>(me::Variables).await?.viewer.map(|v| v.user);
            let admin = person.as_ref().is_some_and(|p| p.is_admin);
            session.set(person);
            let next = landing(safe_next(query.get_untracked().get("next")), admin);
            navigate(&next, NavigateOptions::default());
            Ok::<(), ApiError>(())
        }
    });
    let busy = sign_in.pending();
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        sign_in.dispatch((handle.get_untracked(), password.get_untracked()));
    };
    let error = move || {
        sign_in.value().get().and_then(Result::err).map(|err| {
            // Matched on the code, never on the wording.
            match err.code {
                ErrorCode::Unauthenticated => err.to_string(),
                ErrorCode::Forbidden => "Sign in from askloop's own page.".to_owned(),
                _ => format!("Could not sign in: {err}"),
            }
        })
    };
    view! {
        <main class="narrow">
            <h1>"Sign in"</h1>
            <form class="login" on:submit=submit>
                <label for="handle">"Handle"</label>
                <input id="handle" name="handle" autocomplete="username" required maxlength="40" node_ref=handle_field
                    prop:value=handle on:input=move |ev| set_handle.set(event_target_value(&ev))/>
                <label for="password">"Password"</label>
                <input id="password" name="password" type="password" autocomplete="current-password" required
                    prop:value=password on:input=move |ev| set_password.set(event_target_value(&ev))/>
                {move || error().map(|e| view! { <p class="error" role="alert">{e}</p> })}
                <button type="submit" disabled=busy>{move || if busy.get() { "Signing in…" } else { "Sign in" }}</button>
            </form>
        </main>
    }
}

/// Where someone bound for `next` lands: an admin sent home lands on the review inbox.
fn landing(next: String, admin: bool) -> String {
    let home = matches!(next.as_str(), "/" | "/dashboard" | "/dashboard/niches");
    if admin && home {
        REVIEW_INBOX.to_owned()
    } else {
        next
    }
}

/// Where an admin's work waits.
const REVIEW_INBOX: &str = "/admin/review";

#[cfg(test)]
mod tests {
    use super::landing;

    #[test]
    fn an_admin_sent_home_lands_on_the_review_inbox_and_anywhere_else_where_asked() {
        assert_eq!(landing("/dashboard/niches".into(), true), "/admin/review");
        assert_eq!(landing("/".into(), true), "/admin/review");
        assert_eq!(
            landing("/dashboard/niches".into(), false),
            "/dashboard/niches"
        );
        assert_eq!(landing("/admin/members".into(), true), "/admin/members");
        assert_eq!(
            landing("/dashboard/activity".into(), false),
            "/dashboard/activity"
        );
    }
}
