//! A delegated task in a real browser (docs/contract.md#delegated-tasks): its card says "Task"
//! and its limit, an operator completes it from the card with a result and what it cost, and
//! the niche's revenue page shows the task's limit, actual cost and release, and task spend
//! apart from question bounties.

use askloop_tests::browser::labelled_in;
use askloop_tests::{Backend, TestApp};
use entity::budget_entries::BudgetEntryKind::{Charge, Release, Reserve};
use serde_json::json;

use crate::money::{ask_with_bounty, entries};
use crate::review_pages::{assert_accessible, assert_no_sideways_scroll};
use crate::tasks::a_task;
use askloop_tests::pages::{self, QueuePage, signed_in};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_completes_a_task_from_its_card_and_the_revenue_page_shows_its_cost() {
    pages::require_built_dashboard();
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    // A task limited to 5.00, and a question with a bounty of 2.00 that ana answers, so the
    // revenue page has both kinds of spending to tell apart.
    let (ana, task) = a_task(&app).await;
    let (status, asked) = ask_with_bounty(&app, "games", "q-1", 200).await;
    assert_eq!(status, 201, "{asked}");
    let answered = app
        .answer(
            &ana.token,
            askloop_tests::answers::early_access(
                asked["question"]["id"].as_i64().expect("an id"),
                Some("The 1.0 date."),
            ),
        )
        .await;
    assert!(answered["errors"].is_null(), "{answered}");

    let mut browser = signed_in(&app, "ana", "/dashboard/niches/games/questions").await;
    QueuePage(&mut browser)
        .wait_for_card(task, "the task's card")
        .await;
    QueuePage(&mut browser).open(task).await;
    let card = QueuePage::card(task);
    assert_eq!(
        browser
            .text(&format!("{card}.querySelector('.badge.task')"))
            .await,
        "Task · up to 5.00 USD"
    );
    assert_eq!(
        browser
            .text(&format!("{card}.querySelector('.deliverable')"))
            .await,
        "To deliver: The three prices, each with its link."
    );
    assert_accessible(&mut browser, "the queue showing a task").await;
    browser.screenshot("task-card-desktop").await;

    // Completing without saying what it cost is refused next to the form; nothing is sent.
    let result = labelled_in(&card, "The result");
    browser
        .fill(&result, "£12, £15 and £19, links below.")
        .await;
    QueuePage(&mut browser).press(task, "Complete task").await;
    let refusal = QueuePage(&mut browser).refusal(task).await;
    assert!(refusal.contains("Say what it cost"), "{refusal}");
    assert!(refusal.contains("5.00 USD"), "{refusal}");
    assert_eq!(entries(&app, task).await, vec![(Reserve, 500)]);

    // With a cost, it is completed: charged 0.75, the other 4.25 released.
    browser
        .fill(
            &labelled_in(&card, "What it cost (0.00 to 5.00 USD)"),
            "0.75",
        )
        .await;
    QueuePage(&mut browser).press(task, "Complete task").await;
    QueuePage(&mut browser)
        .wait_for_card_to_leave(task, "the completed task's card to go")
        .await;
    assert_eq!(
        entries(&app, task).await,
        vec![(Reserve, 500), (Charge, 75), (Release, 425)]
    );

    // The revenue page: task spend apart from question bounties, and the task's own line.
    browser
        .goto(&app.url("/dashboard/niches/games/revenue"))
        .await;
    browser
        .wait_for(
            "document.querySelector('tr[data-exchange-kind=task]')",
            "the task on the revenue page",
        )
        .await;
    let figure = |name: &str| format!("document.querySelector('[data-{name}]')");
    assert_eq!(browser.text(&figure("spend=tasks")).await, "0.75 USD");
    assert_eq!(browser.text(&figure("spend=questions")).await, "2.00 USD");
    let row = format!("document.querySelector('tr[data-exchange-id=\"{task}\"]')");
    let cell = |name: &str| format!("{row}.querySelector('[data-exchange={name}]')");
    for (name, shown) in [
        ("limit", "5.00 USD"),
        ("actual", "0.75 USD"),
        ("released", "4.25 USD"),
        ("outstanding", "0.00 USD"),
    ] {
        assert_eq!(browser.text(&cell(name)).await, shown, "{name}");
    }
    assert_eq!(
        browser
            .eval(&format!(
                "{row}.querySelector('svg.exchange-bar').getAttribute('aria-label')"
            ))
            .await,
        json!("0.75 USD of 5.00 USD cost, 4.25 USD released, 0.00 USD still reserved")
    );
    assert_eq!(
        browser
            .eval("document.querySelector('svg.spend-split').getAttribute('aria-label')")
            .await,
        json!("Spent this month: 2.00 USD on question bounties, 0.75 USD on tasks")
    );
    let question_row = browser
        .eval("[...document.querySelectorAll('tr[data-exchange-kind=question] [data-exchange]')].map(c => c.textContent)")
        .await;
    assert_eq!(
        question_row,
        json!(["2.00 USD", "2.00 USD", "0.00 USD", "0.00 USD"])
    );
    assert_accessible(&mut browser, "the revenue page with a task").await;
    browser.screenshot("task-revenue-desktop").await;
    browser.viewport(390, 844, true).await;
    assert_no_sideways_scroll(&mut browser, "the revenue page at 390 px").await;
    assert_accessible(&mut browser, "the revenue page at 390 px").await;
    browser.screenshot("task-revenue-phone").await;
}
