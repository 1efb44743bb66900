import { PrismaPg } from '@prisma/adapter-pg';
import {
  bindMigrationAwareSqlAdapterFactory,
  ColumnTypeEnum,
  type SqlDriverAdapter,
  type SqlQueryable,
  type SqlResultSet,
  type Transaction,
} from '@prisma/driver-adapter-utils';
import pg from 'pg';

// The schema engine reads PostgreSQL's catalogs, whose one-byte `"char"` columns (such as
// pg_constraint.contype) the Prisma pg adapter refuses to type, and which the engine reads as
// characters. So the pool relabels them as text, which gets them through the adapter, and the
// adapter's results then type those columns as characters again. Both halves matter: PostgreSQL
// 18 lists NOT NULL constraints in pg_constraint, so every schema it describes has such rows.

const CHAR_OID = 18;
const TEXT_OID = 25;

/** The positions of the `"char"` columns of a result, by its rows, which the adapter passes on as they are. */
const charColumns = new WeakMap<unknown[], number[]>();

function relabelCatalogChars<R extends pg.QueryResult>(result: R): R {
  const positions: number[] = [];
  (result.fields ?? []).forEach((field, position) => {
    if (field.dataTypeID !== CHAR_OID) return;
    field.dataTypeID = TEXT_OID;
    positions.push(position);
  });
  if (positions.length) charColumns.set(result.rows, positions);
  return result;
}

// The adapter only uses the promise forms; pg's own callback calls pass through untouched.
class SchemaEnginePool extends pg.Pool {
  override query(...args: unknown[]): never {
    const result = (super.query as (...a: unknown[]) => unknown).apply(this, args);
    return (result instanceof Promise ? result.then(relabelCatalogChars) : result) as never;
  }

  override connect(...args: unknown[]): never {
    const result = (super.connect as (...a: unknown[]) => unknown).apply(this, args);
    if (!(result instanceof Promise)) return result as never;
    return result.then((client: pg.PoolClient) => {
      const query = client.query.bind(client) as (...a: unknown[]) => unknown;
      client.query = ((...queryArgs: unknown[]) => {
        const queried = query(...queryArgs);
        return queried instanceof Promise ? queried.then(relabelCatalogChars) : queried;
      }) as never;
      return client;
    }) as never;
  }
}

function retypeCatalogChars(result: SqlResultSet): SqlResultSet {
  for (const position of charColumns.get(result.rows) ?? []) result.columnTypes[position] = ColumnTypeEnum.Character;
  return result;
}

function withCatalogChars<Q extends SqlQueryable>(queryable: Q): Q {
  const queryRaw = queryable.queryRaw.bind(queryable);
  queryable.queryRaw = async (query) => retypeCatalogChars(await queryRaw(query));
  return queryable;
}

/**
 * The pg adapter runs a migration script by splitting it at every `;`, which cuts a function body
 * (and a comment) in pieces; PostgreSQL's simple query protocol takes the whole script at once, as
 * `psql -f` would, in one implicit transaction.
 */
function withWholeScripts<A extends SqlDriverAdapter>(adapter: A): A {
  const pgAdapter = adapter as unknown as { underlyingDriver(): pg.Pool; onError(error: unknown): never };
  adapter.executeScript = async (script) => {
    try {
      await pgAdapter.underlyingDriver().query(script);
    } catch (error) {
      pgAdapter.onError(error);
    }
  };
  return adapter;
}

function adapterWithCatalogChars<A extends SqlDriverAdapter>(adapter: A): A {
  const startTransaction = adapter.startTransaction.bind(adapter);
  adapter.startTransaction = async (isolationLevel) => withCatalogChars<Transaction>(await startTransaction(isolationLevel));
  return withCatalogChars(adapter);
}

/** The driver adapter the schema engine is given for `databaseUrl`, and how to close its pool. */
export function schemaEngineAdapter(databaseUrl: string) {
  const pool = new SchemaEnginePool({ connectionString: databaseUrl, max: 2 });
  const factory = new PrismaPg(pool);
  const connect = factory.connect.bind(factory);
  const connectToShadowDb = factory.connectToShadowDb.bind(factory);
  factory.connect = async () => withWholeScripts(adapterWithCatalogChars(await connect()));
  factory.connectToShadowDb = async () => withWholeScripts(adapterWithCatalogChars(await connectToShadowDb()));
  return { adapter: bindMigrationAwareSqlAdapterFactory(factory), end: () => pool.end() };
}
