//! Cassettes: a model client that records the exchanges of a run to a file, and plays them
//! back in a later run, failing on the first request that differs from the one recorded.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agent::{ModelClient, ModelError, ModelRequest};
use crate::dialect::Dialect;
use crate::json::text::{cut, escape};
use crate::tool::BoxFuture;

/// One request and what the model answered, one JSON line of a cassette file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Exchange {
    dialect: Dialect,
    turn: u32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    headers: Vec<(String, String)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model: Option<String>,
    request: Value,
    #[serde(flatten)]
    answer: Answer,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Answer {
    Response(Value),
    Error(String),
}

/// A [`ModelClient`] that records a run's exchanges with a model to a file, or plays them
/// back. Record once against the real model ([`record`](Self::record)), commit the file,
/// and every later test run [`replay`](Self::replay)s it: no network, no cost, the same
/// answers. A request that differs from the recorded one (a changed prompt, tool
/// description or schema, a call answered differently) fails the run with an error naming
/// the first place it differs, as does a request past the end of the cassette;
/// [`unplayed`](Self::unplayed) says whether the run stopped early.
///
/// The file holds one exchange per line (JSON Lines): the dialect, the turn, the request
/// body and headers, and the response (or the error) as the provider's JSON. Fields that
/// change from run to run by design are left out of the comparison with
/// [`ignoring`](Self::ignoring).
///
/// ```
/// use toolsmith::agent::{Agent, ScriptedModel};
/// use toolsmith::serde_json::json;
/// use toolsmith::testing::Cassette;
/// use toolsmith::{Dialect, ToolContext, Toolbox};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let path = std::env::temp_dir().join(format!("cassette-doc-{}.jsonl", std::process::id()));
/// let real = ScriptedModel::new([json!({"role": "assistant",
///     "content": [{"type": "text", "text": "Hello."}], "stop_reason": "end_turn"})]);
///
/// // Record against the model.
/// let cassette = Cassette::record(&path, real).unwrap();
/// let agent = Agent::new(Toolbox::new(), Dialect::Anthropic { strict: false }, cassette);
/// let mut state = agent.start("Say hello.");
/// agent.run(&mut state, &ToolContext::new()).await.unwrap();
///
/// // Replay: the same answer, with no model at all.
/// let cassette = Cassette::replay(&path).unwrap();
/// let agent = Agent::new(Toolbox::new(), Dialect::Anthropic { strict: false }, cassette.clone());
/// let mut state = agent.start("Say hello.");
/// agent.run(&mut state, &ToolContext::new()).await.unwrap();
/// assert_eq!(state.answer(), Some("Hello."));
/// assert_eq!(cassette.unplayed(), 0);
///
/// // Another prompt is another request: the replay says where it differs.
/// let cassette = Cassette::replay(&path).unwrap();
/// let agent = Agent::new(Toolbox::new(), Dialect::Anthropic { strict: false }, cassette);
/// let mut state = agent.start("Say goodbye.");
/// let err = agent.run(&mut state, &ToolContext::new()).await.unwrap_err();
/// assert!(err.to_string().contains(r#"at /messages/0/content: recorded "Say hello.", now "Say goodbye.""#));
/// # std::fs::remove_file(&path).unwrap();
/// # });
/// ```
#[derive(Clone)]
pub struct Cassette {
    inner: Arc<Inner>,
    /// The request fields left out, as pointer segments.
    ignored: Arc<[Vec<String>]>,
}

struct Inner {
    path: PathBuf,
    mode: Mode,
}

enum Mode {
    Record {
        client: Box<dyn ModelClient>,
        file: Mutex<File>,
    },
    Replay {
        exchanges: Vec<Exchange>,
        next: Mutex<usize>,
    },
}

impl Cassette {
    /// A cassette that asks `client` and records each exchange to `path` as it happens
    /// (the file is created, or emptied if it exists).
    ///
    /// # Errors
    ///
    /// The file could not be created.
    pub fn record(path: impl AsRef<Path>, client: impl ModelClient) -> io::Result<Self> {
        let path = path.as_ref().to_path_buf();
        let file = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(&path)?;
        Ok(Self::with(
            path,
            Mode::Record {
                client: Box::new(client),
                file: Mutex::new(file),
            },
        ))
    }

