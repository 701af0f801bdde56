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
    let doc: Value = serde_json::from_str(policy).map_err(|e| PolicyError(e.to_string()))?;
    let statements = match doc.get("Statement") {
        Some(Value::Array(s)) => s.clone(),
        Some(s @ Value::Object(_)) => vec![s.clone()],
        _ => return Err(PolicyError("no Statement".into())),
    };
    let mut out = BTreeSet::new();
    for s in &statements {
        if s.get("Effect").and_then(Value::as_str) != Some("Allow") || !grants_sign(s) {
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

/// Whether the statement's actions include `kms:Sign`.
fn grants_sign(s: &Value) -> bool {
    if let Some(not) = s.get("NotAction") {
        return !strings(not).iter().any(|a| matches(a, "kms:sign"));
    }
    s.get("Action")
        .is_some_and(|a| strings(a).iter().any(|a| matches(a, "kms:sign")))
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
