//! The platform's KMS keys as bootstrap and rotation create them: the action signing key
//! (RSA_2048, SIGN_VERIFY) with its policy for the roles that use it, the audit
//! checkpoint key and the people's data-key wrapping key, each behind its alias; and the
//! error both report. `bootstrap` and `rotation` both use this module; neither uses the
//! other's file for it.

use aws_sdk_kms::types::{KeySpec, KeyUsageType};

/// A bootstrap failure, with the step that failed.
#[derive(Debug, thiserror::Error)]
#[error("bootstrap failed while {step}")]
pub struct BootstrapError {
    step: &'static str,
    #[source]
    source: Box<dyn std::error::Error + Send + Sync>,
}

pub(crate) fn err<E: std::error::Error + Send + Sync + 'static>(
    step: &'static str,
) -> impl FnOnce(E) -> BootstrapError {
    move |e| BootstrapError {
        step,
        source: Box::new(e),
    }
}

/// The roles that use the signing key (deployed stacks): only `signer` may sign.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyUsers {
    /// The messages function's role ARN: `kms:Sign` and `kms:GetPublicKey`.
    pub signer: String,
    /// The stream function's role ARN (N-8: its own role; it confirms too): the same as
    /// the signer's. Without it, after a rotation the streamed post could not sign.
    pub stream: Option<String>,
    /// The admin function's role ARN: `kms:GetPublicKey` and `kms:DescribeKey`.
    pub reader: Option<String>,
    /// The gateway function's role ARN: `kms:GetPublicKey`, to check that a proposal it
    /// prepares can be signed once confirmed (C-6, X-1); it never signs.
    pub gateway: Option<String>,
    /// N-8: the role that deploys (changes the key policy, moves the alias); `None`: the
    /// account.
    pub administrator: Option<String>,
}

/// The signing key's policy, statement for statement the one `template.yaml` gives
/// `SigningKey`: the account administers the key but cannot sign with it; only
/// `users.signer` signs (RS256 only) and reads the public key; `users.reader` reads it.
pub fn signing_key_policy(users: &KeyUsers) -> Result<serde_json::Value, BootstrapError> {
    // arn:<partition>:iam::<account>:role/<name>
    let parts: Vec<&str> = users.signer.split(':').collect();
    let (partition, account) = match parts.as_slice() {
        ["arn", partition, "iam", "", account, role] if role.starts_with("role/") => {
            (*partition, *account)
        }
        _ => {
            return Err(BootstrapError {
                step: "reading the signer role ARN (arn:<partition>:iam::<account>:role/<name>)",
                source: format!("not a role ARN: {}", users.signer).into(),
            });
        }
    };
    let root = format!("arn:{partition}:iam::{account}:root");
    // The template's statements name the messages and the stream roles together.
    let signers: Vec<&String> = std::iter::once(&users.signer)
        .chain(users.stream.as_ref())
        .collect();
    let mut statements = vec![
        // N-8: no kms:CreateGrant for anyone; the policy and the alias are the key
        // administrator's alone (the account's when none is named).
        serde_json::json!({
            "Sid": "AccountAdministration", "Effect": "Allow", "Principal": {"AWS": root},
            "Action": ["kms:Describe*", "kms:Enable*", "kms:List*", "kms:Revoke*",
                       "kms:Disable*", "kms:Get*", "kms:DeleteAlias",
                       "kms:DeleteImportedKeyMaterial", "kms:TagResource",
                       "kms:UntagResource", "kms:ScheduleKeyDeletion", "kms:CancelKeyDeletion"],
            "Resource": "*"
        }),
        serde_json::json!({
            "Sid": "KeyAdministration", "Effect": "Allow",
            "Principal": {"AWS": users.administrator.clone().unwrap_or_else(|| root.clone())},
            "Action": ["kms:PutKeyPolicy", "kms:CreateAlias", "kms:UpdateAlias",
                       "kms:UpdateKeyDescription"],
            "Resource": "*"
        }),
        serde_json::json!({
            "Sid": "MessagesFunctionSigns", "Effect": "Allow",
            "Principal": {"AWS": signers}, "Action": "kms:Sign", "Resource": "*",
            "Condition": {"StringEquals": {"kms:SigningAlgorithm": "RSASSA_PKCS1_V1_5_SHA_256"}}
        }),
        serde_json::json!({
            "Sid": "MessagesFunctionReadsThePublicKey", "Effect": "Allow",
            "Principal": {"AWS": signers}, "Action": "kms:GetPublicKey", "Resource": "*"
        }),
    ];
    if let Some(reader) = &users.reader {
        statements.push(serde_json::json!({
            "Sid": "AdminFunctionShowsThePublicKey", "Effect": "Allow",
            "Principal": {"AWS": reader}, "Action": ["kms:GetPublicKey", "kms:DescribeKey"],
            "Resource": "*"
        }));
    }
    if let Some(gateway) = &users.gateway {
        statements.push(serde_json::json!({
            "Sid": "GatewayFunctionReadsThePublicKey", "Effect": "Allow",
            "Principal": {"AWS": gateway}, "Action": "kms:GetPublicKey", "Resource": "*"
        }));
    }
    Ok(serde_json::json!({"Version": "2012-10-17", "Statement": statements}))
}

