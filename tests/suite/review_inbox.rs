//! The admins' review inbox and the question's story, in a real Chromium: an admin signing in
//! lands on the inbox; a new answer and the counts arrive there without a reload; `j`/`k`/`v`/`x`
//! (with the reason first, Esc cancelling) decide from the keyboard; nobody but an admin may
//! subscribe to it; the question's timeline tells verdicts as sentences, with no internal name;
//! a sole admin's own answer says how a second admin is added; suspending a member asks first.

use std::time::Duration;

use askloop_tests::answers::answer_input;
use askloop_tests::browser::{Browser, button, button_in, labelled_in};
use askloop_tests::fixtures::open_niche;
use askloop_tests::pages::{AdminPage, QuestionPage, signed_in};
use askloop_tests::people::{Person, member, operator, person};
use askloop_tests::socket::{GqlSocket, Received};
use askloop_tests::{TestApp, on_both_backends};
use entity::contribution_events::{self, ContributionStatus};
use entity::niche_members::{self, MemberRole, MemberStatus};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::json;

use crate::review_pages::assert_accessible;

const INBOX: &str = "subscription { reviewInbox { event } }";

/// `ana` answers question `id` (choosing the first option, with words); the contribution's id.
async fn answered(app: &TestApp, ana: &Person, id: i64) -> String {
    let body = app
        .answer(
            &ana.token,
            answer_input(
                id,
                "ANSWERED",
                Some("ea"),
                Some("Early access opens first."),
            ),
        )
        .await;
    assert!(body["errors"].is_null(), "{body}");
    contribution_of(app, ana, id).await.0.to_string()
}

/// The contribution `who` earned on question `id`, and its status.
async fn contribution_of(app: &TestApp, who: &Person, id: i64) -> (i64, ContributionStatus) {
    let answer = entity::agent_answers::Entity::find()
        .filter(entity::agent_answers::Column::QuestionId.eq(id))
        .filter(entity::agent_answers::Column::UserId.eq(who.id))
        .one(&app.db)
        .await
        .expect("query")
        .expect("the answer");
    let contribution = contribution_events::Entity::find_by_id(
        answer.contribution_event_id.expect("a contribution"),
    )
    .one(&app.db)
    .await
    .expect("query")
    .expect("the contribution");
    (contribution.id, contribution.status)
}

/// The status of contribution `id`.
async fn status_of(app: &TestApp, id: &str) -> ContributionStatus {
    contribution_events::Entity::find_by_id(id.parse::<i64>().expect("an id"))
        .one(&app.db)
        .await
        .expect("query")
        .expect("the contribution")
        .status
}

/// A niche `games` with an admin (`root`) and an operator (`ana`).
async fn desk(app: &TestApp) -> (Person, Person) {
    open_niche(&app.db, "games").await;
    let root = person(&app.db, "root", true).await;
    let ana = operator(&app.db, "games", "ana").await;
    (root, ana)
}

