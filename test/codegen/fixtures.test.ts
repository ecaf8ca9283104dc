import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { generate } from '../../codegen/run-codegen.js';
import { FIXTURES, SOURCE_IMPORT } from './support.js';

const fixture = (name: string) => ({
  cwd: join(FIXTURES, name),
  out: 'out/outbox.generated.ts',
  catalogueDir: 'out',
  importFrom: SOURCE_IMPORT,
});

let validRun: ReturnType<typeof generate> | undefined;

/** The valid fixture's codegen, once for the file: each run builds a TypeScript program. */
const valid = () => {
  validRun ??= generate(fixture('valid'));
  return validRun;
};

describe('codegen of the fixture configs', () => {
  it('a valid config produces the whole generated file and both catalogues', async () => {
    const result = await valid();
    if (!result.ok) throw new Error(result.message);
    expect(result.warnings).toEqual([]);
    const [typescript, json, markdown] = result.files;
    expect(result.files.map((f) => f.display)).toEqual([
      'out/outbox.generated.ts',
      'out/catalogue.json',
      'out/catalogue.md',
    ]);
    await expect(typescript.text).toMatchFileSnapshot(
      join(FIXTURES, 'valid/out/outbox.generated.ts'),
    );
    await expect(json.text).toMatchFileSnapshot(join(FIXTURES, 'valid/out/catalogue.json'));
    await expect(markdown.text).toMatchFileSnapshot(join(FIXTURES, 'valid/out/catalogue.md'));
  });

  it('resolves every handler to its declaration, file:line, through imports and casts', async () => {
    const result = await valid();
    if (!result.ok) throw new Error(result.message);
    const locations = Object.fromEntries(
      [
        ...result.catalogue.events.flatMap((e) => e.receivers),
        ...result.catalogue.wildcardReceivers,
      ].map((r) => [r.key, r.location]),
    );
    expect(locations).toEqual({
      'audit.log': 'outbox.config.ts:22',
      'bridge.forward': 'handlers.ts:13',
      'carrier.notify': 'handlers.ts:9',
      'stock.reserve': 'handlers.ts:3',
    });
  });

  it('is deterministic: the same config gives the same bytes', async () => {
    const a = await valid();
    const b = await generate(fixture('valid')); // a run of its own
    if (!a.ok || !b.ok) throw new Error('codegen failed');
    expect(b.files.map((f) => f.text)).toEqual(a.files.map((f) => f.text));
    for (const f of a.files) expect(f.text).toMatch(/[^\n]\n$/);
  });

  it('a handler that cannot take its payload is an error naming receiver, event, both types and the location', async () => {
    const result = await generate(fixture('mismatch'));
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.mismatches?.map((m) => [m.receiver, m.event, m.location])).toEqual([
      ['audit.everything', 'AnyEvent', 'outbox.config.ts:19'],
      ['billing.charge', 'shop.OrderPlaced', 'outbox.config.ts:15'],
    ]);
    expect(result.message).toMatchInlineSnapshot(`
      "outbox codegen: 2 receiver function(s) do not fit their event:
      outbox.config.ts:19: receivers["audit.everything"] listens to AnyEvent, but its handler onlyOrders cannot take that payload
        the handler takes a payload of type: { orderId: string; }
        a wildcard is handed every event, so its payload is: unknown
        Type the parameter as OutboxEvent (payload unknown) and narrow on event.name.
      outbox.config.ts:15: receivers["billing.charge"] listens to shop.OrderPlaced, but its handler chargeCard cannot take that payload
        the handler takes a payload of type: { orderId: number; }
        shop.OrderPlaced decodes to:              { orderId: string; }
        Type the parameter as the generated OrderPlacedEvent (OutboxEvent<OrderPlacedPayload>), or make the receiver listen to the event the handler handles."
    `);
  });

  it('a config defineOutbox refuses is reported with its file and line, before anything is generated', async () => {
    const result = await generate(fixture('invalid'));
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.message.replace(FIXTURES, '<fixtures>')).toMatchInlineSnapshot(`
      "outbox: invalid config at <fixtures>/invalid/outbox.config.ts:11
      Invalid outbox config:
        receivers["billing.charge"].maxAttempts must be an integer ≥ 1 (got 0)"
    `);
  });

  it('a syntax error is reported with file, line and column', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'outbox-codegen-'));
    try {
      writeFileSync(join(dir, 'outbox.config.ts'), 'export default {\n  events: { a: },\n};\n');
      const result = await generate({ cwd: dir });
      expect(result.ok).toBe(false);
      if (result.ok) return;
      expect(result.message.replace(dir, '<dir>')).toMatchInlineSnapshot(`
        "outbox: syntax error at <dir>/outbox.config.ts:2:16
        Unexpected "}""
      `);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a missing config says where it looked and how to fix it', async () => {
    const result = await generate({ cwd: FIXTURES, config: 'nope.config.ts' });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.message).toContain(`no config at ${join(FIXTURES, 'nope.config.ts')}`);
    expect(result.message).toContain('--config');
  });
});
