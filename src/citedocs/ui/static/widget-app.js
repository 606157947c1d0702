// The embeddable widget: a launcher button and an accessible dialog around the conversation that
// the chat page uses too (chat.js), rendered into the Shadow DOM that widget.js created.
import { apiClient } from "./api.js";
import { createConversation, errorBox } from "./chat.js";
import { translations } from "./i18n.js";
import { el } from "./render.js";

const FOCUSABLE = "button, [href], textarea, input, select, summary, [tabindex]:not([tabindex='-1'])";
const IS_MAC = /Mac|iPhone|iPad/.test(navigator.platform || navigator.userAgent);

/** {ctrl, meta, alt, shift, key} from "mod+k" ("mod" = ⌘ on macOS, Ctrl elsewhere); null for "none". */
export function parseShortcut(spec = "mod+k") {
  if (!spec || spec === "none") return null;
  const parts = spec.toLowerCase().split("+").map((p) => p.trim());
  const shortcut = { ctrl: false, meta: false, alt: false, shift: false, key: parts.pop() };
  for (const part of parts) {
    if (part === "mod") shortcut[IS_MAC ? "meta" : "ctrl"] = true;
    else if (part in shortcut && part !== "key") shortcut[part] = true;
  }
  return shortcut.key ? shortcut : null;
}

function matches(shortcut, event) {
  return (
    shortcut &&
    event.key.toLowerCase() === shortcut.key &&
    event.ctrlKey === shortcut.ctrl &&
    event.metaKey === shortcut.meta &&
    event.altKey === shortcut.alt &&
    event.shiftKey === shortcut.shift
  );
}

function describeShortcut(shortcut) {
  if (!shortcut) return "";
  const names = [shortcut.ctrl && "Ctrl", shortcut.meta && "⌘", shortcut.alt && "Alt", shortcut.shift && "Shift"];
  return [...names.filter(Boolean), shortcut.key.toUpperCase()].join("+");
}

async function stylesheet(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  const sheet = new CSSStyleSheet();
  sheet.replaceSync(await response.text());
  return sheet;
}

/**
 * Build the widget into `root` (a ShadowRoot). `options` are the script tag's data attributes
 * (corpus, title, placeholder, accent, position, shortcut, key, language) plus `server`, the
 * citedocs URL. The widget speaks `language` (which every answer is then asked in too), else the
 * host page's `<html lang>`, else the browser's.
 */
