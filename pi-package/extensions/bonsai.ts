/**
 * bonsai inside Pi.
 *
 * - `/bonsai [ARGS]`: bonsai's TUI on the current session (Pi's terminal is handed over while
 *   it runs); when bonsai changed the file, Pi reloads the session and goes on at the leaf
 *   bonsai left. `P` there (on this session, or one chosen in bonsai's picker) switches this
 *   Pi to that session with Pi's own switch: bonsai names it in a file the package made.
 * - The `context` hook: on every model call, bonsai's engine decides what the model is sent
 *   (`bonsai.live.policy`: off, output, zones). Nothing is written. Only the messages Pi
 *   appended since the last call are sent to the engine, with the fingerprints that let it
 *   check it holds the same earlier ones. The engine's notice at a step is shown.
 * - `turn_end`: compaction before Pi's own threshold, once per pressure episode, decided by
 *   the engine; the compaction is returned to Pi as an entry draft, so it is in the file
 *   before the next request (and before print mode exits).
 * - `session_before_compact`: bonsai's summary for Pi's own compactions when
 *   `bonsai.live.summarizer` is not `pi`; with `pi`, Pi's own summary (Pi's `compact` on Pi's
 *   preparation) mended before Pi writes it.
 * - Every compaction's summary, Pi's or bonsai's, is audited and mended by the engine before
 *   it is written: what it lost of the entries it replaced goes back in, word for word.
 *   One line says what was lost and given back; `/ctx-status` keeps it.
 * - `bonsai_recall`: a tool the model calls to get back, word for word, what it is not sent
 *   now (turns bonsai left out, entries a compaction summarized). Registered when the
 *   engine says so (`bonsai.live.recall`, not with the `off` policy); its definition never
 *   changes, so it stays in the cached start of every request.
 * - `/ctx-status`: what the engine did on the last call, its steps, and the bill so far.
 *
 * This file holds no policy: every decision and every notice's words are the engine's
 * (`bonsai serve --stdio`). When the engine is missing, too old, too slow or gone, the context
 * passes through unchanged and the user is told once.
 */

import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ExtensionAPI, ExtensionCommandContext, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { compact, getAgentDir, VERSION } from "@earendil-works/pi-coding-agent";
import { CHAIN_START, chainNext, Engine, type Failure, fingerprint, hex, missingText, PROTOCOL } from "../lib/engine.ts";

/** The tool's name (the engine names it in the packet). */
const RECALL_TOOL = "bonsai_recall";

/** The package's own settings (everything else is read by the engine). */
type PackageSettings = { bin: string; binFrom: string; timeoutMs: number; problems: string[]; ignored?: string };

function readJson(path: string): any {
	try {
		return JSON.parse(readFileSync(path, "utf8"));
	} catch {
		return {};
	}
}

/** Whether Pi trusts the project folder (its project settings load only then). Pi's own
 * decision; a Pi without the question trusts nothing of the folder's here. */
function projectTrusted(ctx: ExtensionContext): boolean {
	try {
		return typeof (ctx as any).isProjectTrusted === "function" && (ctx as any).isProjectTrusted() === true;
	} catch {
		return false;
	}
}

/** `bonsai.binary` and `bonsai.live.timeoutMs` from Pi's settings: the user's, and the
 * project's over them only when Pi trusts the folder, as Pi loads them. A folder Pi does not
 * trust never names the program this package runs; when it tries, that is said. */
