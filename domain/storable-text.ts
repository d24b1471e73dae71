/**
 * Text as Postgres will store it. A NUL character or an unpaired UTF-16 surrogate is legal in a JS string (an engine
 * can answer with either) but refused by jsonb and text columns; each becomes U+FFFD, the replacement character.
 */
// The NUL is the point of this pattern, not a typo.
// eslint-disable-next-line no-control-regex
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

export function storableText(text: string): string {
  return text.replace(UNSTORABLE, '\ufffd');
}

/** Whether Postgres can store the text as it is. */
export function isStorableText(text: string): boolean {
  // search(), unlike test(), ignores the global pattern's lastIndex.
  return text.search(UNSTORABLE) === -1;
}

/** A JSON value with every string in it made storable (keys included). */
export function storableJson<T>(value: T): T {
  return JSON.parse(JSON.stringify(value), (_key, v: unknown) => (typeof v === 'string' ? storableText(v) : v)) as T;
}