    /// A cassette that answers from the exchanges recorded at `path`, in order.
    ///
    /// # Errors
    ///
    /// The file could not be read, or a line of it is not an exchange (the error names the
    /// line).
    pub fn replay(path: impl AsRef<Path>) -> io::Result<Self> {
        let path = path.as_ref().to_path_buf();
        let mut exchanges = Vec::new();
        for (i, line) in BufReader::new(File::open(&path)?).lines().enumerate() {
            let line = line?;
            if line.trim().is_empty() {
                continue;
            }
            let exchange = serde_json::from_str(&line).map_err(|err| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("line {} of the cassette is not an exchange: {err}", i + 1),
                )
            })?;
            exchanges.push(exchange);
        }
        Ok(Self::with(
            path,
            Mode::Replay {
                exchanges,
                next: Mutex::new(0),
            },
        ))
    }

    fn with(path: PathBuf, mode: Mode) -> Self {
        Self {
            inner: Arc::new(Inner { path, mode }),
            ignored: Arc::from([]),
        }
    }

    /// Leaves the request fields at `pointer` out of the comparison (and out of the file
    /// when recording), for fields that change from run to run by design. A `*` segment
    /// stands for any key or index: `/messages/*/metadata`.
    #[must_use]
    pub fn ignoring(mut self, pointer: &str) -> Self {
        let segments = pointer
            .split('/')
            .skip(1)
            .map(|s| s.replace("~1", "/").replace("~0", "~"))
            .collect();
        let mut ignored = self.ignored.to_vec();
        ignored.push(segments);
        self.ignored = Arc::from(ignored);
        self
    }

    /// The recorded exchanges the run has not asked for yet (0 when recording). A run
    /// that stopped sooner than the recorded one leaves some.
    #[must_use]
    pub fn unplayed(&self) -> usize {
        match &self.inner.mode {
            Mode::Record { .. } => 0,
            Mode::Replay { exchanges, next } => exchanges.len().saturating_sub(*lock(next)),
        }
    }

    /// The file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The request as compared and kept: its body without the ignored fields.
    fn kept(&self, request: &ModelRequest) -> Value {
        let mut body = request.body.clone();
        for pointer in self.ignored.iter() {
            remove(&mut body, pointer);
        }
        body
    }

    async fn recording(
        &self,
        client: &dyn ModelClient,
        file: &Mutex<File>,
        request: &ModelRequest,
    ) -> Result<Value, ModelError> {
        let answer = client.complete(request).await;
        let exchange = Exchange {
            dialect: request.dialect,
            turn: request.turn,
            headers: request.headers.clone(),
            model: client.model().map(str::to_owned),
            request: self.kept(request),
            answer: match &answer {
                Ok(response) => Answer::Response(response.clone()),
                Err(err) => Answer::Error(err.message.clone()),
            },
        };
        let mut line = serde_json::to_string(&exchange)
            .map_err(|err| ModelError::new(format!("the exchange could not be written: {err}")))?;
        line.push('\n');
        let mut file = lock(file);
        file.write_all(line.as_bytes())
            .and_then(|()| file.flush())
            .map_err(|err| ModelError::new(format!("the cassette could not be written: {err}")))?;
        answer
    }

    fn replaying(
        &self,
        exchanges: &[Exchange],
        next: &Mutex<usize>,
        request: &ModelRequest,
    ) -> Result<Value, ModelError> {
        let mut next = lock(next);
        let n = *next;
        let Some(recorded) = exchanges.get(n) else {
            return Err(ModelError::new(format!(
                "request {} is past the end of the cassette ({} recorded): the run asks the \
                 model more often than when it was recorded; record it again",
                n + 1,
                exchanges.len()
            )));
        };
        let now = self.kept(request);
        let differs = if recorded.dialect != request.dialect {
            Some(format!(
                "the dialect: recorded {}, now {}",
                recorded.dialect.name(),
                request.dialect.name()
            ))
        } else if recorded.turn != request.turn {
            Some(format!(
                "the turn: recorded {}, now {}",
                recorded.turn, request.turn
            ))
        } else if recorded.headers != request.headers {
            Some(format!(
                "the headers: recorded {:?}, now {:?}",
                recorded.headers, request.headers
            ))
        } else {
            first_difference(&recorded.request, &now, String::new()).map(|(at, was, is)| {
                let at = if at.is_empty() {
                    "the root".to_owned()
                } else {
                    at
                };
                format!("at {at}: recorded {}, now {}", shown(was), shown(is))
            })
        };
        if let Some(differs) = differs {
            return Err(ModelError::new(format!(
                "request {} differs from the recorded one {differs}; record the cassette again \
                 if the change is meant",
                n + 1
            )));
        }
        *next += 1;
        match &recorded.answer {
            Answer::Response(response) => Ok(response.clone()),
            Answer::Error(message) => Err(ModelError::new(message.clone())),
        }
    }
}

