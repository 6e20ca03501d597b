//! Revenue: revenue events across niches, newest first.

use leptos::prelude::*;

use crate::api;
use crate::components::loaded::Loaded;
use crate::components::money::money;
use crate::components::time_ago::TimeAgo;
use crate::operations::{AdminRevenue, admin_revenue};

use super::FORBIDDEN;

/// The Revenue section.
#[component]
pub fn RevenueSection() -> impl IntoView {
    let read = LocalResource::new(|| api::run::<AdminRevenue>(admin_revenue::Variables));
    view! {
        <section aria-labelledby="admin-revenue-title">
            <h2 id="admin-revenue-title">"Revenue events"</h2>
            <Loaded forbidden=FORBIDDEN>
                {move || read.get().map(|r| r.map(|r| if r.revenue_events.is_empty() {
                    view! { <p class="empty">"No revenue yet."</p> }.into_any()
                } else {
                    view! { <div class="table-wrap" tabindex="0" role="region" aria-label="Revenue events"><table class="admin-events stack">
                        <thead><tr><th scope="col">"When"</th><th scope="col">"Niche"</th><th scope="col">"Source"</th><th scope="col">"Reference"</th><th scope="col" class="num">"Gross"</th><th scope="col" class="num">"Net"</th></tr></thead>
                        <tbody>{r.revenue_events.into_iter().map(|e| view! {
                            <tr><td data-label="When"><TimeAgo at=e.created_at/></td><td data-label="Niche">{e.niche_slug}</td><td data-label="Source">{e.source_type.replace('_', " ")}</td><td data-label="Reference"><code>{e.external_id}</code></td>
                            <td class="num" data-label="Gross">{money(e.gross_minor, &e.currency)}</td><td class="num" data-label="Net">{money(e.net_minor, &e.currency)}</td></tr>
                        }).collect_view()}</tbody>
                    </table></div> }.into_any()
                }))}
            </Loaded>
        </section>
    }
}
