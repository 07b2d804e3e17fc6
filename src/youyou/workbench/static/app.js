// Start-up and navigation: sign-in when there is no valid token, else the top bar and one of
// the pages — #/chat[/<session id>], #/config, #/memories, #/admin (administrators).

import { AdminView, ta } from "./admin.js";
import { api, auth, onUnauthorized, saveAuth } from "./api.js";
import { signIn } from "./auth.js";
import { ChatView } from "./chat.js";
import { ConfigView } from "./config.js";
import { h } from "./dom.js";
import { language, languagePicker, t } from "./i18n.js";
import { MemoriesView } from "./memories.js";

const root = document.getElementById("app");
const PAGES = ["chat", "config", "memories", "admin"];
let user = null;
let current = null; // { page, view }
let links = {};

function parseRoute() {
  const match = /^#\/([a-z]+)(?:\/(.+))?$/.exec(location.hash);
  const allowed = match && PAGES.includes(match[1]) && (match[1] !== "admin" || user.role === "admin");
  const page = allowed ? match[1] : "chat";
  return { page, id: page === "chat" && match ? match[2] || null : null };
}

function route() {
  if (!user) return;
  const { page, id } = parseRoute();
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
  links = {
    chat: h("a", { href: "#/chat" }, t("chat")),
    config: h("a", { href: "#/config" }, t("configuration")),
    memories: h("a", { href: "#/memories" }, t("memories")),
  };
  if (user.role === "admin") links.admin = h("a", { href: "#/admin" }, ta("administration"));
  root.replaceChildren(
    h(
      "header",
      { class: "topbar" },
      h("h1", { class: "brand" }, "YouYou"),
      h("nav", { "aria-label": t("mainNav") }, Object.values(links)),
      h("span", { class: "spacer" }),
      h("span", { class: "muted", title: t("signedInAs") }, user.username),
      languagePicker(),
      h("button", { type: "button", class: "ghost", onclick: () => signOut() }, t("signOut")),
      h("button", { type: "button", class: "ghost", onclick: () => signOut("/auth/logout-all") }, t("signOutEverywhere")),
    ),
    h("main", { id: "view", class: "view" }),
  );
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
  if (!auth()) {
    signIn(root, enter);
    return;
  }
  try {
    enter(await api("GET", "/auth/me"));
  } catch (error) {
    if (error.status === 401) signIn(root, enter);
    else {
      root.replaceChildren(h("main", { class: "auth" }, h("p", { role: "alert" }, error.message),
        h("button", { type: "button", onclick: () => location.reload() }, t("retry"))));
    }
  }
}

start();
