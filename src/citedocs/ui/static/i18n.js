// The browser side's strings in the user's language. The msgids are the English text, wrapped in
// _("...") (or N_("...") where a constant keeps one), so that `make messages` extracts them into the
// server's gettext catalogs; GET /ui/messages gives one catalog as JSON.

/** Marks a msgid kept in a constant for the extractor; it is translated where it is shown. */
export const N_ = (msgid) => msgid;

/** A translate function for one catalog: _("Sources ({count})", {count: 3}). `_.language` names it. */
export function translator(language = "en", messages = {}) {
  const _ = (msgid, params = {}) =>
    (messages[msgid] || msgid).replace(/\{(\w+)\}/g, (whole, name) => (name in params ? String(params[name]) : whole));
  _.language = language;
  return _;
}

/**
 * Translators from the citedocs server at `base`, each catalog fetched once. `load(language)` gives
 * the translator of a language tag, or with no tag of the browser's languages (its Accept-Language);
 * a catalog that cannot be fetched leaves the English text.
 */
export function translations(base = "") {
  const loaded = new Map();
  return function load(language = "") {
    if (!loaded.has(language)) {
      const query = language ? `?language=${encodeURIComponent(language)}` : "";
      loaded.set(
        language,
        fetch(`${base}/ui/messages${query}`)
          .then((response) => (response.ok ? response.json() : {}))
          .catch(() => ({}))
          .then((body) => translator(body.language || "en", body.messages || {})),
      );
    }
    return loaded.get(language);
  };
}
