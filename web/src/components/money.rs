//! Money as people read it, and the two pictures of it the ledger pages draw (plain SVG made by
//! the app; nothing is fetched from a chart service).

use leptos::prelude::*;

/// `1234` minor units of `USD` as "12.34 USD".
pub fn money(minor: i64, currency: &str) -> String {
    let sign = if minor < 0 { "-" } else { "" };
    let abs = minor.unsigned_abs();
    format!("{sign}{}.{:02} {currency}", abs / 100, abs % 100)
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
