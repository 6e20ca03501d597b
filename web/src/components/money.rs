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

/// Earnings over time: the running total of `points` (time in ms, amount), as a line.
#[component]
pub fn EarningsChart(points: Vec<(f64, i64)>, currency: String) -> impl IntoView {
    const W: f64 = 600.0;
    const H: f64 = 160.0;
    const PAD: f64 = 24.0;
    if points.is_empty() {
        return view! { <p class="empty">"No earnings yet: answers and revenue events show here."</p> }.into_any();
    }
    let mut sorted = points;
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut total = 0_i64;
    let running: Vec<(f64, i64)> = sorted
        .iter()
        .map(|(t, amount)| {
            total += amount;
            (*t, total)
        })
        .collect();
    let (first, last) = (running[0].0, running[running.len() - 1].0);
    let span = (last - first).max(1.0);
    let top = total.max(1) as f64;
    // A step line: the total holds until the next allocation lifts it.
    let mut path = format!("M {PAD} {}", H - PAD);
    for (t, sum) in &running {
        let x = PAD + (t - first) / span * (W - 2.0 * PAD);
        let y = H - PAD - (*sum as f64) / top * (H - 2.0 * PAD);
        path.push_str(&format!(" H {x:.1} V {y:.1}"));
    }
    path.push_str(&format!(" H {}", W - PAD));
    let label = format!("Earnings over time, {} in total", money(total, &currency));
    view! {
        <figure class="chart">
            <svg viewBox=format!("0 0 {W} {H}") role="img" aria-label=label.clone() preserveAspectRatio="none">
                <line x1=PAD y1=H - PAD x2=W - PAD y2=H - PAD class="axis"/>
                <line x1=PAD y1=PAD x2=PAD y2=H - PAD class="axis"/>
                <path d=path class="earnings"/>
            </svg>
            <figcaption class="muted">{label}</figcaption>
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
