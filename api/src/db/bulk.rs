//! Many rows of one table in one PostgreSQL statement whose text does not depend on how many
//! there are.
//!
//! A multi-row `INSERT … VALUES (…), (…)` is a different statement for every number of rows: on
//! PostgreSQL each is prepared on its own, kept in the driver's statement cache of each connection
//! (where the intake's sizes, 1 to 32 rows of two tables, crowd out one another), and planned
//! afresh five times on each connection before PostgreSQL settles on a generic plan. Planning was a
//! large share of PostgreSQL's time in intake (docs/benchmarks.md#intake). Here the rows travel as
//! one JSON array in one parameter — each row an array of its values in column order, so the
//! parameter is hardly larger than the values bound one by one — and are unpacked by
//! `jsonb_array_elements`, each value cast to its column's type: one statement per table and set of
//! columns, prepared and planned once a connection, whatever the batch. `jsonb`, not `json`:
//! reading the i-th value of a `json` array parses its text again from the start, so unpacking a
//! batch as `json` took ten times as long as `jsonb`.
//!
//! The size matters: the driver does not set `TCP_NODELAY`, so a statement larger than one TLS
//! record (16 KiB) waits for the server's delayed acknowledgement, about 40 ms
//! (docs/benchmarks.md#intake); [`insert_rows_within`] splits rows where their JSON, as written,
//! would cross a bound. Rows keyed by column name (`json_populate_recordset`) were twice the
//! size and crossed it at 32 loadgen questions.
//!
//! The rows keep their order (`WITH ORDINALITY`): identities are drawn in it, so an append-only
//! log such as the audit log reads back in the order its rows were given.

use chrono::SecondsFormat;
use sea_orm::sea_query::{ColumnType, OptionEnum, Value};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, DbBackend, DbErr, EntityName, EntityTrait, IdenStatic, Iterable,
    Statement,
};
use serde_json::Value as Json;

/// `INSERT INTO` the rows' table every column the rows set, from one JSON parameter, followed by
/// `tail` (an `ON CONFLICT` clause, a `RETURNING` list, or nothing). Every row must set the same
/// columns; a column left unset in all of them takes its default (an identity, say).
pub fn insert_rows<A: ActiveModelTrait>(rows: &[A], tail: &str) -> Result<Statement, DbErr> {
    let mut statements = insert_rows_within(rows, usize::MAX, tail)?;
    statements
        .pop()
        .ok_or_else(|| DbErr::Custom("a bulk insert needs at least one row".into()))
}

/// As [`insert_rows`], split into as few statements as keep each one's parameter within
/// `most_bytes` of JSON, as written (a row larger than that goes alone), in the rows' order:
/// to run one after another, and their returned rows read together.
pub fn insert_rows_within<A: ActiveModelTrait>(
    rows: &[A],
    most_bytes: usize,
    tail: &str,
) -> Result<Vec<Statement>, DbErr> {
    let columns: Vec<<A::Entity as EntityTrait>::Column> =
        <<A::Entity as EntityTrait>::Column as Iterable>::iter()
            .filter(|column| rows.first().is_some_and(|row| row.get(*column).is_set()))
            .collect();
    if columns.is_empty() {
        return Err(DbErr::Custom(
            "a bulk insert needs at least one row and one column".into(),
        ));
    }
    let table = A::Entity::default().table_name().to_owned();
    let mut names = Vec::with_capacity(columns.len());
    let mut reads = Vec::with_capacity(columns.len());
    for (i, column) in columns.iter().enumerate() {
        names.push(format!("\"{}\"", column.as_str()));
        let pg_type = pg_type(column.def().get_column_type()).ok_or_else(|| {
            DbErr::Custom(format!(
                "a bulk insert cannot write column {} of {table}",
                column.as_str()
            ))
        })?;
        reads.push(format!("(r.v->>{i})::{pg_type}"));
    }
    let sql = format!(
        "INSERT INTO \"{table}\" ({}) SELECT {} \
         FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS r(v, n) ORDER BY r.n {tail}",
        names.join(", "),
        reads.join(", "),
    );
    let sql = sql.trim_end();
    let statement = |array: &str| {
        Statement::from_sql_and_values(
            DbBackend::Postgres,
            sql,
            [Value::String(Some(format!("[{array}]")))],
        )
    };
    let mut statements = Vec::new();
    // The rows written so far for the next statement, comma-separated: its array's contents.
    let mut array = String::new();
    for row in rows {
        let mut values = Vec::with_capacity(columns.len());
        for column in &columns {
            let value = row.get(*column).into_value().ok_or_else(|| {
                DbErr::Custom(format!(
                    "every row of a bulk insert sets the same columns; one leaves {} unset",
                    column.as_str()
                ))
            })?;
            values.push(json_of(value, column.as_str())?);
        }
        let written = Json::Array(values).to_string();
        // `[`, `]` and a comma besides the rows.
        if !array.is_empty() && array.len() + written.len() + 3 > most_bytes {
            statements.push(statement(&array));
            array.clear();
        }
        if !array.is_empty() {
            array.push(',');
        }
        array.push_str(&written);
    }
    if !array.is_empty() {
        statements.push(statement(&array));
    }
    Ok(statements)
}

