//! Column shapes every table repeats, so each is written (and checked) once.

use crate::prelude::*;
use crate::sea_query::ExprTrait;

/// A 64-bit auto-incrementing primary key.
pub fn id<T: IntoIden>(name: T) -> ColumnDef {
    ColumnDef::new(name)
        .big_integer()
        .not_null()
        .auto_increment()
        .primary_key()
        .take()
}

/// A required point in time (stored with its zone on PostgreSQL, as ISO text on SQLite).
pub fn timestamp<T: IntoIden>(name: T) -> ColumnDef {
    ColumnDef::new(name)
        .timestamp_with_time_zone()
        .not_null()
        .take()
}

/// An optional point in time.
pub fn timestamp_null<T: IntoIden>(name: T) -> ColumnDef {
    ColumnDef::new(name)
        .timestamp_with_time_zone()
        .null()
        .take()
}

/// A required reference to another row's 64-bit id.
pub fn reference<T: IntoIden>(name: T) -> ColumnDef {
    ColumnDef::new(name).big_integer().not_null().take()
}

/// A required text column whose value must be one of `allowed`: the enum lives in the database
/// as a CHECK so that no writer, whatever its language, can store a state askloop does not know.
pub fn one_of<T: IntoIden + Clone + 'static>(name: T, allowed: &[&str]) -> ColumnDef {
    let values: Vec<String> = allowed.iter().map(|v| (*v).to_owned()).collect();
    ColumnDef::new(name.clone())
        .string()
        .not_null()
        .check(Expr::col(name).is_in(values))
        .take()
}

/// A required integer amount (money in minor units, points, counts) that can never be negative.
pub fn non_negative<T: IntoIden + Clone + 'static>(name: T) -> ColumnDef {
    ColumnDef::new(name.clone())
        .big_integer()
        .not_null()
        .default(0)
        .check(Expr::col(name).gte(0))
        .take()
}

/// A required integer in basis points, 0..=max.
pub fn basis_points<T: IntoIden + Clone + 'static>(name: T, max: i32) -> ColumnDef {
    ColumnDef::new(name.clone())
        .integer()
        .not_null()
        .check(Expr::col(name.clone()).gte(0).and(Expr::col(name).lte(max)))
        .take()
}

/// A foreign key from `table.column` to `target.id`.
pub fn foreign_key<T, C, R>(table: T, column: C, target: R) -> ForeignKeyCreateStatement
where
    T: IntoIden + Clone + 'static,
    C: IntoIden + Clone + 'static,
    R: IntoIden + Clone + 'static,
{
    ForeignKey::create()
        .from(table, column)
        .to(target, Alias::new("id"))
        .on_delete(ForeignKeyAction::Restrict)
        .take()
}
