//! The dashboard in headless Chromium, as operators and admins use it: live arrivals and
//! departures across two sessions, declining and sending back, a refused non-member, a dropped
//! connection that re-syncs, sessions that end, and the admin page.

use askloop_tests::browser::{Browser, button, button_in, labelled, role};
use askloop_tests::fixtures::{open_niche, question_body};
use askloop_tests::people::{PASSWORD, operator, person};
use askloop_tests::wait;

use askloop_tests::pages::{
    AdminPage, Header, LoginPage, NichesPage, QueuePage, require_built_dashboard, signed_in,
};
use askloop_tests::{Backend, TestApp};
use entity::agent_questions::{self, QuestionStatus};
use sea_orm::{EntityTrait, PaginatorTrait};
use serde_json::{Value, json};

/// Ask a question titled `title` in `slug` through the signed intake route; its id.
async fn ask(app: &TestApp, slug: &str, external_id: &str, title: &str) -> i64 {
    let mut body = question_body(slug, external_id);
    body["payload"]["title"] = json!(title);
    let response = app
        .post_signed("/api/v1/internal/expert-questions", &body.to_string())
        .await;
    assert_eq!(response.status(), 201);
    let body: Value = response.json().await.expect("JSON");
    body["question"]["id"].as_i64().expect("an id")
}

