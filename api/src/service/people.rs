//! People and their rights: accounts and API keys, sessions and passwords, who may see and do
//! what, niches and memberships, the admins' decisions and desk, and each person's record.

pub mod access;
pub mod accounts;
pub mod admin;
pub mod admin_desk;
pub mod names;
pub mod niches;
pub mod passwords;
pub mod sessions;
pub mod weighing;
