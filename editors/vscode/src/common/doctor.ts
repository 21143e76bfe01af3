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
        resolve(checks.find((check) => check.name === 'js-runtime'));
      } catch {
        resolve(undefined);
      }
    });
  });
}
