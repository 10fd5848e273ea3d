import { sql, type Expression, type SqlBool } from 'kysely';

/**
 * "After this row" for a list ordered by (`sortColumn`, `idColumn`), both in `direction`: one
 * row-value comparison, which both databases answer by seeking the list's index.
 */
export function keysetAfter(
  sortColumn: string,
  idColumn: string,
  direction: 'asc' | 'desc',
  after: { readonly value: number | string; readonly id: string },
): Expression<SqlBool> {
  const operator = sql.raw(direction === 'desc' ? '<' : '>');
  return sql<SqlBool>`(${sql.ref(sortColumn)}, ${sql.ref(idColumn)}) ${operator} (${after.value}, ${after.id})`;
}
