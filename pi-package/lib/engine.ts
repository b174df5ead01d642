/**
 * The link to bonsai's engine: one `bonsai serve --stdio` child per Pi session, JSON lines
 * both ways, each request with an id and a deadline. No Pi imports here, so the benchmark
 * and tests can load it with plain Node.
 *
 * Failures are values, never throws into Pi: a request resolves to `{ ok: false, kind, message }`
 * when the binary is missing, the child died, the answer came too late, or the engine refused
 * the request.
 */

import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";

/** The protocol this package speaks (bonsai's `serve` must speak the same). Every request and answer
 * is written once, as types, in bonsai's `src/serve/protocol.rs`; `tests/serve_protocol.rs` checks
 * the exchanges this package has in real Pi against them. */
export const PROTOCOL = 2;

/** `code`: the engine's error code when it refused a request (e.g. `resync`). */
export type Failure = {
	ok: false;
	kind: "missing" | "died" | "timeout" | "refused" | "protocol";
	message: string;
	code?: string;
};
export type Reply<T> = { ok: true; result: T } | Failure;

type Pending = {
	resolve: (r: Reply<any>) => void;
	timer: ReturnType<typeof setTimeout> | undefined;
	method: string;
};

export class Engine {
	private child: ChildProcess | undefined;
	private pending = new Map<number, Pending>();
	private nextId = 1;
	private stderrTail = "";
	/** A request timed out and nothing was answered since: the engine may be stuck. */
	private stuck = false;
	/** Why the engine cannot answer any more (set once). */
	gone: Failure | undefined;

	readonly bin: string;

	/** Start `bin serve --stdio` in `cwd`. A spawn failure shows up as `gone` on the first request. */
	constructor(bin: string, cwd: string, env: NodeJS.ProcessEnv = process.env) {
		this.bin = bin;
		let child: ChildProcess;
		try {
			child = spawn(bin, ["serve", "--stdio"], { cwd, env, stdio: ["pipe", "pipe", "pipe"] });
		} catch (e) {
			this.fail({ ok: false, kind: "missing", message: `cannot start ${bin}: ${(e as Error).message}` });
			return;
		}
		this.child = child;
		child.on("error", (e: NodeJS.ErrnoException) => {
			const kind = e.code === "ENOENT" || e.code === "EACCES" ? "missing" : "died";
			this.fail({ ok: false, kind, message: kind === "missing" ? missingText(bin, e.code) : `${bin}: ${e.message}` });
		});
		// `close`, not `exit`: by then its stderr is read to the end (what says it is too old).
		child.on("close", (code, signal) => {
			const tail = this.stderrTail.trim().split("\n").slice(-2).join(" / ");
			// `bonsai` without `serve` (older than this package) exits 2 with clap's usage error.
			const old = code === 2 && /unrecognized subcommand|unexpected argument/.test(this.stderrTail);
			this.fail(
				old
					? { ok: false, kind: "protocol", message: `${bin} is too old: it has no \`serve\` command (update bonsai)` }
					: {
							ok: false,
							kind: "died",
							message: `${bin} serve ${signal ? `was killed (${signal})` : `exited with code ${code}`}${tail ? `: ${tail}` : ""}`,
						},
			);
		});
		child.stdin?.on("error", () => {
			/* the exit handler says why */
		});
		child.stderr?.on("data", (d: Buffer) => {
			this.stderrTail = (this.stderrTail + d.toString("utf8")).slice(-2000);
		});
		const lines = createInterface({ input: child.stdout!, crlfDelay: Infinity });
		lines.on("line", (line) => this.onLine(line));
	}

	private fail(f: Failure) {
		if (!this.gone) this.gone = f;
		for (const [, p] of this.pending) {
			if (p.timer) clearTimeout(p.timer);
			p.resolve(this.gone);
		}
		this.pending.clear();
	}

	private onLine(line: string) {
		let msg: any;
		try {
			msg = JSON.parse(line);
		} catch {
			return;
		}
		this.stuck = false;
		const p = this.pending.get(msg?.id);
		if (!p) return; // an answer that came after its deadline
		this.pending.delete(msg.id);
		if (p.timer) clearTimeout(p.timer);
		if (msg.error) {
			const kind = msg.error.code === "protocol" ? "protocol" : "refused";
			p.resolve({ ok: false, kind, message: `${p.method}: ${msg.error.message}`, code: msg.error.code });
		} else {
			p.resolve({ ok: true, result: msg.result });
		}
	}

