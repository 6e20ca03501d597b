//! Adopted subscriptions (docs/architecture.md#adopted-subscriptions): a websocket subscription
//! to a queue whose selection is [shared](super::shared) is started by the library as any other
//! (parsed, validated, the subscriber's rights checked), then handed over to the socket, which
//! serves it from then on without the library's per-subscription state (its execution stream
//! and its copy of the document, about half of what an idle subscriber costs).
//!
//! - **Tag.** The socket writes a tag into every `subscribe` message's `extensions`, naming the
//!   operation's id and the socket's serial number for that subscribe under a random
//!   per-process nonce ([`tagged`]); [`Tagging`] moves it into the request's data, with the
//!   request's [`Roots`] (read from its parsed document). A client cannot forge one, and any it
//!   sends is removed.
//! - **Hand-over.** A queue resolver that finds a tag, the connection's [`Adoptions`] and a
//!   shareable single-field operation gives its stream of changes (already registered with the
//!   live hub) to the connection and returns an empty one. The library then completes the
//!   operation; the socket swallows that `complete` and serves the handed-over stream under the
//!   same id — only if that very subscribe (its serial) is still running: one the client
//!   completed or replaced in the meantime is dropped with its `complete` ([`Adoptions::claim`]).
//! - **Serving.** A change whose payload is already resolved for its (event, class, selection)
//!   is sent as that shared JSON text. Any other — the first of its key, an error, a payload
//!   that raised errors — is resolved by a one-shot run of the subscription's own document
//!   through the library, with the connection's data, for that one change ([`OneShot`]): the
//!   same fields, errors, codes and error door as a subscription the library serves.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use async_graphql::extensions::{
    Extension, ExtensionContext, ExtensionFactory, NextPrepareRequest,
};
use async_graphql::http::WebSocketProtocols;
use async_graphql::{Context, Data, Name, Request, Response, ServerError, ServerResult, Value};
use async_graphql::{Variables, futures_util::task};
use futures::future::BoxFuture;
use futures::{FutureExt, Stream, StreamExt};

use super::AskloopSchema;
use super::queue_change::kind_of;
use super::shared::{Class, Resolved, Roots, Sharing};
use crate::error::ServiceError;
use crate::service::subscriptions::Change;

/// The key of the tag in a `subscribe` message's `extensions`.
pub const TAG_KEY: &str = "askloopOperation";

/// The most subscription templates [`Tagging`] keeps; when full, it starts over.
const TEMPLATES: usize = 256;

/// This process's nonce for tags: random, never sent to anyone.
fn nonce() -> &'static str {
    static NONCE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    NONCE.get_or_init(|| hex::encode(rand::random::<[u8; 16]>()))
}

/// A `subscribe` (or legacy `start`) message from the peer with this socket's tag for the
/// subscribe numbered `serial` written into its payload's `extensions` (replacing any the peer
/// wrote), or `None` when it has no string id and object payload to tag: the library then
/// answers it as it is.
pub fn tagged(text: &str, serial: u64) -> Option<String> {
    let mut message: serde_json::Value = serde_json::from_str(text).ok()?;
    let id = message.get("id")?.as_str()?.to_owned();
    let payload = message.get_mut("payload")?.as_object_mut()?;
    let extensions = payload
        .entry("extensions")
        .or_insert_with(|| serde_json::Value::Object(Default::default()));
    if extensions.is_null() {
        *extensions = serde_json::Value::Object(Default::default());
    }
    extensions.as_object_mut()?.insert(
        TAG_KEY.to_owned(),
        serde_json::Value::String(format!("{}:{serial}:{id}", nonce())),
    );
    serde_json::to_string(&message).ok()
}

/// What a subscription needs to run again for one change: its document and variables.
struct Template {
    query: String,
    variables: Variables,
    operation_name: Option<String>,
}

/// A tagged request's operation: its id on the connection, the socket's serial number for the
/// subscribe that started it, and its template.
struct Tag {
    id: String,
    serial: u64,
    template: Arc<Template>,
}

