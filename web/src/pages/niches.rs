//! `/dashboard/niches`: "Your agent needs you" (live; each niche's five most urgent and how many
//! wait, with a link to the rest), then a card per niche, then my contributions and the ladder.
//! A person in no niche is told how to join (an admin adds members); an admin also sees who is
//! waiting to join. Signed out, the niches taking questions and a way to sign in.

use leptos::prelude::*;
use leptos_router::components::A;

use crate::api;
use crate::components::loaded::Loaded;
use crate::components::money::percent;
use crate::components::time_ago::TimeAgo;
use crate::components::title::page_title;
use crate::live::{self, LiveEvent};
use crate::operations::{
    AwaitingMe, AwaitingMeChanges, ContributionsAndLadder, Niches, Standing, WaitingToJoin,
    awaiting_me, awaiting_me_changes, contributions_and_ladder, niches, standing, waiting_to_join,
};
use crate::session::Session;
use crate::vocab::{
    ContributionKind, ContributionStatus, MemberRole, MemberStatus, NicheStatus, Urgency,
};

type Membership = standing::StandingViewerMemberships;
type Tier = contributions_and_ladder::TierRow;

/// The niches page.
#[component]
pub fn NichesPage() -> impl IntoView {
    let session = Session::get();
    page_title(move || match session.person() {
        Some(Some(_)) => "Your niches".to_owned(),
        _ => "Niches".to_owned(),
    });
    let standing = LocalResource::new(|| api::run::<Standing>(standing::Variables));
    view! {
        <main>
            <Loaded>
                {move || standing.get().map(|result| result.map(|data| match data.viewer {
                    Some(viewer) if viewer.memberships.is_empty() => view! { <Newcomer handle=viewer.user.handle admin=viewer.user.is_admin/> }.into_any(),
                    Some(viewer) => view! { <SignedIn memberships=viewer.memberships/> }.into_any(),
                    None => view! { <SignedOut/> }.into_any(),
                }))}
            </Loaded>
        </main>
    }
}

#[component]
fn SignedOut() -> impl IntoView {
    let niches = LocalResource::new(|| api::run::<Niches>(niches::Variables));
    view! {
        <h1>"Niches"</h1>
        <p class="lede">"Where agents ask what they cannot settle, and people who have done the job answer."</p>
        <p><A href="/login?next=/dashboard/niches">"Sign in"</A>" to see the questions waiting for you."</p>
        <Loaded loading="Loading niches…">
            {move || niches.get().map(|result| result.map(|data| view! { <NicheList niches=data.niches/> }))}
        </Loaded>
    }
}

/// The niches anyone can see, or a calm empty state.
#[component]
fn NicheList(niches: Vec<niches::NichesNiches>) -> impl IntoView {
    if niches.is_empty() {
        return view! { <p class="empty">"No niches are taking questions yet."</p> }.into_any();
    }
    view! {
        <ul class="niches">
            {niches
                .into_iter()
                .map(|niche| {
                    let slug = niche.slug.clone();
                    view! {
                        <li class="niche" data-slug=slug>
                            <strong>{niche.name}</strong>
                            " "
                            <code>{niche.slug}</code>
                            " "
                            <span class="status">{NicheStatus::of(&niche.status).to_string()}</span>
                        </li>
                    }
                })
                .collect_view()}
        </ul>
    }
    .into_any()
}

/// A person in no niche: how membership works, and the niches they could ask to join.
#[component]
fn Newcomer(handle: String, admin: bool) -> impl IntoView {
    let niches = LocalResource::new(|| api::run::<Niches>(niches::Variables));
    view! {
        <section class="newcomer" aria-labelledby="join-title">
            <h1 id="join-title">"You are not in a niche yet"</h1>
            {admin.then(|| view! {
                <p class="lede" data-admin-lead="">"As an admin you review what members send: "<A href="/admin/review">"open the review inbox"</A>"."</p>
            })}
            <p class="lede">"Questions reach you through the niches you are a member of, and only an admin of this askloop adds members."</p>
            <ol class="join-steps">
                <li>"Pick a niche below where you have done the job its agent asks about."</li>
                <li>"Ask an askloop admin to add you to it, giving your handle "<strong data-handle=handle.clone()>{handle.clone()}</strong>" and whether you will operate it or answer as a specialist."</li>
                <li>"Once you are added, its questions wait for you here and your agent asks you when it is stuck."</li>
            </ol>
            <h2>"Niches taking questions"</h2>
            <Loaded loading="Loading niches…">
                {move || niches.get().map(|result| result.map(|data| view! { <NicheList niches=data.niches/> }))}
            </Loaded>
        </section>
        <WaitingToJoinList/>
    }
}

