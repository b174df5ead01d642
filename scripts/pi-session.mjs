// Drives Pi's own SessionManager (Pi 0.87.1, installed by scripts/install-oracle.sh) for the
// reliability suite: what Pi reads from a session file, and Pi writing to one while bonsai
// does. Pi is found through PI_HOME (an install root with node_modules/).
//
//   node pi-session.mjs load FILE...          one JSON line per file: what Pi loads from it (entries,
//                                             leaf, context entries, each context message's source,
//                                             role, estimate and content hash, Pi's context estimate)
//   node pi-session.mjs inspect FILE [--leaf ID|idx:N] [--keep-recent-tokens N] [--reserve-tokens N]
//                                             [--branch-target ID|idx:N] [--branch-context-window N]
//                                             what Pi computes for FILE at the leaf, under the field
//                                             names of `bonsai inspect` (entries, path, labels, tree,
//                                             context, token estimates, the compaction's cut, the
//                                             branch summary's input): the repository's own oracle
//   node pi-session.mjs inspect-many < RUNS  RUNS: a JSON array of `inspect`'s argument lists, all
//                                             made in one process: one line each, {"ok": answers}
//                                             or {"error": message}
//   node pi-session.mjs tree FILE WIDTH:FILTER...  (PI_TREE_HOME: the home it shortens paths under)
//                                             Pi's /tree list for FILE as its TreeSelectorComponent
//                                             draws it (every row, cursor on the leaf, colours
//                                             stripped): one JSON line per WIDTH:FILTER, its rows
//   node pi-session.mjs list CWD              what Pi's /resume lists (SessionManager.list for CWD,
//                                             then listAll; PI_CODING_AGENT_DIR: Pi's agent folder):
//                                             {"project": [paths], "all": [paths]}
//   node pi-session.mjs list-all-timed [RUNS] SessionManager.listAll timed in process, RUNS times:
//                                             {"sessions": N, "ms": [each run]}
//   node pi-session.mjs open FILE             open it as Pi does (Pi ends an unfinished last line)
//   node pi-session.mjs append FILE COUNT [--pause-ms N] [--seed S]
//                                             open it and append COUNT messages, printing each
//                                             line Pi wrote, one per line, as it writes it
//
// `load` never changes FILE: Pi's reader ends an unfinished last line with a newline, so it
// reads a private copy.

import { createHash } from "node:crypto";
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRequire, syncBuiltinESMExports } from "node:module";
import { pathToFileURL } from "node:url";

// Reading a v1 file, Pi gives its entries random ids (randomUUID) as it migrates them; for
// reading, the n-th gets `n` as 8 hex digits instead, as bonsai numbers them, so the two can be
// compared id for id. Writing (`append`) keeps Pi's random ids.
let migrationIds = 0;
if (["inspect", "inspect-many", "tree", "load"].includes(process.argv[2])) {
	const crypto = createRequire(import.meta.url)("node:crypto");
	crypto.randomUUID = () => `${(++migrationIds).toString(16).padStart(8, "0")}-0000-4000-8000-000000000000`;
	syncBuiltinESMExports();
}

const home = process.env.PI_HOME;
if (!home) {
	console.error("pi-session.mjs: set PI_HOME to the install root that holds node_modules/");
	process.exit(2);
}
const pkg = join(home, "node_modules", "@earendil-works", "pi-coding-agent");
const sessions = await import(pathToFileURL(join(pkg, "dist/core/session-manager.js")).href);
const { SessionManager, loadEntriesFromFile, buildSessionProjection } = sessions;
const compaction = await import(pathToFileURL(join(pkg, "dist/core/compaction/compaction.js")).href);
const { estimateTokens, estimateProjectedContextTokens, estimateContextTokens, prepareCompaction } = compaction;
const { computeFileLists, serializeConversation } = await import(pathToFileURL(join(pkg, "dist/core/compaction/utils.js")).href);
const { collectEntriesForBranchSummary, prepareBranchEntries } = await import(
	pathToFileURL(join(pkg, "dist/core/compaction/branch-summarization.js")).href
);
const { convertToLlm } = await import(pathToFileURL(join(pkg, "dist/core/messages.js")).href);
const sha = (v) => createHash("sha256").update(JSON.stringify(v ?? null)).digest("hex").slice(0, 16);

