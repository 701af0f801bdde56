//! Tamper evidence for the audit trail (L-2): records are hash-chained as they are
//! written, and a verifier walks the chains and names the first broken link.
//!
//! A tenant's trail is a small set of chains, each with its own head item, so that no
//! item is shared by the tenant's conversations (decision 0019; decision 0031):
//! - `tenant`: configuration changes (the admin API, the CLI);
//! - `conv:<digest>` (decision 0055; `case:<caseId>` before it): the life of every
//!   proposal of one conversation (L-1) and the administrator's settlements in it.
//!
//! Record `n` of a chain carries `seq = n` (from 1) and `prev` = the hash of record
//! `n − 1` (empty for the first); its own hash covers the tenant, the chain, `seq`,
//! `prev` and every field of the record as stored. The head item holds the last `seq` and
//! hash. A checkpoint is the digest of every head, in chain order.

use sha2::{Digest, Sha256};

/// The chain of configuration changes.
pub const TENANT_CHAIN: &str = "tenant";

/// The chain of a conversation's proposals as named before decision 0055 (`case:<id>`):
/// still read, never started any more.
pub fn case_chain(case: &str) -> String {
    format!("case:{case}")
}

/// The prefix of a conversation chain's name (decision 0055).
pub const CONVERSATION_CHAIN_PREFIX: &str = "conv:";

/// The chain of one conversation's proposals (decision 0055): named by a digest of the
/// tenant and the case (case ids are random, so not reversible), so that once the
/// conversation is purged nothing in the chain's name, head or index entry names it.
pub fn conversation_chain(tenant: &str, case: &str) -> String {
    let mut h = Sha256::new();
    for field in ["countersign.conversation-chain.v1", tenant, case] {
        h.update((field.len() as u64).to_be_bytes());
        h.update(field.as_bytes());
    }
    let digest = hex(&h.finalize());
    format!("{CONVERSATION_CHAIN_PREFIX}{}", &digest[..32])
}

/// A chain's last link.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Head {
    /// The last record's `seq` (0: empty chain).
    pub seq: u64,
    /// The last record's hash (empty: empty chain).
    pub hash: String,
}

/// One audit record as stored, with its chain fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainedRecord {
    /// The record id (`aud_…`).
    pub id: String,
    /// Which chain.
    pub chain: String,
    /// Its place in the chain, from 1.
    pub seq: u64,
    /// The previous record's hash.
    pub prev: String,
    /// RFC 3339 time, as stored.
    pub at: String,
    /// Who.
    pub actor: String,
    /// What.
    pub action: String,
    /// The changes, as the stored JSON text.
    pub changes: String,
}

/// A record's place in its chain, as the audit API gives it (L-3): enough to check each
/// record against the previous one and against a checkpoint's heads without the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainLink {
    /// Which chain (`tenant`, `conv:<digest>`, or `case:<id>` before decision 0055).
    pub chain: String,
    /// Its place in the chain, from 1.
    pub seq: u64,
    /// The previous record's hash (empty for the first).
    pub prev: String,
    /// This record's hash ([`ChainedRecord::hash`]).
    pub hash: String,
}

impl ChainLink {
    /// The link of `record`, a record of `tenant`.
    pub fn of(record: &ChainedRecord, tenant: &str) -> Self {
        Self {
            chain: record.chain.clone(),
            seq: record.seq,
            prev: record.prev.clone(),
            hash: record.hash(tenant),
        }
    }
}

