//! V-5: who a KMS key policy lets sign. `keys announce` refuses a key whose policy lets
//! anyone but the messages function's role sign: a key another principal can use would let
//! it forge proofs every provider accepts.
//!
//! Read conservatively: a conditional grant still grants; `NotAction` or `NotPrincipal`
//! with `Allow` grant what they do not exclude; an unreadable policy is an error.

use serde_json::Value;
use std::collections::BTreeSet;

/// The policy is not a JSON key policy this reader understands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the key policy cannot be read: {0}")]
pub struct PolicyError(pub String);

/// Every principal an `Allow` statement of `policy` lets call `kms:Sign` (`*` for anyone;
/// `service:<name>` for a service principal).
pub fn sign_principals(policy: &str) -> Result<BTreeSet<String>, PolicyError> {
    principals_granted(policy, "kms:Sign")
}

/// Whether `principal` (as [`principals_granted`] lists it) is the account itself or
/// anyone: `*`, `arn:<partition>:iam::<account>:root` or a bare account id.
pub fn is_account(principal: &str) -> bool {
    principal == "*"
        || principal.ends_with(":root")
        || (principal.len() == 12 && principal.bytes().all(|b| b.is_ascii_digit()))
}

/// N-8: the actions that hand a key's power to someone else: granting its use, changing
/// its policy, moving its alias. A deployment grants the first to no one and the others
/// to its key administrator alone.
pub const ESCALATING: [&str; 3] = ["kms:CreateGrant", "kms:PutKeyPolicy", "kms:UpdateAlias"];

/// Every principal an `Allow` statement of `policy` lets call `action` (read as
/// [`sign_principals`] reads `kms:Sign`: wildcards, `NotAction` and `NotPrincipal`
/// included).
pub fn principals_granted(policy: &str, action: &str) -> Result<BTreeSet<String>, PolicyError> {
    let action = action.to_lowercase();
    let doc: Value = serde_json::from_str(policy).map_err(|e| PolicyError(e.to_string()))?;
    let statements = match doc.get("Statement") {
        Some(Value::Array(s)) => s.clone(),
        Some(s @ Value::Object(_)) => vec![s.clone()],
        _ => return Err(PolicyError("no Statement".into())),
    };
    let mut out = BTreeSet::new();
    for s in &statements {
        if s.get("Effect").and_then(Value::as_str) != Some("Allow") || !grants(s, &action) {
            continue;
        }
        if s.get("NotPrincipal").is_some() {
            out.insert("*".to_owned());
            continue;
        }
        match s.get("Principal") {
            Some(Value::String(p)) if p == "*" => {
                out.insert("*".to_owned());
            }
            Some(Value::Object(m)) => {
                for (kind, v) in m {
                    for p in strings(v) {
                        out.insert(match kind.as_str() {
                            "AWS" if p == "*" => "*".to_owned(),
                            "AWS" => p,
                            other => format!("{}:{p}", other.to_lowercase()),
                        });
                    }
                }
            }
            other => return Err(PolicyError(format!("unreadable Principal {other:?}"))),
        }
    }
    Ok(out)
}

