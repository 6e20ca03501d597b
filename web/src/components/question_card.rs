//! The question card. The agent's context is untrusted (docs/contract.md#untrusted-context): it
//! is only ever text inside the labelled blockquote, never markup. Every field the agent wrote
//! is isolated (`<bdi>`), and the invisible characters that could reorder or hide what a person
//! reads (bidirectional overrides, zero-width characters) are shown as visible marks instead of
//! being obeyed.

use leptos::prelude::*;

use crate::api::{self, ApiError, ErrorCode};
use crate::components::drafts::{self, Draft};
use crate::components::held::{Held, Sent};
use crate::components::money::{money, parse_money};
use crate::components::time_ago::TimeAgo;
use crate::operations::{
    AnswerQuestion, DismissQuestion, MarkAnswering, SimilarKnowledge, answer_question,
    dismiss_question, mark_answering, queue_page::QuestionCard as Question, similar_knowledge,
};
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
/// `question_id` (read once, when this is shown), each with a link to its page and, when it can
/// answer this question, "Use this answer", which hands the entry's id to `on_use` (the card
/// holds it ten seconds with "Undo" before it is sent). An entry can answer it when the question
/// has no options, or when the entry's chosen option is one of them by label (ignoring case and
/// surrounding spaces): the option the agent will receive is named beside the button. An entry
/// that cannot says why instead. Nothing is shown when there are none, or when they could not be
/// read (it is a shortcut, not the way to answer).
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
                .map(|data| {
                    let options: Vec<String> =
                        data.question.options.into_iter().map(|o| o.label).collect();
                    (options, data.question.similar_knowledge)
                })
                .unwrap_or_default()
        }
    });
    move || {
        let heading_id = heading_id.clone();
        entries.get().filter(|(_, list)| !list.is_empty()).map(|(options, list)| {
            let items = list
                .into_iter()
                .map(|entry| {
                    let href = format!("/dashboard/niches/{}/knowledge/{}", entry.niche_slug, entry.id);
                    let title = visible_controls(&shorten(&entry.title, 120));
                    let entry_id = entry.id.clone();
                    let receives = receives(&options, entry.option_label.as_deref());
                    let offer = match receives {
                        Some(label) => view! {
                            <p class="receives" data-receives="">
                                {match label {
                                    Some(label) => view! { "The agent will receive the option "<strong><bdi>{visible_controls(&label)}</bdi></strong>" with these words." }.into_any(),
                                    None => view! { "The agent will receive these words." }.into_any(),
                                }}
                            </p>
                            <button type="button" class="secondary small" data-kind="from_knowledge" disabled=busy on:click=move |_| on_use.run(entry_id.clone())>
                                "Use this answer"<span class="visually-hidden">" — "{title.clone()}</span>
                            </button>
                        }.into_any(),
                        None => view! {
                            <p class="muted" data-cannot-use="">"Its chosen option is not one of this question's options, so it cannot settle this question."</p>
                        }.into_any(),
                    };
                    view! {
                        <li data-entry-id=entry.id.clone()>
                            <a href=href><bdi>{title.clone()}</bdi></a>
                            {entry.option_label.map(|label| view! {
                                <p><strong>"Chosen: "</strong><bdi>{visible_controls(&shorten(&label, 120))}</bdi></p>
                            })}
                            {entry.answer.filter(|a| !a.trim().is_empty()).map(|answer| view! {
                                <p class="answer-words"><bdi>{visible_controls(&shorten(&answer, 200))}</bdi></p>
                            })}
                            {offer}
                        </li>
                    }
                })
                .collect_view();
            let labelled_by = heading_id.clone();
            view! {
                <section class="already-answered" aria-labelledby=labelled_by>
                    <h3 id=heading_id>"Already answered?"</h3>
                    <p class="muted">"Verified answers to similar questions. Using one settles this question with it, after ten seconds in which you can undo it."</p>
                    <ul>{items}</ul>
                </section>
            }
        })
    }
}

/// What an entry whose chosen option is `chosen` gives a question offering `options` (labels):
/// `Some(Some(label))` the question's option of the same label, `Some(None)` words only (the
/// question has no options), `None` when it cannot answer it.
fn receives(options: &[String], chosen: Option<&str>) -> Option<Option<String>> {
    if options.is_empty() {
        return Some(None);
    }
    let chosen = chosen.map(str::trim).filter(|c| !c.is_empty())?;
    options
        .iter()
        .find(|o| o.trim().to_lowercase() == chosen.to_lowercase())
        .map(|o| Some(o.clone()))
}

