import { z } from 'zod';

/**
 * A length of time, with its unit in its name: `{ hours: 48 }`, `{ minutes: 5, seconds: 30 }`.
 *
 * An object rather than a bare number because a bare number has no unit, and a due time
 * or a give-up bound read in the wrong one is wrong by a factor of sixty or a thousand —
 * the reference's `timedelta`, in TypeScript. The parts add up.
 */
export interface Duration {
  /** Whole or fractional days; the parts add up. */
  readonly days?: number;
  /** Hours. */
  readonly hours?: number;
  /** Minutes. */
  readonly minutes?: number;
  /** Seconds. */
  readonly seconds?: number;
  /** Milliseconds. */
  readonly milliseconds?: number;
}

const PART_SECONDS: Record<keyof Duration, number> = {
  days: 86_400,
  hours: 3_600,
  minutes: 60,
  seconds: 1,
  milliseconds: 0.001,
};

/** A {@link Duration} in seconds. */
export function durationSeconds(duration: Duration): number {
  let total = 0;
  for (const [part, factor] of Object.entries(PART_SECONDS)) {
    total += (duration[part as keyof Duration] ?? 0) * factor;
  }
  return total;
}

const part = z
  .number({ error: 'must be a number ≥ 0' })
  .min(0, { error: 'must be a number ≥ 0' })
  .refine(Number.isFinite, { error: 'must be finite' })
  .optional();

/** The zod schema of a {@link Duration} longer than zero. */
export const durationSchema = z
  .strictObject(
    {
      days: part,
      hours: part,
      minutes: part,
      seconds: part,
      milliseconds: part,
    },
    {
      error:
        'must be a duration such as { hours: 48 } (days, hours, minutes, seconds, milliseconds)',
    },
  )
  .refine((d) => durationSeconds(d) > 0, {
    error: 'must be longer than zero, e.g. { hours: 48 }',
    // only a well-formed duration is measured: an unknown part is its one complaint
    when: (payload) => payload.issues.length === 0,
  });
