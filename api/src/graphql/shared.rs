//! Shared fan-out (docs/architecture.md#the-live-change-feed): a queue change is resolved and
//! serialised once per (event, visibility class, selection) and the result is handed to every
//! subscriber in that class, instead of once per subscriber.
//!
//! - **Selection.** A subscription's selection is fingerprinted once, when it starts: a SHA-256
//!   of the root field's selection set, the fragments it spreads and the request's variables.
//!   Only a selection made entirely of [class-determined](shareable) fields gets one; any other
//!   (one that reads something personal, such as a niche's question list, which depends on who
//!   asks) is resolved per subscriber, as before.
//! - **Class.** What a class-determined field shows depends only on how the question changed for
//!   the subscriber (ADDED / UPDATED / REMOVED) and whether they administer askloop (a question's
//!   `deliveries` are for admins). Who may receive the event at all is decided before, per
//!   subscriber, by `service::subscriptions`; sharing never widens it.
//! - **Once.** The first subscriber of a key resolves it; the others wait for that result. A
//!   resolution that raised any error (a field refused, a query failed) is not shared: each
//!   subscriber then resolves its own, with its own errors.
//! - **Serialised once.** Over a websocket, the resolved value travels as a marker naming a slot
//!   of that connection; the socket swaps the marker for the shared JSON text as it sends the
//!   message. The marker carries a random per-process nonce, so no text from an agent can
//!   imitate one, and a socket only fills its own slots.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use std::sync::{Arc, Mutex};

use async_graphql::parser::types::{Directive, Field, FragmentDefinition, Selection, SelectionSet};
use async_graphql::registry::Registry;
use async_graphql::{
    Context, ContextSelectionSet, Name, OutputType, Positioned, ServerResult, Value,
};
use sha2::{Digest, Sha256};
use tokio::sync::OnceCell;

use super::queue_change::QueueChange;

/// How many resolved payloads are kept: a few events' worth of every class and selection in use.
/// A subscriber whose key was dropped resolves its own copy; nothing is lost.
const KEPT: usize = 4096;

/// The fingerprint of a shareable selection.
pub type Fingerprint = [u8; 32];

/// Who sees the same payload for one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Class {
    /// How the question changed for them (`QueueChangeKind` as a small number).
    pub change: u8,
    /// Whether they administer askloop.
    pub admin: bool,
}

type Key = (i64, Class, Fingerprint);

/// A payload resolved once: its value and its JSON text.
pub(super) struct Resolved {
    pub(super) value: Value,
    pub(super) json: Arc<str>,
}

/// The payloads resolved for recent events, shared by every subscriber of this instance.
pub struct SharedPayloads {
    entries: Mutex<Entries>,
    /// How many payloads were resolved, and how many times one was handed out: the ratio is the
    /// sharing (`/metrics`).
    pub(super) resolved: Counter,
    pub(super) shared: Counter,
    /// How many subscriptions websockets serve themselves (`adopt`).
    pub(super) served: Gauge,
}

#[derive(Default)]
struct Entries {
    cells: HashMap<Key, Arc<OnceCell<Option<Resolved>>>>,
    order: VecDeque<Key>,
}

impl std::fmt::Debug for SharedPayloads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedPayloads")
            .field("resolved", &self.resolved.get())
            .field("shared", &self.shared.get())
            .finish_non_exhaustive()
    }
}

impl SharedPayloads {
    /// A store counting into `resolved` (payloads resolved for sharing) and `shared` (payloads
    /// handed out from it), with `served` the gauge of subscriptions websockets serve.
    pub fn new((resolved, shared, served): (Counter, Counter, Gauge)) -> Self {
        Self {
            entries: Mutex::new(Entries::default()),
            resolved,
            shared,
            served,
        }
    }

    pub(super) fn cell(&self, key: Key) -> Arc<OnceCell<Option<Resolved>>> {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(cell) = entries.cells.get(&key) {
            return cell.clone();
        }
        let cell = Arc::new(OnceCell::new());
        entries.cells.insert(key, cell.clone());
        entries.order.push_back(key);
        while entries.order.len() > KEPT {
            if let Some(old) = entries.order.pop_front() {
                entries.cells.remove(&old);
            }
        }
        cell
    }
}

