//! One pagination shape for every tool that lists: `items`, `next_cursor`, `has_more`, with
//! cursors the runtime signs and checks.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use crate::context::ToolContext;
use crate::error::{ErrorCode, ToolError};

/// The longest cursor accepted, in bytes: a state of a few hundred bytes, encoded and signed.
pub const MAX_CURSOR_LEN: usize = 1024;

/// One page of a list: the items, the cursor of the next page, and whether there is one.
///
/// The shape is the same for every tool, so a model learns it once: call again with
/// `next_cursor` while `has_more` is true.
///
/// ```
/// use toolsmith::output::{Cursor, Page};
/// use toolsmith::{tool, ToolContext, ToolError, Toolbox};
///
/// /// Lists the user's orders, newest first, a page at a time. Read-only. Not for one order.
/// #[tool(effect = "read")]
/// fn list_orders(
///     ctx: &ToolContext,
///     /// Where to go on from: a previous page's `next_cursor`; leave it out for the first page.
///     cursor: Option<Cursor>,
///     /// How many orders per page.
///     #[arg(range(min = 1, max = 50), default = 10)]
///     limit: usize,
/// ) -> Result<Page<u32>, ToolError> {
///     let start: usize = match &cursor {
///         Some(cursor) => cursor.open(ctx)?,
///         None => 0,
///     };
///     let all: Vec<u32> = (0..25).collect();
///     let end = (start + limit).min(all.len());
///     let items = all[start..end].to_vec();
///     if end < all.len() { Page::more(items, &end, ctx) } else { Ok(Page::last(items)) }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let toolbox = Toolbox::new().with(ListOrders);
/// let ctx = ToolContext::new();
/// let first = toolbox.call("list_orders", r#"{"limit": 20}"#, &ctx).await;
/// let first: Page<u32> = first.into_result().unwrap();
/// assert!(first.has_more);
/// let next = toolsmith::serde_json::json!({"cursor": first.next_cursor, "limit": 20});
/// let second: Page<u32> = toolbox.call("list_orders", next, &ctx).await.into_result().unwrap();
/// assert_eq!(second.items, (20..25).collect::<Vec<_>>());
/// assert!(!second.has_more && second.next_cursor.is_none());
///
/// // A cursor that was changed is refused.
/// let forged = toolsmith::serde_json::json!({"cursor": "eyJ4IjoxfQ.AAAA", "limit": 20});
/// let err = toolbox.call("list_orders", forged, &ctx).await;
/// assert_eq!(err.error().unwrap().code().as_str(), "invalid_arguments");
/// # });
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Page<T> {
    /// The items of this page.
    pub items: Vec<T>,
    /// Pass this back as `cursor` to get the next page; absent on the last page.
    pub next_cursor: Option<Cursor>,
    /// Whether there is a next page.
    pub has_more: bool,
}

impl<T> Page<T> {
    /// The last page: no cursor, no more.
    #[must_use]
    pub fn last(items: Vec<T>) -> Self {
        Self {
            items,
            next_cursor: None,
            has_more: false,
        }
    }

    /// A page with more after it; `state` (what the tool needs to go on, such as an offset or
    /// the last key) is sealed into the cursor.
    ///
    /// # Errors
    ///
    /// When `state` does not serialize, or sealed is longer than [`MAX_CURSOR_LEN`].
    pub fn more<S: Serialize + ?Sized>(
        items: Vec<T>,
        state: &S,
        ctx: &ToolContext,
    ) -> Result<Self, ToolError> {
        Ok(Self {
            items,
            next_cursor: Some(Cursor::seal(state, ctx)?),
            has_more: true,
        })
    }
}

/// An opaque cursor: a tool's state for the next page, signed with the toolbox's key and
/// bound to the tool and to the principal it was given to, so that a cursor that was changed,
/// that another tool (or another deployment) gave out, or that another user's call received,
/// is refused.
///
/// It reads and writes as a string. Several processes serving one fleet share the key with
/// [`State::with_key`](crate::state::State::with_key); by default each toolbox
/// makes its own.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Cursor(String);

impl JsonSchema for Cursor {
    fn schema_name() -> Cow<'static, str> {
        "Cursor".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "maxLength": MAX_CURSOR_LEN,
            "description": "An opaque cursor: a previous page's next_cursor, passed back unchanged"
        })
    }
}

type HmacSha256 = Hmac<Sha256>;

/// The key of cursors sealed outside any toolbox (a tool called directly, in a test).
fn process_key() -> &'static [u8; 32] {
    static KEY: OnceLock<[u8; 32]> = OnceLock::new();
    KEY.get_or_init(crate::keys::random_key)
}

/// The signature of a cursor: over the tool, the principal it was given to, and the state.
fn mac(
    key: &[u8; 32],
    tool: &str,
    principal: &str,
    expires: Option<u64>,
    payload: &[u8],
) -> Option<HmacSha256> {
    let mut mac = HmacSha256::new_from_slice(key).ok()?;
    for part in [tool.as_bytes(), principal.as_bytes()] {
        mac.update(&(part.len() as u64).to_le_bytes());
        mac.update(part);
    }
    // A cursor with an expiry signs it too (a marker first, so no payload of a cursor
    // without one can pass for one with it).
    if let Some(expires) = expires {
        mac.update(b"\xffexpires");
        mac.update(&expires.to_le_bytes());
    }
    mac.update(payload);
    Some(mac)
}

