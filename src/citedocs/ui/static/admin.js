// The admin console: insights, LLM cost, traces, corpora, jobs, API keys and the audit log of one tenant.
// The admin key is asked once and kept in sessionStorage (this tab only). Every piece of server text
// goes through textContent; the charts are the server's SVG documents, parsed as XML (no script runs).

import { AUTH_ERRORS, apiClient } from "./api.js";
import { translateConsole } from "./admin-i18n.js";
import { describeReason, el, numbering, renderAnswer, safeUrl } from "./render.js";

const KEY = "citedocs.adminKey";
const api = apiClient({ apiKey: () => sessionStorage.getItem(KEY) });
const $ = (id) => document.getElementById(id);
const loaded = new Set();
let jobTimer = null;

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
  status("insights", "Loading insights…");
  const [report, charts] = await Promise.all([api.getJSON(`/admin/insights${query}`), api.getJSON(`/admin/insights/charts${query}`)]);
  const root = $("insights");
  root.replaceChildren();
  const latency = report.latency_ms;
  root.append(
    el(
      "dl",
      { class: "totals" },
      ...[
        ["Questions", report.questions],
        ["Answered", report.answered],
        ["Refused", report.refused],
        ["Latency p50", latency.p50 === null ? "–" : `${latency.p50} ms`],
        ["Latency p95", latency.p95 === null ? "–" : `${latency.p95} ms`],
        ["Thumbs up", report.feedback.up],
        ["Thumbs down", report.feedback.down],
      ].map(([term, value]) => el("div", {}, el("dt", {}, term), el("dd", {}, String(value)))),
    ),
  );
  if (report.message) root.append(el("p", { class: "notice" }, report.message));
  root.append(
    el("div", { class: "charts" },
      el("figure", {}, svgFrom(charts.per_day), el("figcaption", {}, "Questions per day")),
      el("figure", {}, svgFrom(charts.refusals), el("figcaption", {}, "Refusals by reason"))),
  );
  root.append(gapsSection(report.gaps, query), weakSection(report.weak_answers));
  root.append(
    el("h2", {}, "Feedback comments"),
    report.feedback.comments.length
      ? table(["Verdict", "Comment", "Question", "Trace"],
        report.feedback.comments.map((c) => [c.verdict, c.comment, c.question, c.trace_id]), "Feedback comments")
      : el("p", { class: "muted" }, "No comments in this range."),
  );
  const pages = report.pages;
  root.append(
    el("h2", {}, "Most-cited pages"),
    pages.most_cited.length
      ? table(["Page", "Citations"], pages.most_cited.map((p) => [pageLink(p), String(p.citations)]), "Most-cited pages")
      : el("p", { class: "muted" }, "No answer cited a page in this range."),
    el("h2", {}, `Pages never cited (${pages.never_cited_count})`),
    el("ul", { class: "plain" }, pages.never_cited.map((p) => el("li", {}, pageLink(p)))),
  );
  const affected = report.affected_answers;
  root.append(
    el("h2", {}, `Answers a docs change affected (${affected.count})`),
    affected.count
      ? table(["Question", "When", "Cited chunks now"],
        affected.answers.map((a) => [a.question, a.created_at, a.chunks.map((c) => `${c.id} ${c.change}`).join(", ")]),
        "Answers a docs change affected")
      : el("p", { class: "muted" }, "Every cited passage still reads as it did when it was cited."),
  );
  if (report.removed_corpora.length) {
    root.append(el("p", { class: "notice" }, `Traces of corpora that no longer exist: ${report.removed_corpora.join(", ")}`));
  }
  status("insights", `Insights for ${report.range.since.slice(0, 10)} to ${report.range.until.slice(0, 10)}.`);
}

function pageLink(page) {
  return page.url ? el("a", { href: page.url, rel: "noopener noreferrer", target: "_blank" }, page.title) : el("span", {}, page.title);
}