fn strings(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

/// Whether the statement's actions include `action` (lower case).
fn grants(s: &Value, action: &str) -> bool {
    if let Some(not) = s.get("NotAction") {
        return !strings(not).iter().any(|a| matches(a, action));
    }
    s.get("Action")
        .is_some_and(|a| strings(a).iter().any(|a| matches(a, action)))
}

/// IAM's action glob (`*` any run, `?` one character), case-insensitive.
fn matches(pattern: &str, action: &str) -> bool {
    fn go(p: &[u8], a: &[u8]) -> bool {
        match (p.first(), a.first()) {
            (None, None) => true,
            (Some(b'*'), _) => go(&p[1..], a) || (!a.is_empty() && go(p, &a[1..])),
            (Some(b'?'), Some(_)) => go(&p[1..], &a[1..]),
            (Some(x), Some(y)) if x == y => go(&p[1..], &a[1..]),
            _ => false,
        }
    }
    go(pattern.to_ascii_lowercase().as_bytes(), action.as_bytes())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    const SIGNER: &str = "arn:aws:iam::123456789012:role/messages";

    fn of(statements: Value) -> BTreeSet<String> {
        sign_principals(&json!({"Version": "2012-10-17", "Statement": statements}).to_string())
            .unwrap()
    }

    /// N-8 (security review N7): `kms:Create*` grants `CreateGrant`, `kms:Put*`
    /// `PutKeyPolicy`, `kms:Update*` `UpdateAlias` — the old account statement handed all
    /// three to IAM; the deployment's statements give `CreateGrant` to no one and the
    /// other two to the key administrator alone.
    #[test]
    fn n8_who_a_key_policy_lets_grant_change_the_policy_or_move_the_alias() {
        let root = "arn:aws:iam::123456789012:root";
        let admin = "arn:aws:iam::123456789012:role/deployer";
        let policy = |s: Value| json!({"Version": "2012-10-17", "Statement": s}).to_string();
        let old = policy(json!([
            {"Effect": "Allow", "Principal": {"AWS": root}, "Action": ["kms:Create*", "kms:Put*", "kms:Update*", "kms:Describe*"], "Resource": "*"}
        ]));
        for action in ESCALATING {
            assert_eq!(
                principals_granted(&old, action).unwrap(),
                BTreeSet::from([root.to_owned()]),
                "{action}"
            );
        }
        let ours = policy(json!([
            {"Effect": "Allow", "Principal": {"AWS": root}, "Action": ["kms:Describe*", "kms:Enable*", "kms:List*", "kms:Revoke*", "kms:Disable*", "kms:Get*", "kms:Delete*", "kms:TagResource", "kms:UntagResource", "kms:ScheduleKeyDeletion", "kms:CancelKeyDeletion"], "Resource": "*"},
            {"Effect": "Allow", "Principal": {"AWS": admin}, "Action": ["kms:PutKeyPolicy", "kms:CreateAlias", "kms:UpdateAlias", "kms:UpdateKeyDescription"], "Resource": "*"},
            {"Effect": "Allow", "Principal": {"AWS": SIGNER}, "Action": "kms:Sign", "Resource": "*"}
        ]));
        assert!(
            principals_granted(&ours, "kms:CreateGrant")
                .unwrap()
                .is_empty()
        );
        for action in ["kms:PutKeyPolicy", "kms:UpdateAlias"] {
            assert_eq!(
                principals_granted(&ours, action).unwrap(),
                BTreeSet::from([admin.to_owned()]),
                "{action}"
            );
        }
    }

    /// V-5: the deployment's own policy lets only the signer role sign; the default KMS
    /// policy (the account root with `kms:*`), a wildcard principal, a wildcard action, a
    /// `NotAction` or `NotPrincipal` grant and a second role all let others sign.
    #[test]
    fn v5_who_a_key_policy_lets_sign() {
        let ours = json!([
            {"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::123456789012:root"}, "Action": ["kms:Describe*", "kms:Get*", "kms:Disable*"], "Resource": "*"},
            {"Effect": "Allow", "Principal": {"AWS": SIGNER}, "Action": "kms:Sign", "Resource": "*", "Condition": {"StringEquals": {"kms:SigningAlgorithm": "RSASSA_PKCS1_V1_5_SHA_256"}}},
            {"Effect": "Allow", "Principal": {"AWS": SIGNER}, "Action": "kms:GetPublicKey", "Resource": "*"},
            {"Effect": "Deny", "Principal": "*", "Action": "kms:Sign", "Resource": "*"}
        ]);
        assert_eq!(of(ours), BTreeSet::from([SIGNER.to_owned()]));
        let root = "arn:aws:iam::123456789012:root";
        let cases = [
            (
                json!({"Effect": "Allow", "Principal": {"AWS": root}, "Action": "kms:*", "Resource": "*"}),
                root,
            ),
            (
                json!({"Effect": "Allow", "Principal": "*", "Action": "kms:Sign", "Resource": "*"}),
                "*",
            ),
            (
                json!({"Effect": "Allow", "Principal": {"AWS": ["arn:aws:iam::1:role/x", SIGNER]}, "Action": "KMS:S?gn", "Resource": "*"}),
                "arn:aws:iam::1:role/x",
            ),
            (
                json!({"Effect": "Allow", "Principal": {"AWS": root}, "NotAction": "kms:Decrypt", "Resource": "*"}),
                root,
            ),
            (
                json!({"Effect": "Allow", "NotPrincipal": {"AWS": SIGNER}, "Action": "kms:Sign", "Resource": "*"}),
                "*",
            ),
            (
                json!({"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "*", "Resource": "*"}),
                "service:lambda.amazonaws.com",
            ),
        ];
        for (statement, who) in cases {
            assert!(of(json!([statement])).contains(who), "{statement}");
        }
        assert!(sign_principals("not json").is_err());
    }
}
