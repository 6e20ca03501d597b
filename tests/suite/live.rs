//! Live queue over real websockets: ADDED on intake, REMOVED on answer, the same permission rules
//! as queries, members cut off when suspended, the protocol's timeouts and refusals, and changes
//! crossing from one askloop instance to another through PostgreSQL.

use askloop_tests::answers::answer_input;
use std::time::Duration;

use askloop_tests::fixtures::open_niche;
use askloop_tests::people::{Person, operator, person};
use askloop_tests::served::Served;
use askloop_tests::socket::{GqlSocket, Received};
use askloop_tests::wait::until_subscriptions_served_at;
use askloop_tests::{Backend, TestApp, on_both_backends};
use sea_orm::EntityTrait;
use serde_json::json;

const QUEUE: &str = "subscription($slug: String!) { questionQueue(nicheSlug: $slug) { change question { id title status } } }";
const AWAITING: &str = "subscription { awaitingMe { change question { id title } } }";

/// Two operators of `games`; ana subscribed to its queue, registered with the live hub.
async fn a_subscribed_operator(app: &TestApp) -> (GqlSocket, Person, Person) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let bo = operator(&app.db, "games", "bo").await;
    let mut socket = GqlSocket::connect(&app.base, Some(&ana.token)).await;
    socket.subscribe("q", QUEUE, json!({"slug": "games"})).await;
    // The queue change of the intake below reaches only a registered subscription.
    app.until_subscriptions_served(1).await;
    (socket, ana, bo)
}

/// Ask `external_id` in `games` and wait for its ADDED on `socket`; its id.
async fn ask_and_see_it_added(app: &TestApp, socket: &mut GqlSocket, external_id: &str) -> i64 {
    let id = app.ask("games", external_id).await;
    assert_eq!(
        socket.next_data("q").await["data"]["questionQueue"]["change"],
        "ADDED"
    );
    id
}

async fn a_subscriber_sees_a_new_question_arrive(app: TestApp) {
    let (mut socket, _, _) = a_subscribed_operator(&app).await;
    let id = app.ask("games", "live-1").await;
    let added = socket.next_data("q").await;
    assert_eq!(added["data"]["questionQueue"]["change"], "ADDED", "{added}");
    assert_eq!(
        added["data"]["questionQueue"]["question"]["id"],
        id.to_string()
    );
    assert_eq!(
        added["data"]["questionQueue"]["question"]["title"],
        "Which date?"
    );
}

async fn a_subscriber_sees_a_question_leave_once_someone_answers_it(app: TestApp) {
    let (mut socket, _, bo) = a_subscribed_operator(&app).await;
    let id = ask_and_see_it_added(&app, &mut socket, "live-1").await;
    let answered = app
        .answer(&bo.token, answer_input(id, "ANSWERED", Some("ea"), None))
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    let removed = socket.next_data("q").await;
    assert_eq!(
        removed["data"]["questionQueue"]["change"], "REMOVED",
        "{removed}"
    );
    assert_eq!(
        removed["data"]["questionQueue"]["question"]["status"],
        "ANSWERED"
    );
}

async fn awaiting_me_drops_what_i_declined(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let mut socket = GqlSocket::connect(&app.base, Some(&ana.token)).await;
    socket.subscribe("a", AWAITING, json!({})).await;
    app.until_subscriptions_served(1).await;
    let id = app.ask("games", "mine").await;
    let added = socket.next_data("a").await;
    assert_eq!(added["data"]["awaitingMe"]["change"], "ADDED", "{added}");
    let declined = app
        .answer(
            &ana.token,
            answer_input(id, "INSUFFICIENT_CONTEXT", Some("ea"), None),
        )
        .await;
    assert!(declined["errors"].is_null(), "{declined}");
    let removed = socket.next_data("a").await;
    assert_eq!(
        removed["data"]["awaitingMe"]["change"], "REMOVED",
        "{removed}"
    );
}

