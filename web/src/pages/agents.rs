//! `/admin/agents`: the agent registry (docs/contract.md#agents). Every registered agent with its
//! niches, its endpoint (URL, scheme, the events it wants), whether its previous secret is still
//! accepted and until when, and its endpoint's newest deliveries; registering an agent, rotating
//! its secret, disabling and enabling it, and changing its niches and endpoint.
//!
//! A signing secret exists in the page only between the mutation that made it (`createAgent`,
//! `rotateAgentSecret`) and the admin's next action: it is held in one signal, never in the
//! registry's read, and a reload or anything else done on the page drops it, as the contract
//! promises ("shown once"). Every change goes through an admin mutation, which checks for an admin
//! on the server; this page only decides what to show. What an agent's endpoint answered (a
//! delivery's last error) comes from a remote server: shown as isolated text only.

mod commands;

use leptos::prelude::*;
use leptos_router::components::A;

use self::commands::{Command, Revealed};
use crate::api::{self, ApiError};
use crate::components::deliveries::DeliveriesTable;
use crate::components::loaded::Loaded;
use crate::components::question_card::visible_controls;
use crate::components::secret_once::{HeadingLevel, SecretIds, SecretOnce};
use crate::components::time_ago::{TimeAgo, exact};
use crate::operations::{AgentRegistry, agent_registry};
use crate::vocab::{AgentStatus, DeliveryStatus, WebhookScheme};

type Agent = agent_registry::AgentRegistryAgents;
type Delivery = agent_registry::AgentRegistryAgentsRecentDeliveries;
type Niche = agent_registry::AgentRegistryAllNiches;

/// The events askloop sends an agent (docs/contract.md#events-for-the-agent): what an endpoint
/// may choose to want. None chosen means all of them.
const EVENTS: [&str; 8] = [
    "expert_answer.created",
    "expert_answer.verified",
    "expert_answer.rejected",
    "agent.research_requested",
    "expert_question.needs_context",
    "expert_question.dismissed",
    "expert_question.expired",
    "expert_question.escalated",
];

/// How long a rotated-out secret may stay accepted, in seconds, with its words (the contract
/// allows 0 s to 30 days; one day is its default).
const RETIREMENTS: [(i64, &str); 5] = [
    (0, "No time: retire it now"),
    (3_600, "1 hour"),
    (86_400, "1 day"),
    (7 * 86_400, "7 days"),
    (30 * 86_400, "30 days"),
];

/// The retirement window chosen unless the admin picks another.
const DEFAULT_RETIREMENT: i64 = 86_400;

/// The page's one way to change things: its pending state disables every button.
type Act = Action<Command, Result<String, ApiError>>;

lazy_page! {
    /// `/admin/agents` as a lazily loaded route: its own wasm chunk, fetched the first time an admin
    /// opens the page.
    AgentsRoute => AgentsPage
}

/// What the admin has typed into the registration form: kept by the page, so a re-read of the
/// registry (after another action) does not wipe it.
#[derive(Clone, Copy)]
struct Draft {
    slug: RwSignal<String>,
    name: RwSignal<String>,
    niches: RwSignal<Vec<String>>,
    url: RwSignal<String>,
    scheme: RwSignal<WebhookScheme>,
}

impl Draft {
    fn new() -> Self {
        Self {
            slug: RwSignal::new(String::new()),
            name: RwSignal::new(String::new()),
            niches: RwSignal::new(Vec::new()),
            url: RwSignal::new(String::new()),
            scheme: RwSignal::new(WebhookScheme::Chovy),
        }
    }

    fn clear(self) {
        self.slug.set(String::new());
        self.name.set(String::new());
        self.niches.set(Vec::new());
        self.url.set(String::new());
        self.scheme.set(WebhookScheme::Chovy);
    }
}

