//! Attribute mapping between DynamoDB items and domain types. Nothing outside this
//! module knows attribute names.
//!
//! Table design (single table, see docs/decisions/0007-dynamodb-table-design.md):
//!
//! | item | pk | sk |
//! |---|---|---|
//! | case (+ active-proposal slot) | `CONV#<tenant>#<case>` | `A#CASE` |
//! | proposal | `CONV#<tenant>#<case>` | `A#PROP#<actionId>` |
//! | message | `CONV#<tenant>#<case>` | `M#<messageId>` |
//! | conversation chain head (L-2; decision 0055) | `CONV#<tenant>#<case>` | `A#CHAIN` |
//! | conversation key pointer (R-1; decision 0055) | `CONV#<tenant>#<case>` | `KEY` |
//! | confirmation link pointer (decision 0055) | `CONV#<tenant>#<case>` | `LINK#<hash>` |
//! | purged conversation's chain head | `AUDITHEAD#<tenant>#<digest>` | `HEAD` |
//! | action-id guard (A-14; by digest since decision 0055) | `ACTION#<tenant>#g<digest>` | `ACTION` |
//! | tenant | `TENANT#<tenant>` | `TENANT` |
//! | tenant MCP configuration | `TENANT#<tenant>` | `MCP` |
//! | proposal registration (C-8) | `TENANT#<tenant>#<shard of actionId>` | `PENDING#<actionId>` |
//! | unsettled action (decision 0028) | `TENANT#<tenant>#<shard of actionId>` | `UNSETTLED#<actionId>` |
//! | configuration audit record (L-2) | `TENANT#<tenant>` | `AUDIT#<auditId>` |
//! | conversation audit record (L-1, L-2) | `TENANT#<tenant>#<shard of caseId>` | `AUDIT#<auditId>` |
//! | conversation chain index entry (L-3; `case` while the conversation lives) | `TENANT#<tenant>#<shard of caseId>` | `AUDITCHAIN#conv:<digest>` |
//! | tenant registry entry | `TENANTS` | `<tenant>` |
//! | tenant lease (V-7: one certification, verification, checkpoint at a time) | `LEASE#<tenant>#<kind>` | `LEASE` |
//!
//! A proposal's registration is written with it, in one of the tenant's 16 index
//! partitions, so that a configuration change finds every proposal prepared under the old
//! settings with one consistent `Query` per partition (C-8). Each is its own item: no two
//! conversations share one. The shards keep one tenant's confirmations and preparations
//! from all writing one partition key (decision 0043); readers also read the tenant's own
//! partition, where index items written before the shards stay until they end.

use aws_sdk_dynamodb::types::AttributeValue;
use countersign_domain::conversation::{Case, CaseStatus, Message, MessageKind, Role};
use countersign_domain::hash::Sha256Hex;
use countersign_domain::ids::{ActionId, CaseId, MessageId, OperationName, TenantId, UserId};
use countersign_domain::ports::{AuditEntry, NewMessage, ProposalOutcome, StoreError};
use countersign_domain::proposal::{Presentation, Proposal, ProposalState};
use countersign_domain::text::SafeText;
use countersign_domain::texts::Language;
use countersign_domain::time::Timestamp;
use std::collections::HashMap;

pub(crate) type Item = HashMap<String, AttributeValue>;

pub(crate) const PK: &str = "pk";
pub(crate) const SK: &str = "sk";
pub(crate) const TTL: &str = "ttl";
pub(crate) const PENDING_PREFIX: &str = "PENDING#";
pub(crate) const CASE_SK: &str = "A#CASE";
pub(crate) const ACTIVE_PREFIX: &str = "A#";

