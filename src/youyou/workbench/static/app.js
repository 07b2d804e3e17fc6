// @ts-check
// Start-up and navigation: the end of a single sign-on when the provider has just sent the
// browser back, sign-in when there is no valid token, else the top bar and one of the
// pages — #/chat[/<session id>], #/config, #/memories, #/admin (administrators).

import { AdminView, ta } from "./admin.js";
import { api, auth, onUnauthorized, saveAuth } from "./api.js";
import { finishSignOn, signIn } from "./auth.js";
import { ChatView } from "./chat.js";
import { ConfigView } from "./config.js";
import { connection, onConnection } from "./connection.js";
import { confirmAction, h } from "./dom.js";
import { language, languagePicker, t } from "./i18n.js";
import { MemoriesView } from "./memories.js";
import { loadSettings } from "./settings.js";

const root = document.getElementById("app");
const PAGES = ["chat", "config", "memories", "admin"];
let user = null;
let current = null; // { page, view }
let links = {};
let shownHash = location.hash;
const banner = h("div", { class: "banner", role: "status", "aria-live": "assertive", hidden: true });

/** The connection banner, derived from the connection state alone. */
function renderBanner() {
  const state = connection();
  banner.hidden = state === "online";
  banner.dataset.state = state;
  banner.textContent = state === "unreachable" ? t("unreachableBanner") : state === "back" ? t("backBanner") : "";
}

function parseRoute() {
  const match = /^#\/([a-z]+)(?:\/(.+))?$/.exec(location.hash);
  const allowed = match && PAGES.includes(match[1]) && (match[1] !== "admin" || user.role === "admin");
  const page = allowed ? match[1] : "chat";
  return { page, id: page === "chat" && match ? match[2] || null : null };
}

/** A view with unsaved changes (`dirty()`) asks before the page is left; "Stay" puts the
 * address back. */
async function route() {
  if (!user) return;
  const { page, id } = parseRoute();
  if (current && current.page !== page && current.view.dirty?.()) {
    const target = location.hash;
    history.replaceState(null, "", shownHash || "#/chat");
    if (!(await confirmAction(t("leaveTitle"), t("leaveBody"), t("leave"), t("stay")))) return;
    current.view.unmount();
    current = null;
    history.replaceState(null, "", target);
  }
  shownHash = location.hash;
  for (const [name, link] of Object.entries(links)) {
    if (name === page) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  if (current?.page !== page) {
    current?.view.unmount();
    const view = page === "config" ? new ConfigView() : page === "memories" ? new MemoriesView()
      : page === "admin" ? new AdminView(user) : new ChatView(user);
    current = { page, view };
    view.mount(document.getElementById("view"));
  }
  if (page === "chat") current.view.open(id);
}

// "/auth/logout" revokes this browser's token; "/auth/logout-all" every token of the user.
async function signOut(route = "/auth/logout") {
  try {
    await api("POST", route);
  } catch {
    // the token is forgotten here either way
  }
  leave();
}

function leave() {
  current?.view.unmount();
  current = null;
  user = null;
  saveAuth(null);
  signIn(root, enter);
}

function enter(signedIn) {
  user = signedIn;
  const account = h(
    "div",
    { class: "account", id: "account-menu" },
    h("span", { class: "muted", title: t("signedInAs") }, user.username),
    languagePicker(),
    h("button", { type: "button", class: "ghost", onclick: () => signOut() }, t("signOut")),
    h("button", { type: "button", class: "ghost", onclick: () => signOut("/auth/logout-all") }, t("signOutEverywhere")),
  );
  const accountToggle = h("button", {
    type: "button",
    class: "account-toggle avatar",
    "aria-label": t("accountMenu"),
    "aria-controls": "account-menu",
    "aria-expanded": "false",
    onclick: () => {
      const open = topbar.classList.toggle("account-open");
      accountToggle.setAttribute("aria-expanded", String(open));
    },
  }, [...user.username][0].toUpperCase());
  links = {
    chat: h("a", { href: "#/chat" }, t("chat")),
    config: h("a", { href: "#/config" }, t("configuration")),
    memories: h("a", { href: "#/memories" }, t("memories")),
  };
  if (user.role === "admin") links.admin = h("a", { href: "#/admin" }, ta("administration"));
  const topbar = h(
    "header",
    { class: "topbar" },
    h("h1", { class: "brand" }, "YouYou"),
    h("nav", { "aria-label": t("mainNav") }, Object.values(links)),
    h("span", { class: "spacer" }),
    accountToggle,
    account,
  );
  topbar.addEventListener("click", (event) => {
    if (event.target instanceof Element && event.target.closest("nav a")) topbar.classList.remove("account-open");
  });
  root.replaceChildren(topbar, h("main", { id: "view", class: "view" }));
  route();
}

async function start() {
  document.documentElement.lang = language();
  document.title = t("appTitle");
  onUnauthorized(() => {
    saveAuth(null);
    if (user) leave();
  });
  window.addEventListener("hashchange", route);
  window.addEventListener("beforeunload", (event) => {
    if (current?.view.dirty?.()) event.preventDefault();
  });
  root.before(banner);
  onConnection(renderBanner);
  try {
    await loadSettings();
  } catch (error) {
    failed(error);
    return;
  }
  if (await finishSignOn(root, enter)) return;
  if (!auth()) {
    signIn(root, enter);
    return;
  }
  try {
    enter(await api("GET", "/auth/me"));
  } catch (error) {
    if (error.status === 401) signIn(root, enter);
    else failed(error);
  }
}

/** The page could not start (the server is away or refused): say so, offer to try again. */
function failed(error) {
  root.replaceChildren(h("main", { class: "auth" }, h("p", { role: "alert" }, error.message),
    h("button", { type: "button", onclick: () => location.reload() }, t("retry"))));
}

start();
