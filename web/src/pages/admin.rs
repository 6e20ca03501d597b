//! `/admin`: a link to the agents page (`/admin/agents`), the review queue (each answer with its
//! question, options, the answerer's record, how long it took and the other members' declines;
//! verify / reject), the niches with their members (add, suspend, reinstate), the deliveries to
//! the agent, failures first (redeliver), and the money desk with anomaly signals (live) and the
//! audit log. Every change goes through an admin mutation, which checks for an admin on the
//! server; this page only decides what to show.

use leptos::prelude::*;
use leptos_router::components::A;
use leptos_router::{LazyRoute, lazy_route};

use crate::api::{self, ApiError};
use crate::components::loaded::Loaded;
use crate::components::money::money;
use crate::components::question_card::{LongText, visible_controls};
use crate::components::time_ago::TimeAgo;
use crate::live::{self, LiveEvent};
use crate::operations::{
    AddMember, AdminLedger, AdminOverview, AnomalySignalArrivals, AnomalySignals, MarkPayoutFailed,
    MarkPayoutPaid, NicheBudget, Redeliver, ReinstateMember, RejectContribution,
    ReviewQueue as ReviewRead, SchedulePayout, SetNicheBudget, SuspendMember, VerifyContribution,
    VerifyPayoutAddress, add_member, admin_ledger, admin_overview, anomaly_signal_arrivals,
    anomaly_signals, mark_payout_failed, mark_payout_paid, niche_budget, redeliver,
    reinstate_member, reject_contribution, review_queue, schedule_payout, set_niche_budget,
    suspend_member, verify_contribution, verify_payout_address,
};
use crate::vocab::{
    AttemptOutcome, DeliveryStatus, MemberRole, MemberStatus, NicheStatus, PayoutStatus, Severity,
};

type SignalRow = anomaly_signals::SignalRow;

/// Something an admin does on this page: one mutation each.
#[derive(Clone)]
enum Command {
    Verify {
        id: String,
        note: Option<String>,
    },
    Reject {
        id: String,
        note: Option<String>,
    },
    AddMember {
        slug: String,
        handle: String,
        role: MemberRole,
    },
    Suspend {
        slug: String,
        handle: String,
    },
    Reinstate {
        slug: String,
        handle: String,
    },
    Redeliver {
        id: String,
    },
    VerifyAddress {
        handle: String,
        address: String,
    },
    SchedulePayout {
        handle: String,
    },
    MarkPaid {
        id: String,
        reference: String,
    },
    MarkFailed {
        id: String,
        reason: String,
    },
    SetBudget {
        slug: String,
        monthly: Option<i64>,
        bounty: i64,
        max_bounty: i64,
        reuse_price: i64,
    },
}

impl Command {
    /// Send the mutation; what to tell the admin when it worked.
    async fn run(self) -> Result<String, ApiError> {
        Ok(match self {
            Self::Verify { id, note } => {
                api::send::<VerifyContribution>(verify_contribution::Variables { id, note })
                    .await?;
                "Verified: its points count now.".to_owned()
            }
            Self::Reject { id, note } => {
                api::send::<RejectContribution>(reject_contribution::Variables { id, note })
                    .await?;
                "Rejected: it will never count.".to_owned()
            }
            Self::AddMember { slug, handle, role } => {
                let done = format!("{handle} is now a member of {slug}.");
                api::send::<AddMember>(add_member::Variables { slug, handle, role }).await?;
                done
            }
            Self::Suspend { slug, handle } => {
                let done = format!("{handle} is suspended in {slug}.");
                api::send::<SuspendMember>(suspend_member::Variables { slug, handle }).await?;
                done
            }
            Self::Reinstate { slug, handle } => {
                let done = format!("{handle} is active again in {slug}.");
                api::send::<ReinstateMember>(reinstate_member::Variables { slug, handle }).await?;
                done
            }
            Self::Redeliver { id } => {
                api::send::<Redeliver>(redeliver::Variables { id }).await?;
                "Queued to be sent again; the agent sees the same envelope id.".to_owned()
            }
            Self::VerifyAddress { handle, address } => {
                let done = format!("{handle}'s payout address is verified.");
                api::send::<VerifyPayoutAddress>(verify_payout_address::Variables {
                    handle,
                    address,
                })
                .await?;
                done
            }
            Self::SchedulePayout { handle } => {
                let done = format!("A payout to {handle} is scheduled.");
                api::send::<SchedulePayout>(schedule_payout::Variables { handle }).await?;
                done
            }
            Self::MarkPaid { id, reference } => {
                api::send::<MarkPayoutPaid>(mark_payout_paid::Variables { id, reference }).await?;
                "Marked paid.".to_owned()
            }
            Self::MarkFailed { id, reason } => {
                api::send::<MarkPayoutFailed>(mark_payout_failed::Variables { id, reason }).await?;
                "Marked failed: its money is owed again.".to_owned()
            }
            Self::SetBudget {
                slug,
                monthly,
                bounty,
                max_bounty,
                reuse_price,
            } => {
                let done = format!("The budget of {slug} is saved.");
                api::send::<SetNicheBudget>(set_niche_budget::Variables {
                    slug,
                    monthly,
                    bounty,
                    max_bounty,
                    reuse_price: Some(reuse_price),
                })
                .await?;
                done
            }
        })
    }
}

