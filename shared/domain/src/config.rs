//! Tenant MCP configuration (C-3, C-4, C-7): validation of what an administrator saves.
//!
//! Validation reads the request body as JSON, so that a wrong type is reported with its
//! field name like any other rule, and returns **every** error, each naming its field
//! (`serverUrl`, `allowedTools[2]`, `actionPolicy.operations[0]`, …; C-11).
//!
//! `serverUrl` is checked here by syntax only (https, no credentials, no literal internal
//! address). Resolving the host and refusing non-public addresses (D-5) needs DNS, so it is
//! the admin function's and the provider client's job, using [`crate::net`].

use crate::ids::{OperationName, ToolName};
use crate::net::host_internal_reason;
use crate::secret::SecretString;
use serde_json::{Map, Value};
use std::collections::HashSet;
use std::fmt;

mod draft;
mod errors;

pub use draft::*;
pub use errors::*;

/// The three reserved tool names of the actions protocol.
pub const RESERVED_TOOLS: [&str; 3] = ["prepare_action", "execute_action", "get_action_status"];

/// The platform's own built-in tools besides `prepare_action`. A proxied tool may not take
/// one of these names, or it would shadow a built-in in the model's registry.
pub const BUILT_IN_TOOLS: [&str; 3] = ["list_operations", "action_status", "describe_tool"];

/// Name of a tenant's MCP service-token secret, under the deployment's secret prefix.
/// Every PUT writes a new version (C-3); old versions stay readable so an `unknown`
/// proposal can be reconciled with the integration it executed against (C-8).
pub fn service_token_secret_name(tenant: &crate::ids::TenantId) -> String {
    format!("tenants/{tenant}/mcp-service-token")
}

/// A web origin a widget credential may be used from (decision 0025): `https://host`
/// with an optional port, or `http://` on `localhost` / `127.0.0.1` / `[::1]` for a
/// tenant's own development; no path, query, fragment or credentials. Returns it
/// normalised as browsers send it in `Origin` (lower-case host, default port left out).
pub fn parse_origin(raw: &str) -> Result<String, &'static str> {
    const PROBLEM: &str = "must be an origin such as https://shop.example.com (https, a host, an optional port, nothing else)";
    let url = url::Url::parse(raw.trim()).map_err(|_| PROBLEM)?;
    let loopback = matches!(url.host_str(), Some("localhost" | "127.0.0.1" | "[::1]"));
    let scheme_ok = url.scheme() == "https" || (url.scheme() == "http" && loopback);
    let bare = matches!(url.path(), "" | "/")
        && url.query().is_none()
        && url.fragment().is_none()
        && url.username().is_empty()
        && url.password().is_none()
        && !raw.trim().ends_with('/');
    if !scheme_ok || !bare || url.host_str().is_none() {
        return Err(PROBLEM);
    }
    Ok(url.origin().ascii_serialization())
}

/// Name of a widget credential's secret (C-9, D-2), under the deployment's secret prefix.
pub fn widget_secret_name(tenant: &crate::ids::TenantId, key: &crate::ids::WidgetKeyId) -> String {
    format!("tenants/{tenant}/widget/{key}")
}

/// C-4: at most this many operations.
pub const MAX_OPERATIONS: usize = 50;
/// At most this many allowed consultations.
pub const MAX_ALLOWED_TOOLS: usize = 100;
/// Longest accepted `serverUrl`.
pub const MAX_URL_LEN: usize = 2048;
/// Longest accepted service token.
pub const MAX_TOKEN_LEN: usize = 4096;
/// Longest accepted explicit audience.
pub const MAX_AUDIENCE_LEN: usize = 512;

/// Whether the local stack's loopback provider is allowed (D-5). Off by default; the
/// deployed template never turns it on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UrlPolicy {
    /// Allows `http://127.0.0.1:PORT/…` and `https://127.0.0.1:PORT/…`.
    pub allow_loopback_http: bool,
}

/// A provider URL that passed the syntax rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerUrl(url::Url);

