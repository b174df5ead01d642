// The package's `context` hook as Pi calls it: the extension itself (pi-package/extensions/
// bonsai.ts) loaded with a stand-in for Pi's extension API, its handler called on sessions
// of 100, 1,000 and 10,000 messages (a coding session's shape: a request, a tool call, its
// output, an answer; outputs of ~2 KB like the reference session's), timed per call from the
// event in to the messages out (fingerprints, JSON over the pipe, bonsai's engine, the answer
// mapped back). Each call is the next one of a conversation: Pi hands a fresh copy of every
// message, the two it appended since the call before included. The first call of each size
// (the whole list sent once) is timed apart.
//
//   node scripts/bench-live-hook.mjs [--calls N] [--bonsai PATH]
//
// Needs Node 24 (it runs the TypeScript as it is) and Pi installed under .oracle/pi (the
// extension imports Pi's package). Prints one JSON line per size: p50, p99, mean, max (ms).

import { cpSync, mkdirSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "..");
const arg = (k, d) => {
	const i = process.argv.indexOf(k);
	return i > 0 ? process.argv[i + 1] : d;
};
const calls = Number(arg("--calls", "200"));
process.env.BONSAI_BIN = resolve(arg("--bonsai", join(repo, "target/release/bonsai")));

// A copy of the package inside Pi's install, so its import of Pi resolves there.
const oracle = process.env.BONSAI_ORACLE_DIR ?? join(repo, ".oracle");
const copy = join(oracle, "pi", "bench-pi-package");
rmSync(copy, { recursive: true, force: true });
mkdirSync(copy, { recursive: true });
cpSync(join(repo, "pi-package"), copy, { recursive: true });
const ext = (await import(pathToFileURL(join(copy, "extensions/bonsai.ts")).href)).default;

const handlers = {};
ext({
	on: (name, fn) => {
		handlers[name] = fn;
	},
	registerCommand: () => {},
	// The recall tool is registered as in Pi (the engine says the policy uses it).
	registerTool: () => {},
	getActiveTools: () => ["read", "bash", "edit", "write", "bonsai_recall"],
	setActiveTools: () => {},
});

const ctx = (tokens) => ({
	cwd: repo,
	mode: "print",
	hasUI: false,
	ui: { notify: () => {} },
	sessionManager: { getSessionFile: () => undefined, getLeafId: () => null },
	getContextUsage: () => ({ tokens, contextWindow: 200_000, percent: null }),
	model: { provider: "anthropic", id: "claude-sonnet-4-5", contextWindow: 200_000 },
});

function session(n) {
	const out = [];
	const line = "2026-11-25T10:00:00Z INFO  ledger.import row=1234 account=acct-7 amount=812.40 currency=EUR\n";
	for (let t = 0; out.length < n; t++) {
		const ts = 1_795_000_000_000 + t * 60_000;
		out.push({ role: "user", content: [{ type: "text", text: `Turn ${t}: check data/part-${t % 12}.csv against logs/import-${t % 12}.log and fix \`parse_row\`.` }], timestamp: ts });
		out.push({ role: "assistant", content: [{ type: "toolCall", id: `call_${t}`, name: "bash", arguments: { command: `grep -c WARN logs/import-${t % 12}.log` } }], api: "anthropic-messages", provider: "anthropic", model: "claude-sonnet-4-5", usage: { input: 1000, output: 20, cacheRead: 0, cacheWrite: 0, totalTokens: 1020, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } }, stopReason: "toolUse", timestamp: ts + 1 });
		out.push({ role: "toolResult", toolCallId: `call_${t}`, toolName: "bash", content: [{ type: "text", text: line.repeat(22) }], isError: false, timestamp: ts + 2 });
		out.push({ role: "assistant", content: [{ type: "text", text: `Part ${t % 12}: 22 rows checked; we decided to keep \`parse_row\` and add a test.` }], api: "anthropic-messages", provider: "anthropic", model: "claude-sonnet-4-5", usage: { input: 1100, output: 30, cacheRead: 0, cacheWrite: 0, totalTokens: 1130, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } }, stopReason: "stop", timestamp: ts + 3 });
	}
	return out.slice(0, n);
}

for (const n of [100, 1000, 10000]) {
	// The conversation grows by two messages a call (a tool call and its result, or an answer
	// and the next request) up to `n` at the last call.
	const all = session(n + 2 * (calls + 5));
	const times = [];
	let changed = 0;
	let first = 0;
	// A new Pi session for each size: the engine starts from nothing.
	await handlers.session_start({ type: "session_start", reason: "startup" }, ctx(0));
	for (let k = 0; k < calls + 5; k++) {
		// Each call's context ends at a request or a tool result, as Pi calls.
		const msgs = all.slice(0, n + 1 - 2 * (calls + 4 - k));
		// Pi hands each handler a fresh copy of its messages.
		const event = { type: "context", messages: structuredClone(msgs) };
		const t0 = process.hrtime.bigint();
		const r = await handlers.context(event, ctx(20_000));
		const ms = Number(process.hrtime.bigint() - t0) / 1e6;
		if (k === 0) first = ms;
		if (k >= 5) times.push(ms);
		if (r?.messages) changed++;
	}
	const msgs = all.slice(0, n + 1);
	times.sort((a, b) => a - b);
	const q = (p) => times[Math.min(times.length - 1, Math.floor(p * times.length))];
	const mean = times.reduce((a, b) => a + b, 0) / times.length;
	const bytes = JSON.stringify(msgs).length;
	console.log(JSON.stringify({ messages: n, listBytes: bytes, calls, changed, firstCall: +first.toFixed(2), p50: +q(0.5).toFixed(2), p99: +q(0.99).toFixed(2), mean: +mean.toFixed(2), max: +times[times.length - 1].toFixed(2) }));
}
await handlers.session_shutdown({ type: "session_shutdown", reason: "quit" }, ctx(0));
rmSync(copy, { recursive: true, force: true });
