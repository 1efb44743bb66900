import { ACTIVE_STATUSES } from '../core/statuses.ts';
import { DOWNLOAD_QUEUE, JOB_TABLE, QUEUE_SCHEMA } from '../queue/index.ts';

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
const QUEUE_TABLE = `${QUEUE_SCHEMA}.queue`;
const JOB_NOW = `${QUEUE_SCHEMA}.job_now()`;
/** The channel pg-boss's workers listen on for new jobs, named as pg-boss names it. */
const JOB_CHANNEL = `('pgboss_' || left(encode(sha224('${QUEUE_SCHEMA}'::bytea), 'hex'), 24))`;

/**
 * Inserts the downloads of $1 (a JSON array of NewDownload, each created and updated at $2) with a
 * job for each, and returns their rows. $3 is a JSON array of `{owner, limit}`: of a limited
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
                "audioFormat" text, subtitles text[], "callbackState" callback_state, "linkBase" text,
                "idempotencyKey" text, "requestHash" text)) WITH ORDINALITY AS a),
     bound AS (SELECT * FROM json_to_recordset($3::json) AS b(owner text, "limit" int)),
     active AS (
       SELECT owner, count(*) AS active FROM downloads
        WHERE owner IN (SELECT owner FROM bound) AND status = ANY(${ACTIVE}) GROUP BY owner),
     created AS (
       INSERT INTO downloads (id, owner, url, quality, requested_filename, callback_url, mode, audio_format, subtitles,
                              callback_state, link_base, idempotency_key, request_hash, created_at, updated_at)
       SELECT a.id, a.owner, a.url, a.quality, a."requestedFilename", a."callbackUrl", a.mode, a."audioFormat", a.subtitles,
              a."callbackState", a."linkBase", a."idempotencyKey", a."requestHash", $2::timestamptz, $2::timestamptz
         FROM asked a LEFT JOIN bound b ON b.owner = a.owner LEFT JOIN active c ON c.owner = a.owner
        WHERE b."limit" IS NULL OR COALESCE(c.active, 0) + a.place <= b."limit"
        ORDER BY a.ordinality
       RETURNING *),
     jobs AS (
       INSERT INTO ${JOB_TABLE} (name, data, priority, start_after, created_on, expire_seconds, deletion_seconds, keep_until,
                              retry_limit, retry_delay, retry_backoff, retry_delay_max, policy, dead_letter, heartbeat_seconds,
                              blocked, blocking, pending_dependencies)
       SELECT q.name, jsonb_build_object('download_id', d.id), 0, ${JOB_NOW}, ${JOB_NOW}, q.expire_seconds, q.deletion_seconds,
              ${JOB_NOW} + q.retention_seconds * interval '1s', q.retry_limit, q.retry_delay, COALESCE(q.retry_backoff, false),
              q.retry_delay_max, q.policy, q.dead_letter, q.heartbeat_seconds, false, false, 0
         FROM created d LEFT JOIN ${QUEUE_TABLE} q ON q.name = '${DOWNLOAD_QUEUE}'
       RETURNING 1),
     woken AS (
       SELECT pg_notify(${JOB_CHANNEL}, '${DOWNLOAD_QUEUE}') FROM ${QUEUE_TABLE}
        WHERE name = '${DOWNLOAD_QUEUE}' AND notify AND EXISTS (SELECT FROM jobs))
SELECT * FROM created WHERE (SELECT count(*) FROM woken) >= 0`;
