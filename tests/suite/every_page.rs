//! Every page of the dashboard, with rows on it, at a phone's width (390 px) and a desk's
//! (1280 px), in the light and the dark scheme: nothing is wider than the viewport (the document,
//! any element, any table's own scroll box), axe-core finds nothing serious or critical, and every
//! text field says how long it may be (`maxlength`, or a counter). One test collects every
//! finding, named by route, width and scheme, and fails listing them all. The forms' error paths:
//! a refused handle keeps what was typed and shows the refusal beside its field; a notice clears
//! when the next action succeeds; text pasted past a field's limit is said to be cut.

use askloop_tests::axe::serious_findings;
use askloop_tests::browser::{Browser, labelled_in};
use askloop_tests::fixtures::question_body;
use askloop_tests::pages::{AdminPage, browser, require_built_dashboard, sign_in_to};
use askloop_tests::people::{Person, operator, person};
use askloop_tests::{Backend, TestApp};
use chrono::Utc;
use entity::{anomaly_signals, audit_log};
use sea_orm::{ActiveModelTrait, ActiveValue::Set, NotSet};
use serde_json::{Value, json};

use crate::money_pages::{keep_screenshot, scheme};
use crate::review::review_scene;

/// The widths every page is shown at: (width, height, a phone).
const WIDTHS: [(u32, u32, bool); 2] = [(390, 844, true), (1280, 900, false)];

/// What is wrong with the page shown now, as sentences: anything wider than the viewport or
/// scrolling sideways inside, and text fields without a stated limit.
const LAYOUT_FINDINGS: &str = r#"(() => {
  const vw = document.documentElement.clientWidth;
  const out = [];
  const name = el => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
    (el.className && typeof el.className === 'string' ? '.' + el.className.trim().split(/\s+/).join('.') : '') +
    ' "' + (el.textContent || '').replace(/\s+/g, ' ').trim().slice(0, 40) + '"';
  if (document.documentElement.scrollWidth > vw) {
    out.push('the document is ' + document.documentElement.scrollWidth + ' px wide');
  }
  for (const el of document.body.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    if (r.right <= vw + 1 && r.left >= -1) continue;
    let clipped = false;
    for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
      if (getComputedStyle(a).overflowX !== 'visible') { clipped = true; break; }
    }
    if (!clipped) out.push('sticks out of the viewport: ' + name(el));
  }
  for (const el of document.body.querySelectorAll('*')) {
    const style = getComputedStyle(el);
    if ((style.overflowX === 'auto' || style.overflowX === 'scroll') && el.scrollWidth > el.clientWidth + 1) {
      out.push('scrolls sideways inside: ' + name(el));
    }
  }
  const fields = 'input:not([type]), input[type=text], input[type=search], input[type=email], ' +
    'input[type=url], textarea';
  for (const el of document.querySelectorAll(fields)) {
    if (!el.hasAttribute('maxlength') && !el.hasAttribute('data-counter')) {
      out.push('a text field has no limit: ' + name(el));
    }
  }
  return out.slice(0, 20);
})()"#;

/// What a page has finished reading: a heading, no "Loading…" left, and `inside`.
fn loaded(inside: &str) -> String {
    format!(
        "document.querySelector('main h1') && document.querySelector({inside:?}) \
         && ![...document.querySelectorAll('main p')].some(p => p.textContent.trim().startsWith('Loading'))"
    )
}

/// Visit `path` and wait until `inside` shows.
async fn visit(browser: &mut Browser, app: &TestApp, path: &str, inside: &str) {
    browser.goto(&app.url(path)).await;
    browser.wait_for(&loaded(inside), path).await;
}

/// Every finding on the page shown now, at both widths and in both schemes, as
/// "route at width px, scheme: what".
async fn check_everywhere(browser: &mut Browser, route: &str, inside: &str) -> Vec<String> {
    let mut found = Vec::new();
    for dark in [false, true] {
        scheme(browser, dark).await;
        for (width, height, mobile) in WIDTHS {
            browser.viewport(width, height, mobile).await;
            browser
                .wait_for(
                    &format!("window.innerWidth === {width} && {}", loaded(inside)),
                    &format!("{route} at {width} px"),
                )
                .await;
            let said = format!(
                "{route} at {width} px, {} scheme",
                if dark { "dark" } else { "light" }
            );
            if let Value::Array(layout) = browser.eval(LAYOUT_FINDINGS).await {
                found.extend(
                    layout
                        .iter()
                        .map(|f| format!("{said}: {}", f.as_str().unwrap_or_default())),
                );
            }
            for finding in serious_findings(browser).await {
                found.push(format!(
                    "{said}: axe {} ({}): {} at {:?}",
                    finding.rule, finding.impact, finding.help, finding.targets
                ));
            }
        }
    }
    scheme(browser, false).await;
    browser.viewport(1280, 900, false).await;
    found
}

