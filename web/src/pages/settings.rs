//! `/dashboard/settings`: the signed-in person's own settings, one section each, every section
//! reading and changing only what it shows (docs/contract.md#authentication).
//!
//! - **API keys**: the keys that are not revoked (name, prefix, when made, last used, expiry),
//!   making one (a name and an optional last day) and revoking one after a confirmation. A new
//!   key exists in the page only between `createApiKey` and the person's next action on this
//!   section: it is held in one signal, never in the list's read, so a reload drops it, as the
//!   contract promises ("shown once"); the list shows only its prefix.
//! - **Sign-in sessions**: where ("Chrome on Linux · 127.0.0.1": the browser and system the
//!   server read from its `User-Agent`, and the address) and when (signed in, last active,
//!   expiry) each session was opened, "this device" marked; ending another one, or all the
//!   others, each after a confirmation.
//!
//! - **Email**, **Quiet hours and time zone**, **Notifications per niche** (`notifications`)
//!   and **Operator webhooks** (`webhooks`): how askloop reaches the person when the dashboard
//!   is closed (docs/contract.md#reaching-operators).
//!
//! What a browser sent as its `User-Agent` is shown as isolated text, invisible characters made
//! visible: it is whatever the signing-in client chose to say.
//!
//! A refused form keeps what was typed, and its refusal is shown next to the control it is about
//! (named by the control's `aria-describedby`), not only at the top of the section.

use leptos::html;
use leptos::prelude::*;

use crate::api::{self, ApiError};
use crate::components::loaded::Loaded;
use crate::components::question_card::visible_controls;
use crate::components::secret_once::{HeadingLevel, SecretIds, SecretOnce};
use crate::components::time_ago::{TimeAgo, exact};
use crate::operations::{
    CreateApiKey, EndSession, MyApiKeys, MySessions, RevokeApiKey, SignOutOtherSessions,
    create_api_key, end_session, my_api_keys, my_sessions, revoke_api_key, sign_out_other_sessions,
};
use crate::session::Session;

mod notifications;
mod webhooks;

type Key = my_api_keys::MyApiKeysMyApiKeys;
type SignIn = my_sessions::MySessionsMySessions;

lazy_page! {
    /// `/dashboard/settings` as a lazily loaded route: its own wasm chunk, fetched the first time
    /// someone opens the page.
    SettingsRoute => SettingsPage
}

/// The settings page: its sections, each standing alone.
#[component]
fn SettingsPage() -> impl IntoView {
    crate::components::title::page_title(|| "Settings".to_owned());
    view! {
        <main class="settings">
            <h1>"Settings"</h1>
            <ApiKeys/>
            <SignInSessions/>
            <notifications::EmailSettings/>
            <notifications::QuietHoursSettings/>
            <notifications::NichePreferences/>
            <webhooks::OperatorWebhooks/>
        </main>
    }
}

/// What an action on a section said: a notice, or the refusal.
#[component]
fn Outcome(said: Signal<Option<Result<String, ApiError>>>) -> impl IntoView {
    let session = Session::get();
    view! {
        <div class="acted" aria-live="polite">
            {move || said.get().map(|result| match result {
                Ok(text) => view! { <p class="notice" role="status">{text}</p> }.into_any(),
                // An ended session sends the person to sign in again, like a failed read.
                Err(err) if session.ended(&err) => ().into_any(),
                Err(err) => view! { <p class="error" role="alert">{err.to_string()}</p> }.into_any(),
            })}
        </div>
    }
}

/// A refusal shown next to the control it is about; `id` is what that control's
/// `aria-describedby` names while it shows (see [`described_by`]).
#[component]
fn FieldError(#[prop(into)] id: String, error: Signal<Option<String>>) -> impl IntoView {
    move || {
        error.get().map(
            |text| view! { <p class="error field-error" id=id.clone() role="alert">{text}</p> },
        )
    }
}

/// The words of a refusal to show next to a control; `None` when there is none, or when the
/// session ended (which sends the person to sign in instead).
fn refusal(session: Session, result: Option<Result<String, ApiError>>) -> Option<String> {
    match result? {
        Ok(_) => None,
        Err(err) if session.ended(&err) => None,
        Err(err) => Some(err.to_string()),
    }
}

