//! PostgreSQL `LISTEN`: another instance wrote something, so wake our feed. On any error the
//! listener reconnects and wakes the feed anyway, which reads whatever it missed.

use std::sync::Arc;
use std::time::Duration;

use sea_orm::DatabaseConnection;
use sea_orm::sqlx::postgres::PgListener;
use tokio::sync::Notify;

use super::CHANNEL;

/// Listen until the process ends.
pub async fn run(db: DatabaseConnection, wake: Arc<Notify>) {
    let pool = db.get_postgres_connection_pool().clone();
    loop {
        let mut listener = match PgListener::connect_with(&pool).await {
            Ok(listener) => listener,
            Err(err) => {
                tracing::warn!(error = %err, "cannot LISTEN; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        if let Err(err) = listener.listen(CHANNEL).await {
            tracing::warn!(error = %err, "LISTEN failed; retrying");
            tokio::time::sleep(Duration::from_secs(1)).await;
            continue;
        }
        // Whatever happened while we were not listening is read now.
        wake.notify_one();
        loop {
            match listener.try_recv().await {
                Ok(Some(_)) => wake.notify_one(),
                Ok(None) => {
                    tracing::info!("the LISTEN connection was lost; reconnecting and catching up");
                    wake.notify_one();
                }
                Err(err) => {
                    tracing::warn!(error = %err, "LISTEN connection failed; reconnecting");
                    wake.notify_one();
                    break;
                }
            }
        }
    }
}