function packageSettings(cwd: string, trusted: boolean): PackageSettings {
	const user = readJson(join(getAgentDir(), "settings.json"))?.bonsai ?? {};
	const projectFile = join(cwd, ".pi", "settings.json");
	const problems: string[] = [];
	let project: any = {};
	let ignored: string | undefined;
	if (trusted) {
		project = readJson(projectFile)?.bonsai ?? {};
	} else if (existsSync(projectFile)) {
		// Read only to say what is not used (never to use it); the engine says it when it runs.
		const named = readJson(projectFile)?.bonsai ?? {};
		if (named.binary !== undefined) {
			ignored = `${projectFile}: bonsai.binary not used: Pi does not trust this folder`;
		}
	}
	let bin = "bonsai";
	let binFrom = "PATH";
	const setBin = project.binary ?? user.binary;
	if (process.env.BONSAI_BIN) {
		bin = process.env.BONSAI_BIN;
		binFrom = "BONSAI_BIN";
	} else if (setBin !== undefined) {
		if (typeof setBin === "string" && setBin.length > 0) {
			bin = setBin.startsWith("~/") ? join(process.env.HOME ?? "", setBin.slice(2)) : setBin;
			binFrom = "bonsai.binary";
		} else {
			problems.push(`bonsai.binary is ${JSON.stringify(setBin)}: expected the path of the bonsai program; looking on PATH`);
		}
	}
	let timeoutMs = 2000;
	const t = project.live?.timeoutMs ?? user.live?.timeoutMs;
	if (t !== undefined) {
		if (typeof t === "number" && t >= 10) timeoutMs = t;
		else problems.push(`bonsai.live.timeoutMs is ${JSON.stringify(t)}: expected milliseconds, at least 10; 2000 is used`);
	}
	return { bin, binFrom, timeoutMs, problems, ignored };
}

/** Long requests (a summary by a model) get this long. */
const SLOW_MS = 300_000;

