// Talking to the citedocs HTTP API: JSON calls, readable errors, and SSE over a POST (fetch + ReadableStream).

export class ApiError extends Error {
  constructor(message, { status = 0, code = "", detail = "" } = {}) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
    this.detail = detail;
  }
}

// With auth on, the server wants `Authorization: Bearer <key>`; the key the user entered is kept here.
const KEY_STORAGE = "citedocs.apiKey";
export const AUTH_ERRORS = new Set(["missing_api_key", "invalid_api_key", "revoked_api_key"]);

export function setApiKey(key) {
  if (key) localStorage.setItem(KEY_STORAGE, key);
  else localStorage.removeItem(KEY_STORAGE);
}

export function storedApiKey() {
  return localStorage.getItem(KEY_STORAGE);
}

/** Turn a non-2xx response into an ApiError carrying the server's {error, detail}. */
async function errorFrom(response) {
  let code = "";
  let detail = "";
  try {
    const body = await response.json();
    code = body.error || "";
    detail = body.detail || (typeof body.detail === "object" ? JSON.stringify(body.detail) : "");
  } catch {
    detail = response.statusText || "";
  }
  const label = code ? code.replace(/_/g, " ") : `HTTP ${response.status}`;
  return new ApiError(detail ? `${label}: ${detail}` : label, { status: response.status, code, detail });
}

const UNREACHABLE = "Could not reach the citedocs server. Check that `citedocs serve` is running, then try again.";

function networkError(err, message) {
  return new ApiError(message, { code: "network_error", detail: String(err && err.message ? err.message : err) });
}

/** Parse one SSE block ("event: x\ndata: ...") into {event, data}. */
export function parseEvent(block) {
  let event = "message";
  const data = [];
  for (const line of block.split(/\r?\n/)) {
    if (!line || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") event = value;
    else if (field === "data") data.push(value);
  }
  return { event, data: data.join("\n") };
}

/**
 * A client for the citedocs server at `base` ("" = this page's origin; the widget passes its
 * server's URL). `apiKey()` returns the key to send as `Authorization: Bearer`, if any;
 * `unreachable` is the message for a request that got no response (down, or refused by CORS).
 */
export function apiClient({ base = "", apiKey = storedApiKey, unreachable = UNREACHABLE } = {}) {
  function withKey(headers) {
    const key = apiKey();
    return key ? { ...headers, Authorization: `Bearer ${key}` } : headers;
  }

  async function getJSON(path, options = {}) {
    let response;
    try {
      response = await fetch(base + path, { ...options, headers: withKey(options.headers || { Accept: "application/json" }) });
    } catch (err) {
      if (err.name === "AbortError") throw err;
      throw networkError(err, unreachable);
    }
    if (!response.ok) throw await errorFrom(response);
    return response.json();
  }

  /** A text body (CSV, Markdown), with the same key and error handling as getJSON. */
  async function getText(path) {
    let response;
    try {
      response = await fetch(base + path, { headers: withKey({ Accept: "text/plain, text/markdown, text/csv" }) });
    } catch (err) {
      throw networkError(err, unreachable);
    }
    if (!response.ok) throw await errorFrom(response);
    return response.text();
  }

  function postJSON(path, body, options = {}) {
    return getJSON(path, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify(body),
      ...options,
    });
  }

  /**
   * POST `body` to `path` and yield {event, data} for each Server-Sent Event (data parsed as JSON).
   * Throws ApiError for HTTP errors and network failures; AbortError when `signal` aborts. It sends
   * `Accept-Language: *` in place of the browser's own: an answer is in the question's language
   * unless `body.language` names one (the page's or the widget's configured language).
   */
  async function* streamEvents(path, body, signal) {
    let response;
    try {
      response = await fetch(base + path, {
        method: "POST",
        headers: withKey({ "Content-Type": "application/json", Accept: "text/event-stream", "Accept-Language": "*" }),
        body: JSON.stringify(body),
        signal,
      });
    } catch (err) {
      if (err.name === "AbortError") throw err;
      throw networkError(err, unreachable);
    }
    if (!response.ok) throw await errorFrom(response);
    if (!response.body) throw new ApiError("The server sent an empty response.", { code: "empty_response" });

    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      while (true) {
        let chunk;
        try {
          chunk = await reader.read();
        } catch (err) {
          if (err.name === "AbortError") throw err;
          throw new ApiError("The connection to the server dropped while the answer was streaming.", {
            code: "stream_interrupted",
            detail: String(err && err.message ? err.message : err),
          });
        }
        if (chunk.done) break;
        buffer += decoder.decode(chunk.value, { stream: true });
        let boundary;
        while ((boundary = buffer.search(/\r?\n\r?\n/)) !== -1) {
          const block = buffer.slice(0, boundary);
          buffer = buffer.slice(boundary).replace(/^\r?\n\r?\n/, "");
          if (block.trim()) yield decodeData(parseEvent(block));
        }
      }
      buffer += decoder.decode();
      if (buffer.trim()) yield decodeData(parseEvent(buffer));
    } finally {
      reader.releaseLock();
    }
  }

  return { getJSON, getText, postJSON, streamEvents };
}

function decodeData({ event, data }) {
  try {
    return { event, data: JSON.parse(data) };
  } catch {
    throw new ApiError(`The server sent an unreadable '${event}' event.`, { code: "bad_event", detail: data });
  }
}