pub(crate) fn conv_pk(tenant: &TenantId, case: &CaseId) -> String {
    format!("CONV#{tenant}#{case}")
}
/// The sort-key prefix of a conversation's proposals.
pub(crate) const PROPOSAL_PREFIX: &str = "A#PROP#";
pub(crate) fn prop_sk(action: &ActionId) -> String {
    format!("{PROPOSAL_PREFIX}{action}")
}
pub(crate) fn msg_sk(id: &MessageId) -> String {
    format!("M#{id}")
}
/// A-14's guard of an action id (decision 0055): keyed by a digest of the tenant and the
/// id, so that once the conversation is purged the guard still refuses the id's reuse but
/// no longer names it.
pub(crate) fn guard_pk(tenant: &TenantId, action: &ActionId) -> String {
    let mut framed = Vec::new();
    for field in [
        "countersign.action-guard.v1",
        tenant.as_str(),
        action.as_str(),
    ] {
        framed.extend((field.len() as u64).to_be_bytes());
        framed.extend(field.as_bytes());
    }
    let digest = countersign_domain::hash::Sha256Hex::digest(&framed);
    format!("ACTION#{tenant}#g{}", &digest.as_str()[..32])
}
/// The guard as written before decision 0055 (`ACTION#<tenant>#<actionId>`): checked by
/// every preparation, never written.
pub(crate) fn legacy_guard_pk(tenant: &TenantId, action: &ActionId) -> String {
    format!("ACTION#{tenant}#{action}")
}
pub(crate) fn tenant_pk(tenant: &TenantId) -> String {
    format!("TENANT#{tenant}")
}

/// How many partitions a tenant's per-conversation index items are spread over (issue 27,
/// decision 0043): proposal registrations, unsettled-action entries, conversation-chain
/// audit records and the chain index. Never change it: items are found where it put them.
pub(crate) const INDEX_SHARDS: u32 = 16;
/// the tenant item's string sets of held people and held conversations.
pub(crate) const HELD_PEOPLE: &str = "held_people";
/// See [`HELD_PEOPLE`].
pub(crate) const HELD_CASES: &str = "held_cases";
/// the tenant item's string set of people whose erasure waits.
pub(crate) const ERASING: &str = "erasing";

/// The shard of `id` (a case or an action id): FNV-1a of its text, so every process puts
/// the same item in the same place without coordination.
pub(crate) fn shard_of(id: &str) -> u32 {
    let h = id.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    h % INDEX_SHARDS
}

/// The partition of a tenant's index item keyed by `id` (decision 0043).
pub(crate) fn index_pk(tenant: &TenantId, id: &str) -> String {
    format!("TENANT#{tenant}#{:02}", shard_of(id))
}

/// Every partition that may hold a tenant's index items: the tenant's own first (the
/// configuration chain's records, and index items written before sharding), then each
/// shard.
pub(crate) fn index_pks(tenant: &TenantId) -> Vec<String> {
    std::iter::once(tenant_pk(tenant))
        .chain((0..INDEX_SHARDS).map(|i| format!("TENANT#{tenant}#{i:02}")))
        .collect()
}

pub(crate) fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}
pub(crate) fn n(v: impl Into<i128>) -> AttributeValue {
    AttributeValue::N(v.into().to_string())
}

pub(crate) fn key(pk: impl Into<String>, sk: impl Into<String>) -> Item {
    HashMap::from([(PK.to_owned(), s(pk)), (SK.to_owned(), s(sk))])
}

pub(crate) fn corrupt(what: &str) -> StoreError {
    StoreError::Corrupt(what.to_owned())
}

pub(crate) fn get_s<'a>(item: &'a Item, k: &str) -> Result<&'a str, StoreError> {
    item.get(k)
        .and_then(|v| v.as_s().ok())
        .map(String::as_str)
        .ok_or_else(|| corrupt(k))
}
pub(crate) fn opt_s<'a>(item: &'a Item, k: &str) -> Option<&'a str> {
    item.get(k).and_then(|v| v.as_s().ok()).map(String::as_str)
}
pub(crate) fn get_n<T: std::str::FromStr>(item: &Item, k: &str) -> Result<T, StoreError> {
    item.get(k)
        .and_then(|v| v.as_n().ok())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| corrupt(k))
}
fn parse<'a, T, E>(
    item: &'a Item,
    k: &str,
    f: impl FnOnce(&'a str) -> Result<T, E>,
) -> Result<T, StoreError> {
    f(get_s(item, k)?).map_err(|_| corrupt(k))
}
fn ts(item: &Item, k: &str) -> Result<Timestamp, StoreError> {
    parse(item, k, Timestamp::parse_utc)
}

pub(crate) fn state_of(item: &Item) -> Option<ProposalState> {
    opt_s(item, "state").and_then(ProposalState::parse)
}

pub(crate) fn lang_str(l: Language) -> &'static str {
    match l {
        Language::En => "en",
        Language::Pt => "pt",
    }
}
fn lang_parse(s: &str) -> Option<Language> {
    match s {
        "en" => Some(Language::En),
        "pt" => Some(Language::Pt),
        _ => None,
    }
}

