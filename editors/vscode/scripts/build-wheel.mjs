// Builds the toolhost wheel that ships inside the .vsix (bundled/), for the
// "Install toolhost" button: `pip wheel --no-deps` of the repository root. The
// sources are copied to a temporary folder first, so the build leaves no build/
// or *.egg-info behind in the checkout.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { EXTENSION_ROOT, pythonCommand, REPO_ROOT } from './toolhost.mjs';

const out = join(EXTENSION_ROOT, 'bundled');
mkdirSync(out, { recursive: true });
for (const old of readdirSync(out).filter((name) => name.endsWith('.whl'))) {
  rmSync(join(out, old));
}
const src = mkdtempSync(join(tmpdir(), 'toolhost-wheel-'));
try {
  for (const entry of ['pyproject.toml', 'README.md', 'LICENSE', 'tools', 'server']) {
    try {
      cpSync(join(REPO_ROOT, entry), join(src, entry), {
        recursive: true,
        filter: (path) =>
          !['__pycache__', '.pytest_cache'].includes(basename(path)) && !path.endsWith('.pyc'),
      });
    } catch (error) {
      if (error.code !== 'ENOENT') throw error;
    }
  }
  const pip = ['-m', 'pip', 'wheel', '--quiet', '--no-deps', '--disable-pip-version-check', '-w', out, src];
  const run = spawnSync(pythonCommand(), pip, { encoding: 'utf8' });
  if (run.status !== 0) {
    // setuptools' deprecation chatter is shown only when the build fails.
    process.stderr.write(`${run.error ?? ''}${run.stdout ?? ''}${run.stderr ?? ''}`);
    process.exit(run.status || 1);
  }
} finally {
  rmSync(src, { recursive: true, force: true });
}
console.log(
  `bundled/: ${readdirSync(out)
    .filter((name) => name.endsWith('.whl'))
    .join(', ')}`,
);
