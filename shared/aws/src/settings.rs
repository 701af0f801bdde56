//! Configuration read once from the environment at cold start: the names of the AWS
//! resources ([`AwsSettings`]), and [`Env`], the typed reader every function's
//! configuration uses, whose errors name the variable that is wrong.

use std::time::Duration;

/// A variable that is set but wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name}: {problem} (found {found:?})")]
pub struct EnvError {
    /// The variable.
    pub name: &'static str,
    /// What it must be.
    pub problem: &'static str,
    /// What it was.
    pub found: String,
}

/// The default `iss` of proofs and receipts when `COUNTERSIGN_ISSUER` is unset.
pub const DEFAULT_ISSUER: &str = "https://support.example.com/mcp-actions";

/// Reads variables through a lookup (the process environment, or a map in tests).
pub struct Env<'a> {
    get: &'a dyn Fn(&str) -> Option<String>,
}

impl std::fmt::Debug for Env<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Env")
    }
}

/// A configuration read once from the environment.
pub trait FromEnv: Sized {
    /// Reads and checks every variable; an error names the one that is wrong.
    fn read(env: &Env<'_>) -> Result<Self, EnvError>;

    /// From the process environment.
    fn from_env() -> Result<Self, EnvError> {
        Self::read(&Env::new(&process_env))
    }

    /// From `vars` alone, as if they were the whole environment (tests).
    fn from_pairs(vars: &[(&str, &str)]) -> Result<Self, EnvError> {
        let get = |k: &str| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_owned())
        };
        Self::read(&Env::new(&get))
    }
}

/// The process environment as a lookup.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

impl<'a> Env<'a> {
    /// Over `get`.
    pub fn new(get: &'a dyn Fn(&str) -> Option<String>) -> Self {
        Self { get }
    }

    /// The value, if set and not empty.
    pub fn string(&self, name: &'static str) -> Option<String> {
        (self.get)(name).filter(|s| !s.is_empty())
    }

    /// Whole seconds, or `default` when unset.
    pub fn seconds(&self, name: &'static str, default: u64) -> Result<Duration, EnvError> {
        self.parse(name, "whole seconds")
            .map(|v| Duration::from_secs(v.unwrap_or(default)))
    }

    /// A per-minute budget (decision 0021): a whole number from 1, or `default` when
    /// unset.
    pub fn per_minute(&self, name: &'static str, default: u32) -> Result<u32, EnvError> {
        let problem = "must be a whole number from 1";
        match self.parse::<u32>(name, problem)? {
            None => Ok(default),
            Some(0) => Err(EnvError {
                name,
                problem,
                found: "0".into(),
            }),
            Some(n) => Ok(n),
        }
    }

    /// `1` (on) or `0` (off); unset is off.
    pub fn flag(&self, name: &'static str) -> Result<bool, EnvError> {
        match self.string(name).as_deref() {
            None | Some("0") => Ok(false),
            Some("1") => Ok(true),
            Some(other) => Err(EnvError {
                name,
                problem: "must be 1 or 0",
                found: other.to_owned(),
            }),
        }
    }

    /// The proofs' and receipts' `iss`: `COUNTERSIGN_ISSUER`, else
    /// [`DEFAULT_ISSUER`]. Every function reads it so, so they cannot disagree.
    pub fn issuer(&self) -> String {
        self.string("COUNTERSIGN_ISSUER")
            .unwrap_or_else(|| DEFAULT_ISSUER.into())
    }

    /// A local-stack allowance (`1` or `0`), such as the loopback provider allowance of
    /// D-5: never in force inside Lambda (`AWS_LAMBDA_RUNTIME_API` set), where it is
    /// ignored with a warning, so a deployment cannot be opened by a stray variable.
    pub fn local_stack_flag(&self, name: &'static str) -> Result<bool, EnvError> {
        let on = self.flag(name)?;
        if on && self.string("AWS_LAMBDA_RUNTIME_API").is_some() {
            tracing::warn!(variable = name, "ignored inside Lambda: local stack only");
            return Ok(false);
        }
        Ok(on)
    }

