//! People for tests: users with a live session, their memberships of niches (any role and
//! status), and the password they sign in with.

use askloop::db::Db;
use askloop::service::audit::Actor;
use askloop::service::people::access::Viewer;
use askloop::service::people::accounts::{self, NewUser, new_token, token_hash};
use askloop::service::people::sessions::SESSION_PREFIX;
use chrono::{Duration, Utc};
use entity::niche_members::{self, MemberRole, MemberStatus};
use entity::{notification_settings, sessions};
use sea_orm::{ActiveModelTrait, ActiveValue::Set, ColumnTrait, EntityTrait, NotSet, QueryFilter};

/// The password every test person has.
pub const PASSWORD: &str = "correct horse battery staple";

/// A person with a live session token.
#[derive(Debug, Clone)]
pub struct Person {
    /// Their user id.
    pub id: i64,
    /// Their handle.
    pub handle: String,
    /// A session token to send as a bearer (or cookie).
    pub token: String,
    /// Whether they are an admin.
    pub admin: bool,
}

impl Person {
    /// The person as the services see them.
    pub fn viewer(&self) -> Viewer {
        Viewer {
            user_id: self.id,
            handle: self.handle.clone(),
            is_admin: self.admin,
        }
    }
}

/// Create `handle` (an admin when `admin`) with [`PASSWORD`] and a session.
pub async fn person(db: &Db, handle: &str, admin: bool) -> Person {
    let user = accounts::create_user(
        db,
        NewUser {
            handle: handle.into(),
            email: format!("{handle}@example.com"),
            password: PASSWORD.into(),
            admin,
        },
        &Actor::Cli,
        Utc::now(),
    )
    .await
    .expect("the person is created");
    let token = new_token(SESSION_PREFIX);
    sessions::ActiveModel {
        id: NotSet,
        user_id: Set(user.id),
        token_hash: Set(token_hash(&token)),
        created_at: Set(Utc::now()),
        expires_at: Set(Utc::now() + Duration::days(1)),
        last_seen_at: Set(Utc::now()),
        user_agent: NotSet,
        client_address: NotSet,
    }
    .insert(db)
    .await
    .expect("a session");
    Person {
        id: user.id,
        handle: user.handle,
        token,
        admin,
    }
}

/// Make `person` a member of `slug` with `role` and `status`.
pub async fn member(db: &Db, slug: &str, person: &Person, role: MemberRole, status: MemberStatus) {
    let member = accounts::add_member(
        db,
        &askloop::live::ChangeHint::none(),
        slug,
        &person.handle,
        role,
        &Actor::Cli,
        Utc::now(),
    )
    .await
    .expect("the membership is created");
    if status != MemberStatus::Active {
        let member = niche_members::Entity::find()
            .filter(niche_members::Column::Id.eq(member.id))
            .one(db)
            .await
            .expect("query")
            .expect("the membership");
        let mut member: niche_members::ActiveModel = member.into();
        member.status = Set(status);
        member.update(db).await.expect("status set");
    }
}

/// An active operator of `slug`.
pub async fn operator(db: &Db, slug: &str, handle: &str) -> Person {
    let p = person(db, handle, false).await;
    member(db, slug, &p, MemberRole::Operator, MemberStatus::Active).await;
    p
}

/// Mark `person`'s address verified, as following the link in their mail does.
pub async fn verified_address(db: &Db, person: &Person) {
    notification_settings::ActiveModel {
        id: NotSet,
        user_id: Set(person.id),
        verified_email: Set(Some(format!("{}@example.com", person.handle))),
        email_verified_at: Set(Some(Utc::now())),
        time_zone: Set("UTC".into()),
        quiet_start_minute: Set(None),
        quiet_end_minute: Set(None),
        quiet_includes_high: Set(false),
        updated_at: Set(Utc::now()),
    }
    .insert(db)
    .await
    .expect("a verified address");
}