/// The agents page.
#[component]
fn AgentsPage() -> impl IntoView {
    let registry = LocalResource::new(|| api::run::<AgentRegistry>(agent_registry::Variables));
    let revealed = RwSignal::new(None::<Revealed>);
    let draft = Draft::new();
    let act: Act = Action::new_local(move |command: &Command| {
        // A secret is shown until the admin's next action, whatever that action is.
        revealed.set(None);
        let registering = matches!(command, Command::Register { .. });
        let command = command.clone();
        async move {
            // A refused command changed nothing: the page stays as it is, with what was typed.
            let done = command.run().await?;
            if registering {
                draft.clear();
            }
            revealed.set(done.secret);
            registry.refetch();
            Ok(done.said)
        }
    });
    let refresh = move |_| {
        revealed.set(None);
        registry.refetch();
    };
    crate::components::title::page_title(|| "Agents · Admin".to_owned());
    view! {
        <main class="admin agents-page">
            <p><A href="/admin">"← Admin"</A></p>
            <h1>"Agents"</h1>
            <p class="lede">
                "Registered agents sign with their own secret and name themselves in "
                <code>"X-Askloop-Agent"</code>"; each asks only in its niches and its events go to its own endpoint. "
                "The built-in default agent ("<code>"CHOVY_SIGNING_SECRET"</code>") is configured on the server and not listed."
            </p>
            // What the last action did stays in view (it sticks to the top while the admin is
            // far down the list) and is announced.
            <div class="acted" aria-live="polite">
                {move || act.value().get().map(|result| match result {
                    Ok(text) => view! { <p class="notice" role="status">{text}</p> }.into_any(),
                    Err(err) => view! { <p class="error" role="alert">{err.to_string()}</p> }.into_any(),
                })}
            </div>
            {move || revealed.get().map(|r| view! { <AgentSecret revealed=r/> })}
            <Loaded forbidden="This page is for askloop's admins">
                {move || registry.get().map(|result| result.map(|data| view! {
                    <Registry agents=data.agents niches=data.all_niches act=act draft=draft/>
                    <p>
                        <button type="button" class="secondary small" disabled=act.pending() on:click=refresh>
                            "Read the registry again"
                        </button>
                    </p>
                }))}
            </Loaded>
        </main>
    }
}

/// An agent's signing secret just made, shown once, with how the agent uses it.
#[component]
fn AgentSecret(revealed: Revealed) -> impl IntoView {
    let ids = SecretIds {
        title: "secret-title",
        warning: "secret-warning",
        field: "new-secret",
    };
    let slug = revealed.slug;
    view! {
        <SecretOnce
            secret=revealed.secret
            ids=ids
            level=HeadingLevel::Two
            title=view! { "New signing secret of "<code>{slug.clone()}</code> }.into_any()
            warning=view! {
                " Copy it now into the agent's configuration: askloop keeps it sealed and cannot show it later. "
                "Leaving or reloading this page, or doing anything else on it, hides it for good; if it is lost, rotate the secret."
            }.into_any()
            label=view! { "Signing secret of "{slug.clone()} }.into_any()
            noun="secret"
            secret_for=slug.clone()
        >
            <p class="muted">
                "The agent signs with it in "<code>"X-Chovy-Signature"</code>" and sends "
                <code>"X-Askloop-Agent: "{slug.clone()}</code>"."
            </p>
        </SecretOnce>
    }
}

/// The registration form and every agent.
#[component]
fn Registry(agents: Vec<Agent>, niches: Vec<Niche>, act: Act, draft: Draft) -> impl IntoView {
    let list = if agents.is_empty() {
        view! { <p class="empty">"No agent is registered yet."</p> }.into_any()
    } else {
        let niches = niches.clone();
        agents
            .into_iter()
            .map(|a| view! { <AgentCard agent=a niches=niches.clone() act=act/> })
            .collect_view()
            .into_any()
    };
    view! {
        <section aria-labelledby="agents-title">
            <h2 id="agents-title">"Registered agents"</h2>
            {list}
        </section>
        <Register niches=niches act=act draft=draft/>
    }
}

