// Makes fixtures/pi-0.27.9/v1.jsonl: a session in Pi's first file format (no ids, a linear
// list, compactions by line index), written by Pi 0.27.9's own SessionManager. Pi 0.87.1
// migrates such files when it opens them; bonsai's tests read it to check the same migration.
//
//   npm install --prefix /tmp/pi-0.27.9 @mariozechner/pi-coding-agent@0.27.9
//   OLD_PI_HOME=/tmp/pi-0.27.9 node scripts/make-v1-fixture.mjs [OUT_DIR]   (default fixtures/pi-0.27.9)
//
// As in make-fixtures.mjs, the script only plays the user and a scripted model; Pi 0.27.9 writes
// every line. Its compaction entry is built as its `compact()` returns it (the cut from its own
// `prepareCompaction`), with the summary a fake model would give: that Pi has no seam for a
// local model. Randomness and the clock are seeded, so a run gives the same bytes.

import { copyFileSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { createRequire, syncBuiltinESMExports } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const require = createRequire(import.meta.url);
let seed = 7;
const rand = () => {
	seed = (seed * 1103515245 + 12345) % 2147483648;
	return seed / 2147483648;
};
const crypto = require("node:crypto");
crypto.randomBytes = (n) => Buffer.from(Array.from({ length: n }, () => Math.floor(rand() * 256)));
syncBuiltinESMExports();
let now = Date.UTC(2026, 9, 1, 8, 0, 0);
const RealDate = Date;
globalThis.Date = class extends RealDate {
	constructor(...a) {
		if (a.length === 0) {
			now += 1;
			super(now);
		} else super(...a);
	}
	static now() {
		now += 1;
		return now;
	}
};
const wait = (s) => {
	now += s * 1000;
};

const home = process.env.OLD_PI_HOME;
if (!home) {
	console.error("make-v1-fixture.mjs: set OLD_PI_HOME to an install root with @mariozechner/pi-coding-agent@0.27.9");
	process.exit(2);
}
const pkg = join(home, "node_modules", "@mariozechner", "pi-coding-agent");
const version = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8")).version;
if (version !== "0.27.9") {
	console.error(`make-v1-fixture.mjs: Pi ${version} found; this fixture is Pi 0.27.9's`);
	process.exit(2);
}
const { SessionManager } = await import(pathToFileURL(join(pkg, "dist/core/session-manager.js")).href);
const { prepareCompaction } = await import(pathToFileURL(join(pkg, "dist/core/compaction.js")).href);

const OUT = process.argv[2] ?? "fixtures/pi-0.27.9";
const WORK = "/tmp/bonsai-v1-fixture";
rmSync(WORK, { recursive: true, force: true });
mkdirSync(WORK, { recursive: true });
const file = join(WORK, "v1.jsonl");
const sm = new SessionManager("/home/user/projects/ledger", WORK, file, true);

let context = 900;
let call = 0;
const usage = (input, output) => ({ input, output, cacheRead: 0, cacheWrite: 0, totalTokens: input + output, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } });
const assistant = (content, stopReason) => {
	wait(3);
	const out = Math.ceil(JSON.stringify(content).length / 4);
	sm.saveMessage({ role: "assistant", content, api: "openai-completions", provider: "fakellm", model: "fakecoder-large", usage: usage(context, out), stopReason, timestamp: Date.now() });
	context += out;
};
const lines = (n, f) => Array.from({ length: n }, (_, k) => f(k)).join("\n");

sm.saveModelChange("fakellm", "fakecoder-large");
sm.saveThinkingLevelChange("low");
for (let turn = 1; turn <= 9; turn++) {
	wait(30);
	const text = `Turn ${turn}: read src/module${turn}.py and say what it exports.`;
	sm.saveMessage({ role: "user", content: [{ type: "text", text }], timestamp: Date.now() });
	context += Math.ceil(text.length / 4);
	const id = `call_${++call}`;
	assistant([{ type: "text", text: "Reading it." }, { type: "toolCall", id, name: "read", arguments: { path: `src/module${turn}.py` } }], "toolUse");
	const output = lines(40 + turn * 9, (k) => `def f${turn}_${k}(rows):  # ${Math.floor(rand() * 1e6)}\n    return sum(r["amount"] for r in rows)`);
	sm.saveMessage({ role: "toolResult", toolCallId: id, toolName: "read", content: [{ type: "text", text: output }], isError: false, timestamp: Date.now() });
	context += Math.ceil(output.length / 4);
	assistant([{ type: "text", text: `module${turn}.py exports ${40 + turn * 9} functions that sum amounts.` }], "stop");
	if (turn === 6) {
		wait(5);
		const prep = prepareCompaction(sm.getEntries(), { enabled: true, reserveTokens: 16384, keepRecentTokens: 3000 });
		const asks = prep.messagesToSummarize.filter((m) => m.role === "user").map((m) => `- ${m.content[0].text}`);
		sm.saveCompaction({
			type: "compaction",
			timestamp: new Date().toISOString(),
			summary: ["## Goal", "Survey the modules.", "", "## Progress", ...asks].join("\n"),
			firstKeptEntryIndex: prep.cutPoint.firstKeptEntryIndex,
			tokensBefore: prep.tokensBefore,
		});
		context = 1500;
	}
}
mkdirSync(OUT, { recursive: true });
copyFileSync(file, join(OUT, "v1.jsonl"));
console.log(`wrote ${join(OUT, "v1.jsonl")} (${readFileSync(file).length} bytes)`);