/// Templates by (query text, variables, operation name).
type Templates = Mutex<HashMap<(String, String, Option<String>), Arc<Template>>>;

/// The extension that turns a socket's tag into a [`Tag`] in the request's data.
#[derive(Default)]
pub struct Tagging {
    templates: Arc<Templates>,
}

impl ExtensionFactory for Tagging {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(TaggingExtension {
            templates: self.templates.clone(),
        })
    }
}

struct TaggingExtension {
    templates: Arc<Templates>,
}

impl TaggingExtension {
    /// The template of `request`: every subscriber with the same text and variables shares one.
    fn template(&self, request: &Request) -> Arc<Template> {
        let variables = serde_json::to_string(&request.variables).unwrap_or_default();
        let key = (
            request.query.clone(),
            variables,
            request.operation_name.clone(),
        );
        let mut kept = self.templates.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(template) = kept.get(&key) {
            return template.clone();
        }
        if kept.len() >= TEMPLATES {
            kept.clear();
        }
        let template = Arc::new(Template {
            query: request.query.clone(),
            variables: request.variables.clone(),
            operation_name: request.operation_name.clone(),
        });
        kept.insert(key, template.clone());
        template
    }
}

#[async_graphql::async_trait::async_trait]
impl Extension for TaggingExtension {
    async fn prepare_request(
        &self,
        ctx: &ExtensionContext<'_>,
        mut request: Request,
        next: NextPrepareRequest<'_>,
    ) -> ServerResult<Request> {
        // Whatever is under the key goes: only a tag with this process's nonce counts.
        let tag = request.extensions.remove(TAG_KEY);
        // Queries and mutations carry nothing more: only a subscription has roots.
        let Some(roots) = Roots::of(&mut request) else {
            return next.run(ctx, request).await;
        };
        request.data.insert(roots);
        if let Some(Value::String(tag)) = tag
            && let Some((serial, id)) = tag
                .strip_prefix(nonce())
                .and_then(|rest| rest.strip_prefix(':'))
                .and_then(|rest| rest.split_once(':'))
            && let Ok(serial) = serial.parse::<u64>()
        {
            let template = self.template(&request);
            request.data.insert(Tag {
                id: id.to_owned(),
                serial,
                template,
            });
        }
        next.run(ctx, request).await
    }
}

/// A handed-over subscription as the socket serves it: the protocol messages to send.
pub type Served = Pin<Box<dyn Stream<Item = String> + Send>>;

/// One connection's hand-overs: what its queue resolvers handed over, waiting for the socket to
/// claim them when the library completes their operations.
#[derive(Clone)]
pub struct Adoptions(Arc<Inner>);

struct Inner {
    schema: AskloopSchema,
    /// The connection's data (its caller and the rest) for one-shot runs, once initialised.
    session: std::sync::OnceLock<Arc<Data>>,
    handed: Mutex<Vec<Handed>>,
}

/// A stream handed over by the resolver of the subscribe numbered `serial`, for operation `id`.
struct Handed {
    id: String,
    serial: u64,
    served: Served,
}

/// What the socket makes of a message the library is sending ([`Adoptions::claim`]).
pub enum Claim {
    /// Nothing handed over: send it.
    Send,
    /// The `complete` of an operation handed over and still running: serve this in its place
    /// (and do not send the `complete`).
    Adopt(String, Served),
    /// The `complete` of an operation handed over that the client completed (or replaced)
    /// before the library finished starting it: drop it, and serve nothing.
    Drop,
}

impl Adoptions {
    /// The hand-overs of a connection speaking `protocol`, run again through `schema`: only
    /// `graphql-transport-ws` (what current clients speak) hands over; the legacy protocol's
    /// subscriptions stay with the library.
    pub fn new(schema: AskloopSchema, protocol: WebSocketProtocols) -> Option<Self> {
        (protocol == WebSocketProtocols::GraphQLWS).then(|| {
            Self(Arc::new(Inner {
                schema,
                session: std::sync::OnceLock::new(),
                handed: Mutex::new(Vec::new()),
            }))
        })
    }