/// The PostgreSQL type a column's text is cast to (text goes into `varchar` columns as it is).
fn pg_type(column: &ColumnType) -> Option<&'static str> {
    Some(match column {
        ColumnType::Boolean => "boolean",
        ColumnType::TinyInteger | ColumnType::SmallInteger => "smallint",
        ColumnType::Integer => "integer",
        ColumnType::BigInteger => "bigint",
        ColumnType::Char(_) | ColumnType::String(_) | ColumnType::Text => "text",
        ColumnType::Json => "json",
        ColumnType::JsonBinary => "jsonb",
        ColumnType::TimestampWithTimeZone => "timestamptz",
        _ => return None,
    })
}

/// A value as its column reads it back from text: SQL `NULL` is JSON `null`, and a JSON value
/// travels as its text (so a JSON `null` stays apart from SQL `NULL`). Timestamps are written to
/// the microsecond, truncated, as the driver binds them.
fn json_of(value: Value, column: &str) -> Result<Json, DbErr> {
    Ok(match value {
        Value::Bool(v) => v.map_or(Json::Null, Json::from),
        Value::TinyInt(v) => v.map_or(Json::Null, Json::from),
        Value::SmallInt(v) => v.map_or(Json::Null, Json::from),
        Value::Int(v) => v.map_or(Json::Null, Json::from),
        Value::BigInt(v) => v.map_or(Json::Null, Json::from),
        Value::String(v) => v.map_or(Json::Null, Json::from),
        Value::Enum(OptionEnum::Some(e)) => Json::from(e.value.into_owned()),
        Value::Enum(OptionEnum::None(_)) => Json::Null,
        Value::Json(v) => v.map_or(Json::Null, |json| Json::from(json.to_string())),
        Value::ChronoDateTimeUtc(v) => v.map_or(Json::Null, |at| {
            Json::from(at.to_rfc3339_opts(SecondsFormat::Micros, true))
        }),
        other => {
            return Err(DbErr::Custom(format!(
                "a bulk insert cannot write column {column}'s value {other:?}"
            )));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};
    use entity::audit_log;
    use sea_orm::{ActiveValue::Set, NotSet};

    fn entry(action: &str, niche_id: Option<i64>) -> audit_log::ActiveModel {
        audit_log::ActiveModel {
            id: NotSet,
            actor: Set("agent".into()),
            action: Set(action.into()),
            subject_type: Set("question".into()),
            subject_id: Set("7".into()),
            niche_id: Set(niche_id),
            detail: Set(serde_json::json!({ "externalId": "a\"b" })),
            created_at: Set(Utc
                .timestamp_opt(1_764_900_000, 123_456_789)
                .single()
                .expect("a valid instant")),
        }
    }

    #[test]
    fn one_statement_text_for_any_number_of_rows() {
        let one = insert_rows(&[entry("a", Some(1))], "").expect("one row");
        let three = insert_rows(
            &[entry("a", Some(1)), entry("b", None), entry("c", Some(2))],
            "",
        )
        .expect("three rows");
        assert_eq!(one.sql, three.sql);
        assert!(
            !one.sql.contains("\"id\""),
            "an unset identity is left to its default"
        );
        assert!(one.sql.ends_with("ORDER BY r.n"), "{}", one.sql);
        assert!(
            one.sql.contains("(r.v->>5)::json"),
            "detail is cast back: {}",
            one.sql
        );
    }

    #[test]
    fn rows_travel_as_one_json_array_in_order_with_nulls_and_micro_timestamps() {
        let stmt = insert_rows(&[entry("a", Some(1)), entry("b", None)], "RETURNING id")
            .expect("two rows");
        assert!(stmt.sql.ends_with("ORDER BY r.n RETURNING id"));
        let values = stmt.values.expect("one parameter").0;
        assert_eq!(values.len(), 1);
        let Value::String(Some(text)) = &values[0] else {
            panic!("the rows are one JSON text: {values:?}");
        };
        let rows: Json = serde_json::from_str(text).expect("valid JSON");
        // actor, action, subject_type, subject_id, niche_id, detail, created_at
        assert_eq!(rows[0][1], "a");
        assert_eq!(rows[1][1], "b");
        assert_eq!(rows[0][4], 1);
        assert_eq!(rows[1][4], Json::Null);
        assert_eq!(rows[0][5], r#"{"externalId":"a\"b"}"#);
        assert_eq!(rows[0][6], "2025-12-05T02:00:00.123456Z");
    }

    #[test]
    fn rows_are_split_where_a_statement_would_outgrow_its_bytes_and_keep_their_order() {
        let rows: Vec<_> = (0..10).map(|i| entry(&format!("a{i}"), Some(i))).collect();
        let whole = insert_rows(&rows, "").expect("ten rows");
        let parameter = |stmt: &Statement| match stmt.values.as_ref().map(|v| &v.0[..]) {
            Some([Value::String(Some(text))]) => text.clone(),
            other => panic!("one JSON text: {other:?}"),
        };
        let one_row = parameter(&insert_rows(&rows[..1], "").expect("a row")).len();
        let split = insert_rows_within(&rows, 3 * one_row, "").expect("split");
        assert!(split.len() > 1, "ten rows do not fit in three rows' bytes");
        let mut actions = Vec::new();
        for stmt in &split {
            assert_eq!(stmt.sql, whole.sql, "the same statement text");
            let text = parameter(stmt);
            assert!(text.len() <= 3 * one_row, "{} bytes", text.len());
            let array: Json = serde_json::from_str(&text).expect("valid JSON");
            for row in array.as_array().expect("an array") {
                actions.push(row[1].as_str().expect("an action").to_owned());
            }
        }
        let expected: Vec<String> = (0..10).map(|i| format!("a{i}")).collect();
        assert_eq!(actions, expected, "every row once, in order");
        let alone = insert_rows_within(&rows[..2], 1, "").expect("tiny bound");
        assert_eq!(alone.len(), 2, "a row larger than the bound goes alone");
    }

    #[test]
    fn no_rows_or_rows_that_differ_are_refused() {
        assert!(insert_rows::<audit_log::ActiveModel>(&[], "").is_err());
        let mut partial = entry("b", None);
        partial.detail = NotSet;
        let err = insert_rows(&[entry("a", None), partial], "").expect_err("a row without detail");
        assert!(err.to_string().contains("detail"), "{err}");
    }
}