/// The page's one way to change things: its pending state disables every button.
type Act = Action<Command, Result<String, ApiError>>;

/// `/admin` as a lazily loaded route: the page's code is its own wasm chunk, fetched the first
/// time someone opens the page, so the operators' dashboard never downloads it.
pub struct AdminRoute;

#[lazy_route]
impl LazyRoute for AdminRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <AdminPage/> }.into_any()
    }
}

/// The admin page.
#[component]
fn AdminPage() -> impl IntoView {
    let reviews = LocalResource::new(|| api::run::<ReviewRead>(review_queue::Variables));
    let overview = LocalResource::new(|| api::run::<AdminOverview>(admin_overview::Variables));
    let ledger = LocalResource::new(|| api::run::<AdminLedger>(admin_ledger::Variables));
    let act: Act = Action::new_local(move |command: &Command| {
        let command = command.clone();
        async move {
            let result = command.run().await;
            // Whatever happened, show the page as it is now.
            reviews.refetch();
            overview.refetch();
            ledger.refetch();
            result
        }
    });
    // What an admin types into the payout desk outlives the desk's re-renders: a re-read that
    // lands while they type must not wipe the field.
    provide_context(PayoutHandle(RwSignal::new(String::new())));
    // Anomaly signals arrive live, once for the page (re-reads keep the same subscription).
    let signals = RwSignal::new(Vec::<SignalRow>::new());
    live::subscribe::<AnomalySignalArrivals>(anomaly_signal_arrivals::Variables, move |event| {
        match event {
            // Subscribed (again): re-read the log, so nothing that arrived before the
            // subscription (or while disconnected) is missing.
            LiveEvent::Connected => leptos::task::spawn_local(async move {
                if let Ok(latest) = api::run::<AnomalySignals>(anomaly_signals::Variables).await {
                    merge_signals(signals, latest.anomaly_signals);
                }
            }),
            LiveEvent::Next(data) => {
                merge_signals(signals, vec![SignalRow::from(data.anomaly_signals)])
            }
            LiveEvent::Failed(_) | LiveEvent::Dropped => {}
        }
    });
    view! {
        <main class="admin">
            <h1>"Admin"</h1>
            <p><A href="/admin/agents">"Agents"</A>": the registered agents, their niches, endpoints and deliveries; register, rotate a secret, disable."</p>
            {move || act.value().get().map(|result| match result {
                Ok(text) => view! { <p class="notice" role="status">{text}</p> }.into_any(),
                Err(err) => view! { <p class="error" role="alert">{err.to_string()}</p> }.into_any(),
            })}
            <Loaded forbidden="This page is for askloop's admins">
                {move || reviews.get().map(|result| result.map(|r| view! { <ReviewQueue queue=r.review_queue act=act/> }))}
            </Loaded>
            <Loaded forbidden="This page is for askloop's admins">
                {move || overview.get().map(|result| result.map(|o| view! {
                    <Niches niches=o.all_niches act=act/>
                    <Deliveries deliveries=o.deliveries act=act/>
                    <Loaded>
                        {move || ledger.get().map(|result| result.map(|l| view! { <Ledger ledger=l act=act signals=signals/> }))}
                    </Loaded>
                }))}
            </Loaded>
        </main>
    }
}