export default function bonsai(pi: ExtensionAPI) {
	let engine: Engine | undefined;
	let settings: PackageSettings | undefined;
	let summarizer = "pi";
	/** Compactions' summaries are mended before they are written (the engine's word). */
	let mend = false;
	/** The recall tool is registered (once per process; its definition never changes). */
	let recallRegistered = false;
	/** The compaction Pi is writing now was mended in its hook (its line already said). */
	let mendedHere = false;
	let hello: any;
	/** The one notice about the engine failing has been given. */
	let warned = false;
	let lastFailure: string | undefined;
	/** What the engine holds of Pi's messages after the last answered call: their
	 * fingerprints, and the chain over them (`chain[k]`: of the first `k`). */
	const nothingHeld = () => ({ fps: [] as string[], chain: [CHAIN_START] });
	let held = nothingHeld();

	function tell(ctx: ExtensionContext, text: string, level: "info" | "warning" | "error") {
		if (ctx.hasUI) ctx.ui.notify(text, level);
		else process.stderr.write(`${text}\n`);
	}

	/** The engine's word on what it did (a step, an early compaction): shown where there is a
	 * UI; print mode stays quiet. */
	function note(ctx: ExtensionContext, text: string | undefined) {
		if (text && ctx.hasUI) ctx.ui.notify(text, "info");
	}

	/** From now on the context passes through; say so the first time only. */
	function failed(ctx: ExtensionContext, f: Failure) {
		lastFailure = f.message;
		if (warned) return;
		warned = true;
		const fix =
			f.kind === "missing"
				? missingFix()
				: f.kind === "timeout"
					? " (bonsai.live.timeoutMs sets the limit)"
					: f.kind === "died"
						? " (/reload starts it again)"
						: "";
		tell(ctx, `bonsai: ${f.message}${fix}. Pi's context is passed through unchanged.`, "warning");
	}

	/** How to mend a missing program, said after the failure. */
	function missingFix(): string {
		return settings?.binFrom === "bonsai.binary"
			? ` (bonsai.binary is ${JSON.stringify(settings.bin)})`
			: settings?.binFrom === "BONSAI_BIN"
				? " (BONSAI_BIN names it)"
				: " (install bonsai, or set bonsai.binary in Pi's settings.json)";
	}

	async function start(ctx: ExtensionContext) {
		engine?.close();
		warned = false;
		lastFailure = undefined;
		held = nothingHeld();
		const trusted = projectTrusted(ctx);
		settings = packageSettings(ctx.cwd, trusted);
		engine = new Engine(settings.bin, ctx.cwd);
		const r = await engine.request(
			"hello",
			{
				protocol: PROTOCOL,
				client: "pi-bonsai package",
				piVersion: VERSION,
				cwd: ctx.cwd,
				sessionFile: ctx.sessionManager.getSessionFile() ?? null,
				mode: ctx.mode,
				// Pi's own decision on the folder: the engine reads its settings only then.
				projectTrusted: trusted,
			},
			10_000,
		);
		const problems = [...settings.problems];
		if (!r.ok) {
			failed(ctx, r);
			// The engine says it when it answers; here it could not.
			if (settings.ignored) problems.push(settings.ignored);
		} else {
			hello = r.result;
			summarizer = hello.settings?.summarizer ?? "pi";
			mend = hello.settings?.mend === true;
			problems.push(...(hello.problems ?? []));
			offerRecall(hello.settings?.recall === true);
		}
		if (problems.length > 0) tell(ctx, `bonsai: ${problems.join("; ")}`, "warning");
	}

	/** The engine when it can answer now (not gone, not stalled on an earlier request). One
	 * that went away between two calls (killed, crashed) is said here, once. */
	function live(ctx: ExtensionContext): Engine | undefined {
		if (!engine) return undefined;
		if (engine.gone) {
			failed(ctx, engine.gone);
			return undefined;
		}
		return engine.stalled ? undefined : engine;
	}

	/** The `bonsai_recall` tool, active exactly when the engine says the policy uses it. */
	function offerRecall(on: boolean) {
		try {
			if (on && !recallRegistered) {
				pi.registerTool(recallTool);
				recallRegistered = true;
			} else if (recallRegistered) {
				const active = pi.getActiveTools();
				const has = active.includes(RECALL_TOOL);
				if (on && !has) pi.setActiveTools([...active, RECALL_TOOL]);
				if (!on && has) pi.setActiveTools(active.filter((t) => t !== RECALL_TOOL));
			}
		} catch (err) {
			lastFailure = `the recall tool could not be registered: ${(err as Error).message}`;
		}
	}

	const recallTool = {
		name: RECALL_TOOL,
		label: "bonsai recall",
		description:
			"Fetch, word for word, earlier parts of this conversation that are no longer in your context: turns bonsai left out of this request and entries a compaction summarized. Give a word, a file path, an id, a URL or a short phrase; the newest matches come first, with their entry ids.",
		parameters: {
			type: "object",
			properties: {
				query: { type: "string", description: "A word, path, id, URL or phrase to look for in the earlier conversation" },
			},
			required: ["query"],
			additionalProperties: false,
		},
		async execute(_id: string, params: { query: string }, _signal: AbortSignal | undefined, _onUpdate: unknown, ctx: ExtensionContext) {
			const e = live(ctx);
			const text = async () => {
				if (!e) return `bonsai's engine is not running${lastFailure ? ` (${lastFailure})` : ""}: the earlier conversation cannot be fetched now.`;
				const r = await e.request(
					"recall",
					{ query: String(params?.query ?? ""), sessionFile: ctx.sessionManager.getSessionFile() ?? null, leafId: ctx.sessionManager.getLeafId() },
					30_000,
				);
				return r.ok ? String(r.result.text) : `bonsai could not search the earlier conversation: ${r.message}`;
			};
			return { content: [{ type: "text" as const, text: await text() }], details: undefined };
		},
	};

	function usageOf(ctx: ExtensionContext) {
		const u = ctx.getContextUsage();
		return u ? { tokens: u.tokens, contextWindow: u.contextWindow } : null;
	}

	function modelOf(ctx: ExtensionContext) {
		return ctx.model ? { provider: ctx.model.provider, id: ctx.model.id } : null;
	}

	pi.on("session_start", async (_event, ctx) => {
		await start(ctx);
	});

	pi.on("session_shutdown", async () => {
		engine?.close();
		engine = undefined;
	});

	pi.on("context", async (event, ctx) => {
		const e = live(ctx);
		if (!e) return undefined;
		const msgs = event.messages;
		const fps = msgs.map(fingerprint);
		// The engine holds the messages of the last call: send what differs from there on.
		let base = 0;
		const common = Math.min(fps.length, held.fps.length);
		while (base < common && fps[base] === held.fps[base]) base++;
		const timeoutMs = settings?.timeoutMs ?? 2000;
		const ask = (from: number) =>
			e.request(
				"context",
				{
					base: from,
					baseHash: hex(held.chain[from] ?? CHAIN_START),
					messages: from === 0 ? msgs : msgs.slice(from),
					hashes: fps.slice(from),
					usage: usageOf(ctx),
					model: modelOf(ctx),
				},
				// The whole of a long list goes once (the engine replays its calls): it gets
				// longer than a call that sends what Pi appended.
				msgs.length - from > 1000 ? Math.max(timeoutMs, 10_000) : timeoutMs,
			);
		let r = await ask(base);
		// The engine holds something else (it restarted, or a late answer): the whole list.
		if (!r.ok && r.code === "resync" && base > 0) r = await ask(0);
		if (!r.ok) {
			held = nothingHeld();
			failed(ctx, r);
			return undefined;
		}
		const chain = held.chain.slice(0, base + 1);
		for (let k = base; k < fps.length; k++) chain.push(chainNext(chain[k], fps[k]));
		held = { fps, chain };
		note(ctx, r.result.notice);
		if (!r.result.changed) return undefined;
		const out: unknown[] = [];
		for (const p of r.result.pieces) {
			if (!("keep" in p)) out.push(p.message);
			else if (Array.isArray(p.keep)) for (let i = p.keep[0]; i < p.keep[1]; i++) out.push(msgs[i]);
			else out.push(msgs[p.keep]);
		}
		return { messages: out as typeof msgs };
	});

	pi.on("turn_end", async (_event, ctx) => {
		const e = live(ctx);
		if (!e) return undefined;
		const sessionFile = ctx.sessionManager.getSessionFile();
		const r = await e.request(
			"turn_end",
			{ usage: usageOf(ctx), model: modelOf(ctx), leafId: ctx.sessionManager.getLeafId(), sessionFile },
			SLOW_MS,
		);
		if (!r.ok) {
			failed(ctx, r);
			return undefined;
		}
		const d = r.result;
		if (!d.compact) {
			// Red with nothing to compact, or a summary that failed: said once per episode.
			if (d.notice) tell(ctx, d.notice, "warning");
			return undefined;
		}
		if (d.draft) {
			note(ctx, d.notice);
			note(ctx, d.audit);
			return { entries: [d.draft] };
		}
		if (!d.preparation || !ctx.model) return undefined;
		// Pi's own summary: Pi's `compact` on the preparation the engine made (what Pi's
		// prepareCompaction gives on the same path).
		try {
			const p = d.preparation;
			const preparation = {
				...p,
				previousSummary: p.previousSummary ?? undefined,
				fileOps: { read: new Set(p.fileOps.read), written: new Set(p.fileOps.written), edited: new Set(p.fileOps.edited) },
			};
			const auth = await ctx.modelRegistry.getApiKeyAndHeaders(ctx.model);
			if (!auth.ok) throw new Error(auth.error);
			const model = auth.baseUrl ? { ...ctx.model, baseUrl: auth.baseUrl } : ctx.model;
			const res = await compact(preparation as any, model, auth.apiKey, auth.headers as any, undefined, ctx.signal, ctx.thinkingLevel);
			await e.request("compaction_done", { ok: true }, 5_000);
			note(ctx, d.notice);
			// What Pi's summary lost, given back before Pi appends it at this boundary.
			const summary = await mended(e, ctx, res.summary, res.firstKeptEntryId);
			return {
				entries: [{ type: "compaction", summary, firstKeptEntryId: res.firstKeptEntryId, details: res.details, usage: (res as any).usage }],
			};
		} catch (err) {
			await e.request("compaction_done", { ok: false, error: String(err) }, 5_000);
			tell(ctx, `bonsai: early compaction failed (${(err as Error).message}); Pi compacts at its own threshold`, "warning");
			return undefined;
		}
	});

	/** A summary about to be written, mended by the engine (said in one line); the summary as
	 * it is when the engine cannot. */
	async function mended(e: Engine, ctx: ExtensionContext, summary: string, firstKeptEntryId: string): Promise<string> {
		const a = await e.request(
			"mend",
			{ sessionFile: ctx.sessionManager.getSessionFile(), leafId: ctx.sessionManager.getLeafId(), summary, firstKeptEntryId, model: modelOf(ctx) },
			30_000,
		);
		if (!a.ok) return summary;
		note(ctx, a.result.line);
		return typeof a.result.summary === "string" ? a.result.summary : summary;
	}

	pi.on("session_before_compact", async (event, ctx) => {
		const e = live(ctx);
		if (!e) return undefined;
		if (summarizer === "pi") {
			// Pi's own summary, made here as Pi makes it, so it is mended before Pi writes it.
			if (!mend || !ctx.model) return undefined;
			try {
				const auth = await ctx.modelRegistry.getApiKeyAndHeaders(ctx.model);
				if (!auth.ok) return undefined;
				const model = auth.baseUrl ? { ...ctx.model, baseUrl: auth.baseUrl } : ctx.model;
				const res = await compact(
					event.preparation as any,
					model,
					auth.apiKey,
					auth.headers as any,
					event.customInstructions,
					event.signal,
					ctx.thinkingLevel,
				);
				mendedHere = true;
				const summary = await mended(e, ctx, res.summary, res.firstKeptEntryId);
				return {
					compaction: { summary, firstKeptEntryId: res.firstKeptEntryId, tokensBefore: res.tokensBefore, details: res.details, usage: (res as any).usage },
				};
			} catch {
				// Pi compacts as it would alone.
				return undefined;
			}
		}
		const r = await e.request(
			"summarize",
			{
				sessionFile: ctx.sessionManager.getSessionFile(),
				leafId: ctx.sessionManager.getLeafId(),
				firstKeptEntryId: event.preparation.firstKeptEntryId,
				customInstructions: event.customInstructions ?? null,
				model: modelOf(ctx),
				reason: event.reason,
			},
			SLOW_MS,
		);
		if (!r.ok) {
			failed(ctx, r);
			return undefined;
		}
		if (!r.result.compaction) return undefined;
		mendedHere = true;
		note(ctx, r.result.line);
		return { compaction: r.result.compaction };
	});

	// After any compaction Pi appends (its own, or one bonsai's summary made through the hook):
	// what the summary lost, in one line. A failure here is never Pi's problem: nothing said.
	pi.on("session_compact", async (event, ctx) => {
		const e = live(ctx);
		const id = (event as any).compactionEntry?.id;
		const sessionFile = ctx.sessionManager.getSessionFile();
		// A summary mended in the hook was said then.
		if (mendedHere) {
			mendedHere = false;
			return;
		}
		if (!e || !id || !sessionFile) return;
		const r = await e.request("audit", { sessionFile, entryId: id }, 10_000);
		if (r.ok) note(ctx, r.result.line);
	});

	pi.registerCommand("ctx-status", {
		description: "bonsai: the live policy, the whole context and what was sent, steps, cache hits and the bill so far",
		handler: async (_args, ctx) => {
			const e = engine && !engine.gone && !engine.stalled ? engine : undefined;
			const lines: string[] = [];
			if (!e) {
				const state = engine?.stalled ? "not answering" : "not running";
				lines.push(`bonsai: engine ${state}${lastFailure ? ` (${lastFailure})` : ""}; Pi's context is passed through unchanged`);
			} else {
				// The engine words and formats every line, as the TUI and the CLI say them.
				const piFigure = ctx.getContextUsage()?.tokens ?? null;
				const r = await e.request("status", { sessionFile: ctx.sessionManager.getSessionFile() ?? null, piFigure }, 10_000);
				if (!r.ok) {
					failed(ctx, r);
					lines.push(`bonsai: ${r.message}`);
				} else {
					lines.push(...(r.result.lines as string[]));
				}
			}
			const text = lines.join("\n");
			if (ctx.hasUI) ctx.ui.notify(text, "info");
			else process.stdout.write(`${text}\n`);
		},
	});

	pi.registerCommand("bonsai", {
		description: "bonsai: browse, prune and compact this session's tree (arguments go to bonsai, e.g. --at ID)",
		handler: async (args: string, ctx: ExtensionCommandContext) => {
			if (ctx.mode !== "tui") {
				tell(ctx, "bonsai: /bonsai needs Pi's terminal UI; from print, RPC or JSON mode run `bonsai FILE` in a terminal", "warning");
				// A script that ran `pi -p /bonsai` learns it did nothing.
				if (ctx.mode === "print") process.exitCode = 1;
				return;
			}
			const file = ctx.sessionManager.getSessionFile();
			if (!file) {
				tell(ctx, "bonsai: this session is not saved to a file, so bonsai has nothing to open", "warning");
				return;
			}
			if (!ctx.isIdle()) tell(ctx, "bonsai: Pi is working; the tree opens when this turn ends", "info");
			await ctx.waitForIdle();
			settings ??= packageSettings(ctx.cwd, projectTrusted(ctx));
			const bin = settings.bin;
			const before = stamp(file);
			const argv = [file, ...splitArgs(args)];
			// Where bonsai names the session to switch to (P), in a private folder of our own.
			let handoffDir: string | undefined;
			try {
				handoffDir = mkdtempSync(join(tmpdir(), "bonsai-switch-"));
			} catch {
				handoffDir = undefined;
			}
			const handoff = handoffDir ? join(handoffDir, "session") : undefined;
			const status = await ctx.ui.custom<{ code: number | null; error?: NodeJS.ErrnoException }>((tui, _theme, _kb, done) => {
				tui.stop();
				process.stdout.write("\x1b[2J\x1b[H");
				const r = spawnSync(bin, argv, {
					stdio: "inherit",
					cwd: ctx.cwd,
					// bonsai knows Pi is waiting for it on this file (and reloads it after), and
					// reproduces this Pi.
					env: {
						...process.env,
						BONSAI_PI_SESSION: file,
						// Pi's decision on the folder: bonsai reads its settings only then.
						BONSAI_PROJECT_TRUSTED: projectTrusted(ctx) ? "1" : "0",
						BONSAI_PI_VERSION: process.env.BONSAI_PI_VERSION || VERSION,
						...(handoff ? { BONSAI_PI_SWITCH_FILE: handoff } : {}),
					},
				});
				tui.start();
				tui.requestRender(true);
				done({ code: r.status, error: r.error as NodeJS.ErrnoException | undefined });
				return { render: () => [], invalidate: () => {} };
			});
			let switchTo: string | undefined;
			if (handoff && handoffDir) {
				try {
					switchTo = readFileSync(handoff, "utf8").trim() || undefined;
				} catch {
					switchTo = undefined;
				}
				rmSync(handoffDir, { recursive: true, force: true });
			}
			if (status.error) {
				const code = status.error.code;
				const why =
					code === "ENOENT" || code === "EACCES"
						? `${missingText(bin, code)}${missingFix()}`
						: `cannot run ${bin}: ${status.error.message}`;
				tell(ctx, `bonsai: ${why}`, "error");
				return;
			}
			if (switchTo && !existsSync(switchTo)) {
				// Pi would start a new session at a path that is not there: say so, stay here.
				tell(ctx, `bonsai: the session to switch to is not there (${switchTo}); staying in this one`, "warning");
				switchTo = undefined;
			}
			if (switchTo) {
				// P in bonsai: this Pi goes on in the session chosen (the same one reopened).
				const result = await ctx.switchSession(switchTo);
				if (result?.cancelled) tell(ctx, `bonsai: switching to ${switchTo} was cancelled`, "warning");
				return;
			}
			if (stamp(file) !== before) {
				// Pi holds its leaf in memory: reopen the file so it goes on where bonsai left it.
				await ctx.switchSession(file);
			}
		},
	});
}

/** Size and modification time: what tells that bonsai wrote to the file. */
function stamp(file: string): string {
	try {
		const s = statSync(file);
		return `${s.size}:${s.mtimeMs}:${s.ino}`;
	} catch {
		return "gone";
	}
}

/** Words of the command's arguments, with '…' and "…" quoting. */
function splitArgs(s: string): string[] {
	const out: string[] = [];
	const re = /"([^"]*)"|'([^']*)'|(\S+)/g;
	for (let m = re.exec(s); m; m = re.exec(s)) out.push(m[1] ?? m[2] ?? m[3]);
	return out;
}

