//! The settings page's mail sections (docs/contract.md#email): the person's address and whether
//! it is verified, their time zone and quiet hours, and what is mailed about each niche.
//!
//! Each section reads on its own, so saving one never resets what is being typed in another. A
//! section re-reads only after a change the server may have reshaped (a new address, a time
//! zone's canonical name); a niche's preferences are what its form shows, so saving one re-reads
//! nothing.

use leptos::prelude::*;

use super::{FieldError, described_by, refusal};
use crate::api::{self, ApiError, ErrorCode};
use crate::components::loaded::Loaded;
use crate::operations::{
    DigestFrequency, MyMailSettings, MyNotificationPreferences, SendVerificationEmail, SetMyEmail,
    SetNotificationPreference, SetQuietHours, Urgency, my_mail_settings,
    my_notification_preferences, send_verification_email, set_my_email,
    set_notification_preference, set_quiet_hours,
};
use crate::session::Session;

type Settings = my_mail_settings::MyMailSettingsMyMailSettings;
type Preference = my_notification_preferences::MyNotificationPreferencesMyNotificationPreferences;

/// Reads the signed-in person's mail settings.
fn mail_settings() -> LocalResource<Result<my_mail_settings::ResponseData, ApiError>> {
    LocalResource::new(|| api::run::<MyMailSettings>(my_mail_settings::Variables))
}

/// A status line saying what a form just did (nothing after a refusal, which shows at its
/// control).
#[component]
fn Done(said: Signal<Option<Result<String, ApiError>>>) -> impl IntoView {
    move || {
        said.get()
            .and_then(Result::ok)
            .map(|text| view! { <p class="notice" role="status">{text}</p> })
    }
}

/// The "Email" section.
#[component]
pub(super) fn EmailSettings() -> impl IntoView {
    let settings = mail_settings();
    // The new address, and whether this askloop mails (then a verification link is on its way).
    let change = Action::new_local(move |(email, mail_on): &(String, bool)| {
        let (email, mail_on) = (email.clone(), *mail_on);
        async move {
            api::send::<SetMyEmail>(set_my_email::Variables {
                email: email.clone(),
            })
            .await?;
            settings.refetch();
            Ok(if mail_on {
                format!("Your address is now {email}. Follow the link mailed to it to verify it.")
            } else {
                format!("Your address is now {email}.")
            })
        }
    });
    let send = Action::new_local(move |_: &()| async move {
        api::send::<SendVerificationEmail>(send_verification_email::Variables).await?;
        Ok("A verification link is on its way. It is valid for 48 hours.".to_owned())
    });
    view! {
        <section class="settings-section" aria-labelledby="email-title">
            <h2 id="email-title">"Email"</h2>
            <p class="lede">"askloop mails you about questions in your niches, but only once your address is verified: nothing but the verification link is sent to it before."</p>
            <Loaded>
                {move || settings.get().map(|result| result.map(|data| view! {
                    <EmailForm settings=data.my_mail_settings change=change send=send/>
                }))}
            </Loaded>
        </section>
    }
}