function gapsSection(gaps, query) {
  const section = el("section", { class: "gaps", "aria-labelledby": "gaps-title" },
    el("h2", { id: "gaps-title" }, `Docs gaps (${gaps.groups.length} topics from ${gaps.more ? "the newest " : ""}${gaps.considered} questions)`));
  const issue = el("textarea", { id: "gaps-markdown", class: "issue-body", readonly: true, rows: "12", hidden: true, "aria-label": "Docs gaps as a Markdown issue body" });
  section.append(
    el("p", { class: "muted" },
      `${gaps.dismissed} question(s) dismissed, ${gaps.resolved_count} resolved by a sync. `,
      el("button", { type: "button", class: "small", id: "gaps-export", onclick: () => showIssueBody(query, issue) }, "Markdown issue body"),
      " ",
      el("button", { type: "button", class: "small", onclick: () => download(`/admin/insights/gaps${query}&format=csv`, "docs-gaps.csv") }, "CSV")),
    issue,
  );
  if (!gaps.groups.length) {
    section.append(el("p", { class: "muted" }, "No refused or down-voted questions in this range."));
  } else {
    const list = el("ol", { class: "gap-list" });
    for (const group of gaps.groups) {
      list.append(
        el("li", { class: "gap" },
          el("p", { class: "gap-size" }, `${group.size} question${group.size === 1 ? "" : "s"}`),
          el("ul", { class: "examples" }, group.examples.map((q) => el("li", {}, q))),
          el("p", {}, "Why: ", Object.entries(group.reasons).map(([r, n]) => `${r.replace(/_/g, " ")} (${n})`).join(", ")),
          group.missing_terms.length ? el("p", {}, "The docs never mention: ", el("strong", {}, group.missing_terms.join(", "))) : null,
          group.nearest_page ? el("p", {}, "Nearest page: ", pageLink(group.nearest_page)) : null,
          el("button", { type: "button", class: "small", onclick: () => dismiss(group) },
            `Dismiss: no docs change needed (${group.trace_ids.length} question${group.trace_ids.length === 1 ? "" : "s"})`)),
      );
    }
    section.append(list);
  }
  if (gaps.resolved.length) {
    section.append(el("h3", {}, "Resolved by a sync"),
      table(["Question", "Corpus", "Resolved by job", "When"],
        gaps.resolved.map((r) => [r.question, r.corpus, el("span", { class: "id" }, r.job_id), when(r.at)]), "Questions a sync resolved"));
  }
  return section;
}

function weakSection(weak) {
  const section = el("section", { class: "weak", "aria-labelledby": "weak-title" },
    el("h2", { id: "weak-title" }, `Answers to review (${weak.count} of ${weak.considered} answered close to a refusal)`));
  section.append(weak.answers.length
    ? table(["Question", "Corpus", "Cleared the refusal margin by", ""], weak.answers.map((a) => [
      a.question, a.corpus, a.cleared_by.toFixed(3),
      el("button", { type: "button", class: "link-button", onclick: () => openTrace(a.trace_id) }, "Details")]), "Answers to review")
    : el("p", { class: "muted" }, `No answer cleared the refusal margin by less than ${weak.margin}.`));
  return section;
}

