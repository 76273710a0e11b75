//! Existing Rust docs read as they are: `# Arguments` and `# Parameters` sections give
//! parameters their descriptions, hard-wrapped lines are joined into paragraphs as rustdoc
//! joins them, and the sections written for Rust callers (`# Examples`, `# Panics`,
//! `# Safety`) stay out of the tool's description.
//!
//! The doc comments below are copied unedited from the published crates named above each
//! function (the signatures are reduced to types a model can send): nix 0.31 (MIT), tokio 1.54
//! (MIT), tiktoken-rs 0.12 (MIT), redis 1.2 (BSD-3-Clause), idna 1.1 (MIT OR Apache-2.0),
//! mio 1.2 (MIT) and image 0.25 (MIT OR Apache-2.0). Each is under its crate's license.

#![allow(
    clippy::doc_markdown,
    clippy::doc_lazy_continuation,
    rustdoc::broken_intra_doc_links
)]

use serde_json::Value;
use toolsmith::{Tool, tool};

/// The tool's description and each parameter's.
fn described(tool: &dyn Tool) -> (String, Vec<(String, String)>) {
    let def = tool.definition();
    let properties = def.input_schema()["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let params = properties
        .into_iter()
        .map(|(name, schema)| {
            let text = schema
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            (name, text)
        })
        .collect();
    (def.description().to_owned(), params)
}

fn param<'a>(params: &'a [(String, String)], name: &str) -> &'a str {
    &params
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no parameter `{name}`"))
        .1
}

// nix 0.31.4, `nix::fcntl::fspacectl_all`.
/// Like [`fspacectl`], but will never return incomplete.
///
/// # Arguments
///
/// - `fd`      -   File to operate on
/// - `offset`  -   File offset at which to begin deallocation
/// - `len`     -   Length of the region to deallocate
///
/// # Returns
///
/// Returns `()` on success.  On failure, the region may or may not be partially
/// deallocated.
#[tool(effect = "destructive", allow(description_scope))]
fn fspacectl_all(fd: i32, offset: i64, len: i64) -> bool {
    fd >= 0 && offset >= 0 && len >= 0
}

#[test]
fn nix_fspacectl_all() {
    let (description, params) = described(&FspacectlAll);
    assert_eq!(param(&params, "fd"), "File to operate on");
    assert_eq!(
        param(&params, "offset"),
        "File offset at which to begin deallocation"
    );
    assert_eq!(param(&params, "len"), "Length of the region to deallocate");
    assert_eq!(
        description,
        "Like [`fspacectl`], but will never return incomplete.\n\n# Returns\n\nReturns `()` on success.  On failure, the region may or may not be partially deallocated."
    );
}

// nix 0.31.4, `nix::unistd::fpathconf`.
/// Like `pathconf`, but works with file descriptors instead of paths (see
/// [fpathconf(2)](https://pubs.opengroup.org/onlinepubs/9699919799/functions/pathconf.html))
///
/// # Parameters
///
/// - `fd`:   The file descriptor whose variable should be interrogated
/// - `var`:  The pathconf variable to lookup
///
/// # Returns
///
/// - `Ok(Some(x))`: the variable's limit (for limit variables) or its
///     implementation level (for option variables).  Implementation levels are
///     usually a decimal-coded date, such as 200112 for POSIX 2001.12
/// - `Ok(None)`: the variable has no limit (for limit variables) or is
///     unsupported (for option variables)
/// - `Err(x)`: an error occurred
#[tool(effect = "read", allow(description_scope, unbounded_string))]
fn fpathconf(fd: i32, var: String) -> Option<i64> {
    (fd >= 0 && !var.is_empty()).then_some(1)
}

#[test]
fn nix_fpathconf() {
    let (description, params) = described(&Fpathconf);
    assert_eq!(
        param(&params, "fd"),
        "The file descriptor whose variable should be interrogated"
    );
    assert_eq!(param(&params, "var"), "The pathconf variable to lookup");
    // The first paragraph's two lines are one sentence; the list keeps its items, each
    // item's wrapped lines joined.
    assert!(description.starts_with(
        "Like `pathconf`, but works with file descriptors instead of paths (see [fpathconf(2)](https://pubs.opengroup.org/onlinepubs/9699919799/functions/pathconf.html))\n\n# Returns\n\n- `Ok(Some(x))`: the variable's limit (for limit variables) or its implementation level"
    ), "{description}");
    assert!(
        description.ends_with("\n- `Err(x)`: an error occurred"),
        "{description}"
    );
}