/// The address, whether it is verified, changing it and asking for a verification link.
#[component]
fn EmailForm(
    settings: Settings,
    change: Action<(String, bool), Result<String, ApiError>>,
    send: Action<(), Result<String, ApiError>>,
) -> impl IntoView {
    let session = Session::get();
    let address = RwSignal::new(settings.email.clone());
    let change_error = Signal::derive(move || refusal(session, change.value().get()));
    let send_error = Signal::derive(move || refusal(session, send.value().get()));
    let (changing, sending) = (change.pending(), send.pending());
    let mail_on = settings.mail_enabled;
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        change.dispatch((address.get_untracked().trim().to_owned(), mail_on));
    };
    let status = if settings.email_verified {
        view! { <span class="badge status-verified" data-fact="verified">"verified"</span> }
            .into_any()
    } else {
        view! { <span class="badge status-unverified" data-fact="verified">"not verified"</span> }
            .into_any()
    };
    let verification = if !settings.mail_enabled {
        view! {
            <p class="banner" id="mail-off">
                "This askloop sends no mail: no mail server is set up (" <code>"ASKLOOP_SMTP_URL"</code>
                "). Your address is kept, but nothing is mailed to it, not even a verification link."
            </p>
        }
        .into_any()
    } else if settings.email_verified {
        view! { <p class="muted">"This address is verified: notifications are mailed to it."</p> }
            .into_any()
    } else {
        view! {
            <div class="verify">
                <p class="muted" id="verify-help">"Follow the link askloop mails you to verify this address. A new link replaces the one before."</p>
                <div class="actions">
                    <button type="button" disabled=sending
                        aria-describedby=move || described_by("verify-help", "verify-error", send_error.get().is_some())
                        on:click=move |_| { send.dispatch(()); }>
                        "Send verification link"
                    </button>
                </div>
                <FieldError id="verify-error" error=send_error/>
                <Done said=send.value().into()/>
            </div>
        }
        .into_any()
    };
    view! {
        <dl class="facts">
            <dt>"Address"</dt><dd data-fact="email"><bdi>{settings.email.clone()}</bdi></dd>
            <dt>"Status"</dt><dd>{status}</dd>
        </dl>
        {verification}
        <form class="card settings-form" on:submit=submit>
            <h3>"Change your address"</h3>
            <label for="email-address">"Email address"</label>
            <input id="email-address" type="email" required maxlength="254" autocomplete="email"
                aria-invalid=move || change_error.get().is_some().to_string()
                aria-describedby=move || format!("{} email-address-limit", described_by("email-address-help", "email-address-error", change_error.get().is_some()))
                prop:value=address on:input=move |ev| address.set(event_target_value(&ev))/>
            <p class="muted hint" id="email-address-help">"A new address is unverified until you follow the link mailed to it."</p>
            <crate::components::notice::LimitNote id="email-address-limit".to_owned() value=address max=254/>
            <FieldError id="email-address-error" error=change_error/>
            <button type="submit" disabled=changing>"Save address"</button>
            <Done said=change.value().into()/>
        </form>
    }
}

/// `HH:MM` for `minute` minutes after midnight.
fn clock(minute: i64) -> String {
    format!("{:02}:{:02}", minute / 60, minute % 60)
}

/// Minutes after midnight for a time field's `HH:MM`; `None` for an empty or partial field.
fn minutes(time: &str) -> Option<i64> {
    let (hours, minutes) = time.split_once(':')?;
    let minutes = minutes.get(..2).unwrap_or(minutes);
    Some(hours.parse::<i64>().ok()? * 60 + minutes.parse::<i64>().ok()?)
}

/// The browser's own IANA time zone (`Intl`), to offer when it differs from the stored one.
fn browser_time_zone() -> Option<String> {
    let format = js_sys::Intl::DateTimeFormat::new(&js_sys::Array::new(), &js_sys::Object::new());
    js_sys::Reflect::get(&format.resolved_options(), &"timeZone".into())
        .ok()?
        .as_string()
        .filter(|zone| !zone.is_empty())
}

/// Every IANA time zone this browser knows (`Intl.supportedValuesOf('timeZone')`), "UTC"
/// first, for the time zone field's suggestions; just "UTC" in a browser without it. The
/// server still checks what is sent.
fn known_time_zones() -> Vec<String> {
    use wasm_bindgen::{JsCast, JsValue};
    let mut zones = vec!["UTC".to_owned()];
    let listed = js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str("Intl"))
        .ok()
        .and_then(|intl| {
            let list = js_sys::Reflect::get(&intl, &JsValue::from_str("supportedValuesOf")).ok()?;
            let list: js_sys::Function = list.dyn_into().ok()?;
            list.call1(&intl, &JsValue::from_str("timeZone")).ok()
        })
        .and_then(|array| array.dyn_into::<js_sys::Array>().ok());
    if let Some(array) = listed {
        zones.extend(
            array
                .iter()
                .filter_map(|zone| zone.as_string())
                .filter(|zone| zone != "UTC"),
        );
    }
    zones
}

/// What the quiet-hours form sends.
#[derive(Clone)]
struct QuietChoice {
    time_zone: String,
    /// Start and end, minutes after midnight; none clears them.
    hours: Option<(i64, i64)>,
    include_high: bool,
}

