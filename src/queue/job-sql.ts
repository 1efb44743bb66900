import { JOB_TABLE, QUEUE_SCHEMA } from './index.ts';

// Jobs written by SQL in the transaction of the rows they are for, as pg-boss's insert() writes
// them (its `insertJobs`): through pg-boss a create cost more CPU than everything else it does.

const QUEUE_TABLE = `${QUEUE_SCHEMA}.queue`;
const JOB_NOW = `${QUEUE_SCHEMA}.job_now()`;
/** The channel pg-boss's workers listen on for new jobs, named as pg-boss names it. */
const JOB_CHANNEL = `('pgboss_' || left(encode(sha224('${QUEUE_SCHEMA}'::bytea), 'hex'), 24))`;

/**
 * Two CTEs, `jobs` and `woken`: a job on `queue` with the JSON `data` (an expression over the rows
 * of `source`, a relation aliased `s`) for each row, with the queue's settings and due at `due` (an
 * expression too; at once unless given), kept the queue's retention beyond that, and
 * one NOTIFY that wakes the workers when the queue asks for it. Without the queue, the job's name
 * is null and the whole statement fails, so that there is never a row without its job. A
 * statement using them must read `woken` (`(SELECT count(*) FROM woken) >= 0`), or it is not run.
 */
export function queueJobs(queue: string, data: string, source: string, due = JOB_NOW): string {
  return `
     jobs AS (
       INSERT INTO ${JOB_TABLE} (name, data, priority, start_after, created_on, expire_seconds, deletion_seconds, keep_until,
                              retry_limit, retry_delay, retry_backoff, retry_delay_max, policy, dead_letter, heartbeat_seconds,
                              blocked, blocking, pending_dependencies)
       SELECT q.name, ${data}, 0, ${due}, ${JOB_NOW}, q.expire_seconds, q.deletion_seconds,
              ${due} + q.retention_seconds * interval '1s', q.retry_limit, q.retry_delay, COALESCE(q.retry_backoff, false),
              q.retry_delay_max, q.policy, q.dead_letter, q.heartbeat_seconds, false, false, 0
         FROM ${source} LEFT JOIN ${QUEUE_TABLE} q ON q.name = '${queue}'
       RETURNING 1),
     woken AS (
       SELECT pg_notify(${JOB_CHANNEL}, '${queue}') FROM ${QUEUE_TABLE}
        WHERE name = '${queue}' AND notify AND EXISTS (SELECT FROM jobs))`;
}
