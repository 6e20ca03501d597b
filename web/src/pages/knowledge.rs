//! `/dashboard/niches/:slug/knowledge` and `/dashboard/niches/:slug/knowledge/:id`: a niche's
//! knowledge (docs/contract.md#knowledge) as its active members and admins read it.
//!
//! The search page searches as the person types: the text is sent once typing pauses (250 ms),
//! each search replaces the results in place, and the number found is announced. A search ranks
//! entries holding any of its words (a paraphrase finds an entry); a quoted phrase must appear
//! and a `-word` must not. The settled search is kept in the address (`?q=`), so a reload or a
//! shared link shows the same results. Every search
//! is numbered and only the newest one's reply is shown, so a reply to an older keystroke never
//! overwrites a newer one's results. "Load more" follows the server's cursor for the search the
//! results show.
//!
//! The entry page shows one version with who answered and verified it, and every version of its
//! question's line; a current one has a form to propose a correction: another of the question's
//! options, new words, or both, with a note. The whole proposed version is shown before it is
//! sent; it waits for review by someone other than its author, and a person has at most one
//! correction of an entry waiting (sending again returns the waiting one). Everything the API
//! returns is shown as text, never as markup. Both pages are one lazily loaded route chunk.

use std::time::Duration;

use leptos::Params;
use leptos::prelude::*;
use leptos_router::NavigateOptions;
use leptos_router::components::A;
use leptos_router::hooks::{use_navigate, use_params, use_query_map};
use leptos_router::params::Params;
use leptos_router::{LazyRoute, lazy_route};

use crate::api::{self, ApiError};
use crate::components::loaded::Loaded;
use crate::components::question_card::{LongText, visible_controls};
use crate::components::time_ago::TimeAgo;
use crate::operations::{
    KnowledgeEntryPage as EntryRead, KnowledgeSearch, ProposeKnowledgeCorrection,
    knowledge_entry_page, knowledge_search, propose_knowledge_correction,
};
use crate::pages::queue::question_path;
use crate::vocab::{KnowledgeStatus, Verification};

type Hit = knowledge_search::KnowledgeHit;
type Entry = knowledge_entry_page::KnowledgeEntryPageKnowledgeEntryEntry;
type Version = knowledge_entry_page::KnowledgeEntryPageKnowledgeEntryVersions;
type EntryOption = knowledge_entry_page::KnowledgeEntryPageKnowledgeEntryOptions;

/// How long typing must pause before the text is searched.
const DEBOUNCE: Duration = Duration::from_millis(250);

/// The route's typed parameters.
#[derive(Params, Clone, PartialEq)]
pub struct KnowledgeParams {
    /// The niche's slug.
    pub slug: Option<String>,
    /// The entry's id (the entry page only).
    pub id: Option<String>,
}

/// The path of niche `slug`'s knowledge.
pub fn knowledge_path(slug: &str) -> String {
    format!("/dashboard/niches/{slug}/knowledge")
}

/// How often agents relied on an entry (reuses, and questions settled from it), in words.
fn relied_on(count: i64) -> String {
    match count {
        0 => "Not relied on yet".to_owned(),
        1 => "Relied on once".to_owned(),
        n => format!("Relied on {n} times"),
    }
}

/// The path of entry `id` of niche `slug`'s knowledge.
pub fn entry_path(slug: &str, id: &str) -> String {
    format!("/dashboard/niches/{slug}/knowledge/{id}")
}

/// The search page as a lazily loaded route.
pub struct KnowledgeRoute;

#[lazy_route]
impl LazyRoute for KnowledgeRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <KnowledgeRouteView/> }.into_any()
    }
}

/// The entry page as a lazily loaded route.
pub struct KnowledgeEntryRoute;

#[lazy_route]
impl LazyRoute for KnowledgeEntryRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <KnowledgeEntryRouteView/> }.into_any()
    }
}

/// The slug and id in the path.
fn path_key() -> Memo<(String, String)> {
    let params = use_params::<KnowledgeParams>();
    Memo::new(move |_| {
        params
            .get()
            .map(|p| (p.slug.unwrap_or_default(), p.id.unwrap_or_default()))
            .unwrap_or_default()
    })
}

