//! Hashing and checking passwords with argon2id. Both are deliberately expensive, so they run on
//! tokio's blocking threads, never on the threads that serve requests, and at most one per core
//! at a time: a flood of sign-ins queues here instead of starving every other request.
//!
//! A sign-in for a handle nobody has is checked against a fixed dummy hash made with the same
//! parameters, so it takes as long as one for a real person: the time of the answer says nothing
//! about which handles exist.

use std::sync::{Arc, LazyLock};

use argon2::Argon2;
use argon2::password_hash::{
    PasswordHash, PasswordHasher, PasswordVerifier, SaltString, rand_core::OsRng,
};
use tokio::sync::Semaphore;

use crate::error::ServiceError;

/// One permit per core (at least one): how many argon2 computations run at once.
static PERMITS: LazyLock<Arc<Semaphore>> = LazyLock::new(|| {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    Arc::new(Semaphore::new(cores.max(1)))
});

/// The hash a sign-in for an unknown handle is checked against: a random password nobody
/// knows, hashed once with the parameters every real hash has.
static DUMMY: LazyLock<Result<String, String>> =
    LazyLock::new(|| hash_now(&crate::service::accounts::new_token("")).map_err(|e| e.to_string()));

#[cfg(test)]
tokio::task_local! {
    /// How many passwords the current test task had checked (counted after each check ran).
    pub(crate) static CHECKS: std::cell::Cell<u32>;
}

fn hash_now(password: &str) -> Result<String, argon2::password_hash::Error> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|hash| hash.to_string())
}

fn matches_now(password: &str, stored: &str) -> Result<bool, ServiceError> {
    let parsed = PasswordHash::new(stored)
        .map_err(|e| ServiceError::Internal(anyhow::anyhow!("stored hash is unreadable: {e}")))?;
    Ok(Argon2::default()
        .verify_password(password.as_bytes(), &parsed)
        .is_ok())
}

/// Run `work` on a blocking thread once a permit is free. The permit goes with the work, so a
/// caller that gives up (a client that hangs up) does not free it before the work is done.
async fn off_the_async_threads<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ServiceError> + Send + 'static,
) -> Result<T, ServiceError> {
    let permit = PERMITS
        .clone()
        .acquire_owned()
        .await
        .map_err(|e| ServiceError::Internal(anyhow::anyhow!("password permits: {e}")))?;
    tokio::task::spawn_blocking(move || {
        let _permit = permit;
        work()
    })
    .await
    .map_err(|e| ServiceError::Internal(anyhow::anyhow!("password work: {e}")))?
}

/// The argon2id hash of `password`, to store.
pub async fn hash(password: &str) -> Result<String, ServiceError> {
    let password = password.to_owned();
    off_the_async_threads(move || {
        hash_now(&password)
            .map_err(|e| ServiceError::Internal(anyhow::anyhow!("hashing a password: {e}")))
    })
    .await
}

/// The hash a sign-in checks the password against: the person's, or the dummy when the handle
/// is nobody's.
fn hash_to_check(stored: Option<&str>) -> Result<&str, ServiceError> {
    match stored {
        Some(stored) => Ok(stored),
        None => DUMMY
            .as_deref()
            .map_err(|e| ServiceError::Internal(anyhow::anyhow!("the dummy password hash: {e}"))),
    }
}

/// Whether `password` is the one `stored` was made from. With no stored hash (an unknown
/// handle) the password is checked all the same, against the dummy, and the answer is `false`.
pub async fn verify(password: &str, stored: Option<&str>) -> Result<bool, ServiceError> {
    let known = stored.is_some();
    let password = password.to_owned();
    let against = hash_to_check(stored)?.to_owned();
    let matched = off_the_async_threads(move || matches_now(&password, &against)).await?;
    #[cfg(test)]
    let _ = CHECKS.try_with(|checks| checks.set(checks.get() + 1));
    Ok(known && matched)
}

/// Make the dummy hash now (at start-up), so the first sign-in for an unknown handle does not
/// take longer than the rest.
pub async fn prepare() -> Result<(), ServiceError> {
    off_the_async_threads(|| {
        hash_to_check(None)?;
        Ok(())
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_dummy_hash_has_the_parameters_of_a_real_one() {
        let real = hash("correct horse battery staple").await.expect("hashed");
        let real = PasswordHash::new(&real).expect("readable");
        let dummy = PasswordHash::new(hash_to_check(None).expect("a dummy")).expect("readable");
        assert_eq!(dummy.algorithm, real.algorithm);
        assert_eq!(dummy.version, real.version);
        assert_eq!(dummy.params, real.params);
        assert_ne!(dummy.salt, real.salt);
    }

    #[tokio::test]
    async fn an_unknown_handle_is_checked_against_the_dummy_and_never_matches() {
        let stored = hash("correct horse battery staple").await.expect("hashed");
        assert_eq!(hash_to_check(Some(&stored)).ok(), Some(stored.as_str()));
        let checks = CHECKS
            .scope(std::cell::Cell::new(0), async {
                assert!(
                    verify("correct horse battery staple", Some(&stored))
                        .await
                        .expect("checked")
                );
                assert!(!verify("wrong", Some(&stored)).await.expect("checked"));
                assert!(
                    !verify("correct horse battery staple", None)
                        .await
                        .expect("checked")
                );
                CHECKS.with(std::cell::Cell::get)
            })
            .await;
        assert_eq!(checks, 3, "every call ran one argon2 check");
    }
}