impl ModelClient for Cassette {
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<Value, ModelError>> {
        match &self.inner.mode {
            Mode::Record { client, file } => {
                Box::pin(self.recording(client.as_ref(), file, request))
            }
            Mode::Replay { exchanges, next } => {
                let answer = self.replaying(exchanges, next, request);
                Box::pin(async move { answer })
            }
        }
    }

    fn model(&self) -> Option<&str> {
        match &self.inner.mode {
            Mode::Record { client, .. } => client.model(),
            Mode::Replay { exchanges, .. } => exchanges.first().and_then(|e| e.model.as_deref()),
        }
    }
}

impl fmt::Debug for Cassette {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mode = match &self.inner.mode {
            Mode::Record { .. } => "record",
            Mode::Replay { .. } => "replay",
        };
        f.debug_struct("Cassette")
            .field("mode", &mode)
            .field("unplayed", &self.unplayed())
            .finish_non_exhaustive()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A value in a message, cut short.
fn shown(value: Option<&Value>) -> String {
    match value {
        Some(value) => cut(&value.to_string(), 120),
        None => "nothing".to_owned(),
    }
}

/// Where `now` first differs from `was`: the pointer, and the value at it on each side.
fn first_difference<'v>(
    was: &'v Value,
    now: &'v Value,
    at: String,
) -> Option<(String, Option<&'v Value>, Option<&'v Value>)> {
    match (was, now) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, left) in a {
                let inner = format!("{at}/{}", escape(key));
                match b.get(key) {
                    Some(right) => {
                        if let Some(found) = first_difference(left, right, inner) {
                            return Some(found);
                        }
                    }
                    None => return Some((inner, Some(left), None)),
                }
            }
            b.iter()
                .find(|(key, _)| !a.contains_key(*key))
                .map(|(key, right)| (format!("{at}/{}", escape(key)), None, Some(right)))
        }
        (Value::Array(a), Value::Array(b)) => {
            for (i, (left, right)) in a.iter().zip(b).enumerate() {
                if let Some(found) = first_difference(left, right, format!("{at}/{i}")) {
                    return Some(found);
                }
            }
            let i = a.len().min(b.len());
            (a.len() != b.len()).then(|| (format!("{at}/{i}"), a.get(i), b.get(i)))
        }
        _ => (was != now).then_some((at, Some(was), Some(now))),
    }
}

/// Removes what `pointer` (segments, `*` for any) names from `value`.
fn remove(value: &mut Value, pointer: &[String]) {
    let Some((first, rest)) = pointer.split_first() else {
        return;
    };
    match value {
        Value::Object(map) => {
            if rest.is_empty() {
                if first == "*" {
                    map.clear();
                } else {
                    map.shift_remove(first);
                }
            } else if first == "*" {
                map.values_mut().for_each(|v| remove(v, rest));
            } else if let Some(v) = map.get_mut(first) {
                remove(v, rest);
            }
        }
        Value::Array(items) => {
            if first == "*" {
                if rest.is_empty() {
                    items.clear();
                } else {
                    items.iter_mut().for_each(|v| remove(v, rest));
                }
            } else if let Ok(i) = first.parse::<usize>() {
                if rest.is_empty() {
                    if let Some(v) = items.get_mut(i) {
                        *v = Value::Null;
                    }
                } else if let Some(v) = items.get_mut(i) {
                    remove(v, rest);
                }
            }
        }
        _ => {}
    }
}
