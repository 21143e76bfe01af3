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

/** The `js-runtime` check for the sidecar started with `serveArgv` (…, "serve"). */
export function jsRuntimeCheck(
  serveArgv: string[],
  cwd: string | undefined,
): Promise<DoctorCheck | undefined> {
  if (serveArgv.at(-1) !== 'serve') {
    return Promise.resolve(undefined);
  }
  const args = [...serveArgv.slice(1, -1), 'doctor', '--json', ...(cwd ? ['--cwd', cwd] : [])];
  return new Promise((resolve) => {
    execFile(serveArgv[0], args, { timeout: 30_000, cwd }, (_error, stdout) => {
      try {
        const parsed = JSON.parse(stdout) as DoctorCheck[] | { checks?: DoctorCheck[] };
        const checks = Array.isArray(parsed) ? parsed : (parsed.checks ?? []);
        const check = checks.find((c) => c.name === 'js-runtime');
        resolve(check && { ...check, summary: check.summary ?? summarize(check) });
      } catch {
        resolve(undefined);
      }
    });
  });
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
