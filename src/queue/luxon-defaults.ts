import { createRequire } from 'node:module';

// pg-boss computes its schedules' dates with cron-parser, which uses luxon. Untold, luxon asks Intl
// for the machine's locale and time zone (`new Intl.DateTimeFormat()`) the first time it makes a
// date, and that first Intl object maps in ICU's locale and zone data for good (docs/performance.md
// says how much). pg-boss always names a schedule's zone
// (UTC unless the schedule says otherwise) and cron-parser moves every date into it, so luxon's own
// defaults change no date it computes; told them, it never asks Intl.

type LuxonSettings = { defaultLocale: string; defaultZone: string };

/**
 * Gives luxon its locale and zone before pg-boss starts. luxon as cron-parser loads it: its
 * CommonJS build (an ES import would load the other build, a second copy with settings of its
 * own); test/luxon-defaults.test.ts checks that it is cron-parser's copy.
 */
export function spareIntlData(): void {
  const { Settings } = createRequire(import.meta.url)('luxon') as { Settings: LuxonSettings };
  Settings.defaultLocale = 'en-US';
  Settings.defaultZone = 'UTC';
}
