import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';

// pg-boss's schedules go through cron-parser and luxon; told a locale and a zone, luxon never asks
// Intl for the machine's, which would map in 5 MB of ICU data for good.

const run = promisify(execFile);
const require = createRequire(import.meta.url);

/** How many Intl.DateTimeFormat objects a bare Node process makes while cron-parser computes pg-boss's kind of schedule, with or without the defaults. */
async function dateFormatsMade(withDefaults: boolean): Promise<number> {
  const script = `
    let made = 0;
    const Original = Intl.DateTimeFormat;
    Intl.DateTimeFormat = function (...args) { made++; return new Original(...args); };
    Intl.DateTimeFormat.prototype = Original.prototype;
    const { spareIntlData } = await import(${JSON.stringify(path.resolve('dist/src/queue/luxon-defaults.js'))});
    if (${withDefaults}) spareIntlData();
    const { CronExpressionParser } = await import(${JSON.stringify(require.resolve('cron-parser', { paths: [path.dirname(require.resolve('pg-boss'))] }))});
    CronExpressionParser.parse('*/5 * * * *', { tz: 'UTC', currentDate: new Date() }).next();
    console.log(made);
  `;
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script]);
  return Number(stdout.trim());
}

test('when the service has given luxon its defaults, then the luxon it set is the copy cron-parser loads under pg-boss', () => {
  const cronParser = require.resolve('cron-parser', { paths: [path.dirname(require.resolve('pg-boss'))] });
  expect(createRequire(cronParser).resolve('luxon')).toBe(require.resolve('luxon'));
});

test('when cron-parser computes a schedule after the defaults are given, then no Intl.DateTimeFormat is made; without them, one is', async () => {
  expect({ with: await dateFormatsMade(true), without: (await dateFormatsMade(false)) > 0 }).toEqual({ with: 0, without: true });
});