/// Subscribe to `games`'s queue as `token`, expect a refusal with `code` and the operation
/// completed, then ask a question there and expect nothing more on the socket.
async fn refused_then_a_question_asked(app: &TestApp, token: &str, code: &str) {
    let mut socket = GqlSocket::connect(&app.base, Some(token)).await;
    socket.subscribe("q", QUEUE, json!({"slug": "games"})).await;
    let refused = socket.next_data("q").await;
    assert_eq!(
        refused["errors"][0]["extensions"]["code"], code,
        "{refused}"
    );
    assert!(refused["data"].is_null());
    match socket.receive(Duration::from_secs(5)).await {
        Received::Json(message) => assert_eq!(message["type"], "complete", "{message}"),
        other => panic!("expected complete, got {other:?}"),
    }
    // Nothing of a later question reaches them.
    app.ask("games", "secret").await;
    match socket.receive(Duration::from_millis(700)).await {
        Received::Nothing => {}
        other => panic!("a refused subscriber received {other:?}"),
    }
}

async fn a_non_member_is_refused_the_queue_and_hears_nothing_of_it(app: TestApp) {
    open_niche(&app.db, "games").await;
    let stranger = person(&app.db, "stranger", false).await;
    refused_then_a_question_asked(&app, &stranger.token, "FORBIDDEN").await;
}

/// `admin` suspends ana from games: her subscription `id` on `socket` ends with FORBIDDEN, then
/// completes.
async fn suspend_ana_and_see_it_cut(
    app: &TestApp,
    admin: &Person,
    socket: &mut GqlSocket,
    id: &str,
) {
    let suspended = app
        .graphql(
            Some(&admin.token),
            "mutation { suspendMember(nicheSlug: \"games\", handle: \"ana\") { status } }",
            json!({}),
        )
        .await;
    assert_eq!(
        suspended["data"]["suspendMember"]["status"], "SUSPENDED",
        "{suspended}"
    );
    let cut = socket.next_data(id).await;
    assert_eq!(cut["errors"][0]["extensions"]["code"], "FORBIDDEN", "{cut}");
    match socket.receive(Duration::from_secs(5)).await {
        Received::Json(message) => assert_eq!(message["type"], "complete", "{message}"),
        other => panic!("expected complete, got {other:?}"),
    }
}

async fn a_member_suspended_mid_subscription_stops_receiving(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let admin = person(&app.db, "root", true).await;
    let mut socket = GqlSocket::connect(&app.base, Some(&ana.token)).await;
    socket.subscribe("q", QUEUE, json!({"slug": "games"})).await;
    app.until_subscriptions_served(1).await;
    app.ask("games", "before").await;
    assert_eq!(
        socket.next_data("q").await["data"]["questionQueue"]["change"],
        "ADDED"
    );

    suspend_ana_and_see_it_cut(&app, &admin, &mut socket, "q").await;
    app.ask("games", "after").await;
    match socket.receive(Duration::from_millis(700)).await {
        Received::Nothing => {}
        other => panic!("a suspended member received {other:?}"),
    }
}

/// [`a_subscribed_operator`], with a question ana saw arrive and then sent back for research.
async fn a_question_sent_back_for_research(app: &TestApp) -> GqlSocket {
    let (mut socket, ana, _) = a_subscribed_operator(app).await;
    let id = ask_and_see_it_added(app, &mut socket, "research").await;
    let sent = app
        .answer(
            &ana.token,
            answer_input(id, "NEEDS_RESEARCH", Some("ea"), None),
        )
        .await;
    assert!(sent["errors"].is_null(), "{sent}");
    socket
}

async fn sending_a_question_back_for_research_shows_as_an_update(app: TestApp) {
    let mut socket = a_question_sent_back_for_research(&app).await;
    let researching = socket.next_data("q").await;
    assert_eq!(
        researching["data"]["questionQueue"]["change"], "UPDATED",
        "{researching}"
    );
    assert_eq!(
        researching["data"]["questionQueue"]["question"]["status"],
        "RESEARCHING"
    );
}

async fn research_coming_back_shows_as_an_update_to_open(app: TestApp) {
    let mut socket = a_question_sent_back_for_research(&app).await;
    let researching = socket.next_data("q").await;
    assert_eq!(
        researching["data"]["questionQueue"]["change"], "UPDATED",
        "{researching}"
    );
    let body = json!({"nicheSlug": "games", "externalId": "research", "context": "More found."})
        .to_string();
    assert_eq!(
        app.post_signed("/api/v1/internal/research-results", &body)
            .await
            .status(),
        200
    );
    let back = socket.next_data("q").await;
    assert_eq!(back["data"]["questionQueue"]["change"], "UPDATED", "{back}");
    assert_eq!(back["data"]["questionQueue"]["question"]["status"], "OPEN");
}

