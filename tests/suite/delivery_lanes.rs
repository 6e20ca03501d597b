//! Every receiver has its own lane, on both backends: agents' events never wait behind operator
//! webhooks, one endpoint that hangs holds up nothing but itself, test events are limited and
//! sent once; a suspended member's webhooks and mail hear nothing more; a member's webhook whose
//! name resolves to this machine is refused at delivery, and its owner learns only that; and a
//! signed link for an account that is gone is a clear refusal.
//!
//! Receivers run on 127.0.0.1, so the webhooks that must reach them are registered by an admin
//! (an admin's webhook may reach a private address; a member's may not). Names resolve through
//! a map the test sets (`askloop_tests::resolver`), never through real DNS.

use askloop_tests::answers::early_access;
use std::time::{Duration, Instant};

use askloop::config::Config;
use askloop::domain::addresses::NOT_PUBLIC;
use askloop::service::reach::operator_hooks::OWNER_DEPARTED;
use askloop_tests::fixtures::open_niche;
use askloop_tests::people::{Person, operator, person, verified_address};
use askloop_tests::receiver::{Receiver, Reply, reserve_port};
use askloop_tests::resolver::fixed_names;
use askloop_tests::wait;
use askloop_tests::{TestApp, error_code, on_both_backends};
use entity::agents::WebhookScheme;
use entity::deliveries::{self, DeliveryStatus};
use entity::{delivery_attempts, notifications};
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::{Value, json};

use crate::agents::{ask_as, register};

const WAIT: Duration = Duration::from_secs(20);

const REGISTER: &str = "mutation($niche: String!, $url: String!) { registerOperatorWebhook(nicheSlug: $niche, url: $url) { webhook { id } } }";
const TEST_SEND: &str = "mutation($id: ID!) { testOperatorWebhook(id: $id) }";
const HOOK_LOG: &str = "query($id: ID!) { operatorWebhookDeliveries(id: $id) { status attempts lastStatusCode lastError droppedReason } }";

/// Long timeouts, as in production, so a hanging endpoint really holds its slots while a test
/// looks at everything else; a fast poll; retries far apart, so each delivery is tried once
/// while a test runs; names resolved only from the test's map.
fn lanes(config: &mut Config) {
    config.delivery.timeout = Duration::from_secs(15);
    config.delivery.lease = Duration::from_secs(45);
    config.delivery.poll = Duration::from_millis(50);
    config.delivery.retry_base = Duration::from_secs(60);
    config.resolver = fixed_names(&[("hook.example.test", "127.0.0.1")]);
    // The receivers speak plain HTTP; members' webhooks are otherwise https:// only.
    config.delivery.plain_http_hooks = true;
}

/// [`lanes`], with the default agent's events going to a receiver a test starts later
/// ([`Receiver::start_for`]), and room for forty test events.
fn lanes_with_an_agent(config: &mut Config) {
    lanes(config);
    config.webhook_url = Some(Receiver::url_for(reserve_port()));
    config.webhook_tests.per_webhook = 40;
    config.webhook_tests.per_person = 40;
}

/// Register a webhook for `niche` as `owner`; its id.
async fn register_hook(app: &TestApp, owner: &Person, niche: &str, url: &str) -> String {
    let made = app
        .graphql(
            Some(&owner.token),
            REGISTER,
            json!({"niche": niche, "url": url}),
        )
        .await;
    assert!(made["errors"].is_null(), "{made}");
    made["data"]["registerOperatorWebhook"]["webhook"]["id"]
        .as_str()
        .expect("a webhook id")
        .to_owned()
}

async fn test_send(app: &TestApp, owner: &Person, hook: &str) -> Value {
    app.graphql(Some(&owner.token), TEST_SEND, json!({"id": hook}))
        .await
}

fn row_id(hook: &str) -> i64 {
    hook.parse().expect("a numeric id")
}

async fn deliveries_of(app: &TestApp, hook: &str) -> Vec<deliveries::Model> {
    deliveries::Entity::find()
        .filter(deliveries::Column::WebhookId.eq(row_id(hook)))
        .all(&app.db)
        .await
        .expect("query")
}

async fn attempts_of(app: &TestApp, hook: &str) -> u64 {
    let ids: Vec<i64> = deliveries_of(app, hook)
        .await
        .iter()
        .map(|d| d.id)
        .collect();
    delivery_attempts::Entity::find()
        .filter(delivery_attempts::Column::DeliveryId.is_in(ids))
        .count(&app.db)
        .await
        .expect("count")
}

