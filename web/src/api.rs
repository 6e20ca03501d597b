//! The GraphQL client: typed operations posted to `/graphql` on the same origin.

use gloo_net::http::Request;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// A failed call: the server's `extensions.code` when it sent one, and its message.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// `BAD_USER_INPUT`, `UNAUTHENTICATED`, … or `NETWORK`.
    pub code: String,
    /// For people.
    pub message: String,
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Matched on the code, never on the server's wording.
        match self.code.as_str() {
            "NETWORK" => write!(f, "askloop could not be reached ({})", self.message),
            _ => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for ApiError {}

#[derive(Deserialize)]
struct GraphqlResponse<T> {
    data: Option<T>,
    #[serde(default)]
    errors: Vec<GraphqlError>,
}

#[derive(Deserialize)]
pub(crate) struct GraphqlError {
    message: String,
    #[serde(default)]
    extensions: Value,
}

/// The first of a response's errors, as an [`ApiError`].
pub(crate) fn first_error(errors: Vec<GraphqlError>) -> Option<ApiError> {
    errors.into_iter().next().map(|first| ApiError {
        code: first.extensions["code"]
            .as_str()
            .unwrap_or("INTERNAL")
            .to_owned(),
        message: first.message,
    })
}

pub(crate) fn network(err: impl std::fmt::Display) -> ApiError {
    ApiError {
        code: "NETWORK".into(),
        message: err.to_string(),
    }
}

/// Run `query` with `variables` and decode its `data`.
async fn run<T: DeserializeOwned>(query: &str, variables: Value) -> Result<T, ApiError> {
    let response = Request::post("/graphql")
        .json(&json!({ "query": query, "variables": variables }))
        .map_err(network)?
        .send()
        .await
        .map_err(network)?;
    // Errors first: with one, `data` may be partial and not of the expected shape.
    let body: GraphqlResponse<Value> = response.json().await.map_err(network)?;
    if let Some(err) = first_error(body.errors) {
        return Err(err);
    }
    let data = body
        .data
        .ok_or_else(|| network("the server sent no data"))?;
    serde_json::from_value(data).map_err(network)
}

/// A niche as the dashboard shows it.
#[derive(Debug, Clone, Deserialize)]
pub struct Niche {
    /// Unique slug.
    pub slug: String,
    /// Display name.
    pub name: String,
    /// Lifecycle status.
    pub status: String,
}

#[derive(Deserialize)]
struct NichesData {
    niches: Vec<Niche>,
}

/// The niches the caller can see.
pub async fn niches() -> Result<Vec<Niche>, ApiError> {
    run::<NichesData>("query Niches { niches { slug name status } }", json!({}))
        .await
        .map(|data| data.niches)
}

/// The signed-in person, if any.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ViewerUser {
    /// Their handle.
    pub handle: String,
    /// Whether they administer askloop.
    pub is_admin: bool,
}

/// A rung of the ladder.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tier {
    /// Its name.
    pub name: String,
    /// Its lowest score.
    pub min_score: i64,
    /// Its share of a niche's revenue, basis points.
    pub share_bps: i64,
}

/// A niche as a membership names it.
#[derive(Debug, Clone, Deserialize)]
pub struct NicheRef {
    /// Slug.
    pub slug: String,
    /// Name.
    pub name: String,
}

/// One of my memberships with where I stand.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Membership {
    /// The niche.
    pub niche: NicheRef,
    /// My role.
    pub role: String,
    /// My status.
    pub status: String,
    /// My score.
    pub score: i64,
    /// Verified contributions.
    pub verified_count: i64,
    /// Contributions in review.
    pub pending_count: i64,
    /// My share, basis points.
    pub share_bps: i64,
    /// My tier.
    pub tier: Tier,
    /// The next tier, if any.
    pub next_tier: Option<Tier>,
    /// Points to it.
    pub points_to_next_tier: Option<i64>,
}

/// What the niches page shows a signed-in person.
#[derive(Debug, Clone, Deserialize)]
pub struct Viewer {
    /// Who.
    pub user: ViewerUser,
    /// Their memberships.
    pub memberships: Vec<Membership>,
}

#[derive(Deserialize)]
struct ViewerData {
    viewer: Option<Viewer>,
}

