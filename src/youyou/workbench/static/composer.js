// @ts-check
// The message box: Enter sends, Shift+Enter breaks the line, `/` at the start offers the
// selected skills, images can be pasted or dropped and text files attached (checked for type
// and size before anything is uploaded), and the draft is kept in localStorage per session
// until the server has accepted the message.

import { formatBytes, h, notify } from "./dom.js";
import { t } from "./i18n.js";
import { IMAGE_TYPES } from "./messages.js";
import { settings } from "./settings.js";

const MAX_INPUT_HEIGHT = 240;
const TEXT_TYPES = new Set([
  "application/json", "application/x-ndjson", "application/xml", "application/yaml",
  "application/x-yaml", "application/toml", "application/x-sh", "application/sql",
  "application/javascript",
]);
const TEXT_NAME = /\.(txt|log|out|err|md|markdown|json|jsonl|ndjson|ya?ml|toml|ini|conf|cfg|env|properties|csv|tsv|xml|html?|css|js|mjs|ts|py|go|rs|java|kt|c|h|cc|cpp|sh|bash|zsh|sql|diff|patch|tf|hcl|dockerfile)$/i;

function isText(file) {
  return file.type.startsWith("text/") || TEXT_TYPES.has(file.type) || TEXT_NAME.test(file.name);
}

function readBase64(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result).split(",", 2)[1]);
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}

/** The file as UTF-8 text, or null when it is not (binary, NUL bytes, another encoding). */
async function readText(file) {
  try {
    const text = new TextDecoder("utf-8", { fatal: true }).decode(await file.arrayBuffer());
    return text.includes("\0") ? null : text;
  } catch {
    return null;
  }
}

export class Composer {
  constructor({ onSend, onStop }) {
    this.onSend = onSend;
    this.attachments = [];
    this.skills = [];
    this.model = null;
    this.draftKey = null;
    /** What the chat view's render gave; `sending` is the composer's own. */
    this.state = { ready: false, running: false, stopping: false, blocked: false, offline: false };
    this.sending = false;
    this.matches = [];
    this.active = 0;

    this.input = h("textarea", {
      rows: 2,
      "aria-label": t("message"),
      placeholder: t("messagePlaceholder"),
      "aria-autocomplete": "list",
      "aria-controls": "skill-menu",
      oninput: () => this.changed(),
      onkeydown: (event) => this.keydown(event),
      onpaste: (event) => this.paste(event),
    });
    this.menu = h("ul", { id: "skill-menu", class: "skill-menu", role: "listbox", "aria-label": t("skills"), hidden: true });
    this.chips = h("ul", { class: "chips", "aria-label": t("attachments") });
    this.picker = h("input", {
      type: "file",
      multiple: true,
      hidden: true,
      onchange: () => {
        this.addFiles([...this.picker.files]);
        this.picker.value = "";
      },
    });
    this.attachButton = h("button", { type: "button", class: "ghost", onclick: () => this.picker.click() }, t("attachFile"));
    this.sendButton = h("button", { type: "submit", class: "primary" }, t("send"));
    this.stopButton = h(
      "button",
      { type: "button", class: "danger", hidden: true, "aria-keyshortcuts": "Escape", onclick: onStop },
      t("stop"),
    );
    this.el = h(
      "form",
      {
        class: "composer",
        "aria-label": t("composer"),
        onsubmit: (event) => {
          event.preventDefault();
          this.submit();
        },
        ondragover: (event) => {
          event.preventDefault();
          this.el.classList.add("dragging");
        },
        ondragleave: () => this.el.classList.remove("dragging"),
        ondrop: (event) => {
          event.preventDefault();
          this.el.classList.remove("dragging");
          this.addFiles([...event.dataTransfer.files]);
        },
      },
      this.menu,
      this.chips,
      this.input,
      h(
        "div",
        { class: "composer-actions" },
        this.picker,
        this.attachButton,
        h("span", { class: "hint" }, t("composerHint")),
        this.stopButton,
        this.sendButton,
      ),
    );
  }

