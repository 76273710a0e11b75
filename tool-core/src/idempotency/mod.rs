//! Idempotency for write tools: every call of a `write` or `destructive` tool has a key, and a
//! store remembers what each key's first call returned, so a retry or a duplicate replays it
//! instead of acting twice.
//!
//! How keys are given or derived is here; the stores that keep them are in
//! [`state`](crate::state), with the rest of the runtime's state.

mod key;

pub use crate::spec::IdempotencyScope;
pub(crate) use key::{CallKey, KeyScope, call_key};
pub use key::{IdempotencyPolicy, KEY_PARAMETER, MIN_KEY_LEN, derive_idempotency_key};
