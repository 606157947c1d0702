// Safe rendering of answers: every piece of text goes through textContent, never innerHTML.
import { N_ } from "./i18n.js";

// The marker the service puts after a claim: [path#anchor/N] (same pattern as the API tests).
export const MARKER = /\[([^\[\]\s]+#[^\[\]\s]*\/\d+)\]/g;

const FENCE = /```[^\n`]*\n?([\s\S]*?)(?:```|$)/g;
const INLINE_CODE = /`([^`\n]+)`/g;

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** The assistant text without citation markers (what is sent back as history). */
export function stripMarkers(answer) {
  return answer.replace(MARKER, "").replace(/[ \t]+([.,;:!?])/g, "$1").replace(/[ \t]{2,}/g, " ").trim();
}

/** Ids of markers in order of first use. */
export function markerIds(answer) {
  const seen = [];
  for (const match of answer.matchAll(MARKER)) if (!seen.includes(match[1])) seen.push(match[1]);
  return seen;
}

/**
 * Numbering of citations: the position in citations[] (which the API orders by first use),
 * then, for ids not (yet) listed there — e.g. while streaming — the order of first use.
 */
export function numbering(answer, citations = []) {
  const numbers = new Map();
  citations.forEach((c, i) => numbers.set(c.id, i + 1));
  for (const id of markerIds(answer)) if (!numbers.has(id)) numbers.set(id, numbers.size + 1);
  return numbers;
}

/** Split text into [{kind: "text"|"code", value}] on ``` fences (an unclosed fence runs to the end). */
function splitFences(text) {
  const parts = [];
  let last = 0;
  for (const match of text.matchAll(FENCE)) {
    if (match.index > last) parts.push({ kind: "text", value: text.slice(last, match.index) });
    parts.push({ kind: "code", value: match[1].replace(/\n$/, "") });
    last = match.index + match[0].length;
  }
  if (last < text.length) parts.push({ kind: "text", value: text.slice(last) });
  return parts;
}

function appendInline(parent, text, pill) {
  // inline code first, so that a marker-like string inside `code` stays literal
  let last = 0;
  const pushPlain = (plain) => {
    let at = 0;
    for (const match of plain.matchAll(MARKER)) {
      if (match.index > at) appendLines(parent, plain.slice(at, match.index));
      parent.append(pill(match[1]));
      at = match.index + match[0].length;
    }
    if (at < plain.length) appendLines(parent, plain.slice(at));
  };
  for (const match of text.matchAll(INLINE_CODE)) {
    if (match.index > last) pushPlain(text.slice(last, match.index));
    parent.append(el("code", { text: match[1] }));
    last = match.index + match[0].length;
  }
  if (last < text.length) pushPlain(text.slice(last));
}

function appendLines(parent, text) {
  text.split("\n").forEach((line, i) => {
    if (i > 0) parent.append(el("br"));
    if (line) parent.append(document.createTextNode(line));
  });
}

/**
 * Render an answer into a fragment. `pill(id)` makes the node for one citation marker.
 */
export function renderAnswer(answer, pill) {
  const fragment = document.createDocumentFragment();
  for (const part of splitFences(answer)) {
    if (part.kind === "code") {
      fragment.append(el("pre", { class: "code-block" }, el("code", { text: part.value })));
      continue;
    }
    for (const para of part.value.split(/\n[ \t]*\n+/)) {
      const trimmed = para.replace(/^\n+|\n+$/g, "");
      if (!trimmed.trim()) continue;
      const p = el("p");
      // a paragraph of nothing but markers cites the block above it (typically a code block)
      if (!trimmed.replace(MARKER, "").trim()) p.className = "cite-only";
      appendInline(p, trimmed, pill);
      fragment.append(p);
    }
  }
  return fragment;
}

const REASONS = {
  low_retrieval_confidence: N_("No passage in the docs matched the question closely enough."),
  question_terms_not_in_docs: N_("Key terms of the question do not appear in the docs."),
  terms_not_in_passages: N_("The docs mention key terms of the question, but no passage found for it does."),
  model_declined: N_("The retrieved passages do not contain the answer."),
  nothing_verifiable: N_("No sentence of the draft answer could be verified against a source."),
  backend_error: N_("The answering backend failed, so nothing could be verified."),
  no_relevant_passage: N_("None of the passages found helps answer the question."),
  awaiting_review: N_("The part of the docs that covers this is awaiting review by the docs team."),
};
const NOT_COVERED = N_("The docs do not cover this question.");

/** {summary, code, detail} for a refusal_reason such as "backend_error: timeout after 30 s" (the
 * summary is a msgid, to translate where it is shown). */
export function describeReason(reason) {
  if (!reason) return { summary: NOT_COVERED, code: "", detail: "" };
  const [code, ...rest] = String(reason).split(":");
  const detail = rest.join(":").trim();
  const summary = REASONS[code.trim()] || NOT_COVERED;
  return { summary, code: code.trim(), detail: REASONS[code.trim()] ? detail : String(reason) };
}

export function formatScore(score) {
  return typeof score === "number" && Number.isFinite(score) ? score.toFixed(2) : "–";
}

/** The URL if it is http(s), else null: a source link must never run script (javascript:, data:). */
export function safeUrl(url) {
  try {
    const parsed = new URL(url, document.baseURI);
    return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.href : null;
  } catch {
    return null;
  }
}