async fn text(browser: &mut Browser, expression: &str) -> String {
    browser
        .eval(expression)
        .await
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// How many answers and declines question `id` has.
async fn answers_to(app: &TestApp, id: i64) -> u64 {
    use sea_orm::{ColumnTrait, QueryFilter};
    entity::agent_answers::Entity::find()
        .filter(entity::agent_answers::Column::QuestionId.eq(id))
        .count(&app.db)
        .await
        .expect("count answers")
}

async fn status_of(app: &TestApp, id: i64) -> QuestionStatus {
    agent_questions::Entity::find_by_id(id)
        .one(&app.db)
        .await
        .expect("query")
        .expect("the question")
        .status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn questions_arrive_live_and_leave_for_everyone_once_answered() {
    require_built_dashboard();
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    operator(&app.db, "games", "ana").await;
    operator(&app.db, "games", "ben").await;
    let queue = "/dashboard/niches/games/questions";
    let mut ana = signed_in(&app, "ana", queue).await;
    let mut ben = signed_in(&app, "ben", queue).await;
    for browser in [&mut ana, &mut ben] {
        QueuePage(browser).wait_until_empty().await;
        // Set on the loaded page: a reload would lose it.
        browser.eval("window.__sameDocument = true").await;
    }
    // Ben also watches "Your agent needs you" in a second browser.
    let mut ben_home = signed_in(&app, "ben", "/dashboard/niches").await;
    NichesPage(&mut ben_home).wait_until_nothing_awaits().await;
    ben_home.eval("window.__sameDocument = true").await;

    let id = ask(&app, "games", "live-1", "Which release date?").await;
    for browser in [&mut ana, &mut ben] {
        QueuePage(browser)
            .wait_for_card(id, "the new question, live")
            .await;
        assert_eq!(browser.eval("window.__sameDocument").await, json!(true));
        assert_eq!(
            browser
                .eval(&format!(
                    "{}.classList.contains('fresh')",
                    QueuePage::card(id)
                ))
                .await,
            json!(true),
            "an arrival is marked new"
        );
    }
    ben_home
        .wait_for(&NichesPage::awaiting(id), "the question awaiting ben")
        .await;
    ben.screenshot("queue-live-arrival-desktop").await;
    assert_eq!(ben_home.eval("window.__sameDocument").await, json!(true));

    // A refused answer keeps what was typed: the choice and the words stay, the error shows.
    let mut page = QueuePage(&mut ana);
    page.choose(id, "Early access").await;
    let too_long = "x".repeat(8001);
    page.write(id, &too_long).await;
    page.press(id, "Answer").await;
    let error = page.refusal(id).await;
    assert!(error.contains("8000"), "{error}");
    assert_eq!(page.written(id).await.len(), 8001);
    assert_eq!(
        ana.eval(&format!(
            "{}.querySelector('input[value=ea]').checked",
            QueuePage::card(id)
        ))
        .await,
        json!(true)
    );
    assert_eq!(status_of(&app, id).await, QuestionStatus::Open);

    // Answered: the notice and the points; the card leaves both pages and "Settled" has it.
    let mut page = QueuePage(&mut ana);
    page.write(id, "The 1.0 date is the release.").await;
    page.press(id, "Answer").await;
    assert_eq!(
        page.notice().await,
        "Thanks. It goes to review before it counts."
    );
    assert_eq!(
        text(&mut ana, "document.querySelector('.points').textContent").await,
        "3 points, pending"
    );
    assert_eq!(status_of(&app, id).await, QuestionStatus::Answered);
    for browser in [&mut ana, &mut ben] {
        QueuePage(browser)
            .wait_for_card_to_leave(id, "the answered question to leave")
            .await;
        browser
            .wait_for(&QueuePage::settled(id), "the question under Settled")
            .await;
        assert_eq!(browser.eval("window.__sameDocument").await, json!(true));
    }
    NichesPage(&mut ben_home).wait_until_nothing_awaits().await;
    let settled = text(&mut ben, "document.querySelector('.settled').innerText").await;
    assert!(settled.contains("Which release date?"), "{settled}");
    assert!(settled.contains("answered just now"), "{settled}");
    let exact = text(&mut ben, "document.querySelector('.settled time').title").await;
    assert!(exact.ends_with(" UTC"), "{exact}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declining_and_sending_back_leave_the_question_with_the_agent_or_the_others() {
    require_built_dashboard();
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    operator(&app.db, "games", "cara").await;
    let declined = ask(&app, "games", "d-1", "Is the demo free?").await;
    let sent_back = ask(&app, "games", "r-1", "Which engine?").await;
    let mut cara = signed_in(&app, "cara", "/dashboard/niches/games/questions").await;
    let mut page = QueuePage(&mut cara);
    page.wait_for_card(sent_back, "both questions").await;

    // "Not enough context" is held for 10 s with Undo: undone, nothing happened anywhere.
    page.press(declined, "Not enough context").await;
    let held = format!(
        "{}.querySelector('.held button.undo')",
        QueuePage::card(declined)
    );
    cara.wait_for(&held, "the Undo button").await;
    // Focus moves to Undo once it is drawn, which may be a frame after it appears.
    cara.wait_for(
        &format!("document.activeElement === {held}"),
        "Undo to take the focus",
    )
    .await;
    cara.click(&held).await;
    cara.wait_for(
        &format!(
            "!{held} && {}.querySelector('form.answer button[data-kind=insufficient_context]')",
            QueuePage::card(declined)
        ),
        "the card back after Undo",
    )
    .await;
    // Past the window: still nothing was sent.
    tokio::time::sleep(std::time::Duration::from_secs(11)).await;
    assert_eq!(
        answers_to(&app, declined).await,
        0,
        "an undone decline writes no row"
    );
    assert_eq!(status_of(&app, declined).await, QuestionStatus::Open);
    assert!(
        cara.eval(&QueuePage::card(declined)).await != Value::Null,
        "the undone question stays in view"
    );

    // Declined for real: sent when the window closes.
    let mut page = QueuePage(&mut cara);
    page.press(declined, "Not enough context").await;
    page.wait_for_card_to_leave(declined, "the declined card to go")
        .await;
    assert_eq!(
        page.notice().await,
        "Noted. It stays open for someone else."
    );
    assert_eq!(answers_to(&app, declined).await, 1);
    assert_eq!(status_of(&app, declined).await, QuestionStatus::Open);

    // Research needs a note: refused in the form without one.
    let mut page = QueuePage(&mut cara);
    page.press(sent_back, "Ask the agent to research more")
        .await;
    let card = QueuePage::card(sent_back);
    cara.click(&button_in(&card, "Send back for research"))
        .await;
    // Refused beside the note's own box.
    let note_alert = format!("{card}.querySelector('.research-note [role=alert]')");
    cara.wait_for(
        &format!("{note_alert}.textContent.length > 0"),
        "the refusal beside the note",
    )
    .await;
    let refusal = text(&mut cara, &format!("{note_alert}.textContent")).await;
    assert!(
        refusal.contains("Say what the agent should find out"),
        "{refusal}"
    );
    assert_eq!(answers_to(&app, sent_back).await, 0);
    cara.fill(
        &askloop_tests::browser::labelled_in(
            &card,
            "What should the agent find out? (required; the agent is told)",
        ),
        "Check the game's credits screen.",
    )
    .await;
    cara.click(&button_in(&card, "Send back for research"))
        .await;
    QueuePage(&mut cara)
        .wait_for_card_to_leave(sent_back, "the card sent back to go")
        .await;
    assert_eq!(
        QueuePage(&mut cara).notice().await,
        "Sent back to the agent for more research."
    );
    assert_eq!(
        status_of(&app, sent_back).await,
        QuestionStatus::Researching
    );
    let told = app.events_for_agent("agent.research_requested").await;
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(told[0]["note"], "Check the game's credits screen.");
    // Neither comes back into cara's view while she stays (live updates included): a question
    // asked after both arrives live, so every change before it has reached her page too.
    let later = ask(&app, "games", "l-1", "Asked after both").await;
    QueuePage(&mut cara)
        .wait_for_card(later, "the question asked after both")
        .await;
    assert_eq!(QueuePage(&mut cara).card_count().await, 1);
    for gone in [declined, sent_back] {
        assert_eq!(cara.eval(&QueuePage::card(gone)).await, Value::Null);
    }
    // Another operator still sees both waiting, the one sent back marked as such.
    operator(&app.db, "games", "dan").await;
    let mut dan = signed_in(&app, "dan", "/dashboard/niches/games/questions").await;
    QueuePage(&mut dan)
        .wait_for_card(sent_back, "the researching question")
        .await;
    assert!(dan.eval(&QueuePage::card(declined)).await.is_object());
    let badge = text(
        &mut dan,
        &format!(
            "{}.querySelector('.researching').textContent",
            QueuePage::card(sent_back)
        ),
    )
    .await;
    assert_eq!(badge, "sent back for research");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_member_gets_no_questions_in_the_browser() {
    require_built_dashboard();
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    person(&app.db, "eve", false).await;
    ask(&app, "games", "secret", "A member-only question").await;
    let mut eve = signed_in(&app, "eve", "/dashboard/niches/games/questions").await;
    eve.wait_for(&role("alert", "active member"), "the refusal")
        .await;
    let page = text(&mut eve, "document.body.innerText").await;
    assert!(page.contains("active member"), "{page}");
    assert!(
        !page.contains("Live updates"),
        "one refusal, not two: {page}"
    );
    assert!(!page.contains("A member-only question"), "{page}");
    // Nor does it arrive live.
    ask(&app, "games", "secret-2", "Another member-only question").await;
    // askloop serves her page no subscription, so nothing can reach it live.
    assert_eq!(app.gauge(wait::SUBSCRIPTIONS_SERVED).await, 0);
    let page = text(&mut eve, "document.body.innerText").await;
    assert!(!page.contains("member-only"), "{page}");
    assert_eq!(QueuePage(&mut eve).card_count().await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_connection_is_shown_and_the_queue_resyncs_when_it_returns() {
    require_built_dashboard();
    let mut app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    operator(&app.db, "games", "ana").await;
    let mut ana = signed_in(&app, "ana", "/dashboard/niches/games/questions").await;
    QueuePage(&mut ana).wait_until_empty().await;
    ana.eval("window.__sameDocument = true").await;

    app.pause().await;
    let banner = QueuePage(&mut ana).banner().await;
    assert!(banner.contains("Connection lost"), "{banner}");
    // While this instance is down another one takes a question: nothing is sent to the page.
    let other = app.another_instance().await;
    let id = ask(&other, "games", "while-away", "Asked while you were away").await;
    other.stop().await;

    app.resume().await;
    QueuePage(&mut ana)
        .wait_for_card(id, "the question after the re-sync")
        .await;
    ana.wait_for("!document.querySelector('.banner')", "the banner to go")
        .await;
    assert_eq!(ana.eval("window.__sameDocument").await, json!(true));
    // And live updates work again on the new connection.
    let live = ask(&app, "games", "after", "Asked after the return").await;
    QueuePage(&mut ana)
        .wait_for_card(live, "a live arrival after the return")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ended_session_goes_to_login_and_back_and_signing_out_ends_it() {
    use entity::sessions;
    use sea_orm::{ColumnTrait, QueryFilter, sea_query::Expr};

    require_built_dashboard();
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let queue = "/dashboard/niches/games/questions";
    let mut browser = signed_in(&app, "ana", queue).await;
    QueuePage(&mut browser).wait_until_empty().await;

    // Every session of ana's expires.
    sessions::Entity::update_many()
        .col_expr(
            sessions::Column::ExpiresAt,
            Expr::value(chrono::Utc::now() - chrono::Duration::minutes(1)),
        )
        .filter(sessions::Column::UserId.eq(ana.id))
        .exec(&app.db)
        .await
        .expect("expired");
    browser.goto(&app.url(queue)).await;
    browser
        .wait_for("location.pathname === '/login'", "the login page")
        .await;
    LoginPage(&mut browser).sign_in("ana", PASSWORD).await;
    browser
        .wait_for(
            &format!("location.pathname === {queue:?}"),
            "back on the queue",
        )
        .await;
    QueuePage(&mut browser).wait_until_empty().await;

    // Signing out ends the session: the queue asks for a sign-in again.
    let live_sessions = || async {
        sessions::Entity::find()
            .filter(sessions::Column::UserId.eq(ana.id))
            .filter(sessions::Column::ExpiresAt.gt(chrono::Utc::now()))
            .count(&app.db)
            .await
            .expect("count")
    };
    assert_eq!(live_sessions().await, 1, "the sign-in after the expiry");
    Header(&mut browser).sign_out().await;
    browser
        .wait_for("location.pathname === '/login'", "the login page")
        .await;
    assert_eq!(live_sessions().await, 0, "signing out ended it");
    browser.goto(&app.url(queue)).await;
    browser
        .wait_for("location.pathname === '/login'", "the login page once more")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admins_review_contributions_and_manage_members_in_the_browser() {
    require_built_dashboard();
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    person(&app.db, "root", true).await;
    person(&app.db, "ben", false).await;
    let id = ask(&app, "games", "q", "Which date?").await;
    let answered = app
        .graphql(
            Some(&ana.token),
            "mutation($id: ID!) { answerQuestion(input: {questionId: $id, kind: ANSWERED, optionId: \"ea\", body: \"<script>window.__pwned=1</script>\"}) { points } }",
            json!({ "id": id.to_string() }),
        )
        .await;
    assert!(answered["errors"].is_null(), "{answered}");

    // A non-admin is told the page is not theirs.
    let mut ben = signed_in(&app, "ben", "/admin").await;
    let refusal = AdminPage(&mut ben).page_error().await;
    assert!(refusal.contains("admins"), "{refusal}");
    assert_eq!(
        ben.eval("document.querySelectorAll('.review').length")
            .await,
        json!(0)
    );

    let mut root = signed_in(&app, "root", "/admin").await;
    root.wait_for("document.querySelector('.review')", "the review queue")
        .await;
    let header = text(&mut root, "document.querySelector('.top').innerText").await;
    assert!(header.contains("Admin"), "{header}");
    root.screenshot("admin-desktop").await;
    let mut admin = AdminPage(&mut root);
    admin.press("Verify").await;
    admin.wait_for_notice("Verified").await;
    root.wait_for(
        "!document.querySelector('.review')",
        "the review queue to empty",
    )
    .await;
    let standing = app
        .graphql(
            Some(&ana.token),
            "{ viewer { memberships { score verifiedCount } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        standing["data"]["viewer"]["memberships"][0]["score"],
        json!(3)
    );

    // Members: ana is listed; suspend her, add ben.
    AdminPage(&mut root).open_section("members").await;
    let ana_row = AdminPage::member("games", "ana");
    root.wait_for(&ana_row, "ana in the members table").await;
    AdminPage(&mut root).press("Suspend ana").await;
    AdminPage(&mut root).press("Yes, suspend ana").await;
    root.wait_for(
        &format!("{ana_row} && {ana_row}.innerText.includes('suspended')"),
        "ana suspended",
    )
    .await;
    AdminPage(&mut root).add_member("games", "ben").await;
    root.wait_for(&AdminPage::member("games", "ben"), "ben added")
        .await;
    let members = app
        .graphql(
            Some(&ana.token),
            "{ niche(slug: \"games\") { questions { edges { node { id } } } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        askloop_tests::error_code(&members),
        Some("FORBIDDEN"),
        "a suspended member reads nothing: {members}"
    );
    // Adding someone who does not exist is refused, visibly, and changes nothing.
    let mut admin = AdminPage(&mut root);
    admin.add_member("games", "nobody").await;
    admin.page_error().await;
    assert_eq!(admin.member_count("games").await, 2);
    assert_eq!(root.eval("typeof window.__pwned").await, json!("undefined"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admins_see_failed_deliveries_first_and_redeliver_in_the_browser() {
    use askloop_tests::receiver::{Receiver, Reply};
    use entity::deliveries::{self, DeliveryStatus};
    use sea_orm::{ColumnTrait, QueryFilter};
    use std::time::Duration;

    require_built_dashboard();
    let receiver = Receiver::start(vec![Reply::Status(503, None); 500]).await;
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.webhook_url = Some(receiver.url.clone());
        c.delivery.timeout = Duration::from_millis(500);
        c.delivery.lease = Duration::from_secs(2);
        c.delivery.retry_base = Duration::from_millis(50);
        c.delivery.poll = Duration::from_millis(50);
        c.delivery.retry_window = Duration::from_millis(300);
    })
    .await
    .expect("an app");
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    person(&app.db, "root", true).await;
    let answer = "mutation($id: ID!) { answerQuestion(input: {questionId: $id, kind: ANSWERED, optionId: \"ea\"}) { notice } }";
    let count = |status: DeliveryStatus| {
        let db = app.db.clone();
        async move {
            deliveries::Entity::find()
                .filter(deliveries::Column::Status.eq(status))
                .count(&db)
                .await
                .expect("count")
        }
    };
    let failing = ask(&app, "games", "f-1", "Fails to arrive").await;
    app.graphql(Some(&ana.token), answer, json!({"id": failing.to_string()}))
        .await;
    wait::until("the failing delivery exhausted", || async {
        count(DeliveryStatus::Exhausted).await >= 1
    })
    .await;
    receiver.set_script(Vec::new());
    let fine = ask(&app, "games", "ok-1", "Arrives").await;
    app.graphql(Some(&ana.token), answer, json!({"id": fine.to_string()}))
        .await;
    wait::until("the fine delivery delivered", || async {
        count(DeliveryStatus::Delivered).await >= 1
    })
    .await;

    let mut root = signed_in(&app, "root", "/admin/deliveries").await;
    root.wait_for(
        "document.querySelector('table.deliveries tbody tr')",
        "the deliveries",
    )
    .await;
    let statuses = root
        .eval("[...document.querySelectorAll('table.deliveries tbody tr')].map(r => r.className)")
        .await;
    assert_eq!(
        statuses,
        json!(["delivery-exhausted", "delivery-delivered"]),
        "failures first"
    );
    let first = text(
        &mut root,
        "document.querySelector('table.deliveries tbody tr').innerText",
    )
    .await;
    assert!(first.contains("HTTP 503"), "{first}");
    // The event in words, as the question page says it; never its code.
    assert!(first.contains("The answer"), "{first}");
    assert!(!first.contains("expert_answer"), "{first}");
    root.screenshot("admin-deliveries-desktop").await;
    root.click(&button_in(
        "document.querySelector('tr.delivery-exhausted')",
        "Redeliver",
    ))
    .await;
    AdminPage(&mut root)
        .wait_for_notice("Queued to be sent again")
        .await;
    wait::until("the redelivery delivered", || async {
        count(DeliveryStatus::Delivered).await >= 2
    })
    .await;
    root.goto(&app.url("/admin/deliveries")).await;
    root.wait_for(
        "document.querySelector('table.deliveries tbody tr')",
        "the deliveries",
    )
    .await;
    assert_eq!(
        root.eval("document.querySelectorAll('tr.delivery-delivered').length")
            .await,
        json!(2)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_revenue_and_budget_pages_show_real_money_and_admins_settle_payouts() {
    use entity::{niches, payouts};
    use sea_orm::{ColumnTrait, QueryFilter, sea_query::Expr};

    require_built_dashboard();
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.monitor = askloop::domain::signing::SigningKeys::new(Some("monitor-secret".into()), None);
    })
    .await
    .expect("an app");
    let games = open_niche(&app.db, "games").await;
    niches::Entity::update_many()
        .col_expr(
            niches::Column::MonthlyBudgetMinor,
            Expr::value(Some(1000_i64)),
        )
        .col_expr(niches::Column::MaxBountyMinor, Expr::value(500_i64))
        .filter(niches::Column::Id.eq(games.id))
        .exec(&app.db)
        .await
        .expect("budget");
    let ana = operator(&app.db, "games", "ana").await;
    person(&app.db, "root", true).await;
    let mut body = question_body("games", "bountied");
    body["payload"]["bountyMinor"] = json!(300);
    let asked = app
        .post_signed("/api/v1/internal/expert-questions", &body.to_string())
        .await;
    assert_eq!(asked.status(), 201);
    let asked: Value = asked.json().await.expect("JSON");
    let answered = app
        .graphql(
            Some(&ana.token),
            "mutation($id: ID!) { answerQuestion(input: {questionId: $id, kind: ANSWERED, optionId: \"ea\"}) { points } }",
            json!({"id": asked["question"]["id"].to_string()}),
        )
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    let event = json!({"nicheSlug": "games", "externalId": "inv-1", "sourceType": "subscription",
        "grossMinor": 10_000, "processingMinor": 400, "currency": "USD"});
    assert_eq!(
        app.post_signed("/api/v1/internal/revenue-events", &event.to_string())
            .await
            .status(),
        201
    );

    let mut browser = signed_in(&app, "ana", "/dashboard/niches/games/revenue").await;
    browser
        .wait_for(
            "document.querySelector('[data-total=gross]')",
            "the niche's revenue",
        )
        .await;
    let figure = |name: &str| format!("document.querySelector('[data-{name}]').textContent");
    assert_eq!(
        text(&mut browser, &figure("total=gross")).await,
        "103.00 USD"
    );
    assert_eq!(text(&mut browser, &figure("total=net")).await, "99.00 USD");
    assert_eq!(text(&mut browser, &figure("total=count")).await, "2");
    assert_eq!(
        text(&mut browser, &figure("budget=limit")).await,
        "10.00 USD"
    );
    assert_eq!(
        text(&mut browser, &figure("budget=spent")).await,
        "3.00 USD"
    );
    assert_eq!(
        text(&mut browser, &figure("budget=reserved")).await,
        "0.00 USD"
    );
    assert_eq!(
        text(&mut browser, &figure("budget=remaining")).await,
        "7.00 USD"
    );
    assert_eq!(text(&mut browser, &figure("budget-state")).await, "ample");
    assert_eq!(
        browser
            .eval("[...document.querySelectorAll('table.entries tr[data-entry-kind]')].map(r => r.dataset.entryKind)")
            .await,
        json!(["charge", "reserve"])
    );
    assert_eq!(
        browser
            .eval("document.querySelector('.budget-spent').getAttribute('width')")
            .await,
        json!("30.00")
    );
    browser.screenshot("niche-revenue-desktop").await;
    browser.viewport(390, 844, true).await;
    browser.screenshot("niche-revenue-phone").await;
    browser.viewport(1280, 900, false).await;

    browser.goto(&app.url("/dashboard/revenue")).await;
    browser
        .wait_for(
            "document.querySelector('[data-balance=owed]')",
            "my revenue",
        )
        .await;
    // Her share of the bounty (20 % of 3.00) waits for review: held, not owed.
    assert_eq!(
        text(&mut browser, &figure("balance=owed")).await,
        "19.20 USD"
    );
    assert_eq!(
        text(&mut browser, &figure("balance=held")).await,
        "0.60 USD"
    );
    assert_eq!(
        browser
            .eval("document.querySelectorAll('.allocations tbody tr').length")
            .await,
        json!(2)
    );
    assert!(
        browser
            .eval("document.querySelector('svg path.earnings').getAttribute('d')")
            .await
            .as_str()
            .is_some_and(|d| d.starts_with("M ")),
    );
    browser
        .fill(&labelled("Payout address"), "IBAN DE00 1234")
        .await;
    browser.click(&button("Save")).await;
    browser
        .wait_for(&role("status", "Saved."), "the saved address")
        .await;
    browser.screenshot("my-revenue-desktop").await;

    // The admin verifies the address, schedules the payout and marks it paid; a signal from
    // the monitor shows up live meanwhile.
    let served = app.gauge(askloop_tests::wait::SUBSCRIPTIONS_SERVED).await;
    let mut root = signed_in(&app, "root", "/admin/signals").await;
    root.wait_for(
        "document.querySelector('section[aria-labelledby=signals-title]')",
        "the signals section",
    )
    .await;
    // The page's signal subscription starts from the signals already logged: wait until it is
    // registered, so the next one is new to it.
    app.until_subscriptions_served(served + 1).await;
    let signal = json!({"signalId": "sig-1", "subjectType": "operator", "subjectId": "ana",
        "kind": "fast_answers", "severity": "high", "finding": "<b>twelve</b> answers in a minute"})
    .to_string();
    let signature = askloop::domain::signing::sign(
        "monitor-secret",
        signal.as_bytes(),
        chrono::Utc::now().timestamp(),
    );
    let posted = app
        .post_with_signature(
            "/api/v1/internal/anomaly-signals",
            &signal,
            Some(&signature),
        )
        .await;
    assert_eq!(posted.status(), 201);
    root.wait_for(
        "document.querySelector('li[data-signal-id=sig-1]')",
        "the live signal",
    )
    .await;
    let finding = text(
        &mut root,
        "document.querySelector('li[data-signal-id=sig-1] pre').textContent",
    )
    .await;
    assert_eq!(finding, "<b>twelve</b> answers in a minute");

    AdminPage(&mut root).open_section("payouts").await;
    root.wait_for(
        "document.querySelector('li[data-account=ana]')",
        "ana's address to verify",
    )
    .await;
    let listed = text(
        &mut root,
        "document.querySelector('li[data-account=ana]').innerText",
    )
    .await;
    assert!(listed.contains("IBAN DE00 1234"), "{listed}");
    let mut admin = AdminPage(&mut root);
    admin.press("Verify ana").await;
    admin.wait_for_notice("payout address is verified").await;
    AdminPage(&mut root)
        .press("Schedule payout to ana in USD")
        .await;
    root.wait_for(
        "document.querySelector('li[data-payout-id] [data-action=mark-paid]')",
        "the scheduled payout",
    )
    .await;
    let line = text(
        &mut root,
        "document.querySelector('li[data-payout-id]').innerText",
    )
    .await;
    assert!(line.contains("19.20 USD"), "{line}");
    root.fill(&labelled("Reference or reason"), "wire-42").await;
    AdminPage(&mut root).press("Mark paid").await;
    root.wait_for(
        "document.querySelector('li[data-payout-id] .status-paid')",
        "the paid payout",
    )
    .await;
    root.screenshot("admin-ledger-desktop").await;
    let stored = payouts::Entity::find()
        .one(&app.db)
        .await
        .expect("query")
        .expect("a payout");
    assert_eq!(stored.external_reference.as_deref(), Some("wire-42"));
    assert_eq!(
        stored.amount_minor, 1920,
        "the held 0.60 is not in the payout"
    );
    assert_eq!(root.eval("typeof window.__pwned").await, json!("undefined"));
}

/// An admin sets a niche's monthly limit and bounties on the admin page; the card then says where
/// the month stands, a bounty above the largest is refused with the reason shown, and nothing
/// else changes.
#[tokio::test]
async fn admins_set_a_niche_budget_in_the_browser() {
    require_built_dashboard();
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    person(&app.db, "root", true).await;
    let mut root = signed_in(&app, "root", "/admin/members").await;
    let month = AdminPage::budget_month("games");
    root.wait_for(&month, "the budget of games").await;
    let before = text(&mut root, &format!("{month}.innerText")).await;
    assert!(before.contains("left no limit"), "{before}");
    assert!(before.contains("on reuses 0.00 USD"), "{before}");

    AdminPage(&mut root).fill_reuse_price("games", "0.40").await;
    AdminPage(&mut root)
        .set_budget("games", "50", "1.00", "5")
        .await;
    AdminPage(&mut root)
        .wait_for_notice("The budget of games is saved.")
        .await;
    root.wait_for(
        &format!("{month} && {month}.innerText.includes('left 50.00 USD')"),
        "the month's standing with the new limit",
    )
    .await;
    let niche = entity::niches::Entity::find()
        .one(&app.db)
        .await
        .expect("query")
        .expect("the niche");
    assert_eq!(
        (
            niche.monthly_budget_minor,
            niche.bounty_minor,
            niche.max_bounty_minor,
            niche.reuse_price_minor
        ),
        (Some(5000), 100, 500, 40)
    );

    AdminPage(&mut root)
        .set_budget("games", "50.00", "6.00", "5.00")
        .await;
    let refusal = AdminPage(&mut root).page_error().await;
    assert!(
        refusal
            .to_lowercase()
            .contains("the default bounty cannot be above the largest bounty"),
        "{refusal}"
    );
    let unchanged = entity::niches::Entity::find()
        .one(&app.db)
        .await
        .expect("query")
        .expect("the niche");
    assert_eq!(unchanged.bounty_minor, 100);
}

/// A hostile question cannot break the card: with a 20,000-character context, a 400-character
/// unbroken word and a right-to-left override in the title, the page never scrolls sideways at
/// 320, 390 or 1280 px, the Answer button stays within two screens of the card's top, the
/// override is shown rather than obeyed, line breaks are kept, and the bounty and the time left
/// are on the card.
#[tokio::test]
async fn a_hostile_question_keeps_its_card_readable_at_every_width() {
    require_built_dashboard();
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    sea_orm::ConnectionTrait::execute_unprepared(
        &app.db,
        "UPDATE niches SET bounty_minor = 250, max_bounty_minor = 1000",
    )
    .await
    .expect("a bounty");
    operator(&app.db, "games", "ana").await;
    let mut body = question_body("games", "hostile");
    let word = "W".repeat(400);
    body["payload"]["title"] = json!("invoice\u{202E}gnp.exe");
    body["payload"]["question"] = json!(format!("First line\nSecond line {word}"));
    body["payload"]["context"] = json!(format!("{word}\n{}", "context ".repeat(2_500)));
    let response = app
        .post_signed("/api/v1/internal/expert-questions", &body.to_string())
        .await;
    assert_eq!(response.status(), 201);
    let id = response.json::<Value>().await.expect("JSON")["question"]["id"]
        .as_i64()
        .expect("an id");

    let mut browser = signed_in(&app, "ana", "/dashboard/niches/games/questions").await;
    let card = QueuePage::card(id);
    for (width, height, mobile) in [(320, 640, true), (390, 844, true), (1280, 900, false)] {
        browser.viewport(width, height, mobile).await;
        browser.reload().await;
        QueuePage(&mut browser)
            .wait_for_card(id, "the hostile card")
            .await;
        QueuePage(&mut browser).open(id).await;
        let wide = browser
            .eval("document.documentElement.scrollWidth")
            .await
            .as_i64()
            .unwrap_or(-1);
        let viewport = browser
            .eval("document.documentElement.clientWidth")
            .await
            .as_i64()
            .unwrap_or(-2);
        assert_eq!(wide, viewport, "sideways scroll at {width} px");
        let gap = browser
            .eval(&format!(
                "{card}.querySelector('button[data-kind=answered]').getBoundingClientRect().top - {card}.getBoundingClientRect().top"
            ))
            .await
            .as_f64()
            .unwrap_or(f64::MAX);
        assert!(
            gap <= f64::from(2 * height),
            "the Answer button is {gap} px below the card's top at {width} px"
        );
        browser.screenshot(&format!("hostile-card-{width}")).await;
    }
    let title = text(
        &mut browser,
        &format!("{card}.querySelector('h2').innerText"),
    )
    .await;
    assert_eq!(title, "invoice[U+202E]gnp.exe");
    let question = text(
        &mut browser,
        &format!("{card}.querySelector('.question-text').innerText"),
    )
    .await;
    assert!(
        question.starts_with("First line\nSecond line"),
        "{question}"
    );
    let meta = text(
        &mut browser,
        &format!("{card}.querySelector('.meta').innerText"),
    )
    .await;
    assert!(meta.contains("bounty 2.50 USD"), "{meta}");
    assert!(meta.contains(" left"), "{meta}");
    // The long context opens in full on request.
    browser
        .click(&askloop_tests::browser::button_in(&card, "Show all"))
        .await;
    browser
        .wait_for(
            &format!("!{card}.querySelector('blockquote.collapsed')"),
            "the whole context",
        )
        .await;

    // Dismissed from the bottom of the page with a reason: the card goes, the notice is in view,
    // and the agent hears why.
    browser
        .eval("window.scrollTo(0, document.documentElement.scrollHeight)")
        .await;
    browser
        .click(&format!("{card}.querySelector('details.dismiss summary')"))
        .await;
    browser
        .fill(
            &askloop_tests::browser::labelled_in(&card, "Why (optional; the agent is told)"),
            "Spam from a test run",
        )
        .await;
    browser
        .click(&askloop_tests::browser::button_in(
            &card,
            "Dismiss question",
        ))
        .await;
    QueuePage(&mut browser)
        .wait_for_card_to_leave(id, "the dismissed card to leave")
        .await;
    browser
        .wait_for(
            &role("status", "Dismissed. Nobody will be asked about it again."),
            "the notice",
        )
        .await;
    let in_view = browser
        .eval(
            "(() => { const r = document.querySelector('article.question.done [role=status]').getBoundingClientRect(); \
             return r.top >= 0 && r.bottom <= window.innerHeight; })()",
        )
        .await;
    assert_eq!(in_view, json!(true), "the notice is in view");
    let told = app.events_for_agent("expert_question.dismissed").await;
    assert_eq!(told.len(), 1, "the agent is told once: {told:?}");
    assert_eq!(told[0]["reason"], "Spam from a test run");
    assert_eq!(told[0]["dismissedBy"], "ana");
}
