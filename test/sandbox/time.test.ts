import { describe, expect, it } from 'vitest';
import {
  formattedRanges,
  fromZoned,
  mdy,
  parseTime12,
  time12,
  zonedIso,
} from '../../sandbox/time.js';

/** Intl is the oracle: the cached offsets must agree with it at every instant, DST included. */
function intlIso(ms: number, timeZone: string): string {
  const f = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  });
  const o: Record<string, string> = {};
  for (const p of f.formatToParts(new Date(ms))) o[p.type] = p.value;
  return `${o.year}-${o.month}-${o.day}T${o.hour}:${o.minute}:${o.second}`;
}

describe('sandbox time formats', () => {
  it.each(['America/New_York', 'Australia/Lord_Howe', 'America/St_Johns', 'Asia/Kolkata'])(
    'agrees with Intl around the 2026 transitions in %s',
    (zone) => {
      const mismatches: string[] = [];
      for (const month of [2, 3, 9, 10]) {
        const start = Date.UTC(2026, month, 1);
        for (let ms = start; ms < start + 31 * 86_400_000; ms += 17 * 60_000 + 7_000) {
          if (zonedIso(ms, zone).slice(0, 19) !== intlIso(ms, zone))
            mismatches.push(new Date(ms).toISOString());
        }
      }
      expect(mismatches).toEqual([]);
    },
  );

  it.each(['America/New_York', 'Europe/Berlin', 'Australia/Lord_Howe', 'Asia/Kolkata'])(
    'turns wall-clock times in %s into the instants Intl shows them at, gaps aside',
    (zone) => {
      const mismatches: string[] = [];
      for (let day = 0; day < 400; day += 1) {
        const d = new Date(Date.UTC(2025, 0, 1 + day));
        const date = { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate() };
        const ymdText = d.toISOString().slice(0, 10);
        for (const minutes of [0, 90, 150, 600, 1439]) {
          const wanted = `${ymdText}T${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}:00`;
          if (intlIso(fromZoned(date, minutes, zone), zone) !== wanted) mismatches.push(wanted);
        }
      }
      // Only a time that the clock skips (2:30 AM on a spring-forward day) has no instant.
      expect(mismatches.every((text) => text.endsWith('T02:30:00'))).toBe(true);
      expect(mismatches.length).toBeLessThanOrEqual(1);
    },
  );

  it('writes offsets, MM-DD-YYYY, 12-hour times and formatted ranges as the service does', () => {
    const tz = 'America/New_York';
    const start = fromZoned({ year: 2026, month: 6, day: 13 }, parseTime12('2:00 PM') ?? 0, tz);
    expect(zonedIso(start, tz)).toBe('2026-06-13T14:00:00-04:00');
    expect(zonedIso(start + 183 * 86_400_000, tz)).toBe('2026-12-13T13:00:00-05:00');
    expect(mdy(start, tz)).toBe('06-13-2026');
    expect(time12(start, tz)).toBe('2:00 PM');
    expect(formattedRanges(start, start + 3 * 3_600_000, tz)).toEqual({
      formatted_date_range: 'Sat, Jun 13, 2026',
      formatted_time_range: '2:00 PM - 5:00 PM',
      formatted_datetime_range: 'Sat, Jun 13, 2026 2:00 PM - 5:00 PM',
    });
    expect(formattedRanges(null, null, tz).formatted_date_range).toBe('');
  });
});