export async function mount(root, options) {
  const { server } = options;
  const translate = translations(server);
  const [_, ...sheets] = await Promise.all([
    translate(options.language || document.documentElement.lang || ""),
    ...["app.css", "widget.css"].map((name) => stylesheet(`${server}/static/${name}`)),
  ]);
  root.adoptedStyleSheets = sheets;
  const language = options.language ? _.language : ""; // as the server negotiated it: "pt-BR" is pt
  if (options.accent && CSS.supports("color", options.accent)) {
    root.host.style.setProperty("--accent", options.accent);
    root.host.style.setProperty("--user", options.accent);
  }
  const title = options.title || _("Ask the docs");
  const shortcut = parseShortcut(options.shortcut);
  const keys = describeShortcut(shortcut);
  const api = apiClient({
    base: server,
    apiKey: () => options.key || null,
    unreachable: _(
      "Could not reach the docs assistant. It may be down, or this site may not be allowed to use it (its operator lists allowed sites in cors_origins).",
    ),
  });

  const launcher = el(
    "button",
    {
      type: "button",
      class: "cd-launcher",
      "aria-haspopup": "dialog",
      "aria-expanded": "false",
      "aria-controls": "cd-dialog",
      "aria-keyshortcuts": shortcut ? keys.replace("⌘", "Meta") : undefined,
      title: keys ? `${title} (${keys})` : title,
    },
    el("span", { class: "cd-launcher-mark", "aria-hidden": "true" }, "“"),
    el("span", { class: "cd-launcher-label" }, _("Ask AI")),
  );
  const conversationEl = el("section", {
    class: "conversation cd-conversation",
    "aria-live": "polite",
    "aria-relevant": "additions text",
    "aria-label": _("Conversation"),
    lang: _.language,
  });
  const intro = el(
    "p",
    { class: "cd-intro" },
    _("Answers quote only what the documentation says, with numbered sources you can open and check."),
    " ",
    keys ? _("{keys} opens this panel; Esc closes it.", { keys }) : _("Esc closes this panel."),
  );
  const question = el("textarea", {
    id: "cd-question",
    rows: "1",
    maxlength: "2000",
    autocomplete: "off",
    placeholder: options.placeholder || _("Ask a question about the docs…"),
  });
  const send = el("button", { type: "submit", class: "send" }, _("Ask"));
  const stop = el("button", { type: "button", class: "secondary stop", hidden: true }, _("Stop"));
  const form = el(
    "form",
    { class: "cd-composer", novalidate: true },
    el("label", { for: "cd-question", class: "visually-hidden", text: _("Your question about the docs") }),
    question,
    send,
    stop,
  );
  const close = el("button", { type: "button", class: "icon-button cd-close", "aria-label": _("Close") }, "✕");
  const newChat = el("button", { type: "button", class: "link-button cd-new" }, _("New conversation"));
  const dialog = el(
    "dialog",
    { id: "cd-dialog", class: "cd-dialog", "aria-labelledby": "cd-title", lang: _.language },
    el(
      "header",
      { class: "cd-header" },
      el("h2", { id: "cd-title", text: title }),
      newChat,
      close,
    ),
    el("div", { class: "cd-body" }, intro, conversationEl),
    form,
  );
  const frame = el("div", { class: `cd-root cd-${options.position === "bottom-left" ? "left" : "right"}` }, launcher, dialog);
  root.append(frame);

  const conversation = createConversation({
    container: conversationEl,
    api,
    corpus: () => options.corpus || undefined,
    onStart: () => (intro.hidden = true),
    onBusy: (busy) => (stop.hidden = !busy),
    onRetry: (text) => {
      question.value = text;
      question.focus();
    },
    _,
    translations: translate,
    language,
  });

  let checked = false;
  function open() {
    if (!dialog.open) dialog.showModal();
    launcher.setAttribute("aria-expanded", "true");
    question.focus();
    if (!checked) {
      checked = true;
      api.getJSON("/corpora").catch((err) => conversationEl.append(errorBox(_("The docs assistant is unavailable"), err.message, undefined, _)));
    }
  }
  function closeDialog() {
    if (dialog.open) dialog.close();
  }
  dialog.addEventListener("close", () => {
    launcher.setAttribute("aria-expanded", "false");
    launcher.focus();
  });
  launcher.addEventListener("click", open);
  close.addEventListener("click", closeDialog);
  dialog.addEventListener("click", (event) => {
    if (event.target === dialog) closeDialog(); // a click on the backdrop
  });
  newChat.addEventListener("click", () => {
    conversation.reset();
    for (const node of [...conversationEl.children]) node.remove();
    intro.hidden = false;
    question.focus();
  });
  stop.addEventListener("click", () => {
    conversation.stop(_("Stopped."));
    stop.hidden = true;
    question.focus();
  });

  function submit() {
    const text = question.value.trim();
    if (!text) return question.focus();
    question.value = "";
    conversation.ask(text);
  }
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    submit();
  });
  question.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      submit();
    }
  });

  dialog.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      // closed here rather than by the browser's default: host pages often preventDefault() Esc on
      // document (Sphinx's doctools.js does), which would keep a native dialog open
      event.preventDefault();
      event.stopPropagation();
      closeDialog();
      return;
    }
    if (event.key !== "Tab") return; // keep Tab inside the dialog (the page behind it is inert)
    const focusable = [...dialog.querySelectorAll(FOCUSABLE)].filter((node) => !node.disabled && node.getClientRects().length);
    if (!focusable.length) return;
    const first = focusable[0];
    const last = focusable[focusable.length - 1];
    const active = root.activeElement;
    if (event.shiftKey && active === first) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && active === last) {
      event.preventDefault();
      first.focus();
    }
  });
  document.addEventListener(
    "keydown",
    (event) => {
      if (!matches(shortcut, event)) return;
      event.preventDefault();
      if (dialog.open) question.focus();
      else open();
    },
    true,
  );
  root.host.dataset.ready = "true"; // for tests and for pages that wait on the widget
}