type ReviewItem = review_queue::ReviewQueueReviewQueue;

/// How long something took, as people say it ("4 min", "2 h 5 min", "3 days 2 h").
fn duration_words(seconds: i64) -> String {
    let s = seconds.max(0);
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min", s / 60),
        3600..=86_399 => format!("{} h {} min", s / 3600, (s % 3600) / 60),
        _ => format!("{} days {} h", s / 86_400, (s % 86_400) / 3600),
    }
}

/// Contributions awaiting review, each with what a reviewer weighs. Everything the agent wrote
/// (title, question, context, option labels) is untrusted: shown as isolated text only.
#[component]
fn ReviewQueue(queue: Vec<ReviewItem>, act: Act) -> impl IntoView {
    view! {
        <section aria-labelledby="review-title">
            <h2 id="review-title">"Review queue"</h2>
            {if queue.is_empty() {
                view! { <p class="empty">"Nothing awaits review."</p> }.into_any()
            } else {
                queue.into_iter().map(|c| view! { <ReviewCard item=c act=act/> }).collect_view().into_any()
            }}
        </section>
    }
}

/// One contribution awaiting review.
#[component]
fn ReviewCard(item: ReviewItem, act: Act) -> impl IntoView {
    let busy = act.pending();
    let c = item;
    let note_id = format!("note-{}", c.id);
    let (note, set_note) = signal(String::new());
    let (verify_id, reject_id) = (c.id.clone(), c.id.clone());
    let written = move || Some(note.get_untracked()).filter(|n| !n.is_empty());
    let who = c.contributor;
    let record = format!(
        "{} tier, score {} · verified {}, rejected {}, pending {}, reversed {}",
        who.tier.name,
        who.score,
        who.verified_count,
        who.rejected_count,
        who.pending_count,
        who.reversed_count
    );
    let answer_id = c.answer.as_ref().map(|a| a.id.clone());
    let chosen = c.answer.as_ref().and_then(|a| a.option_id.clone());
    let question = c.question.map(|q| {
        let href = format!("/dashboard/niches/{}/questions/{}", q.niche.slug, q.id);
        let title = q.title.clone();
        let options = q.options.into_iter().map(|o| {
            let picked = chosen.as_deref() == Some(o.id.as_str());
            view! {
                <li class:chosen=picked>
                    <bdi>{visible_controls(&o.label)}</bdi>
                    {picked.then(|| view! { " "<span class="badge chosen-mark">"✓ chosen"</span> })}
                </li>
            }
        }).collect_view();
        // The other members' declines, research requests and answers on the same question.
        let others: Vec<_> = q.answers.into_iter().filter(|a| Some(&a.id) != answer_id.as_ref()).collect();
        let others = if others.is_empty() {
            view! { <p class="muted">"No other member has acted on it."</p> }.into_any()
        } else {
            view! {
                <ul class="declines">
                    {others.into_iter().map(|a| view! {
                        <li>
                            <strong>{a.answered_by}</strong>": "{a.kind.describe()}" · "<TimeAgo at=a.created_at/>
                            {a.body.map(|b| view! { <span class="answer-words">" — "<bdi>{visible_controls(&b)}</bdi></span> })}
                        </li>
                    }).collect_view()}
                </ul>
            }.into_any()
        };
        let head = view! {
            <h3><bdi>{visible_controls(&q.title)}</bdi></h3>
            <LongText text=q.question class="question-text" tag_quote=false/>
            {q.context.map(|context| view! {
                <details class="context" open>
                    <summary>"What the agent found"</summary>
                    <LongText text=context class="" tag_quote=true/>
                </details>
            })}
            <h4>"Options"</h4>
            <ul class="options-list">{options}</ul>
        };
        let tail = view! {
            <h4>"Other members on it"</h4>
            {others}
            <p><a href=href>"Open the question page"<span class="visually-hidden">": "{visible_controls(&title)}</span></a></p>
        };
        (head, tail)
    });
    let (question_head, question_tail) = question.unzip();
    let answer = c.answer.map(|a| {
        view! {
            <h4>"The answer"</h4>
            {a.option_label.map(|l| view! { <p>"Chose "<strong class="chosen-label"><bdi>{visible_controls(&l)}</bdi></strong></p> })}
            {match a.body {
                Some(words) => view! { <p class="answer-words"><bdi>{visible_controls(&words)}</bdi></p> }.into_any(),
                None => view! { <p class="muted">"No words given."</p> }.into_any(),
            }}
        }
    });
    view! {
        <article class="card review" data-contribution-id=c.id.clone()>
            <p class="meta">
                <strong>{c.niche_slug}</strong>
                " · "{c.points}" points · "{c.source}" · "
                <TimeAgo at=c.created_at/>
            </p>
            {question_head}
            {answer}
            <p class="record" data-record="">
                "By "<strong class="answerer">{who.handle}</strong>" — "{record}
            </p>
            {c.seconds_to_answer.map(|s| view! {
                <p class="took" data-seconds=s.to_string()>"Answered "{duration_words(s)}" after the question arrived"</p>
            })}
            {question_tail}
            <details>
                <summary>"Evidence"</summary>
                <pre class="evidence">{c.evidence}</pre>
            </details>
            <label for=note_id.clone()>"Note (optional)"</label>
            <input id=note_id type="text" maxlength="500" prop:value=note on:input=move |ev| set_note.set(event_target_value(&ev))/>
            <div class="actions">
                <button type="button" data-action="verify" disabled=busy on:click=move |_| {
                    act.dispatch(Command::Verify { id: verify_id.clone(), note: written() });
                }>"Verify"</button>
                <button type="button" class="secondary" data-action="reject" disabled=busy on:click=move |_| {
                    act.dispatch(Command::Reject { id: reject_id.clone(), note: written() });
                }>"Reject"</button>
            </div>
        </article>
    }
}

