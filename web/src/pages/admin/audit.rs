//! Audit: the audit log, newest first, as people read it — who by handle, the subject by name,
//! the details in words (the raw record behind a toggle) — filtered by actor, action, subject and
//! time range, a page at a time ("Older entries"). Sign-ins and sign-outs would drown the rest:
//! they are hidden unless asked for.

use leptos::prelude::*;

use crate::api::{self, ApiError, ErrorCode};
use crate::components::notice::LimitNote;
use crate::components::time_ago::{TimeAgo, exact};
use crate::operations::{AdminAudit, admin_audit};

use super::FORBIDDEN;

/// The longest filter a text field takes (the server's longest identifier).
const FILTER_MAX: usize = 200;

type Entry = admin_audit::AdminAuditAuditEntriesEdgesNode;

/// The filters as the admin set them, sent with every page.
#[derive(Clone, Default, PartialEq)]
struct Filters {
    actor: String,
    action: String,
    subject_type: String,
    subject_id: String,
    since: Option<String>,
    until: Option<String>,
    sign_ins: bool,
}

impl Filters {
    fn variables(&self, older_than: Option<String>) -> admin_audit::Variables {
        let given = |text: &str| Some(text.trim().to_owned()).filter(|t| !t.is_empty());
        admin_audit::Variables {
            actor: given(&self.actor),
            action: given(&self.action),
            subject_type: given(&self.subject_type),
            subject_id: given(&self.subject_id),
            since: self.since.clone(),
            until: self.until.clone(),
            sign_ins: Some(self.sign_ins),
            older_than,
        }
    }
}

/// A `datetime-local` field's value (the admin's own time) as an RFC 3339 instant; `Ok(None)`
/// when empty, `Err` when it is not a time.
fn instant(label: &str, typed: &str) -> Result<Option<String>, String> {
    let typed = typed.trim();
    if typed.is_empty() {
        return Ok(None);
    }
    let date = js_sys::Date::new(&wasm_bindgen::JsValue::from_str(typed));
    if date.get_time().is_nan() {
        return Err(format!("{label}: \"{typed}\" is not a date and time"));
    }
    Ok(Some(String::from(date.to_iso_string())))
}

