//! `/login`: sign in, then go back where you were (`?next=`, a path on this site).

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
            session.set(person);
            let next = safe_next(query.get_untracked().get("next"));
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
