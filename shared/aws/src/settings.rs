//! Names of the AWS resources, read once from the environment at cold start.

/// Where Countersign's AWS resources are. Every field has a default matching
/// `template.yaml` and the local stack's bootstrap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AwsSettings {
    /// DynamoDB table (`COUNTERSIGN_TABLE`, default `countersign`).
    pub table: String,
    /// KMS key id, ARN or alias of the action signing key (`COUNTERSIGN_SIGNING_KEY`,
    /// default `alias/countersign-actions`). Empty means no signing key is installed
    /// (C-5: `actionVerification: null`).
    pub signing_key: Option<String>,
    /// Prefix of every Secrets Manager secret name (`COUNTERSIGN_SECRET_PREFIX`, default
    /// `countersign/`), so IAM policies can be scoped to it.
    pub secret_prefix: String,
    /// Days a conversation is kept after its last proposal became terminal
    /// (`COUNTERSIGN_RETENTION_DAYS`; unset or 0 keeps conversations forever). P-3.
    pub retention_days: Option<u32>,
}

/// The default alias of the action signing key.
pub const DEFAULT_SIGNING_KEY_ALIAS: &str = "alias/countersign-actions";

impl Default for AwsSettings {
    fn default() -> Self {
        Self {
            table: "countersign".to_owned(),
            signing_key: Some(DEFAULT_SIGNING_KEY_ALIAS.to_owned()),
            secret_prefix: "countersign/".to_owned(),
            retention_days: None,
        }
    }
}

impl AwsSettings {
    /// Every environment variable these settings read.
    pub const ENV: [&'static str; 4] = [
        "COUNTERSIGN_TABLE",
        "COUNTERSIGN_SIGNING_KEY",
        "COUNTERSIGN_SECRET_PREFIX",
        "COUNTERSIGN_RETENTION_DAYS",
    ];

    /// Reads the settings from the process environment.
    pub fn from_env() -> Self {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// Reads the settings through `get` (testable without touching the environment).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Self {
        let d = Self::default();
        Self {
            table: get("COUNTERSIGN_TABLE")
                .filter(|s| !s.is_empty())
                .unwrap_or(d.table),
            signing_key: match get("COUNTERSIGN_SIGNING_KEY") {
                Some(s) if s.is_empty() => None,
                Some(s) => Some(s),
                None => d.signing_key,
            },
            secret_prefix: get("COUNTERSIGN_SECRET_PREFIX")
                .filter(|s| !s.is_empty())
                .unwrap_or(d.secret_prefix),
            retention_days: get("COUNTERSIGN_RETENTION_DAYS")
                .and_then(|s| s.parse().ok())
                .filter(|d| *d > 0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        assert_eq!(AwsSettings::from_lookup(|_| None), AwsSettings::default());
        let s = AwsSettings::from_lookup(|k| match k {
            "COUNTERSIGN_TABLE" => Some("t1".into()),
            "COUNTERSIGN_SIGNING_KEY" => Some(String::new()),
            "COUNTERSIGN_RETENTION_DAYS" => Some("30".into()),
            _ => None,
        });
        assert_eq!(s.table, "t1");
        assert_eq!(s.signing_key, None);
        assert_eq!(s.retention_days, Some(30));
    }
}
