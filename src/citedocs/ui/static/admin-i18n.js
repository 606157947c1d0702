// The admin console in the admin's language: `?lang=` (a tag such as `ru`), else the browser's
// languages. One translator, its catalog fetched once, serves both the console's frame (admin.html's
// own words: title, sign-in form, tabs, filters, translated here) and the panels admin.js builds
// (insights, LLM cost, traces, corpora, jobs, inventory, keys, audit log and their status lines, each
// string an `_()` call there). The data in the panels (questions, corpus names, reason codes, job
// states, ids, URLs) is shown as the server stores it.
import { N_, translations } from "./i18n.js";

// admin.html's own words: any text or label in the page that is exactly one of these is translated,
// so a panel added later with the same words ("Range", "Refresh") is translated too
const FRAME = [
  N_("citedocs — admin console"), N_("Skip to the console"), N_("admin console"), N_("Forget the admin key"),
  N_("Open the console"), N_("Admin key"), N_("Open"), N_("Console sections"), N_("Insights"), N_("Traces"), N_("LLM cost"), N_("Inventory"), N_("everything"), N_("hosts"), N_("Inventory pages"),
  N_("Corpora"), N_("Jobs"), N_("API keys"), N_("Audit log"), N_("Range"), N_("last 24 hours"), N_("last 7 days"),
  N_("last 30 days"), N_("last 90 days"), N_("Corpus"), N_("every corpus"), N_("Refresh"), N_("Show"),
  N_("every answer and refusal"), N_("refused"), N_("answered"), N_("marked not helpful"), N_("From"), N_("Before"),
  N_("Filter"), N_("Trace details"), N_("Base URL (new corpus)"), N_("Docs archive (.zip, .tar.gz)"), N_("Upload"),
  N_("Name"), N_("Kind"), N_("full (server-side)"), N_("publishable (widget)"), N_("Origins (publishable, space-separated)"),
  N_("Create key"),
];
const ATTRIBUTES = ["aria-label", "title", "placeholder"];
// the sign-in form's explanation, whose command and key prefix stay code
const SIGN_IN_INTRO = N_("The console needs an admin key ({command} prints one, starting {prefix}). It is kept in this tab only, until you close it.");

let chosen = null;

/** The console's translator (`_.language` names its language), the same one on every call. */
export function consoleTranslator() {
  chosen ??= translations()(new URLSearchParams(location.search).get("lang") || "");
  return chosen;
}

/** A translated text whose {name} placeholders are nodes (a link, <code>): the text's parts and
 * those nodes in the translation's order, for `el(tag, attrs, ...withNodes(...))`. */
export function withNodes(text, nodes) {
  return text.split(/\{(\w+)\}/).map((part, i) => (i % 2 ? (part in nodes ? nodes[part] : `{${part}}`) : part)).filter((part) => part !== "");
}

/** Translate the console's static HTML with `_`; the English in admin.html is what shows until this runs. */
export function translateConsole(_) {
  if (_.language === "en") return;
  const frame = new Set(FRAME);
  document.documentElement.lang = _.language;
  document.title = _(document.title);
  const intro = document.querySelector("#sign-in p:not([id])");
  const codes = intro ? intro.querySelectorAll("code") : [];
  if (codes.length === 2) intro.replaceChildren(...withNodes(_(SIGN_IN_INTRO), { command: codes[0], prefix: codes[1] }));
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.nodeValue.trim();
    if (frame.has(text)) node.nodeValue = node.nodeValue.replace(text, _(text));
  }
  for (const element of document.body.querySelectorAll(ATTRIBUTES.map((a) => `[${a}]`).join(","))) {
    for (const name of ATTRIBUTES) {
      const value = element.getAttribute(name);
      if (value && frame.has(value)) element.setAttribute(name, _(value));
    }
  }
}
