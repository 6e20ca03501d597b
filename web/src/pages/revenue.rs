//! The ledger pages: `/dashboard/revenue` (my balance, earnings over time, allocations, payouts
//! and where I am paid) and `/dashboard/niches/:slug/revenue` (a niche's revenue and its agent
//! budget this month, with what each question and task cost). Both are lazily loaded routes:
//! their code is fetched the first time someone opens one, so the queue never downloads it.

use leptos::prelude::*;
use leptos_router::components::A;

use crate::api;
use crate::components::loaded::Loaded;
use crate::components::money::{
    BudgetBar, EarningsChart, ExchangeBar, SpendSplit, money, share_of,
};
use crate::components::notice::LimitNote;
use crate::components::question_card::visible_controls;
use crate::components::time_ago::TimeAgo;
use crate::components::title::page_title;
use crate::operations::{
    MyRevenue, NicheMoney, SetPayoutAddress, my_revenue, niche_money, set_payout_address,
};
use crate::pages::queue::niche_slug;
use crate::session::Session;
use crate::vocab::{AllocationStatus, BudgetEntryKind, PayoutStatus};

/// The longest payout address the server keeps.
const ADDRESS_MAX: usize = 200;

type Allocation = my_revenue::AllocationRow;
type Event = niche_money::EventRow;

/// The question page of question `id` in the niche `slug`.
fn question_path(slug: &str, id: &str) -> String {
    format!("/dashboard/niches/{slug}/questions/{id}")
}

/// What an allocation or event came from, as a link: its question's page, or (for an event
/// with no question, e.g. a subscription) the event on its niche's revenue page.
#[component]
fn SourceLink(slug: String, question_id: Option<String>, event_id: String) -> impl IntoView {
    match question_id {
        Some(id) => {
            let href = question_path(&slug, &id);
            view! { <A href=href>"Question #"{id}</A> }.into_any()
        }
        None => {
            let href = format!("/dashboard/niches/{slug}/revenue#event-{event_id}");
            view! { <A href=href>"Event #"{event_id}</A> }.into_any()
        }
    }
}

fn time_ms(at: &str) -> f64 {
    js_sys::Date::parse(at)
}

lazy_page! {
    /// `/dashboard/revenue` and `/dashboard/payouts`, loaded when first opened.
    MyRevenueRoute => MyRevenuePage
}

lazy_page! {
    /// `/dashboard/niches/:slug/revenue`, loaded when first opened.
    NicheMoneyRoute => NicheMoneyRouteView
}

/// My revenue.
#[component]
fn MyRevenuePage() -> impl IntoView {
    page_title(|| "Your revenue".to_owned());
    let session = Session::get();
    let revenue = LocalResource::new(|| api::run::<MyRevenue>(my_revenue::Variables));
    view! {
        <main>
            <h1>"Your revenue"</h1>
            <Loaded>
                {move || revenue.get().map(|result| result.map(|data| {
                    let mine = data.my_revenue;
                    let currency = mine.allocations.first().map_or_else(|| "USD".to_owned(), |a| a.currency.clone());
                    let points: Vec<(f64, i64)> = mine.allocations.iter().filter(|a| a.currency == currency).map(|a| (time_ms(&a.created_at), a.amount_minor)).collect();
                    view! {
                        {if mine.balances.is_empty() {
                            view! { <p class="empty">"Nothing owed or paid yet."</p> }.into_any()
                        } else {
                            mine.balances.into_iter().map(|b| view! {
                                <section class="balances" aria-label=format!("Balance in {}", b.currency) data-currency=b.currency.clone()>
                                    <div class="card balance"><span class="muted">"Owed"</span><strong data-balance="owed">{money(b.owed_minor, &b.currency)}</strong></div>
                                    <div class="card balance"><span class="muted">"Held for review"</span><strong data-balance="held">{money(b.held_minor, &b.currency)}</strong></div>
                                    <div class="card balance"><span class="muted">"In flight"</span><strong data-balance="in-flight">{money(b.in_flight_minor, &b.currency)}</strong></div>
                                    <div class="card balance"><span class="muted">"Paid"</span><strong data-balance="paid">{money(b.paid_minor, &b.currency)}</strong></div>
                                    <div class="card balance"><span class="muted">"Reversed"</span><strong data-balance="reversed">{money(b.reversed_minor, &b.currency)}</strong></div>
                                </section>
                            }).collect_view().into_any()
                        }}
                        <section aria-labelledby="earnings-title">
                            <h2 id="earnings-title">"Earnings over time"</h2>
                            <EarningsChart points=points currency=currency zone=session.time_zone()/>
                        </section>
                        <Payouts payouts=mine.payouts allocations=mine.allocations.clone()/>
                        <Allocations allocations=mine.allocations title="Your allocations"/>
                        <PayoutAddress account=mine.payout_account/>
                    }
                }))}
            </Loaded>
        </main>
    }
}