/// Wait until `check` holds of `hook`'s deliveries; them.
async fn wait_for_deliveries(
    app: &TestApp,
    hook: &str,
    what: &str,
    check: impl Fn(&[deliveries::Model]) -> bool,
) -> Vec<deliveries::Model> {
    let check = &check;
    wait::until_ok(WAIT, || async move {
        let found = deliveries_of(app, hook).await;
        if check(&found) {
            Ok(found)
        } else {
            Err(format!("{what}: {found:?}"))
        }
    })
    .await
}

fn expert_answers(received: &[askloop_tests::receiver::Received]) -> usize {
    received
        .iter()
        .filter(|r| r.envelope["type"] == "expert_answer.created")
        .count()
}

// ----------------------------------------------------------------------------------------------
// Lanes

on_both_backends! {
    config: lanes_with_an_agent;
    forty_test_sends_to_a_hanging_hook_leave_an_agents_answer_delivered_before_any_gives_up,
}

async fn forty_test_sends_to_a_hanging_hook_leave_an_agents_answer_delivered_before_any_gives_up(
    app: TestApp,
) {
    open_niche(&app.db, "games").await;
    let root = person(&app.db, "root", true).await;
    let ana = operator(&app.db, "games", "ana").await;
    let agent = Receiver::start_for(&app, Vec::new()).await;
    let hanging = Receiver::start(vec![Reply::Hang; 50]).await;
    let hook = register_hook(&app, &root, "games", &hanging.url).await;
    let question = app.ask("games", "q-1").await;
    for _ in 0..40 {
        let sent = test_send(&app, &root, &hook).await;
        assert!(sent["errors"].is_null(), "{sent}");
    }
    hanging
        .wait_until(WAIT, "the hook's lane to be busy", |r| !r.is_empty())
        .await;

    let answered_at = Instant::now();
    let answered = app
        .answer(&ana.token, early_access(question, Some("The 1.0 date.")))
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    // The agent's lane is idle, so the answer goes out at the next poll; before lanes it waited
    // for the forty test sends' 15 s timeouts, eight at a time. The fact that says it did not
    // wait: when it arrived, no send to the hanging hook had given up yet (an attempt is
    // counted when it ends), however slow the machine.
    agent
        .wait_until(WAIT, "the answer to reach the agent", |r| {
            expert_answers(r) == 1
        })
        .await;
    let ended: i64 = deliveries_of(&app, &hook)
        .await
        .iter()
        .map(|d| d.attempts)
        .sum();
    assert_eq!(
        ended,
        0,
        "the answer waited for a hanging send to give up ({:?} after answering)",
        answered_at.elapsed()
    );
    assert!(
        hanging.received().len() <= 2,
        "the hanging hook holds at most its share: {}",
        hanging.received().len()
    );
}

on_both_backends! {
    config: lanes;
    a_hook_that_always_times_out_does_not_slow_another_hooks_deliveries,
    a_slow_agent_endpoint_does_not_delay_another_agents_deliveries,
    a_test_event_is_sent_once_and_not_retried,
}

async fn a_hook_that_always_times_out_does_not_slow_another_hooks_deliveries(app: TestApp) {
    open_niche(&app.db, "games").await;
    let root = person(&app.db, "root", true).await;
    let hanging = Receiver::start(vec![Reply::Hang; 50]).await;
    let fine = Receiver::start(Vec::new()).await;
    let stuck = register_hook(&app, &root, "games", &hanging.url).await;
    register_hook(&app, &root, "games", &fine.url).await;
    for n in 0..10 {
        app.ask("games", &format!("q-{n}")).await;
    }
    fine.wait_until(WAIT, "every question at the fine hook", |r| r.len() == 10)
        .await;
    // The fine hook heard of all ten while the stuck one's first attempts were still waiting
    // for their 15 s timeout: nothing it sent waited behind them.
    assert_eq!(
        attempts_of(&app, &stuck).await,
        0,
        "the stuck hook's attempts are still in flight"
    );
    assert!(
        hanging.received().len() <= 2,
        "the stuck hook holds at most its share: {}",
        hanging.received().len()
    );
}

