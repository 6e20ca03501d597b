//! `/admin`: the review queue (verify / reject), the niches with their members (add,
//! suspend, reinstate) and the deliveries to the agent, failures first (redeliver). Everything goes through the admin mutations, which check for an admin
//! on the server; this page only decides what to show.

use leptos::prelude::*;
use leptos::task::spawn_local;
use serde_json::{Value, json};

use crate::api::{
    self, AdminLedger, AdminNiche, AdminOverview, AnomalySignal, ApiError, Contribution, Delivery,
    Payout,
};
use crate::components::money::money;
use crate::components::time_ago::TimeAgo;
use crate::live::{self, LiveEvent};

/// What the page holds.
#[derive(Clone)]
enum Load {
    Loading,
    Ready(AdminOverview),
    Failed(ApiError),
}

/// The admin page.
#[component]
pub fn AdminPage() -> impl IntoView {
    let load = RwSignal::new(Load::Loading);
    let message = RwSignal::new(None::<Result<String, String>>);
    let reload = move || {
        spawn_local(async move {
            match api::admin_overview().await {
                Ok(overview) => load.set(Load::Ready(overview)),
                Err(err) if err.code == "UNAUTHENTICATED" => crate::go_to_login(),
                Err(err) => load.set(Load::Failed(err)),
            }
        });
    };
    reload();
    // Anomaly signals arrive live, once for the page (re-reads keep the same subscription).
    let signals = RwSignal::new(Vec::<AnomalySignal>::new());
    live::subscribe(
        &format!(
            "subscription Signals {{ anomalySignals {{ {} }} }}",
            api::SIGNAL_FIELDS
        ),
        json!({}),
        move |event| match event {
            // Subscribed (again): re-read the log, so nothing that arrived between the page's
            // first read and the subscription (or while disconnected) is missing.
            LiveEvent::Connected => spawn_local(async move {
                if let Ok(latest) = api::anomaly_signals().await {
                    merge_signals(signals, latest);
                }
            }),
            LiveEvent::Next(data) => {
                if let Ok(signal) =
                    serde_json::from_value::<AnomalySignal>(data["anomalySignals"].clone())
                {
                    merge_signals(signals, vec![signal]);
                }
            }
            LiveEvent::Failed(_) | LiveEvent::Dropped => {}
        },
    );
    // Run a mutation, say how it went, and re-read the page.
    let act = Callback::new(
        move |(mutation, variables, done): (&'static str, Value, String)| {
            spawn_local(async move {
                match api::admin_action(mutation, variables).await {
                    Ok(()) => message.set(Some(Ok(done))),
                    Err(err) => message.set(Some(Err(err.to_string()))),
                }
                reload();
            });
        },
    );
    view! {
        <main class="admin">
            <h1>"Admin"</h1>
            {move || message.get().map(|m| match m {
                Ok(text) => view! { <p class="notice" role="status">{text}</p> }.into_any(),
                Err(text) => view! { <p class="error" role="alert">{text}</p> }.into_any(),
            })}
            {move || match load.get() {
                Load::Loading => view! { <p class="muted">"Loading…"</p> }.into_any(),
                Load::Failed(err) if err.code == "FORBIDDEN" => view! {
                    <p class="error" role="alert">"This page is for askloop's admins."</p>
                }.into_any(),
                Load::Failed(err) => view! { <p class="error" role="alert">{err.to_string()}</p> }.into_any(),
                Load::Ready(overview) => view! {
                    <ReviewQueue queue=overview.review_queue act=act/>
                    <Niches niches=overview.all_niches act=act/>
                    <Deliveries deliveries=overview.deliveries act=act/>
                    <Ledger act=act signals=signals/>
                }.into_any(),
            }}
        </main>
    }
}

