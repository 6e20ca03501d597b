//! Review that sees, in a real Chromium: the admin's review item shows the question, the chosen
//! option, the words and the answerer's record; the question page shows its answers, timeline,
//! budget entries and (for admins) deliveries, passes axe-core at desktop and phone widths and
//! works from the keyboard; the queue pages past 50 with "Load more" while live changes keep
//! merging in.
//!
//! With `ASKLOOP_SCREENSHOTS` naming a folder, the tests also leave PNGs there: the admin review
//! queue, the question page and a hostile question card at phone width.

use std::path::PathBuf;

use askloop_tests::axe::serious_findings;
use askloop_tests::browser::{Browser, button, link_in};
use askloop_tests::fixtures::{open_niche, question_body};
use askloop_tests::people::operator;
use askloop_tests::{Backend, TestApp};
use serde_json::{Value, json};

use crate::review::{act, review_scene};
use askloop_tests::pages::{AdminPage, QuestionPage, QueuePage, signed_in};

/// The folder `ASKLOOP_SCREENSHOTS` names, if any.
fn screenshot_folder() -> Option<PathBuf> {
    std::env::var_os("ASKLOOP_SCREENSHOTS")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
}

/// Save what the browser shows as `name`.png in the screenshot folder, when one is named.
async fn keep_screenshot(browser: &mut Browser, name: &str, whole_page: bool) {
    if let Some(dir) = screenshot_folder() {
        let path = browser.screenshot_into(&dir, name, whole_page).await;
        let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        assert!(size > 1_000, "{} is only {size} bytes", path.display());
    }
}

/// No serious or critical axe-core finding on the page shown now.
pub(crate) async fn assert_accessible(browser: &mut Browser, what: &str) {
    let findings = serious_findings(browser).await;
    assert!(
        findings.is_empty(),
        "axe-core finds serious problems on {what}:\n{findings:#?}"
    );
}

/// The page's width fits its viewport: nothing scrolls sideways.
pub(crate) async fn assert_no_sideways_scroll(browser: &mut Browser, what: &str) {
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
    assert_eq!(wide, viewport, "{what} scrolls sideways");
}

