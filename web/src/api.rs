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
struct GraphqlError {
    message: String,
    #[serde(default)]
    extensions: Value,
}

fn network(err: impl std::fmt::Display) -> ApiError {
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
    if let Some(first) = body.errors.into_iter().next() {
        let code = first.extensions["code"]
            .as_str()
            .unwrap_or("INTERNAL")
            .to_owned();
        return Err(ApiError {
            code,
            message: first.message,
        });
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
pub struct ViewerUser {
    /// Their handle.
    pub handle: String,
}

/// A rung of the ladder.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tier {
    /// Its name.
    pub name: String,
    /// Its lowest score.
    pub min_score: i64,
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
        "query Viewer { viewer { user { handle } memberships { role status score verifiedCount pendingCount shareBps tier { name minScore } nextTier { name minScore } pointsToNextTier niche { slug name } } } }",
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
    questions: Connection<QueueQuestion>,
}

#[derive(Deserialize)]
struct QueueData {
    niche: Option<QueueNiche>,
}

/// A niche's name and its waiting questions; `None` when there is no such niche.
pub async fn waiting_questions(
    slug: &str,
) -> Result<Option<(String, Vec<QueueQuestion>)>, ApiError> {
    run::<QueueData>(
        "query Queue($slug: String!) { niche(slug: $slug) { name questions(first: 50) { edges { node { id title question context urgency status options { id label } } } } } }",
        json!({ "slug": slug }),
    )
    .await
    .map(|data| {
        data.niche.map(|niche| {
            (
                niche.name,
                niche.questions.edges.into_iter().map(|e| e.node).collect(),
            )
        })
    })
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