#[component]
fn Allocations(allocations: Vec<Allocation>, title: &'static str) -> impl IntoView {
    view! {
        <section class="allocations" aria-label=title>
            <h2>{title}</h2>
            {if allocations.is_empty() {
                view! { <p class="empty">"None yet."</p> }.into_any()
            } else {
                view! {
                    <div class="table-wrap" tabindex="0" role="region" aria-label=title><table class="stack allocations-table">
                        <thead><tr><th scope="col">"When"</th><th scope="col">"Niche"</th><th scope="col">"From"</th><th scope="col">"For"</th><th scope="col" class="num">"Share of the event's net"</th><th scope="col" class="num">"Amount"</th><th scope="col">"Status"</th></tr></thead>
                        <tbody>
                            {allocations.into_iter().map(|a| {
                                let status = AllocationStatus::of(&a.status);
                                let anchor = format!("allocation-{}", a.id);
                                view! {
                                    <tr data-allocation-id=a.id id=anchor>
                                        <td data-label="When"><TimeAgo at=a.created_at/></td>
                                        <td data-label="Niche">{a.niche_slug.clone()}</td>
                                        <td data-label="From">{a.source_type.replace('_', " ")}</td>
                                        <td data-label="For"><SourceLink slug=a.niche_slug question_id=a.question_id event_id=a.revenue_event_id/></td>
                                        <td class="num" data-label="Share of the event's net">{crate::components::money::percent(a.share_bps)}</td>
                                        <td class="num" data-label="Amount">{money(a.amount_minor, &a.currency)}</td>
                                        <td data-label="Status"><span class=format!("badge status-{status}")>{status.to_string()}</span></td>
                                    </tr>
                                }
                            }).collect_view()}
                        </tbody>
                    </table></div>
                }.into_any()
            }}
        </section>
    }
}

#[component]
fn Payouts(
    payouts: Vec<my_revenue::MyRevenueMyRevenuePayouts>,
    allocations: Vec<Allocation>,
) -> impl IntoView {
    view! {
        <section aria-labelledby="payouts-title">
            <h2 id="payouts-title">"Payouts"</h2>
            {if payouts.is_empty() {
                view! { <p class="empty">"No payouts yet."</p> }.into_any()
            } else {
                view! {
                    <ul class="payouts">
                        {payouts.into_iter().map(|p| {
                            let status = PayoutStatus::of(&p.status);
                            let parts: Vec<Allocation> = allocations.iter().filter(|a| a.payout_id.as_deref() == Some(p.id.as_str())).cloned().collect();
                            view! {
                                <li data-payout-id=p.id.clone()>
                                    <span class=format!("badge status-{status}")>{status.to_string()}</span>
                                    " "{money(p.amount_minor, &p.currency)}" · "<TimeAgo at=p.created_at/>
                                    {p.external_reference.map(|r| view! { " · ref "<code>{r}</code> })}
                                    {p.failure_reason.map(|r| view! { " · "<span class="error"><bdi>{r}</bdi></span> })}
                                    {(!parts.is_empty()).then(|| view! {
                                        " · pays for "
                                        {parts.into_iter().enumerate().map(|(i, a)| {
                                            let sep = if i == 0 { "" } else { ", " };
                                            view! { {sep}<SourceLink slug=a.niche_slug question_id=a.question_id event_id=a.revenue_event_id/> }
                                        }).collect_view()}
                                    })}
                                </li>
                            }
                        }).collect_view()}
                    </ul>
                }.into_any()
            }}
        </section>
    }
}

