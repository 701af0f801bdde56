// Countersign chat widget (W-1 … W-6). Dependency-free; one source for the ES module and
// the classic script (widget/build.mjs). No inline script, no eval, no HTML from data:
// every text the platform or the model wrote is set with textContent.
//
// The widget's key duty (seed 001, A-22): every message it sends carries
// `replyToMessageId` = the id of the last assistant message actually rendered in this
// tab. That id lives in this tab's memory only; after a reload it is the last assistant
// message of the history this tab has rendered again. A confirmation counts only when
// it replies to the proposal the person saw.

export const VERSION = "1.4.0";

/** N-6: how long a replacing proposal's buttons wait after it first appeared. */
const REPLACED_DWELL_MS = 5000;

const TEXTS = {
  en: {
    title: "Support",
    placeholder: "Write a message",
    send: "Send",
    confirm: "Confirm",
    cancel: "Cancel",
    confirmWord: "confirm",
    cancelWord: "cancel",
    checkWord: "check status",
    sending: "Sending…",
    typing: "The assistant is answering…",
    carryingOut: "Carrying out the action…",
    you: "You",
    assistant: "Assistant",
    authFailed: "Your session with the support chat has ended. Reload the page to continue.",
    sendFailed: "The message could not be sent. It may or may not have arrived.",
    check: "Check what happened",
    checkAgain: "Check again",
    loadFailed: "The conversation could not be loaded.",
    retry: "Try again",
    rateLimited: "Too many messages right now. Please wait a moment and try again.",
    proposal: "Proposal",
    end: "End conversation",
    ended: "The conversation was ended. You can start a new one below.",
    previousEnded: "Your previous conversation has ended. This is a new one.",
    endBlocked: "The conversation cannot end while an action's outcome is being checked. Use “Check again” first.",
    expiresIn: (m) => (m <= 1 ? "Waiting for your answer · expires in under a minute" : `Waiting for your answer · expires in ${m} minutes`),
    states: {
      pending_confirmation: "Waiting for your answer",
      executing: "Being carried out…",
      completed: "Confirmed and carried out",
      failed: "Confirmed, but it failed: nothing was changed",
      conflict: "Not carried out: something changed",
      expired: "Expired",
      cancelled: "Cancelled",
      unknown: "Outcome uncertain",
      superseded: "Replaced by a newer proposal",
    },
    // N-6: on the card of a proposal that replaced another (the API's `replacedEarlier`).
    replacedEarlier: "This proposal replaced an earlier one. Read it before you answer.",
    // F-3, F-7: a proposal whose operation needs the person's passkey.
    needsPasskey: "This change needs your passkey. You confirm it on a secure page that opens in a new tab, where your passkey signs exactly this change; typing “confirm” here cannot carry it out.",
    confirmPasskey: "Confirm with your passkey",
    passkeyOpened: "The confirmation page opened in a new tab. This card updates when you are done there.",
    passkeyLink: "Open the confirmation page",
    passkeyFailed: "The confirmation page could not be opened. Try again.",
    stepUpRequired: "This change needs your passkey: use “Confirm with your passkey” on the card.",
    // 1.4.0 (issue 50).
    greeting: "Hi! How can we help you today?",
    menu: "More options",
    endAsk: "End this conversation? A change still waiting for your answer is cancelled; the conversation stays readable here.",
    endYes: "End it",
    endNo: "Keep talking",
    endedHere: "This conversation has ended.",
    startNew: "Start a new conversation",
    offline: "You are offline. The chat reconnects when your connection is back.",
    retryIn: (s) => `Too many requests right now. You can try again in ${s} s.`,
    preparedOutside: "Prepared by an app you connected to this account",
    nearWord: (word) => `To answer the waiting change, send only the word “${word}” or use its button: this message is sent as an ordinary message. Send it anyway?`,
    sendAnyway: "Send anyway",
    edit: "Edit",
  },
  pt: {
    title: "Suporte",
    placeholder: "Escreva uma mensagem",
    send: "Enviar",
    confirm: "Confirmar",
    cancel: "Cancelar",
    confirmWord: "confirmar",
    cancelWord: "cancelar",
    checkWord: "verificar status",
    sending: "Enviando…",
    typing: "O assistente está respondendo…",
    carryingOut: "Executando a ação…",
    you: "Você",
    assistant: "Assistente",
    authFailed: "Sua sessão no chat de suporte terminou. Recarregue a página para continuar.",
    sendFailed: "A mensagem não pôde ser enviada. Ela pode ou não ter chegado.",
    check: "Verificar o que aconteceu",
    checkAgain: "Verificar novamente",
    loadFailed: "Não foi possível carregar a conversa.",
    retry: "Tentar novamente",
    rateLimited: "Muitas mensagens agora. Aguarde um momento e tente novamente.",
    proposal: "Proposta",
    end: "Encerrar conversa",
    ended: "A conversa foi encerrada. Você pode começar uma nova abaixo.",
    previousEnded: "Sua conversa anterior foi encerrada. Esta é uma nova.",
    endBlocked: "A conversa não pode ser encerrada enquanto o resultado de uma ação é verificado. Use “Verificar novamente” antes.",
    expiresIn: (m) => (m <= 1 ? "Aguardando sua resposta · expira em menos de um minuto" : `Aguardando sua resposta · expira em ${m} minutos`),
    states: {
      pending_confirmation: "Aguardando sua resposta",
      executing: "Em execução…",
      completed: "Confirmada e executada",
      failed: "Confirmada, mas falhou: nada foi alterado",
      conflict: "Não executada: algo mudou",
      expired: "Expirada",
      cancelled: "Cancelada",
      unknown: "Resultado incerto",
      superseded: "Substituída por uma proposta mais nova",
    },
    replacedEarlier: "Esta proposta substituiu uma anterior. Leia antes de responder.",
    needsPasskey: "Esta alteração exige a sua passkey. Você a confirma numa página segura que abre em uma nova aba, onde a sua passkey assina exatamente esta alteração; digitar “confirmar” aqui não a realiza.",
    confirmPasskey: "Confirmar com a sua passkey",
    passkeyOpened: "A página de confirmação abriu em uma nova aba. Este cartão se atualiza quando você terminar lá.",
    passkeyLink: "Abrir a página de confirmação",
    passkeyFailed: "Não foi possível abrir a página de confirmação. Tente novamente.",
    stepUpRequired: "Esta alteração exige a sua passkey: use “Confirmar com a sua passkey” no cartão.",
    greeting: "Olá! Como podemos ajudar hoje?",
    menu: "Mais opções",
    endAsk: "Encerrar esta conversa? Uma alteração que ainda aguarda a sua resposta é cancelada; a conversa continua legível aqui.",
    endYes: "Encerrar",
    endNo: "Continuar conversando",
    endedHere: "Esta conversa foi encerrada.",
    startNew: "Começar uma nova conversa",
    offline: "Você está sem conexão. O chat se reconecta quando a conexão voltar.",
    retryIn: (s) => `Muitas solicitações agora. Você pode tentar novamente em ${s} s.`,
    preparedOutside: "Preparada por um aplicativo que você conectou a esta conta",
    nearWord: (word) => `Para responder à alteração que aguarda, envie só a palavra “${word}” ou use o botão dela: esta mensagem vai como uma mensagem comum. Enviar mesmo assim?`,
    sendAnyway: "Enviar mesmo assim",
    edit: "Editar",
  },
};