// nix 0.31.4, `nix::mqueue::MqAttr::new`.
/// Create a new message queue attribute
///
/// # Arguments
///
/// - `mq_flags`:   Either `0` or `O_NONBLOCK`.
/// - `mq_maxmsg`:  Maximum number of messages on the queue.
/// - `mq_msgsize`: Maximum message size in bytes.
/// - `mq_curmsgs`: Number of messages currently in the queue.
#[tool(effect = "read", allow(description_scope))]
fn mq_attr_new(mq_flags: i64, mq_maxmsg: i64, mq_msgsize: i64, mq_curmsgs: i64) -> i64 {
    mq_flags + mq_maxmsg + mq_msgsize + mq_curmsgs
}

#[test]
fn nix_mq_attr_new() {
    let (description, params) = described(&MqAttrNew);
    assert_eq!(description, "Create a new message queue attribute");
    assert_eq!(param(&params, "mq_flags"), "Either `0` or `O_NONBLOCK`.");
    assert_eq!(
        param(&params, "mq_maxmsg"),
        "Maximum number of messages on the queue."
    );
    assert_eq!(
        param(&params, "mq_msgsize"),
        "Maximum message size in bytes."
    );
    assert_eq!(
        param(&params, "mq_curmsgs"),
        "Number of messages currently in the queue."
    );
}

// nix 0.31.4, `nix::sys::signal::killpg`.
/// Send a signal to a process group
///
/// # Arguments
///
/// * `pgrp` -   Process group to signal.  If less then or equal 1, the behavior
///              is platform-specific.
/// * `signal` - Signal to send. If `None`, `killpg` will only preform error
///              checking and won't send any signal.
///
/// See Also [killpg(3)](https://pubs.opengroup.org/onlinepubs/9699919799/functions/killpg.html).
#[tool(
    effect = "destructive",
    allow(description_scope, unbounded_string, stringly_enum)
)]
fn killpg(pgrp: i32, signal: Option<String>) -> bool {
    pgrp > 1 && signal.is_some()
}

#[test]
fn nix_killpg() {
    let (description, params) = described(&Killpg);
    assert_eq!(
        param(&params, "pgrp"),
        "Process group to signal.  If less then or equal 1, the behavior is platform-specific."
    );
    assert_eq!(
        param(&params, "signal"),
        "Signal to send. If `None`, `killpg` will only preform error checking and won't send any signal."
    );
    // The section's prose after its list stays in the tool's description.
    assert_eq!(
        description,
        "Send a signal to a process group\n\nSee Also [killpg(3)](https://pubs.opengroup.org/onlinepubs/9699919799/functions/killpg.html)."
    );
}

// nix 0.31.4, `nix::sys::select::select`.
/// Monitors file descriptors for readiness
///
/// Returns the total number of ready file descriptors in all sets. The sets are changed so that all
/// file descriptors that are ready for the given operation are set.
///
/// When this function returns, `timeout` has an implementation-defined value.
///
/// # Parameters
///
/// * `nfds`: The highest file descriptor set in any of the passed `FdSet`s, plus 1. If `None`, this
///   is calculated automatically by calling [`FdSet::highest`] on all descriptor sets and adding 1
///   to the maximum of that.
/// * `readfds`: File descriptors to check for being ready to read.
/// * `writefds`: File descriptors to check for being ready to write.
/// * `errorfds`: File descriptors to check for pending error conditions.
/// * `timeout`: Maximum time to wait for descriptors to become ready (`None` to block
///   indefinitely).
///
/// # References
///
/// [select(2)](https://pubs.opengroup.org/onlinepubs/9699919799/functions/select.html)
///
/// [`FdSet::highest`]: struct.FdSet.html#method.highest
#[tool(effect = "read", allow(description_scope, unbounded_list))]
fn select(
    nfds: Option<i32>,
    readfds: Vec<i32>,
    writefds: Vec<i32>,
    errorfds: Vec<i32>,
    timeout: Option<u64>,
) -> usize {
    let _ = (nfds, timeout);
    readfds.len() + writefds.len() + errorfds.len()
}

