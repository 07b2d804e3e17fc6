// Sign in and, when the server allows it, create an account (then sign in with it); an invite
// link (#invite=<token>) opens the registration form of a server that registers by invite.

import { api, saveAuth } from "./api.js";
import { h } from "./dom.js";
import { languagePicker, t } from "./i18n.js";

const MIN_PASSWORD = 8;

export async function signIn(container, onSignedIn) {
  const invite = /^#invite=([\w-]+)$/.exec(location.hash)?.[1] || null;
  let registration = false;
  try {
    const settings = await api("GET", "/auth/settings");
    registration = settings.registration || (settings.registrationMode === "invite" && invite !== null);
  } catch {
    // an older or locked-down server: sign in only
  }
  let registering = registration && invite !== null;
  const heading = h("h2", {});
  const username = h("input", { type: "text", name: "username", autocomplete: "username", required: true, maxlength: 64 });
  const password = h("input", { type: "password", name: "password", autocomplete: "current-password", required: true });
  const hint = h("p", { class: "muted small" });
  const error = h("p", { class: "form-error", role: "alert" });
  const submit = h("button", { type: "submit", class: "primary wide" });
  const toggle = h("button", { type: "button", class: "link", hidden: !registration });

  const show = () => {
    heading.textContent = registering ? t("register") : t("signIn");
    submit.textContent = registering ? t("createAccount") : t("signIn");
    toggle.textContent = registering ? t("haveAccount") : t("needAccount");
    password.autocomplete = registering ? "new-password" : "current-password";
    hint.textContent = registering ? t("registerHint", { min: MIN_PASSWORD }) : "";
    error.textContent = "";
  };
  toggle.addEventListener("click", () => {
    registering = !registering;
    show();
    username.focus();
  });

  const form = h(
    "form",
    {
      class: "auth-card",
      "aria-labelledby": "auth-heading",
      onsubmit: async (event) => {
        event.preventDefault();
        error.textContent = "";
        submit.disabled = true;
        const credentials = { username: username.value.trim(), password: password.value };
        try {
          if (registering) await api("POST", "/auth/register", invite ? { ...credentials, invite } : credentials);
          const login = await api("POST", "/auth/login", credentials);
          if (invite) history.replaceState(null, "", location.pathname);
          saveAuth({ token: login.accessToken, user: login.user });
          onSignedIn(login.user);
        } catch (failure) {
          error.textContent = failure.message;
          submit.disabled = false;
        }
      },
    },
    h("h1", { class: "brand" }, "YouYou"),
    h("p", { class: "muted" }, t("tagline")),
    heading,
    h("label", {}, t("username"), username),
    h("label", {}, t("password"), password),
    hint,
    error,
    submit,
    toggle,
    h("div", { class: "auth-foot" }, languagePicker()),
  );
  heading.id = "auth-heading";
  show();
  container.replaceChildren(h("main", { class: "auth" }, form));
  username.focus();
}
