// The workbench HTTP API: bearer token, the UI language for server messages, and one error
// type for every refusal ({"error": {"code", "message"}, "requestId"}).

import { language } from "./i18n.js";

const AUTH_KEY = "youyou.auth";

export class ApiError extends Error {
  constructor(status, code, message, requestId = null) {
    super(message);
    this.status = status;
    this.code = code;
    this.requestId = requestId;
  }
}

let unauthorized = () => {};

/** Called once with what to do when the token is refused (sign-in again). */
export function onUnauthorized(handler) {
  unauthorized = handler;
}

export function auth() {
  try {
    return JSON.parse(localStorage.getItem(AUTH_KEY) || "null");
  } catch {
    return null;
  }
}

export function saveAuth(value) {
  if (value) localStorage.setItem(AUTH_KEY, JSON.stringify(value));
  else localStorage.removeItem(AUTH_KEY);
}

function headers(extra = {}) {
  const result = { "Accept-Language": language(), ...extra };
  const token = auth()?.token;
  if (token) result.Authorization = `Bearer ${token}`;
  return result;
}

async function failure(response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    // not the error envelope (a proxy's page, a dropped body): described by the status alone
  }
  const error = body?.error;
  const failed = new ApiError(
    response.status,
    error?.code || `HTTP_${response.status}`,
    error?.message || `${response.status} ${response.statusText}`,
    body?.requestId || response.headers.get("x-request-id"),
  );
  if (response.status === 401 && failed.code === "AUTH_UNAUTHENTICATED") unauthorized();
  return failed;
}

/** fetch with the API's headers; JSON bodies are sent as JSON, FormData as is. */
export async function request(method, path, { body, headers: extra, signal } = {}) {
  const init = { method, headers: headers(extra), signal };
  if (body instanceof FormData) init.body = body;
  else if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers["Content-Type"] = "application/json";
  }
  const response = await fetch(path, init);
  if (!response.ok) throw await failure(response);
  return response;
}

/** The envelope's data (null for 204). */
export async function api(method, path, body) {
  const response = await request(method, path, { body });
  if (response.status === 204) return null;
  return (await response.json()).data;
}

export async function apiText(path) {
  return (await request("GET", path)).text();
}
