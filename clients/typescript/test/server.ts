// Starts the real `preemptd serve` binary on a loopback port for the tests.
//
// PREEMPTD_BIN names the binary (default: the repository's target/debug/preemptd, which
// `cargo build` or `cargo test` leaves there); PREEMPTD_SCENARIOS the conformance scenario
// directory (default: tests/conformance).

import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { join, resolve } from "node:path";

export const REPO = resolve(__dirname, "..", "..", "..", "..");
export const BIN = process.env.PREEMPTD_BIN ?? join(REPO, "target", "debug", "preemptd");
export const SCENARIOS = process.env.PREEMPTD_SCENARIOS ?? join(REPO, "tests", "conformance");
const SERVING = /serving.*?addr\W+(127\.0\.0\.1:\d+)/;

/** One `preemptd serve` process; `port` 0 picks a free one, learned from its log. */
export class Server {
  private process: ChildProcess | undefined;
  log = "";

  constructor(
    public port = 0,
    private readonly flags: string[] = [],
  ) {}

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  start(): Promise<this> {
    if (!existsSync(BIN)) throw new Error(`${BIN} not found: run cargo build, or set PREEMPTD_BIN`);
    const args = ["serve", "--listen", `127.0.0.1:${this.port}`, "--metrics-listen", "off", "--log-format", "json", ...this.flags];
    const child = spawn(BIN, args, { env: { ...process.env, RUST_LOG: "info", NO_COLOR: "1" }, stdio: ["ignore", "pipe", "pipe"] });
    this.process = child;
    return new Promise((resolvePromise, reject) => {
      let started = false;
      const timer = setTimeout(() => reject(new Error(`preemptd did not start; log:\n${this.log}`)), 30_000);
      const onData = (chunk: Buffer) => {
        this.log += chunk.toString();
        const match = SERVING.exec(this.log);
        if (match && !started) {
          started = true;
          this.log = "";
          this.port = Number(match[1].split(":")[1]);
          clearTimeout(timer);
          resolvePromise(this);
        }
      };
      child.stdout!.on("data", onData);
      child.stderr!.on("data", onData);
      child.on("exit", (code) => {
        if (!started) {
          clearTimeout(timer);
          reject(new Error(`preemptd exited with ${code}; log:\n${this.log}`));
        }
      });
    });
  }

  /** SIGTERM; resolves with the exit code once it has exited. */
  stop(): Promise<number | null> {
    const child = this.process;
    this.process = undefined;
    if (!child || child.exitCode !== null) return Promise.resolve(child?.exitCode ?? null);
    return new Promise((resolvePromise) => {
      child.once("exit", (code) => resolvePromise(code));
      child.kill("SIGTERM");
    });
  }
}

/** Every scenario file under SCENARIOS, sorted. */
export function scenarioFiles(dir = SCENARIOS): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...scenarioFiles(path));
    else if (name.endsWith(".json")) out.push(path);
  }
  return out.sort();
}

export function readJson(path: string): any {
  return JSON.parse(readFileSync(path, "utf8"));
}
