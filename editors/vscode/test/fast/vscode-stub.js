// A small stand-in for the `vscode` module, enough for vscode-languageclient/node
// and the extension to run under plain Node against the real sidecar.
//
// Documents live in memory with versions, dirty state, incremental change events
// and save-to-disk; notifications, input boxes and quick picks are answered by
// functions a test sets (`stub.answers`); everything the extension shows or runs
// is recorded in `stub.recorded`. A name that is not implemented throws, naming
// itself, instead of quietly returning undefined.
'use strict';

const fs = require('fs');
const path = require('path');

// ---------------------------------------------------------------- basics

class Disposable {
  constructor(fn) {
    this._fn = fn;
  }
  static from(...items) {
    return new Disposable(() => items.forEach((d) => d && d.dispose && d.dispose()));
  }
  dispose() {
    if (this._fn) {
      this._fn();
      this._fn = undefined;
    }
  }
}

class EventEmitter {
  constructor() {
    this._listeners = new Set();
    this.event = (listener, thisArg, disposables) => {
      const bound = thisArg ? listener.bind(thisArg) : listener;
      this._listeners.add(bound);
      const d = new Disposable(() => this._listeners.delete(bound));
      if (Array.isArray(disposables)) disposables.push(d);
      return d;
    };
  }
  fire(value) {
    for (const listener of [...this._listeners]) {
      listener(value);
    }
  }
  dispose() {
    this._listeners.clear();
  }
}

class CancellationError extends Error {
  constructor() {
    super('Canceled');
    this.name = 'Canceled';
  }
}

class CancellationTokenSource {
  constructor() {
    const emitter = new EventEmitter();
    this._emitter = emitter;
    this.token = {
      isCancellationRequested: false,
      onCancellationRequested: emitter.event,
    };
  }
  cancel() {
    if (!this.token.isCancellationRequested) {
      this.token.isCancellationRequested = true;
      this._emitter.fire(undefined);
    }
  }
  dispose() {
    this._emitter.dispose();
  }
}

// ---------------------------------------------------------------- Uri

const encodePath = (p) =>
  p
    .split('/')
    .map((seg) => encodeURIComponent(seg))
    .join('/');

