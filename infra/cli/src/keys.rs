//! `countersign keys …`: the signing key rotation with overlap (K-2). The order rules
//! live in `countersign_domain::keyring`; this is their command line.

use anyhow::Context as _;
use clap::Subcommand;
use countersign_aws::AwsSettings;
use countersign_aws::bootstrap::KeyUsers;
use countersign_aws::rotation::{Rotation, unix_now};
use countersign_domain::time::Timestamp;
use std::io::Write as _;

/// `countersign keys [--checkpoint] <command>`.
#[derive(Debug, clap::Args)]
pub(crate) struct KeysArgs {
    /// N-8: the audit checkpoint key (`COUNTERSIGN_CHECKPOINT_KEY`) and its own ring, whose
    /// published set never drops a retired key, instead of the proof signing key.
    #[arg(long)]
    checkpoint: bool,
    #[command(subcommand)]
    command: KeysCommand,
}

// The roles a signing key is made for, as `bootstrap` and `keys announce` take them. (A
// `//` comment: clap would make a doc comment the help text of a command flattening it.)
#[derive(Debug, clap::Args)]
pub(crate) struct KeyRoles {
    /// The role that signs proofs (the messages function's): a key the command creates gets
    /// the deployment's policy, in which only this role may sign (without it, the account's
    /// default policy: the local stack only); `keys announce` refuses a key whose
    /// policy lets anyone else sign (V-5). A deployment always passes it.
    #[arg(long)]
    pub(crate) signer_role_arn: Option<String>,
    /// The role that shows the public key (the admin function's).
    #[arg(long, requires = "signer_role_arn")]
    pub(crate) reader_role_arn: Option<String>,
    /// The role that prepares actions for MCP clients (the gateway function's): reads the
    /// public key.
    #[arg(long, requires = "signer_role_arn")]
    pub(crate) gateway_role_arn: Option<String>,
    /// The streamed post's role (the stream function's): signs and reads like the signer
    /// (N-8: its own role; it confirms too).
    #[arg(long, requires = "signer_role_arn")]
    pub(crate) stream_role_arn: Option<String>,
    /// N-8: the role that deploys: only it may change the key's policy or move its alias
    /// (the template's `KeyAdministratorArn`). Without it, the account; `keys announce`
    /// refuses such a key.
    #[arg(long, requires = "signer_role_arn")]
    pub(crate) administrator_role_arn: Option<String>,
}

impl KeyRoles {
    /// The key's users, when the signer is given.
    pub(crate) fn users(self) -> Option<KeyUsers> {
        let Self {
            signer_role_arn,
            reader_role_arn,
            gateway_role_arn,
            stream_role_arn,
            administrator_role_arn,
        } = self;
        signer_role_arn.map(|signer| KeyUsers {
            signer,
            stream: stream_role_arn,
            reader: reader_role_arn,
            gateway: gateway_role_arn,
            administrator: administrator_role_arn,
        })
    }

    /// The roles that may sign: the signer and the stream role.
    fn signers(&self) -> Vec<String> {
        self.signer_role_arn
            .iter()
            .chain(self.stream_role_arn.iter())
            .cloned()
            .collect()
    }
}

#[derive(Debug, Subcommand)]
pub(crate) enum KeysCommand {
    /// Show every key of the ring (status, kid, KMS ARN, times) and the key the alias
    /// names now.
    List,
    /// Publish a next key in the JWKS without signing with it. Give an existing KMS key
    /// (`--key`) or let the command create one (`--create`).
    Announce {
        /// An RSA_2048 SIGN_VERIFY KMS key (id or ARN).
        #[arg(long, conflicts_with = "create", required_unless_present = "create")]
        key: Option<String>,
        /// Create the key, with the deployment's key policy when the role ARNs are given.
        #[arg(long)]
        create: bool,
        #[command(flatten)]
        roles: KeyRoles,
    },
    /// Make the announced key sign: moves the alias to it; the active key stays published
    /// as `previous`. Refused until the key has been published for the JWKS cache time.
    Activate {
        /// The announced key's kid.
        #[arg(long, allow_hyphen_values = true)]
        kid: String,
    },
    /// Withdraw a key from the JWKS. Refused for the active key and, for a previous key,
    /// until every proof it signed has expired and every JWKS cache has its successor.
    Retire {
        /// The key's kid. A kid is base64url and may begin with `-`: it is taken as the
        /// value, not as another option.
        #[arg(long, allow_hyphen_values = true)]
        kid: String,
    },
    /// Set the JWKS cache time (`Cache-Control: max-age`, seconds; default 300).
    CacheTime {
        /// Seconds, 0 to 86400.
        #[arg(long)]
        seconds: i64,
    },
}

