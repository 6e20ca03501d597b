//! Times as people say them ("3 min ago"), with the exact time on hover in the person's own
//! time zone (the one in their settings, UTC if none; [`crate::session::Session::time_zone`]).

use leptos::prelude::*;
use std::time::Duration;

/// The page's clock: milliseconds since the epoch, ticking every 20 seconds so every "ago"
/// stays true without a reload.
#[derive(Clone, Copy)]
pub struct Clock(ReadSignal<f64>);

impl Clock {
    /// The clock's time (ms since the epoch), tracked.
    pub fn now(&self) -> f64 {
        self.0.get()
    }
}

/// Start the clock and provide it to every page.
pub fn provide_clock() {
    let (now, set_now) = signal(js_sys::Date::now());
    set_interval(
        move || set_now.set(js_sys::Date::now()),
        Duration::from_secs(20),
    );
    provide_context(Clock(now));
}

/// How long ago `then_ms` was (or how far ahead it is), seen at `now_ms`, in words.
pub fn ago_words(then_ms: f64, now_ms: f64) -> String {
    let seconds = ((now_ms - then_ms) / 1000.0) as i64;
    let span = |s: i64| match s {
        45..=5399 => format!("{} min", (s + 30) / 60),
        5400..=129_599 => format!("{} h", (s + 1800) / 3600),
        _ => format!("{} days", (s + 43_200) / 86_400),
    };
    match seconds {
        -44..=44 => "just now".to_owned(),
        s if s > 0 => format!("{} ago", span(s)),
        s => format!("in {}", span(-s)),
    }
}

/// The exact time, in UTC, from an RFC 3339 timestamp.
pub fn exact(at: &str) -> String {
    let minutes: String = at.chars().take(16).collect();
    format!("{} UTC", minutes.replace('T', " "))
}

/// The exact time of `at` (RFC 3339) in the IANA time zone `zone`, as "4 Dec 2026, 09:15
/// Europe/Paris"; in UTC ([`exact`]) for "UTC", or if the browser does not know the zone.
pub fn exact_in(at: &str, zone: &str) -> String {
    if zone == "UTC" {
        return exact(at);
    }
    local_time(at, zone).map_or_else(|| exact(at), |local| format!("{local} {zone}"))
}

/// `Date.prototype.toLocaleString` in `zone`, called so that a zone the browser refuses gives
/// `None` rather than an exception.
fn local_time(at: &str, zone: &str) -> Option<String> {
    use js_sys::{Date, Function, Object, Reflect};
    use wasm_bindgen::{JsCast, JsValue};
    let date = Date::new(&JsValue::from_str(at));
    if date.get_time().is_nan() {
        return None;
    }
    let options = Object::new();
    let set = |key: &str, value: &str| {
        Reflect::set(&options, &JsValue::from_str(key), &JsValue::from_str(value)).ok()
    };
    set("timeZone", zone)?;
    set("day", "numeric")?;
    set("month", "short")?;
    set("year", "numeric")?;
    set("hour", "2-digit")?;
    set("minute", "2-digit")?;
    set("hourCycle", "h23")?;
    let format: Function = Reflect::get(&date, &JsValue::from_str("toLocaleString"))
        .ok()?
        .dyn_into()
        .ok()?;
    format
        .call2(&date, &JsValue::from_str("en-GB"), &options)
        .ok()?
        .as_string()
}

/// `<time>` showing how long ago `at` (RFC 3339) was, the exact time in the person's time zone
/// in its title.
#[component]
pub fn TimeAgo(at: String) -> impl IntoView {
    let clock = use_context::<Clock>();
    let session = use_context::<crate::session::Session>();
    let then = js_sys::Date::parse(&at);
    let words = move || {
        let now = clock.map_or_else(js_sys::Date::now, |c| c.0.get());
        ago_words(then, now)
    };
    let title = {
        let at = at.clone();
        move || {
            let zone = session.map_or_else(|| "UTC".to_owned(), |s| s.time_zone());
            exact_in(&at, &zone)
        }
    };
    view! { <time datetime=at.clone() title=title>{words}</time> }
}