/** The language code `tag` names (`en`, `pt`; `pt-BR` is `pt`), or null. */
export function languageOf(tag) {
  const t = String(tag || "").toLowerCase();
  if (t === "en" || t.startsWith("en-")) return "en";
  if (t === "pt" || t.startsWith("pt-")) return "pt";
  return null;
}

/** The fixed texts of `language` (`en` when unknown). */
export function texts(language) {
  return TEXTS[languageOf(language)] || TEXTS.en;
}

// ---------------------------------------------------------------------------------------
// State logic (pure; unit-tested with Node's test runner).

/** Merges `incoming` messages into `existing`: one entry per id, in id order (ids are
 *  time-ordered ULIDs). */
export function mergeMessages(existing, incoming) {
  const byId = new Map(existing.map((m) => [m.id, m]));
  for (const m of incoming) byId.set(m.id, m);
  return [...byId.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** The id of the last assistant message among `rendered`, or null. */
export function lastAssistantId(rendered) {
  for (let i = rendered.length - 1; i >= 0; i--) {
    if (rendered[i].role === "assistant") return rendered[i].id;
  }
  return null;
}

/** The state of a proposal as the person should see it now: a pending one past its
 *  expiry is expired (the platform settles it lazily). `proposal` is the API's
 *  `{messageId, state, expiresAt}`, or undefined when not known yet (then pending). */
export function proposalState(proposal, now = Date.now()) {
  if (!proposal) return "pending_confirmation";
  if (proposal.state === "pending_confirmation" && Date.parse(proposal.expiresAt) <= now) return "expired";
  return proposal.state;
}

/** Whether `message` is a proposal the person can still answer from this tab: the last
 *  message rendered, with nothing from the person after it, and still pending. */
export function isAnswerable(rendered, message, proposal, now = Date.now()) {
  if (message.kind !== "proposal") return false;
  const last = rendered[rendered.length - 1];
  return Boolean(last) && last.id === message.id && proposalState(proposal, now) === "pending_confirmation";
}

/** Parses the safe markdown subset of model text (S polish): paragraphs, `-`/`1.` lists,
 *  fenced code, and inline `code`, **strong**, *emphasis*, [links](https://…) and bare
 *  https links. Returns plain data (the view builds DOM nodes from it, never HTML): blocks
 *  `{type: "p"|"ul"|"ol"|"pre", …}` whose inlines are `{t: "text"|"strong"|"em"|"code"|"a",
 *  v, href?}`. Only `http:`, `https:` and `mailto:` links become links; anything else
 *  stays text. */
export function parseMarkdown(source) {
  const blocks = [];
  const lines = String(source).replace(/\r\n?/g, "\n").split("\n");
  let para = [];
  const flush = () => {
    if (para.length) blocks.push({ type: "p", inlines: inlines(para.join("\n")) });
    para = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (/^```/.test(line)) {
      flush();
      const code = [];
      for (i++; i < lines.length && !/^```/.test(lines[i]); i++) code.push(lines[i]);
      blocks.push({ type: "pre", text: code.join("\n") });
      continue;
    }
    const bullet = /^\s*[-*]\s+(.*)$/.exec(line);
    const numbered = /^\s*\d{1,3}[.)]\s+(.*)$/.exec(line);
    if (bullet || numbered) {
      flush();
      const type = bullet ? "ul" : "ol";
      const prev = blocks[blocks.length - 1];
      const item = inlines((bullet || numbered)[1]);
      if (prev && prev.type === type && prev.open) prev.items.push(item);
      else blocks.push({ type, items: [item], open: true });
      continue;
    }
    if (line.trim() === "") {
      flush();
      const prev = blocks[blocks.length - 1];
      if (prev) prev.open = false;
      continue;
    }
    const prev = blocks[blocks.length - 1];
    if (prev && prev.open) prev.open = false;
    para.push(line);
  }
  flush();
  for (const b of blocks) delete b.open;
  return blocks;
}

