// citedocs chat page: the corpus picker, the API key prompt and the composer around the shared
// conversation (chat.js), which the embeddable widget uses too. The page speaks the language of
// `?lang=` (which every answer is then asked in too), else the browser's (i18n.js).
import { ApiError, AUTH_ERRORS, apiClient, setApiKey } from "./api.js";
import { createConversation, errorBox } from "./chat.js";
import { translations } from "./i18n.js";
import { el } from "./render.js";

const api = apiClient();
const requested = new URLSearchParams(location.search).get("lang") || "";
const translate = translations();
const _ = await translate(requested);
const language = requested ? _.language : ""; // as the server negotiated it: "pt-BR" is pt, "it" English

const $ = (selector) => document.querySelector(selector);
const conversationEl = $("#conversation");
const emptyState = $("#empty-state");
const form = $("#composer");
const questionEl = $("#question");
const sendButton = $("#send");
const corpusPicker = $("#corpus-picker");
const corpusSelect = $("#corpus");
const corpusLabel = $("#corpus-label");


// ---------------------------------------------------------------- corpora

async function loadCorpora() {
  try {
    const body = await api.getJSON("/corpora");
    const corpora = body.corpora || [];
    corpusSelect.replaceChildren(
      ...corpora.map((c) =>
        el("option", { value: c.name, selected: c.name === body.default }, _("{name} · {chunks} chunks", { name: c.name, chunks: c.chunks })),
      ),
    );
    if (corpora.length > 1) {
      corpusPicker.hidden = false;
      corpusLabel.hidden = true;
    } else if (corpora.length === 1) {
      corpusPicker.hidden = true;
      corpusLabel.hidden = false;
      corpusLabel.textContent = _("Docs: {name}", { name: corpora[0].name });
      corpusLabel.title = _("version {version}, {chunks} chunks", { version: corpora[0].version, chunks: corpora[0].chunks });
    } else {
      corpusLabel.hidden = false;
      corpusLabel.textContent = _("No docs indexed yet — run `citedocs ingest`.");
    }
  } catch (err) {
    if (err instanceof ApiError && AUTH_ERRORS.has(err.code)) askForKey(err.message);
    else showNotice(err instanceof ApiError ? err.message : String(err), _("Could not load the list of docs"));
  }
}

/** The server requires an API key: ask for one, keep it in this browser, then load the docs list. */
function askForKey(message) {
  emptyState.hidden = true;
  const input = el("input", { type: "password", id: "api-key", autocomplete: "off", required: true });
  const box = el(
    "form",
    { class: "error-message key-form", role: "alert" },
    el("strong", { text: _("This server needs an API key") }),
    el("p", { text: message }),
    el("label", { for: "api-key", text: _("API key (kept in this browser only)") }),
    input,
    el("button", { type: "submit", class: "secondary" }, _("Use this key")),
  );
  box.addEventListener("submit", (event) => {
    event.preventDefault();
    if (!input.value.trim()) return input.focus();
    setApiKey(input.value.trim());
    box.remove();
    emptyState.hidden = false;
    loadCorpora();
  });
  conversationEl.append(box);
  input.focus();
}

function selectedCorpus() {
  return corpusSelect.value || undefined;
}

function showNotice(message, title) {
  emptyState.hidden = true;
  conversationEl.append(errorBox(title, message, undefined, _));
}

// ---------------------------------------------------------------- conversation

const conversation = createConversation({
  container: conversationEl,
  api,
  corpus: selectedCorpus,
  onStart: () => (emptyState.hidden = true),
  onBusy: setBusy,
  onRetry: (question) => {
    questionEl.value = question;
    questionEl.focus();
    autoGrow();
  },
  _,
  translations: translate,
  language,
});

function setBusy(busy) {
  form.classList.toggle("busy", busy);
  stopButton.hidden = !busy;
}

// ---------------------------------------------------------------- composer

const stopButton = el("button", { type: "button", class: "secondary stop", hidden: true }, _("Stop"));
stopButton.addEventListener("click", () => {
  conversation.stop(_("Stopped."));
  setBusy(false);
  questionEl.focus();
});
sendButton.after(stopButton);

function autoGrow() {
  questionEl.style.height = "auto";
  questionEl.style.height = `${Math.min(questionEl.scrollHeight, 200)}px`;
}

function submitQuestion() {
  const question = questionEl.value.trim();
  if (!question) {
    questionEl.focus();
    return;
  }
  questionEl.value = "";
  autoGrow();
  conversation.ask(question);
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  submitQuestion();
});

questionEl.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    submitQuestion();
  }
});
questionEl.addEventListener("input", autoGrow);

for (const example of document.querySelectorAll(".example")) {
  example.addEventListener("click", () => {
    questionEl.value = example.textContent;
    submitQuestion();
  });
}

$("#new-chat").addEventListener("click", () => {
  conversation.reset();
  setBusy(false);
  for (const node of [...conversationEl.children]) if (node !== emptyState) node.remove();
  emptyState.hidden = false;
  questionEl.focus();
});

/** The page's own words in the page's language (the HTML holds the English, shown until this runs). */
function translatePage() {
  document.documentElement.lang = _.language;
  document.title = _("citedocs — answers from your docs, with sources");
  const text = {
    ".skip-link": _("Skip to the question box"),
    ".tagline": _("Every claim cited to the docs — or an honest “not covered”."),
    "label[for=corpus]": _("Docs"),
    "#empty-state h2": _("Ask the docs"),
    "#empty-state p": [
      _("Answers quote only what the documentation says, with numbered sources you can open and check."),
      _("Follow-up questions keep the context of the conversation."),
    ].join(" "),
    "label[for=question]": _("Your question about the docs"),
    "#send": _("Ask"),
    "#composer-hint": _("Enter to send · Shift+Enter for a new line"),
    "#new-chat": _("New conversation"),
  };
  for (const [selector, value] of Object.entries(text)) $(selector).textContent = value;
  conversationEl.setAttribute("aria-label", _("Conversation"));
  $(".examples").setAttribute("aria-label", _("Example questions"));
  questionEl.placeholder = _("Ask a question about the docs…");
}

translatePage();
window.citedocs = { state: conversation.state, ask: conversation.ask, language: _.language }; // for debugging and tests
loadCorpora();
questionEl.focus();