async fn a_slow_agent_endpoint_does_not_delay_another_agents_deliveries(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let (slow_addr, fast_addr) = (reserve_port(), reserve_port());
    let slow_secret = register(
        &app,
        "slow-agent",
        &["games"],
        Some(&Receiver::url_for(slow_addr)),
        WebhookScheme::Chovy,
    )
    .await;
    let fast_secret = register(
        &app,
        "fast-agent",
        &["games"],
        Some(&Receiver::url_for(fast_addr)),
        WebhookScheme::Chovy,
    )
    .await;
    let slow = Receiver::start_verifying(slow_addr, &slow_secret, vec![Reply::Hang; 50]).await;
    let fast = Receiver::start_verifying(fast_addr, &fast_secret, Vec::new()).await;
    let mut questions = Vec::new();
    // The slow agent's answers are due first, so a worker that waits for what it claimed
    // first would hold the fast agent's behind them.
    for (slug, secret) in [("slow-agent", &slow_secret), ("fast-agent", &fast_secret)] {
        for n in 0..5 {
            let (status, body) = ask_as(&app, slug, secret, "games", &format!("{slug}-{n}")).await;
            assert_eq!(status, 201, "{body}");
            questions.push(body["question"]["id"].as_i64().expect("an id"));
        }
    }
    for id in questions {
        let answered = app
            .answer(&ana.token, early_access(id, Some("The 1.0 date.")))
            .await;
        assert!(answered["errors"].is_null(), "{answered}");
    }
    fast.wait_until(WAIT, "the fast agent's five answers", |r| {
        expert_answers(r) == 5
    })
    .await;
    assert!(fast.received().iter().all(|r| r.verified));
    let of_agent = |slug: &'static str| {
        let db = app.db.clone();
        async move {
            let agent = entity::agents::Entity::find()
                .filter(entity::agents::Column::Slug.eq(slug))
                .one(&db)
                .await
                .expect("query")
                .expect("the agent");
            deliveries::Entity::find()
                .filter(deliveries::Column::AgentId.eq(agent.id))
                .all(&db)
                .await
                .expect("query")
        }
    };
    wait::until_some("the fast agent's deliveries are recorded", WAIT, || async {
        of_agent("fast-agent")
            .await
            .iter()
            .all(|d| d.status == DeliveryStatus::Delivered)
            .then_some(())
    })
    .await;
    // All five delivered while the slow agent's first attempts still wait for their 15 s
    // timeout: none of the fast agent's waited behind them.
    let slow_rows = of_agent("slow-agent").await;
    assert_eq!(slow_rows.len(), 5);
    assert!(
        slow_rows.iter().all(|d| d.attempts == 0),
        "the slow agent's attempts are still in flight: {slow_rows:?}"
    );
    assert!(!slow.received().is_empty(), "the slow agent was sent to");
}

async fn a_test_event_is_sent_once_and_not_retried(app: TestApp) {
    open_niche(&app.db, "games").await;
    let root = person(&app.db, "root", true).await;
    let failing = Receiver::start(vec![Reply::Status(503, None); 5]).await;
    let hook = register_hook(&app, &root, "games", &failing.url).await;
    let sent = test_send(&app, &root, &hook).await;
    assert!(sent["errors"].is_null(), "{sent}");
    let found = wait_for_deliveries(&app, &hook, "the test event to be tried", |d| {
        d.len() == 1 && d[0].status != DeliveryStatus::Pending
    })
    .await;
    assert_eq!(found[0].status, DeliveryStatus::Exhausted, "{found:?}");
    assert_eq!(found[0].attempts, 1);
    assert_eq!(failing.received().len(), 1, "one request, no retry");
    let log = app
        .graphql(Some(&root.token), HOOK_LOG, json!({"id": hook}))
        .await;
    assert_eq!(
        log["data"]["operatorWebhookDeliveries"][0],
        json!({"status": "exhausted", "attempts": 1, "lastStatusCode": 503,
               "lastError": "HTTP 503", "droppedReason": null}),
        "{log}"
    );
}

// ----------------------------------------------------------------------------------------------
// The test event's limits

on_both_backends! {
    config: lanes;
    the_test_event_is_refused_past_its_limit_per_webhook_with_when_it_may_be_sent_again,
    the_test_event_is_refused_past_its_limit_per_person_across_their_webhooks,
}

