// The admin console: insights, LLM cost, traces, corpora, jobs, API keys and the audit log of one tenant.
// The admin key is asked once and kept in sessionStorage (this tab only). Every piece of server text
// goes through textContent; the charts are the server's SVG documents, parsed as XML (no script runs).
// What the console says is in the admin's language (admin-i18n.js: one translator, `_`, for the frame
// and the panels); the data it shows (questions, corpus names, reason codes, job states, ids) is not.

import { AUTH_ERRORS, apiClient } from "./api.js";
import { consoleTranslator, translateConsole, withNodes } from "./admin-i18n.js";
import { N_ } from "./i18n.js";
import { describeReason, el, numbering, renderAnswer, safeUrl } from "./render.js";

const _ = await consoleTranslator();
const KEY = "citedocs.adminKey";
const api = apiClient({
  apiKey: () => sessionStorage.getItem(KEY),
  unreachable: _("Could not reach the citedocs server. Check that `citedocs serve` is running, then try again."),
});
const $ = (id) => document.getElementById(id);
const loaded = new Set();
let jobTimer = null;
/** A count or token total written as the admin's language writes numbers. */
const number = (value) => Number(value).toLocaleString(_.language);
const ms = (value) => _("{ms} ms", { ms: value });

function status(panel, text, kind = "") {
  const node = $(`${panel}-status`);
  node.textContent = text;
  node.className = `status ${kind}`;
}

/** A table; ``rowClass(item)`` over ``items`` (one per row) classes the rows (a failed job's, say). */
function table(columns, rows, caption, rowClass = null, items = []) {
  return el(
    "table",
    {},
    el("caption", { class: "visually-hidden" }, caption),
    el("thead", {}, el("tr", {}, columns.map((c) => el("th", { scope: "col" }, c)))),
    el("tbody", {}, rows.map((cells, i) => el("tr", { class: rowClass ? rowClass(items[i]) : null }, cells.map((c) => el("td", {}, c))))),
  );
}

function svgFrom(markup) {
  const doc = new DOMParser().parseFromString(markup, "image/svg+xml");
  return document.importNode(doc.documentElement, true);
}

/** Run a panel's loader; a missing, wrong or revoked key sends the user back to the key form. */
async function guarded(panel, loader) {
  try {
    await loader();
  } catch (err) {
    if (err.status === 401 || err.status === 403 || AUTH_ERRORS.has(err.code)) {
      signOut(err.message);
      return;
    }
    status(panel, err.message, "error");
  }
}

// ------------------------------------------------------------------ insights
async function loadInsights() {
  const since = $("insights-since").value;
  const corpus = $("insights-corpus").value;
  const query = `?since=${encodeURIComponent(since)}${corpus ? `&corpus=${encodeURIComponent(corpus)}` : ""}`;
  status("insights", _("Loading insights…"));
  const [report, charts] = await Promise.all([api.getJSON(`/admin/insights${query}`), api.getJSON(`/admin/insights/charts${query}&language=${encodeURIComponent(_.language)}`)]);
  const root = $("insights");
  root.replaceChildren();
  const latency = report.latency_ms;
  root.append(
    el(
      "dl",
      { class: "totals" },
      ...[
        [_("Questions"), number(report.questions)],
        [_("Answered"), number(report.answered)],
        [_("Refused"), number(report.refused)],
        [_("Latency p50"), latency.p50 === null ? "–" : ms(latency.p50)],
        [_("Latency p95"), latency.p95 === null ? "–" : ms(latency.p95)],
        [_("Thumbs up"), number(report.feedback.up)],
        [_("Thumbs down"), number(report.feedback.down)],
      ].map(([term, value]) => el("div", {}, el("dt", {}, term), el("dd", {}, String(value)))),
    ),
  );
  if (report.message) root.append(el("p", { class: "notice" }, report.message));
  root.append(
    el("div", { class: "charts" },
      el("figure", {}, svgFrom(charts.per_day), el("figcaption", {}, _("Questions per day"))),
      el("figure", {}, svgFrom(charts.refusals), el("figcaption", {}, _("Refusals by reason")))),
  );
  root.append(gapsSection(report.gaps, query), weakSection(report.weak_answers));
  root.append(
    el("h2", {}, _("Feedback comments")),
    report.feedback.comments.length
      ? table([_("Verdict"), _("Comment"), _("Question"), _("Trace")],
        report.feedback.comments.map((c) => [c.verdict, c.comment, c.question, c.trace_id]), _("Feedback comments"))
      : el("p", { class: "muted" }, _("No comments in this range.")),
  );
  const pages = report.pages;
  root.append(
    el("h2", {}, _("Most-cited pages")),
    pages.most_cited.length
      ? table([_("Page"), _("Citations")], pages.most_cited.map((p) => [pageLink(p), number(p.citations)]), _("Most-cited pages"))
      : el("p", { class: "muted" }, _("No answer cited a page in this range.")),
    el("h2", {}, _("Pages never cited ({count})", { count: pages.never_cited_count })),
    el("ul", { class: "plain" }, pages.never_cited.map((p) => el("li", {}, pageLink(p)))),
  );
  const affected = report.affected_answers;
  root.append(
    el("h2", {}, _("Answers a docs change affected ({count})", { count: affected.count })),
    affected.count
      ? table([_("Question"), _("When"), _("Cited chunks now")],
        affected.answers.map((a) => [a.question, a.created_at, a.chunks.map((c) => `${c.id} ${c.change}`).join(", ")]),
        _("Answers a docs change affected"))
      : el("p", { class: "muted" }, _("Every cited passage still reads as it did when it was cited.")),
  );
  if (report.removed_corpora.length) {
    root.append(el("p", { class: "notice" }, _("Traces of corpora that no longer exist: {corpora}", { corpora: report.removed_corpora.join(", ") })));
  }
  status("insights", _("Insights for {since} to {until}.", { since: report.range.since.slice(0, 10), until: report.range.until.slice(0, 10) }));
}