/// Register an agent: slug, name, niches, endpoint URL and scheme.
#[component]
fn Register(niches: Vec<Niche>, act: Act, draft: Draft) -> impl IntoView {
    let busy = act.pending();
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        act.dispatch(Command::Register {
            slug: draft.slug.get_untracked().trim().to_owned(),
            name: draft.name.get_untracked().trim().to_owned(),
            niches: draft.niches.get_untracked(),
            url: typed_url(&draft.url.get_untracked()),
            scheme: draft.scheme.get_untracked(),
        });
    };
    view! {
        <section aria-labelledby="register-title">
            <h2 id="register-title">"Register an agent"</h2>
            <form class="card agent-form" on:submit=submit>
                <label for="new-agent-slug">"Slug"</label>
                <input id="new-agent-slug" type="text" required maxlength="40" autocomplete="off" spellcheck="false"
                    aria-describedby="new-agent-slug-help new-agent-slug-limit"
                    prop:value=draft.slug on:input=move |ev| draft.slug.set(event_target_value(&ev))/>
                <p class="muted hint" id="new-agent-slug-help">"2 to 40 of a–z, 0–9 and “-”: what the agent sends in X-Askloop-Agent."</p>
                <crate::components::notice::LimitNote id="new-agent-slug-limit".to_owned() value=draft.slug max=40/>
                <label for="new-agent-name">"Name"</label>
                <input id="new-agent-name" type="text" required maxlength="120" autocomplete="off"
                    aria-describedby="new-agent-name-limit"
                    prop:value=draft.name on:input=move |ev| draft.name.set(event_target_value(&ev))/>
                <crate::components::notice::LimitNote id="new-agent-name-limit".to_owned() value=draft.name max=120/>
                <NicheChoice legend="Niches it may ask in" id_prefix="new-agent-niche".to_owned() niches=niches chosen=draft.niches/>
                <EndpointFields id_prefix="new-agent".to_owned() url=draft.url scheme=draft.scheme/>
                <p class="muted">"It receives every event; choose fewer with “Edit endpoint” once it is registered."</p>
                <button type="submit" disabled=busy>"Register agent"</button>
            </form>
        </section>
    }
}

/// A typed URL, or none when the field is empty.
fn typed_url(typed: &str) -> Option<String> {
    Some(typed.trim().to_owned()).filter(|u| !u.is_empty())
}

/// Checkboxes for the niches, `chosen` holding the slugs ticked.
#[component]
fn NicheChoice(
    legend: &'static str,
    id_prefix: String,
    niches: Vec<Niche>,
    chosen: RwSignal<Vec<String>>,
) -> impl IntoView {
    let boxes = niches
        .into_iter()
        .map(|n| {
            let id = format!("{id_prefix}-{}", n.slug);
            let (ticked, toggled) = (n.slug.clone(), n.slug.clone());
            view! {
                <label class="option" for=id.clone()>
                    <input
                        type="checkbox"
                        id=id.clone()
                        prop:checked=move || chosen.with(|c| c.contains(&ticked))
                        on:change=move |ev| {
                            let on = event_target_checked(&ev);
                            chosen.update(|c| {
                                c.retain(|s| *s != toggled);
                                if on {
                                    c.push(toggled.clone());
                                }
                            });
                        }
                    />
                    " "{n.name}" ("{n.slug}")"
                </label>
            }
        })
        .collect_view();
    view! {
        <fieldset class="choices">
            <legend>{legend}</legend>
            {boxes}
        </fieldset>
    }
}

