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
//! The entry page (`entry`) shows one entry with every version of its question's line, and
//! takes proposed corrections. Each page is its own lazily loaded route chunk.

mod entry;

use std::time::Duration;

use leptos::Params;
use leptos::prelude::*;
use leptos_router::NavigateOptions;
use leptos_router::components::A;
use leptos_router::hooks::{use_navigate, use_params, use_query_map};
use leptos_router::params::Params;

pub use self::entry::KnowledgeEntryRoute;
use crate::api::{self, ApiError};
use crate::components::loaded::Loaded;
use crate::components::question_card::visible_controls;
use crate::components::time_ago::TimeAgo;
use crate::operations::{KnowledgeSearch, knowledge_search};
use crate::vocab::KnowledgeStatus;

type Hit = knowledge_search::KnowledgeHit;

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

/// The path of entry `id` of niche `slug`'s knowledge.
pub fn entry_path(slug: &str, id: &str) -> String {
    format!("/dashboard/niches/{slug}/knowledge/{id}")
}

lazy_page! {
    /// The search page as a lazily loaded route.
    KnowledgeRoute => KnowledgeRouteView
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
