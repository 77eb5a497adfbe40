import { dateOfMs, type DateParts } from './time.js';

/** Generated times are laid out around this instant (2026-07-01T00:00:00Z), never around now. */
export const SEED_EPOCH = Date.UTC(2026, 6, 1);
export const DAY = 86_400_000;

/** The calendar date `days` after SEED_EPOCH's (a wall-clock date, zone-free). */
export function epochDate(days: number): DateParts {
  return dateOfMs(SEED_EPOCH + Math.round(days) * DAY);
}
