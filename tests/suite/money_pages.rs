//! Money that agrees (issue 31, item 7): a niche's gross leaves out a reversed (rejected)
//! bounty, as its budget does, and lists the reversal beside it; allocations, events and budget
//! entries name their question; the revenue pages chart by day with dated axes and points the
//! keyboard reaches and that say their value; the pages pass axe-core at desktop and phone
//! widths in the light and the dark scheme.
//!
//! With `ASKLOOP_SCREENSHOTS` naming a folder, the browser test leaves `revenue-chart.png` and
//! `revenue-chart-dark.png` there (the niche revenue page at 1280 px, light and dark).

use std::path::PathBuf;

use askloop_tests::answers::early_access;
use askloop_tests::browser::Browser;
use askloop_tests::pages::signed_in;
use askloop_tests::people::{Person, operator, person};
use askloop_tests::{Backend, TestApp, on_both_backends};
use chrono::{Duration, Utc};
use entity::revenue_events;
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::{Value, json};

use crate::money::{ask_with_bounty, budgeted_niche};
use crate::review_pages::{assert_accessible, assert_no_sideways_scroll};

const REVENUE: &str = "/api/v1/internal/revenue-events";
const NICHE_REVENUE: &str = "{ nicheRevenue(nicheSlug: \"games\") { grossMinor netMinor eventCount reversedGrossMinor \
     reversedEvents { id externalId grossMinor questionId } recentEvents { id grossMinor questionId } \
     myAllocations { questionId revenueEventId amountMinor status } } \
     budget(nicheSlug: \"games\") { spentMinor questionSpendMinor } }";

/// `games` with a budget of 100.00: a subscription of 100.00 booked six days ago, q-1 (a
/// bounty of 10.00) answered by ana and rejected, q-2 (5.00) answered by bob and not yet
/// reviewed. Returns (ana, bob, root, q-1, q-2).
struct Scene {
    bob: Person,
    root: Person,
    rejected: i64,
    standing: i64,
}

async fn scene(app: &TestApp) -> Scene {
    budgeted_niche(app, "games", Some(10_000), 0).await;
    let ana = operator(&app.db, "games", "ana").await;
    let bob = operator(&app.db, "games", "bob").await;
    let root = person(&app.db, "root", true).await;
    let event = json!({"nicheSlug": "games", "externalId": "inv-1", "sourceType": "subscription",
        "grossMinor": 10_000, "currency": "USD"});
    let booked = app.post_signed(REVENUE, &event.to_string()).await;
    assert_eq!(booked.status(), 201);
    revenue_events::Entity::update_many()
        .col_expr(
            revenue_events::Column::CreatedAt,
            Expr::value(Utc::now() - Duration::days(6)),
        )
        .filter(revenue_events::Column::ExternalId.eq("inv-1"))
        .exec(&app.db)
        .await
        .expect("backdated");
    let ask = |external: &'static str, bounty: i64| async move {
        let (status, asked) = ask_with_bounty(app, "games", external, bounty).await;
        assert_eq!(status, 201, "{asked}");
        asked["question"]["id"].as_i64().expect("an id")
    };
    let rejected = ask("q-1", 1000).await;
    let standing = ask("q-2", 500).await;
    let answered = app
        .answer(&ana.token, early_access(rejected, Some("A guess.")))
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    app.decide_newest_contribution(&root.token, "rejectContribution", Some("A guess."))
        .await;
    let answered = app
        .answer(&bob.token, early_access(standing, Some("The date.")))
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    Scene {
        bob,
        root,
        rejected,
        standing,
    }
}

on_both_backends!(
    a_rejected_bounty_is_left_out_of_the_niche_gross_and_listed_as_reversed,
    allocations_and_events_name_their_question,
);

async fn a_rejected_bounty_is_left_out_of_the_niche_gross_and_listed_as_reversed(app: TestApp) {
    let s = scene(&app).await;
    let read = app
        .graphql(Some(&s.root.token), NICHE_REVENUE, json!({}))
        .await;
    assert!(read["errors"].is_null(), "{read}");
    let revenue = &read["data"]["nicheRevenue"];
    // The subscription and q-2's bounty stand; q-1's 10.00 was given back.
    assert_eq!(revenue["grossMinor"], 10_500, "{revenue}");
    assert_eq!(revenue["eventCount"], 2, "{revenue}");
    assert_eq!(revenue["reversedGrossMinor"], 1000, "{revenue}");
    let reversed = revenue["reversedEvents"].as_array().expect("a list");
    assert_eq!(reversed.len(), 1, "{revenue}");
    assert_eq!(reversed[0]["grossMinor"], 1000);
    assert_eq!(reversed[0]["questionId"], s.rejected.to_string());
    // The same figure the budget shows: of the bounties, only q-2's 5.00 is spent.
    let budget = &read["data"]["budget"];
    assert_eq!(budget["spentMinor"], 500, "{budget}");
    assert_eq!(budget["questionSpendMinor"], 500, "{budget}");
    let bounties_in_gross = revenue["grossMinor"].as_i64().unwrap_or_default() - 10_000;
    assert_eq!(json!(bounties_in_gross), budget["questionSpendMinor"]);
    // The recent events still list the reversed one (the page marks it).
    let recent: Vec<&Value> = revenue["recentEvents"]
        .as_array()
        .expect("a list")
        .iter()
        .collect();
    assert_eq!(recent.len(), 3, "{revenue}");
}