/// Where I am paid: saving a new address sends it back for verification.
#[component]
fn PayoutAddress(account: Option<my_revenue::MyRevenueMyRevenuePayoutAccount>) -> impl IntoView {
    let verified = account.as_ref().is_some_and(|a| a.verified);
    let (address, set_address) = signal(account.map(|a| a.address).unwrap_or_default());
    let save = Action::new_local(|address: &String| {
        api::send::<SetPayoutAddress>(set_payout_address::Variables {
            address: address.clone(),
        })
    });
    let busy = save.pending();
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        save.dispatch(address.get_untracked());
    };
    let refused = move || save.value().with(|v| matches!(v, Some(Err(_))));
    let described = move || {
        if refused() {
            "payout-address-limit payout-address-error"
        } else {
            "payout-address-limit"
        }
    };
    view! {
        <section aria-labelledby="address-title">
            <h2 id="address-title">"Where you are paid"</h2>
            <p class="muted">{if verified { "Verified by an admin." } else { "Not verified yet: payouts wait until it is." }}</p>
            <form class="inline" on:submit=submit>
                <label for="payout-address">"Payout address"</label>
                <input id="payout-address" type="text" maxlength=ADDRESS_MAX.to_string() required autocomplete="off"
                    aria-invalid=move || refused().to_string() aria-describedby=described
                    prop:value=address on:input=move |ev| set_address.set(event_target_value(&ev))/>
                <button type="submit" disabled=busy>{move || if busy.get() { "Saving…" } else { "Save" }}</button>
                <LimitNote id="payout-address-limit".to_owned() value=address max=ADDRESS_MAX/>
                {move || save.value().get().map(|result| match result {
                    Ok(_) => view! { <p class="notice" role="status">"Saved. An admin verifies it before the next payout."</p> }.into_any(),
                    Err(err) => view! { <p class="error field-error" role="alert" id="payout-address-error">{err.to_string()}</p> }.into_any(),
                })}
            </form>
        </section>
    }
}

/// The niche revenue route: a fresh page for each niche.
#[component]
fn NicheMoneyRouteView() -> impl IntoView {
    let slug = niche_slug();
    move || view! { <NicheMoneyPage slug=slug.get()/> }
}

/// A niche's revenue and budget.
#[component]
fn NicheMoneyPage(slug: String) -> impl IntoView {
    let back = format!("/dashboard/niches/{slug}/questions");
    let read_slug = slug.clone();
    let named = RwSignal::new(slug.clone());
    let session = Session::get();
    page_title(move || format!("Revenue and budget · {}", named.get()));
    let data = LocalResource::new(move || {
        api::run::<NicheMoney>(niche_money::Variables {
            slug: read_slug.clone(),
        })
    });
    view! {
        <main>
            <p><A href="/dashboard/niches">"← Your niches"</A>" · "<A href=back>"The queue"</A></p>
            <Loaded>
                {let slug = slug.clone(); move || data.get().map(|result| result.map(|d| {
                    let name = d.niche.map_or_else(|| slug.clone(), |n| n.name);
                    named.set(name.clone());
                    view! {
                        <h1><bdi>{name}</bdi>" — revenue and budget"</h1>
                        <NicheRevenueView slug=slug.clone() revenue=d.niche_revenue zone=session.time_zone()/>
                        <BudgetView slug=slug.clone() budget=d.budget/>
                    }
                }))}
            </Loaded>
        </main>
    }
}

