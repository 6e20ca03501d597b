//! The agent SDK (`askloop-agent`, in `sdk/`) against a live askloop, on both backends: its
//! example program asks as a registered agent and waits while an operator answers, then prints
//! the answer and exits 0; as a library, a registered agent's deliveries (chovy and Standard
//! Webhooks) verify and parse with its webhook module and a redelivery is a duplicate; and
//! askloop's refusals reach the caller as the SDK's typed errors (docs/contract.md#errors).

use askloop_tests::answers::early_access;
use std::process::Stdio;
use std::time::Duration;

use askloop_agent::webhook::{
    Deduplicator, Delivery, EventData, ReceiveError, Scheme, Verifier, WebhookError,
};
use askloop_agent::{Client, Error, Question, Review, Status, WithdrawOutcome};
use askloop_tests::fixtures::{niche, open_niche};
use askloop_tests::people::{operator, person};
use askloop_tests::receiver::{Receiver, reserve_port};
use askloop_tests::{SECRET, TestApp, example_binary, on_both_backends};
use entity::agents::WebhookScheme;
use entity::deliveries::DeliveryStatus;
use entity::niches::NicheStatus;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::agents::{quick, register};
use crate::delivery::{REDELIVER, wait_for_status};

const WAIT: Duration = Duration::from_secs(20);

/// The question the tests ask, as the SDK builds it.
fn which_date(external_id: &str) -> Question {
    Question::new("games", "Which date?", "Early access or 1.0?")
        .external_id(external_id)
        .context("Steam lists both dates.")
        .option("ea", "Early access")
        .option("full", "1.0")
}

async fn the_example_asks_and_prints_the_answer_an_operator_gives_while_it_waits(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let secret = register(&app, "sdk-agent", &["games"], None, WebhookScheme::Chovy).await;

    let mut child = tokio::process::Command::new(example_binary("ask_and_wait"))
        .args([
            "games",
            "Which date?",
            "Early access or 1.0?",
            "ea=Early access",
            "full=1.0",
        ])
        .env("ASKLOOP_URL", &app.base)
        .env("ASKLOOP_SIGNING_SECRET", &secret)
        .env("ASKLOOP_AGENT", "sdk-agent")
        .env("ASKLOOP_WAIT_SECONDS", "120")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the example starts");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut printed = Vec::new();
    let run = async {
        while let Some(line) = lines.next_line().await.expect("a line") {
            printed.push(line.clone());
            let Some(asked) = line.strip_prefix("asked: ") else {
                continue;
            };
            // The example has asked and now waits: an operator answers meanwhile.
            let id = asked
                .split(' ')
                .find_map(|field| field.strip_prefix("id="))
                .expect("the question's id");
            let answered = app
                .answer(
                    &ana.token,
                    early_access(id.parse().expect("a numeric id"), Some("The 1.0 date.")),
                )
                .await;
            assert!(answered["errors"].is_null(), "{answered}");
        }
    };
    // A guard against a hung child, not a measurement.
    tokio::time::timeout(Duration::from_secs(90), run)
        .await
        .unwrap_or_else(|_| panic!("the example did not finish; it printed {printed:#?}"));
    let output = child.wait_with_output().await.expect("the example ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(0),
        "the example failed: {stderr}\n{printed:#?}"
    );
    for expected in [
        "answer: The 1.0 date.",
        "option: ea Early access",
        "answered by: ana",
        "review: pending",
    ] {
        assert!(
            printed.iter().any(|line| line == expected),
            "no line {expected:?} in {printed:#?}"
        );
    }
    assert!(
        printed
            .iter()
            .any(|line| line.starts_with("asked: ") && line.contains("duplicate=false")),
        "{printed:#?}"
    );
}