    /// F-3: where the passkey ceremonies run (`COUNTERSIGN_STEP_UP_ORIGIN`: the
    /// confirmation page's public origin); unset, no passkey operation can be confirmed.
    pub fn step_up_site(
        &self,
        local: bool,
    ) -> Result<Option<countersign_domain::stepup::Site>, EnvError> {
        const NAME: &str = "COUNTERSIGN_STEP_UP_ORIGIN";
        self.string(NAME)
            .map(|origin| {
                countersign_domain::stepup::Site::from_origin(&origin, local).map_err(|problem| {
                    EnvError {
                        name: NAME,
                        problem,
                        found: origin.clone(),
                    }
                })
            })
            .transpose()
    }

    /// A comma-separated list, trimmed, without empty items.
    pub fn list(&self, name: &'static str) -> Vec<String> {
        self.string(name)
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    }

    /// The value parsed as `T`, if set.
    pub fn parse<T: std::str::FromStr>(
        &self,
        name: &'static str,
        problem: &'static str,
    ) -> Result<Option<T>, EnvError> {
        self.string(name)
            .map(|v| {
                v.trim().parse().map_err(|_| EnvError {
                    name,
                    problem,
                    found: v.clone(),
                })
            })
            .transpose()
    }
}

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
    /// the retention of a tenant that has not set its own `retentionDays`: days a
    /// conversation is kept after its last activity (`COUNTERSIGN_RETENTION_DAYS`; unset
    /// or 0 keeps such tenants' conversations until they set one). Applied by the purge.
    pub retention_days: Option<u32>,
    /// How long a process signs with the key it resolved before looking at the alias
    /// again (`COUNTERSIGN_SIGNING_KEY_REFRESH_SECS`, default and most 60; K-2).
    pub signing_key_refresh: Duration,
    /// KMS key id, ARN or alias of the audit checkpoint key (`COUNTERSIGN_CHECKPOINT_KEY`,
    /// default `alias/countersign-checkpoints`; V-6: never the action key). Empty means
    /// no checkpoint key: checkpoints are refused as unavailable.
    pub checkpoint_key: Option<String>,
    /// KMS key id, ARN or alias of the symmetric key that wraps people's data keys
    /// (`COUNTERSIGN_SUBJECT_KEY`, default `alias/countersign-subjects`). Empty means none:
    /// audit records are written with their personal fields in clear.
    pub subject_key: Option<String>,
    /// O-3: every AWS call also counts in the EMF metrics `aws_calls_total{operation}` and
    /// `dynamodb_units_estimate_total{kind}` (`COUNTERSIGN_AWS_CALL_METRICS=1`; off by
    /// default: each distinct metric is a billed custom metric). The cost measurement
    /// turns it on.
    pub call_metrics: bool,
}

/// The default alias of the action signing key.
pub const DEFAULT_SIGNING_KEY_ALIAS: &str = "alias/countersign-actions";

/// The default alias of the audit checkpoint key (V-6).
pub const DEFAULT_CHECKPOINT_KEY_ALIAS: &str = "alias/countersign-checkpoints";

/// The default alias of the people's data-key wrapping key.
pub const DEFAULT_SUBJECT_KEY_ALIAS: &str = "alias/countersign-subjects";

impl Default for AwsSettings {
    fn default() -> Self {
        Self {
            table: "countersign".to_owned(),
            signing_key: Some(DEFAULT_SIGNING_KEY_ALIAS.to_owned()),
            secret_prefix: "countersign/".to_owned(),
            retention_days: None,
            signing_key_refresh: crate::kms::DEFAULT_REFRESH,
            checkpoint_key: Some(DEFAULT_CHECKPOINT_KEY_ALIAS.to_owned()),
            subject_key: Some(DEFAULT_SUBJECT_KEY_ALIAS.to_owned()),
            call_metrics: false,
        }
    }
}