/// What a control's `aria-describedby` names: its hint, and its refusal while one shows.
fn described_by(hint: &str, error_id: &str, refused: bool) -> String {
    if refused {
        format!("{hint} {error_id}")
    } else {
        hint.to_owned()
    }
}

/// Something done to API keys: one mutation each.
#[derive(Clone)]
enum KeyCommand {
    Create {
        name: String,
        /// The last day it works (`YYYY-MM-DD`, UTC), if it should stop.
        last_day: Option<String>,
    },
    Revoke {
        id: String,
        name: String,
    },
}

/// A key just made, to show this once.
#[derive(Clone)]
struct NewKey {
    name: String,
    token: String,
}

impl KeyCommand {
    /// Send the mutation: what to say, and the key it made, if it made one.
    async fn run(self) -> Result<(String, Option<NewKey>), ApiError> {
        match self {
            Self::Create { name, last_day } => {
                // The key works until the end of its last day, UTC.
                let expires_at = last_day.map(|day| format!("{day}T23:59:59Z"));
                let made = api::run::<CreateApiKey>(create_api_key::Variables { name, expires_at })
                    .await?
                    .create_api_key;
                let name = made.key.name;
                Ok((
                    format!("The key “{name}” is made. Copy it now: it is shown only this once."),
                    Some(NewKey {
                        name,
                        token: made.token,
                    }),
                ))
            }
            Self::Revoke { id, name } => {
                api::send::<RevokeApiKey>(revoke_api_key::Variables { id }).await?;
                Ok((
                    format!("The key “{name}” is revoked: it no longer works anywhere."),
                    None,
                ))
            }
        }
    }
}

/// Today in UTC, `YYYY-MM-DD`: the earliest last day a new key may have.
fn today() -> String {
    let now: String = js_sys::Date::new_0().to_iso_string().into();
    now.chars().take(10).collect()
}

/// The "API keys" section.
#[component]
fn ApiKeys() -> impl IntoView {
    let keys = LocalResource::new(|| api::run::<MyApiKeys>(my_api_keys::Variables));
    let revealed = RwSignal::new(None::<NewKey>);
    let name = RwSignal::new(String::new());
    let last_day = RwSignal::new(String::new());
    let confirming = RwSignal::new(None::<String>);
    let act = Action::new_local(move |command: &KeyCommand| {
        // A new key is shown until the next action here, whatever that action is.
        revealed.set(None);
        confirming.set(None);
        let creating = matches!(command, KeyCommand::Create { .. });
        let command = command.clone();
        async move {
            // A refused command changed nothing: what was typed stays.
            let (said, made) = command.run().await?;
            if creating {
                name.set(String::new());
                last_day.set(String::new());
            }
            revealed.set(made);
            keys.refetch();
            Ok(said)
        }
    });
    let busy = act.pending();
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let day = last_day.get_untracked();
        act.dispatch(KeyCommand::Create {
            name: name.get_untracked().trim().to_owned(),
            last_day: Some(day).filter(|d| !d.is_empty()),
        });
    };
    view! {
        <section class="settings-section" aria-labelledby="api-keys-title">
            <h2 id="api-keys-title">"API keys"</h2>
            <p class="lede">
                "A key lets a script or an integration act as you: it sends it as "
                <code>"Authorization: Bearer …"</code>". Revoke a key you no longer use."
            </p>
            <Outcome said=act.value().into()/>
            {move || revealed.get().map(|key| view! { <KeyOnce key=key/> })}
            <Loaded>
                {move || keys.get().map(|result| result.map(|data| view! {
                    <KeyList keys=data.my_api_keys act=act confirming=confirming/>
                }))}
            </Loaded>
            <form class="card key-form" on:submit=submit>
                <h3>"Make a key"</h3>
                <label for="new-key-name">"Key name"</label>
                <input id="new-key-name" type="text" required maxlength="80" autocomplete="off"
                    aria-describedby="new-key-name-help new-key-name-limit"
                    prop:value=name on:input=move |ev| name.set(event_target_value(&ev))/>
                <p class="muted hint" id="new-key-name-help">"What it is for, e.g. “CI” or “laptop script”."</p>
                <crate::components::notice::LimitNote id="new-key-name-limit".to_owned() value=name max=80/>
                <label for="new-key-expiry">"Last day it works (optional)"</label>
                <input id="new-key-expiry" type="date" min=today()
                    aria-describedby="new-key-expiry-help"
                    prop:value=last_day on:input=move |ev| last_day.set(event_target_value(&ev))/>
                <p class="muted hint" id="new-key-expiry-help">"It stops working at the end of that day (UTC), at most five years ahead. Leave empty for a key that works until revoked."</p>
                <button type="submit" disabled=busy>"Make key"</button>
            </form>
        </section>
    }
}