impl ChainedRecord {
    /// SHA-256 (hex) over the tenant and every field, each length-prefixed so that no two
    /// records can be made to hash alike by moving text between fields.
    pub fn hash(&self, tenant: &str) -> String {
        let mut h = Sha256::new();
        let seq = self.seq.to_string();
        for field in [
            tenant,
            &self.chain,
            &seq,
            &self.prev,
            &self.id,
            &self.at,
            &self.actor,
            &self.action,
            &self.changes,
        ] {
            h.update((field.len() as u64).to_be_bytes());
            h.update(field.as_bytes());
        }
        hex(&h.finalize())
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// The chain fields a new record gets after `head`, and the head after it.
pub fn append(tenant: &str, head: &Head, mut record: ChainedRecord) -> (ChainedRecord, Head) {
    record.seq = head.seq + 1;
    record.prev = head.hash.clone();
    let hash = record.hash(tenant);
    let next = Head {
        seq: record.seq,
        hash,
    };
    (record, next)
}

/// One change to a tenant's configuration, written in the same transaction as the change
/// itself: which admin key (or the operator) made it and what changed. Never holds a
/// secret value: tokens and secrets appear only as "changed".
#[derive(Debug, Clone, PartialEq)]
pub struct AuditEntry {
    /// Sorts by time.
    pub id: crate::ids::AuditId,
    /// When.
    pub at: crate::time::Timestamp,
    /// Who: `adminKey:<fingerprint>` or `operator`.
    pub actor: String,
    /// What kind of change, e.g. `mcp.put`.
    pub action: String,
    /// The change's details (field names, non-secret old and new values).
    pub changes: serde_json::Value,
}

/// R-2: the fields of a record's `changes` that name or quote a person; each holds that
/// person's id (`userId` in a proposal's record, `person` in a hold's or an erasure's).
/// They are sealed under the person's key before the record is chained.
pub const PERSONAL_FIELDS: [&str; 2] = ["userId", "person"];

/// Where the sealed personal fields go in a record's `changes`.
pub const SEALED: &str = "sealed";

/// What an opened record shows in place of a personal field whose key was destroyed.
pub const ERASED: &str = "[erased]";

/// R-2: takes the personal fields out of `changes` (an object): the person they belong to
/// and the fields, as an object. `None` when it has none. A personal field that is not a
/// string is left alone and named here as nobody's: the domain writes strings only.
pub fn take_personal(changes: &mut serde_json::Value) -> Option<(String, serde_json::Value)> {
    let map = changes.as_object_mut()?;
    let mut personal = serde_json::Map::new();
    for field in PERSONAL_FIELDS {
        if let Some(v) = map.get(field).filter(|v| v.is_string()).cloned() {
            map.remove(field);
            personal.insert(field.to_owned(), v);
        }
    }
    let subject = PERSONAL_FIELDS
        .iter()
        .find_map(|f| personal.get(*f).and_then(|v| v.as_str()))?
        .to_owned();
    Some((subject, serde_json::Value::Object(personal)))
}

/// R-1 (decision 0055): the fields of a record's `changes` that name its conversation or
/// what happened in it: sealed under the conversation's key, which the purge destroys.
/// `conversation` is a hold's (`kind: conversation`).
pub const CONVERSATION_FIELDS: [&str; 6] = [
    "caseId",
    "conversation",
    "actionId",
    "by",
    "presentedMessageId",
    "confirmationMessageId",
];

/// Where the sealed conversation fields go in a record's `changes`.
pub const SEALED_CONVERSATION: &str = "sealedConversation";

/// What an opened record shows in place of its conversation fields once the conversation
/// is purged.
pub const PURGED: &str = "[purged]";

/// R-1: the conversation `changes` names (its `caseId`, or a conversation hold's
/// `conversation`) and its conversation fields, as an object; `None` when it names none.
/// Nothing is taken out: [`drop_conversation_fields`] does, once they are sealed.
pub fn conversation_fields(changes: &serde_json::Value) -> Option<(String, serde_json::Value)> {
    let map = changes.as_object()?;
    let case = map
        .get("caseId")
        .or_else(|| {
            (map.get("kind").and_then(|k| k.as_str()) == Some("conversation"))
                .then(|| map.get("conversation"))
                .flatten()
        })
        .and_then(|v| v.as_str())?
        .to_owned();
    let fields: serde_json::Map<String, serde_json::Value> = CONVERSATION_FIELDS
        .iter()
        .filter_map(|f| {
            map.get(*f)
                .filter(|v| v.is_string())
                .map(|v| ((*f).to_owned(), v.clone()))
        })
        .collect();
    Some((case, serde_json::Value::Object(fields)))
}

/// Takes the conversation fields out of `changes`, leaving `sealed` in their place.
pub fn drop_conversation_fields(changes: &mut serde_json::Value, sealed: String) {
    if let Some(map) = changes.as_object_mut() {
        for f in CONVERSATION_FIELDS {
            if map.get(f).is_some_and(serde_json::Value::is_string) {
                map.remove(f);
            }
        }
        map.insert(
            SEALED_CONVERSATION.into(),
            serde_json::Value::String(sealed),
        );
    }
}

/// R-1: `changes` as a reader sees it: the sealed conversation fields put back when
/// `opened` holds them, or one [`PURGED`] marker (with `"purged": true`) once the
/// conversation's key is gone. Records without them are returned as they are.
#[must_use]
pub fn reveal_conversation(
    changes: &serde_json::Value,
    opened: Option<&serde_json::Value>,
) -> serde_json::Value {
    reveal_sealed(
        changes,
        opened,
        SEALED_CONVERSATION,
        ("conversation", PURGED),
        "purged",
    )
}

/// R-2: `changes` as a reader sees it: the sealed fields put back when `opened` holds
/// them, or each shown as [`ERASED`] (with `"erased": true`) when its key is gone.
/// Records without sealed fields are returned as they are.
#[must_use]
pub fn reveal(
    changes: &serde_json::Value,
    opened: Option<&serde_json::Value>,
) -> serde_json::Value {
    reveal_sealed(changes, opened, SEALED, ("personal", ERASED), "erased")
}

/// `changes` with its sealed value at `field` replaced by the fields `opened` holds, or,
/// when its key is gone, by one `marker` and `flag: true`: which fields were sealed is
/// itself sealed.
fn reveal_sealed(
    changes: &serde_json::Value,
    opened: Option<&serde_json::Value>,
    field: &str,
    (marker, text): (&str, &str),
    flag: &str,
) -> serde_json::Value {
    let mut out = changes.clone();
    let Some(map) = out.as_object_mut() else {
        return out;
    };
    if map.remove(field).is_none() {
        return out;
    }
    match opened.and_then(serde_json::Value::as_object) {
        Some(fields) => map.extend(fields.clone()),
        None => {
            map.insert(marker.into(), serde_json::Value::String(text.into()));
            map.insert(flag.into(), serde_json::Value::Bool(true));
        }
    }
    out
}

/// A tenant's whole audit trail as stored (L-2).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditTrail {
    /// The chained records, in no particular order.
    pub records: Vec<ChainedRecord>,
    /// Each chain's head, read before the records (L-3: a record written after the heads
    /// were read is past its head and left for the next verification).
    pub heads: std::collections::BTreeMap<String, Head>,
    /// The conversation chains named in the tenant's chain index (L-3): each must have its
    /// head and its records, so a deleted conversation chain is found.
    pub indexed: std::collections::BTreeSet<String>,
    /// Records without chain fields (L-3: each one breaks verification).
    pub unchained: usize,
}

/// The first broken link found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Broken {
    /// The chain.
    pub chain: String,
    /// The first `seq` that does not verify (the record that is missing, altered, or whose
    /// predecessor was altered).
    pub seq: u64,
    /// The record's id, when it exists.
    pub id: Option<String>,
    /// What is wrong.
    pub reason: &'static str,
}

