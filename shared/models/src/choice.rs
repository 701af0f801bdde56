//! Which model answers (M-1), chosen by configuration and validated at start:
//! `scripted` (the offline default), `bedrock:<model id>`, or `openai:<model>` with a
//! base URL and, for a service that wants one, the Secrets Manager secret of its key.

use url::Url;

/// The model chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelChoice {
    /// The deterministic scripted model (D-3).
    Scripted,
    /// Amazon Bedrock's Converse API.
    Bedrock {
        /// A model id, inference profile id or ARN.
        model_id: String,
    },
    /// An OpenAI-compatible chat completions endpoint.
    OpenAi {
        /// The `model` field.
        model: String,
        /// The base URL (`…/v1`, or an Azure deployment's).
        base_url: Url,
        /// The name or ARN of the Secrets Manager secret holding the API key (M-1);
        /// `None` for a server that takes none.
        api_key_secret: Option<String>,
    },
}

/// A refused setting: which variable, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{variable}: {problem}")]
pub struct ChoiceError {
    /// The variable at fault.
    pub variable: &'static str,
    /// What is wrong.
    pub problem: &'static str,
}

/// The variables read.
pub const MODEL: &str = "COUNTERSIGN_MODEL";
/// The OpenAI-compatible base URL.
pub const BASE_URL: &str = "COUNTERSIGN_MODEL_BASE_URL";
/// The API key's secret.
pub const API_KEY_SECRET: &str = "COUNTERSIGN_MODEL_API_KEY_SECRET";

fn refuse(variable: &'static str, problem: &'static str) -> ChoiceError {
    ChoiceError { variable, problem }
}

/// Bedrock model ids, inference profile ids and ARNs use these characters only.
fn bedrock_id_ok(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 2048
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._:/-".contains(c))
}

impl ModelChoice {
    /// Reads the choice from the three settings (each `None` when unset).
    pub fn parse(
        model: Option<&str>,
        base_url: Option<&str>,
        api_key_secret: Option<&str>,
    ) -> Result<Self, ChoiceError> {
        let model = model.map(str::trim).unwrap_or("scripted");
        let unused = |name: &'static str, value: Option<&str>| match value {
            Some(_) => Err(refuse(name, "is not used by the chosen model: unset it")),
            None => Ok(()),
        };
        match model.split_once(':') {
            None if model == "scripted" => {
                unused(BASE_URL, base_url)?;
                unused(API_KEY_SECRET, api_key_secret)?;
                Ok(Self::Scripted)
            }
            Some(("bedrock", id)) => {
                if !bedrock_id_ok(id) {
                    return Err(refuse(
                        MODEL,
                        "`bedrock:` must be followed by a Bedrock model id, inference profile id or ARN (letters, digits, `._:/-`)",
                    ));
                }
                unused(BASE_URL, base_url)?;
                unused(API_KEY_SECRET, api_key_secret)?;
                Ok(Self::Bedrock {
                    model_id: id.to_owned(),
                })
            }
            Some(("openai", name)) => {
                if name.trim().is_empty() || name.len() > 256 || name.chars().any(char::is_control)
                {
                    return Err(refuse(
                        MODEL,
                        "`openai:` must be followed by the model's name",
                    ));
                }
                let raw = base_url.ok_or_else(|| {
                    refuse(
                        BASE_URL,
                        "is required with `openai:` (for example https://api.openai.com/v1)",
                    )
                })?;
                let base = Url::parse(raw.trim()).map_err(|_| refuse(BASE_URL, "is not a URL"))?;
                if !matches!(base.scheme(), "https" | "http")
                    || base.host_str().is_none()
                    || !base.username().is_empty()
                    || base.password().is_some()
                    || base.fragment().is_some()
                {
                    return Err(refuse(
                        BASE_URL,
                        "must be an http(s) URL with a host and no credentials or fragment",
                    ));
                }
                let secret = api_key_secret.map(str::trim).filter(|s| !s.is_empty());
                Ok(Self::OpenAi {
                    model: name.to_owned(),
                    base_url: base,
                    api_key_secret: secret.map(str::to_owned),
                })
            }
            _ => Err(refuse(
                MODEL,
                "must be `scripted`, `bedrock:<model id>` or `openai:<model>`",
            )),
        }
    }

    /// The model id Bedrock is called with, when Bedrock is chosen.
    pub fn bedrock_model_id(&self) -> Option<&str> {
        match self {
            Self::Bedrock { model_id } => Some(model_id),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn m1_each_model_is_chosen_by_configuration() {
        assert_eq!(
            ModelChoice::parse(None, None, None).unwrap(),
            ModelChoice::Scripted
        );
        assert_eq!(
            ModelChoice::parse(
                Some("bedrock:anthropic.claude-3-5-haiku-20241022-v1:0"),
                None,
                None
            )
            .unwrap()
            .bedrock_model_id(),
            Some("anthropic.claude-3-5-haiku-20241022-v1:0")
        );
        let ModelChoice::OpenAi {
            model,
            base_url,
            api_key_secret,
        } = ModelChoice::parse(
            Some("openai:gpt-4.1-mini"),
            Some("https://api.openai.com/v1"),
            Some("countersign/openai-key"),
        )
        .unwrap()
        else {
            panic!("not openai")
        };
        assert_eq!(model, "gpt-4.1-mini");
        assert_eq!(base_url.as_str(), "https://api.openai.com/v1");
        assert_eq!(api_key_secret.as_deref(), Some("countersign/openai-key"));
    }

    #[test]
    fn m1_a_wrong_setting_names_its_variable() {
        for (model, base, secret, variable) in [
            (Some("gpt"), None, None, MODEL),
            (Some("bedrock:"), None, None, MODEL),
            (Some("bedrock:a b"), None, None, MODEL),
            (Some("openai:"), Some("https://x/v1"), None, MODEL),
            (Some("openai:m"), None, None, BASE_URL),
            (Some("openai:m"), Some("ftp://x/v1"), None, BASE_URL),
            (Some("openai:m"), Some("https://u:p@x/v1"), None, BASE_URL),
            (Some("scripted"), Some("https://x/v1"), None, BASE_URL),
            (Some("bedrock:m"), None, Some("s"), API_KEY_SECRET),
        ] {
            let e = ModelChoice::parse(model, base, secret).unwrap_err();
            assert_eq!(e.variable, variable, "{model:?} {base:?} {secret:?}");
        }
    }
}
