// Countersign chat widget (W-1 … W-6). Dependency-free; one source for the ES module and
// the classic script (widget/build.mjs). No inline script, no eval, no HTML from data:
// every text the platform or the model wrote is set with textContent.
//
// The widget's key duty (seed 001, A-22): every message it sends carries
// `replyToMessageId` = the id of the last assistant message actually rendered in this
// tab. That id lives in this tab's memory only; after a reload it is the last assistant
// message of the history this tab has rendered again. A confirmation counts only when
// it replies to the proposal the person saw.

export const VERSION = "1.0.0";

const TEXTS = {
  en: {
    title: "Support",
    placeholder: "Write a message",
    send: "Send",
    confirm: "Confirm",
    cancel: "Cancel",
    confirmWord: "confirm",
    cancelWord: "cancel",
    sending: "Sending…",
    you: "You",
    assistant: "Assistant",
    authFailed: "Your session with the support chat has ended. Reload the page to continue.",
    sendFailed: "The message could not be sent. It may or may not have arrived.",
    check: "Check what happened",
    loadFailed: "The conversation could not be loaded.",
    retry: "Try again",
    rateLimited: "Too many messages right now. Please wait a moment and try again.",
    proposal: "Proposal",
  },
  pt: {
    title: "Suporte",
    placeholder: "Escreva uma mensagem",
    send: "Enviar",
    confirm: "Confirmar",
    cancel: "Cancelar",
    confirmWord: "confirmar",
    cancelWord: "cancelar",
    sending: "Enviando…",
    you: "Você",
    assistant: "Assistente",
    authFailed: "Sua sessão no chat de suporte terminou. Recarregue a página para continuar.",
    sendFailed: "A mensagem não pôde ser enviada. Ela pode ou não ter chegado.",
    check: "Verificar o que aconteceu",
    loadFailed: "Não foi possível carregar a conversa.",
    retry: "Tentar novamente",
    rateLimited: "Muitas mensagens agora. Aguarde um momento e tente novamente.",
    proposal: "Proposta",
  },
};

/** The fixed texts of `language` (`en` when unknown). */
export function texts(language) {
  return TEXTS[language] || TEXTS.en;
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

/** Whether `message` is a proposal the person can still answer from this tab: the last
 *  assistant message rendered, with nothing from the person after it. */
export function isAnswerable(rendered, message) {
  if (message.kind !== "proposal") return false;
  const last = rendered[rendered.length - 1];
  return Boolean(last) && last.id === message.id;
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
  constructor(status, code, message) {
    super(message || code || `HTTP ${status}`);
    this.status = status;
    this.code = code;
  }
}

/** Calls the widget API with a fresh token; on 401 asks `getToken` for a new one once
 *  (W-2). A request refused with 401 did nothing, so sending it again is safe. */
export class Client {
  constructor(apiUrl, getToken, fetchImpl) {
    this.apiUrl = String(apiUrl).replace(/\/+$/, "");
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
      throw new ApiError(res.status, e.code || null, e.message || null);
    }
    return data;
  }

  send(method, path, body) {
    const headers = { Authorization: `Bearer ${this.token}` };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    return this.fetch(this.apiUrl + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "omit",
      cache: "no-store",
    });
  }

  async history(caseId) {
    let all = [];
    let after = null;
    for (;;) {
      const q = after ? `?limit=500&after=${encodeURIComponent(after)}` : "?limit=500";
      const page = await this.request("GET", `/api/cases/${encodeURIComponent(caseId)}/messages${q}`);
      all = mergeMessages(all, page.messages);
      if (page.messages.length < 500) return all;
      after = page.messages[page.messages.length - 1].id;
    }
  }
}

// ---------------------------------------------------------------------------------------
// The view.

const STYLE = `
:host { all: initial; display: block; font: 14px/1.45 system-ui, sans-serif; color: #1d2430; }
.cs { display: flex; flex-direction: column; height: 100%; min-height: 320px; border: 1px solid #c9d1dc; border-radius: 10px; background: #fff; overflow: hidden; }
.cs h2 { margin: 0; padding: 10px 14px; font-size: 15px; background: var(--cs-accent, #2357c6); color: #fff; }
.cs ol { list-style: none; margin: 0; padding: 12px; flex: 1; overflow-y: auto; }
.cs li { margin: 0 0 10px; padding: 8px 10px; border-radius: 8px; white-space: pre-wrap; overflow-wrap: anywhere; max-width: 85%; }
.cs li.user { margin-left: auto; background: #e8effd; }
.cs li.assistant { background: #f2f4f7; }
.cs li.proposal { background: #fff8e5; border: 1px solid #e8c65a; max-width: 100%; }
.cs li.result, .cs li.notice { background: #eef7ee; }
.cs .who { position: absolute; left: -9999px; }
.cs .instructions { display: block; margin-top: 6px; color: #4a5568; }
.cs .actions { display: flex; gap: 8px; margin-top: 8px; }
.cs button { font: inherit; padding: 6px 14px; border-radius: 6px; border: 1px solid #2357c6; background: #fff; color: #2357c6; cursor: pointer; }
.cs button.primary { background: var(--cs-accent, #2357c6); border-color: var(--cs-accent, #2357c6); color: #fff; }
.cs button:focus-visible, .cs textarea:focus-visible { outline: 3px solid #f0b429; outline-offset: 1px; }
.cs button:disabled { opacity: .5; cursor: default; }
.cs form { display: flex; gap: 8px; padding: 10px; border-top: 1px solid #e2e8f0; }
.cs textarea { flex: 1; font: inherit; resize: none; padding: 6px 8px; border: 1px solid #c9d1dc; border-radius: 6px; }
.cs .status { padding: 0 12px; min-height: 1.4em; color: #9b2c2c; }
`;