/// Ask `external_id` in games titled `title`; its id.
async fn ask_titled(app: &TestApp, external_id: &str, title: &str) -> i64 {
    app.ask_with(question_body("games", external_id), |payload| {
        payload["title"] = json!(title);
    })
    .await
}

/// `query` as `who`, which must succeed.
async fn ok(app: &TestApp, who: &Person, query: &str, variables: Value) -> Value {
    let body = app.graphql(Some(&who.token), query, variables).await;
    assert!(body["errors"].is_null(), "{query}: {body}");
    body
}

/// Rows for every page: questions waiting (one titled right to left, one with a long unbroken
/// word), answers reviewed every way and one awaiting review, knowledge, revenue with shares,
/// a payout, an address to verify, deliveries that failed, audit rows, a signal, an agent and
/// an API key. Returns (the admin, the operator, the question under review, a knowledge entry).
async fn demo(app: &TestApp) -> (Person, Person, i64, String) {
    let scene = review_scene(app).await;
    let (root, ana) = (scene.root, scene.ana);
    ask_titled(app, "rtl", "متى يصدر الإصدار الأول؟ (which date?)").await;
    ask_titled(
        app,
        "long-word",
        &format!("Which {} is it?", "x".repeat(120)),
    )
    .await;
    app.ask("games", "plain").await;
    // Revenue: its members' shares become owed; ana's is paid out to a verified address.
    let event = json!({"nicheSlug": "games", "externalId": "inv-2026-12-0001", "sourceType": "subscription",
        "grossMinor": 1_234_567, "processingMinor": 0, "currency": "USD"});
    let booked = app
        .post_signed("/api/v1/internal/revenue-events", &event.to_string())
        .await;
    assert_eq!(booked.status(), 201);
    for who in [&ana, &scene.ben] {
        ok(
            app,
            who,
            "mutation { setPayoutAddress(address: \"IBAN DE00 1234 5678 9012 3456 78\") { address } }",
            json!({}),
        )
        .await;
    }
    ok(
        app,
        &root,
        "mutation($h: String!) { verifyPayoutAddress(handle: $h, address: \"IBAN DE00 1234 5678 9012 3456 78\") { verified } }",
        json!({"h": ana.handle}),
    )
    .await;
    ok(
        app,
        &root,
        "mutation($h: String!) { schedulePayout(handle: $h) { id } }",
        json!({"h": ana.handle}),
    )
    .await;
    ok(
        app,
        &ana,
        "mutation { createApiKey(name: \"Laptop script\") { token } }",
        json!({}),
    )
    .await;
    crate::agents::register(
        app,
        "release-bot",
        &["games"],
        None,
        entity::agents::WebhookScheme::Chovy,
    )
    .await;
    anomaly_signals::ActiveModel {
        id: NotSet,
        signal_id: Set("sig-1".to_owned()),
        subject_type: Set("operator".to_owned()),
        subject_id: Set("ana".to_owned()),
        kind: Set("fast_answers".to_owned()),
        severity: Set("high".to_owned()),
        finding: Set("twelve answers in a minute".to_owned()),
        received_at: Set(Utc::now()),
    }
    .insert(&app.db)
    .await
    .expect("a signal");
    for (i, action) in ["payout_account.verified", "niche_budget.updated"]
        .iter()
        .enumerate()
    {
        audit_log::ActiveModel {
            id: NotSet,
            actor: Set(format!("user:{}", root.id)),
            action: Set((*action).to_owned()),
            subject_type: Set("niche".to_owned()),
            subject_id: Set(i.to_string()),
            niche_id: Set(None),
            detail: Set(json!({ "note": format!("step {i}"), "amountMinor": 2530 })),
            created_at: Set(Utc::now()),
        }
        .insert(&app.db)
        .await
        .expect("an audit row");
    }
    let entries = ok(
        app,
        &ana,
        "{ knowledge(nicheSlug: \"games\") { nodes { id } } }",
        json!({}),
    )
    .await;
    let entry = entries["data"]["knowledge"]["nodes"][0]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("a knowledge entry: {entries}"))
        .to_owned();
    (root, ana, scene.question, entry)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_fits_a_phone_and_a_desk_in_both_schemes_and_passes_axe() {
    require_built_dashboard();
    // The agents' endpoint refuses: deliveries retry and carry errors, as on a bad day.
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.webhook_url = Some("http://127.0.0.1:9/hooks".into());
    })
    .await
    .expect("an app");
    let (_root, _ana, question, entry) = demo(&app).await;
    let mut browser = browser().await;
    let mut found = Vec::new();

    browser.goto(&app.url("/login")).await;
    browser
        .wait_for("document.querySelector('#handle')", "the sign-in form")
        .await;
    found.extend(check_everywhere(&mut browser, "/login", "#handle").await);

    let operator_routes = [
        ("/dashboard/niches", ".awaiting-niche li".to_owned()),
        (
            "/dashboard/niches/games/questions",
            ".question.row".to_owned(),
        ),
        (
            "/dashboard/niches/games/questions/{question}",
            ".question-page h1".to_owned(),
        ),
        ("/dashboard/activity", ".activity-list li".to_owned()),
        (
            "/dashboard/niches/games/knowledge",
            ".knowledge-list li".to_owned(),
        ),
        (
            "/dashboard/niches/games/knowledge/{entry}",
            ".knowledge-entry".to_owned(),
        ),
        (
            "/dashboard/niches/games/revenue",
            "table.events tbody tr".to_owned(),
        ),
        ("/dashboard/revenue", "[data-balance=owed]".to_owned()),
        ("/dashboard/payouts", "[data-balance=owed]".to_owned()),
        ("/dashboard/settings", ".access-item".to_owned()),
    ];
    sign_in_to(&mut browser, &app, "ana", "/dashboard/niches").await;
    for (route, inside) in &operator_routes {
        let path = route
            .replace("{question}", &question.to_string())
            .replace("{entry}", &entry);
        visit(&mut browser, &app, &path, inside).await;
        found.extend(check_everywhere(&mut browser, route, inside).await);
        if *route == "/dashboard/niches/games/questions" {
            for (width, height, mobile) in WIDTHS {
                browser.viewport(width, height, mobile).await;
                keep_screenshot(&mut browser, &format!("every-page-queue-{width}")).await;
            }
            browser.viewport(1280, 900, false).await;
        }
    }

    let admin_routes = [
        ("/admin", "article.review"),
        ("/admin/review", "article.review"),
        ("/admin/members", ".niche-admin [data-budget-month]"),
        ("/admin/deliveries", "table.deliveries tbody tr"),
        ("/admin/payouts", "table.owed tbody tr"),
        ("/admin/revenue", "table.admin-events tbody tr"),
        ("/admin/signals", "li[data-signal-id]"),
        ("/admin/audit", "table.audit tr[data-audit-id]"),
        ("/admin/agents", ".agent"),
    ];
    // A new browser for the admin: the operator's session stays out of it.
    drop(browser);
    let mut browser = browser_signed_in_as(&app, "root").await;
    for (route, inside) in admin_routes {
        visit(&mut browser, &app, route, inside).await;
        found.extend(check_everywhere(&mut browser, route, inside).await);
        if route == "/admin/review" {
            for (width, height, mobile) in WIDTHS {
                browser.viewport(width, height, mobile).await;
                keep_screenshot(&mut browser, &format!("every-page-review-{width}")).await;
            }
            browser.viewport(1280, 900, false).await;
        }
    }

    assert!(
        found.is_empty(),
        "{} finding(s) on the dashboard's pages:\n{}",
        found.len(),
        found.join("\n")
    );
}

