// @ts-check
// Sign in and, when the server allows it, create an account (then sign in with it); an invite
// link (#invite=<token>) opens the registration form of a server that registers by invite. A
// refusal is shown under the form and tied to the field it is about (aria-invalid,
// aria-describedby); a rate limit says how long to wait (Retry-After) and holds the button
// until then. The password rule comes from the server's settings.
//
// With single sign-on configured, "Sign in with <provider>" sends the browser to the
// provider, which sends it back to this page (the server's redirect_uri) with ?code=&state=;
// finishSignOn posts them to the server and stores the token like a password sign-in. When the
// server turns password sign-in off, the form keeps only that button.

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

/** The provider's answer in the address after a single sign-on (?code=…&state=…, or ?error=…
 * when it refused), taken out of the address so that a reload never posts it again.
 * @returns {{code: string, state: string} | {error: string} | null} */
function providerAnswer() {
  const query = new URLSearchParams(location.search);
  const [code, state, error] = ["code", "state", "error"].map((name) => query.get(name));
  if (!(code && state) && !error) return null;
  history.replaceState(null, "", location.pathname + location.hash);
  return code && state ? { code, state } : { error: query.get("error_description") || error };
}

/** When the provider has just sent the browser back here: exchange its code for a token and
 * sign in, or show the sign-in screen saying why not (refused, used or expired).
 * @param {HTMLElement} container @param {(user: any) => void} onSignedIn
 * @returns {Promise<boolean>} whether the address held the provider's answer */
export async function finishSignOn(container, onSignedIn) {
  const answer = providerAnswer();
  if (!answer) return false;
  if ("error" in answer) {
    await signIn(container, onSignedIn, t("ssoRefused", { reason: answer.error }));
    return true;
  }
  try {
    const login = await api("POST", "/auth/oidc/callback", answer);
    saveAuth({ token: login.accessToken, user: login.user });
    onSignedIn(login.user);
  } catch (failure) {
    await signIn(container, onSignedIn, failure instanceof Error ? failure.message : String(failure));
  }
  return true;
}

/** Sends the browser to the provider's sign-in page.
 * @param {(message: string) => void} refuse */
async function startSignOn(refuse) {
  try {
    const { authorizationUrl } = await api("GET", "/auth/oidc/start");
    location.assign(authorizationUrl);
  } catch (failure) {
    refuse(failure instanceof Error ? failure.message : String(failure));
  }
}

/** @param {HTMLElement} container @param {(user: any) => void} onSignedIn
 * @param {string} [notice] why the last sign-in failed, shown under the form */
export async function signIn(container, onSignedIn, notice = "") {
  const invite = /^#invite=([\w-]+)$/.exec(location.hash)?.[1] || null;
  let registration = false;
  /** @type {{registration?: boolean, registrationMode?: string, sso?: boolean, ssoName?: string | null, passwordLogin?: boolean}} */
  let server = {};
  try {
    server = await api("GET", "/auth/settings");
    registration = server.registration || (server.registrationMode === "invite" && invite !== null);
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
  const sso = h("button", {
    type: "button",
    class: server.passwordLogin === false ? "primary wide" : "wide",
    hidden: !server.sso,
    onclick: () => startSignOn((message) => refuse(message, [])),
  }, t("signInWith", { name: server.ssoName || t("sso") }));
  const withPassword = server.passwordLogin !== false;

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
    withPassword ? [h("label", {}, t("username"), username), h("label", {}, t("password"), password), hint] : null,
    error,
    withPassword ? submit : null,
    sso,
    withPassword ? toggle : null,
    h("div", { class: "auth-foot" }, languagePicker()),
  );
  heading.id = "auth-heading";
  show();
  if (notice) refuse(notice, []);
  container.replaceChildren(h("main", { class: "auth" }, form));
  (withPassword ? username : sso).focus();
}
