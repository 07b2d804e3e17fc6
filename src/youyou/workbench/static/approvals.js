// @ts-check
// Approval cards: a tool call that waits for the session owner's decision, shown in the
// conversation with the tool, its arguments (pretty JSON), Approve and Deny with an optional
// reason. Cards come from the session's pendingApprovals (on open and reload) and from the
// turn's tool_approval_requested frames (every tab following the turn gets them), and go on
// tool_approval_decided, the decision's answer, or a 409 (decided elsewhere, cancelled or
// timed out: the card is replaced by a note saying so). A page with cards but no stream of
// their turn (its server restarted; the turn waits in the database) hears of no frame: it
// re-reads the session's pendingApprovals every POLL_MS and when the window gets focus.
// Only a click (or Space/Enter on a focused button) decides: the buttons are outside any
// form, so Enter in the composer never reaches them, and Esc inside a card does nothing.

import { ApiError, api } from "./api.js";
import { formatTime, h, notify } from "./dom.js";
import { addMessages, t } from "./i18n.js";

/** How often cards without a stream of their turn re-read what still waits. */
const POLL_MS = 3000;

addMessages({
  "zh-CN": {
    approvalNeeded: "需要审批：{name}",
    approvalAsk: "允许这个工具调用吗？",
    approvalFrom: "来自 MCP 服务器 {server}",
    approvalUntil: "等待决定至 {time}，超时视为拒绝",
    approvalReason: "理由（可选）",
    approve: "批准",
    deny: "拒绝",
    approvalSent: "已{decision}：{name}",
    approvalTaken: "这个调用已不再等待决定：已在别处决定、已取消或已超时。",
    awaitingApproval: "等待审批",
    "decision.approve": "批准",
    "decision.deny": "拒绝",
    approvalAudit: "{who} {decision} · {time}",
    approvalTimeout: "超时",
  },
  en: {
    approvalNeeded: "Approval needed: {name}",
    approvalAsk: "Allow this tool call?",
    approvalFrom: "from MCP server {server}",
    approvalUntil: "Waits until {time}; no decision by then denies it",
    approvalReason: "Reason (optional)",
    approve: "Approve",
    deny: "Deny",
    approvalSent: "{decision}: {name}",
    approvalTaken: "This call no longer waits: it was decided elsewhere, cancelled, or its time ran out.",
    awaitingApproval: "Waiting for approval",
    "decision.approve": "Approved",
    "decision.deny": "Denied",
    approvalAudit: "{decision} by {who} · {time}",
    approvalTimeout: "the timeout",
  },
});

function pretty(args) {
  try {
    return JSON.stringify(args ?? {}, null, 2);
  } catch {
    return String(args);
  }
}

/** Who decided a stored call, when and why (the history's audit), for its tool card. */
export function approvalNote(approval) {
  if (!approval?.decision) return null;
  const who = approval.decidedBy === "timeout" ? t("approvalTimeout") : approval.decidedBy;
  const decision = t(`decision.${approval.decision}`);
  const text = t("approvalAudit", { who, decision, time: formatTime(approval.decidedAt) });
  const reason = approval.decisionReason ? `: ${approval.decisionReason}` : "";
  return h("span", { class: `approval-note ${approval.decision}` }, text + reason);
}

export class ApprovalCards {
  /** `log`: the conversation the cards go in; `onDecided()`: after this tab decided one;
   * `live()`: whether a stream of the session's turn brings its decisions to this page;
   * `onGone(session)`: cards went without a frame saying so; `session` as re-read (null
   * when that failed). */
  constructor(log, { onDecided, live, onGone }) {
    this.log = log;
    this.onDecided = onDecided;
    this.live = live;
    this.onGone = onGone;
    this.sessionId = null;
    this.cards = new Map(); // callId → card element
    /** @type {ReturnType<typeof setInterval> | undefined} */
    this.poller = undefined;
    this.focused = () => this.refresh();
  }

  get waiting() {
    return this.cards.size > 0;
  }

  start() {
    this.poller = setInterval(() => this.refresh(), POLL_MS);
    window.addEventListener("focus", this.focused);
  }

  stop() {
    clearInterval(this.poller);
    window.removeEventListener("focus", this.focused);
  }