  /** The controls from the chat's state: `ready` (the session has loaded: no typing or
   * attaching before, its draft and empty attachment list would replace what was typed),
   * `running` (Stop instead of Send), `stopping`, `blocked` (the context is full) and
   * `offline` (the server is unreachable: sending is held, the draft stays). */
  render(state) {
    this.state = { ...this.state, ...state };
    const { ready, running, stopping, blocked, offline } = this.state;
    this.input.disabled = !ready;
    this.attachButton.disabled = !ready;
    this.sendButton.hidden = running;
    this.sendButton.disabled = !ready || blocked || offline || this.sending;
    this.stopButton.hidden = !running;
    this.stopButton.disabled = stopping;
    this.stopButton.textContent = stopping ? t("stopping") : t("stop");
  }

  /** The session is loading: forget the previous session's draft key. */
  setLoading() {
    this.draftKey = null;
  }

  /** A new session: its draft, the selected skills and the session's model. */
  setContext({ draftKey, skills, model }) {
    this.draftKey = draftKey;
    this.skills = skills;
    this.model = model;
    this.input.value = localStorage.getItem(draftKey) || "";
    this.clearAttachments();
    this.closeMenu();
    this.resize();
  }

  focus() {
    this.input.focus();
  }

  /** Puts back a message the server did not keep, unless something new was typed. */
  restore(text) {
    if (this.input.value.trim()) return;
    this.input.value = text;
    this.changed();
  }

  /** Edit & resend: the message replaces the box's text, ready to change and send. */
  edit(text) {
    this.input.value = text;
    this.changed();
    this.input.focus();
    this.input.setSelectionRange(text.length, text.length);
  }

  changed() {
    if (this.draftKey) {
      if (this.input.value) localStorage.setItem(this.draftKey, this.input.value);
      else localStorage.removeItem(this.draftKey);
    }
    this.resize();
    this.updateMenu();
  }

  resize() {
    this.input.style.height = "auto";
    this.input.style.height = `${Math.min(this.input.scrollHeight + 2, MAX_INPUT_HEIGHT)}px`;
  }

  async submit() {
    if (this.sendButton.disabled || this.state.running) return;
    const text = this.input.value.trim();
    if (!text && this.attachments.length === 0) return;
    const content = this.attachments.length
      ? [...(text ? [{ type: "text", text }] : []), ...this.attachments.map((a) => a.block)]
      : text;
    const draftKey = this.draftKey;
    this.sending = true;
    this.render({});
    try {
      if (!(await this.onSend(content, text))) return;
    } finally {
      this.sending = false;
      this.render({});
    }
    if (this.draftKey !== draftKey) {
      localStorage.removeItem(draftKey); // sent; the box shows another session's draft now
      return;
    }
    this.input.value = "";
    this.clearAttachments();
    this.changed();
  }

