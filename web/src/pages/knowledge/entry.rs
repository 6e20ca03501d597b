//! `/dashboard/niches/:slug/knowledge/:id`: one knowledge entry. It shows one version with who
//! answered and verified it, and every version of its question's line; a current one has a form
//! to propose a correction: another of the question's options, new words, or both, with a note.
//! The whole proposed version is shown before it is sent; it waits for review by someone other
//! than its author, and a person has at most one correction of an entry waiting (sending again
//! returns the waiting one). Everything the API returns is shown as text, never as markup.

use leptos::prelude::*;
use leptos_router::components::A;

use super::{entry_path, knowledge_path, path_key};
use crate::api;
use crate::components::loaded::Loaded;
use crate::components::question_card::{LongText, visible_controls};
use crate::components::time_ago::TimeAgo;
use crate::operations::{
    KnowledgeEntryPage as EntryRead, ProposeKnowledgeCorrection, knowledge_entry_page,
    propose_knowledge_correction,
};
use crate::pages::queue::question_path;
use crate::vocab::{KnowledgeStatus, Verification};

type Entry = knowledge_entry_page::KnowledgeEntryPageKnowledgeEntryEntry;
type Version = knowledge_entry_page::KnowledgeEntryPageKnowledgeEntryVersions;
type EntryOption = knowledge_entry_page::KnowledgeEntryPageKnowledgeEntryOptions;

lazy_page! {
    /// The entry page as a lazily loaded route.
    KnowledgeEntryRoute => KnowledgeEntryRouteView
}

/// A fresh entry page (and read) for each entry in the path.
#[component]
fn KnowledgeEntryRouteView() -> impl IntoView {
    let key = path_key();
    move || {
        let (slug, id) = key.get();
        view! { <EntryPage slug=slug id=id/> }
    }
}

/// How often agents relied on an entry (reuses, and questions settled from it), in words.
fn relied_on(count: i64) -> String {
    match count {
        0 => "Not relied on yet".to_owned(),
        1 => "Relied on once".to_owned(),
        n => format!("Relied on {n} times"),
    }
}

/// One entry with its versions.
#[component]
fn EntryPage(slug: String, id: String) -> impl IntoView {
    let named = RwSignal::new(format!("Entry {id}"));
    {
        let slug = slug.clone();
        crate::components::title::page_title(move || {
            format!("{} · Knowledge · {slug}", named.get())
        });
    }
    let read_id = id.clone();
    let entry = LocalResource::new(move || {
        let entry_id = read_id.clone();
        async move { api::run::<EntryRead>(knowledge_entry_page::Variables { entry_id }).await }
    });
    let back = knowledge_path(&slug);
    view! {
        <main class="knowledge-entry-page">
            <p><A href=back>"← Back to the knowledge"</A></p>
            <Loaded loading="Loading the entry…" forbidden="Only the niche's active members and admins read its knowledge">
                {
                    let slug = slug.clone();
                    move || {
                        let slug = slug.clone();
                        entry.get().map(|result| result.map(move |data| {
                            let found = data.knowledge_entry;
                            named.set(visible_controls(&found.entry.title));
                            view! { <EntryView entry=found.entry versions=found.versions options=found.options slug=slug/> }
                        }))
                    }
                }
            </Loaded>
        </main>
    }
}

