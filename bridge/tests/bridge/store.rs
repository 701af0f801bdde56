//! B-4: the store contract, on SQLite (a file: WAL, exclusive, migrations).

use crate::contract::{action, contract};
use countersign_bridge::store::Store as _;
use countersign_bridge::store::sqlite::{MIGRATIONS, SqliteStore};

#[tokio::test]
async fn b4_the_store_contract_holds_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("b.db")).unwrap();
    contract(&store).await;
}

/// B-4: a file keeps its actions across restarts, is held by one instance, migrates, and
/// a file from a newer bridge is refused.
#[tokio::test]
async fn b4_the_file_survives_a_restart_is_exclusive_and_versioned() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.db");
    {
        let store = SqliteStore::open(&path).unwrap();
        store.prepare(&action("a1", "c1", 400)).await.unwrap();
        let second = SqliteStore::open(&path);
        // The first connection holds the file in exclusive mode once it has written.
        assert!(second.is_err() || second.unwrap().get("ten_1", "a1").await.is_err());
    }
    let store = SqliteStore::open(&path).unwrap();
    assert!(store.get("ten_1", "a1").await.unwrap().is_some());
    drop(store);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let v: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v as usize, MIGRATIONS.len());
    conn.pragma_update(None, "user_version", MIGRATIONS.len() + 1)
        .unwrap();
    drop(conn);
    let newer = SqliteStore::open(&path).unwrap_err();
    assert!(newer.to_string().contains("newer"), "{newer}");
}
