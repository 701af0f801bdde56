//! What every provider answer of the actions protocol shares: the contract version, the
//! typed violations, and the field readers used by [`crate::prepare`] and
//! [`crate::outcome`].

use crate::language::Translated;
use crate::text::{TextViolation, ViolationList};
use crate::tool_result::PayloadError;
use serde_json::{Map, Value};
use std::fmt;

/// The only contract version this platform speaks (A-13, A-40, C-3).
pub const CONTRACT_VERSION: u64 = 1;

/// One broken rule of a provider's contract answer (prepare, execute or status).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "rule", rename_all = "snake_case")]
pub enum ContractViolation {
    /// The provider answered `isError: true` (A-41: a failure, never a proposal).
    ProviderError,
    /// No readable payload.
    Payload {
        /// Why.
        error: PayloadError,
    },
    /// The payload is not a JSON object.
    NotAnObject,
    /// A required field is absent.
    MissingField {
        /// The field.
        field: &'static str,
    },
    /// A field has the wrong JSON type.
    WrongType {
        /// The field.
        field: &'static str,
        /// The expected type.
        expected: &'static str,
    },
    /// A field the contract does not define.
    UnknownField {
        /// The field (truncated to 64 characters).
        field: String,
    },
    /// `contractVersion` is not 1.
    ContractVersion,
    /// `status` is not `pending_confirmation`.
    Status,
    /// `actionId` is not 1–200 characters of `[A-Za-z0-9_-]`.
    ActionId,
    /// `operation` differs from the requested operation.
    OperationMismatch {
        /// What was requested.
        requested: String,
    },
    /// `argumentsHash` is not 64 lowercase hex characters.
    ArgumentsHashFormat,
    /// `summaryHash` is not 64 lowercase hex characters.
    SummaryHashFormat,
    /// `summaryHash` is not the SHA-256 of the summary's UTF-8 bytes.
    SummaryHashMismatch,
    /// `actionId` differs from the action asked about.
    ActionIdMismatch,
    /// `status` is not one of the seven of A-40.
    UnknownStatus,
    /// `message` breaks A-20 (A-40: same limits as the summary).
    Message {
        /// Each broken rule.
        violations: Vec<TextViolation>,
    },
    /// The summary breaks A-20.
    Summary {
        /// Each broken rule.
        violations: Vec<TextViolation>,
    },
    /// `expiresAt` is not an ISO-8601 UTC timestamp.
    ExpiresAtFormat,
    /// `expiresAt` is not strictly in the future.
    ExpiresAtNotInFuture,
    /// `expiresAt` is more than five minutes after preparation.
    ExpiresAtTooFar {
        /// The limit in seconds.
        max_seconds: i64,
    },
}

impl ContractViolation {
    /// The rule broken, for logs: the contract's field names only, never a value the
    /// provider sent (its answers carry people's data; an unknown field's name is the
    /// provider's, so it is left out too).
    pub fn rule(&self) -> &'static str {
        match self {
            Self::ProviderError => "isError answer",
            Self::Payload { .. } => "no readable payload",
            Self::NotAnObject => "payload not an object",
            Self::MissingField { field } | Self::WrongType { field, .. } => field,
            Self::UnknownField { .. } => "unknown field",
            Self::ContractVersion => "contractVersion",
            Self::Status | Self::UnknownStatus => "status",
            Self::ActionId | Self::ActionIdMismatch => "actionId",
            Self::OperationMismatch { .. } => "operation",
            Self::ArgumentsHashFormat => "argumentsHash",
            Self::SummaryHashFormat | Self::SummaryHashMismatch => "summaryHash",
            Self::Message { .. } => "message (A-20)",
            Self::Summary { .. } => "summary (A-20)",
            Self::ExpiresAtFormat | Self::ExpiresAtNotInFuture | Self::ExpiresAtTooFar { .. } => {
                "expiresAt"
            }
        }
    }
}

impl Translated for ContractViolation {
    fn portuguese(&self) -> String {
        match self {
            Self::ProviderError => "o provedor respondeu com um erro".into(),
            Self::Payload { error } => error.portuguese(),
            Self::NotAnObject => "a resposta não é um objeto JSON".into(),
            Self::MissingField { field } => format!("{field} é obrigatório"),
            Self::WrongType { field, expected } => {
                format!("{field} deve ser do tipo {expected}")
            }
            Self::UnknownField { field } => format!("{field} não é um campo do contrato"),
            Self::ContractVersion => "contractVersion deve ser 1".into(),
            Self::Status => "status deve ser pending_confirmation".into(),
            Self::ActionId => {
                "actionId deve ter de 1 a 200 caracteres entre letras, dígitos, '_' ou '-'".into()
            }
            Self::OperationMismatch { requested } => {
                format!("operation deve ser igual à operação pedida, {requested}")
            }
            Self::ArgumentsHashFormat => {
                "argumentsHash deve ter 64 caracteres hexadecimais minúsculos".into()
            }
            Self::SummaryHashFormat => {
                "summaryHash deve ter 64 caracteres hexadecimais minúsculos".into()
            }
            Self::SummaryHashMismatch => {
                "summaryHash deve ser o SHA-256 dos bytes UTF-8 exatos do resumo".into()
            }
            Self::ActionIdMismatch => "actionId deve ser igual ao da ação consultada".into(),
            Self::UnknownStatus => "status deve ser um de pending_confirmation, executing, completed, failed, conflict, expired, cancelled".into(),
            Self::Message { violations } => format!(
                "message não pode ser mostrada: {}",
                ViolationList(violations).portuguese()
            ),
            Self::Summary { violations } => format!(
                "o resumo (summary) não pode ser mostrado: {}",
                ViolationList(violations).portuguese()
            ),
            Self::ExpiresAtFormat => {
                "expiresAt deve ser um instante ISO-8601 em UTC".into()
            }
            Self::ExpiresAtNotInFuture => "expiresAt deve estar no futuro".into(),
            Self::ExpiresAtTooFar { max_seconds } => format!(
                "expiresAt deve ser no máximo {max_seconds} segundos após a preparação"
            ),
        }
    }
}

