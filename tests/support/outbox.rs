//! What askloop queued for the agent: the payloads of the outbox's events of one type.

use entity::deliveries;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder};
use serde_json::Value;

use crate::TestApp;

impl TestApp {
    /// The payloads of the events of type `kind` queued for the agent, oldest first.
    pub async fn events_for_agent(&self, kind: &str) -> Vec<Value> {
        deliveries::Entity::find()
            .filter(deliveries::Column::EventType.eq(kind))
            .order_by_asc(deliveries::Column::Id)
            .all(&self.db)
            .await
            .expect("query the outbox")
            .into_iter()
            .map(|d| {
                let envelope: Value = serde_json::from_str(&d.body).expect("a JSON envelope");
                envelope["payload"].clone()
            })
            .collect()
    }
}