/// Every niche with its members.
#[component]
fn Niches(niches: Vec<admin_overview::AdminOverviewAllNiches>, act: Act) -> impl IntoView {
    view! {
        <section aria-labelledby="niches-title">
            <h2 id="niches-title">"Niches and members"</h2>
            {niches.into_iter().map(|n| view! { <NicheMembers niche=n act=act/> }).collect_view()}
        </section>
    }
}

#[component]
fn NicheMembers(niche: admin_overview::AdminOverviewAllNiches, act: Act) -> impl IntoView {
    let busy = act.pending();
    let slug = niche.slug.clone();
    let handle_id = format!("add-{}", niche.slug);
    let role_id = format!("role-{}", niche.slug);
    let (handle, set_handle) = signal(String::new());
    let (role, set_role) = signal(MemberRole::Operator);
    let add_slug = slug.clone();
    let add = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        act.dispatch(Command::AddMember {
            slug: add_slug.clone(),
            handle: handle.get_untracked().trim().to_owned(),
            role: role.get_untracked(),
        });
        set_handle.set(String::new());
    };
    let members = niche
        .members
        .into_iter()
        .map(|m| {
            let status = MemberStatus::of(&m.status);
            let (label, command) = if status == MemberStatus::Active {
                ("Suspend", Command::Suspend { slug: slug.clone(), handle: m.handle.clone() })
            } else {
                ("Reinstate", Command::Reinstate { slug: slug.clone(), handle: m.handle.clone() })
            };
            view! {
                <tr data-member=m.handle.clone()>
                    <td>{m.handle.clone()}</td>
                    <td>{MemberRole::of(&m.role).to_string()}</td>
                    <td>{status.to_string()}</td>
                    <td>
                        <button type="button" class="secondary small" disabled=busy on:click=move |_| { act.dispatch(command.clone()); }>
                            {label}<span class="visually-hidden">" "{m.handle.clone()}</span>
                        </button>
                    </td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <article class="card niche-admin" data-slug=niche.slug.clone()>
            <h3>{niche.name}" "<code>{niche.slug.clone()}</code>" "<span class="status">{NicheStatus::of(&niche.status).to_string()}</span></h3>
            <div class="table-wrap">
                <table>
                    <thead><tr><th scope="col">"Handle"</th><th scope="col">"Role"</th><th scope="col">"Status"</th><th scope="col">""</th></tr></thead>
                    <tbody>{members}</tbody>
                </table>
            </div>
            <form class="inline" on:submit=add>
                <label for=handle_id.clone()>"Add a member"</label>
                <input id=handle_id type="text" required placeholder="handle" prop:value=handle on:input=move |ev| set_handle.set(event_target_value(&ev))/>
                <label for=role_id.clone() class="visually-hidden">"Role"</label>
                <select id=role_id on:change=move |ev| set_role.set(MemberRole::of(event_target_value(&ev)))>
                    <option value="operator" selected>"operator"</option>
                    <option value="specialist">"specialist"</option>
                    <option value="observer">"observer"</option>
                </select>
                <button type="submit" disabled=busy>"Add"</button>
            </form>
            <BudgetEditor slug=slug act=act/>
        </article>
    }
}

/// A whole number of minor units typed into a field, or why not.
fn minor_units(label: &str, typed: &str) -> Result<i64, String> {
    typed
        .trim()
        .parse::<i64>()
        .ok()
        .filter(|n| *n >= 0)
        .ok_or_else(|| format!("{label} is a whole number of minor units, 0 or more"))
}

/// A niche's agent budget: where this month stands, and its limit and bounties to edit.
#[component]
fn BudgetEditor(slug: String, act: Act) -> impl IntoView {
    let busy = act.pending();
    let read_slug = slug.clone();
    let budget = LocalResource::new(move || {
        let slug = read_slug.clone();
        async move { api::run::<NicheBudget>(niche_budget::Variables { slug }).await }
    });
    let ids = ["monthly", "bounty", "max-bounty", "reuse-price"]
        .map(|field| format!("budget-{field}-{slug}"));
    let monthly = RwSignal::new(String::new());
    let bounty = RwSignal::new(String::new());
    let max_bounty = RwSignal::new(String::new());
    let reuse_price = RwSignal::new(String::new());
    let problem = RwSignal::new(None::<String>);
    // The fields start from the stored settings once they are read.
    Effect::new(move |_| {
        if let Some(Ok(read)) = budget.get() {
            let b = read.budget;
            monthly.set(b.limit_minor.map(|l| l.to_string()).unwrap_or_default());
            bounty.set(b.bounty_minor.to_string());
            max_bounty.set(b.max_bounty_minor.to_string());
            reuse_price.set(b.reuse_price_minor.to_string());
        }
    });
    let save_slug = slug.clone();
    let save = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let typed_monthly = monthly.get_untracked();
        let parsed = (|| {
            let monthly = match typed_monthly.trim() {
                "" => None,
                typed => Some(minor_units("The monthly limit", typed)?),
            };
            Ok::<_, String>(Command::SetBudget {
                slug: save_slug.clone(),
                monthly,
                bounty: minor_units("The bounty", &bounty.get_untracked())?,
                max_bounty: minor_units("The largest bounty", &max_bounty.get_untracked())?,
                reuse_price: minor_units("The reuse price", &reuse_price.get_untracked())?,
            })
        })();
        match parsed {
            Ok(command) => {
                problem.set(None);
                act.dispatch(command);
            }
            Err(why) => problem.set(Some(why)),
        }
    };
    let standing = move || {
        budget.get().map(|read| match read {
            Ok(read) => {
                let b = read.budget;
                let left = b
                    .remaining_minor
                    .map_or_else(|| "no limit".to_owned(), |r| r.to_string());
                view! {
                    <p class="budget-month" data-budget-month="">
                        "This month: spent "{b.spent_minor}" (on reuses "{b.reuse_spend_minor}"), reserved "{b.reserved_minor}", left "{left}
                    </p>
                }
                .into_any()
            }
            Err(err) => view! { <p class="error">{err.to_string()}</p> }.into_any(),
        })
    };
    let [monthly_id, bounty_id, max_id, reuse_id] = ids;
    view! {
        <form class="budget-editor" on:submit=save aria-label=format!("Budget of {slug}")>
            <h4>"Agent budget"</h4>
            {standing}
            <label for=monthly_id.clone()>"Monthly limit (minor units; empty for no limit)"</label>
            <input id=monthly_id type="number" min="0" step="1" inputmode="numeric" prop:value=monthly on:input=move |ev| monthly.set(event_target_value(&ev))/>
            <label for=bounty_id.clone()>"Bounty per question"</label>
            <input id=bounty_id type="number" min="0" step="1" required inputmode="numeric" prop:value=bounty on:input=move |ev| bounty.set(event_target_value(&ev))/>
            <label for=max_id.clone()>"Largest bounty"</label>
            <input id=max_id type="number" min="0" step="1" required inputmode="numeric" prop:value=max_bounty on:input=move |ev| max_bounty.set(event_target_value(&ev))/>
            <label for=reuse_id.clone()>"Reuse price (what an agent pays to rely on an entry)"</label>
            <input id=reuse_id type="number" min="0" step="1" required inputmode="numeric" prop:value=reuse_price on:input=move |ev| reuse_price.set(event_target_value(&ev))/>
            {move || problem.get().map(|why| view! { <p class="error form-error" role="alert">{why}</p> })}
            <button type="submit" disabled=busy>"Save budget"</button>
        </form>
    }
}

