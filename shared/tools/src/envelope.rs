//! The seal (G-1, G-2, G-7): the one place where a built-in answer gets its shape.
//!
//! Handlers return a body without `meta`; [`seal`] adds `meta {tool, version}`, builds the
//! `structuredContent`, serialises the one text block *from that same object*, sets
//! `isError = !ok`, puts image blocks first, and enforces the size ceiling on the text that
//! actually goes out, envelope included.

use crate::errors::{ToolError, code};
use rmcp::model::{CallToolResult, ContentBlock};
use serde::Serialize;
use serde_json::{Value, json};

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

/// What a built-in handler returns on success: `data`, and optional images.
#[derive(Debug, Clone, PartialEq)]
pub struct Success {
    /// The envelope's `data`.
    pub data: Value,
    /// Image blocks, shown before the text.
    pub images: Vec<ImageBlock>,
}

impl Success {
    /// `data` without images.
    pub fn data(data: impl Serialize) -> Result<Self, ToolError> {
        serde_json::to_value(data)
            .map(|data| Self {
                data,
                images: Vec::new(),
            })
            .map_err(|e| ToolError::internal("seal", &e))
    }
}

/// What a built-in handler may return as `data`: anything serialisable, or JSON already
/// built, which is moved in rather than serialised into a second copy (describe_tool passes
/// a descriptor on; issue 26 measured the copy at a tenth of the gateway's time).
pub trait IntoData {
    /// The envelope's `data`.
    fn into_data(self) -> Result<Value, serde_json::Error>;
}

impl<T: Serialize> IntoData for T {
    fn into_data(self) -> Result<Value, serde_json::Error> {
        serde_json::to_value(self)
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

/// A sealed answer: an MCP `CallToolResult`.
#[derive(Debug, Clone, PartialEq)]
pub struct Sealed {
    /// The envelope (`structuredContent`).
    pub structured: Value,
    /// The same envelope, serialised: the one text block.
    pub text: String,
    /// `!ok`.
    pub is_error: bool,
    /// Images, first in `content`.
    pub images: Vec<ImageBlock>,
}

impl Sealed {
    /// The envelope's error code, or `none` (the metric's `error_type`, G-8).
    pub fn error_type(&self) -> &str {
        self.structured
            .pointer("/error/code")
            .and_then(Value::as_str)
            .unwrap_or("none")
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
        let mut result = self.into_call_tool_result();
        result.structured_content = None;
        result
    }

    /// [`Self::to_call_tool_result`], moving the envelope instead of copying it (the
    /// dispatch path: an answer is sealed once and sent once).
    pub fn into_call_tool_result(self) -> CallToolResult {
        let mut content: Vec<ContentBlock> = self
            .images
            .into_iter()
            .map(|i| ContentBlock::image(i.data, i.mime_type))
            .collect();
        content.push(ContentBlock::text(self.text));
        let mut r = if self.is_error {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        };
        r.structured_content = Some(self.structured);
        r
    }
}

/// The envelope of `outcome`; moves the handler's `data` in rather than copying it.
fn envelope(meta: &Meta, outcome: Result<Value, &ToolError>) -> Value {
    let mut m = serde_json::Map::new();
    m.insert("ok".into(), Value::Bool(outcome.is_ok()));
    match outcome {
        Ok(data) => m.insert("data".into(), data),
        Err(e) => m.insert("error".into(), json!(e)),
    };
    m.insert("meta".into(), json!(meta));
    Value::Object(m)
}

/// Seals a handler's outcome (G-2). The text is serialised from the structured object, so
/// the two can never differ (G-1); an answer over [`MAX_TEXT_BYTES`] is replaced by a
/// `RESPONSE_TOO_LARGE` error envelope (G-7).
pub fn seal(meta: &Meta, outcome: Result<Success, ToolError>) -> Sealed {
    let (is_error, images, structured) = match outcome {
        Ok(s) => (false, s.images, envelope(meta, Ok(s.data))),
        Err(e) => (true, Vec::new(), envelope(meta, Err(&e))),
    };
    // `to_string` writes through `fmt::Write` one fragment at a time; `serde_json`'s own
    // writer is several times faster (issue 26's profile).
    let text = serde_json::to_string(&structured).unwrap_or_else(|_| structured.to_string());
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
        structured,
        text,
        is_error,
        images,
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
            assert_eq!(parsed, s.structured);
            assert_eq!(s.is_error, !s.structured["ok"].as_bool().unwrap());
            assert_eq!(
                s.structured["meta"],
                json!({"tool": "describe_tool", "version": "1.0.0"})
            );
            let r = serde_json::to_value(s.to_call_tool_result()).unwrap();
            assert_eq!(r["structuredContent"], s.structured);
            assert_eq!(r["isError"], s.is_error);
        }
    }

    /// G-1, G-13: image blocks come first, the text block last, in order.
    #[test]
    fn g1_images_come_first_in_order() {
        let s = seal(
            &meta(),
            Ok(Success {
                data: json!({}),
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
