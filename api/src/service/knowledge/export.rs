//! Exporting a niche's current knowledge, batch by batch, as JSON lines.

use entity::knowledge_entries::{self, KnowledgeStatus};
use entity::niches;
use sea_orm::{
    ActiveEnum, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect,
};
use serde_json::json;

use crate::error::ServiceError;
use crate::service::people::access::{self, Viewer};

use super::search::status_word;

/// [`export`] for a person: admins only (the download of the admin pages).
pub async fn export_for<C, F>(
    conn: &C,
    viewer: Option<&Viewer>,
    slug: &str,
    write: F,
) -> Result<u64, ServiceError>
where
    C: ConnectionTrait,
    F: FnMut(serde_json::Map<String, serde_json::Value>) -> Result<(), ServiceError>,
{
    access::admin(viewer)?;
    export(conn, slug, write).await
}

/// How many entries an export reads at a time.
pub(super) const EXPORT_BATCH: u64 = 500;

/// Export niche `slug`'s current entries, oldest first, one record at a time to `write`: each
/// with its provenance — the question, the answer and the option chosen, who answered and who
/// verified (handles) and when, and the line of versions it ends. The records are not yet
/// chained; the caller seals them (`domain::chain`). How many were written.
pub async fn export<C, F>(conn: &C, slug: &str, mut write: F) -> Result<u64, ServiceError>
where
    C: ConnectionTrait,
    F: FnMut(serde_json::Map<String, serde_json::Value>) -> Result<(), ServiceError>,
{
    let niche = niches::Entity::find()
        .filter(niches::Column::Slug.eq(slug.to_lowercase()))
        .one(conn)
        .await?
        .ok_or_else(|| ServiceError::NotFound(format!("no niche '{slug}'")))?;
    let mut after = 0_i64;
    let mut written = 0_u64;
    loop {
        let batch = knowledge_entries::Entity::find()
            .filter(knowledge_entries::Column::NicheId.eq(niche.id))
            .filter(knowledge_entries::Column::Status.eq(KnowledgeStatus::Current))
            .filter(knowledge_entries::Column::Id.gt(after))
            .order_by_asc(knowledge_entries::Column::Id)
            .limit(EXPORT_BATCH)
            .all(conn)
            .await?;
        let Some(last) = batch.last() else {
            return Ok(written);
        };
        after = last.id;
        let handles = crate::service::people::names::handles(
            conn,
            batch
                .iter()
                .flat_map(|e| std::iter::once(e.answered_by).chain(e.verified_by)),
        )
        .await?;
        let lines = knowledge_entries::Entity::find()
            .filter(
                knowledge_entries::Column::QuestionId
                    .is_in(batch.iter().map(|e| e.question_id).collect::<Vec<_>>()),
            )
            .order_by_asc(knowledge_entries::Column::Version)
            .all(conn)
            .await?;
        for entry in batch {
            let versions: Vec<serde_json::Value> = lines
                .iter()
                .filter(|v| v.question_id == entry.question_id)
                .map(|v| json!({"entryId": v.id, "version": v.version, "status": status_word(v.status)}))
                .collect();
            let handle = |id: i64| handles.get(&id).cloned();
            let record = json!({
                "entryId": entry.id,
                "niche": niche.slug,
                "version": entry.version,
                "replaces": entry.replaces,
                "versions": versions,
                "questionId": entry.question_id,
                "title": entry.title,
                "question": entry.question,
                "optionId": entry.option_id,
                "optionLabel": entry.option_label,
                "answer": entry.answer,
                "answeredBy": handle(entry.answered_by),
                "verifiedBy": entry.verified_by.and_then(handle),
                "verification": entry.verification.to_value(),
                "verifiedAt": entry.verified_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            });
            if let serde_json::Value::Object(record) = record {
                write(record)?;
                written += 1;
            }
        }
    }
}