/// Deliveries to the agent, failures first, each with its attempts.
#[component]
fn Deliveries(deliveries: Vec<admin_overview::AdminOverviewDeliveries>, act: Act) -> impl IntoView {
    view! {
        <section aria-labelledby="deliveries-title">
            <h2 id="deliveries-title">"Deliveries to the agent"</h2>
            {if deliveries.is_empty() {
                view! { <p class="empty">"Nothing has been sent yet."</p> }.into_any()
            } else {
                view! {
                    <div class="table-wrap">
                        <table class="deliveries">
                            <thead><tr>
                                <th scope="col">"Event"</th><th scope="col">"Status"</th><th scope="col">"Attempts"</th>
                                <th scope="col">"Last error"</th><th scope="col">"Written"</th><th scope="col">""</th>
                            </tr></thead>
                            <tbody>
                                {deliveries.into_iter().map(|d| view! { <DeliveryRow delivery=d act=act/> }).collect_view()}
                            </tbody>
                        </table>
                    </div>
                }.into_any()
            }}
        </section>
    }
}

#[component]
fn DeliveryRow(delivery: admin_overview::AdminOverviewDeliveries, act: Act) -> impl IntoView {
    let busy = act.pending();
    let status = delivery.status.clone();
    let id = delivery.id.clone();
    let count = delivery.attempts.len();
    let attempts = delivery
        .attempts
        .into_iter()
        .map(|a| {
            let what = match (a.status_code, a.error) {
                (Some(code), None) => format!("HTTP {code}"),
                (_, Some(error)) => error,
                (None, None) => String::new(),
            };
            view! {
                <li><TimeAgo at=a.at/>" · "{AttemptOutcome::of(&a.outcome).to_string()}" · "{what}" · "{a.duration_ms}" ms"</li>
            }
        })
        .collect_view();
    view! {
        <tr data-delivery-id=delivery.id.clone() class=format!("delivery-{status}")>
            <td>
                <code>{delivery.event_type}</code>
                <details>
                    <summary>{delivery.envelope_id}</summary>
                    <ol class="attempts">{attempts}</ol>
                </details>
            </td>
            <td>
                <span class=format!("badge status-{status}")>{status.to_string()}</span>
                {(status == DeliveryStatus::Pending).then(|| view! { <span class="muted">" next "<TimeAgo at=delivery.next_attempt_at/></span> })}
            </td>
            <td class="num">{count}</td>
            <td>{delivery.last_error.unwrap_or_default()}</td>
            <td><TimeAgo at=delivery.created_at/></td>
            <td>
                <button type="button" class="secondary small" data-action="redeliver" disabled=busy on:click=move |_| {
                    act.dispatch(Command::Redeliver { id: id.clone() });
                }>"Redeliver"</button>
            </td>
        </tr>
    }
}

