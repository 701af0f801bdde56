//! Model port adapters (D-3, M-1 … M-5): [`bedrock`] (Amazon Bedrock Converse with tool
//! use) and [`openai`] (OpenAI-compatible chat completions with tools), and [`choice`],
//! the validated selection of one. Each adapter is a pure request builder, a pure answer
//! reader and a thin sender, so the conversion is tested and measured without a network.
//! The turn (`countersign-chat`) owns the rules around them: names (M-2), the system
//! text (M-3), bounds (M-4) and retries (M-5).

pub mod bedrock;
pub mod choice;
pub mod document;
pub mod openai;
