//! The `graphql-transport-ws` protocol as a state machine, and nothing else: what a
//! connection has agreed so far (initialised or not), which operations run under which ids, and
//! what to answer each client message and each event with. No I/O: the socket
//! (`live::socket`) feeds it frames and events ([`Input`]) and carries out what it says
//! ([`Step`]) — send a frame, close, start or stop an operation, decide a `connection_init`.
//!
//! It follows the protocol's own document (graphql-ws's `PROTOCOL.md`) for the close codes:
//! 4400 a message that is not the protocol's, 4401 a `subscribe` before the acknowledgement,
//! 4403 a refused `connection_init`, 4408 no `connection_init` in time, 4409 a `subscribe` under
//! an id already running, 4429 a second `connection_init`. askloop adds 4429 for an operation
//! past the connection's cap, 1008 for a peer that sends more than `inbox` messages while its
//! `connection_init` is being decided, and 1013 for a `connection_init` refused only because the
//! instance is full.

use std::collections::{HashMap, VecDeque};

use async_graphql::Request;

/// Why a `connection_init` was refused, for the close code it gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InitRefusal {
    /// No credential, or one that is not valid: 4403.
    Forbidden,
    /// Signed in, but the instance holds as many signed-in sockets as it may: 1013.
    AtCapacity,
}

/// Why a socket past the instance-wide cap is closed (1013).
pub const AT_CAPACITY: &str = "askloop is at its websocket limit; try again later";

/// What happens to a connection: a frame from the client, or an event the socket saw.
#[derive(Debug)]
pub enum Input<'a> {
    /// A text frame from the client.
    Frame(&'a str),
    /// The `connection_init` this machine asked about was accepted.
    InitAccepted,
    /// It was refused, for this reason (said to the client).
    InitRefused(InitRefusal, &'a str),
    /// The time to send `connection_init` has passed.
    InitTimedOut,
    /// The stream of operation `id`, started as the subscribe numbered `serial`, has ended;
    /// `handed_over` when the socket holds a hand-over of exactly that subscribe to serve
    /// instead (`live::adopt`).
    Ended {
        /// The operation's id.
        id: &'a str,
        /// The serial of the subscribe that started it.
        serial: u64,
        /// Whether a hand-over of that subscribe waits to be served.
        handed_over: bool,
    },
    /// Operation `id` (subscribe `serial`) was refused before it ran — it did not parse or
    /// validate, or costs too much — with `errors`, a serialised list of GraphQL errors; it runs
    /// no more.
    Failed {
        /// The operation's id.
        id: &'a str,
        /// The serial of the subscribe that started it.
        serial: u64,
        /// The errors, serialised (a JSON list).
        errors: &'a str,
    },
}

/// What the socket is to do next.
#[derive(Debug)]
pub enum Step {
    /// Nothing.
    Nothing,
    /// Send this text frame.
    Send(String),
    /// Close the connection with this code and reason.
    Close(u16, String),
    /// Decide this `connection_init` payload, then come back with `InitAccepted` or
    /// `InitRefused`.
    Init(serde_json::Value),
    /// Start operation `id` as the subscribe numbered `serial`, running `request`.
    Start {
        /// The operation's id.
        id: String,
        /// This subscribe's serial number on the connection.
        serial: u64,
        /// What the client asked to run.
        request: Box<Request>,
    },
    /// The client completed operation `id` (subscribe `serial`): stop it, drop whatever was
    /// handed over for it, and send `complete`.
    Stop {
        /// The operation's id.
        id: String,
        /// The serial of the subscribe that started it.
        serial: u64,
    },
    /// Serve the hand-over of operation `id` from now on; it keeps running.
    Serve(String),
    /// Operation `id` has ended: send its `complete`.
    Complete(String),
    /// Drop the hand-over of subscribe `serial`: the client stopped it first.
    Drop(u64),
}

/// How far the connection has got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Opened; no `connection_init` yet.
    Opened,
    /// A `connection_init` is being decided.
    Initialising,
    /// Acknowledged: operations may run.
    Ready,
}

/// The protocol's state for one connection.
#[derive(Debug)]
pub struct Protocol {
    phase: Phase,
    /// The operations running, by id, with the serial of the subscribe that started each.
    running: HashMap<String, u64>,
    /// How many subscribes the connection has started.
    serials: u64,
    /// How many operations may run at once.
    max_running: usize,
    /// Frames heard while the `connection_init` was being decided, answered after it.
    held: VecDeque<String>,
    /// How many frames may be held.
    max_held: usize,
}

