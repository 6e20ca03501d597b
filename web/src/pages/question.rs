//! `/dashboard/niches/:slug/questions/:id`: one question as its niche's active members and admins
//! see it — the question with the agent's context (untrusted: escaped, isolated, collapsed when
//! long, through the question card's `LongText`), its options with the chosen one marked, every
//! answer and decline with its review state, its timeline (the audit log, oldest first) and its
//! budget entries; for admins, its deliveries to the agent with their attempts, and "Reverse"
//! (with a note) on a verified answer.
//!
//! Who may read it is the server's rule: anyone else gets the server's refusal in words, never a
//! broken page. The page is a lazily loaded route, its own wasm chunk.

use std::collections::BTreeMap;

use leptos::Params;
use leptos::prelude::*;
use leptos_router::components::A;
use leptos_router::hooks::use_params;
use leptos_router::params::Params;

use crate::api::{self, ApiError};
use crate::components::loaded::Loaded;
use crate::components::money::money;
use crate::components::question_card::{
    Acted, Deliverable, LongText, PriceBadge, QuestionCard, shorten, visible_controls,
};
use crate::components::time_ago::{TimeAgo, exact};
use crate::components::title::page_title;
use crate::operations::{
    QuestionDeliveries, QuestionPage as QuestionRead, ReverseContribution, question_deliveries,
    question_page, queue_page, reverse_contribution,
};
use crate::session::Session;
use crate::vocab::{
    AnswerKind, AttemptOutcome, ContributionStatus, ExchangeKind, QuestionStatus, Urgency,
};

type Question = question_page::QuestionPageQuestion;
type Delivery = question_deliveries::QuestionDeliveriesQuestionDeliveries;
type Answer = question_page::QuestionPageQuestionAnswers;

/// An admin reversing a verified answer: its contribution's id and the note for the agent.
type Reverse = Action<(String, Option<String>), Result<(), ApiError>>;

/// The route's typed parameters.
#[derive(Params, Clone, PartialEq)]
pub struct QuestionParams {
    /// The niche's slug.
    pub slug: Option<String>,
    /// The question's id.
    pub id: Option<String>,
}

lazy_page! {
    /// The question page as a lazily loaded route: its code is fetched the first time someone
    /// opens a question, so the queue never downloads it.
    QuestionRoute => QuestionRouteView
}

/// A fresh page (and read) for each question in the path.
#[component]
fn QuestionRouteView() -> impl IntoView {
    let params = use_params::<QuestionParams>();
    let key = Memo::new(move |_| {
        params
            .get()
            .map(|p| (p.slug.unwrap_or_default(), p.id.unwrap_or_default()))
            .unwrap_or_default()
    });
    move || {
        let (slug, id) = key.get();
        view! { <QuestionPage slug=slug id=id/> }
    }
}