async fn allocations_and_events_name_their_question(app: TestApp) {
    let s = scene(&app).await;
    let (standing, rejected) = (s.standing.to_string(), s.rejected.to_string());
    let read = app
        .graphql(Some(&s.bob.token), NICHE_REVENUE, json!({}))
        .await;
    assert!(read["errors"].is_null(), "{read}");
    let mine = read["data"]["nicheRevenue"]["myAllocations"]
        .as_array()
        .expect("a list")
        .clone();
    // bob's part of q-2's bounty (held for review) and of the subscription (no question).
    let for_q2: Vec<&Value> = mine
        .iter()
        .filter(|a| a["questionId"] == standing.as_str())
        .collect();
    assert_eq!(for_q2.len(), 1, "{mine:?}");
    assert_eq!(for_q2[0]["status"], "HELD");
    assert!(
        mine.iter()
            .any(|a| a["questionId"].is_null() && a["revenueEventId"].is_string()),
        "{mine:?}"
    );
    let events = read["data"]["nicheRevenue"]["recentEvents"]
        .as_array()
        .expect("a list")
        .clone();
    assert!(
        events.iter().any(|e| e["questionId"] == rejected.as_str()),
        "{events:?}"
    );
    let mine_everywhere = app
        .graphql(
            Some(&s.bob.token),
            "{ myRevenue { allocations { questionId payoutId } } }",
            json!({}),
        )
        .await;
    let all = mine_everywhere["data"]["myRevenue"]["allocations"]
        .as_array()
        .expect("a list")
        .clone();
    assert!(
        all.iter()
            .any(|a| a["questionId"] == standing.as_str() && a["payoutId"].is_null()),
        "{all:?}"
    );
}

/// Emulate the light or the dark colour scheme.
pub(crate) async fn scheme(browser: &mut Browser, dark: bool) {
    let value = if dark { "dark" } else { "light" };
    browser
        .call(
            "Emulation.setEmulatedMedia",
            json!({"features": [{"name": "prefers-color-scheme", "value": value}]}),
        )
        .await;
}

/// axe-core finds nothing serious on the page shown now, at 1280 and 390 px, in the light and
/// the dark scheme, and nothing scrolls sideways; back to 1280 px and light after.
pub(crate) async fn accessible_everywhere(browser: &mut Browser, what: &str) {
    for dark in [false, true] {
        scheme(browser, dark).await;
        for (width, height, mobile) in [(1280, 900, false), (390, 844, true)] {
            browser.viewport(width, height, mobile).await;
            let said = format!(
                "{what} at {width} px, {} scheme",
                if dark { "dark" } else { "light" }
            );
            assert_no_sideways_scroll(browser, &said).await;
            assert_accessible(browser, &said).await;
        }
    }
    scheme(browser, false).await;
    browser.viewport(1280, 900, false).await;
}

/// Save what the browser shows as `name`.png in the folder `ASKLOOP_SCREENSHOTS` names.
pub(crate) async fn keep_screenshot(browser: &mut Browser, name: &str) {
    if let Some(dir) = std::env::var_os("ASKLOOP_SCREENSHOTS").filter(|d| !d.is_empty()) {
        let path = browser
            .screenshot_into(&PathBuf::from(dir), name, true)
            .await;
        let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        assert!(size > 1_000, "{} is only {size} bytes", path.display());
    }
}