	/** Ask the engine; resolves (never rejects) within `timeoutMs`. */
	request<T = any>(method: string, params: unknown, timeoutMs: number): Promise<Reply<T>> {
		if (this.gone) return Promise.resolve(this.gone);
		const id = this.nextId++;
		return new Promise((resolve) => {
			const timer =
				timeoutMs > 0
					? setTimeout(() => {
							this.pending.delete(id);
							this.stuck = true;
							resolve({ ok: false, kind: "timeout", message: `${method} took over ${timeoutMs} ms` });
						}, timeoutMs)
					: undefined;
			this.pending.set(id, { resolve, timer, method });
			try {
				this.child!.stdin!.write(`${JSON.stringify({ id, method, params })}\n`);
			} catch (e) {
				this.fail({ ok: false, kind: "died", message: `cannot write to ${this.bin}: ${(e as Error).message}` });
			}
		});
	}

	/** Ask the engine to stop, and make sure it does; never keeps Pi from exiting. Idempotent. */
	close() {
		const child = this.child;
		this.child = undefined;
		this.fail({ ok: false, kind: "died", message: "the engine was closed" });
		if (!child || child.exitCode !== null || child.signalCode !== null) return;
		try {
			// Its stdin closing ends it too.
			child.stdin?.end(`${JSON.stringify({ id: 0, method: "shutdown", params: {} })}\n`);
		} catch {
			/* already gone */
		}
		// Our ends of its pipes would keep Pi's event loop (and so Pi) alive.
		child.stdout?.destroy();
		child.stderr?.destroy();
		if (this.stuck) {
			child.kill("SIGKILL");
		} else {
			const t = setTimeout(() => child.kill("SIGKILL"), 1000);
			t.unref?.();
			child.once("exit", () => clearTimeout(t));
		}
		child.unref();
	}

	/** A request went unanswered past its deadline and nothing came since: asking more would
	 * only make Pi wait on each (an answer, even a late one, clears it). */
	get stalled(): boolean {
		return this.stuck;
	}

	/** The child's pid (tests kill it to check the pass-through). */
	get pid(): number | undefined {
		return this.child?.pid;
	}
}

/** What to say when the program cannot be started: which program, and why. */
export function missingText(bin: string, code?: string): string {
	const what = bin.includes("/") ? `the bonsai program ${bin}` : `the bonsai program (\`${bin}\` on PATH)`;
	return `${what} ${code === "EACCES" ? "is not executable" : "was not found"}`;
}

/** FNV-1a's offset basis and prime (32-bit). */
const FNV_START = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/**
 * A message's fingerprint, 8 hex digits: FNV-1a over what tells one message from another
 * without reading all of it: its role, time, ids and kinds, each string's length and its
 * first and last characters. Pi hands the `context` hook a fresh copy of every message on each
 * call, so only such a read tells which are the same; walking or serializing all of 10,000
 * messages would cost more than the call itself. Pi never changes a message in place: a
 * message with the same fingerprint is the same message.
 */
export function fingerprint(m: any): string {
	let h = FNV_START;
	const mix = (x: number) => {
		h = Math.imul(h ^ (x | 0), FNV_PRIME);
	};
	const text = (s: string) => {
		const n = s.length;
		mix(n);
		const head = Math.min(n, 12);
		for (let i = 0; i < head; i++) mix(s.charCodeAt(i));
		for (let i = Math.max(head, n - 12); i < n; i++) mix(s.charCodeAt(i));
	};
	const str = (x: unknown) => (typeof x === "string" ? text(x) : mix(-2));
	const num = (x: unknown) => {
		if (typeof x === "number") {
			mix(x % 4294967296);
			mix(Math.floor(x / 4294967296));
		} else mix(-1);
	};
	str(m?.role);
	num(m?.timestamp);
	str(m?.toolCallId);
	str(m?.customType);
	str(m?.stopReason);
	str(m?.summary);
	str(m?.command);
	str(m?.output);
	const c = m?.content;
	if (typeof c === "string") text(c);
	else if (Array.isArray(c)) {
		mix(c.length);
		for (const b of c) {
			str(b?.type);
			str(b?.text);
			str(b?.thinking);
			str(b?.id);
			str(b?.name);
			str(b?.data);
		}
	} else mix(-3);
	return (h >>> 0).toString(16).padStart(8, "0");
}

/** The chain after one more message: FNV-1a over the chain's and the fingerprint's bytes,
 * little-endian (bonsai's `serve` computes the same). */
export function chainNext(chain: number, fingerprintHex: string): number {
	const fp = Number.parseInt(fingerprintHex, 16);
	let h = FNV_START;
	for (const w of [chain, fp]) {
		for (let k = 0; k < 4; k++) {
			h ^= (w >>> (8 * k)) & 0xff;
			h = Math.imul(h, FNV_PRIME);
		}
	}
	return h >>> 0;
}

/** The chain's start. */
export const CHAIN_START = FNV_START;

/** Hex of a chain value as the engine writes it. */
export function hex(n: number): string {
	return (n >>> 0).toString(16).padStart(8, "0");
}
