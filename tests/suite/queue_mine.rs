//! A queue that is mine (issue 56): `Niche.myParts` and `waitingCounts.needsMe` on both stores,
//! with who may read them; the default sort (most urgent, then expiring soonest) and its
//! cursor; and in a real Chromium: a decline that, after a reload, sits under "Handled by you"
//! while the heading, the document title and the niches page agree on what needs me; research
//! sent back that comes back live as "research is back" with the findings first; a card settled
//! by someone else that turns read-only at once; a 201-character search from the URL that keeps
//! the page and its filters; and the keys (`/`, `u`, `Esc`, Ctrl+`Enter`).

use askloop_tests::answers::{answer_input, early_access};
use askloop_tests::browser::{Browser, button_in, labelled_in};
use askloop_tests::fixtures::{open_niche, question_body};
use askloop_tests::pages::{QueuePage, require_built_dashboard, signed_in};
use askloop_tests::people::{operator, person};
use askloop_tests::{Backend, TestApp, error_code, on_both_backends};
use serde_json::{Value, json};

use crate::review_pages::{assert_accessible, assert_no_sideways_scroll};

const MINE: &str = "query { niche(slug: \"games\") { waitingCounts { total high needsMe needsMeHigh } myParts { questionId part needsMe round } } awaitingMeByNiche { niche { slug } waitingCount } }";

const RESEARCH: &str = "/api/v1/internal/research-results";

/// Ask in `games` with this title and urgency; the question's id.
async fn ask(app: &TestApp, external_id: &str, title: &str, urgency: &str) -> i64 {
    let mut body = question_body("games", external_id);
    body["payload"]["title"] = json!(title);
    body["payload"]["urgency"] = json!(urgency);
    let response = app
        .post_signed("/api/v1/internal/expert-questions", &body.to_string())
        .await;
    let status = response.status();
    let body: Value = response.json().await.expect("JSON");
    assert_eq!(status, 201, "{body}");
    body["question"]["id"].as_i64().expect("an id")
}

/// The agent's research for question `external_id` comes back.
async fn research_back(app: &TestApp, external_id: &str, findings: &str) {
    let body =
        json!({"nicheSlug": "games", "externalId": external_id, "context": findings}).to_string();
    let response = app.post_signed(RESEARCH, &body).await;
    assert_eq!(response.status(), 200, "{:?}", response.text().await);
}