/// The signed-in person with their memberships, or `None` when signed out.
pub async fn viewer() -> Result<Option<Viewer>, ApiError> {
    run::<ViewerData>(
        "query Viewer { viewer { user { handle isAdmin } memberships { role status score verifiedCount pendingCount shareBps tier { name minScore shareBps } nextTier { name minScore shareBps } pointsToNextTier niche { slug name } } } }",
        json!({}),
    )
    .await
    .map(|data| data.viewer)
}

/// A question in a list.
#[derive(Debug, Clone, Deserialize)]
pub struct QueueOption {
    /// Its id.
    pub id: String,
    /// Its label.
    pub label: String,
}

/// A waiting question as a card shows it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueQuestion {
    /// Its id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// The question.
    pub question: String,
    /// The agent's research (untrusted text).
    pub context: Option<String>,
    /// low, normal, high.
    pub urgency: String,
    /// OPEN or RESEARCHING.
    pub status: String,
    /// The offered answers.
    pub options: Vec<QueueOption>,
    /// When it arrived (RFC 3339).
    pub created_at: String,
    /// How many times research has come back.
    pub research_round: i64,
}

/// The fields a question card needs, for every query and subscription that shows one.
pub const CARD_FIELDS: &str =
    "id title question context urgency status createdAt researchRound options { id label }";

/// A recently answered question.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SettledQuestion {
    /// Its id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// When it was answered (RFC 3339).
    pub answered_at: Option<String>,
}

#[derive(Deserialize)]
struct Edge<T> {
    node: T,
}

#[derive(Deserialize)]
struct Connection<T> {
    edges: Vec<Edge<T>>,
}

#[derive(Deserialize)]
struct QueueNiche {
    name: String,
    waiting: Connection<QueueQuestion>,
    settled: Connection<SettledQuestion>,
}

#[derive(Deserialize)]
struct QueueData {
    niche: Option<QueueNiche>,
}

/// What the queue page shows of a niche.
#[derive(Debug, Clone)]
pub struct QueuePage {
    /// The niche's name.
    pub name: String,
    /// Its waiting questions, most urgent first.
    pub waiting: Vec<QueueQuestion>,
    /// Its most recently answered questions.
    pub settled: Vec<SettledQuestion>,
}

/// A niche's waiting and recently settled questions; `None` when there is no such niche.
pub async fn queue_page(slug: &str) -> Result<Option<QueuePage>, ApiError> {
    let query = format!(
        "query Queue($slug: String!) {{ niche(slug: $slug) {{ name \
         waiting: questions(first: 50) {{ edges {{ node {{ {CARD_FIELDS} }} }} }} \
         settled: questions(status: ANSWERED, first: 10) {{ edges {{ node {{ id title answeredAt }} }} }} }} }}"
    );
    run::<QueueData>(&query, json!({ "slug": slug }))
        .await
        .map(|data| {
            data.niche.map(|niche| QueuePage {
                name: niche.name,
                waiting: niche.waiting.edges.into_iter().map(|e| e.node).collect(),
                settled: niche.settled.edges.into_iter().map(|e| e.node).collect(),
            })
        })
}

/// What answering did, as the page tells it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AnswerResult {
    /// What happened, in words.
    pub notice: String,
    /// Points earned.
    pub points: i64,
    /// `pending` or `verified` for answers.
    pub contribution_status: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AnswerData {
    answer_question: AnswerResult,
}

/// Answer, decline or send back a question (`kind` is an `AnswerKind`).
pub async fn answer(
    question_id: &str,
    kind: &str,
    option_id: Option<String>,
    body: Option<String>,
) -> Result<AnswerResult, ApiError> {
    run::<AnswerData>(
        "mutation Answer($input: AnswerInput!) { answerQuestion(input: $input) { notice points contributionStatus } }",
        json!({ "input": { "questionId": question_id, "kind": kind, "optionId": option_id, "body": body } }),
    )
    .await
    .map(|data| data.answer_question)
}

