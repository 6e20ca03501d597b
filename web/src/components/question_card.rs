//! The question card. The agent's context is untrusted (docs/contract.md#untrusted-context): it
//! is only ever text inside the labelled blockquote, never markup. Every field the agent wrote
//! is isolated (`<bdi>`), and the invisible characters that could reorder or hide what a person
//! reads (bidirectional overrides, zero-width characters) are shown as visible marks instead of
//! being obeyed.
//!
//! This module renders the card; what the card sends lives in `actions`, the "mara is
//! answering" mark it keeps in `presence`, and the "Already answered?" entries it reads in
//! `already_answered`.

mod actions;
mod already_answered;
mod presence;

use leptos::prelude::*;

pub use self::actions::{Acted, refusal};
use self::already_answered::AlreadyAnswered;
use crate::components::drafts::{self, Draft};
use crate::components::held::Held;
use crate::components::money::money;
use crate::components::time_ago::TimeAgo;
use crate::operations::queue_page::QuestionCard as Question;
use crate::vocab::{AnswerKind, ExchangeKind, QuestionStatus};

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

/// The agent's context split into what it found first and each round of research it sent back
/// since (askloop writes each under a `Research, 2026-11-30 14:05 UTC:` line), oldest first:
/// `(first, [(when, findings)])`.
pub fn split_findings(context: &str) -> (String, Vec<(String, String)>) {
    let heading = |line: &str| {
        line.strip_prefix("Research, ")
            .and_then(|rest| rest.strip_suffix(" UTC:"))
            .filter(|at| {
                at.len() == 16
                    && at.chars().enumerate().all(|(i, c)| match i {
                        4 | 7 => c == '-',
                        10 => c == ' ',
                        13 => c == ':',
                        _ => c.is_ascii_digit(),
                    })
            })
            .map(|at| format!("{at} UTC"))
    };
    let mut first = Vec::new();
    let mut rounds: Vec<(String, Vec<&str>)> = Vec::new();
    for line in context.lines() {
        if let Some(at) = heading(line) {
            rounds.push((at, Vec::new()));
            continue;
        }
        match rounds.last_mut() {
            Some((_, body)) => body.push(line),
            None => first.push(line),
        }
    }
    (
        first.join("\n").trim().to_owned(),
        rounds
            .into_iter()
            .map(|(at, body)| (at, body.join("\n").trim().to_owned()))
            .collect(),
    )
}