/// Ask as a registered agent whose endpoint has `scheme`, have an operator answer, and check the
/// SDK verifies and reads the delivery, then takes an admin's redelivery of it as a duplicate.
async fn a_delivery_verifies_with_the_sdk_and_its_redelivery_is_a_duplicate(
    app: TestApp,
    scheme: WebhookScheme,
) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let root = person(&app.db, "root", true).await;
    let addr = reserve_port();
    let secret = register(
        &app,
        "sdk-agent",
        &["games"],
        Some(&Receiver::url_for(addr)),
        scheme,
    )
    .await;
    let receiver = Receiver::start_verifying(addr, &secret, Vec::new()).await;
    let askloop = Client::new(&app.base, &secret).agent("sdk-agent");
    let asked = askloop.ask(&which_date("q-1")).await.expect("asked");
    let answered = app
        .answer(&ana.token, early_access(asked.id, Some("The 1.0 date.")))
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    receiver
        .wait_until(WAIT, "the answer", |r| !r.is_empty())
        .await;

    let verifier = Verifier::new(
        match scheme {
            WebhookScheme::Chovy => Scheme::Chovy,
            WebhookScheme::Standard => Scheme::Standard,
        },
        &secret,
    );
    let seen = Deduplicator::default();
    let first = receiver.received().remove(0);
    let delivery = verifier
        .receive(&seen, &first.headers, first.body.as_bytes())
        .await
        .expect("the delivery verifies");
    let Delivery::New(event) = delivery else {
        panic!("the first copy is new");
    };
    assert_eq!(event.id, first.envelope["id"].as_str().expect("an id"));
    if scheme == WebhookScheme::Standard {
        assert_eq!(first.header("webhook-id"), Some(event.id.as_str()));
    }
    assert_eq!(event.event_type, "expert_answer.created");
    assert_eq!(event.producer, "askloop");
    let Ok(EventData::AnswerCreated(answer)) = event.data() else {
        panic!("not an answer: {event:?}");
    };
    assert_eq!(answer.question_id, asked.id);
    assert_eq!(answer.external_id.as_deref(), Some("q-1"));
    assert_eq!(answer.answer.as_deref(), Some("The 1.0 date."));
    assert_eq!(answer.option_id.as_deref(), Some("ea"));
    assert_eq!(answer.option_label.as_deref(), Some("Early access"));
    assert_eq!(answer.answered_by, "ana");
    assert_eq!(answer.review, Review::Pending);

    // A changed byte, or another secret, is refused and recorded as nothing.
    let tampered = first.body.replace("The 1.0 date.", "The EA date.");
    let refused = verifier
        .receive(
            &Deduplicator::default(),
            &first.headers,
            tampered.as_bytes(),
        )
        .await;
    assert!(
        matches!(refused, Err(ReceiveError::Rejected(WebhookError::Mismatch))),
        "{refused:?}"
    );
    let stranger = Verifier::new(verifier.scheme(), askloop::domain::agents::new_secret());
    assert_eq!(
        stranger.verify(&first.headers, first.body.as_bytes()),
        Err(WebhookError::Mismatch)
    );

    // An admin sends it again once askloop has recorded it delivered (before that a worker holds
    // it): the same envelope id, signed afresh, and the SDK drops it.
    let row = wait_for_status(&app, DeliveryStatus::Delivered).await;
    assert_eq!(row.envelope_id, event.id);
    let again = app
        .graphql(
            Some(&root.token),
            REDELIVER,
            json!({"id": row.id.to_string()}),
        )
        .await;
    assert!(again["errors"].is_null(), "{again}");
    receiver
        .wait_until(WAIT, "the redelivery", |r| r.len() >= 2)
        .await;
    let second = receiver.received().remove(1);
    let redelivered = verifier
        .receive(&seen, &second.headers, second.body.as_bytes())
        .await
        .expect("the redelivery verifies");
    assert!(redelivered.is_duplicate(), "{redelivered:?}");
    assert_eq!(redelivered.event().id, event.id);
    assert_eq!(seen.len(), 1);
}

async fn a_chovy_delivery_verifies_with_the_sdk_and_its_redelivery_is_a_duplicate(app: TestApp) {
    a_delivery_verifies_with_the_sdk_and_its_redelivery_is_a_duplicate(app, WebhookScheme::Chovy)
        .await;
}

async fn a_standard_delivery_verifies_with_the_sdk_and_its_redelivery_is_a_duplicate(app: TestApp) {
    a_delivery_verifies_with_the_sdk_and_its_redelivery_is_a_duplicate(
        app,
        WebhookScheme::Standard,
    )
    .await;
}