/// What acting on a card did: the question, its research round, and the server's result.
pub type Acted = (String, i64, answer_question::AnswerQuestionAnswerQuestion);

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

thread_local! {
    /// The question whose form this tab has said it has open (`answering`), if any.
    static MARKED: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Tell the server (best effort) that this person has question `id`'s form open, or none.
fn mark_answering(id: Option<String>) {
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
    let dismiss_id = question.id.clone();
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
    let cost_id = format!("cost-{id}");

    let draft = drafts::load(&id).unwrap_or_default();
    let (choice, set_choice) = signal(draft.option.clone());
    let (body, set_body) = signal(draft.body.clone());
    let (cost, set_cost) = signal(draft.cost.clone());
    let (note, set_note) = signal(draft.note.clone());
    let (sure, set_sure) = signal(draft.confidence.clone());
    let sure_id = format!("sure-{id}");
    let sure_name = format!("sure-value-{id}");
    let other_field = sure_name.clone();
    // "Another value" chosen (or a typed value that is not a preset, from a draft).
    let (other, set_other) = signal(!matches!(draft.confidence.trim(), "" | "60" | "80" | "95"));
    let several =
        (question.answers_wanted > 1).then_some((question.answers_in, question.answers_wanted));
    let asking_research = RwSignal::new(!draft.note.trim().is_empty());
    let (error, set_error) = signal(None::<String>);
    let (note_error, set_note_error) = signal(None::<String>);
    let note_error_id = format!("research-note-error-{id}");
    let restored = !draft.is_empty();
    let sent = RwSignal::new(false);

    // Keep the draft as it is typed; forget it once the answer is sent.
    let draft_id = id.clone();
    Effect::new(move |_| {
        let draft = Draft {
            body: body.get(),
            option: choice.get(),
            cost: cost.get(),
            note: note.get(),
            confidence: sure.get(),
            saved: 0.0,
        };
        if !sent.get() {
            drafts::save(&draft_id, &draft);
        }
    });

    // Presence: this person has the form open while the card is shown; renewed every 10 s.
    let mark_id = id.clone();
    let is_settled = move || settled.with(Option::is_some);
    mark_answering(Some(mark_id.clone()));
    if let Ok(handle) = set_interval_with_handle(
        {
            let mark_id = mark_id.clone();
            move || {
                if !is_settled() && MARKED.with(|m| m.borrow().as_deref() == Some(&mark_id)) {
                    MARKED.with(|m| *m.borrow_mut() = None);
                    mark_answering(Some(mark_id.clone()));
                }
            }
        },
        std::time::Duration::from_secs(10),
    ) {
        let mark_id = mark_id.clone();
        on_cleanup(move || {
            handle.clear();
            if MARKED.with(|m| m.borrow().as_deref() == Some(&mark_id)) {
                mark_answering(None);
            }
        });
    }
    let claim_id = mark_id.clone();
    let claim = move |_| {
        if !is_settled() && MARKED.with(|m| m.borrow().as_deref() != Some(&claim_id)) {
            mark_answering(Some(claim_id.clone()));
        }
    };

    let act_id = id.clone();
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
        // How sure: optional; 50 to 100 when given.
        let confidence = match (kind, sure.get_untracked().trim()) {
            (AnswerKind::Answered, "") | (AnswerKind::FromKnowledge, _) => Ok(None),
            (AnswerKind::Answered, typed) => {
                match typed.trim_end_matches('%').trim().parse::<i64>() {
                    Ok(value) if (50..=100).contains(&value) => Ok(Some(value)),
                    _ => Err(
                        "Say how sure you are as a percentage from 50 to 100, or leave it empty."
                            .to_owned(),
                    ),
                }
            }
            _ => Ok(None),
        };
        let actual_cost = actual_cost.and_then(|cost| confidence.map(|sure| (cost, sure)));
        let input =
            actual_cost.map(
                |(actual_cost_minor, confidence)| answer_question::AnswerInput {
                    confidence,
                    question_id: act_id.clone(),
                    option_id: choice
                        .get_untracked()
                        .filter(|_| *kind == AnswerKind::Answered),
                    body: Some(body.get_untracked())
                        .filter(|b| entry.is_none() && !b.trim().is_empty()),
                    actual_cost_minor,
                    entry_id: entry.clone(),
                    kind: kind.clone(),
                },
            );
        let id = act_id.clone();
        async move {
            set_error.set(None);
            let input = match input {
                Ok(input) => input,
                Err(refusal) => return set_error.set(Some(refusal)),
            };
            match api::run::<AnswerQuestion>(answer_question::Variables { input }).await {
                Ok(data) => {
                    sent.set(true);
                    drafts::forget(&id);
                    on_done.run((id, round, data.answer_question));
                }
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
                Ok(()) => {
                    sent.set(true);
                    drafts::forget(&id);
                    on_dismissed.run(id);
                }
                Err(err) => set_error.set(Some(err.to_string())),
            }
        }
    });
    let busy = Signal::derive(move || act.pending().get() || dismiss.pending().get());
    // Nothing may be sent from a card someone else settled.
    let locked = Signal::derive(move || busy.get() || is_settled());

    // Decline and research wait ten seconds for "Undo".
    let hold_id = id.clone();
    let decline = move |_| {
        if locked.get_untracked() {
            return;
        }
        set_error.set(None);
        held.hold(
            hold_id.clone(),
            round,
            AnswerKind::InsufficientContext,
            None,
        );
    };
    let research_id = id.clone();
    let note_field = note_id.clone();
    let send_research = move |_| {
        if locked.get_untracked() {
            return;
        }
        let written = note.get_untracked().trim().to_owned();
        if written.is_empty() {
            set_note_error.set(Some(
                "Say what the agent should find out: it is sent with the question.".to_owned(),
            ));
            focus_by_id(&note_field);
            return;
        }
        set_error.set(None);
        set_note_error.set(None);
        held.hold(
            research_id.clone(),
            round,
            AnswerKind::NeedsResearch,
            Some(written),
        );
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
    let refused_id = id.clone();
    // A held action the server refused comes back here as an error.
    Effect::new(move |_| {
        if let Some((r, Sent::Refused(why))) = held.ended_on(&refused_id)
            && r == round
        {
            set_error.set(Some(why));
        }
    });

    let from_knowledge = (task_limit.is_none()).then(|| {
        // Held ten seconds with "Undo", as decline and research are.
        let use_id = id.clone();
        let on_use = Callback::new(move |entry: String| {
            if !locked.get_untracked() {
                set_error.set(None);
                held.hold_entry(use_id.clone(), round, entry);
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
                        on:change=move |_| { if !is_settled() { set_choice.set(Some(value.clone())) } }
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
                        {(!drafts_empty(body, choice, cost, note)).then_some(" — your draft is kept below.")}
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
                            prop:readOnly=is_settled
                            prop:value=cost
                            on:input=move |ev| set_cost.set(event_target_value(&ev))
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
                                            set_sure.set(String::new());
                                            let field = other_field.clone();
                                            request_animation_frame(move || focus_by_id(&field));
                                        } else {
                                            set_other.set(false);
                                            set_sure.set(picked);
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
                                        on:input=move |ev| set_sure.set(event_target_value(&ev))
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
                            <textarea id=note_id.clone() name="note" maxlength="2000" rows="2" aria-describedby=note_error_id.clone() aria-invalid=move || note_error.with(Option::is_some).to_string() prop:readOnly=is_settled prop:value=note on:input=move |ev| { set_note_error.set(None); set_note.set(event_target_value(&ev)) }></textarea>
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
                        <input id=reason_id type="text" maxlength="500" prop:readOnly=is_settled prop:value=reason on:input=move |ev| set_reason.set(event_target_value(&ev))/>
                        <button type="button" class="secondary" data-kind="dismiss" aria-disabled=move || locked.get().to_string() on:click=move |_| { if !locked.get_untracked() { dismiss.dispatch(()); } }>"Dismiss question"</button>
                    </details>
                </form>
                // Below the form, so the buttons stay near the top of a long card.
                <p class="question-link"><a href=page>"Its page: answers, timeline and budget"<span class="visually-hidden">" — "{title}</span></a></p>
            </div>
        </div>
    }
}

fn drafts_empty(
    body: ReadSignal<String>,
    choice: ReadSignal<Option<String>>,
    cost: ReadSignal<String>,
    note: ReadSignal<String>,
) -> bool {
    Draft {
        body: body.get_untracked(),
        option: choice.get_untracked(),
        cost: cost.get_untracked(),
        note: note.get_untracked(),
        confidence: String::new(),
        saved: 0.0,
    }
    .is_empty()
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
