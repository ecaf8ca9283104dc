/**
 * What a capture adds to its events: `extend` per row (sync or async), `extendMany` once
 * per statement (a count that does not match fails the write), topics and ordering keys
 * from functions, and a long template key shortened to its start + `#` + SHA-256.
 */
import { createHash } from 'node:crypto';
import { DataTypes, type ModelStatic, type Model as SequelizeModel } from 'sequelize';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { z } from 'zod';
import {
  type CapturedChange,
  capture,
  defineOutbox,
  event,
  installCapture,
  type Outbox,
  ValidationError,
} from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import type { TestDatabase } from '../../testing/databases.js';
import { openOutbox, testClock } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';

type AnyModel = ModelStatic<SequelizeModel>;

let mark = 0;
async function markLog(outbox: Outbox) {
  mark = (await runtimeOf(outbox).store.readEvents({})).length;
}
async function logOf(outbox: Outbox) {
  const rows = (await runtimeOf(outbox).store.readEvents({})).slice(mark);
  return rows.map((e) => ({
    topic: e.name,
    key: e.orderingKey,
    headers: (typeof e.headers === 'string' ? JSON.parse(e.headers) : e.headers) as
      | Record<string, string>
      | null
      | undefined,
    payload: (typeof e.payload === 'string' ? JSON.parse(e.payload) : e.payload) as Record<
      string,
      unknown
    >,
  }));
}

describeEachDialect('change capture extensions, topic and key functions', (dialect) => {
  let db: TestDatabase;
  let outbox: Outbox;
  let Note: AnyModel;
  let Tag: AnyModel;
  let Doc: AnyModel;
  const manyCalls: number[] = [];
  let shortBy = 0;

  beforeAll(async () => {
    db = await dialect.open();
    const schema = db.outboxOptions.schema ? { schema: db.outboxOptions.schema } : {};
    Note = db.sequelize.define(
      'Note',
      { text: DataTypes.STRING, author: DataTypes.STRING },
      { tableName: 'ext_notes', timestamps: false, ...schema },
    );
    Tag = db.sequelize.define(
      'Tag',
      { label: DataTypes.STRING, region: DataTypes.STRING },
      { tableName: 'ext_tags', timestamps: false, ...schema },
    );
    Doc = db.sequelize.define(
      'Doc',
      { slug: { type: DataTypes.STRING(400), primaryKey: true }, body: DataTypes.STRING },
      { tableName: 'ext_docs', timestamps: false, ...schema },
    );
    await Promise.all([Note.sync(), Tag.sync(), Doc.sync()]);
    const envelope = z.looseObject({ model: z.string() });
    const config = defineOutbox({
      events: {
        'geo.eu.tag': event({ schema: envelope }),
        'geo.us.tag': event({ schema: envelope }),
        'geo.far.tag': event({ schema: envelope }),
      },
      capture: [
        capture(Note, {
          app: 'shop',
          payload: 'keys',
          operations: ['inserted'],
          // sync for one author, async for the others
          extend: (change: CapturedChange) =>
            change.pk === 1
              ? { payload: { by: 'sync' }, headers: { author: 'ann' } }
              : Promise.resolve({ payload: { by: 'async' } }),
        }),
        capture(Tag, {
          app: 'shop',
          payload: 'after',
          topic: (change) => `geo.${String(change.after?.region)}.tag`,
          orderingKey: (change) =>
            change.after?.region === 'eu'
              ? `tags:${change.pk}`
              : change.after?.region === 'far'
                ? 'k'.repeat(300)
                : null,
          extendMany: async (changes) => {
            manyCalls.push(changes.length);
            const all = changes.map((c) => ({ payload: { n: c.pk } }));
            return shortBy ? all.slice(shortBy) : all;
          },
        }),
        capture(Doc, { app: 'shop', payload: 'keys', operations: ['inserted'] }),
      ],
      receivers: {},
    });
    outbox = await openOutbox(db, config, { clock: testClock().now });
    installCapture(outbox, db.sequelize);
  });
  beforeEach(async () => {
    manyCalls.length = 0;
    await markLog(outbox);
  });
  afterAll(async () => {
    await outbox.close();
    await db.cleanup();
  });

  it('extend adds payload keys and headers per row, sync or async', async () => {
    await Note.bulkCreate([
      { id: 1, text: 'a' },
      { id: 2, text: 'b' },
    ]);
    const log = await logOf(outbox);
    expect(log.map((e) => [e.topic, e.payload.pk, e.payload.by, e.headers?.author])).toEqual([
      ['shop.note.inserted', 1, 'sync', 'ann'],
      ['shop.note.inserted', 2, 'async', undefined],
    ]);
  });

  it('extendMany is called once per statement, and a topic and key function name each event', async () => {
    await Tag.bulkCreate([
      { id: 1, label: 'x', region: 'eu' },
      { id: 2, label: 'y', region: 'us' },
      { id: 3, label: 'z', region: 'eu' },
    ]);
    expect(manyCalls).toEqual([3]);
    const log = await logOf(outbox);
    expect(log.map((e) => [e.topic, e.key, e.payload.n])).toEqual([
      ['geo.eu.tag', 'tags:1', 1],
      ['geo.us.tag', null, 2],
      ['geo.eu.tag', 'tags:3', 3],
    ]);
    expect(log[0]!.payload.after).toEqual({ id: 1, label: 'x', region: 'eu' });
  });

  it('extendMany returning another count fails the write with ValidationError, leaving no row', async () => {
    shortBy = 1;
    const write = Tag.bulkCreate([
      { id: 11, label: 'x', region: 'eu' },
      { id: 12, label: 'y', region: 'eu' },
    ]);
    await expect(write).rejects.toBeInstanceOf(ValidationError);
    await expect(write).rejects.toThrow(
      'capture(Tag).extendMany returned 1 extensions for 2 changes; return one (or undefined) per change, in their order',
    );
    shortBy = 0;
    expect(await Tag.count({ where: { id: [11, 12] } })).toBe(0);
    expect(await logOf(outbox)).toEqual([]);
  });

  it('a topic function naming an undeclared event fails the write, leaving no row', async () => {
    await expect(Tag.create({ id: 21, label: 'x', region: 'mars' })).rejects.toThrow(
      /geo\.mars\.tag/,
    );
    expect(await Tag.count({ where: { id: 21 } })).toBe(0);
  });

  it('a key function giving over 255 characters fails the write with ValidationError, leaving no row', async () => {
    const write = Tag.create({ id: 22, label: 'x', region: 'far' });
    await expect(write).rejects.toBeInstanceOf(ValidationError);
    await expect(write).rejects.toThrow(
      "capture(Tag).orderingKey returned a key of 300 characters; an ordering key has at most 255 (a template's longer keys are hashed, a function's are refused)",
    );
    expect(await Tag.count({ where: { id: 22 } })).toBe(0);
  });

  it('a template key over 255 characters keeps its start, then # and the SHA-256 of the whole key', async () => {
    const slug = 's'.repeat(300);
    await Doc.create({ slug, body: 'long' });
    const whole = `shop.Doc:${slug}`;
    const digest = createHash('sha256').update(whole).digest('hex');
    const [e] = await logOf(outbox);
    expect(e!.key).toBe(`${whole.slice(0, 255 - 65)}#${digest}`);
    expect(e!.key).toHaveLength(255);
    expect(e!.payload.pk).toBe(slug);
  });
});
