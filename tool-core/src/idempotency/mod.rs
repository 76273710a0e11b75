//! Idempotency for write tools: every call of a `write` or `destructive` tool has a key, and a
//! store remembers what each key's first call returned, so a retry or a duplicate replays it
//! instead of acting twice.
//!
//! The store trait is in `store`, the in-memory store in `memory`, the Redis store (feature
//! `redis`) in `redis`, and how keys are given or derived in `key`.

mod key;
mod memory;
#[cfg(feature = "redis")]
mod redis;
mod store;

pub use crate::spec::IdempotencyScope;
pub(crate) use key::{CallKey, KeyScope, call_key};
pub use key::{IdempotencyPolicy, KEY_PARAMETER, MIN_KEY_LEN, derive_idempotency_key};
pub use memory::MemoryStore;
#[cfg(feature = "redis")]
pub use redis::RedisStore;
pub use store::{IdempotencyStore, Reservation, StoreError};
