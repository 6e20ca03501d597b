//! Adopted subscriptions (docs/architecture.md#adopted-subscriptions): a websocket subscription
//! to a queue whose selection is [shared](super::shared) is started by the library as any other
//! (parsed, validated, the subscriber's rights checked), then handed over to the socket, which
//! serves it from then on without the library's per-subscription state (its execution stream
//! and its copy of the document, about half of what an idle subscriber costs).
//!
//! - **Ticket.** The socket puts a [`Ticket`] into the data of every `subscribe` it runs (the
//!   operation's id and the socket's serial number for that subscribe); [`Adoptable`] adds the
//!   request's [`Roots`](super::shared::Roots) (read from its parsed document) and its template
//!   ([`ticket`]). Only the socket makes
//!   a ticket: a client has no way to write into a request's data.
//! - **Hand-over.** A queue resolver that finds a ticket, the connection's [`Adoptions`] and a
//!   shareable single-field operation gives its stream of changes (already registered with the
//!   live hub) to the connection and returns an empty one. When the library's stream for that
//!   operation ends, the socket takes the hand-over of exactly that id and serial
//!   ([`Adoptions::take`]) and, if the protocol still runs that subscribe, serves it under the
//!   same id; a client `complete` forgets it at once ([`Adoptions::forget`]).
//! - **Serving.** A change whose payload is already resolved for its (event, class, selection)
//!   is sent as that shared JSON text. Any other — the first of its key, an error, a payload
//!   that raised errors — is resolved by a one-shot run of the subscription's own document
//!   through the library, with the connection's data, for that one change ([`OneShot`]): the
//!   same fields, errors, codes and error door as a subscription the library serves.

pub mod ticket;

use std::pin::Pin;
use std::sync::{Arc, Mutex};

use async_graphql::{Context, Data, Name, Request, Response, ServerError, Value};
use futures::future::{self, BoxFuture, Either, Ready};
use futures::{FutureExt, Stream, StreamExt};

use super::shared::{Class, Resolved, Roots, Sharing};
use crate::error::ServiceError;
use crate::graphql::AskloopSchema;
use crate::graphql::error_door::INTERNAL;
use crate::graphql::queue_change::kind_of;
use crate::service::reach::subscriptions::Change;
#[cfg(doc)]
use ticket::{Adoptable, Ticket};
use ticket::{Tag, Template};

/// A handed-over subscription as the socket serves it: the protocol messages to send.
pub type Served = Pin<Box<dyn Stream<Item = String> + Send>>;

/// One connection's hand-overs: what its queue resolvers handed over, waiting for the socket to
/// take them when the library's streams for their operations end.
#[derive(Clone)]
pub struct Adoptions(Arc<Inner>);

struct Inner {
    schema: AskloopSchema,
    /// The connection's data (its caller and the rest) for one-shot runs.
    session: Arc<Data>,
    handed: Mutex<Vec<Handed>>,
}

/// A stream handed over by the resolver of the subscribe numbered `serial`, for operation `id`.
struct Handed {
    id: String,
    serial: u64,
    served: Served,
}

impl Adoptions {
    /// The hand-overs of one connection, whose one-shot runs go through `schema` with `session`
    /// (the connection's data, without these hand-overs: they would hold it).
    pub fn new(schema: AskloopSchema, session: Data) -> Self {
        Self(Arc::new(Inner {
            schema,
            session: Arc::new(session),
            handed: Mutex::new(Vec::new()),
        }))
    }

    fn handed(&self) -> std::sync::MutexGuard<'_, Vec<Handed>> {
        self.0.handed.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The hand-over of operation `id` by the subscribe numbered `serial`, if its resolver made
    /// one: the socket serves it, or drops it when the client stopped that subscribe first.
    pub fn take(&self, id: &str, serial: u64) -> Option<Served> {
        let mut handed = self.handed();
        let at = handed
            .iter()
            .position(|h| h.id == id && h.serial == serial)?;
        Some(handed.swap_remove(at).served)
    }

    /// Drop any hand-over of operation `id` up to the subscribe numbered `serial` (the client
    /// completed it): it will never be served, and it holds a place in the served gauge.
    pub fn forget(&self, id: &str, serial: u64) {
        self.handed().retain(|h| h.id != id || h.serial > serial);
    }

    /// Drop whatever was handed over and not taken (the connection is ending).
    pub fn clear(&self) {
        self.handed().clear();
    }
}

/// The one change a one-shot run resolves (taken by the resolver it reaches).
struct OneShot(Mutex<Option<Result<Change, ServiceError>>>);

/// When this resolver runs as a one-shot: the change it is to resolve, once.
pub(crate) fn one_shot(ctx: &Context<'_>) -> Option<Result<Change, ServiceError>> {
    let shot = ctx.data_opt::<OneShot>()?;
    shot.0.lock().unwrap_or_else(|p| p.into_inner()).take()
}

/// Whether this resolver runs as a one-shot (whose payload is never shared: the adopted
/// stream that asked for it does the sharing).
pub(crate) fn is_one_shot(ctx: &Context<'_>) -> bool {
    ctx.data_opt::<OneShot>().is_some()
}

/// Hand `changes` over to the connection when the subscription `ctx` is starting may be
/// adopted: started over a websocket with a tag, a shareable selection, and this field the
/// operation's only root selection. Otherwise `changes` comes back.
pub(crate) fn hand_over<S>(
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
    let Some(key) = roots.single_key() else {
        return Err(changes);
    };
    let plan = Arc::new(Plan {
        id: tag.id.clone(),
        prefix: format!(
            r#"{{"type":"next","id":{},"payload":{{"data":{{{}:"#,
            quoted(&tag.id),
            quoted(key.as_str()),
        )
        .into(),
        key: key.clone(),
        sharing: sharing.clone(),
        template: tag.template.clone(),
        schema: adoptions.0.schema.clone(),
        session: adoptions.0.session.clone(),
    });
    let served: Served = changes
        .then(move |change| plan.clone().message(change))
        .boxed();
    adoptions.handed().push(Handed {
        id: tag.id.clone(),
        serial: tag.serial,
        served,
    });
    Ok(())
}

