import type { Request } from 'express';
import type { EventStreams } from '../events/event-streams.ts';
import { HttpProblem } from './problem.ts';

/** Whether the client asked for the event stream rather than the JSON document. */
export function wantsEvents(req: Request): boolean {
  // Offered with its charset, so that an Accept that names one (text/event-stream;charset=utf-8) matches too.
  return req.accepts(['application/json', 'text/event-stream; charset=utf-8']) === 'text/event-stream; charset=utf-8';
}

/** A 503 when this process holds as many event streams as it allows. */
export function refuseWhenStreamsFull(streams: EventStreams): void {
  if (streams.full) {
    throw new HttpProblem(503, `This server holds as many event streams as it allows (${streams.max}); try again shortly.`, { 'Retry-After': '5' });
  }
}
