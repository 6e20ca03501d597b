//! Reaching operators when the dashboard is closed: mail through a real SMTP server (aiosmtpd),
//! address verification and one-click unsubscribe through their signed links, digests, quiet
//! hours, a mail server that is down for a while, escalation on an injected clock, and operator
//! webhooks against a real receiver.

use askloop_tests::answers::early_access;
use std::time::Duration;

use askloop::config::{Config, MailSettings};
use askloop::live::ChangeHint;
use askloop::service::{questions::escalation, questions::expiry};
use askloop_tests::fixtures::{open_niche, question_body};
use askloop_tests::people::{Person, operator, person, verified_address};
use askloop_tests::receiver::{Receiver, Reply, reserve_port};
use askloop_tests::smtp::{Mail, SmtpServer};
use askloop_tests::wait;
use askloop_tests::{TestApp, error_code, on_both_backends};
use chrono::Utc;
use entity::{deliveries, escalations, notifications};
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(20);

/// Mail through `smtp`, with fast polling and retries.
pub(crate) fn mail_through(config: &mut Config, smtp: &str) {
    config.mail = Some(MailSettings {
        smtp_url: smtp.to_owned(),
        from: "askloop <askloop@example.com>".parse().expect("a sender"),
    });
    fast(config);
}

fn fast(config: &mut Config) {
    config.delivery.timeout = Duration::from_secs(2);
    config.delivery.lease = Duration::from_secs(3);
    config.delivery.retry_base = Duration::from_millis(100);
    config.delivery.poll = Duration::from_millis(50);
}

/// Ask a question in `games` with `urgency` and `title`; its id.
async fn ask(app: &TestApp, external_id: &str, urgency: &str, title: &str) -> i64 {
    let mut body = question_body("games", external_id);
    body["payload"]["urgency"] = json!(urgency);
    body["payload"]["title"] = json!(title);
    let response = app
        .post_signed("/api/v1/internal/expert-questions", &body.to_string())
        .await;
    assert!(response.status().is_success(), "{}", response.status());
    let body: Value = response.json().await.expect("json");
    body["question"]["id"]
        .as_i64()
        .unwrap_or_else(|| panic!("a question id in {body}"))
}

/// The URL after `label: ` in a mail's text part.
pub(crate) fn link(mail: &Mail, label: &str) -> String {
    let text = mail.text();
    let start = text
        .find(&format!("{label}: "))
        .unwrap_or_else(|| panic!("no '{label}' link in {text}"))
        + label.len()
        + 2;
    text[start..]
        .split_whitespace()
        .next()
        .expect("a URL")
        .to_owned()
}

async fn notification_rows(app: &TestApp, question_id: i64) -> Vec<notifications::Model> {
    notifications::Entity::find()
        .filter(notifications::Column::QuestionId.eq(question_id))
        .order_by_asc(notifications::Column::Id)
        .all(&app.db)
        .await
        .expect("query")
}

/// The status of question `question_id`'s first notification once it is `want`; fails if it is
/// not within `WAIT`. A mail reaches the test's server a moment before its sender marks the row
/// sent, so a test that has just received it polls rather than reads once.
async fn status_once(app: &TestApp, question_id: i64, want: &str) -> String {
    wait::until_some(
        &format!("question {question_id}'s notification to be {want}"),
        WAIT,
        || async move {
            let status = notification_rows(app, question_id).await[0].status.clone();
            (status == want).then_some(status)
        },
    )
    .await
}

/// Wait until no notification is pending: the mailer has nothing left to send.
async fn until_no_notification_pending(app: &TestApp) {
    wait::until("no notification pending", || async move {
        notifications::Entity::find()
            .filter(notifications::Column::Status.eq("pending"))
            .count(&app.db)
            .await
            .expect("count")
            == 0
    })
    .await;
}

const PREFERENCES: &str = "{ myNotificationPreferences { nicheSlug enabled immediate digest } }";

/// `person`'s mail settings as GraphQL gives them.
async fn mail_settings(app: &TestApp, person: &Person) -> Value {
    let read = app
        .graphql(
            Some(&person.token),
            "{ myMailSettings { email emailVerified mailEnabled } }",
            json!({}),
        )
        .await;
    read["data"]["myMailSettings"].clone()
}