impl AwsSettings {
    /// Every environment variable these settings read.
    pub const ENV: [&'static str; 8] = [
        "COUNTERSIGN_TABLE",
        "COUNTERSIGN_SIGNING_KEY",
        "COUNTERSIGN_CHECKPOINT_KEY",
        "COUNTERSIGN_SUBJECT_KEY",
        "COUNTERSIGN_SECRET_PREFIX",
        "COUNTERSIGN_RETENTION_DAYS",
        "COUNTERSIGN_SIGNING_KEY_REFRESH_SECS",
        "COUNTERSIGN_AWS_CALL_METRICS",
    ];

    /// Reads the settings from the process environment.
    pub fn from_env() -> Result<Self, EnvError> {
        Self::read(&Env::new(&process_env))
    }

    /// Reads the settings through `get` (testable without touching the environment).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, EnvError> {
        Self::read(&Env::new(&get))
    }

    /// Reads the settings.
    pub fn read(env: &Env<'_>) -> Result<Self, EnvError> {
        let d = Self::default();
        // An empty COUNTERSIGN_SIGNING_KEY means "no key" (C-5), unlike unset.
        let signing_key = match (env.get)("COUNTERSIGN_SIGNING_KEY") {
            Some(s) if s.is_empty() => None,
            Some(s) => Some(s),
            None => d.signing_key,
        };
        let checkpoint_key = match (env.get)("COUNTERSIGN_CHECKPOINT_KEY") {
            Some(s) if s.is_empty() => None,
            Some(s) => Some(s),
            None => d.checkpoint_key,
        };
        let subject_key = match (env.get)("COUNTERSIGN_SUBJECT_KEY") {
            Some(s) if s.is_empty() => None,
            Some(s) => Some(s),
            None => d.subject_key,
        };
        let retention: Option<u32> =
            env.parse("COUNTERSIGN_RETENTION_DAYS", "a whole number of days")?;
        Ok(Self {
            table: env.string("COUNTERSIGN_TABLE").unwrap_or(d.table),
            signing_key,
            checkpoint_key,
            subject_key,
            secret_prefix: env
                .string("COUNTERSIGN_SECRET_PREFIX")
                .unwrap_or(d.secret_prefix),
            retention_days: retention.filter(|d| *d > 0),
            signing_key_refresh: env
                .seconds(
                    "COUNTERSIGN_SIGNING_KEY_REFRESH_SECS",
                    d.signing_key_refresh.as_secs(),
                )?
                .min(d.signing_key_refresh),
            call_metrics: env.flag("COUNTERSIGN_AWS_CALL_METRICS")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        assert_eq!(
            AwsSettings::from_lookup(|_| None).unwrap(),
            AwsSettings::default()
        );
        let s = AwsSettings::from_lookup(|k| match k {
            "COUNTERSIGN_TABLE" => Some("t1".into()),
            "COUNTERSIGN_SIGNING_KEY" => Some(String::new()),
            "COUNTERSIGN_RETENTION_DAYS" => Some("30".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(s.table, "t1");
        assert_eq!(s.signing_key, None);
        assert_eq!(s.retention_days, Some(30));
    }

    #[test]
    fn a_wrong_value_is_an_error_naming_the_variable() {
        let e = AwsSettings::from_lookup(|k| {
            (k == "COUNTERSIGN_RETENTION_DAYS").then(|| "thirty".to_owned())
        })
        .unwrap_err();
        assert_eq!(e.name, "COUNTERSIGN_RETENTION_DAYS");
        assert!(e.to_string().starts_with("COUNTERSIGN_RETENTION_DAYS: "));
        let get = |k: &str| (k == "X_FLAG").then(|| "yes".to_owned());
        let env = Env::new(&get);
        assert_eq!(env.flag("X_FLAG").unwrap_err().name, "X_FLAG");
        assert_eq!(env.flag("OTHER"), Ok(false));
        let get = |k: &str| (k == "X_SECS").then(|| "1.5".to_owned());
        assert!(Env::new(&get).seconds("X_SECS", 3).is_err());
        assert_eq!(
            Env::new(&get).seconds("Y_SECS", 3),
            Ok(Duration::from_secs(3))
        );
    }
}
