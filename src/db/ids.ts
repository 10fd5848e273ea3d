const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The row id a path parameter or body field names, as we store it: our ids are
 * `crypto.randomUUID()`, lower-case, and a UUID is the same in any letter case (RFC 9562), so an
 * upper-case one names the same row. Undefined for anything that cannot be an id: it names
 * nothing, and never reaches a query (PostgreSQL refuses a NUL, for one).
 */
export function canonicalRowId(value: string): string | undefined {
  if (value.length !== 36) return undefined;
  const id = value.toLowerCase();
  return UUID.test(id) ? id : undefined;
}