/** What Pi holds after loading `file`: its entries, leaf and the entries its context is made of. */
function load(file) {
	const dir = mkdtempSync(join(tmpdir(), "pi-load-"));
	try {
		const copy = join(dir, "session.jsonl");
		copyFileSync(file, copy);
		migrationIds = 0;
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

/** Length and SHA-256 of a text as UTF-8 (how `bonsai inspect` reports long texts). */
function digest(text) {
	const bytes = Buffer.from(text, "utf8");
	return { chars: text.length, bytes: bytes.length, sha256: createHash("sha256").update(bytes).digest("hex") };
}

/** Pi's answers for `file` at a leaf, named as `bonsai inspect` names them. */
function inspect(file, opts) {
	const dir = mkdtempSync(join(tmpdir(), "pi-inspect-"));
	try {
		const copy = join(dir, "session.jsonl");
		copyFileSync(file, copy);
		migrationIds = 0;
		const entries = loadEntriesFromFile(copy);
		if (entries.length === 0) throw new Error("not a valid session");
		const sm = SessionManager.inMemory(entries[0].cwd || process.cwd(), undefined, entries);
		const all = sm.getEntries();
		const idxOf = new Map(all.map((e, i) => [e.id, i]));
		const ref = (r) => {
			if (r.startsWith("idx:")) return all[Number(r.slice(4))].id;
			if (!idxOf.has(r)) throw new Error(`entry ${r} not found`);
			return r;
		};
		if (opts.leaf) sm.branch(ref(opts.leaf));
		const leafId = sm.getLeafId();
		const path = sm.getBranch();
		const count = (xs, key) => xs.reduce((o, x) => ((o[key(x)] = (o[key(x)] ?? 0) + 1), o), {});
		const labels = {};
		for (const e of all) {
			const l = sm.getLabel(e.id);
			if (l !== undefined) labels[e.id] = l;
		}
		// getTree() children in Pi's order, listed for the entries that have any, in file order.
		const childrenOf = new Map();
		const roots = [];
		const walk = (node) => {
			if (node.children.length) childrenOf.set(node.entry.id, node.children.map((c) => c.entry.id));
			for (const c of node.children) walk(c);
		};
		for (const r of sm.getTree()) {
			roots.push(r.entry.id);
			walk(r);
		}
		const children = all.filter((e) => childrenOf.has(e.id)).map((e) => [e.id, childrenOf.get(e.id)]);
		const projection = buildSessionProjection(all, leafId);
		const messages = [];
		for (const p of projection.entries) {
			for (const m of p.messages) {
				messages.push({ role: m.role, estTokens: estimateTokens(m), sourceEntryId: p.sourceEntry.id, sourceIdx: idxOf.get(p.sourceEntry.id) });
			}
		}
		const tokens = (t) => ({ tokens: t.tokens, usageTokens: t.usageTokens, trailingTokens: t.trailingTokens, lastUsageIndex: t.lastUsageIndex ?? null });
		// The header as the file has it (Pi's loader migrates the one it returns).
		const text = readFileSync(file, "utf8");
		const header = JSON.parse(text.slice(0, text.indexOf("\n") >= 0 ? text.indexOf("\n") : undefined));
		let skipped = 0;
		for (const line of text.split("\n")) {
			if (!line.trim()) continue;
			try {
				JSON.parse(line);
			} catch {
				skipped++;
			}
		}
		const out = {
			header,
			headerVersion: header.version ?? 1,
			migrated: (header.version ?? 1) < 3,
			skippedLines: skipped,
			entries: all.length,
			entryTypeCounts: count(all, (e) => e.type),
			messageRoleCounts: count(all.filter((e) => e.type === "message"), (e) => e.message.role),
			sessionName: sm.getSessionName() ?? null,
			leafId: leafId ?? null,
			leafIdx: leafId ? idxOf.get(leafId) : null,
			pathIds: path.map((e) => e.id),
			pathIdx: path.map((e) => idxOf.get(e.id)),
			labels,
			tree: { roots, children },
			context: {
				thinkingLevel: projection.thinkingLevel,
				messageCount: projection.messages.length,
				llmMessageCount: convertToLlm(projection.messages).length,
				estTokensSum: projection.messages.reduce((n, m) => n + estimateTokens(m), 0),
				entryIds: projection.entries.map((p) => p.sourceEntry.id),
				entryIdx: projection.entries.map((p) => idxOf.get(p.sourceEntry.id)),
				messages,
			},
			contextTokens: tokens(estimateContextTokens(projection.messages)),
			projectedContextTokens: tokens(estimateProjectedContextTokens(projection, path)),
		};
		const settings = { enabled: true, reserveTokens: opts.reserve, keepRecentTokens: opts.keep };
		const prep = prepareCompaction(path, settings);
		if (prep) {
			const files = computeFileLists(prep.fileOps);
			out.compaction = {
				firstKeptEntryId: prep.firstKeptEntryId,
				firstKeptEntryIdx: idxOf.get(prep.firstKeptEntryId),
				isSplitTurn: prep.isSplitTurn,
				tokensBefore: prep.tokensBefore,
				messagesToSummarize: { count: prep.messagesToSummarize.length, roles: prep.messagesToSummarize.map((m) => m.role) },
				turnPrefixMessages: { count: prep.turnPrefixMessages.length, roles: prep.turnPrefixMessages.map((m) => m.role) },
				previousSummary: { present: prep.previousSummary !== undefined, ...(prep.previousSummary !== undefined ? digest(prep.previousSummary) : {}) },
				readFiles: files.readFiles,
				modifiedFiles: files.modifiedFiles,
				serialized: digest(serializeConversation(convertToLlm(prep.messagesToSummarize))),
			};
			if (prep.isSplitTurn) out.compaction.turnPrefixSerialized = digest(serializeConversation(convertToLlm(prep.turnPrefixMessages)));
		} else {
			out.compaction = null;
		}
		if (opts.branchTarget) {
			const target = ref(opts.branchTarget);
			const { entries: covered, commonAncestorId } = collectEntriesForBranchSummary(sm, leafId, target);
			const budget = opts.window - opts.reserve;
			const prepared = prepareBranchEntries(covered, budget);
			const files = computeFileLists(prepared.fileOps);
			out.branch = {
				fromLeafId: leafId,
				targetId: target,
				commonAncestorId: commonAncestorId ?? null,
				entryIds: covered.map((e) => e.id),
				entryIdx: covered.map((e) => idxOf.get(e.id)),
				tokenBudget: budget,
				messageCount: prepared.messages.length,
				messageRoles: prepared.messages.map((m) => m.role),
				totalTokens: prepared.totalTokens,
				readFiles: files.readFiles,
				modifiedFiles: files.modifiedFiles,
				serialized: digest(serializeConversation(convertToLlm(prepared.messages))),
			};
		}
		return out;
	} finally {
		rmSync(dir, { recursive: true, force: true });
	}
}

/** Pi's /tree list: the selector built as Pi's interactive mode builds it, tall enough that
 *  nothing scrolls, rendered at `width` with the escapes stripped. HOME is `$PI_TREE_HOME`
 *  while it draws (paths under it are shortened to ~), or empty when that is not set. */
async function tree(file, width, filter) {
	const { TreeSelectorComponent, initTheme } = await import(pathToFileURL(join(pkg, "dist/index.js")).href);
	const { stripVTControlCharacters } = await import("node:util");
	initTheme("dark");
	const dir = mkdtempSync(join(tmpdir(), "pi-tree-"));
	const home = process.env.HOME;
	try {
		const copy = join(dir, "session.jsonl");
		copyFileSync(file, copy);
		migrationIds = 0;
		const entries = loadEntriesFromFile(copy);
		const sm = SessionManager.inMemory(entries[0].cwd || process.cwd(), undefined, entries);
		process.env.HOME = process.env.PI_TREE_HOME ?? "";
		const noop = () => {};
		const height = 2 * (sm.getEntries().length + 1);
		const selector = new TreeSelectorComponent(sm.getTree(), sm.getLeafId(), height, noop, noop, noop, undefined, filter);
		return selector
			.getTreeList()
			.render(width)
			.map((l) => stripVTControlCharacters(l));
	} finally {
		process.env.HOME = home;
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

/** `inspect`'s arguments (FILE, then options) to Pi's answers. */
function inspectArgs(args) {
	// Each file's made-up ids count from 1, as in a process of its own.
	migrationIds = 0;
	const opt = (name) => {
		const k = args.indexOf(name);
		return k >= 0 ? args[k + 1] : undefined;
	};
	const num = (name, dflt) => (opt(name) === undefined ? dflt : Number(opt(name)));
	return inspect(args[0], {
		leaf: opt("--leaf"),
		keep: num("--keep-recent-tokens", 20000),
		reserve: num("--reserve-tokens", 16384),
		branchTarget: opt("--branch-target"),
		window: num("--branch-context-window", 128000),
	});
}

const [cmd, ...args] = process.argv.slice(2);
if (cmd === "load") {
	for (const f of args) process.stdout.write(`${JSON.stringify(load(f))}\n`);
} else if (cmd === "inspect") {
	try {
		process.stdout.write(`${JSON.stringify(inspectArgs(args))}\n`);
	} catch (e) {
		console.error(`pi-session.mjs: ${e && e.message ? e.message : e}`);
		process.exit(1);
	}
} else if (cmd === "inspect-many") {
	// Many inspections in one process (Pi is loaded once): standard input is a JSON array of
	// argument lists as `inspect` takes them; one line out for each, in order.
	const runs = JSON.parse(readFileSync(0, "utf8"));
	for (const run of runs) {
		let line;
		try {
			line = { ok: inspectArgs(run) };
		} catch (e) {
			line = { error: e && e.message ? e.message : String(e) };
		}
		process.stdout.write(`${JSON.stringify(line)}\n`);
	}
} else if (cmd === "tree") {
	for (const spec of args.slice(1)) {
		const [width, filter] = spec.split(":");
		const lines = await tree(args[0], Number(width), filter ?? "default");
		process.stdout.write(`${JSON.stringify({ spec, lines })}\n`);
	}
} else if (cmd === "list") {
	const project = (await SessionManager.list(args[0])).map((s) => s.path);
	const all = (await SessionManager.listAll()).map((s) => s.path);
	process.stdout.write(`${JSON.stringify({ project, all })}\n`);
} else if (cmd === "list-all-timed") {
	// Pi's own listing of every project (what /resume's "all" shows), timed in process: the
	// first call, then the second (both after Node and Pi are loaded).
	const times = [];
	let n = 0;
	for (let k = 0; k < Number(args[0] ?? 2); k++) {
		const t0 = performance.now();
		n = (await SessionManager.listAll()).length;
		times.push(Math.round(performance.now() - t0));
	}
	process.stdout.write(`${JSON.stringify({ sessions: n, ms: times })}\n`);
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
	console.error("usage: pi-session.mjs load FILE... | inspect FILE [options] | inspect-many < RUNS.json | list CWD | open FILE | append FILE COUNT [--pause-ms N] [--seed S]");
	process.exit(2);
}