function pageLink(page) {
  return page.url ? el("a", { href: page.url, rel: "noopener noreferrer", target: "_blank" }, page.title) : el("span", {}, page.title);
}

function gapsSection(gaps, query) {
  const section = el("section", { class: "gaps", "aria-labelledby": "gaps-title" },
    el("h2", { id: "gaps-title" }, gaps.more
      ? _("Docs gaps ({topics} topics from the newest {questions} questions)", { topics: gaps.groups.length, questions: gaps.considered })
      : _("Docs gaps ({topics} topics from {questions} questions)", { topics: gaps.groups.length, questions: gaps.considered })));
  const issue = el("textarea", { id: "gaps-markdown", class: "issue-body", readonly: true, rows: "12", hidden: true, "aria-label": _("Docs gaps as a Markdown issue body") });
  section.append(
    el("p", { class: "muted" },
      _("{dismissed} question(s) dismissed, {resolved} resolved by a sync.", { dismissed: gaps.dismissed, resolved: gaps.resolved_count }) + " ",
      el("button", { type: "button", class: "small", id: "gaps-export", onclick: () => showIssueBody(query, issue) }, _("Markdown issue body")),
      " ",
      el("button", { type: "button", class: "small", onclick: () => download(`/admin/insights/gaps${query}&format=csv`, "docs-gaps.csv") }, "CSV")),
    issue,
  );
  if (!gaps.groups.length) {
    section.append(el("p", { class: "muted" }, _("No refused or down-voted questions in this range.")));
  } else {
    const list = el("ol", { class: "gap-list" });
    for (const group of gaps.groups) {
      list.append(
        el("li", { class: "gap" },
          el("p", { class: "gap-size" }, group.size === 1 ? _("1 question") : _("{count} questions", { count: group.size })),
          el("ul", { class: "examples" }, group.examples.map((q) => el("li", {}, q))),
          el("p", {}, _("Why: {reasons}", { reasons: Object.entries(group.reasons).map(([r, n]) => `${r.replace(/_/g, " ")} (${n})`).join(", ") })),
          group.missing_terms.length
            ? el("p", {}, ...withNodes(_("The docs never mention: {terms}"), { terms: el("strong", {}, group.missing_terms.join(", ")) }))
            : null,
          group.nearest_page ? el("p", {}, ...withNodes(_("Nearest page: {page}"), { page: pageLink(group.nearest_page) })) : null,
          el("button", { type: "button", class: "small", onclick: () => dismiss(group) },
            group.trace_ids.length === 1
              ? _("Dismiss: no docs change needed (1 question)")
              : _("Dismiss: no docs change needed ({count} questions)", { count: group.trace_ids.length }))),
      );
    }
    section.append(list);
  }
  if (gaps.resolved.length) {
    section.append(el("h3", {}, _("Resolved by a sync")),
      table([_("Question"), _("Corpus"), _("Resolved by job"), _("When")],
        gaps.resolved.map((r) => [r.question, r.corpus, el("span", { class: "id" }, r.job_id), when(r.at)]), _("Questions a sync resolved")));
  }
  return section;
}