/// What the verifier found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// Chained records checked.
    pub records: usize,
    /// Chains checked.
    pub chains: usize,
    /// Records without chain fields (L-3: any breaks verification).
    pub unchained: usize,
    /// The first broken link, in chain order; `None` when every chain verifies.
    pub broken: Option<Broken>,
    /// SHA-256 (hex) over every head (`chain seq hash` lines, chains sorted): what a
    /// checkpoint signs.
    pub digest: String,
}

/// Verifies `records` (any order) against the stored `heads` (chain → head). Checks, per
/// chain in name order: `seq` runs 1, 2, … without gaps or repeats; each `prev` is the
/// hash of the record before; the last record's hash and `seq` are the head's. A chain
/// with a head but no records, or records but no head, is broken too.
pub fn verify(
    tenant: &str,
    records: &[ChainedRecord],
    heads: &std::collections::BTreeMap<String, Head>,
    unchained: usize,
) -> Report {
    use std::collections::BTreeMap;
    let mut chains: BTreeMap<&str, Vec<&ChainedRecord>> = BTreeMap::new();
    for r in records {
        chains.entry(r.chain.as_str()).or_default().push(r);
    }
    for chain in heads.keys() {
        chains.entry(chain.as_str()).or_default();
    }
    let mut broken = None;
    for (chain, list) in &mut chains {
        list.sort_by_key(|r| r.seq);
        if let Some(b) = check_chain(tenant, chain, list, heads.get(*chain)) {
            broken = Some(b);
            break;
        }
    }
    Report {
        records: records.len(),
        chains: chains.len(),
        unchained,
        broken,
        digest: digest(heads),
    }
}