/// `myParts` as (question id, part) pairs, sorted.
fn parts(body: &Value) -> Vec<(i64, String)> {
    let mut parts: Vec<(i64, String)> = body["data"]["niche"]["myParts"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|p| {
                    (
                        p["questionId"]
                            .as_str()
                            .and_then(|id| id.parse().ok())
                            .unwrap_or(-1),
                        p["part"].as_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    parts.sort();
    parts
}

fn needs_me(body: &Value) -> i64 {
    body["data"]["niche"]["waitingCounts"]["needsMe"]
        .as_i64()
        .unwrap_or(-1)
}

fn awaiting_count(body: &Value) -> i64 {
    body["data"]["awaitingMeByNiche"][0]["waitingCount"]
        .as_i64()
        .unwrap_or(0)
}

async fn my_parts_and_the_needs_me_count_follow_what_i_did(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let bo = operator(&app.db, "games", "bo").await;
    let root = person(&app.db, "root", true).await;
    let zed = person(&app.db, "zed", false).await;
    let declined = ask(&app, "d", "Declined by ana", "normal").await;
    let sent = ask(&app, "s", "Sent back by ana", "normal").await;
    let rejected = ask(&app, "r", "Answered by ana, rejected", "normal").await;
    let fresh = ask(&app, "f", "Untouched", "high").await;

    let before = app.graphql(Some(&ana.token), MINE, json!({})).await;
    assert!(before["errors"].is_null(), "{before}");
    assert_eq!(needs_me(&before), 4, "{before}");
    assert_eq!(parts(&before), Vec::<(i64, String)>::new());

    for (id, kind, body) in [
        (declined, "INSUFFICIENT_CONTEXT", None),
        (sent, "NEEDS_RESEARCH", Some("Check the credits screen.")),
    ] {
        let done = app
            .answer(&ana.token, answer_input(id, kind, None, body))
            .await;
        assert!(done["errors"].is_null(), "{done}");
    }
    let answered = app.answer(&ana.token, early_access(rejected, None)).await;
    assert!(answered["errors"].is_null(), "{answered}");
    app.decide_newest_contribution(&root.token, "rejectContribution", Some("Wrong date."))
        .await;

    let hers = app.graphql(Some(&ana.token), MINE, json!({})).await;
    assert!(hers["errors"].is_null(), "{hers}");
    assert_eq!(
        parts(&hers),
        vec![
            (declined, "DECLINED".to_owned()),
            (sent, "SENT_BACK".to_owned()),
            (rejected, "REJECTED".to_owned()),
        ]
    );
    assert_eq!(
        hers["data"]["niche"]["waitingCounts"],
        json!({"total": 4, "high": 1, "needsMe": 1, "needsMeHigh": 1}),
    );
    // The niches page counts the same thing.
    assert_eq!(awaiting_count(&hers), 1, "{hers}");
    assert!(
        hers["data"]["niche"]["myParts"]
            .as_array()
            .is_some_and(|l| l.iter().all(|p| p["needsMe"] == false)),
        "{hers}"
    );

    // Each person's parts are their own: bo did nothing, so everything needs him.
    let his = app.graphql(Some(&bo.token), MINE, json!({})).await;
    assert_eq!(parts(&his), Vec::<(i64, String)>::new());
    assert_eq!(needs_me(&his), 4, "{his}");
    assert_eq!(awaiting_count(&his), 4, "{his}");

    // The agent's research comes back: the question sent back needs ana again.
    research_back(&app, "s", "The credits say July.").await;
    let back = app.graphql(Some(&ana.token), MINE, json!({})).await;
    assert_eq!(
        parts(&back),
        vec![
            (declined, "DECLINED".to_owned()),
            (sent, "RESEARCH_BACK".to_owned()),
            (rejected, "REJECTED".to_owned()),
        ]
    );
    let returned = back["data"]["niche"]["myParts"]
        .as_array()
        .and_then(|l| {
            l.iter()
                .find(|p| p["questionId"] == json!(sent.to_string()))
        })
        .cloned()
        .unwrap_or_default();
    assert_eq!(returned["needsMe"], true, "{back}");
    assert_eq!(returned["round"], 1, "{back}");
    assert_eq!(needs_me(&back), 2, "{back}");
    assert_eq!(awaiting_count(&back), 2, "{back}");

    // Settled questions leave every list.
    let settled = app.answer(&bo.token, early_access(fresh, None)).await;
    assert!(settled["errors"].is_null(), "{settled}");
    let after = app.graphql(Some(&ana.token), MINE, json!({})).await;
    assert_eq!(needs_me(&after), 1, "{after}");

    // Who may read them: members and admins, each about themselves; nobody else.
    let admin = app.graphql(Some(&root.token), MINE, json!({})).await;
    assert!(admin["errors"].is_null(), "{admin}");
    assert_eq!(parts(&admin), Vec::<(i64, String)>::new());
    let outsider = app
        .graphql(
            Some(&zed.token),
            "query { niche(slug: \"games\") { myParts { questionId } } }",
            json!({}),
        )
        .await;
    assert_eq!(error_code(&outsider), Some("FORBIDDEN"), "{outsider}");
    let counts = app
        .graphql(
            Some(&zed.token),
            "query { niche(slug: \"games\") { waitingCounts { needsMe } } }",
            json!({}),
        )
        .await;
    assert_eq!(error_code(&counts), Some("FORBIDDEN"), "{counts}");
    let nobody = app
        .graphql(
            None,
            "query { niche(slug: \"games\") { myParts { questionId } } }",
            json!({}),
        )
        .await;
    assert!(
        matches!(error_code(&nobody), Some("UNAUTHENTICATED" | "FORBIDDEN")),
        "{nobody}"
    );
}

const SORTED: &str = "query($sort: QueueSort, $after: String, $first: Int) { niche(slug: \"games\") { queue(sort: $sort, after: $after, first: $first) { pageInfo { hasNextPage endCursor } nodes { externalId } } } }";

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

async fn the_default_sort_is_urgency_then_time_left_and_pages_by_its_cursor(app: TestApp) {
    use entity::agent_questions;
    use sea_orm::{ActiveModelTrait, EntityTrait, Set};
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    // Asked in this order; then each given its own time left.
    let asked = [
        ("n-late", "normal", 50),
        ("h-late", "high", 40),
        ("l-soon", "low", 1),
        ("n-soon", "normal", 5),
        ("h-soon", "high", 30),
    ];
    let now = chrono::Utc::now();
    for (external, urgency, hours) in asked {
        let id = ask(&app, external, external, urgency).await;
        let question = agent_questions::Entity::find_by_id(id)
            .one(&app.db)
            .await
            .expect("read")
            .expect("the question");
        let mut active: agent_questions::ActiveModel = question.into();
        active.expires_at = Set(now + chrono::Duration::hours(hours));
        active.update(&app.db).await.expect("its time left");
    }
    let expected = ["h-soon", "h-late", "n-soon", "n-late", "l-soon"];
    let all = app.graphql(Some(&ana.token), SORTED, json!({})).await;
    assert!(all["errors"].is_null(), "{all}");
    assert_eq!(external_ids(&all), expected);
    let named = app
        .graphql(Some(&ana.token), SORTED, json!({"sort": "URGENCY"}))
        .await;
    assert_eq!(external_ids(&named), expected);
    // Page by two: the cursor carries the rank and the time left.
    let mut seen = Vec::new();
    let mut after = Value::Null;
    loop {
        let page = app
            .graphql(
                Some(&ana.token),
                SORTED,
                json!({"first": 2, "after": after}),
            )
            .await;
        assert!(page["errors"].is_null(), "{page}");
        seen.extend(external_ids(&page));
        let info = &page["data"]["niche"]["queue"]["pageInfo"];
        if info["hasNextPage"] != true {
            break;
        }
        after = info["endCursor"].clone();
    }
    assert_eq!(seen, expected);
    // The other sorts are kept; a cursor reads back only in its own sort.
    let expiring = app
        .graphql(Some(&ana.token), SORTED, json!({"sort": "EXPIRING"}))
        .await;
    assert_eq!(
        external_ids(&expiring),
        ["l-soon", "n-soon", "h-soon", "h-late", "n-late"]
    );
    let first = app
        .graphql(Some(&ana.token), SORTED, json!({"first": 1}))
        .await;
    let cursor = first["data"]["niche"]["queue"]["pageInfo"]["endCursor"].clone();
    let crossed = app
        .graphql(
            Some(&ana.token),
            SORTED,
            json!({"sort": "NEWEST", "after": cursor}),
        )
        .await;
    assert_eq!(error_code(&crossed), Some("BAD_USER_INPUT"), "{crossed}");
}

on_both_backends!(
    my_parts_and_the_needs_me_count_follow_what_i_did,
    the_default_sort_is_urgency_then_time_left_and_pages_by_its_cursor,
);

/// The text of `expression` once it is non-empty.
async fn text_of(browser: &mut Browser, expression: &str, what: &str) -> String {
    browser
        .wait_for(
            &format!("({expression}) && ({expression}).textContent.trim().length > 0"),
            what,
        )
        .await;
    browser.text(expression).await
}

fn handled(id: i64) -> String {
    format!("document.querySelector('section.handled li[data-question-id=\"{id}\"]')")
}

async fn a_decline_stays_handled_after_a_reload_and_every_count_agrees(app: TestApp) {
    open_niche(&app.db, "games").await;
    operator(&app.db, "games", "cara").await;
    let declined = ask(&app, "d-1", "Which date?", "normal").await;
    let other = ask(&app, "d-2", "Which date?", "high").await;
    let mut cara = signed_in(&app, "cara", "/dashboard/niches/games/questions").await;
    cara.viewport(1280, 800, false).await;
    cara.reload().await;
    QueuePage(&mut cara)
        .wait_for_card(declined, "the first question")
        .await;
    cara.wait_for(
        "document.querySelector('.counts') && document.querySelector('.counts').textContent === '2 waiting · 1 high'",
        "both need cara",
    )
    .await;
    // Two questions with the same title are told apart on their rows.
    let tells: Vec<String> = cara
        .eval("[...document.querySelectorAll('article.question .tell')].map(t => t.textContent)")
        .await
        .as_array()
        .map(|l| {
            l.iter()
                .filter_map(|t| t.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(tells.len(), 2, "{tells:?}");
    assert!(
        tells
            .iter()
            .all(|t| t.contains("Early access or 1.0?") && t.contains("asked")),
        "{tells:?}"
    );

    QueuePage(&mut cara)
        .press(declined, "Not enough context")
        .await;
    QueuePage(&mut cara)
        .wait_for_card_to_leave(declined, "the declined row to leave Needs me")
        .await;
    cara.wait_for(
        "document.querySelector('.counts').textContent === '1 waiting · 1 high'",
        "the heading counts what needs cara",
    )
    .await;
    cara.reload().await;
    let state = text_of(
        &mut cara,
        &format!("{}.querySelector('.handled-state')", handled(declined)),
        "the declined question under Handled by you",
    )
    .await;
    assert_eq!(state, "You declined: not enough context.");
    // No answer controls on it, and it is not in "Needs me".
    assert_eq!(cara.eval(&QueuePage::card(declined)).await, Value::Null);
    assert!(cara.eval(&QueuePage::card(other)).await.is_object());
    cara.wait_for(
        "document.querySelector('.counts').textContent === '1 waiting · 1 high'",
        "the heading after the reload",
    )
    .await;
    cara.wait_for(
        "document.title === '(1) Niche games — askloop'",
        "the title after the reload",
    )
    .await;
    assert_accessible(&mut cara, "the queue with a handled question").await;
    cara.viewport(390, 844, true).await;
    assert_no_sideways_scroll(&mut cara, "the queue with a handled question at 390 px").await;
    assert_accessible(&mut cara, "the queue with a handled question at 390 px").await;
    cara.viewport(1280, 800, false).await;
    // The niches page says the same.
    cara.goto(&app.url("/dashboard/niches")).await;
    let badge = text_of(
        &mut cara,
        "document.querySelector('.awaiting-niche[data-slug=games] [data-waiting-count]')",
        "the niches page's count",
    )
    .await;
    assert_eq!(badge, "1 waiting");

    // The agent's research comes back: it needs cara again.
    research_back(&app, "d-1", "The store page now says June.").await;
    cara.goto(&app.url("/dashboard/niches/games/questions"))
        .await;
    QueuePage(&mut cara)
        .wait_for_card(declined, "the question back in Needs me")
        .await;
    cara.wait_for(
        "document.querySelector('.counts').textContent === '2 waiting · 1 high'",
        "both need cara again",
    )
    .await;
}

on_both_backends!(a_decline_stays_handled_after_a_reload_and_every_count_agrees);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn research_sent_back_comes_back_live_with_the_findings_first() {
    require_built_dashboard();
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    operator(&app.db, "games", "cara").await;
    let id = ask(&app, "r-1", "Which release date?", "normal").await;
    let mut cara = signed_in(&app, "cara", "/dashboard/niches/games/questions").await;
    cara.viewport(1280, 800, false).await;
    let card = QueuePage::card(id);
    QueuePage(&mut cara)
        .press(id, "Ask the agent to research more")
        .await;
    // An empty note is refused beside its own box.
    cara.click(&button_in(&card, "Send back for research"))
        .await;
    let refusal = text_of(
        &mut cara,
        &format!("{card}.querySelector('.research-note [role=alert]')"),
        "the refusal beside the note",
    )
    .await;
    assert!(
        refusal.contains("Say what the agent should find out"),
        "{refusal}"
    );
    cara.fill(
        &labelled_in(
            &card,
            "What should the agent find out? (required; the agent is told)",
        ),
        "Check the publisher's blog.",
    )
    .await;
    cara.click(&button_in(&card, "Send back for research"))
        .await;
    QueuePage(&mut cara)
        .wait_for_card_to_leave(id, "the row sent back")
        .await;
    QueuePage(&mut cara).notice().await;
    cara.click(&button_in(
        "document.querySelector('article.done')",
        "Close",
    ))
    .await;
    let state = text_of(
        &mut cara,
        &format!("{}.querySelector('.handled-state')", handled(id)),
        "the question under Handled by you",
    )
    .await;
    assert_eq!(
        state,
        "You sent it back for research — waiting for the agent's research."
    );
    assert!(
        !cara
            .eval(&format!("{}.textContent", handled(id)))
            .await
            .as_str()
            .unwrap_or_default()
            .contains("draft"),
        "no draft badge"
    );

    // The findings arrive live: back in "Needs me", marked, findings first.
    research_back(&app, "r-1", "The publisher's blog says July 2027.").await;
    QueuePage(&mut cara)
        .wait_for_card(id, "the question back from research")
        .await;
    let badge = text_of(
        &mut cara,
        &format!("{card}.querySelector('.badge.research-back')"),
        "the research-is-back mark",
    )
    .await;
    assert_eq!(badge, "research is back");
    assert_eq!(cara.eval(&handled(id)).await, Value::Null);
    QueuePage(&mut cara).open(id).await;
    let order = cara
        .eval(&format!(
            "(() => {{ const body = {card}.querySelector('.card-main'); const f = body.querySelector('.findings'); const c = body.querySelector('details.context'); \
             return [f && f.querySelector('h3').textContent, f && f.textContent.includes('July 2027'), !!(f && c && (f.compareDocumentPosition(c) & Node.DOCUMENT_POSITION_FOLLOWING)), c && c.textContent.includes('Steam lists both')]; }})()"
        ))
        .await;
    assert_eq!(
        order,
        json!(["The agent's research, round 1", true, true, true])
    );
    // The research form is not filled with the note already sent.
    let note_open = cara
        .eval(&format!("!!{card}.querySelector('.research-note')"))
        .await;
    assert_eq!(note_open, json!(false));
    cara.screenshot("queue-mine-research-back-1280").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_card_settled_by_someone_else_turns_read_only_at_once() {
    require_built_dashboard();
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    operator(&app.db, "games", "cara").await;
    let dan = operator(&app.db, "games", "dan").await;
    let id = ask(&app, "c-1", "Which date?", "normal").await;
    let mut cara = signed_in(&app, "cara", "/dashboard/niches/games/questions").await;
    let card = QueuePage::card(id);
    QueuePage(&mut cara)
        .write(id, "My half-written answer")
        .await;
    let answered = app.answer(&dan.token, early_access(id, None)).await;
    assert!(answered["errors"].is_null(), "{answered}");
    let said = text_of(
        &mut cara,
        &format!("{card}.querySelector('.settled-here')"),
        "who settled it",
    )
    .await;
    assert!(said.contains("Answered by dan"), "{said}");
    assert!(said.contains("your draft is kept"), "{said}");
    let locked = cara
        .eval(&format!(
            "(() => {{ const c = {card}; return [c.querySelector('textarea[name=body]').readOnly, [...c.querySelectorAll('input[type=radio]')].every(r => r.disabled), c.querySelector('button[data-kind=answered]').getAttribute('aria-disabled')]; }})()"
        ))
        .await;
    assert_eq!(locked, json!([true, true, "true"]));
    assert_eq!(
        QueuePage(&mut cara).written(id).await,
        "My half-written answer"
    );
    // Dismiss says how it differs from "Not enough context".
    let dismiss = cara
        .eval(&format!(
            "{card}.querySelector('details.dismiss').textContent"
        ))
        .await;
    assert!(
        dismiss
            .as_str()
            .is_some_and(|t| t.contains("ends the question for everyone")),
        "{dismiss}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_past_the_limit_from_the_url_keeps_the_page_and_its_filters() {
    require_built_dashboard();
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    operator(&app.db, "games", "cara").await;
    let high = ask(&app, "s-h", "Roof date", "high").await;
    let normal = ask(&app, "s-n", "Roof colour", "normal").await;
    let long = "x".repeat(201);
    let mut cara = signed_in(&app, "cara", "/dashboard/niches/games/questions").await;
    cara.viewport(1280, 800, false).await;
    // As from a shared link or the address bar.
    cara.goto(&app.url(&format!(
        "/dashboard/niches/games/questions?urgency=high&q={long}"
    )))
    .await;
    let refusal = text_of(
        &mut cara,
        "document.querySelector('#search-refusal')",
        "the refusal beside the search box",
    )
    .await;
    assert!(refusal.contains("at most 200 characters"), "{refusal}");
    // The page is kept: its heading, the urgency filter, and the rows that filter keeps.
    QueuePage(&mut cara)
        .wait_for_card(high, "the high question")
        .await;
    assert_eq!(cara.eval(&QueuePage::card(normal)).await, Value::Null);
    assert_eq!(
        cara.eval("document.querySelector('select[name=urgency]').value")
            .await,
        json!("high")
    );
    assert_eq!(
        cara.eval("document.querySelector('input[name=q]').value.length")
            .await,
        json!(201)
    );
    assert_eq!(
        cara.eval("document.querySelector('input[name=q]').getAttribute('aria-describedby')")
            .await,
        json!("search-refusal")
    );
    // The Search button sits beside its box, not on a line of its own.
    let beside = cara
        .eval("(() => { const i = document.querySelector('input[name=q]').getBoundingClientRect(); const b = [...document.querySelectorAll('form.filters button')].find(b => b.textContent === 'Search').getBoundingClientRect(); return b.top < i.bottom && b.bottom > i.top; })()")
        .await;
    assert_eq!(beside, json!(true));
    assert_accessible(&mut cara, "the queue with a refused search").await;

    // On a phone the filters fold away, the question shows in the first screen, and no
    // keyboard help is offered on a touch screen.
    cara.viewport(390, 844, true).await;
    cara.call(
        "Emulation.setTouchEmulationEnabled",
        json!({"enabled": true, "maxTouchPoints": 1}),
    )
    .await;
    // Touch emulation makes the pointer coarse; where the browser also takes these features
    // directly, say so too (an older one refuses them, which changes nothing here).
    let _ = cara
        .try_call(
            "Emulation.setEmulatedMedia",
            json!({"features": [{"name": "hover", "value": "none"}, {"name": "pointer", "value": "coarse"}]}),
        )
        .await;
    cara.goto(&app.url("/dashboard/niches/games/questions"))
        .await;
    QueuePage(&mut cara)
        .wait_for_card(high, "the high question on a phone")
        .await;
    assert_eq!(
        cara.eval("document.querySelector('details.filters-fold').open")
            .await,
        json!(false)
    );
    let top = cara
        .eval(&format!(
            "{}.getBoundingClientRect().top",
            QueuePage::card(high)
        ))
        .await
        .as_f64()
        .unwrap_or(f64::MAX);
    assert!(top < 844.0, "the first question starts at {top} px");
    assert_eq!(
        cara.eval("getComputedStyle(document.querySelector('.keys-offer')).display")
            .await,
        json!("none")
    );
    assert_no_sideways_scroll(&mut cara, "the phone queue").await;
    cara.screenshot("queue-mine-390").await;
}

/// Press `key` with Ctrl held.
async fn ctrl(browser: &mut Browser, key: &str, code: &str, vk: u32) {
    for kind in ["keyDown", "keyUp"] {
        browser
            .call(
                "Input.dispatchKeyEvent",
                json!({"type": kind, "key": key, "code": code, "windowsVirtualKeyCode": vk, "modifiers": 2}),
            )
            .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_keys_search_undo_close_and_send() {
    require_built_dashboard();
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    operator(&app.db, "games", "cara").await;
    let low = ask(&app, "k-l", "Low one", "low").await;
    let high = ask(&app, "k-h", "High one", "high").await;
    let mut cara = signed_in(&app, "cara", "/dashboard/niches/games/questions").await;
    cara.viewport(1280, 800, false).await;
    QueuePage(&mut cara)
        .wait_for_card(low, "the low question")
        .await;
    // The default sort: high first, though it was asked last.
    let order = cara
        .eval("[...document.querySelectorAll('article.question')].map(r => Number(r.dataset.questionId))")
        .await;
    assert_eq!(order, json!([high, low]));

    // `/` goes to the search.
    cara.press_key("/").await;
    cara.wait_for(
        "document.activeElement === document.querySelector('input[name=q]')",
        "the search focused",
    )
    .await;
    cara.eval("document.activeElement.blur()").await;

    // `u` undoes a decline waiting to be sent.
    QueuePage(&mut cara).press(high, "Not enough context").await;
    cara.wait_for("document.querySelector('.held button.undo')", "the Undo")
        .await;
    cara.eval("document.activeElement.blur()").await;
    cara.press_key("u").await;
    cara.wait_for("!document.querySelector('.held')", "the decline undone")
        .await;
    let answers: u64 = {
        use sea_orm::{EntityTrait, PaginatorTrait};
        entity::agent_answers::Entity::find()
            .count(&app.db)
            .await
            .expect("count")
    };
    assert_eq!(answers, 0);

    // Esc closes the open card from inside its form; Ctrl+Enter sends the answer.
    let card = QueuePage::card(high);
    QueuePage(&mut cara)
        .write(high, "Early access, says Steam.")
        .await;
    cara.eval(&format!(
        "{card}.querySelector('textarea[name=body]').focus()"
    ))
    .await;
    cara.press_key("Escape").await;
    cara.wait_for(
        &format!("!{card}.querySelector('form.answer')"),
        "the card closed",
    )
    .await;
    QueuePage(&mut cara).choose(high, "Early access").await;
    cara.eval(&format!(
        "{card}.querySelector('textarea[name=body]').focus()"
    ))
    .await;
    ctrl(&mut cara, "Enter", "Enter", 13).await;
    QueuePage(&mut cara)
        .wait_for_card_to_leave(high, "the answered card")
        .await;
    let settled: u64 = {
        use sea_orm::{EntityTrait, PaginatorTrait};
        entity::agent_answers::Entity::find()
            .count(&app.db)
            .await
            .expect("count")
    };
    assert_eq!(settled, 1);
}
