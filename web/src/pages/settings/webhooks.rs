//! The settings page's "Operator webhooks" section (docs/contract.md#operator-webhooks): the
//! person's webhooks (niche, URL, when registered), registering one for a niche they belong to,
//! sending one a test event, its recent deliveries, and removing it after a confirmation.
//!
//! A new webhook's secret exists in the page only between `registerOperatorWebhook` and the
//! person's next action on this section, held in one signal and never in the list's read, as
//! the API key above is: a reload drops it, as the contract promises ("shown this once").

use leptos::html;
use leptos::prelude::*;

use super::{Confirm, FieldError, Outcome, described_by, refusal};
use crate::api::{self, ApiError};
use crate::components::deliveries::DeliveriesTable;
use crate::components::loaded::Loaded;
use crate::components::question_card::visible_controls;
use crate::components::secret_once::{HeadingLevel, SecretIds, SecretOnce};
use crate::components::time_ago::TimeAgo;
use crate::operations::{
    DeliveryStatus, MyOperatorWebhooks, OperatorWebhookDeliveries, RegisterOperatorWebhook,
    RemoveOperatorWebhook, TestOperatorWebhook, my_operator_webhooks, operator_webhook_deliveries,
    register_operator_webhook, remove_operator_webhook, test_operator_webhook,
};
use crate::session::Session;

type Hook = my_operator_webhooks::MyOperatorWebhooksMyOperatorWebhooks;
type Niche = my_operator_webhooks::MyOperatorWebhooksMyNotificationPreferences;
type Delivery = operator_webhook_deliveries::OperatorWebhookDeliveriesOperatorWebhookDeliveries;

/// Something done to the list of webhooks.
#[derive(Clone)]
enum HookCommand {
    Register { niche: String, url: String },
    Remove { id: String, url: String },
}

/// A webhook just registered, with its secret to show this once.
#[derive(Clone)]
struct NewHook {
    niche: String,
    secret: String,
}

impl HookCommand {
    /// Send the mutation: what to say, and the new webhook, if it made one.
    async fn run(self) -> Result<(String, Option<NewHook>), ApiError> {
        match self {
            Self::Register { niche, url } => {
                let made =
                    api::run::<RegisterOperatorWebhook>(register_operator_webhook::Variables {
                        niche_slug: niche,
                        url,
                    })
                    .await?
                    .register_operator_webhook;
                Ok((
                    format!(
                        "The webhook for {} is registered. Copy its secret now: it is shown only this once.",
                        made.webhook.niche_slug
                    ),
                    Some(NewHook {
                        niche: made.webhook.niche_slug,
                        secret: made.secret,
                    }),
                ))
            }
            Self::Remove { id, url } => {
                api::send::<RemoveOperatorWebhook>(remove_operator_webhook::Variables { id })
                    .await?;
                Ok((
                    format!(
                        "The webhook to {} is removed: nothing more is sent to it.",
                        visible_controls(&url)
                    ),
                    None,
                ))
            }
        }
    }
}

type HookAction = Action<HookCommand, Result<String, ApiError>>;

/// The "Operator webhooks" section.
#[component]
pub(super) fn OperatorWebhooks() -> impl IntoView {
    let session = Session::get();
    let hooks =
        LocalResource::new(|| api::run::<MyOperatorWebhooks>(my_operator_webhooks::Variables));
    let revealed = RwSignal::new(None::<NewHook>);
    let confirming = RwSignal::new(None::<String>);
    let niche = RwSignal::new(String::new());
    let url = RwSignal::new(String::new());
    let registering = RwSignal::new(false);
    let act = Action::new_local(move |command: &HookCommand| {
        // A new secret is shown until the next action here, whatever that action is.
        revealed.set(None);
        confirming.set(None);
        let command = command.clone();
        registering.set(matches!(command, HookCommand::Register { .. }));
        async move {
            // A refused command changed nothing: what was typed stays.
            let (said, made) = command.run().await?;
            if made.is_some() {
                url.set(String::new());
            }
            revealed.set(made);
            hooks.refetch();
            Ok(said)
        }
    });
    // A refused registration shows at the URL field; a refused removal at the section's top.
    let register_error = Signal::derive(move || {
        registering
            .get()
            .then(|| refusal(session, act.value().get()))
            .flatten()
    });
    let removal_said = Signal::derive(move || {
        act.value()
            .get()
            .filter(|result| result.is_ok() || !registering.get())
    });
    view! {
        <section class="settings-section" aria-labelledby="webhooks-title">
            <h2 id="webhooks-title">"Operator webhooks"</h2>
            <p class="lede">
                "askloop POSTs a small signed JSON to each of your webhooks when a question arrives in its niche or escalates: enough for a chat bridge. Each is signed with its own secret ("
                <code>"X-Chovy-Signature"</code>")."
            </p>
            <Outcome said=removal_said/>
            {move || revealed.get().map(|hook| view! { <HookSecret hook=hook/> })}
            <Loaded>
                {move || hooks.get().map(|result| result.map(|data| {
                    let niches = data.my_notification_preferences;
                    view! {
                        <HookList hooks=data.my_operator_webhooks niches=niches.clone() act=act confirming=confirming/>
                        <RegisterForm niches=niches niche=niche url=url act=act error=register_error/>
                    }
                }))}
            </Loaded>
        </section>
    }
}

