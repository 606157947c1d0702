"""Ask a running `citedocs serve` over HTTP: one answer, one refusal, then a streamed answer."""

import json
import sys

import httpx

# python docs_src/python/ask.py [SERVER_URL] [CORPUS]
BASE = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000"
CORPUS = sys.argv[2] if len(sys.argv) > 2 else "astro"

answer = httpx.post(f"{BASE}/ask", json={"question": "How do I deploy my Astro site to Heroku?", "corpus": CORPUS}, timeout=120).json()
print(answer["answer"])
for citation in answer["citations"]:
    print(citation["id"], citation["url"])

refusal = httpx.post(f"{BASE}/ask", json={"question": "How should I tune PostgreSQL autovacuum?", "corpus": CORPUS}, timeout=120).json()
print(refusal["refused"], refusal["refusal_reason"])

# Server-Sent Events: one `sentence` event per validated sentence, then `final` with the whole contract
with httpx.stream("POST", f"{BASE}/ask/stream", json={"question": "How do I deploy to Heroku?", "corpus": CORPUS}, timeout=120) as stream:
    event = None
    for line in stream.iter_lines():
        if line.startswith("event: "):
            event = line.removeprefix("event: ")
        elif line.startswith("data: ") and event == "final":
            print("final:", json.loads(line.removeprefix("data: "))["refused"])
