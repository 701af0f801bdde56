//! `Retention`, `PersonIndex`, `SubjectKeys`: the purge, erasure and the people's keys.

use super::*;

#[async_trait]
impl countersign_domain::ports::Retention for MemoryStore {
    async fn retained(
        &self,
        tenant: &TenantId,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<countersign_domain::ports::RetainedPage, StoreError> {
        use countersign_domain::ports::{Retained, RetainedPage};
        yield_now().await;
        let after = match cursor {
            Some(c) => Some(CaseId::parse(c).map_err(|_| StoreError::Corrupt("cursor".into()))?),
            None => None,
        };
        self.read("retained", |s| {
            let mut cases: Vec<&Conversation> = s
                .conversations
                .iter()
                .filter(|((t, c), _)| t == tenant && after.as_ref().is_none_or(|a| c > a))
                .map(|(_, v)| v)
                .collect();
            cases.sort_by(|a, b| a.case.id.cmp(&b.case.id));
            let more = cases.len() > limit;
            let items: Vec<Retained> = cases
                .into_iter()
                .take(limit)
                .map(|c| Retained {
                    case: c.case.id.clone(),
                    user: c.case.user.clone(),
                    last_activity: c
                        .messages
                        .values()
                        .map(|m| m.created_at)
                        .max()
                        .unwrap_or(c.case.created_at)
                        .max(c.case.created_at),
                    writes: c.writes,
                })
                .collect();
            let next = more
                .then(|| items.last().map(|r| r.case.to_string()))
                .flatten();
            RetainedPage { items, next }
        })
    }

    async fn purge(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        seen: Option<u64>,
    ) -> Result<countersign_domain::ports::PurgeOutcome, StoreError> {
        use countersign_domain::ports::PurgeOutcome;
        yield_now().await;
        self.run(
            "purge",
            || PurgeOutcome::Gone,
            |s| {
                let k = (tenant.clone(), case.clone());
                let Some(conv) = s.conversations.get(&k) else {
                    return Ok(PurgeOutcome::Gone);
                };
                // decided with the removal, as the DynamoDB store does.
                let held = s
                    .tenants
                    .get(tenant)
                    .is_some_and(|t| t.holds.keeps(&conv.case.user, case));
                if held {
                    return Ok(PurgeOutcome::Held);
                }
                if let Some(p) = conv.active().filter(|p| p.state.blocks_purge()) {
                    return Ok(PurgeOutcome::Unresolved(p.state));
                }
                if seen.is_some_and(|w| w != conv.writes) {
                    return Ok(PurgeOutcome::Active);
                }
                let items = 1 + conv.proposals.len() + conv.messages.len();
                s.conversations.remove(&k);
                if let Some(id) = s.conversation_keys.remove(&k) {
                    s.sealed.remove(&(tenant.clone(), id));
                }
                s.links
                    .retain(|_, l| !(l.tenant == *tenant && l.case == *case));
                Ok(PurgeOutcome::Purged { items })
            },
        )
    }
}

/// N-3 in memory: a person's conversations are found by looking at every one (the
/// bound on reads is the DynamoDB index's, measured on the emulator); the memory store
/// seals nothing, so every record naming a person does so in clear: all are "legacy".
#[async_trait]
impl countersign_domain::ports::PersonIndex for MemoryStore {
    async fn person_conversations(
        &self,
        tenant: &TenantId,
        user: &countersign_domain::ids::UserId,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<countersign_domain::ports::PersonPage, StoreError> {
        yield_now().await;
        let after = match cursor {
            Some(c) => Some(CaseId::parse(c).map_err(|_| StoreError::Corrupt("cursor".into()))?),
            None => None,
        };
        self.read("person_conversations", |s| {
            let mut cases: Vec<CaseId> = s
                .conversations
                .iter()
                .filter(|((t, c), v)| {
                    t == tenant && &v.case.user == user && after.as_ref().is_none_or(|a| c > a)
                })
                .map(|((_, c), _)| c.clone())
                .collect();
            cases.sort();
            let more = cases.len() > limit;
            cases.truncate(limit);
            let next = more
                .then(|| cases.last().map(ToString::to_string))
                .flatten();
            countersign_domain::ports::PersonPage { cases, next }
        })
    }

    async fn legacy_records(
        &self,
        tenant: &TenantId,
        user: &countersign_domain::ids::UserId,
    ) -> Result<usize, StoreError> {
        use countersign_domain::audit_chain::PERSONAL_FIELDS;
        yield_now().await;
        self.read("legacy_records", |s| {
            s.records.get(tenant).map_or(0, |records| {
                records
                    .iter()
                    .filter_map(|r| serde_json::from_str::<serde_json::Value>(&r.changes).ok())
                    .filter(|c| {
                        PERSONAL_FIELDS
                            .iter()
                            .any(|f| c.get(*f).and_then(|v| v.as_str()) == Some(user.as_str()))
                    })
                    .count()
            })
        })
    }

    async fn forget_person(
        &self,
        _tenant: &TenantId,
        _user: &countersign_domain::ids::UserId,
    ) -> Result<(), StoreError> {
        Ok(())
    }

    async fn backfill_person_index(&self, _pages: usize) -> Result<bool, StoreError> {
        Ok(true)
    }
}

impl MemoryStore {
    /// Every stored thing whose debug text contains `needle` (R-1 tests: what a purge left
    /// behind), named by kind: `conversation`, `link`, `audit`.
    pub fn holding(&self, needle: &str) -> Vec<&'static str> {
        let s = self.lock();
        let mut found = Vec::new();
        if s.conversations
            .values()
            .any(|c| format!("{c:?}").contains(needle))
        {
            found.push("conversation");
        }
        if s.links.values().any(|l| format!("{l:?}").contains(needle)) {
            found.push("link");
        }
        if format!("{:?}{:?}", s.audit, s.records).contains(needle) {
            found.push("audit");
        }
        found
    }
}

/// R-2 in memory: a sealed value names its key and a slot; the values live beside the key
/// and go with it, so a destroyed key's values are gone as they are from KMS-wrapped
/// keys. (The memory store does not seal its own records: sealing is the DynamoDB
/// adapter's, tested on the emulator.)
#[async_trait]
impl countersign_domain::ports::SubjectKeys for MemoryStore {
    async fn seal(
        &self,
        tenant: &TenantId,
        user: &countersign_domain::ids::UserId,
        personal: &serde_json::Value,
    ) -> Result<String, StoreError> {
        yield_now().await;
        self.run("seal", String::new, |s| {
            let k = (tenant.clone(), user.clone());
            let id = match s.subject_keys.get(&k) {
                Some(id) => id.clone(),
                None => {
                    s.key_count += 1;
                    let id = format!("sk_{}", s.key_count);
                    s.subject_keys.insert(k, id.clone());
                    id
                }
            };
            let slot = s.sealed.entry((tenant.clone(), id.clone())).or_default();
            slot.push(personal.clone());
            Ok(format!("v1.{id}.{}", slot.len() - 1))
        })
    }