#[test]
fn nix_select() {
    let (description, params) = described(&Select);
    assert_eq!(
        param(&params, "nfds"),
        "The highest file descriptor set in any of the passed `FdSet`s, plus 1. If `None`, this is calculated automatically by calling [`FdSet::highest`] on all descriptor sets and adding 1 to the maximum of that."
    );
    assert_eq!(
        param(&params, "timeout"),
        "Maximum time to wait for descriptors to become ready (`None` to block indefinitely)."
    );
    assert_eq!(
        description,
        "Monitors file descriptors for readiness\n\nReturns the total number of ready file descriptors in all sets. The sets are changed so that all file descriptors that are ready for the given operation are set.\n\nWhen this function returns, `timeout` has an implementation-defined value.\n\n# References\n\n[select(2)](https://pubs.opengroup.org/onlinepubs/9699919799/functions/select.html)"
    );
}

// nix 0.31.4, `nix::sys::statfs::statfs`.
/// Describes a mounted file system.
///
/// The result is OS-dependent.  For a portable alternative, see
/// [`statvfs`](crate::sys::statvfs::statvfs).
///
/// # Arguments
///
/// `path` - Path to any file within the file system to describe
#[tool(effect = "read", allow(description_scope, unbounded_string))]
fn statfs(path: String) -> usize {
    path.len()
}

#[test]
fn nix_statfs() {
    let (description, params) = described(&Statfs);
    assert_eq!(
        param(&params, "path"),
        "Path to any file within the file system to describe"
    );
    assert_eq!(
        description,
        "Describes a mounted file system.\n\nThe result is OS-dependent.  For a portable alternative, see [`statvfs`](crate::sys::statvfs::statvfs)."
    );
}

// nix 0.31.4, `nix::sys::resource::getrlimit`.
/// Get the current processes resource limits
///
/// The special value [`RLIM_INFINITY`] indicates that no limit will be
/// enforced.
///
/// # Parameters
///
/// * `resource`: The [`Resource`] that we want to get the limits of.
///
/// # Examples
///
/// ```
/// # use nix::sys::resource::{getrlimit, Resource};
///
/// let (soft_limit, hard_limit) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
/// println!("current soft_limit: {}", soft_limit);
/// println!("current hard_limit: {}", hard_limit);
/// ```
///
/// # References
///
/// [getrlimit(2)](https://pubs.opengroup.org/onlinepubs/9699919799/functions/getrlimit.html#tag_16_215)
///
/// [`Resource`]: enum.Resource.html
#[tool(effect = "read", allow(description_scope, unbounded_string))]
fn getrlimit(resource: String) -> (u64, u64) {
    (resource.len() as u64, u64::MAX)
}

#[test]
fn nix_getrlimit() {
    let (description, params) = described(&Getrlimit);
    assert_eq!(
        param(&params, "resource"),
        "The [`Resource`] that we want to get the limits of."
    );
    // The example, written for Rust callers, is left out; the references stay.
    assert_eq!(
        description,
        "Get the current processes resource limits\n\nThe special value [`RLIM_INFINITY`] indicates that no limit will be enforced.\n\n# References\n\n[getrlimit(2)](https://pubs.opengroup.org/onlinepubs/9699919799/functions/getrlimit.html#tag_16_215)"
    );
}

// tokio 1.54.1, `tokio::runtime::RuntimeMetrics::worker_total_busy_duration`.
/// Returns the amount of time the given worker thread has been busy.
///
/// The worker busy duration starts at zero when the runtime is created and
/// increases whenever the worker is spending time processing work. Using
/// this value can indicate the load of the given worker. If a lot of time
/// is spent busy, then the worker is under load and will check for inbound
/// events less often.
///
/// The timer is monotonically increasing. It is never decremented or reset
/// to zero.
///
/// # Arguments
///
/// `worker` is the index of the worker being queried. The given value must
/// be between 0 and `num_workers()`. The index uniquely identifies a single
/// worker and will continue to identify the worker throughout the lifetime
/// of the runtime instance.
///
/// # Panics
///
/// The method panics when `worker` represents an invalid worker, i.e. is
/// greater than or equal to `num_workers()`.
///
/// # Examples
///
/// ```
/// use tokio::runtime::Handle;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let metrics = Handle::current().metrics();
///
/// let n = metrics.worker_total_busy_duration(0);
/// println!("worker 0 was busy for a total of {:?}", n);
/// # }
/// ```
#[tool(effect = "read", allow(description_scope))]
fn worker_total_busy_duration(worker: usize) -> u64 {
    worker as u64
}