/// A question whose answer an admin rejects comes back: ADDED for the niche's queue and for
/// everyone's "awaiting me", except the person whose answer was rejected.
async fn a_reopened_question_comes_back_live_for_everyone_but_its_rejected_answerer(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let bo = operator(&app.db, "games", "bo").await;
    let root = person(&app.db, "root", true).await;
    let mut hers = GqlSocket::connect(&app.base, Some(&ana.token)).await;
    hers.subscribe("a", AWAITING, json!({})).await;
    let mut his = GqlSocket::connect(&app.base, Some(&bo.token)).await;
    his.subscribe("a", AWAITING, json!({})).await;
    let mut queue = GqlSocket::connect(&app.base, Some(&root.token)).await;
    queue.subscribe("q", QUEUE, json!({"slug": "games"})).await;
    app.until_subscriptions_served(3).await;
    let id = app.ask("games", "reopened").await;
    for socket in [&mut hers, &mut his] {
        assert_eq!(
            socket.next_data("a").await["data"]["awaitingMe"]["change"],
            "ADDED"
        );
    }
    assert_eq!(
        queue.next_data("q").await["data"]["questionQueue"]["change"],
        "ADDED"
    );
    let answered = app
        .answer(&ana.token, answer_input(id, "ANSWERED", Some("ea"), None))
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    for socket in [&mut hers, &mut his] {
        assert_eq!(
            socket.next_data("a").await["data"]["awaitingMe"]["change"],
            "REMOVED"
        );
    }
    assert_eq!(
        queue.next_data("q").await["data"]["questionQueue"]["change"],
        "REMOVED"
    );

    let contribution = entity::contribution_events::Entity::find()
        .one(&app.db)
        .await
        .expect("query")
        .expect("her contribution");
    let rejected = app
        .graphql(
            Some(&root.token),
            "mutation($id: ID!) { rejectContribution(id: $id, note: \"A guess.\") { status } }",
            json!({"id": contribution.id.to_string()}),
        )
        .await;
    assert!(rejected["errors"].is_null(), "{rejected}");
    let back = his.next_data("a").await;
    assert_eq!(back["data"]["awaitingMe"]["change"], "ADDED", "{back}");
    assert_eq!(back["data"]["awaitingMe"]["question"]["id"], id.to_string());
    let back = queue.next_data("q").await;
    assert_eq!(back["data"]["questionQueue"]["change"], "ADDED", "{back}");
    assert_eq!(back["data"]["questionQueue"]["question"]["status"], "OPEN");
    // Hers stays quiet about it: the next thing she hears is the next question.
    let next = app.ask("games", "after").await;
    let heard = hers.next_data("a").await;
    assert_eq!(
        heard["data"]["awaitingMe"]["question"]["id"],
        next.to_string(),
        "{heard}"
    );
}

const ANSWERING_NOW: &str =
    "subscription($slug: String!) { answeringNow(nicheSlug: $slug) { questionId handles } }";
const MARK: &str = "mutation($id: ID!) { answering(questionId: $id, open: true) }";

async fn a_member_suspended_mid_subscription_stops_hearing_who_is_answering(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let bo = operator(&app.db, "games", "bo").await;
    let admin = person(&app.db, "root", true).await;
    let first = app.ask("games", "first").await;
    let marked = app
        .graphql(Some(&bo.token), MARK, json!({"id": first.to_string()}))
        .await;
    assert_eq!(marked["data"]["answering"], true, "{marked}");
    let mut socket = GqlSocket::connect(&app.base, Some(&ana.token)).await;
    socket
        .subscribe("p", ANSWERING_NOW, json!({"slug": "games"}))
        .await;
    // The mark standing now arrives first: the subscription is live.
    let now = socket.next_data("p").await;
    assert_eq!(
        now["data"]["answeringNow"]["handles"],
        json!(["bo"]),
        "{now}"
    );

    suspend_ana_and_see_it_cut(&app, &admin, &mut socket, "p").await;
    let second = app.ask("games", "second").await;
    let marked = app
        .graphql(Some(&bo.token), MARK, json!({"id": second.to_string()}))
        .await;
    assert_eq!(marked["data"]["answering"], true, "{marked}");
    match socket.receive(Duration::from_millis(700)).await {
        Received::Nothing => {}
        other => panic!("a suspended member heard {other:?}"),
    }
}