/// The "Quiet hours and time zone" section.
#[component]
pub(super) fn QuietHoursSettings() -> impl IntoView {
    let settings = mail_settings();
    let session = crate::session::Session::get();
    let save = Action::new_local(move |choice: &QuietChoice| {
        let choice = choice.clone();
        async move {
            let saved = api::run::<SetQuietHours>(set_quiet_hours::Variables {
                time_zone: choice.time_zone.trim().to_owned(),
                quiet_hours: choice
                    .hours
                    .map(|(start, end)| set_quiet_hours::QuietHoursInput {
                        start_minute: start,
                        end_minute: end,
                    }),
                include_high: choice.include_high,
            })
            .await?;
            // Exact times on every page now show in the zone as the server named it.
            session.set_time_zone(saved.set_quiet_hours.time_zone);
            settings.refetch();
            Ok(match choice.hours {
                Some((start, end)) => format!(
                    "Saved: quiet hours from {} to {}, in {}.",
                    clock(start),
                    clock(end),
                    choice.time_zone.trim()
                ),
                None => format!(
                    "Saved: no quiet hours, time zone {}. Mail is sent whenever it is due.",
                    choice.time_zone.trim()
                ),
            })
        }
    });
    view! {
        <section class="settings-section" aria-labelledby="quiet-title">
            <h2 id="quiet-title">"Quiet hours and time zone"</h2>
            <p class="lede">"During quiet hours, mail other than high urgency waits for their end; a daily digest comes at 08:00 in your time zone."</p>
            <Loaded>
                {move || settings.get().map(|result| result.map(|data| view! {
                    <QuietHoursForm settings=data.my_mail_settings save=save/>
                }))}
            </Loaded>
        </section>
    }
}