/// An endpoint's URL and signature scheme.
#[component]
fn EndpointFields(
    id_prefix: String,
    url: RwSignal<String>,
    scheme: RwSignal<WebhookScheme>,
) -> impl IntoView {
    let url_id = format!("{id_prefix}-url");
    let help_id = format!("{id_prefix}-url-help");
    let limit_id = format!("{id_prefix}-url-limit");
    let scheme_id = format!("{id_prefix}-scheme");
    view! {
        <label for=url_id.clone()>"Endpoint URL (optional)"</label>
        <input id=url_id type="url" maxlength="2000" autocomplete="off" spellcheck="false" placeholder="https://agent.example/hooks"
            aria-describedby=format!("{help_id} {limit_id}")
            prop:value=url on:input=move |ev| url.set(event_target_value(&ev))/>
        <crate::components::notice::LimitNote id=limit_id value=url max=2000/>
        <p class="muted hint" id=help_id>"Where its events are POSTed. Without one they wait in the outbox and the agent reads answers with the lookup route."</p>
        <label for=scheme_id.clone()>"Signature scheme"</label>
        <select id=scheme_id
            prop:value=move || scheme.get().as_str().to_owned()
            on:change=move |ev| scheme.set(WebhookScheme::of(event_target_value(&ev)))>
            <option value="chovy">"chovy: X-Chovy-Signature"</option>
            <option value="standard">"standard: Standard Webhooks"</option>
        </select>
    }
}

/// The scheme as an admin reads it.
fn scheme_words(scheme: &WebhookScheme) -> String {
    match scheme {
        WebhookScheme::Chovy => "chovy (X-Chovy-Signature)".to_owned(),
        WebhookScheme::Standard => "standard (Standard Webhooks)".to_owned(),
        WebhookScheme::Other(word) => word.clone(),
    }
}

/// One agent: what it is, its endpoint's newest deliveries, and what an admin can do to it.
#[component]
fn AgentCard(agent: Agent, niches: Vec<Niche>, act: Act) -> impl IntoView {
    let busy = act.pending();
    let a = agent;
    let slug = a.slug.clone();
    let title_id = format!("agent-{slug}");
    let active = a.status == AgentStatus::Active;
    let status = a.status.clone();
    let toggle = if active {
        Command::Disable { slug: slug.clone() }
    } else {
        Command::Enable { slug: slug.clone() }
    };
    let toggle_words = if active { "Disable" } else { "Enable" };
    let confirming = RwSignal::new(false);
    let slug_for_confirm = slug.clone();
    let confirmed = toggle.clone();
    let toggle_slug = slug.clone();
    let niche_list = if a.niches.is_empty() {
        "none".to_owned()
    } else {
        a.niches.join(", ")
    };
    let endpoint = a.endpoint.clone();
    let url = match endpoint.url.clone() {
        Some(url) => {
            view! { <code class="url"><bdi>{visible_controls(&url)}</bdi></code> }.into_any()
        }
        None => {
            view! { <span class="muted">"none: its events wait in the outbox"</span> }.into_any()
        }
    };
    let events = if endpoint.events.is_empty() {
        "all".to_owned()
    } else {
        endpoint.events.join(", ")
    };
    let previous = previous_secret(a.previous_secret_retires_at.clone());
    view! {
        <article class="card agent" data-agent=slug.clone() aria-labelledby=title_id.clone()>
            <h3 id=title_id.clone()>
                <bdi>{visible_controls(&a.name)}</bdi>" "<code>{slug.clone()}</code>" "
                <span class=format!("badge status-{status}")>{status.to_string()}</span>
            </h3>
            <dl class="facts">
                <dt>"Niches"</dt><dd data-fact="niches">{niche_list}</dd>
                <dt>"Endpoint"</dt><dd data-fact="url">{url}</dd>
                <dt>"Scheme"</dt><dd data-fact="scheme">{scheme_words(&endpoint.scheme)}</dd>
                <dt>"Events"</dt><dd data-fact="events">{events}</dd>
                <dt>"Previous secret"</dt><dd data-fact="previous-secret">{previous}</dd>
                <dt>"Registered"</dt><dd><TimeAgo at=a.created_at.clone()/>", changed "<TimeAgo at=a.updated_at.clone()/></dd>
            </dl>
            <DeliveriesTable caption=format!("Recent deliveries to {slug}") when="When"
                rows=a.recent_deliveries.iter().cloned().map(|d| view! { <DeliveryRow delivery=d/> }.into_any()).collect()/>
            <div class="actions">
                <Show when=move || !confirming.get()>
                    <button type="button" class="secondary" data-action="toggle" disabled=busy on:click={
                        let toggle = toggle.clone();
                        move |_| {
                            // Disabling stops the agent at once: it is confirmed first.
                            if active {
                                confirming.set(true);
                            } else {
                                act.dispatch(toggle.clone());
                            }
                        }
                    }>
                        {toggle_words}{if active { "…" } else { "" }}<span class="visually-hidden">" "{toggle_slug.clone()}</span>
                    </button>
                </Show>
            </div>
            <Show when=move || confirming.get()>
                <div class="confirm" role="group" aria-label=format!("Disable {}?", slug_for_confirm.clone())>
                    <p class="warning">"Disable "<code>{slug_for_confirm.clone()}</code>"? Its signed requests are refused (403) at once and its events wait until it is enabled again."</p>
                    <div class="actions">
                        <button type="button" class="danger" data-action="confirm-disable" disabled=busy on:click={
                            let confirmed = confirmed.clone();
                            move |_| {
                                confirming.set(false);
                                act.dispatch(confirmed.clone());
                            }
                        }>"Disable it"<span class="visually-hidden">" "{slug_for_confirm.clone()}</span></button>
                        <button type="button" class="secondary" data-action="cancel-disable" on:click=move |_| confirming.set(false)>"Cancel"</button>
                    </div>
                </div>
            </Show>
            <RotateForm slug=slug.clone() act=act/>
            <NichesForm slug=slug.clone() current=a.niches.clone() niches=niches act=act/>
            <EndpointForm slug=slug.clone() endpoint=endpoint act=act/>
        </article>
    }
}

