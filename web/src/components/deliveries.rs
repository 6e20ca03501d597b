//! The table of an endpoint's recent deliveries, as the agents page (an agent's endpoint) and the
//! settings page (a person's webhooks) show them: the frame both share — its caption, its
//! scrolling region and its columns — around rows each page makes from its own read.

use leptos::prelude::*;

/// The deliveries `rows` (newest first) under `caption`, which also names the scrolling region;
/// `when` heads the last column. With no rows, says that nothing has been sent yet.
#[component]
pub fn DeliveriesTable(caption: String, when: &'static str, rows: Vec<AnyView>) -> impl IntoView {
    if rows.is_empty() {
        return view! { <p class="empty">"Nothing has been sent to it yet."</p> }.into_any();
    }
    let region = caption.clone();
    view! {
        <div class="table-wrap" tabindex="0" role="region" aria-label=region>
            <table class="deliveries">
                <caption>{caption}</caption>
                <thead><tr>
                    <th scope="col">"Event"</th><th scope="col">"Status"</th><th scope="col" class="num">"Attempts"</th>
                    <th scope="col">"Last response"</th><th scope="col">{when}</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
    }
    .into_any()
}