/// What every marker of this process starts with: a random nonce, so no agent text can imitate
/// one.
fn marker_prefix() -> &'static str {
    static PREFIX: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PREFIX.get_or_init(|| {
        format!(
            "askloop-shared:{}:",
            hex::encode(rand::random::<[u8; 16]>())
        )
    })
}

/// One connection's slots: the shared JSON texts its outgoing messages name by marker.
#[derive(Clone, Default)]
pub struct Splices {
    next: Arc<AtomicU64>,
    slots: Arc<Mutex<HashMap<u64, Arc<str>>>>,
}

impl Splices {
    fn marker(&self, json: Arc<str>) -> Value {
        let slot = self.next.fetch_add(1, Ordering::Relaxed);
        self.slots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(slot, json);
        Value::String(format!("{}{slot}", marker_prefix()))
    }

    /// An outgoing message with its marker (if any) replaced by the JSON it names. Only this
    /// connection's own slots are filled, each once.
    pub fn fill(&self, text: String) -> String {
        let quoted = format!("\"{}", marker_prefix());
        if !text.contains(&quoted) {
            return text;
        }
        // Every marker in the message (a document may hold more than one root field), in order.
        let mut filled = String::with_capacity(text.len() + 1024);
        let mut rest = text.as_str();
        while let Some(start) = rest.find(&quoted) {
            let digits_at = start + quoted.len();
            let digits = rest[digits_at..]
                .bytes()
                .take_while(u8::is_ascii_digit)
                .count();
            let end = digits_at + digits;
            let json = (digits > 0 && rest.as_bytes().get(end) == Some(&b'"'))
                .then(|| rest[digits_at..end].parse::<u64>().ok())
                .flatten()
                .and_then(|slot| {
                    self.slots
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .remove(&slot)
                });
            match json {
                Some(json) => {
                    filled.push_str(&rest[..start]);
                    filled.push_str(&json);
                    rest = &rest[end + 1..];
                }
                None => {
                    // Not one of ours: left as it is.
                    filled.push_str(&rest[..digits_at]);
                    rest = &rest[digits_at..];
                }
            }
        }
        filled.push_str(rest);
        filled
    }
}

/// What a subscription needs to share: the store, and its selection's fingerprint.
#[derive(Clone)]
pub struct Sharing {
    pub(super) payloads: Arc<SharedPayloads>,
    pub(super) fingerprint: Fingerprint,
    pub(super) admin: bool,
}

impl Sharing {
    /// Sharing for the subscription `ctx` is starting, when its selection is shareable and the
    /// schema has a store.
    pub fn for_subscription(ctx: &Context<'_>, admin: bool) -> Option<Self> {
        let payloads = ctx.data_opt::<Arc<SharedPayloads>>()?.clone();
        let fingerprint = fingerprint(
            &ctx.item.node.selection_set,
            &ctx.query_env.fragments,
            &format!("{:?}", ctx.query_env.variables),
        )?;
        Some(Self {
            payloads,
            fingerprint,
            admin,
        })
    }
}

/// A queue change on its way to one subscriber, resolved through the shared store when it can be.
pub struct SharedChange {
    /// The change.
    pub change: QueueChange,
    /// The event it came from (its audit row).
    pub event: i64,
    /// The subscription's sharing, if its selection is shareable.
    pub sharing: Option<Sharing>,
}

