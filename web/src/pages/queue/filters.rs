//! The queue's view: what the URL asks it to show (filters, sort and a title search, as in
//! `?urgency=high&sort=newest&q=roof`), the variables every read of the queue sends for it, and
//! the form that changes it (each change is a new URL). A search longer than the server takes is
//! refused beside the search box; on a phone the form folds away.

use leptos::prelude::*;
use leptos_router::NavigateOptions;
use leptos_router::hooks::use_navigate;
use leptos_router::params::ParamsMap;

use super::Question;
use crate::vocab::{ExchangeKind, QueueSort, Urgency};

/// What the URL asks the queue to show.
#[derive(Clone, PartialEq, Default)]
pub(super) struct View {
    /// Only this urgency.
    pub(super) urgency: Option<Urgency>,
    /// Only tasks, or only questions.
    pub(super) kind: Option<ExchangeKind>,
    /// Only with a bounty, or only without.
    pub(super) bounty: Option<bool>,
    /// The order; most urgent first when none is asked for.
    pub(super) sort: Option<QueueSort>,
    /// The title search as typed.
    pub(super) search: String,
}

/// The longest title search the server takes, in characters.
const MAX_SEARCH: usize = 200;

impl View {
    /// What the address's query asks for; values it does not know are left out.
    pub(super) fn from_query(q: &ParamsMap) -> Self {
        View {
            urgency: q
                .get("urgency")
                .map(Urgency::of)
                .filter(|u| !matches!(u, Urgency::Other(_))),
            kind: q
                .get("kind")
                .map(ExchangeKind::of)
                .filter(|k| !matches!(k, ExchangeKind::Other(_))),
            bounty: q.get("bounty").and_then(|b| match b.as_str() {
                "yes" => Some(true),
                "no" => Some(false),
                _ => None,
            }),
            sort: q
                .get("sort")
                .map(QueueSort::of)
                .filter(|s| !matches!(s, QueueSort::Other(_))),
            search: q.get("q").unwrap_or_default(),
        }
    }

    /// The order asked for; most urgent first when none is.
    pub(super) fn sort(&self) -> QueueSort {
        self.sort.clone().unwrap_or(QueueSort::Urgency)
    }

    /// Why the search from the URL cannot be sent, if it cannot (too long, or not text).
    pub(super) fn search_refusal(&self) -> Option<String> {
        let search = self.search.trim();
        let length = search.chars().count();
        if length > MAX_SEARCH {
            Some(format!(
                "A search is at most {MAX_SEARCH} characters; this one has {length}. Shorten it and search again: the queue below is not searched."
            ))
        } else if search.chars().any(char::is_control) {
            Some("A search cannot hold control characters. Retype it and search again: the queue below is not searched.".to_owned())
        } else {
            None
        }
    }

    /// The search the server is asked for: none when blank or refused.
    pub(super) fn sent_search(&self) -> Option<String> {
        Some(self.search.trim().to_owned())
            .filter(|s| !s.is_empty() && self.search_refusal().is_none())
    }

    /// Whether `q` belongs in this view (a live arrival joins only then).
    pub(super) fn admits(&self, q: &Question) -> bool {
        self.urgency
            .as_ref()
            .is_none_or(|u| Urgency::of(&q.urgency) == *u)
            && self.kind.as_ref().is_none_or(|k| q.kind == *k)
            && self.bounty.is_none_or(|b| (q.bounty_minor > 0) == b)
            && self
                .sent_search()
                .is_none_or(|search| q.title.to_lowercase().contains(&search.to_lowercase()))
    }

    /// Whether anything narrows the queue (the sort alone does not).
    pub(super) fn filtered(&self) -> bool {
        self.urgency.is_some()
            || self.kind.is_some()
            || self.bounty.is_some()
            || self.sent_search().is_some()
    }

    /// The query string for this view (empty values left out).
    pub(super) fn query(&self) -> String {
        let mut parts = Vec::new();
        if let Some(u) = &self.urgency {
            parts.push(format!("urgency={u}"));
        }
        if let Some(k) = &self.kind {
            parts.push(format!("kind={k}"));
        }
        if let Some(b) = self.bounty {
            parts.push(format!("bounty={}", if b { "yes" } else { "no" }));
        }
        if let Some(s) = self.sort.as_ref().filter(|s| **s != QueueSort::Urgency) {
            parts.push(format!("sort={s}"));
        }
        if !self.search.trim().is_empty() {
            parts.push(format!(
                "q={}",
                String::from(js_sys::encode_uri_component(self.search.trim()))
            ));
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!("?{}", parts.join("&"))
        }
    }
}

/// `module::Variables` for the view `v` (its sort, filters and search) with the operation's
/// own fields: every read of the queue asks for the same view.
macro_rules! with_view {
    ($module:ident, $v:expr, { $($field:ident $(: $value:expr)?),* }) => {
        $module::Variables {
            $($field $(: $value)?,)*
            sort: $v.sort(),
            urgency: $v.urgency.clone(),
            kind: $v.kind.clone(),
            has_bounty: $v.bounty,
            search: $v.sent_search(),
        }
    };
}
pub(super) use with_view;

