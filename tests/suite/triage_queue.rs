//! The triage queue (issue: the dashboard people live in): `Niche.queue` filters, sorts and
//! counts on both stores with its refusals; "My activity"; presence; and in a real Chromium the
//! compact queue of 60 questions with its URL-held filters, live arrivals that respect them,
//! counts in the heading and the title, the keys, a draft that survives a collision and a
//! reload, and the question page that answers and tells the truth.

use askloop_tests::answers::{answer_input, early_access};
use askloop_tests::browser::{Browser, button_in, labelled_in};
use askloop_tests::fixtures::{open_niche, question_body};
use askloop_tests::pages::{QueuePage, require_built_dashboard, signed_in};
use askloop_tests::people::{Person, operator, person};
use askloop_tests::{Backend, TestApp, error_code, on_both_backends};
use serde_json::{Value, json};

use crate::review_pages::assert_accessible;

const TRIAGE: &str = "query($sort: QueueSort, $urgency: Urgency, $kind: ExchangeKind, $hasBounty: Boolean, $search: String, $after: String, $first: Int) { niche(slug: \"games\") { waitingCounts { total high } queue(sort: $sort, urgency: $urgency, kind: $kind, hasBounty: $hasBounty, search: $search, after: $after, first: $first) { totalCount pageInfo { hasNextPage endCursor } nodes { externalId urgency bountyMinor } } } }";

/// Ask in `games` with these details; the question's id.
async fn ask(app: &TestApp, external_id: &str, title: &str, urgency: &str, bounty: i64) -> i64 {
    let mut body = question_body("games", external_id);
    body["payload"]["title"] = json!(title);
    body["payload"]["urgency"] = json!(urgency);
    if bounty > 0 {
        body["payload"]["bountyMinor"] = json!(bounty);
    }
    let response = app
        .post_signed("/api/v1/internal/expert-questions", &body.to_string())
        .await;
    let status = response.status();
    let body: Value = response.json().await.expect("JSON");
    assert_eq!(status, 201, "{body}");
    body["question"]["id"].as_i64().expect("an id")
}

