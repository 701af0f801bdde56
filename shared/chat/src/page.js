// The confirmation page's one script: the expiry in local time, and the passkey
// ceremonies (F-2, F-3), which a browser offers to script alone. Everything else on the
// page is plain forms; without the script the page still works (the expiry shows in UTC).
"use strict";
(function () {
  const b64 = {
    decode(s) {
      const t = s.replace(/-/g, "+").replace(/_/g, "/");
      return Uint8Array.from(atob(t + "===".slice((t.length + 3) % 4)), (c) => c.charCodeAt(0));
    },
    encode(buf) {
      let s = "";
      for (const b of new Uint8Array(buf)) s += String.fromCharCode(b);
      return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
    },
  };
  // Issue 50: the tenant's accent (checked when saved; checked again here).
  const accent = document.documentElement.dataset.accent;
  if (accent && /^#[0-9a-f]{6}$/.test(accent)) document.documentElement.style.setProperty("--accent", accent);
  // The expiry in the person's own time zone and language (the server wrote UTC).
  const expires = document.getElementById("expires");
  const at = expires && new Date(expires.getAttribute("datetime"));
  if (at && !Number.isNaN(at.getTime())) {
    expires.textContent = at.toLocaleString(document.documentElement.lang || undefined, { dateStyle: "medium", timeStyle: "short" });
  }
  const section = document.getElementById("stepup");
  if (!section) return;
  const error = document.getElementById("stepup-error");
  const say = (text) => {
    error.textContent = text;
    error.hidden = false;
  };
  const supported = !!(window.PublicKeyCredential && navigator.credentials);
  // A fresh ceremony from the page itself (same origin, the session's form token).
  async function ceremony(form) {
    const body = new URLSearchParams({ csrf: form.elements.csrf.value });
    const res = await fetch(form.dataset.challenge, { method: "POST", body, credentials: "same-origin" });
    if (!res.ok) throw new Error(`challenge ${res.status}`);
    return res.json();
  }
  function wire(buttonId, run) {
    const button = document.getElementById(buttonId);
    if (!button) return;
    if (!supported) {
      button.disabled = true;
      say(section.dataset.unsupported);
      return;
    }
    button.addEventListener("click", async () => {
      button.disabled = true;
      error.hidden = true;
      try {
        await run(button.form);
      } catch (e) {
        say(`${section.dataset.failed} (${e && e.name ? e.name : "Error"})`);
        button.disabled = false;
      }
    });
  }
  // An assertion by one of the person's passkeys over the ceremony's challenge, posted
  // with `form` (a confirmation, or the right to add another passkey).
  const assert = async (form) => {
    const c = await ceremony(form);
    const credential = await navigator.credentials.get({
      publicKey: {
        challenge: b64.decode(c.challenge),
        rpId: c.rpId,
        allowCredentials: c.credentials.map((id) => ({ type: "public-key", id: b64.decode(id) })),
        userVerification: "required",
        timeout: 60000,
      },
    });
    const r = credential.response;
    const f = form.elements;
    f.nonce.value = c.nonce;
    f.credentialId.value = b64.encode(credential.rawId);
    f.authenticatorData.value = b64.encode(r.authenticatorData);
    f.clientDataJSON.value = b64.encode(r.clientDataJSON);
    f.signature.value = b64.encode(r.signature);
    form.submit();
  };
  wire("confirm-passkey", assert);
  wire("add-passkey", assert);
  wire("enrol-passkey", async (form) => {
    const c = await ceremony(form);
    const credential = await navigator.credentials.create({
      publicKey: {
        challenge: b64.decode(c.challenge),
        rp: { id: c.rpId, name: c.rpName },
        user: { id: b64.decode(c.userHandle), name: c.userName, displayName: c.userName },
        pubKeyCredParams: [
          { type: "public-key", alg: -7 },
          { type: "public-key", alg: -8 },
        ],
        excludeCredentials: c.credentials.map((id) => ({ type: "public-key", id: b64.decode(id) })),
        authenticatorSelection: { userVerification: "required", residentKey: "preferred" },
        attestation: "none",
        timeout: 60000,
      },
    });
    const r = credential.response;
    const f = form.elements;
    f.nonce.value = c.nonce;
    f.authenticatorData.value = b64.encode(r.getAuthenticatorData());
    f.clientDataJSON.value = b64.encode(r.clientDataJSON);
    f.transports.value = (r.getTransports ? r.getTransports() : []).join(",");
    form.submit();
  });
})();