/// For admins: the people in no niche yet, whom to add (nothing for anyone else).
#[component]
fn WaitingToJoinList() -> impl IntoView {
    let session = Session::get();
    move || {
        let admin = matches!(session.person(), Some(Some(p)) if p.is_admin);
        admin.then(|| view! { <WaitingToJoinSection/> })
    }
}

#[component]
fn WaitingToJoinSection() -> impl IntoView {
    let waiting = LocalResource::new(|| api::run::<WaitingToJoin>(waiting_to_join::Variables));
    view! {
        <section class="waiting-to-join" aria-labelledby="waiting-title">
            <h2 id="waiting-title">"Waiting to join a niche"</h2>
            <Loaded loading="Loading who is waiting…">
                {move || waiting.get().map(|result| result.map(|data| {
                    let people = data.waiting_to_join;
                    if people.is_empty() {
                        return view! { <p class="empty">"Everyone who signed up is in a niche."</p> }.into_any();
                    }
                    view! {
                        <p class="muted">"Signed up but in no niche yet. Add them from "<A href="/admin">"Admin"</A>"."</p>
                        <ul class="waiting-list">
                            {people.into_iter().map(|p| {
                                let key = p.handle.clone();
                                view! {
                                <li data-waiting=key>
                                    <strong>{p.handle}</strong>" · signed up "<TimeAgo at=p.signed_up_at/>
                                    {(!p.pending_in.is_empty()).then(|| view! { " · pending in "{p.pending_in.join(", ")} })}
                                </li>
                            }}).collect_view()}
                        </ul>
                    }.into_any()
                }))}
            </Loaded>
        </section>
    }
}

#[component]
fn SignedIn(memberships: Vec<Membership>) -> impl IntoView {
    let awaiting = LocalResource::new(|| api::run::<AwaitingMe>(awaiting_me::Variables));
    // "Your agent needs you" is live: any change re-reads the short list.
    let dropped = RwSignal::new(false);
    live::subscribe::<AwaitingMeChanges>(
        awaiting_me_changes::Variables,
        move |event| match event {
            LiveEvent::Connected | LiveEvent::Next(_) => {
                dropped.set(false);
                awaiting.refetch();
            }
            LiveEvent::Dropped => dropped.set(true),
            LiveEvent::Failed(_) => {}
        },
    );
    let standing = LocalResource::new(|| {
        api::run::<ContributionsAndLadder>(contributions_and_ladder::Variables)
    });
    let cards = memberships
        .into_iter()
        .map(|m| view! { <MembershipCard membership=m/> })
        .collect_view();
    view! {
        <section class="awaiting" aria-labelledby="awaiting-title">
            <h1 id="awaiting-title">"Your agent needs you"</h1>
            {move || dropped.get().then(|| view! {
                <p class="banner" role="status">"Connection lost. Reconnecting…"</p>
            })}
            <Loaded>
                {move || awaiting.get().map(|result| result.map(|data| {
                    let parts = data.awaiting_me_by_niche;
                    if parts.is_empty() {
                        return view! {
                            <p class="empty">"Nothing is waiting for you. Your agent will ask when it is stuck."</p>
                        }.into_any();
                    }
                    parts.into_iter().map(|part| view! { <AwaitingNiche part=part/> }).collect_view().into_any()
                }))}
            </Loaded>
        </section>
        <section class="cards" aria-label="Your niches">{cards}</section>
        <Loaded loading="Loading your contributions…">
            {move || standing.get().map(|result| result.map(|data| view! {
                <Contributions contributions=data.my_contributions/>
                <Ladder tiers=data.tiers/>
            }))}
        </Loaded>
        <WaitingToJoinList/>
    }
}