async function dismiss(group) {
  await guarded("insights", async () => {
    const body = await api.postJSON("/admin/insights/gaps/dismiss", { trace_ids: group.trace_ids });
    await loadInsights();
    status("insights", `Dismissed ${body.dismissed} question(s): they no longer count as a docs gap.`);
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
    $(id).replaceChildren(el("option", { value: "" }, "every corpus"), ...body.corpora.map((c) => el("option", { value: c.name }, c.name)));
  }
}

// ------------------------------------------------------------------ LLM cost
const USD = (value) => `US$${value.toFixed(value && value < 0.01 ? 6 : 2)}`;
const COST_GROUPS = [
  ["per_day", "Day"], ["per_corpus", "Corpus"], ["per_tenant", "Tenant"], ["per_provider", "Provider / model"], ["per_route", "Route"],
];

/** Tokens and cost of the LLM calls in range (the insights' ``llm_usage``, from each answer's trace). */
async function loadCost() {
  const since = $("cost-since").value;
  const corpus = $("cost-corpus").value;
  const query = `?gaps=false&since=${encodeURIComponent(since)}${corpus ? `&corpus=${encodeURIComponent(corpus)}` : ""}`;
  status("cost", "Loading LLM cost…");
  const report = await api.getJSON(`/admin/insights${query}`);
  const spend = report.llm_usage;
  const root = $("cost");
  root.replaceChildren(
    el("dl", { class: "totals" },
      ...[
        ["Answers that used an LLM", spend.answers],
        ["Prompt tokens", spend.prompt_tokens.toLocaleString("en")],
        ["Completion tokens", spend.completion_tokens.toLocaleString("en")],
        ["Cost", USD(spend.cost_usd)],
      ].map(([term, value]) => el("div", {}, el("dt", {}, term), el("dd", {}, String(value))))),
  );
  if (!spend.answers) {
    root.append(el("p", { class: "muted" }, "No answer in this range used an LLM (the extractive backend costs nothing)."));
  } else {
    if (spend.estimated) {
      root.append(el("p", { class: "notice" }, "Some counts are estimated: a provider reported no usage for them (or died mid-answer)."));
    }
    for (const [name, label] of COST_GROUPS) {
      const rows = spend[name];
      const counted = name === "per_provider" ? "Calls" : "Answers";
      root.append(el("h2", {}, `By ${label.toLowerCase()}`),
        table([label, counted, "Prompt tokens", "Completion tokens", "Cost"], rows.map((r) => [
          name === "per_day" ? el("span", { class: "when" }, r.key) : r.key,
          String(r.answers), r.prompt_tokens.toLocaleString("en"), r.completion_tokens.toLocaleString("en"),
          USD(r.cost_usd) + (r.estimated ? " (some estimated)" : ""),
        ]), `LLM cost by ${label.toLowerCase()}`));
    }
  }
  status("cost", `LLM cost for ${report.range.since.slice(0, 10)} to ${report.range.until.slice(0, 10)}: priced by the llm_prices setting.`);
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
  status("traces", "Loading traces…");
  const params = traceQuery();
  const body = await api.getJSON(`/admin/traces?${params}`);
  const rows = body.traces.map((t) => [
    t.created_at.replace("T", " ").slice(0, 19),
    t.corpus,
    t.question,
    t.refused ? `refused: ${t.reason.replace(/_/g, " ")}` : "answered",
    t.latency_ms === null ? "–" : `${Math.round(t.latency_ms)} ms`,
    t.feedback.map((f) => (f.verdict === "up" ? "helpful" : "not helpful") + (f.comment ? `: ${f.comment}` : "")).join(" · ") || "–",
    el("button", { type: "button", class: "link-button", "data-trace": t.trace_id, onclick: () => showTrace(t.trace_id) }, "Details"),
  ]);
  const filtered = params.size > 1;
  $("traces").replaceChildren(
    rows.length ? table(["When", "Corpus", "Question", "Outcome", "Latency", "Feedback", ""], rows, "Recent traces")
      : el("p", { class: "muted" }, filtered ? "No trace matches these filters." : "No traces yet: questions asked in the chat or through the API appear here."),
  );
  status("traces", `${rows.length} newest trace(s)${filtered ? " matching the filters" : ""}.`);
}

function sourceLink(source, number) {
  const url = source.url ? safeUrl(source.url) : null;
  const label = source.section && source.section !== source.title ? `${source.title} › ${source.section}` : source.title;
  return el("li", { value: number ? String(number) : null },
    url ? el("a", { href: url, rel: "noopener noreferrer", target: "_blank" }, label) : el("span", {}, label),
    source.current ? null : el("span", { class: "muted" }, source.url ? " (changed since it was cited)" : " (no longer in the docs)"));
}

/** A trace as the user saw it: the question, then the answer with numbered source links, or the refusal. */
function renderTrace(trace) {
  const when = (trace.created_at || "").replace("T", " ").slice(0, 19);
  const latency = trace.latency_ms && typeof trace.latency_ms.total === "number" ? ` · ${Math.round(trace.latency_ms.total)} ms` : "";
  const parts = [
    el("h3", {}, trace.question || "(no question)"),
    el("p", { class: "muted" }, `${trace.corpus} · ${when}${latency} · trace ${trace.trace_id}`),
  ];
  if (trace.refused) {
    const reason = describeReason(trace.refusal_reason);
    parts.push(el("div", { class: "refusal" }, el("p", {}, el("strong", {}, "Refused. "), reason.summary),
      reason.detail ? el("p", { class: "muted" }, reason.detail) : null));
    if (trace.nearest && trace.nearest.length) {
      parts.push(el("h4", {}, "Nearest passages retrieved"), el("ol", { class: "sources" }, trace.nearest.map((s) => sourceLink(s))));
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
    parts.push(answer, el("h4", {}, "Sources"), el("ol", { class: "sources" }, sources.map((s) => sourceLink(s, numbers.get(s.id)))));
  }
  parts.push(el("details", {}, el("summary", {}, "The whole trace (JSON)"), el("pre", { class: "detail" }, JSON.stringify(trace, null, 2))));
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
const SYNC_MISSING = "Sync is not available on this server: it has no /admin/corpora route, so corpora are listed read-only "
  + "(re-ingest with `citedocs ingest`).";
const FINISHED = new Set(["succeeded", "failed", "held"]);

const when = (iso) => (iso ? el("span", { class: "when" }, iso.replace("T", " ").slice(0, 16)) : "–");
const badge = (state) => el("span", { class: `badge status-${state}` }, state);

async function loadCorpora(announce = true) {
  if (announce) status("corpora", "Loading corpora…");
  let body;
  try {
    body = await api.getJSON("/admin/corpora");
  } catch (err) {
    if (err.status !== 404) throw err;
    const plain = await api.getJSON("/corpora");
    $("upload-form").hidden = true;
    $("corpora").replaceChildren(table(["Corpus", "Version", "Chunks", "Updated"],
      plain.corpora.map((c) => [c.name, c.version, String(c.chunks), when(c.updated_at)]), "Corpora"));
    status("corpora", SYNC_MISSING, "notice");
    return;
  }
  $("upload-form").hidden = false;
  $("corpora").replaceChildren(table(["Corpus", "Source", "Version", "Chunks", "Last sync", "Next sync", ""],
    body.corpora.map((c) => [
      c.name,
      describeSource(c.source),
      c.version || "–",
      String(c.chunks),
      c.last_sync ? el("span", {}, badge(c.last_sync.status), " ", when(c.last_sync.finished_at || c.last_sync.created_at)) : "never",
      when(c.next_sync_at),
      el("button", { type: "button", class: "small", onclick: () => syncNow(c.name) }, `Sync ${c.name} now`),
    ]), "Corpora"));
  if (announce) status("corpora", `${body.corpora.length} corpus/corpora.`);
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
  status("corpora", `${what}: job ${job.id} ${job.status}. Follow it in the Jobs tab.`);
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
    status("corpora", `${what}: job ${now.id} ${now.status}${now.error ? `: ${now.error}` : ""}.`, now.status === "failed" ? "error" : "");
  };
  corporaTimer = setTimeout(() => guarded("corpora", follow), 500);
}

async function syncNow(name) {
  await guarded("corpora", async () => jobStarted(await api.postJSON(`/admin/corpora/${encodeURIComponent(name)}/sync`, {}), `Sync of ${name}`));
}

async function upload(event) {
  event.preventDefault();
  const name = $("upload-corpus").value.trim();
  const file = $("upload-file").files[0];
  if (!name || !file) {
    status("corpora", "Name the corpus and choose a .zip or .tar.gz of its docs.", "error");
    return;
  }
  const baseUrl = $("upload-base-url").value.trim();
  const query = baseUrl ? `?base_url=${encodeURIComponent(baseUrl)}` : "";
  status("corpora", `Uploading ${file.name}…`);
  await guarded("corpora", async () => {
    const body = await api.getJSON(`/admin/corpora/${encodeURIComponent(name)}/archive${query}`, {
      method: "POST",
      headers: { "Content-Type": "application/octet-stream", Accept: "application/json" },
      body: file,
    });
    await jobStarted(body, `Upload of ${file.name} to ${name}`);
  });
}

function progressOf(job) {
  const p = job.progress || {};
  const done = FINISHED.has(job.status);
  const value = done ? 1 : p.total ? p.done / p.total : 0;
  const label = done ? job.status : p.phase ? `${p.phase} ${p.done}/${p.total}` : job.status;
  return el("span", { class: "job-progress" },
    el("progress", { max: "1", value: String(value), "aria-label": `job ${job.id}: ${label}` }), ` ${label}`);
}

async function loadJobs() {
  status("jobs", "Loading jobs…");
  let body;
  try {
    body = await api.getJSON("/admin/jobs");
  } catch (err) {
    if (err.status !== 404) throw err;
    $("jobs").replaceChildren();
    status("jobs", "Jobs are not available on this server: it has no /admin/jobs route (sync is not installed).", "notice");
    return;
  }
  const jobs = body.jobs;
  $("jobs").replaceChildren(
    jobs.length ? table(["Job", "Corpus", "Trigger", "Status", "Progress", "Started", "Finished", "Report"], jobs.map((j) => [
      el("span", { class: "id" }, j.id), j.corpus, j.trigger,
      el("span", {}, badge(j.status), j.error && j.status === "failed" ? el("p", { class: "job-error" }, j.error) : null),
      progressOf(j), when(j.started_at || j.created_at), when(j.finished_at),
      j.report || j.error
        ? el("details", {}, el("summary", {}, j.status === "held" ? "held by the release gate: figures" : "report"),
          el("pre", { class: "detail" }, j.error ? j.error : JSON.stringify(j.report, null, 2)))
        : "–",
    ]), "Sync jobs", (j) => `job-${j.status}`, jobs) : el("p", { class: "muted" }, "No jobs yet: Sync now, an upload, a webhook or a schedule starts one."),
  );
  status("jobs", `${jobs.length} job(s)${jobs.some((j) => !FINISHED.has(j.status)) ? ", some still running: this list refreshes itself" : ""}.`);
  clearTimeout(jobTimer);
  if (jobs.some((j) => !FINISHED.has(j.status)) && !$("panel-jobs").hidden) jobTimer = setTimeout(() => guarded("jobs", loadJobs), 1000);
}

// ------------------------------------------------------------------ keys and audit
async function loadKeys() {
  status("keys", "Loading keys…");
  const body = await api.getJSON("/admin/keys");
  $("keys").replaceChildren(table(["Key id", "Name", "Kind", "Origins", "Created", "Revoked", ""], body.keys.map((k) => [
    k.key_id, k.name || "–", k.scope, k.origins.join(" ") || "–", k.created_at, k.revoked_at || "–",
    k.revoked_at ? "" : el("button", { type: "button", class: "small danger", onclick: () => revoke(k.key_id) }, `Revoke ${k.key_id}`),
  ]), "API keys"));
  status("keys", `${body.keys.length} key(s) of this tenant.`);
}

async function createKey(event) {
  event.preventDefault();
  await guarded("keys", async () => {
    const origins = $("key-origins").value.split(/\s+/).filter(Boolean);
    const body = await api.postJSON("/admin/keys", { name: $("key-name").value, scope: $("key-scope").value, origins });
    const box = $("new-secret");
    box.replaceChildren(
      el("p", {}, `Created ${body.key.scope} key ${body.key.key_id}. Copy its secret now; it is not shown again:`),
      el("code", { class: "secret-value" }, body.secret),
    );
    box.hidden = false;
    await loadKeys();
    status("keys", `Created ${body.key.key_id}.`);
  });
}

async function revoke(keyId) {
  await guarded("keys", async () => {
    await api.postJSON(`/admin/keys/${encodeURIComponent(keyId)}/revoke`, {});
    await loadKeys();
    status("keys", `Revoked ${keyId}.`);
  });
}

async function loadAudit() {
  status("audit", "Loading the audit log…");
  const body = await api.getJSON("/admin/audit?limit=200");
  $("audit").replaceChildren(table(["When", "Key", "Action", "Target", "Outcome", "Detail"],
    body.actions.map((a) => [el("span", { class: "when" }, a.at.replace("T", " ").slice(0, 19)), a.key_id, a.action, a.target, a.action === "job.ended" ? badge(a.outcome) : a.outcome, a.detail || ""]),
    "Audit log"));
  status("audit", `${body.actions.length} entr${body.actions.length === 1 ? "y" : "ies"}.`);
}

// ------------------------------------------------------------------ tabs, sign-in
// ------------------------------------------------------------------ inventory
const INVENTORY_PAGE = 50;

/** One page of a corpus's inventory (thousands of hosts are paged), and what a held sync would add. */
async function loadInventory(offset = 0) {
  const name = $("inventory-corpus").value;
  if (!name) {
    status("inventory", "No corpus yet.");
    return;
  }
  status("inventory", `Loading the inventory of ${name}…`);
  const kind = $("inventory-kind").value;
  const query = new URLSearchParams({ offset: String(offset), limit: String(INVENTORY_PAGE), ...(kind ? { kind } : {}) });
  const body = await api.getJSON(`/admin/inventory/${encodeURIComponent(name)}?${query}`);
  const approve = (value) => el("button", { type: "button", class: "small", onclick: () => approveHosts(name, [value], offset) }, `Approve ${value}`);
  $("inventory-pending").replaceChildren(
    ...(body.pending.length
      ? [
          el("h3", {}, `A held sync would add ${body.pending.length} new item(s)`),
          table(["Kind", "New", "Page", "Line", ""], body.pending.map((e) => [e.kind, e.value, e.path, String(e.line), approve(e.value)]), "What the held sync adds"),
          el("button", { type: "button", class: "primary small", onclick: () => approveHosts(name, [], offset, true) }, "Approve everything the held sync adds"),
        ]
      : []),
  );
  $("inventory").replaceChildren(table(["Kind", "Value", "Page", "Line", "Commit", "Status", ""],
    body.entries.map((e) => [e.kind, e.value, e.path, String(e.line), e.commit ? e.commit.slice(0, 10) : "–", e.status,
      e.status === "awaiting approval" ? approve(e.value) : ""]), `Inventory of ${name}`));
  const pages = [];
  if (offset > 0) pages.push(el("button", { type: "button", class: "small", onclick: () => guarded("inventory", () => loadInventory(Math.max(0, offset - INVENTORY_PAGE))) }, "Previous"));
  if (offset + INVENTORY_PAGE < body.total) pages.push(el("button", { type: "button", class: "small", onclick: () => guarded("inventory", () => loadInventory(offset + INVENTORY_PAGE)) }, "Next"));
  $("inventory-pages").replaceChildren(...pages);
  const last = Math.min(offset + body.entries.length, body.total);
  status("inventory", body.total ? `${offset + 1}–${last} of ${body.total} entries; ${body.pending.length} awaiting the held sync.` : "Nothing inventoried: the docs name no external host or risky step.");
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
      status("inventory", `Nothing approved: ${err.message}`, "error");
      return;
    }
    await loadInventory(offset);
    const what = body.approved.length ? `Approved ${body.approved.join(", ")}` : `Already approved (another admin did it first): ${hosts.join(", ") || "everything pending"}; nothing new`;
    status("inventory", `${what}. Sync job ${body.job.id} ${body.job.status}; follow it in the Jobs tab.`);
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
      $("sign-in-error").textContent = "Enter the admin key (it starts with cda_).";
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

await translateConsole();
start();
