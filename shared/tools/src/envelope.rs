//! The seal (G-1, G-2, G-7): the one place where a built-in answer gets its shape.
//!
//! Handlers return a body without `meta`; [`seal`] adds `meta {tool, version}`, writes the
//! envelope once as the one text block, and the `structuredContent` is that text read back
//! (so the two cannot differ); it sets `isError = !ok`, puts image blocks first, and
//! enforces the size ceiling on the text that actually goes out, envelope included.

use crate::errors::{ToolError, code};
use rmcp::model::{CallToolResult, ContentBlock};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use std::sync::Arc;

/// Largest text block a tool answer may carry, in bytes (G-7). Larger answers become a
/// `RESPONSE_TOO_LARGE` envelope.
pub const MAX_TEXT_BYTES: usize = 64 * 1024;

/// An image block (base64 data), placed before the text block (G-1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageBlock {
    /// Base64 data.
    pub data: String,
    /// MIME type, e.g. `image/png`.
    pub mime_type: String,
}

/// A handler's `data`: built for this answer, or JSON the registry wrote once for its
/// whole life (a built-in's descriptor, which `describe_tool` passes on), copied into the
/// envelope as it was written, never rebuilt or serialised again (issue 26's profile: the
/// copy, then the serialisation, of the descriptor were each a tenth of the gateway's time).
#[derive(Debug, Clone)]
pub enum Data {
    /// JSON built for this answer.
    Owned(Value),
    /// Compact JSON text the registry keeps, exactly as serialising its value would write
    /// it.
    Written(Arc<RawValue>),
}

impl From<Value> for Data {
    fn from(v: Value) -> Self {
        Self::Owned(v)
    }
}

impl PartialEq for Data {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Owned(a), Self::Owned(b)) => a == b,
            (Self::Written(a), Self::Written(b)) => a.get() == b.get(),
            _ => false,
        }
    }
}

impl Serialize for Data {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Owned(v) => v.serialize(s),
            Self::Written(raw) => raw.serialize(s),
        }
    }
}

/// What a built-in handler returns on success: `data`, and optional images.
#[derive(Debug, Clone, PartialEq)]
pub struct Success {
    /// The envelope's `data`.
    pub data: Data,
    /// Image blocks, shown before the text.
    pub images: Vec<ImageBlock>,
}

impl Success {
    /// `data` without images.
    pub fn data(data: impl Serialize) -> Result<Self, ToolError> {
        serde_json::to_value(data)
            .map(|data| Self {
                data: Data::Owned(data),
                images: Vec::new(),
            })
            .map_err(|e| ToolError::internal("seal", &e))
    }
}

/// What a built-in handler may return as `data`: anything serialisable, or JSON the
/// registry already holds, which is serialised where it lies rather than copied.
pub trait IntoData {
    /// The envelope's `data`.
    fn into_data(self) -> Result<Data, serde_json::Error>;
}

impl<T: Serialize> IntoData for T {
    fn into_data(self) -> Result<Data, serde_json::Error> {
        serde_json::to_value(self).map(Data::Owned)
    }
}

impl Success {
    /// [`Success::data`] for anything [`IntoData`].
    pub fn from_data(data: impl IntoData) -> Result<Self, ToolError> {
        data.into_data()
            .map(|data| Self {
                data,
                images: Vec::new(),
            })
            .map_err(|e| ToolError::internal("seal", &e))
    }
}

/// The `meta` of an envelope (G-1, G-3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Meta {
    /// The tool's wire name.
    pub tool: String,
    /// The tool's declared version.
    pub version: String,
}

/// A sealed answer: an MCP `CallToolResult`. It keeps the envelope only as its text: the
/// `structuredContent` is that text read back ([`Self::structured`]), so the two can never
/// differ (G-1) and the envelope is built once, as bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct Sealed {
    /// The envelope serialised: the one text block, and the `structuredContent`.
    pub text: String,
    /// `!ok`.
    pub is_error: bool,
    /// Images, first in `content`.
    pub images: Vec<ImageBlock>,
    /// The envelope's error code (the metric's `error_type`, G-8).
    error_code: Option<&'static str>,
}

impl Sealed {
    /// The envelope's error code, or `none` (the metric's `error_type`, G-8).
    pub fn error_type(&self) -> &str {
        self.error_code.unwrap_or("none")
    }

    /// The envelope (`structuredContent`): the text read back.
    pub fn structured(&self) -> Value {
        // The text was written by serde_json from a `Value`; reading it back cannot fail.
        serde_json::from_str(&self.text).unwrap_or(Value::Null)
    }

    /// The MCP `CallToolResult`: `content` (images, then the text), the
    /// `structuredContent`, and `isError`.
    pub fn to_call_tool_result(&self) -> CallToolResult {
        self.clone().into_call_tool_result()
    }

    /// The MCP `CallToolResult` without its `structuredContent`: its last content block is
    /// the envelope's text, which is that `structuredContent` serialised (G-1), for a
    /// caller that writes the answer itself and serialises the envelope only once (the
    /// gateway's fast path).
    pub fn into_text_only_result(self) -> CallToolResult {
        let mut content: Vec<ContentBlock> = self
            .images
            .into_iter()
            .map(|i| ContentBlock::image(i.data, i.mime_type))
            .collect();
        content.push(ContentBlock::text(self.text));
        if self.is_error {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        }
    }