/// An entry: what was asked and answered, by whom, how it was verified, where it is in its life,
/// and every version of its line.
#[component]
fn EntryView(
    entry: Entry,
    versions: Vec<Version>,
    options: Vec<EntryOption>,
    slug: String,
) -> impl IntoView {
    let e = entry;
    let status = KnowledgeStatus::of(&e.status);
    let ended = match (&status, e.ended_at.clone()) {
        (KnowledgeStatus::Retracted, at) => Some(view! {
            <p class="ended retracted" data-fact="ended">
                "Retracted"
                {at.map(|at| view! { " "<TimeAgo at=at/> })}
                {match e.ended_reason.clone() {
                    Some(reason) => view! { ": "<bdi>{visible_controls(&reason)}</bdi> }.into_any(),
                    None => view! { ", with no reason given." }.into_any(),
                }}
            </p>
        }.into_any()),
        (KnowledgeStatus::Superseded, at) => Some(view! {
            <p class="ended" data-fact="ended">
                "Superseded by a newer version"
                {at.map(|at| view! { " "<TimeAgo at=at/> })}
                "."
            </p>
        }.into_any()),
        _ => None,
    };
    let verified = match (Verification::of(&e.verification), e.verified_by.clone()) {
        (Verification::Trust, _) | (_, None) => view! { "trusted on arrival" }.into_any(),
        (_, Some(by)) => view! { "verified by "<strong>{by}</strong> }.into_any(),
    };
    let question_href = question_path(&slug, &e.question_id);
    let this_id = e.id.clone();
    let correct = (status == KnowledgeStatus::Current).then(|| {
        let current = Current {
            entry: e.id.clone(),
            option: e.option_id.clone(),
            answer: e.answer.clone().unwrap_or_default(),
        };
        view! { <CorrectionForm current=current options=options/> }
    });
    view! {
        <article class="knowledge-entry" data-entry-id=e.id.clone()>
            <p class="meta">
                <span class=format!("badge knowledge-{status}") data-fact="status">{status.to_string()}</span>
                <span class="muted" data-fact="version">"version "{e.version}</span>
            </p>
            <h1><bdi>{visible_controls(&e.title)}</bdi></h1>
            {ended}
            <h2>"Question"</h2>
            <LongText text=e.question class="question-text" tag_quote=false/>
            <h2>"Answer"</h2>
            <dl class="facts">
                {e.option_label.map(|label| view! {
                    <dt>"Chosen option"</dt>
                    <dd data-fact="option"><bdi>{visible_controls(&label)}</bdi></dd>
                })}
                {e.answer.map(|answer| view! {
                    <dt>"In words"</dt>
                    <dd data-fact="answer"><LongText text=answer class="answer-words" tag_quote=false/></dd>
                })}
                <dt>"Who"</dt>
                <dd data-fact="who">"Answered by "<strong>{e.answered_by}</strong>", "{verified}</dd>
                <dt>"When"</dt>
                <dd data-fact="when">"Verified "<TimeAgo at=e.verified_at/></dd>
                <dt>"Relied on"</dt>
                <dd data-fact="reuses">{relied_on(e.reuse_count)}</dd>
            </dl>
            <p><A href=question_href>"Open the question"</A></p>
        </article>
        {correct}
        <section aria-labelledby="versions-title">
            <h2 id="versions-title">"Versions"</h2>
            <ol class="versions">
                {versions.into_iter().map(|v| {
                    let status = KnowledgeStatus::of(&v.status);
                    let current = (v.id == this_id).then_some("page");
                    let href = entry_path(&slug, &v.id);
                    view! {
                        <li data-entry-id=v.id.clone()>
                            <A href=href attr:aria-current=current>"Version "{v.version}</A>
                            " "<span class=format!("badge knowledge-{status}")>{status.to_string()}</span>
                            <span class="muted">" verified "<TimeAgo at=v.verified_at/></span>
                        </li>
                    }
                }).collect_view()}
            </ol>
        </section>
    }
}

/// The version a correction starts from.
#[derive(Clone, PartialEq)]
struct Current {
    entry: String,
    option: Option<String>,
    answer: String,
}

/// What a correction would send: the option and the words that differ from the current version.
fn changes(
    current: &Current,
    option: &Option<String>,
    answer: &str,
) -> (Option<String>, Option<String>) {
    let option = option
        .clone()
        .filter(|o| current.option.as_ref() != Some(o));
    let answer = Some(answer.trim().to_owned())
        .filter(|a| !a.is_empty() && a.as_str() != current.answer.trim());
    (option, answer)
}

