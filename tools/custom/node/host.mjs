// toolhost's JS/TS host: loads OpenCode-style custom tools and runs them on request, on Bun
// (as OpenCode does) or on Node.js (with hooks.mjs for TypeScript and module resolution).
//
// JSON lines: toolhost sends {type: "load" | "call" | "abort" | "askReply"} on stdin; this
// host answers {type: "hello" | "loaded" | "result" | "ask" | "metadata"} on the pipe
// TOOLHOST_PROTOCOL_FD names. stdout and stderr are only logged, so a tool's console.log
// or a Bun.$ that prints cannot break the protocol.
import { createInterface } from "node:readline";
import { writeSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import * as nodeModule from "node:module";

const onBun = typeof Bun !== "undefined";
const protocolFd = Number(process.env.TOOLHOST_PROTOCOL_FD || 1);
const cacheDir = process.env.TOOLHOST_NODE_CACHE || "";

function writeProtocol(text) {
  const data = Buffer.from(text, "utf8");
  let done = 0;
  while (done < data.length) done += writeSync(protocolFd, data, done, data.length - done);
}

if (onBun) {
  registerBunFallback();
} else {
  nodeModule.register("./hooks.mjs", import.meta.url, { data: { cacheDir } });
}

// Bun resolves a tool's imports from its folder's node_modules, as OpenCode's install
// leaves them. A package found there is left alone; one that is not (@opencode-ai/plugin
// and zod in a project OpenCode never ran in) is taken from toolhost's cache: its
// specifier is rewritten to the cached file before Bun sees the source. Bun's NODE_PATH
// would be simpler, but it ignores package.json "exports" (which @opencode-ai/plugin uses).
function registerBunFallback() {
  if (!cacheDir) return;
  const found = (specifier, folder) => {
    try {
      return Bun.resolveSync(specifier, folder);
    } catch {
      return null;
    }
  };
  const bare = (specifier) =>
    /^[@a-zA-Z]/.test(specifier) && !specifier.startsWith("node:") && specifier !== "bun" && !specifier.startsWith("bun:");
  const escape = (text) => text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
  Bun.plugin({
    name: "toolhost-cache-fallback",
    setup(build) {
      build.onLoad({ filter: /^(?!.*[\\/]node_modules[\\/]).*\.m?[jt]sx?$/ }, async (args) => {
        let source = await Bun.file(args.path).text();
        const loader = /\.m?tsx?$/.test(args.path) ? (args.path.endsWith("x") ? "tsx" : "ts") : args.path.endsWith("x") ? "jsx" : "js";
        const folder = path.dirname(args.path);
        for (const { path: specifier } of new Bun.Transpiler({ loader }).scanImports(source)) {
          if (!bare(specifier) || found(specifier, folder)) continue;
          const cached = found(specifier, cacheDir);
          if (!cached) continue; // Bun's own error then names the tool's folder
          source = source.replace(new RegExp(`(["'])${escape(specifier)}\\1`, "g"), JSON.stringify(cached));
        }
        return { contents: source, loader };
      });
    },
  });
}

function send(message) {
  writeProtocol(JSON.stringify(message) + "\n");
}

const modules = new Map(); // file -> Promise<{tools: Map<export, Prepared>, problems}>
const calls = new Map(); // call id -> {controller, asks: Map<ask id, {resolve, reject}>}
let nextAsk = 1;

// -- loading -----------------------------------------------------------------------

function isZod(value) {
  return Boolean(value) && typeof value === "object" && ("_zod" in value || ("_def" in value && typeof value.safeParse === "function"));
}

function zodMajor(value) {
  return "_zod" in value ? 4 : 3;
}

async function importFor(specifiers, fileURL) {
  let lastError;
  for (const specifier of specifiers) {
    try {
      if (onBun) {
        // What the tool file itself would import, else toolhost's cache.
        const bases = [path.dirname(fileURLToPath(fileURL)), cacheDir].filter(Boolean);
        for (const base of bases) {
          try {
            return await import(Bun.resolveSync(specifier, base));
          } catch (error) {
            lastError = error;
          }
        }
        continue;
      }
      return await import("toolhost-resolve:" + encodeURIComponent(JSON.stringify([specifier, fileURL])));
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}

async function zodFor(major, fileURL) {
  const mod = await importFor(major === 4 ? ["zod/v4", "zod"] : ["zod/v3", "zod"], fileURL);
  const z = mod.z ?? mod.default ?? mod;
  if (typeof z.object !== "function") throw new Error("the zod package found has no z.object");
  return z;
}

// Zod v4 keeps .describe() text in a registry per zod copy; the plugin's tool.schema and
// the tool folder's zod may be different copies, so copy each schema's own metadata.
function copyMeta(ctx) {
  const meta = typeof ctx.zodSchema.meta === "function" ? ctx.zodSchema.meta() : undefined;
  if (meta) for (const [key, value] of Object.entries(meta)) if (!(key in ctx.jsonSchema)) ctx.jsonSchema[key] = value;
}

// A tool definition's own mistake: its message is the whole story.
class DefinitionError extends Error {}

async function prepare(name, def, fileURL) {
  if (typeof def.description !== "string" || !def.description.trim()) {
    throw new DefinitionError("description is missing: it must be a non-empty string");
  }
  if (typeof def.execute !== "function") throw new DefinitionError("execute is missing: it must be a function");
  let shape = def.args !== undefined ? def.args : def.parameters;
  if (shape === undefined || shape === null) shape = {};
  let object;
  let major;
  if (isZod(shape)) {
    object = shape;
    major = zodMajor(shape);
  } else if (typeof shape === "object" && !Array.isArray(shape)) {
    const entries = Object.entries(shape);
    for (const [key, value] of entries) {
      if (!isZod(value)) throw new DefinitionError(`args.${key} is not a zod schema (use tool.schema.string() and friends)`);
    }
    if (entries.length === 0) {
      return { def, name, major: 0, schema: { type: "object", properties: {}, required: [] }, parse: () => ({ success: true, data: {} }) };
    }
    major = zodMajor(entries[0][1]);
    if (entries.some(([, value]) => zodMajor(value) !== major)) throw new DefinitionError("args mixes zod 3 and zod 4 schemas");
    object = (await zodFor(major, fileURL)).object(shape);
  } else {
    throw new DefinitionError(`args must be an object of zod schemas, got ${typeof shape}`);
  }
  let schema;
  if (major === 4) {
    const z = await zodFor(4, fileURL);
    schema = z.toJSONSchema(object, { io: "input", unrepresentable: "any", override: copyMeta });
  } else {
    const mod = await importFor(["zod-to-json-schema"], fileURL);
    const convert = mod.zodToJsonSchema ?? mod.default;
    schema = convert(object, { target: "jsonSchema7", $refStrategy: "none", effectStrategy: "input" });
  }
  if (!schema || schema.type !== "object") throw new DefinitionError("the arguments schema must be an object (z.object or a shape of fields)");
  return { def, name, major, schema, parse: (args) => object.safeParse(args) };
}

function looksLikeTool(value) {
  if (!value || (typeof value !== "object" && typeof value !== "function")) return false;
  const keys = ["description", "execute", "args", "parameters"].filter((key) => value[key] !== undefined);
  return typeof value.execute === "function" || keys.length >= 2;
}

async function loadFile(file) {
  if (!modules.has(file)) modules.set(file, loadFresh(file));
  return modules.get(file);
}

async function loadFresh(file) {
  const fileURL = pathToFileURL(file).href;
  const namespace = await import(fileURL);
  const tools = new Map();
  const problems = [];
  for (const [name, value] of Object.entries(namespace)) {
    if (!looksLikeTool(value)) continue;
    try {
      tools.set(name, await prepare(name, value, fileURL));
    } catch (error) {
      problems.push({ export: name, reason: describe(error) });
    }
  }
  return { tools, problems };
}

async function handleLoad(message) {
  try {
    const { tools, problems } = await loadFile(message.file);
    send({
      type: "loaded",
      id: message.id,
      tools: [...tools.values()].map((t) => ({ export: t.name, description: t.def.description.trim(), parameters: t.schema })),
      problems,
    });
  } catch (error) {
    modules.delete(message.file);
    send({ type: "loaded", id: message.id, error: describe(error) });
  }
}

// -- calling -----------------------------------------------------------------------

function formatIssues(toolId, issues) {
  const lines = [`The ${toolId} tool was called with invalid arguments:`];
  for (const issue of issues) {
    const where = issue.path && issue.path.length ? issue.path.join(".") : "(arguments)";
    lines.push(`- ${where}: ${issue.message}`);
  }
  lines.push("Please rewrite the input so it satisfies the expected schema.");
  return lines.join("\n");
}

function toolError(message, kind) {
  const error = new Error(message);
  error.toolhostKind = kind;
  return error;
}

async function handleCall(message) {
  const controller = new AbortController();
  const state = { controller, asks: new Map() };
  calls.set(message.id, state);
  try {
    const { tools } = await loadFile(message.file);
    const prepared = tools.get(message.export);
    if (!prepared) throw toolError(`The ${message.tool} tool is no longer exported by ${message.file}.`, "failed");
    const parsed = prepared.parse(message.args ?? {});
    if (!parsed.success) throw toolError(formatIssues(message.tool, parsed.error.issues), "invalid_arguments");
    const ctx = message.ctx;
    const context = {
      ...ctx,
      abort: controller.signal,
      extra: {},
      metadata(input) {
        send({ type: "metadata", call: message.id, input: input ?? {} });
      },
      ask(input) {
        const id = nextAsk++;
        return new Promise((resolve, reject) => {
          state.asks.set(id, { resolve, reject });
          send({ type: "ask", call: message.id, id, input: input ?? {} });
        });
      },
    };
    const value = await prepared.def.execute(parsed.data, context);
    let line;
    try {
      line = JSON.stringify({ type: "result", id: message.id, value: value === undefined ? null : value, undefined: value === undefined });
    } catch (error) {
      throw toolError(`The ${message.tool} tool returned a value that cannot be sent as JSON (${describe(error)}).`, "internal");
    }
    writeProtocol(line + "\n");
  } catch (error) {
    send({ type: "result", id: message.id, error: errorInfo(error, controller.signal.aborted) });
  } finally {
    calls.delete(message.id);
    for (const pending of state.asks.values()) pending.reject(toolError("The call was cancelled.", "failed"));
  }
}

function errorInfo(error, aborted) {
  if (error && error.toolhostBun) return { kind: "failed", message: error.message, bun: true };
  if (error instanceof ReferenceError && /\bBun\b/.test(error.message)) {
    return {
      kind: "failed",
      bun: true,
      message:
        "This tool uses Bun (the global `Bun`, e.g. Bun.$ or Bun.file), a Bun-only API. toolhost " +
        "runs OpenCode's JS/TS tools on Bun, but Bun could not be had here, so this one ran on " +
        "Node.js, where Bun's APIs do not exist (`toolhost doctor` says why). Put bun on PATH, " +
        "or rewrite the tool with Node's APIs (e.g. child_process.execFile instead of Bun.$).",
    };
  }
  return {
    kind: error && error.toolhostKind,
    name: (error && error.name) || typeof error,
    message: error && error.message !== undefined ? String(error.message) : String(error),
    stack: error && error.stack ? String(error.stack) : undefined,
    aborted,
  };
}

function describe(error) {
  const info = errorInfo(error, false);
  if (info.bun || !info.name || error instanceof DefinitionError) return info.message;
  return `${info.name}: ${info.message}`;
}

function handleAskReply(message) {
  for (const state of calls.values()) {
    const pending = state.asks.get(message.id);
    if (!pending) continue;
    state.asks.delete(message.id);
    if (message.error) pending.reject(toolError(message.error.message, message.error.kind));
    else pending.resolve();
  }
}

// -- main loop ---------------------------------------------------------------------

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on("line", (line) => {
  if (!line.trim()) return;
  let message;
  try {
    message = JSON.parse(line);
  } catch {
    process.stderr.write(`toolhost node host: ignoring a line that is not JSON: ${line.slice(0, 200)}\n`);
    return;
  }
  if (message.type === "load") handleLoad(message);
  else if (message.type === "call") handleCall(message);
  else if (message.type === "abort") calls.get(message.id)?.controller.abort();
  else if (message.type === "askReply") handleAskReply(message);
});
lines.on("close", () => process.exit(0));
process.on("unhandledRejection", (error) => {
  process.stderr.write(`toolhost node host: unhandled rejection in a tool: ${describe(error)}\n`);
});

send({
  type: "hello",
  runtime: onBun ? "bun" : "node",
  version: onBun ? Bun.version : process.version,
  stripTypes: onBun || typeof nodeModule.stripTypeScriptTypes === "function",
});