pub(crate) fn case_item(case: &Case, language: Language) -> Item {
    let mut i = key(conv_pk(&case.tenant, &case.id), CASE_SK);
    i.insert("tenant".into(), s(case.tenant.as_str()));
    i.insert("case_id".into(), s(case.id.as_str()));
    i.insert("user".into(), s(case.user.as_str()));
    i.insert("status".into(), s(status_str(case.status)));
    i.insert("created_at".into(), s(case.created_at.to_rfc3339()));
    i.insert("lang".into(), s(lang_str(language)));
    i
}

pub(crate) fn status_str(s: CaseStatus) -> &'static str {
    match s {
        CaseStatus::Open => "open",
        CaseStatus::Closed => "closed",
    }
}

pub(crate) fn case_from(item: &Item) -> Result<(Case, Language), StoreError> {
    let status = match get_s(item, "status")? {
        "open" => CaseStatus::Open,
        "closed" => CaseStatus::Closed,
        _ => return Err(corrupt("status")),
    };
    Ok((
        Case {
            id: parse(item, "case_id", CaseId::parse)?,
            tenant: parse(item, "tenant", TenantId::parse)?,
            user: parse(item, "user", UserId::parse)?,
            status,
            created_at: ts(item, "created_at")?,
        },
        opt_s(item, "lang").and_then(lang_parse).unwrap_or_default(),
    ))
}

pub(crate) fn proposal_item(p: &Proposal) -> Item {
    let mut i = key(conv_pk(&p.tenant, &p.case), prop_sk(&p.action_id));
    i.insert("action_id".into(), s(p.action_id.as_str()));
    i.insert("tenant".into(), s(p.tenant.as_str()));
    i.insert("user".into(), s(p.user.as_str()));
    i.insert("case_id".into(), s(p.case.as_str()));
    i.insert("operation".into(), s(p.operation.as_str()));
    i.insert("summary".into(), s(p.summary.as_str()));
    i.insert("summary_hash".into(), s(p.summary_hash.as_str()));
    i.insert("arguments_hash".into(), s(p.arguments_hash.as_str()));
    i.insert("expires_at".into(), s(p.expires_at.to_rfc3339()));
    i.insert("prepared_at".into(), s(p.prepared_at.to_rfc3339()));
    i.insert("state".into(), s(p.state.as_str()));
    i.insert(
        "presented_message_id".into(),
        s(p.presented.message_id.as_str()),
    );
    if let Some(m) = &p.confirmation_message_id {
        i.insert("confirmation_message_id".into(), s(m.as_str()));
    }
    if let Some(a) = &p.confirm_attempt {
        i.insert("confirm_attempt".into(), s(a.as_str()));
    }
    if let Some(r) = &p.presented.replaced {
        i.insert("replaced".into(), s(r.as_str()));
    }
    if let Some(t) = &p.presented.first_served_at {
        i.insert("served_at".into(), s(t.to_rfc3339()));
    }
    i.insert("config_version".into(), n(p.config_version));
    if let Some(v) = &p.secret_version {
        i.insert("secret_version".into(), s(v.as_str()));
    }
    if let Some(u) = &p.server_url {
        i.insert("server_url".into(), s(u.as_str()));
    }
    if let Some(a) = &p.audience {
        i.insert("audience".into(), s(a.as_str()));
    }
    if p.needs_passkey {
        i.insert("needs_passkey".into(), AttributeValue::Bool(true));
    }
    if p.prepared_outside {
        i.insert("prepared_outside".into(), AttributeValue::Bool(true));
    }
    i
}

/// A proposal's registration in its tenant's partition (C-8): what a configuration change
/// needs to cancel it, and a TTL a day after the proposal expires (an expired proposal
/// can no longer be confirmed, so its registration has no use).
pub(crate) fn registration_item(p: &Proposal, secret_version: &str, lang: Language) -> Item {
    let mut i = key(
        index_pk(&p.tenant, p.action_id.as_str()),
        format!("{PENDING_PREFIX}{}", p.action_id),
    );
    i.insert("case_id".into(), s(p.case.as_str()));
    i.insert("action_id".into(), s(p.action_id.as_str()));
    i.insert("config_version".into(), n(p.config_version));
    i.insert("secret_version".into(), s(secret_version));
    i.insert("lang".into(), s(lang_str(lang)));
    i.insert("expires".into(), n(p.expires_at.unix_seconds()));
    i.insert(TTL.into(), n(p.expires_at.unix_seconds() + 86_400));
    i
}

