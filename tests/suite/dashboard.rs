//! The dashboard is served on the same origin, and in a real headless Chromium it loads, talks to
//! `/graphql` and shows the niches it can see.

use askloop_tests::browser::Browser;
use askloop_tests::fixtures::niche;

use askloop_tests::pages::{self, LoginPage, NichesPage, QueuePage, require_built_dashboard};
use askloop_tests::{Backend, TestApp};
use entity::niches::NicheStatus;

#[tokio::test]
async fn the_dashboard_is_served_for_its_routes_and_deep_links() {
    require_built_dashboard();
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    for path in ["/", "/dashboard/niches", "/login"] {
        let page = app.client.get(app.url(path)).send().await.expect("sent");
        assert_eq!(page.status(), 200, "{path}");
        assert!(
            page.text().await.expect("text").contains("/pkg/web.js"),
            "{path}"
        );
    }
    let wasm = app
        .client
        .get(app.url("/pkg/web_bg.wasm"))
        .send()
        .await
        .expect("sent");
    assert_eq!(wasm.status(), 200);
    assert_eq!(
        wasm.headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("application/wasm")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_shows_the_niches_it_can_see_in_a_real_browser() {
    require_built_dashboard();
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    niche(&app.db, "games", NicheStatus::Open).await;
    niche(&app.db, "secret-draft", NicheStatus::Draft).await;
    let mut browser = Browser::start().await;
    for (name, width, height, mobile) in [
        ("niches-desktop", 1280, 800, false),
        ("niches-phone", 390, 844, true),
    ] {
        browser.viewport(width, height, mobile).await;
        browser.goto(&app.url("/")).await;
        browser
            .wait_for(
                "document.querySelector('[data-slug=\"games\"]')",
                "the games niche",
            )
            .await;
        let text = browser.eval("document.body.innerText").await;
        let text = text.as_str().unwrap_or_default();
        assert!(text.contains("Niche games"), "{text}");
        assert!(
            !text.contains("secret-draft"),
            "a draft niche leaked:\n{text}"
        );
        let shot = browser.screenshot(name).await;
        let size = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
        assert!(size > 1_000, "{} is only {size} bytes", shot.display());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_signs_in_reads_untrusted_context_as_text_and_answers() {
    use askloop_tests::people::{PASSWORD, operator};
    use serde_json::json;

    require_built_dashboard();
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    niche(&app.db, "games", NicheStatus::Open).await;
    operator(&app.db, "games", "ana").await;
    let hostile = json!({"payload": {
        "nicheSlug": "games",
        "externalId": "xss",
        "title": "<img src=x onerror=\"window.__pwned=1\"> Which date?",
        "question": "Early access or 1.0? &amp; <b>really</b>",
        "context": "<script>window.__pwned=1</script> see <a href=\"javascript:window.__pwned=1\">this</a>",
        "options": [{"id": "ea", "label": "<i>Early</i> access"}, {"id": "full", "label": "1.0"}],
    }});
    let response = app
        .post_signed("/api/v1/internal/expert-questions", &hostile.to_string())
        .await;
    assert_eq!(response.status(), 201);
    let id = 1;

    let mut browser = pages::browser().await;
    // A deep link while signed out goes to the login page and comes back.
    browser
        .goto(&app.url("/dashboard/niches/games/questions"))
        .await;
    browser
        .wait_for("location.pathname === '/login'", "the login page")
        .await;
    assert!(
        browser
            .eval("location.search")
            .await
            .as_str()
            .unwrap_or_default()
            .contains("next=")
    );
    LoginPage(&mut browser).sign_in("ana", PASSWORD).await;
    QueuePage(&mut browser)
        .wait_for_card(id, "the question card")
        .await;
    assert_eq!(
        browser.eval("location.pathname").await,
        json!("/dashboard/niches/games/questions")
    );

    // The untrusted text is shown as text, under its label, and nothing in it ran.
    QueuePage(&mut browser).open(id).await;
    let card = QueuePage::card(id);
    let quote = browser
        .eval(&format!(
            "{card}.querySelector('details.context blockquote').textContent"
        ))
        .await;
    assert!(
        quote
            .as_str()
            .unwrap_or_default()
            .contains("<script>window.__pwned=1</script>"),
        "{quote}"
    );
    let label = browser
        .eval(&format!(
            "{card}.querySelector('details.context summary').textContent"
        ))
        .await;
    assert_eq!(label, json!("What the agent found"));
    let title = browser
        .eval(&format!("{card}.querySelector('h2').textContent"))
        .await;
    assert!(
        title.as_str().unwrap_or_default().starts_with("<img src=x"),
        "{title}"
    );
    assert_eq!(browser.eval("document.querySelectorAll('article.question img, article.question script, article.question a[href^=javascript], article.question i').length").await, json!(0));
    assert_eq!(
        browser.eval("typeof window.__pwned").await,
        json!("undefined")
    );
    browser.screenshot("queue-desktop").await;
    browser.viewport(390, 844, true).await;
    browser.screenshot("queue-phone").await;
    browser.viewport(1280, 900, false).await;

    // Answer with an option and words: the notice says what happened and the card is gone.
    let mut queue = QueuePage(&mut browser);
    queue.choose(id, "<i>Early</i> access").await;
    queue.write(id, "The 1.0 date is the release.").await;
    queue.press(id, "Answer").await;
    assert_eq!(
        queue.notice().await,
        "Thanks. It goes to review before it counts."
    );
    queue.wait_until_empty().await;
    assert_eq!(queue.card_count().await, 0);
    assert_eq!(
        browser.eval("typeof window.__pwned").await,
        json!("undefined")
    );

    // The niches page now counts the answer in review.
    browser.goto(&app.url("/dashboard/niches")).await;
    let mut niches = NichesPage(&mut browser);
    niches.wait_for_card("games").await;
    let card = niches.card_text("games").await;
    assert!(card.contains("1 in review"), "{card}");
    assert!(card.contains("100 more to Specialist"), "{card}");
    browser.screenshot("niches-signed-in-desktop").await;
    browser.viewport(390, 844, true).await;
    browser.screenshot("niches-signed-in-phone").await;
}
