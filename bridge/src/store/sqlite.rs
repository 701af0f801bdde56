//! B-4: the default store, one SQLite file (WAL, `synchronous = FULL`: a committed
//! transaction survives a crash or power loss).
//!
//! One bridge instance per file: the file is opened in exclusive locking mode, so a
//! second process fails at start instead of sharing it (the per-person execution lock is
//! in-process). Run several instances with the DynamoDB store instead.
//!
//! The schema migrates on upgrade: `PRAGMA user_version` names the version a file is at,
//! and [`MIGRATIONS`] runs each later step in its own transaction; a file written by a
//! newer bridge is refused rather than guessed at.

use super::{Action, Claim, Store, StoreError, status_parse, status_str};
use async_trait::async_trait;
use countersign_provider_kit::ActionStatus;
use rusqlite::{Connection, OptionalExtension as _, TransactionBehavior, params};
use std::path::Path;
use std::sync::{Mutex, PoisonError};

/// Each schema version's step, in order (index 0 takes a file from version 0 to 1).
pub const MIGRATIONS: &[&str] = &[
    // 1: actions, with the one-pending rule as a unique partial index; consumed proofs.
    "CREATE TABLE actions (
        tenant_id TEXT NOT NULL, action_id TEXT NOT NULL,
        person TEXT NOT NULL, conversation_id TEXT NOT NULL,
        operation TEXT NOT NULL, arguments TEXT NOT NULL, arguments_hash TEXT NOT NULL,
        summary TEXT NOT NULL, summary_hash TEXT NOT NULL, language TEXT NOT NULL,
        config_digest TEXT NOT NULL, status TEXT NOT NULL, message TEXT,
        prepared_at INTEGER NOT NULL, expires_at INTEGER NOT NULL,
        PRIMARY KEY (tenant_id, action_id));
     CREATE UNIQUE INDEX one_pending ON actions (tenant_id, person, conversation_id)
        WHERE status = 'pending_confirmation';
     CREATE INDEX executing ON actions (status) WHERE status = 'executing';
     CREATE TABLE proofs (jti TEXT PRIMARY KEY, expires_at INTEGER NOT NULL);",
];

/// The SQLite store.
#[derive(Debug)]
pub struct SqliteStore {
    conn: Mutex<Connection>,
}

fn err(e: impl std::fmt::Display) -> StoreError {
    StoreError(e.to_string())
}

/// The schema version of an open file.
fn version(conn: &Connection) -> rusqlite::Result<usize> {
    conn.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))
        .map(|v| usize::try_from(v).unwrap_or(usize::MAX))
}

/// Brings `conn` to the latest schema, one step per transaction.
pub fn migrate(conn: &mut Connection) -> Result<usize, StoreError> {
    let at = version(conn).map_err(err)?;
    if at > MIGRATIONS.len() {
        return Err(StoreError(format!(
            "the store is at schema version {at}, newer than this bridge ({}): upgrade the bridge",
            MIGRATIONS.len()
        )));
    }
    for (i, step) in MIGRATIONS.iter().enumerate().skip(at) {
        let tx = conn.transaction().map_err(err)?;
        tx.execute_batch(step).map_err(err)?;
        tx.pragma_update(None, "user_version", i + 1).map_err(err)?;
        tx.commit().map_err(err)?;
    }
    Ok(MIGRATIONS.len())
}

const COLUMNS: &str = "tenant_id, action_id, person, conversation_id, operation, arguments,
    arguments_hash, summary, summary_hash, language, config_digest, status, message,
    prepared_at, expires_at";

fn row_action(r: &rusqlite::Row<'_>) -> rusqlite::Result<Action> {
    let arguments: String = r.get(5)?;
    let status: String = r.get(11)?;
    Ok(Action {
        tenant_id: r.get(0)?,
        action_id: r.get(1)?,
        person: r.get(2)?,
        conversation_id: r.get(3)?,
        operation: r.get(4)?,
        arguments: serde_json::from_str(&arguments).unwrap_or_default(),
        arguments_hash: r.get(6)?,
        summary: r.get(7)?,
        summary_hash: r.get(8)?,
        language: r.get(9)?,
        config_digest: r.get(10)?,
        status: status_parse(&status).unwrap_or(ActionStatus::Failed),
        message: r.get(12)?,
        prepared_at: r.get(13)?,
        expires_at: r.get(14)?,
    })
}

fn read(conn: &Connection, tenant_id: &str, action_id: &str) -> rusqlite::Result<Option<Action>> {
    conn.query_row(
        &format!("SELECT {COLUMNS} FROM actions WHERE tenant_id = ?1 AND action_id = ?2"),
        params![tenant_id, action_id],
        row_action,
    )
    .optional()
}

fn set_status(
    conn: &Connection,
    tenant_id: &str,
    action_id: &str,
    status: ActionStatus,
) -> rusqlite::Result<usize> {
    conn.execute(
        "UPDATE actions SET status = ?3 WHERE tenant_id = ?1 AND action_id = ?2",
        params![tenant_id, action_id, status_str(status)],
    )
}

