// @ts-check
// Sign in and, when the server allows it, create an account (then sign in with it); an invite
// link (#invite=<token>) opens the registration form of a server that registers by invite. A
// refusal is shown under the form and tied to the field it is about (aria-invalid,
// aria-describedby); a rate limit says how long to wait (Retry-After) and holds the button
// until then. The password rule comes from the server's settings.

import { ApiError, api, saveAuth } from "./api.js";
import { h } from "./dom.js";
import { languagePicker, t } from "./i18n.js";
import { settings } from "./settings.js";

/** Which fields a refusal is about.
 * @param {unknown} failure @returns {("username" | "password")[]} */
function fieldsOf(failure) {
  if (!(failure instanceof ApiError)) return [];
  switch (failure.code) {
    case "AUTH_USERNAME_TAKEN":
      return ["username"];
    case "AUTH_PASSWORD_REJECTED":
      return ["password"];
    case "AUTH_INVALID_CREDENTIALS":
      return ["username", "password"];
    case "VALIDATION_INVALID_ARGUMENT":
      return /password|密码/i.test(failure.message) ? ["password"] : ["username"];
    default:
      return [];
  }
}

/** @param {HTMLElement} container @param {(user: any) => void} onSignedIn */
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
  const username = h("input", {
    type: "text", name: "username", autocomplete: "username", required: true, maxlength: 64,
    "aria-describedby": "auth-error",
  });
  const password = h("input", {
    type: "password", name: "password", autocomplete: "current-password", required: true,
    "aria-describedby": "auth-error auth-hint",
  });
  const hint = h("p", { class: "muted small", id: "auth-hint" });
  const error = h("p", { class: "form-error", role: "alert", id: "auth-error" });
  const fields = { username, password };
  /** @param {string} message @param {("username" | "password")[]} invalid */
  const refuse = (message, invalid) => {
    error.textContent = message;
    for (const [name, input] of Object.entries(fields)) {
      if (invalid.includes(/** @type {"username" | "password"} */ (name))) input.setAttribute("aria-invalid", "true");
      else input.removeAttribute("aria-invalid");
    }
    fields[invalid[0]]?.focus();
  };
  const submit = h("button", { type: "submit", class: "primary wide" });
  const toggle = h("button", { type: "button", class: "link", hidden: !registration });

  const show = () => {
    heading.textContent = registering ? t("register") : t("signIn");
    submit.textContent = registering ? t("createAccount") : t("signIn");
    toggle.textContent = registering ? t("haveAccount") : t("needAccount");
    password.autocomplete = registering ? "new-password" : "current-password";
    hint.textContent = registering ? t("registerHint", { min: settings().password.minLength }) : "";
    refuse("", []);
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
        const credentials = { username: username.value.trim(), password: password.value };
        const min = settings().password.minLength;
        if (registering && credentials.password.length < min) {
          refuse(t("passwordTooShort", { min }), ["password"]);
          return;
        }
        error.textContent = "";
        submit.disabled = true;
        try {
          if (registering) await api("POST", "/auth/register", invite ? { ...credentials, invite } : credentials);
          const login = await api("POST", "/auth/login", credentials);
          if (invite) history.replaceState(null, "", location.pathname);
          saveAuth({ token: login.accessToken, user: login.user });
          onSignedIn(login.user);
        } catch (failure) {
          refuse(failure instanceof Error ? failure.message : String(failure), fieldsOf(failure));
          const wait = failure instanceof ApiError && failure.status === 429 ? failure.retryAfter : null;
          if (wait) setTimeout(() => { submit.disabled = false; }, wait * 1000);
          else submit.disabled = false;
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