    async fn seal_conversation(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        fields: &serde_json::Value,
    ) -> Result<Option<String>, StoreError> {
        yield_now().await;
        self.run(
            "seal_conversation",
            || None,
            |s| {
                let k = (tenant.clone(), case.clone());
                let id = match s.conversation_keys.get(&k) {
                    Some(id) => id.clone(),
                    None if s.conversations.contains_key(&k) => {
                        s.key_count += 1;
                        let id = format!("sk_{}", s.key_count);
                        s.conversation_keys.insert(k, id.clone());
                        id
                    }
                    None => return Ok(None),
                };
                let slot = s.sealed.entry((tenant.clone(), id.clone())).or_default();
                slot.push(fields.clone());
                Ok(Some(format!("v1.{id}.{}", slot.len() - 1)))
            },
        )
    }

    async fn open(
        &self,
        tenant: &TenantId,
        sealed: &str,
    ) -> Result<Option<serde_json::Value>, StoreError> {
        yield_now().await;
        let bad = || StoreError::Corrupt("a sealed audit value does not open".into());
        let mut parts = sealed.splitn(3, '.');
        let (Some("v1"), Some(id), Some(slot)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(bad());
        };
        let slot: usize = slot.parse().map_err(|_| bad())?;
        self.read("open", |s| {
            s.sealed
                .get(&(tenant.clone(), id.to_owned()))
                .map(|v| v.get(slot).cloned().ok_or_else(bad))
                .transpose()
        })?
    }

    async fn has_key(
        &self,
        tenant: &TenantId,
        user: &countersign_domain::ids::UserId,
    ) -> Result<bool, StoreError> {
        yield_now().await;
        self.read("has_key", |s| {
            s.subject_keys.contains_key(&(tenant.clone(), user.clone()))
        })
    }

    async fn destroy(
        &self,
        tenant: &TenantId,
        user: &countersign_domain::ids::UserId,
    ) -> Result<countersign_domain::ports::Destroyed, StoreError> {
        use countersign_domain::ports::Destroyed;
        yield_now().await;
        self.run(
            "destroy",
            || Destroyed::NoKey,
            |s| {
                if s.tenants
                    .get(tenant)
                    .is_some_and(|t| t.holds.people.contains(user))
                {
                    return Ok(Destroyed::Held);
                }
                let Some(id) = s.subject_keys.remove(&(tenant.clone(), user.clone())) else {
                    return Ok(Destroyed::NoKey);
                };
                s.sealed.remove(&(tenant.clone(), id));
                Ok(Destroyed::Destroyed)
            },
        )
    }
}
