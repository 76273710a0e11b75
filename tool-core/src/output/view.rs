//! Two views of a result: the typed value the program gets, and what the model reads.

use serde::Serialize;
use serde_json::value::RawValue;

use crate::error::ToolError;
use crate::outcome::{Artifact, ToolOutcome, ViewedResult, raw_data};
use crate::tool::{Emit, Emitted};

/// A tool's result with a view of its own for the model, and artifacts for the application.
///
/// Return `Viewed<T>` (or `Result<Viewed<T>, E>`) from a `#[tool]` function when the model
/// should read something shorter or different from the value the program keeps: a summary of
/// a large record, text instead of JSON, the three fields that matter. The program gets the
/// typed value ([`ToolOutcome::into_result`], MCP's `structuredContent`); every provider's
/// answer carries the view ([`ToolOutcome::for_model`], MCP's `content`). The view is made
/// once, when the tool returns, and is kept with the value, so a replayed idempotent call
/// shows the model the same view.
///
/// The tool's output schema is `T`'s. The output checks (steering text, secrets, large
/// results) run on the view, which is what the model reads; a hand-written output schema is
/// checked on the value. Artifacts ([`artifact`](Self::artifact)) never reach a provider: the
/// application reads them with [`ToolOutcome::artifacts`], and audit records keep them with
/// secrets redacted.
///
/// ```
/// use toolsmith::output::Viewed;
/// use toolsmith::{tool, ToolContext, Toolbox};
///
/// #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
/// struct Hourly {
///     hourly_celsius: Vec<f64>,
/// }
///
/// /// Gets the next day's hourly forecast for a city.
/// #[tool(read_only)]
/// fn forecast(
///     /// City name, for example "Oslo".
///     city: String,
/// ) -> Viewed<Hourly> {
///     let hourly_celsius: Vec<f64> = (0..24).map(|h| 5.0 + f64::from(h % 12)).collect();
///     let high = hourly_celsius.iter().copied().fold(f64::MIN, f64::max);
///     Viewed::new(Hourly { hourly_celsius })
///         .text(format!("{city}: high of {high} °C tomorrow."))
///         .artifact("source", "met.no")
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let toolbox = Toolbox::new().with(Forecast);
/// let out = toolbox.call("forecast", r#"{"city":"Oslo"}"#, &ToolContext::new()).await;
/// // The model reads one line ...
/// assert_eq!(out.to_json(), r#"{"status":"success","data":"Oslo: high of 16 °C tomorrow."}"#);
/// // ... the program keeps all 24 hours, and the artifact.
/// assert_eq!(out.artifacts()[0].name, "source");
/// assert_eq!(out.into_result::<Hourly>().unwrap().hourly_celsius.len(), 24);
/// # });
/// ```
#[derive(Debug)]
#[must_use = "a Viewed does nothing until a tool returns it"]
pub struct Viewed<T> {
    value: T,
    /// The view, as JSON (or why it could not be written); `None`: the model reads the value.
    view: Option<Result<Box<RawValue>, ToolError>>,
    artifacts: Vec<Artifact>,
    /// An artifact that could not be written as JSON.
    broken: Option<ToolError>,
}

impl<T> Viewed<T> {
    /// The value, which the model reads too until a view is set.
    pub fn new(value: T) -> Self {
        Self {
            value,
            view: None,
            artifacts: Vec::new(),
            broken: None,
        }
    }

    /// The model reads `text` (a JSON string; over MCP, a text block).
    ///
    /// ```
    /// let out = toolsmith::output::Viewed::new(42).text("the answer").into_outcome();
    /// assert_eq!(out.to_json(), r#"{"status":"success","data":"the answer"}"#);
    /// ```
    pub fn text(self, text: impl Into<String>) -> Self {
        let text: String = text.into();
        self.view(&text)
    }

    /// The model reads `view`, as JSON. A view serde cannot write as JSON makes the call an
    /// `internal_error`.
    ///
    /// ```
    /// use toolsmith::serde_json::json;
    /// let out = toolsmith::output::Viewed::new(vec![3, 1, 2])
    ///     .view(&json!({"count": 3}))
    ///     .into_outcome();
    /// assert_eq!(out.to_json(), r#"{"status":"success","data":{"count":3}}"#);
    /// assert_eq!(out.data().unwrap().get(), "[3,1,2]");
    /// ```
    pub fn view<V: Serialize + ?Sized>(mut self, view: &V) -> Self {
        self.view = Some(raw_data(view));
        self
    }

