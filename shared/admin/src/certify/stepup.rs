//! F-6: the certification's step-up series. For an operation that is (or is to become) a
//! passkey operation, the valid execution carries a step-up made by the platform's test
//! credential (a software authenticator whose seed is public: no person's passkey), and
//! eleven step-up proofs wrong in one way each go on fresh preparations: each must be
//! refused with the action still `pending_confirmation`. Every one is signed by the
//! platform with all fourteen claims right, so they are sent only with consent (N-7).

use super::Run;
use super::forge::BadProof;
use countersign_domain::authenticator::{Authenticator, UP, UV};
use countersign_domain::ports::ProviderContext;
use countersign_domain::prepare::PreparedAction;
use countersign_domain::proof::{Proof, ProofClaims, sign_proof};
use countersign_domain::stepup::sign_stepup_proof;
use countersign_domain::stepup::{Binding, Evidence, Site};

/// The public seed of the platform's test credential.
const TEST_CREDENTIAL_SEED: u8 = 0x5e;

/// The test credential's id.
pub(super) const TEST_CREDENTIAL_ID: &[u8] = b"countersign-certification-test-credential";

const fn bad(id: &'static str, what: [&'static str; 2], fix: [&'static str; 2]) -> BadProof {
    BadProof {
        id,
        what,
        fix,
        genuine: true,
    }
}

/// F-6: the wrong step-ups, each sent on its own fresh preparation of a passkey operation.
pub(super) const BAD_STEP_UPS: [BadProof; 11] = [
    bad(
        "stepup.none",
        [
            "a valid proof without a step-up for a passkey operation",
            "uma prova válida sem step-up para uma operação com passkey",
        ],
        [
            "require a step-up for this operation (provider kit: `require_step_up`)",
            "exija um step-up para esta operação (provider kit: `require_step_up`)",
        ],
    ),
    bad(
        "stepup.other_action",
        [
            "a step-up whose challenge is another action's",
            "um step-up cujo challenge é o de outra ação",
        ],
        [
            "recompute the challenge from the proof's own claims and compare it with the client data's",
            "recalcule o challenge a partir das claims da própria prova e compare-o com o do client data",
        ],
    ),
    bad(
        "stepup.other_summary",
        [
            "a step-up over another summary hash",
            "um step-up sobre outro hash de resumo",
        ],
        [
            "recompute the challenge from the proof's own claims (summaryHash included)",
            "recalcule o challenge a partir das claims da própria prova (incluindo summaryHash)",
        ],
    ),
    bad(
        "stepup.uv_off",
        [
            "a step-up without user verification (UV off)",
            "um step-up sem verificação do usuário (UV desligado)",
        ],
        [
            "require the UV flag in the authenticator data",
            "exija a flag UV nos dados do autenticador",
        ],
    ),
    bad(
        "stepup.up_off",
        [
            "a step-up without user presence (UP off)",
            "um step-up sem presença do usuário (UP desligado)",
        ],
        [
            "require the UP flag in the authenticator data",
            "exija a flag UP nos dados do autenticador",
        ],
    ),
    bad(
        "stepup.origin",
        [
            "a step-up made on another origin",
            "um step-up feito em outra origem",
        ],
        [
            "accept only actionVerification.stepUpOrigins as the client data's origin",
            "aceite como origem do client data só actionVerification.stepUpOrigins",
        ],
    ),
    bad(
        "stepup.rp_id",
        [
            "a step-up made for another RP ID",
            "um step-up feito para outro RP ID",
        ],
        [
            "compare the authenticator data's RP ID hash with SHA-256(actionVerification.stepUpRpId)",
            "compare o hash do RP ID nos dados do autenticador com SHA-256(actionVerification.stepUpRpId)",
        ],
    ),
    bad(
        "stepup.other_credential",
        [
            "a step-up signed by another credential than the one it names",
            "um step-up assinado por outra credencial que não a que ele nomeia",
        ],
        [
            "verify the assertion's signature with the credential key the step-up carries",
            "verifique a assinatura da asserção com a chave da credencial que o step-up traz",
        ],
    ),
    bad(
        "stepup.replayed",
        [
            "a step-up taken from another action's proof",
            "um step-up tirado da prova de outra ação",
        ],
        [
            "recompute the challenge from this proof's claims: another action's assertion never matches",
            "recalcule o challenge a partir das claims desta prova: a asserção de outra ação nunca corresponde",
        ],
    ),
    bad(
        "stepup.signature",
        [
            "a step-up whose signature is over other data",
            "um step-up cuja assinatura cobre outros dados",
        ],
        [
            "verify the signature over authenticatorData ‖ SHA-256(clientDataJSON)",
            "verifique a assinatura sobre authenticatorData ‖ SHA-256(clientDataJSON)",
        ],
    ),
    bad(
        "stepup.type",
        [
            "a step-up made of a passkey creation (webauthn.create), not an assertion",
            "um step-up feito de uma criação de passkey (webauthn.create), não de uma asserção",
        ],
        [
            "require the client data's type to be webauthn.get",
            "exija que o type do client data seja webauthn.get",
        ],
    ),
];