#[test]
fn tokio_worker_total_busy_duration() {
    let (description, params) = described(&WorkerTotalBusyDuration);
    assert_eq!(
        param(&params, "worker"),
        "`worker` is the index of the worker being queried. The given value must be between 0 and `num_workers()`. The index uniquely identifies a single worker and will continue to identify the worker throughout the lifetime of the runtime instance."
    );
    assert_eq!(
        description,
        "Returns the amount of time the given worker thread has been busy.\n\nThe worker busy duration starts at zero when the runtime is created and increases whenever the worker is spending time processing work. Using this value can indicate the load of the given worker. If a lot of time is spent busy, then the worker is under load and will check for inbound events less often.\n\nThe timer is monotonically increasing. It is never decremented or reset to zero."
    );
}

// tiktoken-rs 0.12.1, `tiktoken_rs::model::get_context_size`.
/// Returns the context size of a specified model.
///
/// The context size represents the maximum number of tokens a model can process in a single input.
/// This function checks the model name and returns the corresponding context size.
/// See <https://platform.openai.com/docs/models> for up-to-date information.
///
/// # Arguments
///
/// * `model` - A string slice that holds the name of the model.
///
/// # Examples
///
/// ```
/// use tiktoken_rs::model::get_context_size;
/// let model = "gpt-4-32k";
/// let context_size = get_context_size(model);
/// assert_eq!(context_size, Some(32768));
/// ```
///
/// # Returns
///
/// Returns `None` if the model is not recognized. Callers should handle this case
/// explicitly rather than assuming a default context size.
#[tool(effect = "read", allow(description_scope, unbounded_string))]
fn get_context_size(model: String) -> Option<usize> {
    (!model.is_empty()).then_some(128_000)
}

#[test]
fn tiktoken_get_context_size() {
    let (description, params) = described(&GetContextSize);
    assert_eq!(
        param(&params, "model"),
        "A string slice that holds the name of the model."
    );
    assert_eq!(
        description,
        "Returns the context size of a specified model.\n\nThe context size represents the maximum number of tokens a model can process in a single input. This function checks the model name and returns the corresponding context size. See <https://platform.openai.com/docs/models> for up-to-date information.\n\n# Returns\n\nReturns `None` if the model is not recognized. Callers should handle this case explicitly rather than assuming a default context size."
    );
}

// tiktoken-rs 0.12.1, `tiktoken_rs::get_text_completion_max_tokens`.
/// Returns the maximum number of tokens available for a text completion, given a model and prompt.
///
/// This is for legacy text/prompt completions (single string input). For chat completions,
/// use [`get_chat_completion_max_tokens`] instead.
///
/// Calculates `context_size - prompt_tokens` for the given model.
///
/// # Arguments
///
/// * `model` - A string slice representing the model name, e.g., `"gpt-4o"`.
/// * `prompt` - A string slice containing the prompt text.
///
/// # Errors
///
/// Returns an error if no tokenizer is found for the given model.
///
/// # Examples
///
/// ```
/// use tiktoken_rs::get_text_completion_max_tokens;
///
/// let max_tokens = get_text_completion_max_tokens("gpt-4o", "Translate to French: '").unwrap();
/// ```
#[tool(effect = "read", allow(description_scope, unbounded_string))]
fn get_text_completion_max_tokens(model: String, prompt: String) -> usize {
    128_000usize.saturating_sub(model.len() + prompt.len())
}

#[test]
fn tiktoken_get_text_completion_max_tokens() {
    let (description, params) = described(&GetTextCompletionMaxTokens);
    assert_eq!(
        param(&params, "model"),
        "A string slice representing the model name, e.g., `\"gpt-4o\"`."
    );
    assert_eq!(
        param(&params, "prompt"),
        "A string slice containing the prompt text."
    );
    assert_eq!(
        description,
        "Returns the maximum number of tokens available for a text completion, given a model and prompt.\n\nThis is for legacy text/prompt completions (single string input). For chat completions, use [`get_chat_completion_max_tokens`] instead.\n\nCalculates `context_size - prompt_tokens` for the given model.\n\n# Errors\n\nReturns an error if no tokenizer is found for the given model."
    );
}