#[component]
fn NicheRevenueView(
    slug: String,
    revenue: niche_money::NicheMoneyNicheRevenue,
    zone: String,
) -> impl IntoView {
    let currency = revenue
        .recent_events
        .first()
        .or(revenue.reversed_events.first())
        .map_or_else(|| "USD".to_owned(), |e| e.currency.clone());
    let mine: Vec<Allocation> = revenue
        .my_allocations
        .into_iter()
        .map(Allocation::from)
        .collect();
    let reversed_ids: Vec<String> = revenue
        .reversed_events
        .iter()
        .map(|e| e.id.clone())
        .collect();
    let reversed_count = revenue.reversed_events.len();
    // Revenue over time: the gross of the recent events that stand, in the page's currency.
    let points: Vec<(f64, i64)> = revenue
        .recent_events
        .iter()
        .filter(|e| e.currency == currency && !reversed_ids.contains(&e.id))
        .map(|e| (time_ms(&e.created_at), e.gross_minor))
        .collect();
    let chart_currency = currency.clone();
    view! {
        <section class="niche-revenue" aria-labelledby="revenue-title">
            <h2 id="revenue-title">"Revenue"</h2>
            <div class="revenue-totals">
                <p class="totals">
                    <span>"Gross "<strong data-total="gross">{money(revenue.gross_minor, &currency)}</strong></span>
                    " · "<span>"Net "<strong data-total="net">{money(revenue.net_minor, &currency)}</strong></span>
                    " · "<span><strong data-total="count">{revenue.event_count}</strong>" events"</span>
                </p>
                <p class="muted">"Reversed events are not counted: their money was given back, as the budget below shows."</p>
                {(reversed_count > 0).then(|| view! {
                    <section class="reversed" aria-labelledby="reversed-title">
                        <h3 id="reversed-title">"Reversed, not counted: "<span data-total="reversed">{money(revenue.reversed_gross_minor, &currency)}</span></h3>
                        <ul class="reversed-list">
                            {revenue.reversed_events.into_iter().map(|e| view! {
                                <li data-reversed-event=e.id.clone()>
                                    <span class="badge status-reversed">"reversed"</span>" "
                                    {money(e.gross_minor, &e.currency)}" · "{e.source_type.replace('_', " ")}" · "
                                    <SourceLink slug=slug.clone() question_id=e.question_id.clone() event_id=e.id.clone()/>
                                    " · "<TimeAgo at=e.created_at/>
                                </li>
                            }).collect_view()}
                        </ul>
                    </section>
                })}
            </div>
            <section aria-labelledby="revenue-chart-title">
                <h3 id="revenue-chart-title">"Revenue over time (recent events, gross)"</h3>
                <EarningsChart points=points currency=chart_currency zone=zone what="Revenue"/>
            </section>
            <h3>"Recent events"</h3>
            {if revenue.recent_events.is_empty() {
                view! { <p class="empty">"No revenue yet."</p> }.into_any()
            } else {
                let slug = slug.clone();
                view! {
                    <div class="table-wrap" tabindex="0" role="region" aria-label="Recent revenue events"><table class="events stack">
                        <thead><tr><th scope="col">"When"</th><th scope="col">"Source"</th><th scope="col">"For"</th><th scope="col">"Reference"</th><th scope="col" class="num">"Gross"</th><th scope="col" class="num">"Net"</th></tr></thead>
                        <tbody>
                            {revenue.recent_events.into_iter().map(|e: Event| {
                                let reversed = reversed_ids.contains(&e.id);
                                view! {
                                    <tr id=format!("event-{}", e.id) data-event-id=e.id.clone() data-reversed=reversed.to_string()>
                                        <td data-label="When"><TimeAgo at=e.created_at/></td>
                                        <td data-label="Source">{e.source_type.replace('_', " ")}{reversed.then(|| view! { " "<span class="badge status-reversed">"reversed"</span> })}</td>
                                        <td data-label="For"><SourceLink slug=slug.clone() question_id=e.question_id.clone() event_id=e.id.clone()/></td>
                                        <td data-label="Reference"><code>{e.external_id}</code></td>
                                        <td class="num" data-label="Gross">{money(e.gross_minor, &e.currency)}</td>
                                        <td class="num" data-label="Net">{money(e.net_minor, &e.currency)}</td>
                                    </tr>
                                }
                            }).collect_view()}
                        </tbody>
                    </table></div>
                }.into_any()
            }}
            <h3 id="shares-title">"Members' shares of each revenue event's net"</h3>
            <p class="muted">"Each new event's net is split by these; members together get at most 80%, the platform keeps the rest."</p>
            <ul class="shares" aria-labelledby="shares-title">
                {revenue.shares.into_iter().map(|s| view! {
                    <li><strong>{s.handle}</strong>" "{share_of(s.share_bps, "each event's net")}</li>
                }).collect_view()}
            </ul>
            <Allocations allocations=mine title="Your allocations here"/>
        </section>
    }
}