#[component]
fn QuestionPage(slug: String, id: String) -> impl IntoView {
    let session = Session::get();
    let is_admin = Memo::new(move |_| session.person().flatten().is_some_and(|p| p.is_admin));
    let read_id = id.clone();
    let question = LocalResource::new(move || {
        let id = read_id.clone();
        async move { api::run::<QuestionRead>(question_page::Variables { id }).await }
    });
    page_title(move || {
        question
            .get()
            .and_then(Result::ok)
            .map_or_else(|| "Question".to_owned(), |d| shorten(&d.question.title, 80))
    });
    // Deliveries are for admins only: nobody else asks (the server would refuse).
    let deliveries_id = id.clone();
    let deliveries = LocalResource::new(move || {
        let id = deliveries_id.clone();
        let admin = is_admin.get();
        async move {
            if !admin {
                return None;
            }
            Some(
                api::run::<QuestionDeliveries>(question_deliveries::Variables { id })
                    .await
                    .map(|data| data.question.deliveries),
            )
        }
    });
    let reverse: Reverse = Action::new_local(move |(id, note): &(String, Option<String>)| {
        let variables = reverse_contribution::Variables {
            id: id.clone(),
            note: note.clone(),
        };
        async move {
            let result = api::send::<ReverseContribution>(variables).await;
            // Whatever happened, show the question as it is now.
            question.refetch();
            deliveries.refetch();
            result
        }
    });
    let acted_notice = RwSignal::new(None::<String>);
    let on_done = Callback::new(move |(_, _, result): Acted| {
        let points = result
            .contribution_status
            .map(|status| {
                format!(
                    " {} points, {}.",
                    result.points,
                    ContributionStatus::of(&status)
                )
            })
            .unwrap_or_default();
        acted_notice.set(Some(format!("{}{points}", result.notice)));
        question.refetch();
    });
    let on_dismissed = Callback::new(move |_: String| {
        acted_notice.set(Some(
            "Dismissed. Nobody will be asked about it again.".to_owned(),
        ));
        question.refetch();
    });
    let queue_href = format!("/dashboard/niches/{slug}/questions");
    view! {
        <main class="question-page">
            <p><A href=queue_href>"← Back to the queue"</A></p>
            <div aria-live="polite">
                {move || reverse.value().get().map(|result| match result {
                    Ok(()) => view! { <p class="notice" role="status">"Reversed: it no longer counts, and the agent is told."</p> }.into_any(),
                    Err(err) => view! { <p class="error" role="alert">{err.to_string()}</p> }.into_any(),
                })}
            </div>
            <Loaded loading="Loading the question…" forbidden="Only the niche's active members and admins see its questions">
                {
                    let slug = slug.clone();
                    move || {
                        let slug = slug.clone();
                        question.get().map(|result| result.map(move |data| {
                            let q = data.question;
                            if q.niche.slug != slug {
                                let href = format!("/dashboard/niches/{}/questions/{}", q.niche.slug, q.id);
                                return view! {
                                    <h1>"Not in this niche"</h1>
                                    <p class="error" role="alert">"Question "{q.id.clone()}" is not in “"{slug}"”."</p>
                                    <p><A href=href>"Open it in "{q.niche.name}</A></p>
                                }.into_any();
                            }
                            view! { <QuestionView question=q admin=is_admin.get() reverse=reverse acted=acted_notice on_done=on_done on_dismissed=on_dismissed/> }.into_any()
                        }))
                    }
                }
            </Loaded>
            <Show when=move || is_admin.get()>
                <section aria-labelledby="deliveries-title">
                    <h2 id="deliveries-title">"Deliveries to the agent"</h2>
                    <Loaded loading="Loading the deliveries…">
                        {move || deliveries.get().flatten().map(|result| result.map(|list| view! { <DeliveryList deliveries=list/> }))}
                    </Loaded>
                </section>
            </Show>
        </main>
    }
}