/// `person` answers question `id` (its first option).
async fn answer(app: &TestApp, person: &Person, id: i64) {
    let answered = app.answer(&person.token, early_access(id, None)).await;
    assert!(answered["errors"].is_null(), "{answered}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn verify_then_an_immediate_mail_escaped_then_one_click_unsubscribe() {
    let smtp = SmtpServer::start().await;
    let url = smtp.url();
    let app = TestApp::spawn_with(askloop_tests::Backend::Sqlite, |c| mail_through(c, &url))
        .await
        .expect("sqlite");
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;

    // Nothing but the verification goes to an unverified address.
    let sent = app
        .graphql(
            Some(&ana.token),
            "mutation { sendVerificationEmail }",
            json!({}),
        )
        .await;
    assert_eq!(sent["data"]["sendVerificationEmail"], true, "{sent}");
    let mails = smtp.wait_for(1, WAIT).await;
    assert_eq!(
        mails[0].header("subject").as_deref(),
        Some("[askloop] Verify your address")
    );
    assert_eq!(mails[0].header("to").as_deref(), Some("ana@example.com"));
    let verify = link(&mails[0], "Verify this address");
    assert!(
        verify.starts_with(&format!("{}/email/verify?token=", app.base)),
        "{verify}"
    );

    // A cut or forged link is refused and changes nothing.
    for bad in [
        format!("{}/email/verify", app.base),
        format!("{}/email/verify?token=nonsense", app.base),
        format!("{}x", verify),
    ] {
        let response = app.client.get(&bad).send().await.expect("get");
        assert_eq!(response.status(), 400, "{bad}");
    }
    let settings = mail_settings(&app, &ana).await;
    assert_eq!(settings["emailVerified"], false, "{settings}");

    let page = app.client.get(&verify).send().await.expect("get");
    assert_eq!(page.status(), 200);
    assert!(
        page.text()
            .await
            .expect("text")
            .contains("Address verified")
    );
    let settings = mail_settings(&app, &ana).await;
    assert_eq!(settings["emailVerified"], true, "{settings}");
    assert_eq!(settings["mailEnabled"], true, "{settings}");

    // A high-urgency question: mailed at once, its agent text escaped, never linked.
    let title = "<script>alert('x')</script> Which date?";
    let id = ask(&app, "q-1", "high", title).await;
    let mails = smtp.wait_for(2, WAIT).await;
    let mail = &mails[1];
    let subject = mail.header("subject").expect("a subject");
    assert!(subject.starts_with("[askloop/games] "), "{subject}");
    let text = mail.text();
    // The plain part carries the text as text; the HTML part escapes it.
    let html = text
        .split("Content-Type: text/html")
        .nth(1)
        .expect("an HTML part");
    assert!(
        html.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"),
        "{html}"
    );
    assert!(
        !html.contains("<script>"),
        "raw agent markup in the HTML part: {html}"
    );
    assert!(
        text.contains(title),
        "the plain part says it as written: {text}"
    );
    assert!(
        text.contains(&format!(
            "{}/dashboard/niches/games/questions/{id}",
            app.base
        )),
        "{text}"
    );
    assert_eq!(
        mail.header("list-unsubscribe-post").as_deref(),
        Some("List-Unsubscribe=One-Click")
    );
    let unsubscribe = mail
        .header("list-unsubscribe")
        .expect("List-Unsubscribe")
        .trim_matches(['<', '>'])
        .to_owned();
    assert_eq!(status_once(&app, id, "sent").await, "sent");

    // The page behind the link changes nothing; the one-click POST does.
    let page = app.client.get(&unsubscribe).send().await.expect("get");
    assert_eq!(page.status(), 200);
    assert!(
        page.text()
            .await
            .expect("text")
            .contains("Stop these mails")
    );
    let prefs = app.graphql(Some(&ana.token), PREFERENCES, json!({})).await;
    assert_eq!(
        prefs["data"]["myNotificationPreferences"][0]["enabled"], true,
        "{prefs}"
    );
    let forged = app
        .client
        .post(format!("{unsubscribe}0"))
        .body("List-Unsubscribe=One-Click")
        .send()
        .await
        .expect("post");
    assert_eq!(forged.status(), 400);
    let prefs = app.graphql(Some(&ana.token), PREFERENCES, json!({})).await;
    assert_eq!(
        prefs["data"]["myNotificationPreferences"][0]["enabled"], true,
        "{prefs}"
    );
    let done = app
        .client
        .post(&unsubscribe)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("List-Unsubscribe=One-Click")
        .send()
        .await
        .expect("post");
    assert_eq!(done.status(), 200);
    let prefs = app.graphql(Some(&ana.token), PREFERENCES, json!({})).await;
    assert_eq!(
        prefs["data"]["myNotificationPreferences"][0]["enabled"], false,
        "{prefs}"
    );

    // Nothing more about games: no row is even written.
    let later = ask(&app, "q-2", "high", "Another one").await;
    assert!(notification_rows(&app, later).await.is_empty());
    until_no_notification_pending(&app).await;
    assert_eq!(smtp.mails().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_digest_gathers_what_still_waits_and_quiet_hours_hold_the_rest() {
    let smtp = SmtpServer::start().await;
    let url = smtp.url();
    let app = TestApp::spawn_with(askloop_tests::Backend::Sqlite, |c| mail_through(c, &url))
        .await
        .expect("sqlite");
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    verified_address(&app.db, &ana).await;

    // Normal and low go to the hourly digest (the defaults).
    let first = ask(&app, "d-1", "normal", "First of the digest").await;
    let second = ask(&app, "d-2", "low", "Second of the digest").await;
    let settled = ask(&app, "d-3", "normal", "Answered before the hour").await;
    let placed =
        |rows: Vec<notifications::Model>| rows.first().map(|r| (r.status.clone(), r.digest));
    let shared = &app;
    for id in [first, second, settled] {
        wait::until(
            &format!("question {id} placed in a digest"),
            || async move {
                placed(notification_rows(shared, id).await) == Some(("pending".into(), true))
            },
        )
        .await;
    }
    let due = notification_rows(&app, first).await[0].due_at;
    assert!(due > Utc::now(), "a digest waits for the next hour: {due}");
    answer(&app, &ana, settled).await;
    assert!(
        smtp.mails().is_empty(),
        "nothing is mailed before the digest is due"
    );

    // The hour comes (the rows' clock moved to now): one digest with what still waits.
    notifications::Entity::update_many()
        .col_expr(
            notifications::Column::DueAt,
            sea_orm::sea_query::Expr::value(Utc::now()),
        )
        .filter(notifications::Column::UserId.eq(ana.id))
        .exec(&app.db)
        .await
        .expect("update");
    let mails = smtp.wait_for(1, WAIT).await;
    let digest = &mails[0];
    assert_eq!(
        digest.header("subject").as_deref(),
        Some("[askloop/games] 2 questions waiting")
    );
    let text = digest.text();
    assert!(
        text.contains("First of the digest") && text.contains("Second of the digest"),
        "{text}"
    );
    assert!(!text.contains("Answered before the hour"), "{text}");
    assert_eq!(notification_rows(&app, settled).await[0].status, "dropped");
    // Both rows are marked sent, so the mailer has nothing left of them to send one by one.
    for id in [first, second] {
        assert_eq!(status_once(&app, id, "sent").await, "sent");
    }
    assert_eq!(smtp.mails().len(), 1, "one digest, not one mail each");

    // Quiet hours around now (UTC): normal mailed at once is held to their end; high is not.
    let minute = {
        use chrono::Timelike;
        let now = Utc::now();
        (now.hour() * 60 + now.minute()) as i32
    };
    let quiet =
        json!({"startMinute": (minute + 1440 - 60) % 1440, "endMinute": (minute + 60) % 1440});
    let set = app
        .graphql(
            Some(&ana.token),
            "mutation($q: QuietHoursInput) { setQuietHours(timeZone: \"UTC\", quietHours: $q) { quietHours { startMinute endMinute } } }",
            json!({"q": quiet}),
        )
        .await;
    assert!(set["errors"].is_null(), "{set}");
    let chosen = app
        .graphql(
            Some(&ana.token),
            "mutation { setNotificationPreference(nicheSlug: \"games\", enabled: true, immediate: [HIGH, NORMAL], digest: HOURLY) { immediate digest } }",
            json!({}),
        )
        .await;
    assert_eq!(
        chosen["data"]["setNotificationPreference"]["immediate"],
        json!(["HIGH", "NORMAL"]),
        "{chosen}"
    );
    let held = ask(&app, "d-4", "normal", "Held for the morning").await;
    let loud = ask(&app, "d-5", "high", "Urgent at night").await;
    let mails = smtp.wait_for(2, WAIT).await;
    assert!(
        mails[1]
            .header("subject")
            .is_some_and(|s| s.contains("Urgent at night")),
        "{:?}",
        mails[1].header("subject")
    );
    let held_row = &notification_rows(&app, held).await[0];
    assert_eq!(held_row.status, "pending");
    assert!(!held_row.digest);
    let wait = held_row.due_at - Utc::now();
    assert!(
        wait > chrono::Duration::minutes(55) && wait <= chrono::Duration::minutes(61),
        "held until the end of quiet hours, about an hour from now: {wait}"
    );
    assert_eq!(status_once(&app, loud, "sent").await, "sent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mail_sent_while_the_server_is_down_arrives_once_it_is_back() {
    let mut smtp = SmtpServer::stopped_on(reserve_port());
    let url = smtp.url();
    let app = TestApp::spawn_with(askloop_tests::Backend::Sqlite, |c| mail_through(c, &url))
        .await
        .expect("sqlite");
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    verified_address(&app.db, &ana).await;
    let id = ask(&app, "down-1", "high", "Asked while mail is down").await;
    let shared = &app;
    wait::until("two failed attempts recorded", || async move {
        notification_rows(shared, id)
            .await
            .first()
            .is_some_and(|r| r.attempts >= 2 && r.last_error.is_some())
    })
    .await;
    assert_eq!(notification_rows(&app, id).await[0].status, "pending");
    smtp.up().await;
    let mails = smtp.wait_for(1, WAIT).await;
    assert!(
        mails[0]
            .header("subject")
            .is_some_and(|s| s.contains("Asked while mail is down"))
    );
    // Marked sent, the row is not taken again.
    assert_eq!(status_once(&app, id, "sent").await, "sent");
    assert_eq!(smtp.mails().len(), 1, "sent once");
    let row = &notification_rows(&app, id).await[0];
    assert_eq!(row.status, "sent");
    assert!(row.sent_at.is_some());
}

on_both_backends!(bad_settings_are_refused_and_change_nothing);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn escalation_timeline_on_sqlite() {
    escalation_timeline(askloop_tests::Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn escalation_timeline_on_postgres() {
    escalation_timeline(askloop_tests::Backend::Postgres).await;
}

/// The escalation timeline on `backend`, its events delivered to a real receiver (the agent).
async fn escalation_timeline(backend: askloop_tests::Backend) {
    let addr = reserve_port();
    let receiver = Receiver::start_on(addr, Vec::new()).await;
    let Some(app) = TestApp::spawn_with(backend, |c| {
        fast(c);
        c.webhook_url = Some(Receiver::url_for(addr));
    })
    .await
    else {
        eprintln!("skipped: TEST_DATABASE_URL is not set");
        return;
    };
    let waiting =
        escalation_steps_in_order_once_each_and_never_for_an_answered_question(&app).await;
    // The steps were taken on the injected clock, so their events fell due then; the real clock
    // reaches that time now.
    deliveries::Entity::update_many()
        .col_expr(
            deliveries::Column::NextAttemptAt,
            sea_orm::sea_query::Expr::value(Utc::now()),
        )
        .filter(deliveries::Column::Status.eq(entity::deliveries::DeliveryStatus::Pending))
        .exec(&app.db)
        .await
        .expect("due now");
    // Delivered: one signed event per step, each once.
    receiver
        .wait_until(WAIT, "both escalation events", |received| {
            received
                .iter()
                .filter(|r| r.envelope["type"] == "expert_question.escalated")
                .count()
                >= 2
        })
        .await;
    app.until_every_delivery_delivered().await;
    let received = receiver.received();
    let escalated: Vec<&Value> = received
        .iter()
        .filter(|r| r.envelope["type"] == "expert_question.escalated")
        .map(|r| &r.envelope)
        .collect();
    assert!(received.iter().all(|r| r.verified), "signed");
    // Both were due when the receiver came into play, and the worker sends several at once: they
    // may arrive in either order (the order of the steps themselves is checked above).
    let mut steps: Vec<(Option<i64>, Option<i64>)> = escalated
        .iter()
        .map(|e| {
            (
                e["payload"]["questionId"].as_i64(),
                e["payload"]["step"].as_i64(),
            )
        })
        .collect();
    steps.sort();
    assert_eq!(
        steps,
        vec![(Some(waiting), Some(1)), (Some(waiting), Some(2))]
    );
    assert!(
        receiver.counts().values().all(|n| *n == 1),
        "each event once"
    );
}

on_both_backends! {
    config: fast;
    operator_webhooks_are_signed_retried_and_only_for_their_niche,
}

/// The payloads of the `expert_question.escalated` events written for `question`.
async fn escalated_events(app: &TestApp, question: i64) -> Vec<Value> {
    deliveries::Entity::find()
        .filter(deliveries::Column::EventType.eq("expert_question.escalated"))
        .filter(deliveries::Column::QuestionId.eq(question))
        .order_by_asc(deliveries::Column::Id)
        .all(&app.db)
        .await
        .expect("query")
        .into_iter()
        .map(|d| serde_json::from_str::<Value>(&d.body).expect("json")["payload"].clone())
        .collect()
}

/// The steps on an injected clock; the question that escalated.
async fn escalation_steps_in_order_once_each_and_never_for_an_answered_question(
    app: &TestApp,
) -> i64 {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let root = person(&app.db, "root", true).await;
    verified_address(&app.db, &ana).await;
    verified_address(&app.db, &root).await;
    let hint = ChangeHint::none();
    let t0 = Utc::now();
    let answered = ask(app, "e-1", "high", "Answered in time").await;
    let waiting = ask(app, "e-2", "high", "Nobody answers").await;
    let low = ask(app, "e-3", "low", "Low waits a day").await;
    answer(app, &ana, answered).await;

    // Before the wait (15 minutes for high): nothing.
    let taken = escalation::sweep(&app.db, &hint, 100, t0 + chrono::Duration::minutes(14))
        .await
        .expect("sweep");
    assert_eq!(taken, 0);

    // Past it: step 1 for the waiting question only, once however often the sweep runs.
    for _ in 0..3 {
        escalation::sweep(&app.db, &hint, 100, t0 + chrono::Duration::minutes(16))
            .await
            .expect("sweep");
    }
    assert!(escalated_events(app, answered).await.is_empty());
    assert!(escalated_events(app, low).await.is_empty());
    let events = escalated_events(app, waiting).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["step"], 1);
    assert_eq!(events[0]["externalId"], "e-2");
    let card = app
        .graphql(
            Some(&ana.token),
            "query($id: ID!) { question(id: $id) { escalationStep } }",
            json!({"id": waiting.to_string()}),
        )
        .await;
    assert_eq!(card["data"]["question"]["escalationStep"], 1, "{card}");
    // Everyone not yet told is told now; what waited for them is not sent as well.
    let rows = notification_rows(app, waiting).await;
    let reasons: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r.reason.as_str(), r.status.as_str()))
        .collect();
    assert!(reasons.contains(&("escalated", "planned")), "{reasons:?}");

    // Twice the wait: step 2, the admins.
    escalation::sweep(&app.db, &hint, 100, t0 + chrono::Duration::minutes(29))
        .await
        .expect("sweep");
    assert_eq!(
        escalated_events(app, waiting).await.len(),
        1,
        "step 2 waits for twice the wait"
    );
    for _ in 0..2 {
        escalation::sweep(&app.db, &hint, 100, t0 + chrono::Duration::minutes(31))
            .await
            .expect("sweep");
    }
    let events = escalated_events(app, waiting).await;
    assert_eq!(
        events
            .iter()
            .map(|e| e["step"].as_i64())
            .collect::<Vec<_>>(),
        vec![Some(1), Some(2)]
    );
    let admin_rows = notifications::Entity::find()
        .filter(notifications::Column::UserId.eq(root.id))
        .filter(notifications::Column::Reason.eq("escalated_admin"))
        .count(&app.db)
        .await
        .expect("count");
    assert_eq!(admin_rows, 1);
    // No third step, ever.
    escalation::sweep(&app.db, &hint, 100, t0 + chrono::Duration::hours(3))
        .await
        .expect("sweep");
    assert_eq!(escalated_events(app, waiting).await.len(), 2);
    let steps = escalations::Entity::find()
        .filter(escalations::Column::QuestionId.eq(waiting))
        .count(&app.db)
        .await
        .expect("count");
    assert_eq!(steps, 2);

    // An expired question never escalates: low's wait is a day, and it expires first here.
    expiry::sweep(&app.db, &hint, 100, t0 + chrono::Duration::days(8))
        .await
        .expect("expire");
    escalation::sweep(&app.db, &hint, 100, t0 + chrono::Duration::days(9))
        .await
        .expect("sweep");
    assert!(escalated_events(app, low).await.is_empty());
    assert!(escalated_events(app, answered).await.is_empty());
    waiting
}

async fn bad_settings_are_refused_and_change_nothing(app: TestApp) {
    open_niche(&app.db, "games").await;
    open_niche(&app.db, "roofing").await;
    let ana = operator(&app.db, "games", "ana").await;
    let bob = operator(&app.db, "games", "bob").await;
    let settings =
        "{ myMailSettings { email emailVerified timeZone quietHours { startMinute endMinute } } }";
    let before = app.graphql(Some(&ana.token), settings, json!({})).await;
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "mutation { setQuietHours(timeZone: \"Mars/Olympus\") { timeZone } }",
            json!({}),
            "BAD_USER_INPUT",
        ),
        (
            "mutation { setQuietHours(timeZone: \"UTC\", quietHours: {startMinute: 600, endMinute: 600}) { timeZone } }",
            json!({}),
            "BAD_USER_INPUT",
        ),
        (
            "mutation { setQuietHours(timeZone: \"UTC\", quietHours: {startMinute: 0, endMinute: 1440}) { timeZone } }",
            json!({}),
            "BAD_USER_INPUT",
        ),
        (
            "mutation { setMyEmail(email: \"not an address\") { email } }",
            json!({}),
            "BAD_USER_INPUT",
        ),
        (
            "mutation { setMyEmail(email: \"ana@two@example.com\") { email } }",
            json!({}),
            "BAD_USER_INPUT",
        ),
        (
            "mutation { setMyEmail(email: \"bob@example.com\") { email } }",
            json!({}),
            "CONFLICT",
        ),
        (
            "mutation { sendVerificationEmail }",
            json!({}),
            "UNAVAILABLE",
        ),
        (
            "mutation { setNotificationPreference(nicheSlug: \"roofing\", enabled: false, immediate: [], digest: OFF) { enabled } }",
            json!({}),
            "NOT_FOUND",
        ),
        (
            "mutation { registerOperatorWebhook(nicheSlug: \"games\", url: \"ftp://example.com/x\") { secret } }",
            json!({}),
            "BAD_USER_INPUT",
        ),
        (
            "mutation { registerOperatorWebhook(nicheSlug: \"roofing\", url: \"https://example.com/x\") { secret } }",
            json!({}),
            "NOT_FOUND",
        ),
        (
            "mutation { registerOperatorWebhook(nicheSlug: \"games\", url: \"http://127.0.0.1:5432/x\") { secret } }",
            json!({}),
            "BAD_USER_INPUT",
        ),
        (
            "mutation { registerOperatorWebhook(nicheSlug: \"games\", url: \"http://169.254.169.254/latest\") { secret } }",
            json!({}),
            "BAD_USER_INPUT",
        ),
    ];
    for (query, variables, code) in cases {
        let refused = app.graphql(Some(&ana.token), query, variables).await;
        assert_eq!(error_code(&refused), Some(code), "{query}: {refused}");
    }
    let after = app.graphql(Some(&ana.token), settings, json!({})).await;
    assert_eq!(before, after);
    assert!(
        app.graphql(Some(&ana.token), "{ myOperatorWebhooks { id } }", json!({}))
            .await["data"]["myOperatorWebhooks"]
            .as_array()
            .is_some_and(Vec::is_empty)
    );
    // Someone else's webhook is not found, and stays.
    let made = app
        .graphql(
            Some(&bob.token),
            "mutation { registerOperatorWebhook(nicheSlug: \"games\", url: \"https://example.com/bob\") { webhook { id } } }",
            json!({}),
        )
        .await;
    let bobs = made["data"]["registerOperatorWebhook"]["webhook"]["id"].clone();
    for query in [
        "mutation($id: ID!) { removeOperatorWebhook(id: $id) }",
        "mutation($id: ID!) { testOperatorWebhook(id: $id) }",
    ] {
        let refused = app
            .graphql(Some(&ana.token), query, json!({"id": bobs}))
            .await;
        assert_eq!(error_code(&refused), Some("NOT_FOUND"), "{refused}");
    }
    let still = app
        .graphql(Some(&bob.token), "{ myOperatorWebhooks { id } }", json!({}))
        .await;
    assert_eq!(
        still["data"]["myOperatorWebhooks"][0]["id"], bobs,
        "{still}"
    );
    // Signed out: nothing.
    let anonymous = app
        .graphql(None, "{ myMailSettings { email } }", json!({}))
        .await;
    assert_eq!(
        error_code(&anonymous),
        Some("UNAUTHENTICATED"),
        "{anonymous}"
    );
}

async fn operator_webhooks_are_signed_retried_and_only_for_their_niche(app: TestApp) {
    open_niche(&app.db, "games").await;
    open_niche(&app.db, "roofing").await;
    // The receiver is on this machine: only an admin may point a webhook there.
    let admin = person(&app.db, "root", true).await;
    let addr = reserve_port();
    let made = app
        .graphql(
            Some(&admin.token),
            "mutation($url: String!) { registerOperatorWebhook(nicheSlug: \"games\", url: $url) { secret webhook { id nicheSlug url } } }",
            json!({"url": Receiver::url_for(addr)}),
        )
        .await;
    assert!(made["errors"].is_null(), "{made}");
    let secret = made["data"]["registerOperatorWebhook"]["secret"]
        .as_str()
        .expect("the secret, once")
        .to_owned();
    let hook_id = made["data"]["registerOperatorWebhook"]["webhook"]["id"].clone();
    // The first attempt fails; the retry is taken.
    let receiver = Receiver::start_verifying(addr, &secret, vec![Reply::Status(503, None)]).await;
    let id = ask(&app, "w-1", "normal", "Ping <b>the</b>\nchannel").await;
    let mut roofing = question_body("roofing", "w-2");
    roofing["payload"]["title"] = json!("Not for games");
    app.post_signed("/api/v1/internal/expert-questions", &roofing.to_string())
        .await;
    receiver
        .wait_until(WAIT, "the retried event and the other niche's", |r| {
            r.len() >= 2
        })
        .await;
    let received = receiver.received();
    assert!(
        received.iter().all(|r| r.verified),
        "every attempt signed with the webhook's secret"
    );
    let body = &received[1].envelope;
    assert_eq!(body["type"], "question.waiting");
    assert_eq!(body["niche"], "games");
    assert_eq!(body["questionId"], id);
    assert_eq!(body["title"], "Ping <b>the</b> channel", "plain, one line");
    assert_eq!(body["urgency"], "normal");
    assert_eq!(
        body["url"],
        format!("{}/dashboard/niches/games/questions/{id}", app.base)
    );
    assert_eq!(
        received[0].envelope["id"], received[1].envelope["id"],
        "the same event, retried"
    );
    let log = app
        .graphql(
            Some(&admin.token),
            "query($id: ID!) { operatorWebhookDeliveries(id: $id) { eventType status attempts lastStatusCode } }",
            json!({"id": hook_id}),
        )
        .await;
    let entries = log["data"]["operatorWebhookDeliveries"]
        .as_array()
        .expect("a log")
        .clone();
    assert_eq!(entries.len(), 1, "{log}");
    // The test button.
    let test = app
        .graphql(
            Some(&admin.token),
            "mutation($id: ID!) { testOperatorWebhook(id: $id) }",
            json!({"id": hook_id}),
        )
        .await;
    assert!(test["errors"].is_null(), "{test}");
    receiver
        .wait_until(WAIT, "the test event", |r| r.len() >= 3)
        .await;
    assert_eq!(receiver.received()[2].envelope["test"], true);
    // Removed: nothing more.
    let removed = app
        .graphql(
            Some(&admin.token),
            "mutation($id: ID!) { removeOperatorWebhook(id: $id) }",
            json!({"id": hook_id}),
        )
        .await;
    assert_eq!(removed["data"]["removeOperatorWebhook"], true, "{removed}");
    ask(&app, "w-3", "high", "After removal").await;
    // Time is the fact: nothing sent to a removed hook is an absence, watched for a while.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(receiver.received().len(), 3);
    assert!(
        receiver
            .received()
            .iter()
            .all(|r| r.envelope["niche"] == "games"),
        "roofing's question never reached a games webhook"
    );
}

on_both_backends!(niche_waits_are_admin_settings_and_a_reopened_question_starts_again);

async fn niche_waits_are_admin_settings_and_a_reopened_question_starts_again(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let root = person(&app.db, "root", true).await;
    let set = "mutation($slug: String!, $high: Int, $normal: Int, $low: Int) { setNicheEscalation(nicheSlug: $slug, highSecs: $high, normalSecs: $normal, lowSecs: $low) { escalateHighSecs escalateNormalSecs escalateLowSecs } }";
    let refused = app
        .graphql(Some(&ana.token), set, json!({"slug": "games", "high": 120}))
        .await;
    assert_eq!(error_code(&refused), Some("FORBIDDEN"), "{refused}");
    for high in [0, 59, 31 * 24 * 3600] {
        let refused = app
            .graphql(
                Some(&root.token),
                set,
                json!({"slug": "games", "high": high, "low": 3600}),
            )
            .await;
        assert_eq!(
            error_code(&refused),
            Some("BAD_USER_INPUT"),
            "{high}: {refused}"
        );
    }
    let unknown = app
        .graphql(
            Some(&root.token),
            set,
            json!({"slug": "nowhere", "high": 120}),
        )
        .await;
    assert_eq!(error_code(&unknown), Some("NOT_FOUND"), "{unknown}");
    let waits =
        "{ niche(slug: \"games\") { escalateHighSecs escalateNormalSecs escalateLowSecs } }";
    let defaults = app.graphql(Some(&ana.token), waits, json!({})).await;
    assert_eq!(
        defaults["data"]["niche"],
        json!({"escalateHighSecs": 900, "escalateNormalSecs": 14400, "escalateLowSecs": 86400}),
        "nothing refused changed them: {defaults}"
    );
    let done = app
        .graphql(
            Some(&root.token),
            set,
            json!({"slug": "games", "high": 120, "low": 3600}),
        )
        .await;
    assert_eq!(
        done["data"]["setNicheEscalation"],
        json!({"escalateHighSecs": 120, "escalateNormalSecs": null, "escalateLowSecs": 3600}),
        "{done}"
    );

    let hint = ChangeHint::none();
    let high = ask(&app, "r-1", "high", "Two minutes").await;
    let normal = ask(&app, "r-2", "normal", "Never escalates").await;
    let row = |id: i64| {
        let db = app.db.clone();
        async move {
            entity::agent_questions::Entity::find_by_id(id)
                .one(&db)
                .await
                .expect("query")
                .expect("the question")
        }
    };
    let asked = row(high).await;
    assert_eq!(
        asked
            .escalate_at
            .map(|at| (at - asked.created_at).num_seconds()),
        Some(120)
    );
    assert_eq!(row(normal).await.escalate_at, None);
    escalation::sweep(
        &app.db,
        &hint,
        100,
        asked.created_at + chrono::Duration::minutes(3),
    )
    .await
    .expect("sweep");
    assert_eq!(row(high).await.escalation_step, 1);
    escalation::sweep(
        &app.db,
        &hint,
        100,
        asked.created_at + chrono::Duration::days(40),
    )
    .await
    .expect("sweep");
    assert_eq!(escalated_events(&app, normal).await.len(), 0);

    // Answered (pending review), then rejected: the question reopens and its clock starts over.
    answer(&app, &ana, high).await;
    app.decide_newest_contribution(&root.token, "rejectContribution", Some("A guess."))
        .await;
    let reopened = row(high).await;
    assert_eq!(reopened.escalation_step, 0);
    let restarted = reopened.escalate_at.expect("a new clock");
    assert!(restarted > asked.escalate_at.expect("the first clock"));
    escalation::sweep(
        &app.db,
        &hint,
        100,
        restarted + chrono::Duration::seconds(1),
    )
    .await
    .expect("sweep");
    let events = escalated_events(&app, high).await;
    assert_eq!(
        events
            .iter()
            .map(|e| e["step"].as_i64())
            .collect::<Vec<_>>(),
        vec![Some(1), Some(2), Some(1)],
        "steps 1 and 2 in the first round, step 1 again in the reopened one"
    );
}

on_both_backends!(links_run_out_follow_the_address_and_limits_hold);

async fn links_run_out_follow_the_address_and_limits_hold(app: TestApp) {
    use askloop::service::reach;
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let now = Utc::now();
    let token = reach::verification_token(&app.db, ana.id, "ana@example.com", now)
        .await
        .expect("a token");
    // Run out.
    let late = reach::verify_email(&app.db, &token, now + chrono::Duration::hours(49)).await;
    assert!(
        matches!(&late, Err(askloop::error::ServiceError::BadInput(m)) if m.contains("run out")),
        "{late:?}"
    );
    // For an address that is no longer hers.
    let moved = app
        .graphql(
            Some(&ana.token),
            "mutation { setMyEmail(email: \"ana.new@example.com\") { email emailVerified } }",
            json!({}),
        )
        .await;
    assert_eq!(
        moved["data"]["setMyEmail"],
        json!({"email": "ana.new@example.com", "emailVerified": false}),
        "{moved}"
    );
    let stale = reach::verify_email(&app.db, &token, now).await;
    assert!(
        matches!(&stale, Err(askloop::error::ServiceError::BadInput(m)) if m.contains("no longer yours")),
        "{stale:?}"
    );
    // An unsubscribe token is not a verification token, nor the other way round.
    let unsubscribe = reach::unsubscribe_token(&app.db, ana.id, 1)
        .await
        .expect("a token");
    assert!(
        reach::verify_email(&app.db, &unsubscribe, now)
            .await
            .is_err()
    );
    assert!(reach::unsubscribe(&app.db, &token, now).await.is_err());
    assert_eq!(mail_settings(&app, &ana).await["emailVerified"], false);

    // Verified: asking again is refused.
    let fresh = reach::verification_token(&app.db, ana.id, "ana.new@example.com", now)
        .await
        .expect("a token");
    reach::verify_email(&app.db, &fresh, now)
        .await
        .expect("verified");
    let again = reach::request_verification(&app.db, &ana.viewer(), true, now).await;
    assert!(
        matches!(&again, Err(askloop::error::ServiceError::BadInput(m)) if m.contains("already verified")),
        "{again:?}"
    );

    // At most five verification mails an hour, however fast they are sent.
    let bob = operator(&app.db, "games", "bob").await;
    for _ in 0..reach::VERIFY_PER_HOUR {
        reach::request_verification(&app.db, &bob.viewer(), true, now)
            .await
            .expect("queued");
        notifications::Entity::update_many()
            .col_expr(
                notifications::Column::Status,
                sea_orm::sea_query::Expr::value("sent"),
            )
            .filter(notifications::Column::UserId.eq(bob.id))
            .exec(&app.db)
            .await
            .expect("sent");
    }
    let flood = reach::request_verification(&app.db, &bob.viewer(), true, now).await;
    assert!(
        matches!(&flood, Err(askloop::error::ServiceError::BadInput(m)) if m.contains("an hour")),
        "{flood:?}"
    );
    let queued = notifications::Entity::find()
        .filter(notifications::Column::UserId.eq(bob.id))
        .count(&app.db)
        .await
        .expect("count");
    assert_eq!(queued, reach::VERIFY_PER_HOUR);
    // An hour later it may ask again.
    reach::request_verification(
        &app.db,
        &bob.viewer(),
        true,
        now + chrono::Duration::minutes(61),
    )
    .await
    .expect("queued again");

    // At most five webhooks per person and niche.
    let register = "mutation($url: String!) { registerOperatorWebhook(nicheSlug: \"games\", url: $url) { webhook { id } } }";
    for n in 0..5 {
        let made = app
            .graphql(
                Some(&ana.token),
                register,
                json!({"url": format!("https://example.com/{n}")}),
            )
            .await;
        assert!(made["errors"].is_null(), "{made}");
    }
    let sixth = app
        .graphql(
            Some(&ana.token),
            register,
            json!({"url": "https://example.com/6"}),
        )
        .await;
    assert_eq!(error_code(&sixth), Some("BAD_USER_INPUT"), "{sixth}");
    let hooks = app
        .graphql(Some(&ana.token), "{ myOperatorWebhooks { id } }", json!({}))
        .await;
    assert_eq!(
        hooks["data"]["myOperatorWebhooks"].as_array().map(Vec::len),
        Some(5)
    );
}

on_both_backends!(two_people_taking_one_address_at_once_get_one_address_and_one_conflict);

async fn two_people_taking_one_address_at_once_get_one_address_and_one_conflict(app: TestApp) {
    open_niche(&app.db, "games").await;
    let mut people = Vec::new();
    for handle in ["ana", "bob", "cy", "dee", "eve", "fay"] {
        people.push(operator(&app.db, "games", handle).await);
    }
    let take = "mutation { setMyEmail(email: \"shared@example.com\") { email } }";
    let answers = futures::future::join_all(
        people
            .iter()
            .map(|p| app.graphql(Some(&p.token), take, json!({}))),
    )
    .await;
    let won = answers
        .iter()
        .filter(|a| a["data"]["setMyEmail"]["email"] == "shared@example.com")
        .count();
    let refused = answers
        .iter()
        .filter(|a| error_code(a) == Some("CONFLICT"))
        .count();
    assert_eq!((won, refused), (1, people.len() - 1), "{answers:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_first_wave_mails_the_best_placed_at_once_and_the_rest_at_half_the_wait_on_sqlite() {
    a_first_wave_mails_the_best_placed_first(askloop_tests::Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_first_wave_mails_the_best_placed_at_once_and_the_rest_at_half_the_wait_on_postgres() {
    a_first_wave_mails_the_best_placed_first(askloop_tests::Backend::Postgres).await;
}

/// Routing (docs/contract.md#routed-first-wave) with `firstWave: 2` in a niche whose high
/// urgency escalates after 8 s: ana and bob, the best records, are mailed at once; cara, with
/// none, at half the wait (4 s), before the escalation (8 s) would tell her anyway.
async fn a_first_wave_mails_the_best_placed_first(backend: askloop_tests::Backend) {
    let smtp = SmtpServer::start().await;
    let url = smtp.url();
    let Some(app) = TestApp::spawn_with(backend, |c| mail_through(c, &url)).await else {
        eprintln!("skipped: TEST_DATABASE_URL is not set");
        return;
    };
    open_niche(&app.db, "games").await;
    let root = person(&app.db, "root", true).await;
    let cara = operator(&app.db, "games", "cara").await;
    let ana = operator(&app.db, "games", "ana").await;
    let bob = operator(&app.db, "games", "bob").await;
    // Records first (the questions they answered are mailed to nobody: no address is verified).
    crate::weighing::seed_history(&app, "games", &ana, &[(None, true); 30]).await;
    crate::weighing::seed_history(&app, "games", &bob, &[(None, true); 20]).await;
    for who in [&ana, &bob, &cara] {
        verified_address(&app.db, who).await;
    }
    let set = app
        .graphql(
            Some(&root.token),
            "mutation { setNicheWeighing(slug: \"games\", routing: {mode: FIRST_WAVE, firstWave: 2}) { routing { mode firstWave } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        set["data"]["setNicheWeighing"]["routing"],
        json!({"mode": "FIRST_WAVE", "firstWave": 2}),
        "{set}"
    );
    let refused = app
        .graphql(
            Some(&root.token),
            "mutation { setNicheWeighing(slug: \"games\", routing: {mode: FIRST_WAVE}) { trustLowerBound } }",
            json!({}),
        )
        .await;
    assert_eq!(error_code(&refused), Some("BAD_USER_INPUT"), "{refused}");
    // A short wait, below what an admin may set, written straight into the store.
    entity::niches::Entity::update_many()
        .col_expr(
            entity::niches::Column::EscalateHighSecs,
            sea_orm::sea_query::Expr::value(Some(8_i64)),
        )
        .exec(&app.db)
        .await
        .expect("a short wait");

    let id = ask(&app, "routed", "high", "Which date, routed?").await;
    let first = smtp.wait_for(2, WAIT).await;
    let mut to: Vec<String> = first.iter().filter_map(|m| m.header("to")).collect();
    to.sort();
    assert_eq!(to, ["ana@example.com", "bob@example.com"], "the first wave");
    let rows = notification_rows(&app, id).await;
    let later = rows
        .iter()
        .find(|r| r.user_id == cara.id)
        .expect("cara's notification");
    assert_eq!(
        (later.due_at - later.created_at).num_seconds(),
        4,
        "half the escalation wait"
    );
    let all = smtp.wait_for(3, WAIT).await;
    assert_eq!(all[2].header("to").as_deref(), Some("cara@example.com"));

    // Admins see who was routed and why; members do not.
    let routes = "query($id: ID!) { question(id: $id) { routes { handle rank reason } } }";
    let seen = app
        .graphql(Some(&root.token), routes, json!({"id": id.to_string()}))
        .await;
    let seen = &seen["data"]["question"]["routes"];
    assert_eq!(seen[0]["handle"], "ana", "{seen}");
    assert_eq!(seen[1]["handle"], "bob", "{seen}");
    assert!(
        seen[0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("lower bound 0.89")),
        "{seen}"
    );
    let hidden = app
        .graphql(Some(&cara.token), routes, json!({"id": id.to_string()}))
        .await;
    assert_eq!(hidden["data"]["question"]["routes"], json!([]), "{hidden}");
}
