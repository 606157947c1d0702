"""citedocs as a model for the official `openai` client: a streamed answer to a follow-up question."""

import sys

from openai import OpenAI

# python docs_src/python/openai_chat.py [SERVER_URL] [CORPUS]
BASE = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000"
CORPUS = sys.argv[2] if len(sys.argv) > 2 else "astro"

client = OpenAI(base_url=f"{BASE}/v1", api_key="unused-with-auth-off", timeout=120)  # with auth on: a citedocs key
print([model.id for model in client.models.list()])  # your corpora are the models
stream = client.chat.completions.create(
    model=CORPUS,
    messages=[
        {"role": "user", "content": "How do I deploy my Astro site to Heroku?"},
        {"role": "assistant", "content": "You can deploy an Astro site to Heroku using this guide [1]."},
        {"role": "user", "content": "Which file do I create in the root of my project for it?"},
    ],
    stream=True,
)
for chunk in stream:
    print(chunk.choices[0].delta.content or "", end="", flush=True)
citedocs = chunk.model_extra["citedocs"]  # the structured contract rides on the last chunk
print("\n", citedocs["refused"], [c["id"] for c in citedocs["citations"]])