/// A registration as read back: the conversation, the proposal, the settings it was
/// prepared with, the conversation's language and its expiry (Unix seconds).
pub(crate) struct Registration {
    /// The partition it was read from (its shard, or the tenant's own for one written
    /// before the shards).
    pub pk: String,
    pub case: CaseId,
    pub action: ActionId,
    pub config_version: u64,
    pub secret_version: String,
    pub lang: Language,
    pub expires: i64,
}

pub(crate) fn registration_from(i: &Item) -> Result<Registration, StoreError> {
    Ok(Registration {
        pk: get_s(i, PK)?.to_owned(),
        case: parse(i, "case_id", CaseId::parse)?,
        action: parse(i, "action_id", ActionId::parse)?,
        config_version: get_n(i, "config_version")?,
        secret_version: get_s(i, "secret_version")?.to_owned(),
        lang: opt_s(i, "lang").and_then(lang_parse).unwrap_or_default(),
        expires: get_n(i, "expires")?,
    })
}

/// A proposal item's state and expiry, by its presentation (S-3).
pub(crate) fn outcome_from(item: &Item) -> Result<ProposalOutcome, StoreError> {
    Ok(ProposalOutcome {
        action_id: parse(item, "action_id", ActionId::parse)?,
        operation: parse(item, "operation", OperationName::parse)?,
        presented: parse(item, "presented_message_id", MessageId::parse)?,
        state: state_of(item).ok_or_else(|| corrupt("state"))?,
        expires_at: ts(item, "expires_at")?,
        replaced: item.contains_key("replaced"),
        needs_passkey: item
            .get("needs_passkey")
            .and_then(|v| v.as_bool().ok())
            .is_some_and(|b| *b),
        // Issue 50: absent on proposals the chat prepared (and before it existed).
        prepared_outside: item.contains_key("prepared_outside"),
    })
}

pub(crate) fn proposal_from(item: &Item) -> Result<Proposal, StoreError> {
    Ok(Proposal {
        action_id: parse(item, "action_id", ActionId::parse)?,
        tenant: parse(item, "tenant", TenantId::parse)?,
        user: parse(item, "user", UserId::parse)?,
        case: parse(item, "case_id", CaseId::parse)?,
        operation: parse(item, "operation", OperationName::parse)?,
        // Re-checked on every read: a summary that no longer passes A-20 is never shown.
        summary: parse(item, "summary", SafeText::check)?,
        summary_hash: parse(item, "summary_hash", Sha256Hex::parse)?,
        arguments_hash: parse(item, "arguments_hash", Sha256Hex::parse)?,
        expires_at: ts(item, "expires_at")?,
        prepared_at: ts(item, "prepared_at")?,
        state: state_of(item).ok_or_else(|| corrupt("state"))?,
        presented: Presentation {
            message_id: parse(item, "presented_message_id", MessageId::parse)?,
            replaced: opt_s(item, "replaced")
                .map(ActionId::parse)
                .transpose()
                .map_err(|_| corrupt("replaced"))?,
            first_served_at: opt_s(item, "served_at")
                .map(|_| ts(item, "served_at"))
                .transpose()?,
        },
        confirmation_message_id: opt_s(item, "confirmation_message_id")
            .map(MessageId::parse)
            .transpose()
            .map_err(|_| corrupt("confirmation_message_id"))?,
        confirm_attempt: opt_s(item, "confirm_attempt").map(str::to_owned),
        config_version: get_n(item, "config_version")?,
        secret_version: opt_s(item, "secret_version").map(str::to_owned),
        server_url: opt_s(item, "server_url").map(str::to_owned),
        audience: opt_s(item, "audience").map(str::to_owned),
        // F-1: absent on proposals prepared before step-up existed: none needed one.
        needs_passkey: item
            .get("needs_passkey")
            .and_then(|v| v.as_bool().ok())
            .copied()
            .unwrap_or(false),
        // Issue 50: absent on proposals the chat prepared (and before it existed).
        prepared_outside: item.contains_key("prepared_outside"),
    })
}

fn role_str(r: Role) -> &'static str {
    match r {
        Role::User => "user",
        Role::Assistant => "assistant",
    }
}
fn kind_str(k: MessageKind) -> &'static str {
    match k {
        MessageKind::Text => "text",
        MessageKind::Proposal => "proposal",
        MessageKind::Instructions => "instructions",
        MessageKind::Result => "result",
        MessageKind::Notice => "notice",
    }
}

