// The admin console's frame in the browser's language (`?lang=` overrides): its title, sign-in form,
// tabs and filters. The panels' data (traces, questions, reasons) is shown as the server stores it.
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
  N_("Name"), N_("Kind"), N_("Origins (publishable, space-separated)"), N_("Create key"),
];
const ATTRIBUTES = ["aria-label", "title", "placeholder"];

/** Translate the console's static HTML; the English in admin.html is what shows until this runs. */
export async function translateConsole() {
  const _ = await translations()(new URLSearchParams(location.search).get("lang") || "");
  if (_.language === "en") return;
  const frame = new Set(FRAME);
  document.documentElement.lang = _.language;
  document.title = _(document.title);
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