/// A client message, by its `type` (anything else is not the protocol's).
#[derive(serde::Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ClientMessage {
    ConnectionInit {
        #[serde(default)]
        payload: Option<serde_json::Value>,
    },
    Ping {
        #[serde(default)]
        payload: Option<serde_json::Value>,
    },
    Pong {},
    Subscribe {
        id: String,
        payload: Box<Request>,
    },
    Complete {
        id: String,
    },
}

/// The longest close reason a websocket close frame carries, in bytes.
const MAX_REASON: usize = 123;

impl Protocol {
    /// A connection that may run `max_running` operations at once and hold `max_held` frames
    /// while its `connection_init` is decided.
    pub fn new(max_running: usize, max_held: usize) -> Self {
        Self {
            phase: Phase::Opened,
            running: HashMap::new(),
            serials: 0,
            max_running,
            held: VecDeque::new(),
            max_held: max_held.max(1),
        }
    }

    /// Whether the `connection_init` has been acknowledged.
    pub fn is_ready(&self) -> bool {
        self.phase == Phase::Ready
    }

    /// How many operations run now (what the per-connection cap counts).
    pub fn running(&self) -> usize {
        self.running.len()
    }

    /// A frame heard while the `connection_init` was decided, to be fed in again now that it
    /// has been.
    pub fn held_frame(&mut self) -> Option<String> {
        if self.phase == Phase::Initialising {
            return None;
        }
        self.held.pop_front()
    }

