//! The mail worker (docs/contract.md#email): places planned notifications, claims the due ones
//! person by person, writes one mail per notification sent on its own and one digest per person
//! and niche, sends them through `ASKLOOP_SMTP_URL`, and records each outcome. A send that fails
//! is tried again with the deliveries' backoff; rows are marked sent only after the server took
//! the mail, and every mail carries a Message-ID made from its rows, so a mail re-sent after a
//! crash between the two is recognisably the same one.

use std::collections::BTreeMap;

use chrono::Utc;
use entity::notifications;
use lettre::message::header::{ContentType, Header, HeaderName, HeaderValue};
use lettre::message::{Mailbox, MultiPart, SinglePart};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use rand::Rng;

use super::WorkerContext;
use crate::config::MailSettings;
use crate::domain::delivery::RetryPolicy;
use crate::domain::html::escape;
use crate::domain::text::cap;
use crate::service::reach;
use crate::service::reach::mail::{self, Facts};
use crate::service::reach::operator_hooks::{plain, question_path};

/// How many people's due mail one claim takes.
const PEOPLE_PER_CLAIM: u64 = 20;

/// The longest title in a subject line.
const SUBJECT_TITLE_MAX: usize = 80;

/// The longest question text a mail quotes.
const QUOTE_MAX: usize = 600;

/// The most questions one digest lists; it says how many more wait.
const DIGEST_MAX: usize = 50;

/// Place, claim and send until the process stops.
pub(super) async fn mail_forever(state: WorkerContext, settings: MailSettings) {
    let transport = match AsyncSmtpTransport::<Tokio1Executor>::from_url(&settings.smtp_url) {
        Ok(builder) => builder.timeout(Some(state.config.delivery.timeout)).build(),
        Err(err) => {
            tracing::error!(error = %err, "the SMTP URL cannot be used; no mail will be sent");
            return;
        }
    };
    let policy = RetryPolicy {
        base: state.config.delivery.retry_base,
        max: state.config.delivery.retry_max,
        window: state.config.delivery.retry_window,
    };
    loop {
        if let Err(err) = mail::place_planned(&state.db, Utc::now()).await {
            tracing::warn!(error = %err, "placing notifications failed; trying again shortly");
        }
        match mail::claim_due(
            &state.db,
            PEOPLE_PER_CLAIM,
            state.config.delivery.lease,
            Utc::now(),
        )
        .await
        {
            Ok((_, rows)) if rows.is_empty() => {
                tokio::time::sleep(state.config.delivery.poll).await;
            }
            Ok((token, rows)) => {
                send_claimed(&state, &settings, &transport, &policy, &token, rows).await
            }
            Err(err) => {
                tracing::warn!(error = %err, "claiming notifications failed; trying again shortly");
                tokio::time::sleep(state.config.delivery.poll).await;
            }
        }
    }
}

/// What one mail carries: its rows (sent or failed together) and its message.
struct Outgoing {
    ids: Vec<i64>,
    message: Message,
}

async fn send_claimed(
    state: &WorkerContext,
    settings: &MailSettings,
    transport: &AsyncSmtpTransport<Tokio1Executor>,
    policy: &RetryPolicy,
    token: &str,
    rows: Vec<notifications::Model>,
) {
    let now = Utc::now();
    let facts = match mail::facts(&state.db, &rows).await {
        Ok(facts) => facts,
        Err(err) => {
            tracing::warn!(error = %err, "reading what to mail failed; the claim runs out");
            return;
        }
    };
    let (worth, stale): (Vec<&notifications::Model>, Vec<&notifications::Model>) =
        rows.iter().partition(|row| facts.still_worth_sending(row));
    let stale: Vec<i64> = stale.iter().map(|r| r.id).collect();
    if let Err(err) = mail::finish(&state.db, token, &stale, "dropped", now).await {
        tracing::warn!(error = %err, "dropping settled notifications failed");
    }
    // One mail per row sent alone; one digest per (person, niche).
    let mut digests: BTreeMap<(i64, i64), Vec<&notifications::Model>> = BTreeMap::new();
    let mut mails = Vec::new();
    for row in worth {
        match (row.digest, row.niche_id) {
            (true, Some(niche_id)) => digests
                .entry((row.user_id, niche_id))
                .or_default()
                .push(row),
            _ => mails.push(vec![row]),
        }
    }
    mails.extend(digests.into_values());
    let origin = state.config.link_origin();
    for group in mails {
        let ids: Vec<i64> = group.iter().map(|r| r.id).collect();
        let outgoing = match compose(state, settings, &facts, &group, &origin).await {
            Ok(message) => Outgoing { ids, message },
            // Nothing to try again for (the address cannot take mail, the person is gone).
            Err(Unsendable::Never(err)) => {
                tracing::warn!(error = %err, "a notification cannot be sent; it is dropped");
                let _ = mail::finish(&state.db, token, &ids, "dropped", Utc::now()).await;
                continue;
            }
            Err(Unsendable::Now(err)) => {
                tracing::warn!(error = %err, "a notification could not be written; it is tried again");
                let jitter = rand::rng().random::<f64>();
                let _ =
                    mail::failed(&state.db, token, &group, &err, policy, jitter, Utc::now()).await;
                continue;
            }
        };
        match transport.send(outgoing.message).await {
            Ok(_) => {
                if let Err(err) =
                    mail::finish(&state.db, token, &outgoing.ids, "sent", Utc::now()).await
                {
                    tracing::warn!(error = %err, "a sent notification could not be recorded; it may be sent again");
                } else {
                    tracing::info!(rows = outgoing.ids.len(), "mail sent");
                }
            }
            Err(err) => {
                let error = format!("the mail server did not take it: {err}");
                tracing::info!(error = %error, "mail not sent; it is tried again");
                let jitter = rand::rng().random::<f64>();
                if let Err(err) =
                    mail::failed(&state.db, token, &group, &error, policy, jitter, Utc::now()).await
                {
                    tracing::warn!(error = %err, "a failed send could not be recorded; the claim runs out");
                }
            }
        }
    }
}

