//! Deliveries: what askloop wrote for the agents, failures first, each with its attempts
//! (redeliver). An event for an agent with no endpoint is never sent: it says so, instead of a
//! pending status, a next try and a count of attempts that would never move.

use leptos::prelude::*;

use crate::api;
use crate::components::loaded::Loaded;
use crate::components::time_ago::TimeAgo;
use crate::operations::{AdminDeliveries, admin_deliveries};
use crate::vocab::{AttemptOutcome, DeliveryStatus};

use super::{Act, Command, FORBIDDEN, Outcome, desk};

type Delivery = admin_deliveries::AdminDeliveriesDeliveries;

/// The Deliveries section.
#[component]
pub fn DeliveriesSection() -> impl IntoView {
    let read = LocalResource::new(|| api::run::<AdminDeliveries>(admin_deliveries::Variables));
    let act = desk(move || read.refetch());
    view! {
        <section aria-labelledby="deliveries-title">
            <h2 id="deliveries-title">"Deliveries to the agents"</h2>
            <Outcome act=act/>
            <Loaded forbidden=FORBIDDEN>
                {move || read.get().map(|r| r.map(|r| view! { <DeliveryTable deliveries=r.deliveries act=act/> }))}
            </Loaded>
        </section>
    }
}

#[component]
fn DeliveryTable(deliveries: Vec<Delivery>, act: Act) -> impl IntoView {
    if deliveries.is_empty() {
        return view! { <p class="empty">"Nothing has been sent yet."</p> }.into_any();
    }
    view! {
        <div class="table-wrap" tabindex="0" role="region" aria-label="Deliveries">
            <table class="deliveries stack">
                <thead><tr>
                    <th scope="col">"Event"</th><th scope="col">"Status"</th><th scope="col">"Attempts"</th>
                    <th scope="col">"Last error"</th><th scope="col">"Written"</th><th scope="col"><span class="visually-hidden">"Redeliver"</span></th>
                </tr></thead>
                <tbody>
                    {deliveries.into_iter().map(|d| view! { <DeliveryRow delivery=d act=act/> }).collect_view()}
                </tbody>
            </table>
        </div>
    }
    .into_any()
}

#[component]
fn DeliveryRow(delivery: Delivery, act: Act) -> impl IntoView {
    let busy = act.pending();
    let status = delivery.status.clone();
    let id = delivery.id.clone();
    let count = delivery.attempts.len();
    let by_lookup = delivery.reads_by_lookup;
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
                <li><TimeAgo at=a.at/>" · "{AttemptOutcome::of(&a.outcome).to_string()}" · "{what}" · "{a.duration_ms}" ms"</li>
            }
        })
        .collect_view();
    let status_cell = if by_lookup {
        view! {
            <td colspan="2" data-no-endpoint="" data-label="Status">
                <span class="badge status-no-endpoint">"no endpoint"</span>
                <span class="muted">": the agent reads these with the lookup route"</span>
            </td>
        }
        .into_any()
    } else {
        view! {
            <td data-label="Status">
                <span class=format!("badge status-{status}")>{status.to_string()}</span>
                {(status == DeliveryStatus::Pending).then(|| view! { <span class="muted">" next "<TimeAgo at=delivery.next_attempt_at/></span> })}
            </td>
            <td class="num" data-label="Attempts">{count}</td>
        }
        .into_any()
    };
    view! {
        <tr data-delivery-id=delivery.id.clone() class=format!("delivery-{status}")>
            <td data-label="Event">
                <span class="event" data-event-type=delivery.event_type.clone()>{crate::vocab::event_words(&delivery.event_type)}</span>
                <details>
                    <summary><span class="visually-hidden">"Envelope "</span><span class="envelope">{delivery.envelope_id}</span></summary>
                    <ol class="attempts">{attempts}</ol>
                </details>
            </td>
            {status_cell}
            <td class="last-error" data-label="Last error"><bdi>{delivery.last_error.unwrap_or_default()}</bdi></td>
            <td data-label="Written"><TimeAgo at=delivery.created_at/></td>
            <td class="row-action">
                {(!by_lookup).then(|| view! {
                    <button type="button" class="secondary small" data-action="redeliver" disabled=busy on:click=move |_| {
                        act.dispatch(Command::Redeliver { id: id.clone() });
                    }>"Redeliver"</button>
                })}
            </td>
        </tr>
    }
}
