//! A provider's MCP tool result (`tools/call` answer), reduced to what the contract reads,
//! and the one rule for where a contract payload lives: `structuredContent`, or
//! else exactly one `text` block holding JSON.

use crate::language::Translated;
use serde_json::Value;

/// One content block of a tool result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContentBlock {
    /// A `text` block.
    Text(String),
    /// Any other block (`image`, `audio`, `resource`, …), by its `type`.
    Other {
        /// The block's `type`.
        kind: String,
    },
}

/// A `tools/call` result.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// `structuredContent`, when present.
    pub structured_content: Option<Value>,
    /// `content`, in order.
    pub content: Vec<ContentBlock>,
    /// `isError` (absent means `false`).
    pub is_error: bool,
}

/// Why no contract payload could be read from a tool result.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, thiserror::Error)]
#[serde(tag = "rule", rename_all = "snake_case")]
pub enum PayloadError {
    /// Neither `structuredContent` nor any content block.
    #[error("the answer has neither structuredContent nor a text block")]
    NoPayload,
    /// Without `structuredContent`, the content must be exactly one `text` block.
    #[error(
        "without structuredContent the answer must be exactly one text block (found {blocks} block(s), {texts} text)"
    )]
    NotSingleTextBlock {
        /// Number of blocks.
        blocks: usize,
        /// Number of text blocks among them.
        texts: usize,
    },
    /// The single text block is not JSON.
    #[error("the text block is not valid JSON")]
    TextNotJson,
    /// The tool result itself is not a valid MCP result object.
    #[error("the result is not an MCP tool result object")]
    NotAToolResult,
}

impl Translated for PayloadError {
    fn portuguese(&self) -> String {
        match self {
            Self::NoPayload => "a resposta não tem structuredContent nem um bloco de texto".into(),
            Self::NotSingleTextBlock { blocks, texts } => format!(
                "sem structuredContent a resposta deve ser exatamente um bloco de texto (encontrados {blocks} bloco(s), {texts} de texto)"
            ),
            Self::TextNotJson => "o bloco de texto não é JSON válido".into(),
            Self::NotAToolResult => {
                "o resultado não é um objeto de resultado de ferramenta MCP".into()
            }
        }
    }
}

impl ToolResult {
    /// Reads an MCP `CallToolResult` JSON object.
    pub fn from_mcp_json(v: &Value) -> Result<Self, PayloadError> {
        let obj = v.as_object().ok_or(PayloadError::NotAToolResult)?;
        let content = match obj.get("content") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(
                    |b| match (b.get("type").and_then(Value::as_str), b.get("text")) {
                        (Some("text"), Some(Value::String(t))) => Ok(ContentBlock::Text(t.clone())),
                        (Some("text"), _) => Err(PayloadError::NotAToolResult),
                        (Some(kind), _) => Ok(ContentBlock::Other {
                            kind: kind.to_owned(),
                        }),
                        (None, _) => Err(PayloadError::NotAToolResult),
                    },
                )
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(PayloadError::NotAToolResult),
        };
        let is_error = match obj.get("isError") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(PayloadError::NotAToolResult),
        };
        let structured_content = match obj.get("structuredContent") {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.clone()),
        };
        Ok(Self {
            structured_content,
            content,
            is_error,
        })
    }

    /// The contract payload: `structuredContent` if present, otherwise the JSON in
    /// the one and only content block, which must be `text`.
    pub fn contract_payload(&self) -> Result<Value, PayloadError> {
        if let Some(v) = &self.structured_content {
            return Ok(v.clone());
        }
        match self.content.as_slice() {
            [] => Err(PayloadError::NoPayload),
            [ContentBlock::Text(t)] => {
                serde_json::from_str(t).map_err(|_| PayloadError::TextNotJson)
            }
            blocks => Err(PayloadError::NotSingleTextBlock {
                blocks: blocks.len(),
                texts: blocks
                    .iter()
                    .filter(|b| matches!(b, ContentBlock::Text(_)))
                    .count(),
            }),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    /// structuredContent, or exactly one text block with JSON.
    #[test]
    fn a13_payload_location() {
        let r = ToolResult::from_mcp_json(&json!({"content": [], "structuredContent": {"a": 1}}))
            .unwrap();
        assert_eq!(r.contract_payload().unwrap(), json!({"a": 1}));

        let r =
            ToolResult::from_mcp_json(&json!({"content": [{"type": "text", "text": "{\"a\":2}"}]}))
                .unwrap();
        assert_eq!(r.contract_payload().unwrap(), json!({"a": 2}));

        let r = ToolResult::from_mcp_json(&json!({"content": [
            {"type": "text", "text": "{}"}, {"type": "text", "text": "{}"}]}))
        .unwrap();
        assert_eq!(
            r.contract_payload(),
            Err(PayloadError::NotSingleTextBlock {
                blocks: 2,
                texts: 2
            })
        );

        let r = ToolResult::from_mcp_json(
            &json!({"content": [{"type": "image", "data": "", "mimeType": "image/png"}]}),
        )
        .unwrap();
        assert_eq!(
            r.contract_payload(),
            Err(PayloadError::NotSingleTextBlock {
                blocks: 1,
                texts: 0
            })
        );

        let r = ToolResult::from_mcp_json(&json!({"content": [{"type": "text", "text": "ok!"}]}))
            .unwrap();
        assert_eq!(r.contract_payload(), Err(PayloadError::TextNotJson));

        let r = ToolResult::from_mcp_json(&json!({})).unwrap();
        assert_eq!(r.contract_payload(), Err(PayloadError::NoPayload));
    }

    #[test]
    fn malformed_results_are_refused() {
        for bad in [
            json!([]),
            json!({"content": "x"}),
            json!({"content": [{"text": "x"}]}),
            json!({"content": [{"type": "text", "text": 5}]}),
            json!({"isError": "yes"}),
        ] {
            assert_eq!(
                ToolResult::from_mcp_json(&bad),
                Err(PayloadError::NotAToolResult),
                "{bad}"
            );
        }
        let r = ToolResult::from_mcp_json(&json!({"isError": true, "content": []})).unwrap();
        assert!(r.is_error);
    }
}
