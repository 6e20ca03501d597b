//! Payouts: who is owed what (per person and currency) with a settle action per row, the payout
//! addresses waiting to be verified, and the payouts made, to mark paid (with the payment's
//! reference) or failed.

use leptos::prelude::*;

use crate::api;
use crate::components::loaded::Loaded;
use crate::components::money::money;
use crate::components::time_ago::TimeAgo;
use crate::operations::{AdminPayouts, admin_payouts};
use crate::vocab::PayoutStatus;

use super::{Act, Command, FORBIDDEN, Outcome, desk};

/// The Payouts section.
#[component]
pub fn PayoutsSection() -> impl IntoView {
    let read = LocalResource::new(|| api::run::<AdminPayouts>(admin_payouts::Variables));
    let act = desk(move || read.refetch());
    view! {
        <section aria-labelledby="payouts-title">
            <h2 id="payouts-title">"Payouts"</h2>
            <Outcome act=act/>
            <Loaded forbidden=FORBIDDEN>
                {move || read.get().map(|r| r.map(|r| view! {
                    <Owed owed=r.owed act=act/>
                    <Addresses accounts=r.payout_accounts act=act/>
                    <h3>"Payouts made"</h3>
                    {if r.payouts.is_empty() {
                        view! { <p class="empty">"No payouts yet."</p> }.into_any()
                    } else {
                        view! { <ul class="payouts">{r.payouts.into_iter().map(|p| view! { <PayoutLine payout=p act=act/> }).collect_view()}</ul> }.into_any()
                    }}
                }))}
            </Loaded>
        </section>
    }
}

/// Everyone owed something, one row per person and currency, each with its settle action.
#[component]
fn Owed(owed: Vec<admin_payouts::AdminPayoutsOwed>, act: Act) -> impl IntoView {
    let busy = act.pending();
    if owed.is_empty() {
        return view! { <h3>"Owed"</h3><p class="empty">"Nobody is owed anything."</p> }.into_any();
    }
    let rows = owed
        .into_iter()
        .map(|o| {
            let settle = Command::SchedulePayout {
                handle: o.handle.clone(),
                currency: o.currency.clone(),
            };
            let action = if o.address_verified {
                view! {
                    <button type="button" class="small" data-action="settle" disabled=busy on:click=move |_| { act.dispatch(settle.clone()); }>
                        "Schedule payout"<span class="visually-hidden">" to "{o.handle.clone()}" in "{o.currency.clone()}</span>
                    </button>
                }
                .into_any()
            } else {
                view! { <span class="muted">"Verify their address first"</span> }.into_any()
            };
            view! {
                <tr data-owed=format!("{}:{}", o.handle, o.currency)>
                    <td data-label="Person">{o.handle.clone()}</td>
                    <td class="num" data-label="Owed">{money(o.amount_minor, &o.currency)}</td>
                    <td class="num" data-label="Allocations">{o.allocations}</td>
                    <td class="row-action">{action}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <h3>"Owed"</h3>
        <div class="table-wrap" tabindex="0" role="region" aria-label="Who is owed what">
            <table class="owed stack">
                <thead><tr>
                    <th scope="col">"Person"</th><th scope="col" class="num">"Owed"</th>
                    <th scope="col" class="num">"Allocations"</th><th scope="col"><span class="visually-hidden">"Settle"</span></th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
    }
    .into_any()
}

/// Payout addresses saved but not yet verified.
#[component]
fn Addresses(accounts: Vec<admin_payouts::AdminPayoutsPayoutAccounts>, act: Act) -> impl IntoView {
    let busy = act.pending();
    let unverified: Vec<_> = accounts.into_iter().filter(|a| !a.verified).collect();
    view! {
        <h3>"Addresses to verify"</h3>
        {if unverified.is_empty() {
            view! { <p class="empty">"None waiting."</p> }.into_any()
        } else {
            view! { <ul class="accounts">{unverified.into_iter().map(|a| {
                let who = a.handle.clone().unwrap_or_default();
                let command = Command::VerifyAddress { handle: who.clone(), address: a.address.clone() };
                view! {
                    <li data-account=who.clone()>
                        <strong>{who.clone()}</strong>" "<code class="address"><bdi>{a.address}</bdi></code>" "
                        <button type="button" class="secondary small" data-action="verify-address" disabled=busy on:click=move |_| {
                            act.dispatch(command.clone());
                        }>"Verify"<span class="visually-hidden">" "{who.clone()}</span></button>
                    </li>
                }
            }).collect_view()}</ul> }.into_any()
        }}
    }
}

#[component]
fn PayoutLine(payout: admin_payouts::AdminPayoutsPayouts, act: Act) -> impl IntoView {
    let busy = act.pending();
    let status = PayoutStatus::of(&payout.status);
    let scheduled = status == PayoutStatus::Scheduled;
    let (note, set_note) = signal(String::new());
    let note_id = format!("payout-note-{}", payout.id);
    let limit_id = format!("payout-note-limit-{}", payout.id);
    let (paid_id, failed_id) = (payout.id.clone(), payout.id.clone());
    view! {
        <li data-payout-id=payout.id.clone()>
            <span class=format!("badge status-{status}")>{status.to_string()}</span>
            " "<strong>{payout.handle}</strong>" "{money(payout.amount_minor, &payout.currency)}" · "<TimeAgo at=payout.created_at/>
            {payout.external_reference.map(|r| view! { " · ref "<code>{r}</code> })}
            {payout.failure_reason.map(|r| view! { " · "<span class="error"><bdi>{r}</bdi></span> })}
            {scheduled.then(|| view! {
                <div class="inline">
                    <label for=note_id.clone()>"Reference or reason"</label>
                    <input id=note_id type="text" maxlength="200" aria-describedby=limit_id.clone() prop:value=note on:input=move |ev| set_note.set(event_target_value(&ev))/>
                    <button type="button" class="small" data-action="mark-paid" disabled=busy on:click=move |_| {
                        act.dispatch(Command::MarkPaid { id: paid_id.clone(), reference: note.get_untracked() });
                    }>"Mark paid"</button>
                    <button type="button" class="secondary small" data-action="mark-failed" disabled=busy on:click=move |_| {
                        act.dispatch(Command::MarkFailed { id: failed_id.clone(), reason: note.get_untracked() });
                    }>"Mark failed"</button>
                    <crate::components::notice::LimitNote id=limit_id value=note max=200/>
                </div>
            })}
        </li>
    }
}