/// The question with its options, answers, timeline and budget entries.
#[component]
fn QuestionView(
    question: Question,
    admin: bool,
    reverse: Reverse,
    acted: RwSignal<Option<String>>,
    on_done: Callback<Acted>,
    on_dismissed: Callback<String>,
) -> impl IntoView {
    let q = question;
    let urgency = Urgency::of(&q.urgency);
    let status = QuestionStatus::of(&q.status);
    let task = q.kind == ExchangeKind::Task;
    let waiting = matches!(status, QuestionStatus::Open | QuestionStatus::Researching);
    let taken_back = |a: &Answer| {
        matches!(
            a.review,
            Some(ContributionStatus::Rejected | ContributionStatus::Reversed)
        )
    };
    // Open again after an answer was rejected or reversed.
    let reopened = waiting
        && q.answers
            .iter()
            .any(|a| a.kind == AnswerKind::Answered && taken_back(a));
    let research_requests = q
        .answers
        .iter()
        .filter(|a| a.kind == AnswerKind::NeedsResearch)
        .count();
    // A waiting question has the same controls as its card in the queue.
    let card = waiting.then(|| {
        let page = format!("/dashboard/niches/{}/questions/{}", q.niche.slug, q.id);
        let card = as_card(&q);
        view! {
            <section class="act" aria-labelledby="act-title">
                <h2 id="act-title">{if task { "Complete it" } else { "Answer it" }}</h2>
                <QuestionCard question=card page=page fresh=false settled=Signal::derive(|| None) others=Signal::derive(Vec::new) on_done=on_done on_dismissed=on_dismissed on_close=Callback::new(|_| ())/>
            </section>
        }
    });
    // Which options were chosen, and by whom (answers rejected or reversed no longer count).
    let mut chosen: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for a in &q.answers {
        if a.kind == AnswerKind::Answered
            && !taken_back(a)
            && let Some(option) = &a.option_id
        {
            chosen
                .entry(option.clone())
                .or_default()
                .push(a.answered_by.clone());
        }
    }
    let offered = !q.options.is_empty();
    let none_chosen = chosen.is_empty();
    let options = q
        .options
        .into_iter()
        .map(|o| {
            let by = chosen.get(&o.id).cloned();
            let picked = by.is_some();
            view! {
                <li class:chosen=picked data-option-id=o.id.clone()>
                    <bdi>{visible_controls(&o.label)}</bdi>
                    {by.map(|who| view! { " "<span class="badge chosen-mark">"✓ chosen by "{who.join(", ")}</span> })}
                </li>
            }
        })
        .collect_view();
    let answers = q.answers.clone();
    let slug = q.niche.slug.clone();
    // Several answers: how many are in, and what they came to once concluded.
    let several = (q.answers_wanted > 1).then(|| {
        let outcome = q.consensus.clone().map(|c| {
            let label = c.option_label.clone().map(|l| visible_controls(&l)).unwrap_or_default();
            let shares = format!(
                "{:.0} % of {} answers (weighted by record: {:.0} %)",
                c.agreement * 100.0,
                c.answers,
                c.weighted_agreement * 100.0
            );
            if c.reached {
                view! { <p class="consensus" data-reached="true"><strong>"Consensus: "</strong><bdi>{label}</bdi>" — "{shares}</p> }.into_any()
            } else {
                view! { <p class="consensus" data-reached="false"><strong>"Disagreement"</strong>" — the most chosen, "<bdi>{label}</bdi>", has "{shares}"; the admins were told."</p> }.into_any()
            }
        });
        view! {
            <section class="several-answers" aria-labelledby="several-title">
                <h2 id="several-title">"Several answers"</h2>
                <p>{format!("{} of {} answers in; a consensus needs {:.0} % on one option.", q.answers_in, q.answers_wanted, q.agreement * 100.0)}</p>
                {outcome}
            </section>
        }
    });
    let routes = (!q.routes.is_empty()).then(|| {
        let rows = q.routes.clone().into_iter().map(|r| view! {
            <li><strong>{r.handle}</strong>" — "{r.reason}</li>
        }).collect_view();
        view! {
            <section class="routes" aria-labelledby="routes-title">
                <h2 id="routes-title">"Notified first"</h2>
                <p class="muted">"This niche routes new questions to a first wave; everyone else was told later."</p>
                <ol>{rows}</ol>
            </section>
        }
    });
    view! {
        <article class="question" data-question-id=q.id.clone()>
            <p class="meta">
                <span class=format!("badge urgency-{urgency}")>{urgency.to_string()}</span>
                <span class=format!("badge status-{status}")>{status_words(&status, task, reopened)}</span>
                <PriceBadge kind=q.kind.clone() budget_limit=q.budget_limit_minor bounty=q.bounty_minor/>
                <span class="muted">"asked "<TimeAgo at=q.created_at.clone()/></span>
                {q.answered_at.clone().map(|at| view! { " · "<span class="muted">{if task { "completed " } else { "answered " }}<TimeAgo at=at/></span> })}
                " · "<span class="muted" title=exact(&q.expires_at)>{if status == QuestionStatus::Expired { "expired " } else { "expires " }}<TimeAgo at=q.expires_at.clone()/></span>
                {reopened.then(|| view! { " · "<span class="muted reopened">"reopened after a rejection"</span> })}
                {(research_requests > 0).then(|| view! { " · "<span class="muted">{if research_requests == 1 { "sent back for research once".to_owned() } else { format!("sent back for research {research_requests} times") }}</span> })}
            </p>
            <h1><bdi>{visible_controls(&q.title)}</bdi></h1>
            {q.external_id.map(|e| view! { <p class="muted">"The agent's id: "<code><bdi>{visible_controls(&e)}</bdi></code></p> })}
            // While it waits, its card below shows the question, what the agent found and the
            // options to choose from: said once, there.
            {(!waiting).then(|| view! {
                <LongText text=q.question class="question-text" tag_quote=false/>
                {q.deliverable.map(|text| view! { <Deliverable text=text/> })}
                {q.context.map(|context| view! {
                    <details class="context" open>
                        <summary>"What the agent found"</summary>
                        <LongText text=context class="" tag_quote=true/>
                    </details>
                })}
            })}
            {(offered && !(waiting && none_chosen)).then(|| view! {
                <h2>"Options"</h2>
                {none_chosen.then(|| view! { <p class="muted">"None chosen yet."</p> })}
                <ul class="options-list">{options}</ul>
            })}
        </article>
        <div aria-live="polite">
            {move || acted.get().map(|notice| view! { <p class="notice" role="status">{notice}</p> })}
        </div>
        {card}
        {several}
        <AnswerList answers=answers slug=slug admin=admin task=task reverse=reverse/>
        {routes}
        <section aria-labelledby="timeline-title">
            <h2 id="timeline-title">"Timeline"</h2>
            {if q.timeline.is_empty() {
                view! { <p class="empty">"Nothing recorded yet."</p> }.into_any()
            } else {
                view! {
                    <ol class="timeline">
                        {q.timeline.into_iter().map(|t| {
                            let who = who_of(&t.actor, t.actor_handle.as_deref());
                            let said = sentence(&t.action, &who, t.answerer_handle.as_deref());
                            view! {
                                <li data-action=t.action>
                                    <bdi>{said}</bdi>
                                    {t.note.map(|why| view! { ": "<q class="why"><bdi>{visible_controls(&why)}</bdi></q> })}
                                    " · "<TimeAgo at=t.at/>
                                </li>
                            }
                        }).collect_view()}
                    </ol>
                }.into_any()
            }}
        </section>
        <section aria-labelledby="budget-title">
            <h2 id="budget-title">"Budget entries"</h2>
            {if q.budget_entries.is_empty() {
                view! { <p class="empty">"No bounty was reserved for it."</p> }.into_any()
            } else {
                view! {
                    <div class="table-wrap" tabindex="0" role="region" aria-label="Budget entries"><table class="budget-entries">
                        <thead><tr><th scope="col">"When"</th><th scope="col">"Entry"</th><th scope="col" class="num">"Amount"</th></tr></thead>
                        <tbody>{q.budget_entries.into_iter().map(|e| view! {
                            // The kind as the server names it: the ledger may gain kinds.
                            <tr data-budget-kind=e.kind.to_string()><td><TimeAgo at=e.created_at/></td><td>{e.kind.to_string().replace('_', " ")}</td><td class="num">{money(e.amount_minor, "USD")}</td></tr>
                        }).collect_view()}</tbody>
                    </table></div>
                }.into_any()
            }}
        </section>
    }
}

