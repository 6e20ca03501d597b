//! `/dashboard/niches/:slug/knowledge` and `/dashboard/niches/:slug/knowledge/:id`: a niche's
//! knowledge (docs/contract.md#knowledge) as its active members and admins read it.
//!
//! The search page searches as the person types: the text is sent once typing pauses (250 ms),
//! each search replaces the results in place, and the number found is announced. Every search
//! is numbered and only the newest one's reply is shown, so a reply to an older keystroke never
//! overwrites a newer one's results. "Load more" follows the server's cursor for the search the
//! results show.
//!
//! The entry page shows one version with who answered and verified it, and every version of its
//! question's line; a current one has a form to propose a correction (new words and a note),
//! which waits for review by someone other than its author. Everything the API returns is shown as text, never as markup. Both pages are
//! one lazily loaded route chunk.

use std::time::Duration;

use leptos::Params;
use leptos::prelude::*;
use leptos_router::components::A;
use leptos_router::hooks::use_params;
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
    // What is in the box now, and what was last settled on (sent once typing pauses).
    let typed = RwSignal::new(String::new());
    let settled = RwSignal::new(String::new());
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
                        "Every word must appear. Put a phrase in quotes, a minus before a word to leave it out, or “or” between two words."
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
                        if hits.is_empty() {
                            return view! { <p class="empty">"No entries match"</p> }.into_any();
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
                            view! { <EntryView entry=found.entry versions=found.versions slug=slug/> }
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
fn EntryView(entry: Entry, versions: Vec<Version>, slug: String) -> impl IntoView {
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
    let correct = (status == KnowledgeStatus::Current)
        .then(|| view! { <CorrectionForm entry=e.id.clone()/> });
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

/// "Propose a correction" for a current entry: new words and a note for the reviewer. What the
/// server says — proposed, or why not — is shown beside the form.
#[component]
fn CorrectionForm(entry: String) -> impl IntoView {
    let answer = RwSignal::new(String::new());
    let note = RwSignal::new(String::new());
    let propose = Action::new_local(move |(entry_id, answer, note): &(String, String, String)| {
        let variables = propose_knowledge_correction::Variables {
            input: propose_knowledge_correction::KnowledgeCorrectionInput {
                entry_id: entry_id.clone(),
                option_id: None,
                answer: Some(answer.clone()),
                note: Some(note.clone()).filter(|n| !n.trim().is_empty()),
            },
        };
        async move { api::send::<ProposeKnowledgeCorrection>(variables).await }
    });
    let busy = propose.pending();
    view! {
        <section aria-labelledby="correct-title" class="correction">
            <h2 id="correct-title">"Propose a correction"</h2>
            <form on:submit=move |ev| {
                ev.prevent_default();
                propose.dispatch((entry.clone(), answer.get_untracked(), note.get_untracked()));
            }>
                <label for="correction-answer">"The corrected answer"</label>
                <textarea id="correction-answer" required maxlength="8000" rows="4"
                    prop:value=answer on:input=move |ev| answer.set(event_target_value(&ev))></textarea>
                <label for="correction-note">"Why (for the reviewer; optional)"</label>
                <input id="correction-note" type="text" maxlength="2000"
                    prop:value=note on:input=move |ev| note.set(event_target_value(&ev))/>
                <button type="submit" disabled=busy>"Propose the correction"</button>
            </form>
            <div aria-live="polite">
                {move || propose.value().get().map(|result| match result {
                    Ok(()) => view! {
                        <p class="notice" role="status">"Proposed. It becomes the next version once someone other than you verifies it."</p>
                    }.into_any(),
                    Err(err) => view! { <p class="error" role="alert">{err.to_string()}</p> }.into_any(),
                })}
            </div>
        </section>
    }
}
