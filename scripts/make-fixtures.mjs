// Makes the repository's own sessions (fixtures/pi-0.87.1/, and with Pi 1.5.2 fixtures/pi-1.5.2/),
// written line by line by Pi's own SessionManager; Pi's own compaction and branch-summary code writes the summaries,
// with a local fake model (a `streamFn`, the seam Pi's SDK offers for a custom transport) that
// answers from the conversation it is given. This script only decides what the user asks, what
// the scripted assistant replies and which tools it calls (with their output), like a user and
// a model would. Ids and clocks are seeded, so a run gives the same bytes every time.
//
//   PI_HOME=.oracle/pi node scripts/make-fixtures.mjs [OUT_DIR]        (default fixtures/pi-0.87.1)
//   PI_HOME=.oracle/pi-1.5.2 node scripts/make-fixtures.mjs [OUT_DIR]  (default fixtures/pi-1.5.2)
//
// With 1.5.2 it also makes the sessions of what 1.5.2 changed: thinking blocks, context edits
// inside a branch left with a summary, a tool result's nestedCalls, absolute paths under the
// home folder and odd read arguments, 1.5.2's new optional fields, a file with only a user
// prompt.
//
// The sessions are written under /tmp/bonsai-fixtures first (so `parentSession` of the fork
// names the same path on every machine), then copied to OUT_DIR.

import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire, syncBuiltinESMExports } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const require = createRequire(import.meta.url);