/// Every answer and decline, oldest first, with its review state; an answer given from knowledge
/// says so, with a link to its entry (in niche `slug`); for an admin, "Reverse" on a verified
/// answer.
#[component]
fn AnswerList(
    answers: Vec<Answer>,
    slug: String,
    admin: bool,
    task: bool,
    reverse: Reverse,
) -> impl IntoView {
    view! {
        <section aria-labelledby="answers-title">
            <h2 id="answers-title">"Answers and declines"</h2>
            {if answers.is_empty() {
                view! { <p class="empty">"Nobody has answered or declined yet."</p> }.into_any()
            } else {
                view! {
                    <ol class="answers-list">
                        {answers.into_iter().map(|a| {
                            let review = a.review.clone();
                            let reversible = admin && review == Some(ContributionStatus::Verified);
                            let form = a.contribution_id.clone().filter(|_| reversible).map(|id| {
                                view! { <ReverseForm contribution=id answer=a.id.clone() handle=a.answered_by.clone() reverse=reverse/> }
                            });
                            let from_knowledge = a.knowledge_entry_id.clone().map(|entry| {
                                let href = format!("/dashboard/niches/{slug}/knowledge/{entry}");
                                view! { <p class="from-knowledge" data-entry-id=entry>"Answered from knowledge · "<A href=href>"See the entry"</A></p> }
                            });
                            view! {
                                <li data-answer-id=a.id.clone()>
                                    <strong>{a.answered_by}</strong>": "{if task && a.kind == AnswerKind::Answered { "Completed".to_owned() } else { a.kind.describe() }}
                                    {a.option_label.map(|l| view! { " — "<bdi>{visible_controls(&l)}</bdi> })}
                                    {a.withheld.then(|| view! { " "<span class="muted withheld">"— the choice shows once you have answered"</span> })}
                                    {a.confidence.map(|c| view! { " · "<span class="confidence">{format!("{c} % sure")}</span> })}
                                    {review.map(|r| view! { " "<span class=format!("badge status-{r}")>{r.to_string()}</span> })}
                                    {(a.kind == AnswerKind::NeedsResearch).then(|| a.body.clone()).flatten().map(|_| view! { " "<span class="muted">"— what the agent was asked to find out:"</span> })}
                                    " · "<TimeAgo at=a.created_at/>
                                    {a.actual_cost_minor.map(|cost| view! { " · "<span data-actual-cost=cost.to_string()>"cost "{money(cost, "USD")}</span> })}
                                    {a.body.map(|b| view! { <p class="answer-words"><bdi>{visible_controls(&b)}</bdi></p> })}
                                    {from_knowledge}
                                    {form}
                                </li>
                            }
                        }).collect_view()}
                    </ol>
                }.into_any()
            }}
        </section>
    }
}