/// The id of the key `alias` names, or `None` when the alias does not exist.
pub(crate) async fn key_behind(
    client: &aws_sdk_kms::Client,
    alias: &str,
    step: &'static str,
) -> Result<Option<String>, BootstrapError> {
    match client.describe_key().key_id(alias).send().await {
        Ok(d) => Ok(Some(
            d.key_metadata()
                .map(|m| m.key_id().to_owned())
                .unwrap_or_default(),
        )),
        Err(e)
            if e.as_service_error()
                .is_some_and(|s| s.is_not_found_exception()) =>
        {
            Ok(None)
        }
        Err(e) => Err(err(step)(e)),
    }
}

/// Creates the RSA_2048 SIGN_VERIFY key behind `alias` when the alias is missing, with
/// [`signing_key_policy`] when `users` are given (else the account's default policy,
/// which lets any principal with IAM `kms:Sign` sign: the local stack only). Returns the
/// key id and whether it was created.
pub async fn ensure_signing_key(
    client: &aws_sdk_kms::Client,
    alias: &str,
    users: Option<&KeyUsers>,
) -> Result<(String, bool), BootstrapError> {
    if let Some(id) = key_behind(client, alias, "describing the signing key").await? {
        return Ok((id, false));
    }
    let id = create_signing_key(client, users).await?;
    client
        .create_alias()
        .alias_name(alias)
        .target_key_id(&id)
        .send()
        .await
        .map_err(err("creating the signing key alias"))?;
    Ok((id, true))
}

/// Creates an RSA_2048 SIGN_VERIFY key for proofs, with [`signing_key_policy`] when
/// `users` are given; returns its key id. No alias is created or moved.
pub async fn create_signing_key(
    client: &aws_sdk_kms::Client,
    users: Option<&KeyUsers>,
) -> Result<String, BootstrapError> {
    let policy = users
        .map(signing_key_policy)
        .transpose()?
        .map(|p| p.to_string());
    let created = client
        .create_key()
        .key_spec(KeySpec::Rsa2048)
        .key_usage(KeyUsageType::SignVerify)
        .description("Countersign action proofs (RS256). Used for nothing else.")
        .set_policy(policy)
        .send()
        .await
        .map_err(err("creating the signing key"))?;
    Ok(created
        .key_metadata()
        .map(|m| m.key_id().to_owned())
        .unwrap_or_default())
}

/// A key of `spec` and `usage` behind `alias`, made when the alias is missing, with the
/// account's default policy (the local stack; deployed stacks get their keys from the
/// template). `what` names it in errors. Returns whether it was created.
pub(crate) async fn ensure_aliased_key(
    client: &aws_sdk_kms::Client,
    alias: &str,
    (spec, usage): (KeySpec, KeyUsageType),
    description: &str,
    what: &'static [&'static str; 3],
) -> Result<bool, BootstrapError> {
    if key_behind(client, alias, what[0]).await?.is_some() {
        return Ok(false);
    }
    let created = client
        .create_key()
        .key_spec(spec)
        .key_usage(usage)
        .description(description)
        .send()
        .await
        .map_err(err(what[1]))?;
    let id = created
        .key_metadata()
        .map(|m| m.key_id().to_owned())
        .unwrap_or_default();
    match client
        .create_alias()
        .alias_name(alias)
        .target_key_id(&id)
        .send()
        .await
    {
        Ok(_) => Ok(true),
        // Another bootstrap made it meanwhile: theirs stands (ours is never used).
        Err(e)
            if e.as_service_error()
                .is_some_and(|s| s.is_already_exists_exception()) =>
        {
            Ok(false)
        }
        Err(e) => Err(err(what[2])(e)),
    }
}

/// V-6: creates the audit checkpoint key behind `alias` (RSA_2048 SIGN_VERIFY, its own
/// key: the action key signs action proofs only) when the alias is missing. Returns
/// whether it was created.
pub async fn ensure_checkpoint_key(
    client: &aws_sdk_kms::Client,
    alias: &str,
) -> Result<bool, BootstrapError> {
    ensure_aliased_key(
        client,
        alias,
        (KeySpec::Rsa2048, KeyUsageType::SignVerify),
        "Countersign audit checkpoints (RS256). Never action proofs.",
        &[
            "describing the checkpoint key",
            "creating the checkpoint key",
            "creating the checkpoint key alias",
        ],
    )
    .await
}

/// creates the people's data-key wrapping key behind `alias` (a symmetric
/// `ENCRYPT_DECRYPT` key) when the alias is missing. Returns whether it was created.
pub async fn ensure_subject_key(
    client: &aws_sdk_kms::Client,
    alias: &str,
) -> Result<bool, BootstrapError> {
    ensure_aliased_key(
        client,
        alias,
        (KeySpec::SymmetricDefault, KeyUsageType::EncryptDecrypt),
        "Countersign people's data keys (R-2): wraps them, nothing else.",
        &[
            "describing the people's key",
            "creating the people's key",
            "creating the people's key alias",
        ],
    )
    .await
}

/// The deployment's key users (`bootstrap --signer-role-arn …`) as the local stack names
/// its roles: what an operator passes on AWS, for a key made in a test (I-1).
pub fn local_key_users() -> KeyUsers {
    use crate::sdk::Principal;
    KeyUsers {
        signer: Principal::Messages.local_role_arn(),
        stream: Some(Principal::Stream.local_role_arn()),
        reader: Some(Principal::Admin.local_role_arn()),
        gateway: Some(Principal::Gateway.local_role_arn()),
        administrator: Some(Principal::Operator.local_role_arn()),
    }
}