pub(crate) async fn run(
    args: KeysArgs,
    sdk: &aws_config::SdkConfig,
    settings: &AwsSettings,
) -> anyhow::Result<()> {
    let cmd = args.command;
    let (alias, store) = ring_of(args.checkpoint, sdk, settings)?;
    let kms = countersign_aws::kms::KmsProofSigner::client(sdk, None);
    let rotation = Rotation::new(&kms, &store, alias);
    let now = Timestamp::from_unix_seconds(unix_now())?;
    let mut out = std::io::stdout().lock();
    match cmd {
        KeysCommand::List => list(&rotation, now, &mut out).await?,
        KeysCommand::Announce {
            key,
            create: _,
            roles,
        } => announce(&rotation, key, roles, now, &mut out).await?,
        KeysCommand::Activate { kid } => {
            rotation.activate(&kid, now).await?;
            let ring = rotation.list().await?.ring;
            writeln!(out, "{kid} signs new proofs (within 60 s in every process)")?;
            if let Some(previous) = ring
                .keys
                .iter()
                .rfind(|k| k.status == countersign_domain::keyring::KeyStatus::Previous)
            {
                writeln!(
                    out,
                    "retire the previous key after {} s: countersign keys retire --kid {}",
                    ring.retire_hold_seconds(),
                    previous.kid
                )?;
            }
        }
        KeysCommand::Retire { kid } => {
            rotation.retire(&kid, now).await?;
            writeln!(out, "{kid} is no longer published")?;
        }
        KeysCommand::CacheTime { seconds } => {
            rotation.set_cache_seconds(seconds).await?;
            writeln!(out, "JWKS cache time {seconds} s")?;
        }
    }
    Ok(())
}

/// N-8: the alias and the store of the ring a `keys` command works on: the checkpoint
/// key's (`--checkpoint`) or the proof signing key's.
fn ring_of<'a>(
    checkpoint: bool,
    sdk: &aws_config::SdkConfig,
    settings: &'a AwsSettings,
) -> anyhow::Result<(&'a str, countersign_aws::dynamo::DynamoStore)> {
    Ok(if checkpoint {
        let alias = settings
            .checkpoint_key
            .as_deref()
            .context("COUNTERSIGN_CHECKPOINT_KEY is empty: no checkpoint key to rotate")?;
        (alias, settings.store(sdk).for_checkpoint_ring())
    } else {
        let alias = settings
            .signing_key
            .as_deref()
            .context("COUNTERSIGN_SIGNING_KEY is empty: no signing key to rotate")?;
        (alias, settings.store(sdk))
    })
}

/// `keys announce`: the given key, or one created with the deployment's policy when the
/// roles are given.
async fn announce(
    rotation: &Rotation<'_>,
    key: Option<String>,
    roles: KeyRoles,
    now: Timestamp,
    out: &mut impl std::io::Write,
) -> anyhow::Result<()> {
    let signers = roles.signers();
    // N-8: a key the command would make and then refuse (the account could re-policy it)
    // is refused before it is made, so no orphan key is left behind.
    anyhow::ensure!(
        key.is_some() || roles.signer_role_arn.is_none() || roles.administrator_role_arn.is_some(),
        "--create with --signer-role-arn needs --administrator-role-arn (the template's KeyAdministratorArn): without it the account could change the new key's policy or move its alias, and `keys announce` refuses such a key; run the command as that role"
    );
    let key = match key {
        Some(k) => k,
        None => {
            let users = roles.users();
            let id = rotation.create(users.as_ref()).await?;
            writeln!(out, "created KMS key {id}")?;
            id
        }
    };
    if signers.is_empty() {
        writeln!(
            out,
            "warning: no --signer-role-arn: the key's policy was not checked (V-5); a deployment must pass it"
        )?;
    }
    let signers: Vec<&str> = signers.iter().map(String::as_str).collect();
    let kid = rotation.announce(&key, now, &signers).await?;
    let ring = rotation.list().await?.ring;
    writeln!(out, "announced {kid}")?;
    writeln!(
        out,
        "it is published now; activate it after {} s: countersign keys activate --kid {kid}",
        ring.cache_seconds
    )?;
    Ok(())
}

/// `keys list`: the ring (adopting the alias's key into an empty one) and which key the
/// alias names.
async fn list(
    rotation: &Rotation<'_>,
    now: Timestamp,
    out: &mut impl std::io::Write,
) -> anyhow::Result<()> {
    rotation.adopt_alias_key(now).await?;
    let view = rotation.list().await?;
    writeln!(out, "JWKS cache time {} s", view.ring.cache_seconds)?;
    for k in &view.ring.keys {
        let signing = if view.alias_kid.as_deref() == Some(k.kid.as_str()) {
            "  <- alias"
        } else {
            ""
        };
        writeln!(
            out,
            "{:<9} {}  {}  announced {}{}{}{}{signing}",
            k.status.as_str(),
            k.kid,
            k.arn,
            at(Some(k.announced_at)),
            stamp(" activated ", k.activated_at),
            stamp(" deactivated ", k.deactivated_at),
            stamp(" retired ", k.retired_at),
        )?;
    }
    Ok(())
}

fn at(t: Option<i64>) -> String {
    t.and_then(|s| Timestamp::from_unix_seconds(s).ok())
        .map(|t| t.to_rfc3339())
        .unwrap_or_default()
}

fn stamp(label: &str, t: Option<i64>) -> String {
    t.map(|_| format!("{label}{}", at(t))).unwrap_or_default()
}