type Act = Callback<(&'static str, Value, String)>;

/// Contributions awaiting review. The evidence is agent-influenced: shown as text only.
#[component]
fn ReviewQueue(queue: Vec<Contribution>, act: Act) -> impl IntoView {
    view! {
        <section aria-labelledby="review-title">
            <h2 id="review-title">"Review queue"</h2>
            {if queue.is_empty() {
                view! { <p class="empty">"Nothing awaits review."</p> }.into_any()
            } else {
                queue.into_iter().map(|c| {
                    let note_id = format!("note-{}", c.id);
                    let (note, set_note) = signal(String::new());
                    let (verify_id, reject_id) = (c.id.clone(), c.id.clone());
                    view! {
                        <article class="card review" data-contribution-id=c.id.clone()>
                            <p>
                                <strong>{c.niche_slug}</strong>
                                " · "{c.points}" points · "{c.source}" · "
                                <TimeAgo at=c.created_at/>
                            </p>
                            <details>
                                <summary>"Evidence"</summary>
                                <pre class="evidence">{c.evidence}</pre>
                            </details>
                            <label for=note_id.clone()>"Note (optional)"</label>
                            <input id=note_id type="text" maxlength="500" prop:value=note on:input=move |ev| set_note.set(event_target_value(&ev))/>
                            <div class="actions">
                                <button type="button" data-action="verify" on:click=move |_| act.run((
                                    "mutation Verify($id: ID!, $note: String) { verifyContribution(id: $id, note: $note) { id } }",
                                    json!({ "id": verify_id, "note": Some(note.get_untracked()).filter(|n| !n.is_empty()) }),
                                    "Verified: its points count now.".to_owned(),
                                ))>"Verify"</button>
                                <button type="button" class="secondary" data-action="reject" on:click=move |_| act.run((
                                    "mutation Reject($id: ID!, $note: String) { rejectContribution(id: $id, note: $note) { id } }",
                                    json!({ "id": reject_id, "note": Some(note.get_untracked()).filter(|n| !n.is_empty()) }),
                                    "Rejected: it will never count.".to_owned(),
                                ))>"Reject"</button>
                            </div>
                        </article>
                    }
                }).collect_view().into_any()
            }}
        </section>
    }
}

/// Every niche with its members.
#[component]
fn Niches(niches: Vec<AdminNiche>, act: Act) -> impl IntoView {
    view! {
        <section aria-labelledby="niches-title">
            <h2 id="niches-title">"Niches and members"</h2>
            {niches.into_iter().map(|n| view! { <NicheMembers niche=n act=act/> }).collect_view()}
        </section>
    }
}

#[component]
fn NicheMembers(niche: AdminNiche, act: Act) -> impl IntoView {
    let slug = niche.slug.clone();
    let handle_id = format!("add-{}", niche.slug);
    let role_id = format!("role-{}", niche.slug);
    let (handle, set_handle) = signal(String::new());
    let (role, set_role) = signal("OPERATOR".to_owned());
    let add_slug = slug.clone();
    let add = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let who = handle.get_untracked().trim().to_owned();
        act.run((
            "mutation Add($slug: String!, $handle: String!, $role: MemberRole!) { addMember(nicheSlug: $slug, handle: $handle, role: $role) { handle } }",
            json!({ "slug": add_slug, "handle": who, "role": role.get_untracked() }),
            format!("{who} is now a member of {add_slug}."),
        ));
        set_handle.set(String::new());
    };
    let members = niche
        .members
        .into_iter()
        .map(|m| {
            let active = m.status == "active";
            let (mutation, label, done) = if active {
                (
                    "mutation Suspend($slug: String!, $handle: String!) { suspendMember(nicheSlug: $slug, handle: $handle) { status } }",
                    "Suspend",
                    format!("{} is suspended in {slug}.", m.handle),
                )
            } else {
                (
                    "mutation Reinstate($slug: String!, $handle: String!) { reinstateMember(nicheSlug: $slug, handle: $handle) { status } }",
                    "Reinstate",
                    format!("{} is active again in {slug}.", m.handle),
                )
            };
            let variables = json!({ "slug": slug, "handle": m.handle });
            view! {
                <tr data-member=m.handle.clone()>
                    <td>{m.handle.clone()}</td>
                    <td>{m.role}</td>
                    <td>{m.status}</td>
                    <td>
                        <button type="button" class="secondary small" on:click=move |_| act.run((mutation, variables.clone(), done.clone()))>
                            {label}<span class="visually-hidden">" "{m.handle.clone()}</span>
                        </button>
                    </td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <article class="card niche-admin" data-slug=niche.slug.clone()>
            <h3>{niche.name}" "<code>{niche.slug.clone()}</code>" "<span class="status">{niche.status}</span></h3>
            <div class="table-wrap">
                <table>
                    <thead><tr><th scope="col">"Handle"</th><th scope="col">"Role"</th><th scope="col">"Status"</th><th scope="col">""</th></tr></thead>
                    <tbody>{members}</tbody>
                </table>
            </div>
            <form class="inline" on:submit=add>
                <label for=handle_id.clone()>"Add a member"</label>
                <input id=handle_id type="text" required placeholder="handle" prop:value=handle on:input=move |ev| set_handle.set(event_target_value(&ev))/>
                <label for=role_id.clone() class="visually-hidden">"Role"</label>
                <select id=role_id on:change=move |ev| set_role.set(event_target_value(&ev))>
                    <option value="OPERATOR" selected>"operator"</option>
                    <option value="SPECIALIST">"specialist"</option>
                    <option value="OBSERVER">"observer"</option>
                </select>
                <button type="submit">"Add"</button>
            </form>
        </article>
    }
}

/// Deliveries to the agent, failures first, each with its attempts.
#[component]
fn Deliveries(deliveries: Vec<Delivery>, act: Act) -> impl IntoView {
    view! {
        <section aria-labelledby="deliveries-title">
            <h2 id="deliveries-title">"Deliveries to the agent"</h2>
            {if deliveries.is_empty() {
                view! { <p class="empty">"Nothing has been sent yet."</p> }.into_any()
            } else {
                view! {
                    <div class="table-wrap">
                        <table class="deliveries">
                            <thead><tr>
                                <th scope="col">"Event"</th><th scope="col">"Status"</th><th scope="col">"Attempts"</th>
                                <th scope="col">"Last error"</th><th scope="col">"Written"</th><th scope="col">""</th>
                            </tr></thead>
                            <tbody>
                                {deliveries.into_iter().map(|d| view! { <DeliveryRow delivery=d act=act/> }).collect_view()}
                            </tbody>
                        </table>
                    </div>
                }.into_any()
            }}
        </section>
    }
}

#[component]
fn DeliveryRow(delivery: Delivery, act: Act) -> impl IntoView {
    let status = delivery.status.to_lowercase();
    let id = delivery.id.clone();
    let count = delivery.attempts.len();
    let attempts = delivery
        .attempts
        .into_iter()
        .map(|a| {
            let what = match (a.status_code, a.error) {
                (Some(code), None) => format!("HTTP {code}"),
                (_, Some(error)) => error,
                (None, None) => String::new(),
            };
            view! {
                <li><TimeAgo at=a.at/>" · "{a.outcome}" · "{what}" · "{a.duration_ms}" ms"</li>
            }
        })
        .collect_view();
    view! {
        <tr data-delivery-id=delivery.id.clone() class=format!("delivery-{status}")>
            <td>
                <code>{delivery.event_type}</code>
                <details>
                    <summary>{delivery.envelope_id}</summary>
                    <ol class="attempts">{attempts}</ol>
                </details>
            </td>
            <td>
                <span class=format!("badge status-{status}")>{status.clone()}</span>
                {(status == "pending").then(|| view! { <span class="muted">" next "<TimeAgo at=delivery.next_attempt_at/></span> })}
            </td>
            <td class="num">{count}</td>
            <td>{delivery.last_error.unwrap_or_default()}</td>
            <td><TimeAgo at=delivery.created_at/></td>
            <td>
                <button type="button" class="secondary small" data-action="redeliver" on:click=move |_| act.run((
                    "mutation Redeliver($id: ID!) { redeliver(id: $id) { id } }",
                    json!({ "id": id }),
                    "Queued to be sent again; the agent sees the same envelope id.".to_owned(),
                ))>"Redeliver"</button>
            </td>
        </tr>
    }
}

/// The money side for admins: payouts to settle, revenue events, anomaly signals (live) and
/// the audit log.
#[component]
fn Ledger(act: Act, signals: RwSignal<Vec<AnomalySignal>>) -> impl IntoView {
    let ledger = RwSignal::new(None::<Result<AdminLedger, ApiError>>);
    spawn_local(async move { ledger.set(Some(api::admin_ledger().await)) });
    view! {
        {move || ledger.get().map(|result| match result {
            Err(err) => view! { <p class="error" role="alert">{err.to_string()}</p> }.into_any(),
            Ok(l) => {
                merge_signals(signals, l.anomaly_signals.clone());
                view! {
                    <PayoutDesk payouts=l.payouts accounts=l.payout_accounts act=act/>
                    <section aria-labelledby="admin-revenue-title">
                        <h2 id="admin-revenue-title">"Revenue events"</h2>
                        {if l.revenue_events.is_empty() {
                            view! { <p class="empty">"No revenue yet."</p> }.into_any()
                        } else {
                            view! { <div class="table-wrap"><table class="admin-events">
                                <thead><tr><th scope="col">"When"</th><th scope="col">"Niche"</th><th scope="col">"Source"</th><th scope="col">"Reference"</th><th scope="col" class="num">"Gross"</th><th scope="col" class="num">"Net"</th></tr></thead>
                                <tbody>{l.revenue_events.into_iter().map(|e| view! {
                                    <tr><td><TimeAgo at=e.created_at/></td><td>{e.niche_slug}</td><td>{e.source_type}</td><td><code>{e.external_id}</code></td>
                                    <td class="num">{money(e.gross_minor, &e.currency)}</td><td class="num">{money(e.net_minor, &e.currency)}</td></tr>
                                }).collect_view()}</tbody>
                            </table></div> }.into_any()
                        }}
                    </section>
                    <section aria-labelledby="signals-title">
                        <h2 id="signals-title">"Anomaly signals"</h2>
                        <p class="muted">"Logged for a person to look at; they change nothing by themselves."</p>
                        <Show when=move || !signals.with(Vec::is_empty) fallback=|| view! { <p class="empty">"No signals."</p> }>
                            <ul class="signals">
                                <For each=move || signals.get() key=|s| s.signal_id.clone() children=|s| view! {
                                    <li data-signal-id=s.signal_id.clone()>
                                        <span class=format!("badge severity-{}", s.severity)>{s.severity.clone()}</span>
                                        " "<strong>{s.kind}</strong>" on "{s.subject_type}" "<code>{s.subject_id}</code>" · "<TimeAgo at=s.received_at/>
                                        <pre class="evidence">{s.finding}</pre>
                                    </li>
                                }/>
                            </ul>
                        </Show>
                    </section>
                    <section aria-labelledby="audit-title">
                        <h2 id="audit-title">"Audit log"</h2>
                        <div class="table-wrap"><table class="audit">
                            <thead><tr><th scope="col">"When"</th><th scope="col">"Who"</th><th scope="col">"What"</th><th scope="col">"Subject"</th><th scope="col">"Detail"</th></tr></thead>
                            <tbody>{l.audit_log.into_iter().map(|a| view! {
                                <tr><td><TimeAgo at=a.created_at/></td><td>{a.actor}</td><td>{a.action}</td><td>{a.subject_type}" "{a.subject_id}</td><td><code>{a.detail}</code></td></tr>
                            }).collect_view()}</tbody>
                        </table></div>
                    </section>
                }.into_any()
            }
        })}
    }
}

/// Add `more` to the signals shown, once each, newest first.
fn merge_signals(signals: RwSignal<Vec<AnomalySignal>>, more: Vec<AnomalySignal>) {
    signals.update(|list| {
        for s in more {
            if !list.iter().any(|known| known.signal_id == s.signal_id) {
                list.push(s);
            }
        }
        list.sort_by(|a, b| b.received_at.cmp(&a.received_at));
    });
}

/// Payouts: verify an address, schedule, then mark paid (with the reference) or failed.
#[component]
fn PayoutDesk(payouts: Vec<Payout>, accounts: Vec<api::PayoutAccount>, act: Act) -> impl IntoView {
    let (handle, set_handle) = signal(String::new());
    let unverified: Vec<api::PayoutAccount> =
        accounts.into_iter().filter(|a| !a.verified).collect();
    let schedule = move |_| {
        let who = handle.get_untracked().trim().to_owned();
        act.run((
            "mutation Schedule($h: String!) { schedulePayout(handle: $h) { id } }",
            json!({ "h": who }),
            format!("A payout to {who} is scheduled."),
        ));
    };
    view! {
        <section aria-labelledby="payout-desk-title">
            <h2 id="payout-desk-title">"Payouts"</h2>
            <h3>"Addresses to verify"</h3>
            {if unverified.is_empty() {
                view! { <p class="empty">"None waiting."</p> }.into_any()
            } else {
                view! { <ul class="accounts">{unverified.into_iter().map(|a| {
                    let who = a.handle.clone().unwrap_or_default();
                    let (h, addr) = (who.clone(), a.address.clone());
                    view! {
                        <li data-account=who.clone()>
                            <strong>{who.clone()}</strong>" "<code>{a.address}</code>" "
                            <button type="button" class="secondary small" data-action="verify-address" on:click=move |_| act.run((
                                "mutation Verify($h: String!, $a: String!) { verifyPayoutAddress(handle: $h, address: $a) { verified } }",
                                json!({ "h": h, "a": addr }),
                                format!("{h}'s payout address is verified."),
                            ))>"Verify"<span class="visually-hidden">" "{who.clone()}</span></button>
                        </li>
                    }
                }).collect_view()}</ul> }.into_any()
            }}
            <form class="inline" on:submit=|ev| ev.prevent_default()>
                <label for="payout-handle">"Person"</label>
                <input id="payout-handle" type="text" placeholder="handle" prop:value=handle on:input=move |ev| set_handle.set(event_target_value(&ev))/>
                <button type="button" data-action="schedule-payout" on:click=schedule>"Schedule what is owed"</button>
            </form>
            {if payouts.is_empty() {
                view! { <p class="empty">"No payouts yet."</p> }.into_any()
            } else {
                view! { <ul class="payouts">{payouts.into_iter().map(|p| view! { <PayoutLine payout=p act=act/> }).collect_view()}</ul> }.into_any()
            }}
        </section>
    }
}

#[component]
fn PayoutLine(payout: Payout, act: Act) -> impl IntoView {
    let scheduled = payout.status == "scheduled";
    let (note, set_note) = signal(String::new());
    let note_id = format!("payout-note-{}", payout.id);
    let (paid_id, failed_id) = (payout.id.clone(), payout.id.clone());
    view! {
        <li data-payout-id=payout.id.clone()>
            <span class=format!("badge status-{}", payout.status)>{payout.status.clone()}</span>
            " "<strong>{payout.handle}</strong>" "{money(payout.amount_minor, &payout.currency)}" · "<TimeAgo at=payout.created_at/>
            {payout.external_reference.map(|r| view! { " · ref "<code>{r}</code> })}
            {payout.failure_reason.map(|r| view! { " · "<span class="error">{r}</span> })}
            {scheduled.then(|| view! {
                <div class="inline">
                    <label for=note_id.clone()>"Reference or reason"</label>
                    <input id=note_id type="text" maxlength="200" prop:value=note on:input=move |ev| set_note.set(event_target_value(&ev))/>
                    <button type="button" class="small" data-action="mark-paid" on:click=move |_| act.run((
                        "mutation Paid($id: ID!, $r: String!) { markPayoutPaid(id: $id, externalReference: $r) { status } }",
                        json!({ "id": paid_id, "r": note.get_untracked() }),
                        "Marked paid.".to_owned(),
                    ))>"Mark paid"</button>
                    <button type="button" class="secondary small" data-action="mark-failed" on:click=move |_| act.run((
                        "mutation Failed($id: ID!, $why: String!) { markPayoutFailed(id: $id, reason: $why) { status } }",
                        json!({ "id": failed_id, "why": note.get_untracked() }),
                        "Marked failed: its money is owed again.".to_owned(),
                    ))>"Mark failed"</button>
                </div>
            })}
        </li>
    }
}
