//! A `PUT mcp` body's shape, read field by field into a draft (every wrong type reported
//! with its field), before the draft's rules are checked.

use super::*;

/// A value as an administrator gave it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Given<T> {
    /// Not given (or `null`).
    #[default]
    Absent,
    /// Given in a shape that cannot be it (already reported).
    Refused,
    /// Given.
    Value(T),
}

/// The MCP configuration as an administrator gave it — a `PUT mcp` body or the panel's
/// form — parsed but not checked: what [`McpConfigDraft::validate`] checks against every
/// rule (C-3, C-4, C-7, C-11). List items keep their position, so an error names the item
/// as it was given.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct McpConfigDraft {
    /// `serverUrl`.
    pub server_url: Given<String>,
    /// `serviceToken` (C-3: every save carries it).
    pub service_token: Given<String>,
    /// `audience` (absent: the `serverUrl`).
    pub audience: Given<String>,
    /// `allowedTools`.
    pub allowed_tools: Given<Vec<(usize, String)>>,
    /// `actionPolicy` (absent: actions off, C-7).
    pub action_policy: Given<PolicyDraft>,
}

/// The action policy as given.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PolicyDraft {
    /// `contractVersion` (must be 1).
    pub contract_version: Given<u64>,
    /// `enabled`.
    pub enabled: Given<bool>,
    /// `operations`.
    pub operations: Given<Vec<(usize, String)>>,
    /// `stepUp`: per operation, `none` or `passkey` (F-1); absent: every one `none`.
    pub step_up: Given<Vec<(String, String)>>,
    /// `stepUpFallback` (F-2): absent is `false`.
    pub step_up_fallback: Given<bool>,
}

impl McpConfigDraft {
    /// Every rule (C-3, C-4, C-7, C-11), every broken one reported at once.
    pub fn validate(self, policy: UrlPolicy) -> Result<McpConfig, Vec<ConfigError>> {
        self.check(policy, Errors(Vec::new()))
    }

    pub(super) fn check(
        self,
        policy: UrlPolicy,
        mut errs: Errors,
    ) -> Result<McpConfig, Vec<ConfigError>> {
        let server_url = required(self.server_url, "serverUrl", &mut errs).and_then(|s| {
            ServerUrl::parse(&s, policy)
                .map_err(|r| errs.push("serverUrl", r))
                .ok()
        });
        // C-3: every PUT carries the token again.
        let service_token = required(self.service_token, "serviceToken", &mut errs).and_then(|s| {
            header_safe("serviceToken", &s, MAX_TOKEN_LEN, &mut errs).then(|| SecretString::new(&s))
        });
        let audience = match self.audience {
            Given::Absent => Some(None),
            Given::Value(s) => {
                header_safe("audience", &s, MAX_AUDIENCE_LEN, &mut errs).then_some(Some(s))
            }
            Given::Refused => None,
        };
        if let (Some(url), Some(Some(aud))) = (&server_url, &audience)
            && !same_server(url, aud, policy)
        {
            errs.push("audience", ConfigErrorReason::AudienceOtherServer);
        }
        let action_policy = check_policy(self.action_policy, &mut errs);
        let allowed_tools = check_allowed_tools(self.allowed_tools, &action_policy, &mut errs);
        match (server_url, service_token, audience) {
            (Some(server_url), Some(service_token), Some(audience)) if errs.0.is_empty() => {
                Ok(McpConfig {
                    server_url,
                    service_token,
                    allowed_tools,
                    action_policy,
                    audience,
                    approved: crate::pinning::Approved::new(),
                })
            }
            _ => Err(in_field_order(errs.0)),
        }
    }