/// Tab through the page from its top and return, for each control focused, its description
/// and whether its focus is drawn (an outline a person can see).
pub(crate) async fn tab_through(browser: &mut Browser, presses: usize) -> Vec<(String, bool)> {
    browser
        .eval(
            "document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0); true",
        )
        .await;
    let mut seen = Vec::new();
    for _ in 0..presses {
        browser.press_tab().await;
        let focused = browser
            .eval(
                "(() => { const el = document.activeElement; if (!el || el === document.body) return null; \
                 const style = getComputedStyle(el); \
                 const drawn = style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0; \
                 const name = (el.getAttribute('aria-label') || el.textContent || el.value || '').replace(/\\s+/g, ' ').trim(); \
                 return [el.tagName.toLowerCase() + ': ' + name.slice(0, 80), drawn]; })()",
            )
            .await;
        if let Value::Array(pair) = focused {
            seen.push((
                pair[0].as_str().unwrap_or_default().to_owned(),
                pair[1].as_bool().unwrap_or(false),
            ));
        }
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_review_item_shows_the_question_the_chosen_option_the_words_and_the_record() {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    let scene = review_scene(&app).await;
    let mut browser = signed_in(&app, "root", "/admin").await;
    let mut admin = AdminPage(&mut browser);
    let text = admin.review_text(&scene.contribution).await;
    for expected in [
        "Which date?",
        "Early access or 1.0?",
        "What the agent found",
        "Steam lists both an early-access date and a 1.0 date.",
        "Chose 1.0",
        "The 1.0 date is the release.",
        "By ana",
        "verified 1, rejected 1, pending 1, reversed 1",
        "Answered 1 h 30 min after the question arrived",
        "ben: Not enough context",
        "Which store's date?",
    ] {
        assert!(text.contains(expected), "no {expected:?} in:\n{text}");
    }
    // Every option is listed; the chosen one is marked in words, not only by style.
    let item = AdminPage::review_item(&scene.contribution);
    let options = browser
        .eval(&format!(
            "[...{item}.querySelectorAll('.options-list li')].map(li => [li.innerText.trim(), li.classList.contains('chosen')])"
        ))
        .await;
    assert_eq!(
        options,
        json!([["Early access", false], ["1.0 ✓ chosen", true]]),
        "{options}"
    );
    assert_accessible(&mut browser, "the admin page").await;
    browser
        .eval(&format!("{item}.scrollIntoView(); true"))
        .await;
    keep_screenshot(&mut browser, "admin-review-queue", false).await;

    // The item links to the question page, where an admin also sees the deliveries.
    browser
        .click(&link_in(&item, "Open the question page: Which date?"))
        .await;
    let path = QuestionPage::path("games", scene.question);
    browser
        .wait_for(
            &format!("location.pathname === {path:?}"),
            "the question page",
        )
        .await;
    let mut page = QuestionPage(&mut browser);
    page.wait_until_loaded().await;
    browser
        .wait_for(
            "document.querySelector('.question-page table.deliveries tr[data-delivery-id]')",
            "the question's deliveries",
        )
        .await;
    let deliveries = QuestionPage(&mut browser)
        .section("Deliveries to the agent")
        .await;
    assert!(deliveries.contains("The answer"), "{deliveries}");
    for (width, height, mobile) in [(1280, 900, false), (390, 844, true)] {
        browser.viewport(width, height, mobile).await;
        assert_no_sideways_scroll(&mut browser, &format!("the question page at {width} px")).await;
        assert_accessible(
            &mut browser,
            &format!("the question page (admin) at {width} px"),
        )
        .await;
    }
    browser.viewport(1280, 900, false).await;
    keep_screenshot(&mut browser, "question-page", true).await;

    // Back on the admin page, the answer is verified with a note and leaves the queue.
    browser.goto(&app.url("/admin")).await;
    let mut admin = AdminPage(&mut browser);
    admin.review_text(&scene.contribution).await;
    browser
        .fill(
            &askloop_tests::browser::labelled_in(&item, "Note (optional)"),
            "Checked against the store page",
        )
        .await;
    browser
        .click(&askloop_tests::browser::button_in(&item, "Verify"))
        .await;
    AdminPage(&mut browser)
        .wait_for_notice("Verified: its points count now.")
        .await;
    browser
        .wait_for(&format!("!{item}"), "the verified item to leave the queue")
        .await;

    // On the question page an admin can reverse the verified answer, with a note for the agent.
    browser.goto(&app.url(&path)).await;
    QuestionPage(&mut browser).wait_until_loaded().await;
    let answer = "document.querySelector('.answers-list li:last-child')";
    browser
        .wait_for(
            &format!("{answer}.querySelector('.badge.status-verified')"),
            "the verified answer",
        )
        .await;
    browser
        .fill(
            &askloop_tests::browser::labelled_in(
                answer,
                "Why reverse (required; the answerer and the agent are told)",
            ),
            "The store moved the date",
        )
        .await;
    browser
        .click(&askloop_tests::browser::button_in(
            answer,
            "Reverse ana's answer",
        ))
        .await;
    browser
        .wait_for(
            &askloop_tests::browser::role(
                "status",
                "Reversed: it no longer counts, and the agent is told.",
            ),
            "the notice",
        )
        .await;
    browser
        .wait_for(
            &format!("{answer}.querySelector('.badge.status-reversed')"),
            "the answer shown reversed",
        )
        .await;
    let told = app.events_for_agent("expert_answer.rejected").await;
    assert!(
        told.iter().any(|e| e["questionId"] == json!(scene.question)
            && e["note"] == "The store moved the date"
            && e["previousReview"] == "verified"),
        "{told:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_reads_the_question_page_by_keyboard_and_screen_reader() {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    let scene = review_scene(&app).await;
    let path = QuestionPage::path("games", scene.question);
    let mut browser = signed_in(&app, "ben", &path).await;
    let mut page = QuestionPage(&mut browser);
    page.wait_until_loaded().await;
    let heading = browser.text("document.querySelector('main h1')").await;
    assert_eq!(heading, "Which date?");

    let answers = QuestionPage(&mut browser)
        .section("Answers and declines")
        .await;
    assert!(answers.contains("ben: Not enough context"), "{answers}");
    assert!(answers.contains("Which store's date?"), "{answers}");
    assert!(answers.contains("ana: Answered — 1.0 pending"), "{answers}");
    assert!(
        answers.contains("The 1.0 date is the release."),
        "{answers}"
    );
    let chosen = browser
        .text("document.querySelector('.options-list li.chosen')")
        .await;
    assert_eq!(chosen, "1.0 ✓ chosen by ana");

    // The timeline is the question's audit log, oldest first.
    let timeline = browser
        .eval("[...document.querySelectorAll('ol.timeline li')].map(l => l.dataset.action)")
        .await;
    assert_eq!(
        timeline,
        json!(["question.created", "question.declined", "question.answered"]),
        "{timeline}"
    );
    // Each entry reads as a sentence naming people by their handles.
    let said = browser
        .eval("[...document.querySelectorAll('ol.timeline li')].map(li => li.textContent.split(' · ')[0])")
        .await;
    assert_eq!(
        said,
        json!([
            "The agent asked",
            "ben declined: not enough context",
            "ana answered"
        ]),
        "{said}"
    );
    // Its budget entries: the bounty reserved at intake, then charged for the answer.
    let budget = browser
        .eval("[...document.querySelectorAll('table.budget-entries tbody tr')].map(r => [r.dataset.budgetKind, r.cells[2].textContent])")
        .await;
    assert_eq!(
        budget,
        json!([["reserve", "2.50 USD"], ["charge", "2.50 USD"]]),
        "{budget}"
    );
    // Deliveries are for admins: a member's page does not have them, nor asks for them.
    assert_eq!(
        browser
            .eval("!!document.querySelector('#deliveries-title')")
            .await,
        json!(false)
    );

    for (width, height, mobile) in [(1280, 900, false), (390, 844, true)] {
        browser.viewport(width, height, mobile).await;
        assert_no_sideways_scroll(&mut browser, &format!("the question page at {width} px")).await;
        assert_accessible(&mut browser, &format!("the question page at {width} px")).await;
    }

    // From the keyboard: every control is reached in turn, and each shows where focus is.
    browser.viewport(1280, 900, false).await;
    let focused = tab_through(&mut browser, 12).await;
    let names: Vec<&str> = focused.iter().map(|(name, _)| name.as_str()).collect();
    for wanted in ["a: ← Back to the queue", "summary: What the agent found"] {
        assert!(
            names.contains(&wanted),
            "{wanted} is not reached: {names:#?}"
        );
    }
    for (name, drawn) in &focused {
        assert!(drawn, "{name} has no visible focus");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_question_page_refuses_strangers_and_explains_a_wrong_address() {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    let scene = review_scene(&app).await;
    open_niche(&app.db, "roofing").await;
    operator(&app.db, "roofing", "cara").await;

    let path = QuestionPage::path("games", scene.question);
    let mut browser = signed_in(&app, "cara", &path).await;
    let refusal = QuestionPage(&mut browser).page_error().await;
    assert!(
        refusal.starts_with("Only the niche's active members and admins see its questions"),
        "{refusal}"
    );
    assert_eq!(
        browser
            .eval("document.body.innerText.includes('Early access or 1.0?')")
            .await,
        json!(false),
        "nothing of the question shows"
    );

    browser
        .goto(&app.url("/dashboard/niches/games/questions/not-a-number"))
        .await;
    let bad = QuestionPage(&mut browser).page_error().await;
    assert!(bad.contains("'not-a-number' is not a question id"), "{bad}");

    // An admin opening it under the wrong niche is told where it is.
    drop(browser);
    let wrong = QuestionPage::path("roofing", scene.question);
    let mut browser = signed_in(&app, "root", &wrong).await;
    let said = QuestionPage(&mut browser).page_error().await;
    assert!(said.contains("is not in “roofing”"), "{said}");
    browser
        .click(&askloop_tests::browser::link("Open it in Niche games"))
        .await;
    browser
        .wait_for(
            &format!(
                "location.pathname === {:?}",
                QuestionPage::path("games", scene.question)
            ),
            "the question's own page",
        )
        .await;
    QuestionPage(&mut browser).wait_until_loaded().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_waiting_questions_show_fifty_and_load_more_shows_the_rest_while_live() {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    operator(&app.db, "games", "ana").await;
    let ben = operator(&app.db, "games", "ben").await;
    let mut ids = Vec::new();
    for n in 0..60 {
        ids.push(app.ask("games", &format!("q-{n:02}")).await);
    }
    let mut browser = signed_in(&app, "ana", "/dashboard/niches/games/questions").await;
    let mut queue = QueuePage(&mut browser);
    queue.wait_for_card(ids[49], "the 50th card").await;
    assert_eq!(queue.card_count().await, 50);
    assert_eq!(
        browser
            .eval(&format!("!!{}", QueuePage::card(ids[50])))
            .await,
        json!(false)
    );
    // Each card links to its question's page.
    QueuePage(&mut browser).open(ids[0]).await;
    let href = browser
        .eval(&format!(
            "{}.querySelector('.question-link a').getAttribute('href')",
            QueuePage::card(ids[0])
        ))
        .await;
    assert_eq!(href, json!(QuestionPage::path("games", ids[0])));
    // Closed again: nothing of it is being worked on, so it simply leaves when settled.
    browser
        .click(&format!(
            "{}.querySelector('button.row-toggle')",
            QueuePage::card(ids[0])
        ))
        .await;

    browser.click(&button("Load more")).await;
    let mut queue = QueuePage(&mut browser);
    queue.wait_for_card(ids[59], "the 60th card").await;
    assert_eq!(queue.card_count().await, 60);
    browser
        .wait_for(
            &askloop_tests::browser::role(
                "status",
                "10 more questions loaded; that is every waiting question.",
            ),
            "the announcement of what was loaded",
        )
        .await;
    assert_eq!(
        browser.eval(&format!("!!{}", button("Load more"))).await,
        json!(false),
        "nothing more to load"
    );

    // Live changes merge into everything loaded: an arrival joins, a question settled by
    // someone else leaves, and the cards loaded with "Load more" stay.
    let arrived = app.ask("games", "q-60").await;
    let mut queue = QueuePage(&mut browser);
    queue.wait_for_card(arrived, "the live arrival").await;
    assert_eq!(queue.card_count().await, 61);
    act(
        &app,
        &ben,
        ids[0],
        json!({"kind": "ANSWERED", "optionId": "ea"}),
    )
    .await;
    let mut queue = QueuePage(&mut browser);
    queue
        .wait_for_card_to_leave(ids[0], "the question ben answered")
        .await;
    // The re-read that follows a removal asks for everything loaded, not the first 50.
    browser
        .wait_for(
            "document.querySelector('.settled li')",
            "the answered question under Settled",
        )
        .await;
    let mut queue = QueuePage(&mut browser);
    assert_eq!(queue.card_count().await, 60);
    queue.wait_for_card(ids[59], "the 60th card, still").await;
    assert_eq!(
        browser.eval(&format!("!!{}", button("Load more"))).await,
        json!(false)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_card_stays_readable_at_phone_width() {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    operator(&app.db, "games", "ana").await;
    let word = "W".repeat(400);
    let mut body = question_body("games", "hostile");
    body["payload"]["title"] = json!("invoice\u{202E}gnp.exe — which date?");
    body["payload"]["question"] = json!(format!("Which date ships? {word}"));
    let context: String = format!("{word}\n{}", "The store page says one thing. ".repeat(700))
        .chars()
        .take(20_000)
        .collect();
    assert_eq!(context.chars().count(), 20_000);
    body["payload"]["context"] = json!(context);
    let response = app
        .post_signed("/api/v1/internal/expert-questions", &body.to_string())
        .await;
    assert_eq!(response.status(), 201);
    let id = response.json::<Value>().await.expect("JSON")["question"]["id"]
        .as_i64()
        .expect("an id");

    let mut browser = signed_in(&app, "ana", "/dashboard/niches/games/questions").await;
    browser.viewport(390, 844, true).await;
    browser.reload().await;
    QueuePage(&mut browser)
        .wait_for_card(id, "the hostile card")
        .await;
    QueuePage(&mut browser).open(id).await;
    assert_no_sideways_scroll(&mut browser, "the queue at 390 px").await;
    let card = QueuePage::card(id);
    let title = browser.text(&format!("{card}.querySelector('h2')")).await;
    assert_eq!(title, "invoice[U+202E]gnp.exe — which date?");
    // The context is collapsed to its first lines until "Show all".
    let collapsed = browser
        .eval(&format!(
            "(() => {{ const q = {card}.querySelector('blockquote'); \
             return [q.classList.contains('collapsed'), q.getBoundingClientRect().height]; }})()"
        ))
        .await;
    assert_eq!(collapsed[0], json!(true), "{collapsed}");
    let height = collapsed[1].as_f64().unwrap_or(f64::MAX);
    assert!(height < 400.0, "the collapsed context is {height} px tall");
    assert_accessible(&mut browser, "the queue with a hostile card at 390 px").await;
    keep_screenshot(&mut browser, "hostile-card-390", true).await;
}

/// The accessibility check is not vacuous: on a page with an unlabelled field and an image
/// without words, axe-core reports both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_accessibility_check_finds_what_it_should() {
    let mut browser = Browser::start().await;
    browser
        .goto("data:text/html,<html lang=en><title>t</title><main><input type=text><img src=x></main></html>")
        .await;
    browser
        .wait_for("document.querySelector('input')", "the page")
        .await;
    let findings = serious_findings(&mut browser).await;
    let rules: Vec<&str> = findings.iter().map(|f| f.rule.as_str()).collect();
    assert!(rules.contains(&"label"), "{findings:#?}");
    assert!(rules.contains(&"image-alt"), "{findings:#?}");
}