const SAFE_HREF = /^(https?:\/\/|mailto:)[^\s<>"]+$/i;

/** The inline spans of `text` (see parseMarkdown). */
export function inlines(text) {
  const out = [];
  const push = (t, v, href) => {
    const last = out[out.length - 1];
    if (t === "text" && last && last.t === "text") last.v += v;
    else out.push(href ? { t, v, href } : { t, v });
  };
  // No `_emphasis_`: identifiers (ses_a1, car_a2) are common in answers and must stay whole.
  const pattern = /`([^`\n]+)`|\*\*([^*\n]+)\*\*|\*([^*\s][^*\n]*)\*|\[([^\]\n]+)\]\(([^)\s]+)\)|(https?:\/\/[^\s<>"')\]]+)/g;
  let at = 0;
  for (let m; (m = pattern.exec(text)); ) {
    if (m.index > at) push("text", text.slice(at, m.index));
    if (m[1] !== undefined) push("code", m[1]);
    else if (m[2] !== undefined) push("strong", m[2]);
    else if (m[3] !== undefined) push("em", m[3]);
    else if (m[4] !== undefined) {
      if (SAFE_HREF.test(m[5])) push("a", m[4], m[5]);
      else push("text", m[0]);
    } else push("a", m[6], m[6]);
    at = pattern.lastIndex;
  }
  if (at < text.length) push("text", text.slice(at));
  return out;
}

/** Issue 50: the answer word `content` comes close to without being it (A-24 counts only
 *  the word alone, any case, surrounding spaces aside): `confirm.`, `confirmed`,
 *  `confirma`, or the word inside a sentence. Returns that word, or null (also for the
 *  exact word in any case, which answers as it is). */
export function nearAnswerWord(content, words) {
  const text = String(content).trim().toLowerCase();
  const folded = text.normalize("NFD").replace(/[\u0300-\u036f]/g, "");
  for (const word of words) {
    if (text === word) return null;
  }
  for (const word of words) {
    // The first six letters are the root in both languages (confirm/confirmar,
    // cancel/cancelar), and no everyday word starts with them (configure, cancer do not).
    const stem = word.slice(0, 6);
    const tokens = folded.split(/[^a-z]+/).filter(Boolean);
    if (tokens.some((t) => t.startsWith(stem) && t.length <= word.length + 4)) return word;
  }
  return null;
}

/** Issue 50: `iso` as the person's local hour and minute, in `language`. */
export function clockTime(iso, language) {
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return "";
  return at.toLocaleTimeString(language === "pt" ? "pt-BR" : "en", { hour: "2-digit", minute: "2-digit" });
}

/** The body of a message the person sends from this tab (W-3). */
export function outgoing(content, rendered) {
  const body = { content };
  const reply = lastAssistantId(rendered);
  if (reply) body.replyToMessageId = reply;
  return body;
}

/** The `sub` and `tid` claims of a widget JWT, unverified (only to name the storage key
 *  of the person's open case; the platform verifies the token). */
export function tokenSubject(token) {
  try {
    const part = String(token).split(".")[1] || "";
    const b64 = part.replace(/-/g, "+").replace(/_/g, "/");
    const json = JSON.parse(globalThis.atob(b64 + "===".slice((b64.length + 3) % 4)));
    if (typeof json.sub === "string" && typeof json.tid === "string") {
      return { sub: json.sub, tid: json.tid };
    }
  } catch (_) {
    // Not a JWT of the expected shape: no restoration key.
  }
  return null;
}

/** The storage key of the open case of the person `token` names at `apiUrl`. */
export function caseKey(apiUrl, token) {
  const who = tokenSubject(token);
  return who ? `countersign:case:${apiUrl}:${who.tid}:${who.sub}` : null;
}

// ---------------------------------------------------------------------------------------
// The API client.

/** An API error with the platform's typed code. */
export class ApiError extends Error {
  constructor(status, code, message, retryAfter) {
    super(message || code || `HTTP ${status}`);
    this.status = status;
    this.code = code;
    // Issue 50: a 429's `Retry-After`, in seconds (null when absent).
    this.retryAfter = retryAfter || null;
  }
}

/** The seconds a response's `Retry-After` asks for (delta-seconds form), or null. */
export function retryAfterSeconds(res) {
  const v = res && res.headers && res.headers.get ? res.headers.get("Retry-After") : null;
  const n = v === null || v === undefined ? NaN : Number(v);
  return Number.isFinite(n) && n >= 0 ? Math.min(Math.ceil(n), 3600) : null;
}

/** Calls the widget API with a fresh token; on 401 asks `getToken` for a new one once
 *  (W-2). A request refused with 401 did nothing, so sending it again is safe. */
export class Client {
  constructor(apiUrl, getToken, fetchImpl, streamUrl) {
    this.apiUrl = String(apiUrl).replace(/\/+$/, "");
    // S-1: where the streamed post is served (a deployment's `StreamUrl`); the API's URL
    // when it streams itself (the local run).
    this.streamUrl = String(streamUrl || apiUrl).replace(/\/+$/, "");
    this.getToken = getToken;
    this.fetch = fetchImpl || globalThis.fetch.bind(globalThis);
    this.token = null;
  }

  async request(method, path, body) {
    if (!this.token) this.token = await this.getToken();
    let res = await this.send(method, path, body);
    if (res.status === 401) {
      this.token = await this.getToken();
      res = await this.send(method, path, body);
    }
    const data = await res.json().catch(() => null);
    if (!res.ok) {
      const e = (data && data.error) || {};
      throw new ApiError(res.status, e.code || null, e.message || null, retryAfterSeconds(res));
    }
    return data;
  }

  send(method, path, body, base) {
    const headers = { Authorization: `Bearer ${this.token}` };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    return this.fetch((base || this.apiUrl) + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "omit",
      cache: "no-store",
    });
  }

  /** The case's messages after `after` (all when null), and its proposals' states. */
  async history(caseId, after = null) {
    let all = [];
    let proposals = [];
    for (;;) {
      const q = after ? `?limit=500&after=${encodeURIComponent(after)}` : "?limit=500";
      const page = await this.request("GET", `/api/cases/${encodeURIComponent(caseId)}/messages${q}`);
      all = mergeMessages(all, page.messages);
      proposals = page.proposals || proposals;
      if (page.messages.length < 500) return { messages: all, proposals };
      after = page.messages[page.messages.length - 1].id;
    }
  }

  /** S-1: posts `body` to `path` and reads the answer as newline-delimited JSON events,
   *  calling `onEvent` for each. Rejects with an ApiError for a refusal (nothing was
   *  stored), and with `{cut: true}` when the stream broke before its end (what was
   *  stored stays stored: read the history). */
  async stream(path, body, onEvent) {
    if (!this.token) this.token = await this.getToken();
    let res = await this.send("POST", path, body, this.streamUrl);
    if (res.status === 401) {
      this.token = await this.getToken();
      res = await this.send("POST", path, body, this.streamUrl);
    }
    if (!res.ok) {
      const data = await res.json().catch(() => null);
      const e = (data && data.error) || {};
      throw new ApiError(res.status, e.code || null, e.message || null, retryAfterSeconds(res));
    }
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffered = "";
    let ended = false;
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffered += decoder.decode(value, { stream: true });
        let newline;
        while ((newline = buffered.indexOf("\n")) >= 0) {
          const line = buffered.slice(0, newline);
          buffered = buffered.slice(newline + 1);
          if (!line.trim()) continue;
          const event = JSON.parse(line);
          if (event.type === "end" || event.type === "error") ended = true;
          onEvent(event);
        }
      }
    } catch (e) {
      if (e instanceof ApiError) throw e;
      throw Object.assign(new Error("the answer's stream broke"), { cut: true });
    }
    if (!ended) throw Object.assign(new Error("the answer's stream ended early"), { cut: true });
  }

  /** The case: `{caseId, status, language, lastMessageId}` (S-2, S-3); with `welcome`,
   *  also the tenant's `accent` and `welcome` (issue 50; never on the poll). */
  summary(caseId, welcome = false) {
    return this.request("GET", `/api/cases/${encodeURIComponent(caseId)}${welcome ? "?include=welcome" : ""}`);
  }
}

// ---------------------------------------------------------------------------------------
// The view.

const STYLE = `
:host { all: initial; display: block; font: 15px/1.45 system-ui, sans-serif; color: #1d2430; }
.cs { display: flex; flex-direction: column; height: 100%; min-height: 320px; border: 1px solid #c9d1dc; border-radius: 10px; background: #fff; overflow: hidden; }
.cs header { display: flex; align-items: center; justify-content: space-between; gap: 8px; padding: 4px 6px 4px 14px; background: var(--cs-accent, #2357c6); color: #fff; }
.cs h2 { margin: 0; font-size: 16px; }
.cs header button { border-color: #fff; background: transparent; color: #fff; }
.cs header { position: relative; }
.cs [hidden] { display: none !important; }
.cs .menu { position: absolute; right: 6px; top: 100%; z-index: 2; display: flex; flex-direction: column; padding: 4px; background: #fff; border: 1px solid #c9d1dc; border-radius: 8px; box-shadow: 0 4px 12px #0003; }
.cs .menu button { border: 0; text-align: left; color: #9b2c2c; }
.cs .ask-end { padding: 10px 12px; background: #fdf2f2; border-bottom: 1px solid #e2c5c5; }
.cs .ask-end p { margin: 0 0 8px; }
.cs button.danger { background: #b42318; border-color: #b42318; color: #fff; }
.cs ol.log { list-style: none; margin: 0; padding: 12px; flex: 1; overflow-y: auto; }
.cs .welcome { margin: 0 0 10px; padding: 10px; border-radius: 8px; background: #f2f4f7; }
.cs .welcome p { margin: 0 0 8px; white-space: pre-wrap; }
.cs .starters { display: flex; flex-wrap: wrap; gap: 6px; }
.cs .starters button { min-height: 36px; padding: 4px 10px; border-radius: 16px; font-size: 14px; }
.cs li.ended { list-style: none; margin: 6px 0; padding: 10px; text-align: center; color: #4a5568; border-top: 1px dashed #c9d1dc; }
.cs li.ended p { margin: 0 0 8px; }
.cs time.at { display: block; margin-top: 2px; font-size: 12px; color: #5b6678; text-align: right; }
.cs .attribution { display: inline-block; margin-bottom: 4px; padding: 1px 8px; border-radius: 10px; font-size: 12px; font-weight: 600; background: #e6e9ef; color: #2d3748; }
.cs li.msg { margin: 0 0 10px; padding: 8px 10px; border-radius: 8px; overflow-wrap: anywhere; max-width: 85%; }
.cs li.msg > .body { white-space: pre-wrap; }
.cs li.md > .body { white-space: normal; }
.cs li.md p { margin: 0 0 6px; white-space: pre-wrap; }
.cs li.md p:last-child { margin-bottom: 0; }
.cs li.md ul, .cs li.md ol { margin: 4px 0 6px; padding-left: 22px; }
.cs li.md ul { list-style: disc; }
.cs li.md ol { list-style: decimal; }
.cs li.md pre, .cs li.md code { font: 13px/1.4 ui-monospace, monospace; background: #e6e9ef; border-radius: 4px; }
.cs li.md pre { padding: 6px 8px; white-space: pre-wrap; }
.cs li.md code { padding: 0 3px; }
.cs a { color: #1a47a8; }
.cs li.user { margin-left: auto; background: #e8effd; }
.cs li.user.sending { opacity: .7; }
.cs li.draft { background: #f2f4f7; white-space: pre-wrap; }
.cs li.assistant { background: #f2f4f7; }
.cs li.proposal { background: #fff8e5; border: 1px solid #e8c65a; max-width: 100%; }
.cs li.proposal.settled { background: #f7f7f7; border-color: #c9d1dc; }
.cs li.result.good { background: #e9f6ec; border-left: 4px solid #2f855a; }
.cs li.result.bad { background: #fdeeee; border-left: 4px solid #c53030; }
.cs li.notice { background: #eef2f8; border-left: 4px solid #5a6b85; }
.cs .state { display: block; margin-top: 6px; font-size: 13px; font-weight: 600; color: #4a5568; }
.cs .who { position: absolute; left: -9999px; }
.cs .instructions { display: block; margin-top: 6px; color: #4a5568; white-space: pre-line; }
.cs .replaced { display: block; margin-bottom: 4px; font-size: 13px; font-weight: 600; color: #8a4b08; }
.cs .actions { display: flex; gap: 8px; margin-top: 8px; flex-wrap: wrap; }
.cs button { font: inherit; min-height: 44px; padding: 6px 14px; border-radius: 6px; border: 1px solid var(--cs-accent, #2357c6); background: #fff; color: var(--cs-accent, #2357c6); cursor: pointer; }
.cs .passkey-note { display: block; margin-top: 6px; font-size: .9em; }
.cs button.primary { background: var(--cs-accent, #2357c6); border-color: var(--cs-accent, #2357c6); color: #fff; }
.cs button:focus-visible, .cs textarea:focus-visible, .cs a:focus-visible { outline: 3px solid #f0b429; outline-offset: 1px; }
.cs button:disabled { opacity: .5; cursor: default; }
.cs form { display: flex; gap: 8px; padding: 10px; border-top: 1px solid #e2e8f0; }
.cs textarea { flex: 1; font: 16px/1.4 system-ui, sans-serif; resize: none; padding: 6px 8px; border: 1px solid #c9d1dc; border-radius: 6px; }
.cs .typing { padding: 0 12px; min-height: 1.4em; color: #4a5568; font-style: italic; }
.cs .status { padding: 0 12px; min-height: 1.4em; color: #9b2c2c; }
.cs .status.info { color: #2c4a7a; }
`;

/** How often an open, visible widget checks its case for messages written elsewhere (S-2);
 *  doubled after each failure up to POLL_MAX_MS. */
export const POLL_MS = 3000;
const POLL_MAX_MS = 60000;

function el(tag, attrs, text) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

/** DOM nodes of `blocks` (parseMarkdown): elements and text nodes only. */
function markdownNodes(blocks) {
  const span = (i) => {
    if (i.t === "text") return document.createTextNode(i.v);
    if (i.t === "a") return el("a", { href: i.href, rel: "noopener noreferrer", target: "_blank" }, i.v);
    return el(i.t, {}, i.v);
  };
  return blocks.map((b) => {
    if (b.type === "pre") return el("pre", {}, b.text);
    if (b.type === "p") {
      const p = el("p");
      p.append(...b.inlines.map(span));
      return p;
    }
    const list = el(b.type);
    for (const item of b.items) {
      const li = el("li");
      li.append(...item.map(span));
      list.append(li);
    }
    return list;
  });
}

/** One mounted widget. */
export class Widget {
  constructor(host, options) {
    if (!options || !options.apiUrl || typeof options.getToken !== "function") {
      throw new TypeError("Countersign widget: apiUrl and getToken are required");
    }
    // S-4: the host page's choice for this person, else the case's (the tenant's default).
    this.chosenLanguage = languageOf(options.language);
    this.t = texts(this.chosenLanguage || "en");
    this.client = new Client(options.apiUrl, options.getToken, options.fetch, options.streamUrl);
    this.apiUrl = this.client.apiUrl;
    this.storage = options.storage || safeLocalStorage();
    this.pollMs = options.pollMs || POLL_MS;
    // S-1: the answer streams where the browser can read a response as it arrives.
    this.streaming = options.stream !== false && typeof TextDecoder === "function" && typeof ReadableStream === "function";
    this.rendered = [];
    this.proposals = new Map();
    this.items = new Map();
    this.drafting = null;
    this.caseId = null;
    this.busy = false;
    this.timer = null;
    this.failures = 0;
    this.root = host.attachShadow ? host.attachShadow({ mode: "open" }) : host;
    this.build(options.theme || {});
  }

  build(theme) {
    // A constructed stylesheet where the browser has them: a strict CSP (`style-src
    // 'self'`) allows it, where it would refuse a <style> element.
    let style = null;
    if (this.root.adoptedStyleSheets !== undefined && typeof CSSStyleSheet === "function") {
      const sheet = new CSSStyleSheet();
      sheet.replaceSync(STYLE);
      this.root.adoptedStyleSheets = [sheet];
    } else {
      style = el("style");
      style.textContent = STYLE;
    }
    this.box = el("section", { class: "cs" });
    // The host page's accent wins over the tenant's (issue 50: from the case, when set).
    this.themeAccent = Boolean(theme.accent);
    if (theme.accent) this.box.style.setProperty("--cs-accent", theme.accent);
    const header = el("header");
    this.heading = el("h2");
    // Issue 50: ending is in a menu and asks first; it is never the bar's main control.
    this.menuButton = el("button", { type: "button", class: "menu-button", "aria-haspopup": "true", "aria-expanded": "false" }, "⋯");
    this.menu = el("div", { class: "menu", role: "menu" });
    this.menu.hidden = true;
    this.endButton = el("button", { type: "button", class: "end", role: "menuitem" });
    this.menu.append(this.endButton);
    this.menuButton.addEventListener("click", () => this.toggleMenu());
    this.endButton.addEventListener("click", () => this.askEnd());
    header.append(this.heading, this.menuButton, this.menu);
    this.endAsk = el("div", { class: "ask-end", role: "alertdialog" });
    this.endAsk.hidden = true;
    this.welcomeBox = el("div", { class: "welcome" });
    this.list = el("ol", { class: "log", role: "log", "aria-live": "polite", "aria-relevant": "additions", tabindex: "0" });
    this.typing = el("div", { class: "typing", role: "status", "aria-live": "polite" });
    this.status = el("div", { class: "status", role: "status", "aria-live": "assertive" });
    this.form = el("form");
    this.input = el("textarea", { rows: "2", maxlength: "4000" });
    this.sendButton = el("button", { type: "submit", class: "primary" });
    this.sendButton.disabled = true;
    this.form.append(this.input, this.sendButton);
    this.box.append(header, this.endAsk, this.list, this.typing, this.status, this.form);
    if (style) this.root.append(style);
    this.root.append(this.box);
    this.label();
    this.form.addEventListener("submit", (e) => {
      e.preventDefault();
      this.submitTyped();
    });
    this.input.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey) {
        e.preventDefault();
        this.submitTyped();
      }
    });
    if (typeof document !== "undefined" && document.addEventListener) {
      document.addEventListener("visibilitychange", () => this.schedule(document.hidden ? null : 0));
    }
    // Issue 50: offline says so; back online, a widget without a conversation opens one
    // and one with a conversation reads it at once.
    if (typeof globalThis.addEventListener === "function") {
      globalThis.addEventListener("offline", () => this.say(this.t.offline, null, "info"));
      globalThis.addEventListener("online", () => {
        this.say("");
        if (this.ended) return;
        if (!this.caseId) this.start();
        else this.schedule(0);
      });
    }
  }

  toggleMenu(open = this.menu.hidden) {
    this.menu.hidden = !open;
    this.menuButton.setAttribute("aria-expanded", String(open));
    if (open) this.endButton.focus();
  }

  /** Issue 50: asks before ending; nothing is closed until the person says so. */
  askEnd() {
    this.toggleMenu(false);
    if (!this.caseId || this.busy) return;
    this.endAsk.textContent = "";
    const yes = el("button", { type: "button", class: "danger end-yes" }, this.t.endYes);
    const no = el("button", { type: "button", class: "end-no" }, this.t.endNo);
    yes.addEventListener("click", () => {
      this.endAsk.hidden = true;
      this.end();
    });
    no.addEventListener("click", () => {
      this.endAsk.hidden = true;
      this.input.focus();
    });
    const actions = el("div", { class: "actions" });
    actions.append(yes, no);
    this.endAsk.append(el("p", {}, this.t.endAsk), actions);
    this.endAsk.hidden = false;
    no.focus();
  }

  /** Issue 50: the tenant's greeting and starters while nothing was said yet. */
  renderWelcome() {
    const w = this.welcome || {};
    const empty = this.rendered.length === 0 && !this.ended && Boolean(this.caseId);
    this.welcomeBox.textContent = "";
    if (!empty) {
      this.welcomeBox.remove();
      return;
    }
    this.welcomeBox.append(el("p", { class: "greeting" }, w.greeting || this.t.greeting));
    const starters = (w.starters || []).slice(0, 4);
    if (starters.length) {
      const group = el("div", { class: "starters", role: "group" });
      for (const text of starters) {
        const b = el("button", { type: "button", class: "starter" }, text);
        b.addEventListener("click", () => this.send(text).then(() => this.input.focus()));
        group.append(b);
      }
      this.welcomeBox.append(group);
    }
    if (this.welcomeBox.parentNode !== this.box) this.box.insertBefore(this.welcomeBox, this.list);
  }

  /** Sets the fixed texts of the frame in this.t's language. */
  label() {
    const title = (this.welcome && this.welcome.assistantName) || this.t.title;
    this.box.setAttribute("aria-label", title);
    this.box.setAttribute("lang", this.t === TEXTS.pt ? "pt-BR" : "en");
    this.heading.textContent = title;
    this.menuButton.setAttribute("aria-label", this.t.menu);
    this.endButton.textContent = this.t.end;
    this.input.setAttribute("aria-label", this.t.placeholder);
    this.input.setAttribute("placeholder", this.t.placeholder);
    this.sendButton.textContent = this.t.send;
  }

  /** Follows the case's language unless the host page chose one (S-4). */
  useCase(view) {
    this.caseId = view.caseId;
    this.ended = false;
    // Issue 50: the tenant's welcome and accent come with the case (creation, restore).
    this.welcome = view.welcome || null;
    if (view.accent && !this.themeAccent) this.box.style.setProperty("--cs-accent", view.accent);
    if (!this.chosenLanguage) this.t = texts(view.language || "en");
    this.label();
  }

  /** Opens the person's case, or restores the open one with its history (W-4). A restored
   *  case that was closed, or is gone, gives way to a new one with a notice (S-3). */
  async start() {
    try {
      this.token = await this.client.getToken();
      this.client.token = this.token;
      const key = caseKey(this.apiUrl, this.token);
      const saved = key && this.storage ? this.storage.getItem(key) : null;
      let notice = null;
      if (saved) {
        let view = null;
        try {
          view = await this.client.summary(saved, true);
        } catch (e) {
          if (e.status !== 404) throw e;
        }
        if (view && view.status === "open") {
          this.useCase(view);
          const { messages, proposals } = await this.client.history(saved);
          this.show(messages, proposals);
          this.setBusy(false);
          this.schedule(this.pollMs);
          return;
        }
        notice = "previousEnded";
      }
      await this.open(notice);
    } catch (e) {
      // Issue 50: why, and Try again (after the `Retry-After` a 429 gives); Send stays
      // disabled meanwhile, never silently dead.
      this.fail(e, this.t.loadFailed, [this.t.retry, () => this.start()]);
    }
  }

  /** A new case for the person; `notice` (a text key) says why, if any. */
  async open(notice) {
    const body = this.chosenLanguage ? { language: this.chosenLanguage === "pt" ? "pt-BR" : "en" } : undefined;
    const created = await this.client.request("POST", "/api/cases", body);
    const key = caseKey(this.apiUrl, this.client.token);
    if (key && this.storage) this.storage.setItem(key, created.caseId);
    this.useCase(created);
    this.reset();
    if (notice) this.say(this.t[notice], null, "info");
    this.setBusy(false);
    this.schedule(this.pollMs);
  }

  /** Forgets what was rendered (a new case). */
  reset() {
    this.list.textContent = "";
    this.items.clear();
    this.proposals.clear();
    this.rendered = [];
    this.say("");
    this.renderWelcome();
  }

  submitTyped() {
    const content = this.input.value.trim();
    if (!content || this.busy || !this.caseId) return;
    // Issue 50: close to an answer word while a proposal waits: said before sending (the
    // rule, A-24, is unchanged: only the word alone answers). Sending again sends it.
    const near = this.answerable() ? nearAnswerWord(content, [this.t.confirmWord, this.t.cancelWord]) : null;
    if (near && this.hinted !== content) {
      this.hinted = content;
      this.say(this.t.nearWord(near), [this.t.sendAnyway, () => this.submitTyped()], "info");
      return;
    }
    this.hinted = null;
    // The box is cleared at once (issue 50); the text comes back if the send failed
    // before anything was stored and nothing new was typed meanwhile.
    this.input.value = "";
    this.send(content).then((ok) => {
      if (!ok && !this.input.value) this.input.value = content;
    });
  }

  /** Sends `content` replying to the last assistant message rendered here (W-3). The
   *  message shows at once, marked as sending, with the assistant's typing line. */
  async send(content) {
    if (!this.caseId || this.busy) return false;
    const body = outgoing(content, this.rendered);
    this.setBusy(true);
    this.say("");
    this.welcomeBox.remove();
    const pending = el("li", { class: "msg user text sending", "data-kind": "text" });
    pending.append(el("span", { class: "who" }, `${this.t.you}: `), el("span", { class: "body" }, content), el("span", { class: "state" }, this.t.sending));
    this.list.append(pending);
    this.list.scrollTop = this.list.scrollHeight;
    const action = content === this.t.confirmWord && Boolean(this.answerable());
    this.typing.textContent = action ? this.t.carryingOut : this.t.typing;
    try {
      const path = `/api/cases/${encodeURIComponent(this.caseId)}/messages`;
      const messages = this.streaming ? await this.sendStreamed(path, body, pending) : (await this.client.request("POST", path, body)).messages;
      pending.remove();
      this.show(messages);
      // A proposal was made, answered or settled: its card's state comes with the history
      // (the answer to a post leaves it out to keep the confirm path short).
      if (messages.some((m) => m.kind !== "text")) await this.syncStates();
      return true;
    } catch (e) {
      pending.remove();
      this.draft(null);
      if (e.cut) {
        // S-1: the stream broke; the stored messages are the truth. Read them now, and
        // soon again for what the turn stores after the break.
        await this.refresh();
        this.schedule(Math.min(this.pollMs, 1000));
        return true;
      }
      if (e.code === "STEP_UP_REQUIRED") {
        // F-3: nothing was stored and the proposal still waits; the card shows the way.
        this.say(this.t.stepUpRequired, null, "error");
        return false;
      }
      if (e.code === "CASE_CLOSED" || e.status === 404) {
        // Closed in another tab or by the platform: a new case; the text stays typed.
        await this.open("previousEnded").catch((err) => this.fail(err, this.t.loadFailed, [this.t.retry, () => this.start()]));
        return false;
      }
      // Never sent again on its own (W-5): the person decides, after checking.
      this.fail(e, this.t.sendFailed, [this.t.check, () => this.refresh()]);
      return false;
    } finally {
      this.typing.textContent = "";
      this.setBusy(false);
    }
  }

  /** S-1: the post as a stream: the model's text shows as it is written (a draft), each
   *  stored message replaces what stood for it. Returns every message stored. */
  async sendStreamed(path, body, pending) {
    const stored = [];
    let failure = null;
    await this.client.stream(`${path}/stream`, body, (event) => {
      if (event.type === "delta") {
        this.typing.textContent = "";
        this.draft(event.text);
      } else if (event.type === "message") {
        const m = event.message;
        if (m.role === "user") pending.remove();
        if (m.role === "assistant" && m.kind === "text") this.draft(null);
        stored.push(m);
        this.show([m]);
      } else if (event.type === "error") {
        failure = new ApiError(503, (event.error && event.error.code) || null, event.error && event.error.message);
      }
    });
    this.draft(null);
    if (failure) throw failure;
    return stored;
  }

  /** Appends `text` to the model's draft line (null: removes it). The draft is shown as
   *  text; the stored message that follows is rendered in its place. */
  draft(text) {
    if (text === null) {
      if (this.drafting) this.drafting.remove();
      this.drafting = null;
      return;
    }
    if (!this.drafting) {
      this.drafting = el("li", { class: "msg assistant text draft", "data-kind": "draft", "aria-hidden": "true" });
      this.drafting.append(el("span", { class: "body" }));
      this.list.append(this.drafting);
    }
    this.drafting.firstChild.textContent += text;
    this.list.scrollTop = this.list.scrollHeight;
  }

  /** F-3: opens the platform's confirmation page for the waiting passkey proposal in a new
   *  top-level tab (a passkey belongs to the platform's page, never to this frame). The
   *  tab is opened at once, while the click still counts as the person's, then sent to the
   *  link; where that is blocked, a link is shown instead. */
  async openStepUp() {
    if (!this.caseId) return;
    const tab = globalThis.open ? globalThis.open("about:blank", "_blank") : null;
    try {
      const { url } = await this.client.request("POST", `/api/cases/${encodeURIComponent(this.caseId)}/step-up`);
      if (tab) {
        tab.opener = null;
        tab.location.href = url;
        this.say(this.t.passkeyOpened);
      } else {
        this.say(this.t.passkeyOpened);
        this.status.append(" ", el("a", { href: url, target: "_blank", rel: "noopener", class: "passkey-link" }, this.t.passkeyLink));
      }
      this.schedule(this.pollMs);
    } catch (e) {
      if (tab) tab.close();
      this.fail(e, this.t.passkeyFailed, [this.t.retry, () => this.openStepUp()]);
    }
  }

  /** Reads the proposals' states (and anything new) after the last message rendered. */
  async syncStates() {
    const caseId = this.caseId;
    const last = this.rendered[this.rendered.length - 1];
    try {
      const { messages, proposals } = await this.client.history(caseId, last ? last.id : null);
      if (caseId === this.caseId) this.show(messages, proposals);
    } catch (_) {
      // The next poll or send brings them.
    }
  }

  /** The proposal this tab may answer, or null. */
  answerable() {
    const last = this.rendered[this.rendered.length - 1];
    return last && isAnswerable(this.rendered, last, this.proposals.get(last.id)) ? last : null;
  }

  /** Ends the conversation (S-3) and opens a new one. A proposal still waiting is
   *  cancelled with it; nothing is carried out. */
  async end() {
    if (!this.caseId || this.busy) return;
    this.setBusy(true);
    try {
      await this.client.request("POST", `/api/cases/${encodeURIComponent(this.caseId)}/close`);
      // Issue 50: the ended transcript stays readable, with a new start below it.
      this.schedule(null);
      this.caseId = null;
      this.ended = true;
      for (const [id, p] of this.proposals) {
        if (p.state === "pending_confirmation") this.proposals.set(id, { ...p, state: "cancelled" });
      }
      const note = el("li", { class: "ended", role: "status" });
      const again = el("button", { type: "button", class: "primary start-new" }, this.t.startNew);
      again.addEventListener("click", () => {
        this.setBusy(true);
        this.open(null)
          .catch((err) => this.fail(err, this.t.loadFailed, [this.t.retry, () => this.start()]))
          .finally(() => {
            this.setBusy(false);
            this.input.focus();
          });
      });
      note.append(el("p", {}, this.t.endedHere), again);
      this.list.append(note);
      this.list.scrollTop = this.list.scrollHeight;
      again.focus();
    } catch (e) {
      if (e.code === "ACTION_IN_PROGRESS") this.say(this.t.endBlocked);
      else this.fail(e, this.t.loadFailed, [this.t.retry, () => this.end()]);
    } finally {
      this.setBusy(false);
    }
  }

  /** Reads the history again (after an uncertain send). */
  async refresh() {
    try {
      this.say("");
      const { messages, proposals } = await this.client.history(this.caseId);
      this.show(messages, proposals);
    } catch (e) {
      this.fail(e, this.t.loadFailed, [this.t.retry, () => this.refresh()]);
    }
  }

  /** Schedules the next check of the case in `ms` (null: none; the tab is hidden). */
  schedule(ms) {
    clearTimeout(this.timer);
    this.timer = null;
    if (ms === null || !this.caseId) return;
    this.timer = setTimeout(() => this.poll(), ms);
  }

  /** S-2: one conditional read of the case; the messages only when something is new. */
  async poll() {
    if (typeof document !== "undefined" && document.hidden) return;
    if (this.busy) return this.schedule(this.pollMs);
    const caseId = this.caseId;
    try {
      const view = await this.client.summary(caseId);
      if (caseId !== this.caseId || this.busy) return this.schedule(this.pollMs);
      if (view.status !== "open") {
        await this.open("previousEnded");
        return;
      }
      const last = this.rendered[this.rendered.length - 1];
      if (view.lastMessageId && (!last || view.lastMessageId > last.id)) {
        const { messages, proposals } = await this.client.history(caseId, last ? last.id : null);
        if (caseId === this.caseId && !this.busy) this.show(messages, proposals);
      }
      this.failures = 0;
      this.tick();
      this.schedule(this.pollMs);
    } catch (e) {
      if (e.status === 404) {
        await this.open("previousEnded").catch(() => this.schedule(this.pollMs));
        return;
      }
      this.failures = Math.min(this.failures + 1, 5);
      this.schedule(Math.min(this.pollMs * 2 ** this.failures, POLL_MAX_MS));
    }
  }

  /** Shows a fixed text for `e`, with an action the person may take. */
  fail(e, text, action) {
    if (e && e.status === 401) return this.say(this.t.authFailed);
    if (e && e.status === 429) {
      // Issue 50: the wait the platform asked for, counted down, then Try again.
      if (e.retryAfter && action) return this.countdown(e.retryAfter, action);
      return this.say(this.t.rateLimited, action);
    }
    return this.say(text, action);
  }

  /** Says how long to wait, then offers `action` (issue 50). */
  countdown(seconds, action) {
    clearInterval(this.waiting);
    let left = seconds;
    const b = this.say(this.t.retryIn(left), action);
    b.disabled = true;
    this.waiting = setInterval(() => {
      left -= 1;
      if (!b.isConnected) return clearInterval(this.waiting);
      if (left > 0) {
        this.status.firstChild.textContent = this.t.retryIn(left);
        return;
      }
      clearInterval(this.waiting);
      this.status.firstChild.textContent = this.t.rateLimited;
      b.disabled = false;
    }, 1000);
  }

  /** Shows `text` (errors as an alert, `info` as a status) with an optional action
   *  button, which it returns. */
  say(text, action, kind) {
    if (!action) clearInterval(this.waiting);
    this.status.textContent = "";
    this.status.append(document.createTextNode(text));
    this.status.className = kind ? `status ${kind}` : "status";
    this.status.setAttribute("role", text && kind !== "info" ? "alert" : "status");
    if (action) {
      const b = el("button", { type: "button", class: "retry" }, action[0]);
      b.addEventListener("click", () => action[1]());
      this.status.append(" ", b);
      return b;
    }
    return null;
  }

  setBusy(busy) {
    this.busy = busy;
    // Issue 50: no conversation, no Send (a failed open shows why and Try again).
    this.sendButton.disabled = busy || !this.caseId;
    this.endButton.disabled = busy || !this.caseId;
    this.menuButton.disabled = !this.caseId;
    this.tick();
  }

  /** Adds `messages` (merged by id) and the proposals' states; renders what is new and
   *  updates the proposal cards in place (no message is rendered twice: a screen reader
   *  reads only what was added). */
  show(messages, proposals) {
    for (const p of proposals || []) this.proposals.set(p.messageId, p);
    this.rendered = mergeMessages(this.rendered, messages || []);
    let cursor = null;
    for (const m of this.rendered) {
      let li = this.items.get(m.id);
      if (!li) {
        li = this.item(m);
        this.items.set(m.id, li);
        this.list.insertBefore(li, cursor ? cursor.nextSibling : this.list.firstChild);
      }
      cursor = li;
    }
    this.tick();
    this.renderWelcome();
    this.list.scrollTop = this.list.scrollHeight;
  }

  /** Brings every proposal card and result up to date: state, time left, buttons. */
  tick() {
    const now = Date.now();
    let lastState = null;
    for (const m of this.rendered) {
      const li = this.items.get(m.id);
      if (!li) continue;
      if (m.kind === "proposal") {
        const p = this.proposals.get(m.id);
        const state = proposalState(p, now);
        lastState = state;
        const answerable = isAnswerable(this.rendered, m, p, now);
        // N-6: a proposal that replaced another says so on its card (from the API's stored
        // field), and its buttons wait 5 s after it first appeared here: the server
        // refuses — and cancels — a confirmation sooner than that after it was first
        // served, so a click landing on a card that just slid under the pointer does
        // nothing at all.
        let dwelling = false;
        if (p && p.replacedEarlier) {
          if (!li.querySelector(".replaced")) {
            li.insertBefore(el("span", { class: "replaced", role: "note" }, this.t.replacedEarlier), li.querySelector(".body"));
          }
          if (!li.dataset.shownAt) {
            li.dataset.shownAt = String(now);
            setTimeout(() => this.tick(), REPLACED_DWELL_MS + 50);
          }
          dwelling = now - Number(li.dataset.shownAt) < REPLACED_DWELL_MS;
        }
        // Issue 50: a proposal an app the person connected prepared (the API's stored
        // `preparedOutside`) says so on its card.
        if (p && p.preparedOutside && !li.querySelector(".attribution")) {
          li.insertBefore(el("span", { class: "attribution", role: "note" }, this.t.preparedOutside), li.querySelector(".body"));
        }
        const line = li.querySelector(".state");
        if (state === "pending_confirmation" && p) {
          line.textContent = this.t.expiresIn(Math.ceil((Date.parse(p.expiresAt) - now) / 60000));
        } else {
          line.textContent = this.t.states[state] || state;
        }
        li.classList.toggle("settled", state !== "pending_confirmation");
        li.dataset.state = state;
        // F-3: a passkey operation is confirmed on the platform's page, never by a word:
        // the card says so before the person types anything.
        const passkey = Boolean(p && p.needsPasskey);
        const note = li.querySelector(".passkey-note");
        if (passkey && !note) {
          li.insertBefore(el("span", { class: "passkey-note", role: "note" }, this.t.needsPasskey), li.querySelector(".state"));
        }
        for (const b of li.querySelectorAll(".actions button.answer")) {
          b.dataset.stale = answerable ? "0" : "1";
          b.disabled = !answerable || this.busy || dwelling;
          if (b.dataset.word === this.t.confirmWord) b.hidden = passkey;
        }
        const step = li.querySelector(".actions button.passkey");
        if (step) {
          step.hidden = !passkey;
          step.disabled = !passkey || !answerable || this.busy || dwelling;
        }
        const check = li.querySelector(".actions button.check");
        if (check) {
          check.hidden = !(state === "unknown" || state === "executing");
          check.disabled = check.hidden || this.busy;
        }
      } else if (m.kind === "result" && lastState) {
        li.classList.toggle("good", lastState === "completed");
        li.classList.toggle("bad", ["failed", "conflict", "expired"].includes(lastState));
      }
    }
  }

  item(m) {
    const li = el("li", { class: `msg ${m.role} ${m.kind}`, "data-id": m.id, "data-kind": m.kind });
    li.append(el("span", { class: "who" }, `${m.role === "user" ? this.t.you : this.t.assistant}: `));
    if (m.kind === "proposal") li.append(el("strong", {}, `${this.t.proposal}: `));
    if (m.role === "assistant" && m.kind === "text") {
      // Model prose: the safe markdown subset, built as nodes (never HTML).
      li.classList.add("md");
      const body = el("div", { class: "body" });
      body.append(...markdownNodes(parseMarkdown(m.content)));
      li.append(body);
    } else {
      // A proposal's summary, the person's words and the platform's texts: literal.
      li.append(el("span", { class: "body" }, m.content));
    }
    if (m.kind === "proposal") {
      if (m.instructions) li.append(el("span", { class: "instructions" }, m.instructions));
      li.append(el("span", { class: "state" }));
      const actions = el("div", { class: "actions", role: "group", "aria-label": this.t.proposal });
      for (const [label, word, cls] of [
        [this.t.confirm, this.t.confirmWord, "primary answer"],
        [this.t.cancel, this.t.cancelWord, "answer"],
      ]) {
        const b = el("button", { type: "button", class: cls, "data-word": word }, label);
        // The literal word, as a new message from the person replying to this proposal
        // (W-5): the proposal is the last assistant message rendered, so `outgoing`
        // replies to it. Focus stays in the widget.
        b.addEventListener("click", () => this.send(word).then(() => this.input.focus()));
        actions.append(b);
      }
      // F-3: a passkey operation: the platform's confirmation page, in a new tab.
      const step = el("button", { type: "button", class: "primary passkey" }, this.t.confirmPasskey);
      step.hidden = true;
      step.disabled = true;
      step.addEventListener("click", () => this.openStepUp());
      actions.prepend(step);
      // S-3: an uncertain outcome is asked again (a status query; never an execution).
      const check = el("button", { type: "button", class: "check" }, this.t.checkAgain);
      check.hidden = true;
      check.disabled = true;
      check.addEventListener("click", () => this.send(this.t.checkWord).then(() => this.input.focus()));
      actions.append(check);
      li.append(actions);
    }
    // Issue 50: when it was written, in the person's time.
    if (m.createdAt) li.append(el("time", { class: "at", datetime: m.createdAt }, clockTime(m.createdAt, this.t === TEXTS.pt ? "pt" : "en")));
    return li;
  }
}

function safeLocalStorage() {
  try {
    return globalThis.localStorage || null;
  } catch (_) {
    return null;
  }
}

/** Mounts the widget in `host` (an element or a CSS selector) and starts it. */
export function mount(host, options) {
  const node = typeof host === "string" ? document.querySelector(host) : host;
  if (!node) throw new TypeError("Countersign widget: no element to mount in");
  const widget = new Widget(node, options);
  widget.ready = widget.start();
  return widget;
}