/// A key just made, shown once.
#[component]
fn KeyOnce(key: NewKey) -> impl IntoView {
    let ids = SecretIds {
        title: "new-key-title",
        warning: "new-key-warning",
        field: "new-key",
    };
    let name = visible_controls(&key.name);
    view! {
        <SecretOnce
            secret=key.token
            ids=ids
            level=HeadingLevel::Three
            title=view! { "New API key “"<bdi>{name.clone()}</bdi>"”" }.into_any()
            warning=view! {
                " Copy it now: askloop keeps only a hash of it and cannot show it later. "
                "Leaving or reloading this page, or doing anything else here, hides it for good; if it is lost, revoke it and make another."
            }.into_any()
            label=view! { "API key “"{name}"”" }.into_any()
            noun="key"
        />
    }
}

/// The keys that are not revoked.
#[component]
fn KeyList(
    keys: Vec<Key>,
    act: Action<KeyCommand, Result<String, ApiError>>,
    confirming: RwSignal<Option<String>>,
) -> impl IntoView {
    if keys.is_empty() {
        return view! { <p class="empty">"You have no API keys."</p> }.into_any();
    }
    view! {
        <ul class="access-list" aria-label="Your API keys">
            {keys.into_iter().map(|key| view! { <KeyItem key=key act=act confirming=confirming/> }).collect_view()}
        </ul>
    }
    .into_any()
}

/// One key: what it is, and revoking it (asked twice).
#[component]
fn KeyItem(
    key: Key,
    act: Action<KeyCommand, Result<String, ApiError>>,
    confirming: RwSignal<Option<String>>,
) -> impl IntoView {
    let busy = act.pending();
    let name = visible_controls(&key.name);
    let id = key.id.clone();
    let title_id = format!("key-{id}");
    let asking = {
        let id = id.clone();
        Signal::derive(move || confirming.get().as_deref() == Some(id.as_str()))
    };
    let revoke_button = NodeRef::<html::Button>::new();
    let ask = {
        let id = id.clone();
        move |_| confirming.set(Some(id.clone()))
    };
    let cancel = move |_| {
        confirming.set(None);
        if let Some(button) = revoke_button.get_untracked() {
            let _ = button.focus();
        }
    };
    let revoke = {
        let (id, name) = (id.clone(), key.name.clone());
        move |_| {
            act.dispatch(KeyCommand::Revoke {
                id: id.clone(),
                name: name.clone(),
            });
        }
    };
    let expiry = match key.expires_at.clone() {
        Some(at) if js_sys::Date::parse(&at) <= js_sys::Date::now() => {
            view! { <span class="badge expired">"expired"</span>" "<TimeAgo at=at/> }.into_any()
        }
        Some(at) => view! { {exact(&at)}" ("<TimeAgo at=at/>")" }.into_any(),
        None => "never: it works until revoked".into_any(),
    };
    let last_used = match key.last_used_at.clone() {
        Some(at) => view! { <TimeAgo at=at/> }.into_any(),
        None => "never".into_any(),
    };
    let confirm_name = name.clone();
    let heading_id = title_id.clone();
    view! {
        <li class="card access-item" data-key=key.prefix.clone() aria-labelledby=title_id.clone()>
            <h3 id=heading_id><bdi>{name.clone()}</bdi></h3>
            <dl class="facts">
                <dt>"Starts with"</dt><dd data-fact="prefix"><code>{key.prefix.clone()}"…"</code></dd>
                <dt>"Made"</dt><dd><TimeAgo at=key.created_at.clone()/></dd>
                <dt>"Last used"</dt><dd data-fact="last-used">{last_used}</dd>
                <dt>"Expires"</dt><dd data-fact="expires">{expiry}</dd>
            </dl>
            <div class="actions">
                <button type="button" class="secondary" node_ref=revoke_button disabled=busy
                    aria-expanded=move || asking.get().to_string() on:click=ask>
                    "Revoke"<span class="visually-hidden">" key "{name.clone()}</span>
                </button>
            </div>
            <Show when=move || asking.get()>
                {
                    let name = confirm_name.clone();
                    view! {
                        <Confirm label=format!("Revoke the key {name}?") hidden=format!(" key {name}") busy=busy.into()
                            yes="Yes, revoke" no="Keep it" on_yes=revoke.clone() on_no=cancel>
                            "Revoke “"<bdi>{name}</bdi>"”? Whatever uses it stops working at once, and it cannot be undone."
                        </Confirm>
                    }
                }
            </Show>
        </li>
    }
}