/// Now, in milliseconds since the Unix epoch.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn expired() -> ToolError {
    ToolError::new(
        ErrorCode::InvalidArguments,
        "The cursor has expired. Leave the cursor out to start again from the first page.",
    )
}

fn refused() -> ToolError {
    ToolError::new(
        ErrorCode::InvalidArguments,
        "The cursor is not one this tool gave out: it was changed, or it comes from another tool or server. Pass back a `next_cursor` from this tool unchanged, or leave the cursor out to start from the first page.",
    )
}

impl Cursor {
    /// Seals `state` into a cursor of the tool `ctx` is calling.
    ///
    /// # Errors
    ///
    /// When `state` does not serialize, or sealed is longer than [`MAX_CURSOR_LEN`].
    pub fn seal<S: Serialize + ?Sized>(state: &S, ctx: &ToolContext) -> Result<Self, ToolError> {
        let payload = serde_json::to_vec(state)
            .map_err(|err| ToolError::internal(format_args!("a cursor state: {err}")))?;
        let (tool, key, ttl) = scope(ctx);
        let principal = ctx.principal().unwrap_or_default();
        let expires = ttl
            .map(|ttl| now_ms().saturating_add(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX)));
        let tag = mac(key, tool, principal, expires, &payload)
            .ok_or_else(|| ToolError::internal("the cursor key is unusable"))?
            .finalize()
            .into_bytes();
        let text = match expires {
            Some(expires) => format!(
                "{}.{}.{}",
                URL_SAFE_NO_PAD.encode(&payload),
                URL_SAFE_NO_PAD.encode(expires.to_be_bytes()),
                URL_SAFE_NO_PAD.encode(&tag[..16])
            ),
            None => format!(
                "{}.{}",
                URL_SAFE_NO_PAD.encode(&payload),
                URL_SAFE_NO_PAD.encode(&tag[..16])
            ),
        };
        if text.len() > MAX_CURSOR_LEN {
            return Err(ToolError::internal(format_args!(
                "a cursor of {} bytes is longer than {MAX_CURSOR_LEN}: keep less state in it",
                text.len()
            )));
        }
        Ok(Self(text))
    }

    /// Checks that this cursor was sealed by the tool `ctx` is calling, for the same
    /// principal, with the same key, unchanged, and reads its state back.
    ///
    /// # Errors
    ///
    /// An `invalid_arguments` error for a cursor that was changed or comes from elsewhere,
    /// telling the model to start over without one.
    pub fn open<S: DeserializeOwned>(&self, ctx: &ToolContext) -> Result<S, ToolError> {
        let (tool, key, ttl) = scope(ctx);
        let principal = ctx.principal().unwrap_or_default();
        let parts: Vec<&str> = self.0.splitn(4, '.').collect();
        let (payload, expires, tag) = match parts.as_slice() {
            [payload, tag] => (*payload, None, *tag),
            [payload, expires, tag] => {
                let bytes = URL_SAFE_NO_PAD.decode(expires).map_err(|_| refused())?;
                let bytes: [u8; 8] = bytes.try_into().map_err(|_| refused())?;
                (*payload, Some(u64::from_be_bytes(bytes)), *tag)
            }
            _ => return Err(refused()),
        };
        // A toolbox that limits cursors takes none without an expiry.
        if ttl.is_some() && expires.is_none() {
            return Err(refused());
        }
        let payload = URL_SAFE_NO_PAD.decode(payload).map_err(|_| refused())?;
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| refused())?;
        // The whole 16 bytes, compared in constant time.
        if tag.len() != 16 {
            return Err(refused());
        }
        mac(key, tool, principal, expires, &payload)
            .ok_or_else(refused)?
            .verify_truncated_left(&tag)
            .map_err(|_| refused())?;
        // Checked once the cursor is known to be this tool's: a forged expiry never gets here.
        if expires.is_some_and(|expires| now_ms() > expires) {
            return Err(expired());
        }
        serde_json::from_slice(&payload).map_err(|_| refused())
    }

    /// The cursor as it is sent.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

fn scope(ctx: &ToolContext) -> (&str, &[u8; 32], Option<std::time::Duration>) {
    match ctx.cursor_scope() {
        Some(scope) => (&scope.tool, &scope.key, scope.ttl),
        None => ("", process_key(), None),
    }
}

/// The binding of one paging tool's cursors, for its calls' contexts.
pub(crate) fn cursor_scope(
    tool: &str,
    key: &Arc<[u8; 32]>,
    ttl: Option<std::time::Duration>,
) -> Arc<crate::context::CursorScope> {
    Arc::new(crate::context::CursorScope {
        tool: Arc::from(tool),
        key: Arc::clone(key),
        ttl,
    })
}

/// Whether an output schema is a [`Page`]'s: an object with `items`, `next_cursor` and
/// `has_more`.
pub(crate) fn is_page_schema(schema: &serde_json::Value) -> bool {
    schema
        .get("properties")
        .and_then(serde_json::Value::as_object)
        .is_some_and(|p| {
            p.contains_key("items") && p.contains_key("next_cursor") && p.contains_key("has_more")
        })
}