  /** Without a stream of their turn, the cards learn from the session what still waits: a
   * call decided in another tab or on another device, a cancelled turn, a request past its
   * time. `after409`: a card just went that way. Quiet on failure: the connection banner
   * tells when the server is away. */
  async refresh(after409 = false) {
    const id = this.sessionId;
    if (!id || this.live() || (!after409 && (!this.waiting || document.hidden))) return;
    let session;
    try {
      session = await api("GET", `/chat/sessions/${id}`);
    } catch {
      if (after409) this.onGone(null);
      return;
    }
    if (id !== this.sessionId || this.live()) return;
    if (this.sync(session) || after409) this.onGone(session);
  }

  /** The cards of calls `session` no longer lists as waiting go; whether any did. */
  sync(session) {
    const pending = new Set((session.pendingApprovals || []).map((/** @type {any} */ p) => p.callId));
    const gone = [...this.cards.keys()].filter((callId) => !pending.has(callId));
    for (const callId of gone) this.decided(callId);
    return gone.length > 0;
  }

  /** Another session is being opened: no card until it has loaded. */
  clear() {
    for (const card of this.cards.values()) card.remove();
    this.cards.clear();
    this.sessionId = null;
  }

  /** A session was (re)drawn: its waiting calls, from GET /chat/sessions/{id}. */
  showSession(session) {
    for (const card of this.cards.values()) card.remove();
    this.cards.clear();
    this.sessionId = session.id;
    for (const pending of session.pendingApprovals || []) this.request(pending);
  }

  /** A call waits (a frame, or a pending approval): its card, once, at the end of the log. */
  request(pending) {
    const card = this.cards.get(pending.callId) || this.card(pending);
    this.cards.set(pending.callId, card);
    this.log.append(card);
  }

  /** The call was decided, here or anywhere: its card goes. */
  decided(callId) {
    this.cards.get(callId)?.remove();
    this.cards.delete(callId);
  }

  card(pending) {
    const { callId, toolName, serverId, reason, expiresAt } = pending;
    const why = h("input", { type: "text", maxlength: 2000, class: "approval-reason", placeholder: t("approvalReason") });
    const approve = h("button", { type: "button", class: "primary approve" }, t("approve"));
    const deny = h("button", { type: "button", class: "danger deny" }, t("deny"));
    const card = h(
      "section",
      {
        class: "approval-card",
        role: "group",
        "aria-label": t("approvalNeeded", { name: toolName }),
        dataset: { callId },
      },
      h("h3", {}, t("approvalAsk"), " ", h("code", { class: "tool-name" }, toolName)),
      serverId || reason
        ? h("p", { class: "muted approval-why" }, [serverId ? t("approvalFrom", { server: serverId }) : null, reason].filter(Boolean).join(" · "))
        : null,
      h("div", { class: "tool-label" }, t("arguments")),
      h("pre", { class: "approval-args" }, pretty(pending.arguments)),
      h("label", { class: "approval-reason-label" }, t("approvalReason"), why),
      h("div", { class: "actions" }, approve, deny),
      expiresAt ? h("p", { class: "muted approval-until" }, t("approvalUntil", { time: formatTime(expiresAt) })) : null,
    );
    card.addEventListener("keydown", (event) => {
      if (event.key === "Escape") event.stopPropagation(); // Esc must not stop the turn from here
      if (event.key === "Enter" && event.target === why) event.preventDefault(); // no decision by Enter
    });
    const decide = async (decision) => {
      approve.disabled = deny.disabled = true;
      const body = { decision };
      if (why.value.trim()) body.reason = why.value.trim();
      try {
        await api("POST", `/chat/sessions/${this.sessionId}/approvals/${encodeURIComponent(callId)}`, body);
        notify(t("approvalSent", { decision: t(`decision.${decision}`), name: toolName }));
      } catch (error) {
        if (!(error instanceof ApiError) || error.status !== 409) {
          approve.disabled = deny.disabled = false;
          notify(error.message, "error");
          return;
        }
        // decided elsewhere, cancelled or timed out: say so where the card was
        card.replaceWith(h("p", { class: "approval-gone muted", role: "status" }, t("approvalTaken")));
        this.cards.delete(callId);
        this.refresh(true);
        return;
      }
      this.decided(callId);
      this.onDecided();
    };
    approve.addEventListener("click", () => decide("approve"));
    deny.addEventListener("click", () => decide("deny"));
    return card;
  }
}
