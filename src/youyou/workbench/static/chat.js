// The chat page: session list, conversation, context bar and composer. A sent message is
// answered by a Server-Sent Event stream; when the connection drops the page re-attaches to
// the running turn with Last-Event-ID, and opening a session whose turn is running replays it.

import { ApiError, api, request } from "./api.js";
import { ApprovalCards } from "./approvals.js";
import { h, notify } from "./dom.js";
import { t } from "./i18n.js";
import { Composer } from "./composer.js";
import { Answer, addStoredAssistant, markCompacted, summaryNote, systemMessage, userMessage } from "./messages.js";
import { SessionList, models, newSession } from "./sessions.js";
import { readEvents } from "./sse.js";

const BLOCK_PERCENT = 95;
const WARN_PERCENT = 70;
const RETRY_MS = [300, 1000, 2000, 4000, 5000];
const PINNED_PX = 80;
const MODES = ["every_30_turns", "context_70_percent", "manual"];

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const number = (n) => n.toLocaleString(document.documentElement.lang || undefined);

/** A note of the answer's stream in the page's language (the server writes English). */
function noteText(note) {
  const waiting = /^waiting for the model (\d+)s$/.exec(note);
  return waiting ? t("waitingForModel", { seconds: waiting[1] }) : note;
}

export class ChatView {
  constructor(user) {
    this.user = user;
    this.session = null;
    this.stream = null;
    this.running = false;
    this.pinned = true;
    this.sessions = new SessionList();
    this.composer = new Composer({ onSend: (content, text) => this.send(content, text), onStop: () => this.stop() });

    this.title = h("h2", { class: "conv-title" });
    this.modelLabel = h("span", { class: "muted" });
    this.meterFill = h("div", { class: "meter-fill" });
    this.meter = h("div", {
      class: "meter",
      role: "meter",
      "aria-label": t("contextUsage"),
      "aria-valuemin": "0",
      "aria-valuemax": "100",
    }, this.meterFill);
    this.usage = h("span", { class: "usage" });
    this.mode = h(
      "select",
      // Enabled once a session is open: a choice made before that would have nothing to save.
      { id: "memory-mode", disabled: true, onchange: () => this.setMode() },
      MODES.map((mode) => h("option", { value: mode }, t(`mode.${mode}`))),
    );
    this.compactButton = h("button", { type: "button", onclick: () => this.compact() }, t("compact"));
    this.contextBar = h(
      "div",
      { class: "context-bar" },
      this.meter,
      this.usage,
      h("label", { for: "memory-mode" }, t("memoryMode")),
      this.mode,
      this.compactButton,
    );
    this.log = h("div", { class: "messages", role: "log", "aria-label": t("conversation"), tabindex: "0" });
    this.log.addEventListener("scroll", () => {
      this.pinned = this.log.scrollHeight - this.log.scrollTop - this.log.clientHeight < PINNED_PX;
    });
    new MutationObserver(() => {
      if (this.pinned) this.log.scrollTop = this.log.scrollHeight;
    }).observe(this.log, { childList: true, subtree: true, characterData: true });
    this.approvals = new ApprovalCards(this.log, { onDecided: () => this.afterDecision() });
    this.connection = h("p", { class: "connection", role: "status" });
    this.noticeText = h("span");
    this.notice = h(
      "div",
      { class: "notice danger", role: "alert", hidden: true },
      this.noticeText,
      h("button", { type: "button", onclick: () => this.compact() }, t("compactNow")),
    );
    this.conversation = h(
      "section",
      { class: "conversation", "aria-label": t("conversation") },
      h("header", { class: "conv-head" }, h("div", { class: "conv-title-row" }, this.title, this.modelLabel), this.contextBar),
      this.log,
      this.connection,
      this.notice,
      this.composer.el,
    );
    this.empty = h(
      "section",
      { class: "empty-state", "aria-label": t("welcome") },
      h("h2", {}, t("noSessionOpen")),
      h("p", {}, t("emptyHint")),
      h("button", { type: "button", class: "primary", onclick: () => newSession() }, t("newSession")),
      h("dl", { class: "shortcuts" }, ["Enter", "Shift+Enter", "/", "Esc", "Ctrl+K", "Alt+N"].map((key) => [
        h("dt", {}, h("kbd", {}, key)),
        h("dd", {}, t(`key.${key}`)),
      ])),
    );
    this.main = h("div", { class: "chat-main" }, this.empty);
    this.el = h("div", { class: "chat" }, this.sessions.el, this.main);
    this.keys = (event) => this.shortcut(event);
  }