    /// The connection's data for one-shot runs, set once when `connection_init` is accepted.
    pub fn initialised(&self, session: Data) {
        let _ = self.0.session.set(Arc::new(session));
    }

    /// What to do with `text`, a message the library is sending, given which subscribe
    /// (`running`: its serial) each operation id is running now. Every hand-over whose subscribe
    /// is no longer running is dropped here, whatever the message: none outlives the next one.
    pub fn claim(this: Option<&Self>, text: &str, running: impl Fn(&str) -> Option<u64>) -> Claim {
        let Some(this) = this else {
            return Claim::Send;
        };
        let mut handed = this.0.handed.lock().unwrap_or_else(|p| p.into_inner());
        if handed.is_empty() {
            return Claim::Send;
        }
        let mut stale = Vec::new();
        handed.retain(|h| {
            let current = running(&h.id) == Some(h.serial);
            if !current {
                stale.push(h.id.clone());
            }
            current
        });
        let Some(id) = completed(text) else {
            return Claim::Send;
        };
        if let Some(at) = handed.iter().position(|h| h.id == id) {
            let h = handed.swap_remove(at);
            return Claim::Adopt(h.id, h.served);
        }
        if stale.contains(&id) {
            return Claim::Drop;
        }
        Claim::Send
    }

    /// Drop every hand-over whose subscribe is no longer running (the client has just completed
    /// an operation): it will never be served, and it holds a place in the served gauge.
    pub fn forget_stopped(this: Option<&Self>, running: impl Fn(&str) -> Option<u64>) {
        if let Some(this) = this {
            this.0
                .handed
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .retain(|h| running(&h.id) == Some(h.serial));
        }
    }

    /// Drop whatever was handed over and not claimed (the connection is ending): a hand-over
    /// holds the connection's data, which holds this.
    pub fn clear(&self) {
        self.0
            .handed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }
}

/// The one change a one-shot run resolves (taken by the resolver it reaches).
struct OneShot(Mutex<Option<Result<Change, ServiceError>>>);

/// When this resolver runs as a one-shot: the change it is to resolve, once.
pub(super) fn one_shot(ctx: &Context<'_>) -> Option<Result<Change, ServiceError>> {
    let shot = ctx.data_opt::<OneShot>()?;
    shot.0.lock().unwrap_or_else(|p| p.into_inner()).take()
}

/// Whether this resolver runs as a one-shot (whose payload is never shared: the adopted
/// stream that asked for it does the sharing).
pub(super) fn is_one_shot(ctx: &Context<'_>) -> bool {
    ctx.data_opt::<OneShot>().is_some()
}

/// Hand `changes` over to the connection when the subscription `ctx` is starting may be
/// adopted: started over a websocket with a tag, a shareable selection, and this field the
/// operation's only root selection. Otherwise `changes` comes back.
pub(super) fn hand_over<S>(
    ctx: &Context<'_>,
    sharing: Option<&Sharing>,
    changes: S,
) -> Result<(), S>
where
    S: Stream<Item = Result<Change, ServiceError>> + Send + 'static,
{
    let (Some(sharing), Some(adoptions), Some(tag), Some(roots)) = (
        sharing,
        ctx.data_opt::<Adoptions>(),
        ctx.data_opt::<Tag>(),
        ctx.data_opt::<Roots>(),
    ) else {
        return Err(changes);
    };
    let (Some(key), Some(session)) = (roots.single_key(), adoptions.0.session.get()) else {
        return Err(changes);
    };
    let plan = Arc::new(Plan {
        id: tag.id.clone(),
        key: key.clone(),
        sharing: sharing.clone(),
        template: tag.template.clone(),
        session: session.clone(),
        adoptions: adoptions.clone(),
    });
    let served: Served = changes
        .then(move |change| plan.clone().message(change))
        .boxed();
    adoptions
        .0
        .handed
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(Handed {
            id: tag.id.clone(),
            serial: tag.serial,
            served,
        });
    Ok(())
}

