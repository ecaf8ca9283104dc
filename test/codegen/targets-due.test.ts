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

let generated: ReturnType<typeof generate> | undefined;

/** The schedule fixture's codegen, once for the file: ts-morph takes seconds per run. */
async function scheduled() {
  generated ??= generate(fixture('schedule'));
  const result = await generated;
  if (!result.ok) throw new Error(result.message);
  const receivers = [
    ...result.catalogue.events.flatMap((e) => e.receivers),
    ...result.catalogue.wildcardReceivers,
  ];
  return { result, receivers };
}

describe('codegen of targets and due functions', () => {
  it('a config with targets, due, lanes, eager and patterns produces the whole generated file and both catalogues', async () => {
    const { result } = await scheduled();
    expect(result.warnings).toEqual([]);
    const [typescript, json, markdown] = result.files;
    await expect(typescript.text).toMatchFileSnapshot(
      join(FIXTURES, 'schedule/out/outbox.generated.ts'),
    );
    await expect(json.text).toMatchFileSnapshot(join(FIXTURES, 'schedule/out/catalogue.json'));
    await expect(markdown.text).toMatchFileSnapshot(join(FIXTURES, 'schedule/out/catalogue.md'));
  });

  it('resolves each targets and due function to its declaration, file:line, imported or inline', async () => {
    const { receivers } = await scheduled();
    const published = Object.fromEntries(
      receivers.map((r) => [r.key, { targets: r.targets, dueCallable: r.dueCallable }]),
    );
    expect(published).toEqual({
      'audit.all': { targets: null, dueCallable: null },
      'library.index': { targets: 'outbox.config.ts:32', dueCallable: null },
      'offers.expire': { targets: null, dueCallable: 'timing.ts:9' },
      'offers.fanOut': { targets: 'timing.ts:4', dueCallable: null },
      'offers.notify': { targets: null, dueCallable: null },
      'offers.remind': { targets: null, dueCallable: null },
    });
  });

  it('a due duration has no location: it is published in seconds', async () => {
    const { receivers } = await scheduled();
    expect(receivers.find((r) => r.key === 'offers.remind')).toMatchObject({
      dueSeconds: 48 * 3600,
      dueCallable: null,
    });
  });

  it('a mistyped targets or due fails codegen with a message naming the receiver and the option', async () => {
    const result = await generate(fixture('mistyped-schedule'));
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(
      result.mismatches?.map((m) => [m.receiver, m.option, m.problem, m.location, m.handlerType]),
    ).toEqual([
      ['a.wrongPayload', 'targets', 'payload', 'outbox.config.ts:14', '{ tenants: number[]; }'],
      ['b.bareString', 'targets', 'return', 'outbox.config.ts:17', 'string'],
      ['c.promise', 'targets', 'return', 'outbox.config.ts:21', 'Promise<number[]>'],
      ['d.dueText', 'due', 'return', 'outbox.config.ts:25', 'string'],
      ['e.duePayload', 'due', 'payload', 'outbox.config.ts:29', '{ expiresAt: number; }'],
    ]);
    expect(result.message).toMatchInlineSnapshot(`
      "outbox codegen: 5 receiver function(s) do not fit their event:
      outbox.config.ts:14: receivers["a.wrongPayload"].targets listens to offers.OfferMade, but its targets function tenantIds cannot take that payload
        the targets function takes a payload of type: { tenants: number[]; }
        offers.OfferMade decodes to:              { tenants: string[]; expiresAt: Date; }
        Type the function as the generated OfferMadeTargets (its event is a FiringEvent<OfferMadePayload>), or make the receiver listen to the event the targets function handles.
      outbox.config.ts:17: receivers["b.bareString"].targets must return an iterable of strings (string[], a Set<string>, a generator) or a promise of one, but its targets function firstTenant does not
        it returns: string
        expected:   Iterable<string> | Promise<Iterable<string>> (a string is refused: it would fan out to its characters, one delivery each)
        It runs inside the caller's transaction at fire time: return the target strings (or a promise of them), one delivery row each.
      outbox.config.ts:21: receivers["c.promise"].targets must return an iterable of strings (string[], a Set<string>, a generator) or a promise of one, but its targets function tenantsLater does not
        it returns: Promise<number[]>
        expected:   Iterable<string> | Promise<Iterable<string>>
        It runs inside the caller's transaction at fire time: return the target strings (or a promise of them), one delivery row each.
      outbox.config.ts:25: receivers["d.dueText"].due must return a Date or a promise of one, but its due function expiryText does not
        it returns: string
        expected:   Date | Promise<Date>
        It runs inside the caller's transaction at fire time: return the Date the delivery is due (or a promise of it), or declare a duration such as { hours: 48 }.
      outbox.config.ts:29: receivers["e.duePayload"].due listens to offers.OfferMade, but its due function expiryOfNumber cannot take that payload
        the due function takes a payload of type: { expiresAt: number; }
        offers.OfferMade decodes to:              { tenants: string[]; expiresAt: Date; }
        Type the function as the generated OfferMadeDue (its event is a FiringEvent<OfferMadePayload>), or make the receiver listen to the event the due function handles."
    `);
  });

  it('a targets function the source walk cannot follow is a warning, and keeps its runtime name', async () => {
    const result = await generate(fixture('unfollowed-schedule'));
    if (!result.ok) throw new Error(result.message);
    expect(result.warnings).toMatchInlineSnapshot(`
      [
        "receivers["offers.fanOut"].targets: the function could not be followed in the source (declared outside the receiver's options literal?); the catalogue names it by its function name instead of file:line, and it is not type-checked",
      ]
    `);
    expect(result.catalogue.events[0].receivers[0]).toMatchObject({
      targets: 'function targets',
      location: 'outbox.config.ts:20',
    });
  });
});