/// One niche's part of "Your agent needs you": its most urgent five, and a link to all.
#[component]
fn AwaitingNiche(part: awaiting_me::AwaitingMeAwaitingMeByNiche) -> impl IntoView {
    let slug = part.niche.slug.clone();
    let queue = format!("/dashboard/niches/{slug}/questions");
    let heading_id = format!("awaiting-{slug}");
    let labelled_by = heading_id.clone();
    let shown = part.questions.len() as i64;
    let count = part.waiting_count;
    let more = (count > shown).then(|| {
        let queue = queue.clone();
        let name = part.niche.name.clone();
        view! { <p class="more"><A href=queue>"All "{count}" waiting in "{name}</A></p> }
    });
    let waiting = if count == 1 {
        "1 waiting".to_owned()
    } else {
        format!("{count} waiting")
    };
    view! {
        <section class="awaiting-niche" data-slug=slug.clone() aria-labelledby=labelled_by>
            <h2 id=heading_id><A href=queue>{part.niche.name.clone()}</A>" "<span class="badge" data-waiting-count=count>{waiting}</span></h2>
            <ul class="awaiting-list">
                {part.questions.into_iter().map(|q| {
                    let href = format!("/dashboard/niches/{slug}/questions/{}", q.id);
                    let urgency = Urgency::of(&q.urgency);
                    view! {
                        <li data-question-id=q.id>
                            <span class=format!("badge urgency-{urgency}")>{urgency.to_string()}</span>
                            " "
                            <A href=href><bdi>{crate::components::question_card::visible_controls(&q.title)}</bdi></A>
                        </li>
                    }
                }).collect_view()}
            </ul>
            {more}
        </section>
    }
}

/// My contributions, newest first.
#[component]
fn Contributions(
    contributions: Vec<contributions_and_ladder::ContributionsAndLadderMyContributions>,
) -> impl IntoView {
    view! {
        <section class="contributions" aria-labelledby="contributions-title">
            <h2 id="contributions-title">"Your contributions"</h2>
            {if contributions.is_empty() {
                view! { <p class="empty">"None yet. Answers you give count here."</p> }.into_any()
            } else {
                view! {
                    <div class="table-wrap" tabindex="0" role="region" aria-label="Your contributions">
                        <table class="stack">
                            <thead><tr><th scope="col">"When"</th><th scope="col">"Niche"</th><th scope="col">"What"</th><th scope="col" class="num">"Points"</th><th scope="col">"Status"</th></tr></thead>
                            <tbody>
                                {contributions.into_iter().map(|c| {
                                    let status = ContributionStatus::of(&c.status);
                                    view! {
                                        <tr data-contribution-id=c.id>
                                            <td data-label="When"><TimeAgo at=c.created_at/></td>
                                            <td data-label="Niche">{c.niche_slug}</td>
                                            <td data-label="What">{ContributionKind::of(&c.kind).describe()}</td>
                                            <td class="num" data-label="Points">{c.points}</td>
                                            <td data-label="Status">
                                                <span class=format!("badge status-{status}")>{status.to_string()}</span>
                                                {c.review_note.map(|note| view! { <span class="review-note" data-review-note="">" — "<bdi>{note}</bdi></span> })}
                                            </td>
                                        </tr>
                                    }
                                }).collect_view()}
                            </tbody>
                        </table>
                    </div>
                }.into_any()
            }}
        </section>
    }
}

/// The tier ladder, lowest first.
#[component]
fn Ladder(tiers: Vec<Tier>) -> impl IntoView {
    view! {
        <section class="ladder" aria-labelledby="ladder-title">
            <h2 id="ladder-title">"The tier ladder"</h2>
            <ol class="ladder-list">
                {tiers.into_iter().map(|t| view! {
                    <li>
                        <strong>{t.name}</strong>
                        <span class="muted">" from "{t.min_score}" points · share "{percent(t.share_bps)}</span>
                    </li>
                }).collect_view()}
            </ol>
        </section>
    }
}

/// A whole percent of a share 0–1.
fn pct(share: f64) -> String {
    format!("{:.0} %", share * 100.0)
}