    /// What `input` asks of the socket.
    pub fn step(&mut self, input: Input<'_>) -> Step {
        match input {
            Input::Frame(text) => self.heard(text),
            Input::InitAccepted if self.phase == Phase::Initialising => {
                self.phase = Phase::Ready;
                Step::Send(r#"{"type":"connection_ack"}"#.to_owned())
            }
            Input::InitRefused(InitRefusal::Forbidden, reason)
                if self.phase == Phase::Initialising =>
            {
                Step::Close(
                    4403,
                    format!(
                        "Forbidden: {reason}; send a session token or API key as payload.token"
                    ),
                )
            }
            Input::InitRefused(InitRefusal::AtCapacity, _) if self.phase == Phase::Initialising => {
                Step::Close(1013, AT_CAPACITY.to_owned())
            }
            Input::InitAccepted | Input::InitRefused(..) => Step::Nothing,
            Input::InitTimedOut if self.phase != Phase::Ready => {
                Step::Close(4408, "Connection initialisation timeout".to_owned())
            }
            Input::InitTimedOut => Step::Nothing,
            Input::Ended {
                id,
                serial,
                handed_over,
            } => self.ended(id, serial, handed_over),
            // graphql-transport-ws: an `error` message ends the operation, and no `complete`
            // follows it. One the client already stopped hears nothing.
            Input::Failed { id, serial, errors } => {
                if self.running.get(id) != Some(&serial) {
                    return Step::Nothing;
                }
                self.running.remove(id);
                Step::Send(error_message(id, errors))
            }
        }
    }

    fn heard(&mut self, text: &str) -> Step {
        if self.phase == Phase::Initialising {
            // Answered once the `connection_init` is decided, in the order they came.
            if self.held.len() >= self.max_held {
                return Step::Close(1008, "too many messages at once".to_owned());
            }
            self.held.push_back(text.to_owned());
            return Step::Nothing;
        }
        let message = match serde_json::from_str::<ClientMessage>(text) {
            Ok(message) => message,
            Err(error) => {
                return Step::Close(4400, reason(&format!("Invalid message received: {error}")));
            }
        };
        match message {
            ClientMessage::ConnectionInit { payload } => {
                if self.phase != Phase::Opened {
                    return Step::Close(4429, "Too many initialisation requests.".to_owned());
                }
                self.phase = Phase::Initialising;
                Step::Init(payload.unwrap_or_default())
            }
            ClientMessage::Ping { payload } => Step::Send(pong(payload)),
            ClientMessage::Pong {} => Step::Nothing,
            ClientMessage::Subscribe { .. } if self.phase != Phase::Ready => {
                Step::Close(4401, "Unauthorized".to_owned())
            }
            ClientMessage::Subscribe { id, .. } if self.running.contains_key(&id) => {
                Step::Close(4409, reason(&format!("Subscriber for {id} already exists")))
            }
            ClientMessage::Subscribe { .. } if self.running.len() >= self.max_running => {
                Step::Close(
                    4429,
                    format!(
                        "at most {} operations at once on one connection",
                        self.max_running
                    ),
                )
            }
            ClientMessage::Subscribe { id, payload } => {
                self.serials += 1;
                self.running.insert(id.clone(), self.serials);
                Step::Start {
                    id,
                    serial: self.serials,
                    request: payload,
                }
            }
            ClientMessage::Complete { id } => match self.running.remove(&id) {
                Some(serial) => Step::Stop { id, serial },
                None => Step::Nothing,
            },
        }
    }

    fn ended(&mut self, id: &str, serial: u64, handed_over: bool) -> Step {
        if self.running.get(id) != Some(&serial) {
            // Stopped (or replaced) by the client before its stream ended: nothing is served.
            return if handed_over {
                Step::Drop(serial)
            } else {
                Step::Nothing
            };
        }
        if handed_over {
            return Step::Serve(id.to_owned());
        }
        self.running.remove(id);
        Step::Complete(id.to_owned())
    }
}

/// The `pong` answering a `ping`: the same payload, if it had one.
fn pong(payload: Option<serde_json::Value>) -> String {
    match payload {
        Some(payload) => serde_json::json!({"type": "pong", "payload": payload}).to_string(),
        None => r#"{"type":"pong"}"#.to_owned(),
    }
}

/// `text` cut to what a close frame carries, at a character boundary.
fn reason(text: &str) -> String {
    if text.len() <= MAX_REASON {
        return text.to_owned();
    }
    let mut end = MAX_REASON;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

/// The `next` message carrying `payload` (a serialised response) for operation `id`.
pub fn next_message(id: &str, payload: &str) -> String {
    format!(
        r#"{{"type":"next","id":{},"payload":{payload}}}"#,
        quoted(id)
    )
}

/// The `error` message carrying `errors` (a serialised list of GraphQL errors) for operation `id`.
pub fn error_message(id: &str, errors: &str) -> String {
    format!(
        r#"{{"type":"error","id":{},"payload":{errors}}}"#,
        quoted(id)
    )
}

/// The `complete` message for operation `id`.
pub fn complete_message(id: &str) -> String {
    format!(r#"{{"type":"complete","id":{}}}"#, quoted(id))
}

/// `text` as a JSON string.
pub fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subscribe(id: &str) -> String {
        format!(
            r#"{{"type":"subscribe","id":"{id}","payload":{{"query":"subscription {{ awaitingMe {{ change }} }}"}}}}"#
        )
    }

    fn complete(id: &str) -> String {
        format!(r#"{{"type":"complete","id":"{id}"}}"#)
    }

    const INIT: &str = r#"{"type":"connection_init","payload":{"token":"t"}}"#;

    /// A connection whose `connection_init` was acknowledged.
    fn ready(max_running: usize) -> Protocol {
        let mut protocol = Protocol::new(max_running, 4);
        assert!(matches!(protocol.step(Input::Frame(INIT)), Step::Init(_)));
        assert!(matches!(protocol.step(Input::InitAccepted), Step::Send(_)));
        protocol
    }

    fn started(step: Step) -> (String, u64) {
        match step {
            Step::Start { id, serial, .. } => (id, serial),
            other => panic!("not a start: {other:?}"),
        }
    }

    fn closed(step: Step) -> (u16, String) {
        match step {
            Step::Close(code, reason) => (code, reason),
            other => panic!("not a close: {other:?}"),
        }
    }

    #[test]
    fn connection_init_is_decided_then_acknowledged() {
        let mut protocol = Protocol::new(4, 4);
        let Step::Init(payload) = protocol.step(Input::Frame(INIT)) else {
            panic!("the payload is to be decided");
        };
        assert_eq!(payload["token"], "t");
        assert!(!protocol.is_ready());
        let Step::Send(ack) = protocol.step(Input::InitAccepted) else {
            panic!("an acknowledgement");
        };
        assert_eq!(ack, r#"{"type":"connection_ack"}"#);
        assert!(protocol.is_ready());
    }

    #[test]
    fn connection_init_without_a_payload_is_decided_with_null() {
        let mut protocol = Protocol::new(4, 4);
        let step = protocol.step(Input::Frame(r#"{"type":"connection_init"}"#));
        assert!(
            matches!(step, Step::Init(serde_json::Value::Null)),
            "{step:?}"
        );
    }

    #[test]
    fn a_second_connection_init_is_closed_with_4429() {
        let mut protocol = ready(4);
        let (code, reason) = closed(protocol.step(Input::Frame(INIT)));
        assert_eq!(code, 4429);
        assert_eq!(reason, "Too many initialisation requests.");
    }

    #[test]
    fn a_refused_connection_init_is_closed_with_4403_and_says_why() {
        let mut protocol = Protocol::new(4, 4);
        protocol.step(Input::Frame(INIT));
        let (code, reason) = closed(protocol.step(Input::InitRefused(
            InitRefusal::Forbidden,
            "that token is not valid",
        )));
        assert_eq!(code, 4403);
        assert!(
            reason.starts_with("Forbidden: that token is not valid"),
            "{reason}"
        );
    }

    #[test]
    fn a_connection_init_refused_for_capacity_is_closed_with_1013() {
        let mut protocol = Protocol::new(4, 4);
        protocol.step(Input::Frame(INIT));
        let (code, reason) = closed(protocol.step(Input::InitRefused(InitRefusal::AtCapacity, "")));
        assert_eq!((code, reason.as_str()), (1013, AT_CAPACITY));
    }

    #[test]
    fn no_connection_init_in_time_is_closed_with_4408() {
        let mut protocol = Protocol::new(4, 4);
        assert_eq!(closed(protocol.step(Input::InitTimedOut)).0, 4408);
        let mut deciding = Protocol::new(4, 4);
        deciding.step(Input::Frame(INIT));
        assert_eq!(closed(deciding.step(Input::InitTimedOut)).0, 4408);
        assert!(matches!(ready(4).step(Input::InitTimedOut), Step::Nothing));
    }

    #[test]
    fn frames_heard_while_init_is_decided_are_answered_after_it_in_order() {
        let mut protocol = Protocol::new(4, 4);
        protocol.step(Input::Frame(INIT));
        assert!(matches!(
            protocol.step(Input::Frame(&subscribe("a"))),
            Step::Nothing
        ));
        assert!(matches!(
            protocol.step(Input::Frame(&subscribe("b"))),
            Step::Nothing
        ));
        assert!(protocol.held_frame().is_none(), "not before the decision");
        protocol.step(Input::InitAccepted);
        let first = protocol.held_frame().expect("a held frame");
        assert_eq!(started(protocol.step(Input::Frame(&first))).0, "a");
        let second = protocol.held_frame().expect("another");
        assert_eq!(started(protocol.step(Input::Frame(&second))).0, "b");
        assert!(protocol.held_frame().is_none());
    }

    #[test]
    fn a_flood_while_init_is_decided_is_closed_with_1008() {
        let mut protocol = Protocol::new(4, 2);
        protocol.step(Input::Frame(INIT));
        protocol.step(Input::Frame(r#"{"type":"ping"}"#));
        protocol.step(Input::Frame(r#"{"type":"ping"}"#));
        assert_eq!(
            closed(protocol.step(Input::Frame(r#"{"type":"ping"}"#))).0,
            1008
        );
    }

    #[test]
    fn a_ping_is_answered_with_a_pong_carrying_its_payload() {
        let mut protocol = Protocol::new(4, 4);
        let Step::Send(pong) = protocol.step(Input::Frame(r#"{"type":"ping","payload":{"n":1}}"#))
        else {
            panic!("a pong");
        };
        let pong: serde_json::Value = serde_json::from_str(&pong).expect("JSON");
        assert_eq!(
            pong,
            serde_json::json!({"type": "pong", "payload": {"n": 1}})
        );
        let Step::Send(bare) = ready(4).step(Input::Frame(r#"{"type":"ping"}"#)) else {
            panic!("a pong");
        };
        assert_eq!(bare, r#"{"type":"pong"}"#);
    }

    #[test]
    fn a_pong_asks_nothing() {
        let step = ready(4).step(Input::Frame(r#"{"type":"pong","payload":{"n":1}}"#));
        assert!(matches!(step, Step::Nothing), "{step:?}");
    }

    #[test]
    fn a_subscribe_starts_its_operation_with_the_request_and_a_serial() {
        let mut protocol = ready(4);
        let Step::Start {
            id,
            serial,
            request,
        } = protocol.step(Input::Frame(&subscribe("q")))
        else {
            panic!("a start");
        };
        assert_eq!((id.as_str(), serial), ("q", 1));
        assert_eq!(request.query, "subscription { awaitingMe { change } }");
        assert_eq!(protocol.running(), 1);
    }

    #[test]
    fn a_subscribe_before_the_acknowledgement_is_closed_with_4401() {
        let mut protocol = Protocol::new(4, 4);
        assert_eq!(closed(protocol.step(Input::Frame(&subscribe("q")))).0, 4401);
    }

    #[test]
    fn a_subscribe_under_a_running_id_is_closed_with_4409() {
        let mut protocol = ready(4);
        protocol.step(Input::Frame(&subscribe("q")));
        let (code, reason) = closed(protocol.step(Input::Frame(&subscribe("q"))));
        assert_eq!(
            (code, reason.as_str()),
            (4409, "Subscriber for q already exists")
        );
    }

    #[test]
    fn a_subscribe_past_the_cap_is_closed_with_4429() {
        let mut protocol = ready(2);
        protocol.step(Input::Frame(&subscribe("a")));
        protocol.step(Input::Frame(&subscribe("b")));
        let (code, reason) = closed(protocol.step(Input::Frame(&subscribe("c"))));
        assert_eq!(code, 4429);
        assert!(reason.contains("at most 2 operations"), "{reason}");
    }

    #[test]
    fn a_complete_stops_its_operation_and_frees_its_place() {
        let mut protocol = ready(1);
        protocol.step(Input::Frame(&subscribe("q")));
        let Step::Stop { id, serial } = protocol.step(Input::Frame(&complete("q"))) else {
            panic!("a stop");
        };
        assert_eq!((id.as_str(), serial), ("q", 1));
        assert_eq!(protocol.running(), 0);
        assert_eq!(
            started(protocol.step(Input::Frame(&subscribe("q")))),
            ("q".into(), 2)
        );
    }

    #[test]
    fn a_complete_for_an_id_not_running_asks_nothing() {
        let step = ready(4).step(Input::Frame(&complete("nobody")));
        assert!(matches!(step, Step::Nothing), "{step:?}");
    }

    #[test]
    fn malformed_json_is_closed_with_4400() {
        let (code, reason) = closed(ready(4).step(Input::Frame("not json")));
        assert_eq!(code, 4400);
        assert!(reason.starts_with("Invalid message received"), "{reason}");
    }

    #[test]
    fn an_unknown_message_type_is_closed_with_4400() {
        let (code, _) = closed(ready(4).step(Input::Frame(r#"{"type":"start","id":"q"}"#)));
        assert_eq!(code, 4400);
        let (code, _) = closed(ready(4).step(Input::Frame(r#"{"id":"q"}"#)));
        assert_eq!(code, 4400, "no type at all");
    }

    #[test]
    fn a_subscribe_or_complete_without_an_id_is_closed_with_4400() {
        let without = r#"{"type":"subscribe","payload":{"query":"{ viewer { id } }"}}"#;
        assert_eq!(closed(ready(4).step(Input::Frame(without))).0, 4400);
        assert_eq!(
            closed(ready(4).step(Input::Frame(r#"{"type":"complete"}"#))).0,
            4400
        );
        let numeric = r#"{"type":"complete","id":1}"#;
        assert_eq!(closed(ready(4).step(Input::Frame(numeric))).0, 4400);
    }

    #[test]
    fn a_close_reason_fits_a_close_frame() {
        let long_id = "é".repeat(200);
        let mut protocol = ready(4);
        protocol.step(Input::Frame(&subscribe(&long_id)));
        let (code, reason) = closed(protocol.step(Input::Frame(&subscribe(&long_id))));
        assert_eq!(code, 4409);
        assert!(reason.len() <= MAX_REASON);
    }

    #[test]
    fn an_operation_whose_stream_ends_is_completed_and_no_longer_counted() {
        let mut protocol = ready(1);
        let (id, serial) = started(protocol.step(Input::Frame(&subscribe("q"))));
        let step = protocol.step(Input::Ended {
            id: &id,
            serial,
            handed_over: false,
        });
        assert!(
            matches!(step, Step::Complete(ref done) if done == "q"),
            "{step:?}"
        );
        assert_eq!(protocol.running(), 0);
    }

    #[test]
    fn an_operation_that_fails_as_a_whole_is_an_error_and_no_longer_counted() {
        let mut protocol = ready(1);
        let (id, serial) = started(protocol.step(Input::Frame(&subscribe("q"))));
        let errors =
            r#"[{"message":"Unknown field","extensions":{"code":"GRAPHQL_VALIDATION_FAILED"}}]"#;
        let step = protocol.step(Input::Failed {
            id: &id,
            serial,
            errors,
        });
        let Step::Send(sent) = step else {
            panic!("an error message: {step:?}");
        };
        let sent: serde_json::Value = serde_json::from_str(&sent).expect("JSON");
        assert_eq!(sent["type"], "error");
        assert_eq!(sent["id"], "q");
        assert_eq!(
            sent["payload"][0]["extensions"]["code"],
            "GRAPHQL_VALIDATION_FAILED"
        );
        assert_eq!(protocol.running(), 0);
        // Its stream's end is no second message, and the id is free again.
        assert!(matches!(
            protocol.step(Input::Ended {
                id: &id,
                serial,
                handed_over: false,
            }),
            Step::Nothing
        ));
        started(protocol.step(Input::Frame(&subscribe("q"))));
    }

    #[test]
    fn a_failure_of_an_operation_the_client_stopped_is_not_sent() {
        let mut protocol = ready(1);
        let (id, serial) = started(protocol.step(Input::Frame(&subscribe("q"))));
        protocol.step(Input::Frame(&complete("q")));
        assert!(matches!(
            protocol.step(Input::Failed {
                id: &id,
                serial,
                errors: "[]",
            }),
            Step::Nothing
        ));
        assert_eq!(protocol.running(), 0);
    }

    #[test]
    fn a_hand_over_of_a_running_subscribe_is_served_and_keeps_counting() {
        let mut protocol = ready(1);
        let (id, serial) = started(protocol.step(Input::Frame(&subscribe("q"))));
        let step = protocol.step(Input::Ended {
            id: &id,
            serial,
            handed_over: true,
        });
        assert!(
            matches!(step, Step::Serve(ref served) if served == "q"),
            "{step:?}"
        );
        assert_eq!(protocol.running(), 1);
        assert_eq!(closed(protocol.step(Input::Frame(&subscribe("r")))).0, 4429);
    }

    /// The race, event by event: the client subscribes, the resolver hands its stream over, the
    /// client completes, and only then does the library's stream for that subscribe end. The
    /// hand-over is dropped, nothing is served, and the cap counts nothing for it.
    #[test]
    fn a_complete_racing_the_hand_over_leaves_nothing_served_and_the_cap_counting() {
        let mut protocol = ready(1);
        let (id, serial) = started(protocol.step(Input::Frame(&subscribe("q"))));
        assert!(matches!(
            protocol.step(Input::Frame(&complete("q"))),
            Step::Stop { serial: 1, .. }
        ));
        let step = protocol.step(Input::Ended {
            id: &id,
            serial,
            handed_over: true,
        });
        assert!(matches!(step, Step::Drop(1)), "{step:?}");
        assert_eq!(protocol.running(), 0);
        assert_eq!(
            started(protocol.step(Input::Frame(&subscribe("r")))),
            ("r".into(), 2)
        );
    }

    /// The same id subscribed again after a complete: the earlier subscribe's hand-over is never
    /// taken for the new one.
    #[test]
    fn a_hand_over_of_an_earlier_subscribe_under_the_same_id_is_dropped() {
        let mut protocol = ready(2);
        let (_, first) = started(protocol.step(Input::Frame(&subscribe("q"))));
        protocol.step(Input::Frame(&complete("q")));
        let (_, second) = started(protocol.step(Input::Frame(&subscribe("q"))));
        let stale = protocol.step(Input::Ended {
            id: "q",
            serial: first,
            handed_over: true,
        });
        assert!(
            matches!(stale, Step::Drop(serial) if serial == first),
            "{stale:?}"
        );
        let current = protocol.step(Input::Ended {
            id: "q",
            serial: second,
            handed_over: true,
        });
        assert!(matches!(current, Step::Serve(_)), "{current:?}");
        assert_eq!(protocol.running(), 1);
    }

    #[test]
    fn the_messages_the_socket_sends_are_the_protocols() {
        assert_eq!(
            next_message("a\"b", r#"{"data":null}"#),
            r#"{"type":"next","id":"a\"b","payload":{"data":null}}"#
        );
        assert_eq!(complete_message("q"), r#"{"type":"complete","id":"q"}"#);
    }
}
