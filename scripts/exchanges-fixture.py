#!/usr/bin/env python3
"""fixtures/serve/exchanges.jsonl from recordings of the package in real Pi.

Usage: BONSAI_KEEP_EXCHANGES=DIR cargo test --test live_pi --test live_recall --test live_bill
       scripts/exchanges-fixture.py DIR > fixtures/serve/exchanges.jsonl

Keeps the first exchange of each shape (method, the request's fields, the reply's fields or
error code) and trims what is long (lists to a few items, strings to 300 characters): the
test that reads it checks names and kinds, not values.
"""
import glob, json, os, sys

def trim(v, depth=0):
    if isinstance(v, str):
        return v if len(v) <= 300 else v[:300] + "…"
    if isinstance(v, list):
        return [trim(x, depth + 1) for x in v[:3]]
    if isinstance(v, dict):
        return {k: trim(x, depth + 1) for k, x in v.items()}
    return v

def shape(x):
    req, rep = x["request"], x["reply"]
    params = req.get("params") or {}
    res = rep.get("result")
    res_keys = tuple(sorted(res.keys())) if isinstance(res, dict) else (rep.get("error") or {}).get("code")
    nested = tuple(sorted((res or {}).get("draft", {}) or {})) if isinstance(res, dict) else ()
    return (req.get("method"), tuple(sorted(params.keys())), res_keys, nested)

seen, out = set(), []
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.jsonl")) + glob.glob(os.path.join(sys.argv[1], ".*.jsonl"))):
    for line in open(path):
        x = json.loads(line)
        s = shape(x)
        if s in seen:
            continue
        seen.add(s)
        req = x["request"]
        p = req.get("params") or {}
        if isinstance(p.get("messages"), list):
            # A context request's fingerprints go with its messages.
            p["hashes"] = (p.get("hashes") or [])[:3]
        out.append({"request": trim(req), "reply": trim(x["reply"])})
for x in sorted(out, key=lambda x: x["request"].get("method", "")):
    print(json.dumps(x, ensure_ascii=False))