  keydown(event) {
    if (!this.menu.hidden) {
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        event.preventDefault();
        const step = event.key === "ArrowDown" ? 1 : -1;
        this.active = (this.active + step + this.matches.length) % Math.max(this.matches.length, 1);
        this.renderMenu();
        return;
      }
      if ((event.key === "Enter" || event.key === "Tab") && this.matches.length) {
        event.preventDefault();
        this.pick(this.matches[this.active]);
        return;
      }
      if (event.key === "Escape") {
        event.preventDefault();
        event.stopPropagation();
        this.closeMenu();
        return;
      }
    }
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      this.submit();
    }
  }

  // -- skills menu ---------------------------------------------------------------------------

  updateMenu() {
    const typed = /^\/([a-z0-9-]*)$/.exec(this.input.value.slice(0, this.input.selectionStart));
    if (!typed) {
      this.closeMenu();
      return;
    }
    this.matches = this.skills.filter((skill) => skill.name.startsWith(typed[1]));
    this.active = 0;
    this.menu.hidden = false;
    this.renderMenu();
  }

  renderMenu() {
    if (this.matches.length === 0) {
      const empty = this.skills.length ? t("noSkillMatches") : t("noSkillsSelected");
      this.menu.replaceChildren(h("li", { class: "empty", role: "option", "aria-disabled": "true" }, empty));
      this.input.removeAttribute("aria-activedescendant");
      return;
    }
    this.menu.replaceChildren(
      ...this.matches.map((skill, i) =>
        h(
          "li",
          {
            id: `skill-option-${i}`,
            role: "option",
            "aria-selected": String(i === this.active),
            onmousedown: (event) => {
              event.preventDefault();
              this.pick(skill);
            },
          },
          h("strong", {}, `/${skill.name}`),
          h("span", { class: "muted" }, skill.description),
        ),
      ),
    );
    this.input.setAttribute("aria-activedescendant", `skill-option-${this.active}`);
  }

  pick(skill) {
    const value = this.input.value;
    const end = value.search(/\s|$/);
    const rest = value.slice(end).replace(/^\s*/, "");
    this.input.value = `/${skill.name} ${rest}`;
    const caret = skill.name.length + 2;
    this.input.setSelectionRange(caret, caret);
    this.closeMenu();
    this.changed();
  }

  closeMenu() {
    this.menu.hidden = true;
    this.input.removeAttribute("aria-activedescendant");
  }

  // -- attachments ---------------------------------------------------------------------------

  paste(event) {
    const files = [...(event.clipboardData?.files || [])];
    if (files.length === 0) return;
    event.preventDefault();
    this.addFiles(files);
  }

  async addFiles(files) {
    if (this.input.disabled) return; // dropped or pasted while the session loads
    for (const file of files) {
      try {
        const block = await this.check(file);
        this.attach(file, block);
      } catch (problem) {
        notify(problem.message, "error");
      }
    }
  }

  /** The content block of an acceptable file; throws with the reason otherwise. */
  async check(file) {
    const name = file.name || t("pastedImage");
    const limits = settings().limits;
    if (this.attachments.length >= limits.attachments) {
      throw new Error(t("tooManyAttachments", { max: limits.attachments }));
    }
    if (file.type.startsWith("image/")) {
      if (!IMAGE_TYPES.includes(file.type)) throw new Error(t("imageType", { name }));
      if (this.model && !this.model.capabilities.includes("vision")) {
        throw new Error(t("noVision", { model: this.model.displayName }));
      }
      if (file.size > limits.imageBytes) {
        throw new Error(t("tooLarge", { name, max: formatBytes(limits.imageBytes) }));
      }
      return { type: "image", mimeType: file.type, dataBase64: await readBase64(file) };
    }
    if (!isText(file)) throw new Error(t("fileType", { name }));
    if (file.size > limits.textBytes) {
      throw new Error(t("tooLarge", { name, max: formatBytes(limits.textBytes) }));
    }
    const text = await readText(file);
    if (text === null) throw new Error(t("notUtf8", { name }));
    return { type: "file", fileName: name, mediaType: file.type || "text/plain", text };
  }

  attach(file, block) {
    const name = file.name || t("pastedImage");
    const attachment = { block };
    const thumb = block.type === "image"
      ? h("img", { class: "chip-thumb", alt: "", src: `data:${block.mimeType};base64,${block.dataBase64}` })
      : null;
    attachment.chip = h(
      "li",
      { class: "chip" },
      thumb,
      h("span", {}, `${name} · ${formatBytes(file.size)}`),
      h(
        "button",
        {
          type: "button",
          class: "ghost small",
          "aria-label": t("removeAttachment", { name }),
          onclick: () => {
            this.attachments = this.attachments.filter((a) => a !== attachment);
            attachment.chip.remove();
          },
        },
        "×",
      ),
    );
    this.attachments.push(attachment);
    this.chips.append(attachment.chip);
  }

  clearAttachments() {
    this.attachments = [];
    this.chips.replaceChildren();
  }
}
