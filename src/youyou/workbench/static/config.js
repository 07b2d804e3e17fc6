// @ts-check
// The configuration page: the user's prompts (the default marked), SKILL.md skills uploaded
// by file picker or drag and drop (every failing rule listed), and the active prompt and
// skills, saved together in one request so nothing is ever half-saved.

import { api, apiText } from "./api.js";
import { confirmAction, formatBytes, h, modal, notify } from "./dom.js";
import { t } from "./i18n.js";
import { settings } from "./settings.js";

/** Every failing SKILL.md rule of a refusal, one per entry. */
export function failedRules(error) {
  if (error.code !== "VALIDATION_INVALID_ARGUMENT") return [error.message];
  const cut = error.message.search(/[:：]/);
  const detail = cut < 0 ? error.message : error.message.slice(cut + 1).trim();
  return detail
    .split(/(?<=。)(?!（)/)
    .flatMap((part) => part.split(/(?<=\.)\s+(?=[A-Z])/))
    .map((rule) => rule.trim())
    .filter(Boolean);
}

/** Which file a refusal is about: files are all called SKILL.md, so the name in its
 * frontmatter (when it has one) and, among several, its place in the upload. */
async function refusedName(file, index, count) {
  let name = file.webkitRelativePath || file.name;
  if (file.size <= settings().limits.skillBytes) {
    const declared = /^name:[ \t]*["']?([^"'\r\n]+?)["']?[ \t]*$/m.exec(await file.text());
    if (declared) name = `${name} (${declared[1]})`;
  }
  return count > 1 ? t("fileNumber", { n: index + 1, name }) : name;
}

export class ConfigView {
  constructor() {
    this.config = null;
    this.promptId = null;
    this.skillIds = new Set();
    this.prompts = h("ul", { class: "cards" });
    this.skills = h("ul", { class: "cards" });
    this.errors = h("div", { class: "upload-errors", role: "alert" });
    this.status = h("span", { class: "muted", role: "status" });
    this.picker = h("input", {
      type: "file",
      accept: ".md,text/markdown,text/plain",
      multiple: true,
      hidden: true,
      onchange: () => {
        this.upload([...this.picker.files]);
        this.picker.value = "";
      },
    });
    this.dropzone = h(
      "div",
      {
        class: "dropzone",
        role: "group",
        "aria-label": t("skillDropzone"),
        ondragover: (event) => {
          event.preventDefault();
          this.dropzone.classList.add("dragging");
        },
        ondragleave: () => this.dropzone.classList.remove("dragging"),
        ondrop: (event) => {
          event.preventDefault();
          this.dropzone.classList.remove("dragging");
          this.upload([...event.dataTransfer.files]);
        },
      },
      h("p", {}, t("dropSkill")),
      h("button", { type: "button", onclick: () => this.picker.click() }, t("chooseSkill")),
      this.picker,
    );
    this.el = h(
      "div",
      { class: "page" },
      h("h2", {}, t("configuration")),
      h(
        "section",
        { "aria-labelledby": "prompts-heading" },
        h("div", { class: "section-head" },
          h("h3", { id: "prompts-heading" }, t("prompts")),
          h("button", { type: "button", onclick: () => this.editPrompt(null) }, t("newPrompt"))),
        h("p", { class: "muted" }, t("promptsHint")),
        h("fieldset", {}, h("legend", {}, t("activePrompt")), this.prompts),
      ),
      h(
        "section",
        { "aria-labelledby": "skills-heading" },
        h("h3", { id: "skills-heading" }, t("skills")),
        h("p", { class: "muted" }, t("skillsHint")),
        this.dropzone,
        this.errors,
        h("fieldset", {}, h("legend", {}, t("activeSkills")), this.skills),
      ),
      h(
        "div",
        { class: "save-bar" },
        this.status,
        h("button", { type: "button", class: "primary", onclick: () => this.save() }, t("saveSelection")),
      ),
    );
  }

  mount(container) {
    container.replaceChildren(this.el);
    this.load(true);
  }

  unmount() {}

  /** Reads the configuration; `reset` drops the unsaved choice, else it is kept. */
  async load(reset = false) {
    let config;
    try {
      config = await api("GET", "/chat/configuration");
    } catch (error) {
      notify(error.message, "error");
      return;
    }
    this.apply(config, reset);
  }

  apply(config, reset) {
    this.config = config;
    const promptIds = new Set(config.prompts.map((p) => p.id));
    const skillIds = new Set(config.skills.map((s) => s.id));
    if (reset || !promptIds.has(this.promptId)) this.promptId = config.selection.systemPromptId;
    this.skillIds = new Set(
      (reset ? config.selection.skillIds : [...this.skillIds]).filter((id) => skillIds.has(id)),
    );
    this.render();
  }

  /** Unsaved choice of active prompt and skills (the app asks before leaving the page). */
  dirty() {
    if (!this.config) return false;
    const saved = this.config.selection;
    const skills = [...this.skillIds];
    return saved.systemPromptId !== this.promptId || skills.length !== saved.skillIds.length
      || skills.some((id) => !saved.skillIds.includes(id));
  }

  changed() {
    this.status.textContent = this.dirty() ? t("unsaved") : "";
  }

