import { readFile } from 'node:fs/promises';
import { formatInterval, formatRelative, ProblemError, type Subscription } from '../client/index.ts';
import { answered, clientOf, template, type Connection, type Template, type Terminal } from './commands.ts';

// `vds subscribe`, `vds subscriptions`, `vds unsubscribe`: following a channel, a playlist or a
// feed, whose new entries the service downloads on its own, each check's into one collection.

/** The longest archive text the service takes (the contract's `maxLength` of `archive`). */
const MAX_ARCHIVE_CHARACTERS = 1_048_576;
/** The most subscriptions one list request gives; the table pages through them all. */
const LIST_PAGE = 100;

export type SubscribeOptions = Template & {
  every?: number;
  backfill?: number;
  match?: string;
  name?: string;
  /** A yt-dlp `--download-archive` file whose entries count as seen. */
  archive?: string;
};

/** The archive file's text, or an error that names the file and what is wrong with it. */
async function archiveText(file: string): Promise<string> {
  const text = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
    throw new Error(`Cannot read the archive file ${file} (${error.code ?? error.message}).`);
  });
  if (text.length > MAX_ARCHIVE_CHARACTERS)
    throw new Error(`The archive file ${file} is larger than the ${MAX_ARCHIVE_CHARACTERS} characters the service takes.`);
  return text;
}

/** `vds subscribe URL`: its id on stdout, what it will do on stderr. */
export async function subscribe(connection: Connection, url: string, options: SubscribeOptions, { out, err, signal }: Terminal): Promise<void> {
  const archive = options.archive !== undefined ? { archive: await archiveText(options.archive) } : {};
  const created = await clientOf(connection)
    .subscriptions.create(
      {
        url,
        ...(options.every !== undefined ? { interval_seconds: options.every } : {}),
        ...(options.backfill !== undefined ? { backfill: options.backfill } : {}),
        ...(options.match !== undefined ? { title_contains: options.match } : {}),
        ...(options.name !== undefined ? { name: options.name } : {}),
        ...archive,
        ...template(options),
      },
      { signal: answered(signal) },
    )
    .catch((error: unknown) => {
      // The one the caller already has is named whatever the server's sentence says.
      const existing = error instanceof ProblemError && error.status === 409 ? error : undefined;
      if (existing?.problem.subscription_id) {
        const { subscription_id } = existing.problem;
        throw new ProblemError(409, { ...existing.problem, detail: `Already subscribed to ${url}: subscription ${subscription_id}.` });
      }
      throw error;
    });
  out.write(`${created.id}\n`);
  const every = formatInterval(created.interval_seconds);
  const what = options.backfill ? `its newest ${options.backfill} now, then what is new every ${every}` : `what is new from now on, every ${every}`;
  err.write(`subscribed to ${url}: ${what}; stop with: vds unsubscribe ${created.id}\n`);
}

/** A check time as the table shows it: relative, or `-` when there is none. */
const when = (at: string | null, now: number) => (at ? formatRelative(at, now) : '-');

/** The rows of `vds subscriptions`: a header, then one line each; a failing one's error on a line under it. */
export function subscriptionRows(subscriptions: Subscription[], now = Date.now()): string[] {
  const rows = [
    ['ID', 'STATUS', 'EVERY', 'LAST CHECK', 'NEXT CHECK', 'SEEN', 'NAME OR URL'],
    ...subscriptions.map((subscription) => [
      subscription.id,
      subscription.status,
      formatInterval(subscription.interval_seconds),
      subscription.last_checked_at ? when(subscription.last_checked_at, now) : 'never',
      when(subscription.next_check_at, now),
      String(subscription.seen_count),
      subscription.name ?? subscription.url,
    ]),
  ];
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  const lines = rows.map((row) => row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!))).join('  '));
  // The last error of a failing one goes under its row, indented: the table's columns stay readable.
  return lines.flatMap((line, index) => {
    const error = index > 0 ? subscriptions[index - 1]!.last_error : null;
    return error ? [line, `  last error (${error.code}): ${error.message}`] : [line];
  });
}

/** `vds subscriptions`: every subscription of the caller, newest first. */
export async function subscriptions(connection: Connection, { out, err, signal }: Terminal): Promise<void> {
  const vds = clientOf(connection);
  const all: Subscription[] = [];
  let cursor: string | undefined;
  do {
    const page = await vds.subscriptions.list({ limit: LIST_PAGE, ...(cursor ? { cursor } : {}) }, { signal: answered(signal) });
    all.push(...page.items);
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
  if (!all.length) {
    err.write('no subscriptions; follow a channel, playlist or feed with: vds subscribe URL --every 1h\n');
    return;
  }
  out.write(`${subscriptionRows(all).join('\n')}\n`);
}

/** `vds unsubscribe ID`: no check runs after it; what it downloaded stays. */
export async function unsubscribe(connection: Connection, id: string, { out, signal }: Terminal): Promise<void> {
  const removed = await clientOf(connection).subscriptions.remove(id, { signal: answered(signal) });
  out.write(`${id}: unsubscribed from ${removed.name ?? removed.url}; its downloads and collections stay\n`);
}
