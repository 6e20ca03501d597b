//! What differs between the stores' SQL: limits written into SQLite's statements, and `?`
//! placeholders numbered for PostgreSQL.

use sea_orm::{DatabaseConnection, DbBackend, DbErr, Statement};

/// `stmt` with a trailing `LIMIT ?` and `OFFSET ?` written as the integers bound to them, on
/// SQLite; any other statement unchanged.
///
/// SQLite (3.47 on, the bundled one included) reads the value bound to a `LIMIT` or `OFFSET`
/// while it plans, and so marks the statement to be planned again whenever that parameter is
/// bound anew: every run of a cached statement with `LIMIT ?` (each `.one()` of the ORM, each
/// page) was compiled from its text again, schema lookups and all. With the numbers in the text
/// a cached statement runs as it was prepared; a statement's limit is one of a few values (1, a
/// page size), so the statement cache holds a few texts instead of one. Only integers are
/// written into the text.
pub fn fixed_limits(mut stmt: Statement) -> Statement {
    if stmt.db_backend != DbBackend::Sqlite {
        return stmt;
    }
    let Some(values) = stmt.values.as_mut() else {
        return stmt;
    };
    let Some(tail) = [" LIMIT ? OFFSET ?", " LIMIT ?", " OFFSET ?"]
        .into_iter()
        .find(|tail| stmt.sql.ends_with(tail))
    else {
        return stmt;
    };
    let bound = tail.matches('?').count();
    let Some(first) = values.0.len().checked_sub(bound) else {
        return stmt;
    };
    let Some(numbers) = values.0[first..]
        .iter()
        .map(integer)
        .collect::<Option<Vec<i64>>>()
    else {
        return stmt;
    };
    values.0.truncate(first);
    if values.0.is_empty() {
        stmt.values = None;
    }
    stmt.sql.truncate(stmt.sql.len() - tail.len());
    let mut numbers = numbers.into_iter();
    for word in tail.split('?').filter(|w| !w.is_empty()) {
        stmt.sql.push_str(word);
        if let Some(n) = numbers.next() {
            stmt.sql.push_str(&n.to_string());
        }
    }
    stmt
}

/// Every row `select` reads through `conn`, a pool used directly rather than through a [`Db`]
/// (the live feed's), with its limits written in as [`Db`] writes them ([`fixed_limits`]).
pub async fn all_with_fixed_limits<E: sea_orm::EntityTrait>(
    conn: &DatabaseConnection,
    select: sea_orm::Select<E>,
) -> Result<Vec<E::Model>, DbErr> {
    use sea_orm::QueryTrait;
    let stmt = fixed_limits(select.build(conn.get_database_backend()));
    E::find().from_raw_sql(stmt).all(conn).await
}

/// The integer `value` holds, if it is one that fits an `i64`.
fn integer(value: &sea_orm::Value) -> Option<i64> {
    use sea_orm::Value as V;
    match value {
        V::TinyInt(Some(n)) => Some(i64::from(*n)),
        V::SmallInt(Some(n)) => Some(i64::from(*n)),
        V::Int(Some(n)) => Some(i64::from(*n)),
        V::BigInt(Some(n)) => Some(*n),
        V::TinyUnsigned(Some(n)) => Some(i64::from(*n)),
        V::SmallUnsigned(Some(n)) => Some(i64::from(*n)),
        V::Unsigned(Some(n)) => Some(i64::from(*n)),
        V::BigUnsigned(Some(n)) => i64::try_from(*n).ok(),
        _ => None,
    }
}

/// A statement written with `?` placeholders, as `backend` takes it: numbered (`$1`, `$2`, …)
/// for PostgreSQL, as written for SQLite. Only for SQL whose text has no `?` but placeholders.
pub fn statement(backend: DbBackend, sql: &str, values: Vec<sea_orm::Value>) -> Statement {
    Statement::from_sql_and_values(backend, placeholders(backend, sql), values)
}

