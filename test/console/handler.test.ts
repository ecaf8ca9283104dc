import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import type { ConsoleAuditEntry } from '../../console/index.js';
import { attributed, causedBy, type Outbox, silentLogger } from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { drainOutbox } from '../../testing/drain.js';
import { deliveryRows, openOutbox, T0, testClock } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';
import {
  Client,
  consoleConfig,
  csrfIn,
  type ServedConsole,
  serveConsole,
  TOKEN,
} from './support.js';

type Config = ReturnType<typeof consoleConfig>['config'];

describeEachDialect('the console handler', (dialect) => {
  let db: TestDatabase;
  let outbox: Outbox<Config>;
  let shop: ReturnType<typeof consoleConfig>;
  let served: ServedConsole | undefined;
  const clock = testClock();
  const logged: { message: string; fields?: Record<string, unknown> }[] = [];
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());
  beforeEach(async () => {
    clock.set(T0);
    logged.length = 0;
    shop = consoleConfig();
    outbox = await openOutbox(db, shop.config, {
      clock: clock.now,
      logger: {
        ...silentLogger,
        info: (message: string, fields?: Record<string, unknown>) => {
          logged.push({ message, fields });
        },
      },
    });
  });
  afterEach(async () => {
    await served?.close();
    served = undefined;
  });

  /** Fire `n` orders (ordering key `order-<n>`) and dead-letter their mail. */
  async function deadOrders(n: number, from = 1) {
    const fired = await outbox.fireMany(
      Array.from({ length: n }, (_, i) => ({
        name: 'shop.OrderPlaced' as const,
        payload: { n: from + i },
        orderingKey: `order-${from + i}`,
      })),
    );
    await drainOutbox(outbox);
    return fired;
  }

  const rowOf = async (receiverKey: string, eventSequence?: string) =>
    (await deliveryRows(outbox)).find(
      (r) => r.receiverKey === receiverKey && (!eventSequence || r.eventSequence === eventSequence),
    );

  it('serves every page with a strict Content-Security-Policy and no inline script', async () => {
    const [order] = await deadOrders(1);
    served = await serveConsole(outbox);
    const client = new Client(served.url);
    for (const path of [
      '/',
      '/dead',
      '/events',
      `/events/${order.id}`,
      '/quiet',
      '/catalogue',
      '/events?key=order-1',
    ]) {
      const answer = await client.get(path);
      expect(answer.status, path).toBe(200);
      const csp = answer.headers.get('content-security-policy') ?? '';
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toContain('unsafe-inline');
      expect(answer.headers.get('x-frame-options')).toBe('DENY');
      // The only script is the console's own file; no inline handler attribute anywhere.
      expect([...answer.text.matchAll(/<script\b[^>]*>/g)].map((m) => m[0])).toEqual([
        '<script src="/assets/console.js" defer>',
      ]);
      expect(answer.text).not.toMatch(/\son[a-z]+=/i);
    }
  });

  it('without a token or authorize(), the pages are read-only and a POST changes nothing', async () => {
    const [order] = await deadOrders(1);
    served = await serveConsole(outbox);
    const client = new Client(served.url);
    const page = await client.get('/dead');
    expect(page.text).toContain('smtp is down');
    expect(page.text).toContain('Read-only');
    expect(page.text).not.toContain('/actions/requeue');
    const dead = await rowOf('mail.send');
    const refused = await client.post('/actions/requeue', {
      id: dead?.id,
      confirm: 'yes',
      csrf: 'x',
    });
    expect(refused.status).toBe(403);
    expect((await rowOf('mail.send', order.sequence))?.status).toBe('dead');
  });

  it('with a token, a page without it redirects to the sign-in, and a wrong one is refused', async () => {
    served = await serveConsole(outbox, { token: TOKEN });
    const anonymous = new Client(served.url);
    const page = await anonymous.get('/');
    expect(page.status).toBe(303);
    expect(page.headers.get('location')).toBe('/login');
    expect((await new Client(served.url, { authorization: 'Bearer wrong' }).get('/')).status).toBe(
      401,
    );
    expect(
      (await new Client(served.url, { authorization: `Bearer ${TOKEN}` }).get('/')).status,
    ).toBe(200);
    const wrong = await anonymous.signIn('not-the-token');
    expect(wrong.status).toBe(401);
    expect(anonymous.cookie).toBeUndefined();
    const right = await anonymous.signIn(TOKEN);
    expect(right.status).toBe(303);
    expect(right.headers.get('set-cookie')).toMatch(/HttpOnly; SameSite=Strict/);
    expect((await anonymous.get('/')).text).toContain('signed in as <strong>alice</strong>');
  });

  it('requeues one dead letter after a confirmation, in one transaction with the audit hook, logged with who did it', async () => {
    const [order] = await deadOrders(2);
    const audits: { entry: ConsoleAuditEntry; inTransaction: boolean }[] = [];
    served = await serveConsole(outbox, {
      token: TOKEN,
      audit: (entry, transaction) => {
        audits.push({ entry, inTransaction: typeof transaction.commit === 'function' });
      },
    });
    const client = new Client(served.url);
    await client.signIn(TOKEN, 'alice');
    const dead = await rowOf('mail.send', order.sequence);
    const list = await client.get('/dead');
    const confirm = await client.post('/actions/requeue', {
      id: dead?.id,
      csrf: csrfIn(list.text),
    });
    expect(confirm.status).toBe(200);
    expect(confirm.text).toMatch(/Requeue <strong data-testid="count">1<\/strong>/);
    // The confirmation page changed nothing.
    expect((await rowOf('mail.send', order.sequence))?.status).toBe('dead');
    const done = await client.post('/actions/requeue', {
      id: dead?.id,
      confirm: 'yes',
      csrf: csrfIn(confirm.text),
    });
    expect(done.text).toContain('Requeued 1 dead letter');
    const row = await rowOf('mail.send', order.sequence);
    expect(row).toMatchObject({ status: 'pending', attempts: 0 });
    // The other order's dead letter is untouched.
    const other = (await deliveryRows(outbox)).filter(
      (r) => r.receiverKey === 'mail.send' && r.status === 'dead',
    );
    expect(other).toHaveLength(1);
    expect(audits).toEqual([
      {
        entry: expect.objectContaining({
          actor: 'alice',
          action: 'requeue',
          scope: { id: dead?.id },
          result: { requeued: 1 },
        }),
        inTransaction: true,
      },
    ]);
    expect(logged.map((l) => l.message)).toContain('console: alice ran requeue');
  });

  it('an audit hook that throws rolls the action back', async () => {
    const [order] = await deadOrders(1);
    served = await serveConsole(outbox, {
      token: TOKEN,
      audit: () => {
        throw new Error('audit table is full');
      },
    });
    const client = new Client(served.url);
    await client.signIn(TOKEN);
    const dead = await rowOf('mail.send', order.sequence);
    const page = await client.get('/dead');
    const answer = await client.post('/actions/requeue', {
      id: dead?.id,
      confirm: 'yes',
      csrf: csrfIn(page.text),
    });
    expect(answer.status).toBe(500);
    expect((await rowOf('mail.send', order.sequence))?.status).toBe('dead');
  });

  it('refuses an action without its CSRF token, or from another site, and changes nothing', async () => {
    const [order] = await deadOrders(1);
    served = await serveConsole(outbox, { token: TOKEN });
    const client = new Client(served.url);
    await client.signIn(TOKEN);
    const dead = await rowOf('mail.send', order.sequence);
    const csrf = csrfIn((await client.get('/dead')).text);
    expect((await client.post('/actions/requeue', { id: dead?.id, confirm: 'yes' })).status).toBe(
      403,
    );
    expect(
      (await client.post('/actions/requeue', { id: dead?.id, confirm: 'yes', csrf: `${csrf}x` }))
        .status,
    ).toBe(403);
    const crossSite = await client.post(
      '/actions/requeue',
      { id: dead?.id, confirm: 'yes', csrf },
      { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
    );
    expect(crossSite.status).toBe(403);
    // Another session's CSRF token does not fit this one.
    const other = new Client(served.url);
    await other.signIn(TOKEN, 'bob');
    const otherCsrf = csrfIn((await other.get('/dead')).text);
    expect(
      (await client.post('/actions/requeue', { id: dead?.id, confirm: 'yes', csrf: otherCsrf }))
        .status,
    ).toBe(403);
    expect((await rowOf('mail.send', order.sequence))?.status).toBe('dead');
  });

  it('read-only serves no action, even to the token holder', async () => {
    const [order] = await deadOrders(1);
    served = await serveConsole(outbox, { token: TOKEN, readOnly: true });
    const client = new Client(served.url);
    await client.signIn(TOKEN);
    const page = await client.get('/dead');
    expect(page.text).toContain('smtp is down');
    expect(page.text).not.toContain('/actions/');
    expect(page.text).toContain('started read-only');
    const dead = await rowOf('mail.send', order.sequence);
    const answer = await client.post('/actions/requeue', {
      id: dead?.id,
      confirm: 'yes',
      csrf: csrfIn(page.text),
    });
    expect(answer.status).toBe(403);
    expect((await rowOf('mail.send', order.sequence))?.status).toBe('dead');
  });

  it('requeues all of a receiver, and by topic (a form over 64 KiB is refused, 413)', async () => {
    await deadOrders(3);
    served = await serveConsole(outbox, { token: TOKEN });
    const client = new Client(served.url);
    await client.signIn(TOKEN);
    const csrf = csrfIn((await client.get('/')).text);
    expect((await client.get('/dead?receiver=mail.send')).text).toContain(
      'requeue every dead letter of mail.send…',
    );
    const tooLarge = await client.post('/actions/requeue', {
      receiver: 'mail.send',
      confirm: 'yes',
      csrf,
      padding: 'x'.repeat(70_000),
    });
    expect(tooLarge.status).toBe(413);
    expect(await outbox.countDeliveries()).toMatchObject({ dead: 3 });
    const confirm = await client.post('/actions/requeue', { receiver: 'mail.send', csrf });
    expect(confirm.text).toMatch(/data-testid="count">3</);
    await client.post('/actions/requeue', {
      receiver: 'mail.send',
      topic: 'shop.*',
      confirm: 'yes',
      csrf,
    });
    const rows = (await deliveryRows(outbox)).filter((r) => r.receiverKey === 'mail.send');
    expect(rows.map((r) => r.status)).toEqual(['pending', 'pending', 'pending']);
    const bad = await client.post('/actions/requeue', {
      receiver: 'no.such',
      confirm: 'yes',
      csrf,
    });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('&quot;no.such&quot; is not a durable receiver');
  });

  it('replays an event and cancels its owed deliveries, through the same operations as the CLI', async () => {
    const [order] = await deadOrders(1);
    served = await serveConsole(outbox, { authorize: () => ({ actor: 'ops@example.com' }) });
    const client = new Client(served.url);
    const csrf = csrfIn((await client.get(`/events/${order.id}`)).text);
    // ledger.post succeeded: the replay reopens it (and the dead mail row).
    expect((await rowOf('ledger.post', order.sequence))?.status).toBe('succeeded');
    const replayed = await client.post('/actions/replay', {
      event: order.id,
      receiver: 'ledger.post',
      confirm: 'yes',
      csrf,
    });
    expect(replayed.text).toContain('Replayed: 1 row reopened, 0 added');
    expect((await rowOf('ledger.post', order.sequence))?.status).toBe('pending');
    // The reminder is scheduled a day out: cancel it.
    expect((await rowOf('mail.remind', order.sequence))?.status).toBe('pending');
    const confirm = await client.post('/actions/cancel', {
      event: order.id,
      receiver: 'mail.remind',
      csrf,
    });
    expect(confirm.text).toMatch(/data-testid="count">1</);
    const cancelled = await client.post('/actions/cancel', {
      event: order.id,
      receiver: 'mail.remind',
      confirm: 'yes',
      csrf,
    });
    expect(cancelled.text).toContain('Cancelled 1 delivery');
    expect((await rowOf('mail.remind', order.sequence))?.status).toBe('cancelled');
    expect(
      logged.filter((l) => l.fields?.actor === 'ops@example.com').map((l) => l.fields?.action),
    ).toEqual(['replay', 'cancel']);
  });

  it('authorize() refusing a request serves nothing; a grant that may not act sees no action', async () => {
    served = await serveConsole(outbox, {
      authorize: (req) =>
        req.headers['x-user'] === 'alice' ? { actor: 'alice', mayAct: false } : null,
    });
    expect((await new Client(served.url).get('/')).status).toBe(401);
    const page = await new Client(served.url, { 'x-user': 'alice' }).get('/');
    expect(page.status).toBe(200);
    expect(page.text).toContain('your grant may not act');
  });

  it('a <script> payload, header or error renders as text, and no secret is shown', async () => {
    shop.state.error =
      '<img src=x onerror=alert(1)> POST https://hook:s3cret@hooks.example.com/x?token=abc failed';
    const [order] = await outbox.fireMany([
      {
        name: 'shop.OrderPlaced',
        payload: { n: 1, note: '<script>window.pwned = 1</script>' },
        orderingKey: '<b>key</b>',
        headers: { authorization: 'Bearer very-secret', 'x-note': '"><script>alert(2)</script>' },
      },
    ]);
    await drainOutbox(outbox);
    served = await serveConsole(outbox);
    const client = new Client(served.url);
    const pages = [
      await client.get(`/events/${order.id}`),
      await client.get('/dead'),
      await client.get('/events?key=%3Cb%3Ekey%3C%2Fb%3E'),
    ];
    for (const page of pages) {
      expect(page.status).toBe(200);
      expect(page.text).not.toContain('<script>window');
      expect(page.text).not.toContain('<img src=x');
      expect(page.text).not.toContain('<b>key</b>');
      expect(page.text).not.toContain('s3cret');
      expect(page.text).not.toContain('very-secret');
    }
    expect(pages[0].text).toContain('&lt;script&gt;window.pwned = 1&lt;/script&gt;');
    expect(pages[0].text).toContain('&quot;&gt;&lt;script&gt;alert(2)&lt;/script&gt;');
    expect(pages[1].text).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(pages[1].text).toContain('https://***@hooks.example.com/x?token=***');
    expect(pages[2].text).toContain('Ordering key &lt;b&gt;key&lt;/b&gt;');
  });

  it('the dead-letter page names each error, its attempts and the row waiting behind it, a page at a time', async () => {
    const [first] = await deadOrders(1);
    // A later order of the same key: its mail row waits behind the dead letter.
    const [second] = await outbox.fireMany([
      { name: 'shop.OrderPlaced', payload: { n: 2 }, orderingKey: 'order-1' },
    ]);
    await deadOrders(54, 100);
    served = await serveConsole(outbox);
    const client = new Client(served.url);
    const page1 = await client.get('/dead');
    expect(page1.text.match(/<tr data-delivery=/g)).toHaveLength(50);
    expect(page1.text).toContain('attempts');
    const next = /href="(\/dead\?after=[^"]+)"/.exec(page1.text)?.[1];
    expect(next).toBeDefined();
    const page2 = await client.get(next!.replace(/&amp;/g, '&'));
    expect(page2.text.match(/<tr data-delivery=/g)).toHaveLength(5);
    // The oldest dead letter (order 1) is on the last page, with the row behind it.
    const behind = await rowOf('mail.send', second.sequence);
    expect(page2.text).toContain(`row #${behind?.id}`);
    expect(page2.text).toContain(first.id);
    expect(page2.text).toContain('1/1');
    // The ordering key's page shows the dead letter and the row it holds back.
    const key = await client.get('/events?key=order-1');
    expect(key.text).toContain('>dead<');
    expect(key.text).toContain(`#${behind?.id}`);
  });

  it('the event page shows the payload, headers, attribution, the caused-by chain and each delivery', async () => {
    const [parent] = await attributed({ actor: 'user:7', correlationId: 'req-1' }, () =>
      outbox.fireMany([
        { name: 'shop.OrderPlaced', payload: { n: 7 }, headers: { 'x-tenant': 'acme' } },
      ]),
    );
    const [child] = await causedBy(parent, () =>
      outbox.fireMany([{ name: 'shop.OrderMailed', payload: { n: 7 } }]),
    );
    await drainOutbox(outbox);
    served = await serveConsole(outbox);
    const client = new Client(served.url);
    const page = await client.get(`/events/${child.id}`);
    expect(page.text).toContain('shop.OrderMailed');
    expect(page.text).toContain(`/events/${parent.id}`);
    const parentPage = await client.get(`/events/${parent.id}`);
    expect(parentPage.text).toContain('user:7');
    expect(parentPage.text).toContain('req-1');
    expect(parentPage.text).toContain('x-tenant');
    expect(parentPage.text).toContain('&quot;n&quot;: 7');
    for (const key of ['mail.send', 'ledger.post', 'mail.remind'])
      expect(parentPage.text).toContain(key);
    expect(parentPage.text).toContain('smtp is down');
    expect((await client.get('/events/01890000-0000-7000-8000-000000000000')).status).toBe(404);
    const found = await client.get(`/find?q=${parent.id}`);
    expect(found.headers.get('location')).toBe(`/events/${parent.id}`);
  });

  it('the health page lists receivers and lanes worst first, with the backlog chart', async () => {
    await deadOrders(2);
    await outbox.fireMany([{ name: 'shop.OrderPlaced', payload: { n: 9 } }]);
    served = await serveConsole(outbox);
    const client = new Client(served.url);
    clock.advance(60_000);
    await client.get('/');
    clock.advance(60_000);
    const page = await client.get('/');
    expect(page.text).toMatch(/data-testid="dead">2</);
    expect(page.text).toContain('<svg');
    expect(page.text).toContain('2 samples');
    const receivers = [
      ...page.text.matchAll(/<tr><td class="mono">([^<]+)<\/td><td>([^<]+)<\/td>/g),
    ].map((m) => `${m[1]} ${m[2]}`);
    // mail.send: 1 owed and 2 dead; ledger.post: 1 owed, in its lane; mail.remind: scheduled.
    expect(receivers).toEqual(['mail.send default', 'ledger.post ledger', 'mail.remind default']);
    expect(page.text).toContain('<td>ledger</td>');
  });

  it('quiet receivers, the catalogue and its AsyncAPI document', async () => {
    served = await serveConsole(outbox, { asyncApi: { title: 'shop', version: '1.2.3' } });
    const client = new Client(served.url);
    const quiet = await client.get('/quiet');
    expect(quiet.text).toContain('audit.mailed');
    expect(quiet.text).toContain('never');
    const catalogue = await client.get('/catalogue');
    expect(catalogue.text).toContain('An order was placed.');
    expect(catalogue.text).toContain('mail.remind');
    const asyncapi = await client.get('/catalogue/asyncapi.json');
    expect(asyncapi.headers.get('content-type')).toContain('application/json');
    expect(JSON.parse(asyncapi.text)).toMatchObject({
      asyncapi: '3.0.0',
      info: { title: 'shop', version: '1.2.3' },
    });
  });

  it('mounted under a path, every link and the cookie stay under it', async () => {
    await deadOrders(1);
    served = await serveConsole(outbox, { token: TOKEN, basePath: '/ops/outbox' }, '/ops/outbox');
    const client = new Client(served.url);
    const login = await client.get('/');
    expect(login.headers.get('location')).toBe('/ops/outbox/login');
    const signedIn = await client.signIn(TOKEN);
    expect(signedIn.headers.get('location')).toBe('/ops/outbox/');
    expect(signedIn.headers.get('set-cookie')).toContain('Path=/ops/outbox;');
    const page = await client.get('/dead');
    const links = [...page.text.matchAll(/(?:href|action|src)="([^"]+)"/g)].map((m) => m[1]);
    expect(links.length).toBeGreaterThan(10);
    expect(links.filter((l) => !l.startsWith('/ops/outbox/') && l !== 'data:,')).toEqual([]);
  });

  it('mounted by Express (req.url stripped, req.originalUrl whole), the links follow the mount without basePath', async () => {
    await deadOrders(1);
    served = await serveConsole(outbox, {}, '/admin/outbox', { express: true });
    const client = new Client(served.url);
    const page = await client.get('/dead?receiver=mail.send');
    expect(page.status).toBe(200);
    expect(page.text).toContain('href="/admin/outbox/assets/console.css"');
    expect(page.text).toContain('smtp is down');
    const home = await client.get('');
    expect(home.status).toBe(200);
    expect(home.text).toContain('href="/admin/outbox/dead"');
  });
});