function el(tag, attrs, text) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

/** One mounted widget. */
export class Widget {
  constructor(host, options) {
    if (!options || !options.apiUrl || typeof options.getToken !== "function") {
      throw new TypeError("Countersign widget: apiUrl and getToken are required");
    }
    this.t = texts(options.language);
    this.client = new Client(options.apiUrl, options.getToken, options.fetch);
    this.apiUrl = this.client.apiUrl;
    this.storage = options.storage || safeLocalStorage();
    this.rendered = [];
    this.caseId = null;
    this.busy = false;
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
    const box = el("section", { class: "cs", "aria-label": this.t.title });
    if (theme.accent) box.style.setProperty("--cs-accent", theme.accent);
    box.append(el("h2", {}, this.t.title));
    this.list = el("ol", { role: "log", "aria-live": "polite", "aria-relevant": "additions", tabindex: "0" });
    this.status = el("div", { class: "status", role: "status", "aria-live": "assertive" });
    this.form = el("form");
    this.input = el("textarea", { rows: "2", "aria-label": this.t.placeholder, placeholder: this.t.placeholder, maxlength: "4000" });
    this.sendButton = el("button", { type: "submit", class: "primary" }, this.t.send);
    this.form.append(this.input, this.sendButton);
    box.append(this.list, this.status, this.form);
    if (style) this.root.append(style);
    this.root.append(box);
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
  }

  /** Opens the person's case, or restores the open one with its history (W-4). */
  async start() {
    try {
      this.token = await this.client.getToken();
      this.client.token = this.token;
      const key = caseKey(this.apiUrl, this.token);
      const saved = key && this.storage ? this.storage.getItem(key) : null;
      if (saved) {
        try {
          this.caseId = saved;
          this.render(await this.client.history(saved));
          return;
        } catch (e) {
          if (e.status === 401) throw e;
          // Gone or closed: a new case below.
        }
      }
      const created = await this.client.request("POST", "/api/cases");
      this.caseId = created.caseId;
      if (key && this.storage) this.storage.setItem(key, this.caseId);
      this.render([]);
    } catch (e) {
      this.fail(e, this.t.loadFailed, [this.t.retry, () => this.start()]);
    }
  }

  submitTyped() {
    const content = this.input.value.trim();
    if (!content || this.busy) return;
    this.send(content).then((ok) => {
      if (ok) this.input.value = "";
    });
  }

  /** Sends `content` replying to the last assistant message rendered here (W-3). */
  async send(content) {
    if (!this.caseId || this.busy) return false;
    this.setBusy(true);
    this.say("");
    try {
      const body = outgoing(content, this.rendered);
      const res = await this.client.request("POST", `/api/cases/${encodeURIComponent(this.caseId)}/messages`, body);
      this.render(mergeMessages(this.rendered, res.messages));
      return true;
    } catch (e) {
      // Never sent again on its own (W-5): the person decides, after checking.
      this.fail(e, this.t.sendFailed, [this.t.check, () => this.refresh()]);
      return false;
    } finally {
      this.setBusy(false);
    }
  }

  /** Reads the history again (after an uncertain send). */
  async refresh() {
    try {
      this.say("");
      this.render(await this.client.history(this.caseId));
    } catch (e) {
      this.fail(e, this.t.loadFailed, [this.t.retry, () => this.refresh()]);
    }
  }

  /** Shows a fixed text for `e`, with an action the person may take. */
  fail(e, text, action) {
    if (e && e.status === 401) return this.say(this.t.authFailed);
    if (e && e.status === 429) return this.say(this.t.rateLimited);
    return this.say(text, action);
  }

  say(text, action) {
    this.status.textContent = text;
    if (action) {
      const b = el("button", { type: "button" }, action[0]);
      b.addEventListener("click", () => action[1]());
      this.status.append(" ", b);
    }
  }

  setBusy(busy) {
    this.busy = busy;
    this.sendButton.disabled = busy;
    for (const b of this.list.querySelectorAll(".actions button")) b.disabled = busy || b.dataset.stale === "1";
  }

  /** Renders `messages` (the whole conversation known to this tab), as text only. */
  render(messages) {
    this.list.textContent = "";
    for (const m of messages) this.list.append(this.item(m, messages));
    this.rendered = messages;
    this.list.scrollTop = this.list.scrollHeight;
  }

  item(m, all) {
    const li = el("li", { class: `${m.role} ${m.kind}`, "data-id": m.id, "data-kind": m.kind });
    li.append(el("span", { class: "who" }, `${m.role === "user" ? this.t.you : this.t.assistant}: `));
    if (m.kind === "proposal") li.append(el("strong", {}, `${this.t.proposal}: `));
    li.append(document.createTextNode(m.content));
    if (m.kind === "proposal") {
      if (m.instructions) li.append(el("span", { class: "instructions" }, m.instructions));
      const answerable = isAnswerable(all, m);
      const actions = el("div", { class: "actions", role: "group", "aria-label": this.t.proposal });
      for (const [label, word, cls] of [
        [this.t.confirm, this.t.confirmWord, "primary"],
        [this.t.cancel, this.t.cancelWord, ""],
      ]) {
        const b = el("button", { type: "button", class: cls, "data-word": word }, label);
        b.dataset.stale = answerable ? "0" : "1";
        b.disabled = !answerable || this.busy;
        // The literal word, as a new message from the person replying to this proposal
        // (W-5): the proposal is the last assistant message rendered, so `outgoing`
        // replies to it.
        b.addEventListener("click", () => this.send(word));
        actions.append(b);
      }
      li.append(actions);
    }
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
