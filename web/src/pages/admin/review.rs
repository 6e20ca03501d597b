//! Review: contributions awaiting review, filtered by niche and answerer, each with what a
//! reviewer weighs (the question, the options, the answer, a task's reported cost against its
//! limit, the answerer's record, how long it took and the other members' declines). Each item
//! decides on its own: what the server says to a decision (a refusal, a stale item) shows inside
//! that item, announced. An admin's own answer offers no decision (another admin reviews it),
//! and rejecting asks for a reason and a confirmation first.

use leptos::prelude::*;

use crate::api::{self, ApiError};
use crate::components::correction::{CorrectionReview, kind_words, reject_warning, verdict_words};
use crate::components::loaded::Loaded;
use crate::components::money::money;
use crate::components::question_card::{LongText, visible_controls};
use crate::components::time_ago::TimeAgo;
use crate::operations::{
    AdminNicheNames, RejectContribution, ReviewQueue as ReviewRead, VerifyContribution,
    admin_niche_names, reject_contribution, review_queue, verify_contribution,
};
use crate::session::Session;
use crate::vocab::ExchangeKind;

use super::{Counts, FORBIDDEN};

type ReviewItem = review_queue::ReviewQueueReviewQueue;

/// How long something took, as people say it ("4 min", "2 h 5 min", "3 days 2 h").
fn duration_words(seconds: i64) -> String {
    let s = seconds.max(0);
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min", s / 60),
        3600..=86_399 => format!("{} h {} min", s / 3600, (s % 3600) / 60),
        _ => format!("{} days {} h", s / 86_400, (s % 86_400) / 3600),
    }
}

/// The Review section: its filters and the queue they narrow.
#[component]
pub fn ReviewSection() -> impl IntoView {
    let niche = RwSignal::new(String::new());
    let answerer = RwSignal::new(String::new());
    // The answerer filter applies when its form is sent, not on every key.
    let answerer_applied = RwSignal::new(String::new());
    let queue = LocalResource::new(move || {
        let niche = Some(niche.get()).filter(|n| !n.is_empty());
        let answerer = Some(answerer_applied.get()).filter(|a| !a.trim().is_empty());
        api::run::<ReviewRead>(review_queue::Variables { niche, answerer })
    });
    let niches = LocalResource::new(|| api::run::<AdminNicheNames>(admin_niche_names::Variables));
    let counts = Counts::of_desk();
    let reread = move || {
        queue.refetch();
        if let Some(counts) = counts {
            counts.refresh();
        }
    };
    // A decision that took leaves the queue with its item: what it did is said here, where it
    // stays. A refusal stays inside its item.
    let said = RwSignal::new(None::<String>);
    let niche_options = move || {
        niches.get().and_then(Result::ok).map(|n| {
            n.all_niches
                .into_iter()
                .map(|n| {
                    let label = format!("{} ({})", n.name, n.slug);
                    view! { <option value=n.slug>{label}</option> }
                })
                .collect_view()
        })
    };
    view! {
        <section aria-labelledby="review-title">
            <h2 id="review-title">"Review queue"</h2>
            <form class="inline filters" aria-label="Filter the review queue" on:submit=move |ev| {
                ev.prevent_default();
                answerer_applied.set(answerer.get_untracked());
            }>
                <label for="review-niche">"Niche"</label>
                <select id="review-niche" on:change=move |ev| niche.set(event_target_value(&ev))>
                    <option value="">"All niches"</option>
                    {niche_options}
                </select>
                <label for="review-answerer">"Answerer"</label>
                <input id="review-answerer" type="text" placeholder="handle" prop:value=answerer on:input=move |ev| answerer.set(event_target_value(&ev))/>
                <button type="submit" class="secondary">"Filter"</button>
            </form>
            <div class="review-said" aria-live="polite">
                {move || said.get().map(|text| view! { <p class="notice" role="status">{text}</p> })}
            </div>
            <Loaded forbidden=FORBIDDEN>
                {move || queue.get().map(|read| read.map(|r| {
                    let items = r.review_queue;
                    if items.is_empty() {
                        view! { <p class="empty">"Nothing awaits review."</p> }.into_any()
                    } else {
                        items.into_iter().map(|c| view! { <ReviewCard item=c reread=reread said=said/> }).collect_view().into_any()
                    }
                }))}
            </Loaded>
        </section>
    }
}

/// A decision on one item.
#[derive(Clone)]
enum Decision {
    Verify(Option<String>),
    Reject(String),
}

