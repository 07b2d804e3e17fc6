// @ts-check
// Building the page with DOM calls only: text always goes in through textContent or text
// nodes, so nothing a model, a tool or a user wrote is ever parsed as HTML.

import { t } from "./i18n.js";

const PROPERTIES = new Set(["value", "checked", "disabled", "hidden", "open", "selected", "multiple"]);

/** h("button", {class: "x", onclick: fn, "aria-label": "Stop"}, "text", child, [more]) */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (PROPERTIES.has(key)) el[key] = value;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

export function append(parent, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    parent.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return parent;
}

export function clear(el) {
  el.replaceChildren();
  return el;
}

const INFO_MS = 4000;
const ERROR_MS = 8000;
const COPIED_MS = 2000;

/** Announcements for screen readers and eyes, at the top of the page (never over the composer
 * and its Send/Stop button): they fade on their own, errors after longer, unless the pointer
 * or focus is on them; × dismisses at once. */
export function notify(message, kind = "info") {
  const region = document.getElementById("toasts");
  const toast = h(
    "div",
    { class: `toast ${kind}`, role: kind === "error" ? "alert" : "status" },
    h("span", {}, message),
    h("button", { class: "ghost", "aria-label": t("dismiss"), onclick: () => toast.remove() }, "×"),
  );
  region.append(toast);
  const fade = () => {
    if (toast.matches(":hover, :focus-within")) setTimeout(fade, 1000);
    else toast.remove();
  };
  setTimeout(fade, kind === "error" ? ERROR_MS : INFO_MS);
}

/** Copies `text`; the Clipboard API needs a secure context (HTTPS or localhost), so a team
 * host on plain HTTP falls back to a hidden text area and the copy command.
 * @param {string} text @returns {Promise<boolean>} whether it was copied */
export async function copyText(text) {
  if (window.isSecureContext && navigator.clipboard?.writeText) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch {
      // refused (no permission, page not focused): try the fallback
    }
  }
  const area = h("textarea", { class: "copy-buffer", readonly: true, "aria-hidden": "true" });
  area.value = text;
  document.body.append(area);
  const focused = document.activeElement;
  area.select();
  let copied = false;
  try {
    copied = document.execCommand("copy");
  } catch {
    copied = false;
  }
  area.remove();
  if (focused instanceof HTMLElement) focused.focus();
  return copied;
}

/** A button that copies what `text()` returns and says "Copied" (or the failure) for two
 * seconds, then reads as before. */
export function copyButton(label, ariaLabel, text, extra = {}) {
  const button = h("button", { type: "button", class: "ghost small", "aria-label": ariaLabel, ...extra }, label);
  let timer;
  button.addEventListener("click", async () => {
    const copied = await copyText(text());
    clearTimeout(timer);
    button.textContent = copied ? t("copied") : label;
    if (!copied) notify(t("copyFailed"), "error");
    timer = setTimeout(() => {
      button.textContent = label;
    }, COPIED_MS);
  });
  return button;
}

/** A modal dialog; resolves with the value of the button pressed (null on Esc). The last
 * button is the form's submit button, so Enter in a field presses it. */
export function modal(title, body, buttons) {
  return new Promise((resolve) => {
    const form = h("form", { method: "dialog" });
    const dialog = h("dialog", { "aria-label": title, class: "modal" }, form);
    const close = (value) => {
      dialog.close();
      dialog.remove();
      resolve(value);
    };
    dialog.addEventListener("cancel", (event) => {
      event.preventDefault();
      close(null);
    });
    const last = buttons.length - 1;
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      close(buttons[last].value);
    });
    append(form, [
      h("h2", {}, title),
      body,
      h(
        "div",
        { class: "actions" },
        buttons.map((b, i) =>
          i === last
            ? h("button", { class: b.class || "", type: "submit" }, b.label)
            : h("button", { class: b.class || "", type: "button", onclick: () => close(b.value) }, b.label),
        ),
      ),
    ]);
    document.body.append(dialog);
    dialog.showModal();
  });
}

export async function confirmAction(title, message, action, cancel = t("cancel")) {
  const body = h("p", {}, message);
  const answer = await modal(title, body, [
    { label: cancel, value: false },
    { label: action, value: true, class: "danger" },
  ]);
  return answer === true;
}

export function formatBytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** A date and time in the page's language; `long` with seconds. */
export function formatTime(iso, long = false) {
  return new Date(iso).toLocaleString(document.documentElement.lang || undefined, {
    dateStyle: long ? "medium" : "short",
    timeStyle: long ? "medium" : "short",
  });
}