on_both_backends!(
    a_member_suspended_mid_subscription_stops_hearing_who_is_answering,
    a_reopened_question_comes_back_live_for_everyone_but_its_rejected_answerer,
    a_subscriber_sees_a_new_question_arrive,
    a_subscriber_sees_a_question_leave_once_someone_answers_it,
    sending_a_question_back_for_research_shows_as_an_update,
    research_coming_back_shows_as_an_update_to_open,
    awaiting_me_drops_what_i_declined,
    a_non_member_is_refused_the_queue_and_hears_nothing_of_it,
    a_member_suspended_mid_subscription_stops_receiving,
);

/// A subscription refused before it runs (it does not validate; too deep or costly alike) is one
/// `error` message with the code, and no `complete` after it; the socket stays open for the
/// next operation, and the id may be used again.
#[tokio::test]
async fn a_subscription_that_does_not_validate_is_an_error_message_and_nothing_after() {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let mut socket = GqlSocket::connect(&app.base, Some(&ana.token)).await;
    socket
        .subscribe(
            "q",
            "subscription { questionQueue(nicheSlug: \"games\") { noSuchField } }",
            json!({}),
        )
        .await;
    let refused = socket.error_payload("q").await;
    assert_eq!(
        refused[0]["extensions"]["code"], "GRAPHQL_VALIDATION_FAILED",
        "{refused}"
    );
    socket.subscribe("q", QUEUE, json!({"slug": "games"})).await;
    app.until_subscriptions_served(1).await;
    app.ask("games", "after").await;
    // The next message is the new subscription's change: no `complete` came for the refusal.
    assert_eq!(
        socket.next_data("q").await["data"]["questionQueue"]["change"],
        "ADDED"
    );
}

#[tokio::test]
async fn a_connection_that_never_initialises_is_closed_with_4408() {
    let app = TestApp::spawn_with(Backend::Sqlite, |config| {
        config.live.init_timeout = Duration::from_millis(300);
    })
    .await
    .expect("an app");
    let mut socket = GqlSocket::open(&app.base).await;
    match socket.receive(Duration::from_secs(5)).await {
        Received::Closed(code) => assert_eq!(code, Some(4408)),
        other => panic!("expected a close, got {other:?}"),
    }
}

#[tokio::test]
async fn subscribing_before_the_acknowledgement_is_refused() {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    let mut socket = GqlSocket::open(&app.base).await;
    socket.subscribe("q", QUEUE, json!({"slug": "games"})).await;
    match socket.receive(Duration::from_secs(5)).await {
        Received::Closed(code) => assert_eq!(code, Some(4401)),
        other => panic!("expected a close, got {other:?}"),
    }
}

#[tokio::test]
async fn a_bad_token_in_connection_init_is_refused() {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    let mut socket = GqlSocket::open(&app.base).await;
    socket
        .send(json!({"type": "connection_init", "payload": {"token": "al_key_nope"}}))
        .await;
    match socket.receive(Duration::from_secs(5)).await {
        Received::Closed(code) => assert_eq!(code, Some(4403)),
        other => panic!("expected a close, got {other:?}"),
    }
}

/// On PostgreSQL: an operator of `games` subscribed to its queue on a second askloop (its own
/// process) on `app`'s database. `None` when `TEST_DATABASE_URL` is not set.
async fn subscribed_on_a_second_instance() -> Option<(TestApp, Served, GqlSocket)> {
    let Some(app) = TestApp::spawn(Backend::Postgres).await else {
        eprintln!("skipped: TEST_DATABASE_URL is not set");
        return None;
    };
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let url = app.database_url.clone();
    let second = tokio::task::spawn_blocking(move || Served::start(&url, &[]))
        .await
        .expect("started");
    let mut socket = GqlSocket::connect(&second.base, Some(&ana.token)).await;
    socket.subscribe("q", QUEUE, json!({"slug": "games"})).await;
    until_subscriptions_served_at(&second.base, 1).await;
    Some((app, second, socket))
}