async fn the_test_event_is_refused_past_its_limit_per_webhook_with_when_it_may_be_sent_again(
    app: TestApp,
) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let hook = register_hook(&app, &ana, "games", "https://chat.example.test/hook").await;
    let limits = app.config().webhook_tests;
    for _ in 0..limits.per_webhook {
        let sent = test_send(&app, &ana, &hook).await;
        assert!(sent["errors"].is_null(), "{sent}");
    }
    let refused = test_send(&app, &ana, &hook).await;
    assert_eq!(error_code(&refused), Some("RATE_LIMITED"), "{refused}");
    let extensions = &refused["errors"][0]["extensions"];
    assert_eq!(extensions["reason"], "TEST_SENDS_PER_WEBHOOK", "{refused}");
    let retry_after = extensions["retryAfterSeconds"].as_u64().expect("seconds");
    assert!(
        (1..=limits.window.as_secs()).contains(&retry_after),
        "{retry_after}"
    );
    let message = refused["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("try again in {retry_after} s")),
        "{message}"
    );
    assert_eq!(
        deliveries_of(&app, &hook).await.len(),
        limits.per_webhook as usize,
        "the refused one queued nothing"
    );
}

async fn the_test_event_is_refused_past_its_limit_per_person_across_their_webhooks(app: TestApp) {
    open_niche(&app.db, "games").await;
    open_niche(&app.db, "roofing").await;
    let ana = operator(&app.db, "games", "ana").await;
    askloop_tests::people::member(
        &app.db,
        "roofing",
        &ana,
        entity::niche_members::MemberRole::Operator,
        entity::niche_members::MemberStatus::Active,
    )
    .await;
    let limits = app.config().webhook_tests;
    // Enough webhooks that the per-webhook limit is never the one reached.
    let mut hooks = Vec::new();
    for (niche, n) in [
        ("games", 0),
        ("games", 1),
        ("games", 2),
        ("roofing", 3),
        ("roofing", 4),
    ] {
        hooks.push(
            register_hook(&app, &ana, niche, &format!("https://chat.example.test/{n}")).await,
        );
    }
    for n in 0..limits.per_person as usize {
        let sent = test_send(&app, &ana, &hooks[n % hooks.len()]).await;
        assert!(sent["errors"].is_null(), "send {n}: {sent}");
    }
    let refused = test_send(&app, &ana, &hooks[4]).await;
    assert_eq!(error_code(&refused), Some("RATE_LIMITED"), "{refused}");
    assert_eq!(
        refused["errors"][0]["extensions"]["reason"], "TEST_SENDS_PER_PERSON",
        "{refused}"
    );
    // Another person's limit is their own.
    let bob = operator(&app.db, "games", "bob").await;
    let theirs = register_hook(&app, &bob, "games", "https://chat.example.test/bob").await;
    let sent = test_send(&app, &bob, &theirs).await;
    assert!(sent["errors"].is_null(), "{sent}");
}

// ----------------------------------------------------------------------------------------------
// Membership where delivery happens

on_both_backends! {
    config: lanes;
    a_suspended_members_hook_hears_nothing_more_and_what_waited_for_it_is_dropped,
    a_delivery_due_for_a_departed_members_hook_is_dropped_when_it_is_sent,
    a_suspended_member_is_mailed_nothing_more_about_the_niche,
    mail_is_checked_again_when_it_is_sent,
}

async fn a_suspended_members_hook_hears_nothing_more_and_what_waited_for_it_is_dropped(
    app: TestApp,
) {
    open_niche(&app.db, "games").await;
    let root = person(&app.db, "root", true).await;
    let ana = operator(&app.db, "games", "ana").await;
    let receiver = Receiver::start(Vec::new()).await;
    let url = format!(
        "http://hook.example.test:{}/hooks/askloop",
        receiver.addr().port()
    );
    let hook = register_hook(&app, &ana, "games", &url).await;
    let before = app.ask("games", "q-before").await;
    let waiting = wait_for_deliveries(&app, &hook, "the first question's delivery", |d| {
        d.len() == 1
    })
    .await;
    assert_eq!(waiting[0].question_id, Some(before));
    let read = app
        .graphql(Some(&ana.token), HOOK_LOG, json!({"id": hook}))
        .await;
    assert!(
        read["errors"].is_null(),
        "a member reads their webhook's log: {read}"
    );

    let suspended = app
        .graphql(
            Some(&root.token),
            "mutation { suspendMember(nicheSlug: \"games\", handle: \"ana\") { status } }",
            json!({}),
        )
        .await;
    assert!(suspended["errors"].is_null(), "{suspended}");
    let dropped = deliveries::Entity::find_by_id(waiting[0].id)
        .one(&app.db)
        .await
        .expect("query")
        .expect("the delivery");
    assert_eq!(dropped.status, DeliveryStatus::Dropped, "{dropped:?}");
    assert_eq!(dropped.dropped_reason.as_deref(), Some(OWNER_DEPARTED));

    app.ask("games", "q-after").await;
    assert_eq!(
        deliveries_of(&app, &hook).await.len(),
        1,
        "nothing is written for the new question"
    );
    let log = app
        .graphql(Some(&ana.token), HOOK_LOG, json!({"id": hook}))
        .await;
    assert_eq!(error_code(&log), Some("FORBIDDEN"), "{log}");
    let test = test_send(&app, &ana, &hook).await;
    assert_eq!(error_code(&test), Some("FORBIDDEN"), "{test}");
    // Admins see why it was not sent.
    let listed = app
        .graphql(
            Some(&root.token),
            "{ deliveries(status: DROPPED) { status droppedReason } }",
            json!({}),
        )
        .await;
    assert_eq!(
        listed["data"]["deliveries"],
        json!([{"status": "DROPPED", "droppedReason": OWNER_DEPARTED}]),
        "{listed}"
    );
    assert!(receiver.received().is_empty(), "{:?}", receiver.received());
}