    /// A `PUT mcp` body's shape (an object of known fields: strings, lists of strings, the
    /// policy object), each shape error reported; `None` when it is not an object.
    pub(super) fn from_json(body: &Value, errs: &mut Errors) -> Option<Self> {
        let Value::Object(obj) = body else {
            let expected = "a JSON object";
            errs.push("", ConfigErrorReason::WrongType { expected });
            return None;
        };
        unknown_fields(obj, &TOP_FIELDS, "", errs);
        let action_policy = match obj.get("actionPolicy") {
            None | Some(Value::Null) => Given::Absent,
            Some(Value::Object(p)) => {
                unknown_fields(p, &POLICY_FIELDS, "actionPolicy.", errs);
                Given::Value(PolicyDraft {
                    contract_version: match p.get("contractVersion") {
                        None => Given::Absent,
                        Some(v) => v.as_u64().map_or(Given::Refused, Given::Value),
                    },
                    enabled: bool_given(p.get("enabled"), "actionPolicy.enabled", errs),
                    // `null` is a wrong shape here, not an absence.
                    operations: p.get("operations").map_or(Given::Absent, |v| {
                        string_list(v, "actionPolicy.operations", errs)
                    }),
                    step_up: step_up_given(p.get("stepUp"), errs),
                    // `null` is an absence here, as for `stepUp`.
                    step_up_fallback: bool_given(
                        p.get("stepUpFallback").filter(|v| !v.is_null()),
                        "actionPolicy.stepUpFallback",
                        errs,
                    ),
                })
            }
            Some(_) => {
                let expected = "an object";
                errs.push("actionPolicy", ConfigErrorReason::WrongType { expected });
                Given::Refused
            }
        };
        Some(Self {
            server_url: string_field(obj, "serverUrl", errs),
            service_token: string_field(obj, "serviceToken", errs),
            audience: string_field(obj, "audience", errs),
            allowed_tools: match obj.get("allowedTools") {
                None | Some(Value::Null) => Given::Absent,
                Some(v) => string_list(v, "allowedTools", errs),
            },
            action_policy,
        })
    }
}

/// A boolean as given: absent when missing, refused (reported) when not a boolean.
fn bool_given(v: Option<&Value>, field: &str, errs: &mut Errors) -> Given<bool> {
    match v {
        None => Given::Absent,
        Some(Value::Bool(b)) => Given::Value(*b),
        Some(_) => {
            let expected = "true or false";
            errs.push(field, ConfigErrorReason::WrongType { expected });
            Given::Refused
        }
    }
}

/// `actionPolicy.stepUp` as given: an object of strings (F-1).
fn step_up_given(v: Option<&Value>, errs: &mut Errors) -> Given<Vec<(String, String)>> {
    match v {
        None | Some(Value::Null) => Given::Absent,
        Some(Value::Object(m)) => {
            let mut out = Vec::new();
            for (name, value) in m {
                match value {
                    Value::String(s) => out.push((name.clone(), s.clone())),
                    _ => {
                        let field = format!(
                            "actionPolicy.stepUp.{}",
                            name.chars().take(64).collect::<String>()
                        );
                        errs.push(field, ConfigErrorReason::StepUpValue);
                    }
                }
            }
            Given::Value(out)
        }
        Some(_) => {
            let expected = "an object of operation: none or passkey";
            errs.push(
                "actionPolicy.stepUp",
                ConfigErrorReason::WrongType { expected },
            );
            Given::Refused
        }
    }
}

/// A required string: absent is `Required`; refused was reported already.
fn required(given: Given<String>, field: &str, errs: &mut Errors) -> Option<String> {
    match given {
        Given::Value(s) => Some(s),
        Given::Absent => {
            errs.push(field, ConfigErrorReason::Required);
            None
        }
        Given::Refused => None,
    }
}

/// Errors in the order of the form's fields (a body's unknown fields first), each field's
/// in the order found: the shape is read before the rules, and the first error is the one
/// an answer names.
fn in_field_order(mut errors: Vec<ConfigError>) -> Vec<ConfigError> {
    const ORDER: [&str; 9] = [
        "serverUrl",
        "serviceToken",
        "audience",
        "actionPolicy.contractVersion",
        "actionPolicy.enabled",
        "actionPolicy.operations",
        "actionPolicy.stepUp",
        "actionPolicy.stepUpFallback",
        "allowedTools",
    ];
    let rank = |field: &str| {
        let base = field.split('[').next().unwrap_or(field);
        let base = if base.starts_with("actionPolicy.stepUp.") {
            "actionPolicy.stepUp"
        } else {
            base
        };
        if base == "actionPolicy" {
            return 4;
        }
        if base.starts_with("actionPolicy.") && !ORDER.contains(&base) {
            return 4; // the policy's unknown fields, before its own
        }
        ORDER
            .iter()
            .position(|f| *f == base)
            .map_or(0, |i| if i < 3 { i + 1 } else { i + 2 })
    };
    errors.sort_by_key(|e| rank(&e.field));
    errors
}
