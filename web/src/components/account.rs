//! The header's account links: who is signed in, with the way out; or the way in.

use leptos::prelude::*;
use leptos_router::NavigateOptions;
use leptos_router::components::A;
use leptos_router::hooks::use_navigate;

use crate::api;
use crate::operations::{Logout, logout};
use crate::session::Session;

/// Who is signed in, with the way out; or the way in.
#[component]
pub fn Account() -> impl IntoView {
    let session = Session::get();
    let navigate = use_navigate();
    let sign_out = Action::new_local(move |_: &()| {
        let navigate = navigate.clone();
        async move {
            let result = api::send::<Logout>(logout::Variables).await;
            if result.is_ok() {
                session.set(None);
                navigate("/login", NavigateOptions::default());
            }
            result
        }
    });
    let busy = sign_out.pending();
    view! {
        <nav class="account" id="account-menu" aria-label="Account">
            {move || match session.person() {
                Some(Some(person)) => view! {
                    <A href="/dashboard/niches">"Niches"</A>
                    <A href="/dashboard/revenue">"Revenue"</A>
                    <A href="/dashboard/settings">"Settings"</A>
                    // `exact`: on the agents page only "Agents" is the current page.
                    {person.is_admin.then(|| view! {
                        <A href="/admin" exact=true>"Admin"</A>
                        <A href="/admin/agents">"Agents"</A>
                    })}
                    <span class="who">{person.handle}</span>
                    <button type="button" class="secondary small" disabled=busy on:click=move |_| { sign_out.dispatch(()); }>
                        {move || if busy.get() { "Signing out…" } else { "Sign out" }}
                    </button>
                }.into_any(),
                Some(None) => view! { <A href="/login?next=/dashboard/niches">"Sign in"</A> }.into_any(),
                None => ().into_any(),
            }}
            {move || sign_out.value().get().and_then(Result::err).map(|e| view! { <span class="error" role="alert">{e.to_string()}</span> })}
        </nav>
    }
}
