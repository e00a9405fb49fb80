/**
 * JSON with 64-bit integers: Iceberg's snapshot ids are random 63-bit longs (Java's writers pick
 * them so), which a JavaScript double rounds, and a rounded parent id or ref is a broken table.
 * Integers beyond the safe range are read as bigint from their source text (JSON.parse's reviver
 * context, Node 21+) and bigints are written as their digits (JSON.rawJSON).
 */
interface ReviverContext {
  source?: string;
}

export function parseIcebergJson(text: string): unknown {
  return JSON.parse(text, function revive(this: unknown, _key: string, value: unknown, context?: ReviverContext) {
    if (typeof value === 'number' && !Number.isSafeInteger(value) && context?.source !== undefined && /^-?\d+$/.test(context.source)) {
      return BigInt(context.source);
    }
    return value;
  } as (this: unknown, key: string, value: unknown) => unknown);
}

const rawJson = (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON;

export function stringifyIcebergJson(value: unknown, space?: number): string {
  return JSON.stringify(value, (_key, item: unknown) => (typeof item === 'bigint' ? rawJson(item.toString()) : item), space);
}