/// The longest corrected answer and note the server takes.
const ANSWER_MAX: usize = 8000;
const NOTE_MAX: usize = 2000;

/// "Propose a correction" for a current entry: another of the question's options, new words, or
/// both (starting from the current version), and a note for the reviewer. "Preview" shows the
/// whole proposed version; only "Send the correction" sends it. A correction that changes
/// nothing is refused here, beside the form. What the server says — proposed, already waiting,
/// or why not — is shown beside the form; sent, the form starts again from the current version.
#[component]
fn CorrectionForm(current: Current, options: Vec<EntryOption>) -> impl IntoView {
    let start = StoredValue::new(current.clone());
    let choice = RwSignal::new(current.option.clone());
    let answer = RwSignal::new(current.answer.clone());
    let note = RwSignal::new(String::new());
    let previewing = RwSignal::new(false);
    let problem = RwSignal::new(None::<String>);
    let labels = StoredValue::new(
        options
            .iter()
            .map(|o| (o.id.clone(), o.label.clone()))
            .collect::<Vec<_>>(),
    );
    let label_of = move |id: &Option<String>| {
        id.as_ref().and_then(|id| {
            labels.with_value(|l| {
                l.iter()
                    .find(|(i, _)| i == id)
                    .map(|(_, label)| label.clone())
            })
        })
    };
    let propose = Action::new_local(
        move |(option, words, why): &(Option<String>, Option<String>, String)| {
            let variables = propose_knowledge_correction::Variables {
                input: propose_knowledge_correction::KnowledgeCorrectionInput {
                    entry_id: start.with_value(|c| c.entry.clone()),
                    option_id: option.clone(),
                    answer: words.clone(),
                    note: Some(why.clone()).filter(|n| !n.trim().is_empty()),
                },
            };
            async move {
                let sent = api::run::<ProposeKnowledgeCorrection>(variables).await;
                if sent.is_ok() {
                    // Filed (or already waiting): the form starts again from the current version.
                    let c = start.get_value();
                    choice.set(c.option);
                    answer.set(c.answer);
                    note.set(String::new());
                    previewing.set(false);
                }
                sent.map(|data| data.propose_knowledge_correction.already_pending)
            }
        },
    );
    let busy = propose.pending();
    let preview = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let (option, words) =
            start.with_value(|c| changes(c, &choice.get_untracked(), &answer.get_untracked()));
        if option.is_none() && words.is_none() {
            problem.set(Some(
                "The correction changes nothing: choose another option, change the words, or both."
                    .to_owned(),
            ));
            return;
        }
        problem.set(None);
        previewing.set(true);
        request_animation_frame(|| {
            if let Some(el) = document().get_element_by_id("correction-preview-title") {
                use wasm_bindgen::JsCast;
                if let Ok(el) = el.dyn_into::<web_sys::HtmlElement>() {
                    let _ = el.focus();
                }
            }
        });
    };
    let send = move |_| {
        if busy.get_untracked() {
            return;
        }
        let (option, words) =
            start.with_value(|c| changes(c, &choice.get_untracked(), &answer.get_untracked()));
        propose.dispatch((option, words, note.get_untracked()));
    };
    let has_options = !options.is_empty();
    let radios = options
        .into_iter()
        .map(|o| {
            let (value, checked) = (o.id.clone(), o.id.clone());
            let is_current = current.option.as_deref() == Some(o.id.as_str());
            view! {
                <label class="option">
                    <input type="radio" name="correction-option" value=o.id.clone()
                        prop:checked=move || choice.get().as_deref() == Some(checked.as_str())
                        disabled=move || previewing.get()
                        on:change=move |_| choice.set(Some(value.clone()))/>
                    " "<bdi>{visible_controls(&o.label)}</bdi>
                    {is_current.then_some(" (now)")}
                </label>
            }
        })
        .collect_view();
    let proposed = move || {
        previewing.get().then(|| {
            let c = start.get_value();
            let (option, words) = changes(&c, &choice.get_untracked(), &answer.get_untracked());
            let option_changed = option.is_some();
            let words_changed = words.is_some();
            let shown_option = label_of(&choice.get_untracked());
            let shown_words = answer.get_untracked().trim().to_owned();
            let why = note.get_untracked().trim().to_owned();
            view! {
                <section class="correction-preview" aria-labelledby="correction-preview-title">
                    <h3 id="correction-preview-title" tabindex="-1">"The proposed version"</h3>
                    <dl class="facts">
                        {shown_option.map(|label| view! {
                            <dt>"Chosen option"</dt>
                            <dd data-fact="proposed-option">
                                <bdi>{visible_controls(&label)}</bdi>
                                {if option_changed { " (changed)" } else { " (unchanged)" }}
                            </dd>
                        })}
                        <dt>"In words"</dt>
                        <dd data-fact="proposed-answer">
                            <LongText text=shown_words class="answer-words" tag_quote=false/>
                            <span class="muted">{if words_changed { "Changed." } else { "Unchanged." }}</span>
                        </dd>
                        <dt>"Note"</dt>
                        <dd data-fact="proposed-note">
                            {if why.is_empty() { view! { <span class="muted">"No note."</span> }.into_any() } else { view! { <bdi>{why}</bdi> }.into_any() }}
                        </dd>
                    </dl>
                    <div class="actions">
                        <button type="button" data-action="send-correction" disabled=busy aria-busy=move || busy.get().to_string() on:click=send>
                            {move || if busy.get() { "Sending…" } else { "Send the correction" }}
                        </button>
                        <button type="button" class="secondary" disabled=busy on:click=move |_| previewing.set(false)>"Edit"</button>
                    </div>
                </section>
            }
        })
    };
    view! {
        <section aria-labelledby="correct-title" class="correction">
            <h2 id="correct-title">"Propose a correction"</h2>
            <p class="muted">"Start from the current version: choose another option, change the words, or both. You see the whole proposed version before it is sent."</p>
            <form on:submit=preview aria-describedby="correction-problem">
                {has_options.then(|| view! {
                    <fieldset class="options">
                        <legend>"Chosen option"</legend>
                        {radios}
                    </fieldset>
                })}
                <label for="correction-answer">"The answer in words"</label>
                <textarea id="correction-answer" maxlength=ANSWER_MAX.to_string() rows="4" readonly=move || previewing.get()
                    aria-describedby="correction-answer-count"
                    prop:value=answer on:input=move |ev| answer.set(event_target_value(&ev))></textarea>
                <p id="correction-answer-count" class="muted counter">{move || format!("{} of {ANSWER_MAX} characters", answer.with(|a| a.chars().count()))}</p>
                <label for="correction-note">"Why (for the reviewer; optional)"</label>
                <input id="correction-note" type="text" maxlength=NOTE_MAX.to_string() readonly=move || previewing.get()
                    prop:value=note on:input=move |ev| note.set(event_target_value(&ev))/>
                <div id="correction-problem" aria-live="polite">
                    {move || problem.get().map(|p| view! { <p class="error form-error" role="alert">{p}</p> })}
                </div>
                <Show when=move || !previewing.get()>
                    <button type="submit" data-action="preview-correction">"Preview the correction"</button>
                </Show>
            </form>
            {proposed}
            <div aria-live="polite" class="correction-outcome">
                {move || propose.value().get().map(|result| match result {
                    Ok(false) => view! {
                        <p class="notice" role="status">"Proposed. It becomes the next version once someone other than you verifies it."</p>
                    }.into_any(),
                    Ok(true) => view! {
                        <p class="notice" role="status" data-already-pending="">"You already have a correction of this entry waiting for review, so nothing new was filed. It becomes the next version once someone other than you verifies it."</p>
                    }.into_any(),
                    Err(err) => view! { <p class="error" role="alert">{err.to_string()}</p> }.into_any(),
                })}
            </div>
        </section>
    }
}