// tiktoken-rs 0.12.1, `CoreBPE::split_by_token` (its `# Arguments` section).
/// Tokenize a string and return the decoded tokens using the correct BPE model.
///
/// # Arguments
///
/// * text: A string slice containing the text to be tokenized.
/// * use_special_tokens: A boolean indicating whether to use the special tokens in the BPE model.
///
/// # Returns
///
/// * `Result<Vec<String>>`: A Result containing a vector of decoded tokens as strings, or an error
///   if the string cannot be converted into a valid UTF-8 string.
#[tool(
    effect = "read",
    allow(description_scope, unbounded_string, unbounded_list)
)]
fn split_by_token(text: String, use_special_tokens: bool) -> Vec<String> {
    let _ = use_special_tokens;
    text.split(' ').map(str::to_owned).collect()
}

#[test]
fn tiktoken_split_by_token() {
    let (description, params) = described(&SplitByToken);
    assert_eq!(
        param(&params, "text"),
        "A string slice containing the text to be tokenized."
    );
    assert_eq!(
        param(&params, "use_special_tokens"),
        "A boolean indicating whether to use the special tokens in the BPE model."
    );
    assert!(
        description
            .ends_with("or an error if the string cannot be converted into a valid UTF-8 string."),
        "{description}"
    );
}

// redis 1.2.2, `redis::make_extension_error`.
/// Creates a new Redis error with the `Extension` kind.
///
/// This function is used to create Redis errors for extension error codes
/// that are not directly understood by the library.
///
/// # Arguments
///
/// * `code` - The error code string returned by the Redis server
/// * `detail` - Optional detailed error message. If None, a default message is used.
///
/// # Returns
///
/// A `RedisError` with the `Extension` kind.
#[tool(
    effect = "read",
    allow(description_scope, unbounded_string, dangerous_parameter)
)]
fn make_extension_error(code: String, detail: Option<String>) -> String {
    format!("{code}: {}", detail.unwrap_or_default())
}

#[test]
fn redis_make_extension_error() {
    let (description, params) = described(&MakeExtensionError);
    assert_eq!(
        param(&params, "code"),
        "The error code string returned by the Redis server"
    );
    assert_eq!(
        param(&params, "detail"),
        "Optional detailed error message. If None, a default message is used."
    );
    assert_eq!(
        description,
        "Creates a new Redis error with the `Extension` kind.\n\nThis function is used to create Redis errors for extension error codes that are not directly understood by the library.\n\n# Returns\n\nA `RedisError` with the `Extension` kind."
    );
}

// idna 1.1.0, `idna::uts46::Uts46::to_ascii`.
/// Performs the [ToASCII](https://www.unicode.org/reports/tr46/#ToASCII) operation
/// from UTS #46 with the options indicated.
///
/// # Arguments
///
/// * `domain_name` - The input domain name as UTF-8 bytes. (The UTF-8ness is checked by
///   this method and input that is not well-formed UTF-8 is treated as an error. If you
///   already have a `&str`, call `.as_bytes()` on it.)
/// * `ascii_deny_list` - What ASCII deny list, if any, to apply. The UTS 46
///   _UseSTD3ASCIIRules_ flag or the WHATWG URL Standard forbidden domain code point
///   processing is handled via this argument. Most callers are probably the best off
///   by using [`AsciiDenyList::URL`] here.
/// * `hyphens` - The UTS 46 _CheckHyphens_ flag. Most callers are probably the best
///   off by using [`Hyphens::Allow`] here.
/// * `dns_length` - The UTS 46 _VerifyDNSLength_ flag.
#[tool(effect = "read", allow(description_scope, unbounded_string))]
fn to_ascii(
    domain_name: String,
    ascii_deny_list: String,
    hyphens: String,
    dns_length: bool,
) -> String {
    let _ = (ascii_deny_list, hyphens, dns_length);
    domain_name.to_ascii_lowercase()
}

#[test]
fn idna_to_ascii() {
    let (description, params) = described(&ToAscii);
    assert_eq!(
        description,
        "Performs the [ToASCII](https://www.unicode.org/reports/tr46/#ToASCII) operation from UTS #46 with the options indicated."
    );
    assert_eq!(
        param(&params, "domain_name"),
        "The input domain name as UTF-8 bytes. (The UTF-8ness is checked by this method and input that is not well-formed UTF-8 is treated as an error. If you already have a `&str`, call `.as_bytes()` on it.)"
    );
    assert_eq!(
        param(&params, "hyphens"),
        "The UTS 46 _CheckHyphens_ flag. Most callers are probably the best off by using [`Hyphens::Allow`] here."
    );
    assert_eq!(
        param(&params, "dns_length"),
        "The UTS 46 _VerifyDNSLength_ flag."
    );
}

