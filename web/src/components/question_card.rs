//! The question card (design §12). The agent's context is untrusted: it is only ever text inside
//! the labelled blockquote, never markup.

use leptos::prelude::*;

use crate::api::QueueQuestion;

/// One waiting question with the three ways to act on it. The form posts to the server's form
/// route, which answers with a redirect back here carrying the notice.
#[component]
pub fn QuestionCard(question: QueueQuestion, back_to: String) -> impl IntoView {
    let action = format!("/dashboard/questions/{}/answer", question.id);
    let body_id = format!("body-{}", question.id);
    let urgency_class = format!("badge urgency-{}", question.urgency);
    let researching = question.status == "RESEARCHING";
    let has_options = !question.options.is_empty();
    let options = question
        .options
        .into_iter()
        .map(|option| {
            view! {
                <label class="option">
                    <input type="radio" name="option_id" value=option.id/>
                    " "
                    {option.label}
                </label>
            }
        })
        .collect_view();
    view! {
        <article class="question" data-question-id=question.id.clone()>
            <p class="meta">
                <span class=urgency_class>{question.urgency.clone()}</span>
                {researching.then(|| view! { <span class="badge researching">"sent back for research"</span> })}
            </p>
            <h2>{question.title}</h2>
            <p class="question-text">{question.question}</p>
            {question.context.map(|context| view! {
                <details class="context" open>
                    <summary>"What the agent found"</summary>
                    <blockquote>{context}</blockquote>
                </details>
            })}
            <form method="post" action=action class="answer">
                <input type="hidden" name="next" value=back_to/>
                {has_options.then(|| view! {
                    <fieldset>
                        <legend>"Which is it?"</legend>
                        {options}
                    </fieldset>
                })}
                <label for=body_id.clone()>"Your answer"</label>
                <textarea id=body_id name="body" maxlength="8000" rows="3"></textarea>
                <div class="actions">
                    <button type="submit" name="kind" value="answered">"Answer"</button>
                    <button type="submit" name="kind" value="insufficient_context" class="secondary">"Not enough context"</button>
                    <button type="submit" name="kind" value="needs_research" class="secondary">"Ask the agent to research more"</button>
                </div>
                <p class="muted">"Declining costs nothing: only answer what you know."</p>
            </form>
        </article>
    }
}