/// A fresh search page for each niche in the path.
#[component]
fn KnowledgeRouteView() -> impl IntoView {
    let key = path_key();
    move || view! { <KnowledgePage slug=key.get().0/> }
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

/// What a search asks for: the settled text and the status.
#[derive(Clone, PartialEq)]
struct Asked {
    search: String,
    status: KnowledgeStatus,
}

/// A read page of results, with the search it answers and the cursor after it while the server
/// has more.
#[derive(Clone)]
struct Page {
    asked: Asked,
    hits: Vec<Hit>,
    next: Option<String>,
}

/// Read one page of `slug`'s knowledge for `asked`, after `cursor`.
async fn read_page(slug: String, asked: Asked, cursor: Option<String>) -> Result<Page, ApiError> {
    let search = Some(asked.search.clone()).filter(|s| !s.is_empty());
    let variables = knowledge_search::Variables {
        slug,
        search,
        status: Some(asked.status.clone()),
        cursor,
    };
    let found = api::run::<KnowledgeSearch>(variables).await?.knowledge;
    Ok(Page {
        asked,
        hits: found.edges.into_iter().map(|e| e.node).collect(),
        next: found
            .page_info
            .end_cursor
            .filter(|_| found.page_info.has_next_page),
    })
}

/// "N entries", as the live region and the list say it.
fn count_words(shown: usize, more: bool) -> String {
    match (shown, more) {
        (0, _) => "No entries match".to_owned(),
        (1, false) => "1 entry found".to_owned(),
        (n, false) => format!("{n} entries found"),
        (n, true) => format!("{n} entries shown; more can be loaded"),
    }
}

/// Searching one niche's knowledge.
#[component]
fn KnowledgePage(slug: String) -> impl IntoView {
    {
        let slug = slug.clone();
        crate::components::title::page_title(move || format!("Knowledge · {slug}"));
    }
    // What is in the box now, and what was last settled on (sent once typing pauses); both
    // start from the address's `q`.
    let from_address = use_query_map().get_untracked().get("q").unwrap_or_default();
    let typed = RwSignal::new(from_address.clone());
    let settled = RwSignal::new(from_address);
    // The settled search is written into the address, replacing the entry in the history.
    let navigate = use_navigate();
    let address_slug = slug.clone();
    Effect::new(move |previous: Option<String>| {
        let text = settled.get().trim().to_owned();
        if previous.as_ref().is_some_and(|p| *p != text) {
            let query = if text.is_empty() {
                String::new()
            } else {
                format!("?q={}", String::from(js_sys::encode_uri_component(&text)))
            };
            navigate(
                &format!("{}{query}", knowledge_path(&address_slug)),
                NavigateOptions {
                    replace: true,
                    scroll: false,
                    ..NavigateOptions::default()
                },
            );
        }
        text
    });
    let status = RwSignal::new(KnowledgeStatus::Current);
    let keystrokes = StoredValue::new(0_u64);
    let asked = Memo::new(move |_| Asked {
        search: settled.get().trim().to_owned(),
        status: status.get(),
    });

    // Each search is read as soon as it is asked, while older ones may still be on their way,
    // and only the newest one's reply is kept: a reply to an older keystroke that arrives late
    // is dropped. (A resource would not do here: it runs one read at a time, so a slow reply to
    // an old keystroke would hold back every newer search until it came.)
    let first_page = RwSignal::new(None::<Result<Page, ApiError>>);
    let reads = StoredValue::new(0_u64);
    let read_slug = slug.clone();
    Effect::new(move |_| {
        let (slug, asked) = (read_slug.clone(), asked.get());
        reads.update_value(|n| *n += 1);
        let this = reads.get_value();
        leptos::task::spawn_local(async move {
            let page = read_page(slug, asked, None).await;
            if reads.try_get_value() == Some(this) {
                first_page.try_set(Some(page));
            }
        });
    });
    // Pages loaded with "Load more", for the search they continue.
    let loaded_more = RwSignal::new(None::<Page>);
    let more_slug = slug.clone();
    let load_more = Action::new_local(move |after: &String| {
        let (slug, after) = (more_slug.clone(), after.clone());
        let continued = asked.get_untracked();
        async move {
            let page = read_page(slug, continued.clone(), Some(after)).await?;
            // The search changed meanwhile: this page continues one nobody sees any more.
            if asked.try_get_untracked() != Some(continued) {
                return Ok(());
            }
            loaded_more.update(|more| match more {
                Some(earlier) if earlier.asked == page.asked => {
                    earlier.hits.extend(page.hits);
                    earlier.next = page.next;
                }
                _ => *more = Some(page),
            });
            Ok::<_, ApiError>(())
        }
    });

    // What the results show: the first page and any more loaded for the same search.
    let shown = move || {
        first_page.get().map(|result| {
            result.map(|first| {
                let more = loaded_more
                    .get()
                    .filter(|more| more.asked == first.asked && first.next.is_some());
                match more {
                    Some(more) => {
                        let mut hits = first.hits;
                        hits.extend(more.hits);
                        (hits, more.next)
                    }
                    None => (first.hits, first.next),
                }
            })
        })
    };
    let announced = move || match shown() {
        Some(Ok((hits, next))) => count_words(hits.len(), next.is_some()),
        Some(Err(_)) => String::new(),
        None => "Searching…".to_owned(),
    };

    let on_input = move |ev| {
        let text = event_target_value(&ev);
        typed.set(text.clone());
        keystrokes.update_value(|n| *n += 1);
        let this = keystrokes.get_value();
        // Only the last keystroke of a pause is searched; the page may be gone by then.
        set_timeout(
            move || {
                if keystrokes.try_get_value() == Some(this) {
                    settled.try_set(text);
                }
            },
            DEBOUNCE,
        );
    };
    let page_slug = StoredValue::new(slug.clone());
    view! {
        <main class="knowledge-page">
            <p><A href=format!("/dashboard/niches/{slug}/questions")>"← Back to the queue"</A></p>
            <h1>"Knowledge"</h1>
            <p class="lede">"Verified answers of this niche, searchable by their question and answer words."</p>
            <form class="knowledge-search" role="search" on:submit=move |ev| {
                ev.prevent_default();
                // Enter searches at once.
                keystrokes.update_value(|n| *n += 1);
                settled.set(typed.get_untracked());
            }>
                <div class="field">
                    <label for="knowledge-search">"Search the knowledge"</label>
                    <input id="knowledge-search" type="search" maxlength="1000" autocomplete="off"
                        aria-describedby="knowledge-search-hint" prop:value=typed on:input=on_input/>
                    <p id="knowledge-search-hint" class="muted">
                        "Entries holding any of the words are found, the closest first. Put a phrase in quotes to require it, or a minus before a word to leave it out."
                    </p>
                </div>
                <div class="field">
                    <label for="knowledge-status">"Status"</label>
                    <select id="knowledge-status" on:change=move |ev| status.set(KnowledgeStatus::of(event_target_value(&ev)))>
                        <option value="current" selected>"Current"</option>
                        <option value="superseded">"Superseded"</option>
                        <option value="retracted">"Retracted"</option>
                    </select>
                </div>
            </form>
            <p class="muted result-count" role="status" aria-live="polite">{announced}</p>
            <section class="knowledge-results" aria-label="Entries found">
                <Loaded loading="Searching…" forbidden="Only the niche's active members and admins read its knowledge">
                    {move || shown().map(|result| result.map(|(hits, next)| {
                        // The count above already says so.
                        if hits.is_empty() {
                            return ().into_any();
                        }
                        view! {
                            <ol class="knowledge-list">
                                {hits.into_iter().map(|hit| {
                                    let href = page_slug.with_value(|slug| entry_path(slug, &hit.id));
                                    view! { <HitItem hit=hit href=href/> }
                                }).collect_view()}
                            </ol>
                            {next.map(|after| view! { <LoadMore after=after load=load_more/> })}
                        }.into_any()
                    }))}
                </Loaded>
            </section>
        </main>
    }
}

/// One result: its title as a link to the entry, its status and version, and what it answered.
#[component]
fn HitItem(hit: Hit, href: String) -> impl IntoView {
    let status = KnowledgeStatus::of(&hit.status);
    let said = match (hit.option_label, hit.answer) {
        (Some(label), Some(answer)) => format!("{label} — {answer}"),
        (Some(label), None) => label,
        (None, Some(answer)) => answer,
        (None, None) => String::new(),
    };
    view! {
        <li data-entry-id=hit.id.clone()>
            <A href=href><bdi>{visible_controls(&hit.title)}</bdi></A>
            " "<span class=format!("badge knowledge-{status}")>{status.to_string()}</span>
            <span class="muted">" version "{hit.version}" · verified "<TimeAgo at=hit.verified_at/></span>
            <p class="answer-snippet"><bdi>{visible_controls(&said)}</bdi></p>
        </li>
    }
}

/// "Load more" while the server has more, and why it failed, if it did.
#[component]
fn LoadMore(after: String, load: Action<String, Result<(), ApiError>>) -> impl IntoView {
    let busy = load.pending();
    view! {
        <div class="load-more">
            <button type="button" class="secondary" disabled=busy aria-busy=move || busy.get().to_string()
                on:click=move |_| { load.dispatch(after.clone()); }>
                {move || if busy.get() { "Loading…" } else { "Load more" }}
            </button>
            {move || load.value().get().and_then(Result::err).map(|err| view! {
                <p class="error" role="alert">{format!("Could not load more: {err}")}</p>
            })}
        </div>
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
