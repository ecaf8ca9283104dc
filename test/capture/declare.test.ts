import { DataTypes, Sequelize } from 'sequelize';
import { afterAll, describe, expect, it } from 'vitest';
import {
  ConfigurationError,
  capture,
  createOutbox,
  defineOutbox,
  installCapture,
  receiver,
  silentLogger,
} from '../../src/index.js';

const sequelize = new Sequelize({ dialect: 'sqlite', storage: ':memory:', logging: false });
const Order = sequelize.define('Order', {
  status: DataTypes.STRING,
  fee: DataTypes.DECIMAL(10, 2),
});
afterAll(() => sequelize.close());

function refusal(make: () => unknown): string {
  try {
    make();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigurationError);
    return (error as Error).message;
  }
  throw new Error('expected a ConfigurationError');
}

describe('capture() is checked when declared', () => {
  it('refuses a field the model does not have, naming the model and option', () => {
    expect(
      refusal(() => capture(Order, { app: 'shop', fields: ['id', 'colour'] })),
    ).toMatchInlineSnapshot(
      `"capture(Order).fields names "colour", which Order does not have (its attributes: id, status, fee, createdAt, updatedAt)"`,
    );
  });
  it('refuses fields with exclude, and extend with extendMany', () => {
    expect(refusal(() => capture(Order, { app: 'shop', fields: ['id'], exclude: ['fee'] }))).toBe(
      'capture(Order).fields takes fields or exclude, not both',
    );
    expect(
      refusal(() => capture(Order, { app: 'shop', extend: () => undefined, extendMany: () => [] })),
    ).toBe('capture(Order).extend takes extend or extendMany, not both');
  });
  it('refuses a template naming something else, and {app} without an app', () => {
    expect(
      refusal(() => capture(Order, { app: 'shop', topic: '{app}.{colour}.{operation}' })),
    ).toContain('capture(Order).topic "{app}.{colour}.{operation}" names {colour}');
    expect(refusal(() => capture(Order, {}))).toContain('capture(Order).app is needed');
  });
  it('refuses an unknown option and an unknown payload mode', () => {
    expect(refusal(() => capture(Order, { app: 'shop', paylod: 'keys' } as never))).toContain(
      'capture(Order).paylod is not an option of capture',
    );
    expect(refusal(() => capture(Order, { app: 'shop', payload: 'all' } as never))).toContain(
      'capture(Order).payload must be "keys", "after" or "beforeAndAfter"',
    );
  });
  it('replace() gives a refined copy, fields replacing exclude', () => {
    const base = capture(Order, { app: 'shop', exclude: ['fee'] });
    const copy = base.replace({ fields: ['id', 'status'] });
    expect(copy.options).toEqual({ app: 'shop', fields: ['id', 'status'] });
    expect(base.options).toEqual({ app: 'shop', exclude: ['fee'] });
  });
});

describe('captured topics are declared events', () => {
  const config = defineOutbox({
    events: {},
    capture: [capture(Order, { app: 'shop', operations: ['inserted', 'updated'] })],
    receivers: { 'audit.orders': receiver('shop.order.updated', { handle: () => {} }) },
  });
  it('declares {app}.{model}.{operation} for each captured operation, which receivers subscribe to', () => {
    expect(config.eventList.map((e) => e.name)).toEqual([
      'shop.order.inserted',
      'shop.order.updated',
    ]);
    expect(config.route('shop.order.updated')?.durable.map((r) => r.key)).toEqual(['audit.orders']);
  });
  it('lists them in the catalogue with the envelope schema of the model attributes', () => {
    const outbox = createOutbox(config, { sequelize, wakeup: null, logger: silentLogger });
    const names = outbox.catalogue().events.map((e) => e.name);
    expect(names).toContain('shop.order.updated');
  });
  it('refuses the same model captured twice', () => {
    expect(
      refusal(() =>
        defineOutbox({
          events: {},
          capture: [capture(Order, { app: 'shop' }), capture(Order, { app: 'x' })],
        }),
      ),
    ).toContain('captures Order a second time');
  });
  it('installCapture refuses a captured model not defined on the outbox Sequelize, naming it', () => {
    const other = new Sequelize({ dialect: 'sqlite', storage: ':memory:', logging: false });
    const Stray = other.define('Stray', { status: DataTypes.STRING });
    const strayConfig = defineOutbox({ events: {}, capture: [capture(Stray, { app: 'shop' })] });
    const outbox = createOutbox(strayConfig, { sequelize, wakeup: null, logger: silentLogger });
    expect(() => installCapture(outbox)).toThrow(
      'installCapture: the captured model Stray is not defined on this Sequelize',
    );
    return other.close();
  });
});