/// Whether an agent's previous secret is still accepted, and until when.
fn previous_secret(retires_at: Option<String>) -> AnyView {
    match retires_at {
        Some(at) if js_sys::Date::parse(&at) > js_sys::Date::now() => view! {
            "still accepted until "{exact(&at)}" ("<TimeAgo at=at/>")"
        }
        .into_any(),
        Some(at) => {
            view! { "retired "<TimeAgo at=at/>": only the current secret is accepted" }.into_any()
        }
        None => "none: only the current secret is accepted".into_any(),
    }
}

/// One delivery to an agent's endpoint.
#[component]
fn DeliveryRow(delivery: Delivery) -> impl IntoView {
    let d = delivery;
    let status = d.status.clone();
    // What the endpoint answered, or why nothing came back: it can carry a remote server's
    // words (a redirect's location), so it is text only, isolated, invisible characters shown.
    let last = match (d.last_status_code, d.last_error) {
        (_, Some(error)) => visible_controls(&error),
        (Some(code), None) => format!("HTTP {code}"),
        (None, None) => String::new(),
    };
    let when = match d
        .delivered_at
        .filter(|_| status == DeliveryStatus::Delivered)
    {
        Some(at) => view! { "delivered "<TimeAgo at=at/> }.into_any(),
        None => view! { "written "<TimeAgo at=d.created_at/> }.into_any(),
    };
    view! {
        <tr data-delivery-id=d.id class=format!("delivery-{status}")>
            <td><code>{d.event_type}</code><br/><span class="muted envelope">{d.envelope_id}</span></td>
            <td data-label="Status"><span class=format!("badge status-{status}")>{status.to_string()}</span></td>
            <td class="num" data-label="Attempts">{d.attempt_count}</td>
            <td class="last-error" data-label="Last response"><bdi>{last}</bdi></td>
            <td data-label="When">{when}</td>
        </tr>
    }
}

