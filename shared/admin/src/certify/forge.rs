//! The proofs a run sends (V-3): the bad-proof series, each wrong in exactly one way.

use super::Run;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_domain::ports::ProviderContext;
use countersign_domain::prepare::PreparedAction;
use countersign_domain::proof::{PROOF_TYPE, Proof, ProofClaims, sign_proof};
use countersign_domain::texts::Said;
use serde_json::{Value, json};

/// A key no provider may trust: the run signs its "another key", embedded-`jwk` and `jku`
/// proofs with it. Public on purpose (it is in the source).
pub const UNTRUSTED_KEY: &str = include_str!("untrusted-key.pem");

/// A self-signed certificate of [`UNTRUSTED_KEY`] (the `x5u` proof's), public likewise.
pub const UNTRUSTED_CERT: &str = include_str!("untrusted-cert.pem");

/// Where the messages function serves [`UNTRUSTED_KEY`]'s public JWK Set (the `jku`
/// proof's key URL). Never the platform's keys: a provider that fetches it and trusts
/// what it finds executes a proof the platform did not sign.
pub const UNTRUSTED_JWKS_PATH: &str = "/.well-known/countersign-certification/untrusted-jwks.json";

/// Where the messages function serves [`UNTRUSTED_CERT`] (the `x5u` proof's).
pub const UNTRUSTED_CERT_PATH: &str = "/.well-known/countersign-certification/untrusted-cert.pem";

/// The JWK Set a `jku`-following provider finds: [`UNTRUSTED_KEY`]'s public key, under
/// the `kid` the `jku` and `x5u` proofs carry.
pub fn untrusted_jwks() -> Value {
    let mut jwk = untrusted_jwk().unwrap_or(Value::Null);
    if let Some(k) = jwk.as_object_mut() {
        k.insert("kid".into(), json!("attacker"));
        k.insert("use".into(), json!("sig"));
    }
    json!({"keys": [jwk]})
}