/// The money side for admins: payouts to settle, revenue events, anomaly signals (live) and
/// the audit log.
#[component]
fn Ledger(
    ledger: admin_ledger::ResponseData,
    act: Act,
    signals: RwSignal<Vec<SignalRow>>,
) -> impl IntoView {
    let l = ledger;
    view! {
        <PayoutDesk payouts=l.payouts accounts=l.payout_accounts act=act/>
        <section aria-labelledby="admin-revenue-title">
            <h2 id="admin-revenue-title">"Revenue events"</h2>
            {if l.revenue_events.is_empty() {
                view! { <p class="empty">"No revenue yet."</p> }.into_any()
            } else {
                view! { <div class="table-wrap"><table class="admin-events">
                    <thead><tr><th scope="col">"When"</th><th scope="col">"Niche"</th><th scope="col">"Source"</th><th scope="col">"Reference"</th><th scope="col" class="num">"Gross"</th><th scope="col" class="num">"Net"</th></tr></thead>
                    <tbody>{l.revenue_events.into_iter().map(|e| view! {
                        <tr><td><TimeAgo at=e.created_at/></td><td>{e.niche_slug}</td><td>{e.source_type}</td><td><code>{e.external_id}</code></td>
                        <td class="num">{money(e.gross_minor, &e.currency)}</td><td class="num">{money(e.net_minor, &e.currency)}</td></tr>
                    }).collect_view()}</tbody>
                </table></div> }.into_any()
            }}
        </section>
        <section aria-labelledby="signals-title">
            <h2 id="signals-title">"Anomaly signals"</h2>
            <p class="muted">"Logged for a person to look at; they change nothing by themselves."</p>
            <Show when=move || !signals.with(Vec::is_empty) fallback=|| view! { <p class="empty">"No signals."</p> }>
                <ul class="signals">
                    <For each=move || signals.get() key=|s| s.signal_id.clone() children=|s| {
                        let severity = Severity::of(&s.severity);
                        view! {
                            <li data-signal-id=s.signal_id.clone()>
                                <span class=format!("badge severity-{severity}")>{severity.to_string()}</span>
                                " "<strong>{s.kind}</strong>" on "{s.subject_type.to_string()}" "<code>{s.subject_id}</code>" · "<TimeAgo at=s.received_at/>
                                <pre class="evidence">{s.finding}</pre>
                            </li>
                        }
                    }/>
                </ul>
            </Show>
        </section>
        <section aria-labelledby="audit-title">
            <h2 id="audit-title">"Audit log"</h2>
            <div class="table-wrap"><table class="audit">
                <thead><tr><th scope="col">"When"</th><th scope="col">"Who"</th><th scope="col">"What"</th><th scope="col">"Subject"</th><th scope="col">"Detail"</th></tr></thead>
                <tbody>{l.audit_log.into_iter().map(|a| view! {
                    <tr><td><TimeAgo at=a.created_at/></td><td>{a.actor}</td><td>{a.action}</td><td>{a.subject_type}" "{a.subject_id}</td><td><code>{a.detail}</code></td></tr>
                }).collect_view()}</tbody>
            </table></div>
        </section>
    }
}