/// The Audit section.
#[component]
pub fn AuditSection() -> impl IntoView {
    let rows = RwSignal::new(Vec::<Entry>::new());
    let next = RwSignal::new(None::<String>);
    let loaded = RwSignal::new(false);
    let loading = RwSignal::new(false);
    let problem = RwSignal::new(None::<ApiError>);
    let form_problem = RwSignal::new(None::<String>);
    let applied = RwSignal::new(Filters::default());
    // The form's fields.
    let actor = RwSignal::new(String::new());
    let action = RwSignal::new(String::new());
    let subject_type = RwSignal::new(String::new());
    let subject_id = RwSignal::new(String::new());
    let since = RwSignal::new(String::new());
    let until = RwSignal::new(String::new());
    let sign_ins = RwSignal::new(false);
    // Read a page: the first (replacing what is shown) or the one after `after`.
    let load = move |after: Option<String>| {
        let more = after.is_some();
        let variables = applied.get_untracked().variables(after);
        loading.set(true);
        leptos::task::spawn_local(async move {
            match api::run::<AdminAudit>(variables).await {
                Ok(page) => {
                    let page = page.audit_entries;
                    let entries: Vec<Entry> = page.edges.into_iter().map(|e| e.node).collect();
                    if more {
                        rows.update(|r| r.extend(entries));
                    } else {
                        rows.set(entries);
                    }
                    next.set(
                        page.page_info
                            .has_next_page
                            .then_some(page.page_info.end_cursor)
                            .flatten(),
                    );
                    problem.set(None);
                    loaded.set(true);
                }
                Err(err) => problem.set(Some(err)),
            }
            loading.set(false);
        });
    };
    load(None);
    let apply = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let times = instant("From", &since.get_untracked())
            .and_then(|s| Ok((s, instant("Until", &until.get_untracked())?)));
        match times {
            Ok((since, until)) => {
                form_problem.set(None);
                applied.set(Filters {
                    actor: actor.get_untracked(),
                    action: action.get_untracked(),
                    subject_type: subject_type.get_untracked(),
                    subject_id: subject_id.get_untracked(),
                    since,
                    until,
                    sign_ins: sign_ins.get_untracked(),
                });
                load(None);
            }
            Err(why) => form_problem.set(Some(why)),
        }
    };
    let text_field = move |id: &'static str,
                           label: &'static str,
                           hint: &'static str,
                           value: RwSignal<String>| {
        let limit_id = format!("{id}-limit");
        view! {
            <div class="field">
                <label for=id>{label}</label>
                <input id=id type="text" placeholder=hint autocomplete="off" maxlength=FILTER_MAX.to_string()
                    aria-describedby=limit_id.clone()
                    prop:value=value on:input=move |ev| value.set(event_target_value(&ev))/>
                <LimitNote id=limit_id value=value max=FILTER_MAX/>
            </div>
        }
    };
    let time_field = move |id: &'static str, label: &'static str, value: RwSignal<String>| {
        view! {
            <div class="field">
                <label for=id>{label}</label>
                <input id=id type="datetime-local" prop:value=value on:input=move |ev| value.set(event_target_value(&ev))/>
            </div>
        }
    };
    view! {
        <section aria-labelledby="audit-title">
            <h2 id="audit-title">"Audit log"</h2>
            <form class="audit-filters" aria-label="Filter the audit log" on:submit=apply>
                {text_field("audit-actor", "Actor", "handle, agent:<id>, system", actor)}
                {text_field("audit-action", "Action", "contribution.rejected", action)}
                {text_field("audit-subject-type", "Subject kind", "contribution", subject_type)}
                {text_field("audit-subject-id", "Subject id", "12", subject_id)}
                {time_field("audit-since", "From", since)}
                {time_field("audit-until", "Until", until)}
                <div class="field check">
                    <input id="audit-sign-ins" type="checkbox" prop:checked=sign_ins on:change=move |ev| sign_ins.set(event_target_checked(&ev))/>
                    <label for="audit-sign-ins">"Show sign-ins and sign-outs"</label>
                </div>
                <button type="submit" disabled=loading>"Filter"</button>
                {move || form_problem.get().map(|why| view! { <p class="error form-error" role="alert">{why}</p> })}
            </form>
            {move || problem.get().map(|err| {
                let words = if err.code == ErrorCode::Forbidden { format!("{FORBIDDEN}. {err}") } else { err.to_string() };
                view! { <p class="error" role="alert">{words}</p> }
            })}
            <p class="muted" role="status">{move || {
                if !loaded.get() {
                    "Loading…".to_owned()
                } else {
                    let shown = rows.with(Vec::len);
                    let hidden = if applied.with(|f| f.sign_ins) { "" } else { "; sign-ins hidden" };
                    format!("{shown} entries shown{hidden}")
                }
            }}</p>
            <Show when=move || loaded.get() && rows.with(Vec::is_empty)>
                <p class="empty">"No entry matches."</p>
            </Show>
            <Show when=move || !rows.with(Vec::is_empty)>
                <div class="table-wrap" tabindex="0" role="region" aria-label="Audit entries"><table class="audit stack">
                    <thead><tr><th scope="col">"When"</th><th scope="col">"Who"</th><th scope="col">"What"</th><th scope="col">"Subject"</th><th scope="col">"Details"</th></tr></thead>
                    <tbody>
                        <For each=move || rows.get() key=|a| a.id.clone() children=|a| view! { <AuditRow entry=a/> }/>
                    </tbody>
                </table></div>
            </Show>
            <Show when=move || next.with(Option::is_some)>
                <button type="button" class="secondary" data-action="older" disabled=loading on:click=move |_| load(next.get_untracked())>
                    "Older entries"
                </button>
            </Show>
        </section>
    }
}

#[component]
fn AuditRow(entry: Entry) -> impl IntoView {
    let a = entry;
    let at = exact(&a.created_at);
    let action = a.action.clone();
    let details = if a.details.is_empty() {
        view! { <span class="muted">"—"</span> }.into_any()
    } else {
        view! {
            <dl class="audit-details">
                {a.details.into_iter().map(|d| view! { <div><dt>{d.name}</dt><dd>{d.value}</dd></div> }).collect_view()}
            </dl>
        }
        .into_any()
    };
    view! {
        <tr data-audit-id=a.id.clone() data-action=action>
            <td data-label="When"><TimeAgo at=a.created_at.clone()/><span class="visually-hidden">" ("{at}")"</span></td>
            <td data-actor="" data-label="Who"><bdi>{a.actor_name}</bdi></td>
            <td data-label="What"><code class="action-name">{a.action}</code></td>
            <td data-label="Subject"><bdi>{a.subject_name}</bdi></td>
            <td data-label="Details">
                {details}
                <details class="raw">
                    <summary>"Raw"</summary>
                    <code>{a.detail}</code>
                </details>
            </td>
        </tr>
    }
}