/// Something done to sign-in sessions.
#[derive(Clone)]
enum SessionCommand {
    End { id: String },
    EndOthers,
}

impl SessionCommand {
    async fn run(self) -> Result<String, ApiError> {
        match self {
            Self::End { id } => {
                api::send::<EndSession>(end_session::Variables { id }).await?;
                Ok("That session is ended: it is signed out.".to_owned())
            }
            Self::EndOthers => {
                let ended = api::run::<SignOutOtherSessions>(sign_out_other_sessions::Variables)
                    .await?
                    .sign_out_other_sessions;
                Ok(match ended {
                    0 => "There was no other session to end.".to_owned(),
                    1 => "Signed out of 1 other session.".to_owned(),
                    n => format!("Signed out of {n} other sessions."),
                })
            }
        }
    }
}

/// The "Sign-in sessions" section.
#[component]
fn SignInSessions() -> impl IntoView {
    let sessions = LocalResource::new(|| api::run::<MySessions>(my_sessions::Variables));
    let act = Action::new_local(move |command: &SessionCommand| {
        let command = command.clone();
        async move {
            let said = command.run().await?;
            sessions.refetch();
            Ok(said)
        }
    });
    let busy = act.pending();
    let confirming = RwSignal::new(None::<String>);
    let others_button = NodeRef::<html::Button>::new();
    let end_others = move |_| {
        confirming.set(None);
        act.dispatch(SessionCommand::EndOthers);
    };
    let keep_others = move |_| {
        confirming.set(None);
        if let Some(button) = others_button.get_untracked() {
            let _ = button.focus();
        }
    };
    let asking_others = move || confirming.get().as_deref() == Some("others");
    view! {
        <section class="settings-section" aria-labelledby="sessions-title">
            <h2 id="sessions-title">"Sign-in sessions"</h2>
            <p class="lede">"Where and when you are signed in. End a session you do not recognise; it is signed out at once."</p>
            <Outcome said=act.value().into()/>
            <Loaded>
                {move || sessions.get().map(|result| result.map(|data| view! {
                    <SessionList sessions=data.my_sessions act=act confirming=confirming/>
                }))}
            </Loaded>
            <div class="actions">
                <button type="button" class="secondary" disabled=busy node_ref=others_button
                    aria-expanded=move || asking_others().to_string()
                    on:click=move |_| confirming.set(Some("others".to_owned()))>
                    "Sign out everywhere else"
                </button>
            </div>
            <Show when=asking_others>
                <Confirm label="Sign out everywhere else?".to_owned() busy=busy.into()
                    yes="Yes, sign out the others" no="Keep them" on_yes=end_others on_no=keep_others>
                    "Sign out of every other session? Each of them has to sign in again."
                </Confirm>
            </Show>
        </section>
    }
}

/// The sessions, this device's first.
#[component]
fn SessionList(
    mut sessions: Vec<SignIn>,
    act: Action<SessionCommand, Result<String, ApiError>>,
    confirming: RwSignal<Option<String>>,
) -> impl IntoView {
    sessions.sort_by_key(|s| !s.current);
    view! {
        <ul class="access-list" aria-label="Your sign-in sessions">
            {sessions.into_iter().map(|s| view! { <SessionItem session=s act=act confirming=confirming/> }).collect_view()}
        </ul>
    }
}