/// What serving one handed-over subscription takes.
struct Plan {
    id: String,
    /// The start of every shared message, up to the root field's value.
    prefix: Box<str>,
    /// The root field's response key.
    key: Name,
    sharing: Sharing,
    template: Arc<Template>,
    schema: AskloopSchema,
    /// The connection's data (the caller and the rest), for one-shot runs.
    session: Arc<Data>,
}

impl Plan {
    /// The protocol message for one change. A change whose payload is resolved already (every
    /// subscriber's but the first's) is made at once, without a future of its own; any other is
    /// boxed: the stream keeps this future inline while it runs, and every idle subscriber
    /// would be sized for it.
    fn message(
        self: Arc<Self>,
        change: Result<Change, ServiceError>,
    ) -> Either<Ready<String>, BoxFuture<'static, String>> {
        let change = match change {
            Ok(change) => change,
            Err(error) => {
                return Either::Right(
                    async move { self.response_message(&self.run(Err(error)).await) }.boxed(),
                );
            }
        };
        let class = Class {
            change: kind_of(change.kind) as u8,
            admin: self.sharing.admin,
        };
        let cell = self
            .sharing
            .payloads
            .cell((change.event, class, self.sharing.fingerprint));
        if let Some(Some(resolved)) = cell.get() {
            self.sharing.payloads.shared.inc();
            return Either::Left(future::ready(self.shared_message(&resolved.json)));
        }
        Either::Right(self.resolve(cell, change).boxed())
    }

    /// The message for a change whose payload `cell` holds once someone resolved it: this
    /// subscriber, when first.
    async fn resolve(
        self: Arc<Self>,
        cell: Arc<tokio::sync::OnceCell<Option<Resolved>>>,
        change: Change,
    ) -> String {
        let payloads = &self.sharing.payloads;
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

    /// Run the subscription's document for one change, with the connection's data.
    async fn run(&self, change: Result<Change, ServiceError>) -> Response {
        let mut request = Request::new(self.template.query.clone())
            .variables(self.template.variables.clone())
            .data(OneShot(Mutex::new(Some(change))));
        if let Some(name) = &self.template.operation_name {
            request = request.operation_name(name.clone());
        }
        let mut responses = self
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
                    .set("code", Value::from(INTERNAL));
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

    /// A data message carrying an already serialised root value: the one copy every subscriber
    /// of the change makes.
    fn shared_message(&self, json: &str) -> String {
        let mut message = String::with_capacity(self.prefix.len() + json.len() + 3);
        message.push_str(&self.prefix);
        message.push_str(json);
        message.push_str("}}}");
        message
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::live::shared::{Serving, SharedPayloads};
    use crate::net::login_throttle::LoginThrottle;

    /// The hand-overs of one connection, and the gauge they count in.
    fn adoptions() -> (Adoptions, Arc<SharedPayloads>) {
        let payloads = Arc::new(SharedPayloads::new(Default::default()));
        let schema = crate::graphql::build_schema(
            crate::db::Db::disconnected(),
            Arc::new(Config::defaults()),
            Arc::new(LoginThrottle::default()),
            None,
            payloads.clone(),
        );
        (Adoptions::new(schema, Data::default()), payloads)
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
        adoptions.handed().push(Handed {
            id: id.to_owned(),
            serial,
            served,
        });
    }

    fn handed(adoptions: &Adoptions) -> usize {
        adoptions.handed().len()
    }

    fn served(payloads: &SharedPayloads) -> i64 {
        payloads.served.get()
    }

    #[test]
    fn a_hand_over_is_taken_for_exactly_its_id_and_serial() {
        let (adoptions, payloads) = adoptions();
        hand(&adoptions, &payloads, "q", 1);
        assert!(adoptions.take("q", 2).is_none(), "another subscribe's");
        assert!(adoptions.take("r", 1).is_none(), "another operation's");
        assert!(adoptions.take("q", 1).is_some());
        assert_eq!(handed(&adoptions), 0);
    }

    /// The client's `complete` came before the library's stream ended: the hand-over is dropped
    /// at once, with its place in the gauge, and the socket finds nothing to serve.
    #[test]
    fn a_hand_over_the_client_completed_is_forgotten_with_its_place_in_the_gauge() {
        let (adoptions, payloads) = adoptions();
        hand(&adoptions, &payloads, "q", 1);
        hand(&adoptions, &payloads, "r", 2);
        assert_eq!(served(&payloads), 2);
        adoptions.forget("q", 1);
        assert_eq!(handed(&adoptions), 1, "only r's is kept");
        assert_eq!(served(&payloads), 1);
        assert!(adoptions.take("q", 1).is_none());
    }

    #[test]
    fn forgetting_a_subscribe_keeps_a_later_one_under_the_same_id() {
        let (adoptions, payloads) = adoptions();
        hand(&adoptions, &payloads, "q", 1);
        hand(&adoptions, &payloads, "q", 3);
        adoptions.forget("q", 1);
        assert!(adoptions.take("q", 3).is_some());
    }

    #[test]
    fn a_connection_ending_drops_every_hand_over_not_taken() {
        let (adoptions, payloads) = adoptions();
        hand(&adoptions, &payloads, "q", 1);
        adoptions.clear();
        assert_eq!(handed(&adoptions), 0);
        assert_eq!(served(&payloads), 0);
    }
}