/// `List-Unsubscribe` (RFC 2369).
#[derive(Clone)]
struct ListUnsubscribe(String);

impl Header for ListUnsubscribe {
    fn name() -> HeaderName {
        HeaderName::new_from_ascii_str("List-Unsubscribe")
    }
    fn parse(s: &str) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        Ok(Self(s.to_owned()))
    }
    fn display(&self) -> HeaderValue {
        HeaderValue::new(Self::name(), self.0.clone())
    }
}

/// `List-Unsubscribe-Post` (RFC 8058): one click, no page in between.
#[derive(Clone)]
struct ListUnsubscribePost;

impl Header for ListUnsubscribePost {
    fn name() -> HeaderName {
        HeaderName::new_from_ascii_str("List-Unsubscribe-Post")
    }
    fn parse(_: &str) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        Ok(Self)
    }
    fn display(&self) -> HeaderValue {
        HeaderValue::new(Self::name(), "List-Unsubscribe=One-Click".to_owned())
    }
}

/// A mail's two parts: plain text first, then the same as simple HTML.
struct Body {
    text: String,
    html: String,
}

impl Body {
    fn new() -> Self {
        Self {
            text: String::new(),
            html: String::from(
                "<!doctype html><html lang=\"en\"><body style=\"font-family:sans-serif\">",
            ),
        }
    }

    /// A paragraph of text that may come from an agent: escaped, never linked.
    fn para(&mut self, text: &str) {
        self.text.push_str(text);
        self.text.push_str("\n\n");
        self.html.push_str("<p>");
        self.html.push_str(&escape(text).replace('\n', "<br>"));
        self.html.push_str("</p>");
    }

    /// A link of askloop's own.
    fn link(&mut self, label: &str, url: &str) {
        self.text.push_str(&format!("{label}: {url}\n\n"));
        self.html.push_str(&format!(
            "<p><a href=\"{}\">{}</a></p>",
            escape(url),
            escape(label)
        ));
    }

    fn done(mut self) -> MultiPart {
        self.html.push_str("</body></html>");
        MultiPart::alternative()
            .singlepart(
                SinglePart::builder()
                    .header(ContentType::TEXT_PLAIN)
                    .body(self.text),
            )
            .singlepart(
                SinglePart::builder()
                    .header(ContentType::TEXT_HTML)
                    .body(self.html),
            )
    }
}

/// A subject line: one line, no control characters.
fn subject(niche_slug: &str, rest: &str) -> String {
    format!("[askloop/{niche_slug}] {}", plain(rest))
}

/// Why a mail could not be written.
enum Unsendable {
    /// Never will be: drop it.
    Never(String),
    /// Not now (the database did not answer): try again.
    Now(String),
}

impl From<crate::error::ServiceError> for Unsendable {
    fn from(err: crate::error::ServiceError) -> Self {
        Self::Now(err.to_string())
    }
}

impl From<&str> for Unsendable {
    fn from(err: &str) -> Self {
        Self::Never(err.to_owned())
    }
}

impl From<lettre::error::Error> for Unsendable {
    fn from(err: lettre::error::Error) -> Self {
        Self::Never(err.to_string())
    }
}