/// Whether the window is phone-width (under 640 CSS pixels).
fn narrow() -> bool {
    window()
        .inner_width()
        .ok()
        .and_then(|w| w.as_f64())
        .is_some_and(|w| w < 640.0)
}

/// The filters, sort and title search; each change is a new URL.
#[component]
pub(super) fn Filters(slug: String, current: View) -> impl IntoView {
    let navigate = use_navigate();
    let base = format!("/dashboard/niches/{slug}/questions");
    let go = StoredValue::new(move |next: View| {
        navigate(
            &format!("{base}{}", next.query()),
            NavigateOptions {
                scroll: false,
                ..NavigateOptions::default()
            },
        );
    });
    let search = RwSignal::new(current.search.clone());
    let c = StoredValue::new(current.clone());
    let on_urgency = move |ev| {
        let value = event_target_value(&ev);
        let mut next = c.get_value();
        next.urgency = (!value.is_empty()).then(|| Urgency::of(&value));
        go.with_value(|go| go(next));
    };
    let on_kind = move |ev| {
        let value = event_target_value(&ev);
        let mut next = c.get_value();
        next.kind = (!value.is_empty()).then(|| ExchangeKind::of(&value));
        go.with_value(|go| go(next));
    };
    let on_bounty = move |ev| {
        let value = event_target_value(&ev);
        let mut next = c.get_value();
        next.bounty = match value.as_str() {
            "yes" => Some(true),
            "no" => Some(false),
            _ => None,
        };
        go.with_value(|go| go(next));
    };
    let on_sort = move |ev| {
        let value = event_target_value(&ev);
        let mut next = c.get_value();
        next.sort = Some(QueueSort::of(&value));
        go.with_value(|go| go(next));
    };
    let on_search = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let mut next = c.get_value();
        next.search = search.get_untracked();
        go.with_value(|go| go(next));
    };
    let u = current
        .urgency
        .as_ref()
        .map(ToString::to_string)
        .unwrap_or_default();
    let k = current
        .kind
        .as_ref()
        .map(ToString::to_string)
        .unwrap_or_default();
    let b = match current.bounty {
        Some(true) => "yes",
        Some(false) => "no",
        None => "",
    };
    let s = current.sort().to_string();
    let refusal = current.search_refusal();
    let active = [
        current.urgency.is_some(),
        current.kind.is_some(),
        current.bounty.is_some(),
        current.sent_search().is_some(),
        current.sort() != QueueSort::Urgency,
    ]
    .into_iter()
    .filter(|on| *on)
    .count();
    let summary = match active {
        0 => "Filters and sort".to_owned(),
        1 => "Filters and sort (1 in use)".to_owned(),
        n => format!("Filters and sort ({n} in use)"),
    };
    // On a phone the filters fold away so the questions show in the first screen.
    let unfolded = !narrow() || refusal.is_some();
    let invalid = refusal.is_some();
    view! {
        <details class="filters-fold" open=unfolded>
        <summary>{summary}</summary>
        <form class="filters" role="search" aria-label="Filter the queue" on:submit=on_search>
            <label>"Urgency "
                <select name="urgency" on:change=on_urgency prop:value=u.clone()>
                    <option value="" selected=u.is_empty()>"Any"</option>
                    <option value="high" selected=u == "high">"High"</option>
                    <option value="normal" selected=u == "normal">"Normal"</option>
                    <option value="low" selected=u == "low">"Low"</option>
                </select>
            </label>
            <label>"Kind "
                <select name="kind" on:change=on_kind prop:value=k.clone()>
                    <option value="" selected=k.is_empty()>"Questions and tasks"</option>
                    <option value="question" selected=k == "question">"Questions"</option>
                    <option value="task" selected=k == "task">"Tasks"</option>
                </select>
            </label>
            <label>"Bounty "
                <select name="bounty" on:change=on_bounty prop:value=b>
                    <option value="" selected=b.is_empty()>"Any"</option>
                    <option value="yes" selected=b == "yes">"Has a bounty"</option>
                    <option value="no" selected=b == "no">"No bounty"</option>
                </select>
            </label>
            <label>"Sort "
                <select name="sort" on:change=on_sort prop:value=s.clone()>
                    <option value="urgency" selected=s == "urgency">"Most urgent, then expiring soonest"</option>
                    <option value="expiring" selected=s == "expiring">"Expiring soonest"</option>
                    <option value="newest" selected=s == "newest">"Newest"</option>
                    <option value="bounty" selected=s == "bounty">"Largest bounty"</option>
                </select>
            </label>
            <div class="search-row">
                <label class="grow">"Search titles "
                    <input type="search" name="q" maxlength="200" aria-invalid=invalid.to_string() aria-describedby=invalid.then_some("search-refusal") prop:value=search on:input=move |ev| search.set(event_target_value(&ev))/>
                </label>
                <button type="submit" class="secondary">"Search"</button>
            </div>
            {refusal.map(|why| view! { <p class="error field-error" id="search-refusal" role="alert">{why}</p> })}
        </form>
        </details>
    }
}
