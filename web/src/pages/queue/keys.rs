//! The queue's keys: `j`/`k` move between rows, `Enter` opens one, `a`/`d`/`r` answer, decline
//! or send back the current row, Ctrl/Cmd+`Enter` sends an open answer, `Esc` closes it, `u`
//! undoes a pending decline or research, `/` goes to the search and `?` lists them. The keys act
//! through the page's own buttons and fields (found in the document), so a key does exactly what
//! the click it stands for does.

use std::collections::HashSet;

use leptos::prelude::*;
use wasm_bindgen::JsCast;

/// Listens for the queue's keys while the page is shown: `open` holds the ids of the rows open
/// in place, `show_keys` whether the list of keys is shown.
pub(super) fn listen(open: RwSignal<HashSet<String>>, show_keys: RwSignal<bool>) {
    let keys = window_event_listener(leptos::ev::keydown, move |ev| {
        let key = ev.key();
        // In an open card: Ctrl/Cmd+Enter sends what is written, Esc closes the card.
        if let Some(row) = row_of(ev.target()) {
            if key == "Enter" && (ev.ctrl_key() || ev.meta_key()) && !ev.alt_key() {
                let in_note = ev
                    .target()
                    .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
                    .and_then(|el| el.closest(".research-note").ok().flatten())
                    .is_some();
                let kind = if in_note { "send_research" } else { "answered" };
                if let Some(button) = row
                    .query_selector(&format!("form.answer button[data-kind={kind}]"))
                    .ok()
                    .flatten()
                    .and_then(html)
                {
                    ev.prevent_default();
                    button.click();
                }
                return;
            }
            if key == "Escape"
                && let Some(id) = row.get_attribute("data-question-id")
                && open.with_untracked(|o| o.contains(&id))
            {
                ev.prevent_default();
                open.update(|o| {
                    o.remove(&id);
                });
                if let Some(toggle) = row
                    .query_selector("button.row-toggle")
                    .ok()
                    .flatten()
                    .and_then(html)
                {
                    let _ = toggle.focus();
                }
                return;
            }
        }
        if ev.ctrl_key()
            || ev.meta_key()
            || ev.alt_key()
            || crate::components::keys::typing_in(ev.target())
        {
            return;
        }
        let toggles = || {
            document()
                .query_selector_all("section.waiting article.question button.row-toggle")
                .ok()
        };
        match key.as_str() {
            "?" => {
                ev.prevent_default();
                show_keys.update(|s| *s = !*s);
            }
            "Escape" => show_keys.set(false),
            "/" => {
                if let Some(fold) = document()
                    .query_selector("details.filters-fold")
                    .ok()
                    .flatten()
                {
                    let _ = fold.set_attribute("open", "");
                }
                if let Some(search) = document()
                    .query_selector("form.filters input[type=search]")
                    .ok()
                    .flatten()
                    .and_then(html)
                {
                    ev.prevent_default();
                    let _ = search.focus();
                }
            }
            "u" => {
                // Undo the pending decline or research: the current row's, else the only one.
                let undo = current_row()
                    .and_then(|row| row.query_selector(".held button.undo").ok().flatten())
                    .or_else(|| {
                        document()
                            .query_selector(".held button.undo")
                            .ok()
                            .flatten()
                    })
                    .and_then(html);
                if let Some(undo) = undo {
                    ev.prevent_default();
                    undo.click();
                }
            }
            "j" | "k" => {
                let Some(list) = toggles() else { return };
                let n = list.length();
                if n == 0 {
                    return;
                }
                let current = current_row();
                let mut at = None;
                for i in 0..n {
                    let row = list
                        .get(i)
                        .and_then(|node| node.dyn_into::<web_sys::Element>().ok())
                        .and_then(|el| el.closest("article.question").ok().flatten());
                    if row.is_some() && row == current {
                        at = Some(i);
                    }
                }
                let next = match (at, key.as_str()) {
                    (None, _) => 0,
                    (Some(i), "j") => (i + 1).min(n - 1),
                    (Some(i), _) => i.saturating_sub(1),
                };
                if let Some(el) = list
                    .get(next)
                    .and_then(|node| node.dyn_into::<web_sys::HtmlElement>().ok())
                {
                    ev.prevent_default();
                    let _ = el.focus();
                }
            }
            "a" | "d" | "r" => {
                let Some(row) = current_row() else { return };
                let Some(id) = row.get_attribute("data-question-id") else {
                    return;
                };
                ev.prevent_default();
                let was_open = open.with_untracked(|o| o.contains(&id));
                open.update(|o| {
                    o.insert(id.clone());
                });
                let kind = match key.as_str() {
                    "a" => "answered",
                    "d" => "insufficient_context",
                    _ => "needs_research",
                };
                let ready = key != "a" || row_has_answer(&row);
                request_animation_frame(move || {
                    let Some(row) = document()
                        .query_selector(&format!("article.question[data-question-id=\"{id}\"]"))
                        .ok()
                        .flatten()
                    else {
                        return;
                    };
                    if !ready || (!was_open && kind == "answered" && !row_has_answer(&row)) {
                        // Nothing to send yet: go to the first field of the answer.
                        if let Some(field) = row
                            .query_selector("form.answer input[type=radio], form.answer textarea")
                            .ok()
                            .flatten()
                            .and_then(html)
                        {
                            let _ = field.focus();
                        }
                        return;
                    }
                    if let Some(button) = row
                        .query_selector(&format!("form.answer button[data-kind={kind}]"))
                        .ok()
                        .flatten()
                        .and_then(html)
                    {
                        button.click();
                    }
                });
            }
            _ => {}
        }
    });
    on_cleanup(move || keys.remove());
}