    /// Adds an artifact: data for the application and the audit, never for a provider.
    /// An artifact serde cannot write as JSON makes the call an `internal_error`.
    ///
    /// ```
    /// let out = toolsmith::output::Viewed::new("ok")
    ///     .artifact("http_status", 200)
    ///     .into_outcome();
    /// assert_eq!(out.to_json(), r#"{"status":"success","data":"ok"}"#);
    /// assert_eq!(out.artifacts()[0].data, 200);
    /// ```
    pub fn artifact<A: Serialize>(mut self, name: impl Into<String>, data: A) -> Self {
        match serde_json::to_value(data) {
            Ok(data) => self.artifacts.push(Artifact {
                name: name.into(),
                data,
            }),
            Err(err) => {
                self.broken.get_or_insert_with(|| {
                    ToolError::internal(format_args!("an artifact is not JSON: {err}"))
                });
            }
        }
        self
    }

    /// The typed value.
    pub fn value(&self) -> &T {
        &self.value
    }
}

impl<T: Serialize> Viewed<T> {
    /// The outcome: the value for the program, the view for the model (the value when no
    /// view was set), and the artifacts. For a hand-written [`Tool`](crate::Tool).
    ///
    /// ```
    /// use toolsmith::ToolOutcome;
    /// let out = toolsmith::output::Viewed::new(7).text("seven").into_outcome();
    /// assert!(matches!(out, ToolOutcome::Viewed(_)));
    /// ```
    pub fn into_outcome(self) -> ToolOutcome {
        if let Some(err) = self.broken {
            return ToolOutcome::Error(err);
        }
        let value = match raw_data(&self.value) {
            Ok(value) => value,
            Err(err) => return ToolOutcome::Error(err),
        };
        let view = match self.view {
            Some(Ok(view)) => view,
            Some(Err(err)) => return ToolOutcome::Error(err),
            None => value.clone(),
        };
        ToolOutcome::Viewed(Box::new(ViewedResult {
            value,
            view: ToolOutcome::Success(view),
            artifacts: self.artifacts,
        }))
    }
}

/// The output schema of a `Viewed<T>` is `T`'s: the schema describes the typed value.
impl<T: schemars::JsonSchema> schemars::JsonSchema for Viewed<T> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        T::schema_name()
    }

    fn schema_id() -> std::borrow::Cow<'static, str> {
        T::schema_id()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        T::json_schema(generator)
    }

    fn inline_schema() -> bool {
        T::inline_schema()
    }
}

/// What a `#[tool]` function may return as its data: any `Serialize` value, or a
/// [`Viewed`] value with a view of its own.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool's result: it does not implement `serde::Serialize`",
    label = "the tool's result type",
    note = "derive `serde::Serialize` for it (and `schemars::JsonSchema` to give the tool an output schema), or return a type that does"
)]
pub trait ToolReturn {
    /// The outcome of a call that returned this.
    fn into_outcome(self) -> ToolOutcome;

    /// For an inline tool: the data where `emit` says, or the whole outcome.
    ///
    /// # Errors
    ///
    /// When the value does not serialize to JSON.
    fn emit(self, emit: Emit<'_>) -> Result<Emitted, ToolError>;
}

impl<T: Serialize> ToolReturn for T {
    #[inline]
    fn into_outcome(self) -> ToolOutcome {
        match raw_data(&self) {
            Ok(data) => ToolOutcome::Success(data),
            Err(err) => ToolOutcome::Error(err),
        }
    }

    #[inline]
    fn emit(self, emit: Emit<'_>) -> Result<Emitted, ToolError> {
        emit.data(&self)
    }
}

impl<T: Serialize> ToolReturn for Viewed<T> {
    fn into_outcome(self) -> ToolOutcome {
        Viewed::into_outcome(self)
    }

    fn emit(self, _emit: Emit<'_>) -> Result<Emitted, ToolError> {
        match Viewed::into_outcome(self) {
            ToolOutcome::Error(err) => Err(err),
            outcome => Ok(Emitted::Outcome(Box::new(outcome))),
        }
    }
}