  mount(container) {
    container.replaceChildren(this.el);
    document.addEventListener("keydown", this.keys);
    this.sessions.reload();
  }

  unmount() {
    this.stream?.abort();
    document.removeEventListener("keydown", this.keys);
  }

  shortcut(event) {
    if (document.querySelector("dialog[open]")) return;
    if (event.key === "Escape" && this.running) {
      event.preventDefault();
      this.stop();
    } else if ((event.ctrlKey || event.metaKey) && event.code === "KeyK") {
      event.preventDefault();
      this.sessions.focusSearch();
    } else if (event.altKey && event.code === "KeyN") {
      event.preventDefault();
      newSession();
    }
  }

  // -- opening a session -----------------------------------------------------------------------

  async open(id) {
    this.stream?.abort();
    this.stream = null;
    this.setRunning(false);
    this.sessions.setActive(id);
    const token = (this.opening = {});
    if (!id) {
      this.session = null;
      this.main.replaceChildren(this.empty);
      return;
    }
    this.main.replaceChildren(this.conversation);
    this.composer.setLoading();
    this.log.replaceChildren(h("p", { class: "muted" }, t("loading")));
    let session, messages, config, available;
    try {
      [session, messages, config, available] = await Promise.all([
        api("GET", `/chat/sessions/${id}`),
        api("GET", `/chat/sessions/${id}/messages`),
        api("GET", "/chat/configuration"),
        models().catch(() => []),
      ]);
    } catch (error) {
      if (token === this.opening) this.log.replaceChildren(h("p", { class: "msg-error", role: "alert" }, error.message));
      return;
    }
    if (token !== this.opening) return;
    this.session = session;
    const model = available.find((m) => m.id === session.modelId) || null;
    this.title.textContent = session.title;
    this.modelLabel.textContent = model ? model.displayName : session.modelId;
    if (model && !model.capabilities.includes("tool_use")) {
      this.modelLabel.textContent += ` · ${t("noTools")}`; // answers without tools; /skill still works
    }
    this.sessions.upsert(session, false);
    const selected = new Set(config.selection.skillIds);
    this.composer.setContext({
      draftKey: `youyou.draft.${this.user.id}.${id}`,
      skills: config.skills.filter((skill) => selected.has(skill.id)),
      model,
    });
    this.renderHistory(messages);
    this.approvals.showSession(session);
    this.showMemory(session.memory);
    if (session.running) this.follow(this.newStream(), null, this.liveAnswer(), true);
    this.composer.focus();
  }

  renderHistory(messages) {
    this.log.replaceChildren();
    let answer = null;
    messages.forEach((message, i) => {
      const info = { seq: message.seq, compacted: message.compacted, createdAt: message.createdAt };
      if (message.role === "assistant") {
        if (!answer) {
          answer = new Answer(info);
          this.log.append(answer.el);
        }
        // The last answer of a turn holds the calls of the rounds that had no words.
        addStoredAssistant(answer, message, messages[i + 1]?.role !== "assistant");
      } else {
        answer = null;
        this.log.append(message.role === "user" ? userMessage(message.content, info) : systemMessage(message.content, info));
      }
    });
    if (messages.length === 0) this.log.append(h("p", { class: "muted empty-log" }, t("emptyConversation")));
    this.pinned = true;
    this.log.scrollTop = this.log.scrollHeight;
  }

  async reloadHistory() {
    const id = this.session.id;
    const [session, messages] = await Promise.all([
      api("GET", `/chat/sessions/${id}`),
      api("GET", `/chat/sessions/${id}/messages`),
    ]);
    if (this.session?.id !== id) return;
    this.session = session;
    this.renderHistory(messages);
    this.approvals.showSession(session);
    this.showMemory(session.memory);
  }

  async refreshSession() {
    const id = this.session.id;
    const session = await api("GET", `/chat/sessions/${id}`);
    if (this.session?.id !== id) return;
    this.session = session;
    this.title.textContent = session.title;
    this.showMemory(session.memory);
    this.sessions.upsert(session, true);
  }