/// What a checkpoint signs: SHA-256 (hex) over one line `chain seq hash` per head, in
/// chain order.
pub fn digest(heads: &std::collections::BTreeMap<String, Head>) -> String {
    let mut h = Sha256::new();
    for (chain, head) in heads {
        h.update(format!("{chain} {} {}\n", head.seq, head.hash).as_bytes());
    }
    hex(&h.finalize())
}

/// L-3: whether a trail that verifies still holds everything a kept checkpoint covered —
/// for each head the checkpoint digested (`kept`, which the caller has matched against
/// the checkpoint's signed digest with [`digest`]), that chain's record at that `seq`
/// still has that hash. Within a verified chain each record's hash covers the one before,
/// so nothing up to the checkpoint was removed or rewritten. The first difference, or
/// `None`.
pub fn extends(
    tenant: &str,
    records: &[ChainedRecord],
    kept: &std::collections::BTreeMap<String, Head>,
) -> Option<Broken> {
    for (chain, head) in kept.iter().filter(|(_, h)| h.seq > 0) {
        let at = records
            .iter()
            .find(|r| &r.chain == chain && r.seq == head.seq);
        let broken = |reason| Broken {
            chain: chain.clone(),
            seq: head.seq,
            id: at.map(|r| r.id.clone()),
            reason,
        };
        match at {
            None => return Some(broken("a record the checkpoint covered is gone")),
            Some(r) if r.hash(tenant) != head.hash => {
                return Some(broken("a record the checkpoint covered was rewritten"));
            }
            Some(_) => {}
        }
    }
    None
}

/// L-3: verifies a trail read as the stores read it (heads and the chain index first,
/// then the records): records past their chain's head were written after the heads were
/// read and are left for the next verification; a record without chain fields, and an
/// indexed chain without a head, break the trail.
pub fn verify_trail(tenant: &str, trail: &AuditTrail) -> Report {
    let records: Vec<ChainedRecord> = trail
        .records
        .iter()
        .filter(|r| trail.heads.get(&r.chain).is_none_or(|h| r.seq <= h.seq))
        .cloned()
        .collect();
    let mut report = verify(tenant, &records, &trail.heads, trail.unchained);
    if report.broken.is_none() {
        report.broken = trail
            .indexed
            .iter()
            .find(|chain| !trail.heads.contains_key(*chain))
            .map(|chain| Broken {
                chain: chain.clone(),
                seq: 1,
                id: None,
                reason: "the chain's head and records are missing (the index names it)",
            });
    }
    if report.broken.is_none() && trail.unchained > 0 {
        report.broken = Some(Broken {
            chain: "(none)".into(),
            seq: 0,
            id: None,
            reason: "a record has no chain fields",
        });
    }
    report
}

fn check_chain(
    tenant: &str,
    chain: &str,
    list: &[&ChainedRecord],
    head: Option<&Head>,
) -> Option<Broken> {
    let broken = |seq: u64, id: Option<&str>, reason| Broken {
        chain: chain.to_owned(),
        seq,
        id: id.map(str::to_owned),
        reason,
    };
    let mut prev = String::new();
    for (i, r) in list.iter().enumerate() {
        let expected = i as u64 + 1;
        if r.seq != expected {
            let reason = if r.seq < expected {
                "a sequence number appears twice"
            } else {
                "a record is missing"
            };
            return Some(broken(expected, None, reason));
        }
        if r.prev != prev {
            return Some(broken(
                r.seq.saturating_sub(1).max(1),
                list.get(i.wrapping_sub(1)).map(|p| p.id.as_str()),
                if r.seq == 1 {
                    "the first record does not start the chain"
                } else {
                    "the record was altered (its successor holds another hash)"
                },
            ));
        }
        prev = r.hash(tenant);
    }
    let last = list.last();
    match (head, last) {
        (None, None) => None,
        (None, Some(r)) => Some(broken(r.seq, Some(&r.id), "the chain has no head")),
        (Some(h), None) => Some(broken(
            1,
            None,
            if h.seq == 0 {
                "the chain's head is empty"
            } else {
                "a record is missing"
            },
        )),
        (Some(h), Some(r)) if h.seq != r.seq => Some(broken(
            r.seq + 1,
            None,
            "a record is missing (the head is further on)",
        )),
        (Some(h), Some(r)) if h.hash != prev => Some(broken(
            r.seq,
            Some(&r.id),
            "the record was altered (the head holds another hash)",
        )),
        _ => None,
    }
}

/// The header `typ` of a signed checkpoint (never a proof's: providers refuse it).
pub const CHECKPOINT_TYPE: &str = "countersign-audit-checkpoint+jwt";

