// Rows read as SQL (`RETURNING *`, `SELECT *`) name their columns as the tables do; Prisma's rows
// name each field after its column in camelCase (`created_at` is `createdAt`).

const fieldNames = new Map<string, string>();

/** A column's name in camelCase, as the row's field is named; worked out once for each column. */
function fieldOf(column: string): string {
  let field = fieldNames.get(column);
  if (field === undefined) {
    field = column.replace(/_([a-z0-9])/g, (_, letter: string) => letter.toUpperCase());
    fieldNames.set(column, field);
  }
  return field;
}

/** The row of `columns` with Prisma's field names. */
export function camelRow<T>(columns: Record<string, unknown>): T {
  const row: Record<string, unknown> = {};
  for (const column in columns) row[fieldOf(column)] = columns[column];
  return row as T;
}