/// Add `more` to the signals shown, once each, newest first.
fn merge_signals(signals: RwSignal<Vec<SignalRow>>, more: Vec<SignalRow>) {
    signals.update(|list| {
        for s in more {
            if !list.iter().any(|known| known.signal_id == s.signal_id) {
                list.push(s);
            }
        }
        list.sort_by(|a, b| b.received_at.cmp(&a.received_at));
    });
}

/// The person the payout desk schedules for, kept by the page.
#[derive(Clone, Copy)]
struct PayoutHandle(RwSignal<String>);

/// Payouts: verify an address, schedule, then mark paid (with the reference) or failed.
#[component]
fn PayoutDesk(
    payouts: Vec<admin_ledger::AdminLedgerPayouts>,
    accounts: Vec<admin_ledger::AdminLedgerPayoutAccounts>,
    act: Act,
) -> impl IntoView {
    let busy = act.pending();
    let handle =
        use_context::<PayoutHandle>().map_or_else(|| RwSignal::new(String::new()), |h| h.0);
    let unverified: Vec<_> = accounts.into_iter().filter(|a| !a.verified).collect();
    let schedule = move |_| {
        act.dispatch(Command::SchedulePayout {
            handle: handle.get_untracked().trim().to_owned(),
        });
    };
    view! {
        <section aria-labelledby="payout-desk-title">
            <h2 id="payout-desk-title">"Payouts"</h2>
            <h3>"Addresses to verify"</h3>
            {if unverified.is_empty() {
                view! { <p class="empty">"None waiting."</p> }.into_any()
            } else {
                view! { <ul class="accounts">{unverified.into_iter().map(|a| {
                    let who = a.handle.clone().unwrap_or_default();
                    let command = Command::VerifyAddress { handle: who.clone(), address: a.address.clone() };
                    view! {
                        <li data-account=who.clone()>
                            <strong>{who.clone()}</strong>" "<code>{a.address}</code>" "
                            <button type="button" class="secondary small" data-action="verify-address" disabled=busy on:click=move |_| {
                                act.dispatch(command.clone());
                            }>"Verify"<span class="visually-hidden">" "{who.clone()}</span></button>
                        </li>
                    }
                }).collect_view()}</ul> }.into_any()
            }}
            <form class="inline" on:submit=|ev| ev.prevent_default()>
                <label for="payout-handle">"Person"</label>
                <input id="payout-handle" type="text" placeholder="handle" prop:value=handle on:input=move |ev| handle.set(event_target_value(&ev))/>
                <button type="button" data-action="schedule-payout" disabled=busy on:click=schedule>"Schedule what is owed"</button>
            </form>
            {if payouts.is_empty() {
                view! { <p class="empty">"No payouts yet."</p> }.into_any()
            } else {
                view! { <ul class="payouts">{payouts.into_iter().map(|p| view! { <PayoutLine payout=p act=act/> }).collect_view()}</ul> }.into_any()
            }}
        </section>
    }
}