/// The form that registers a webhook: a niche of the person's, and a URL.
#[component]
fn RegisterForm(
    niches: Vec<Niche>,
    niche: RwSignal<String>,
    url: RwSignal<String>,
    act: HookAction,
    error: Signal<Option<String>>,
) -> impl IntoView {
    if niches.is_empty() {
        return view! { <p class="empty">"You belong to no niche yet, so there is nothing to register a webhook for."</p> }
            .into_any();
    }
    if niche.get_untracked().is_empty() {
        niche.set(niches[0].niche_slug.clone());
    }
    let busy = act.pending();
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        act.dispatch(HookCommand::Register {
            niche: niche.get_untracked(),
            url: url.get_untracked().trim().to_owned(),
        });
    };
    let refused = move || error.get().is_some();
    view! {
        <form class="card settings-form hook-form" on:submit=submit>
            <h3>"Register a webhook"</h3>
            <label for="hook-niche">"Niche"</label>
            <select id="hook-niche" prop:value=niche on:change=move |ev| niche.set(event_target_value(&ev))>
                {niches.into_iter().map(|n| {
                    let slug = n.niche_slug;
                    let selected = {
                        let slug = slug.clone();
                        move || niche.get() == slug
                    };
                    view! { <option value=slug.clone() selected=selected>{n.niche_name}</option> }
                }).collect_view()}
            </select>
            <label for="hook-url">"Webhook URL"</label>
            <input id="hook-url" type="url" required maxlength="2000" autocomplete="off" spellcheck="false"
                placeholder="https://chat.example.com/hooks/askloop"
                aria-invalid=move || refused().to_string()
                aria-describedby=move || format!("{} hook-url-limit", described_by("hook-url-help", "hook-url-error", refused()))
                prop:value=url on:input=move |ev| url.set(event_target_value(&ev))/>
            <crate::components::notice::LimitNote id="hook-url-limit".to_owned() value=url max=2000/>
            <p class="muted hint" id="hook-url-help">"An https:// address where your chat bridge or script listens (plain http:// only for an admin's webhook to this server or a local host). At most five per niche."</p>
            <FieldError id="hook-url-error" error=error/>
            <button type="submit" disabled=busy>"Register webhook"</button>
        </form>
    }
    .into_any()
}

/// A new webhook's secret, shown once.
#[component]
fn HookSecret(hook: NewHook) -> impl IntoView {
    let ids = SecretIds {
        title: "new-hook-title",
        warning: "new-hook-warning",
        field: "new-hook-secret",
    };
    let label = format!("Secret of the new webhook for {}", hook.niche);
    view! {
        <SecretOnce
            secret=hook.secret
            ids=ids
            level=HeadingLevel::Three
            title=view! { "New webhook for "{hook.niche} }.into_any()
            warning=view! {
                " Copy the secret now and give it to what receives the webhook, to check each request's "
                <code>"X-Chovy-Signature"</code>". Leaving or reloading this page, or doing anything else here, hides it for good; if it is lost, remove the webhook and register it again."
            }.into_any()
            label=label.into_any()
            noun="secret"
        />
    }
}

/// The person's webhooks.
#[component]
fn HookList(
    hooks: Vec<Hook>,
    niches: Vec<Niche>,
    act: HookAction,
    confirming: RwSignal<Option<String>>,
) -> impl IntoView {
    if hooks.is_empty() {
        return view! { <p class="empty">"You have no operator webhooks."</p> }.into_any();
    }
    view! {
        <ul class="access-list" aria-label="Your operator webhooks">
            {hooks.into_iter().map(|hook| {
                let niche = niches
                    .iter()
                    .find(|n| n.niche_slug == hook.niche_slug)
                    .map_or_else(|| hook.niche_slug.clone(), |n| n.niche_name.clone());
                view! { <HookItem hook=hook niche=niche act=act confirming=confirming/> }
            }).collect_view()}
        </ul>
    }
    .into_any()
}

