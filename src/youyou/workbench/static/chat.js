// @ts-check
// The chat page: session list, conversation, context bar and composer. A sent message is
// answered by a Server-Sent Event stream; when the connection drops the page re-attaches to
// the running turn with Last-Event-ID, and opening a session whose turn is running replays it
// (with Stop, and saying so when the turn was started in another tab or on another device).
//
// Every control of the page is derived from the view's state in one place, `render()`: the
// session (null while none is open or it loads), the running turn (null, or where it was
// started and whether a stop was asked), what is busy (mode switch, compaction), the drawer
// and the connection. Handlers change the state and call `render()`; nothing else sets
// `disabled` or `hidden`.

import { ApiError, api, isUnreachable, request } from "./api.js";
import { ApprovalCards } from "./approvals.js";
import { connection, onConnection } from "./connection.js";
import { h, notify } from "./dom.js";
import { t } from "./i18n.js";
import { Composer } from "./composer.js";
import { Answer, addStoredAssistant, contentOf, markCompacted, summaryNote, systemMessage, userMessage } from "./messages.js";
import { SessionList, models, newSession } from "./sessions.js";
import { sessionMenu } from "./session_actions.js";
import { settings } from "./settings.js";
import { readEvents } from "./sse.js";

const RETRY_MS = [300, 1000, 2000, 4000, 5000];
const PINNED_PX = 80;
/** The width below which the session list is a drawer (the same as in app.css). */
const PHONE = window.matchMedia("(max-width: 700px)");

/** @param {number} ms */
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
/** @param {number} n */
const number = (n) => n.toLocaleString(document.documentElement.lang || undefined);
/** sessionStorage marks the turns this tab started: it survives a reload of the tab but is
 * not shared with other tabs, so a replayed turn without the mark was started elsewhere.
 * @param {string} id */
const turnKey = (id) => `youyou.turn.${id}`;

/** A note of the answer's stream in the page's language (the server writes English).
 * @param {string} note */
function noteText(note) {
  const waiting = /^waiting for the model (\d+)s$/.exec(note);
  return waiting ? t("waitingForModel", { seconds: waiting[1] }) : note;
}

/** The share of the window in use, not capped: the numbers and the percentage agree.
 * @param {{contextTokens: number, contextWindowTokens: number}} memory */
export function usagePercent(memory) {
  if (!memory.contextWindowTokens) return 100;
  return Math.round((memory.contextTokens * 100) / memory.contextWindowTokens);
}

/** @typedef {{where: "here" | "elsewhere", stopping: boolean}} Turn */

