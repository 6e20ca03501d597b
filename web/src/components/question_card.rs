//! The question card. The agent's context is untrusted (docs/contract.md#untrusted-context): it
//! is only ever text inside the labelled blockquote, never markup. Every field the agent wrote
//! is isolated (`<bdi>`), and the invisible characters that could reorder or hide what a person
//! reads (bidirectional overrides, zero-width characters) are shown as visible marks instead of
//! being obeyed.

use leptos::prelude::*;

use crate::api::{self, ApiError, ErrorCode};
use crate::components::money::{money, parse_money};
use crate::components::time_ago::{TimeAgo, exact};
use crate::operations::{
    AnswerQuestion, DismissQuestion, SimilarKnowledge, answer_question, dismiss_question,
    queue_page::QuestionCard as Question, similar_knowledge,
};
use crate::vocab::{AnswerKind, ExchangeKind, QuestionStatus, Urgency};

/// `text` with every character that could reorder or hide what is read (bidirectional embeddings,
/// overrides, isolates and marks; zero-width spaces and joiners; the byte-order mark) replaced by
/// a visible mark naming it, e.g. `[U+202E]`.
pub fn visible_controls(text: &str) -> String {
    let hidden = |c: char| {
        matches!(
            c,
            '\u{061C}'
                | '\u{200B}'..='\u{200F}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2060}'..='\u{2064}'
                | '\u{2066}'..='\u{2069}'
                | '\u{FEFF}'
        )
    };
    if !text.chars().any(hidden) {
        return text.to_owned();
    }
    text.chars()
        .map(|c| {
            if hidden(c) {
                format!("[U+{:04X}]", u32::from(c))
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Untrusted text (isolated, invisible characters shown), kept to a few lines when it is long,
/// with "Show all" to open it; as a blockquote when `tag_quote`. The question page and the
/// review queue show the agent's words through it too.
#[component]
pub fn LongText(text: String, class: &'static str, tag_quote: bool) -> impl IntoView {
    let long = text.lines().count() > 8 || text.chars().count() > 600;
    let (expanded, set_expanded) = signal(false);
    let shown = view! { <bdi>{visible_controls(&text)}</bdi> };
    let collapsed = move || long && !expanded.get();
    view! {
        {if tag_quote {
            view! { <blockquote class=class class:collapsed=collapsed>{shown}</blockquote> }.into_any()
        } else {
            view! { <p class=class class:collapsed=collapsed>{shown}</p> }.into_any()
        }}
        {long.then(|| view! {
            <button type="button" class="secondary small show-all" aria-expanded=move || expanded.get().to_string() on:click=move |_| set_expanded.update(|e| *e = !*e)>
                {move || if expanded.get() { "Show less" } else { "Show all" }}
            </button>
        })}
    }
}

/// What an exchange may cost, as a badge: a task's limit ("Task · up to …"), or a question's
/// bounty when it has one. The card and the question page both show it.
#[component]
pub fn PriceBadge(kind: ExchangeKind, budget_limit: Option<i64>, bounty: i64) -> impl IntoView {
    if kind == ExchangeKind::Task {
        let limit = budget_limit.unwrap_or(bounty);
        return view! {
            <span class="badge task" data-budget-limit=limit.to_string()>"Task · up to "{money(limit, "USD")}</span>
        }
        .into_any();
    }
    (bounty > 0)
        .then(|| view! {
            <span class="badge bounty" data-bounty=bounty.to_string()>"bounty "{money(bounty, "USD")}</span>
        })
        .into_any()
}

/// What a task should deliver, in the agent's (untrusted) words.
#[component]
pub fn Deliverable(text: String) -> impl IntoView {
    view! { <p class="deliverable"><strong>"To deliver: "</strong><bdi>{visible_controls(&text)}</bdi></p> }
}

/// `text` cut to about `max` characters at a word, with "…" when it was longer.
pub fn shorten(text: &str, max: usize) -> String {
    let text = text.trim();
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let cut: String = text.chars().take(max).collect();
    let cut = cut
        .rsplit_once(char::is_whitespace)
        .map_or(cut.as_str(), |(head, _)| head);
    format!("{}…", cut.trim_end())
}

/// What a refused answer means for the person who sent it, by the server's code and reason.
pub fn refusal(err: &ApiError) -> String {
    match (&err.code, err.reason.as_deref()) {
        (ErrorCode::Unauthenticated, _) => {
            "Your session has ended. Sign in again in another tab; what you typed is still here."
                .to_owned()
        }
        (ErrorCode::Conflict, Some("KNOWLEDGE_NOT_CURRENT")) => {
            format!("{err} That entry was replaced or withdrawn; answer in your own words.")
        }
        (ErrorCode::Conflict, _) => format!("{err} It may already be settled."),
        _ => err.to_string(),
    }
}

/// "Already answered?": up to two current knowledge entries of the niche like waiting question
/// `question_id` (read once, when this is shown), each with a link to its page and "Use this
/// answer", which hands the entry's id to `on_use`. Nothing is shown when there are none, or
/// when they could not be read (it is a shortcut, not the way to answer).
#[component]
pub fn AlreadyAnswered(
    question_id: String,
    busy: Signal<bool>,
    on_use: Callback<String>,
) -> impl IntoView {
    let heading_id = format!("already-answered-{question_id}");
    let entries = LocalResource::new(move || {
        let id = question_id.clone();
        async move {
            api::run::<SimilarKnowledge>(similar_knowledge::Variables { id })
                .await
                .map(|data| data.question.similar_knowledge)
                .unwrap_or_default()
        }
    });
    move || {
        let heading_id = heading_id.clone();
        entries.get().filter(|list| !list.is_empty()).map(|list| {
            let items = list
                .into_iter()
                .map(|entry| {
                    let href = format!("/dashboard/niches/{}/knowledge/{}", entry.niche_slug, entry.id);
                    let title = visible_controls(&shorten(&entry.title, 120));
                    let entry_id = entry.id.clone();
                    view! {
                        <li data-entry-id=entry.id.clone()>
                            <a href=href><bdi>{title.clone()}</bdi></a>
                            {entry.option_label.map(|label| view! {
                                <p><strong>"Chosen: "</strong><bdi>{visible_controls(&shorten(&label, 120))}</bdi></p>
                            })}
                            {entry.answer.filter(|a| !a.trim().is_empty()).map(|answer| view! {
                                <p class="answer-words"><bdi>{visible_controls(&shorten(&answer, 200))}</bdi></p>
                            })}
                            <button type="button" class="secondary small" data-kind="from_knowledge" disabled=busy on:click=move |_| on_use.run(entry_id.clone())>
                                "Use this answer"<span class="visually-hidden">" — "{title}</span>
                            </button>
                        </li>
                    }
                })
                .collect_view();
            let labelled_by = heading_id.clone();
            view! {
                <section class="already-answered" aria-labelledby=labelled_by>
                    <h3 id=heading_id>"Already answered?"</h3>
                    <p class="muted">"Verified answers to similar questions. Using one settles this question with it."</p>
                    <ul>{items}</ul>
                </section>
            }
        })
    }
}

/// What acting on a card did: the question, its research round, and the server's result.
pub type Acted = (String, i64, answer_question::AnswerQuestionAnswerQuestion);

/// One waiting question with the three ways to act on it, through the `answerQuestion` mutation,
/// and a Dismiss control (`dismissQuestion`, with an optional reason for the agent). A delegated
/// task (docs/contract.md#delegated-tasks) is completed the same way, with its result and what it
/// actually cost (0 up to its limit); declining and sending it back work as for a question. A
/// refusal is shown next to the form and nothing typed is lost; on success `on_done` (or
/// `on_dismissed`, with the question's id) hears it. `page` is the question page's path, linked
/// from the card.
#[component]
pub fn QuestionCard(
    question: Question,
    page: String,
    fresh: bool,
    on_done: Callback<Acted>,
    on_dismissed: Callback<String>,
) -> impl IntoView {
    let id = question.id.clone();
    let dismiss_id = question.id.clone();
    let reason_id = format!("dismiss-reason-{id}");
    let round = question.research_round;
    let body_id = format!("body-{id}");
    let error_id = format!("error-{id}");
    let described_by = error_id.clone();
    let option_name = format!("option-{id}");
    let urgency = Urgency::of(&question.urgency);
    let urgency_class = format!("badge urgency-{urgency}");
    let researching = question.status == QuestionStatus::Researching;
    let escalated = question.escalation_step > 0;
    let has_options = !question.options.is_empty();
    let title = visible_controls(&question.title);
    let task_limit = (question.kind == ExchangeKind::Task)
        .then(|| question.budget_limit_minor.unwrap_or(question.bounty_minor));
    let cost_id = format!("cost-{id}");

    let (choice, set_choice) = signal(None::<String>);
    let (body, set_body) = signal(String::new());
    let (error, set_error) = signal(None::<String>);
    let (cost, set_cost) = signal(String::new());

    let act = Action::new_local(move |(kind, entry): &(AnswerKind, Option<String>)| {
        // Completing a task says what it cost; the server checks it against the limit again.
        let actual_cost = match (task_limit, kind) {
            (Some(limit), AnswerKind::Answered) => match parse_money(&cost.get_untracked()) {
                Some(minor) if minor <= limit => Ok(Some(minor)),
                _ => Err(format!(
                    "Say what it cost: an amount from 0.00 up to the task's limit of {}.",
                    money(limit, "USD")
                )),
            },
            _ => Ok(None),
        };
        let input = actual_cost.map(|actual_cost_minor| answer_question::AnswerInput {
            question_id: id.clone(),
            option_id: choice
                .get_untracked()
                .filter(|_| *kind == AnswerKind::Answered),
            body: Some(body.get_untracked()).filter(|b| entry.is_none() && !b.trim().is_empty()),
            actual_cost_minor,
            entry_id: entry.clone(),
            kind: kind.clone(),
        });
        let id = id.clone();
        async move {
            set_error.set(None);
            let input = match input {
                Ok(input) => input,
                Err(refusal) => return set_error.set(Some(refusal)),
            };
            match api::run::<AnswerQuestion>(answer_question::Variables { input }).await {
                Ok(data) => on_done.run((id, round, data.answer_question)),
                Err(err) => set_error.set(Some(refusal(&err))),
            }
        }
    });
    let (reason, set_reason) = signal(String::new());
    let dismiss = Action::new_local(move |_: &()| {
        let id = dismiss_id.clone();
        let reason = Some(reason.get_untracked()).filter(|r| !r.trim().is_empty());
        async move {
            set_error.set(None);
            let variables = dismiss_question::Variables {
                id: id.clone(),
                reason,
            };
            match api::send::<DismissQuestion>(variables).await {
                Ok(()) => on_dismissed.run(id),
                Err(err) => set_error.set(Some(err.to_string())),
            }
        }
    });
    let busy = Signal::derive(move || act.pending().get() || dismiss.pending().get());
    let from_knowledge = (task_limit.is_none()).then(|| {
        let on_use = Callback::new(move |entry: String| {
            act.dispatch((AnswerKind::FromKnowledge, Some(entry)));
        });
        view! { <AlreadyAnswered question_id=question.id.clone() busy=busy on_use=on_use/> }
    });

    let options = question
        .options
        .into_iter()
        .map(|option| {
            let value = option.id.clone();
            view! {
                <label class="option">
                    <input
                        type="radio"
                        name=option_name.clone()
                        value=option.id
                        on:change=move |_| set_choice.set(Some(value.clone()))
                    />
                    " "
                    <bdi>{visible_controls(&option.label)}</bdi>
                </label>
            }
        })
        .collect_view();

    view! {
        <article class="question" class:fresh=fresh data-question-id=question.id.clone()>
            <p class="meta">
                <span class=urgency_class>{urgency.to_string()}</span>
                {fresh.then(|| view! { <span class="badge new">"new"</span> })}
                {researching.then(|| view! { <span class="badge researching">"sent back for research"</span> })}
                {escalated.then(|| view! { <span class="badge escalated" title="Nobody answered in time; more people have been told">"escalated"</span> })}
                <PriceBadge kind=question.kind.clone() budget_limit=question.budget_limit_minor bounty=question.bounty_minor/>
                <span class="muted">"asked "<TimeAgo at=question.created_at/></span>
                " · "
                <span class="muted expires" title=exact(&question.expires_at)>"expires "<TimeAgo at=question.expires_at.clone()/></span>
            </p>
            <h2><bdi>{visible_controls(&question.title)}</bdi></h2>
            <LongText text=question.question class="question-text" tag_quote=false/>
            {question.deliverable.map(|text| view! { <Deliverable text=text/> })}
            {question.context.map(|context| view! {
                <details class="context" open>
                    <summary>"What the agent found"</summary>
                    <LongText text=context class="" tag_quote=true/>
                </details>
            })}
            {from_knowledge}
            <form class="answer" on:submit=|ev| ev.prevent_default() aria-describedby=described_by aria-busy=move || busy.get().to_string()>
                {has_options.then(|| view! {
                    <fieldset>
                        <legend>"Which is it?"</legend>
                        {options}
                    </fieldset>
                })}
                <label for=body_id.clone()>{if task_limit.is_some() { "The result" } else { "Your answer" }}</label>
                <textarea
                    id=body_id
                    name="body"
                    maxlength=if task_limit.is_some() { "20000" } else { "8000" }
                    rows="3"
                    prop:value=body
                    on:input=move |ev| set_body.set(event_target_value(&ev))
                ></textarea>
                {task_limit.map(|limit| view! {
                    <label for=cost_id.clone()>"What it cost (0.00 to "{money(limit, "USD")}")"</label>
                    <input
                        id=cost_id.clone()
                        name="actual_cost"
                        type="text"
                        inputmode="decimal"
                        autocomplete="off"
                        placeholder="0.00"
                        prop:value=cost
                        on:input=move |ev| set_cost.set(event_target_value(&ev))
                    />
                })}
                <p class="error form-error" id=error_id role="alert">{move || error.get()}</p>
                <div class="actions">
                    <button type="button" data-kind="answered" disabled=busy on:click=move |_| { act.dispatch((AnswerKind::Answered, None)); }>{if task_limit.is_some() { "Complete task" } else { "Answer" }}</button>
                    <button type="button" data-kind="insufficient_context" class="secondary" disabled=busy on:click=move |_| { act.dispatch((AnswerKind::InsufficientContext, None)); }>"Not enough context"</button>
                    <button type="button" data-kind="needs_research" class="secondary" disabled=busy on:click=move |_| { act.dispatch((AnswerKind::NeedsResearch, None)); }>"Ask the agent to research more"</button>
                </div>
                <p class="muted">"Declining costs nothing: only answer what you know."</p>
                <details class="dismiss">
                    <summary>"Dismiss…"</summary>
                    <label for=reason_id.clone()>"Why (optional; the agent is told)"</label>
                    <input id=reason_id type="text" maxlength="500" prop:value=reason on:input=move |ev| set_reason.set(event_target_value(&ev))/>
                    <button type="button" class="secondary" data-kind="dismiss" disabled=busy on:click=move |_| { dismiss.dispatch(()); }>"Dismiss question"</button>
                </details>
            </form>
            // Below the form, so the buttons stay near the top of a long card.
            <p class="question-link"><a href=page>"Its page: answers, timeline and budget"<span class="visually-hidden">" — "{title}</span></a></p>
        </article>
    }
}

#[cfg(test)]
mod tests {
    use super::visible_controls;

    #[test]
    fn reordering_and_invisible_characters_are_shown_not_obeyed() {
        assert_eq!(
            visible_controls("invoice\u{202E}gnp.exe"),
            "invoice[U+202E]gnp.exe"
        );
        assert_eq!(
            visible_controls("a\u{200B}b\u{2066}c\u{FEFF}"),
            "a[U+200B]b[U+2066]c[U+FEFF]"
        );
        assert_eq!(
            visible_controls("plain, ünïcode, עברית"),
            "plain, ünïcode, עברית"
        );
    }
}
