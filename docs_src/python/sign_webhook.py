"""A docs deploy telling citedocs to sync: POST /hooks/corpora/CORPUS, signed with the corpus's secret."""

import hashlib
import hmac
import json
import os
import sys
import time
import uuid

import httpx

# WEBHOOK_SECRET=... python docs_src/python/sign_webhook.py [SERVER_URL] [CORPUS]
BASE = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000"
CORPUS = sys.argv[2] if len(sys.argv) > 2 else "mydocs"
SECRET = os.environ["WEBHOOK_SECRET"]  # from `citedocs sources webhook-secret CORPUS`

body = json.dumps({"ref": "refs/heads/main"}).encode()  # sign exactly the bytes you send
ts = str(int(time.time()))  # required: a request is refused once this leaves the replay window
delivery = str(uuid.uuid4())  # unique per delivery: a repeat is refused
message = f"{ts}.{delivery}.".encode() + body  # the signature covers all three
sig = hmac.new(SECRET.encode(), message, hashlib.sha256).hexdigest()
response = httpx.post(
    f"{BASE}/hooks/corpora/{CORPUS}",
    content=body,
    headers={
        "X-Citedocs-Signature": f"sha256={sig}",
        "X-Citedocs-Timestamp": ts,
        "X-Citedocs-Delivery": delivery,
        "Content-Type": "application/json",
    },
    timeout=60,
)
print(response.status_code, response.json())