function weakSection(weak) {
  const section = el("section", { class: "weak", "aria-labelledby": "weak-title" },
    el("h2", { id: "weak-title" }, _("Answers to review ({count} of {considered} answered close to a refusal)", { count: weak.count, considered: weak.considered })));
  section.append(weak.answers.length
    ? table([_("Question"), _("Corpus"), _("Cleared the refusal margin by"), ""], weak.answers.map((a) => [
      a.question, a.corpus, a.cleared_by.toFixed(3),
      el("button", { type: "button", class: "link-button", onclick: () => openTrace(a.trace_id) }, _("Details"))]), _("Answers to review"))
    : el("p", { class: "muted" }, _("No answer cleared the refusal margin by less than {margin}.", { margin: weak.margin })));
  return section;
}

async function dismiss(group) {
  await guarded("insights", async () => {
    const body = await api.postJSON("/admin/insights/gaps/dismiss", { trace_ids: group.trace_ids });
    await loadInsights();
    status("insights", _("Dismissed {count} question(s): they no longer count as a docs gap.", { count: body.dismissed }));
  });
}

async function showIssueBody(query, box) {
  await guarded("insights", async () => {
    box.value = await api.getText(`/admin/insights/gaps${query}&format=markdown`);
    box.hidden = false;
    box.focus();
    box.select();
  });
}

async function download(path, name) {
  await guarded("insights", async () => {
    const text = await api.getText(path);
    const link = el("a", { href: URL.createObjectURL(new Blob([text], { type: "text/csv" })), download: name });
    document.body.append(link);
    link.click();
    link.remove();
  });
}

function openTrace(traceId) {
  select($("tab-traces"));
  showTrace(traceId);
}

async function loadCorpusChoices() {
  const body = await api.getJSON("/corpora");
  $("inventory-corpus").replaceChildren(...body.corpora.map((c) => el("option", { value: c.name }, c.name)));
  for (const id of ["insights-corpus", "cost-corpus", "traces-corpus"]) {
    $(id).replaceChildren(el("option", { value: "" }, _("every corpus")), ...body.corpora.map((c) => el("option", { value: c.name }, c.name)));
  }
}

// ------------------------------------------------------------------ LLM cost
const USD = (value) => `US$${value.toFixed(value && value < 0.01 ? 6 : 2)}`;
// each grouping: its column's heading, its section's heading, its table's caption
const COST_GROUPS = [
  ["per_day", N_("Day"), N_("By day"), N_("LLM cost by day")],
  ["per_corpus", N_("Corpus"), N_("By corpus"), N_("LLM cost by corpus")],
  ["per_tenant", N_("Tenant"), N_("By tenant"), N_("LLM cost by tenant")],
  ["per_provider", N_("Provider / model"), N_("By provider / model"), N_("LLM cost by provider / model")],
  ["per_route", N_("Route"), N_("By route"), N_("LLM cost by route")],
];

/** Tokens and cost of the LLM calls in range (the insights' ``llm_usage``, from each answer's trace). */
async function loadCost() {
  const since = $("cost-since").value;
  const corpus = $("cost-corpus").value;
  const query = `?gaps=false&since=${encodeURIComponent(since)}${corpus ? `&corpus=${encodeURIComponent(corpus)}` : ""}`;
  status("cost", _("Loading LLM cost…"));
  const report = await api.getJSON(`/admin/insights${query}`);
  const spend = report.llm_usage;
  const root = $("cost");
  root.replaceChildren(
    el("dl", { class: "totals" },
      ...[
        [_("Answers that used an LLM"), number(spend.answers)],
        [_("Prompt tokens"), number(spend.prompt_tokens)],
        [_("Completion tokens"), number(spend.completion_tokens)],
        [_("Cost"), USD(spend.cost_usd)],
      ].map(([term, value]) => el("div", {}, el("dt", {}, term), el("dd", {}, String(value))))),
  );
  if (!spend.answers) {
    root.append(el("p", { class: "muted" }, _("No answer in this range used an LLM (the extractive backend costs nothing).")));
  } else {
    if (spend.estimated) {
      root.append(el("p", { class: "notice" }, _("Some counts are estimated: a provider reported no usage for them (or died mid-answer).")));
    }
    for (const [name, column, heading, caption] of COST_GROUPS) {
      const rows = spend[name];
      const counted = name === "per_provider" ? _("Calls") : _("Answers");
      root.append(el("h2", {}, _(heading)),
        table([_(column), counted, _("Prompt tokens"), _("Completion tokens"), _("Cost")], rows.map((r) => [
          name === "per_day" ? el("span", { class: "when" }, r.key) : r.key,
          number(r.answers), number(r.prompt_tokens), number(r.completion_tokens),
          r.estimated ? _("{cost} (some estimated)", { cost: USD(r.cost_usd) }) : USD(r.cost_usd),
        ]), _(caption)));
    }
  }
  status("cost", _("LLM cost for {since} to {until}: priced by the llm_prices setting.", { since: report.range.since.slice(0, 10), until: report.range.until.slice(0, 10) }));
}