/// `el` as an HTML element (one that can take focus and be clicked).
fn html(el: web_sys::Element) -> Option<web_sys::HtmlElement> {
    el.dyn_into::<web_sys::HtmlElement>().ok()
}

/// The row holding the focus, if any.
fn current_row() -> Option<web_sys::Element> {
    document().active_element().and_then(|el| {
        el.closest("article.question[data-question-id]")
            .ok()
            .flatten()
    })
}

/// The open question card `target` is in, if any.
fn row_of(target: Option<web_sys::EventTarget>) -> Option<web_sys::Element> {
    target
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        .and_then(|el| {
            el.closest("article.question[data-question-id] .card-body")
                .ok()
                .flatten()
        })
        .and_then(|body| body.closest("article.question").ok().flatten())
}

/// Whether a row's form has something to send: an option chosen or words typed.
fn row_has_answer(row: &web_sys::Element) -> bool {
    let chosen = row
        .query_selector("form.answer input[type=radio]:checked")
        .ok()
        .flatten()
        .is_some();
    let typed = row
        .query_selector("form.answer textarea[name=body]")
        .ok()
        .flatten()
        .and_then(|el| el.dyn_into::<web_sys::HtmlTextAreaElement>().ok())
        .is_some_and(|t| !t.value().trim().is_empty());
    chosen || typed
}

/// Where focus goes when row `id` closes: the next row's toggle, else the previous one's.
pub(super) fn close_focus_target(id: &str) -> Option<web_sys::HtmlElement> {
    let row = document()
        .query_selector(&format!("article.question[data-question-id=\"{id}\"]"))
        .ok()
        .flatten()?;
    let item = row.parent_element()?;
    let neighbour = item
        .next_element_sibling()
        .or_else(|| item.previous_element_sibling())?;
    neighbour
        .query_selector("button.row-toggle")
        .ok()
        .flatten()
        .and_then(html)
}

/// The keys, listed.
#[component]
pub(super) fn KeyList(close: Callback<()>) -> impl IntoView {
    view! {
        <section class="key-list" role="dialog" aria-label="Keyboard keys">
            <h2>"Keyboard keys"</h2>
            <dl class="facts">
                <dt><kbd>"j"</kbd>" / "<kbd>"k"</kbd></dt><dd>"Next / previous question"</dd>
                <dt><kbd>"Enter"</kbd></dt><dd>"Open or close it"</dd>
                <dt><kbd>"a"</kbd></dt><dd>"Answer (goes to the answer's first field when nothing is chosen or written yet)"</dd>
                <dt><kbd>"d"</kbd></dt><dd>"Not enough context (10 s to undo)"</dd>
                <dt><kbd>"r"</kbd></dt><dd>"Ask the agent to research more"</dd>
                <dt><kbd>"Ctrl"</kbd>" / "<kbd>"⌘"</kbd>" + "<kbd>"Enter"</kbd></dt><dd>"Send the open answer (or the research request being written)"</dd>
                <dt><kbd>"Esc"</kbd></dt><dd>"Close the open question"</dd>
                <dt><kbd>"u"</kbd></dt><dd>"Undo the decline or research request waiting to be sent"</dd>
                <dt><kbd>"/"</kbd></dt><dd>"Search titles"</dd>
                <dt><kbd>"?"</kbd></dt><dd>"Show or hide these keys"</dd>
            </dl>
            <button type="button" class="secondary small" on:click=move |_| close.run(())>"Close"</button>
        </section>
    }
}
