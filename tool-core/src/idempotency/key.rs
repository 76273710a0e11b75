//! Idempotency keys: given by the caller or derived from the call, scoped to the principal
//! and (by default) the run.

use std::time::Duration;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::json::canonical::{arguments_hash, push_hex};
#[cfg(doc)]
use crate::spec::IdempotencyScope;
use crate::validate::canonical::Checked;

/// How keys are made and kept.
///
/// ```
/// let idem = toolsmith::idempotency::IdempotencyPolicy::default();
/// assert_eq!(idem.ttl.as_secs(), 24 * 3600);
/// // A duplicate waits longer than a dead call holds its key.
/// assert!(idem.wait > idem.lease);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdempotencyPolicy {
    /// How long a first result is kept (default 24 h).
    pub ttl: Duration,
    /// How long a duplicate waits for a call still running, before a retryable error
    /// (default 15 s: longer than the lease, so a duplicate of a call whose process died
    /// runs once the dead call's key is free, instead of being told it is still running).
    pub wait: Duration,
    /// How long a running call holds its key without a sign of life (default 10 s). The
    /// reservation is renewed every third of it while the call runs, however long it
    /// takes; if the process running it dies, the key is free again after `lease`, and the
    /// call made again runs with the same key instead of waiting for a day. In an agent run
    /// kept in a checkpoint store, the run's next owner takes the dead call's key over at
    /// once (its fencing token is newer).
    pub lease: Duration,
}

impl Default for IdempotencyPolicy {
    fn default() -> Self {
        Self {
            ttl: Duration::from_secs(24 * 3600),
            wait: Duration::from_secs(15),
            lease: Duration::from_secs(10),
        }
    }
}

/// The name of the parameter through which a caller gives its own key.
pub const KEY_PARAMETER: &str = "idempotency_key";
/// The shortest key a caller may give.
pub const MIN_KEY_LEN: usize = 16;

/// A call's key: the one the tool sees, the one stored (none when the call is an action of
/// its own, deduplicated with nothing), and the arguments' fingerprint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CallKey {
    pub(crate) visible: String,
    pub(crate) stored: Option<String>,
    pub(crate) fingerprint: String,
}

/// The key derived for a call of `tool` with `arguments`: SHA-256 over the tool's name, the
/// principal (keys never cross users: one user's call is never replayed to another), the run
/// (`None` for a tool whose keys are [`Global`](IdempotencyScope::Global)) and the SHA-256
/// arguments' canonical JSON ([`canonical_json`](crate::policy::canonical_json): RFC 8785, so
/// key order and number spelling do not matter), each part framed by its length. The
/// arguments' part is their canonical JSON itself when it is shorter than a SHA-256 digest
/// (32 bytes), and otherwise its digest, the one
/// [`arguments_hash`](crate::policy::arguments_hash) writes out: long arguments are hashed
/// once per call, for the key, the approval and the audit alike, and short ones are hashed
/// with the key's own block, since hashing them apart would cost a block more. The two cannot
/// be taken for each other: the length that frames the part differs. A caller may give its own
/// key instead, in the `idempotency_key` parameter (at least 16 characters).
///
/// A toolbox derives its keys from a call's canonical arguments
/// ([`ToolDefinition::canonical_arguments`](crate::ToolDefinition::canonical_arguments):
/// `null` for an optional parameter is absent, defaults applied). Pass those to derive the
/// key a toolbox derives.
///
/// ```
/// use toolsmith::serde_json::json;
/// use toolsmith::idempotency::derive_idempotency_key;
/// let a = derive_idempotency_key("create_ticket", &json!({"title": "x", "n": 5.0}), Some("ada"), None);
/// let b = derive_idempotency_key("create_ticket", &json!({"n": 5, "title": "x"}), Some("ada"), None);
/// assert_eq!(a, b);
/// assert!(a.starts_with("idem_") && a.len() == 5 + 32);
/// assert_ne!(a, derive_idempotency_key("create_ticket", &json!({"n": 5, "title": "x"}), Some("bob"), None));
/// ```
#[must_use]
pub fn derive_idempotency_key(
    tool: &str,
    arguments: &Value,
    principal: Option<&str>,
    run: Option<&str>,
) -> String {
    derived_key(tool, principal, run, &Checked::new(arguments.clone()))
}

/// The length of a SHA-256 digest: canonical arguments shorter than this are their own part
/// of a derived key.
const DIGEST_LEN: usize = 32;

/// `idem_` + 32 hex digits of SHA-256 over the scope and the arguments' part: their
/// canonical JSON when shorter than [`DIGEST_LEN`], else its digest (made once, and shared
/// with the approval and the audit).
fn derived_key(
    tool: &str,
    principal: Option<&str>,
    run: Option<&str>,
    arguments: &Checked,
) -> String {
    let part = if arguments.text.len() < DIGEST_LEN {
        arguments.text.as_bytes()
    } else {
        &arguments.digest()[..]
    };
    let digest = digest_of(&[
        Some(tool.as_bytes()),
        principal.map(str::as_bytes),
        run.map(str::as_bytes),
        Some(part),
    ]);
    let mut key = String::with_capacity(5 + 32);
    key.push_str("idem_");
    push_hex(&mut key, &digest[..16]);
    key
}

