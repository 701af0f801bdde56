//! Creates what `template.yaml` creates, for the local stack and tests: the table
//! (single-table design, the pending-proposals index, TTL on `ttl`), the action signing
//! key (RSA_2048, SIGN_VERIFY) with its alias, and the one platform secret: the key that
//! signs gateway access tokens (D-4), 256 random bits. Tenants' secrets are created per
//! tenant under the prefix. Running it twice is harmless: nothing existing is replaced.

use crate::key_setup::err;
pub use crate::key_setup::{
    BootstrapError, KeyUsers, create_signing_key, ensure_checkpoint_key, ensure_signing_key,
    ensure_subject_key, local_key_users, signing_key_policy,
};
use crate::settings::AwsSettings;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType, TableStatus,
    TimeToLiveSpecification, TimeToLiveStatus,
};
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

/// The gateway token key's name under the secret prefix: the domain's one name, which the
/// gateway reads too.
pub const GATEWAY_TOKEN_KEY: &str = countersign_domain::ports::GATEWAY_TOKEN_KEY;

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
    if crate::sdk::local_stack() {
        register_locally(&dynamo, settings).await?;
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

/// I-1: the local stack's registry of which table, keys and secret prefix stand for the
/// template's `Table`, `SigningKey`, `CheckpointKey`, `SubjectKey` and `SecretPrefix`:
/// tags on the table, which the emulator's IAM evaluator reads
/// (`infra/local-aws/iam/registry.py`), so each test's own stack is held to the template's
/// policies. Tagging again is harmless.
async fn register_locally(
    client: &aws_sdk_dynamodb::Client,
    settings: &AwsSettings,
) -> Result<(), BootstrapError> {
    use aws_sdk_dynamodb::types::Tag;
    let described = client
        .describe_table()
        .table_name(&settings.table)
        .send()
        .await
        .map_err(err("describing the table"))?;
    let Some(arn) = described.table().and_then(|t| t.table_arn()) else {
        return Ok(());
    };
    let mut tags = vec![
        ("countersign:logical-id", "Table"),
        ("countersign:secret-prefix", settings.secret_prefix.as_str()),
    ];
    for (name, alias) in [
        ("countersign:signing-key", &settings.signing_key),
        ("countersign:checkpoint-key", &settings.checkpoint_key),
        ("countersign:subject-key", &settings.subject_key),
    ] {
        if let Some(alias) = alias.as_deref().filter(|a| a.starts_with("alias/")) {
            tags.push((name, alias));
        }
    }
    let mut request = client.tag_resource().resource_arn(arn);
    for (key, value) in tags.into_iter().filter(|(_, v)| !v.is_empty()) {
        request = request.tags(
            Tag::builder()
                .key(key)
                .value(value)
                .build()
                .map_err(err("tagging the table"))?,
        );
    }
    request.send().await.map_err(err("tagging the table"))?;
    Ok(())
}
