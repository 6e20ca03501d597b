//! How long a waiting question has left: "2 h left", "12 min left", and under five minutes a
//! live countdown ("4:59 left") that ticks every second, then "expired".

use std::time::Duration;

use leptos::prelude::*;

use crate::components::time_ago::Clock;

/// Below this many seconds left, the count ticks every second.
const LIVE_BELOW: f64 = 300.0;

/// Seconds left from `now_ms` to `end_ms`, in words.
pub fn left_words(end_ms: f64, now_ms: f64) -> String {
    let left = ((end_ms - now_ms) / 1000.0).floor();
    if left <= 0.0 {
        return "expired".to_owned();
    }
    let left = left as i64;
    match left {
        0..=299 => format!("{}:{:02} left", left / 60, left % 60),
        300..=5399 => format!("{} min left", (left + 30) / 60),
        5400..=172_799 => format!("{} h left", (left + 1800) / 3600),
        _ => format!("{} days left", (left + 43_200) / 86_400),
    }
}

/// `<time>` saying how long is left until `at` (RFC 3339), exact on hover; `urgent` marks the
/// last five minutes for styling.
#[component]
pub fn TimeLeft(at: String, #[prop(into)] title: String) -> impl IntoView {
    let end = js_sys::Date::parse(&at);
    let clock = use_context::<Clock>();
    let (tick, set_tick) = signal(js_sys::Date::now());
    // A one-second tick only while the end is near (and the card is shown).
    if let Ok(handle) = set_interval_with_handle(
        move || {
            let now = js_sys::Date::now();
            if (end - now) / 1000.0 < LIVE_BELOW + 20.0 {
                set_tick.set(now);
            }
        },
        Duration::from_secs(1),
    ) {
        on_cleanup(move || handle.clear());
    }
    let now = move || {
        let clock_now = clock.map_or(0.0, |c| c.now());
        tick.get().max(clock_now)
    };
    let urgent = move || (end - now()) / 1000.0 < LIVE_BELOW;
    view! {
        <time class="time-left" class:urgent=urgent datetime=at.clone() title=title>
            {move || left_words(end, now())}
        </time>
    }
}

#[cfg(test)]
mod tests {
    use super::left_words;

    #[test]
    fn the_last_five_minutes_count_down_in_seconds() {
        let end = 1_000_000.0;
        assert_eq!(left_words(end, end - 299_000.0), "4:59 left");
        assert_eq!(left_words(end, end - 30_000.0), "0:30 left");
        assert_eq!(left_words(end, end - 500.0), "expired");
        assert_eq!(left_words(end, end + 1.0), "expired");
        assert_eq!(left_words(end, end - 3_600_000.0), "60 min left");
        assert_eq!(left_words(end, end - 7_200_000.0), "2 h left");
    }
}
