//! Moving around the dashboard is one page in the browser's eyes: links switch pages without a
//! reload, the one live connection carries on across them, and a deep link or a reload still
//! lands on the page it names.

use askloop_tests::fixtures::open_niche;
use askloop_tests::people::operator;
use askloop_tests::{Backend, TestApp};
use serde_json::json;

use askloop_tests::pages::{self, COUNT_SOCKETS, NichesPage, QueuePage};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moving_between_the_niches_page_and_a_queue_keeps_the_document_and_its_one_websocket() {
    pages::require_built_dashboard();
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    operator(&app.db, "games", "ana").await;
    let first = app.ask("games", "nav-1").await;

    // Every document the browser loads counts the websockets it opens.
    let mut browser = signed_in_counting(&app).await;
    let mut niches = NichesPage(&mut browser);
    niches.wait_for_card("games").await;
    browser
        .wait_for(&NichesPage::awaiting(first), "the question awaiting ana")
        .await;
    browser
        .wait_for("window.__sockets === 1", "the live connection")
        .await;
    // Set on this document: a reload would lose it.
    browser.eval("window.__sameDocument = true").await;

    // To the queue by its link, and back by the page's own link.
    NichesPage(&mut browser).open_queue("games").await;
    QueuePage(&mut browser)
        .wait_for_card(first, "the queue, reached by its link")
        .await;
    assert_eq!(
        browser.eval("location.pathname").await,
        json!("/dashboard/niches/games/questions")
    );
    assert_eq!(browser.eval("window.__sameDocument").await, json!(true));
    // The queue's subscription rides on the same socket, and it is live.
    let second = app.ask("games", "nav-2").await;
    QueuePage(&mut browser)
        .wait_for_card(second, "a live arrival on the queue")
        .await;

    QueuePage(&mut browser).back_to_niches().await;
    NichesPage(&mut browser).wait_for_card("games").await;
    assert_eq!(
        browser.eval("location.pathname").await,
        json!("/dashboard/niches")
    );
    let third = app.ask("games", "nav-3").await;
    browser
        .wait_for(
            &NichesPage::awaiting(third),
            "a live change on the niches page",
        )
        .await;
    assert_eq!(browser.eval("window.__sameDocument").await, json!(true));
    assert_eq!(
        browser.eval("window.__sockets").await,
        json!(1),
        "one websocket for the whole visit"
    );

    // The browser's back button is in-app navigation too.
    browser.eval("history.back()").await;
    QueuePage(&mut browser)
        .wait_for_card(third, "the queue again, by going back")
        .await;
    assert_eq!(browser.eval("window.__sameDocument").await, json!(true));
    assert_eq!(browser.eval("window.__sockets").await, json!(1));

    // A deep link to the queue, and a reload of it, land on the queue.
    browser
        .goto(&app.url("/dashboard/niches/games/questions"))
        .await;
    QueuePage(&mut browser)
        .wait_for_card(first, "the queue from a deep link")
        .await;
    browser.eval("window.__beforeReload = true").await;
    browser.reload().await;
    browser
        .wait_for(
            "window.__beforeReload === undefined && document.querySelector('article.question')",
            "the reloaded queue",
        )
        .await;
    QueuePage(&mut browser)
        .wait_for_card(third, "every waiting question after the reload")
        .await;
    assert_eq!(
        browser.eval("location.pathname").await,
        json!("/dashboard/niches/games/questions")
    );
}

/// A browser that counts websockets in every document, signed in as ana on the niches page.
async fn signed_in_counting(app: &TestApp) -> askloop_tests::browser::Browser {
    let mut browser = pages::browser().await;
    browser.add_init_script(COUNT_SOCKETS).await;
    pages::sign_in_to(&mut browser, app, "ana", "/dashboard/niches").await;
    browser
}
