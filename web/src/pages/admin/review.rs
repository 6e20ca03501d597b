//! Review: contributions awaiting review, filtered by niche and answerer, each with what a
//! reviewer weighs (the question, the options, the answer, a task's reported cost against its
//! limit, the answerer's record, how long it took and the other members' declines). Each item
//! decides on its own: what the server says to a decision (a refusal, a stale item) shows inside
//! that item, announced. An admin's own answer offers no decision (another admin reviews it;
//! a sole admin is told how to add one), and rejecting asks for a reason and a confirmation
//! first. The inbox is live (the desk's `reviewInbox` subscription re-reads it, keeping what is
//! typed in the items still there), and has keys: `j`/`k` move between items, `v` verifies, `x`
//! rejects (asking for the reason; Esc cancels), `?` lists them.

use leptos::prelude::*;
use wasm_bindgen::JsCast;

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

use super::{Counts, FORBIDDEN, ReviewPulse};

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
    let pulse = ReviewPulse::of_desk();
    // Read again whenever the filters change or the live inbox says something arrived or was
    // decided.
    let queue = LocalResource::new(move || {
        if let Some(pulse) = pulse {
            pulse.track();
        }
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
    // The item to focus once the queue is read again (the one after an item decided by key).
    let focus_next = RwSignal::new(None::<String>);
    provide_context(FocusNext(focus_next));
    Effect::new(move |_| {
        queue.track();
        if let Some(id) = focus_next.get_untracked() {
            request_animation_frame(move || {
                if let Some(card) =
                    card_of(&id).and_then(|c| c.dyn_into::<web_sys::HtmlElement>().ok())
                {
                    let _ = card.focus();
                    focus_next.set(None);
                }
            });
        }
    });
    // Whether there is anything, or a failure: the list below is built again only when this
    // changes, never when the inbox is merely read again.
    let shape = Memo::new(move |_| {
        queue
            .get()
            .map(|read| read.map(|r| r.review_queue.is_empty()))
    });
    let show_keys = RwSignal::new(false);
    let keys = window_event_listener(leptos::ev::keydown, move |ev| {
        if ev.ctrl_key()
            || ev.meta_key()
            || ev.alt_key()
            || crate::components::keys::typing_in(ev.target())
        {
            return;
        }
        let key = ev.key();
        match key.as_str() {
            "?" => {
                ev.prevent_default();
                show_keys.update(|s| *s = !*s);
            }
            "Escape" => show_keys.set(false),
            "j" | "k" => {
                let cards = cards();
                if cards.is_empty() {
                    return;
                }
                let at = current_card().and_then(|c| cards.iter().position(|x| *x == c));
                let next = match (at, key.as_str()) {
                    (None, _) => 0,
                    (Some(i), "j") => (i + 1).min(cards.len() - 1),
                    (Some(i), _) => i.saturating_sub(1),
                };
                if let Some(card) = cards
                    .get(next)
                    .and_then(|c| c.clone().dyn_into::<web_sys::HtmlElement>().ok())
                {
                    ev.prevent_default();
                    let _ = card.focus();
                }
            }
            "v" | "x" => {
                let Some(card) = current_card() else { return };
                let action = if key == "v" { "verify" } else { "reject" };
                let Some(button) = card
                    .query_selector(&format!("button[data-action={action}]"))
                    .ok()
                    .flatten()
                    .and_then(|b| b.dyn_into::<web_sys::HtmlButtonElement>().ok())
                else {
                    return;
                };
                if button.disabled() {
                    return;
                }
                ev.prevent_default();
                if key == "v" {
                    focus_next.set(neighbour_of(&card));
                }
                button.click();
                if key == "x" {
                    // The reason first: its box takes the focus once it shows.
                    request_animation_frame(move || {
                        if let Some(reason) = card
                            .query_selector("form.reject-confirm textarea")
                            .ok()
                            .flatten()
                            .and_then(|t| t.dyn_into::<web_sys::HtmlElement>().ok())
                        {
                            let _ = reason.focus();
                        }
                    });
                }
            }
            _ => {}
        }
    });
    on_cleanup(move || keys.remove());
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
    // How many wait, as the tab counts them (every niche, every answerer).
    let waiting = move || {
        counts
            .and_then(|c| c.0.get())
            .and_then(Result::ok)
            .map(|c| c.admin_counts.review)
    };
    let heading_count = move || {
        waiting().map(|n| {
            let words = match n {
                0 => "nothing waits".to_owned(),
                1 => "1 waits".to_owned(),
                n => format!("{n} wait"),
            };
            view! { " "<span class="heading-count" data-waiting=n.to_string()>"("{words}")"</span> }
        })
    };
    view! {
        <section aria-labelledby="review-title" class="review-inbox">
            <h2 id="review-title">"Review inbox"{heading_count}</h2>
            // Not offered on a touch screen (the style sheet hides it there).
            <p class="keys-offer">
                <button type="button" class="link-like" aria-expanded=move || show_keys.get().to_string() on:click=move |_| show_keys.update(|s| *s = !*s)>"Keyboard keys (?)"</button>
            </p>
            <Show when=move || show_keys.get()>
                <ReviewKeys close=Callback::new(move |()| show_keys.set(false))/>
            </Show>
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
                <input id="review-answerer" type="text" placeholder="handle" maxlength="40" prop:value=answerer on:input=move |ev| answerer.set(event_target_value(&ev))/>
                <button type="submit" class="secondary">"Filter"</button>
            </form>
            <div class="review-said" aria-live="polite">
                {move || said.get().map(|text| view! { <p class="notice" role="status">{text}</p> })}
            </div>
            <Loaded forbidden=FORBIDDEN>
                {move || shape.get().map(|read| read.map(|empty| {
                    if empty {
                        view! { <p class="empty">"Nothing awaits review."</p> }.into_any()
                    } else {
                        // Keyed by contribution: an item still there keeps what was typed in it
                        // when the inbox is read again.
                        view! {
                            <For
                                each=move || queue.get().and_then(Result::ok).map(|r| r.review_queue).unwrap_or_default()
                                key=|c| c.id.clone()
                                children=move |c| view! { <ReviewCard item=c reread=reread said=said/> }
                            />
                        }.into_any()
                    }
                }))}
            </Loaded>
        </section>
    }
}

/// The item to focus once the inbox is read again.
#[derive(Clone, Copy)]
struct FocusNext(RwSignal<Option<String>>);

/// The inbox's items, in order.
fn cards() -> Vec<web_sys::Element> {
    let Ok(list) = document().query_selector_all("section.review-inbox article.review") else {
        return Vec::new();
    };
    (0..list.length())
        .filter_map(|i| list.get(i)?.dyn_into::<web_sys::Element>().ok())
        .collect()
}

/// The item the focus is in, if any.
fn current_card() -> Option<web_sys::Element> {
    document()
        .active_element()?
        .closest("section.review-inbox article.review")
        .ok()
        .flatten()
}

/// Contribution `id`'s item.
fn card_of(id: &str) -> Option<web_sys::Element> {
    document()
        .query_selector(&format!("article.review[data-contribution-id=\"{id}\"]"))
        .ok()
        .flatten()
}

/// The id of the item to go to once `card` leaves: the next one, else the one before.
fn neighbour_of(card: &web_sys::Element) -> Option<String> {
    card.next_element_sibling()
        .or_else(|| card.previous_element_sibling())
        .and_then(|c| c.get_attribute("data-contribution-id"))
}

/// The inbox's keys, listed.
#[component]
fn ReviewKeys(close: Callback<()>) -> impl IntoView {
    view! {
        <section class="key-list" role="dialog" aria-label="Keyboard keys">
            <h3>"Keyboard keys"</h3>
            <dl class="facts">
                <dt><kbd>"j"</kbd>" / "<kbd>"k"</kbd></dt><dd>"Next / previous item"</dd>
                <dt><kbd>"v"</kbd></dt><dd>"Verify it (with the note, if one is written)"</dd>
                <dt><kbd>"x"</kbd></dt><dd>"Reject it: asks for the reason first; Esc cancels"</dd>
                <dt><kbd>"?"</kbd></dt><dd>"Show or hide these keys"</dd>
            </dl>
            <button type="button" class="secondary small" on:click=move |_| close.run(())>"Close"</button>
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
    let own_source = source.clone();
    let is_correction = source == "correction";
    let warning = reject_warning(&source);
    // Each item decides on its own; what came back shows inside it.
    let focus = use_context::<FocusNext>();
    let decide: Action<Decision, Result<&'static str, ApiError>> =
        Action::new_local(move |decision: &Decision| {
            let (id, decision, whose, source) =
                (id.clone(), decision.clone(), whose.clone(), source.clone());
            let here = id.clone();
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
                        // Whoever decided from inside the item goes on to the next one.
                        if let (Some(focus), Some(card)) = (focus, card_of(&here)) {
                            let inside = document()
                                .active_element()
                                .is_some_and(|a| card.contains(Some(a.as_ref())));
                            if inside {
                                focus.0.set(neighbour_of(&card));
                            }
                        }
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
    // A card that shows its question and answer says all its evidence does; only a
    // contribution without one (recorded by hand) shows what was recorded with it.
    let show_evidence = question.is_none() && !is_correction;
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
        <article class="card review" tabindex="-1" data-contribution-id=c.id.clone() aria-busy=move || busy.get().to_string()>
            <p class="meta">
                <strong>{c.niche_slug}</strong>
                " · "{c.points}" points · "{kind_words(&c.source)}" · "
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
            {show_evidence.then(|| view! {
                <details>
                    <summary>"Evidence"</summary>
                    <pre class="evidence">{c.evidence}</pre>
                </details>
            })}
            <Show
                when=move || !mine()
                fallback=move || view! { <OwnAnswer kind=kind_words(&own_source)/> }
            >
                <Decide id=card_id.clone() decide=decide warning=warning/>
            </Show>
        </article>
    }
}

/// What an admin's own answer says instead of a decision: another admin reviews it; a sole
/// admin is told there is none yet, and how one is added.
#[component]
fn OwnAnswer(kind: &'static str) -> impl IntoView {
    let counts = Counts::of_desk();
    let sole = move || {
        counts
            .and_then(|c| c.0.get())
            .and_then(Result::ok)
            .is_some_and(|c| c.admin_counts.admins <= 1)
    };
    view! {
        <div class="own-answer" data-own-answer="">
            <p>"Your "{kind}" — another admin reviews it."</p>
            <Show when=sole>
                <p class="sole-admin" data-sole-admin="">
                    "You are askloop's only admin, so it stays pending until there is a second one. "
                    "Whoever runs askloop's server adds one with "
                    <code>"askloop user create --handle NAME --email ADDRESS --admin"</code>
                    "; once they have signed in, this "{kind}" waits in their review inbox."
                </p>
            </Show>
        </div>
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
    let decide_ref = NodeRef::<leptos::html::Div>::new();
    // Cancelling changes nothing and gives the focus back to "Reject…".
    let cancel = move || {
        rejecting.set(false);
        reason_missing.set(false);
        request_animation_frame(move || {
            if let Some(button) = decide_ref
                .get_untracked()
                .and_then(|d| {
                    d.query_selector("button[data-action=reject]")
                        .ok()
                        .flatten()
                })
                .and_then(|b| b.dyn_into::<web_sys::HtmlElement>().ok())
            {
                let _ = button.focus();
            }
        });
    };
    view! {
        <div class="decide" node_ref=decide_ref>
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
                <form class="reject-confirm" on:submit=confirm_reject aria-label="Reject this answer" on:keydown=move |ev: leptos::ev::KeyboardEvent| {
                    if ev.key() == "Escape" {
                        ev.prevent_default();
                        ev.stop_propagation();
                        cancel();
                    }
                }>
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
                        <button type="button" class="secondary" data-action="cancel-reject" on:click=move |_| cancel()>"Cancel"</button>
                    </div>
                </form>
            </Show>
        </div>
    }
}
