//! The admin desk in sections (issue 31): each section its own URL with its count in its tab;
//! the audit log as a filtered, paged connection with handles and readable details, sign-ins
//! hidden unless asked; who is owed what, settled a row at a time; anomaly signals acknowledged
//! (admins only, audited); budgets edited in money; a refusal shown inside the review item it
//! belongs to; no Verify/Reject on an admin's own answer; and rejecting (or reversing) only with
//! a reason, which the answerer and the agent are told. GraphQL tests run on both stores; the
//! browser tests drive a real Chromium.

use std::time::Duration;

use askloop_tests::browser::{Browser, button_in, labelled, labelled_in};
use askloop_tests::fixtures::open_niche;
use askloop_tests::pages::{
    AdminPage, HOLD_LIVE, browser, require_built_dashboard, sign_in_to, signed_in,
};
use askloop_tests::people::{Person, operator, person};
use askloop_tests::receiver::Receiver;
use askloop_tests::{Backend, TestApp, error_code, on_both_backends};
use chrono::Utc;
use entity::{anomaly_signals, audit_log, contribution_events};
use sea_orm::{ActiveModelTrait, ActiveValue::Set, ColumnTrait, EntityTrait, NotSet, QueryFilter};
use serde_json::{Value, json};

use crate::review::review_scene;
use crate::review_pages::assert_accessible;

const AUDIT: &str = "query($actor: String, $action: String, $subjectType: String, $subjectId: String, $since: DateTime, $until: DateTime, $signIns: Boolean, $first: Int, $after: String) {
  auditEntries(actor: $actor, action: $action, subjectType: $subjectType, subjectId: $subjectId, since: $since, until: $until, signIns: $signIns, first: $first, after: $after) {
    pageInfo { hasNextPage endCursor }
    edges { cursor node { id actor actorName action subjectType subjectId subjectName details { name value } } }
  }
}";

const COUNTS: &str = "{ adminCounts { review failedDeliveries owed newSignals } }";
const OWED: &str = "{ owed { handle currency amountMinor allocations addressVerified } }";
const ACKNOWLEDGE: &str =
    "mutation($id: ID!) { acknowledgeSignal(id: $id) { id signalId acknowledgedBy } }";
const SIGNALS: &str = "{ anomalySignals(first: 10) { id signalId acknowledgedBy } }";
const REJECT: &str =
    "mutation($id: ID!, $note: String) { rejectContribution(id: $id, note: $note) { status } }";

