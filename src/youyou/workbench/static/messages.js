// @ts-check
// One conversation's messages: user messages with their attachments, and assistant answers
// built from text, collapsed reasoning and tool call cards, either from the stored history or
// live from the stream of a running turn.

import { approvalNote } from "./approvals.js";
import { copyButton, formatTime, h } from "./dom.js";
import { t } from "./i18n.js";
import { renderMarkdown } from "./markdown.js";

export const IMAGE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"];
const RENDER_DELAY_MS = 30;

/** The content a user message was sent with (Retry sends it again, Edit & resend edits it). */
const contents = new WeakMap();

/** @param {Element} article @returns {any} */
export function contentOf(article) {
  return contents.get(article) ?? null;
}

/** @typedef {{seq?: number, compacted?: boolean, createdAt?: string}} MessageInfo */

/** Sequence number, time (in the head; shown on hover or focus, always on a phone) and the
 * compacted mark.
 * @param {HTMLElement} el @param {MessageInfo} info */
function meta(el, { seq, compacted, createdAt }) {
  if (seq !== undefined && seq !== null) el.dataset.seq = String(seq);
  if (createdAt) {
    const time = h("time", { class: "msg-time", datetime: createdAt, title: formatTime(createdAt, true) }, formatTime(createdAt));
    el.querySelector(".who")?.after(time);
  }
  if (compacted) markCompacted(el);
}

function actionButton(action, label) {
  return h("button", { type: "button", class: "ghost small", dataset: { action } }, label);
}

/** Marks a message as part of the compacted history (it stays readable). */
export function markCompacted(article) {
  if (article.classList.contains("compacted")) return;
  article.classList.add("compacted");
  article.querySelector(".msg-head").append(h("span", { class: "badge muted" }, t("compacted")));
}

function fileBlock(block) {
  const name = block.fileName || t("attachedText");
  return h(
    "details",
    { class: "file-block" },
    h("summary", {}, `📎 ${name}`),
    h("pre", {}, block.text),
  );
}

function imageBlock(block) {
  if (!IMAGE_TYPES.includes(block.mimeType)) return h("span", { class: "badge" }, block.mimeType);
  return h("img", {
    class: "thumb",
    alt: t("attachedImage"),
    src: `data:${block.mimeType};base64,${block.dataBase64}`,
  });
}

/** A user message; `content` is the text sent or the list of content blocks.
 * @param {any} content @param {MessageInfo} [info] */
export function userMessage(content, info = {}) {
  const blocks = typeof content === "string" ? [{ type: "text", text: content }] : content;
  const body = h("div", { class: "msg-body" });
  const files = h("div", { class: "msg-files" });
  for (const block of blocks) {
    if (block.type === "text") body.append(h("p", { class: "plain" }, block.text));
    else if (block.type === "image") files.append(imageBlock(block));
    else if (block.type === "file") files.append(fileBlock(block));
  }
  const article = h(
    "article",
    { class: "msg user", "aria-label": t("yourMessage") },
    h("div", { class: "msg-head" }, h("span", { class: "who" }, t("you")),
      h("span", { class: "msg-actions" }, actionButton("edit", t("editResend")))),
    body,
    files.childElementCount ? files : null,
  );
  contents.set(article, content);
  meta(article, info);
  return article;
}

/** A system message kept in the history (shown small; it is not part of the dialogue).
 * @param {any[]} content @param {MessageInfo} [info] */
export function systemMessage(content, info = {}) {
  const text = content.map((block) => block.text || "").join("\n");
  const article = h(
    "article",
    { class: "msg system", "aria-label": t("systemMessage") },
    h("div", { class: "msg-head" }, h("span", { class: "who" }, t("system"))),
    h("div", { class: "msg-body" }, h("p", { class: "plain" }, text)),
  );
  meta(article, info);
  return article;
}

function toolOutput(toolName, output) {
  // The load_skill card shows only its first line: the whole skill is in the ledger.
  return toolName === "load_skill" ? output.split("\n", 1)[0] : output;
}

function noResult(state) {
  state.textContent = t("toolNoResult");
  state.className = "tool-state";
}

/** An assistant answer: text segments, reasoning and tool cards in the order they came. */
export class Answer {
  /** @param {MessageInfo} [info] */
  constructor(info = {}) {
    /** @type {HTMLElement | null} the question, while it is sent from this page */
    this.user = null;
    /** @type {string | null} its text, given back to the composer if the server refuses it */
    this.sent = null;
    this.segments = [];
    this.retry = actionButton("retry", t("retryAnswer"));
    this.retry.hidden = true;
    this.head = h(
      "div",
      { class: "msg-head" },
      h("span", { class: "who" }, t("assistant")),
      h("span", { class: "msg-actions" }, this.retry, copyButton(t("copyAnswer"), t("copyAnswer"), () => this.markdown())),
    );
    this.body = h("div", { class: "msg-body" });
    this.el = h("article", { class: "msg assistant", "aria-label": t("assistantMessage") }, this.head, this.body);
    meta(this.el, info);
    this.segment = null;
    this.reasoningEl = null;
    this.tools = new Map();
    this.timer = null;
    this.streaming = false;
    this.cursor = h("span", { class: "cursor", "aria-hidden": "true" }, "▍");
  }

  /** Written live from a stream: the cursor follows the last word. */
  live() {
    this.streaming = true;
    this.el.classList.add("streaming");
    this.body.append(this.cursor);
  }

  /** The answer's words as Markdown, as the model wrote them. */
  markdown() {
    return this.segments.map((segment) => segment.text.trim()).filter(Boolean).join("\n\n");
  }