impl OutputType for SharedChange {
    fn type_name() -> std::borrow::Cow<'static, str> {
        QueueChange::type_name()
    }

    fn create_type_info(registry: &mut Registry) -> String {
        QueueChange::create_type_info(registry)
    }

    async fn resolve(
        &self,
        ctx: &ContextSelectionSet<'_>,
        field: &Positioned<Field>,
    ) -> ServerResult<Value> {
        let Some(sharing) = &self.sharing else {
            return OutputType::resolve(&self.change, ctx, field).await;
        };
        let class = Class {
            change: self.change.change as u8,
            admin: sharing.admin,
        };
        let cell = sharing
            .payloads
            .cell((self.event, class, sharing.fingerprint));
        let mut own = None;
        let resolved = cell
            .get_or_init(|| async {
                let errors_before = errors_so_far(ctx);
                let value = OutputType::resolve(&self.change, ctx, field).await;
                let clean = errors_so_far(ctx) == errors_before;
                let shared = match &value {
                    Ok(value) if clean => serde_json::to_string(value).ok().map(|json| Resolved {
                        value: value.clone(),
                        json: json.into(),
                    }),
                    _ => None,
                };
                if shared.is_some() {
                    sharing.payloads.resolved.inc();
                }
                own = Some(value);
                shared
            })
            .await;
        match (own, resolved) {
            // This subscriber resolved it: its own result, errors and all, unless it is shared.
            (Some(value), None) => value,
            (_, Some(resolved)) => {
                sharing.payloads.shared.inc();
                Ok(match ctx.data_opt::<Splices>() {
                    Some(splices) => splices.marker(resolved.json.clone()),
                    None => resolved.value.clone(),
                })
            }
            // Someone else's resolution could not be shared: resolve our own.
            (None, None) => OutputType::resolve(&self.change, ctx, field).await,
        }
    }
}

fn errors_so_far(ctx: &ContextSelectionSet<'_>) -> usize {
    ctx.query_env
        .errors
        .lock()
        .map(|errors| errors.len())
        .unwrap_or(usize::MAX)
}

/// The fingerprint of a queue change's selection, or `None` when it reads anything that is not
/// class-determined. It is taken over a canonical text of the selection (fragments spelled out,
/// no positions or whitespace), so the same selection written under another root field, in
/// another layout or through differently named fragments prints the same.
fn fingerprint(
    selection: &Positioned<SelectionSet>,
    fragments: &HashMap<Name, Positioned<FragmentDefinition>>,
    variables: &str,
) -> Option<Fingerprint> {
    let mut walk = Walk {
        fragments,
        text: String::new(),
        spreads: 0,
    };
    if !walk.selection(Shape::QueueChange, selection, 0) {
        return None;
    }
    let mut hash = Sha256::new();
    hash.update(walk.text.as_bytes());
    hash.update(b"\0variables\0");
    hash.update(variables.as_bytes());
    Some(hash.finalize().into())
}

/// The object types a shareable selection may walk through.
#[derive(Clone, Copy)]
enum Shape {
    QueueChange,
    Question,
    Niche,
    /// An object whose every field is plain data about the question (options, answers, timeline,
    /// budget entries, deliveries without their attempts).
    Plain,
}

/// A walk over a selection that writes its canonical text and checks every field is
/// class-determined.
struct Walk<'a> {
    fragments: &'a HashMap<Name, Positioned<FragmentDefinition>>,
    text: String,
    spreads: usize,
}

/// The longest canonical text a shareable selection may have, and the most fragment spreads it
/// may follow: bounds on the walk (a document past them is simply not shared).
const MAX_TEXT: usize = 16 * 1024;
const MAX_SPREADS: usize = 64;

