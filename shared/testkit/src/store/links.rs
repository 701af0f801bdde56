//! `SessionStore` and `ConfirmationLinks`: panel sessions and the confirmation page's links.

use super::*;

#[async_trait]
impl SessionStore for MemoryStore {
    async fn put_session(
        &self,
        id_hash: &Sha256Hex,
        session: &PanelSession,
    ) -> Result<(), StoreError> {
        yield_now().await;
        self.run(
            "put_session",
            || (),
            |s| {
                s.sessions.insert(id_hash.clone(), session.clone());
                Ok(())
            },
        )
    }

    async fn get_session(&self, id_hash: &Sha256Hex) -> Result<Option<PanelSession>, StoreError> {
        yield_now().await;
        self.read("get_session", |s| s.sessions.get(id_hash).cloned())
    }

    async fn delete_session(&self, id_hash: &Sha256Hex) -> Result<(), StoreError> {
        yield_now().await;
        self.run(
            "delete_session",
            || (),
            |s| {
                s.sessions.remove(id_hash);
                Ok(())
            },
        )
    }
}

#[async_trait]
impl countersign_domain::ports::ConfirmationLinks for MemoryStore {
    async fn put_link(
        &self,
        id_hash: &Sha256Hex,
        link: &countersign_domain::ports::ConfirmationLink,
    ) -> Result<(), StoreError> {
        yield_now().await;
        self.run(
            "put_link",
            || (),
            |s| {
                // N-4: only into a conversation that exists.
                s.conversation(&link.tenant, &link.case)
                    .ok_or(StoreError::Gone)?
                    .writes += 1;
                s.links.insert(id_hash.clone(), link.clone());
                Ok(())
            },
        )
    }

    async fn get_link(
        &self,
        id_hash: &Sha256Hex,
    ) -> Result<Option<countersign_domain::ports::ConfirmationLink>, StoreError> {
        yield_now().await;
        self.read("get_link", |s| s.links.get(id_hash).cloned())
    }

    async fn spend_state(
        &self,
        state_id: &str,
        _expires_at: Timestamp,
    ) -> Result<bool, StoreError> {
        yield_now().await;
        self.run(
            "spend_state",
            || false,
            |s| Ok(s.spent_states.insert(state_id.to_owned())),
        )
    }

    async fn set_url_elicitation(
        &self,
        token_hash: &Sha256Hex,
        declared: bool,
        _expires_at: Timestamp,
    ) -> Result<(), StoreError> {
        yield_now().await;
        self.run(
            "set_url_elicitation",
            || (),
            |s| {
                s.url_elicitation.insert(token_hash.clone(), declared);
                Ok(())
            },
        )
    }

    async fn url_elicitation(&self, token_hash: &Sha256Hex) -> Result<bool, StoreError> {
        yield_now().await;
        self.read("url_elicitation", |s| {
            s.url_elicitation.get(token_hash).copied().unwrap_or(false)
        })
    }

    async fn open_page_session(
        &self,
        key: &Sha256Hex,
        expires_at: Timestamp,
    ) -> Result<(), StoreError> {
        yield_now().await;
        self.run(
            "open_page_session",
            || (),
            |s| {
                s.page_sessions.insert(key.clone(), expires_at);
                Ok(())
            },
        )
    }

    async fn page_session(&self, key: &Sha256Hex) -> Result<Option<Timestamp>, StoreError> {
        yield_now().await;
        self.read("page_session", |s| s.page_sessions.get(key).copied())
    }
}
