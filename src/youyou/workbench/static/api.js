// @ts-check
// The workbench HTTP API: bearer token, the UI language for server messages, and one error
// type for every refusal ({"error": {"code", "message"}, "requestId"}). A request that cannot
// reach the server at all is refused as NETWORK_UNREACHABLE (status 0) in the UI's language
// and reported to the connection watch, which shows the banner and probes until it is back.

import { reportUnreachable } from "./connection.js";
import { language, t } from "./i18n.js";

const AUTH_KEY = "youyou.auth";

export class ApiError extends Error {
  /**
   * @param {number} status HTTP status; 0 when the server could not be reached
   * @param {string} code
   * @param {string} message
   * @param {string | null} [requestId]
   * @param {number | null} [retryAfter] seconds, from the Retry-After header
   */
  constructor(status, code, message, requestId = null, retryAfter = null) {
    super(message);
    this.status = status;
    this.code = code;
    this.requestId = requestId;
    this.retryAfter = retryAfter;
  }
}

/** @param {unknown} error @returns {boolean} the server could not be reached */
export function isUnreachable(error) {
  return error instanceof ApiError && error.status === 0;
}

/** @type {() => void} */
let unauthorized = () => {};

/** Called once with what to do when the token is refused (sign-in again).
 * @param {() => void} handler */
export function onUnauthorized(handler) {
  unauthorized = handler;
}

/** @returns {{token: string, user: any} | null} */
export function auth() {
  try {
    return JSON.parse(localStorage.getItem(AUTH_KEY) || "null");
  } catch {
    return null;
  }
}

/** @param {{token: string, user: any} | null} value */
export function saveAuth(value) {
  if (value) localStorage.setItem(AUTH_KEY, JSON.stringify(value));
  else localStorage.removeItem(AUTH_KEY);
}

/** @param {Record<string, string>} [extra] @returns {Record<string, string>} */
function headers(extra = {}) {
  /** @type {Record<string, string>} */
  const result = { "Accept-Language": language(), ...extra };
  const token = auth()?.token;
  if (token) result.Authorization = `Bearer ${token}`;
  return result;
}

/** @param {Response} response */
async function failure(response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    // not the error envelope (a proxy's page, a dropped body): described by the status alone
  }
  const error = body?.error;
  const retry = Number(response.headers.get("retry-after"));
  const retryAfter = Number.isFinite(retry) && retry > 0 ? Math.ceil(retry) : null;
  // the server's message says how long to wait; retryAfter lets a form hold its button
  const message = error?.message || `${response.status} ${response.statusText}`;
  const failed = new ApiError(
    response.status,
    error?.code || `HTTP_${response.status}`,
    message,
    body?.requestId || response.headers.get("x-request-id"),
    retryAfter,
  );
  if (response.status === 401 && failed.code === "AUTH_UNAUTHENTICATED") unauthorized();
  return failed;
}

/**
 * fetch with the API's headers; JSON bodies are sent as JSON, FormData as is.
 * @param {string} method
 * @param {string} path
 * @param {{body?: any, headers?: Record<string, string>, signal?: AbortSignal}} [options]
 * @returns {Promise<Response>}
 */
export async function request(method, path, { body, headers: extra, signal } = {}) {
  const sent = headers(extra);
  /** @type {RequestInit} */
  const init = { method, headers: sent, signal };
  if (body instanceof FormData) init.body = body;
  else if (body !== undefined) {
    init.body = JSON.stringify(body);
    sent["Content-Type"] = "application/json";
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    if (signal?.aborted) throw error;
    reportUnreachable();
    throw new ApiError(0, "NETWORK_UNREACHABLE", t("serverUnreachable"));
  }
  if (!response.ok) throw await failure(response);
  return response;
}

/**
 * The envelope's data (null for 204).
 * @param {string} method
 * @param {string} path
 * @param {any} [body]
 * @returns {Promise<any>}
 */
export async function api(method, path, body) {
  const response = await request(method, path, { body });
  if (response.status === 204) return null;
  return (await response.json()).data;
}

/** @param {string} path @returns {Promise<string>} */
export async function apiText(path) {
  return (await request("GET", path)).text();
}