/// A question awaiting me.
#[derive(Debug, Clone, Deserialize)]
pub struct AwaitingQuestion {
    /// Its id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// low, normal, high.
    pub urgency: String,
    /// Its niche.
    pub niche: NicheRef,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AwaitingData {
    awaiting_me: Connection<AwaitingQuestion>,
}

/// "Your agent needs you": what waits for me across my niches.
pub async fn awaiting_me() -> Result<Vec<AwaitingQuestion>, ApiError> {
    run::<AwaitingData>(
        "query Awaiting { awaitingMe(first: 50) { edges { node { id title urgency niche { slug name } } } } }",
        json!({}),
    )
    .await
    .map(|data| data.awaiting_me.edges.into_iter().map(|e| e.node).collect())
}

#[derive(Deserialize)]
struct LoginData {}

/// Sign in; the server sets the session cookie.
pub async fn login(handle: &str, password: &str) -> Result<(), ApiError> {
    run::<LoginData>(
        "mutation Login($handle: String!, $password: String!) { login(handle: $handle, password: $password) { token } }",
        json!({ "handle": handle, "password": password }),
    )
    .await
    .map(|_| ())
}

#[derive(Deserialize)]
struct LogoutData {}

/// Sign out; the server ends the session and clears the cookie.
pub async fn logout() -> Result<(), ApiError> {
    run::<LogoutData>("mutation Logout { logout }", json!({}))
        .await
        .map(|_| ())
}

/// One of my contributions.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Contribution {
    /// Its id.
    pub id: String,
    /// The niche's slug.
    pub niche_slug: String,
    /// `agent_answer`, `manual_adjustment`.
    pub kind: String,
    /// Its points.
    pub points: i64,
    /// `pending`, `verified`, `rejected` or `reversed`.
    pub status: String,
    /// What produced it.
    pub source: String,
    /// Supporting facts (JSON text; shown as text).
    pub evidence: String,
    /// When (RFC 3339).
    pub created_at: String,
}

const CONTRIBUTION_FIELDS: &str = "id nicheSlug kind points status source evidence createdAt";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StandingData {
    my_contributions: Vec<Contribution>,
    tiers: Vec<Tier>,
}

/// My latest contributions and the tier ladder.
pub async fn contributions_and_ladder() -> Result<(Vec<Contribution>, Vec<Tier>), ApiError> {
    let query = format!(
        "query Standing {{ myContributions(first: 20) {{ {CONTRIBUTION_FIELDS} }} tiers {{ name minScore shareBps }} }}"
    );
    run::<StandingData>(&query, json!({}))
        .await
        .map(|data| (data.my_contributions, data.tiers))
}

/// A member as admins see them.
#[derive(Debug, Clone, Deserialize)]
pub struct Member {
    /// Their handle.
    pub handle: String,
    /// `operator`, `specialist`, `observer`.
    pub role: String,
    /// `active`, `suspended`, …
    pub status: String,
}

/// A niche with its members, for admins.
#[derive(Debug, Clone, Deserialize)]
pub struct AdminNiche {
    /// Slug.
    pub slug: String,
    /// Name.
    pub name: String,
    /// Lifecycle status.
    pub status: String,
    /// Its members.
    pub members: Vec<Member>,
}

/// One attempt to send a delivery.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryAttempt {
    /// When (RFC 3339).
    pub at: String,
    /// The HTTP status, if any.
    pub status_code: Option<i64>,
    /// How long it took.
    pub duration_ms: i64,
    /// What went wrong.
    pub error: Option<String>,
    /// `delivered`, `retry` or `exhausted`.
    pub outcome: String,
}

/// An event for the agent and how sending it went.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    /// Its id.
    pub id: String,
    /// The id the agent dedupes on.
    pub envelope_id: String,
    /// The event.
    pub event_type: String,
    /// PENDING, DELIVERED or EXHAUSTED.
    pub status: String,
    /// The last error, if any.
    pub last_error: Option<String>,
    /// When it is next tried.
    pub next_attempt_at: String,
    /// When it was written.
    pub created_at: String,
    /// Every attempt.
    pub attempts: Vec<DeliveryAttempt>,
}

/// What the admin page shows.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdminOverview {
    /// Contributions awaiting review.
    pub review_queue: Vec<Contribution>,
    /// Every niche with its members.
    pub all_niches: Vec<AdminNiche>,
    /// Deliveries, failures first.
    pub deliveries: Vec<Delivery>,
}

/// The admin page: the review queue, every niche with its members, and the deliveries.
pub async fn admin_overview() -> Result<AdminOverview, ApiError> {
    let query = format!(
        "query Admin {{ reviewQueue(first: 50) {{ {CONTRIBUTION_FIELDS} }} \
         allNiches {{ slug name status members {{ handle role status }} }} \
         deliveries(first: 50) {{ id envelopeId eventType status lastError nextAttemptAt createdAt \
         attempts {{ at statusCode durationMs error outcome }} }} }}"
    );
    run::<AdminOverview>(&query, json!({})).await
}

