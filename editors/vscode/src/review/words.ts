/**
 * What a permission pattern covers, in words a person reads on a button or in a list:
 * `git status *` is "commands starting `git status`", `src/*` is "edits to files in
 * src/", `*` is "every command". Pure: no vscode.
 */

const code = (text: string) => `\`${text}\``;

/** One pattern of a permission, in words. */
export function describePattern(permission: string, pattern: string): string {
  if (permission === 'bash') {
    if (pattern === '*') return 'every command';
    if (pattern.endsWith(' *') && !pattern.slice(0, -2).includes('*')) {
      return `commands starting ${code(pattern.slice(0, -2))}`;
    }
    return pattern.includes('*') ? `commands matching ${code(pattern)}` : `the command ${code(pattern)}`;
  }
  if (permission === 'edit') {
    return `edits to ${files(pattern)}`;
  }
  if (permission === 'read' || permission === 'external_directory') {
    return `${permission === 'read' ? 'reading' : 'access to'} ${files(pattern)}`;
  }
  if (permission === 'webfetch') {
    return pattern === '*' ? 'fetching any URL' : `fetching ${code(pattern)}`;
  }
  if (permission === 'network') {
    if (pattern === '*') return 'network access to every host';
    if (pattern.startsWith('*.')) return `network access to every name below ${code(pattern.slice(2))}`;
    return `network access to ${code(pattern)}`;
  }
  return pattern === '*' ? `every ${code(permission)} request` : `${code(permission)} for ${code(pattern)}`;
}

function files(pattern: string): string {
  if (pattern === '*' || pattern === '**' || pattern === '**/*') return 'every file';
  const dir = /^(.*[^*])\/\*{1,2}$/.exec(pattern);
  if (dir && !dir[1].includes('*')) return `files in ${code(dir[1] + '/')}`;
  if (!/[*?[]/.test(pattern)) return `the file ${code(pattern)}`;
  return `files matching ${code(pattern)}`;
}

/** Every pattern an "always" would approve, in words: "commands starting `git status`". */
export function describeAlways(permission: string, patterns: readonly string[]): string {
  const words = [...new Set(patterns.map((p) => describePattern(permission, p)))];
  if (words.length <= 1) return words[0] ?? describePattern(permission, '*');
  return `${words.slice(0, -1).join(', ')} and ${words.at(-1)}`;
}

/** For plain text (notifications, buttons), where backticks would show: “git status”. */
export function plain(text: string): string {
  return text.replace(/`([^`]*)`/g, '“$1”');
}

/** "1 change", "2 changes". */
export function plural(count: number, one: string, many = `${one}s`): string {
  return `${count} ${count === 1 ? one : many}`;
}

/**
 * What an ask that is not an edit would do, in words: "run `make`", "fetch `https://…`",
 * "connect to `pypi.org` (port 8443) while running `pip install x`" (`port` only for a
 * network ask, and only said when it is not 80 or 443).
 */
export function askInWords(
  permission: string,
  patterns: readonly string[],
  command?: string,
  port?: number,
): string {
  const list = (items: readonly string[]) => items.map(code).join(', ');
  switch (permission) {
    case 'bash':
      return `run ${command ? code(command) : list(patterns)}`;
    case 'external_directory':
      return `use files outside the project, in ${list(patterns.map((p) => p.replace(/\/\*{1,2}$/, '/')))}`;
    case 'webfetch':
      return `fetch ${list(patterns)}`;
    case 'network': {
      const on = port && port !== 80 && port !== 443 ? ` (port ${port})` : '';
      return `connect to ${list(patterns)}${on}${command ? ` while running ${code(command)}` : ''}`;
    }
    case 'websearch':
      return `search the web for ${list(patterns)}`;
    case 'read':
      return `read ${list(patterns)}`;
    case 'doom_loop':
      return `call ${list(patterns)} again with the same input, the third time in a row`;
    case 'task':
      return `start the sub-agent ${list(patterns)}`;
    default:
      return `use ${code(permission)} for ${list(patterns)}`;
  }
}

/** A command's first line, cut to 80 characters ("… " when it has more lines). */
export function oneLine(text: string): string {
  const line = text.trim().split('\n')[0];
  const cut = line.length > 80 ? `${line.slice(0, 77)}…` : line;
  return text.trim().includes('\n') ? `${cut} …` : cut;
}
