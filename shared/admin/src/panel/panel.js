// The panel's only script: copy buttons (`data-copy` names the element whose text is
// copied), and forms that remember their last inputs in this browser (`data-remember`
// names the storage key; the certification's test people and sample arguments, never a
// secret or a consent). Loaded from the panel's own origin; no inline script (CSP).
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  for (const button of document.querySelectorAll("button[data-copy]")) {
    button.addEventListener("click", async () => {
      const source = document.getElementById(button.dataset.copy);
      if (!source) return;
      try {
        await navigator.clipboard.writeText(source.textContent);
        button.textContent = "Copied";
      } catch {
        // No clipboard permission: select the text so the person can copy it.
        const range = document.createRange();
        range.selectNodeContents(source);
        const selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
        button.textContent = "Selected: press Ctrl+C";
      }
    });
  }
  for (const form of document.querySelectorAll("form[data-remember]")) {
    const key = form.dataset.remember;
    const fields = [...form.querySelectorAll("input[type=text], textarea")].filter((f) => f.name);
    let saved = null;
    try {
      saved = JSON.parse(localStorage.getItem(key) || "null");
    } catch {
      saved = null;
    }
    if (saved) for (const f of fields) if (typeof saved[f.name] === "string") f.value = saved[f.name];
    form.addEventListener("submit", () => {
      const values = {};
      for (const f of fields) values[f.name] = f.value;
      try {
        localStorage.setItem(key, JSON.stringify(values));
      } catch {
        // Storage refused (private mode): the form still submits.
      }
    });
  }
});