/// Run an admin mutation whose result the page does not read (it reloads instead).
pub async fn admin_action(mutation: &str, variables: Value) -> Result<(), ApiError> {
    run::<Value>(mutation, variables).await.map(|_| ())
}

/// An allocation of revenue to me (or, in admin views, anyone).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Allocation {
    /// Its id.
    pub id: String,
    /// The niche.
    pub niche_slug: String,
    /// The share applied, basis points.
    pub share_bps: i64,
    /// How much, minor units.
    pub amount_minor: i64,
    /// `accrued`, `scheduled`, `paid`, `reversed`.
    pub status: String,
    /// The event's source.
    pub source_type: String,
    /// The event's currency.
    pub currency: String,
    /// When (RFC 3339).
    pub created_at: String,
}

/// A payout.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Payout {
    /// Its id.
    pub id: String,
    /// Who is paid.
    pub handle: String,
    /// How much.
    pub amount_minor: i64,
    /// ISO 4217.
    pub currency: String,
    /// `scheduled`, `paid` or `failed`.
    pub status: String,
    /// The settlement's reference.
    pub external_reference: Option<String>,
    /// Why it failed.
    pub failure_reason: Option<String>,
    /// When it was scheduled.
    pub created_at: String,
}

/// Where someone wants to be paid.
#[derive(Debug, Clone, Deserialize)]
pub struct PayoutAccount {
    /// Whose (in admin views).
    #[serde(default)]
    pub handle: Option<String>,
    /// The address.
    pub address: String,
    /// Whether an admin verified it.
    pub verified: bool,
}

/// My money in one currency.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Balance {
    /// ISO 4217.
    pub currency: String,
    /// Owed.
    pub owed_minor: i64,
    /// In flight.
    pub in_flight_minor: i64,
    /// Paid.
    pub paid_minor: i64,
    /// Reversed.
    pub reversed_minor: i64,
}

/// My revenue.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MyRevenue {
    /// One balance per currency.
    pub balances: Vec<Balance>,
    /// My allocations, newest first.
    pub allocations: Vec<Allocation>,
    /// My payouts, newest first.
    pub payouts: Vec<Payout>,
    /// Where I want to be paid.
    pub payout_account: Option<PayoutAccount>,
}

const ALLOCATION_FIELDS: &str =
    "id nicheSlug shareBps amountMinor status sourceType currency createdAt";
const PAYOUT_FIELDS: &str =
    "id handle amountMinor currency status externalReference failureReason createdAt";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MyRevenueData {
    my_revenue: MyRevenue,
}

/// My revenue, allocations and payouts.
pub async fn my_revenue() -> Result<MyRevenue, ApiError> {
    let query = format!(
        "query Mine {{ myRevenue(first: 100) {{ balances {{ currency owedMinor inFlightMinor paidMinor reversedMinor }} \
         allocations {{ {ALLOCATION_FIELDS} }} payouts {{ {PAYOUT_FIELDS} }} payoutAccount {{ address verified }} }} }}"
    );
    run::<MyRevenueData>(&query, json!({}))
        .await
        .map(|d| d.my_revenue)
}

/// Save where I want to be paid.
pub async fn set_payout_address(address: &str) -> Result<(), ApiError> {
    run::<Value>(
        "mutation Address($a: String!) { setPayoutAddress(address: $a) { verified } }",
        json!({ "a": address }),
    )
    .await
    .map(|_| ())
}

/// A revenue event.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RevenueEvent {
    /// The niche.
    pub niche_slug: String,
    /// The source's id.
    pub external_id: String,
    /// Where it came from.
    pub source_type: String,
    /// Gross.
    pub gross_minor: i64,
    /// Net.
    pub net_minor: i64,
    /// ISO 4217.
    pub currency: String,
    /// When.
    pub created_at: String,
}

const EVENT_FIELDS: &str = "nicheSlug externalId sourceType grossMinor netMinor currency createdAt";

/// A member's share.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemberShare {
    /// Handle.
    pub handle: String,
    /// Basis points.
    pub share_bps: i64,
}

/// A niche's revenue.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NicheRevenue {
    /// Gross over all events.
    pub gross_minor: i64,
    /// Net over all events.
    pub net_minor: i64,
    /// How many events.
    pub event_count: i64,
    /// Latest events.
    pub recent_events: Vec<RevenueEvent>,
    /// Members' shares now.
    pub shares: Vec<MemberShare>,
    /// My allocations here.
    pub my_allocations: Vec<Allocation>,
}