/// The text of the first element `selector` matches, whitespace normalised.
async fn text_of(browser: &mut Browser, selector: &str) -> String {
    let selector = serde_json::to_string(selector).unwrap_or_default();
    browser
        .eval(&format!(
            "(document.querySelector({selector})?.textContent ?? '').replace(/\\s+/g, ' ').trim()"
        ))
        .await
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_revenue_pages_agree_with_the_budget_chart_by_day_and_link_to_questions() {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    let s = scene(&app).await;
    let path = "/dashboard/niches/games/revenue";
    let mut browser = signed_in(&app, "bob", path).await;
    browser
        .wait_for(
            "document.querySelector('[data-total=gross]') && document.querySelector('.earnings-chart')",
            "the niche revenue page with its chart",
        )
        .await;

    // The gross leaves the rejected bounty out and the reversal is listed beside it.
    assert_eq!(
        text_of(&mut browser, "[data-total=gross]").await,
        "105.00 USD"
    );
    assert_eq!(
        text_of(&mut browser, "[data-total=reversed]").await,
        "10.00 USD"
    );
    let reversed_link = format!(
        "document.querySelector('.reversed-list a[href=\"/dashboard/niches/games/questions/{}\"]')",
        s.rejected
    );
    browser
        .wait_for(&reversed_link, "the reversed bounty's link to its question")
        .await;
    assert_eq!(
        text_of(&mut browser, "[data-spend=questions]").await,
        "5.00 USD",
        "the budget's bounties are the bounties in the gross"
    );
    let shares = text_of(&mut browser, ".shares").await;
    assert!(shares.contains("of each event's net"), "{shares}");
    assert!(
        text_of(&mut browser, "tr[data-reversed=true]")
            .await
            .contains("reversed")
    );

    // Dated axes: two days, six days apart, and the totals on the other axis.
    let days = browser
        .eval("[...document.querySelectorAll('.earnings-chart text[data-axis=x]')].map(t => t.textContent)")
        .await;
    let days = days.as_array().expect("labels").clone();
    assert_eq!(days.len(), 2, "{days:?}");
    let day = regex_like_day();
    for label in &days {
        let label = label.as_str().unwrap_or_default();
        assert!(
            browser.eval(&format!("{day}.test({label:?})")).await == json!(true),
            "{label}"
        );
    }
    assert_ne!(days[0], days[1]);
    let top = browser
        .eval("[...document.querySelectorAll('.earnings-chart text[data-axis=y]')].map(t => t.textContent)")
        .await;
    assert!(top.to_string().contains("105.00 USD"), "{top}");

    // The keyboard reaches each day's point, which says its value.
    browser
        .eval(&format!("{reversed_link}.focus(); true"))
        .await;
    browser.press_tab().await;
    let focused = browser
        .eval("document.activeElement.classList.contains('chart-point') && document.activeElement.getAttribute('aria-label')")
        .await;
    let said = focused.as_str().unwrap_or_default().to_owned();
    assert!(
        browser
            .eval(&format!(
                "/^\\d{{1,2}} [A-Z][a-z]{{2}}: 100\\.00 USD$/.test({said:?})"
            ))
            .await
            == json!(true),
        "the first point focused says its day and value: {focused}"
    );
    assert_eq!(
        text_of(&mut browser, ".earnings-chart .chart-readout").await,
        said
    );
    browser.press_tab().await;
    let second = browser
        .eval("document.activeElement.getAttribute('aria-label')")
        .await;
    assert!(second.to_string().contains(": 105.00 USD"), "{second}");
    // The values are in a table too.
    let table = text_of(&mut browser, ".earnings-chart .chart-values tbody").await;
    assert!(
        table.contains("100.00 USD") && table.contains("105.00 USD"),
        "{table}"
    );
    browser.eval("document.activeElement.blur(); true").await;
    keep_screenshot(&mut browser, "revenue-chart").await;
    scheme(&mut browser, true).await;
    keep_screenshot(&mut browser, "revenue-chart-dark").await;
    scheme(&mut browser, false).await;
    accessible_everywhere(&mut browser, "the niche revenue page").await;

    // My revenue: the allocation for q-2 links to its question; the chart is there too.
    browser.goto(&app.url("/dashboard/revenue")).await;
    let allocation_link = format!(
        "document.querySelector('tr[data-allocation-id] a[href=\"/dashboard/niches/games/questions/{}\"]')",
        s.standing
    );
    browser
        .wait_for(&allocation_link, "bob's allocation, linked to its question")
        .await;
    browser
        .wait_for(
            "document.querySelector('.earnings-chart .chart-point[tabindex=\"0\"]')",
            "bob's earnings chart with its points",
        )
        .await;
    browser.click(&allocation_link).await;
    browser
        .wait_for(
            &format!(
                "location.pathname === '/dashboard/niches/games/questions/{}'",
                s.standing
            ),
            "the question page, by the allocation's link",
        )
        .await;
    browser.goto(&app.url("/dashboard/revenue")).await;
    browser.wait_for(&allocation_link, "my revenue again").await;
    accessible_everywhere(&mut browser, "my revenue page").await;
}

/// A JavaScript regular expression for a day as the chart names it ("3 Dec").
fn regex_like_day() -> &'static str {
    "/^\\d{1,2} [A-Z][a-z]{2}$/"
}