/// Append `count` audit rows by `actor` (`user:<id>`) with `action`, oldest first.
async fn seed_audit(app: &TestApp, actor: &str, action: &str, count: usize) {
    for i in 0..count {
        audit_log::ActiveModel {
            id: NotSet,
            actor: Set(actor.to_owned()),
            action: Set(action.to_owned()),
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
}

/// A signal from the monitor, logged as it arrives; its row id.
async fn seed_signal(app: &TestApp, signal_id: &str) -> i64 {
    anomaly_signals::ActiveModel {
        id: NotSet,
        signal_id: Set(signal_id.to_owned()),
        subject_type: Set("operator".to_owned()),
        subject_id: Set("ana".to_owned()),
        kind: Set("fast_answers".to_owned()),
        severity: Set("high".to_owned()),
        finding: Set("twelve answers in a minute".to_owned()),
        received_at: Set(Utc::now()),
    }
    .insert(&app.db)
    .await
    .expect("a signal")
    .id
}

/// A revenue event of 100.00 USD in `games`: its members' shares become owed.
async fn book_revenue(app: &TestApp, external_id: &str) {
    let event = json!({"nicheSlug": "games", "externalId": external_id, "sourceType": "subscription",
        "grossMinor": 10_000, "processingMinor": 0, "currency": "USD"});
    let booked = app
        .post_signed("/api/v1/internal/revenue-events", &event.to_string())
        .await;
    assert_eq!(booked.status(), 201);
}

/// `who` saves a payout address and `admin` verifies it.
async fn verified_address(app: &TestApp, who: &Person, admin: &Person) {
    let saved = app
        .graphql(
            Some(&who.token),
            "mutation { setPayoutAddress(address: \"IBAN DE00 1234\") { address } }",
            json!({}),
        )
        .await;
    assert!(saved["errors"].is_null(), "{saved}");
    let verified = app
        .graphql(
            Some(&admin.token),
            "mutation($h: String!) { verifyPayoutAddress(handle: $h, address: \"IBAN DE00 1234\") { verified } }",
            json!({"h": who.handle}),
        )
        .await;
    assert!(verified["errors"].is_null(), "{verified}");
}

fn nodes(body: &Value) -> Vec<Value> {
    body["data"]["auditEntries"]["edges"]
        .as_array()
        .unwrap_or_else(|| panic!("a page: {body}"))
        .iter()
        .map(|e| e["node"].clone())
        .collect()
}

async fn the_audit_log_filters_by_actor_and_pages_with_a_cursor(app: TestApp) {
    let root = person(&app.db, "root", true).await;
    let ana = person(&app.db, "ana", false).await;
    seed_audit(&app, &format!("user:{}", root.id), "niche.updated", 30).await;
    seed_audit(&app, &format!("user:{}", ana.id), "payout_account.saved", 4).await;
    let first = app
        .graphql(
            Some(&root.token),
            AUDIT,
            json!({"actor": "root", "first": 25}),
        )
        .await;
    assert!(first["errors"].is_null(), "{first}");
    let page = nodes(&first);
    assert_eq!(page.len(), 25, "{first}");
    assert!(
        page.iter()
            .all(|n| n["actorName"] == "root" && n["actor"] == format!("user:{}", root.id)),
        "only root's entries, named by handle: {first}"
    );
    // Readable details, newest first.
    assert_eq!(page[0]["subjectName"], "niche 29");
    assert_eq!(
        page[0]["details"],
        json!([{"name": "amount minor", "value": "2530"}, {"name": "note", "value": "step 29"}])
    );
    let info = &first["data"]["auditEntries"]["pageInfo"];
    assert_eq!(info["hasNextPage"], true, "{first}");
    let rest = app
        .graphql(
            Some(&root.token),
            AUDIT,
            json!({"actor": "root", "first": 25, "after": info["endCursor"]}),
        )
        .await;
    let more = nodes(&rest);
    assert_eq!(more.len(), 5, "{rest}");
    assert_eq!(
        rest["data"]["auditEntries"]["pageInfo"]["hasNextPage"],
        false
    );
    assert_eq!(more[4]["subjectName"], "niche 0", "the oldest last: {rest}");
    let mut ids: Vec<&Value> = page.iter().chain(&more).map(|n| &n["id"]).collect();
    ids.dedup();
    assert_eq!(ids.len(), 30, "no entry twice across the pages");
    // By action and subject too.
    let one = app
        .graphql(
            Some(&root.token),
            AUDIT,
            json!({"action": "payout_account.saved", "subjectType": "niche", "subjectId": "2"}),
        )
        .await;
    let one = nodes(&one);
    assert_eq!(one.len(), 1);
    assert_eq!(one[0]["actorName"], "ana");
    // A time range that ended before anything was written holds nothing.
    let before = app
        .graphql(
            Some(&root.token),
            AUDIT,
            json!({"until": "2020-01-01T00:00:00Z"}),
        )
        .await;
    assert_eq!(nodes(&before).len(), 0, "{before}");
}

async fn sign_ins_are_hidden_unless_asked_for(app: TestApp) {
    let root = person(&app.db, "root", true).await;
    let actor = format!("user:{}", root.id);
    seed_audit(&app, &actor, "session.created", 3).await;
    seed_audit(&app, &actor, "session.ended", 1).await;
    seed_audit(&app, &actor, "niche.updated", 2).await;
    let hidden = app
        .graphql(Some(&root.token), AUDIT, json!({"actor": "root"}))
        .await;
    let actions: Vec<Value> = nodes(&hidden).iter().map(|n| n["action"].clone()).collect();
    assert_eq!(
        actions,
        json!(["niche.updated", "niche.updated"])
            .as_array()
            .cloned()
            .unwrap()
    );
    let shown = app
        .graphql(
            Some(&root.token),
            AUDIT,
            json!({"actor": "root", "signIns": true}),
        )
        .await;
    assert_eq!(nodes(&shown).len(), 6, "{shown}");
    // Asking for the action by name shows it too.
    let named = app
        .graphql(
            Some(&root.token),
            AUDIT,
            json!({"action": "session.created"}),
        )
        .await;
    assert_eq!(nodes(&named).len(), 3, "{named}");
}

async fn bad_cursors_and_filters_are_clear_errors(app: TestApp) {
    let root = person(&app.db, "root", true).await;
    for (variables, words) in [
        (json!({"after": "zzz"}), "is not a cursor of the audit log"),
        (json!({"after": "a-4"}), "is not a cursor of the audit log"),
        (json!({"actor": "nobody"}), "nobody is called 'nobody'"),
        (
            json!({"since": "2026-01-02T00:00:00Z", "until": "2026-01-01T00:00:00Z"}),
            "the time range is empty",
        ),
        (json!({"first": 0}), "first must be between 1 and"),
    ] {
        let body = app
            .graphql(Some(&root.token), AUDIT, variables.clone())
            .await;
        assert_eq!(
            error_code(&body),
            Some("BAD_USER_INPUT"),
            "{variables}: {body}"
        );
        let message = body["errors"][0]["message"].as_str().unwrap_or_default();
        assert!(message.contains(words), "{variables}: {message}");
    }
    // A time that is not one is refused by the schema, as any bad value is: never a 500.
    let body = app
        .graphql(Some(&root.token), AUDIT, json!({"since": "yesterday"}))
        .await;
    assert!(error_code(&body).is_some(), "{body}");
    assert!(
        body["data"].is_null() || body["data"]["auditEntries"].is_null(),
        "{body}"
    );
    for (query, variables) in [
        (ACKNOWLEDGE, json!({"id": "x"})),
        (
            "query($n: String) { reviewQueue(nicheSlug: $n) { id } }",
            json!({"n": "Not A Slug"}),
        ),
    ] {
        let body = app.graphql(Some(&root.token), query, variables).await;
        let code = error_code(&body);
        assert!(
            matches!(code, Some("BAD_USER_INPUT" | "NOT_FOUND")),
            "{query}: {body}"
        );
    }
    let unknown = app
        .graphql(Some(&root.token), ACKNOWLEDGE, json!({"id": "999999"}))
        .await;
    assert_eq!(error_code(&unknown), Some("NOT_FOUND"), "{unknown}");
}

async fn the_admin_desk_refuses_non_admins_as_every_admin_field_does(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let signal = seed_signal(&app, "sig-ana").await;
    let reference = app
        .graphql(Some(&ana.token), "{ auditLog { id } }", json!({}))
        .await;
    let signed_out = app.graphql(None, "{ auditLog { id } }", json!({})).await;
    assert_eq!(error_code(&reference), Some("FORBIDDEN"), "{reference}");
    for (query, variables) in [
        (AUDIT, json!({})),
        (COUNTS, json!({})),
        (OWED, json!({})),
        (ACKNOWLEDGE, json!({"id": signal.to_string()})),
    ] {
        let body = app
            .graphql(Some(&ana.token), query, variables.clone())
            .await;
        assert_eq!(error_code(&body), error_code(&reference), "{query}: {body}");
        let body = app.graphql(None, query, variables).await;
        assert_eq!(
            error_code(&body),
            error_code(&signed_out),
            "{query}: {body}"
        );
    }
    // The refused acknowledgement changed nothing.
    let acks = audit_log::Entity::find()
        .filter(audit_log::Column::Action.eq("signal.acknowledged"))
        .all(&app.db)
        .await
        .expect("query");
    assert!(acks.is_empty());
}

async fn a_signal_is_acknowledged_once_audited_and_counted(app: TestApp) {
    let root = person(&app.db, "root", true).await;
    let first = seed_signal(&app, "sig-1").await;
    seed_signal(&app, "sig-2").await;
    let counts = app.graphql(Some(&root.token), COUNTS, json!({})).await;
    assert_eq!(counts["data"]["adminCounts"]["newSignals"], 2, "{counts}");
    let acked = app
        .graphql(
            Some(&root.token),
            ACKNOWLEDGE,
            json!({"id": first.to_string()}),
        )
        .await;
    assert!(acked["errors"].is_null(), "{acked}");
    assert_eq!(acked["data"]["acknowledgeSignal"]["acknowledgedBy"], "root");
    let counts = app.graphql(Some(&root.token), COUNTS, json!({})).await;
    assert_eq!(counts["data"]["adminCounts"]["newSignals"], 1, "{counts}");
    let listed = app.graphql(Some(&root.token), SIGNALS, json!({})).await;
    let by_id: Vec<(Value, Value)> = listed["data"]["anomalySignals"]
        .as_array()
        .expect("signals")
        .iter()
        .map(|s| (s["signalId"].clone(), s["acknowledgedBy"].clone()))
        .collect();
    assert!(by_id.contains(&(json!("sig-1"), json!("root"))), "{listed}");
    assert!(by_id.contains(&(json!("sig-2"), Value::Null)), "{listed}");
    // Once only.
    let again = app
        .graphql(
            Some(&root.token),
            ACKNOWLEDGE,
            json!({"id": first.to_string()}),
        )
        .await;
    assert_eq!(error_code(&again), Some("BAD_USER_INPUT"), "{again}");
    let audited = audit_log::Entity::find()
        .filter(audit_log::Column::Action.eq("signal.acknowledged"))
        .all(&app.db)
        .await
        .expect("query");
    assert_eq!(audited.len(), 1);
    assert_eq!(audited[0].actor, format!("user:{}", root.id));
    assert_eq!(audited[0].subject_id, first.to_string());
}

async fn reject_and_reverse_need_a_reason_which_the_answerer_and_the_agent_get(app: TestApp) {
    let scene = review_scene(&app).await;
    let id = scene.contribution.clone();
    for note in [Value::Null, json!(""), json!("   ")] {
        let refused = app
            .graphql(
                Some(&scene.root.token),
                REJECT,
                json!({"id": id, "note": note}),
            )
            .await;
        assert_eq!(error_code(&refused), Some("BAD_USER_INPUT"), "{refused}");
        let message = refused["errors"][0]["message"].as_str().unwrap_or_default();
        assert!(message.contains("give a reason to reject"), "{message}");
    }
    let still = contribution_events::Entity::find_by_id(id.parse::<i64>().expect("an id"))
        .one(&app.db)
        .await
        .expect("query")
        .expect("the contribution");
    assert_eq!(
        still.status,
        contribution_events::ContributionStatus::Pending
    );
    let before = app.events_for_agent("expert_answer.rejected").await.len();
    let rejected = app
        .graphql(
            Some(&scene.root.token),
            REJECT,
            json!({"id": id, "note": "The store page says otherwise."}),
        )
        .await;
    assert!(rejected["errors"].is_null(), "{rejected}");
    let told = app.events_for_agent("expert_answer.rejected").await;
    assert_eq!(told.len(), before + 1);
    assert_eq!(
        told.last().expect("the rejection")["note"],
        "The store page says otherwise."
    );
    // The answerer reads the reason with their contribution; another member does not.
    let mine = app
        .graphql(
            Some(&scene.ana.token),
            "{ myContributions(first: 1) { id status reviewNote } }",
            json!({}),
        )
        .await;
    assert_eq!(
        mine["data"]["myContributions"][0],
        json!({"id": id, "status": "REJECTED", "reviewNote": "The store page says otherwise."}),
        "{mine}"
    );
    // Reversing a verified one needs a reason too.
    let reverse = app
        .graphql(
            Some(&scene.root.token),
            "mutation($id: ID!) { reverseContribution(id: $id) { status } }",
            json!({"id": id}),
        )
        .await;
    assert_eq!(error_code(&reverse), Some("BAD_USER_INPUT"), "{reverse}");
}

async fn the_owed_list_names_who_is_owed_and_a_scheduled_row_leaves_it(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let root = person(&app.db, "root", true).await;
    book_revenue(&app, "inv-1").await;
    let owed = app.graphql(Some(&root.token), OWED, json!({})).await;
    assert!(owed["errors"].is_null(), "{owed}");
    let rows = owed["data"]["owed"].as_array().expect("rows").clone();
    let ana_row = rows
        .iter()
        .find(|r| r["handle"] == "ana")
        .unwrap_or_else(|| panic!("ana is owed: {owed}"));
    assert_eq!(ana_row["currency"], "USD");
    assert!(ana_row["amountMinor"].as_i64().unwrap_or(0) > 0, "{owed}");
    assert_eq!(ana_row["addressVerified"], false);
    let counts = app.graphql(Some(&root.token), COUNTS, json!({})).await;
    assert_eq!(
        counts["data"]["adminCounts"]["owed"],
        json!(rows.len()),
        "{counts}"
    );
    verified_address(&app, &ana, &root).await;
    let scheduled = app
        .graphql(
            Some(&root.token),
            "mutation { schedulePayout(handle: \"ana\", currency: \"USD\") { amountMinor } }",
            json!({}),
        )
        .await;
    assert_eq!(
        scheduled["data"]["schedulePayout"]["amountMinor"], ana_row["amountMinor"],
        "{scheduled}"
    );
    let after = app.graphql(Some(&root.token), OWED, json!({})).await;
    assert!(
        !after["data"]["owed"]
            .as_array()
            .expect("rows")
            .iter()
            .any(|r| r["handle"] == "ana"),
        "{after}"
    );
}

async fn the_review_queue_filters_by_niche_and_answerer(app: TestApp) {
    let scene = review_scene(&app).await;
    open_niche(&app.db, "films").await;
    let query = "query($n: String, $a: String) { reviewQueue(nicheSlug: $n, answerer: $a) { id contributor { handle } } }";
    let count = |body: &Value| {
        body["data"]["reviewQueue"]
            .as_array()
            .map_or(usize::MAX, Vec::len)
    };
    for (variables, expected) in [
        (json!({}), 1),
        (json!({"n": "games"}), 1),
        (json!({"n": "films"}), 0),
        (json!({"a": "ana"}), 1),
        (json!({"a": "ben"}), 0),
        (json!({"n": "games", "a": "ana"}), 1),
    ] {
        let body = app
            .graphql(Some(&scene.root.token), query, variables.clone())
            .await;
        assert_eq!(count(&body), expected, "{variables}: {body}");
    }
    let unknown = app
        .graphql(Some(&scene.root.token), query, json!({"a": "nobody"}))
        .await;
    assert_eq!(error_code(&unknown), Some("NOT_FOUND"), "{unknown}");
}

async fn a_delivery_to_an_agent_without_an_endpoint_says_it_is_read_by_lookup(app: TestApp) {
    open_niche(&app.db, "games").await;
    let root = person(&app.db, "root", true).await;
    let secret = crate::agents::register(
        &app,
        "quiet-bot",
        &["games"],
        None,
        entity::agents::WebhookScheme::Chovy,
    )
    .await;
    let ana = operator(&app.db, "games", "ana").await;
    let (status, body) = crate::agents::ask_as(&app, "quiet-bot", &secret, "games", "q-1").await;
    assert_eq!(status, 201, "{body}");
    let other = app.ask("games", "default-agent").await;
    // Answered, each question has an event for its agent.
    for id in [body["question"]["id"].as_i64().expect("an id"), other] {
        crate::review::act(
            &app,
            &ana,
            id,
            json!({"kind": "ANSWERED", "optionId": "full"}),
        )
        .await;
    }
    let read = app
        .graphql(
            Some(&root.token),
            "{ deliveries(first: 10) { eventType questionId readsByLookup } }",
            json!({}),
        )
        .await;
    let rows = read["data"]["deliveries"].as_array().expect("rows").clone();
    let quiet = body["question"]["id"].to_string();
    assert!(
        rows.iter()
            .filter(|r| r["questionId"] == json!(quiet))
            .all(|r| r["readsByLookup"] == true),
        "{read}"
    );
    assert!(
        rows.iter().any(|r| r["questionId"] == json!(quiet)),
        "{read}"
    );
    assert!(
        rows.iter()
            .filter(|r| r["questionId"] != json!(quiet))
            .all(|r| r["readsByLookup"] == false),
        "{read}"
    );
}

on_both_backends!(
    the_audit_log_filters_by_actor_and_pages_with_a_cursor,
    sign_ins_are_hidden_unless_asked_for,
    bad_cursors_and_filters_are_clear_errors,
    the_admin_desk_refuses_non_admins_as_every_admin_field_does,
    a_signal_is_acknowledged_once_audited_and_counted,
    reject_and_reverse_need_a_reason_which_the_answerer_and_the_agent_get,
    the_owed_list_names_who_is_owed_and_a_scheduled_row_leaves_it,
    the_review_queue_filters_by_niche_and_answerer,
);

on_both_backends! {
    // The default agent has an endpoint (nothing listens there; its deliveries just retry).
    config: |c| c.webhook_url = Some("http://127.0.0.1:9/hooks".into());
    a_delivery_to_an_agent_without_an_endpoint_says_it_is_read_by_lookup,
}

// ---- In the browser ----

/// Emulate the light or the dark colour scheme.
async fn scheme(browser: &mut Browser, dark: bool) {
    browser
        .call(
            "Emulation.setEmulatedMedia",
            json!({"features": [{"name": "prefers-color-scheme", "value": if dark { "dark" } else { "light" }}]}),
        )
        .await;
}

/// Wait until section `slug` is shown and has read what it shows.
async fn section_loaded(browser: &mut Browser, slug: &str) {
    let tab = AdminPage::tab(slug);
    browser
        .wait_for(
            &format!(
                "{tab} && {tab}.getAttribute('aria-current') === 'page' && document.querySelector('.tab-count') \
                 && document.querySelector('main section h2') \
                 && ![...document.querySelectorAll('main p')].some(p => p.textContent.trim().startsWith('Loading'))"
            ),
            &format!("the {slug} section"),
        )
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_admin_section_is_its_own_url_with_its_count_in_its_tab_and_passes_axe() {
    require_built_dashboard();
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    let scene = review_scene(&app).await;
    seed_signal(&app, "sig-1").await;
    book_revenue(&app, "inv-1").await;
    seed_audit(&app, &format!("user:{}", scene.root.id), "niche.updated", 3).await;
    let counts = app
        .graphql(Some(&scene.root.token), COUNTS, json!({}))
        .await;
    let c = &counts["data"]["adminCounts"];
    assert_eq!(
        (c["review"].clone(), c["newSignals"].clone()),
        (json!(1), json!(1)),
        "{counts}"
    );
    let owed = c["owed"].as_i64().expect("owed");
    assert!(owed >= 1, "{counts}");
    let mut browser = signed_in(&app, "root", "/admin").await;
    section_loaded(&mut browser, "review").await;
    let tabs = browser
        .eval("[...document.querySelectorAll('nav.admin-tabs a')].map(a => a.textContent.replace(/\\s+/g, ' ').trim())")
        .await;
    assert_eq!(
        tabs,
        json!([
            "Review (1)",
            "Members & budgets",
            "Deliveries (failed 0)",
            format!("Payouts (owed {owed})"),
            "Revenue",
            "Signals (new 1)",
            "Audit",
            "Agents"
        ]),
        "{tabs}"
    );
    for (slug, title, inside) in [
        ("review", "Review · Admin", "article.review"),
        (
            "members",
            "Members & budgets · Admin",
            ".niche-admin [data-budget-month]",
        ),
        ("deliveries", "Deliveries · Admin", "table.deliveries"),
        ("payouts", "Payouts · Admin", "table.owed"),
        ("revenue", "Revenue · Admin", "table.admin-events"),
        ("signals", "Signals · Admin", "li[data-signal-id=sig-1]"),
        ("audit", "Audit · Admin", "table.audit tr[data-audit-id]"),
    ] {
        browser.goto(&app.url(&format!("/admin/{slug}"))).await;
        section_loaded(&mut browser, slug).await;
        browser
            .wait_for(&format!("document.querySelector({inside:?})"), inside)
            .await;
        assert_eq!(
            browser.eval("document.title").await,
            json!(format!("{title} — askloop"))
        );
        assert_eq!(
            browser
                .eval("document.querySelectorAll('nav.admin-tabs a[aria-current=page]').length")
                .await,
            json!(1),
            "one current tab on {slug}"
        );
        for dark in [false, true] {
            scheme(&mut browser, dark).await;
            for (width, height, mobile) in [(1280, 900, false), (390, 844, true)] {
                browser.viewport(width, height, mobile).await;
                let what = format!(
                    "the {slug} section at {width} px, {} scheme",
                    if dark { "dark" } else { "light" }
                );
                assert_accessible(&mut browser, &what).await;
            }
        }
        scheme(&mut browser, false).await;
        browser.viewport(1280, 900, false).await;
    }
    // The tabs move between sections without a reload, and /admin is Review.
    AdminPage(&mut browser).open_section("members").await;
    AdminPage(&mut browser).open_section("review").await;
}

/// The budget of `games` as GraphQL reads it, in minor units.
async fn stored_budget(app: &TestApp, token: &str) -> Value {
    app.graphql(
        Some(token),
        "{ budget(nicheSlug: \"games\") { limitMinor bountyMinor maxBountyMinor } }",
        json!({}),
    )
    .await["data"]["budget"]
        .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_budget_editor_takes_money_and_refuses_what_is_not_an_amount() {
    require_built_dashboard();
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    let root = person(&app.db, "root", true).await;
    let mut browser = signed_in(&app, "root", "/admin/members").await;
    let month = AdminPage::budget_month("games");
    browser.wait_for(&month, "the budget of games").await;
    AdminPage(&mut browser)
        .set_budget("games", "25.30", "1.5", "5")
        .await;
    browser
        .wait_for_notice("The budget of games is saved.")
        .await;
    assert_eq!(
        stored_budget(&app, &root.token).await,
        json!({"limitMinor": 2530, "bountyMinor": 150, "maxBountyMinor": 500})
    );
    browser
        .wait_for(
            &format!("{month}.innerText.includes('left 25.30 USD')"),
            "the month in money",
        )
        .await;
    let niche = "document.querySelector('.niche-admin[data-slug=\"games\"]')";
    let monthly = labelled_in(niche, "Monthly limit in USD (empty for no limit)");
    browser
        .wait_for(
            &format!("{monthly}.value === '25.30'"),
            "the stored limit in the form",
        )
        .await;
    for bad in ["25.305", "-1", "abc"] {
        AdminPage(&mut browser)
            .set_budget("games", bad, "1.50", "5.00")
            .await;
        let alert = format!("{niche}.querySelector('.budget-editor [role=alert]')");
        browser
            .wait_for(
                &format!(
                    "{alert} && {alert}.textContent.includes({:?})",
                    format!("\"{bad}\" is not an amount of USD")
                ),
                &format!("the refusal of {bad}"),
            )
            .await;
        assert_eq!(
            browser
                .eval(&format!(
                    "{}.getAttribute('aria-invalid')",
                    labelled_in(niche, "Monthly limit in USD (empty for no limit)")
                ))
                .await,
            json!("true")
        );
        assert_eq!(
            stored_budget(&app, &root.token).await,
            json!({"limitMinor": 2530, "bountyMinor": 150, "maxBountyMinor": 500}),
            "{bad} changed nothing"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_section_filters_by_actor_pages_and_hides_sign_ins() {
    require_built_dashboard();
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    let root = person(&app.db, "root", true).await;
    let ana = person(&app.db, "ana", false).await;
    seed_audit(&app, &format!("user:{}", root.id), "niche.updated", 30).await;
    seed_audit(&app, &format!("user:{}", ana.id), "payout_account.saved", 2).await;
    // Signing in writes session.created for root: hidden by default.
    let mut browser = signed_in(&app, "root", "/admin/audit").await;
    let rows = "document.querySelectorAll('table.audit tbody tr')";
    browser
        .wait_for(&format!("{rows}.length === 25"), "the first page")
        .await;
    let actions = browser
        .eval(&format!("[...{rows}].map(r => r.dataset.action)"))
        .await;
    assert!(
        !actions.to_string().contains("session."),
        "sign-ins are hidden: {actions}"
    );
    assert_eq!(
        browser
            .eval("document.querySelector('table.audit tbody tr [data-actor]').textContent")
            .await,
        json!("ana"),
        "a handle, not user:<id>"
    );
    browser.fill(&labelled("Actor"), "root").await;
    browser
        .click(&button_in(
            "document.querySelector('form.audit-filters')",
            "Filter",
        ))
        .await;
    browser
        .wait_for(
            &format!("[...{rows}].every(r => r.querySelector('[data-actor]').textContent === 'root') && {rows}.length === 25"),
            "root's first page",
        )
        .await;
    browser
        .click("document.querySelector('[data-action=older]')")
        .await;
    browser
        .wait_for(&format!("{rows}.length === 30"), "root's second page")
        .await;
    assert_eq!(
        browser
            .eval("!!document.querySelector('[data-action=older]')")
            .await,
        json!(false),
        "no third page"
    );
    // Readable details, the raw record behind its toggle.
    let details = browser
        .eval("document.querySelector('table.audit tbody tr .audit-details').innerText")
        .await;
    assert!(details.to_string().contains("note"), "{details}");
    browser
        .click(&labelled("Show sign-ins and sign-outs"))
        .await;
    browser
        .click(&button_in(
            "document.querySelector('form.audit-filters')",
            "Filter",
        ))
        .await;
    browser
        .wait_for(
            &format!("[...{rows}].some(r => r.dataset.action === 'session.created')"),
            "root's sign-in shown",
        )
        .await;
}

/// root, an admin who also answers in `games`, answered a question; another admin, lee, exists.
async fn own_answer_scene(app: &TestApp) -> (Person, Person, String) {
    open_niche(&app.db, "games").await;
    let root = person(&app.db, "root", true).await;
    askloop_tests::people::member(
        &app.db,
        "games",
        &root,
        entity::niche_members::MemberRole::Operator,
        entity::niche_members::MemberStatus::Active,
    )
    .await;
    let lee = person(&app.db, "lee", true).await;
    let question = app.ask("games", "own").await;
    crate::review::act(
        app,
        &root,
        question,
        json!({"kind": "ANSWERED", "optionId": "full", "body": "Mine."}),
    )
    .await;
    let id = contribution_events::Entity::find()
        .filter(contribution_events::Column::UserId.eq(root.id))
        .one(&app.db)
        .await
        .expect("query")
        .expect("root's contribution")
        .id
        .to_string();
    (root, lee, id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admins_own_answer_offers_no_verify_or_reject() {
    require_built_dashboard();
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    let (_, _, id) = own_answer_scene(&app).await;
    let mut browser = signed_in(&app, "root", "/admin/review").await;
    let text = AdminPage(&mut browser).review_text(&id).await;
    assert!(
        text.contains("Your answer — another admin reviews it."),
        "{text}"
    );
    let item = AdminPage::review_item(&id);
    assert_eq!(
        browser
            .eval(&format!(
                "[...{item}.querySelectorAll('button')].map(b => b.textContent.trim())"
            ))
            .await,
        json!([]),
        "no decision offered on one's own answer"
    );
    // lee, another admin, is offered both.
    let mut lee = signed_in(&app, "lee", "/admin/review").await;
    AdminPage(&mut lee).review_text(&id).await;
    assert_eq!(
        lee.eval(&format!(
            "[...{item}.querySelectorAll('button')].map(b => b.dataset.action)"
        ))
        .await,
        json!(["verify", "reject"])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_shows_inside_the_review_item_it_belongs_to() {
    require_built_dashboard();
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    let scene = review_scene(&app).await;
    let lee = person(&app.db, "lee", true).await;
    let mut browser = browser().await;
    browser.add_init_script(HOLD_LIVE).await;
    sign_in_to(&mut browser, &app, "root", "/admin/review").await;
    AdminPage(&mut browser)
        .review_text(&scene.contribution)
        .await;
    // Another admin decides first, and the news of it is slow to reach root's page (the live
    // inbox would otherwise take the item away): root's item is stale.
    browser.eval("window.__liveHeld = true").await;
    let verified = app
        .graphql(
            Some(&lee.token),
            "mutation($id: ID!) { verifyContribution(id: $id) { status } }",
            json!({"id": scene.contribution}),
        )
        .await;
    assert!(verified["errors"].is_null(), "{verified}");
    let item = AdminPage::review_item(&scene.contribution);
    browser.click(&button_in(&item, "Verify")).await;
    let alert = format!("{item}.querySelector('[role=alert]')");
    browser.wait_for(&alert, "the refusal in the item").await;
    let refusal = browser.text(&alert).await;
    assert!(
        refusal
            .to_lowercase()
            .contains("only pending contributions can be verified"),
        "{refusal}"
    );
    assert_eq!(
        browser
            .eval(&format!(
                "[...document.querySelectorAll('main [role=alert]')].every(a => {item}.contains(a))"
            ))
            .await,
        json!(true),
        "no refusal outside the item"
    );
    assert_eq!(
        browser
            .eval(&format!(
                "!!{item}.querySelector('[aria-live]').contains({alert})"
            ))
            .await,
        json!(true),
        "announced"
    );
    // When the news arrives, the decided item leaves the inbox.
    browser.eval("window.__releaseLive()").await;
    browser
        .wait_for(&format!("!{item}"), "the decided item to leave")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reject_asks_for_a_reason_and_the_agent_receives_it() {
    require_built_dashboard();
    let receiver = Receiver::start(Vec::new()).await;
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.webhook_url = Some(receiver.url.clone());
        c.delivery.poll = Duration::from_millis(50);
        c.delivery.retry_base = Duration::from_millis(50);
    })
    .await
    .expect("an app");
    let (ana, question) = crate::tasks::a_task(&app).await;
    let root = person(&app.db, "root", true).await;
    let done = app
        .graphql(
            Some(&ana.token),
            "mutation($id: ID!) { answerQuestion(input: {questionId: $id, kind: ANSWERED, body: \"Three prices, linked.\", actualCostMinor: 420}) { notice } }",
            json!({"id": question.to_string()}),
        )
        .await;
    assert!(done["errors"].is_null(), "{done}");
    let id = contribution_events::Entity::find()
        .filter(contribution_events::Column::UserId.eq(ana.id))
        .one(&app.db)
        .await
        .expect("query")
        .expect("ana's contribution")
        .id
        .to_string();
    let _ = root;
    let mut browser = signed_in(&app, "root", "/admin/review").await;
    let text = AdminPage(&mut browser).review_text(&id).await;
    // A task is judged on its cost: shown against its limit.
    assert!(
        text.contains("Reported cost 4.20 USD of a 5.00 USD limit"),
        "{text}"
    );
    let item = AdminPage::review_item(&id);
    browser.eval("window.scrollTo(0, 0); true").await;
    let shot = browser
        .screenshot_into(
            std::path::Path::new("/work/scratch/shots"),
            "review-section",
            true,
        )
        .await;
    assert!(std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0) > 1_000);

    browser.click(&button_in(&item, "Reject…")).await;
    browser
        .wait_for(&labelled_in(&item, "Reason (required)"), "the reason field")
        .await;
    // An empty reason is refused in place; nothing is sent.
    browser
        .click(&button_in(&item, "Reject with this reason"))
        .await;
    browser
        .wait_for(
            &format!("{item}.querySelector('.reject-confirm [role=alert]')"),
            "the missing reason",
        )
        .await;
    assert_eq!(
        browser
            .eval(&format!(
                "{}.getAttribute('aria-invalid')",
                labelled_in(&item, "Reason (required)")
            ))
            .await,
        json!("true")
    );
    let pending = contribution_events::Entity::find_by_id(id.parse::<i64>().expect("an id"))
        .one(&app.db)
        .await
        .expect("query")
        .expect("the contribution");
    assert_eq!(
        pending.status,
        contribution_events::ContributionStatus::Pending
    );
    browser
        .fill(&labelled_in(&item, "Reason (required)"), "No links given.")
        .await;
    browser
        .click(&button_in(&item, "Reject with this reason"))
        .await;
    browser.wait_for_notice("ana's answer — Rejected").await;
    receiver
        .wait_until(Duration::from_secs(20), "the rejection", |received| {
            received
                .iter()
                .any(|r| r.envelope["type"] == "expert_answer.rejected")
        })
        .await;
    let rejection = receiver
        .received()
        .into_iter()
        .find(|r| r.envelope["type"] == "expert_answer.rejected")
        .expect("the rejection");
    assert_eq!(rejection.envelope["payload"]["note"], "No links given.");
    assert!(rejection.verified);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signals_are_acknowledged_in_the_browser_and_leave_the_count() {
    require_built_dashboard();
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    person(&app.db, "root", true).await;
    seed_signal(&app, "sig-1").await;
    let mut browser = signed_in(&app, "root", "/admin/signals").await;
    let tab = AdminPage::tab("signals");
    browser
        .wait_for(
            &format!("{tab}.textContent.includes('(new 1)')"),
            "one new signal",
        )
        .await;
    let signal = "document.querySelector('li[data-signal-id=sig-1]')";
    browser.wait_for(signal, "the signal").await;
    browser
        .click(&button_in(signal, "Acknowledge fast_answers"))
        .await;
    browser
        .wait_for(
            &format!("{signal} && {signal}.innerText.includes('Acknowledged by root')"),
            "the acknowledgement",
        )
        .await;
    browser
        .wait_for(
            &format!("{tab}.textContent.includes('(new 0)')"),
            "no new signal",
        )
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_payouts_owed_list_settles_a_row() {
    require_built_dashboard();
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let root = person(&app.db, "root", true).await;
    book_revenue(&app, "inv-1").await;
    verified_address(&app, &ana, &root).await;
    let mut browser = signed_in(&app, "root", "/admin/payouts").await;
    let row = "document.querySelector('tr[data-owed=\"ana:USD\"]')";
    browser.wait_for(row, "ana's row").await;
    let owed = browser.text(row).await;
    assert!(owed.contains("USD"), "{owed}");
    browser
        .click(&button_in(row, "Schedule payout to ana in USD"))
        .await;
    browser
        .wait_for_notice("A payout to ana in USD is scheduled.")
        .await;
    browser
        .wait_for(&format!("!{row}"), "ana's row settled")
        .await;
    browser
        .wait_for(
            "document.querySelector('li[data-payout-id] [data-action=mark-paid]')",
            "the scheduled payout",
        )
        .await;
    let payouts = entity::payouts::Entity::find()
        .all(&app.db)
        .await
        .expect("query");
    assert_eq!(payouts.len(), 1);
}