// ------------------------------------------------------------------ traces
function traceQuery() {
  const params = new URLSearchParams({ limit: "100" });
  for (const name of ["outcome", "corpus", "since", "until"]) {
    const value = $(`traces-${name}`).value;
    if (value) params.set(name, value);
  }
  return params;
}

async function loadTraces() {
  status("traces", _("Loading traces…"));
  const params = traceQuery();
  const body = await api.getJSON(`/admin/traces?${params}`);
  const rows = body.traces.map((t) => [
    t.created_at.replace("T", " ").slice(0, 19),
    t.corpus,
    t.question,
    t.refused ? _("refused: {reason}", { reason: t.reason.replace(/_/g, " ") }) : _("answered"),
    t.latency_ms === null ? "–" : ms(Math.round(t.latency_ms)),
    t.feedback.map(feedbackText).join(" · ") || "–",
    el("button", { type: "button", class: "link-button", "data-trace": t.trace_id, onclick: () => showTrace(t.trace_id) }, _("Details")),
  ]);
  const filtered = params.size > 1;
  $("traces").replaceChildren(
    rows.length ? table([_("When"), _("Corpus"), _("Question"), _("Outcome"), _("Latency"), _("Feedback"), ""], rows, _("Recent traces"))
      : el("p", { class: "muted" }, filtered ? _("No trace matches these filters.") : _("No traces yet: questions asked in the chat or through the API appear here.")),
  );
  status("traces", filtered
    ? _("{count} newest trace(s) matching the filters.", { count: rows.length })
    : _("{count} newest trace(s).", { count: rows.length }));
}

/** A user's verdict on an answer, with their comment if they wrote one. */
function feedbackText(f) {
  if (f.verdict === "up") return f.comment ? _("helpful: {comment}", { comment: f.comment }) : _("helpful");
  return f.comment ? _("not helpful: {comment}", { comment: f.comment }) : _("not helpful");
}

function sourceLink(source, number) {
  const url = source.url ? safeUrl(source.url) : null;
  const label = source.section && source.section !== source.title ? `${source.title} › ${source.section}` : source.title;
  return el("li", { value: number ? String(number) : null },
    url ? el("a", { href: url, rel: "noopener noreferrer", target: "_blank" }, label) : el("span", {}, label),
    source.current ? null : el("span", { class: "muted" }, " " + (source.url ? _("(changed since it was cited)") : _("(no longer in the docs)"))));
}

