//! People: operators, specialists, observers and admins.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// One row of `users`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "users")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Unique handle used to sign in.
    #[sea_orm(unique)]
    pub handle: String,
    /// Unique email.
    #[sea_orm(unique)]
    pub email: String,
    /// argon2id PHC string.
    pub credential_hash: String,
    /// `admin` or `member`.
    pub role: UserRole,
    /// When the account was made.
    pub created_at: DateTimeUtc,
}

/// Relations are joined explicitly in the services; none are declared.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

/// What a person may do across askloop.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, EnumIter, DeriveActiveEnum, Serialize, Deserialize,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::None)")]
#[serde(rename_all = "snake_case")]
pub enum UserRole {
    /// `admin`.
    #[sea_orm(string_value = "admin")]
    Admin,
    /// `member`.
    #[sea_orm(string_value = "member")]
    Member,
}
