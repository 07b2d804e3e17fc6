// @ts-check
// The session list: newest first (by last change), searched by title, id prefix or message
// text (a message match shows its snippet), loaded page by page by cursor as the list
// scrolls, and kept current by asking every few seconds for the sessions changed since the
// newest change seen (sessions created or answered in another tab or device appear, a turn
// started elsewhere is reported to the chat view); and the new-session dialog.

import { api } from "./api.js";
import { formatTime, h, modal, notify } from "./dom.js";
import { t } from "./i18n.js";
import { settings } from "./settings.js";

const PAGE_SIZE = 20;
const SEARCH_DELAY_MS = 250;
const POLL_MS = 4000;

let modelsCache = null;

/** The server's models (GET /chat/models), fetched once per page load. */
export async function models() {
  modelsCache ??= api("GET", "/chat/models").catch((error) => {
    modelsCache = null;
    throw error;
  });
  return modelsCache;
}

export class SessionList {
  /** @param {{onChange: (session: any) => void}} hooks */
  constructor({ onChange }) {
    this.onChange = onChange;
    /** @type {string | null} newest updatedAt seen */
    this.since = null;
    /** @type {ReturnType<typeof setInterval> | undefined} */
    this.poller = undefined;
    /** @type {string | null} */
    this.activeId = null;
    this.cursor = null;
    this.loading = false;
    this.generation = 0;
    this.searchTimer = null;
    this.search = h("input", {
      type: "search",
      class: "search",
      "aria-label": t("searchSessions"),
      placeholder: t("searchPlaceholder"),
      oninput: () => {
        clearTimeout(this.searchTimer);
        this.searchTimer = setTimeout(() => this.reload(), SEARCH_DELAY_MS);
      },
    });
    this.list = h("ul", { class: "session-list", "aria-label": t("sessions") });
    this.sentinel = h("li", { class: "sentinel", "aria-hidden": "true" });
    this.status = h("p", { class: "list-status muted", role: "status" });
    this.scroller = h("div", { class: "session-scroll" }, this.list, this.status);
    this.el = h(
      "aside",
      { class: "sidebar", id: "session-drawer", "aria-label": t("sessions") },
      h("button", { type: "button", class: "primary wide", onclick: () => newSession() }, t("newSession")),
      this.search,
      this.scroller,
    );
    this.observer = new IntersectionObserver(
      (entries) => {
        if (entries.some((e) => e.isIntersecting)) this.more();
      },
      { root: this.scroller, rootMargin: "120px" },
    );
  }

  start() {
    this.poller = setInterval(() => this.poll(), POLL_MS);
  }

  stop() {
    clearInterval(this.poller);
  }

  /** The sessions changed since the newest change seen, shown in place; the chat view hears
   * of each. Quiet on failure: the connection banner tells when the server is away. */
  async poll() {
    if (this.search.value.trim() || document.hidden) return;
    const query = new URLSearchParams({ limit: String(PAGE_SIZE) });
    if (this.since) query.set("since", this.since);
    let page;
    try {
      page = await api("GET", `/chat/sessions?${query}`);
    } catch {
      return;
    }
    if (this.search.value.trim()) return;
    for (const session of page.items) {
      this.upsert(session);
      this.onChange(session);
    }
  }

  /** @param {string} updatedAt */
  saw(updatedAt) {
    if (!this.since || updatedAt > this.since) this.since = updatedAt;
  }

  focusSearch() {
    this.search.focus();
    this.search.select();
  }