/// Reverse a verified answer, with the reason (required) the answerer and the agent are told;
/// an empty reason is refused here, in the form.
#[component]
fn ReverseForm(
    contribution: String,
    answer: String,
    handle: String,
    reverse: Reverse,
) -> impl IntoView {
    let busy = reverse.pending();
    let note = RwSignal::new(String::new());
    let missing = RwSignal::new(false);
    let note_id = format!("reverse-note-{answer}");
    let error_id = format!("reverse-error-{answer}");
    let described = error_id.clone();
    view! {
        <form class="inline" novalidate on:submit=move |ev| {
            ev.prevent_default();
            let why = note.get_untracked().trim().to_owned();
            missing.set(why.is_empty());
            if !why.is_empty() {
                reverse.dispatch((contribution.clone(), Some(why)));
            }
        }>
            <label for=note_id.clone()>"Why reverse (required; the answerer and the agent are told)"</label>
            <input id=note_id type="text" maxlength="500" required
                aria-invalid=move || missing.get().to_string()
                aria-describedby=move || missing.get().then(|| described.clone())
                prop:value=note on:input=move |ev| note.set(event_target_value(&ev))/>
            <button type="submit" class="secondary small" disabled=busy>"Reverse"<span class="visually-hidden">" "{handle}"'s answer"</span></button>
            {move || missing.get().then(|| view! { <p class="error form-error" role="alert" id=error_id.clone()>"Give a reason to reverse: the answerer and the agent are told it."</p> })}
        </form>
    }
}