/// The platform's test credential on `site`.
fn test_credential(site: &Site) -> Authenticator {
    let origin = site.origins.first().map_or("", String::as_str);
    let mut device = Authenticator::es256(TEST_CREDENTIAL_SEED, &site.rp_id, origin);
    device.id = TEST_CREDENTIAL_ID.to_vec();
    // A synced passkey's counter: the tenant's verifier does not keep counters.
    device.count = 0;
    device
}

fn nonce() -> String {
    use base64::Engine as _;
    use rand::RngCore as _;
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The evidence `device` gives over the binding of `c` with `nonce`.
fn evidence(device: &mut Authenticator, c: &ProofClaims, nonce: &str) -> Evidence {
    let assertion = device.assert(&Binding::of_claims(c, nonce).challenge());
    Evidence::of(&device.id, &device.public_key(), &assertion, nonce)
}

impl Run<'_> {
    /// F-6: the step-up proof of the valid execution of `target`: all right, made by the
    /// platform's test credential. `Err`: no site is configured, or signing failed.
    pub(super) async fn stepup_proof(&self, claims: &ProofClaims) -> Result<Proof, ()> {
        let site = self.state.step_up.as_ref().ok_or(())?;
        let e = evidence(&mut test_credential(site), claims, &nonce());
        sign_stepup_proof(self.state.signer.as_ref(), claims, &e)
            .await
            .map_err(|_| ())
    }

    /// F-6: the proof of step-up check `id` for `target`: the platform's signature over
    /// the fourteen right claims and a step-up wrong in that one way.
    pub(super) async fn forge_stepup(
        &self,
        ctx: &ProviderContext,
        id: &str,
        target: &PreparedAction,
    ) -> Result<Option<Proof>, ()> {
        let site = self.state.step_up.as_ref().ok_or(())?;
        let now = self.state.clock.now().unix_seconds();
        let c = self.claims(ctx, target, now);
        let signer = self.state.signer.as_ref();
        if id == "stepup.none" {
            return Ok(Some(sign_proof(signer, &c).await.map_err(|_| ())?));
        }
        let mut device = test_credential(site);
        let n = nonce();
        let mut other = c.clone();
        let e = match id {
            "stepup.other_action" => {
                other.action_id = format!("act_{}", self.state.ids.proof_jti());
                evidence(&mut device, &other, &n)
            }
            "stepup.other_summary" => {
                other.summary_hash = "0".repeat(64);
                evidence(&mut device, &other, &n)
            }
            "stepup.uv_off" => {
                device.flags = UP;
                evidence(&mut device, &c, &n)
            }
            "stepup.up_off" => {
                device.flags = UV;
                evidence(&mut device, &c, &n)
            }
            "stepup.origin" => {
                device.origin = "https://login.attacker.example".into();
                evidence(&mut device, &c, &n)
            }
            "stepup.rp_id" => {
                device.rp_id = "attacker.example".into();
                evidence(&mut device, &c, &n)
            }
            "stepup.other_credential" => {
                let mut thief =
                    Authenticator::es256(TEST_CREDENTIAL_SEED ^ 0xff, &site.rp_id, &device.origin);
                thief.count = 0;
                let assertion = thief.assert(&Binding::of_claims(&c, &n).challenge());
                Evidence::of(&device.id, &device.public_key(), &assertion, &n)
            }
            "stepup.replayed" => {
                // A whole step-up of an earlier action (its own nonce and all).
                other.action_id = format!("act_{}", self.state.ids.proof_jti());
                other.conversation_id = self.state.ids.case_id().to_string();
                evidence(&mut device, &other, &nonce())
            }
            "stepup.signature" => {
                let mut e = evidence(&mut device, &c, &n);
                let elsewhere = device.assert(b"other data");
                e.signature =
                    Evidence::of(&device.id, &device.public_key(), &elsewhere, &n).signature;
                e
            }
            "stepup.type" => {
                let a =
                    device.assert_as("webauthn.create", &Binding::of_claims(&c, &n).challenge());
                Evidence::of(&device.id, &device.public_key(), &a, &n)
            }
            _ => return Err(()),
        };
        Ok(Some(
            sign_stepup_proof(signer, &c, &e).await.map_err(|_| ())?,
        ))
    }
}