export class ChatView {
  /** @param {{id: string}} user */
  constructor(user) {
    this.user = user;
    /** @type {any} the open session, null while none is open or it loads */
    this.session = null;
    /** @type {Turn | null} */
    this.turn = null;
    this.busy = { mode: false, compact: false, cancel: false };
    this.drawerOpen = false;
    /** @type {AbortController | null} */
    this.stream = null;
    /** @type {object | null} */
    this.opening = null;
    this.pinned = true;
    this.sessions = new SessionList({ onChange: (session) => this.sessionChanged(session) });
    this.composer = new Composer({ onSend: (content, text) => this.send(content, text), onStop: () => this.stop() });

    this.drawerButtons = [this.drawerButton(), this.drawerButton()];
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
    const { memory } = settings();
    this.mode = h(
      "select",
      { id: "memory-mode", onchange: () => this.setMode() },
      memory.modes.map((mode) => h("option", { value: mode }, modeLabel(mode))),
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
    this.menu = sessionMenu({
      session: () => this.session,
      renamed: (session) => this.sessionChanged(session, true),
      deleted: (id) => {
        this.sessions.remove(id);
        location.hash = "#/chat";
      },
    });
    this.log = h("div", { class: "messages", role: "log", "aria-label": t("conversation"), tabindex: "0" });
    this.log.addEventListener("scroll", () => {
      this.pinned = this.log.scrollHeight - this.log.scrollTop - this.log.clientHeight < PINNED_PX;
    });
    this.log.addEventListener("click", (event) => this.messageAction(event));
    new MutationObserver(() => {
      if (this.pinned) this.log.scrollTop = this.log.scrollHeight;
    }).observe(this.log, { childList: true, subtree: true, characterData: true });
    this.approvals = new ApprovalCards(this.log, {
      onDecided: () => this.afterDecision(),
      live: () => this.turn !== null,
      onGone: (session) => this.approvalsGone(session),
    });
    this.connection = h("p", { class: "connection", role: "status" });
    this.elsewhere = h("p", { class: "running-elsewhere", role: "status" }, t("runningElsewhere"));
    this.noticeText = h("span");
    this.notice = h(
      "div",
      { class: "notice danger", role: "alert" },
      this.noticeText,
      h("button", { type: "button", onclick: () => this.compact() }, t("compactNow")),
    );
    this.conversation = h(
      "section",
      { class: "conversation", "aria-label": t("conversation") },
      h(
        "header",
        { class: "conv-head" },
        h("div", { class: "conv-title-row" }, this.drawerButtons[0], this.title, this.modelLabel, h("span", { class: "spacer" }), this.menu.el),
        this.contextBar,
      ),
      this.log,
      this.connection,
      this.elsewhere,
      this.notice,
      this.composer.el,
    );
    this.empty = h(
      "section",
      { class: "empty-state", "aria-label": t("welcome") },
      this.drawerButtons[1],
      h("h2", {}, t("noSessionOpen")),
      h("p", {}, t("emptyHint")),
      h("button", { type: "button", class: "primary", onclick: () => newSession() }, t("newSession")),
      h("dl", { class: "shortcuts" }, ["Enter", "Shift+Enter", "/", "Esc", "Ctrl+K", "Alt+N"].map((key) => [
        h("dt", {}, h("kbd", {}, key)),
        h("dd", {}, t(`key.${key}`)),
      ])),
    );
    this.main = h("div", { class: "chat-main" }, this.empty);
    this.el = h(
      "div",
      { class: "chat" },
      this.sessions.el,
      h("div", { class: "drawer-backdrop", onclick: () => this.setDrawer(false) }),
      this.main,
    );
    this.sessions.el.addEventListener("click", (event) => {
      if (event.target instanceof Element && event.target.closest("a[data-id]")) this.setDrawer(false);
    });
    /** @param {KeyboardEvent} event */
    this.keys = (event) => this.shortcut(event);
    this.unsubscribe = () => {};
    this.render();
  }

  drawerButton() {
    return h("button", {
      type: "button",
      class: "ghost drawer-toggle",
      "aria-controls": "session-drawer",
      "aria-label": t("openSessions"),
      onclick: () => this.setDrawer(!this.drawerOpen),
    }, "☰");
  }

  /** The controls of the page, from the state alone. */
  render() {
    const session = this.session;
    // cards without a stream: a turn no process runs waits for them, and Stop cancels it
    const running = this.turn !== null || this.approvals.waiting;
    const percent = session ? usagePercent(session.memory) : 0;
    const blocked = percent >= settings().memory.blockPercent;
    this.composer.render({
      ready: Boolean(session),
      running,
      stopping: Boolean(this.turn?.stopping) || this.busy.cancel,
      blocked,
      offline: connection() === "unreachable",
    });
    this.log.setAttribute("aria-busy", String(running));
    this.mode.disabled = !session || running || this.busy.mode;
    this.compactButton.disabled = !session || running || this.busy.compact || !session.memory.canCompact;
    this.compactButton.textContent = this.busy.compact ? t("compacting") : t("compact");
    this.elsewhere.hidden = this.turn?.where !== "elsewhere";
    this.notice.hidden = !blocked;
    this.noticeText.textContent = blocked ? t("contextFull", { percent }) : "";
    this.menu.render({ ready: Boolean(session), running });
    this.el.classList.toggle("drawer-open", this.drawerOpen);
    // the open drawer is modal: what it covers can be neither clicked nor tabbed to
    this.main.inert = this.drawerOpen && PHONE.matches;
    for (const button of this.drawerButtons) button.setAttribute("aria-expanded", String(this.drawerOpen));
  }

  /** @param {boolean} open */
  setDrawer(open) {
    if (open === this.drawerOpen) return;
    this.drawerOpen = open;
    this.render();
    if (open) this.sessions.focusSearch();
  }

  /** @param {HTMLElement} container */
  mount(container) {
    container.replaceChildren(this.el);
    document.addEventListener("keydown", this.keys);
    this.unsubscribe = onConnection(() => this.render());
    this.sessions.reload();
    this.sessions.start();
    this.approvals.start();
  }

  unmount() {
    this.stream?.abort();
    this.sessions.stop();
    this.approvals.stop();
    this.unsubscribe();
    document.removeEventListener("keydown", this.keys);
  }

  /** @param {KeyboardEvent} event */
  shortcut(event) {
    if (document.querySelector("dialog[open]")) return;
    if (event.key === "Escape" && this.drawerOpen) {
      event.preventDefault();
      this.setDrawer(false);
    } else if (event.key === "Escape" && (this.turn || this.approvals.waiting)) {
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

  /** @param {string | null} id */
  async open(id) {
    this.stream?.abort();
    this.stream = null;
    this.turn = null;
    this.session = null;
    this.approvals.clear();
    this.drawerOpen = false;
    this.sessions.setActive(id);
    const token = (this.opening = {});
    if (!id) {
      this.main.replaceChildren(this.empty);
      this.render();
      return;
    }
    this.main.replaceChildren(this.conversation);
    this.composer.setLoading();
    this.render();
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
      if (token === this.opening) this.log.replaceChildren(h("p", { class: "msg-error", role: "alert" }, errorText(error)));
      return;
    }
    if (token !== this.opening) return;
    this.session = session;
    const model = available.find((/** @type {any} */ m) => m.id === session.modelId) || null;
    this.title.textContent = session.title;
    this.title.title = session.title;
    this.modelLabel.textContent = model ? model.displayName : session.modelId;
    if (model && !model.capabilities.includes("tool_use")) {
      this.modelLabel.textContent += ` · ${t("noTools")}`; // answers without tools; /skill still works
    }
    this.sessions.upsert(session);
    const selected = new Set(config.selection.skillIds);
    this.composer.setContext({
      draftKey: `youyou.draft.${this.user.id}.${id}`,
      skills: config.skills.filter((/** @type {any} */ skill) => selected.has(skill.id)),
      model,
    });
    this.renderHistory(messages);
    this.approvals.showSession(session);
    this.showMemory(session.memory);
    if (session.running) this.attach();
    else sessionStorage.removeItem(turnKey(id));
    this.composer.focus();
  }

  /** @param {any[]} messages */
  renderHistory(messages) {
    this.log.replaceChildren();
    /** @type {Answer | null} */
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
    this.approvals.sync(session); // a cancelled turn's cards go; a parked turn's stay
    this.sessionChanged(session, true);
  }

  /** A newer state of a session: from the list's polling, a rename or the end of a turn. A
   * turn of the open session started elsewhere is followed here.
   * @param {any} session @param {boolean} [own] from this page (else from the list) */
  sessionChanged(session, own = false) {
    if (own) this.sessions.upsert(session);
    if (!this.session || session.id !== this.session.id) return;
    this.title.textContent = session.title;
    this.title.title = session.title;
    if (own) {
      this.session = session;
      this.showMemory(session.memory);
    } else if (session.running && !this.turn && !this.log.querySelector(".msg.streaming")) {
      this.attach();
    }
  }

  // -- context bar and memory -------------------------------------------------------------------

  /** @param {any} memory */
  showMemory(memory) {
    this.session.memory = memory;
    const percent = usagePercent(memory);
    const text = t("usage", {
      tokens: number(memory.contextTokens),
      window: number(memory.contextWindowTokens),
      percent,
    });
    const { blockPercent, warnPercent } = settings().memory;
    this.meterFill.style.width = `${Math.min(percent, 100)}%`;
    this.meter.setAttribute("aria-valuenow", String(Math.min(percent, 100)));
    this.meter.setAttribute("aria-valuetext", text);
    this.usage.textContent = text;
    this.contextBar.dataset.level = percent >= blockPercent ? "danger" : percent >= warnPercent ? "warn" : "ok";
    this.mode.value = memory.mode;
    this.placeSummary();
    this.render();
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

  /** @param {number} seq */
  markCompactedThrough(seq) {
    for (const article of this.log.querySelectorAll("article[data-seq]")) {
      if (article instanceof HTMLElement && Number(article.dataset.seq) <= seq) markCompacted(article);
    }
  }

  async setMode() {
    const session = this.session;
    if (!session) return;
    const previous = session.memory;
    const chosen = this.mode.value;
    this.busy.mode = true;
    this.render();
    try {
      const updated = await api("PUT", `/chat/sessions/${session.id}/memory`, { mode: chosen });
      if (this.session !== session) return;
      this.session = updated;
      if (updated.memory.compactedMessageCount !== previous.compactedMessageCount) await this.reloadHistory();
      else this.showMemory(updated.memory);
      notify(t("modeSaved", { mode: modeLabel(updated.memory.mode) }));
    } catch (error) {
      this.mode.value = previous.mode;
      notify(errorText(error), "error");
    } finally {
      this.busy.mode = false;
      this.render();
    }
  }

  async compact() {
    const session = this.session;
    if (!session) return;
    this.busy.compact = true;
    this.render();
    try {
      await api("POST", `/chat/sessions/${session.id}/memory:compact`);
      if (this.session === session) await this.reloadHistory();
      notify(t("compactedDone"));
    } catch (error) {
      notify(errorText(error), "error");
    } finally {
      this.busy.compact = false;
      this.render();
    }
  }

  // -- per-message actions ----------------------------------------------------------------------

  /** Retry (an answer that failed or did not finish: its question is sent again as a new turn)
   * and Edit & resend (the question goes back into the composer).
   * @param {MouseEvent} event */
  messageAction(event) {
    const button = event.target instanceof Element ? event.target.closest("button[data-action]") : null;
    if (!(button instanceof HTMLElement)) return;
    const article = button.closest("article");
    if (button.dataset.action === "edit" && article) {
      const content = contentOf(article);
      if (content) this.composer.edit(textOf(content));
    } else if (button.dataset.action === "retry" && article) {
      let question = article.previousElementSibling;
      while (question && !question.matches("article.msg.user")) question = question.previousElementSibling;
      const content = question && contentOf(question);
      if (content) this.send(content, textOf(content));
    }
  }

  // -- turns --------------------------------------------------------------------------------------

  liveAnswer() {
    const answer = new Answer();
    answer.live();
    this.log.querySelector(".empty-log")?.remove();
    this.log.append(answer.el);
    return answer;
  }

  /** Follows the session's running turn from its first frame, with Stop. */
  attach() {
    const id = this.session.id;
    this.turn = { where: sessionStorage.getItem(turnKey(id)) ? "here" : "elsewhere", stopping: false };
    this.stream?.abort();
    this.stream = new AbortController();
    this.render();
    this.follow(this.stream, null, this.liveAnswer(), true);
  }

  /** Sends; true once the server has accepted the message (the composer then forgets it). A
   * refused send leaves whatever this page follows alone.
   * @param {any} content @param {string} text */
  async send(content, text) {
    const session = this.session;
    if (!session || this.turn || usagePercent(session.memory) >= settings().memory.blockPercent) return false;
    this.log.querySelector(".empty-log")?.remove();
    const user = userMessage(content, { createdAt: new Date().toISOString() });
    this.pinned = true;
    this.log.append(user);
    const answer = this.liveAnswer();
    answer.user = user;
    answer.sent = text;
    this.turn = { where: "here", stopping: false };
    this.render();
    const controller = new AbortController();
    this.stream = controller;
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
      this.turn = null;
      this.render();
      if (error instanceof ApiError && error.code === "TURN_BUSY") {
        notify(t("turnBusy"));
        this.attach();
      } else if (error instanceof ApiError && error.code === "CHAT_CONTEXT_LIMIT_REACHED") {
        notify(t("contextLimitRefused"), "error");
      } else if (!isUnreachable(error)) {
        notify(errorText(error), "error"); // unreachable: the banner says it, the draft stays
      }
      return false;
    }
    sessionStorage.setItem(turnKey(session.id), "1");
    this.sessions.upsert({ ...session, running: true, updatedAt: new Date().toISOString() });
    this.follow(controller, response, answer, false);
    return true;
  }

  async stop() {
    if (!this.turn && this.approvals.waiting) return this.cancelStopped();
    if (!this.turn || !this.session) return;
    this.turn.stopping = true;
    this.render();
    try {
      await api("POST", `/chat/sessions/${this.session.id}/cancel`);
    } catch (error) {
      if (this.turn) this.turn.stopping = false;
      this.render();
      notify(errorText(error), "error");
    }
  }

  /** Stop for cards without a stream: the turn they belong to runs nowhere (its server
   * restarted), so the cancel ends it on the server; its calls get the cancelled result. */
  async cancelStopped() {
    const session = this.session;
    if (!session || this.busy.cancel) return;
    this.busy.cancel = true;
    this.render();
    try {
      await api("POST", `/chat/sessions/${session.id}/cancel`);
      if (this.session?.id === session.id) await this.reloadHistory();
    } catch (error) {
      notify(errorText(error), "error");
    } finally {
      this.busy.cancel = false;
      this.render();
    }
  }

  /** Cards went without a frame (decided elsewhere, cancelled, timed out): the controls
   * follow, and a turn that goes on elsewhere is followed here. A note left by a card that
   * answered 409 stays until the history is next drawn.
   * @param {any} session as re-read, null when that failed */
  approvalsGone(session) {
    if (!session) return this.render();
    this.sessionChanged(session, true);
    if (this.turn || this.approvals.waiting) return;
    if (session.running) this.attach();
    else if (!this.log.querySelector(".approval-gone")) {
      this.reloadHistory().catch((error) => notify(errorText(error), "error"));
    }
  }

  /** Reads the turn's frames until it ends, re-attaching after Last-Event-ID when the
   * connection drops. `replay` is a follow from the first frame of a turn already running.
   * @param {AbortController} controller @param {Response | null} response
   * @param {Answer} answer @param {boolean} replay */
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
        if (error instanceof ApiError && !isUnreachable(error)) {
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
    sessionStorage.removeItem(turnKey(id));
    this.turn = null;
    this.render();
    try {
      if (ended) await this.refreshSession();
      else await this.reloadHistory();
    } catch (error) {
      notify(errorText(error), "error");
    }
  }

  /** Applies one frame; true when it ends the turn.
   * @param {{event: string, data: any}} frame @param {Answer} answer @param {boolean} replay */
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
        this.sessions.upsert({ ...this.session, running: true, awaitingApproval: true });
        return false;
      case "tool_approval_decided":
        this.approvals.decided(data.callId);
        this.sessions.upsert({ ...this.session, running: true, awaitingApproval: this.approvals.waiting });
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
    if (!this.turn && this.session && !this.approvals.waiting) this.attach();
  }

  /** Stored messages of the running turn are shown again by its replay: drop them.
   * @param {number} seq @param {Answer} answer */
  dropAfter(seq, answer) {
    for (const article of this.log.querySelectorAll("article[data-seq]")) {
      if (article instanceof HTMLElement && Number(article.dataset.seq) > seq && article !== answer.el) article.remove();
    }
  }

  /** @param {Answer} answer @param {{code: string, message: string}} error */
  turnError(answer, { code, message }) {
    if (code === "CHAT_CONTEXT_LIMIT_REACHED") {
      // The server did not keep the message: give it back to the composer.
      answer.user?.remove();
      answer.el.remove();
      if (answer.sent) this.composer.restore(answer.sent);
      notify(t("contextLimitRefused"), "error");
      return;
    }
    answer.error(message);
    answer.incomplete();
  }
}

/** @param {string} mode */
function modeLabel(mode) {
  const { memory } = settings();
  return t(`mode.${mode}`, { turns: memory.everyTurns, percent: memory.contextPercent });
}

/** @param {unknown} error */
function errorText(error) {
  return error instanceof Error ? error.message : String(error);
}

/** The text of a message's content (blocks or a string).
 * @param {any} content @returns {string} */
function textOf(content) {
  if (typeof content === "string") return content;
  return content.filter((/** @type {any} */ b) => b.type === "text").map((/** @type {any} */ b) => b.text).join("\n");
}