/// A question's deliveries with their attempts (admins).
#[component]
fn DeliveryList(deliveries: Vec<Delivery>) -> impl IntoView {
    if deliveries.is_empty() {
        return view! { <p class="empty">"Nothing has been written for the agent about it."</p> }
            .into_any();
    }
    view! {
        <div class="table-wrap" tabindex="0" role="region" aria-label="Deliveries to the agent">
            <table class="deliveries">
                <thead><tr>
                    <th scope="col">"Event"</th><th scope="col">"Status"</th><th scope="col" class="num">"Attempts"</th>
                    <th scope="col">"Last error"</th><th scope="col">"Written"</th>
                </tr></thead>
                <tbody>
                    {deliveries.into_iter().map(|d| {
                        let status = d.status.clone();
                        let count = d.attempts.len();
                        let by_lookup = d.reads_by_lookup;
                        let attempts = d.attempts.into_iter().map(|a| {
                            let what = match (a.status_code, a.error) {
                                (Some(code), None) => format!("HTTP {code}"),
                                (_, Some(error)) => error,
                                (None, None) => String::new(),
                            };
                            view! { <li><TimeAgo at=a.at/>" · "{AttemptOutcome::of(&a.outcome).to_string()}" · "{what}" · "{a.duration_ms}" ms"</li> }
                        }).collect_view();
                        // Worded as the admin's deliveries page words it.
                        let status_cells = if by_lookup {
                            view! {
                                <td colspan="2" data-no-endpoint="">
                                    <span class="badge status-no-endpoint">"no endpoint"</span>
                                    <span class="muted">": the agent reads these with the lookup route"</span>
                                </td>
                            }.into_any()
                        } else {
                            view! {
                                <td><span class=format!("badge status-{status}")>{status.to_string()}</span></td>
                                <td class="num">{count}</td>
                            }.into_any()
                        };
                        view! {
                        <tr data-delivery-id=d.id.clone()>
                            <td>
                                {crate::vocab::event_words(&d.event_type)}
                                <details>
                                    <summary>"Envelope "{d.envelope_id}</summary>
                                    <ol class="attempts">{attempts}</ol>
                                </details>
                            </td>
                            {status_cells}
                            <td>{d.last_error.unwrap_or_default()}</td>
                            <td><TimeAgo at=d.created_at/></td>
                        </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
    .into_any()
}

/// The question as the queue's card reads it.
fn as_card(q: &Question) -> queue_page::QuestionCard {
    queue_page::QuestionCard {
        id: q.id.clone(),
        agent_name: None,
        title: q.title.clone(),
        question: q.question.clone(),
        context: q.context.clone(),
        urgency: q.urgency.clone(),
        status: q.status.clone(),
        created_at: q.created_at.clone(),
        expires_at: q.expires_at.clone(),
        bounty_minor: q.bounty_minor,
        kind: q.kind.clone(),
        budget_limit_minor: q.budget_limit_minor,
        deliverable: q.deliverable.clone(),
        research_round: q.research_round,
        escalation_step: q.escalation_step,
        answers_wanted: q.answers_wanted,
        answers_in: q.answers_in,
        options: q
            .options
            .iter()
            .map(|o| queue_page::QuestionCardOptions {
                id: o.id.clone(),
                label: o.label.clone(),
            })
            .collect(),
    }
}

/// A question's status in words: a task that is answered is "completed", a question open
/// again after a rejection is "reopened".
fn status_words(status: &QuestionStatus, task: bool, reopened: bool) -> String {
    match status {
        QuestionStatus::Answered if task => "completed".to_owned(),
        QuestionStatus::Open if reopened => "reopened".to_owned(),
        QuestionStatus::Researching => "with the agent for research".to_owned(),
        other => other.to_string(),
    }
}

/// Who did something, as people name them: a person's handle, "The agent", or askloop itself.
fn who_of(actor: &str, handle: Option<&str>) -> String {
    match handle {
        Some(handle) => handle.to_owned(),
        None if actor.starts_with("agent:") || actor == "agent" => "The agent".to_owned(),
        None if actor.starts_with("user:") => "Someone".to_owned(),
        None if actor == "cli" => "An admin on the server's command line".to_owned(),
        None => "askloop".to_owned(),
    }
}

/// A timeline entry as a sentence, with who did it (`who`) and, for a verdict, whose answer
/// it was on (`answerer`). Never the event's own name: an event without words of its own is
/// told as a change.
fn sentence(action: &str, who: &str, answerer: Option<&str>) -> String {
    let whose = answerer.map_or_else(|| "the answer".to_owned(), |a| format!("{a}'s answer"));
    match action {
        "question.created" => "The agent asked".to_owned(),
        "question.answered" => format!("{who} answered"),
        "question.declined" => format!("{who} declined: not enough context"),
        "question.needs_context" => "Nobody had enough context; the agent was told".to_owned(),
        "question.research_requested" => format!("{who} sent it back for research"),
        "question.research_returned" => "The agent came back with its research".to_owned(),
        "question.reopened" => format!("Reopened after {who} rejected or reversed the answer"),
        "question.place_reopened" => {
            format!("A place for another answer opened after {who} rejected or reversed one")
        }
        "question.dismissed" => format!("{who} dismissed it"),
        "question.withdrawn" => "The agent withdrew it".to_owned(),
        "question.expired" => "It expired unanswered".to_owned(),
        "question.escalated" => "Nobody answered in time: more people were told".to_owned(),
        "question.waiting" => "The agent is still waiting".to_owned(),
        "question.consensus" => "The answers reached a consensus".to_owned(),
        "question.disagreement" => "The answers disagreed; the admins were told".to_owned(),
        "contribution.verified" => format!("Verified by {who} ({whose})"),
        "contribution.rejected" => format!("Rejected by {who} ({whose})"),
        "contribution.reversed" => format!("Reversed by {who} ({whose})"),
        "knowledge.written" => "Its answer became knowledge of the niche".to_owned(),
        "knowledge.correction_proposed" => {
            format!("{who} proposed a correction to its knowledge entry")
        }
        "knowledge.corrected" => "Its knowledge entry was corrected".to_owned(),
        "knowledge.superseded" => "Its knowledge entry was replaced by a newer version".to_owned(),
        "knowledge.retracted" => "Its knowledge entry was withdrawn".to_owned(),
        "knowledge.reused" => "An agent was answered from its knowledge entry".to_owned(),
        "knowledge.reuse_refunded" => "A reuse of its knowledge entry was refunded".to_owned(),
        _ if action.starts_with("knowledge.") => "Its knowledge entry changed".to_owned(),
        _ => format!("{who} changed it"),
    }
}

#[cfg(test)]
mod tests {
    use super::{sentence, who_of};

    #[test]
    fn every_entry_reads_as_a_sentence_without_internal_names() {
        assert_eq!(who_of("user:1", Some("ana")), "ana");
        assert_eq!(who_of("user:1", None), "Someone");
        assert_eq!(who_of("agent:4", None), "The agent");
        assert_eq!(who_of("system", None), "askloop");
        assert_eq!(
            sentence("contribution.rejected", "bo", Some("ana")),
            "Rejected by bo (ana's answer)"
        );
        assert_eq!(
            sentence("contribution.verified", "bo", None),
            "Verified by bo (the answer)"
        );
        for action in ["question.frobbed", "thing.done", "knowledge.archived"] {
            let said = sentence(action, "ana", None);
            assert!(!said.contains('.') && !said.contains('_'), "{said}");
        }
    }
}