/// One contribution awaiting review.
#[component]
fn ReviewCard(
    item: ReviewItem,
    reread: impl Fn() + Copy + 'static,
    said: RwSignal<Option<String>>,
) -> impl IntoView {
    let c = item;
    let id = c.id.clone();
    let whose = c.contributor.handle.clone();
    let source = c.source.clone();
    let is_correction = source == "correction";
    let warning = reject_warning(&source);
    // Each item decides on its own; what came back shows inside it.
    let decide: Action<Decision, Result<&'static str, ApiError>> =
        Action::new_local(move |decision: &Decision| {
            let (id, decision, whose, source) =
                (id.clone(), decision.clone(), whose.clone(), source.clone());
            async move {
                let result = match decision {
                    Decision::Verify(note) => {
                        api::send::<VerifyContribution>(verify_contribution::Variables { id, note })
                            .await
                            .map(|_| verdict_words(&source, true))
                    }
                    Decision::Reject(note) => {
                        api::send::<RejectContribution>(reject_contribution::Variables { id, note })
                            .await
                            .map(|_| verdict_words(&source, false))
                    }
                };
                // Only a decision that took leaves the queue at once; a refused one stays, with
                // its refusal, until the admin moves on (the counts follow either way).
                match &result {
                    Ok(done) => {
                        said.set(Some(format!("{whose}'s {} — {done}", kind_words(&source))));
                        reread();
                    }
                    Err(_) => said.set(None),
                }
                result
            }
        });
    let busy = decide.pending();
    let mine = {
        let handle = c.contributor.handle.clone();
        move || {
            Session::get()
                .person()
                .flatten()
                .is_some_and(|me| me.handle == handle)
        }
    };
    let who = c.contributor;
    let calibration = &who.calibration;
    let weighed = if calibration.answers == 0 {
        " · no answer with a verdict yet".to_owned()
    } else {
        format!(
            " · {:.0} % of {} answers verified, lower bound {:.2}{}",
            calibration.verified_rate * 100.0,
            calibration.answers,
            calibration.lower_bound,
            calibration
                .brier
                .map(|b| format!(", Brier {b:.3}"))
                .unwrap_or_default()
        )
    };
    let sure = c
        .answer
        .as_ref()
        .and_then(|a| a.confidence)
        .map_or_else(String::new, |s| format!(" · said {s} % sure"));
    let record = format!(
        "{} tier, score {} · verified {}, rejected {}, pending {}, reversed {}{weighed}{sure}",
        who.tier.name,
        who.score,
        who.verified_count,
        who.rejected_count,
        who.pending_count,
        who.reversed_count
    );
    let answer_id = c.answer.as_ref().map(|a| a.id.clone());
    let chosen = c.answer.as_ref().and_then(|a| a.option_id.clone());
    let reported_cost = c.answer.as_ref().and_then(|a| a.actual_cost_minor);
    let question = c.question.map(|q| {
        let href = format!("/dashboard/niches/{}/questions/{}", q.niche.slug, q.id);
        let title = q.title.clone();
        let is_task = q.kind == ExchangeKind::Task;
        let options = q.options.into_iter().map(|o| {
            let picked = chosen.as_deref() == Some(o.id.as_str());
            view! {
                <li class:chosen=picked>
                    <bdi>{visible_controls(&o.label)}</bdi>
                    {picked.then(|| view! { " "<span class="badge chosen-mark">"✓ chosen"</span> })}
                </li>
            }
        }).collect_view();
        // The other members' declines, research requests and answers on the same question.
        let others: Vec<_> = q.answers.into_iter().filter(|a| Some(&a.id) != answer_id.as_ref()).collect();
        let others = if others.is_empty() {
            view! { <p class="muted">"No other member has acted on it."</p> }.into_any()
        } else {
            view! {
                <ul class="declines">
                    {others.into_iter().map(|a| view! {
                        <li>
                            <strong>{a.answered_by}</strong>": "{a.kind.describe()}" · "<TimeAgo at=a.created_at/>
                            {a.body.map(|b| view! { <span class="answer-words">" — "<bdi>{visible_controls(&b)}</bdi></span> })}
                        </li>
                    }).collect_view()}
                </ul>
            }.into_any()
        };
        // A task is judged on what it cost: the reported cost against the task's limit.
        let cost = is_task.then(|| {
            let limit = q.budget_limit_minor.unwrap_or_default();
            let (words, over) = match reported_cost {
                Some(cost) => (
                    format!("Reported cost {} of a {} limit", money(cost, "USD"), money(limit, "USD")),
                    cost > limit,
                ),
                None => (format!("No cost reported (limit {})", money(limit, "USD")), false),
            };
            view! {
                <p class="task-cost" class:over=over data-reported-cost=reported_cost.map(|c| c.to_string()).unwrap_or_default()>
                    <span class="badge task">"Task"</span>" "<strong>{words}</strong>
                </p>
            }
        });
        let head = view! {
            <h3><bdi>{visible_controls(&q.title)}</bdi></h3>
            {cost}
            <LongText text=q.question class="question-text" tag_quote=false/>
            {q.deliverable.map(|d| view! {
                <h4>"What it should deliver"</h4>
                <LongText text=d class="deliverable" tag_quote=true/>
            })}
            {q.context.map(|context| view! {
                <details class="context" open>
                    <summary>"What the agent found"</summary>
                    <LongText text=context class="" tag_quote=true/>
                </details>
            })}
            {(!is_task).then(|| view! { <h4>"Options"</h4><ul class="options-list">{options}</ul> })}
        };
        let tail = view! {
            <h4>"Other members on it"</h4>
            {others}
            <p><a href=href>"Open the question page"<span class="visually-hidden">": "{visible_controls(&title)}</span></a></p>
        };
        (head, tail)
    });
    let (question_head, question_tail) = question.unzip();
    let answer = c.answer.map(|a| {
        view! {
            <h4>"The answer"</h4>
            {a.option_label.map(|l| view! { <p>"Chose "<strong class="chosen-label"><bdi>{visible_controls(&l)}</bdi></strong></p> })}
            {match a.body {
                Some(words) => view! { <p class="answer-words"><bdi>{visible_controls(&words)}</bdi></p> }.into_any(),
                None => view! { <p class="muted">"No words given."</p> }.into_any(),
            }}
        }
    });
    let card_id = c.id.clone();
    view! {
        <article class="card review" data-contribution-id=c.id.clone() aria-busy=move || busy.get().to_string()>
            <p class="meta">
                <strong>{c.niche_slug}</strong>
                " · "{c.points}" points · "{c.source}" · "
                <TimeAgo at=c.created_at/>
            </p>
            {question_head}
            {answer}
            <p class="record" data-record="">
                "By "<strong class="answerer">{who.handle}</strong>" — "{record}
            </p>
            {c.seconds_to_answer.map(|s| view! {
                <p class="took" data-seconds=s.to_string()>"Answered "{duration_words(s)}" after the question arrived"</p>
            })}
            {question_tail}
            {is_correction.then(|| view! { <CorrectionReview contribution_id=c.id.clone()/> })}
            {(!is_correction).then(|| view! {
                <details>
                    <summary>"Evidence"</summary>
                    <pre class="evidence">{c.evidence}</pre>
                </details>
            })}
            <Show
                when=move || !mine()
                fallback=|| view! { <p class="own-answer" data-own-answer="">"Your answer — another admin reviews it."</p> }
            >
                <Decide id=card_id.clone() decide=decide warning=warning/>
            </Show>
        </article>
    }
}

