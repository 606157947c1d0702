// The conversation shared by the full chat page (app.js) and the embeddable widget (widget-app.js):
// streamed, cited answers with source cards, refusals, trace copy and thumbs feedback. Everything is
// built with DOM nodes and textContent (render.js); nothing from an answer or a source is parsed as HTML.
import { ApiError } from "./api.js";
import { translator } from "./i18n.js";
import { describeReason, el, formatScore, numbering, renderAnswer, safeUrl, stripMarkers } from "./render.js";

const ENGLISH = translator("en");

const MAX_HISTORY_TURNS = 20; // contract.MAX_HISTORY_TURNS
const MAX_HISTORY_CHARS = 20000;

// ---------------------------------------------------------------- icons

const SVG_NS = "http://www.w3.org/2000/svg";
const ICONS = {
  up: "M14 9V5a3 3 0 0 0-3-3l-4 9v11h11.28a2 2 0 0 0 2-1.7l1.38-9a2 2 0 0 0-2-2.3zM7 22H4a2 2 0 0 1-2-2v-7a2 2 0 0 1 2-2h3",
  down: "M10 15v4a3 3 0 0 0 3 3l4-9V2H5.72a2 2 0 0 0-2 1.7l-1.38 9a2 2 0 0 0 2 2.3zm7-13h2.67A2.31 2.31 0 0 1 22 4v7a2.31 2.31 0 0 1-2.33 2H17",
  copy: "M9 9h11v11H9zM5 15H4a1 1 0 0 1-1-1V4a1 1 0 0 1 1-1h10a1 1 0 0 1 1 1v1",
  link: "M18 13v6a2 2 0 0 1-2 2H5a2 2 0 0 1-2-2V8a2 2 0 0 1 2-2h6M15 3h6v6M10 14 21 3",
};

function icon(name) {
  const svg = document.createElementNS(SVG_NS, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("class", `icon icon-${name}`);
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("focusable", "false");
  const path = document.createElementNS(SVG_NS, "path");
  path.setAttribute("d", ICONS[name]);
  svg.append(path);
  return svg;
}


// ---------------------------------------------------------------- pieces of a turn

export function errorBox(title, message, retry, _ = ENGLISH) {
  return el(
    "div",
    { class: "error-message", role: "alert" },
    el("strong", { text: title }),
    el("p", { text: message }),
    retry ? el("button", { type: "button", class: "secondary", onclick: retry }, _("Try again")) : null,
  );
}

function cardFor(pill) {
  const id = pill.dataset.citeId;
  const turn = pill.closest(".turn");
  return turn && turn.querySelector(`.source-card[data-cite-id="${CSS.escape(id)}"]`);
}

function pillEvent(event, on) {
  const pill = event.target.closest && event.target.closest(".pill");
  if (!pill) return;
  const card = cardFor(pill);
  if (card) card.classList.toggle("highlight", on);
}

function pillClick(event) {
  const pill = event.target.closest && event.target.closest(".pill");
  if (!pill) return;
  const card = cardFor(pill);
  if (!card) return;
  for (const other of card.parentElement.querySelectorAll(".source-card.selected")) other.classList.remove("selected");
  card.classList.add("selected", "flash");
  card.scrollIntoView({ behavior: "smooth", block: "nearest" });
  card.focus({ preventScroll: true });
  setTimeout(() => card.classList.remove("flash"), 1600);
}

/** A section worth naming beside the page title: not the title again (a page without headings). */
function ownSection(citation) {
  return Boolean(citation.section) && citation.section !== citation.title;
}

function pillMaker(t, numbers, citations, _) {
  const byId = new Map(citations.map((c) => [c.id, c]));
  return (id) => {
    const n = numbers.get(id);
    const citation = byId.get(id);
    const label = citation
      ? _("Source {n}: {title}", { n, title: citation.title + (ownSection(citation) ? " › " + citation.section : "") })
      : _("Source {n}", { n });
    return el(
      "button",
      {
        type: "button",
        class: "pill",
        "data-cite-id": id,
        "aria-label": label,
        title: citation ? label : id,
        "aria-controls": citation ? `turn-${t.n}-source-${n}` : undefined,
      },
      String(n),
    );
  };
}

function renderInto(t, answer, citations, streaming, _) {
  const numbers = numbering(answer, citations);
  t.answerEl.replaceChildren(renderAnswer(answer, pillMaker(t, numbers, citations, _)));
  if (streaming) {
    const last = t.answerEl.lastElementChild || t.answerEl;
    last.append(el("span", { class: "cursor", "aria-hidden": "true" }));
  }
}

function sourceCards(t, citations, _) {
  const items = citations.map((c, i) => {
    const n = i + 1;
    const text = el("pre", { class: "chunk-text" });
    text.textContent = c.text || c.snippet || "";
    return el(
      "li",
      { class: "source-card", id: `turn-${t.n}-source-${n}`, "data-cite-id": c.id, tabindex: "-1" },
      el(
        "div",
        { class: "card-head" },
        el("span", { class: "card-number", "aria-hidden": "true" }, String(n)),
        el(
          "div",
          { class: "card-title" },
          el("span", { class: "title", text: c.title || c.id }),
          ownSection(c) ? el("span", { class: "section" }, el("span", { class: "sep", "aria-hidden": "true" }, " › "), c.section) : null,
        ),
        el("span", { class: "score", title: _("Retrieval score") }, _("score {score}", { score: formatScore(c.score) })),
      ),
      safeUrl(c.url)
        ? el(
            "a",
            { class: "source-url", href: safeUrl(c.url), target: "_blank", rel: "noopener noreferrer" },
            el("span", { text: c.url }),
            icon("link"),
            el("span", { class: "visually-hidden", text: " " + _("(opens in a new tab)") }),
          )
        : el("span", { class: "source-url", text: c.url }), // not http(s): shown, never followed
      c.snippet ? el("p", { class: "snippet", text: c.snippet }) : null,
      el("details", { class: "chunk" }, el("summary", {}, _("Show source")), text),
    );
  });
  return el(
    "section",
    { class: "sources", "aria-label": _("Sources") },
    el("h3", { text: citations.length === 1 ? _("Source") : _("Sources ({count})", { count: citations.length }) }),
    el("ol", { class: "source-list" }, items),
  );
}

/** The refusal's reason, in the answer's language; refusal_reason's detail is English (the answer
 * below says it in the user's language), so it is shown only to an English reader. */
function refusalBanner(reason, _) {
  const { summary, code, detail: english } = describeReason(reason);
  const detail = _.language === "en" ? english : "";
  return el(
    "div",
    { class: "refusal-banner", role: "note" },
    el("strong", { class: "refusal-title", text: _("Not covered by the docs") }),
    el("p", { class: "refusal-reason", text: _(summary) }),
    code || detail
      ? el(
          "p",
          { class: "refusal-detail" },
          code ? el("code", { text: code }) : null,
          detail ? ` ${detail}` : null,
        )
      : null,
  );
}

async function copyText(text, container) {
  if (navigator.clipboard && window.isSecureContext) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch {
      /* permission denied: fall back below */
    }
  }
  const area = el("textarea", { class: "clipboard-helper", readonly: true, "aria-hidden": "true" });
  area.value = text;
  container.append(area); // inside the widget's shadow root too, so the selection is ours
  area.select();
  let ok = false;
  try {
    ok = document.execCommand("copy");
  } catch {
    ok = false;
  }
  area.remove();
  return ok;
}