// mio 1.2.4, `mio::Poll::register` (its `# Arguments` section).
/// Register an [`event::Source`] with the `Poll` instance.
///
/// # Arguments
///
/// `source: &mut S: event::Source`: This is the source of events that the
/// `Poll` instance should monitor for readiness state changes.
///
/// `token: Token`: The caller picks a token to associate with the socket.
/// When [`poll`] returns an event for the handle, this token is included.
/// This allows the caller to map the event to its source. The token
/// associated with the `event::Source` can be changed at any time by
/// calling [`reregister`].
///
/// See documentation on [`Token`] for an example showing how to pick
/// [`Token`] values.
///
/// `interest: Interest`: Specifies which operations `Poll` should monitor
/// for readiness. `Poll` will only return readiness events for operations
/// specified by this argument.
///
/// [`event::Source`]: ./event/trait.Source.html
/// [`poll`]: struct.Poll.html#method.poll
/// [`reregister`]: struct.Registry.html#method.reregister
#[tool(effect = "write", allow(description_scope, unbounded_string))]
fn register(source: String, token: u64, interest: String) -> bool {
    !source.is_empty() && token > 0 && !interest.is_empty()
}

#[test]
fn mio_register() {
    let (description, params) = described(&Register);
    assert_eq!(
        description,
        "Register an [`event::Source`] with the `Poll` instance."
    );
    assert_eq!(
        param(&params, "source"),
        "This is the source of events that the `Poll` instance should monitor for readiness state changes."
    );
    // A parameter written as paragraphs keeps its paragraphs.
    assert_eq!(
        param(&params, "token"),
        "The caller picks a token to associate with the socket. When [`poll`] returns an event for the handle, this token is included. This allows the caller to map the event to its source. The token associated with the `event::Source` can be changed at any time by calling [`reregister`].\n\nSee documentation on [`Token`] for an example showing how to pick [`Token`] values."
    );
    assert_eq!(
        param(&params, "interest"),
        "Specifies which operations `Poll` should monitor for readiness. `Poll` will only return readiness events for operations specified by this argument."
    );
}

/// Cancels a booking. Destructive: nothing is booked
/// or held afterwards. Not for changing a booking.
///
/// * a list item stays
/// * as it was
#[tool(effect = "destructive")]
fn cancel_booking(
    /// The booking's reference, as printed
    /// on the ticket.
    #[arg(length(max = 16))]
    reference: String,
) -> bool {
    !reference.is_empty()
}

#[test]
fn hard_wrapped_doc_lines_reach_the_model_as_one_sentence() {
    let (description, params) = described(&CancelBooking);
    assert_eq!(
        description,
        "Cancels a booking. Destructive: nothing is booked or held afterwards. Not for changing a booking.\n\n* a list item stays\n* as it was"
    );
    assert_eq!(
        param(&params, "reference"),
        "The booking's reference, as printed on the ticket."
    );
}

// image 0.25, `image::imageops::unsharpen`.
/// Performs an unsharpen mask on the supplied image.
///
/// # Arguments:
///
/// * `sigma` - is the amount to blur the image by.
/// * `threshold` - is the threshold for minimal brightness change that will be sharpened.
///
/// This method typically assumes that the input is scene-linear light.
/// If it is not, color distortion may occur.
///
/// See [Digital unsharp masking](https://en.wikipedia.org/wiki/Unsharp_masking#Digital_unsharp_masking) for more information.
#[tool(effect = "write", allow(description_scope))]
fn unsharpen(sigma: f32, threshold: i32) -> bool {
    sigma > 0.0 && threshold >= 0
}

#[test]
fn image_unsharpen_items_end_at_a_blank_line() {
    let (description, params) = described(&Unsharpen);
    assert_eq!(
        param(&params, "sigma"),
        "is the amount to blur the image by."
    );
    assert_eq!(
        param(&params, "threshold"),
        "is the threshold for minimal brightness change that will be sharpened."
    );
    assert!(
        description.contains(
            "This method typically assumes that the input is scene-linear light. If it is not, color distortion may occur."
        ),
        "{description}"
    );
}