/// One webhook: where it sends, a test, its recent deliveries, and removing it (asked twice).
#[component]
fn HookItem(
    hook: Hook,
    niche: String,
    act: HookAction,
    confirming: RwSignal<Option<String>>,
) -> impl IntoView {
    let session = Session::get();
    let busy = act.pending();
    let id = hook.id.clone();
    // The URL is whatever the person typed: shown as isolated text, invisible characters shown.
    let url = visible_controls(&hook.url);
    let which = format!("{niche}, {url}");
    let refresh = RwSignal::new(0_u32);
    let deliveries = {
        let id = id.clone();
        LocalResource::new(move || {
            refresh.track();
            api::run::<OperatorWebhookDeliveries>(operator_webhook_deliveries::Variables {
                webhook_id: id.clone(),
            })
        })
    };
    let test = {
        let id = id.clone();
        Action::new_local(move |_: &()| {
            let id = id.clone();
            async move {
                api::send::<TestOperatorWebhook>(test_operator_webhook::Variables { id }).await?;
                refresh.update(|n| *n += 1);
                Ok("A test event is on its way; it shows under recent deliveries.".to_owned())
            }
        })
    };
    let test_error = Signal::derive(move || refusal(session, test.value().get()));
    let test_said = Signal::derive(move || test.value().get().and_then(Result::ok));
    let asking = {
        let id = id.clone();
        Signal::derive(move || confirming.get().as_deref() == Some(id.as_str()))
    };
    let remove_button = NodeRef::<html::Button>::new();
    let ask = {
        let id = id.clone();
        move |_| confirming.set(Some(id.clone()))
    };
    let cancel = move |_| {
        confirming.set(None);
        if let Some(button) = remove_button.get_untracked() {
            let _ = button.focus();
        }
    };
    let remove = {
        let (id, url) = (id.clone(), hook.url.clone());
        move |_| {
            act.dispatch(HookCommand::Remove {
                id: id.clone(),
                url: url.clone(),
            });
        }
    };
    let title_id = format!("hook-{id}");
    let heading_id = title_id.clone();
    let test_error_id = format!("hook-{id}-test-error");
    let caption = StoredValue::new(format!("Recent deliveries to the webhook for {niche}"));
    let confirm_which = which.clone();
    view! {
        <li class="card access-item hook" data-hook=id.clone() aria-labelledby=title_id>
            <h3 id=heading_id>"Webhook for "{niche.clone()}</h3>
            <dl class="facts">
                <dt>"URL"</dt><dd data-fact="url"><bdi>{url.clone()}</bdi></dd>
                <dt>"Registered"</dt><dd><TimeAgo at=hook.created_at.clone()/></dd>
            </dl>
            <div class="actions">
                <button type="button" class="secondary" disabled=test.pending()
                    aria-describedby={
                        let test_error_id = test_error_id.clone();
                        move || test_error.get().map(|_| test_error_id.clone())
                    }
                    on:click=move |_| { test.dispatch(()); }>
                    "Send a test"<span class="visually-hidden">" to the webhook for "{which.clone()}</span>
                </button>
                <button type="button" class="secondary" node_ref=remove_button disabled=busy
                    aria-expanded=move || asking.get().to_string() on:click=ask>
                    "Remove"<span class="visually-hidden">" the webhook for "{which.clone()}</span>
                </button>
            </div>
            <FieldError id=test_error_id error=test_error/>
            {move || test_said.get().map(|text| view! { <p class="notice" role="status">{text}</p> })}
            <Show when=move || asking.get()>
                <Confirm label=format!("Remove the webhook for {confirm_which}?") hidden=format!(" the webhook for {confirm_which}") busy=busy.into()
                    yes="Yes, remove" no="Keep it" on_yes=remove.clone() on_no=cancel>
                    "Remove this webhook? Nothing more is sent to it, and its secret stops mattering."
                </Confirm>
            </Show>
            <div class="hook-deliveries">
                <Loaded loading="Reading its deliveries…">
                    {move || deliveries.get().map(|result| result.map(|data| view! {
                        <DeliveriesTable caption=caption.get_value() when="Written"
                            rows=data.operator_webhook_deliveries.into_iter().map(|d| view! { <DeliveryRow delivery=d/> }.into_any()).collect()/>
                    }))}
                </Loaded>
                <button type="button" class="secondary small" on:click=move |_| refresh.update(|n| *n += 1)>
                    "Refresh deliveries"<span class="visually-hidden">" of the webhook for "{which}</span>
                </button>
            </div>
        </li>
    }
}

/// One delivery to a webhook.
#[component]
fn DeliveryRow(delivery: Delivery) -> impl IntoView {
    let d = delivery;
    let status = DeliveryStatus::of(&d.status);
    // Why it was not sent, what the webhook's server answered, or that nothing came back (the
    // server says no more than that), shown as text only, isolated, invisible characters shown.
    let last = match (d.dropped_reason, d.last_status_code, d.last_error) {
        (Some(reason), _, _) => visible_controls(&reason),
        (None, _, Some(error)) => visible_controls(&error),
        (None, Some(code), None) => format!("HTTP {code}"),
        (None, None, None) => "none yet".to_owned(),
    };
    view! {
        <tr data-delivery-id=d.id data-status=status.to_string()>
            <td><code>{d.event_type}</code></td>
            <td data-label="Status"><span class=format!("badge status-{status}")>{status.to_string()}</span></td>
            <td class="num" data-label="Attempts">{d.attempts}</td>
            <td class="last-error" data-label="Last response"><bdi>{last}</bdi></td>
            <td data-label="Written"><TimeAgo at=d.created_at/></td>
        </tr>
    }
}