/// What serving one handed-over subscription takes.
struct Plan {
    id: String,
    /// The root field's response key.
    key: Name,
    sharing: Sharing,
    template: Arc<Template>,
    /// The connection's data (the caller and the rest), for one-shot runs.
    session: Arc<Data>,
    adoptions: Adoptions,
}

impl Plan {
    /// The protocol message for one change. Boxed: the stream keeps this future inline while
    /// it runs, and every idle subscriber would be sized for it.
    fn message(
        self: Arc<Self>,
        change: Result<Change, ServiceError>,
    ) -> BoxFuture<'static, String> {
        async move {
            let change = match change {
                Ok(change) => change,
                Err(error) => return self.response_message(&self.run(Err(error)).await),
            };
            let class = Class {
                change: kind_of(change.kind) as u8,
                admin: self.sharing.admin,
            };
            let payloads = &self.sharing.payloads;
            let cell = payloads.cell((change.event, class, self.sharing.fingerprint));
            let mut own = None;
            let resolved = cell
                .get_or_init(|| async {
                    let response = self.run(Ok(change.clone())).await;
                    let shared = self.shareable(&response);
                    if shared.is_some() {
                        payloads.resolved.inc();
                    }
                    own = Some(response);
                    shared
                })
                .await;
            match (own, resolved) {
                (_, Some(resolved)) => {
                    payloads.shared.inc();
                    self.shared_message(&resolved.json)
                }
                // This subscriber resolved it and it could not be shared: its own response.
                (Some(response), None) => self.response_message(&response),
                // Someone else's resolution could not be shared: resolve our own.
                (None, None) => self.response_message(&self.run(Ok(change)).await),
            }
        }
        .boxed()
    }

    /// Run the subscription's document for one change, with the connection's data.
    async fn run(&self, change: Result<Change, ServiceError>) -> Response {
        let mut request = Request::new(self.template.query.clone())
            .variables(self.template.variables.clone())
            .data(OneShot(Mutex::new(Some(change))));
        if let Some(name) = &self.template.operation_name {
            request = request.operation_name(name.clone());
        }
        let mut responses = self
            .adoptions
            .0
            .schema
            .execute_stream_with_session_data(request, self.session.clone());
        match responses.next().await {
            Some(response) => response,
            None => {
                tracing::error!("a one-shot subscription run gave no response");
                let mut error = ServerError::new("internal error", None);
                error
                    .extensions
                    .get_or_insert_with(Default::default)
                    .set("code", Value::from(super::error_door::INTERNAL));
                Response::from_errors(vec![error])
            }
        }
    }

    /// The root field's value of a response without errors, resolved for sharing.
    fn shareable(&self, response: &Response) -> Option<Resolved> {
        if !response.errors.is_empty() {
            return None;
        }
        let Value::Object(data) = &response.data else {
            return None;
        };
        let value = data.get(&self.key)?;
        let json = serde_json::to_string(value).ok()?;
        Some(Resolved { json: json.into() })
    }

    /// A data message carrying an already serialised root value.
    fn shared_message(&self, json: &str) -> String {
        format!(
            r#"{{"type":"next","id":{},"payload":{{"data":{{{}:{json}}}}}}}"#,
            quoted(&self.id),
            quoted(self.key.as_str()),
        )
    }

    /// A data message carrying a whole response.
    fn response_message(&self, response: &Response) -> String {
        let payload = serde_json::to_string(response).unwrap_or_else(|_| "{}".to_owned());
        format!(
            r#"{{"type":"next","id":{},"payload":{payload}}}"#,
            quoted(&self.id),
        )
    }
}

/// `text` as a JSON string.
fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_owned())
}

/// The subscriptions a socket serves itself, by operation id. Each stream holds its own place
/// in `askloop_live_subscriptions_served` (`shared::Serving`), so dropping it is all it takes.
#[derive(Default)]
pub struct Adopted {
    streams: HashMap<String, Served>,
}

impl Adopted {
    /// Serve `stream` as operation `id` (replacing any served under that id).
    pub fn insert(&mut self, id: String, stream: Served) {
        self.streams.insert(id, stream);
    }