/// Where the person's answers stand in review and how their stated confidence compares with
/// what was verified: the trust rule's figures and a small calibration chart (a table whose
/// meters show stated against observed, each also written out, so a screen reader reads the
/// same numbers).
#[component]
fn Record(calibration: standing::StandingViewerMembershipsCalibration) -> impl IntoView {
    let c = calibration;
    let trust = if c.trusted {
        format!(
            "trusted: your answers count at once (from {:.2})",
            c.trust_lower_bound
        )
    } else {
        format!("reviewed until it reaches {:.2}", c.trust_lower_bound)
    };
    let summary = if c.answers == 0 {
        "No answer has a verdict yet.".to_owned()
    } else {
        format!(
            "{} of {} verified ({}) · lower bound {:.2}, {trust}",
            c.verified,
            c.answers,
            pct(c.verified_rate),
            c.lower_bound
        )
    };
    let brier = c.brier.map(|b| {
        format!(
            "Brier score {b:.3} over {} answers that said how sure (0 is perfect; always saying 50 % scores 0.25).",
            c.with_confidence
        )
    });
    let chart = (!c.bins.is_empty()).then(|| {
        let rows = c
            .bins
            .into_iter()
            .map(|bin| {
                let stated = (bin.stated * 100.0).round();
                let observed = (bin.observed * 100.0).round();
                view! {
                    <tr>
                        <th scope="row">{format!("{}–{} %", bin.from, bin.to)}</th>
                        <td>{bin.answers}</td>
                        <td><meter class="stated" min="0" max="100" value=stated aria-label=format!("stated {stated:.0} %")></meter>" "{format!("{stated:.0} %")}</td>
                        <td><meter class="observed" min="0" max="100" value=observed aria-label=format!("verified {observed:.0} %")></meter>" "{format!("{observed:.0} %")}</td>
                    </tr>
                }
            })
            .collect_view();
        view! {
            <table class="calibration">
                <caption>"How sure you said, against how often you were verified"</caption>
                <thead>
                    <tr><th scope="col">"Said"</th><th scope="col">"Count"</th><th scope="col">"Stated"</th><th scope="col">"Verified"</th></tr>
                </thead>
                <tbody>{rows}</tbody>
            </table>
        }
    });
    view! {
        <section class="record" aria-label="Your record">
            <p class="muted">{summary}</p>
            {brier.map(|b| view! { <p class="muted">{b}</p> })}
            {chart}
        </section>
    }
}

#[component]
fn MembershipCard(membership: Membership) -> impl IntoView {
    let href = format!("/dashboard/niches/{}/questions", membership.niche.slug);
    let money_href = format!("/dashboard/niches/{}/revenue", membership.niche.slug);
    let knowledge_href = crate::pages::knowledge::knowledge_path(&membership.niche.slug);
    let share = percent(membership.share_bps);
    let (progress, next_line) = match (&membership.next_tier, membership.points_to_next_tier) {
        (Some(next), Some(left)) => {
            let span = (next.min_score - membership.tier.min_score).max(1);
            let done = (membership.score - membership.tier.min_score).clamp(0, span);
            (done * 100 / span, format!("{left} more to {}", next.name))
        }
        _ => (100, "At the top of the ladder.".to_owned()),
    };
    let role = MemberRole::of(&membership.role);
    let status = MemberStatus::of(&membership.status);
    view! {
        <article class="card" data-slug=membership.niche.slug.clone()>
            <h2>{membership.niche.name}</h2>
            <p>
                <strong>{membership.tier.name}</strong>
                " · share "{share}
                " · score "{membership.score}
            </p>
            <p class="muted">{membership.verified_count}" verified · "{membership.pending_count}" in review · "{role.to_string()}" ("{status.to_string()}")"</p>
            <progress max="100" value=progress>{progress}"%"</progress>
            <p class="muted">{next_line}</p>
            <Record calibration=membership.calibration/>
            <p class="links">
                <A href=href>"Open the queue"</A>
                " · "
                <A href=money_href>"Revenue and budget"</A>
                " · "
                <A href=knowledge_href>"Knowledge"</A>
            </p>
        </article>
    }
}
