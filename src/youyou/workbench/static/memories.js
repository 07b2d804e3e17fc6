// @ts-check
// The memories page: what the agent remembers about the user across sessions, each with the
// session it came from, and a way to forget any of it.

import { api } from "./api.js";
import { confirmAction, formatTime, h, notify } from "./dom.js";
import { t } from "./i18n.js";

const NAME_CHARS = 40;

export class MemoriesView {
  constructor() {
    this.list = h("ul", { class: "cards", "aria-label": t("memories") });
    this.el = h(
      "div",
      { class: "page" },
      h("h2", {}, t("memories")),
      h("p", { class: "muted" }, t("memoriesHint")),
      this.list,
    );
  }

  mount(container) {
    container.replaceChildren(this.el);
    this.load();
  }

  unmount() {}

  async load() {
    let items;
    try {
      items = await api("GET", "/chat/memories");
    } catch (error) {
      notify(error.message, "error");
      return;
    }
    const titles = await this.titles(items);
    this.list.replaceChildren(...items.map((memory) => this.item(memory, titles)));
    if (items.length === 0) this.list.append(h("li", { class: "muted" }, t("noMemories")));
  }

  /** Session titles by id; a session deleted since is simply left out. */
  async titles(items) {
    const ids = [...new Set(items.map((m) => m.sourceSessionId).filter(Boolean))];
    const found = await Promise.all(ids.map((id) => api("GET", `/chat/sessions/${id}`).catch(() => null)));
    return new Map(found.filter(Boolean).map((s) => [s.id, s.title]));
  }

  item(memory, titles) {
    const short = memory.content.length > NAME_CHARS ? `${memory.content.slice(0, NAME_CHARS)}…` : memory.content;
    const source = memory.sourceSessionId;
    let origin = null;
    if (source && titles.has(source)) {
      origin = [t("fromSession"), " ", h("a", { href: `#/chat/${source}` }, titles.get(source))];
    } else if (source) {
      origin = t("fromDeletedSession", { id: source.slice(0, 8) });
    }
    return h(
      "li",
      { class: "card" },
      h("p", {}, memory.content),
      h(
        "div",
        { class: "card-head" },
        h("span", { class: "muted" }, origin, origin ? " · " : null, t("updated", { time: formatTime(memory.updatedAt) })),
        h("span", { class: "spacer" }),
        h(
          "button",
          {
            type: "button",
            class: "ghost small danger",
            "aria-label": t("deleteMemory", { name: short }),
            onclick: () => this.remove(memory, short),
          },
          t("delete"),
        ),
      ),
    );
  }

  async remove(memory, short) {
    if (!(await confirmAction(t("deleteMemory", { name: short }), t("deleteMemoryConfirm"), t("delete")))) return;
    try {
      await api("DELETE", `/chat/memories/${memory.id}`);
      notify(t("memoryDeleted"));
      await this.load();
    } catch (error) {
      notify(error.message, "error");
    }
  }
}