#[component]
fn PayoutLine(payout: admin_ledger::AdminLedgerPayouts, act: Act) -> impl IntoView {
    let busy = act.pending();
    let status = PayoutStatus::of(&payout.status);
    let scheduled = status == PayoutStatus::Scheduled;
    let (note, set_note) = signal(String::new());
    let note_id = format!("payout-note-{}", payout.id);
    let (paid_id, failed_id) = (payout.id.clone(), payout.id.clone());
    view! {
        <li data-payout-id=payout.id.clone()>
            <span class=format!("badge status-{status}")>{status.to_string()}</span>
            " "<strong>{payout.handle}</strong>" "{money(payout.amount_minor, &payout.currency)}" · "<TimeAgo at=payout.created_at/>
            {payout.external_reference.map(|r| view! { " · ref "<code>{r}</code> })}
            {payout.failure_reason.map(|r| view! { " · "<span class="error">{r}</span> })}
            {scheduled.then(|| view! {
                <div class="inline">
                    <label for=note_id.clone()>"Reference or reason"</label>
                    <input id=note_id type="text" maxlength="200" prop:value=note on:input=move |ev| set_note.set(event_target_value(&ev))/>
                    <button type="button" class="small" data-action="mark-paid" disabled=busy on:click=move |_| {
                        act.dispatch(Command::MarkPaid { id: paid_id.clone(), reference: note.get_untracked() });
                    }>"Mark paid"</button>
                    <button type="button" class="secondary small" data-action="mark-failed" disabled=busy on:click=move |_| {
                        act.dispatch(Command::MarkFailed { id: failed_id.clone(), reason: note.get_untracked() });
                    }>"Mark failed"</button>
                </div>
            })}
        </li>
    }
}