    /// [`Self::to_call_tool_result`], moving the text instead of copying it (the dispatch
    /// path: an answer is sealed once and sent once).
    pub fn into_call_tool_result(self) -> CallToolResult {
        let structured = self.structured();
        let mut r = self.into_text_only_result();
        r.structured_content = Some(structured);
        r
    }
}

/// The envelope, serialised as a `Value` would be (members in key order: `data`, `error`,
/// `meta`, `ok`), without building one.
#[derive(Serialize)]
struct Envelope<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<&'a Data>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<Value>,
    meta: &'a Meta,
    ok: bool,
}

/// Seals a handler's outcome (G-2). The envelope is written once, as its text (G-1); an
/// answer over [`MAX_TEXT_BYTES`] is replaced by a `RESPONSE_TOO_LARGE` error envelope
/// (G-7).
pub fn seal(meta: &Meta, outcome: Result<Success, ToolError>) -> Sealed {
    let (data, images, error) = match outcome {
        Ok(s) => (Some(s.data), s.images, None),
        Err(e) => (None, Vec::new(), Some(e)),
    };
    let envelope = Envelope {
        data: data.as_ref(),
        error: error.as_ref().map(|e| json!(e)),
        meta,
        ok: error.is_none(),
    };
    let error_code = error.map(|e| e.code);
    // `serde_json`'s own writer: several times faster than `to_string` through
    // `fmt::Write` (issue 26's profile). A `Value` and a `Meta` always serialise.
    let text = serde_json::to_string(&envelope).unwrap_or_default();
    if text.len() > MAX_TEXT_BYTES {
        let too_large = ToolError::new(
            code::RESPONSE_TOO_LARGE,
            "The answer is too large to return.",
        )
        .details(json!({"limitBytes": MAX_TEXT_BYTES, "sizeBytes": text.len()}))
        .retryable(false)
        .hint("Ask for less: narrow the query or use paging arguments.");
        return seal(meta, Err(too_large));
    }
    Sealed {
        is_error: error_code.is_some(),
        text,
        images,
        error_code,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> Meta {
        Meta {
            tool: "describe_tool".into(),
            version: "1.0.0".into(),
        }
    }

    /// G-1, G-13: text ≡ structuredContent, isError == !ok, meta carries name and version.
    #[test]
    fn g1_text_equals_structured_content_and_is_error_is_not_ok() {
        for outcome in [
            Success::data(json!({"items": [1, 2]})),
            Err(ToolError::validation("name", "name is required")),
        ] {
            let s = seal(&meta(), outcome);
            let parsed: Value = serde_json::from_str(&s.text).unwrap();
            assert_eq!(serde_json::to_string(&parsed).unwrap(), s.text);
            assert_eq!(parsed, s.structured());
            assert_eq!(s.is_error, !s.structured()["ok"].as_bool().unwrap());
            assert_eq!(
                s.structured()["meta"],
                json!({"tool": "describe_tool", "version": "1.0.0"})
            );
            let r = serde_json::to_value(s.to_call_tool_result()).unwrap();
            assert_eq!(r["structuredContent"], s.structured());
            assert_eq!(r["isError"], s.is_error);
        }
    }

    /// G-1, G-13: image blocks come first, the text block last, in order.
    #[test]
    fn g1_images_come_first_in_order() {
        let s = seal(
            &meta(),
            Ok(Success {
                data: json!({}).into(),
                images: vec![
                    ImageBlock {
                        data: "AAA".into(),
                        mime_type: "image/png".into(),
                    },
                    ImageBlock {
                        data: "BBB".into(),
                        mime_type: "image/jpeg".into(),
                    },
                ],
            }),
        );
        let content = serde_json::to_value(s.to_call_tool_result()).unwrap()["content"]
            .as_array()
            .unwrap()
            .clone();
        assert_eq!(content.len(), 3);
        assert_eq!(content[0]["data"], "AAA");
        assert_eq!(content[1]["data"], "BBB");
        assert_eq!(content[2]["type"], "text");
    }

    /// G-1: JSON the registry wrote once seals to the very bytes its value would.
    #[test]
    fn g1_written_data_seals_like_its_value() {
        let value = json!({"name": "action_status", "inputSchema": {"type": "object"}, "n": [1, 2.5, "é\"\n"]});
        let written: Arc<RawValue> = serde_json::value::to_raw_value(&value).unwrap().into();
        let owned = seal(
            &meta(),
            Ok(Success {
                data: value.into(),
                images: Vec::new(),
            }),
        );
        let shared = seal(
            &meta(),
            Ok(Success {
                data: Data::Written(written),
                images: Vec::new(),
            }),
        );
        assert_eq!(owned.text, shared.text);
        assert_eq!(owned.structured()["data"]["n"][2], "é\"\n");
    }

    /// G-7: the ceiling applies to the text that goes out, envelope included.
    #[test]
    fn g7_size_ceiling_counts_the_whole_envelope() {
        // Data just under the limit still overflows once the envelope is added.
        let s = seal(
            &meta(),
            Success::data(json!({"blob": "x".repeat(MAX_TEXT_BYTES - 20)})),
        );
        assert!(s.is_error);
        assert_eq!(s.error_type(), code::RESPONSE_TOO_LARGE);
        assert!(s.text.len() <= MAX_TEXT_BYTES);
        let ok = seal(&meta(), Success::data(json!({"blob": "x".repeat(1000)})));
        assert_eq!(ok.error_type(), "none");
    }
}
