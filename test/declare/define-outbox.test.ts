import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AnyEvent, ConfigurationError, defineOutbox, event, receiver } from '../../src/index.js';

const Placed = event({ schema: z.object({ orderId: z.string() }) });
const handle = () => {};

function errorOf(fn: () => unknown): ConfigurationError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigurationError);
    return error as ConfigurationError;
  }
  throw new Error('expected a ConfigurationError');
}

describe('defineOutbox', () => {
  it('resolves defaults: durable mode, 5 attempts, the record key as receiver key, sorted receivers', () => {
    const config = defineOutbox({
      events: { 'shop.OrderPlaced': Placed },
      receivers: {
        'z.last': receiver(Placed, { handle }),
        'a.first': receiver('shop.OrderPlaced', { handle, mode: 'inline' }),
      },
    });
    expect(config.receivers.map((r) => [r.key, r.mode, r.maxAttempts, r.event])).toEqual([
      ['a.first', 'inline', 5, 'shop.OrderPlaced'],
      ['z.last', 'durable', 5, 'shop.OrderPlaced'],
    ]);
    expect(config.settings.leaseSeconds).toBe(60);
    expect(config.route('shop.OrderPlaced')?.durable.map((r) => r.key)).toEqual(['z.last']);
    expect(config.route('shop.OrderPlaced')?.inline.map((r) => r.key)).toEqual(['a.first']);
  });

  it('a wildcard receiver is owed every event', () => {
    const config = defineOutbox({
      events: { 'a.One': Placed, 'b.Two': event({ schema: z.object({}) }) },
      receivers: { 'bus.all': receiver(AnyEvent, { deliver: async () => {} }) },
    });
    expect(config.route('a.One')?.durable.map((r) => r.key)).toEqual(['bus.all']);
    expect(config.route('b.Two')?.durable.map((r) => r.key)).toEqual(['bus.all']);
    expect(config.receiver('bus.all')?.wildcard).toBe(true);
  });

  it('each route carries its silenced form, built once: the same event owed to nobody', () => {
    const config = defineOutbox({
      events: { 'shop.OrderPlaced': Placed },
      receivers: {
        'a.first': receiver(Placed, { handle, mode: 'inline' }),
        'b.later': receiver(Placed, { handle, mode: 'onCommit' }),
        'c.fan': receiver(Placed, { deliver: async () => {}, targets: () => ['x'] }),
      },
    });
    const route = config.route('shop.OrderPlaced');
    const quiet = route?.silenced;
    expect(route?.schedules).toBe(true);
    expect(quiet?.event).toBe(route?.event);
    expect([quiet?.inline, quiet?.onCommit, quiet?.durable, quiet?.schedules]).toEqual([
      [],
      [],
      [],
      false,
    ]);
    expect(config.route('shop.OrderPlaced')?.silenced).toBe(quiet);
    expect(quiet?.silenced).toBe(quiet);
  });

  it('a typo in a receiver option is rejected with its config path and the likely fix', () => {
    const error = errorOf(() =>
      defineOutbox({
        events: { 'shop.OrderPlaced': Placed },
        // @ts-expect-error: the typo is the point
        receivers: { 'billing.charge': receiver(Placed, { handle, maxAtempts: 3 }) },
      }),
    );
    expect(error.message).toMatchInlineSnapshot(`
      "Invalid outbox config:
        receivers["billing.charge"] has an unknown option "maxAtempts" — did you mean "maxAttempts"? (known: handle, deliver, mode, key, maxAttempts, leaseSeconds, backoff, onFailure, timeoutSeconds, lane, eager, site, giveUpAfter, targets, due)"
    `);
  });

  it('maxAttempts below 1 names the path, the rule and the value', () => {
    const error = errorOf(() =>
      defineOutbox({
        events: { 'shop.OrderPlaced': Placed },
        receivers: { 'billing.charge': receiver(Placed, { handle, maxAttempts: 0 }) },
      }),
    );
    expect(error.message).toContain(
      'receivers["billing.charge"].maxAttempts must be an integer ≥ 1 (got 0)',
    );
    expect(error.path).toBe('receivers["billing.charge"].maxAttempts');
  });

  it('an unknown top-level or settings key is rejected', () => {
    expect(
      errorOf(() =>
        // @ts-expect-error: the typo is the point
        defineOutbox({ events: {}, recievers: {} }),
      ).message,
    ).toContain('has an unknown option "recievers" — did you mean "receivers"?');
    expect(
      errorOf(() =>
        // @ts-expect-error: the typo is the point
        defineOutbox({ events: {}, settings: { batchsize: 10 } }),
      ).message,
    ).toContain('settings has an unknown option "batchsize" — did you mean "batchSize"?');
  });

  it('settings are range-checked', () => {
    expect(
      errorOf(() => defineOutbox({ events: {}, settings: { batchSize: 0 } })).message,
    ).toContain('settings.batchSize must be an integer from 1 to 10000 (got 0)');
    expect(
      errorOf(() =>
        defineOutbox({ events: {}, settings: { backoff: { baseSeconds: 10, capSeconds: 1 } } }),
      ).message,
    ).toContain('settings.backoff.capSeconds must be ≥ settings.backoff.baseSeconds (10)');
  });

  it('an event name longer than the 255-character column is refused', () => {
    const name = 'x'.repeat(256);
    expect(errorOf(() => defineOutbox({ events: { [name]: Placed } })).message).toContain(
      'is not a valid event name: it must be 1 to 255 characters (got 256)',
    );
  });

  it('a receiver key longer than 255 characters is refused at every mode', () => {
    const key = 'k'.repeat(256);
    for (const mode of ['durable', 'inline', 'onCommit'] as const) {
      expect(
        errorOf(() =>
          defineOutbox({
            events: { 'shop.OrderPlaced': Placed },
            receivers: { [key]: receiver(Placed, { handle, mode }) },
          }),
        ).message,
      ).toContain('is not a valid receiver key');
    }
  });

  it('a receiver of an undeclared event is refused with a suggestion', () => {
    expect(
      errorOf(() =>
        defineOutbox({
          events: { 'shop.OrderPlaced': Placed },
          receivers: { r: receiver('shop.OrderPlacd', { handle }) },
        }),
      ).message,
    ).toContain(
      'receivers.r listens to "shop.OrderPlacd", which is not declared in events — did you mean "shop.OrderPlaced"?',
    );
  });

  it('a receiver of an unregistered event definition is refused', () => {
    const Stray = event({ schema: z.object({}) });
    expect(
      errorOf(() =>
        defineOutbox({
          events: { 'shop.OrderPlaced': Placed },
          receivers: { r: receiver(Stray, { handle }) },
        }),
      ).message,
    ).toContain('not registered in events');
  });

  it('two receivers with one key are refused', () => {
    expect(
      errorOf(() =>
        defineOutbox({
          events: { 'shop.OrderPlaced': Placed },
          receivers: {
            a: receiver(Placed, { handle, key: 'same' }),
            b: receiver(Placed, { handle, key: 'same' }),
          },
        }),
      ).message,
    ).toContain('"same" is already the key of receivers["a"]');
  });

  it('a receiver needs exactly one of handle and deliver, and a transport is durable', () => {
    expect(
      errorOf(() =>
        defineOutbox({
          events: { 'shop.OrderPlaced': Placed },
          // @ts-expect-error: neither handle nor deliver
          receivers: { r: receiver(Placed, { mode: 'durable' }) },
        }),
      ).message,
    ).toContain('needs either handle (a function) or deliver (a transport)');
    expect(
      errorOf(() =>
        defineOutbox({
          events: { 'shop.OrderPlaced': Placed },
          receivers: { r: receiver(Placed, { deliver: async () => {}, mode: 'inline' }) },
        }),
      ).message,
    ).toContain('receivers.r.mode must be "durable" for a transport (got "inline")');
  });

  it('a payload schema that cannot round-trip through JSON is refused: z.date() must be z.coerce.date()', () => {
    const error = errorOf(() =>
      defineOutbox({ events: { 'a.B': event({ schema: z.object({ at: z.date() }) }) } }),
    );
    expect(error.message).toContain('events["a.B"].schema.at is z.date()');
    expect(error.message).toContain('use z.coerce.date()');
    expect(() =>
      defineOutbox({ events: { 'a.B': event({ schema: z.object({ at: z.coerce.date() }) }) } }),
    ).not.toThrow();
  });

  it('one event definition declared under two names is refused, naming both', () => {
    const Placed = event({ schema: z.object({ id: z.string() }) });
    expect(
      errorOf(() => defineOutbox({ events: { 'a.Placed': Placed, 'b.Placed': Placed } })).message,
    ).toContain('events["b.Placed"] is the same event(...) definition as events["a.Placed"]');
  });

  it('an event option typo is rejected', () => {
    // @ts-expect-error: the typo is the point
    const Bad = event({ schema: z.object({}), verison: 2 });
    expect(errorOf(() => defineOutbox({ events: { 'a.B': Bad } })).message).toContain(
      'did you mean "version"?',
    );
  });
});