/// The time zone, quiet hours' start and end, and whether they hold back high urgency too.
#[component]
fn QuietHoursForm(
    settings: Settings,
    save: Action<QuietChoice, Result<String, ApiError>>,
) -> impl IntoView {
    let session = Session::get();
    let stored_zone = settings.time_zone.clone();
    let time_zone = RwSignal::new(settings.time_zone.clone());
    let (stored_start, stored_end) = settings
        .quiet_hours
        .as_ref()
        .map(|q| (clock(q.start_minute), clock(q.end_minute)))
        .unwrap_or_default();
    let start = RwSignal::new(stored_start);
    let end = RwSignal::new(stored_end);
    let include_high = RwSignal::new(settings.quiet_includes_high);
    // Quiet hours are checked here (both or neither, different times), so a refusal with
    // `BAD_USER_INPUT` can only be about the time zone: it shows next to that field.
    let hours_error = RwSignal::new(None::<String>);
    let refused = Signal::derive(move || save.value().get().and_then(Result::err));
    let zone_error = Signal::derive(move || match refused.get() {
        Some(err) if err.code == ErrorCode::BadUserInput => Some(err.to_string()),
        _ => None,
    });
    let other_error = Signal::derive(move || match refused.get() {
        Some(err) if err.code == ErrorCode::BadUserInput || session.ended(&err) => None,
        Some(err) => Some(err.to_string()),
        None => None,
    });
    let busy = save.pending();
    let send = move |hours: Option<(i64, i64)>| {
        save.dispatch(QuietChoice {
            time_zone: time_zone.get_untracked(),
            hours,
            include_high: include_high.get_untracked(),
        });
    };
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let (from, to) = (start.get_untracked(), end.get_untracked());
        let checked = match (minutes(&from), minutes(&to)) {
            (None, None) if from.is_empty() && to.is_empty() => Ok(None),
            (Some(a), Some(b)) if a == b => {
                Err("Quiet hours must start and end at different times.")
            }
            (Some(a), Some(b)) => Ok(Some((a, b))),
            _ => Err("Give quiet hours both a start and an end, or leave both empty."),
        };
        match checked {
            Ok(hours) => {
                hours_error.set(None);
                send(hours);
            }
            Err(text) => hours_error.set(Some(text.to_owned())),
        }
    };
    let clear = move |_| {
        hours_error.set(None);
        start.set(String::new());
        end.set(String::new());
        send(None);
    };
    let browser_zone = browser_time_zone().filter(|zone| *zone != stored_zone);
    let offer = browser_zone.map(|zone| {
        let label = format!("Use this browser's time zone ({zone})");
        view! {
            <button type="button" class="secondary small" on:click=move |_| time_zone.set(zone.clone())>
                {label}
            </button>
        }
    });
    let stored_hours = match &settings.quiet_hours {
        Some(q) => format!(
            "from {} to {}{}",
            clock(q.start_minute),
            clock(q.end_minute),
            if settings.quiet_includes_high {
                ", high urgency included"
            } else {
                ""
            }
        ),
        None => "none".to_owned(),
    };
    let zone_invalid = move || zone_error.get().is_some();
    let hours_invalid = move || hours_error.get().is_some();
    view! {
        <dl class="facts">
            <dt>"Time zone"</dt><dd data-fact="time-zone">{settings.time_zone.clone()}</dd>
            <dt>"Quiet hours"</dt><dd data-fact="quiet-hours">{stored_hours}</dd>
        </dl>
        <form class="card settings-form" on:submit=submit>
            <label for="time-zone">"Time zone"</label>
            <input id="time-zone" type="text" required maxlength="60" autocomplete="off" spellcheck="false"
                list="time-zones"
                aria-invalid=move || zone_invalid().to_string()
                aria-describedby=move || format!("{} time-zone-limit", described_by("time-zone-help", "time-zone-error", zone_invalid()))
                prop:value=time_zone on:input=move |ev| time_zone.set(event_target_value(&ev))/>
            <crate::components::notice::LimitNote id="time-zone-limit".to_owned() value=time_zone max=60/>
            <datalist id="time-zones">
                {known_time_zones().into_iter().map(|zone| view! { <option value=zone/> }).collect_view()}
            </datalist>
            <p class="muted hint" id="time-zone-help">"Type to search the list of IANA zones, such as Europe/Paris or America/New_York. Exact times on every page show in it."</p>
            {offer}
            <FieldError id="time-zone-error" error=zone_error/>
            <fieldset class="choices quiet-hours">
                <legend>"Quiet hours (leave both empty for none)"</legend>
                <div class="time-pair">
                    <div>
                        <label for="quiet-start">"Quiet from"</label>
                        <input id="quiet-start" type="time" step="60"
                            aria-invalid=move || hours_invalid().to_string()
                            aria-describedby=move || described_by("quiet-help", "quiet-error", hours_invalid())
                            prop:value=start on:input=move |ev| start.set(event_target_value(&ev))/>
                    </div>
                    <div>
                        <label for="quiet-end">"Quiet until"</label>
                        <input id="quiet-end" type="time" step="60"
                            aria-invalid=move || hours_invalid().to_string()
                            aria-describedby=move || described_by("quiet-help", "quiet-error", hours_invalid())
                            prop:value=end on:input=move |ev| end.set(event_target_value(&ev))/>
                    </div>
                </div>
                <p class="muted hint" id="quiet-help">"In your time zone; they may cross midnight (22:00 until 07:00)."</p>
                <FieldError id="quiet-error" error=hours_error.into()/>
                <label class="option">
                    <input type="checkbox" prop:checked=include_high
                        on:change=move |ev| include_high.set(event_target_checked(&ev))/>
                    "Hold back high urgency too"
                </label>
            </fieldset>
            <div class="actions">
                <button type="submit" disabled=busy>"Save quiet hours"</button>
                <button type="button" class="secondary" disabled=busy on:click=clear>"Clear quiet hours"</button>
            </div>
            <FieldError id="quiet-save-error" error=other_error/>
            <Done said=save.value().into()/>
        </form>
    }
}

/// The "Notifications per niche" section.
#[component]
pub(super) fn NichePreferences() -> impl IntoView {
    let preferences = LocalResource::new(|| {
        api::run::<MyNotificationPreferences>(my_notification_preferences::Variables)
    });
    view! {
        <section class="settings-section" aria-labelledby="per-niche-title">
            <h2 id="per-niche-title">"Notifications per niche"</h2>
            <p class="lede">"For each niche you belong to: whether to mail you at all, which urgencies at once, and how the rest are gathered."</p>
            <Loaded>
                {move || preferences.get().map(|result| result.map(|data| {
                    let niches = data.my_notification_preferences;
                    if niches.is_empty() {
                        return view! { <p class="empty">"You belong to no niche yet."</p> }.into_any();
                    }
                    view! {
                        <ul class="access-list" aria-label="Your niches' notifications">
                            {niches.into_iter().map(|p| view! { <NichePreferenceForm preference=p/> }).collect_view()}
                        </ul>
                    }
                    .into_any()
                }))}
            </Loaded>
        </section>
    }
}

/// What one niche's form sends.
#[derive(Clone)]
struct PreferenceChoice {
    enabled: bool,
    immediate: Vec<Urgency>,
    digest: DigestFrequency,
}