impl ServerUrl {
    /// Parses and checks a provider URL (C-3, D-5 syntax part).
    pub fn parse(s: &str, policy: UrlPolicy) -> Result<Self, ConfigErrorReason> {
        if s.len() > MAX_URL_LEN {
            return Err(ConfigErrorReason::TooLong { max: MAX_URL_LEN });
        }
        let url = url::Url::parse(s).map_err(|_| ConfigErrorReason::InvalidUrl)?;
        if !url.username().is_empty() || url.password().is_some() {
            return Err(ConfigErrorReason::UrlHasCredentials);
        }
        if url.fragment().is_some() {
            return Err(ConfigErrorReason::UrlHasFragment);
        }
        let host = url.host().ok_or(ConfigErrorReason::InvalidUrl)?;
        let loopback_literal =
            matches!(host, url::Host::Ipv4(ip) if ip == std::net::Ipv4Addr::LOCALHOST);
        if policy.allow_loopback_http && loopback_literal {
            return match url.scheme() {
                "http" | "https" => Ok(Self(url)),
                _ => Err(ConfigErrorReason::NotHttps),
            };
        }
        if url.scheme() != "https" {
            return Err(ConfigErrorReason::NotHttps);
        }
        if host_internal_reason(&host).is_some() {
            return Err(ConfigErrorReason::NotPublic);
        }
        Ok(Self(url))
    }

    /// The URL.
    pub fn as_url(&self) -> &url::Url {
        &self.0
    }

    /// The URL as text.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

impl fmt::Display for ServerUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.as_str())
    }
}

/// The action policy (C-3). Absent in a PUT means disabled (C-7).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ActionPolicy {
    /// Whether writes may be prepared at all.
    pub enabled: bool,
    /// The configured operations (distinct, at most 50).
    pub operations: Vec<OperationName>,
    /// F-1: the operations whose confirmation needs the person's passkey (`stepUp:
    /// "passkey"`); every other one is `none`.
    pub step_up: std::collections::BTreeSet<OperationName>,
    /// F-2 (recovery): whether a person who has no passkey for the tenant (never enrolled,
    /// or lost it) may confirm a `passkey` operation as a `none` one — the tenant's audited
    /// choice, off by default. Their proof is then a plain one, which a provider that
    /// requires the step-up for the operation refuses.
    pub step_up_fallback: bool,
}

impl ActionPolicy {
    /// F-1: whether confirming `operation` needs the person's passkey.
    pub fn needs_passkey(&self, operation: &OperationName) -> bool {
        self.step_up.contains(operation)
    }

    /// whether `operation` may be prepared: enabled and configured.
    pub fn allows(&self, operation: &OperationName) -> bool {
        self.enabled && self.operations.contains(operation)
    }
}

/// A validated tenant MCP configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpConfig {
    /// The provider's endpoint.
    pub server_url: ServerUrl,
    /// The service token (stored encrypted, never returned; C-3).
    pub service_token: SecretString,
    /// The consultations the model may call (C-4).
    pub allowed_tools: Vec<ToolName>,
    /// The action policy (C-7: disabled when absent).
    pub action_policy: ActionPolicy,
    /// An explicit proof audience, when the tenant sets one.
    pub audience: Option<String>,
    /// V-2: each allowed tool's approved descriptor form, set at save (never from the
    /// request body); empty for a configuration saved before pinning.
    pub approved: crate::pinning::Approved,
}

impl McpConfig {
    /// The proof audience: explicit, or else the `serverUrl`.
    pub fn audience(&self) -> &str {
        self.audience.as_deref().unwrap_or(self.server_url.as_str())
    }
}

/// The fields of a `PUT mcp` body (any other is refused).
pub const TOP_FIELDS: [&str; 5] = [
    "serverUrl",
    "serviceToken",
    "allowedTools",
    "actionPolicy",
    "audience",
];
/// The fields of its `actionPolicy`.
pub const POLICY_FIELDS: [&str; 5] = [
    "contractVersion",
    "enabled",
    "operations",
    "stepUp",
    "stepUpFallback",
];

fn unknown_fields(obj: &Map<String, Value>, allowed: &[&str], prefix: &str, errs: &mut Errors) {
    for k in obj.keys().filter(|k| !allowed.contains(&k.as_str())) {
        let name: String = k.chars().take(64).collect();
        errs.push(format!("{prefix}{name}"), ConfigErrorReason::UnknownField);
    }
}

fn header_safe(field: &str, s: &str, max: usize, errs: &mut Errors) -> bool {
    let before = errs.0.len();
    if s.is_empty() {
        errs.push(field, ConfigErrorReason::Empty);
    } else if !s.chars().all(|c| c.is_ascii_graphic()) {
        errs.push(field, ConfigErrorReason::InvalidCharacters);
    } else if s.len() > max {
        errs.push(field, ConfigErrorReason::TooLong { max });
    }
    errs.0.len() == before
}

