import pg from 'pg';
import type { CollectionStatus } from '../collections/repository.ts';
import type { DownloadStatus } from '../core/statuses.ts';

// A trigger announces every change of a download or a collection on the channel `download_changes`
// (see the migrations download_events and collections), whichever process made it. One connection per process listens and
// hands each announcement to whoever in the process follows that download: event streams, and the
// worker running it (which must stop when it is cancelled).

const CHANNEL = 'download_changes';
const RECONNECT_MS = 1_000;

/** A download's or a collection's change; a child's names its collection, whose followers hear it too. */
export type Change = { id: string; status: DownloadStatus | CollectionStatus; collection_id?: string | null };
/**
 * Called with each change of the download followed, or with null when announcements may have been
 * missed (the connection was lost and is back): the follower then reads the download again.
 */
export type ChangeListener = (change: Change | null) => void;

function parseChange(payload: string | undefined): Change | null {
  try {
    const change = JSON.parse(payload ?? '') as Partial<Change>;
    return typeof change.id === 'string' && typeof change.status === 'string' ? (change as Change) : null;
  } catch {
    return null;
  }
}

export class DownloadChanges {
  private readonly listeners = new Map<string, Set<ChangeListener>>();
  private client: pg.Client | undefined;
  private retry: NodeJS.Timeout | undefined;
  private stopped = false;

  private constructor(private readonly databaseUrl: string) {}

  /** Listens from now on; resolves once the first connection listens. */
  static async start(databaseUrl: string): Promise<DownloadChanges> {
    const changes = new DownloadChanges(databaseUrl);
    await changes.connect();
    return changes;
  }

  /** Follows download `id` until the returned function is called. */
  follow(id: string, listener: ChangeListener): () => void {
    let set = this.listeners.get(id);
    if (!set) this.listeners.set(id, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.listeners.get(id) === set) this.listeners.delete(id);
    };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => {});
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.databaseUrl, application_name: 'download-changes' });
    // A lost connection (the database restarted) is replaced; until then followers hear nothing,
    // and are told to read again once it is back.
    client.on('error', () => this.lost(client));
    client.on('end', () => this.lost(client));
    client.on('notification', (message) => {
      const change = message.channel === CHANNEL ? parseChange(message.payload) : null;
      if (change) {
        this.tell(change.id, change);
        if (typeof change.collection_id === 'string') this.tell(change.collection_id, change);
      }
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
    } catch (error) {
      await client.end().catch(() => {});
      throw error;
    }
    if (this.stopped) {
      await client.end();
      return;
    }
    this.client = client;
  }

  private lost(client: pg.Client): void {
    if (this.stopped || this.client !== client) return;
    this.client = undefined;
    client.end().catch(() => {});
    this.reconnect();
  }

  private reconnect(): void {
    this.retry = setTimeout(() => {
      this.connect().then(
        () => {
          for (const id of [...this.listeners.keys()]) this.tell(id, null);
        },
        () => {
          if (!this.stopped) this.reconnect();
        },
      );
    }, RECONNECT_MS);
  }

  private tell(id: string, change: Change | null): void {
    for (const listener of [...(this.listeners.get(id) ?? [])]) listener(change);
  }
}
