//! Keys: random ones from the operating system, and keys made from an application's secret.
//! On the bottom floor: the state family, stored results, MCP rounds and run states all sign
//! or seal with them.

use sha2::{Digest, Sha256};

/// The shortest secret a signing or sealing key is made from.
pub(crate) const MIN_SECRET: usize = 32;

/// 32 bytes no one can guess, from the operating system's generator (`getrandom`). Should
/// the system have none to give, the process's random hash keys, a counter and the clock go
/// through SHA-256 instead: a key is never left empty.
pub(crate) fn random_key() -> [u8; 32] {
    let mut key = [0u8; 32];
    if getrandom::fill(&mut key).is_ok() {
        return key;
    }
    fallback_key()
}

/// The key of [`random_key`] where the operating system gives none.
fn fallback_key() -> [u8; 32] {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = Sha256::new();
    for _ in 0..2 {
        let mut seed = std::collections::hash_map::RandomState::new().build_hasher();
        seed.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        hasher.update(seed.finish().to_le_bytes());
    }
    hasher.update(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
            .to_le_bytes(),
    );
    hasher.finalize().into()
}

/// A new, unguessable id: 128 random bits, in hex. The URI of a result kept without an owner
/// is a capability: whoever has it can read the result.
pub(crate) fn new_id() -> String {
    let mut id = String::with_capacity(32);
    crate::json::canonical::push_hex(&mut id, &random_key()[..16]);
    id
}

/// Refuses, where a toolbox or server is built, a secret too short to be a key.
pub(crate) fn check_secret(setter: &str, secret: &[u8]) {
    assert!(
        secret.len() >= MIN_SECRET,
        "{setter}: the secret is {} bytes long; give at least {MIN_SECRET} random bytes (a short secret can be guessed, and with it every signature forged)",
        secret.len()
    );
}

/// A 32-byte key made from `secret` (SHA-256), for keys that several processes share.
pub(crate) fn key_from_secret(secret: &[u8]) -> [u8; 32] {
    Sha256::digest(secret).into()
}

/// The longest signed token [`verify`] reads.
const MAX_TOKEN: usize = 16 << 10;

/// `text` in hex, as bytes; `None` for anything else or anything longer than `max` bytes.
pub(crate) fn decode_hex(text: &str, max: usize) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 || text.len() > max * 2 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

fn mac(key: &[u8; 32], purpose: &str, payload: &[u8]) -> Option<hmac::Hmac<Sha256>> {
    use hmac::Mac;
    let mut mac = hmac::Hmac::<Sha256>::new_from_slice(key).ok()?;
    mac.update(purpose.as_bytes());
    mac.update(b"\n");
    mac.update(payload);
    Some(mac)
}

/// `payload` signed under `key` for `purpose` (an HMAC-SHA256 over both): the payload in hex,
/// a dot, the signature in hex. A token signed for one purpose is refused for another.
pub(crate) fn sign(key: &[u8; 32], purpose: &str, payload: &[u8]) -> String {
    use hmac::Mac;
    let mut token = String::with_capacity(payload.len() * 2 + 65);
    crate::json::canonical::push_hex(&mut token, payload);
    token.push('.');
    if let Some(mac) = mac(key, purpose, payload) {
        crate::json::canonical::push_hex(&mut token, &mac.finalize().into_bytes());
    }
    token
}

/// The payload of a token [`sign`] made under `key` for `purpose`, its signature checked in
/// constant time; `None` for a token forged, altered, signed with another key or for another
/// purpose, or longer than 16 KiB.
pub(crate) fn verify(key: &[u8; 32], purpose: &str, token: &str) -> Option<Vec<u8>> {
    use hmac::Mac;
    if token.len() > MAX_TOKEN {
        return None;
    }
    let (payload, signature) = token.split_once('.')?;
    let payload = decode_hex(payload, MAX_TOKEN)?;
    let signature = decode_hex(signature, 32)?;
    mac(key, purpose, &payload)?.verify_slice(&signature).ok()?;
    Some(payload)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_token_holds_only_as_signed() {
        let key = [7u8; 32];
        let token = super::sign(&key, "decision", b"{\"a\":1}");
        assert_eq!(
            super::verify(&key, "decision", &token).as_deref(),
            Some(&b"{\"a\":1}"[..])
        );
        assert_eq!(super::verify(&[8u8; 32], "decision", &token), None);
        assert_eq!(super::verify(&key, "cursor", &token), None);
        let altered = token.replacen("31", "32", 1);
        assert_eq!(super::verify(&key, "decision", &altered), None);
        assert_eq!(super::verify(&key, "decision", "zz.zz"), None);
        assert_eq!(super::verify(&key, "decision", &"a".repeat(40_000)), None);
    }

    #[test]
    fn keys_differ_and_ids_are_hex() {
        assert_ne!(super::random_key(), super::random_key());
        assert_ne!(super::fallback_key(), super::fallback_key());
        let id = super::new_id();
        assert_eq!(id.len(), 32);
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
    }
}
