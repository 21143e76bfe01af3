/**
 * The proposed text of an edit, for the diff editor shown before a permission ask.
 *
 * The ask's metadata carries the change as a unified diff (`metadata.diff`) and,
 * when the sidecar sends it, as an LSP WorkspaceEdit (`metadata.edit`). The edit is
 * exact; the diff may have had its common indentation trimmed for display
 * (OpenCode's trimDiff), so applying it checks every line and restores a trimmed
 * indentation when the file's lines show it.
 */

export interface Position {
  line: number;
  character: number;
}

export interface TextEdit {
  range: { start: Position; end: Position };
  newText: string;
}

export interface FileDiff {
  /** Worktree-relative paths from the headers; undefined for /dev/null. */
  oldPath?: string;
  newPath?: string;
  hunks: Hunk[];
}

export interface Hunk {
  oldStart: number;
  /** Lines as in the diff: a ' ', '-' or '+' prefix and the body. */
  lines: string[];
}

/** Applies LSP text edits (UTF-16 positions, like JS strings) to a text. */
export function applyTextEdits(text: string, edits: readonly TextEdit[]): string {
  const starts = lineStarts(text);
  const offset = (p: Position): number => {
    if (p.line >= starts.length) {
      return text.length;
    }
    const lineStart = starts[p.line];
    const lineEnd = p.line + 1 < starts.length ? starts[p.line + 1] : text.length;
    return Math.min(lineStart + p.character, lineEnd);
  };
  const sorted = edits
    .map((edit, index) => ({ start: offset(edit.range.start), end: offset(edit.range.end), edit, index }))
    .sort((a, b) => b.start - a.start || b.index - a.index);
  let result = text;
  for (const { start, end, edit } of sorted) {
    result = result.slice(0, start) + edit.newText + result.slice(end);
  }
  return result;
}

function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch === '\r' && text[i + 1] === '\n') {
      i++;
    }
    if (ch === '\n' || ch === '\r') {
      starts.push(i + 1);
    }
  }
  return starts;
}

const HUNK = /^@@ -(\d+)(?:,(\d+))? \+\d+(?:,(\d+))? @@/;

/** Splits a (possibly multi-file) unified diff into files and hunks. */
export function parseUnifiedDiff(diff: string): FileDiff[] {
  const files: FileDiff[] = [];
  let current: FileDiff | undefined;
  const lines = diff.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line.startsWith('--- ') && lines[i + 1]?.startsWith('+++ ')) {
      current = { oldPath: headerPath(line.slice(4)), newPath: headerPath(lines[i + 1].slice(4)), hunks: [] };
      files.push(current);
      i++;
      continue;
    }
    const header = HUNK.exec(line);
    if (!header || !current) {
      continue;
    }
    // The header's counts say where the hunk ends; an empty line inside it is an
    // empty context line whose leading space was lost.
    let oldLeft = header[2] === undefined ? 1 : Number(header[2]);
    let newLeft = header[3] === undefined ? 1 : Number(header[3]);
    const hunk: Hunk = { oldStart: Number(header[1]), lines: [] };
    while ((oldLeft > 0 || newLeft > 0) && i + 1 < lines.length) {
      const body = lines[i + 1];
      const kind = body === '' ? ' ' : body[0];
      if (kind === '\\') {
        i++; // "\ No newline at end of file"
        continue;
      }
      if (kind !== ' ' && kind !== '-' && kind !== '+') {
        break;
      }
      i++;
      hunk.lines.push(body === '' ? ' ' : body);
      if (kind !== '+') oldLeft--;
      if (kind !== '-') newLeft--;
    }
    current.hunks.push(hunk);
  }
  return files;
}

function headerPath(raw: string): string | undefined {
  const path = raw.split('\t')[0].trim();
  if (path === '/dev/null') {
    return undefined;
  }
  return path.replace(/^[ab]\//, '');
}

/** The text after applying a file's hunks, or undefined when they do not fit it. */
export function applyHunks(text: string, file: FileDiff): string | undefined {
  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  const lines = text.split(/\r?\n/);
  let shift = 0;
  for (const hunk of file.hunks) {
    const oldLines = hunk.lines.filter((l) => !l.startsWith('+')).map((l) => l.slice(1));
    // "-N,0" inserts after line N; otherwise the hunk starts at line N.
    const start = (oldLines.length === 0 ? hunk.oldStart : hunk.oldStart - 1) + shift;
    const indent = matchAt(lines, start, oldLines);
    if (indent === undefined) {
      return undefined;
    }
    // Context lines keep the file's own text; added lines get the trimmed indentation back.
    const newLines: string[] = [];
    let old = start;
    for (const l of hunk.lines) {
      if (l.startsWith('+')) {
        newLines.push(l.length > 1 ? indent + l.slice(1) : '');
      } else if (l.startsWith('-')) {
        old++;
      } else {
        newLines.push(lines[old++]);
      }
    }
    lines.splice(start, oldLines.length, ...newLines);
    shift += newLines.length - oldLines.length;
  }
  return lines.join(eol);
}

/**
 * Whether `expected` matches `lines` at `start`: exactly (returns ''), or after a
 * common indentation was trimmed from the diff (returns that indentation).
 */
export function matchAt(lines: string[], start: number, expected: string[]): string | undefined {
  const actual = lines.slice(start, start + expected.length);
  if (actual.length !== expected.length) {
    return undefined;
  }
  if (actual.every((line, i) => line === expected[i])) {
    return '';
  }
  let indent: string | undefined;
  for (let i = 0; i < expected.length; i++) {
    const body = expected[i];
    if (!body.trim()) {
      if (actual[i].trim()) {
        return undefined;
      }
      continue;
    }
    if (!actual[i].endsWith(body)) {
      return undefined;
    }
    const prefix = actual[i].slice(0, actual[i].length - body.length);
    if (prefix.trim() || (indent !== undefined && prefix.length !== indent.length)) {
      return undefined;
    }
    indent ??= prefix;
  }
  return indent ?? '';
}

/** The two sides of a file's hunks alone, when they cannot be placed in the file. */
export function hunkSides(file: FileDiff): { before: string; after: string } {
  const before: string[] = [];
  const after: string[] = [];
  file.hunks.forEach((hunk, index) => {
    if (index > 0) {
      before.push('…');
      after.push('…');
    }
    for (const line of hunk.lines) {
      if (!line.startsWith('+')) {
        before.push(line.slice(1));
      }
      if (!line.startsWith('-')) {
        after.push(line.slice(1));
      }
    }
  });
  return { before: before.join('\n'), after: after.join('\n') };
}
