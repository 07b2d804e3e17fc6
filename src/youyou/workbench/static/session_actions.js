// @ts-check
// The open session's menu: rename, export as Markdown or JSON (a download for the
// postmortem) and delete after a confirmation. Its state (a session open, a turn running) is
// given by the chat view's render.

import { api, request } from "./api.js";
import { confirmAction, h, modal, notify } from "./dom.js";
import { t } from "./i18n.js";
import { settings } from "./settings.js";

/**
 * @param {{session: () => any, renamed: (session: any) => void, deleted: (id: string) => void}} hooks
 */
export function sessionMenu({ session, renamed, deleted }) {
  const items = [
    h("button", { type: "button", role: "menuitem", onclick: () => act(rename) }, t("rename")),
    h("button", { type: "button", role: "menuitem", onclick: () => act((s) => download(s, "md")) }, t("exportMarkdown")),
    h("button", { type: "button", role: "menuitem", onclick: () => act((s) => download(s, "json")) }, t("exportJson")),
    h("button", { type: "button", role: "menuitem", class: "danger", onclick: () => act(remove) }, t("deleteSession")),
  ];
  const list = h("div", { class: "menu-list", role: "menu", id: "session-menu", "aria-label": t("sessionActions") }, items);
  const button = h("button", {
    type: "button",
    class: "ghost",
    "aria-label": t("sessionActions"),
    "aria-haspopup": "menu",
    "aria-controls": "session-menu",
    onclick: () => setOpen(!open),
  }, "⋯");
  const el = h("div", { class: "menu" }, button, list);
  let open = false;
  let running = false;

  /** @param {boolean} value */
  function setOpen(value) {
    open = value;
    list.hidden = !open;
    button.setAttribute("aria-expanded", String(open));
    if (open) /** @type {HTMLElement} */ (items[0]).focus();
  }
  document.addEventListener("click", (event) => {
    if (open && event.target instanceof Node && !el.contains(event.target)) setOpen(false);
  });
  el.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && open) {
      event.stopPropagation();
      setOpen(false);
      button.focus();
    }
  });

  /** @param {(session: any) => Promise<void>} action */
  async function act(action) {
    setOpen(false);
    const current = session();
    if (current) await action(current);
  }

  /** @param {any} current */
  async function rename(current) {
    const input = h("input", { type: "text", maxlength: settings().limits.titleChars, required: true, value: current.title });
    const ok = await modal(t("renameSession"), h("div", { class: "form" }, h("label", {}, t("title"), input)), [
      { label: t("cancel"), value: false },
      { label: t("save"), value: true, class: "primary" },
    ]);
    if (!ok || !input.value.trim()) return;
    try {
      renamed(await api("PATCH", `/chat/sessions/${current.id}`, { title: input.value.trim() }));
      notify(t("sessionRenamed"));
    } catch (error) {
      notify(/** @type {Error} */ (error).message, "error");
    }
  }

  /** @param {any} current @param {"md" | "json"} format */
  async function download(current, format) {
    try {
      const response = await request("GET", `/chat/sessions/${current.id}/export?format=${format}`);
      const named = /filename\*?=(?:UTF-8'')?"?([^";]+)"?/i.exec(response.headers.get("content-disposition") || "");
      const name = named ? decodeURIComponent(named[1]) : `${current.title || current.id}.${format}`;
      const url = URL.createObjectURL(await response.blob());
      const link = h("a", { href: url, download: name, hidden: true });
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    } catch (error) {
      notify(/** @type {Error} */ (error).message, "error");
    }
  }

  /** @param {any} current */
  async function remove(current) {
    if (!(await confirmAction(t("deleteSession"), t("deleteSessionConfirm", { title: current.title }), t("delete")))) return;
    try {
      await api("DELETE", `/chat/sessions/${current.id}`);
      notify(t("sessionDeleted"));
      deleted(current.id);
    } catch (error) {
      notify(/** @type {Error} */ (error).message, "error");
    }
  }

  setOpen(false);
  return {
    el,
    /** @param {{ready: boolean, running: boolean}} state */
    render({ ready, running: busy }) {
      running = busy;
      button.disabled = !ready;
      // renaming and exporting are fine while an answer is written; deleting is not
      /** @type {HTMLButtonElement} */ (items[3]).disabled = running;
      if (!ready && open) setOpen(false);
    },
  };
}