  /** Appends streamed text to the current text segment; renders at most every 30 ms. */
  text(delta) {
    if (!this.segment) {
      this.segment = { el: h("div", { class: "markdown" }), text: "" };
      this.segments.push(this.segment);
      this.body.append(this.segment.el);
    }
    this.segment.text += delta;
    this.timer ??= setTimeout(() => this.flush(), RENDER_DELAY_MS);
  }

  /** A stored text block: its own segment, rendered at once. */
  storedText(text) {
    this.segment = null;
    this.text(text);
    this.flush();
  }

  flush() {
    clearTimeout(this.timer);
    this.timer = null;
    if (this.segment) this.segment.el.replaceChildren(renderMarkdown(this.segment.text));
    if (this.streaming) this.placeCursor();
  }

  /** The cursor goes at the end of the last line written, inside its paragraph, list item or
   * code, not on a line of its own. */
  placeCursor() {
    /** @type {Element} */
    let target = this.body;
    while (target.lastChild instanceof Element && target.lastChild !== this.cursor
      && !target.lastChild.matches("br, details, .code-head, img")) {
      target = target.lastChild;
    }
    target.append(this.cursor);
  }

  reasoning(delta) {
    if (!this.reasoningEl) {
      const text = h("div", { class: "reasoning-text" });
      this.reasoningEl = h("details", { class: "reasoning" }, h("summary", {}, t("reasoning")), text);
      this.body.insertBefore(this.reasoningEl, this.segment ? this.segment.el : null);
    }
    this.reasoningEl.lastChild.append(delta);
  }

  toolStart({ callId, toolName, arguments: args }) {
    this.flush();
    this.segment = null; // text after the call is a new segment below the card
    const state = h("span", { class: "tool-state running" }, t("toolRunning"));
    const output = h("pre");
    const card = h(
      "details",
      { class: "tool", "aria-label": t("toolCall", { name: toolName }) },
      h("summary", {}, h("span", { class: "tool-name" }, toolName), state),
      h(
        "div",
        { class: "tool-body" },
        h("div", { class: "tool-label" }, t("arguments")),
        h("pre", {}, JSON.stringify(args ?? {}, null, 2)),
        h("div", { class: "tool-label" }, t("output")),
        output,
      ),
    );
    this.body.append(card);
    this.tools.set(callId, { state, output });
    if (this.streaming) this.placeCursor();
  }

  toolEnd({ callId, toolName, output, isError, durationMs }) {
    let tool = this.tools.get(callId);
    if (!tool) {
      this.toolStart({ callId, toolName, arguments: {} });
      tool = this.tools.get(callId);
    }
    tool.output.textContent = output === null || output === undefined ? "" : toolOutput(toolName, output);
    const parts = [isError ? t("toolFailed") : t("toolDone")];
    if (durationMs !== undefined && durationMs !== null) parts.push(t("duration", { ms: Math.round(durationMs) }));
    tool.state.textContent = parts.join(" · ");
    tool.state.className = `tool-state ${isError ? "error" : "done"}`;
  }

  /** A call from the history: arguments, output and the stored duration. */
  storedCall(call) {
    this.toolStart(call);
    if (call.output !== null && call.output !== undefined) this.toolEnd(call);
    else noResult(this.tools.get(call.callId).state);
    const note = approvalNote(call.approval);
    if (note) this.tools.get(call.callId).state.after(note);
  }

  /** Stops the live look; a running tool card that never ended says so. */
  finish() {
    this.flush();
    this.streaming = false;
    this.cursor.remove();
    this.el.classList.remove("streaming");
    for (const { state } of this.tools.values()) {
      if (state.classList.contains("running")) noResult(state);
    }
  }

  /** What the turn used, as a dim line under the answer (the cost when the model is priced).
   * @param {{inputTokens: number, outputTokens: number, cost?: number | null}} usage */
  usage({ inputTokens, outputTokens, cost }) {
    const parts = [t("tokenUsage", { input: inputTokens, output: outputTokens })];
    if (cost !== null && cost !== undefined) parts.push(t("tokenCost", { cost: cost.toFixed(6) }));
    this.el.append(h("div", { class: "answer-usage muted" }, parts.join(" · ")));
  }

  incomplete() {
    if (this.el.classList.contains("incomplete")) return;
    this.el.classList.add("incomplete");
    this.el.setAttribute("aria-label", t("assistantIncomplete"));
    this.head.querySelector(".who")?.after(h("span", { class: "badge warn" }, t("incomplete")));
    this.retry.hidden = false;
  }

  error(message) {
    this.body.append(h("p", { class: "msg-error", role: "alert" }, message));
    this.retry.hidden = false;
  }
}

/** The assistant answers of one turn form one Answer; each stored message adds to it.
 * `callsFirst`: the calls were made before this text (a tool round without words hangs its
 * calls on the answer that follows it), else the text came first and then the calls. */
export function addStoredAssistant(answer, message, callsFirst) {
  const texts = message.content.filter((block) => block.type === "text");
  if (callsFirst) for (const call of message.toolCalls) answer.storedCall(call);
  for (const block of texts) answer.storedText(block.text);
  if (!callsFirst) for (const call of message.toolCalls) answer.storedCall(call);
  if (message.status === "incomplete") answer.incomplete();
  if (message.usage) answer.usage(message.usage);
}

/** The summary that replaced the compacted messages, expandable, after the last of them. */
export function summaryNote(memory) {
  return h(
    "div",
    { class: "compacted-note", role: "note" },
    h(
      "details",
      {},
      h("summary", {}, t("compactedSummary", { count: memory.compactedMessageCount })),
      h("div", { class: "markdown" }, renderMarkdown(memory.summary)),
    ),
  );
}