async fn asking_twice_is_one_question_and_research_reopens_it(app: TestApp) {
    open_niche(&app.db, "games").await;
    let askloop = Client::new(&app.base, SECRET);
    let question = which_date("q-1");
    let first = askloop.ask(&question).await.expect("asked");
    assert!(!first.duplicate);
    assert_eq!(first.status, Status::Open);
    assert!(first.expires_at > chrono::Utc::now());
    let again = askloop.ask(&question).await.expect("asked again");
    assert!(again.duplicate, "the same external id is the same question");
    assert_eq!(again.id, first.id);

    let found = askloop
        .lookup("games", &["q-1", "q-9"], None)
        .await
        .expect("looked up");
    assert_eq!(
        found[0].question.as_ref().map(|q| (q.id, q.status)),
        Some((first.id, Status::Open))
    );
    assert!(found[1].question.is_none(), "q-9 was never asked");

    let reopened = askloop
        .add_research("games", "q-1", "The store page says May.")
        .await
        .expect("research added");
    assert_eq!((reopened.id, reopened.status), (first.id, Status::Open));
}

async fn askloops_refusals_reach_the_caller_as_typed_errors(app: TestApp) {
    crate::money::budgeted_niche(&app, "games", Some(100), 0).await;
    open_niche(&app.db, "roofing").await;
    niche(&app.db, "drafts", NicheStatus::Draft).await;
    let ana = operator(&app.db, "games", "ana").await;
    let askloop = Client::new(&app.base, SECRET);

    let over = askloop
        .ask(&which_date("q-over").bounty_minor(300))
        .await
        .expect_err("over budget");
    let Error::OverBudget {
        remaining_minor,
        resets_at,
    } = over
    else {
        panic!("not over budget: {over:?}");
    };
    assert_eq!(remaining_minor, Some(100));
    assert!(resets_at.is_some_and(|at| at > chrono::Utc::now()));

    let too_big = askloop.ask(&which_date("q-big").bounty_minor(5000)).await;
    assert!(
        matches!(too_big, Err(Error::BadInput { .. })),
        "{too_big:?}"
    );
    let no_title = askloop
        .ask(&Question::new("games", "", "Early access or 1.0?"))
        .await;
    assert!(
        matches!(no_title, Err(Error::BadInput { .. })),
        "{no_title:?}"
    );
    let nowhere = askloop.ask(&Question::new("no-such-niche", "t", "q")).await;
    assert!(
        matches!(nowhere, Err(Error::NotFound { .. })),
        "{nowhere:?}"
    );
    let closed = askloop.ask(&Question::new("drafts", "t", "q")).await;
    assert!(
        matches!(closed, Err(Error::Conflict { reason: Some(ref r), .. }) if r == "NICHE_CLOSED"),
        "{closed:?}"
    );
    let unsigned = Client::new(&app.base, "not-the-secret")
        .ask(&which_date("q-x"))
        .await;
    assert!(
        matches!(unsigned, Err(Error::Unauthenticated { ref message }) if message == "bad signature"),
        "{unsigned:?}"
    );

    let secret = register(&app, "roofer", &["roofing"], None, WebhookScheme::Chovy).await;
    let roofer = Client::new(&app.base, &secret).agent("roofer");
    let elsewhere = roofer.ask(&which_date("q-r")).await;
    assert!(
        matches!(elsewhere, Err(Error::Forbidden { .. })),
        "{elsewhere:?}"
    );

    // The question is the default agent's: the roofer cannot wait on it, and once it is
    // answered research is refused.
    let asked = askloop.ask(&which_date("q-1")).await.expect("asked");
    let not_yours = roofer
        .wait_for_answer("games", "q-1", Duration::from_secs(5))
        .await;
    assert!(
        matches!(not_yours, Err(Error::NotFound { .. })),
        "{not_yours:?}"
    );
    let answered = app
        .answer(&ana.token, early_access(asked.id, Some("The 1.0 date.")))
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    let settled = askloop.add_research("games", "q-1", "late findings").await;
    assert!(
        matches!(settled, Err(Error::Conflict { reason: Some(ref r), .. }) if r == "NOT_AWAITING_RESEARCH"),
        "{settled:?}"
    );
    let question = askloop
        .wait_for_answer("games", "q-1", Duration::from_secs(5))
        .await
        .expect("answered already");
    assert_eq!(question.status, Status::Answered);
    assert_eq!(
        question.answer.and_then(|a| a.body),
        Some("The 1.0 date.".to_owned())
    );
}