/// One bad proof of H-3: its check id, what it is, and what the provider must check.
pub(super) struct BadProof {
    pub(super) id: &'static str,
    /// What the proof is, in English and in Portuguese.
    pub(super) what: [&'static str; 2],
    /// What the provider must check, likewise.
    pub(super) fix: [&'static str; 2],
    /// N-7: signed by the platform's own key with only one thing wrong (a claim, the `kid`
    /// or the `typ`): a verifier that skips that one check executes it, so it is sent only
    /// with the administrator's consent. The others carry no platform signature at all.
    pub(super) genuine: bool,
}

impl BadProof {
    /// What the proof is.
    pub(super) fn what(&self) -> Said {
        Said::new(self.what[0], self.what[1])
    }

    /// What the provider must check.
    pub(super) fn fix(&self) -> Said {
        Said::new(self.fix[0], self.fix[1])
    }
}

/// V-3: the bad-proof series. Each is sent on its own fresh preparation; after it the
/// action must still be `pending_confirmation`. Every proof the platform signs here is
/// wrong in exactly one way, so a provider that skips that one check executes it.
pub(super) const BAD_PROOFS: [BadProof; 20] = [
    bad(
        "proof.none",
        [
            "no X-MCP-Confirmation header",
            "o cabeçalho X-MCP-Confirmation ausente",
        ],
        [
            "refuse execute_action without a proof",
            "recuse execute_action sem uma prova",
        ],
    ),
    bad(
        "proof.alg_none",
        [
            "an unsigned proof (alg: none)",
            "uma prova sem assinatura (alg: none)",
        ],
        [
            "accept only RS256 and always verify the signature",
            "aceite só RS256 e sempre verifique a assinatura",
        ],
    ),
    bad(
        "proof.hs256_public_key",
        [
            "an HS256 proof keyed with the platform's public key",
            "uma prova HS256 cuja chave é a chave pública da plataforma",
        ],
        [
            "accept only RS256 and always verify the signature",
            "aceite só RS256 e sempre verifique a assinatura",
        ],
    ),
    bad(
        "proof.other_key",
        [
            "a proof signed by another key under the platform's kid",
            "uma prova assinada por outra chave sob o kid da plataforma",
        ],
        [
            "verify the signature with the installed public key",
            "verifique a assinatura com a chave pública instalada",
        ],
    ),
    bad(
        "proof.unknown_kid",
        [
            "a proof under a kid the platform never published",
            "uma prova sob um kid que a plataforma nunca publicou",
        ],
        [
            "accept only the installed kids (or those of the JWKS)",
            "aceite só os kids instalados (ou os do JWKS)",
        ],
    ),
    bad(
        "proof.expired",
        [
            "a proof that expired 9 minutes ago",
            "uma prova que expirou há 9 minutos",
        ],
        [
            "check exp against your clock (at most a few seconds of leeway)",
            "compare exp com o seu relógio (no máximo alguns segundos de tolerância)",
        ],
    ),
    bad(
        "proof.long_lifetime",
        [
            "a proof valid for 10 minutes",
            "uma prova válida por 10 minutos",
        ],
        [
            "refuse a proof whose exp - iat exceeds 60 s",
            "recuse uma prova cujo exp - iat passe de 60 s",
        ],
    ),
    bad(
        "proof.wrong_iss",
        [
            "a proof from another issuer (iss)",
            "uma prova de outro emissor (iss)",
        ],
        [
            "require iss to equal the platform's issuer exactly",
            "exija que iss seja exatamente o emissor da plataforma",
        ],
    ),
    bad(
        "proof.wrong_aud",
        [
            "a proof addressed to another provider (aud)",
            "uma prova endereçada a outro provedor (aud)",
        ],
        [
            "require aud to equal your audience exactly (a string, not an array)",
            "exija que aud seja exatamente a sua audiência (uma string, não um array)",
        ],
    ),
    bad(
        "proof.wrong_typ",
        [
            "a proof whose typ is not support-action+jwt",
            "uma prova cujo typ não é support-action+jwt",
        ],
        [
            "require typ support-action+jwt",
            "exija typ support-action+jwt",
        ],
    ),
    bad(
        "proof.wrong_sub",
        [
            "a proof for another person (sub)",
            "uma prova para outra pessoa (sub)",
        ],
        [
            "require sub to equal X-MCP-User-Id",
            "exija que sub seja igual a X-MCP-User-Id",
        ],
    ),
    bad(
        "proof.wrong_tenant",
        [
            "a proof for another tenant (tenantId)",
            "uma prova para outro tenant (tenantId)",
        ],
        [
            "require tenantId to equal X-MCP-Tenant-Id",
            "exija que tenantId seja igual a X-MCP-Tenant-Id",
        ],
    ),
    bad(
        "proof.wrong_conversation",
        [
            "a proof for another conversation (conversationId)",
            "uma prova para outra conversa (conversationId)",
        ],
        [
            "require conversationId to equal X-MCP-Conversation-Id",
            "exija que conversationId seja igual a X-MCP-Conversation-Id",
        ],
    ),
    bad(
        "proof.wrong_action_id",
        [
            "a proof bound to another actionId",
            "uma prova vinculada a outro actionId",
        ],
        [
            "require the proof's actionId to equal the requested one",
            "exija que o actionId da prova seja igual ao pedido",
        ],
    ),
    bad(
        "proof.wrong_operation",
        [
            "a proof for another operation",
            "uma prova para outra operação",
        ],
        [
            "require operation to equal the stored action's",
            "exija que operation seja igual à da ação armazenada",
        ],
    ),
    bad(
        "proof.wrong_arguments_hash",
        [
            "a proof for other arguments (argumentsHash)",
            "uma prova para outros argumentos (argumentsHash)",
        ],
        [
            "require argumentsHash to equal the stored action's",
            "exija que argumentsHash seja igual ao da ação armazenada",
        ],
    ),
    bad(
        "proof.wrong_summary_hash",
        [
            "a proof for another summary (summaryHash)",
            "uma prova para outro resumo (summaryHash)",
        ],
        [
            "require summaryHash to equal the stored action's",
            "exija que summaryHash seja igual ao da ação armazenada",
        ],
    ),
    bad(
        "proof.embedded_jwk",
        [
            "a proof carrying its own key in a jwk header",
            "uma prova que traz a sua própria chave num cabeçalho jwk",
        ],
        [
            "refuse any jwk, jku, x5u or x5c header and use only the installed key",
            "recuse qualquer cabeçalho jwk, jku, x5u ou x5c e use só a chave instalada",
        ],
    ),
    bad(
        "proof.jku",
        [
            "a proof pointing at a key URL (jku header)",
            "uma prova que aponta para uma URL de chave (cabeçalho jku)",
        ],
        [
            "refuse any jwk, jku, x5u or x5c header and use only the installed key",
            "recuse qualquer cabeçalho jwk, jku, x5u ou x5c e use só a chave instalada",
        ],
    ),
    bad(
        "proof.x5u",
        [
            "a proof pointing at a certificate URL (x5u header)",
            "uma prova que aponta para uma URL de certificado (cabeçalho x5u)",
        ],
        [
            "refuse any jwk, jku, x5u or x5c header and use only the installed key",
            "recuse qualquer cabeçalho jwk, jku, x5u ou x5c e use só a chave instalada",
        ],
    ),
];

const fn bad(id: &'static str, what: [&'static str; 2], fix: [&'static str; 2]) -> BadProof {
    let genuine = !matches!(
        id.as_bytes(),
        b"proof.none"
            | b"proof.alg_none"
            | b"proof.hs256_public_key"
            | b"proof.other_key"
            | b"proof.embedded_jwk"
            | b"proof.jku"
            | b"proof.x5u"
    );
    BadProof {
        id,
        what,
        fix,
        genuine,
    }
}

impl Run<'_> {
    /// The claims of a valid proof for `target` in `ctx` (the base every bad proof
    /// changes).
    pub(super) fn claims(
        &self,
        ctx: &ProviderContext,
        target: &PreparedAction,
        now: i64,
    ) -> ProofClaims {
        ProofClaims {
            iss: self.state.issuer.clone(),
            aud: self.config.audience().to_owned(),
            sub: ctx.user.to_string(),
            tenant_id: ctx.tenant.to_string(),
            conversation_id: ctx.conversation.to_string(),
            action_id: target.action_id.to_string(),
            operation: target.operation.to_string(),
            arguments_hash: target.arguments_hash.to_string(),
            summary_hash: target.summary_hash.to_string(),
            message_id: self.state.ids.message_id().to_string(),
            presented_message_id: self.state.ids.message_id().to_string(),
            jti: self.sent(self.state.ids.proof_jti()),
            iat: now,
            // A-33, as the chat signs it: never beyond the proposal (a provider that checks
            // `exp ≤ expiresAt`, as the kit does given the expiry, would refuse more).
            exp: (now + 60).min(target.expires_at.unix_seconds()),
        }
    }

    /// V-3: `c` wrong in the one claim check `id` is about, when `id` is a claim check.
    fn wrong_claim(&self, id: &str, mut c: ProofClaims, now: i64) -> Option<ProofClaims> {
        match id {
            "proof.expired" => (c.iat, c.exp) = (now - 600, now - 540),
            "proof.long_lifetime" => c.exp = now + 600,
            "proof.wrong_iss" => c.iss = "https://issuer.attacker.example/mcp-actions".into(),
            "proof.wrong_aud" => c.aud = "https://another-provider.example/mcp".into(),
            "proof.wrong_sub" => c.sub = format!("{}-other", self.ctx.user),
            "proof.wrong_tenant" => c.tenant_id = format!("{}x", self.ctx.tenant),
            "proof.wrong_conversation" => {
                c.conversation_id = self.state.ids.case_id().to_string();
            }
            "proof.wrong_action_id" => c.action_id = format!("act_{}", self.state.ids.proof_jti()),
            "proof.wrong_operation" => c.operation = format!("{}_other", c.operation),
            "proof.wrong_arguments_hash" => c.arguments_hash = other_hash(&c.arguments_hash),
            "proof.wrong_summary_hash" => c.summary_hash = other_hash(&c.summary_hash),
            _ => return None,
        }
        Some(c)
    }

    /// `path` on this deployment, where the run's untrusted key is served; an address that
    /// does not resolve when the run does not know its own origin.
    fn key_url(&self, path: &str) -> String {
        let base = self
            .key_urls
            .as_deref()
            .unwrap_or("https://keys.attacker.example");
        format!("{}{path}", base.trim_end_matches('/'))
    }

    /// The proof of check `id` for `target` (`None`: no proof at all): the platform's
    /// signature over one wrong claim, or a right claim set under a wrong header, key or
    /// algorithm.
    pub(super) async fn forge(
        &self,
        ctx: &ProviderContext,
        id: &str,
        target: &PreparedAction,
    ) -> Result<Option<Proof>, ()> {
        if id == "proof.none" {
            return Ok(None);
        }
        let now = self.state.clock.now().unix_seconds();
        let c = self.claims(ctx, target, now);
        let signer = self.state.signer.as_ref();
        if let Some(wrong) = self.wrong_claim(id, c.clone(), now) {
            return Ok(Some(sign_proof(signer, &wrong).await.map_err(|_| ())?));
        }
        let kid = signer.key_id().await.map_err(|_| ())?;
        let header = |extra: Value| {
            let mut h = json!({"alg": "RS256", "typ": PROOF_TYPE, "kid": kid});
            if let (Some(h), Value::Object(extra)) = (h.as_object_mut(), extra) {
                h.extend(extra);
            }
            h
        };
        // The platform's key under a header of the run's choosing.
        let (kid, c) = (&kid, &c);
        let platform = |h: Value| async move {
            let input = signing_input(&h, c);
            let sig = signer.sign_rs256(kid, input.as_bytes()).await;
            let sig = sig.map_err(|_| ())?;
            Ok::<_, ()>(Proof::unchecked(format!(
                "{input}.{}",
                URL_SAFE_NO_PAD.encode(sig)
            )))
        };
        let attacker = |extra: Value| untrusted(&header(extra), c);
        let proof = match id {
            "proof.alg_none" => {
                let input = signing_input(&header(json!({"alg": "none"})), c);
                Proof::unchecked(format!("{input}."))
            }
            "proof.hs256_public_key" => {
                let pem = signer.verification_key().await.map_err(|_| ())?;
                hs256(&header(json!({"alg": "HS256"})), c, &pem.public_key_pem)?
            }
            "proof.other_key" => attacker(json!({}))?,
            "proof.embedded_jwk" => attacker(json!({"kid": "attacker", "jwk": untrusted_jwk()?}))?,
            "proof.jku" => {
                attacker(json!({"kid": "attacker", "jku": self.key_url(UNTRUSTED_JWKS_PATH)}))?
            }
            "proof.x5u" => {
                attacker(json!({"kid": "attacker", "x5u": self.key_url(UNTRUSTED_CERT_PATH)}))?
            }
            "proof.unknown_kid" => platform(header(json!({"kid": "never-published"}))).await?,
            "proof.wrong_typ" => platform(header(json!({"typ": "JWT"}))).await?,
            _ => return Err(()),
        };
        Ok(Some(proof))
    }
}

/// `base64url(header).base64url(claims)`.
fn signing_input(header: &Value, claims: &ProofClaims) -> String {
    let claims = serde_json::to_vec(claims).unwrap_or_default();
    format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims)
    )
}