function traceFooter(response, api, _) {
  const traceId = response.trace_id;
  const traceCode = el("code", { class: "trace-id", text: traceId, tabindex: "0" });
  const copyStatus = el("span", { class: "copy-status", role: "status" });
  const copyButton = el(
    "button",
    {
      type: "button",
      class: "icon-button copy-trace",
      "aria-label": _("Copy trace ID"),
      title: _("Copy trace ID"),
      onclick: async () => {
        const ok = await copyText(traceId, copyButton.parentElement);
        if (ok) {
          copyStatus.textContent = _("Copied");
        } else {
          const range = document.createRange();
          range.selectNodeContents(traceCode);
          const selection = window.getSelection();
          selection.removeAllRanges();
          selection.addRange(range);
          copyStatus.textContent = _("Selected — press Ctrl+C to copy");
        }
        setTimeout(() => (copyStatus.textContent = ""), 2500);
      },
    },
    icon("copy"),
    el("span", { class: "button-label", text: _("Copy") }),
  );

  const status = el("p", { class: "feedback-status", role: "status" });
  const comment = el("textarea", {
    class: "feedback-comment",
    rows: "2",
    maxlength: "2000",
    placeholder: _("What was wrong or missing? (optional)"),
  });
  const commentId = `comment-${traceId}`;
  comment.id = commentId;
  let verdict = null;
  const thumbs = {};
  const submit = el("button", { type: "submit", class: "primary small" }, _("Send feedback"));
  const feedbackForm = el(
    "form",
    { class: "feedback-form", hidden: true },
    el("label", { for: commentId, text: _("Comment (optional)") }),
    comment,
    el(
      "div",
      { class: "feedback-actions" },
      submit,
      el(
        "button",
        {
          type: "button",
          class: "secondary small",
          onclick: () => {
            feedbackForm.hidden = true;
            choose(null);
          },
        },
        _("Cancel"),
      ),
    ),
  );
  function choose(value) {
    verdict = value;
    for (const [key, button] of Object.entries(thumbs)) button.setAttribute("aria-pressed", String(key === value));
  }
  for (const [value, label] of [
    ["up", _("Helpful")],
    ["down", _("Not helpful")],
  ]) {
    thumbs[value] = el(
      "button",
      {
        type: "button",
        class: `icon-button thumb thumb-${value}`,
        "aria-pressed": "false",
        "aria-label": label,
        title: label,
        onclick: () => {
          choose(value);
          status.textContent = "";
          feedbackForm.hidden = false;
          submit.textContent = value === "up" ? _("Send: helpful") : _("Send: not helpful");
          comment.focus({ preventScroll: true });
          // the whole form, send button included, clear of the sticky composer
          feedbackForm.scrollIntoView({ block: "center" });
        },
      },
      icon(value),
    );
  }
  feedbackForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!verdict) return;
    submit.disabled = true;
    status.classList.remove("error");
    status.textContent = _("Sending…");
    try {
      const text = comment.value.trim();
      await api.postJSON(`/traces/${encodeURIComponent(traceId)}/feedback`, { verdict, comment: text || null });
      feedbackForm.hidden = true;
      status.textContent =
        verdict === "up"
          ? _("Thanks — your feedback (helpful) was recorded.")
          : _("Thanks — your feedback (not helpful) was recorded.");
      for (const button of Object.values(thumbs)) button.disabled = true;
    } catch (err) {
      status.classList.add("error");
      status.textContent = _("Feedback not sent: {error}", { error: err.message });
    } finally {
      submit.disabled = false;
    }
  });

  return el(
    "footer",
    { class: "answer-meta" },
    el(
      "div",
      { class: "trace" },
      el("span", { class: "meta-label", text: _("Trace") }),
      traceCode,
      copyButton,
      copyStatus,
    ),
    el(
      "div",
      { class: "feedback", role: "group", "aria-label": _("Was this answer helpful?") },
      el("span", { class: "meta-label", text: _("Helpful?") }),
      thumbs.up,
      thumbs.down,
    ),
    feedbackForm,
    status,
  );
}