/// An item's decision controls: verify with an optional note, or reject with a required reason
/// after a confirmation; and what the server said, inside the item, announced.
#[component]
fn Decide(
    id: String,
    decide: Action<Decision, Result<&'static str, ApiError>>,
    warning: &'static str,
) -> impl IntoView {
    let busy = decide.pending();
    let note_id = format!("note-{id}");
    let reason_id = format!("reason-{id}");
    let reason_error_id = format!("reason-error-{id}");
    let note = RwSignal::new(String::new());
    let reason = RwSignal::new(String::new());
    let rejecting = RwSignal::new(false);
    let reason_missing = RwSignal::new(false);
    let verify = move |_| {
        let written = Some(note.get_untracked()).filter(|n| !n.trim().is_empty());
        decide.dispatch(Decision::Verify(written));
    };
    let confirm_reject = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let why = reason.get_untracked().trim().to_owned();
        if why.is_empty() {
            reason_missing.set(true);
            return;
        }
        reason_missing.set(false);
        decide.dispatch(Decision::Reject(why));
    };
    let reason_error_ref = reason_error_id.clone();
    view! {
        <div class="decide">
            <div class="decision-outcome" aria-live="polite">
                {move || decide.value().get().map(|result| match result {
                    Ok(text) => view! { <p class="notice" role="status">{text}</p> }.into_any(),
                    Err(err) => view! { <p class="error" role="alert" data-refusal="">{err.to_string()}</p> }.into_any(),
                })}
            </div>
            <Show when=move || !rejecting.get()>
                <label for=note_id.clone()>"Note (optional)"</label>
                <input id=note_id.clone() type="text" maxlength="500" prop:value=note on:input=move |ev| note.set(event_target_value(&ev))/>
                <div class="actions">
                    <button type="button" data-action="verify" disabled=busy on:click=verify>"Verify"</button>
                    <button type="button" class="secondary" data-action="reject" disabled=busy on:click=move |_| rejecting.set(true)>"Reject…"</button>
                </div>
            </Show>
            <Show when=move || rejecting.get()>
                <form class="reject-confirm" on:submit=confirm_reject aria-label="Reject this answer">
                    <p class="warning">{warning}</p>
                    <label for=reason_id.clone()>"Reason (required)"</label>
                    <textarea
                        id=reason_id.clone()
                        maxlength="500"
                        rows="2"
                        aria-invalid=move || reason_missing.get().to_string()
                        aria-describedby={
                            let reason_error_ref = reason_error_ref.clone();
                            move || reason_missing.get().then(|| reason_error_ref.clone())
                        }
                        prop:value=reason
                        on:input=move |ev| reason.set(event_target_value(&ev))
                    ></textarea>
                    {
                        let reason_error_id = reason_error_id.clone();
                        move || reason_missing.get().then(|| view! {
                            <p class="error form-error" role="alert" id=reason_error_id.clone()>"Give a reason: the answerer and the agent are told why."</p>
                        })
                    }
                    <div class="actions">
                        <button type="submit" class="danger" data-action="confirm-reject" disabled=busy>"Reject with this reason"</button>
                        <button type="button" class="secondary" data-action="cancel-reject" on:click=move |_| { rejecting.set(false); reason_missing.set(false); }>"Cancel"</button>
                    </div>
                </form>
            </Show>
        </div>
    }
}
