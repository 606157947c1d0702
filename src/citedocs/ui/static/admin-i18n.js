// The admin console's frame in the browser's language (`?lang=` overrides): its title, sign-in form,
// tabs and filters. The panels' data (traces, questions, reasons) is shown as the server stores it.
import { translations } from "./i18n.js";

/** Translate the console's static HTML; the English in admin.html is what shows until this runs. */
export async function translateConsole() {
  const _ = await translations()(new URLSearchParams(location.search).get("lang") || "");
  document.documentElement.lang = _.language;
  document.title = _("citedocs — admin console");
  const text = {
    ".skip-link": _("Skip to the console"),
    ".topbar h1 .muted": _("admin console"),
    "#sign-out": _("Forget the admin key"),
    "#sign-in h2": _("Open the console"),
    "label[for=admin-key]": _("Admin key"),
    "#sign-in button[type=submit]": _("Open"),
    "#tab-insights": _("Insights"),
    "#tab-traces": _("Traces"),
    "#tab-corpora": _("Corpora"),
    "#tab-jobs": _("Jobs"),
    "#tab-keys": _("API keys"),
    "#tab-audit": _("Audit log"),
    "label[for=insights-since]": _("Range"),
    "#insights-since option[value='24h']": _("last 24 hours"),
    "#insights-since option[value='7d']": _("last 7 days"),
    "#insights-since option[value='30d']": _("last 30 days"),
    "#insights-since option[value='90d']": _("last 90 days"),
    "label[for=insights-corpus]": _("Corpus"),
    "label[for=traces-corpus]": _("Corpus"),
    "label[for=upload-corpus]": _("Corpus"),
    "#insights-corpus option[value='']": _("every corpus"),
    "#traces-corpus option[value='']": _("every corpus"),
    "#insights-form button[type=submit]": _("Refresh"),
    "label[for=traces-outcome]": _("Show"),
    "#traces-outcome option[value='']": _("every answer and refusal"),
    "#traces-outcome option[value='refused']": _("refused"),
    "#traces-outcome option[value='answered']": _("answered"),
    "#traces-outcome option[value='thumbs_down']": _("marked not helpful"),
    "label[for=traces-since]": _("From"),
    "label[for=traces-until]": _("Before"),
    "#traces-form button[type=submit]": _("Filter"),
    "label[for=upload-base-url]": _("Base URL (new corpus)"),
    "label[for=upload-file]": _("Docs archive (.zip, .tar.gz)"),
    "#upload-form button[type=submit]": _("Upload"),
    "label[for=key-name]": _("Name"),
    "label[for=key-scope]": _("Kind"),
    "label[for=key-origins]": _("Origins (publishable, space-separated)"),
    "#key-form button[type=submit]": _("Create key"),
  };
  for (const [selector, value] of Object.entries(text)) {
    const node = document.querySelector(selector);
    if (node) node.textContent = value;
  }
  document.getElementById("tabs").setAttribute("aria-label", _("Console sections"));
  document.getElementById("trace-detail").setAttribute("aria-label", _("Trace details"));
}
