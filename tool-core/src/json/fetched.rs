//! A JSON document read from an HTTP answer, never more than a given number of bytes: an
//! issuer's metadata and keys, an introspection answer, a token endpoint's answer.

use serde_json::Value;

/// The JSON body of `response`, refused past `limit` bytes, when its status is a success.
/// The reason of a refusal names what was asked (`what`) and never echoes the body.
pub(crate) async fn read_json(
    mut response: reqwest::Response,
    what: &str,
    limit: usize,
) -> Result<Value, String> {
    let status = response.status();
    if !status.is_success() {
        return Err(format!("{what} answered {status}"));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|err| format!("{what} cannot be read: {}", err.without_url()))?
    {
        if body.len() + chunk.len() > limit {
            return Err(format!("{what} answered more than {limit} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&body).map_err(|_| format!("{what} answered no JSON"))
}

/// An HTTP client for an authorization server's documents and endpoints: answers within
/// `timeout`, and redirects never followed (a token or a secret is never sent where the
/// server was not asked to send it).
pub(crate) fn client(timeout: std::time::Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap_or_default()
}