impl ContractViolation {
    /// Every broken rule of `violations`, `; `-separated, in both languages; a rule repeated
    /// in a row is said once.
    #[must_use]
    pub fn all_said(violations: &[Self]) -> crate::language::Said {
        let list = |lang| {
            let mut said: Vec<String> = violations.iter().map(|v| v.message(lang)).collect();
            said.dedup();
            said.join("; ")
        };
        crate::language::Said::new(
            list(crate::language::Language::En),
            list(crate::language::Language::Pt),
        )
    }
}

impl fmt::Display for ContractViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ProviderError => f.write_str("the provider answered with an error"),
            Self::Payload { error } => write!(f, "{error}"),
            Self::NotAnObject => f.write_str("the answer is not a JSON object"),
            Self::MissingField { field } => write!(f, "{field} is required"),
            Self::WrongType { field, expected } => write!(f, "{field} must be {expected}"),
            Self::UnknownField { field } => write!(f, "{field} is not a field of the contract"),
            Self::ContractVersion => f.write_str("contractVersion must be 1"),
            Self::Status => f.write_str("status must be pending_confirmation"),
            Self::ActionId => {
                f.write_str("actionId must be 1-200 characters of letters, digits, '_' or '-'")
            }
            Self::OperationMismatch { requested } => {
                write!(f, "operation must equal the requested operation {requested}")
            }
            Self::ArgumentsHashFormat => {
                f.write_str("argumentsHash must be 64 lowercase hexadecimal characters")
            }
            Self::SummaryHashFormat => {
                f.write_str("summaryHash must be 64 lowercase hexadecimal characters")
            }
            Self::SummaryHashMismatch => {
                f.write_str("summaryHash must be the SHA-256 of the summary's exact UTF-8 bytes")
            }
            Self::ActionIdMismatch => f.write_str("actionId must equal the action asked about"),
            Self::UnknownStatus => f.write_str(
                "status must be one of pending_confirmation, executing, completed, failed, conflict, expired, cancelled",
            ),
            Self::Message { violations } => {
                write!(f, "message is not safe to show: {}", ViolationList(violations))
            }
            Self::Summary { violations } => {
                write!(f, "summary is not safe to show: {}", ViolationList(violations))
            }
            Self::ExpiresAtFormat => f.write_str("expiresAt must be an ISO-8601 UTC timestamp"),
            Self::ExpiresAtNotInFuture => f.write_str("expiresAt must be in the future"),
            Self::ExpiresAtTooFar { max_seconds } => write!(
                f,
                "expiresAt must be at most {max_seconds} seconds after preparation"
            ),
        }
    }
}

/// the contract payload of a (non-error) tool result, which must be a JSON object.
pub(crate) fn payload_object(
    result: &crate::tool_result::ToolResult,
) -> Result<Map<String, Value>, Vec<ContractViolation>> {
    let payload = result
        .contract_payload()
        .map_err(|error| vec![ContractViolation::Payload { error }])?;
    match payload {
        Value::Object(obj) => Ok(obj),
        _ => Err(vec![ContractViolation::NotAnObject]),
    }
}

/// Reads a required string field, recording a violation when absent or not a string.
pub(crate) fn required_str<'a>(
    obj: &'a Map<String, Value>,
    field: &'static str,
    out: &mut Vec<ContractViolation>,
) -> Option<&'a str> {
    match obj.get(field) {
        None => {
            out.push(ContractViolation::MissingField { field });
            None
        }
        Some(Value::String(s)) => Some(s),
        Some(_) => {
            out.push(ContractViolation::WrongType {
                field,
                expected: "a string",
            });
            None
        }
    }
}

/// Checks `contractVersion` (must be the integer 1).
pub(crate) fn check_contract_version(obj: &Map<String, Value>, out: &mut Vec<ContractViolation>) {
    match obj.get("contractVersion") {
        None => out.push(ContractViolation::MissingField {
            field: "contractVersion",
        }),
        Some(v) if v.as_u64() == Some(CONTRACT_VERSION) => {}
        Some(Value::Number(_)) => out.push(ContractViolation::ContractVersion),
        Some(_) => out.push(ContractViolation::WrongType {
            field: "contractVersion",
            expected: "the number 1",
        }),
    }
}

/// Records every key not in `allowed`.
pub(crate) fn check_unknown_fields(
    obj: &Map<String, Value>,
    allowed: &[&str],
    out: &mut Vec<ContractViolation>,
) {
    for key in obj.keys().filter(|k| !allowed.contains(&k.as_str())) {
        out.push(ContractViolation::UnknownField {
            field: key.chars().take(64).collect(),
        });
    }
}