#[component]
fn BudgetView(slug: String, budget: niche_money::NicheMoneyBudget) -> impl IntoView {
    let currency = "USD";
    let state = budget.state.to_string();
    view! {
        <section class="budget" aria-labelledby="budget-title">
            <h2 id="budget-title">"The agent's budget this month"</h2>
            <p>
                <span class=format!("badge budget-{state}") data-budget-state=state.clone()>{state.clone()}</span>
                " resets "<TimeAgo at=budget.resets_at.clone()/>
            </p>
            <dl class="budget-figures">
                <div><dt>"Limit"</dt><dd data-budget="limit">{budget.limit_minor.map_or_else(|| "none".to_owned(), |l| money(l, currency))}</dd></div>
                <div><dt>"Spent"</dt><dd data-budget="spent">{money(budget.spent_minor, currency)}</dd></div>
                <div><dt>"Reserved"</dt><dd data-budget="reserved">{money(budget.reserved_minor, currency)}</dd></div>
                <div><dt>"Remaining"</dt><dd data-budget="remaining">{budget.remaining_minor.map_or_else(|| "no limit".to_owned(), |r| money(r, currency))}</dd></div>
            </dl>
            <BudgetBar limit=budget.limit_minor spent=budget.spent_minor reserved=budget.reserved_minor/>
            <h3>"Questions and tasks"</h3>
            <dl class="budget-figures">
                <div><dt>"Question bounties"</dt><dd data-spend="questions">{money(budget.question_spend_minor, currency)}</dd></div>
                <div><dt>"Tasks"</dt><dd data-spend="tasks">{money(budget.task_spend_minor, currency)}</dd></div>
            </dl>
            <SpendSplit questions=budget.question_spend_minor tasks=budget.task_spend_minor currency=currency/>
            <Exchanges slug=slug.clone() exchanges=budget.exchanges/>
            <h3>"Entries"</h3>
            {if budget.entries.is_empty() {
                view! { <p class="empty">"No bounties this month."</p> }.into_any()
            } else {
                view! {
                    <div class="table-wrap" tabindex="0" role="region" aria-label="Budget entries"><table class="entries stack">
                        <thead><tr><th scope="col">"When"</th><th scope="col">"What"</th><th scope="col">"Question"</th><th scope="col" class="num">"Amount"</th></tr></thead>
                        <tbody>
                            {budget.entries.into_iter().map(|e| {
                                let kind = BudgetEntryKind::of(&e.kind).to_string();
                                let label = kind.clone();
                                view! {
                                <tr data-entry-kind=kind>
                                    <td data-label="When"><TimeAgo at=e.created_at/></td>
                                    <td data-label="What">{label}</td>
                                    <td data-label="Question"><A href=question_path(&slug, &e.question_id)>"Question #"{e.question_id.clone()}</A></td>
                                    <td class="num" data-label="Amount">{money(e.amount_minor, currency)}</td>
                                </tr>
                            }}).collect_view()}
                        </tbody>
                    </table></div>
                }.into_any()
            }}
        </section>
    }
}

/// What each exchange of the month reserved, actually cost and released.
#[component]
fn Exchanges(
    slug: String,
    exchanges: Vec<niche_money::NicheMoneyBudgetExchanges>,
) -> impl IntoView {
    let currency = "USD";
    if exchanges.is_empty() {
        return view! { <p class="empty">"No question or task moved the budget this month."</p> }
            .into_any();
    }
    view! {
        <div class="table-wrap" tabindex="0" role="region" aria-label="Questions and tasks this month"><table class="exchanges stack">
            <thead><tr>
                <th scope="col">"Exchange"</th><th scope="col">"Kind"</th>
                <th scope="col" class="num">"Limit"</th><th scope="col" class="num">"Actual"</th>
                <th scope="col" class="num">"Released"</th><th scope="col" class="num">"Still reserved"</th>
                <th scope="col">"Of its limit"</th>
            </tr></thead>
            <tbody>
                {exchanges.into_iter().map(|e| {
                    let kind = e.kind.to_string();
                    let label = kind.clone();
                    let page = format!("/dashboard/niches/{slug}/questions/{}", e.question_id);
                    view! {
                        <tr data-exchange-id=e.question_id.clone() data-exchange-kind=kind>
                            <td data-label="Exchange"><A href=page><bdi>{visible_controls(&e.title)}</bdi></A></td>
                            <td data-label="Kind">{label}</td>
                            <td class="num" data-label="Limit" data-exchange="limit">{money(e.limit_minor, currency)}</td>
                            <td class="num" data-label="Actual" data-exchange="actual">{money(e.actual_minor, currency)}</td>
                            <td class="num" data-label="Released" data-exchange="released">{money(e.released_minor, currency)}</td>
                            <td class="num" data-label="Still reserved" data-exchange="outstanding">{money(e.outstanding_minor, currency)}</td>
                            <td data-label="Of its limit"><ExchangeBar limit=e.limit_minor actual=e.actual_minor released=e.released_minor outstanding=e.outstanding_minor/></td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table></div>
    }
    .into_any()
}
