// @ts-check
// The Administration page's usage table: every account's turns, tokens and cost (when model
// prices are configured), summed by the server (GET /admin/usage) over an optional period of
// whole days in the browser's time zone. A period the server refuses is a toast.

import { api } from "./api.js";
import { h, notify } from "./dom.js";
import { language, t } from "./i18n.js";

/** The start of `day` (yyyy-mm-dd) in the browser's time zone as an ISO-8601 instant; with
 * `next`, the start of the day after, so that a "to" day counts whole (the bound is excluded).
 * @param {string} day @param {boolean} [next] */
function startOf(day, next = false) {
  const [year, month, date] = day.split("-").map(Number);
  return new Date(year, month - 1, date + (next ? 1 : 0)).toISOString();
}

/** @param {number} n */
const count = (n) => n.toLocaleString(language());

/** @param {number | null} cost */
const money = (cost) => (cost === null || cost === undefined ? "—" : cost.toFixed(6));

/** One account (or all of them) as a table row.
 * @param {string} name @param {{turns: number, inputTokens: number, outputTokens: number, cost: number | null}} usage */
function row(name, usage) {
  const numbers = [count(usage.turns), count(usage.inputTokens), count(usage.outputTokens), money(usage.cost)];
  return h("tr", {}, h("th", { scope: "row" }, name), ...numbers.map((text) => h("td", { class: "num" }, text)));
}

export class UsageTable {
  constructor() {
    this.from = h("input", { type: "date", "aria-label": t("usageFrom") });
    this.to = h("input", { type: "date", "aria-label": t("usageTo") });
    this.rows = h("tbody");
    this.total = h("tfoot");
    const heads = ["usageTurns", "usageInput", "usageOutput", "usageCost"].map((key) => h("th", { scope: "col", class: "num" }, t(key)));
    this.el = h(
      "section",
      { "aria-labelledby": "admin-usage" },
      h("h3", { id: "admin-usage" }, t("usageTitle")),
      h("p", { class: "muted" }, t("usageHint")),
      h(
        "form",
        { class: "card-head", "aria-label": t("usagePeriod"), onsubmit: (event) => { event.preventDefault(); this.load(); } },
        h("label", {}, t("usageFrom"), " ", this.from),
        h("label", {}, t("usageTo"), " ", this.to),
        h("button", { type: "submit" }, t("usageShow")),
      ),
      h(
        "div",
        { class: "table-wrap" },
        h(
          "table",
          { class: "usage-table", "aria-label": t("usageTable") },
          h("thead", {}, h("tr", {}, h("th", { scope: "col" }, t("usageAccount")), ...heads)),
          this.rows,
          this.total,
        ),
      ),
    );
  }

  /** The server's sums for the chosen period (an empty field leaves that side open). */
  async load() {
    const query = new URLSearchParams();
    if (this.from.value) query.set("since", startOf(this.from.value));
    if (this.to.value) query.set("until", startOf(this.to.value, true));
    const period = query.toString();
    let answer;
    try {
      answer = await api("GET", period ? `/admin/usage?${period}` : "/admin/usage");
    } catch (error) {
      notify(error.message, "error");
      return;
    }
    this.rows.replaceChildren(...answer.users.map((account) => row(account.username, account.usage)));
    this.total.replaceChildren(row(t("usageTotal"), answer.total));
  }
}
