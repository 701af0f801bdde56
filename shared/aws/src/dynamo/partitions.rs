//! N-8: every partition key the adapter builds, by the prefix IAM's `dynamodb:LeadingKeys`
//! sees (a partition key is all IAM can tell apart). The template's write allow-lists are
//! checked against this list (`infra/dev-server/tests/template.rs`), and this list against
//! the key builders themselves (below).

/// Each partition key prefix (or whole key), with what lives there.
pub const PARTITIONS: [(&str, &str); 21] = [
    (
        "CONV#",
        "a conversation: case, proposals, messages, chain head, key and link pointers",
    ),
    (
        "TENANT#",
        "a tenant's own partition (tenant, MCP settings, widget keys, certification, configuration chain) and, as TENANT#<t>#<nn>, its index shards",
    ),
    ("TENANTS", "the tenant registry"),
    ("ADMINKEY#", "an admin key's hash, naming its tenant"),
    ("PLATFORM", "the key rings"),
    ("ACTION#", "an action id's guard (A-14)"),
    ("AUDITHEAD#", "a purged conversation's chain head"),
    ("CONFIRMLINK#", "a confirmation link"),
    ("REQUESTSTATE#", "a spent request state or hand-off nonce"),
    ("PAGESESSION#", "a confirmation page's session"),
    ("PANELSESSION#", "an admin panel session"),
    ("MCPCLIENT#", "what an MCP client declared"),
    ("RATE#", "a budget's window"),
    ("LEASE#", "a one-at-a-time job's lease"),
    ("SUBJECT#", "a person's key pointer"),
    ("SUBJECTKEY#", "a wrapped data key"),
    ("PERSON#", "a person's index (N-3) and passkeys (F-2)"),
    (
        "PASSKEYHOLDERS#",
        "a tenant's passkey holders (F-1's count), written with each passkey",
    ),
    ("ERASUREJOB#", "a tenant's erasure jobs (N-3)"),
    ("JOBQUEUE#", "the erasure queue (N-3)"),
    ("BACKFILL#", "the person index backfill's state"),
];

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::items::*;
    use super::PARTITIONS;
    use countersign_domain::hash::Sha256Hex;
    use countersign_domain::ids::{ActionId, CaseId, TenantId, UserId};

    fn listed(pk: &str) -> bool {
        PARTITIONS.iter().any(|(p, _)| pk.starts_with(p))
    }

    /// N-8: every key builder's partition key starts with a listed prefix.
    #[test]
    fn n8_every_partition_the_adapter_builds_is_listed() {
        let t = TenantId::from_ulid_text("01JDZ6Y5X1QW9T3V7N2K4M8P0R").unwrap();
        let c = CaseId::from_ulid_text("01JDZ6Y5X1QW9T3V7N2K4M8P0S").unwrap();
        let a = ActionId::parse("act_1").unwrap();
        let u = UserId::parse("u_1").unwrap();
        let h = Sha256Hex::digest("x");
        let built = [
            conv_pk(&t, &c),
            tenant_pk(&t),
            index_pk(&t, a.as_str()),
            guard_pk(&t, &a),
            legacy_guard_pk(&t, &a),
            super::super::subjects::key_pk(&t, "k"),
            super::super::subjects::subject_pk(&t, &u),
            super::super::erasure::person_pk(&t, &u),
            super::super::passkeys::holders_pk(&t),
            super::super::tenants::admin_key_pk(&h),
            super::super::leases::lease_key(&t, "certification")
                .get(PK)
                .and_then(|v| v.as_s().ok())
                .cloned()
                .unwrap(),
        ];
        for pk in built {
            assert!(listed(&pk), "{pk} is not listed");
        }
        for constant in [
            super::super::links::LINK_PREFIX,
            super::super::links::STATE_PREFIX,
            super::super::links::CLIENT_PREFIX,
            super::super::links::PAGE_SESSION_PREFIX,
            super::super::tenants::SESSION_PREFIX,
            super::super::chain::PURGED_HEAD_PREFIX,
        ] {
            assert!(listed(constant), "{constant} is not listed");
        }
    }
}