/// The agent's context: once research came back, its findings first, newest round first, each
/// labelled with its round, above what the agent found first.
#[component]
fn AgentContext(context: String, round: i64) -> impl IntoView {
    let (first, rounds) = if round > 0 {
        split_findings(&context)
    } else {
        (context.clone(), Vec::new())
    };
    if rounds.is_empty() {
        return view! {
            <details class="context" open>
                <summary>"What the agent found"</summary>
                <LongText text=context class="" tag_quote=true/>
            </details>
        }
        .into_any();
    }
    let count = rounds.len();
    let findings = rounds
        .into_iter()
        .enumerate()
        .rev()
        .map(|(i, (at, text))| {
            let n = i + 1;
            view! {
                <section class="findings" data-round=n.to_string()>
                    <h3>{format!("The agent's research, round {n}")}</h3>
                    <p class="muted">{format!("Sent {at}.")}{(n == count).then_some(" The newest: read this first.")}</p>
                    <LongText text=text class="" tag_quote=true/>
                </section>
            }
        })
        .collect_view();
    view! {
        {findings}
        {(!first.is_empty()).then(|| view! {
            <details class="context">
                <summary>"What the agent found first"</summary>
                <LongText text=first class="" tag_quote=true/>
            </details>
        })}
    }
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

/// A question settled by someone else while this person had its card open or a draft on it:
/// what happened, who did it, and when (RFC 3339, as the browser saw it).
#[derive(Clone, PartialEq)]
pub struct SettledElsewhere {
    /// Its status now (answered, dismissed, expired).
    pub status: QuestionStatus,
    /// Who settled it, when a person did.
    pub by: Option<String>,
    /// When the change arrived.
    pub at: String,
}

impl SettledElsewhere {
    /// "Answered by mara", "Dismissed by an admin", "Expired".
    pub fn headline(&self) -> String {
        let what = match self.status {
            QuestionStatus::Answered => "Answered",
            QuestionStatus::Dismissed => "Dismissed",
            QuestionStatus::Expired => "Expired",
            _ => "Taken off the queue",
        };
        match (&self.by, &self.status) {
            (Some(by), QuestionStatus::Answered | QuestionStatus::Dismissed) => {
                format!("{what} by {by}")
            }
            _ => what.to_owned(),
        }
    }
}

/// What a card's form holds: what the person chose and typed (kept as a draft), and what the
/// card says back.
#[derive(Clone, Copy)]
struct Fields {
    /// The option chosen.
    choice: RwSignal<Option<String>>,
    /// The words (a task: its result).
    body: RwSignal<String>,
    /// A task's cost.
    cost: RwSignal<String>,
    /// What the agent should find out (research).
    note: RwSignal<String>,
    /// How sure, in percent.
    sure: RwSignal<String>,
    /// Why it is dismissed (optional; not kept as a draft).
    reason: RwSignal<String>,
    /// Why the last action was refused, announced.
    error: RwSignal<Option<String>>,
    /// Why the research request cannot be sent yet.
    note_error: RwSignal<Option<String>>,
}

impl Fields {
    /// The form as `draft` left it.
    fn from_draft(draft: &Draft) -> Self {
        Self {
            choice: RwSignal::new(draft.option.clone()),
            body: RwSignal::new(draft.body.clone()),
            cost: RwSignal::new(draft.cost.clone()),
            note: RwSignal::new(draft.note.clone()),
            sure: RwSignal::new(draft.confidence.clone()),
            reason: RwSignal::new(String::new()),
            error: RwSignal::new(None),
            note_error: RwSignal::new(None),
        }
    }

    /// What is typed and chosen, as a draft to keep (tracked: an effect reruns as it changes).
    fn draft(&self) -> Draft {
        Draft {
            body: self.body.get(),
            option: self.choice.get(),
            cost: self.cost.get(),
            note: self.note.get(),
            confidence: self.sure.get(),
            saved: 0.0,
        }
    }

    /// What an answer sends, as typed now.
    fn typed_untracked(&self) -> actions::Typed {
        actions::Typed {
            choice: self.choice.get_untracked(),
            body: self.body.get_untracked(),
            cost: self.cost.get_untracked(),
            sure: self.sure.get_untracked(),
        }
    }
}

/// One waiting question with the three ways to act on it and a Dismiss control.
///
/// - **Answer** goes at once through `answerQuestion`; on success `on_done` hears it. A
///   delegated task (docs/contract.md#delegated-tasks) is completed the same way, with its
///   result and what it actually cost (0 up to its limit).
/// - **Not enough context** and **research** are held for ten seconds with "Undo"
///   (`components::held`); research first asks what the agent should find out (required).
/// - **Dismiss** (`dismissQuestion`, with an optional reason for the agent): `on_dismissed`.
///
/// What the person types or chooses is kept as a draft in the browser (`components::drafts`)
/// and restored when the card shows again. When `settled` turns to `Some` (someone else settled
/// it), the card stays where it is, read-only, saying who and when, with the draft kept, until
/// the person closes it (`on_close`). `others` are the handles of other people with this
/// question's form open. Every refusal shows inside the card and is announced.
#[component]
pub fn QuestionCard(
    question: Question,
    page: String,
    fresh: bool,
    #[prop(into)] settled: Signal<Option<SettledElsewhere>>,
    #[prop(into)] others: Signal<Vec<String>>,
    on_done: Callback<Acted>,
    on_dismissed: Callback<String>,
    on_close: Callback<String>,
) -> impl IntoView {
    let held = Held::get();
    let id = question.id.clone();
    let reason_id = format!("dismiss-reason-{id}");
    let round = question.research_round;
    let body_id = format!("body-{id}");
    let note_id = format!("research-note-{id}");
    let error_id = format!("error-{id}");
    let described_by = error_id.clone();
    let option_name = format!("option-{id}");
    let title = visible_controls(&question.title);
    let task_limit = (question.kind == ExchangeKind::Task)
        .then(|| question.budget_limit_minor.unwrap_or(question.bounty_minor));
    let target = actions::Target {
        id: id.clone(),
        round,
        task_limit,
    };
    let cost_id = format!("cost-{id}");

    let draft = drafts::load(&id).unwrap_or_default();
    let fields = Fields::from_draft(&draft);
    let Fields {
        choice,
        body,
        cost,
        note,
        sure,
        reason,
        error,
        note_error,
    } = fields;
    let sure_id = format!("sure-{id}");
    let sure_name = format!("sure-value-{id}");
    let other_field = sure_name.clone();
    // "Another value" chosen (or a typed value that is not a preset, from a draft).
    let (other, set_other) = signal(!matches!(draft.confidence.trim(), "" | "60" | "80" | "95"));
    let several =
        (question.answers_wanted > 1).then_some((question.answers_in, question.answers_wanted));
    let asking_research = RwSignal::new(!draft.note.trim().is_empty());
    let note_error_id = format!("research-note-error-{id}");
    let restored = !draft.is_empty();
    let sent = RwSignal::new(false);

    // Keep the draft as it is typed; forget it once the answer is sent.
    let draft_id = id.clone();
    Effect::new(move |_| {
        let draft = fields.draft();
        if !sent.get() {
            drafts::save(&draft_id, &draft);
        }
    });

    // Presence: this person has the form open while the card is shown.
    let settled_now = Signal::derive(move || settled.with(Option::is_some));
    let is_settled = move || settled.with(Option::is_some);
    let claim_mark = presence::mark_while_shown(id.clone(), settled_now);
    let claim = move |_| claim_mark();

    let act = actions::answer(target.clone(), fields, sent, on_done);
    let dismiss = actions::dismiss(id.clone(), fields, sent, on_dismissed);
    let busy = Signal::derive(move || act.pending().get() || dismiss.pending().get());
    // Nothing may be sent from a card someone else settled.
    let locked = Signal::derive(move || busy.get() || is_settled());

    // Decline and research wait ten seconds for "Undo".
    let decline = {
        let target = target.clone();
        move |_| {
            if !locked.get_untracked() {
                actions::decline(&target, fields);
            }
        }
    };
    let send_research = {
        let target = target.clone();
        let note_field = note_id.clone();
        move |_| {
            if !locked.get_untracked() {
                actions::send_back(&target, fields, &note_field);
            }
        }
    };
    let ask_note_field = note_id.clone();
    let ask_research = move |_| {
        if locked.get_untracked() {
            return;
        }
        asking_research.set(true);
        let field = ask_note_field.clone();
        request_animation_frame(move || focus_by_id(&field));
    };

    let holding_id = id.clone();
    let holding = Memo::new(move |_| held.waiting_on(&holding_id));
    // A held action the server refused comes back here as an error.
    actions::show_held_refusals(&target, fields);

    let from_knowledge = (task_limit.is_none()).then(|| {
        // Held ten seconds with "Undo", as decline and research are.
        let on_use = Callback::new(move |entry: String| {
            if !locked.get_untracked() {
                actions::use_entry(&target, fields, entry);
            }
        });
        view! { <AlreadyAnswered question_id=question.id.clone() busy=locked on_use=on_use/> }
    });

    let has_options = !question.options.is_empty();
    let options = question
        .options
        .into_iter()
        .map(|option| {
            let value = option.id.clone();
            let checked_value = option.id.clone();
            view! {
                <label class="option">
                    <input
                        type="radio"
                        name=option_name.clone()
                        value=option.id
                        prop:checked=move || choice.get().as_deref() == Some(checked_value.as_str())
                        prop:disabled=is_settled
                        on:change=move |_| { if !is_settled() { choice.set(Some(value.clone())) } }
                    />
                    " "
                    <bdi>{visible_controls(&option.label)}</bdi>
                </label>
            }
        })
        .collect_view();

    let close_id = id.clone();
    let undo_id = id.clone();
    let settled_view = move || {
        settled.get().map(|s| {
            let close_id = close_id.clone();
            view! {
                <div class="settled-here" role="status">
                    <p>
                        <strong>{s.headline()}</strong>" "<TimeAgo at=s.at.clone()/>
                        {(!untrack(|| fields.draft()).is_empty()).then_some(" — your draft is kept below.")}
                    </p>
                    <button type="button" class="secondary small" on:click=move |_| on_close.run(close_id.clone())>
                        "Close"<span class="visually-hidden">" this question"</span>
                    </button>
                </div>
            }
        })
    };
    let holding_view = move || {
        holding.get().map(|action| {
            let undo_id = undo_id.clone();
            view! {
                <div class="held" role="status">
                    <p>
                        <strong>{action.describe()}</strong>
                        {action.note.clone().map(|n| view! { " — “"<bdi>{n}</bdi>"”" })}
                        " · sending in "<HoldCountdown send_at=action.send_at/>
                    </p>
                    <button type="button" class="undo" on:click=move |_| held.undo(&undo_id)>
                        "Undo"
                    </button>
                </div>
            }
        })
    };
    let undo_focus = move || {
        // After "Undo" appears, focus it: a keyboard user can take the action back at once.
        if holding.with(Option::is_some) {
            request_animation_frame(|| {
                if let Some(el) = document()
                    .query_selector(".held button.undo")
                    .ok()
                    .flatten()
                    .and_then(|e| wasm_bindgen::JsCast::dyn_into::<web_sys::HtmlElement>(e).ok())
                {
                    let _ = el.focus();
                }
            });
        }
    };
    Effect::new(move |_| undo_focus());

    view! {
        <div class="card-body" class:fresh=fresh on:focusin=claim>
            {settled_view}
            {holding_view}
            {move || {
                let others = others.get();
                (!others.is_empty() && !is_settled()).then(|| view! {
                    <p class="presence" role="status">{answering_words(&others)}</p>
                })
            }}
            <div class="card-main" class:hidden=move || holding.with(Option::is_some)>
                <LongText text=question.question class="question-text" tag_quote=false/>
                {question.deliverable.map(|text| view! { <Deliverable text=text/> })}
                {question.context.map(|context| view! { <AgentContext context=context round=round/> })}
                {from_knowledge}
                <form class="answer" on:submit=|ev| ev.prevent_default() aria-describedby=described_by aria-busy=move || busy.get().to_string()>
                    {restored.then(|| view! { <p class="muted draft-restored">"Your draft from earlier is restored."</p> })}
                    {several.map(|(answers_in, wanted)| view! {
                        <p class="several" data-several="">
                            <strong>{format!("{answers_in} of {wanted} answers in")}</strong>
                            " — this question asks several people. Answer on your own: the others' choices show once you have answered."
                        </p>
                    })}
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
                        prop:readOnly=is_settled
                        prop:value=body
                        on:input=move |ev| body.set(event_target_value(&ev))
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
                            prop:readOnly=is_settled
                            prop:value=cost
                            on:input=move |ev| cost.set(event_target_value(&ev))
                        />
                    })}
                    {{
                        let sure_id = sure_id.clone();
                        let other_id = sure_name.clone();
                        // The presets, or "another value" with a field for it.
                        let chosen = move || match sure.get().trim() {
                            "" if !other.get() => String::new(),
                            "60" | "80" | "95" if !other.get() => sure.get().trim().to_owned(),
                            _ => "other".to_owned(),
                        };
                        view! {
                            <div class="sure">
                                <label for=sure_id.clone()>"How sure?"</label>
                                <select
                                    id=sure_id
                                    name="confidence-choice"
                                    prop:value=chosen
                                    prop:disabled=is_settled
                                    on:change=move |ev| {
                                        let picked = event_target_value(&ev);
                                        if picked == "other" {
                                            set_other.set(true);
                                            sure.set(String::new());
                                            let field = other_field.clone();
                                            request_animation_frame(move || focus_by_id(&field));
                                        } else {
                                            set_other.set(false);
                                            sure.set(picked);
                                        }
                                    }
                                >
                                    <option value="">"Not said (optional; the agent is told)"</option>
                                    <option value="60">"Unsure — 60 %"</option>
                                    <option value="80">"Fairly sure — 80 %"</option>
                                    <option value="95">"Certain — 95 %"</option>
                                    <option value="other">"Another value…"</option>
                                </select>
                                <Show when=move || other.get()>
                                    <label for=other_id.clone()>"How sure, 50 to 100 %"</label>
                                    <input
                                        id=other_id.clone()
                                        name="confidence"
                                        type="number"
                                        min="50"
                                        max="100"
                                        step="1"
                                        inputmode="numeric"
                                        autocomplete="off"
                                        prop:readOnly=is_settled
                                        prop:value=sure
                                        on:input=move |ev| sure.set(event_target_value(&ev))
                                    />
                                </Show>
                            </div>
                        }
                    }}
                    <p class="error form-error" id=error_id role="alert">{move || error.get()}</p>
                    <div class="actions">
                        <button type="button" data-kind="answered" aria-disabled=move || locked.get().to_string() on:click=move |_| { if !locked.get_untracked() { act.dispatch((AnswerKind::Answered, None)); } }>{if task_limit.is_some() { "Complete task" } else { "Answer" }}</button>
                        <button type="button" data-kind="insufficient_context" class="secondary" aria-disabled=move || locked.get().to_string() on:click=decline>"Not enough context"</button>
                        <button type="button" data-kind="needs_research" class="secondary" aria-disabled=move || locked.get().to_string() aria-expanded=move || asking_research.get().to_string() on:click=ask_research>"Ask the agent to research more"</button>
                    </div>
                    <Show when=move || asking_research.get()>
                        <div class="research-note">
                            <label for=note_id.clone()>"What should the agent find out? (required; the agent is told)"</label>
                            <textarea id=note_id.clone() name="note" maxlength="2000" rows="2" aria-describedby=note_error_id.clone() aria-invalid=move || note_error.with(Option::is_some).to_string() prop:readOnly=is_settled prop:value=note on:input=move |ev| { note_error.set(None); note.set(event_target_value(&ev)) }></textarea>
                            <p class="error field-error" id=note_error_id.clone() role="alert">{move || note_error.get()}</p>
                            <div class="actions">
                                <button type="button" data-kind="send_research" aria-disabled=move || locked.get().to_string() on:click=send_research.clone()>"Send back for research"</button>
                                <button type="button" class="secondary" on:click=move |_| asking_research.set(false)>"Cancel"</button>
                            </div>
                        </div>
                    </Show>
                    <p class="muted">"Declining costs nothing: only answer what you know. Declines and research wait 10 s for Undo."</p>
                    <details class="dismiss">
                        <summary>"Dismiss…"</summary>
                        <p class="muted">"Dismissing ends the question for everyone: nobody is asked about it again and the agent is told. “Not enough context” only takes it off your own queue; others can still answer it."</p>
                        <label for=reason_id.clone()>"Why (optional; the agent is told)"</label>
                        <input id=reason_id type="text" maxlength="500" prop:readOnly=is_settled prop:value=reason on:input=move |ev| reason.set(event_target_value(&ev))/>
                        <button type="button" class="secondary" data-kind="dismiss" aria-disabled=move || locked.get().to_string() on:click=move |_| { if !locked.get_untracked() { dismiss.dispatch(()); } }>"Dismiss question"</button>
                    </details>
                </form>
                // Below the form, so the buttons stay near the top of a long card.
                <p class="question-link"><a href=page>"Its page: answers, timeline and budget"<span class="visually-hidden">" — "{title}</span></a></p>
            </div>
        </div>
    }
}

/// "mara is answering", "mara and ben are answering".
pub fn answering_words(handles: &[String]) -> String {
    match handles {
        [] => String::new(),
        [one] => format!("{one} is answering"),
        [first @ .., last] => format!("{} and {last} are answering", first.join(", ")),
    }
}

/// Focus the element with this id, if there is one.
fn focus_by_id(id: &str) {
    if let Some(el) = document()
        .get_element_by_id(id)
        .and_then(|e| wasm_bindgen::JsCast::dyn_into::<web_sys::HtmlElement>(e).ok())
    {
        let _ = el.focus();
    }
}

/// The seconds until a held action is sent.
#[component]
fn HoldCountdown(send_at: f64) -> impl IntoView {
    let (now, set_now) = signal(js_sys::Date::now());
    if let Ok(handle) = set_interval_with_handle(
        move || set_now.set(js_sys::Date::now()),
        std::time::Duration::from_millis(500),
    ) {
        on_cleanup(move || handle.clear());
    }
    move || {
        format!(
            "{} s",
            ((send_at - now.get()) / 1000.0).ceil().max(0.0) as i64
        )
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
