//! `/login`: sign in, then go back where you were.

use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::api;

/// The sign-in form.
#[component]
pub fn LoginPage() -> impl IntoView {
    let (handle, set_handle) = signal(String::new());
    let (password, set_password) = signal(String::new());
    let (error, set_error) = signal(None::<String>);
    let (busy, set_busy) = signal(false);
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        set_busy.set(true);
        set_error.set(None);
        let (h, p) = (handle.get_untracked(), password.get_untracked());
        spawn_local(async move {
            match api::login(&h, &p).await {
                Ok(()) => {
                    let next = crate::query_param("next")
                        .filter(|n| n.starts_with('/') && !n.starts_with("//"))
                        .unwrap_or_else(|| "/dashboard/niches".to_owned());
                    crate::go_to(&next);
                }
                Err(err) => {
                    // Matched on the code, never on the wording.
                    let message = match err.code.as_str() {
                        "UNAUTHENTICATED" => err.message.clone(),
                        "FORBIDDEN" => "Sign in from askloop's own page.".to_owned(),
                        _ => format!("Could not sign in: {err}"),
                    };
                    set_error.set(Some(message));
                    set_busy.set(false);
                }
            }
        });
    };
    view! {
        <main class="narrow">
            <h1>"Sign in"</h1>
            <form class="login" on:submit=submit>
                <label for="handle">"Handle"</label>
                <input id="handle" name="handle" autocomplete="username" required
                    prop:value=handle on:input=move |ev| set_handle.set(event_target_value(&ev))/>
                <label for="password">"Password"</label>
                <input id="password" name="password" type="password" autocomplete="current-password" required
                    prop:value=password on:input=move |ev| set_password.set(event_target_value(&ev))/>
                {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
                <button type="submit" disabled=busy>"Sign in"</button>
            </form>
        </main>
    }
}
