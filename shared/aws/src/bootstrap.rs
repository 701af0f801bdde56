//! Creates what `template.yaml` creates, for the local stack and tests: the table
//! (single-table design, the pending-proposals index, TTL on `ttl`), the action signing
//! key (RSA_2048, SIGN_VERIFY) with its alias, and the one platform secret: the key that
//! signs gateway access tokens (D-4), 256 random bits. Tenants' secrets are created per
//! tenant under the prefix. Running it twice is harmless: nothing existing is replaced.

use crate::settings::AwsSettings;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType, TableStatus,
    TimeToLiveSpecification, TimeToLiveStatus,
};
use aws_sdk_kms::types::{KeySpec, KeyUsageType};
use std::time::Duration;

/// What bootstrap found or created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootstrapReport {
    /// The table name.
    pub table: String,
    /// Whether this run created the table.
    pub table_created: bool,
    /// The signing key's id, when one is configured.
    pub signing_key_id: Option<String>,
    /// Whether this run created the key.
    pub key_created: bool,
    /// Whether this run created the gateway token key.
    pub gateway_key_created: bool,
}

/// A bootstrap failure, with the step that failed.
#[derive(Debug, thiserror::Error)]
#[error("bootstrap failed while {step}")]
pub struct BootstrapError {
    step: &'static str,
    #[source]
    source: Box<dyn std::error::Error + Send + Sync>,
}

fn err<E: std::error::Error + Send + Sync + 'static>(
    step: &'static str,
) -> impl FnOnce(E) -> BootstrapError {
    move |e| BootstrapError {
        step,
        source: Box::new(e),
    }
}

fn attr(name: &str) -> Result<AttributeDefinition, BootstrapError> {
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(ScalarAttributeType::S)
        .build()
        .map_err(err("defining attributes"))
}

fn key(name: &str, kind: KeyType) -> Result<KeySchemaElement, BootstrapError> {
    KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(kind)
        .build()
        .map_err(err("defining keys"))
}

/// Creates the table, its index and TTL when missing; waits until it is active.
pub async fn ensure_table(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
) -> Result<bool, BootstrapError> {
    let exists = match client.describe_table().table_name(table).send().await {
        Ok(_) => true,
        Err(e)
            if e.as_service_error()
                .is_some_and(|s| s.is_resource_not_found_exception()) =>
        {
            false
        }
        Err(e) => return Err(err("describing the table")(e)),
    };
    if !exists {
        create_table(client, table).await?;
    }
    wait_until_active(client, table).await?;
    enable_ttl(client, table).await?;
    Ok(!exists)
}

/// The table (pk, sk), on demand.
async fn create_table(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
) -> Result<(), BootstrapError> {
    let r = client
        .create_table()
        .table_name(table)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(attr("pk")?)
        .attribute_definitions(attr("sk")?)
        .key_schema(key("pk", KeyType::Hash)?)
        .key_schema(key("sk", KeyType::Range)?)
        .send()
        .await;
    match r {
        Ok(_) => Ok(()),
        // Another bootstrap created it meanwhile.
        Err(e)
            if e.as_service_error()
                .is_some_and(|s| s.is_resource_in_use_exception()) =>
        {
            Ok(())
        }
        Err(e) => Err(err("creating the table")(e)),
    }
}