/// A question asked before something that cannot be undone, and its two answers; the first
/// takes the focus when asked. `hidden` ends both answers for screen readers, saying which thing
/// they are about when a page lists several.
#[component]
fn Confirm(
    label: String,
    yes: &'static str,
    no: &'static str,
    #[prop(optional)] hidden: Option<String>,
    busy: Signal<bool>,
    on_yes: impl Fn(leptos::ev::MouseEvent) + 'static,
    on_no: impl Fn(leptos::ev::MouseEvent) + 'static,
    children: Children,
) -> impl IntoView {
    let yes_button = NodeRef::<html::Button>::new();
    Effect::new(move |_| {
        if let Some(button) = yes_button.get() {
            let _ = button.focus();
        }
    });
    let which = move || {
        hidden
            .clone()
            .map(|which| view! { <span class="visually-hidden">{which}</span> })
    };
    view! {
        <div class="confirm" role="group" aria-label=label>
            <p>{children()}</p>
            <div class="actions">
                <button type="button" class="danger" node_ref=yes_button disabled=busy on:click=on_yes>{yes}{which()}</button>
                <button type="button" class="secondary" on:click=on_no>{no}{which()}</button>
            </div>
        </div>
    }
}

/// One session: where and when, and ending it (not this device's: "Sign out" does that).
#[component]
fn SessionItem(
    session: SignIn,
    act: Action<SessionCommand, Result<String, ApiError>>,
    confirming: RwSignal<Option<String>>,
) -> impl IntoView {
    let busy = act.pending();
    let s = session;
    let raw = s
        .user_agent
        .as_deref()
        .map_or_else(|| "none sent".to_owned(), visible_controls);
    let address = s
        .client_address
        .clone()
        .unwrap_or_else(|| "unknown address".to_owned());
    let place = format!("{} · {address}", s.device);
    let title_id = format!("session-{}", s.id);
    let which = format!("{place}, signed in {}", exact(&s.created_at));
    let title = if s.current {
        view! { {place.clone()}" "<span class="badge current">"this device"</span> }.into_any()
    } else {
        place.clone().into_any()
    };
    let end = if s.current {
        view! { <p class="muted">"To end this one, use “Sign out” at the top."</p> }.into_any()
    } else {
        let id = s.id.clone();
        let asking = {
            let id = id.clone();
            move || confirming.get().as_deref() == Some(id.as_str())
        };
        let end_button = NodeRef::<html::Button>::new();
        let ask = {
            let id = id.clone();
            move |_| confirming.set(Some(id.clone()))
        };
        let yes = move |_| {
            confirming.set(None);
            act.dispatch(SessionCommand::End { id: id.clone() });
        };
        let no = move |_| {
            confirming.set(None);
            if let Some(button) = end_button.get_untracked() {
                let _ = button.focus();
            }
        };
        let label = format!("End the session {which}?");
        let question = format!("End the session “{place}”? It is signed out at once.");
        let asking_too = asking.clone();
        view! {
            <div class="actions">
                <button type="button" class="secondary" disabled=busy node_ref=end_button
                    aria-expanded=move || asking().to_string() on:click=ask>
                    "End session"<span class="visually-hidden">" "{which}</span>
                </button>
            </div>
            <Show when=asking_too.clone()>
                {
                    let question = question.clone();
                    view! {
                        <Confirm label=label.clone() busy=busy.into() yes="Yes, end it" no="Keep it" on_yes=yes.clone() on_no=no>
                            {question}
                        </Confirm>
                    }
                }
            </Show>
        }
        .into_any()
    };
    let heading_id = title_id.clone();
    view! {
        <li class="card access-item" data-session=s.id.clone() data-current=s.current.to_string() aria-labelledby=title_id>
            <h3 id=heading_id>{title}</h3>
            <dl class="facts">
                <dt>"Browser"</dt><dd data-fact="browser">{s.device.clone()}</dd>
                <dt>"Address"</dt><dd data-fact="address">{address}</dd>
                <dt>"As it said"</dt><dd data-fact="user-agent" class="muted"><bdi>{raw}</bdi></dd>
                <dt>"Signed in"</dt><dd><TimeAgo at=s.created_at.clone()/></dd>
                <dt>"Last active"</dt><dd><TimeAgo at=s.last_seen_at.clone()/></dd>
                <dt>"Expires"</dt><dd><TimeAgo at=s.expires_at.clone()/></dd>
            </dl>
            {end}
        </li>
    }
}