fn string_list(v: &Value, field: &str, errs: &mut Errors) -> Given<Vec<(usize, String)>> {
    let Value::Array(items) = v else {
        errs.push(
            field,
            ConfigErrorReason::WrongType {
                expected: "an array of strings",
            },
        );
        return Given::Refused;
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        match item {
            Value::String(s) => out.push((i, s.clone())),
            _ => errs.push(
                format!("{field}[{i}]"),
                ConfigErrorReason::WrongType {
                    expected: "a string",
                },
            ),
        }
    }
    Given::Value(out)
}

/// A string field as given: absent when missing or null, refused (reported) when not a
/// string.
fn string_field(obj: &Map<String, Value>, field: &str, errs: &mut Errors) -> Given<String> {
    match obj.get(field) {
        None | Some(Value::Null) => Given::Absent,
        Some(Value::String(s)) => Given::Value(s.clone()),
        Some(_) => {
            let expected = "a string";
            errs.push(field, ConfigErrorReason::WrongType { expected });
            Given::Refused
        }
    }
}

/// Distinct names of a list: each parsed by `parse` and kept unless `refuse` names the
/// rule that forbids it. Also returns how many distinct names parsed (refused or not).
fn distinct_names<'a, T, E: fmt::Display>(
    items: Vec<(usize, &'a str)>,
    field: &str,
    max: usize,
    errs: &mut Errors,
    parse: impl Fn(&'a str) -> Result<T, E>,
    refuse: impl Fn(&str) -> Option<ConfigErrorReason>,
) -> (Vec<T>, usize) {
    if items.len() > max {
        errs.push(field, ConfigErrorReason::TooMany { max });
    }
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (i, s) in items {
        let item = format!("{field}[{i}]");
        match parse(s) {
            Err(e) => {
                let detail = e.to_string();
                errs.push(item, ConfigErrorReason::InvalidName { detail });
            }
            Ok(_) if !seen.insert(s) => errs.push(item, ConfigErrorReason::Duplicate),
            Ok(t) => match refuse(s) {
                Some(reason) => errs.push(item, reason),
                None => out.push(t),
            },
        }
    }
    (out, seen.len())
}

fn is_reserved(s: &str) -> bool {
    RESERVED_TOOLS.iter().any(|r| r.eq_ignore_ascii_case(s))
}

/// C-7: the action policy: absent (or refused as a whole) disables actions.
fn check_policy(given: Given<PolicyDraft>, errs: &mut Errors) -> ActionPolicy {
    let Given::Value(p) = given else {
        // C-7: a PUT without actionPolicy disables actions.
        return ActionPolicy::default();
    };
    match p.contract_version {
        Given::Absent => errs.push("actionPolicy.contractVersion", ConfigErrorReason::Required),
        Given::Value(v) if v == crate::contract::CONTRACT_VERSION => {}
        Given::Value(_) | Given::Refused => errs.push(
            "actionPolicy.contractVersion",
            ConfigErrorReason::ContractVersion,
        ),
    }
    let enabled = match p.enabled {
        Given::Absent => {
            errs.push("actionPolicy.enabled", ConfigErrorReason::Required);
            false
        }
        Given::Refused => false,
        Given::Value(b) => b,
    };
    let operations = match p.operations {
        Given::Absent => {
            errs.push("actionPolicy.operations", ConfigErrorReason::Required);
            Vec::new()
        }
        Given::Refused => Vec::new(),
        Given::Value(items) => check_operations(&items, enabled, errs),
    };
    let step_up = check_step_up(p.step_up, &operations, errs);
    ActionPolicy {
        enabled,
        operations,
        step_up,
        step_up_fallback: matches!(p.step_up_fallback, Given::Value(true)),
    }
}

/// F-1: each named operation's step-up, `none` or `passkey`; only configured operations.
fn check_step_up(
    given: Given<Vec<(String, String)>>,
    operations: &[OperationName],
    errs: &mut Errors,
) -> std::collections::BTreeSet<OperationName> {
    let Given::Value(entries) = given else {
        return std::collections::BTreeSet::new();
    };
    let mut passkey = std::collections::BTreeSet::new();
    for (name, value) in entries {
        let field = format!(
            "actionPolicy.stepUp.{}",
            name.chars().take(64).collect::<String>()
        );
        let Some(op) = operations.iter().find(|o| o.as_str() == name) else {
            errs.push(field, ConfigErrorReason::NotAnOperation);
            continue;
        };
        match value.as_str() {
            "none" => {}
            "passkey" => {
                passkey.insert(op.clone());
            }
            _ => errs.push(field, ConfigErrorReason::StepUpValue),
        }
    }
    passkey
}

/// C-7: the configured operations: distinct names, never a reserved tool's; at least one
/// when actions are enabled.
fn check_operations(
    items: &[(usize, String)],
    enabled: bool,
    errs: &mut Errors,
) -> Vec<OperationName> {
    const FIELD: &str = "actionPolicy.operations";
    let reserved = |s: &str| is_reserved(s).then_some(ConfigErrorReason::Reserved);
    let (operations, distinct) = distinct_names(
        borrowed(items),
        FIELD,
        MAX_OPERATIONS,
        errs,
        OperationName::parse,
        reserved,
    );
    if enabled && distinct == 0 {
        errs.push(FIELD, ConfigErrorReason::EnabledWithoutOperations);
    }
    operations
}

/// C-4: the consultations the model may call: at least one, distinct, never a reserved or
/// built-in tool's name (A-3, in any case, so no spelling variant slips through), never
/// an operation (a write is configured as an operation, never as a consultation).
fn check_allowed_tools(
    given: Given<Vec<(usize, String)>>,
    policy: &ActionPolicy,
    errs: &mut Errors,
) -> Vec<ToolName> {
    const FIELD: &str = "allowedTools";
    let items = match given {
        Given::Absent => {
            errs.push(FIELD, ConfigErrorReason::Required);
            return Vec::new();
        }
        Given::Refused => return Vec::new(),
        Given::Value(items) => items,
    };
    if items.is_empty() {
        errs.push(FIELD, ConfigErrorReason::NeedsOne);
    }
    let refuse = |s: &str| {
        let built_in = BUILT_IN_TOOLS.iter().any(|r| r.eq_ignore_ascii_case(s));
        if is_reserved(s) || built_in {
            Some(ConfigErrorReason::Reserved)
        } else if policy.operations.iter().any(|op| op.as_str() == s) {
            Some(ConfigErrorReason::NameIsOperation)
        } else {
            None
        }
    };
    distinct_names(
        borrowed(&items),
        FIELD,
        MAX_ALLOWED_TOOLS,
        errs,
        ToolName::parse,
        refuse,
    )
    .0
}

fn borrowed(items: &[(usize, String)]) -> Vec<(usize, &str)> {
    items.iter().map(|(i, s)| (*i, s.as_str())).collect()
}

/// Decision 0020: an explicit audience must name the tenant's own server — a URL with the
/// `serverUrl`'s scheme, host and port (any path) — so a tenant cannot make the platform
/// sign proofs addressed to another tenant's server.
fn same_server(server: &ServerUrl, audience: &str, policy: UrlPolicy) -> bool {
    let Ok(aud) = ServerUrl::parse(audience, policy) else {
        return false;
    };
    let (a, s) = (aud.as_url(), server.as_url());
    a.scheme() == s.scheme()
        && a.host_str().map(str::to_ascii_lowercase) == s.host_str().map(str::to_ascii_lowercase)
        && a.port_or_known_default() == s.port_or_known_default()
}

/// Validates a `PUT /api/admin/tenants/:id/mcp` body (C-3, C-4, C-7, C-11), reporting
/// every broken rule at once: its shape into a [`McpConfigDraft`], then the draft's rules.
pub fn validate_mcp_config(body: &Value, policy: UrlPolicy) -> Result<McpConfig, Vec<ConfigError>> {
    let mut errs = Errors(Vec::new());
    let Some(draft) = McpConfigDraft::from_json(body, &mut errs) else {
        return Err(errs.0);
    };
    draft.check(policy, errs)
}

/// A tenant's stored MCP configuration: without the token, which lives in the secret
/// store, referenced by version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredMcpConfig {
    /// The configuration; its `service_token` is empty here and read from the secret store.
    pub config: McpConfig,
    /// Grows on every change (the admin API's optimistic lock).
    pub version: u64,
    /// The `version` at which an action-relevant field (URL, service token, audience,
    /// action policy) last changed: proposals are prepared against it, and only its
    /// change invalidates them (C-7, C-8).
    pub actions_version: u64,
    /// The secret version holding this configuration's service token.
    pub secret_version: String,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Decision 0025: widget origins are bare https origins (http on loopback only),
    /// normalised as browsers send them.
    #[test]
    fn widget_origins_are_bare_https_origins() {
        assert_eq!(
            parse_origin("https://Shop.Example.com").as_deref(),
            Ok("https://shop.example.com")
        );
        assert_eq!(
            parse_origin("https://shop.example.com:443").as_deref(),
            Ok("https://shop.example.com")
        );
        assert_eq!(
            parse_origin("https://shop.example.com:8443").as_deref(),
            Ok("https://shop.example.com:8443")
        );
        assert_eq!(
            parse_origin("http://127.0.0.1:8701").as_deref(),
            Ok("http://127.0.0.1:8701")
        );
        for bad in [
            "http://shop.example.com",
            "https://shop.example.com/",
            "https://shop.example.com/path",
            "https://shop.example.com?x=1",
            "https://u:p@shop.example.com",
            "*",
            "null",
            "",
            "shop.example.com",
        ] {
            assert!(parse_origin(bad).is_err(), "{bad}");
        }
    }
    use serde_json::json;

    fn good() -> Value {
        json!({
            "serverUrl": "https://mcp.trackshare.example.com/mcp",
            "serviceToken": "svc_0123456789abcdef",
            "allowedTools": ["get_user_uploads", "get_user_sessions"],
            "actionPolicy": {"contractVersion": 1, "enabled": true, "operations": ["reassign_session_car"]}
        })
    }

    fn errors(v: Value) -> Vec<(String, ConfigErrorReason)> {
        validate_mcp_config(&v, UrlPolicy::default())
            .unwrap_err()
            .into_iter()
            .map(|e| (e.field, e.reason))
            .collect()
    }

    fn with(path: &[&str], value: Value) -> Value {
        let mut v = good();
        let mut cur = &mut v;
        for p in &path[..path.len() - 1] {
            cur = &mut cur[*p];
        }
        cur[path[path.len() - 1]] = value;
        v
    }

    /// The panel's typed draft and the API's JSON body are checked by the same rules: the
    /// same configuration, or the same errors in the same order.
    #[test]
    fn c3_a_draft_and_a_body_get_the_same_answer() {
        let listed = |items: &[&str]| {
            Given::Value(items.iter().map(|s| (*s).to_owned()).enumerate().collect())
        };
        let draft = |url: &str, tools: &[&str], ops: &[&str], enabled: bool| McpConfigDraft {
            server_url: Given::Value(url.to_owned()),
            service_token: Given::Value("svc_0123456789abcdef".to_owned()),
            audience: Given::Absent,
            allowed_tools: listed(tools),
            action_policy: Given::Value(PolicyDraft {
                contract_version: Given::Value(1),
                enabled: Given::Value(enabled),
                operations: listed(ops),
                step_up: Given::Absent,
                step_up_fallback: Given::Absent,
            }),
        };
        let body = |url: &str, tools: &[&str], ops: &[&str], enabled: bool| {
            json!({"serverUrl": url, "serviceToken": "svc_0123456789abcdef", "allowedTools": tools,
                   "actionPolicy": {"contractVersion": 1, "enabled": enabled, "operations": ops}})
        };
        let cases: [(&str, &[&str], &[&str], bool); 4] = [
            (
                "https://mcp.example.com/mcp",
                &["get_user_cars"],
                &["move"],
                true,
            ),
            (
                "http://mcp.example.com/mcp",
                &["move", "get_user_cars", "get_user_cars"],
                &[],
                true,
            ),
            ("not a url", &[], &["describe_tool"], false),
            (
                "https://127.0.0.1/",
                &["list_operations", "a b"],
                &["x", "x"],
                true,
            ),
        ];
        for (url, tools, ops, enabled) in cases {
            let typed = draft(url, tools, ops, enabled).validate(UrlPolicy::default());
            let json = validate_mcp_config(&body(url, tools, ops, enabled), UrlPolicy::default());
            assert_eq!(typed, json, "{url} {tools:?} {ops:?}");
        }
    }

    /// F-1: `stepUp` names configured operations, each `none` or `passkey`; absent, every
    /// operation is `none`.
    #[test]
    fn f1_step_up_is_per_configured_operation() {
        let c = validate_mcp_config(&good(), UrlPolicy::default()).unwrap();
        assert!(c.action_policy.step_up.is_empty());
        let op = OperationName::parse("reassign_session_car").unwrap();
        let c = validate_mcp_config(
            &with(
                &["actionPolicy", "stepUp"],
                json!({"reassign_session_car": "passkey"}),
            ),
            UrlPolicy::default(),
        )
        .unwrap();
        assert!(c.action_policy.needs_passkey(&op));
        let c = validate_mcp_config(
            &with(
                &["actionPolicy", "stepUp"],
                json!({"reassign_session_car": "none"}),
            ),
            UrlPolicy::default(),
        )
        .unwrap();
        assert!(!c.action_policy.needs_passkey(&op));
        assert_eq!(
            errors(with(
                &["actionPolicy", "stepUp"],
                json!({"delete_account": "passkey"})
            )),
            vec![(
                "actionPolicy.stepUp.delete_account".into(),
                ConfigErrorReason::NotAnOperation
            )]
        );
        assert_eq!(
            errors(with(
                &["actionPolicy", "stepUp"],
                json!({"reassign_session_car": "sms"})
            )),
            vec![(
                "actionPolicy.stepUp.reassign_session_car".into(),
                ConfigErrorReason::StepUpValue
            )]
        );
        assert_eq!(
            errors(with(
                &["actionPolicy", "stepUp"],
                json!({"reassign_session_car": true})
            )),
            vec![(
                "actionPolicy.stepUp.reassign_session_car".into(),
                ConfigErrorReason::StepUpValue
            )]
        );
        assert_eq!(
            errors(with(&["actionPolicy", "stepUp"], json!(["passkey"]))),
            vec![(
                "actionPolicy.stepUp".into(),
                ConfigErrorReason::WrongType {
                    expected: "an object of operation: none or passkey"
                }
            )]
        );
    }

    /// F-2: `stepUpFallback` is off unless given as `true`; anything but a boolean is
    /// refused under its own field.
    #[test]
    fn f2_step_up_fallback_is_off_by_default_and_a_boolean() {
        let c = validate_mcp_config(&good(), UrlPolicy::default()).unwrap();
        assert!(!c.action_policy.step_up_fallback);
        let on = with(&["actionPolicy", "stepUpFallback"], json!(true));
        let c = validate_mcp_config(&on, UrlPolicy::default()).unwrap();
        assert!(c.action_policy.step_up_fallback);
        assert_eq!(
            errors(with(&["actionPolicy", "stepUpFallback"], json!("yes"))),
            vec![(
                "actionPolicy.stepUpFallback".into(),
                ConfigErrorReason::WrongType {
                    expected: "true or false"
                }
            )]
        );
    }

    /// C-3: a complete, valid configuration.
    #[test]
    fn c3_valid_configuration() {
        let c = validate_mcp_config(&good(), UrlPolicy::default()).unwrap();
        assert_eq!(
            c.server_url.as_str(),
            "https://mcp.trackshare.example.com/mcp"
        );
        assert_eq!(c.allowed_tools.len(), 2);
        assert!(
            c.action_policy
                .allows(&OperationName::parse("reassign_session_car").unwrap())
        );
        assert!(
            !c.action_policy
                .allows(&OperationName::parse("delete_account").unwrap())
        );
        assert_eq!(c.audience(), "https://mcp.trackshare.example.com/mcp");
        assert!(!format!("{c:?}").contains("svc_0123456789abcdef"));
    }

    /// C-7: without actionPolicy, actions are disabled.
    #[test]
    fn c7_missing_policy_disables_actions() {
        let mut v = good();
        v.as_object_mut().unwrap().remove("actionPolicy");
        let c = validate_mcp_config(&v, UrlPolicy::default()).unwrap();
        assert_eq!(c.action_policy, ActionPolicy::default());
        assert!(
            !c.action_policy
                .allows(&OperationName::parse("reassign_session_car").unwrap())
        );
        // A disabled policy keeps its operations but allows none of them.
        let c = validate_mcp_config(
            &with(&["actionPolicy", "enabled"], json!(false)),
            UrlPolicy::default(),
        )
        .unwrap();
        assert_eq!(c.action_policy.operations.len(), 1);
        assert!(!c.action_policy.allows(&c.action_policy.operations[0]));
    }

    /// C-3, D-5: serverUrl is https, without credentials, not a literal internal host.
    #[test]
    fn c3_server_url_rules() {
        let cases = [
            (
                json!("http://mcp.example.com/mcp"),
                ConfigErrorReason::NotHttps,
            ),
            (json!("ftp://mcp.example.com/"), ConfigErrorReason::NotHttps),
            (
                json!("https://user:pw@mcp.example.com/"),
                ConfigErrorReason::UrlHasCredentials,
            ),
            (
                json!("https://mcp.example.com/#x"),
                ConfigErrorReason::UrlHasFragment,
            ),
            (json!("not a url"), ConfigErrorReason::InvalidUrl),
            (json!("https://127.0.0.1/mcp"), ConfigErrorReason::NotPublic),
            (
                json!("https://169.254.169.254/"),
                ConfigErrorReason::NotPublic,
            ),
            (json!("https://[::1]/"), ConfigErrorReason::NotPublic),
            (json!("https://mcp.internal/"), ConfigErrorReason::NotPublic),
            (
                json!("https://localhost:8443/"),
                ConfigErrorReason::NotPublic,
            ),
            (
                json!(format!("https://e.com/{}", "a".repeat(2100))),
                ConfigErrorReason::TooLong { max: MAX_URL_LEN },
            ),
            (
                json!(42),
                ConfigErrorReason::WrongType {
                    expected: "a string",
                },
            ),
        ];
        for (url, reason) in cases {
            assert_eq!(
                errors(with(&["serverUrl"], url.clone())),
                vec![("serverUrl".into(), reason)],
                "{url}"
            );
        }
    }

    /// D-5: the explicit local-stack setting allows loopback http, and nothing else.
    #[test]
    fn d5_local_stack_setting_allows_only_loopback() {
        let local = UrlPolicy {
            allow_loopback_http: true,
        };
        assert!(
            validate_mcp_config(
                &with(&["serverUrl"], json!("http://127.0.0.1:9100/mcp")),
                local
            )
            .is_ok()
        );
        assert!(
            validate_mcp_config(
                &with(&["serverUrl"], json!("http://10.0.0.1:9100/mcp")),
                local
            )
            .is_err()
        );
        assert!(
            validate_mcp_config(
                &with(&["serverUrl"], json!("http://example.com/mcp")),
                local
            )
            .is_err()
        );
        assert!(
            validate_mcp_config(
                &with(&["serverUrl"], json!("http://127.0.0.1:9100/mcp")),
                UrlPolicy::default()
            )
            .is_err()
        );
    }

    /// C-3: the service token is required on every PUT and must be header-safe.
    #[test]
    fn c3_service_token_rules() {
        let mut v = good();
        v.as_object_mut().unwrap().remove("serviceToken");
        assert_eq!(
            errors(v),
            vec![("serviceToken".into(), ConfigErrorReason::Required)]
        );
        assert_eq!(
            errors(with(&["serviceToken"], json!(""))),
            vec![("serviceToken".into(), ConfigErrorReason::Empty)]
        );
        assert_eq!(
            errors(with(&["serviceToken"], json!("abc\r\nX-Evil: 1"))),
            vec![("serviceToken".into(), ConfigErrorReason::InvalidCharacters)]
        );
    }

    /// C-4, A-3: allowedTools is non-empty, valid, distinct, never reserved, never an
    /// operation.
    #[test]
    fn c4_allowed_tools_rules() {
        assert_eq!(
            errors(with(&["allowedTools"], json!([]))),
            vec![("allowedTools".into(), ConfigErrorReason::NeedsOne)]
        );
        let e = errors(with(
            &["allowedTools"],
            json!([
                "get_user_uploads",
                "prepare_action",
                "Execute_Action",
                "get_user_uploads",
                "bad name",
                "reassign_session_car",
                "describe_tool",
                7
            ]),
        ));
        assert_eq!(
            e.iter().map(|(f, _)| f.as_str()).collect::<Vec<_>>(),
            vec![
                "allowedTools[7]",
                "allowedTools[1]",
                "allowedTools[2]",
                "allowedTools[3]",
                "allowedTools[4]",
                "allowedTools[5]",
                "allowedTools[6]"
            ]
        );
        assert_eq!(e[1].1, ConfigErrorReason::Reserved);
        assert_eq!(e[2].1, ConfigErrorReason::Reserved);
        assert_eq!(e[3].1, ConfigErrorReason::Duplicate);
        assert!(matches!(e[4].1, ConfigErrorReason::InvalidName { .. }));
        assert_eq!(e[5].1, ConfigErrorReason::NameIsOperation);
        assert_eq!(e[6].1, ConfigErrorReason::Reserved);
    }

    /// C-4: operations are 1–64 chars of [A-Za-z0-9_-], at most 50, distinct, and at least
    /// one when enabled; contractVersion is 1.
    #[test]
    fn c4_action_policy_rules() {
        let ops = |v: Value| with(&["actionPolicy", "operations"], v);
        assert_eq!(
            errors(ops(json!([]))),
            vec![(
                "actionPolicy.operations".into(),
                ConfigErrorReason::EnabledWithoutOperations
            )]
        );
        assert!(
            validate_mcp_config(
                &with(
                    &["actionPolicy"],
                    json!({"contractVersion": 1, "enabled": false, "operations": []})
                ),
                UrlPolicy::default()
            )
            .is_ok()
        );
        let fifty: Vec<String> = (0..50).map(|i| format!("op_{i}")).collect();
        assert!(validate_mcp_config(&ops(json!(fifty)), UrlPolicy::default()).is_ok());
        let fifty_one: Vec<String> = (0..51).map(|i| format!("op_{i}")).collect();
        assert_eq!(
            errors(ops(json!(fifty_one))),
            vec![(
                "actionPolicy.operations".into(),
                ConfigErrorReason::TooMany { max: 50 }
            )]
        );
        let e = errors(ops(json!([
            "a",
            "a",
            "x".repeat(65),
            "with space",
            "execute_action"
        ])));
        assert_eq!(
            e[0],
            (
                "actionPolicy.operations[1]".into(),
                ConfigErrorReason::Duplicate
            )
        );
        assert_eq!(e[1].0, "actionPolicy.operations[2]");
        assert_eq!(e[2].0, "actionPolicy.operations[3]");
        assert_eq!(
            e[3],
            (
                "actionPolicy.operations[4]".into(),
                ConfigErrorReason::Reserved
            )
        );
        assert_eq!(
            errors(with(&["actionPolicy", "contractVersion"], json!(2))),
            vec![(
                "actionPolicy.contractVersion".into(),
                ConfigErrorReason::ContractVersion
            )]
        );
        assert_eq!(
            errors(with(&["actionPolicy", "enabled"], json!("yes"))),
            vec![(
                "actionPolicy.enabled".into(),
                ConfigErrorReason::WrongType {
                    expected: "true or false"
                }
            )]
        );
    }

    /// C-11: unknown fields and non-objects are named; every error is reported at once.
    #[test]
    fn c11_every_error_names_its_field() {
        assert_eq!(
            errors(json!([])),
            vec![(
                String::new(),
                ConfigErrorReason::WrongType {
                    expected: "a JSON object"
                }
            )]
        );
        let e = errors(
            json!({"serverUrl": "http://x", "allowedTools": "a", "extra": 1, "actionPolicy": {"enabled": true, "operations": [], "x": 1}}),
        );
        let fields: Vec<&str> = e.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            fields,
            vec![
                "extra",
                "serverUrl",
                "serviceToken",
                "actionPolicy.x",
                "actionPolicy.contractVersion",
                "actionPolicy.operations",
                "allowedTools"
            ]
        );
        for err in validate_mcp_config(&json!({"extra": 1}), UrlPolicy::default()).unwrap_err() {
            assert!(err.to_string().starts_with(&err.field));
        }
    }

    /// Decision 0020: an explicit audience names this tenant's own server (same scheme,
    /// host and port, any path); another host, scheme or port is refused on `audience`.
    #[test]
    fn the_audience_must_name_the_tenants_own_server() {
        for ok in [
            "https://mcp.trackshare.example.com/mcp",
            "https://MCP.trackshare.example.com/actions",
            "https://mcp.trackshare.example.com:443/",
        ] {
            let v = with(&["audience"], json!(ok));
            assert!(
                validate_mcp_config(&v, UrlPolicy::default()).is_ok(),
                "{ok}"
            );
        }
        for bad in [
            "https://mcp.othertenant.example.com/mcp",
            "http://mcp.trackshare.example.com/mcp",
            "https://mcp.trackshare.example.com:8443/mcp",
            "trackshare-actions",
            "https://trackshare.example.com/mcp",
        ] {
            let v = with(&["audience"], json!(bad));
            assert_eq!(
                errors(v),
                vec![(
                    "audience".to_owned(),
                    ConfigErrorReason::AudienceOtherServer
                )],
                "{bad}"
            );
        }
    }
}