class Uri {
  constructor(scheme, authority, p, query, fragment) {
    this.scheme = scheme;
    this.authority = authority || '';
    this.path = p || '';
    this.query = query || '';
    this.fragment = fragment || '';
  }
  static file(p) {
    return new Uri('file', '', path.resolve(p).split(path.sep).join('/'), '', '');
  }
  static parse(value) {
    const match = /^([a-zA-Z][\w+.-]*):(?:\/\/([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$/.exec(value);
    if (!match) throw new Error(`vscode stub: cannot parse URI ${value}`);
    return new Uri(
      match[1],
      match[2],
      decodeURIComponent(match[3]),
      match[4] && decodeURIComponent(match[4]),
      match[5],
    );
  }
  static from(c) {
    return new Uri(c.scheme, c.authority, c.path, c.query, c.fragment);
  }
  static joinPath(base, ...segments) {
    return base.with({ path: path.posix.join(base.path, ...segments) });
  }
  with(change) {
    return new Uri(
      change.scheme ?? this.scheme,
      change.authority ?? this.authority,
      change.path ?? this.path,
      change.query ?? this.query,
      change.fragment ?? this.fragment,
    );
  }
  get fsPath() {
    return this.path;
  }
  toString() {
    const authority = this.scheme === 'file' || this.authority ? `//${this.authority}` : '';
    return (
      `${this.scheme}:${authority}${encodePath(this.path)}` +
      (this.query ? `?${encodeURIComponent(this.query)}` : '') +
      (this.fragment ? `#${this.fragment}` : '')
    );
  }
  toJSON() {
    return { scheme: this.scheme, path: this.path, query: this.query, $mid: 1 };
  }
}

// ---------------------------------------------------------------- geometry

class Position {
  constructor(line, character) {
    this.line = line;
    this.character = character;
  }
  isBefore(o) {
    return this.line < o.line || (this.line === o.line && this.character < o.character);
  }
  isEqual(o) {
    return this.line === o.line && this.character === o.character;
  }
  compareTo(o) {
    return this.isEqual(o) ? 0 : this.isBefore(o) ? -1 : 1;
  }
  translate(lineDelta = 0, characterDelta = 0) {
    return new Position(this.line + lineDelta, this.character + characterDelta);
  }
}

class Range {
  constructor(a, b, c, d) {
    if (typeof a === 'number') {
      this.start = new Position(a, b);
      this.end = new Position(c, d);
    } else {
      this.start = a;
      this.end = b;
    }
  }
  get isEmpty() {
    return this.start.isEqual(this.end);
  }
  contains(p) {
    const pos = p instanceof Range ? p.start : p;
    return !pos.isBefore(this.start) && !this.end.isBefore(pos);
  }
}

class Selection extends Range {
  get anchor() {
    return this.start;
  }
  get active() {
    return this.end;
  }
}

class Location {
  constructor(uri, rangeOrPosition) {
    this.uri = uri;
    this.range =
      rangeOrPosition instanceof Position ? new Range(rangeOrPosition, rangeOrPosition) : rangeOrPosition;
  }
}

class TextEdit {
  constructor(range, newText) {
    this.range = range;
    this.newText = newText;
  }
  static replace(range, text) {
    return new TextEdit(range, text);
  }
  static insert(position, text) {
    return new TextEdit(new Range(position, position), text);
  }
  static delete(range) {
    return new TextEdit(range, '');
  }
}

class WorkspaceEdit {
  constructor() {
    this._ops = [];
  }
  replace(uri, range, newText) {
    this._ops.push({ kind: 'edit', uri, edit: new TextEdit(range, newText) });
  }
  insert(uri, position, newText) {
    this.replace(uri, new Range(position, position), newText);
  }
  delete(uri, range) {
    this.replace(uri, range, '');
  }
  set(uri, edits) {
    for (const edit of edits || []) this._ops.push({ kind: 'edit', uri, edit });
  }
  createFile(uri, options) {
    this._ops.push({ kind: 'create', uri, options: options || {} });
  }
  deleteFile(uri, options) {
    this._ops.push({ kind: 'delete', uri, options: options || {} });
  }
  renameFile(oldUri, newUri, options) {
    this._ops.push({ kind: 'rename', uri: oldUri, newUri, options: options || {} });
  }
  has(uri) {
    return this._ops.some((op) => op.uri.toString() === uri.toString());
  }
  get size() {
    return new Set(this._ops.map((op) => op.uri.toString())).size;
  }
  entries() {
    const map = new Map();
    for (const op of this._ops.filter((o) => o.kind === 'edit')) {
      const key = op.uri.toString();
      if (!map.has(key)) map.set(key, [op.uri, []]);
      map.get(key)[1].push(op.edit);
    }
    return [...map.values()];
  }
}

// ---------------------------------------------------------------- language types

const DiagnosticSeverity = { Error: 0, Warning: 1, Information: 2, Hint: 3 };
const DiagnosticTag = { Unnecessary: 1, Deprecated: 2 };
const SymbolTag = { Deprecated: 1 };
const SymbolKind = Object.fromEntries(
  [
    'File',
    'Module',
    'Namespace',
    'Package',
    'Class',
    'Method',
    'Property',
    'Field',
    'Constructor',
    'Enum',
    'Interface',
    'Function',
    'Variable',
    'Constant',
    'String',
    'Number',
    'Boolean',
    'Array',
    'Object',
    'Key',
    'Null',
    'EnumMember',
    'Struct',
    'Event',
    'Operator',
    'TypeParameter',
  ].map((name, i) => [name, i]),
);

class Diagnostic {
  constructor(range, message, severity = DiagnosticSeverity.Error) {
    this.range = range;
    this.message = message;
    this.severity = severity;
  }
}
class DiagnosticRelatedInformation {
  constructor(location, message) {
    this.location = location;
    this.message = message;
  }
}
class MarkdownString {
  constructor(value = '', supportThemeIcons = false) {
    this.value = value;
    this.supportThemeIcons = supportThemeIcons;
  }
  appendText(text) {
    this.value += text;
    return this;
  }
  appendMarkdown(text) {
    this.value += text;
    return this;
  }
  appendCodeblock(code, language = '') {
    this.value += `\n\`\`\`${language}\n${code}\n\`\`\`\n`;
    return this;
  }
}
class Hover {
  constructor(contents, range) {
    this.contents = Array.isArray(contents) ? contents : [contents];
    this.range = range;
  }
}
class SymbolInformation {
  constructor(name, kind, containerName, location) {
    this.name = name;
    this.kind = kind;
    this.containerName = containerName;
    this.location = location;
  }
}
class DocumentSymbol {
  constructor(name, detail, kind, range, selectionRange) {
    Object.assign(this, { name, detail, kind, range, selectionRange, children: [] });
  }
}
class CallHierarchyItem {
  constructor(kind, name, detail, uri, range, selectionRange) {
    Object.assign(this, { kind, name, detail, uri, range, selectionRange });
  }
}
class CallHierarchyIncomingCall {
  constructor(from, fromRanges) {
    this.from = from;
    this.fromRanges = fromRanges;
  }
}
class CallHierarchyOutgoingCall {
  constructor(to, fromRanges) {
    this.to = to;
    this.fromRanges = fromRanges;
  }
}
class TypeHierarchyItem extends CallHierarchyItem {}
class CodeLens {
  constructor(range, command) {
    this.range = range;
    this.command = command;
  }
}
class CompletionItem {
  constructor(label, kind) {
    this.label = label;
    this.kind = kind;
  }
}
class DocumentLink {
  constructor(range, target) {
    this.range = range;
    this.target = target;
  }
}
class InlayHint {
  constructor(position, label, kind) {
    Object.assign(this, { position, label, kind });
  }
}
class CodeAction {
  constructor(title, kind) {
    this.title = title;
    this.kind = kind;
  }
}
class CodeActionKind {
  constructor(value) {
    this.value = value;
  }
  append(part) {
    return new CodeActionKind(this.value ? `${this.value}.${part}` : part);
  }
  contains(other) {
    return this.value === other.value || other.value.startsWith(`${this.value}.`);
  }
  intersects(other) {
    return this.contains(other) || other.contains(this);
  }
}
for (const [name, value] of Object.entries({
  Empty: '',
  QuickFix: 'quickfix',
  Refactor: 'refactor',
  RefactorExtract: 'refactor.extract',
  RefactorInline: 'refactor.inline',
  RefactorMove: 'refactor.move',
  RefactorRewrite: 'refactor.rewrite',
  Source: 'source',
  SourceOrganizeImports: 'source.organizeImports',
  SourceFixAll: 'source.fixAll',
  Notebook: 'notebook',
})) {
  CodeActionKind[name] = new CodeActionKind(value);
}

class RelativePattern {
  constructor(base, pattern) {
    this.baseUri = typeof base === 'string' ? Uri.file(base) : base.uri || base;
    this.base = this.baseUri.fsPath;
    this.pattern = pattern;
  }
}
class TabInputText {
  constructor(uri) {
    this.uri = uri;
  }
}
class TabInputTextDiff {
  constructor(original, modified) {
    this.original = original;
    this.modified = modified;
  }
}
class TabInputCustom {
  constructor(uri, viewType) {
    this.uri = uri;
    this.viewType = viewType;
  }
}
class TabInputNotebook {}
class ThemeIcon {
  constructor(id, color) {
    this.id = id;
    this.color = color;
  }
}
class ThemeColor {
  constructor(id) {
    this.id = id;
  }
}
class TreeItem {
  constructor(labelOrUri, collapsibleState = 0) {
    if (typeof labelOrUri === 'string') this.label = labelOrUri;
    else this.resourceUri = labelOrUri;
    this.collapsibleState = collapsibleState;
  }
}
const TreeItemCollapsibleState = { None: 0, Collapsed: 1, Expanded: 2 };
const StatusBarAlignment = { Left: 1, Right: 2 };
const FileChangeType = { Changed: 1, Created: 2, Deleted: 3 };
class FileSystemError extends Error {
  constructor(message, code) {
    super(String(message));
    this.code = code;
  }
  static FileNotFound(uri) {
    return new FileSystemError(`not found: ${uri}`, 'FileNotFound');
  }
  static NoPermissions(what) {
    return new FileSystemError(`no permissions: ${what}`, 'NoPermissions');
  }
  static FileExists(uri) {
    return new FileSystemError(`exists: ${uri}`, 'FileExists');
  }
}
class TabInputNotebookDiff {}
class LanguageModelTextPart {
  constructor(value) {
    this.value = value;
  }
}
class LanguageModelToolResult {
  constructor(content) {
    this.content = content;
  }
}
// The chat side of vscode.lm (sub-agents): messages, tool calls and their results.
class LanguageModelToolCallPart {
  constructor(callId, name, input) {
    this.callId = callId;
    this.name = name;
    this.input = input;
  }
}
class LanguageModelToolResultPart {
  constructor(callId, content) {
    this.callId = callId;
    this.content = content;
  }
}
const LanguageModelChatMessageRole = { User: 1, Assistant: 2 };
class LanguageModelChatMessage {
  static User(content, name) {
    return new LanguageModelChatMessage(LanguageModelChatMessageRole.User, content, name);
  }
  static Assistant(content, name) {
    return new LanguageModelChatMessage(LanguageModelChatMessageRole.Assistant, content, name);
  }
  constructor(role, content, name) {
    this.role = role;
    this.content = typeof content === 'string' ? [new LanguageModelTextPart(content)] : content;
    this.name = name;
  }
}

// ---------------------------------------------------------------- documents

const recorded = {
  messages: [], // {severity, message, options, items, choice}
  inputBoxes: [],
  quickPicks: [],
  quickPickWidgets: [],
  progress: [], // {options, reports: [], done}
  commands: [], // {id, args}
  applyEdits: [],
  shown: [], // showTextDocument calls
  opened: [], // openTextDocument calls (uri strings)
  saves: [], // uri strings
  saveConflicts: [], // uri strings of saves VS Code would refuse ("the content is newer")
  log: [],
  decorations: [], // {uri, type, options}
  contexts: [], // setContext calls: [key, value]
};

const answers = {
  /** (message, items, options, severity) => the item to click, or undefined (dismiss). */
  message: () => undefined,
  inputBox: () => undefined,
  quickPick: () => undefined,
};

const emitters = {
  open: new EventEmitter(),
  close: new EventEmitter(),
  change: new EventEmitter(),
  willSave: new EventEmitter(),
  save: new EventEmitter(),
  config: new EventEmitter(),
  folders: new EventEmitter(),
  trust: new EventEmitter(),
  diagnostics: new EventEmitter(),
  activeEditor: new EventEmitter(),
  visibleEditors: new EventEmitter(),
  tabs: new EventEmitter(),
};

const LANGUAGES = {
  '.py': 'python',
  '.json': 'json',
  '.ts': 'typescript',
  '.js': 'javascript',
  '.md': 'markdown',
};

function lineStarts(text) {
  const starts = [0];
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '\r' && text[i + 1] === '\n') i++;
    if (text[i] === '\n' || text[i] === '\r') starts.push(i + 1);
  }
  return starts;
}

class TextDocument {
  constructor(uri, text, languageId) {
    this.uri = uri;
    this._text = text;
    this.version = 1;
    this.isDirty = false;
    this.isClosed = false;
    this.languageId = languageId || LANGUAGES[path.extname(uri.path)] || 'plaintext';
    this.undoStack = [];
  }
  get fileName() {
    return this.uri.fsPath;
  }
  get isUntitled() {
    return this.uri.scheme === 'untitled';
  }
  get eol() {
    return this._text.includes('\r\n') ? 2 : 1;
  }
  get lineCount() {
    return lineStarts(this._text).length;
  }
  getText(range) {
    if (!range) return this._text;
    return this._text.slice(this.offsetAt(range.start), this.offsetAt(range.end));
  }
  offsetAt(position) {
    const starts = lineStarts(this._text);
    if (position.line >= starts.length) return this._text.length;
    const end = position.line + 1 < starts.length ? starts[position.line + 1] : this._text.length;
    return Math.min(starts[position.line] + position.character, end);
  }
  positionAt(offset) {
    const starts = lineStarts(this._text);
    let line = 0;
    while (line + 1 < starts.length && starts[line + 1] <= offset) line++;
    return new Position(line, offset - starts[line]);
  }
  lineAt(lineOrPosition) {
    const line = typeof lineOrPosition === 'number' ? lineOrPosition : lineOrPosition.line;
    const text = this._text.split(/\r?\n/)[line] ?? '';
    return {
      lineNumber: line,
      text,
      range: new Range(line, 0, line, text.length),
      isEmptyOrWhitespace: !text.trim(),
    };
  }
  getWordRangeAtPosition(position) {
    const text = this.lineAt(position.line).text;
    let s = position.character;
    let e = position.character;
    while (s > 0 && /\w/.test(text[s - 1])) s--;
    while (e < text.length && /\w/.test(text[e])) e++;
    return s === e ? undefined : new Range(position.line, s, position.line, e);
  }
  async save() {
    if (fileSystems.has(this.uri.scheme)) {
      fileSystems
        .get(this.uri.scheme)
        .writeFile(this.uri, Buffer.from(this._text, 'utf8'), { create: false, overwrite: true });
      this.isDirty = false;
      return true;
    }
    if (this.uri.scheme !== 'file') return false;
    const waits = [];
    emitters.willSave.fire({ document: this, reason: 1, waitUntil: (promise) => waits.push(promise) });
    // As VS Code does, a participant gets a bounded time (a silent one must not hang the save).
    await Promise.all(
      waits.map((w) => Promise.race([w, new Promise((resolve) => setTimeout(resolve, 1500))])),
    );
    // VS Code's dirty-write check: the disk moved on (mtime later, size different) since
    // the buffer was loaded or saved, so the save fails with "the content is newer".
    const now = fs.statSync(this.uri.fsPath);
    if (this._stat && now.mtimeMs > this._stat.mtimeMs && now.size !== this._stat.size) {
      recorded.saveConflicts.push(this.uri.toString());
      return false;
    }
    fs.writeFileSync(this.uri.fsPath, this._text);
    this._stat = fs.statSync(this.uri.fsPath);
    this.isDirty = false;
    recorded.saves.push(this.uri.toString());
    emitters.save.fire(this);
    return true;
  }
  /** Applies edits as VS Code does: one version bump, changes reported last-first. */
  _apply(edits, { undoable = true } = {}) {
    if (!edits.length) return;
    const before = this._text;
    const sorted = edits
      .map((edit, i) => ({
        edit,
        i,
        start: this.offsetAt(edit.range.start),
        end: this.offsetAt(edit.range.end),
      }))
      .sort((a, b) => b.start - a.start || b.i - a.i);
    const contentChanges = [];
    for (const { edit, start, end } of sorted) {
      const range = new Range(this.positionAt(start), this.positionAt(end));
      this._text = this._text.slice(0, start) + edit.newText + this._text.slice(end);
      contentChanges.push({ range, rangeOffset: start, rangeLength: end - start, text: edit.newText });
    }
    if (undoable) this.undoStack.push(before);
    this.version++;
    this.isDirty = !this._isOnDisk();
    emitters.change.fire({ document: this, contentChanges, reason: undefined });
  }
  _isOnDisk() {
    if (fileSystems.has(this.uri.scheme)) {
      try {
        return (
          Buffer.from(fileSystems.get(this.uri.scheme).readFile(this.uri)).toString('utf8') === this._text
        );
      } catch {
        return false;
      }
    }
    try {
      return fs.readFileSync(this.uri.fsPath, 'utf8') === this._text;
    } catch {
      return false;
    }
  }
}

const documents = new Map(); // uri string -> TextDocument
const contentProviders = new Map(); // scheme -> provider
const fileSystems = new Map(); // scheme -> FileSystemProvider

function toUri(value) {
  if (value instanceof Uri) return value;
  if (typeof value === 'string') return Uri.file(value);
  return Uri.from(value);
}

function findDocument(uri) {
  return documents.get(toUri(uri).toString());
}

async function openTextDocument(arg) {
  if (arg && typeof arg === 'object' && !(arg instanceof Uri) && !('scheme' in arg)) {
    const uri = Uri.from({ scheme: 'untitled', path: `Untitled-${documents.size + 1}` });
    const doc = new TextDocument(uri, arg.content || '', arg.language);
    documents.set(uri.toString(), doc);
    emitters.open.fire(doc);
    return doc;
  }
  const uri = toUri(arg);
  recorded.opened.push(uri.toString());
  const open = documents.get(uri.toString());
  if (open) return open;
  let text;
  if (uri.scheme === 'file') {
    try {
      text = fs.readFileSync(uri.fsPath, 'utf8');
    } catch (error) {
      throw new Error(`cannot open ${uri.toString()}: ${error.code || error.message}`);
    }
  } else if (fileSystems.has(uri.scheme)) {
    text = Buffer.from(await fileSystems.get(uri.scheme).readFile(uri)).toString('utf8');
  } else if (contentProviders.has(uri.scheme)) {
    text = await contentProviders
      .get(uri.scheme)
      .provideTextDocumentContent(uri, new CancellationTokenSource().token);
  } else {
    throw new Error(`vscode stub: no provider for ${uri.toString()}`);
  }
  const doc = new TextDocument(uri, text ?? '');
  if (uri.scheme === 'file') doc._stat = fs.statSync(uri.fsPath);
  documents.set(uri.toString(), doc);
  emitters.open.fire(doc);
  return doc;
}

function closeTextDocument(uri) {
  const doc = findDocument(uri);
  if (!doc) return;
  documents.delete(doc.uri.toString());
  doc.isClosed = true;
  emitters.close.fire(doc);
}

async function applyEdit(edit) {
  recorded.applyEdits.push(edit);
  const byDoc = new Map();
  for (const op of edit._ops) {
    if (op.kind === 'create') {
      if (!fs.existsSync(op.uri.fsPath)) {
        fs.mkdirSync(path.dirname(op.uri.fsPath), { recursive: true });
        fs.writeFileSync(op.uri.fsPath, '');
      } else if (!op.options.ignoreIfExists && !op.options.overwrite) {
        return false;
      }
    } else if (op.kind === 'delete') {
      closeTextDocument(op.uri);
      fs.rmSync(op.uri.fsPath, { force: true });
    } else if (op.kind === 'rename') {
      closeTextDocument(op.uri);
      fs.renameSync(op.uri.fsPath, op.newUri.fsPath);
    } else {
      const doc = await openTextDocument(op.uri);
      if (!byDoc.has(doc)) byDoc.set(doc, []);
      byDoc.get(doc).push(op.edit);
    }
  }
  for (const [doc, edits] of byDoc) doc._apply(edits);
  return true;
}

// ---------------------------------------------------------------- configuration

const packageJson = require('../../package.json');
const settings = {}; // 'toolhost.x' -> user (global) value
const workspaceSettings = {};

function configDefault(key) {
  return packageJson.contributes.configuration.properties[key]?.default;
}

function getConfiguration(section) {
  const full = (key) => (section ? `${section}.${key}` : key);
  return {
    get(key, fallback) {
      const k = full(key);
      if (workspace.isTrusted && k in workspaceSettings) return workspaceSettings[k];
      if (k in settings) return settings[k];
      const def = configDefault(k);
      return def !== undefined ? def : fallback;
    },
    has(key) {
      const k = full(key);
      return k in settings || k in workspaceSettings || configDefault(k) !== undefined;
    },
    inspect(key) {
      const k = full(key);
      return {
        key: k,
        defaultValue: configDefault(k),
        globalValue: settings[k],
        workspaceValue: workspaceSettings[k],
      };
    },
    async update(key, value) {
      setSetting(full(key), value);
    },
  };
}

function setSetting(key, value, target = 'global') {
  const store = target === 'workspace' ? workspaceSettings : settings;
  if (value === undefined) delete store[key];
  else store[key] = value;
  emitters.config.fire({ affectsConfiguration: (s) => key === s || key.startsWith(`${s}.`) });
}

// ---------------------------------------------------------------- namespaces

const outputChannels = [];
function createOutputChannel(name, options) {
  const lines = [];
  const write =
    (level) =>
    (message, ...args) => {
      const text = `[${level}] ${message instanceof Error ? message.stack : message}${args.length ? ` ${args.map(String).join(' ')}` : ''}`;
      lines.push(text);
      recorded.log.push(message instanceof Error ? message.stack : String(message));
      if (process.env.TOOLHOST_STUB_LOG) process.stderr.write(`${text}\n`);
    };
  const channel = {
    name,
    lines,
    logLevel: 2,
    onDidChangeLogLevel: new EventEmitter().event,
    append: write('append'),
    appendLine: write('line'),
    replace: write('replace'),
    clear: () => (lines.length = 0),
    show: () => recorded.commands.push({ id: 'stub.showLog', args: [name] }),
    hide: () => undefined,
    dispose: () => undefined,
    trace: write('trace'),
    debug: write('debug'),
    info: write('info'),
    warn: write('warn'),
    error: write('error'),
    isLog: !!(options && options.log),
  };
  outputChannels.push(channel);
  return channel;
}

function showMessage(severity) {
  return async (message, ...rest) => {
    let options;
    if (rest.length && rest[0] && typeof rest[0] === 'object' && !('title' in rest[0])) {
      options = rest.shift();
    }
    const items = rest;
    const entry = { severity, message, options, items, choice: undefined };
    recorded.messages.push(entry);
    entry.choice = await answers.message(message, items, options, severity);
    return entry.choice;
  };
}

const tabGroup = { tabs: [], isActive: true, viewColumn: 1, activeTab: undefined };
const tabGroups = {
  all: [tabGroup],
  activeTabGroup: tabGroup,
  onDidChangeTabs: emitters.tabs.event,
  onDidChangeTabGroups: new EventEmitter().event,
  async close(tabs) {
    const list = Array.isArray(tabs) ? tabs : [tabs];
    tabGroup.tabs = tabGroup.tabs.filter((t) => !list.includes(t));
    const closed = new Set(
      list
        .map((t) => (t.input instanceof TabInputTextDiff ? t.input.modified : t.input && t.input.uri))
        .filter(Boolean)
        .map(String),
    );
    const before = window.visibleTextEditors;
    window.visibleTextEditors = before.filter((e) => !closed.has(e.document.uri.toString()));
    if (window.activeTextEditor && closed.has(window.activeTextEditor.document.uri.toString())) {
      window.activeTextEditor = undefined;
    }
    if (window.visibleTextEditors.length !== before.length)
      emitters.visibleEditors.fire(window.visibleTextEditors);
    emitters.tabs.fire({ opened: [], closed: list, changed: [] });
    return true;
  },
};

function openTab(label, input) {
  const tab = {
    label,
    input,
    group: tabGroup,
    isActive: true,
    isDirty: false,
    isPinned: false,
    isPreview: true,
  };
  tabGroup.tabs.push(tab);
  emitters.tabs.fire({ opened: [tab], closed: [], changed: [] });
  return tab;
}

/** A TextEditor for a document, made visible (as a diff's modified side, or shown). */
function showEditor(doc, selection) {
  let editor = window.visibleTextEditors.find((e) => e.document === doc);
  if (!editor) {
    editor = {
      document: doc,
      viewColumn: 2,
      options: {},
      visibleRanges: [],
      decorations: new Map(),
      setDecorations(type, options) {
        editor.decorations.set(type.key, options);
        recorded.decorations.push({ uri: doc.uri.toString(), type: type.key, options });
      },
      revealRange() {},
      edit: async (fn) => {
        const edits = [];
        fn({
          replace: (range, text) => edits.push(new TextEdit(range, text)),
          insert: (pos, text) => edits.push(new TextEdit(new Range(pos, pos), text)),
          delete: (range) => edits.push(new TextEdit(range, '')),
        });
        doc._apply(edits);
        return true;
      },
    };
    window.visibleTextEditors = [...window.visibleTextEditors, editor];
    emitters.visibleEditors.fire(window.visibleTextEditors);
  }
  const at = selection ? selection.start : new Position(0, 0);
  editor.selection = new Selection(at, at);
  return editor;
}

function setActiveEditor(editor) {
  window.activeTextEditor = editor;
  emitters.activeEditor.fire(editor);
}

const window = {
  showInformationMessage: showMessage('information'),
  showWarningMessage: showMessage('warning'),
  showErrorMessage: showMessage('error'),
  async showInputBox(options) {
    recorded.inputBoxes.push(options);
    const answer = await answers.inputBox(options);
    if (answer !== undefined && options && options.validateInput) {
      const problem = await options.validateInput(answer);
      if (problem) throw new Error(`stub: the input box rejected ${answer}: ${problem}`);
    }
    return answer;
  },
  createQuickPick() {
    const accept = new EventEmitter();
    const button = new EventEmitter();
    const hide = new EventEmitter();
    const pick = {
      items: [],
      selectedItems: [],
      activeItems: [],
      title: undefined,
      placeholder: undefined,
      busy: false,
      visible: false,
      value: '',
      onDidAccept: accept.event,
      onDidTriggerItemButton: button.event,
      onDidHide: hide.event,
      onDidChangeValue: new EventEmitter().event,
      onDidChangeSelection: new EventEmitter().event,
      onDidChangeActive: new EventEmitter().event,
      show() {
        pick.visible = true;
      },
      hide() {
        if (!pick.visible) return;
        pick.visible = false;
        hide.fire();
      },
      dispose() {
        pick.visible = false;
      },
      /** Test controls: press Enter on an item, or click one of its buttons. */
      _accept(item) {
        pick.selectedItems = [item];
        accept.fire();
      },
      _button(item, which) {
        button.fire({ item, button: which });
      },
    };
    recorded.quickPickWidgets.push(pick);
    return pick;
  },
  async showQuickPick(items, options) {
    const list = await items;
    recorded.quickPicks.push({ items: list, options });
    return answers.quickPick(list, options);
  },
  async withProgress(options, task) {
    const entry = { options, reports: [], done: false };
    recorded.progress.push(entry);
    const source = new CancellationTokenSource();
    entry.cancel = () => source.cancel();
    try {
      return await task({ report: (value) => entry.reports.push(value) }, source.token);
    } finally {
      entry.done = true;
    }
  },
  createOutputChannel,
  async showTextDocument(docOrUri, options) {
    const doc = docOrUri instanceof TextDocument ? docOrUri : await openTextDocument(docOrUri);
    recorded.shown.push({ uri: doc.uri.toString(), options });
    openTab(path.basename(doc.uri.path), new TabInputText(doc.uri));
    return { document: doc, selection: new Selection(new Position(0, 0), new Position(0, 0)) };
  },
  activeTextEditor: undefined,
  visibleTextEditors: [],
  onDidChangeActiveTextEditor: emitters.activeEditor.event,
  onDidChangeVisibleTextEditors: emitters.visibleEditors.event,
  tabGroups,
  createStatusBarItem(id, alignment, priority) {
    const item = {
      id,
      alignment,
      priority,
      text: '',
      tooltip: undefined,
      name: undefined,
      command: undefined,
      backgroundColor: undefined,
      visible: false,
      show() {
        item.visible = true;
      },
      hide() {
        item.visible = false;
      },
      dispose() {
        item.visible = false;
        statusBarItems.splice(statusBarItems.indexOf(item), 1);
      },
    };
    statusBarItems.push(item);
    return item;
  },
  createTreeView(id, options) {
    const view = {
      id,
      provider: options.treeDataProvider,
      badge: undefined,
      message: undefined,
      visible: true,
      revealed: [],
      onDidChangeVisibility: new EventEmitter().event,
      onDidChangeSelection: new EventEmitter().event,
      onDidExpandElement: new EventEmitter().event,
      onDidCollapseElement: new EventEmitter().event,
      async reveal(element, revealOptions) {
        view.revealed.push({ element, options: revealOptions });
      },
      dispose() {
        treeViews.delete(id);
      },
    };
    treeViews.set(id, view);
    return view;
  },
  createTextEditorDecorationType(options) {
    return { key: `decoration-${++decorationTypes}`, options, dispose() {} };
  },
};
let decorationTypes = 0;
const statusBarItems = [];
const treeViews = new Map();

const statusItems = [];
const diagnosticCollections = new Set();

function languagesMatch(selector, document) {
  const filters = Array.isArray(selector) ? selector : [selector];
  let score = 0;
  for (const filter of filters) {
    if (typeof filter === 'string') {
      if (filter === '*' || filter === document.languageId) score = Math.max(score, 10);
      continue;
    }
    if (filter.scheme && filter.scheme !== '*' && filter.scheme !== document.uri.scheme) continue;
    if (filter.language && filter.language !== '*' && filter.language !== document.languageId) continue;
    score = Math.max(score, 5);
  }
  return score;
}

const providerRegistration = () => new Disposable(() => undefined);

const languages = {
  match: languagesMatch,
  createDiagnosticCollection(name) {
    const entries = new Map(); // uri string -> [uri, diagnostics]
    const collection = {
      name,
      set(uriOrEntries, diagnostics) {
        const changed = [];
        const pairs = Array.isArray(uriOrEntries) ? uriOrEntries : [[uriOrEntries, diagnostics]];
        for (const [uri, list] of pairs) {
          if (list === undefined || list === null) entries.delete(uri.toString());
          else entries.set(uri.toString(), [uri, [...list]]);
          changed.push(uri);
        }
        emitters.diagnostics.fire({ uris: changed });
      },
      delete(uri) {
        entries.delete(uri.toString());
        emitters.diagnostics.fire({ uris: [uri] });
      },
      clear() {
        const uris = [...entries.values()].map(([u]) => u);
        entries.clear();
        if (uris.length) emitters.diagnostics.fire({ uris });
      },
      get: (uri) => entries.get(uri.toString())?.[1],
      has: (uri) => entries.has(uri.toString()),
      forEach: (fn) => entries.forEach(([uri, list]) => fn(uri, list, collection)),
      dispose() {
        collection.clear();
        diagnosticCollections.delete(collection);
      },
      _entries: entries,
    };
    diagnosticCollections.add(collection);
    return collection;
  },
  getDiagnostics(uri) {
    if (!uri) {
      const all = new Map();
      for (const c of diagnosticCollections) {
        for (const [key, [u, list]] of c._entries) {
          if (!all.has(key)) all.set(key, [u, []]);
          all.get(key)[1].push(...list);
        }
      }
      return [...all.values()];
    }
    const result = [];
    for (const c of diagnosticCollections) result.push(...(c._entries.get(uri.toString())?.[1] ?? []));
    return result;
  },
  onDidChangeDiagnostics: emitters.diagnostics.event,
  createLanguageStatusItem(id, selector) {
    const item = {
      id,
      selector,
      name: '',
      text: '',
      detail: '',
      busy: false,
      severity: 0,
      command: undefined,
      dispose() {},
    };
    statusItems.push(item);
    return item;
  },
};
for (const name of [
  'registerCompletionItemProvider',
  'registerHoverProvider',
  'registerSignatureHelpProvider',
  'registerDefinitionProvider',
  'registerReferenceProvider',
  'registerDocumentHighlightProvider',
  'registerCodeActionsProvider',
  'registerCodeLensProvider',
  'registerDocumentFormattingEditProvider',
  'registerDocumentRangeFormattingEditProvider',
  'registerOnTypeFormattingEditProvider',
  'registerRenameProvider',
  'registerDocumentSymbolProvider',
  'registerDocumentLinkProvider',
  'registerColorProvider',
  'registerDeclarationProvider',
  'registerFoldingRangeProvider',
  'registerImplementationProvider',
  'registerSelectionRangeProvider',
  'registerTypeDefinitionProvider',
  'registerCallHierarchyProvider',
  'registerLinkedEditingRangeProvider',
  'registerTypeHierarchyProvider',
  'registerInlineValuesProvider',
  'registerInlayHintsProvider',
  'registerWorkspaceSymbolProvider',
  'registerDocumentSemanticTokensProvider',
  'registerDocumentRangeSemanticTokensProvider',
  'registerInlineCompletionItemProvider',
]) {
  languages[name] = providerRegistration;
}
/** Hover and CodeLens providers, kept so a test can ask them. */
const providers = { hover: [], codeLens: [] };
languages.registerHoverProvider = (selector, provider) => {
  providers.hover.push({ selector, provider });
  return new Disposable(() =>
    providers.hover.splice(
      providers.hover.findIndex((p) => p.provider === provider),
      1,
    ),
  );
};
languages.registerCodeLensProvider = (selector, provider) => {
  providers.codeLens.push({ selector, provider });
  return new Disposable(() =>
    providers.codeLens.splice(
      providers.codeLens.findIndex((p) => p.provider === provider),
      1,
    ),
  );
};

/** File system watchers the extension created: a test fires their events. */
const watchers = [];

const registeredCommands = new Map();
const contextKeys = {};
/** Results of VS Code's built-in commands (`vscode.executeDefinitionProvider`, …), set by tests. */
const builtinCommands = new Map();

const commands = {
  registerCommand(id, fn) {
    if (registeredCommands.has(id)) throw new Error(`command '${id}' already exists`);
    registeredCommands.set(id, fn);
    return new Disposable(() => registeredCommands.delete(id));
  },
  async executeCommand(id, ...args) {
    recorded.commands.push({ id, args });
    if (registeredCommands.has(id)) return registeredCommands.get(id)(...args);
    if (id === 'vscode.diff') {
      const [left, right, title, options] = args;
      await openTextDocument(left);
      const doc = await openTextDocument(right);
      const existing = tabGroup.tabs.find(
        (t) => t.input instanceof TabInputTextDiff && t.input.modified.toString() === right.toString(),
      );
      if (!existing) openTab(title, new TabInputTextDiff(left, right));
      const editor = showEditor(doc, options && options.selection);
      if (!options || !options.preserveFocus) setActiveEditor(editor);
      return undefined;
    }
    if (id === 'vscode.open') {
      const [uri, options] = args;
      const doc = await openTextDocument(uri);
      const tab = openTab(path.basename(doc.uri.path), new TabInputText(doc.uri));
      tab.isActive = !(options && options.background);
      tab.isPreview = !!(options && options.preview);
      return undefined;
    }
    if (id === 'vscode.changes') {
      openTab(args[0], { textDiffs: args[1].map(([, o, m]) => ({ original: o, modified: m })) });
      return undefined;
    }
    if (builtinCommands.has(id)) return builtinCommands.get(id)(...args);
    if (id === 'setContext') {
      recorded.contexts.push(args);
      contextKeys[args[0]] = args[1];
      return undefined;
    }
    if (id.startsWith('workbench.') || id.endsWith('.focus')) return undefined;
    throw new Error(`vscode stub: command '${id}' not found`);
  },
  getCommands: async () => [...registeredCommands.keys()],
};

const trust = { isTrusted: true };
const workspace = {
  get isTrusted() {
    return trust.isTrusted;
  },
  onDidGrantWorkspaceTrust: emitters.trust.event,
  workspaceFolders: undefined,
  get textDocuments() {
    return [...documents.values()];
  },
  notebookDocuments: [],
  onDidOpenNotebookDocument: new EventEmitter().event,
  onDidCloseNotebookDocument: new EventEmitter().event,
  onDidChangeNotebookDocument: new EventEmitter().event,
  onDidSaveNotebookDocument: new EventEmitter().event,
  getConfiguration,
  onDidChangeConfiguration: emitters.config.event,
  onDidChangeWorkspaceFolders: emitters.folders.event,
  onDidOpenTextDocument: emitters.open.event,
  onDidCloseTextDocument: emitters.close.event,
  onDidChangeTextDocument: emitters.change.event,
  onWillSaveTextDocument: emitters.willSave.event,
  onDidSaveTextDocument: emitters.save.event,
  onDidCreateFiles: new EventEmitter().event,
  onDidRenameFiles: new EventEmitter().event,
  onDidDeleteFiles: new EventEmitter().event,
  onWillCreateFiles: new EventEmitter().event,
  onWillRenameFiles: new EventEmitter().event,
  onWillDeleteFiles: new EventEmitter().event,
  openTextDocument,
  applyEdit,
  registerFileSystemProvider(scheme, provider) {
    fileSystems.set(scheme, provider);
    // As VS Code does: a change to a file whose document is open and not dirty reloads it.
    const listener = provider.onDidChangeFile((events) => {
      for (const event of events) {
        const doc = findDocument(event.uri);
        if (!doc || doc.isDirty || event.type === FileChangeType.Deleted) continue;
        const text = Buffer.from(provider.readFile(event.uri)).toString('utf8');
        if (text !== doc.getText()) {
          doc._apply(
            [new TextEdit(new Range(doc.positionAt(0), doc.positionAt(doc.getText().length)), text)],
            {
              undoable: false,
            },
          );
          doc.isDirty = false;
        }
      }
    });
    return new Disposable(() => {
      listener.dispose();
      fileSystems.delete(scheme);
    });
  },
  registerTextDocumentContentProvider(scheme, provider) {
    contentProviders.set(scheme, provider);
    return new Disposable(() => contentProviders.delete(scheme));
  },
  createFileSystemWatcher(pattern) {
    const watcher = {
      pattern,
      created: new EventEmitter(),
      changed: new EventEmitter(),
      deleted: new EventEmitter(),
    };
    watchers.push(watcher);
    return {
      onDidCreate: watcher.created.event,
      onDidChange: watcher.changed.event,
      onDidDelete: watcher.deleted.event,
      dispose() {
        watchers.splice(watchers.indexOf(watcher), 1);
      },
    };
  },
  asRelativePath(pathOrUri) {
    const p = pathOrUri instanceof Uri ? pathOrUri.fsPath : pathOrUri;
    const root = workspace.workspaceFolders?.[0]?.uri.fsPath;
    return root && p.startsWith(root + '/') ? p.slice(root.length + 1) : p;
  },
  getWorkspaceFolder(uri) {
    return workspace.workspaceFolders?.find((f) => uri.fsPath.startsWith(f.uri.fsPath));
  },
};

const extensionsById = new Map();
const extensions = {
  getExtension: (id) => extensionsById.get(id),
  get all() {
    return [...extensionsById.values()];
  },
  onDidChange: new EventEmitter().event,
};

const lmTools = new Map();
/** Chat models a test registers: {id, vendor, family, name, sendRequest(messages, options, token)}. */
const chatModels = [];
const lm = {
  async selectChatModels(selector = {}) {
    return chatModels.filter((m) =>
      ['vendor', 'family', 'id', 'version'].every(
        (key) => selector[key] === undefined || selector[key] === m[key],
      ),
    );
  },
  registerTool(name, tool) {
    lmTools.set(name, tool);
    return new Disposable(() => lmTools.delete(name));
  },
  get tools() {
    return [...lmTools.keys()].map((name) => ({ name }));
  },
};

// VS Code 1.101's MCP server definition API; absent (as in 1.100) until a test enables it.
const mcpProviders = new Map();
class McpStdioServerDefinition {
  constructor(label, command, args, env, version) {
    Object.assign(this, { label, command, args, env, version });
  }
}
function enableMcpApi() {
  api.version = '1.101.0';
  lm.registerMcpServerDefinitionProvider = (id, provider) => {
    mcpProviders.set(id, provider);
    return new Disposable(() => mcpProviders.delete(id));
  };
  api.McpStdioServerDefinition = McpStdioServerDefinition;
}

const env = {
  language: 'en',
  appName: 'vscode stub',
  appRoot: __dirname,
  machineId: 'stub',
  sessionId: 'stub',
  uriScheme: 'vscode',
  openExternal: async () => true,
  clipboard: { readText: async () => '', writeText: async () => undefined },
};

// ---------------------------------------------------------------- the module

const api = {
  version: '1.100.3',
  Disposable,
  EventEmitter,
  CancellationError,
  CancellationTokenSource,
  Uri,
  Position,
  Range,
  Selection,
  Location,
  TextEdit,
  WorkspaceEdit,
  Diagnostic,
  DiagnosticSeverity,
  DiagnosticTag,
  DiagnosticRelatedInformation,
  MarkdownString,
  Hover,
  SymbolKind,
  SymbolTag,
  SymbolInformation,
  DocumentSymbol,
  CallHierarchyItem,
  CallHierarchyIncomingCall,
  CallHierarchyOutgoingCall,
  TypeHierarchyItem,
  CodeLens,
  CompletionItem,
  DocumentLink,
  InlayHint,
  CodeAction,
  CodeActionKind,
  RelativePattern,
  TabInputText,
  TabInputTextDiff,
  TabInputCustom,
  TabInputNotebook,
  TabInputNotebookDiff,
  ThemeIcon,
  ThemeColor,
  TreeItem,
  TreeItemCollapsibleState,
  StatusBarAlignment,
  FileChangeType,
  FileSystemError,
  LanguageModelTextPart,
  LanguageModelToolResult,
  LanguageModelToolCallPart,
  LanguageModelToolResultPart,
  LanguageModelChatMessage,
  LanguageModelChatMessageRole,
  ProgressLocation: { SourceControl: 1, Window: 10, Notification: 15 },
  ViewColumn: { Active: -1, Beside: -2, One: 1, Two: 2 },
  LanguageStatusSeverity: { Information: 0, Warning: 1, Error: 2 },
  TextDocumentSaveReason: { Manual: 1, AfterDelay: 2, FocusOut: 3 },
  EndOfLine: { LF: 1, CRLF: 2 },
  ConfigurationTarget: { Global: 1, Workspace: 2, WorkspaceFolder: 3 },
  FileType: { Unknown: 0, File: 1, Directory: 2, SymbolicLink: 64 },
  window,
  workspace,
  languages,
  commands,
  extensions,
  env,
  lm,
  l10n: { t: (message, ...args) => message.replace(/\{(\d+)\}/g, (_, i) => String(args[i])) },
};

/** Test controls: not part of the vscode API. */
const stub = {
  recorded,
  providers,
  statusBarItems,
  treeViews,
  contextKeys,
  fileSystems,
  answers,
  settings,
  trust,
  documents,
  builtinCommands,
  registeredCommands,
  statusItems,
  outputChannels,
  tabGroup,
  lmTools,
  mcpProviders,
  enableMcpApi,
  chatModels,
  watchers,
  extensionsById,
  emitters,
  setSetting,
  findDocument,
  closeTextDocument,
  setWorkspaceFolder(dir) {
    const uri = Uri.file(dir);
    workspace.workspaceFolders = [{ uri, name: path.basename(dir), index: 0 }];
  },
  /** Types into an open document as a user would: the buffer changes, the disk does not. */
  async type(uriOrPath, edits) {
    const doc = await openTextDocument(uriOrPath);
    doc._apply(edits);
    return doc;
  },
  /** Undo in the document's editor: back to the text before its last applied edit. */
  undo(uriOrPath) {
    const doc = findDocument(uriOrPath);
    if (!doc || !doc.undoStack.length) return false;
    const previous = doc.undoStack.pop();
    doc._apply([new TextEdit(new Range(doc.positionAt(0), doc.positionAt(doc.getText().length)), previous)], {
      undoable: false,
    });
    return true;
  },
  showEditor,
  setActiveEditor,
  /** Puts the cursor on a line of an open document's editor and focuses it. */
  async focus(uri, line) {
    const doc = await openTextDocument(uri);
    const editor = showEditor(doc, new Range(line, 0, line, 0));
    setActiveEditor(editor);
    return editor;
  },
  reset() {
    for (const list of Object.values(recorded)) list.length = 0;
    answers.message = () => undefined;
    answers.inputBox = () => undefined;
    answers.quickPick = () => undefined;
  },
};

// Names that module loaders, promises and test printers probe for on any object.
const LOOKED_UP_BY_TOOLS = new Set([
  'then',
  'toJSON',
  'default',
  'constructor',
  'inspect',
  'asymmetricMatch',
  'nodeType',
]);

/** Fails loudly on a name the stand-in does not implement. */
function strict(target, where) {
  return new Proxy(target, {
    get(obj, prop) {
      if (prop in obj || typeof prop === 'symbol' || LOOKED_UP_BY_TOOLS.has(prop) || prop.startsWith('__')) {
        return obj[prop];
      }
      throw new Error(`vscode stub: ${where}${String(prop)} is not implemented`);
    },
  });
}

for (const ns of ['window', 'workspace', 'languages', 'commands', 'env', 'lm', 'extensions']) {
  api[ns] = strict(api[ns], `vscode.${ns}.`);
}
module.exports = strict(api, 'vscode.');
module.exports.__stub = stub;