/** A trace as the user saw it: the question, then the answer with numbered source links, or the refusal. */
function renderTrace(trace) {
  const when = (trace.created_at || "").replace("T", " ").slice(0, 19);
  const latency = trace.latency_ms && typeof trace.latency_ms.total === "number" ? ms(Math.round(trace.latency_ms.total)) : null;
  const parts = [
    el("h3", {}, trace.question || _("(no question)")),
    el("p", { class: "muted" }, [trace.corpus, when, latency, _("trace {id}", { id: trace.trace_id })].filter((p) => p !== null).join(" · ")),
  ];
  if (trace.refused) {
    const reason = describeReason(trace.refusal_reason);
    parts.push(el("div", { class: "refusal" }, el("p", {}, el("strong", {}, _("Refused.") + " "), _(reason.summary)),
      reason.detail ? el("p", { class: "muted" }, reason.detail) : null));
    if (trace.nearest && trace.nearest.length) {
      parts.push(el("h4", {}, _("Nearest passages retrieved")), el("ol", { class: "sources" }, trace.nearest.map((s) => sourceLink(s))));
    }
  } else {
    const sources = trace.sources || [];
    const numbers = numbering(trace.answer || "", sources);
    const byId = new Map(sources.map((s) => [s.id, s]));
    const pill = (id) => {
      const source = byId.get(id);
      const url = source && source.url ? safeUrl(source.url) : null;
      const text = `[${numbers.get(id) || "?"}]`;
      return url ? el("a", { class: "cite", href: url, rel: "noopener noreferrer", target: "_blank", title: source.title }, text)
        : el("span", { class: "cite" }, text);
    };
    const answer = el("div", { class: "answer" });
    answer.append(renderAnswer(trace.answer || "", pill));
    parts.push(answer, el("h4", {}, _("Sources")), el("ol", { class: "sources" }, sources.map((s) => sourceLink(s, numbers.get(s.id)))));
  }
  parts.push(el("details", {}, el("summary", {}, _("The whole trace (JSON)")), el("pre", { class: "detail" }, JSON.stringify(trace, null, 2))));
  return parts;
}

async function showTrace(traceId) {
  await guarded("traces", async () => {
    const trace = await api.getJSON(`/admin/traces/${encodeURIComponent(traceId)}`);
    const detail = $("trace-detail");
    detail.replaceChildren(...renderTrace(trace));
    detail.hidden = false;
    detail.focus();
  });
}

// ------------------------------------------------------------------ corpora and jobs (sync routes)
const SYNC_MISSING = N_("Sync is not available on this server: it has no /admin/corpora route, so corpora are listed read-only (re-ingest with `citedocs ingest`).");
const FINISHED = new Set(["succeeded", "failed", "held"]);

const when = (iso) => (iso ? el("span", { class: "when" }, iso.replace("T", " ").slice(0, 16)) : "–");
const badge = (state) => el("span", { class: `badge status-${state}` }, state);

async function loadCorpora(announce = true) {
  if (announce) status("corpora", _("Loading corpora…"));
  let body;
  try {
    body = await api.getJSON("/admin/corpora");
  } catch (err) {
    if (err.status !== 404) throw err;
    const plain = await api.getJSON("/corpora");
    $("upload-form").hidden = true;
    $("corpora").replaceChildren(table([_("Corpus"), _("Version"), _("Chunks"), _("Updated")],
      plain.corpora.map((c) => [c.name, c.version, number(c.chunks), when(c.updated_at)]), _("Corpora")));
    status("corpora", _(SYNC_MISSING), "notice");
    return;
  }
  $("upload-form").hidden = false;
  $("corpora").replaceChildren(table([_("Corpus"), _("Docs source"), _("Version"), _("Chunks"), _("Last sync"), _("Next sync"), ""],
    body.corpora.map((c) => [
      c.name,
      describeSource(c.source),
      c.version || "–",
      number(c.chunks),
      c.last_sync ? el("span", {}, badge(c.last_sync.status), " ", when(c.last_sync.finished_at || c.last_sync.created_at)) : _("never"),
      when(c.next_sync_at),
      el("button", { type: "button", class: "small", onclick: () => syncNow(c.name) }, _("Sync {corpus} now", { corpus: c.name })),
    ]), _("Corpora")));
  if (announce) status("corpora", _("{count} corpus/corpora.", { count: body.corpora.length }));
}

function describeSource(source) {
  if (!source || typeof source !== "object") return source ? String(source) : "–";
  const extra = ["branch", "every"].filter((k) => source[k]).map((k) => `${k} ${source[k]}`);
  return [source.kind, source.location, ...extra, source.webhook ? "webhook" : ""].filter(Boolean).join(" · ");
}

let corporaTimer = null;

/** Say the job started, refresh the corpora list at once, and again (with the outcome) when it ends. */
async function jobStarted(body, what) {
  const job = body.job;
  status("corpora", _("{what}: job {job} {status}. Follow it in the Jobs tab.", { what, job: job.id, status: job.status }));
  loaded.delete("jobs");
  await loadCorpora(false);
  clearTimeout(corporaTimer);
  const follow = async () => {
    const now = (await api.getJSON(`/admin/jobs/${encodeURIComponent(job.id)}`)).job;
    if (!FINISHED.has(now.status)) {
      corporaTimer = setTimeout(() => guarded("corpora", follow), 1000);
      return;
    }
    await loadCorpora(false);
    const ended = now.error
      ? _("{what}: job {job} {status}: {error}.", { what, job: now.id, status: now.status, error: now.error })
      : _("{what}: job {job} {status}.", { what, job: now.id, status: now.status });
    status("corpora", ended, now.status === "failed" ? "error" : "");
  };
  corporaTimer = setTimeout(() => guarded("corpora", follow), 500);
}

