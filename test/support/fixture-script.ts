// Scripted misbehaviour of a fixture route: each request takes the next step, until the script
// runs out and the route serves its content normally.

/** One request's worth of scripted behaviour; a bare number is `{ status }`. */
export type Step =
  | number
  | {
      /** Answer with this status (and a short text body) instead of the content. */
      status?: number;
      headers?: Record<string, string>;
      body?: string;
      /** Wait before answering, e.g. to trip a header timeout. */
      delayMs?: number;
      /** Send this many body bytes under the full Content-Length, then close the connection. */
      resetAfterBytes?: number;
      /** Send this many body bytes, then send nothing more while keeping the connection open. */
      stallAfterBytes?: number;
      /** How many requests this step answers (default 1; Infinity for all later ones). */
      times?: number;
    };

export type ScriptOptions = {
  /** Statuses answered, one per request, before the content is served (e.g. [503, 503]). */
  statuses?: number[];
  /** The first GET that gets content is cut after this many bytes. */
  resetAfterBytes?: number;
  /** The first GET that gets content stalls after this many bytes. */
  stallAfterBytes?: number;
  /** Steps played before `statuses` and the shortcuts above, one per request. */
  script?: Step[];
};

export type ScriptedStep = Exclude<Step, number>;
export type ScriptEntry = { step: ScriptedStep; remaining: number };

export function scriptFrom(options: ScriptOptions): ScriptEntry[] {
  const steps: Step[] = [...(options.script ?? []), ...(options.statuses ?? [])];
  if (options.resetAfterBytes !== undefined) steps.push({ resetAfterBytes: options.resetAfterBytes });
  if (options.stallAfterBytes !== undefined) steps.push({ stallAfterBytes: options.stallAfterBytes });
  return steps.map((step) => {
    const normal = typeof step === 'number' ? { status: step } : step;
    return { step: normal, remaining: normal.times ?? 1 };
  });
}

export function takeStep(script: ScriptEntry[], method: string): ScriptedStep | undefined {
  const next = script[0];
  if (!next) return undefined;
  // A HEAD has no body to cut, so it must not use up a step meant for the body of a later GET.
  if (method === 'HEAD' && next.step.status === undefined) return undefined;
  next.remaining -= 1;
  if (next.remaining <= 0) script.shift();
  return next.step;
}