/// Set `person`'s membership of `slug` to `status` directly in the database, as no service
/// would: what is sent must not rely on the service that suspends having run.
async fn set_membership_behind_askloops_back(
    app: &TestApp,
    slug: &str,
    person: &Person,
    status: entity::niche_members::MemberStatus,
) {
    let niche = entity::niches::Entity::find()
        .filter(entity::niches::Column::Slug.eq(slug))
        .one(&app.db)
        .await
        .expect("query")
        .expect("the niche");
    entity::niche_members::Entity::update_many()
        .col_expr(
            entity::niche_members::Column::Status,
            sea_orm::sea_query::Expr::value(status),
        )
        .filter(entity::niche_members::Column::NicheId.eq(niche.id))
        .filter(entity::niche_members::Column::UserId.eq(person.id))
        .exec(&app.db)
        .await
        .expect("the membership changed");
}

async fn a_delivery_due_for_a_departed_members_hook_is_dropped_when_it_is_sent(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let hook = register_hook(&app, &ana, "games", "https://chat.example.test/hook").await;
    app.ask("games", "q-1").await;
    // Tried once while she was a member (the name is unknown here, so it waits for a retry).
    let tried = wait_for_deliveries(&app, &hook, "the first attempt", |d| {
        d.len() == 1 && d[0].attempts == 1
    })
    .await;
    set_membership_behind_askloops_back(
        &app,
        "games",
        &ana,
        entity::niche_members::MemberStatus::Left,
    )
    .await;
    deliveries::Entity::update_many()
        .col_expr(
            deliveries::Column::NextAttemptAt,
            sea_orm::sea_query::Expr::value(chrono::Utc::now()),
        )
        .filter(deliveries::Column::Id.eq(tried[0].id))
        .exec(&app.db)
        .await
        .expect("due again");
    let dropped = wait_for_deliveries(&app, &hook, "the retry to be dropped", |d| {
        d[0].status == DeliveryStatus::Dropped
    })
    .await;
    assert_eq!(dropped[0].dropped_reason.as_deref(), Some(OWNER_DEPARTED));
    assert_eq!(dropped[0].attempts, 1, "no second attempt was made");
}

async fn mail_is_checked_again_when_it_is_sent(app: TestApp) {
    use askloop::service::reach::mail;
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    verified_address(&app.db, &ana).await;
    let question = app.ask("games", "q-1").await;
    let rows = notifications::Entity::find()
        .filter(notifications::Column::QuestionId.eq(question))
        .all(&app.db)
        .await
        .expect("query");
    assert_eq!(rows.len(), 1, "{rows:?}");
    let worth = |rows: Vec<notifications::Model>| {
        let db = app.db.clone();
        async move {
            mail::facts(&db, &rows)
                .await
                .expect("facts")
                .still_worth_sending(&rows[0])
        }
    };
    assert!(worth(rows.clone()).await, "a member is mailed");
    set_membership_behind_askloops_back(
        &app,
        "games",
        &ana,
        entity::niche_members::MemberStatus::Suspended,
    )
    .await;
    assert!(!worth(rows.clone()).await, "a suspended member is not");
    set_membership_behind_askloops_back(
        &app,
        "games",
        &ana,
        entity::niche_members::MemberStatus::Active,
    )
    .await;
    assert!(worth(rows).await, "reinstated, she is again");
}