  setActive(id) {
    this.activeId = id;
    for (const link of this.list.querySelectorAll("a")) {
      if (link.dataset.id === id) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
  }

  async reload() {
    this.generation++;
    this.cursor = null;
    this.list.replaceChildren();
    this.loading = false;
    await this.page();
  }

  more() {
    if (this.cursor && !this.loading) this.page();
  }

  async page() {
    const generation = this.generation;
    this.loading = true;
    this.status.textContent = t("loading");
    const query = new URLSearchParams({ limit: String(PAGE_SIZE) });
    if (this.cursor) query.set("cursor", this.cursor);
    const q = this.search.value.trim();
    if (q) query.set("q", q);
    let page;
    try {
      // a search looks in titles and message text; each hit brings its matching snippet
      page = q ? await api("GET", `/chat/sessions/search?${query}`) : await api("GET", `/chat/sessions?${query}`);
      if (q) page = { ...page, items: page.items.map((/** @type {any} */ hit) => ({ ...hit.session, match: hit.match })) };
    } catch (error) {
      if (generation === this.generation) {
        this.loading = false;
        this.status.textContent = error.message;
      }
      return;
    }
    if (generation !== this.generation) return;
    this.observer.unobserve(this.sentinel); // observed anew below: a fresh first report
    this.sentinel.remove();
    for (const session of page.items) {
      this.link(session.id)?.parentElement?.remove(); // already shown by upsert
      this.list.append(this.item(session));
      if (!q) this.saw(session.updatedAt);
    }
    this.cursor = page.nextCursor;
    this.loading = false;
    if (this.cursor) {
      this.list.append(this.sentinel);
      this.observer.observe(this.sentinel);
    }
    const empty = this.list.childElementCount === 0;
    this.status.textContent = empty ? (q ? t("noMatches") : t("noSessions")) : "";
  }

  /** @param {string} id @returns {HTMLAnchorElement | null} */
  link(id) {
    return this.list.querySelector(`a[data-id="${CSS.escape(id)}"]`);
  }

  /** @param {any} session */
  item(session) {
    const parts = session.match?.parts || null;
    const snippet = parts
      ? h("span", { class: "session-snippet" }, parts.map((/** @type {any} */ p) => (p.match ? h("mark", {}, p.text) : p.text)))
      : null;
    const link = h(
      "a",
      { href: `#/chat/${session.id}`, title: session.title, dataset: { id: session.id, updated: session.updatedAt } },
      h("span", { class: "session-title" }, session.title),
      snippet,
      h(
        "span",
        { class: "session-meta muted" },
        session.running ? h("span", { class: "dot", title: t("running"), role: "img", "aria-label": t("running") }) : null,
        session.awaitingApproval ? h("span", { class: "approval-flag", title: t("awaitingApproval") }, t("awaitingApproval")) : null,
        formatTime(session.updatedAt),
      ),
    );
    if (session.id === this.activeId) link.setAttribute("aria-current", "page");
    return h("li", {}, link);
  }

  /** Shows a session's new state in its place by last change, newest first. One older than
   * every loaded session while more pages wait is left for its page (unless it is open). */
  upsert(session) {
    this.link(session.id)?.parentElement?.remove();
    const item = this.item(session);
    const before = [...this.list.querySelectorAll("a[data-id]")].find(
      (a) => a instanceof HTMLElement && (a.dataset.updated || "") < session.updatedAt,
    );
    if (before) before.parentElement?.before(item);
    else if (!this.cursor || session.id === this.activeId) {
      if (this.sentinel.isConnected) this.sentinel.before(item);
      else this.list.append(item);
    }
    if (!this.search.value.trim()) this.saw(session.updatedAt);
    this.status.textContent = "";
  }

  /** @param {string} id */
  remove(id) {
    this.link(id)?.parentElement?.remove();
    if (this.list.querySelector("a[data-id]") === null) this.status.textContent = t("noSessions");
  }
}

/** Asks for a title and a model, creates the session and opens it. */
export async function newSession() {
  let available;
  try {
    available = await models();
  } catch (error) {
    notify(error.message, "error");
    return;
  }
  const title = h("input", { type: "text", maxlength: settings().limits.titleChars, placeholder: t("untitled") });
  const model = h(
    "select",
    {},
    available.map((m) => h(
      "option",
      { value: m.id },
      t("modelOption", { name: m.displayName, window: m.contextWindow.toLocaleString(document.documentElement.lang) }),
    )),
  );
  const body = h(
    "div",
    { class: "form" },
    h("label", {}, t("title"), title),
    h("label", {}, t("model"), model),
  );
  const ok = await modal(t("newSession"), body, [
    { label: t("cancel"), value: false },
    { label: t("create"), value: true, class: "primary" },
  ]);
  if (!ok) return;
  try {
    const session = await api("POST", "/chat/sessions", {
      title: title.value.trim() || null,
      modelId: model.value || null,
    });
    location.hash = `#/chat/${session.id}`;
  } catch (error) {
    notify(error.message, "error");
  }
}
