import { runTsxScript } from './support/tsx-script.ts';

// The log goes to stdout once per turn of the event loop, not once per line: every write wakes
// whoever reads the pipe, and each request logs a line. Warnings and errors go out at once.

type Line = { msg: string; time: number; arrivedAt: number };

/** Runs `body` in a process of its own, with `log` made as the service makes it; its lines, each with when it reached this end of the pipe. */
async function linesOf(body: string): Promise<Line[]> {
  const script = `import { createLogger } from './src/operations/log.ts';\nconst log = createLogger({ logLevel: 'info', role: 'api' });\n${body}`;
  const lines: Line[] = [];
  let partial = '';
  await runTsxScript(script, (chunk) => {
    const arrivedAt = Date.now();
    const [last, ...whole] = (partial + chunk).split('\n').reverse();
    partial = last!;
    for (const text of whole.reverse()) lines.push({ ...(JSON.parse(text) as { msg: string; time: number }), arrivedAt });
  });
  return lines;
}

/** Keeps the process in the current turn for `ms`. */
const HOLD = (ms: number) => `const until = Date.now() + ${ms}; while (Date.now() < until);`;

test('when lines are logged in one turn, then they reach stdout together when the turn ends, in order', async () => {
  const lines = await linesOf(`for (let i = 0; i < 20; i++) log.info('line ' + i);\n${HOLD(1500)}`);
  expect(lines.map((line) => line.msg)).toEqual(Array.from({ length: 20 }, (_, i) => `line ${i}`));
  for (const line of lines) expect(line.arrivedAt - line.time).toBeGreaterThanOrEqual(1000);
});

test('when a warning is logged, then it and the lines before it go out at once', async () => {
  const lines = await linesOf(`log.info('before');\nlog.warn('warned');\n${HOLD(1500)}\nlog.info('after');`);
  expect(lines.map((line) => line.msg)).toEqual(['before', 'warned', 'after']);
  const warned = lines[1]!;
  expect(warned.arrivedAt - warned.time).toBeLessThan(1000);
});
