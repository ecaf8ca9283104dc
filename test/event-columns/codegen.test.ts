/** The generated emitters type `columns` from `eventColumns`, and change nothing without them. */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { generateEmitters } from '../../codegen/generate-emitters.js';
import { defineOutbox, event } from '../../src/index.js';

const events = { 'shop.Placed': event({ schema: z.object({ n: z.number() }) }) };
const generate = (config: ReturnType<typeof defineOutbox>) =>
  generateEmitters({
    config,
    configImport: './outbox.config.js',
    runtimeImport: 'outboxkit',
    configLabel: 'outbox.config.ts',
  });

describe('event columns in the generated emitters', () => {
  it('EventColumns and EmitOptions type each declared column; the emitters take them', () => {
    const text = generate(
      defineOutbox({
        events,
        eventColumns: {
          order_id: { type: 'bigint', index: true },
          region: { type: 'text' },
          shipped_at: { type: 'timestamp' },
        },
      }),
    );
    expect(text).toContain(
      'export type EventColumns = { readonly order_id?: number | bigint | string | null; readonly region?: string | null; readonly shipped_at?: Date | null };',
    );
    expect(text).toContain(
      "export type EmitOptions = Omit<FireOptions, 'columns'> & { readonly columns?: EventColumns };",
    );
    expect(text).toMatch(/placed\(payload: PlacedInput, options\?: EmitOptions\)/);
  });

  it('a config without event columns generates no column types', () => {
    const text = generate(defineOutbox({ events }));
    expect(text).not.toContain('EventColumns');
    expect(text).toMatch(/options\?: FireOptions\)/);
  });
});
