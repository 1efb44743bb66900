import pg from 'pg';

// LISTEN needs a connection of its own, held for as long as the process listens. Its error
// listener stays on for the connection's whole life, ending included: a database that goes away
// sends its reason on every connection, and one heard by nobody would end the process.

const RECONNECT_MS = 1_000;

export type ListenOptions = {
  /** Names the connection in pg_stat_activity. */
  applicationName: string;
  onNotification(payload: string): void;
  /** The connection was lost and another listens now: what was announced meanwhile was missed. */
  onReconnect(): void;
};

export type Listening = { close(): Promise<void> };

/**
 * Listens on `channel` until closed; resolves once the first connection listens. A lost connection
 * (the database restarted, its backend terminated) is replaced, once a second until one listens.
 */
export async function listen(databaseUrl: string, channel: string, options: ListenOptions): Promise<Listening> {
  const listener = new Listener(databaseUrl, channel, options);
  await listener.connect();
  return { close: () => listener.close() };
}

class Listener {
  private client: pg.Client | undefined;
  private retry: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly databaseUrl: string,
    private readonly channel: string,
    private readonly options: ListenOptions,
  ) {}

  async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.databaseUrl, application_name: this.options.applicationName });
    client.on('error', () => this.lost(client));
    client.on('end', () => this.lost(client));
    client.on('notification', (message) => {
      if (message.channel === this.channel && message.payload !== undefined) this.options.onNotification(message.payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${client.escapeIdentifier(this.channel)}`);
    } catch (error) {
      await client.end().catch(() => {});
      throw error;
    }
    if (this.closed) {
      await client.end().catch(() => {});
      return;
    }
    this.client = client;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => {});
  }

  private lost(client: pg.Client): void {
    if (this.closed || this.client !== client) return;
    this.client = undefined;
    client.end().catch(() => {});
    this.reconnect();
  }

  private reconnect(): void {
    this.retry = setTimeout(() => {
      this.connect().then(
        () => {
          if (!this.closed) this.options.onReconnect();
        },
        () => {
          if (!this.closed) this.reconnect();
        },
      );
    }, RECONNECT_MS);
  }
}