  render() {
    this.prompts.replaceChildren(...this.config.prompts.map((prompt) => h(
      "li",
      { class: "card" },
      h("div", { class: "card-head" },
        h("label", {},
          h("input", {
            type: "radio",
            name: "active-prompt",
            value: prompt.id,
            checked: prompt.id === this.promptId,
            onchange: () => {
              this.promptId = prompt.id;
              this.changed();
            },
          }),
          h("strong", {}, prompt.label)),
        prompt.isDefault ? h("span", { class: "badge" }, t("default")) : null,
        h("span", { class: "spacer" }),
        h("button", { type: "button", class: "ghost small", "aria-label": t("editPrompt", { name: prompt.label }), onclick: () => this.editPrompt(prompt) }, t("edit")),
        h("button", { type: "button", class: "ghost small danger", "aria-label": t("deletePrompt", { name: prompt.label }), onclick: () => this.deletePrompt(prompt) }, t("delete"))),
      h("p", { class: "preview" }, prompt.content),
    )));
    this.skills.replaceChildren(...this.config.skills.map((skill) => h(
      "li",
      { class: "card" },
      h("div", { class: "card-head" },
        h("label", {},
          h("input", {
            type: "checkbox",
            value: skill.id,
            checked: this.skillIds.has(skill.id),
            onchange: (event) => {
              if (event.target.checked) this.skillIds.add(skill.id);
              else this.skillIds.delete(skill.id);
              this.changed();
            },
          }),
          h("strong", {}, skill.name)),
        h("span", { class: "muted" }, formatBytes(skill.sizeBytes)),
        h("span", { class: "spacer" }),
        h("button", { type: "button", class: "ghost small", "aria-label": t("viewSkill", { name: skill.name }), onclick: () => this.view(skill) }, t("view")),
        h("button", { type: "button", class: "ghost small danger", "aria-label": t("deleteSkill", { name: skill.name }), onclick: () => this.deleteSkill(skill) }, t("delete"))),
      h("p", { class: "preview" }, skill.description),
    )));
    if (this.config.skills.length === 0) this.skills.append(h("li", { class: "muted" }, t("noSkills")));
    this.changed();
  }

  async editPrompt(prompt) {
    const label = h("input", { type: "text", maxlength: settings().limits.promptLabelChars, required: true, value: prompt ? prompt.label : "" });
    const content = h("textarea", { rows: 10, maxlength: settings().limits.promptContentChars, required: true, value: prompt ? prompt.content : "" });
    const body = h("div", { class: "form" }, h("label", {}, t("promptLabel"), label), h("label", {}, t("promptContent"), content));
    const title = prompt ? t("editPrompt", { name: prompt.label }) : t("newPrompt");
    for (;;) {
      const ok = await modal(title, body, [
        { label: t("cancel"), value: false },
        { label: t("save"), value: true, class: "primary" },
      ]);
      if (!ok) return;
      const payload = { label: label.value.trim(), content: content.value.trim() };
      try {
        if (prompt) await api("PUT", `/chat/prompts/${prompt.id}`, payload);
        else await api("POST", "/chat/prompts", payload);
        notify(t("promptSaved"));
        await this.load();
        return;
      } catch (error) {
        notify(error.message, "error"); // the dialog opens again with what was typed
      }
    }
  }

  async deletePrompt(prompt) {
    if (!(await confirmAction(t("deletePrompt", { name: prompt.label }), t("deletePromptConfirm"), t("delete")))) return;
    try {
      await api("DELETE", `/chat/prompts/${prompt.id}`);
      await this.load();
    } catch (error) {
      notify(error.message, "error");
    }
  }

  async deleteSkill(skill) {
    if (!(await confirmAction(t("deleteSkill", { name: skill.name }), t("deleteSkillConfirm"), t("delete")))) return;
    try {
      await api("DELETE", `/chat/skills/${skill.id}`);
      await this.load();
    } catch (error) {
      notify(error.message, "error");
    }
  }

  async view(skill) {
    let text;
    try {
      text = await apiText(`/chat/skills/${skill.id}/content`);
    } catch (error) {
      notify(error.message, "error");
      return;
    }
    await modal(t("skillFile", { name: skill.name }), h("pre", { class: "skill-source" }, text), [
      { label: t("close"), value: null },
    ]);
  }

  async upload(files) {
    this.errors.replaceChildren();
    let added = 0;
    for (const [index, file] of files.entries()) {
      let rules;
      const maxSkill = settings().limits.skillBytes;
      if (file.size > maxSkill) rules = [t("skillTooLarge", { max: formatBytes(maxSkill) })];
      else {
        const form = new FormData();
        form.append("file", file, file.name);
        try {
          await api("POST", "/chat/skills", form);
          added++;
          continue;
        } catch (error) {
          rules = failedRules(error);
        }
      }
      const name = await refusedName(file, index, files.length);
      this.errors.append(h(
        "div",
        { class: "refused" },
        h("p", {}, t("skillRefused", { name })),
        h("ul", { "aria-label": t("failedRules", { name }) }, rules.map((rule) => h("li", {}, rule))),
      ));
    }
    if (added) {
      notify(t("skillsAdded", { count: added }));
      await this.load();
    }
  }

  async save() {
    try {
      const config = await api("PUT", "/chat/configuration", {
        systemPromptId: this.promptId,
        skillIds: [...this.skillIds],
      });
      this.apply(config, true);
      notify(t("selectionSaved"));
    } catch (error) {
      notify(error.message, "error");
    }
  }
}