/// SHA-256 over `parts`, each prefixed with its length plus one as a LEB128 varint (an absent
/// part is a single 0), so that no two different lists of parts hash the same bytes. The
/// short prefix keeps a typical key (tool, principal, run, arguments' digest) within one
/// SHA-256 block (55 bytes) or two.
fn digest_of(parts: &[Option<&[u8]>]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    for part in parts {
        match part {
            Some(text) => {
                let mut n = text.len() as u64 + 1;
                let mut prefix = [0u8; 10];
                let mut used = 0;
                loop {
                    let byte = (n & 0x7f) as u8;
                    n >>= 7;
                    if n == 0 {
                        prefix[used] = byte;
                        used += 1;
                        break;
                    }
                    prefix[used] = byte | 0x80;
                    used += 1;
                }
                hasher.update(&prefix[..used]);
                hasher.update(text);
            }
            None => hasher.update([0u8]),
        }
    }
    hasher.finalize().into()
}

/// Whose call it is: the principal always, and the run unless the tool's derived keys are
/// global.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct KeyScope<'a> {
    pub(crate) principal: Option<&'a str>,
    pub(crate) run: Option<&'a str>,
    pub(crate) global: bool,
}

/// A key no other call has: `idem_` + 32 hex digits of SHA-256 over the time, the process,
/// a counter and the call, so that an upstream given it deduplicates nothing but this call's
/// own retries.
fn unique_key(tool: &str, canonical: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let unique = format!("{nanos}:{}:{count}", std::process::id());
    let digest = digest_of(&[
        Some(tool.as_bytes()),
        Some(unique.as_bytes()),
        Some(canonical.as_bytes()),
    ]);
    let mut key = String::with_capacity(5 + 32);
    key.push_str("idem_");
    push_hex(&mut key, &digest[..16]);
    key
}

/// The key of a call of `tool` whose arguments were read as `checked`.
pub(crate) fn call_key(tool: &str, checked: &Checked, scope: KeyScope<'_>) -> CallKey {
    let arguments = &checked.value;
    let given = match arguments {
        Value::Object(map) => map.get(KEY_PARAMETER),
        _ => None,
    };
    let own = given
        .and_then(Value::as_str)
        .filter(|k| k.chars().count() >= MIN_KEY_LEN)
        .map(str::to_owned);
    match own {
        Some(own) => {
            // The fingerprint leaves the caller's key out: it is what a reused key is compared
            // on.
            let mut without_key = arguments.clone();
            if let Value::Object(map) = &mut without_key {
                map.shift_remove(KEY_PARAMETER);
            }
            let fingerprint = arguments_hash(&without_key);
            // A caller's key is scoped like a derived one: the same key from another user is
            // another key.
            let digest = digest_of(&[
                Some(tool.as_bytes()),
                scope.principal.map(str::as_bytes),
                Some(own.as_bytes()),
            ]);
            let mut stored = String::with_capacity(4 + 32);
            stored.push_str("own_");
            push_hex(&mut stored, &digest[..16]);
            CallKey {
                visible: own,
                stored: Some(stored),
                fingerprint,
            }
        }
        // Scoped to the run, and no run: this call is an action of its own.
        None if !scope.global && scope.run.is_none() => CallKey {
            visible: unique_key(tool, &checked.text),
            stored: None,
            fingerprint: String::new(),
        },
        None => {
            let run = if scope.global { None } else { scope.run };
            let key = derived_key(tool, scope.principal, run, checked);
            // Derived from the arguments: the same key is the same arguments.
            CallKey {
                visible: key.clone(),
                stored: Some(key.clone()),
                fingerprint: key,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::digest_of;

    #[test]
    fn different_lists_of_parts_hash_differently() {
        let long = "x".repeat(200);
        let lists: [&[Option<&[u8]>]; 6] = [
            &[Some(b"ab"), Some(b"c")],
            &[Some(b"a"), Some(b"bc")],
            &[Some(b"abc"), None],
            &[Some(b"abc"), Some(b"")],
            &[None, Some(b"abc")],
            &[Some(long.as_bytes()), Some(b"y")],
        ];
        let digests: std::collections::HashSet<[u8; 32]> =
            lists.iter().map(|parts| digest_of(parts)).collect();
        assert_eq!(digests.len(), lists.len());
        // A length past one varint byte still frames the part.
        assert_ne!(
            digest_of(&[Some(long.as_bytes()), Some(b"y")]),
            digest_of(&[Some("x".repeat(201).as_bytes())])
        );
    }
}