/// What a signed checkpoint states: at `iat`, `tenantId`'s trail had `records` chained
/// records in `chains` chains whose heads digest to `digest`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointClaims {
    /// The platform (the proofs' issuer).
    pub iss: String,
    /// The tenant.
    pub tenant_id: String,
    /// When (unix seconds).
    pub iat: i64,
    /// Chained records covered.
    pub records: usize,
    /// Chains covered.
    pub chains: usize,
    /// [`Report::digest`].
    pub digest: String,
}

/// A compact RS256 JWS of `claims`, signed through the platform's signer (verifiable with
/// the JWKS, K-1), typed [`CHECKPOINT_TYPE`].
pub async fn sign_checkpoint(
    signer: &dyn crate::ports::signer::ProofSigner,
    claims: &CheckpointClaims,
) -> Result<String, crate::ports::signer::SignerError> {
    sign_jws(signer, CHECKPOINT_TYPE, claims).await
}

/// R-2: the `typ` of an erasure receipt, signed with the checkpoint key.
pub const ERASURE_RECEIPT_TYPE: &str = "countersign-erasure-receipt+jwt";

/// A compact RS256 JWS of `claims`, typed `typ`, through `signer`.
pub async fn sign_jws(
    signer: &dyn crate::ports::signer::ProofSigner,
    typ: &str,
    claims: &impl serde::Serialize,
) -> Result<String, crate::ports::signer::SignerError> {
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let kid = signer.key_id().await?;
    let header = serde_json::json!({"alg": "RS256", "typ": typ, "kid": kid});
    let claims = serde_json::to_vec(claims)
        .map_err(|e| crate::ports::signer::SignerError::Unavailable(Box::new(e)))?;
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims)
    );
    let signature = signer.sign_rs256(&kid, input.as_bytes()).await?;
    Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature)))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    /// R-2: the personal fields leave the record with their person; what a reader sees
    /// puts them back, or says they are erased once the key is gone.
    #[test]
    fn r2_personal_fields_are_taken_out_and_shown_back_or_erased() {
        let mut changes = serde_json::json!({"actionId": "act_1", "userId": "ana", "to": "x"});
        let (who, personal) = take_personal(&mut changes).unwrap();
        assert_eq!(who, "ana");
        assert_eq!(personal, serde_json::json!({"userId": "ana"}));
        assert!(!changes.to_string().contains("ana"));
        changes[SEALED] = "v1.sealed".into();
        let shown = reveal(&changes, Some(&personal));
        assert_eq!(
            shown,
            serde_json::json!({"actionId": "act_1", "userId": "ana", "to": "x"})
        );
        let gone = reveal(&changes, None);
        assert_eq!(gone["personal"], ERASED);
        assert_eq!(gone["erased"], true);
        assert!(gone.get("userId").is_none());
        let mut plain = serde_json::json!({"actionId": "act_1"});
        assert!(take_personal(&mut plain).is_none());
        assert_eq!(reveal(&plain, None), plain);
    }

    /// R-1 (decision 0055): a conversation chain's name is a digest, never the case id,
    /// one per tenant and case.
    #[test]
    fn r1_a_conversation_chain_is_named_by_a_digest() {
        let a = conversation_chain("ten_1", "case_01ABC");
        assert!(a.starts_with(CONVERSATION_CHAIN_PREFIX));
        assert_eq!(a.len(), CONVERSATION_CHAIN_PREFIX.len() + 32);
        assert!(!a.contains("01ABC"));
        assert_eq!(a, conversation_chain("ten_1", "case_01ABC"));
        assert_ne!(a, conversation_chain("ten_2", "case_01ABC"));
        assert_ne!(a, conversation_chain("ten_1", "case_01ABD"));
        // Length-prefixed: moving text between the tenant and the case changes the name.
        assert_ne!(
            conversation_chain("ten_1c", "ase_01ABC"),
            conversation_chain("ten_1", "case_01ABC")
        );
    }

    /// R-1 (decision 0055): the conversation fields leave the record under the
    /// conversation's key; a reader sees them back, or one purged marker once it is gone.
    #[test]
    fn r1_conversation_fields_are_taken_out_and_shown_back_or_purged() {
        let mut changes = serde_json::json!({
            "actionId": "act_1", "caseId": "case_1", "by": "act_2",
            "presentedMessageId": "msg_1", "to": "x", "operation": "op"
        });
        let (case, fields) = conversation_fields(&changes).unwrap();
        assert_eq!(case, "case_1");
        assert_eq!(
            fields,
            serde_json::json!({"actionId": "act_1", "caseId": "case_1", "by": "act_2",
                "presentedMessageId": "msg_1"})
        );
        drop_conversation_fields(&mut changes, "v1.sealed".into());
        for id in ["act_1", "case_1", "act_2", "msg_1"] {
            assert!(!changes.to_string().contains(id), "{id}");
        }
        assert_eq!(
            reveal_conversation(&changes, Some(&fields)),
            serde_json::json!({"actionId": "act_1", "caseId": "case_1", "by": "act_2",
                "presentedMessageId": "msg_1", "to": "x", "operation": "op"})
        );
        let gone = reveal_conversation(&changes, None);
        assert_eq!(gone["conversation"], PURGED);
        assert_eq!(gone["purged"], true);
        assert_eq!(gone["operation"], "op");
        // A conversation hold names it as `conversation`; a person's hold names none.
        let hold = serde_json::json!({"kind": "conversation", "conversation": "case_9"});
        assert_eq!(conversation_fields(&hold).unwrap().0, "case_9");
        let person = serde_json::json!({"kind": "person", "person": "ana"});
        assert!(conversation_fields(&person).is_none());
        let plain = serde_json::json!({"to": "x"});
        assert!(conversation_fields(&plain).is_none());
        assert_eq!(reveal_conversation(&plain, None), plain);
    }

    use super::*;
    use std::collections::BTreeMap;

    fn record(chain: &str, i: u32) -> ChainedRecord {
        ChainedRecord {
            id: format!("aud_{i}"),
            chain: chain.into(),
            seq: 0,
            prev: String::new(),
            at: "2026-12-01T10:00:00Z".into(),
            actor: "platform".into(),
            action: "proposal.prepared".into(),
            changes: format!(r#"{{"n":{i}}}"#),
        }
    }

    fn trail() -> (Vec<ChainedRecord>, BTreeMap<String, Head>) {
        let mut records = Vec::new();
        let mut heads = BTreeMap::new();
        for chain in [TENANT_CHAIN.to_owned(), case_chain("case_1")] {
            let mut head = Head::default();
            for i in 0..4 {
                let (r, h) = append("ten_1", &head, record(&chain, i));
                records.push(r);
                head = h;
            }
            heads.insert(chain, head);
        }
        (records, heads)
    }

    #[test]
    fn l2_an_untouched_trail_verifies() {
        let (records, heads) = trail();
        let report = verify("ten_1", &records, &heads, 0);
        assert_eq!(report.broken, None);
        assert_eq!((report.records, report.chains), (8, 2));
        // The digest moves with any head.
        let mut other = heads;
        other.get_mut(TENANT_CHAIN).unwrap().seq += 1;
        assert_ne!(verify("ten_1", &records, &other, 0).digest, report.digest);
    }

    /// L-2: any change to any field of any record, a deletion, or a reordering is found,
    /// and the report names the first broken link.
    #[test]
    fn l2_every_alteration_is_found() {
        let (records, heads) = trail();
        for at in 0..records.len() {
            for field in 0..5 {
                let mut altered = records.clone();
                let r = &mut altered[at];
                match field {
                    0 => r.changes.push(' '),
                    1 => r.actor = "adminKey:0000".into(),
                    2 => r.at = "2026-12-01T10:00:01Z".into(),
                    3 => r.action = "proposal.failed".into(),
                    _ => r.id.push('x'),
                }
                let report = verify("ten_1", &altered, &heads, 0);
                let b = report.broken.expect("an altered record is found");
                assert_eq!(b.chain, records[at].chain);
                assert_eq!(b.seq, records[at].seq, "the altered record is named");
            }
            let mut deleted = records.clone();
            deleted.remove(at);
            assert!(verify("ten_1", &deleted, &heads, 0).broken.is_some());
        }
        // The same records under another tenant do not verify.
        assert!(verify("ten_2", &records, &heads, 0).broken.is_some());
        // A whole chain deleted (its head left) or a head deleted.
        let only_tenant: Vec<_> = records
            .iter()
            .filter(|r| r.chain == TENANT_CHAIN)
            .cloned()
            .collect();
        assert!(verify("ten_1", &only_tenant, &heads, 0).broken.is_some());
        let mut headless = heads;
        headless.remove(TENANT_CHAIN);
        assert!(verify("ten_1", &records, &headless, 0).broken.is_some());
    }

    fn as_trail(records: Vec<ChainedRecord>, heads: BTreeMap<String, Head>) -> AuditTrail {
        AuditTrail {
            indexed: heads
                .keys()
                .filter(|c| *c != TENANT_CHAIN)
                .cloned()
                .collect(),
            records,
            heads,
            unchained: 0,
        }
    }

    /// L-3: a record appended after the heads were read (past its head) is not a break:
    /// the trail verifies as of the heads.
    #[test]
    fn l3_a_record_written_after_the_heads_were_read_is_no_false_alarm() {
        let (mut records, heads) = trail();
        let chain = case_chain("case_1");
        let (late, _) = append("ten_1", &heads[&chain], record(&chain, 9));
        records.push(late);
        assert!(
            verify("ten_1", &records, &heads, 0).broken.is_some(),
            "the bare chain walk would call it a break"
        );
        let report = verify_trail("ten_1", &as_trail(records, heads));
        assert_eq!(report.broken, None, "{report:?}");
        assert_eq!(report.records, 8);
    }

    /// L-3: a conversation chain deleted whole (records and head) is found through the
    /// tenant's chain index; a record without chain fields breaks the trail.
    #[test]
    fn l3_a_deleted_chain_and_an_unchained_record_are_found() {
        let (records, heads) = trail();
        let chain = case_chain("case_1");
        let kept: Vec<_> = records
            .iter()
            .filter(|r| r.chain != chain)
            .cloned()
            .collect();
        let mut gone = heads.clone();
        gone.remove(&chain);
        let mut trail_without = as_trail(kept.clone(), gone.clone());
        trail_without.indexed.insert(chain.clone());
        assert!(
            verify("ten_1", &kept, &gone, 0).broken.is_none(),
            "unseen without the index"
        );
        let b = verify_trail("ten_1", &trail_without).broken.expect("found");
        assert_eq!(b.chain, chain);
        let mut unchained = as_trail(records, heads);
        unchained.unchained = 1;
        let b = verify_trail("ten_1", &unchained).broken.expect("found");
        assert_eq!(b.reason, "a record has no chain fields");
    }

    /// L-3: a trail that grew since a checkpoint extends it; one whose covered record was
    /// rewritten (and its chain rebuilt so it verifies again) or cut does not.
    #[test]
    fn l3_a_trail_extends_its_checkpoint_unless_a_covered_record_changed() {
        let (records, heads) = trail();
        let kept = heads.clone();
        let chain = case_chain("case_1");
        let mut grown = records.clone();
        let (more, _) = append("ten_1", &heads[&chain], record(&chain, 9));
        grown.push(more);
        assert_eq!(extends("ten_1", &grown, &kept), None);
        // Rewritten from the start and re-chained: it verifies, but not against the kept
        // checkpoint.
        let mut rebuilt = Vec::new();
        let mut head = Head::default();
        for i in 0..4 {
            let mut r = record(&chain, i);
            if i == 1 {
                r.changes = r#"{"n":"rewritten"}"#.into();
            }
            let (r, h) = append("ten_1", &head, r);
            rebuilt.push(r);
            head = h;
        }
        let mut rewritten: Vec<_> = records
            .iter()
            .filter(|r| r.chain != chain)
            .cloned()
            .collect();
        rewritten.extend(rebuilt);
        let mut now = heads.clone();
        now.insert(chain.clone(), head);
        assert_eq!(verify("ten_1", &rewritten, &now, 0).broken, None);
        let b = extends("ten_1", &rewritten, &kept).expect("found");
        assert_eq!((b.chain.as_str(), b.seq), (chain.as_str(), 4));
        let cut: Vec<_> = records
            .iter()
            .filter(|r| !(r.chain == chain && r.seq == 4))
            .cloned()
            .collect();
        assert!(extends("ten_1", &cut, &kept).is_some());
        assert_eq!(digest(&kept), verify("ten_1", &records, &heads, 0).digest);
    }

    #[test]
    fn hashes_are_field_separated() {
        let mut a = record("tenant", 1);
        let mut b = a.clone();
        a.actor = "ab".into();
        a.action = "c".into();
        b.actor = "a".into();
        b.action = "bc".into();
        assert_ne!(a.hash("t"), b.hash("t"));
    }
}