  // -- context bar and memory -------------------------------------------------------------------

  showMemory(memory) {
    this.session.memory = memory;
    const percent = memory.contextUsagePercent;
    const text = t("usage", {
      tokens: number(memory.contextTokens),
      window: number(memory.contextWindowTokens),
      percent,
    });
    this.meterFill.style.width = `${Math.min(percent, 100)}%`;
    this.meter.setAttribute("aria-valuenow", String(percent));
    this.meter.setAttribute("aria-valuetext", text);
    this.usage.textContent = text;
    this.contextBar.dataset.level = percent >= BLOCK_PERCENT ? "danger" : percent >= WARN_PERCENT ? "warn" : "ok";
    this.mode.value = memory.mode;
    this.mode.disabled = this.running;
    this.compactButton.disabled = this.running || !memory.canCompact;
    const blocked = percent >= BLOCK_PERCENT;
    this.notice.hidden = !blocked;
    this.noticeText.textContent = blocked ? t("contextFull", { percent }) : "";
    this.composer.setBlocked(blocked);
    this.placeSummary();
  }

  placeSummary() {
    this.log.querySelector(".compacted-note")?.remove();
    const memory = this.session.memory;
    if (!memory.summary) return;
    const note = summaryNote(memory);
    const compacted = this.log.querySelectorAll("article.compacted");
    if (compacted.length) compacted[compacted.length - 1].after(note);
    else this.log.prepend(note);
  }

  markCompactedThrough(seq) {
    for (const article of this.log.querySelectorAll("article[data-seq]")) {
      if (Number(article.dataset.seq) <= seq) markCompacted(article);
    }
  }

  async setMode() {
    const session = this.session;
    if (!session) return;
    const previous = session.memory;
    this.mode.disabled = true;
    try {
      const updated = await api("PUT", `/chat/sessions/${session.id}/memory`, { mode: this.mode.value });
      if (this.session !== session) return;
      this.session = updated;
      if (updated.memory.compactedMessageCount !== previous.compactedMessageCount) await this.reloadHistory();
      else this.showMemory(updated.memory);
      notify(t("modeSaved", { mode: t(`mode.${updated.memory.mode}`) }));
    } catch (error) {
      this.mode.value = previous.mode;
      notify(error.message, "error");
    } finally {
      this.mode.disabled = this.running || !this.session;
    }
  }

  async compact() {
    const session = this.session;
    this.compactButton.disabled = true;
    this.compactButton.textContent = t("compacting");
    try {
      await api("POST", `/chat/sessions/${session.id}/memory:compact`);
      if (this.session === session) await this.reloadHistory();
      notify(t("compactedDone"));
    } catch (error) {
      notify(error.message, "error");
    } finally {
      this.compactButton.textContent = t("compact");
      if (this.session) this.showMemory(this.session.memory);
    }
  }

  // -- turns --------------------------------------------------------------------------------------

  setRunning(running) {
    this.running = running;
    this.composer.setRunning(running);
    this.log.setAttribute("aria-busy", String(running));
    this.mode.disabled = running || !this.session;
    this.compactButton.disabled = running || !this.session?.memory.canCompact;
  }

  liveAnswer() {
    const answer = new Answer();
    answer.el.classList.add("streaming");
    this.log.querySelector(".empty-log")?.remove();
    this.log.append(answer.el);
    return answer;
  }

  newStream() {
    this.stream?.abort();
    this.stream = new AbortController();
    return this.stream;
  }

  /** Sends; true once the server has accepted the message (the composer then forgets it). */
  async send(content, text) {
    const session = this.session;
    if (!session || this.running || session.memory.contextUsagePercent >= BLOCK_PERCENT) return false;
    this.log.querySelector(".empty-log")?.remove();
    const user = userMessage(content);
    this.pinned = true;
    this.log.append(user);
    const answer = this.liveAnswer();
    answer.user = user;
    answer.sent = text;
    this.setRunning(true);
    const controller = this.newStream();
    let response;
    try {
      response = await request("POST", `/chat/sessions/${session.id}/messages`, {
        body: { content },
        signal: controller.signal,
      });
    } catch (error) {
      user.remove();
      answer.el.remove();
      if (controller.signal.aborted) return false;
      this.setRunning(false);
      notify(error.message, "error");
      return false;
    }
    this.sessions.upsert({ ...session, running: true, updatedAt: new Date().toISOString() }, true);
    this.follow(controller, response, answer, false);
    return true;
  }

