//! Rich results: text, images, audio and resources, given to each provider in the form it
//! takes (MCP content blocks, Anthropic and OpenAI image parts), with a text stand-in where a
//! provider has none.

use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

use crate::definition::ToolDefinition;
use crate::outcome::ToolOutcome;

/// The name of [`Content`]'s schema.
const CONTENT_TITLE: &str = "ToolContent";

/// A tool's result as parts: text, images, audio, embedded resources and links, in order.
///
/// Return it from a tool whose result is not (only) data. MCP gets each part as its content
/// block; Anthropic gets text and image blocks; OpenAI Responses gets `input_text` and
/// `input_image` parts; where a provider takes no image, audio or resource (OpenAI Chat, Gemini,
/// and audio and resources for the others) the part becomes a text line saying what it was
/// (`[image/png image, 1234 bytes]`), never dropped silently.
///
/// ```
/// use toolsmith::output::Content;
/// use toolsmith::{tool, ToolContext, Toolbox};
///
/// /// Draws the logo. Read-only. Not for photos.
/// #[tool(effect = "read")]
/// fn draw_logo() -> Content {
///     Content::new().text("The logo, 1×1:").image(&[137, 80, 78, 71], "image/png")
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let toolbox = Toolbox::new().with(DrawLogo);
/// let call = toolsmith::ToolCall { id: Some("t1".into()), name: "draw_logo".into(), arguments: toolsmith::serde_json::json!({}) };
/// let block = toolbox.provider(toolsmith::Dialect::Anthropic { strict: false }).respond(&call, &ToolContext::new()).await;
/// assert_eq!(block["content"][1]["type"], "image");
/// assert_eq!(block["content"][1]["source"]["media_type"], "image/png");
/// # });
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Content {
    /// The parts, in order.
    pub content: Vec<Part>,
}

/// One part of a [`Content`], serialized as MCP's content block.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Part {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// The bytes, base64 (standard alphabet, padded).
        data: String,
        /// Its type, such as `image/png`.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// Audio, base64-encoded.
    Audio {
        /// The bytes, base64.
        data: String,
        /// Its type, such as `audio/wav`.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// A resource embedded whole.
    Resource {
        /// The resource.
        resource: Embedded,
    },
    /// A link to a resource the client can read (`resources/read`).
    ResourceLink {
        /// Its URI.
        uri: String,
        /// Its name.
        name: String,
        /// Its type, when known.
        #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// What it is.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
    },
}

/// An embedded resource: its URI and type, and its text or its bytes (base64).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Embedded {
    /// Its URI.
    pub uri: String,
    /// Its type.
    #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its text, for a text resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Its bytes, base64, for a binary resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
}

impl Content {
    /// No parts yet.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds text.
    #[must_use]
    pub fn text(mut self, text: impl Into<String>) -> Self {
        self.content.push(Part::Text { text: text.into() });
        self
    }

    /// Adds an image from its bytes.
    #[must_use]
    pub fn image(mut self, bytes: &[u8], mime_type: impl Into<String>) -> Self {
        self.content.push(Part::Image {
            data: STANDARD.encode(bytes),
            mime_type: mime_type.into(),
        });
        self
    }

    /// Adds audio from its bytes.
    #[must_use]
    pub fn audio(mut self, bytes: &[u8], mime_type: impl Into<String>) -> Self {
        self.content.push(Part::Audio {
            data: STANDARD.encode(bytes),
            mime_type: mime_type.into(),
        });
        self
    }

    /// Embeds a text resource.
    #[must_use]
    pub fn resource_text(
        mut self,
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        self.content.push(Part::Resource {
            resource: Embedded {
                uri: uri.into(),
                mime_type: Some(mime_type.into()),
                text: Some(text.into()),
                blob: None,
            },
        });
        self
    }

    /// Embeds a binary resource from its bytes.
    #[must_use]
    pub fn resource_blob(
        mut self,
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        bytes: &[u8],
    ) -> Self {
        self.content.push(Part::Resource {
            resource: Embedded {
                uri: uri.into(),
                mime_type: Some(mime_type.into()),
                text: None,
                blob: Some(STANDARD.encode(bytes)),
            },
        });
        self
    }

    /// Adds a link to a resource.
    #[must_use]
    pub fn link(mut self, uri: impl Into<String>, name: impl Into<String>) -> Self {
        self.content.push(Part::ResourceLink {
            uri: uri.into(),
            name: name.into(),
            mime_type: None,
            description: None,
        });
        self
    }
}

impl JsonSchema for Content {
    fn schema_name() -> Cow<'static, str> {
        CONTENT_TITLE.into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "title": CONTENT_TITLE,
            "type": "object",
            "description": "The result as parts: text, images, audio, resources.",
            "properties": {
                "content": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"type": {"enum": PART_TYPES}},
                        "required": ["type"]
                    }
                }
            },
            "required": ["content"]
        })
    }
}

/// The part types of [`Content`]'s schema, by which a tool that returns it is known.
const PART_TYPES: [&str; 5] = ["text", "image", "audio", "resource", "resource_link"];

/// Whether the tool returns [`Content`]: its output schema is `{"content": [{"type": one of
/// the part types}]}`.
pub(crate) fn is_content_tool(def: &ToolDefinition) -> bool {
    def.output_schema()
        .and_then(|s| s.pointer("/properties/content/items/properties/type/enum"))
        .and_then(serde_json::Value::as_array)
        .is_some_and(|types| {
            types
                .iter()
                .map(serde_json::Value::as_str)
                .eq(PART_TYPES.map(Some))
        })
}

/// The parts of a successful outcome of a tool that returns [`Content`].
pub(crate) fn parts(outcome: &ToolOutcome, def: Option<&ToolDefinition>) -> Option<Vec<Part>> {
    if !def.is_some_and(is_content_tool) {
        return None;
    }
    let data = outcome.for_model().data()?;
    serde_json::from_str::<Content>(data.get())
        .ok()
        .map(|c| c.content)
}

/// A part a provider cannot take, as a text line saying what it was.
pub(crate) fn stand_in(part: &Part) -> String {
    // Decoded size: three bytes per four characters, less the padding.
    let size = |data: &str| {
        let padding = data.bytes().rev().take_while(|b| *b == b'=').count();
        (data.len() / 4 * 3).saturating_sub(padding)
    };
    match part {
        Part::Text { text } => text.clone(),
        Part::Image { data, mime_type } => format!("[{mime_type} image, {} bytes]", size(data)),
        Part::Audio { data, mime_type } => format!("[{mime_type} audio, {} bytes]", size(data)),
        Part::Resource { resource } => match (&resource.text, &resource.blob) {
            (Some(text), _) => format!("[resource {}]\n{text}", resource.uri),
            (None, Some(blob)) => format!(
                "[resource {}, {}, {} bytes]",
                resource.uri,
                resource.mime_type.as_deref().unwrap_or("binary"),
                size(blob)
            ),
            (None, None) => format!("[resource {}]", resource.uri),
        },
        Part::ResourceLink { uri, name, .. } => format!("[{name}: {uri}]"),
    }
}
