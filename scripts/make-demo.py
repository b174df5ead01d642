#!/usr/bin/env python3
"""Writes fixtures/demo.jsonl: the bundled demo session bonsai opens when Pi has no sessions.

A small but complete Pi 0.87-style session: a system prompt, tool calls with file reads and
edits, a failing test run, a label, a branch left with a branch summary, a context edit, a
compaction whose cut is the one Pi's prepareCompaction picks (asked of `bonsai cut`), and a
session name. Deterministic: same bytes every run.

    python3 scripts/make-demo.py target/debug/bonsai
"""
import json, subprocess, sys, os

BONSAI = sys.argv[1] if len(sys.argv) > 1 else "target/debug/bonsai"
OUT = os.path.join(os.path.dirname(__file__), "..", "fixtures", "demo.jsonl")
T0 = 1795560000000  # 2026-11-22T00:00:00Z-ish
lines = []
clock = [0]
counter = [0]
leaf = [None]

def iso(ms):
    import datetime
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"

def nid():
    counter[0] += 1
    return f"{(counter[0] * 2654435761) % 0xFFFFFFFF:08x}"

def add(entry, parent="leaf"):
    clock[0] += 7000
    e = {"type": entry.pop("type"), "id": nid(), "parentId": leaf[0] if parent == "leaf" else parent, "timestamp": iso(T0 + clock[0])}
    e.update(entry)
    lines.append(e)
    leaf[0] = e["id"]
    return e["id"]