async function syncNow(name) {
  await guarded("corpora", async () => jobStarted(await api.postJSON(`/admin/corpora/${encodeURIComponent(name)}/sync`, {}), _("Sync of {corpus}", { corpus: name })));
}

async function upload(event) {
  event.preventDefault();
  const name = $("upload-corpus").value.trim();
  const file = $("upload-file").files[0];
  if (!name || !file) {
    status("corpora", _("Name the corpus and choose a .zip or .tar.gz of its docs."), "error");
    return;
  }
  const baseUrl = $("upload-base-url").value.trim();
  const query = baseUrl ? `?base_url=${encodeURIComponent(baseUrl)}` : "";
  status("corpora", _("Uploading {file}…", { file: file.name }));
  await guarded("corpora", async () => {
    const body = await api.getJSON(`/admin/corpora/${encodeURIComponent(name)}/archive${query}`, {
      method: "POST",
      headers: { "Content-Type": "application/octet-stream", Accept: "application/json" },
      body: file,
    });
    await jobStarted(body, _("Upload of {file} to {corpus}", { file: file.name, corpus: name }));
  });
}

function progressOf(job) {
  const p = job.progress || {};
  const done = FINISHED.has(job.status);
  const value = done ? 1 : p.total ? p.done / p.total : 0;
  const label = done ? job.status : p.phase ? `${p.phase} ${p.done}/${p.total}` : job.status;
  return el("span", { class: "job-progress" },
    el("progress", { max: "1", value: String(value), "aria-label": _("job {job}: {progress}", { job: job.id, progress: label }) }), ` ${label}`);
}

async function loadJobs() {
  status("jobs", _("Loading jobs…"));
  let body;
  try {
    body = await api.getJSON("/admin/jobs");
  } catch (err) {
    if (err.status !== 404) throw err;
    $("jobs").replaceChildren();
    status("jobs", _("Jobs are not available on this server: it has no /admin/jobs route (sync is not installed)."), "notice");
    return;
  }
  const jobs = body.jobs;
  $("jobs").replaceChildren(
    jobs.length ? table([_("Job"), _("Corpus"), _("Trigger"), _("Status"), _("Progress"), _("Started"), _("Finished"), _("Report")], jobs.map((j) => [
      el("span", { class: "id" }, j.id), j.corpus, j.trigger,
      el("span", {}, badge(j.status), j.error && j.status === "failed" ? el("p", { class: "job-error" }, j.error) : null),
      progressOf(j), when(j.started_at || j.created_at), when(j.finished_at),
      j.report || j.error
        ? el("details", {}, el("summary", {}, j.status === "held" ? _("held by the release gate: figures") : _("report")),
          el("pre", { class: "detail" }, j.error ? j.error : JSON.stringify(j.report, null, 2)))
        : "–",
    ]), _("Sync jobs"), (j) => `job-${j.status}`, jobs) : el("p", { class: "muted" }, _("No jobs yet: Sync now, an upload, a webhook or a schedule starts one.")),
  );
  status("jobs", jobs.some((j) => !FINISHED.has(j.status))
    ? _("{count} job(s), some still running: this list refreshes itself.", { count: jobs.length })
    : _("{count} job(s).", { count: jobs.length }));
  clearTimeout(jobTimer);
  if (jobs.some((j) => !FINISHED.has(j.status)) && !$("panel-jobs").hidden) jobTimer = setTimeout(() => guarded("jobs", loadJobs), 1000);
}

// ------------------------------------------------------------------ keys and audit
async function loadKeys() {
  status("keys", _("Loading keys…"));
  const body = await api.getJSON("/admin/keys");
  $("keys").replaceChildren(table([_("Key id"), _("Name"), _("Kind"), _("Origins"), _("Created"), _("Revoked"), ""], body.keys.map((k) => [
    k.key_id, k.name || "–", k.scope, k.origins.join(" ") || "–", k.created_at, k.revoked_at || "–",
    k.revoked_at ? "" : el("button", { type: "button", class: "small danger", onclick: () => revoke(k.key_id) }, _("Revoke {key}", { key: k.key_id })),
  ]), _("API keys")));
  status("keys", _("{count} key(s) of this tenant.", { count: body.keys.length }));
}

