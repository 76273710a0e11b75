//! How results too large to give a model inline are referred to: their ids (owned by a
//! principal through an HMAC tag), summaries and previews. The stores that keep them are in
//! [`state`](crate::state).

use sha2::Sha256;

/// The scheme and path of a stored result's URI: `toolsmith://results/<id>`.
pub const RESULT_URI_PREFIX: &str = "toolsmith://results/";

/// The id a result is kept under: a new random id, and, for a result of a call with a principal,
/// a tag binding it to that principal (`<id>.<tag>`), so that only that principal reads it.
pub(crate) fn owned_id(key: &[u8; 32], owner: Option<&str>) -> String {
    let id = crate::keys::new_id();
    match owner {
        Some(owner) => {
            let tag = owner_tag(key, &id, owner);
            format!("{id}.{tag}")
        }
        None => id,
    }
}

/// Whether `principal` may read the result kept under `id`: one kept without an owner is
/// read by whoever has its URI; one kept for an owner only by that owner.
pub(crate) fn may_read(key: &[u8; 32], id: &str, principal: Option<&str>) -> bool {
    match id.split_once('.') {
        None => true,
        Some((random, tag)) => principal.is_some_and(|principal| {
            let expected = owner_tag(key, random, principal);
            // Compared in constant time: the tag is a MAC.
            expected.len() == tag.len()
                && expected
                    .bytes()
                    .zip(tag.bytes())
                    .fold(0u8, |diff, (a, b)| diff | (a ^ b))
                    == 0
        }),
    }
}

/// HMAC-SHA256 of a result's random id and its owner, under the toolbox's key, in hex (128
/// bits).
fn owner_tag(key: &[u8; 32], id: &str, owner: &str) -> String {
    use hmac::{Hmac, Mac};
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(key) else {
        return String::new();
    };
    mac.update(b"toolsmith/result/v1\n");
    mac.update(id.as_bytes());
    mac.update(b"\n");
    mac.update(owner.as_bytes());
    mac.finalize().into_bytes()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// What a stored result is, in a sentence: its shape and size.
pub(crate) fn summary(json: &str) -> String {
    let shape = match serde_json::from_str::<serde_json::Value>(json) {
        Ok(serde_json::Value::Array(items)) => {
            let keys = items
                .first()
                .and_then(serde_json::Value::as_object)
                .map(keys)
                .map(|k| format!("; the first item has the keys {k}"))
                .unwrap_or_default();
            format!("a JSON array of {} items{keys}", items.len())
        }
        Ok(serde_json::Value::Object(map)) => {
            format!("a JSON object with {} keys: {}", map.len(), keys(&map))
        }
        Ok(serde_json::Value::String(text)) => {
            format!("a text of {} characters", text.chars().count())
        }
        _ => "a JSON value".to_owned(),
    };
    format!(
        "{shape} ({} bytes of JSON); stored, not shown in full: the preview is its start",
        json.len()
    )
}

/// The first keys of an object, quoted, at most ten.
fn keys(map: &serde_json::Map<String, serde_json::Value>) -> String {
    let shown: Vec<String> = map
        .keys()
        .take(10)
        .map(|k| format!("`{}`", crate::echo::echo_to(k, 40)))
        .collect();
    let more = if map.len() > 10 { ", ..." } else { "" };
    format!("{}{more}", shown.join(", "))
}

/// The start of `json`, at most `max` bytes, cut at a character boundary, with `…` when cut.
pub(crate) fn preview(json: &str, max: usize) -> String {
    if json.len() <= max {
        return json.to_owned();
    }
    let mut end = max;
    while !json.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &json[..end])
}
