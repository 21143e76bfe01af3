/**
 * What `toolhost doctor --json` says about the runtime of JS/TS custom tools (Bun, as
 * OpenCode runs them, or Node.js), for the status item. Best effort: an older sidecar
 * without `doctor` shows nothing.
 */
import { execFile } from 'child_process';

export interface DoctorCheck {
  name: string;
  ok: boolean;
  detail: string;
  summary?: string;
}

/** Every check of `toolhost doctor --json` for the sidecar started with `serveArgv`
 * (…, "serve"); undefined when it cannot run (an older sidecar, another command). */
export function doctorChecks(
  serveArgv: string[],
  cwd: string | undefined,
): Promise<DoctorCheck[] | undefined> {
  if (serveArgv.at(-1) !== 'serve') {
    return Promise.resolve(undefined);
  }
  const args = [...serveArgv.slice(1, -1), 'doctor', '--json', ...(cwd ? ['--cwd', cwd] : [])];
  return new Promise((resolve) => {
    // doctor exits 1 when a check fails: the JSON on stdout is the answer either way.
    execFile(serveArgv[0], args, { timeout: 30_000, cwd }, (_error, stdout) => {
      try {
        const parsed = JSON.parse(stdout) as DoctorCheck[] | { checks?: DoctorCheck[] };
        resolve(Array.isArray(parsed) ? parsed : (parsed.checks ?? []));
      } catch {
        resolve(undefined);
      }
    });
  });
}

/** The `js-runtime` check, with its few words for the status item. */
export function jsRuntimeCheck(checks: DoctorCheck[] | undefined): DoctorCheck | undefined {
  const check = checks?.find((c) => c.name === 'js-runtime');
  return check && { ...check, summary: check.summary ?? summarize(check) };
}

/** The `sandbox` check: "sandboxed (landlock)", or "UNSANDBOXED" when commands would
 * run without the kernel's boundary (`sandbox.mode` auto on a machine that has none). */
export function sandboxCheck(checks: DoctorCheck[] | undefined): DoctorCheck | undefined {
  const check = checks?.find((c) => c.name === 'sandbox');
  if (!check) {
    return undefined;
  }
  const engine = /run under (\w+)/.exec(check.detail);
  const summary = check.ok ? `sandboxed${engine ? ` (${engine[1]})` : ''}` : 'UNSANDBOXED';
  return { ...check, summary };
}

/** A few words for the status item: "Bun 1.4.5", "Bun (on first need)", "Node.js 20.20.2". */
export function summarize(check: DoctorCheck): string {
  if (!check.ok) {
    return 'unavailable';
  }
  const bun = /^Bun (\d[\w.-]*)/.exec(check.detail);
  if (bun) {
    return `Bun ${bun[1]}`;
  }
  if (check.detail.startsWith('Bun is installed from npm')) {
    return 'Bun (installed on first need)';
  }
  const node = /^Node\.js (\d[\w.-]*)/.exec(check.detail);
  return node ? `Node.js ${node[1]} (no Bun)` : check.detail.slice(0, 40);
}
