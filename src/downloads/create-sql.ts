import { ACTIVE_STATUSES } from '../core/statuses.ts';
import { DOWNLOAD_QUEUE } from '../queue/index.ts';
import { queueJobs } from '../queue/job-sql.ts';

// The statements that create downloads, as SQL run through pg: through Prisma and pg-boss's
// insert, a create cost the service more CPU than everything else it does for the request. A
// batch is one statement (with a bound on active downloads, one more before it, for the locks).

/** Advisory locks taken on an owner's name (two-key form, so they never meet pg-boss's one-key locks). */
const OWNER_LOCK_CLASS = 0x76647331;

/**
 * Locks the owners named in $1 for the transaction, in the order given: sorted, so that two
 * transactions never wait for each other's. A statement of its own before the insert, which must
 * count active downloads in a snapshot taken after the lock, or it would miss those the previous
 * holder wrote.
 */
export const LOCK_OWNERS = `SELECT pg_advisory_xact_lock(${OWNER_LOCK_CLASS}, hashtext(owner)) FROM unnest($1::text[]) AS owner`;

const ACTIVE = `ARRAY[${ACTIVE_STATUSES.map((status) => `'${status}'`).join(', ')}]::download_status[]`;

/**
 * What counts against an owner's MAX_ACTIVE_DOWNLOADS_PER_KEY, for the owners of the CTE `bound`:
 * its downloads not yet ended that belong to no collection, and its collections not yet ended
 * (each one, whatever its size). Runs after LOCK_OWNERS.
 */
export const ACTIVE_PER_OWNER = `
       SELECT owner, sum(n) AS active FROM (
         SELECT owner, count(*) AS n FROM downloads
          WHERE owner IN (SELECT owner FROM bound) AND status = ANY(${ACTIVE}) AND collection_id IS NULL GROUP BY owner
         UNION ALL
         SELECT owner, count(*) FROM collections
          WHERE owner IN (SELECT owner FROM bound) AND status IN ('expanding', 'running') GROUP BY owner) counted
        GROUP BY owner`;

/**
 * Inserts the downloads of $1 (a JSON array of NewDownload, each created and updated at $2) with a
 * job for each, and returns their rows. A collection's child may come `held` (its job is made when
 * a place frees up) or refused (`errorCode`: it is made `failed`, with no job). $3 is a JSON array of `{owner, limit}`: of a limited
 * owner's downloads, in order, those that would take its active downloads past the limit are left
 * out.
 *
 * The job is the one pg-boss's insert() writes for `{data: {download_id}}` on our queue (its
 * `insertJobs`): the queue's settings, due at once, and one NOTIFY that wakes the workers when the
 * queue asks for it. Without the queue, the job's name is null and the whole statement fails, so
 * that there is never a download without its job.
 */
export const INSERT_DOWNLOADS = `
WITH asked AS (
       SELECT a.*, row_number() OVER (PARTITION BY a.owner ORDER BY a.ordinality) AS place
         FROM ROWS FROM (json_to_recordset($1::json) AS (
                id uuid, owner text, url text, quality text, "requestedFilename" text, "callbackUrl" text, mode text,
                "audioFormat" text, subtitles text[], "clipStartSeconds" double precision,
                "clipEndSeconds" double precision, "callbackState" callback_state, "linkBase" text,
                "idempotencyKey" text, "requestHash" text, "collectionId" uuid, "collectionIndex" int, held boolean,
                "errorCode" text, "errorMessage" text)) WITH ORDINALITY AS a),
     bound AS (SELECT * FROM json_to_recordset($3::json) AS b(owner text, "limit" int)),
     active AS (${ACTIVE_PER_OWNER}),
     created AS (
       INSERT INTO downloads (id, owner, url, quality, requested_filename, callback_url, mode, audio_format, subtitles,
                              clip_start_seconds, clip_end_seconds, callback_state, link_base, idempotency_key, request_hash, collection_id, collection_index,
                              status, error_code, error_message, error_retryable, created_at, updated_at)
       SELECT a.id, a.owner, a.url, a.quality, a."requestedFilename", a."callbackUrl", a.mode, a."audioFormat", a.subtitles,
              a."clipStartSeconds", a."clipEndSeconds", a."callbackState", a."linkBase", a."idempotencyKey", a."requestHash", a."collectionId", a."collectionIndex",
              CASE WHEN a."errorCode" IS NULL THEN 'queued' ELSE 'failed' END::download_status, a."errorCode", a."errorMessage",
              CASE WHEN a."errorCode" IS NULL THEN NULL ELSE false END, $2::timestamptz, $2::timestamptz
         FROM asked a LEFT JOIN bound b ON b.owner = a.owner LEFT JOIN active c ON c.owner = a.owner
        WHERE b."limit" IS NULL OR COALESCE(c.active, 0) + a.place <= b."limit"
        ORDER BY a.ordinality
       RETURNING *),
${queueJobs(
  DOWNLOAD_QUEUE,
  "jsonb_build_object('download_id', s.id)",
  `(SELECT d.id FROM created d JOIN asked a ON a.id = d.id WHERE d.status = 'queued' AND a.held IS NOT TRUE) s`,
)}
SELECT * FROM created WHERE (SELECT count(*) FROM woken) >= 0`;

/** Gives the downloads of $1 (ids of a collection's held children) their jobs; returns how many. */
export const RELEASE_DOWNLOADS = `
WITH ${queueJobs(DOWNLOAD_QUEUE, "jsonb_build_object('download_id', s.id)", '(SELECT unnest($1::uuid[]) AS id) s')}
SELECT count(*)::int AS released FROM jobs WHERE (SELECT count(*) FROM woken) >= 0`;
