//! Money as people read it, and the two pictures of it the ledger pages draw (plain SVG made by
//! the app; nothing is fetched from a chart service).

use leptos::prelude::*;

/// `1234` minor units of `USD` as "12.34 USD".
pub fn money(minor: i64, currency: &str) -> String {
    let sign = if minor < 0 { "-" } else { "" };
    let abs = minor.unsigned_abs();
    format!("{sign}{}.{:02} {currency}", abs / 100, abs % 100)
}

/// An amount typed as people write it ("1.50", "2", "0.5", "1,50") in minor units (150, 200,
/// 50, 150); `None` for anything else: a sign, more than two decimals, letters, or more than an
/// i64 holds. Read as text, so no float ever rounds a cost.
pub fn parse_money(text: &str) -> Option<i64> {
    let text = text.trim();
    let (whole, fraction) = match text.split_once(['.', ',']) {
        Some((whole, fraction)) => (whole, fraction),
        None => (text, ""),
    };
    let digits = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
    if (whole.is_empty() && fraction.is_empty())
        || !digits(whole)
        || !digits(fraction)
        || fraction.len() > 2
    {
        return None;
    }
    let whole: i64 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let cents: i64 = match fraction.len() {
        0 => 0,
        1 => fraction.parse::<i64>().ok()? * 10,
        _ => fraction.parse().ok()?,
    };
    whole.checked_mul(100)?.checked_add(cents)
}

/// A share in basis points as people read it: `2000` as "20%", `250` as "2.5%", `1` as "0.01%"
/// (whole numbers, so no float formatting is compiled in for it).
pub fn percent(bps: i64) -> String {
    let sign = if bps < 0 { "-" } else { "" };
    let abs = bps.unsigned_abs();
    let (whole, hundredths) = (abs / 100, abs % 100);
    match hundredths {
        0 => format!("{sign}{whole}%"),
        h if h % 10 == 0 => format!("{sign}{whole}.{}%", h / 10),
        h => format!("{sign}{whole}.{h:02}%"),
    }
}

/// A share in basis points of what it is a share of: `2000` of "each revenue event" as "20%
/// of each revenue event".
pub fn share_of(bps: i64, of: &str) -> String {
    format!("{} of {of}", percent(bps))
}

/// A day as the chart's axis and points name it ("3 Dec"), in the IANA time zone `zone`.
pub fn day_label(ms: f64, zone: &str) -> String {
    use js_sys::{Date, Function, Object, Reflect};
    use wasm_bindgen::{JsCast, JsValue};
    let date = Date::new(&JsValue::from_f64(ms));
    let options = Object::new();
    let set = |key: &str, value: &str| {
        Reflect::set(&options, &JsValue::from_str(key), &JsValue::from_str(value)).is_ok()
    };
    let formatted = (set("timeZone", zone) && set("day", "numeric") && set("month", "short"))
        .then(|| Reflect::get(&date, &JsValue::from_str("toLocaleDateString")).ok())
        .flatten()
        .and_then(|f| f.dyn_into::<Function>().ok())
        .and_then(|f| f.call2(&date, &JsValue::from_str("en-GB"), &options).ok())
        .and_then(|v| v.as_string());
    formatted.unwrap_or_else(|| {
        const MONTHS: [&str; 12] = [
            "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
        ];
        let month = MONTHS.get(date.get_utc_month() as usize).unwrap_or(&"");
        format!("{} {month}", date.get_utc_date())
    })
}

