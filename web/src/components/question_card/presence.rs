//! Telling the server which question's answer form this person has open (`answering`), so the
//! others in the niche see "mara is answering". A courtesy, best effort: a refusal or a dropped
//! request changes nothing. One form per tab is marked: the card shown last, or the one the
//! person last worked in; the mark is renewed every 10 s while the card is shown (the others'
//! pages let it lapse after 35 s) and taken back when the card goes.

use leptos::prelude::*;

use crate::api;
use crate::operations::{MarkAnswering, mark_answering};

thread_local! {
    /// The question whose form this tab has said it has open (`answering`), if any.
    static MARKED: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Whether question `id` is the one this tab has said it has open.
fn marked(id: &str) -> bool {
    MARKED.with(|m| m.borrow().as_deref() == Some(id))
}

/// Tell the server (best effort) that this person has question `id`'s form open, or none.
fn mark(id: Option<String>) {
    let changed = MARKED.with(|m| {
        let mut m = m.borrow_mut();
        let changed = *m != id;
        m.clone_from(&id);
        changed
    });
    if !changed && id.is_none() {
        return;
    }
    let variables = match id {
        Some(question_id) => mark_answering::Variables {
            question_id,
            open: true,
        },
        None => mark_answering::Variables {
            question_id: "0".to_owned(),
            open: false,
        },
    };
    leptos::task::spawn_local(async move {
        // Presence is a courtesy: a refusal or a dropped request changes nothing.
        let _ = api::run::<MarkAnswering>(variables).await;
    });
}

/// Marks question `id`'s form open while the card is shown (renewed every 10 s unless
/// `settled`), and takes the mark back when the card goes. Returns what the card runs when the
/// person works in it: the mark moves to this question if another card had it.
pub(super) fn mark_while_shown(id: String, settled: Signal<bool>) -> impl Fn() + Clone {
    mark(Some(id.clone()));
    if let Ok(handle) = set_interval_with_handle(
        {
            let id = id.clone();
            move || {
                if !settled.get_untracked() && marked(&id) {
                    MARKED.with(|m| *m.borrow_mut() = None);
                    mark(Some(id.clone()));
                }
            }
        },
        std::time::Duration::from_secs(10),
    ) {
        let id = id.clone();
        on_cleanup(move || {
            handle.clear();
            if marked(&id) {
                mark(None);
            }
        });
    }
    move || {
        if !settled.get_untracked() && !marked(&id) {
            mark(Some(id.clone()));
        }
    }
}
