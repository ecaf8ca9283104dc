/**
 * Every TypeScript snippet of README.md and docs/*.md compiles against the package: the
 * ```ts blocks are type-checked in one program with the TypeScript compiler API, each block a
 * module of its own, the package's entry points (`outboxkit`, `outboxkit/testing` …) and the
 * app files a snippet names (`./outbox.config.js`, `./outbox.generated.js`) resolved to this
 * repository's sources, and the names a snippet takes from the page around it (`outbox`,
 * `sequelize`, `transaction` …) declared once in {@link CONTEXT}.
 *
 * A block that cannot stand alone (a fragment of an object literal, a sketch with `…`) is
 * marked `<!-- snippet: partial -->` on the line before its fence and is left out; the test
 * pins how many there are, so a new one is a decision.
 */
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { type CodeBlock, codeBlocks, documents, ROOT } from './support/markdown.js';

/** Where a snippet's imports go: the package's exports and the user's own files, in this repo. */
const MODULES: Record<string, string> = {
  outboxkit: 'src/index.ts',
  'outboxkit/testing': 'testing/index.ts',
  'outboxkit/testing/conformance': 'testing/conformance/index.ts',
  'outboxkit/catalogue': 'catalogue/index.ts',
  'outboxkit/opentelemetry': 'src/observe/opentelemetry/index.ts',
  'outboxkit/console': 'console/index.ts',
  // the user's outbox.config.ts and what `npx outbox codegen` writes from it
  './outbox.config.js': 'outbox.config.ts',
  './outbox.generated.js': 'examples/shop/outbox.generated.ts',
  // the README's test imports the app the way examples/shop/test/orders.test.ts does
  '../src/db.js': 'examples/shop/test/db.ts',
  // the shop example's own modules, as its files name each other
  './context.js': 'examples/shop/context.ts',
  './events.js': 'examples/shop/events.ts',
  './models.js': 'examples/shop/models.ts',
  './receivers.js': 'examples/shop/receivers.ts',
};

const SNIPPETS = join(ROOT, '.snippets');

/**
 * What the snippets take from the page around them: an app with the shop's config, its
 * Sequelize, its outbox and models, and the values a step's prose has just introduced.
 */
const CONTEXT = `
import type { Consumer } from 'kafkajs';
import type { Model, ModelStatic, Sequelize, Transaction } from 'sequelize';
import type { AroundDelivery, DeliveryContext, Inbox, OutboxEvent } from 'outboxkit';
import type { ShopOutbox } from '../examples/shop/context.js';
import type { Order as OrderRow, OrderLine, ShopModels } from '../examples/shop/models.js';
import type shopConfig from '../outbox.config.js';
export {};
declare global {
  // the app: the shop's config, its Sequelize, its outbox and models
  const config: typeof shopConfig;
  const sequelize: Sequelize;
  const outbox: ShopOutbox;
  const Order: ShopModels['Order'];
  const order: OrderRow;
  // the transaction a step runs in, and the order it is writing
  const transaction: Transaction;
  const id: string;
  const orderId: string;
  const customerEmail: string;
  const totalCents: number;
  const items: OrderLine[];
  const placedAt: Date;
  // an app's own functions and objects that the guides name in passing
  const audit: (event: OutboxEvent) => Promise<void>;
  const sendMail: (event: OutboxEvent) => Promise<void>;
  const sendWebhook: (event: OutboxEvent, context: DeliveryContext) => Promise<void>;
  const quotaExhausted: () => boolean;
  const placeOrder: (body: unknown) => Promise<void>;
  const importUsers: (rows: readonly unknown[]) => Promise<void>;
  const rows: readonly unknown[];
  const req: { user: string; id: string; body: unknown };
  const Subscription: ModelStatic<Model & { page: string; endpointId: string }>;
  const Invoice: ModelStatic<Model & { orderId: string }>;
  const offer: Model & { accepted: boolean };
  const offerEvent: { id: string };
  const consumer: Consumer;
  const billing: Inbox;
  const histogram: { record(value: number, attributes?: Record<string, string>): void };
  const myMetricsHook: AroundDelivery;
  const url: string;
  const secret: string;
  const brokers: string[];
  const rawBody: Buffer;
  const header: string;
}
`;