pub(crate) fn message_item(tenant: &TenantId, m: &NewMessage) -> Item {
    let mut i = key(conv_pk(tenant, &m.case), msg_sk(&m.id));
    i.insert("message_id".into(), s(m.id.as_str()));
    i.insert("case_id".into(), s(m.case.as_str()));
    i.insert("role".into(), s(role_str(m.role)));
    i.insert("kind".into(), s(kind_str(m.kind)));
    i.insert("content".into(), s(m.content.as_str()));
    if let Some(r) = &m.reply_to {
        i.insert("reply_to".into(), s(r.as_str()));
    }
    i.insert("created_at".into(), s(m.created_at.to_rfc3339()));
    i
}

pub(crate) fn message_from(item: &Item) -> Result<Message, StoreError> {
    let role = match get_s(item, "role")? {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        _ => return Err(corrupt("role")),
    };
    let kind = match get_s(item, "kind")? {
        "text" => MessageKind::Text,
        "proposal" => MessageKind::Proposal,
        "instructions" => MessageKind::Instructions,
        "result" => MessageKind::Result,
        "notice" => MessageKind::Notice,
        _ => return Err(corrupt("kind")),
    };
    Ok(Message {
        id: parse(item, "message_id", MessageId::parse)?,
        case: parse(item, "case_id", CaseId::parse)?,
        role,
        kind,
        content: get_s(item, "content")?.to_owned(),
        reply_to: opt_s(item, "reply_to")
            .map(MessageId::parse)
            .transpose()
            .map_err(|_| corrupt("reply_to"))?,
        created_at: ts(item, "created_at")?,
    })
}

/// The tenant's audit records (L-1, L-2): `AUDIT#<id>` in the tenant's partition.
pub(crate) const AUDIT_PREFIX: &str = "AUDIT#";

/// An audit record in `pk` (its chain's index partition: the tenant's own for the
/// configuration chain, the conversation's shard for a conversation chain), sorted by its
/// time-ordered id, kept without TTL (an audit trail outlives conversations).
pub(crate) fn audit_item(pk: &str, a: &AuditEntry) -> Item {
    let mut i = key(pk, format!("{AUDIT_PREFIX}{}", a.id));
    i.insert("audit_id".into(), s(a.id.as_str()));
    i.insert("at".into(), s(a.at.to_rfc3339()));
    i.insert("actor".into(), s(a.actor.as_str()));
    i.insert("action".into(), s(a.action.as_str()));
    i.insert("changes".into(), s(a.changes.to_string()));
    i
}

/// The head item of a tenant's configuration chain (L-2).
pub(crate) const AUDIT_HEAD_SK: &str = "AUDITHEAD";
/// The head item of a conversation's chain (L-2), in the conversation's partition.
pub(crate) const CASE_HEAD_SK: &str = "A#AUDIT";

/// An audit record with its chain fields (L-2).
pub(crate) fn chained_audit_item(
    pk: &str,
    a: &AuditEntry,
    record: &countersign_domain::audit_chain::ChainedRecord,
    hash: &str,
) -> Item {
    let mut i = audit_item(pk, a);
    i.insert("chain".into(), s(record.chain.as_str()));
    i.insert("chain_seq".into(), n(i128::from(record.seq)));
    i.insert("chain_prev".into(), s(record.prev.as_str()));
    i.insert("chain_hash".into(), s(hash));
    i
}

/// A stored audit item as a chained record, or `None` for a record from before the
/// chain existed.
pub(crate) fn chained_from(
    i: &Item,
) -> Result<Option<countersign_domain::audit_chain::ChainedRecord>, StoreError> {
    let Some(chain) = opt_s(i, "chain") else {
        return Ok(None);
    };
    Ok(Some(countersign_domain::audit_chain::ChainedRecord {
        id: get_s(i, "audit_id")?.to_owned(),
        chain: chain.to_owned(),
        seq: get_n(i, "chain_seq")?,
        prev: opt_s(i, "chain_prev").unwrap_or_default().to_owned(),
        at: get_s(i, "at")?.to_owned(),
        actor: get_s(i, "actor")?.to_owned(),
        action: get_s(i, "action")?.to_owned(),
        changes: get_s(i, "changes")?.to_owned(),
    }))
}
