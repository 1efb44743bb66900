import type { CollectionStatus } from '../collections/repository.ts';
import type { DownloadStatus } from '../core/statuses.ts';
import { listen, type Listening } from '../db/listen.ts';

// A trigger announces every change of a download or a collection on the channel `download_changes`
// (see the migrations download_events and collections), whichever process made it. One connection per process listens and
// hands each announcement to whoever in the process follows that download: event streams, and the
// worker running it (which must stop when it is cancelled).

const CHANNEL = 'download_changes';

/** A download's or a collection's change; a child's names its collection, whose followers hear it too. */
export type Change = { id: string; status: DownloadStatus | CollectionStatus; collection_id?: string | null };
/**
 * Called with each change of the download followed, or with null when announcements may have been
 * missed (the connection was lost and is back): the follower then reads the download again.
 */
export type ChangeListener = (change: Change | null) => void;

function parseChange(payload: string): Change | null {
  try {
    const change = JSON.parse(payload) as Partial<Change>;
    return typeof change.id === 'string' && typeof change.status === 'string' ? (change as Change) : null;
  } catch {
    return null;
  }
}

export class DownloadChanges {
  private readonly listeners = new Map<string, Set<ChangeListener>>();
  private listening: Listening | undefined;

  private constructor() {}

  /** Listens from now on; resolves once the first connection listens. */
  static async start(databaseUrl: string): Promise<DownloadChanges> {
    const changes = new DownloadChanges();
    changes.listening = await listen(databaseUrl, CHANNEL, {
      applicationName: 'download-changes',
      onNotification: (payload) => {
        const change = parseChange(payload);
        if (change) {
          changes.tell(change.id, change);
          if (typeof change.collection_id === 'string') changes.tell(change.collection_id, change);
        }
      },
      // Until then followers heard nothing: they are told to read again.
      onReconnect: () => {
        for (const id of [...changes.listeners.keys()]) changes.tell(id, null);
      },
    });
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
    await this.listening?.close();
  }

  private tell(id: string, change: Change | null): void {
    for (const listener of [...(this.listeners.get(id) ?? [])]) listener(change);
  }
}