fn external_ids(body: &Value) -> Vec<String> {
    body["data"]["niche"]["queue"]["nodes"]
        .as_array()
        .map(|nodes| {
            nodes
                .iter()
                .map(|n| n["externalId"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

async fn the_queue_filters_sorts_counts_and_pages_in_each_sort(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    ask(&app, "a", "Roof flashing on a 100% pitch", "high", 0).await;
    ask(&app, "b", "Which engine for a roguelike?", "normal", 0).await;
    ask(&app, "c", "ROOF tiles or shingles", "low", 0).await;
    ask(&app, "d", "Steam page copy", "high", 0).await;
    let q = |vars: Value| app.graphql(Some(&ana.token), TRIAGE, vars);

    let all = q(json!({})).await;
    assert_eq!(
        all["data"]["niche"]["waitingCounts"],
        json!({"total": 4, "high": 2}),
        "{all}"
    );
    assert_eq!(all["data"]["niche"]["queue"]["totalCount"], 4, "{all}");
    // Most urgent first, then expiring soonest: all expire alike, so in the order asked.
    assert_eq!(external_ids(&all), ["a", "d", "b", "c"]);
    let expiring = q(json!({"sort": "EXPIRING"})).await;
    assert_eq!(external_ids(&expiring), ["a", "b", "c", "d"]);
    let newest = q(json!({"sort": "NEWEST"})).await;
    assert_eq!(external_ids(&newest), ["d", "c", "b", "a"]);
    let high = q(json!({"urgency": "HIGH"})).await;
    assert_eq!(external_ids(&high), ["a", "d"]);
    assert_eq!(high["data"]["niche"]["queue"]["totalCount"], 2);
    // Any case; LIKE's wildcards are taken literally.
    let roof = q(json!({"search": " roof "})).await;
    assert_eq!(external_ids(&roof), ["a", "c"], "{roof}");
    let percent = q(json!({"search": "100%"})).await;
    assert_eq!(external_ids(&percent), ["a"]);
    let underscore = q(json!({"search": "_"})).await;
    assert_eq!(external_ids(&underscore), Vec::<String>::new());
    let tasks = q(json!({"kind": "TASK"})).await;
    assert_eq!(tasks["data"]["niche"]["queue"]["totalCount"], 0);
    let no_bounty = q(json!({"hasBounty": false})).await;
    assert_eq!(no_bounty["data"]["niche"]["queue"]["totalCount"], 4);

    // Pages by cursor in every sort, each question once.
    for sort in ["URGENCY", "EXPIRING", "NEWEST", "BOUNTY"] {
        let mut seen = Vec::new();
        let mut after = Value::Null;
        loop {
            let page = q(json!({"sort": sort, "first": 3, "after": after})).await;
            assert_eq!(page["data"]["niche"]["queue"]["totalCount"], 4, "{page}");
            seen.extend(external_ids(&page));
            let info = &page["data"]["niche"]["queue"]["pageInfo"];
            if info["hasNextPage"] != true {
                break;
            }
            after = info["endCursor"].clone();
        }
        seen.sort();
        assert_eq!(seen, ["a", "b", "c", "d"], "{sort}");
    }
    // A cursor reads back only in its own sort; bad input is refused, changing nothing.
    let first = q(json!({"sort": "NEWEST", "first": 1})).await;
    let cursor = first["data"]["niche"]["queue"]["pageInfo"]["endCursor"].clone();
    for vars in [
        json!({"sort": "EXPIRING", "after": cursor}),
        json!({"after": "q1.2"}),
        json!({"search": "x".repeat(201)}),
        json!({"search": "a\u{7}b"}),
        json!({"first": 0}),
    ] {
        let body = q(vars.clone()).await;
        assert_eq!(error_code(&body), Some("BAD_USER_INPUT"), "{vars} → {body}");
    }
    // Only the niche's members and admins.
    let stranger = person(&app.db, "zed", false).await;
    let body = app.graphql(Some(&stranger.token), TRIAGE, json!({})).await;
    assert_eq!(error_code(&body), Some("FORBIDDEN"), "{body}");
    let body = app.graphql(None, TRIAGE, json!({})).await;
    assert!(error_code(&body).is_some(), "{body}");
}

const ACTIVITY: &str = "query($after: String) { myActivity(first: 2, after: $after) { pageInfo { hasNextPage endCursor } nodes { nicheSlug answer { kind review } question { externalId status } } } }";

async fn my_activity_lists_answers_and_declines_with_their_state(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let q1 = ask(&app, "q1", "One", "normal", 0).await;
    let q2 = ask(&app, "q2", "Two", "normal", 0).await;
    let q3 = ask(&app, "q3", "Three", "normal", 0).await;
    app.answer(&ana.token, early_access(q1, Some("Ship early.")))
        .await;
    app.answer(
        &ana.token,
        answer_input(q2, "INSUFFICIENT_CONTEXT", None, None),
    )
    .await;
    app.answer(
        &ana.token,
        answer_input(q3, "NEEDS_RESEARCH", None, Some("Check the store page.")),
    )
    .await;
    let page = app.graphql(Some(&ana.token), ACTIVITY, json!({})).await;
    let nodes = page["data"]["myActivity"]["nodes"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(nodes.len(), 2, "{page}");
    assert_eq!(nodes[0]["answer"]["kind"], "NEEDS_RESEARCH");
    assert_eq!(nodes[0]["question"]["status"], "RESEARCHING");
    assert_eq!(nodes[1]["answer"]["kind"], "INSUFFICIENT_CONTEXT");
    assert_eq!(nodes[1]["question"]["status"], "OPEN");
    let cursor = page["data"]["myActivity"]["pageInfo"]["endCursor"].clone();
    let rest = app
        .graphql(Some(&ana.token), ACTIVITY, json!({"after": cursor}))
        .await;
    let nodes = rest["data"]["myActivity"]["nodes"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(nodes.len(), 1, "{rest}");
    assert_eq!(nodes[0]["answer"]["kind"], "ANSWERED");
    assert_eq!(nodes[0]["answer"]["review"], "PENDING");
    assert_eq!(nodes[0]["question"]["status"], "ANSWERED");
    assert_eq!(nodes[0]["nicheSlug"], "games");
    let bad = app
        .graphql(Some(&ana.token), ACTIVITY, json!({"after": "nope"}))
        .await;
    assert_eq!(error_code(&bad), Some("BAD_USER_INPUT"), "{bad}");
    let anonymous = app.graphql(None, ACTIVITY, json!({})).await;
    assert!(error_code(&anonymous).is_some(), "{anonymous}");
}

on_both_backends!(
    the_queue_filters_sorts_counts_and_pages_in_each_sort,
    my_activity_lists_answers_and_declines_with_their_state,
);

const MARK: &str =
    "mutation($id: ID!, $open: Boolean!) { answering(questionId: $id, open: $open) }";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_members_may_say_they_are_answering_a_waiting_question() {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let zed = person(&app.db, "zed", false).await;
    let id = ask(&app, "p1", "Presence", "normal", 0).await;
    let ok = app
        .graphql(
            Some(&ana.token),
            MARK,
            json!({"id": id.to_string(), "open": true}),
        )
        .await;
    assert_eq!(ok["data"]["answering"], true, "{ok}");
    let refused = app
        .graphql(
            Some(&zed.token),
            MARK,
            json!({"id": id.to_string(), "open": true}),
        )
        .await;
    assert_eq!(error_code(&refused), Some("FORBIDDEN"), "{refused}");
    let bad = app
        .graphql(Some(&ana.token), MARK, json!({"id": "x", "open": true}))
        .await;
    assert_eq!(error_code(&bad), Some("BAD_USER_INPUT"), "{bad}");
    app.answer(&ana.token, early_access(id, None)).await;
    let settled = app
        .graphql(
            Some(&ana.token),
            MARK,
            json!({"id": id.to_string(), "open": true}),
        )
        .await;
    assert_eq!(error_code(&settled), Some("BAD_USER_INPUT"), "{settled}");
    let closed = app
        .graphql(Some(&ana.token), MARK, json!({"id": "0", "open": false}))
        .await;
    assert_eq!(closed["data"]["answering"], true, "{closed}");
}

/// The rows on the queue page now, as their question ids.
async fn row_ids(browser: &mut Browser) -> Vec<i64> {
    browser
        .eval("[...document.querySelectorAll('article.question:not(.done)')].map(r => Number(r.dataset.questionId))")
        .await
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_i64).collect())
        .unwrap_or_default()
}

async fn wait_for_rows(browser: &mut Browser, count: usize, what: &str) {
    browser
        .wait_for(
            &format!("document.querySelectorAll('article.question:not(.done)').length === {count}"),
            what,
        )
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_waiting_questions_make_a_short_queue_that_filters_sorts_and_counts_live() {
    require_built_dashboard();
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let mut ids = Vec::new();
    for i in 0..60 {
        let urgency = if i % 12 == 0 { "high" } else { "normal" };
        let title = if i % 10 == 3 {
            format!("Roof question {i}")
        } else {
            format!("Question {i}")
        };
        ids.push(ask(&app, &format!("s{i}"), &title, urgency, 0).await);
    }
    let mut browser = signed_in(&app, "ana", "/dashboard/niches/games/questions").await;
    browser.viewport(1280, 800, false).await;
    browser.reload().await;
    browser
        .wait_for("document.querySelector('.counts') && document.querySelector('.counts').textContent === '60 waiting · 5 high'", "the counts")
        .await;
    wait_for_rows(&mut browser, 50, "the first 50 rows").await;
    browser
        .wait_for(
            "document.title === '(60) Niche games — askloop'",
            "the count in the title",
        )
        .await;
    let height = browser
        .eval("document.documentElement.scrollHeight")
        .await
        .as_i64()
        .unwrap_or(i64::MAX);
    assert!(height < 4 * 800, "the queue of 50 rows is {height} px tall");
    browser.screenshot("triage-queue-1280").await;
    // Every width and colour scheme: no serious or critical axe finding, nothing sideways.
    for (width, height, mobile) in [(1280, 800, false), (390, 844, true)] {
        browser.viewport(width, height, mobile).await;
        for scheme in ["light", "dark"] {
            browser
                .call(
                    "Emulation.setEmulatedMedia",
                    json!({"features": [{"name": "prefers-color-scheme", "value": scheme}]}),
                )
                .await;
            assert_accessible(
                &mut browser,
                &format!("the triage queue at {width} px, {scheme}"),
            )
            .await;
            crate::review_pages::assert_no_sideways_scroll(&mut browser, "the triage queue").await;
        }
        if mobile {
            browser.screenshot("triage-queue-390-dark").await;
        }
    }
    browser
        .call(
            "Emulation.setEmulatedMedia",
            json!({"features": [{"name": "prefers-color-scheme", "value": "light"}]}),
        )
        .await;
    browser.viewport(1280, 800, false).await;

    // Filter by urgency: the rows and the URL change.
    browser
        .eval("(() => { const s = document.querySelector('select[name=urgency]'); s.value = 'high'; s.dispatchEvent(new Event('change', {bubbles: true})); return true; })()")
        .await;
    wait_for_rows(&mut browser, 5, "the five high rows").await;
    let url = browser.eval("location.search").await;
    assert_eq!(url, json!("?urgency=high"));
    // A high question arrives live into the filtered view; a normal one does not.
    let normal = ask(&app, "late-n", "Late normal", "normal", 0).await;
    let high = ask(&app, "late-h", "Late high", "high", 0).await;
    QueuePage(&mut browser)
        .wait_for_card(high, "the live high arrival")
        .await;
    assert_eq!(browser.eval(&QueuePage::card(normal)).await, Value::Null);
    browser
        .wait_for(
            "document.querySelector('.counts').textContent === '62 waiting · 6 high'",
            "the counts after arrivals",
        )
        .await;
    browser
        .wait_for(
            "document.title === '(62) Niche games — askloop'",
            "the title after arrivals",
        )
        .await;
    // Answered elsewhere: the count goes down.
    app.answer(&ana.token, early_access(ids[1], None)).await;
    browser
        .wait_for(
            "document.querySelector('.counts').textContent === '61 waiting · 6 high'",
            "the counts after an answer",
        )
        .await;

    // Sort by newest, then search titles: each changes the rows and the URL.
    browser
        .goto(&app.url("/dashboard/niches/games/questions?sort=newest"))
        .await;
    browser
        .wait_for(&format!("document.querySelector('article.question:not(.done)') && document.querySelector('article.question:not(.done)').dataset.questionId === '{high}'"), "the newest first")
        .await;
    browser
        .fill("document.querySelector('input[name=q]')", "roof")
        .await;
    browser
        .click(&button_in(
            "document.querySelector('form.filters')",
            "Search",
        ))
        .await;
    wait_for_rows(&mut browser, 6, "the six roof questions").await;
    let url = browser.eval("location.search").await;
    assert_eq!(url, json!("?sort=newest&q=roof"));
    let rows = row_ids(&mut browser).await;
    let mut sorted = rows.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(rows, sorted, "newest first");

    // The keys: j, j, Enter, (choose), a answers the second row.
    browser
        .goto(&app.url("/dashboard/niches/games/questions?sort=newest"))
        .await;
    wait_for_rows(&mut browser, 50, "the rows again").await;
    let second = row_ids(&mut browser).await[1];
    browser
        .eval("document.activeElement && document.activeElement.blur(); true")
        .await;
    for key in ["j", "j"] {
        browser.press_key(key).await;
    }
    browser.press_key("Enter").await;
    let card = QueuePage::card(second);
    browser
        .wait_for(
            &format!("{card}.querySelector('form.answer')"),
            "the second row open",
        )
        .await;
    browser.click(&labelled_in(&card, "Early access")).await;
    browser.press_key("a").await;
    QueuePage(&mut browser)
        .wait_for_card_to_leave(second, "the second row answered")
        .await;
    browser.press_key("?").await;
    browser
        .wait_for("document.querySelector('.key-list') && document.querySelector('.key-list').textContent.includes('Next / previous question')", "the key list")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draft_survives_someone_else_answering_and_a_reload() {
    require_built_dashboard();
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    operator(&app.db, "games", "ana").await;
    operator(&app.db, "games", "mara").await;
    let mut ids = Vec::new();
    for i in 0..12 {
        ids.push(
            ask(
                &app,
                &format!("c{i}"),
                &format!("Collision {i}"),
                "normal",
                0,
            )
            .await,
        );
    }
    let target = ids[8];
    let mut ana = signed_in(&app, "ana", "/dashboard/niches/games/questions").await;
    ana.viewport(1280, 800, false).await;
    ana.reload().await;
    let mut page = QueuePage(&mut ana);
    page.write(target, "It depends on the pitch.").await;
    page.choose(target, "Early access").await;
    // Mara opens the same question: ana sees her answering.
    let mut mara = signed_in(&app, "mara", "/dashboard/niches/games/questions").await;
    QueuePage(&mut mara).open(target).await;
    ana.wait_for(
        &format!("{}.querySelector('.presence-mark, .presence') && {}.textContent.includes('mara is answering')", QueuePage::card(target), QueuePage::card(target)),
        "mara is answering",
    )
    .await;
    // Ana keeps typing, scrolled so the card is in view; Mara answers.
    let field = labelled_in(&QueuePage::card(target), "Your answer");
    ana.eval(&format!(
        "{field}.scrollIntoView({{block: 'center'}}); {field}.focus(); true"
    ))
    .await;
    let before = ana.eval("window.scrollY").await.as_f64().unwrap_or(-1.0);
    QueuePage(&mut mara).choose(target, "1.0").await;
    QueuePage(&mut mara).press(target, "Answer").await;
    let card = QueuePage::card(target);
    ana.wait_for(
        &format!("{card}.querySelector('.settled-here') && {card}.querySelector('.settled-here').textContent.includes('Answered by mara')"),
        "the card saying mara answered",
    )
    .await;
    let kept = ana.eval(&format!("{field}.value")).await;
    assert_eq!(kept, json!("It depends on the pitch."));
    assert!(
        ana.eval(&format!("{card}.querySelector('.settled-here')"))
            .await
            != Value::Null
    );
    let after = ana.eval("window.scrollY").await.as_f64().unwrap_or(-100.0);
    assert!(
        (after - before).abs() <= 10.0,
        "the page moved from {before} to {after}"
    );
    let on_body = ana.eval("document.activeElement === document.body").await;
    assert_eq!(on_body, json!(false), "focus stays off the body");
    let read_only = ana.eval(&format!("{field}.readOnly")).await;
    assert_eq!(read_only, json!(true));
    ana.screenshot("collided-draft").await;
    // Closing it takes it away.
    ana.click(&button_in(&card, "Close this question")).await;
    QueuePage(&mut ana)
        .wait_for_card_to_leave(target, "the closed card")
        .await;

    // A draft not sent is restored after a reload.
    let other = ids[2];
    QueuePage(&mut ana).write(other, "Half a thought").await;
    ana.reload().await;
    QueuePage(&mut ana)
        .wait_for_card(other, "the row after reload")
        .await;
    ana.wait_for(
        &format!("{}.querySelector('.badge.draft')", QueuePage::card(other)),
        "the draft badge",
    )
    .await;
    QueuePage(&mut ana).open(other).await;
    assert_eq!(QueuePage(&mut ana).written(other).await, "Half a thought");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_questions_page_answers_it_and_a_reopened_one_says_so() {
    require_built_dashboard();
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    let mara = operator(&app.db, "games", "mara").await;
    operator(&app.db, "games", "ana").await;
    let boss: Person = person(&app.db, "boss", true).await;
    let answered_here = ask(&app, "qp1", "Answer me here", "normal", 0).await;
    let reopened = ask(&app, "qp2", "Reopen me", "normal", 0).await;

    // Answered from its own page.
    let mut ana = signed_in(
        &app,
        "ana",
        &format!("/dashboard/niches/games/questions/{answered_here}"),
    )
    .await;
    let card = "document.querySelector('section.act')";
    ana.wait_for(
        &format!("{card} && {card}.querySelector('form.answer')"),
        "the answer form on the question page",
    )
    .await;
    ana.click(&labelled_in(card, "Early access")).await;
    ana.click(&button_in(card, "Answer")).await;
    ana.wait_for(
        "document.querySelector('main p.notice[role=status]')",
        "the notice",
    )
    .await;
    ana.wait_for(
        "!document.querySelector('section.act')",
        "the form gone once answered",
    )
    .await;
    assert_accessible(&mut ana, "the question page after answering").await;

    // Mara answers the other; an admin rejects it; its page says so.
    let answered = app
        .answer(&mara.token, early_access(reopened, Some("Ship early.")))
        .await;
    assert_eq!(
        answered["data"]["answerQuestion"]["contributionStatus"], "PENDING",
        "{answered}"
    );
    let contribution = app
        .graphql(Some(&boss.token), "query { reviewQueue { id } }", json!({}))
        .await;
    let id = contribution["data"]["reviewQueue"][0]["id"].clone();
    let rejected = app
        .graphql(
            Some(&boss.token),
            "mutation($id: ID!) { rejectContribution(id: $id, note: \"Not sourced\") { status } }",
            json!({"id": id}),
        )
        .await;
    assert_eq!(
        rejected["data"]["rejectContribution"]["status"], "REJECTED",
        "{rejected}"
    );
    ana.goto(&app.url(&format!("/dashboard/niches/games/questions/{reopened}")))
        .await;
    ana.wait_for("document.querySelector('.answers-list li')", "the answers")
        .await;
    let meta = ana
        .eval("document.querySelector('article.question .meta').innerText")
        .await;
    let meta = meta.as_str().unwrap_or_default().to_owned();
    assert!(meta.contains("reopened"), "{meta}");
    let answers = ana
        .eval("document.querySelector('.answers-list').innerText")
        .await;
    assert!(
        answers.as_str().unwrap_or_default().contains("rejected"),
        "{answers}"
    );
    let chosen = ana
        .eval("document.querySelectorAll('.chosen-mark').length")
        .await;
    assert_eq!(chosen, json!(0), "a rejected answer is no longer 'chosen'");
    let timeline = ana
        .eval("document.querySelector('.timeline').innerText")
        .await;
    let timeline = timeline.as_str().unwrap_or_default().to_owned();
    assert!(timeline.contains("The agent asked"), "{timeline}");
    assert!(timeline.contains("mara answered"), "{timeline}");
    assert!(
        ana.eval("document.querySelector('section.act form.answer')")
            .await
            != Value::Null,
        "a reopened question can be answered from its page"
    );
}

/// No serious or critical axe finding on the pages this change made or reworked, at desktop and
/// phone widths, in both colour schemes: an open question's page, a settled one's, My activity
/// and the knowledge page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_question_activity_and_knowledge_pages_pass_axe_in_both_schemes() {
    require_built_dashboard();
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    let mara = operator(&app.db, "games", "mara").await;
    let open = ask(&app, "ax1", "Which build goes to review?", "high", 0).await;
    let settled = ask(&app, "ax2", "Which engine for the port?", "normal", 0).await;
    app.answer(
        &mara.token,
        early_access(settled, Some("The one we ship on.")),
    )
    .await;
    app.answer(
        &mara.token,
        answer_input(open, "INSUFFICIENT_CONTEXT", None, None),
    )
    .await;
    // An admin verifies the settled answer: it becomes a knowledge entry with a page of its own.
    let root = person(&app.db, "root", true).await;
    let queue = app
        .graphql(Some(&root.token), "query { reviewQueue { id } }", json!({}))
        .await;
    let contribution = queue["data"]["reviewQueue"][0]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let verified = app.verify(&root.token, &contribution).await;
    assert!(verified["errors"].is_null(), "{verified}");
    let entries = app
        .graphql(
            Some(&mara.token),
            "query { knowledge(nicheSlug: \"games\") { nodes { id } } }",
            json!({}),
        )
        .await;
    let entry = entries["data"]["knowledge"]["nodes"][0]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(!entry.is_empty(), "{entries}");

    // Signed out: the sign-in page, in both schemes and widths.
    let mut signed_out = askloop_tests::pages::browser().await;
    signed_out.goto(&app.url("/login")).await;
    signed_out
        .wait_for("document.querySelector('main h1')", "the sign-in page")
        .await;
    for (width, height, mobile) in [(1280, 800, false), (390, 844, true)] {
        signed_out.viewport(width, height, mobile).await;
        for scheme in ["light", "dark"] {
            signed_out
                .call(
                    "Emulation.setEmulatedMedia",
                    json!({"features": [{"name": "prefers-color-scheme", "value": scheme}]}),
                )
                .await;
            assert_accessible(&mut signed_out, &format!("/login at {width} px, {scheme}")).await;
        }
    }

    let mut browser = signed_in(&app, "mara", "/dashboard/activity").await;
    for path in [
        format!("/dashboard/niches/games/questions/{open}"),
        format!("/dashboard/niches/games/questions/{settled}"),
        "/dashboard/activity".to_owned(),
        "/dashboard/niches/games/knowledge".to_owned(),
        format!("/dashboard/niches/games/knowledge/{entry}"),
    ] {
        browser.goto(&app.url(&path)).await;
        browser
            .wait_for(
                "document.querySelector('main h1')",
                &format!("{path} loaded"),
            )
            .await;
        for (width, height, mobile) in [(1280, 800, false), (390, 844, true)] {
            browser.viewport(width, height, mobile).await;
            for scheme in ["light", "dark"] {
                browser
                    .call(
                        "Emulation.setEmulatedMedia",
                        json!({"features": [{"name": "prefers-color-scheme", "value": scheme}]}),
                    )
                    .await;
                assert_accessible(&mut browser, &format!("{path} at {width} px, {scheme}")).await;
            }
        }
    }
    // My activity names both, with where each stands.
    browser.goto(&app.url("/dashboard/activity")).await;
    browser
        .wait_for(
            "document.querySelectorAll('.activity-list li').length === 2",
            "two entries",
        )
        .await;
    let text = browser
        .eval("document.querySelector('.activity-list').innerText")
        .await;
    let text = text.as_str().unwrap_or_default();
    assert!(text.contains("Declined: not enough context"), "{text}");
    assert!(text.contains("Answered"), "{text}");
    assert!(text.contains("verified"), "{text}");
    browser
        .wait_for(
            "document.title === 'My activity — askloop'",
            "the page's title",
        )
        .await;
}
