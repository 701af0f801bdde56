//! B-1, B-4: how the bridge is started, shared by its two programs — `countersign-bridge
//! serve` (a binary or a container: SQLite, or DynamoDB with `--table`) and
//! `countersign-bridge-lambda` (the Lambda form: DynamoDB, every setting from the
//! environment, served through the Lambda runtime).

use crate::config::Config;
use crate::store::Store;
use crate::store::dynamo::DynamoStore;
use crate::store::sqlite::SqliteStore;
use crate::upstream::RmcpUpstream;
use crate::{Bridge, Settings};
use anyhow::Context as _;
use countersign_provider_kit::{Jwks, Verifier};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Everything `serve` needs; each flag has its environment variable, so the Lambda form
/// reads the same settings from the environment alone.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// The configuration file (TOML).
    #[arg(env = "COUNTERSIGN_BRIDGE_CONFIG", default_value = "bridge.toml")]
    pub file: PathBuf,
    /// Where to listen (not used as a Lambda).
    #[arg(
        long,
        env = "COUNTERSIGN_BRIDGE_LISTEN",
        default_value = "127.0.0.1:8791"
    )]
    pub listen: SocketAddr,
    /// The store file (SQLite), when no `--table` is given.
    #[arg(
        long,
        env = "COUNTERSIGN_BRIDGE_STORE",
        default_value = "countersign-bridge.db"
    )]
    pub store: PathBuf,
    /// A DynamoDB table for the store instead of the SQLite file (several instances).
    #[arg(long, env = "COUNTERSIGN_BRIDGE_TABLE")]
    pub table: Option<String>,
    /// The proofs' issuer (the platform's).
    #[arg(long, env = "COUNTERSIGN_ISSUER")]
    pub issuer: String,
    /// The proofs' audience: this bridge's URL as the tenant configured it.
    #[arg(long, env = "COUNTERSIGN_BRIDGE_AUDIENCE")]
    pub audience: String,
    /// The platform's JWKS (`…/.well-known/jwks.json`).
    #[arg(long, env = "COUNTERSIGN_JWKS_URL")]
    pub jwks_url: String,
    /// The longest an upstream call may take, in seconds.
    #[arg(
        long,
        env = "COUNTERSIGN_BRIDGE_UPSTREAM_TIMEOUT",
        default_value_t = 30
    )]
    pub upstream_timeout: u64,
}

/// The service token: `COUNTERSIGN_BRIDGE_SERVICE_TOKEN`, or (the Lambda form) the secret
/// `COUNTERSIGN_BRIDGE_SERVICE_TOKEN_SECRET` names in Secrets Manager, so the token is
/// never in the function's configuration in clear.
pub async fn service_token() -> anyhow::Result<String> {
    if let Ok(token) = std::env::var("COUNTERSIGN_BRIDGE_SERVICE_TOKEN") {
        return Ok(token);
    }
    let id = std::env::var("COUNTERSIGN_BRIDGE_SERVICE_TOKEN_SECRET").context(
        "COUNTERSIGN_BRIDGE_SERVICE_TOKEN (or COUNTERSIGN_BRIDGE_SERVICE_TOKEN_SECRET) is required",
    )?;
    let sdk = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    let secret = aws_sdk_secretsmanager::Client::new(&sdk)
        .get_secret_value()
        .secret_id(&id)
        .send()
        .await
        .map_err(|e| {
            anyhow::anyhow!(
                "reading the service token's secret: {}",
                aws_sdk_secretsmanager::error::DisplayErrorContext(e)
            )
        })?;
    secret
        .secret_string
        .context("the service token's secret has no string value")
}

/// The bridge `args` describe, started (its upstream listed and checked).
pub async fn bridge(args: &ServeArgs) -> anyhow::Result<Arc<Bridge>> {
    let text =
        std::fs::read(&args.file).with_context(|| format!("reading {}", args.file.display()))?;
    let config = Config::parse(&String::from_utf8_lossy(&text))
        .map_err(|e| anyhow::anyhow!("{}:\n{e}", args.file.display()))?;
    let digest: String = countersign_domain::hash::Sha256Hex::digest(&text).into();
    let store: Arc<dyn Store> = match &args.table {
        Some(table) => Arc::new(DynamoStore::from_env(table.clone()).await),
        None => Arc::new(SqliteStore::open(&args.store)?),
    };
    let upstream = Arc::new(RmcpUpstream::new(
        config.upstream.clone(),
        Duration::from_secs(args.upstream_timeout),
    ));
    let verifier = Verifier::new(args.issuer.clone(), args.audience.clone())
        .with_jwks(Arc::new(Jwks::new(args.jwks_url.clone())));
    let bridge = Bridge::start(
        config,
        digest,
        upstream,
        store,
        verifier,
        Settings::default(),
    )
    .await?;
    Ok(Arc::new(bridge))
}

/// Serves until stopped: through the Lambda runtime when `AWS_LAMBDA_RUNTIME_API` is set,
/// else on `args.listen` until Ctrl-C.
pub async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let token = service_token().await?;
    let bridge = bridge(&args).await?;
    if std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some() {
        let app = crate::serve::router(bridge, &token);
        return lambda_http::run(app)
            .await
            .map_err(|e| anyhow::anyhow!("the Lambda runtime: {e}"));
    }
    let bound = crate::serve::spawn(bridge, &token, args.listen).await?;
    tracing::info!("countersign-bridge on http://{bound}/mcp");
    tokio::signal::ctrl_c().await?;
    Ok(())
}