/// A compact JWS of `header` and `claims` signed by [`UNTRUSTED_KEY`].
fn untrusted(header: &Value, claims: &ProofClaims) -> Result<Proof, ()> {
    use jsonwebtoken::{Algorithm, EncodingKey, crypto};
    let key = EncodingKey::from_rsa_pem(UNTRUSTED_KEY.as_bytes()).map_err(|_| ())?;
    let input = signing_input(header, claims);
    let signature = crypto::sign(input.as_bytes(), &key, Algorithm::RS256).map_err(|_| ())?;
    Ok(Proof::unchecked(format!("{input}.{signature}")))
}

/// A compact JWS of `header` and `claims` MACed with HS256 keyed with `key` (the
/// platform's public key PEM: the algorithm-confusion attack).
fn hs256(header: &Value, claims: &ProofClaims, key: &str) -> Result<Proof, ()> {
    use jsonwebtoken::{Algorithm, EncodingKey, crypto};
    let input = signing_input(header, claims);
    let key = EncodingKey::from_secret(key.as_bytes());
    let mac = crypto::sign(input.as_bytes(), &key, Algorithm::HS256).map_err(|_| ())?;
    Ok(Proof::unchecked(format!("{input}.{mac}")))
}

/// A hash that is not `hash` (same form: 64 lower-case hex digits).
fn other_hash(hash: &str) -> String {
    countersign_domain::hash::Sha256Hex::digest(format!("not {hash}"))
        .as_str()
        .to_owned()
}

/// The public JWK of [`UNTRUSTED_KEY`].
fn untrusted_jwk() -> Result<Value, ()> {
    use jsonwebtoken::{Algorithm, EncodingKey, jwk::Jwk};
    let key = EncodingKey::from_rsa_pem(UNTRUSTED_KEY.as_bytes()).map_err(|_| ())?;
    let jwk = Jwk::from_encoding_key(&key, Algorithm::RS256).map_err(|_| ())?;
    serde_json::to_value(jwk).map_err(|_| ())
}
