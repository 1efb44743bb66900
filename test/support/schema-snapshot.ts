import pg from 'pg';

// What migrations leave in a database, read from the catalogs in a form that two databases can be
// compared by: everything outside PostgreSQL's own schemas, each definition as PostgreSQL prints it,
// and the migration history without its per-run ids and times. Catalog queries rather than
// pg_dump, whose version would have to match the server's.

export type SchemaSnapshot = Record<'columns' | 'constraints' | 'indexes' | 'types' | 'sequences' | 'routines' | 'triggers' | 'views' | 'history', string[]>;

const userNamespaces = `SELECT oid FROM pg_namespace WHERE nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast') AND nspname NOT LIKE 'pg_temp_%' AND nspname NOT LIKE 'pg_toast_temp_%'`;

const queries: Record<Exclude<keyof SchemaSnapshot, 'history'>, string> = {
  columns: `
    SELECT format('%s.%s.%s %s%s null=%s default=%s identity=%s generated=%s', n.nspname, c.relname, a.attname,
                  format_type(a.atttypid, a.atttypmod), CASE WHEN a.attcollation <> 0 THEN ' collate ' || a.attcollation::regcollation ELSE '' END,
                  NOT a.attnotnull, pg_get_expr(d.adbin, d.adrelid), a.attidentity, a.attgenerated)
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    WHERE n.oid IN (${userNamespaces}) AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND a.attnum > 0 AND NOT a.attisdropped`,
  constraints: `
    SELECT format('%s %s %s', conrelid::regclass, conname, pg_get_constraintdef(oid)) FROM pg_constraint
    WHERE connamespace IN (${userNamespaces})`,
  indexes: `SELECT indexdef FROM pg_indexes WHERE schemaname::regnamespace::oid IN (${userNamespaces})`,
  types: `
    SELECT format('%s %s %s', t.oid::regtype, t.typtype,
                  (SELECT string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder) FROM pg_enum e WHERE e.enumtypid = t.oid))
    FROM pg_type t LEFT JOIN pg_class c ON c.oid = t.typrelid
    WHERE t.typnamespace IN (${userNamespaces}) AND t.typelem = 0 AND (c.oid IS NULL OR c.relkind = 'c')`,
  sequences: `
    SELECT format('%s.%s %s start=%s inc=%s min=%s max=%s cycle=%s', schemaname, sequencename, data_type, start_value,
                  increment_by, min_value, max_value, cycle)
    FROM pg_sequences WHERE schemaname::regnamespace::oid IN (${userNamespaces})`,
  routines: `SELECT pg_get_functiondef(oid) FROM pg_proc WHERE pronamespace IN (${userNamespaces}) AND prokind IN ('f', 'p')`,
  triggers: `
    SELECT pg_get_triggerdef(t.oid) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
    WHERE c.relnamespace IN (${userNamespaces}) AND NOT t.tgisinternal`,
  views: `
    SELECT format('%s %s', c.oid::regclass, pg_get_viewdef(c.oid)) FROM pg_class c
    WHERE c.relnamespace IN (${userNamespaces}) AND c.relkind IN ('v', 'm')`,
};

const history = `
  SELECT format('%s checksum=%s steps=%s finished=%s rolled_back=%s logs=%s', migration_name, checksum, applied_steps_count,
                finished_at IS NOT NULL, rolled_back_at IS NOT NULL, logs)
  FROM _prisma_migrations`;

async function column(client: pg.Client, sql: string): Promise<string[]> {
  const { rows } = await client.query<[string]>({ text: sql, rowMode: 'array' });
  return rows.map(([line]) => line).sort();
}

export async function schemaSnapshot(databaseUrl: string): Promise<SchemaSnapshot> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const snapshot = { history: await column(client, history) } as SchemaSnapshot;
    for (const [part, sql] of Object.entries(queries)) snapshot[part as keyof typeof queries] = await column(client, sql);
    return snapshot;
  } finally {
    await client.end();
  }
}