/// The SDK delegates a task at its limit and reads its result and cost back; a task over the
/// niche's maximum is a typed refusal.
async fn the_sdk_delegates_a_task_and_reads_its_result_and_cost(app: TestApp) {
    crate::money::budgeted_niche(&app, "games", Some(1000), 0).await;
    let ana = operator(&app.db, "games", "ana").await;
    let askloop = Client::new(&app.base, SECRET);
    let too_dear =
        Question::task("games", "Three prices", "Check three underlays.", 5000).external_id("t-0");
    let refused = askloop.ask(&too_dear).await;
    assert!(
        matches!(refused, Err(Error::BadInput { .. })),
        "{refused:?}"
    );
    let task = Question::task("games", "Three prices", "Check three underlays.", 400)
        .external_id("t-1")
        .deliverable("Each with its link.");
    let asked = askloop.ask(&task).await.expect("delegated");
    assert_eq!(asked.budget.reserved_minor, 400);
    let done = app
        .graphql(
            Some(&ana.token),
            "mutation($id: ID!) { answerQuestion(input: {questionId: $id, kind: ANSWERED, body: \"£12, £15, £19\", actualCostMinor: 150}) { notice } }",
            json!({"id": asked.id.to_string()}),
        )
        .await;
    assert!(done["errors"].is_null(), "{done}");
    let state = askloop
        .wait_for_answer("games", "t-1", Duration::from_secs(5))
        .await
        .expect("completed");
    assert_eq!(state.status, Status::Answered);
    assert_eq!(state.kind.as_deref(), Some("task"));
    assert_eq!(state.budget_limit_minor, Some(400));
    let completion = state.answer.expect("its completion");
    assert_eq!(completion.body.as_deref(), Some("£12, £15, £19"));
    assert_eq!(completion.actual_cost_minor, Some(150));
    assert_eq!(completion.review, Review::Pending);
}

/// The SDK withdraws a question the agent no longer needs: its bounty comes back to the budget,
/// a second withdrawal changes nothing, an answered question stays answered, another agent's is
/// not found.
async fn the_sdk_withdraws_a_question_and_its_bounty_comes_back(app: TestApp) {
    crate::money::budgeted_niche(&app, "games", Some(1000), 0).await;
    let ana = operator(&app.db, "games", "ana").await;
    let askloop = Client::new(&app.base, SECRET);
    let asked = askloop
        .ask(&which_date("q-w").bounty_minor(300))
        .await
        .expect("asked");
    assert_eq!(asked.budget.reserved_minor, 300);

    let withdrawn = askloop
        .withdraw("games", "q-w", Some("solved it myself"))
        .await
        .expect("withdrawn");
    assert_eq!(withdrawn.outcome, WithdrawOutcome::Withdrawn);
    assert_eq!(withdrawn.status, Status::Dismissed);
    assert_eq!(withdrawn.released_minor, 300);
    assert!(withdrawn.withdrawn_at.is_some());
    let again = askloop
        .withdraw("games", "q-w", None)
        .await
        .expect("withdrawn again");
    assert_eq!(again.outcome, WithdrawOutcome::AlreadyWithdrawn);
    assert_eq!(again.released_minor, 0);
    assert_eq!(again.withdrawn_at, withdrawn.withdrawn_at);
    // The next question may reserve the whole budget again: nothing is held for the first.
    let next = askloop
        .ask(&which_date("q-next").bounty_minor(1000))
        .await
        .expect("the whole budget is free again");
    assert_eq!(next.budget.reserved_minor, 1000);

    // Answered first, it stays answered.
    let answered = app
        .answer(&ana.token, early_access(next.id, Some("March.")))
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    let late = askloop
        .withdraw("games", "q-next", None)
        .await
        .expect("a settled question is reported, not refused");
    assert_eq!(late.outcome, WithdrawOutcome::Settled);
    assert_eq!(late.status, Status::Answered);

    let secret = register(&app, "roofer", &["games"], None, WebhookScheme::Chovy).await;
    let roofer = Client::new(&app.base, &secret).agent("roofer");
    let foreign = roofer.withdraw("games", "q-w", None).await;
    assert!(
        matches!(foreign, Err(Error::NotFound { .. })),
        "{foreign:?}"
    );
}

on_both_backends!(
    the_sdk_withdraws_a_question_and_its_bounty_comes_back,
    the_sdk_delegates_a_task_and_reads_its_result_and_cost,
    the_example_asks_and_prints_the_answer_an_operator_gives_while_it_waits,
    asking_twice_is_one_question_and_research_reopens_it,
    askloops_refusals_reach_the_caller_as_typed_errors,
);

on_both_backends! {
    config: quick;
    a_chovy_delivery_verifies_with_the_sdk_and_its_redelivery_is_a_duplicate,
    a_standard_delivery_verifies_with_the_sdk_and_its_redelivery_is_a_duplicate,
}
