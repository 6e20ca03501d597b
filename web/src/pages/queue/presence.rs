//! Who else has a waiting question's answer form open ("mara is answering"), from the
//! `answeringNow` subscription. Best effort: nothing here is needed to answer. A mark the other
//! person's tab does not renew (every 10 s while the form is open) lapses after 35 s, so a tab
//! closed without a word does not claim a question for ever.

use std::collections::HashMap;

use leptos::prelude::*;

use crate::live::{self, LiveEvent};
use crate::operations::{AnsweringNow, answering_now};

/// The handles of the others answering each question, by question id, with when (ms since the
/// epoch) the last word on it arrived.
pub(super) type Answering = HashMap<String, (Vec<String>, f64)>;

/// How long a mark lasts without being renewed, in ms.
const LAPSE_MS: f64 = 35_000.0;

/// Follows who else is answering what in niche `slug` into `answering` while the page is shown;
/// the signed-in person's own handle is left out.
pub(super) fn follow(slug: String, answering: RwSignal<Answering>) {
    let me = crate::session::Session::get()
        .person()
        .flatten()
        .map(|p| p.handle)
        .unwrap_or_default();
    live::subscribe::<AnsweringNow>(answering_now::Variables { slug }, move |event| {
        if let LiveEvent::Next(data) = event {
            let a = data.answering_now;
            let others: Vec<String> = a.handles.into_iter().filter(|h| *h != me).collect();
            answering.update(|map| {
                if others.is_empty() {
                    map.remove(&a.question_id);
                } else {
                    map.insert(a.question_id, (others, js_sys::Date::now()));
                }
            });
        }
    });
    if let Ok(handle) = set_interval_with_handle(
        move || {
            let now = js_sys::Date::now();
            if answering.with_untracked(|m| m.values().any(|(_, at)| now - at > LAPSE_MS)) {
                answering.update(|m| m.retain(|_, (_, at)| now - *at <= LAPSE_MS));
            }
        },
        std::time::Duration::from_secs(5),
    ) {
        on_cleanup(move || handle.clear());
    }
}