async function createKey(event) {
  event.preventDefault();
  await guarded("keys", async () => {
    const origins = $("key-origins").value.split(/\s+/).filter(Boolean);
    const body = await api.postJSON("/admin/keys", { name: $("key-name").value, scope: $("key-scope").value, origins });
    const box = $("new-secret");
    box.replaceChildren(
      el("p", {}, _("Created {scope} key {key}. Copy its secret now; it is not shown again:", { scope: body.key.scope, key: body.key.key_id })),
      el("code", { class: "secret-value" }, body.secret),
    );
    box.hidden = false;
    await loadKeys();
    status("keys", _("Created {key}.", { key: body.key.key_id }));
  });
}

async function revoke(keyId) {
  await guarded("keys", async () => {
    await api.postJSON(`/admin/keys/${encodeURIComponent(keyId)}/revoke`, {});
    await loadKeys();
    status("keys", _("Revoked {key}.", { key: keyId }));
  });
}

async function loadAudit() {
  status("audit", _("Loading the audit log…"));
  const body = await api.getJSON("/admin/audit?limit=200");
  $("audit").replaceChildren(table([_("When"), _("Key"), _("Action"), _("Target"), _("Outcome"), _("Detail")],
    body.actions.map((a) => [el("span", { class: "when" }, a.at.replace("T", " ").slice(0, 19)), a.key_id, a.action, a.target, a.action === "job.ended" ? badge(a.outcome) : a.outcome, a.detail || ""]),
    _("Audit log")));
  status("audit", body.actions.length === 1 ? _("1 entry.") : _("{count} entries.", { count: body.actions.length }));
}

// ------------------------------------------------------------------ tabs, sign-in
// ------------------------------------------------------------------ inventory
const INVENTORY_PAGE = 50;

/** One page of a corpus's inventory (thousands of hosts are paged), and what a held sync would add. */
async function loadInventory(offset = 0) {
  const name = $("inventory-corpus").value;
  if (!name) {
    status("inventory", _("No corpus yet."));
    return;
  }
  status("inventory", _("Loading the inventory of {corpus}…", { corpus: name }));
  const kind = $("inventory-kind").value;
  const query = new URLSearchParams({ offset: String(offset), limit: String(INVENTORY_PAGE), ...(kind ? { kind } : {}) });
  const body = await api.getJSON(`/admin/inventory/${encodeURIComponent(name)}?${query}`);
  const approve = (value) => el("button", { type: "button", class: "small", onclick: () => approveHosts(name, [value], offset) }, _("Approve {host}", { host: value }));
  $("inventory-pending").replaceChildren(
    ...(body.pending.length
      ? [
          el("h3", {}, _("A held sync would add {count} new item(s)", { count: body.pending.length })),
          table([_("Kind"), _("New"), _("Page"), _("Line"), ""], body.pending.map((e) => [e.kind, e.value, e.path, String(e.line), approve(e.value)]), _("What the held sync adds")),
          el("button", { type: "button", class: "primary small", onclick: () => approveHosts(name, [], offset, true) }, _("Approve everything the held sync adds")),
        ]
      : []),
  );
  $("inventory").replaceChildren(table([_("Kind"), _("Value"), _("Page"), _("Line"), _("Commit"), _("Status"), ""],
    body.entries.map((e) => [e.kind, e.value, e.path, String(e.line), e.commit ? e.commit.slice(0, 10) : "–", e.status,
      e.status === "awaiting approval" ? approve(e.value) : ""]), _("Inventory of {corpus}", { corpus: name })));
  const pages = [];
  if (offset > 0) pages.push(el("button", { type: "button", class: "small", onclick: () => guarded("inventory", () => loadInventory(Math.max(0, offset - INVENTORY_PAGE))) }, _("Previous")));
  if (offset + INVENTORY_PAGE < body.total) pages.push(el("button", { type: "button", class: "small", onclick: () => guarded("inventory", () => loadInventory(offset + INVENTORY_PAGE)) }, _("Next")));
  $("inventory-pages").replaceChildren(...pages);
  const last = Math.min(offset + body.entries.length, body.total);
  status("inventory", body.total
    ? _("{first}–{last} of {total} entries; {pending} awaiting the held sync.", { first: offset + 1, last, total: body.total, pending: body.pending.length })
    : _("Nothing inventoried: the docs name no external host or risky step."));
}