// ---------------------------------------------------------------- the conversation

/**
 * A conversation rendered into `container`, talking to the server through `api` (api.js's apiClient).
 * `corpus()` names the corpus to ask (undefined: the server's default); `onStart()` runs when a
 * question is asked, `onBusy(busy)` when an answer starts or stops streaming, `onRetry(question)`
 * when the user asks to try a failed question again. `_` translates the page's own strings;
 * `translations(language)` gives the translator of an answer's language (i18n.js), so that what is
 * said around an answer is in the language the answer is in; `language`, when set, is the language
 * every answer is asked in (otherwise the question's own decides, on the server).
 */
export function createConversation({
  container,
  api,
  corpus = () => undefined,
  onStart = () => {},
  onBusy = () => {},
  onRetry = () => {},
  _ = ENGLISH,
  translations = async () => ENGLISH,
  language = "",
}) {
  const state = {
    exchanges: [], // completed {question, answer} pairs: the history sent with follow-ups
    current: null, // {controller, turn} of the answer being streamed
    turnCount: 0,
  };

  function history() {
    const turns = state.exchanges.flatMap(({ question, answer }) => [
      { role: "user", content: question.slice(0, MAX_HISTORY_CHARS) },
      { role: "assistant", content: stripMarkers(answer).slice(0, MAX_HISTORY_CHARS) },
    ]);
    return turns.slice(-MAX_HISTORY_TURNS);
  }

  function newTurn(question) {
    state.turnCount += 1;
    const n = state.turnCount;
    onStart();
    const answerEl = el("div", { class: "answer" });
    const status = el("p", { class: "status" }, el("span", { class: "spinner", "aria-hidden": "true" }), _("Searching the docs…"));
    const assistant = el(
      "div",
      { class: "bubble assistant", "aria-busy": "true", "aria-label": _("Answer") },
      status,
      answerEl,
    );
    const turn = el(
      "article",
      { class: "turn", "data-state": "streaming", "data-turn": n, id: `turn-${n}`, "aria-label": _("Question {n}", { n }) },
      el("div", { class: "bubble user" }, el("span", { class: "visually-hidden", text: _("You asked:") + " " }), el("p", { text: question })),
      assistant,
    );
    container.append(turn);
    assistant.addEventListener("mouseover", (e) => pillEvent(e, true));
    assistant.addEventListener("mouseout", (e) => pillEvent(e, false));
    assistant.addEventListener("focusin", (e) => pillEvent(e, true));
    assistant.addEventListener("focusout", (e) => pillEvent(e, false));
    assistant.addEventListener("click", pillClick);
    return { n, question, turn, assistant, answerEl, status };
  }

  async function finish(t, response) {
    const _ = await translations(response.language || "en");
    t.turn.lang = _.language;
    t.status.remove();
    t.assistant.removeAttribute("aria-busy");
    if (response.refused) {
      t.turn.dataset.state = "refused";
      t.assistant.classList.add("refused");
      t.assistant.prepend(refusalBanner(response.refusal_reason, _));
      renderInto(t, response.answer, [], false, _);
      // a refusal carries no sources; drop any pills that came with streamed sentences
      for (const pill of t.answerEl.querySelectorAll(".pill")) pill.remove();
    } else {
      t.turn.dataset.state = "answered";
      renderInto(t, response.answer, response.citations, false, _);
      if (response.citations.length) t.assistant.append(sourceCards(t, response.citations, _));
      if (response.suggestions && response.suggestions.length) t.assistant.append(followUps(response.suggestions, _));
    }
    if (response.notice) t.assistant.append(el("p", { class: "notice", role: "note", text: noticeText(response.notice, _) }));
    t.assistant.append(traceFooter(response, api, _));
    state.exchanges.push({ question: t.question, answer: response.answer });
  }

  /** Follow-up questions the corpus can answer: each a button that asks it. */
  function followUps(suggestions, _) {
    const list = el("ul", { class: "follow-ups", "aria-label": _("Follow-up questions") });
    for (const s of suggestions) {
      const button = el("button", { type: "button", class: "follow-up", text: s.question });
      button.addEventListener("click", () => ask(s.question));
      list.append(el("li", {}, button));
    }
    return el("div", { class: "follow-ups-block" }, el("p", { class: "follow-ups-title", text: _("You could also ask") }), list);
  }

  function noticeText(notice, _) {
    const [code, ...rest] = notice.split(": ");
    return code === "llm_budget_exhausted" ? _("Answered without the language model: {detail}", { detail: rest.join(": ") }) : notice;
  }

  function fail(t, err) {
    t.status.remove();
    t.assistant.removeAttribute("aria-busy");
    t.turn.dataset.state = "error";
    t.assistant.classList.add("failed");
    t.answerEl.querySelector(".cursor")?.remove();
    const title =
      err instanceof ApiError && err.status
        ? _("The server refused the request (HTTP {status})", { status: err.status })
        : _("Something went wrong");
    const message =
      err instanceof ApiError ? err.message : _("Unexpected error: {error}", { error: err && err.message ? err.message : err });
    t.assistant.append(
      errorBox(title, message, () => onRetry(t.question), _),
    );
  }

  function abortCurrent(reason) {
    if (!state.current) return;
    const { controller, turn } = state.current;
    state.current = null;
    controller.abort();
    turn.status.remove();
    turn.assistant.removeAttribute("aria-busy");
    turn.turn.dataset.state = "aborted";
    turn.answerEl.querySelector(".cursor")?.remove();
    turn.assistant.append(el("p", { class: "aborted-note", text: reason }));
  }

  async function ask(question) {
    abortCurrent(_("Stopped: a new question was asked before this answer finished."));
    const t = newTurn(question);
    const controller = new AbortController();
    state.current = { controller, turn: t };
    onBusy(true);
    t.turn.scrollIntoView({ behavior: "smooth", block: "start" });

    const body = { question, history: history() };
    const name = corpus();
    if (name) body.corpus = name;
    if (language) body.language = language;

    let streamed = "";
    let final = null;
    try {
      for await (const { event, data } of api.streamEvents("/ask/stream", body, controller.signal)) {
        if (event === "sentence") {
          streamed = streamed ? `${streamed} ${data.rendered}` : data.rendered;
          t.turn.dataset.sentences = String(Number(t.turn.dataset.sentences || 0) + 1);
          t.status.hidden = true;
          renderInto(t, streamed, [], true, _);
        } else if (event === "restart") {
          // the provider writing the answer failed part-way: what was shown is void
          streamed = "";
          t.turn.dataset.sentences = "0";
          t.turn.dataset.restarts = String(Number(t.turn.dataset.restarts || 0) + 1);
          renderInto(t, "", [], true, _);
          t.status.hidden = false;
          t.status.textContent = data.next ? _("The model failed part-way; answering again…") : _("The model failed part-way.");
        } else if (event === "final") {
          final = data;
        }
      }
      if (!final) throw new ApiError(_("The answer stream ended before the final answer arrived. Please try again."), { code: "incomplete_stream" });
      await finish(t, final);
    } catch (err) {
      if (err && err.name === "AbortError") return; // abortCurrent already marked the turn
      fail(t, err);
    } finally {
      if (state.current && state.current.controller === controller) {
        state.current = null;
        onBusy(false);
      }
    }
  }

  /** Forget the conversation: stop any answer and remove every turn. */
  function reset() {
    abortCurrent(_("Stopped."));
    state.exchanges = [];
    for (const node of [...container.querySelectorAll(".turn")]) node.remove();
  }

  return { state, ask, stop: abortCurrent, reset };
}