interface Snippet extends CodeBlock {
  readonly path: string;
}

function snippets(): Snippet[] {
  return documents()
    .flatMap(codeBlocks)
    .filter((block) => block.lang === 'ts' || block.lang === 'typescript')
    .map((block) => ({
      ...block,
      path: join(SNIPPETS, `${block.file.replace(/[/.]/g, '_')}_${block.line}.ts`),
    }));
}

function typeCheck(checked: readonly Snippet[]): string[] {
  const parsed = ts.getParsedCommandLineOfConfigFile(
    join(ROOT, 'tsconfig.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      },
    },
  );
  if (!parsed) throw new Error('tsconfig.json could not be read');
  const options: ts.CompilerOptions = { ...parsed.options, noEmit: true, noUnusedLocals: false };
  const virtual = new Map<string, string>(
    checked.map((s) => [s.path, `${s.code}\nexport {};\n`] as const),
  );
  const contextPath = join(SNIPPETS, 'context.d.ts');
  virtual.set(contextPath, CONTEXT);

  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile } = host;
  host.fileExists = (name) => virtual.has(name) || fileExists.call(host, name);
  host.readFile = (name) => virtual.get(name) ?? readFile.call(host, name);
  host.getSourceFile = (name, languageVersion, ...rest) => {
    const text = virtual.get(name);
    return text === undefined
      ? getSourceFile.call(host, name, languageVersion, ...rest)
      : ts.createSourceFile(name, text, languageVersion, true);
  };
  host.resolveModuleNameLiterals = (literals, containingFile, redirected, compilerOptions) =>
    literals.map(({ text }) => {
      const mapped = virtual.has(containingFile) ? MODULES[text] : undefined;
      if (mapped !== undefined) {
        return {
          resolvedModule: {
            resolvedFileName: join(ROOT, mapped),
            extension: ts.Extension.Ts,
            isExternalLibraryImport: false,
          },
        };
      }
      return ts.resolveModuleName(
        text,
        containingFile,
        compilerOptions,
        host,
        undefined,
        redirected,
        ts.getImpliedNodeFormatForFile(containingFile as ts.Path, undefined, host, compilerOptions),
      );
    });

  const program = ts.createProgram({
    rootNames: [contextPath, ...checked.map((s) => s.path)],
    options,
    host,
  });
  const where = new Map(checked.map((s) => [s.path, s] as const));
  const problems: string[] = [];
  for (const file of [contextPath, ...checked.map((s) => s.path)]) {
    const source = program.getSourceFile(file);
    if (!source) throw new Error(`${file} is not in the program`);
    const diagnostics = [
      ...program.getSyntacticDiagnostics(source),
      ...program.getSemanticDiagnostics(source),
    ];
    for (const d of diagnostics) {
      const snippet = where.get(file);
      const at = d.start === undefined ? 0 : source.getLineAndCharacterOfPosition(d.start).line;
      const place = snippet ? `${snippet.file}:${snippet.line + at}` : `CONTEXT:${at + 1}`;
      problems.push(`${place}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
    }
  }
  return problems;
}

describe('the TypeScript snippets of README.md and docs/*.md', () => {
  const all = snippets();
  const partial = all.filter((s) => s.marker === 'partial');
  const checked = all.filter((s) => s.marker !== 'partial');

  it('every snippet not marked partial compiles against the package', () => {
    expect(checked.length).toBeGreaterThan(30);
    expect(typeCheck(checked)).toEqual([]);
  }, 120_000);

  it('only the few fragments are marked partial, each for a reason', () => {
    // docs/inbox.md: an Express route (express is not a dependency of this repository)
    expect(partial.map((s) => s.file)).toEqual(['docs/inbox.md']);
  });

  it('a snippet marker names a known kind', () => {
    const markers = documents()
      .flatMap(codeBlocks)
      .map((b) => b.marker)
      .filter((m) => m !== undefined);
    expect(markers.filter((m) => m !== 'partial')).toEqual([]);
  });
});