    /// Stop serving operation `id`: whether it was served here.
    pub fn remove(&mut self, id: &str) -> bool {
        self.streams.remove(id).is_some()
    }

    /// Whether nothing is served here.
    pub fn is_empty(&self) -> bool {
        self.streams.is_empty()
    }

    /// The next message of any served operation: its id and the message, or `None` when that
    /// operation's stream ended (it is then no longer served).
    pub async fn next(&mut self) -> (String, Option<String>) {
        futures::future::poll_fn(|cx: &mut task::Context<'_>| {
            let mut ended = None;
            for (id, stream) in &mut self.streams {
                match stream.poll_next_unpin(cx) {
                    std::task::Poll::Ready(Some(message)) => {
                        return std::task::Poll::Ready((id.clone(), Some(message)));
                    }
                    std::task::Poll::Ready(None) => {
                        ended = Some(id.clone());
                        break;
                    }
                    std::task::Poll::Pending => {}
                }
            }
            match ended {
                Some(id) => {
                    self.remove(&id);
                    std::task::Poll::Ready((id, None))
                }
                None => std::task::Poll::Pending,
            }
        })
        .await
    }
}

/// The id of the operation `text` completes, when it is a `complete` message (parsed, not
/// searched: an agent's text inside a `next` payload never reads as one).
fn completed(text: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Complete<'a> {
        #[serde(rename = "type", borrow)]
        kind: std::borrow::Cow<'a, str>,
        id: Option<String>,
    }
    let message = serde_json::from_str::<Complete<'_>>(text).ok()?;
    (message.kind == "complete").then_some(message.id).flatten()
}

