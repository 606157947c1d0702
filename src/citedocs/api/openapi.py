"""What the OpenAPI document declares beyond the routes themselves: every error status in the
``{error, detail}`` shape, the Server-Sent Events media type, and the Bearer scheme.

Why a module: clients (and the schemathesis run in CI) take the document as the contract, so
every status a route can answer must be listed, and the security scheme must be declared when
the server requires keys.
"""

from __future__ import annotations

from http import HTTPStatus

from fastapi import FastAPI
from fastapi.responses import StreamingResponse

from ..contract import ErrorBody


def _errors(*statuses: int) -> dict[int, dict]:
    return {status: {"model": ErrorBody, "description": HTTPStatus(status).phrase} for status in statuses}


# Routes that read a JSON body: it may be too large (413) or unreadable, e.g. not UTF-8 or nested too deeply (400).
BODY_ERRORS = _errors(400, 413)
ERRORS = _errors(404, 422)
# Routes behind auth, the rate limit and the load-shedding gate.
GUARDED = _errors(401, 403, 429, 503)
BEARER = "bearer"


class EventStream(StreamingResponse):
    """A Server-Sent Events response (declared as ``text/event-stream`` in the OpenAPI document)."""

    media_type = "text/event-stream"


def framework_error(status: int, method: str, path: str, allow: str | None) -> tuple[str, str]:
    """``(error, detail)`` for an HTTP error the framework raises: an unknown route, a method the
    route does not take, or a body that cannot be read as JSON."""
    if status == 400:
        return "unreadable_body", (
            "the request body could not be read as JSON (it is not valid UTF-8, or it is nested too deeply): "
            'send a UTF-8 JSON object like {"question": "How do I ...?"}'
        )
    if status == 404:
        return "not_found", f"no route {method} {path}; the routes are listed at /openapi.json"
    if status == 405:
        return "method_not_allowed", f"{path} does not take {method}; it takes {allow or 'other methods'}"
    phrase = HTTPStatus(status).phrase
    return phrase.lower().replace(" ", "_").replace("-", "_"), phrase


# One Server-Sent Event of /ask/stream (Open API 3.2 `itemSchema`): a validated sentence, then the final answer.
ASK_STREAM_EVENT = {
    "oneOf": [
        {
            "type": "object",
            "required": ["event", "data"],
            "properties": {
                "event": {"const": "sentence"},
                "data": {
                    "type": "string",
                    "contentMediaType": "application/json",
                    "contentSchema": {
                        "type": "object",
                        "required": ["text", "ids", "rendered"],
                        "properties": {
                            "text": {"type": "string"},
                            "ids": {"type": "array", "items": {"type": "string"}},
                            "rendered": {"type": "string"},
                        },
                    },
                },
            },
        },
        {
            "type": "object",
            "required": ["event", "data"],
            "properties": {
                "event": {"const": "final"},
                "data": {
                    "type": "string",
                    "contentMediaType": "application/json",
                    "contentSchema": {"$ref": "#/components/schemas/AskResponse"},
                },
            },
        },
    ]
}
ADMIN_PREFIX = "/admin/"  # routes that take an admin key whatever the auth setting (app.py, _admin_caller)
ERROR_CONTENT = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}


def complete_openapi(app: FastAPI) -> None:
    """Finish the generated document: errors are JSON whatever the route's success media type,
    event streams describe their events, and the Bearer scheme is declared and required on every
    route that can answer 401 when keys are required, and on the admin routes always."""
    generate = app.openapi

    def openapi() -> dict:
        schema = generate()
        guarded = False
        for path, operations in schema["paths"].items():
            for operation in operations.values():
                responses = operation.get("responses", {})
                for status, response in responses.items():
                    if status[0] in "45":
                        response["content"] = ERROR_CONTENT
                stream = responses.get("200", {}).get("content", {}).get(EventStream.media_type)
                if stream is not None:
                    stream.clear()
                    stream["itemSchema"] = ASK_STREAM_EVENT
                if "401" in responses and (app.state.auth_required or path.startswith(ADMIN_PREFIX)):
                    operation["security"] = [{BEARER: []}]
                    guarded = True
        if guarded:
            schema.setdefault("components", {})["securitySchemes"] = {
                BEARER: {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "An API key from `citedocs keys create` (`--admin` for the /admin routes).",
                }
            }
        return schema

    app.openapi = openapi