/// PostgreSQL hands out ids before commit: a question whose transaction took its audit id first
/// but commits after a later question was broadcast still reaches the subscribers.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_question_committed_after_a_later_one_was_broadcast_still_arrives() {
    use askloop::service::audit::{self, Actor, AuditEntry};
    use entity::agent_questions::{self, QuestionStatus, Urgency};
    use sea_orm::{ActiveModelTrait, ActiveValue::Set, NotSet};

    let Some(app) = TestApp::spawn(Backend::Postgres).await else {
        eprintln!("skipped: TEST_DATABASE_URL is not set");
        return;
    };
    let (mut socket, _, _) = a_subscribed_operator(&app).await;
    let niche = entity::niches::Entity::find()
        .one(&app.db)
        .await
        .expect("read")
        .expect("games");
    // A writer takes its ids and holds its transaction open.
    let slow = app.db.begin_write().await.expect("begin");
    let now = chrono::Utc::now();
    let held = agent_questions::ActiveModel {
        id: NotSet,
        niche_id: Set(niche.id),
        external_id: Set(Some("slow-1".into())),
        agent_id: Set(None),
        registered_agent_id: Set(None),
        title: Set("Committed late".into()),
        question: Set("Does it still arrive?".into()),
        context: Set(None),
        options: Set(json!([])),
        urgency: Set(Urgency::Normal),
        urgency_rank: Set(1),
        related_resource_ids: Set(json!([])),
        status: Set(QuestionStatus::Open),
        bounty_minor: Set(0),
        research_round: Set(0),
        needs_context_round: Set(None),
        expires_at: Set(now + chrono::Duration::days(1)),
        created_at: Set(now),
        answered_at: Set(None),
        updated_at: Set(now),
        escalate_at: Set(None),
        escalation_step: Set(0),
        kind: Set(agent_questions::ExchangeKind::Question),
        deliverable: Set(None),
        answers_wanted: Set(1),
        agreement_bps: Set(6000),
        answers_in: Set(0),
        withdrawn_at: Set(None),
    }
    .insert(&slow)
    .await
    .expect("the held question");
    audit::record(
        &slow,
        AuditEntry {
            actor: &Actor::Agent(None),
            action: "question.created",
            subject_type: "question",
            subject_id: held.id,
            niche_id: Some(niche.id),
            detail: json!({}),
        },
        now,
    )
    .await
    .expect("its audit row");
    // Another question, with later ids, commits and is broadcast first.
    let later = app.ask("games", "fast-1").await;
    let first = socket.next_data("q").await;
    assert_eq!(
        first["data"]["questionQueue"]["question"]["id"],
        later.to_string(),
        "{first}"
    );
    // Then the held one commits: it is not lost behind the later one.
    slow.commit().await.expect("commit");
    let late = socket.next_data("q").await;
    assert_eq!(late["data"]["questionQueue"]["change"], "ADDED", "{late}");
    assert_eq!(
        late["data"]["questionQueue"]["question"]["id"],
        held.id.to_string(),
        "{late}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_question_asked_on_one_instance_reaches_subscribers_of_another() {
    let Some((app, second, mut socket)) = subscribed_on_a_second_instance().await else {
        return;
    };
    let first = app.ask("games", "cross-1").await;
    let added = socket.next_data("q").await;
    assert_eq!(added["data"]["questionQueue"]["change"], "ADDED", "{added}");
    assert_eq!(
        added["data"]["questionQueue"]["question"]["id"],
        first.to_string()
    );
    drop(second);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_lost_listener_connection_costs_the_notification_not_the_event() {
    use sea_orm::{ConnectionTrait, Database, Statement};

    let Some((app, second, mut socket)) = subscribed_on_a_second_instance().await else {
        return;
    };
    // Asked on the first instance, seen on the second: the listener is up.
    app.ask("games", "cross-1").await;
    let added = socket.next_data("q").await;
    assert_eq!(added["data"]["questionQueue"]["change"], "ADDED", "{added}");

    // Cut every LISTEN connection on this database, then ask again at once: the notification is
    // lost, the event is not.
    let admin = Database::connect(&app.database_url).await.expect("connect");
    let killed = admin
        .query_all_raw(Statement::from_string(
            admin.get_database_backend(),
            "SELECT pg_terminate_backend(pid) AS gone FROM pg_stat_activity \
             WHERE datname = current_database() AND query ILIKE 'listen%' AND pid <> pg_backend_pid()",
        ))
        .await
        .expect("terminate the listeners");
    assert!(!killed.is_empty(), "no LISTEN connection was found to cut");
    let after = app.ask("games", "cross-2").await;
    let caught_up = socket.next_data("q").await;
    assert_eq!(
        caught_up["data"]["questionQueue"]["change"], "ADDED",
        "{caught_up}"
    );
    assert_eq!(
        caught_up["data"]["questionQueue"]["question"]["id"],
        after.to_string()
    );
    admin.close().await.ok();
    drop(second);
}

#[tokio::test]
async fn a_peer_that_stops_answering_pings_is_dropped_and_one_that_answers_stays() {
    let app = TestApp::spawn_with(Backend::Sqlite, |config| {
        config.live.ping_every = Duration::from_millis(100);
        config.live.dead_after = Duration::from_millis(400);
    })
    .await
    .expect("an app");
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;

    // This one reads (so its client answers every ping) for well past the limit, then still
    // gets its events.
    let mut alive = GqlSocket::connect(&app.base, Some(&ana.token)).await;
    // This one never reads, so it never answers a ping.
    let mut silent = GqlSocket::connect(&app.base, Some(&ana.token)).await;
    match alive.receive(Duration::from_millis(1200)).await {
        Received::Nothing => {}
        other => panic!("the live peer got {other:?}"),
    }
    alive.subscribe("q", QUEUE, json!({"slug": "games"})).await;
    app.until_subscriptions_served(1).await;
    app.ask("games", "still-here").await;
    assert_eq!(
        alive.next_data("q").await["data"]["questionQueue"]["change"],
        "ADDED"
    );

    match silent.receive(Duration::from_secs(5)).await {
        // The close frame (4000) may be lost behind the pings the client answers too late: what
        // matters is that the server ended the connection.
        Received::Closed(code) => assert!(matches!(code, Some(4000) | None), "{code:?}"),
        other => panic!("the silent peer was not dropped: {other:?}"),
    }
}

#[tokio::test]
async fn shutting_down_closes_subscribers_with_going_away_so_they_reconnect() {
    let mut app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let mut socket = GqlSocket::connect(&app.base, Some(&ana.token)).await;
    socket.subscribe("q", QUEUE, json!({"slug": "games"})).await;
    app.until_subscriptions_served(1).await;
    app.pause().await;
    match socket.receive(Duration::from_secs(5)).await {
        Received::Closed(code) => assert_eq!(code, Some(1001)),
        other => panic!("expected a close, got {other:?}"),
    }
}

/// A question taking two answers (docs/contract.md#several-answers) stays in everyone's queue
/// after the first, updated with how many are in, and leaves with the second.
async fn a_question_taking_two_answers_leaves_the_queue_with_its_last(app: TestApp) {
    const SEVERAL: &str = "subscription($slug: String!) { questionQueue(nicheSlug: $slug) { change question { id status answersIn answersWanted } } }";
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let bo = operator(&app.db, "games", "bo").await;
    let cy = operator(&app.db, "games", "cy").await;
    let mut socket = GqlSocket::connect(&app.base, Some(&ana.token)).await;
    socket
        .subscribe("s", SEVERAL, json!({"slug": "games"}))
        .await;
    app.until_subscriptions_served(1).await;
    let id = crate::weighing::ask_several(&app, "two-wanted", 2, 0.6).await;
    let added = socket.next_data("s").await;
    assert_eq!(added["data"]["questionQueue"]["change"], "ADDED", "{added}");
    let first = app
        .answer(&bo.token, answer_input(id, "ANSWERED", Some("ea"), None))
        .await;
    assert!(first["errors"].is_null(), "{first}");
    let updated = socket.next_data("s").await;
    let change = &updated["data"]["questionQueue"];
    assert_eq!(change["change"], "UPDATED", "{updated}");
    assert_eq!(
        (
            change["question"]["status"].clone(),
            change["question"]["answersIn"].clone()
        ),
        (json!("OPEN"), json!(1)),
        "{updated}"
    );
    let second = app
        .answer(&cy.token, answer_input(id, "ANSWERED", Some("full"), None))
        .await;
    assert!(second["errors"].is_null(), "{second}");
    let removed = socket.next_data("s").await;
    assert_eq!(
        removed["data"]["questionQueue"]["change"], "REMOVED",
        "{removed}"
    );
    assert_eq!(
        removed["data"]["questionQueue"]["question"]["status"],
        "ANSWERED"
    );
}

on_both_backends!(a_question_taking_two_answers_leaves_the_queue_with_its_last);