/// Polls until the table is active (at most a minute).
async fn wait_until_active(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
) -> Result<(), BootstrapError> {
    for _ in 0..120 {
        let d = client
            .describe_table()
            .table_name(table)
            .send()
            .await
            .map_err(err("waiting for the table"))?;
        if d.table().and_then(|t| t.table_status()) == Some(&TableStatus::Active) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    Ok(())
}

/// P-3: expired conversations are deleted by DynamoDB's TTL on `ttl`.
async fn enable_ttl(client: &aws_sdk_dynamodb::Client, table: &str) -> Result<(), BootstrapError> {
    let ttl = client
        .describe_time_to_live()
        .table_name(table)
        .send()
        .await
        .map_err(err("reading the TTL setting"))?;
    let enabled = matches!(
        ttl.time_to_live_description()
            .and_then(|d| d.time_to_live_status()),
        Some(TimeToLiveStatus::Enabled | TimeToLiveStatus::Enabling)
    );
    if enabled {
        return Ok(());
    }
    let spec = TimeToLiveSpecification::builder()
        .enabled(true)
        .attribute_name("ttl")
        .build()
        .map_err(err("defining TTL"))?;
    client
        .update_time_to_live()
        .table_name(table)
        .time_to_live_specification(spec)
        .send()
        .await
        .map_err(err("enabling TTL"))?;
    Ok(())
}

/// The roles that use the signing key (deployed stacks): only `signer` may sign.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyUsers {
    /// The messages function's role ARN: `kms:Sign` and `kms:GetPublicKey`.
    pub signer: String,
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
    let mut statements = vec![
        // N-8: no kms:CreateGrant for anyone; the policy and the alias are the key
        // administrator's alone (the account's when none is named).
        serde_json::json!({
            "Sid": "AccountAdministration", "Effect": "Allow", "Principal": {"AWS": root},
            "Action": ["kms:Describe*", "kms:Enable*", "kms:List*", "kms:Revoke*",
                       "kms:Disable*", "kms:Get*", "kms:Delete*", "kms:TagResource",
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
            "Principal": {"AWS": users.signer}, "Action": "kms:Sign", "Resource": "*",
            "Condition": {"StringEquals": {"kms:SigningAlgorithm": "RSASSA_PKCS1_V1_5_SHA_256"}}
        }),
        serde_json::json!({
            "Sid": "MessagesFunctionReadsThePublicKey", "Effect": "Allow",
            "Principal": {"AWS": users.signer}, "Action": "kms:GetPublicKey", "Resource": "*"
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
async fn key_behind(
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
async fn ensure_aliased_key(
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

/// The gateway token key's name under the secret prefix (see `countersign_tools::access`).
pub const GATEWAY_TOKEN_KEY: &str = "platform/gateway-token-key";

/// Creates secret `name` with 256 random bits (base64url) when it does not exist.
pub async fn ensure_random_secret(
    client: &aws_sdk_secretsmanager::Client,
    name: &str,
) -> Result<bool, BootstrapError> {
    use base64::Engine as _;
    use rand::RngCore as _;
    match client.describe_secret().secret_id(name).send().await {
        Ok(_) => return Ok(false),
        Err(e)
            if e.as_service_error()
                .is_some_and(|s| s.is_resource_not_found_exception()) => {}
        Err(e) => return Err(err("describing a platform secret")(e)),
    }
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let value = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    match client
        .create_secret()
        .name(name)
        .secret_string(value)
        .send()
        .await
    {
        Ok(_) => Ok(true),
        Err(e)
            if e.as_service_error()
                .is_some_and(|s| s.is_resource_exists_exception()) =>
        {
            Ok(false)
        }
        Err(e) => Err(err("creating a platform secret")(e)),
    }
}

/// Everything, in order. Idempotent. A key it creates gets the account's default policy
/// (the local stack); see [`bootstrap_with`].
pub async fn bootstrap(
    sdk: &aws_config::SdkConfig,
    settings: &AwsSettings,
) -> Result<BootstrapReport, BootstrapError> {
    bootstrap_with(sdk, settings, None).await
}

/// [`bootstrap`], creating the signing key (when missing) with [`signing_key_policy`]
/// for `users`.
pub async fn bootstrap_with(
    sdk: &aws_config::SdkConfig,
    settings: &AwsSettings,
    users: Option<&KeyUsers>,
) -> Result<BootstrapReport, BootstrapError> {
    let dynamo = aws_sdk_dynamodb::Client::new(sdk);
    let table_created = ensure_table(&dynamo, &settings.table).await?;
    let (signing_key_id, key_created) = match &settings.signing_key {
        Some(alias) if alias.starts_with("alias/") => {
            let kms = aws_sdk_kms::Client::new(sdk);
            let (id, created) = ensure_signing_key(&kms, alias, users).await?;
            // The first key of a new deployment goes straight into the key ring (K-1).
            let store = settings.store(sdk);
            crate::rotation::Rotation::new(&kms, &store, alias)
                .adopt_alias_key(
                    countersign_domain::time::Timestamp::from_unix_seconds(
                        crate::rotation::unix_now(),
                    )
                    .map_err(err("reading the clock"))?,
                )
                .await
                .map_err(err("registering the signing key in the key ring"))?;
            (Some(id), created)
        }
        // A key id or ARN names a key made elsewhere (the SAM template): nothing to create.
        Some(id) => (Some(id.clone()), false),
        None => (None, false),
    };
    if let Some(alias) = settings
        .checkpoint_key
        .as_deref()
        .filter(|k| k.starts_with("alias/"))
    {
        let kms = aws_sdk_kms::Client::new(sdk);
        ensure_checkpoint_key(&kms, alias).await?;
        // N-8: the checkpoint key has a ring too; its first key goes straight into it.
        let store = settings.store(sdk).for_checkpoint_ring();
        crate::rotation::Rotation::new(&kms, &store, alias)
            .adopt_alias_key(
                countersign_domain::time::Timestamp::from_unix_seconds(crate::rotation::unix_now())
                    .map_err(err("reading the clock"))?,
            )
            .await
            .map_err(err("registering the checkpoint key in its key ring"))?;
    }
    if let Some(alias) = settings
        .subject_key
        .as_deref()
        .filter(|k| k.starts_with("alias/"))
    {
        ensure_subject_key(&aws_sdk_kms::Client::new(sdk), alias).await?;
    }
    let secrets = aws_sdk_secretsmanager::Client::new(sdk);
    let gateway_key_created = ensure_random_secret(
        &secrets,
        &format!("{}{}", settings.secret_prefix, GATEWAY_TOKEN_KEY),
    )
    .await?;
    Ok(BootstrapReport {
        table: settings.table.clone(),
        table_created,
        signing_key_id,
        key_created,
        gateway_key_created,
    })
}