// --- Seeded randomness and a clock that only moves when told (before Pi is loaded) ----------
function mulberry32(seed) {
	let a = seed >>> 0;
	return () => {
		a = (a + 0x6d2b79f5) >>> 0;
		let t = a;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}
let rand = mulberry32(1);
const hex = (n) => Array.from({ length: n }, () => Math.floor(rand() * 16).toString(16)).join("");
const crypto = require("node:crypto");
crypto.randomUUID = () => `${hex(8)}-${hex(4)}-4${hex(3)}-a${hex(3)}-${hex(12)}`;
syncBuiltinESMExports();
// Session ids (UUIDv7) take their random bits from Web Crypto.
Object.defineProperty(globalThis.crypto, "getRandomValues", {
	value: (bytes) => {
		for (let k = 0; k < bytes.length; k++) bytes[k] = Math.floor(rand() * 256);
		return bytes;
	},
});

const START = Date.UTC(2026, 10, 20, 9, 0, 0);
let now = START;
const RealDate = Date;
class FixtureDate extends RealDate {
	constructor(...args) {
		if (args.length === 0) {
			now += 1; // every reading is a new millisecond, so sibling order is never a tie
			super(now);
		} else {
			super(...args);
		}
	}
	static now() {
		now += 1;
		return now;
	}
}
globalThis.Date = FixtureDate;
/** The user or the model took a while. */
const wait = (seconds) => {
	now += Math.round(seconds * 1000);
};

// --- Pi ---------------------------------------------------------------------------------------
const home = process.env.PI_HOME;
if (!home) {
	console.error("make-fixtures.mjs: set PI_HOME to the install root that holds node_modules/ (scripts/install-oracle.sh)");
	process.exit(2);
}
const pkg = join(home, "node_modules", "@earendil-works", "pi-coding-agent");
const version = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8")).version;
if (version !== "0.87.1" && version !== "1.5.2") {
	console.error(`make-fixtures.mjs: Pi ${version} found; the fixtures are made with Pi 0.87.1 or 1.5.2`);
	process.exit(2);
}
const load = (p) => import(pathToFileURL(join(pkg, p)).href);
const { SessionManager } = await load("dist/core/session-manager.js");
const { prepareCompaction, compact } = await load("dist/core/compaction/compaction.js");
const { collectEntriesForBranchSummary, generateBranchSummary } = await load("dist/core/compaction/branch-summarization.js");

const OUT = process.argv[2] ?? `fixtures/pi-${version}`;
const WORK = "/tmp/bonsai-fixtures";
const CWD = "/home/user/projects/ledger";
rmSync(WORK, { recursive: true, force: true });
mkdirSync(WORK, { recursive: true });

// --- The fake model -----------------------------------------------------------------------------
const MODELS = {
	large: { provider: "fakellm", id: "fakecoder-large", api: "openai-completions", contextWindow: 200000, maxTokens: 16384, reasoning: true },
	small: { provider: "fakellm", id: "fakecoder-small", api: "openai-completions", contextWindow: 32000, maxTokens: 8192, reasoning: false },
};
const usage = (input, output, cacheRead = 0) => ({
	input,
	output,
	cacheRead,
	cacheWrite: 0,
	reasoning: 0,
	totalTokens: input + output + cacheRead,
	cost: { input: input * 3e-6, output: output * 15e-6, cacheRead: cacheRead * 3e-7, cacheWrite: 0, total: input * 3e-6 + output * 15e-6 + cacheRead * 3e-7 },
});

/** Pi's summaries come from here: the requests and files it sees, as a summary would list them. */
function fakeStream(model, context) {
	const prompt = context.messages.map((m) => (typeof m.content === "string" ? m.content : m.content.map((c) => c.text ?? "").join(""))).join("\n");
	const asks = [...prompt.matchAll(/\[User\]: ([^\n]*)/g)].map((m) => m[1].slice(0, 90));
	const files = [...new Set([...prompt.matchAll(/(?:path|file)["=: ]+"?([\w./-]+\.\w+)/g)].map((m) => m[1]))].slice(0, 8);
	const text = [
		"## Goal",
		asks.length ? `The user asked: ${asks[0]}` : "Continue the work on the ledger tool.",
		"",
		"## Progress",
		...asks.slice(1).map((a) => `- ${a}`),
		"",
		"## Files",
		...(files.length ? files.map((f) => `- ${f}`) : ["- (none named)"]),
		"",
		"## Next Steps",
		"- Pick up from the last request.",
	].join("\n");
	wait(3);
	const message = {
		role: "assistant",
		content: [{ type: "text", text }],
		api: model.api,
		provider: model.provider,
		model: model.id,
		usage: usage(Math.ceil(prompt.length / 4), Math.ceil(text.length / 4)),
		stopReason: "stop",
		timestamp: Date.now(),
	};
	return { result: async () => message };
}

// --- A scripted conversation ----------------------------------------------------------------
let callN = 0;
class Chat {
	constructor(file, model = MODELS.large) {
		this.sm = SessionManager.open(join(WORK, file), WORK, CWD);
		this.model = model;
		this.context = 1500; // the system prompt and tools, as the provider would count them
	}
	system() {
		this.sm.appendModelChange(this.model.provider, this.model.id);
		this.sm.appendThinkingLevelChange("low");
		this.sm.appendMessage({
			role: "system",
			content: "",
			sections: {
				preamble: "You are the ledger project's coding assistant (fixture text written by bonsai's generator).",
				tools: "<tools>\n- read: a file's contents\n- bash: a shell command\n- edit: exact text replacements\n- write: a new file\n</tools>",
				cwd: `<cwd>\n${CWD}\n</cwd>`,
			},
			timestamp: Date.now(),
		});
	}
	user(text, images = []) {
		wait(20);
		const content = [{ type: "text", text }, ...images];
		this.context += Math.ceil(text.length / 4) + images.length * 1200;
		return this.sm.appendMessage({ role: "user", content, timestamp: Date.now() });
	}
	/** One assistant message: optional thinking, text, tool calls (each with its result);
	 * `extra` adds fields to the message, a tool's `extra` to its result. */
	assistant({ thinking, text, tools = [], stop, extra } = {}) {
		wait(4);
		const content = [];
		if (thinking) content.push({ type: "thinking", thinking, thinkingSignature: "reasoning_content" });
		if (text) content.push({ type: "text", text });
		const calls = tools.map((t) => ({ type: "toolCall", id: `call_${(++callN).toString().padStart(4, "0")}`, name: t.name, arguments: t.args }));
		content.push(...calls);
		const out = Math.ceil(((thinking ?? "").length + (text ?? "").length + JSON.stringify(calls).length) / 4);
		const id = this.sm.appendMessage({
			role: "assistant",
			content,
			api: this.model.api,
			provider: this.model.provider,
			model: this.model.id,
			usage: usage(this.context, out, Math.floor(this.context * 0.8)),
			stopReason: stop ?? (calls.length ? "toolUse" : "stop"),
			timestamp: Date.now(),
			...extra,
		});
		this.context += out;
		const results = calls.map((c, k) => {
			wait(1);
			const t = tools[k];
			this.context += Math.ceil(t.output.length / 4);
			return this.sm.appendMessage({
				role: "toolResult",
				toolCallId: c.id,
				toolName: c.name,
				content: [{ type: "text", text: t.output }, ...(t.image ? [{ type: "image", data: t.image, mimeType: "image/png" }] : [])],
				isError: Boolean(t.error),
				timestamp: Date.now(),
				...t.extra,
			});
		});
		return { id, results };
	}
	/** Pi's /compact: Pi prepares the cut and writes the summary the fake model gives. */
	async compact(keepRecentTokens, instructions) {
		wait(5);
		const prep = prepareCompaction(this.sm.getBranch(), { enabled: true, reserveTokens: 16384, keepRecentTokens });
		if (!prep) throw new Error("nothing to compact");
		const r = await compact(prep, this.model, "fake-key", undefined, instructions, undefined, undefined, fakeStream);
		const id = this.sm.appendCompaction(r.summary, r.firstKeptEntryId, r.tokensBefore, r.details, false, r.usage);
		this.context = 1500 + Math.ceil(r.summary.length / 4);
		return { id, prep };
	}
	/** Pi's /tree: go to `target`, with a branch summary of what is left (or without). */
	async navigate(target, summarize) {
		wait(10);
		if (!summarize) {
			this.sm.branch(target);
			return undefined;
		}
		const { entries } = collectEntriesForBranchSummary(this.sm, this.sm.getLeafId(), target);
		const r = await generateBranchSummary(entries, { model: this.model, apiKey: "fake-key", streamFn: fakeStream });
		if (!r.summary) throw new Error(`branch summary failed: ${r.error}`);
		return this.sm.branchWithSummary(target, r.summary, { readFiles: r.readFiles, modifiedFiles: r.modifiedFiles }, false, r.usage);
	}
}

// --- The project the conversations are about ------------------------------------------------
const words = "ledger entry amount currency posted balance account rounding cents import export report month total fee refund".split(" ");
const pick = () => words[Math.floor(rand() * words.length)];
function pythonFile(name, functions) {
	const out = [`"""${name}: part of the ledger tool."""`, "from decimal import Decimal, ROUND_HALF_EVEN", ""];
	for (let f = 0; f < functions; f++) {
		const fn = `${pick()}_${pick()}`;
		out.push(`def ${fn}(rows, ${pick()}=None):`, `    """Return the ${pick()} ${pick()} of each ${pick()}."""`, "    total = Decimal(0)");
		for (let k = 0; k < 4; k++) out.push(`    for row in rows:  # ${pick()} ${pick()}`, `        total += Decimal(row["${pick()}"]).quantize(Decimal("0.01"), ROUND_HALF_EVEN)`);
		out.push("    return total", "");
	}
	return out.join("\n");
}
function csv(rows) {
	const out = ["date,account,amount,currency,memo"];
	for (let k = 0; k < rows; k++) {
		out.push(`2026-${String(1 + (k % 12)).padStart(2, "0")}-${String(1 + (k % 28)).padStart(2, "0")},${pick()}-${k % 17},${(rand() * 2000 - 1000).toFixed(2)},${rand() < 0.8 ? "EUR" : "USD"},${pick()} ${pick()} ${pick()}`);
	}
	return out.join("\n");
}
function log(lines) {
	const out = [];
	for (let k = 0; k < lines; k++) {
		out.push(`2026-11-0${1 + (k % 9)}T${String(k % 24).padStart(2, "0")}:${String(k % 60).padStart(2, "0")}:00Z ${rand() < 0.1 ? "WARN " : "INFO "} ledger.${pick()} ${pick()}=${Math.floor(rand() * 10000)} ${pick()} ${pick()}`);
	}
	return out.join("\n");
}
const testsFailing = "F....F..\n=== FAILURES ===\ntest_rounding: assert Decimal('10.005') rounds to 10.00, got 10.01\ntest_refund: refund of 3 items posts 2\n2 failed, 6 passed in 0.21s";
const testsPassing = "........\n8 passed in 0.19s";
// A 4x4 PNG (the "screenshot" the user pastes).
const png = "iVBORw0KGgoAAAANSUhEUgAAAAQAAAAECAIAAAAmkwkpAAAAFElEQVR4nGP4z8DAwMDAxMDAwAAAJAQCAf0vsRsAAAAASUVORK5CYII=";

// --- Sessions ------------------------------------------------------------------------------
const made = [];

/** Every entry type, three branches, labels, a name, edits and a compaction. */
async function tour() {
	rand = mulberry32(11);
	const c = new Chat("tour.jsonl");
	c.system();
	const ask1 = c.user("Read src/ledger.py and tell me what it does.");
	c.assistant({ thinking: "The user wants an overview; read the main module first.", text: "Reading the main module.", tools: [{ name: "read", args: { path: "src/ledger.py" }, output: pythonFile("ledger", 6) }] });
	const answer1 = c.assistant({ text: "ledger.py sums postings per account with banker's rounding (ROUND_HALF_EVEN), then reports totals per month." }).id;
	c.sm.appendLabelChange(ask1, "start");
	c.user("Run the tests and fix what fails.");
	c.assistant({ text: "Running the suite.", tools: [{ name: "bash", args: { command: "python -m pytest -q" }, output: testsFailing, error: true }] });
	c.assistant({ thinking: "Two failures: rounding mode and the refund count.", text: "Fixing the rounding mode.", tools: [{ name: "edit", args: { path: "src/ledger.py", edits: [{ oldText: "ROUND_HALF_EVEN", newText: "ROUND_HALF_UP" }] }, output: "Applied 1 edit to src/ledger.py" }] });
	c.assistant({ tools: [{ name: "bash", args: { command: "python -m pytest -q" }, output: testsPassing }] });
	const fixed = c.assistant({ text: "All 8 tests pass now: rounding is half-up and refunds post every item." }).id;
	c.sm.appendSessionInfo("ledger: fix rounding");
	c.sm.appendLabelChange(fixed, "tests green");
	c.user("What does this screenshot of the report show?", [{ type: "image", data: png, mimeType: "image/png" }]);
	c.assistant({ text: "It is the monthly report: November's total is highlighted in red, which means it is negative." });
	c.user("Open docs/report.png too.");
	c.assistant({ tools: [{ name: "read", args: { path: "docs/report.png" }, output: "Read image file [image/png]", image: png }] });
	c.assistant({ text: "The same report, with the legend.", stop: "aborted" });
	wait(30);
	c.sm.appendMessage({ role: "bashExecution", command: "git status --short", output: " M src/ledger.py\n", exitCode: 0, cancelled: false, truncated: false, timestamp: Date.now() });
	c.sm.appendMessage({ role: "bashExecution", command: "git diff --stat", output: " src/ledger.py | 2 +-\n", exitCode: 0, cancelled: false, truncated: false, timestamp: Date.now(), excludeFromContext: true });
	c.sm.appendCustomEntry("ledger-checkpoint", { name: "after-fix", leafId: c.sm.getLeafId() });
	c.sm.appendCustomMessageEntry("ledger-ci", "[ci] nightly import of data/2026-11.csv failed: 3 rows with an unknown currency.", true, { job: "nightly", run: 812 });
	c.sm.appendModelChange("fakellm", "fakecoder-small");
	c.model = MODELS.small;
	c.sm.appendThinkingLevelChange("off");
	c.user("Look at the failed import.");
	c.assistant({ tools: [{ name: "read", args: { path: "data/2026-11.csv" }, output: csv(220) }] });
	c.assistant({ text: "Rows 41, 97 and 180 use 'GBP', which the importer does not know." });
	c.sm.appendLabelChange(ask1, undefined); // the label is cleared again
	// Back to the first answer, with a summary of the branch left: a new direction from there.
	await c.navigate(answer1, true);
	c.model = MODELS.large;
	c.user("Instead of fixing tests, add a --json flag to the report.");
	c.assistant({ text: "Adding the flag.", tools: [{ name: "edit", args: { path: "src/report.py", edits: [{ oldText: "def main(args):", newText: "def main(args, json=False):" }] }, output: "Applied 1 edit to src/report.py" }] });
	const flag = c.assistant({ text: "report --json prints the totals as JSON." }).id;
	// Back again without a summary, and on.
	await c.navigate(fixed, false);
	const hideMe = c.user("Also list the largest postings, ignore this line.");
	c.assistant({ tools: [{ name: "bash", args: { command: "sort -t, -k3 -n data/2026-11.csv | tail -5" }, output: csv(5) }] });
	const big = c.assistant({ text: "Largest postings listed." }).id;
	c.user("Read the import log.");
	const { results } = c.assistant({ tools: [{ name: "read", args: { path: "logs/import.log" }, output: log(300) }] });
	c.assistant({ text: "The log shows the GBP rows were skipped, nothing else." });
	c.sm.appendContextEdit(hideMe, null);
	c.sm.appendContextEdit(results[0], { content: "[log elided by the user: 300 lines, only the GBP warnings mattered]" });
	c.sm.appendUsage("cache_warm", "fakellm", "fakecoder-large", usage(0, 1, 9000), "fixture");
	const { prep } = await c.compact(600);
	c.user("Summarize where we are.");
	const last = c.assistant({ text: "Rounding fixed, tests green, the GBP rows are the open question." }).id;
	// The leaf is a label: navigating away from it leaves no message to summarize.
	c.sm.appendLabelChange(last, "where we are");
	made.push({ name: "tour.jsonl", notes: { flag, big, split: prep.isSplitTurn } });
}

/** A long session: 44 turns of file reads and commands, two compactions, lots of tool output. */
async function long() {
	rand = mulberry32(22);
	const c = new Chat("long.jsonl");
	c.system();
	for (let turn = 1; turn <= 44; turn++) {
		const month = String(1 + (turn % 12)).padStart(2, "0");
		c.user(`Turn ${turn}: check data/2026-${month}.csv against logs/import-${month}.log.`);
		const size = 40 + ((turn * 37) % 90);
		c.assistant({
			thinking: turn % 5 === 0 ? "Compare the row count with the log's count." : undefined,
			tools: [
				{ name: "read", args: { path: `data/2026-${month}.csv` }, output: csv(size) },
				{ name: "bash", args: { command: `grep -c WARN logs/import-${month}.log` }, output: log(size) },
			],
		});
		if (turn % 7 === 0) c.assistant({ tools: [{ name: "grep", args: { pattern: "GBP", path: "data/" }, output: csv(12) }] });
		c.assistant({ text: `Month ${month}: ${size} rows, ${Math.floor(size / 9)} warnings, totals match.` });
		if (turn === 16 || turn === 30) await c.compact(20000);
	}
	made.push({ name: "long.jsonl" });
}

/** One big turn cut in the middle by a small keepRecentTokens: Pi's split turn. */
async function splitTurn() {
	rand = mulberry32(33);
	const c = new Chat("split-turn.jsonl");
	c.system();
	c.user("List the modules.");
	c.assistant({ tools: [{ name: "bash", args: { command: "ls src" }, output: "ledger.py\nreport.py\nimport.py\n" }] });
	c.assistant({ text: "Three modules." });
	c.user("Read every module and every data file, then tell me which functions are unused.");
	for (const f of ["src/ledger.py", "src/report.py", "src/import.py", "data/2026-01.csv", "data/2026-02.csv", "data/2026-03.csv", "logs/import.log"]) {
		const output = f.endsWith(".py") ? pythonFile(f, 5) : f.endsWith(".csv") ? csv(90) : log(120);
		c.assistant({ tools: [{ name: "read", args: { path: f }, output }] });
	}
	c.assistant({ text: "Unused: export_total and fee_refund." });
	const { prep } = await c.compact(3000);
	if (!prep.isSplitTurn) throw new Error("split-turn.jsonl: the cut did not split the turn");
	c.user("Remove them.");
	c.assistant({ text: "Removed.", tools: [{ name: "edit", args: { path: "src/ledger.py", edits: [{ oldText: "def export_total", newText: "def _export_total" }] }, output: "Applied 1 edit" }] });
	made.push({ name: "split-turn.jsonl" });
}

/** Pi's /fork of the tour before its second user message. */
function forked() {
	const sm = SessionManager.open(join(WORK, "tour.jsonl"), WORK, CWD);
	const entries = sm.getEntries();
	const users = entries.filter((e) => e.type === "message" && e.message.role === "user");
	wait(60);
	const file = sm.createBranchedSession(users[1].parentId);
	copyFileSync(file, join(WORK, "forked.jsonl"));
	rmSync(file);
	made.push({ name: "forked.jsonl" });
}

/** What Pi 1.5.2 changed, in one session: thinking, absolute paths under the home folder (and
 * one beside it) with odd read arguments, a side branch whose context edits Pi 1.5.2 applies
 * when it summarizes the branch on leaving it, a thinking level change after /tree, a
 * codemode-style result with nestedCalls that a compaction lists, and 1.5.2's new fields. */
async function changedIn152() {
	rand = mulberry32(44);
	const c = new Chat("changed-in-1.5.2.jsonl");
	c.system();
	const HOME = "/home/user";
	c.user("Read the rounding helper in the ledger module.");
	c.assistant({
		thinking: "The helper is near the top of the module; read only that part.",
		text: "Reading the top of the module.",
		tools: [{ name: "read", args: { path: `${HOME}/projects/ledger/src/ledger.py`, offset: null, limit: "40" }, output: pythonFile("ledger", 3) }],
	});
	const base = c.assistant({ text: "round_half_even() is the helper; it quantizes to cents." }).id;
	// A side branch: a request about another user's notes, hidden again; an answer that read
	// them, replaced. Pi 1.5.2 summarizes the branch with the edits applied.
	const aside = c.user("Also compare with /home/developer/notes/rounding.txt.");
	const read = c.assistant({
		thinking: "Another user's notes: read them, then say what differs.",
		text: "Reading the notes.",
		tools: [{ name: "read", args: { path: "/home/developer/notes/rounding.txt", offset: "5", limit: "20" }, output: "round half even everywhere\nexcept refunds: half up" }],
	}).id;
	c.assistant({ text: "The notes use half-even too, except for refunds." });
	c.sm.appendContextEdit(aside, null);
	c.sm.appendContextEdit(read, { content: "I compared the notes (details elided)." });
	await c.navigate(base, true);
	// Pi 1.5.2 records the thinking level again at the next prompt after /tree.
	c.sm.appendThinkingLevelChange("low");
	c.user("Fix refunds to round half up, through the codemode script.");
	c.assistant({
		text: "Running the script.",
		extra: { responseModel: "fakecoder-large-2026-11", thinkingLevel: "low", durationMs: 2150 },
		tools: [
			{
				name: "codemode",
				args: { script: "read src/refund.py; edit src/refund.py; read tests/test_refund.py" },
				output: "edited src/refund.py (1 change)",
				extra: {
					durationMs: 840,
					nestedCalls: {
						calls: [
							{ id: "nested_1", name: "read", arguments: { path: "src/refund.py" }, status: "ok", durationMs: 12 },
							{ id: "nested_2", name: "edit", arguments: { path: "src/refund.py", edits: [{ oldText: "HALF_EVEN", newText: "HALF_UP" }] }, status: "ok", durationMs: 30 },
							{ id: "nested_3", name: "write", arguments: { path: `${HOME}/projects/ledger/NOTES.md` }, status: "error", error: "read-only" },
							{ id: "nested_4", name: "read", argumentsBytes: 90000, status: "unfinished" },
						],
						complete: false,
					},
				},
			},
		],
	});
	c.assistant({
		text: "Refunds round half up now.",
		extra: { responseModel: "fakecoder-large-2026-11", durationMs: 900, usage: { ...usage(c.context, 12), cost: { ...usage(c.context, 12).cost, totalFromProvider: 0.0123 } } },
	});
	c.user("Run the refund tests.");
	c.assistant({
		tools: [
			{ name: "bash", args: { command: "python -m pytest -q tests/test_refund.py" }, output: testsPassing, extra: { durationMs: 1900 } },
			{ name: "read", args: { path: "tests/test_refund.py", offset: 1, limit: 30 }, output: pythonFile("test_refund", 2) },
		],
	});
	c.assistant({ text: "The refund tests pass." });
	for (let turn = 1; turn <= 3; turn++) {
		c.user(`Check month ${turn}.`);
		c.assistant({ tools: [{ name: "read", args: { path: `data/2026-0${turn}.csv` }, output: csv(60) }] });
		c.assistant({ text: `Month ${turn} is fine.` });
	}
	await c.compact(2000);
	c.user("Anything left?");
	c.assistant({ text: "Nothing: rounding and refunds are fixed." });
	made.push({ name: "changed-in-1.5.2.jsonl" });
}

/** A session Pi 1.5.2 created at its first user message and left before any answer. */
function userOnly() {
	rand = mulberry32(55);
	const c = new Chat("user-only.jsonl");
	c.user("Start on the export feature tomorrow.");
	made.push({ name: "user-only.jsonl" });
}

await tour();
await long();
await splitTurn();
forked();
if (version === "1.5.2") {
	await changedIn152();
	userOnly();
}

mkdirSync(OUT, { recursive: true });
const counts = {};
for (const m of made) {
	copyFileSync(join(WORK, m.name), join(OUT, m.name));
	const lines = readFileSync(join(OUT, m.name), "utf8").trimEnd().split("\n");
	const c = {};
	for (const l of lines.slice(1)) {
		const e = JSON.parse(l);
		const k = e.type === "message" ? `message/${e.message.role}` : e.type;
		c[k] = (c[k] ?? 0) + 1;
	}
	counts[m.name] = { bytes: readFileSync(join(OUT, m.name)).length, entries: lines.length - 1, types: c, ...(m.notes ? { notes: m.notes } : {}) };
}
writeFileSync(join(OUT, "generated.json"), `${JSON.stringify({ pi: version, sessions: counts }, null, 1)}\n`);
console.log(JSON.stringify(counts, null, 1));
