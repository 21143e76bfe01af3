// Module hooks for toolhost's Node host (registered by host.mjs with module.register).
//
// - .ts files are transpiled (esbuild, else Node's own type stripping where it exists).
// - .js files that use import/export are loaded as ES modules even without
//   "type": "module" (OpenCode runs tools on Bun, which does not care).
// - Bare imports a tool folder cannot resolve (@opencode-ai/plugin, zod) fall back to
//   toolhost's npm cache; extensionless relative imports ("./lib") find lib.ts/lib.js.
// - "bun" resolves to a stub whose every use fails with a clear message (toolhost uses
//   Node.js only when Bun could not be had).
import * as nodeModule from "node:module";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

let cacheParent = null; // a file URL inside the cache dir, used as a parent for lookups

export function initialize(data) {
  if (data && data.cacheDir) {
    cacheParent = pathToFileURL(path.join(data.cacheDir, "package.json")).href;
  }
}

const RESOLVE_PREFIX = "toolhost-resolve:";
const BUN_EXPORTS = [
  "$", "file", "write", "spawn", "spawnSync", "serve", "env", "sleep", "sleepSync", "which",
  "Glob", "password", "hash", "argv", "main", "version", "stdin", "stdout", "stderr",
  "readableStreamToText", "fileURLToPath", "pathToFileURL", "gc", "inspect", "nanoseconds",
  "resolveSync", "build", "Transpiler", "color", "semver", "s3", "S3Client", "sql", "SQL",
  "redis", "YAML", "TOML", "deepEquals", "escapeHTML",
];
const BUN_STUB =
  "data:text/javascript," +
  encodeURIComponent(`
const fail = (name) => {
  const error = new Error(
    "This tool uses Bun." + name + ", a Bun-only API. toolhost runs OpenCode's JS/TS tools " +
    "on Bun, but Bun could not be had here, so this one ran on Node.js, where Bun's APIs do " +
    "not exist (toolhost doctor says why). Put bun on PATH, or rewrite the tool with " +
    "Node's APIs (e.g. child_process.execFile instead of Bun.$).");
  error.toolhostBun = true;
  throw error;
};
const stub = (name) => new Proxy(function () {}, {
  apply: () => fail(name),
  construct: () => fail(name),
  get: (_, key) => (key === "then" ? undefined : fail(name + "." + String(key))),
});
${BUN_EXPORTS.map((n) => `export const ${n} = stub(${JSON.stringify(n)});`).join("\n")}
export default stub("default");
`);

const NOT_FOUND = new Set(["ERR_MODULE_NOT_FOUND", "ERR_PACKAGE_PATH_NOT_EXPORTED"]);

function isBare(specifier) {
  return !/^(\.{0,2}\/|[a-zA-Z][a-zA-Z0-9+.-]*:)/.test(specifier);
}

export async function resolve(specifier, context, next) {
  if (specifier === "bun") return { url: BUN_STUB, shortCircuit: true };
  if (specifier.startsWith(RESOLVE_PREFIX)) {
    // The host asks "what would <spec> be for <parent>?" so it uses a tool's own zod.
    const [spec, parentURL] = JSON.parse(decodeURIComponent(specifier.slice(RESOLVE_PREFIX.length)));
    return resolve(spec, { ...context, parentURL }, next);
  }
  try {
    return await next(specifier, context);
  } catch (error) {
    if (!NOT_FOUND.has(error && error.code)) throw error;
    if (specifier.startsWith(".") && context.parentURL && context.parentURL.startsWith("file:")) {
      for (const suffix of [".ts", ".js", "/index.ts", "/index.js"]) {
        try {
          return await next(specifier + suffix, context);
        } catch {
          // try the next spelling
        }
      }
    }
    if (isBare(specifier) && cacheParent && context.parentURL !== cacheParent) {
      try {
        return await next(specifier, { ...context, parentURL: cacheParent });
      } catch {
        // report the original failure, which names the tool's own folder
      }
    }
    throw error;
  }
}

const ESM_SYNTAX = /^\s*(import\s*[\w{*"']|export\s)/m;

export async function load(url, context, next) {
  if (url.startsWith("file:")) {
    const file = fileURLToPath(url);
    if (/\.m?ts$/.test(file) && !file.endsWith(".d.ts") && !file.includes(`${path.sep}node_modules${path.sep}`)) {
      const source = await readFile(file, "utf8");
      return { format: "module", source: await transpile(source, file), shortCircuit: true };
    }
    const loaded = await next(url, context);
    if (loaded.format === "commonjs" && file.endsWith(".js") && !file.includes(`${path.sep}node_modules${path.sep}`)) {
      const source = loaded.source ? String(loaded.source) : await readFile(file, "utf8");
      if (ESM_SYNTAX.test(source)) return { format: "module", source, shortCircuit: true };
    }
    return loaded;
  }
  return next(url, context);
}

let esbuildPromise = null;

function findEsbuild(file) {
  for (const base of [file, cacheParent && fileURLToPath(cacheParent)]) {
    if (!base) continue;
    try {
      return nodeModule.createRequire(base)("esbuild");
    } catch {
      // not installed there
    }
  }
  return null;
}

async function transpile(source, file) {
  esbuildPromise ??= Promise.resolve(findEsbuild(file));
  const esbuild = (await esbuildPromise) ?? findEsbuild(file);
  if (esbuild) {
    const major = process.versions.node.split(".")[0];
    const result = await esbuild.transform(source, {
      loader: "ts",
      format: "esm",
      target: `node${major}`,
      sourcefile: file,
      sourcemap: "inline",
    });
    return result.code;
  }
  if (typeof nodeModule.stripTypeScriptTypes === "function") {
    return nodeModule.stripTypeScriptTypes(source, { mode: "transform", sourceMap: true, sourceUrl: file });
  }
  throw new Error(
    `TypeScript needs esbuild, which is neither in the tool folder's node_modules nor in ` +
      `toolhost's npm cache, and Node.js ${process.version} cannot strip types itself ` +
      `(Node.js 22.13 or newer can).`,
  );
}
