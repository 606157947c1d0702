"""OpenTelemetry spans for each stage of an answer and each step of a job.

Spans go through the OpenTelemetry API: without a configured SDK they cost next to nothing and go
nowhere. ``configure()`` (called by ``citedocs serve`` and the CLI) installs the SDK's tracer
provider with an OTLP/HTTP exporter when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set (the standard
``OTEL_*`` variables, e.g. ``OTEL_SERVICE_NAME`` and ``OTEL_EXPORTER_OTLP_HEADERS``, apply as usual).

An answer is one ``citedocs.ask`` span with a child per stage (rewrite, retrieve, null_level,
question_gate, grade, generate, validate, ...), emitted when the answer is finished from the times
the trace recorded, so streaming (a generator resumed on other threads) never juggles a current
span. Every span carries ``citedocs.trace_id``, the id users see with the answer (`citedocs trace ID`).
A job (an ingest) is a ``citedocs.job`` span with a child per step its progress reports.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from opentelemetry import trace

TRACER = "citedocs"
TRACE_ID_ATTRIBUTE = "citedocs.trace_id"
_configured = threading.Lock()
_done = False


def configure() -> bool:
    """Install the SDK with an OTLP exporter if OTEL_EXPORTER_OTLP_ENDPOINT is set (once a process);
    returns whether spans are exported."""
    global _done
    with _configured:
        if _done or not os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
            return _done
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        provider = TracerProvider(resource=Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "citedocs")}))
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        trace.set_tracer_provider(provider)
        _done = True
        return True


def _tracer() -> trace.Tracer:
    return trace.get_tracer(TRACER)


def record_ask(trace_id: str, started_ns: int, ended_ns: int, stages: list[tuple[str, int, int]], attributes: dict) -> None:
    """The ``citedocs.ask`` span of one finished answer and one child span per timed stage."""
    tracer = _tracer()
    root = tracer.start_span("citedocs.ask", start_time=started_ns, attributes={TRACE_ID_ATTRIBUTE: trace_id, **attributes})
    parent = trace.set_span_in_context(root)
    for name, start, end in stages:
        tracer.start_span(f"citedocs.ask.{name}", context=parent, start_time=start, attributes={TRACE_ID_ATTRIBUTE: trace_id}).end(end)
    root.end(ended_ns)


ProgressFn = Callable[[str, int, int], None]


class _Steps:
    """A progress callback that also opens a child span when a new step reports and ends it when the next begins."""

    def __init__(self, parent: trace.Span, attributes: dict) -> None:
        self.parent = parent
        self.attributes = attributes
        self.current: tuple[str, trace.Span] | None = None

    def wrap(self, progress: ProgressFn | None) -> ProgressFn:
        def report(step: str, done: int, total: int) -> None:
            if self.current is None or self.current[0] != step:
                self.close()
                span = _tracer().start_span(
                    f"citedocs.job.{step}", context=trace.set_span_in_context(self.parent), attributes=self.attributes
                )
                self.current = (step, span)
            if progress is not None:
                progress(step, done, total)

        return report

    def close(self) -> None:
        if self.current is not None:
            self.current[1].end()
            self.current = None


@contextmanager
def job(kind: str, job_id: str = "", **attributes: str) -> Iterator[_Steps]:
    """A ``citedocs.job`` span around a job; ``steps.wrap(progress)`` gives the job's progress callback
    that also makes a child span per step. ``job_id`` is carried as ``citedocs.job_id``."""
    common = {"citedocs.job_kind": kind, **({"citedocs.job_id": job_id} if job_id else {}), **attributes}
    with _tracer().start_as_current_span("citedocs.job", attributes=common) as span:
        steps = _Steps(span, common)
        try:
            yield steps
        finally:
            steps.close()