/** Approve (audited on the server), then show what changed: an approval another admin made first
 * approves nothing new and says so; a host a later sync removed is refused with the server's reason. */
async function approveHosts(name, hosts, offset, allPending = false) {
  await guarded("inventory", async () => {
    let body;
    try {
      body = await api.postJSON(`/admin/inventory/${encodeURIComponent(name)}/approve`, { hosts, all_pending: allPending });
    } catch (err) {
      if (err.status !== 422) throw err;
      await loadInventory(offset);
      status("inventory", _("Nothing approved: {error}", { error: err.message }), "error");
      return;
    }
    await loadInventory(offset);
    const asked = hosts.join(", ") || _("everything pending");
    const what = body.approved.length
      ? _("Approved {hosts}", { hosts: body.approved.join(", ") })
      : _("Already approved (another admin did it first): {hosts}; nothing new", { hosts: asked });
    status("inventory", _("{what}. Sync job {job} {status}; follow it in the Jobs tab.", { what, job: body.job.id, status: body.job.status }));
    loaded.delete("jobs");
  });
}

const LOADERS = { insights: loadInsights, cost: loadCost, traces: loadTraces, corpora: loadCorpora, jobs: loadJobs, inventory: () => loadInventory(0), keys: loadKeys, audit: loadAudit };

function tabs() {
  return [...document.querySelectorAll('[role="tab"]')];
}

function select(tab, focus = false) {
  for (const other of tabs()) {
    const chosen = other === tab;
    other.setAttribute("aria-selected", String(chosen));
    other.tabIndex = chosen ? 0 : -1;
    $(other.getAttribute("aria-controls")).hidden = !chosen;
  }
  if (focus) tab.focus();
  const name = tab.id.replace("tab-", "");
  if (!loaded.has(name) || ["traces", "corpora", "jobs", "inventory"].includes(name)) {  // these change while the console is open
    loaded.add(name);
    guarded(name, LOADERS[name]);
  }
}

function onTabKey(event) {
  const all = tabs();
  const at = all.indexOf(event.target);
  const next = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: all.length - 1 }[event.key];
  if (next === undefined) return;
  event.preventDefault();
  select(all[(next + all.length) % all.length], true);
}

function signOut(message = "") {
  sessionStorage.removeItem(KEY);
  loaded.clear();
  $("console").hidden = true;
  $("sign-out").hidden = true;
  $("sign-in").hidden = false;
  $("sign-in-error").textContent = message;
  $("admin-key").focus();
}

async function open() {
  $("sign-in").hidden = true;
  $("console").hidden = false;
  $("sign-out").hidden = false;
  await guarded("insights", async () => {
    await loadCorpusChoices();
    select($("tab-insights"));
  });
}

function start() {
  $("sign-in").addEventListener("submit", (event) => {
    event.preventDefault();
    const key = $("admin-key").value.trim();
    if (!key) {
      $("sign-in-error").textContent = _("Enter the admin key (it starts with cda_).");
      return;
    }
    sessionStorage.setItem(KEY, key);
    $("admin-key").value = "";
    open();
  });
  $("sign-out").addEventListener("click", () => signOut());
  $("insights-form").addEventListener("submit", (event) => {
    event.preventDefault();
    guarded("insights", loadInsights);
  });
  $("cost-form").addEventListener("submit", (event) => {
    event.preventDefault();
    guarded("cost", loadCost);
  });
  $("key-form").addEventListener("submit", createKey);
  $("inventory-form").addEventListener("submit", (event) => {
    event.preventDefault();
    guarded("inventory", () => loadInventory(0));
  });
  $("upload-form").addEventListener("submit", upload);
  $("traces-form").addEventListener("submit", (event) => {
    event.preventDefault();
    $("trace-detail").hidden = true;
    guarded("traces", loadTraces);
  });
  for (const tab of tabs()) {
    tab.addEventListener("click", () => select(tab));
    tab.addEventListener("keydown", onTabKey);
  }
  if (sessionStorage.getItem(KEY)) open();
  else signOut();
  window.citedocsAdmin = { ready: true };
}

translateConsole(_);
start();