async fn a_suspended_member_is_mailed_nothing_more_about_the_niche(app: TestApp) {
    open_niche(&app.db, "games").await;
    let root = person(&app.db, "root", true).await;
    let ana = operator(&app.db, "games", "ana").await;
    verified_address(&app.db, &ana).await;
    let question = app.ask("games", "q-1").await;
    let planned = notifications::Entity::find()
        .filter(notifications::Column::QuestionId.eq(question))
        .all(&app.db)
        .await
        .expect("query");
    assert_eq!(planned.len(), 1, "ana is to be mailed: {planned:?}");
    assert!(["planned", "pending"].contains(&planned[0].status.as_str()));

    let suspended = app
        .graphql(
            Some(&root.token),
            "mutation { suspendMember(nicheSlug: \"games\", handle: \"ana\") { status } }",
            json!({}),
        )
        .await;
    assert!(suspended["errors"].is_null(), "{suspended}");
    let after = notifications::Entity::find_by_id(planned[0].id)
        .one(&app.db)
        .await
        .expect("query")
        .expect("the notification");
    assert_eq!(after.status, "dropped", "{after:?}");
    assert_eq!(after.sent_at, None);
}

// ----------------------------------------------------------------------------------------------
// Where outbound requests may go

on_both_backends! {
    config: lanes;
    a_members_webhook_whose_name_resolves_to_loopback_is_refused_and_they_see_only_that,
    an_admins_webhook_named_the_same_way_still_reaches_its_private_address,
}

async fn a_members_webhook_whose_name_resolves_to_loopback_is_refused_and_they_see_only_that(
    app: TestApp,
) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let receiver = Receiver::start(Vec::new()).await;
    let url = format!(
        "http://hook.example.test:{}/hooks/askloop",
        receiver.addr().port()
    );
    let hook = register_hook(&app, &ana, "games", &url).await;
    app.ask("games", "q-1").await;
    wait_for_deliveries(&app, &hook, "the attempt", |d| {
        d.len() == 1 && d[0].attempts == 1
    })
    .await;
    let log = app
        .graphql(Some(&ana.token), HOOK_LOG, json!({"id": hook}))
        .await;
    assert_eq!(
        log["data"]["operatorWebhookDeliveries"],
        json!([{"status": "pending", "attempts": 1, "lastStatusCode": null,
                "lastError": NOT_PUBLIC, "droppedReason": null}]),
        "{log}"
    );
    assert!(
        receiver.received().is_empty(),
        "nothing reached 127.0.0.1: {:?}",
        receiver.received()
    );
}

async fn an_admins_webhook_named_the_same_way_still_reaches_its_private_address(app: TestApp) {
    open_niche(&app.db, "games").await;
    let root = person(&app.db, "root", true).await;
    let receiver = Receiver::start(Vec::new()).await;
    let url = format!(
        "http://hook.example.test:{}/hooks/askloop",
        receiver.addr().port()
    );
    register_hook(&app, &root, "games", &url).await;
    app.ask("games", "q-1").await;
    receiver
        .wait_until(WAIT, "the admin's webhook to hear of the question", |r| {
            r.len() == 1
        })
        .await;
    assert_eq!(receiver.received()[0].envelope["type"], "question.waiting");
}

// ----------------------------------------------------------------------------------------------
// Mailed links

on_both_backends!(the_unsubscribe_link_of_a_removed_account_is_refused_with_a_4xx);

async fn the_unsubscribe_link_of_a_removed_account_is_refused_with_a_4xx(app: TestApp) {
    use askloop::service::reach;
    let niche = open_niche(&app.db, "games").await;
    // Signed by this installation for an account that is not (or no longer) here.
    let token = reach::unsubscribe_token(&app.db, 999_999, niche.id)
        .await
        .expect("a token");
    let url = app.url(&format!("/notifications/unsubscribe?token={token}"));
    for response in [
        app.client.get(&url).send().await.expect("sent"),
        app.client.post(&url).send().await.expect("sent"),
    ] {
        assert_eq!(response.status(), 400);
        let page = response.text().await.expect("a page");
        assert!(page.contains("no longer exists"), "{page}");
    }
    assert_eq!(
        entity::notification_preferences::Entity::find()
            .count(&app.db)
            .await
            .expect("count"),
        0,
        "nothing was stored"
    );
}
