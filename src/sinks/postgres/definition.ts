// The postgres sink's definition: its flags, its config section, and how it opens (registry.ts lists it). The
// driver is loaded only by open(): the other sinks' runs, and --help, never load it.
import { pgUrlHoldsPassword, redactPgUrl } from '../../pg-url.js';
import { defineSink } from '../definition.js';

interface PostgresOptions {
  /** --pg-url, and the variable it came from (undefined: the command line, where a password is refused). */
  url?: string;
  urlFrom?: string;
  table?: string;
  createTable: boolean;
  columns?: Record<string, string>;
}

/** A table of the user's, one row per email. */
export const postgres = defineSink({
  name: 'postgres',
  summary:
    'upsert into a table of yours (--pg-url, --table) by its unique email index; password from PGPASSWORD, ~/.pgpass or LEADLEDGER_PG_URL',
  docs: {
    sends:
      "one transaction per batch into your table: `INSERT ... ON CONFLICT (email) DO NOTHING`, or an update of the person's row with `--existing update` (below)",
    batch: '1000',
    inDoubt: 'looked up by email, a batch per query',
  },
  examples: ['PGPASSWORD=... leadledger push events.jsonl --sink postgres --pg-url postgres://app@db.example.com/crm'],
  flags: [
    {
      flags: '--pg-url <url>',
      description:
        'postgres sink: postgres://user@host:port/database, without a password (that comes from PGPASSWORD, ~/.pgpass, or a URL in LEADLEDGER_PG_URL or DATABASE_URL)',
      env: 'LEADLEDGER_PG_URL',
    },
    {
      flags: '--table <name>',
      // No commander default: a flag's default would hide the config's sinks.postgres.table.
      description:
        "postgres sink: the table leads go into, by its unique index on email (schema.table allowed; default: the config's sinks.postgres.table, else leads)",
    },
    {
      flags: '--create-table',
      description: 'postgres sink: create the table when it does not exist (the CREATE TABLE is printed)',
    },
  ],
  // Lead field (email, name, ..., created_at, or a custom field) → column of the table.
  // pgUrl and table: where leads go when the flags (and LEADLEDGER_PG_URL) do not say; the URL without a password.
  configSchema: (z) =>
    z
      .object({
        pgUrl: z
          .string()
          .min(1)
          .refine((u) => !pgUrlHoldsPassword(u), {
            message: 'holds a password: secrets never go in the config (PGPASSWORD, ~/.pgpass, or LEADLEDGER_PG_URL)',
          })
          .optional(),
        table: z.string().min(1).optional(),
        columns: z.record(z.string().min(1), z.string().min(1)).optional(),
      })
      .strict(),
  read: ({ flags, fromEnv, config }): PostgresOptions => ({
    url: typeof flags.pgUrl === 'string' ? flags.pgUrl : config?.pgUrl,
    urlFrom: fromEnv.pgUrl,
    table: typeof flags.table === 'string' ? flags.table : config?.table,
    createTable: flags.createTable === true,
    columns: config?.columns,
  }),
  shown: (o) => ({
    pgUrl: o.url ? redactPgUrl(o.url) : undefined,
    table: o.table,
    createTable: o.createTable || undefined,
  }),
  // A --pg-url from the environment comes from there again; one given on the command line is repeated.
  replayArgs: (o) => [
    ...(o.url && o.urlFrom === undefined ? ['--pg-url', redactPgUrl(o.url)] : []),
    ...(o.table ? ['--table', o.table] : []),
  ],
  async open(o, ctx) {
    const { PostgresSink } = await import('./sink.js');
    const sink = await PostgresSink.open({
      url: o.url,
      urlFrom: o.urlFrom,
      env: ctx.env,
      table: o.table,
      createTable: o.createTable && !ctx.checkOnly,
      existing: ctx.existing,
      config: o.columns ? { columns: o.columns } : undefined,
      customFields: [...ctx.customFields],
      poolSize: ctx.concurrency,
      timeoutMs: ctx.transport.timeoutMs,
      maxRetries: ctx.transport.maxRetries,
      baseDelayMs: ctx.transport.baseDelayMs,
      breaker: ctx.transport.breaker,
      warn: ctx.warn,
    });
    return { sink };
  },
});
