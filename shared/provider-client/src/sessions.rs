//! The sessions the client keeps (one per tenant and server URL, tagged with the service
//! token they were opened with) and the servers known to need one.

use crate::{HttpProvider, PROTOCOL_VERSION};
use countersign_domain::hash::Sha256Hex;
use countersign_domain::ports::ProviderContext;

/// What a kept session is tagged with: the digest of the service token it was opened with.
fn session_tag(ctx: &ProviderContext) -> Sha256Hex {
    Sha256Hex::digest(ctx.service_token.expose())
}

impl HttpProvider {
    /// Whether the server at `url` answered a session-less request with 400/404 before.
    pub(crate) fn session_needed(&self, url: &str) -> bool {
        self.needs_session
            .lock()
            .map(|s| s.contains(url))
            .unwrap_or(false)
    }

    /// Remembers that the server at `url` needs a session.
    pub(crate) fn remember_session_needed(&self, url: &str) {
        if let Ok(mut s) = self.needs_session.lock() {
            s.insert(url.to_owned());
        }
    }

    /// The kept session for `ctx`'s (tenant, URL), if it was opened with `ctx`'s service
    /// token; one opened with another token (rotated) is dropped and closed. Issue 27: the
    /// tag is the token, not a configuration version — consultations carry the settings'
    /// version and status queries the action settings' version, and tagging by those made
    /// each close the other's session.
    pub(crate) fn kept_session(&self, ctx: &ProviderContext, url: &reqwest::Url) -> Option<String> {
        let key = (ctx.tenant.clone(), url.as_str().to_owned());
        let tag = session_tag(ctx);
        let mut sessions = self.sessions.lock().ok()?;
        match sessions.get(&key) {
            Some((t, s)) if *t == tag => Some(s.clone()),
            Some(_) => {
                let (_, old) = sessions.remove(&key)?;
                drop(sessions);
                self.close(ctx, url, old);
                None
            }
            None => None,
        }
    }

    /// Keeps `session` for `ctx`'s (tenant, URL).
    pub(crate) fn keep_session(
        &self,
        ctx: &ProviderContext,
        url: &reqwest::Url,
        session: Option<&str>,
    ) {
        let (Some(s), Ok(mut sessions)) = (session, self.sessions.lock()) else {
            return;
        };
        let key = (ctx.tenant.clone(), url.as_str().to_owned());
        sessions.insert(key, (session_tag(ctx), s.to_owned()));
    }

    /// Forgets the kept session for `ctx`'s (tenant, URL) if it is `session` (the server
    /// dropped it).
    pub(crate) fn forget_session(&self, ctx: &ProviderContext, url: &reqwest::Url, session: &str) {
        if let Ok(mut sessions) = self.sessions.lock() {
            let key = (ctx.tenant.clone(), url.as_str().to_owned());
            if sessions.get(&key).is_some_and(|(_, s)| s == session) {
                sessions.remove(&key);
            }
        }
    }

    /// Closes `session` with `DELETE` (MCP session termination), in the background and
    /// best-effort: the server may have dropped it already.
    pub(crate) fn close(&self, ctx: &ProviderContext, url: &reqwest::Url, session: String) {
        // A session exists only after a call, so the client was built.
        let Ok(http) = self.http() else {
            return;
        };
        let request = http
            .delete(url.clone())
            .timeout(self.settings.connect_timeout)
            .header("mcp-protocol-version", PROTOCOL_VERSION)
            .header("mcp-session-id", session)
            .bearer_auth(ctx.service_token.expose());
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                let _ = request.send().await;
            });
        }
    }
}