/// Earnings over time: the running total of `points` (time in ms, amount) as a step line, with
/// dated axes. Each day's total is a point that takes the keyboard focus and says its value
/// ("3 Dec: 12.50 USD"), also on hover; the same values are in a table under "Show the values".
#[component]
pub fn EarningsChart(
    points: Vec<(f64, i64)>,
    currency: String,
    #[prop(optional)] zone: Option<String>,
    /// What the line is a running total of ("Earnings", "Revenue").
    #[prop(default = "Earnings")]
    what: &'static str,
) -> impl IntoView {
    const W: f64 = 520.0;
    const H: f64 = 220.0;
    const LEFT: f64 = 112.0;
    const RIGHT: f64 = 24.0;
    const TOP: f64 = 16.0;
    const BOTTOM: f64 = 40.0;
    if points.is_empty() {
        return view! { <p class="empty">{format!("No {} yet: answers and revenue events show here.", what.to_lowercase())}</p> }.into_any();
    }
    let zone = zone.unwrap_or_else(|| "UTC".to_owned());
    let mut sorted = points;
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    // One point per day: the running total at the end of that day.
    let mut days: Vec<(f64, String, i64)> = Vec::new();
    let mut total = 0_i64;
    for (t, amount) in &sorted {
        total += amount;
        let label = day_label(*t, &zone);
        match days.last_mut() {
            Some(last) if last.1 == label => {
                last.0 = *t;
                last.2 = total;
            }
            _ => days.push((*t, label, total)),
        }
    }
    let (first, last) = (days[0].0, days[days.len() - 1].0);
    let span = last - first;
    let top_value = days.iter().map(|d| d.2).max().unwrap_or(0).max(1);
    let bottom_value = days.iter().map(|d| d.2).min().unwrap_or(0).min(0);
    let range = (top_value - bottom_value).max(1) as f64;
    let plot_w = W - LEFT - RIGHT;
    let plot_h = H - TOP - BOTTOM;
    let x_of = move |t: f64| {
        if span <= 0.0 {
            LEFT + plot_w / 2.0
        } else {
            LEFT + (t - first) / span * plot_w
        }
    };
    let y_of = move |v: i64| TOP + plot_h - ((v - bottom_value) as f64) / range * plot_h;
    // A step line: the total holds until the next day lifts it.
    let mut path = format!("M {LEFT:.1} {:.1}", y_of(0));
    for (t, _, sum) in &days {
        path.push_str(&format!(" H {:.1} V {:.1}", x_of(*t), y_of(*sum)));
    }
    path.push_str(&format!(" H {:.1}", W - RIGHT));
    let summary = format!(
        "{what} over time, {} to {}: {} in total",
        days[0].1,
        days[days.len() - 1].1,
        money(total, &currency)
    );
    // Axis labels: the first and last day (and the middle one when there are three or more),
    // zero and the highest total.
    let mut ticks: Vec<usize> = vec![0];
    if days.len() > 2 {
        ticks.push(days.len() / 2);
    }
    if days.len() > 1 {
        ticks.push(days.len() - 1);
    }
    let x_labels = ticks
        .into_iter()
        .map(|i| {
            let (t, label, _) = &days[i];
            let anchor = if days.len() == 1 {
                "middle"
            } else if i == 0 {
                "start"
            } else if i == days.len() - 1 {
                "end"
            } else {
                "middle"
            };
            view! {
                <text x=format!("{:.1}", x_of(*t)) y=format!("{:.1}", H - BOTTOM + 22.0) text-anchor=anchor class="chart-label" data-axis="x">{label.clone()}</text>
            }
        })
        .collect_view();
    let mut y_values = vec![top_value, (top_value + bottom_value) / 2];
    if bottom_value != top_value {
        y_values.push(bottom_value);
    }
    y_values.dedup();
    if !y_values.contains(&0) {
        y_values.push(0);
    }
    let y_labels = y_values
        .into_iter()
        .map(|v| {
            view! {
                <text x=format!("{:.1}", LEFT - 8.0) y=format!("{:.1}", y_of(v) + 5.0) text-anchor="end" class="chart-label" data-axis="y">{money(v, &currency)}</text>
                <line x1=LEFT y1=format!("{:.1}", y_of(v)) x2=W - RIGHT y2=format!("{:.1}", y_of(v)) class="gridline"/>
            }
        })
        .collect_view();
    let shown = RwSignal::new(None::<String>);
    let dots = days
        .iter()
        .map(|(t, label, sum)| {
            let said = format!("{label}: {}", money(*sum, &currency));
            let (on_focus, on_hover, name) = (said.clone(), said.clone(), said.clone());
            view! {
                <circle cx=format!("{:.1}", x_of(*t)) cy=format!("{:.1}", y_of(*sum)) r="6"
                    class="chart-point" tabindex="0" role="img" aria-label=name
                    on:focus=move |_| shown.set(Some(on_focus.clone()))
                    on:mouseenter=move |_| shown.set(Some(on_hover.clone()))
                    on:blur=move |_| shown.set(None)
                    on:mouseleave=move |_| shown.set(None)>
                    <title>{said}</title>
                </circle>
            }
        })
        .collect_view();
    let rows = days
        .iter()
        .map(|(_, label, sum)| {
            view! { <tr><th scope="row">{label.clone()}</th><td class="num">{money(*sum, &currency)}</td></tr> }
        })
        .collect_view();
    view! {
        <figure class="chart earnings-chart">
            <svg viewBox=format!("0 0 {W} {H}") role="group" aria-label=summary.clone() class="earnings-svg">
                {y_labels}
                <line x1=LEFT y1=H - BOTTOM x2=W - RIGHT y2=H - BOTTOM class="axis"/>
                <line x1=LEFT y1=TOP x2=LEFT y2=H - BOTTOM class="axis"/>
                {x_labels}
                <path d=path class="earnings"/>
                {dots}
            </svg>
            <figcaption>
                <p class="chart-readout" aria-hidden="true">{move || shown.get().unwrap_or_else(|| "Point at or tab to a day to read its total.".to_owned())}</p>
                <p class="muted">{summary}</p>
                <details class="chart-values">
                    <summary>"Show the values"</summary>
                    <table>
                        <caption class="visually-hidden">{format!("{what}, running total by day")}</caption>
                        <thead><tr><th scope="col">"Day"</th><th scope="col" class="num">"Total so far"</th></tr></thead>
                        <tbody>{rows}</tbody>
                    </table>
                </details>
            </figcaption>
        </figure>
    }
    .into_any()
}

