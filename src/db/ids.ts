const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Whether a path parameter can be one of our row ids (`crypto.randomUUID()`): anything else names
 * nothing, and never reaches a query (PostgreSQL refuses a NUL, for one).
 */
export function isRowId(value: string): boolean {
  return UUID.test(value);
}