impl Walk<'_> {
    /// Whether every field `selection` reads of a `shape` is class-determined. Fields not listed
    /// here are not shared: a new field stays per subscriber until it is added, knowingly.
    fn selection(
        &mut self,
        shape: Shape,
        selection: &Positioned<SelectionSet>,
        depth: usize,
    ) -> bool {
        if depth > 16 || self.text.len() > MAX_TEXT {
            return false;
        }
        self.text.push('{');
        for item in &selection.node.items {
            let ok = match &item.node {
                Selection::Field(field) => self.field(shape, &field.node, depth),
                Selection::InlineFragment(inline) => {
                    self.text.push_str("...");
                    if let Some(on) = &inline.node.type_condition {
                        self.text.push_str(" on ");
                        self.text.push_str(on.node.on.node.as_str());
                    }
                    self.directives(&inline.node.directives);
                    self.selection(shape, &inline.node.selection_set, depth + 1)
                }
                Selection::FragmentSpread(spread) => {
                    self.spreads += 1;
                    let Some(fragment) = self.fragments.get(&spread.node.fragment_name.node) else {
                        return false;
                    };
                    if self.spreads > MAX_SPREADS {
                        return false;
                    }
                    // Spelled out as the inline fragment it stands for.
                    self.text.push_str("... on ");
                    self.text
                        .push_str(fragment.node.type_condition.node.on.node.as_str());
                    self.directives(&spread.node.directives);
                    self.directives(&fragment.node.directives);
                    self.selection(shape, &fragment.node.selection_set, depth + 1)
                }
            };
            if !ok {
                return false;
            }
            self.text.push(' ');
        }
        self.text.push('}');
        true
    }

    fn field(&mut self, shape: Shape, field: &Field, depth: usize) -> bool {
        let name = field.name.node.as_str();
        let next = match (shape, name) {
            (_, "__typename")
            | (Shape::QueueChange, "change")
            | (
                Shape::Question,
                "id" | "externalId" | "title" | "question" | "context" | "urgency" | "status"
                | "bountyMinor" | "kind" | "budgetLimitMinor" | "deliverable" | "researchRound"
                | "escalationStep" | "createdAt" | "answeredAt" | "updatedAt" | "expiresAt",
            )
            | (Shape::Niche, "slug" | "name" | "status" | "description") => None,
            (Shape::QueueChange, "question") => Some(Shape::Question),
            (
                Shape::Question,
                "options" | "answers" | "timeline" | "budgetEntries" | "deliveries",
            ) => Some(Shape::Plain),
            (Shape::Question, "niche") => Some(Shape::Niche),
            // Plain objects' fields, except a delivery's attempts (read per delivery).
            (Shape::Plain, "attempts") => return false,
            (Shape::Plain, _) => Some(Shape::Plain),
            _ => return false,
        };
        if let Some(alias) = &field.alias {
            self.text.push_str(alias.node.as_str());
            self.text.push(':');
        }
        self.text.push_str(name);
        for (argument, value) in &field.arguments {
            self.text
                .push_str(&format!("({}:{})", argument.node, value.node));
        }
        self.directives(&field.directives);
        match next {
            Some(shape) => self.selection(shape, &field.selection_set, depth + 1),
            None => true,
        }
    }

    fn directives(&mut self, directives: &[Positioned<Directive>]) {
        for directive in directives {
            self.text.push('@');
            self.text.push_str(directive.node.name.node.as_str());
            for (argument, value) in &directive.node.arguments {
                self.text
                    .push_str(&format!("({}:{})", argument.node, value.node));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_graphql::parser::parse_query;
    use async_graphql::parser::types::{DocumentOperations, OperationDefinition};

    fn root_field(
        query: &str,
    ) -> (
        Positioned<Field>,
        HashMap<Name, Positioned<FragmentDefinition>>,
    ) {
        let doc = parse_query(query).expect("a query");
        let op: Positioned<OperationDefinition> = match doc.operations {
            DocumentOperations::Single(op) => op,
            DocumentOperations::Multiple(ops) => ops.into_values().next().expect("one"),
        };
        let field = match &op.node.selection_set.node.items[0].node {
            Selection::Field(field) => field.clone(),
            _ => panic!("a field first"),
        };
        (field, doc.fragments)
    }

    fn print(query: &str) -> Option<Fingerprint> {
        let (field, fragments) = root_field(query);
        fingerprint(&field.node.selection_set, &fragments, "{}")
    }

    #[test]
    fn a_card_selection_is_shareable_and_the_same_text_gives_the_same_print() {
        let q = "subscription { questionQueue(nicheSlug: \"a\") { change question { id title options { id label } niche { slug } answers { body } } } }";
        let other_niche = q.replace("\"a\"", "\"b\"");
        assert!(print(q).is_some());
        assert_eq!(
            print(q),
            print(&other_niche),
            "the root's arguments are not part of it"
        );
        let more = q.replace("id title", "id title context");
        assert_ne!(print(q), print(&more), "another selection, another print");
    }

    /// The dashboard's own subscriptions, as its `.graphql` files spell them, are shared: a field
    /// added to the card but not to the list above would quietly have every open dashboard
    /// resolve and serialise its own copy of every event.
    #[test]
    fn the_dashboards_subscriptions_are_shareable() {
        for (file, operation) in [
            (
                include_str!("../../../web/graphql/queue.graphql"),
                "QueueChanges",
            ),
            (
                include_str!("../../../web/graphql/niches.graphql"),
                "AwaitingMeChanges",
            ),
        ] {
            let doc = parse_query(file).expect("the dashboard's operations parse");
            let DocumentOperations::Multiple(operations) = doc.operations else {
                panic!("{operation}: several operations in its file")
            };
            let op = &operations[&Name::new(operation)];
            let Selection::Field(field) = &op.node.selection_set.node.items[0].node else {
                panic!("{operation}: a field first")
            };
            assert!(
                fingerprint(&field.node.selection_set, &doc.fragments, "{}").is_some(),
                "{operation} is resolved per subscriber"
            );
        }
    }

    #[test]
    fn personal_fields_are_never_shared() {
        for personal in [
            "question { niche { questions { edges { node { id } } } } }",
            "question { niche { members { handle } } }",
            "question { deliveries { attempts { id } } }",
            "question { somethingNew }",
        ] {
            let q = format!("subscription {{ awaitingMe {{ change {personal} }} }}");
            assert!(print(&q).is_none(), "{personal} must not be shared");
        }
    }

    #[test]
    fn fragments_are_followed_and_their_text_counts() {
        let q = "subscription { awaitingMe { ...C } } fragment C on QueueChange { change question { ...Q } } fragment Q on Question { id title }";
        let personal = "subscription { awaitingMe { ...C } } fragment C on QueueChange { change question { ...Q } } fragment Q on Question { id niche { members { handle } } }";
        let missing = "subscription { awaitingMe { ...C } }";
        assert!(print(q).is_some());
        assert!(print(personal).is_none());
        assert!(print(missing).is_none());
        let more = q.replace("id title }", "id title status }");
        assert_ne!(print(q), print(&more));
        let spelled_out = "subscription { questionQueue(nicheSlug: \"x\") { ... on QueueChange { change question { ... on Question { id title } } } } }";
        assert_eq!(
            print(q),
            print(spelled_out),
            "a fragment prints as what it stands for"
        );
        let laid_out = "subscription {\n  awaitingMe {\n    change\n    question { ...Q }\n  }\n}\nfragment Q on Question {\n  id\n  title\n}";
        let inline =
            "subscription { awaitingMe { change question { ... on Question { id title } } } }";
        assert_eq!(print(laid_out), print(inline), "layout does not count");
    }

    #[test]
    fn variables_are_part_of_the_print() {
        let (field, fragments) = root_field(
            "subscription($t: Boolean!) { awaitingMe { change question { title @include(if: $t) } } }",
        );
        let on = fingerprint(&field.node.selection_set, &fragments, "{t: true}");
        let off = fingerprint(&field.node.selection_set, &fragments, "{t: false}");
        assert!(on.is_some());
        assert_ne!(on, off);
    }

    #[test]
    fn a_marker_is_filled_once_and_only_from_its_own_connection() {
        let mine = Splices::default();
        let theirs = Splices::default();
        let Value::String(marker) = mine.marker(Arc::from("{\"change\":\"ADDED\"}")) else {
            panic!("a string marker");
        };
        let message = format!(
            "{{\"id\":\"1\",\"type\":\"next\",\"payload\":{{\"data\":{{\"q\":\"{marker}\"}}}}}}"
        );
        assert_eq!(theirs.fill(message.clone()), message, "not theirs to fill");
        assert_eq!(
            mine.fill(message.clone()),
            "{\"id\":\"1\",\"type\":\"next\",\"payload\":{\"data\":{\"q\":{\"change\":\"ADDED\"}}}}"
        );
        assert_eq!(mine.fill(message.clone()), message, "a slot is used once");
        let Value::String(a) = mine.marker(Arc::from("1")) else {
            panic!("a string marker");
        };
        let Value::String(b) = mine.marker(Arc::from("[2]")) else {
            panic!("a string marker");
        };
        assert_eq!(
            mine.fill(format!("{{\"a\":\"{a}\",\"b\":\"{b}\"}}")),
            "{\"a\":1,\"b\":[2]}",
            "every marker of a message is filled"
        );
        let forged = "{\"data\":{\"q\":\"askloop-shared:0000:0\"}}".to_owned();
        assert_eq!(
            mine.fill(forged.clone()),
            forged,
            "a guessed nonce fills nothing"
        );
    }
}
