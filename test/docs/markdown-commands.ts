/**
 * The shell commands a Markdown document shows: every line of a ```sh (or bash, shell) fence, with
 * `\` continuations joined, as a reader would paste it. Fences are how a document tells commands
 * from output (README.md, "Contributor notes"), so a fence without a language and an indented code
 * block are reported as problems: either could hide a command that nothing runs.
 */

export interface ShownCommand {
  file: string;
  /** 1-based line of the command's first line. */
  line: number;
  /** Exactly as written (continuations and comment included): what the test runs. */
  text: string;
  /** Comment removed, continuations joined, whitespace collapsed: the key it is listed under. */
  key: string;
}

export interface DocumentCommands {
  commands: ShownCommand[];
  problems: string[];
}

const SHELL_FENCES = new Set(['sh', 'bash', 'shell']);

export function shownCommands(file: string, markdown: string): DocumentCommands {
  const lines = markdown.split('\n');
  const commands: ShownCommand[] = [];
  const problems: string[] = [];
  let fence: string | undefined;
  let pending: { line: number; text: string } | undefined;
  lines.forEach((line, index) => {
    const number = index + 1;
    const opening = /^\s*```(.*)$/.exec(line);
    if (opening !== null) {
      if (fence === undefined) {
        fence = opening[1]!.trim();
        if (fence === '') problems.push(`${file}:${number}: a code fence without a language: say sh for commands, text for output`);
      } else {
        if (pending !== undefined) problems.push(`${file}:${pending.line}: a command continued with \\ past the end of its block`);
        fence = undefined;
        pending = undefined;
      }
      return;
    }
    if (fence === undefined) {
      // An indented code block starts after a blank line (list continuations here indent by 2 or 3).
      if (/^ {4}\S/.test(line) && (index === 0 || lines[index - 1]!.trim() === '')) {
        problems.push(`${file}:${number}: an indented code block: fence it as sh (commands) or text (output)`);
      }
      return;
    }
    if (!SHELL_FENCES.has(fence)) return;
    const text = pending === undefined ? line : `${pending.text}\n${line}`;
    const first = pending?.line ?? number;
    if (/\\$/.test(line)) {
      pending = { line: first, text };
      return;
    }
    pending = undefined;
    const key = commandKey(text);
    if (key !== '') commands.push({ file, line: first, text, key });
  });
  if (fence !== undefined) problems.push(`${file}: a code fence that is never closed`);
  return { commands, problems };
}

/** The command without its comment, continuations joined and whitespace collapsed. */
export function commandKey(text: string): string {
  return stripComment(text.replace(/\\\n/g, ' ')).replace(/\s+/g, ' ').trim();
}

/** Removes a shell comment: a `#` that begins a word outside quotes, to the end of the line. */
function stripComment(text: string): string {
  let quote: string | undefined;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i]!;
    if (quote !== undefined) {
      if (c === quote) quote = undefined;
      else if (c === '\\' && quote === '"') i += 1;
      continue;
    }
    if (c === '\\') i += 1;
    else if (c === "'" || c === '"') quote = c;
    else if (c === '#' && (i === 0 || /\s/.test(text[i - 1]!))) return text.slice(0, i);
  }
  return text;
}

export interface MarkdownLink {
  file: string;
  line: number;
  target: string;
}

/** Relative links `[text](target)` outside code fences and code spans; web and mail links are left out. */
export function relativeLinks(file: string, markdown: string): MarkdownLink[] {
  const links: MarkdownLink[] = [];
  let fenced = false;
  markdown.split('\n').forEach((line, index) => {
    if (/^\s*```/.test(line)) fenced = !fenced;
    if (fenced) return;
    for (const match of line.replace(/`[^`]*`/g, '``').matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = match[1]!;
      if (!/^[a-z]+:/i.test(target)) links.push({ file, line: index + 1, target });
    }
  });
  return links;
}

/** The anchors GitHub gives a document's headings: lowercased, punctuation dropped, spaces as dashes. */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6}\s+(.*?)\s*$/.exec(line);
    if (heading === null) continue;
    const base = heading[1]!
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    let anchor = base;
    for (let n = 1; anchors.has(anchor); n += 1) anchor = `${base}-${n}`;
    anchors.add(anchor);
  }
  return anchors;
}