usage_total = [1400]
def usage(grow):
    usage_total[0] += grow // 8
    return {"input": 40, "output": 180, "cacheRead": usage_total[0] - 220, "cacheWrite": 0, "totalTokens": usage_total[0], "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}

def msg(role, **kw):
    m = {"role": role}
    m.update(kw)
    m["timestamp"] = T0 + clock[0] + 7000
    return {"type": "message", "message": m}

def user(text):
    return add(msg("user", content=[{"type": "text", "text": text}]))

def assistant(blocks, stop="stop", grow=400):
    return add(msg("assistant", content=blocks, api="anthropic-messages", provider="anthropic", model="claude-haiku-4-5", usage=usage(grow), stopReason=stop))

calls = [0]
def call(name, **args):
    calls[0] += 1
    return {"type": "toolCall", "id": f"toolu_demo{calls[0]:02d}", "name": name, "arguments": args}

def result(c, text, is_error=False):
    return add(msg("toolResult", toolCallId=c["id"], toolName=c["name"], content=[{"type": "text", "text": text}], isError=is_error))

IMPORTER = '''import csv\nfrom dataclasses import dataclass\n\n\n@dataclass\nclass Order:\n    id: str\n    customer: str\n    amount_cents: int\n\n\ndef load_orders(path):\n    orders = []\n    with open(path) as f:\n        for line in f.readlines()[1:]:\n            parts = line.strip().split(",")\n            if len(parts) != 3:\n                continue  # malformed row\n            orders.append(Order(parts[0], parts[1], int(parts[2])))\n    return orders\n'''
TEST_FAIL = "============================= test session starts ==============================\ncollected 6 items\n\ntests/test_importer.py ....F.                                             [100%]\n\n=================================== FAILURES ===================================\n______________________ test_quoted_comma_in_customer_name ______________________\n\n    def test_quoted_comma_in_customer_name(tmp_path):\n        p = tmp_path / 'orders.csv'\n        p.write_text('id,customer,amount_cents\\n7,\"Smith, Jane\",1250\\n')\n>       assert [o.customer for o in load_orders(p)] == ['Smith, Jane']\nE       AssertionError: assert [] == ['Smith, Jane']\n\ntests/test_importer.py:41: AssertionError\n=========================== short test summary info ============================\nFAILED tests/test_importer.py::test_quoted_comma_in_customer_name - AssertionError\n========================= 1 failed, 5 passed in 0.12s =========================="
LOG = "\n".join(f"2026-11-21T09:{i % 60:02d}:{(i * 7) % 60:02d}Z INFO importer: row {i} ok ({(i * 37) % 900 + 100} cents)" for i in range(1, 160)) + "\n2026-11-21T10:02:11Z WARN importer: skipped 14 malformed rows (quoted commas?)"

add({"type": "model_change", "provider": "anthropic", "modelId": "claude-haiku-4-5"}, parent=None)
add({"type": "thinking_level_change", "thinkingLevel": "medium"})
tools = [{"name": n, "description": d, "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}} for n, d in [("read", "Read a file"), ("edit", "Edit a file"), ("write", "Write a file"), ("bash", "Run a shell command")]]
add(msg("system", content="", sections={"preamble": "You are an expert coding assistant working in the user's repository.", "tools": "Use read before edit. Keep changes small.", "cwd": "Current directory: /home/dev/acme-orders"}, toolsAdded=tools))
u1 = user("The CSV importer drops orders whose customer name has a quoted comma, like \"Smith, Jane\". Can you find out why?")
c = call("read", path="acme/importer.py")
assistant([{"type": "thinking", "thinking": "Start with the importer; a naive split on commas would explain it.", "signature": ""}, {"type": "text", "text": "Let me look at the importer first."}, c], stop="toolUse", grow=900)
result(c, IMPORTER)
c = call("bash", command="grep -n WARN logs/import-2026-11-21.log | tail -3; wc -l logs/import-2026-11-21.log")
assistant([{"type": "text", "text": "`load_orders` splits each line on `,` by hand, so a quoted comma makes four fields and the row is skipped as malformed. Let me check the import log."}, c], stop="toolUse", grow=500)
log_result = result(c, LOG)
a_found = assistant([{"type": "text", "text": "Found it: `load_orders` in `acme/importer.py` uses `line.split(\",\")` instead of the `csv` module, so every row with a quoted comma is dropped silently (14 rows in yesterday's import). The fix is to read with `csv.DictReader`."}], grow=1400)
user("Fix it with csv.DictReader and add a regression test.")
c = call("edit", path="acme/importer.py", oldText="        for line in f.readlines()[1:]:\n            parts = line.strip().split(\",\")", newText="        for row in csv.DictReader(f):")
assistant([{"type": "text", "text": "Switching to `csv.DictReader`."}, c], stop="toolUse", grow=300)
result(c, "Successfully replaced text in acme/importer.py.")
c = call("bash", command="python -m pytest -q tests/test_importer.py")
assistant([c], stop="toolUse", grow=200)
result(c, TEST_FAIL, is_error=True)
c = call("edit", path="acme/importer.py", oldText="            if len(parts) != 3:\n                continue  # malformed row\n            orders.append(Order(parts[0], parts[1], int(parts[2])))", newText="            orders.append(Order(row[\"id\"], row[\"customer\"], int(row[\"amount_cents\"])))")
assistant([{"type": "thinking", "thinking": "The loop body still indexes parts; use the row dict.", "signature": ""}, c], stop="toolUse", grow=300)
result(c, "Successfully replaced text in acme/importer.py.")
c = call("bash", command="python -m pytest -q tests/test_importer.py")
assistant([c], stop="toolUse", grow=200)
result(c, "......                                                                   [100%]\n6 passed in 0.09s")
a_fixed = assistant([{"type": "text", "text": "Fixed. `load_orders` now uses `csv.DictReader`, so quoted commas stay inside the field, and `test_quoted_comma_in_customer_name` passes along with the other 5 tests."}], grow=600)
add({"type": "label", "targetId": a_fixed, "label": "importer-fixed"})
add({"type": "session_info", "name": "CSV importer: quoted commas"})
# A side branch: try pandas, then come back with a branch summary.
side_user = user("Would pandas.read_csv be simpler here?")
c = call("bash", command="python -c 'import pandas' 2>&1 | tail -1")
assistant([c], stop="toolUse", grow=200)
result(c, "ModuleNotFoundError: No module named 'pandas'", is_error=True)
side_leaf = assistant([{"type": "text", "text": "pandas is not installed in this project, and adding a 30 MB dependency for one CSV file is not worth it. I would keep `csv.DictReader`."}], grow=300)
summary = ("The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n"
    "## Goal\nCheck whether pandas.read_csv would be a simpler importer.\n\n## Constraints & Preferences\n- Keep dependencies small\n\n"
    "## Progress\n### Done\n- [x] Checked for pandas: `ModuleNotFoundError: No module named 'pandas'`\n\n### In Progress\n- (none)\n\n### Blocked\n- (none)\n\n"
    "## Key Decisions\n- **Keep csv.DictReader**: pandas is not installed and too heavy for one file\n\n## Next Steps\n1. Continue with the csv-based importer")
leaf[0] = a_fixed
add({"type": "branch_summary", "fromId": side_leaf, "summary": summary, "details": {"readFiles": [], "modifiedFiles": []}})
user("Now make the importer report how many rows it skipped, and log it.")
c = call("read", path="acme/cli.py")
assistant([{"type": "text", "text": "Reading the CLI entry point."}, c], stop="toolUse", grow=400)
result(c, "import sys\n\nfrom acme.importer import load_orders\n\n\ndef main():\n    orders = load_orders(sys.argv[1])\n    print(f'imported {len(orders)} orders')\n")
# Prune the big log output from context (what bonsai's pruning writes).
add({"type": "context_edit", "targetId": log_result, "replacement": {"content": [{"type": "text", "text": "[bonsai pruned 10241 characters: import log, 159 INFO lines and one WARN about 14 skipped rows]"}]}})
c = call("edit", path="acme/importer.py", oldText="def load_orders(path):", newText="def load_orders(path, stats=None):")
assistant([{"type": "text", "text": "Adding a `stats` dict that counts skipped rows."}, c], stop="toolUse", grow=300)
result(c, "Successfully replaced text in acme/importer.py.")
before_compaction = assistant([{"type": "text", "text": "`load_orders(path, stats)` now counts rows it cannot parse in `stats['skipped']`, and `acme/cli.py` prints `imported N orders, skipped M`."}], grow=500)

def write():
    with open(OUT, "w") as f:
        f.write(json.dumps({"type": "session", "version": 3, "id": "01a3bd00-0000-7000-8000-00000000d3e0", "timestamp": iso(T0), "cwd": "/home/dev/acme-orders"}, separators=(",", ":")) + "\n")
        for e in lines:
            f.write(json.dumps(e, separators=(",", ":"), ensure_ascii=False) + "\n")

write()
cut = json.loads(subprocess.run([BONSAI, "cut", OUT, "--keep-recent-tokens", "600", "--json"], check=True, capture_output=True, text=True).stdout)["compaction"]
compaction_summary = ("## Goal\nFix the CSV importer dropping orders whose customer name contains a quoted comma; report skipped rows.\n\n"
    "## Constraints & Preferences\n- Keep dependencies small (no pandas)\n\n## Progress\n### Done\n- [x] Found the cause: `load_orders` split lines on `,` by hand\n"
    "- [x] Switched `acme/importer.py` to `csv.DictReader`; `test_quoted_comma_in_customer_name` passes (6 passed)\n\n"
    "### In Progress\n- [ ] Count skipped rows in `load_orders(path, stats)` and print them in `acme/cli.py`\n\n### Blocked\n- (none)\n\n"
    "## Key Decisions\n- **csv.DictReader over pandas**: no new dependency\n\n## Next Steps\n1. Print the skipped count in `acme/cli.py`\n2. Add a test for the count\n\n"
    "## Critical Context\n- Yesterday's import skipped 14 rows\n\n"
    "<read-files>\n" + "\n".join(cut["readFiles"]) + "\n</read-files>\n\n<modified-files>\n" + "\n".join(cut["modifiedFiles"]) + "\n</modified-files>")
sysmsg = dict(lines[2]["message"])
sysmsg["timestamp"] = T0 + clock[0] + 7000
add({"type": "compaction", "summary": compaction_summary, "firstKeptEntryId": cut["firstKeptEntryId"], "tokensBefore": cut["tokensBefore"],
     "details": {"readFiles": cut["readFiles"], "modifiedFiles": cut["modifiedFiles"]}, "fromHook": False, "systemMessage": sysmsg})
user("Great. Add a test for the skipped count too.")
c = call("write", path="tests/test_skipped.py", content="from acme.importer import load_orders\n\n\ndef test_skipped_count(tmp_path):\n    p = tmp_path / 'o.csv'\n    p.write_text('id,customer,amount_cents\\n1,A,10\\n2,B,notanumber\\n')\n    stats = {}\n    assert len(load_orders(p, stats)) == 1\n    assert stats['skipped'] == 1\n")
assistant([c], stop="toolUse", grow=300)
result(c, "Successfully wrote 312 bytes to tests/test_skipped.py.")
assistant([{"type": "text", "text": "Added `tests/test_skipped.py`: one good row and one with `amount_cents` = `notanumber` gives 1 order and `stats['skipped'] == 1`."}], grow=400)
write()
print(f"wrote {OUT}: {len(lines)} entries")
