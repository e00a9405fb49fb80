/**
 * Splits a pasted shell command into words the way a POSIX shell would, without running anything:
 * no variable, command or glob expansion (`$TOKEN` and `$(…)` stay as written). Enough for the
 * curl commands the reporting module shows: single and double quotes, `$'…'` ANSI-C quotes,
 * backslash escapes, backslash-newline continuations and `#` comments.
 */

/** A command that cannot be split: an unterminated quote, a pipe, a cut-off continuation. */
export class ShellWordsError extends Error {
  constructor(
    message: string,
    /** 1-based line of the offending character in the pasted text. */
    readonly line: number,
  ) {
    super(message);
    this.name = 'ShellWordsError';
  }
}

const BLANK = new Set([' ', '\t', '\n', '\r']);
// A pasted pipeline or command list would silently lose its other commands; refuse it instead.
const OPERATORS = new Set(['|', ';', '&', '<', '>', '(', ')']);
// Inside double quotes a backslash only escapes these (POSIX); before anything else it is literal.
const DOUBLE_QUOTE_ESCAPABLE = new Set(['$', '`', '"', '\\']);

const ANSI_C_SIMPLE: Record<string, string> = {
  a: '\x07',
  b: '\b',
  e: '\x1b',
  E: '\x1b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
  v: '\v',
  '\\': '\\',
  "'": "'",
  '"': '"',
  '?': '?',
};

function lineAt(text: string, index: number): number {
  let line = 1;
  for (let i = 0; i < index && i < text.length; i++) if (text[i] === '\n') line++;
  return line;
}

/** A newline right after a backslash, as `\n` or `\r\n`; returns its length (0 when none). */
function newlineAt(text: string, index: number): number {
  if (text[index] === '\n') return 1;
  if (text[index] === '\r' && text[index + 1] === '\n') return 2;
  return 0;
}

/** Reads `$'…'` starting after the opening quote; returns the decoded text and the index after the closing quote. */
function readAnsiC(text: string, start: number): { value: string; end: number } {
  let value = '';
  let i = start;
  while (i < text.length) {
    const char = text[i]!;
    if (char === "'") return { value, end: i + 1 };
    if (char !== '\\') {
      value += char;
      i++;
      continue;
    }
    const next = text[i + 1];
    if (next === undefined) break;
    const simple = ANSI_C_SIMPLE[next];
    if (simple !== undefined) {
      value += simple;
      i += 2;
      continue;
    }
    const numeric = /^(?:([0-7]{1,3})|x([0-9a-fA-F]{1,2})|u([0-9a-fA-F]{1,4})|U([0-9a-fA-F]{1,8})|c(.))/.exec(text.slice(i + 1, i + 11));
    if (numeric !== null) {
      const [whole, octal, hex, u4, u8, control] = numeric;
      if (control !== undefined) value += String.fromCharCode(control.toUpperCase().charCodeAt(0) ^ 0x40);
      else {
        const code = parseInt(octal ?? hex ?? u4 ?? u8!, octal !== undefined ? 8 : 16);
        if (code > 0x10ffff) throw new ShellWordsError("a $'…' escape is beyond the Unicode code points (the text is not shown)", lineAt(text, i));
        value += String.fromCodePoint(code);
      }
      i += 1 + whole.length;
      continue;
    }
    // bash keeps an unknown escape as written.
    value += `\\${next}`;
    i += 2;
  }
  throw new ShellWordsError("unterminated $'…' quote", lineAt(text, start - 2));
}

/**
 * Splits `text` into shell words. Throws {@link ShellWordsError} for unterminated quotes, a trailing
 * line continuation (a cut-off paste) and unquoted control operators (`|`, `;`, `&`, `<`, `>`).
 */
export function splitShellWords(text: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let i = 0;
  const endWord = () => {
    if (inWord) words.push(word);
    word = '';
    inWord = false;
  };

  while (i < text.length) {
    const char = text[i]!;
    if (BLANK.has(char)) {
      endWord();
      i++;
    } else if (char === '#' && !inWord) {
      while (i < text.length && text[i] !== '\n') i++;
    } else if (char === '\\') {
      const newline = newlineAt(text, i + 1);
      if (newline > 0) {
        i += 1 + newline; // a continuation joins the lines; it does not end the word
      } else if (i + 1 >= text.length) {
        throw new ShellWordsError('the command ends with a backslash (a line continuation): was the paste cut off?', lineAt(text, i));
      } else {
        word += text[i + 1];
        inWord = true;
        i += 2;
      }
    } else if (char === "'") {
      const close = text.indexOf("'", i + 1);
      if (close < 0) throw new ShellWordsError("unterminated single quote (')", lineAt(text, i));
      word += text.slice(i + 1, close);
      inWord = true;
      i = close + 1;
    } else if (char === '$' && text[i + 1] === "'") {
      const { value, end } = readAnsiC(text, i + 2);
      word += value;
      inWord = true;
      i = end;
    } else if (char === '"' || (char === '$' && text[i + 1] === '"')) {
      // $"…" is bash's locale translation; without a message catalogue it is a plain double quote.
      const open = char === '"' ? i : i + 1;
      let j = open + 1;
      for (;;) {
        if (j >= text.length) throw new ShellWordsError('unterminated double quote (")', lineAt(text, open));
        const inner = text[j]!;
        if (inner === '"') break;
        if (inner === '\\') {
          const newline = newlineAt(text, j + 1);
          if (newline > 0) {
            j += 1 + newline;
            continue;
          }
          const next = text[j + 1];
          if (next !== undefined && DOUBLE_QUOTE_ESCAPABLE.has(next)) {
            word += next;
            j += 2;
            continue;
          }
        }
        word += inner;
        j++;
      }
      inWord = true;
      i = j + 1;
    } else if (OPERATORS.has(char)) {
      throw new ShellWordsError(
        `unquoted "${char}": paste one command only (no pipes, redirections or command lists); quote URLs that contain &`,
        lineAt(text, i),
      );
    } else {
      word += char;
      inWord = true;
      i++;
    }
  }
  endWord();
  return words;
}
