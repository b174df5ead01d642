// Drives Pi's own SessionManager (Pi 0.87.1, installed by scripts/install-oracle.sh) for the
// reliability suite: what Pi reads from a session file, and Pi writing to one while bonsai
// does. Pi is found through PI_HOME (an install root with node_modules/).
//
//   node pi-session.mjs load FILE...          one JSON line per file: what Pi loads from it (entries,
//                                             leaf, context entries, each context message's source,
//                                             role, estimate and content hash, Pi's context estimate)
//   node pi-session.mjs open FILE             open it as Pi does (Pi ends an unfinished last line)
//   node pi-session.mjs append FILE COUNT [--pause-ms N] [--seed S]
//                                             open it and append COUNT messages, printing each
//                                             line Pi wrote, one per line, as it writes it
//
// `load` never changes FILE: Pi's reader ends an unfinished last line with a newline, so it
// reads a private copy.

import { createHash } from "node:crypto";
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const home = process.env.PI_HOME;
if (!home) {
	console.error("pi-session.mjs: set PI_HOME to the install root that holds node_modules/");
	process.exit(2);
}
const pkg = join(home, "node_modules", "@earendil-works", "pi-coding-agent");
const sessions = await import(pathToFileURL(join(pkg, "dist/core/session-manager.js")).href);
const { SessionManager, loadEntriesFromFile, buildSessionProjection } = sessions;
const compaction = await import(pathToFileURL(join(pkg, "dist/core/compaction/compaction.js")).href);
const { estimateTokens, estimateProjectedContextTokens } = compaction;
const sha = (v) => createHash("sha256").update(JSON.stringify(v ?? null)).digest("hex").slice(0, 16);

/** What Pi holds after loading `file`: its entries, leaf and the entries its context is made of. */
function load(file) {
	const dir = mkdtempSync(join(tmpdir(), "pi-load-"));
	try {
		const copy = join(dir, "session.jsonl");
		copyFileSync(file, copy);
		const entries = loadEntriesFromFile(copy);
		if (entries.length === 0) return { file, ok: false, error: "not a valid session" };
		const header = entries[0];
		const sm = SessionManager.inMemory(header.cwd || process.cwd(), undefined, entries);
		const all = sm.getEntries();
		const leafId = sm.getLeafId();
		const projection = buildSessionProjection(all, leafId);
		// Each message the model gets: where it comes from, Pi's estimate, and its content's hash.
		const messages = [];
		for (const e of projection.entries) {
			for (const m of e.messages) {
				messages.push({ source: e.sourceEntry.id, role: m.role ?? null, tokens: estimateTokens(m), content: sha(m.content ?? m.summary) });
			}
		}
		const estimate = estimateProjectedContextTokens(projection, sm.getBranch()).tokens;
		return {
			file,
			ok: true,
			entries: all.length,
			ids: all.map((e) => e.id),
			leafId: leafId ?? null,
			contextIds: projection.entries.map((p) => p.sourceEntry.id),
			messages: projection.messages.length,
			estimate,
			detail: messages,
		};
	} catch (e) {
		return { file, ok: false, error: String(e && e.message ? e.message : e) };
	} finally {
		rmSync(dir, { recursive: true, force: true });
	}
}

/** A small deterministic generator, so a run can be repeated. */
function rng(seed) {
	let s = seed >>> 0 || 1;
	return () => {
		s ^= s << 13;
		s >>>= 0;
		s ^= s >>> 17;
		s ^= s << 5;
		s >>>= 0;
		return s / 4294967296;
	};
}

function sleep(ms) {
	if (ms > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function append(file, count, pauseMs, seed) {
	const sm = SessionManager.open(file);
	const random = rng(seed);
	for (let i = 0; i < count; i++) {
		const words = 3 + Math.floor(random() * 40);
		const text = `pi writer ${seed}/${i}: ` + "lorem ipsum ".repeat(words);
		const message =
			i % 2 === 0
				? { role: "user", content: [{ type: "text", text }], timestamp: Date.now() }
				: {
						role: "assistant",
						content: [{ type: "text", text }],
						api: "openai-completions",
						provider: "test",
						model: "test-model",
						usage: { input: 10, output: 10, cacheRead: 0, cacheWrite: 0, totalTokens: 20, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
						stopReason: "stop",
						timestamp: Date.now(),
					};
		const id = sm.appendMessage(message);
		// The line Pi wrote is JSON.stringify of the entry it holds.
		process.stdout.write(`${JSON.stringify(sm.getEntry(id))}\n`);
		sleep(pauseMs * (0.5 + random()));
	}
}

const [cmd, ...args] = process.argv.slice(2);
if (cmd === "load") {
	for (const f of args) process.stdout.write(`${JSON.stringify(load(f))}\n`);
} else if (cmd === "open") {
	const sm = SessionManager.open(args[0]);
	process.stdout.write(`${JSON.stringify({ leafId: sm.getLeafId() })}\n`);
} else if (cmd === "append") {
	const opt = (name, dflt) => {
		const k = args.indexOf(name);
		return k >= 0 ? Number(args[k + 1]) : dflt;
	};
	append(args[0], Number(args[1]), opt("--pause-ms", 2), opt("--seed", 1));
} else {
	console.error("usage: pi-session.mjs load FILE... | open FILE | append FILE COUNT [--pause-ms N] [--seed S]");
	process.exit(2);
}
