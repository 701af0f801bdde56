//! Why a saved MCP configuration is refused: each broken rule with its field, in the
//! administrator's language (C-11).

use super::*;
use crate::language::Translated;

/// Why a field is invalid.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "rule", rename_all = "snake_case")]
pub enum ConfigErrorReason {
    /// The field is required.
    Required,
    /// Wrong JSON type.
    WrongType {
        /// What was expected.
        expected: &'static str,
    },
    /// Not a field of the configuration.
    UnknownField,
    /// Not a URL.
    InvalidUrl,
    /// Not `https://`.
    NotHttps,
    /// The URL carries a user name or password.
    UrlHasCredentials,
    /// The URL carries a `#fragment`.
    UrlHasFragment,
    /// The host is a literal internal address or an internal name (D-5).
    NotPublic,
    /// Too long.
    TooLong {
        /// The limit.
        max: usize,
    },
    /// Empty where a value is needed.
    Empty,
    /// Characters that cannot travel in an HTTP header.
    InvalidCharacters,
    /// Not a valid tool or operation name.
    InvalidName {
        /// The rule.
        detail: String,
    },
    /// A reserved name or a built-in tool's name.
    Reserved,
    /// A consultation with an operation's name (C-4).
    NameIsOperation,
    /// The same name twice.
    Duplicate,
    /// Too many entries.
    TooMany {
        /// The limit.
        max: usize,
    },
    /// Needs at least one entry.
    NeedsOne,
    /// `contractVersion` is not 1.
    ContractVersion,
    /// An enabled policy needs at least one operation (C-4).
    EnabledWithoutOperations,
    /// The explicit audience names another server than `serverUrl` (decision 0020).
    AudienceOtherServer,
    /// F-1: a step-up setting for an operation that is not configured.
    NotAnOperation,
    /// F-1: a step-up setting other than `none` or `passkey`.
    StepUpValue,
}

impl fmt::Display for ConfigErrorReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Required => f.write_str("is required"),
            Self::WrongType { expected } => write!(f, "must be {expected}"),
            Self::UnknownField => f.write_str("is not a configuration field"),
            Self::InvalidUrl => f.write_str("must be an absolute URL with a host"),
            Self::NotHttps => f.write_str("must use https://"),
            Self::UrlHasCredentials => f.write_str("must not contain a user name or password"),
            Self::UrlHasFragment => f.write_str("must not contain a #fragment"),
            Self::NotPublic => f.write_str("must point to a public host"),
            Self::TooLong { max } => write!(f, "must be at most {max} characters"),
            Self::Empty => f.write_str("must not be empty"),
            Self::InvalidCharacters => {
                f.write_str("may contain only visible ASCII characters (no spaces)")
            }
            Self::InvalidName { detail } => f.write_str(detail),
            Self::Reserved => f.write_str("is a reserved name"),
            Self::NameIsOperation => {
                f.write_str("is also an operation name; writes are configured only as operations")
            }
            Self::Duplicate => f.write_str("appears more than once"),
            Self::TooMany { max } => write!(f, "must have at most {max} entries"),
            Self::NeedsOne => f.write_str("must have at least one entry"),
            Self::ContractVersion => f.write_str("must be 1"),
            Self::EnabledWithoutOperations => {
                f.write_str("must list at least one operation when actions are enabled")
            }
            Self::NotAnOperation => f.write_str("is not one of the configured operations"),
            Self::StepUpValue => f.write_str("must be none or passkey"),
            Self::AudienceOtherServer => f.write_str(
                "must be a URL on the serverUrl's own scheme, host and port (a proof may only be addressed to this tenant's server)",
            ),
        }
    }
}

impl Translated for ConfigErrorReason {
    fn portuguese(&self) -> String {
        match self {
            Self::Required => "é obrigatório".into(),
            Self::WrongType { expected } => format!("deve ser do tipo {expected}"),
            Self::UnknownField => "não é um campo da configuração".into(),
            Self::InvalidUrl => "deve ser uma URL absoluta, com host".into(),
            Self::NotHttps => "deve usar https://".into(),
            Self::UrlHasCredentials => "não pode conter usuário ou senha".into(),
            Self::UrlHasFragment => "não pode conter um #fragmento".into(),
            Self::NotPublic => "deve apontar para um host público".into(),
            Self::TooLong { max } => format!("deve ter no máximo {max} caracteres"),
            Self::Empty => "não pode ficar vazio".into(),
            Self::InvalidCharacters => {
                "só pode conter caracteres ASCII visíveis (sem espaços)".into()
            }
            Self::InvalidName { .. } => "não é um nome válido: use letras, dígitos, _, - ou . (até 64 caracteres)".into(),
            Self::Reserved => "é um nome reservado do protocolo".into(),
            Self::NameIsOperation => {
                "também é o nome de uma operação; escritas só se configuram como operações".into()
            }
            Self::Duplicate => "aparece mais de uma vez".into(),
            Self::TooMany { max } => format!("deve ter no máximo {max} itens"),
            Self::NeedsOne => "deve ter pelo menos um item".into(),
            Self::ContractVersion => "deve ser 1".into(),
            Self::EnabledWithoutOperations => {
                "deve listar pelo menos uma operação quando as ações estão ativadas".into()
            }
            Self::NotAnOperation => "não é uma das operações configuradas".into(),
            Self::StepUpValue => "deve ser none ou passkey".into(),
            Self::AudienceOtherServer => "deve ser uma URL com o mesmo esquema, host e porta da URL do servidor (uma prova só pode ser endereçada ao servidor deste tenant)".into(),
        }
    }
}

/// A configuration field's name as the panel labels it, in `lang` (issue 50): the API's
/// path (`allowedTools[2]`) becomes "Consultations, item 3". An unknown path is itself.
#[must_use]
pub fn field_label(field: &str, lang: crate::language::Language) -> String {
    let pt = lang == crate::language::Language::Pt;
    let (path, index) = match field.split_once('[') {
        Some((path, rest)) => (path, rest.trim_end_matches(']').parse::<usize>().ok()),
        None => (field, None),
    };
    let label = match (path, pt) {
        ("serverUrl", false) => "MCP server URL",
        ("serverUrl", true) => "URL do servidor MCP",
        ("serviceToken", false) => "Service token",
        ("serviceToken", true) => "Token de serviço",
        ("allowedTools", false) => "Consultations",
        ("allowedTools", true) => "Consultas",
        ("audience", false) => "Audience",
        ("audience", true) => "Audiência",
        ("actionPolicy.operations", false) => "Operations",
        ("actionPolicy.operations", true) => "Operações",
        ("actionPolicy.enabled", false) => "Actions",
        ("actionPolicy.enabled", true) => "Ações",
        ("actionPolicy.contractVersion", false) => "Contract version",
        ("actionPolicy.contractVersion", true) => "Versão do contrato",
        ("actionPolicy", false) => "Action policy",
        ("actionPolicy", true) => "Política de ações",
        _ => return field.to_owned(),
    };
    match index {
        Some(i) => format!("{label}, item {}", i + 1),
        None => label.to_owned(),
    }
}

/// One invalid field: `{field, message}` in the admin API's 400 answer (C-11).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ConfigError {
    /// The field's path, e.g. `actionPolicy.operations[3]`.
    pub field: String,
    /// Why.
    pub reason: ConfigErrorReason,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.field, self.reason)
    }
}

pub(super) struct Errors(pub(super) Vec<ConfigError>);

impl Errors {
    pub(super) fn push(&mut self, field: impl Into<String>, reason: ConfigErrorReason) {
        self.0.push(ConfigError {
            field: field.into(),
            reason,
        });
    }
}