/// Rotate an agent's secret, choosing how long the previous one stays accepted.
#[component]
fn RotateForm(slug: String, act: Act) -> impl IntoView {
    let busy = act.pending();
    let window = RwSignal::new(DEFAULT_RETIREMENT);
    let id = format!("retire-{slug}");
    let rotate_slug = slug.clone();
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        act.dispatch(Command::Rotate {
            slug: rotate_slug.clone(),
            retire_in_seconds: window.get_untracked(),
        });
    };
    view! {
        <details class="agent-edit">
            <summary>"Rotate the secret"<span class="visually-hidden">" of "{slug.clone()}</span></summary>
            <form on:submit=submit>
                <p class="muted">"askloop makes a new secret, shown once. Until the previous one retires, requests signed with either are accepted and every event carries both signatures."</p>
                <label for=id.clone()>"Keep accepting the previous secret for"</label>
                <select id=id
                    prop:value=move || window.get().to_string()
                    on:change=move |ev| window.set(event_target_value(&ev).parse().unwrap_or(DEFAULT_RETIREMENT))>
                    {RETIREMENTS.iter().map(|(seconds, words)| view! {
                        <option value=seconds.to_string()>{*words}</option>
                    }).collect_view()}
                </select>
                <button type="submit" disabled=busy>"Rotate secret"<span class="visually-hidden">" of "{slug}</span></button>
            </form>
        </details>
    }
}

/// Replace the niches an agent may ask in.
#[component]
fn NichesForm(slug: String, current: Vec<String>, niches: Vec<Niche>, act: Act) -> impl IntoView {
    let busy = act.pending();
    let chosen = RwSignal::new(current);
    let save_slug = slug.clone();
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        act.dispatch(Command::SetNiches {
            slug: save_slug.clone(),
            niches: chosen.get_untracked(),
        });
    };
    view! {
        <details class="agent-edit">
            <summary>"Edit niches"<span class="visually-hidden">" of "{slug.clone()}</span></summary>
            <form on:submit=submit>
                <NicheChoice legend="Niches it may ask in" id_prefix=format!("niche-{slug}") niches=niches chosen=chosen/>
                <button type="submit" disabled=busy>"Save niches"<span class="visually-hidden">" of "{slug}</span></button>
            </form>
        </details>
    }
}

/// Replace an agent's endpoint: URL, scheme and the events it wants.
#[component]
fn EndpointForm(
    slug: String,
    endpoint: agent_registry::AgentRegistryAgentsEndpoint,
    act: Act,
) -> impl IntoView {
    let busy = act.pending();
    let url = RwSignal::new(endpoint.url.unwrap_or_default());
    let scheme = RwSignal::new(endpoint.scheme);
    let wanted = RwSignal::new(endpoint.events);
    let save_slug = slug.clone();
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        act.dispatch(Command::SetEndpoint {
            slug: save_slug.clone(),
            url: typed_url(&url.get_untracked()),
            scheme: scheme.get_untracked(),
            events: wanted.get_untracked(),
        });
    };
    let events = EVENTS
        .iter()
        .map(|event| {
            let id = format!("event-{slug}-{}", event.replace('.', "-"));
            let name = (*event).to_owned();
            let ticked = name.clone();
            view! {
                <label class="option" for=id.clone()>
                    <input
                        type="checkbox"
                        id=id.clone()
                        prop:checked=move || wanted.with(|w| w.contains(&ticked))
                        on:change=move |ev| {
                            let on = event_target_checked(&ev);
                            wanted.update(|w| {
                                w.retain(|e| *e != name);
                                if on {
                                    w.push(name.clone());
                                }
                            });
                        }
                    />
                    " "<code>{*event}</code>
                </label>
            }
        })
        .collect_view();
    view! {
        <details class="agent-edit">
            <summary>"Edit endpoint"<span class="visually-hidden">" of "{slug.clone()}</span></summary>
            <form on:submit=submit>
                <EndpointFields id_prefix=format!("endpoint-{slug}") url=url scheme=scheme/>
                <fieldset class="choices">
                    <legend>"Events it wants (none ticked: all)"</legend>
                    {events}
                </fieldset>
                <button type="submit" disabled=busy>"Save endpoint"<span class="visually-hidden">" of "{slug}</span></button>
            </form>
        </details>
    }
}
