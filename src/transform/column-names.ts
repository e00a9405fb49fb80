/**
 * Warehouse column names derived from the tile's headers.
 *
 * The rules are BigQuery's (letters, digits, underscores; not starting with a digit; at most 300
 * characters; names are case-insensitive) made stricter so that the same names work as CSV-friendly
 * identifiers everywhere: ASCII only, lower-case snake_case. Names must be stable — the same
 * headers always give the same names — because a renamed column breaks every query on the table.
 */

export const MAX_COLUMN_NAME_LENGTH = 300;

// Letters NFKD does not decompose into a base letter plus accents, spelled the way a German,
// Scandinavian, Polish or Icelandic reader would write them in ASCII.
const TRANSLITERATIONS: Readonly<Record<string, string>> = {
  ß: 'ss',
  ẞ: 'SS',
  æ: 'ae',
  Æ: 'AE',
  œ: 'oe',
  Œ: 'OE',
  ø: 'o',
  Ø: 'O',
  ł: 'l',
  Ł: 'L',
  đ: 'd',
  Đ: 'D',
  ð: 'd',
  Ð: 'D',
  þ: 'th',
  Þ: 'TH',
  ı: 'i',
  ħ: 'h',
  Ħ: 'H',
};
const TRANSLITERATED = new RegExp(`[${Object.keys(TRANSLITERATIONS).join('')}]`, 'gu');

/**
 * BigQuery rejects column names starting with these (case-insensitive), and the BigQuery sink adds
 * the lineage columns `_run_id` and `_extracted_at`. Every name built here starts with a letter
 * (leading underscores are trimmed, a leading digit gets "c_"), so none of them can occur; the
 * check below keeps that true if the rules above ever change.
 */
const RESERVED = /^(?:_table_|_file_|_partition|_row_timestamp|__root__|_colon_|_run_id$|_extracted_at$)/i;

/** One header's name before de-duplication; "" when nothing usable is left. */
export function toBaseColumnName(header: string): string {
  let name = header
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    // camelCase and PascalCase word boundaries: "createdAt" → "created_At", "MTTRHours" → "MTTR_Hours".
    // Before transliteration, so "Ærø" (one capital) does not turn into "AEro" and split as "A_Ero".
    .replace(/([\p{Ll}\p{Nd}])(\p{Lu})/gu, '$1_$2')
    .replace(/(\p{Lu}+)(\p{Lu}\p{Ll})/gu, '$1_$2')
    .replace(TRANSLITERATED, (letter) => TRANSLITERATIONS[letter] ?? '_')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
  if (/^[0-9]/.test(name)) name = `c_${name}`;
  if (RESERVED.test(name)) name = `c${name}`;
  return truncate(name, MAX_COLUMN_NAME_LENGTH);
}

function truncate(name: string, length: number): string {
  return name.length <= length ? name : name.slice(0, length).replace(/_+$/, '');
}

/**
 * Unique, BigQuery-safe names, one per header, in header order.
 *
 * - A header with nothing usable left (empty, only symbols, non-Latin script) is
 *   `column_<position>` (1-based), so it is at least stable while the tile's layout is.
 * - Repeated names keep the first occurrence as is; later ones get `_2`, `_3`… choosing the
 *   smallest suffix that is neither taken nor some other header's own name. A header's name thus
 *   never changes because a duplicate appeared elsewhere ("a", "a", "a_2" → a, a_3, a_2).
 */
export function toColumnNames(headers: readonly string[]): string[] {
  const bases = headers.map((header, index) => toBaseColumnName(header) || `column_${index + 1}`);
  const ownNames = new Set(bases);
  const used = new Set<string>();
  return bases.map((base) => {
    if (!used.has(base)) {
      used.add(base);
      return base;
    }
    for (let suffix = 2; ; suffix++) {
      const tail = `_${suffix}`;
      const candidate = truncate(base, MAX_COLUMN_NAME_LENGTH - tail.length) + tail;
      if (!used.has(candidate) && !ownNames.has(candidate)) {
        used.add(candidate);
        return candidate;
      }
    }
  });
}