  async stop() {
    if (!this.running || !this.session) return;
    this.composer.stopping();
    try {
      await api("POST", `/chat/sessions/${this.session.id}/cancel`);
    } catch (error) {
      notify(error.message, "error");
    }
  }

  /** Reads the turn's frames until it ends, re-attaching after Last-Event-ID when the
   * connection drops. `replay` is a follow from the first frame of a turn already running. */
  async follow(controller, response, answer, replay) {
    const id = this.session.id;
    const { signal } = controller;
    let lastId = 0;
    let ended = false;
    let attempt = 0;
    while (!ended && !signal.aborted) {
      try {
        if (!response) {
          response = await request("GET", `/chat/sessions/${id}/stream`, {
            headers: { "Last-Event-ID": String(lastId) },
            signal,
          });
          if (response.status === 204) break; // the turn ended while we were away
        }
        this.connection.textContent = "";
        for await (const frame of readEvents(response)) {
          attempt = 0;
          this.connection.textContent = frame.note === undefined ? "" : noteText(frame.note);
          if (frame.note !== undefined) continue;
          if (frame.id !== null) lastId = frame.id;
          ended = this.frame(frame, answer, replay) || ended;
        }
      } catch (error) {
        if (signal.aborted) return;
        if (error instanceof ApiError) {
          answer.error(error.message);
          ended = true;
        }
      }
      response = null;
      if (!ended && !signal.aborted) {
        this.connection.textContent = t("reconnecting");
        await sleep(RETRY_MS[Math.min(attempt++, RETRY_MS.length - 1)]);
      }
    }
    if (signal.aborted) return;
    this.connection.textContent = "";
    answer.finish();
    this.setRunning(false);
    try {
      if (ended) await this.refreshSession();
      else await this.reloadHistory();
    } catch (error) {
      notify(error.message, "error");
    }
  }

  /** Applies one frame; true when it ends the turn. */
  frame({ event, data }, answer, replay) {
    switch (event) {
      case "turn_started":
        if (answer.user) answer.user.dataset.seq = String(data.userMessageSeq);
        if (replay) this.dropAfter(data.userMessageSeq, answer);
        return false;
      case "text_delta":
        answer.text(data.text);
        return false;
      case "reasoning_delta":
        answer.reasoning(data.text);
        return false;
      case "tool_call_start":
        answer.toolStart(data);
        return false;
      case "tool_call_end":
        answer.toolEnd(data);
        return false;
      case "tool_approval_requested":
        this.approvals.request(data);
        this.sessions.upsert({ ...this.session, running: true, awaitingApproval: true }, false);
        return false;
      case "tool_approval_decided":
        this.approvals.decided(data.callId);
        this.sessions.upsert({ ...this.session, running: true, awaitingApproval: this.approvals.waiting }, false);
        return false;
      case "context_compacted":
        this.markCompactedThrough(data.replacesThroughSeq);
        return false;
      case "turn_complete":
        if (data.usage) answer.usage(data.usage);
        if (data.memory) this.showMemory(data.memory);
        return true;
      case "turn_cancelled":
        answer.incomplete();
        return true;
      case "error":
        this.turnError(answer, data);
        return true;
      default:
        return false;
    }
  }

  /** A decision of this tab: a turn no process ran (its server restarted) goes on now. */
  afterDecision() {
    if (!this.running && this.session && !this.approvals.waiting) {
      this.setRunning(true);
      this.follow(this.newStream(), null, this.liveAnswer(), true);
    }
  }

  /** Stored messages of the running turn are shown again by its replay: drop them. */
  dropAfter(seq, answer) {
    for (const article of this.log.querySelectorAll("article[data-seq]")) {
      if (Number(article.dataset.seq) > seq && article !== answer.el) article.remove();
    }
  }

  turnError(answer, { code, message }) {
    if (code === "CHAT_CONTEXT_LIMIT_REACHED") {
      // The server did not keep the message: give it back to the composer.
      answer.user?.remove();
      answer.el.remove();
      if (answer.sent) this.composer.restore(answer.sent);
      notify(message, "error");
      return;
    }
    answer.error(message);
    answer.incomplete();
  }
}
