/**
 * The hunks of an edit ask (`metadata.hunks`: `{id, file, header, lines}`) as text
 * operations, with no VS Code in sight: the proposed text with some hunks left out,
 * where a hunk sits in a proposed text the person may have edited, and swapping one
 * hunk back to its old side (a rejection shown in place) or forward again.
 */
import { applyHunks, Hunk, matchAt } from '../diffs';

export interface ReviewHunk {
  /** Stable within the ask, e.g. `src/a.py#2`. */
  id: string;
  /** The file's path relative to the worktree. */
  file: string;
  /** The `@@ -a,b +c,d @@` line. */
  header: string;
  /** The hunk's lines, each with its ' ', '-' or '+' prefix. */
  lines: string[];
}

const HEADER = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/;

export interface HunkHeader {
  oldStart: number;
  oldCount: number;
  newStart: number;
  newCount: number;
}

export function parseHeader(header: string): HunkHeader | undefined {
  const m = HEADER.exec(header);
  if (!m) {
    return undefined;
  }
  const count = (raw: string | undefined) => (raw === undefined ? 1 : Number(raw));
  return { oldStart: Number(m[1]), oldCount: count(m[2]), newStart: Number(m[3]), newCount: count(m[4]) };
}

/** The two sides of a hunk: the lines it replaces and the lines it puts in their place. */
export function sides(hunk: ReviewHunk): { before: string[]; after: string[] } {
  const before: string[] = [];
  const after: string[] = [];
  for (const line of bodyLines(hunk)) {
    const body = line.slice(1);
    if (!line.startsWith('+')) before.push(body);
    if (!line.startsWith('-')) after.push(body);
  }
  return { before, after };
}

/** The hunk's ' ', '-', '+' lines, without "\\ No newline at end of file" markers. */
export function bodyLines(hunk: ReviewHunk): string[] {
  return hunk.lines.filter((line) => !line.startsWith('\\')).map((line) => (line === '' ? ' ' : line));
}

/** `base` with only these hunks applied; undefined when one of them does not fit it. */
export function applySome(base: string, hunks: readonly ReviewHunk[]): string | undefined {
  const parsed: Hunk[] = [];
  for (const hunk of hunks) {
    const header = parseHeader(hunk.header);
    if (!header) {
      return undefined;
    }
    parsed.push({ oldStart: header.oldStart, lines: bodyLines(hunk) });
  }
  parsed.sort((a, b) => a.oldStart - b.oldStart);
  return applyHunks(base, { hunks: parsed });
}

export function splitLines(text: string): { lines: string[]; eol: string } {
  return { lines: text.split(/\r?\n/), eol: text.includes('\r\n') ? '\r\n' : '\n' };
}

/** The start of `block` in `lines` nearest to line `near` (0-based); undefined when absent. */
export function locate(lines: readonly string[], block: readonly string[], near: number): number | undefined {
  if (!block.length) {
    return undefined;
  }
  let best: number | undefined;
  for (let i = 0; i + block.length <= lines.length; i++) {
    if (matchAt(lines as string[], i, block as string[]) !== undefined) {
      if (best === undefined || Math.abs(i - near) < Math.abs(best - near)) {
        best = i;
      }
    }
  }
  return best;
}

/** Lines `[start, end)` of a text; `end === start` is the point between two lines. */
export interface LineSpan {
  start: number;
  end: number;
}

/**
 * Where the hunk's changed lines sit in a text that holds its new side: the added
 * lines, or, for a hunk that only removes, the line where they were. Undefined when
 * the text no longer holds the hunk (the person edited it away).
 */
export function changedSpan(text: string, hunk: ReviewHunk): LineSpan | undefined {
  const header = parseHeader(hunk.header);
  const { after } = sides(hunk);
  const start = locate(splitLines(text).lines, after, (header?.newStart ?? 1) - 1);
  if (start === undefined) {
    return undefined;
  }
  let offset = 0;
  let first: number | undefined;
  let last = -1;
  for (const line of bodyLines(hunk)) {
    if (line.startsWith('-')) {
      first ??= offset;
      continue;
    }
    if (line.startsWith('+')) {
      first ??= offset;
      last = offset;
    }
    offset++;
  }
  const from = start + (first ?? 0);
  return { start: from, end: last >= 0 ? start + last + 1 : from };
}

/**
 * The text with one hunk put to one side: `old` puts back the lines it replaced (how
 * a rejected hunk is shown), `new` applies it again. Undefined when the text does not
 * hold the other side where the hunk belongs.
 */
export function swapHunk(text: string, hunk: ReviewHunk, to: 'old' | 'new'): string | undefined {
  const header = parseHeader(hunk.header);
  const { before, after } = sides(hunk);
  const [from, into] = to === 'old' ? [after, before] : [before, after];
  const near = ((to === 'old' ? header?.newStart : header?.oldStart) ?? 1) - 1;
  const { lines, eol } = splitLines(text);
  const start = from.length ? locate(lines, from, near) : Math.min(near + 1, lines.length);
  if (start === undefined) {
    return undefined;
  }
  // Put back indentation the diff may have trimmed (OpenCode's trimDiff).
  const indent = from.length ? (matchAt(lines, start, from) ?? '') : '';
  const replacement = into.map((line) => (line.length ? indent + line : line));
  lines.splice(start, from.length, ...replacement);
  return lines.join(eol);
}

/** The smallest single replacement that turns `before` into `after` (offsets into `before`). */
export function minimalEdit(before: string, after: string): { start: number; end: number; text: string } {
  let start = 0;
  const max = Math.min(before.length, after.length);
  while (start < max && before[start] === after[start]) start++;
  let tail = 0;
  while (tail < max - start && before[before.length - 1 - tail] === after[after.length - 1 - tail]) {
    tail++;
  }
  return { start, end: before.length - tail, text: after.slice(start, after.length - tail) };
}