/// `sql` with its `?` placeholders numbered for PostgreSQL (`$1`, `$2`, …); unchanged for SQLite.
pub fn placeholders(backend: DbBackend, sql: &str) -> String {
    if backend != DbBackend::Postgres {
        return sql.to_owned();
    }
    let mut out = String::with_capacity(sql.len() + 16);
    let mut n = 0;
    for c in sql.chars() {
        if c == '?' {
            n += 1;
            out.push_str(&format!("${n}"));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::{PoolSize, scratch};
    fn sqlite(sql: &str, values: Vec<sea_orm::Value>) -> Statement {
        Statement::from_sql_and_values(DbBackend::Sqlite, sql, values)
    }

    #[test]
    fn a_trailing_limit_and_offset_are_written_as_their_numbers_on_sqlite_only() {
        let one = fixed_limits(sqlite(
            "SELECT a FROM t WHERE b = ? LIMIT ?",
            vec!["x".into(), 1_u64.into()],
        ));
        assert_eq!(one.sql, "SELECT a FROM t WHERE b = ? LIMIT 1");
        assert_eq!(one.values.map(|v| v.0), Some(vec!["x".into()]));

        let page = fixed_limits(sqlite(
            "SELECT a FROM t LIMIT ? OFFSET ?",
            vec![51_i64.into(), 100_i64.into()],
        ));
        assert_eq!(page.sql, "SELECT a FROM t LIMIT 51 OFFSET 100");
        assert_eq!(page.values, None, "no value is left to bind");

        let offset = fixed_limits(sqlite(
            "SELECT a FROM t LIMIT -1 OFFSET ?",
            vec![7_i32.into()],
        ));
        assert_eq!(offset.sql, "SELECT a FROM t LIMIT -1 OFFSET 7");

        // Anything but an integer that fits stays bound, as does any other statement's text.
        for (sql, values) in [
            ("SELECT a FROM t LIMIT ?", vec!["1; DROP TABLE t".into()]),
            ("SELECT a FROM t LIMIT ?", vec![u64::MAX.into()]),
            (
                "SELECT a FROM t LIMIT ?",
                vec![sea_orm::Value::BigInt(None)],
            ),
            ("SELECT a FROM t LIMIT ? OFFSET ?", vec![2_i64.into()]),
            ("SELECT a FROM t WHERE b = ?", vec![3_i64.into()]),
        ] {
            let stmt = sqlite(sql, values);
            assert_eq!(fixed_limits(stmt.clone()), stmt, "{sql}");
        }
        let postgres = Statement::from_sql_and_values(
            DbBackend::Postgres,
            "SELECT a FROM t LIMIT $1",
            [1_i64.into()],
        );
        assert_eq!(fixed_limits(postgres.clone()), postgres);
    }

    #[tokio::test]
    async fn a_page_and_one_row_read_the_same_rows_with_their_limits_written_in() {
        use sea_orm::{EntityTrait, QuerySelect};
        let (_file, db) = scratch::database(PoolSize::OneShot).await;
        let all = entity::contribution_types::Entity::find()
            .all(&db)
            .await
            .expect("read");
        assert!(all.len() >= 3, "the migration's contribution types");
        let page = entity::contribution_types::Entity::find()
            .limit(2)
            .offset(1)
            .all(&db)
            .await
            .expect("read");
        let ids = |rows: &[entity::contribution_types::Model]| {
            rows.iter().map(|r| r.id).collect::<Vec<_>>()
        };
        assert_eq!(ids(&page), ids(&all)[1..3]);
        let straight = all_with_fixed_limits(
            db.reads(),
            entity::contribution_types::Entity::find()
                .limit(2)
                .offset(1),
        )
        .await
        .expect("read");
        assert_eq!(ids(&straight), ids(&page), "the pool read directly");
        let one = entity::contribution_types::Entity::find()
            .one(&db)
            .await
            .expect("read");
        assert_eq!(one.map(|r| r.id), all.first().map(|r| r.id));
    }

    #[test]
    fn placeholders_are_numbered_for_postgres_and_left_for_sqlite() {
        let sql = "UPDATE t SET a = ? WHERE b = ? AND c = ?";
        assert_eq!(
            placeholders(DbBackend::Postgres, sql),
            "UPDATE t SET a = $1 WHERE b = $2 AND c = $3"
        );
        assert_eq!(placeholders(DbBackend::Sqlite, sql), sql);
    }
}