/// One line of a budget.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BudgetEntry {
    /// `reserve`, `charge`, `release`.
    pub kind: String,
    /// How much.
    pub amount_minor: i64,
    /// The question.
    pub question_id: String,
    /// When.
    pub created_at: String,
}

/// A niche's budget this month.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Budget {
    /// The limit; none is no limit.
    pub limit_minor: Option<i64>,
    /// Charged.
    pub spent_minor: i64,
    /// Reserved.
    pub reserved_minor: i64,
    /// Left.
    pub remaining_minor: Option<i64>,
    /// AMPLE, TIGHT, EXHAUSTED.
    pub state: String,
    /// When the month starts again.
    pub resets_at: String,
    /// This month's entries.
    pub entries: Vec<BudgetEntry>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct NicheMoneyData {
    niche: Option<NicheRef>,
    niche_revenue: NicheRevenue,
    budget: Budget,
}

/// A niche's name, revenue and budget.
pub async fn niche_money(slug: &str) -> Result<(String, NicheRevenue, Budget), ApiError> {
    let query = format!(
        "query Money($slug: String!) {{ niche(slug: $slug) {{ slug name }} \
         nicheRevenue(nicheSlug: $slug, first: 20) {{ grossMinor netMinor eventCount \
         recentEvents {{ {EVENT_FIELDS} }} shares {{ handle shareBps }} myAllocations {{ {ALLOCATION_FIELDS} }} }} \
         budget(nicheSlug: $slug) {{ limitMinor spentMinor reservedMinor remainingMinor state resetsAt \
         entries {{ kind amountMinor questionId createdAt }} }} }}"
    );
    run::<NicheMoneyData>(&query, json!({ "slug": slug }))
        .await
        .map(|d| {
            let name = d.niche.map(|n| n.name).unwrap_or_else(|| slug.to_owned());
            (name, d.niche_revenue, d.budget)
        })
}

/// An anomaly signal.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AnomalySignal {
    /// The monitor's id.
    pub signal_id: String,
    /// What it is about.
    pub subject_type: String,
    /// Its id.
    pub subject_id: String,
    /// What kind.
    pub kind: String,
    /// How bad.
    pub severity: String,
    /// What was found (untrusted text).
    pub finding: String,
    /// When.
    pub received_at: String,
}

/// The subscription's fields of a signal.
pub const SIGNAL_FIELDS: &str = "signalId subjectType subjectId kind severity finding receivedAt";

/// An audit row.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditRow {
    /// Who.
    pub actor: String,
    /// What.
    pub action: String,
    /// Of what kind.
    pub subject_type: String,
    /// Which.
    pub subject_id: String,
    /// Details (JSON text).
    pub detail: String,
    /// When.
    pub created_at: String,
}

/// The admin's ledger views.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdminLedger {
    /// Revenue events.
    pub revenue_events: Vec<RevenueEvent>,
    /// Payouts.
    pub payouts: Vec<Payout>,
    /// Everyone's payout addresses, unverified first.
    pub payout_accounts: Vec<PayoutAccount>,
    /// Anomaly signals.
    pub anomaly_signals: Vec<AnomalySignal>,
    /// The audit log.
    pub audit_log: Vec<AuditRow>,
}

/// Revenue events, payouts, anomaly signals and the audit log, for admins.
pub async fn admin_ledger() -> Result<AdminLedger, ApiError> {
    let query = format!(
        "query Ledger {{ revenueEvents(first: 20) {{ {EVENT_FIELDS} }} payouts(first: 20) {{ {PAYOUT_FIELDS} }} \
         payoutAccounts {{ handle address verified }} \
         anomalySignals(first: 20) {{ {SIGNAL_FIELDS} }} \
         auditLog(first: 30) {{ actor action subjectType subjectId detail createdAt }} }}"
    );
    run::<AdminLedger>(&query, json!({})).await
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SignalsData {
    anomaly_signals: Vec<AnomalySignal>,
}

/// The newest anomaly signals (admins only).
pub async fn anomaly_signals() -> Result<Vec<AnomalySignal>, ApiError> {
    let query = format!("query Signals {{ anomalySignals(first: 50) {{ {SIGNAL_FIELDS} }} }}");
    run::<SignalsData>(&query, json!({}))
        .await
        .map(|d| d.anomaly_signals)
}
