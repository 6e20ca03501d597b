//! Signals: what the anomaly monitor noticed, newest first and live, each to acknowledge once an
//! admin has looked at it (the tab counts the ones nobody has).

use leptos::prelude::*;

use crate::api::{self, ApiError};
use crate::components::time_ago::TimeAgo;
use crate::live::{self, LiveEvent};
use crate::operations::{
    AcknowledgeSignal, AnomalySignalArrivals, AnomalySignals, acknowledge_signal,
    anomaly_signal_arrivals, anomaly_signals,
};
use crate::vocab::Severity;

use super::{Counts, FORBIDDEN};

type SignalRow = anomaly_signals::SignalRow;

/// The Signals section.
#[component]
pub fn SignalsSection() -> impl IntoView {
    let signals = RwSignal::new(Vec::<SignalRow>::new());
    let problem = RwSignal::new(None::<ApiError>);
    let read = move || {
        leptos::task::spawn_local(async move {
            match api::run::<AnomalySignals>(anomaly_signals::Variables).await {
                Ok(latest) => {
                    problem.set(None);
                    // Merged, never cleared first: a read that started before a live arrival
                    // may finish after it, and must not take it away (signals are never deleted).
                    merge_signals(signals, latest.anomaly_signals);
                }
                Err(err) => problem.set(Some(err)),
            }
        })
    };
    let counts = Counts::of_desk();
    // Signals arrive live; (re)subscribed, the log is read again so nothing is missing.
    live::subscribe::<AnomalySignalArrivals>(anomaly_signal_arrivals::Variables, move |event| {
        match event {
            LiveEvent::Connected => read(),
            LiveEvent::Next(data) => {
                merge_signals(signals, vec![SignalRow::from(data.anomaly_signals)]);
                if let Some(counts) = counts {
                    counts.refresh();
                }
            }
            LiveEvent::Failed(_) | LiveEvent::Dropped => {}
        }
    });
    read();
    let acknowledge: Action<String, Result<(), ApiError>> =
        Action::new_local(move |id: &String| {
            let id = id.clone();
            async move {
                let result = api::send::<AcknowledgeSignal>(acknowledge_signal::Variables { id })
                    .await
                    .map(|_| ());
                read();
                if let Some(counts) = counts {
                    counts.refresh();
                }
                result
            }
        });
    let busy = acknowledge.pending();
    view! {
        <section aria-labelledby="signals-title">
            <h2 id="signals-title">"Anomaly signals"</h2>
            <p class="muted">"Logged for a person to look at; they change nothing by themselves. Acknowledge one once you have."</p>
            {move || problem.get().map(|err| {
                let words = if err.code == crate::api::ErrorCode::Forbidden {
                    format!("{FORBIDDEN}. {err}")
                } else {
                    err.to_string()
                };
                view! { <p class="error" role="alert">{words}</p> }
            })}
            {move || acknowledge.value().get().map(|result| match result {
                Ok(()) => view! { <p class="notice" role="status">"Acknowledged."</p> }.into_any(),
                Err(err) => view! { <p class="error" role="alert">{err.to_string()}</p> }.into_any(),
            })}
            <Show when=move || !signals.with(Vec::is_empty) fallback=|| view! { <p class="empty">"No signals."</p> }>
                <ul class="signals">
                    <For each=move || signals.get() key=|s| (s.signal_id.clone(), s.acknowledged_by.clone()) children=move |s| {
                        let severity = Severity::of(&s.severity);
                        let id = s.id.clone();
                        let kind = s.kind.clone();
                        let state = match s.acknowledged_by.clone() {
                            Some(who) => view! { <p class="muted acknowledged">"Acknowledged by "{who}</p> }.into_any(),
                            None => view! {
                                <button type="button" class="secondary small" data-action="acknowledge" disabled=busy on:click=move |_| {
                                    acknowledge.dispatch(id.clone());
                                }>"Acknowledge"<span class="visually-hidden">" "{kind.clone()}</span></button>
                            }.into_any(),
                        };
                        view! {
                            <li data-signal-id=s.signal_id.clone() class:new=s.acknowledged_by.is_none()>
                                <span class=format!("badge severity-{severity}")>{severity.to_string()}</span>
                                " "<strong>{s.kind}</strong>" on "{s.subject_type.to_string()}" "<code>{s.subject_id}</code>" · "<TimeAgo at=s.received_at/>
                                <pre class="evidence">{s.finding}</pre>
                                {state}
                            </li>
                        }
                    }/>
                </ul>
            </Show>
        </section>
    }
}

/// Add `more` to the signals shown, once each (the newer word on one wins), newest first.
fn merge_signals(signals: RwSignal<Vec<SignalRow>>, more: Vec<SignalRow>) {
    signals.update(|list| {
        for s in more {
            match list.iter_mut().find(|known| known.signal_id == s.signal_id) {
                Some(known) => *known = s,
                None => list.push(s),
            }
        }
        list.sort_by(|a, b| b.received_at.cmp(&a.received_at));
    });
}
