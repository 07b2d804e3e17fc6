// @ts-check
// Whether the server can be reached. A request that fails to connect reports it here; from
// then on the banner says so and the server is probed (GET /healthz) with growing pauses until
// it answers, then the banner says it is back for a few seconds. Views read `connection()` in
// their render and subscribe to re-render (the composer holds sending while it is down).

const PROBE_MS = [1000, 2000, 3000, 5000];
const BACK_MS = 4000;

/** @typedef {"online" | "unreachable" | "back"} ConnectionState */

/** @type {ConnectionState} */
let state = "online";
/** @type {Set<(state: ConnectionState) => void>} */
const listeners = new Set();
let probing = false;
/** @type {ReturnType<typeof setTimeout> | undefined} */
let backTimer;

/** @returns {ConnectionState} */
export function connection() {
  return state;
}

/** @param {(state: ConnectionState) => void} listener @returns {() => void} unsubscribe */
export function onConnection(listener) {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** @param {ConnectionState} next */
function set(next) {
  if (state === next) return;
  state = next;
  for (const listener of listeners) listener(state);
}

/** A request could not reach the server. */
export function reportUnreachable() {
  clearTimeout(backTimer);
  set("unreachable");
  if (!probing) probe();
}

async function probe() {
  probing = true;
  for (let attempt = 0; ; attempt++) {
    await new Promise((resolve) => setTimeout(resolve, PROBE_MS[Math.min(attempt, PROBE_MS.length - 1)]));
    try {
      const response = await fetch("/healthz", { cache: "no-store" });
      if (response.status < 500) break;
    } catch {
      // still unreachable
    }
  }
  probing = false;
  set("back");
  backTimer = setTimeout(() => set("online"), BACK_MS);
}