/// This month's budget as a bar: spent, reserved and what is left of the limit.
#[component]
pub fn BudgetBar(limit: Option<i64>, spent: i64, reserved: i64) -> impl IntoView {
    let Some(limit) = limit.filter(|l| *l > 0) else {
        return view! { <p class="muted">"No monthly limit."</p> }.into_any();
    };
    let part = |amount: i64| (amount.max(0) as f64 / limit as f64 * 100.0).min(100.0);
    let spent_w = part(spent);
    let reserved_w = part(reserved).min(100.0 - spent_w);
    let label = format!(
        "Budget used this month: {:.0}% spent, {:.0}% reserved",
        spent_w, reserved_w
    );
    view! {
        <figure class="chart">
            <svg viewBox="0 0 100 8" role="img" aria-label=label.clone() preserveAspectRatio="none" class="budget-bar">
                <rect x="0" y="0" width="100" height="8" class="budget-left"/>
                <rect x="0" y="0" width=format!("{spent_w:.2}") height="8" class="budget-spent"/>
                <rect x=format!("{spent_w:.2}") y="0" width=format!("{reserved_w:.2}") height="8" class="budget-reserved"/>
            </svg>
            <figcaption class="muted">{label}</figcaption>
        </figure>
    }
    .into_any()
}

/// This month's spending split between question bounties and tasks' actual costs, as one bar.
#[component]
pub fn SpendSplit(questions: i64, tasks: i64, currency: &'static str) -> impl IntoView {
    let total = questions.max(0) + tasks.max(0);
    if total == 0 {
        return view! { <p class="muted">"Nothing spent this month."</p> }.into_any();
    }
    let questions_w = questions.max(0) as f64 / total as f64 * 100.0;
    let label = format!(
        "Spent this month: {} on question bounties, {} on tasks",
        money(questions, currency),
        money(tasks, currency)
    );
    view! {
        <figure class="chart">
            <svg viewBox="0 0 100 8" role="img" aria-label=label.clone() preserveAspectRatio="none" class="budget-bar spend-split">
                <rect x="0" y="0" width=format!("{questions_w:.2}") height="8" class="spend-questions"/>
                <rect x=format!("{questions_w:.2}") y="0" width=format!("{:.2}", 100.0 - questions_w) height="8" class="spend-tasks"/>
            </svg>
            <figcaption class="muted">{label}</figcaption>
        </figure>
    }
    .into_any()
}

/// One exchange's limit as a bar: what it actually cost, what was released and what is still
/// reserved.
#[component]
pub fn ExchangeBar(limit: i64, actual: i64, released: i64, outstanding: i64) -> impl IntoView {
    let whole = limit.max(actual + released + outstanding).max(1) as f64;
    let part = |amount: i64| amount.max(0) as f64 / whole * 100.0;
    let (actual_w, released_w, outstanding_w) = (part(actual), part(released), part(outstanding));
    let label = format!(
        "{} of {} cost, {} released, {} still reserved",
        money(actual, "USD"),
        money(limit, "USD"),
        money(released, "USD"),
        money(outstanding, "USD")
    );
    view! {
        <svg viewBox="0 0 100 8" role="img" aria-label=label preserveAspectRatio="none" class="exchange-bar">
            <rect x="0" y="0" width="100" height="8" class="budget-left"/>
            <rect x="0" y="0" width=format!("{actual_w:.2}") height="8" class="exchange-actual"/>
            <rect x=format!("{actual_w:.2}") y="0" width=format!("{released_w:.2}") height="8" class="exchange-released"/>
            <rect x=format!("{:.2}", actual_w + released_w) y="0" width=format!("{outstanding_w:.2}") height="8" class="budget-reserved"/>
        </svg>
    }
}

#[cfg(test)]
mod tests {
    use super::{money, parse_money};

    #[test]
    fn typed_amounts_read_as_minor_units_exactly() {
        for (typed, minor) in [
            ("1.50", 150),
            ("2", 200),
            ("0.5", 50),
            ("1,05", 105),
            (" 3.00 ", 300),
            (".75", 75),
            ("0", 0),
        ] {
            assert_eq!(parse_money(typed), Some(minor), "{typed}");
        }
        for refused in [
            "",
            ".",
            "-1",
            "1.234",
            "1e2",
            "abc",
            "1.5.0",
            "99999999999999999999",
        ] {
            assert_eq!(parse_money(refused), None, "{refused}");
        }
        assert_eq!(
            money(parse_money("12.34").unwrap_or_default(), "USD"),
            "12.34 USD"
        );
    }
}