/// A new browser signed in as `handle`, on `/admin`.
async fn browser_signed_in_as(app: &TestApp, handle: &str) -> Browser {
    let mut browser = browser().await;
    sign_in_to(&mut browser, app, handle, "/admin").await;
    browser
}

/// The "Add a member" form of `games` on the admin desk, as a JavaScript expression.
const ADD: &str = "document.querySelector('.niche-admin[data-slug=games] form.inline')";

/// Its submit button.
const ADD_BUTTON: &str =
    "document.querySelector('.niche-admin[data-slug=games] form.inline button[type=submit]')";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_handle_keeps_what_was_typed_beside_its_refusal_and_a_success_clears_it() {
    require_built_dashboard();
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    askloop_tests::fixtures::open_niche(&app.db, "games").await;
    person(&app.db, "root", true).await;
    person(&app.db, "carla", false).await;
    let mut browser = browser_signed_in_as(&app, "root").await;
    let mut admin = AdminPage(&mut browser);
    admin.open_section("members").await;
    let field = labelled_in(ADD, "Add a member");
    browser.wait_for(&field, "the add-a-member field").await;

    // The field carries the server's limit, so 20,000 characters cannot be typed.
    let limit = browser
        .eval(&format!("{field}.getAttribute('maxlength')"))
        .await;
    assert_eq!(limit, json!("40"), "the handle field's limit");

    // A handle no one has: refused, said beside the field, what was typed kept.
    browser.fill(&field, "carlq").await;
    browser.click(ADD_BUTTON).await;
    browser
        .wait_for(
            &format!("(() => {{ const f = {field}; const ids = (f.getAttribute('aria-describedby') || '').split(' ').filter(Boolean); \
             return f.getAttribute('aria-invalid') === 'true' && ids.some(id => {{ const e = document.getElementById(id); \
             return e && e.classList.contains('error') && e.textContent.trim().length > 0; }}); }})()"),
            "the refusal named by the field",
        )
        .await;
    let refusal = browser
        .eval(&format!(
            "document.getElementById({field}.getAttribute('aria-describedby').split(' ').pop()).textContent.trim()"
        ))
        .await;
    let refusal = refusal.as_str().unwrap_or_default().to_owned();
    assert!(
        refusal.contains("carlq"),
        "the refusal names what was typed: {refusal}"
    );
    assert!(
        refusal.chars().next().is_some_and(char::is_uppercase) && refusal.ends_with('.'),
        "the refusal is a sentence: {refusal}"
    );
    assert_eq!(
        browser.eval(&format!("{field}.value")).await,
        json!("carlq"),
        "what was typed is kept to be fixed"
    );
    // The refusal sits beside its field, not at the top of the section.
    let beside = browser
        .eval(&format!(
            "(() => {{ const e = document.getElementById({field}.getAttribute('aria-describedby').split(' ').pop()); \
             return !!e.closest('.niche-admin[data-slug=games]'); }})()"
        ))
        .await;
    assert_eq!(
        beside,
        json!(true),
        "the refusal is in the niche's own form"
    );

    // Fixed and sent again: the refusal goes, the field empties, the member is listed.
    browser.fill(&field, "carla").await;
    browser.click(ADD_BUTTON).await;
    browser
        .wait_for(
            &format!(
                "{} && {field}.value === '' && {field}.getAttribute('aria-invalid') !== 'true' \
             && !document.querySelector('.niche-admin[data-slug=games] .error')",
                AdminPage::member("games", "carla")
            ),
            "carla listed and the refusal gone",
        )
        .await;
    let notice = browser
        .eval("[...document.querySelectorAll('.niche-admin[data-slug=games] .notice')].map(n => n.textContent.trim())")
        .await;
    assert_eq!(
        notice,
        json!(["carla is now a member of games."]),
        "{notice}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notice_clears_when_the_next_action_succeeds_and_an_over_long_paste_is_said() {
    require_built_dashboard();
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    askloop_tests::fixtures::open_niche(&app.db, "games").await;
    person(&app.db, "root", true).await;
    operator(&app.db, "games", "ana").await;
    let mut browser = browser_signed_in_as(&app, "root").await;
    let mut admin = AdminPage(&mut browser);
    admin.open_section("members").await;
    let field = labelled_in(ADD, "Add a member");
    browser.wait_for(&field, "the add-a-member field").await;

    // A refusal, then a budget saved: the refusal does not outlive the next success.
    browser.fill(&field, "nobody-here").await;
    browser.click(ADD_BUTTON).await;
    browser
        .wait_for(
            "document.querySelector('.niche-admin[data-slug=games] .error')",
            "the refusal",
        )
        .await;
    browser
        .click("document.querySelector('.niche-admin[data-slug=games] .budget-editor button[type=submit]')")
        .await;
    browser
        .wait_for(
            "[...document.querySelectorAll('.niche-admin[data-slug=games] .notice')].some(n => n.textContent.includes('budget of games is saved')) \
             && !document.querySelector('.niche-admin[data-slug=games] .error')",
            "the budget saved and the refusal gone",
        )
        .await;

    // 60 characters pasted into a field that holds 40: the browser keeps 40, and the field
    // says so beside it instead of cutting without a word.
    browser.fill(&field, "").await;
    browser.eval(&format!("{field}.focus()")).await;
    browser
        .call("Input.insertText", json!({"text": "h".repeat(60)}))
        .await;
    browser
        .wait_for(
            &format!("(() => {{ const f = {field}; const ids = (f.getAttribute('aria-describedby') || '').split(' '); \
             return ids.some(id => {{ const e = document.getElementById(id); return e && /at most 40 characters/.test(e.textContent); }}); }})()"),
            "the limit said beside the field",
        )
        .await;
    assert_eq!(
        browser.eval(&format!("{field}.value.length")).await,
        json!(40)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sign_in_page_focuses_the_handle_field() {
    require_built_dashboard();
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    person(&app.db, "ana", false).await;
    let mut browser = browser().await;
    browser.goto(&app.url("/login")).await;
    browser
        .wait_for(
            "document.activeElement && document.activeElement.id === 'handle'",
            "the handle field focused",
        )
        .await;
    // Typing goes straight into it.
    browser.press_key("a").await;
    assert_eq!(
        browser
            .eval("document.querySelector('#handle').value")
            .await,
        json!("a")
    );
}
