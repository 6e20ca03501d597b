//! The app: the header, the route table and what lives as long as the page (the session, the
//! live connection, the clock).
//!
//! Pages that show a niche's or a person's data sit under a guard that sends a signed-out
//! visitor to `/login?next=<path>`; `/login` brings them back. The niches page is open to all
//! (signed out, it lists the niches taking questions).

use leptos::prelude::*;
use leptos_router::components::{
    A, Outlet, ParentRoute, ProtectedParentRoute, Route, Router, Routes,
};
use leptos_router::hooks::use_location;
use leptos_router::{Lazy, path};

use crate::components::account::Account;
use crate::components::held::Held;
use crate::components::{drafts, time_ago};
use crate::live::Live;
use crate::pages;
use crate::session::{Session, login_path};

/// The dashboard.
#[component]
pub fn App() -> impl IntoView {
    time_ago::provide_clock();
    Held::provide();
    drafts::prune();
    let session = Session::provide(Live::provide());
    view! {
        <Router>
            <Header/>
            <AppRoutes session=session/>
        </Router>
    }
}

/// The brand and, except on the login page, the account links. On a phone (40rem or less) the
/// links fold into a menu behind one button: it says whether it is open (`aria-expanded`),
/// Escape closes it and gives the focus back to the button, and following a link closes it.
#[component]
fn Header() -> impl IntoView {
    let location = use_location();
    let on_login_page = move || location.pathname.get() == "/login";
    let open = RwSignal::new(false);
    let toggle = NodeRef::<leptos::html::Button>::new();
    // A new page closes the menu: only a change of page, not the effect's first run (which can
    // come after a quick person has already opened it) nor a run that finds the same page.
    Effect::new(move |shown: Option<String>| {
        let path = location.pathname.get();
        if shown.is_some_and(|shown| shown != path) {
            open.set(false);
        }
        path
    });
    let close_on_escape = move |ev: leptos::ev::KeyboardEvent| {
        if ev.key() == "Escape" && open.get_untracked() {
            open.set(false);
            if let Some(button) = toggle.get_untracked() {
                let _ = button.focus();
            }
        }
    };
    view! {
        <header class="top" class:menu-open=move || open.get() on:keydown=close_on_escape>
            <A href="/dashboard/niches" attr:class="brand">"askloop"</A>
            <Show when=move || !on_login_page()>
                <button type="button" class="secondary menu-toggle" node_ref=toggle
                    aria-expanded=move || open.get().to_string() aria-controls="account-menu"
                    on:click=move |_| open.update(|o| *o = !*o)>
                    <span aria-hidden="true" class="menu-icon">"☰"</span>" Menu"
                </button>
                <Account/>
            </Show>
        </header>
    }
}

/// Every page of the dashboard.
#[component]
fn AppRoutes(session: Session) -> impl IntoView {
    let location = use_location();
    let (pathname, search) = (location.pathname, location.search);
    let signed_in = move || session.signed_in();
    let to_login = move || login_path(&pathname.get_untracked(), &search.get_untracked());
    let checking = || view! { <main><p class="muted">"Loading…"</p></main> };
    view! {
        <Routes fallback=NotFound>
            <Route path=path!("/") view=pages::niches::NichesPage/>
            <Route path=path!("/login") view=pages::login::LoginPage/>
            <ParentRoute path=path!("/dashboard") view=Outlet>
                <Route path=path!("") view=pages::niches::NichesPage/>
                <Route path=path!("niches") view=pages::niches::NichesPage/>
                <ProtectedParentRoute path=path!("") view=Outlet condition=signed_in redirect_path=to_login fallback=checking>
                    <Route path=path!("niches/:slug/questions") view={Lazy::<pages::queue::QueueRoute>::new()}/>
                    <Route path=path!("activity") view={Lazy::<pages::activity::ActivityRoute>::new()}/>
                    <Route path=path!("niches/:slug/questions/:id") view={Lazy::<pages::question::QuestionRoute>::new()}/>
                    <Route path=path!("niches/:slug/knowledge") view={Lazy::<pages::knowledge::KnowledgeRoute>::new()}/>
                    <Route path=path!("niches/:slug/knowledge/:id") view={Lazy::<pages::knowledge::KnowledgeEntryRoute>::new()}/>
                    <Route path=path!("niches/:slug/revenue") view={Lazy::<pages::revenue::NicheMoneyRoute>::new()}/>
                    <Route path=path!("revenue") view={Lazy::<pages::revenue::MyRevenueRoute>::new()}/>
                    <Route path=path!("payouts") view={Lazy::<pages::revenue::MyRevenueRoute>::new()}/>
                    <Route path=path!("settings") view={Lazy::<pages::settings::SettingsRoute>::new()}/>
                </ProtectedParentRoute>
            </ParentRoute>
            <ProtectedParentRoute path=path!("/admin") view=Outlet condition=signed_in redirect_path=to_login fallback=checking>
                <Route path=path!("") view={Lazy::<pages::admin::AdminRoute>::new()}/>
                <Route path=path!("review") view={Lazy::<pages::admin::AdminRoute>::new()}/>
                <Route path=path!("members") view={Lazy::<pages::admin::AdminRoute>::new()}/>
                <Route path=path!("deliveries") view={Lazy::<pages::admin::AdminRoute>::new()}/>
                <Route path=path!("payouts") view={Lazy::<pages::admin::AdminRoute>::new()}/>
                <Route path=path!("revenue") view={Lazy::<pages::admin::AdminRoute>::new()}/>
                <Route path=path!("signals") view={Lazy::<pages::admin::AdminRoute>::new()}/>
                <Route path=path!("audit") view={Lazy::<pages::admin::AdminRoute>::new()}/>
                <Route path=path!("agents") view={Lazy::<pages::agents::AgentsRoute>::new()}/>
            </ProtectedParentRoute>
        </Routes>
    }
}

#[component]
fn NotFound() -> impl IntoView {
    view! {
        <main><h1>"Not found"</h1><p><A href="/dashboard/niches">"Back to your niches"</A></p></main>
    }
}