/// The Review tab's count, in words.
async fn review_tab(browser: &mut Browser) -> String {
    browser
        .text(&format!(
            "{}.querySelector('.tab-count')",
            AdminPage::tab("review")
        ))
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_signing_in_lands_on_the_review_inbox_and_an_operator_on_their_niches() {
    let app = TestApp::spawn(askloop_tests::Backend::Sqlite)
        .await
        .expect("an app");
    desk(&app).await;
    // Through the header's "Sign in" (bound for the niches page) and through /login itself.
    for start in ["/login?next=/dashboard/niches", "/login"] {
        let mut browser = askloop_tests::pages::browser().await;
        browser.goto(&app.url(start)).await;
        askloop_tests::pages::LoginPage(&mut browser)
            .sign_in("root", askloop_tests::people::PASSWORD)
            .await;
        browser
            .wait_for(
                "location.pathname === '/admin/review' && document.querySelector('#review-title')",
                "the review inbox, for the admin",
            )
            .await;
        let heading = browser
            .text("document.querySelector('#review-title')")
            .await;
        assert!(heading.starts_with("Review inbox"), "{heading}");
    }
    // A page that asked for sign-in is where an admin comes back to.
    let mut root = signed_in(&app, "root", "/admin/members").await;
    // An admin in no niche who opens the niches page is led back to the inbox.
    root.goto(&app.url("/dashboard/niches")).await;
    root.wait_for(
        "document.querySelector('#join-title') && document.querySelector('[data-admin-lead] a[href=\"/admin/review\"]')",
        "the niches page leading an admin to the review inbox",
    )
    .await;
    // An operator goes to their niches, as before.
    let mut ana = askloop_tests::pages::browser().await;
    ana.goto(&app.url("/login")).await;
    askloop_tests::pages::LoginPage(&mut ana)
        .sign_in("ana", askloop_tests::people::PASSWORD)
        .await;
    ana.wait_for(
        "location.pathname === '/dashboard/niches'",
        "the operator's niches",
    )
    .await;
}

async fn the_inbox_receives_a_new_answer_and_its_counts_without_a_reload(app: TestApp) {
    let (_root, ana) = desk(&app).await;
    let mut browser = signed_in(&app, "root", "/admin/review").await;
    browser
        .wait_for(
            "document.querySelector('section.review-inbox .empty') && document.querySelector('[data-waiting=\"0\"]')",
            "the empty inbox",
        )
        .await;
    assert_eq!(review_tab(&mut browser).await, "(0)");
    browser.eval("window.__sameDocument = true").await;
    app.until_subscriptions_served(1).await;

    let question = app.ask("games", "live-review").await;
    let id = answered(&app, &ana, question).await;
    let item = AdminPage::review_item(&id);
    browser
        .wait_for(&item, "ana's answer arriving in the inbox")
        .await;
    browser
        .wait_for(
            "document.querySelector('#review-title [data-waiting=\"1\"]')",
            "the heading's count",
        )
        .await;
    browser
        .wait_for(
            &format!(
                "{}.querySelector('.tab-count').textContent === '(1)'",
                AdminPage::tab("review")
            ),
            "the Review tab's count",
        )
        .await;
    assert_eq!(
        browser.eval("window.__sameDocument === true").await,
        json!(true),
        "no reload"
    );
    // The card shows the question and the answer; the evidence they were recorded with is
    // not put in front of the reviewer as raw data.
    assert_eq!(
        browser
            .eval(&format!("{item}.querySelectorAll('pre.evidence').length"))
            .await,
        json!(0),
        "raw evidence on an answer's card"
    );

    // Decided elsewhere (another admin, over the API): it leaves, and the counts follow.
    let lee = person(&app.db, "lee", true).await;
    let verified = app.verify(&lee.token, &id).await;
    assert!(verified["errors"].is_null(), "{verified}");
    browser
        .wait_for(
            &format!("!{item} && document.querySelector('#review-title [data-waiting=\"0\"]')"),
            "the item decided elsewhere leaving, with its count",
        )
        .await;
    assert_eq!(review_tab(&mut browser).await, "(0)");
    assert_eq!(
        browser.eval("window.__sameDocument === true").await,
        json!(true)
    );
}

on_both_backends!(the_inbox_receives_a_new_answer_and_its_counts_without_a_reload);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_move_between_items_verify_and_reject_with_the_reason_first() {
    let app = TestApp::spawn(askloop_tests::Backend::Sqlite)
        .await
        .expect("an app");
    let (_root, ana) = desk(&app).await;
    let first = answered(&app, &ana, app.ask("games", "first").await).await;
    let second = answered(&app, &ana, app.ask("games", "second").await).await;
    let mut browser = signed_in(&app, "root", "/admin/review").await;
    browser
        .wait_for(
            &format!(
                "{} && {}",
                AdminPage::review_item(&first),
                AdminPage::review_item(&second)
            ),
            "both items",
        )
        .await;
    let focused =
        "document.activeElement && document.activeElement.getAttribute('data-contribution-id')";
    let order = browser
        .eval("[...document.querySelectorAll('article.review')].map(a => a.getAttribute('data-contribution-id'))")
        .await;
    let order: Vec<String> = serde_json::from_value(order).expect("ids");
    assert_eq!(order.len(), 2, "{order:?}");

    // `?` lists the keys.
    browser.press_key("?").await;
    let keys = browser
        .text("document.querySelector('section.review-inbox .key-list')")
        .await;
    for key in ["Next / previous item", "Verify", "Reject", "Esc cancels"] {
        assert!(keys.contains(key), "{key} in {keys}");
    }
    browser.press_key("?").await;

    // j, j, k: the first, the second, the first again.
    browser.press_key("j").await;
    assert_eq!(browser.eval(focused).await, json!(order[0]));
    browser.press_key("j").await;
    assert_eq!(browser.eval(focused).await, json!(order[1]));
    browser.press_key("k").await;
    assert_eq!(browser.eval(focused).await, json!(order[0]));

    // x asks for the reason first, in its labelled box; Esc cancels and nothing changes.
    browser.press_key("x").await;
    let reason_box = "document.activeElement && document.activeElement.tagName === 'TEXTAREA' && document.activeElement.closest('form.reject-confirm')";
    browser
        .wait_for(reason_box, "the reason's box, focused")
        .await;
    browser.press_key("Escape").await;
    browser
        .wait_for(
            "!document.querySelector('form.reject-confirm') && document.activeElement && document.activeElement.getAttribute('data-action') === 'reject'",
            "the reason cancelled, the focus back on Reject",
        )
        .await;
    assert_eq!(
        status_of(&app, &order[0]).await,
        ContributionStatus::Pending
    );
    // Keys are not commands while typing: an x typed into a field stays text.
    browser.press_key("x").await;
    browser.wait_for(reason_box, "the reason's box again").await;
    let item = AdminPage::review_item(&order[0]);
    browser.press_key("v").await;
    assert_eq!(
        browser.eval("document.activeElement.value").await,
        json!("v"),
        "v typed into the reason is text"
    );
    browser
        .fill(
            &labelled_in(&item, "Reason (required)"),
            "The launch date is not in the source.",
        )
        .await;
    browser
        .click(&button_in(&item, "Reject with this reason"))
        .await;
    browser
        .wait_for(&format!("!{item}"), "the rejected item leaving")
        .await;
    assert_eq!(
        status_of(&app, &order[0]).await,
        ContributionStatus::Rejected
    );
    // The focus goes on to the item that is left; v verifies it.
    browser
        .wait_for(
            &format!("document.activeElement && document.activeElement.getAttribute('data-contribution-id') === {:?}", order[1]),
            "the next item focused",
        )
        .await;
    browser.press_key("v").await;
    browser
        .wait_for(
            &format!(
                "!{} && document.querySelector('section.review-inbox .empty')",
                AdminPage::review_item(&order[1])
            ),
            "the verified item leaving",
        )
        .await;
    assert_eq!(
        status_of(&app, &order[1]).await,
        ContributionStatus::Verified
    );
}

async fn only_an_admin_may_subscribe_to_the_review_inbox(app: TestApp) {
    let (root, ana) = desk(&app).await;
    // An operator is refused, with the code, and hears nothing of a later answer.
    let mut refused = GqlSocket::connect(&app.base, Some(&ana.token)).await;
    refused.subscribe("r", INBOX, json!({})).await;
    let answer = refused.next_data("r").await;
    assert_eq!(
        answer["errors"][0]["extensions"]["code"], "FORBIDDEN",
        "{answer}"
    );
    assert!(answer["data"].is_null(), "{answer}");
    match refused.receive(Duration::from_secs(5)).await {
        Received::Json(message) => assert_eq!(message["type"], "complete", "{message}"),
        other => panic!("expected complete, got {other:?}"),
    }
    // An admin hears it.
    let mut admin = GqlSocket::connect(&app.base, Some(&root.token)).await;
    admin.subscribe("a", INBOX, json!({})).await;
    app.until_subscriptions_served(1).await;
    let question = app.ask("games", "watched").await;
    answered(&app, &ana, question).await;
    let change = admin.next_data("a").await;
    assert!(
        change["data"]["reviewInbox"]["event"].is_string(),
        "{change}"
    );
    match refused.receive(Duration::from_millis(700)).await {
        Received::Nothing => {}
        other => panic!("a refused subscriber received {other:?}"),
    }
}

on_both_backends!(only_an_admin_may_subscribe_to_the_review_inbox);

async fn the_timeline_tells_verdicts_as_sentences_and_no_internal_name(app: TestApp) {
    let (root, ana) = desk(&app).await;
    let question = app.ask("games", "story").await;
    let id = answered(&app, &ana, question).await;
    let rejected = app
        .graphql(
            Some(&root.token),
            "mutation($id: ID!) { rejectContribution(id: $id, note: \"The date is a guess.\") { status } }",
            json!({ "id": id }),
        )
        .await;
    assert!(rejected["errors"].is_null(), "{rejected}");
    let again = answered(&app, &operator(&app.db, "games", "ben").await, question).await;
    let verified = app.verify(&root.token, &again).await;
    assert!(verified["errors"].is_null(), "{verified}");

    // A waiting question's page says its words once (its card does) and never links to itself.
    let waiting = app.ask("games", "waiting").await;
    let waiting_path = QuestionPage::path("games", waiting);
    let mut browser = signed_in(&app, "root", &waiting_path).await;
    browser
        .wait_for(
            "document.querySelector('.question-page form.answer')",
            "the waiting question's card",
        )
        .await;
    assert_eq!(
        browser
            .eval("document.querySelectorAll('main .question-text').length")
            .await,
        json!(1),
        "the question's words, once"
    );
    assert_eq!(
        browser
            .eval(&format!(
                "[...document.querySelectorAll('main a')].filter(a => a.getAttribute('href') === {waiting_path:?} && a.getClientRects().length > 0).length"
            ))
            .await,
        json!(0),
        "a visible link to the page itself"
    );

    let path = QuestionPage::path("games", question);
    browser.goto(&app.url(&path)).await;
    QuestionPage(&mut browser).wait_until_loaded().await;
    browser
        .wait_for(
            "document.querySelector('ol.timeline li[data-action=\"contribution.verified\"]')",
            "the verdicts in the timeline",
        )
        .await;
    let timeline = QuestionPage(&mut browser).section("Timeline").await;
    for said in [
        "The agent asked",
        "ana answered",
        "Rejected by root (ana's answer): The date is a guess.",
        "Reopened after root rejected or reversed the answer",
        "ben answered",
        "Verified by root (ben's answer)",
    ] {
        assert!(timeline.contains(said), "{said:?} in:\n{timeline}");
    }
    let page = browser.text("document.querySelector('main')").await;
    for internal in [
        "user:",
        "agent:",
        "question.",
        "contribution.",
        "knowledge.",
        "{\"",
    ] {
        assert!(
            !page.contains(internal),
            "{internal:?} on the page:\n{page}"
        );
    }
    assert_accessible(&mut browser, "the question page with its story").await;

    // Another member reads the story without the reason, which is for the answerer and admins.
    let mut ben = signed_in(&app, "ben", &path).await;
    QuestionPage(&mut ben).wait_until_loaded().await;
    ben.wait_for(
        "document.querySelector('ol.timeline li[data-action=\"contribution.rejected\"]')",
        "the rejection, for ben",
    )
    .await;
    let timeline = QuestionPage(&mut ben).section("Timeline").await;
    assert!(
        timeline.contains("Rejected by root (ana's answer)"),
        "{timeline}"
    );
    assert!(!timeline.contains("The date is a guess."), "{timeline}");
}

on_both_backends!(the_timeline_tells_verdicts_as_sentences_and_no_internal_name);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sole_admins_own_answer_says_how_a_second_admin_is_added() {
    let app = TestApp::spawn(askloop_tests::Backend::Sqlite)
        .await
        .expect("an app");
    let (root, _ana) = desk(&app).await;
    member(
        &app.db,
        "games",
        &root,
        MemberRole::Operator,
        MemberStatus::Active,
    )
    .await;
    let question = app.ask("games", "mine").await;
    let id = answered(&app, &root, question).await;
    let mut browser = signed_in(&app, "root", "/admin/review").await;
    let text = AdminPage(&mut browser).review_text(&id).await;
    assert!(
        text.contains("Your answer — another admin reviews it."),
        "{text}"
    );
    let item = AdminPage::review_item(&id);
    browser
        .wait_for(
            &format!("{item}.querySelector('[data-sole-admin]')"),
            "the word for a sole admin",
        )
        .await;
    let sole = browser
        .text(&format!("{item}.querySelector('[data-sole-admin]')"))
        .await;
    for said in ["only admin", "askloop user create", "--admin"] {
        assert!(sole.contains(said), "{said:?} in {sole}");
    }
    assert_accessible(&mut browser, "the inbox of a sole admin").await;

    // With a second admin, the word goes: that admin reviews it.
    person(&app.db, "lee", true).await;
    browser.reload().await;
    AdminPage(&mut browser).review_text(&id).await;
    browser
        .wait_for(
            &format!(
                "document.querySelector('.tab-count') && !{item}.querySelector('[data-sole-admin]')"
            ),
            "no word for a sole admin once there are two",
        )
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suspending_a_member_asks_first_and_cancelling_changes_nothing() {
    let app = TestApp::spawn(askloop_tests::Backend::Sqlite)
        .await
        .expect("an app");
    let (_root, ana) = desk(&app).await;
    let mut browser = signed_in(&app, "root", "/admin/members").await;
    let row = AdminPage::member("games", "ana");
    browser.wait_for(&row, "ana in the members table").await;
    let status = || async {
        niche_members::Entity::find()
            .filter(niche_members::Column::UserId.eq(ana.id))
            .one(&app.db)
            .await
            .expect("query")
            .expect("ana's membership")
            .status
    };

    // Esc cancels, and the focus goes back to "Suspend".
    browser.click(&button("Suspend ana")).await;
    let asking = format!("{row}.querySelector('.member-confirm')");
    browser
        .wait_for(
            &format!("{asking} && document.activeElement === {asking}"),
            "the question, focused",
        )
        .await;
    let question = browser.text(&asking).await;
    assert!(question.contains("Suspend ana from games?"), "{question}");
    assert_accessible(&mut browser, "the members page, asking").await;
    browser.press_key("Escape").await;
    browser
        .wait_for(
            &format!(
                "!{asking} && document.activeElement === {}",
                button("Suspend ana")
            ),
            "the question gone, the focus on Suspend",
        )
        .await;
    assert_eq!(status().await, MemberStatus::Active);

    // Cancel does the same.
    browser.click(&button("Suspend ana")).await;
    browser.click(&button("Cancel suspending ana")).await;
    browser
        .wait_for(&format!("!{asking}"), "the question gone")
        .await;
    assert_eq!(status().await, MemberStatus::Active);

    // Yes suspends.
    browser.click(&button("Suspend ana")).await;
    browser.click(&button("Yes, suspend ana")).await;
    browser
        .wait_for(
            &format!("{row}.innerText.includes('suspended')"),
            "ana suspended",
        )
        .await;
    assert_eq!(status().await, MemberStatus::Suspended);
}