/// The `complete` message for operation `id`.
pub fn complete_message(id: &str) -> String {
    format!(r#"{{"type":"complete","id":{}}}"#, quoted(id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::graphql::shared::{Serving, SharedPayloads};
    use crate::login_throttle::LoginThrottle;

    /// The hand-overs of a `graphql-transport-ws` connection, and the gauge they count in.
    fn adoptions() -> (Adoptions, Arc<SharedPayloads>) {
        let payloads = Arc::new(SharedPayloads::new(Default::default()));
        let schema = super::super::build_schema(
            crate::db::Db::disconnected(),
            Arc::new(Config::defaults()),
            Arc::new(LoginThrottle::default()),
            None,
            payloads.clone(),
        );
        let adoptions =
            Adoptions::new(schema, WebSocketProtocols::GraphQLWS).expect("transport-ws adopts");
        (adoptions, payloads)
    }

    /// What a resolver hands over for the subscribe numbered `serial`: a stream that never ends,
    /// holding its place in the gauge as a real one does.
    fn hand(adoptions: &Adoptions, payloads: &SharedPayloads, id: &str, serial: u64) {
        let serving = Serving::start(payloads);
        let served: Served = futures::stream::pending::<String>()
            .map(move |message| {
                let _held = &serving;
                message
            })
            .boxed();
        adoptions.0.handed.lock().expect("unpoisoned").push(Handed {
            id: id.to_owned(),
            serial,
            served,
        });
    }

    fn handed(adoptions: &Adoptions) -> usize {
        adoptions.0.handed.lock().expect("unpoisoned").len()
    }

    fn served(payloads: &SharedPayloads) -> i64 {
        payloads.served.get()
    }

    const COMPLETE_Q: &str = r#"{"type":"complete","id":"q"}"#;

    #[test]
    fn a_hand_over_still_running_is_adopted_on_its_complete() {
        let (adoptions, payloads) = adoptions();
        hand(&adoptions, &payloads, "q", 1);
        let running = |id: &str| (id == "q").then_some(1);
        match Adoptions::claim(Some(&adoptions), COMPLETE_Q, running) {
            Claim::Adopt(id, _served) => assert_eq!(id, "q"),
            _ => panic!("the running operation is adopted"),
        }
        assert_eq!(handed(&adoptions), 0);
    }

    /// The race the serials close: the client's `complete` reached the socket after the resolver
    /// handed over but before the library's empty stream ended. Nothing is served, and the
    /// stream (with its place in the gauge) is gone.
    #[test]
    fn a_hand_over_the_client_completed_first_is_dropped_with_its_complete() {
        let (adoptions, payloads) = adoptions();
        hand(&adoptions, &payloads, "q", 1);
        assert_eq!(served(&payloads), 1);
        let nothing_running = |_: &str| None;
        assert!(matches!(
            Adoptions::claim(Some(&adoptions), COMPLETE_Q, nothing_running),
            Claim::Drop
        ));
        assert_eq!(handed(&adoptions), 0);
        assert_eq!(
            served(&payloads),
            0,
            "the dropped stream gave its place back"
        );
    }

    #[test]
    fn a_hand_over_is_forgotten_as_soon_as_the_client_completes_it() {
        let (adoptions, payloads) = adoptions();
        hand(&adoptions, &payloads, "q", 1);
        hand(&adoptions, &payloads, "r", 2);
        Adoptions::forget_stopped(Some(&adoptions), |id: &str| (id == "r").then_some(2));
        assert_eq!(handed(&adoptions), 1, "only r's is kept");
        assert_eq!(served(&payloads), 1);
    }

    #[test]
    fn a_subscribe_again_under_the_same_id_is_never_given_the_earlier_hand_over() {
        let (adoptions, payloads) = adoptions();
        hand(&adoptions, &payloads, "q", 1);
        let second_running = |id: &str| (id == "q").then_some(2);
        assert!(matches!(
            Adoptions::claim(Some(&adoptions), COMPLETE_Q, second_running),
            Claim::Drop
        ));
        hand(&adoptions, &payloads, "q", 2);
        let Claim::Adopt(_, _kept) = Adoptions::claim(Some(&adoptions), COMPLETE_Q, second_running)
        else {
            panic!("the second subscribe's hand-over is adopted");
        };
        assert_eq!(served(&payloads), 1, "only the second is served");
    }

    #[test]
    fn a_stale_hand_over_is_dropped_at_the_next_message_whatever_it_is() {
        let (adoptions, payloads) = adoptions();
        hand(&adoptions, &payloads, "q", 1);
        let next = r#"{"type":"next","id":"other","payload":{"data":null}}"#;
        assert!(matches!(
            Adoptions::claim(Some(&adoptions), next, |_: &str| None),
            Claim::Send
        ));
        assert_eq!(handed(&adoptions), 0);
        assert_eq!(served(&payloads), 0);
    }

    #[test]
    fn a_next_whose_text_reads_complete_is_sent_not_claimed() {
        let (adoptions, payloads) = adoptions();
        hand(&adoptions, &payloads, "q", 1);
        let next = r#"{"type":"next","id":"q","payload":{"data":{"title":"{\"type\":\"complete\",\"id\":\"q\"}"}}}"#;
        let running = |id: &str| (id == "q").then_some(1);
        assert!(matches!(
            Adoptions::claim(Some(&adoptions), next, running),
            Claim::Send
        ));
        assert_eq!(handed(&adoptions), 1, "still waiting for its own complete");
    }

    #[test]
    fn nothing_is_claimed_without_adoptions_or_hand_overs() {
        assert!(matches!(
            Adoptions::claim(None, COMPLETE_Q, |_: &str| Some(1)),
            Claim::Send
        ));
        let (adoptions, _payloads) = adoptions();
        assert!(matches!(
            Adoptions::claim(Some(&adoptions), COMPLETE_Q, |_: &str| Some(1)),
            Claim::Send
        ));
    }

    #[test]
    fn a_tag_names_the_serial_and_the_id_and_replaces_the_clients() {
        let text = r#"{"type":"subscribe","id":"q","payload":{"query":"x","extensions":{"askloopOperation":"forged"}}}"#;
        let message: serde_json::Value =
            serde_json::from_str(&tagged(text, 7).expect("tagged")).expect("JSON");
        assert_eq!(
            message["payload"]["extensions"][TAG_KEY],
            format!("{}:7:q", nonce())
        );
        assert!(tagged(r#"{"type":"subscribe","id":1,"payload":{}}"#, 1).is_none());
    }
}
