// The demo tenant site's own script (no inline script: the page's CSP forbids it).
// Its "backend" is /token on this site, which mints a widget JWT for a demo person; the
// platform's API is another origin (named in the page's countersign-api meta tag). Query parameters (for the browser tests): `user` (default u_alice), `lang` (the person's language; absent: the tenant's), `poll` (ms between live checks), `stream=0` (no streaming), `cut=1` (the first stream breaks),
// and `expired=1` (the first token handed out is already expired, so the widget must ask
// for a new one).
(function () {
  const params = new URLSearchParams(location.search);
  const user = params.get("user") || "u_alice";
  let expiredFirst = params.get("expired") === "1";
  const demo = { tokens: 0, ready: false, lastReply: undefined, widget: null };
  window.demo = demo;
  async function getToken() {
    demo.tokens += 1;
    const q = new URLSearchParams({ user });
    if (expiredFirst) {
      q.set("expired", "1");
      expiredFirst = false;
    }
    const res = await fetch("/token?" + q, { cache: "no-store" });
    if (!res.ok) throw new Error("the demo backend refused a token");
    return res.text();
  }
  // `cut=1`: the next streamed answer breaks after its first few pieces, as a dropped
  // connection would (the browser tests check the widget recovers what was stored).
  let cutNext = params.get("cut") === "1";
  demo.cut = () => { cutNext = true; };
  function cutAfterAFewChunks(res) {
    const reader = res.body.getReader();
    let chunks = 0;
    const body = new ReadableStream({
      async pull(controller) {
        const { value, done } = await reader.read();
        if (done) return controller.close();
        controller.enqueue(value);
        if (++chunks >= 3) {
          reader.cancel().catch(() => {});
          controller.error(new TypeError("the demo cut the stream"));
        }
      },
    });
    return new Response(body, { status: res.status, headers: res.headers });
  }
  // Records what the widget sends (tests read `replyToMessageId`), then sends it.
  async function recordingFetch(url, init) {
    if (init && init.method === "POST" && init.body) {
      try {
        demo.lastReply = JSON.parse(init.body).replyToMessageId ?? null;
      } catch (_) {}
    }
    const res = await fetch(url, init);
    if (cutNext && String(url).endsWith("/stream") && res.ok && res.body) {
      cutNext = false;
      return cutAfterAFewChunks(res);
    }
    return res;
  }
  demo.widget = CountersignWidget.mount("#chat", {
    apiUrl: document.querySelector('meta[name="countersign-api"]').content,
    // S-4: absent, the widget follows the tenant's language; the page may choose.
    language: params.get("lang") || undefined,
    getToken,
    fetch: recordingFetch,
    // `theme=tenant`: no accent of the page's own, so the tenant's applies (issue 50).
    theme: params.get("theme") === "tenant" ? undefined : { accent: "#b4442b" },
    pollMs: Number(params.get("poll")) || undefined,
    // `stream=0`: the buffered post (the streaming tests measure both).
    stream: params.get("stream") !== "0",
  });
  demo.widget.ready.then(() => {
    demo.ready = true;
  });
})();