impl SqliteStore {
    /// Opens (creating) the file at `path` and migrates it.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let conn = Connection::open(path).map_err(err)?;
        Self::init(conn, true)
    }

    /// A private in-memory database (tests).
    pub fn in_memory() -> Result<Self, StoreError> {
        Self::init(Connection::open_in_memory().map_err(err)?, false)
    }

    fn init(mut conn: Connection, file: bool) -> Result<Self, StoreError> {
        if file {
            conn.pragma_update(None, "locking_mode", "EXCLUSIVE")
                .map_err(err)?;
            let mode: String = conn
                .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
                .map_err(err)?;
            if !mode.eq_ignore_ascii_case("wal") {
                return Err(StoreError(format!("journal mode {mode}, not WAL")));
            }
        }
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(err)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(err)?;
        migrate(&mut conn)?;
        Ok(Self {
            conn: Mutex::new(conn),
        })
    }

    fn with<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        let mut conn = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut conn).map_err(err)
    }
}

fn insert(conn: &Connection, a: &Action) -> rusqlite::Result<usize> {
    conn.execute(
        &format!(
            "INSERT INTO actions ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)"
        ),
        params![
            a.tenant_id,
            a.action_id,
            a.person,
            a.conversation_id,
            a.operation,
            serde_json::Value::Object(a.arguments.clone()).to_string(),
            a.arguments_hash,
            a.summary,
            a.summary_hash,
            a.language,
            a.config_digest,
            status_str(a.status),
            a.message,
            a.prepared_at,
            a.expires_at
        ],
    )
}

fn claim_in(
    conn: &mut Connection,
    tenant_id: &str,
    action_id: &str,
    jti: &str,
    jti_exp: i64,
    now: i64,
) -> rusqlite::Result<Claim> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let Some(action) = read(&tx, tenant_id, action_id)? else {
        return Ok(Claim::Missing);
    };
    if action.status != ActionStatus::PendingConfirmation {
        return Ok(Claim::NotPending(action));
    }
    tx.execute(
        "DELETE FROM proofs WHERE expires_at < ?1",
        params![now - 120],
    )?;
    let fresh = tx.execute(
        "INSERT INTO proofs (jti, expires_at) VALUES (?1, ?2) ON CONFLICT (jti) DO NOTHING",
        params![jti, jti_exp],
    )?;
    if fresh == 0 {
        return Ok(Claim::Replayed);
    }
    let next = action.claimed_status(now);
    set_status(&tx, tenant_id, action_id, next)?;
    tx.commit()?;
    Ok(action.into_claim(next))
}

#[async_trait]
impl Store for SqliteStore {
    async fn prepare(&self, action: &Action) -> Result<Option<String>, StoreError> {
        self.with(|conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let previous: Option<String> = tx
                .query_row(
                    "SELECT action_id FROM actions WHERE tenant_id = ?1 AND person = ?2
                     AND conversation_id = ?3 AND status = 'pending_confirmation'",
                    params![action.tenant_id, action.person, action.conversation_id],
                    |r| r.get(0),
                )
                .optional()?;
            if let Some(id) = &previous {
                set_status(&tx, &action.tenant_id, id, ActionStatus::Cancelled)?;
            }
            insert(&tx, action)?;
            tx.commit()?;
            Ok(previous)
        })
    }

    async fn get(&self, tenant_id: &str, action_id: &str) -> Result<Option<Action>, StoreError> {
        self.with(|conn| read(conn, tenant_id, action_id))
    }

    async fn claim(
        &self,
        tenant_id: &str,
        action_id: &str,
        jti: &str,
        jti_exp: i64,
        now: i64,
    ) -> Result<Claim, StoreError> {
        self.with(|conn| claim_in(conn, tenant_id, action_id, jti, jti_exp, now))
    }

    async fn finish(
        &self,
        tenant_id: &str,
        action_id: &str,
        status: ActionStatus,
        message: Option<&str>,
    ) -> Result<bool, StoreError> {
        self.with(|conn| {
            conn.execute(
                "UPDATE actions SET status = ?3, message = ?4
                 WHERE tenant_id = ?1 AND action_id = ?2 AND status = 'executing'",
                params![tenant_id, action_id, status_str(status), message],
            )
            .map(|n| n == 1)
        })
    }

    async fn mark_in_doubt(
        &self,
        tenant_id: &str,
        action_id: &str,
        message: &str,
    ) -> Result<(), StoreError> {
        self.with(|conn| {
            conn.execute(
                "UPDATE actions SET message = ?3
                 WHERE tenant_id = ?1 AND action_id = ?2 AND status = 'executing'",
                params![tenant_id, action_id, message],
            )
            .map(|_| ())
        })
    }

    async fn in_doubt(&self) -> Result<Vec<Action>, StoreError> {
        self.with(|conn| {
            let mut stmt = conn.prepare(&format!(
                "SELECT {COLUMNS} FROM actions WHERE status = 'executing' ORDER BY prepared_at"
            ))?;
            let rows = stmt.query_map([], row_action)?;
            rows.collect()
        })
    }
}