async fn compose(
    state: &WorkerContext,
    settings: &MailSettings,
    facts: &Facts,
    group: &[&notifications::Model],
    origin: &str,
) -> Result<Message, Unsendable> {
    let first = group.first().ok_or("nothing to write")?;
    let person = facts
        .people
        .get(&first.user_id)
        .ok_or("the person is gone")?;
    let to: Mailbox = person
        .email
        .parse()
        .map_err(|e| Unsendable::Never(format!("the person's address cannot be used: {e}")))?;
    let domain = settings.from.email.domain().to_owned();
    let ids = group
        .iter()
        .map(|r| r.id.to_string())
        .collect::<Vec<_>>()
        .join("-");
    let message_id = format!("<askloop-n{ids}@{domain}>");
    let builder = Message::builder()
        .from(settings.from.clone())
        .to(to)
        .message_id(Some(message_id));
    let now = Utc::now();
    if first.reason == "verify_email" {
        let token = reach::verification_token(&state.db, person.id, &person.email, now).await?;
        let mut body = Body::new();
        body.para(&format!(
            "Someone (we hope you, @{}) asked askloop to send question notifications to this address.",
            person.handle
        ));
        body.link(
            "Verify this address",
            &format!("{origin}/email/verify?token={token}"),
        );
        body.para(&format!(
            "The link works for {} hours. If you did not ask for this, ignore this mail: nothing is sent here until the address is verified.",
            reach::VERIFY_LINK_HOURS
        ));
        return Ok(builder
            .subject("[askloop] Verify your address")
            .multipart(body.done())?);
    }
    let niche_id = first.niche_id.ok_or("a notification without a niche")?;
    let niche = facts.niches.get(&niche_id).ok_or("the niche is gone")?;
    let unsubscribe = reach::unsubscribe_token(&state.db, person.id, niche.id).await?;
    let unsubscribe_url = format!("{origin}/notifications/unsubscribe?token={unsubscribe}");
    let questions: Vec<_> = group
        .iter()
        .filter_map(|r| {
            r.question_id
                .and_then(|id| facts.questions.get(&id))
                .map(|q| (r, q))
        })
        .collect();
    let mut body = Body::new();
    let subject_line = if first.digest {
        body.para(&format!(
            "{} question{} waiting in {}:",
            questions.len(),
            if questions.len() == 1 { " is" } else { "s are" },
            plain(&niche.name)
        ));
        for (_, question) in questions.iter().take(DIGEST_MAX) {
            body.para(&format!(
                "{} ({} urgency)",
                cap(&plain(&question.title), 200),
                reach::urgency_name(question.urgency)
            ));
            body.link(
                "Open it",
                &format!("{origin}{}", question_path(&niche.slug, question.id)),
            );
        }
        if questions.len() > DIGEST_MAX {
            body.para(&format!("… and {} more.", questions.len() - DIGEST_MAX));
            body.link(
                "See them all",
                &format!("{origin}/dashboard/niches/{}", niche.slug),
            );
        }
        subject(
            &niche.slug,
            &format!(
                "{} question{} waiting",
                questions.len(),
                if questions.len() == 1 { "" } else { "s" }
            ),
        )
    } else {
        let (row, question) = questions.first().ok_or("the question is gone")?;
        let opening = match row.reason.as_str() {
            "escalated" => "Nobody has answered this question yet, and its time is running:",
            "escalated_admin" => {
                "This question is still unanswered after its niche's escalation; as an admin you are told now:"
            }
            _ => "A question is waiting for you:",
        };
        body.para(&format!(
            "{opening} {} urgency, in {}.",
            reach::urgency_name(question.urgency),
            plain(&niche.name)
        ));
        body.para(&cap(&plain(&question.title), 200));
        body.para(&cap(&question.question, QUOTE_MAX));
        body.link(
            "Answer it on askloop",
            &format!("{origin}{}", question_path(&niche.slug, question.id)),
        );
        body.para(&format!(
            "It expires at {} UTC.",
            question.expires_at.format("%Y-%m-%d %H:%M")
        ));
        subject(
            &niche.slug,
            &cap(&plain(&question.title), SUBJECT_TITLE_MAX),
        )
    };
    body.link(
        "Choose what askloop mails you",
        &format!("{origin}/dashboard/settings"),
    );
    body.link(
        &format!("Stop mail about {}", plain(&niche.name)),
        &unsubscribe_url,
    );
    Ok(builder
        .subject(subject_line)
        .header(ListUnsubscribe(format!("<{unsubscribe_url}>")))
        .header(ListUnsubscribePost)
        .multipart(body.done())?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_text_is_escaped_and_subjects_are_one_line() {
        assert_eq!(
            escape("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
        assert_eq!(
            subject("roofing", "gpj.\u{202E}exe \u{2067}x\u{2069}"),
            "[askloop/roofing] gpj.exe x",
            "no mark that reorders the subject"
        );
        assert_eq!(
            subject("roofing", "Two\nlines\r\there"),
            "[askloop/roofing] Two lines  here"
        );
        let mut body = Body::new();
        body.para("<b>bold</b> https://evil.example");
        assert!(
            body.html
                .contains("<p>&lt;b&gt;bold&lt;/b&gt; https://evil.example</p>")
        );
        assert!(!body.html.contains("href=\"https://evil"));
    }
}