/// One niche: mail on or off, the urgencies mailed at once, the digest for the rest.
#[component]
fn NichePreferenceForm(preference: Preference) -> impl IntoView {
    let session = Session::get();
    let p = preference;
    let slug = p.niche_slug.clone();
    let name = p.niche_name.clone();
    let enabled = RwSignal::new(p.enabled);
    let immediate = RwSignal::new(p.immediate.clone());
    let digest = RwSignal::new(p.digest.clone());
    let save = {
        let (slug, name) = (slug.clone(), name.clone());
        Action::new_local(move |choice: &PreferenceChoice| {
            let choice = choice.clone();
            let (slug, name) = (slug.clone(), name.clone());
            async move {
                api::send::<SetNotificationPreference>(set_notification_preference::Variables {
                    niche_slug: slug,
                    enabled: choice.enabled,
                    immediate: choice.immediate,
                    digest: choice.digest,
                })
                .await?;
                Ok(format!("Saved what askloop mails you about {name}."))
            }
        })
    };
    let busy = save.pending();
    let error = Signal::derive(move || refusal(session, save.value().get()));
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        // The schema's order, most urgent first, whatever order the boxes were ticked in.
        let mut chosen = immediate.get_untracked();
        chosen.sort_by_key(Urgency::rank);
        save.dispatch(PreferenceChoice {
            enabled: enabled.get_untracked(),
            immediate: chosen,
            digest: digest.get_untracked(),
        });
    };
    let title_id = format!("niche-{slug}-title");
    let error_id = format!("niche-{slug}-error");
    let urgencies = [Urgency::High, Urgency::Normal, Urgency::Low]
        .into_iter()
        .map(|urgency| {
            let id = format!("niche-{slug}-now-{urgency}");
            let label = match urgency {
                Urgency::High => "High",
                Urgency::Normal => "Normal",
                _ => "Low",
            };
            let ticked = {
                let urgency = urgency.clone();
                move || immediate.with(|chosen| chosen.contains(&urgency))
            };
            let toggle = move |ev: leptos::ev::Event| {
                let on = event_target_checked(&ev);
                immediate.update(|chosen| {
                    chosen.retain(|u| *u != urgency);
                    if on {
                        chosen.push(urgency.clone());
                    }
                });
            };
            view! {
                <label class="option">
                    <input id=id type="checkbox" prop:checked=ticked on:change=toggle/>
                    {label}
                </label>
            }
        })
        .collect_view();
    let digests = [
        (DigestFrequency::Hourly, "Hourly digest"),
        (DigestFrequency::Daily, "Daily digest, at 08:00 your time"),
        (DigestFrequency::Off, "No digest: the rest are not mailed"),
    ]
    .into_iter()
    .map(|(choice, label)| {
        let id = format!("niche-{slug}-digest-{choice}");
        let group = format!("niche-{slug}-digest");
        let chosen = {
            let choice = choice.clone();
            move || digest.get() == choice
        };
        view! {
            <label class="option">
                <input id=id type="radio" name=group prop:checked=chosen
                    on:change=move |_| digest.set(choice.clone())/>
                {label}
            </label>
        }
    })
    .collect_view();
    let enabled_id = format!("niche-{slug}-enabled");
    let heading_id = title_id.clone();
    let save_error_id = error_id.clone();
    view! {
        <li class="card access-item niche-preference" data-niche=slug.clone() aria-labelledby=title_id>
            <h3 id=heading_id>{name.clone()}</h3>
            <form class="settings-form" on:submit=submit>
                <label class="option">
                    <input id=enabled_id type="checkbox" prop:checked=enabled
                        on:change=move |ev| enabled.set(event_target_checked(&ev))/>
                    "Mail me about " {name.clone()}
                </label>
                <fieldset class="choices" disabled=move || !enabled.get()>
                    <legend>"Mailed at once"</legend>
                    {urgencies}
                </fieldset>
                <fieldset class="choices" disabled=move || !enabled.get()>
                    <legend>"The rest"</legend>
                    {digests}
                </fieldset>
                <div class="actions">
                    <button type="submit" disabled=busy
                        aria-describedby=move || error.get().map(|_| save_error_id.clone())>
                        "Save"<span class="visually-hidden">" notifications for "{name.clone()}</span>
                    </button>
                </div>
                <FieldError id=error_id error=error/>
                <Done said=save.value().into()/>
            </form>
        </li>
    }
}
