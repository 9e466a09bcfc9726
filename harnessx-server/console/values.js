// How values from runs are shown: tool arguments a person can judge (each field by name, long
// text folded behind "Show all", file contents as a block), times and durations.

import { h } from "./dom.js";

/** Text longer than this is folded. */
const FOLD_CHARS = 280;
/** A block longer than this many lines is folded. */
const FOLD_LINES = 12;

let folds = 0;

/**
 * `text` shown in full when short, otherwise its beginning with a "Show all" button that
 * unfolds it (and folds it again). `block` shows it preformatted.
 */
export function folded(text, { block = false } = {}) {
  const lines = text.split("\n");
  const long = text.length > FOLD_CHARS || (block && lines.length > FOLD_LINES);
  const body = h(block ? "pre" : "span", { class: block ? "value-block" : "value-text" });
  if (!long) {
    body.textContent = text;
    return body;
  }
  const short = block && lines.length > FOLD_LINES
    ? `${lines.slice(0, FOLD_LINES).join("\n").slice(0, FOLD_CHARS * 2)}…`
    : `${text.slice(0, FOLD_CHARS)}…`;
  const id = `fold-${++folds}`;
  body.id = id;
  body.textContent = short;
  const size = lines.length > 1 ? `${lines.length} lines` : `${text.length} characters`;
  const button = h("button", { type: "button", class: "show-all", "aria-expanded": "false", "aria-controls": id },
    `Show all (${size})`);
  button.addEventListener("click", () => {
    const open = button.getAttribute("aria-expanded") !== "true";
    body.textContent = open ? text : short;
    button.setAttribute("aria-expanded", String(open));
    button.textContent = open ? "Show less" : `Show all (${size})`;
  });
  return h("span", { class: block ? "fold fold-block" : "fold" }, body, button);
}

/** A JSON value as a person reads it: text as text, anything structured pretty-printed. */
export function valueView(value) {
  if (typeof value === "string") {
    // Multi-line text (file contents, scripts) keeps its lines.
    return value.includes("\n") ? folded(value, { block: true }) : folded(value);
  }
  if (value === null || typeof value !== "object") return h("code", { class: "value-scalar" }, JSON.stringify(value));
  return folded(JSON.stringify(value, null, 2), { block: true });
}

/**
 * A call's arguments: each field by name with its value (see `valueView`); arguments that are
 * not an object are shown as JSON.
 */
export function argumentsView(args, label = "Arguments") {
  if (args === null || typeof args !== "object" || Array.isArray(args)) {
    return h("div", { class: "arguments" }, valueView(args));
  }
  const entries = Object.entries(args);
  if (entries.length === 0) return h("p", { class: "arguments muted" }, "No arguments.");
  return h("dl", { class: "arguments", "aria-label": label },
    entries.map(([key, value]) => [h("dt", {}, h("code", {}, key)), h("dd", {}, valueView(value))]));
}

/** Arguments as the model sent them (JSON text), parsed when they are JSON. */
export function parseArguments(text) {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** A `<time>` for an RFC 3339 instant: the local time of day, the whole date on hover. */
export function timeView(iso) {
  if (!iso) return null;
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return null;
  return h("time", { datetime: iso, title: at.toLocaleString() },
    at.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" }));
}

/** A `<time>` for an instant that may be days ago: the date too when it is not today. */
export function whenView(iso) {
  if (!iso) return null;
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return null;
  const today = new Date().toDateString() === at.toDateString();
  const text = today
    ? at.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })
    : at.toLocaleString([], { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
  return h("time", { datetime: iso, title: at.toLocaleString() }, text);
}

/** Milliseconds between two RFC 3339 instants, or null when either is unknown. */
export function between(from, to) {
  if (!from || !to) return null;
  const ms = new Date(to).getTime() - new Date(from).getTime();
  return Number.isNaN(ms) ? null : Math.max(ms, 0);
}

/** A duration for people: `320 ms`, `4.2 s`, `3 min 5 s`. */
export function durationText(ms) {
  if (ms === null || ms === undefined) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  return `${minutes} min ${Math.round((ms % 60_000) / 1000)} s`;
}
