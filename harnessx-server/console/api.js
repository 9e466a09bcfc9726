// The console's only way to the server: the /v2 API with the API key kept in sessionStorage.
// Without a key no call is made at all; with a wrong one the server answers 401 and the console
// forgets the key and shows the sign-in page again.

const KEY = "harnessx.apiKey";

/** The key this tab signed in with, or null. */
export function apiKey() {
  return sessionStorage.getItem(KEY);
}

/** Keeps `key` for this tab only (sessionStorage: gone when the tab closes). */
export function signIn(key) {
  sessionStorage.setItem(KEY, key);
}

/** Forgets the key. */
export function signOut() {
  sessionStorage.removeItem(KEY);
}

/** A failed call: the server's `{"error": {"code", "message"}}`, or a network failure. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** Called with no arguments when the server refuses the key. */
let unauthorized = () => {};
export function onUnauthorized(f) {
  unauthorized = f;
}

function headers(extra = {}) {
  const key = apiKey();
  if (!key) throw new ApiError(401, "signed_out", "Sign in with the server's API key first.");
  return { Authorization: `Bearer ${key}`, ...extra };
}

async function failure(res) {
  let body = null;
  try {
    body = await res.json();
  } catch {
    // not JSON: fall through to the status text
  }
  const e = body?.error;
  if (res.status === 401) unauthorized();
  return new ApiError(res.status, e?.code ?? `http_${res.status}`,
    e?.message ?? `The server answered ${res.status} ${res.statusText}.`);
}

/** `method` on `/v2{path}` with an optional JSON body; resolves to the JSON answer. */
export async function api(method, path, body) {
  const init = { method, headers: headers(body === undefined ? {} : { "Content-Type": "application/json" }) };
  if (body !== undefined) init.body = JSON.stringify(body);
  let res;
  try {
    res = await fetch(`/v2${path}`, init);
  } catch (err) {
    throw new ApiError(0, "network", `The server could not be reached (${err.message}).`);
  }
  if (!res.ok) throw await failure(res);
  return res.json();
}

/**
 * A run's events from the server-sent events feed, after sequence `after`, as
 * `{ seq, name, event }`. Read with fetch (EventSource cannot send the key). Ends when the
 * server ends the feed (the run finished) or `signal` aborts.
 */
export async function* runEvents(runId, after, signal) {
  let res;
  try {
    res = await fetch(`/v2/runs/${encodeURIComponent(runId)}/events`, {
      headers: headers({ Accept: "text/event-stream", "Last-Event-ID": String(after) }),
      signal,
    });
  } catch (err) {
    if (signal?.aborted) return;
    throw new ApiError(0, "network", `The event feed could not be opened (${err.message}).`);
  }
  if (!res.ok) throw await failure(res);
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value.replace(/\r\n?/g, "\n");
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const frame = parseFrame(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
        if (frame) yield frame;
      }
    }
  } finally {
    reader.releaseLock();
  }
}

/** One SSE frame (`id:`, `event:`, `data:` lines); comments and keep-alives give null. */
export function parseFrame(text) {
  let id = null;
  let name = "message";
  const data = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "id") id = value;
    else if (field === "event") name = value;
    else if (field === "data") data.push(value);
  }
  if (data.length === 0) return null;
  let event;
  try {
    event = JSON.parse(data.join("\n"));
  } catch {
    event = { type: "unreadable", text: data.join("\n") };
  }
  return { seq: id === null ? null : Number(id), name, event };
}
